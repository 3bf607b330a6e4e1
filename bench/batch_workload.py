"""The batch (mail merge) benchmark's workload (bench/README.md, "batch"), shared by
bench/batch_bench.py, bench/py_reportlab_invoices.py and bench/npm_docxtemplater.js.

N invoices (default 10,000), one per JSON Lines row, from a seeded generator (no clock,
the same values on every machine):

  invoice_id   "INV-000123"
  customer     {"name", "customer_id", "address1", "address2"}  (a nested object:
               the Kiln template reads it as {{customer.name}} ...)
  date, due    ISO dates
  currency     "USD" (Kiln's currency columns show $#,##0.00)
  items        5 to 15 line items, each [description, qty (integer),
               unit price (2 decimals), amount (qty x unit price)]
  subtotal, tax (20 %), total   computed in integer cents, so every tool shows the same

From it, into one directory:

  invoices_N.jsonl      the rows, for `kiln batch --data` and for ReportLab
  invoice.json          the Kiln template spec: a seller / bill-to table, a title, a
                        paragraph of dates, the line-item table ("rows": "{{items}}",
                        typed columns: integer qty, currency prices) and a totals table;
                        one A4 page, no page-number footer (the baselines write none)
  invoices_dt_N.jsonl   the same rows as docxtemplater needs them: flat fields (its
                        default parser has no a.b paths), items as objects, numbers
                        already formatted as Kiln shows them ("1,234", "$1,234.50"),
                        since docxtemplater formats nothing itself
  invoice_dt.docx       the docxtemplater template (python-docx): the same layout, with
                        {invoice_id}, a {#items}...{/items} loop over one table row and
                        the totals, each tag in a single run so Word's run splitting
                        cannot break it
  invoice_carbone.docx  the same template with Carbone's tags ({d.invoice_id},
                        {d.items[i].qty} rows), made only when asked
"""
import json
import os
import random

DATA_VERSION = 1       # bump when the generator changes, to regenerate the files
SEED = 20261130
TAX_RATE_PCT = 20

SELLER = ["Northwind Components Ltd", "14 Harbour Road", "Bristol BS1 4QA, United Kingdom",
          "VAT GB 123 4567 89"]
FIRST = ["Ada", "Bruno", "Chiara", "Dmitri", "Elif", "Farah", "Gustav", "Hana", "Ines",
         "Jonas", "Kofi", "Lena", "Mateo", "Noor", "Olga", "Pablo", "Rosa", "Sven", "Tariq",
         "Wen", "Yara", "Zoe"]
LAST = ["Andersen", "Baptiste", "Castellanos", "Dubois", "Eriksson", "Fujimoto", "García",
        "Horvath", "Ivanova", "Jørgensen", "Kowalski", "Lindqvist", "Müller", "Nakamura",
        "Okonkwo", "Petrović", "Rossi", "Schmidt", "Takahashi"]
COMPANY = ["Trading", "Supplies", "Engineering", "Logistics", "Studio", "Partners", "Labs"]
STREETS = ["Market Street", "Station Road", "Mill Lane", "Church Street", "Park Avenue",
           "Victoria Road", "King Street", "Bridge Street"]
CITIES = ["Leeds LS1 2AB", "Cardiff CF10 1EP", "Glasgow G1 3SL", "York YO1 7HH",
          "Norwich NR2 1NE", "Bath BA1 1LT", "Exeter EX1 1HB", "Derby DE1 2QY"]
PRODUCTS = ["Control hub", "Sensor kit", "Cable pack", "Enclosure", "Power supply",
            "Mounting bracket", "Relay module", "Display panel", "Spare fuse set",
            "Installation service", "Annual support plan", "Firmware licence",
            "Training day", "Site survey", "Calibration kit"]
