"""Build Kiln document specs from ordinary data-analysis objects.

``import kiln`` inside a ``kiln run`` job turns pandas DataFrames, dicts of series and
matplotlib figures into a Kiln document spec (docs/spec.md) and saves it as
``$KILN_JOB_DIR/.kiln/OUT.spec.json`` (KILN_JOB_DIR defaults to /mnt/data). After the
job, ``kiln run --render`` renders every saved spec to ``$KILN_JOB_DIR/OUT``: the
format comes from OUT's extension (.xlsx, .docx, .pdf or .pptx).

Three builders, one per kind of document (any of them may be saved in any format; the
writers map what a format does not hold natively)::

    import kiln
    doc = kiln.Document(title="Sales review", author="Analytics")
    doc.heading("Summary")
    doc.paragraph("Revenue grew 6% on the quarter.")
    doc.table(df, caption="Revenue by region")
    doc.chart(df, kind="column", x="region", title="Revenue")
    doc.image(fig, caption="Trend")
    doc.save("report.docx")
    doc.save("report.pdf")

    wb = kiln.Workbook()
    wb.sheet(df, name="Data")
    wb.sheet(summary, name="Summary", chart={"kind": "column", "x": "region"})
    wb.save("sales.xlsx")

    deck = kiln.Deck(title="Q2 results", subtitle="Sales review")
    deck.slide("Highlights", bullets=["Revenue up 6%"], notes="Say this first.")
    deck.table("By region", summary)
    deck.chart("Trend", monthly, kind="line")
    deck.save("results.pptx")

``kiln.save_spec(spec_dict, "x.docx")`` saves a raw spec as it is. ``save()`` takes a simple
name ("report.docx") or a path in the job directory ("/mnt/data/report.docx").

Spreadsheets and documents hold wall-clock times without a zone, so a timezone-aware
datetime (a pandas ``datetime64[ns, tz]`` column or index, a tz-aware ``Timestamp`` or
``datetime.datetime``) is refused with a TypeError naming the column or argument, as
XlsxWriter does, unless the builder is told what to do: ``timezone="drop"`` keeps the
wall-clock time as written (XlsxWriter's ``remove_timezone``), ``timezone="UTC"`` or a zone
name such as ``"Europe/Paris"`` converts to that zone first::

    wb = kiln.Workbook(timezone="UTC")

The module needs only the standard library: numpy, pandas and matplotlib objects are
recognised when the job has imported those packages itself (they are never imported
here, so a job that does not use them does not pay for them).
"""

import datetime as _dt
import decimal
import hashlib
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path

__all__ = ["Document", "Workbook", "Deck", "Sheet", "save_spec", "job_dir", "spec_path",
           "FORMATS"]

#: The output formats a spec can be saved for (the renderer picks the writer by extension).
FORMATS = ("xlsx", "docx", "pdf", "pptx")

# Limits of the spec (docs/spec.md "Limits"); checked here so that a job fails at
# save time with a Python exception naming the argument, not later at render time.
MAX_ROWS = 1048576          # per sheet or table, header row included
MAX_COLUMNS = 16384
MAX_SHEETS = 256
MAX_CELL_CHARS = 32767
MAX_SERIES = 255
MAX_IMAGES = 1000
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_LIST_DEPTH = 9
MAX_SLIDES = 5000
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1

CHART_KINDS = ("column", "bar", "line", "pie", "doughnut", "scatter", "area")
_KIND_ALIASES = {"barh": "bar", "hbar": "bar", "vbar": "column", "col": "column",
                 "donut": "doughnut", "xy": "scatter"}
_LEGENDS = ("right", "left", "top", "bottom", "none")
COLUMN_TYPES = ("auto", "string", "number", "integer", "currency", "percent", "date",
                "datetime", "boolean")

# Characters XML 1.0 forbids; the spec rejects them in every string.
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# What a file name may not hold: every C0 and C1 control and DEL (exec/collect.c).
_NAME_BAD = re.compile("[\x00-\x1f\x7f-\x9f\ufffe\uffff]")
_SHEET_BAD = re.compile(r"[\[\]:*?/\\\x00-\x1f\ufffe\uffff]")
_COLOR = re.compile(r"^#?[0-9A-Fa-f]{6}$")
_LENGTH = re.compile(r"^[0-9]+(?:\.[0-9]+)?(?:pt|mm|cm|in)$")
_PT_PER_UNIT = {"pt": 1.0, "in": 72.0, "cm": 72.0 / 2.54, "mm": 72.0 / 25.4}
_PNG_SIG = b"\x89PNG\r\n\x1a\n"
_JPEG_SIG = b"\xff\xd8\xff"


# --------------------------------------------------------------------------- paths

def job_dir():
    """The job directory: $KILN_JOB_DIR, else /mnt/data (where `kiln run` puts it)."""
    return Path(os.environ.get("KILN_JOB_DIR") or "/mnt/data")


def _kiln_dir():
    """The spec directory, $KILN_JOB_DIR/.kiln, created on first use. It is also the
    base directory the renderer resolves image paths against."""
    d = job_dir() / ".kiln"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _name_in_job_dir(out):
    """The file name of a path that names a file directly in the job directory
    ("/mnt/data/report.docx", or "./report.docx" from there); ValueError otherwise."""
    jd = os.path.normpath(os.path.abspath(str(job_dir())))
    if out.endswith("/"):
        raise ValueError("out: %r names a directory; give a file name such as 'report.docx'"
                         % (out,))
    full = os.path.normpath(os.path.abspath(out))
    if full == jd:
        raise ValueError("out: %r is the job directory itself; give a file name in it such as "
                         "%r" % (out, os.path.join(jd, "report.docx")))
    parent, name = os.path.split(full)
    if parent == jd and name:
        return name
    if full.startswith(jd + os.sep):
        raise ValueError("out: %r is in a subdirectory of the job directory %s; documents are "
                         "written to the job directory itself: give %r" % (out, jd, name))
    raise ValueError("out: %r is not in the job directory %s, where documents are written: give "
                     "a name such as 'report.docx' (or %r)" % (out, jd, os.path.join(jd, name or
                                                                                  "report.docx")))


def _check_out_name(out):
    """Validate an output file name, or a path of a file directly in the job directory;
    returns (name, format)."""
    if isinstance(out, os.PathLike):
        out = os.fspath(out)
    if not isinstance(out, str):
        raise TypeError("out: the output file name must be a string such as 'report.docx', not %s"
                        % type(out).__name__)
    given = out
    if "/" in out and "\\" not in out:
        out = _name_in_job_dir(out)
    if not out or "/" in out or "\\" in out or out in (".", "..") or out.startswith("."):
        raise ValueError("out: %r is not a simple file name; give a name such as 'report.docx' "
                         "(not starting with '.'), or a path in the job directory such as "
                         "'/mnt/data/report.docx': the document is written to the job directory"
                         % (given,))
    # A file name takes no control character at all (a line feed either: the collector
    # would refuse the document), as the runner's own rule for names says.
    if _NAME_BAD.search(out) or len(out.encode("utf-8", "surrogatepass")) > 200:
        raise ValueError("out: %r has control characters or is too long (200 bytes at most)" % (out,))
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("out: %r is not valid Unicode text" % (out,)) from None
    stem, dot, ext = out.rpartition(".")
    fmt = ext.lower()
    if not dot or not stem or fmt not in FORMATS:
        raise ValueError("out: %r must end in one of %s (the format is taken from the extension)"
                         % (out, ", ".join("." + f for f in FORMATS)))
    return out, fmt


def spec_path(out):
    """Where save() writes the spec for output file `out` ("report.docx", or
    "/mnt/data/report.docx"): $KILN_JOB_DIR/.kiln/OUT.spec.json."""
    name, _ = _check_out_name(out)
    return job_dir() / ".kiln" / (name + ".spec.json")


# --------------------------------------------------------------------------- saving

def _walk_check(node, pointer):
    """Refuse what the C parser would refuse anyway, with the JSON Pointer of the value:
    NaN/Infinity, non-string keys, XML-forbidden characters, integers beyond 64 bits."""
    stack = [(node, pointer)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, str):
            if _XML_BAD.search(v):
                raise ValueError("%s: text holds a control character XML cannot store (%r); "
                                 "remove it" % (p or "/", _XML_BAD.search(v).group()))
        elif isinstance(v, bool) or v is None:
            pass
        elif isinstance(v, int):
            if not INT64_MIN <= v <= INT64_MAX:
                raise ValueError("%s: integer %d does not fit in 64 bits; use a float" % (p or "/", v))
        elif isinstance(v, float):
            if math.isnan(v) or math.isinf(v):
                raise ValueError("%s: %r is not a valid JSON number (use None for a blank)" % (p or "/", v))
        elif isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    raise TypeError("%s: member names must be strings, not %r" % (p or "/", k))
                if _XML_BAD.search(k):
                    raise ValueError("%s: member name %r holds a control character" % (p or "/", k))
                stack.append((x, p + "/" + k.replace("~", "~0").replace("/", "~1")))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                stack.append((x, "%s/%d" % (p, i)))
        else:
            raise TypeError("%s: %s is not a JSON value; convert it first" % (p or "/", type(v).__name__))


