"""The service half of `make bench BENCH=batch` (bench/README.md, "batch"): how fast an
interactive POST /v1/render answers while a batch runs on the same `kiln serve`.

A batch takes a bounded share of the machine (`--batch-workers`, default half the CPUs,
at nice 10); this measures what that leaves: the same small render (a one-page docx),
one at a time on one keep-alive connection, first with the server idle, then while a
mail merge of invoices (POST /v1/batches, the batch benchmark's data) runs, and reports
p50 / p99 / max of each beside the other, and the batch's own documents/s. It fails only
when a request fails or the batch does not complete, never on a timing.
"""
import http.client
import json
import os
import shutil
import tempfile
import time

from serve_bench import API_KEY, BenchError, start_kiln, stop_group, upload
from session_bench import pct

SPEC = {"blocks": [{"type": "heading", "level": 1, "text": "Quarterly note"},
                   {"type": "paragraph", "text": "Revenue grew 4% on the quarter."},
                   {"type": "table", "columns": [{"header": "Region"},
                                                 {"header": "Revenue", "type": "currency"}],
                    "rows": [["North", 1200.5], ["South", 980]]}]}


def _headers():
    return {"Authorization": "Bearer " + API_KEY, "Content-Type": "application/json"}


def _json(conn, method, path, body=None):
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers=_headers())
    r = conn.getresponse()
    data = r.read()
    return r.status, json.loads(data) if data else None


def _renders(port, n, until=None):
    """n renders (or until until() is true, at most n), each timed; the latencies in s."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    out = []
    try:
        for _ in range(n):
            if until and until():
                break
            t0 = time.monotonic()
            status, body = _json(conn, "POST", "/v1/render",
                                 {"format": "docx", "spec": SPEC, "filename": "note.docx"})
            out.append(time.monotonic() - t0)
            if status != 201:
                raise BenchError("POST /v1/render: HTTP %d: %s" % (status, body))
            _json(conn, "DELETE", "/v1/files/" + body["id"])
    finally:
        conn.close()
    return out


def run(kiln, template_path, data_path, renders=300):
    """Returns a dict of the figures (or raises BenchError)."""
    tmp = tempfile.mkdtemp(prefix="kiln-bench-batch-serve-")
    proc = None
    try:
        proc, port = start_kiln(kiln, tmp, 4)
        _renders(port, 20)  # warm: the writers loaded, the store's first files
        idle = _renders(port, renders)
        with open(data_path, "rb") as f:
            data_id = upload(port, "invoices.jsonl", f.read())
        with open(template_path) as f:
            template = json.load(f)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        status, batch = _json(conn, "POST", "/v1/batches",
                              {"template": template, "data_file_id": data_id, "format": "docx",
                               "name": "{{invoice_id}}.docx"})
        if status != 202:
            raise BenchError("POST /v1/batches: HTTP %d: %s" % (status, batch))
        t0 = time.monotonic()
        state = {"batch": batch}

        def ended():
            _, b = _json(conn, "GET", "/v1/batches/" + batch["id"])
            state["batch"] = b
            return b["status"] in ("completed", "failed", "cancelled")
        # wait for it to be running, then measure while it runs
        deadline = time.monotonic() + 60
        while state["batch"]["status"] == "queued" and time.monotonic() < deadline:
            ended()
            time.sleep(0.05)
        during = _renders(port, renders, until=ended)
        while not ended():
            if time.monotonic() - t0 > 1200:
                raise BenchError("the batch did not end in 20 minutes: %s" % state["batch"])
            time.sleep(0.2)
        b = state["batch"]
        wall = time.monotonic() - t0
        conn.close()
        if b["status"] != "completed" or b["counts"]["ok"] != b["counts"]["total"]:
            raise BenchError("the batch ended %s: %s" % (b["status"], b))
        return {"idle": idle, "during": during, "batch_docs": b["counts"]["total"],
                "batch_seconds": wall}
    finally:
        if proc:
            stop_group(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def report(fig):
    def row(label, xs):
        return "| %s | %d | %.1f | %.1f | %.1f |" % (label, len(xs), pct(xs, 50) * 1e3,
                                                    pct(xs, 99) * 1e3, max(xs) * 1e3)
    print("| POST /v1/render (one-page docx), one at a time | renders | p50 ms | p99 ms | max ms |")
    print("|------|------:|------:|------:|------:|")
    print(row("server idle", fig["idle"]))
    print(row("while a %s-invoice batch runs" % "{:,}".format(fig["batch_docs"]), fig["during"]))
    print()
    print("batch on kiln serve: %s docx invoices in %.1f s (%.0f docs/s, default --batch-workers)"
          % ("{:,}".format(fig["batch_docs"]), fig["batch_seconds"],
             fig["batch_docs"] / fig["batch_seconds"]))
    print("render p99 while the batch runs: %.1fx the idle p99"
          % (pct(fig["during"], 99) / pct(fig["idle"], 99)))
