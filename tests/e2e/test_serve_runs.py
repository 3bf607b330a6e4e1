"""`kiln serve`: POST /v1/runs (issue 7) - code run in the sandbox through the job pool; the
files it writes and the documents it renders stored with file ids; inputs by id; limits
above the server's maximum (422); a file used by a running run (409); the queue full (429
with Retry-After); SIGTERM with a run in flight (it finishes, exit 0) and with one queued
(503); the operator's run maxima (--run-timeout, --run-memory, ... and their environment and
config-file forms); a server that cannot make a sandbox (503 sandbox_unavailable; as root
the server is started as nobody for it). Runs need root (namespaces, cgroups): skipped
with a reason otherwise.
"""
import csv
import json
import os
import hashlib
import re
import shutil
import signal
import stat
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import KILN_BIN, SAMPLES, err_text, run_kiln
from serve_helpers import (API_KEYS, MEDIA_TYPES, MIB, check_response, need_root,  # noqa: F401
                           request_on, serve_factory, server, validate_component)

try:
    import openpyxl
except ImportError:  # pragma: no cover
    raise RuntimeError("openpyxl is required: apt-get install python3-openpyxl")

SALES_CSV = SAMPLES / "jobs" / "data" / "sales.csv"
SLEEP = "import time; time.sleep(3); print('slept')"


# Tests that work without root: the rest need it for the sandbox.
NO_ROOT_NEEDED = ("test_run_without_root_is_503", "test_run_max_bad_value")
NOBODY = 65534


@pytest.fixture(autouse=True)
def _root(request):
    if request.node.originalname not in NO_ROOT_NEEDED:
        need_root()


def _reachable_by_others(path):
    """path is readable and executable by others, and every directory above it searchable."""
    p = Path(path).resolve()
    if p.stat().st_mode & (stat.S_IROTH | stat.S_IXOTH) != (stat.S_IROTH | stat.S_IXOTH):
        return False
    return all(d.stat().st_mode & stat.S_IXOTH for d in p.parents)


