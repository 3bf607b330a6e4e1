"""Render specs to .pdf and read them back with independent tools (issue 4, item 6).

Every PDF is checked with qpdf (--check: the file's structure and streams), poppler
(pdfinfo: pages, page sizes, document info; pdffonts: every font embedded, with a
ToUnicode map; pdftotext: the text, page by page, in reading order, and with -bbox
every word's box; pdfimages: the images and their masks) and pypdf (the outline,
the link annotations).

Expectations come from the spec JSON, never from figures written into the test: the
spec's flow (test_render_docx.expected_flow: blocks, or sheets and slides through the
documented mapping) gives the headings, paragraphs, list items and table cells in
reading order, test_render_docx.expected_table_rows the cells as their number formats
show them, the spec's page and metadata the page size, margins and document info. So
every samples/*.json is covered, the long report, its PDF edition (200+ pages) and the
feature specs below.

Each sample is rendered once per module (pdf_samples); the long report's PDF edition
is the slowest file to read back, and is read once per check.
"""
import base64
import datetime as dt
import json
import re
import shutil
import struct
import subprocess
import unicodedata
import zlib
from pathlib import Path

import pytest

from conftest import (SAMPLES, describe, err_text, listing, load_json, pdf_fonts, pdf_images, pdf_info,
                      pdf_page_texts, pdf_text, pdf_tool, pdf_words, qpdf_check, render_ok, run_kiln,
                      sample_specs, write_spec)
from test_render_docx import (PAGE_SIZES_PT, a1, expected_flow, expected_table_rows, merged_cells, png_bytes,
                              shown_cell, shown_field, table_header_flag)

try:
    import pypdf
    from pypdf.generic import IndirectObject
except ImportError:  # pragma: no cover - a clear failure, not a skip
    raise RuntimeError("pypdf is required: apt-get install python3-pypdf")


BIG_SAMPLES = {"export_200k"}      # 200,000 rows: its text is checked on the first rows and the last
BIG_ROWS = 60
TOL = 1.5                          # points: how far a word's box may reach past a margin (font bbox vs. layout metrics)
DEFAULT_MARGIN = 72.0


# =========================================================================== the spec's expectations

def length_pt(v):
    if isinstance(v, (int, float)):
        return float(v)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(pt|mm|cm|in)", v)
    assert m, "test bug: length %r" % v
    return float(m.group(1)) * {"pt": 1, "mm": 72 / 25.4, "cm": 72 / 2.54, "in": 72}[m.group(2)]


def is_slides_only(spec):
    return not spec.get("blocks") and not spec.get("sheets") and bool(spec.get("slides"))


def page_geometry(spec):
    """The page a spec asks for: width, height and margins in points. A slides-only spec
    is one landscape page per slide, whatever the orientation asked."""
    page = spec.get("page") or {}
    w, h = PAGE_SIZES_PT[page.get("size", "A4")]
    if page.get("orientation") == "landscape" or is_slides_only(spec):
        w, h = max(w, h), min(w, h)
    m = {k: length_pt(v) for k, v in (page.get("margins") or {}).items()}
    return {"width": w, "height": h, "top": m.get("top", DEFAULT_MARGIN),
            "bottom": m.get("bottom", DEFAULT_MARGIN), "left": m.get("left", DEFAULT_MARGIN),
            "right": m.get("right", DEFAULT_MARGIN)}


def header_text(spec):
    header = (spec.get("page") or {}).get("header")
    if header is True:
        return (spec.get("metadata") or {}).get("title")
    return header or None


def page_numbers_on(spec):
    return (spec.get("page") or {}).get("page_numbers", True)


def keywords_of(spec):
    kw = (spec.get("metadata") or {}).get("keywords")
    if isinstance(kw, list):
        return ", ".join(kw)
    return kw


def created_utc(spec):
    """metadata.created as an aware UTC datetime (a zone applied; none = UTC), or None."""
    s = (spec.get("metadata") or {}).get("created")
    if not s:
        return None
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)(?:[Tt ](\d\d):(\d\d)(?::(\d\d)(?:[.,]\d+)?)?)?"
                     r"(Z|z|[+-]\d\d(?::?\d\d)?)?", s)
    assert m, "test bug: created %r" % s
    y, mo, d, hh, mi, ss, zone = m.groups()
    t = dt.datetime(int(y), int(mo), int(d), int(hh or 0), int(mi or 0), int(ss or 0),
                    tzinfo=dt.timezone.utc)
    if zone and zone not in "Zz":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        off = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        t -= sign * off
    return t


def parse_pdfinfo_date(s):
    """A date as `pdfinfo -isodates` prints it, as an aware datetime; None when unparsable."""
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(Z|[+-]\d\d(?::?\d\d)?)?", (s or "").strip())
    if not m:
        return None
    y, mo, d, hh, mi, ss, zone = m.groups()
    tz = dt.timezone.utc
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        tz = dt.timezone(sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0)))
    return dt.datetime(int(y), int(mo), int(d), int(hh), int(mi), int(ss), tzinfo=tz)


def table_cells(it, base_dir, limit=None):
    """The texts of a table's cells, row by row, header first: [[text]] (None = nothing
    to look for: an empty cell, a General number whose digits are not pinned down, a cell
    under a merge)."""
    t = it["t"]
    cols = t.get("columns") or []
    rows = [[c.text if c.text else None for c in row] for row in expected_table_rows(t, base_dir, limit=limit)]
    if it.get("sheet") is not None and t.get("merges"):
        header = table_header_flag(t)
        for r, c in merged_cells(t):
            if r < len(rows) and c < len(rows[r]):
                rows[r][c] = None
        for mg in t["merges"]:
            if "value" not in mg:
                continue
            a, _, b = mg["range"].partition(":")
            (r1, c1), (r2, c2) = a1(a), a1(b or a)
            r, c = min(r1, r2), min(c1, c2)
            col = cols[c] if c < len(cols) and not (header and r == 0) else None
            shown = shown_cell(mg["value"], col).text
            while r >= len(rows):
                rows.append([])
            while c >= len(rows[r]):
                rows[r].append(None)
            rows[r][c] = shown or None
    hidden = {i for i, c in enumerate(cols) if c.get("width") == 0}
    return [[x for i, x in enumerate(row) if i not in hidden] for row in rows]


def reading_order(spec, base_dir, row_limit=None):
    """What a reader sees, top to bottom: [(where, text)] for every heading, paragraph,
    list item, quote, code block, caption, chart title and table cell; a TOC's title and
    entries where the TOC stands."""
    flow = expected_flow(spec)
    heads = [it for it in flow if it["kind"] == "heading"]
    out = []
    for it in flow:
        k, p = it["kind"], it["pointer"]
        if k == "heading":
            out.append(("heading at %s" % p, it["text"]))
        elif k == "paragraph":
            out.append(("paragraph at %s" % p, it["text"]))
        elif k == "list":
            for depth, text, _runs in it["flat"]:
                out.append(("list item (level %d) at %s" % (depth + 1, p), text))
        elif k == "quote":
            out.append(("quote at %s" % p, it["text"]))
            if it.get("attribution"):
                out.append(("quote attribution at %s" % p, it["attribution"]))
        elif k == "code":
            out.append(("code at %s" % p, it["text"]))
        elif k == "table":
            if it.get("caption"):
                out.append(("table caption at %s" % p, it["caption"]))
            for r, row in enumerate(table_cells(it, base_dir, limit=row_limit)):
                for c, text in enumerate(row):
                    if text is not None and text.strip():
                        out.append(("table cell row %d col %d at %s" % (r, c, p), text))
        elif k == "image":
            if it.get("caption"):
                out.append(("figure caption at %s" % p, it["caption"]))
        elif k == "chart":
            if it["chart"].get("title"):
                out.append(("chart title at %s" % p, it["chart"]["title"]))
            if it.get("caption"):
                out.append(("figure caption at %s" % p, it["caption"]))
        elif k == "toc":
            out.append(("TOC title at %s" % p, it["title"]))
            for h in heads:
                if h["level"] <= it["levels"]:
                    out.append(("TOC entry for the heading at %s" % h["pointer"], h["text"]))
    return out


def outline_expected(spec):
    """The outline the headings make: [(depth, text)], each heading under the nearest
    heading before it of a lower level."""
    stack, out = [], []
    for it in expected_flow(spec):
        if it["kind"] != "heading":
            continue
        while stack and stack[-1] >= it["level"]:
            stack.pop()
        out.append((len(stack), it["text"]))
        stack.append(it["level"])
    return out


# =========================================================================== reading the text back

DROP = re.compile(r"[\s\-\u2010\u2011\u00ad]+")


def norm(s):
    """Text with whitespace and hyphens removed (pdftotext breaks lines anywhere and drops
    the hyphen where a line ends after one), NFC."""
    return DROP.sub("", unicodedata.normalize("NFC", s))


def body_text(pages, spec, first=1, total=None):
    """The normalised text of every page (pages holds pages first.. of total), the header
    (first on a page) and the "Page N of M" footer (last) taken off, joined: what flows
    from page to page."""
    hdr = norm(header_text(spec) or "")
    total = total or len(pages)
    out = []
    for n, page in enumerate(pages, first):
        t = norm(page)
        if hdr and t.startswith(hdr):
            t = t[len(hdr):]
        if page_numbers_on(spec):
            t = re.sub(r"Page%dof%d$" % (n, total), "", t)
        out.append(t)
    return "".join(out)


def words_in_order(words, sq, start, gap):
    """Where the words appear in sq in this order from start, each within gap characters
    of the one before (a cell wrapped over lines that pdftotext -layout reads apart, with
    the next cells' text between). Returns (start of the first word, its end), or None."""
    k = sq.find(words[0], start)
    while k >= 0:
        pos, ok = k + len(words[0]), True
        for w in words[1:]:
            j = sq.find(w, pos, pos + gap + len(w))
            if j < 0:
                ok = False
                break
            pos = j + len(w)
        if ok:
            return k, k + len(words[0])
        k = sq.find(words[0], k + 1)
    return None


def pieces_in_order(want, sq, start, gap, min_piece=3):
    """The same for a string broken inside a word (a long word split over lines of a
    narrow cell): want is found as consecutive pieces of at least min_piece characters
    (or the rest), each within gap of the one before. Returns (start, end of the first
    piece), or None."""
    first = want[:min_piece]
    k = sq.find(first, start)
    tries = 0
    while k >= 0 and tries < 2000:
        tries += 1
        n = 0
        while k + n < len(sq) and n < len(want) and sq[k + n] == want[n]:
            n += 1
        end_first, rest, pos, ok = k + n, want[n:], k + n, True
        while rest and ok:
            found = False
            for size in range(len(rest), min(min_piece, len(rest)) - 1, -1):
                j = sq.find(rest[:size], pos, pos + gap + size)
                if j >= 0:
                    pos, rest, found = j + size, rest[size:], True
                    break
            ok = found
        if ok:
            return k, end_first
        k = sq.find(first, k + 1)
    return None


def check_in_order(items, sq, gap=220, max_errs=25):
    """Every (where, text) found in sq, each after the one before: as one piece, or (a
    wrapped cell or line read apart) as its words, or for a table cell as pieces of its
    words, whichever starts first. Returns errors."""
    errs, pos = [], 0
    for where, text in items:
        want = norm(text)
        if not want:
            continue
        k = sq.find(want, pos)
        best = (k, k + len(want)) if k >= 0 else None
        if best is None or best[0] - pos > gap:
            words = [norm(w) for w in text.split() if norm(w)]
            tries = [words_in_order(words, sq, pos, gap) if len(words) > 1 else None]
            if where.startswith("table cell"):
                tries.append(pieces_in_order(want, sq, pos, gap))
            for t in tries:
                if t is not None and (best is None or t[0] < best[0]):
                    best = t
        if best is not None:
            pos = best[1]
            continue
        anywhere = sq.find(want)
        if anywhere >= 0:
            errs.append("%s: %r is in the text, but not after what comes before it (found at %d, "
                        "reading had reached %d, just after ...%s)"
                        % (where, text[:80], anywhere, pos, sq[max(0, pos - 60):pos]))
        else:
            errs.append("%s: %r is not in the text (reading had reached %d, just after ...%s)"
                        % (where, text[:80], pos, sq[max(0, pos - 60):pos]))
        if len(errs) >= max_errs:
            errs.append("(stopped after %d errors)" % max_errs)
            break
    return errs


# =========================================================================== pypdf

def outline_flat(reader, items=None, depth=0):
    """The outline as [(depth, title, 0-based page)]."""
    if items is None:
        items = reader.outline
    out = []
    for it in items:
        if isinstance(it, list):
            out += outline_flat(reader, it, depth + 1)
        else:
            out.append((depth, it.title, reader.get_destination_page_number(it)))
    return out


def resolve(obj):
    return obj.get_object() if isinstance(obj, IndirectObject) else obj


