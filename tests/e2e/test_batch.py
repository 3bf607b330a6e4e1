"""kiln batch: jobs files, the results journal, resume, progress, mail merge
(docs/batch.md). Jobs here are renders; the runs (sandboxes) are in test_batch_runs.py."""
import hashlib
import json
import os
import pty
import select
import signal
import subprocess
import time
import zipfile
from pathlib import Path

import openpyxl
import pytest

from conftest import (KILN_BIN, SANITIZED, assert_ooxml_ok, describe, err_text, external_reader,
                      run_kiln)

PARA = {"blocks": [{"type": "paragraph", "text": "hello"}]}
SHEET = {"sheets": [{"name": "S", "rows": [["a", 1.5], ["b", 2]]}]}
DECK = {"slides": [{"title": "One", "bullets": ["x"]}]}


def write_jobs(path, jobs):
    path.write_text("".join((j if isinstance(j, str) else json.dumps(j)) + "\n" for j in jobs))
    return path


def journal(out):
    """The journal's entries by id (the last line of an id wins), and its raw lines."""
    lines = (out / "results.jsonl").read_text().splitlines()
    entries = {}
    for line in lines:
        e = json.loads(line)
        entries[e["id"]] = e
    return entries, lines


def sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def batch(*args, timeout=300, **kw):
    return run_kiln("batch", *args, "--progress", "none", timeout=timeout, **kw)


def visible(out):
    """What a user sees in the output directory (the staging area aside)."""
    return sorted(p.name for p in out.iterdir() if p.name != ".kiln-batch")


# --------------------------------------------------------------------------- jobs files

def test_every_format_inline_and_spec_file(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "deck.json").write_text(json.dumps(DECK))
    jobs = write_jobs(tmp_path / "jobs.jsonl", [
        {"id": "para", "render": {"format": "docx", "spec": PARA}},
        {"id": "pdf", "render": {"filename": "report.pdf", "spec": PARA}},
        {"id": "sheet", "render": {"format": "xlsx", "spec": SHEET, "filename": "numbers.xlsx"}},
        {"id": "deck", "render": {"format": "pptx", "spec_file": "specs/deck.json"}},
        "",  # blank lines are skipped
    ])
    out = tmp_path / "out"
    p = batch(jobs, "-o", out)
    assert p.returncode == 0, describe(p)
    assert visible(out) == ["deck.pptx", "numbers.xlsx", "para.docx", "report.pdf", "results.jsonl"]
    entries, lines = journal(out)
    assert len(lines) == 4 and set(entries) == {"para", "pdf", "sheet", "deck"}
    for e in entries.values():
        assert e["status"] == "ok" and e["kind"] == "render" and e["errors"] == []
        assert isinstance(e["wall_seconds"], float) and e["finished_at"].endswith("Z")
        assert len(e["input_sha256"]) == 64
        [f] = e["files"]
        assert f["bytes"] == (out / f["name"]).stat().st_size and f["sha256"] == sha(out / f["name"])
    assert entries["deck"]["line"] == 4 and entries["para"]["line"] == 1
    wb = openpyxl.load_workbook(out / "numbers.xlsx")
    assert [[c.value for c in r] for r in wb["S"].iter_rows()] == [["a", 1.5], ["b", 2]]
    external_reader("ooxml-check")
    assert_ooxml_ok(out / "para.docx", out / "numbers.xlsx", out / "deck.pptx")


def test_a_bad_spec_fails_its_job_only(tmp_path):
    jobs = write_jobs(tmp_path / "jobs.jsonl", [
        {"id": "good", "render": {"format": "docx", "spec": PARA}},
        {"id": "bad", "render": {"format": "pdf", "spec": {"blocks": [{"type": "paragraf"}]}}},
        {"id": "big", "render": {"format": "xlsx", "spec": {"sheets": [{"name": "S", "rows": [
            ["row %d of many, each its own text" % i, i] for i in range(4000)]}]}}},
    ])
    out = tmp_path / "out"
    p = batch(jobs, "-o", out, "--max-bytes", "30k")
    assert p.returncode == 1, describe(p)
    entries, _ = journal(out)
    assert entries["good"]["status"] == "ok"
    assert entries["bad"]["status"] == "failed" and entries["bad"]["files"] == []
    assert entries["bad"]["errors"][0]["pointer"] == "/blocks/0/type", entries["bad"]
    assert entries["big"]["errors"][0]["code"] == "too_large", entries["big"]
    assert visible(out) == ["good.docx", "results.jsonl"]


