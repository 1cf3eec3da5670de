#!/usr/bin/env bash
# The single-node vs 2-executor cluster numbers of docs/ballista.md: starts a scheduler and
# two executors (release `tessera-ballista`, --vcores 1 each, round-robin) on 127.0.0.1, then
# for each query runs `cluster_bench` (one node in-process vs the cluster, same partitions)
# and counts the tasks each executor ran (its log's "Execute task" lines).
#
#   xtask/bench/ballista_bench.sh SPARSE_ARRAY DENSE_ARRAY [PARTITIONS] [RUNS]
#
# Needs: cargo build --release --manifest-path crates/tessera-ballista/Cargo.toml --bins --examples
set -euo pipefail
sparse=$1 dense=$2 parts=${3:-4} runs=${4:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
bin=$target/release/tessera-ballista
bench=$target/release/examples/cluster_bench
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
sp=$(port)
"$bin" scheduler --bind-host 127.0.0.1 --bind-port "$sp" --external-host 127.0.0.1 \
    --task-distribution round-robin >"$work/scheduler.log" 2>&1 & pids+=($!)
for e in 0 1; do
  mkdir -p "$work/w$e"
  "$bin" executor --scheduler-host 127.0.0.1 --scheduler-port "$sp" --bind-host 127.0.0.1 \
      --external-host 127.0.0.1 --bind-port "$(port)" --bind-grpc-port "$(port)" \
      --bind-health-port "$(port)" --vcores 1 --work-dir "$work/w$e" >"$work/executor$e.log" 2>&1 & pids+=($!)
done
for _ in $(seq 100); do
  n=$(curl -s "http://127.0.0.1:$sp/api/executors" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo 0)
  [ "$n" = 2 ] && break; sleep 0.3
done
tasks() { grep -c "Execute task" "$work/executor$1.log" || true; }
queries=(
  "SELECT x / 100000 AS bucket, count(*) AS n, avg(a) AS mean FROM p GROUP BY x / 100000 ORDER BY bucket"
  "SELECT count(*) AS n, sum(CAST(a AS BIGINT)) AS total FROM d WHERE a % 7 = 3"
)
for q in "${queries[@]}"; do
  b0=$(tasks 0) b1=$(tasks 1)
  "$bench" --cluster "df://127.0.0.1:$sp" --partitions "$parts" --runs "$runs" \
      --table "p=$sparse" --table "d=$dense" --query "$q"
  echo "tasks per executor for $((runs)) cluster runs: $(( $(tasks 0) - b0 )) / $(( $(tasks 1) - b1 ))"
done
