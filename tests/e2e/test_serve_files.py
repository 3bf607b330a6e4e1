"""`kiln serve`: the file API (issue 7) - upload, list, metadata, delete, download (ranges,
conditional requests, HEAD, Content-Disposition), signed links, auth, tenants, errors.

One server per module (default settings, tenants alpha/beta/gamma); tests needing other
settings (--max-upload, --ttl, --public-url) start their own through serve_factory.
Every response is checked against docs/openapi.json (serve_helpers.check_response).
"""
import datetime as dt
import email.utils
import hashlib
import json
import os
import re
import time
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest

from serve_helpers import (DEFAULT_MAX_UPLOAD, ID_RE, OPENAPI_PATH, content_files, deref,
                           multipart, openapi, raw_exchange, serve_factory, server,
                           validate_component)  # noqa: F401 (fixtures)

from jsonschema import Draft202012Validator

DATA = bytes((i * 7 + (i >> 8)) & 0xFF for i in range(200_000))       # 200 kB, not periodic in 256
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def parse_time(s):
    return dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def blob(server):
    """A 200 kB file of alpha's, uploaded once."""
    f = server.upload("blob.bin", DATA, media_type="application/octet-stream")
    return f


# =========================================================================== the document itself

def test_openapi_document():
    doc = openapi()
    assert doc["openapi"] == "3.1.0"
    for name, schema in doc["components"]["schemas"].items():
        Draft202012Validator.check_schema(schema)
    # every $ref points somewhere
    refs = re.findall(r'"\$ref": "([^"]+)"', OPENAPI_PATH.read_text("utf-8"))
    for ref in set(refs):
        deref({"$ref": ref})
    expected = {("/v1/files", "post"), ("/v1/files", "get"), ("/v1/files", "head"),
                ("/v1/files/{id}", "get"), ("/v1/files/{id}", "head"),
                ("/v1/files/{id}", "delete"), ("/v1/files/{id}/content", "get"),
                ("/v1/files/{id}/content", "head"), ("/v1/files/{id}/link", "post"),
                ("/v1/render", "post"), ("/v1/runs", "post"),
                ("/v1/sessions", "post"), ("/v1/sessions", "get"), ("/v1/sessions/{id}", "get"),
                ("/v1/sessions/{id}", "delete"), ("/v1/sessions/{id}/cells", "post"),
                ("/v1/sessions/{id}/interrupt", "post"), ("/v1/sessions/{id}/files", "post"),
                ("/v1/sessions/{id}/files", "get"), ("/v1/batches", "post"), ("/v1/batches", "get"),
                ("/v1/batches/{id}", "get"), ("/v1/batches/{id}/results", "get"),
                ("/v1/batches/{id}/cancel", "post"), ("/healthz", "get"), ("/healthz", "head"),
                ("/metrics", "get"), ("/metrics", "head"), ("/mcp", "post"), ("/mcp", "get"),
                ("/mcp", "delete"), ("/mcp", "options")}
    have = {(p, m) for p, ops in doc["paths"].items() for m in ops if m != "parameters"}
    assert have == expected
    assert doc["components"]["schemas"]["File"]["additionalProperties"] is False
    assert doc["components"]["schemas"]["Error"]["additionalProperties"] is False
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


# =========================================================================== start, health

def test_first_line_is_listening(server):
    ev = json.loads(server.first_line)
    assert ev.get("event") == "listening" and ev.get("port") == server.port, server.first_line


def test_healthz(server):
    r = server.request("GET", "/healthz", key=None)
    assert r.status == 200 and r.json == {"status": "ok"}, r
    # a key is not needed, and a wrong one does not matter
    assert server.request("GET", "/healthz", key="nope").status == 200


# =========================================================================== upload

def check_file(f, name, data, media_type, ttl=24 * 3600):
    assert ID_RE.match(f["id"]), f
    assert f["filename"] == name
    assert f["bytes"] == len(data)
    assert f["sha256"] == hashlib.sha256(data).hexdigest()
    assert f["media_type"] == media_type
    assert f["source"] == "input", f                 # every file checked here is an upload
    created, expires = parse_time(f["created_at"]), parse_time(f["expires_at"])
    assert abs((dt.datetime.now(dt.timezone.utc) - created).total_seconds()) < 120
    assert (expires - created).total_seconds() == ttl


def test_upload_raw_with_filename_query(server):
    data = b"region,revenue\nWest,10\n"
    r = server.request("POST", "/v1/files?filename=" + quote("sales data.csv"), body=data,
                       headers={"Content-Type": "text/csv"})
    assert r.status == 201, r
    check_file(r.json, "sales data.csv", data, "text/csv")
    assert r.getheader("Location") == "/v1/files/" + r.json["id"]
    assert r.getheader("Content-Type").split(";")[0] == "application/json"
    # the body is what was sent
    assert server.download(r.json["id"]) == data


def test_upload_raw_content_disposition(server):
    data = b"\x89PNG\r\n\x1a\n" + b"\0" * 100
    r = server.request("POST", "/v1/files", body=data,
                       headers={"Content-Disposition": 'attachment; filename="logo.png"',
                                "Content-Type": "image/png"})
    assert r.status == 201, r
    check_file(r.json, "logo.png", data, "image/png")


def test_upload_raw_media_type_guessed_from_extension(server):
    r = server.request("POST", "/v1/files?filename=report.xlsx", body=b"PK\x03\x04 not really")
    assert r.status == 201, r
    assert r.json["media_type"] == XLSX
    r = server.request("POST", "/v1/files?filename=notes.unknownext", body=b"x")
    assert r.status == 201, r
    assert r.json["media_type"] == "application/octet-stream"