@pytest.mark.parametrize("line,fragment", [
    ('{"id": "a", "render": {"format": "pdf"}}', "line 1: render needs the spec"),
    ('not json', "line 1: not valid JSON"),
    ('{"id": "a/b", "render": {"format": "pdf", "spec": {}}}', "at /id"),
    ('{"id": "a", "render": {"format": "pdf", "spec": {}}, "extra": 1}', "at /extra"),
    ('{"id": "a", "render": {"format": "odt", "spec": {}}}', "at /render/format"),
    ('{"id": "a", "render": {"filename": "a.pdf", "format": "docx", "spec": {}}}',
     "at /render/filename"),
    ('{"id": "a", "render": {"format": "pdf", "spec_file": "../outside.json"}}',
     "at /render/spec_file"),
    ('{"id": "a", "run": {"code": 5}}', "at /run/code"),
    ('{"id": ".hidden", "render": {"format": "pdf", "spec": {}}}', "at /id"),
    ('{"render": {"format": "pdf", "spec": {}}}', "id (the job's name, a string) is required"),
])
def test_invalid_jobs_are_refused_before_anything_runs(tmp_path, line, fragment):
    (tmp_path / "outside.json").write_text(json.dumps(PARA))
    sub = tmp_path / "sub"
    sub.mkdir()
    jobs = sub / "jobs.jsonl"
    jobs.write_text(json.dumps({"id": "fine", "render": {"format": "docx", "spec": PARA}}) + "\n")
    jobs.write_text(line + "\n" + jobs.read_text())
    out = tmp_path / "out"
    p = batch(jobs, "-o", out)
    assert p.returncode == 3, describe(p)
    assert fragment in err_text(p), describe(p)
    assert not out.exists(), "nothing may be written when the jobs file is invalid"


def test_every_error_is_reported_at_once(tmp_path):
    jobs = write_jobs(tmp_path / "jobs.jsonl", [
        {"id": "a", "render": {"format": "docx", "spec": PARA}},
        {"id": "a", "render": {"format": "pdf", "spec": PARA}},
        {"id": "b", "render": {"filename": "a.docx", "spec": PARA}},
        '{"id": "c"',
    ])
    p = batch(jobs, "-o", tmp_path / "out")
    assert p.returncode == 3
    err = err_text(p)
    assert "line 2: the id 'a' is used by an earlier job" in err, err
    assert "line 3: an earlier job writes 'a.docx' already" in err, err
    assert "line 4: not valid JSON" in err, err


def test_validate_only_parses_every_spec(tmp_path):
    jobs = write_jobs(tmp_path / "jobs.jsonl", [
        {"id": "a", "render": {"format": "docx", "spec": PARA}},
        {"id": "b", "render": {"format": "pdf", "spec": {"blocks": [{"type": "heading", "level": 9,
                                                                   "text": "x"}]}}},
    ])
    p = run_kiln("batch", jobs, "--validate-only")
    assert p.returncode == 3 and "line 2" in err_text(p) and "/blocks/0/level" in err_text(p), \
        describe(p)
    write_jobs(jobs, [{"id": "a", "render": {"format": "docx", "spec": PARA}}])
    p = run_kiln("batch", jobs, "--validate-only")
    assert p.returncode == 0 and "1 jobs, all valid" in err_text(p), describe(p)


def test_paths_resolve_beneath_the_jobs_directory_and_never_through_a_link(tmp_path):
    (tmp_path / "secret.json").write_text(json.dumps(PARA))
    d = tmp_path / "d"
    d.mkdir()
    (d / "link.json").symlink_to(tmp_path / "secret.json")
    jobs = write_jobs(d / "jobs.jsonl", [{"id": "a", "render": {"format": "pdf",
                                                                "spec_file": "link.json"}}])
    p = batch(jobs, "-o", tmp_path / "out")
    assert p.returncode == 3 and "symbolic link" in err_text(p), describe(p)
    write_jobs(jobs, [{"id": "a", "render": {"format": "pdf", "spec_file": str(tmp_path /
                                                                               "secret.json")}}])
    p = batch(jobs, "-o", tmp_path / "out")
    assert p.returncode == 3 and "absolute paths are refused" in err_text(p), describe(p)
    # --base-dir moves where they resolve
    write_jobs(jobs, [{"id": "a", "render": {"format": "pdf", "spec_file": "secret.json"}}])
    p = batch(jobs, "-o", tmp_path / "out", "--base-dir", tmp_path)
    assert p.returncode == 0, describe(p)


