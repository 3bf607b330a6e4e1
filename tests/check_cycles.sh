#!/usr/bin/env bash
# tests/check_cycles.sh [--self-test] [BUILD_DIR] - no two C files of Kiln call each
# other, directly or through others: the files form layers (the internal headers, such
# as artifacts/spec/spec_internal.h, list them). Reads the objects of a build made
# before (BUILD_DIR, build/ by default; every object under it but the tests'), builds
# nothing, and runs tests/check_cycles.py over them, which names each cycle's files
# and the symbols that make it; exit 1 when there is one. It first checks itself
# (--self-test: that and nothing else) on a few tiny objects compiled here, one set
# with a cycle, which must fail naming exactly its files, and one without, which must
# pass; so a broken check cannot pass silently. `make check` runs it after the build.
set -u
cd "$(dirname "$0")/.." || exit 1
cc=${CC:-cc}
python=${PYTHON:-/usr/bin/python3}
check=tests/check_cycles.py

self_test_only=0
if [ "${1:-}" = --self-test ]; then
	self_test_only=1
	shift
fi
build=${1:-build}
build=${build%/}

self_test() {
	local tmp out rc
	tmp=$(mktemp -d) || return 1
	# p -> q -> r -> p is a cycle; s calls into it and t -> u hangs below it:
	# neither is part of it.
	printf 'void q(void);\nvoid p(void);\nvoid p(void) { q(); }\n' >"$tmp/p.c"
	printf 'void r(void);\nvoid q(void);\nvoid q(void) { r(); }\n' >"$tmp/q.c"
	printf 'void p(void);\nvoid r(void);\nvoid r(void) { p(); }\n' >"$tmp/r.c"
	printf 'void p(void);\nvoid t(void);\nvoid s(void);\nvoid s(void) { p(); t(); }\n' >"$tmp/s.c"
	printf 'void u(void);\nvoid t(void);\nvoid t(void) { u(); }\n' >"$tmp/t.c"
	printf 'void u(void);\nvoid u(void) {}\n' >"$tmp/u.c"
	for f in p q r s t u; do
		if ! "$cc" -std=c11 -O0 -Wall -Werror -c -o "$tmp/$f.o" "$tmp/$f.c" 2>"$tmp/err"; then
			echo "check_cycles: self-test: $f.c does not compile:"
			head -n 5 "$tmp/err"
			rm -rf "$tmp"
			return 1
		fi
	done
	out=$("$python" "$check" --relative-to "$tmp" "$tmp"/{p,q,r,s,t,u}.o)
	rc=$?
	if [ "$rc" -ne 1 ] ||
		[ "$(printf '%s\n' "$out" | grep -c '^check_cycles: a cycle')" -ne 1 ] ||
		! printf '%s\n' "$out" | grep -qx 'check_cycles: a cycle of 3 files: p.o q.o r.o'; then
		echo "check_cycles: self-test: the cycle p.o -> q.o -> r.o -> p.o was not reported"
		echo "as the one cycle (exit $rc, expected 1); the check said:"
		printf '%s\n' "${out:-(nothing)}"
		rm -rf "$tmp"
		return 1
	fi
	out=$("$python" "$check" --relative-to "$tmp" "$tmp"/{s,t,u}.o)
	rc=$?
	if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
		echo "check_cycles: self-test: s.o -> t.o -> u.o, which has no cycle, failed"
		echo "(exit $rc, expected 0); the check said:"
		printf '%s\n' "${out:-(nothing)}"
		rm -rf "$tmp"
		return 1
	fi
	rm -rf "$tmp"
}

self_test || exit 1
[ "$self_test_only" -eq 1 ] && exit 0

if [ ! -d "$build" ]; then
	echo "check_cycles: no build directory $build (make first; this check builds nothing)"
	exit 1
fi
# An object whose source is gone (a file moved or removed since that build) is
# linked into nothing, and would only show the old file's calls: left out, and said.
objects=()
while IFS= read -r -d '' o; do
	src=${o#"$build"/}
	src=${src%.o}.c
	if [ -f "$src" ]; then
		objects+=("$o")
	else
		echo "check_cycles: $o left out: its source $src is gone (an object of an old build)" >&2
	fi
done < <(find "$build" -path "$build/tests" -prune -o -name '*.o' -print0)
if [ "${#objects[@]}" -eq 0 ]; then
	echo "check_cycles: no objects under $build/ (make first; this check builds nothing)"
	exit 1
fi
"$python" "$check" --relative-to "$build" "${objects[@]}"