def test_upload_multipart(server):
    data = b"a,b\n1,2\n" * 1000
    body, ctype = multipart([("comment", None, None, b"ignored"),
                             ("file", "data.csv", "text/csv", data)])
    r = server.request("POST", "/v1/files", body=body, headers={"Content-Type": ctype})
    assert r.status == 201, r
    check_file(r.json, "data.csv", data, "text/csv")
    assert r.getheader("Location") == "/v1/files/" + r.json["id"]
    assert server.download(r.json["id"]) == data


def test_upload_multipart_type_guessed(server):
    data = os.urandom(5000)
    body, ctype = multipart([("file", "Résumé.pdf", None, data)])
    r = server.request("POST", "/v1/files", body=body, headers={"Content-Type": ctype})
    assert r.status == 201, r
    check_file(r.json, "Résumé.pdf", data, "application/pdf")


def test_upload_with_curl(server, tmp_path):
    """curl -F file=@... as the README shows it."""
    import subprocess
    p = tmp_path / "curl upload.csv"
    p.write_bytes(b"x,y\n1,2\n")
    proc = subprocess.run(["curl", "-sS", "-i", "-H", "Authorization: Bearer KEY1",
                           "-F", "file=@%s;type=text/csv" % p, "http://%s/v1/files" % server.host],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr
    head, _, body = proc.stdout.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 201"), proc.stdout[:500]
    f = json.loads(body)
    validate_component(f, "File")
    assert f["filename"] == "curl upload.csv" and f["bytes"] == 8


def test_upload_multipart_without_file_part_is_400(server):
    body, ctype = multipart([("other", "x.csv", "text/csv", b"1")])
    r = server.request("POST", "/v1/files", body=body, headers={"Content-Type": ctype})
    assert r.status == 400 and r.error_code == "invalid_request", r


def test_upload_without_filename_is_400(server):
    r = server.request("POST", "/v1/files", body=b"data", headers={"Content-Type": "text/plain"})
    assert r.status == 400 and r.error_code == "invalid_request", r


def test_upload_empty_file(server):
    r = server.request("POST", "/v1/files?filename=empty.txt", body=b"")
    assert r.status == 201, r
    check_file(r.json, "empty.txt", b"", "text/plain")
    assert server.download(r.json["id"]) == b""


# =========================================================================== the ceiling

def test_upload_at_the_ceiling_and_one_byte_over(server):
    at = b"\xab" * DEFAULT_MAX_UPLOAD
    r = server.request("POST", "/v1/files?filename=big.bin", body=at)
    assert r.status == 201, r
    assert r.json["bytes"] == DEFAULT_MAX_UPLOAD
    assert r.json["sha256"] == hashlib.sha256(at).hexdigest()
    before = server.request("GET", "/v1/files?limit=1").json["total"]
    r = server.request("POST", "/v1/files?filename=big.bin", body=at + b"\xab")
    assert r.status == 413 and r.error_code == "too_large", r
    assert r.json["error"]["details"]["limit"] == DEFAULT_MAX_UPLOAD
    assert server.request("GET", "/v1/files?limit=1").json["total"] == before
    # delete the 30 MiB file: later listings stay small
    assert server.request("DELETE", "/v1/files/" + server.request(
        "GET", "/v1/files?limit=1").json["files"][0]["id"]).status == 204


@pytest.fixture(scope="module")
def small_server(serve_factory):
    """--max-upload 1000 --max-request 2000."""
    return serve_factory("--max-upload", "1000", "--max-request", "2000", name="small")


def test_small_ceiling_content_length(small_server):
    s = small_server
    assert s.request("POST", "/v1/files?filename=a.bin", body=b"a" * 1000).status == 201
    files_before = content_files(s.data_dir)
    r = s.request("POST", "/v1/files?filename=a.bin", body=b"a" * 1001)
    assert r.status == 413 and r.error_code == "too_large", r
    assert r.json["error"]["details"]["limit"] == 1000
    assert content_files(s.data_dir) == files_before


def test_small_ceiling_chunked(small_server):
    s = small_server
    r = s.request("POST", "/v1/files?filename=c.bin", body=b"c" * 1000, chunked=True)
    assert r.status == 201 and r.json["bytes"] == 1000, r
    files_before = content_files(s.data_dir)
    total = s.request("GET", "/v1/files").json["total"]
    r = s.request("POST", "/v1/files?filename=c.bin", body=b"c" * 1001, chunked=True)
    assert r.status == 413 and r.error_code == "too_large", r
    assert r.json["error"]["details"]["limit"] == 1000
    assert s.request("GET", "/v1/files").json["total"] == total
    assert content_files(s.data_dir) == files_before


def test_content_length_over_refused_before_reading(small_server):
    """A Content-Length over the limit is answered 413 without waiting for the body."""
    t0 = time.monotonic()
    reply = raw_exchange(small_server.port,
                         b"POST /v1/files?filename=x.bin HTTP/1.1\r\nHost: x\r\n"
                         b"Authorization: Bearer KEY1\r\nContent-Length: 50000000\r\n\r\n",
                         timeout=10, shutdown=False)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:300]
    assert time.monotonic() - t0 < 5


def test_json_body_over_max_request(small_server):
    spec = {"format": "xlsx", "spec": {"version": 1, "sheets": [{"name": "S", "rows": [["x" * 3000]]}]}}
    r = small_server.request("POST", "/v1/render", body=spec)
    assert r.status == 413 and r.error_code == "too_large", r
    assert r.json["error"]["details"]["limit"] == 2000


# =========================================================================== file names

