"""`kiln serve`: /mcp, the MCP server over Streamable HTTP (issue 18 item 2), driven by raw
HTTP (http.client): a legacy MCP session (initialize, Mcp-Session-Id, tools, a rendered .xlsx
read back as a resource, DELETE, 404 after), the 2026-07-28 revision statelessly (server/
discover, _meta, the header checks), progress as an event stream, cancellation (the client's
notifications/cancelled, and a client that goes away) interrupting the running cell, the
transport's refusals (Origin, key, batch, Accept, media type, versions), another tenant's
session and file, load_file's --mcp-allow-read, the caps and the idle timeout, metrics and
the access log. Every response is checked against docs/openapi.json (serve_helpers).
Cells need root (a sandbox), as /v1/sessions does.
"""
import base64
import hashlib
import io
import json
import os
import re
import socket
import subprocess
import time

import pytest

from conftest import KILN_BIN, REPO, external_reader, run_kiln
from serve_helpers import need_root, rst_close, serve_factory  # noqa: F401

ACCEPT = "application/json, text/event-stream"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ORIGIN = "http://localhost:5173"
SID_RE = re.compile(r"^[0-9a-f]{32}$")
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture(scope="module")
def allowed(tmp_path_factory):
    d = tmp_path_factory.mktemp("allowed")
    (d / "data.csv").write_text("region,sales\nnorth,10\nsouth,32\n")
    (d.parent / "secret.txt").write_text("not yours\n")
    return d


@pytest.fixture(scope="module")
def srv(serve_factory, allowed):
    return serve_factory("--sessions", "on", "--session-pool", "1",
                         "--mcp-allow-origin", ORIGIN, "--mcp-allow-origin", "https://app.example",
                         "--mcp-allow-read", str(allowed), name="mcp")


# --------------------------------------------------------------------------- the client

def sse_messages(body):
    """The JSON-RPC messages of an event stream (bytes), in order."""
    out, data = [], []
    for line in body.decode("utf-8").split("\n"):
        line = line.rstrip("\r")
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif line == "" and data:
            out.append(json.loads("\n".join(data)))
            data = []
    if data:
        out.append(json.loads("\n".join(data)))
    return out


def messages_of(r):
    """(notifications, response) of a reply, JSON or an event stream."""
    ctype = (r.getheader("Content-Type") or "").split(";")[0]
    if ctype == "text/event-stream":
        msgs = sse_messages(r.body)
        responses = [m for m in msgs if "id" in m and ("result" in m or "error" in m)]
        assert len(responses) <= 1, msgs
        return [m for m in msgs if "id" not in m], responses[0] if responses else None
    assert ctype == "application/json", r
    return [], r.json


class Legacy:
    """A legacy MCP session over raw HTTP."""

    def __init__(self, srv, key="KEY1", version=LEGACY):
        self.srv, self.key, self.version, self.next_id = srv, key, version, 0
        r = self.post({"jsonrpc": "2.0", "id": self.rid(), "method": "initialize",
                       "params": {"protocolVersion": version, "capabilities": {},
                                  "clientInfo": {"name": "test", "version": "1"}}},
                      session=False, version_header=False)
        assert r.status == 200, r
        self.sid = r.getheader("Mcp-Session-Id")
        assert self.sid and SID_RE.match(self.sid), r
        assert r.json["result"]["protocolVersion"] == version, r
        r = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert r.status == 202 and r.body == b"", r

    def rid(self):
        self.next_id += 1
        return self.next_id

    def headers(self, session=True, version_header=True, extra=None):
        h = {"Accept": ACCEPT}
        if session:
            h["Mcp-Session-Id"] = self.sid
        if version_header:
            h["MCP-Protocol-Version"] = self.version
        h.update(extra or {})
        return h

    def post(self, msg, session=True, version_header=True, headers=None, key=None):
        return self.srv.request("POST", "/mcp", body=msg, key=key or self.key,
                                headers=self.headers(session, version_header, headers))

    def request(self, method, params=None, expect=200, **kw):
        msg = {"jsonrpc": "2.0", "id": self.rid(), "method": method}
        if params is not None:
            msg["params"] = params
        r = self.post(msg, **kw)
        assert r.status == expect, r
        notes, resp = messages_of(r)
        if resp is not None:
            assert resp["id"] == msg["id"], (msg, resp)
        return resp, notes, r

    def call(self, name, arguments, meta=None):
        params = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        resp, notes, _ = self.request("tools/call", params)
        assert "result" in resp, resp
        return resp["result"], notes

    def delete(self):
        return self.srv.request("DELETE", "/mcp", key=self.key,
                                headers={"Mcp-Session-Id": self.sid})


