"""clients/python/kiln_client.py (issue 18 item 4) against a live `kiln serve`.

One module server (sessions on when the tests run as root; off under ASan, where only the
smoke test runs), driven only through the client: files (upload from a path, bytes and a
file object; list and page; download to bytes and to a path, byte ranges; signed links
fetched without the key; delete), a render read back with openpyxl (values exact), a bad
spec raising InvalidSpec with every pointer, a run, a session (two cells sharing a
variable, the streamed events in order, an interrupt of a long cell seen from its first
output, files put and got, close then SessionGone, the context manager), and the error
classes: every code docs/openapi.json and docs/serve.md document has its class, and the
server's real replies (401, 404, 410 gone, 416, 403, 422s, 429 too_many_sessions, 503
sessions_disabled) raise the class their code names. Then docs/assistants.md: its shell
block run as written (the three worked loops of clients/examples/ against the module's
server: each next request's tool-result messages carry the recorded call ids, a workbook
openpyxl reads back and the cell's output text and figure), its Python snippet, its config
snippets, the recorded turns against docs/tools/, and the results of failures (a bad spec,
a failing cell, an ended session) in each vendor's form.

The file starts sandboxes (a run, sessions): like every file outside SANDBOX_FILES it is an
xdist group of its own (conftest.py). Under ASan (SANITIZED) only test_smoke_under_asan
runs: it takes the C server through the client's main paths; the rest checks Python code,
which the plain run has checked.
"""
import hashlib
import io
import os
import re
import socket
import sys
import threading
import time

import pytest

from conftest import REPO, SANITIZED
from serve_helpers import KEYS, need_root, serve_factory  # noqa: F401 (fixture)

sys.path.insert(0, str(REPO / "clients" / "python"))
import kiln_client  # noqa: E402
import kiln_tools  # noqa: E402
from kiln_client import Client  # noqa: E402

try:
    import openpyxl
except ImportError as e:  # pragma: no cover - a clear failure, not a skip
    raise RuntimeError("openpyxl is required: apt-get install python3-openpyxl (%s)" % e)

python_only = pytest.mark.skipif(SANITIZED, reason="the Python client's own checks run in the "
                                 "plain build's run; under ASan the smoke test drives the server")


def is_root():
    return os.geteuid() == 0


@pytest.fixture(scope="module")
def srv(serve_factory):
    sessions = "on" if is_root() and not SANITIZED else "off"
    return serve_factory("--sessions", sessions, "--session-pool", "1",
                         "--max-sessions-per-tenant", "3", name="client")


@pytest.fixture(scope="module")
def kiln(srv):
    return Client("http://" + srv.host, KEYS["alpha"], timeout=120)


SPEC = {"sheets": [{"name": "Figures", "rows": [["Region", "Units", "Price", "Open"],
                                               ["North", 12, 3.5, True],
                                               ["South", 7, 0.25, False]]}]}


# =========================================================================== under ASan too

def test_smoke_under_asan(kiln, srv, tmp_path):
    """The C server's main paths through the client: upload, list, download (bytes equal),
    a render, a bad spec, a wrong key, a missing file, delete."""
    assert kiln.health() == {"status": "ok"}
    data = os.urandom(3000) + b"\x00end"
    f = kiln.upload(data, "blob.bin", "application/octet-stream")
    assert f["bytes"] == len(data) and f["sha256"] == hashlib.sha256(data).hexdigest(), f
    assert f["id"] in [x["id"] for x in kiln.list_files()["files"]]
    assert kiln.download(f["id"]) == data
    doc = kiln.render("xlsx", SPEC, filename="smoke.xlsx")
    assert doc["filename"] == "smoke.xlsx" and doc["source"] == "document", doc
    body = kiln.download(doc["id"])
    assert body[:2] == b"PK" and len(body) == doc["bytes"]
    with pytest.raises(kiln_client.InvalidSpec) as e:
        kiln.render("xlsx", {"sheets": [{"name": "S", "rows": "no"}]})
    assert e.value.status == 422 and e.value.pointers == ["/sheets/0/rows"], e.value
    with pytest.raises(kiln_client.Unauthorized) as e:
        Client("http://" + srv.host, "not-a-key").list_files()
    assert e.value.status == 401 and e.value.code == "unauthorized"
    kiln.delete_file(f["id"])
    with pytest.raises(kiln_client.NotFound):
        kiln.get_file(f["id"])


# =========================================================================== files

