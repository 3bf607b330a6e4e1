#!/usr/bin/python3
"""Generate samples/data/long_report.json: a long report (well over 100 pages as a .docx),
and samples/data/long_report_pdf.json, the same report with twice the sites (well over
200 pages as a .pdf; the PDF tests check that).

    /usr/bin/python3 samples/make_long_report.py [--force]

samples/make_data.py runs this too (`make samples`). The report is a regional
operations review: a table of contents, then one chapter per site with a summary,
bulleted and numbered lists, a table of monthly results, a table of the largest
orders (long enough to run over a page, so its header row repeats), a chart for
every third site, issues, actions and an outlook. The text is made from sentence
templates filled with figures, so it reads like a report rather than filler, and
is the same bytes on every machine and every run (a fixed xorshift generator, no
`random`, no clock). Standard library only.

The spec lives in samples/data/ (generated, not in git) beside the CSV files;
it uses no image, since image paths may not leave the spec's directory.
"""
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_data  # noqa: E402  (the same random generator as the export sample)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
LONG_REPORT = os.path.join(DATA, "long_report.json")
LONG_REPORT_PDF = os.path.join(DATA, "long_report_pdf.json")

SITES = [
    ("Leeds", "United Kingdom", "control hubs"), ("York", "United Kingdom", "sensor kits"),
    ("Lyon", "France", "distribution"), ("Lille", "France", "cable assemblies"),
    ("Hamburg", "Germany", "control hubs"), ("Leipzig", "Germany", "enclosures"),
    ("Rotterdam", "Netherlands", "distribution"), ("Eindhoven", "Netherlands", "sensor modules"),
    ("Antwerp", "Belgium", "distribution"), ("Bilbao", "Spain", "enclosures"),
    ("Valencia", "Spain", "cable assemblies"), ("Turin", "Italy", "control hubs"),
    ("Bologna", "Italy", "sensor kits"), ("Gdansk", "Poland", "cable assemblies"),
    ("Wroclaw", "Poland", "enclosures"), ("Brno", "Czech Republic", "sensor modules"),
    ("Gothenburg", "Sweden", "distribution"), ("Tampere", "Finland", "sensor kits"),
    ("Porto", "Portugal", "enclosures"), ("Cork", "Ireland", "managed monitoring"),
    ("Linz", "Austria", "control hubs"), ("Aarhus", "Denmark", "distribution"),
    ("Ghent", "Belgium", "cable assemblies"), ("Lodz", "Poland", "distribution"),
    ("Graz", "Austria", "sensor modules"),
]
# The PDF edition adds these sites after the first 25 (whose chapters stay the same bytes).
MORE_SITES = [
    ("Nantes", "France", "sensor kits"), ("Toulouse", "France", "control hubs"),
    ("Bremen", "Germany", "distribution"), ("Dresden", "Germany", "sensor modules"),
    ("Utrecht", "Netherlands", "cable assemblies"), ("Liege", "Belgium", "enclosures"),
    ("Zaragoza", "Spain", "distribution"), ("Seville", "Spain", "sensor kits"),
    ("Genoa", "Italy", "enclosures"), ("Verona", "Italy", "distribution"),
    ("Poznan", "Poland", "sensor kits"), ("Krakow", "Poland", "control hubs"),
    ("Ostrava", "Czech Republic", "cable assemblies"), ("Malmo", "Sweden", "enclosures"),
    ("Uppsala", "Sweden", "sensor modules"), ("Oulu", "Finland", "control hubs"),
    ("Braga", "Portugal", "distribution"), ("Galway", "Ireland", "sensor kits"),
    ("Salzburg", "Austria", "enclosures"), ("Odense", "Denmark", "cable assemblies"),
    ("Bruges", "Belgium", "sensor kits"), ("Kosice", "Slovakia", "enclosures"),
    ("Ljubljana", "Slovenia", "distribution"), ("Tartu", "Estonia", "sensor modules"),
    ("Kaunas", "Lithuania", "control hubs"),
]
CUSTOMERS = ["Harbor Freight Logistics", "Summit Dental Group", "Keystone Builders",
             "Redwood Analytics", "Granite Hardware", "Pioneer Media", "Tidewater Foods",
             "Zenith Robotics", "Oakmont Clinic", "Juniper Studios", "Meridian Motors",
             "Lakeside Pharmacy", "Vanguard Supply", "Evergreen Outfitters", "Falcon Labs",
             "Cedar Consulting", "Blue Ridge Holdings", "Union Freight", "Westfield Partners"]
