#!/usr/bin/env node
// npm `pptxgenjs` baseline for the .pptx benchmark (bench/README.md).
//
//     node bench/npm_pptx.js DECK.json OUT.pptx [--store]
//
// Draws the deck of bench/pptx_workload.py from pptx_npm.json (the same text as the
// Kiln spec pptx_spec.json, with the table cells already formatted as Kiln shows them
// and each image's box already fitted) with the pptxgenjs package (pinned in
// bench/package.json, installed into bench/node_modules by `make bench`): a 16:9
// LAYOUT_WIDE deck, on each slide a title text box and a bulleted text box, a table
// (bold white header on the accent fill, numbers right-aligned) or an image, and the
// slide number. The package is compressed with DEFLATE as Kiln's is (pptxgenjs stores
// its parts uncompressed by default; --store times that).
"use strict";

const fs = require("fs");
const path = require("path");

let PptxGenJS;
try {
    PptxGenJS = require(path.join(__dirname, "node_modules", "pptxgenjs"));
} catch (e) {
    process.stderr.write("npm_pptx.js: the pptxgenjs package is not installed: npm ci --prefix bench\n");
    process.exit(2);
}

const HEADER_FILL = "1F4E79";
const FONT = "Calibri";

function box(b) {
    return { x: b[0], y: b[1], w: b[2], h: b[3] };
}

function table(slide, t, body) {
    const header = t.header.map((h) => ({
        text: h,
        options: { bold: true, color: "FFFFFF", fill: { color: HEADER_FILL } },
    }));
    const rows = t.rows.map((row) => row.map((v, i) => ({ text: v, options: { align: t.align[i] } })));
    slide.addTable([header, ...rows], {
        x: body.x, y: body.y, w: body.w,
        colW: t.header.map(() => body.w / t.header.length),
        fontFace: FONT, fontSize: 14,
        border: { type: "solid", pt: 1, color: "FFFFFF" },
        fill: { color: "E9EBF5" },
        autoPage: false,
    });
}

function main(deckPath, outPath, compression) {
    const deck = JSON.parse(fs.readFileSync(deckPath, "utf8"));
    const base = path.dirname(path.resolve(deckPath));
    const titleBox = box(deck.title_box);
    const bodyBox = box(deck.body_box);
    const pptx = new PptxGenJS();
    pptx.layout = "LAYOUT_WIDE";
    pptx.author = deck.author;
    pptx.title = deck.title;
    for (const s of deck.slides) {
        const slide = pptx.addSlide();
        slide.addText(s.title, { ...titleBox, fontFace: FONT, fontSize: 40, valign: "middle" });
        if (s.bullets) {
            slide.addText(s.bullets.map((text) => ({ text, options: { bullet: true, breakLine: true } })),
                          { ...bodyBox, fontFace: FONT, fontSize: 24, valign: "top" });
        } else if (s.table) {
            table(slide, s.table, bodyBox);
        } else if (s.image) {
            const im = s.image;
            slide.addImage({ path: path.join(base, im.path), x: im.x, y: im.y, w: im.w, h: im.h,
                             altText: im.alt });
        } else {
            throw new Error("npm_pptx.js: a slide with neither bullets, a table nor an image");
        }
        slide.slideNumber = { x: 9.8, y: 6.95, w: 2.6, h: 0.4, fontFace: FONT, fontSize: 12,
                              align: "right" };
    }
    // pptxgenjs 4.0.1 ignores `compression` in write() and writeFile() (it passes it to
    // JSZip only for the STREAM and browser outputs), so stream() is the way to DEFLATE.
    const out = compression ? pptx.stream({ compression: true })
                            : pptx.write({ outputType: "nodebuffer" });
    return out.then((buf) => fs.writeFileSync(outPath, buf));
}

const args = process.argv.slice(2);
const store = args.includes("--store");
const files = args.filter((a) => a !== "--store");
if (files.length !== 2) {
    process.stderr.write("usage: node bench/npm_pptx.js DECK.json OUT.pptx [--store]\n");
    process.exit(2);
}
main(files[0], files[1], !store).catch((e) => {
    process.stderr.write(String(e && e.stack || e) + "\n");
    process.exit(1);
});
