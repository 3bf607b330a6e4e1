#!/usr/bin/env bash
# `make serve`: start `kiln serve` on 127.0.0.1:8080 (data in ./kiln-data) and
# show a newcomer the API with curl: render a spec to .xlsx, download the
# file, make a signed link, and (as root) run code in the sandbox. The
# server then keeps running in the foreground until Ctrl-C, which stops it
# gracefully. Its access log goes to out/served/access.log.
#
# KILN_LISTEN and KILN_DATA_DIR move it elsewhere (docs/serve.md).
set -euo pipefail
cd "$(dirname "$0")/.."
KILN=${KILN:-bin/kiln}
LISTEN=${KILN_LISTEN:-127.0.0.1:8080}
DATA=${KILN_DATA_DIR:-kiln-data}
URL=http://$LISTEN
OUT=out/served
mkdir -p "$OUT"

"$KILN" serve --listen "$LISTEN" --data-dir "$DATA" > "$OUT/access.log" &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server' EXIT

for _ in $(seq 100); do
	curl -fsS "$URL/healthz" >/dev/null 2>&1 && break
	kill -0 $server 2>/dev/null || { echo "serve-demo: kiln serve did not start" >&2; exit 1; }
	sleep 0.1
done
curl -fsS "$URL/healthz" >/dev/null

# With no key configured, the first start made one for tenant "default".
KEY=$(cat "$DATA/api-key")
pretty() { /usr/bin/python3 -m json.tool; }
# show "what the reader sees" command...: print the first, run the rest
# (on stderr, so a pipe after it takes only the command's output).
show() { printf '\n$ %s\n' "$1" >&2; shift; "$@"; }

echo "== kiln serve is listening on $URL (access log: $OUT/access.log)"
echo "== its API key, made at the first start: KEY=\$(cat $DATA/api-key)"

printf '{"format": "xlsx", "filename": "sales.xlsx", "spec": %s}' \
	"$(cat samples/sales_workbook.json)" > "$OUT/render-request.json"
show "curl -X POST $URL/v1/render -H \"Authorization: Bearer \$KEY\" -H 'Content-Type: application/json' --data-binary @$OUT/render-request.json" \
	curl -sS -X POST "$URL/v1/render" -H "Authorization: Bearer $KEY" \
	-H 'Content-Type: application/json' --data-binary @"$OUT/render-request.json" \
	-o "$OUT/render-reply.json"
pretty < "$OUT/render-reply.json"
id=$(/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' < "$OUT/render-reply.json")

rm -f "$OUT/sales.xlsx"  # curl -J never overwrites
show "curl -OJ -H \"Authorization: Bearer \$KEY\" $URL/v1/files/$id/content" \
	curl -sS -OJ --output-dir "$OUT" -H "Authorization: Bearer $KEY" \
	"$URL/v1/files/$id/content" -w "HTTP %{http_code}: %{size_download} bytes saved as $OUT/%{filename_effective}\n"

show "curl -X POST $URL/v1/files/$id/link -H \"Authorization: Bearer \$KEY\" -d '{\"expires_in\": 600}'" \
	curl -sS -X POST "$URL/v1/files/$id/link" -H "Authorization: Bearer $KEY" \
	-H 'Content-Type: application/json' -d '{"expires_in": 600}' | pretty

if [ "$(id -u)" = 0 ]; then
	# Runs need root (the sandbox makes namespaces and cgroups).
	code='import csv; csv.writer(open("/mnt/data/squares.csv", "w")).writerows([i, i * i] for i in range(10)); print("done")'
	body=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"code": sys.argv[1]}))' "$code")
	show "curl -X POST $URL/v1/runs -H \"Authorization: Bearer \$KEY\" -H 'Content-Type: application/json' -d '$body'" \
		curl -sS -X POST "$URL/v1/runs" -H "Authorization: Bearer $KEY" \
		-H 'Content-Type: application/json' -d "$body" \
		| /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({k: r[k] for k in ("status", "stdout", "files") if k in r}, indent=2))'
fi
echo
echo "== $OUT/sales.xlsx is the workbook; the link above downloads it without a key for 10 minutes."
echo "== More: docs/serve.md (running it), docs/openapi.json (the API). Ctrl-C stops the server."
wait $server
