#!/usr/bin/python3
"""Generate samples/data/deck_150.json: a 150-slide deck (issue 5, item 5). The spec
holds 150 slides; its four long tables continue over more, so the .pptx has 158.

    /usr/bin/python3 samples/make_deck.py [--force]

`make samples` runs this too. The deck is a year-end operations review of a
made-up logistics company in twelve parts (one per business unit): a title
slide, then for each part a section header, an overview with bullets nested up
to five levels, a two-column slide, tables (some too long for one slide, so
they continue on the next with their header repeated), charts of every kind in
the spec's chart model (column, bar, line, area, pie, doughnut, scatter, and
stacked column, bar and area), now and then an image or a blank slide, and
speaker notes on most slides; a closing slide ends it. Every layout of
docs/spec.md "Slides" appears.

The spec lives in samples/data/ (generated, not in git) beside the other
generated specs. Image paths may not leave the spec's directory, so its
images are samples/images/*, embedded as base64 `data`. The content is the
same bytes on every machine and every run (make_data's fixed xorshift
generator, no `random`, no clock); the file is rewritten only when it is
missing or older than this script or the images. Standard library only.
"""
import base64
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_data  # noqa: E402  (the same random generator as the other samples)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
DECK = os.path.join(DATA, "deck_150.json")
SLIDES = 150
IMAGES = [("regional_trend.jpg", "jpeg", "Revenue by region, 2025"),
          ("kiln_logo.png", "png", "Company logo")]

UNITS = ["Parcel network", "Freight forwarding", "Cold chain", "Warehousing", "Last mile",
         "Customs brokerage", "Fleet", "Air cargo", "Rail freight", "Returns", "Technology",
         "People and safety"]
REGIONS = ["North", "South", "East", "West", "Central", "Coastal", "Highlands", "Islands",
           "Metro", "Border", "Lakes", "Valley", "Plains", "Delta", "Harbour", "Alpine",
           "Riverside", "Uplands", "Gateway", "Pioneer", "Summit", "Prairie", "Canyon",
           "Forest", "Bay", "Ridge", "Meadow", "Cape", "Glen", "Moor", "Heath", "Marsh"]
