"""Render specs to .xlsx and read them back with independent tools.

Every file is checked three ways: ooxml-check (package + schemas), LibreOffice
(converts it to PDF), and openpyxl (the values, types and features match the spec).
Expectations are derived from the spec JSON generically (expected_rows / check_workbook),
so any sample is covered; targeted assertions cover specific samples and features.
"""
import base64
import csv
import datetime as dt
import io
import json
import math
import re
import shutil
import struct
import subprocess
import zipfile
import zlib
from pathlib import Path

import pytest

from conftest import (assert_ooxml_ok, describe, external_reader, load_json, one_break, pdf_tool, render_ok,
                      run_kiln, sample_specs,
                      soffice_convert, write_spec)

try:
    import openpyxl
    from openpyxl.utils import get_column_letter
except ImportError:  # pragma: no cover - a clear failure, not a skip
    raise RuntimeError("openpyxl is required: apt-get install python3-openpyxl")

SAMPLE_NAMES = ["sales_workbook", "financial_model", "export_200k", "report_blocks", "deck_slides"]
BIG_DATA_BYTES = 2 << 20   # a sheet reading a data file bigger than this is checked streaming

NUMERIC_TYPES = ("number", "integer", "currency", "percent")
DEFAULT_FORMATS = {"integer": "#,##0", "number": "#,##0.00", "currency": "$#,##0.00",
                   "percent": "0.0%", "date": "yyyy-mm-dd", "datetime": "yyyy-mm-dd hh:mm"}
PLAIN_DECIMAL = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?$")
LEADING_ZERO = re.compile(r"^-?0[0-9]")
ISO_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?"
                    r"(Z|[+-]\d{2}(?::?\d{2})?)?$")


# =========================================================================== expectations

def iso_to_datetime(s):
    m = ISO_RE.match(s.strip())
    assert m, "test bug: not an ISO date: %r" % s
    y, mo, d, h, mi, sec, frac, _zone = m.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    return dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(sec or 0), micro)


class Exp:
    """One expected cell: kind in blank/num/str/bool/formula/date/url/any."""

    def __init__(self, kind, value=None, cached=None, has_cached=False, url=None,
                 number_format=None, style=None, alt=None):
        self.kind, self.value, self.cached, self.has_cached = kind, value, cached, has_cached
        self.url, self.number_format, self.style, self.alt = url, number_format, style, alt

    def __repr__(self):
        return "Exp(%s, %r%s)" % (self.kind, self.value,
                                  ", cached=%r" % (self.cached,) if self.has_cached else "")


def exp_scalar(v, coltype):
    if v is None:
        return Exp("blank")
    if isinstance(v, bool):
        return Exp("bool", v)
    if isinstance(v, (int, float)):
        return Exp("num", v)
    if isinstance(v, str):
        if coltype in ("date", "datetime"):
            return Exp("date", iso_to_datetime(v))
        return Exp("str", one_break(v))
    raise AssertionError("test bug: unexpected scalar %r" % (v,))


def exp_cell(v, coltype=None):
    if not isinstance(v, dict):
        return exp_scalar(v, coltype)
    if "formula" in v:
        f = v["formula"]
        e = Exp("formula", one_break("=" + (f[1:] if f.startswith("=") else f)),
                cached=one_break(v.get("value")), has_cached="value" in v)
    elif "date" in v:
        e = Exp("date", iso_to_datetime(v["date"]))
    elif "datetime" in v:
        e = Exp("date", iso_to_datetime(v["datetime"]))
    elif "url" in v:
        e = Exp("url", v.get("text", v["url"]), url=v["url"])
    else:
        e = exp_scalar(v.get("value"), None)   # cell objects are never retyped
    e.number_format = v.get("number_format")
    e.style = v.get("style")
    return e


def exp_field(field, coltype):
    """A CSV field under a column type (docs/spec.md, Column typing)."""
    if field == "":
        return Exp("blank")
    t = coltype or "auto"
    field = one_break(field)
    if t == "string":
        return Exp("str", field)
    if t in NUMERIC_TYPES:
        return Exp("num", float(field))
    if t in ("date", "datetime"):
        return Exp("date", iso_to_datetime(field))
    if t == "boolean":
        return Exp("bool", field.strip().lower() in ("true", "1"))
    # auto: a plain decimal of at most 15 digits, without a leading zero, is a number
    if (PLAIN_DECIMAL.match(field) and not LEADING_ZERO.match(field)
            and sum(ch.isdigit() for ch in field) <= 15):
        return Exp("num", float(field))
    if re.match(r"^-?[0-9]+(\.[0-9]+)?$", field):
        return Exp("str", field)          # codes such as 007, and over 15 digits, stay text
    if re.match(r"^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$", field) or field != field.strip():
        return Exp("any", field)          # the spec does not pin these down
    return Exp("str", field)


def col_key(col):
    return col.get("key", col.get("header"))


def table_header_flag(t):
    cols = t.get("columns") or []
    default = any("header" in c for c in cols)
    data = t.get("data")
    if data and data.get("format", "csv") == "csv" and data.get("header", True) and not default:
        default = True  # the CSV's own header record supplies the names
    return t.get("header", default)


def resolve_data_path(t, base_dir):
    return Path(base_dir) / t["data"]["path"]


def expected_rows(t, base_dir):
    """Yield the expected rows (lists of Exp) of a sheet or table block, header row first."""
    cols = t.get("columns") or []
    types = [c.get("type") for c in cols]
    header = table_header_flag(t)
    data = t.get("data")

    def coltype(i):
        return types[i] if i < len(types) else None

    def row_from_json(row):
        if isinstance(row, dict):
            return [exp_cell(row.get(col_key(c)), coltype(i)) for i, c in enumerate(cols)]
        return [exp_cell(v, coltype(i)) for i, v in enumerate(row)]

    col_headers = [Exp("str", c["header"]) if "header" in c else Exp("blank") for c in cols]
    if t.get("_md"):   # a markdown table: plain text cells exact, anything else loosely
        yield [Exp("str", h) if re.fullmatch(r"[A-Za-z ()]+", h) else Exp("any", h)
               for h in (c["header"] for c in cols)]
        for row in t["rows"]:
            yield [Exp("str", v) if re.fullmatch(r"[A-Za-z ()]+", v) else Exp("any", v) for v in row]
        return
    if data is None:
        if header:
            yield col_headers
        for row in t.get("rows") or []:
            yield row_from_json(row)
        return
    path = resolve_data_path(t, base_dir)
    fmt = data.get("format", "csv")
    if fmt == "jsonl":
        if header:
            yield col_headers
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield row_from_json(json.loads(line))
        return
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter=data.get("delimiter", ","))
        first = True
        for rec in reader:
            if first and data.get("header", True):
                first = False
                if header:
                    if any("header" in c for c in cols):
                        yield col_headers
                    else:
                        yield [Exp("str", name) for name in rec]
                continue
            if first and header:
                yield col_headers
            first = False
            yield [exp_field(f, coltype(i)) for i, f in enumerate(rec)]


def default_format(col):
    if col is None:
        return None
    return col.get("number_format") or DEFAULT_FORMATS.get(col.get("type"))


def extent(t, base_dir):
    """(rows, columns) of header + data."""
    n, width = 0, len(t.get("columns") or [])
    for row in expected_rows(t, base_dir):
        n += 1
        width = max(width, len(row))
    return n, width


def rng(r1, c1, r2, c2):
    return "%s%d:%s%d" % (get_column_letter(c1), r1, get_column_letter(c2), r2)


# =========================================================================== comparison

def rgb_hex(color):
    return color.lstrip("#").upper()


def color_of(c):
    if c is None or c.rgb is None or not isinstance(c.rgb, str):
        return None
    return c.rgb[-6:].upper()


def unescape_ooxml(s):
    """SpreadsheetML writes some characters (CR, C0 controls) as _xHHHH_; openpyxl leaves them so."""
    return re.sub(r"_x([0-9A-Fa-f]{4})_", lambda m: chr(int(m.group(1), 16)), s)


def same_number(a, b):
    return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)


def same_dt(a, b):
    return isinstance(a, dt.datetime) and abs(a - b) <= dt.timedelta(milliseconds=1)


def compare_value(where, e, cell, cached_cell, col, errs):
    """Compare one openpyxl cell (and its data_only twin, or None) with an Exp."""
    v = cell.value
    k = e.kind
    if k == "any":
        return
    if k == "blank":
        if v not in (None, ""):
            errs.append("%s: expected blank, got %r" % (where, v))
        return
    if k == "str":
        if not isinstance(v, str) or unescape_ooxml(v) != e.value or cell.data_type not in ("s", "inlineStr", "str"):
            errs.append("%s: expected string %r, got %r (read as %r after _xHHHH_ decoding; type %s)"
                        % (where, e.value, v, unescape_ooxml(v) if isinstance(v, str) else v, cell.data_type))
    elif k == "num":
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not same_number(v, e.value):
            errs.append("%s: expected number %r, got %r (%s)" % (where, e.value, v, type(v).__name__))
    elif k == "bool":
        if v is not e.value:
            errs.append("%s: expected boolean %r, got %r" % (where, e.value, v))
    elif k == "date":
        if not same_dt(v, e.value):
            errs.append("%s: expected date %s, got %r (number format %r)"
                        % (where, e.value, v, cell.number_format))
    elif k == "url":
        if v != e.value:
            errs.append("%s: expected hyperlink text %r, got %r" % (where, e.value, v))
        link = getattr(cell, "hyperlink", None)
        if link is None or link.target != e.url:
            errs.append("%s: expected hyperlink target %r, got %r"
                        % (where, e.url, link.target if link is not None else None))
    elif k == "formula":
        if not isinstance(v, str) or v.replace(" ", "") != e.value.replace(" ", ""):
            errs.append("%s: expected formula %r, got %r" % (where, e.value, v))
        if e.has_cached and cached_cell is not None:
            cv = cached_cell.value
            # docs/spec.md: libxlsxwriter 1.1.4 cannot store a boolean formula
            # result, so a cached true/false is stored as the text TRUE/FALSE.
            ok = (cv == ("TRUE" if e.cached else "FALSE") if isinstance(e.cached, bool)
                  else (isinstance(cv, (int, float)) and not isinstance(cv, bool)
                        and same_number(cv, e.cached)) if isinstance(e.cached, (int, float))
                  else cv == e.cached)
            if not ok:
                errs.append("%s: expected cached formula value %r, got %r" % (where, e.cached, cv))
    # number formats
    fmt = e.number_format
    if fmt is None and col is not None and (
            k == "num" or (k == "date" and col.get("type") in ("date", "datetime"))):
        fmt = default_format(col)
    if fmt is not None and k not in ("blank", "str", "bool"):
        if cell.number_format != fmt:
            errs.append("%s: expected number format %r, got %r" % (where, fmt, cell.number_format))
    if k == "date" and fmt is None and not cell.is_date:
        errs.append("%s: date cell without a date number format (%r)" % (where, cell.number_format))
    if e.style:
        compare_style(where, e.style, cell, errs)