VARIANTS = ["standard", "pro", "IP67", "24 V", "rack mount", "outdoor", "mini", "2 m"]
MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def iso(day_of_year):
    """2026's day_of_year (0-based, may run into 2027) as an ISO date."""
    year = 2026
    while day_of_year >= 365:
        day_of_year -= 365
        year += 1
    month = 0
    while day_of_year >= MONTH_DAYS[month]:
        day_of_year -= MONTH_DAYS[month]
        month += 1
    return "%04d-%02d-%02d" % (year, month + 1, day_of_year + 1)


def cents(c):
    return c / 100


def generate_rows(n):
    """The invoices, one dict at a time."""
    rng = random.Random(SEED)
    for i in range(1, n + 1):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        if rng.random() < 0.4:
            name = "%s %s %s" % (last, rng.choice(COMPANY), rng.choice(["Ltd", "LLP", "plc"]))
        else:
            name = "%s %s" % (first, last)
        day = rng.randrange(330)
        items, subtotal = [], 0
        for _ in range(rng.randint(5, 15)):
            if rng.random() < 0.3:                      # consumables: many, cheap
                qty, unit = rng.randint(10, 250), rng.randrange(50, 5000)
            else:                                       # cents: 15.00 .. 2,499.99
                qty, unit = rng.randint(1, 12), rng.randrange(1500, 250000)
            amount = qty * unit
            subtotal += amount
            items.append(["%s, %s" % (rng.choice(PRODUCTS), rng.choice(VARIANTS)), qty,
                          cents(unit), cents(amount)])
        tax = (subtotal * TAX_RATE_PCT + 50) // 100
        yield {
            "invoice_id": "INV-%06d" % i,
            "customer": {"name": name, "customer_id": "C-%05d" % rng.randrange(100000),
                         "address1": "%d %s" % (rng.randint(1, 240), rng.choice(STREETS)),
                         "address2": rng.choice(CITIES)},
            "date": iso(day),
            "due": iso(day + 30),
            "currency": "USD",
            "items": items,
            "subtotal": cents(subtotal),
            "tax": cents(tax),
            "total": cents(subtotal + tax),
        }


# ------------------------------------------------------------------ how Kiln shows numbers


def fmt_integer(v):
    """Kiln's integer format, #,##0."""
    return "{:,}".format(v)


def fmt_currency(v):
    """Kiln's currency format, $#,##0.00 (no negative amounts occur here)."""
    return "${:,.2f}".format(v)


# ------------------------------------------------------------------ the Kiln template


def kiln_template():
    """The template spec: strings with {{field}} placeholders (docs/spec.md, blocks)."""
    return {
        "version": 1,
        "metadata": {"title": "Invoice {{invoice_id}}", "author": SELLER[0],
                     "subject": "Invoice for {{customer.name}}",
                     "created": "{{date}}"},
        "page": {"size": "A4", "page_numbers": False,
                 "margins": {"top": 54, "bottom": 54, "left": 60, "right": 60}},
        "blocks": [
            {"type": "table", "name": "Parties",
             "columns": [{"header": "From", "width": 40}, {"header": "Bill to", "width": 40}],
             "rows": [[SELLER[0], "{{customer.name}}"],
                      [SELLER[1], "{{customer.address1}}"],
                      [SELLER[2], "{{customer.address2}}"],
                      [SELLER[3], "Customer {{customer.customer_id}}"]]},
            {"type": "heading", "level": 1, "text": "Invoice {{invoice_id}}"},
            {"type": "paragraph",
             "text": "Date: {{date}}    Due: {{due}}    Currency: {{currency}}"},
            {"type": "table", "name": "Items",
             "columns": [{"header": "Description", "width": 40},
                         {"header": "Qty", "type": "integer", "width": 8},
                         {"header": "Unit price", "type": "currency", "width": 14},
                         {"header": "Amount", "type": "currency", "width": 14}],
             "rows": "{{items}}"},
            {"type": "table", "name": "Totals", "header": False,
             "columns": [{"header": "Total", "width": 20},
                         {"header": "Amount", "type": "currency", "width": 14}],
             "rows": [["Subtotal", "{{subtotal}}"],
                      ["Tax (%d%%)" % TAX_RATE_PCT, "{{tax}}"],
                      ["Total due", "{{total}}"]]},
            {"type": "paragraph",
             "text": "Payment within 30 days to Northwind Components Ltd, sort code 12-34-56, "
                     "account 12345678, quoting {{invoice_id}}."},
        ],
    }


