"""The `batch` benchmark (`make bench BENCH=batch`; see bench/README.md, "batch"):
10,000 invoices by mail merge, `kiln batch` beside ReportLab (PDF) and docxtemplater
and Carbone (docx).

    /usr/bin/python3 bench/run.py batch [--rows 10000] [--batch-small 1000]
                                        [--batch-jobs N] [--carbone-rows 2000]
                                        [--batch-samples 20] [--kiln PATH]
                                        [--no-python] [--no-node]

1. bench/batch_workload.py writes into bench/out/batch/ the invoices (JSON Lines, a
   seeded generator: the same rows on every machine), Kiln's template spec, the
   docxtemplater and Carbone .docx templates and their flat rows.
2. Each tool makes one document per invoice into a fresh directory (kiln batch resumes
   from OUTDIR/results.jsonl, so a stale directory would time nothing):
     kiln batch --format pdf       --rows and --batch-small invoices (memory against N)
     ReportLab                     bench/py_reportlab_invoices.py, one process
     kiln batch --format docx      --rows and --batch-small invoices
     docxtemplater + pizzip        bench/npm_docxtemplater.js, one Node process
     Carbone (docx -> docx)        bench/npm_carbone.js on the first --carbone-rows
                                   invoices (about 30 documents/s here: the whole set
                                   would take five minutes); compared by documents/s
3. For each: documents, wall s, documents/s, CPU s (user + system of the child and
   every descendant it reaped: the delta of getrusage(RUSAGE_CHILDREN) around the run),
   the largest single process's peak RSS (its VmHWM) and, because kiln batch forks
   workers, the peak of the whole process tree's RSS summed, both from /proc every 50 ms
   (shared pages count once per process: an upper bound). Not ru_maxrss: Linux counts in
   a child's the forked copy of this Python process before its exec. Then Kiln / baseline in
   documents/s against the issue's targets (>= 10x ReportLab for PDF, >= 10x
   docxtemplater for docx), and Kiln's peak at --batch-small beside --rows.
4. Verification: the expected file names all present, kiln's results.jsonl one "ok"
   line per row whose bytes and sha256 match the file, and --batch-samples outputs per
   tool (spread over the set) read back with an independent reader: pypdf (one page)
   and pdftotext for PDF, python-docx for docx; each must hold its invoice id, its
   customer, every line item's amount and the total; qpdf --check and pdffonts (every
   font embedded) on a few PDFs per tool.

It reports; it never fails on a timing. It exits non-zero only when a tool fails or
writes wrong content. When bin/kiln has no `batch` command yet, the Kiln rows say so
and the baselines still run.
"""
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import batch_workload as wl  # noqa: E402

PYTHON = "/usr/bin/python3"
OUT = os.path.join(HERE, "out", "batch")
PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_EVERY = 0.05   # seconds between two /proc samples of the tree's RSS
QPDF_FILES = 3        # PDFs per tool given to qpdf --check and pdffonts


class BenchError(RuntimeError):
    pass


# ------------------------------------------------------------------ measuring


def vm_hwm(pid):
    """A process's own peak RSS (bytes): VmHWM, the high-water mark of its address space
    since its exec, so unlike ru_maxrss it does not start at the forking parent's size."""
    try:
        with open("/proc/%d/status" % pid, "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def tree_rss(root):
    """The summed RSS (bytes) of root and all its descendants, and the largest VmHWM
    among them, from /proc."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name may hold spaces and ')': the fields after the last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(name))
    total, hwm, pending = 0, 0, [root]
    while pending:
        pid = pending.pop()
        try:
            with open("/proc/%d/statm" % pid, "rb") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            pass
        hwm = max(hwm, vm_hwm(pid))
        pending.extend(children.get(pid, ()))
    return total, hwm


def measure(cmd, log_path):
    """Run cmd (stdout and stderr to log_path). Returns wall s, CPU s (the child and its
    reaped descendants: RUSAGE_CHILDREN delta), the peak RSS of the largest single process
    (bytes, the largest VmHWM seen) and the peak of the tree's summed RSS (bytes), both
    from /proc samples every SAMPLE_EVERY s, and the exit status. Not wait4's ru_maxrss:
    Linux counts in it the forked copy of this (large) Python process before the exec."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak, hwm = [0], [0]
    done = threading.Event()
    with open(log_path, "wb") as log:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)

        def sample():
            while not done.is_set():
                tree, high = tree_rss(p.pid)
                peak[0], hwm[0] = max(peak[0], tree), max(hwm[0], high)
                done.wait(SAMPLE_EVERY)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, _ = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        done.set()
        sampler.join()
        p.returncode = os.waitstatus_to_exitcode(status)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "proc_peak": hwm[0], "tree_peak": peak[0],
            "rc": p.returncode}


