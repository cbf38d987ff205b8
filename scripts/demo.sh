#!/usr/bin/env bash
# The lab demo: two hosts in network namespaces, doctor → bench → tune →
# bench → report. Needs root (namespaces); installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "linerate: the lab demo needs root (network namespaces): run sudo ./scripts/demo.sh" >&2
  exit 2
fi
missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v iperf3 >/dev/null 2>&1 || missing+=(iperf3)
command -v iperf >/dev/null 2>&1 || missing+=(iperf)
command -v ethtool >/dev/null 2>&1 || missing+=(ethtool)
if [ ${#missing[@]} -gt 0 ]; then
  echo "linerate: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
source scripts/go-env.sh
mkdir -p bin
CGO_ENABLED=0 go build -trimpath -o bin/linerate ./cmd/linerate
exec bin/linerate lab run "$@"
