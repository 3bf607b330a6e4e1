"""Checks of the documents the sample jobs (samples/jobs/*.py) produce, shared by
test_kiln_py.py (jobs run directly, specs rendered with `kiln render`) and
test_run_samples.py (jobs run through `kiln run`, which renders their saved specs).

What each document must hold is computed here with pandas from the job's input CSV,
independently of the job's own code, and compared with what independent readers
(openpyxl, python-docx, pdftotext, the unzipped pptx XML) read back.
"""
import re
import zipfile
from pathlib import Path

import pandas as pd
from lxml import etree

from conftest import REPO, pdf_text, pdf_tool

JOBS = REPO / "samples" / "jobs"
DATA = JOBS / "data"
SALES_CSV = DATA / "sales.csv"
EXPERIMENT_CSV = DATA / "experiment.csv"

C_NS = {"c": "http://schemas.openxmlformats.org/drawingml/2006/chart",
        "a": "http://schemas.openxmlformats.org/drawingml/2006/main"}

# job script -> (input CSVs, documents it writes)
JOB_OUTPUTS = {
    "csv_to_spreadsheet.py": ([SALES_CSV], ["sales_analysis.xlsx"]),
    "report.py": ([SALES_CSV], ["sales_report.docx", "sales_report.pdf"]),
    "deck.py": ([EXPERIMENT_CSV], ["experiment_results.pptx"]),
}


def money(v):
    return "${:,.2f}".format(v)


def close(a, b, tol=0.006):
    return a is not None and b is not None and abs(float(a) - float(b)) <= tol


# --------------------------------------------------------------------------- OOXML helpers

def zip_names(path):
    with zipfile.ZipFile(path) as z:
        return z.namelist()


def zip_read(path, name):
    with zipfile.ZipFile(path) as z:
        return z.read(name)


def chart_series(xml):
    """[(name, [categories], [values])] cached in a chart part (c:ser of any chart kind)."""
    root = etree.fromstring(xml)
    out = []
    for ser in root.iter("{%s}ser" % C_NS["c"]):
        name = "".join(ser.xpath("c:tx//c:v/text()", namespaces=C_NS))
        cats = [p.xpath("string(c:v)", namespaces=C_NS)
                for p in ser.xpath("c:cat//c:pt", namespaces=C_NS)]
        vals = [float(p.xpath("string(c:v)", namespaces=C_NS))
                for p in ser.xpath("c:val//c:pt", namespaces=C_NS)]
        out.append((name, cats, vals))
    return out


def chart_formulas(xml):
    root = etree.fromstring(xml)
    return [f.text for f in root.iter("{%s}f" % C_NS["c"])]


def xml_texts(xml):
    """Every a:t / w:t text of a part, in order."""
    return re.findall(r"<(?:a|w):t(?: [^>]*)?>([^<]*)</(?:a|w):t>", xml.decode("utf-8"))


# --------------------------------------------------------------------------- expectations

def sales_expected():
    df = pd.read_csv(SALES_CSV, parse_dates=["date"])
    df["month"] = df["date"].dt.strftime("%Y-%m")
    total = df["revenue"].sum()
    reg = df.groupby("region").agg(orders=("revenue", "size"), units=("units", "sum"),
                                   revenue=("revenue", "sum")).sort_values("revenue", ascending=False)
    monthly = df.pivot_table(index="month", columns="region", values="revenue", aggfunc="sum")
    prod = df.pivot_table(index="product", columns="channel", values="revenue", aggfunc="sum")
    return df, total, reg, monthly, prod


def experiment_expected():
    df = pd.read_csv(EXPERIMENT_CSV, parse_dates=["date"])
    res = df.groupby("variant")[["visitors", "signups", "revenue"]].sum()
    res["conversion"] = res["signups"] / res["visitors"]
    res["rpv"] = res["revenue"] / res["visitors"]
    daily = df.assign(day=df["date"].dt.strftime("%m-%d")).pivot_table(
        index="day", columns="variant", values=["signups", "visitors"], aggfunc="sum")
    rate = daily["signups"] / daily["visitors"] * 100
    return df, res, rate


# --------------------------------------------------------------------------- checks