@python_only
def test_upload_list_download_round_trip(kiln, tmp_path):
    src = tmp_path / "sales.csv"
    src.write_bytes(b"region,units\nnorth,12\nsouth,7\n")
    from_path = kiln.upload(src)
    assert from_path["filename"] == "sales.csv" and from_path["media_type"] == "text/csv"
    assert from_path["source"] == "input" and from_path["bytes"] == src.stat().st_size
    raw = bytes(range(256)) * 40
    from_bytes = kiln.upload(raw, "bytes.bin", media_type="application/x-test")
    assert from_bytes["media_type"] == "application/x-test"
    with open(src, "rb") as fh:
        fh.read(7)                                  # a file object: from where it stands
        from_fileobj = kiln.upload(fh, "tail.csv")
    assert kiln.download(from_fileobj["id"]) == src.read_bytes()[7:]
    with pytest.raises(ValueError):
        kiln.upload(b"x")                           # bytes need a name

    # list: newest first, paged; iter_files walks every page
    ids = [from_fileobj["id"], from_bytes["id"], from_path["id"]]
    page = kiln.list_files(limit=2)
    assert page["limit"] == 2 and [f["id"] for f in page["files"]] == ids[:2], page
    page2 = kiln.list_files(limit=2, offset=2)
    assert page2["files"][0]["id"] == ids[2] and page2["total"] == page["total"]
    every = [f["id"] for f in kiln.iter_files(page_size=1)]
    assert every[:3] == ids and len(every) == page["total"]
    assert kiln.get_file(from_bytes["id"]) == from_bytes

    # downloads: bytes, to a path (nothing else left beside it), ranges
    assert kiln.download(from_bytes["id"]) == raw
    out = tmp_path / "dl" / "copy.bin"
    out.parent.mkdir()
    assert kiln.download(from_bytes["id"], out) == str(out)
    assert out.read_bytes() == raw and os.listdir(out.parent) == ["copy.bin"]
    assert kiln.download(from_bytes["id"], range=(10, 19)) == raw[10:20]
    assert kiln.download(from_bytes["id"], range=(10000, None)) == raw[10000:]
    assert kiln.download(from_bytes["id"], range="bytes=-5") == raw[-5:]
    with pytest.raises(kiln_client.RangeNotSatisfiable) as e:
        kiln.download(from_bytes["id"], range=(len(raw) + 10, None))
    assert e.value.status == 416

    # a signed link: fetched with no key at all, by its URL or its path
    link = kiln.link(from_bytes["id"], expires_in=600)
    assert set(link) == {"url", "path", "expires_at"}, link
    keyless = Client(kiln.base_url, None)
    assert keyless.fetch(link["url"]) == raw and keyless.fetch(link["path"]) == raw
    keyless.fetch(link["url"], tmp_path / "via-link.bin")
    assert (tmp_path / "via-link.bin").read_bytes() == raw
    with pytest.raises(kiln_client.Unauthorized):
        keyless.download(from_bytes["id"])
    forged = re.sub(r"signature=([0-9a-f])", lambda m: "signature=" + ("1" if m.group(1) != "1" else "2"),
                    link["path"])
    with pytest.raises(kiln_client.InvalidSignature) as e:
        keyless.fetch(forged)
    assert isinstance(e.value, kiln_client.Forbidden) and e.value.status == 403

    for f in (from_path, from_bytes, from_fileobj):
        kiln.delete_file(f)                         # a file object works where an id does
    with pytest.raises(kiln_client.NotFound) as e:
        kiln.download(from_bytes["id"])
    assert e.value.status == 404 and e.value.request_id


@python_only
def test_render_xlsx_read_back(kiln, tmp_path):
    doc = kiln.render("xlsx", SPEC, filename="figures.xlsx")
    assert doc["media_type"] == ("application/vnd.openxmlformats-officedocument"
                                 ".spreadsheetml.sheet"), doc
    path = kiln.download(doc, tmp_path / "figures.xlsx")
    ws = openpyxl.load_workbook(path)["Figures"]
    assert [[c.value for c in row] for row in ws.iter_rows()] == SPEC["sheets"][0]["rows"]
    # a spec that names an upload by its id, listed in inputs
    csv = kiln.upload(b"city,people\nOslo,709000\nBergen,291000\n", "cities.csv")
    spec = {"sheets": [{"name": "Cities", "data": {"path": csv["id"], "format": "csv",
                                                   "header": True}}]}
    doc = kiln.render("xlsx", spec, filename="cities.xlsx", inputs=[csv])
    ws = openpyxl.load_workbook(io.BytesIO(kiln.download(doc["id"])))["Cities"]
    assert [[c.value for c in row] for row in ws.iter_rows()] == [
        ["city", "people"], ["Oslo", 709000], ["Bergen", 291000]]
    # format from the file name
    assert kiln.render(None, SPEC, filename="again.xlsx")["filename"] == "again.xlsx"