def modern(srv, method, params=None, rid=1, key="KEY1", headers=None, meta=None):
    """One 2026-07-28 request, with the headers it needs (headers= overrides)."""
    params = dict(params or {})
    params["_meta"] = dict(META if meta is None else meta)
    h = {"Accept": ACCEPT, "MCP-Protocol-Version": params["_meta"].get(
        "io.modelcontextprotocol/protocolVersion", MODERN), "Mcp-Method": method}
    if method == "tools/call":
        h["Mcp-Name"] = params.get("name", "")
    if method == "resources/read":
        h["Mcp-Name"] = params.get("uri", "")
    for k, v in (headers or {}).items():
        if v is None:
            h.pop(k, None)
        else:
            h[k] = v
    return srv.request("POST", "/mcp", key=key, headers=h,
                       body={"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def text_of(result):
    return "".join(c.get("text", "") for c in result["content"] if c["type"] == "text")


def rpc_error(r, status, code):
    assert r.status == status, r
    assert r.json["jsonrpc"] == "2.0" and r.json["error"]["code"] == code, r
    return r.json["error"]


def metric(srv, name, **labels):
    """The sum of name's series whose labels include every one given."""
    total = 0.0
    for line in srv.metrics().splitlines():
        m = re.match(r"^([a-z_]+)(?:\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        have = set(re.findall(r'([a-z_]+="[^"]*")', m.group(2) or ""))
        if all('%s="%s"' % kv in have for kv in labels.items()):
            total += float(m.group(3))
    return total


def wait_for(pred, timeout=30, what="the condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for %s" % what
        time.sleep(0.05)


# --------------------------------------------------------------------------- legacy sessions

def test_legacy_session_end_to_end(srv):
    need_root()
    m = Legacy(srv)
    resp, _, _ = m.request("tools/list")
    names = {t["name"] for t in resp["result"]["tools"]}
    assert {"execute_code", "render_document", "list_files", "load_file"} <= names, resp
    # two cells share a variable: the MCP session's own Kiln session
    r1, _ = m.call("execute_code", {"code": "x = 41\nprint('set')"})
    assert r1["isError"] is False and r1["structuredContent"]["status"] == "ok", r1
    ksid = r1["structuredContent"]["session_id"]
    r2, _ = m.call("execute_code", {"code": "x + 1"})
    assert r2["structuredContent"]["session_id"] == ksid
    assert "42" in text_of(r2) and r2["structuredContent"]["execution_count"] == 2, r2
    # the Kiln session is the service's: /v1/sessions sees it
    r = srv.request("GET", "/v1/sessions/" + ksid)
    assert r.status == 200 and r.json["cells"] == 2, r
    # a document, then its link read back as a resource
    spec = {"sheets": [{"name": "Sales", "rows": [["Region", "Sales"], ["North", 10.25],
                                                     ["South", 32]]}]}
    rd, _ = m.call("render_document", {"format": "xlsx", "spec": spec, "filename": "sales.xlsx"})
    assert rd["isError"] is False, rd
    sc = rd["structuredContent"]
    link = [c for c in rd["content"] if c["type"] == "resource_link"][0]
    assert sc["uri"] == link["uri"] == "kiln://files/" + sc["id"], rd
    resp, _, _ = m.request("resources/read", {"uri": link["uri"]})
    content = resp["result"]["contents"][0]
    assert content["uri"] == link["uri"] and content["mimeType"].endswith("spreadsheetml.sheet")
    data = base64.b64decode(content["blob"])
    assert hashlib.sha256(data).hexdigest() == sc["sha256"] and data[:2] == b"PK"
    # the same file is the tenant's stored file
    assert srv.download(sc["id"]) == data
    listed, _, _ = m.request("resources/list")
    assert link["uri"] in {x["uri"] for x in listed["result"]["resources"]}
    # a bad spec: isError with every pointer
    bad, _ = m.call("render_document", {"format": "docx", "spec": {"title": 5,
                                                                   "content": [{"type": "no"}]}})
    assert bad["isError"] is True
    pointers = [e["pointer"] for e in bad["structuredContent"]["errors"]]
    assert "/title" in pointers and all(p in text_of(bad) for p in pointers), bad
    # DELETE ends it, and closes its Kiln session
    r = m.delete()
    assert r.status == 204 and r.body == b"", r
    r = m.post({"jsonrpc": "2.0", "id": m.rid(), "method": "tools/list"})
    rpc_error(r, 404, -32001)
    r = m.delete()
    rpc_error(r, 404, -32001)
    r = srv.request("GET", "/v1/sessions/" + ksid)
    assert r.status == 410 and r.json["error"]["details"]["session"]["reason"] == "closed", r
    external_reader("openpyxl")
    import openpyxl
    wb = openpyxl.load_workbook(io.BytesIO(data))
    assert [[c.value for c in row] for row in wb["Sales"].iter_rows()] == \
        [["Region", "Sales"], ["North", 10.25], ["South", 32]]


def test_document_saved_by_a_cell_is_a_link(srv):
    need_root()
    m = Legacy(srv)
    r, _ = m.call("execute_code", {"code": (
        "import kiln\nwb = kiln.Workbook()\nwb.sheet({'n': [1, 2, 3]}, 'Nums')\n"
        "wb.save('nums.xlsx')\n")})
    assert r["isError"] is False, r
    doc = r["structuredContent"]["documents"][0]
    links = [c for c in r["content"] if c["type"] == "resource_link"]
    assert doc["ok"] is True and doc["uri"] in {l["uri"] for l in links}, r
    # the document is a stored file of the tenant (source document), read back whole
    fid = doc["uri"].rsplit("/", 1)[1]
    meta = srv.request("GET", "/v1/files/" + fid).json
    assert meta["source"] == "document" and meta["filename"] == "nums.xlsx", meta
    resp, _, _ = m.request("resources/read", {"uri": doc["uri"]})
    assert base64.b64decode(resp["result"]["contents"][0]["blob"]) == srv.download(fid)
    assert m.delete().status == 204


def test_legacy_2025_06_18_and_version_header(srv):
    m = Legacy(srv, version="2025-06-18")
    resp, _, _ = m.request("tools/list")
    assert resp["result"]["tools"], resp
    # no MCP-Protocol-Version: the session's negotiated one
    resp, _, _ = m.request("tools/list", version_header=False)
    assert "result" in resp, resp
    # one the server does not speak: 400
    r = m.post({"jsonrpc": "2.0", "id": m.rid(), "method": "tools/list"},
               headers={"MCP-Protocol-Version": "1999-01-01"})
    err = rpc_error(r, 400, -32000)
    assert "1999-01-01" in err["message"] and MODERN in err["data"]["supported"], r
    # the modern one without the version in _meta: 400
    r = m.post({"jsonrpc": "2.0", "id": m.rid(), "method": "tools/list"},
               headers={"MCP-Protocol-Version": MODERN})
    rpc_error(r, 400, -32602)
    # another revision the server speaks, but not the one this session settled on: 400
    r = m.post({"jsonrpc": "2.0", "id": m.rid(), "method": "tools/list"},
               headers={"MCP-Protocol-Version": "2025-11-25"})
    err = rpc_error(r, 400, -32000)
    assert "2025-06-18" in err["message"], err
    assert m.delete().status == 204


def test_sessions_need_their_id(srv):
    m = Legacy(srv)
    # no Mcp-Session-Id: 400; an unknown one: 404
    r = m.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, session=False)
    rpc_error(r, 400, -32000)
    r = m.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
               headers={"Mcp-Session-Id": "0" * 32})
    rpc_error(r, 404, -32001)
    r = srv.request("DELETE", "/mcp")
    rpc_error(r, 400, -32000)
    # each initialize is a session of its own
    other = Legacy(srv)
    assert other.sid != m.sid
    assert m.delete().status == 204 and other.delete().status == 204


def test_another_tenant(srv):
    need_root()
    a = Legacy(srv, key="KEY1")
    ra, _ = a.call("execute_code", {"code": "open('/mnt/data/mine.txt', 'w').write('alpha')"})
    assert ra["isError"] is False, ra
    asid = ra["structuredContent"]["session_id"]
    files = ra["structuredContent"]["files"]
    assert files and files[0]["uri"].startswith("kiln://files/"), ra
    uri = files[0]["uri"]
    # alpha reads its own file
    resp, _, _ = a.request("resources/read", {"uri": uri})
    assert base64.b64decode(resp["result"]["contents"][0]["blob"]) == b"alpha"
    # beta: alpha's Mcp-Session-Id is a 404, as an unknown one
    r = a.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, key="KEY2")
    rpc_error(r, 404, -32001)
    b = Legacy(srv, key="KEY2")
    # beta's resources/read of alpha's file: exactly an unknown id's answer
    unknown = "kiln://files/" + "0" * 32
    resp_a, _, _ = b.request("resources/read", {"uri": uri})
    resp_u, _, _ = b.request("resources/read", {"uri": unknown})
    assert resp_a["error"]["code"] == resp_u["error"]["code"] == -32002, (resp_a, resp_u)
    assert resp_a["error"]["message"] == resp_u["error"]["message"]
    # ... and it is not in beta's list
    listed, _, _ = b.request("resources/list")
    assert uri not in {x["uri"] for x in listed["result"]["resources"]}
    # alpha's Kiln session is no session of beta's: as an unknown id
    rb, _ = b.call("execute_code", {"code": "1", "session_id": asid})
    ru, _ = b.call("execute_code", {"code": "1", "session_id": "f" * 32})
    assert rb["isError"] is True and ru["isError"] is True
    assert text_of(rb).replace(asid, "ID") == text_of(ru).replace("f" * 32, "ID"), (rb, ru)
    # and beta cannot DELETE alpha's MCP session
    r = srv.request("DELETE", "/mcp", key="KEY2", headers={"Mcp-Session-Id": a.sid})
    rpc_error(r, 404, -32001)
    assert a.delete().status == 204 and b.delete().status == 204


def test_load_file_from_allowed_dir(srv, allowed):
    need_root()
    m = Legacy(srv)
    r, _ = m.call("load_file", {"path": str(allowed / "data.csv")})
    assert r["isError"] is False and r["structuredContent"]["bytes"] == 31, r
    r, _ = m.call("list_files", {})
    assert "data.csv" in {f["name"] for f in r["structuredContent"]["files"]}, r
    r, _ = m.call("execute_code", {"code": "print(open('/mnt/data/data.csv').read())"})
    assert "south,32" in text_of(r), r
    for bad in (str(allowed.parent / "secret.txt"), str(allowed / ".." / "secret.txt"),
                "/etc/passwd"):
        r, _ = m.call("load_file", {"path": bad})
        assert r["isError"] is True, (bad, r)
    assert m.delete().status == 204


# --------------------------------------------------------------------------- streams, cancellation

def test_progress_comes_as_an_event_stream(srv):
    need_root()
    m = Legacy(srv)
    resp, notes, r = m.request("tools/call", {
        "name": "execute_code", "arguments": {"code": "print('hi')\n6 * 7"},
        "_meta": {"progressToken": "tok-1"}})
    assert r.getheader("Content-Type") == "text/event-stream", r
    assert b"event: message\n" in r.body
    progress = [n for n in notes if n["method"] == "notifications/progress"]
    assert progress and all(n["params"]["progressToken"] == "tok-1" for n in progress), notes
    values = [n["params"]["progress"] for n in progress]
    assert values == sorted(values) and len(set(values)) == len(values), values
    assert resp["result"]["isError"] is False and "42" in text_of(resp["result"]), resp
    # no token, no notifications: plain JSON
    resp, notes, r = m.request("tools/call", {"name": "execute_code",
                                              "arguments": {"code": "1"}})
    assert r.getheader("Content-Type") == "application/json" and not notes, r
    assert m.delete().status == 204


class StreamedCall:
    """A tools/call with a progress token on a socket of its own, read as it comes."""

    def __init__(self, srv, headers, msg, key="KEY1"):
        body = json.dumps(msg).encode()
        self.sock = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
        lines = ["POST /mcp HTTP/1.1", "Host: %s" % srv.host, "Authorization: Bearer " + key,
                 "Content-Type: application/json", "Content-Length: %d" % len(body)]
        lines += ["%s: %s" % kv for kv in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        self.data = b""

    def until(self, needle):
        while needle not in self.data:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("the stream ended before %r: %r" % (needle, self.data))
            self.data += chunk
        return self.data

    def rest(self):
        while True:
            chunk = self.sock.recv(65536)
            if not chunk:
                return self.data
            self.data += chunk
            if self.data.endswith(b"0\r\n\r\n"):  # the chunked body's end
                return self.data


def dechunk(raw):
    """The body of a raw HTTP/1.1 chunked response (headers and all)."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower(), head
    out = b""
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        n = int(size_line.split(b";")[0], 16)
        if n == 0:
            break
        out, rest = out + rest[:n], rest[n + 2:]
    return out


LONG_CELL = "import time\nprint('running', flush=True)\nfor i in range(600): time.sleep(0.1)\ndone = 1"


def test_cancelled_notification_interrupts_the_cell(srv):
    need_root()
    m = Legacy(srv)
    m.call("execute_code", {"code": "kept = 'yes'"})
    rid = m.rid()
    st = StreamedCall(srv, m.headers(), {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                         "params": {"name": "execute_code",
                                                    "arguments": {"code": LONG_CELL},
                                                    "_meta": {"progressToken": 7}}})
    st.until(b'"message":"started"')   # the cell runs
    r = m.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": rid, "reason": "test"}})
    assert r.status == 202, r
    # the stream ends with no response to the cancelled request
    body = st.rest()
    st.sock.close()
    assert not [x for x in sse_messages(dechunk(body)) if x.get("id") == rid], body
    r, _ = m.call("execute_code", {"code": "print('done' in dir(), kept)"})
    assert "False yes" in text_of(r), r
    assert m.delete().status == 204


def test_delete_under_a_running_cell(srv):
    need_root()
    m = Legacy(srv)
    r, _ = m.call("execute_code", {"code": "1"})
    ksid = r["structuredContent"]["session_id"]
    rid = m.rid()
    st = StreamedCall(srv, m.headers(), {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                         "params": {"name": "execute_code",
                                                    "arguments": {"code": LONG_CELL},
                                                    "_meta": {"progressToken": 1}}})
    st.until(b'"message":"started"')
    assert m.delete().status == 204
    # the running request is cancelled: its stream ends without a response
    body = st.rest()
    st.sock.close()
    assert not [x for x in sse_messages(dechunk(body)) if x.get("id") == rid], body
    # its Kiln session closes once the request has let go of the MCP session (just after
    # the stream's end reached the client)
    r = wait_for(lambda: (lambda r: r if r.status == 410 else None)(
        srv.request("GET", "/v1/sessions/" + ksid)), what="the Kiln session closed")
    assert r.json["error"]["details"]["session"]["reason"] == "closed", r


def test_client_going_away_interrupts_the_cell(srv):
    need_root()
    before = metric(srv, "kiln_session_cells_total", outcome="interrupted")
    cancelled = metric(srv, "kiln_mcp_requests_total", method="tools/call", outcome="cancelled")
    m = Legacy(srv)
    m.call("execute_code", {"code": "kept = 'yes'"})
    st = StreamedCall(srv, m.headers(), {"jsonrpc": "2.0", "id": m.rid(), "method": "tools/call",
                                         "params": {"name": "execute_code",
                                                    "arguments": {"code": LONG_CELL},
                                                    "_meta": {"progressToken": "p"}}})
    st.until(b'"message":"started"')
    rst_close(st.sock)
    # the next cell of the session runs only once that one has ended: interrupted
    r, _ = m.call("execute_code", {"code": "print('done' in dir(), kept)"})
    assert "False yes" in text_of(r), r
    wait_for(lambda: metric(srv, "kiln_session_cells_total", outcome="interrupted") > before,
             what="the interrupted cell counted")
    wait_for(lambda: metric(srv, "kiln_mcp_requests_total", method="tools/call",
                            outcome="cancelled") > cancelled, what="the cancelled call counted")
    assert m.delete().status == 204


# --------------------------------------------------------------------------- the modern revision

def test_modern_is_stateless(srv):
    r = modern(srv, "server/discover")
    assert r.status == 200 and r.getheader("Mcp-Session-Id") is None, r
    res = r.json["result"]
    assert MODERN in res["supportedVersions"] and LEGACY in res["supportedVersions"], res
    r = modern(srv, "tools/list", rid="a")
    assert r.status == 200 and r.json["id"] == "a", r
    assert {t["name"] for t in r.json["result"]["tools"]} >= {"execute_code", "render_document"}
    # an Mcp-Session-Id on a modern request is ignored
    r = modern(srv, "tools/list", headers={"Mcp-Session-Id": "0" * 32})
    assert r.status == 200, r


def test_modern_cells_share_a_session_id(srv):
    need_root()
    r = modern(srv, "tools/call", {"name": "execute_code", "arguments": {"code": "y = 6"}},
               rid=1)
    assert r.status == 200 and r.json["id"] == 1, r
    sid = r.json["result"]["structuredContent"]["session_id"]
    # the client's own ids come back, even ones another client uses at the same time
    r = modern(srv, "tools/call", {"name": "execute_code",
                                   "arguments": {"code": "y * 7", "session_id": sid}}, rid=1)
    assert r.status == 200 and r.json["id"] == 1, r
    assert r.json["result"]["structuredContent"]["session_id"] == sid
    assert "42" in text_of(r.json["result"]), r
    # Mcp-Name in the Base64 form
    enc = "=?base64?" + base64.b64encode(b"execute_code").decode() + "?="
    r = modern(srv, "tools/call", {"name": "execute_code",
                                   "arguments": {"code": "y", "session_id": sid}},
               headers={"Mcp-Name": enc})
    assert r.status == 200 and "6" in text_of(r.json["result"]), r


def test_modern_header_checks(srv):
    call = {"name": "execute_code", "arguments": {"code": "1"}}
    # the version header must match _meta's
    r = modern(srv, "tools/list", headers={"MCP-Protocol-Version": LEGACY})
    rpc_error(r, 400, -32020)
    r = modern(srv, "tools/list", headers={"MCP-Protocol-Version": None})
    rpc_error(r, 400, -32020)
    # Mcp-Method must be there and be the method
    r = modern(srv, "tools/list", headers={"Mcp-Method": "tools/call"})
    rpc_error(r, 400, -32020)
    r = modern(srv, "tools/list", headers={"Mcp-Method": None})
    rpc_error(r, 400, -32020)
    # Mcp-Name: tools/call's name, resources/read's uri
    r = modern(srv, "tools/call", call, headers={"Mcp-Name": "render_document"})
    err = rpc_error(r, 400, -32020)
    assert "Mcp-Name" in err["message"], err
    r = modern(srv, "tools/call", call, headers={"Mcp-Name": None})
    rpc_error(r, 400, -32020)
    r = modern(srv, "resources/read", {"uri": "kiln://files/" + "0" * 32},
               headers={"Mcp-Name": "kiln://files/" + "1" * 32})
    rpc_error(r, 400, -32020)
    # a version this server does not speak: 400 with the ones it does
    v = "2099-01-01"
    meta = dict(META, **{"io.modelcontextprotocol/protocolVersion": v})
    r = modern(srv, "tools/list", meta=meta)
    err = rpc_error(r, 400, -32022)
    assert MODERN in err["data"]["supported"] and err["data"]["requested"] == v, err
    # _meta without the client's capabilities is malformed: 400 with -32602
    r = modern(srv, "tools/list", meta={"io.modelcontextprotocol/protocolVersion": MODERN})
    rpc_error(r, 400, -32602)
    # a method it does not have: 404 with -32601
    r = modern(srv, "no/such/method")
    rpc_error(r, 404, -32601)
    # resources/read of an unknown file: a JSON-RPC error, not a transport one
    uri = "kiln://files/" + "0" * 32
    r = modern(srv, "resources/read", {"uri": uri})
    assert r.status == 200 and r.json["error"]["code"] == -32602, r


# --------------------------------------------------------------------------- the transport

def post_raw(srv, body, headers=None, key="KEY1"):
    h = {"Accept": ACCEPT, "Content-Type": "application/json"}
    for k, v in (headers or {}).items():
        if v is None:
            h.pop(k, None)
        else:
            h[k] = v
    return srv.request("POST", "/mcp", body=body, headers=h, key=key)


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


def test_origin_is_checked(srv):
    r = post_raw(srv, json.dumps(INIT), {"Origin": "http://evil.example"})
    rpc_error(r, 403, -32000)
    assert r.json["id"] is None
    # before the key: a page without one learns nothing more
    r = post_raw(srv, json.dumps(INIT), {"Origin": "http://evil.example"}, key=None)
    rpc_error(r, 403, -32000)
    for origin in (ORIGIN, "https://app.example"):
        r = post_raw(srv, json.dumps(INIT), {"Origin": origin})
        assert r.status == 200 and SID_RE.match(r.getheader("Mcp-Session-Id")), r
        d = srv.request("DELETE", "/mcp", headers={"Mcp-Session-Id": r.getheader("Mcp-Session-Id"),
                                                  "Origin": origin})
        assert d.status == 204, d
    r = srv.request("DELETE", "/mcp", headers={"Mcp-Session-Id": "0" * 32,
                                              "Origin": "http://evil.example"})
    rpc_error(r, 403, -32000)
    # a browser on an allowed origin: its preflight (no key), and replies it may read
    r = srv.request("OPTIONS", "/mcp", key=None, headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id"})
    assert r.status == 204 and r.getheader("Access-Control-Allow-Origin") == ORIGIN, r
    allowed = r.getheader("Access-Control-Allow-Headers").lower()
    assert all(h in allowed for h in ("authorization", "mcp-session-id", "mcp-protocol-version"))
    r = srv.request("OPTIONS", "/mcp", key=None, headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    rpc_error(r, 403, -32000)
    assert r.getheader("Access-Control-Allow-Origin") is None, r
    r = post_raw(srv, json.dumps(INIT), {"Origin": ORIGIN})
    assert r.getheader("Access-Control-Allow-Origin") == ORIGIN, r
    assert "Mcp-Session-Id" in r.getheader("Access-Control-Expose-Headers"), r
    srv.request("DELETE", "/mcp", headers={"Mcp-Session-Id": r.getheader("Mcp-Session-Id")})
    # no Origin, no CORS headers
    r = post_raw(srv, json.dumps(INIT))
    assert r.getheader("Access-Control-Allow-Origin") is None, r
    srv.request("DELETE", "/mcp", headers={"Mcp-Session-Id": r.getheader("Mcp-Session-Id")})


def test_key_is_required(srv):
    r = post_raw(srv, json.dumps(INIT), key=None)
    rpc_error(r, 401, -32000)
    assert r.getheader("WWW-Authenticate", "").startswith("Bearer"), r
    r = post_raw(srv, json.dumps(INIT), key="wrong")
    rpc_error(r, 401, -32000)
    r = modern(srv, "tools/list", key=None)
    rpc_error(r, 401, -32000)


def test_refusals(srv):
    # a batch (removed in 2025-06-18)
    r = post_raw(srv, json.dumps([INIT]))
    err = rpc_error(r, 400, -32600)
    assert "batch" in err["message"], err
    r = post_raw(srv, "{not json")
    rpc_error(r, 400, -32700)
    r = post_raw(srv, json.dumps({"hello": 1}))
    rpc_error(r, 400, -32600)
    # Accept must list both; the body must be JSON
    r = post_raw(srv, json.dumps(INIT), {"Accept": "application/json"})
    rpc_error(r, 406, -32000)
    r = post_raw(srv, json.dumps(INIT), {"Accept": None})
    rpc_error(r, 406, -32000)
    r = post_raw(srv, json.dumps(INIT), {"Content-Type": "text/plain"})
    rpc_error(r, 415, -32000)
    # no stream of the server's own
    r = srv.request("GET", "/mcp", headers={"Accept": "text/event-stream"})
    rpc_error(r, 405, -32000)
    assert r.getheader("Allow") == "POST, DELETE", r
    # a body over --max-request is refused before it is read
    c = srv.conn()
    c.putrequest("POST", "/mcp")
    for k, v in (("Authorization", "Bearer KEY1"), ("Content-Type", "application/json"),
                 ("Accept", ACCEPT), ("Content-Length", str(64 << 20))):
        c.putheader(k, v)
    c.endheaders()
    resp = c.getresponse()
    assert resp.status == 413, resp.status
    c.close()


def test_notification_without_session(srv):
    # a notification of the modern revision (none is defined over HTTP): accepted
    r = post_raw(srv, json.dumps({"jsonrpc": "2.0", "method": "notifications/whatever"}),
                 {"MCP-Protocol-Version": MODERN})
    assert r.status == 202, r
    # a legacy one needs its session
    r = post_raw(srv, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    rpc_error(r, 400, -32000)


# --------------------------------------------------------------------------- metrics, log

def test_metrics_and_access_log(srv):
    m = Legacy(srv)
    resp, _, r = m.request("tools/list")
    e = srv.access_entry(r)
    assert e["route"] == "/mcp" and e["path"] == "/mcp" and e["status"] == 200, e
    assert e["mcp_method"] == "tools/list" and e["tenant"] == "alpha", e
    assert metric(srv, "kiln_mcp_requests_total", method="tools/list", outcome="ok") >= 1
    assert metric(srv, "kiln_mcp_requests_total", method="initialize", outcome="ok") >= 1
    assert metric(srv, "kiln_mcp_sessions_open") >= 1
    assert metric(srv, "kiln_http_requests_total", route="/mcp", method="POST", status="200") >= 2
    assert m.delete().status == 204
    ev = wait_for(lambda: [x for x in srv.log() if x.get("event") == "mcp_session_ended"
                           and x.get("mcp_session") == m.sid], what="the mcp_session_ended event")
    assert ev[0]["reason"] == "deleted", ev


# --------------------------------------------------------------------------- limits, settings

@pytest.fixture(scope="module")
def small(serve_factory):
    """No sessions (cheap): the MCP session cap."""
    return serve_factory("--mcp-sessions-per-tenant", "2", name="mcp-small")


def test_session_cap_per_tenant(small):
    a, b = Legacy(small), Legacy(small)
    r = post_raw(small, json.dumps(INIT))
    err = rpc_error(r, 429, -32000)
    assert err["data"]["limit"] == 2 and r.getheader("Mcp-Session-Id") is None, r
    # another tenant has its own
    r = post_raw(small, json.dumps(INIT), key="KEY2")
    assert r.status == 200, r
    assert a.delete().status == 204
    c = Legacy(small)
    for m in (b, c):
        assert m.delete().status == 204
    # without sessions, execute_code is a tool error that says why
    m = Legacy(small)
    res, _ = m.call("execute_code", {"code": "1"})
    assert res["isError"] is True and "sessions" in text_of(res).lower(), res
    # renders need no session
    res, _ = m.call("render_document", {"format": "pdf", "spec": {"blocks": [
        {"type": "paragraph", "text": "Hi"}]}})
    assert res["isError"] is False, res


def test_idle_sessions_end(serve_factory):
    s = serve_factory("--mcp-session-idle-timeout", "1", name="mcp-idle")
    m = Legacy(s)
    # no request meanwhile (each would restart its clock): the server's log says when
    wait_for(lambda: [x for x in s.log() if x.get("event") == "mcp_session_ended"
                      and x.get("mcp_session") == m.sid], what="the idle MCP session to end")
    ev = [x for x in s.log() if x.get("event") == "mcp_session_ended"]
    assert ev[0]["reason"] == "idle_timeout", ev
    r = m.post({"jsonrpc": "2.0", "id": m.rid(), "method": "ping"})
    rpc_error(r, 404, -32001)


def test_mcp_off(serve_factory):
    s = serve_factory("--mcp", "off", name="mcp-off")
    r = s.request("POST", "/mcp", body=INIT, headers={"Accept": ACCEPT}, check=False)
    assert r.status == 404 and json.loads(r.body)["error"]["code"] == "not_found", r


def test_settings_are_checked(tmp_path):
    p = run_kiln("serve", "--data-dir", str(tmp_path / "d"), "--mcp-allow-origin",
                 "localhost:3000")
    assert p.returncode == 2 and "--mcp-allow-origin" in p.stderr.decode(), p
    p = run_kiln("serve", "--data-dir", str(tmp_path / "d"), "--mcp", "maybe")
    assert p.returncode == 2 and "--mcp" in p.stderr.decode(), p
    p = run_kiln("serve", "--data-dir", str(tmp_path / "d"), "--listen", "127.0.0.1:0",
                 "--mcp-allow-read", str(tmp_path / "nowhere"),
                 env={"KILN_API_KEYS": "a:K", "KILN_SESSIONS": "off"})
    assert p.returncode == 2 and "nowhere" in p.stderr.decode(), p


def test_serve_md_walk_through(srv, tmp_path):
    """docs/serve.md's MCP curl commands, run as written (bash -e: a failing command fails
    the test) against this module's server, its address put for 127.0.0.1:8080 and KEY one
    of its keys."""
    need_root()
    text = (REPO / "docs" / "serve.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if "Mcp-Session-Id" in b]
    assert len(blocks) == 1, blocks
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env["KEY"] = "KEY1"
    p = subprocess.run(["bash", "-euo", "pipefail", "-c",
                        blocks[0].replace("127.0.0.1:8080", srv.host)],
                       cwd=tmp_path, env=env, capture_output=True, timeout=300)
    out = p.stdout.decode()
    assert p.returncode == 0, "exit %d\n%s\n%s" % (p.returncode, out[-3000:], p.stderr.decode()[-2000:])
    assert "execute_code" in out and "notifications/progress" in out, out[-3000:]
    assert '"text":"42\\n"' in out or "42\\n" in out, out[-3000:]
    assert (tmp_path / "mcp-hi.xlsx").read_bytes()[:2] == b"PK"


def test_mcp_md_host_config_connects(srv):
    """docs/mcp.md's HTTP configuration, used as a host would: its URL (this server's
    address put for 127.0.0.1:8080) and its headers (${KILN_API_KEY} the key)."""
    text = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
    http = text[text.index("## HTTP (kiln serve)"):]
    snippet = re.search(r"```json\n(\{\"mcpServers\".*?)\n```", http, re.S).group(1)
    cfg = json.loads(snippet)["mcpServers"]["kiln"]
    assert cfg["type"] == "http" and cfg["url"] == "http://127.0.0.1:8080/mcp", cfg
    headers = {k: v.replace("${KILN_API_KEY}", "KEY1") for k, v in cfg["headers"].items()}
    headers.update({"Accept": ACCEPT, "Content-Type": "application/json"})
    r = srv.request("POST", cfg["url"].split("127.0.0.1:8080", 1)[1], body=json.dumps(INIT),
                    headers=headers, key=None)
    assert r.status == 200 and SID_RE.match(r.getheader("Mcp-Session-Id")), r
    d = srv.request("DELETE", "/mcp", headers={"Mcp-Session-Id": r.getheader("Mcp-Session-Id")})
    assert d.status == 204, d


def test_mcp_md_serve_line(tmp_path):
    """docs/mcp.md's `kiln serve` line, exactly as written (HOME a scratch directory holding
    the folder it names; KILN_LISTEN any free port, so it meets no other server): it starts
    (a first key made in ./kiln-data), serves /mcp, and stops on SIGTERM."""
    import signal
    text = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
    line = re.search(r"```sh\n(kiln serve [^\n]*)\n```", text).group(1)
    (tmp_path / "data").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env.update(HOME=str(tmp_path), PATH="%s:%s" % (KILN_BIN.parent, os.environ["PATH"]),
               KILN_LISTEN="127.0.0.1:0", KILN_SESSIONS="off")
    p = subprocess.Popen(["bash", "-c", "exec " + line], cwd=tmp_path, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = json.loads(p.stdout.readline())
        assert first["event"] == "listening", first
        key = (tmp_path / "kiln-data" / "api-key").read_text().strip()
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", first["port"], timeout=30)
        c.request("POST", "/mcp", body=json.dumps(INIT),
                  headers={"Authorization": "Bearer " + key, "Accept": ACCEPT,
                           "Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200 and SID_RE.match(r.getheader("Mcp-Session-Id") or ""), r.read()
        c.close()
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(60)
    assert rc == 0, p.stderr.read()


def test_stop_under_a_running_cell(serve_factory):
    """SIGTERM while a tools/call runs a cell: the session ends, the call gets its tool
    error (the session is gone), and the server exits 0."""
    need_root()
    import signal
    s = serve_factory("--sessions", "on", "--session-pool", "0", name="mcp-stop")
    m = Legacy(s)
    rid = m.rid()
    st = StreamedCall(s, m.headers(), {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                       "params": {"name": "execute_code",
                                                  "arguments": {"code": LONG_CELL},
                                                  "_meta": {"progressToken": 1}}})
    st.until(b'"message":"started"')
    s.signal(signal.SIGTERM)
    body = st.rest()
    st.sock.close()
    resp = [x for x in sse_messages(dechunk(body)) if x.get("id") == rid]
    assert s.wait(60) == 0, s.stderr()[-2000:]
    assert resp and resp[0]["result"]["isError"] is True, body[-2000:]


def test_a_refused_cell_names_the_argument(srv):
    """The session contract checks the cell's request; its refusal reaches the model
    with the member at fault, over HTTP as on stdio."""
    m = Legacy(srv)
    r, _ = m.call("execute_code", {"code": "1", "language": "ruby"})
    assert r["isError"] is True, r
    assert r["structuredContent"]["errors"][0]["pointer"] == "/language", r
    assert "/language" in text_of(r), r
    assert m.delete().status == 204
