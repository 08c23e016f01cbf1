"""java_order: the iteration order of Java's HashMap of string keys, checked against
values Java itself gives (String.hashCode of known strings, and the order Kafka 4.2's
kafka-topics printed configs and topics in, seen on the reference broker)."""

from __future__ import annotations

from shoal.cli.java_order import (
    described_topics_order,
    hash_map_order,
    partition_order,
    string_hash,
    topic_partition_hash,
)


def _java_hash_code(text: str) -> int:
    """String.hashCode as a signed int, undoing the spread (h ^ h >>> 16 is its own
    inverse on the upper half)."""
    spread = string_hash(text)
    h = spread ^ (spread >> 16)
    return h - (1 << 32) if h >= 1 << 31 else h


def test_string_hash_is_javas_hash_code_spread() -> None:
    assert _java_hash_code("") == 0
    assert _java_hash_code("hello") == 99162322
    assert _java_hash_code("Aa") == _java_hash_code("BB") == 2112
    assert _java_hash_code("polygenelubricants") == -2147483648
    assert _java_hash_code("\u00e9t\u00e9") == 0xE9 * 961 + 0x74 * 31 + 0xE9


def test_order_is_by_bucket_then_insertion() -> None:
    # "Aa" and "BB" share every bucket: they keep their insertion order
    assert hash_map_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert hash_map_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert hash_map_order([]) == []


def test_order_matches_what_kafkas_topic_tool_printed() -> None:
    # the four non-default configs of __consumer_offsets among the 34 a Kafka 4.2
    # broker answers DescribeConfigs with, in the order kafka-topics printed them
    shown = ["compression.type", "min.insync.replicas", "cleanup.policy", "segment.bytes"]
    others = [f"other.config.{i}" for i in range(30)]
    ordered = hash_map_order(sorted(shown) + others)
    assert [name for name in ordered if name in shown] == shown
    # topics described together, in the orders kafka-topics printed them
    topics = ["__consumer_offsets", "__share_group_state", "t1"]
    assert described_topics_order(topics) == ["t1", "__consumer_offsets", "__share_group_state"]
    # "cli-kafka-8c798e1bab" shares __consumer_offsets' bucket of four, and comes first:
    # it led in the eight-bucket copy the last map was filled from
    topics = ["__consumer_offsets", "__share_group_state", "cli-kafka-8c798e1bab"]
    assert described_topics_order(topics) == [
        "cli-kafka-8c798e1bab",
        "__consumer_offsets",
        "__share_group_state",
    ]
    topics = ["__consumer_offsets", "__share_group_state", "t1", "t2", "t3"]
    assert described_topics_order(topics) == [
        "__share_group_state",
        "t1",
        "__consumer_offsets",
        "t2",
        "t3",
    ]


def test_the_table_grows_past_three_quarters_full() -> None:
    # 13 keys outgrow the default 16 buckets: a key's bucket is then its hash mod 32
    keys = [f"k{i}" for i in range(13)]
    assert hash_map_order(keys) == sorted(keys, key=lambda k: string_hash(k) & 31)
    assert hash_map_order(keys[:12]) == sorted(keys[:12], key=lambda k: string_hash(k) & 15)


def test_partitions_order_as_kafkas_reset_plan_printed_them() -> None:
    # kafka-consumer-groups --reset-offsets --all-topics on a group with offsets for
    # t1-0..2 and t2-0 printed t1 2, t1 1, t1 0, t2 0 (a HashMap of TopicPartitions)
    plan = [("t1", 0), ("t1", 1), ("t1", 2), ("t2", 0)]
    assert partition_order(plan) == [("t1", 2), ("t1", 1), ("t1", 0), ("t2", 0)]
    # TopicPartition.hashCode is 31 * (31 + partition) + topic.hashCode()
    h = 31 * (31 + 5) + 99162322
    assert topic_partition_hash(("hello", 5)) == h ^ (h >> 16)
