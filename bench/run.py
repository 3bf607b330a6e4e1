#!/usr/bin/python3
"""Kiln's benchmarks (`make bench`; see bench/README.md).

    /usr/bin/python3 bench/run.py [xlsx|docx|pdf|pptx|all|run|serve|scale|batch] [--rows N] [--small-rows N]
                                  [--sections N] [--slides N] [--repeat N] [--kiln PATH]
                                  [--no-python] [--no-node] [--kiln-lib PATH]
                                  [--runs-pass N] [--runs-pandas N]

The workload is xlsx, docx, pdf, pptx or all (the default: those four); each is
described below. `run` (not part of all: it needs root and bwrap) times `kiln run`'s
sandbox against bare python3 and bubblewrap: see bench/sandbox_run.py. `serve` (part of
all) drives `kiln serve` with wrk beside nginx: see bench/serve_bench.py. `scale` (not part
of all: it takes minutes) gives what a spec of a million paragraphs, and one of a million
inline rows, costs in time and memory in each format: see bench/scale.py. `batch` (not
part of all: it takes a few minutes) makes 10,000 invoices by mail merge with `kiln batch`
beside ReportLab, docxtemplater and Carbone: see bench/batch_bench.py.

xlsx:
1. Generates a deterministic ROWS x 10 mixed-type dataset into bench/out/
   (integer id, date, short and long strings, float, currency, boolean, a
   code with leading zeros, a percentage): a CSV file, an inline-JSON spec
   holding the same rows, and a spec reading the CSV. A smaller CSV (the
   first SMALL-ROWS rows) with its spec shows how peak memory depends on the
   row count.
2. Renders them with `kiln render` and writes the same workbook with the
   baselines: raw libxlsxwriter from C (bench/raw_libxlsxwriter.c, built
   here), Python XlsxWriter (constant_memory) and openpyxl (write_only).
3. Prints wall time, peak RSS (getrusage of the child) and output size, with
   ratios against raw libxlsxwriter and XlsxWriter.

docx:
1. Generates the report of bench/docx_workload.py (60 sections of a heading, 15
   paragraphs of about 80 words with bold and italic runs, a 5-item list and a
   40 x 6 table, plus 5 images) as a Kiln spec in bench/out/.
2. Renders it with `kiln render` and writes the same content with python-docx
   (bench/py_docx.py) and the npm docx package (bench/npm_docx.js, from
   bench/node_modules: `npm ci --prefix bench`).
3. Prints wall time, peak RSS and output size, how many times faster Kiln is than
   each, and opens every output with python-docx to show they hold the same
   headings, paragraphs, list items, tables and images.

pdf:
1. The same report as docx (the same spec and images in bench/out/).
2. Renders it with `kiln render -o kiln.pdf` and writes the same content with raw
   libharu (bench/raw_libharu.c, built here: the floor for what libharu itself
   costs) and ReportLab Platypus (bench/py_reportlab.py), both with DejaVu Sans
   embedded.
3. Prints wall time, peak RSS, output size, page count and the ratios against
   ReportLab (targets: Kiln >= 5x faster, file <= 1.5x ReportLab's); checks every
   output with qpdf --check, pdffonts (every font embedded), pdfimages and
   pdftotext (every heading and word of the spec), and breaks each file's size
   down by content (images, fonts, page content, ...) with pypdf.

pptx:
1. Generates the deck of bench/pptx_workload.py (120 slides: a title and 5 bullets each,
   a 12 x 5 table instead on every 10th, an image instead on every 15th that is not a
   10th) as a Kiln spec and, with the same text, as the deck bench/npm_pptx.js draws,
   both in bench/out/.
2. Renders it with `kiln render` and draws the same deck with the npm pptxgenjs package
   (bench/npm_pptx.js, from bench/node_modules: `npm ci --prefix bench`).
3. Prints wall time, peak RSS and output size, how many times faster Kiln is (target:
   5x), and reads every output back with lxml to show they hold the same slides,
   titles, bullets, table cells and images.

It reports; it never fails on a timing. It exits non-zero only when a tool
fails to run or writes the wrong content (wrong row count in a workbook, a
document whose counts differ from the workload's, a PDF that qpdf finds errors in,
with a font not embedded, or whose text differs from the spec's).
"""
import argparse
import collections
import datetime
import json
import os
import random
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out")
sys.path.insert(0, HERE)
from columns import COLUMNS  # noqa: E402
from sandbox_run import run_run  # noqa: E402
from serve_bench import run_serve  # noqa: E402

PYTHON = "/usr/bin/python3"
DATA_VERSION = 1  # bump when the generator changes, to regenerate the files

FIRST = ["Ada", "Bruno", "Chiara", "Dmitri", "Elif", "Farah", "Gustav", "Hana", "Ines",
         "Jonas", "Kofi", "Lena", "Mateo", "Noor", "Olga", "Pablo", "Quinn", "Rosa", "Sven",
         "Tariq", "Uma", "Viktor", "Wen", "Xavier", "Yara", "Zoe"]
LAST = ["Andersen", "Baptiste", "Castellanos", "Dubois", "Eriksson", "Fujimoto", "García",
        "Horvath", "Ivanova", "Jørgensen", "Kowalski", "Lindqvist", "Müller", "Nakamura",
        "Okonkwo", "Petrović", "Quispe", "Rossi", "Schmidt", "Takahashi", "Van der Berg"]
ODD = ['Smith, Jones & Partners', 'The "Corner" Shop', "O'Brien, Ltd."]
CATEGORIES = ["Hardware", "Software", "Services", "Training", "Support", "Licences",
              "Consulting", "Shipping"]
WORDS = ("annual maintenance contract for the north region warehouse including spare parts "
         "labour travel and remote support with priority response next business day on site "
         "installation of replacement units and firmware upgrades across all sites").split()
DISCOUNTS = [0, 0, 0, 0.05, 0.1, 0.125, 0.2]
EPOCH = datetime.date(2020, 1, 1)


