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
# benchmark script beside it would skew the throughput tests. One at a time,
# then, on the lock the scripts/bench-*.sh commands in docs/benchmarks.md
# take; a second run waits for the first.
lock=/tmp/linerate-lab.lock
if ! flock -n "$lock" true; then
	echo "another linerate test run or benchmark holds $lock; waiting for it (up to 1 h)"
fi
# One package at a time: the lab and engine tests measure throughput, which
# another package's tests running beside them on a 2-core machine would skew.
covdir=$(mktemp -d)
trap 'rm -rf "$covdir"' EXIT
export LINERATE_COVERDIR=$covdir
# flock -o: the lock is flock's own, not inherited by the tests' children,
# so a daemon a test leaked cannot hold it after the run.
rc=0
CGO_ENABLED=1 flock -o -w 3600 -E 99 "$lock" \
	go test -race -count=1 -p 1 -timeout 30m -cover -coverpkg=./... ./... \
	-args -test.gocoverdir="$covdir" || rc=$?
if [ "$rc" = 99 ]; then
	echo "gave up waiting for $lock after 1 h: is a test run stuck? see 'fuser $lock'"
	exit 2
fi
[ "$rc" = 0 ] || exit "$rc"
echo "== coverage (every package's tests and the binaries they start)"
go tool covdata textfmt -i="$covdir" -o "$covdir/profile.txt"
go tool cover -func="$covdir/profile.txt" | tail -1
