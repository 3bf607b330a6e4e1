"""Render specs to .docx and read them back with independent tools (issue 3, item 6).

Every document is checked four ways: ooxml-check (package + schemas, exactly as
written: no --strip-mce), python-docx (Debian python3-docx; the document's headings,
paragraphs, runs, lists, tables, images, charts, sections, properties, header and
footer are compared with the SPEC), openpyxl (each chart's embedded workbook holds the
chart's data) and LibreOffice (converts it to PDF; pdftotext of the PDF shows the
headings, the table cells and the TOC entries).

Expectations come from the spec JSON (expected_flow / check_document), never from
figures written into the test, so any spec is covered: every samples/*.json (a spec
with only sheets or only slides renders through the documented mapping), the long
report samples/make_long_report.py generates, and the feature specs below. Targeted
tests cover the mapping, page setup, escaping, tabs and line breaks, every chart kind
and the documented failures (which must leave no file behind).

LibreOffice is slow (seconds per file), so every document is converted once per
module, in one call (all_pdfs).
"""
import base64
import csv
import datetime as dt
import io
import json
import math
import posixpath
import re
import shutil
import struct
import subprocess
import zipfile
import zlib
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from conftest import (SAMPLES, assert_ooxml_ok, describe, err_text, listing, load_json, pdf_pages, pdf_text,
                      render_ok, run_kiln, sample_specs, soffice_convert, write_spec)

try:
    import docx
    from docx.enum.section import WD_ORIENT
    from docx.enum.shape import WD_INLINE_SHAPE
    from docx.text.paragraph import Paragraph
    from docx.text.run import Run
except ImportError:  # pragma: no cover - a clear failure, not a skip
    raise RuntimeError("python-docx is required: apt-get install python3-docx")
try:
    import openpyxl
except ImportError:  # pragma: no cover
    raise RuntimeError("openpyxl is required: apt-get install python3-openpyxl")
from lxml import etree

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
WP = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
PIC = "http://schemas.openxmlformats.org/drawingml/2006/picture"
C = "http://schemas.openxmlformats.org/drawingml/2006/chart"
PR = "http://schemas.openxmlformats.org/package/2006/relationships"
NS = {"w": W, "r": R, "wp": WP, "a": A, "pic": PIC, "c": C, "pr": PR}
REL_HYPERLINK = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink"
REL_PACKAGE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/package"


def w(tag):
    return "{%s}%s" % (W, tag)


LONG_REPORT = SAMPLES / "data" / "long_report.json"
BIG_SAMPLES = {"export_200k"}          # a 200,000-row table: checked streaming, not in LibreOffice
EMU_PER_PT = 12700
TWIPS_PER_PT = 20
PAGE_SIZES_PT = {"A4": (595.2756, 841.8898), "Letter": (612.0, 792.0), "Legal": (612.0, 1008.0),
                 "A3": (841.8898, 1190.5512), "A5": (419.5276, 595.2756)}
DEFAULT_FORMATS = {"integer": "#,##0", "number": "#,##0.00", "currency": "$#,##0.00",
                   "percent": "0.0%", "date": "yyyy-mm-dd", "datetime": "yyyy-mm-dd hh:mm"}
NUMERIC_TYPES = ("number", "integer", "currency", "percent")
ISO_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
                    r"(Z|z|[+-]\d{2}(?::?\d{2})?)?$")
DEFAULT_THEME = {"font": "Calibri", "mono_font": "Consolas", "font_size": 11,
                 "header_fill": "1F4E79", "header_font_color": "FFFFFF"}
CHART_ELEMENT = {"column": "barChart", "bar": "barChart", "line": "lineChart", "pie": "pieChart",
                 "doughnut": "doughnutChart", "scatter": "scatterChart", "area": "areaChart"}
LEGEND_POS = {"right": "r", "left": "l", "top": "t", "bottom": "b"}


# =========================================================================== values as shown

def iso_to_datetime(s):
    m = ISO_RE.match(s.strip())
    assert m, "test bug: not an ISO date: %r" % s
    y, mo, d, h, mi, sec, frac, _zone = m.groups()
    value = dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(sec or 0))
    if frac:   # Excel keeps milliseconds
        value += dt.timedelta(milliseconds=round(float("0." + frac) * 1000))
    return value, h is not None


def split_sections(fmt):
    """Split a number format at the ';' that are not quoted or escaped."""
    out, cur, i, q = [], "", 0, False
    while i < len(fmt):
        ch = fmt[i]
        if ch == '"':
            q = not q
        elif ch == "\\" and not q and i + 1 < len(fmt):
            cur += fmt[i:i + 2]
            i += 2
            continue
        elif ch == ";" and not q:
            out.append(cur)
            cur = ""
            i += 1
            continue
        cur += ch
        i += 1
    out.append(cur)
    return out


def literal_and_codes(section):
    """[(kind, text)]: ('lit', '...') pieces and ('code', '...') pieces; [..] tags dropped
    except a [$X-NNN] currency symbol."""
    out, i = [], 0
    while i < len(section):
        ch = section[i]
        if ch == '"':
            j = section.index('"', i + 1)
            out.append(("lit", section[i + 1:j]))
            i = j + 1
        elif ch == "\\" and i + 1 < len(section):
            out.append(("lit", section[i + 1]))
            i += 2
        elif ch == "[":
            j = section.index("]", i)
            tag = section[i + 1:j]
            if tag.startswith("$"):
                out.append(("lit", tag[1:].split("-")[0]))
            i = j + 1
        elif ch in "_*":   # padding: _x is a space the width of x, *x repeats x
            out.append(("lit", " " if ch == "_" else ""))
            i += 2
        else:
            out.append(("code", ch))
            i += 1
    return out


def is_date_format(fmt):
    codes = "".join(t for k, t in literal_and_codes(split_sections(fmt)[0]) if k == "code")
    return bool(re.search(r"[ymdhs]", codes, re.I)) and not re.search(r"[0#?]", codes)


def round_half_up(value, decimals):
    q = Decimal(1).scaleb(-decimals)
    return Decimal(repr(float(value))).quantize(q, rounding=ROUND_HALF_UP)


def format_numeric_section(value, section):
    """(text, negative) of value under one numeric section; None when unsupported."""
    pieces = literal_and_codes(section)
    codes = "".join(t for k, t in pieces if k == "code")
    if re.search(r"[Ee][+-]|\?|/|@", codes):
        return None
    percent = codes.count("%")
    v = float(value) * (100 ** percent)
    # the number part: the first run of placeholders, commas and a point
    m = re.search(r"[0#][0#,]*(\.[0#]*)?|\.[0#]+", codes)
    if not m:   # a section of literals only ("not started")
        return "".join(t for _k, t in pieces), False
    num = m.group(0)
    while num.endswith(","):   # trailing commas scale by 1000
        v /= 1000
        num = num[:-1]
    decimals = len(num.split(".")[1]) if "." in num else 0
    int_min = len(num.split(".")[0].replace(",", "").replace("#", ""))
    q = round_half_up(abs(v), decimals)
    if q == 0 and v < 0:
        return None            # -0.0%: left open
    int_part, _, frac = ("%.*f" % (decimals, q)).partition(".")
    int_part = int_part.lstrip("0").rjust(int_min, "0")
    if "," in num and int_part:
        int_part = "{:,}".format(int(int_part))
    text = int_part + ("." + frac if decimals else "")
    out, placed, code_pos = [], False, 0
    for kind, t in pieces:
        if kind == "lit":
            out.append(t)
            continue
        if m.start() <= code_pos < m.end():
            if not placed:
                out.append(text)
                placed = True
        else:
            out.append(t)
        code_pos += 1
    return "".join(out), v < 0


def format_date(value, fmt):
    """A datetime under a date/time format (the subset the spec's columns and samples use)."""
    section = split_sections(fmt)[0]
    pieces = literal_and_codes(section)
    codes = []
    for kind, t in pieces:
        if kind == "lit":
            codes.append(("lit", t))
        elif codes and codes[-1][0] == "code" and codes[-1][1][0].lower() == t.lower():
            codes[-1] = ("code", codes[-1][1] + t)
        else:
            codes.append(("code", t))
    ampm = any(k == "code" and t.upper() == "A" for k, t in codes) or "AM/PM" in section.upper()
    out = []
    prev_hour = False
    i = 0
    while i < len(codes):
        kind, t = codes[i]
        if kind == "lit":
            out.append(t)
            i += 1
            continue
        low = t.lower()
        nxt = next((c[1].lower() for c in codes[i + 1:] if c[0] == "code" and c[1].strip()), "")
        if low[0] == "y":
            out.append("%04d" % value.year if len(low) > 2 else "%02d" % (value.year % 100))
        elif low[0] == "m" and (prev_hour or nxt.startswith("s")) and len(low) <= 2:
            out.append("%02d" % value.minute if len(low) == 2 else str(value.minute))
        elif low[0] == "m":
            if len(low) == 1:
                out.append(str(value.month))
            elif len(low) == 2:
                out.append("%02d" % value.month)
            elif len(low) == 3:
                out.append(value.strftime("%b"))
            else:
                out.append(value.strftime("%B"))
        elif low[0] == "d":
            if len(low) == 1:
                out.append(str(value.day))
            elif len(low) == 2:
                out.append("%02d" % value.day)
            elif len(low) == 3:
                out.append(value.strftime("%a"))
            else:
                out.append(value.strftime("%A"))
        elif low[0] == "h":
            h = value.hour
            if ampm:
                h = h % 12 or 12
            out.append("%02d" % h if len(low) == 2 else str(h))
        elif low[0] == "s":
            out.append("%02d" % value.second if len(low) == 2 else str(value.second))
        elif t.upper().startswith("A"):
            # AM/PM spelled as codes A, M, /, P, M
            out.append("AM" if value.hour < 12 else "PM")
            j = i + 1
            while j < len(codes) and codes[j][0] == "code" and codes[j][1].upper()[0] in "M/P":
                j += 1
            i = j
            prev_hour = False
            continue
        else:
            out.append(t)
        if t.isalpha():
            prev_hour = low[0] == "h"
        i += 1
    return "".join(out)


def format_general(value):
    """Excel's General for a number; None when the spec leaves the exact digits open."""
    v = float(value)
    if v == int(v) and abs(v) < 1e11:
        return str(int(v))
    digits = repr(v).lstrip("-").replace(".", "").lstrip("0")
    if "e" in repr(v) or len(digits) > 11 or not 1e-5 <= abs(v) < 1e11:
        return None
    return repr(v)


def format_number(value, fmt):
    """The text Excel shows for a number under fmt; None when this reading does not pin it down."""
    if fmt is None or fmt.lower() == "general":
        return format_general(value)
    sections = split_sections(fmt)
    if is_date_format(fmt):
        return None
    v = float(value)
    if len(sections) == 1:
        r = format_numeric_section(v, sections[0])
        if r is None:
            return None
        text, negative = r
        return ("-" + text) if negative else text
    if v > 0 or (v == 0 and len(sections) < 3):
        sec = sections[0]
    elif v < 0:
        sec = sections[1]
    else:
        sec = sections[2]
    if sec.lower() == "general":
        return format_general(abs(v) if v < 0 else v)
    r = format_numeric_section(abs(v), sec)
    return None if r is None else r[0]


class Shown:
    """The expected text of a table cell: exact, or loose (any text; or a number near value)."""

    def __init__(self, text=None, loose=False, number=None):
        self.text, self.loose, self.number = text, loose, number

    def matches(self, got):
        if self.text is not None:
            return got == self.text
        if self.number is not None:
            try:
                return math.isclose(float(re.sub(r"[^0-9eE.+-]", "", got)), self.number, rel_tol=1e-5)
            except ValueError:
                return False
        return True

    def __repr__(self):
        if self.text is not None:
            return repr(self.text)
        return "<a number near %r>" % self.number if self.number is not None else "<any>"


def shown_number(value, fmt):
    text = format_number(value, fmt)
    if text is not None:
        return Shown(text)
    if fmt is None or fmt.lower() == "general":
        return Shown(number=float(value))
    return Shown(loose=True)


def shown_date(iso, fmt, coltype=None):
    value, has_time = iso_to_datetime(iso)
    if fmt is None:
        fmt = DEFAULT_FORMATS["datetime" if (coltype == "datetime" or (coltype is None and has_time))
                              else "date"]
    if not is_date_format(fmt):
        return Shown(loose=True)
    return Shown(format_date(value, fmt))


def column_format(col):
    if not col:
        return None
    return col.get("number_format") or DEFAULT_FORMATS.get(col.get("type"))


def shown_scalar(v, col, own_format=None):
    coltype = (col or {}).get("type")
    fmt = own_format or column_format(col)
    if v is None:
        return Shown("")
    if isinstance(v, bool):
        return Shown("TRUE" if v else "FALSE")
    if isinstance(v, (int, float)):
        return shown_number(v, fmt)
    if isinstance(v, str) and coltype in ("date", "datetime"):
        return shown_date(v, own_format or (col or {}).get("number_format"), coltype)
    return Shown(v)


def shown_cell(v, col):
    """What a table cell holding JSON cell v shows (numfmt.h kiln_cell_display)."""
    if not isinstance(v, dict):
        return shown_scalar(v, col)
    own = v.get("number_format")
    coltype = (col or {}).get("type")
    if "formula" in v:
        cached = v.get("value")
        if cached is None:
            return Shown("")
        if isinstance(cached, bool):
            return Shown("TRUE" if cached else "FALSE")
        if isinstance(cached, (int, float)):
            return shown_number(cached, own or column_format(col))
        return Shown(cached)
    if "date" in v or "datetime" in v:
        iso = v.get("date") or v.get("datetime")
        fmt = own or (column_format(col) if coltype in ("date", "datetime") else None)
        if fmt is None and col and col.get("number_format"):
            fmt = col["number_format"]
        return shown_date(iso, fmt, "datetime" if "datetime" in v else "date")
    if "url" in v:
        return Shown(v.get("text", v["url"]))
    return shown_scalar(v.get("value"), col, own)


PLAIN_DECIMAL = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?$")


def shown_field(field, col):
    """A CSV field under its column's type (docs/spec.md, Column typing)."""
    if field == "":
        return Shown("")
    t = (col or {}).get("type") or "auto"
    if t == "string":
        return Shown(field)
    if t in NUMERIC_TYPES:
        return shown_number(float(field), column_format(col))
    if t in ("date", "datetime"):
        return shown_date(field, (col or {}).get("number_format"), t)
    if t == "boolean":
        return Shown("TRUE" if field.strip().lower() in ("true", "1") else "FALSE")
    if csv_plain_number(field):
        return shown_number(float(field), column_format(col))
    return Shown(field)


def csv_plain_number(field):
    """An untyped CSV field that becomes a number (docs/spec.md, Column typing)."""
    return bool(PLAIN_DECIMAL.match(field) and not re.match(r"^-?0[0-9]", field)
                and sum(ch.isdigit() for ch in field) <= 15)


# =========================================================================== the spec's flow

def text_of(obj):
    """The text of a heading, paragraph, quote or list item: text, or its runs joined."""
    if isinstance(obj, str):
        return obj
    if "text" in obj:
        return obj["text"]
    return "".join(r["text"] for r in obj.get("runs", []))


def strip_inline_md(s):
    s = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"`([^`]*)`", r"\1", s)
    for mark in ("\\*\\*", "__", "~~", "\\*", "_"):
        s = re.sub(r"%s(?=\S)(.+?)(?<=\S)%s" % (mark, mark), r"\1", s)
    s = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", s)
    return s


MD_INLINE = re.compile(r"\*\*(?P<b>.+?)\*\*|__(?P<b2>.+?)__|~~(?P<s>.+?)~~|`(?P<c>[^`]+)`"
                       r"|\[(?P<lt>[^\]]+)\]\((?P<lu>[^)\s]+)\)|\*(?P<i>[^*]+?)\*|(?<![A-Za-z0-9])_(?P<i2>[^_]+?)_(?![A-Za-z0-9])")


def md_inline_runs(s):
    """The runs of a line of markdown with simple (unnested) emphasis, strikethrough, code
    and links; None when the text has markup this reading does not follow."""
    runs, pos = [], 0
    for m in MD_INLINE.finditer(s):
        if m.start() > pos:
            runs.append({"text": s[pos:m.start()]})
        g = m.groupdict()
        if g["b"] or g["b2"]:
            runs.append({"text": g["b"] or g["b2"], "bold": True})
        elif g["s"]:
            runs.append({"text": g["s"], "strike": True})
        elif g["c"]:
            runs.append({"text": g["c"], "code": True})
        elif g["lt"]:
            runs.append({"text": g["lt"], "link": g["lu"]})
        else:
            runs.append({"text": g["i"] or g["i2"], "italic": True})
        pos = m.end()
    if pos < len(s):
        runs.append({"text": s[pos:]})
    if any(re.search(r"[*_`~\[\]\\]", r["text"]) for r in runs):
        return None
    return runs or None


MD_SEP = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
MD_ITEM = re.compile(r"^( *)([-*+]|(\d{1,9})[.)])\s+(.*)$")
MD_RULE = re.compile(r"^ {0,3}([-*_])( *\1){2,} *$")


def md_cells(line):
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [c.strip() for c in line.split("|")]


def md_align(sep):
    """The alignment a GFM delimiter cell asks for (":--" left, ":-:" center, "--:" right)."""
    sep = sep.strip()
    if sep.startswith(":") and sep.endswith(":"):
        return "center"
    if sep.endswith(":"):
        return "right"
    if sep.startswith(":"):
        return "left"
    return None


def markdown_flow(text, pointer):
    """The blocks a markdown block becomes: a reading of the CommonMark subset the samples use
    (ATX headings, paragraphs, bullet and ordered lists with nesting, GFM tables, fenced code,
    block quotes, thematic breaks). Texts have their inline markup removed; items are marked
    md so that only their text is compared."""
    lines = text.split("\n")
    out, i, para = [], 0, []

    def flush():
        if para:
            raw = " ".join(l.strip() for l in para)
            out.append({"kind": "paragraph", "text": strip_inline_md(raw), "md": True,
                        "md_runs": md_inline_runs(raw), "pointer": pointer})
            para.clear()

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
            i += 1
            continue
        m = re.match(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            flush()
            out.append({"kind": "heading", "level": len(m.group(1)),
                        "text": strip_inline_md(m.group(2)), "md": True, "pointer": pointer})
            i += 1
            continue
        m = re.match(r"^ {0,3}(```|~~~)(.*)$", line)
        if m:
            flush()
            fence, body = m.group(1), []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i])
                i += 1
            i += 1
            out.append({"kind": "code", "text": "\n".join(body), "md": True, "pointer": pointer})
            continue
        if MD_RULE.match(line):
            flush()
            out.append({"kind": "rule", "md": True, "pointer": pointer})
            i += 1
            continue
        if "|" in line and i + 1 < len(lines) and MD_SEP.match(lines[i + 1]):
            flush()
            hdr = md_cells(line)
            aligns = [md_align(c) for c in md_cells(lines[i + 1])]
            rows = []
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                rows.append([strip_inline_md(c) for c in md_cells(lines[i])])
                i += 1
            cols = [{"header": strip_inline_md(h), "type": "string"} for h in hdr]
            for c, a in zip(cols, aligns):
                if a:
                    c["align"] = a
            out.append({"kind": "table", "t": {"columns": cols, "rows": rows}, "md": True,
                        "pointer": pointer})
            continue
        if line.lstrip().startswith(">"):
            flush()
            body = []
            while i < len(lines) and lines[i].lstrip().startswith(">"):
                body.append(re.sub(r"^\s*>\s?", "", lines[i]))
                i += 1
            out.append({"kind": "quote", "text": strip_inline_md(" ".join(b.strip() for b in body)),
                        "attribution": None, "md": True, "pointer": pointer})
            continue
        m = MD_ITEM.match(line)
        if m and not para:
            flush()
            ordered = m.group(3) is not None
            start = int(m.group(3)) if ordered else 1
            flat = []   # (indent, text)
            while i < len(lines):
                mm = MD_ITEM.match(lines[i])
                if mm:
                    flat.append([len(mm.group(1)), mm.group(4)])
                    i += 1
                elif lines[i].strip() and flat and lines[i].startswith(" "):
                    flat[-1][1] += " " + lines[i].strip()
                    i += 1
                else:
                    break
            indents = sorted({f[0] for f in flat})
            items = [(indents.index(ind), strip_inline_md(t), md_inline_runs(t)) for ind, t in flat]
            out.append({"kind": "list", "ordered": ordered, "start": start,
                        "flat": items, "md": True, "pointer": pointer})
            continue
        para.append(line)
        i += 1
    flush()
    return out


def flat_items(items, depth=0):
    """A list's items depth first: [(depth, text, runs or None)]."""
    out = []
    for it in items:
        if isinstance(it, str):
            out.append((depth, it, None))
        else:
            out.append((depth, text_of(it), it.get("runs")))
            if it.get("items"):
                out += flat_items(it["items"], depth + 1)
    return out


def list_item(items, ordered=False, start=1, pointer=None):
    return {"kind": "list", "ordered": ordered, "start": start, "flat": flat_items(items),
            "pointer": pointer}


def block_flow(b, pointer):
    t = b["type"]
    if t == "markdown":
        return markdown_flow(b["text"], pointer)
    if t == "heading":
        return [{"kind": "heading", "level": b.get("level", 1), "text": text_of(b),
                 "runs": b.get("runs"), "pointer": pointer}]
    if t == "paragraph":
        return [{"kind": "paragraph", "text": text_of(b), "runs": b.get("runs"),
                 "align": b.get("align"), "pointer": pointer}]
    if t == "list":
        return [list_item(b["items"], b.get("ordered", False), b.get("start", 1), pointer)]
    if t == "table":
        return [{"kind": "table", "t": b, "caption": b.get("caption"), "pointer": pointer}]
    if t == "image":
        return [{"kind": "image", "image": b["image"], "width": b.get("width"),
                 "caption": b.get("caption"), "pointer": pointer}]
    if t == "chart":
        return [{"kind": "chart", "chart": b, "caption": b.get("caption"), "pointer": pointer}]
    if t == "page_break":
        return [{"kind": "page_break", "pointer": pointer}]
    if t == "toc":
        return [{"kind": "toc", "title": b.get("title", "Contents"), "levels": b.get("levels", 3),
                 "pointer": pointer}]
    if t == "code":
        return [{"kind": "code", "text": b["text"], "pointer": pointer}]
    if t == "quote":
        return [{"kind": "quote", "text": text_of(b), "runs": b.get("runs"),
                 "attribution": b.get("attribution"), "pointer": pointer}]
    if t == "rule":
        return [{"kind": "rule", "pointer": pointer}]
    raise AssertionError("test bug: block type %r" % t)


def sheet_name(spec, i):
    s = spec["sheets"][i]
    if "name" in s:
        return s["name"]
    taken = {x.get("name", "").lower() for x in spec["sheets"]}
    n = i + 1
    while ("sheet%d" % n) in taken:
        n += 1
    return "Sheet%d" % n


def expected_flow(spec):
    """What a document writer renders for a spec (docs/spec.md, Mapping; artifacts/layout/flow.h)."""
    out = []
    if spec.get("blocks"):
        for i, b in enumerate(spec["blocks"]):
            out += block_flow(b, "/blocks/%d" % i)
        return out
    for i, s in enumerate(spec.get("sheets") or []):
        p = "/sheets/%d" % i
        out.append({"kind": "heading", "level": 1, "text": sheet_name(spec, i), "pointer": p})
        out.append({"kind": "table", "t": s, "sheet": s, "caption": None, "pointer": p})
        for j, c in enumerate(s.get("charts") or []):
            out.append({"kind": "chart", "chart": c, "sheet": s, "caption": None,
                        "pointer": "%s/charts/%d" % (p, j)})
    for i, sl in enumerate(spec.get("slides") or []):
        p = "/slides/%d" % i
        layout = sl.get("layout", "content")
        if sl.get("title"):
            out.append({"kind": "heading", "level": 1 if layout in ("title", "section") else 2,
                        "text": sl["title"], "pointer": p})
        if sl.get("subtitle"):
            out.append({"kind": "paragraph", "text": sl["subtitle"], "pointer": p})
        for member in ("bullets", "left", "right"):
            lst = sl.get(member)
            if isinstance(lst, dict):  # a numbered list: {"ordered": ..., "start": ..., "items": [...]}
                out.append(list_item(lst["items"], lst.get("ordered", False), lst.get("start", 1),
                                     pointer=p))
            elif lst:
                out.append(list_item(lst, pointer=p))
        if sl.get("table"):
            out.append({"kind": "table", "t": sl["table"], "caption": sl["table"].get("caption"),
                        "pointer": p})
        if sl.get("image"):
            out.append({"kind": "image", "image": sl["image"], "width": None, "caption": None,
                        "pointer": p})
        if sl.get("chart"):
            out.append({"kind": "chart", "chart": sl["chart"], "caption": None, "pointer": p})
        if sl.get("notes"):
            out.append({"kind": "quote", "text": sl["notes"], "attribution": None, "pointer": p})
    return out


