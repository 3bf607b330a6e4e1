/*
 * docx_document.c - word/document.xml: the body walk and the block kinds that
 * are paragraphs (docx_internal.h says which file writes the others).
 *
 * Choices, each made to match what Word itself writes:
 *   - Headings use the built-in styles Heading1..6 and keep their text as it
 *     is: the first level-1 heading does not become a Title, and no title is
 *     made up from the metadata. Each heading is wrapped in a hidden
 *     bookmark, _Toc<8 digits>, which the TOC's hyperlinks and PAGEREF fields
 *     point at (ids and names come from docx_collect_headings).
 *   - Runs are docx_runs.c's (shared with the tables, lists and TOC).
 *   - Captions: a table's caption goes above the table (kept with it by
 *     keepNext), a figure's (image or chart) below it and centered like the
 *     drawing, as Word's Insert Caption places them. The number is a SEQ
 *     field whose cached result is filled in. A caption that already starts with its label and a
 * number
 *     ("Table 1: revenue", "Figure 2. Trend") keeps the text as written, with
 *     that number turned into the SEQ field; any other caption gets
 *     "Table N: " / "Figure N: " in front of it.
 *   - Code blocks are one paragraph per line (style Code), empty lines kept;
 *     a single final line feed ends the last line rather than adding one.
 *   - A quote is a Quote paragraph; its attribution a right-aligned Quote
 *     paragraph after it, starting with an em dash.
 *   - A rule is an empty paragraph with a bottom border.
 *   - Two tables in a row would merge into one in Word, and Word wants the
 *     body to end with a paragraph, so an empty paragraph follows a table
 *     that would otherwise touch another table or the section properties.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "docx_internal.h"
#include "../../common/banned.h"

#define NS_W "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
#define NS_WP "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"

/* Header and footer distance from the page edge, and the column spacing:
 * Word's defaults for A4 and Letter (0.49 in). */
#define HEADER_FOOTER_TWIPS 708
#define COLUMN_SPACE_TWIPS 708
#define DOC_GRID_LINE_PITCH 360

/* ---- paragraphs ---- */

static void start_styled_p(opc_xml *x, const char *style)
{
    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:pPr");
    opc_xml_val(x, "w:pStyle", "w:val", style);
    opc_xml_end(x);
}

static void write_paragraph(docx_ctx *c, const kiln_block *b)
{
    opc_xml *x = c->x;
    const char *jc = docx_jc_value(b->align);
    opc_xml_start(x, "w:p");
    if (jc) {
        opc_xml_start(x, "w:pPr");
        opc_xml_val(x, "w:jc", "w:val", jc);
        opc_xml_end(x);
    }
    docx_write_runs(c, &b->text);
    opc_xml_end(x);
}

static void write_heading(docx_ctx *c, const kiln_block *b)
{
    opc_xml *x = c->x;
    int level = b->level < 1 ? 1 : b->level > 6 ? 6 : b->level;
    char style[16];
    snprintf(style, sizeof style, DOCX_STYLE_HEADING "%d", level);

    unsigned bookmark;
    if (c->heading_next < c->heading_count)
        bookmark = c->headings[c->heading_next++].bookmark;
    else
        bookmark = ++c->bookmark_count; /* headings not collected: still unique */
    char name[24];
    snprintf(name, sizeof name, "_Toc%08u", bookmark);

    start_styled_p(x, style);
    opc_xml_start(x, "w:bookmarkStart");
    opc_xml_attr_uint(x, "w:id", bookmark);
    opc_xml_attr(x, "w:name", name);
    opc_xml_end(x);
    docx_write_runs(c, &b->text);
    opc_xml_start(x, "w:bookmarkEnd");
    opc_xml_attr_uint(x, "w:id", bookmark);
    opc_xml_end(x);
    opc_xml_end(x);
}