@python_only
def test_bad_spec_raises_invalid_spec_with_every_pointer(kiln):
    bad = {"sheets": [{"name": "A", "rows": [[1]], "bogus": 1},
                      {"name": "B" * 40, "rows": [[{"nope": 1}]]}]}
    with pytest.raises(kiln_client.InvalidSpec) as e:
        kiln.render("xlsx", bad)
    err = e.value
    assert isinstance(err, kiln_client.InvalidRequest) and isinstance(err, kiln_client.KilnError)
    assert err.status == 422 and err.code == "invalid_spec" and err.message
    assert len(err.errors) >= 2 and err.details["more_errors"] == 0, err.errors
    assert all(set(x) >= {"pointer", "code", "message"} for x in err.errors), err.errors
    assert err.pointers == [x["pointer"] for x in err.errors]
    assert "/sheets/0/bogus" in err.pointers, err.pointers
    assert any(p.startswith("/sheets/1/") for p in err.pointers), err.pointers
    assert "/sheets/0/bogus" in str(err)            # the message lists pointer: message
    # a path that is not one of the inputs: the error at its pointer
    with pytest.raises(kiln_client.InvalidSpec) as e:
        kiln.render("xlsx", {"sheets": [{"name": "S", "data": {"path": "data.csv"}}]})
    assert e.value.pointers == ["/sheets/0/data/path"], e.value.errors


# =========================================================================== errors

DOCUMENTED_REASONS = {"server_restart", "closed", "idle_timeout", "lifetime", "session_lost"}


@python_only
def test_every_documented_code_has_its_class():
    import json
    api = json.loads((REPO / "docs" / "openapi.json").read_text())
    codes = set(api["components"]["schemas"]["Error"]["properties"]["error"]["properties"]
                ["code"]["enum"])
    serve_md = (REPO / "docs" / "serve.md").read_text()
    in_serve = {c for _s, c in re.findall(r"`([1-5][0-9]{2}) ([a-z_]+)`", serve_md)} - DOCUMENTED_REASONS
    assert in_serve <= codes, in_serve - codes
    assert set(kiln_client.ERROR_CLASSES) == codes, set(kiln_client.ERROR_CLASSES) ^ codes
    classes = list(kiln_client.ERROR_CLASSES.values())
    assert len(set(classes)) == len(classes), "two codes share a class"
    for code, cls in kiln_client.ERROR_CLASSES.items():
        assert issubclass(cls, kiln_client.KilnError) and cls is not kiln_client.KilnError
        assert code in cls.__doc__, (code, cls)
        assert cls.__name__ in kiln_client.__all__, cls


@python_only
def test_error_from_body():
    e = kiln_client.error_from_body(
        429, b'{"error": {"code": "too_many_requests", "message": "full", "details": {}}}',
        {"Retry-After": "3", "X-Request-Id": "ab12"})
    assert type(e) is kiln_client.RateLimited and e.retry_after == 3 and e.request_id == "ab12"
    e = kiln_client.error_from_body(400, {"error": {"code": "invalid_json", "message": "bad",
                                                    "details": {"line": 2, "column": 5}}})
    assert isinstance(e, kiln_client.InvalidJSON) and (e.line, e.column) == (2, 5)
    e = kiln_client.error_from_body(400, {"error": {"code": "invalid_request", "message": "m",
                                                    "details": {"pointer": "/limit"}}})
    assert e.pointers == ["/limit"]
    # a code this client does not know: the class of its status; a body not the API's shape
    e = kiln_client.error_from_body(409, {"error": {"code": "brand_new", "message": "m",
                                                    "details": {}}})
    assert type(e) is kiln_client.Conflict and e.code == "brand_new"
    e = kiln_client.error_from_body(400, b"<html><body>Bad request</body></html>")
    assert type(e) is kiln_client.InvalidRequest and e.code is None and "Bad request" in e.message
    e = kiln_client.error_from_body(502, b"")
    assert type(e) is kiln_client.ServerError and e.status == 502


@python_only
def test_errors_from_the_server(kiln, srv, serve_factory):
    with pytest.raises(kiln_client.Unauthorized):
        Client(kiln.base_url, None).list_files()
    with pytest.raises(kiln_client.InvalidRequest) as e:
        kiln.list_files(limit=5000)
    assert e.value.status == 400 and e.value.code == "invalid_request"
    with pytest.raises(kiln_client.NotFound):
        kiln.get_file("0" * 32)
    with pytest.raises(kiln_client.NotFound):
        Client("http://" + srv.host, KEYS["beta"]).get_file(kiln.upload(b"a", "a.txt"))
    # nothing listens there: ConnectionFailed, the OSError as its cause
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(kiln_client.ConnectionFailed) as e:
        Client("http://127.0.0.1:%d" % port, "k", timeout=5).health()
    assert e.value.status is None and isinstance(e.value.__cause__, OSError)
    # an expired file is Gone with its time; a server without sessions says so
    short = serve_factory("--ttl", "1", name="short")
    other = Client("http://" + short.host, KEYS["alpha"])
    f = other.upload(b"soon gone", "soon.txt")
    deadline = time.monotonic() + 30
    while True:
        try:
            other.get_file(f["id"])
        except kiln_client.Gone as gone:
            assert type(gone) is kiln_client.Gone and gone.status == 410, gone
            assert gone.expired_at == f["expires_at"], (gone.details, f)
            break
        assert time.monotonic() < deadline, "the file did not expire"
        time.sleep(0.2)
    with pytest.raises(kiln_client.SessionsDisabled) as e:
        other.create_session()
    assert isinstance(e.value, kiln_client.Unavailable) and e.value.status == 503