def link_annotations(reader):
    """Every /Link annotation: [(0-based page, uri or None, dest or None, rect (x0, y0, x1, y1))]."""
    out = []
    for n, page in enumerate(reader.pages):
        for a in resolve(page.get("/Annots")) or []:
            a = resolve(a)
            if a.get("/Subtype") != "/Link":
                continue
            rect = [float(v) for v in resolve(a["/Rect"])]
            rect = (min(rect[0], rect[2]), min(rect[1], rect[3]), max(rect[0], rect[2]), max(rect[1], rect[3]))
            action = resolve(a.get("/A")) or {}
            uri = action.get("/URI") if action.get("/S") == "/URI" else None
            out.append((n, str(uri) if uri is not None else None, a.get("/Dest") or action.get("/D"), rect))
    return out


# =========================================================================== images

def png_rgba(w, h, alpha=128):
    raw = b"".join(b"\x00" + bytes((30, 120, 200, alpha)) * w for _ in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def b64(data):
    return base64.b64encode(data).decode()


def test_right_to_left_text_is_ordered_and_shaped(tmp_path, kiln_bin):
    """Hebrew and Arabic are drawn in display order: read right to left, the words of a
    right-to-left line come in their logical order, each word's letters drawn reversed;
    Arabic letters are joined into their contextual forms (NFKC folds them back); an
    English word inside a Hebrew sentence, and a Hebrew word inside an English one,
    keep their own direction; right-to-left paragraphs are aligned right.
    (pdftotext's own reordering of mixed lines is heuristic, so the check reads the
    word boxes of pdftotext -bbox, which come in drawing order.)"""
    he = "שלום עולם, זהו משפט בעברית 2026 English"
    ar = "مرحبا بالعالم، هذه جملة عربية"
    mixed = "The word שלום means peace."
    sp = write_spec(tmp_path, {"blocks": [
        {"type": "paragraph", "text": he},
        {"type": "paragraph", "text": ar},
        {"type": "paragraph", "text": mixed}]})
    out = tmp_path / "rtl.pdf"
    p = run_kiln("render", sp, "-o", out)
    assert p.returncode == 0, describe(p)
    assert "warning" not in err_text(p), describe(p)

    def rtl(word):
        return any("\u0590" <= ch <= "\u08ff" or "\ufb1d" <= ch <= "\ufeff" for ch in word)

    boxes = [{"xMin": x0, "xMax": x1, "yMax": y1, "text": t}
             for x0, y0, x1, y1, t in pdf_words(out)[0][2]]
    lines = {}
    for w in boxes:
        if w["yMax"] < 842 - 72:          # not the footer
            lines.setdefault(round(w["yMax"]), []).append(w)
    got = []
    for y in sorted(lines):
        words = sorted(lines[y], key=lambda w: w["xMin"])
        if rtl(words[-1]["text"]):        # a right-to-left line reads from the right
            words = words[::-1]
        got.append(" ".join(unicodedata.normalize("NFKC", w["text"][::-1] if rtl(w["text"]) else w["text"])
                            for w in words))
    assert got == [he, ar, mixed], got
    raw = "".join(w["text"] for w in boxes)
    assert any(0xFE70 <= ord(c) <= 0xFEFF for c in raw), "Arabic was not shaped into contextual forms"
    first = sorted(lines)[0]
    assert max(w["xMax"] for w in lines[first]) > 595.28 - 72 - 2, "the Hebrew paragraph is not aligned right"
    assert min(w["xMin"] for w in lines[sorted(lines)[2]]) < 72 + 2, "the English paragraph is not aligned left"


# =========================================================================== feature specs

LONG_TABLE_ROWS = 160
LONG_TABLE_SPEC = {
    "metadata": {"title": "Long table", "created": "2026-01-01T00:00:00Z"},
    "page": {"size": "A4", "header": True},
    "blocks": [
        {"type": "heading", "level": 1, "text": "A table over several pages"},
        {"type": "paragraph", "text": "The header row of the table below repeats on every page it reaches."},
        {"type": "table", "caption": "Line items",
         "columns": [{"header": "Ref no"}, {"header": "Description of the line"},
                     {"header": "Amount due", "type": "currency"}],
         "rows": [["R%04d" % i, "Item %d: a description long enough to wrap in a narrow column of this table" % i,
                   i * 101.25] for i in range(1, LONG_TABLE_ROWS + 1)]},
        {"type": "paragraph", "text": "After the table."},
    ],
}

LINKS_SPEC = {
    "metadata": {"title": "Links", "created": "2026-01-01T00:00:00Z"},
    "blocks": [
        {"type": "heading", "level": 1, "text": "Links"},
        {"type": "paragraph", "runs": [
            {"text": "Visit "}, {"text": "our site", "link": "https://example.com/a?b=1&c=2"},
            {"text": " or "}, {"text": "write to us", "link": "mailto:someone@example.com", "bold": True},
            {"text": " or fetch "}, {"text": "the file", "link": "ftp://files.example.com/x.csv"},
            {"text": "."}]},
        {"type": "paragraph", "runs": [
            {"text": "A link long enough to run over a line: "},
            {"text": "this linked text goes on and on across the width of the page until it has "
                     "to wrap onto the next line and keep its link there too", "link": "https://example.com/wrapped"},
            {"text": " and then plain text."}]},
        {"type": "list", "items": [{"runs": [{"text": "an item with "},
                                             {"text": "a linked word", "link": "https://example.com/item"}]}]},
        {"type": "table", "columns": [{"header": "Where"}, {"header": "Link"}],
         "rows": [["cell", {"url": "https://example.com/cell", "text": "cell link"}]]},
    ],
}

IMAGES_SPEC = {
    "metadata": {"title": "Images", "created": "2026-01-01T00:00:00Z"},
    "page": {"size": "A5", "margins": {"left": "2cm", "right": "2cm"}},
    "blocks": [
        {"type": "heading", "level": 1, "text": "Images"},
        {"type": "image", "image": {"data": "<rgb>", "alt": "opaque RGB"}, "caption": "An opaque PNG"},
        {"type": "image", "image": {"data": "<rgba>", "alt": "half transparent"}, "caption": "A PNG with alpha"},
        {"type": "image", "image": {"path": "photo.jpg", "alt": "a JPEG"}, "width": "5cm", "caption": "A JPEG"},
        {"type": "image", "image": {"path": "logo.png", "alt": "logo with alpha"}, "width": 48},
        {"type": "image", "image": {"path": "wide.png", "alt": "wider than the page"}, "caption": "Fitted"},
        {"type": "paragraph", "text": "After the images."},
    ],
}

CHART_KINDS = ["column", "bar", "line", "pie", "doughnut", "scatter", "area"]


def chart_block(kind, i, **kw):
    b = {"type": "chart", "kind": kind, "title": "Chart %d %s" % (i, kind),
         "categories": ["North", "South", "East", "West"],
         "series": [{"name": "Year 2025", "values": [10, 20.5, 30, 40]},
                    {"name": "Year 2026", "values": [12, 18, 33.25, 47], "color": "#7030A0"}],
         "caption": "Figure for %s %d" % (kind, i)}
    if kind in ("pie", "doughnut"):
        b["series"] = [{"name": "Share", "values": [1, 2, 3, 4.5]}]
    if kind == "scatter":
        b["categories"] = [1, 2.5, 4, 8]
    if kind not in ("pie", "doughnut"):
        b["x_axis"] = {"title": "X title"}
        b["y_axis"] = {"title": "Y title"}
    b.update(kw)
    return b


CHARTS_SPEC = {
    "metadata": {"title": "Charts", "created": "2026-01-01T00:00:00Z"},
    "blocks": [{"type": "heading", "level": 1, "text": "Every chart kind"}]
    + [chart_block(k, i) for i, k in enumerate(CHART_KINDS)]
    + [chart_block("column", 10, stacked=True, legend="top"),
       chart_block("bar", 11, stacked=True, legend="left"),
       chart_block("area", 12, stacked=True, legend="bottom")],
}

SHEETS_SPEC = {
    "metadata": {"title": "Workbook as a document", "created": "2026-01-01T00:00:00Z"},
    "page": {"size": "Letter"},
    "sheets": [
        {"name": "Sales & costs",
         "columns": [{"header": "Region"}, {"header": "Revenue", "type": "currency"},
                     {"header": "Units", "type": "integer"}, {"header": "Day", "type": "date"}],
         "rows": [["North", 1200.5, 10, "2026-01-05"], ["South", 980, 7, "2026-01-06"],
                  [{"value": "Total", "style": {"bold": True}}, {"formula": "=SUM(B2:B3)", "value": 2180.5},
                   {"formula": "=SUM(C2:C3)", "value": 17}, None]],
         "charts": [{"kind": "column", "title": "Revenue by region", "categories": "A2:A3",
                     "series": [{"name": "=B1", "values": "B2:B3"}]}]},
        {"rows": [["unnamed sheet", 1], ["no header", 2]]},
        {"name": "Merged", "header": False,
         "rows": [[None, None, None], ["x", 1, 2]],
         "merges": [{"range": "A1:C1", "value": "A merged title"}]},
    ],
}

SLIDES_SPEC = {
    "metadata": {"title": "Deck as a document", "created": "2026-01-01T00:00:00Z"},
    "slides": [
        {"layout": "title", "title": "Deck title", "subtitle": "The subtitle", "notes": "Opening notes"},
        {"layout": "section", "title": "A section"},
        {"title": "Content slide", "bullets": ["one", {"text": "two", "items": ["two a", "two b"]}],
         "notes": "Content notes"},
        {"layout": "two_column", "title": "Two columns", "left": ["left 1", "left 2"], "right": ["right 1"]},
        {"layout": "table", "title": "Table slide",
         "table": {"columns": [{"header": "Region"}, {"header": "Q2", "type": "currency"}],
                   "rows": [["North", 455000], ["South", 310000]]}},
        {"layout": "image", "title": "Image slide", "image": {"data": "<rgb>", "alt": "img"}},
        {"layout": "chart", "title": "Chart slide",
         "chart": {"kind": "bar", "title": "Slide chart", "categories": ["N", "S"],
                   "series": [{"name": "Q2", "values": [455, 310]}]},
         "notes": "Chart notes"},
        {"layout": "blank", "notes": "Blank slide notes"},
    ],
}

MARGINS_SPEC = {
    "metadata": {"title": "Odd margins", "created": "2026-01-01T00:00:00Z"},
    "page": {"size": "Letter", "orientation": "landscape",
             "margins": {"top": "20mm", "bottom": 36, "left": "0.5in", "right": "2.5cm"},
             "header": "Confidential & internal"},
    "blocks": [
        {"type": "heading", "level": 1, "text": "Margins that differ on every side"},
        {"type": "paragraph", "align": "justify", "text": "Justified text that fills the line. " * 60},
        {"type": "code", "text": "a_code_line_far_longer_than_the_text_width_" * 6 + "\n    indented line\n"},
        {"type": "paragraph", "text": "Averyveryverylongwordwithoutanybreakopportunityatallthatmustbebrokensomewhere" * 3},
        {"type": "list", "items": ["a list item that is long enough to wrap onto a second line of the landscape page "
                                   "so that its hanging indent shows", {"text": "nested", "items": [
                                       "deeper " * 40]}]},
        {"type": "table", "columns": [{"header": "Wide column %d" % i} for i in range(12)],
         "rows": [["cell %d-%d with words" % (r, c) for c in range(12)] for r in range(30)]},
        {"type": "quote", "text": "A quotation that also runs over more than one line of text. " * 4,
         "attribution": "Someone"},
        {"type": "rule"},
        {"type": "paragraph", "text": "End."},
    ],
}

MULTILINGUAL = SAMPLES / "multilingual.json"

FEATURE_SPECS = {"long_table": LONG_TABLE_SPEC, "links": LINKS_SPEC, "images": IMAGES_SPEC,
                 "charts": CHARTS_SPEC, "sheets": SHEETS_SPEC, "slides": SLIDES_SPEC,
                 "margins": MARGINS_SPEC}


def write_feature_files(directory):
    d = Path(directory)
    shutil.copy(SAMPLES / "images" / "regional_trend.jpg", d / "photo.jpg")
    shutil.copy(SAMPLES / "images" / "kiln_logo.png", d / "logo.png")
    (d / "wide.png").write_bytes(png_bytes(w=2400, h=300))


def materialize(spec):
    text = json.dumps(spec)
    text = text.replace('"<rgb>"', json.dumps(b64(png_bytes(w=40, h=30))))
    text = text.replace('"<rgba>"', json.dumps(b64(png_rgba(50, 20))))
    return json.loads(text)


# =========================================================================== rendering once

class Rendered:
    def __init__(self, name, spec_path, out, window, failure):
        self.name, self.spec_path, self.out, self.window, self.failure = name, Path(spec_path), out, window, failure
        self.spec = load_json(spec_path)
        self._cache = {}

    @property
    def base_dir(self):
        return self.spec_path.parent

    def pdf(self):
        if self.out is None:
            pytest.fail("rendering %s to .pdf failed:\n%s" % (self.spec_path, self.failure))
        return self.out

    def cached(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def pages(self, first=None, last=None):
        """pdftotext -layout, one string a page (of pages first..last, default all)."""
        return self.cached(("pages", first, last), lambda: pdf_page_texts(self.pdf(), True, first, last))

    def raw_pages(self):
        """pdftotext -raw (content stream order), one string a page."""
        return self.cached("raw", lambda: pdf_page_texts(self.pdf(), mode="raw"))

    def words(self, first=None, last=None):
        return self.cached(("words", first, last), lambda: pdf_words(self.pdf(), first, last))

    def page_count(self):
        return int(self.info()["Pages"])

    def info(self):
        return self.cached("info", lambda: pdf_info(self.pdf()))

    def reader(self):
        return self.cached("reader", lambda: pypdf.PdfReader(str(self.pdf())))


def utcnow():
    return dt.datetime.now(dt.timezone.utc)


def render_pdf(name, spec_path, out, *extra, timeout=900):
    before = utcnow().replace(microsecond=0)
    try:
        proc = run_kiln("render", spec_path, "-o", out, *extra, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Rendered(name, spec_path, None, None, "no result after %d s" % timeout)
    after = utcnow()
    ok = proc.returncode == 0 and Path(out).is_file()
    return Rendered(name, spec_path, Path(out) if ok else None, (before, after), None if ok else describe(proc))


SAMPLE_NAMES = [p.stem for p in sample_specs()]
LONG = ["long_report", "long_report_pdf"]


class Samples(dict):
    """{name: Rendered}, each rendered on first use (so that `-k` on a light sample does not
    wait for the 200,000-row one), once per module."""

    def __init__(self, directory, specs):
        super().__init__()
        self.directory, self.specs = directory, specs

    def __missing__(self, name):
        r = render_pdf(name, self.specs[name], self.directory / (name + ".pdf"))
        self[name] = r
        return r

    def __contains__(self, name):
        return name in self.specs


@pytest.fixture(scope="module")
def pdf_samples(tmp_path_factory, kiln_bin, sample_data_ready, long_report_ready, long_report_pdf_ready):
    """Every samples/*.json, the long report and its PDF edition, each rendered once."""
    specs = {p.stem: p for p in sample_specs()}
    specs["long_report"] = long_report_ready
    specs["long_report_pdf"] = long_report_pdf_ready
    return Samples(tmp_path_factory.mktemp("pdf_samples"), specs)


@pytest.fixture(scope="module")
def pdf_features(tmp_path_factory, kiln_bin):
    d = tmp_path_factory.mktemp("pdf_features")
    write_feature_files(d)
    out = {}
    for name, spec in FEATURE_SPECS.items():
        sp = write_spec(d, materialize(spec), name + ".json")
        out[name] = render_pdf(name, sp, d / (name + ".pdf"))
    return out


ALL_SAMPLES = SAMPLE_NAMES + LONG


def any_rendered(pdf_samples, pdf_features, name):
    return pdf_samples[name] if name in pdf_samples else pdf_features[name]


# =========================================================================== checks shared by samples and features

def check_valid(r):
    pdf = r.pdf()
    with open(pdf, "rb") as fh:
        head = fh.read(8)
    assert head.startswith(b"%PDF-1."), "%s does not start with a PDF header: %r" % (pdf, head)
    if r.name in BIG_SAMPLES:
        # qpdf --check of thousands of pages spends half a minute parsing page contents
        # the same code wrote: the whole file's objects, cross-reference table and
        # streams are read and decoded by a copy (any warning is exit 3), and the page
        # contents checked on the pages the other checks read.
        copy = subprocess.run([pdf_tool("qpdf"), "--decode-level=all", str(pdf), "/dev/null"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        assert copy.returncode == 0 and not copy.stdout, \
            "qpdf reading every object of %s: exit %d\n%s" % (r.name, copy.returncode, copy.stdout[-4000:])
        pdf = pages_copy(r, page_ranges(r))
    proc = qpdf_check(pdf)
    assert proc.returncode == 0 and "No syntax or stream encoding errors found" in proc.stdout, \
        "qpdf --check %s failed:\n%s" % (r.name, proc.stdout[-4000:])


def pages_copy(r, ranges):
    """A PDF of only these (first, last) page ranges of r's, made by qpdf."""
    out = r.pdf().with_name(r.name + ".pages.pdf")
    spec = ",".join("%d-%d" % (first, last) for first, last in ranges)
    proc = subprocess.run([pdf_tool("qpdf"), "--empty", "--pages", str(r.pdf()), spec, "--", str(out)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert proc.returncode == 0, "qpdf --pages %s %s: %s" % (r.name, spec, proc.stdout[-2000:])
    return out


def page_ranges(r):
    """The pages a check reads: all of them, or for a sample of thousands of pages the
    first three and the last two."""
    if r.name not in BIG_SAMPLES:
        return [(None, None)]
    n = r.page_count()
    return [(1, min(3, n)), (max(1, n - 1), n)]


def check_fonts(r):
    rows = []
    for first, last in page_ranges(r):
        rows += pdf_fonts(r.pdf(), first, last)
    assert rows, "%s: pdffonts lists no font at all" % r.name
    bad = [f for f in rows if f["emb"] != "yes"]
    assert not bad, "%s: fonts not embedded: %s" % (r.name, bad)
    no_uni = [f for f in rows if f["uni"] != "yes"]
    assert not no_uni, "%s: fonts without a ToUnicode map (text cannot be extracted): %s" % (r.name, no_uni)
    return rows


def check_info(r):
    """pdfinfo: page count, every page's size, the metadata."""
    spec, info, errs = r.spec, r.info(), []
    pages = int(info.get("Pages", "0"))
    if pages < 1:
        errs.append("pdfinfo reports %r pages" % info.get("Pages"))
        return errs
    if len(r.reader().pages) != pages:
        errs.append("pypdf reads %d pages, pdfinfo %d" % (len(r.reader().pages), pages))
    geo = page_geometry(spec)
    sizes = pdf_info(r.pdf(), 1, pages)["page_sizes"]
    bad = [(n + 1, s) for n, s in enumerate(sizes)
           if abs(s[0] - geo["width"]) > 0.5 or abs(s[1] - geo["height"]) > 0.5 or s[2] not in (0, 360)]
    if bad:
        errs.append("%d of %d pages are not %.1f x %.1f pt (%s %s), e.g. page %d is %s"
                    % (len(bad), pages, geo["width"], geo["height"], (spec.get("page") or {}).get("size", "A4"),
                       "landscape" if geo["width"] > geo["height"] else "portrait", bad[0][0], bad[0][1]))
    md = spec.get("metadata") or {}
    for key, want in (("Title", md.get("title")), ("Author", md.get("author")),
                      ("Subject", md.get("subject")), ("Keywords", keywords_of(spec))):
        if want is not None and info.get(key) != want:
            errs.append("pdfinfo %s: expected %r, got %r" % (key, want, info.get(key)))
    got = parse_pdfinfo_date(info.get("CreationDate"))
    want = created_utc(spec)
    if got is None:
        errs.append("pdfinfo CreationDate %r is missing or not a date" % info.get("CreationDate"))
    elif want is not None:
        if got != want:
            errs.append("pdfinfo CreationDate: expected %s (metadata.created %r), got %s (%r)"
                        % (want.isoformat(), md.get("created"), got.astimezone(dt.timezone.utc).isoformat(),
                           info.get("CreationDate")))
    elif r.window is not None:
        lo, hi = r.window
        if not (lo - dt.timedelta(seconds=2) <= got <= hi + dt.timedelta(seconds=2)):
            errs.append("pdfinfo CreationDate %s is not the time of rendering (%s .. %s)" % (got, lo, hi))
    return errs


def check_text_order(r, row_limit=None):
    items = reading_order(r.spec, r.base_dir, row_limit=row_limit)
    assert items, "test bug: nothing to look for in %s" % r.name
    if r.name in BIG_SAMPLES:   # the first rows only: the first pages
        pages = r.pages(1, min(4, r.page_count()))
        return check_in_order(items, body_text(pages, r.spec, 1, r.page_count()))
    return check_in_order(items, body_text(r.pages(), r.spec))


def check_margins_and_furniture(r):
    """Every word inside the margins, but for the header (top margin band) and the
    "Page N of M" footer (bottom band), which must say what the spec asks on every page."""
    spec, geo, errs = r.spec, page_geometry(r.spec), []
    numbered = []
    for first, last in page_ranges(r):
        numbered += list(enumerate(r.words(first, last), first or 1))
    total = r.page_count() if r.name in BIG_SAMPLES else len(numbered)
    hdr = header_text(spec)
    outside = []
    for n, (w, h, words) in numbered:
        top_band, bottom_band = [], []
        for x0, y0, x1, y1, t in words:
            if y1 <= geo["top"] + TOL and y0 >= -TOL:
                top_band.append((x0, y0, x1, y1, t))
            elif y0 >= h - geo["bottom"] - TOL and y1 <= h + TOL:
                bottom_band.append((x0, y0, x1, y1, t))
            elif y0 < geo["top"] - TOL or y1 > h - geo["bottom"] + TOL:
                outside.append("page %d: %r straddles a margin (y %.1f..%.1f; text area %.1f..%.1f)"
                               % (n, t, y0, y1, geo["top"], h - geo["bottom"]))
                continue
            if x0 < geo["left"] - TOL or x1 > w - geo["right"] + TOL:
                outside.append("page %d: %r outside the left/right margins (x %.1f..%.1f; text area %.1f..%.1f)"
                               % (n, t, x0, x1, geo["left"], w - geo["right"]))
        top = norm(" ".join(t for *_b, t in sorted(top_band, key=lambda b: (round(b[1]), b[0]))))
        bottom = norm(" ".join(t for *_b, t in sorted(bottom_band, key=lambda b: (round(b[1]), b[0]))))
        want_top = norm(hdr) if hdr else ""
        want_bottom = "Page%dof%d" % (n, total) if page_numbers_on(spec) else ""
        if top != want_top:
            errs.append("page %d: the top margin holds %r, expected %r (the header)" % (n, top[:120], want_top))
        if bottom != want_bottom:
            errs.append("page %d: the bottom margin holds %r, expected %r" % (n, bottom[:120], want_bottom))
    if outside:
        errs.append("%d words outside the text area, e.g.:\n  %s" % (len(outside), "\n  ".join(outside[:12])))
    if len(errs) > 30:
        errs = errs[:30] + ["... %d more" % (len(errs) - 30)]
    return errs


def check_outline(r):
    """The outline has one entry per heading, nested as the heading levels, each pointing
    at the page where pdftotext finds that heading."""
    want = outline_expected(r.spec)
    try:
        got = outline_flat(r.reader())
    except Exception as e:  # noqa: BLE001 - an unreadable outline is the finding
        return ["pypdf cannot read the outline: %r" % e]
    errs = []
    got_pairs = [(d, unicodedata.normalize("NFC", t)) for d, t, _p in got]
    want_pairs = [(d, unicodedata.normalize("NFC", t)) for d, t in want]
    if got_pairs != want_pairs:
        for i, (g, w) in enumerate(zip(got_pairs + [None] * len(want_pairs), want_pairs + [None] * len(got_pairs))):
            if g != w:
                errs.append("outline entry %d: expected (depth, title) %r, got %r (%d entries, %d headings)"
                            % (i, w, g, len(got_pairs), len(want_pairs)))
                break
        return errs
    pages = r.pages()
    for (d, title, p) in got:
        if p is None or not (0 <= p < len(pages)):
            errs.append("outline entry %r points at no page (%r)" % (title, p))
        elif norm(title) not in norm(pages[p]):
            errs.append("outline entry %r points at page %d, which does not show that heading" % (title, p + 1))
    return errs[:20]


def check_toc(r):
    """Each TOC entry's page number is the page the outline (and pdftotext) puts its heading on."""
    flow = expected_flow(r.spec)
    tocs = [it for it in flow if it["kind"] == "toc"]
    if not tocs:
        return []
    errs = []
    try:
        got = outline_flat(r.reader())
    except Exception as e:  # noqa: BLE001
        return ["pypdf cannot read the outline: %r" % e]
    heads = [it for it in flow if it["kind"] == "heading"]
    if len(got) != len(heads):
        return ["the outline has %d entries for %d headings: cannot pair TOC entries with pages" % (len(got), len(heads))]
    pages = r.pages()
    npages = [norm(p) for p in pages]
    for toc in tocs:
        title = norm(toc["title"])
        start = next((i for i, p in enumerate(npages) if title in p), None)
        if start is None:
            errs.append("no page shows the TOC title %r" % toc["title"])
            continue
        text = "".join(npages[start:])
        pos = text.find(title) + len(title)
        for (h, (_d, _t, page)) in zip(heads, got):
            if h["level"] > toc["levels"]:
                continue
            want = norm(h["text"])
            m = re.compile(re.escape(want) + r"[.\u00b7\u2026_]*(\d+)").search(text, pos)
            if not m:
                errs.append("TOC entry %r with a page number not found" % h["text"])
                continue
            pos = m.end()
            if int(m.group(1)) != page + 1:
                errs.append("TOC entry %r says page %s, the heading is on page %d"
                            % (h["text"], m.group(1), page + 1))
            if len(errs) > 15:
                return errs
    return errs


# =========================================================================== samples

def test_samples_exist(long_report_ready, long_report_pdf_ready):
    assert {"business_report", "multilingual"} <= set(SAMPLE_NAMES), SAMPLE_NAMES
    assert long_report_pdf_ready.is_file()


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_sample_renders_and_passes_qpdf_check(pdf_samples, name):
    check_valid(pdf_samples[name])


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_sample_fonts_are_embedded(pdf_samples, name):
    check_fonts(pdf_samples[name])


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_sample_pdfinfo(pdf_samples, name):
    errs = check_info(pdf_samples[name])
    assert not errs, "%s.pdf:\n%s" % (name, "\n".join(errs))


def test_long_report_has_200_pages(pdf_samples):
    pages = int(pdf_samples["long_report_pdf"].info()["Pages"])
    assert pages >= 200, "the long report's PDF edition is %d pages; the issue asks for 200+" % pages


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_sample_text_in_reading_order(pdf_samples, name):
    r = pdf_samples[name]
    errs = check_text_order(r, row_limit=BIG_ROWS if name in BIG_SAMPLES else None)
    assert not errs, "%s.pdf (pdftotext -layout):\n%s" % (name, "\n".join(errs))


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_sample_text_within_margins(pdf_samples, name):
    errs = check_margins_and_furniture(pdf_samples[name])
    assert not errs, "%s.pdf (pdftotext -bbox):\n%s" % (name, "\n".join(errs))


@pytest.mark.parametrize("name", [n for n in ALL_SAMPLES if n not in BIG_SAMPLES])
def test_sample_outline(pdf_samples, name):
    errs = check_outline(pdf_samples[name])
    assert not errs, "%s.pdf (pypdf outline):\n%s" % (name, "\n".join(errs))


TOC_SAMPLES = [p.stem for p in sample_specs()
               if any(b.get("type") == "toc" for b in load_json(p).get("blocks") or [])] + LONG


@pytest.mark.parametrize("name", TOC_SAMPLES)
def test_sample_toc_page_numbers(pdf_samples, name):
    errs = check_toc(pdf_samples[name])
    assert not errs, "%s.pdf (TOC):\n%s" % (name, "\n".join(errs))


def test_big_sample_last_row_and_header_on_every_page(pdf_samples, sample_data_ready):
    """samples/export_200k.json: each page (of the first three and the last two, read
    in content stream order) repeats the table's header row above its rows, and the
    last CSV record is the last row."""
    r = pdf_samples["export_200k"]
    sheet = r.spec["sheets"][0]
    header = [norm(c.text) for c in next(expected_table_rows(sheet, r.base_dir, limit=1))]
    bad, seen = [], 0
    for first, last in page_ranges(r):
        for n, page in enumerate(pdf_page_texts(r.pdf(), first=first, last=last, mode="raw"), first):
            seen += 1
            t, pos = norm(page), 0
            for hcell in header:
                k = t.find(hcell, pos)
                if k < 0:
                    bad.append(n)
                    break
                pos = k + len(hcell)
    assert seen >= 2 and not bad, "pages %s lack the header row %r" % (bad, header)
    import csv
    with open(r.base_dir / sheet["data"]["path"], encoding="utf-8", newline="") as fh:
        last = None
        for last in csv.reader(fh):
            pass
    n = r.page_count()
    tail = r.pages(n, n)[-1]
    shown = [shown_field(f, c).text for f, c in zip(last, sheet["columns"])]
    items = [("table cell row last col %d" % c, x) for c, x in enumerate(shown) if x]
    sq = body_text([tail], r.spec, n, n)
    errs = check_in_order(items, sq)
    assert not errs, "the last page does not show the last record %r:\n%s\n%s" % (shown, "\n".join(errs), tail[-2000:])


NUMERIC = ("number", "integer", "currency", "percent")


@pytest.mark.parametrize("name", ["business_report", "long_report_pdf", "export_200k"])
def test_numbers_are_never_broken_over_lines(pdf_samples, name, sample_data_ready):
    """A number in a table cell stays on one line (pdftotext -bbox finds it as one word):
    a column is made wide enough for its numbers before any text column gives way."""
    r = pdf_samples[name]
    words = set()
    for first, last in page_ranges(r):
        for _w, _h, ws in r.words(first, last):
            words.update(t for *_b, t in ws)
    want = []
    for it in expected_flow(r.spec):
        if it["kind"] != "table":
            continue
        t = it["t"]
        cols = t.get("columns") or []
        if t.get("data"):   # the 200,000 rows: those on the last page
            import csv
            with open(r.base_dir / t["data"]["path"], encoding="utf-8", newline="") as fh:
                recs = list(csv.reader(fh))[-8:]
            rows = [[shown_field(f, c).text for f, c in zip(rec, cols)] for rec in recs]
        else:
            rows = table_cells(it, r.base_dir)[1 if table_header_flag(t) else 0:]
        for row in rows:
            for c, text in enumerate(row):
                if c < len(cols) and cols[c].get("type") in NUMERIC and text and " " not in text.strip():
                    want.append(text.strip())
    assert want, "test bug: no numeric cells in %s" % name
    broken = sorted({x for x in want if x not in words})
    assert not broken, "%d numbers of %s are split over lines (not one word in pdftotext -bbox), e.g. %s" % (
        len(broken), name, broken[:12])


def test_business_report_images_and_charts(pdf_samples):
    """The sample report's two images are in the file without soft masks, its charts drawn."""
    r = pdf_samples["business_report"]
    imgs = pdf_images(r.pdf())
    kinds = [i["type"] for i in imgs]
    want = sum(1 for b in r.spec["blocks"] if b["type"] == "image")
    assert kinds.count("image") >= want, "expected %d images, pdfimages lists %s" % (want, imgs)
    assert "smask" not in kinds and "mask" not in kinds, "images with masks: %s" % imgs
    flat = norm("".join(r.pages()))
    for b in r.spec["blocks"]:
        if b["type"] == "chart" and b.get("title"):
            assert norm(b["title"]) in flat, "the chart title %r is not drawn" % b["title"]


def embedded_truetype_fonts(reader):
    """{font name: FontFile2 bytes} of every embedded TrueType font (simple or CID)."""
    out = {}
    for page in reader.pages:
        res = resolve(page.get("/Resources")) or {}
        for _k, ref in (resolve(res.get("/Font")) or {}).items():
            font = resolve(ref)
            desc_fonts = [resolve(d) for d in resolve(font.get("/DescendantFonts")) or []] or [font]
            for f in desc_fonts:
                fd = resolve(f.get("/FontDescriptor")) or {}
                ff = resolve(fd.get("/FontFile2"))
                if ff is not None:
                    out.setdefault(str(f.get("/BaseFont")), ff.get_data())
    return out


def incomplete_composites(data):
    """Composite glyphs of an embedded (subset) TrueType font whose components, followed
    down every level, were left out of the subset (drawn as nothing, or half a letter)."""
    import io
    try:
        from fontTools.ttLib import TTFont
    except ImportError:
        pytest.fail("fontTools is required to read embedded fonts: apt-get install python3-fonttools")
    font = TTFont(io.BytesIO(data))
    glyf = font["glyf"]
    bad = []
    for name in font.getGlyphOrder():
        g = glyf[name]
        if not g.isComposite():
            continue
        pending = [c.glyphName for c in g.components]
        while pending:
            c = glyf[pending.pop()]
            if c.isComposite():
                pending += [x.glyphName for x in c.components]
            elif c.numberOfContours == 0:
                bad.append(name)
                break
    return bad


@pytest.mark.parametrize("name", ["business_report", "multilingual"])
def test_embedded_fonts_hold_every_glyph_they_draw(pdf_samples, name):
    """Accented and composed letters (Ό, Hangul syllables) are composite glyphs: the
    subset must carry their components too, at every level, or they draw half or blank."""
    fonts = embedded_truetype_fonts(pdf_samples[name].reader())
    assert fonts, "no embedded TrueType font found"
    errs = []
    for fname, data in sorted(fonts.items()):
        bad = incomplete_composites(data)
        if bad:
            errs.append("%s: %d composite glyphs lack components, e.g. %s" % (fname, len(bad), bad[:8]))
    assert not errs, "\n".join(errs)


def test_every_word_is_drawn(pdf_samples):
    """Each word pdftotext finds in multilingual.pdf shows ink where it stands (a glyph
    that extracts but draws nothing is invisible to pdftotext)."""
    try:
        from PIL import Image
    except ImportError:
        pytest.fail("Pillow is required: apt-get install python3-pil")
    r = pdf_samples["multilingual"]
    d = r.pdf().parent / "ink"
    d.mkdir(exist_ok=True)
    dpi = 100
    proc = subprocess.run([pdf_tool("pdftoppm"), "-gray", "-r", str(dpi), str(r.pdf()), str(d / "p")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr
    images = sorted(d.glob("p-*.pgm"), key=lambda x: int(re.search(r"-(\d+)\.pgm$", x.name).group(1)))
    blank = []
    for (w, h, words), img in zip(r.words(), images):
        im = Image.open(img)
        k = dpi / 72.0
        for x0, y0, x1, y1, t in words:
            box = im.crop((int(x0 * k), int(y0 * k), int(x1 * k) + 1, int(y1 * k) + 1))
            lo, hi = box.getextrema()
            if hi - lo < 60:
                blank.append("page %s: %r" % (img.name, t))
    assert not blank, "%d words extract as text but draw nothing, e.g. %s" % (len(blank), blank[:12])


# --------------------------------------------------------------------------- non-Latin text

def test_multilingual_text_is_extracted(pdf_samples):
    r = pdf_samples["multilingual"]
    flat = norm("".join(r.pages()))
    for s in ("Ελληνικά: η ετήσια έκθεση", "Μηδὲν ἄγαν.", "Русский: годовой отчёт", "Санкт-Петербург",
              "中文：年度报告", "北京：新的配送中心", "売上高は前年比", "매출은 전년 대비", "東京",
              "서울", "crème brûlée, façade, naïve, Ångström", "Łódź", "αβγ абв 汉字 かな 한글"):
        assert norm(s) in flat, "pdftotext of multilingual.pdf lacks %r" % s


def test_multilingual_cjk_fallback_font_embedded(pdf_samples):
    rows = check_fonts(pdf_samples["multilingual"])
    names = [f["name"] for f in rows]
    assert any("dejavu" in n.lower() for n in names), "no DejaVu font: %s" % names
    cjk = [n for n in names if re.search(r"(?i)wenquanyi|wqy|zenhei|cjk|uming|ukai|droidsansfallback", n)]
    assert cjk, "no CJK fallback font (e.g. WenQuanYi Zen Hei) among the embedded fonts: %s" % names


def test_missing_glyph_is_reported(tmp_path, kiln_bin):
    """A character no font has (Ethiopic U+1200) is drawn as '?' and reported, never dropped silently."""
    sp = write_spec(tmp_path, {"blocks": [{"type": "paragraph", "text": "Ethiopic \u1200 here, twice \u1200."}]})
    out = tmp_path / "m.pdf"
    p = run_kiln("render", sp, "-o", out)
    assert p.returncode == 0, describe(p)
    assert re.search(r"(?i)warning.*\b2 characters.*U\+1200", err_text(p)), \
        "no warning naming the 2 characters and U+1200: " + describe(p)
    assert "Ethiopic?here,twice?." in norm("".join(pdf_page_texts(out)))
    pj = run_kiln("render", sp, "-o", tmp_path / "j.pdf", "--json")
    obj = json.loads(pj.stdout.decode("utf-8"))
    assert obj.get("ok") is True, obj
    (w,) = obj["warnings"]  # contract/report.h: the same object kiln run and the API give
    assert (w["code"], w["count"], w["first"]) == ("missing_glyphs", 2, 0x1200), obj
    assert "U+1200" in w["message"], w


# =========================================================================== feature specs

@pytest.mark.parametrize("name", list(FEATURE_SPECS))
def test_feature_valid_and_fonts_embedded(pdf_features, name):
    check_valid(pdf_features[name])
    check_fonts(pdf_features[name])


@pytest.mark.parametrize("name", list(FEATURE_SPECS))
def test_feature_pdfinfo(pdf_features, name):
    errs = check_info(pdf_features[name])
    assert not errs, "%s.pdf:\n%s" % (name, "\n".join(errs))


@pytest.mark.parametrize("name", list(FEATURE_SPECS))
def test_feature_text_in_reading_order(pdf_features, name):
    errs = check_text_order(pdf_features[name])
    assert not errs, "%s.pdf (pdftotext -layout):\n%s" % (name, "\n".join(errs))


@pytest.mark.parametrize("name", list(FEATURE_SPECS))
def test_feature_text_within_margins(pdf_features, name):
    errs = check_margins_and_furniture(pdf_features[name])
    assert not errs, "%s.pdf (pdftotext -bbox):\n%s" % (name, "\n".join(errs))


@pytest.mark.parametrize("name", list(FEATURE_SPECS))
def test_feature_outline(pdf_features, name):
    errs = check_outline(pdf_features[name])
    assert not errs, "%s.pdf (pypdf outline):\n%s" % (name, "\n".join(errs))


def test_long_table_repeats_its_header_row(pdf_features):
    """The table runs over several pages; each page it continues on starts with the
    header row (pdftotext of that page alone), every row is shown exactly once."""
    r = pdf_features["long_table"]
    header = [norm(c["header"]) for c in LONG_TABLE_SPEC["blocks"][2]["columns"]]
    ids = ["R%04d" % i for i in range(1, LONG_TABLE_ROWS + 1)]
    pages = [norm(p) for p in r.raw_pages()]
    on = {}
    for n, t in enumerate(pages):
        for i in ids:
            if i in t:
                on.setdefault(n, []).append(i)
    table_pages = sorted(on)
    assert len(table_pages) >= 3, "the %d-row table covers pages %s only" % (LONG_TABLE_ROWS, [p + 1 for p in table_pages])
    counts = {i: sum(t.count(i) for t in pages) for i in ids}
    assert all(c == 1 for c in counts.values()), \
        "rows shown other than once: %s" % {i: c for i, c in counts.items() if c != 1}
    errs = []
    for n in table_pages:
        t = pages[n]
        first_row = min(t.find(i) for i in on[n])
        pos = 0
        for h in header:
            k = t.find(h, pos)
            if k < 0 or k > first_row:
                errs.append("page %d: header cell %r not above the first row (%s)" % (n + 1, h, on[n][0]))
                break
            pos = k + len(h)
        if t.count(header[1]) != 1:
            errs.append("page %d shows the header row %d times" % (n + 1, t.count(header[1])))
    # the same, page by page with pdftotext -f N -l N (layout), for the first continuation page
    n = table_pages[1]
    proc = subprocess.run([pdf_tool("pdftotext"), "-layout", "-f", str(n + 1), "-l", str(n + 1), str(r.pdf()), "-"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    single = norm(proc.stdout.decode("utf-8", "replace"))
    if not all(h in single for h in header):
        errs.append("pdftotext -f %d -l %d lacks the header row: %s" % (n + 1, n + 1, single[:300]))
    assert not errs, "\n".join(errs)


def test_links_are_uri_annotations(pdf_features):
    """Each linked run is a /Link annotation with a /URI action whose rectangle covers the
    words of the run (on each line a wrapped link reaches)."""
    r = pdf_features["links"]
    reader = r.reader()
    links = link_annotations(reader)
    words = r.words()
    want = [("our site", "https://example.com/a?b=1&c=2"), ("write to us", "mailto:someone@example.com"),
            ("the file", "ftp://files.example.com/x.csv"),
            (LINKS_SPEC["blocks"][2]["runs"][1]["text"], "https://example.com/wrapped"),
            ("a linked word", "https://example.com/item")]
    errs = []
    for text, uri in want:
        mine = [lk for lk in links if lk[1] == uri]
        if not mine:
            errs.append("no /Link annotation with /URI %r (links: %s)" % (uri, [lk[1] for lk in links]))
            continue
        # every word of the linked text lies inside one of its rectangles
        for tw in text.split():
            hits = []
            for n, (w, h, ws) in enumerate(words):
                for x0, y0, x1, y1, t in ws:
                    if t == tw:
                        cx, cy = (x0 + x1) / 2, h - (y0 + y1) / 2
                        hits.append(any(lk[0] == n and lk[3][0] - 1 <= cx <= lk[3][2] + 1
                                        and lk[3][1] - 1 <= cy <= lk[3][3] + 1 for lk in mine))
            if hits and not any(hits):
                errs.append("the word %r of the link %r is outside every rectangle of its annotation %s"
                            % (tw, uri, [lk[3] for lk in mine]))
    plain = [lk for lk in links if lk[1] is None and lk[2] is None]
    if plain:
        errs.append("link annotations with neither a URI nor a destination: %s" % plain)
    assert not errs, "\n".join(errs)


def test_table_url_cell_is_a_link(pdf_features):
    links = link_annotations(pdf_features["links"].reader())
    assert any(lk[1] == "https://example.com/cell" for lk in links), \
        "a table cell {\"url\": ...} is not a link: %s" % [lk[1] for lk in links]


def test_images_without_soft_masks(pdf_features):
    """Each image is an image XObject of its own pixel size; transparency flattened, so no
    /SMask (libharu 2.3 writes those uncompressed)."""
    r = pdf_features["images"]
    imgs = pdf_images(r.pdf())
    kinds = [i["type"] for i in imgs]
    assert "smask" not in kinds and "mask" not in kinds, "images with masks:\n%s" % "\n".join(
        " ".join(i["fields"]) for i in imgs)
    sizes = sorted((i["width"], i["height"]) for i in imgs if i["type"] == "image")
    want = sorted([(40, 30), (50, 20), (480, 300), (240, 240), (2400, 300)])
    assert sizes == want, "image sizes: expected %s, got %s" % (want, sizes)
    pages = r.pages()
    assert norm("After the images.") in norm("".join(pages))


def test_charts_are_drawn(pdf_features):
    """Every chart's title, legend entries and category labels are drawn as text; charts are
    vector graphics (no image XObject)."""
    r = pdf_features["charts"]
    flat = norm("".join(r.pages()))
    errs = []
    for b in CHARTS_SPEC["blocks"][1:]:
        if norm(b["title"]) not in flat:
            errs.append("chart title %r not drawn" % b["title"])
        if b.get("legend", "right") != "none" and b["kind"] not in ("pie", "doughnut"):
            # (a pie's legend names its categories, checked below)
            for s in b["series"]:
                if norm(s["name"]) not in flat:
                    errs.append("%s: legend entry %r not drawn" % (b["title"], s["name"]))
        for c in b["categories"]:
            label = c if isinstance(c, str) else None
            if label and norm(label) not in flat:
                errs.append("%s: category %r not drawn" % (b["title"], label))
    imgs = pdf_images(r.pdf())
    if imgs:
        errs.append("charts should be vector drawings, yet pdfimages lists %d images" % len(imgs))
    assert not errs, "\n".join(errs)


def test_sheets_only_spec(pdf_features):
    """Each sheet is a level-1 heading (its name) followed by its table."""
    r = pdf_features["sheets"]
    got = outline_flat(r.reader())
    assert [(d, t) for d, t, _p in got] == [(0, "Sales & costs"), (0, "Sheet2"), (0, "Merged")], got
    sq = body_text(r.pages(), r.spec)
    for name, first_cell in (("Sales & costs", "Region"), ("Sheet2", "unnamed sheet"), ("Merged", "A merged title")):
        k = sq.find(norm(name))
        assert k >= 0 and sq.find(norm(first_cell), k) >= 0, "sheet %r: heading then %r not found" % (name, first_cell)
    assert norm("$1,200.50") in sq and norm("2026-01-05") in sq and norm("$2,180.50") in sq


def test_slides_only_spec(pdf_features):
    """Each slide is one landscape page: its title (or, for a blank slide, its notes) on it."""
    r = pdf_features["slides"]
    slides = SLIDES_SPEC["slides"]
    info = r.info()
    assert int(info["Pages"]) == len(slides), "%d slides, %s pages" % (len(slides), info["Pages"])
    for n, (w, h, _rot) in enumerate(pdf_info(r.pdf(), 1, len(slides))["page_sizes"], 1):
        assert w > h, "page %d is not landscape: %s x %s" % (n, w, h)
    pages = [norm(p) for p in r.pages()]
    for n, sl in enumerate(slides):
        want = sl.get("title") or sl.get("notes")
        assert norm(want) in pages[n], "page %d lacks %r (slide %d):\n%s" % (n + 1, want, n, r.pages()[n][:800])
        for other in slides:
            t = other.get("title")
            if t and other is not sl and norm(t) in pages[n] and norm(t) not in norm(want):
                pytest.fail("page %d (slide %d) also shows the title %r of another slide" % (n + 1, n, t))


# --------------------------------------------------------------------------- page setup

@pytest.mark.parametrize("size", ["A4", "Letter", "Legal", "A3", "A5"])
@pytest.mark.parametrize("orientation", ["portrait", "landscape"])
def test_page_sizes(tmp_path, kiln_bin, size, orientation):
    spec = {"metadata": {"title": "%s %s" % (size, orientation), "created": "2026-01-01T00:00:00Z"},
            "page": {"size": size, "orientation": orientation,
                     "margins": {"left": "15mm", "top": 50, "right": "1in", "bottom": "2cm"}},
            "blocks": [{"type": "heading", "text": "%s %s" % (size, orientation)},
                       {"type": "paragraph", "text": "Words to fill the page. " * 150}]}
    sp = write_spec(tmp_path, spec)
    r = Rendered("page", sp, render_ok(sp, tmp_path / "p.pdf"), None, None)
    errs = check_info(r) + check_margins_and_furniture(r)
    assert not errs, "\n".join(errs)


def test_default_page_is_a4_portrait_with_inch_margins(tmp_path, kiln_bin):
    sp = write_spec(tmp_path, {"blocks": [{"type": "paragraph", "text": "Default page. " * 400}]})
    r = Rendered("default", sp, render_ok(sp, tmp_path / "d.pdf"), None, None)
    sizes = pdf_info(r.pdf(), 1, 1)["page_sizes"]
    assert abs(sizes[0][0] - 595.28) < 0.5 and abs(sizes[0][1] - 841.89) < 0.5, sizes
    errs = check_margins_and_furniture(r)
    assert not errs, "\n".join(errs)


def test_metadata_without_created_uses_now(tmp_path, kiln_bin):
    sp = write_spec(tmp_path, {"metadata": {"title": "Now", "keywords": ["a", "b"]},
                               "blocks": [{"type": "paragraph", "text": "x"}]})
    r = render_pdf("now", sp, tmp_path / "n.pdf")
    errs = check_info(r)
    assert not errs, "\n".join(errs)


def test_render_to_stdout(tmp_path, kiln_bin):
    sp = write_spec(tmp_path, {"blocks": [{"type": "heading", "text": "stdout"}]})
    p = run_kiln("render", sp, "-o", "-", "--format", "pdf")
    assert p.returncode == 0, describe(p)
    assert p.stdout.startswith(b"%PDF-"), p.stdout[:40]
    out = tmp_path / "stdout.pdf"
    out.write_bytes(p.stdout)
    assert qpdf_check(out).returncode == 0
    assert "stdout" in "".join(pdf_page_texts(out))


# =========================================================================== failures leave nothing

ERROR_LINE = re.compile(r"^kiln: error: (.*)$")
POINTER_LINE = re.compile(r"^kiln: error: (/[^:]*|): (.*)$")


def expect_pdf_failure(tmp_path, spec, code, pointer_re=None, extra=(), files=None, message_re=None):
    """Render spec to a .pdf: the exit status, an error line naming the pointer, the same
    with --json, and nothing left in the output directory."""
    sd = tmp_path / "specdir"
    sd.mkdir(exist_ok=True)
    od = tmp_path / "outdir"
    od.mkdir(exist_ok=True)
    for name, data in (files or {}).items():
        (sd / name).write_bytes(data)
    sp = spec if isinstance(spec, Path) else write_spec(sd, spec)
    before = listing(od)
    out = od / "report.pdf"
    proc = None
    for json_flag in ((), ("--json",)):
        proc = run_kiln("render", sp, "-o", out, *extra, *json_flag)
        assert proc.returncode == code, "expected exit %d, got: %s" % (code, describe(proc))
        lines = [ln for ln in err_text(proc).splitlines() if ln.strip()]
        if not json_flag:
            assert lines and all(ERROR_LINE.match(ln) for ln in lines), describe(proc)
            if pointer_re is not None:
                ps = [m.group(1) for m in (POINTER_LINE.match(ln) for ln in lines) if m]
                assert any(re.fullmatch(pointer_re, x) for x in ps), \
                    "no error with a pointer matching %r: %s" % (pointer_re, describe(proc))
            if message_re is not None:
                assert re.search(message_re, err_text(proc)), describe(proc)
        else:
            obj = json.loads(proc.stdout.decode("utf-8"))
            assert obj.get("ok") is False and obj.get("errors"), obj
        assert not out.exists(), "a failed render left %s" % out
        assert listing(od) == before, "the output directory changed: %s -> %s" % (before, listing(od))
    return proc


def test_invalid_spec_exit_3_with_pointer(tmp_path, kiln_bin):
    expect_pdf_failure(tmp_path, {"blocks": [{"type": "heading", "text": "ok"}, {"type": "tabel"}]},
                       3, r"/blocks/1(/type)?")


def test_invalid_member_deep_pointer(tmp_path, kiln_bin):
    spec = {"page": {"size": "A4"}, "blocks": [{"type": "paragraph", "runs": [{"text": "a", "blod": True}]}]}
    expect_pdf_failure(tmp_path, spec, 3, r"/blocks/0/runs/0/blod")


def test_missing_image_is_unreadable_input(tmp_path, kiln_bin):
    expect_pdf_failure(tmp_path, {"blocks": [{"type": "paragraph", "text": "before"},
                                             {"type": "image", "image": {"path": "nope.png"}}]},
                       5, r"/blocks/1/image(/path)?")


def test_truncated_png(tmp_path, kiln_bin):
    spec = {"blocks": [{"type": "image", "image": {"data": b64(png_bytes()[:20])}}]}
    expect_pdf_failure(tmp_path, spec, 3, r"/blocks/0/image(/data)?")


@pytest.mark.parametrize("which", ["business_report", "long_report"])
def test_size_ceiling(tmp_path, kiln_bin, long_report_ready, which):
    """--max-bytes too small: exit 4; the message states the ceiling and the size reached
    (docs/cli.md), --json gives limit and actual; nothing left."""
    spec = SAMPLES / "business_report.json" if which == "business_report" else long_report_ready
    p = expect_pdf_failure(tmp_path, spec, 4, extra=("--max-bytes", "2K"), message_re=r"\b2048\b")
    sizes = [int(x) for x in re.findall(r"\b\d+\b", err_text(p).replace(",", ""))]
    assert any(x > 2048 for x in sizes), "the message does not state the size reached: " + err_text(p)
    pj = run_kiln("render", spec, "-o", tmp_path / "outdir" / "x.pdf", "--max-bytes", "2K", "--json")
    e = json.loads(pj.stdout.decode("utf-8"))["errors"][0]
    assert e["code"] == "too_large" and e.get("limit") == 2048 and e.get("actual", 0) > 2048, e
    assert not (tmp_path / "outdir" / "x.pdf").exists()


def test_size_ceiling_exact_boundary(tmp_path, kiln_bin):
    """A document of exactly N bytes passes --max-bytes N and fails N-1, leaving nothing."""
    spec = {"metadata": {"created": "2026-01-01T00:00:00Z", "title": "fixed"},
            "blocks": [{"type": "heading", "text": "Fixed"},
                       {"type": "paragraph", "text": "some text " * 200},
                       {"type": "table", "columns": [{"header": "n", "type": "integer"}],
                        "rows": [[i] for i in range(300)]}]}
    sp = write_spec(tmp_path, spec)
    size = render_ok(sp, tmp_path / "a.pdf").stat().st_size
    render_ok(sp, tmp_path / "b.pdf", "--max-bytes", str(size))
    assert (tmp_path / "b.pdf").stat().st_size == size, "the same spec gave files of different sizes"
    od = tmp_path / "o"
    od.mkdir()
    p = run_kiln("render", sp, "-o", od / "c.pdf", "--max-bytes", str(size - 1))
    assert p.returncode == 4, describe(p)
    assert listing(od) == {}


def test_failure_keeps_an_existing_file(tmp_path, kiln_bin):
    od = tmp_path / "o"
    od.mkdir()
    out = od / "precious.pdf"
    out.write_bytes(b"keep me")
    sp = write_spec(tmp_path, {"blocks": [{"type": "nope"}]})
    p = run_kiln("render", sp, "-o", out)
    assert p.returncode == 3, describe(p)
    assert out.read_bytes() == b"keep me"
    p = run_kiln("render", SAMPLES / "business_report.json", "-o", out, "--max-bytes", "2K")
    assert p.returncode == 4, describe(p)
    sp2 = write_spec(tmp_path, {"blocks": [{"type": "image", "image": {"path": "gone.png"}}]}, "img.json")
    p = run_kiln("render", sp2, "-o", out)
    assert p.returncode == 5, describe(p)
    assert out.read_bytes() == b"keep me" and sorted(listing(od)) == ["precious.pdf"]


def test_success_replaces_an_existing_file(tmp_path, kiln_bin):
    out = tmp_path / "r.pdf"
    out.write_bytes(b"old")
    sp = write_spec(tmp_path, {"blocks": [{"type": "paragraph", "text": "new"}]})
    render_ok(sp, out)
    assert out.read_bytes().startswith(b"%PDF-")


# =========================================================================== review fixes
#
# Focused checks of the PDF writer's pagination and furniture (docs/spec.md, "How the PDF
# writer lays things out"). Each builds the situation it needs from measurements of a
# first render (how many lines a page holds, where a paragraph breaks), never from
# figures written into the test, and each can fail.

REVIEW_PAGE = {"size": "A5", "page_numbers": False}
REVIEW_CREATED = "2026-01-01T00:00:00Z"


def review_render(directory, spec, name):
    """Render spec (a dict) to directory/name.pdf; the PDF's path."""
    spec = dict(spec)
    spec.setdefault("metadata", {"title": name, "created": REVIEW_CREATED})
    sp = write_spec(directory, spec, name + ".json")
    return render_ok(sp, Path(directory) / (name + ".pdf"))


def word_lines(words, tol=2.0):
    """The words of one page grouped into lines, top to bottom, each left to right:
    [[(x0, y0, x1, y1, text)]]."""
    lines = []
    for w in sorted(words, key=lambda w: (w[1], w[0])):
        if lines and abs(lines[-1][0][1] - w[1]) <= tol:
            lines[-1].append(w)
        else:
            lines.append([w])
    return [sorted(ln, key=lambda w: w[0]) for ln in lines]


def line_text(line):
    return " ".join(w[4] for w in line)


def numbered_words(prefix, n):
    return ["%s%04d" % (prefix, i) for i in range(n)]


@pytest.fixture(scope="module")
def review_lines(tmp_path_factory, kiln_bin):
    """One long paragraph of distinct words on A5 pages without furniture, read back:
    (lines per page (page 1 is full), the paragraph's lines as lists of words). Breaking is
    greedy, so a paragraph made of lines i..j of it breaks exactly there."""
    d = tmp_path_factory.mktemp("review_lines")
    words = numbered_words("w", 700)
    pdf = review_render(d, {"page": REVIEW_PAGE, "blocks": [{"type": "paragraph", "text": " ".join(words)}]},
                        "calibrate")
    pages = pdf_words(pdf)
    assert len(pages) >= 2, "test bug: the calibration paragraph fits on one page"
    lines = [[w[4] for w in ln] for _w, _h, ws in pages for ln in word_lines(ws)]
    assert [w for ln in lines for w in ln] == words, "test bug: the calibration paragraph does not read back in order"
    return len(word_lines(pages[0][2])), lines


def para_of(lines, first, count):
    return {"type": "paragraph", "text": " ".join(w for ln in lines[first:first + count] for w in ln)}


def para_lines_per_page(pdf, words):
    """How many lines of the paragraph made of `words` each page shows: [count]."""
    wanted = set(words)
    return [sum(1 for ln in word_lines(ws) if any(w[4] in wanted for w in ln)) for _w, _h, ws in pdf_words(pdf)]


def test_review_widow_one_line_over_a_page(tmp_path, review_lines):
    """A paragraph one line longer than a page holds: the next page gets at least two of
    its lines (widow control moves one more line over), the first keeps at least two."""
    per_page, lines = review_lines
    block = para_of(lines, 0, per_page + 1)
    pdf = review_render(tmp_path, {"page": REVIEW_PAGE, "blocks": [block]}, "widow")
    counts = para_lines_per_page(pdf, block["text"].split())
    assert sum(counts) == per_page + 1, \
        "test bug: a paragraph of %d lines set in %s lines" % (per_page + 1, counts)
    assert len(counts) == 2, "a %d-line paragraph (a page holds %d) took %d pages: %s" % (
        per_page + 1, per_page, len(counts), counts)
    assert counts[1] >= 2, ("widow: a paragraph one line longer than the page (%d lines, %d a page) "
                            "leaves %d line(s) alone at the top of page 2 (lines per page %s)"
                            % (per_page + 1, per_page, counts[1], counts))
    assert counts[0] >= 2, "orphan: page 1 keeps %d line(s) of the paragraph: %s" % (counts[0], counts)


def test_review_orphan_three_line_paragraph_moves_whole(tmp_path, review_lines):
    """Filler paragraphs of m lines, then a 3-line paragraph: for every m where a probe
    shows that exactly two lines still fit on page 1, the 3-line paragraph goes whole to
    page 2; for every m, no page ends with its first line alone or starts with its last
    line alone."""
    per_page, lines = review_lines
    found, errs = [], []
    for m in range(max(1, per_page - 7), per_page):
        filler = para_of(lines, 0, m)
        probe = para_of(lines, m, 10)
        pdf = review_render(tmp_path, {"page": REVIEW_PAGE, "blocks": [filler, probe]}, "probe%d" % m)
        fit = para_lines_per_page(pdf, probe["text"].split())[0]
        target = para_of(lines, m, 3)
        pdf = review_render(tmp_path, {"page": REVIEW_PAGE, "blocks": [filler, target]}, "three%d" % m)
        pages = pdf_words(pdf)
        t_words = target["text"].split()
        first_line, last_line = lines[m], lines[m + 2]
        counts = para_lines_per_page(pdf, t_words)
        if sum(counts) != 3:
            pytest.fail("test bug: the 3-line paragraph after %d filler lines set in %s lines" % (m, counts))
        for n, (_w, _h, ws) in enumerate(pages, 1):
            pl = [[w[4] for w in ln] for ln in word_lines(ws)]
            if pl and pl[-1] == first_line and counts[n - 1] == 1:
                errs.append("filler %d lines (%d probe lines fit): page %d ends with only the first line of "
                            "the 3-line paragraph (lines per page %s)" % (m, fit, n, counts))
            if pl and pl[0] == last_line and counts[n - 1] == 1:
                errs.append("filler %d lines (%d probe lines fit): page %d starts with only the last line of "
                            "the 3-line paragraph (lines per page %s)" % (m, fit, n, counts))
        if fit == 2:
            found.append(m)
            if max(counts) != 3:
                errs.append("filler %d lines, two lines fit below: the 3-line paragraph is split %s "
                            "instead of moving whole to the next page" % (m, counts))
    assert found, "test bug: no filler amount in %d..%d leaves room for exactly two lines" % (
        max(1, per_page - 7), per_page - 1)
    assert not errs, "\n".join(errs)


def image_file_png(path, w, h):
    Path(path).write_bytes(png_bytes(w=w, h=h, color=(40, 90, 160)))


@pytest.mark.parametrize("what", ["image", "chart"])
def test_review_heading_keeps_with_figure(tmp_path, kiln_bin, review_lines, what):
    """A heading followed by a figure that does not fit on the rest of the page goes to the
    next page with it, for every amount of filler before it (stepping over the page)."""
    per_page, lines = review_lines
    image_file_png(tmp_path / "tall.png", 300, 360)       # 225 x 270 pt at 96 dpi
    heading = "Kept heading"
    chart_title = "Kept chart title"
    if what == "image":
        fig = {"type": "image", "image": {"path": "tall.png"}, "caption": "A tall picture"}
    else:
        fig = {"type": "chart", "kind": "column", "title": chart_title, "height": 360,
               "categories": ["a", "b"], "series": [{"name": "s", "values": [1, 2]}]}
    errs, moved = [], 0
    for m in range(1, per_page, 2):
        blocks = [para_of(lines, 0, m), {"type": "heading", "level": 2, "text": heading}, fig]
        pdf = review_render(tmp_path, {"page": REVIEW_PAGE, "blocks": blocks}, "%s%d" % (what, m))
        texts = pdf_page_texts(pdf)
        h_pages = [n for n, t in enumerate(texts, 1) if heading in t]
        if what == "image":
            f_pages = sorted({i["page"] for i in pdf_images(pdf) if i["type"] == "image"})
        else:
            f_pages = [n for n, t in enumerate(texts, 1) if chart_title in t]
        if len(h_pages) != 1 or len(f_pages) != 1:
            errs.append("filler %d lines: heading on pages %s, %s on pages %s" % (m, h_pages, what, f_pages))
            continue
        if f_pages[0] > 1:
            moved += 1
        if h_pages != f_pages:
            errs.append("filler %d lines: the heading %r is on page %d, stranded from its %s on page %d"
                        % (m, heading, h_pages[0], what, f_pages[0]))
    assert moved, "test bug: the %s never had to move to the next page" % what
    assert not errs, "\n".join(errs)


def test_review_figure_captions_not_numbered_twice(tmp_path, kiln_bin):
    """A caption that already reads "Figure N: ..." is printed as given (image and chart);
    a plain one gets "Figure N: " with its number in the document's figure sequence."""
    image_file_png(tmp_path / "pic.png", 60, 40)
    spec = {"blocks": [
        {"type": "image", "image": {"path": "pic.png"}, "caption": "Figure 7: Something"},
        {"type": "chart", "kind": "bar", "title": "Caption chart", "categories": ["a", "b"],
         "series": [{"name": "s", "values": [1, 2]}], "caption": "Figure 12: Revenue by region"},
        {"type": "image", "image": {"path": "pic.png"}, "caption": "Plain caption words"},
    ]}
    pdf = review_render(tmp_path, spec, "captions")
    text = re.sub(r"\s+", " ", " ".join(pdf_page_texts(pdf, layout=False)))
    errs = []
    for own in ("Figure 7: Something", "Figure 12: Revenue by region"):
        if own not in text:
            errs.append("caption %r not printed as given" % own)
        doubled = re.search(r"Figure \d+: " + re.escape(own), text)
        if doubled:
            errs.append("caption %r numbered twice: %r" % (own, doubled.group(0)))
    if "Figure 3: Plain caption words" not in text:
        m = re.search(r"\S*\s*\S*\s*Plain caption words", text)
        errs.append("the plain caption (third figure) should read 'Figure 3: Plain caption words'; got %r"
                    % (m.group(0) if m else None))
    assert not errs, "\n".join(errs) + "\n--- text:\n" + text


@pytest.mark.parametrize("font_size", [11, 24])
def test_review_list_markers_with_large_start(tmp_path, kiln_bin, font_size):
    """An ordered list starting at 99998: every marker lies right of the left margin and
    left of its item's text."""
    items = ["first item text", "second item text", "third item text"]
    spec = {"theme": {"font_size": font_size},
            "blocks": [{"type": "list", "ordered": True, "start": 99998, "items": items}]}
    pdf = review_render(tmp_path, spec, "list")
    _w, _h, ws = pdf_words(pdf)[0]
    lines = word_lines(ws)
    errs = []
    for k, item in enumerate(items):
        marker = "%d." % (99998 + k)
        first = item.split()[0]
        ln = [line for line in lines if any(w[4] == first for w in line)]
        if len(ln) != 1:
            errs.append("item %r: %d lines hold %r" % (item, len(ln), first))
            continue
        ln = ln[0]
        mk = [w for w in ln if w[4] == marker]
        if not mk:
            errs.append("item %r: no marker word %r on its line (%r)" % (item, marker, line_text(ln)))
            continue
        mk, tx = mk[0], [w for w in ln if w[4] == first][0]
        if mk[0] < DEFAULT_MARGIN - 0.5:
            errs.append("marker %r starts at x=%.2f, left of the margin (%.0f)" % (marker, mk[0], DEFAULT_MARGIN))
        if mk[2] > tx[0] + 0.1:
            errs.append("marker %r (x %.2f..%.2f) runs into its text %r (starting at x=%.2f)"
                        % (marker, mk[0], mk[2], first, tx[0]))
    assert not errs, "\n".join(errs)


def boxes_overlap(a, b, tol=0.25):
    return a[0] < b[2] - tol and b[0] < a[2] - tol and a[1] < b[3] - tol and b[1] < a[3] - tol


def test_review_furniture_with_zero_margins(tmp_path, kiln_bin):
    """Page margins 0 on all four sides with a header: the header and "Page N of M" stay
    on the paper and overlap no word of the body, on every page."""
    header = "Zero margin header"
    spec = {"page": {"size": "A5", "margins": {"top": 0, "bottom": 0, "left": 0, "right": 0},
                     "header": header},
            "blocks": [{"type": "heading", "level": 1, "text": "Body heading"},
                       {"type": "paragraph", "text": " ".join(numbered_words("z", 900))}]}
    pdf = review_render(tmp_path, spec, "zero")
    pages = pdf_words(pdf)
    total = len(pages)
    assert total >= 2, "test bug: expected at least two pages"
    errs = []
    for n, (w, h, ws) in enumerate(pages, 1):
        lines = word_lines(ws)
        hdr = [ln for ln in lines if line_text(ln) == header]
        ftr = [ln for ln in lines if line_text(ln) == "Page %d of %d" % (n, total)]
        if len(hdr) != 1 or len(ftr) != 1:
            errs.append("page %d: header lines %d, footer lines %d (lines: %s)"
                        % (n, len(hdr), len(ftr), [line_text(ln) for ln in lines[:2] + lines[-2:]]))
            continue
        furniture = hdr[0] + ftr[0]
        body = [x for x in ws if x not in furniture]
        for f in furniture:
            if not (-0.01 <= f[0] and f[2] <= w + 0.01 and -0.01 <= f[1] and f[3] <= h + 0.01):
                errs.append("page %d: %r at (%.2f, %.2f, %.2f, %.2f) is off the %.0f x %.0f page"
                            % (n, f[4], f[0], f[1], f[2], f[3], w, h))
            for b in body:
                if boxes_overlap(f, b):
                    errs.append("page %d: %r (%.2f, %.2f, %.2f, %.2f) overlaps the body word %r (%.2f, %.2f, %.2f, %.2f)"
                                % ((n, f[4]) + tuple(f[:4]) + (b[4],) + tuple(b[:4])))
    assert not errs, "\n".join(errs[:30])


def test_review_quote_bar_on_every_page(tmp_path, kiln_bin, review_lines):
    """A quote that runs from page 1 onto page 2 has its accent-coloured bar beside its
    text on both pages (found in a 50 dpi rendering of each page)."""
    from PIL import Image
    per_page, lines = review_lines
    quote_words = numbered_words("q", 160)
    spec = {"page": REVIEW_PAGE, "theme": {"accent_colors": ["#FF00FF"]},
            "blocks": [para_of(lines, 0, per_page // 2),
                       {"type": "quote", "text": " ".join(quote_words)}]}
    pdf = review_render(tmp_path, spec, "quote")
    pages = pdf_words(pdf)
    qset = set(quote_words)
    on = [[w for w in ws if w[4] in qset] for _w, _h, ws in pages]
    assert len(pages) >= 2 and on[0] and on[1], \
        "test bug: the quote does not run over pages 1 and 2 (%s quote words a page)" % [len(q) for q in on]
    tool = pdf_tool("pdftoppm")
    if not tool:
        pytest.fail("pdftoppm is not installed: apt-get install poppler-utils")
    proc = subprocess.run([tool, "-r", "50", "-f", "1", "-l", "2", "-png", str(pdf), str(tmp_path / "pg")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    pngs = sorted(tmp_path.glob("pg-*.png"))
    assert len(pngs) == 2, pngs
    errs = []
    for n, (png, qw) in enumerate(zip(pngs, on), 1):
        img = Image.open(png).convert("RGB")
        scale = img.width / pages[n - 1][0]
        x_from = int((DEFAULT_MARGIN - 3) * scale)
        x_to = int(min(w[0] for w in qw) * scale)           # left of the quote's text
        y_from = int(min(w[1] for w in qw) * scale)
        y_to = int(max(w[3] for w in qw) * scale)
        px = img.load()
        rows_with_bar = 0
        for y in range(y_from, y_to + 1):
            if any(px[x, y][0] > 170 and px[x, y][1] < 110 and px[x, y][2] > 170 for x in range(x_from, x_to)):
                rows_with_bar += 1
        span = y_to - y_from + 1
        if rows_with_bar < span * 0.8:
            errs.append("page %d: the accent bar shows beside only %d of the %d pixel rows of the quote's text "
                        "(x %d..%d px at 50 dpi)" % (n, rows_with_bar, span, x_from, x_to))
    assert not errs, "\n".join(errs)


def test_review_image_used_twice_stored_once(tmp_path, kiln_bin):
    """The same file named by two image blocks (a PNG and a JPEG) is one image object each."""
    image_file_png(tmp_path / "pic.png", 80, 50)
    shutil.copy(SAMPLES / "images" / "regional_trend.jpg", tmp_path / "photo.jpg")
    spec = {"blocks": [{"type": "image", "image": {"path": "pic.png"}},
                       {"type": "paragraph", "text": "between"},
                       {"type": "image", "image": {"path": "pic.png"}, "width": 40},
                       {"type": "image", "image": {"path": "photo.jpg"}, "width": 100},
                       {"type": "image", "image": {"path": "photo.jpg"}, "width": 60}]}
    pdf = review_render(tmp_path, spec, "twice")
    rows = [r for r in pdf_images(pdf) if r["type"] == "image"]
    assert len(rows) == 4, "expected 4 image placements, pdfimages lists:\n%s" % "\n".join(
        " ".join(r["fields"]) for r in rows)
    keys = rows[0]["keys"]
    assert "object" in keys, "pdfimages -list has no object column: %s" % keys
    k = keys.index("object")
    objs = [r["fields"][k] for r in rows]
    by_size = {}
    for r, o in zip(rows, objs):
        by_size.setdefault((r["width"], r["height"]), set()).add(o)
    assert len(set(objs)) == 2 and all(len(v) == 1 for v in by_size.values()), \
        "each file used twice should be stored once (2 objects); pdfimages -list:\n%s" % "\n".join(
            " ".join(r["fields"]) for r in rows)


def test_review_emoji_in_info_and_outline(tmp_path, kiln_bin):
    """Characters beyond the BMP (U+1F389) survive in the document information and the
    outline, which are text strings, not glyphs."""
    party = "\U0001F389"
    title, author, heading = "Launch %s party" % party, "Ana %s Lee" % party, "Celebrate %s now" % party
    spec = {"metadata": {"title": title, "author": author, "created": REVIEW_CREATED},
            "blocks": [{"type": "heading", "level": 1, "text": heading},
                       {"type": "paragraph", "text": "Body."}]}
    pdf = review_render(tmp_path, spec, "emoji")
    info = pdf_info(pdf)
    errs = []
    if info.get("Title") != title:
        errs.append("pdfinfo Title: expected %r, got %r" % (title, info.get("Title")))
    if info.get("Author") != author:
        errs.append("pdfinfo Author: expected %r, got %r" % (author, info.get("Author")))
    got = [t for _d, t, _p in outline_flat(pypdf.PdfReader(str(pdf)))]
    if got != [heading]:
        errs.append("outline: expected [%r], got %r" % (heading, got))
    assert not errs, "\n".join(errs)


def test_review_margins_leaving_no_text_width(tmp_path, kiln_bin):
    """Left and right margins that together take the whole A5 width: exit 3 naming
    /page/margins, nothing written."""
    spec = {"page": {"size": "A5", "margins": {"left": 288, "right": 288}},
            "blocks": [{"type": "paragraph", "text": "x"}]}
    expect_pdf_failure(tmp_path, spec, 3, r"/page/margins(/\w+)?")


@pytest.mark.parametrize("case", ["width4", "past_measured_rows"])
def test_review_numbers_never_split(tmp_path, kiln_bin, case):
    """Numbers wider than their column (a given narrow width, or values that grow past the
    rows the widths were measured on) are each one word, never broken over lines."""
    if case == "width4":
        col = {"header": "n", "type": "integer", "width": 4}
        values = [1, 22, 333, 4444, 55555, 123456, 1234567, 12345678, 123456789]
    else:
        col = {"header": "n", "type": "integer"}
        values = [i % 10 for i in range(2100)] + [123456789, 987654321, 1234567890123]
    spec = {"blocks": [{"type": "table",
                        "columns": [{"header": "label"}, col],
                        "rows": [["r%d" % i, v] for i, v in enumerate(values)]}]}
    pdf = review_render(tmp_path, spec, "nums")
    words = [w[4] for _w, _h, ws in pdf_words(pdf) for w in ws]
    present = set(words)
    errs = []
    for v in sorted(set(values)):
        shown = shown_cell(v, col).text
        if shown not in present:
            bits = [w for w in words if w and w in shown and len(w) < len(shown) and any(c.isdigit() for c in w)]
            errs.append("%r (shown %r) is not one word; pieces found: %s" % (v, shown, sorted(set(bits))[:8]))
    assert not errs, ("numbers split over lines (%s: a column %s; the writer sets a number too wide for its "
                      "column smaller, but only down to a floor, then wraps it):\n" % (
                          case, "of explicit width 4" if case == "width4" else
                          "measured on the first rows (single digits), larger values after them")
                      + "\n".join(errs))


def test_nested_lists_number_for_themselves(tmp_path, kiln_bin):
    """Bullets and numbers mix across levels (each nested list says "ordered" and "start"
    for itself): every item's line starts with its own marker, indented by its level."""
    from test_render_docx import MIXED_LISTS_SPEC, MIXED_LIST_ITEMS, list_marker
    pdf = review_render(tmp_path, MIXED_LISTS_SPEC, "lists")
    _w, _h, ws = pdf_words(pdf)[0]
    lines = [ln for ln in word_lines(ws) if not line_text(ln).startswith("Page ")]
    got = [line_text(ln) for ln in lines]
    want = ["%s %s" % (list_marker(level, number), text) for text, level, number in MIXED_LIST_ITEMS]
    assert got == want
    # the text of each item starts further right the deeper its level
    starts = {}
    for ln, (_t, level, _n) in zip(lines, MIXED_LIST_ITEMS):
        starts.setdefault(level, set()).add(round(ln[1][0], 1))
    assert max(starts[0]) < min(starts[1]) and max(starts[1]) < min(starts[2]), starts


def red_columns(png, xs, y0, y1):
    """For each x (pixels), whether any pixel of the column between y0 and y1 is red."""
    from PIL import Image
    img = Image.open(png).convert("RGB")
    px = img.load()
    return [any(px[x, y][0] > 200 and px[x, y][1] < 80 and px[x, y][2] < 80 for y in range(y0, y1))
            for x in xs]


@pytest.mark.parametrize("kind", ["line", "area"])
def test_null_value_is_a_gap(tmp_path, kiln_bin, kind):
    """A null among a series' values is a missing point: the line (or area) stops before
    it and starts again after it, rather than dropping to zero."""
    spec = {"blocks": [{"type": "chart", "kind": kind, "legend": "none", "width": 600, "height": 300,
                        "categories": ["c0", "c1", "c2", "c3"],
                        "series": [{"name": "s", "values": [3, None, 3, 3], "color": "#FF0000"}]}]}
    pdf = review_render(tmp_path, spec, kind)
    pw, _ph, ws = pdf_words(pdf)[0]
    at = {w[4]: ((w[0] + w[2]) / 2, w[1]) for w in ws if w[4] in ("c0", "c1", "c2", "c3")}
    assert len(at) == 4, "category labels drawn: %r" % sorted(at)
    proc = subprocess.run([shutil.which("pdftoppm"), "-r", "100", "-f", "1", "-l", "1", "-png", str(pdf),
                           str(tmp_path / "pg")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    png = next(tmp_path.glob("pg-*.png"))
    scale = 100 / 72
    mid = lambda a, b: int((at[a][0] + at[b][0]) / 2 * scale)
    top, bottom = int(DEFAULT_MARGIN * scale), int(at["c0"][1] * scale) - 2
    got = red_columns(png, [mid("c0", "c1"), mid("c1", "c2"), mid("c2", "c3")], top, bottom)
    assert got == [False, False, True], (
        "red drawn between the categories (c0-c1, c1-c2, c2-c3): %r; the missing c1 should leave a gap" % got)


def test_date_categories_in_date_order(tmp_path, kiln_bin):
    """Date categories (ISO dates in chart blocks, date cells under a sheet chart's range)
    are drawn in date order, as a date axis places them, labelled in the dates' format,
    each point keeping its value; other categories keep the order given."""
    from PIL import Image
    from test_render_docx import DATES_OUT_OF_ORDER, date_chart_specs, date_label_errors
    specs, want = date_chart_specs()
    errs = []
    for name, spec in specs.items():
        pdf = render_ok(write_spec(tmp_path, spec, name + ".json"), tmp_path / (name + ".pdf"))
        text = pdf_text(pdf, layout=True)
        errs += ["%s: %s" % (name, e) for e in date_label_errors(text, "sheets" in name, want, kiln_pdf=True)]
    assert not errs, "\n".join(errs)

    # the values go with their dates: bars of 3, 1, 2, 5 for March, January, February, May;
    # with a category that is not a date, the order given stays
    mixed = ["2026-03-01", "2026-01-01", "later"]
    spec = {"blocks": [{"type": "chart", "kind": "column", "legend": "none", "width": 600, "height": 300,
                        "categories": DATES_OUT_OF_ORDER,
                        "series": [{"name": "s", "values": [3, 1, 2, 5], "color": "#FF0000"}]},
                       {"type": "page_break"},
                       {"type": "chart", "kind": "line", "categories": mixed,
                        "series": [{"name": "s", "values": [1, 2, 3]}]}]}
    pdf = review_render(tmp_path, spec, "dated")
    pages = pdf_words(pdf)
    _pw, _ph, ws = pages[0]
    labels = sorted((w for w in ws if re.fullmatch(r"2026-\d\d-\d\d", w[4])), key=lambda w: w[0])
    assert [w[4] for w in labels] == sorted(DATES_OUT_OF_ORDER), [w[4] for w in labels]
    got = [w[4] for w in sorted((w for w in pages[1][2] if w[4] in mixed), key=lambda w: w[0])]
    assert got == mixed, "a text axis keeps the order given: %r" % got
    proc = subprocess.run([pdf_tool("pdftoppm"), "-r", "100", "-f", "1", "-l", "1", "-png", str(pdf),
                           str(tmp_path / "pg")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    img = Image.open(next(tmp_path.glob("pg-*.png"))).convert("RGB")
    px = img.load()
    scale = 100 / 72
    heights = []
    for w in labels:
        x = int((w[0] + w[2]) / 2 * scale)
        reds = [y for y in range(img.height) if px[x, y][0] > 200 and px[x, y][1] < 80 and px[x, y][2] < 80]
        heights.append(len(reds))
    by_date = dict(zip(DATES_OUT_OF_ORDER, [3, 1, 2, 5]))
    want_order = [by_date[d] for d in sorted(DATES_OUT_OF_ORDER)]
    assert all(h > 0 for h in heights) and heights == sorted(heights), \
        "bar heights (px) over the dates in order: %r, want them growing as %r" % (heights, want_order)
    unit = heights[0] / want_order[0]
    assert all(abs(h - v * unit) <= 3 for h, v in zip(heights, want_order)), (heights, want_order)


def test_line_breaks_are_one_rule(tmp_path, kiln_bin):
    """LF, CR and CR LF are each one line break (docs/spec.md "Line breaks"): the text
    after one starts a new line in every block; chart text and the page header are one
    line, the break a space."""
    from test_render_docx import breaks_spec, same_for_every_break
    pdf = render_ok(write_spec(tmp_path, breaks_spec()), tmp_path / "breaks.pdf")
    lines = [ln.strip() for ln in pdf_text(pdf).splitlines() if ln.strip()]
    errs, common = same_for_every_break(lines)
    for what in ("Head", "Para", "Run", "Quote", "Code", "Header", "Cell"):
        k = common.index("%s-* one" % what) if "%s-* one" % what in common else -1
        if k < 0 or not common[k + 1].startswith("two-*"):
            errs.append("%s: 'two' should start the line after '%s-* one': %r" % (what, what, common))
    for first in ("\u2022 Item-* one", "\u25e6 Nested-* one", "\u2014 Attr-* one", "Table N: Caption-* one"):
        if first not in common or common[common.index(first) + 1] != "two-*":
            errs.append("%r should be followed by a line 'two-*': %r" % (first, common))
    for what in ("Chart", "Name", "Cat", "Axis"):
        if "%s-* one two-*" % what not in common:
            errs.append("chart text %r should be one line: %r" % (what, common))
    if "Head line" not in lines:
        errs.append("the page header should read 'Head line' on one line")
    assert not errs, "\n".join(errs)


# =========================================================================== the page limit, early

@pytest.mark.parametrize("kind", ["paragraphs", "code", "line_breaks"])
def test_page_limit_met_before_layout(tmp_path, kind):
    """A PDF that certainly needs more than 20,000 pages is refused before any page is laid
    out (issue 15 item 1): its text at the least height it can take is counted first, so
    the error comes at once, names the block where the count passes the limit, and says
    how many pages it needs at least; nothing is written. (A table's rows count at the
    least a row can be, 7.2 pt: a million rows of ordinary text pass the limit only as
    they are laid out, docs/spec.md "Limits".)"""
    if kind == "paragraphs":
        # 24 pt text: at most about 22 lines a page, 500,000 lines
        spec = {"blocks": [{"type": "paragraph", "runs": [{"text": "p%d" % i, "size": 24}]}
                           for i in range(500000)]}
    elif kind == "code":
        spec = {"blocks": [{"type": "paragraph", "text": "before"},
                           {"type": "code", "text": "\n".join("line %d" % i for i in range(1300000))}]}
    elif kind == "line_breaks":
        # each paragraph, list item and heading 700 lines by its breaks (LF, U+2028): the
        # estimate counted one line a paragraph, and laid out 200 MB of pages first
        lines = ["x\n" * 699 + "y", "x\u2028" * 699 + "y"]
        spec = {"blocks": [{"type": "paragraph", "text": lines[i % 2]} if i % 3 else
                           {"type": "list", "items": [lines[0], lines[1]]} if i % 2 else
                           {"type": "heading", "level": 3, "text": lines[0]}
                           for i in range(1600)]}
    out = tmp_path / "big.pdf"
    proc = run_kiln("render", write_spec(tmp_path, spec), "-o", out, "--json", timeout=300)
    assert proc.returncode == 3, describe(proc)
    e = json.loads(proc.stdout)["errors"][0]
    assert e["code"] == "limit_exceeded" and e["limit"] == 20000 and e["actual"] > 20000, e
    assert "at least" in e["message"], "refused during layout, not before it: %s" % e
    assert e["pointer"].startswith("/blocks/"), e
    if kind == "code":
        assert e["pointer"] == "/blocks/1", e
    assert not out.exists()


def test_date_axis_labels_in_one_format(tmp_path, kiln_bin):
    """A date axis has one format, the first category cell's (as in the xlsx, docx and pptx
    charts): every label is its date shown in it, whatever format each cell has."""
    spec = {"sheets": [{"name": "S", "columns": [{"header": "When", "type": "date", "number_format": "dd/mm/yy"},
                                                  {"header": "V"}],
                        "rows": [["2026-04-01", 1],
                                 [{"date": "2026-05-01", "number_format": "yyyy-mm-dd"}, 2],
                                 [{"date": "2026-06-01", "number_format": "mmm yy"}, 3]],
                        "charts": [{"kind": "line", "categories": "A2:A4",
                                    "series": [{"name": "V", "values": "B2:B4"}]}]}]}
    pdf = render_ok(write_spec(tmp_path, spec), tmp_path / "dates.pdf")
    # the table shows each cell in its own format (2026-05-01, Jun 26); only the chart's
    # labels show May and June as 01/05/26 and 01/06/26
    words = [w[4] for _pw, _ph, ws in pdf_words(pdf) for w in ws]
    for label in ("01/04/26", "01/05/26", "01/06/26"):
        assert label in words, "no chart label %s: %r" % (label, words)


def test_untyped_column_with_number_format_is_right_aligned(tmp_path, kiln_bin):
    """A column with a number format and no type says "numbers here": every cell of it is
    right-aligned, a text cell too, as the docx and pptx writers align it (the three share
    one table layout, artifacts/layout/table_layout.c)."""
    sp = write_spec(tmp_path, {"blocks": [{"type": "table", "columns": [
        {"header": "Label"}, {"header": "Amount", "number_format": "#,##0.00"}],
        "rows": [["first", 1234.5], ["second", "pending"], ["third", 7]]}]})
    out = tmp_path / "fmt.pdf"
    p = run_kiln("render", sp, "-o", out)
    assert p.returncode == 0, describe(p)
    words = {t: (x0, x1) for x0, _y0, x1, _y1, t in pdf_words(out)[0][2]}
    for w in ("1,234.50", "pending", "7.00"):
        assert w in words, "%r not drawn: %s" % (w, sorted(words))
    right = words["1,234.50"][1]
    assert abs(words["pending"][1] - right) < 1.0, "text cell not right-aligned: %s" % words
    assert abs(words["7.00"][1] - right) < 1.0, "number not right-aligned: %s" % words
    assert words["pending"][0] > words["1,234.50"][0] + 2, "text cell left-aligned: %s" % words


def test_merge_over_a_hidden_first_column_shows_its_value_in_that_columns_format(tmp_path, kiln_bin):
    """A merged range whose top-left column is hidden (width 0) shows the top-left cell's
    value in the top-left column's number format, as the docx and pptx do, not in the
    format of the first column shown."""
    sp = write_spec(tmp_path, {"sheets": [{"name": "S", "columns": [
        {"header": "A", "width": 0, "type": "currency"}, {"header": "B", "type": "percent"},
        {"header": "C"}], "rows": [[0.5, None, "x"], [0.25, 0.1, "y"]],
        "merges": [{"range": "A2:B2"}]}]})
    out = tmp_path / "hidden_merge.pdf"
    p = run_kiln("render", sp, "-o", out)
    assert p.returncode == 0, describe(p)
    words = [t for *_b, t in pdf_words(out)[0][2]]
    assert "$0.50" in words, words
    assert "50.0%" not in words, words
    assert "10.0%" in words, words
