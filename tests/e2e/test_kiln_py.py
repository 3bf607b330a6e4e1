"""Tests of the Python helper module `import kiln` (exec/python/kiln.py), outside the
sandbox: it is Kiln's own code, run here with this Python and KILN_JOB_DIR set to a
pytest directory.

Every spec the module saves must pass `kiln validate`; each is rendered with
`kiln render` and read back with independent readers (openpyxl, python-docx,
pdftotext, the unzipped pptx XML), values compared with what pandas computes. The
sample jobs (samples/jobs/*.py) are run directly too, their documents checked as in
test_run_samples.py (which runs them through `kiln run`).
"""
import datetime as dt
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, assert_ooxml_ok, describe, pdf_text, render_ok, run_kiln
import jobs_checks
from jobs_checks import chart_series, xml_texts, zip_names, zip_read

import numpy as np
import pandas as pd
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import openpyxl  # noqa: E402

KILN_PY = REPO / "exec" / "python" / "kiln.py"


@pytest.fixture
def kiln(tmp_path, monkeypatch):
    """The module, freshly imported, with KILN_JOB_DIR = a new job directory."""
    job = tmp_path / "job"
    job.mkdir()
    monkeypatch.setenv("KILN_JOB_DIR", str(job))
    spec = importlib.util.spec_from_file_location("kiln", KILN_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod._test_job = job
    return mod


def spec_of(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def validate(path):
    proc = run_kiln("validate", path)
    assert proc.returncode == 0, "kiln validate %s: %s" % (path, describe(proc))


def render(path, out):
    validate(path)
    return render_ok(path, out)


def sample_frame():
    return pd.DataFrame({
        "region": ["North", "South", "East", None],
        "units": [12, 7, 30, 1],
        "revenue": [1200.5, np.nan, 3050.25, 10.0],
        "day": pd.to_datetime(["2026-01-05", "2026-02-10", None, "2026-03-01"]),
        "stamp": pd.to_datetime(["2026-01-05 09:30", "2026-02-10 17:45:10", "2026-03-01", None]),
        "active": [True, False, True, False],
        "size": pd.Categorical(["S", "M", "S", "L"]),
        "count": pd.array([1, None, 3, 4], dtype="Int64"),
    })


# --------------------------------------------------------------------------- import cost

def test_import_does_not_load_pandas_numpy_matplotlib():
    code = ("import sys, kiln; heavy = [m for m in ('pandas', 'numpy', 'matplotlib') "
            "if m in sys.modules]; print(heavy)")
    env = dict(os.environ, PYTHONPATH=str(KILN_PY.parent))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


def test_public_functions_have_docstrings(kiln):
    missing = []
    for name in kiln.__all__:
        obj = getattr(kiln, name)
        if callable(obj) and not obj.__doc__:
            missing.append(name)
        if isinstance(obj, type):
            for attr, fn in vars(obj).items():
                if callable(fn) and not attr.startswith("_") and not fn.__doc__:
                    missing.append("%s.%s" % (name, attr))
    for base_attr in ("save", "to_spec"):
        if not getattr(kiln.Document, base_attr).__doc__:
            missing.append(base_attr)
    assert not missing, missing


# --------------------------------------------------------------------------- names and saving

@pytest.mark.parametrize("name", ["report.docx", "r.pdf", "deck.pptx", "sales 2025.xlsx",
                                  "Résumé.docx", "UPPER.PDF"])
def test_good_output_names(kiln, name):
    p = kiln.Document(title="x").save(name)
    assert p == kiln._test_job / ".kiln" / (name + ".spec.json")
    assert p.is_file()
    validate(p)


@pytest.mark.parametrize("name,exc", [
    ("", ValueError), ("report", ValueError), ("report.txt", ValueError), (".docx", ValueError),
    (".hidden.docx", ValueError), ("sub/report.docx", ValueError), ("../report.docx", ValueError),
    ("/tmp/report.docx", ValueError), ("a\\b.docx", ValueError), ("x\x01.docx", ValueError),
    ("report.docx.zip", ValueError), (None, TypeError), (42, TypeError),
])
def test_bad_output_names(kiln, name, exc):
    doc = kiln.Document(title="x")
    with pytest.raises(exc, match="out"):
        doc.save(name)
    assert not any((kiln._test_job / ".kiln").glob("*.spec.json")) if (kiln._test_job / ".kiln").exists() else True


def test_save_to_a_path_in_the_job_dir(kiln, monkeypatch):
    """A path naming a file directly in the job directory is that file's name (issue 15
    item 13: assistants write save("/mnt/data/report.docx")); anything else is refused."""
    job = kiln._test_job
    doc = kiln.Document(title="x")
    for out, name in [(str(job / "report.docx"), "report.docx"), (job / "deck.pptx", "deck.pptx"),
                      (str(job) + "//./r.pdf", "r.pdf"), (str(job / "a" / ".." / "b.xlsx"), "b.xlsx")]:
        p = doc.save(out)
        assert p == job / ".kiln" / (name + ".spec.json"), (out, p)
        validate(p)
    assert kiln.spec_path(str(job / "report.docx")) == job / ".kiln" / "report.docx.spec.json"
    monkeypatch.chdir(job)
    assert doc.save("./here.docx") == job / ".kiln" / "here.docx.spec.json"
    for out, msg in [(str(job / "sub" / "r.docx"), "subdirectory of the job directory"),
                     (str(job / ".." / "r.docx"), "not in the job directory"),
                     ("/tmp/report.docx", "not in the job directory"),
                     (str(job) + "/", "names a directory"),
                     (str(job / ".hidden.docx"), "not a simple file name"),
                     (str(job / "report.txt"), "must end in one of"),
                     ("../report.docx", "not in the job directory"),
                     (str(job), "is the job directory itself"),
                     ("a\nb.docx", "control characters"),
                     ("tab\tname.xlsx", "control characters"),
                     ("del\x7f.pdf", "control characters")]:
        with pytest.raises(ValueError, match=msg):
            doc.save(out)
    assert sorted(p.name for p in (job / ".kiln").glob("*.spec.json")) == [
        "b.xlsx.spec.json", "deck.pptx.spec.json", "here.docx.spec.json", "r.pdf.spec.json",
        "report.docx.spec.json"]
    monkeypatch.delenv("KILN_JOB_DIR")
    assert kiln.spec_path("/mnt/data/report.docx") == Path("/mnt/data/.kiln/report.docx.spec.json")
    with pytest.raises(ValueError, match="not in the job directory /mnt/data"):
        kiln.spec_path("/tmp/report.docx")


def test_empty_builders_refuse_to_save(kiln):
    with pytest.raises(ValueError, match="empty"):
        kiln.Document().save("x.docx")
    with pytest.raises(ValueError, match="empty"):
        kiln.Workbook().save("x.xlsx")
    with pytest.raises(ValueError, match="empty"):
        kiln.Deck().save("x.pptx")


def test_default_job_dir_is_mnt_data(kiln, monkeypatch):
    monkeypatch.delenv("KILN_JOB_DIR")
    assert kiln.job_dir() == Path("/mnt/data")
    assert kiln.spec_path("a.pdf") == Path("/mnt/data/.kiln/a.pdf.spec.json")


def test_resave_in_every_format_renders(kiln, tmp_path):
    df = pd.DataFrame({"region": ["North", "South"], "revenue": [455.5, 310.25]})
    doc = kiln.Document(title="Weekly", author="Dana", subtitle="note")
    doc.heading("Numbers")
    doc.paragraph("Revenue is up.")
    doc.table(df, caption="By region")
    doc.chart(df, kind="column", title="Revenue")
    paths = [doc.save("weekly." + f) for f in kiln.FORMATS]
    specs = [spec_of(p) for p in paths]
    assert all(s == specs[0] for s in specs)
    assert specs[0]["metadata"] == {"title": "Weekly", "author": "Dana", "subject": "note"}
    out = tmp_path / "out"
    out.mkdir()
    for p, f in zip(paths, kiln.FORMATS):
        render(p, out / ("weekly." + f))
    # a second save of a grown document replaces the first spec
    doc.paragraph("Later.")
    p = doc.save("weekly.docx")
    assert spec_of(p)["blocks"][-1] == {"type": "paragraph", "text": "Later."}
    assert not [n for n in os.listdir(p.parent) if n.startswith(".tmp-")]


def test_save_spec_raw(kiln, tmp_path):
    spec = {"slides": [{"layout": "title", "title": "Raw"}]}
    p = kiln.save_spec(spec, "raw.pptx")
    assert spec_of(p) == spec
    render(p, tmp_path / "raw.pptx")
    with pytest.raises(TypeError, match="spec"):
        kiln.save_spec([spec], "raw.pptx")
    with pytest.raises(ValueError, match="nothing to render"):
        kiln.save_spec({"metadata": {"title": "x"}}, "raw.pptx")
    with pytest.raises(ValueError, match="/blocks/0/text"):
        kiln.save_spec({"blocks": [{"type": "paragraph", "text": "bell\x07"}]}, "x.docx")
    with pytest.raises(ValueError, match="/sheets/0/rows/0/0"):
        kiln.save_spec({"sheets": [{"rows": [[float("nan")]]}]}, "x.xlsx")
    with pytest.raises(ValueError, match="64 bits"):
        kiln.save_spec({"sheets": [{"rows": [[2 ** 70]]}]}, "x.xlsx")
    with pytest.raises(ValueError, match="out"):
        kiln.save_spec(spec, "raw.odp")


# --------------------------------------------------------------------------- dtype mapping

def test_dataframe_dtypes_map_to_cells(kiln, tmp_path):
    df = sample_frame()
    wb = kiln.Workbook()
    wb.sheet(df, name="Data")
    p = wb.save("types.xlsx")
    sheet = spec_of(p)["sheets"][0]
    cols = {c["header"]: c for c in sheet["columns"]}
    assert list(cols) == list(df.columns)       # RangeIndex left out
    assert cols["units"]["type"] == "integer"
    assert cols["revenue"]["type"] == "number"
    assert cols["day"]["type"] == "date"
    assert cols["stamp"]["type"] == "datetime"
    assert cols["active"]["type"] == "boolean"
    assert cols["count"]["type"] == "integer"
    rows = sheet["rows"]
    assert rows[0] == ["North", 12, 1200.5, {"date": "2026-01-05"}, {"datetime": "2026-01-05T09:30:00"},
                       True, "S", 1]
    assert rows[1][2] is None and rows[1][7] is None          # NaN, pd.NA -> blank
    assert rows[2][3] is None                                  # NaT -> blank
    assert rows[3][0] is None and rows[3][4] is None          # None, NaT
    assert rows[1][4] == {"datetime": "2026-02-10T17:45:10"}
    assert all(isinstance(r[1], int) and not isinstance(r[1], bool) for r in rows)
    assert [r[5] for r in rows] == [True, False, True, False]
    assert [r[6] for r in rows] == ["S", "M", "S", "L"]        # categorical -> its values

    xlsx = render(p, tmp_path / "types.xlsx")
    ws = openpyxl.load_workbook(xlsx)["Data"]
    got = list(ws.iter_rows(values_only=True))
    assert list(got[0]) == list(df.columns)
    assert got[1][:3] == ("North", 12, 1200.5)
    assert got[1][3] == dt.datetime(2026, 1, 5) and got[1][4] == dt.datetime(2026, 1, 5, 9, 30)
    assert got[2][2] is None and got[2][7] is None
    assert got[3][3] is None and got[4][0] is None
    assert [r[5] for r in got[1:]] == [True, False, True, False]
    assert ws["B2"].number_format == "#,##0" and ws["D2"].number_format == "yyyy-mm-dd"


def test_timezones_fractions_and_big_ints(kiln):
    df = pd.DataFrame({
        "t": pd.to_datetime(["2026-03-01 10:00:00.250", "2026-03-02 11:00"]).tz_localize("Europe/Paris"),
        "big": [2 ** 62, 5],
        "obj": [dt.date(2026, 1, 2), "text"],
    })
    t = kiln._Table(df, "data", tz="drop")
    rows = t.spec_rows()
    # timezone="drop": the wall clock kept, the zone dropped
    assert rows[0][0] == {"datetime": "2026-03-01T10:00:00.250000"}
    assert rows[1][0] == {"datetime": "2026-03-02T11:00:00.000000"}   # one format a column
    assert rows[0][1] == 2 ** 62
    assert rows[0][2] == {"date": "2026-01-02"} and rows[1][2] == "text"
    assert kiln._cell(dt.datetime(2026, 1, 2, 3, 4), "x") == {"datetime": "2026-01-02T03:04:00"}
    assert kiln._cell(2 ** 70, "x") == float(2 ** 70)
    assert kiln._cell(float("inf"), "x") is None
    assert kiln._cell(np.float32(1.5), "x") == 1.5 and kiln._cell(np.int16(3), "x") == 3
    assert kiln._cell(np.bool_(True), "x") is True
    assert kiln._cell(pd.Period("2026-03", "M"), "x") == "2026-03"
    with pytest.raises(ValueError, match="before 1900"):
        kiln._Table(pd.DataFrame({"d": pd.to_datetime(["1899-12-31"])}), "data")
    with pytest.raises(TypeError, match="bytes"):
        kiln._cell(b"x", "where")
    with pytest.raises(ValueError, match="32767"):
        kiln.Document().table(pd.DataFrame({"t": ["x" * 40000]}))


def _aware_frame():
    return pd.DataFrame({
        "when": pd.to_datetime(["2026-03-01 10:00", "2026-07-01 10:00"]).tz_localize("Europe/Paris"),
        "n": [1, 2],
    })


def test_timezone_aware_datetimes_are_never_silent(kiln):
    """Issue 15 item 14: as XlsxWriter, a timezone-aware datetime is refused with an error
    naming the column (or argument) unless the builder says what to do with the zone."""
    paris = dt.timezone(dt.timedelta(hours=1))
    aware = dt.datetime(2026, 3, 1, 10, 0, tzinfo=paris)
    stamp = pd.Timestamp("2026-03-01 10:00", tz="Europe/Paris")
    cases = [
        (lambda b: b.table(_aware_frame()), "data column 'when'"),                     # a tz column
        (lambda b: b.table(_aware_frame().set_index("when")), "data column 'when'"),   # kept index
        (lambda b: b.table({"t": [aware]}), "data column 't' row 0"),                  # datetime
        (lambda b: b.table([[stamp]], columns=["s"]), "data row 0 column 0"),          # Timestamp
        (lambda b: b.table(pd.DataFrame({"o": pd.Series([stamp, "x"], dtype=object)})),
         "data column 'o' row 0"),                                                      # object column
        (lambda b: b.table(pd.DataFrame([[1]], columns=[stamp])), "data columns"),     # a header
        (lambda b: b.chart(pd.Series([1, 2], index=pd.date_range("2026-01-01", periods=2, tz="UTC"))),
         "chart category 0"),                                                           # categories
        (lambda b: b.chart({"x": [aware, aware], "v": [1, 2]}, x="x"), "chart category 0"),
    ]
    for add, where in cases:
        with pytest.raises(TypeError, match="^%s: .*time zone.*timezone='drop'.*timezone='UTC'"
                           % re.escape(where)):
            add(kiln.Document())
    wb = kiln.Workbook()
    with pytest.raises(TypeError, match="data column 'when'"):
        wb.sheet(_aware_frame())
    with pytest.raises(TypeError, match="data column 'when'"):
        kiln.Deck().table("T", _aware_frame())
    with pytest.raises(TypeError, match="chart category 0"):
        kiln.Deck().chart("C", {"x": [aware], "v": [1]}, x="x")
    with pytest.raises(TypeError, match=r"^data category 0: .*has a time zone"):
        kiln.Workbook().sheet(pd.DataFrame({"v": [1]})).chart(
            data={"x": [aware], "v": [1]}, x="x", kind="line")
    # naive datetimes are wall-clock times as they are
    assert kiln._cell(dt.datetime(2026, 1, 2, 3, 4), "x") == {"datetime": "2026-01-02T03:04:00"}
    with pytest.raises(TypeError, match="^x: 2026-03-01T10:00:00\\+01:00 has a time zone"):
        kiln._cell(aware, "x")
    with pytest.raises(ValueError, match="^timezone: .*not 'Mars/Olympus'"):
        kiln.Workbook(timezone="Mars/Olympus")
    with pytest.raises(ValueError, match="^timezone: "):
        kiln.Document(timezone=3)


@pytest.mark.parametrize("timezone, want", [
    ("drop", [dt.datetime(2026, 3, 1, 10, 0), dt.datetime(2026, 7, 1, 10, 0)]),    # wall clock kept
    ("UTC", [dt.datetime(2026, 3, 1, 9, 0), dt.datetime(2026, 7, 1, 8, 0)]),       # CET, CEST
    ("America/New_York", [dt.datetime(2026, 3, 1, 4, 0), dt.datetime(2026, 7, 1, 4, 0)]),
    (dt.timezone.utc, [dt.datetime(2026, 3, 1, 9, 0), dt.datetime(2026, 7, 1, 8, 0)]),
])
def test_timezone_option_drops_or_converts(kiln, tmp_path, timezone, want):
    """timezone="drop" keeps the wall-clock time (XlsxWriter's remove_timezone); a zone
    converts first. Every place a datetime goes in follows it; read back with openpyxl."""
    df = _aware_frame()
    wb = kiln.Workbook(timezone=timezone)
    wb.sheet(df, name="Frame")
    wb.sheet({"t": [ts.to_pydatetime() for ts in df["when"]]}, name="Dict")
    wb.sheet([[ts] for ts in df["when"]], columns=["t"], name="Rows")
    wb.sheet(df.set_index("when"), name="Index")
    wb.sheet(pd.DataFrame({"o": pd.Series(list(df["when"]), dtype=object)}), name="Object")
    p = wb.save("tz.xlsx")
    xlsx = render(p, tmp_path / "tz.xlsx")
    book = openpyxl.load_workbook(xlsx)
    for sheet in ("Frame", "Dict", "Rows", "Index", "Object"):
        got = [r[0] for r in book[sheet].iter_rows(min_row=2, values_only=True)]
        assert got == want, (sheet, got)
    doc = kiln.Document(timezone=timezone)
    doc.chart(pd.Series([1, 2], index=df["when"]), kind="line")
    labels = [w.strftime("%Y-%m-%d %H:%M:%S") for w in want]
    assert doc.blocks[-1]["categories"] == labels
    doc.table(pd.DataFrame([[1, 2]], columns=list(df["when"])))
    assert [c["header"] for c in doc.blocks[-1]["columns"]] == labels
    validate(doc.save("tz.docx"))


def test_index_kept_only_when_meaningful(kiln):
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    assert kiln._Table(df, "d").headers == ["a", "b"]                      # RangeIndex
    assert kiln._Table(df[df.a > 1], "d").headers == ["a", "b"]            # filtered ints
    assert kiln._Table(df.set_index("b"), "d").headers == ["b", "a"]       # named
    s = df.set_index("b")
    s.index.name = None
    assert kiln._Table(s, "d").headers == ["index", "a"]                   # string labels
    assert kiln._Table(df, "d", index=True).headers == ["index", "a", "b"]
    assert kiln._Table(df.set_index("b"), "d", index=False).headers == ["a"]
    g = pd.DataFrame({"r": ["N", "N", "S"], "p": ["x", "y", "x"], "v": [1, 2, 3]}).set_index(["r", "p"])
    t = kiln._Table(g, "d")
    assert t.headers == ["r", "p", "v"] and t.index_columns == 2
    assert t.spec_rows() == [["N", "x", 1], ["N", "y", 2], ["S", "x", 3]]


def test_multiindex_columns_are_flattened(kiln, tmp_path):
    df = pd.DataFrame({"region": ["N", "N", "S"], "q": ["Q1", "Q2", "Q1"], "rev": [1.0, 2.0, 3.0],
                       "units": [1, 2, 3]})
    pv = df.pivot_table(index="region", columns="q", values=["rev", "units"], aggfunc="sum")
    doc = kiln.Document()
    doc.table(pv)
    p = doc.save("pivot.docx")
    cols = [c["header"] for c in spec_of(p)["blocks"][0]["columns"]]
    assert cols == ["region", "rev / Q1", "rev / Q2", "units / Q1", "units / Q2"]
    assert spec_of(p)["blocks"][0]["rows"][1] == ["S", 3.0, None, 3.0, None]
    import docx
    d = docx.Document(str(render(p, tmp_path / "pivot.docx")))
    assert [c.text for c in d.tables[0].rows[0].cells] == cols


def test_formats_given_and_guessed(kiln, tmp_path):
    df = pd.DataFrame({"year": [2024, 2025], "customer_id": [17, 18], "share": [0.25, 0.75],
                       "price": [3.5, 4.25], "amount": [1200.0, 300.0], "small": [0.1234, 0.5]})
    t = kiln._Table(df, "d")
    fm = dict(zip(t.headers, t.formats))
    assert fm["year"] == ("number", "0") and fm["customer_id"] == ("number", "0")
    assert fm["share"] == ("percent", None)
    assert fm["price"] == ("number", None) and fm["amount"] == ("number", "#,##0")
    assert fm["small"] == ("number", "0.000")
    t = kiln._Table(df, "d", formats={"price": "currency", "amount": "$#,##0"})
    fm = dict(zip(t.headers, t.formats))
    assert fm["price"] == ("currency", None) and fm["amount"] == ("number", "$#,##0")
    with pytest.raises(ValueError, match="formats: 'nope' is not a column"):
        kiln._Table(df, "d", formats={"nope": "currency"})
    wb = kiln.Workbook()
    wb.sheet(df, formats={"price": "currency"})
    ws = openpyxl.load_workbook(render(wb.save("f.xlsx"), tmp_path / "f.xlsx")).active
    assert ws["A2"].number_format == "0" and ws["C2"].number_format == "0.0%"
    assert ws["D2"].number_format == "$#,##0.00"


def test_rows_and_dicts_as_tables(kiln):
    t = kiln._Table([["a", 1], ["b", None]], "d", columns=["k", "v"])
    assert t.spec_rows() == [["a", 1], ["b", None]] and t.headers == ["k", "v"]
    t = kiln._Table([{"k": "a", "v": 1}, {"k": "b"}], "d")
    assert t.spec_rows() == [["a", 1], ["b", None]]
    t = kiln._Table({"k": ["a", "b"], "v": [1.5, 2]}, "d")
    assert t.types == ["string", "number"]
    with pytest.raises(ValueError, match="different lengths"):
        kiln._Table({"k": ["a", "b"], "v": [1]}, "d")
    with pytest.raises(ValueError, match="row 0: 3 values for 2 columns"):
        kiln._Table([[1, 2, 3]], "d", columns=["a", "b"])
    with pytest.raises(TypeError, match="DataFrame"):
        kiln.Document().table(42)


# --------------------------------------------------------------------------- charts

def test_dict_of_series_becomes_chart(kiln, tmp_path):
    data = {"month": ["Jan", "Feb", "Mar"], "North": [10, 12.5, 14], "South": np.array([7, 8, 9])}
    doc = kiln.Document()
    doc.chart(data, kind="line", x="month", title="Trend", y_title="EUR k")
    p = doc.save("c.docx")
    block = spec_of(p)["blocks"][0]
    assert block == {"type": "chart", "kind": "line", "title": "Trend", "categories": ["Jan", "Feb", "Mar"],
                     "series": [{"name": "North", "values": [10, 12.5, 14]},
                                {"name": "South", "values": [7, 8, 9]}],
                     "y_axis": {"title": "EUR k"}}
    docx_path = render(p, tmp_path / "c.docx")
    charts = [n for n in zip_names(docx_path) if re.fullmatch(r"word/charts/chart\d+\.xml", n)]
    series = chart_series(zip_read(docx_path, charts[0]))
    assert series == [("North", ["Jan", "Feb", "Mar"], [10, 12.5, 14]),
                      ("South", ["Jan", "Feb", "Mar"], [7, 8, 9])]


def test_dataframe_and_series_charts(kiln):
    df = pd.DataFrame({"region": ["N", "S"], "q1": [1.0, 2.0], "q2": [3, 4], "flag": [True, False]})
    c = kiln._chart_spec(df, kind="column")
    assert c["categories"] == ["N", "S"] and [s["name"] for s in c["series"]] == ["q1", "q2"]
    c = kiln._chart_spec(df.set_index("region")[["q2"]], kind="pie")
    assert c["categories"] == ["N", "S"] and c["series"] == [{"name": "q2", "values": [3, 4]}]
    s = pd.Series([5, 6], index=pd.to_datetime(["2026-01-01", "2026-02-01"]), name="orders")
    c = kiln._chart_spec(s, kind="area")
    assert c["categories"] == ["2026-01-01", "2026-02-01"] and c["series"][0]["name"] == "orders"
    c = kiln._chart_spec({"a": pd.Series([1, 2], index=["x", "y"])}, kind="bar")
    assert c["categories"] == ["x", "y"]
    c = kiln._chart_spec(pd.DataFrame({"year": [2024, 2025], "sales": [1, 2]}), kind="line")
    assert c["categories"] == [2024, 2025] and [s["name"] for s in c["series"]] == ["sales"]
    c = kiln._chart_spec({"x": [1, 2.5], "y": [3, 4]}, kind="scatter", x="x")
    assert c["categories"] == [1, 2.5]
    assert kiln._chart_spec({"a": [1]}, kind="barh")["kind"] == "bar"


@pytest.mark.parametrize("kwargs,exc,msg", [
    (dict(data={"a": [1, float("nan")]}), ValueError, "missing value"),
    (dict(data={"a": [1, None]}), ValueError, "missing value"),
    (dict(data={"a": [1, "x"]}), TypeError, "not a number"),
    (dict(data={"a": [1, 2], "b": [1]}), ValueError, "one value per category"),
    (dict(data={"a": [1], "b": [2]}, kind="pie"), ValueError, "exactly one series"),
    (dict(data={"a": [1]}, kind="radar"), ValueError, "kind"),
    (dict(data={"a": [1]}, kind="line", stacked=True), ValueError, "stacked"),
    (dict(data={"a": [1]}, legend="middle"), ValueError, "legend"),
    (dict(data={"a": [1]}, x="nope"), ValueError, "x: 'nope'"),
    (dict(data={"a": [1]}, kind="scatter"), ValueError, "scatter"),
    (dict(data={"a": [1]}, kind="pie", x_title="t"), ValueError, "axes"),
    (dict(data={"a": [1]}, width=5), ValueError, "width"),
    (dict(data={}), ValueError, "no series"),
    (dict(data=[1, 2]), TypeError, "data"),
    (dict(data={"s%d" % i: [1] for i in range(256)}), ValueError, "at most 255"),
])
def test_chart_errors(kiln, kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        kiln.Document().chart(**kwargs)


def test_255_series_is_fine(kiln):
    doc = kiln.Document()
    doc.chart({"s%d" % i: [i] for i in range(255)})
    validate(doc.save("many.docx"))


# --------------------------------------------------------------------------- images

def test_figure_becomes_png_in_kiln_dir(kiln, tmp_path):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2, 3], [3, 1, 2])
    ax.set_title("A line")
    doc = kiln.Document()
    doc.image(fig, caption="Figure", width="10cm")
    plt.close(fig)
    p = doc.save("fig.docx")
    block = spec_of(p)["blocks"][0]
    rel = block["image"]["path"]
    assert "/" not in rel and rel.endswith(".png")
    assert block["image"]["alt"] == "A line" and block["width"] == "10cm"
    png = p.parent / rel
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert 400 <= w <= 700 and 300 <= h <= 500, (w, h)     # 4x3 in at 150 dpi, tight bbox
    out = render(p, tmp_path / "fig.docx")
    media = [n for n in zip_names(out) if n.startswith("word/media/")]
    assert len(media) == 1 and zip_read(out, media[0])[:8] == data[:8]
    pdf = render(kiln.Document().image(fig).save("fig.pdf"), tmp_path / "fig.pdf")
    assert pdf.stat().st_size > 1000


def test_image_from_file_bytes_and_errors(kiln, tmp_path):
    logo = REPO / "samples" / "images" / "kiln_logo.png"
    jpg = REPO / "samples" / "images" / "regional_trend.jpg"
    shutil.copy(jpg, kiln._test_job / "trend.jpg")
    deck = kiln.Deck(title="Pictures")
    deck.image("Logo", str(logo), notes="logo")
    deck.image("Trend", "trend.jpg")                         # relative: the job directory
    deck.image("Bytes", logo.read_bytes())
    p = deck.save("pics.pptx")
    slides = spec_of(p)["slides"]
    assert slides[1]["image"]["path"] == slides[3]["image"]["path"]     # same content, one file
    assert slides[2]["image"]["path"].endswith(".jpg")
    out = render(p, tmp_path / "pics.pptx")
    assert len([n for n in zip_names(out) if n.startswith("ppt/media/")]) == 2
    with pytest.raises(ValueError, match="no such image"):
        kiln.Document().image("missing.png")
    with pytest.raises(ValueError, match="PNG or JPEG"):
        kiln.Document().image(b"GIF89a....")
    with pytest.raises(TypeError, match="image"):
        kiln.Document().image(42)
    with pytest.raises(ValueError, match="width"):
        kiln.Document().image(str(logo), width="10px")


# --------------------------------------------------------------------------- workbooks

@pytest.mark.parametrize("name", ["", "x" * 32, "a/b", "a:b", "q?", "[x]", "'quoted'", "History",
                                  "history", "tab\tname"])
def test_bad_sheet_names(kiln, name):
    with pytest.raises(ValueError, match="name"):
        kiln.Workbook().sheet(pd.DataFrame({"a": [1]}), name=name)


def test_sheet_names_unique_ignoring_case_and_defaults(kiln):
    wb = kiln.Workbook()
    assert wb.sheet(pd.DataFrame({"a": [1]})).name == "Sheet1"
    wb.sheet(pd.DataFrame({"a": [1]}), name="Données")
    with pytest.raises(ValueError, match="already a sheet"):
        wb.sheet(pd.DataFrame({"a": [1]}), name="DONNÉES")
    with pytest.raises(ValueError, match="already a sheet"):
        wb.sheet(pd.DataFrame({"a": [1]}), name="sheet1")
    assert wb.sheet(pd.DataFrame({"a": [1]})).name == "Sheet3"
    with pytest.raises(TypeError, match="name"):
        wb.sheet(pd.DataFrame({"a": [1]}), name=3)


def test_limits_fail_early(kiln, monkeypatch):
    monkeypatch.setattr(kiln, "MAX_ROWS", 10)
    with pytest.raises(ValueError, match="at most 9"):
        kiln.Workbook().sheet(pd.DataFrame({"a": range(10)}))
    kiln.Workbook().sheet(pd.DataFrame({"a": range(9)}))
    monkeypatch.setattr(kiln, "MAX_SHEETS", 2)
    wb = kiln.Workbook()
    wb.sheet(pd.DataFrame({"a": [1]}))
    wb.sheet(pd.DataFrame({"a": [1]}))
    with pytest.raises(ValueError, match="at most 2 sheets"):
        wb.sheet(pd.DataFrame({"a": [1]}))
    with pytest.raises(ValueError, match="nest at most 9"):
        deep = ["x"]
        for _ in range(9):
            deep = ["x", deep]
        kiln.Document().bullets(deep)


def test_workbook_round_trip(kiln, tmp_path):
    df = pd.DataFrame({"month": ["2026-01", "2026-02", "2026-03"], "North": [10.5, 12.0, np.nan],
                       "South": [7, 8, 9]})
    wb = kiln.Workbook(title="Book", author="Dana")
    sh = wb.sheet(df, name="Monthly sales", chart={"kind": "line", "title": "Trend"})
    sh.chart(kind="column", y="South", anchor="H20")
    wb.sheet(df.set_index("month"), name="Indexed", freeze=False, autofilter=False, table=True)
    p = wb.save("book.xlsx")
    s = spec_of(p)["sheets"]
    assert s[0]["freeze"] == {"rows": 1} and s[0]["autofilter"] is True
    ch = s[0]["charts"][0]
    assert ch["categories"] == "'Monthly sales'!$A$2:$A$4"
    assert [x["values"] for x in ch["series"]] == ["'Monthly sales'!$B$2:$B$4", "'Monthly sales'!$C$2:$C$4"]
    assert s[1]["table"] is True and "autofilter" not in s[1] and "freeze" not in s[1]
    xlsx = render(p, tmp_path / "book.xlsx")
    wbk = openpyxl.load_workbook(xlsx)
    ws = wbk["Monthly sales"]
    got = list(ws.iter_rows(values_only=True))
    assert got == [("month", "North", "South"), ("2026-01", 10.5, 7), ("2026-02", 12.0, 8),
                   ("2026-03", None, 9)]
    assert ws.freeze_panes == "A2" and ws.auto_filter.ref == "A1:C4"
    assert wbk.properties.title == "Book" and wbk.properties.creator == "Dana"
    charts = sorted(n for n in zip_names(xlsx) if re.fullmatch(r"xl/charts/chart\d+\.xml", n))
    assert len(charts) == 2
    assert b"<c:lineChart>" in zip_read(xlsx, charts[0]) or b"<c:lineChart>" in zip_read(xlsx, charts[1])
    assert_ooxml_ok(xlsx)
    # the same workbook as a report: each sheet a heading and a table
    import docx
    d = docx.Document(str(render(wb.save("book.docx"), tmp_path / "book.docx")))
    assert [c.text for c in d.tables[0].rows[3].cells] == ["2026-03", "", "9"]


def test_sheet_chart_errors(kiln):
    wb = kiln.Workbook()
    with pytest.raises(ValueError, match="y: 'nope'"):
        wb.sheet(pd.DataFrame({"a": ["x"], "b": [1]}), chart={"kind": "line", "y": "nope"})
    with pytest.raises(ValueError, match="no numeric column"):
        wb.sheet(pd.DataFrame({"a": ["x"]}), name="T", chart="line")
    with pytest.raises(ValueError, match="unknown option"):
        wb.sheet(pd.DataFrame({"a": ["x"], "b": [1]}), name="U", chart={"kind": "line", "colour": "red"})
    with pytest.raises(ValueError, match="no data rows"):
        wb.sheet(name="Empty").chart()


# --------------------------------------------------------------------------- decks and documents

def test_deck_round_trip(kiln, tmp_path):
    res = pd.DataFrame({"variant": ["A", "B"], "rate": [0.041, 0.047], "visitors": [1000, 1200]})
    deck = kiln.Deck(title="Results", subtitle="June", notes="opening")
    deck.slide("Findings", bullets=["B wins", ("Details", ["rate +0.6pt"]), "Ship it"], notes="say it")
    deck.slide("Compare", left=["A"], right=["B"])
    deck.table("Table", res, formats={"rate": "0.0%"})
    deck.chart("Chart", res, kind="bar", x="variant", y=["visitors"])
    deck.section("Next")
    deck.blank()
    p = deck.save("deck.pptx")
    layouts = [s.get("layout") for s in spec_of(p)["slides"]]
    assert layouts == ["title", "content", "two_column", "table", "chart", "section", "blank"]
    out = render(p, tmp_path / "deck.pptx")
    names = zip_names(out)
    texts = [xml_texts(zip_read(out, "ppt/slides/slide%d.xml" % i)) for i in range(1, 8)]
    assert texts[0][:2] == ["Results", "June"]
    assert texts[1][:5] == ["Findings", "B wins", "Details", "rate +0.6pt", "Ship it"]
    assert ["A", "4.1%", "1,000", "B", "4.7%", "1,200"] == [t for t in texts[3]
                                                           if t in ("A", "B", "4.1%", "4.7%", "1,000", "1,200")]
    chart = [n for n in names if re.fullmatch(r"ppt/charts/chart\d+\.xml", n)][0]
    assert chart_series(zip_read(out, chart)) == [("visitors", ["A", "B"], [1000, 1200])]
    notes = " ".join(" ".join(xml_texts(zip_read(out, n))) for n in names if "notesSlides/notesSlide" in n
                     and n.endswith(".xml"))
    assert "opening" in notes and "say it" in notes
    assert_ooxml_ok(out)
    with pytest.raises(ValueError, match="bullets"):
        deck.slide("x", bullets=["a"], left=["b"])
    with pytest.raises(TypeError, match="bullets"):
        deck.slide("x", bullets="not a list")


def test_document_round_trip(kiln, tmp_path):
    df = pd.DataFrame({"region": ["North", "South"], "revenue": [455000.0, 310000.5]})
    doc = kiln.Document(title="Report", author="Dana", page_size="Letter", header=True)
    doc.toc(levels=2)
    doc.heading("Intro", level=2)
    doc.paragraph("Plain text.")
    doc.paragraph("Some **bold** words.", markdown=True)
    doc.paragraph([{"text": "Up "}, {"text": "6%", "bold": True}], align="justify")
    doc.numbered(["one", "two"], start=3)
    doc.table(df, caption="Revenue", formats={"revenue": "currency"}, name="Revenue")
    doc.code("SELECT 1;", language="sql")
    doc.quote("Fine.", attribution="Dana")
    doc.rule()
    doc.page_break()
    doc.heading("End")
    p = doc.save("doc.docx")
    assert spec_of(p)["page"] == {"size": "Letter", "header": True}
    import docx
    d = docx.Document(str(render(p, tmp_path / "doc.docx")))
    assert [[c.text for c in r.cells] for r in d.tables[0].rows] == [
        ["region", "revenue"], ["North", "$455,000.00"], ["South", "$310,000.50"]]
    text = "\n".join(x.text for x in d.paragraphs)
    assert "Some bold words." in text and "Up 6%" in text
    pdf = render(doc.save("doc.pdf"), tmp_path / "doc.pdf")
    t = " ".join(pdf_text(pdf).split())
    assert "$455,000.00" in t and "Plain text." in t and "Some bold words." in t
    assert_ooxml_ok(tmp_path / "doc.docx")
    with pytest.raises(ValueError, match="level"):
        doc.heading("x", level=7)
    with pytest.raises(ValueError, match="align"):
        doc.paragraph("x", align="middle")
    with pytest.raises(TypeError, match="text"):
        doc.paragraph(None)
    with pytest.raises(ValueError, match="header"):
        kiln.Document(header=True)
    with pytest.raises(ValueError, match="page_size"):
        kiln.Document(page_size="B5")


# --------------------------------------------------------------------------- sample jobs, run directly

@pytest.mark.parametrize("job", sorted(jobs_checks.JOB_OUTPUTS))
def test_sample_job_directly(job, tmp_path):
    """Each sample job, run with this Python (PYTHONPATH=exec/python, KILN_JOB_DIR=a copy
    of its inputs): its specs validate, render, pass ooxml-check and hold pandas' numbers."""
    inputs, outputs = jobs_checks.JOB_OUTPUTS[job]
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    for f in inputs:
        shutil.copy(f, jobdir / f.name)
    env = dict(os.environ, KILN_JOB_DIR=str(jobdir), PYTHONPATH=str(KILN_PY.parent), MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(jobs_checks.JOBS / job)], cwd=str(jobdir),
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    specs = sorted(p.name for p in (jobdir / ".kiln").glob("*.spec.json"))
    assert specs == sorted(o + ".spec.json" for o in outputs)
    out = tmp_path / "out"
    out.mkdir()
    for o in outputs:
        doc = render(jobdir / ".kiln" / (o + ".spec.json"), out / o)
        jobs_checks.check_document(doc)
        if doc.suffix != ".pdf":
            assert_ooxml_ok(doc)


# --------------------------------------------------------------------------- odds and ends

def test_rich_text_and_list_items(kiln, tmp_path):
    doc = kiln.Document()
    doc.paragraph(["Revenue ", {"text": "grew", "bold": True, "color": "C00000"}, " 6%."])
    doc.bullets([{"text": "a", "items": ["a1", {"runs": [{"text": "a2", "italic": True}]}]}, "b"])
    p = doc.save("rich.docx")
    b = spec_of(p)["blocks"]
    assert b[0]["runs"][1] == {"text": "grew", "bold": True, "color": "#C00000"}
    import docx
    d = docx.Document(str(render(p, tmp_path / "rich.docx")))
    assert d.paragraphs[0].text == "Revenue grew 6%."
    with pytest.raises(ValueError, match="unknown run member 'blod'"):
        doc.paragraph([{"text": "x", "blod": True}])
    with pytest.raises(ValueError, match="list item dict"):
        doc.bullets([{"txt": "x"}])
    with pytest.raises(ValueError, match="empty"):
        doc.bullets([])


def test_rows_without_header_and_empty_frames(kiln, tmp_path):
    doc = kiln.Document()
    doc.table([["a", 1], ["b", 2]])
    doc.table(pd.DataFrame({"x": pd.Series([], dtype="float64"), "y": pd.Series([], dtype=object)}))
    p = doc.save("plain.docx")
    b = spec_of(p)["blocks"]
    assert b[0]["header"] is False and all("header" not in c for c in b[0]["columns"])
    assert b[1]["rows"] == [] and [c["header"] for c in b[1]["columns"]] == ["x", "y"]
    render(p, tmp_path / "plain.docx")
    render(doc.save("plain.xlsx"), tmp_path / "plain.xlsx")


def test_numeric_column_labels(kiln):
    pv = pd.DataFrame({"region": ["N", "S"], 2024: [1.0, 2.0], 2025: [3.0, 4.0]})
    wb = kiln.Workbook()
    sh = wb.sheet(pv, formats={2024: "currency"}, chart={"kind": "column", "y": [2025]})
    cols = spec_of(wb.save("labels.xlsx"))["sheets"][0]["columns"]
    assert [c["header"] for c in cols] == ["region", "2024", "2025"]
    assert cols[1]["type"] == "currency"
    assert sh.spec["charts"][0]["series"][0]["values"] == "'Sheet1'!$C$2:$C$3"
    c = kiln._chart_spec(pv, kind="line", y=[2024])
    assert c["series"][0]["name"] == "2024" and c["categories"] == ["N", "S"]


def test_raw_spec_with_numpy_values_and_axes_arrays(kiln, tmp_path):
    total = np.float64(12.5)
    p = kiln.save_spec({"sheets": [{"rows": [[np.int64(3), total, np.bool_(True)]]}]}, "np.xlsx")
    assert spec_of(p)["sheets"][0]["rows"] == [[3, 12.5, True]]
    render(p, tmp_path / "np.xlsx")
    fig, axes = plt.subplots(1, 2, figsize=(4, 2))
    axes[0].plot([1, 2])
    doc = kiln.Document()
    doc.image(axes)            # the array plt.subplots returns: its figure
    doc.image(axes[1])         # one Axes: its figure, the same picture
    plt.close(fig)
    b = spec_of(doc.save("axes.docx"))["blocks"]
    assert b[0]["image"]["path"] == b[1]["image"]["path"]


def test_series_chart_categories(kiln):
    c = kiln._chart_spec(pd.Series([1, 2, 3], name="n"), kind="line")
    assert "categories" not in c and c["series"] == [{"name": "n", "values": [1, 2, 3]}]
    g = pd.DataFrame({"r": ["N", "S", "N"], "v": [1, 2, 3]}).groupby("r")["v"].sum()
    c = kiln._chart_spec(g, kind="pie")
    assert c["categories"] == ["N", "S"] and c["series"][0]["values"] == [4, 2]
    mi = pd.DataFrame({"a": ["x", "y"], "b": [1, 2], "v": [5, 6]}).set_index(["a", "b"])
    assert kiln._chart_spec(mi, kind="column")["categories"] == ["x / 1", "y / 2"]


def test_cell_objects_pass_through_and_are_still_checked(kiln, tmp_path):
    rows = [["Total", {"formula": "=SUM(B2:B3)", "value": 5}],
            ["Link", {"url": "https://example.com", "text": "site"}]]
    doc = kiln.Document()
    doc.table(rows, columns=["k", "v"])
    p = doc.save("cells.xlsx")
    assert spec_of(p)["blocks"][0]["rows"] == rows
    ws = openpyxl.load_workbook(render(p, tmp_path / "cells.xlsx")).active
    assert ws["B2"].value == "=SUM(B2:B3)"
    doc = kiln.Document()
    doc.table([[{"value": "bad\x01"}]], columns=["k"])
    with pytest.raises(ValueError, match=r"/blocks/0/rows/0/0/value"):
        doc.save("bad.docx")


def test_sheet_chart_without_header_row(kiln, tmp_path):
    wb = kiln.Workbook()
    sh = wb.sheet([["a", 1], ["b", 2]], chart="column")
    ch = sh.spec["charts"][0]
    assert ch["categories"] == "'Sheet1'!$A$1:$A$2"
    assert ch["series"] == [{"name": "Series 1", "values": "'Sheet1'!$B$1:$B$2"}]
    xlsx = render(wb.save("nohead.xlsx"), tmp_path / "nohead.xlsx")
    assert list(openpyxl.load_workbook(xlsx).active.iter_rows(values_only=True)) == [("a", 1), ("b", 2)]
