#!/usr/bin/env bash
# mk/fuzz_one.sh TARGET SECONDS [CORPUS] - one libFuzzer run of TARGET (fuzz/build/NAME)
# for SECONDS, with fuzz/NAME.dict and fuzz/seeds/NAME/ when they exist, else
# fuzz/spec.dict and the shared seeds (fuzz/seeds and samples/). New inputs go to
# CORPUS, or to a temporary directory removed afterwards. $FUZZ_ARGS (from the
# Makefile) are libFuzzer's other options. Exits with libFuzzer's status.
set -u
target=$1 seconds=$2 corpus=${3:-}
name=$(basename "$target")
dict=fuzz/${name#fuzz_}.dict
[ -f "$dict" ] || dict=fuzz/spec.dict
seeds=fuzz/seeds/${name#fuzz_}
[ -d "$seeds" ] || seeds="fuzz/seeds samples"
scratch=
if [ -z "$corpus" ]; then
	scratch=$(mktemp -d)
	corpus=$scratch
fi
# shellcheck disable=SC2086 # FUZZ_ARGS and seeds are lists
"$target" ${FUZZ_ARGS:-} -dict="$dict" -max_total_time="$seconds" "$corpus" $seeds
rc=$?
[ -n "$scratch" ] && rm -rf "$scratch"
exit $rc