def log_tail(path, lines=4):
    try:
        with open(path, "rb") as f:
            text = f.read()[-4000:].decode("utf-8", "replace")
    except OSError:
        return ""
    return " | ".join(text.strip().splitlines()[-lines:])


# ------------------------------------------------------------------ verifying


def expected_names(n, ext):
    return ["INV-%06d.%s" % (i, ext) for i in range(1, n + 1)]


def sample_indices(n, k):
    """k row numbers (1-based) spread over 1..n, first and last included."""
    if n <= k:
        return list(range(1, n + 1))
    return sorted({1 + j * (n - 1) // (k - 1) for j in range(k)})


def sample_rows(path, indices):
    want, got = set(indices), {}
    for i, row in enumerate(wl.read_rows(path), 1):
        if i in want:
            got[i] = row
        if i >= max(want):
            break
    return got


def must_hold(row):
    """The strings every rendering of row shows: id, customer, each amount, the total."""
    return ([row["invoice_id"], row["customer"]["name"], wl.fmt_currency(row["total"])]
            + [wl.fmt_currency(a) for _, _, _, a in row["items"]])


def pdf_text(path):
    from pypdf import PdfReader
    pages = len(PdfReader(path).pages)
    text = subprocess.run(["pdftotext", "-enc", "UTF-8", "-layout", path, "-"],
                          capture_output=True, text=True, check=True).stdout
    return pages, text


def docx_text(path):
    import docx
    d = docx.Document(path)
    parts = [p.text for p in d.paragraphs]
    item_rows = None
    for t in d.tables:
        rows = [[c.text for c in r.cells] for r in t.rows]
        parts.extend(" ".join(r) for r in rows)
        if rows and rows[0][:2] == ["Description", "Qty"]:
            item_rows = len(rows) - 1
    return item_rows, "\n".join(parts)


def check_pdf(path, row):
    pages, text = pdf_text(path)
    flat = " ".join(text.split())
    missing = [s for s in must_hold(row) if " ".join(s.split()) not in flat]
    problems = []
    if pages != 1:
        problems.append("%d pages, expected 1" % pages)
    if missing:
        problems.append("text missing: %s" % ", ".join(missing[:4]))
    return problems


def check_docx(path, row):
    item_rows, text = docx_text(path)
    problems = []
    if item_rows != len(row["items"]):
        problems.append("%s item rows, expected %d" % (item_rows, len(row["items"])))
    missing = [s for s in must_hold(row) if s not in text]
    if missing:
        problems.append("text missing: %s" % ", ".join(missing[:4]))
    return problems


def check_pdf_file(path):
    """qpdf --check clean and every font embedded."""
    problems = []
    q = subprocess.run(["qpdf", "--check", path], capture_output=True, text=True)
    if q.returncode != 0:
        problems.append("qpdf --check: %s" % (q.stdout + q.stderr).strip().splitlines()[-1:])
    fonts = subprocess.run(["pdffonts", path], capture_output=True, text=True).stdout
    lines = fonts.splitlines()[2:]
    if not lines:
        problems.append("pdffonts lists no font")
    for line in lines:
        cols = line.split()
        # name type... encoding emb sub uni id gen: emb is the 5th from the end
        if len(cols) >= 5 and cols[-5] != "yes":
            problems.append("font not embedded: %s" % cols[0])
    return problems


def verify(r, n, ext, data_path, samples, results_jsonl):
    """Files present, kiln's results.jsonl consistent, samples read back. Adds r["checks"]
    (a line of what was checked) or r["error"]."""
    outdir = r["outdir"]
    have = set(os.listdir(outdir))
    names = expected_names(n, ext)
    missing = [x for x in names if x not in have]
    if missing:
        r["error"] = "%d of %d files missing (first %s)" % (len(missing), n, missing[0])
        return
    r["bytes"] = sum(os.path.getsize(os.path.join(outdir, x)) for x in names)
    checks = ["%d files" % n]
    if results_jsonl:
        path = os.path.join(outdir, "results.jsonl")
        ok, bad, recs = 0, [], {}
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    if rec.get("status") == "ok":
                        ok += 1
                        for fl in rec.get("files", []):
                            recs[fl.get("name")] = fl
                    else:
                        bad.append(rec)
        except (OSError, ValueError) as e:
            r["error"] = "results.jsonl unreadable: %s" % e
            return
        if ok != n or bad:
            r["error"] = "results.jsonl: %d ok, %d not ok (first %s)" % (
                ok, len(bad), json.dumps(bad[0])[:300] if bad else "-")
            return
        checks.append("results.jsonl %d ok" % ok)
    idx = sample_indices(n, samples)
    rows = sample_rows(data_path, idx)
    hashed = 0
    for i in idx:
        name = names[i - 1]
        path = os.path.join(outdir, name)
        problems = check_pdf(path, rows[i]) if ext == "pdf" else check_docx(path, rows[i])
        if results_jsonl:
            rec = recs.get(name)
            with open(path, "rb") as f:
                blob = f.read()
            if rec is None:
                problems.append("not in results.jsonl")
            elif rec.get("bytes") != len(blob) or rec.get("sha256") != \
                    hashlib.sha256(blob).hexdigest():
                problems.append("bytes/sha256 differ from results.jsonl")
            else:
                hashed += 1
        if problems:
            r["error"] = "%s: %s" % (name, "; ".join(problems))
            return
    checks.append("%d samples read back (%s)" % (len(idx), "pypdf + pdftotext" if ext == "pdf"
                                                 else "python-docx"))
    if hashed:
        checks.append("%d sha256 match" % hashed)
    if ext == "pdf":
        for i in idx[:QPDF_FILES]:
            problems = check_pdf_file(os.path.join(outdir, names[i - 1]))
            if problems:
                r["error"] = "%s: %s" % (names[i - 1], "; ".join(problems))
                return
        checks.append("qpdf --check + pdffonts on %d" % min(QPDF_FILES, len(idx)))
    r["checks"] = ", ".join(checks)


# ------------------------------------------------------------------ the tools


def kiln_has_batch(kiln):
    """None when `kiln batch` exists, else why not."""
    if not os.access(kiln, os.X_OK):
        return "no kiln binary at %s" % kiln
    p = subprocess.run([kiln, "batch", "--help"], capture_output=True, text=True)
    if p.returncode != 0 and "unknown command" in (p.stderr + p.stdout):
        return "%s has no `batch` command yet" % kiln
    return None


def run_one(tool, outdir, cmd, n, ext, data_path, samples, results_jsonl=False):
    """Time cmd into a fresh outdir, then verify what it wrote."""
    print("bench: %s, %s documents ..." % (tool, "{:,}".format(n)), flush=True)
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    log = outdir + ".log"
    m = measure(cmd, log)
    r = {"tool": tool, "n": n, "ext": ext, "outdir": outdir, **m}
    if m["rc"] != 0:
        r["error"] = "exit %d: %s" % (m["rc"], log_tail(log))
        return r
    verify(r, n, ext, data_path, samples, results_jsonl)
    if "error" not in r:
        print("bench:   ok: %s" % r["checks"], flush=True)
    return r


def mib(b):
    return b / (1 << 20)


def fmt_rate(r):
    return r["n"] / r["wall"]


def print_table(results, ratio_of):
    print()
    print("| tool | documents | wall s | docs/s | cpu s | cpu ms/doc | peak RSS MiB (one process)"
          " | peak RSS MiB (process tree) | output MiB | Kiln docs/s / this |")
    print("|------|------:|------:|------:|------:|------:|------:|------:|------:|------:|")
    for r in results:
        if "error" in r or "skipped" in r:
            print("| %s | - | - | - | - | - | - | - | - | %s |"
                  % (r["tool"], "skipped: " + r["skipped"] if "skipped" in r
                     else "**failed**: " + r["error"].replace("|", "/")))
            continue
        kiln = ratio_of.get(r["tool"])
        ratio = "%.1fx" % (fmt_rate(kiln) / fmt_rate(r)) if kiln else "-"
        print("| %s | %s | %.2f | %.1f | %.2f | %.2f | %.1f | %.1f | %.1f | %s |"
              % (r["tool"], "{:,}".format(r["n"]), r["wall"], fmt_rate(r), r["cpu"],
                 1000 * r["cpu"] / r["n"], mib(r["proc_peak"]), mib(r["tree_peak"]),
                 mib(r["bytes"]), ratio))


def run_batch(args):
    """The batch workload; returns the exit status."""
    n, small = args.rows, args.batch_small
    carbone_n = min(args.carbone_rows, n)
    kiln = os.path.abspath(args.kiln)
    jobs = args.batch_jobs or os.cpu_count() or 1
    sizes = sorted({n, small, carbone_n})
    fs = wl.generate(OUT, sizes)
    big = fs[n]
    try:
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
    except OSError:
        load = "?"
    print("bench: batch: %s invoices, kiln -j %d, %d cores, load average %s"
          % ("{:,}".format(n), jobs, os.cpu_count() or 0, load), flush=True)

    no_batch = kiln_has_batch(kiln)
    out = lambda name: os.path.join(OUT, name)  # noqa: E731

    def kiln_run(fmt, rows):
        tool = "kiln batch --format %s -j %d" % (fmt, jobs)
        if rows != n:
            tool += " (%s rows)" % "{:,}".format(rows)
        if no_batch:
            return {"tool": tool, "skipped": no_batch}
        cmd = [kiln, "batch", "--template", fs[rows]["template"], "--data", fs[rows]["jsonl"],
               "--format", fmt, "--name", "{{invoice_id}}." + fmt,
               "-o", out("kiln_%s_%d" % (fmt, rows)), "-j", str(jobs), "--progress", "none"]
        return run_one(tool, out("kiln_%s_%d" % (fmt, rows)), cmd, rows, fmt, fs[rows]["jsonl"],
                       args.batch_samples, results_jsonl=True)

    node_ok = os.path.isdir(os.path.join(HERE, "node_modules", "docxtemplater"))
    results = []
    pdf = [kiln_run("pdf", n)]
    if small < n:
        pdf.append(kiln_run("pdf", small))
    if not args.no_python:
        pdf.append(run_one("ReportLab %s (one process)" % reportlab_version(),
                           out("reportlab_%d" % n),
                           [PYTHON, os.path.join(HERE, "py_reportlab_invoices.py"), big["jsonl"],
                            out("reportlab_%d" % n)], n, "pdf", big["jsonl"],
                           args.batch_samples))
    docx = [kiln_run("docx", n)]
    if small < n:
        docx.append(kiln_run("docx", small))
    if not args.no_node:
        if not node_ok:
            docx.append({"tool": "docxtemplater", "skipped": "no bench/node_modules "
                         "(npm ci --prefix bench)"})
        else:
            docx.append(run_one("docxtemplater %s + pizzip %s (one Node process)"
                                % (npm_version("docxtemplater"), npm_version("pizzip")),
                                out("docxtemplater_%d" % n),
                                ["node", os.path.join(HERE, "npm_docxtemplater.js"),
                                 big["dt_template"], big["dt_jsonl"], out("docxtemplater_%d" % n)],
                                n, "docx", big["jsonl"], args.batch_samples))
            cb = fs[carbone_n]
            label = "Carbone %s docx->docx (one Node process)" % npm_version("carbone")
            if carbone_n != n:
                label += ", first %s rows" % "{:,}".format(carbone_n)
            docx.append(run_one(label, out("carbone_%d" % carbone_n),
                                ["node", os.path.join(HERE, "npm_carbone.js"),
                                 cb["carbone_template"], cb["dt_jsonl"],
                                 out("carbone_%d" % carbone_n)],
                                carbone_n, "docx", cb["jsonl"], args.batch_samples))
    results = pdf + docx

    def ok(r):
        return r if r and "error" not in r and "skipped" not in r else None

    kiln_pdf, kiln_docx = ok(pdf[0]), ok(docx[0])
    ratio_of = {}
    for r in pdf[1:]:
        if not r["tool"].startswith("kiln") and kiln_pdf:
            ratio_of[r["tool"]] = kiln_pdf
    for r in docx[1:]:
        if not r["tool"].startswith("kiln") and kiln_docx:
            ratio_of[r["tool"]] = kiln_docx
    print_table(results, ratio_of)
    print()

    def target(kiln_r, base_prefix, what):
        base = next((r for r in results if r["tool"].startswith(base_prefix)), None)
        if not ok(kiln_r) or not ok(base):
            print("target: kiln %s >= 10x %s: not measured (%s)" % (
                what, base_prefix, (kiln_r or {}).get("skipped") or (kiln_r or {}).get("error")
                or (base or {}).get("skipped") or (base or {}).get("error") or "not run"))
            return
        x = fmt_rate(kiln_r) / fmt_rate(base)
        per_cpu = (base["cpu"] / base["n"]) / (kiln_r["cpu"] / kiln_r["n"])
        print("target: kiln %s >= 10x %s in docs/s: %.1fx (%s); per CPU second %.1fx"
              % (what, base_prefix, x, "met" if x >= 10 else "**not met**", per_cpu))

    target(pdf[0], "ReportLab", "batch --format pdf")
    target(docx[0], "docxtemplater", "batch --format docx")
    # Resume: the same command again over the finished batch (docs/batch.md, "Resume"):
    # every job is found done in the journal, its files stat'ed (not read), nothing forked.
    for fmt, group in (("pdf", pdf), ("docx", docx)):
        if not ok(group[0]):
            continue
        cmd = [kiln, "batch", "--template", fs[n]["template"], "--data", fs[n]["jsonl"],
               "--format", fmt, "--name", "{{invoice_id}}." + fmt,
               "-o", out("kiln_%s_%d" % (fmt, n)), "-j", str(jobs), "--progress", "lines"]
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.monotonic() - t0
        done = "%s ok, 0 failed (%s of them done before, skipped)" % (n, n)
        if p.returncode != 0 or done not in p.stderr:
            failed_resume = "resume of the finished %s batch: exit %d: %s" % (
                fmt, p.returncode, p.stderr[-500:])
            results.append({"tool": "kiln resume %s" % fmt, "error": failed_resume})
            continue
        print("resume: the finished %s-job %s batch run again: %.3f s, every job skipped "
              "(target: under 1 s: %s)" % ("{:,}".format(n), fmt, dt,
                                            "met" if dt < 1 else "**not met**"))
    for fmt, group in (("pdf", pdf), ("docx", docx)):
        if small < n and ok(group[0]) and ok(group[1]):
            print("memory: kiln batch --format %s peak RSS, process tree: %.1f MiB at %s jobs, "
                  "%.1f MiB at %s; one process: %.1f and %.1f MiB"
                  % (fmt, mib(group[1]["tree_peak"]), "{:,}".format(small),
                     mib(group[0]["tree_peak"]), "{:,}".format(n),
                     mib(group[1]["proc_peak"]), mib(group[0]["proc_peak"])))
    if not no_batch and not args.no_batch_service:
        import batch_service
        rows = carbone_n if carbone_n < n else small
        print("\nbench: batch on kiln serve: POST /v1/render latency, idle and while a "
              "%s-invoice batch runs ..." % "{:,}".format(rows), flush=True)
        try:
            batch_service.report(batch_service.run(kiln, fs[rows]["template"], fs[rows]["jsonl"]))
        except Exception as e:  # noqa: BLE001 (reported as a failure below)
            results.append({"tool": "kiln serve batch", "error": str(e)})
    if no_batch:
        print("bench: batch: Kiln not measured: %s" % no_batch)
    failed = [r for r in results if "error" in r]
    for r in failed:
        print("bench: FAILED: %s: %s" % (r["tool"], r["error"]))
    return 1 if failed else 0


def reportlab_version():
    try:
        import reportlab
        return reportlab.Version
    except ImportError:
        return "?"


def npm_version(package):
    try:
        with open(os.path.join(HERE, "node_modules", package, "package.json"),
                  encoding="utf-8") as f:
            return json.load(f)["version"]
    except (OSError, ValueError, KeyError):
        return "?"


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000, help="invoices (default 10,000)")
    ap.add_argument("--batch-small", type=int, default=1_000,
                    help="kiln's second run, to show peak memory against the job count")
    ap.add_argument("--batch-jobs", type=int, default=0, help="kiln batch -j (default: cores)")
    ap.add_argument("--carbone-rows", type=int, default=2_000,
                    help="Carbone's subset (it makes about 30 documents/s)")
    ap.add_argument("--batch-samples", type=int, default=20,
                    help="outputs per tool read back and checked")
    ap.add_argument("--kiln", default=os.environ.get(
        "KILN_BIN", os.path.join(os.path.dirname(HERE), "bin/kiln")))
    ap.add_argument("--no-python", action="store_true", help="skip ReportLab")
    ap.add_argument("--no-node", action="store_true", help="skip docxtemplater and Carbone")
    args = ap.parse_args()
    if not 0 < args.batch_small <= args.rows or args.carbone_rows < 1 or args.batch_samples < 1:
        ap.error("need 0 < --batch-small <= --rows, --carbone-rows >= 1, --batch-samples >= 1")
    return run_batch(args)


if __name__ == "__main__":
    sys.exit(main())
