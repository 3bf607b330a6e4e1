#!/usr/bin/python3
"""ReportLab baseline for the PDF benchmark (bench/README.md).

    /usr/bin/python3 bench/py_reportlab.py SPEC.json OUT.pdf

Writes the report of bench/docx_workload.py from the same Kiln spec, the way a
ReportLab user would with Platypus: DejaVu Sans in four styles registered as
TrueType fonts (embedded and subset, as Kiln embeds them), a SimpleDocTemplate
with the spec's page size and margins (A4, Kiln's default 72 pt margins), a
Paragraph per paragraph with <b>/<i> runs, ListFlowable bullets, a Table with
a grid and a shaded bold header row repeated on each page and the numbers
shown and aligned as Kiln shows them, and Image flowables at the spec's width.
The output is ReportLab's default otherwise (page compression on, and streams
ASCII85-encoded on top: rl_config.useA85). Debian's python3-reportlab; run with
/usr/bin/python3.
"""
import json
import os
import sys
from xml.sax.saxutils import escape

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.platypus import (Image, ListFlowable, ListItem, Paragraph, SimpleDocTemplate,
                                Table, TableStyle)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docx_workload import cell_text  # noqa: E402

FONT_DIR = "/usr/share/fonts/truetype/dejavu"
MARGIN = 72            # docs/spec.md "page": 72pt (1 inch) each side by default
BODY = 11              # docs/spec.md "theme": font_size 11
# Kiln's PDF typography (artifacts/pdf/pdf_layout.c, pdf_table.c), so that every tool
# fills about as many pages: body leading, a level-1 heading 1.8x the body with space
# around it, table text at 0.9x the body with 4 x 3 pt cell padding.
LEADING = 1.3
PARA_AFTER = 0.6 * BODY
HEADING = 1.8 * BODY
HEADING_LEADING = 1.2
CELL = 0.9 * BODY
CELL_LEADING = 1.2
HEADER_FILL = colors.HexColor("#1F4E79")   # theme header_fill
HEADER_TEXT = colors.white                 # theme header_font_color
NUMERIC = {"integer", "number", "currency", "percent", "date", "datetime"}


def register_fonts():
    """DejaVu Sans in the four styles, tied together so <b> and <i> pick the right file."""
    faces = {"DejaVuSans": "DejaVuSans.ttf", "DejaVuSans-Bold": "DejaVuSans-Bold.ttf",
             "DejaVuSans-Oblique": "DejaVuSans-Oblique.ttf",
             "DejaVuSans-BoldOblique": "DejaVuSans-BoldOblique.ttf"}
    for name, file in faces.items():
        pdfmetrics.registerFont(TTFont(name, os.path.join(FONT_DIR, file)))
    pdfmetrics.registerFontFamily("DejaVuSans", normal="DejaVuSans", bold="DejaVuSans-Bold",
                                  italic="DejaVuSans-Oblique",
                                  boldItalic="DejaVuSans-BoldOblique")


def styles():
    body = ParagraphStyle("Body", fontName="DejaVuSans", fontSize=BODY, leading=BODY * LEADING,
                          spaceAfter=PARA_AFTER)
    heading = ParagraphStyle("Heading1", parent=body, fontName="DejaVuSans-Bold",
                             fontSize=HEADING, leading=HEADING * HEADING_LEADING,
                             spaceBefore=HEADING, spaceAfter=0.4 * HEADING, keepWithNext=1)
    item = ParagraphStyle("ListItem", parent=body, spaceAfter=0.2 * BODY)
    return body, heading, item


def runs_markup(runs):
    out = []
    for r in runs:
        text = escape(r["text"])
        if r.get("italic"):
            text = "<i>%s</i>" % text
        if r.get("bold"):
            text = "<b>%s</b>" % text
        out.append(text)
    return "".join(out)


def table(block):
    cols = block["columns"]
    kinds = [c.get("type", "string") for c in cols]
    data = [[c["header"] for c in cols]]
    for row in block["rows"]:
        data.append([cell_text(v, k) for v, k in zip(row, kinds)])
    style = [
        ("FONTNAME", (0, 0), (-1, -1), "DejaVuSans"),
        ("FONTSIZE", (0, 0), (-1, -1), CELL),
        ("LEADING", (0, 0), (-1, -1), CELL * CELL_LEADING),
        ("LEFTPADDING", (0, 0), (-1, -1), 4),
        ("RIGHTPADDING", (0, 0), (-1, -1), 4),
        ("TOPPADDING", (0, 0), (-1, -1), 3),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 3),
        ("FONTNAME", (0, 0), (-1, 0), "DejaVuSans-Bold"),
        ("BACKGROUND", (0, 0), (-1, 0), HEADER_FILL),
        ("TEXTCOLOR", (0, 0), (-1, 0), HEADER_TEXT),
        ("GRID", (0, 0), (-1, -1), 0.5, colors.black),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
    ]
    for i, k in enumerate(kinds):
        if k in NUMERIC:
            style.append(("ALIGN", (i, 1), (i, -1), "RIGHT"))
    return Table(data, repeatRows=1, style=TableStyle(style), spaceBefore=0.3 * BODY,
                 spaceAfter=0.6 * BODY)


def main(spec_path, out_path):
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    base = os.path.dirname(os.path.abspath(spec_path))
    register_fonts()
    body, heading, item = styles()
    story = []
    for b in spec["blocks"]:
        t = b["type"]
        if t == "heading":
            story.append(Paragraph(escape(b["text"]), heading))
        elif t == "paragraph":
            story.append(Paragraph(runs_markup(b["runs"]), body))
        elif t == "list":
            story.append(ListFlowable([ListItem(Paragraph(escape(i), item)) for i in b["items"]],
                                      bulletType="bullet", start="\u2022",
                                      bulletFontName="DejaVuSans", bulletFontSize=BODY,
                                      leftIndent=18, spaceAfter=0.5 * BODY))
        elif t == "table":
            story.append(table(b))
        elif t == "image":
            path = os.path.join(base, b["image"]["path"])
            img = Image(path)
            w = float(b["width"])
            img.drawHeight = img.imageHeight * w / img.imageWidth
            img.drawWidth = w
            img.spaceBefore = 0.4 * BODY
            img.spaceAfter = 0.8 * BODY
            story.append(img)
        else:
            raise SystemExit("py_reportlab.py: block type %r is not in the workload" % t)
    meta = spec.get("metadata", {})
    doc = SimpleDocTemplate(out_path, pagesize=A4, leftMargin=MARGIN, rightMargin=MARGIN,
                            topMargin=MARGIN, bottomMargin=MARGIN, title=meta.get("title", ""),
                            author=meta.get("author", ""),
                            # The canvas starts every page in Helvetica unless told otherwise,
                            # which would put an unembedded standard font in the file.
                            initialFontName="DejaVuSans", initialFontSize=BODY)
    doc.build(story)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
