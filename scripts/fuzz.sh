#!/usr/bin/env bash
# Runs every fuzz target for a while (default 30s each) and commits what the
# fuzzer found interesting into the package's testdata/fuzz/<Target>/, so that
# plain `go test` replays it. Usage: scripts/fuzz.sh [SECONDS] [PACKAGE...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/go-env.sh
secs=${1:-30}; shift || true
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || mapfile -t pkgs < <(go list ./...)
cache=$(go env GOCACHE)/fuzz
for pkg in "${pkgs[@]}"; do
  dir=$(go list -f "{{.Dir}}" "$pkg"); ipath=$(go list -f "{{.ImportPath}}" "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/func //'); do
    echo "== $pkg $target (${secs}s)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "${secs}s" "$pkg" | tail -2
    src="$cache/$ipath/$target"
    if [ -d "$src" ]; then
      mkdir -p "$dir/testdata/fuzz/$target"
      # Keep the corpus small: the 40 smallest inputs the fuzzer kept.
      ls -S -r "$src" | head -40 | while read -r f; do cp "$src/$f" "$dir/testdata/fuzz/$target/"; done
    fi
  done
done