# =========================================================================== runs

@python_only
def test_run(kiln):
    need_root()
    data = kiln.upload(b"n\n1\n2\n3\n", "n.csv")
    code = ("import sys, pandas as pd\n"
            "total = int(pd.read_csv('/mnt/data/n.csv').n.sum())\n"
            "open('/mnt/data/total.txt', 'w').write(str(total))\n"
            "print(sys.argv[1:], total)\n")
    r = kiln.run(code, inputs=[data], args=["a", "b c"], limits={"wall_seconds": 30})
    assert r["status"] == "ok" and r["stdout"]["text"] == "['a', 'b c'] 6\n", r
    [out] = [f for f in r["files"] if f["name"] == "total.txt"]
    assert kiln.download(out["file"]["id"]) == b"6"
    r = kiln.run("echo $((6 * 7)); exit 3", language="bash")
    assert r["status"] != "ok" and r["exit_code"] == 3 and r["stdout"]["text"] == "42\n", r
    with pytest.raises(kiln_client.InvalidRun) as e:
        kiln.run("1", limits={"wall_seconds": 10 ** 5})
    assert e.value.pointers == ["/limits/wall_seconds"], e.value.errors


# =========================================================================== sessions

@pytest.fixture
def session(kiln):
    need_root()
    s = kiln.create_session()
    yield s
    s.close()


@python_only
def test_session_two_cells_share_a_variable(session, kiln):
    assert session.last_info["status"] == "ready" and session.id in repr(session)
    first = session.run_cell("x = 41\nprint('set')")
    assert first["status"] == "ok" and first["stdout"]["text"] == "set\n", first
    second = session.run_cell("print(x + 1)")
    assert second["stdout"]["text"] == "42\n" and second["cell"] == 2, second
    failed = session.run_cell("raise ValueError('no')")
    assert failed["status"] == "error" and failed["error"]["ename"] == "ValueError", failed
    info = session.info()
    assert info["id"] == session.id and info["cells"] == 3 and info["status"] == "ready", info
    assert session.id in [s["id"] for s in kiln.list_sessions()]
    # the same session from its id alone
    assert kiln.session(session.id).run_cell("x")["outputs"][0]["data"]["text/plain"] == "41"
    bash = session.run_cell("echo $((2 + 3))", language="bash")
    assert bash["stdout"]["text"] == "5\n", bash


@python_only
def test_session_streamed_events_in_order(session):
    session.run_cell("x = 41")
    code = ("import sys\n"
            "for i in range(3):\n"
            "    print(i, flush=True)\n"
            "print('warn', file=sys.stderr, flush=True)\n"
            "x + 1")
    events = list(session.execute(code))
    names = [e["event"] for e in events]
    assert names[0] == "started" and names[-1] == "cell", names
    assert names.count("cell") == 1 and "result" in names and "stderr" in names, names
    last_stdout = max(i for i, n in enumerate(names) if n == "stdout")
    assert last_stdout < names.index("result"), names
    out = "".join(e["text"] for e in events if e["event"] == "stdout")
    assert out == "0\n1\n2\n", events
    record = events[-1]
    assert record["status"] == "ok" and record["stdout"]["text"] == "0\n1\n2\n", record
    result = [e for e in events if e["event"] == "result"][0]
    assert result["data"]["text/plain"] == "42"
    assert all(e.get("cell") == record["cell"] for e in events[:-1]), events
    # a cell the session refuses (its `rejected` event in the stream) raises what the
    # plain reply does
    with pytest.raises(kiln_client.InvalidRequest) as streamed:
        list(session.execute("1", timeout=10 ** 6))
    with pytest.raises(kiln_client.InvalidRequest) as plain:
        session.run_cell("1", timeout=10 ** 6)
    assert streamed.value.pointers == ["/timeout"], streamed.value
    assert (streamed.value.status, streamed.value.code, streamed.value.errors) == (
        plain.value.status, plain.value.code, plain.value.errors)