PRODUCTS = [("Control hub 100", 194.0), ("Control hub 200", 331.5), ("Hub 220", 389.0),
            ("Sensor kit S", 89.75), ("Sensor kit M", 124.25), ("Cable pack", 8.25),
            ("Enclosure E4", 46.5), ("Monitoring, 1 year", 1040.0), ("Extended warranty", 146.0)]
DRIVERS = ["the Hub 220 launch", "two new distribution contracts", "higher service renewals",
           "a stronger order book in the public sector", "the end of the legacy sensor line",
           "price increases agreed in the spring", "shorter lead times from suppliers",
           "the second shift added in March", "lower freight costs", "a larger share of services"]
RISKS = ["component lead times", "energy prices", "staff turnover in the warehouse",
         "the renewal of the largest contract", "currency movements", "supplier concentration",
         "the pace of the ERP upgrade", "planning permission for the extension"]
PEOPLE = ["Ava Thompson", "Noah Patel", "Emma Chen", "Olivia Brooks", "Liam Carter", "Mia Rossi",
          "Lucas Meyer", "Ethan Nakamura", "Priya Raman", "Jonas Berg", "Ines Duarte", "Kofi Mensah"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]


class XorShift(make_data.XorShift):
    """make_data's generator, with the two draws the report needs."""

    def pick(self, seq):
        return seq[self.below(len(seq))]

    def between(self, lo, hi):
        return lo + self.below(hi - lo + 1)


def money(x):
    return "${:,.0f}".format(x)


def sentence(rng, site, product):
    """One sentence of report prose about a site."""
    m = rng.pick(MONTHS)
    pct = rng.between(5, 190) / 10
    forms = [
        "In %s, %s shipped %s more %s than a year earlier, mostly because of %s." % (
            m, site, "{:,}".format(rng.between(120, 2400)), product, rng.pick(DRIVERS)),
        "Revenue per employee rose %.1f%% to %s, the best figure since the site opened." % (
            pct, money(rng.between(180, 420) * 1000)),
        "The order book at the end of %s stood at %s, of which %d%% is due in the first half." % (
            m, money(rng.between(300, 2900) * 1000), rng.between(40, 80)),
        "Margins were held back by %s, which cost about %s over the year." % (
            rng.pick(RISKS), money(rng.between(15, 240) * 1000)),
        "%s, who runs the site, expects %s to add %.1f%% to revenue next year." % (
            rng.pick(PEOPLE), rng.pick(DRIVERS), pct),
        "On-time delivery averaged %.1f%%, against a target of 95%%, with the weakest month in %s." % (
            rng.between(880, 990) / 10, m),
        "Scrap fell to %.1f%% of material used after the line was rebalanced in %s." % (
            rng.between(8, 40) / 10, m),
        "Customers rated the site %.1f out of 10 in the autumn survey, up from %.1f." % (
            rng.between(72, 93) / 10, rng.between(65, 85) / 10),
        "Energy use per unit was %.1f%% lower than in 2025, helped by %s." % (
            pct, rng.pick(["the new compressors", "LED lighting in the warehouse",
                           "the solar roof", "shorter changeovers"])),
        "Two of the ten largest customers, %s and %s, renewed for three years." % (
            rng.pick(CUSTOMERS), rng.pick(CUSTOMERS)),
    ]
    return rng.pick(forms)


def paragraph(rng, site, product, sentences):
    return " ".join(sentence(rng, site, product) for _ in range(sentences))


def runs_paragraph(rng, site, product):
    """A paragraph with bold and italic runs."""
    return {"type": "paragraph", "runs": [
        {"text": sentence(rng, site, product) + " "},
        {"text": "Revenue for the year was %s" % money(rng.between(900, 6200) * 1000), "bold": True},
        {"text": ", "},
        {"text": "%.1f%% above plan" % (rng.between(5, 120) / 10), "italic": True},
        {"text": ". " + paragraph(rng, site, product, 3)},
    ]}


