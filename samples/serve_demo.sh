#!/usr/bin/env bash
# `make serve`: start `kiln serve` (127.0.0.1:8080, data in ./kiln-data) and
# show a newcomer the API with curl: render a spec to .xlsx, download the
# file, make a signed link, render a report whose images and table are
# uploaded inputs, and (as root) run code in the sandbox. The server then
# keeps running in the foreground until Ctrl-C, which stops it gracefully.
#
# KILN_LISTEN and KILN_DATA_DIR (and every other KILN_* setting, docs/serve.md)
# reach the server as they are. A second `make serve` beside a running one
# needs both: KILN_LISTEN=127.0.0.1:8081 KILN_DATA_DIR=kiln-data-2 make serve.
#
# The server's log (its standard output) is appended to DATA_DIR/access.log,
# opened only once this server has started and so holds that directory: a
# start that fails (the address or the directory in use by another server)
# writes nothing anywhere, and the demo stops with the server's one line.
# What the demo downloads and the requests it sends go to DATA_DIR/demo/, so
# two demos on two data directories never overwrite each other's files.
set -euo pipefail
cd "$(dirname "$0")/.."
KILN=${KILN:-bin/kiln}

die() {
	echo "serve-demo: $*" >&2
	exit 1
}
command -v curl >/dev/null || die "curl is missing (make deps installs it)"
command -v jq >/dev/null || die "jq is missing (make deps installs it)"

# Its standard output and error come through one pipe: the first line is the
# "listening" event, or the line saying why it did not start. It runs in a session
# of its own, so Ctrl-C reaches only this script, whose trap stops it (SIGTERM) and
# exits 130: one way to the end, whichever process would have taken the signal
# first.
exec {srv}< <(exec setsid "$KILN" serve 2>&1)
server=$!
drain=
stop() {
	kill -TERM "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	if [ -n "$drain" ]; then wait "$drain" 2>/dev/null || true; fi
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

first= rc=0
IFS= read -r -t 60 first <&"$srv" || rc=$?
if [[ $first != '{'*'"event":"listening"'* ]]; then
	trap - EXIT
	if [ "$rc" -gt 128 ]; then
		kill -KILL "$server" 2>/dev/null || true
		die "kiln serve printed nothing in 60 s; stopped it"
	fi
	status=0
	wait "$server" || status=$?
	# kiln serve's own line (docs/serve.md, "Exit statuses") names what is in
	# use and the setting that chooses another.
	echo "serve-demo: kiln serve did not start (exit $status): ${first#kiln serve: error: }" >&2
	exit $((status ? status : 1))
fi

# The address it listens on (the real port when asked for port 0) and its
# data directory, from the event.
URL=http://$(jq -r 'if (.address | contains(":")) then "[\(.address)]" else .address end
	+ ":\(.port)"' <<<"$first")
DATA=$(jq -r .data_dir <<<"$first")
LOG=$DATA/access.log
OUT=$DATA/demo
printf '%s\n' "$first" >>"$LOG"
# The copy ignores the signals that stop the demo (Ctrl-C reaches the whole
# process group): it ends when the server's last line is in.
(
	trap '' INT TERM
	exec cat
) <&"$srv" >>"$LOG" &
drain=$!
exec {srv}<&-
mkdir -p "$OUT"

# With no key configured, the first start made one for tenant "default".
[ -r "$DATA/api-key" ] || die "no $DATA/api-key: the keys of $DATA were not made by kiln serve's first start; see docs/serve.md, Keys"
KEY=$(cat "$DATA/api-key")
AUTH="Authorization: Bearer $KEY"

# show COMMAND: print the command a reader would type (on stderr, so a pipe
# after the call takes only the reply).
show() { printf '\n$ %s\n' "$1" >&2; }
# api WHAT FILE CURL-ARGS...: one request, the reply's body into FILE. Every
# request goes through here: a failure (no connection, an HTTP error) stops
# the demo with one line saying which request failed and why.
api() {
	local what=$1 file=$2 code rc=0
	shift 2
	code=$(curl -s --fail-with-body -o "$file" -w '%{http_code}' "$@") || rc=$?
	[ "$rc" = 0 ] && return 0
	if [ "$code" = 000 ]; then
		die "$what: no reply from $URL (curl exit status $rc)"
	fi
	local why
	why=$(jq -r '.error | "\(.code): \(.message)"' "$file" 2>/dev/null || head -c 300 "$file")
	rm -f "$file" # an error's JSON is not the file asked for
	die "$what: HTTP $code: $why"
}

echo "== kiln serve is listening on $URL (its log: $LOG)"
echo "== its API key, made at the first start: KEY=\$(cat $DATA/api-key)"

jq '{format: "xlsx", filename: "sales.xlsx", spec: .}' samples/sales_workbook.json \
	>"$OUT/render-request.json"
show "curl --fail-with-body -X POST $URL/v1/render -H \"Authorization: Bearer \$KEY\" -H 'Content-Type: application/json' --data-binary @$OUT/render-request.json"
api "POST /v1/render" "$OUT/render-reply.json" -X POST "$URL/v1/render" -H "$AUTH" \
	-H 'Content-Type: application/json' --data-binary @"$OUT/render-request.json"
jq . "$OUT/render-reply.json"
id=$(jq -r .id "$OUT/render-reply.json")

show "curl -fsS -OJ -H \"Authorization: Bearer \$KEY\" $URL/v1/files/$id/content"
api "GET /v1/files/$id/content" "$OUT/sales.xlsx" -H "$AUTH" "$URL/v1/files/$id/content"
echo "saved as $OUT/sales.xlsx ($(stat -c %s "$OUT/sales.xlsx") bytes)"

show "curl --fail-with-body -X POST $URL/v1/files/$id/link -H \"Authorization: Bearer \$KEY\" -H 'Content-Type: application/json' -d '{\"expires_in\": 600}'"
api "POST /v1/files/$id/link" "$OUT/link-reply.json" -X POST "$URL/v1/files/$id/link" \
	-H "$AUTH" -H 'Content-Type: application/json' -d '{"expires_in": 600}'
jq . "$OUT/link-reply.json"

# A spec's files (images, CSV tables) are read from the server's store, never
# from a path: each one is uploaded, listed in "inputs", and named by its id.
echo
echo "== samples/business_report.json names two images and a CSV table: upload each, then render with their ids"
ids='{}'
for path in $(jq -r '[.. | objects | .path? | strings] | unique | .[]' samples/business_report.json); do
	show "curl --fail-with-body -H \"Authorization: Bearer \$KEY\" -F file=@samples/$path $URL/v1/files"
	api "POST /v1/files ($path)" "$OUT/upload-reply.json" -H "$AUTH" -F "file=@samples/$path" \
		"$URL/v1/files"
	jq -c '{id, filename, bytes, source}' "$OUT/upload-reply.json"
	ids=$(jq -c --arg path "$path" --slurpfile f "$OUT/upload-reply.json" '. + {($path): $f[0].id}' <<<"$ids")
done
jq --argjson ids "$ids" '{format: "docx", filename: "business_report.docx", inputs: [$ids[]],
	spec: walk(if type == "object" and (.path | type) == "string" then .path = $ids[.path] else . end)}' \
	samples/business_report.json >"$OUT/report-request.json"
