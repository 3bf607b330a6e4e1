#!/usr/bin/python3
"""Generate the data files the samples read (samples/data/*, not in git).

    /usr/bin/python3 samples/make_data.py [--force]

Writes samples/data/export_200k.csv (200,000 orders, 10 columns, for
samples/export_200k.json) when it is missing or stale: older than this script
or not holding the expected number of lines; and samples/data/long_report.json,
the long report, and its PDF edition samples/data/long_report_pdf.json
(samples/make_long_report.py), and the 150-slide deck samples/data/deck_150.json
(samples/make_deck.py), when they are missing or older than their generator. The content is deterministic: the same bytes on every machine and
every run (a fixed xorshift generator, no `random`, no clock). Standard library
only; takes about a second.
"""
import csv
import datetime
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
EXPORT = os.path.join(DATA, "export_200k.csv")
EXPORT_ROWS = 200_000

HEADER = ["id", "order_date", "shipped_at", "customer", "region", "sku",
          "quantity", "unit_price", "discount", "amount"]

FIRST = ["Acme", "Blue Ridge", "Cedar", "Delta", "Evergreen", "Falcon", "Granite", "Harbor",
         "Iron Gate", "Juniper", "Keystone", "Lakeside", "Meridian", "Northwind", "Oakmont",
         "Pioneer", "Quarry", "Redwood", "Summit", "Tidewater", "Union", "Vanguard",
         "Westfield", "Yellowstone", "Zenith"]
SECOND = ["Analytics", "Bakery", "Builders", "Clinic", "Consulting", "Dental", "Foods",
          "Freight", "Hardware", "Holdings", "Labs", "Logistics", "Media", "Motors", "Outfitters",
          "Partners", "Pharmacy", "Robotics", "Studios", "Supply"]
SUFFIX = ["Inc.", "LLC", "Ltd", "GmbH", "Co.", "& Sons"]
# A few names that need CSV quoting (comma, double quote), as real exports have.
ODD = ['Smith, Jones & Partners', 'The "Corner" Shop', 'Müller Bäckerei, Köln', 'O\'Brien & Daughters']
REGIONS = ["North", "South", "East", "West", "Central"]
DISCOUNTS = ["0", "0", "0", "0.05", "0.05", "0.1", "0.15"]
START = datetime.date(2024, 1, 1)
DAYS = 731  # 2024-01-01 .. 2025-12-31


class XorShift:
    """xorshift64*: tiny, fast, and the same everywhere."""

    def __init__(self, seed):
        self.s = seed & 0xFFFFFFFFFFFFFFFF or 1

    def next(self):
        x = self.s
        x ^= (x >> 12)
        x ^= (x << 25) & 0xFFFFFFFFFFFFFFFF
        x ^= (x >> 27)
        self.s = x
        return ((x * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF) >> 11

    def below(self, n):
        return self.next() % n


def write_export(path):
    rng = XorShift(0x4B494C4E)  # "KILN"
    prices = [round(4.99 + 7.5 * k, 2) for k in range(40)]  # 40 products
    tmp = path + ".tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\r\n")  # RFC 4180 line ends
        w.writerow(HEADER)
        for i in range(1, EXPORT_ROWS + 1):
            day = START + datetime.timedelta(days=(i - 1) * DAYS // EXPORT_ROWS)
            r = rng.below(1000)
            if r < 4:
                customer = ODD[r]
            else:
                customer = "%s %s %s" % (FIRST[rng.below(len(FIRST))],
                                         SECOND[rng.below(len(SECOND))],
                                         SUFFIX[rng.below(len(SUFFIX))])
            product = rng.below(len(prices))
            sku = "%06d" % ((product + 1) * 1373 % 99991)  # leading zeros: stays text
            qty = 1 + rng.below(24)
            price = prices[product]
            disc = DISCOUNTS[rng.below(len(DISCOUNTS))]
            amount = "%.2f" % round(qty * price * (1 - float(disc)) + 1e-9, 2)
            if rng.below(100) < 3:
                shipped = ""  # not shipped yet: a blank cell
            else:
                lag = 1 + rng.below(5)
                minute = rng.below(10 * 60)  # 08:00 .. 17:59
                shipped = "%sT%02d:%02d:00" % ((day + datetime.timedelta(days=lag)).isoformat(),
                                              8 + minute // 60, minute % 60)
            w.writerow([i, day.isoformat(), shipped, customer, REGIONS[rng.below(5)], sku,
                        qty, "%.2f" % price, disc, amount])
    os.replace(tmp, path)


def line_count(path):
    n = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return n
            n += b.count(b"\n")


def stale(path, lines):
    if not os.path.exists(path):
        return True
    if os.path.getmtime(path) < os.path.getmtime(os.path.abspath(__file__)):
        return True
    return line_count(path) != lines


def main(argv):
    force = "--force" in argv[1:]
    os.makedirs(DATA, exist_ok=True)
    if force or stale(EXPORT, EXPORT_ROWS + 1):
        write_export(EXPORT)
        print("make_data: wrote %s" % os.path.relpath(EXPORT))
    else:
        print("make_data: %s is up to date" % os.path.relpath(EXPORT))
    sys.path.insert(0, HERE)
    import make_deck
    import make_long_report
    return make_long_report.main(argv) or make_deck.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