@python_only
def test_session_interrupt_a_long_cell(session):
    session.run_cell("x = 5")
    seen = []
    for event in session.execute("import time\nprint('running', flush=True)\ntime.sleep(120)"):
        seen.append(event)
        if event["event"] == "stdout":
            assert session.info()["status"] == "busy"
            assert session.interrupt() is True     # while the cell still runs
    assert seen[-1]["event"] == "cell" and seen[-1]["status"] == "interrupted", seen
    assert seen[-1]["error"]["ename"] == "KeyboardInterrupt", seen[-1]
    assert session.run_cell("print(x)")["stdout"]["text"] == "5\n"
    assert session.interrupt() is False


@python_only
def test_session_files_put_get(session, kiln, tmp_path):
    src = tmp_path / "in.csv"
    src.write_bytes(b"a,b\n1,2\n3,4\n")
    put = session.put(src)
    assert put["name"] == "in.csv" and put["bytes"] == src.stat().st_size, put
    stored = kiln.upload(b"stored bytes", "stored.txt")
    assert session.put(file_id=stored, name="renamed.txt")["name"] == "renamed.txt"
    assert session.put(b"\x00\x01raw", name="raw.bin")["bytes"] == 5
    with pytest.raises(ValueError):
        session.put()
    names = {f["name"]: f for f in session.files()}
    assert set(names) == {"in.csv", "renamed.txt", "raw.bin"}, names
    assert names["in.csv"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert session.get("in.csv") == src.read_bytes()
    assert session.get("renamed.txt") == b"stored bytes"
    assert session.get("raw.bin", tmp_path / "raw.bin") == str(tmp_path / "raw.bin")
    assert (tmp_path / "raw.bin").read_bytes() == b"\x00\x01raw"
    rec = session.run_cell("import pandas as pd\ndf = pd.read_csv('/mnt/data/in.csv')\n"
                           "df['c'] = df.a + df.b\ndf.to_csv('/mnt/data/out.csv', index=False)")
    assert rec["status"] == "ok", rec
    [out] = [f for f in rec["files"] if f["name"] == "out.csv"]
    want = b"a,b,c\n1,2,3\n3,4,7\n"
    assert kiln.download(out["file"]["id"]) == want
    assert session.get("out.csv") == want
    # a file made by a cell this object did not see (another Session object for the id)
    kiln.session(session.id).run_cell("open('/mnt/data/seen.txt', 'w').write('elsewhere')")
    assert session.get("seen.txt") == b"elsewhere"
    with pytest.raises(kiln_client.NotFound):
        session.get("missing.txt")


@python_only
def test_session_close_then_gone(kiln):
    need_root()
    with kiln.create_session() as s:
        assert s.run_cell("y = 1")["status"] == "ok"
    for call in (s.info, lambda: s.run_cell("y"), lambda: list(s.execute("y")), s.files,
                 s.interrupt):
        with pytest.raises(kiln_client.SessionGone) as e:
            call()
        assert e.value.status == 410 and e.value.reason == "closed", e.value.details
        assert isinstance(e.value, kiln_client.Gone)
    s.close()                                       # closing again does nothing
    listed = [x for x in kiln.list_sessions() if x["id"] == s.id]
    assert listed and listed[0]["status"] == "closed", listed
    with pytest.raises(kiln_client.NotFound):
        kiln.session("0" * 32).info()
    with pytest.raises(kiln_client.InvalidSession) as e:
        kiln.create_session(limits={"memory_bytes": 1 << 50})
    assert e.value.pointers == ["/limits/memory_bytes"], e.value.errors


@python_only
def test_too_many_sessions(srv):
    """The module server allows 3 sessions a tenant: a fourth is TooManySessions, a
    RateLimited with the server's Retry-After."""
    need_root()
    gamma = Client("http://" + srv.host, KEYS["gamma"])
    opened = [gamma.create_session() for _ in range(3)]
    try:
        with pytest.raises(kiln_client.TooManySessions) as e:
            gamma.create_session()
        assert isinstance(e.value, kiln_client.RateLimited) and e.value.status == 429
        assert isinstance(e.value.retry_after, int), e.value.retry_after
    finally:
        for s in opened:
            s.close()


@python_only
def test_session_busy_from_threads(srv):
    """Sixteen cells may wait behind the running one: the eighteenth is SessionBusy. Each
    request has its own connection, so one Client serves every thread."""
    need_root()
    beta = Client("http://" + srv.host, KEYS["beta"])
    with beta.create_session() as s:
        events = s.execute("import time\nprint('go', flush=True)\ntime.sleep(120)")
        for ev in events:
            if ev["event"] == "stdout":
                break
        results, errors = [], []

        def queued():
            try:
                results.append(s.run_cell("1"))
            except kiln_client.KilnError as e:
                errors.append(e)

        threads = [threading.Thread(target=queued) for _ in range(16)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while s.info()["cells_waiting"] < 16:
            assert time.monotonic() < deadline, s.info()
            time.sleep(0.05)
        with pytest.raises(kiln_client.SessionBusy) as e:
            s.run_cell("2")
        assert e.value.status == 409 and isinstance(e.value, kiln_client.Conflict)
        assert s.interrupt() is True
        rest = list(events)
        assert rest[-1]["status"] == "interrupted", rest
        for t in threads:
            t.join(60)
        assert not errors and len(results) == 16 and all(r["status"] == "ok" for r in results)


# =========================================================================== docs/assistants.md

ASSISTANTS_MD = REPO / "docs" / "assistants.md"
EXAMPLES = REPO / "clients" / "examples"
RECORDED = EXAMPLES / "recorded"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
ID_LINK = re.compile(r"\(\d+ bytes\): (http://\S+/v1/files/([0-9a-f]{32})/content\S*)")
UNITS = [["Region", "Units"], ["North", 412], ["South", 298], ["East", 377], ["West", 251],
         ["Total", "=SUM(B2:B5)"]]

def doc_blocks(lang):
    return [body for found, body in FENCE.findall(ASSISTANTS_MD.read_text(encoding="utf-8"))
            if found == lang]


def json_load(path):
    import json
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def docs_dir(tmp_path_factory, srv):
    """A directory laid out as the docs assume (the checkout's clients/, kiln-data/api-key
    holding a key of the module's server, Debian's python3 first on PATH)."""
    d = tmp_path_factory.mktemp("assistants")
    (d / "clients").symlink_to(REPO / "clients")
    (d / "kiln-data").mkdir()
    (d / "kiln-data" / "api-key").write_text(KEYS["alpha"] + "\n")
    (d / "bin").mkdir()
    (d / "bin" / "python3").symlink_to("/usr/bin/python3")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env["PATH"] = "%s:%s" % (d / "bin", env.get("PATH", "/usr/bin:/bin"))
    return d, env


def run_doc_script(docs_dir, srv, script, interpreter):
    import subprocess
    d, env = docs_dir
    assert "127.0.0.1:8080" in script, script
    p = subprocess.run(interpreter + [script.replace("127.0.0.1:8080", srv.host)], cwd=d,
                       env=env, capture_output=True, timeout=300)
    assert p.returncode == 0, "exit %d\n%s\n%s" % (p.returncode, p.stdout.decode()[-3000:],
                                                   p.stderr.decode()[-3000:])
    return p.stdout.decode(), p.stderr.decode()


@pytest.fixture(scope="module")
def loops(docs_dir, srv):
    """docs/assistants.md's shell block, run as written (bash -euo pipefail) against the
    module's server: the three next-request bodies and what jq printed."""
    need_root()
    [block] = [b for b in doc_blocks("sh") if "kiln-data/api-key" in b]
    for script in ("openai_responses_loop.py", "openai_chat_loop.py", "anthropic_loop.py"):
        assert "clients/examples/" + script in block, script
    out, _err = run_doc_script(docs_dir, srv, block, ["bash", "-euo", "pipefail", "-c"])
    d = docs_dir[0]
    return {name: json_load(d / ("%s-next.json" % name))
            for name in ("responses", "chat", "anthropic")}, out


def check_render_text(kiln, text):
    """A render's result text: the workbook it names is real (openpyxl, values exact), and
    so is its signed link (no key)."""
    m = ID_LINK.search(text)
    assert m and text.startswith("Rendered units_by_region.xlsx ("), text
    body = kiln.download(m.group(2))
    ws = openpyxl.load_workbook(io.BytesIO(body))["Units"]
    assert [[c.value for c in row] for row in ws.iter_rows()] == UNITS
    assert Client(kiln.base_url, None).fetch(m.group(1)) == body


def check_cell_text(text):
    """The cell's text, as kiln mcp gives it: the session it started, stdout, the value."""
    assert re.fullmatch(r"\[a new session was started: session_id [0-9a-f]{32}\]\n"
                        r"total units: 1338\nOut(\[\d+\])?: 334\.5\n", text), text


def png_data_url(url):
    import base64
    assert url.startswith("data:image/png;base64,"), url[:60]
    assert base64.b64decode(url.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"


@python_only
def test_openai_responses_loop(loops, kiln):
    body = loops[0]["responses"]
    turn = json_load(RECORDED / "openai_responses_turn.json")
    calls = [o for o in turn["output"] if o["type"] == "function_call"]
    assert [c["name"] for c in calls] == ["render_document", "execute_code"]
    n = len(turn["output"])
    assert body["input"][1:1 + n] == turn["output"], "the model's items go back as they came"
    outputs = body["input"][1 + n:]
    assert [o["type"] for o in outputs] == ["function_call_output"] * 2, outputs
    assert [o["call_id"] for o in outputs] == [c["call_id"] for c in calls]
    assert isinstance(outputs[0]["output"], str)
    check_render_text(kiln, outputs[0]["output"])
    text, image = outputs[1]["output"]
    assert text["type"] == "input_text" and image["type"] == "input_image", outputs[1]
    check_cell_text(text["text"])
    png_data_url(image["image_url"])
    assert body["tools"] == kiln_tools.load("openai") and body["model"] == turn["model"]


@python_only
def test_openai_chat_loop(loops, kiln):
    body = loops[0]["chat"]
    turn = json_load(RECORDED / "openai_chat_turn.json")
    message = turn["choices"][0]["message"]
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert msgs[2] == message
    assert [m["tool_call_id"] for m in msgs[3:5]] == [c["id"] for c in message["tool_calls"]]
    check_render_text(kiln, msgs[3]["content"])
    check_cell_text(msgs[4]["content"])
    parts = msgs[5]["content"]
    assert parts[0]["type"] == "text" and message["tool_calls"][1]["id"] in parts[0]["text"]
    assert parts[1]["type"] == "image_url"
    png_data_url(parts[1]["image_url"]["url"])
    assert body["tools"] == kiln_tools.load("openai", chat=True)


@python_only
def test_anthropic_loop(loops, kiln):
    import json
    body, jq_out = loops[0]["anthropic"], loops[1]
    turn = json_load(RECORDED / "anthropic_turn.json")
    uses = [b for b in turn["content"] if b["type"] == "tool_use"]
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[1] == {"role": "assistant", "content": turn["content"]}
    results = msgs[2]["content"]
    assert [r["type"] for r in results] == ["tool_result"] * 2
    assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]
    assert [r["is_error"] for r in results] == [False, False]
    check_render_text(kiln, results[0]["content"][0]["text"])
    text, image = results[1]["content"]
    check_cell_text(text["text"])
    assert image["type"] == "image" and image["source"]["type"] == "base64"
    assert image["source"]["media_type"] == "image/png"
    png_data_url("data:image/png;base64," + image["source"]["data"])
    assert body["tools"] == kiln_tools.load("anthropic")
    # the doc's jq line: one object per result
    shown = [json.loads(x) for x in re.findall(r"^\{.*?^\}", jq_out, re.S | re.M)]
    assert [s["tool_use_id"] for s in shown] == [u["id"] for u in uses], jq_out
    assert "total units: 1338" in shown[1]["text"]


@python_only
def test_tool_results_of_failures(kiln, tmp_path):
    """A bad spec, a failing cell, a session passed back, an ended one and an unknown tool,
    through the examples' runner and each vendor's message."""
    need_root()
    sys.path.insert(0, str(EXAMPLES))
    try:
        import anthropic_loop
        import kiln_tools_runner
        import openai_chat_loop
        import openai_responses_loop
    finally:
        sys.path.remove(str(EXAMPLES))
    runner = kiln_tools_runner.ToolRunner(kiln)
    try:
        bad = runner.call("render_document", {"format": "xlsx", "spec": {
            "sheets": [{"name": "S", "rows": [[1]], "colour": "red"}, {"rows": "x"}]}})
        assert bad.is_error and not bad.files, bad
        pointers = [e["pointer"] for e in bad.structured["errors"]]
        assert "/sheets/0/colour" in pointers and len(pointers) >= 2, bad.structured
        for p in pointers:
            assert "\n%s: " % p in bad.text, bad.text
        assert anthropic_loop.tool_result("toolu_x", bad)["is_error"] is True
        assert openai_responses_loop.function_call_output("call_x", bad)["output"] == bad.text
        assert openai_chat_loop.tool_message("call_x", bad)["content"] == bad.text

        first = runner.call("execute_code", {"code": "y = 6"})
        sid = first.structured["session_id"]
        failed = runner.call("execute_code", {"code": "y / 0"})
        assert failed.is_error and "ZeroDivisionError" in failed.text, failed.text
        assert failed.structured["status"] == "error" and failed.structured["session_id"] == sid
        other = kiln_tools_runner.ToolRunner(kiln)   # the session passed back by its id
        shared = other.call("execute_code", {"code": "print(y * 7)", "session_id": sid})
        assert not shared.is_error and shared.text == "42\n", shared.text
        made = runner.call("execute_code", {"code": "open('/mnt/data/t.txt', 'w').write('t')",
                                            "language": "python", "timeout_seconds": 20})
        [ref] = made.files
        assert ref["filename"] == "t.txt" and kiln.download(ref["id"]) == b"t", made
        bash = runner.call("execute_code", {"code": "exit 4", "language": "bash"})
        assert bash.is_error and "exit status 4" in bash.text, bash.text
        unknown = runner.call("make_coffee", {})
        assert unknown.is_error and "render_document" in unknown.text
    finally:
        runner.close()
    gone = kiln_tools_runner.ToolRunner(kiln).call("execute_code", {"code": "1", "session_id": sid})
    assert gone.is_error and "ended" in gone.text, gone.text


@python_only
def test_docs_python_snippet(docs_dir, srv):
    need_root()
    [snippet] = doc_blocks("python")
    out, _err = run_doc_script(docs_dir, srv, snippet, ["python3", "-c"])
    assert out == "['/sheets/0/rows']\nstarted \nstdout 42\n\ncell \n", out
    ws = openpyxl.load_workbook(docs_dir[0] / "hello.xlsx")["Hi"]
    assert [[c.value for c in row] for row in ws.iter_rows()] == [["Hello", 42]]


@python_only
def test_docs_config_snippets():
    import json
    snippets = [json.loads(b) for b in doc_blocks("json")]
    stdio = {"mcpServers": {"kiln": {"command": "/path/to/kiln", "args": [
        "mcp", "--out", "/path/to/out", "--allow-read", "/path/to/inputs"]}}}
    assert stdio in snippets, snippets
    http = [s for s in snippets if s["mcpServers"]["kiln"].get("url")]
    assert http and http[0]["mcpServers"]["kiln"]["url"].endswith("/mcp"), snippets
    text = ASSISTANTS_MD.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        if not target.startswith("http"):
            assert (ASSISTANTS_MD.parent / target).resolve().exists() or target == "mcp.md", target


@python_only
def test_recorded_turns_fit_the_tools():
    """The recorded OpenAI calls are what strict mode makes of docs/tools/openai.json (their
    arguments valid against its schemas, every optional member there as null), and mean
    what the recorded Anthropic calls mean."""
    import json
    from jsonschema import Draft202012Validator
    params = {t["name"]: t["parameters"] for t in kiln_tools.load("openai")}
    anthropic = {b["name"]: b["input"] for b in json_load(RECORDED / "anthropic_turn.json")["content"]
                 if b["type"] == "tool_use"}
    responses = json_load(RECORDED / "openai_responses_turn.json")["output"]
    chat = json_load(RECORDED / "openai_chat_turn.json")["choices"][0]["message"]["tool_calls"]
    calls = [(o["name"], o["arguments"]) for o in responses] + \
            [(c["function"]["name"], c["function"]["arguments"]) for c in chat]
    assert sorted(n for n, _a in calls) == ["execute_code"] * 2 + ["render_document"] * 2
    for name, text in calls:
        args = json.loads(text)
        errors = list(Draft202012Validator(params[name]).iter_errors(args))
        assert not errors, (name, [e.message for e in errors[:5]])
        kiln_form = kiln_tools.from_openai_strict(name, args)
        want = dict(anthropic[name], **({"language": "python"} if name == "execute_code" else {}))
        assert kiln_form == want, (name, kiln_form)
    tools = {t["name"] for t in kiln_tools.load("anthropic")}
    assert set(anthropic) <= tools


def test_batches_create_wait_results_download(kiln, tmp_path):
    """Batches through the client: a render and a mail merge, their results' files
    downloaded, a bad job as InvalidBatch with its pointer."""
    b = kiln.create_batch(jobs=[{"id": "one", "render": {"format": "docx", "spec": {
        "blocks": [{"type": "paragraph", "text": "from a batch"}]}}}])
    assert b["status"] in ("queued", "running") and b["counts"]["total"] == 1, b
    done = kiln.wait_batch(b["id"], timeout=120)
    assert done["status"] == "completed" and done["counts"]["ok"] == 1, done
    [r] = kiln.batch_results(b["id"])
    [f] = r["files"]
    data = kiln.download(f["file"]["id"])
    assert data[:2] == b"PK" and hashlib.sha256(data).hexdigest() == f["sha256"]
    assert any(x["id"] == b["id"] for x in kiln.list_batches()["batches"])
    rows = kiln.upload(io.BytesIO(b"who,amount\nDana,12.50\n"), filename="rows.csv")
    m = kiln.create_batch(template={"blocks": [{"type": "paragraph",
                                                "text": "{{who}} owes {{amount}}"}]},
                          data_file_id=rows, name="{{who}}.pdf")
    assert kiln.wait_batch(m["id"], timeout=120)["counts"]["ok"] == 1
    with pytest.raises(kiln_client.InvalidBatch) as e:
        kiln.create_batch(jobs=[{"id": "x", "render": {"format": "odt", "spec": {}}}])
    assert "/jobs/0/render/format" in e.value.pointers, e.value.pointers
