#!/usr/bin/env bash
# bench-busy.sh: native `auto` placement against unpinned iperf3 in a lab,
# on the idle machine and with a busy loop pinned to CPU 0 (issue 12).
#
#   sudo flock /tmp/linerate-lab.lock scripts/bench-busy.sh [PAIRS] [SECONDS]
#
# For each state, PAIRS interleaved pairs (native first in odd pairs,
# iperf3 first in even ones) of one-stream runs of SECONDS; with the busy
# loop, also native pinned as the old automatic placement pinned it
# (-A 0,1: client on the busy CPU) and both ends on the free CPU (-A 1,1).
# Prints every run's Gbit/s and the placement it chose (the CPUs and the
# placement notes), then the medians and the median of the pairs' ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-5}
secs=${2:-5}
[ "$(id -u)" = 0 ] || { echo "bench-busy.sh: needs root (network namespaces): run it with sudo" >&2; exit 2; }
command -v iperf3 >/dev/null || { echo "bench-busy.sh: iperf3 is not installed: apt-get install -y iperf3" >&2; exit 2; }

work=$(mktemp -d)
export LINERATE_STATE_DIR="$work/state"
lab=bbusy
spin=
cleanup() {
	[ -n "$spin" ] && kill "$spin" 2>/dev/null || true
	"$work/linerate" lab down --name "$lab" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/linerate" ./cmd/linerate
"$work/linerate" lab up --name "$lab" >/dev/null
echo "machine: $(nproc) CPUs, kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(iperf3 --version | head -1), load average $(cut -d' ' -f1-3 /proc/loadavg)"

# run LABEL ARGS...: one run; prints "LABEL gbps placement" and appends gbps to $work/LABEL.
run() {
	local label=$1
	shift
	"$work/linerate" bench "lab:$lab" -t "$secs" --json --no-store "$@" >"$work/out.json"
	python3 - "$label" "$work/out.json" >>"$work/log" <<'PY'
import json, sys
label, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
st, e = r["start"], r["end"]
g = e["sum_received"]["bits_per_second"] / 1e9
p = st.get("placement", {})
cpus = lambda l: ",".join(map(str, l)) if l else "any"
notes = [n for n in st.get("notes", []) if n.startswith("placement")]
lb = (st.get("load_before") or {}).get("client")
if lb:
    notes.append("look: " + ", ".join("CPU %s %.0f%%" % kv for kv in sorted(lb.items())))
other = []
for end in ("client", "server"):
    f = (e.get("foreign") or {}).get(end)
    if f:
        other += ["%s: CPU %s %.0f%%" % (end, k, v) for k, v in sorted(f["cpu"].items())]
        other += ["%s: pid %d (%s) %.0f%% on CPU %d" % (end, t["pid"], t["name"], t["cpu_pct"], t["cpu"]) for t in f["top"][:1]]
print("%-14s %6.2f Gbit/s  client CPUs %s, server CPUs %s (%s)%s%s" % (label, g, cpus(p.get("client")), cpus(p.get("server")),
      p.get("source", "-"), "; " + "; ".join(notes) if notes else "", "; other load: " + ", ".join(other) if other else ""))
print(g, file=open(path.rsplit("/", 1)[0] + "/" + label, "a"))
PY
	tail -1 "$work/log"
}
median() { sort -g "$1" | awk '{v[NR]=$1} END {printf "%.2f", (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
ratios() { paste "$1" "$2" | awk '{printf "%.3f\n", $1/$2}' >"$work/ratio"; median "$work/ratio"; }

for state in idle busy; do
	echo
	echo "== $state machine"
	if [ "$state" = busy ]; then
		taskset -c 0 sh -c 'while :; do :; done' &
		spin=$!
		echo "busy loop: pid $spin (sh) pinned to CPU 0"
		sleep 1
	fi
	: >"$work/native-$state"
	: >"$work/iperf3-$state"
	for i in $(seq "$pairs"); do
		if [ $((i % 2)) = 1 ]; then
			run "native-$state"
			run "iperf3-$state" --engine iperf3
		else
			run "iperf3-$state" --engine iperf3
			run "native-$state"
		fi
		if [ "$state" = busy ]; then
			run "native-A0,1" -A 0,1
			run "native-A1,1" -A 1,1
		fi
	done
	echo "$state: native auto median $(median "$work/native-$state"), iperf3 median $(median "$work/iperf3-$state"), median ratio of pairs $(ratios "$work/native-$state" "$work/iperf3-$state")"
	if [ "$state" = busy ]; then
		echo "busy: native -A 0,1 median $(median "$work/native-A0,1"), native -A 1,1 median $(median "$work/native-A1,1")"
	fi
done
