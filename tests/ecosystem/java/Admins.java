// Kafka's Admin client (kafka-clients 4.2.2), for tests/ecosystem/test_java_clients.py.
// Each subcommand runs a few calls and prints what they answered (Emit lines):
//
//   create bootstrap topic: createTopics (3 partitions, retention.ms), describeTopics,
//     describeCluster.
//   inspect bootstrap topic shareGroup transactionalId: listOffsets (earliest, latest,
//     max timestamp), describeConfigs after incrementalAlterConfigs, listGroups,
//     describeShareGroups, alterShareGroupOffsets then listShareGroupOffsets,
//     deleteRecords, describeProducers, describeTransactions.

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

public final class Admins {
    public static void main(String[] args) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", args[1]))) {
            switch (args[0]) {
                case "create":
                    create(admin, args[2]);
                    break;
                case "inspect":
                    inspect(admin, args[2], args[3], args[4]);
                    break;
                default:
                    throw new IllegalArgumentException(args[0]);
            }
        }
    }

    private static void create(Admin admin, String topic) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1)
                .configs(Map.of("retention.ms", "86400000")))).all().get();
        Emit.line("createTopics", "ok", true);
        TopicDescription described = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        Emit.line("describeTopics", "partitions", described.partitions().size(),
                "leaders", described.partitions().stream().map(p -> p.leader().id()).collect(Collectors.toList()),
                "internal", described.isInternal(), "topicId", described.topicId().toString());
        DescribeClusterResult cluster = admin.describeCluster();
        Emit.line("describeCluster", "clusterId", cluster.clusterId().get(),
                "controller", cluster.controller().get().id(),
                "nodes", cluster.nodes().get().stream().map(n -> n.host() + ":" + n.port())
                        .collect(Collectors.toList()));
        try {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            Emit.line("createTopics-again", "error", null);
        } catch (Exception e) {
            Emit.line("createTopics-again", "error", Emit.error(e));
        }
    }

    private static void inspect(Admin admin, String topic, String shareGroup, String tid) throws Exception {
        TopicPartition p0 = new TopicPartition(topic, 0);
        Map<String, Object> offsets = new TreeMap<>();
        for (Map.Entry<String, OffsetSpec> spec : Map.of(
                "earliest", OffsetSpec.earliest(), "latest", OffsetSpec.latest(),
                "maxTimestamp", OffsetSpec.maxTimestamp()).entrySet()) {
            offsets.put(spec.getKey(), admin.listOffsets(Map.of(p0, spec.getValue())).partitionResult(p0).get().offset());
        }
        Emit.line("listOffsets", "offsets", offsets);

        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact,delete"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("retention.ms", null), AlterConfigOp.OpType.DELETE)))).all().get();
        Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
        Emit.line("describeConfigs",
                "cleanup.policy", config.get("cleanup.policy").value(),
                "cleanup.policy.source", config.get("cleanup.policy").source().toString(),
                "retention.ms", config.get("retention.ms").value(),
                "retention.ms.source", config.get("retention.ms").source().toString());

        Map<String, String> groups = new TreeMap<>();
        for (GroupListing g : admin.listGroups().all().get()) {
            groups.put(g.groupId(), g.type().map(Object::toString).orElse("?") + "/"
                    + g.groupState().map(Object::toString).orElse("?"));
        }
        Emit.line("listGroups", "groups", groups);

        ShareGroupDescription share = admin.describeShareGroups(List.of(shareGroup)).all().get().get(shareGroup);
        Emit.line("describeShareGroups", "state", share.groupState().toString(),
                "members", share.members().size(), "coordinator", share.coordinator().id());

        try {
            admin.alterShareGroupOffsets(shareGroup, Map.of(p0, 2L)).all().get();
            Emit.line("alterShareGroupOffsets", "error", null);
        } catch (Exception e) {
            Emit.line("alterShareGroupOffsets", "error", Emit.error(e));
        }
        Map<TopicPartition, SharePartitionOffsetInfo> listed = admin.listShareGroupOffsets(
                Map.of(shareGroup, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(shareGroup).get();
        Emit.line("listShareGroupOffsets", "offsets", listed.entrySet().stream().collect(Collectors.toMap(
                e -> e.getKey().toString(),
                e -> e.getValue() == null ? "none" : e.getValue().startOffset() + " lag " + e.getValue().lag().orElse(-1L),
                (x, y) -> x, TreeMap::new)));

        long low = admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(3))).lowWatermarks().get(p0).get()
                .lowWatermark();
        Emit.line("deleteRecords", "lowWatermark", low,
                "earliest", admin.listOffsets(Map.of(p0, OffsetSpec.earliest())).partitionResult(p0).get().offset());

        List<ProducerState> producers = admin.describeProducers(List.of(p0)).partitionResult(p0).get()
                .activeProducers();
        Emit.line("describeProducers", "producers", producers.stream().map(s -> Map.of(
                "producerId", s.producerId(), "epoch", s.producerEpoch(), "lastSequence", s.lastSequence(),
                "txnStart", s.currentTransactionStartOffset().orElse(-1L))).collect(Collectors.toList()));

        TransactionDescription txn = admin.describeTransactions(List.of(tid)).description(tid).get();
        Emit.line("describeTransactions", "state", txn.state().toString(), "producerId", txn.producerId(),
                "partitions", txn.topicPartitions().stream().map(TopicPartition::toString).sorted()
                        .collect(Collectors.toList()), "coordinator", txn.coordinatorId());
    }
}
