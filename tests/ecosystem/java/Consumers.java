// KafkaConsumer (kafka-clients 4.2.2) in a group, for
// tests/ecosystem/test_java_clients.py, with group.protocol classic or consumer:
//
//   group protocol bootstrap topic group partitions: a first member subscribes, is
//     assigned every partition, reads and commits offset 5 on each; a second member
//     joins and the partitions are split between them (both polling); both close; a
//     third member (a restart) resumes at the committed offsets.

import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public final class Consumers {
    private static final long DEADLINE_MS = 60_000;

    public static void main(String[] args) {
        if (!args[0].equals("group")) {
            throw new IllegalArgumentException(args[0]);
        }
        group(args[1], args[2], args[3], args[4], Integer.parseInt(args[5]));
    }

    private static final class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final Set<Integer> owned = new TreeSet<>();
        int rebalances;

        Member(String name, String bootstrap, String protocol, String group, String topic) {
            this.name = name;
            Properties props = new Properties();
            props.put("bootstrap.servers", bootstrap);
            props.put("group.id", group);
            props.put("client.id", name);
            props.put("group.protocol", protocol);
            props.put("auto.offset.reset", "earliest");
            props.put("enable.auto.commit", "false");
            if (protocol.equals("classic")) {
                props.put("partition.assignment.strategy",
                        "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
            }
            consumer = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
            consumer.subscribe(List.of(topic), this);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            partitions.forEach(p -> owned.remove(p.partition()));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            partitions.forEach(p -> owned.add(p.partition()));
            rebalances++;
        }

        Map<Integer, Long> poll(Map<Integer, Long> firsts) {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                firsts.putIfAbsent(r.partition(), r.offset());
            }
            return firsts;
        }
    }

    private static void group(String protocol, String bootstrap, String topic, String group, int partitions) {
        Set<Integer> all = new TreeSet<>();
        for (int p = 0; p < partitions; p++) {
            all.add(p);
        }
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        Member first = new Member("first", bootstrap, protocol, group, topic);
        Map<Integer, Long> firsts = new TreeMap<>();
        while (firsts.size() < partitions && System.currentTimeMillis() < deadline) {
            first.poll(firsts);
        }
        Emit.line("first-alone", "owned", first.owned, "firstOffsets", firsts);
        Map<TopicPartition, OffsetAndMetadata> commit = new TreeMap<>((x, y) -> x.partition() - y.partition());
        for (int p : all) {
            commit.put(new TopicPartition(topic, p), new OffsetAndMetadata(5, "from-java"));
        }
        first.consumer.commitSync(commit);
        Emit.line("committed", "offsets", 5);

        Member second = new Member("second", bootstrap, protocol, group, topic);
        while (System.currentTimeMillis() < deadline) {
            first.poll(new TreeMap<>());
            second.poll(new TreeMap<>());
            Set<Integer> union = new HashSet<>(first.owned);
            union.addAll(second.owned);
            if (!first.owned.isEmpty() && !second.owned.isEmpty()
                    && union.equals(all) && first.owned.size() + second.owned.size() == partitions) {
                break;
            }
        }
        Emit.line("split", "first", first.owned, "second", second.owned);
        first.consumer.close();
        second.consumer.close();

        Member restarted = new Member("restarted", bootstrap, protocol, group, topic);
        Map<TopicPartition, OffsetAndMetadata> committed = restarted.consumer.committed(
                commit.keySet(), Duration.ofSeconds(30));
        Emit.line("committed-seen", "offsets", committed.entrySet().stream().collect(Collectors.toMap(
                e -> Integer.toString(e.getKey().partition()),
                e -> e.getValue() == null ? "none" : e.getValue().offset() + ":" + e.getValue().metadata(),
                (x, y) -> x, TreeMap::new)));
        Map<Integer, Long> resumed = new TreeMap<>();
        while (resumed.size() < partitions && System.currentTimeMillis() < deadline) {
            restarted.poll(resumed);
        }
        Emit.line("resumed", "owned", restarted.owned, "firstOffsets", resumed);
        restarted.consumer.close();
    }
}