# --------------------------------------------------------------------------- tables

def col_key(col):
    return col.get("key", col.get("header"))


def table_header_flag(t):
    cols = t.get("columns") or []
    default = any("header" in c for c in cols)
    data = t.get("data")
    if data and data.get("format", "csv") == "csv" and data.get("header", True) and not default:
        default = True
    return t.get("header", default)


def data_format(t):
    data = t["data"]
    fmt = data.get("format")
    if fmt:
        return fmt
    return "jsonl" if data["path"].lower().endswith((".jsonl", ".ndjson")) else "csv"


def expected_table_rows(t, base_dir, limit=None):
    """Yield the expected rows of a table block or sheet, header row first: lists of Shown."""
    cols = t.get("columns") or []
    header = table_header_flag(t)

    def col(i):
        return cols[i] if i < len(cols) else None

    def row_from_json(row):
        if isinstance(row, dict):
            return [shown_cell(row.get(col_key(c)), c) for c in cols]
        return [shown_cell(v, col(i)) for i, v in enumerate(row)]

    n = 0
    col_headers = [Shown(c.get("header", "")) for c in cols]
    data = t.get("data")
    if data is None:
        if header:
            yield col_headers
        for row in t.get("rows") or []:
            if limit is not None and n >= limit:
                return
            n += 1
            yield row_from_json(row)
        return
    path = Path(base_dir) / data["path"]
    if data_format(t) == "jsonl":
        if header:
            yield col_headers
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    if limit is not None and n >= limit:
                        return
                    n += 1
                    yield row_from_json(json.loads(line))
        return
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter=data.get("delimiter", ","))
        first = True
        for rec in reader:
            if first and data.get("header", True):
                first = False
                if header:
                    yield col_headers if any("header" in c for c in cols) else [Shown(x) for x in rec]
                continue
            if first and header:
                yield col_headers
            first = False
            if limit is not None and n >= limit:
                return
            n += 1
            yield [shown_field(f, col(i)) for i, f in enumerate(rec)]


def merged_cells(t):
    """Cells (0-based row of the rendered table, column) a sheet's merges cover."""
    cells = set()
    for m in t.get("merges") or []:
        a, _, b = m["range"].partition(":")
        r1, c1 = a1(a)
        r2, c2 = a1(b or a)
        for r in range(min(r1, r2), max(r1, r2) + 1):
            for c in range(min(c1, c2), max(c1, c2) + 1):
                cells.add((r, c))
    return cells


def a1(ref):
    m = re.fullmatch(r"\$?([A-Za-z]{1,3})\$?(\d+)", ref.strip())
    assert m, "test bug: not a cell reference %r" % ref
    col = 0
    for ch in m.group(1).upper():
        col = col * 26 + ord(ch) - 64
    return int(m.group(2)) - 1, col - 1


# --------------------------------------------------------------------------- charts

def sheet_grid(sheet, base_dir):
    """The cells of a sheet as the workbook has them (row 0 = Excel's row 1): JSON cells."""
    grid = []
    cols = sheet.get("columns") or []
    if table_header_flag(sheet):
        grid.append([c.get("header") for c in cols])
    if sheet.get("data"):
        path = Path(base_dir) / sheet["data"]["path"]
        with open(path, encoding="utf-8", newline="") as fh:
            recs = list(csv.reader(fh))
        grid += recs[1:] if sheet["data"].get("header", True) else recs
        return grid
    for row in sheet.get("rows") or []:
        if isinstance(row, dict):
            grid.append([row.get(col_key(c)) for c in cols])
        else:
            grid.append(list(row))
    return grid


def parse_ref(ref, own):
    ref = ref.lstrip("=")
    sheet = own
    if "!" in ref:
        sheet, _, ref = ref.rpartition("!")
        if sheet.startswith("'"):
            sheet = sheet[1:-1].replace("''", "'")
    a, _, b = ref.partition(":")
    r1, c1 = a1(a)
    r2, c2 = a1(b or a)
    return sheet, [(r, c) for r in range(min(r1, r2), max(r1, r2) + 1)
                   for c in range(min(c1, c2), max(c1, c2) + 1)]


def find_sheet(spec, name):
    for i, s in enumerate(spec.get("sheets") or []):
        if sheet_name(spec, i).lower() == name.lower():
            return s
    raise AssertionError("test bug: no sheet %r" % name)


def cell_number(v):
    """The number a chart reads from a cell (NaN when it holds none)."""
    if isinstance(v, dict):
        if "formula" in v:
            v = v.get("value")
        elif "date" in v or "datetime" in v:
            return ("date", v.get("date") or v.get("datetime"))
        else:
            v = v.get("value")
    if isinstance(v, bool) or v is None:
        return float("nan")
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(v)
    except ValueError:
        return float("nan")


def cell_category(v):
    """A category read from a cell: its text, its number, or ('date', iso) for a date."""
    if isinstance(v, dict):
        if "date" in v or "datetime" in v:
            return ("date", v.get("date") or v.get("datetime"))
        if "url" in v:
            return v.get("text", v["url"])
        v = v.get("value")
    if v is None:
        return ""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    return v


def expected_chart(spec, chart, sheet, base_dir):
    """(kind, title, categories [text or number or ('date', iso)], [(name, [values], color)])."""
    own = None
    if sheet is not None:
        own = next(sheet_name(spec, i) for i, s in enumerate(spec["sheets"]) if s is sheet)

    def cells(ref, typed=False):
        name, refs = parse_ref(ref, own)
        sh = find_sheet(spec, name)
        grid = sheet_grid(sh, base_dir)
        cols = sh.get("columns") or []
        first_data = 1 if table_header_flag(sh) else 0
        out = []
        for r, c in refs:
            v = grid[r][c] if r < len(grid) and c < len(grid[r]) else None
            coltype = cols[c].get("type") if c < len(cols) else None
            if typed and r >= first_data and isinstance(v, str) and coltype in ("date", "datetime"):
                v = {"date": v}   # a date column makes the string a date
            out.append(v)
        return out

    cats = chart.get("categories")
    if isinstance(cats, str):
        cats = [cell_category(v) for v in cells(cats, typed=True)]
    series = []
    for k, s in enumerate(chart["series"]):
        vals = s["values"]
        if isinstance(vals, str):
            vals = [cell_number(v) for v in cells(vals)]
            vals = [float("nan") if isinstance(v, tuple) else v for v in vals]
        name = s.get("name")
        if name is not None and sheet is not None and (name.startswith("=") or "!" in name):
            name = cells(name)[0]
            name = "" if name is None else (text_of(name) if isinstance(name, dict) and "text" in name
                                             else str(name.get("value") if isinstance(name, dict) else name))
        if name is None:
            name = "Series %d" % (k + 1)
        series.append((name, [float(v) for v in vals], s.get("color")))
    return chart["kind"], chart.get("title"), cats, series


# --------------------------------------------------------------------------- images and lengths

def length_pt(v):
    if isinstance(v, (int, float)):
        return float(v)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(pt|mm|cm|in)", v)
    assert m, "test bug: length %r" % v
    return float(m.group(1)) * {"pt": 1, "mm": 72 / 25.4, "cm": 72 / 2.54, "in": 72}[m.group(2)]


def page_of(spec):
    page = spec.get("page") or {}
    wpt, hpt = PAGE_SIZES_PT[page.get("size", "A4")]
    if page.get("orientation") == "landscape":
        wpt, hpt = hpt, wpt
    margins = {k: length_pt(v) for k, v in (page.get("margins") or {}).items()}
    return {"width": wpt, "height": hpt, "landscape": page.get("orientation") == "landscape",
            "top": margins.get("top", 72.0), "bottom": margins.get("bottom", 72.0),
            "left": margins.get("left", 72.0), "right": margins.get("right", 72.0)}


def image_bytes(img, base_dir):
    if "data" in img:
        data = re.sub(r"\s+", "", img["data"])
        return base64.b64decode(data + "=" * (-len(data) % 4))
    return (Path(base_dir) / img["path"]).read_bytes()


def image_geometry(data):
    """(width px, height px, dpi x, dpi y) of a PNG or JPEG; dpi 0 when the file does not say."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        wpx, hpx = struct.unpack(">II", data[16:24])
        dx = dy = 0.0
        pos = 8
        while pos + 8 <= len(data):
            n, tag = struct.unpack(">I4s", data[pos:pos + 8])
            if tag == b"pHYs":
                ppux, ppuy, unit = struct.unpack(">IIB", data[pos + 8:pos + 17])
                if unit == 1:
                    dx, dy = ppux * 0.0254, ppuy * 0.0254
            if tag == b"IDAT":
                break
            pos += 12 + n
        return wpx, hpx, dx, dy
    assert data[:2] == b"\xff\xd8", "test bug: not PNG or JPEG"
    pos, dx, dy = 2, 0.0, 0.0
    while pos < len(data):
        while data[pos] != 0xFF:
            pos += 1
        marker = data[pos + 1]
        pos += 2
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            continue
        seg = struct.unpack(">H", data[pos:pos + 2])[0]
        if marker == 0xE0 and data[pos + 2:pos + 7] == b"JFIF\x00":
            unit, xd, yd = struct.unpack(">BHH", data[pos + 9:pos + 14])
            if unit == 1:
                dx, dy = float(xd), float(yd)
            elif unit == 2:
                dx, dy = xd * 2.54, yd * 2.54
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            hpx, wpx = struct.unpack(">HH", data[pos + 3:pos + 7])
            return wpx, hpx, dx, dy
        pos += seg
    raise AssertionError("test bug: JPEG without SOF")


def png_bytes(w=4, h=3, color=(200, 30, 30)):
    raw = b"".join(b"\x00" + bytes(color) * w for _ in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def png_b64(**kw):
    return base64.b64encode(png_bytes(**kw)).decode()


# =========================================================================== reading a .docx

def xml_text(el):
    """The text Word shows for an element: w:t, w:tab as a tab, w:br and w:cr as a line feed
    (not page or column breaks); field instructions and deleted text left out."""
    out = []
    for e in el.iter(w("t"), w("tab"), w("br"), w("cr"), w("noBreakHyphen")):
        parent = e.getparent()
        if parent is None or parent.tag != w("r"):
            continue            # w:tab in w:tabs (tab stops) is not text
        if e.tag == w("t"):
            out.append(e.text or "")
        elif e.tag == w("tab"):
            out.append("\t")
        elif e.tag == w("br"):
            if e.get(w("type"), "textWrapping") == "textWrapping":
                out.append("\n")
        elif e.tag == w("cr"):
            out.append("\n")
        else:
            out.append("-")
    return "".join(out)


def own_runs(p):
    """The w:r of paragraph p (inside hyperlinks, fields, smart tags too), not those of
    nested text boxes."""
    return [r for r in p.iter(w("r")) if next(r.iterancestors(w("p"))) is p]


class DocxDoc:
    """A rendered .docx read back with python-docx (and lxml for what python-docx 0.8 lacks)."""

    def __init__(self, path):
        self.path = Path(path)
        self.doc = docx.Document(str(path))
        self.zip = zipfile.ZipFile(str(path))
        self.names = set(self.zip.namelist())
        self.body = self.doc.element.body
        self.part = self.doc.part
        self.rels = {rid: rel for rid, rel in self.part.rels.items()}
        self.styles = {}
        for st in self.doc.styles:
            self.styles[st.style_id] = st
        self.items = []          # body order: ("p", el, in_sdt) / ("tbl", el, in_sdt)
        self._walk(self.body, False)
        self.paragraphs = [el for kind, el, _ in self.items if kind == "p"]
        self.tables = [el for kind, el, _ in self.items if kind == "tbl"]
        self.index = {id(el): i for i, (_k, el, _s) in enumerate(self.items)}

    def _walk(self, parent, in_sdt):
        for child in parent:
            if child.tag == w("p"):
                self.items.append(("p", child, in_sdt))
            elif child.tag == w("tbl"):
                self.items.append(("tbl", child, in_sdt))
            elif child.tag == w("sdt"):
                content = child.find(w("sdtContent"))
                if content is not None:
                    self._walk(content, True)
            elif child.tag in (w("customXml"),):
                self._walk(child, in_sdt)

    def xml(self, name):
        return etree.fromstring(self.zip.read(name))

    def style_name(self, p):
        ps = p.find("w:pPr/w:pStyle", NS)
        sid = ps.get(w("val")) if ps is not None else None
        if sid is None:
            st = self.doc.styles.default(docx.enum.style.WD_STYLE_TYPE.PARAGRAPH)
            return st.name if st is not None else "Normal"
        st = self.styles.get(sid)
        return st.name if st is not None else "<missing style %s>" % sid

    def heading_level(self, p):
        m = re.fullmatch(r"Heading ([1-9])", self.style_name(p))
        return int(m.group(1)) if m else None

    def runs(self, p):
        para = Paragraph(p, self.doc._body)
        return [Run(r, para) for r in own_runs(p)]

    def link_of(self, r):
        h = next(r.iterancestors(w("hyperlink")), None)
        if h is None:
            return None
        rid = h.get("{%s}id" % R)
        if rid is None:
            return ("anchor", h.get(w("anchor")))
        rel = self.rels.get(rid)
        if rel is None:
            return ("missing", rid)
        return ("external" if rel.is_external else "internal", rel.target_ref, rel.reltype)

    def jc(self, p):
        e = p.find("w:pPr/w:jc", NS)
        return e.get(w("val")) if e is not None else None

    def num(self, p):
        e = p.find("w:pPr/w:numPr", NS)
        if e is None:
            return None
        ilvl, nid = e.find(w("ilvl")), e.find(w("numId"))
        return (int(ilvl.get(w("val"))) if ilvl is not None else 0,
                int(nid.get(w("val"))) if nid is not None else None)

    def numbering(self):
        """{numId: (abstractNumId, {ilvl: startOverride})}, {abstractNumId: {ilvl: (numFmt, start)}}."""
        name = "word/numbering.xml"
        if name not in self.names:
            return {}, {}
        root = self.xml(name)
        nums, abstracts = {}, {}
        for an in root.findall(w("abstractNum")):
            lv = {}
            for l in an.findall(w("lvl")):
                fmt = l.find(w("numFmt"))
                st = l.find(w("start"))
                lv[int(l.get(w("ilvl")))] = (fmt.get(w("val")) if fmt is not None else "decimal",
                                            int(st.get(w("val"))) if st is not None else 0)
            abstracts[int(an.get(w("abstractNumId")))] = lv
        for n in root.findall(w("num")):
            over = {}
            for o in n.findall(w("lvlOverride")):
                so = o.find(w("startOverride"))
                if so is not None:
                    over[int(o.get(w("ilvl")))] = int(so.get(w("val")))
            nums[int(n.get(w("numId")))] = (int(n.find(w("abstractNumId")).get(w("val"))), over)
        return nums, abstracts

    def style_el(self, sid):
        st = self.styles.get(sid)
        return st.element if st is not None else None

    def part_rels(self, part_name):
        """{rId: (type, target, external)} of any part, read from its .rels."""
        folder, _, base = part_name.rpartition("/")
        rels_name = "%s/_rels/%s.rels" % (folder, base) if folder else "_rels/%s.rels" % base
        if rels_name not in self.names:
            return {}
        out = {}
        for rel in self.xml(rels_name).findall("{%s}Relationship" % PR):
            out[rel.get("Id")] = (rel.get("Type"), rel.get("Target"), rel.get("TargetMode") == "External")
        return out

    def resolve(self, part_name, target):
        folder = part_name.rpartition("/")[0]
        parts = (folder + "/" + target).split("/") if not target.startswith("/") else target[1:].split("/")
        out = []
        for x in parts:
            if x == "..":
                out.pop()
            elif x and x != ".":
                out.append(x)
        return "/".join(out)


def pictures(d):
    """[(body index, inline element, blip bytes, descr)] in body order."""
    out = []
    for i, (kind, el, _s) in enumerate(d.items):
        for inl in el.iter("{%s}inline" % WP, "{%s}anchor" % WP):
            blip = inl.find(".//a:blip", NS)
            if blip is None:
                continue
            rid = blip.get("{%s}embed" % R)
            rel = d.rels.get(rid)
            data = rel.target_part.blob if rel is not None and not rel.is_external else None
            out.append((i, inl, data, inl.find("wp:docPr", NS).get("descr")))
    return out


def chart_refs(d):
    """[(body index, inline element, chart part name)] in body order."""
    out = []
    for i, (kind, el, _s) in enumerate(d.items):
        for inl in el.iter("{%s}inline" % WP, "{%s}anchor" % WP):
            ch = inl.find(".//c:chart", NS)
            if ch is None:
                continue
            rid = ch.get("{%s}id" % R)
            rel = d.rels.get(rid)
            out.append((i, inl, rel.target_part.partname.lstrip("/") if rel is not None else None))
    return out


def fields(root):
    """Every complex or simple field under root: dicts with instr, dirty, begin paragraph,
    end paragraph and result paragraphs (those between separate and end)."""
    out, stack = [], []
    for e in root.iter(w("fldChar"), w("instrText"), w("fldSimple")):
        p = next(e.iterancestors(w("p")), None)
        if e.tag == w("fldSimple"):
            out.append({"instr": e.get(w("instr")) or "", "dirty": e.get(w("dirty")) in ("1", "true", "on"),
                        "begin_p": p, "end_p": p, "simple": True})
            continue
        if e.tag == w("instrText"):
            if stack:
                stack[-1]["instr"] += e.text or ""
            continue
        t = e.get(w("fldCharType"))
        if t == "begin":
            stack.append({"instr": "", "dirty": e.get(w("dirty")) in ("1", "true", "on"),
                          "begin_p": p, "sep_p": None, "simple": False})
        elif t == "separate" and stack:
            stack[-1]["sep_p"] = p
        elif t == "end" and stack:
            f = stack.pop()
            f["end_p"] = p
            out.append(f)
    return out


# =========================================================================== comparing with the spec

def theme_of(spec):
    t = dict(DEFAULT_THEME)
    given = spec.get("theme") or {}
    t.update({k: v for k, v in given.items()})
    t["heading_font"] = given.get("heading_font", t["font"])
    accents = given.get("accent_colors")
    if accents and "header_fill" not in given:
        t["header_fill"] = accents[0]
    t["header_fill"] = t["header_fill"].lstrip("#").upper()
    t["header_font_color"] = t["header_font_color"].lstrip("#").upper()
    return t


def hexcolor(c):
    return c.lstrip("#").upper() if c else None


def body_kind(d, p):
    """What a body paragraph is, by its style: heading, list, code, quote, caption, toc, plain."""
    name = d.style_name(p)
    if d.heading_level(p):
        return "heading"
    if d.num(p) is not None:
        return "list"
    low = name.lower()
    if low == "code":
        return "code"
    if low in ("quote", "intense quote"):
        return "quote"
    if low == "caption":
        return "caption"
    if low.startswith("toc"):
        return "toc"
    return "plain"


def run_props(d, r, theme):
    f = r.font
    rstyle = r._r.find("w:rPr/w:rStyle", NS)
    return {
        "bold": r.bold is True, "italic": r.italic is True,
        "underline": r.underline not in (None, False) and str(r.underline) not in ("NONE (0)",),
        "strike": f.strike is True, "superscript": f.superscript is True,
        "subscript": f.subscript is True,
        "color": (str(f.color.rgb) if f.color is not None and f.color.type is not None
                  and f.color.rgb is not None else None),
        "size": f.size.pt if f.size is not None else None,
        "font": f.name,
        "rstyle": rstyle.get(w("val")) if rstyle is not None else None,
        "link": d.link_of(r._r),
    }


def check_runs(d, p, runs, theme, where, errs):
    """The paragraph's runs carry each spec run's text and formatting, and nothing extra."""
    chars = []
    for r in d.runs(p):
        t = xml_text(r._r)
        if not t:
            continue
        props = run_props(d, r, theme)
        chars += [props] * len(t)
    pos = 0
    for k, sr in enumerate(runs):
        n = len(sr["text"])
        span = chars[pos:pos + n]
        pos += n
        if not span:
            errs.append("%s run %d %r: no such text in the paragraph" % (where, k, sr["text"]))
            continue
        got_all = {}
        for key in ("bold", "italic", "strike", "superscript", "subscript"):
            vals = {c[key] for c in span}
            want = bool(sr.get(key, False))
            if vals != {want}:
                got_all[key] = (want, sorted(vals))
        linked = "link" in sr
        if not linked or "underline" in sr:
            vals = {c["underline"] for c in span}
            want = bool(sr.get("underline", False))
            if vals != {want}:
                got_all["underline"] = (want, sorted(vals))
        if "color" in sr or not linked:
            vals = {c["color"] for c in span}
            want = hexcolor(sr.get("color"))
            if vals != {want}:
                got_all["color"] = (want, sorted(vals, key=str))
        vals = {c["size"] for c in span}
        want = float(sr["size"]) if "size" in sr else None
        if vals != {want}:
            got_all["size"] = (want, sorted(vals, key=str))
        if sr.get("code"):
            ok = all(c["rstyle"] == "CodeChar" or c["font"] == theme["mono_font"] for c in span)
            if not ok:
                got_all["code"] = ("CodeChar style or %s" % theme["mono_font"],
                                   sorted({(c["rstyle"], c["font"]) for c in span}, key=str))
            if "font" in sr and {c["font"] for c in span} != {sr["font"]}:
                got_all["font"] = (sr["font"], sorted({c["font"] for c in span}, key=str))
        else:
            vals = {c["font"] for c in span}
            want = sr.get("font")
            if vals != {want}:
                got_all["font"] = (want, sorted(vals, key=str))
        if linked:
            vals = {c["link"] for c in span}
            one = next(iter(vals))
            if len(vals) != 1 or one is None or one[0] != "external" or not same_url(one[1], sr["link"]) \
                    or one[2] != REL_HYPERLINK:
                got_all["link"] = (sr["link"], sorted(vals, key=str))
        elif {c["link"] for c in span} != {None}:
            got_all["link"] = (None, sorted({c["link"] for c in span}, key=str))
        for key, (want, got) in got_all.items():
            errs.append("%s run %d %r: %s expected %r, got %r" % (where, k, sr["text"][:40], key, want, got))


def check_headings(d, flow, errs):
    got = [(d.heading_level(p), xml_text(p)) for kind, p, in_sdt in d.items
           if kind == "p" and not in_sdt and d.heading_level(p)]
    want = [(it["level"], it["text"]) for it in flow if it["kind"] == "heading"]
    if got != want:
        for i, (g, e) in enumerate(zip(got, want)):
            if g != e:
                errs.append("headings differ first at #%d: expected Heading %d %r, got Heading %s %r"
                            % (i, e[0], e[1], g[0], g[1]))
                break
        if len(got) != len(want):
            errs.append("expected %d headings, got %d (expected %s..., got %s...)"
                        % (len(want), len(got), want[:3], got[:3]))
    # runs of headings written with runs
    heads = [p for kind, p, in_sdt in d.items if kind == "p" and not in_sdt and d.heading_level(p)]
    for it, p in zip([it for it in flow if it["kind"] == "heading"], heads):
        if it.get("runs") and xml_text(p) == it["text"]:
            check_runs(d, p, it["runs"], {"mono_font": d.mono_font}, "%s (heading)" % it["pointer"], errs)
    # the built-in heading styles carry their outline levels (navigation pane, TOC)
    for level in sorted({it["level"] for it in flow if it["kind"] == "heading"}):
        st = d.style_el("Heading%d" % level)
        if st is None:
            errs.append("styles.xml has no Heading%d style" % level)
            continue
        name = st.find(w("name")).get(w("val"))
        ol = st.find("w:pPr/w:outlineLvl", NS)
        if name.lower() != "heading %d" % level:
            errs.append("style Heading%d is named %r, not 'heading %d'" % (level, name, level))
        if ol is None or int(ol.get(w("val"))) != level - 1:
            errs.append("style Heading%d: outline level expected %d, got %r"
                        % (level, level - 1, None if ol is None else ol.get(w("val"))))


def check_paragraphs(d, flow, theme, errs):
    """Each paragraph block is a body paragraph (in order) with its text, runs and alignment."""
    plain = [p for kind, p, in_sdt in d.items if kind == "p" and not in_sdt and body_kind(d, p) == "plain"]
    texts = [xml_text(p) for p in plain]
    pos = 0
    jc_want = {"left": {"left", "start", None}, "center": {"center"}, "right": {"right", "end"},
               "justify": {"both", "distribute"}}
    for it in flow:
        if it["kind"] != "paragraph":
            continue
        k = pos
        while k < len(texts) and texts[k] != it["text"]:
            k += 1
        if k == len(texts):
            errs.append("%s: no body paragraph %r (after paragraph #%d of %d)"
                        % (it["pointer"], it["text"][:80], pos, len(texts)))
            continue
        pos = k + 1
        p = plain[k]
        runs = it.get("md_runs") if it.get("md") else it.get("runs")
        if runs:
            check_runs(d, p, runs, theme, it["pointer"], errs)
        if it.get("align"):
            if d.jc(p) not in jc_want[it["align"]]:
                errs.append("%s: align %s expected w:jc in %s, got %r"
                            % (it["pointer"], it["align"], jc_want[it["align"]], d.jc(p)))


def check_lists(d, flow, errs):
    doc_items = [p for kind, p, in_sdt in d.items if kind == "p" and not in_sdt and d.num(p) is not None]
    lists = [it for it in flow if it["kind"] == "list"]
    want = [(lst, depth, text) for lst in lists for depth, text, _runs in lst["flat"]]
    if len(doc_items) != len(want):
        errs.append("expected %d list paragraphs (w:numPr) in %d lists, got %d"
                    % (len(want), len(lists), len(doc_items)))
    nums, abstracts = d.numbering()
    top_ids, used_by = [], {}
    reported = set()
    k = 0
    for li, lst in enumerate(lists):
        mine = doc_items[k:k + len(lst["flat"])]
        k += len(lst["flat"])
        parents = {}
        for (depth, text, runs), p in zip(lst["flat"], mine):
            ilvl, nid = d.num(p)
            where = "%s item %r" % (lst["pointer"], text[:40])
            if xml_text(p) != text:
                errs.append("%s: list paragraph text %r" % (where, xml_text(p)))
            if ilvl != depth:
                errs.append("%s: w:ilvl expected %d, got %d" % (where, depth, ilvl))
            if d.style_name(p) != "List Paragraph":
                errs.append("%s: style expected 'List Paragraph', got %r" % (where, d.style_name(p)))
            if runs and xml_text(p) == text:
                check_runs(d, p, runs, {"mono_font": d.mono_font}, where, errs)
            if nid not in nums:
                errs.append("%s: numId %r is not in numbering.xml" % (where, nid))
                continue
            abstract, overrides = nums[nid]
            lvl = abstracts.get(abstract, {}).get(ilvl)
            if lvl is None:
                errs.append("%s: abstractNum %d has no level %d" % (where, abstract, ilvl))
                continue
            if lst["ordered"] == (lvl[0] == "bullet"):
                errs.append("%s: %s list item at level %d has numFmt %r"
                            % (where, "ordered" if lst["ordered"] else "bulleted", ilvl, lvl[0]))
            used_by.setdefault(nid, set()).add(li)
            if depth == 0:
                parents[0] = nid
                if lst["ordered"]:
                    start = lst.get("start", 1)
                    got = overrides.get(ilvl)
                    if overrides.get(ilvl) != start and ("start", nid) not in reported:
                        reported.add(("start", nid))
                        errs.append("%s: ordered list numId %d: w:num needs w:lvlOverride ilvl=%d "
                                    "w:startOverride %d so the list restarts, got %r"
                                    % (where, nid, ilvl, start, got))
            else:
                parent = parents.get(depth - 1)
                if lst["ordered"] and nid != parent and nid != parents.get(depth):
                    if overrides.get(ilvl) != 1:
                        errs.append("%s: nested ordered list with its own numId %d must restart at 1 "
                                    "(startOverride), got %r" % (where, nid, overrides.get(ilvl)))
                parents[depth] = nid
        tops = {d.num(p)[1] for (depth, _t, _r), p in zip(lst["flat"], mine) if depth == 0}
        if len(tops) != 1:
            errs.append("%s: the top-level items of one list use numIds %s (expected one)"
                        % (lst["pointer"], sorted(tops, key=str)))
        top_ids.append(next(iter(tops)) if tops else None)
    shared = {nid: sorted(ls) for nid, ls in used_by.items() if len(ls) > 1}
    if shared:
        errs.append("numIds shared by several list instances (each needs its own w:num): %s" % shared)


def caption_near(d, index, caption):
    """A Caption-style paragraph right before or after body item index holding caption."""
    for j in (index - 1, index + 1):
        if 0 <= j < len(d.items) and d.items[j][0] == "p":
            p = d.items[j][1]
            if d.style_name(p).lower() == "caption" and caption in xml_text(p):
                return True
    return False


def grid_tcs(tr):
    """The row's w:tc by grid column: a merged cell (w:gridSpan) fills each column it spans."""
    out = []
    for tc in tr.findall(w("tc")):
        span = tc.find("w:tcPr/w:gridSpan", NS)
        out += [tc] * (int(span.get(w("val"))) if span is not None else 1)
    return out


