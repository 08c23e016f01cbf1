// A transactional KafkaProducer (kafka-clients 4.2.2), for
// tests/ecosystem/test_java_clients.py:
//
//   txn bootstrap transactionalId input output group: commits two records and aborts
//     one on `output`, then reads `output` read_committed and read_uncommitted; then a
//     consume-transform-produce step: a read_committed KafkaConsumer of `group` reads
//     every record of `input` (one partition), the producer writes each upper-cased to
//     `output` and sends the consumer's position with its group metadata in the same
//     transaction (sendOffsetsToTransaction), and commits.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class Transactions {
    private static final long DEADLINE_MS = 60_000;

    public static void main(String[] args) throws Exception {
        if (!args[0].equals("txn")) {
            throw new IllegalArgumentException(args[0]);
        }
        String bootstrap = args[1];
        String tid = args[2];
        String input = args[3];
        String output = args[4];
        String group = args[5];
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("transactional.id", tid);
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(output, 0, "k", "committed-1"));
            producer.send(new ProducerRecord<>(output, 0, "k", "committed-2"));
            producer.commitTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(output, 0, "k", "aborted-1")).get();
            producer.abortTransaction();
            Emit.line("read_committed", "values", read(bootstrap, output, "read_committed", 2));
            Emit.line("read_uncommitted", "values", read(bootstrap, output, "read_uncommitted", 3));

            Properties cprops = new Properties();
            cprops.put("bootstrap.servers", bootstrap);
            cprops.put("group.id", group);
            cprops.put("group.protocol", "consumer");
            cprops.put("isolation.level", "read_committed");
            cprops.put("auto.offset.reset", "earliest");
            cprops.put("enable.auto.commit", "false");
            try (KafkaConsumer<String, String> consumer =
                    new KafkaConsumer<>(cprops, new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(List.of(input));
                List<ConsumerRecord<String, String>> batch = new ArrayList<>();
                long deadline = System.currentTimeMillis() + DEADLINE_MS;
                TopicPartition in0 = new TopicPartition(input, 0);
                long end = -1;
                while (System.currentTimeMillis() < deadline) {
                    consumer.poll(Duration.ofMillis(300)).forEach(batch::add);
                    if (end < 0 && !consumer.assignment().isEmpty()) {
                        end = consumer.endOffsets(List.of(in0)).get(in0);
                    }
                    if (end >= 0 && consumer.position(in0) >= end) {
                        break;
                    }
                }
                producer.beginTransaction();
                for (ConsumerRecord<String, String> r : batch) {
                    producer.send(new ProducerRecord<>(output, 0, r.key(), r.value().toUpperCase()));
                }
                producer.sendOffsetsToTransaction(
                        Map.of(in0, new OffsetAndMetadata(consumer.position(in0))), consumer.groupMetadata());
                producer.commitTransaction();
                Emit.line("transformed", "count", batch.size(), "position", consumer.position(in0));
            }
        }
    }

    private static List<String> read(String bootstrap, String topic, String isolation, int want) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("isolation.level", isolation);
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 10_000;
            // read until the end offset (past the abort marker), or the deadline
            while (System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> values.add(r.value()));
                if (values.size() >= want && consumer.position(tp) >= consumer.endOffsets(List.of(tp)).get(tp)) {
                    break;
                }
            }
        }
        return values;
    }
}
