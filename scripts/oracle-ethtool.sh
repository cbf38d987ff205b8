#!/usr/bin/env bash
# oracle-ethtool.sh: the differential oracle of linerate's module EEPROM
# decoders (internal/sff) against ethtool's own.
#
# It gets ethtool's source from Debian's package archive (apt-get source,
# through a deb-src entry in a temporary sources list: the system's apt
# configuration is not touched), compiles ethtool's SFF-8472/8636/CMIS
# decoders (sfpid.c, sfpdiag.c, qsfp.c, cmis.c, sff-common.c …) around
# linerate's harness (scripts/oracle/harness/harness.c), and runs
# scripts/oracle, which compares both decodings field by field on every
# module page set of testdata/hosts and on page sets generated at random
# within each specification's valid ranges. The GPL source and the binary
# built from it stay in a temporary directory, removed on exit: nothing of
# ethtool's is committed. Not run by test.sh (it needs the network and a
# C compiler); its figures are in docs/testing.md.
#
# Usage: scripts/oracle-ethtool.sh [-random N] [-seed S] [-v]
#   ORACLE_SUITES   Debian suites to try, newest first (default: "trixie bookworm")
#   ORACLE_KEEP=1   keep the work directory (its path is printed)
#
# Exit: 0 every difference explained, 1 an unexplained difference, 2 the
# oracle could not be built (no archive, no compiler).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/go-env.sh

for tool in apt-get dpkg-source gcc; do
	command -v "$tool" >/dev/null || { echo "oracle-ethtool: $tool not found (apt-get install dpkg-dev gcc)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/linerate-oracle-ethtool.XXXXXX)
if [ "${ORACLE_KEEP:-}" = 1 ]; then
	echo "oracle-ethtool: work directory $work (kept)" >&2
else
	trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

src=""
for suite in ${ORACLE_SUITES:-trixie bookworm}; do
	echo "deb-src [signed-by=$keyring] http://deb.debian.org/debian $suite main" >"$work/sources.list"
	apt=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o APT::Sandbox::User=root)
	if ! apt-get "${apt[@]}" -qq update >/dev/null 2>&1; then
		echo "oracle-ethtool: $suite: the archive's source index cannot be read" >&2
		continue
	fi
	rm -rf "$work/src"/*
	if (cd "$work/src" && apt-get "${apt[@]}" -qq source ethtool >/dev/null 2>&1); then
		src=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'ethtool-*' | head -1)
		[ -n "$src" ] && break
	fi
	echo "oracle-ethtool: $suite: ethtool's source package cannot be fetched" >&2
done
if [ -z "$src" ]; then
	echo "oracle-ethtool: no ethtool source from Debian's archive (tried ${ORACLE_SUITES:-trixie bookworm})" >&2
	exit 2
fi
version=$(basename "$(ls "$work/src"/*.dsc)" .dsc)

files=()
for f in sfpid.c sfpdiag.c qsfp.c cmis.c sff-common.c module-common.c json_print.c json_writer.c; do
	[ -f "$src/$f" ] && files+=("$src/$f")
done
defs=(-DETHTOOL_ENABLE_NETLINK)
# Versions that decode QSFP+ modules with CMIS (identifier 1Eh) dispatch them too.
grep -q 'SFF8024_ID_QSFP_PLUS_CMIS' "$src/netlink/module-eeprom.c" 2>/dev/null && defs+=(-DORACLE_CMIS_ALL)
if ! gcc -O1 -w "${defs[@]}" -I"$src" -I"$src/uapi" -o "$work/harness" \
	scripts/oracle/harness/harness.c "${files[@]}" -lm 2>"$work/gcc.log"; then
	echo "oracle-ethtool: the harness does not build against $version:" >&2
	sed -n 1,20p "$work/gcc.log" >&2
	exit 2
fi

echo "ethtool: $version (Debian source package), decoders: ${files[*]##*/}"
echo "machine: $(uname -srm), $(nproc) CPUs"
echo
go run ./scripts/oracle -harness "$work/harness" "$@"