static void write_code(docx_ctx *c, const kiln_block *b)
{
    opc_xml *x = c->x;
    const char *s = b->code ? b->code : "";
    size_t len = strlen(s);
    if (len > 0 && s[len - 1] == '\n')
        len--;
    if (len > 0 && s[len - 1] == '\r')
        len--;
    const char *end = s + len;
    const char *line = s;
    for (;;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *stop = nl ? nl : end;
        size_t n = (size_t)(stop - line);
        if (n > 0 && line[n - 1] == '\r')
            n--;
        start_styled_p(x, DOCX_STYLE_CODE);
        if (n > 0)
            docx_write_text_run(c, line, n, NULL);
        opc_xml_end(x);
        if (!nl)
            break;
        line = nl + 1;
    }
}

static void write_quote(docx_ctx *c, const kiln_block *b)
{
    opc_xml *x = c->x;
    start_styled_p(x, DOCX_STYLE_QUOTE);
    docx_write_runs(c, &b->text);
    opc_xml_end(x);
    if (!b->attribution || !*b->attribution)
        return;
    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:pPr");
    opc_xml_val(x, "w:pStyle", "w:val", DOCX_STYLE_QUOTE);
    opc_xml_val(x, "w:jc", "w:val", "right");
    opc_xml_end(x);
    /* The attribution goes through the one path for text runs, so its
     * tabs, line feeds and edge spaces survive as in any other text. */
    docx_write_text_run(c, "\xE2\x80\x94 ", 4, NULL); /* em dash, space */
    docx_write_text_run(c, b->attribution, strlen(b->attribution), NULL);
    opc_xml_end(x);
}

static void write_rule(docx_ctx *c)
{
    opc_xml *x = c->x;
    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:pPr");
    opc_xml_start(x, "w:pBdr");
    opc_xml_start(x, "w:bottom");
    opc_xml_attr(x, "w:val", "single");
    opc_xml_attr(x, "w:sz", "6");
    opc_xml_attr(x, "w:space", "1");
    opc_xml_attr(x, "w:color", "auto");
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_end(x);
}

static void write_page_break(docx_ctx *c)
{
    opc_xml *x = c->x;
    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:r");
    opc_xml_start(x, "w:br");
    opc_xml_attr(x, "w:type", "page");
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_end(x);
}

static void write_empty_paragraph(docx_ctx *c)
{
    opc_xml_empty(c->x, "w:p");
}

static void field_char(opc_xml *x, const char *type)
{
    opc_xml_start(x, "w:r");
    opc_xml_start(x, "w:fldChar");
    opc_xml_attr(x, "w:fldCharType", type);
    opc_xml_end(x);
    opc_xml_end(x);
}

/* If text starts with label (any case), spaces and a number, the length of
 * the label and the number's value and end; else 0. */
static size_t caption_prefix(const char *text, const char *label, unsigned *number,
                             size_t *number_end)
{
    size_t n = strlen(label);
    if (strncasecmp(text, label, n) != 0)
        return 0;
    size_t i = n;
    if (text[i] != ' ')
        return 0;
    while (text[i] == ' ')
        i++;
    if (text[i] < '0' || text[i] > '9')
        return 0;
    unsigned long v = 0;
    size_t digits = i;
    while (text[i] >= '0' && text[i] <= '9' && i - digits < 9)
        v = v * 10 + (unsigned long)(text[i++] - '0');
    if (text[i] >= '0' && text[i] <= '9')
        return 0;
    /* "Table 12a" is a name, not a number. */
    if ((text[i] >= 'A' && text[i] <= 'Z') || (text[i] >= 'a' && text[i] <= 'z'))
        return 0;
    *number = (unsigned)v;
    *number_end = i;
    return n;
}