def test_an_output_planted_as_a_link_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.docx").symlink_to(victim)
    (out / "results.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"id": "a", "render": {"format": "docx",
                                                                      "spec": PARA}}])
    p = batch(jobs, "-o", out)
    # the journal planted as a link is refused (O_NOFOLLOW), so nothing is written through it
    assert p.returncode == 6, describe(p)
    assert victim.read_text() == "keep me" and not (tmp_path / "elsewhere.jsonl").exists()
    (out / "results.jsonl").unlink()
    p = batch(jobs, "-o", out)
    assert p.returncode == 0, describe(p)
    assert victim.read_text() == "keep me" and not (out / "a.docx").is_symlink()
    assert zipfile.is_zipfile(out / "a.docx")


# --------------------------------------------------------------------------- resume

def make_batch(tmp_path, n=6):
    jobs = [{"id": "j%d" % i, "render": {"format": "xlsx", "spec": {
        "sheets": [{"name": "S", "rows": [["row", i]]}]}}} for i in range(n)]
    return write_jobs(tmp_path / "jobs.jsonl", jobs), jobs


def test_resume_skips_done_jobs_and_reruns_changed_ones(tmp_path):
    path, jobs = make_batch(tmp_path)
    out = tmp_path / "out"
    assert batch(path, "-o", out).returncode == 0
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("*.xlsx")}
    _, lines = journal(out)

    # the same command again: nothing runs, the journal and files are untouched
    p = run_kiln("batch", path, "-o", out, "--progress", "lines")
    assert p.returncode == 0, describe(p)
    assert "6 ok, 0 failed (6 of them done before, skipped)" in err_text(p), describe(p)
    assert journal(out)[1] == lines
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.xlsx")} == stamps

    # a changed job, a deleted output and an output changed on disk run again; the rest not
    jobs[1]["render"]["spec"]["sheets"][0]["rows"] = [["changed", 1]]
    write_jobs(path, jobs)
    (out / "j2.xlsx").unlink()
    data = bytearray((out / "j3.xlsx").read_bytes())
    data[-30] ^= 0xFF
    (out / "j3.xlsx").write_bytes(bytes(data))
    os.utime(out / "j4.xlsx")  # touched, same bytes: hashed again, found the same, skipped
    p = run_kiln("batch", path, "-o", out, "--progress", "lines")
    assert p.returncode == 0, describe(p)
    assert "3 of them done before, skipped" in err_text(p), describe(p)
    entries, lines = journal(out)
    assert len(lines) == 6 + 3
    rerun = [json.loads(l)["id"] for l in lines[6:]]
    assert sorted(rerun) == ["j1", "j2", "j3"]
    wb = openpyxl.load_workbook(out / "j1.xlsx")
    assert wb["S"]["A1"].value == "changed"
    assert entries["j3"]["files"][0]["sha256"] == sha(out / "j3.xlsx")
    assert (out / "j0.xlsx").stat().st_mtime_ns == stamps["j0.xlsx"]

    # a new run compacts the journal to one line per job
    assert batch(path, "-o", out).returncode == 0
    assert len(journal(out)[1]) == 6


def test_failed_jobs_stand_until_retry_failed(tmp_path):
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({"blocks": [{"type": "paragraf"}]}))
    path = write_jobs(tmp_path / "jobs.jsonl", [
        {"id": "ok", "render": {"format": "docx", "spec": PARA}},
        {"id": "bad", "render": {"format": "docx", "spec_file": "s.json"}}])
    out = tmp_path / "out"
    assert batch(path, "-o", out).returncode == 1
    p = run_kiln("batch", path, "-o", out, "--progress", "lines")
    assert p.returncode == 1 and "2 of them done before, skipped" in err_text(p), describe(p)
    assert len(journal(out)[1]) == 2
    p = batch(path, "-o", out, "--retry-failed")
    assert p.returncode == 1 and len(journal(out)[1]) == 3
    # the spec file is part of the job's inputs: fixed, it runs again without --retry-failed
    spec.write_text(json.dumps(PARA))
    p = batch(path, "-o", out)
    assert p.returncode == 0, describe(p)
    assert journal(out)[0]["bad"]["status"] == "ok"