def compare_style(where, st, cell, errs):
    f = cell.font
    checks = []
    if "bold" in st:
        checks.append(("bold", bool(f.b), st["bold"]))
    if "italic" in st:
        checks.append(("italic", bool(f.i), st["italic"]))
    if "underline" in st:
        checks.append(("underline", f.u not in (None, "none"), st["underline"]))
    if "strike" in st:
        checks.append(("strike", bool(f.strike), st["strike"]))
    if "size" in st:
        checks.append(("size", float(f.sz or 0), float(st["size"])))
    if "font" in st:
        checks.append(("font", f.name, st["font"]))
    if "color" in st:
        checks.append(("color", color_of(f.color), rgb_hex(st["color"])))
    if "fill" in st:
        fill = cell.fill
        checks.append(("fill", (fill.fill_type, color_of(fill.fgColor)), ("solid", rgb_hex(st["fill"]))))
    if "wrap" in st:
        checks.append(("wrap", bool(cell.alignment.wrap_text), st["wrap"]))
    if "align" in st:
        checks.append(("align", cell.alignment.horizontal, st["align"]))
    if "valign" in st:
        want = {"middle": "center"}.get(st["valign"], st["valign"])
        checks.append(("valign", cell.alignment.vertical or "bottom", want))
    if "border" in st:
        want = None if st["border"] == "none" else st["border"]
        checks.append(("border", cell.border.left.style, want))
    for name, got, want in checks:
        if got != want:
            errs.append("%s: style %s expected %r, got %r" % (where, name, want, got))


MD_SEP = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def md_cells(line):
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [c.strip() for c in line.split("|")]


def markdown_tables(text):
    """A minimal reading of the headings and GFM tables of a markdown text, in order:
    [("heading", text) | ("table", table-like dict)]. Cells are compared loosely ("_md")."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            out.append(("heading", m.group(2)))
        elif "|" in line and i + 1 < len(lines) and MD_SEP.match(lines[i + 1]):
            hdr = md_cells(line)
            rows = []
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                rows.append(md_cells(lines[i]))
                i += 1
            out.append(("table", {"columns": [{"header": h} for h in hdr], "rows": rows, "_md": True}))
            continue
        i += 1
    return out


def valid_sheet_name(n):
    return (isinstance(n, str) and 1 <= len(n.encode("utf-16-le")) // 2 <= 31
            and not re.search(r"[\[\]:*?/\\\x00-\x1f]", n) and not n.startswith("'")
            and not n.endswith("'") and n.lower() != "history")


def mapped_sheets(spec):
    """The sheets an xlsx holds for a spec: [(name or None, table-like dict or None, chart count)].
    A name of None means "not pinned down by the spec" (e.g. a heading that had to be made valid)."""
    if spec.get("sheets"):
        return [(s.get("name", "Sheet%d" % (i + 1)), s, len(s.get("charts") or []))
                for i, s in enumerate(spec["sheets"])]
    out = []
    early_charts = 0
    if spec.get("blocks"):
        heading = None
        for b in spec["blocks"]:
            if b["type"] == "heading":
                heading = b.get("text") or "".join(r.get("text", "") for r in b.get("runs", []))
            elif b["type"] == "table":
                out.append([b.get("name") or heading, b, 0])
            elif b["type"] == "chart":
                if out:
                    out[-1][2] += 1
                else:
                    early_charts += 1
            elif b["type"] == "markdown":
                for kind, val in markdown_tables(b["text"]):
                    if kind == "heading":
                        heading = val
                    else:
                        out.append([heading, val, 0])
    else:
        for s in spec.get("slides") or []:
            if s.get("table"):
                out.append([s["table"].get("name") or s.get("title"),
                            s["table"], 0])
            if s.get("chart"):
                if out:
                    out[-1][2] += 1
                else:
                    early_charts += 1
    if not out:
        return [("Sheet1", None, early_charts)]
    out[0][2] += early_charts
    seen = set()
    for x in out:
        if not valid_sheet_name(x[0]) or x[0].lower() in seen:
            x[0] = None
        else:
            seen.add(x[0].lower())
    return [tuple(x) for x in out]


def count_spec_charts(spec):
    n = 0
    for s in spec.get("sheets") or []:
        n += len(s.get("charts") or [])
    for b in spec.get("blocks") or []:
        n += b.get("type") == "chart"
    for s in spec.get("slides") or []:
        n += bool(s.get("chart"))
    return n


def check_sheet_values(ws, ws_cached, t, base_dir, errs, limit=200):
    cols = t.get("columns") or []
    last = 0
    for r, row in enumerate(expected_rows(t, base_dir), start=1):
        last = r
        for c, e in enumerate(row, start=1):
            cell = ws.cell(row=r, column=c)
            cc = ws_cached.cell(row=r, column=c) if ws_cached is not None else None
            col = cols[c - 1] if c - 1 < len(cols) else None
            compare_value("%s!%s%d" % (ws.title, get_column_letter(c), r), e, cell, cc, col, errs)
            if len(errs) > limit:
                return last
    # nothing after the data in column A (merges and notes may add cells elsewhere)
    nxt = ws.cell(row=last + 1, column=1).value
    merged_tl = {(m.min_row, m.min_col) for m in ws.merged_cells.ranges}
    if nxt is not None and (last + 1, 1) not in merged_tl:
        errs.append("%s: unexpected value %r after the last data row %d" % (ws.title, nxt, last))
    return last


def check_sheet_features(ws, s, base_dir, errs, metadata):
    name = ws.title
    nrows, ncols = extent(s, base_dir)
    # freeze panes
    fr = s.get("freeze")
    if fr:
        want = "%s%d" % (get_column_letter(fr.get("columns", 0) + 1), fr.get("rows", 0) + 1)
        if ws.freeze_panes != want:
            errs.append("%s: freeze_panes expected %s, got %r" % (name, want, ws.freeze_panes))
    elif ws.freeze_panes not in (None, "A1"):
        errs.append("%s: unexpected freeze_panes %r" % (name, ws.freeze_panes))
    # table / autofilter
    table = s.get("table")
    if table:
        tinfo = table if isinstance(table, dict) else {}
        total = 1 if tinfo.get("total_row") else 0
        if len(ws.tables) != 1:
            errs.append("%s: expected 1 table, got %d" % (name, len(ws.tables)))
        else:
            tobj = list(ws.tables.values())[0]
            tname = tobj.name
            if "name" in tinfo and tname != tinfo["name"]:
                errs.append("%s: table name expected %r, got %r" % (name, tinfo["name"], tname))
            want = rng(1, 1, nrows + total, ncols)
            if tobj.ref != want:
                errs.append("%s: table ref expected %s, got %s" % (name, want, tobj.ref))
            style = tinfo.get("style", "Table Style Medium 2").replace(" ", "")
            got_style = tobj.tableStyleInfo.name if tobj.tableStyleInfo is not None else None
            if got_style != style:
                errs.append("%s: table style expected %s, got %s" % (name, style, got_style))
            if bool(tobj.totalsRowCount) != bool(total):
                errs.append("%s: table total row expected %s, got %r" % (name, bool(total), tobj.totalsRowCount))
    elif len(ws.tables):
        errs.append("%s: unexpected tables %r" % (name, list(ws.tables)))
    if s.get("autofilter") and not table:
        want = rng(1, 1, nrows, ncols)
        if ws.auto_filter.ref != want:
            errs.append("%s: autofilter expected %s, got %r" % (name, want, ws.auto_filter.ref))
    elif not s.get("autofilter") and ws.auto_filter.ref:
        errs.append("%s: unexpected autofilter %r" % (name, ws.auto_filter.ref))
    # merges
    want = sorted(m["range"].upper() for m in s.get("merges") or [])
    got = sorted(str(m) for m in ws.merged_cells.ranges)
    if want != got:
        errs.append("%s: merged ranges expected %s, got %s" % (name, want, got))
    for m in s.get("merges") or []:
        if "value" in m:
            tl = m["range"].split(":")[0]
            compare_value("%s!%s (merge)" % (name, tl), exp_cell(m["value"]), ws[tl], None, None, errs)
    # charts and images
    nch = len(s.get("charts") or [])
    if len(ws._charts) != nch:
        errs.append("%s: expected %d charts, got %d" % (name, nch, len(ws._charts)))
    nim = len(s.get("images") or [])
    if len(ws._images) != nim:
        errs.append("%s: expected %d images, got %d" % (name, nim, len(ws._images)))
    # comments
    for cm in s.get("comments") or []:
        c = ws[cm["cell"]].comment
        if c is None:
            errs.append("%s: no comment at %s" % (name, cm["cell"]))
            continue
        if cm["text"] not in c.text:
            errs.append("%s: comment at %s expected %r, got %r" % (name, cm["cell"], cm["text"], c.text))
        author = cm.get("author") or (metadata or {}).get("author")
        if author and c.author != author:
            errs.append("%s: comment author at %s expected %r, got %r" % (name, cm["cell"], author, c.author))
    # data validations
    dvs = list(ws.data_validations.dataValidation)
    for v in s.get("validations") or []:
        hit = [d for d in dvs if v["range"].upper() in str(d.sqref).split()]
        if not hit:
            errs.append("%s: no validation over %s (have %s)" % (name, v["range"], [str(d.sqref) for d in dvs]))
            continue
        d = hit[0]
        if d.type != "list":
            errs.append("%s: validation %s type %r" % (name, v["range"], d.type))
        items = (d.formula1 or "").strip('"').split(",")
        if items != v["values"]:
            errs.append("%s: validation %s values expected %s, got %r" % (name, v["range"], v["values"], d.formula1))
        if v.get("message") and v["message"] not in ((d.prompt or "") + (d.error or "")):
            errs.append("%s: validation %s message %r not found" % (name, v["range"], v["message"]))
    if len(dvs) != len(s.get("validations") or []):
        errs.append("%s: expected %d validations, got %d" % (name, len(s.get("validations") or []), len(dvs)))
    # conditional formats
    cf_types = {"cell": "cellIs", "color_scale": "colorScale", "data_bar": "dataBar"}
    got_cf = sorted((str(cf.sqref), r.type) for cf in ws.conditional_formatting for r in cf.rules)
    want_cf = sorted((c["range"].upper(), cf_types[c["type"]]) for c in s.get("conditional_formats") or [])
    if got_cf != want_cf:
        errs.append("%s: conditional formats expected %s, got %s" % (name, want_cf, got_cf))
    # tab color
    if s.get("tab_color"):
        got = color_of(ws.sheet_properties.tabColor)
        if got != rgb_hex(s["tab_color"]):
            errs.append("%s: tab color expected %s, got %s" % (name, rgb_hex(s["tab_color"]), got))
    # column widths given
    for i, c in enumerate(s.get("columns") or [], start=1):
        if "width" in c and c["width"] > 0:
            w = ws.column_dimensions[get_column_letter(i)].width
            if not (c["width"] - 0.01 <= (w or 0) <= c["width"] + 1.0):
                errs.append("%s: column %s width expected ~%s, got %r" % (name, get_column_letter(i), c["width"], w))


def check_metadata(xlsx, md, errs):
    wb = openpyxl.load_workbook(xlsx, read_only=True)
    p = wb.properties
    pairs = [("title", p.title), ("author", p.creator), ("subject", p.subject),
             ("description", p.description), ("category", p.category)]
    for key, got in pairs:
        if key in md and got != md[key]:
            errs.append("metadata %s expected %r, got %r" % (key, md[key], got))
    if "keywords" in md:
        kw = md["keywords"] if isinstance(md["keywords"], str) else ", ".join(md["keywords"])
        if p.keywords != kw:
            errs.append("metadata keywords expected %r, got %r" % (kw, p.keywords))
    if "created" in md:
        want = iso_to_datetime(md["created"])
        # created is a point in time: a zone offset is applied to reach UTC.
        zone = ISO_RE.match(md["created"].strip()).group(8)
        if zone and zone != "Z":
            zd = zone.replace(":", "")
            off = dt.timedelta(hours=int(zd[1:3]), minutes=int(zd[3:5] or 0))
            want -= off if zd[0] == "+" else -off
        if p.created is None or abs(p.created.replace(tzinfo=None) - want) > dt.timedelta(seconds=1):
            errs.append("metadata created expected %s, got %r" % (want, p.created))
    wb.close()
    if "company" in md:
        with zipfile.ZipFile(xlsx) as z:
            app = z.read("docProps/app.xml").decode("utf-8")
        m = re.search(r"<Company>(.*?)</Company>", app)
        got = m.group(1) if m else None
        want = md["company"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        if got != want:
            errs.append("metadata company expected %r, got %r" % (want, got))


def big_data(t, base_dir):
    d = t.get("data")
    return bool(d) and resolve_data_path(t, base_dir).stat().st_size > BIG_DATA_BYTES


HELPER_SHEET = re.compile(r"^_kiln_data( \(\d+\))?$")


def visible_sheets(wb, errs=None):
    """The workbook's sheets less Kiln's hidden chart-data helper sheet (which must be hidden)."""
    out = []
    for ws in wb.worksheets:
        if ws.sheet_state != "visible" and HELPER_SHEET.match(ws.title):
            continue
        if ws.sheet_state != "visible" and errs is not None:
            errs.append("sheet %r is %s" % (ws.title, ws.sheet_state))
        out.append(ws)
    return out


def check_workbook(spec, xlsx, base_dir):
    """Compare a rendered workbook with its spec; returns a list of mismatches."""
    errs = []
    sheets = mapped_sheets(spec)
    streaming = any(t is not None and big_data(t, base_dir) for _n, t, _c in sheets)
    if spec.get("metadata"):
        check_metadata(xlsx, spec["metadata"], errs)
    if streaming:
        wb = openpyxl.load_workbook(xlsx, read_only=True)
        names = [ws.title for ws in visible_sheets(wb, errs)]
        wb.close()
    else:
        wb = openpyxl.load_workbook(xlsx)
        wbc = openpyxl.load_workbook(xlsx, data_only=True)
        shown = visible_sheets(wb, errs)
        names = [ws.title for ws in shown]
        shown_c = [wbc[n] for n in names]
    want_names = [n for n, _t, _c in sheets]
    if len(names) != len(sheets):
        errs.append("expected %d sheets %s, got %s" % (len(sheets), want_names, names))
        return errs
    for i, (want, t, nch) in enumerate(sheets):
        if want is not None and names[i] != want:
            errs.append("sheet %d name expected %r, got %r" % (i, want, names[i]))
    if streaming:
        for i, (_n, t, _c) in enumerate(sheets):
            stream_compare(xlsx, names[i], t, base_dir, errs)
        return errs
    for i, (want, t, nch) in enumerate(sheets):
        ws, wsc = shown[i], shown_c[i]
        if t is None:   # text-only spec: one sheet listing the text, charts beside it
            if len(ws._charts) != nch:
                errs.append("%s: expected %d charts, got %d" % (ws.title, nch, len(ws._charts)))
            continue
        check_sheet_values(ws, wsc, t, base_dir, errs)
        if spec.get("sheets"):
            check_sheet_features(ws, t, base_dir, errs, spec.get("metadata"))
        elif len(ws._charts) != nch:
            errs.append("%s: expected %d charts beside the table, got %d" % (ws.title, nch, len(ws._charts)))
        theme = spec.get("theme") or {}
        if theme.get("header_fill") and table_header_flag(t) and not t.get("table"):
            got = color_of(ws.cell(1, 1).fill.fgColor)
            if got != rgb_hex(theme["header_fill"]):
                errs.append("%s: header fill expected %s, got %s" % (ws.title, theme["header_fill"], got))
    return errs


STREAM_SCANS = {}   # (xlsx, sheet) -> {"rows": n, "first": [3 rows of values], "last": values}


def stream_compare(xlsx, sheet_name, t, base_dir, errs, limit=50):
    """Every row of a (large) sheet against its data, in openpyxl's read_only mode (one pass;
    the row count and the first and last rows are kept in STREAM_SCANS for other tests)."""
    wb = openpyxl.load_workbook(xlsx, read_only=True)
    ws = wb[sheet_name]
    cols = t.get("columns") or []
    exp_iter = expected_rows(t, base_dir)
    n = 0
    first, last = [], None
    complete = True
    for r, row in enumerate(ws.iter_rows(), start=1):
        cells = list(row)
        last = [getattr(c, "value", None) for c in cells]
        if r <= 3:
            first.append(last)
        e_row = next(exp_iter, None)
        if e_row is None:
            errs.append("%s: more rows than expected (row %d)" % (sheet_name, r))
            complete = False
            break
        n = r
        for c, e in enumerate(e_row):
            cell = cells[c] if c < len(cells) else None
            if cell is None or not hasattr(cell, "value"):
                if e.kind not in ("blank", "any"):
                    errs.append("%s!%s%d: missing cell, expected %r" % (sheet_name, get_column_letter(c + 1), r, e))
                continue
            col = cols[c] if c < len(cols) else None
            compare_value("%s!%s%d" % (sheet_name, get_column_letter(c + 1), r), e, cell, None, col, errs)
        if len(errs) > limit:
            complete = False
            break
    rest = sum(1 for _ in exp_iter)
    if rest:
        errs.append("%s: %d expected rows missing after row %d" % (sheet_name, rest, n))
    wb.close()
    if complete:
        STREAM_SCANS[(str(xlsx), sheet_name)] = {"rows": n, "first": first, "last": last}
    return n


# =========================================================================== samples

# The 200,000-row export is read back whole with openpyxl (test_sample_values_match_spec,
# test_export_200k_rows_and_types) but not converted by LibreOffice, which spends a minute
# and a half on it: the other samples are written by the same code in the same
# (constant-memory) mode, and LibreOffice opens every one of them.
LIBREOFFICE_SAMPLES = [n for n in SAMPLE_NAMES if n != "export_200k"]


@pytest.fixture(scope="session")
def all_pdfs(tmp_path_factory, rendered_samples, feature_files):
    """ONE LibreOffice run over every rendered sample (but the 200,000-row one) and feature
    file."""
    files = [v[1] for k, v in rendered_samples.items()
             if k in LIBREOFFICE_SAMPLES and v[1] is not None]
    files += [p for p in feature_files.values() if p is not None]
    d = tmp_path_factory.mktemp("pdf")
    proc, pdfs = soffice_convert(files, d, timeout=420)
    return proc, pdfs


def get_sample(rendered_samples, name):
    if name not in rendered_samples:
        pytest.fail("samples/%s.json does not exist" % name)
    spec, out, secs = rendered_samples[name]
    if out is None:
        pytest.fail("rendering %s failed:\n%s" % (spec, "\n".join(
            f for f in rendered_samples["_failures"] if f.startswith(spec.name))))
    return spec, out


def test_samples_exist():
    present = {p.stem for p in sample_specs()}
    missing = [n for n in SAMPLE_NAMES if n not in present]
    assert not missing, "samples missing: %s" % missing


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_renders_and_passes_ooxml_check(rendered_samples, name):
    _spec, out = get_sample(rendered_samples, name)
    with open(out, "rb") as fh:
        assert fh.read(4) == b"PK\x03\x04"
    assert_ooxml_ok(out)


@pytest.mark.parametrize("name", LIBREOFFICE_SAMPLES)
def test_sample_converts_with_libreoffice(rendered_samples, all_pdfs, name):
    _spec, out = get_sample(rendered_samples, name)
    proc, pdfs = all_pdfs
    pdf = pdfs.get(Path(out))
    assert pdf is not None, "LibreOffice made no PDF of %s:\n%s" % (out, proc.stdout[-3000:])
    with open(pdf, "rb") as fh:
        assert fh.read(5) == b"%PDF-"


@pytest.mark.parametrize("name", [n for n in SAMPLE_NAMES if n != "export_200k"])
def test_sample_pdf_shows_no_formula_errors(rendered_samples, all_pdfs, name):
    """What LibreOffice shows (recalculated or cached) holds no #REF!, #NAME?, #DIV/0!, #VALUE! or Err:5xx."""
    _spec, out = get_sample(rendered_samples, name)
    pdf = all_pdfs[1].get(Path(out))
    assert pdf is not None, "LibreOffice made no PDF of %s" % out
    pdftotext = pdf_tool("pdftotext")
    if not pdftotext:
        pytest.fail("pdftotext is not installed: apt-get install poppler-utils")
    text = subprocess.run([pdftotext, "-layout", str(pdf), "-"], stdout=subprocess.PIPE,
                          timeout=120).stdout.decode("utf-8", "replace")
    assert text.strip(), "the PDF of %s holds no text" % name
    bad = sorted(set(re.findall(r"#REF!|#NAME\?|#DIV/0!|#VALUE!|#N/A|#NUM!|Err:\d{3}", text)))
    assert not bad, "%s shows %s after LibreOffice loaded it" % (name, bad)


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_values_match_spec(rendered_samples, name):
    spec_path, out = get_sample(rendered_samples, name)
    if name == "export_200k":
        external_reader("openpyxl over 200,000 rows")
    spec = load_json(spec_path)
    errs = check_workbook(spec, out, spec_path.parent)
    assert not errs, "%s differs from its spec:\n%s" % (name, "\n".join(errs[:60]))


