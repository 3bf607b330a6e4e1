"""`kiln serve`: /v1/sessions (issue 17 item 7) - live interpreters behind the HTTP API,
each a `kiln session` child of the server, forked from the server's shared zygote, a pool
of ready ones taken by POST /v1/sessions: create/list/get/delete, state across cells, the
event stream (SSE), interrupt mid-cell keeps x, a cell's timeout, the memory limit
(memory_limit, then 410), idle expiry, files in (put) and out (stored file objects,
downloadable), a document, two tenants (no cross visibility), the pool refilling, SIGKILL
of a session's child (410 session_lost), a server restart (410 server_restart, files
kept), 409 when 16 cells wait, the settings. Every response is checked against
docs/openapi.json (serve_helpers.check_response). Sessions need root, as runs do.
"""
import json
import os
import signal
import threading
import time

import pytest

from serve_helpers import (check_response, need_root, request_on,  # noqa: F401
                           serve_factory, validate_component)

JSON = {"Content-Type": "application/json"}


@pytest.fixture(autouse=True)
def _root():
    need_root()


@pytest.fixture(scope="module")
def srv(serve_factory):
    return serve_factory("--sessions", "on", "--session-pool", "2", name="sessions")


def create(s, body=None, key="KEY1", expect=201):
    r = s.request("POST", "/v1/sessions", body=body if body is not None else {}, key=key)
    assert r.status == expect, r
    if expect == 201:
        validate_component(r.json, "Session")
        assert r.getheader("Location") == "/v1/sessions/" + r.json["id"]
    return r.json


def cell(s, sid, code, key="KEY1", expect=200, **extra):
    body = dict(code=code, **extra)
    r = s.request("POST", "/v1/sessions/%s/cells" % sid, body=body, key=key)
    assert r.status == expect, r
    return r.json


def sse_events(resp_iter):
    """Parse a text/event-stream body (an iterator of lines) into (event, data) pairs."""
    name = None
    for raw in resp_iter:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            yield name, json.loads(line[6:])
        elif line == "":
            name = None


class Stream:
    """A cell asked for as Server-Sent Events, read as it comes."""

    def __init__(self, s, sid, code, key="KEY1", **extra):
        self.conn = s.conn(timeout=60)
        body = json.dumps(dict(code=code, **extra)).encode()
        self.conn.request("POST", "/v1/sessions/%s/cells" % sid, body=body,
                          headers={"Authorization": "Bearer " + key, "Accept": "text/event-stream",
                                   "Content-Type": "application/json"})
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, self.resp.read()
        assert self.resp.getheader("Content-Type") == "text/event-stream"
        self.events = sse_events(iter(self.resp.readline, b""))

    def until(self, name):
        seen = []
        for ev, data in self.events:
            seen.append((ev, data))
            assert data["event"] == ev, (ev, data)
            if ev == name:
                return data, seen
        raise AssertionError("the stream ended before %r: %r" % (name, seen))

    def close(self):
        self.conn.close()


def log_events(s, name):
    return [e for e in s.log() if e.get("event") == name]


