"""Shared fixtures for Kiln's end-to-end tests.

The binary under test comes from $KILN_BIN (default bin/kiln; a relative path is
taken relative to the repository root). ooxml-check comes from $OOXML_CHECK
(default ../shared/tools/ooxml-check beside the repository). A missing tool is a
test failure with a message saying what to install, never a silent skip.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
E2E_DIR = Path(__file__).resolve().parent


def _resolve(env, default):
    p = Path(os.environ.get(env) or default)
    if not p.is_absolute():
        p = REPO / p
    return p


KILN_BIN = _resolve("KILN_BIN", "bin/kiln")
OOXML_CHECK = _resolve("OOXML_CHECK", REPO.parent / "shared" / "tools" / "ooxml-check")


# Under `make asan` the binary runs with AddressSanitizer: its memory and time are
# the sanitizer's, not Kiln's, so measurements of either skip there. So do the external
# readers (LibreOffice, ooxml-check, poppler, qpdf): what they check is the file, which
# the plain build's run (make e2e) has checked; under ASan a test goes as far as Kiln's
# own work (every render and run, under the sanitizers) and stops at the first reader.
SANITIZED = "ASAN_OPTIONS" in os.environ


# The test files that start sandboxes (kiln run, POST /v1/runs): their tests run in one
# pytest-xdist worker, one at a time, so a test's check that none of its sandboxes
# outlives it, and its timing-bound cases, never meet another test's sandbox.
SANDBOX_FILES = {"test_sandbox.py", "test_run_cli.py", "test_run_samples.py", "test_kiln_py.py",
                 "test_serve_runs.py", "test_serve_files.py", "test_serve_demo.py",
                 "test_docs_commands.py", "test_batch_runs.py",
                 "test_serve_batches.py"}
# Fixtures that mount something on the host (a small tmpfs for a full disk): a test using
# one runs with the sandbox files, whose host checks would see its mount as the sandbox's.
HOST_MOUNT_FIXTURES = {"small_disk"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(config, items):
    """xdist groups (`make e2e` runs `--dist loadgroup`): the sandbox files, and the tests
    that mount on the host, share one; every other file is a group of its own, so its
    module and session fixtures (a LibreOffice run over every sample, say) are made once,
    in one worker."""
    for item in items:
        name = item.path.name
        group = ("sandbox" if name in SANDBOX_FILES or HOST_MOUNT_FIXTURES & set(item.fixturenames)
                 else name)
        item.add_marker(pytest.mark.xdist_group(group))


def external_reader(name):
    """Called before running an external reader: skips the rest of the test under ASan."""
    if SANITIZED:
        pytest.skip("%s checks the file in the plain build's run (make e2e), not under ASan" % name)

# --------------------------------------------------------------------------- helpers


def run_kiln_peak(*args, timeout=300):
    """Run the binary under GNU time; returns (CompletedProcess, its peak resident
    memory in bytes). time(1) forks from a small process of its own: a child forked
    from pytest would start with pytest's pages counted in its peak."""
    import tempfile
    with tempfile.NamedTemporaryFile("r") as report:
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report.name, str(KILN_BIN)] +
                              [str(a) for a in args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout)
        kib = int(report.read().strip().splitlines()[-1])
    return proc, kib * 1024


def run_kiln(*args, input=None, timeout=300, cwd=None, env=None):
    """Run the binary; returns CompletedProcess with bytes stdout/stderr."""
    if not (KILN_BIN.is_file() and os.access(KILN_BIN, os.X_OK)):
        pytest.fail("kiln binary not found at %s (build it with `make`, or set KILN_BIN)" % KILN_BIN)
    if isinstance(input, str):
        input = input.encode("utf-8")
    return subprocess.run([str(KILN_BIN)] + [str(a) for a in args], input=input,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                          cwd=cwd, env=env)


def one_break(s):
    """Text as Kiln keeps it: every CR LF and every lone CR a line feed (docs/spec.md,
    "Line breaks")."""
    return s.replace("\r\n", "\n").replace("\r", "\n") if isinstance(s, str) else s


def out_text(proc):
    return proc.stdout.decode("utf-8", "replace")


def err_text(proc):
    return proc.stderr.decode("utf-8", "replace")


def describe(proc):
    return "exit %s\n--- stdout:\n%s\n--- stderr:\n%s" % (
        proc.returncode, out_text(proc)[:3000], err_text(proc)[:3000])