def check_spreadsheet(xlsx):
    """sales_analysis.xlsx: Summary, Monthly and Data sheets hold what pandas computes;
    two native charts over the sheets' cells."""
    import openpyxl
    df, total, reg, monthly, _ = sales_expected()
    wb = openpyxl.load_workbook(xlsx, data_only=True)
    assert wb.sheetnames == ["Summary", "Monthly", "Data"], wb.sheetnames

    ws = wb["Summary"]
    rows = list(ws.iter_rows(values_only=True))
    assert list(rows[0]) == ["region", "orders", "units", "revenue", "share", "avg_order"], rows[0]
    assert len(rows) == 1 + len(reg)
    for got, (region, exp) in zip(rows[1:], reg.iterrows()):
        assert got[0] == region
        assert got[1] == exp["orders"] and got[2] == exp["units"], (got, exp)
        assert close(got[3], exp["revenue"]), (got, exp)
        assert close(got[4], exp["revenue"] / total, 0.00006), (got, exp["revenue"] / total)
        assert close(got[5], exp["revenue"] / exp["orders"]), got
    assert "$" in ws["D2"].number_format and ws["E2"].number_format == "0.0%"
    assert ws.freeze_panes == "B2", ws.freeze_panes
    assert ws.auto_filter.ref, "no autofilter on Summary"

    ws = wb["Monthly"]
    rows = list(ws.iter_rows(values_only=True))
    assert list(rows[0]) == ["month"] + list(monthly.columns), rows[0]
    assert [r[0] for r in rows[1:]] == list(monthly.index)
    for got, (month, exp) in zip(rows[1:], monthly.iterrows()):
        for g, e in zip(got[1:], exp):
            assert close(g, e), (month, got, list(exp))

    ws = wb["Data"]
    rows = list(ws.iter_rows(values_only=True))
    assert list(rows[0]) == ["date", "region", "product", "channel", "units", "unit_price",
                             "discount", "revenue"], rows[0]
    assert len(rows) == 1 + len(df)
    assert rows[1][0] == df["date"].iloc[0].to_pydatetime(), rows[1]
    assert close(sum(r[7] for r in rows[1:]), total, 0.05)
    assert sum(r[4] for r in rows[1:]) == df["units"].sum()

    charts = sorted(n for n in zip_names(xlsx) if re.fullmatch(r"xl/charts/chart\d+\.xml", n))
    assert len(charts) == 2, charts
    formulas = [f for n in charts for f in chart_formulas(zip_read(xlsx, n))]
    assert "Summary!$D$2:$D$5" in formulas, formulas
    for i, _ in enumerate(monthly.columns):
        col = "BCDE"[i]
        assert "Monthly!$%s$2:$%s$13" % (col, col) in formulas, formulas


def check_report_docx(docx_path):
    """sales_report.docx: title, findings with the computed total, the region table as
    pandas computes it (formatted), a picture and a native chart with the pivot's values."""
    import docx
    df, total, reg, _, prod = sales_expected()
    d = docx.Document(str(docx_path))
    text = "\n".join(p.text for p in d.paragraphs)
    assert "Sales report 2025" in text
    assert money(total) in text, text[:2000]
    top = reg.index[0]
    assert "%s led the regions with %s" % (top, money(reg["revenue"].iloc[0])) in text
    assert d.core_properties.title == "Sales report 2025"
    assert len(d.tables) == 2, len(d.tables)
    t = [[c.text for c in r.cells] for r in d.tables[0].rows]
    assert t[0] == ["region", "units", "revenue", "share"], t[0]
    exp = [[r, "{:,}".format(int(v["units"])), money(v["revenue"]), "{:.1%}".format(v["revenue"] / total)]
           for r, v in reg.iterrows()]
    assert t[1:] == exp, (t[1:], exp)
    t = [[c.text for c in r.cells] for r in d.tables[1].rows]
    assert t[0] == ["product"] + list(prod.columns)
    assert t[1:] == [[p] + [money(v) for v in row] for p, row in prod.iterrows()]
    names = zip_names(docx_path)
    media = [n for n in names if n.startswith("word/media/") and n.endswith(".png")]
    assert len(media) == 1, names
    assert zip_read(docx_path, media[0])[:8] == b"\x89PNG\r\n\x1a\n"
    charts = [n for n in names if re.fullmatch(r"word/charts/chart\d+\.xml", n)]
    assert len(charts) == 1, names
    series = chart_series(zip_read(docx_path, charts[0]))
    assert [s[0] for s in series] == list(prod.columns)
    for (name, cats, vals), ch in zip(series, prod.columns):
        assert cats == list(prod.index)
        assert all(close(a, b) for a, b in zip(vals, prod[ch])), (name, vals, list(prod[ch]))