# (what, the name as a query value, as a Content-Disposition header, as a multipart filename
# (bytes), the reason the message gives); None: not tried that way. A Content-Disposition whose
# filename* decodes to a NUL or to bytes that are not UTF-8 is refused as malformed instead.
NAME_CASES = [
    ("nul", "a%00b", "attachment; filename*=UTF-8''a%00b", b"a\x00b", "NUL"),
    ("control", "a%07b", "attachment; filename*=UTF-8''a%07b", b"a\x07b", "control character"),
    ("newline", "a%0D%0Ab", "attachment; filename*=UTF-8''a%0D%0Ab", None, "control character"),
    ("dot", ".", 'attachment; filename="."', b".", "'.' or '..'"),
    ("dotdot", "..", 'attachment; filename=".."', b"..", "'.' or '..'"),
    ("slash", "a%2Fb", 'attachment; filename="a/b"', b"a/b", "'/'"),
    ("long", "a" * 256, 'attachment; filename="%s"' % ("a" * 256), b"a" * 256, "255 bytes"),
    ("utf8", "a%FFb", "attachment; filename*=UTF-8''a%FFb", b"a\xffb", "UTF-8"),
    ("utf8-raw", None, 'attachment; filename="a\xffb"', None, "UTF-8"),
    ("empty", "", None, b"", "empty"),
]


@pytest.mark.parametrize("case", NAME_CASES, ids=[c[0] for c in NAME_CASES])
def test_upload_bad_names(server, case):
    """One file-name rule for ?filename=, Content-Disposition and the multipart part: 400
    invalid_request whose details say where the name came from; nothing is stored."""
    what, query, cd, part, reason = case
    total = server.request("GET", "/v1/files?limit=1").json["total"]
    tries = []
    if query is not None:
        tries.append(("/v1/files?filename=" + query, b"data", {}, {"parameter": "filename"},
                      reason))
    if cd is not None:
        malformed = "filename*" in cd and what in ("nul", "utf8")
        tries.append(("/v1/files", b"data", {"Content-Disposition": cd},
                      {"header": "Content-Disposition"}, "malformed" if malformed else reason))
    if part is not None:
        body, ctype = multipart([("file", "PLACEHOLDER", "text/plain", b"data")])
        body = body.replace(b'filename="PLACEHOLDER"', b'filename="' + part + b'"')
        # libmicrohttpd's reader of part headers stops at a NUL: no filename at all then
        tries.append(("/v1/files", body, {"Content-Type": ctype}, {"part": "file"},
                      "no filename" if what == "nul" else reason))
    for path, body, headers, details, why in tries:
        r = server.request("POST", path, body=body, headers=headers)
        assert r.status == 400 and r.error_code == "invalid_request", (what, details, r)
        assert r.json["error"]["details"] == details, (what, r)
        assert why in r.json["error"]["message"], (what, details, r)
    assert server.request("GET", "/v1/files?limit=1").json["total"] == total


def test_upload_name_at_255_bytes(server):
    name = "é" * 125 + "a.txt"                       # 250 + 5 bytes
    assert len(name.encode()) == 255
    body, ctype = multipart([("file", name, "text/plain", b"x")])
    r = server.request("POST", "/v1/files", body=body, headers={"Content-Type": ctype})
    assert r.status == 201 and r.json["filename"] == name, r


# =========================================================================== multipart edges

