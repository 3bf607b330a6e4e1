"""`kiln serve`: /v1/batches (docs/serve.md, "Batches") - many renders and runs in one
request, run by a `kiln batch` child at nice 10, their results and files in the store:
jobs inline (a render, and a run whose input is a stored file), an uploaded jobs file
(input_file_id), a mail merge (template + data_file_id); every file of the results
downloadable; a bad job refused before anything runs (422 with the job's pointer);
--batches-per-tenant (429); cancel; another tenant's batch is 404 and its files unreadable;
and kill -9 of the server in the middle of a batch, then a restart on the same data
directory: the batch completes with every job once, and no job journaled before the kill
runs again. Run jobs need root (the sandbox).
"""
import json
import os
import signal
import time
from pathlib import Path

import pytest

from serve_helpers import ID_RE, MEDIA_TYPES, need_root, serve_factory, validate_component  # noqa: F401

HELLO = {"blocks": [{"type": "paragraph", "text": "Hello"}]}


@pytest.fixture(autouse=True)
def _root():
    need_root()


@pytest.fixture(scope="module")
def bsrv(serve_factory):
    return serve_factory("--batch-workers", "2", "--batches-per-tenant", "3")


def create(srv, body, key="KEY1", expect=202):
    r = srv.request("POST", "/v1/batches", body=body, key=key)
    assert r.status == expect, r
    if expect == 202:
        assert r.getheader("Location") == "/v1/batches/" + r.json["id"], r
        assert ID_RE.match(r.json["id"]) and r.json["status"] == "queued", r.json
    return r.json


def wait_done(srv, bid, key="KEY1", timeout=60):
    """The batch once it has ended: its status final and finished_at set (a cancelled one's
    as soon as its child has stopped)."""
    deadline = time.monotonic() + timeout
    while True:
        r = srv.request("GET", "/v1/batches/" + bid, key=key)
        assert r.status == 200, r
        if r.json["status"] not in ("queued", "running") and r.json["finished_at"]:
            return r.json
        assert time.monotonic() < deadline, "the batch did not end within %ss: %s" % (timeout, r.json)
        time.sleep(0.1)


def results(srv, bid, key="KEY1"):
    r = srv.request("GET", "/v1/batches/%s/results" % bid, key=key)
    assert r.status == 200, r
    assert (r.getheader("Content-Type") or "").startswith("application/x-ndjson"), r
    return [json.loads(line) for line in r.body.decode("utf-8").splitlines() if line.strip()]


def by_id(lines):
    out = {}
    for e in lines:
        assert e["id"] not in out, "job %s has two results" % e["id"]
        out[e["id"]] = e
    return out


