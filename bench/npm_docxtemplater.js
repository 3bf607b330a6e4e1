#!/usr/bin/env node
// docxtemplater baseline for the batch benchmark (bench/README.md, "batch").
//
//     node bench/npm_docxtemplater.js TEMPLATE.docx ROWS.jsonl OUTDIR [LIMIT]
//
// The loop a docxtemplater user writes for a mail merge, in one Node process: the
// template file is read once; for each JSON Lines row (bench/batch_workload.py's
// invoices_dt_N.jsonl: flat fields, items as objects, numbers formatted already), a
// PizZip over the template's bytes (docxtemplater changes the zip it renders into, so
// each document needs its own), render, generate with DEFLATE and write
// OUTDIR/<invoice_id>.docx. Rows are streamed, not read whole. Prints the count on stdout.
// docxtemplater and pizzip are pinned in bench/package.json (npm ci --prefix bench).
"use strict";
const fs = require("fs");
const path = require("path");
const readline = require("readline");
const PizZip = require("pizzip");
const Docxtemplater = require("docxtemplater");

async function main() {
  const [template, data, outdir, limitArg] = process.argv.slice(2);
  if (!outdir) {
    process.stderr.write("usage: npm_docxtemplater.js TEMPLATE.docx ROWS.jsonl OUTDIR [LIMIT]\n");
    process.exit(2);
  }
  const limit = limitArg ? parseInt(limitArg, 10) : Infinity;
  const content = fs.readFileSync(template);
  fs.mkdirSync(outdir, { recursive: true });
  const lines = readline.createInterface({ input: fs.createReadStream(data), crlfDelay: Infinity });
  let n = 0;
  for await (const line of lines) {
    if (n >= limit) break;
    if (!line.trim()) continue;
    const row = JSON.parse(line);
    const doc = new Docxtemplater(new PizZip(content), { paragraphLoop: true, linebreaks: true });
    doc.render(row);
    const buf = doc.getZip().generate({ type: "nodebuffer", compression: "DEFLATE" });
    fs.writeFileSync(path.join(outdir, row.invoice_id + ".docx"), buf);
    n++;
  }
  lines.close();
  process.stdout.write(n + "\n");
}

main().catch((e) => {
  process.stderr.write("npm_docxtemplater.js: " + (e.stack || e) + "\n");
  process.exit(1);
});