def test_multipart_truncated_is_400(server):
    """A body that ends before the closing boundary is a cut file: 400, nothing stored."""
    total = server.request("GET", "/v1/files?limit=1").json["total"]
    files_before = content_files(server.data_dir)
    body, ctype = multipart([("file", "cut.csv", "text/csv", b"a,b\n1,2\n" * 100)])
    for cut in (body[:len(body) // 2], body[:body.rindex(b"--kiln")], body[:-len(b"--\r\n")]):
        r = server.request("POST", "/v1/files", body=cut, headers={"Content-Type": ctype})
        assert r.status == 400 and r.error_code == "invalid_request", (len(cut), r)
        assert "closing boundary" in r.json["error"]["message"], r
    assert server.request("GET", "/v1/files?limit=1").json["total"] == total
    assert content_files(server.data_dir) == files_before


def test_multipart_later_file_parts_ignored(server):
    first, second = b"first part\n" * 50, b"second part\n" * 70
    body, ctype = multipart([("file", "one.txt", "text/plain", first),
                             ("file", "two.txt", "text/plain", second)])
    r = server.request("POST", "/v1/files", body=body, headers={"Content-Type": ctype})
    assert r.status == 201 and r.json["filename"] == "one.txt", r
    assert server.download(r.json["id"]) == first
    # an empty first part stays the file: the second's bytes are not stored under its name
    body, ctype = multipart([("file", "empty.txt", "text/plain", b""),
                             ("file", "two.txt", "text/plain", second)])
    r = server.request("POST", "/v1/files", body=body, headers={"Content-Type": ctype})
    assert r.status == 201 and r.json["filename"] == "empty.txt" and r.json["bytes"] == 0, r
    assert server.download(r.json["id"]) == b""


def test_multipart_part_data_arriving_late(server):
    """The file part's headers in one packet, its data later: the data is the part's own
    (the first call for a part may carry no data; telling a later part apart must not
    take the late data for one)."""
    import socket
    data = b"late data\n" * 300
    body, ctype = multipart([("file", "late.txt", "text/plain", data)])
    split = body.index(b"\r\n\r\n") + 4
    head = ("POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY1\r\n"
            "Content-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
            % (ctype, len(body))).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(head + body[:split])
        time.sleep(0.3)
        sock.sendall(body[split:])
        reply = b""
        while True:
            b = sock.recv(65536)
            if not b:
                break
            reply += b
    assert reply.startswith(b"HTTP/1.1 201"), reply[:500]
    f = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert f["filename"] == "late.txt" and f["bytes"] == len(data), f
    assert server.download(f["id"]) == data


# =========================================================================== a 500

def test_missing_body_is_500(server):
    """A stored body gone from DATA/content behind the server's back: 500 internal with a
    generic message; the detail is in the log's "error" event for the request."""
    f = server.upload("doomed.txt", b"soon gone")
    os.unlink(os.path.join(server.data_dir, "content", f["id"]))
    r = server.request("GET", "/v1/files/%s/content" % f["id"])
    assert r.status == 500 and r.error_code == "internal", r
    assert f["id"] not in r.json["error"]["message"] and "content" not in r.json["error"]["message"]
    rid = r.getheader("X-Request-Id")
    events = [e for e in server.log(wait_for=rid) if e.get("event") == "error"
              and e.get("request_id") == rid]
    assert len(events) == 1 and events[0].get("message"), server.lines[-5:]
    # a render naming it as an input fails the same way
    spec = {"version": 1, "sheets": [{"name": "S", "data": {"path": f["id"], "format": "csv"}}]}
    r = server.request("POST", "/v1/render", body={"format": "xlsx", "spec": spec, "inputs": [f["id"]]})
    assert r.status == 500 and r.error_code == "internal", r
    rid = r.getheader("X-Request-Id")
    events = [e for e in server.log(wait_for=rid) if e.get("event") == "error"
              and e.get("request_id") == rid]
    assert len(events) == 1 and events[0].get("message"), server.lines[-5:]


# =========================================================================== the data directory

def test_database_files_private(server):
    """kiln.db and its -wal and -shm hold every tenant's file names: 0600, like the bodies."""
    server.upload("mode.txt", b"x")                  # the WAL exists once something was written
    for name in ("kiln.db", "kiln.db-wal", "kiln.db-shm"):
        p = os.path.join(server.data_dir, name)
        assert os.path.exists(p), name
        assert os.stat(p).st_mode & 0o777 == 0o600, (name, oct(os.stat(p).st_mode))


# =========================================================================== list

def test_list_pagination(server):
    ids = [server.upload("page-%d.txt" % i, b"%d" % i, key="KEY3")["id"] for i in range(5)]
    newest_first = list(reversed(ids))
    r = server.request("GET", "/v1/files", key="KEY3")
    assert r.status == 200, r
    assert r.json["total"] == 5 and r.json["limit"] == 100 and r.json["offset"] == 0
    assert [f["id"] for f in r.json["files"]] == newest_first
    got = []
    for offset in range(0, 6, 2):
        r = server.request("GET", "/v1/files?limit=2&offset=%d&unknown=1" % offset, key="KEY3")
        assert r.status == 200, r
        assert r.json["limit"] == 2 and r.json["offset"] == offset and r.json["total"] == 5
        got += [f["id"] for f in r.json["files"]]
    assert got == newest_first
    r = server.request("GET", "/v1/files?offset=10", key="KEY3")
    assert r.status == 200 and r.json["files"] == [] and r.json["total"] == 5, r
    r = server.request("GET", "/v1/files?limit=1000", key="KEY3")
    assert r.status == 200 and r.json["limit"] == 1000


@pytest.mark.parametrize("query", ["limit=0", "limit=1001", "limit=abc", "limit=-1", "limit=",
                                   "offset=-1", "offset=x", "limit=1.5"])
def test_list_bad_params(server, query):
    r = server.request("GET", "/v1/files?" + query)
    assert r.status == 400 and r.error_code == "invalid_request", r


# =========================================================================== metadata, delete

def test_get_and_delete(server):
    f = server.upload("gone-soon.txt", b"bye")
    r = server.request("GET", "/v1/files/" + f["id"])
    assert r.status == 200 and r.json == f, r
    r = server.request("DELETE", "/v1/files/" + f["id"])
    assert r.status == 204 and r.body == b"", r
    for method, path in [("GET", ""), ("DELETE", ""), ("GET", "/content"), ("POST", "/link")]:
        r = server.request(method, "/v1/files/" + f["id"] + path)
        assert r.status == 404 and r.error_code == "not_found", (method, path, r)
    assert f["id"] not in content_files(server.data_dir)


# =========================================================================== download

def test_download_headers(server, blob):
    r = server.request("GET", "/v1/files/%s/content" % blob["id"])
    assert r.status == 200, r
    assert r.body == DATA
    assert r.getheader("Content-Type") == "application/octet-stream"
    assert r.getheader("Content-Length") == str(len(DATA))
    assert r.getheader("ETag") == '"%s"' % hashlib.sha256(DATA).hexdigest()
    assert r.getheader("Accept-Ranges") == "bytes"
    assert r.getheader("X-Content-Type-Options") == "nosniff"
    assert r.getheader("Cache-Control") == "private, no-cache"
    assert r.getheader("Content-Disposition") == 'attachment; filename="blob.bin"'
    lm = email.utils.parsedate_to_datetime(r.getheader("Last-Modified"))
    assert abs((lm - parse_time(blob["created_at"])).total_seconds()) <= 1


def test_head(server, blob):
    get = server.request("GET", "/v1/files/%s/content" % blob["id"])
    head = server.request("HEAD", "/v1/files/%s/content" % blob["id"])
    assert head.status == 200 and head.body == b"", head
    for h in ("Content-Type", "Content-Length", "ETag", "Last-Modified", "Accept-Ranges",
              "Content-Disposition", "X-Content-Type-Options", "Cache-Control"):
        assert head.getheader(h) == get.getheader(h), h
    # on the wire: nothing after the headers
    reply = raw_exchange(server.port, ("HEAD /v1/files/%s/content HTTP/1.1\r\nHost: x\r\n"
                                       "Authorization: Bearer KEY1\r\nConnection: close\r\n\r\n"
                                       % blob["id"]).encode())
    assert reply.startswith(b"HTTP/1.1 200"), reply[:300]
    assert reply.endswith(b"\r\n\r\n") and reply.count(b"\r\n\r\n") == 1, reply[-200:]


def test_ranges_reassemble(server, blob):
    path = "/v1/files/%s/content" % blob["id"]
    size = len(DATA)
    cuts = [0, 1, 1000, 65536, 65537, 150000, size - 1000]
    parts = []
    for a, b in zip(cuts, cuts[1:]):
        r = server.request("GET", path, headers={"Range": "bytes=%d-%d" % (a, b - 1)})
        assert r.status == 206, r
        assert r.getheader("Content-Range") == "bytes %d-%d/%d" % (a, b - 1, size)
        assert r.getheader("Content-Length") == str(b - a)
        parts.append(r.body)
    r = server.request("GET", path, headers={"Range": "bytes=-1000"})          # suffix
    assert r.status == 206 and r.getheader("Content-Range") == "bytes %d-%d/%d" % (size - 1000, size - 1, size), r
    parts.append(r.body)
    assert b"".join(parts) == DATA
    r = server.request("GET", path, headers={"Range": "bytes=%d-" % (size - 10)})  # open
    assert r.status == 206 and r.body == DATA[-10:], r
    assert r.getheader("Content-Range") == "bytes %d-%d/%d" % (size - 10, size - 1, size)
    r = server.request("GET", path, headers={"Range": "bytes=100-%d" % (size * 2)})  # end clamped
    assert r.status == 206 and r.body == DATA[100:], r
    r = server.request("GET", path, headers={"Range": "bytes=-%d" % (size * 2)})   # suffix longer than file
    assert r.status == 206 and r.body == DATA, r


def test_ranges_with_curl(server, blob, tmp_path):
    import subprocess
    path = "http://%s/v1/files/%s/content" % (server.host, blob["id"])
    pieces = []
    for rng in ("0-99999", "100000-"):
        out = tmp_path / ("p" + rng)
        proc = subprocess.run(["curl", "-sS", "-f", "-H", "Authorization: Bearer KEY1", "-r", rng,
                               "-o", str(out), path], stderr=subprocess.PIPE, timeout=60)
        assert proc.returncode == 0, proc.stderr
        pieces.append(out.read_bytes())
    assert b"".join(pieces) == DATA


def test_multiple_ranges_served_whole(server, blob):
    r = server.request("GET", "/v1/files/%s/content" % blob["id"], headers={"Range": "bytes=0-1,5-6"})
    assert r.status == 200 and r.body == DATA, r


@pytest.mark.parametrize("rng", ["bytes=200000-", "bytes=300000-300010", "bytes=-0"])
def test_range_unsatisfiable(server, blob, rng):
    r = server.request("GET", "/v1/files/%s/content" % blob["id"], headers={"Range": rng})
    assert r.status == 416, r
    assert r.getheader("Content-Range") == "bytes */%d" % len(DATA)
    assert r.json["error"]["code"], r


def test_if_none_match(server, blob):
    path = "/v1/files/%s/content" % blob["id"]
    etag = '"%s"' % blob["sha256"]
    for inm in (etag, "*", '"0000", %s' % etag, "W/" + etag, '"a", W/%s, "b"' % etag):
        r = server.request("GET", path, headers={"If-None-Match": inm})
        assert r.status == 304 and r.body == b"", (inm, r)
        assert r.getheader("ETag") == etag
        # RFC 9110 8.6: a 304 may only carry the 200's Content-Length
        assert r.getheader("Content-Length") in (None, str(len(DATA))), r
    r = server.request("HEAD", path, headers={"If-None-Match": etag})
    assert r.status == 304, r
    r = server.request("GET", path, headers={"If-None-Match": '"%s"' % ("0" * 64)})
    assert r.status == 200 and r.body == DATA, r


def test_if_range(server, blob):
    path = "/v1/files/%s/content" % blob["id"]
    etag = '"%s"' % blob["sha256"]
    r = server.request("GET", path, headers={"Range": "bytes=0-9", "If-Range": etag})
    assert r.status == 206 and r.body == DATA[:10], r
    r = server.request("GET", path, headers={"Range": "bytes=0-9", "If-Range": '"%s"' % ("1" * 64)})
    assert r.status == 200 and r.body == DATA, r
    r = server.request("GET", path, headers={"Range": "bytes=0-9", "If-Range": "W/" + etag})
    assert r.status == 200 and r.body == DATA, r          # a weak tag never matches If-Range
    lm = server.request("HEAD", path).getheader("Last-Modified")
    r = server.request("GET", path, headers={"Range": "bytes=0-9", "If-Range": lm})
    assert r.status == 206 and r.body == DATA[:10], r
    r = server.request("GET", path, headers={"Range": "bytes=0-9",
                                             "If-Range": "Mon, 01 Jan 2001 00:00:00 GMT"})
    assert r.status == 200 and r.body == DATA, r


def disposition(value):
    """(filename, filename* decoded or None) of a Content-Disposition value."""
    m = re.fullmatch(r'attachment; filename="([^"]*)"(?:; filename\*=UTF-8\'\'([A-Za-z0-9!#$&+.^_`|~%-]+))?',
                     value)
    assert m, "Content-Disposition not understood: %r" % value
    return m.group(1), (unquote(m.group(2), encoding="utf-8", errors="strict") if m.group(2) else None)


def test_content_disposition_ascii(server):
    f = server.upload("Q4 report.xlsx", b"x")
    r = server.request("HEAD", "/v1/files/%s/content" % f["id"])
    assert r.getheader("Content-Type") == XLSX
    assert disposition(r.getheader("Content-Disposition")) == ("Q4 report.xlsx", None)


def test_content_disposition_non_ascii(server):
    name = "Résumé 2026 — Q4.xlsx"
    f = server.upload(name, b"x")
    assert f["filename"] == name
    r = server.request("GET", "/v1/files/%s/content" % f["id"])
    fallback, star = disposition(r.getheader("Content-Disposition"))
    assert star == name
    assert all(32 <= ord(c) < 127 for c in fallback)
    assert re.fullmatch(r"R_+sum_+ 2026 _+ Q4\.xlsx", fallback), fallback
    # curl decodes it too (-J uses filename)
    assert r.getheader("Content-Type") == XLSX


def test_content_disposition_quotes_and_backslashes(server):
    """A plain-ASCII name whose fallback had to change ('"' and '\\' become '_') still sends
    filename*, so the real name is not lost."""
    for name, want in (('a"b\\c d.txt', "a_b_c d.txt"), ('say "hi".csv', "say _hi_.csv")):
        f = server.upload(name, b"x")
        assert f["filename"] == name
        r = server.request("HEAD", "/v1/files/%s/content" % f["id"])
        assert disposition(r.getheader("Content-Disposition")) == (want, name)


def test_upload_controls_refused(server):
    """Control characters are no part of a file name, at upload as at render."""
    for raw in ("a\tb.txt", "\r\nSet-Cookie: x", "bell\x07.txt", "del\x7f.txt"):
        r = server.request("POST", "/v1/files?filename=" + quote(raw), body=b"x")
        assert r.status == 400 and r.error_code == "invalid_request", (raw, r)
        assert "control character" in r.json["error"]["message"], r
        assert r.json["error"]["details"] == {"parameter": "filename"}, r


def test_upload_colon_allowed(server):
    """':' is a fine name to store (only a run refuses it as an input, with a 422 saying why)."""
    f = server.upload("10:30 notes.csv", b"a\n")
    assert f["filename"] == "10:30 notes.csv"


# =========================================================================== auth and errors

@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer WRONG"},
                                     {"Authorization": "Bearer"}, {"Authorization": "Basic S0VZMTo="},
                                     {"Authorization": "bearer KEY1x"}])
