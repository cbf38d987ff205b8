#!/bin/bash
# The fleet's sampled design at scale, simulated: over models of 64 and
# 1,000 hosts with planted faults (slow send sides, receive sides and
# paths the sample tests) and noise a re-test clears (1% of tries dip to
# 50-85%, 3% are contended at 60%), one random seed per iteration, it
# prints per case the faults found (%), what was blamed that was not
# planted (per run), the tests and legs run (per run) and the worst run's
# legs at 10 s a test (11.5 s a leg with --concurrent). No root, no lab.
#
#   scripts/bench-fleet-sim.sh [SEEDS]     (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/go-env.sh
seeds=${1:-200}
go test -count=1 -run '^$' -bench BenchmarkFleetSimulation -benchtime "${seeds}x" ./internal/fleet/ |
  awk -v seeds="$seeds" '
    /^BenchmarkFleetSimulation/ {
      split($1, p, "/"); sub(/-[0-9]+$/, "", p[4])
      for (i = 3; i < NF; i++) m[$(i+1)] = $i
      printf "| %s | %s | %s | %s | %s%% | %s | %s | %s | %s s |\n", substr(p[2], 7), substr(p[3], 10), substr(p[4], 8), seeds, m["found%"], m["false/run"], m["tests/run"], m["legs/run"], m["worst-s"]
      delete m
      next
    }
    /missed:/ { print "missed:" substr($0, index($0, "missed:") + 7) > "/dev/stderr" }
    BEGIN { print "| hosts | partners | faults (send+receive+path) | seeds | found | blamed wrongly per run | tests per run | legs per run | worst run at 10 s a test |"; print "|---|---|---|---|---|---|---|---|---|" }'