def _plain(v):
    """A copy of a JSON-like value with numpy scalars and arrays and tuples made plain
    Python (a raw spec written by hand often holds df.sum() results)."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    np = _mod("numpy")
    if np is not None:
        if isinstance(v, np.ndarray):
            return [_plain(x) for x in v.tolist()]
        if isinstance(v, np.generic):
            return v.item()
    return v


def save_spec(spec, out):
    """Save a raw spec dict (docs/spec.md) for output file `out` ("report.docx", or a path
    in the job directory: "/mnt/data/report.docx").

    Writes $KILN_JOB_DIR/.kiln/OUT.spec.json atomically and returns its Path;
    `kiln run --render` renders it to $KILN_JOB_DIR/OUT. Image paths in the spec are
    relative to the .kiln directory. Raises ValueError for a bad name, a spec with no
    content, or values JSON cannot hold (NaN, control characters).
    """
    name, _ = _check_out_name(out)
    if not isinstance(spec, dict):
        raise TypeError("spec: a spec is a dict (a JSON object), not %s" % type(spec).__name__)
    if not any(isinstance(spec.get(k), list) and spec.get(k) for k in ("sheets", "blocks", "slides")):
        raise ValueError("spec: nothing to render; a spec needs a non-empty 'sheets', 'blocks' "
                         "or 'slides' list")
    spec = _plain(spec)
    _walk_check(spec, "")
    return _write_spec(spec, name)


# A JSON escape of a character XML forbids, preceded by an even run of backslashes
# (json.dumps writes control characters as \b, \f or \u00XX; U+FFFE/U+FFFF stay raw).
_JSON_BAD = re.compile(r"(?<!\\)(?:\\\\)*\\(?:b|f|u00(?:0[0-8bcef]|1[0-9a-f]))|[\ufffe\uffff]")


def _write_spec(spec, name, checked=True):
    """Write a spec dict as .kiln/NAME.spec.json atomically. Builders pass checked=False:
    their values were converted one by one, so a scan of the JSON text stands in for the
    (slower) walk, which runs only to name the culprit."""
    try:
        text = json.dumps(spec, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError):
        _walk_check(spec, "")
        raise
    if not checked and _JSON_BAD.search(text):
        _walk_check(spec, "")
    d = _kiln_dir()
    target = d / (name + ".spec.json")
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=str(d))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)   # mkstemp makes 0600; the renderer may read as another user
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


# --------------------------------------------------------------------------- values

def _mod(name):
    """A module only if the job has imported it already (never imports it here)."""
    return sys.modules.get(name)


def _is_dataframe(x):
    pd = _mod("pandas")
    return pd is not None and isinstance(x, pd.DataFrame)


def _is_series(x):
    pd = _mod("pandas")
    return pd is not None and isinstance(x, pd.Series)


def _is_missing(v):
    if v is None:
        return True
    if isinstance(v, float):
        return math.isnan(v)
    pd = _mod("pandas")
    if pd is not None:
        if v is pd.NaT or v is getattr(pd, "NA", None):
            return True
    np = _mod("numpy")
    if np is not None and isinstance(v, np.floating):
        return bool(np.isnan(v))
    if np is not None and isinstance(v, np.datetime64):
        return bool(np.isnat(v))
    return False


def _check_date_range(d, where):
    if d.year < 1900:
        raise ValueError("%s: %s is before 1900-01-01, the first day a spreadsheet can hold; "
                         "write it as text (str(...)) instead" % (where, d.isoformat()))


def _date_cell(d, where):
    _check_date_range(d, where)
    return {"date": d.isoformat()}


_TZ_HELP = ("spreadsheets and documents hold wall-clock times without a zone, and Kiln does "
            "not drop or shift one silently: pass timezone='drop' to the Document, Workbook or "
            "Deck to keep the wall-clock time as written, or timezone='UTC' (or a zone name such "
            "as 'Europe/Paris') to convert to that zone first; or make the values naive yourself "
            "(.dt.tz_convert(...).dt.tz_localize(None) for a pandas column)")


def _tz_policy(timezone):
    """A builder's timezone= option: None (refuse timezone-aware datetimes), "drop" (keep the
    wall-clock time), or the tzinfo to convert to ("UTC", "Europe/Paris" or a tzinfo)."""
    if timezone is None or timezone == "drop":
        return timezone
    if isinstance(timezone, _dt.tzinfo):
        return timezone
    if isinstance(timezone, str):
        import zoneinfo
        try:
            return zoneinfo.ZoneInfo(timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
    raise ValueError("timezone: None (refuse timezone-aware datetimes), 'drop' (keep the "
                     "wall-clock time) or a time zone to convert to such as 'UTC' or "
                     "'Europe/Paris'; not %r" % (timezone,))


def _naive(t, tz, where):
    """A datetime without its zone under the timezone= policy `tz` (see _tz_policy); a
    TypeError naming `where` when it has one and no policy says what to do."""
    if t.tzinfo is None or t.utcoffset() is None:
        return t
    if tz is None:
        raise TypeError("%s: %s has a time zone (%s); %s"
                        % (where, t.isoformat(), t.tzname() or t.tzinfo, _TZ_HELP))
    if tz != "drop":
        t = t.astimezone(tz)
    return t.replace(tzinfo=None)


def _datetime_cell(t, where, tz=None):
    t = _naive(t, tz, where)
    _check_date_range(t, where)
    # full microseconds: the renderer rounds to the millisecond Excel keeps
    return {"datetime": t.isoformat(timespec="microseconds" if t.microsecond else "seconds")}


def _to_pydatetime(v):
    """pandas.Timestamp / numpy.datetime64 -> datetime.datetime (None for NaT)."""
    pd = _mod("pandas")
    if pd is not None and isinstance(v, pd.Timestamp):
        if v is pd.NaT:
            return None
        return v.to_pydatetime(warn=False)
    np = _mod("numpy")
    if np is not None and isinstance(v, np.datetime64):
        if np.isnat(v):
            return None
        if pd is not None:
            return pd.Timestamp(v).to_pydatetime(warn=False)
        return v.astype("datetime64[us]").item()
    return v


def _cell(v, where, tz=None):
    """One Python / numpy / pandas scalar -> a spec cell value.

    None, NaN, NaT and pandas.NA -> null (blank); bool -> boolean; int -> integer
    (floats beyond 64 bits); float -> number (+/-inf -> blank); date -> {"date"};
    datetime/Timestamp -> {"datetime"} (a timezone-aware one as the timezone= policy `tz`
    says, a TypeError without one); str -> text. Anything else (Decimal, Period,
    Timedelta, time, ...) -> a number or its text.
    """
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v if INT64_MIN <= v <= INT64_MAX else float(v)
    if isinstance(v, float):
        return None if (math.isnan(v) or math.isinf(v)) else v
    if isinstance(v, str):
        return _text_cell(v, where)
    np = _mod("numpy")
    if np is not None and isinstance(v, np.generic):
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, np.integer):
            return _cell(int(v), where, tz)
        if isinstance(v, np.floating):
            return _cell(float(v), where, tz)
        if isinstance(v, np.str_):
            return _text_cell(str(v), where)
        if isinstance(v, np.datetime64):
            t = _to_pydatetime(v)
            return None if t is None else _datetime_cell(t, where, tz)
        if isinstance(v, np.timedelta64):
            if np.isnat(v):
                return None
            pd = _mod("pandas")
            return _text_cell(str(pd.Timedelta(v)) if pd is not None else str(v), where)
    if _is_missing(v):
        return None
    pd = _mod("pandas")
    if pd is not None and isinstance(v, pd.Timestamp):
        return _datetime_cell(_to_pydatetime(v), where, tz)
    if isinstance(v, _dt.datetime):
        return _datetime_cell(v, where, tz)
    if isinstance(v, _dt.date):
        return _date_cell(v, where)
    if isinstance(v, decimal.Decimal):
        f = float(v)
        return None if (math.isnan(f) or math.isinf(f)) else f
    if isinstance(v, (bytes, bytearray)):
        raise TypeError("%s: bytes cannot go in a cell; decode them to text first" % where)
    if isinstance(v, dict) and _is_cell_object(v):
        return v
    if isinstance(v, (list, tuple, set, dict)):
        raise TypeError("%s: a %s cannot go in a cell; give one value per cell"
                        % (where, type(v).__name__))
    # Periods, Timedeltas, times, Intervals, UUIDs, ...: their text is what a reader expects.
    return _text_cell(str(v), where)


_CELL_KINDS = ("formula", "date", "datetime", "url", "value")
_CELL_KEYS = set(_CELL_KINDS) | {"text", "number_format", "style"}


def _is_cell_object(d):
    """A spec cell object given as it is ({"formula": "=SUM(B2:B9)", "value": 42},
    {"url": ..., "text": ...}, {"value": 0.1, "number_format": "0%"}); the renderer checks
    its details."""
    return bool(d) and set(d) <= _CELL_KEYS and any(k in d for k in _CELL_KINDS)


def _text_cell(s, where):
    if len(s) > MAX_CELL_CHARS:
        raise ValueError("%s: text of %d characters is longer than a cell holds (%d)"
                         % (where, len(s), MAX_CELL_CHARS))
    if _XML_BAD.search(s):
        raise ValueError("%s: text holds a control character XML cannot store (%r)"
                         % (where, _XML_BAD.search(s).group()))
    return s


def _label(v, where, tz=None):
    """A header / category label: text (or a number for categories kept numeric). A
    timezone-aware datetime is made naive as the timezone= policy `tz` says."""
    if v is None or _is_missing(v):
        return ""
    if isinstance(v, tuple):
        parts = [_label(x, where, tz) for x in v]
        return " / ".join(p for p in parts if p != "")
    t = _to_pydatetime(v)
    if isinstance(t, _dt.datetime):
        t = _naive(t, tz, where)
        if (t.hour, t.minute, t.second, t.microsecond) == (0, 0, 0, 0):
            return t.date().isoformat()
        return t.isoformat(sep=" ", timespec="seconds" if not t.microsecond else "milliseconds")
    if isinstance(t, _dt.date):
        return t.isoformat()
    np = _mod("numpy")
    if np is not None and isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return _text_cell(str(v), where)


# --------------------------------------------------------------------------- tables

_NUMERIC_TYPES = ("number", "integer", "currency", "percent")
_PERCENT_NAME = re.compile(r"(%|pct|percent|share|ratio|rate|margin)", re.I)
_CODE_NAME = re.compile(r"(^|[^a-z])(year|yr|id|code|zip|postcode|no|number|num)([^a-z]|$)", re.I)


class _Table:
    """A table converted from a DataFrame, a Series, a dict of columns or a list of rows:
    headers, spec columns, rows of cell values, and each column's values for charts."""

    def __init__(self, data, where, index=None, formats=None, columns=None, tz=None):
        self.where = where
        self.tz = tz           # the builder's timezone= policy (_tz_policy)
        self.headers = []      # column header texts
        self.types = []        # spec column types (None = auto)
        self.values = []       # each column's raw python values (for charts)
        self.index_columns = 0
        self.no_header = False     # list rows without column names: no header row
        if _is_series(data):
            data = data.to_frame(name=data.name if data.name is not None else "value")
        if _is_dataframe(data):
            self._from_dataframe(data, index)
        elif isinstance(data, dict):
            self._from_dict(data, columns)
        elif isinstance(data, (list, tuple)):
            self._from_rows(data, columns)
        else:
            mod = type(data).__module__.split(".")[0]
            raise TypeError("%s: expected a pandas DataFrame or Series, a dict of columns or a "
                            "list of rows, not %s%s" % (where, type(data).__name__,
                                                      "" if mod == "builtins" else " (%s)" % mod))
        if len(self.headers) > MAX_COLUMNS:
            raise ValueError("%s: %d columns; a sheet or table holds at most %d"
                             % (where, len(self.headers), MAX_COLUMNS))
        if self.nrows + 1 > MAX_ROWS:
            raise ValueError("%s: %d rows; a sheet or table holds at most %d including the header "
                             "row" % (where, self.nrows, MAX_ROWS - 1))
        self.formats = self._resolve_formats(formats)

    @property
    def nrows(self):
        return len(self.values[0]) if self.values else 0

    # -- sources

    def _from_dataframe(self, df, index):
        pd = _mod("pandas")
        if index is None:
            index = _meaningful_index(df.index)
        if index:
            names = list(df.index.names)
            # pandas' own reset_index() calls an unnamed index "index"
            names = [str(n) if n is not None else ("index" if len(names) == 1 else "level_%d" % i)
                     for i, n in enumerate(names)]
            if isinstance(df.index, pd.MultiIndex):
                for lvl in range(df.index.nlevels):
                    self._add_pandas_column(names[lvl], df.index.get_level_values(lvl))
            else:
                self._add_pandas_column(names[0], df.index)
            self.index_columns = df.index.nlevels
        if isinstance(df.columns, pd.MultiIndex):
            headers = [_label(tuple(c), "%s columns" % self.where, self.tz) for c in df.columns]
        else:
            headers = [_label(c, "%s columns" % self.where, self.tz) for c in df.columns]
        for i, h in enumerate(headers):
            self._add_pandas_column(h, df.iloc[:, i])

    def _add_pandas_column(self, header, col):
        pd = _mod("pandas")
        where = "%s column %r" % (self.where, header)
        ctype, vals = _pandas_column(col, where, pd, self.tz)
        self.headers.append(_text_cell(str(header), where))
        self.types.append(ctype)
        self.values.append(vals)

    def _from_dict(self, data, columns):
        if not data:
            raise ValueError("%s: the dict has no columns" % self.where)
        lengths = set()
        for k, v in data.items():
            if _is_series(v):
                pd = _mod("pandas")
                ctype, vals = _pandas_column(v, "%s column %r" % (self.where, k), pd, self.tz)
            else:
                if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
                    raise TypeError("%s: column %r must be a list of values, not %s"
                                    % (self.where, k, type(v).__name__))
                vals = [_cell(x, "%s column %r row %d" % (self.where, k, i), self.tz)
                        for i, x in enumerate(v)]
                ctype = _guess_type(vals)
            lengths.add(len(vals))
            self.headers.append(_label(k, self.where, self.tz))
            self.types.append(ctype)
            self.values.append(vals)
        if len(lengths) > 1:
            raise ValueError("%s: the columns have different lengths (%s)"
                             % (self.where, ", ".join(str(n) for n in sorted(lengths))))

    def _from_rows(self, rows, columns):
        rows = list(rows)
        if columns is None:
            if rows and isinstance(rows[0], dict):
                columns = list(rows[0].keys())
            else:
                width = max((len(r) for r in rows), default=0)
                if not rows or width == 0:
                    raise ValueError("%s: no rows and no columns; give columns=[...]" % self.where)
                columns = ["" for _ in range(width)]
                self.no_header = True
        columns = [_label(c, self.where, self.tz) for c in columns]
        width = len(columns)
        cols = [[] for _ in range(width)]
        for r, row in enumerate(rows):
            if isinstance(row, dict):
                unknown = [k for k in row if k not in columns]
                if unknown:
                    raise ValueError("%s row %d: key %r is not one of the columns %r"
                                     % (self.where, r, unknown[0], columns))
                row = [row.get(c) for c in columns]
            elif isinstance(row, (str, bytes)) or not hasattr(row, "__iter__"):
                raise TypeError("%s row %d: a row is a list (or dict) of values, not %s"
                                % (self.where, r, type(row).__name__))
            row = list(row)
            if len(row) > width:
                raise ValueError("%s row %d: %d values for %d columns"
                                 % (self.where, r, len(row), width))
            row += [None] * (width - len(row))
            for c, v in enumerate(row):
                cols[c].append(_cell(v, "%s row %d column %d" % (self.where, r, c), self.tz))
        self.headers = columns
        self.types = [_guess_type(vals) for vals in cols]
        self.values = cols

    # -- formats

    def _resolve_formats(self, formats):
        """formats: {column header: type name or Excel number format}. Returns per-column
        (type, number_format)."""
        result = []
        if formats is not None and not isinstance(formats, dict):
            raise TypeError("formats: a dict {column: 'currency' | 'percent' | '0.0%%' | ...}, not %s"
                            % type(formats).__name__)
        given = {}
        for k, f in (formats or {}).items():
            h = _label(k, "formats", self.tz)
            if h not in self.headers:
                raise ValueError("formats: %r is not a column (columns: %s)"
                                 % (k, ", ".join(repr(x) for x in self.headers)))
            given[h] = f
        for h, t, vals in zip(self.headers, self.types, self.values):
            fmt = None
            if h in given:
                f = given[h]
                if not isinstance(f, str) or not f:
                    raise TypeError("formats[%r]: a type name (%s) or an Excel number format such "
                                    "as '#,##0.0'" % (h, ", ".join(COLUMN_TYPES)))
                if f in COLUMN_TYPES:
                    t = f
                else:
                    fmt = _text(f, "formats[%r]" % h)
            else:
                t, fmt = _guess_format(h, t, vals)
            result.append((t, fmt))
        return result

    def spec_columns(self):
        cols = []
        for h, (t, fmt) in zip(self.headers, self.formats):
            c = {} if self.no_header else {"header": h}
            if t and t != "auto":
                c["type"] = t
            if fmt:
                c["number_format"] = fmt
            cols.append(c)
        return cols

    def spec_rows(self):
        return [list(r) for r in zip(*self.values)] if self.values else []

    def column(self, name, arg):
        """Index of the column called `name` (or an int position)."""
        if isinstance(name, int) and not isinstance(name, bool) and str(name) not in self.headers:
            if not 0 <= name < len(self.headers):
                raise ValueError("%s: column position %d out of range (0..%d)"
                                 % (arg, name, len(self.headers) - 1))
            return name
        key = _label(name, arg, self.tz)
        if key not in self.headers:
            raise ValueError("%s: %r is not a column (columns: %s)"
                             % (arg, name, ", ".join(repr(h) for h in self.headers)))
        return self.headers.index(key)