def chapter(rng, n, site, country, product):
    blocks = [
        {"type": "heading", "level": 1, "text": "%s, %s" % (site, country)},
        runs_paragraph(rng, site, product),
        {"type": "heading", "level": 2, "text": "%s: summary" % site},
    ]
    for _ in range(3):
        blocks.append({"type": "paragraph", "align": "justify",
                       "text": paragraph(rng, site, product, rng.between(4, 6))})
    blocks.append({"type": "list", "items": [
        "Revenue %s, %s on 2025" % (money(rng.between(900, 6200) * 1000),
                                    rng.pick(["up", "up", "up", "down"])),
        {"text": "Main products: %s" % product, "items": [
            "%s: %s units" % (p, "{:,}".format(rng.between(300, 9000)))
            for p, _ in (PRODUCTS[rng.below(len(PRODUCTS))] for _ in range(2))]},
        "Headcount %d at year end" % rng.between(40, 260),
        "On-time delivery %.1f%%" % (rng.between(880, 990) / 10),
        "Site lead: %s" % rng.pick(PEOPLE),
    ]})

    # Monthly results: 12 rows.
    blocks.append({"type": "heading", "level": 2, "text": "%s: monthly results" % site})
    blocks.append({"type": "paragraph", "text": paragraph(rng, site, product, 2)})
    rows, revenue = [], []
    base = rng.between(60, 480) * 1000
    for m in range(12):
        orders = rng.between(80, 900)
        rev = base + rng.between(0, 90) * 1000 + m * rng.between(0, 6) * 1000
        cost = round(rev * rng.between(55, 82) / 100, 2)
        rows.append([datetime.date(2026, m + 1, 1).isoformat(), orders, rev, cost,
                     round(1 - cost / rev, 4), rng.between(880, 995) / 1000])
        revenue.append(rev / 1000)
    blocks.append({"type": "table", "caption": "%s: monthly results, 2026" % site,
                   "columns": [{"header": "Month", "type": "date", "number_format": "mmm yyyy"},
                               {"header": "Orders", "type": "integer"},
                               {"header": "Revenue", "type": "currency"},
                               {"header": "Costs", "type": "currency"},
                               {"header": "Margin", "type": "percent"},
                               {"header": "On time", "type": "percent"}],
                   "rows": rows})
    if n % 3 == 0:
        blocks.append({"type": "chart", "kind": "line", "title": "%s: revenue by month" % site,
                       "categories": [m[:3] for m in MONTHS],
                       "series": [{"name": "Revenue (USD thousands)", "values": revenue}],
                       "legend": "none", "y_axis": {"title": "USD thousands"},
                       "caption": "%s: monthly revenue, 2026" % site})

    # The largest orders: long enough to run over a page.
    blocks.append({"type": "heading", "level": 2, "text": "%s: largest orders" % site})
    blocks.append({"type": "paragraph", "text": paragraph(rng, site, product, 2)})
    orders = []
    for i in range(rng.between(40, 52)):
        p, price = PRODUCTS[rng.below(len(PRODUCTS))]
        qty = rng.between(5, 400)
        day = datetime.date(2026, 1, 1) + datetime.timedelta(days=rng.below(334))
        orders.append(["%s-%05d" % (site[:3].upper(), rng.between(1, 99999)), day.isoformat(),
                       rng.pick(CUSTOMERS), p, qty, round(qty * price, 2)])
    orders.sort(key=lambda r: -r[5])
    blocks.append({"type": "table", "caption": "%s: largest orders of 2026" % site,
                   "columns": [{"header": "Order"}, {"header": "Date", "type": "date"},
                               {"header": "Customer"}, {"header": "Product"},
                               {"header": "Quantity", "type": "integer"},
                               {"header": "Amount", "type": "currency"}],
                   "rows": orders})

    blocks.append({"type": "heading", "level": 2, "text": "%s: issues and actions" % site})
    blocks.append({"type": "heading", "level": 3, "text": "Issues"})
    for _ in range(2):
        blocks.append({"type": "paragraph", "text": paragraph(rng, site, product, rng.between(4, 6))})
    blocks.append({"type": "heading", "level": 3, "text": "Actions for 2027"})
    blocks.append({"type": "list", "ordered": True, "items": [
        "Reduce exposure to %s" % rng.pick(RISKS),
        "Raise on-time delivery to %.1f%%" % (rng.between(950, 990) / 10),
        {"text": "Grow %s revenue by %d%%" % (product, rng.between(4, 15)), "items": [
            "Through %s" % rng.pick(DRIVERS), "Through %s" % rng.pick(DRIVERS)]},
        "Review the site plan with %s in %s" % (rng.pick(PEOPLE), rng.pick(MONTHS)),
    ]})
    blocks.append({"type": "heading", "level": 2, "text": "%s: outlook" % site})
    for _ in range(3):
        blocks.append({"type": "paragraph", "align": "justify",
                       "text": paragraph(rng, site, product, rng.between(4, 6))})
    return blocks


