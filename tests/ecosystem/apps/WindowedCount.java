// A Kafka Streams application for the ecosystem tests (tests/ecosystem/test_kafka_streams.py):
// counts the input's values per one-minute tumbling window of the records' own timestamps,
// exactly once. Regrouping by value goes through a repartition topic and the count lives in
// a persistent (RocksDB) window store backed by a compacted changelog topic, the topics
// Streams creates for itself. The record cache is off, so every input record yields one
// update downstream: the committed updates of a key and window are 1, 2, ..., its count.
//
// Arguments: bootstrap servers, application id, state directory, input topic, output topic,
// then any further Streams settings as key=value.
// Prints "STATE <new state>" on each state change, "COMMITTED" after each transaction it
// commits, and "CLOSED" once closed cleanly on SIGTERM;
// exits 1 if the application errors out.

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.internals.DefaultKafkaClientSupplier;

public final class WindowedCount {
    /** Streams' own producer, printing "COMMITTED" each time a transaction has committed. */
    static final class SignallingProducer extends KafkaProducer<byte[], byte[]> {
        SignallingProducer(Map<String, Object> config) {
            super(config, new ByteArraySerializer(), new ByteArraySerializer());
        }

        @Override
        public void commitTransaction() {
            super.commitTransaction();
            System.out.println("COMMITTED");
            System.out.flush();
        }
    }

    static final class SignallingClients extends DefaultKafkaClientSupplier {
        @Override
        public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
            return new SignallingProducer(config);
        }
    }

    public static void main(String[] args) throws InterruptedException {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // Transactions stay open a while, so the tests can crash things in the middle of one.
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 2000);
        // Purge the repartition topic (DeleteRecords) after commits every second, not 30 s.
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 1000);
        // A killed instance leaves the group after this, not Streams' 45 s default.
        props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 6000);
        props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1500);
        // Further arguments are more settings, key=value (e.g. producer.transaction.timeout.ms).
        for (int i = 5; i < args.length; i++) {
            String[] setting = args[i].split("=", 2);
            props.put(setting[0], setting[1]);
        }
        String input = args[3];
        String output = args[4];

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .groupBy((key, value) -> value, Grouped.with("by-value", Serdes.String(), Serdes.String()))
            // A day of grace: records arrive out of order across partitions, none is dropped.
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofDays(1)))
            .count(Materialized.as("counts"))
            .toStream()
            .map((windowed, count) -> KeyValue.pair(
                windowed.key() + "@" + windowed.window().start(), Long.toString(count)))
            .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props, new SignallingClients());
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            boolean closed = streams.close(Duration.ofSeconds(30));
            System.out.println(closed ? "CLOSED" : "CLOSE TIMED OUT");
            System.out.flush();
            done.countDown();
        }));
        streams.start();
        done.await();
        System.exit(streams.state() == KafkaStreams.State.ERROR ? 1 : 0);
    }
}