def test_a_torn_last_line_is_cut(tmp_path):
    path, _ = make_batch(tmp_path, 3)
    out = tmp_path / "out"
    assert batch(path, "-o", out).returncode == 0
    with open(out / "results.jsonl", "a") as f:
        f.write('{"id": "j9", "status": "ok", "files": [{"na')
    p = batch(path, "-o", out)
    assert p.returncode == 0, describe(p)
    text = (out / "results.jsonl").read_text()
    assert text.endswith("\n") and "j9" not in text and len(text.splitlines()) == 3


def test_kill_9_mid_batch_loses_nothing_and_redoes_nothing(tmp_path):
    n = 1500
    jobs = [{"id": "d%03d" % i, "render": {"format": "docx", "spec": {"blocks": [
        {"type": "paragraph", "text": "document %d " % i * 40}]}}} for i in range(n)]
    path = write_jobs(tmp_path / "jobs.jsonl", jobs)
    out = tmp_path / "out"
    proc = subprocess.Popen([str(KILN_BIN), "batch", str(path), "-o", str(out), "-j", "2",
                             "--progress", "none"], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        j = out / "results.jsonl"
        if j.exists() and j.read_text().count("\n") >= 40:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    text = (out / "results.jsonl").read_text()
    lines = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
    assert 40 <= len(lines) < n, "the batch ended before the kill: make it longer"
    before = {}
    for line in lines:
        e = json.loads(line)
        [f] = e["files"]
        # every file the journal names is whole and is what it says
        assert sha(out / f["name"]) == f["sha256"], e
        before[f["name"]] = (out / f["name"]).stat().st_ino
    # whatever else is there is complete (written whole, then linked)
    for p in out.glob("*.docx"):
        assert zipfile.ZipFile(p).testzip() is None
    # the workers died with the batch
    time.sleep(0.2)
    assert not [l for l in subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                          text=True).stdout.splitlines()
                if str(out) in l and "batch" in l]
    p = batch(path, "-o", out, "-j", "2")
    assert p.returncode == 0, describe(p)
    entries, lines2 = journal(out)
    assert set(entries) == {j["id"] for j in jobs} and len(lines2) == n
    for name, ino in before.items():
        assert (out / name).stat().st_ino == ino, "%s was made again after its journal line" % name


def test_progress_json_and_lines(tmp_path):
    path, _ = make_batch(tmp_path, 4)
    p = run_kiln("batch", path, "-o", tmp_path / "out", "--progress", "json")
    assert p.returncode == 0, describe(p)
    events = [json.loads(l) for l in err_text(p).splitlines()]
    assert [e["id"] for e in events if e["event"] == "job"] and \
        len([e for e in events if e["event"] == "job"]) == 4
    summary = events[-1]
    assert summary["event"] == "summary" and summary["ok"] == 4 and summary["failed"] == 0 and \
        summary["total"] == 4 and summary["not_run"] == 0
    assert p.stdout == b""
    p = run_kiln("batch", path, "-o", tmp_path / "out2")  # stderr a pipe: plain lines
    assert p.returncode == 0 and "\r" not in err_text(p) and "4 ok" in err_text(p), describe(p)


