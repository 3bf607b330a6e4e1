#!/usr/bin/env bash
# tests/check_fuzz_check.sh - `make fuzz-check` fails when a kept input fails, and
# names it. It runs the rule itself on fuzz/selftest/fuzz_selftest (a target that
# crashes, leaks, hangs or trips UBSan on four planted inputs) with the corpus,
# regressions, artifacts and logs in a temporary directory: once with harmless
# inputs, which must pass, then once per planted input, which must fail with the
# input's path in the output. `make fuzz-check` runs it beside the real targets;
# nothing is left in the tree (checked). $MAKE is the make to run (default make).
set -u
cd "$(dirname "$0")/.." || exit 1
make=${MAKE:-make}
target=fuzz/build/selftest/fuzz_selftest # the Makefile's FUZZ_SELFTEST_TARGET
tmp=$(mktemp -d)
# KEEP_TMP=1 keeps the directory, with every case's output and log.
trap '[ -n "${KEEP_TMP:-}" ] && echo "check_fuzz_check: kept $tmp" || rm -rf "$tmp"' EXIT
status=0
before=$(git status --porcelain --ignored=no 2>/dev/null)

# fuzz_check CASE - the rule on the selftest target over $tmp/CASE/{corpus,regressions};
# its output in $tmp/CASE.out, its status returned.
fuzz_check() {
	"$make" --no-print-directory fuzz-check FUZZ_SELFTEST=0 FUZZ_TARGETS=$target \
		FUZZ_CORPUS="$tmp/$1/corpus" FUZZ_REGRESSIONS="$tmp/$1/regressions" \
		FUZZ_ARTIFACTS="$tmp/$1/" FUZZ_LOGS="$tmp/$1/logs" FUZZ_TIMEOUT=2 FUZZ_SECONDS=1 \
		>"$tmp/$1.out" 2>&1
}
# plant CASE corpus|regressions FILE TEXT
plant() {
	mkdir -p "$tmp/$1/corpus/fuzz_selftest" "$tmp/$1/regressions/fuzz_selftest"
	printf 'kiln fuzz-check self-test: %s' "$4" >"$tmp/$1/$2/fuzz_selftest/$3"
}

if ! "$make" --no-print-directory $target FUZZ_TARGETS=$target >"$tmp/build.out" 2>&1; then
	echo "check_fuzz_check: $target does not build:"
	tail -n 20 "$tmp/build.out"
	exit 1
fi

plant pass corpus fine_corpus fine
plant pass regressions fine_regression "fine too"
if ! fuzz_check pass; then
	echo "check_fuzz_check: fuzz-check fails on harmless inputs:"
	tail -n 40 "$tmp/pass.out"
	status=1
fi

# Each case: where the input is planted and what the report must say besides its path.
for c in crash:regressions:heap-buffer-overflow leak:corpus:memory\ leak \
	hang:regressions:timeout ubsan:regressions:signed\ integer\ overflow; do
	what=${c%%:*} rest=${c#*:}
	dir=${rest%%:*} report=${rest#*:}
	file="planted_$what"
	plant "$what" "$dir" "$file" "$what"
	plant "$what" "$([ "$dir" = corpus ] && echo regressions || echo corpus)" harmless fine
	path="$tmp/$what/$dir/fuzz_selftest/$file"
	if fuzz_check "$what"; then
		echo "check_fuzz_check: fuzz-check passes with a $what planted in $dir/"
		status=1
	elif ! grep -q "fuzz_one: fuzz_selftest failed (exit [0-9]*) on $path " "$tmp/$what.out"; then
		echo "check_fuzz_check: fuzz-check fails with a $what planted in $dir/ but does not name $path:"
		tail -n 40 "$tmp/$what.out"
		status=1
	elif ! grep -q -i "$report" "$tmp/$what/logs/fuzz_selftest.log"; then
		echo "check_fuzz_check: fuzz-check fails on the planted $what, but its log says no \"$report\":"
		tail -n 40 "$tmp/$what/logs/fuzz_selftest.log"
		status=1
	else
		echo "check_fuzz_check: a $what planted in $dir/ fails fuzz-check, named"
	fi
done

after=$(git status --porcelain --ignored=no 2>/dev/null)
if [ "$before" != "$after" ]; then
	echo "check_fuzz_check: the tree changed:"
	diff <(echo "$before") <(echo "$after")
	status=1
fi
exit $status
