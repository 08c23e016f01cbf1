// KafkaShareConsumer (kafka-clients 4.2.2) against a broker, for
// tests/ecosystem/test_java_clients.py. Subcommands, each printing Emit lines:
//
//   explicit bootstrap topic group: one consumer in explicit acknowledgement mode
//     accepts, releases and rejects its first deliveries (by value: see DECISIONS),
//     commits them, and accepts the released records when they come back.
//   shared bootstrap topic group count: two consumers of one partition: the first
//     holds its first records (unacknowledged) until the second has some, then both
//     accept what they get, polling in turn, until `count` records are delivered.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public final class ShareClients {
    private static final long DEADLINE_MS = 60_000;

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "explicit":
                explicit(args[1], args[2], args[3]);
                break;
            case "shared":
                shared(args[1], args[2], args[3], Integer.parseInt(args[4]));
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
    }

    private static KafkaShareConsumer<String, String> open(String bootstrap, String group, String clientId,
            int maxPollRecords) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("client.id", clientId);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("max.poll.records", Integer.toString(maxPollRecords));
        return new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer());
    }

    private static AcknowledgeType decision(String value, int deliveryCount) {
        if (deliveryCount > 1) {
            return AcknowledgeType.ACCEPT;
        }
        switch (value) {
            case "v2":
            case "v4":
                return AcknowledgeType.RELEASE;
            case "v3":
                return AcknowledgeType.REJECT;
            default:
                return AcknowledgeType.ACCEPT;
        }
    }

    private static void explicit(String bootstrap, String topic, String group) {
        try (KafkaShareConsumer<String, String> consumer = open(bootstrap, group, "explicit", 500)) {
            consumer.subscribe(List.of(topic));
            int settled = 0;
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            // v0..v5 once, then v2 and v4 again: 8 deliveries
            while (settled < 8 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> record : records) {
                    int count = record.deliveryCount().orElse((short) -1);
                    AcknowledgeType type = decision(record.value(), count);
                    consumer.acknowledge(record, type);
                    Emit.line("delivered", "value", record.value(), "offset", record.offset(),
                            "deliveryCount", count, "ack", type.toString());
                    settled++;
                }
                if (!records.isEmpty()) {
                    Map<TopicIdPartition, java.util.Optional<org.apache.kafka.common.KafkaException>> done =
                            consumer.commitSync();
                    for (Map.Entry<TopicIdPartition, java.util.Optional<org.apache.kafka.common.KafkaException>> e
                            : done.entrySet()) {
                        Emit.line("committed", "partition", e.getKey().partition(),
                                "error", e.getValue().map(Emit::error).orElse(null));
                    }
                }
            }
            // nothing further: v3 was archived, everything else accepted
            ConsumerRecords<String, String> rest = consumer.poll(Duration.ofMillis(2000));
            Emit.line("rest", "count", rest.count());
        }
    }

    private static void shared(String bootstrap, String topic, String group, int count) {
        try (KafkaShareConsumer<String, String> a = open(bootstrap, group, "member-a", 5);
                KafkaShareConsumer<String, String> b = open(bootstrap, group, "member-b", 5)) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            Map<String, List<Long>> got = new TreeMap<>();
            got.put("member-a", new ArrayList<>());
            got.put("member-b", new ArrayList<>());
            int total = 0;
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            // a holds its first records (acquired, unacknowledged) until b has some
            // too: b gets other records of the partition once it is assigned it
            ConsumerRecords<String, String> fromA = ConsumerRecords.empty();
            while (fromA.isEmpty() && System.currentTimeMillis() < deadline) {
                fromA = a.poll(Duration.ofMillis(300));
            }
            ConsumerRecords<String, String> fromB = ConsumerRecords.empty();
            while (fromB.isEmpty() && System.currentTimeMillis() < deadline) {
                fromB = b.poll(Duration.ofMillis(300));
            }
            while (true) {
                for (ConsumerRecord<String, String> r : fromA) {
                    got.get("member-a").add(r.offset());
                    a.acknowledge(r, AcknowledgeType.ACCEPT);
                    total++;
                }
                for (ConsumerRecord<String, String> r : fromB) {
                    got.get("member-b").add(r.offset());
                    b.acknowledge(r, AcknowledgeType.ACCEPT);
                    total++;
                }
                a.commitSync();
                b.commitSync();
                if (total >= count || System.currentTimeMillis() >= deadline) {
                    break;
                }
                fromA = a.poll(Duration.ofMillis(300));
                fromB = b.poll(Duration.ofMillis(300));
            }
            for (Map.Entry<String, List<Long>> e : got.entrySet()) {
                Emit.line("member", "client", e.getKey(), "offsets", e.getValue());
            }
        }
    }
}
