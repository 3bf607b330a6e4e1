"""`make bench BENCH=scale`: what a spec of a million small values costs Kiln.

Two specs, generated into bench/out/:
  - paragraphs: N paragraphs under no heading ({"type": "paragraph", "text": "Paragraph i."},
    about 48 bytes each: 48 MB for the default million), the spec of issue 15 item 1;
  - rows: one sheet of N inline rows of five cells (an id, a real, a short string, an
    integer, a boolean: about 37 MB for a million).
Each is validated, then rendered to .xlsx, .docx, .pdf and .pptx; the table gives wall
time and peak resident memory (GNU time's, which forks from a process of its own so
the figure is the renderer's alone), the output's size or the limit that refused it
(a million paragraphs are more than a PDF's 20,000 pages and a deck's 5,000 slides:
both refuse them before laying anything out), and the peak as a multiple of the spec's
size. It reports; it fails only when a render fails other than by those limits.
"""
import json
import os
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out")
FORMATS = ("xlsx", "docx", "pdf", "pptx")


def write_specs(n):
    os.makedirs(OUT, exist_ok=True)
    paras = os.path.join(OUT, "scale_paragraphs_%d.json" % n)
    rows = os.path.join(OUT, "scale_rows_%d.json" % n)
    if not os.path.exists(paras):
        with open(paras, "w") as f:
            f.write('{"blocks": [')
            f.write(", ".join('{"type": "paragraph", "text": "Paragraph %d."}' % i
                              for i in range(n)))
            f.write("]}")
    if not os.path.exists(rows):
        with open(rows, "w") as f:
            cols = [{"header": h} for h in ("Id", "Value", "Region", "Count", "Flag")]
            f.write('{"sheets": [{"name": "Data", "columns": %s, "rows": [' % json.dumps(cols))
            f.write(",".join('[%d,%r,"Region %d",%d,%s]' % (i, i * 0.25, i % 7, i % 42,
                                                              "true" if i % 2 else "false")
                             for i in range(n)))
            f.write("]}]}")
    return [("paragraphs", paras), ("rows", rows)]


def timed(cmd):
    """(wall seconds, peak RSS bytes, exit status, last stderr line) of cmd."""
    with tempfile.NamedTemporaryFile("r") as report:
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report.name] + cmd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t0
        lines = report.read().strip().splitlines()
    peak = int(lines[-1]) * 1024 if lines and lines[-1].isdigit() else 0
    err = p.stderr.decode("utf-8", "replace").strip().splitlines()
    return wall, peak, p.returncode, err[-1] if err else ""


def run_scale(args):
    n = args.scale_items
    print("scale: %d paragraphs and %d inline rows, validated and rendered (bench/scale.py)"
          % (n, n))
    failed = 0
    rows = []
    for name, spec in write_specs(n):
        size = os.path.getsize(spec)
        steps = [("validate", [args.kiln, "validate", spec], None)]
        for fmt in FORMATS:
            out = os.path.join(OUT, "scale_%s.%s" % (name, fmt))
            steps.append((fmt, [args.kiln, "render", spec, "-o", out], out))
        for what, cmd, out in steps:
            if out and os.path.exists(out):
                os.unlink(out)
            print("bench: scale %s %s ..." % (name, what), flush=True)
            wall, peak, rc, last = timed(cmd)
            if rc == 0:
                result = "%.1f MB" % (os.path.getsize(out) / 1e6) if out else "valid"
            elif rc == 3 and "would" in last:
                result = "refused: " + last.split(": ", 2)[-1][:60]
            else:
                result = "FAILED (exit %d): %s" % (rc, last)
                failed = 1
            rows.append((name, "%.0f MB" % (size / 1e6), what, "%.2f" % wall,
                         "%.0f" % (peak / 1e6), "%.1fx" % (peak / size), result))
    head = ("spec", "size", "step", "wall s", "peak MB", "peak/size", "output")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    print()
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    return failed