def generate_rows(n):
    """The dataset, row by row: the same values on every machine."""
    rng = random.Random(20261129)
    for i in range(1, n + 1):
        if rng.random() < 0.01:
            name = rng.choice(ODD)
        else:
            name = "%s %s" % (rng.choice(FIRST), rng.choice(LAST))
        words = rng.randint(3, 18)
        desc = " ".join(rng.choice(WORDS) for _ in range(words)).capitalize()
        yield [
            i,
            (EPOCH + datetime.timedelta(days=rng.randrange(2192))).isoformat(),
            name,
            rng.choice(CATEGORIES),
            desc,
            round(rng.uniform(-5000, 250000), 2),
            round(rng.uniform(0.5, 9999), 2),
            rng.random() < 0.7,
            "%05d" % rng.randrange(100000),
            rng.choice(DISCOUNTS),
        ]


def csv_field(v):
    if v is True:
        return "true"
    if v is False:
        return "false"
    s = str(v)
    if any(c in s for c in ',"\n\r'):
        s = '"' + s.replace('"', '""') + '"'
    return s


def spec_columns():
    return [{"header": h, "type": t, "width": w} for h, t, _, w in COLUMNS]


def spec_head():
    return {"version": 1,
            "metadata": {"title": "Kiln benchmark", "author": "bench/run.py",
                         "created": "2026-01-01T00:00:00Z"}}


def write_csv_spec(csv_name, spec_path):
    spec = spec_head()
    spec["sheets"] = [{"name": "Data", "columns": spec_columns(),
                       "data": {"path": csv_name, "format": "csv", "header": True}}]
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=1)


def generate(rows, small_rows):
    """Write the data files unless they are there from an identical earlier run."""
    os.makedirs(OUT, exist_ok=True)
    stamp = os.path.join(OUT, "stamp.json")
    want = {"version": DATA_VERSION, "rows": rows, "small_rows": small_rows,
            "columns": COLUMNS}
    files = {
        "csv": os.path.join(OUT, "data_%d.csv" % rows),
        "csv_small": os.path.join(OUT, "data_%d.csv" % small_rows),
        "spec_inline": os.path.join(OUT, "spec_inline_%d.json" % rows),
        "spec_csv": os.path.join(OUT, "spec_csv_%d.json" % rows),
        "spec_csv_small": os.path.join(OUT, "spec_csv_%d.json" % small_rows),
    }
    try:
        with open(stamp, encoding="utf-8") as f:
            have = json.load(f)
    except (OSError, ValueError):
        have = None
    if have == json.loads(json.dumps(want)) and all(os.path.exists(p) for p in files.values()):
        print("bench: data in %s is current" % os.path.relpath(OUT, REPO))
        return files

    print("bench: generating %d rows into %s ..." % (rows, os.path.relpath(OUT, REPO)))
    header = ",".join(h for h, _, _, _ in COLUMNS) + "\n"
    with open(files["csv"], "w", encoding="utf-8", newline="") as big, \
            open(files["csv_small"], "w", encoding="utf-8", newline="") as small, \
            open(files["spec_inline"], "w", encoding="utf-8") as spec:
        big.write(header)
        small.write(header)
        head = spec_head()
        spec.write(json.dumps(head)[:-1])
        spec.write(', "sheets": [{"name": "Data", "columns": %s, "rows": [\n'
                   % json.dumps(spec_columns()))
        for row in generate_rows(rows):
            line = ",".join(csv_field(v) for v in row) + "\n"
            big.write(line)
            if row[0] <= small_rows:
                small.write(line)
            spec.write(("" if row[0] == 1 else ",\n") + json.dumps(row, ensure_ascii=False))
        spec.write("\n]}]}\n")
    write_csv_spec(os.path.basename(files["csv"]), files["spec_csv"])
    write_csv_spec(os.path.basename(files["csv_small"]), files["spec_csv_small"])
    with open(stamp, "w", encoding="utf-8") as f:
        json.dump(want, f)
    return files


def build_raw():
    src = os.path.join(HERE, "raw_libxlsxwriter.c")
    exe = os.path.join(OUT, "raw_libxlsxwriter")
    if os.path.exists(exe) and os.path.getmtime(exe) >= os.path.getmtime(src):
        return exe
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "xlsxwriter"], check=True,
                           capture_output=True, text=True).stdout.split()
    cmd = [os.environ.get("CC", "cc"), "-O2", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra",
           "-Werror", "-o", exe, src] + flags
    print("bench: " + " ".join(cmd))
    subprocess.run(cmd, check=True)
    return exe


