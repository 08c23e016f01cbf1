#!/bin/sh
# The shared side-by-side harness's latency phase at a paced 3k records/s (issue 14),
# repeated and interleaved: Redis Streams and Shoal at the producer lingers asked for.
#
#   sh bench/peers3k.sh OUT.jsonl REPS redis s2 s5     # sN = Shoal with linger.ms N
#
# Needs the peers set up (`sh ../shared/bench/peers_setup.sh`, into /tmp/peers-venv)
# and this repository's .venv. Each run: 15,000 x 1 KiB records, one partition, four
# explicit-mode ShareConsumers (`peers_bench.py one <system> 1024 15000 --phase c`).
# One JSON line per run is appended to OUT with the load average; p50/p99 printed.
# The current lines are kept in bench/results/peers3k.jsonl (one file, not one per run:
# replace it with a new set rather than adding dated copies).
out=$1; reps=$2; shift 2
repo=$(cd "$(dirname "$0")/.." && pwd)
harness=${PEERS_HARNESS:-$repo/../shared/bench/peers_bench.py}
for r in $(seq 1 "$reps"); do
  for s in "$@"; do
    sys=shoal; linger=""
    if [ "$s" = redis ]; then sys=redis; else linger="PEERS_LINGER_MS=${s#s}"; fi
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    line=$(cd "$repo" && env $linger SHOAL_REPO="$repo" SHOAL_BIN="$repo/.venv/bin/shoal" \
      PEERS_RATE=3000 /tmp/peers-venv/bin/python "$harness" one $sys 1024 15000 --phase c \
      2>/dev/null | grep '"phase"' | tail -1)
    echo "{\"run\": \"$s\", \"rep\": $r, \"load\": \"$load\", \"time\": \"$(date -u +%H:%M:%S)\", \"result\": $line}" >> "$out"
    echo "$s rep$r load $load: $(echo "$line" | grep -o '"lat_p50_ms": [0-9.]*, "lat_p99_ms": [0-9.]*')"
  done
done