def _meaningful_index(index):
    """Keep a DataFrame's index as columns when it carries information: it has a name,
    it is a MultiIndex, or its labels are not integers (strings, dates). An unnamed
    integer index (0..n-1, or what is left of it after filtering) is dropped."""
    pd = _mod("pandas")
    if isinstance(index, pd.MultiIndex):
        return True
    if any(n is not None for n in index.names):
        return True
    if isinstance(index, pd.RangeIndex):
        return False
    return not pd.api.types.is_integer_dtype(index.dtype)


def _pandas_column(col, where, pd, tz=None):
    """A pandas Series/Index -> (spec type or None, list of cell values); a timezone-aware
    datetime column as the timezone= policy `tz` says (a TypeError without one)."""
    dtype = col.dtype
    api = pd.api.types
    if isinstance(dtype, pd.CategoricalDtype):
        # a categorical holds values of its categories' dtype (NaN where missing, so an
        # integer category column comes back as float: keep integers integers)
        cats = dtype.categories
        if len(cats) and api.is_integer_dtype(cats.dtype) and col.isna().any():
            col = col.astype(object).where(col.notna(), None)
            return "integer", [None if _is_missing(v) else _cell(v, where, tz) for v in col.tolist()]
        col = col.astype(cats.dtype if len(cats) else object)
        dtype = col.dtype
    # Vectorised paths (a 100,000-row frame must not take seconds): numpy dtypes hold no
    # missing values; pandas' nullable dtypes (Int64, boolean) hold pd.NA where missing.
    nullable = isinstance(dtype, pd.api.extensions.ExtensionDtype)
    if api.is_bool_dtype(dtype):
        if nullable:
            return "boolean", [None if _is_missing(v) else bool(v) for v in col.tolist()]
        return "boolean", [bool(v) for v in col.tolist()]
    if api.is_integer_dtype(dtype):
        if nullable:
            return "integer", [None if _is_missing(v) else _cell(int(v), where, tz) for v in col.tolist()]
        vals = col.tolist()
        if len(vals) and str(dtype) == "uint64" and max(vals) > INT64_MAX:
            vals = [_cell(v, where, tz) for v in vals]
        return "integer", vals
    if api.is_float_dtype(dtype):
        vals = [None if (v is None or math.isnan(v) or math.isinf(v)) else float(v)
                for v in col.astype("float64").tolist()]
        return "number", vals
    if api.is_datetime64_any_dtype(dtype):
        s = pd.Series(col)
        zone = getattr(dtype, "tz", None)
        if zone is not None:
            if tz is None:
                raise TypeError("%s: the datetimes have a time zone (%s, dtype %s); %s"
                                % (where, zone, dtype, _TZ_HELP))
            if tz != "drop":
                s = s.dt.tz_convert(tz)
            s = s.dt.tz_localize(None)
        nn = s.dropna()
        if len(nn) and nn.min().year < 1900:
            raise ValueError("%s: %s is before 1900-01-01, the first day a spreadsheet can hold"
                             % (where, nn.min().date().isoformat()))
        dates_only = bool(len(nn) == 0 or (nn == nn.dt.normalize()).all())
        if dates_only:
            text = s.dt.strftime("%Y-%m-%d")
            return "date", [{"date": t} if isinstance(t, str) else None for t in text.tolist()]
        fmt = "%Y-%m-%dT%H:%M:%S"
        if (nn.dt.microsecond != 0).any() or (nn.dt.nanosecond != 0).any():
            fmt += ".%f"            # microseconds; the spec rounds to milliseconds
        text = s.dt.strftime(fmt)
        return "datetime", [{"datetime": t} if isinstance(t, str) else None for t in text.tolist()]
    if api.is_timedelta64_dtype(dtype):
        return "string", [None if _is_missing(v) else str(v) for v in col.tolist()]
    if isinstance(dtype, pd.PeriodDtype):
        return "string", [None if _is_missing(v) else str(v) for v in col.tolist()]
    vals = [_cell(v, "%s row %d" % (where, i), tz) for i, v in enumerate(col.tolist())]
    return _guess_type(vals), vals