def measure(cmd):
    """Run cmd; (wall seconds, CPU seconds, peak RSS in KiB, exit status, stderr tail)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # Read stderr before waiting so a chatty child cannot block on a full pipe.
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    p.stderr.close()
    tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, p.returncode, " | ".join(tail)


def best_of(label, cmd, path, repeat):
    """Run cmd repeat times (its output file removed before each run): the fastest
    run's wall and CPU time, the largest peak RSS, and the output's size; or an error."""
    print("bench: %s ..." % label, flush=True)
    best = None
    for _ in range(repeat):
        if os.path.exists(path):
            os.unlink(path)
        wall, cpu, rss, rc, tail = measure(cmd)
        if rc != 0:
            return {"label": label, "error": "exit %d: %s" % (rc, tail)}
        if best is None or wall < best["wall"]:
            best = {"label": label, "wall": wall, "cpu": cpu, "rss": rss}
        best["rss"] = max(best["rss"], rss)
    if not os.path.exists(path):
        best["error"] = "no output file"
    else:
        best["size"] = os.path.getsize(path)
        best["path"] = path
    return best


def sheet_rows(path):
    """Number of <row> elements in the first worksheet (streamed, not parsed)."""
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.startswith("xl/worksheets/sheet"))
        count, carry = 0, b""
        with z.open(name) as f:
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                # 4 bytes of carry: a "<row " split between two chunks is
                # seen once, and none fits in the carry alone to count twice
                buf = carry + chunk
                count += buf.count(b"<row ")
                carry = buf[-4:]
        return count


def run_tool(label, cmd, out_path, repeat, expect_rows):
    best = best_of(label, cmd, out_path, repeat)
    if "error" in best:
        return best
    try:
        best["rows"] = sheet_rows(out_path)
    except (zipfile.BadZipFile, StopIteration, OSError) as e:
        return {"label": label, "error": "unreadable output: %s" % e}
    if best["rows"] != expect_rows:
        best["error"] = "%d rows written, expected %d" % (best["rows"], expect_rows)
    return best


def fmt_ratio(x):
    return "%.2fx" % x if x is not None else "-"


def run_xlsx(args):
    """The xlsx workload; returns the exit status."""
    files = generate(args.rows, args.small_rows)
    raw = build_raw()
    kiln = os.path.abspath(args.kiln)
    big = "(%dk rows)" % (args.rows // 1000)
    small = "(%dk rows)" % (args.small_rows // 1000)
    out = lambda name: os.path.join(OUT, name)  # noqa: E731

    tools = [
        ("raw libxlsxwriter (C) " + big, [raw, files["csv"], out("raw.xlsx")], out("raw.xlsx"),
         args.repeat, args.rows),
        ("kiln render, CSV spec " + big,
         [kiln, "render", files["spec_csv"], "-o", out("kiln_csv.xlsx"), "--max-bytes",
          str(1 << 30)], out("kiln_csv.xlsx"), args.repeat, args.rows),
        ("kiln render, CSV spec " + small,
         [kiln, "render", files["spec_csv_small"], "-o", out("kiln_csv_small.xlsx"),
          "--max-bytes", str(1 << 30)], out("kiln_csv_small.xlsx"), args.repeat,
         args.small_rows),
        ("kiln render, inline JSON " + big,
         [kiln, "render", files["spec_inline"], "-o", out("kiln_inline.xlsx"), "--max-bytes",
          str(1 << 30)], out("kiln_inline.xlsx"), args.repeat, args.rows),
    ]
    if not args.no_python:
        tools += [
            ("Python XlsxWriter constant_memory " + big,
             [PYTHON, os.path.join(HERE, "py_xlsxwriter.py"), files["csv"], out("xlsxwriter.xlsx")],
             out("xlsxwriter.xlsx"), 1, args.rows),
            ("openpyxl write_only " + big,
             [PYTHON, os.path.join(HERE, "py_openpyxl.py"), files["csv"], out("openpyxl.xlsx")],
             out("openpyxl.xlsx"), 1, args.rows),
        ]

    results = []
    for label, cmd, path, repeat, nrows in tools:
        if cmd[0] == kiln and not os.access(kiln, os.X_OK):
            results.append({"label": label, "error": "no kiln binary at %s" % kiln})
            continue
        # +1: the header row
        results.append(run_tool(label, cmd, path, repeat, nrows + 1))

    by = {r["label"]: r for r in results}
    raw_r = by.get(tools[0][0])
    xw_r = next((r for r in results if r["label"].startswith("Python XlsxWriter")), None)
    t_raw = raw_r.get("wall") if raw_r and "error" not in raw_r else None
    t_xw = xw_r.get("wall") if xw_r and "error" not in xw_r else None

    print()
    print("%-46s %8s %7s %9s %10s %8s %12s" % ("tool", "wall s", "cpu s", "peak MiB",
                                                 "output MiB", "vs raw", "XlsxWriter/"))
    print("-" * 107)
    failed = False
    for r in results:
        if "wall" not in r:
            print("%-46s  FAILED: %s" % (r["label"], r["error"]))
            failed = True
            continue
        same_size = r["label"].endswith(big)
        vs_raw = r["wall"] / t_raw if t_raw and same_size else None
        vs_xw = t_xw / r["wall"] if t_xw and same_size else None
        print("%-46s %8.2f %7.2f %9.1f %10.2f %8s %12s" % (
            r["label"], r["wall"], r["cpu"], r["rss"] / 1024, r["size"] / (1 << 20),
            fmt_ratio(vs_raw), fmt_ratio(vs_xw)))
        if "error" in r:
            print("%-46s  WRONG OUTPUT: %s" % ("", r["error"]))
            failed = True
    print()
    print("vs raw: wall time / raw libxlsxwriter's (lower is better); "
          "XlsxWriter/: XlsxWriter's wall time / this tool's (higher is better).")
    print("Best of %d runs for the C tools, one run for the Python ones; cpu s is user + "
          "system time and peak MiB the child's ru_maxrss (getrusage)." % args.repeat)
    print("On a busy machine wall times swing; cpu s is the steadier figure. Load average "
          "now: %.2f" % os.getloadavg()[0])

    kc = by.get(tools[1][0])
    ks = by.get(tools[2][0])
    if kc and "wall" in kc:
        print()
        if t_raw:
            print("target: kiln CSV within 1.3x raw libxlsxwriter    -> %.2fx wall, %.2fx cpu"
                  % (kc["wall"] / t_raw, kc["cpu"] / raw_r["cpu"]))
        if t_xw:
            print("target: kiln CSV >= 4x faster than XlsxWriter     -> %.1fx wall, %.1fx cpu"
                  % (t_xw / kc["wall"], xw_r["cpu"] / kc["cpu"]))
        if ks and "wall" in ks:
            print("peak memory vs row count (kiln, CSV spec): %d rows %.1f MiB, %d rows %.1f MiB"
                  % (args.small_rows, ks["rss"] / 1024, args.rows, kc["rss"] / 1024))
    return 1 if failed else 0


# --------------------------------------------------------------------------- docx

def docx_counts(path):
    """What a .docx holds, read with python-docx: the figures every tool must agree on."""
    import docx  # Debian python3-docx; imported here so the xlsx run does not need it
    from docx.enum.shape import WD_INLINE_SHAPE
    from docx.oxml.ns import qn
    d = docx.Document(path)
    c = {"headings": 0, "paragraphs": 0, "list items": 0, "bold paragraphs": 0,
         "italic paragraphs": 0, "words": 0, "tables": len(d.tables), "table cells": 0,
         "repeated header rows": 0, "images": 0}
    for p in d.paragraphs:
        name = p.style.name if p.style is not None else ""
        if not p.text.strip():
            continue
        if name.startswith("Heading"):
            c["headings"] += 1
        elif p._p.pPr is not None and p._p.pPr.numPr is not None or name.startswith("List"):
            c["list items"] += 1
        else:
            c["paragraphs"] += 1
            c["words"] += len(p.text.split())
            c["bold paragraphs"] += any(r.bold for r in p.runs)
            c["italic paragraphs"] += any(r.italic for r in p.runs)
    for t in d.tables:
        rows = t._tbl.findall(qn("w:tr"))
        c["table cells"] += sum(len(r.findall(qn("w:tc"))) for r in rows)
        pr = rows[0].find(qn("w:trPr")) if rows else None
        c["repeated header rows"] += pr is not None and pr.find(qn("w:tblHeader")) is not None
    c["images"] = sum(1 for s in d.inline_shapes if s.type == WD_INLINE_SHAPE.PICTURE)
    return c


def docx_expected(spec_path):
    with open(spec_path, encoding="utf-8") as f:
        blocks = json.load(f)["blocks"]
    c = {"headings": 0, "paragraphs": 0, "list items": 0, "bold paragraphs": 0,
         "italic paragraphs": 0, "words": 0, "tables": 0, "table cells": 0,
         "repeated header rows": 0, "images": 0}
    for b in blocks:
        if b["type"] == "heading":
            c["headings"] += 1
        elif b["type"] == "paragraph":
            c["paragraphs"] += 1
            c["words"] += len("".join(r["text"] for r in b["runs"]).split())
            c["bold paragraphs"] += any(r.get("bold") for r in b["runs"])
            c["italic paragraphs"] += any(r.get("italic") for r in b["runs"])
        elif b["type"] == "list":
            c["list items"] += len(b["items"])
        elif b["type"] == "table":
            c["tables"] += 1
            c["table cells"] += (len(b["rows"]) + 1) * len(b["columns"])
            c["repeated header rows"] += 1
        elif b["type"] == "image":
            c["images"] += 1
    return c


def npm_label(package):
    """"npm PACKAGE VERSION, Node VERSION", from bench/node_modules and node itself."""
    try:
        with open(os.path.join(HERE, "node_modules", package, "package.json"),
                  encoding="utf-8") as f:
            version = json.load(f)["version"]
    except (OSError, ValueError, KeyError):
        version = "(not installed)"
    try:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        node = "(no node)"
    return "npm %s %s, Node %s" % (package, version, node)


def npm_docx_label():
    return npm_label("docx")


SHORT = {"kiln": "kiln", "python-docx": "python-docx", "npm": "npm docx"}


def run_docx(args):
    """The docx workload; returns the exit status."""
    import docx_workload
    spec = docx_workload.generate(OUT, args.sections)
    print("bench: docx workload: %d sections in %s" % (args.sections, os.path.relpath(spec, REPO)))
    kiln = os.path.abspath(args.kiln)
    out = lambda name: os.path.join(OUT, name)  # noqa: E731
    tools = [("kiln render", [kiln, "render", spec, "-o", out("kiln.docx"), "--max-bytes",
                              str(1 << 30)], out("kiln.docx"))]
    if not args.no_python:
        tools.append(("python-docx (Debian python3-docx)",
                      [PYTHON, os.path.join(HERE, "py_docx.py"), spec, out("python_docx.docx")],
                      out("python_docx.docx")))
    if not args.no_node:
        tools.append((npm_docx_label(), ["node", os.path.join(HERE, "npm_docx.js"), spec,
                                         out("npm_docx.docx")], out("npm_docx.docx")))

    results = []
    for label, cmd, path in tools:
        if cmd[0] == kiln and not os.access(kiln, os.X_OK):
            results.append({"label": label, "error": "no kiln binary at %s" % kiln})
            continue
        if cmd[0] == "node" and not os.path.isdir(os.path.join(HERE, "node_modules", "docx")):
            results.append({"label": label, "error": "bench/node_modules/docx is missing: "
                                                     "npm ci --prefix bench"})
            continue
        results.append(best_of(label, cmd, path, args.repeat))

    kiln_r = results[0] if "wall" in results[0] else None
    print()
    print("%-44s %8s %7s %9s %10s %13s" % ("tool (docx, %d sections)" % args.sections, "wall s",
                                           "cpu s", "peak MiB", "output MiB", "kiln faster"))
    print("-" * 96)
    failed = False
    for r in results:
        if "wall" not in r:
            print("%-44s  FAILED: %s" % (r["label"], r["error"]))
            failed = True
            continue
        ratio = "%.1fx" % (r["wall"] / kiln_r["wall"]) if kiln_r and r is not kiln_r else "-"
        print("%-44s %8.2f %7.2f %9.1f %10.2f %13s" % (r["label"], r["wall"], r["cpu"],
                                                       r["rss"] / 1024, r["size"] / (1 << 20), ratio))
    print()
    print("Best of %d runs each; cpu s is user + system time, peak MiB the child's ru_maxrss. "
          "kiln faster: the tool's wall time / Kiln's. Load average now: %.2f"
          % (args.repeat, os.getloadavg()[0]))

    # The same content: every output read back with python-docx.
    want = docx_expected(spec)
    done = [r for r in results if "path" in r]
    counts = {}
    for r in done:
        try:
            counts[r["label"]] = docx_counts(r["path"])
        except Exception as e:  # noqa: BLE001 - an unreadable output is the finding
            counts[r["label"]] = None
            print("%s: python-docx cannot read %s: %s" % (r["label"], r["path"], e))
            failed = True
    print()
    short = [SHORT.get(r["label"].split(" ")[0], r["label"]) for r in done]
    print("%-22s %10s" % ("read back (python-docx)", "workload") +
          "".join(" %14s" % s[:14] for s in short))
    for key in want:
        row = "%-22s %10d" % (key, want[key])
        for r in done:
            got = counts[r["label"]]
            v = got[key] if got else None
            mark = "" if v == want[key] else " !"
            if v != want[key]:
                failed = True
            row += " %14s" % ("%s%s" % (v, mark))
        print(row)
    if kiln_r and len(results) > 1:
        others = [r for r in results[1:] if "wall" in r]
        if others:
            print()
            print("target: kiln >= 10x faster than each -> " + ", ".join(
                "%.1fx wall (%.1fx cpu) vs %s" % (r["wall"] / kiln_r["wall"], r["cpu"] / kiln_r["cpu"],
                                                  SHORT.get(r["label"].split(" ")[0], r["label"]))
                for r in others))
    return 1 if failed else 0



# --------------------------------------------------------------------------- pdf

def build_raw_libharu():
    """bench/raw_libharu.c, built like raw_libxlsxwriter. Debian 12's libhpdf-dev has no
    pkg-config file; mk/libhpdf.pc stands in, searched after the system's (as the Makefile
    does)."""
    src = os.path.join(HERE, "raw_libharu.c")
    exe = os.path.join(OUT, "raw_libharu")
    if os.path.exists(exe) and os.path.getmtime(exe) >= os.path.getmtime(src):
        return exe
    env = dict(os.environ)
    mk = os.path.join(REPO, "mk")
    have = env.get("PKG_CONFIG_PATH")
    env["PKG_CONFIG_PATH"] = have + ":" + mk if have else mk
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "jansson", "libhpdf"], check=True,
                           capture_output=True, text=True, env=env).stdout.split()
    cmd = [os.environ.get("CC", "cc"), "-O2", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra",
           "-Werror", "-o", exe, src] + flags + ["-lm"]
    os.makedirs(OUT, exist_ok=True)
    print("bench: " + " ".join(cmd))
    subprocess.run(cmd, check=True)
    return exe


def pdf_expected(spec_path):
    """What the report must show, from the spec: the headings, and every word of the text
    and the table cells (as Kiln formats them) counted, without the table header words,
    which each tool repeats once per page a table runs onto."""
    from docx_workload import cell_text
    with open(spec_path, encoding="utf-8") as f:
        blocks = json.load(f)["blocks"]
    words = collections.Counter()
    headers = set()
    headings = []
    images = 0
    for b in blocks:
        t = b["type"]
        if t == "heading":
            headings.append(b["text"])
            words.update(b["text"].split())
        elif t == "paragraph":
            words.update("".join(r["text"] for r in b["runs"]).split())
        elif t == "list":
            for item in b["items"]:
                words.update(item.split())
        elif t == "table":
            kinds = [c.get("type", "string") for c in b["columns"]]
            headers.update(c["header"] for c in b["columns"])
            for row in b["rows"]:
                for v, k in zip(row, kinds):
                    words.update(cell_text(v, k).split())
        elif t == "image":
            images += 1
    for h in headers:
        words.pop(h, None)
    return {"headings": headings, "words": words, "headers": headers, "images": images,
            "first header": next((b["columns"][0]["header"] for b in blocks
                                  if b["type"] == "table"), None)}


def pdf_check(path, want):
    """Read one PDF back with poppler and qpdf: pages, fonts, images, text."""
    c = {}
    info = subprocess.run(["pdfinfo", path], capture_output=True, text=True)
    c["pages"] = next((int(line.split()[1]) for line in info.stdout.splitlines()
                       if line.startswith("Pages:")), None)
    q = subprocess.run(["qpdf", "--check", path], capture_output=True, text=True)
    # qpdf: 0 clean, 3 warnings only, 2 errors
    c["qpdf"] = {0: "ok", 3: "warnings"}.get(q.returncode, "ERRORS")
    fonts = subprocess.run(["pdffonts", path], capture_output=True,
                           text=True).stdout.splitlines()[2:]
    # counted from the right: the name and type may hold spaces
    emb = [line.split()[-5] == "yes" for line in fonts if line.strip()]
    c["fonts embedded"] = "%d/%d" % (sum(emb), len(emb))
    c["fonts ok"] = bool(emb) and all(emb)
    imgs = subprocess.run(["pdfimages", "-list", path], capture_output=True, text=True).stdout
    c["images"] = sum(1 for line in imgs.splitlines()[2:] if " image " in line)
    text = subprocess.run(["pdftotext", "-enc", "UTF-8", path, "-"], capture_output=True,
                          text=True).stdout
    tokens = text.split()
    # a heading may wrap onto two lines: look for its words in sequence
    joined = " ".join(tokens)
    c["headings"] = sum(1 for h in want["headings"] if " ".join(h.split()) in joined)
    got = collections.Counter(t for t in tokens if t != "\u2022" and t not in want["headers"])
    c["words"] = sum(got.values())
    c["words differing"] = sum(((want["words"] - got) + (got - want["words"])).values())
    c["table header rows"] = sum(1 for t in tokens if t == want["first header"])
    return c


def pdf_sizes(path):
    """Bytes of a PDF by what they hold (streams as stored, i.e. compressed): images (and
    their soft masks), embedded font files, ToUnicode maps, CIDToGIDMap streams (libharu
    writes one per UTF-8 font), page content, other streams, and everything else (object
    dictionaries such as the fonts' /W width arrays and the pages, the xref)."""
    import pypdf  # Debian python3-pypdf; imported here so the other workloads do not need it
    from pypdf.generic import IndirectObject, StreamObject
    r = pypdf.PdfReader(path)
    refs = set()
    for gen, table in r.xref.items():
        refs.update((num, gen) for num in table)
    refs.update((num, 0) for num in r.xref_objStm)
    objs = {}
    for num, gen in refs:
        try:
            objs[num] = r.get_object(IndirectObject(num, gen, r))
        except Exception:  # noqa: BLE001 - a damaged object is qpdf's finding, not ours
            continue
    kind = {}

    def mark(ref, k):
        if isinstance(ref, IndirectObject):
            kind.setdefault(ref.idnum, k)

    for o in objs.values():
        if not hasattr(o, "get"):
            continue
        if o.get("/Type") == "/FontDescriptor":
            for key in ("/FontFile", "/FontFile2", "/FontFile3"):
                mark(o.raw_get(key) if key in o else None, "fonts")
        if "/ToUnicode" in o:
            mark(o.raw_get("/ToUnicode"), "ToUnicode")
        if "/CIDToGIDMap" in o:
            mark(o.raw_get("/CIDToGIDMap"), "CIDToGIDMap")
        if o.get("/Subtype") == "/Image" and "/SMask" in o:
            mark(o.raw_get("/SMask"), "image masks")
        if o.get("/Type") == "/Page" and "/Contents" in o:
            contents = o.raw_get("/Contents")
            for ref in (contents if isinstance(contents, list) else [contents]):
                mark(ref, "page content")
    sizes = collections.Counter()
    streams = 0
    for num, o in objs.items():
        if isinstance(o, StreamObject):
            n = len(o._data)
            streams += n
            k = kind.get(num) or ("images" if o.get("/Subtype") == "/Image" else "other streams")
            sizes[k] += n
    sizes["objects, xref"] = os.path.getsize(path) - streams
    return sizes


PDF_SIZE_KINDS = ["images", "image masks", "fonts", "ToUnicode", "CIDToGIDMap", "page content",
                  "other streams", "objects, xref"]


def run_pdf(args):
    """The pdf workload; returns the exit status."""
    import docx_workload
    spec = docx_workload.generate(OUT, args.sections)
    print("bench: pdf workload: the docx report, %d sections, from %s"
          % (args.sections, os.path.relpath(spec, REPO)))
    kiln = os.path.abspath(args.kiln)
    out = lambda name: os.path.join(OUT, name)  # noqa: E731
    tools = [("kiln render", [kiln, "render", spec, "-o", out("kiln.pdf"), "--max-bytes",
                              str(1 << 30)], out("kiln.pdf"))]
    try:
        raw = build_raw_libharu()
        tools.append(("raw libharu 2.3.0 (C)", [raw, spec, out("raw_libharu.pdf")],
                      out("raw_libharu.pdf")))
    except (subprocess.CalledProcessError, OSError) as e:
        print("bench: cannot build bench/raw_libharu.c: %s" % e)
        tools.append(("raw libharu 2.3.0 (C)", None, None))
    if not args.no_python:
        try:
            import reportlab
            rl = "ReportLab %s (Debian)" % reportlab.Version
        except ImportError:
            rl = "ReportLab (not installed: python3-reportlab)"
        tools.append((rl, [PYTHON, os.path.join(HERE, "py_reportlab.py"), spec,
                           out("reportlab.pdf")], out("reportlab.pdf")))

    results = []
    for label, cmd, path in tools:
        if cmd is None:
            results.append({"label": label, "error": "not built"})
            continue
        if cmd[0] == kiln and not os.access(kiln, os.X_OK):
            results.append({"label": label, "error": "no kiln binary at %s" % kiln})
            continue
        results.append(best_of(label, cmd, path, args.repeat))

    want = pdf_expected(spec)
    for r in results:
        if "path" in r:
            r["check"] = pdf_check(r["path"], want)
    kiln_r = results[0] if "wall" in results[0] else None
    raw_r = next((r for r in results if r["label"].startswith("raw") and "wall" in r), None)
    rl_r = next((r for r in results if r["label"].startswith("ReportLab") and "wall" in r), None)

    print()
    print("%-44s %8s %7s %9s %10s %6s %8s %11s %8s" % (
        "tool (pdf, %d sections)" % args.sections, "wall s", "cpu s", "peak MiB", "output MiB",
        "pages", "vs raw", "ReportLab/", "size/RL"))
    print("-" * 119)
    failed = False
    for r in results:
        if "wall" not in r:
            print("%-44s  FAILED: %s" % (r["label"], r["error"]))
            failed = True
            continue
        vs_raw = r["wall"] / raw_r["wall"] if raw_r else None
        vs_rl = rl_r["wall"] / r["wall"] if rl_r else None
        size_rl = r["size"] / rl_r["size"] if rl_r else None
        print("%-44s %8.2f %7.2f %9.1f %10.2f %6s %8s %11s %8s" % (
            r["label"], r["wall"], r["cpu"], r["rss"] / 1024, r["size"] / (1 << 20),
            r["check"]["pages"], fmt_ratio(vs_raw), fmt_ratio(vs_rl), fmt_ratio(size_rl)))
    print()
    print("Best of %d runs each; cpu s is user + system time, peak MiB the child's ru_maxrss. "
          "vs raw: wall time / raw libharu's; ReportLab/: ReportLab's wall time / the tool's; "
          "size/RL: output size / ReportLab's. Load average now: %.2f"
          % (args.repeat, os.getloadavg()[0]))

    # The same content, and a sound file: every output read back with qpdf and poppler.
    done = [r for r in results if "check" in r]
    short = [r["label"].split(" ")[0] if r["label"].startswith(("kiln", "ReportLab"))
             else "raw libharu" for r in done]
    print()
    print("%-26s %10s" % ("read back (qpdf, poppler)", "workload") +
          "".join(" %14s" % s for s in short))
    rows = [("qpdf --check", "ok", lambda c: c["qpdf"], lambda v: v != "ERRORS"),
            ("pdffonts: embedded", "all", lambda c: c["fonts embedded"], None),
            ("pages (pdfinfo)", "-", lambda c: c["pages"], lambda v: bool(v)),
            ("images (pdfimages)", want["images"], lambda c: c["images"],
             lambda v: v == want["images"]),
            ("headings (pdftotext)", len(want["headings"]), lambda c: c["headings"],
             lambda v: v == len(want["headings"])),
            ("words (pdftotext)", sum(want["words"].values()), lambda c: c["words"],
             lambda v: v == sum(want["words"].values())),
            ("words differing", 0, lambda c: c["words differing"], lambda v: v == 0),
            ("table header rows", ">= %d" % sum(1 for _ in want["headings"]),
             lambda c: c["table header rows"], None)]
    for name, expect, get, ok in rows:
        row = "%-26s %10s" % (name, expect)
        for r in done:
            v = get(r["check"])
            if ok:
                good = ok(v)
            else:
                good = r["check"]["fonts ok"] if name.startswith("pdffonts") else True
            if not good:
                failed = True
            row += " %14s" % ("%s%s" % (v, "" if good else " !"))
        print(row)
    print("(words: those of the headings, paragraphs, list items and table cells, as Kiln "
          "formats the numbers; the table header words are left out, as each tool repeats "
          "them on every page a table runs onto: see table header rows)")

    # Where the bytes are.
    sizes = {}
    for r in done:
        try:
            sizes[r["label"]] = pdf_sizes(r["path"])
        except Exception as e:  # noqa: BLE001 - the breakdown is informative only
            print("%s: cannot break %s down: %s" % (r["label"], r["path"], e))
    if sizes:
        print()
        print("%-26s" % "output KiB by content" + "".join(" %14s" % s for s in short))
        for k in PDF_SIZE_KINDS + ["total"]:
            row = "%-26s" % k
            for r in done:
                z = sizes.get(r["label"])
                v = (sum(z.values()) if k == "total" else z.get(k, 0)) if z is not None else None
                row += " %14s" % ("%.1f" % (v / 1024) if v is not None else "-")
            print(row)
        print("(streams as stored, i.e. compressed; objects, xref: everything outside streams, "
              "such as the fonts' width arrays and the page objects)")

    if kiln_r and rl_r:
        print()
        print("target: kiln >= 5x faster than ReportLab   -> %.1fx wall (%.1fx cpu)"
              % (rl_r["wall"] / kiln_r["wall"], rl_r["cpu"] / kiln_r["cpu"]))
        print("target: kiln size <= 1.5x ReportLab's      -> %.2fx (%.2f MiB vs %.2f MiB)"
              % (kiln_r["size"] / rl_r["size"], kiln_r["size"] / (1 << 20),
                 rl_r["size"] / (1 << 20)))
    if kiln_r and raw_r:
        print("kiln vs raw libharu (the floor)            -> %.2fx wall, %.2fx cpu"
              % (kiln_r["wall"] / raw_r["wall"], kiln_r["cpu"] / raw_r["cpu"]))
    return 1 if failed else 0


# --------------------------------------------------------------------------- pptx

PML = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
DML = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"


def pptx_slides(path):
    """What each slide of a .pptx holds, in presentation order (sldIdLst), read with lxml:
    its paragraphs' texts (text boxes and placeholders alike), its table cells' texts and
    its pictures."""
    from lxml import etree  # Debian python3-lxml; imported here so the other workloads do not need it
    with zipfile.ZipFile(path) as z:
        pres = etree.fromstring(z.read("ppt/presentation.xml"))
        rels = etree.fromstring(z.read("ppt/_rels/presentation.xml.rels"))
        target = {r.get("Id"): r.get("Target") for r in rels.iter(PKG_REL + "Relationship")}
        slides = []
        for sld in pres.iter(PML + "sldId"):
            name = target[sld.get(REL + "id")].lstrip("/")
            name = name if name.startswith("ppt/") else "ppt/" + name
            root = etree.fromstring(z.read(name))
            paras = []
            for sp in root.iter(PML + "sp"):
                for p in sp.iter(DML + "p"):
                    text = "".join(t.text or "" for t in p.iter(DML + "t"))
                    if text:
                        paras.append(text)
            cells = ["".join(t.text or "" for t in tc.iter(DML + "t"))
                     for tc in root.iter(DML + "tc")]
            tables = sum(1 for _ in root.iter(DML + "tbl"))
            pics = sum(1 for _ in root.iter(PML + "pic"))
            slides.append({"paras": paras, "cells": cells, "tables": tables, "pics": pics})
        return slides


def pptx_counts(path, want):
    """The figures every tool must agree on, read back from the deck against the workload's
    slides (each title and bullet found on its own slide, each table's cells in order)."""
    got = pptx_slides(path)
    c = {"slides": len(got), "titles": 0, "bullets": 0, "tables": 0, "table cells": 0,
         "images": 0}
    for g, w in zip(got, want):
        c["titles"] += w["title"] in g["paras"]
        c["bullets"] += sum(1 for b in w["bullets"] if b in g["paras"])
        c["tables"] += g["tables"]
        c["table cells"] += len(g["cells"]) if g["cells"] == w["cells"] else 0
        c["images"] += g["pics"]
    for g in got[len(want):]:
        c["tables"] += g["tables"]
        c["images"] += g["pics"]
    return c


def pptx_expected(want):
    return {"slides": len(want), "titles": len(want),
            "bullets": sum(len(w["bullets"]) for w in want),
            "tables": sum(1 for w in want if w["cells"]),
            "table cells": sum(len(w["cells"]) for w in want),
            "images": sum(1 for w in want if w["image"])}


def run_pptx(args):
    """The pptx workload; returns the exit status."""
    import pptx_workload
    spec, deck = pptx_workload.generate(OUT, args.slides, REPO)
    print("bench: pptx workload: %d slides in %s (pptxgenjs: %s)"
          % (args.slides, os.path.relpath(spec, REPO), os.path.relpath(deck, REPO)))
    kiln = os.path.abspath(args.kiln)
    out = lambda name: os.path.join(OUT, name)  # noqa: E731
    tools = [("kiln render", [kiln, "render", spec, "-o", out("kiln.pptx"), "--max-bytes",
                              str(1 << 30)], out("kiln.pptx"))]
    if not args.no_node:
        tools.append((npm_label("pptxgenjs"), ["node", os.path.join(HERE, "npm_pptx.js"), deck,
                                               out("pptxgenjs.pptx")], out("pptxgenjs.pptx")))

    results = []
    for label, cmd, path in tools:
        if cmd[0] == kiln and not os.access(kiln, os.X_OK):
            results.append({"label": label, "error": "no kiln binary at %s" % kiln})
            continue
        if cmd[0] == "node" and not os.path.isdir(os.path.join(HERE, "node_modules", "pptxgenjs")):
            results.append({"label": label, "error": "bench/node_modules/pptxgenjs is missing: "
                                                     "npm ci --prefix bench"})
            continue
        results.append(best_of(label, cmd, path, args.repeat))

    kiln_r = results[0] if "wall" in results[0] else None
    print()
    print("%-44s %8s %7s %9s %10s %13s" % ("tool (pptx, %d slides)" % args.slides, "wall s",
                                           "cpu s", "peak MiB", "output MiB", "kiln faster"))
    print("-" * 96)
    failed = False
    for r in results:
        if "wall" not in r:
            print("%-44s  FAILED: %s" % (r["label"], r["error"]))
            failed = True
            continue
        ratio = "%.1fx" % (r["wall"] / kiln_r["wall"]) if kiln_r and r is not kiln_r else "-"
        print("%-44s %8.2f %7.2f %9.1f %10.2f %13s" % (r["label"], r["wall"], r["cpu"],
                                                       r["rss"] / 1024, r["size"] / (1 << 20), ratio))
    print()
    print("Best of %d runs each; cpu s is user + system time, peak MiB the child's ru_maxrss. "
          "kiln faster: the tool's wall time / Kiln's. Load average now: %.2f"
          % (args.repeat, os.getloadavg()[0]))

    # The same content: every output read back with lxml, slide by slide.
    slides = pptx_workload.expected(spec)
    want = pptx_expected(slides)
    done = [r for r in results if "path" in r]
    counts = {}
    for r in done:
        try:
            counts[r["label"]] = pptx_counts(r["path"], slides)
        except Exception as e:  # noqa: BLE001 - an unreadable output is the finding
            counts[r["label"]] = None
            print("%s: cannot read %s: %s" % (r["label"], r["path"], e))
            failed = True
    print()
    short = ["kiln" if r["label"].startswith("kiln") else "pptxgenjs" for r in done]
    print("%-22s %10s" % ("read back (lxml)", "workload") + "".join(" %14s" % s for s in short))
    for key in want:
        row = "%-22s %10d" % (key, want[key])
        for r in done:
            got = counts[r["label"]]
            v = got[key] if got else None
            if v != want[key]:
                failed = True
            row += " %14s" % ("%s%s" % (v, "" if v == want[key] else " !"))
        print(row)
    print("(titles and bullets: those found as a paragraph of their own slide; table cells: "
          "those of tables whose cells read, in order, as Kiln shows them)")
    others = [r for r in results[1:] if "wall" in r]
    if kiln_r and others:
        print()
        print("target: kiln >= 5x faster than pptxgenjs -> " + ", ".join(
            "%.1fx wall (%.1fx cpu)" % (r["wall"] / kiln_r["wall"], r["cpu"] / kiln_r["cpu"])
            for r in others))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", nargs="?",
                    choices=("xlsx", "docx", "pdf", "pptx", "all", "run", "serve", "scale",
                             "session", "mcp", "batch"),
                    default="all",
                    help="which benchmark to run (default: all, the four document formats; "
                         "run: the sandbox of `kiln run` against bare python3 and bubblewrap, "
                         "needs root; serve: `kiln serve` under wrk beside nginx; scale: a "
                         "million paragraphs and a million inline rows in each format; session: "
                         "kiln session beside a Jupyter kernel, needs root; mcp: a cell's round "
                         "trip through MCP beside the same without it, needs root; batch: 10,000 invoices "
                         "by mail merge, kiln batch beside ReportLab, docxtemplater and Carbone)")
    ap.add_argument("--rows", type=int, default=None,
                    help="xlsx: rows of the big dataset (default 200,000); batch: invoices "
                         "(default 10,000)")
    ap.add_argument("--small-rows", type=int, default=50_000, help="xlsx: rows of the small one")
    ap.add_argument("--sections", type=int, default=60,
                    help="docx and pdf: sections of the report")
    ap.add_argument("--slides", type=int, default=120, help="pptx: slides of the deck")
    ap.add_argument("--scale-items", type=int, default=1_000_000,
                    help="scale: paragraphs, and rows, of the two specs")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each tool; the fastest counts (xlsx: the Python tools run once)")
    ap.add_argument("--kiln", default=os.environ.get("KILN_BIN", os.path.join(REPO, "bin/kiln")))
    ap.add_argument("--kiln-lib",
                    default=os.environ.get("KILN_LIB", os.path.join(REPO, "build/libkiln.a")),
                    help="run: the libkiln.a bench/seccomp_export.c links against, to give "
                         "bwrap Kiln's seccomp program")
    ap.add_argument("--runs-pass", type=int, default=30,
                    help="run: runs of each way for `python3 -c pass`")
    ap.add_argument("--runs-pandas", type=int, default=10,
                    help="run: runs of each way for the pandas + matplotlib import")
    ap.add_argument("--no-python", action="store_true",
                    help="skip XlsxWriter and openpyxl (xlsx), python-docx (docx) and "
                         "ReportLab (pdf)")
    ap.add_argument("--no-node", action="store_true",
                    help="skip the npm packages: docx (docx) and pptxgenjs (pptx)")
    ap.add_argument("--session-runs", type=int, default=50,
                    help="session: new sessions timed for (a)")
    ap.add_argument("--jupyter-runs", type=int, default=10,
                    help="session: new Jupyter kernels timed for (a)")
    ap.add_argument("--session-cells", type=int, default=200,
                    help="session: round trips timed for (b)")
    ap.add_argument("--pandas-cells", type=int, default=20,
                    help="session: groupby cells timed for (c)")
    ap.add_argument("--pss-counts", default="1,10,50",
                    help="session: how many sessions are open for each PSS figure of (d)")
    ap.add_argument("--mcp-cells", type=int, default=200,
                    help="mcp: round trips timed on each transport")
    ap.add_argument("--mcp-warmup", type=int, default=20,
                    help="mcp: round trips before those, not timed")
    ap.add_argument("--mcp-cpu-cells", type=int, default=1000,
                    help="mcp: round trips over which the servers' CPU time per call is taken")
    ap.add_argument("--batch-small", type=int, default=1_000,
                    help="batch: invoices of kiln's second run, to show memory against N")
    ap.add_argument("--batch-jobs", type=int, default=0,
                    help="batch: kiln batch -j (default: the number of cores)")
    ap.add_argument("--no-batch-service", action="store_true",
                    help="batch: leave out the render latency on kiln serve while a batch runs")
    ap.add_argument("--carbone-rows", type=int, default=2_000,
                    help="batch: Carbone's subset of the invoices (it makes about 30 a second)")
    ap.add_argument("--batch-samples", type=int, default=20,
                    help="batch: outputs per tool read back and checked")
    args = ap.parse_args()
    if args.rows is None:
        args.rows = 10_000 if args.workload == "batch" else 200_000
    if args.workload in ("xlsx", "all") and not 0 < args.small_rows < args.rows:
        ap.error("need 0 < --small-rows < --rows")
    if args.sections < 1 or args.repeat < 1 or args.slides < 1:
        ap.error("need --sections >= 1, --slides >= 1 and --repeat >= 1")
    if args.runs_pass < 1 or args.runs_pandas < 1:
        ap.error("need --runs-pass >= 1 and --runs-pandas >= 1")
    if args.workload == "run":
        return run_run(args)
    if args.workload == "serve":
        return run_serve(args)
    if args.workload == "scale":
        from scale import run_scale
        return run_scale(args)
    if args.workload == "session":
        from session_bench import run_session
        return run_session(args)
    if args.workload == "mcp":
        from mcp_bench import run_mcp
        return run_mcp(args)
    if args.workload == "batch":
        if not 0 < args.batch_small <= args.rows or args.carbone_rows < 1 \
                or args.batch_samples < 1:
            ap.error("need 0 < --batch-small <= --rows, --carbone-rows >= 1, "
                     "--batch-samples >= 1")
        from batch_bench import run_batch
        return run_batch(args)
    status = 0
    if args.workload in ("xlsx", "all"):
        status |= run_xlsx(args)
    if args.workload in ("docx", "all"):
        if args.workload == "all":
            print()
        status |= run_docx(args)
    if args.workload in ("pdf", "all"):
        if args.workload == "all":
            print()
        status |= run_pdf(args)
    if args.workload in ("pptx", "all"):
        if args.workload == "all":
            print()
        status |= run_pptx(args)
    if args.workload == "all":
        print()
        # The sandbox benchmark makes namespaces and cgroups: root only.
        if os.geteuid() == 0:
            status |= run_run(args)
        else:
            print("bench: run: skipped (kiln run needs root; run `make bench BENCH=run` as root)")
        print()
        status |= run_serve(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