def test_sample_files_are_all_rendered(rendered_samples):
    assert not rendered_samples["_failures"], "\n\n".join(rendered_samples["_failures"])


def test_every_spec_chart_is_in_the_workbook(rendered_samples):
    for name, entry in rendered_samples.items():
        if name.startswith("_") or entry[1] is None or name == "export_200k":
            continue
        spec_path, out, _s = entry
        spec = load_json(spec_path)
        wb = openpyxl.load_workbook(out)
        got = sum(len(ws._charts) for ws in wb.worksheets)
        assert got == count_spec_charts(spec), "%s: %d charts in the spec, %d in the xlsx" % (
            name, count_spec_charts(spec), got)


def test_export_200k_rows_and_types(rendered_samples):
    spec_path, out = get_sample(rendered_samples, "export_200k")
    external_reader("openpyxl over 200,000 rows")
    spec = load_json(spec_path)
    sheets = [s for s in spec.get("sheets", []) if s.get("data")]
    assert sheets, "export_200k.json has no data-backed sheet"
    s = sheets[0]
    csv_path = resolve_data_path(s, spec_path.parent)
    with open(csv_path, encoding="utf-8", newline="") as fh:
        records = list(csv.reader(fh, delimiter=s["data"].get("delimiter", ",")))
    has_hdr = s["data"].get("header", True)
    data_records = records[1:] if has_hdr else records
    assert len(data_records) >= 200000, "the CSV has only %d records" % len(data_records)
    idx = [i for i, x in enumerate(spec["sheets"]) if x is s][0]
    sheet_name = s.get("name", "Sheet%d" % (idx + 1))
    scan = STREAM_SCANS.get((str(out), sheet_name))
    if scan is None:   # the full comparison did not run (or stopped early): one pass here
        wb = openpyxl.load_workbook(out, read_only=True)
        rows = wb[sheet_name].iter_rows(values_only=True)
        first_rows = [next(rows) for _ in range(3)]
        n = 3
        last = first_rows[-1]
        for last in rows:
            n += 1
        wb.close()
    else:
        n, first_rows, last = scan["rows"], scan["first"], scan["last"]
    header_rows = 1 if table_header_flag(s) else 0
    assert n == len(data_records) + header_rows, "row count %d, expected %d" % (n, len(data_records) + header_rows)
    cols = s.get("columns") or []
    first = first_rows[header_rows]
    for which, got, rec in (("first", first, data_records[0]), ("last", last, data_records[-1])):
        for i, field in enumerate(rec):
            e = exp_field(field, cols[i].get("type") if i < len(cols) else None)
            g = got[i] if i < len(got) else None
            if e.kind == "num":
                assert isinstance(g, (int, float)) and not isinstance(g, bool) and same_number(g, e.value), \
                    "%s row col %d: %r vs CSV %r" % (which, i + 1, g, field)
            elif e.kind == "date":
                assert same_dt(g, e.value), "%s row col %d: %r vs CSV %r" % (which, i + 1, g, field)
            elif e.kind == "str":
                assert g == field, "%s row col %d: %r vs CSV %r" % (which, i + 1, g, field)
            elif e.kind == "bool":
                assert g is e.value, "%s row col %d: %r vs CSV %r" % (which, i + 1, g, field)
    # the typed columns the sample is about: numbers, dates, leading-zero codes
    kinds = {c.get("type") for c in cols}
    assert kinds & set(NUMERIC_TYPES), "export_200k declares no numeric column: %s" % cols
    assert kinds & {"date", "datetime"}, "export_200k declares no date column: %s" % cols
    codes = [i for i, f in enumerate(data_records[0]) if LEADING_ZERO.match(f) and f.isdigit()]
    for i in codes:
        t = cols[i].get("type") if i < len(cols) else None
        if t in (None, "auto", "string"):
            assert isinstance(first[i], str) and first[i] == data_records[0][i], \
                "leading-zero code column %d became %r" % (i + 1, first[i])