def table_cell_texts(tr):
    """The row's texts by grid column ("" for the further columns of a merged cell)."""
    out, seen = [], set()
    for tc in grid_tcs(tr):
        out.append("" if id(tc) in seen else "\n".join(xml_text(p) for p in tc.iter(w("p"))))
        seen.add(id(tc))
    return out


def column_needs_values(col):
    """An untyped column without align or number format: aligned by its values."""
    col = col or {}
    fmt = col.get("number_format")
    return (not col.get("align") and (col.get("type") or "auto") == "auto"
            and not (fmt and fmt.lower() != "general" and fmt != "@"))


def expected_column_jc(col, kinds):
    """The alignment docx_table.c gives a column's cells: its align; else centered for
    booleans, right for numbers and dates, left for text; an untyped column right when
    every value is a number or a date (kinds: the kinds of its values)."""
    col = col or {}
    if col.get("align"):
        return col["align"]
    ctype = col.get("type") or "auto"
    if ctype == "boolean":
        return "center"
    if ctype != "auto":
        return "right" if ctype in NUMERIC_TYPES + ("date", "datetime") else "left"
    if not column_needs_values(col):
        return "right"      # an explicit number format
    return "right" if "numeric" in kinds and "text" not in kinds else "left"


def describe_column(col):
    col = col or {}
    return ", ".join("%s %s" % (k, col[k]) for k in ("type", "number_format", "align") if col.get(k)) or "untyped"


def json_cell_kind(v):
    """numeric, text or blank: how a JSON cell counts for an untyped column's alignment
    (numbers, dates and formulas with a number cached are numeric; a formula without a
    cached value shows nothing but is not blank)."""
    if isinstance(v, dict):
        if "formula" in v:
            cached = v.get("value")
            return "numeric" if isinstance(cached, (int, float)) and not isinstance(cached, bool) else "text"
        if "date" in v or "datetime" in v:
            return "numeric"
        if "url" in v:
            return "text"
        v = v.get("value")
    if v is None:
        return "blank"
    if isinstance(v, bool):
        return "text"
    return "numeric" if isinstance(v, (int, float)) else "text"


def raw_data_rows(t, base_dir):
    """The data rows of a table or sheet, header record left out: (cells, from_csv)."""
    cols = t.get("columns") or []

    def from_json(row):
        return [row.get(col_key(c)) for c in cols] if isinstance(row, dict) else list(row)

    data = t.get("data")
    if data is None:
        for row in t.get("rows") or []:
            yield from_json(row), False
        return
    path = Path(base_dir) / data["path"]
    with open(path, encoding="utf-8", newline="") as fh:
        if data_format(t) == "jsonl":
            for line in fh:
                if line.strip():
                    yield from_json(json.loads(line)), False
            return
        reader = csv.reader(fh, delimiter=data.get("delimiter", ","))
        for n, rec in enumerate(reader):
            if n == 0 and data.get("header", True):
                continue
            yield rec, True


def column_value_kinds(t, base_dir, columns):
    """{column: the kinds of its values} over every data row, for the given columns."""
    kinds = {c: set() for c in columns}
    for cells, from_csv in raw_data_rows(t, base_dir):
        for c in columns:
            if c >= len(cells):
                continue
            v = cells[c]
            if from_csv:
                kinds[c].add("blank" if v == "" else "numeric" if csv_plain_number(v) else "text")
            else:
                kinds[c].add(json_cell_kind(v))
    return kinds


def cell_aligns(t, c):
    """Data rows (0-based) whose cell in column c has its own style align (inline rows)."""
    cols = t.get("columns") or []
    out = {}
    if t.get("data"):
        return out
    for r, row in enumerate(t.get("rows") or []):
        cells = [row.get(col_key(x)) for x in cols] if isinstance(row, dict) else row
        v = cells[c] if c < len(cells) else None
        if isinstance(v, dict) and (v.get("style") or {}).get("align"):
            out[r] = v["style"]["align"]
    return out


def check_table(d, tbl, it, base_dir, theme, errs, row_limit=None):
    t = it["t"]
    where = it["pointer"] + " (table)"
    rows = tbl.findall(w("tr"))
    header = table_header_flag(t) if not it.get("md") else True
    merges = merged_cells(t) if it.get("sheet") is not None else set()
    want_rows = list(expected_table_rows(t, base_dir, limit=row_limit))
    if not want_rows and t.get("columns"):
        # no header row and no data: one row of empty cells (Word rejects a table without rows)
        want_rows = [[Shown("") for c in t["columns"] if c.get("width") != 0]]
    n_data = None if row_limit is not None else len(want_rows)
    if n_data is not None and len(rows) != n_data:
        errs.append("%s: expected %d rows (header included), got %d" % (where, n_data, len(rows)))
    bad = 0
    for r, (want, tr) in enumerate(zip(want_rows, rows)):
        got = table_cell_texts(tr)
        for c, e in enumerate(want):
            if (r, c) in merges:
                continue
            g = got[c] if c < len(got) else None
            if it.get("md"):
                e = Shown(strip_inline_md(e.text)) if e.text is not None else e
            if g is None or not e.matches(g):
                bad += 1
                if bad <= 12:
                    errs.append("%s row %d col %d: expected %r, got %r" % (where, r, c, e, g))
        extra = [x for c, x in enumerate(got) if c >= len(want) and (r, c) not in merges]
        if any(extra):
            errs.append("%s row %d: extra cells %r" % (where, r, extra))
    if bad > 12:
        errs.append("%s: %d cells differ in all" % (where, bad))
    # header repeat and rows that do not split
    for r, tr in enumerate(rows):
        trpr = tr.find(w("trPr"))
        is_hdr = trpr is not None and trpr.find(w("tblHeader")) is not None \
            and trpr.find(w("tblHeader")).get(w("val"), "true") not in ("0", "false", "off")
        if r == 0 and header and not is_hdr:
            errs.append("%s: the header row has no w:tblHeader (not repeated on each page)" % where)
        if is_hdr and not (r == 0 and header):
            errs.append("%s row %d: w:tblHeader on a row that is not the header row" % where)
        cs = trpr.find(w("cantSplit")) if trpr is not None else None
        if cs is None or cs.get(w("val"), "true") in ("0", "false", "off"):
            errs.append("%s row %d: no w:cantSplit (the row may split across pages)" % (where, r))
            break
    # grid and cell widths agree
    grid = [int(g.get(w("w"))) for g in tbl.findall("w:tblGrid/w:gridCol", NS)]
    ncols = max((len(grid_tcs(r)) for r in rows), default=0)
    if len(grid) != ncols:
        errs.append("%s: w:tblGrid has %d columns, rows have %d" % (where, len(grid), ncols))
    for r, tr in enumerate(rows[:50]):
        col = 0
        for tc in tr.findall(w("tc")):
            span = tc.find("w:tcPr/w:gridSpan", NS)
            span = int(span.get(w("val"))) if span is not None else 1
            tcw = tc.find("w:tcPr/w:tcW", NS)
            want_w = sum(grid[col:col + span])
            if tcw is None or tcw.get(w("type"), "dxa") != "dxa" or int(tcw.get(w("w"))) != want_w:
                errs.append("%s row %d col %d: w:tcW %r does not match the grid (%d twips)"
                            % (where, r, col, None if tcw is None else dict(tcw.attrib), want_w))
                break
            col += span
    text_width = d.text_width_twips
    if grid and sum(grid) > text_width + 2:
        errs.append("%s: the grid is %d twips wide, wider than the text (%d)" % (where, sum(grid), text_width))
    # alignment per column: the column's align, else by type (docx_table.c column_jc)
    cols = t.get("columns") or []
    jc_want = {"left": {"left", "start", None}, "center": {"center"}, "right": {"right", "end"},
               "justify": {"both"}}
    shown_cols = [c for c in range(max(len(cols), ncols)) if c >= len(cols) or cols[c].get("width") != 0]
    merged_cols = {c for _r, c in merges}
    untyped = [c for c in shown_cols if column_needs_values(cols[c] if c < len(cols) else None)
               and c not in merged_cols]
    kinds = column_value_kinds(t, base_dir, untyped) if untyped else {}
    off = 1 if header else 0
    for g, c in enumerate(shown_cols):
        col = cols[c] if c < len(cols) else None
        if column_needs_values(col) and c in merged_cols:
            continue    # a merged range's value counts for its column too: not modelled here
        want = expected_column_jc(col, kinds.get(c, set()))
        own = cell_aligns(t, c) if not it.get("md") else {}
        for r, tr in enumerate(rows[off:][:20]):
            tcs = grid_tcs(tr)
            if g >= len(tcs) or (r + off, c) in merges or r in own:
                continue
            bad_jc = [d.jc(p) for p in tcs[g].findall(w("p")) if d.jc(p) not in jc_want[want]]
            if bad_jc:
                errs.append("%s column %d (%s): w:jc %r, expected %s"
                            % (where, c, describe_column(col), bad_jc[0], want))
                break
    # borders and the header row's shading (direct, or through the table style)
    style_id = tbl.find("w:tblPr/w:tblStyle", NS)
    style_el = d.style_el(style_id.get(w("val"))) if style_id is not None else None
    if tbl.find("w:tblPr/w:tblBorders", NS) is None and (
            style_el is None or style_el.find(".//w:tblBorders", NS) is None):
        errs.append("%s: no borders (no w:tblBorders, nor in its table style)" % where)
    if header and rows:
        fills, colors = set(), set()
        first_row_style = None
        if style_el is not None:
            for tsp in style_el.findall(w("tblStylePr")):
                if tsp.get(w("type")) == "firstRow":
                    first_row_style = tsp
        for tc in rows[0].findall(w("tc")):
            shd = tc.find("w:tcPr/w:shd", NS)
            fill = shd.get(w("fill")) if shd is not None else None
            if fill is None and first_row_style is not None:
                s2 = first_row_style.find(".//w:shd", NS)
                fill = s2.get(w("fill")) if s2 is not None else None
            fills.add((fill or "").upper())
            for r in tc.iter(w("r")):
                col_el = r.find("w:rPr/w:color", NS)
                color = col_el.get(w("val")) if col_el is not None else None
                if color is None and first_row_style is not None:
                    c2 = first_row_style.find(".//w:rPr/w:color", NS)
                    color = c2.get(w("val")) if c2 is not None else None
                if xml_text(r).strip():
                    colors.add((color or "").upper())
        if fills != {theme["header_fill"]}:
            errs.append("%s: header row shading expected %s, got %s" % (where, theme["header_fill"], sorted(fills)))
        if colors and colors != {theme["header_font_color"]}:
            errs.append("%s: header row text color expected %s, got %s"
                        % (where, theme["header_font_color"], sorted(colors)))
    # URL cells are hyperlinks to the URL
    if not it.get("md") and t.get("rows") and not t.get("data"):
        off = 1 if header else 0
        for r, row in enumerate(t["rows"][:200]):
            cells = [row.get(col_key(c)) for c in cols] if isinstance(row, dict) else row
            for c, v in enumerate(cells):
                if not (isinstance(v, dict) and "url" in v) or r + off >= len(rows):
                    continue
                if (r + off, c) in merges:
                    continue
                tcs = grid_tcs(rows[r + off])
                links = [d.link_of(x) for x in tcs[c].iter(w("r"))] if c < len(tcs) else []
                if not links or any(l is None or l[0] != "external" or not same_url(l[1], v["url"])
                                    for l in links):
                    errs.append("%s row %d col %d: the URL cell is not a hyperlink to %s (%s)"
                                % (where, r + off, c, v["url"], links))
    # cell styles the spec gives (bold, italic, color)
    if not it.get("md") and t.get("rows") and not t.get("data"):
        off = 1 if header else 0
        for r, row in enumerate(t["rows"][:200]):
            cells = [row.get(col_key(c)) for c in cols] if isinstance(row, dict) else row
            for c, v in enumerate(cells):
                st = v.get("style") if isinstance(v, dict) else None
                if not st or r + off >= len(rows):
                    continue
                tcs = grid_tcs(rows[r + off])
                if c >= len(tcs) or (r + off, c) in merges:
                    continue
                runs = [x for x in tcs[c].iter(w("r")) if xml_text(x)]
                if not runs:
                    continue
                para = Paragraph(tcs[c].find(w("p")), d.doc._body)
                for x in runs:
                    run = Run(x, para)
                    for key, got in (("bold", run.bold), ("italic", run.italic)):
                        if key in st and bool(got) != st[key]:
                            errs.append("%s row %d col %d: cell style %s expected %r, got %r"
                                        % (where, r + off, c, key, st[key], got))
                    if "color" in st:
                        got = run.font.color.rgb if run.font.color is not None and run.font.color.type else None
                        if str(got) != hexcolor(st["color"]):
                            errs.append("%s row %d col %d: cell color expected %s, got %s"
                                        % (where, r + off, c, hexcolor(st["color"]), got))
                    break


def check_tables(d, flow, base_dir, theme, errs, row_limit=None):
    want = [it for it in flow if it["kind"] == "table"]
    got = [el for kind, el, in_sdt in d.items if kind == "tbl" and not in_sdt]
    if len(got) != len(want):
        errs.append("expected %d tables, got %d" % (len(want), len(got)))
    for it, tbl in zip(want, got):
        check_table(d, tbl, it, base_dir, theme, errs, row_limit)
        if it.get("caption") and not caption_near(d, d.index[id(tbl)], it["caption"]):
            errs.append("%s: no Caption paragraph next to the table holding %r" % (it["pointer"], it["caption"]))


def paragraph_fields(p):
    """The fields of paragraph p in order: (instruction, cached result text)."""
    out, stack = [], []
    for e in p.iter(w("fldChar"), w("instrText"), w("t"), w("fldSimple")):
        if e.tag == w("fldSimple"):
            out.append((e.get(w("instr")) or "", xml_text(e)))
        elif e.tag == w("instrText"):
            if stack:
                stack[-1][0] += e.text or ""
        elif e.tag == w("t"):
            if stack and stack[-1][2]:
                stack[-1][1] += e.text or ""
        else:
            kind = e.get(w("fldCharType"))
            if kind == "begin":
                stack.append(["", "", False])
            elif kind == "separate" and stack:
                stack[-1][2] = True
            elif kind == "end" and stack:
                instr, result, _sep = stack.pop()
                out.append((instr, result))
    return out


def caption_number(caption, label):
    """The number a caption written as "Table 3: ..." / "Figure 2. ..." gives itself, else None
    (docx_document.c caption_prefix)."""
    m = re.match(r"(?i)%s +([0-9]{1,9})(?![0-9A-Za-z])" % label, caption)
    return int(m.group(1)) if m else None


def check_captions(d, flow, errs):
    """Every caption is a Caption paragraph with a SEQ field for its label (SEQ Table for
    tables, SEQ Figure for images and charts) whose cached number counts up from 1 per label
    in document order (or is the number the caption writes itself)."""
    want, counters = [], {"Table": 0, "Figure": 0}
    for it in flow:
        if it["kind"] not in ("table", "image", "chart") or not it.get("caption"):
            continue
        label = "Table" if it["kind"] == "table" else "Figure"
        counters[label] += 1
        own = caption_number(it["caption"], label)
        want.append((it["pointer"], label, own if own is not None else counters[label], it["caption"]))
    got = [el for kind, el, in_sdt in d.items if kind == "p" and not in_sdt and body_kind(d, el) == "caption"]
    if len(got) != len(want):
        errs.append("expected %d Caption paragraphs, got %d" % (len(want), len(got)))
    for (pointer, label, number, caption), p in zip(want, got):
        seqs = [(instr.split(), result) for instr, result in paragraph_fields(p)
                if instr.split()[:1] == ["SEQ"]]
        if len(seqs) != 1:
            errs.append("%s: caption %r has %d SEQ fields, expected one" % (pointer, caption, len(seqs)))
            continue
        words, result = seqs[0]
        if words[1:2] != [label]:
            errs.append("%s: caption %r numbered by SEQ %s, expected SEQ %s"
                        % (pointer, caption, " ".join(words[1:2]), label))
        if result.strip() != str(number):
            errs.append("%s: caption %r shows number %r, expected %d" % (pointer, caption, result, number))


def check_images(d, spec, flow, base_dir, errs):
    want = [it for it in flow if it["kind"] == "image"]
    got = pictures(d)
    shapes = [s for s in d.doc.inline_shapes if s.type == WD_INLINE_SHAPE.PICTURE]
    if len(shapes) != len(want):
        errs.append("python-docx inline_shapes: expected %d pictures, got %d" % (len(want), len(shapes)))
    if len(got) != len(want):
        errs.append("expected %d images, got %d" % (len(want), len(got)))
    page = page_of(spec)
    text_w = page["width"] - page["left"] - page["right"]
    ids = [int(e.get("id")) for e in d.body.iter("{%s}docPr" % WP)]
    if len(ids) != len(set(ids)):
        errs.append("wp:docPr ids are not unique: %s" % ids)
    marks = [(b.get(w("id")), b.get(w("name"))) for b in d.body.iter(w("bookmarkStart"))]
    for k in (0, 1):
        vals = [m[k] for m in marks]
        if len(vals) != len(set(vals)):
            errs.append("bookmark %s are not unique" % ("ids", "names")[k])
    for it, (idx, inl, data, descr) in zip(want, got):
        where = it["pointer"] + " (image)"
        src = image_bytes(it["image"], base_dir)
        if data != src:
            errs.append("%s: the embedded image is not the file given (%s bytes vs %d)"
                        % (where, None if data is None else len(data), len(src)))
        if (descr or "") != it["image"].get("alt", ""):
            errs.append("%s: alt text (wp:docPr descr) expected %r, got %r" % (where, it["image"].get("alt", ""), descr))
        ext = inl.find("wp:extent", NS)
        cx, cy = int(ext.get("cx")), int(ext.get("cy"))
        wpx, hpx, dx, dy = image_geometry(src)
        if not math.isclose(cx / cy, wpx / hpx, rel_tol=0.01):
            errs.append("%s: aspect ratio %.4f, the image's is %.4f" % (where, cx / cy, wpx / hpx))
        natural = wpx * 72.0 / (dx or 96.0)
        want_w = length_pt(it["width"]) if it.get("width") else natural
        want_w = min(want_w, text_w)
        if not math.isclose(cx / EMU_PER_PT, want_w, rel_tol=0.005, abs_tol=0.5):
            errs.append("%s: width expected %.1fpt (%s, text width %.1fpt), got %.1fpt"
                        % (where, want_w, "given" if it.get("width") else "natural", text_w, cx / EMU_PER_PT))
        if it.get("caption") and not caption_near(d, idx, it["caption"]):
            errs.append("%s: no Caption paragraph next to the image holding %r" % (where, it["caption"]))