def wait_for(pred, timeout=20, what="the condition"):
    """Poll pred (a GET, a metric) until true: for the states no event announces."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        assert time.monotonic() < deadline, "timed out waiting for %s" % what
        time.sleep(0.05)


def metric(s, name):
    for line in s.metrics().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


# =========================================================================== life

def test_create_list_get_delete(srv):
    sess = create(srv)
    assert sess["status"] == "ready" and sess["cells"] == 0 and sess["ended"] is None
    assert sess["idle_timeout"] == 1200 and sess["lifetime"] == 43200
    assert sess["language"] == "python"
    r = srv.request("GET", "/v1/sessions/" + sess["id"])
    assert r.status == 200 and r.json["id"] == sess["id"], r
    r = srv.request("GET", "/v1/sessions")
    assert r.status == 200 and sess["id"] in [x["id"] for x in r.json["sessions"]], r
    r = srv.request("DELETE", "/v1/sessions/" + sess["id"])
    assert r.status == 204, r
    r = srv.request("GET", "/v1/sessions/" + sess["id"])
    assert r.status == 410 and r.error_code == "session_gone", r
    assert r.json["error"]["details"]["session"]["reason"] == "closed"
    r = srv.request("POST", "/v1/sessions/%s/cells" % sess["id"], body={"code": "1"})
    assert r.status == 410, r
    # an unknown id is a 404, as a malformed one is
    assert srv.request("GET", "/v1/sessions/" + "0" * 32).status == 404
    assert srv.request("GET", "/v1/sessions/nope").status == 404


def test_state_across_cells(srv):
    sid = create(srv)["id"]
    rec = cell(srv, sid, "x = 41\nprint('set')")
    validate_component(rec, "Cell")
    assert rec["status"] == "ok" and rec["stdout"]["text"] == "set\n", rec
    rec = cell(srv, sid, "print(x + 1)")
    assert rec["status"] == "ok" and rec["stdout"]["text"] == "42\n" and rec["cell"] == 2, rec
    rec = cell(srv, sid, "raise ValueError('no')")
    assert rec["status"] == "error" and rec["error"]["ename"] == "ValueError", rec
    assert srv.request("GET", "/v1/sessions/" + sid).json["cells"] == 3
    # a member a cell does not take is named
    r = srv.request("POST", "/v1/sessions/%s/cells" % sid, body={"code": "1", "bogus": 1})
    assert r.status == 422 and r.json["error"]["details"]["errors"][0]["pointer"] == "/bogus", r
    # a timeout above the session's wall limit: the contract's error, mapped to 422
    r = srv.request("POST", "/v1/sessions/%s/cells" % sid, body={"code": "1", "timeout": 10 ** 6})
    assert r.status == 422, r
    assert r.json["error"]["details"]["errors"][0]["pointer"] == "/timeout", r


def test_event_stream(srv):
    sid = create(srv)["id"]
    st = Stream(srv, sid, "import sys\nprint('a')\nprint('b', file=sys.stderr)\n6 * 7")
    rec, seen = st.until("cell")
    st.close()
    names = [n for n, _ in seen]
    assert names[0] == "started" and names[-1] == "cell", names
    assert "stdout" in names and "stderr" in names, names
    out = "".join(d["text"] for n, d in seen if n == "stdout")
    assert out == "a\n" and rec["status"] == "ok", seen
    assert all("id" not in d for _, d in seen)
    validate_component({k: v for k, v in rec.items() if k != "event"}, "Cell")


def test_interrupt_keeps_x(srv):
    sid = create(srv)["id"]
    cell(srv, sid, "x = 5")
    # Interrupted once it runs: its first output says so.
    st = Stream(srv, sid, "import time\nprint('running', flush=True)\ntime.sleep(60)")
    st.until("stdout")
    assert srv.request("GET", "/v1/sessions/" + sid).json["status"] == "busy"
    r = srv.request("POST", "/v1/sessions/%s/interrupt" % sid)
    assert r.status == 200 and r.json == {"interrupted": True}, r
    rec, _ = st.until("cell")
    st.close()
    assert rec["status"] == "interrupted", rec
    assert cell(srv, sid, "print(x)")["stdout"]["text"] == "5\n"
    r = srv.request("POST", "/v1/sessions/%s/interrupt" % sid)
    assert r.status == 200 and r.json == {"interrupted": False}, r


def test_cell_timeout(srv):
    sid = create(srv)["id"]
    cell(srv, sid, "y = 'kept'")
    t0 = time.monotonic()
    rec = cell(srv, sid, "import time\ntime.sleep(30)", timeout=0.5)
    assert rec["status"] == "timeout" and time.monotonic() - t0 < 10, rec
    assert cell(srv, sid, "print(y)")["stdout"]["text"] == "kept\n"


def test_memory_limit_then_410(srv):
    sess = create(srv, {"limits": {"memory_bytes": 128 << 20}})
    assert sess["limits"]["memory_bytes"] == 128 << 20
    rec = cell(srv, sess["id"], "a = []\nwhile True:\n    a.append(bytearray(16 << 20))")
    assert rec["status"] == "memory_limit", rec
    r = srv.request("POST", "/v1/sessions/%s/cells" % sess["id"], body={"code": "1"})
    assert r.status == 410 and r.error_code == "session_gone", r
    assert r.json["error"]["details"]["session"]["reason"] == "memory_limit", r
    assert srv.request("GET", "/v1/sessions/" + sess["id"]).status == 410


def test_idle_expiry(srv):
    sid = create(srv, {"idle_timeout": 1})["id"]
    assert cell(srv, sid, "1")["status"] == "ok"
    r = wait_for(lambda: (lambda r: r if r.status == 410 else None)(
        srv.request("GET", "/v1/sessions/" + sid)), what="the idle timeout")
    assert r.json["error"]["details"]["session"]["reason"] == "idle_timeout", r
    listed = [x for x in srv.request("GET", "/v1/sessions").json["sessions"] if x["id"] == sid]
    assert listed and listed[0]["status"] == "expired", listed


def test_bad_requests(srv):
    r = srv.request("POST", "/v1/sessions", body={"limits": {"memory_bytes": 1 << 50}})
    assert r.status == 422 and r.error_code == "invalid_session", r
    assert r.json["error"]["details"]["errors"][0]["pointer"] == "/limits/memory_bytes"
    r = srv.request("POST", "/v1/sessions", body={"lifetime": 13 * 3600})
    assert r.status == 422 and r.json["error"]["details"]["errors"][0]["pointer"] == "/lifetime", r
    r = srv.request("POST", "/v1/sessions", body={"language": "ruby"})
    assert r.status == 422 and r.json["error"]["details"]["errors"][0]["pointer"] == "/language", r
    r = srv.request("POST", "/v1/sessions", body={"inputs": ["0" * 32]})
    assert r.status == 404, r


# =========================================================================== files

def test_files_in_and_out(srv):
    data = b"region,sales\nnorth,3\nsouth,4\n"
    f = srv.upload("sales.csv", data, "text/csv")
    sid = create(srv)["id"]
    r = srv.request("POST", "/v1/sessions/%s/files" % sid, body={"file_id": f["id"]})
    assert r.status == 201 and r.json["file"]["name"] == "sales.csv", r
    r = srv.request("POST", "/v1/sessions/%s/files" % sid,
                    body={"file_id": f["id"], "name": "copy.csv"})
    assert r.status == 201 and r.json["file"]["bytes"] == len(data), r
    r = srv.request("GET", "/v1/sessions/%s/files" % sid)
    assert r.status == 200 and {x["name"] for x in r.json["files"]} == {"sales.csv", "copy.csv"}, r
    rec = cell(srv, sid, "import pandas as pd\ndf = pd.read_csv('/mnt/data/sales.csv')\n"
                         "df['double'] = df.sales * 2\ndf.to_csv('/mnt/data/out.csv', index=False)\n"
                         "print(df.sales.sum())")
    assert rec["status"] == "ok" and rec["stdout"]["text"] == "7\n", rec
    [out] = [x for x in rec["files"] if x["name"] == "out.csv"]
    assert out["file"]["source"] == "output" and out["file"]["media_type"] == "text/csv", out
    body = srv.download(out["file"]["id"])
    assert body == b"region,sales,double\nnorth,3,6\nsouth,4,8\n"
    assert srv.request("GET", "/v1/files/" + out["file"]["id"]).json["sha256"] == out["sha256"]
    # another tenant's file id cannot be put
    r = srv.request("POST", "/v1/sessions/%s/files" % sid, body={"file_id": f["id"]}, key="KEY2")
    assert r.status == 404, r


def test_inputs_at_create(srv):
    f = srv.upload("in.txt", b"hello\n", "text/plain")
    for body in ({"inputs": [f["id"]]},                                      # from the pool
                 {"inputs": [f["id"]], "limits": {"processes": 32}}):       # a fresh one
        sid = create(srv, body)["id"]
        rec = cell(srv, sid, "print(open('/mnt/data/in.txt').read(), end='')")
        assert rec["stdout"]["text"] == "hello\n", (body, rec)


def test_document(srv):
    from docx import Document
    import io
    sid = create(srv)["id"]
    rec = cell(srv, sid, "import kiln\nd = kiln.Document()\nd.heading('Quarterly')\n"
                         "d.save('r.docx')")
    assert rec["status"] == "ok", rec
    [doc] = [x for x in rec["files"] if x["name"].endswith("r.docx")]
    assert doc["source"] == "document" and doc["file"]["source"] == "document", doc
    body = srv.download(doc["file"]["id"])
    assert [p.text for p in Document(io.BytesIO(body)).paragraphs if p.text] == ["Quarterly"]


# =========================================================================== tenants, pool

def test_two_tenants(srv):
    a = create(srv, key="KEY1")["id"]
    b = create(srv, key="KEY2")["id"]
    assert srv.request("GET", "/v1/sessions/" + a, key="KEY2").status == 404
    assert srv.request("POST", "/v1/sessions/%s/cells" % a, body={"code": "1"},
                       key="KEY2").status == 404
    assert srv.request("DELETE", "/v1/sessions/" + a, key="KEY2").status == 404
    assert a not in [x["id"] for x in srv.request("GET", "/v1/sessions", key="KEY2").json["sessions"]]
    results = {}

    def run(sid, key, value):
        cell(srv, sid, "secret = %r\nopen('/mnt/data/mine.txt', 'w').write(secret)" % value, key=key)
        results[key] = cell(srv, sid, "import os\nprint(secret, sorted(os.listdir('/mnt/data')))",
                            key=key)["stdout"]["text"]

    ts = [threading.Thread(target=run, args=(a, "KEY1", "alpha")),
          threading.Thread(target=run, args=(b, "KEY2", "beta"))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert results == {"KEY1": "alpha ['mine.txt']\n", "KEY2": "beta ['mine.txt']\n"}, results


def test_pool_refills_and_latency(srv):
    """Sessions with the default limits come from the pool, and it refills."""
    wait_for(lambda: metric(srv, "kiln_session_pool_ready") == 2, what="a full pool")
    before = len(log_events(srv, "session_created"))
    for _ in range(12):
        wait_for(lambda: metric(srv, "kiln_session_pool_ready") == 2, what="the pool to refill")
        c = srv.conn()
        r = request_on(c, "POST", "/v1/sessions", body={}, key="KEY1", check=False)
        sid = json.loads(r.body)["id"]
        r2 = request_on(c, "POST", "/v1/sessions/%s/cells" % sid, body={"code": "print(1)"},
                        key="KEY1", check=False)
        c.close()
        assert r.status == 201 and r2.status == 200 and json.loads(r2.body)["stdout"]["text"] == "1\n"
        assert srv.request("DELETE", "/v1/sessions/" + sid).status == 204
    created = wait_for(lambda: (lambda c: c if len(c) >= 12 else None)(
        log_events(srv, "session_created")[before:]), what="twelve session_created events")
    assert len(created) == 12 and all(e["pooled"] for e in created), created
    # how long it took is bench/'s to say (make bench BENCH=session), never a test's
    m = srv.metrics()
    assert 'kiln_session_cells_total{outcome="ok"}' in m
    assert "kiln_session_cell_duration_seconds_count" in m and "kiln_sessions_open" in m


def test_busy_409(srv):
    sid = create(srv)["id"]
    st = Stream(srv, sid, "import time\nprint('running', flush=True)\ntime.sleep(60)")
    st.until("stdout")
    conns, results = [], []

    def queued(i):
        c = srv.conn()
        conns.append(c)
        r = request_on(c, "POST", "/v1/sessions/%s/cells" % sid, body={"code": "n = %d" % i},
                       key="KEY1")
        results.append(r.status)

    threads = [threading.Thread(target=queued, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    wait_for(lambda: srv.request("GET", "/v1/sessions/" + sid).json["cells_waiting"] == 16,
             what="16 cells waiting")
    r = srv.request("POST", "/v1/sessions/%s/cells" % sid, body={"code": "1"})
    assert r.status == 409, r
    assert r.error_code == "session_busy", r
    assert srv.request("POST", "/v1/sessions/%s/interrupt" % sid).json == {"interrupted": True}
    rec, _ = st.until("cell")
    st.close()
    for t in threads:
        t.join(60)
    assert rec["status"] == "interrupted" and results == [200] * 16, (rec, results)


def test_sigkill_of_the_child_is_410(srv):
    sid = create(srv)["id"]
    # the event is on the server's stdout before the reply, but this test's reader thread
    # may take it off the pipe after the reply has come: wait for it, never assume it
    [ev] = wait_for(lambda: [e for e in log_events(srv, "session_created") if e["session"] == sid],
                    what="the session_created event")
    os.kill(ev["pid"], signal.SIGKILL)
    r = wait_for(lambda: (lambda r: r if r.status == 410 else None)(
        srv.request("GET", "/v1/sessions/" + sid)), what="the session to be lost")
    ended = r.json["error"]["details"]["session"]
    assert ended["reason"] == "session_lost" and "signal 9" in ended["message"], ended


def test_zygote_restarts(srv):
    """The shared zygote killed: the server starts another, and sessions keep working."""
    [first] = log_events(srv, "zygote_started")[-1:]
    os.kill(first["pid"], signal.SIGKILL)
    wait_for(lambda: any(e["pid"] != first["pid"] for e in log_events(srv, "zygote_started")),
             what="a new zygote")
    assert [e for e in log_events(srv, "zygote_exited") if e["pid"] == first["pid"]]
    sid = create(srv)["id"]
    assert cell(srv, sid, "print(2 + 2)")["stdout"]["text"] == "4\n"
    wait_for(lambda: metric(srv, "kiln_session_pool_ready") == 2, what="the pool from the new zygote")
    sid = create(srv)["id"]
    assert cell(srv, sid, "import numpy\nprint(int(numpy.arange(4).sum()))")["stdout"]["text"] == "6\n"


# =========================================================================== settings, restart

def test_server_restart_is_410_and_keeps_files(serve_factory):
    s = serve_factory("--sessions", "on", "--session-pool", "1", name="restart")
    sid = create(s)["id"]
    rec = cell(s, sid, "open('/mnt/data/kept.txt', 'w').write('kept')")
    [f] = rec["files"]
    s.stop()
    s.start()
    r = s.request("GET", "/v1/sessions/" + sid)
    assert r.status == 410 and r.json["error"]["details"]["session"]["reason"] == "server_restart", r
    r = s.request("POST", "/v1/sessions/%s/cells" % sid, body={"code": "1"})
    assert r.status == 410, r
    assert s.download(f["file"]["id"]) == b"kept"
    assert s.request("GET", "/v1/sessions/" + sid, key="KEY2").status == 404


def test_limits_per_tenant_and_off(serve_factory):
    s = serve_factory("--sessions", "on", "--session-pool", "0", "--max-sessions-per-tenant", "1",
                      name="limited")
    create(s)
    r = s.request("POST", "/v1/sessions", body={})
    assert r.status == 429 and r.error_code == "too_many_sessions", r
    create(s, key="KEY2")
    off = serve_factory("--sessions", "off", name="off")
    r = off.request("POST", "/v1/sessions", body={})
    assert r.status == 503 and r.error_code == "sessions_disabled", r
    assert not log_events(off, "zygote_started")