def test_sales_workbook_targets(rendered_samples):
    spec_path, out = get_sample(rendered_samples, "sales_workbook")
    spec = load_json(spec_path)
    wb = openpyxl.load_workbook(out)
    wbc = openpyxl.load_workbook(out, data_only=True)
    assert [w.title for w in visible_sheets(wb)] == [
        s.get("name", "Sheet%d" % (i + 1)) for i, s in enumerate(spec["sheets"])]
    feats = {k for s in spec["sheets"] for k in s}
    # a sales workbook worth its name shows charts and formulas with cached values
    assert "charts" in feats, "sales_workbook has no charts"
    nformulas = ncached = 0
    for ws, wsc in zip(wb.worksheets, wbc.worksheets):
        for row in ws.iter_rows():
            for c in row:
                if c.data_type == "f":
                    nformulas += 1
                    ncached += wsc[c.coordinate].value is not None
    assert nformulas > 0, "sales_workbook holds no formulas"
    assert ncached == nformulas, "%d of %d formulas have no cached value" % (nformulas - ncached, nformulas)


def test_financial_model_targets(rendered_samples):
    spec_path, out = get_sample(rendered_samples, "financial_model")
    spec = load_json(spec_path)
    wb = openpyxl.load_workbook(out)
    wbc = openpyxl.load_workbook(out, data_only=True)
    # every formula in the spec that gives a cached value has it in the file
    n = 0
    for i, s in enumerate(spec.get("sheets") or []):
        ws, wsc = wb.worksheets[i], wbc.worksheets[i]
        for r, row in enumerate(expected_rows(s, spec_path.parent), start=1):
            for c, e in enumerate(row, start=1):
                if e.kind == "formula":
                    n += 1
                    assert ws.cell(r, c).data_type == "f", "%s!%s: not a formula" % (ws.title, ws.cell(r, c).coordinate)
                    if e.has_cached:
                        got = wsc.cell(r, c).value
                        assert (same_number(got, e.cached) if isinstance(e.cached, (int, float))
                                and not isinstance(e.cached, bool) else got == e.cached), "%s!%s: cached %r, spec says %r" % (
                            ws.title, ws.cell(r, c).coordinate, got, e.cached)
    assert n > 0, "financial_model has no formulas"


def test_report_blocks_maps_tables_to_sheets(rendered_samples):
    spec_path, out = get_sample(rendered_samples, "report_blocks")
    spec = load_json(spec_path)
    assert not spec.get("sheets") and spec.get("blocks"), "report_blocks should hold blocks only"
    wb = openpyxl.load_workbook(out)
    assert len(visible_sheets(wb)) >= 1
    # no text block is rendered into cells: every non-empty cell value comes from a table
    table_texts = set()
    for b in spec["blocks"]:
        if b["type"] == "table":
            for c in b.get("columns") or []:
                if "header" in c:
                    table_texts.add(c["header"])
    paragraphs = [b.get("text") for b in spec["blocks"] if b["type"] == "paragraph" and b.get("text")]
    cells = {c.value for ws in visible_sheets(wb) for row in ws.iter_rows() for c in row if isinstance(c.value, str)}
    leaked = [p for p in paragraphs if p in cells and p not in table_texts]
    assert not leaked, "paragraph text rendered into cells: %s" % leaked[:3]


def test_deck_slides_maps_tables_and_charts(rendered_samples):
    spec_path, out = get_sample(rendered_samples, "deck_slides")
    spec = load_json(spec_path)
    assert spec.get("slides") and not spec.get("sheets") and not spec.get("blocks")
    wb = openpyxl.load_workbook(out)
    ntables = sum(1 for s in spec["slides"] if s.get("table"))
    assert len(visible_sheets(wb)) >= max(1, ntables)
    assert sum(len(ws._charts) for ws in visible_sheets(wb)) == count_spec_charts(spec)


# =========================================================================== feature specs

