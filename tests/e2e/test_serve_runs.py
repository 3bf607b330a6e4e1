"""`kiln serve`: POST /v1/runs (issue 7) - code run in the sandbox through the job pool; the
files it writes and the documents it renders stored with file ids; inputs by id; limits
above the server's maximum (422); a file used by a running run (409); the queue full (429
with Retry-After); SIGTERM with a run in flight (it finishes, exit 0) and with one queued
(503). Runs need root (namespaces, cgroups): skipped with a reason otherwise.
"""
import csv
import os
import hashlib
import re
import signal
import threading
import time

import pytest

from conftest import SAMPLES
from serve_helpers import MEDIA_TYPES, need_root, request_on, serve_factory, server  # noqa: F401

try:
    import openpyxl
except ImportError:  # pragma: no cover
    raise RuntimeError("openpyxl is required: apt-get install python3-openpyxl")

SALES_CSV = SAMPLES / "jobs" / "data" / "sales.csv"
SLEEP = "import time; time.sleep(3); print('slept')"


@pytest.fixture(autouse=True)
def _root(request):
    if request.node.name != "test_run_without_root_is_503":
        need_root()


def test_run_without_root_is_503(server):
    """Not root: the sandbox cannot be set up, and the API says so (503 sandbox_unavailable)."""
    if os.geteuid() == 0:
        pytest.skip("runs as root: the sandbox can be set up here")
    r = run(server, "print(1)")
    assert r.status == 503 and r.error_code == "sandbox_unavailable", r


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
    # the input is listed among the job's files, with a file object of its own
    listed = {x["name"]: x for x in r.json["files"]}
    assert listed["sales.csv"]["sha256"] == f["sha256"]


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