def cache_points(el):
    """{idx: text} of a c:strCache / c:numCache / c:strLit / c:numLit, and its ptCount."""
    if el is None:
        return None, {}
    cnt = el.find("c:ptCount", NS)
    pts = {int(p.get("idx")): p.findtext("c:v", namespaces=NS) for p in el.findall("c:pt", NS)}
    return (int(cnt.get("val")) if cnt is not None else None), pts


def data_source(parent):
    """(formula, cache element) of a c:cat / c:val / c:xVal / c:yVal / c:tx."""
    if parent is None:
        return None, None
    for ref in ("numRef", "strRef", "multiLvlStrRef"):
        e = parent.find("c:%s" % ref, NS)
        if e is not None:
            cache = e.find("c:numCache", NS)
            if cache is None:
                cache = e.find("c:strCache", NS)
            if cache is None:
                cache = e.find("c:multiLvlStrCache", NS)
            return e.findtext("c:f", namespaces=NS), cache
    for lit in ("numLit", "strLit"):
        e = parent.find("c:%s" % lit, NS)
        if e is not None:
            return None, e
    v = parent.find("c:v", NS)
    return None, v


def workbook_range(wb, formula):
    sheet, _, ref = formula.rpartition("!")
    sheet = sheet.strip("'").replace("''", "'")
    ws = wb[sheet] if sheet else wb.worksheets[0]
    a, _, b = ref.replace("$", "").partition(":")
    r1, c1 = a1(a)
    r2, c2 = a1(b or a)
    return [ws.cell(r + 1, c + 1).value for r in range(r1, r2 + 1) for c in range(c1, c2 + 1)]


def same_num(a, b):
    if isinstance(a, float) and math.isnan(a):
        return b is None or (isinstance(b, float) and math.isnan(b))
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    except (TypeError, ValueError):
        return False


def category_matches(want, got_text, got_cell=None):
    """A category as the chart caches it: its text, or for a date cell its date or serial."""
    if isinstance(want, tuple):   # a date cell
        day, _ = iso_to_datetime(want[1])
        serial = (day - dt.datetime(1899, 12, 30)).total_seconds() / 86400
        return got_text in (day.strftime("%Y-%m-%d"), want[1]) or same_num(serial, got_text)
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return same_num(want, got_text)
    return got_text == want


def check_charts(d, spec, flow, base_dir, theme, errs):
    want = [it for it in flow if it["kind"] == "chart"]
    refs = chart_refs(d)
    parts = sorted(n for n in d.names if re.fullmatch(r"word/charts/chart\d+\.xml", n))
    shapes = [s for s in d.doc.inline_shapes if s.type == WD_INLINE_SHAPE.CHART]
    if not (len(refs) == len(parts) == len(want) == len(shapes)):
        errs.append("charts: spec has %d, document.xml references %d (python-docx sees %d), "
                    "the package has %d chart parts" % (len(want), len(refs), len(shapes), len(parts)))
    accents = [hexcolor(c) for c in (spec.get("theme") or {}).get("accent_colors") or []]
    for it, (idx, inl, part) in zip(want, refs):
        where = it["pointer"] + " (chart)"
        if part is None or part not in d.names:
            errs.append("%s: the c:chart relationship does not lead to a chart part" % where)
            continue
        kind, title, cats, series = expected_chart(spec, it["chart"], it.get("sheet"), base_dir)
        root = d.xml(part)
        plot = root.find("c:chart/c:plotArea", NS)
        el = plot.find("c:%s" % CHART_ELEMENT[kind], NS)
        if el is None:
            errs.append("%s: kind %s expected c:%s, plot area has %s"
                        % (where, kind, CHART_ELEMENT[kind], [etree.QName(x).localname for x in plot]))
            continue
        if kind in ("column", "bar"):
            bar_dir = el.find("c:barDir", NS).get("val")
            if bar_dir != ("col" if kind == "column" else "bar"):
                errs.append("%s: c:barDir %r for a %s chart" % (where, bar_dir, kind))
        if kind in ("column", "bar", "area", "line"):
            grouping = el.find("c:grouping", NS)
            stacked = grouping is not None and grouping.get("val") in ("stacked", "percentStacked")
            if stacked != bool(it["chart"].get("stacked")):
                errs.append("%s: stacked %r, c:grouping %r" % (where, it["chart"].get("stacked"),
                                                                 None if grouping is None else grouping.get("val")))
        if title:
            got_title = "".join(t.text or "" for t in root.iterfind("c:chart/c:title//a:t", NS))
            if got_title != title:
                errs.append("%s: title expected %r, got %r" % (where, title, got_title))
        legend = root.find("c:chart/c:legend", NS)
        want_legend = it["chart"].get("legend", "right")
        if want_legend == "none":
            if legend is not None:
                errs.append("%s: legend none, but the chart has a c:legend" % where)
        elif legend is None or legend.find("c:legendPos", NS).get("val") != LEGEND_POS[want_legend]:
            errs.append("%s: legend %s expected c:legendPos %s" % (where, want_legend, LEGEND_POS[want_legend]))
        sers = el.findall("c:ser", NS)
        if len(sers) != len(series):
            errs.append("%s: expected %d series, got %d" % (where, len(series), len(sers)))
        # the embedded workbook behind "Edit Data"
        wb = None
        ext = root.find("c:externalData", NS)
        prels = d.part_rels(part)
        if ext is None:
            errs.append("%s: no c:externalData (no embedded workbook)" % where)
        else:
            rel = prels.get(ext.get("{%s}id" % R))
            target = d.resolve(part, rel[1]) if rel else None
            if rel is None or rel[0] != REL_PACKAGE or target not in d.names:
                errs.append("%s: c:externalData does not lead to an embedded package: %r" % (where, rel))
            else:
                try:
                    wb = openpyxl.load_workbook(io.BytesIO(d.zip.read(target)))
                except Exception as e:  # noqa: BLE001 - any failure to read is the finding
                    errs.append("%s: openpyxl cannot read the embedded workbook %s: %s" % (where, target, e))
        for k, ((name, values, color), ser) in enumerate(zip(series, sers)):
            sw = "%s series %d" % (where, k)
            f_name, c_name = data_source(ser.find("c:tx", NS))
            got_name = (c_name.findtext(".//c:v", namespaces=NS) if c_name is not None and c_name.tag != "{%s}v" % C
                        else (c_name.text if c_name is not None else None))
            if got_name != name:
                errs.append("%s: name expected %r, got %r" % (sw, name, got_name))
            val_tag, cat_tag = ("c:yVal", "c:xVal") if kind == "scatter" else ("c:val", "c:cat")
            f_val, c_val = data_source(ser.find(val_tag, NS))
            cnt, pts = cache_points(c_val)
            if cnt != len(values):
                errs.append("%s: cached ptCount %r, expected %d values" % (sw, cnt, len(values)))
            for i, v in enumerate(values):
                if not same_num(v, pts.get(i)):
                    errs.append("%s: cached value %d expected %r, got %r" % (sw, i, v, pts.get(i)))
                    break
            f_cat, c_cat = data_source(ser.find(cat_tag, NS))
            if cats is not None:
                cnt, pts = cache_points(c_cat)
                if cnt != len(cats):
                    errs.append("%s: cached category count %r, expected %d" % (sw, cnt, len(cats)))
                for i, cv in enumerate(cats):
                    if not category_matches(cv, pts.get(i)):
                        errs.append("%s: cached category %d expected %r, got %r" % (sw, i, cv, pts.get(i)))
                        break
            # series colors: explicit, else the theme's accents in order
            want_color = hexcolor(color) or (accents[k % len(accents)]
                                             if accents and kind not in ("pie", "doughnut") else None)
            if want_color:
                # a scatter series is markers only: its color is the markers'
                got_color = ser.find("c:marker/c:spPr//a:srgbClr" if kind == "scatter"
                                     else "c:spPr//a:srgbClr", NS)
                if got_color is None or got_color.get("val").upper() != want_color:
                    errs.append("%s: color expected %s, got %r"
                                % (sw, want_color, None if got_color is None else got_color.get("val")))
            if wb is not None:
                if not f_val:
                    errs.append("%s: the values have no c:f into the embedded workbook" % sw)
                else:
                    cells = workbook_range(wb, f_val)
                    if len(cells) != len(values) or not all(same_num(a, b) for a, b in zip(values, cells)):
                        errs.append("%s: embedded workbook %s holds %r, expected %r" % (sw, f_val, cells[:8], values[:8]))
                if f_name:
                    cell = workbook_range(wb, f_name)[0]
                    if str(cell) != name:
                        errs.append("%s: embedded workbook %s holds name %r, expected %r" % (sw, f_name, cell, name))
                if cats is not None and f_cat:
                    cells = workbook_range(wb, f_cat)
                    if len(cells) != len(cats) or not all(
                            category_matches(w_, c_ if isinstance(c_, (int, float)) or isinstance(c_, str)
                                             else (c_.strftime("%Y-%m-%d") if isinstance(c_, dt.datetime) else c_))
                            for w_, c_ in zip(cats, cells)):
                        errs.append("%s: embedded workbook %s holds categories %r, expected %r"
                                    % (sw, f_cat, cells[:8], cats[:8]))
        if it.get("caption") and not caption_near(d, idx, it["caption"]):
            errs.append("%s: no Caption paragraph next to the chart holding %r" % (where, it["caption"]))
        # its size: width x height pixels (default 480 x 288) at 96 dpi, fitted to the text width
        ext = inl.find("wp:extent", NS)
        wpt = it["chart"].get("width", 480) * 0.75
        hpt = it["chart"].get("height", 288) * 0.75
        if wpt > d.text_width_twips / 20:
            hpt, wpt = hpt * (d.text_width_twips / 20) / wpt, d.text_width_twips / 20
        cx, cy = int(ext.get("cx")), int(ext.get("cy"))
        if not (math.isclose(cx / EMU_PER_PT, wpt, rel_tol=0.005, abs_tol=0.5)
                and math.isclose(cy / EMU_PER_PT, hpt, rel_tol=0.005, abs_tol=0.5)):
            errs.append("%s: size expected %.1f x %.1fpt, got %.1f x %.1fpt"
                        % (where, wpt, hpt, cx / EMU_PER_PT, cy / EMU_PER_PT))


def check_blocks_misc(d, spec, flow, theme, errs):
    """Page breaks, code blocks, quotes and rules."""
    n_breaks = sum(1 for it in flow if it["kind"] == "page_break")
    got_breaks = sum(1 for br in d.body.iter(w("br")) if br.get(w("type")) == "page") + \
        sum(1 for e in d.body.iter(w("pageBreakBefore")) if e.get(w("val"), "true") not in ("0", "false"))
    if got_breaks < n_breaks:
        errs.append("expected %d page breaks, got %d" % (n_breaks, got_breaks))
    # code: consecutive Code paragraphs, joined with line feeds
    groups, cur, last = [], [], None
    for i, (kind, el, in_sdt) in enumerate(d.items):
        if kind == "p" and body_kind(d, el) == "code":
            if cur and last != i - 1:
                groups.append("\n".join(cur))
                cur = []
            cur.append(xml_text(el))
            last = i
    if cur:
        groups.append("\n".join(cur))
    groups = [g.rstrip("\n") for g in groups]
    # code blocks next to each other in the flow read as one run of Code paragraphs
    want_code, prev = [], None
    for i, it in enumerate(flow):
        if it["kind"] == "code":
            text = it["text"].rstrip("\n")
            if prev == i - 1:
                want_code[-1] += "\n" + text
            else:
                want_code.append(text)
            prev = i
    if groups != want_code:
        errs.append("code blocks (Code paragraphs) expected %r, got %r"
                    % ([c[:60] for c in want_code], [g[:60] for g in groups]))
    if want_code:
        st = d.style_el("Code")
        fonts = st.find("w:rPr/w:rFonts", NS) if st is not None else None
        if fonts is None or fonts.get(w("ascii")) != theme["mono_font"]:
            errs.append("the Code style's font expected %r, got %r"
                        % (theme["mono_font"], None if fonts is None else dict(fonts.attrib)))
    # quotes: Quote paragraphs holding the text and the attribution, in order
    quote_paras = [xml_text(el) for kind, el, in_sdt in d.items if kind == "p" and body_kind(d, el) == "quote"]
    joined = "\n".join(quote_paras)
    pos = 0
    for it in flow:
        if it["kind"] != "quote":
            continue
        k = joined.find(it["text"], pos)
        if k < 0:
            errs.append("%s: no Quote paragraph holding %r" % (it["pointer"], it["text"][:60]))
            continue
        pos = k + len(it["text"])
        if it.get("attribution"):
            k2 = joined.find(it["attribution"], pos)
            if k2 < 0 or joined[pos:k2].count("\n") > 1:
                errs.append("%s: the attribution %r does not follow the quote" % (it["pointer"], it["attribution"]))
            else:
                pos = k2 + len(it["attribution"])
    # rules: empty paragraphs with a border
    n_rules = sum(1 for it in flow if it["kind"] == "rule")
    got_rules = 0
    for kind, el, _s in d.items:
        if kind != "p" or xml_text(el).strip():
            continue
        bdr = el.find("w:pPr/w:pBdr", NS)
        if bdr is None:
            sid = el.find("w:pPr/w:pStyle", NS)
            st = d.style_el(sid.get(w("val"))) if sid is not None else None
            bdr = st.find("w:pPr/w:pBdr", NS) if st is not None else None
        if bdr is not None and len(bdr):
            got_rules += 1
    if got_rules < n_rules:
        errs.append("expected %d horizontal rules (empty paragraphs with a border), got %d" % (n_rules, got_rules))


def check_toc(d, flow, errs):
    tocs = [it for it in flow if it["kind"] == "toc"]
    fs = [f for f in fields(d.body) if re.match(r"\s*TOC\b", f["instr"])]
    if len(fs) != len(tocs):
        errs.append("expected %d TOC fields, got %d" % (len(tocs), len(fs)))
    heads = [it for it in flow if it["kind"] == "heading"]
    head_paras = [el for kind, el, in_sdt in d.items if kind == "p" and not in_sdt and d.heading_level(el)]
    bookmarks = {}
    for p in head_paras:
        for b in p.iter(w("bookmarkStart")):
            bookmarks[b.get(w("name"))] = p
    for it, f in zip(tocs, fs):
        where = it["pointer"] + " (toc)"
        levels = it["levels"]
        if not f["dirty"]:
            errs.append("%s: the TOC field is not marked w:dirty (Word would not refresh it)" % where)
        m = re.search(r'\\o\s+"(\d)-(\d)"', f["instr"])
        if not m or (int(m.group(1)), int(m.group(2))) != (1, levels):
            errs.append("%s: TOC instruction %r lacks \\o \"1-%d\"" % (where, f["instr"], levels))
        if "\\h" not in f["instr"]:
            errs.append("%s: TOC instruction %r lacks \\h (entries as hyperlinks)" % (where, f["instr"]))
        # the pre-filled entries: paragraphs from the field's begin to its end
        paras = [el for kind, el, _s in d.items if kind == "p"]
        try:
            a = paras.index(f["begin_p"])
            b = paras.index(f["end_p"])
        except ValueError:
            errs.append("%s: the TOC field does not sit in body paragraphs" % where)
            continue
        entries = []
        for p in paras[a:b + 1]:
            m2 = re.fullmatch(r"toc ([1-9])", d.style_name(p).lower())
            if m2:
                entries.append((int(m2.group(1)), xml_text(p).split("\t")[0], p))
        want = [(h["level"], h["text"]) for h in heads if h["level"] <= levels]
        got = [(lv, t) for lv, t, _p in entries]
        if got != want:
            first = next((i for i, (g, e) in enumerate(zip(got, want)) if g != e), min(len(got), len(want)))
            errs.append("%s: %d pre-filled entries (styles 'toc N'), expected %d; first difference at #%d: "
                        "expected %r, got %r" % (where, len(got), len(want), first,
                                                 want[first] if first < len(want) else None,
                                                 got[first] if first < len(got) else None))
        for lv, t, p in entries:
            anchors = [h.get(w("anchor")) for h in p.iter(w("hyperlink"))]
            if not anchors or anchors[0] not in bookmarks:
                errs.append("%s: entry %r does not link to a bookmark in a heading (anchor %r)"
                            % (where, t, anchors[:1]))
                break
            if xml_text(bookmarks[anchors[0]]) != t:
                errs.append("%s: entry %r links to the heading %r" % (where, t, xml_text(bookmarks[anchors[0]])))
                break
            if not any(re.match(r"\s*PAGEREF\s+%s\b" % re.escape(anchors[0]), x["instr"]) for x in fields(p)):
                errs.append("%s: entry %r has no PAGEREF %s field" % (where, t, anchors[0]))
                break
        # the title before the entries
        title_paras = [p for p in paras[max(0, a - 2):a + 1] if xml_text(p).strip() == it["title"]]
        if not title_paras:
            errs.append("%s: no paragraph with the TOC title %r before the entries" % (where, it["title"]))


def uri_of(url):
    """url as a valid URI (RFC 3986): controls, spaces, non-ASCII bytes, "<>\\^`{|}
    and a % that starts no escape written as %XX, the way a relationship Target holds it."""
    raw = url.encode("utf-8")
    out = []
    for i, b in enumerate(raw):
        c = chr(b)
        bad = b <= 0x20 or b >= 0x7F or c in "\"<>\\^`{|}" or (
            c == "%" and not re.fullmatch(rb"[0-9A-Fa-f]{2}", raw[i + 1:i + 3]))
        out.append("%%%02X" % b if bad else c)
    return "".join(out)


def same_url(target, url):
    """A relationship Target is the spec's URL, as written or percent-encoded into a URI."""
    return target == url or target == uri_of(url)


def check_hyperlinks(d, spec, flow, errs):
    """Every run with a link is a w:hyperlink to an external relationship with the URL."""
    got = set()
    for h in d.body.iter(w("hyperlink")):
        rid = h.get("{%s}id" % R)
        if rid is None:
            continue
        rel = d.rels.get(rid)
        if rel is None:
            errs.append("w:hyperlink r:id %s is not declared" % rid)
            continue
        if not rel.is_external or rel.reltype != REL_HYPERLINK:
            errs.append("w:hyperlink %s: relationship not an external hyperlink (%s)" % (rid, rel.reltype))
        got.add((xml_text(h), rel.target_ref))
    for it in flow:
        for r in (it.get("runs") or []) if not it.get("md") else []:
            if "link" in r and not any(t.find(r["text"]) >= 0 and same_url(u, r["link"]) for t, u in got):
                errs.append("%s: no hyperlink %r -> %s" % (it["pointer"], r["text"], r["link"]))
        if it["kind"] == "list":
            pass   # list item runs are checked with the lists


def check_sections(d, spec, errs):
    page = page_of(spec)
    if not d.doc.sections:
        errs.append("no section properties")
        return
    for k, s in enumerate(d.doc.sections):
        where = "section %d" % k
        for label, got, want in (("page width", s.page_width, page["width"]),
                                 ("page height", s.page_height, page["height"]),
                                 ("top margin", s.top_margin, page["top"]),
                                 ("bottom margin", s.bottom_margin, page["bottom"]),
                                 ("left margin", s.left_margin, page["left"]),
                                 ("right margin", s.right_margin, page["right"])):
            if got is None or abs(got / 635 - want * TWIPS_PER_PT) > 1.01:
                errs.append("%s: %s expected %.2fpt (%d twips), got %s"
                            % (where, label, want, round(want * 20), None if got is None else "%.2fpt (%d twips)"
                               % (got / EMU_PER_PT, got / 635)))
        want_orient = WD_ORIENT.LANDSCAPE if page["landscape"] else WD_ORIENT.PORTRAIT
        if s.orientation != want_orient:
            errs.append("%s: orientation expected %s, got %s" % (where, want_orient, s.orientation))


def check_properties(d, spec, render_window, errs):
    md = spec.get("metadata") or {}
    cp = d.doc.core_properties
    kw = md.get("keywords")
    if isinstance(kw, list):
        kw = ", ".join(kw)
    for label, got, want in (("title", cp.title, md.get("title")), ("author", cp.author, md.get("author")),
                             ("subject", cp.subject, md.get("subject")), ("keywords", cp.keywords, kw),
                             ("description", cp.comments, md.get("description")),
                             ("category", cp.category, md.get("category"))):
        if (got or None) != want:
            errs.append("core property %s expected %r, got %r" % (label, want, got))
    created = cp.created
    if md.get("created"):
        value, _ = iso_to_datetime(md["created"])
        m = ISO_RE.match(md["created"])
        zone = m.group(8)
        if zone and zone not in ("Z", "z"):
            sign = 1 if zone[0] == "+" else -1
            hh, mm = int(zone[1:3]), int(zone[-2:]) if len(zone) > 3 else 0
            value -= sign * dt.timedelta(hours=hh, minutes=mm)
        if created is None or created.replace(tzinfo=None) != value.replace(microsecond=0):
            errs.append("core property created expected %s (UTC), got %s" % (value, created))
    elif render_window is not None:
        lo, hi = render_window
        if created is None or not (lo - dt.timedelta(seconds=2) <= created.replace(tzinfo=None)
                                   <= hi + dt.timedelta(seconds=2)):
            errs.append("core property created expected the time of the render (%s..%s UTC), got %s"
                        % (lo, hi, created))
    if md.get("company"):
        app = d.xml("docProps/app.xml") if "docProps/app.xml" in d.names else None
        got = app.findtext("{http://schemas.openxmlformats.org/officeDocument/2006/extended-properties}Company") \
            if app is not None else None
        if got != md["company"]:
            errs.append("app property Company expected %r, got %r" % (md["company"], got))


def header_footer_xml(d, section, kind):
    """The XML root of the default header or footer a section references, or None."""
    sect = section._sectPr
    ref = sect.find("w:%sReference" % kind, NS)
    for r in sect.findall("w:%sReference" % kind, NS):
        if r.get(w("type"), "default") == "default":
            ref = r
    if ref is None:
        return None
    rel = d.rels.get(ref.get("{%s}id" % R))
    if rel is None:
        return "missing"
    return etree.fromstring(rel.target_part.blob)


def check_header_footer(d, spec, errs):
    page = spec.get("page") or {}
    header = page.get("header", False)
    if header is True:
        header = (spec.get("metadata") or {}).get("title")
    numbers = page.get("page_numbers", True)
    for k, s in enumerate(d.doc.sections):
        hdr = header_footer_xml(d, s, "header")
        if hdr == "missing":
            errs.append("section %d: headerReference to an undeclared relationship" % k)
            hdr = None
        got = "\n".join(xml_text(p) for p in hdr.iter(w("p"))) if hdr is not None else ""
        if header:
            if got.strip() != header:
                errs.append("section %d: header text expected %r, got %r" % (k, header, got))
            if s.header.is_linked_to_previous and k == 0:
                errs.append("section %d: python-docx sees no header definition" % k)
        elif got.strip():
            errs.append("section %d: no header asked for, but the header says %r" % (k, got))
        ftr = header_footer_xml(d, s, "footer")
        if ftr == "missing":
            errs.append("section %d: footerReference to an undeclared relationship" % k)
            ftr = None
        instrs = ([f["instr"].split()[0].upper() for f in fields(ftr) if f["instr"].split()]
                  if ftr is not None else [])
        if numbers:
            if "PAGE" not in instrs or "NUMPAGES" not in instrs:
                errs.append("section %d: footer fields expected PAGE and NUMPAGES, got %s" % (k, instrs))
            text = " ".join(xml_text(p) for p in ftr.iter(w("p"))) if ftr is not None else ""
            if not re.search(r"Page\b.*\bof\b", text):
                errs.append("section %d: footer text %r does not read 'Page X of Y'" % (k, text))
        elif "PAGE" in instrs or "NUMPAGES" in instrs:
            errs.append("section %d: page_numbers false, but the footer has fields %s" % (k, instrs))


