# Sourced by the other scripts: puts a Go of at least the version go.mod
# names on PATH. On a fresh Debian 12 (whose golang-go is 1.19) it fetches
# the official toolchain zip from the Go module proxy — the same file
# `GOTOOLCHAIN=auto` would fetch — into /usr/local/lib/linerate-go.
want=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../go.mod")
toolchain=go1.26.8
for d in /usr/local/go/bin /usr/lib/go/bin "$HOME/go/bin" /usr/local/lib/linerate-go/bin; do
  [ -x "$d/go" ] && PATH="$PATH:$d"
done
export PATH

go_ok() {
  command -v go >/dev/null 2>&1 || return 1
  have=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
  [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -1)" = "$want" ]
}

if ! go_ok; then
  echo "linerate: Go >= $want not found; fetching $toolchain from proxy.golang.org" >&2
  for tool in curl unzip; do
    if ! command -v $tool >/dev/null 2>&1; then
      apt-get update -qq && apt-get install -y -qq curl unzip ca-certificates >/dev/null
      break
    fi
  done
  arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
  tmp=$(mktemp -d)
  curl -fsSL -o "$tmp/go.zip" "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-$toolchain.linux-$arch.zip"
  unzip -q "$tmp/go.zip" -d "$tmp/x"
  rm -rf /usr/local/lib/linerate-go
  mv "$tmp/x/golang.org/toolchain@v0.0.1-$toolchain.linux-$arch" /usr/local/lib/linerate-go
  chmod +x /usr/local/lib/linerate-go/bin/* /usr/local/lib/linerate-go/pkg/tool/*/* 2>/dev/null || true
  rm -rf "$tmp"
  PATH="/usr/local/lib/linerate-go/bin:$PATH"
  export PATH
  go_ok || { echo "linerate: could not install Go $want" >&2; exit 2; }
fi
export GOTOOLCHAIN=local