@pytest.fixture
def nobody_dir():
    """A directory owned by nobody (65534) in /tmp (pytest's own tmp dirs are 0700 root's),
    removed afterwards."""
    d = Path(tempfile.mkdtemp(prefix="kiln-serve-nobody-"))
    os.chown(d, NOBODY, NOBODY)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_run_without_root_is_503(serve_factory, request):
    """No privileges: the sandbox cannot be set up, and the API says so (503
    sandbox_unavailable, a body as docs/openapi.json has it). As root the server is started
    as nobody (setpriv, no capabilities), so CI (root) runs this too."""
    if os.geteuid() != 0:
        s = serve_factory(name="noroot")
    else:
        if not shutil.which("setpriv"):
            pytest.fail("setpriv (util-linux) is required to start the server unprivileged")
        home = request.getfixturevalue("nobody_dir")
        exe = KILN_BIN
        if not _reachable_by_others(KILN_BIN):
            # nobody cannot reach the binary where it is: a copy, with the libraries it
            # loads from beside it (kiln-service.so, kiln-writers.so).
            bindir = home / "bin"
            bindir.mkdir()
            for f in [KILN_BIN] + sorted(KILN_BIN.parent.glob("kiln-*.so")):
                shutil.copy2(f, bindir / f.name)
                os.chmod(bindir / f.name, 0o755)
            exe = bindir / KILN_BIN.name
        data = home / "data"
        data.mkdir()
        os.chown(data, NOBODY, NOBODY)
        s = serve_factory(data_dir=data, exe=exe,
                          wrap=["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                                "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"])
        status = Path("/proc/%d/status" % s.proc.pid).read_text()
        uids = re.search(r"^Uid:\s+(.*)$", status, re.M).group(1).split()
        assert uids == [str(NOBODY)] * 4, "the server is not running as nobody: Uid %s" % uids
    r = run(s, "print(1)")
    assert r.status == 503 and r.error_code == "sandbox_unavailable", r
    check_response(r, "POST", "/v1/runs")        # the body and headers as docs/openapi.json says
    reason = r.json["error"]["details"].get("reason")
    assert isinstance(reason, str) and reason, r.json
    # everything else still works
    f = s.upload("a.csv", b"x\n1\n")
    assert s.request("GET", "/v1/files/" + f["id"]).status == 200
    s.stop()


def run(srv, code, key="KEY1", **fields):
    body = dict(code=code, **fields)
    body.setdefault("language", "python")
    return srv.request("POST", "/v1/runs", body=body, key=key, timeout=180)


class Background(threading.Thread):
    """A request made in a thread; .resp once joined."""

    def __init__(self, fn, *args, **kw):
        super().__init__(daemon=True)
        self.fn, self.args, self.kw = fn, args, kw
        self.resp, self.exc = None, None
        self.start()

    def run(self):
        try:
            self.resp = self.fn(*self.args, **self.kw)
        except BaseException as e:       # noqa: B902 - reported by result()
            self.exc = e

    def result(self, timeout=120):
        self.join(timeout)
        assert not self.is_alive(), "the request did not finish within %ss" % timeout
        if self.exc:
            raise self.exc
        return self.resp


def test_run_hello(server):
    r = run(server, "print(6 * 7)")
    assert r.status == 200, r
    res = r.json
    assert res["status"] == "ok" and res["exit_code"] == 0, res
    assert res["stdout"]["text"] == "42\n"
    assert res["files"] == [] and res["documents"] == []
    assert "out_dir" not in res


def test_run_bash_and_args(server):
    r = run(server, 'echo "args: $1 $2"; exit 3', language="bash", args=["a b", "c"])
    assert r.status == 200, r
    assert r.json["status"] == "error_exit" and r.json["exit_code"] == 3, r.json
    assert r.json["stdout"]["text"] == "args: a b c\n"


def test_a_spec_that_cannot_render_is_under_render_errors(server):
    """docs/serve.md: a saved spec that cannot be rendered is listed under render_errors
    with each error's code, JSON pointer and message, not under documents; the run's
    other specs still render."""
    code = "\n".join([
        "mkdir -p .kiln",
        "echo '{\"blocks\": [{\"type\": \"paragraph\", \"text\": \"fine\"}]}' > .kiln/good.pdf.spec.json",
        "echo '{\"blocks\": [{\"type\": \"nosuch\"}]}' > .kiln/bad.docx.spec.json"])
    r = run(server, code, language="bash")
    assert r.status == 200, r
    res = r.json
    assert [d["name"] for d in res["documents"]] == ["good.pdf"], res
    assert [e["spec"] for e in res["render_errors"]] == [".kiln/bad.docx.spec.json"], res
    errs = res["render_errors"][0]["errors"]
    assert errs and errs[0]["pointer"] == "/blocks/0/type" and errs[0]["code"] and errs[0]["message"], errs


def test_run_produces_file_and_document(server, tmp_path):
    code = "\n".join([
        "import pandas as pd",
        "import kiln",
        "df = pd.DataFrame({'region': ['West', 'East'], 'revenue': [10.5, 20.0]})",
        "df.to_csv('summary.csv', index=False)",
        "wb = kiln.Workbook(title='Run output')",
        "wb.sheet(df, name='Summary')",
        "wb.save('summary.xlsx')",
        "print('done')"])
    r = run(server, code, render=True)
    assert r.status == 200, r
    res = r.json
    assert res["status"] == "ok", res
    assert res["render_errors"] == []
    files = {f["name"]: f for f in res["files"]}
    docs = {d["name"]: d for d in res["documents"]}
    assert "summary.csv" in files and list(docs) == ["summary.xlsx"], res
    assert files["summary.csv"]["file"]["source"] == "output"
    assert docs["summary.xlsx"]["file"]["source"] == "document"
    for entry in list(files.values()) + list(docs.values()):
        fo = entry["file"]
        assert fo["filename"] == entry["name"].rsplit("/", 1)[-1] or fo["filename"] == entry["name"]
        assert fo["sha256"] == entry["sha256"] and fo["bytes"] == entry["bytes"]
        body = server.download(fo["id"])
        assert hashlib.sha256(body).hexdigest() == entry["sha256"]
        assert server.request("GET", "/v1/files/" + fo["id"]).json == fo
    assert server.download(files["summary.csv"]["file"]["id"]).decode() == "region,revenue\nWest,10.5\nEast,20.0\n"
    doc = docs["summary.xlsx"]
    assert doc["file"]["media_type"] == MEDIA_TYPES["xlsx"]
    p = tmp_path / "summary.xlsx"
    p.write_bytes(server.download(doc["file"]["id"]))
    ws = openpyxl.load_workbook(p)["Summary"]
    values = [[c.value for c in row] for row in ws.iter_rows(min_row=1, max_row=3, max_col=2)]
    assert values == [["region", "revenue"], ["West", 10.5], ["East", 20]]
    head = server.request("HEAD", "/v1/files/%s/content" % doc["file"]["id"])
    assert head.getheader("Content-Type") == MEDIA_TYPES["xlsx"]


def test_run_renders_saved_specs_unless_told_not_to(server):
    """A run that saves a spec gets its document without asking (issue 15 item 15);
    "render": false leaves the spec a file of the run."""
    code = ("import kiln\nwb = kiln.Workbook()\nwb.sheet([{'a': 1}], name='S')\n"
            "wb.save('a.xlsx')\n")
    r = run(server, code)
    assert r.status == 200 and r.json["status"] == "ok", r.json
    assert [d["name"] for d in r.json["documents"]] == ["a.xlsx"], r.json
    assert r.json["documents"][0]["file"]["source"] == "document"
    assert r.json["files"] == []
    r = run(server, code, render=False)
    assert r.status == 200 and r.json["documents"] == [], r.json
    assert [f["name"] for f in r.json["files"]] == [".kiln/a.xlsx.spec.json"], r.json
    assert r.json["files"][0]["file"]["source"] == "output"


def test_run_null_members_are_left_out(server):
    """Every optional member given as null is as if left out, as docs/openapi.json's
    RunRequest says (and the request validates against it): python, no inputs or args,
    the server's limits, the saved spec rendered."""
    body = {"code": "import sys, kiln\nprint(len(sys.argv))\nwb = kiln.Workbook()\n"
                    "wb.sheet([{'a': 1}], name='S')\nwb.save('n.xlsx')\n",
            "language": None, "inputs": None, "args": None, "render": None, "limits": None}
    validate_component(body, "RunRequest")
    r = server.request("POST", "/v1/runs", body=body, timeout=180)
    assert r.status == 200 and r.json["status"] == "ok", r.json
    assert r.json["stdout"]["text"] == "1\n"
    assert [d["name"] for d in r.json["documents"]] == ["n.xlsx"], r.json
    for member, value in (("render", 0), ("language", False), ("limits", [])):
        bad = dict(body, **{member: value})
        r = server.request("POST", "/v1/runs", body=bad, timeout=60)
        assert r.status == 422 and r.json["error"]["details"]["errors"][0]["pointer"] == "/" + member, r.json


def test_run_file_too_large_to_store_is_listed_with_why(serve_factory):
    """A run may be allowed a bigger file than the store takes (--run-max-file-bytes past
    --max-upload): such a file is listed with "file": null and its file_error, as the API
    document says (every response is checked against it)."""
    s = serve_factory("--run-max-file-bytes", "60M", name="bigfile")
    code = "open('big.bin', 'wb').write(b'x' * (40 << 20))\nopen('small.txt', 'w').write('s')\n"
    r = run(s, code, limits={"output_file_bytes": 60 << 20})
    assert r.status == 200 and r.json["status"] == "ok", r.json
    files = {f["name"]: f for f in r.json["files"]}
    assert files["big.bin"]["file"] is None and "larger" in files["big.bin"]["file_error"], files
    assert files["small.txt"]["file"]["source"] == "output"
    s.stop()


def test_run_reads_input(server):
    data = SALES_CSV.read_bytes()
    f = server.upload("sales.csv", data, media_type="text/csv")
    with open(SALES_CSV, newline="") as fh:
        rows = list(csv.DictReader(fh))
    total = sum(float(r["revenue"]) for r in rows)
    code = ("import csv\n"
            "rows = list(csv.DictReader(open('/mnt/data/sales.csv', newline='')))\n"
            "print(len(rows), '%.2f' % sum(float(r['revenue']) for r in rows))\n")
    r = run(server, code, inputs=[f["id"]])
    assert r.status == 200, r
    assert r.json["status"] == "ok", r.json
    assert r.json["stdout"]["text"] == "%d %.2f\n" % (len(rows), total)
    # the input is listed among the job's files, unchanged: it is not stored again, its
    # file is the input's own file object (same id, source "input")
    listed = {x["name"]: x for x in r.json["files"]}
    assert listed["sales.csv"]["sha256"] == f["sha256"]
    assert listed["sales.csv"]["file"] == server.request("GET", "/v1/files/" + f["id"]).json
    assert listed["sales.csv"]["file"]["id"] == f["id"] and f["source"] == "input", listed


def test_run_stores_only_what_it_made_or_changed(server):
    """Of three inputs a run leaves one alone, changes one and deletes one, and writes a new
    file: the untouched one is its input's file object (no new file in the store), the
    changed one and the new one are new files with source "output" (the input itself stays
    as uploaded), the deleted one is not listed."""
    kept = server.upload("kept.csv", b"a,b\n1,2\n", media_type="text/csv")
    edited = server.upload("edited.csv", b"a,b\n1,2\n", media_type="text/csv")
    dropped = server.upload("dropped.txt", b"bye\n")
    before = server.request("GET", "/v1/files?limit=1000").json["total"]
    code = ("import os\n"
            "open('/mnt/data/edited.csv', 'a').write('3,4\\n')\n"
            "os.remove('/mnt/data/dropped.txt')\n"
            "open('/mnt/data/new.txt', 'w').write('new\\n')\n")
    r = run(server, code, inputs=[kept["id"], edited["id"], dropped["id"]])
    assert r.status == 200 and r.json["status"] == "ok", r
    listed = {x["name"]: x["file"] for x in r.json["files"]}
    assert sorted(listed) == ["edited.csv", "kept.csv", "new.txt"], listed
    assert listed["kept.csv"] == kept, listed["kept.csv"]
    assert listed["edited.csv"]["id"] != edited["id"] and listed["edited.csv"]["source"] == "output"
    assert server.download(listed["edited.csv"]["id"]) == b"a,b\n1,2\n3,4\n"
    assert server.download(edited["id"]) == b"a,b\n1,2\n"
    assert listed["new.txt"]["source"] == "output"
    assert server.request("GET", "/v1/files?limit=1000").json["total"] == before + 2


def test_run_sample_job(server):
    """samples/jobs/csv_to_spreadsheet.py through the API, with its input by id."""
    f = server.upload("sales.csv", SALES_CSV.read_bytes(), media_type="text/csv")
    code = (SAMPLES / "jobs" / "csv_to_spreadsheet.py").read_text()
    r = run(server, code, inputs=[f["id"]], render=True)
    assert r.status == 200 and r.json["status"] == "ok", r
    docs = {d["name"]: d for d in r.json["documents"]}
    assert "sales_analysis.xlsx" in docs
    body = server.download(docs["sales_analysis.xlsx"]["file"]["id"])
    assert body[:2] == b"PK"


@pytest.mark.parametrize("limits,pointer", [({"wall_seconds": 10 ** 9}, "/limits/wall_seconds"),
                                            ({"memory_bytes": 1 << 50}, "/limits/memory_bytes"),
                                            ({"output_file_bytes": 1 << 40}, "/limits/output_file_bytes")])
def test_run_limit_above_max(server, limits, pointer):
    r = run(server, "print(1)", limits=limits)
    assert r.status == 422 and r.error_code == "invalid_run", r
    assert pointer in [e["pointer"] for e in r.json["error"]["details"]["errors"]], r.json


@pytest.mark.parametrize("body,pointer", [
    ({"code": 5}, "/code"), ({"code": "print(1)", "language": "ruby"}, "/language"),
    ({"code": "print(1)", "inputs": "x"}, "/inputs"), ({"code": "print(1)", "args": [1]}, "/args/0"),
    ({"code": "print(1)", "limits": {"wall_seconds": -1}}, "/limits/wall_seconds"),
    ({"code": "print(1)", "limits": {"processes": "many"}}, "/limits/processes"),
    ({"code": "print(1)", "limits": {"bogus": 1}}, "/limits/bogus"),
    # below what kiln run accepts (exec/run.h): refused here, not a 500 from the child
    ({"code": "print(1)", "limits": {"memory_bytes": 1}}, "/limits/memory_bytes"),
    ({"code": "print(1)", "limits": {"processes": 1}}, "/limits/processes"),
    ({"code": "print(1)", "limits": {"open_files": 15}}, "/limits/open_files"),
    ({"language": "python"}, "/code")])
def test_run_bad_request(server, body, pointer):
    """A malformed run request: 422 invalid_run, the member's pointer among details.errors."""
    r = server.request("POST", "/v1/runs", body=body)
    assert r.status == 422 and r.error_code == "invalid_run", r
    assert pointer in [e["pointer"] for e in r.json["error"]["details"]["errors"]], r.json


def test_run_several_errors(server):
    r = server.request("POST", "/v1/runs", body={"code": 1, "language": "perl",
                                                "limits": {"wall_seconds": 10 ** 9, "processes": 0}})
    assert r.status == 422 and r.error_code == "invalid_run", r
    pointers = sorted(e["pointer"] for e in r.json["error"]["details"]["errors"])
    assert pointers == ["/code", "/language", "/limits/processes", "/limits/wall_seconds"], r.json


def test_run_unknown_input(server):
    r = run(server, "print(1)", inputs=["e" * 32])
    assert r.status == 404 and r.error_code == "not_found", r


def test_run_limits_applied(server):
    r = run(server, "import time; time.sleep(10)", limits={"wall_seconds": 1})
    assert r.status == 200, r
    assert r.json["status"] == "timeout" and r.json["timeout"] == "wall", r.json
    assert r.json["limits"]["wall_seconds"] == 1


def test_delete_input_of_running_run_is_409(server):
    f = server.upload("held.csv", b"a\n1\n")
    bg = Background(run, server, SLEEP, inputs=[f["id"]])
    time.sleep(1.0)
    r = server.request("DELETE", "/v1/files/" + f["id"])
    assert r.status == 409 and r.error_code == "file_in_use", r
    res = bg.result()
    assert res.status == 200 and res.json["status"] == "ok", res
    r = server.request("DELETE", "/v1/files/" + f["id"])
    assert r.status == 204, r


def test_queue_full_429(serve_factory):
    s = serve_factory("--max-jobs", "1", "--queue", "1", name="q1")
    t0 = time.monotonic()
    bgs = [Background(run, s, SLEEP) for _ in range(3)]
    resps = [b.result(60) for b in bgs]
    statuses = sorted(r.status for r in resps)
    assert statuses == [200, 200, 429], resps
    busy = [r for r in resps if r.status == 429][0]
    assert busy.error_code == "too_many_requests"
    assert int(busy.getheader("Retry-After")) >= 1
    assert time.monotonic() - t0 >= 5.5          # one worker: the two runs went one after the other


def test_metrics_count_runs(server):
    run(server, "print(1)")
    text = server.metrics()
    m = re.search(r'^kiln_runs_total\{outcome="ok"\} (\d+)', text, re.M)
    assert m and int(m.group(1)) >= 1, text[:3000]


def test_sigterm_with_run_in_flight(serve_factory):
    """SIGTERM: the running run finishes (200), the queued one answers 503, healthz says
    stopping on a connection opened before, the server exits 0."""
    s = serve_factory("--max-jobs", "1", "--queue", "4", "--shutdown-grace", "30", name="term")
    keep = s.conn()
    assert request_on(keep, "GET", "/healthz").status == 200
    running = Background(run, s, SLEEP)
    time.sleep(0.8)
    queued = Background(run, s, "print('queued')")
    time.sleep(0.5)
    s.signal(signal.SIGTERM)
    time.sleep(0.3)
    try:
        h = request_on(keep, "GET", "/healthz")
        assert h.status == 503 and h.json == {"status": "stopping"}, h
    except (ConnectionError, OSError) as e:     # the server may close idle connections at once
        pytest.fail("a keep-alive connection opened before SIGTERM got no 503 from /healthz: %r" % e)
    finally:
        keep.close()
    r = running.result(60)
    assert r.status == 200 and r.json["status"] == "ok" and r.json["stdout"]["text"] == "slept\n", r
    q = queued.result(60)
    assert q.status == 503 and q.error_code == "unavailable", q
    assert s.wait(60) == 0, s.stderr()[-3000:]
    assert any(str(e.get("event", "")).startswith("stop") for e in s.log()), "no stop event in the log"


def test_sigterm_grace_kills_long_run(serve_factory):
    """A run longer than --shutdown-grace is killed; the server still exits 0 promptly."""
    s = serve_factory("--shutdown-grace", "1", name="grace")
    bg = Background(run, s, "import time; time.sleep(30)")
    time.sleep(1.0)
    t0 = time.monotonic()
    s.signal(signal.SIGTERM)
    assert s.wait(20) == 0, s.stderr()[-3000:]
    assert time.monotonic() - t0 < 10
    bg.join(10)
    if bg.resp is not None:
        assert bg.resp.status in (200, 503), bg.resp


# --------------------------------------------------------------------------- clients that leave

def descendants(pid):
    """Every process below pid (its children, theirs, ...), from /proc."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path("/proc/%s/stat" % d).read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "%s: not within %ss" % (what, timeout)
        time.sleep(0.02)


def post_and_leave(srv, path, body):
    """A raw POST whose client will go away: the socket, open, the request sent."""
    import json
    import socket
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer KEY1\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (path.encode(), srv.host.encode(), len(data), data))
    return sock


def abort_lines(srv, route):
    return [e for e in srv.log() if e.get("route") == route and e.get("termination") == "client_abort"]


def metric(srv, name, labels):
    m = re.search(r"^%s\{%s\} (\d+)$" % (re.escape(name), re.escape(labels)), srv.metrics(), re.M)
    return int(m.group(1)) if m else 0


def test_client_abort_cancels_the_run(serve_factory):
    """A client that starts a 20 s run and closes its connection: the run's processes (kiln
    run, its supervisor, the sandbox) are gone within a second or two, the access log says
    "termination": "client_abort" with no status sent, /metrics counts the run as
    client_abort, and nothing of it is left (no stored file, an empty work directory)."""
    s = serve_factory(name="abort")
    sock = post_and_leave(s, "/v1/runs", {"code": "open('out.txt', 'w').write('x'); "
                                                  "import time; time.sleep(20)"})
    wait_for(lambda: len(descendants(s.proc.pid)) >= 2, 15, "the run starting")
    t0 = time.monotonic()
    sock.close()
    wait_for(lambda: not descendants(s.proc.pid), 2.5, "the run's processes ending")
    gone = time.monotonic() - t0
    wait_for(lambda: abort_lines(s, "/v1/runs"), 5, "the access-log line")
    [line] = abort_lines(s, "/v1/runs")
    assert line["status"] == 0 and line["bytes"] == 0 and line["duration_ms"] < 15000, line
    assert metric(s, "kiln_runs_total", 'outcome="client_abort"') == 1
    assert s.request("GET", "/v1/files").json["total"] == 0
    assert os.listdir(s.data_dir / "work") == []
    assert gone < 2.5


def test_queued_jobs_of_a_gone_client_never_start(serve_factory):
    """With the one worker busy, a run and a render whose clients leave while they wait are
    not begun when the worker comes free: no process appears for them, their lines say
    client_abort, /metrics counts them (runs by outcome, renders by result), and the render
    stored no document."""
    s = serve_factory("--max-jobs", "1", "--queue", "4", name="queued")
    busy = Background(run, s, SLEEP)
    wait_for(lambda: descendants(s.proc.pid), 15, "the first run starting")
    left = [post_and_leave(s, "/v1/runs", {"code": "import time; time.sleep(20)"}),
            post_and_leave(s, "/v1/render", {"format": "xlsx",
                                             "spec": {"sheets": [{"rows": [[1]]}]}})]
    wait_for(lambda: re.search(r"^kiln_jobs_queued 2$", s.metrics(), re.M), 5, "both queued")
    for sock in left:
        sock.close()
    r = busy.result(60)
    assert r.status == 200 and r.json["status"] == "ok", r
    wait_for(lambda: abort_lines(s, "/v1/runs") and abort_lines(s, "/v1/render"), 5,
             "the queued jobs' lines")
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:   # the queued run never gets a process
        assert not descendants(s.proc.pid), "a run whose client had left was started"
        time.sleep(0.01)
    assert all(e["status"] == 0 for e in abort_lines(s, "/v1/runs") + abort_lines(s, "/v1/render"))
    assert metric(s, "kiln_runs_total", 'outcome="client_abort"') == 1
    assert metric(s, "kiln_runs_total", 'outcome="ok"') == 1
    assert metric(s, "kiln_renders_total", 'format="xlsx",result="client_abort"') == 1
    assert s.request("GET", "/v1/files").json["total"] == 0


def test_a_gone_client_gives_its_queue_place_back_at_once(serve_factory):
    """A queued job whose client leaves is answered (client_abort) as soon as the server
    sees it, not when the worker comes free: its place in the queue is free for the next
    client at once (with --queue 1, a 429 otherwise), while the first run still runs."""
    s = serve_factory("--max-jobs", "1", "--queue", "1", name="queueback")
    busy = Background(run, s, "import time; time.sleep(8)")
    wait_for(lambda: descendants(s.proc.pid), 15, "the first run starting")
    sock = post_and_leave(s, "/v1/runs", {"code": "print(1)"})
    wait_for(lambda: re.search(r"^kiln_jobs_queued 1$", s.metrics(), re.M), 5, "the second queued")
    sock.close()
    wait_for(lambda: abort_lines(s, "/v1/runs"), 3, "the gone client's line, while the first runs")
    assert re.search(r"^kiln_jobs_queued 0$", s.metrics(), re.M), s.metrics()
    assert re.search(r"^kiln_jobs_running 1$", s.metrics(), re.M), "the first run ended meanwhile"
    third = Background(run, s, "print('third')")
    r = busy.result(60)
    assert r.status == 200 and r.json["status"] == "ok", r
    r3 = third.result(60)
    assert r3.status == 200 and r3.json["stdout"]["text"] == "third\n", r3


# --------------------------------------------------------------------------- run maxima

def _limit_errors(r):
    assert r.status == 422 and r.error_code == "invalid_run", r
    return {e["pointer"]: e for e in r.json["error"]["details"]["errors"]}


def test_run_max_from_flags(serve_factory):
    """--run-timeout 5 --run-memory 256M: more is 422 at /limits/NAME; a run asking for
    nothing gets them; less is honoured; the other limits keep kiln run's defaults."""
    s = serve_factory("--run-timeout", "5", "--run-memory", "256M", name="runmax")
    errs = _limit_errors(run(s, "print(1)", limits={"wall_seconds": 6}))
    assert list(errs) == ["/limits/wall_seconds"], errs
    assert errs["/limits/wall_seconds"]["code"] == "limit_exceeded"
    assert errs["/limits/wall_seconds"]["limit"] == 5, errs
    errs = _limit_errors(run(s, "print(1)", limits={"memory_bytes": 256 * MIB + 1}))
    assert list(errs) == ["/limits/memory_bytes"], errs
    assert errs["/limits/memory_bytes"]["limit"] == 256 * MIB, errs

    r = run(s, "print(1)")
    assert r.status == 200 and r.json["status"] == "ok", r
    lim = r.json["limits"]
    assert lim["wall_seconds"] == 5 and lim["memory_bytes"] == 256 * MIB, lim
    assert lim["cpu_seconds"] == 60 and lim["processes"] == 64, lim      # kiln run's defaults

    r = run(s, "print(1)", limits={"wall_seconds": 5, "memory_bytes": 128 * MIB})
    assert r.status == 200 and r.json["status"] == "ok", r
    assert r.json["limits"]["wall_seconds"] == 5 and r.json["limits"]["memory_bytes"] == 128 * MIB


def test_run_max_env_and_config(serve_factory, tmp_path):
    """The same settings from KILN_RUN_* and from the config file; a flag wins over both."""
    conf = tmp_path / "serve.conf"
    conf.write_text("# run maxima\nrun-memory = 300M\nrun-processes = '8'\nrun-timeout = 9\n")
    s = serve_factory("--config", conf, env={"KILN_RUN_TIMEOUT": "7", "KILN_RUN_MAX_FILES": "3"},
                      name="runmax-env")
    errs = _limit_errors(run(s, "print(1)", limits={"wall_seconds": 8, "memory_bytes": 301 * MIB,
                                                    "processes": 9, "output_files": 4}))
    assert sorted(errs) == ["/limits/memory_bytes", "/limits/output_files", "/limits/processes",
                            "/limits/wall_seconds"], errs
    assert errs["/limits/wall_seconds"]["limit"] == 7          # the environment over the file
    assert errs["/limits/memory_bytes"]["limit"] == 300 * MIB
    r = run(s, "print(1)")
    assert r.status == 200 and r.json["status"] == "ok", r
    lim = r.json["limits"]
    assert (lim["wall_seconds"], lim["memory_bytes"], lim["processes"], lim["output_files"]) == \
        (7, 300 * MIB, 8, 3), lim

    s2 = serve_factory("--config", conf, "--run-timeout", "2m", env={"KILN_RUN_TIMEOUT": "7"},
                       name="runmax-flag")
    r = run(s2, "print(1)")
    assert r.status == 200 and r.json["limits"]["wall_seconds"] == 120, r   # the flag over both


@pytest.mark.parametrize("how,name,value,named", [
    ("flag", "run-memory", "12Q", "--run-memory"),
    ("flag", "run-timeout", "100000", "--run-timeout"),      # kiln run: at most 86400 s
    ("flag", "run-cpu", "2d", "--run-cpu"),
    ("flag", "run-memory", "8M", "--run-memory"),            # kiln run: at least 16 MiB
    ("flag", "run-stream-keep", "65M", "--run-stream-keep"),  # kiln run: at most 64 MiB
    ("flag", "run-processes", "1", "--run-processes"),
    ("flag", "run-open-files", "1000001", "--run-open-files"),
    ("flag", "run-max-files", "0", "--run-max-files"),
    ("flag", "run-disk", "2000000G", "--run-disk"),
    ("env", "run-memory", "12Q", "KILN_RUN_MEMORY"),
    ("env", "run-tmp", "lots", "KILN_RUN_TMP"),
    ("config", "run-timeout", "100000", "(run-timeout)"),
    ("config", "run-max-total-bytes", "-1", "(run-max-total-bytes)"),
])
def test_run_max_bad_value(tmp_path, how, name, value, named):
    """A run maximum kiln run would refuse is a usage error at startup (exit 2) naming where
    it came from, not a 500 on every run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env["KILN_API_KEYS"] = API_KEYS
    args = ["serve", "--listen", "127.0.0.1:0", "--data-dir", tmp_path / "data"]
    if how == "flag":
        args += ["--" + name, value]
    elif how == "env":
        env["KILN_" + name.upper().replace("-", "_")] = value
    else:
        conf = tmp_path / "serve.conf"
        conf.write_text("listen = 127.0.0.1:0\n%s = %s\n" % (name, value))
        args += ["--config", conf]
        named = "%s:2 %s" % (conf, named)
    p = run_kiln(*args, env=env, timeout=30)
    err = err_text(p)
    assert p.returncode == 2, "exit %s\n%s" % (p.returncode, err)
    assert named in err and ("'%s'" % value) in err, err
    assert not (tmp_path / "data").exists(), "the server got as far as the data directory"


# A spec with a limit error (a cell past Excel's 32,767 characters) and a PDF spec whose
# text has a character no embedded font draws (U+1200): what each front end says of them.
BAD_SPEC = {"sheets": [{"name": "s", "rows": [["x" * 32768]]}]}
GLYPH_SPEC = {"blocks": [{"type": "paragraph", "text": "Ethiopic \u1200 here"}]}


def test_one_shape_for_errors_and_warnings_everywhere(server, tmp_path):
    """contract/report.h: `kiln render|validate --json`, a run's render step and the API
    give the same error and warning objects (docs/cli.md, "One shape everywhere")."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(BAD_SPEC))
    cli_errors = json.loads(run_kiln("validate", "--json", bad).stdout)
    (cli_error,) = cli_errors["errors"]
    assert cli_error["code"] == "limit_exceeded" and cli_error["limit"] == 32767, cli_error
    assert cli_errors["more_errors"] == 0

    r = server.request("POST", "/v1/render", body={"format": "xlsx", "spec": BAD_SPEC})
    assert r.status == 422, r
    assert r.json["error"]["details"] == {k: v for k, v in cli_errors.items() if k != "ok"}

    good = tmp_path / "glyph.json"
    good.write_text(json.dumps(GLYPH_SPEC))
    cli_render = json.loads(run_kiln("render", good, "-o", tmp_path / "g.pdf", "--json").stdout)
    (warning,) = cli_render["warnings"]
    assert warning["code"] == "missing_glyphs" and warning["first"] == 0x1200, warning
    r = server.request("POST", "/v1/render", body={"format": "pdf", "spec": GLYPH_SPEC})
    assert r.status == 201, r
    assert r.json["warnings"] == cli_render["warnings"]

    code = ("import json, os\nos.makedirs('.kiln')\n"
            "open('.kiln/bad.xlsx.spec.json', 'w').write(%r)\n"
            "open('.kiln/g.pdf.spec.json', 'w').write(%r)\n"
            % (json.dumps(BAD_SPEC), json.dumps(GLYPH_SPEC)))
    r = run(server, code)
    assert r.status == 200, r
    res = r.json
    (failed,) = res["render_errors"]
    cli_failed = json.loads(run_kiln("render", bad, "-o", tmp_path / "bad.xlsx", "--json").stdout)
    assert {k: failed[k] for k in ("errors", "more_errors", "warnings")} == \
        {k: cli_failed[k] for k in ("errors", "more_errors", "warnings")}, (failed, cli_failed)
    assert failed["errors"] == cli_errors["errors"], failed
    (doc,) = res["documents"]
    assert doc["name"] == "g.pdf" and doc["warnings"] == cli_render["warnings"], doc


def test_run_limits_stream_kill_and_colon_names(server):
    """Every limit of the table is a request's (stream_kill_bytes too), and an input's
    stored name reaches /mnt/data as it is, ':' included (the job goes to kiln run as one
    document, not as -i PATH:NAME)."""
    f = server.upload("10:30 notes.csv", b"a,b\n")
    r = run(server, "print(open('10:30 notes.csv').read(), end='')", inputs=[f["id"]],
            limits={"stream_kill_bytes": 4096})
    assert r.status == 200, r
    assert r.json["stdout"]["text"] == "a,b\n"
    assert r.json["limits"]["stream_kill_bytes"] == 4096
    r = run(server, "print('x' * 100000)", limits={"stream_kill_bytes": 4096})
    assert r.status == 200 and r.json["status"] == "output_limit", r


def test_render_errors_keep_the_count_past_the_list(server, tmp_path):
    """A saved spec with more errors than a list holds (50): the run's render_errors
    entry says how many more, as kiln validate --json does."""
    spec = {"blocks": [{"type": "nope"} for _ in range(60)]}
    p = tmp_path / "many.json"
    p.write_text(json.dumps(spec))
    cli = json.loads(run_kiln("validate", "--json", p).stdout)
    assert len(cli["errors"]) == 50 and cli["more_errors"] == 10, cli
    code = ("import os\nos.makedirs('.kiln')\nopen('.kiln/many.docx.spec.json', 'w').write(%r)\n"
            % json.dumps(spec))
    r = run(server, code)
    assert r.status == 200, r
    (failed,) = r.json["render_errors"]
    assert failed["more_errors"] == 10 and failed["errors"] == cli["errors"], failed