def write_spec(directory, spec, name="spec.json"):
    """Write a spec (dict -> JSON, or str/bytes as is) and return its path."""
    path = Path(directory) / name
    if isinstance(spec, (dict, list)):
        path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    elif isinstance(spec, str):
        path.write_text(spec, encoding="utf-8")
    else:
        path.write_bytes(spec)
    return path


def render_ok(spec_path, out_path, *extra, timeout=300):
    """Render and assert success; returns the output path."""
    proc = run_kiln("render", spec_path, "-o", out_path, *extra, timeout=timeout)
    assert proc.returncode == 0, "render %s failed: %s" % (spec_path, describe(proc))
    assert Path(out_path).is_file(), "render exited 0 but wrote no %s" % out_path
    return Path(out_path)


def listing(directory):
    """Every entry of a directory (hidden ones too) with size and mtime."""
    d = Path(directory)
    result = {}
    for name in sorted(os.listdir(d)):
        st = os.lstat(d / name)
        result[name] = (st.st_size, st.st_mtime_ns)
    return result


def ooxml_check(*files, timeout=900):
    """Run ooxml-check on files; returns CompletedProcess (text)."""
    external_reader("ooxml-check")
    if not OOXML_CHECK.is_file():
        pytest.fail("ooxml-check not found at %s (set OOXML_CHECK, or put shared/ beside the repo)"
                    % OOXML_CHECK)
    return subprocess.run([sys.executable, str(OOXML_CHECK), "--quiet"] + [str(f) for f in files],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def assert_ooxml_ok(*files):
    proc = ooxml_check(*files)
    assert proc.returncode == 0, "ooxml-check failed:\n" + proc.stdout[-6000:]


def soffice_convert(files, outdir, timeout=300, to="pdf"):
    """Convert files to PDF (or to another format, `to` as --convert-to takes it: "xlsx",
    "docx", "pptx") with one LibreOffice call (private profile).
    Returns (CompletedProcess, {file: output path or None})."""
    external_reader("LibreOffice")
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if not soffice:
        pytest.fail("LibreOffice (soffice) is not installed: apt-get install libreoffice-calc-nogui")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    profile = outdir / "lo-profile"
    cmd = [soffice, "-env:UserInstallation=" + profile.resolve().as_uri(), "--headless",
           "--norestore", "--convert-to", to, "--outdir", str(outdir)] + [str(f) for f in files]
    env = dict(os.environ, HOME=str(outdir))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, env=env)
    pdfs = {}
    for f in files:
        pdf = outdir / (Path(f).stem + "." + to.split(":")[0])
        pdfs[Path(f)] = pdf if pdf.is_file() and pdf.stat().st_size > 0 else None
    return proc, pdfs


