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
# One package at a time: the lab and engine tests measure throughput, which
# another package's tests running beside them on a 2-core machine would skew.
covdir=$(mktemp -d)
trap 'rm -rf "$covdir"' EXIT
export LINERATE_COVERDIR=$covdir
CGO_ENABLED=1 go test -race -count=1 -p 1 -timeout 30m -cover -coverpkg=./... ./... \
	-args -test.gocoverdir="$covdir"
echo "== coverage (every package's tests and the binaries they start)"
go tool covdata textfmt -i="$covdir" -o "$covdir/profile.txt"
go tool cover -func="$covdir/profile.txt" | tail -1
