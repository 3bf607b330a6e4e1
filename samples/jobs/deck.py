"""Sample job: "make a deck of these results".

Input: experiment.csv in the job directory (samples/jobs/data/experiment.csv): a
pricing-page test, visitors, sign-ups and revenue per variant per day.
Output: experiment_results.pptx: a title slide, the findings as bullets, a results
table, a native chart of the daily conversion rate, a matplotlib figure, speaker notes.

    kiln run --render -i samples/jobs/data/experiment.csv -o out samples/jobs/deck.py
"""
import os
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

import kiln

DATA = Path(os.environ.get("KILN_JOB_DIR", "/mnt/data"))

df = pd.read_csv(DATA / "experiment.csv", parse_dates=["date"])

results = df.groupby("variant").agg(visitors=("visitors", "sum"), signups=("signups", "sum"),
                                    revenue=("revenue", "sum"))
results["revenue"] = results["revenue"].round(2)
results["conversion"] = (results["signups"] / results["visitors"]).round(4)
results["revenue_per_visitor"] = (results["revenue"] / results["visitors"]).round(3)
control = results.loc["Control"]
results["uplift"] = (results["revenue_per_visitor"] / control["revenue_per_visitor"] - 1).round(4)

daily = df.pivot_table(index=df["date"].dt.strftime("%m-%d"), columns="variant",
                       values=["signups", "visitors"], aggfunc="sum")
daily_rate = (daily["signups"] / daily["visitors"] * 100).round(2)
daily_rate.columns.name = None
daily_rate.index.name = "day"

best = results["revenue_per_visitor"].idxmax()
best_conv = results["conversion"].idxmax()

deck = kiln.Deck(title="Pricing page test: results", subtitle="June 2025, three variants",
                 author="Kiln sample job", notes="Four weeks, every visitor of the pricing page.")
deck.slide("Key findings", bullets=[
    "%s earns the most per visitor: $%.3f (%+.1f%% on Control)"
    % (best, results.loc[best, "revenue_per_visitor"], results.loc[best, "uplift"] * 100),
    "%s converts best: %.2f%% of visitors sign up" % (best_conv, results.loc[best_conv, "conversion"] * 100),
    ("Traffic was split evenly", ["%s: %s visitors" % (v, format(int(n), ","))
                                  for v, n in results["visitors"].items()]),
    "Total revenue in the test: $%s" % format(results["revenue"].sum(), ",.2f"),
], notes="Lead with revenue per visitor: conversion alone favours the cheaper plan.")
table = results.rename(columns={"visitors": "Visitors", "signups": "Sign-ups", "revenue": "Revenue",
                                "conversion": "Conversion", "revenue_per_visitor": "Revenue/visitor",
                                "uplift": "Uplift"})
table.index.name = "Variant"
deck.table("Results by variant", table,
           formats={"Revenue": "currency", "Conversion": "0.00%", "Revenue/visitor": "$0.000",
                    "Uplift": "+0.0%;-0.0%;0.0%"},
           notes="Uplift is revenue per visitor against Control.")
deck.chart("Daily conversion rate (%)", daily_rate, kind="line",
           y_title="Sign-ups per 100 visitors", x_title="Day",
           notes="Daily rates are noisy; the totals on the previous slide are what counts.")

fig, ax = plt.subplots(figsize=(8, 4.5))
cum = df.sort_values("date").groupby("variant")[["signups", "visitors"]].cumsum()
for variant, part in df.assign(rate=cum["signups"] / cum["visitors"] * 100).groupby("variant"):
    ax.plot(part["date"], part["rate"], label=variant)
ax.set_title("Cumulative conversion rate")
ax.set_ylabel("%")
ax.legend()
fig.autofmt_xdate()
deck.image("Cumulative conversion", fig, notes="The lines settle after the second week.")
deck.section("Next steps", subtitle="Roll out %s to all traffic" % best)
deck.save("experiment_results.pptx")
print(results.to_string())