def _guess_type(vals):
    """The spec type of a list of cell values (None = leave it "auto")."""
    kinds = set()
    for v in vals:
        if v is None:
            continue
        if isinstance(v, bool):
            kinds.add("boolean")
        elif isinstance(v, int):
            kinds.add("integer")
        elif isinstance(v, float):
            kinds.add("number")
        elif isinstance(v, str):
            kinds.add("string")
        elif isinstance(v, dict) and "date" in v:
            kinds.add("date")
        elif isinstance(v, dict) and "datetime" in v:
            kinds.add("datetime")
        else:
            kinds.add("other")
        if len(kinds) > 2:
            break
    if kinds == {"integer", "number"}:
        return "number"
    if len(kinds) == 1:
        k = kinds.pop()
        return None if k == "other" else k
    return None


def _guess_format(header, ctype, vals):
    """A sensible (type, number_format) for a column nobody gave a format for."""
    if ctype == "integer":
        if _CODE_NAME.search(header):
            return "number", "0"           # years, ids and codes without thousands separators
        return "integer", None
    if ctype == "number":
        nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not nums:
            return "number", None
        if _PERCENT_NAME.search(header) and all(-1 <= v <= 1 for v in nums):
            return "percent", None
        if all(float(v).is_integer() for v in nums):
            if _CODE_NAME.search(header):
                return "number", "0"
            return "number", "#,##0"
        biggest = max(abs(v) for v in nums)
        if biggest < 1:
            return "number", "0.000"
        return "number", None             # #,##0.00
    return ctype, None


# --------------------------------------------------------------------------- charts

def _kind(kind):
    if not isinstance(kind, str):
        raise TypeError("kind: one of %s, not %s" % (", ".join(CHART_KINDS), type(kind).__name__))
    k = _KIND_ALIASES.get(kind.lower(), kind.lower())
    if k not in CHART_KINDS:
        raise ValueError("kind: %r is not a chart kind; use one of %s ('column' is vertical bars, "
                         "'bar' horizontal bars)" % (kind, ", ".join(CHART_KINDS)))
    return k


def _number(v, where):
    if isinstance(v, bool):
        raise TypeError("%s: %r is not a number" % (where, v))
    np = _mod("numpy")
    if np is not None and isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, decimal.Decimal):
        v = float(v)
    if v is None or _is_missing(v):
        raise ValueError("%s: missing value (NaN/None); a chart needs a number for every "
                         "category: fill or drop it first (e.g. df.fillna(0) or df.dropna())" % where)
    if isinstance(v, int):
        return v if INT64_MIN <= v <= INT64_MAX else float(v)
    if isinstance(v, float):
        if math.isinf(v):
            raise ValueError("%s: %r is not a finite number" % (where, v))
        return v
    raise TypeError("%s: %r (%s) is not a number; chart values must be numeric"
                    % (where, v, type(v).__name__))


def _category(v, where, numeric, tz=None):
    if numeric:
        return _number(v, where)
    np = _mod("numpy")
    if np is not None and isinstance(v, np.generic) and not isinstance(v, np.datetime64):
        v = v.item()
    if isinstance(v, (int, float)) and not isinstance(v, bool) and not _is_missing(v):
        if isinstance(v, float) and math.isinf(v):
            return str(v)
        return v
    return _label(v, where, tz)


def _seq(v, where):
    """A list from a sequence-like value (list, tuple, numpy array, pandas Series/Index)."""
    if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
        raise TypeError("%s: expected a sequence of values, not %s" % (where, type(v).__name__))
    if hasattr(v, "tolist"):
        return list(v.tolist())
    return list(v)


