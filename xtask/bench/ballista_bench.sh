#!/usr/bin/env bash
# The single-node vs 2-executor cluster numbers of docs/ballista.md. Starts a scheduler and two
# executors (release `tessera-ballista`, --vcores 1 each, round-robin) on 127.0.0.1, then for
# each query:
#   1. `tessera sql` (one process, one node) against `tessera sql --cluster` (the same command
#      on the cluster), end to end, runs alternating, the median of RUNS each, outputs compared;
#   2. `cluster_bench`: the same query in-process on one node and on the cluster with the same
#      partitions (PARTITIONS), alternating, and the tasks each executor ran per stage.
# The machine's load (`uptime`) is printed before and after.
#
#   xtask/bench/ballista_bench.sh SPARSE_ARRAY DENSE_ARRAY [PARTITIONS] [RUNS]
#
# Needs: cargo build --release --manifest-path crates/tessera-ballista/Cargo.toml --bins --examples
# Part 1 also needs the release `tessera` (cargo build --release -p tessera-cli, or TESSERA_BIN);
# without it only part 2 runs.
set -euo pipefail
sparse=$1 dense=$2 parts=${3:-4} runs=${4:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
bin=$target/release/tessera-ballista
bench=$target/release/examples/cluster_bench
tessera=${TESSERA_BIN:-$target/release/tessera}
for f in "$bin" "$bench"; do
  [ -x "$f" ] || { echo "ballista_bench: $f is missing (see the header of $0)" >&2; exit 1; }
done
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
sp=$(port)
RUST_LOG=info "$bin" scheduler --bind-host 127.0.0.1 --bind-port "$sp" --external-host 127.0.0.1 \
    --task-distribution round-robin >"$work/scheduler.log" 2>&1 & pids+=($!)
for e in 0 1; do
  mkdir -p "$work/w$e"
  RUST_LOG=info "$bin" executor --scheduler-host 127.0.0.1 --scheduler-port "$sp" \
      --bind-host 127.0.0.1 --external-host 127.0.0.1 --bind-port "$(port)" \
      --bind-grpc-port "$(port)" --bind-health-port "$(port)" --vcores 1 \
      --work-dir "$work/w$e" >"$work/executor$e.log" 2>&1 & pids+=($!)
done
ready=0
for _ in $(seq 200); do
  n=$(curl -s "http://127.0.0.1:$sp/api/executors" \
      | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo 0)
  if [ "$n" = 2 ]; then ready=1; break; fi
  sleep 0.3
done
if [ "$ready" != 1 ]; then
  echo "ballista_bench: the cluster did not come up; logs:" >&2
  tail -n 30 "$work"/*.log >&2
  exit 1
fi
url="df://127.0.0.1:$sp"
echo "load before: $(uptime)"

# name|table|array|query
queries=(
  "group_by|p|$sparse|SELECT x / 100000 AS bucket, count(*) AS n, avg(a) AS mean FROM p GROUP BY x / 100000 ORDER BY bucket"
  "scan_filter|d|$dense|SELECT count(*) AS n, sum(CAST(a AS BIGINT)) AS total FROM d WHERE a % 7 = 3"
)

now() { date +%s.%N; }
# Whether two CSV outputs hold the same rows, numbers equal to 12 significant digits (float
# sums and means add up in another order on the cluster).
same_csv() {
  python3 - "$1" "$2" <<'PY'
import csv, math, sys
a, b = (list(csv.reader(open(f))) for f in sys.argv[1:3])
def eq(x, y):
    try:
        return math.isclose(float(x), float(y), rel_tol=1e-12, abs_tol=0.0) or x == y
    except ValueError:
        return x == y
ok = len(a) == len(b) and all(len(r) == len(s) and all(map(eq, r, s)) for r, s in zip(a, b))
sys.exit(0 if ok else 1)
PY
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

cli_part() {
  echo
  echo "## tessera sql vs tessera sql --cluster (end to end, median of $runs, alternating)"
  echo "| query | tessera sql (s) | tessera sql --cluster (s) | cluster / one node | same output | tasks per executor (all runs) |"
  echo "|---|---|---|---|---|---|"
  for entry in "${queries[@]}"; do
    IFS='|' read -r name table array q <<<"$entry"
    here=() there=() same=true
    t0=$(grep -c "Execute task" "$work/executor0.log" || true)
    t1=$(grep -c "Execute task" "$work/executor1.log" || true)
    for _ in $(seq "$runs"); do
      s=$(now); "$tessera" sql "$q" --table "$table=$array" --format csv >"$work/one.csv"; e=$(now)
      here+=("$(echo "$e - $s" | bc)")
      s=$(now)
      TESSERA_BALLISTA=$bin "$tessera" sql "$q" --table "$table=$array" --format csv \
          --cluster "$url" >"$work/cluster.csv"
      e=$(now)
      there+=("$(echo "$e - $s" | bc)")
      same_csv "$work/one.csv" "$work/cluster.csv" || same=false
    done
    n0=$(( $(grep -c "Execute task" "$work/executor0.log" || true) - t0 ))
    n1=$(( $(grep -c "Execute task" "$work/executor1.log" || true) - t1 ))
    h=$(median "${here[@]}") c=$(median "${there[@]}")
    printf '| %s | %.2f | %.2f | %.2f× | %s | %s / %s |\n' "$name" "$h" "$c" \
        "$(echo "$c / $h" | bc -l)" "$same" "$n0" "$n1"
    if [ "$same" != true ]; then
      echo "ballista_bench: $name: the outputs differ" >&2
      diff "$work/one.csv" "$work/cluster.csv" | head >&2
      exit 1
    fi
  done
}
if [ -x "$tessera" ]; then
  cli_part
else
  echo "ballista_bench: no $tessera: skipping tessera sql vs tessera sql --cluster" >&2
fi

echo
echo "## in-process, $parts partitions on both sides (cluster_bench)"
args=()
for entry in "${queries[@]}"; do
  IFS='|' read -r name table array q <<<"$entry"
  args+=(--table "$table=$array" --query "$q")
done
"$bench" --cluster "$url" --partitions "$parts" --runs "$runs" \
    --executor-log "$work/executor0.log" --executor-log "$work/executor1.log" "${args[@]}"
echo
echo "load after: $(uptime)"