def check_theme(d, spec, theme, errs):
    given = spec.get("theme") or {}
    name = next((n for n in d.names if re.fullmatch(r"word/theme/theme\d*\.xml", n)), None)
    if name is None:
        errs.append("no word/theme/theme1.xml")
        return
    root = d.xml(name)
    fs = root.find(".//a:fontScheme", NS)
    major = fs.find("a:majorFont/a:latin", NS).get("typeface")
    minor = fs.find("a:minorFont/a:latin", NS).get("typeface")
    if minor != theme["font"]:
        errs.append("theme minor (body) font expected %r, got %r" % (theme["font"], minor))
    if major != theme["heading_font"]:
        errs.append("theme major (heading) font expected %r, got %r" % (theme["heading_font"], major))
    accents = [hexcolor(c) for c in given.get("accent_colors") or []]
    cs = root.find(".//a:clrScheme", NS)
    for i, want in enumerate(accents[:6]):
        e = cs.find("a:accent%d//a:srgbClr" % (i + 1), NS)
        if e is None or e.get("val").upper() != want:
            errs.append("theme accent%d expected %s, got %r" % (i + 1, want, None if e is None else e.get("val")))
    # the body font size: docDefaults or Normal
    styles = d.xml("word/styles.xml")
    sizes = [e.get(w("val")) for e in styles.findall("w:docDefaults/w:rPrDefault/w:rPr/w:sz", NS)]
    normal = d.style_el("Normal")
    ns = normal.find("w:rPr/w:sz", NS) if normal is not None else None
    got = ns.get(w("val")) if ns is not None else (sizes[0] if sizes else None)
    if got is None or float(got) != float(theme["font_size"]) * 2:
        errs.append("body font size expected %s half-points, got %r" % (float(theme["font_size"]) * 2, got))


def check_document(spec, path, base_dir, render_window=None, row_limit=None):
    """Every comparison of a rendered .docx with its spec; returns the differences."""
    errs = []
    d = DocxDoc(path)
    page = page_of(spec)
    d.text_width_twips = round((page["width"] - page["left"] - page["right"]) * TWIPS_PER_PT)
    flow = expected_flow(spec)
    theme = theme_of(spec)
    d.mono_font = theme["mono_font"]
    for check in (lambda: check_headings(d, flow, errs),
                  lambda: check_paragraphs(d, flow, theme, errs),
                  lambda: check_lists(d, flow, errs),
                  lambda: check_tables(d, flow, base_dir, theme, errs, row_limit),
                  lambda: check_images(d, spec, flow, base_dir, errs),
                  lambda: check_charts(d, spec, flow, base_dir, theme, errs),
                  lambda: check_captions(d, flow, errs),
                  lambda: check_blocks_misc(d, spec, flow, theme, errs),
                  lambda: check_toc(d, flow, errs),
                  lambda: check_hyperlinks(d, spec, flow, errs),
                  lambda: check_sections(d, spec, errs),
                  lambda: check_properties(d, spec, render_window, errs),
                  lambda: check_header_footer(d, spec, errs),
                  lambda: check_theme(d, spec, theme, errs)):
        try:
            check()
        except Exception as e:  # noqa: BLE001 - a reader crash on a malformed file is a finding
            import traceback
            errs.append("checker crashed (the document is not as expected): %s\n%s"
                        % (e, traceback.format_exc(limit=3)))
    return errs


# =========================================================================== feature specs

def png_with_dpi(w, h, dpi, color=(20, 90, 160)):
    raw = b"".join(b"\x00" + bytes(color) * w for _ in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    ppm = round(dpi / 0.0254)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"pHYs", struct.pack(">IIB", ppm, ppm, 1))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


RUNS_SPEC = {
    "metadata": {"title": "R&D <notes> \"2026\" & 'more'", "author": "Zoë Ünal", "subject": "Runs & escapes",
                 "keywords": "a, b & c", "created": "2026-03-01T09:30:00-05:00",
                 "description": "Every kind of run", "category": "Tests"},
    "page": {"header": True},
    "blocks": [
        {"type": "heading", "level": 1, "text": "Runs, escapes & <markup>"},
        {"type": "heading", "level": 2, "runs": [{"text": "Mixed "}, {"text": "heading", "italic": True}]},
        {"type": "paragraph", "runs": [
            {"text": "plain "}, {"text": "bold", "bold": True}, {"text": " "},
            {"text": "italic", "italic": True}, {"text": " "},
            {"text": "underline", "underline": True}, {"text": " "},
            {"text": "strike", "strike": True}, {"text": " "},
            {"text": "red", "color": "#C00000"}, {"text": " "},
            {"text": "big", "size": 18}, {"text": " "},
            {"text": "half", "size": 10.5}, {"text": " "},
            {"text": "Georgia", "font": "Georgia"}, {"text": " E=mc"},
            {"text": "2", "superscript": True}, {"text": " H"}, {"text": "2", "subscript": True},
            {"text": "O "}, {"text": "x = 1;", "code": True}, {"text": " "},
            {"text": "all", "bold": True, "italic": True, "underline": True, "strike": True,
             "color": "00B050", "size": 14, "font": "Cambria"}, {"text": " "},
            {"text": "a link", "link": "https://example.com/a?b=1&c=<2>"}, {"text": " "},
            {"text": "bold link", "link": "HTTP://EXAMPLE.COM/Upper", "bold": True}, {"text": " "},
            {"text": "mail", "link": "mailto:someone@example.com"}, {"text": " "},
            {"text": "ftp", "link": "ftp://files.example.com/x.csv"}]},
        {"type": "paragraph", "text": "Escapes: & < > \" ' ]]> &amp; &lt; <w:t> café 中文 😀 \u00a0nbsp"},
        {"type": "paragraph", "text": "col1\tcol2\tcol3\nsecond line\n\nafter an empty line\t"},
        {"type": "paragraph", "runs": [{"text": "run\twith tab", "bold": True}, {"text": "\nand a break"}]},
        {"type": "paragraph", "text": "  leading and trailing spaces  ", "align": "center"},
        {"type": "paragraph", "text": "right", "align": "right"},
        {"type": "paragraph", "text": "left", "align": "left"},
        {"type": "paragraph", "text": "Justified text " * 20, "align": "justify"},
        {"type": "list", "items": ["item\twith tab", {"runs": [{"text": "item "}, {"text": "linked", "link": "https://example.com/item"}]},
                                   "two\nlines"]},
        {"type": "quote", "runs": [{"text": "Quoted "}, {"text": "words", "bold": True}], "attribution": "Someone & co"},
        {"type": "quote", "text": "No attribution"},
        {"type": "code", "text": "if (a < b && c > d) {\n\treturn \"x\";\n}\n"},
        {"type": "code", "language": "python", "text": "print('hi')"},
        {"type": "rule"},
        {"type": "rule"},
        {"type": "page_break"},
        {"type": "heading", "level": 6, "text": "Level six"},
        {"type": "heading", "level": 5, "text": "Level five"},
        {"type": "heading", "level": 4, "text": "Level four"},
        {"type": "heading", "level": 3, "text": "Level three"},
    ],
}


def nested(depth, prefix):
    """A list item nested depth levels deep."""
    item = "%s level %d" % (prefix, depth)
    for lv in range(depth - 1, 0, -1):
        item = {"text": "%s level %d" % (prefix, lv), "items": [item, "%s sibling %d" % (prefix, lv + 1)]}
    return item


LISTS_SPEC = {
    "metadata": {"created": "2026-01-01"},
    "blocks": [
        {"type": "heading", "level": 1, "text": "Lists"},
        {"type": "list", "items": [nested(9, "bullet"), "bullet after"]},
        {"type": "list", "ordered": True, "items": [nested(9, "number"), "number after"]},
        {"type": "list", "ordered": True, "items": ["first list, one", "first list, two", "first list, three"]},
        {"type": "list", "ordered": True, "items": ["second list restarts at 1", "second list, two"]},
        {"type": "paragraph", "text": "between"},
        {"type": "list", "ordered": True, "start": 0, "items": ["starts at zero", "one"]},
        {"type": "list", "ordered": True, "start": 7, "items": ["starts at seven", "eight"]},
        {"type": "list", "items": ["bullets again", {"text": "nested", "items": ["a", "b"]}]},
        {"type": "list", "ordered": True, "items": [
            {"text": "parent one", "items": ["child a", "child b"]},
            {"text": "parent two", "items": ["child a again", "child b again"]}]},
        {"type": "list", "items": [{"runs": [{"text": "bold", "bold": True}, {"text": " item"}]}]},
    ],
}

CSV_TEXT = ("name,when,amount,share,count,flag,code,note\n"
            "Alpha,2026-01-31,1234.5,0.125,1200,true,007,\"quoted, with comma\"\n"
            "Beta,2026-02-28,-99.99,0.5,-3,FALSE,0100,\"line one\nline two\"\n"
            "Gamma,,0,0,0,1,12,\n")
JSONL_TEXT = ('{"sku": "A-1", "qty": 3, "price": 9.5, "at": "2026-05-01T08:15:00"}\n'
              '["B-2", 12, 0.25, "2026-05-02T17:45:00"]\n'
              '{"sku": "C-3", "qty": null}\n')

TABLES_SPEC = {
    "metadata": {"created": "2026-01-01"},
    "theme": {"header_fill": "#385723", "header_font_color": "#FFFF00"},
    "blocks": [
        {"type": "heading", "level": 1, "text": "Typed columns"},
        {"type": "table", "caption": "Every column type",
         "columns": [{"header": "String", "type": "string"}, {"header": "Number", "type": "number"},
                     {"header": "Integer", "type": "integer"}, {"header": "Currency", "type": "currency"},
                     {"header": "Percent", "type": "percent"}, {"header": "Date", "type": "date"},
                     {"header": "Datetime", "type": "datetime"}, {"header": "Boolean", "type": "boolean"},
                     {"header": "Auto"}],
         "rows": [["a & b", 1234.567, 1234567, 455000, 0.10436893203883502, "2026-03-31",
                   "2026-03-31T14:30:00", True, 12],
                  ["<tag>", -0.5, -42, -1234.5, 1.5, "1900-01-01", "2026-12-31 23:59", False, "text"],
                  [None, 0, 0, 0, 0, None, None, None, None],
                  ["number stays text", "12", 3.7, 1e6, 0.0006, {"date": "2026-07-04"},
                   {"datetime": "2026-07-04T06:05:00+02:00"}, None, 1e20]]},
        {"type": "table", "caption": "Cell objects and formats",
         "columns": [{"header": "Label"}, {"header": "Value", "number_format": "#,##0.000"},
                     {"header": "Link"}, {"header": "Own", "type": "currency", "align": "center"}],
         "rows": [["formula", {"formula": "=1+1", "value": 2}, {"url": "https://example.com/x", "text": "x"},
                   {"value": 12.5, "number_format": "0.0 \"kg\""}],
                  ["formula text", {"formula": "=A1", "value": "cached"}, {"url": "mailto:a@example.com"},
                   {"value": -7, "style": {"bold": True, "italic": True, "color": "#FF0000"}}],
                  ["formula bool", {"formula": "=TRUE()", "value": True}, None,
                   {"value": 3, "number_format": "$#,##0;[Red]-$#,##0;\"zero\""}],
                  ["no cache", {"formula": "=NOW()"}, None, {"value": 0, "number_format": "$#,##0;-$#,##0;\"zero\""}],
                  [{"value": "styled", "style": {"bold": True}}, {"value": 0.5, "number_format": "0%"}, None,
                   {"date": "2026-02-03", "number_format": "d mmmm yyyy"}]]},
        {"type": "table", "caption": "Object rows",
         "columns": [{"header": "Account", "key": "account", "align": "left"},
                     {"header": "ARR", "key": "arr", "type": "currency", "align": "right"},
                     {"header": "Renewal", "key": "renewal", "type": "date", "number_format": "mmm d, yyyy"}],
         "rows": [{"account": "Harbor", "arr": 184000, "renewal": "2029-06-30"},
                  {"arr": 1, "account": "Summit"}, {}]},
        {"type": "table", "header": False, "columns": [{"header": "hidden"}, {"type": "integer"}],
         "rows": [["no header row", 1], ["second", 2000]]},
        {"type": "table", "rows": [["no columns", 1, 2.5, True], ["ragged"]]},
        {"type": "table", "caption": "From a CSV file",
         "columns": [{"header": "Name"}, {"header": "When", "type": "date"},
                     {"header": "Amount", "type": "currency"}, {"header": "Share", "type": "percent"},
                     {"header": "Count", "type": "integer"}, {"header": "Flag", "type": "boolean"},
                     {"header": "Code"}, {"header": "Note"}],
         "data": {"path": "data.csv"}},
        {"type": "table", "caption": "CSV header names",
         "data": {"path": "data.csv", "format": "csv", "header": True}},
        {"type": "table", "caption": "From JSON Lines",
         "columns": [{"header": "SKU", "key": "sku"}, {"header": "Qty", "key": "qty", "type": "integer"},
                     {"header": "Price", "key": "price", "type": "currency"},
                     {"header": "At", "key": "at", "type": "datetime"}],
         "data": {"path": "rows.jsonl"}},
        {"type": "heading", "level": 1, "text": "A long table"},
        {"type": "table", "caption": "Runs over several pages",
         "columns": [{"header": "Row", "type": "integer"}, {"header": "Description"},
                     {"header": "Amount", "type": "currency"}],
         "rows": [[i, "Line item number %d with a description long enough to wrap in a narrow column" % i,
                   i * 101.25] for i in range(1, 151)]},
    ],
}


def chart_block(kind, i, **kw):
    b = {"type": "chart", "kind": kind, "title": "%s chart %d" % (kind, i),
         "categories": ["North", "South", "East", "West"],
         "series": [{"name": "2025", "values": [10, 20.5, 30, 40]},
                    {"name": "2026", "values": [12, 18, 33.25, 47], "color": "#7030A0"}],
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
    "metadata": {"created": "2026-01-01"},
    "theme": {"accent_colors": ["#112233", "#445566", "#778899"]},
    "blocks": [{"type": "heading", "level": 1, "text": "Every chart kind"}]
    + [chart_block(k, i) for i, k in enumerate(CHART_ELEMENT)]
    + [chart_block("column", 10, stacked=True, legend="top"),
       chart_block("bar", 11, stacked=True, legend="left"),
       chart_block("area", 12, stacked=True, legend="none"),
       {"type": "chart", "kind": "line", "series": [{"values": [3, 1, 2]}, {"values": [1, 1, 1]}]},
       {"type": "chart", "kind": "column", "categories": [2024, 2025, 2026],
        "series": [{"name": "numeric categories", "values": [1e-3, 1e9, -5]}], "width": 300, "height": 200}],
}

IMAGES_SPEC = {
    "metadata": {"created": "2026-01-01"},
    "page": {"size": "A5", "margins": {"left": "2cm", "right": "2cm"}},
    "blocks": [
        {"type": "heading", "level": 1, "text": "Images"},
        {"type": "image", "image": {"data": "<small>", "alt": "a small red image"}, "caption": "Natural size"},
        {"type": "image", "image": {"path": "wide.png", "alt": "wider than the page"}, "caption": "Fitted to the text width"},
        {"type": "image", "image": {"path": "dpi300.png", "alt": "300 dpi"}},
        {"type": "image", "image": {"path": "photo.jpg", "alt": "a JPEG", "format": "jpeg"}, "width": "5cm",
         "caption": "Five centimetres"},
        {"type": "image", "image": {"path": "sub/dir/logo.png"}, "width": 36},
        {"type": "paragraph", "text": "After the images."},
    ],
}

PAGE_SPEC = {
    "metadata": {"title": "Landscape", "created": "2026-01-01"},
    "page": {"size": "A4", "orientation": "landscape",
             "margins": {"top": "20mm", "bottom": 36, "left": "0.5in", "right": "2.5cm"},
             "header": "Confidential & internal", "page_numbers": False},
    "blocks": [{"type": "heading", "level": 1, "text": "A landscape page"},
               {"type": "table", "columns": [{"header": "A"}, {"header": "B", "type": "integer"}],
                "rows": [["wide", 1]]}],
}

NO_METADATA_SPEC = {"blocks": [{"type": "paragraph", "text": "No metadata, no header; page numbers by default."}]}

SHEETS_SPEC = {
    "metadata": {"title": "Workbook as a document", "created": "2026-01-01"},
    "sheets": [
        {"name": "Sales & costs",
         "columns": [{"header": "Region"}, {"header": "Revenue", "type": "currency"},
                     {"header": "Units", "type": "integer"}, {"header": "Day", "type": "date"}],
         "rows": [["North", 1200.5, 10, "2026-01-05"], ["South", 980, 7, "2026-01-06"],
                  [{"value": "Total", "style": {"bold": True}}, {"formula": "=SUM(B2:B3)", "value": 2180.5},
                   {"formula": "=SUM(C2:C3)", "value": 17}, None]],
         "charts": [{"kind": "column", "title": "Revenue", "categories": "A2:A3",
                     "series": [{"name": "=B1", "values": "B2:B3"}]},
                    {"kind": "pie", "categories": "'Sales & costs'!A2:A3",
                     "series": [{"name": "Units", "values": "='Sales & costs'!C2:C3"}]}]},
        {"rows": [["unnamed sheet", 1], ["no header", 2]],
         "charts": [{"kind": "line", "categories": ["a", "b"], "series": [{"name": "Lit", "values": [1, 2]}]}]},
        {"name": "Merged", "header": False,
         "rows": [[None, None, None], ["x", 1, 2]],
         "merges": [{"range": "A1:C1", "value": "A merged title"}]},
    ],
}

SLIDES_SPEC = {
    "metadata": {"title": "Deck as a document", "created": "2026-01-01"},
    "slides": [
        {"layout": "title", "title": "Deck title", "subtitle": "The subtitle", "notes": "Opening notes"},
        {"layout": "section", "title": "A section"},
        {"title": "Content slide", "bullets": ["one", {"text": "two", "items": ["two a", "two b"]}],
         "notes": "Content notes"},
        {"layout": "two_column", "title": "Two columns", "left": ["left 1", "left 2"], "right": ["right 1"]},
        {"layout": "table", "title": "Table slide",
         "table": {"columns": [{"header": "Region"}, {"header": "Q2", "type": "currency"}],
                   "rows": [["North", 455000], ["South", 310000]]}},
        {"layout": "image", "title": "Image slide", "image": {"data": "<small>", "alt": "img"}},
        {"layout": "chart", "title": "Chart slide",
         "chart": {"kind": "bar", "categories": ["N", "S"], "series": [{"name": "Q2", "values": [455, 310]}]},
         "notes": "Chart notes"},
        {"layout": "blank", "notes": "Blank slide notes"},
    ],
}

MARKDOWN_SPEC = {
    "metadata": {"created": "2026-01-01"},
    "blocks": [
        {"type": "toc", "levels": 2},
        {"type": "markdown", "text":
            "# Markdown heading\n\nA paragraph with **bold**, *italic*, ~~struck~~ and `code`.\n\n"
            "## Second level\n\n- one\n- two\n  - two a\n  - two b\n- three\n\n"
            "1. first\n2. second\n\n"
            "| Name | Value |\n|:-----|------:|\n| a | 1 |\n| b | 2 |\n\n"
            "```\nfenced code\n  indented\n```\n\n> quoted text\n\n---\n\nLast paragraph.\n"},
        {"type": "markdown", "text": "### Third level\n\n1. again from one\n2. two\n"},
    ],
}

FEATURE_SPECS = {
    "runs": RUNS_SPEC, "lists": LISTS_SPEC, "tables": TABLES_SPEC, "charts": CHARTS_SPEC,
    "images": IMAGES_SPEC, "page": PAGE_SPEC, "no_metadata": NO_METADATA_SPEC,
    "sheets": SHEETS_SPEC, "slides": SLIDES_SPEC, "markdown": MARKDOWN_SPEC,
}


def write_feature_files(directory):
    """The files the feature specs name, beside them."""
    d = Path(directory)
    (d / "data.csv").write_text(CSV_TEXT, encoding="utf-8", newline="")
    (d / "rows.jsonl").write_text(JSONL_TEXT, encoding="utf-8")
    (d / "wide.png").write_bytes(png_bytes(w=2400, h=300))
    (d / "dpi300.png").write_bytes(png_with_dpi(600, 300, 300))
    shutil.copy(SAMPLES / "images" / "regional_trend.jpg", d / "photo.jpg")
    (d / "sub" / "dir").mkdir(parents=True, exist_ok=True)
    shutil.copy(SAMPLES / "images" / "kiln_logo.png", d / "sub" / "dir" / "logo.png")


def materialize(spec):
    """The spec with its <small> image placeholders filled in."""
    text = json.dumps(spec).replace('"<small>"', json.dumps(png_b64(w=40, h=30)))
    return json.loads(text)


# =========================================================================== fixtures

def utcnow():
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class Rendered:
    def __init__(self, name, spec_path, spec, out, window, failure):
        self.name, self.spec_path, self.spec, self.out = name, spec_path, spec, out
        self.window, self.failure = window, failure

    @property
    def base_dir(self):
        return self.spec_path.parent

    def docx(self):
        if self.out is None:
            pytest.fail("rendering %s to .docx failed:\n%s" % (self.spec_path, self.failure))
        return self.out