# ------------------------------------------------------------------ docxtemplater's data


def dt_row(row):
    """One row as docxtemplater's default parser wants it: flat, items as objects, numbers
    formatted already (as Kiln formats its typed cells)."""
    c = row["customer"]
    return {
        "invoice_id": row["invoice_id"], "customer_name": c["name"],
        "customer_id": c["customer_id"], "address1": c["address1"], "address2": c["address2"],
        "date": row["date"], "due": row["due"], "currency": row["currency"],
        "items": [{"description": d, "qty": fmt_integer(q), "unit_price": fmt_currency(u),
                   "amount": fmt_currency(a)} for d, q, u, a in row["items"]],
        "subtotal": fmt_currency(row["subtotal"]), "tax": fmt_currency(row["tax"]),
        "total": fmt_currency(row["total"]),
    }


# ------------------------------------------------------------------ the docx templates

DT_TAGS = {
    "name": "{customer_name}", "address1": "{address1}", "address2": "{address2}",
    "customer_id": "{customer_id}", "invoice_id": "{invoice_id}", "date": "{date}",
    "due": "{due}", "currency": "{currency}",
    "item": ["{#items}{description}", "{qty}", "{unit_price}", "{amount}{/items}"],
    "subtotal": "{subtotal}", "tax": "{tax}", "total": "{total}",
}
# Carbone: {d.x}; a repeated table row is marked by [i] on one row and [i+1] on the next
CARBONE_TAGS = {
    "name": "{d.customer_name}", "address1": "{d.address1}", "address2": "{d.address2}",
    "customer_id": "{d.customer_id}", "invoice_id": "{d.invoice_id}", "date": "{d.date}",
    "due": "{d.due}", "currency": "{d.currency}",
    "item": ["{d.items[i].description}", "{d.items[i].qty}", "{d.items[i].unit_price}",
             "{d.items[i].amount}"],
    "item_next": ["{d.items[i+1].description}", "", "", ""],
    "subtotal": "{d.subtotal}", "tax": "{d.tax}", "total": "{d.total}",
}


