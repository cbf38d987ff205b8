#!/usr/bin/env bash
# Mutation testing of linerate's critical packages with gremlins
# (github.com/go-gremlins/gremlins, pinned below): it changes one operator
# at a time in a package's code (< into <=, + into -, a condition negated…)
# and runs that package's tests; a change no test notices ("lived") is a
# gap in the tests. Per package it prints
#
#   test efficacy     killed / (killed + lived)
#   mutator coverage  (killed + lived) / (killed + lived + not covered)
#
# and fails when either is below its threshold. Gremlins counts as "not
# covered" the mutants no test of the package reaches — and also those in
# a switch's case expressions, which Go's coverage profile leaves outside
# every block — and times out mutants whose test run exceeds the
# coefficient × the coverage run's time (a busy machine needs a large one).
#
# Usage: scripts/mutation.sh [--ci] [--shard I/N] [--files LIST] [--diff REF] [PACKAGE...]
#
#   PACKAGE      package directories, default the critical ones:
#                internal/limits, internal/doctor, internal/tune, and the
#                agent's authentication, framing and request validation
#                (internal/agent: auth, frame, keys, token, proto, gate) and
#                the statistics (internal/explain: stats) — for those two
#                only the files named in only_files below are mutated, and
#                only their unit tests run (test_flags: no lab, no data runs)
#   --ci         CI mode: each package is cut into shards by file (the N of
#                ci_shards below) and the run takes one shard of each,
#                turning with the day of the year, so a day's run fits
#                about 10 minutes on 2 vCPUs and every file comes round
#                within a fortnight (tune, 13 files, one a day);
#                the thresholds apply to the shard run
#   --shard I/N  mutate only the package files whose index (sorted by name)
#                is I modulo N
#   --files LIST mutate only these files of the package(s), e.g.
#                --files "plan.go text.go": to finish a run that stopped, or
#                to look at one file
#   --diff REF   mutate only lines changed since REF (gremlins --diff): the
#                fast check for a branch
#   --report-only  print the table and the verdicts but exit 0 below the
#                thresholds (CI, while a package is still below them:
#                docs/testing.md)
#
# Environment: GREMLINS_WORKERS (default 2), GREMLINS_TIMEOUT_COEFFICIENT
# (default 30), THRESHOLD_EFFICACY (85), THRESHOLD_COVERAGE (90),
# LINERATE_TOOLS (where gremlins is installed, default ~/.cache/linerate/tools),
# MUTATION_OUT (a directory for gremlins' JSON reports, default a temporary one).
#
# Run it under nice (it does, -n 10) and not under the lab lock: it is CPU
# work. The packages' own tests decide; root-only tests of a package run
# only as root.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/go-env.sh
source scripts/go-env.sh

GREMLINS_VERSION=v0.6.0
tools=${LINERATE_TOOLS:-$HOME/.cache/linerate/tools}
workers=${GREMLINS_WORKERS:-2}
coefficient=${GREMLINS_TIMEOUT_COEFFICIENT:-30}
min_efficacy=${THRESHOLD_EFFICACY:-85}
min_coverage=${THRESHOLD_COVERAGE:-90}

# ci_shards is how many shards --ci cuts a package into: the full runs of
# docs/testing.md (limits 10 min, doctor 41, tune about 140, the agent's
# files 36, on the shared 2-vCPU VM) over a budget of some 3 minutes each
# on an idle one.
ci_shards() {
	case $1 in
	internal/limits) echo 3 ;;
	internal/doctor) echo 7 ;;
	internal/tune) echo 13 ;;
	internal/agent) echo 6 ;;
	internal/explain) echo 1 ;;
	*) echo 7 ;;
	esac
}

# only_files names, for a package, the files to mutate (the rest are
# excluded); none means every file.
only_files() {
	if [ -n "$files" ]; then
		echo "$files"
		return
	fi
	case $1 in
	internal/agent) echo auth.go frame.go gate.go keys.go proto.go token.go ;;
	internal/explain) echo stats.go ;;
	esac
}

# test_flags gives go test flags (through GOFLAGS) for a package whose
# whole suite is too slow to run once per mutant: -short leaves out the
# lab, -skip the tests that only measure data runs, which the mutated
# files do not decide.
test_flags() {
	case $1 in
	internal/agent) echo "-short -skip=^(TestOptions|TestDirections|TestPinning|TestBackToBack|TestAutoPlacement|TestRandomFrames)\$" ;;
	internal/explain) echo "-short" ;;
	esac
}

ci=false shard="" diff="" files="" report_only=false
pkgs=()
while [ $# -gt 0 ]; do
	case $1 in
	--ci) ci=true ;;
	--report-only) report_only=true ;;
	--shard) shard=${2:?--shard needs I/N}; shift ;;
	--diff) diff=${2:?--diff needs a git ref}; shift ;;
	--files) files=${2:?--files needs file names}; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "mutation.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) pkgs+=("${1%/}") ;;
	esac
	shift