def _chart_spec(data, kind="column", title=None, x=None, y=None, stacked=None, legend=None,
                x_title=None, y_title=None, colors=None, width=None, height=None, where="chart",
                tz=None):
    """Build a chart object with literal data (docs/spec.md "Charts").

    data: a dict {series name: values} (a key named by `x`, or `x` itself as a list,
    gives the categories; a dict of pandas Series takes the first one's index), a
    pandas DataFrame (categories from column `x`, else a meaningful index, else the
    first non-numeric column; series from `y` or every other numeric column) or a
    pandas Series (one series over its index). Timezone-aware datetimes among the
    categories and names follow the timezone= policy `tz`.
    """
    kind = _kind(kind)
    categories = None
    series = []          # (name, list)
    if _is_series(data):
        name = data.name if data.name is not None else "Series 1"
        if x is not None:
            categories = _seq(x, "x")
        elif _meaningful_index(data.index):
            categories = _index_labels(data.index, where, tz)
        series = [(name, _seq(data, "%s series %r" % (where, name)))]
    elif _is_dataframe(data):
        pd = _mod("pandas")
        df = data
        if isinstance(df.columns, pd.MultiIndex):
            df = df.copy()
            df.columns = [_label(tuple(c), where, tz) for c in df.columns]
        cols = [str(c) if not isinstance(c, str) else c for c in df.columns]
        df = df.set_axis(cols, axis=1)
        if x is not None and not isinstance(x, str) and not hasattr(x, "__iter__"):
            x = _label(x, "x", tz)          # a numeric column label such as 2024
        if x is not None:
            if isinstance(x, str) and x in cols:
                categories = _seq(df[x], "%s x" % where)
            elif isinstance(x, str) and x in [str(n) for n in df.index.names if n is not None]:
                categories = _seq(df.index.get_level_values(x), "%s x" % where)
            elif isinstance(x, str):
                raise ValueError("x: %r is not a column of the DataFrame (columns: %s)"
                                 % (x, ", ".join(repr(c) for c in cols)))
            else:
                categories = _seq(x, "x")
                if len(categories) != len(df):
                    raise ValueError("x: %d categories for %d rows" % (len(categories), len(df)))
        elif _meaningful_index(df.index):
            categories = _index_labels(df.index, where, tz)
        else:
            text_cols = [c for c in cols if not pd.api.types.is_numeric_dtype(df[c].dtype)
                         or pd.api.types.is_bool_dtype(df[c].dtype)]
            # no text column: a year or id column is the categories rather than a series
            text_cols += [c for c in cols if _CODE_NAME.search(c)
                          and pd.api.types.is_integer_dtype(df[c].dtype)]
            text_cols = [c for c in text_cols if y is None or c not in _as_list(y)]
            if text_cols:
                x = text_cols[0]
                categories = _seq(df[x], "%s x" % where)
        if y is None:
            ys = [c for c in cols if c != x and pd.api.types.is_numeric_dtype(df[c].dtype)
                  and not pd.api.types.is_bool_dtype(df[c].dtype)]
            if not ys:
                raise ValueError("%s: the DataFrame has no numeric column to plot (columns: %s)"
                                 % (where, ", ".join(repr(c) for c in cols)))
        else:
            ys = [c if isinstance(c, str) else _label(c, "y", tz) for c in _as_list(y)]
            for c in ys:
                if c not in cols:
                    raise ValueError("y: %r is not a column of the DataFrame (columns: %s)"
                                     % (c, ", ".join(repr(c2) for c2 in cols)))
        series = [(c, _seq(df[c], "%s series %r" % (where, c))) for c in ys]
    elif isinstance(data, dict):
        if not data:
            raise ValueError("data: the dict has no series")
        items = list(data.items())
        if x is not None and not isinstance(x, str):
            categories = _seq(x, "x")
        elif isinstance(x, str):
            if x not in data:
                raise ValueError("x: %r is not a key of data (keys: %s)"
                                 % (x, ", ".join(repr(k) for k in data)))
            categories = _seq(data[x], "x")
            items = [(k, v) for k, v in items if k != x]
        ynames = _as_list(y) if y is not None else None
        if ynames is not None:
            for k in ynames:
                if k not in data:
                    raise ValueError("y: %r is not a key of data (keys: %s)"
                                     % (k, ", ".join(repr(k2) for k2 in data)))
            items = [(k, data[k]) for k in ynames]
        if categories is None and items and _is_series(items[0][1]):
            idx = items[0][1].index
            if _meaningful_index(idx):
                categories = _index_labels(idx, where, tz)
        series = [(k, _seq(v, "%s series %r" % (where, k))) for k, v in items]
    else:
        raise TypeError("data: a chart takes a dict of series, a pandas DataFrame or a pandas "
                        "Series, not %s" % type(data).__name__)

    if not series:
        raise ValueError("data: no series to plot")
    if len(series) > MAX_SERIES:
        raise ValueError("data: %d series; a chart holds at most %d" % (len(series), MAX_SERIES))
    if kind in ("pie", "doughnut") and len(series) != 1:
        raise ValueError("kind: a %s chart takes exactly one series, got %d (%s); pick one with y=..."
                         % (kind, len(series), ", ".join(repr(str(n)) for n, _ in series)))
    n = len(series[0][1])
    if n == 0:
        raise ValueError("data: series %r has no values" % (str(series[0][0]),))
    spec = {"kind": kind}
    if title is not None:
        spec["title"] = _text(title, "title")
    if categories is not None:
        if len(categories) != n:
            raise ValueError("data: %d categories but series %r has %d values"
                             % (len(categories), str(series[0][0]), n))
        spec["categories"] = [_category(c, "%s category %d" % (where, i), kind == "scatter", tz)
                              for i, c in enumerate(categories)]
    out_series = []
    for i, (name, vals) in enumerate(series):
        sname = _label(name, "%s series %d name" % (where, i), tz)
        if len(vals) != n:
            raise ValueError("data: series %r has %d values, series %r has %d; every series needs "
                             "one value per category" % (sname, len(vals), str(series[0][0]), n))
        s = {"name": sname if sname else "Series %d" % (i + 1),
             "values": [_number(v, "data: series %r value %d" % (sname, j)) for j, v in enumerate(vals)]}
        if colors is not None:
            cl = _as_list(colors)
            if i < len(cl) and cl[i] is not None:
                s["color"] = _color(cl[i], "colors[%d]" % i)
        out_series.append(s)
    spec["series"] = out_series
    if stacked:
        if kind not in ("column", "bar", "area"):
            raise ValueError("stacked: only column, bar and area charts stack, not %s" % kind)
        spec["stacked"] = True
    if legend is not None:
        if legend is False:
            legend = "none"
        if legend not in _LEGENDS:
            raise ValueError("legend: one of %s, not %r" % (", ".join(_LEGENDS), legend))
        spec["legend"] = legend
    if (x_title is not None or y_title is not None) and kind in ("pie", "doughnut"):
        raise ValueError("x_title/y_title: a %s chart has no axes" % kind)
    if x_title is not None:
        spec["x_axis"] = {"title": _text(x_title, "x_title")}
    if y_title is not None:
        spec["y_axis"] = {"title": _text(y_title, "y_title")}
    for arg, v in (("width", width), ("height", height)):
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int) or not 16 <= v <= 8192:
                raise ValueError("%s: whole pixels 16..8192, not %r" % (arg, v))
            spec[arg] = v
    if kind == "scatter" and "categories" not in spec:
        raise ValueError("x: a scatter chart needs numeric x values (give x=...)")
    return spec


def _index_labels(index, where, tz=None):
    """Category labels from a pandas index (a MultiIndex's levels joined with ' / ')."""
    pd = _mod("pandas")
    if isinstance(index, pd.MultiIndex):
        return [_label(tuple(t), where, tz) for t in index]
    return _seq(index, "%s index" % where)


def _as_list(v):
    if isinstance(v, (list, tuple)):
        return list(v)
    return [v]


# --------------------------------------------------------------------------- small checks

def _text(v, arg, allow_empty=True):
    if not isinstance(v, str):
        np = _mod("numpy")
        if isinstance(v, (int, float)) or (np is not None and isinstance(v, np.generic)):
            v = str(v)
        else:
            raise TypeError("%s: expected text (str), not %s" % (arg, type(v).__name__))
    if not allow_empty and not v:
        raise ValueError("%s: must not be empty" % arg)
    m = _XML_BAD.search(v)
    if m:
        raise ValueError("%s: text holds a control character XML cannot store (%r)" % (arg, m.group()))
    return v


def _color(v, arg):
    if not isinstance(v, str) or not _COLOR.match(v):
        raise ValueError("%s: a color is '#RRGGBB', not %r" % (arg, v))
    return v if v.startswith("#") else "#" + v


def _length_pt(v, arg):
    """A length (number of points or '2.5in'/'6cm'/'50mm'/'72pt') -> (spec value, points)."""
    if isinstance(v, bool):
        raise TypeError("%s: a length is a number of points or a string like '6in', '15cm'" % arg)
    if isinstance(v, (int, float)):
        return v, float(v)
    if isinstance(v, str) and _LENGTH.match(v):
        unit = v[-2:]
        return v, float(v[:-2]) * _PT_PER_UNIT[unit]
    raise ValueError("%s: a length is a number of points or a string like '6in', '15cm', "
                     "'120mm', '300pt'; not %r" % (arg, v))


def _check_sheet_name(name, arg="name"):
    if not isinstance(name, str):
        raise TypeError("%s: a sheet name is text, not %s" % (arg, type(name).__name__))
    if not 1 <= len(name) <= 31:
        raise ValueError("%s: sheet name %r must be 1..31 characters (it has %d)"
                         % (arg, name, len(name)))
    m = _SHEET_BAD.search(name)
    if m:
        raise ValueError("%s: sheet name %r must not contain %r (none of [ ] : * ? / \\ or "
                         "control characters)" % (arg, name, m.group()))
    if name.startswith("'") or name.endswith("'"):
        raise ValueError("%s: sheet name %r must not start or end with an apostrophe" % (arg, name))
    if name.lower() == "history":
        raise ValueError("%s: 'History' is reserved by Excel; pick another sheet name" % arg)
    return name


def _safe_sheet_name(text, taken):
    """A valid, unused sheet name made from arbitrary text (for table names)."""
    s = _SHEET_BAD.sub(" ", str(text)).strip().strip("'").strip() or "Table"
    s = s[:31].rstrip("'").strip() or "Table"
    if s.lower() == "history":
        s = "History 1"
    base, n = s, 1
    while s.casefold() in taken:
        n += 1
        suffix = " (%d)" % n
        s = base[:31 - len(suffix)].rstrip("'") + suffix
    return s


def _col_letters(i):
    """0-based column index -> A1 letters."""
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def _quote_sheet(name):
    """A sheet name for a range, always quoted: Excel needs quotes for names with spaces,
    names that look like cells (A1, R1C1) or start with a digit, and accepts them on any."""
    return "'" + name.replace("'", "''") + "'"


# --------------------------------------------------------------------------- images

def _image_spec(src, alt=None, dpi=150, arg="image"):
    """Save a matplotlib Figure/Axes (PNG), copy a PNG/JPEG file or write PNG/JPEG bytes into
    .kiln/ under a name from its content hash; returns the spec image object."""
    data = None
    np = _mod("numpy")
    if np is not None and isinstance(src, np.ndarray) and src.size and hasattr(src.flat[0], "get_figure"):
        src = src.flat[0].get_figure()          # the axes array of plt.subplots(2, 2)
    if hasattr(src, "savefig") or (hasattr(src, "get_figure") and hasattr(src, "plot")):
        fig = src if hasattr(src, "savefig") else src.get_figure()
        import io
        buf = io.BytesIO()
        if isinstance(dpi, bool) or not isinstance(dpi, (int, float)) or not 10 <= dpi <= 1200:
            raise ValueError("dpi: a resolution of 10..1200 dots per inch, not %r" % (dpi,))
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", facecolor="white")
        data = buf.getvalue()
        if alt is None:
            alt = _figure_title(fig)
    elif isinstance(src, (bytes, bytearray, memoryview)):
        data = bytes(src)
    elif isinstance(src, (str, os.PathLike)):
        p = Path(src)
        if not p.is_absolute() and not p.exists():
            p = job_dir() / p
        if not p.is_file():
            raise ValueError("%s: no such image file: %s" % (arg, src))
        if p.stat().st_size > MAX_IMAGE_BYTES:
            raise ValueError("%s: %s is %d bytes; an image may be at most %d"
                             % (arg, src, p.stat().st_size, MAX_IMAGE_BYTES))
        data = p.read_bytes()
    elif hasattr(src, "save") and hasattr(src, "mode"):      # a PIL image
        import io
        buf = io.BytesIO()
        src.save(buf, format="PNG")
        data = buf.getvalue()
    else:
        raise TypeError("%s: expected a matplotlib Figure or Axes, an image file path or PNG/JPEG "
                        "bytes, not %s" % (arg, type(src).__name__))
    if data.startswith(_PNG_SIG):
        ext = "png"
    elif data.startswith(_JPEG_SIG):
        ext = "jpg"
    else:
        raise ValueError("%s: not a PNG or JPEG image (only those two formats go in a document)" % arg)
    if len(data) > MAX_IMAGE_BYTES:
        raise ValueError("%s: the image is %d bytes; at most %d" % (arg, len(data), MAX_IMAGE_BYTES))
    name = "img-%s.%s" % (hashlib.sha256(data).hexdigest()[:16], ext)
    target = _kiln_dir() / name
    if not target.is_file() or target.stat().st_size != len(data):
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix="." + ext, dir=str(target.parent))
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    spec = {"path": name}
    if alt:
        spec["alt"] = _text(alt, "alt")
    return spec