void docx_write_caption(docx_ctx *c, const char *label, unsigned number, const char *text)
{
    opc_xml *x = c->x;
    const char *rest = NULL; /* the text after the number */
    size_t label_len = 0, number_end = 0;
    unsigned shown = number;
    if (text && (label_len = caption_prefix(text, label, &shown, &number_end)) > 0)
        rest = text + number_end;

    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:pPr");
    opc_xml_val(x, "w:pStyle", "w:val", DOCX_STYLE_CAPTION);
    /* A table caption sits above its table: keep them on one page. A figure
     * caption sits below a centered drawing (docx_drawing.c): center it too. */
    if (strcmp(label, "Table") == 0)
        opc_xml_empty(x, "w:keepNext");
    else
        opc_xml_val(x, "w:jc", "w:val", "center");
    opc_xml_end(x);

    opc_xml_start(x, "w:r");
    opc_xml_start(x, "w:t");
    opc_xml_attr(x, "xml:space", "preserve");
    /* the label as the caption spells it, else as given */
    opc_xml_text(x, rest ? text : label, rest ? label_len : strlen(label));
    opc_xml_text(x, " ", 1);
    opc_xml_end(x);
    opc_xml_end(x);

    char instr[48], num[16];
    snprintf(instr, sizeof instr, " SEQ %s \\* ARABIC ", label);
    snprintf(num, sizeof num, "%u", shown);
    field_char(x, "begin");
    opc_xml_start(x, "w:r");
    opc_xml_start(x, "w:instrText");
    opc_xml_attr(x, "xml:space", "preserve");
    opc_xml_text(x, instr, strlen(instr));
    opc_xml_end(x);
    opc_xml_end(x);
    field_char(x, "separate");
    opc_xml_start(x, "w:r");
    opc_xml_element_text(x, "w:t", num);
    opc_xml_end(x);
    field_char(x, "end");

    if (rest) {
        if (*rest)
            docx_write_text_run(c, rest, strlen(rest), NULL);
    } else if (text && *text) {
        opc_xml_start(x, "w:r");
        opc_xml_start(x, "w:t");
        opc_xml_attr(x, "xml:space", "preserve");
        opc_xml_text(x, ": ", 2);
        opc_xml_end(x);
        opc_xml_end(x);
        docx_write_text_run(c, text, strlen(text), NULL);
    }
    opc_xml_end(x);
}

/* ---- section properties ---- */

static int64_t twips(double pt)
{
    return (int64_t)(pt * DOCX_TWIPS_PER_PT + (pt >= 0 ? 0.5 : -0.5));
}

/* Word's 708 twips from the page edge, but no more than half the margin, so
 * that a header or footer in a narrow margin does not push the body text. */
static int64_t hdr_ftr_distance(int64_t margin)
{
    return margin / 2 < HEADER_FOOTER_TWIPS ? margin / 2 : HEADER_FOOTER_TWIPS;
}

static void write_hdr_ftr_ref(opc_xml *x, const char *element, unsigned rid)
{
    opc_xml_start(x, element);
    opc_xml_attr(x, "w:type", "default");
    docx_write_rid(x, "r:id", rid);
    opc_xml_end(x);
}

static void write_sect_pr(docx_ctx *c)
{
    opc_xml *x = c->x;
    const kiln_page *page = &c->doc->page;
    opc_xml_start(x, "w:sectPr");
    if (c->header_rid)
        write_hdr_ftr_ref(x, "w:headerReference", c->header_rid);
    if (c->footer_rid)
        write_hdr_ftr_ref(x, "w:footerReference", c->footer_rid);

    opc_xml_start(x, "w:pgSz");
    opc_xml_attr_int(x, "w:w", twips(page->width_pt));
    opc_xml_attr_int(x, "w:h", twips(page->height_pt));
    if (page->landscape)
        opc_xml_attr(x, "w:orient", "landscape");
    opc_xml_end(x);

    opc_xml_start(x, "w:pgMar");
    opc_xml_attr_int(x, "w:top", twips(page->margin_top));
    opc_xml_attr_int(x, "w:right", twips(page->margin_right));
    opc_xml_attr_int(x, "w:bottom", twips(page->margin_bottom));
    opc_xml_attr_int(x, "w:left", twips(page->margin_left));
    opc_xml_attr_int(x, "w:header", hdr_ftr_distance(twips(page->margin_top)));
    opc_xml_attr_int(x, "w:footer", hdr_ftr_distance(twips(page->margin_bottom)));
    opc_xml_attr_int(x, "w:gutter", 0);
    opc_xml_end(x);

    opc_xml_start(x, "w:cols");
    opc_xml_attr_int(x, "w:space", COLUMN_SPACE_TWIPS);
    opc_xml_end(x);
    opc_xml_start(x, "w:docGrid");
    opc_xml_attr_int(x, "w:linePitch", DOC_GRID_LINE_PITCH);
    opc_xml_end(x);
    opc_xml_end(x);
}

/* ---- the body ---- */