def write_docx_template(path, tags):
    """The invoice as a .docx template (python-docx), with the given tag spellings."""
    from docx import Document
    from docx.enum.table import WD_TABLE_ALIGNMENT
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.shared import Pt

    doc = Document()
    sec = doc.sections[0]
    sec.page_width, sec.page_height = Pt(595.28), Pt(841.89)
    sec.top_margin = sec.bottom_margin = Pt(54)
    sec.left_margin = sec.right_margin = Pt(60)

    def cell(c, text, bold=False, right=False):
        p = c.paragraphs[0]
        run = p.add_run(text)   # one run per tag: docxtemplater and Carbone see it whole
        run.bold = bold
        if right:
            p.alignment = WD_ALIGN_PARAGRAPH.RIGHT

    parties = doc.add_table(rows=5, cols=2)
    parties.style = "Table Grid"
    cell(parties.cell(0, 0), "From", bold=True)
    cell(parties.cell(0, 1), "Bill to", bold=True)
    for r, (mine, theirs) in enumerate(zip(SELLER, [tags["name"], tags["address1"],
                                                    tags["address2"],
                                                    "Customer " + tags["customer_id"]]), 1):
        cell(parties.cell(r, 0), mine)
        cell(parties.cell(r, 1), theirs)

    doc.add_heading("Invoice " + tags["invoice_id"], level=1)
    doc.add_paragraph("Date: %s    Due: %s    Currency: %s"
                      % (tags["date"], tags["due"], tags["currency"]))

    rows = 3 if "item_next" in tags else 2
    items = doc.add_table(rows=rows, cols=4)
    items.style = "Table Grid"
    for j, h in enumerate(["Description", "Qty", "Unit price", "Amount"]):
        cell(items.cell(0, j), h, bold=True, right=j > 0)
    for j, t in enumerate(tags["item"]):
        cell(items.cell(1, j), t, right=j > 0)
    if "item_next" in tags:
        for j, t in enumerate(tags["item_next"]):
            cell(items.cell(2, j), t, right=j > 0)

    doc.add_paragraph()
    totals = doc.add_table(rows=3, cols=2)
    totals.style = "Table Grid"
    totals.alignment = WD_TABLE_ALIGNMENT.RIGHT
    for r, (label, tag) in enumerate([("Subtotal", tags["subtotal"]),
                                      ("Tax (%d%%)" % TAX_RATE_PCT, tags["tax"]),
                                      ("Total due", tags["total"])]):
        cell(totals.cell(r, 0), label, bold=r == 2)
        cell(totals.cell(r, 1), tag, bold=r == 2, right=True)
    doc.add_paragraph("Payment within 30 days to Northwind Components Ltd, sort code 12-34-56, "
                      "account 12345678, quoting %s." % tags["invoice_id"])
    doc.save(path)


# ------------------------------------------------------------------ the files


def files(out, n):
    return {
        "jsonl": os.path.join(out, "invoices_%d.jsonl" % n),
        "dt_jsonl": os.path.join(out, "invoices_dt_%d.jsonl" % n),
        "template": os.path.join(out, "invoice.json"),
        "dt_template": os.path.join(out, "invoice_dt.docx"),
        "carbone_template": os.path.join(out, "invoice_carbone.docx"),
    }


def generate(out, sizes):
    """Write the template files and, for each n in sizes, the first n invoices; unless an
    identical earlier run left them. Returns {n: files}."""
    os.makedirs(out, exist_ok=True)
    stamp = os.path.join(out, "stamp.json")
    want = {"version": DATA_VERSION, "sizes": sorted(sizes)}
    got = {n: files(out, n) for n in sizes}
    try:
        with open(stamp, encoding="utf-8") as f:
            have = json.load(f)
    except (OSError, ValueError):
        have = None
    if have == want and all(os.path.exists(p) for fs in got.values() for p in fs.values()):
        print("bench: batch data in %s is current" % out)
        return got

    print("bench: generating %s invoices into %s ..."
          % (" and ".join("{:,}".format(n) for n in sorted(sizes)), out), flush=True)
    top = max(sizes)
    outs = {n: (open(got[n]["jsonl"], "w", encoding="utf-8"),
                open(got[n]["dt_jsonl"], "w", encoding="utf-8")) for n in sizes}
    try:
        for i, row in enumerate(generate_rows(top), 1):
            line = json.dumps(row, ensure_ascii=False) + "\n"
            dt_line = json.dumps(dt_row(row), ensure_ascii=False) + "\n"
            for n, (k, d) in outs.items():
                if i <= n:
                    k.write(line)
                    d.write(dt_line)
    finally:
        for k, d in outs.values():
            k.close()
            d.close()
    any_files = next(iter(got.values()))
    with open(any_files["template"], "w", encoding="utf-8") as f:
        json.dump(kiln_template(), f, indent=1, ensure_ascii=False)
    write_docx_template(any_files["dt_template"], DT_TAGS)
    write_docx_template(any_files["carbone_template"], CARBONE_TAGS)
    with open(stamp, "w", encoding="utf-8") as f:
        json.dump(want, f)
    return got


def read_rows(path, limit=None):
    """The rows of a JSON Lines file (at most limit)."""
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if limit is not None and i >= limit:
                return
            yield json.loads(line)
