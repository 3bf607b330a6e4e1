#!/usr/bin/python3
"""Baseline for `make bench`: Python XlsxWriter in constant_memory mode on the
benchmark CSV, with the same formats and widths as the Kiln spec.

    /usr/bin/python3 bench/py_xlsxwriter.py IN.csv OUT.xlsx
"""
import csv
import datetime
import sys

import xlsxwriter

from columns import COLUMNS


def main(src, dst):
    wb = xlsxwriter.Workbook(dst, {"constant_memory": True})
    ws = wb.add_worksheet("Data")
    header = wb.add_format({"bold": True, "bg_color": "#1F4E79", "font_color": "#FFFFFF"})
    fmt = {}
    for i, (_, _, nf, width) in enumerate(COLUMNS):
        ws.set_column(i, i, width)
        fmt[i] = wb.add_format({"num_format": nf}) if nf else None
    date_fmt = fmt[1]
    with open(src, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        ws.write_row(0, 0, next(reader), header)
        for r, rec in enumerate(reader, start=1):
            ws.write_number(r, 0, int(rec[0]), fmt[0])
            ws.write_datetime(r, 1, datetime.datetime.strptime(rec[1], "%Y-%m-%d"), date_fmt)
            ws.write_string(r, 2, rec[2])
            ws.write_string(r, 3, rec[3])
            ws.write_string(r, 4, rec[4])
            ws.write_number(r, 5, float(rec[5]), fmt[5])
            ws.write_number(r, 6, float(rec[6]), fmt[6])
            ws.write_boolean(r, 7, rec[7] == "true")
            ws.write_string(r, 8, rec[8])
            ws.write_number(r, 9, float(rec[9]), fmt[9])
    wb.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