def check_report_pdf(pdf):
    """sales_report.pdf: the same text and table as the docx, one embedded picture."""
    df, total, reg, _, prod = sales_expected()
    text = pdf_text(pdf, layout=True)
    assert "Sales report 2025" in text
    flat = " ".join(text.split())
    assert money(total) in flat, flat[:2000]
    for r, v in reg.iterrows():
        line = [ln for ln in text.splitlines() if ln.strip().startswith(r + " ") and money(v["revenue"]) in ln]
        assert line, "no table row for %s with %s" % (r, money(v["revenue"]))
        assert "{:.1%}".format(v["revenue"] / total) in line[0]
    for p, row in prod.iterrows():
        for v in row:
            assert money(v) in flat, (p, money(v))
    import subprocess
    proc = subprocess.run([pdf_tool("pdfimages"), "-list", str(pdf)], capture_output=True, text=True)
    assert proc.returncode == 0
    assert len(proc.stdout.strip().splitlines()) - 2 >= 1, proc.stdout


def check_deck(pptx):
    """experiment_results.pptx: title slide, findings bullets, the results table as pandas
    computes it, a native line chart of the daily rates, a picture, speaker notes."""
    df, res, rate = experiment_expected()
    names = zip_names(pptx)
    slides = sorted((n for n in names if re.fullmatch(r"ppt/slides/slide\d+\.xml", n)),
                    key=lambda n: int(re.search(r"(\d+)", n.rsplit("/", 1)[1]).group(1)))
    assert len(slides) == 6, slides
    texts = [xml_texts(zip_read(pptx, n)) for n in slides]
    assert "Pricing page test: results" in texts[0]
    best = res["rpv"].idxmax()
    findings = " ".join(texts[1])
    assert "Key findings" in texts[1]
    assert "%s earns the most per visitor: $%.3f" % (best, res.loc[best, "rpv"]) in findings, findings
    for v, n in res["visitors"].items():
        assert "%s: %s visitors" % (v, format(int(n), ",")) in findings
    table_slide = [t for t in texts if "Results by variant" in t]
    assert table_slide, texts
    cells = table_slide[0]
    assert cells[1:8] == ["Variant", "Visitors", "Sign-ups", "Revenue", "Conversion", "Revenue/visitor",
                          "Uplift"], cells
    control = res.loc["Control", "rpv"]
    for v, row in res.iterrows():
        i = cells.index(v)
        assert cells[i + 1] == format(int(row["visitors"]), ",")
        assert cells[i + 2] == format(int(row["signups"]), ",")
        assert cells[i + 3] == money(round(row["revenue"], 2))
        assert cells[i + 4] == "{:.2%}".format(round(row["conversion"], 4))
        assert cells[i + 5] == "${:.3f}".format(round(row["rpv"], 3))
        uplift = round(round(row["rpv"], 3) / round(control, 3) - 1, 4)
        assert cells[i + 6] == ("0.0%" if uplift == 0 else "{:+.1%}".format(uplift)), cells[i + 6]
    charts = [n for n in names if re.fullmatch(r"ppt/charts/chart\d+\.xml", n)]
    assert len(charts) == 1, names
    xml = zip_read(pptx, charts[0])
    assert b"<c:lineChart>" in xml
    series = chart_series(xml)
    assert [s[0] for s in series] == list(rate.columns)
    for name, cats, vals in series:
        assert cats == list(rate.index)
        assert all(close(a, b, 0.006) for a, b in zip(vals, rate[name])), name
    media = [n for n in names if n.startswith("ppt/media/") and n.endswith(".png")]
    assert len(media) == 1, names
    notes = " ".join(" ".join(xml_texts(zip_read(pptx, n))) for n in names
                     if re.fullmatch(r"ppt/notesSlides/notesSlide\d+\.xml", n))
    assert "Lead with revenue per visitor" in notes
    assert "The lines settle after the second week." in notes


CHECKS = {".xlsx": check_spreadsheet, ".docx": check_report_docx, ".pdf": check_report_pdf,
          ".pptx": check_deck}


def check_document(path):
    CHECKS[Path(path).suffix](path)


# Text LibreOffice's PDF of each document must show (read with pdftotext).
LO_TEXT = {"sales_analysis.xlsx": ["region", "North"],
           "sales_report.docx": ["Sales report 2025", "Revenue by region"],
           "experiment_results.pptx": ["Pricing page test", "Key findings"]}