done
[ ${#pkgs[@]} -gt 0 ] || pkgs=(internal/limits internal/doctor internal/tune internal/agent internal/explain)
if [ -n "$shard" ] && ! [[ $shard =~ ^[0-9]+/[1-9][0-9]*$ ]]; then
	echo "mutation.sh: --shard $shard: want I/N, e.g. 0/4" >&2
	exit 2
fi

gremlins=$tools/gremlins
# The binary says "version dev" (go install sets no version): ask the
# module's build information instead.
if ! go version -m "$gremlins" 2>/dev/null | grep -Eq "^\s+mod\s+github.com/go-gremlins/gremlins\s+$GREMLINS_VERSION\s"; then
	echo "installing gremlins $GREMLINS_VERSION into $tools" >&2
	mkdir -p "$tools"
	GOBIN=$tools go install "github.com/go-gremlins/gremlins/cmd/gremlins@$GREMLINS_VERSION"
fi

out=${MUTATION_OUT:-$(mktemp -d)}
mkdir -p "$out"

# excludes prints -E arguments that leave out every package file not in
# shard i of n (files sorted by name, test files aside).
excludes() {
	local dir=$1 i=$2 n=$3 k=0 f only
	only=" $(only_files "$dir") "
	for f in $(cd "$dir" && ls -- *.go | grep -v '_test\.go$' | sort); do
		if [ "$only" != "  " ] && [[ $only != *" $f "* ]]; then
			printf -- '-E\n^%s$\n' "${f//./\\.}"
			continue
		fi
		if [ $((k % n)) -ne "$i" ]; then
			printf -- '-E\n^%s$\n' "${f//./\\.}"
		fi
		k=$((k + 1))
	done
}

day=$((10#$(date +%j)))
status=0
rows=()
for pkg in "${pkgs[@]}"; do
	if [ ! -d "$pkg" ]; then
		echo "mutation.sh: $pkg is not a package directory" >&2
		exit 2
	fi
	# No --test-cpu: gremlins v0.6.0 passes it as one word ("-cpu 1"), which
	# fails every test run, so that every mutant counts as killed.
	args=(unleash --workers "$workers" --timeout-coefficient "$coefficient"
		-o "$out/$(basename "$pkg").json")
	which="all files"
	s=$shard
	if $ci && [ -z "$s" ]; then
		n=$(ci_shards "$pkg")
		s=$((day % n))/$n
	fi
	if [ -n "$s" ] || [ -n "$(only_files "$pkg")" ]; then
		sh=${s:-0/1}
		mapfile -t ex < <(excludes "$pkg" "${sh%/*}" "${sh#*/}")
		args+=("${ex[@]}")
		which="shard ${s:-all}"
		[ -z "$(only_files "$pkg")" ] || which="$(only_files "$pkg" | sed 's/\.go//g; s/ /,/g'), $which"
	fi
	if [ -n "$diff" ]; then
		args+=(--diff "$diff")
		which="$which, lines changed since $diff"
	fi
	echo "== $pkg ($which)" >&2
	start=$(date +%s)
	log=$out/$(basename "$pkg").log
	set +e
	# -vet=off: a mutant is killed by a test, not by go vet's checks that
	# go test runs first (and the runs are quicker).
	# LINERATE_TESTDATA: gremlins tests a copy of the module made without
	# its symbolic links, and the host trees of testdata/ are made of
	# them; the tests read the repository's own (they never write there).
	LINERATE_TESTDATA=$PWD/testdata GOFLAGS="${GOFLAGS:+$GOFLAGS }-vet=off $(test_flags "$pkg")" \
		nice -n 10 "$gremlins" "${args[@]}" "./$pkg" >"$log" 2>&1
	rc=$?
	set -e
	secs=$(($(date +%s) - start))
	grep -E '^ *(LIVED|TIMED OUT) ' "$log" >&2 || true
	killed=$(sed -n 's/^Killed: \([0-9]*\), Lived: \([0-9]*\), Not covered: \([0-9]*\).*/\1 \2 \3/p' "$log")
	timed=$(sed -n 's/^Timed out: \([0-9]*\).*/\1/p' "$log")
	eff=$(sed -n 's/^Test efficacy: \(.*\)%/\1/p' "$log")
	cov=$(sed -n 's/^Mutator coverage: \(.*\)%/\1/p' "$log")
	if [ -z "$killed" ]; then
		echo "mutation.sh: gremlins gave no result for $pkg (exit $rc):" >&2
		tail -20 "$log" >&2
		status=1
		continue
	fi
	read -r k l nc <<<"$killed"
	# The thresholds are checked here: gremlins v0.6.0 exits 0 below its
	# own --threshold-* flags.
	verdict=ok
	if [ "$rc" -ne 0 ] || awk -v e="${eff:-0}" -v c="${cov:-0}" -v me="$min_efficacy" -v mc="$min_coverage" \
		'BEGIN { exit !(e + 0 < me + 0 || c + 0 < mc + 0) }'; then
		verdict="below threshold"
		status=1
	fi
	rows+=("$(printf '%-18s %-22s %6s %5s %6s %6s %9s%% %9s%% %6ss  %s' "$pkg" "$which" "$k" "$l" "$nc" "${timed:-0}" "${eff:-n/a}" "${cov:-n/a}" "$secs" "$verdict")")
done

printf '\n%-18s %-22s %6s %5s %6s %6s %10s %10s %7s  %s\n' package mutated killed lived uncov timeout efficacy coverage time verdict
printf '%s\n' "${rows[@]}"
echo "thresholds: efficacy ≥ $min_efficacy%, mutator coverage ≥ $min_coverage%; reports in $out"
if $report_only && [ "$status" -ne 0 ]; then
	echo "mutation.sh: below the thresholds (reported only, --report-only)" >&2
	exit 0
fi
exit $status