def test_401(server, headers):
    for method, path in [("GET", "/v1/files"), ("POST", "/v1/files?filename=a"),
                         ("GET", "/v1/files/" + "0" * 32), ("POST", "/v1/render")]:
        r = server.request(method, path, headers=headers, key=None, body=b"" if method == "POST" else None)
        assert r.status == 401 and r.error_code == "unauthorized", (method, path, r)
        assert r.getheader("WWW-Authenticate") == 'Bearer realm="kiln"'
        assert r.json["error"]["details"] == {}


def test_404_shapes(server, blob):
    for path in ["/v1/files/" + "0" * 32, "/v1/files/" + "0" * 32 + "/content",
                 "/v1/files/nothex", "/v1/files/" + "A" * 32, "/v1/files/" + "0" * 31,
                 "/v1/files/../../etc/passwd", "/v1/nope", "/v2/files", "/",
                 "/v1/files/%s/extra" % blob["id"]]:
        r = server.request("GET", path)
        assert r.status == 404 and r.error_code == "not_found", (path, r)


def test_405(server, blob):
    for method, path, allowed in [("DELETE", "/v1/files", {"GET", "POST"}),
                                  ("PUT", "/v1/files/" + blob["id"], {"GET", "DELETE"}),
                                  ("POST", "/v1/files/%s/content" % blob["id"], {"GET", "HEAD"}),
                                  ("GET", "/v1/files/%s/link" % blob["id"], {"POST"}),
                                  ("GET", "/v1/render", {"POST"}), ("GET", "/v1/runs", {"POST"}),
                                  ("POST", "/healthz", {"GET"})]:
        r = server.request(method, path, body=b"" if method in ("POST", "PUT") else None)
        assert r.status == 405 and r.error_code == "method_not_allowed", (method, path, r)
        allow = {m.strip() for m in r.getheader("Allow").split(",")}
        assert allowed <= allow, (method, path, allow)