def load_json(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def sample_specs():
    return sorted(p for p in SAMPLES.glob("*.json"))


# --------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def kiln_bin():
    if not KILN_BIN.is_file():
        pytest.fail("kiln binary not found at %s (build it with `make`, or set KILN_BIN)" % KILN_BIN)
    if not os.access(KILN_BIN, os.X_OK):
        pytest.fail("%s is not executable" % KILN_BIN)
    return KILN_BIN


@pytest.fixture
def outdir(tmp_path):
    """An empty directory for outputs (separate from where specs are written)."""
    d = tmp_path / "out"
    d.mkdir()
    return d


@pytest.fixture
def specdir(tmp_path):
    d = tmp_path / "spec"
    d.mkdir()
    return d


@pytest.fixture(scope="session")
def sample_data_ready():
    """samples/data/*.csv are generated (`make samples`); generate them when missing."""
    gen = SAMPLES / "make_data.py"
    csv_200k = SAMPLES / "data" / "export_200k.csv"
    if not csv_200k.is_file():
        if not gen.is_file():
            pytest.fail("samples/data/export_200k.csv is missing and samples/make_data.py does not exist")
        proc = subprocess.run([sys.executable, str(gen)], cwd=str(REPO), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=600)
        assert proc.returncode == 0, "samples/make_data.py failed:\n" + proc.stdout[-3000:]
        assert csv_200k.is_file(), "samples/make_data.py did not write %s" % csv_200k
    return True


@pytest.fixture(scope="session")
def rendered_samples(tmp_path_factory, kiln_bin, sample_data_ready):
    """Every samples/*.json rendered to xlsx once per session: {stem: (spec_path, xlsx_path, seconds)}."""
    specs = sample_specs()
    d = tmp_path_factory.mktemp("samples")
    result = {}
    failures = [] if specs else ["no samples/*.json found"]
    for spec in specs:
        out = d / (spec.stem + ".xlsx")
        t0 = time.monotonic()
        proc = run_kiln("render", spec, "-o", out, timeout=600)
        dt = time.monotonic() - t0
        if proc.returncode != 0 or not out.is_file():
            failures.append("%s: %s" % (spec.name, describe(proc)))
            result[spec.stem] = (spec, None, dt)
        else:
            result[spec.stem] = (spec, out, dt)
    result["_failures"] = failures
    return result


# --------------------------------------------------------------------------- PDF helpers (docx tests)

def pdf_text(pdf, layout=False, timeout=300):
    """pdftotext of a PDF (poppler-utils), as text."""
    external_reader("pdftotext")
    tool = shutil.which("pdftotext")
    if not tool:
        pytest.fail("pdftotext is not installed: apt-get install poppler-utils")
    args = [tool] + (["-layout"] if layout else []) + [str(pdf), "-"]
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    assert proc.returncode == 0, "pdftotext %s failed: %s" % (pdf, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout.decode("utf-8", "replace")


def pdf_pages(pdf, timeout=120):
    """The page count pdfinfo reports."""
    external_reader("pdfinfo")
    tool = shutil.which("pdfinfo")
    if not tool:
        pytest.fail("pdfinfo is not installed: apt-get install poppler-utils")
    proc = subprocess.run([tool, str(pdf)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, text=True)
    assert proc.returncode == 0, "pdfinfo %s failed: %s" % (pdf, proc.stderr)
    m = re.search(r"^Pages:\s+(\d+)", proc.stdout, re.M)
    assert m, "pdfinfo printed no page count:\n" + proc.stdout
    return int(m.group(1))


@pytest.fixture(scope="session")
def long_report_ready():
    """samples/data/long_report.json, generated by samples/make_long_report.py (which
    samples/make_data.py and `make samples` run too); the generator rewrites it when it is
    missing or older than the generator, and does nothing otherwise."""
    gen = SAMPLES / "make_long_report.py"
    spec = SAMPLES / "data" / "long_report.json"
    if not gen.is_file():
        pytest.fail("samples/make_long_report.py does not exist")
    proc = subprocess.run([sys.executable, str(gen)], cwd=str(REPO), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    assert proc.returncode == 0, "samples/make_long_report.py failed:\n" + proc.stdout[-3000:]
    assert spec.is_file(), "samples/make_long_report.py did not write %s" % spec
    return spec


# --------------------------------------------------------------------------- PDF helpers (pdf tests)

def pdf_tool(name):
    """The path of a poppler-utils or qpdf tool; a clear failure when it is missing."""
    external_reader(name)
    tool = shutil.which(name)
    if not tool:
        pkg = "qpdf" if name == "qpdf" else "poppler-utils"
        pytest.fail("%s is not installed: apt-get install %s" % (name, pkg))
    return tool


def qpdf_check(pdf, timeout=300):
    """`qpdf --check` of a PDF: CompletedProcess (text, stderr merged)."""
    return subprocess.run([pdf_tool("qpdf"), "--check", str(pdf)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)


def pdf_info(pdf, first=None, last=None, timeout=120):
    """pdfinfo (with -isodates) as {key: value}; with first/last also 'page_sizes', a list
    of (width, height, rotation) in points for those pages."""
    args = [pdf_tool("pdfinfo"), "-isodates"]
    if first is not None:
        args += ["-f", str(first), "-l", str(last if last is not None else first)]
    proc = subprocess.run(args + [str(pdf)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)
    assert proc.returncode == 0, "pdfinfo %s failed: %s" % (pdf, proc.stderr.decode("utf-8", "replace"))
    info, sizes, rots = {}, {}, {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        m = re.match(r"^Page\s+(\d+)\s+size:\s+([\d.]+) x ([\d.]+) pts", line)
        if m:
            sizes[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
            continue
        m = re.match(r"^Page\s+(\d+)\s+rot:\s+(\d+)", line)
        if m:
            rots[int(m.group(1))] = int(m.group(2))
            continue
        key, sep, value = line.partition(":")
        if sep and key not in info:
            info[key.strip()] = value.strip()
    if sizes:
        info["page_sizes"] = [sizes[n] + (rots.get(n, 0),) for n in sorted(sizes)]
    return info


def page_range_args(first=None, last=None):
    if first is None:
        return []
    return ["-f", str(first), "-l", str(last if last is not None else first)]


def pdf_fonts(pdf, first=None, last=None, timeout=300):
    """pdffonts (of pages first..last, default all) as a list of {name, type, encoding,
    emb, sub, uni}."""
    proc = subprocess.run([pdf_tool("pdffonts")] + page_range_args(first, last) + [str(pdf)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    assert proc.returncode == 0, "pdffonts %s failed: %s" % (pdf, proc.stderr.decode("utf-8", "replace"))
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    assert len(lines) >= 2 and lines[1].startswith("---"), "pdffonts output not understood:\n" + "\n".join(lines)
    # columns are as wide as the dashes under the header
    spans, pos = [], 0
    for dashes in lines[1].split(" "):
        spans.append((pos, pos + len(dashes)))
        pos += len(dashes) + 1
    keys = ["name", "type", "encoding", "emb", "sub", "uni", "object"]
    rows = []
    for line in lines[2:]:
        if not line.strip():
            continue
        fields = [line[a:b].strip() for a, b in spans]
        rows.append(dict(zip(keys, fields)))
    return rows


def pdf_page_texts(pdf, layout=True, first=None, last=None, mode=None, timeout=300):
    """pdftotext of every page (or of pages first..last): a list, one string a page
    (pdftotext ends each page with a form feed, so this is what `pdftotext -f N -l N`
    gives page by page). mode "raw" reads in content stream order instead of -layout."""
    args = [pdf_tool("pdftotext")] + page_range_args(first, last)
    if mode == "raw":
        args.append("-raw")
    elif layout:
        args.append("-layout")
    proc = subprocess.run(args + [str(pdf), "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)
    assert proc.returncode == 0, "pdftotext %s failed: %s" % (pdf, proc.stderr.decode("utf-8", "replace"))
    pages = proc.stdout.decode("utf-8", "replace").split("\f")
    if pages and not pages[-1].strip():
        pages.pop()
    return pages


def pdf_words(pdf, first=None, last=None, timeout=300):
    """pdftotext -bbox (of pages first..last, default all): a list of pages, each
    (width, height, [(xmin, ymin, xmax, ymax, word)]), y measured down from the top."""
    import html
    proc = subprocess.run([pdf_tool("pdftotext"), "-bbox"] + page_range_args(first, last) + [str(pdf), "-"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    assert proc.returncode == 0, "pdftotext -bbox %s failed: %s" % (pdf, proc.stderr.decode("utf-8", "replace"))
    xhtml = proc.stdout.decode("utf-8", "replace")
    pages = []
    for pm in re.finditer(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', xhtml, re.S):
        words = [(float(a), float(b), float(c), float(d), html.unescape(t))
                 for a, b, c, d, t in re.findall(
                     r'<word xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)">(.*?)</word>',
                     pm.group(3), re.S)]
        pages.append((float(pm.group(1)), float(pm.group(2)), words))
    return pages


def pdf_images(pdf, timeout=120):
    """pdfimages -list as a list of {page, num, type, width, height, color, ...}."""
    proc = subprocess.run([pdf_tool("pdfimages"), "-list", str(pdf)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)
    assert proc.returncode == 0, "pdfimages %s failed: %s" % (pdf, proc.stderr.decode("utf-8", "replace"))
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    keys = lines[0].split() if lines else []
    rows = []
    for line in lines[2:]:
        f = line.split()
        if len(f) >= 6:
            rows.append({"page": int(f[0]), "num": int(f[1]), "type": f[2], "width": int(f[3]),
                         "height": int(f[4]), "color": f[5], "fields": f, "keys": keys})
    return rows


@pytest.fixture(scope="session")
def long_report_pdf_ready(long_report_ready):
    """samples/data/long_report_pdf.json: the long report's PDF edition (twice the sites,
    200+ pages as a PDF), written by samples/make_long_report.py beside the long report."""
    spec = SAMPLES / "data" / "long_report_pdf.json"
    assert spec.is_file(), "samples/make_long_report.py did not write %s" % spec
    return spec
