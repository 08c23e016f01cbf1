"""Shoal beside its peers: Apache Kafka 4.2 and Redis Streams on the same workloads.

The entry is bench/side_by_side.py (`python -m bench.side_by_side`, its docstring says
what it measures and how to run it). The package's parts:

- runners.py: each broker as a process (`Runner`: start with its start-up time, stop,
  kill -9, resident memory and CPU from /proc); `KafkaRunner`, `ShoalRunner`.
- kafka_protocol.py: the workloads on the Kafka protocol with confluent-kafka,
  identical for Kafka and Shoal (produce, consumer-group consume, share-group drain,
  end to end).
- redis.py and redis_streams.py: Redis (`RedisRunner`) and the same workloads on
  Redis Streams.
- paced.py: latency percentiles at a fixed send rate.
- first_record.py: a new share group's first record after its members join.
- ops.py: start-up, memory idle and under load, recovery after kill -9.
"""