def test_progress_bar_on_a_terminal(tmp_path):
    path, _ = make_batch(tmp_path, 30)
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(str(KILN_BIN), [str(KILN_BIN), "batch", str(path), "-o", str(tmp_path / "out"),
                                 "-j", "1"])
    text = b""
    while True:
        r, _, _ = select.select([fd], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        text += chunk
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, text
    out = text.decode()
    assert "\r" in out and "ETA" in out and "/30" in out and "30 ok" in out, out


@pytest.mark.parametrize("args,status,fragment", [
    ([], 2, "needs a jobs file"),
    (["JOBS"], 2, "needs -o OUTDIR"),
    (["JOBS", "-o", "OUT", "-j", "0"], 2, "--jobs takes a number"),
    (["JOBS", "-o", "OUT", "--progress", "fancy"], 2, "--progress is"),
    (["JOBS", "-o", "OUT", "--bogus"], 2, "unknown option"),
    (["JOBS", "-o", "OUT", "--template", "T"], 2, "not both"),
    (["-", "-o", "OUT"], 2, "read twice"),
    (["MISSING", "-o", "OUT"], 5, "cannot"),
    (["JOBS", "-o", "FILE/sub"], 6, "cannot write"),
])
def test_usage_and_io_errors(tmp_path, args, status, fragment):
    path, _ = make_batch(tmp_path, 1)
    (tmp_path / "FILE").write_text("x")
    repl = {"JOBS": str(path), "OUT": str(tmp_path / "out"), "MISSING": str(tmp_path / "no.jsonl"),
            "FILE/sub": str(tmp_path / "FILE" / "sub"), "T": str(path)}
    p = run_kiln("batch", *[repl.get(a, a) for a in args])
    assert p.returncode == status, describe(p)
    assert fragment in err_text(p), describe(p)


def test_help_documents_the_exit_statuses():
    p = run_kiln("batch", "--help")
    assert p.returncode == 0
    for s in ("1 some jobs failed", "130 SIGINT", "--retry-failed", "--progress MODE"):
        assert s in p.stdout.decode(), s


# --------------------------------------------------------------------------- mail merge

TEMPLATE = {
    "metadata": {"title": "Statement {{customer_id}}"},
    "sheets": [{
        "name": "{{customer_id}}",
        "columns": [{"header": "Item"}, {"header": "Qty"}, {"header": "When"}],
        "rows": [["Balance", "{{balance}}", "{{since}}"], ["Code", "{{code}}", "{{stamp}}"],
                 ["Note", "Dear {{name}}, you owe {{balance}}", "{{since}}x"]],
    }],
}


def test_merge_csv_typed_fields(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps(TEMPLATE))
    (tmp_path / "rows.csv").write_text(
        "customer_id,name,balance,since,code,stamp\r\n"
        "C1,Dana,12.50,2026-03-31,007,2026-03-31T09:30:00\r\n"
        'C2,"Eli, Jr.",-3,2025-12-01,42,x\r\n')
    out = tmp_path / "out"
    p = batch("--template", tmp_path / "t.json", "--data", tmp_path / "rows.csv",
              "--name", "{{customer_id}}-statement.xlsx", "-o", out)
    assert p.returncode == 0, describe(p)
    assert visible(out) == ["C1-statement.xlsx", "C2-statement.xlsx", "results.jsonl"]
    wb = openpyxl.load_workbook(out / "C1-statement.xlsx")
    ws = wb["C1"]
    assert ws["B2"].value == 12.5 and isinstance(ws["B2"].value, float)
    assert ws["C2"].is_date and ws["C2"].value.isoformat() == "2026-03-31T00:00:00"
    assert ws["B3"].value == "007"  # a leading zero stays text
    assert ws["C3"].is_date and ws["C3"].value.isoformat() == "2026-03-31T09:30:00"
    # a price is a number in a cell and keeps its two decimals in text
    assert ws["B4"].value == "Dear Dana, you owe 12.50" and ws["C4"].value == "2026-03-31x"
    ws2 = openpyxl.load_workbook(out / "C2-statement.xlsx")["C2"]
    assert ws2["B2"].value == -3 and ws2["B3"].value == 42 and ws2["C3"].value == "x"
    assert ws2["B4"].value == "Dear Eli, Jr., you owe -3"
    entries, _ = journal(out)
    assert entries["C2-statement.xlsx"]["line"] == 3


def test_merge_nested_line_items_and_a_chart(tmp_path):
    template = {"blocks": [
        {"type": "heading", "level": 1, "text": "Invoice {{invoice.id}}"},
        {"type": "table", "columns": [{"header": "Item"}, {"header": "Qty", "type": "integer"},
                                      {"header": "Amount", "type": "currency"}],
         "rows": "{{items}}"},
        {"type": "chart", "kind": "bar", "title": "{{invoice.id}} by item",
         "categories": "{{labels}}", "series": "{{series}}"},
    ]}
    (tmp_path / "t.json").write_text(json.dumps(template))
    rows = [{"invoice": {"id": "INV-%d" % i}, "items": [["Widget", 3, 12.5], ["Gadget", 1, 99]],
             "labels": ["Widget", "Gadget"], "series": [{"name": "Amount", "values": [37.5, 99]}]}
            for i in range(3)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    p = batch("--template", tmp_path / "t.json", "--data", tmp_path / "rows.jsonl",
              "--name", "{{invoice.id}}.docx", "-o", out)
    assert p.returncode == 0, describe(p)
    import docx
    d = docx.Document(str(out / "INV-1.docx"))
    assert d.paragraphs[0].text == "Invoice INV-1"
    t = d.tables[0]
    assert [c.text for c in t.rows[1].cells] == ["Widget", "3", "$12.50"]
    with zipfile.ZipFile(out / "INV-1.docx") as z:
        chart = [n for n in z.namelist() if n.startswith("word/charts/chart")]
        assert chart and b"INV-1 by item" in z.read(chart[0])
    external_reader("ooxml-check")
    assert_ooxml_ok(out / "INV-1.docx")


def test_merge_missing_fields(tmp_path):
    template = {"blocks": [{"type": "paragraph", "text": "Hi {{name}} from {{city}}"}]}
    (tmp_path / "t.json").write_text(json.dumps(template))
    (tmp_path / "rows.jsonl").write_text(
        '{"id": 1, "name": "A", "city": "X"}\n{"id": 2, "name": "B"}\n\n{"id": 3}\n')
    args = ["--template", tmp_path / "t.json", "--data", tmp_path / "rows.jsonl",
            "--name", "doc-{{id}}.docx"]
    # --validate-only: every error, each with its data line and the template's pointer
    p = run_kiln("batch", *args, "--validate-only")
    assert p.returncode == 3, describe(p)
    err = err_text(p)
    assert "data line 2" in err and "'city'" in err and "/blocks/0/text" in err, err
    assert "data line 4" in err and "'name'" in err, err
    assert "data line 1" not in err
    # a run: the rows with a missing field fail, the others are made
    out = tmp_path / "out"
    p = batch(*args, "-o", out)
    assert p.returncode == 1, describe(p)
    entries, _ = journal(out)
    assert entries["doc-1.docx"]["status"] == "ok"
    e = entries["doc-2.docx"]
    assert e["status"] == "failed" and e["line"] == 2 and e["errors"][0]["pointer"] == \
        "/blocks/0/text" and "city" in e["errors"][0]["message"], e
    # --missing empty: "" instead
    out2 = tmp_path / "out2"
    p = batch(*args, "-o", out2, "--missing", "empty")
    assert p.returncode == 0, describe(p)
    import docx
    assert docx.Document(str(out2 / "doc-2.docx")).paragraphs[0].text == "Hi B from "


def test_merge_name_errors(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps(PARA))
    (tmp_path / "rows.jsonl").write_text('{"n": "a"}\n{"n": "a"}\n{"n": "../x"}\n')
    args = ["--template", tmp_path / "t.json", "--data", tmp_path / "rows.jsonl", "-o",
            tmp_path / "out"]
    p = batch(*args, "--name", "{{n}}.pdf")
    assert p.returncode == 3, describe(p)
    err = err_text(p)
    assert "data line 2: --name gives 'a.pdf', as it does for an earlier row" in err, err
    assert "data line 3: --name gives '../x.pdf', which is not a file name" in err, err
    assert not (tmp_path / "out").exists()
    p = batch(*args, "--name", "{{n}}.pdf", "--format", "docx")
    assert p.returncode == 2 and "does not end" in err_text(p)
    p = batch(*args, "--name", "{{n}}")
    assert p.returncode == 2 and "must end in" in err_text(p)


def test_merge_resume_follows_the_template_and_the_rows(tmp_path):
    template = {"blocks": [{"type": "paragraph", "text": "{{v}}"}]}
    (tmp_path / "t.json").write_text(json.dumps(template))
    (tmp_path / "rows.csv").write_text("k,v\na,1\nb,2\n")
    args = ["--template", tmp_path / "t.json", "--data", tmp_path / "rows.csv",
            "--name", "{{k}}.docx", "-o", tmp_path / "out", "--progress", "lines"]
    assert run_kiln("batch", *args).returncode == 0
    p = run_kiln("batch", *args)
    assert "2 of them done before, skipped" in err_text(p), describe(p)
    (tmp_path / "rows.csv").write_text("k,v\na,1\nb,3\n")
    p = run_kiln("batch", *args)
    assert "1 of them done before, skipped" in err_text(p), describe(p)
    template["blocks"].append({"type": "paragraph", "text": "more"})
    (tmp_path / "t.json").write_text(json.dumps(template))
    p = run_kiln("batch", *args)
    assert p.returncode == 0 and "skipped" not in err_text(p), describe(p)


def test_merge_bad_data_file(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps(PARA))
    (tmp_path / "rows.csv").write_text('a,b\n1,"open\n')
    p = batch("--template", tmp_path / "t.json", "--data", tmp_path / "rows.csv",
              "--name", "{{a}}.pdf", "-o", tmp_path / "out")
    assert p.returncode == 5, describe(p)
    assert "rows.csv:2" in err_text(p), describe(p)
    (tmp_path / "rows.txt").write_text("a\n1\n")
    p = batch("--template", tmp_path / "t.json", "--data", tmp_path / "rows.txt",
              "--name", "{{a}}.pdf", "-o", tmp_path / "out")
    assert p.returncode in (2, 3, 5) and "rows.txt" in err_text(p), describe(p)
    (tmp_path / "t.json").write_text("{not json")
    (tmp_path / "rows.csv").write_text("a\n1\n")
    p = batch("--template", tmp_path / "t.json", "--data", tmp_path / "rows.csv",
              "--name", "{{a}}.pdf", "-o", tmp_path / "out")
    assert p.returncode == 3 and "not valid JSON" in err_text(p), describe(p)


@pytest.mark.skipif(SANITIZED, reason="a thousand renders: the plain build's run covers it")
def test_a_thousand_rows_memory_is_flat(tmp_path):
    """The batch holds one job at a time: its peak memory with 1,500 rows is about that
    with 150 (the workers', and the ids the check keeps)."""
    from conftest import run_kiln_peak
    (tmp_path / "t.json").write_text(json.dumps({"sheets": [{"name": "S",
                                                              "rows": "{{rows}}"}]}))
    peaks = []
    for n in (150, 1500):
        data = tmp_path / ("rows%d.jsonl" % n)
        data.write_text("".join(json.dumps({"i": i, "rows": [[i, "x" * 50]] * 20}) + "\n"
                                for i in range(n)))
        p, peak = run_kiln_peak("batch", "--template", tmp_path / "t.json", "--data", data,
                                "--name", "r{{i}}.xlsx", "-o", tmp_path / ("o%d" % n),
                                "--progress", "none", "-j", "2")
        assert p.returncode == 0, p.stderr[-2000:]
        peaks.append(peak)
    assert peaks[1] < peaks[0] * 1.5 + (4 << 20), peaks


def test_a_new_max_bytes_retries_too_large(tmp_path):
    spec = {"sheets": [{"name": "S", "rows": [["row %d of many" % i, i] for i in range(3000)]}]}
    path = write_jobs(tmp_path / "jobs.jsonl", [{"id": "big", "render": {"format": "xlsx",
                                                                        "spec": spec}}])
    out = tmp_path / "out"
    p = batch(path, "-o", out, "--max-bytes", "10k")
    assert p.returncode == 1 and journal(out)[0]["big"]["errors"][0]["code"] == "too_large"
    p = batch(path, "-o", out)
    assert p.returncode == 0, describe(p)
    # the default ceiling written out is the same ceiling: nothing runs again
    p = run_kiln("batch", path, "-o", out, "--max-bytes", "30M", "--progress", "lines")
    assert p.returncode == 0 and "1 of them done before, skipped" in err_text(p), describe(p)


def test_progress_json_reports_skipped_jobs(tmp_path):
    path, _ = make_batch(tmp_path, 3)
    out = tmp_path / "out"
    assert batch(path, "-o", out).returncode == 0
    p = run_kiln("batch", path, "-o", out, "--progress", "json")
    jobs = [json.loads(l) for l in err_text(p).splitlines() if '"event":"job"' in l]
    assert sorted(j["id"] for j in jobs) == ["j0", "j1", "j2"] and all(j["skipped"] for j in jobs)