def _figure_title(fig):
    try:
        t = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else ""
        if not t and fig.axes:
            t = fig.axes[0].get_title()
        return t or None
    except Exception:  # a best-effort alt text; never fail a save over it
        return None


# --------------------------------------------------------------------------- runs, list items

_RUN_KEYS = {"text", "bold", "italic", "underline", "strike", "superscript", "subscript", "code",
             "color", "size", "font", "link"}


def _runs(runs, arg):
    """Rich text: a list of strings and {"text": ..., "bold": True, ...} dicts."""
    if not runs:
        raise ValueError("%s: the list of runs is empty" % arg)
    out = []
    for i, r in enumerate(runs):
        a = "%s[%d]" % (arg, i)
        if isinstance(r, str):
            out.append({"text": _text(r, a)})
            continue
        if not isinstance(r, dict) or "text" not in r:
            raise TypeError("%s: a run is a string or a dict with 'text', not %r" % (a, r))
        unknown = set(r) - _RUN_KEYS
        if unknown:
            raise ValueError("%s: unknown run member %r (allowed: %s)"
                             % (a, sorted(unknown)[0], ", ".join(sorted(_RUN_KEYS))))
        d = dict(r)
        d["text"] = _text(d["text"], a + "['text']")
        if "color" in d:
            d["color"] = _color(d["color"], a + "['color']")
        out.append(d)
    return out


def _list_items(items, arg, depth=1):
    if depth > MAX_LIST_DEPTH:
        raise ValueError("%s: lists nest at most %d levels" % (arg, MAX_LIST_DEPTH))
    if isinstance(items, str) or not hasattr(items, "__iter__"):
        raise TypeError("%s: a list of items (strings, or (text, [sub-items]) pairs), not %s"
                        % (arg, type(items).__name__))
    out = []
    for i, it in enumerate(items):
        a = "%s[%d]" % (arg, i)
        if isinstance(it, tuple) and len(it) == 2 and isinstance(it[1], (list, tuple)):
            out.append({"text": _text(it[0], a), "items": _list_items(it[1], a, depth + 1)})
        elif isinstance(it, dict):
            unknown = set(it) - {"text", "runs", "items"}
            if unknown or ("text" in it) == ("runs" in it):
                raise ValueError("%s: a list item dict has 'text' or 'runs' (one of them) and "
                                 "optionally 'items'; got %s" % (a, sorted(it)))
            d = {}
            if "text" in it:
                d["text"] = _text(it["text"], a + "['text']")
            else:
                d["runs"] = _runs(it["runs"], a + "['runs']")
            if "items" in it:
                d["items"] = _list_items(it["items"], a + "['items']", depth + 1)
            out.append(d)
        elif isinstance(it, (list,)):
            # a bare list right after an item: the sub-items of the item before it
            if not out:
                raise ValueError("%s: a nested list must follow the item it belongs to" % a)
            prev = out[-1]
            if isinstance(prev, str):
                prev = {"text": prev}
                out[-1] = prev
            prev.setdefault("items", []).extend(_list_items(it, a, depth + 1))
        else:
            out.append(_text(it, a))
    if not out:
        raise ValueError("%s: the list is empty" % arg)
    return out


# --------------------------------------------------------------------------- builders

class _Builder:
    """What Document, Workbook and Deck share: metadata, page setup, theme, saving."""

    def __init__(self, title=None, author=None, subject=None, company=None, keywords=None,
                 created=None, page_size=None, orientation=None, font=None, accent_colors=None,
                 timezone=None):
        self._tz = _tz_policy(timezone)
        self.metadata = {}
        for arg, v in (("title", title), ("author", author), ("subject", subject),
                       ("company", company)):
            if v is not None:
                self.metadata[arg] = _text(v, arg)
        if keywords is not None:
            self.metadata["keywords"] = (_text(keywords, "keywords") if isinstance(keywords, str)
                                         else [_text(k, "keywords") for k in keywords])
        if created is not None:
            if isinstance(created, _dt.datetime):
                created = created.isoformat(timespec="seconds")
            elif isinstance(created, _dt.date):
                created = created.isoformat()
            self.metadata["created"] = _text(created, "created")
        self.page = {}
        if page_size is not None:
            if page_size not in ("A4", "Letter", "Legal", "A3", "A5"):
                raise ValueError("page_size: one of A4, Letter, Legal, A3, A5; not %r" % (page_size,))
            self.page["size"] = page_size
        if orientation is not None:
            if orientation not in ("portrait", "landscape"):
                raise ValueError("orientation: 'portrait' or 'landscape', not %r" % (orientation,))
            self.page["orientation"] = orientation
        self.theme = {}
        if font is not None:
            self.theme["font"] = _text(font, "font", allow_empty=False)
        if accent_colors is not None:
            cl = [_color(c, "accent_colors[%d]" % i) for i, c in enumerate(_as_list(accent_colors))]
            if not 1 <= len(cl) <= 12:
                raise ValueError("accent_colors: 1..12 colors")
            self.theme["accent_colors"] = cl

    def _content(self):
        raise NotImplementedError

    def to_spec(self):
        """The spec as a dict (what save() writes)."""
        spec = {"version": 1}
        if self.metadata:
            spec["metadata"] = dict(self.metadata)
        if self.theme:
            spec["theme"] = dict(self.theme)
        if self.page:
            spec["page"] = dict(self.page)
        spec.update(self._content())
        return spec

    def save(self, out):
        """Save the spec for output file `out` (a simple name ending .xlsx, .docx, .pdf or
        .pptx, or a path in the job directory such as "/mnt/data/report.docx"; any builder
        can be saved in any format, and saved again under another name).
        Returns the spec's Path ($KILN_JOB_DIR/.kiln/OUT.spec.json); `kiln run --render`
        renders it to $KILN_JOB_DIR/OUT."""
        _check_out_name(out)
        spec = self.to_spec()
        if not any(spec.get(k) for k in ("sheets", "blocks", "slides")):
            raise ValueError("%s is empty: add content before save()" % type(self).__name__)
        return _write_spec(spec, _check_out_name(out)[0], checked=False)


