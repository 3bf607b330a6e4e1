"""End-to-end tests of the sample jobs (samples/jobs/*.py) through the sandbox:

    kiln run -i samples/jobs/data/sales.csv -o OUT samples/jobs/csv_to_spreadsheet.py

Each job must end with status "ok", list its documents (name, format, size, media type,
SHA-256 matching the copy in OUT), and each document must pass the writer tests' checks:
ooxml-check (OOXML packages), LibreOffice headless conversion, and the values read back
(openpyxl, python-docx, pdftotext, the pptx XML) equal to what pandas computes from the
input CSV (tests/e2e/jobs_checks.py, shared with test_kiln_py.py).

Every job runs once per module (run_results); LibreOffice converts all OOXML documents
in one call (lo_pdfs).
"""
import hashlib
import json
from pathlib import Path

import pytest

from conftest import assert_ooxml_ok, describe, out_text, pdf_text, run_kiln, soffice_convert
import jobs_checks
from jobs_checks import JOB_OUTPUTS, JOBS

MEDIA_TYPES = {
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "pdf": "application/pdf",
}

STDOUT_SAYS = {"csv_to_spreadsheet.py": "total revenue: ", "report.py": "Revenue for 2025 was $",
               "deck.py": "Variant A"}


@pytest.fixture(scope="module")
def run_results(tmp_path_factory, kiln_bin):
    """{job: (result JSON, out dir)} for every sample job, run once as the README runs it
    (its saved specs rendered by default)."""
    results = {}
    for job, (inputs, _) in sorted(JOB_OUTPUTS.items()):
        out = tmp_path_factory.mktemp("run-" + Path(job).stem) / "out"
        args = ["run"]
        for f in inputs:
            args += ["-i", f]
        args += ["-o", out, JOBS / job]
        proc = run_kiln(*args, timeout=600)
        try:
            result = json.loads(out_text(proc))
        except ValueError:
            result = None
        results[job] = (proc, result, out)
    return results


def job_result(run_results, job):
    proc, result, out = run_results[job]
    assert result is not None, "kiln run printed no JSON: %s" % describe(proc)
    assert proc.returncode == 0 and result["status"] == "ok", \
        "%s: status %s (%s)\nstderr of the job:\n%s\n%s" % (
            job, result.get("status"), result.get("message"),
            result.get("stderr", {}).get("text", "")[-4000:], describe(proc))
    return result, out


@pytest.mark.parametrize("job", sorted(JOB_OUTPUTS))
def test_job_result(run_results, job):
    result, out = job_result(run_results, job)
    inputs, outputs = JOB_OUTPUTS[job]
    assert result["exit_code"] == 0 and result["signal"] is None and result["timeout"] is None
    assert result["language"] == "python"
    assert result["render_errors"] == [], result["render_errors"]
    assert result["refused"] == [] and result["refused_more"] == 0, result["refused"]
    assert STDOUT_SAYS[job] in result["stdout"]["text"], result["stdout"]
    assert not result["stdout"]["truncated"] and not result["stderr"]["truncated"]
    assert Path(result["out_dir"]).resolve() == out.resolve()

    docs = {d["name"]: d for d in result["documents"]}
    assert sorted(docs) == sorted(outputs), result["documents"]
    for name, d in docs.items():
        fmt = name.rsplit(".", 1)[1]
        assert d["format"] == fmt and d["media_type"] == MEDIA_TYPES[fmt], d
        assert d["spec"] == ".kiln/%s.spec.json" % name, d
        assert d["warnings"] == [], d
        copied = out / name
        assert copied.is_file(), "%s was not copied to %s" % (name, out)
        data = copied.read_bytes()
        assert d["bytes"] == len(data) > 0
        assert d["sha256"] == hashlib.sha256(data).hexdigest()
    files = {f["name"]: f for f in result["files"]}
    for f in inputs:                              # the inputs are in the job directory too
        assert f.name in files, result["files"]
        assert files[f.name]["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
    for name, f in files.items():
        assert len(f["sha256"]) == 64
        if (out / name).is_file():
            assert hashlib.sha256((out / name).read_bytes()).hexdigest() == f["sha256"]


def all_documents():
    return [(job, name) for job, (_, outs) in sorted(JOB_OUTPUTS.items()) for name in outs]


@pytest.mark.parametrize("job,name", all_documents())
def test_document_values(run_results, job, name):
    """The values in each document equal what pandas computes from the input CSV."""
    _, out = job_result(run_results, job)
    jobs_checks.check_document(out / name)


@pytest.mark.parametrize("job,name", [(j, n) for j, n in all_documents() if not n.endswith(".pdf")])
def test_ooxml_check(run_results, job, name):
    _, out = job_result(run_results, job)
    assert_ooxml_ok(out / name)


@pytest.fixture(scope="module")
def lo_pdfs(run_results, tmp_path_factory):
    files = []
    for job, name in all_documents():
        if name.endswith(".pdf"):
            continue
        _, _, out = run_results[job]
        if (out / name).is_file():
            files.append(out / name)
    d = tmp_path_factory.mktemp("lo")
    proc, pdfs = soffice_convert(files, d, timeout=600)
    return proc, {p.name: pdf for p, pdf in pdfs.items()}


@pytest.mark.parametrize("job,name", [(j, n) for j, n in all_documents() if not n.endswith(".pdf")])
def test_libreoffice_opens(run_results, lo_pdfs, job, name):
    job_result(run_results, job)
    proc, pdfs = lo_pdfs
    pdf = pdfs.get(name)
    assert pdf is not None, "LibreOffice did not convert %s:\n%s" % (name, proc.stdout[-3000:])
    text = pdf_text(pdf)
    for s in jobs_checks.LO_TEXT[name]:
        assert s in text, "%r not in LibreOffice's rendering of %s" % (s, name)


def test_readme_lists_every_job():
    readme = (JOBS / "README.md").read_text(encoding="utf-8")
    for job, (inputs, outputs) in JOB_OUTPUTS.items():
        cmd = "kiln run %s -o out samples/jobs/%s" % (
            " ".join("-i samples/jobs/data/%s" % f.name for f in inputs), job)
        assert cmd in readme, "README does not show: " + cmd
        for o in outputs:
            assert o in readme


def test_sandbox_has_this_kiln_module(kiln_bin, tmp_path):
    """The kiln.py inside the sandbox is exec/python/kiln.py as built into the binary
    (rebuild after editing it), and importing it loads neither pandas nor numpy."""
    code = ("import hashlib, sys, kiln\n"
            "print(hashlib.sha256(open(kiln.__file__, 'rb').read()).hexdigest())\n"
            "print(kiln.job_dir(), sorted(m for m in ('pandas', 'numpy', 'matplotlib') if m in sys.modules))\n")
    proc = run_kiln("run", "-n", "-o", tmp_path / "out", "-c", code)
    result = json.loads(out_text(proc))
    assert result["status"] == "ok", describe(proc)
    lines = result["stdout"]["text"].splitlines()
    want = hashlib.sha256((JOBS.parent.parent / "exec" / "python" / "kiln.py").read_bytes()).hexdigest()
    assert lines[0] == want, "the binary holds an older kiln.py: rebuild it"
    assert lines[1] == "/mnt/data []", lines