def render_docx(name, spec_path, out, *extra, timeout=1200):
    """Render once; a failure (or a render slower than timeout) is kept for the tests that
    need the file, rather than failing the whole module's fixture."""
    before = utcnow().replace(microsecond=0)
    try:
        proc = run_kiln("render", spec_path, "-o", out, *extra, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Rendered(name, Path(spec_path), load_json(spec_path), None, None,
                        "no result after %d s" % timeout)
    after = utcnow()
    ok = proc.returncode == 0 and Path(out).is_file()
    return Rendered(name, Path(spec_path), load_json(spec_path), Path(out) if ok else None,
                    (before, after), None if ok else describe(proc))


SAMPLE_NAMES = [p.stem for p in sample_specs()]


@pytest.fixture(scope="module")
def docx_samples(tmp_path_factory, kiln_bin, sample_data_ready, long_report_ready):
    """Every samples/*.json and the long report rendered to .docx once: {name: Rendered}."""
    d = tmp_path_factory.mktemp("docx_samples")
    out = {}
    for spec in sample_specs():
        out[spec.stem] = render_docx(spec.stem, spec, d / (spec.stem + ".docx"))
    out["long_report"] = render_docx("long_report", long_report_ready, d / "long_report.docx")
    return out


@pytest.fixture(scope="module")
def docx_features(tmp_path_factory, kiln_bin):
    """Each FEATURE_SPECS entry rendered once: {name: Rendered}."""
    d = tmp_path_factory.mktemp("docx_features")
    write_feature_files(d)
    out = {}
    for name, spec in FEATURE_SPECS.items():
        sp = write_spec(d, materialize(spec), name + ".json")
        out[name] = render_docx(name, sp, d / (name + ".docx"))
    return out


@pytest.fixture(scope="module")
def all_pdfs(tmp_path_factory, docx_samples, docx_features):
    """ONE LibreOffice run over every rendered document but the 200,000-row one:
    (CompletedProcess, {docx path: pdf path or None})."""
    files = [r.out for name, r in sorted(docx_samples.items()) if r.out is not None and name not in BIG_SAMPLES]
    files += [r.out for r in docx_features.values() if r.out is not None]
    d = tmp_path_factory.mktemp("docx_pdf")
    return soffice_convert(files, d, timeout=900)


def pdf_of(all_pdfs, rendered):
    proc, pdfs = all_pdfs
    pdf = pdfs.get(rendered.docx())
    assert pdf is not None, "LibreOffice made no PDF of %s:\n%s" % (rendered.out, proc.stdout[-3000:])
    return pdf


def squeeze(s):
    return re.sub(r"\s+", "", s)


def words_in_order(words, text, gap=160):
    """The words appear in text in this order, each within gap characters of the one before
    (a wrapped table cell whose lines pdftotext reads apart)."""
    if len(words) < 2:
        return False
    start = text.find(words[0])
    while start >= 0:
        pos, ok = start + len(words[0]), True
        for word in words[1:]:
            k = text.find(word, pos)
            if k < 0 or k - pos > gap:
                ok = False
                break
            pos = k + len(word)
        if ok:
            return True
        start = text.find(words[0], start + 1)
    return False


def check_pdf_text(text, spec, base_dir, rows_per_table=25):
    """The PDF shows the headings, the table cells, the TOC entries, the header and the
    page numbers."""
    errs = []
    flat = re.sub(r"\s+", " ", text)
    sq = squeeze(text)
    sq_nohyphen = sq.replace("-", "")
    flow = expected_flow(spec)
    for it in flow:
        if it["kind"] == "heading" and squeeze(it["text"]) not in sq:
            errs.append("PDF lacks the heading %r" % it["text"])
    missing = []
    for it in flow:
        if it["kind"] != "table":
            continue
        for row in expected_table_rows(it["t"], base_dir, limit=rows_per_table):
            for cell in row:
                want = cell.text
                if want is None or not want.strip():
                    continue
                if it.get("md"):
                    want = strip_inline_md(want)
                # pdftotext drops the hyphen where a line breaks after one ("2026-03-" / "31"),
                # and may read a wrapped cell's lines apart, with the next cell's text between
                # them ("Fleet electrification, 2026-09-07 first 12 vans")
                if squeeze(want) not in sq and squeeze(want).replace("-", "") not in sq_nohyphen \
                        and not words_in_order(want.split(), flat):
                    missing.append(want)
    if missing:
        errs.append("PDF lacks %d table cells, e.g. %r" % (len(missing), missing[:10]))
    heads = [it for it in flow if it["kind"] == "heading"]
    for toc in (it for it in flow if it["kind"] == "toc"):
        for h in heads:
            if h["level"] > toc["levels"]:
                continue
            pat = re.escape(re.sub(r"\s+", " ", h["text"]).strip()).replace("\\ ", r"\s*") + r"[\s.·…_\-]*\d+"
            if not re.search(pat, flat):
                errs.append("PDF lacks the TOC entry %r followed by its page number" % h["text"])
    page = spec.get("page") or {}
    header = page.get("header")
    if header is True:
        header = (spec.get("metadata") or {}).get("title")
    if header and squeeze(header) not in sq:
        errs.append("PDF lacks the page header %r" % header)
    if page.get("page_numbers", True) and not re.search(r"Page\s*1\s*of\s*\d+", flat):
        errs.append("PDF lacks a 'Page 1 of N' footer")
    return errs


# =========================================================================== samples

def test_samples_exist(long_report_ready):
    assert "business_report" in SAMPLE_NAMES, "samples/business_report.json is missing"
    assert long_report_ready.is_file()


def test_business_report_covers_the_issue():
    """The sample report holds everything issue 3 lists (so editing it cannot quietly drop a feature)."""
    spec = load_json(SAMPLES / "business_report.json")
    blocks = spec["blocks"]
    kinds = [b["type"] for b in blocks]
    for k in ("toc", "heading", "paragraph", "list", "table", "image", "chart", "page_break", "code",
              "quote", "rule", "markdown"):
        assert k in kinds, "business_report has no %s block" % k
    assert {b.get("level", 1) for b in blocks if b["type"] == "heading"} >= {1, 2, 3}
    flags = set()
    for b in blocks:
        for r in b.get("runs", []):
            flags |= {k for k in r if k != "text"}
    assert flags >= {"bold", "italic", "underline", "strike", "color", "size", "font", "superscript",
                     "subscript", "code", "link"}, flags
    depth = max(max(d for d, _t, _r in flat_items(b["items"])) for b in blocks if b["type"] == "list")
    assert depth >= 5, "the deepest list has %d levels, the issue asks for 6" % (depth + 1)
    assert sum(1 for b in blocks if b["type"] == "list" and b.get("ordered")) >= 3
    tables = [b for b in blocks if b["type"] == "table"]
    assert len(tables) >= 3 and all(t.get("caption") for t in tables)
    types = {c.get("type") for t in tables for c in t.get("columns", [])}
    assert types >= {"currency", "percent", "integer", "date"}, types
    assert any("data" in t for t in tables), "no CSV-backed table"
    assert sum(1 for b in blocks if b["type"] == "chart" and b.get("caption")) >= 2
    assert sum(1 for b in blocks if b["type"] == "image") >= 2
    assert spec["page"].get("header") is True and spec["page"].get("page_numbers") is True
    md = spec["metadata"]
    assert all(md.get(k) for k in ("title", "author", "subject", "keywords", "created"))


@pytest.mark.parametrize("name", SAMPLE_NAMES + ["long_report"])
def test_sample_renders_and_passes_ooxml_check(docx_samples, name):
    out = docx_samples[name].docx()
    with open(out, "rb") as fh:
        assert fh.read(4) == b"PK\x03\x04"
    if name in BIG_SAMPLES:
        # Half a gigabyte of document.xml is a minute of schema validation of 200,000 rows
        # alike: the package is checked with its table cut to its first rows and its last,
        # every other byte as written; every row is read streaming (test_big_sample_streamed).
        out = trimmed_table_copy(out, Path(out).with_name(Path(out).stem + "-trimmed.docx"))
    assert_ooxml_ok(out)


def trimmed_table_copy(src, dst, keep=1000):
    """A copy of the .docx src with the rows of its table past the first `keep` left out
    but for the last one, every other part and byte as they are."""
    start = re.compile(rb"<w:tr[ >]")
    with zipfile.ZipFile(src) as z, z.open("word/document.xml") as fh:
        starts, carry, base = [], b"", 0
        while True:  # where each row starts, a megabyte at a time
            chunk = fh.read(1 << 20)
            data = carry + chunk
            for m in start.finditer(data):
                if base + m.start() not in starts[-1:]:
                    starts.append(base + m.start())
            tail = max(0, len(data) - 6)
            base, carry = base + tail, data[tail:]
            if not chunk:
                break
    cut_from, cut_to = starts[keep], starts[-1]
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as o:
        for info in z.infolist():
            if info.filename != "word/document.xml":
                o.writestr(info, z.read(info.filename))
                continue
            with z.open(info) as fh, o.open(info.filename, "w") as w_out:
                at = 0
                while True:
                    chunk = fh.read(1 << 20)
                    if not chunk:
                        break
                    lo, hi = at, at + len(chunk)
                    # keep [0, cut_from) and [cut_to, end)
                    if hi <= cut_from or lo >= cut_to:
                        w_out.write(chunk)
                    else:
                        if lo < cut_from:
                            w_out.write(chunk[:cut_from - lo])
                        if hi > cut_to:
                            w_out.write(chunk[max(0, cut_to - lo):])
                    at = hi
    return dst


@pytest.mark.parametrize("name", [n for n in SAMPLE_NAMES if n not in BIG_SAMPLES] + ["long_report"])
def test_sample_matches_spec(docx_samples, name):
    r = docx_samples[name]
    errs = check_document(r.spec, r.docx(), r.base_dir, r.window)
    assert not errs, "%s.docx differs from its spec:\n%s" % (name, "\n".join(errs[:80]))


@pytest.mark.parametrize("name", [n for n in SAMPLE_NAMES if n not in BIG_SAMPLES] + ["long_report"])
def test_sample_pdf_shows_the_content(docx_samples, all_pdfs, name):
    r = docx_samples[name]
    pdf = pdf_of(all_pdfs, r)
    errs = check_pdf_text(pdf_text(pdf), r.spec, r.base_dir)
    assert not errs, "%s.pdf (LibreOffice):\n%s" % (name, "\n".join(errs[:40]))


def test_long_report_has_100_pages(docx_samples, all_pdfs):
    pdf = pdf_of(all_pdfs, docx_samples["long_report"])
    pages = pdf_pages(pdf)
    assert pages >= 100, "the long report is %d pages in LibreOffice, the issue asks for 100+" % pages


def test_business_report_targets(docx_samples, tmp_path):
    """What the issue names for the sample report, read straight from the file."""
    r = docx_samples["business_report"]
    d = DocxDoc(r.docx())
    levels = [d.num(p)[0] for p in d.paragraphs if d.num(p) is not None]
    assert max(levels) >= 5, "no list paragraph at w:ilvl 5 (6 levels deep): %s" % sorted(set(levels))
    flow = expected_flow(r.spec)
    ordered = [it for it in flow if it["kind"] == "list" and it["ordered"]]
    assert len(ordered) >= 3
    assert len(d.tables) >= 4
    assert len([s for s in d.doc.inline_shapes if s.type == WD_INLINE_SHAPE.PICTURE]) == 2
    assert len([n for n in d.names if re.fullmatch(r"word/charts/chart\d+\.xml", n)]) == 2
    assert d.doc.core_properties.title == r.spec["metadata"]["title"]
    hdr = header_footer_xml(d, d.doc.sections[0], "header")
    assert hdr is not None and r.spec["metadata"]["title"] in xml_text(hdr)
    # every embedded workbook is itself a valid package
    embedded = [n for n in d.names if n.startswith("word/embeddings/")]
    assert len(embedded) == 2, embedded
    files = []
    for n in embedded:
        f = tmp_path / Path(n).name
        f.write_bytes(d.zip.read(n))
        files.append(f)
    assert_ooxml_ok(*files)


def stream_table_rows(fh, keep):
    """The rows of word/document.xml read a megabyte at a time (the 200,000-row export's
    is half a gigabyte of XML): (row count, rows with w:cantSplit, the first `keep` rows
    and the last, each as its w:tr element)."""
    start = re.compile(rb"<w:tr[ >]")
    rows = cant_split = 0
    kept, last, carry = [], None, b""
    while True:
        chunk = fh.read(1 << 20)
        data, pos = carry + chunk, 0
        while True:
            m = start.search(data, pos)
            end = data.find(b"</w:tr>", m.start()) if m else -1
            if end < 0:
                break
            row = data[m.start():end + len(b"</w:tr>")]
            rows += 1
            cant_split += b"<w:cantSplit" in row
            if len(kept) < keep:
                kept.append(row)
            last, pos = row, end + len(b"</w:tr>")
        carry = data[pos:]
        if not chunk:
            break

    def element(xml):
        return etree.fromstring(b'<w:tbl xmlns:w="%s">' % W.encode() + xml + b"</w:tbl>")[0]
    return rows, cant_split, [element(r) for r in kept], element(last) if last else None


def test_big_sample_streamed(docx_samples, sample_data_ready):
    """samples/export_200k.json (200,000 CSV rows) renders to one Word table with every row,
    the header repeated and no row split; read streaming, not with python-docx."""
    r = docx_samples["export_200k"]
    out = r.docx()
    sheet = r.spec["sheets"][0]
    want = list(expected_table_rows(sheet, r.base_dir, limit=40))
    with open(r.base_dir / sheet["data"]["path"], encoding="utf-8", newline="") as fh:
        recs = list(csv.reader(fh))
    last_want = [shown_field(f, c) for f, c in zip(recs[-1], sheet["columns"])]
    with zipfile.ZipFile(out) as z, z.open("word/document.xml") as fh:
        rows, cant_split, first, last_el = stream_table_rows(fh, len(want))
    assert rows == len(recs), "expected %d rows (header included), got %d" % (len(recs), rows)
    trpr = first[0].find(w("trPr"))
    assert trpr is not None and trpr.find(w("tblHeader")) is not None, \
        "the header row has no w:tblHeader"
    assert cant_split == rows, "%d of %d rows lack w:cantSplit" % (rows - cant_split, rows)
    first_rows = [table_cell_texts(el) for el in first]
    last = table_cell_texts(last_el)
    errs = []
    for i, (e, g) in enumerate(zip(want + [last_want], first_rows + [last])):
        for c, (ec, gc) in enumerate(zip(e, g)):
            if not ec.matches(gc):
                errs.append("row %s col %d: expected %r, got %r" % (i if i < len(want) else "last", c, ec, gc))
    assert not errs, "\n".join(errs[:30])


# =========================================================================== feature specs

@pytest.mark.parametrize("name", list(FEATURE_SPECS))
def test_feature_renders_and_passes_ooxml_check(docx_features, name):
    assert_ooxml_ok(docx_features[name].docx())


@pytest.mark.parametrize("name", list(FEATURE_SPECS))
def test_feature_matches_spec(docx_features, name):
    r = docx_features[name]
    errs = check_document(r.spec, r.docx(), r.base_dir, r.window)
    assert not errs, "%s.docx differs from its spec:\n%s" % (name, "\n".join(errs[:80]))


@pytest.mark.parametrize("name", list(FEATURE_SPECS))
def test_feature_pdf_shows_the_content(docx_features, all_pdfs, name):
    r = docx_features[name]
    errs = check_pdf_text(pdf_text(pdf_of(all_pdfs, r)), r.spec, r.base_dir)
    assert not errs, "%s.pdf (LibreOffice):\n%s" % (name, "\n".join(errs[:40]))


def test_tabs_and_line_feeds_become_tab_and_br(docx_features):
    d = DocxDoc(docx_features["runs"].docx())
    p = next(p for p in d.paragraphs if xml_text(p).startswith("col1"))
    seq = []
    for r in own_runs(p):
        for e in r:
            if e.tag == w("t"):
                seq.append(e.text)
            elif e.tag == w("tab"):
                seq.append("<tab>")
            elif e.tag == w("br"):
                seq.append("<br>")
    assert "".join(seq) == "col1<tab>col2<tab>col3<br>second line<br><br>after an empty line<tab>", seq
    bad = [t.text for t in d.body.iter(w("t")) if t.text and re.search(r"[\t\n\r]", t.text)]
    assert not bad, "w:t holding a raw tab or line feed (Word ignores them): %r" % bad[:5]
    # (that a run with a tab keeps its formatting on both sides is checked by check_runs)


def test_leading_and_trailing_spaces_survive(docx_features):
    d = DocxDoc(docx_features["runs"].docx())
    assert any(xml_text(p) == "  leading and trailing spaces  " for p in d.paragraphs)
    for t in d.body.iter(w("t")):
        if t.text and (t.text[0] == " " or t.text[-1] == " "):
            assert t.get("{http://www.w3.org/XML/1998/namespace}space") == "preserve", \
                "w:t %r without xml:space=preserve" % t.text


def test_escaped_text_reads_back(docx_features):
    r = docx_features["runs"]
    d = DocxDoc(r.docx())
    assert d.doc.core_properties.title == RUNS_SPEC["metadata"]["title"]
    assert d.doc.core_properties.author == "Zoë Ünal"
    want = RUNS_SPEC["blocks"][3]["text"]
    assert any(xml_text(p) == want for p in d.paragraphs), "escapes paragraph not read back exactly"
    hdr = header_footer_xml(d, d.doc.sections[0], "header")
    assert xml_text(hdr).strip() == RUNS_SPEC["metadata"]["title"]


@pytest.mark.parametrize("field,spec", [
    ("/blocks/0/text", {"blocks": [{"type": "paragraph", "text": "bell \u0007 here"}]}),
    ("/blocks/0/runs/1/text", {"blocks": [{"type": "paragraph", "runs": [{"text": "ok"}, {"text": "\u0001"}]}]}),
    ("/blocks/0/items/0", {"blocks": [{"type": "list", "items": ["\ufffe"]}]}),
    ("/blocks/0/rows/0/0", {"blocks": [{"type": "table", "rows": [["\u001f"]]}]}),
    ("/metadata/title", {"metadata": {"title": "t\u000b"}, "blocks": [{"type": "rule"}]}),
])
def test_xml_forbidden_characters_are_rejected(tmp_path, kiln_bin, field, spec):
    """No part can hold a character XML 1.0 forbids: the parser refuses the spec (exit 3)."""
    expect_docx_failure(tmp_path, spec, 3, re.escape(field) + r".*")


def test_mapping_sheets(docx_features):
    r = docx_features["sheets"]
    d = DocxDoc(r.docx())
    heads = [(d.heading_level(p), xml_text(p)) for p in d.paragraphs if d.heading_level(p)]
    assert heads == [(1, "Sales & costs"), (1, "Sheet2"), (1, "Merged")], heads
    # each heading is followed by its table (a caption may sit between)
    for _lv, text in heads:
        i = next(i for i, (k, el, _s) in enumerate(d.items) if k == "p" and xml_text(el) == text)
        nxt = [k for k, _el, _s in d.items[i + 1:i + 3]]
        assert "tbl" in nxt, "no table right after the heading %r: %s" % (text, nxt)
    assert len(chart_refs(d)) == 3
    first = d.xml(chart_refs(d)[0][2])
    vals = [float(v.text) for v in first.iterfind(".//c:ser/c:val//c:pt/c:v", NS)]
    assert vals == [1200.5, 980.0], vals
    name = first.findtext(".//c:ser/c:tx//c:v", namespaces=NS)
    assert name == "Revenue", name


def test_mapping_slides(docx_features):
    r = docx_features["slides"]
    d = DocxDoc(r.docx())
    heads = [(d.heading_level(p), xml_text(p)) for p in d.paragraphs if d.heading_level(p)]
    assert heads == [(1, "Deck title"), (1, "A section"), (2, "Content slide"), (2, "Two columns"),
                     (2, "Table slide"), (2, "Image slide"), (2, "Chart slide")], heads
    quotes = [xml_text(p) for p in d.paragraphs if body_kind(d, p) == "quote"]
    for notes in ("Opening notes", "Content notes", "Chart notes", "Blank slide notes"):
        assert any(notes in q for q in quotes), "notes %r not in a Quote paragraph: %s" % (notes, quotes)
    items = [(d.num(p)[0], xml_text(p)) for p in d.paragraphs if d.num(p) is not None]
    assert items[:4] == [(0, "one"), (0, "two"), (1, "two a"), (1, "two b")], items
    assert len(d.tables) == 1 and len(chart_refs(d)) == 1 and len(pictures(d)) == 1


def test_landscape_page_and_custom_header(docx_features):
    d = DocxDoc(docx_features["page"].docx())
    s = d.doc.sections[0]
    assert s.orientation == WD_ORIENT.LANDSCAPE and s.page_width > s.page_height
    pgsz = s._sectPr.find(w("pgSz"))
    assert pgsz.get(w("orient")) == "landscape"
    assert xml_text(header_footer_xml(d, s, "header")).strip() == "Confidential & internal"


@pytest.mark.parametrize("size", ["A4", "Letter", "Legal", "A3", "A5"])
@pytest.mark.parametrize("orientation", ["portrait", "landscape"])
def test_page_sizes(tmp_path, kiln_bin, size, orientation):
    spec = {"metadata": {"created": "2026-01-01"},
            "page": {"size": size, "orientation": orientation, "margins": {"left": "15mm", "top": 50}},
            "blocks": [{"type": "paragraph", "text": "%s %s" % (size, orientation)}]}
    sp = write_spec(tmp_path, spec)
    out = render_ok(sp, tmp_path / "p.docx")
    errs = []
    check_sections(DocxDoc(out), spec, errs)
    assert not errs, "\n".join(errs)


def test_styles_the_issue_names(docx_samples):
    d = DocxDoc(docx_samples["business_report"].docx())
    names = {st.name for st in d.doc.styles}
    want = {"Title", "Subtitle", "Normal", "List Paragraph", "Caption", "Quote", "Code", "Hyperlink",
            "Table Grid"} | {"Heading %d" % i for i in range(1, 7)}
    missing = want - names
    assert not missing, "styles.xml lacks %s" % sorted(missing)
    tocs = {n.lower() for n in names}
    assert {"toc %d" % i for i in range(1, 7)} <= tocs, sorted(n for n in names if n.lower().startswith("toc"))
    header_styles = [st for st in d.doc.styles if st.type == docx.enum.style.WD_STYLE_TYPE.TABLE
                     and any(t.get(w("type")) == "firstRow" for t in st.element.findall(w("tblStylePr")))]
    assert header_styles, "no table style with a header-row (firstRow) format"


@pytest.mark.parametrize("name", ["business_report", "long_report"])
def test_no_microsoft_extension_markup(docx_samples, name):
    """Plain ECMA-376: no mc:Ignorable, no w14/w15/wp14 and the like."""
    with zipfile.ZipFile(docx_samples[name].docx()) as z:
        for n in z.namelist():
            if not n.endswith((".xml", ".rels")):
                continue
            data = z.read(n)
            for bad in (b"markup-compatibility", b"schemas.microsoft.com/office/word/20",
                        b"schemas.microsoft.com/office/drawing/20"):
                assert bad not in data, "%s holds %s" % (n, bad.decode())


def test_chart_workbooks_are_valid_packages(docx_features, tmp_path):
    d = DocxDoc(docx_features["charts"].docx())
    embedded = sorted(n for n in d.names if n.startswith("word/embeddings/"))
    assert len(embedded) == len(chart_refs(d)), "%d charts, %d embedded workbooks" % (len(chart_refs(d)), len(embedded))
    files = []
    for n in embedded:
        f = tmp_path / n.replace("/", "_")
        f.write_bytes(d.zip.read(n))
        files.append(f)
    assert_ooxml_ok(*files)


def test_render_to_stdout(tmp_path, kiln_bin):
    sp = write_spec(tmp_path, {"blocks": [{"type": "heading", "text": "stdout"}]})
    p = run_kiln("render", sp, "-o", "-", "--format", "docx")
    assert p.returncode == 0, describe(p)
    out = tmp_path / "stdout.docx"
    out.write_bytes(p.stdout)
    assert_ooxml_ok(out)
    d = DocxDoc(out)
    assert [xml_text(p) for p in d.paragraphs if d.heading_level(p)] == ["stdout"]


# =========================================================================== failures leave nothing

ERROR_LINE = re.compile(r"^kiln: error: (.*)$")
POINTER_LINE = re.compile(r"^kiln: error: (/[^:]*|): (.*)$")


def expect_docx_failure(tmp_path, spec, code, pointer_re=None, extra=(), files=None, message_re=None):
    """Render spec to a .docx and check the failure contract: the exit status, error lines
    naming the pointer, the same with --json, and nothing left in the output directory."""
    sd = tmp_path / "specdir"
    sd.mkdir(exist_ok=True)
    od = tmp_path / "outdir"
    od.mkdir(exist_ok=True)
    for name, data in (files or {}).items():
        (sd / name).write_bytes(data)
    sp = spec if isinstance(spec, Path) else write_spec(sd, spec)
    before = listing(od)
    out = od / "report.docx"
    for json_flag in ((), ("--json",)):
        proc = run_kiln("render", sp, "-o", out, *extra, *json_flag)
        assert proc.returncode == code, "expected exit %d, got: %s" % (code, describe(proc))
        lines = [l for l in err_text(proc).splitlines() if l.strip()]
        assert lines and all(ERROR_LINE.match(l) for l in lines), describe(proc)
        if pointer_re is not None:
            ps = [m.group(1) for m in (POINTER_LINE.match(l) for l in lines) if m]
            assert any(re.fullmatch(pointer_re, x) for x in ps), \
                "no error with a pointer matching %r: %s" % (pointer_re, describe(proc))
        if message_re is not None:
            assert re.search(message_re, err_text(proc)), describe(proc)
        if json_flag:
            obj = json.loads(proc.stdout.decode("utf-8"))
            assert obj.get("ok") is False and obj.get("errors"), obj
        assert not out.exists(), "a failed render left %s" % out
        assert listing(od) == before, "the output directory changed: %s -> %s" % (before, listing(od))
    return proc


GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"


def test_unknown_block_type(tmp_path, kiln_bin):
    expect_docx_failure(tmp_path, {"blocks": [{"type": "heading", "text": "ok"}, {"type": "tabel"}]},
                        3, r"/blocks/1(/type)?")


def test_bad_image_content(tmp_path, kiln_bin):
    expect_docx_failure(tmp_path, {"blocks": [{"type": "image", "image": {"path": "fake.png"}}]},
                        3, r"/blocks/0/image(/path)?", files={"fake.png": GIF})


def test_bad_image_data(tmp_path, kiln_bin):
    spec = {"blocks": [{"type": "paragraph", "text": "x"},
                       {"type": "image", "image": {"data": base64.b64encode(GIF).decode()}}]}
    expect_docx_failure(tmp_path, spec, 3, r"/blocks/1/image(/data)?")


def test_image_format_disagrees(tmp_path, kiln_bin):
    spec = {"blocks": [{"type": "image", "image": {"data": png_b64(), "format": "jpeg"}}]}
    expect_docx_failure(tmp_path, spec, 3, r"/blocks/0/image(/format|/data)?")


def test_truncated_png(tmp_path, kiln_bin):
    spec = {"blocks": [{"type": "image", "image": {"data": base64.b64encode(png_bytes()[:20]).decode()}}]}
    expect_docx_failure(tmp_path, spec, 3, r"/blocks/0/image(/data)?")


@pytest.mark.parametrize("path", ["../outside.png", "sub/../../outside.png", "/etc/hostname", "link.png",
                                  "linkdir/inside.png"])
def test_image_path_escaping_the_base_dir(tmp_path, kiln_bin, path):
    (tmp_path / "outside.png").write_bytes(png_bytes())
    sd = tmp_path / "specdir"
    sd.mkdir()
    (sd / "sub").mkdir()
    (sd / "link.png").symlink_to(tmp_path / "outside.png")
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "inside.png").write_bytes(png_bytes())
    (sd / "linkdir").symlink_to(tmp_path / "real")
    expect_docx_failure(tmp_path, {"blocks": [{"type": "image", "image": {"path": path}}]},
                        3, r"/blocks/0/image(/path)?")