show "curl --fail-with-body -X POST $URL/v1/render -H \"Authorization: Bearer \$KEY\" -H 'Content-Type: application/json' --data-binary @$OUT/report-request.json   # \"inputs\": the ids; each \"path\": its file's id"
api "POST /v1/render (business_report.docx)" "$OUT/report-reply.json" -X POST "$URL/v1/render" \
	-H "$AUTH" -H 'Content-Type: application/json' --data-binary @"$OUT/report-request.json"
jq -c '{id, filename, bytes, source}' "$OUT/report-reply.json"
report=$(jq -r .id "$OUT/report-reply.json")
api "GET /v1/files/$report/content" "$OUT/business_report.docx" -H "$AUTH" \
	"$URL/v1/files/$report/content"

if [ "$(id -u)" = 0 ]; then
	# Runs need root (the sandbox makes namespaces and cgroups).
	code='import csv; csv.writer(open("/mnt/data/squares.csv", "w")).writerows([i, i * i] for i in range(10)); print("done")'
	body=$(jq -cn --arg code "$code" '{code: $code}')
	show "curl --fail-with-body -X POST $URL/v1/runs -H \"Authorization: Bearer \$KEY\" -H 'Content-Type: application/json' -d '$body'"
	api "POST /v1/runs" "$OUT/run-reply.json" -X POST "$URL/v1/runs" -H "$AUTH" \
		-H 'Content-Type: application/json' -d "$body"
	jq '{status, stdout, files}' "$OUT/run-reply.json"
fi
echo
echo "== $OUT/sales.xlsx and $OUT/business_report.docx are the documents; the link above downloads sales.xlsx without a key for 10 minutes."
echo "== More: docs/serve.md (running it), docs/openapi.json (the API). Ctrl-C stops the server."
wait "$server" || true
