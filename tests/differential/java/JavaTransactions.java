// A transactional Java producer (kafka-clients of the reference) through one scenario,
// for tests/differential/test_java_transactions.py: transactions committing and aborting
// over two topics, offsets sent to a group inside them, an empty aborted transaction,
// and a zombie fenced by a second producer with the same transactional.id.
//
// Arguments: bootstrap transactionalId topicA topicB group topicC eosGroup, topicC with a
// max.message.bytes a large record exceeds (a batch the broker refuses mid-transaction).
// Last, a consume-transform-produce loop: a read_committed KafkaConsumer of eosGroup
// (group.protocol=consumer) reads topicA, the producer writes what it read to topicC
// and sends the consumer's positions with its group metadata in the same transaction. Prints one "STEP name result"
// line per step on stdout (the Python side compares them between brokers).

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class JavaTransactions {
    private static String bootstrap;
    private static String transactionalId;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        transactionalId = args[1];
        String topicA = args[2];
        String topicB = args[3];
        ConsumerGroupMetadata group = new ConsumerGroupMetadata(args[4]);
        String topicC = args[5];
        String eosGroup = args[6];

        KafkaProducer<String, String> first = open();
        first.initTransactions();
        step("init", "ok");

        // 1: committed, both topics, offsets 5 and 7
        first.beginTransaction();
        send(first, topicA, 0, "t1-a0");
        send(first, topicA, 1, "t1-a1");
        send(first, topicB, 0, "t1-b0");
        first.sendOffsetsToTransaction(offsets(topicA, 5, 7), group);
        first.commitTransaction();
        step("t1", "committed");

        // 2: aborted, offsets 100 and 100 never visible
        first.beginTransaction();
        send(first, topicA, 0, "t2-a0");
        send(first, topicB, 0, "t2-b0");
        first.sendOffsetsToTransaction(offsets(topicA, 100, 100), group);
        first.abortTransaction();
        step("t2", "aborted");

        // 3: committed, one partition, offsets 10 and 11
        first.beginTransaction();
        send(first, topicA, 1, "t3-a1");
        first.sendOffsetsToTransaction(offsets(topicA, 10, 11), group);
        first.commitTransaction();
        step("t3", "committed");

        // 4: aborted without anything sent
        first.beginTransaction();
        first.abortTransaction();
        step("t4", "aborted");

        // 5: committed, offsets only
        first.beginTransaction();
        first.sendOffsetsToTransaction(offsets(topicA, 12, 13), group);
        first.commitTransaction();
        step("t5", "committed");

        // 6: the zombie: a transaction left open, then a new instance fences it
        first.beginTransaction();
        send(first, topicA, 0, "zombie-a0");
        KafkaProducer<String, String> second = open();
        second.initTransactions();
        step("second-init", "ok");
        try {
            first.send(new ProducerRecord<>(topicB, 0, null, "zombie-b0")).get();
            step("zombie-send", "ok");
        } catch (ExecutionException e) {
            step("zombie-send", e.getCause().getClass().getSimpleName());
        }
        try {
            first.commitTransaction();
            step("zombie-commit", "ok");
        } catch (Exception e) {
            step("zombie-commit", e.getClass().getSimpleName());
        }
        first.close();

        // 7: the new instance commits
        second.beginTransaction();
        send(second, topicA, 0, "t7-a0");
        send(second, topicB, 0, "t7-b0");
        second.sendOffsetsToTransaction(offsets(topicA, 20, 21), group);
        second.commitTransaction();
        step("t7", "committed");

        // 8: the new instance aborts
        second.beginTransaction();
        send(second, topicA, 1, "t8-a1");
        second.abortTransaction();
        step("t8", "aborted");

        // 9: a batch the broker refuses (too large for topicC): abortable, then aborted
        second.beginTransaction();
        send(second, topicC, 0, "t9-c0");
        try {
            second.send(new ProducerRecord<>(topicC, 0, null, "x".repeat(4000))).get();
            step("t9-large", "ok");
        } catch (ExecutionException e) {
            step("t9-large", e.getCause().getClass().getSimpleName());
        }
        try {
            second.commitTransaction();
            step("t9-commit", "ok");
        } catch (Exception e) {
            // the failed batch's exception itself or wrapped ("in an error state"),
            // depending on timing in the client: its innermost cause
            Throwable cause = e;
            while (cause.getCause() != null) {
                cause = cause.getCause();
            }
            step("t9-commit", cause.getClass().getSimpleName());
        }
        second.abortTransaction();
        step("t9", "aborted");

        // 10: the same producer goes on
        second.beginTransaction();
        send(second, topicC, 0, "t10-c0");
        second.commitTransaction();
        step("t10", "committed");

        // 11: consume-transform-produce
        try (KafkaConsumer<String, String> consumer = consumer(eosGroup)) {
            consumer.subscribe(List.of(topicA));
            List<String> read = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 60_000;
            while (read.size() < 4 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    read.add(r.value());
                }
            }
            Collections.sort(read);
            step("eos-read", String.join(",", read));
            second.beginTransaction();
            for (String value : read) {
                send(second, topicC, 0, "eos-" + value);
            }
            Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
            for (TopicPartition tp : consumer.assignment()) {
                positions.put(tp, new OffsetAndMetadata(consumer.position(tp)));
            }
            second.sendOffsetsToTransaction(positions, consumer.groupMetadata());
            second.commitTransaction();
            step("eos", "committed");
        }
        second.close();
    }

    private static KafkaProducer<String, String> open() {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("transactional.id", transactionalId);
        props.put("acks", "all");
        props.put("linger.ms", "0");
        props.put("max.block.ms", "60000");
        props.put("transaction.timeout.ms", "60000");
        props.put("retry.backoff.ms", "20");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        return new KafkaProducer<>(props);
    }

    private static KafkaConsumer<String, String> consumer(String group) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("group.protocol", "consumer");
        props.put("isolation.level", "read_committed");
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        return new KafkaConsumer<>(props);
    }

    private static void send(KafkaProducer<String, String> producer, String topic, int partition,
            String value) throws Exception {
        producer.send(new ProducerRecord<>(topic, partition, null, value)).get();
    }

    private static Map<TopicPartition, OffsetAndMetadata> offsets(String topic, long p0, long p1) {
        return Map.of(
                new TopicPartition(topic, 0), new OffsetAndMetadata(p0),
                new TopicPartition(topic, 1), new OffsetAndMetadata(p1));
    }

    private static void step(String name, String result) {
        System.out.println("STEP " + name + " " + result);
        System.out.flush();
    }
}