def test_missing_image_is_unreadable_input(tmp_path, kiln_bin):
    expect_docx_failure(tmp_path, {"blocks": [{"type": "image", "image": {"path": "nope.png"}}]},
                        5, r"/blocks/0/image(/path)?")


@pytest.mark.parametrize("which", ["images", "text"])
def test_size_ceiling(tmp_path, kiln_bin, long_report_ready, which):
    """--max-bytes too small: exit 4, the ceiling and the size reached in the message and in
    --json (limit, actual), nothing left. The business report has images (which a writer may
    weigh before writing anything); the long report has none, so the streamed package
    itself passes the ceiling."""
    spec = SAMPLES / "business_report.json" if which == "images" else long_report_ready
    p = expect_docx_failure(tmp_path, spec, 4, extra=("--max-bytes", "2K"), message_re=r"\b2048 bytes")
    if which == "text":
        m = re.search(r"size ceiling of 2048 bytes \(reached (\d+) bytes\)", err_text(p))
        assert m and int(m.group(1)) > 2048, "ceiling message not as documented: " + err_text(p)
    pj = run_kiln("render", spec, "-o", tmp_path / "outdir" / "x.docx", "--max-bytes", "2K", "--json")
    e = json.loads(pj.stdout.decode("utf-8"))["errors"][0]
    assert e["code"] == "too_large" and e.get("limit") == 2048 and e.get("actual", 0) > 2048, e


def test_size_ceiling_exact_boundary(tmp_path, kiln_bin):
    """A document of exactly N bytes passes --max-bytes N and fails N-1, leaving nothing."""
    spec = {"metadata": {"created": "2026-01-01T00:00:00Z", "title": "fixed"},
            "blocks": [{"type": "heading", "text": "Fixed"},
                       {"type": "paragraph", "text": "some text " * 200},
                       {"type": "table", "columns": [{"header": "n", "type": "integer"}],
                        "rows": [[i] for i in range(300)]}]}
    sp = write_spec(tmp_path, spec)
    size = render_ok(sp, tmp_path / "a.docx").stat().st_size
    render_ok(sp, tmp_path / "b.docx", "--max-bytes", str(size))
    assert (tmp_path / "b.docx").stat().st_size == size
    od = tmp_path / "o"
    od.mkdir()
    p = run_kiln("render", sp, "-o", od / "c.docx", "--max-bytes", str(size - 1))
    assert p.returncode == 4, describe(p)
    assert "ceiling of %d bytes" % (size - 1) in err_text(p)
    assert listing(od) == {}


def test_failure_keeps_an_existing_file(tmp_path, kiln_bin):
    od = tmp_path / "o"
    od.mkdir()
    out = od / "precious.docx"
    out.write_bytes(b"keep me")
    sp = write_spec(tmp_path, {"blocks": [{"type": "nope"}]})
    p = run_kiln("render", sp, "-o", out)
    assert p.returncode == 3, describe(p)
    p = run_kiln("render", SAMPLES / "business_report.json", "-o", out, "--max-bytes", "2K")
    assert p.returncode == 4, describe(p)
    assert out.read_bytes() == b"keep me" and sorted(listing(od)) == ["precious.docx"]


# --------------------------------------------------------------------------- merges and wide tables

MERGES_SPEC = {
    "metadata": {"title": "Merged cells", "created": "2026-01-01"},
    "page": {"size": "A4", "orientation": "portrait"},
    "sheets": [
        # A title over a sheet without a header row, and a merge inside a data row.
        {"name": "Horizontal", "header": False,
         "rows": [[None, None, None, None], ["a", 1, 2, 3], ["b", None, None, 6], ["c", 7, 8, 9]],
         "merges": [{"range": "A1:D1", "value": {"value": "Title across",
                                                 "style": {"bold": True, "size": 14}}},
                    {"range": "B3:C3", "value": 45}]},
        # Rows 2-4 of column A: the top-left cell's own value, no merge value.
        {"name": "Vertical", "columns": [{"header": h} for h in ["Name", "Q1", "Q2"]],
         "rows": [["north", 1, 2], [None, 5, 6], [None, 9, 10], ["south", 13, 14]],
         "merges": [{"range": "A2:A4"}]},
        # A 2x2 block with a value and a fill.
        {"name": "Block", "columns": [{"header": h} for h in ["Name", "Q1", "Q2", "Q3"]],
         "rows": [["x", None, None, 3], ["y", None, None, 7], ["z", 9, 10, 11]],
         "merges": [{"range": "B2:C3", "value": {"value": "2x2", "style": {"fill": "#FFEB84"}}}]},
        # Over the header row: across two headers, and down into the first data row.
        {"name": "Over header",
         "columns": [{"header": "Name"}, {"header": "Q1-Q2"}, {"type": "integer"}, {"header": "Q3"}],
         "rows": [[None, 1, 2, 3], ["r2", 5, 6, 7]],
         "merges": [{"range": "B1:C1"}, {"range": "A1:A2"}]},
        # Past the last row and column (clipped), and wholly past the last row (dropped).
        {"name": "Clipped", "columns": [{"header": "A"}, {"header": "B"}, {"header": "C"}],
         "rows": [["a1", "b1", None], ["a2", "b2", None]],
         "merges": [{"range": "C2:F9", "value": "tail"}, {"range": "A10:B12", "value": "gone"}]},
    ],
}


def grid_of(table):
    """The table's texts by grid position, python-docx resolving spans and vMerge."""
    return [[table.cell(r, c).text for c in range(len(table.columns))] for r in range(len(table.rows))]


def test_sheet_merges_become_spanning_cells(tmp_path, kiln_bin):
    """A sheet's merges become Word's merged cells: one w:tc with w:gridSpan across
    columns, w:vMerge restart/continue down rows, the value in the top-left cell,
    the worksheet's row numbering (row 1 = the header row when there is one), and
    ranges clipped to the table."""
    out = render_ok(write_spec(tmp_path, MERGES_SPEC), tmp_path / "merges.docx")
    assert_ooxml_ok(out)
    d = docx.Document(str(out))
    tables = d.tables
    assert len(tables) == 5, "one table per sheet, got %d" % len(tables)
    horizontal, vertical, block, over_header, clipped = tables

    assert grid_of(horizontal) == [["Title across"] * 4, ["a", "1", "2", "3"],
                                   ["b", "45", "45", "6"], ["c", "7", "8", "9"]]
    assert grid_of(vertical) == [["Name", "Q1", "Q2"], ["north", "1", "2"], ["north", "5", "6"],
                                 ["north", "9", "10"], ["south", "13", "14"]]
    assert grid_of(block) == [["Name", "Q1", "Q2", "Q3"], ["x", "2x2", "2x2", "3"],
                              ["y", "2x2", "2x2", "7"], ["z", "9", "10", "11"]]
    assert grid_of(over_header) == [["Name", "Q1-Q2", "Q1-Q2", "Q3"], ["Name", "1", "2", "3"],
                                    ["r2", "5", "6", "7"]]
    assert grid_of(clipped) == [["A", "B", "C"], ["a1", "b1", "tail"], ["a2", "b2", "tail"]]

    # The covered positions are the same cell as the top-left one.
    same = [(horizontal, (0, 0), (0, 3)), (horizontal, (2, 1), (2, 2)), (vertical, (1, 0), (3, 0)),
            (block, (1, 1), (2, 2)), (over_header, (0, 1), (0, 2)), (over_header, (0, 0), (1, 0)),
            (clipped, (1, 2), (2, 2))]
    for t, a, b in same:
        assert t.cell(*a)._tc is t.cell(*b)._tc, "cells %s and %s are not one merged cell" % (a, b)
    assert vertical.cell(0, 0)._tc is not vertical.cell(1, 0)._tc
    assert vertical.cell(3, 0)._tc is not vertical.cell(4, 0)._tc

    # The markup Word writes: gridSpan with the spanned width, vMerge restart then continue.
    def tcs(t, r):
        return t._tbl.findall(w("tr"))[r].findall(w("tc"))

    def props(tc):
        span = tc.find("w:tcPr/w:gridSpan", NS)
        vm = tc.find("w:tcPr/w:vMerge", NS)
        return (int(span.get(w("val"))) if span is not None else 1,
                None if vm is None else vm.get(w("val"), "continue"),
                int(tc.find("w:tcPr/w:tcW", NS).get(w("w"))))

    def grid(t):
        return [int(g.get(w("w"))) for g in t._tbl.findall("w:tblGrid/w:gridCol", NS)]

    g = grid(horizontal)
    assert [props(tc) for tc in tcs(horizontal, 0)] == [(4, None, sum(g))]
    assert [props(tc)[:2] for tc in tcs(horizontal, 2)] == [(1, None), (2, None), (1, None)]
    assert props(tcs(horizontal, 2)[1])[2] == g[1] + g[2]
    assert [props(tcs(vertical, r)[0])[1] for r in range(5)] == [None, "restart", "continue", "continue", None]
    g = grid(block)
    assert [props(tcs(block, r)[1]) for r in (1, 2)] == [(2, "restart", g[1] + g[2]), (2, "continue", g[1] + g[2])]
    assert all(len(tcs(block, r)) == 3 for r in (1, 2)) and len(tcs(block, 3)) == 4
    # Over the header row: the header row holds the span and is still the repeated header.
    hdr = over_header._tbl.findall(w("tr"))[0]
    assert hdr.find("w:trPr/w:tblHeader", NS) is not None
    assert [props(tc)[:2] for tc in tcs(over_header, 0)] == [(1, "restart"), (2, None), (1, None)]
    assert props(tcs(over_header, 1)[0])[1] == "continue"
    # Clipped: three rows (no row is made up for the range past the end), the
    # continuation ends with the table.
    assert len(clipped.rows) == 3
    assert [props(tcs(clipped, r)[2])[1] for r in (1, 2)] == ["restart", "continue"]
    assert "gone" not in "".join(xml_text(p) for p in clipped._tbl.iter(w("p")))

    # The merge's value keeps its style; a merged range is centered, as Excel shows it.
    title = tcs(horizontal, 0)[0]
    run = title.find(".//w:r", NS)
    assert run.find("w:rPr/w:b", NS) is not None and run.find("w:rPr/w:sz", NS).get(w("val")) == "28"
    assert title.find("w:p/w:pPr/w:jc", NS).get(w("val")) == "center"
    fills = [tc.find("w:tcPr/w:shd", NS) for tc in (tcs(block, 1)[1], tcs(block, 2)[1])]
    assert all(f is not None and f.get(w("fill")).upper() == "FFEB84" for f in fills)


def test_financial_model_title_is_one_merged_row(docx_samples):
    """samples/financial_model.json: the P&L's A1:G1 title is one centered bold cell
    spanning the whole table, not an empty row."""
    d = docx.Document(str(docx_samples["financial_model"].docx()))
    spec = load_json(SAMPLES / "financial_model.json")
    pl = [s for s in spec["sheets"] if s["name"] == "P&L"][0]
    title = pl["merges"][0]["value"]["value"]
    found = [t for t in d.tables if t.cell(0, 0).text == title]
    assert found, "no table starts with the P&L title %r" % title
    t = found[0]
    first = t._tbl.findall(w("tr"))[0].findall(w("tc"))
    assert len(first) == 1 and first[0].find("w:tcPr/w:gridSpan", NS).get(w("val")) == str(len(pl["columns"]))
    assert all(t.cell(0, c).text == title for c in range(len(t.columns)))
    assert first[0].find("w:p/w:pPr/w:jc", NS).get(w("val")) == "center"
    assert first[0].find(".//w:r/w:rPr/w:b", NS) is not None