def build(sites=SITES, edition=None):
    """The report over sites; edition (e.g. "PDF edition") goes into the subject."""
    rng = XorShift(0x4C4F4E47)  # "LONG"
    blocks = [
        {"type": "heading", "level": 1, "text": "Regional operations review 2026"},
        {"type": "paragraph", "runs": [
            {"text": "This review covers all "}, {"text": "%d sites" % len(sites), "bold": True},
            {"text": " of Northwind Components. Each chapter gives the site's results, its "
                     "largest orders, the issues of the year and the actions for 2027. "},
            {"text": "Figures are unaudited.", "italic": True}]},
        {"type": "toc", "title": "Contents", "levels": 2},
        {"type": "page_break"},
    ]
    for n, (site, country, product) in enumerate(sites):
        blocks += chapter(rng, n, site, country, product)
        blocks.append({"type": "page_break"})
    blocks += [
        {"type": "heading", "level": 1, "text": "Appendix: method"},
        {"type": "paragraph", "text": "Revenue is recognised on delivery. Site figures come "
                                      "from the ledger with this query:"},
        {"type": "code", "language": "sql",
         "text": "SELECT site, date_trunc('month', delivered_at) AS month,\n"
                 "       COUNT(*) AS orders, SUM(amount) AS revenue\n"
                 "FROM ledger_2026\nGROUP BY site, month\nORDER BY site, month;"},
        {"type": "quote", "text": "Every figure in this review can be traced to a ledger entry.",
         "attribution": "Finance and Operations"},
    ]
    return {
        "version": 1,
        "metadata": {"title": "Regional operations review 2026", "author": "Finance and Operations",
                     "subject": "Site by site results, 2026" + (", " + edition if edition else ""),
                     "company": "Northwind Components",
                     "keywords": ["operations", "sites", "2026"], "created": "2026-12-10T09:00:00Z"},
        "page": {"size": "A4", "margins": {"top": "25mm", "bottom": "25mm", "left": "25mm",
                                           "right": "25mm"},
                 "header": "Northwind Components \u00b7 Regional operations review 2026"},
        "blocks": blocks,
    }


def stale(path):
    if not os.path.exists(path):
        return True
    return os.path.getmtime(path) < os.path.getmtime(os.path.abspath(__file__))


def write_one(path, spec_fn, force):
    if not force and not stale(path):
        return False
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(spec_fn(), f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)
    return True


def write(path=LONG_REPORT, force=False, pdf_path=None):
    """Write the spec (and the PDF edition beside it, samples/data/long_report_pdf.json
    by default) when missing or older than this script; returns True when the first
    was written."""
    if pdf_path is None:
        pdf_path = os.path.join(os.path.dirname(path), "long_report_pdf.json")
    wrote = write_one(path, build, force)
    write_one(pdf_path, lambda: build(SITES + MORE_SITES, "PDF edition"), force)
    return wrote


def main(argv):
    force = "--force" in argv[1:]
    for path, fn in ((LONG_REPORT, build),
                     (LONG_REPORT_PDF, lambda: build(SITES + MORE_SITES, "PDF edition"))):
        if write_one(path, fn, force):
            print("make_long_report: wrote %s" % os.path.relpath(path))
        else:
            print("make_long_report: %s is up to date" % os.path.relpath(path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
