"""The .pptx benchmark's workload (bench/README.md), used by bench/run.py.

A deck of SLIDES slides (120 by default): every slide a title and 5 bullets, except
every 10th, which is a title and a 12 x 5 table (a header row and 11 data rows of
text, integer, currency, percent and text columns), and every 15th that is not also a
10th (15, 45, 75, 105), which is a title and an image (samples/images/regional_trend.jpg
and kiln_logo.png in turn, copied beside the spec). A Kiln slide shows one of bullets,
a table or an image (docs/spec.md, "Slides"), so on the 30th, 60th, ... the table wins.

It is written twice into bench/out/, with the same text: pptx_spec.json, the Kiln spec,
and pptx_npm.json, the same deck as the pptxgenjs baseline (bench/npm_pptx.js) draws it:
the table cells already as Kiln shows them ($1,234.50, 12.5%, 1,200) and each image's
box fitted into the content area keeping its aspect ratio, so the script does no work
Kiln does not. Deterministic: a seeded generator, no clock.
"""
import json
import os
import random
import shutil
import struct

DATA_VERSION = 1       # bump when the generator changes, to regenerate the files
BULLETS = 5
TABLE_EVERY = 10
IMAGE_EVERY = 15
TABLE_ROWS = 11        # data rows; with the header row the table is 12 x 5
COLUMNS = [("Region", "string"), ("Units", "integer"), ("Revenue", "currency"),
           ("Margin", "percent"), ("Owner", "string")]
IMAGES = ["regional_trend.jpg", "kiln_logo.png"]

# The 16:9 slide (LAYOUT_WIDE, 13.333 x 7.5 in) and the title and content boxes of
# PowerPoint's "Title and Content" layout, in inches: where the baseline draws its text,
# and the box its images are fitted into.
SLIDE_W, SLIDE_H = 13.333, 7.5
TITLE_BOX = (0.917, 0.399, 11.5, 1.45)
BODY_BOX = (0.917, 1.997, 11.5, 4.759)

WORDS = ("the quarter revenue grew across every region while costs stayed flat and the team "
         "shipped two releases customers asked for better reporting faster exports and "
         "clearer invoices so the plan for next year puts those first along with lower lead "
         "times stronger margins and a simpler price list for partners in the north and south "
         "markets where demand is rising steadily month after month").split()
REGIONS = ["North", "South", "East", "West", "Central", "Nordics", "Benelux", "Iberia",
           "Alpine", "Baltics", "Adriatic", "Danube"]
NAMES = ["Ava Thompson", "Noah Patel", "Emma Chen", "Olivia Brooks", "Liam Carter", "Mia Rossi",
         "Lucas Meyer", "Ethan Nakamura"]


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def layout_of(n):
    """The layout of slide n (1-based)."""
    if n % TABLE_EVERY == 0:
        return "table"
    if n % IMAGE_EVERY == 0:
        return "image"
    return "content"


def image_size(path):
    """(width, height) in pixels of a PNG or a baseline/progressive JPEG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", data[16:24])
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
                i += 1 if marker == 0xFF else 2
                continue
            length = struct.unpack(">H", data[i + 2:i + 4])[0]
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return w, h
            i += 2 + length
    raise ValueError("%s: not a PNG or JPEG with a frame header" % path)


def fit(box, size):
    """The largest box of size's aspect ratio inside box, centered: (x, y, w, h) inches."""
    x, y, w, h = box
    iw, ih = size
    scale = min(w / iw, h / ih)
    fw, fh = iw * scale, ih * scale
    return (round(x + (w - fw) / 2, 4), round(y + (h - fh) / 2, 4), round(fw, 4), round(fh, 4))


def cell_text(value, kind):
    """The text Kiln shows for these column types (as bench/docx_workload.py)."""
    if kind == "integer":
        return "{:,}".format(value)
    if kind == "currency":
        return "${:,.2f}".format(value)
    if kind == "percent":
        return "{:.1f}%".format(value * 100)
    return str(value)