def test_415(server):
    for path in ("/v1/render", "/v1/runs"):
        r = server.request("POST", path, body=b'{"format": "xlsx"}', headers={"Content-Type": "text/plain"})
        assert r.status == 415 and r.error_code == "unsupported_media_type", (path, r)


def test_400_invalid_json(server):
    body = b'{\n  "format": "xlsx",\n  "spec": {,}\n}\n'
    r = server.request("POST", "/v1/render", body=body, headers={"Content-Type": "application/json"})
    assert r.status == 400 and r.error_code == "invalid_json", r
    d = r.json["error"]["details"]
    assert d["line"] == 3, d
    assert 10 <= d["column"] <= 13, d
    r = server.request("POST", "/v1/render", body=b"", headers={"Content-Type": "application/json"})
    assert r.status == 400 and r.error_code in ("invalid_json", "invalid_request"), r


def test_cross_tenant_is_404(server):
    f = server.upload("alpha-secret.txt", b"alpha only")
    fid = f["id"]
    probes = [("GET", "/v1/files/" + fid), ("GET", "/v1/files/%s/content" % fid),
              ("POST", "/v1/files/%s/link" % fid), ("DELETE", "/v1/files/" + fid)]
    seen = {}
    for method, path in probes:
        r = server.request(method, path, key="KEY2")
        assert r.status == 404 and r.error_code == "not_found", (method, path, r)
        seen[(method, path)] = r
    r = server.request("HEAD", "/v1/files/%s/content" % fid, key="KEY2")
    assert r.status == 404, r
    assert fid not in [x["id"] for x in server.request("GET", "/v1/files?limit=1000", key="KEY2").json["files"]]
    # still alpha's, untouched
    assert server.download(fid) == b"alpha only"
    # the same requests once the file is really gone give the very same answers
    assert server.request("DELETE", "/v1/files/" + fid).status == 204
    for (method, path), before in seen.items():
        after = server.request(method, path, key="KEY2")
        assert after.status == before.status and after.body == before.body, (method, path, before, after)
        hb = sorted(k.lower() for k in before.headers.keys() if k.lower() not in ("date", "x-request-id"))
        ha = sorted(k.lower() for k in after.headers.keys() if k.lower() not in ("date", "x-request-id"))
        assert hb == ha, (method, path)