QUARTERS = ["Q1", "Q2", "Q3", "Q4"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
PEOPLE = ["Ava Thompson", "Noah Patel", "Emma Chen", "Olivia Brooks", "Liam Carter", "Mia Rossi",
          "Lucas Meyer", "Ethan Nakamura", "Priya Raman", "Jonas Berg", "Ines Duarte", "Kofi Mensah"]
DRIVERS = ["the new hub in the east", "longer contracts with retail customers",
           "route planning software", "a second night shift", "lower fuel prices",
           "electric vans in three cities", "the customs fast lane", "fewer failed deliveries",
           "cross-docking at the main hub", "the carrier tender", "better forecasting",
           "self-service returns"]
RISKS = ["driver shortages", "fuel price swings", "port congestion", "a weaker retail season",
         "rising warehouse rents", "new emission zones", "currency movements",
         "the ERP migration", "cyber attacks on partners", "the loss of a top-ten customer"]
METRICS = [("On-time delivery", "%"), ("Cost per parcel", "$"), ("Damage rate", "%"),
           ("Revenue per route", "$"), ("Dock-to-stock time", "h"), ("Customer rating", "/10")]
TABLE_COLUMNS = [("Region", "string"), ("Shipments", "integer"), ("Revenue", "currency"),
                 ("Margin", "percent"), ("Lead", "string")]
CHART_KINDS = [("column", False), ("line", False), ("bar", False), ("pie", False),
               ("area", False), ("doughnut", False), ("scatter", False), ("column", True),
               ("bar", True), ("area", True)]


class XorShift(make_data.XorShift):
    """make_data's generator, with the draws the deck needs."""

    def pick(self, seq):
        return seq[self.below(len(seq))]

    def between(self, lo, hi):
        return lo + self.below(hi - lo + 1)


def point(rng, unit):
    """One bullet's text about a business unit."""
    forms = [
        "Volume up %d%% on last year, driven by %s" % (rng.between(2, 24), rng.pick(DRIVERS)),
        "%s at %.1f%%, against a target of 95%%" % ("On-time delivery", rng.between(880, 990) / 10),
        "Costs per shipment down %.1f%% thanks to %s" % (rng.between(5, 90) / 10, rng.pick(DRIVERS)),
        "Watch %s: it could cost $%s next year" % (rng.pick(RISKS), "{:,}".format(rng.between(2, 90) * 10000)),
        "%s leads the %s plan for the second half" % (rng.pick(PEOPLE), unit.lower()),
        "%d new customers signed, %d of them on three-year terms" % (rng.between(8, 40), rng.between(2, 7)),
        "Claims fell to %.2f%% of shipments" % (rng.between(5, 60) / 100),
    ]
    return rng.pick(forms)


def nested(rng, unit, depth):
    """A list item with a chain of sub-items down to depth levels (1 = no sub-items);
    the item under the top one may have a sibling."""
    text = point(rng, unit)
    if depth <= 1:
        return text
    below = [nested(rng, unit, depth - 1)]
    if depth == 2 and rng.below(2):
        below.append(point(rng, unit))
    return {"text": text, "items": below}


def bullets(rng, unit, deep):
    """Four or five top-level bullets (four when deep); deep: one of them goes five
    levels down. About ten lines at most, as a real slide would hold."""
    items = []
    for i in range(4 if deep else rng.between(4, 5)):
        if deep and i == 1:
            items.append(nested(rng, unit, 5))
        elif rng.below(3) == 0:
            items.append(nested(rng, unit, 2))
        else:
            items.append(point(rng, unit))
    if rng.below(4) == 0:
        items[0] = {"runs": [{"text": "Headline: "}, {"text": point(rng, unit), "bold": True}]}
    return items


def table(rng, unit, rows):
    return {"name": ("%s by region" % unit)[:31],
            "columns": [{"header": h, "type": t} for h, t in TABLE_COLUMNS],
            "rows": [[REGIONS[r % len(REGIONS)], rng.between(1200, 98000),
                      rng.between(50_000, 9_000_000) * 1.0, rng.between(20, 420) / 1000,
                      rng.pick(PEOPLE)] for r in range(rows)]}


def chart(rng, unit, kind, stacked):
    c = {"kind": kind}
    if kind in ("pie", "doughnut"):
        cats = ["Parcels", "Pallets", "Containers", "Cold", "Other"][:rng.between(3, 5)]
        c.update(title="%s: revenue mix" % unit, categories=cats,
                 series=[{"name": "Share", "values": [rng.between(5, 40) for _ in cats]}],
                 legend="right")
    elif kind == "scatter":
        xs = sorted({rng.between(10, 400) for _ in range(12)})
        c.update(title="%s: cost against distance" % unit, categories=xs,
                 series=[{"name": "Routes", "values": [round(x * 1.8 + rng.between(0, 200), 1)
                                                       for x in xs]}],
                 x_axis={"title": "Kilometres"}, y_axis={"title": "Cost ($)"}, legend="none")
    else:
        monthly = kind in ("line", "area")
        cats = MONTHS if monthly else QUARTERS
        n = rng.between(2, 3)
        series = []
        for i in range(n):
            # a random walk, so the lines look like volumes rather than noise
            v, values = rng.between(60, 120), []
            for _ in cats:
                v = max(10, v + rng.between(-12, 15))
                values.append(v)
            series.append({"name": str(2024 + i), "values": values})
        c.update(title="%s: %s volume" % (unit, "monthly" if monthly else "quarterly"),
                 categories=cats, series=series, legend=rng.pick(["bottom", "right", "top"]),
                 x_axis={"title": "Month" if monthly else "Quarter"},
                 y_axis={"title": "Thousand shipments"})
        if stacked:
            c["stacked"] = True
    return c


def notes(rng, unit):
    return "%s. %s. Questions on %s go to %s." % (point(rng, unit), point(rng, unit),
                                                 unit.lower(), rng.pick(PEOPLE))


def image_data(name):
    with open(os.path.join(HERE, "images", name), "rb") as f:
        return base64.b64encode(f.read()).decode("ascii")


def build():
    rng = XorShift(0x4445434B)  # "DECK"
    images = {name: image_data(name) for name, _, _ in IMAGES}
    slides = [{"layout": "title", "title": "Operations review 2026",
               "subtitle": "Harbourline Logistics \u00b7 twelve business units \u00b7 year-end review",
               "notes": "Welcome. One part per business unit; each ends with its priorities."}]
    chart_no = 0
    image_no = 0
    # 12 parts of 12 slides, then 5 closing slides: 1 + 144 + 5 = 150.
    for p, unit in enumerate(UNITS):
        part = []
        part.append({"layout": "section", "title": "Part %d: %s" % (p + 1, unit),
                     "subtitle": "Results, risks and plans"})
        part.append({"layout": "content", "title": "%s: overview" % unit,
                     "bullets": bullets(rng, unit, deep=True)})
        part.append({"layout": "content", "title": "%s: what changed this year" % unit,
                     "bullets": bullets(rng, unit, deep=False)})
        part.append({"layout": "two_column", "title": "%s: wins and risks" % unit,
                     "left": [point(rng, unit) for _ in range(rng.between(3, 4))],
                     "right": ["Risk: " + rng.pick(RISKS) for _ in range(rng.between(2, 3))] +
                              [nested(rng, unit, 2)]})
        # every third part has a table long enough to continue on a second slide
        rows = 28 if p % 3 == 2 else rng.between(5, 10)
        part.append({"layout": "table", "title": "%s: results by region" % unit,
                     "table": table(rng, unit, rows)})
        for _ in range(3):
            kind, stacked = CHART_KINDS[chart_no % len(CHART_KINDS)]
            chart_no += 1
            part.append({"layout": "chart", "title": "%s: chart %d" % (unit, chart_no),
                         "chart": chart(rng, unit, kind, stacked)})
        part.append({"layout": "table", "title": "%s: key metrics" % unit,
                     "table": {"columns": [{"header": "Metric"}, {"header": "2025"},
                                           {"header": "2026"}, {"header": "Target"}],
                               "rows": [[m, "%d%s" % (rng.between(40, 99), u),
                                         "%d%s" % (rng.between(40, 99), u),
                                         "%d%s" % (rng.between(40, 99), u)]
                                        for m, u in METRICS]}})
        if p % 3 == 0:
            name, fmt, alt = IMAGES[image_no % len(IMAGES)]
            image_no += 1
            part.append({"layout": "image", "title": "%s: %s" % (unit, alt.lower()),
                         "image": {"data": images[name], "format": fmt, "alt": alt}})
        elif p % 4 == 1:
            part.append({"layout": "blank"})
        else:
            part.append({"layout": "content", "title": "%s: customers" % unit,
                         "bullets": bullets(rng, unit, deep=False)})
        part.append({"layout": "content", "title": "%s: people" % unit,
                     "bullets": [point(rng, unit) for _ in range(4)]})
        part.append({"layout": "content", "title": "%s: priorities for 2027" % unit,
                     "bullets": bullets(rng, unit, deep=p % 2 == 0)})
        for s in part:
            if s["layout"] != "section" and rng.below(5) != 0:
                s["notes"] = notes(rng, unit)
        slides += part
    slides.append({"layout": "section", "title": "Looking ahead",
                   "subtitle": "The group plan for 2027"})
    slides.append({"layout": "chart", "title": "Group revenue by unit",
                   "chart": {"kind": "bar", "title": "Revenue 2026 ($ million)",
                             "categories": UNITS,
                             "series": [{"name": "2026", "values": [rng.between(40, 400)
                                                                   for _ in UNITS]}],
                             "legend": "none"},
                   "notes": "Every unit grew except rail freight."})
    slides.append({"layout": "two_column", "title": "Group wins and risks",
                   "left": [rng.pick(DRIVERS).capitalize() for _ in range(4)],
                   "right": [rng.pick(RISKS).capitalize() for _ in range(4)]})
    slides.append({"layout": "content", "title": "Group priorities for 2027",
                   "bullets": [nested(rng, "the group", 3) for _ in range(3)],
                   "notes": "The board approves the plan on 15 January."})
    slides.append({"layout": "title", "title": "Thank you", "subtitle": "Questions and discussion"})
    assert len(slides) == SLIDES, len(slides)
    return {"version": 1,
            "metadata": {"title": "Operations review 2026", "author": "Group operations",
                         "company": "Harbourline Logistics", "subject": "Year-end review",
                         "keywords": ["operations", "review", "2026"],
                         "created": "2026-12-12T09:00:00Z"},
            "theme": {"accent_colors": ["#1F4E79", "#C55A11", "#548235", "#BF9000", "#7030A0",
                                        "#2E75B6"]},
            "slides": slides}


def stale(path):
    if not os.path.exists(path):
        return True
    sources = [os.path.abspath(__file__)] + [os.path.join(HERE, "images", n) for n, _, _ in IMAGES]
    return os.path.getmtime(path) < max(os.path.getmtime(s) for s in sources)


def write(path=DECK, force=False):
    """Write the deck when missing or stale (or force); returns True when written."""
    if not force and not stale(path):
        return False
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(build(), f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)
    return True


def main(argv):
    if write(force="--force" in argv[1:]):
        print("make_deck: wrote %s" % os.path.relpath(DECK))
    else:
        print("make_deck: %s is up to date" % os.path.relpath(DECK))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