def build(slides, image_sizes):
    """(the Kiln spec, the pptxgenjs deck) for the workload."""
    rng = random.Random(20261201)
    spec_slides, npm_slides = [], []
    images = 0
    for n in range(1, slides + 1):
        layout = layout_of(n)
        title = "Slide %d: %s" % (n, words(rng, 4))
        if layout == "content":
            bullets = [words(rng, rng.randint(6, 12)).capitalize() for _ in range(BULLETS)]
            spec_slides.append({"layout": "content", "title": title, "bullets": bullets})
            npm_slides.append({"title": title, "bullets": bullets})
        elif layout == "table":
            rows = [[REGIONS[r], rng.randrange(1, 50_000), rng.randrange(100, 10_000_000) / 100,
                     rng.randrange(0, 1000) / 1000, rng.choice(NAMES)] for r in range(TABLE_ROWS)]
            spec_slides.append({"layout": "table", "title": title, "table": {
                "columns": [{"header": h, "type": t} for h, t in COLUMNS], "rows": rows}})
            npm_slides.append({"title": title, "table": {
                "header": [h for h, _ in COLUMNS],
                "align": ["right" if t in ("integer", "currency", "percent") else "left"
                          for _, t in COLUMNS],
                "rows": [[cell_text(v, t) for v, (_, t) in zip(row, COLUMNS)] for row in rows]}})
        else:
            name = IMAGES[images % len(IMAGES)]
            images += 1
            alt = "Figure %d" % images
            spec_slides.append({"layout": "image", "title": title,
                                "image": {"path": name, "alt": alt}})
            x, y, w, h = fit(BODY_BOX, image_sizes[name])
            npm_slides.append({"title": title, "image": {"path": name, "alt": alt,
                                                         "x": x, "y": y, "w": w, "h": h}})
    spec = {"version": 1,
            "metadata": {"title": "Kiln pptx benchmark", "author": "bench/run.py",
                         "created": "2026-01-01T00:00:00Z"},
            "slides": spec_slides}
    npm = {"title": spec["metadata"]["title"], "author": spec["metadata"]["author"],
           "title_box": TITLE_BOX, "body_box": BODY_BOX, "slides": npm_slides}
    return spec, npm


def generate(out_dir, slides, repo):
    """Write pptx_spec.json, pptx_npm.json and the images into out_dir unless an identical
    run did; returns (spec path, npm deck path)."""
    os.makedirs(out_dir, exist_ok=True)
    spec_path = os.path.join(out_dir, "pptx_spec.json")
    npm_path = os.path.join(out_dir, "pptx_npm.json")
    stamp = os.path.join(out_dir, "pptx_stamp.json")
    want = {"version": DATA_VERSION, "slides": slides}
    images = [os.path.join(out_dir, name) for name in IMAGES]
    try:
        with open(stamp, encoding="utf-8") as f:
            have = json.load(f)
    except (OSError, ValueError):
        have = None
    if have == want and all(os.path.exists(p) for p in [spec_path, npm_path] + images):
        return spec_path, npm_path
    sizes = {}
    for name, path in zip(IMAGES, images):
        shutil.copyfile(os.path.join(repo, "samples", "images", name), path)
        sizes[name] = image_size(path)
    spec, npm = build(slides, sizes)
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=1)
    with open(npm_path, "w", encoding="utf-8") as f:
        json.dump(npm, f, indent=1)
    with open(stamp, "w", encoding="utf-8") as f:
        json.dump(want, f)
    return spec_path, npm_path


def expected(spec_path):
    """What every tool's deck must hold, from the spec: per slide, the title, the bullet
    texts and the table's cell texts (header first) as Kiln shows them; and the totals."""
    with open(spec_path, encoding="utf-8") as f:
        slides = json.load(f)["slides"]
    out = []
    for s in slides:
        cells = []
        if "table" in s:
            t = s["table"]
            cells = [c["header"] for c in t["columns"]]
            kinds = [c.get("type", "string") for c in t["columns"]]
            for row in t["rows"]:
                cells += [cell_text(v, k) for v, k in zip(row, kinds)]
        out.append({"title": s.get("title", ""), "bullets": list(s.get("bullets", [])),
                    "cells": cells, "image": "image" in s})
    return out
