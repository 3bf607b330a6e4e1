"""Sample job: "turn this data into a report" (a Word document and a PDF).

Input: sales.csv in the job directory (samples/jobs/data/sales.csv).
Output: sales_report.docx and sales_report.pdf from one kiln.Document: headings, a
paragraph of computed findings, a table, a matplotlib figure and a native chart.

    kiln run --render -i samples/jobs/data/sales.csv -o out samples/jobs/report.py
"""
import os
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

import kiln

DATA = Path(os.environ.get("KILN_JOB_DIR", "/mnt/data"))

df = pd.read_csv(DATA / "sales.csv", parse_dates=["date"])
df["month"] = df["date"].dt.strftime("%Y-%m")
total = df["revenue"].sum()

by_region = (df.groupby("region")
               .agg(units=("units", "sum"), revenue=("revenue", "sum"))
               .sort_values("revenue", ascending=False))
by_region["revenue"] = by_region["revenue"].round(2)
by_region["share"] = (by_region["revenue"] / total).round(4)

by_product = df.pivot_table(index="product", columns="channel", values="revenue",
                            aggfunc="sum").round(2)
by_product.columns.name = None
monthly = df.groupby("month")["revenue"].sum().round(2)

h1 = monthly.iloc[:6].sum()
h2 = monthly.iloc[6:].sum()
best_month = monthly.idxmax()
top = by_region.index[0]
online = df.loc[df["channel"] == "Online", "revenue"].sum() / total

findings = ("Revenue for 2025 was ${:,.2f} over {:,} order lines. {} led the regions with "
            "${:,.2f} ({:.1%} of the total). The second half brought {:+.1%} on the first, "
            "and {} was the strongest month (${:,.2f}). Online sales made up {:.1%} of "
            "revenue.").format(total, len(df), top, by_region.loc[top, "revenue"],
                                by_region.loc[top, "share"], h2 / h1 - 1, best_month,
                                monthly.max(), online)

fig, ax = plt.subplots(figsize=(7, 3.5))
for region, part in df.groupby("region"):
    part.groupby("month")["revenue"].sum().plot(ax=ax, marker="o", label=region)
ax.set_title("Monthly revenue by region")
ax.set_xlabel("Month")
ax.set_ylabel("Revenue ($)")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()

doc = kiln.Document(title="Sales report 2025", subtitle="Orders by region, product and channel",
                    author="Kiln sample job", header=True)
doc.heading("Summary")
doc.paragraph(findings)
doc.bullets(["Regions ranked by revenue: " + ", ".join(by_region.index),
             "Best month: %s" % best_month,
             "Products: " + ", ".join(by_product.index)])
doc.heading("Revenue by region")
doc.table(by_region, caption="Revenue by region", formats={"revenue": "currency", "share": "0.0%"})
doc.image(fig, caption="Monthly revenue by region", width="15cm")
doc.heading("Products and channels")
doc.chart(by_product, kind="column", title="Revenue by product and channel",
          caption="Revenue by product and channel", y_title="Revenue ($)")
doc.table(by_product, caption="Revenue by product and channel",
          formats={c: "currency" for c in by_product.columns})
doc.save("sales_report.docx")
doc.save("sales_report.pdf")
print(findings)
