"""The .docx benchmark's workload (bench/README.md), shared by bench/run.py and bench/py_docx.py.

A report of SECTIONS sections, each a level-1 heading, 15 paragraphs of about 80 words
with bold and italic runs, a 5-item bulleted list and a 40 x 6 table (a header row,
then text, integer, currency, percent, date and text columns), plus 5 PNG images
spread over the report. It is written once as a Kiln spec (bench/out/docx_spec.json,
images beside it); the baselines read that same spec, so every tool writes the same
content. Deterministic: a seeded generator, no clock.
"""
import datetime
import json
import os
import random
import struct
import zlib

DATA_VERSION = 1       # bump when the generator changes, to regenerate the files
IMAGES = 5
PARAGRAPHS = 15
LIST_ITEMS = 5
TABLE_ROWS = 40
COLUMNS = [("Item", "string"), ("Units", "integer"), ("Amount", "currency"),
           ("Share", "percent"), ("Date", "date"), ("Owner", "string")]

WORDS = ("the quarter revenue grew across every region while costs stayed flat and the team "
         "shipped two releases customers asked for better reporting faster exports and "
         "clearer invoices so the plan for next year puts those first along with lower lead "
         "times stronger margins and a simpler price list for partners in the north and south "
         "markets where demand is rising steadily month after month").split()
NAMES = ["Ava Thompson", "Noah Patel", "Emma Chen", "Olivia Brooks", "Liam Carter", "Mia Rossi",
         "Lucas Meyer", "Ethan Nakamura"]
ITEMS = ["Control hub", "Sensor kit", "Cable pack", "Enclosure", "Monitoring", "Warranty",
         "Training day", "Spare parts"]


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def paragraph(rng):
    """About 80 words: plain, bold, plain, italic, plain."""
    return {"type": "paragraph", "runs": [
        {"text": words(rng, 30).capitalize() + " "},
        {"text": words(rng, 5), "bold": True},
        {"text": " " + words(rng, 20) + " "},
        {"text": words(rng, 5), "italic": True},
        {"text": " " + words(rng, 20) + "."}]}


def png(width, height, seed):
    """An RGB PNG: a gradient with a speckled texture, so it compresses like a chart or a
    screenshot rather than to nothing (about 170 KB at 480 x 300)."""
    rng = random.Random(seed)
    speckle = [rng.randrange(12) for _ in range(97)]
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")
        for x in range(width):
            n = speckle[(x // 4 * 31 + y // 4 * 17) % 97]
            row += bytes(((x * 255 // width + n) & 255, (y * 255 // height + n) & 255,
                          (seed * 40 + n) & 255))
        rows.append(bytes(row))

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b""))


def build_spec(sections):
    rng = random.Random(20261130)
    every = max(1, sections // IMAGES)
    blocks = []
    images = 0
    for s in range(sections):
        blocks.append({"type": "heading", "level": 1, "text": "Section %d: %s" % (s + 1, words(rng, 4))})
        for _ in range(PARAGRAPHS):
            blocks.append(paragraph(rng))
        blocks.append({"type": "list", "items": [words(rng, 8).capitalize() for _ in range(LIST_ITEMS)]})
        rows = []
        for r in range(TABLE_ROWS):
            day = datetime.date(2026, 1, 1) + datetime.timedelta(days=rng.randrange(365))
            rows.append([rng.choice(ITEMS) + " %d" % (r + 1), rng.randrange(1, 5000),
                         rng.randrange(100, 10_000_000) / 100, rng.randrange(0, 1000) / 1000,
                         day.isoformat(), rng.choice(NAMES)])
        blocks.append({"type": "table",
                       "columns": [{"header": h, "type": t} for h, t in COLUMNS], "rows": rows})
        if s % every == 0 and images < IMAGES:
            images += 1
            blocks.append({"type": "image", "image": {"path": "image%d.png" % images,
                                                      "alt": "Figure %d" % images},
                           "width": 360})
    return {"version": 1,
            "metadata": {"title": "Kiln docx benchmark", "author": "bench/run.py",
                         "created": "2026-01-01T00:00:00Z"},
            "page": {"size": "A4", "page_numbers": False},
            "blocks": blocks}


def generate(out_dir, sections):
    """Write docx_spec.json and its images into out_dir unless an identical run did."""
    os.makedirs(out_dir, exist_ok=True)
    spec_path = os.path.join(out_dir, "docx_spec.json")
    stamp = os.path.join(out_dir, "docx_stamp.json")
    want = {"version": DATA_VERSION, "sections": sections}
    images = [os.path.join(out_dir, "image%d.png" % (i + 1)) for i in range(IMAGES)]
    try:
        with open(stamp, encoding="utf-8") as f:
            have = json.load(f)
    except (OSError, ValueError):
        have = None
    if have == want and all(os.path.exists(p) for p in [spec_path] + images):
        return spec_path
    for i, path in enumerate(images):
        with open(path, "wb") as f:
            f.write(png(480, 300, i + 1))
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(build_spec(sections), f, indent=1)
    with open(stamp, "w", encoding="utf-8") as f:
        json.dump(want, f)
    return spec_path


# ---- the cell texts the baselines write (what Kiln shows for these column types) ----

def cell_text(value, kind):
    if kind == "integer":
        return "{:,}".format(value)
    if kind == "currency":
        return "${:,.2f}".format(value)
    if kind == "percent":
        return "{:.1f}%".format(value * 100)
    return str(value)