def test_cross_tenant_render_input_is_404(server):
    f = server.upload("beta.csv", b"a,b\n1,2\n", key="KEY2")
    req = {"format": "xlsx", "inputs": [f["id"]],
           "spec": {"version": 1, "sheets": [{"name": "S", "data": {"path": f["id"], "format": "csv"}}]}}
    r = server.request("POST", "/v1/render", body=req)
    assert r.status == 404 and r.error_code == "not_found", r


# =========================================================================== signed links

def link(server, fid, body=None, key="KEY1"):
    r = server.request("POST", "/v1/files/%s/link" % fid, body=body, key=key)
    assert r.status == 201, r
    return r.json


def test_signed_link(server, blob):
    before = time.time()
    l = link(server, blob["id"])
    u = urlsplit(l["url"])
    assert u.scheme == "http" and u.netloc == server.host, l
    assert l["url"].endswith(l["path"]) and u.path == "/v1/files/%s/content" % blob["id"]
    q = parse_qs(u.query)
    assert q["tenant"] == ["alpha"] and re.fullmatch(r"[0-9a-f]{64}", q["signature"][0])
    exp = int(q["expires"][0])
    assert abs(exp - (before + 3600)) < 60
    assert parse_time(l["expires_at"]).timestamp() == exp
    # no key needed; a wrong key is ignored
    for key in (None, "WRONG", "KEY2"):
        r = server.request("GET", l["path"], key=key)
        assert r.status == 200 and r.body == DATA, (key, r)
        assert r.getheader("ETag") == '"%s"' % blob["sha256"]
    r = server.request("HEAD", l["path"], key=None)
    assert r.status == 200 and r.body == b"", r
    r = server.request("GET", l["path"], key=None, headers={"Range": "bytes=10-19"})
    assert r.status == 206 and r.body == DATA[10:20], r
    # the link authorises the content only, and only this id
    r = server.request("GET", "/v1/files/%s?%s" % (blob["id"], u.query), key=None)
    assert r.status == 401, r
    other = server.upload("other.txt", b"other")
    r = server.request("GET", "/v1/files/%s/content?%s" % (other["id"], u.query), key=None)
    assert r.status == 403 and r.error_code == "invalid_signature", r
    # and curl fetches it as is
    import subprocess
    proc = subprocess.run(["curl", "-sS", "-f", l["url"]], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0 and proc.stdout == DATA, proc.stderr


def test_signed_link_tampered(server, blob):
    l = link(server, blob["id"])
    u = urlsplit(l["path"])
    q = {k: v[0] for k, v in parse_qs(u.query).items()}
    sig = q["signature"]
    flipped = sig[:-1] + ("0" if sig[-1] != "0" else "1")
    variants = [dict(q, signature=flipped), dict(q, signature=sig.upper()), dict(q, signature=sig[:-2]),
                dict(q, signature=""), dict(q, tenant="beta"), dict(q, expires=str(int(q["expires"]) + 1)),
                dict(q, signature="zz" + sig[2:])]
    for v in variants:
        qs = "&".join("%s=%s" % (k, quote(val)) for k, val in v.items())
        r = server.request("GET", u.path + "?" + qs, key=None)
        assert r.status == 403 and r.error_code == "invalid_signature", (v, r)
        r = server.request("GET", u.path + "?" + qs, key="KEY1")       # a key does not rescue it
        assert r.status == 403, (v, r)


def test_signed_link_expiry(server, blob):
    l = link(server, blob["id"], body={"expires_in": 1})
    assert server.request("GET", l["path"], key=None).status == 200
    time.sleep(2.2)
    r = server.request("GET", l["path"], key=None)
    assert r.status == 403 and r.error_code == "link_expired", r


@pytest.mark.parametrize("body", [{"expires_in": 0}, {"expires_in": 604801}, {"expires_in": "60"},
                                  {"expires_in": -5}, {"expires_in": 1.5}])
def test_signed_link_bad_expiry(server, blob, body):
    r = server.request("POST", "/v1/files/%s/link" % blob["id"], body=body)
    assert r.status == 400 and r.error_code == "invalid_request", r
    assert r.json["error"]["details"].get("pointer") == "/expires_in", r


def test_signed_link_clamped_to_file_expiry(server, blob):
    l = link(server, blob["id"], body={"expires_in": 604800})
    assert l["expires_at"] == blob["expires_at"], (l, blob)


def test_signature_not_in_access_log(server, blob):
    l = link(server, blob["id"])
    r = server.request("GET", l["path"], key=None)
    e = server.access_entry(r)
    assert e["path"] == "/v1/files/%s/content" % blob["id"], e
    sig = parse_qs(urlsplit(l["path"]).query)["signature"][0]
    assert not any(sig in line for line in server.lines)


# =========================================================================== other servers

def test_public_url_and_expired_file(serve_factory):
    s = serve_factory("--ttl", "2", "--sweep-interval", "1", "--public-url", "https://files.example.com",
                      name="ttl")
    f = s.upload("short.txt", b"short-lived")
    created, expires = parse_time(f["created_at"]), parse_time(f["expires_at"])
    assert (expires - created).total_seconds() == 2
    l = link(s, f["id"], body={"expires_in": 600})
    assert l["url"] == "https://files.example.com" + l["path"], l
    assert l["expires_at"] == f["expires_at"]                        # clamped
    time.sleep(3.5)
    for method, path in [("GET", "/v1/files/" + f["id"]), ("GET", "/v1/files/%s/content" % f["id"])]:
        r = s.request(method, path)
        assert r.status == 410 and r.error_code == "gone", r
        assert "expired at " + f["expires_at"] in r.json["error"]["message"], r
    r = s.request("POST", "/v1/files/%s/link" % f["id"])
    assert r.status == 410 and r.error_code == "gone", r
    r = s.request("HEAD", "/v1/files/%s/content" % f["id"])
    assert r.status == 410, r
    # the sweep removed the body
    deadline = time.monotonic() + 5
    while f["id"] in content_files(s.data_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert f["id"] not in content_files(s.data_dir)
    assert s.log_until(lambda e: e.get("event") == "sweep"), "no sweep event in the log"


def test_access_log_lines(server, blob):
    r = server.request("GET", "/v1/files/%s/content?x=1" % blob["id"])
    e = server.access_entry(r)
    for k in ("time", "request_id", "remote", "method", "route", "path", "status", "bytes",
              "duration_ms", "tenant"):
        assert k in e, (k, e)
    assert e["method"] == "GET" and e["status"] == 200 and e["tenant"] == "alpha"
    assert e["route"] == "/v1/files/{id}/content" and e["path"] == "/v1/files/%s/content" % blob["id"]
    assert e["bytes"] == len(DATA) and e["remote"].startswith("127.0.0.1")
    assert isinstance(e["duration_ms"], (int, float)) and e["duration_ms"] >= 0
    parse_time(e["time"][:19] + "Z")
    r = server.request("GET", "/nowhere?token=abc")
    e = server.access_entry(r)
    assert e["route"] == "other" and e["path"] == "/nowhere" and e["status"] == 404
    for line in server.lines:
        ev = json.loads(line)                   # every line is JSON
        assert "?" not in ev.get("path", ""), line


# =========================================================================== configuration, keys

def test_request_ids_unique(server):
    ids = [server.request("GET", "/healthz", key=None).getheader("X-Request-Id") for _ in range(20)]
    assert len(set(ids)) == 20 and all(len(i) >= 16 for i in ids), ids


def test_config_precedence(serve_factory, tmp_path):
    """flags > environment > config file > defaults, seen through the upload limit (413's
    details.limit)."""
    conf = tmp_path / "kiln.conf"
    conf.write_text("# test settings\nmax-upload = 100\n\nttl = 1h   \n")

    def limit(s):
        r = s.request("POST", "/v1/files?filename=x.bin", body=b"x" * 400)
        assert r.status == 413, r
        return r.json["error"]["details"]["limit"]

    s = serve_factory("--config", conf, name="conf1")
    assert limit(s) == 100
    f = s.upload("t.txt", b"t")
    assert (parse_time(f["expires_at"]) - parse_time(f["created_at"])).total_seconds() == 3600
    s.stop()
    s = serve_factory("--config", conf, name="conf2", env={"KILN_MAX_UPLOAD": "200"})
    assert limit(s) == 200
    s.stop()
    s = serve_factory("--config", conf, "--max-upload", "300", name="conf3", env={"KILN_MAX_UPLOAD": "200"})
    assert limit(s) == 300
    s.stop()
    s = serve_factory(name="conf4", env={"KILN_CONFIG": str(conf)})
    assert limit(s) == 100
    s.stop()


def test_queue_zero_accepted(serve_factory):
    """--queue 0 is a valid setting (no waiting), and an idle worker still takes a render."""
    s = serve_factory("--queue", "0", "--max-jobs", "1", name="queue0a")
    r = s.request("POST", "/v1/render", body={"format": "xlsx", "spec": {
        "version": 1, "sheets": [{"name": "S", "rows": [[1]]}]}})
    assert r.status == 201, r
    s.stop()


def test_queue_zero_allowed(serve_factory):
    """--queue 0: nothing waits (a job is taken only by an idle worker); the listening event
    says so."""
    s = serve_factory("--queue", "0", name="queue0")
    assert json.loads(s.first_line).get("queue") == 0, s.first_line
    s.stop()


def test_first_start_makes_a_key(serve_factory, tmp_path):
    """No keys configured: a key for tenant "default" in DATA/api-key (0600), its hash in
    DATA/keys; a restart reuses them."""
    d = tmp_path / "nokeys"
    s = serve_factory(keys=None, data_dir=d)
    key_file = d / "api-key"
    assert key_file.is_file(), os.listdir(d)
    assert (key_file.stat().st_mode & 0o777) == 0o600
    key = key_file.read_text().strip()
    assert len(key) >= 32 and key not in (d / "keys").read_text()
    deadline = time.monotonic() + 3
    while not any(str(key_file) in line for line in s.lines) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(str(key_file) in line for line in s.lines), "the log does not say where the key is"
    r = s.request("GET", "/v1/files", key=key)
    assert r.status == 200, r
    assert s.access_entry(r)["tenant"] == "default"
    assert s.request("GET", "/v1/files", key="KEY1").status == 401
    f = s.upload("mine.txt", b"mine", key=key)
    s.stop()
    s2 = serve_factory(keys=None, data_dir=d)
    assert key_file.read_text().strip() == key
    assert s2.download(f["id"], key=key) == b"mine"
    s2.stop()
