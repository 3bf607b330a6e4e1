#!/usr/bin/env bash
# mk/fuzz_one.sh TARGET SECONDS [CORPUS] - one libFuzzer run of TARGET (fuzz/build/NAME).
#
# It first executes, once each, every input of the kept corpus ($FUZZ_CORPUS/NAME),
# of the crash regressions ($FUZZ_REGRESSIONS/NAME) and of the seeds (fuzz/seeds/NAME/,
# or the shared fuzz/seeds and samples/): libFuzzer runs all the inputs it is given
# before it mutates any, and the time limit does not cut that short. Then it fuzzes
# for what is left of SECONDS; SECONDS 0 is the replay alone (-runs=0). The dictionary
# is fuzz/NAME.dict, or fuzz/spec.dict. New inputs go to CORPUS, or to a temporary
# directory removed afterwards: libFuzzer writes only into the first directory it is
# given, so the kept ones are only read. $FUZZ_ARGS (from the Makefile) are
# libFuzzer's other options.
#
# Exits with libFuzzer's status. On a failure it names the input: the kept file whose
# bytes are the artifact libFuzzer wrote (crash-, leak-, timeout-, oom-), or says the
# input is a new one, found by this run's fuzzing.
set -u
target=$1 seconds=$2 corpus=${3:-}
name=$(basename "$target")
dict=fuzz/${name#fuzz_}.dict
[ -f "$dict" ] || dict=fuzz/spec.dict
seeds=fuzz/seeds/${name#fuzz_}
[ -d "$seeds" ] || seeds="fuzz/seeds samples"
inputs=()
for d in "${FUZZ_CORPUS:-fuzz/corpus}/$name" "${FUZZ_REGRESSIONS:-fuzz/regressions}/$name" $seeds; do
	[ -d "$d" ] && inputs+=("$d")
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if [ -z "$corpus" ]; then
	corpus=$scratch/corpus
	mkdir "$corpus"
fi
if [ "$seconds" = 0 ]; then limit=-runs=0; else limit=-max_total_time=$seconds; fi
# shellcheck disable=SC2086 # FUZZ_ARGS is a list
"$target" ${FUZZ_ARGS:-} -dict="$dict" "$limit" "$corpus" "${inputs[@]}" 2>&1 | tee "$scratch/log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] && exit 0

# libFuzzer's last "Test unit written to PATH" of a failure (a slow unit is no failure).
artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$scratch/log" | grep -v '/slow-unit-' | tail -n 1)
if [ -z "$artifact" ] || [ ! -f "$artifact" ]; then
	echo "fuzz_one: $name failed (exit $rc) with no input written: see the report above"
	exit "$rc"
fi
# An input longer than -max_len runs cut to its first max_len bytes.
size=$(stat -c %s "$artifact")
exact='' prefix=''
while IFS= read -r -d '' f; do
	if cmp -s "$artifact" "$f"; then
		exact=$f
		break
	fi
	[ -z "$prefix" ] && [ "$(stat -c %s "$f")" -gt "$size" ] && cmp -s -n "$size" "$artifact" "$f" && prefix=$f
done < <(find "${inputs[@]}" -type f -print0)
if [ -n "$exact" ]; then
	echo "fuzz_one: $name failed (exit $rc) on $exact (a kept input; the same bytes are in $artifact)"
elif [ -n "$prefix" ]; then
	echo "fuzz_one: $name failed (exit $rc) on the first $size bytes of $prefix (in $artifact)"
else
	echo "fuzz_one: $name failed (exit $rc) on a new input found by fuzzing: $artifact (fuzz/README.md, \"When it finds something\")"
fi
exit "$rc"
