#!/usr/bin/env bash
# tests/check_format.sh - every tracked C file (git ls-files '*.c' '*.h': all of
# them Kiln's own, nothing generated or third-party) is as clang-format leaves it
# under .clang-format. Changes nothing; exit 1 lists each file that differs, with
# the first lines of what clang-format would change, and says `make format`
# rewrites them. `make check` runs it (`make format-check`).
#
# The style is clang-format 14's (Debian 12's `clang-format`, in `make deps`):
# another major version formats some constructs differently, so the check
# refuses to run with one rather than fail on lines nobody wrote. $CLANG_FORMAT
# names the binary (default clang-format).
set -u
cd "$(dirname "$0")/.." || exit 1
cf=${CLANG_FORMAT:-clang-format}
if ! version=$("$cf" --version 2>/dev/null); then
	echo "check_format: $cf not found (make deps installs Debian's clang-format)"
	exit 1
fi
case "$version" in
*"clang-format version 14."*) ;;
*)
	echo "check_format: .clang-format is tuned for clang-format 14, and $cf is: $version"
	echo "check_format: set CLANG_FORMAT to a clang-format 14 (Debian 12's clang-format)"
	exit 1
	;;
esac
mapfile -t files < <(git ls-files '*.c' '*.h')
# --dry-run --Werror: one "FILE:LINE:COL: error: code should be clang-formatted"
# per place that differs, and a non-zero exit; nothing is written.
out=$("$cf" --style=file --dry-run --Werror "${files[@]}" 2>&1)
rc=$?
[ "$rc" -eq 0 ] && exit 0
differ=$(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$out" | uniq)
if [ -z "$differ" ]; then
	echo "check_format: $cf failed (exit $rc):"
	head -n 20 <<<"$out"
	exit 1
fi
n=0
while IFS= read -r f; do
	lines=$("$cf" --style=file "$f" | diff "$f" - | grep -c '^<')
	echo "check_format: $f differs from clang-format ($lines lines would change)"
	n=$((n + 1))
done <<<"$differ"
echo "check_format: $n of ${#files[@]} files differ; \`make format\` rewrites them in place (then review git diff)"
echo "check_format: the first differences:"
"$cf" --style=file "$(head -n 1 <<<"$differ")" | diff -u "$(head -n 1 <<<"$differ")" - | head -n 20
exit 1
