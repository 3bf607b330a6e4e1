#!/usr/bin/env bash
# mk/run_parallel.sh JOBS LOGDIR NAME=COMMAND... - run each COMMAND (through bash),
# JOBS at a time, its output in LOGDIR/NAME.log; print one line per command as it
# ends, then the log's last 40 lines of each that failed. Exit 1 when any failed.
# The Makefile runs the unit tests and the fuzz-check targets with it, so two cores
# work at once instead of one.
set -u
jobs=$1 logdir=$2
shift 2
mkdir -p "$logdir"
failed=()
running=0
declare -A names
finish() {
	local pid rc
	wait -n -p pid
	rc=$?
	running=$((running - 1))
	local name=${names[$pid]}
	if [ "$rc" -eq 0 ]; then
		echo "ok   $name"
	else
		echo "FAIL $name (exit $rc; log: $logdir/$name.log)"
		failed+=("$name")
	fi
}
for item in "$@"; do
	name=${item%%=*} cmd=${item#*=}
	[ "$running" -ge "$jobs" ] && finish
	bash -c "$cmd" >"$logdir/$name.log" 2>&1 &
	names[$!]=$name
	running=$((running + 1))
done
while [ "$running" -gt 0 ]; do finish; done
for name in "${failed[@]}"; do
	echo "== $name: the end of $logdir/$name.log"
	tail -n 40 "$logdir/$name.log"
done
[ "${#failed[@]}" -eq 0 ]
