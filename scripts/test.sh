#!/usr/bin/env bash
# The project's checks: gofmt, go vet, staticcheck, then every test with the
# race detector, counting coverage over the whole module (the linerate
# binaries the tests start included, see internal/testbin), and its total.
# Tests that need root skip without it, except under CI=true, where they
# fail.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/go-env.sh
echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; exit 1; fi
echo "== go vet"
go vet ./...
echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
echo "== go test -race"
# The lab tests make network namespaces with fixed names (lr-t-run-a, ...),
# which belong to the kernel, not to this checkout: a second run of the
# suite on the same machine would find the first one's labs and fail, and a
# benchmark script beside it would skew the throughput tests. One run at a
# time, then, on the lock the scripts/bench-*.sh commands in
# docs/benchmarks.md take; a second run waits for the first.
lock=/tmp/linerate-lab.lock
if ! flock -n "$lock" true; then
	echo "another linerate test run or benchmark holds $lock; waiting for it (up to 1 h)"
fi
covdir=$(mktemp -d)
logdir=$(mktemp -d)
trap 'rm -rf "$covdir" "$logdir"' EXIT
export LINERATE_COVERDIR=$covdir
flags=(-race -count=1 -timeout 30m -cover -coverpkg=./...)
# Compile every test binary first, as many at once as there are CPUs
# (-exec /bin/true links each and runs nothing): the runs below go one
# package at a time per lane, and `go test -p 1` compiles one package at a
# time as well, which on a 2-CPU machine was a third of the suite's time.
echo "compiling the tests"
go test "${flags[@]}" -exec /bin/true ./... >"$logdir/compile" 2>&1 || { cat "$logdir/compile"; exit 1; }
# Lanes: the packages whose tests build labs or measure throughput run one
# at a time within a lane (a lab test's figures are compared with a
# reference measured at the same moment, so a neighbour slows both sides
# alike, but two lab tests of one package would share its fixed lab names).
# The lanes hold disjoint lab names: cmd/linerate and internal/lab share
# t-mtu and t-many, internal/lab and internal/doctor t-shaped, so those
# three are in one lane; internal/ethtool and internal/nicstats share
# lr-optics0 in the third. Every other package (parsers, models, captured
# trees) runs in the third lane beside bench's and report's labs.
# One lane is the default (and CI's): LINERATE_TEST_LANES=3 runs the three
# lanes at once, about 12 min instead of 20 on 2 CPUs, but there the
# gap's busy-receiver lab case reads the planted busy loop as network
# loss (the other lanes load both CPUs), so it is opt-in until that case
# holds under load.
lane1=(./cmd/linerate ./internal/lab ./internal/doctor ./internal/engine)
lane2=(./internal/fleet/runner ./internal/agent ./internal/fleet/launch ./internal/metrics)
[ -d internal/mesh ] && lane2+=(./internal/mesh)
rest=()
for p in $(go list ./...); do
	rel=./${p#github.com/linerate/linerate/}
	case " ${lane1[*]} ${lane2[*]} " in *" $rel "*) ;; *) rest+=("$rel") ;; esac
done
lanes=${LINERATE_TEST_LANES:-1}
exec 9>"$lock"
if ! flock -w 3600 9; then
	echo "gave up waiting for $lock after 1 h: is a test run stuck? see 'fuser $lock'"
	exit 2
fi
# 9>&-: the lock is this script's, not inherited by the tests' children,
# so a daemon a test leaked cannot hold it after the run.
run_lane() { # name packages...
	local name=$1 rc=0
	shift
	CGO_ENABLED=1 go test "${flags[@]}" -p 1 "$@" -args -test.gocoverdir="$covdir" >"$logdir/$name" 2>&1 9>&- || rc=$?
	echo "$rc" >"$logdir/$name.rc"
}
start=$SECONDS
rc=0
if [ "$lanes" = 1 ]; then
	CGO_ENABLED=1 go test "${flags[@]}" -p 1 ./... -args -test.gocoverdir="$covdir" 9>&- || rc=$?
else
	echo "three lanes at once, one package at a time in each: [${lane1[*]}] [${lane2[*]}] [the other ${#rest[@]} packages]"
	run_lane lane1 "${lane1[@]}" &
	run_lane lane2 "${lane2[@]}" &
	run_lane rest "${rest[@]}" &
	wait
	for l in lane1 lane2 rest; do
		cat "$logdir/$l"
		r=$(cat "$logdir/$l.rc" 2>/dev/null || echo 1)
		[ "$r" = 0 ] || rc=$r
	done
fi
flock -u 9
echo "go test: $((SECONDS - start)) s"
[ "$rc" = 0 ] || exit "$rc"
echo "== coverage (every package's tests and the binaries they start)"
go tool covdata textfmt -i="$covdir" -o "$covdir/profile.txt"
go tool cover -func="$covdir/profile.txt" | tail -1
