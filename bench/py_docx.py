#!/usr/bin/python3
"""python-docx baseline for the .docx benchmark (bench/README.md).

    /usr/bin/python3 bench/py_docx.py SPEC.json OUT.docx

Writes the workload of bench/docx_workload.py from the same Kiln spec, the way a
python-docx user would: the default template's Heading 1 and List Bullet styles,
runs with bold/italic, a Table Grid table whose header row is bold, shaded and
repeated on each page with rows that do not split (the same table Kiln writes),
and pictures at the spec's width. Debian's python3-docx; run with /usr/bin/python3.
"""
import json
import os
import sys

from docx import Document
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Pt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docx_workload import cell_text  # noqa: E402

HEADER_FILL = "1F4E79"


def row_flags(row, header):
    tr_pr = row._tr.get_or_add_trPr()
    tr_pr.append(OxmlElement("w:cantSplit"))
    if header:
        tr_pr.append(OxmlElement("w:tblHeader"))


def shade(cell):
    shd = OxmlElement("w:shd")
    shd.set(qn("w:val"), "clear")
    shd.set(qn("w:color"), "auto")
    shd.set(qn("w:fill"), HEADER_FILL)
    cell._tc.get_or_add_tcPr().append(shd)


def add_table(doc, block):
    cols = block["columns"]
    kinds = [c["type"] for c in cols]
    table = doc.add_table(rows=1 + len(block["rows"]), cols=len(cols))
    table.style = "Table Grid"
    rows = table.rows
    row_flags(rows[0], True)
    for cell, col in zip(rows[0].cells, cols):
        shade(cell)
        run = cell.paragraphs[0].add_run(col["header"])
        run.bold = True
    for row, values in zip(rows[1:], block["rows"]):
        row_flags(row, False)
        for cell, value, kind in zip(row.cells, values, kinds):
            cell.text = cell_text(value, kind)


def main(spec_path, out_path):
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    base = os.path.dirname(os.path.abspath(spec_path))
    doc = Document()
    props = doc.core_properties
    props.title = spec["metadata"]["title"]
    props.author = spec["metadata"]["author"]
    for b in spec["blocks"]:
        t = b["type"]
        if t == "heading":
            doc.add_heading(b["text"], level=b["level"])
        elif t == "paragraph":
            p = doc.add_paragraph()
            for r in b["runs"]:
                run = p.add_run(r["text"])
                if r.get("bold"):
                    run.bold = True
                if r.get("italic"):
                    run.italic = True
        elif t == "list":
            for item in b["items"]:
                doc.add_paragraph(item, style="List Bullet")
        elif t == "table":
            add_table(doc, b)
        elif t == "image":
            doc.add_picture(os.path.join(base, b["image"]["path"]), width=Pt(b["width"]))
        else:
            raise SystemExit("py_docx.py: block type %r is not in the workload" % t)
    doc.save(out_path)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
