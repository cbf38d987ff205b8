#!/usr/bin/env bash
# Measures what runs between two 512-CPU hosts cost to keep (issue 12,
# item 7): one run's JSON with every CPU's samples and compacted, the
# database of 1,000 such runs each way, and `linerate report --last 1000`
# over each database (wall time and peak RSS). The runs are generated
# (BenchmarkRecords512 in internal/explain). Usage: scripts/bench-records.sh [REPORT_RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/go-env.sh
runs=${1:-3}
work=$(mktemp -d "${BENCH_TMPDIR:-/tmp}/linerate-records.XXXXXX")
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$work/linerate" ./cmd/linerate
LINERATE_RECORDS_DIR=$work go test -run '^$' -bench 'BenchmarkRecords512' -benchtime 20x ./internal/explain | grep -E 'Benchmark'
printf '%-8s %12s\n' db size_MB
for kind in full compact; do
  printf '%-8s %12.1f\n' "$kind" "$(echo "$(stat -c %s "$work/$kind.db")/1048576" | bc -l)"
done
printf '%-8s %-4s %10s %12s\n' db run wall_s max_rss_MB
for kind in full compact; do
  "$work/linerate" report --db "$work/$kind.db" --last 1000 -o "$work/$kind.html" >/dev/null   # warm the page cache
  for i in $(seq "$runs"); do
    /usr/bin/time -f '%e %M' -o "$work/t" "$work/linerate" report --db "$work/$kind.db" --last 1000 -o "$work/$kind.html" >/dev/null
    read -r secs kb <"$work/t"
    printf '%-8s %-4s %10.2f %12.1f\n' "$kind" "$i" "$secs" "$(echo "$kb/1024" | bc -l)"
  done
done
printf 'machine: %s, %s CPUs, kernel %s, %s\n' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$(nproc)" "$(uname -r)" "$(go version | cut -d' ' -f3)"