static kiln_status write_block(docx_ctx *c, const kiln_flow_item *item, int *after_table)
{
    const kiln_block *b = item->block;
    kiln_status st = KILN_E_OK;
    int table = 0;

    switch (b->kind) {
    case KILN_BLOCK_HEADING:
        write_heading(c, b);
        break;
    case KILN_BLOCK_PARAGRAPH:
        write_paragraph(c, b);
        break;
    case KILN_BLOCK_LIST:
        st = docx_write_list(c, &b->list, b->pointer);
        break;
    case KILN_BLOCK_TABLE:
        if (!b->table)
            break;
        if (b->table->caption)
            docx_write_caption(c, "Table", ++c->table_count, b->table->caption);
        else if (*after_table)
            write_empty_paragraph(c);
        st = docx_write_table(c, b->table, item->sheet, b->pointer);
        table = 1;
        break;
    case KILN_BLOCK_IMAGE:
        if (!b->image)
            break;
        st = docx_write_image(c, b->image, b->width_pt, b->caption != NULL, b->pointer);
        if (st == KILN_E_OK && b->caption)
            docx_write_caption(c, "Figure", ++c->figure_count, b->caption);
        break;
    case KILN_BLOCK_CHART:
        if (!b->chart)
            break;
        st = docx_write_chart(c, b->chart, item->sheet, b->chart->caption != NULL, b->pointer);
        if (st == KILN_E_OK && b->chart->caption)
            docx_write_caption(c, "Figure", ++c->figure_count, b->chart->caption);
        break;
    case KILN_BLOCK_PAGE_BREAK:
        write_page_break(c);
        break;
    case KILN_BLOCK_TOC:
        st = docx_write_toc(c, b);
        break;
    case KILN_BLOCK_CODE:
        write_code(c, b);
        break;
    case KILN_BLOCK_QUOTE:
        write_quote(c, b);
        break;
    case KILN_BLOCK_RULE:
        write_rule(c);
        break;
    }
    *after_table = table;
    if (st == KILN_E_OK)
        st = c->status;
    return st;
}

/* Whether the root must declare the drawing namespace. */
static int has_drawings(const kiln_flow *flow)
{
    for (size_t i = 0; i < flow->count; i++) {
        const kiln_block *b = flow->items[i].block;
        if ((b->kind == KILN_BLOCK_CHART && b->chart) ||
            (b->kind == KILN_BLOCK_IMAGE && b->image))
            return 1;
    }
    return 0;
}

kiln_status docx_document_write(docx_ctx *c)
{
    kiln_status st;
    opc_xml *x = opc_xml_new();
    if (!x)
        return kiln_error_set(c->err, KILN_E_NOMEM, NULL,
                              "out of memory writing " DOCX_DOCUMENT_PART);
    c->x = x;
    c->status = KILN_E_OK;
    /* Stop as soon as the compressed document can no longer fit. */
    opc_xml_set_ceiling(x, c->pkg, c->out->max_bytes);

    opc_xml_start(x, "w:document");
    opc_xml_attr(x, "xmlns:w", NS_W);
    opc_xml_attr(x, "xmlns:r", OPC_NS_R);
    /* docx_drawing.c declares a:, pic: and c: on the elements that use
     * them, as Word does; wp: comes from here. */
    if (has_drawings(&c->flow))
        opc_xml_attr(x, "xmlns:wp", NS_WP);
    opc_xml_start(x, "w:body");

    int after_table = 0;
    for (size_t i = 0; i < c->flow.count; i++) {
        st = write_block(c, &c->flow.items[i], &after_table);
        if (st != KILN_E_OK) {
            kiln_error_locate(c->err, c->flow.items[i].block->pointer);
            goto fail_discard;
        }
    }
    if (after_table)
        write_empty_paragraph(c);
    write_sect_pr(c);
    opc_xml_end(x); /* w:body */
    opc_xml_end(x); /* w:document */

    c->x = NULL;
    return opc_xml_finish(x, c->pkg, DOCX_DOCUMENT_PART, OPC_CT_DOCX_DOCUMENT, c->err);

fail_discard:
    c->x = NULL;
    opc_xml_free(x);
    return st;
}
