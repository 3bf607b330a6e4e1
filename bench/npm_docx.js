#!/usr/bin/env node
// npm `docx` baseline for the .docx benchmark (bench/README.md).
//
//     node bench/npm_docx.js SPEC.json OUT.docx
//
// Writes the workload of bench/docx_workload.py from the same Kiln spec with the
// npm docx package (pinned in bench/package.json, installed into bench/node_modules
// by `make bench`): Heading 1 paragraphs, runs with bold/italic, bulleted lists, a
// table whose header row is bold, shaded and repeated on each page with rows that
// do not split (the same table Kiln writes), and pictures at the spec's width.
"use strict";

const fs = require("fs");
const path = require("path");

let docx;
try {
    docx = require(path.join(__dirname, "node_modules", "docx"));
} catch (e) {
    process.stderr.write("npm_docx.js: the docx package is not installed: npm ci --prefix bench\n");
    process.exit(2);
}
const { Document, Packer, Paragraph, TextRun, HeadingLevel, Table, TableRow, TableCell,
        ImageRun, ShadingType, WidthType } = docx;

const HEADER_FILL = "1F4E79";
const PX_PER_PT = 96 / 72;

// The cell texts Kiln shows for these column types (bench/docx_workload.py cell_text).
function cellText(value, kind) {
    if (kind === "integer")
        return value.toLocaleString("en-US");
    if (kind === "currency")
        return "$" + value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    if (kind === "percent")
        return (value * 100).toFixed(1) + "%";
    return String(value);
}

function pngSize(data) {
    return { width: data.readUInt32BE(16), height: data.readUInt32BE(20) };
}

function table(block) {
    const kinds = block.columns.map((c) => c.type);
    const header = new TableRow({
        tableHeader: true,
        cantSplit: true,
        children: block.columns.map((c) => new TableCell({
            shading: { type: ShadingType.CLEAR, color: "auto", fill: HEADER_FILL },
            children: [new Paragraph({ children: [new TextRun({ text: c.header, bold: true })] })],
        })),
    });
    const rows = block.rows.map((values) => new TableRow({
        cantSplit: true,
        children: values.map((v, i) => new TableCell({
            children: [new Paragraph(cellText(v, kinds[i]))],
        })),
    }));
    return new Table({ width: { size: 100, type: WidthType.PERCENTAGE }, rows: [header, ...rows] });
}

function main(specPath, outPath) {
    const spec = JSON.parse(fs.readFileSync(specPath, "utf8"));
    const base = path.dirname(path.resolve(specPath));
    const children = [];
    for (const b of spec.blocks) {
        if (b.type === "heading") {
            children.push(new Paragraph({ text: b.text, heading: HeadingLevel.HEADING_1 }));
        } else if (b.type === "paragraph") {
            children.push(new Paragraph({
                children: b.runs.map((r) => new TextRun({ text: r.text, bold: !!r.bold, italics: !!r.italic })),
            }));
        } else if (b.type === "list") {
            for (const item of b.items)
                children.push(new Paragraph({ text: item, bullet: { level: 0 } }));
        } else if (b.type === "table") {
            children.push(table(b));
        } else if (b.type === "image") {
            const data = fs.readFileSync(path.join(base, b.image.path));
            const size = pngSize(data);
            const width = Math.round(b.width * PX_PER_PT);
            children.push(new Paragraph({
                children: [new ImageRun({
                    type: "png", data,
                    transformation: { width, height: Math.round(width * size.height / size.width) },
                    altText: { name: b.image.alt, description: b.image.alt, title: b.image.alt },
                })],
            }));
        } else {
            throw new Error("npm_docx.js: block type " + b.type + " is not in the workload");
        }
    }
    const doc = new Document({
        creator: spec.metadata.author,
        title: spec.metadata.title,
        sections: [{ children }],
    });
    return Packer.toBuffer(doc).then((buf) => fs.writeFileSync(outPath, buf));
}

if (process.argv.length !== 4) {
    process.stderr.write("usage: node bench/npm_docx.js SPEC.json OUT.docx\n");
    process.exit(2);
}
main(process.argv[2], process.argv[3]).catch((e) => {
    process.stderr.write(String(e && e.stack || e) + "\n");
    process.exit(1);
});
