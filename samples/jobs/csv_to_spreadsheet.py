"""Sample job: "analyse this CSV and make me a spreadsheet with a chart".

Input: sales.csv in the job directory (samples/jobs/data/sales.csv).
Output: sales_analysis.xlsx with a summary by region (and a column chart), revenue by
month and region (and a line chart), and the data itself.

    kiln run --render -i samples/jobs/data/sales.csv -o out samples/jobs/csv_to_spreadsheet.py
"""
import os
from pathlib import Path

import pandas as pd

import kiln

DATA = Path(os.environ.get("KILN_JOB_DIR", "/mnt/data"))

df = pd.read_csv(DATA / "sales.csv", parse_dates=["date"])
df["month"] = df["date"].dt.strftime("%Y-%m")

# Summary by region: orders, units, revenue, share of revenue, average order value.
by_region = (df.groupby("region")
               .agg(orders=("revenue", "size"), units=("units", "sum"), revenue=("revenue", "sum"))
               .sort_values("revenue", ascending=False))
by_region["revenue"] = by_region["revenue"].round(2)
by_region["share"] = (by_region["revenue"] / by_region["revenue"].sum()).round(4)
by_region["avg_order"] = (by_region["revenue"] / by_region["orders"]).round(2)

# Revenue by month (rows) and region (columns).
monthly = df.pivot_table(index="month", columns="region", values="revenue", aggfunc="sum").round(2)
monthly.columns.name = None

wb = kiln.Workbook(title="Sales analysis 2025", author="Kiln sample job")
wb.sheet(by_region, name="Summary",
         formats={"revenue": "currency", "avg_order": "currency", "share": "0.0%"},
         chart={"kind": "column", "y": ["revenue"], "title": "Revenue by region",
                "legend": "none", "anchor": "H2"})
wb.sheet(monthly, name="Monthly", formats={r: "currency" for r in monthly.columns},
         chart={"kind": "line", "title": "Monthly revenue by region", "anchor": "G2",
                "x_title": "Month", "y_title": "Revenue"})
wb.sheet(df.drop(columns=["month"]), name="Data",
         formats={"unit_price": "currency", "revenue": "currency", "discount": "0%"})
wb.save("sales_analysis.xlsx")

top = by_region.index[0]
print("rows: %d, total revenue: %.2f" % (len(df), df["revenue"].sum()))
print("top region: %s (%.1f%% of revenue)" % (top, by_region.loc[top, "share"] * 100))
