#!/usr/bin/python3
"""ReportLab baseline for the batch benchmark (bench/README.md, "batch").

    /usr/bin/python3 bench/py_reportlab_invoices.py ROWS.jsonl OUTDIR [LIMIT]

The loop a ReportLab user writes to make one PDF invoice per row, in one process:
DejaVu Sans and DejaVu Sans Bold registered once as TrueType fonts (embedded and
subset in every file, as Kiln embeds its fonts; bench/py_reportlab.py does the same),
then for each JSON Lines row (bench/batch_workload.py's invoices_N.jsonl, the rows
`kiln batch` reads) a Platypus SimpleDocTemplate writing OUTDIR/<invoice_id>.pdf: the
seller / bill-to table, the title, the dates, a Table of the line items (bold white
header on #1F4E79, a grid, numbers right-aligned and formatted as Kiln formats its
integer and currency columns) and a totals table, on one A4 page with the margins of
the Kiln template. Rows are streamed, not read whole. Prints the count on stdout.
Debian's python3-reportlab; run with /usr/bin/python3.
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
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from batch_workload import SELLER, TAX_RATE_PCT, fmt_currency, fmt_integer  # noqa: E402

FONT_DIR = "/usr/share/fonts/truetype/dejavu"
BODY = 11
CELL = 0.9 * BODY
HEADER_FILL = colors.HexColor("#1F4E79")
GRID = colors.HexColor("#A6A6A6")


def register_fonts():
    pdfmetrics.registerFont(TTFont("DejaVuSans", os.path.join(FONT_DIR, "DejaVuSans.ttf")))
    pdfmetrics.registerFont(TTFont("DejaVuSans-Bold",
                                   os.path.join(FONT_DIR, "DejaVuSans-Bold.ttf")))
    pdfmetrics.registerFontFamily("DejaVuSans", normal="DejaVuSans", bold="DejaVuSans-Bold",
                                  italic="DejaVuSans", boldItalic="DejaVuSans-Bold")


BODY_STYLE = ParagraphStyle("Body", fontName="DejaVuSans", fontSize=BODY, leading=BODY * 1.3,
                            spaceAfter=0.6 * BODY)
TITLE_STYLE = ParagraphStyle("Title", parent=BODY_STYLE, fontName="DejaVuSans-Bold",
                             fontSize=1.8 * BODY, leading=2.2 * BODY, spaceBefore=1.8 * BODY,
                             spaceAfter=0.6 * BODY, textColor=HEADER_FILL)


def table_style(header=True, right_from=None):
    cmds = [("FONT", (0, 0), (-1, -1), "DejaVuSans", CELL),
            ("GRID", (0, 0), (-1, -1), 0.5, GRID),
            ("LEFTPADDING", (0, 0), (-1, -1), 4), ("RIGHTPADDING", (0, 0), (-1, -1), 4),
            ("TOPPADDING", (0, 0), (-1, -1), 3), ("BOTTOMPADDING", (0, 0), (-1, -1), 3)]
    if header:
        cmds += [("FONT", (0, 0), (-1, 0), "DejaVuSans-Bold", CELL),
                 ("BACKGROUND", (0, 0), (-1, 0), HEADER_FILL),
                 ("TEXTCOLOR", (0, 0), (-1, 0), colors.white)]
    if right_from is not None:
        cmds.append(("ALIGN", (right_from, 0), (-1, -1), "RIGHT"))
    return TableStyle(cmds)


def invoice(row, path):
    c = row["customer"]
    story = [
        Table([["From", "Bill to"], [SELLER[0], c["name"]], [SELLER[1], c["address1"]],
               [SELLER[2], c["address2"]], [SELLER[3], "Customer " + c["customer_id"]]],
              hAlign="LEFT", style=table_style()),
        Paragraph("Invoice " + escape(row["invoice_id"]), TITLE_STYLE),
        Paragraph("Date: %s    Due: %s    Currency: %s"
                  % (row["date"], row["due"], escape(row["currency"])), BODY_STYLE),
        Table([["Description", "Qty", "Unit price", "Amount"]]
              + [[d, fmt_integer(q), fmt_currency(u), fmt_currency(a)]
                 for d, q, u, a in row["items"]],
              hAlign="LEFT", repeatRows=1, style=table_style(right_from=1)),
        Spacer(1, 0.6 * BODY),
        Table([["Subtotal", fmt_currency(row["subtotal"])],
               ["Tax (%d%%)" % TAX_RATE_PCT, fmt_currency(row["tax"])],
               ["Total due", fmt_currency(row["total"])]],
              hAlign="LEFT", style=table_style(header=False, right_from=1)),
        Spacer(1, 0.6 * BODY),
        Paragraph("Payment within 30 days to Northwind Components Ltd, sort code 12-34-56, "
                  "account 12345678, quoting %s." % escape(row["invoice_id"]), BODY_STYLE),
    ]
    doc = SimpleDocTemplate(path, pagesize=A4, leftMargin=60, rightMargin=60, topMargin=54,
                            bottomMargin=54, title="Invoice " + row["invoice_id"],
                            author=SELLER[0], subject="Invoice for " + c["name"],
                            # else the canvas starts in Helvetica, a font not embedded
                            initialFontName="DejaVuSans", initialFontSize=BODY)
    doc.build(story)


def main():
    if len(sys.argv) not in (3, 4):
        sys.stderr.write("usage: py_reportlab_invoices.py ROWS.jsonl OUTDIR [LIMIT]\n")
        return 2
    data, outdir = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[3]) if len(sys.argv) == 4 else None
    register_fonts()
    os.makedirs(outdir, exist_ok=True)
    n = 0
    with open(data, encoding="utf-8") as f:
        for line in f:
            if limit is not None and n >= limit:
                break
            if not line.strip():
                continue
            row = json.loads(line)
            invoice(row, os.path.join(outdir, row["invoice_id"] + ".pdf"))
            n += 1
    print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
