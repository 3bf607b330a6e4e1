#!/usr/bin/env bash
# tests/check_banned.sh - every C file of Kiln's includes common/banned.h after its
# other includes (but the two that must name a banned function, common/banned.h says
# which), and the header stops a call to each function it bans from compiling.
# `make check` runs it with the build; exit 1 names what is wrong.
set -u
cd "$(dirname "$0")/.."
cc=${CC:-cc}
status=0
exempt="common/thread_time.c tests/unit/test_thread_time.c"
while IFS= read -r f; do
	case " $exempt " in *" $f "*) continue ;; esac
	last=$(grep -E '^#include' "$f" | tail -n 1)
	case "$last" in
	*'common/banned.h"' | '#include "banned.h"') ;;
	*)
		echo "check_banned: $f: common/banned.h is not its last #include (last: ${last:-none})"
		status=1
		;;
	esac
done < <(git ls-files 'cli/*.c' 'common/*.c' 'exec/*.c' 'artifacts/*.c' 'service/*.c' \
	'fuzz/*.c' 'tests/unit/*.c' 'bench/*.c')

# Each banned call, after the header, must fail to compile naming the function;
# the same file with a harmless expression instead must compile (so a failure is
# the header's doing, not the test file's).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
compiles() {
	cat >"$tmp/t.c" <<C
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "common/banned.h"
void f(va_list ap);
void f(va_list ap)
{
    char b[8] = "";
    time_t t = 0;
    struct tm tm;
    (void)ap; (void)b; (void)t; (void)tm;
    (void)$1;
}
C
	"$cc" -std=c11 -D_GNU_SOURCE -Wall -Werror -I. -c -o "$tmp/t.o" "$tmp/t.c" 2>"$tmp/err"
}
if ! compiles 'strlen(b)'; then
	echo "check_banned: the test file does not compile without a banned call:"
	head -n 5 "$tmp/err"
	exit 1
fi
for call in 'strcpy(b, "x")' 'strcat(b, "x")' 'strncpy(b, "x", 1)' 'strncat(b, "x", 1)' \
	'sprintf(b, "%d", 1)' 'vsprintf(b, "x", ap)' 'gets(b)' 'strtok(b, ",")' \
	'gmtime(&t)' 'localtime(&t)' 'ctime(&t)' 'asctime(gmtime_r(&t, &tm))'; do
	name=${call%%(*}
	if compiles "$call"; then
		echo "check_banned: a call of $name compiles after common/banned.h"
		status=1
	elif ! grep -q "sorry_${name}_is_a_banned_function" "$tmp/err"; then
		echo "check_banned: a call of $name fails to compile, but not naming it:"
		head -n 5 "$tmp/err"
		status=1
	fi
done
exit $status