class Document(_Builder):
    """A report: headings, paragraphs, lists, tables, images and charts in one flow.

    Renders natively to .docx and .pdf (and maps to .pptx/.xlsx). With a `title`, the
    document opens with it as a level-1 heading (and `subtitle` as a paragraph below)
    unless title_block=False; title and author also go into the file's properties.
    """

    def __init__(self, title=None, author=None, subtitle=None, subject=None, company=None,
                 keywords=None, created=None, page_size=None, orientation=None, font=None,
                 accent_colors=None, header=False, page_numbers=True, title_block=True,
                 timezone=None):
        """Start a document. page_size: A4 (default), Letter, Legal, A3, A5; orientation:
        portrait/landscape; header=True puts the title on top of every page.
        timezone: what to do with timezone-aware datetimes in tables and charts, which a
        document cannot hold: None (default) refuses them with a TypeError naming the
        column, "drop" keeps the wall-clock time as written, "UTC" or a zone name such as
        "Europe/Paris" (or a tzinfo) converts to that zone first."""
        super().__init__(title=title, author=author,
                         subject=subject if subject is not None else subtitle,
                         company=company, keywords=keywords, created=created,
                         page_size=page_size, orientation=orientation, font=font,
                         accent_colors=accent_colors, timezone=timezone)
        self.blocks = []
        if header:
            if header is True and title is None:
                raise ValueError("header: header=True shows the title on every page; give title=...")
            self.page["header"] = True if header is True else _text(header, "header", False)
        if page_numbers is not True:
            self.page["page_numbers"] = bool(page_numbers)
        if title is not None and title_block:
            self.blocks.append({"type": "heading", "level": 1, "text": _text(title, "title")})
            if subtitle is not None:
                self.blocks.append({"type": "paragraph",
                                    "runs": [{"text": _text(subtitle, "subtitle"), "italic": True}]})

    def _content(self):
        return {"blocks": list(self.blocks)}

    def _add(self, block):
        self.blocks.append(block)
        return self

    def heading(self, text, level=1):
        """Add a heading; level 1 (largest) .. 6."""
        if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 6:
            raise ValueError("level: a heading level is 1..6, not %r" % (level,))
        return self._add({"type": "heading", "level": level, "text": _text(text, "text")})

    def paragraph(self, text, align=None, markdown=False):
        """Add a paragraph of text. markdown=True reads `text` as Markdown (**bold**,
        *italic*, `code`, [links](https://...)) and may hold several paragraphs. `text` may
        also be a list of runs: [{"text": "up ", }, {"text": "6%", "bold": True}].
        align: left, center, right or justify."""
        if align is not None and align not in ("left", "center", "right", "justify"):
            raise ValueError("align: left, center, right or justify; not %r" % (align,))
        if markdown:
            if align is not None:
                raise ValueError("align: not available with markdown=True")
            return self.markdown(text)
        if isinstance(text, list):
            block = {"type": "paragraph", "runs": _runs(text, "text")}
        else:
            block = {"type": "paragraph", "text": _text(text, "text")}
        if align is not None:
            block["align"] = align
        return self._add(block)

    def markdown(self, text):
        """Add Markdown (CommonMark with GitHub tables and strikethrough); it becomes
        headings, paragraphs, lists, tables, code and quotes."""
        return self._add({"type": "markdown", "text": _text(text, "text")})

    def bullets(self, items, ordered=False, start=None):
        """Add a bulleted list (numbered with ordered=True). Items are strings; nest with
        (text, [sub-items]) pairs or a list right after its parent item: ["a", ["a1", "a2"], "b"]."""
        block = {"type": "list", "items": _list_items(items, "items")}
        if ordered:
            block["ordered"] = True
        if start is not None:
            if isinstance(start, bool) or not isinstance(start, int) or start < 0:
                raise ValueError("start: an integer >= 0, not %r" % (start,))
            block["start"] = start
        return self._add(block)

    def numbered(self, items, start=None):
        """Add a numbered list (see bullets())."""
        return self.bullets(items, ordered=True, start=start)

    def table(self, data, caption=None, formats=None, index=None, columns=None, name=None):
        """Add a table from a pandas DataFrame or Series, a dict of columns or a list of
        rows (with columns=[headers]).

        Numbers stay numbers, NaN/None become blank cells, datetimes dates, bools booleans;
        the index is included when it is meaningful (named, a MultiIndex, or not integers)
        or when index=True. MultiIndex columns are flattened ("sum / revenue").
        formats: {column: type or Excel format}, types being integer, number, currency,
        percent, date, datetime, string, boolean; e.g. {"Revenue": "currency",
        "Share": "0.0%"}. Formats not given are guessed (integers '#,##0', years and ids
        '0', fractions named like 'share'/'rate'/'%' as percent). name: the sheet name
        when rendered to .xlsx. Timezone-aware datetimes follow the document's timezone=."""
        t = _Table(data, "data", index=index, formats=formats, columns=columns, tz=self._tz)
        block = {"type": "table", "columns": t.spec_columns(), "rows": t.spec_rows()}
        if t.no_header:
            block["header"] = False
        if caption is not None:
            block["caption"] = _text(caption, "caption")
        if name is not None:
            block["name"] = _check_sheet_name(name)
        return self._add(block)

    def image(self, image, caption=None, width=None, alt=None, dpi=150):
        """Add a picture: a matplotlib Figure or Axes (saved as PNG at `dpi`), a PNG/JPEG
        file path (relative paths are looked up in the job directory) or PNG/JPEG bytes.
        width: a length ('15cm', '6in', or points); default the natural size fitted to
        the page."""
        block = {"type": "image", "image": _image_spec(image, alt=alt, dpi=dpi)}
        if caption is not None:
            block["caption"] = _text(caption, "caption")
        if width is not None:
            w, pt = _length_pt(width, "width")
            if not 1 <= pt <= 14400:
                raise ValueError("width: 1pt..14400pt, not %r" % (width,))
            block["width"] = w
        return self._add(block)

    def chart(self, data, kind="column", title=None, x=None, y=None, caption=None,
              stacked=False, legend=None, x_title=None, y_title=None, colors=None,
              width=None, height=None):
        """Add a native chart (editable in Word; drawn as vectors in PDF).

        data: a dict {series name: values} (with x= a key or a list for the categories),
        a pandas DataFrame (x= the category column, else its index if meaningful, else the
        first text column; y= the series columns, default every numeric one) or a Series.
        kind: column (vertical bars), bar (horizontal), line, area, pie, doughnut (one
        series), scatter (numeric x). NaN values are refused: fill or drop them first."""
        block = {"type": "chart"}
        block.update(_chart_spec(data, kind=kind, title=title, x=x, y=y, stacked=stacked,
                                 legend=legend, x_title=x_title, y_title=y_title, colors=colors,
                                 width=width, height=height, tz=self._tz))
        if caption is not None:
            block["caption"] = _text(caption, "caption")
        return self._add(block)

    def page_break(self):
        """Start a new page."""
        return self._add({"type": "page_break"})

    def toc(self, title=None, levels=3):
        """Add a table of contents listing headings up to `levels` (1..6)."""
        if isinstance(levels, bool) or not isinstance(levels, int) or not 1 <= levels <= 6:
            raise ValueError("levels: 1..6, not %r" % (levels,))
        block = {"type": "toc", "levels": levels}
        if title is not None:
            block["title"] = _text(title, "title")
        return self._add(block)

    def code(self, text, language=None):
        """Add a code listing in a monospaced font."""
        block = {"type": "code", "text": _text(text, "text")}
        if language:
            block["language"] = _text(language, "language")
        return self._add(block)

    def quote(self, text, attribution=None):
        """Add a block quotation with an optional attribution."""
        block = {"type": "quote", "text": _text(text, "text")}
        if attribution is not None:
            block["attribution"] = _text(attribution, "attribution")
        return self._add(block)

    def rule(self):
        """Add a horizontal rule."""
        return self._add({"type": "rule"})


class Sheet:
    """One worksheet of a Workbook (returned by Workbook.sheet()); add charts with chart()."""

    def __init__(self, workbook, spec, table):
        self._wb = workbook
        self.spec = spec
        self._table = table

    @property
    def name(self):
        """The sheet's name."""
        return self.spec["name"]

    def _range(self, col, nrows):
        letters = _col_letters(col)
        first = 1 if self._table.no_header else 2      # data starts below the header row
        return "%s!$%s$%d:$%s$%d" % (_quote_sheet(self.name), letters, first, letters,
                                     first + nrows - 1)

    def chart(self, kind="column", x=None, y=None, title=None, anchor=None, stacked=False,
              legend=None, x_title=None, y_title=None, colors=None, width=None, height=None,
              data=None):
        """Add a native chart over this sheet's columns: categories from column `x` (default:
        the first text/date column, else the index columns), series from columns `y`
        (default: every other numeric column). The chart reads the cells, so it follows
        edits in Excel. With `data` (a dict of series or a DataFrame) the chart holds that
        data instead. anchor: the top-left cell (default right of the data)."""
        if data is not None:
            spec = _chart_spec(data, kind=kind, title=title, x=x, y=y, stacked=stacked,
                               legend=legend, x_title=x_title, y_title=y_title, colors=colors,
                               width=width, height=height, where="data", tz=self._wb._tz)
        else:
            t = self._table
            if t is None or t.nrows == 0:
                raise ValueError("chart: the sheet %r has no data rows to chart" % self.name)
            # Build a literal chart first: it checks every value (no NaN, numeric series,
            # pie takes one series) with the same messages, then swap in cell ranges.
            if x is None:
                x = _default_x(t)
            xi = t.column(x, "x") if x is not None else None
            if y is None:
                # every numeric column but the categories, the index and codes (years, ids)
                ys = [i for i, (ty, fmt) in enumerate(t.formats)
                      if i != xi and i >= t.index_columns and ty in _NUMERIC_TYPES and fmt != "0"]
                if not ys:
                    raise ValueError("y: the sheet %r has no numeric column to chart" % self.name)
            else:
                ys = [t.column(c, "y") for c in _as_list(y)]
            kind = _kind(kind)
            # blank cells are gaps in a range chart, so only the literal check sees them as 0
            # (keyed by position: headers may repeat or be empty)
            lit = {"column %s" % _col_letters(i): [0 if v is None else _chart_value(v)
                                                   for v in t.values[i]] for i in ys}
            xs = None
            if xi is not None:
                xs = [_chart_value(v) for v in t.values[xi]]
            spec = _chart_spec(lit, kind=kind, title=title, x=xs, stacked=stacked, legend=legend,
                               x_title=x_title, y_title=y_title, colors=colors, width=width,
                               height=height, where="sheet %r" % self.name, tz=self._wb._tz)
            n = t.nrows
            if xi is not None:
                spec["categories"] = self._range(xi, n)
            for k, (s, i) in enumerate(zip(spec["series"], ys)):
                if t.no_header:
                    s["name"] = "Series %d" % (k + 1)
                else:
                    s["name"] = "%s!$%s$1" % (_quote_sheet(self.name), _col_letters(i))
                s["values"] = self._range(i, n)
        if anchor is not None:
            if not isinstance(anchor, str) or not re.fullmatch(r"\$?[A-Za-z]{1,3}\$?[1-9][0-9]{0,6}", anchor):
                raise ValueError("anchor: a cell such as 'H2', not %r" % (anchor,))
            spec["anchor"] = anchor
        self.spec.setdefault("charts", []).append(spec)
        return self


