#!/usr/bin/env bash
# mk/fuzz_corpus.sh TARGET - make the kept corpus $FUZZ_CORPUS/NAME (fuzz/corpus/NAME)
# afresh with libFuzzer's -merge=1: of the inputs `make fuzz` found
# (fuzz/build/corpus/NAME) and the old kept corpus, the fewest and smallest that reach
# code the seeds and the crash regressions do not already reach (those are replayed
# anyway, so the corpus does not repeat them). Only inputs of at most
# $FUZZ_CORPUS_MAX_BYTES (4096) are candidates: the longer ones fuzzing finds are
# mostly the large samples with a byte changed, and would make the corpus (and its
# replay in every `make check`) several times larger for little. Files are named
# by their SHA-1, as libFuzzer names them. Prints what the corpus holds.
set -u
target=$1
name=$(basename "$target")
kept=${FUZZ_CORPUS:-fuzz/corpus}/$name
found=fuzz/build/corpus/$name
seeds=fuzz/seeds/${name#fuzz_}
[ -d "$seeds" ] || seeds="fuzz/seeds samples"
known=()
for d in "${FUZZ_REGRESSIONS:-fuzz/regressions}/$name" $seeds; do
	[ -d "$d" ] && known+=("$d")
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/new"
# The seeds and regressions go in first, as the merge's starting set: what they
# reach counts as reached. They are taken out again afterwards.
i=0
while IFS= read -r -d '' f; do
	cp "$f" "$tmp/new/known-$i"
	i=$((i + 1))
done < <(find "${known[@]}" -type f -print0)
from=()
for d in "$found" "$kept"; do
	[ -d "$d" ] && from+=("$d")
done
if [ "${#from[@]}" -eq 0 ]; then
	echo "fuzz_corpus: $name: neither $found nor $kept exists (run make fuzz first)"
	exit 1
fi
mkdir "$tmp/candidates"
for d in "${from[@]}"; do # one cp a directory: both may hold a file of the same name
	find "$d" -type f -size -$((${FUZZ_CORPUS_MAX_BYTES:-4096} + 1))c -exec cp -f -t "$tmp/candidates" {} +
done
# shellcheck disable=SC2086 # FUZZ_ARGS is a list
if ! "$target" ${FUZZ_ARGS:-} -merge=1 "$tmp/new" "$tmp/candidates" >"$tmp/log" 2>&1; then
	tail -n 40 "$tmp/log"
	echo "fuzz_corpus: $name: the merge failed"
	exit 1
fi
rm -f "$tmp/new"/known-*
rm -rf "$kept"
mkdir -p "$kept"
find "$tmp/new" -type f -exec mv -t "$kept" {} +
echo "fuzz_corpus: $kept: $(find "$kept" -type f | wc -l) files, $(cat "$kept"/* 2>/dev/null | wc -c) bytes"
