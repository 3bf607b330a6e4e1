#!/usr/bin/env bash
# mk/timed.sh LOG NAME COMMAND... - run COMMAND, then add "NAME SECONDS" to LOG;
#     the first step's LOG is started afresh by --start.
# mk/timed.sh --start LOG - begin a new LOG, noting the time.
# mk/timed.sh --report LOG - print each step's wall time and the whole run's.
# `make check` times its parts with it, so the suite's cost is in its own output
# (and a part that grows shows in every run) rather than measured by hand.
set -u
now() { date +%s.%N; }
case "$1" in
--start)
	mkdir -p "$(dirname "$2")"
	echo "start $(now)" >"$2"
	;;
--report)
	awk -v end="$(now)" '
		$1 == "start" { start = $2; next }
		{ printf "  %-24s %7.1f s\n", $1, $2 }
		END { printf "  %-24s %7.1f s (%d min %d s)\n", "make check, in all", end - start,
			      int((end - start) / 60), int(end - start) % 60 }' "$2"
	;;
*)
	log=$1 name=$2
	shift 2
	t0=$(now)
	"$@"
	rc=$?
	t1=$(now)
	echo "$name $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" >>"$log"
	[ "$rc" -eq 0 ] || echo "timed.sh: $name failed (exit $rc) after $(tail -n 1 "$log" | cut -d' ' -f2) s" >&2
	exit "$rc"
	;;
esac
