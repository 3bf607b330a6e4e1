#!/usr/bin/python3
"""Baseline for `make bench`: openpyxl in write_only mode on the benchmark CSV,
with the same formats and widths as the Kiln spec.

    /usr/bin/python3 bench/py_openpyxl.py IN.csv OUT.xlsx
"""
import csv
import datetime
import sys

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter

from columns import COLUMNS


def main(src, dst):
    wb = Workbook(write_only=True)
    ws = wb.create_sheet("Data")
    for i, (_, _, _, width) in enumerate(COLUMNS):
        ws.column_dimensions[get_column_letter(i + 1)].width = width
    font = Font(bold=True, color="FFFFFF")
    fill = PatternFill("solid", fgColor="1F4E79")
    nf = [c[2] for c in COLUMNS]

    def cell(value, i):
        c = WriteOnlyCell(ws, value=value)
        c.number_format = nf[i]
        return c

    with open(src, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        head = []
        for name in next(reader):
            c = WriteOnlyCell(ws, value=name)
            c.font = font
            c.fill = fill
            head.append(c)
        ws.append(head)
        for rec in reader:
            ws.append([
                cell(int(rec[0]), 0),
                cell(datetime.datetime.strptime(rec[1], "%Y-%m-%d").date(), 1),
                rec[2], rec[3], rec[4],
                cell(float(rec[5]), 5),
                cell(float(rec[6]), 6),
                rec[7] == "true",
                rec[8],
                cell(float(rec[9]), 9),
            ])
    wb.save(dst)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