def png_bytes(w=4, h=3, color=(200, 30, 30)):
    raw = b"".join(b"\x00" + bytes(color) * w for _ in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def png_b64(**kw):
    return base64.b64encode(png_bytes(**kw)).decode("ascii")


CELL_TYPES_SPEC = {
    "metadata": {"title": "Cell types", "author": "Kiln tests", "subject": "e2e", "company": "A & B",
                 "keywords": ["kiln", "xlsx"], "category": "tests", "description": "every cell type",
                 "created": "2026-03-01T09:30:00Z"},
    "sheets": [{
        "name": "Types",
        "columns": [{"header": "Kind"}, {"header": "Value"}],
        "rows": [
            ["integer", 42],
            ["float", -1234.5678],
            ["big", 1e15],
            ["string", "hello, world"],
            ["equals string", "=SUM(A1:A2)"],
            ["at string", "@not a formula"],
            ["true", True],
            ["false", False],
            ["null", None],
            ["formula num", {"formula": "=1+2", "value": 3}],
            ["formula str", {"formula": "CONCATENATE(\"a\",\"b\")", "value": "ab"}],
            ["formula bool", {"formula": "=1>0", "value": True}],
            ["formula no cache", {"formula": "=A1"}],
            ["date 1900", {"date": "1900-03-01"}],
            ["date 2026", {"date": "2026-03-31"}],
            ["datetime Z", {"datetime": "2026-03-31T14:30:00Z"}],
            ["datetime offset", {"datetime": "2026-03-31T23:45:10+02:00"}],
            ["datetime local", {"datetime": "2026-01-01T00:00:01"}],
            ["url", {"url": "https://example.com/a?b=1&c=2", "text": "Example"}],
            ["url bare", {"url": "mailto:someone@example.com"}],
            ["percent", {"value": 0.125, "number_format": "0.0%"}],
            ["styled", {"value": "bold red fill", "style": {"bold": True, "fill": "#FFC7CE",
                                                           "color": "#9C0006", "italic": True}}],
            ["styled num", {"value": 7, "number_format": "0.00", "style": {"align": "center", "border": "thin"}}],
            ["unicode", "Grüße — 日本語 — emoji \U0001F600"],
            ["newline", "line one\nline two\ttab"],
            ["xml chars", "<a href=\"x\">&amp; 'q'</a>"],
            ["long", "x" * 32767],
            ["cr lf", "a\r\nb"],
            ["date col value", {"value": None}],
        ],
    }],
}

TYPED_COLUMNS_SPEC = {
    "sheets": [{
        "name": "Typed",
        "columns": [
            {"header": "Int", "type": "integer"},
            {"header": "Num", "type": "number"},
            {"header": "Cur", "type": "currency"},
            {"header": "Pct", "type": "percent"},
            {"header": "Day", "type": "date"},
            {"header": "When", "type": "datetime"},
            {"header": "Flag", "type": "boolean"},
            {"header": "Text", "type": "string"},
            {"header": "Custom", "type": "number", "number_format": "0.000"},
        ],
        "rows": [
            [1234, 3.5, 19.99, 0.25, "2026-03-31", "2026-03-31T08:15:00", True, "007", 1.5],
            [-5, 0, 0.01, 1, "1900-03-01", "2026-12-31T23:59:59Z", False, "text", {"value": 2, "number_format": "0"}],
            ["n/a", None, None, None, None, None, None, None, None],
        ],
    }],
}

SHEET_FEATURES_SPEC = {
    "metadata": {"author": "Ada"},
    "theme": {"header_fill": "#123456"},
    "sheets": [
        {
            "name": "Sales 2026",
            "columns": [{"header": "Region", "width": 30}, {"header": "Q1", "type": "integer"},
                        {"header": "Q2", "type": "integer"}, {"header": "Status"}],
            "rows": [["North", 100, 120, "Open"], ["South", 80, 95, "Closed"], ["East", 60, 70, "Open"],
                     {"Region": "West", "Q1": 40, "Q2": 45, "Status": "Open"}],
            "freeze": {"rows": 1, "columns": 1},
            "autofilter": True,
            "merges": [{"range": "F1:H1", "value": "Merged title"}],
            "conditional_formats": [
                {"range": "B2:B5", "type": "cell", "criteria": ">", "value": 70,
                 "style": {"fill": "#C6EFCE", "color": "#006100"}},
                {"range": "C2:C5", "type": "color_scale", "colors": ["#F8696B", "#FFEB84", "#63BE7B"]},
                {"range": "B2:C5", "type": "data_bar", "color": "#638EC6"}],
            "validations": [{"range": "D2:D100", "type": "list", "values": ["Open", "Closed"],
                             "message": "Pick one"}],
            "comments": [{"cell": "B2", "text": "Best quarter", "author": "Bob"},
                         {"cell": "C3", "text": "Default author"}],
            "images": [{"image": {"data": png_b64(), "alt": "red dot"}, "anchor": "J2", "scale": 2.0}],
            "charts": [{"kind": "column", "title": "Q1 by region", "categories": "A2:A5",
                        "series": [{"name": "=B1", "values": "B2:B5"}, {"name": "Second", "values": "C2:C5"}],
                        "anchor": "J10"}],
            "tab_color": "#FF0000",
        },
        {
            "name": "Tabled",
            "columns": [{"header": "Item"}, {"header": "Qty", "type": "integer"}],
            "rows": [["a", 1], ["b", 2]],
            "table": {"name": "Items", "style": "Table Style Light 9", "total_row": False},
        },
        {"columns": [{"header": "Default name"}], "rows": [["x"]], "table": True},
        {"rows": [[1, 2, 3], ["no", "header", "row"]]},
    ],
}

CHART_KINDS = ["column", "bar", "line", "pie", "doughnut", "scatter", "area"]
OPENPYXL_CHART = {"column": "BarChart", "bar": "BarChart", "line": "LineChart", "pie": "PieChart",
                  "doughnut": "DoughnutChart", "scatter": "ScatterChart", "area": "AreaChart"}


def chart_spec(kind, i):
    multi = kind not in ("pie", "doughnut")
    cats = [1, 2, 3, 4] if kind == "scatter" else ["Q1", "Q2", "Q3", "Q4"]
    series = [{"name": "2025", "values": [10, 12, 9, 14], "color": "#4472C4"}]
    if multi:
        series.append({"name": "2026", "values": [11, 13, 15, 16]})
    c = {"kind": kind, "title": "%s chart" % kind, "categories": cats, "series": series,
         "x_axis": {"title": "x"}, "y_axis": {"title": "y"},
         "legend": ["right", "left", "top", "bottom", "none"][i % 5], "anchor": "B%d" % (2 + 16 * i),
         "width": 400, "height": 240}
    if kind in ("column", "bar", "area"):
        c["stacked"] = i % 2 == 0
    if kind in ("pie", "doughnut"):
        del c["x_axis"], c["y_axis"]
    return c


CHARTS_SPEC = {
    "sheets": [{"name": "Charts", "rows": [["chart sheet"]],
                "charts": [chart_spec(k, i) for i, k in enumerate(CHART_KINDS)]}]
    + [{"name": "Range " + k, "columns": [{"header": "Cat"}, {"header": "A", "type": "number"},
                                          {"header": "B", "type": "number"}],
        "rows": [[1 if k == "scatter" else "a", 1, 2], [2 if k == "scatter" else "b", 3, 1],
                 [3 if k == "scatter" else "c", 2, 2]],
        "charts": [{"kind": k, "categories": "A2:A4",
                    "series": [{"name": "='Range %s'!B1" % k, "values": "'Range %s'!B2:B4" % k}]
                    + ([] if k in ("pie", "doughnut") else [{"name": "=C1", "values": "C2:C4"}])}]}
       for k in CHART_KINDS],
}

BLOCKS_SPEC = {
    "metadata": {"title": "Report"},
    "blocks": [
        {"type": "heading", "level": 1, "text": "Quarterly numbers"},
        {"type": "paragraph", "text": "This paragraph must not land in a cell."},
        {"type": "table", "columns": [{"header": "Q"}, {"header": "Revenue", "type": "currency"}],
         "rows": [["Q1", 10.5], ["Q2", 12.25]]},
        {"type": "chart", "kind": "line", "title": "Revenue", "categories": ["Q1", "Q2"],
         "series": [{"name": "Revenue", "values": [10.5, 12.25]}]},
        {"type": "table", "name": "Named table", "columns": [{"header": "K"}, {"header": "V"}],
         "rows": [["a", 1], ["b", {"date": "2026-02-28"}]]},
        {"type": "list", "items": ["one", "two"]},
    ],
}

MARKDOWN_SPEC = {
    "blocks": [
        {"type": "markdown", "text": "# Inventory\n\nSome *intro* text.\n\n"
                                     "| Item | Colour |\n|------|:------:|\n| apple | red |\n| pear | green |\n"},
    ]
}

SLIDES_SPEC = {
    "slides": [
        {"layout": "title", "title": "Deck", "subtitle": "sub"},
        {"layout": "table", "title": "Numbers",
         "table": {"name": "Slide numbers", "columns": [{"header": "A"}, {"header": "B", "type": "integer"}],
                   "rows": [["x", 1], ["y", 2]]}},
        {"layout": "chart", "title": "Trend", "chart": {"kind": "bar", "categories": ["x", "y"],
                                                        "series": [{"name": "B", "values": [1, 2]}]}},
    ]
}

WIDTHS_SPEC = {
    "sheets": [{
        "name": "Widths",
        "columns": [{"header": "Short"}, {"header": "Long"}, {"header": "Given", "width": 40},
                    {"header": "Narrow", "width": 5}],
        "rows": [["a", "a much, much longer piece of text than the short column holds", "g", "n"],
                 ["b", "another long-ish value here", "g", "n"]],
    }]
}

FEATURE_SPECS = {
    "cell_types": CELL_TYPES_SPEC,
    "typed_columns": TYPED_COLUMNS_SPEC,
    "sheet_features": SHEET_FEATURES_SPEC,
    "charts": CHARTS_SPEC,
    "blocks": BLOCKS_SPEC,
    "markdown": MARKDOWN_SPEC,
    "slides": SLIDES_SPEC,
    "widths": WIDTHS_SPEC,
}


@pytest.fixture(scope="session")
def feature_files(tmp_path_factory, kiln_bin):
    """Each FEATURE_SPECS entry rendered once: {name: xlsx path or None}; errors in _errors."""
    d = tmp_path_factory.mktemp("features")
    result = {}
    errors = {}
    for name, spec in FEATURE_SPECS.items():
        sp = write_spec(d, spec, name + ".json")
        out = d / (name + ".xlsx")
        proc = run_kiln("render", sp, "-o", out)
        if proc.returncode == 0 and out.is_file():
            result[name] = out
        else:
            result[name] = None
            errors[name] = describe(proc)
    feature_files_errors.update(errors)
    return result


feature_files_errors = {}


def feature(feature_files, name):
    out = feature_files[name]
    if out is None:
        pytest.fail("render of the %s spec failed: %s" % (name, feature_files_errors.get(name)))
    return out


@pytest.mark.parametrize("name", list(FEATURE_SPECS))
def test_feature_spec_renders_valid_package(feature_files, name):
    out = feature(feature_files, name)
    assert_ooxml_ok(out)


@pytest.mark.parametrize("name", list(FEATURE_SPECS))
def test_feature_spec_converts_with_libreoffice(feature_files, all_pdfs, name):
    out = feature(feature_files, name)
    proc, pdfs = all_pdfs
    assert pdfs.get(Path(out)) is not None, "LibreOffice made no PDF of %s:\n%s" % (out, proc.stdout[-3000:])


@pytest.mark.parametrize("name", ["cell_types", "typed_columns", "sheet_features", "charts", "blocks",
                                  "slides", "widths"])
def test_feature_spec_values_match(feature_files, name, tmp_path):
    out = feature(feature_files, name)
    errs = check_workbook(FEATURE_SPECS[name], out, tmp_path)
    assert not errs, "\n".join(errs[:60])


def test_cell_types_targeted(feature_files):
    out = feature(feature_files, "cell_types")
    wb = openpyxl.load_workbook(out)
    wbc = openpyxl.load_workbook(out, data_only=True)
    ws, wsc = wb["Types"], wbc["Types"]
    rows = {ws.cell(r, 1).value: r for r in range(2, ws.max_row + 1)}

    def val(kind, cached=False):
        return (wsc if cached else ws).cell(rows[kind], 2)

    assert val("equals string").data_type == "s" and val("equals string").value == "=SUM(A1:A2)"
    assert val("formula num").data_type == "f"
    assert val("formula num", True).value == 3
    assert val("formula str", True).value == "ab"
    # cached booleans are stored as the text TRUE (docs/spec.md: libxlsxwriter 1.1.4
    # has no boolean formula result); Excel recalculates on load either way
    assert val("formula bool", True).value == "TRUE"
    assert val("date 1900").value == dt.datetime(1900, 3, 1)
    assert val("date 2026").value == dt.datetime(2026, 3, 31)
    assert val("datetime Z").value == dt.datetime(2026, 3, 31, 14, 30)
    assert val("datetime offset").value == dt.datetime(2026, 3, 31, 23, 45, 10)
    assert val("datetime local").value == dt.datetime(2026, 1, 1, 0, 0, 1)
    assert val("url").hyperlink.target == "https://example.com/a?b=1&c=2"
    assert val("percent").number_format == "0.0%"
    assert val("styled").font.b and val("styled").fill.fgColor.rgb.endswith("FFC7CE")
    assert len(val("long").value) == 32767
    # the raw XML holds the cached values next to the formulas
    with zipfile.ZipFile(out) as z:
        xml = z.read("xl/worksheets/sheet1.xml").decode("utf-8")
    for cell_ref in (val("formula num").coordinate, val("formula bool").coordinate):
        m = re.search(r'<c r="%s"[^>]*>(.*?)</c>' % cell_ref, xml, re.S)
        assert m and "<f>" in m.group(1) and "<v>" in m.group(1), "no cached <v> at %s" % cell_ref


def test_date_serials_in_xml(feature_files):
    """1900-03-01 is serial 61 (Excel's 1900 leap-year bug); 2026-03-31 is 46112; no zone shift."""
    out = feature(feature_files, "cell_types")
    wb = openpyxl.load_workbook(out)
    ws = wb["Types"]
    rows = {ws.cell(r, 1).value: r for r in range(2, ws.max_row + 1)}
    with zipfile.ZipFile(out) as z:
        xml = z.read("xl/worksheets/sheet1.xml").decode("utf-8")

    def serial(kind):
        ref = "B%d" % rows[kind]
        m = re.search(r'<c r="%s"[^>]*><v>([^<]*)</v>' % ref, xml)
        assert m, "no numeric value at %s" % ref
        return float(m.group(1))
    assert serial("date 1900") == 61
    assert serial("date 2026") == 46112
    assert math.isclose(serial("datetime Z"), 46112 + 14.5 / 24, abs_tol=1e-9)


def test_typed_columns_targeted(feature_files):
    out = feature(feature_files, "typed_columns")
    ws = openpyxl.load_workbook(out)["Typed"]
    assert ws["A2"].value == 1234 and ws["A2"].number_format == "#,##0"
    assert ws["B2"].number_format == "#,##0.00"
    assert ws["C2"].number_format == "$#,##0.00"
    assert ws["D2"].number_format == "0.0%"
    assert ws["E2"].value == dt.datetime(2026, 3, 31) and ws["E2"].number_format == "yyyy-mm-dd"
    assert ws["F2"].value == dt.datetime(2026, 3, 31, 8, 15) and ws["F2"].number_format == "yyyy-mm-dd hh:mm"
    assert ws["F3"].value == dt.datetime(2026, 12, 31, 23, 59, 59)
    assert ws["G2"].value is True and ws["G3"].value is False
    assert ws["H2"].value == "007" and ws["H2"].data_type == "s"
    assert ws["I2"].number_format == "0.000" and ws["I3"].number_format == "0"
    assert ws["A4"].value == "n/a" and ws["A4"].data_type == "s"   # a string in a number column stays text


def test_sheet_features_targeted(feature_files):
    out = feature(feature_files, "sheet_features")
    wb = openpyxl.load_workbook(out)
    assert [w.title for w in visible_sheets(wb)] == ["Sales 2026", "Tabled", "Sheet3", "Sheet4"]
    ws = wb["Sales 2026"]
    assert ws.freeze_panes == "B2"
    assert ws.auto_filter.ref == "A1:D5"
    assert [str(r) for r in ws.merged_cells.ranges] == ["F1:H1"]
    assert ws["F1"].value == "Merged title"
    assert len(ws._charts) == 1 and len(ws._images) == 1
    assert ws["B2"].comment.text.find("Best quarter") >= 0 and ws["B2"].comment.author == "Bob"
    assert ws["C3"].comment.author == "Ada"
    assert ws["A5"].value == "West" and ws["C5"].value == 45   # object row looked up by header
    assert color_of(ws["A1"].fill.fgColor) == "123456"
    assert ws["A1"].value == "Region" and ws["A1"].font.b
    t = wb["Tabled"].tables["Items"]
    assert t.ref == "A1:B3" and t.tableStyleInfo.name == "TableStyleLight9"
    assert len(wb["Sheet3"].tables) == 1 and wb["Sheet3"].auto_filter.ref in (None, "")
    assert wb["Sheet4"]["A1"].value == 1 and wb["Sheet4"]["A2"].value == "no"


def test_image_is_the_png_given(feature_files):
    try:
        import PIL.Image  # noqa: F401  (openpyxl drops images without Pillow)
    except ImportError:
        pytest.fail("openpyxl needs Pillow to read images: apt-get install python3-pil")
    out = feature(feature_files, "sheet_features")
    with zipfile.ZipFile(out) as z:
        media = [n for n in z.namelist() if n.startswith("xl/media/")]
        assert len(media) == 1, media
        assert z.read(media[0]) == png_bytes()
        drawing = [n for n in z.namelist() if n.startswith("xl/drawings/drawing")]
        xml = "".join(z.read(n).decode("utf-8") for n in drawing)
    assert 'descr="red dot"' in xml, "image alt text missing from the drawing"


def test_chart_kinds(feature_files):
    out = feature(feature_files, "charts")
    wb = openpyxl.load_workbook(out)
    charts = wb["Charts"]._charts
    assert [type(c).__name__ for c in charts] == [OPENPYXL_CHART[k] for k in CHART_KINDS]
    assert [c.type for c in charts if type(c).__name__ == "BarChart"] == ["col", "bar"]
    for k in CHART_KINDS:
        cs = wb["Range " + k]._charts
        assert len(cs) == 1 and type(cs[0]).__name__ == OPENPYXL_CHART[k], k
    with zipfile.ZipFile(out) as z:
        chart_parts = [n for n in z.namelist() if re.match(r"xl/charts/chart\d+\.xml$", n)]
        assert len(chart_parts) == 14
        xml = "".join(z.read(n).decode("utf-8") for n in chart_parts)
    assert xml.count("<c:doughnutChart>") == 2 and xml.count("<c:scatterChart>") == 2
    assert "stacked" in xml, "no stacked grouping although stacked charts were asked for"
    for k in CHART_KINDS:
        assert "%s chart" % k in xml, "title of the %s chart missing" % k


def test_chart_kinds_each_alone(tmp_path):
    """Every chart kind on its own in a workbook passes ooxml-check (one check run)."""
    outs = []
    for i, k in enumerate(CHART_KINDS):
        sp = write_spec(tmp_path, {"sheets": [{"name": k, "rows": [[1]], "charts": [chart_spec(k, i)]}]},
                        "%s.json" % k)
        outs.append(render_ok(sp, tmp_path / ("%s.xlsx" % k)))
    assert_ooxml_ok(*outs)


def test_column_widths_given_and_auto(feature_files):
    out = feature(feature_files, "widths")
    ws = openpyxl.load_workbook(out)["Widths"]
    w = {c: ws.column_dimensions[c].width for c in "ABCD"}
    assert 40 <= w["C"] < 41.5, w
    assert 5 <= w["D"] < 6.5, w
    assert w["B"] is not None and w["A"] is not None
    assert w["B"] > w["A"] + 10, "autofit: the long column (%s) is not wider than the short one (%s)" % (w["B"], w["A"])


def test_blocks_map_to_sheets(feature_files):
    out = feature(feature_files, "blocks")
    wb = openpyxl.load_workbook(out)
    assert [w.title for w in visible_sheets(wb)] == ["Quarterly numbers", "Named table"]
    ws = wb["Quarterly numbers"]
    assert [c.value for c in ws[1]][:2] == ["Q", "Revenue"]
    assert ws["B3"].value == 12.25 and ws["B3"].number_format == "$#,##0.00"
    assert len(ws._charts) == 1 and len(wb["Named table"]._charts) == 0
    all_text = [c.value for w in visible_sheets(wb) for row in w.iter_rows() for c in row]
    assert "This paragraph must not land in a cell." not in all_text
    assert wb["Named table"]["B3"].value == dt.datetime(2026, 2, 28)


def test_markdown_table_maps_to_sheet(feature_files):
    out = feature(feature_files, "markdown")
    wb = openpyxl.load_workbook(out)
    assert [w.title for w in visible_sheets(wb)] == ["Inventory"], [w.title for w in visible_sheets(wb)]
    ws = wb["Inventory"]
    assert [[c.value for c in row] for row in ws.iter_rows(max_col=2)] == [
        ["Item", "Colour"], ["apple", "red"], ["pear", "green"]]


def test_slides_map_to_sheets(feature_files):
    out = feature(feature_files, "slides")
    wb = openpyxl.load_workbook(out)
    assert [w.title for w in visible_sheets(wb)][0] == "Slide numbers"
    ws = wb["Slide numbers"]
    assert [[c.value for c in row] for row in ws.iter_rows(max_col=2)] == [["A", "B"], ["x", 1], ["y", 2]]
    assert sum(len(w._charts) for w in visible_sheets(wb)) == 1


# =========================================================================== data files

def test_csv_quotes_newlines_crlf(tmp_path):
    data = ('id,code,name,amount,when\r\n'
            '1,007,"Smith, John",12.50,2026-03-31\r\n'
            '2,0123,"He said ""hi""",-3,2026-01-01T10:00:00Z\r\n'
            '3,100,"two\r\nlines",0,1900-03-01\r\n'
            '4,,"",,\r\n')
    (tmp_path / "d.csv").write_bytes(data.encode("utf-8"))
    spec = {"sheets": [{"name": "CSV", "data": {"path": "d.csv", "format": "csv", "header": True},
                        "columns": [{"type": "integer"}, {}, {"type": "string"},
                                    {"type": "currency"}, {"type": "datetime"}]}]}
    sp = write_spec(tmp_path, spec)
    out = render_ok(sp, tmp_path / "csv.xlsx")
    assert_ooxml_ok(out)
    ws = openpyxl.load_workbook(out)["CSV"]
    got = [[c.value for c in row] for row in ws.iter_rows(max_col=5)]
    assert got[0] == ["id", "code", "name", "amount", "when"]
    assert got[1][:4] == [1, "007", "Smith, John", 12.5] and got[1][4] == dt.datetime(2026, 3, 31)
    assert got[2][:4] == [2, "0123", 'He said "hi"', -3] and got[2][4] == dt.datetime(2026, 1, 1, 10)
    # a line break in a field, CR LF here, is a line feed in a cell that wraps
    assert unescape_ooxml(got[3][2]) == "two\nlines", repr(got[3][2])
    assert ws["C4"].alignment.wrap_text
    assert got[3][1] == 100 and isinstance(got[3][1], (int, float))
    assert got[3][4] == dt.datetime(1900, 3, 1)
    assert got[4][0] == 4 and got[4][1] is None and got[4][3] is None
    assert len(got) == 5
    assert ws["D2"].number_format == "$#,##0.00"
    errs = check_workbook(spec, out, tmp_path)
    assert not errs, "\n".join(errs)


def test_csv_other_delimiter_and_no_header(tmp_path):
    (tmp_path / "d.csv").write_text("a;1;true\nb;2,5;false\n", encoding="utf-8")
    spec = {"sheets": [{"name": "Semi", "data": {"path": "d.csv", "format": "csv", "header": False,
                                                  "delimiter": ";"},
                        "columns": [{"header": "k"}, {"header": "v", "type": "string"},
                                    {"header": "f", "type": "boolean"}]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "semi.xlsx")
    ws = openpyxl.load_workbook(out)["Semi"]
    assert [[c.value for c in row] for row in ws.iter_rows(max_col=3)] == [
        ["k", "v", "f"], ["a", "1", True], ["b", "2,5", False]]


def test_jsonl_data(tmp_path):
    lines = [json.dumps(x) for x in (
        ["alpha", 1, True, {"date": "2026-03-31"}],
        {"name": "beta", "n": 2.5, "ok": False, "when": "2026-04-01"},
        ["gamma", None, None, None],
        {"name": "=not formula", "n": {"formula": "=1+1", "value": 2}},
    )]
    (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = {"sheets": [{"name": "JSONL", "data": {"path": "d.jsonl", "format": "jsonl"},
                        "columns": [{"header": "Name", "key": "name"}, {"header": "N", "key": "n"},
                                    {"header": "OK", "key": "ok"},
                                    {"header": "When", "key": "when", "type": "date"}]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "jsonl.xlsx")
    assert_ooxml_ok(out)
    ws = openpyxl.load_workbook(out)["JSONL"]
    got = [[c.value for c in row] for row in ws.iter_rows(max_col=4)]
    assert got[0] == ["Name", "N", "OK", "When"]
    assert got[1] == ["alpha", 1, True, dt.datetime(2026, 3, 31)]
    assert got[2] == ["beta", 2.5, False, dt.datetime(2026, 4, 1)]
    assert got[3] == ["gamma", None, None, None]
    assert got[4][0] == "=not formula" and ws["A5"].data_type == "s" and got[4][1] == "=1+1"
    errs = check_workbook(spec, out, tmp_path)
    assert not errs, "\n".join(errs)


def test_csv_header_names_become_headers(tmp_path):
    (tmp_path / "d.csv").write_text("City,Pop\nOslo,709000\nBergen,291000\n", encoding="utf-8")
    spec = {"sheets": [{"name": "C", "data": {"path": "d.csv", "format": "csv"}}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "c.xlsx")
    ws = openpyxl.load_workbook(out)["C"]
    assert [[c.value for c in row] for row in ws.iter_rows()] == [
        ["City", "Pop"], ["Oslo", 709000], ["Bergen", 291000]]


def test_image_from_path(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "logo.png").write_bytes(png_bytes(8, 8, (0, 128, 0)))
    spec = {"sheets": [{"name": "Img", "rows": [["logo"]],
                        "images": [{"image": {"path": "img/logo.png"}, "anchor": "C3"}]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "img.xlsx")
    assert_ooxml_ok(out)
    with zipfile.ZipFile(out) as z:
        media = [n for n in z.namelist() if n.startswith("xl/media/")]
        assert [z.read(n) for n in media] == [png_bytes(8, 8, (0, 128, 0))]


def test_jpeg_image(tmp_path):
    try:
        from PIL import Image
    except ImportError:
        pytest.fail("Pillow is needed to make a JPEG: apt-get install python3-pil")
    buf = io.BytesIO()
    Image.new("RGB", (10, 6), (10, 20, 200)).save(buf, "JPEG")
    spec = {"sheets": [{"name": "J", "rows": [["jpeg"]],
                        "images": [{"image": {"data": base64.b64encode(buf.getvalue()).decode()}, "anchor": "B2"}]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "j.xlsx")
    assert_ooxml_ok(out)
    ws = openpyxl.load_workbook(out)["J"]
    assert len(ws._images) == 1


def test_user_sheet_named_like_the_helper_sheet(tmp_path):
    """A spec's own "_kiln_data" sheet survives next to literal-data charts (which need a helper sheet)."""
    spec = {"sheets": [{"name": "_kiln_data", "rows": [["mine", 1]]},
                       {"name": "S", "rows": [[1]], "charts": [chart_spec("column", 1), chart_spec("pie", 3)]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "h.xlsx")
    assert_ooxml_ok(out)
    wb = openpyxl.load_workbook(out)
    assert [w.title for w in visible_sheets(wb)] == ["_kiln_data", "S"]
    assert wb["_kiln_data"]["A1"].value == "mine" and wb["_kiln_data"]["B1"].value == 1
    assert wb["_kiln_data"].sheet_state == "visible"
    assert len(wb["S"]._charts) == 2


def test_apostrophe_sheet_name_in_chart_ranges(tmp_path):
    spec = {"sheets": [
        {"name": "Bob's data", "columns": [{"header": "k"}, {"header": "v", "type": "number"}],
         "rows": [["a", 1], ["b", 2]]},
        {"name": "Charts", "rows": [["see chart"]],
         "charts": [{"kind": "line", "categories": "'Bob''s data'!A2:A3",
                     "series": [{"name": "='Bob''s data'!B1", "values": "'Bob''s data'!B2:B3"}]}]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "apos.xlsx")
    assert_ooxml_ok(out)
    wb = openpyxl.load_workbook(out)
    assert [w.title for w in visible_sheets(wb)] == ["Bob's data", "Charts"]
    assert len(wb["Charts"]._charts) == 1
    with zipfile.ZipFile(out) as z:
        xml = "".join(z.read(n).decode("utf-8") for n in z.namelist() if n.startswith("xl/charts/chart"))
    assert "'Bob''s data'!$B$2:$B$3" in xml, "the series does not reference the sheet's range"


def test_literal_xhhhh_text_is_escaped(tmp_path):
    """SpreadsheetML decodes _xHHHH_ in text (ECMA-376 Part 1, 22.4.2.4 ST_Xstring), so a literal
    "_x0041_" must be written as "_x005F_x0041_"; written raw, Excel shows "A"."""
    spec = {"sheets": [{"name": "S", "rows": [["literal _x0041_ stays"], ["_x000D_"]]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "esc.xlsx")
    ws = openpyxl.load_workbook(out)["S"]
    for cell, want in ((ws["A1"], "literal _x0041_ stays"), (ws["A2"], "_x000D_")):
        assert unescape_ooxml(cell.value) == want, \
            "%s is stored as %r, which Excel decodes to %r" % (cell.coordinate, cell.value, unescape_ooxml(cell.value))


def test_leading_and_trailing_spaces_survive(tmp_path):
    spec = {"sheets": [{"name": "S", "columns": [{"header": " padded header "}],
                        "rows": [["  two spaces either side  "], [" "], ["tab\tinside "]]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "sp.xlsx")
    ws = openpyxl.load_workbook(out)["S"]
    assert [ws["A%d" % r].value for r in range(1, 5)] == [
        " padded header ", "  two spaces either side  ", " ", "tab\tinside "]
    # Not run through ooxml-check: the ECMA-376 schemas lack xml:space on <t> although Excel
    # itself writes <t xml:space="preserve"> for such text, so the check reports it.


def test_csv_field_typing_rules(tmp_path):
    """docs/spec.md, Column typing: auto numbers (plain decimals, at most 15 digits, no leading
    zero), numeric columns (sign, fraction, exponent, surrounding spaces), booleans."""
    auto = [("-12", -12), ("3.5", 3.5), ("0", 0), ("0.25", 0.25), ("123456789012345", 123456789012345),
            ("007", "007"), ("-007", "-007"), ("1234567890123456", "1234567890123456"), ("1e5", "1e5"),
            ("+5", "+5"), ("1,000", "1,000"), (".5", ".5"), ("5.", "5."), ("12abc", "12abc")]
    num = [(" 42 ", 42), ("1e3", 1000), ("-0.5", -0.5), ("+7", 7), ("2.5E-1", 0.25)]
    boo = [("TRUE", True), ("False", False), ("1", True), ("0", False), ("true", True)]
    n = max(len(auto), len(num), len(boo))
    lines = ["auto,num,bool"]
    for i in range(n):
        a = auto[i][0] if i < len(auto) else ""
        b = num[i][0] if i < len(num) else ""
        c = boo[i][0] if i < len(boo) else ""
        lines.append('"%s","%s","%s"' % (a, b, c))
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = {"sheets": [{"name": "T", "data": {"path": "t.csv", "format": "csv"},
                        "columns": [{"header": "auto"}, {"header": "num", "type": "number"},
                                    {"header": "bool", "type": "boolean"}]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "t.xlsx")
    ws = openpyxl.load_workbook(out)["T"]
    errs = []
    for col, cases in ((1, auto), (2, num), (3, boo)):
        for i, (field, want) in enumerate(cases, start=2):
            got = ws.cell(i, col).value
            same_type = (isinstance(got, bool) == isinstance(want, bool)
                         and isinstance(got, str) == isinstance(want, str))
            if not same_type or (got != want if not isinstance(want, float) else not same_number(got, want)):
                errs.append("%s%d: field %r -> %r, expected %r" % (get_column_letter(col), i, field, got, want))
    assert not errs, "\n".join(errs)


def test_documented_leniencies_render(tmp_path):
    """docs/spec.md allows these; each must render and mean what the doc says: a
    single-cell merge, list values with commas and quotes (kept whole, not split),
    a heading without a level (level 1), and a data file whose format comes from
    its extension."""
    (tmp_path / "d.csv").write_text("a\n1\n2\n", encoding="utf-8")
    spec = {"sheets": [
        {"name": "M", "rows": [["x", 1]], "merges": [{"range": "B2:B2", "value": "solo"}],
         "validations": [{"range": "A1:A9", "type": "list", "values": ["a,b", 'say "hi"', "c"]}]},
        {"name": "D", "data": {"path": "d.csv"}},
    ], "metadata": {"title": "leniencies"}}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "l.xlsx")
    assert_ooxml_ok(out)
    wb = openpyxl.load_workbook(out)
    ws = wb["M"]
    assert ws["B2"].value == "solo"
    dv = ws.data_validations.dataValidation
    assert len(dv) == 1 and dv[0].type == "list"
    # the values went to cells (an inline list would split "a,b"): read them back
    ref = dv[0].formula1.lstrip("=")
    sheet_name, cells = ref.rsplit("!", 1)
    helper = wb[sheet_name.strip("'")]
    assert helper.sheet_state == "hidden"
    first, last = cells.replace("$", "").split(":")
    got = [c.value for row in helper[first:last] for c in row]
    assert got == ["a,b", 'say "hi"', "c"]
    assert [c.value for c in wb["D"]["A"]] == ["a", 1, 2]

    blocks = {"blocks": [{"type": "heading", "text": "Numbers"},
                         {"type": "table", "columns": [{"header": "n"}], "rows": [[5]]}]}
    out2 = render_ok(write_spec(tmp_path, blocks, "b.json"), tmp_path / "b.xlsx")
    assert openpyxl.load_workbook(out2).sheetnames[0] == "Numbers"


def test_page_setup_reaches_every_sheet(tmp_path):
    """The spec's page (size, orientation, margins) is each sheet's print setup."""
    spec = {"page": {"size": "Letter", "orientation": "landscape",
                     "margins": {"top": "1in", "bottom": "20mm", "left": 36, "right": "2.54cm"}},
            "sheets": [{"name": "A", "rows": [[1]]}, {"name": "B", "rows": [[2]]}]}
    out = render_ok(write_spec(tmp_path, spec), tmp_path / "p.xlsx")
    assert_ooxml_ok(out)
    for ws in openpyxl.load_workbook(out).worksheets:
        assert ws.page_setup.orientation == "landscape"
        assert str(ws.page_setup.paperSize) == "1"  # Letter
        m = ws.page_margins
        assert abs(m.top - 1.0) < 1e-9 and abs(m.left - 0.5) < 1e-9 and abs(m.right - 1.0) < 1e-9
        assert abs(m.bottom - 20 / 25.4) < 1e-9
    default = render_ok(write_spec(tmp_path, {"sheets": [{"rows": [[1]]}]}, "d.json"), tmp_path / "d.xlsx")
    ws = openpyxl.load_workbook(default).active
    assert str(ws.page_setup.paperSize) == "9" and ws.page_setup.orientation == "portrait"


def test_nested_lists_number_for_themselves(tmp_path):
    """A spec of text only lists its lists down column A of Sheet1: each nested list
    numbers for itself ("ordered" and "start" given per list), nesting as the indent, with
    the markers the .docx and PDF writers show (1. a. i. and \u2022 \u25e6 \u25aa by level)."""
    from test_render_docx import MIXED_LISTS_SPEC, MIXED_LIST_ITEMS, list_marker
    out = render_ok(write_spec(tmp_path, MIXED_LISTS_SPEC), tmp_path / "lists.xlsx")
    assert_ooxml_ok(out)
    ws = openpyxl.load_workbook(out)["Sheet1"]
    got = [(c.value, int(c.alignment.indent or 0)) for c in ws["A"] if c.value is not None]
    want = [("%s %s" % (list_marker(level, n), t), 2 * level)
            for t, level, n in MIXED_LIST_ITEMS]
    assert got == want


# =========================================================================== blanks in charts (issue 15)

C_NS = {"c": "http://schemas.openxmlformats.org/drawingml/2006/chart"}
A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"


def gaps_spec(table):
    """Every chart kind twice: over ranges with empty cells, and with literal values
    holding a null. table=True puts the workbook in memory mode (charts get caches)."""
    charts = []
    for i, k in enumerate(CHART_KINDS):
        pie = k in ("pie", "doughnut")
        cats = "B2:B5" if k == "scatter" else "A2:A5"
        series = [{"name": "=C1", "values": "C2:C5"}] + ([] if pie else [{"name": "=D1", "values": "D2:D5"}])
        charts.append({"kind": k, "categories": cats, "series": series, "anchor": "G%d" % (2 + 16 * i)})
        lit_cats = [1, 2, 3, 4] if k == "scatter" else ["w", "x", "y", "z"]
        charts.append({"kind": k, "title": "literal " + k, "categories": lit_cats,
                       "series": [{"name": "lit", "values": [1, None, 3, 4]}],
                       "anchor": "P%d" % (2 + 16 * i)})
    sheet = {"name": "Data",
             "columns": [{"header": "cat"}, {"header": "x", "type": "number"},
                         {"header": "a", "type": "number"}, {"header": "b", "type": "number"}],
             "rows": [["Q1", 1, 1, 4], ["Q2", 2, None, 5], ["Q3", 3, 3, None], ["Q4", 4, 4, 7]],
             "charts": charts}
    if table:
        sheet["table"] = True
    return {"sheets": [sheet]}


def num_cache_points(ser, element):
    cache = ser.find("c:%s/c:numRef/c:numCache" % element, C_NS)
    if cache is None:
        return None
    count = int(cache.find("c:ptCount", C_NS).get("val"))
    return count, {int(p.get("idx")): float(p.findtext("c:v", namespaces=C_NS))
                   for p in cache.findall("c:pt", C_NS)}


def test_blank_cells_and_null_values_are_gaps(tmp_path):
    """Every chart says <c:dispBlanksAs val="gap"/> (what Excel writes; the schema's
    default is "zero"), so a series over empty cells, or with a null among its literal
    values, has gaps there: a null is an empty cell of the hidden data sheet and, in memory
    mode, a point missing from the cache. LibreOffice reads the charts as gaps."""
    from lxml import etree
    outs = []
    for table in (False, True):
        sp = write_spec(tmp_path, gaps_spec(table), "gaps%d.json" % table)
        outs.append(render_ok(sp, tmp_path / ("gaps%d.xlsx" % table)))
    assert_ooxml_ok(*outs)
    errs = []
    for out in outs:
        with zipfile.ZipFile(out) as z:
            parts = sorted((n for n in z.namelist() if re.match(r"xl/charts/chart\d+\.xml$", n)),
                           key=lambda n: int(re.findall(r"\d+", n)[0]))
            assert len(parts) == 2 * len(CHART_KINDS)
            for n, part in enumerate(parts):
                root = etree.fromstring(z.read(part))
                chart = root.find("c:chart", C_NS)
                tags = [etree.QName(e).localname for e in chart]
                blanks = chart.findall("c:dispBlanksAs", C_NS)
                if len(blanks) != 1 or blanks[0].get("val") != "gap" or tags[-1] != "dispBlanksAs" \
                        or tags[-2] != "plotVisOnly" or tags.count("legend") > 1:
                    errs.append("%s %s: c:chart holds %s" % (out.name, part, tags))
                if out.name == "gaps1.xlsx" and n % 2 == 1:   # the literal chart, memory mode
                    ser = chart.find(".//c:ser", C_NS)
                    pts = num_cache_points(ser, "yVal" if CHART_KINDS[n // 2] == "scatter" else "val")
                    if pts != (4, {0: 1.0, 2: 3.0, 3: 4.0}):
                        errs.append("%s %s: the literal series' cache is %r" % (out.name, part, pts))
        wb = openpyxl.load_workbook(out)
        data = wb["_kiln_data"]
        assert data.sheet_state == "hidden"
        col = [[c.value for c in row] for row in data.iter_rows(min_col=2, max_col=2)]
        # a block per literal chart: the name row, four values, a spare row
        values = [v[0] for v in col if v[0] != "lit"]
        if values[:5] != [1, None, 3, 4, None]:
            errs.append("%s: the hidden sheet holds %r for the literal values" % (out.name, values[:6]))
    assert not errs, "\n".join(errs)
    proc, back = soffice_convert(outs, tmp_path / "lo", to="xlsx")
    for out in outs:
        assert back[out] is not None, "LibreOffice did not convert %s:\n%s" % (out, proc.stdout[-2000:])
        with zipfile.ZipFile(back[out]) as z:
            parts = [n for n in z.namelist() if re.match(r"xl/charts/chart\d+\.xml$", n)]
            assert len(parts) == 2 * len(CHART_KINDS), parts
            for part in parts:
                got = re.findall(r'<c:dispBlanksAs val="(\w+)"', z.read(part).decode("utf-8"))
                assert got == ["gap"], "LibreOffice read %s %s as %r" % (out.name, part, got)


def chart_parts_in_order(z):
    return sorted((n for n in z.namelist() if re.match(r"xl/charts/chart\d+\.xml$", n)),
                  key=lambda n: int(re.findall(r"\d+", n)[0]))


def category_axis_of(root):
    """("dateAx" | "catAx" | None, its number format) of a chart part."""
    from lxml import etree
    plot = root.find("c:chart/c:plotArea", C_NS)
    for tag in ("dateAx", "catAx"):
        ax = plot.find("c:" + tag, C_NS)
        if ax is not None:
            nf = ax.find("c:numFmt", C_NS)
            return tag, None if nf is None else nf.get("formatCode").replace("\\", ""), \
                [etree.QName(e).localname for e in ax]
    return None, None, []


def test_date_categories_get_a_date_axis(tmp_path):
    """Date categories (ISO dates in chart blocks, date cells under a sheet chart's range)
    get a c:dateAx in their number format in every kind with a category axis; literal
    dates are date cells of the hidden data sheet. LibreOffice reads the axes as date
    axes (a round trip through it writes c:dateAx back)."""
    from lxml import etree
    from test_render_docx import DATES_OUT_OF_ORDER, date_chart_specs
    specs, want = date_chart_specs()
    outs = [render_ok(write_spec(tmp_path, spec, name + ".json"), tmp_path / (name + ".xlsx"))
            for name, spec in specs.items()]
    assert_ooxml_ok(*outs)
    errs = []
    order = {}
    for out in outs:
        with zipfile.ZipFile(out) as z:
            titles = []
            for part in chart_parts_in_order(z):
                root = etree.fromstring(z.read(part))
                title = "".join(t.text or "" for t in root.iterfind("c:chart/c:title//a:t", dict(C_NS, a=A_NS)))
                titles.append(title)
                kind, fmt, members = category_axis_of(root)
                w = want.get(title, "missing")
                if w == "pie":
                    ok = kind is None
                elif w is None:
                    ok = kind == "catAx"
                else:
                    ok = kind == "dateAx" and fmt == w and "lblAlgn" not in members
                if not ok:
                    errs.append("%s %s (%r): axis %s %r %s, want %r" % (out.name, part, title, kind, fmt, members, w))
            order[out] = titles
        if "blocks" in out.name:
            data = openpyxl.load_workbook(out)["_kiln_data"]
            cats = [(c.value, c.number_format) for c in data["A"] if isinstance(c.value, dt.datetime)]
            first = [(d.date().isoformat(), f) for d, f in cats[:4]]
            if first != [(d, "yyyy-mm-dd") for d in DATES_OUT_OF_ORDER]:
                errs.append("%s: literal dates in the data sheet: %r" % (out.name, first))
    assert not errs, "\n".join(errs)
    proc, back = soffice_convert(outs, tmp_path / "lo", to="xlsx")
    for out in outs:
        assert back[out] is not None, "LibreOffice did not convert %s:\n%s" % (out, proc.stdout[-2000:])
        with zipfile.ZipFile(back[out]) as z:
            for title, part in zip(order[out], chart_parts_in_order(z)):
                kind, fmt, _m = category_axis_of(etree.fromstring(z.read(part)))
                w = want[title]
                if w not in (None, "pie") and (kind, fmt) != ("dateAx", w):
                    errs.append("LibreOffice read %s %r as %s %r" % (out.name, title, kind, fmt))
                if w is None and kind != "catAx":
                    errs.append("LibreOffice read %s %r as %s" % (out.name, title, kind))
    assert not errs, "\n".join(errs)


def test_line_breaks_are_one_rule(tmp_path):
    """LF, CR and CR LF are each one line break (docs/spec.md "Line breaks"): a cell holds
    it as a line feed and wraps so it shows, whether the text came from the spec, a CSV
    field or a JSON Lines string; chart text is one line, and so is a sheet name made from
    a heading (the break a space)."""
    from lxml import etree
    from test_render_docx import BREAK_FORMS, breaks_spec
    forms = list(BREAK_FORMS.items())
    (tmp_path / "d.csv").write_bytes(b'text\n' + b''.join(b'"Csv-%s one%stwo-%s"\r\n' % (k.encode(), br.encode(), k.encode())
                                                         for k, br in forms))
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(["Jsonl-%s one%stwo-%s" % (k, br, k)]) + "\n"
                                              for k, br in forms), encoding="utf-8")
    sheets = {"sheets": [
        {"name": "Inline", "columns": [{"header": "Header-%s one%stwo-%s" % (k, br, k)} for k, br in forms],
         "rows": [["Cell-%s one%stwo-%s" % (k, br, k) for k, br in forms],
                  [{"formula": "=A2", "value": "Formula-%s one%stwo-%s" % (k, br, k)} for k, br in forms]],
         "merges": [{"range": "E%d:F%d" % (i + 1, i + 1), "value": "Merge-%s one%stwo-%s" % (k, br, k)}
                    for i, (k, br) in enumerate(forms)],
         "table": True},
        {"name": "Csv", "data": {"path": "d.csv"}},
        {"name": "Jsonl", "data": {"path": "d.jsonl"}}]}
    text_only = {"blocks": [b for b in breaks_spec()["blocks"] if b["type"] not in ("table", "chart")]}
    outs = [render_ok(write_spec(tmp_path, spec, name + ".json"), tmp_path / (name + ".xlsx"))
            for name, spec in (("sheets", sheets), ("text", text_only), ("blocks", breaks_spec()))]
    assert_ooxml_ok(*outs)
    errs = []
    want = re.compile(r"^(\S+ )?(\w+)-(lf|cr|crlf) one\ntwo-\3( tail)?$")
    for out in outs[:2]:
        wb = openpyxl.load_workbook(out, data_only=True)   # formulas: their cached text
        seen = set()
        for ws in wb.worksheets:
            for row in ws.iter_rows():
                for c in row:
                    v = unescape_ooxml(c.value) if isinstance(c.value, str) else None
                    if not v or not re.search(r"-(lf|cr|crlf)\b", v):
                        continue
                    m = want.match(v)
                    if not m or not c.alignment.wrap_text:
                        errs.append("%s %s!%s: %r (wrap %r)" % (out.name, ws.title, c.coordinate, v,
                                                                c.alignment.wrap_text))
                    else:
                        seen.add((m.group(2), m.group(3)))
        kinds = {w for w, _k in seen}
        for w in kinds:
            missing = [k for k in BREAK_FORMS if (w, k) not in seen]
            if missing:
                errs.append("%s: %s with %s not found" % (out.name, w, missing))
        expect = {"Header", "Cell", "Formula", "Merge", "Csv", "Jsonl"} if out == outs[0] else \
            {"Head", "Para", "Run", "Item", "Nested", "Quote", "Code"}
        if kinds != expect:
            errs.append("%s: texts found %s, want %s" % (out.name, sorted(kinds), sorted(expect)))
    wb = openpyxl.load_workbook(outs[2])
    for k in BREAK_FORMS:
        if not any(re.match(r"Head-%s one two-%s$" % (k, k), n) for n in wb.sheetnames):
            errs.append("no sheet named from the heading with %s on one line: %r" % (k, wb.sheetnames))
    with zipfile.ZipFile(outs[2]) as z:
        texts = []
        for part in chart_parts_in_order(z):
            root = etree.fromstring(z.read(part))
            texts += ["".join(t.text or "" for t in r.iter("{%s}t" % A_NS)) for r in root.iter("{%s}rich" % C_NS["c"])]
        name_cells = [c.value for row in wb["_kiln_data"].iter_rows() for c in row if c.value]
    for k in BREAK_FORMS:
        for what, got in (("Chart", texts), ("Axis", texts), ("Name", name_cells)):
            if "%s-%s one two-%s" % (what, k, k) not in got:
                errs.append("%s text with %s should be one line: %r" % (what, k, got))
    assert not errs, "\n".join(errs)


@pytest.mark.parametrize("where", ["blocks", "slides"])
def test_tables_past_the_sheet_limit_are_refused(tmp_path, where):
    """A table becomes a sheet, and the workbook holds at most 256 (docs/spec.md
    "Limits"), mapped sheets as a spec's own: 256 tables make 256 sheets; the 257th is
    refused, naming its block or slide, before a sheet is written."""
    def spec(n):
        if where == "blocks":
            return {"blocks": [{"type": "table", "columns": [{"header": "n"}], "rows": [[i]]}
                               for i in range(n)]}
        return {"slides": [{"layout": "table", "title": "S%d" % i, "table": {"columns": [{"header": "n"}], "rows": [[i]]}}
                           for i in range(n)]}
    ok = render_ok(write_spec(tmp_path, spec(256), "fits.json"), tmp_path / "fits.xlsx")
    wb = openpyxl.load_workbook(ok, read_only=True)
    assert len([ws for ws in wb.worksheets if ws.sheet_state == "visible"]) == 256
    assert wb.worksheets[255]["A2"].value == 255
    wb.close()
    out = tmp_path / "over.xlsx"
    proc = run_kiln("render", write_spec(tmp_path, spec(257), "over.json"), "-o", out, "--json")
    assert proc.returncode == 3, describe(proc)
    e = json.loads(proc.stdout)["errors"][0]
    assert e["code"] == "limit_exceeded" and e["limit"] == 256 and e["actual"] == 257, e
    assert e["pointer"] == "/%s/256" % where, e
    assert not out.exists()