def test_wide_table_keeps_numbers_whole(tmp_path, kiln_bin):
    """A table too wide for the page gets a smaller font (not below 7 pt) before its
    columns are squeezed, so each number stays on one line; a table that is only
    wide because of a long sentence keeps the body size and wraps the sentence."""
    years = [str(2015 + i) for i in range(16)]
    rows = [[(r * 16 + c) * 1373 % 90000 + 1000 for c in range(16)] for r in range(30)]
    sentence = ("A very long description that goes on and on about the widget and its many "
                "remarkable properties, so that it has to wrap over several lines")
    spec = {"metadata": {"title": "Wide", "created": "2026-01-01"},
            "page": {"size": "A4", "orientation": "portrait"},
            "blocks": [{"type": "table", "caption": "Sixteen years",
                        "columns": [{"header": y, "type": "number", "number_format": "#,##0"} for y in years],
                        "rows": rows},
                       {"type": "table", "columns": [{"header": "Item"}, {"header": "Description"},
                                                     {"header": "Amount", "type": "currency"}],
                        "rows": [["Widget", sentence, 1234.5]]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "wide.docx")
    assert_ooxml_ok(out)
    d = docx.Document(str(out))
    wide, narrow = d.tables
    sizes = {r.get(w("val")) for r in wide._tbl.iter(w("sz"))}
    assert len(sizes) == 1, "one font size across the wide table, got %s" % sizes
    half_points = int(sizes.pop())
    assert 14 <= half_points < 22, "the wide table's font: %s half points" % half_points
    assert not list(narrow._tbl.iter(w("sz"))), "a long sentence alone must not shrink the font"
    section = d.sections[0]
    text_width = (section.page_width - section.left_margin - section.right_margin) / 635  # EMU -> twips
    grid = [int(g.get(w("w"))) for g in wide._tbl.findall("w:tblGrid/w:gridCol", NS)]
    assert len(grid) == 16 and sum(grid) <= text_width + 2

    proc, pdfs = soffice_convert([out], tmp_path / "pdf")
    assert pdfs[out], "LibreOffice did not convert %s:\n%s" % (out, proc.stdout[-2000:])
    tokens = set(pdf_text(pdfs[out]).split())
    want = {"{:,}".format(v) for row in rows for v in row} | set(years)
    missing = sorted(want - tokens)
    assert not missing, "numbers broken or missing in the PDF: %s" % missing[:20]
    assert sentence.split()[-1] in tokens


EMPTY_TABLE_SPECS = {
    "block": {"blocks": [{"type": "table", "columns": [{"header": "a"}], "header": False, "rows": []}]},
    "sheet": {"sheets": [{"name": "S", "columns": [{"header": "a"}], "header": False, "rows": []}]},
    "csv_header_only": {"blocks": [{"type": "table", "columns": [{"header": "a"}, {"header": "b", "type": "number"}],
                                    "header": False,
                                    "data": {"path": "header_only.csv", "format": "csv", "header": True}}]},
}


@pytest.mark.parametrize("name", list(EMPTY_TABLE_SPECS))
def test_table_without_rows_gets_an_empty_row(tmp_path, kiln_bin, name):
    """Columns but neither a header row nor data (a CSV with only its header record
    included): Word rejects a w:tbl without w:tr (it offers to repair the file), so the
    table has one row of empty cells, each with its paragraph."""
    (tmp_path / "header_only.csv").write_text("a,b\n", encoding="utf-8")
    spec = EMPTY_TABLE_SPECS[name]
    out = render_ok(write_spec(tmp_path, spec), tmp_path / ("%s.docx" % name))
    assert_ooxml_ok(out)
    d = DocxDoc(out)
    tbls = list(d.body.iter(w("tbl")))
    assert tbls, "no table written"
    for tbl in tbls:
        trs = tbl.findall(w("tr"))
        assert len(trs) >= 1, "a w:tbl without w:tr"
        grid = tbl.findall("w:tblGrid/w:gridCol", NS)
        for tr in trs:
            tcs = tr.findall(w("tc"))
            assert len(tcs) == len(grid), "the row has %d cells for %d grid columns" % (len(tcs), len(grid))
            assert all(tc.find(w("p")) is not None for tc in tcs), "a w:tc without w:p"
            assert not "".join(xml_text(tc) for tc in tcs), "the empty row shows text"
    errs = check_document(spec, out, tmp_path)
    assert not errs, "\n".join(errs)


def test_quote_attribution_keeps_breaks_tabs_and_spaces(tmp_path, kiln_bin):
    """A quote's attribution goes through the text run path: a line feed is w:br, a tab
    w:tab, and a trailing space survives (xml:space="preserve")."""
    attribution = "Line1\nLine2\tx  "
    spec = {"blocks": [{"type": "quote", "text": "Said", "attribution": attribution}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "quote.docx")
    assert_ooxml_ok(out)
    d = DocxDoc(out)
    quotes = [el for kind, el, _s in d.items if kind == "p" and body_kind(d, el) == "quote"]
    assert len(quotes) == 2, "the quote and its attribution: %d Quote paragraphs" % len(quotes)
    attr = quotes[1]
    assert xml_text(attr) == "\u2014 " + attribution, repr(xml_text(attr))
    assert attr.find(".//w:br", NS) is not None and attr.find(".//w:tab", NS) is not None
    for t in attr.iter(w("t")):
        assert not re.search(r"[\t\n\r]", t.text or ""), "a raw tab or line feed in w:t: %r" % t.text
        if t.text and (t.text[0] == " " or t.text[-1] == " "):
            assert t.get("{http://www.w3.org/XML/1998/namespace}space") == "preserve", \
                "w:t %r without xml:space=preserve" % t.text


def test_column_widths_measure_every_row(tmp_path, kiln_bin):
    """Column widths come from every row, not the first ones: in a 3,000-row table whose
    widest values are at the end ("3,000", "row 3000", "100.0%"), each column is at least
    as wide as the same table holding only those last rows makes it, so no value wraps."""
    n = 3000
    columns = [{"header": "n", "type": "integer"}, {"header": "label"},
               {"header": "share", "type": "percent"}]
    rows = [[i, "row %d" % i, i / n] for i in range(1, n + 1)]
    spec = {"blocks": [{"type": "table", "columns": columns, "rows": rows},
                       {"type": "table", "columns": columns, "rows": rows[-5:]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "long.docx")
    d = docx.Document(str(out))
    big, tail = d.tables
    grid = [[int(g.get(w("w"))) for g in t._tbl.findall("w:tblGrid/w:gridCol", NS)] for t in (big, tail)]
    assert len(big.rows) == n + 1
    for c, col in enumerate(columns):
        assert grid[0][c] >= grid[1][c], (
            "column %r is %d twips wide, narrower than the %d its last values (%r) need"
            % (col["header"], grid[0][c], grid[1][c], tail.cell(5, c).text))
    assert sum(grid[0]) < d.sections[0].page_width / 635 / 2, "the table should not need shrinking"


# =========================================================================== nested lists that number for themselves

# Each nested list says "ordered" and "start" for itself (a list object as "items"); a
# nested array numbers as its parent does. Shared with the pdf, pptx and xlsx tests.
MIXED_LISTS_SPEC = {
    "metadata": {"created": "2026-01-01"},
    "blocks": [
        {"type": "list", "items": [
            "bullet one",
            {"text": "bullet with steps", "items": {"ordered": True, "start": 3, "items": [
                "step three",
                {"text": "step four", "items": {"ordered": False, "items": ["deep bullet"]}}]}},
            "bullet two"]},
        {"type": "list", "ordered": True, "items": [
            {"text": "number one", "items": {"items": ["inherits numbers"]}},
            {"text": "number two", "items": {"ordered": False, "items": ["sub bullet"]}},
            {"text": "number three", "items": ["array under numbers"]}]},
    ],
}
# (text, level, number or None for a bullet), in reading order.
MIXED_LIST_ITEMS = [
    ("bullet one", 0, None), ("bullet with steps", 0, None), ("step three", 1, 3),
    ("step four", 1, 4), ("deep bullet", 2, None), ("bullet two", 0, None),
    ("number one", 0, 1), ("inherits numbers", 1, 1), ("number two", 0, 2), ("sub bullet", 1, None),
    ("number three", 0, 3), ("array under numbers", 1, 1),
]


def roman(n):
    out = ""
    for v, s in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"),
                 (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")):
        while n >= v:
            out, n = out + s, n - v
    return out


def list_marker(level, number):
    """The marker every writer shows for an item of a list its level's scheme can number:
    bullets •, ◦, ▪ and numbers 1., a., i. by level, letters repeating past z (aa., bb.) as
    Word's lowerLetter does."""
    if number is None:
        return "•◦▪"[level % 3]
    kind = level % 3
    if kind == 0:
        return "%d." % number
    if kind == 1:
        return chr(ord("a") + (number - 1) % 26) * ((number - 1) // 26 + 1) + "."
    return roman(number) + "."


def test_nested_lists_number_for_themselves(tmp_path, kiln_bin):
    """Bullets and numbers mix across levels: each nested list's w:num takes its own
    format (bullet or number) at its level, and an ordered one restarts at its start."""
    out = render_ok(write_spec(tmp_path, MIXED_LISTS_SPEC), tmp_path / "lists.docx")
    assert_ooxml_ok(out)
    d = DocxDoc(out)
    nums, abstracts = d.numbering()
    paras = [p for p in d.paragraphs if d.num(p) is not None]
    assert [xml_text(p) for p in paras] == [t for t, _l, _n in MIXED_LIST_ITEMS]
    first_of_num = {}
    errs = []
    for p, (text, level, number) in zip(paras, MIXED_LIST_ITEMS):
        ilvl, nid = d.num(p)
        abstract, overrides = nums[nid]
        fmt, _start = abstracts[abstract][ilvl]
        want_fmt = "bullet" if number is None else ("decimal", "lowerLetter", "lowerRoman")[level % 3]
        if ilvl != level or fmt != want_fmt:
            errs.append("%r: level %d %s, want level %d %s" % (text, ilvl, fmt, level, want_fmt))
        if number is not None and nid not in first_of_num:
            first_of_num[nid] = text
            if overrides.get(ilvl, 1) != number:
                errs.append("%r starts numId %d at %r, want %d" % (text, nid, overrides.get(ilvl), number))
    assert not errs, "\n".join(errs)


# Lists whose numbers their level's letters or roman numerals cannot all write: one from 0,
# one reaching past 3999 in roman numerals, one past zzz (the 78th letter marker).
SCHEME_LISTS_SPEC = {"metadata": {"created": "2026-01-01"}, "blocks": [
    {"type": "list", "ordered": True, "items": [
        {"text": "top", "items": {"ordered": True, "start": 0, "items": [
            "zero", "one", {"text": "two", "items": {"ordered": True, "start": 3998,
                                                     "items": ["r1", "r2", "r3"]}}]}},
        {"text": "next", "items": {"ordered": True, "start": 27, "items": [
            "aa", {"text": "bb", "items": {"ordered": True, "start": 14, "items": ["xiv"]}}]}},
        {"text": "long", "items": {"ordered": True, "start": 76, "items": ["p76", "p77", "p78"]}},
        {"text": "longer", "items": {"ordered": True, "start": 77, "items": ["q77", "q78", "q79"]}}]}]}
# (text, level, marker) in reading order.
SCHEME_LIST_ITEMS = [
    ("top", 0, "1."), ("zero", 1, "0."), ("one", 1, "1."), ("two", 1, "2."),
    ("r1", 2, "3998."), ("r2", 2, "3999."), ("r3", 2, "4000."),
    ("next", 0, "2."), ("aa", 1, "aa."), ("bb", 1, "bb."), ("xiv", 2, "xiv."),
    ("long", 0, "3."), ("p76", 1, "xxx."), ("p77", 1, "yyy."), ("p78", 1, "zzz."),
    ("longer", 0, "4."), ("q77", 1, "77."), ("q78", 1, "78."), ("q79", 1, "79."),
]


def test_list_numbers_outside_a_levels_scheme_agree_in_every_format(tmp_path):
    """One scheme in every writer: a list its level's letters or roman numerals cannot
    number throughout (from 0, past 3999 in roman, past zzz) counts in digits, the
    whole list, never "0." then "a."; letters past z repeat (aa., bb.) as Word's do. The
    .docx redefines such a level as decimal in the list's own w:num (LibreOffice draws
    the numbers so); the .xlsx and PDF write the markers; the .pptx autonumbers in the
    list's scheme, or writes the numbers out where autonumbering cannot count."""
    spec = write_spec(tmp_path, SCHEME_LISTS_SPEC)
    outs = {ext: render_ok(spec, tmp_path / ("lists." + ext)) for ext in ("docx", "xlsx", "pdf", "pptx")}
    want = ["%s %s" % (m, t) for t, _l, m in SCHEME_LIST_ITEMS]

    import openpyxl
    ws = openpyxl.load_workbook(outs["xlsx"])["Sheet1"]
    assert [c.value for c in ws["A"] if c.value is not None] == want

    d = DocxDoc(outs["docx"])
    root = d.xml("word/numbering.xml")
    formats, indents = {}, {}   # numId -> {ilvl: numFmt / (left, hanging) its override gives}
    for n in root.findall(w("num")):
        nid = int(n.get(w("numId")))
        formats[nid], indents[nid] = {}, {}
        for o in n.findall(w("lvlOverride")):
            lvl = o.find(w("lvl"))
            if lvl is not None:
                ind = lvl.find(w("pPr")).find(w("ind"))
                formats[nid][int(o.get(w("ilvl")))] = lvl.find(w("numFmt")).get(w("val"))
                indents[nid][int(o.get(w("ilvl")))] = (int(ind.get(w("left"))), int(ind.get(w("hanging"))))
    nums, abstracts = d.numbering()
    paras = [p for p in d.paragraphs if d.num(p) is not None]
    assert [xml_text(p) for p in paras] == [t for t, _l, _m in SCHEME_LIST_ITEMS]
    got = []
    for p, (text, level, marker) in zip(paras, SCHEME_LIST_ITEMS):
        ilvl, nid = d.num(p)
        fmt = formats[nid].get(ilvl) or abstracts[nums[nid][0]][ilvl][0]
        got.append((text, ilvl, fmt))
    assert got == [(t, l, "decimal" if m[:-1].isdigit() else ("decimal", "lowerLetter", "lowerRoman")[l % 3])
                   for t, l, m in SCHEME_LIST_ITEMS]
    # the lists with wide markers ("3998.", "xxx.") hang them further into the indent, the
    # marker where the level's own starts (720 twips a level, 360 in), the text moved right;
    # the others keep the definition's 360
    hang = {xml_text(p): indents[d.num(p)[1]].get(d.num(p)[0], (None, 360)) for p in paras}
    for text in ("r1", "p76"):
        left, hanging = hang[text]
        level = next(l for t, l, _m in SCHEME_LIST_ITEMS if t == text)
        assert hanging >= 430 and left - hanging == 720 * level + 360, (text, hang[text])
    assert all(hang[t][1] == 360 for t in ("top", "zero", "aa", "xiv", "q77")), hang

    deck = zipfile.ZipFile(outs["pptx"])
    a = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
    slide = etree.fromstring(deck.read("ppt/slides/slide1.xml"))
    marks = []
    for p in slide.iter(a + "p"):
        text = "".join(t.text or "" for t in p.iter(a + "t"))
        auto = p.find(a + "pPr/" + a + "buAutoNum")
        if text:
            marks.append((text, None if auto is None else (auto.get("type"), int(auto.get("startAt", "1")))))
    items = {t for t, _l, _m in SCHEME_LIST_ITEMS}
    marks = [m for m in marks if m[0] in items or m[0].split(" ", 1)[-1] in items]
    assert marks == [
        ("top", ("arabicPeriod", 1)), ("0. zero", None), ("1. one", None), ("2. two", None),
        ("r1", ("arabicPeriod", 3998)), ("r2", ("arabicPeriod", 3998)), ("r3", ("arabicPeriod", 3998)),
        ("next", ("arabicPeriod", 1)), ("aa", ("alphaLcPeriod", 27)), ("bb", ("alphaLcPeriod", 27)),
        ("xiv", ("romanLcPeriod", 14)),
        ("long", ("arabicPeriod", 1)), ("p76", ("alphaLcPeriod", 76)), ("p77", ("alphaLcPeriod", 76)),
        ("p78", ("alphaLcPeriod", 76)),
        ("longer", ("arabicPeriod", 1)), ("q77", ("arabicPeriod", 77)), ("q78", ("arabicPeriod", 77)),
        ("q79", ("arabicPeriod", 77))], marks
    for ext in ("docx", "pptx"):
        assert_ooxml_ok(outs[ext])

    text = pdf_text(outs["pdf"], layout=True)
    lines = [re.sub(r"\s+", " ", x).strip() for x in text.splitlines() if x.strip()]
    assert [x for x in lines if x in want] == want, lines
    _proc, pdfs = soffice_convert([outs["docx"]], tmp_path / "lo")
    drawn = [re.sub(r"\s+", " ", x).strip() for x in pdf_text(pdfs[outs["docx"]], layout=True).splitlines()]
    assert [x for x in drawn if x in want] == want, drawn


# =========================================================================== gaps in charts (issue 15)

GAP_KINDS = ["column", "bar", "line", "pie", "doughnut", "scatter", "area"]


def gap_specs():
    """Every chart kind with a missing point: as literal values holding a null (blocks),
    and over sheet ranges with empty cells (sheets, mapped to charts of the document)."""
    blocks = []
    for k in GAP_KINDS:
        pie = k in ("pie", "doughnut")
        cats = [1, 2, 3, 4] if k == "scatter" else ["w", "x", "y", "z"]
        series = [{"name": "first", "values": [1, None, 3, 4]}]
        if not pie:
            series.append({"name": "second", "values": [None, 2, 2, None]})
        blocks.append({"type": "chart", "kind": k, "title": "literal " + k, "categories": cats,
                       "series": series})
    charts = []
    for k in GAP_KINDS:
        pie = k in ("pie", "doughnut")
        series = [{"name": "=C1", "values": "C2:C5"}] + ([] if pie else [{"name": "=D1", "values": "D2:D5"}])
        charts.append({"kind": k, "categories": "B2:B5" if k == "scatter" else "A2:A5", "series": series})
    sheets = [{"name": "Data",
               "columns": [{"header": "cat"}, {"header": "x", "type": "number"},
                           {"header": "a", "type": "number"}, {"header": "b", "type": "number"}],
               "rows": [["Q1", 1, 1, 4], ["Q2", 2, None, 5], ["Q3", 3, 3, None], ["Q4", 4, 4, 7]],
               "charts": charts}]
    return {"blocks": {"metadata": {"created": "2026-01-01"}, "blocks": blocks},
            "sheets": {"metadata": {"created": "2026-01-01"}, "sheets": sheets}}


def chart_gap_errors(path, want_charts):
    """The chart parts of a .docx or .pptx: each says <c:dispBlanksAs val="gap"/>, and every
    series caches exactly the points its embedded workbook has a number for (a missing
    point: no c:pt, the cell empty), at least one point missing per chart."""
    errs = []
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        parts = sorted(n for n in names if re.match(r"(word|ppt)/charts/chart\d+\.xml$", n))
        if len(parts) != want_charts:
            errs.append("%s: %d chart parts, want %d" % (path.name, len(parts), want_charts))
        for part in parts:
            root = etree.fromstring(z.read(part))
            chart = root.find("c:chart", NS)
            blanks = [e.get("val") for e in chart.findall("c:dispBlanksAs", NS)]
            if blanks != ["gap"]:
                errs.append("%s %s: c:dispBlanksAs %r" % (path.name, part, blanks))
            rels = etree.fromstring(z.read(part.replace("charts/", "charts/_rels/") + ".rels"))
            target = rels.find("pr:Relationship", NS).get("Target")
            book = posixpath.normpath(posixpath.join(posixpath.dirname(part), target))
            wb = openpyxl.load_workbook(io.BytesIO(z.read(book)))
            missing = 0
            for ser in chart.iter("{%s}ser" % C):
                val = ser.find("c:yVal", NS)
                if val is None:
                    val = ser.find("c:val", NS)
                formula, cache = data_source(val)
                count, pts = cache_points(cache)
                cells = workbook_range(wb, formula)
                if count != len(cells):
                    errs.append("%s %s: ptCount %r for %d cells" % (path.name, part, count, len(cells)))
                for i, cell in enumerate(cells):
                    if (cell is None) != (i not in pts) or (cell is not None and not same_num(cell, pts[i])):
                        errs.append("%s %s %s: point %d cached as %r, the workbook holds %r"
                                    % (path.name, part, formula, i, pts.get(i), cell))
                    missing += cell is None
            if not missing:
                errs.append("%s %s: no missing point (test bug?)" % (path.name, part))
    return errs


def check_missing_points_are_gaps(tmp_path, ext):
    """The gap specs rendered to .docx or .pptx (ext): chart_gap_errors, and a LibreOffice
    round trip to the same format reads every chart's blanks as gaps."""
    outs = []
    for name, spec in gap_specs().items():
        outs.append(render_ok(write_spec(tmp_path, spec, name + ".json"), tmp_path / (name + "." + ext)))
    assert_ooxml_ok(*outs)
    errs = []
    for out in outs:
        errs += chart_gap_errors(out, len(GAP_KINDS))
    assert not errs, "\n".join(errs)
    proc, back = soffice_convert(outs, tmp_path / "lo", to=ext)
    for out in outs:
        assert back[out] is not None, "LibreOffice did not convert %s:\n%s" % (out, proc.stdout[-2000:])
        with zipfile.ZipFile(back[out]) as z:
            got = [re.findall(r'<c:dispBlanksAs val="(\w+)"', z.read(n).decode("utf-8"))
                   for n in z.namelist() if re.match(r"(word|ppt)/charts/chart\d+\.xml$", n)]
        assert got == [["gap"]] * len(GAP_KINDS), "LibreOffice read %s as %r" % (out.name, got)


def test_missing_points_are_gaps(tmp_path, kiln_bin):
    """A null in a literal series and an empty cell under a range are the same missing
    point: no cached value, an empty cell in the embedded workbook, and every chart kind
    shows blanks as gaps. LibreOffice reads them so."""
    check_missing_points_are_gaps(tmp_path, "docx")


# =========================================================================== date axes (issue 15)

AXIS_KINDS = ["column", "bar", "line", "area"]
DATES_OUT_OF_ORDER = ["2026-03-01", "2026-01-01", "2026-02-01", "2026-05-01"]


def excel_serial(iso):
    d = dt.date.fromisoformat(iso)
    return (d - dt.date(1899, 12, 30)).days


def date_chart_specs():
    """Charts whose categories are dates (literal ISO dates, and date cells under a range)
    in every kind with a category axis, given out of date order; and charts whose
    categories only look like dates in part (text, times of day, a pie) as controls.
    Returns ({name: spec}, {chart title: expected date format or None for a text axis,
    "pie" for no axis})."""
    want = {}
    blocks = []
    for k in AXIS_KINDS:
        title = "literal dates " + k
        blocks.append({"type": "chart", "kind": k, "title": title, "categories": DATES_OUT_OF_ORDER,
                       "series": [{"name": "v", "values": [3, 1, 2, 5]}]})
        want[title] = "yyyy-mm-dd"
    blocks.append({"type": "chart", "kind": "line", "title": "dates and text",
                   "categories": ["2026-01-01", "later"], "series": [{"name": "v", "values": [1, 2]}]})
    want["dates and text"] = None
    blocks.append({"type": "chart", "kind": "pie", "title": "dates in a pie",
                   "categories": ["2026-01-01", "2026-01-02"], "series": [{"name": "v", "values": [1, 2]}]})
    want["dates in a pie"] = "pie"
    charts = []
    for k in AXIS_KINDS:
        title = "date cells " + k
        charts.append({"kind": k, "title": title, "categories": "A2:A5",
                       "series": [{"name": "=B1", "values": "B2:B5"}]})
        want[title] = "d mmm yyyy"
    charts.append({"kind": "column", "title": "times of day", "categories": "C2:C5",
                   "series": [{"name": "=B1", "values": "B2:B5"}]})
    want["times of day"] = None
    sheets = [{"name": "Data",
               "columns": [{"header": "day", "type": "date", "number_format": "d mmm yyyy"},
                           {"header": "v", "type": "number"}, {"header": "at", "type": "datetime"}],
               "rows": [[d, v, d + "T09:30"] for d, v in zip(DATES_OUT_OF_ORDER, [3, 1, 2, 5])],
               "charts": charts}]
    specs = {"dates_blocks": {"metadata": {"created": "2026-01-01"}, "blocks": blocks},
             "dates_sheets": {"metadata": {"created": "2026-01-01"}, "sheets": sheets}}
    return specs, want


def chart_title_text(chart):
    return "".join(t.text or "" for t in chart.findall("c:title//a:t", NS))


def date_axis_errors(path, want):
    """Each chart of a .docx / .pptx: a c:dateAx in the expected format (its categories a
    numeric cache of the serials in that format, the embedded workbook's category cells
    dates in it) where the categories are dates; a c:catAx otherwise."""
    errs, seen = [], set()
    with zipfile.ZipFile(path) as z:
        for part in sorted(n for n in z.namelist() if re.match(r"(word|ppt)/charts/chart\d+\.xml$", n)):
            chart = etree.fromstring(z.read(part)).find("c:chart", NS)
            title = chart_title_text(chart)
            if title not in want:
                continue
            seen.add(title)
            fmt = want[title]
            plot = chart.find("c:plotArea", NS)
            date_ax, cat_ax = plot.find("c:dateAx", NS), plot.find("c:catAx", NS)
            where = "%s %s (%r)" % (path.name, part, title)
            if fmt == "pie":
                if date_ax is not None or cat_ax is not None:
                    errs.append("%s: a pie has no axis" % where)
                continue
            if fmt is None:
                if date_ax is not None or cat_ax is None:
                    errs.append("%s: categories that are not all dates want a c:catAx" % where)
                continue
            if date_ax is None or cat_ax is not None:
                errs.append("%s: date categories want a c:dateAx, got %s" % (where, [etree.QName(e).localname for e in plot]))
                continue
            nf = date_ax.find("c:numFmt", NS)
            if nf is None or nf.get("formatCode") != fmt:
                errs.append("%s: c:dateAx numFmt %r, want %r" % (where, None if nf is None else nf.attrib, fmt))
            if date_ax.find("c:lblAlgn", NS) is not None:
                errs.append("%s: c:lblAlgn in a c:dateAx" % where)
            ser = plot.find(".//c:ser", NS)
            formula, cache = data_source(ser.find("c:cat", NS))
            count, pts = cache_points(cache)
            serials = [excel_serial(d) for d in DATES_OUT_OF_ORDER]
            if cache is None or etree.QName(cache).localname != "numCache" or \
                    cache.findtext("c:formatCode", namespaces=NS) != fmt or \
                    [float(pts.get(i, "nan")) for i in range(4)] != serials:
                errs.append("%s: categories cached as %r %r, want the serials %r in %r"
                            % (where, None if cache is None else etree.QName(cache).localname, pts, serials, fmt))
            rels = etree.fromstring(z.read(part.replace("charts/", "charts/_rels/") + ".rels"))
            book = posixpath.normpath(posixpath.join(posixpath.dirname(part),
                                                     rels.find("pr:Relationship", NS).get("Target")))
            ws = openpyxl.load_workbook(io.BytesIO(z.read(book))).worksheets[0]
            cells = [ws.cell(r, 1) for r in range(2, 6)]
            got = [(c.value.date().isoformat() if isinstance(c.value, dt.datetime) else c.value, c.number_format)
                   for c in cells]
            if got != [(d, fmt) for d in DATES_OUT_OF_ORDER]:
                errs.append("%s: embedded workbook categories %r" % (where, got))
    missing = set(want) - seen
    if missing:
        errs.append("%s: charts not found: %s" % (path.name, sorted(missing)))
    return errs


def date_labels_in_order(pdf_text_of_chart, fmt):
    """The date labels of one chart, as LibreOffice (or Kiln's PDF) drew them, parsed."""
    pats = {"yyyy-mm-dd": (r"\b\d{4}-\d{2}-\d{2}\b", "%Y-%m-%d"),
            "d mmm yyyy": (r"\b\d{1,2} [A-Z][a-z]{2} \d{4}\b", "%d %b %Y")}
    rx, pyfmt = pats[fmt]
    return [dt.datetime.strptime(m, pyfmt).date() for m in re.findall(rx, pdf_text_of_chart)]


def date_label_errors(text, sheets, want, kiln_pdf=False):
    """The date charts' axis labels in a PDF's text (pdftotext -layout): in date order,
    from the first date to the last, in the categories' format. LibreOffice runs a bar
    chart's dates upwards; Kiln's PDF lists bars in reading order, and shortens the labels
    at the two edges of an area chart when they do not fit (only those between count)."""
    errs = []
    for k in AXIS_KINDS:
        title = ("date cells " if sheets else "literal dates ") + k
        start = text.find(title)
        if start < 0:
            errs.append("no chart %r drawn" % title)
            continue
        nxt = [text.find(t, start + len(title)) for t in want if t != title]
        end = min([n for n in nxt if n > start] + [len(text)])
        labels = date_labels_in_order(text[start:end], want[title])
        if k == "bar" and not kiln_pdf:
            labels.reverse()   # a bar chart's category axis runs upwards
        first, last = dt.date(2026, 1, 1), dt.date(2026, 5, 1)
        if kiln_pdf and k == "area" and len(labels) >= 2:
            first, last = labels[0], labels[-1]
        if not labels or labels != sorted(labels) or labels[0] != first or labels[-1] != last:
            errs.append("%s: labels %r (want dates in order from %s to %s)" % (title, labels, first, last))
    return errs


def check_date_axes(tmp_path, ext):
    """The date chart specs rendered to .docx or .pptx (ext): date_axis_errors, and
    LibreOffice's PDF of them labels the dates in order (date_label_errors)."""
    specs, want = date_chart_specs()
    outs = [render_ok(write_spec(tmp_path, spec, name + ".json"), tmp_path / (name + "." + ext))
            for name, spec in specs.items()]
    assert_ooxml_ok(*outs)
    errs = []
    for out in outs:
        sheets = "sheets" in out.name
        errs += date_axis_errors(out, {t: f for t, f in want.items()
                                       if (t.startswith("date cells") or t == "times of day") == sheets})
    assert not errs, "\n".join(errs)
    proc, pdfs = soffice_convert(outs, tmp_path / "lo")
    for out in outs:
        assert pdfs[out] is not None, "LibreOffice did not convert %s:\n%s" % (out, proc.stdout[-2000:])
        errs += ["LibreOffice, %s: %s" % (out.name, e)
                 for e in date_label_errors(pdf_text(pdfs[out], layout=True), "sheets" in out.name, want)]
    assert not errs, "\n".join(errs)


def test_date_categories_get_a_date_axis(tmp_path, kiln_bin):
    """Date categories (ISO dates in a chart block, date cells under a sheet chart's range)
    get a c:dateAx in their number format in every kind with a category axis, cached as
    dates; LibreOffice then draws them in date order, labelled in that format."""
    check_date_axes(tmp_path, "docx")


# =========================================================================== line breaks (issue 15)

BREAK_FORMS = {"lf": "\n", "cr": "\r", "crlf": "\r\n"}


def breaks_spec():
    """The same text with its line break written as LF, as CR and as CR LF, in every place a
    document holds text, each group marked "-lf", "-cr", "-crlf"; and a page header and chart
    text, which are one line."""
    blocks = []
    for k, br in BREAK_FORMS.items():
        t = lambda what: "%s-%s one%stwo-%s" % (what, k, br, k)
        blocks += [
            {"type": "heading", "level": 2, "text": t("Head")},
            {"type": "paragraph", "text": t("Para")},
            {"type": "paragraph", "runs": [{"text": t("Run"), "bold": True}, {"text": " tail"}]},
            {"type": "list", "items": [t("Item"), {"text": "parent", "items": [t("Nested")]}]},
            {"type": "quote", "text": t("Quote"), "attribution": t("Attr")},
            {"type": "code", "text": t("Code")},
            {"type": "table", "caption": t("Caption"), "columns": [{"header": t("Header")}],
             "rows": [[t("Cell")]]},
            {"type": "chart", "kind": "column", "title": t("Chart"), "categories": [t("Cat")],
             "series": [{"name": t("Name"), "values": [1]}], "x_axis": {"title": t("Axis")}},
        ]
    return {"metadata": {"created": "2026-01-01"}, "page": {"header": "Head\r\nline"},
            "blocks": blocks}


def same_for_every_break(texts):
    """texts holding the group markers, grouped by marker with the marker made "-*": the
    three groups must read the same. Returns (errors, the common group)."""
    groups = {k: [re.sub(r"(Table|Figure) \d+", r"\1 N", re.sub(r"-(lf|cr|crlf)\b", "-*", s))
                  for s in texts if re.search(r"-%s\b" % k, s)]
              for k in BREAK_FORMS}
    errs = ["the text written with %s reads %r, with LF %r" % (k, g, groups["lf"])
            for k, g in groups.items() if g != groups["lf"]]
    return errs, groups["lf"]


def test_line_breaks_are_one_rule(tmp_path, kiln_bin):
    """LF, CR and CR LF are each one line break (docs/spec.md "Line breaks"): a w:br in
    runs, a new paragraph in code; chart text and the page header are one line, the break
    a space. No CR reaches the package."""
    out = render_ok(write_spec(tmp_path, breaks_spec()), tmp_path / "breaks.docx")
    assert_ooxml_ok(out)
    d = DocxDoc(out)
    texts = [xml_text(p) for p in d.body.iter(w("p"))]
    errs, common = same_for_every_break(texts)
    for what in ("Head", "Para", "Item", "Nested", "Quote", "Header", "Cell"):
        if "%s-* one\ntwo-*" % what not in common:
            errs.append("no paragraph reads %r" % ("%s-* one\ntwo-*" % what))
    for want in ("Run-* one\ntwo-* tail", "\u2014 Attr-* one\ntwo-*"):
        if want not in common:
            errs.append("no paragraph reads %r" % want)
    if not any(t.endswith("Caption-* one\ntwo-*") for t in common):
        errs.append("no caption ends in 'Caption-* one\\ntwo-*'")
    k = common.index("Code-* one") if "Code-* one" in common else -1
    if k < 0 or common[k + 1] != "two-*":
        errs.append("code lines should be paragraphs of their own: %r" % common)
    with zipfile.ZipFile(out) as z:
        for n in z.namelist():
            if n.endswith(".xml") and (b"\r" in z.read(n) or b"&#13;" in z.read(n) or b"&#xD;" in z.read(n)):
                errs.append("%s holds a carriage return" % n)
        chart_texts = []
        for n in sorted(x for x in z.namelist() if re.match(r"word/charts/chart\d+\.xml$", x)):
            root = etree.fromstring(z.read(n))
            chart_texts += [t.text for t in root.iter("{%s}t" % A)] + [v.text for v in root.iter("{%s}v" % C)]
    cerrs, chart_common = same_for_every_break([t for t in chart_texts if t])
    errs += cerrs
    for what in ("Chart", "Axis", "Name", "Cat"):
        if "%s-* one two-*" % what not in chart_common:
            errs.append("chart text %r should be on one line: %r" % (what, chart_common))
    hdr = xml_text(header_footer_xml(d, d.doc.sections[0], "header")).strip()
    if hdr != "Head line":
        errs.append("the page header is one line: %r" % hdr)
    assert not errs, "\n".join(errs)