def child_pids(batch_dir):
    """The `kiln batch` processes working in batch_dir (their command line names it)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 2 and argv[1] == b"batch" and any(str(batch_dir).encode() in a for a in argv):
            pids.append(int(d.name))
    return pids


def nice_of(pid):
    stat = Path("/proc/%d/stat" % pid).read_text()
    return int(stat[stat.rindex(")") + 2:].split()[16])     # field 19


def test_inline_render_and_run_with_an_input(bsrv):
    csv = bsrv.upload("sales.csv", b"region,amount\nnorth,10\nsouth,20\n")
    code = ("rows = open('/mnt/data/sales.csv').read().splitlines()\n"
            "open('/mnt/data/count.txt', 'w').write(str(len(rows) - 1))\n")
    b = create(bsrv, {"jobs": [
        {"id": "hello", "render": {"format": "pdf", "spec": HELLO}},
        {"id": "sheet", "render": {"spec": {"sheets": [{"name": "S", "rows": [[1, 2]]}]},
                                   "filename": "s.xlsx"}},
        {"id": "count", "run": {"code": code, "language": "python", "inputs": [csv["id"]]}},
    ]})
    assert b["kind"] == "jobs" and b["counts"] == {"total": 3, "done": 0, "ok": 0, "failed": 0}, b
    done = wait_done(bsrv, b["id"])
    assert done["status"] == "completed" and done["counts"] == {"total": 3, "done": 3, "ok": 3, "failed": 0}, done
    assert done["started_at"] and done["finished_at"], done
    res = by_id(results(bsrv, b["id"]))
    assert set(res) == {"hello", "sheet", "count"}, res
    pdf = res["hello"]["files"][0]["file"]
    validate_component(pdf, "File")
    assert pdf["filename"] == "hello.pdf" and pdf["source"] == "document", pdf
    assert pdf["media_type"] == MEDIA_TYPES["pdf"], pdf
    assert bsrv.download(pdf["id"]).startswith(b"%PDF-")
    xlsx = res["sheet"]["files"][0]["file"]
    assert xlsx["filename"] == "s.xlsx" and bsrv.download(xlsx["id"])[:2] == b"PK", xlsx
    counted = {f["name"]: f["file"] for f in res["count"]["files"]}
    assert "count/count.txt" in counted, res["count"]
    assert counted["count/count.txt"]["source"] == "output", counted
    assert bsrv.download(counted["count/count.txt"]["id"]) == b"2"
    # listed, newest first
    r = bsrv.request("GET", "/v1/batches?limit=1")
    assert r.status == 200 and r.json["batches"][0]["id"] == b["id"] and r.json["limit"] == 1, r


def test_jobs_file_upload(bsrv):
    lines = [json.dumps({"id": "j%d" % i, "render": {"format": "docx", "spec": HELLO}})
             for i in range(4)]
    f = bsrv.upload("jobs.jsonl", ("\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:]) + "\n").encode())
    b = create(bsrv, {"input_file_id": f["id"]})
    assert b["counts"]["total"] == 4, b
    done = wait_done(bsrv, b["id"])
    assert done["status"] == "completed" and done["counts"]["ok"] == 4, done
    res = by_id(results(bsrv, b["id"]))
    assert sorted(res) == ["j0", "j1", "j2", "j3"]
    for e in res.values():
        assert bsrv.download(e["files"][0]["file"]["id"])[:2] == b"PK"


def test_mail_merge(bsrv):
    data = bsrv.upload("people.csv", b"id,name\nc1,Ada\nc2,Grace\nc3,\n")
    tmpl = {"blocks": [{"type": "paragraph", "text": "Dear {{name}}"}]}
    b = create(bsrv, {"template": tmpl, "data_file_id": data["id"], "name": "{{id}}.docx",
                      "missing": "error"})
    assert b["kind"] == "merge" and b["counts"]["total"] == 3, b
    done = wait_done(bsrv, b["id"])
    assert done["status"] == "completed" and done["counts"] == {"total": 3, "done": 3, "ok": 3, "failed": 0}, done
    assert done["merge"]["format"] == "docx", done
    res = by_id(results(bsrv, b["id"]))
    assert sorted(res) == ["c1.docx", "c2.docx", "c3.docx"]
    import io
    import zipfile
    body = bsrv.download(res["c2.docx"]["files"][0]["file"]["id"])
    assert "Dear Grace" in zipfile.ZipFile(io.BytesIO(body)).read("word/document.xml").decode()
    # a name pattern without an extension is refused up front
    r = bsrv.request("POST", "/v1/batches", body={"template": tmpl, "data_file_id": data["id"],
                                                  "name": "{{id}}"})
    assert r.status == 422 and r.error_code == "invalid_batch", r
    assert [e["pointer"] for e in r.json["error"]["details"]["errors"]] == ["/name"], r.json


def test_bad_jobs_are_refused_with_their_pointers(bsrv):
    before = bsrv.request("GET", "/v1/batches").json["total"]
    r = bsrv.request("POST", "/v1/batches", body={"jobs": [
        {"id": "ok", "render": {"format": "pdf", "spec": HELLO}},
        {"id": "bad", "render": {"format": "gif", "spec": HELLO}},
        {"id": "file", "render": {"format": "pdf", "spec_file": "/etc/passwd"}},
        {"id": "run", "run": {"code": "print(1)", "inputs": ["0" * 32]}},
        {"id": "big", "run": {"code": "print(1)", "limits": {"wall_seconds": 10 ** 6}}},
        {"id": "ok", "render": {"format": "docx", "spec": HELLO}},
    ]})
    assert r.status == 422 and r.error_code == "invalid_batch", r
    ptrs = [e["pointer"] for e in r.json["error"]["details"]["errors"]]
    for want in ("/jobs/1/render/format", "/jobs/2/render/spec_file", "/jobs/3/run/inputs/0",
                 "/jobs/4/run/limits/wall_seconds"):
        assert want in ptrs, (want, ptrs)
    # repeated ids are found by kiln batch's own check, once every job is valid
    r = bsrv.request("POST", "/v1/batches", body={"jobs": [
        {"id": "a", "render": {"format": "pdf", "spec": HELLO}},
        {"id": "a", "render": {"format": "docx", "spec": HELLO}}]})
    assert r.status == 422, r
    assert [e["pointer"] for e in r.json["error"]["details"]["errors"]] == ["/jobs/1/id"], r.json
    r = bsrv.request("POST", "/v1/batches", body={"jobs": [], "template": {}})
    assert r.status == 422, r
    assert bsrv.request("GET", "/v1/batches").json["total"] == before
    # no directory for a refused batch; one only for a batch not yet ended
    listed = {b["id"]: b for b in bsrv.request("GET", "/v1/batches?limit=1000").json["batches"]}
    for name in os.listdir(bsrv.data_dir / "batches"):
        assert name in listed and listed[name]["status"] in ("queued", "running"), (name, listed.get(name))


def slow_jobs(n, seconds):
    return {"jobs": [{"id": "s%d" % i, "run": {"code": "import time; time.sleep(%s)" % seconds,
                                                 "language": "python"}} for i in range(n)]}


def test_cancel_and_tenants_and_limit(bsrv):
    b = create(bsrv, slow_jobs(6, 2))
    bdir = bsrv.data_dir / "batches" / b["id"]
    deadline = time.monotonic() + 20
    while not child_pids(bdir):
        assert time.monotonic() < deadline, "no kiln batch child started"
        time.sleep(0.05)
    pid = child_pids(bdir)[0]
    assert nice_of(pid) == 10, "the batch child runs at nice %d" % nice_of(pid)
    # another tenant sees nothing of it
    for path in ("/v1/batches/" + b["id"], "/v1/batches/%s/results" % b["id"]):
        assert bsrv.request("GET", path, key="KEY2").status == 404
    assert bsrv.request("POST", "/v1/batches/%s/cancel" % b["id"], key="KEY2").status == 404
    assert b["id"] not in [x["id"] for x in bsrv.request("GET", "/v1/batches", key="KEY2").json["batches"]]
    # the tenant's limit (3): two more queue behind it, the fourth is refused
    extra = [create(bsrv, slow_jobs(1, 0)) for _ in range(2)]
    r = bsrv.request("POST", "/v1/batches", body=slow_jobs(1, 0))
    assert r.status == 429 and r.error_code == "too_many_batches", r
    assert create(bsrv, slow_jobs(1, 0), key="KEY2")      # another tenant's own limit
    # let the first job finish, then cancel
    deadline = time.monotonic() + 30
    while bsrv.request("GET", "/v1/batches/" + b["id"]).json["counts"]["ok"] < 1:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    r = bsrv.request("POST", "/v1/batches/%s/cancel" % b["id"])
    assert r.status == 200 and r.json["status"] == "cancelled", r
    done = wait_done(bsrv, b["id"])
    assert done["status"] == "cancelled" and done["finished_at"], done
    kept = results(bsrv, b["id"])
    assert 1 <= len(kept) < 6 and done["counts"]["ok"] == len(kept), (done, kept)
    deadline = time.monotonic() + 10
    while child_pids(bdir):
        assert time.monotonic() < deadline, "the cancelled batch's child is still running"
        time.sleep(0.05)
    # the queued ones then run; a result's file is not another tenant's to read
    for x in extra:
        assert wait_done(bsrv, x["id"])["status"] == "completed"
    files = [f["file"]["id"] for e in kept for f in e["files"] if f.get("file")]
    first = results(bsrv, extra[0]["id"])
    files += [f["file"]["id"] for e in first for f in e["files"] if f.get("file")]
    for fid in files:
        assert bsrv.request("GET", "/v1/files/" + fid, key="KEY2").status == 404
        assert bsrv.request("GET", "/v1/files/%s/content" % fid, key="KEY2").status == 404
    m = bsrv.metrics()
    assert 'kiln_batches_total{status="cancelled"}' in m and "kiln_batch_queue_depth" in m, m
    assert 'kiln_batch_jobs_total{outcome="ok"}' in m, m


def journal(bdir):
    path = Path(bdir) / "out" / "results.jsonl"
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def test_kill_9_mid_batch_then_restart(serve_factory, tmp_path):
    data = tmp_path / "data"
    srv = serve_factory("--batch-workers", "1", data_dir=data)
    n = 8
    b = create(srv, {"jobs": [
        {"id": "r%d" % i, "run": {"code": "import time\ntime.sleep(0.4)\n"
                                          "open('/mnt/data/out.txt', 'w').write('%d')" % i,
                                  "language": "python"}} for i in range(n)]})
    bdir = data / "batches" / b["id"]
    deadline = time.monotonic() + 40
    while srv.request("GET", "/v1/batches/" + b["id"]).json["counts"]["ok"] < 2:
        assert time.monotonic() < deadline, "two jobs did not finish"
        time.sleep(0.05)
    srv.proc.send_signal(signal.SIGKILL)
    srv.wait()
    before = {e["id"]: e for e in journal(bdir)}
    assert 2 <= len(before) < n, before.keys()

    again = serve_factory("--batch-workers", "1", data_dir=data)
    done = wait_done(again, b["id"])
    assert done["status"] == "completed" and done["counts"] == {"total": n, "done": n, "ok": n, "failed": 0}, done
    res = by_id(results(again, b["id"]))                  # one result per job
    assert sorted(res) == sorted("r%d" % i for i in range(n))
    for jid, e in before.items():
        # not run again: its result is the one journaled before the kill
        assert res[jid]["finished_at"] == e["finished_at"], (jid, e, res[jid])
    # the batch over, its directory (the resume's, a second copy of its files) is gone
    assert not bdir.exists()
    for jid, e in res.items():
        out = [f for f in e["files"] if f["name"] == jid + "/out.txt"]
        assert out and again.download(out[0]["file"]["id"]) == jid[1:].encode(), e
    assert not child_pids(bdir)
