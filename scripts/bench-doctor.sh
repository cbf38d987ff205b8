#!/usr/bin/env bash
# Times a full `linerate doctor` over a generated large host (512 CPUs,
# 8 NICs, 4,096 NIC IRQs, live ethtool facts and a CMIS module on every
# port) and prints wall time and peak RSS per run.
# Targets (issues 2 and 11): under 300 ms and 64 MB. Usage: scripts/bench-doctor.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/go-env.sh
runs=${1:-5}
work=$(mktemp -d "${BENCH_TMPDIR:-/dev/shm}/linerate-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$work/linerate" ./cmd/linerate
go run ./internal/hosttree/cmd/gentrees -large "$work/host"
"$work/linerate" doctor --root "$work/host" --json >/dev/null || true   # warm the page cache
printf '%-5s %10s %12s\n' run wall_ms max_rss_MB
for i in $(seq "$runs"); do
  /usr/bin/time -f '%e %M' -o "$work/t" "$work/linerate" doctor --root "$work/host" --json >/dev/null || true
  read -r secs kb <"$work/t"
  printf '%-5s %10.0f %12.1f\n' "$i" "$(echo "$secs*1000" | bc -l)" "$(echo "$kb/1024" | bc -l)"
done
printf 'machine: %s, %s CPUs, kernel %s, tree on %s\n' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$(nproc)" "$(uname -r)" "$(df --output=fstype "$work" | tail -1)"