def _chart_value(v):
    """A cell value back to a plain value for the chart checks (dates -> their text)."""
    if isinstance(v, dict):
        return v.get("date") or v.get("datetime") or v.get("value")
    return v


def _default_x(t):
    """The category column of a sheet chart: the index, else the first text or date
    column, else the first code-like one (a year, an id)."""
    if t.index_columns:
        return 0
    for i, ty in enumerate(t.types):
        if ty in ("string", "date", "datetime", None):
            return i
    for i, (ty, fmt) in enumerate(t.formats):
        if fmt == "0":
            return i
    return None


class Workbook(_Builder):
    """A spreadsheet: one sheet per DataFrame, with native charts. Renders natively to
    .xlsx (and maps to .docx/.pdf/.pptx: each sheet a table)."""

    def __init__(self, title=None, author=None, subject=None, company=None, keywords=None,
                 created=None, page_size=None, orientation=None, font=None, accent_colors=None,
                 timezone=None):
        """Start a workbook; title and author go into the file's properties.
        timezone: what to do with timezone-aware datetimes, which Excel cannot hold: None
        (default) refuses them with a TypeError naming the column, "drop" keeps the
        wall-clock time as written (XlsxWriter's remove_timezone), "UTC" or a zone name
        such as "Europe/Paris" (or a tzinfo) converts to that zone first."""
        super().__init__(title=title, author=author, subject=subject, company=company,
                         keywords=keywords, created=created, page_size=page_size,
                         orientation=orientation, font=font, accent_colors=accent_colors,
                         timezone=timezone)
        self.sheets = []

    def _content(self):
        return {"sheets": [s.spec for s in self.sheets]}

    def sheet(self, data=None, name=None, chart=None, freeze=True, autofilter=True, formats=None,
              index=None, columns=None, table=False, widths=None, tab_color=None):
        """Add a sheet from a pandas DataFrame or Series, a dict of columns or a list of rows
        (with columns=[headers]); returns the Sheet (add more charts with .chart()).

        name: 1..31 characters, none of [ ] : * ? / \\, unique ignoring case (default
        SheetN). Values and formats as in Document.table(). freeze=True freezes the header
        row (and the index columns); autofilter=True puts filter buttons on the header;
        table=True (or a dict {"name":..., "style":...}) makes it an Excel table instead.
        chart: a kind ("line") or a dict of Sheet.chart() arguments
        ({"kind": "column", "x": "region", "y": ["revenue"], "title": "Revenue"}).
        widths: {column: width in characters}."""
        if len(self.sheets) >= MAX_SHEETS:
            raise ValueError("sheet: a workbook holds at most %d sheets" % MAX_SHEETS)
        taken = {s.name.casefold() for s in self.sheets}
        if name is None:
            n = len(self.sheets) + 1
            while ("sheet%d" % n) in taken:
                n += 1
            name = "Sheet%d" % n
        _check_sheet_name(name)
        if name.casefold() in taken:
            raise ValueError("name: there is already a sheet named %r (names are compared "
                             "ignoring case)" % name)
        spec = {"name": name}
        t = None
        if data is not None:
            t = _Table(data, "data", index=index, formats=formats, columns=columns, tz=self._tz)
            spec["columns"] = t.spec_columns()
            spec["rows"] = t.spec_rows()
            if t.no_header:
                spec["header"] = False
            if widths:
                for k, w in widths.items():
                    i = t.column(k, "widths")
                    if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w <= 255:
                        raise ValueError("widths[%r]: 0..255 characters, not %r" % (k, w))
                    spec["columns"][i]["width"] = w
            if freeze:
                fr = {"rows": 1}
                if t.index_columns:
                    fr["columns"] = t.index_columns
                spec["freeze"] = fr
            if table:
                if table is True:
                    tb = True
                elif isinstance(table, dict):
                    unknown = set(table) - {"name", "style", "total_row"}
                    if unknown:
                        raise ValueError("table: unknown option %r (name, style, total_row)"
                                         % sorted(unknown)[0])
                    tb = dict(table)
                else:
                    raise TypeError("table: True or a dict {'name':..., 'style':..., "
                                    "'total_row': bool}, not %s" % type(table).__name__)
                spec["table"] = tb
            elif autofilter and t.nrows > 0:
                spec["autofilter"] = True
        if tab_color is not None:
            spec["tab_color"] = _color(tab_color, "tab_color")
        sh = Sheet(self, spec, t)
        self.sheets.append(sh)
        if chart is not None:
            if isinstance(chart, str):
                sh.chart(kind=chart)
            elif isinstance(chart, dict):
                unknown = set(chart) - {"kind", "x", "y", "title", "anchor", "stacked", "legend",
                                        "x_title", "y_title", "colors", "width", "height", "data"}
                if unknown:
                    raise ValueError("chart: unknown option %r (kind, x, y, title, anchor, stacked, "
                                     "legend, x_title, y_title, colors, width, height, data)"
                                     % sorted(unknown)[0])
                sh.chart(**chart)
            else:
                raise TypeError("chart: a kind such as 'line' or a dict of options, not %s"
                                % type(chart).__name__)
        return sh


class Deck(_Builder):
    """A slide deck. Renders natively to .pptx (and maps to .docx/.pdf/.xlsx).

    With a `title` the deck opens with a title slide (subtitle below it)."""

    def __init__(self, title=None, subtitle=None, author=None, subject=None, company=None,
                 keywords=None, created=None, font=None, accent_colors=None, notes=None,
                 timezone=None):
        """Start a deck; a title slide is added when `title` is given (notes: its
        speaker notes). timezone: as for Document (None refuses timezone-aware datetimes,
        "drop" keeps the wall-clock time, "UTC" or a zone name converts first)."""
        super().__init__(title=title, author=author, subject=subject, company=company,
                         keywords=keywords, created=created, font=font,
                         accent_colors=accent_colors, timezone=timezone)
        self.slides = []
        if title is not None:
            s = {"layout": "title", "title": _text(title, "title")}
            if subtitle is not None:
                s["subtitle"] = _text(subtitle, "subtitle")
            self._add(s, notes)

    def _content(self):
        return {"slides": list(self.slides)}

    def _add(self, slide, notes):
        if len(self.slides) >= MAX_SLIDES:
            raise ValueError("a deck holds at most %d slides" % MAX_SLIDES)
        if notes is not None:
            slide["notes"] = _text(notes, "notes")
        self.slides.append(slide)
        return self

    def _title(self, slide, title):
        if title is not None:
            slide["title"] = _text(title, "title")
        return slide

    def title_slide(self, title, subtitle=None, notes=None):
        """Add a title slide."""
        s = {"layout": "title", "title": _text(title, "title")}
        if subtitle is not None:
            s["subtitle"] = _text(subtitle, "subtitle")
        return self._add(s, notes)

    def section(self, title, subtitle=None, notes=None):
        """Add a section header slide."""
        s = {"layout": "section", "title": _text(title, "title")}
        if subtitle is not None:
            s["subtitle"] = _text(subtitle, "subtitle")
        return self._add(s, notes)

    def slide(self, title=None, bullets=None, notes=None, left=None, right=None, ordered=False):
        """Add a content slide: a title and bullets (strings; nest with (text, [sub-items])
        or a list after its parent item; ordered=True numbers them). With left= and
        right= instead, a two-column slide. Overflowing bullets continue on a next slide."""
        if left is not None or right is not None:
            if bullets is not None:
                raise ValueError("bullets: give either bullets or left/right columns, not both")
            s = self._title({"layout": "two_column"}, title)
            if left is not None:
                s["left"] = _list_items(left, "left")
            if right is not None:
                s["right"] = _list_items(right, "right")
            return self._add(s, notes)
        s = self._title({"layout": "content"}, title)
        if bullets is not None:
            items = _list_items(bullets, "bullets")
            s["bullets"] = {"ordered": True, "items": items} if ordered else items
        return self._add(s, notes)

    def table(self, title, data, notes=None, formats=None, index=None, columns=None, name=None):
        """Add a table slide from a DataFrame (as Document.table()); rows that do not fit
        continue on the next slides with the header repeated."""
        t = _Table(data, "data", index=index, formats=formats, columns=columns, tz=self._tz)
        tbl = {"columns": t.spec_columns(), "rows": t.spec_rows()}
        if t.no_header:
            tbl["header"] = False
        if name is not None:
            tbl["name"] = _check_sheet_name(name)
        s = self._title({"layout": "table", "table": tbl}, title)
        return self._add(s, notes)

    def chart(self, title, data, kind="column", notes=None, x=None, y=None, chart_title=None,
              stacked=False, legend=None, x_title=None, y_title=None, colors=None):
        """Add a native chart slide (data as in Document.chart()); the slide title is
        `title`, the chart's own title `chart_title` (default none)."""
        c = _chart_spec(data, kind=kind, title=chart_title, x=x, y=y, stacked=stacked,
                        legend=legend, x_title=x_title, y_title=y_title, colors=colors,
                        tz=self._tz)
        s = self._title({"layout": "chart", "chart": c}, title)
        return self._add(s, notes)

    def image(self, title, image, notes=None, alt=None, dpi=150):
        """Add a picture slide: a matplotlib Figure/Axes, a PNG/JPEG path or bytes; the
        picture fills the content area keeping its proportions."""
        s = self._title({"layout": "image", "image": _image_spec(image, alt=alt, dpi=dpi)}, title)
        return self._add(s, notes)

    def blank(self, notes=None):
        """Add a blank slide."""
        return self._add({"layout": "blank"}, notes)
