// Kafka's Admin client (kafka-clients 4.2.2), for tests/ecosystem/test_java_clients.py.
// Each subcommand runs a few calls and prints what they answered (Emit lines):
//
//   create bootstrap topic: createTopics (3 partitions, retention.ms), describeTopics,
//     describeCluster.
//   inspect bootstrap topic shareGroup transactionalId: listOffsets (earliest, latest,
//     max timestamp), describeConfigs after incrementalAlterConfigs, listGroups,
//     describeShareGroups, alterShareGroupOffsets then listShareGroupOffsets,
//     deleteRecords, describeProducers, describeTransactions.
//   survey bootstrap topic group transactionalId: the rest of the Admin API, each call
//     printed as its answer or its exception (class and message), to compare brokers.

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
                case "survey":
                    survey(admin, args[2], args[3], args[4]);
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

    interface Call {
        Object run() throws Exception;
    }

    private static void attempt(String name, Call call) {
        try {
            Emit.line(name, "result", String.valueOf(call.run()));
        } catch (Exception e) {
            Throwable cause = e;
            while (cause.getCause() != null && (cause instanceof java.util.concurrent.ExecutionException)) {
                cause = cause.getCause();
            }
            Emit.line(name, "error", cause.getClass().getSimpleName(), "message", cause.getMessage());
        }
    }

    private static void survey(Admin admin, String topic, String group, String tid) throws Exception {
        TopicPartition p0 = new TopicPartition(topic, 0);
        attempt("describeFeatures", () -> admin.describeFeatures().featureMetadata().get().finalizedFeatures()
                .keySet().stream().sorted().collect(Collectors.toList()));
        attempt("describeLogDirs", () -> admin.describeLogDirs(List.of(1)).allDescriptions().get().get(1).values()
                .stream().map(d -> d.error() + " " + d.replicaInfos().keySet().stream().filter(t -> t.topic().equals(topic))
                        .map(t -> t + "=" + d.replicaInfos().get(t).size()).sorted().collect(Collectors.toList()))
                .collect(Collectors.toList()));
        attempt("describeReplicaLogDirs", () -> admin.describeReplicaLogDirs(List.of(
                new org.apache.kafka.common.TopicPartitionReplica(topic, 0, 1))).all().get().values().stream()
                .map(r -> r.getCurrentReplicaLogDir() != null).collect(Collectors.toList()));
        attempt("listPartitionReassignments", () -> admin.listPartitionReassignments().reassignments().get());
        attempt("alterPartitionReassignments", () -> {
            admin.alterPartitionReassignments(Map.of(p0, java.util.Optional.of(
                    new org.apache.kafka.clients.admin.NewPartitionReassignment(List.of(1))))).all().get();
            return "ok";
        });
        attempt("electLeaders", () -> admin.electLeaders(org.apache.kafka.common.ElectionType.PREFERRED, Set.of(p0))
                .partitions().get().get(p0).map(e -> e.getClass().getSimpleName() + ": " + e.getMessage()).orElse("ok"));
        attempt("electLeaders-unclean", () -> admin.electLeaders(org.apache.kafka.common.ElectionType.UNCLEAN, Set.of(p0))
                .partitions().get().get(p0).map(e -> e.getClass().getSimpleName() + ": " + e.getMessage()).orElse("ok"));
        attempt("alterUserScramCredentials", () -> {
            admin.alterUserScramCredentials(List.of(new org.apache.kafka.clients.admin.UserScramCredentialUpsertion(
                    "survey-user", new org.apache.kafka.clients.admin.ScramCredentialInfo(
                            org.apache.kafka.clients.admin.ScramMechanism.SCRAM_SHA_256, 4096), "pw"))).all().get();
            return "ok";
        });
        attempt("describeUserScramCredentials", () -> admin.describeUserScramCredentials(List.of("survey-user", "nobody"))
                .description("survey-user").get().credentialInfos());
        attempt("describeUserScramCredentials-missing", () -> admin.describeUserScramCredentials(List.of("nobody"))
                .description("nobody").get());
        attempt("alterClientQuotas", () -> {
            admin.alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(
                    new org.apache.kafka.common.quota.ClientQuotaEntity(Map.of("user", "survey-user")),
                    List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration.Op("producer_byte_rate", 5000.0)))))
                    .all().get();
            return "ok";
        });
        attempt("describeClientQuotas", () -> admin.describeClientQuotas(
                org.apache.kafka.common.quota.ClientQuotaFilter.all()).entities().get());
        attempt("alterConsumerGroupOffsets", () -> {
            admin.alterConsumerGroupOffsets(group, Map.of(p0, new org.apache.kafka.clients.consumer.OffsetAndMetadata(2, "m")))
                    .all().get();
            return "ok";
        });
        attempt("listConsumerGroupOffsets", () -> admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get());
        attempt("describeConsumerGroups", () -> {
            org.apache.kafka.clients.admin.ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group))
                    .all().get().get(group);
            return d.groupState() + " " + d.type() + " " + d.members().size() + " " + d.partitionAssignor();
        });
        attempt("describeClassicGroups", () -> {
            org.apache.kafka.clients.admin.ClassicGroupDescription d = admin.describeClassicGroups(List.of(group))
                    .all().get().get(group);
            return d.state() + " " + d.protocol() + " " + d.members().size();
        });
        attempt("removeMembersFromConsumerGroup", () -> {
            admin.removeMembersFromConsumerGroup(group, new org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions(
                    List.of(new org.apache.kafka.clients.admin.MemberToRemove("nobody")))).all().get();
            return "ok";
        });
        attempt("deleteConsumerGroupOffsets", () -> {
            admin.deleteConsumerGroupOffsets(group, Set.of(p0)).all().get();
            return "ok";
        });
        attempt("listConsumerGroupOffsets-after", () -> admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get());
        // committed again before the group is deleted: Shoal forgets a group with no
        // members at its last offset's deletion, Kafka at its next offsets cleanup
        attempt("alterConsumerGroupOffsets-again", () -> {
            admin.alterConsumerGroupOffsets(group, Map.of(p0, new org.apache.kafka.clients.consumer.OffsetAndMetadata(1)))
                    .all().get();
            return "ok";
        });
        attempt("deleteConsumerGroups", () -> {
            admin.deleteConsumerGroups(List.of(group)).all().get();
            return "ok";
        });
        attempt("deleteConsumerGroups-missing", () -> {
            admin.deleteConsumerGroups(List.of(group)).all().get();
            return "ok";
        });
        attempt("listTransactions", () -> admin.listTransactions().all().get().stream()
                .map(t -> t.transactionalId() + ":" + t.state()).sorted().collect(Collectors.toList()));
        attempt("listTransactions-duration", () -> admin.listTransactions(
                new org.apache.kafka.clients.admin.ListTransactionsOptions().filterOnDuration(0)).all().get().stream()
                .map(t -> t.transactionalId() + ":" + t.state()).sorted().collect(Collectors.toList()));
        attempt("fenceProducers", () -> {
            admin.fenceProducers(List.of(tid)).all().get();
            return "ok";
        });
        attempt("describeTransactions-fenced", () -> {
            TransactionDescription d = admin.describeTransactions(List.of(tid)).description(tid).get();
            return d.state() + " epoch " + d.producerEpoch();
        });
        attempt("fenceProducers-unknown", () -> {
            admin.fenceProducers(List.of("no-such-tid")).all().get();
            return "ok";
        });
        attempt("forceTerminateTransaction", () -> {
            admin.forceTerminateTransaction(tid).result().get();
            return "ok";
        });
        attempt("describeTransactions-terminated", () -> {
            TransactionDescription d = admin.describeTransactions(List.of(tid)).description(tid).get();
            return d.state() + " epoch " + d.producerEpoch();
        });
        attempt("describeTransactions-unknown", () -> admin.describeTransactions(List.of("no-such-tid"))
                .description("no-such-tid").get());
        attempt("listConfigResources", () -> admin.listConfigResources().all().get().stream()
                .filter(r -> r.type() != ConfigResource.Type.TOPIC || r.name().equals(topic))
                .map(r -> r.type() + ":" + r.name()).sorted().collect(Collectors.toList()));
        attempt("listClientMetricsResources", () -> admin.listClientMetricsResources().all().get());
        attempt("describeMetadataQuorum", () -> admin.describeMetadataQuorum().quorumInfo().get().leaderId());
        attempt("createPartitions", () -> {
            admin.createPartitions(Map.of(topic, org.apache.kafka.clients.admin.NewPartitions.increaseTo(4))).all().get();
            return "ok";
        });
        attempt("createPartitions-same", () -> {
            admin.createPartitions(Map.of(topic, org.apache.kafka.clients.admin.NewPartitions.increaseTo(4))).all().get();
            return "ok";
        });
        attempt("createDelegationToken", () -> admin.createDelegationToken().delegationToken().get());
        attempt("updateFeatures-dry", () -> {
            admin.updateFeatures(Map.of("transaction.version", new org.apache.kafka.clients.admin.FeatureUpdate(
                    (short) 2, org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType.UPGRADE)),
                    new org.apache.kafka.clients.admin.UpdateFeaturesOptions().validateOnly(true)).all().get();
            return "ok";
        });
        attempt("deleteTopics-missing", () -> {
            admin.deleteTopics(List.of("no-such-topic")).all().get();
            return "ok";
        });
        attempt("describeTopics-missing", () -> admin.describeTopics(List.of("no-such-topic")).allTopicNames().get());
        attempt("deleteShareGroups-missing", () -> {
            admin.deleteShareGroups(List.of("no-such-group")).all().get();
            return "ok";
        });
        attempt("describeShareGroups-missing", () -> admin.describeShareGroups(List.of("no-such-group")).all().get()
                .get("no-such-group").groupState());
        attempt("listGroups", () -> admin.listGroups().all().get().stream().map(g -> g.groupId()).sorted()
                .collect(Collectors.toList()));
    }
}
