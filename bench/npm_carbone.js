#!/usr/bin/env node
// Carbone baseline for the batch benchmark (bench/README.md, "batch").
//
//     node bench/npm_carbone.js TEMPLATE.docx ROWS.jsonl OUTDIR [LIMIT]
//
// Carbone's mail merge loop in one Node process, docx in and docx out: with no
// convertTo option Carbone needs no LibreOffice (it is only started for format
// conversion, e.g. to PDF). For each JSON Lines row (the same flat rows as
// docxtemplater's, invoices_dt_N.jsonl), carbone.render(template, row) and write
// OUTDIR/<invoice_id>.docx; one render at a time. The template
// (invoice_carbone.docx) uses Carbone's tags: {d.invoice_id}, and a table row
// {d.items[i].description} ... followed by a {d.items[i+1].description} row, which
// Carbone's repetition turns into one row per item. Prints the count on stdout.
// carbone is pinned in bench/package.json (npm ci --prefix bench); its licence is the
// Carbone Community License (source-available), which allows this use.
"use strict";
const fs = require("fs");
const path = require("path");
const readline = require("readline");
const carbone = require("carbone");

function render(template, row) {
  return new Promise((resolve, reject) => {
    carbone.render(template, row, {}, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

async function main() {
  const [template, data, outdir, limitArg] = process.argv.slice(2);
  if (!outdir) {
    process.stderr.write("usage: npm_carbone.js TEMPLATE.docx ROWS.jsonl OUTDIR [LIMIT]\n");
    process.exit(2);
  }
  const limit = limitArg ? parseInt(limitArg, 10) : Infinity;
  fs.mkdirSync(outdir, { recursive: true });
  const lines = readline.createInterface({ input: fs.createReadStream(data), crlfDelay: Infinity });
  let n = 0;
  for await (const line of lines) {
    if (n >= limit) break;
    if (!line.trim()) continue;
    const row = JSON.parse(line);
    const buf = await render(path.resolve(template), row);
    fs.writeFileSync(path.join(outdir, row.invoice_id + ".docx"), buf);
    n++;
  }
  lines.close();
  process.stdout.write(n + "\n");
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write("npm_carbone.js: " + (e.stack || e) + "\n");
    process.exit(1);
  },
);
