"""kiln batch with run jobs (sandboxes), and what a batch does with crashes, hangs and
signals (docs/batch.md). In the sandbox group (conftest.py): these start sandboxes."""
import json
import os
import signal
import subprocess
import time

import openpyxl

from conftest import KILN_BIN, describe, err_text, run_kiln
from test_batch import journal, sha, write_jobs

SLEEP = "import time; time.sleep(%s); print('slept')"


def start(path, out, *extra):
    return subprocess.Popen([str(KILN_BIN), "batch", str(path), "-o", str(out)] +
                            [str(a) for a in extra], stderr=subprocess.PIPE)


def workers(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(x) for x in f.read().split()]


def wait_running(proc, out, n, timeout=60):
    """Until n workers of the batch exist and n sandboxes run (their python under them)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ws = workers(proc.pid)
        if len(ws) >= n:
            busy = [w for w in ws if os.path.exists("/proc/%d/task/%d/children" % (w, w)) and
                    open("/proc/%d/task/%d/children" % (w, w)).read().strip()]
            if len(busy) >= n:
                return ws
        time.sleep(0.05)
    raise AssertionError("the batch did not start %d jobs" % n)


def test_runs_inputs_files_and_documents(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sales.csv").write_text("region,amount\nNorth,12\nSouth,30\n")
    code = ("import csv, kiln\n"
            "rows = list(csv.reader(open('sales.csv')))[1:]\n"
            "open('total.txt', 'w').write(str(sum(int(r[1]) for r in rows)))\n"
            "kiln.save_spec({'sheets': [{'name': 'Sales', 'rows': [[r[0], int(r[1])] for r in rows]}]},"
            " 'sales.xlsx')\n")
    path = write_jobs(tmp_path / "jobs.jsonl", [
        {"id": "report", "run": {"code": code, "inputs": [{"path": "data/sales.csv"}]}},
        {"id": "fails", "run": {"code": "raise SystemExit(3)"}},
        {"id": "shell", "run": {"language": "bash", "code": "echo hi > hi.txt"}},
        {"id": "escape", "run": {"code": "1", "inputs": [{"path": "../../etc/passwd"}]}},
    ][:3])
    out = tmp_path / "out"
    p = run_kiln("batch", path, "-o", out, "--progress", "none")
    assert p.returncode == 1, describe(p)
    entries, _ = journal(out)
    r = entries["report"]
    assert r["status"] == "ok" and r["kind"] == "run" and r["run"]["status"] == "ok", r
    names = sorted(f["name"] for f in r["files"])
    assert names == ["report/sales.csv", "report/sales.xlsx", "report/total.txt"], names
    for f in r["files"]:
        assert sha(out / f["name"]) == f["sha256"]
    assert (out / "report" / "total.txt").read_text() == "42"
    wb = openpyxl.load_workbook(out / "report" / "sales.xlsx")
    assert [[c.value for c in row] for row in wb["Sales"].iter_rows()] == [["North", 12],
                                                                            ["South", 30]]
    f = entries["fails"]
    assert f["status"] == "failed" and f["errors"][0]["code"] == "error_exit", f
    assert f["run"]["exit_code"] == 3
    assert entries["shell"]["status"] == "ok" and (out / "shell" / "hi.txt").read_text() == "hi\n"
    # an input outside the jobs file's directory is refused before anything runs
    write_jobs(path, [{"id": "escape", "run": {"code": "1",
                                                "inputs": [{"path": "../../etc/passwd"}]}}])
    p = run_kiln("batch", path, "-o", tmp_path / "out2")
    assert p.returncode == 3 and "/run/inputs/0/path" in err_text(p), describe(p)
    # a run again replaces its directory whole
    write_jobs(path, [{"id": "shell", "run": {"language": "bash", "code": "echo two > two.txt"}}])
    p = run_kiln("batch", path, "-o", out, "--progress", "none")
    assert p.returncode == 0, describe(p)
    assert sorted(os.listdir(out / "shell")) == ["two.txt"]


def test_a_crashed_worker_fails_its_job_and_the_batch_goes_on(tmp_path):
    path = write_jobs(tmp_path / "jobs.jsonl", [
        {"id": "victim", "run": {"code": SLEEP % 30}},
        {"id": "after1", "render": {"format": "docx", "spec": {"blocks": [
            {"type": "paragraph", "text": "x"}]}}},
        {"id": "after2", "run": {"code": "print(2)"}},
    ])
    out = tmp_path / "out"
    proc = start(path, out, "-j", "1", "--progress", "none")
    [w] = wait_running(proc, out, 1)
    os.kill(w, signal.SIGSEGV)
    proc.wait(120)
    assert proc.returncode == 1, proc.stderr.read()
    entries, _ = journal(out)
    assert entries["victim"]["errors"][0]["code"] == "crashed" and \
        "signal 11" in entries["victim"]["errors"][0]["message"], entries["victim"]
    assert entries["after1"]["status"] == "ok" and entries["after2"]["status"] == "ok"


def test_a_job_past_its_timeout_is_killed(tmp_path):
    path = write_jobs(tmp_path / "jobs.jsonl", [
        {"id": "hang", "run": {"code": SLEEP % 60}},
        {"id": "quick", "run": {"code": "print(1)"}}])
    out = tmp_path / "out"
    p = run_kiln("batch", path, "-o", out, "--job-timeout", "1", "-j", "2", "--progress", "none",
                 timeout=120)
    assert p.returncode == 1, describe(p)
    entries, _ = journal(out)
    assert entries["hang"]["errors"][0]["code"] == "timeout"
    assert entries["quick"]["status"] == "ok"
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "time.sleep(60)" not in ps, "the hung job's sandbox outlived its kill"


def test_sigint_drains_then_resumes(tmp_path):
    jobs = [{"id": "s%d" % i, "run": {"code": SLEEP % 1.5}} for i in range(5)]
    path = write_jobs(tmp_path / "jobs.jsonl", jobs)
    out = tmp_path / "out"
    proc = start(path, out, "-j", "2", "--progress", "lines")
    wait_running(proc, out, 2)
    proc.send_signal(signal.SIGINT)
    proc.wait(120)
    err = proc.stderr.read().decode()
    assert proc.returncode == 130, err
    assert "stopping" in err and "not run" in err, err
    entries, lines = journal(out)
    # the two running finished and were journaled; nothing else started
    assert len(lines) == 2 and all(e["status"] == "ok" for e in entries.values()), lines
    p = run_kiln("batch", path, "-o", out, "-j", "2", "--progress", "lines", timeout=120)
    assert p.returncode == 0 and "2 of them done before, skipped" in err_text(p), describe(p)
    assert len(journal(out)[1]) == 5


def test_a_second_signal_kills_the_running_jobs(tmp_path):
    jobs = [{"id": "s%d" % i, "run": {"code": SLEEP % 60}} for i in range(3)]
    path = write_jobs(tmp_path / "jobs.jsonl", jobs)
    out = tmp_path / "out"
    proc = start(path, out, "-j", "2", "--progress", "none")
    wait_running(proc, out, 2)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    assert proc.returncode == 143, proc.stderr.read()
    # killed jobs leave no journal line: they run next time
    assert (out / "results.jsonl").read_text() == ""
    time.sleep(0.2)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "time.sleep(60)" not in ps, "a killed job's sandbox outlived the batch"


def test_a_run_after_a_pdf_render_in_the_same_worker(tmp_path):
    """A worker keeps its fonts' trimmed copies between jobs; a run's render sandbox, forked
    from it, closes every descriptor, so the copies it inherited are gone there (a regression:
    its PDF failed with "libharu cannot load font")."""
    code = ("import kiln\nkiln.save_spec({'blocks': [{'type': 'paragraph', 'text': 'in the run'}]},"
            " 'r.pdf')\n")
    path = write_jobs(tmp_path / "jobs.jsonl", [
        {"id": "first", "render": {"format": "pdf", "spec": {"blocks": [
            {"type": "paragraph", "text": "first"}]}}},
        {"id": "run", "run": {"code": code}},
        {"id": "after", "render": {"format": "pdf", "spec": {"blocks": [
            {"type": "paragraph", "text": "after"}]}}}])
    out = tmp_path / "out"
    p = run_kiln("batch", path, "-o", out, "-j", "1", "--progress", "none")
    assert p.returncode == 0, describe(p) + (out / "results.jsonl").read_text()
    assert (out / "run" / "r.pdf").read_bytes().startswith(b"%PDF")
    assert subprocess.run(["pdftotext", str(out / "after.pdf"), "-"], capture_output=True,
                          text=True).stdout.split() == ["after", "Page", "1", "of", "1"]


def test_a_noisy_run_keeps_the_journal_readable(tmp_path):
    """A run's streams are cut in its journal line: a megabyte of control characters (6 bytes
    each escaped) made a line the next run refused, and a NUL in stdout failed the job."""
    path = write_jobs(tmp_path / "jobs.jsonl", [
        {"id": "noisy", "run": {"code": "import sys\nsys.stdout.write('\\x01' * 1000000)\n"}},
        {"id": "nul", "run": {"code": "import sys\nsys.stdout.write('a\\x00b')\n"}}])
    out = tmp_path / "out"
    p = run_kiln("batch", path, "-o", out, "--progress", "none")
    assert p.returncode == 0, describe(p) + (out / "results.jsonl").read_text()[:2000]
    lines = (out / "results.jsonl").read_bytes().splitlines()
    assert max(len(l) for l in lines) < 200_000, [len(l) for l in lines]
    entries, _ = journal(out)
    s = entries["noisy"]["run"]["stdout"]
    assert s["bytes"] == 1000000 and s["truncated"] is True and len(s["text"]) == 16384
    assert entries["nul"]["run"]["stdout"]["text"] == "a\x00b"
    p = run_kiln("batch", path, "-o", out, "--progress", "lines")
    assert p.returncode == 0 and "2 of them done before, skipped" in err_text(p), describe(p)


def test_one_batch_per_output_directory(tmp_path):
    path = write_jobs(tmp_path / "jobs.jsonl", [{"id": "s", "run": {"code": SLEEP % 3}}])
    out = tmp_path / "out"
    proc = start(path, out, "--progress", "none")
    wait_running(proc, out, 1)
    other = write_jobs(tmp_path / "other.jsonl", [{"id": "r", "render": {
        "format": "docx", "spec": {"blocks": [{"type": "paragraph", "text": "x"}]}}}])
    p = run_kiln("batch", other, "-o", out, "--progress", "none")
    assert p.returncode == 6 and "another kiln batch is using" in err_text(p), describe(p)
    proc.wait(60)
    assert proc.returncode == 0, proc.stderr.read()
    assert journal(out)[0]["s"]["status"] == "ok"


def test_a_timed_out_job_runs_again_under_a_longer_timeout(tmp_path):
    path = write_jobs(tmp_path / "jobs.jsonl", [{"id": "slow", "run": {"code": SLEEP % 2}}])
    out = tmp_path / "out"
    p = run_kiln("batch", path, "-o", out, "--job-timeout", "0.5", "--progress", "none")
    assert p.returncode == 1 and journal(out)[0]["slow"]["errors"][0]["code"] == "timeout"
    p = run_kiln("batch", path, "-o", out, "--job-timeout", "0.5", "--progress", "lines")
    assert p.returncode == 1 and "1 of them done before, skipped" in err_text(p), describe(p)
    p = run_kiln("batch", path, "-o", out, "--job-timeout", "30", "--progress", "none")
    assert p.returncode == 0, describe(p)
    assert journal(out)[0]["slow"]["status"] == "ok"
