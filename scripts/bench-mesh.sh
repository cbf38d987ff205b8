#!/bin/bash
# The cost of a mesh agent (linerate serve --mesh): its CPU and memory
# while it probes N peers at the default rate (10 probes a second each),
# for N = 0 (an agent in no mesh), 7 and 63. The peers are real agents of
# the same code, all in one helper process (the agent package's test
# binary, helper mode "meshpeers"), on loopback addresses 127.0.1.x of a
# network namespace of the script's own; the measured agent is the
# linerate binary in its own process, its CPU time read from
# /proc/PID/stat over a minute after a 20 s warm-up.
#
# On loopback the kernel's receive path of a datagram runs in its
# sender's system call, so each agent is also charged for its peers'
# receiving of its probes (and they for its receiving of theirs): about
# what the host's own softirqs would cost it with a NIC.
#
# Needs root (a network namespace). Prints a Markdown table.
#   sudo flock /tmp/linerate-lab.lock scripts/bench-mesh.sh
set -eu
cd "$(dirname "$0")/.."
. scripts/go-env.sh

ns=linerate-meshbench
port=15401
secs=${SECS:-60}
work=$(mktemp -d)
peers_pid=""
agent_pid=""
cleanup() {
	[ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null || true
	[ -n "$peers_pid" ] && kill "$peers_pid" 2>/dev/null || true
	sleep 1
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

go build -o "$work/linerate" ./cmd/linerate
go test -c -o "$work/agent.test" ./internal/agent
"$work/linerate" serve --new-token-file "$work/token" >/dev/null

ip netns add "$ns"
ip netns exec "$ns" ip link set lo up
i=1
while [ $i -le 64 ]; do
	ip netns exec "$ns" ip addr add "127.0.1.$i/32" dev lo
	i=$((i + 1))
done

# ticks PID: user and system time of PID so far, in clock ticks.
ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }

echo "| peers | probes sent/s | CPU, % of one CPU (user + system) | RSS (peak) | load average |"
echo "|---|---|---|---|---|"
for n in 0 7 63; do
	hosts="$work/hosts-$n"
	: >"$hosts"
	i=1
	while [ $i -le $((n + 1)) ]; do
		echo "m$i 127.0.1.$i" >>"$hosts"
		i=$((i + 1))
	done
	mesh="--mesh $hosts --throughput-every 0"
	if [ "$n" -gt 0 ]; then
		ip netns exec "$ns" env LINERATE_ENGINE_TEST_HELPER=meshpeers LINERATE_TOKEN="$(cat "$work/token")" \
			"$work/agent.test" "$hosts" "$port" m1 >"$work/peers.out" 2>"$work/peers.err" &
		peers_pid=$!
		sleep 3
	else
		mesh=""
	fi
	# shellcheck disable=SC2086
	ip netns exec "$ns" "$work/linerate" serve --bind 127.0.1.1 --port "$port" --token-file "$work/token" $mesh \
		>"$work/agent.out" 2>"$work/agent.err" &
	agent_pid=$!
	sleep 20
	read -r u0 s0 < <(ticks "$agent_pid")
	sleep "$secs"
	read -r u1 s1 < <(ticks "$agent_pid")
	rss=$(awk '/VmRSS/ {print $2}' "/proc/$agent_pid/status")
	hwm=$(awk '/VmHWM/ {print $2}' "/proc/$agent_pid/status")
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	awk -v n="$n" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v t="$secs" -v rss="$rss" -v hwm="$hwm" -v load="$load" 'BEGIN {
		printf "| %d | %d | %.2f%% (%.2f + %.2f) | %.1f MB (%.1f MB) | %s |\n", n, n * 10, (u + s) / t, u / t, s / t, rss / 1000, hwm / 1000, load
	}'
	kill "$agent_pid"
	wait "$agent_pid" 2>/dev/null || true
	agent_pid=""
	if [ -n "$peers_pid" ]; then
		kill "$peers_pid"
		wait "$peers_pid" 2>/dev/null || true
		peers_pid=""
	fi
done
echo
echo "$(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ); each figure over ${secs} s after 20 s of warm-up."
