/*
 * pdf_layout.c - the flow: the cursor, and every block but tables, images'
 * pixels and charts' drawing (pages and links are pdf_page.c's).
 *
 * Layout is one forward pass that draws as it goes: a block is measured
 * (its paragraph broken into lines), then placed at the cursor, moving to a
 * new page where it does not fit. What a page cannot know while it is drawn
 * waits for the end: the total page count ("Page X of Y"), the TOC's page
 * numbers and the outline's destinations. The TOC's lines are laid out in
 * place (their number is known from the flow, and a page number never
 * changes how an entry wraps, because the number column is reserved), so
 * filling them in later moves nothing: the second pass is only drawing.
 *
 * Pagination rules, as word processors apply them:
 *   - a heading stays with the start of what follows it (keep with next);
 *   - a paragraph never leaves one line alone at the bottom of a page
 *     (orphan) or at the top of the next (widow);
 *   - space before a block is dropped at the top of a page.
 */
#include "pdf_internal.h"
#include "../layout/list_marker.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "../../common/banned.h"

typedef struct pdf_toc_entry {
    size_t page;     /* where the entry's last line is */
    double baseline; /* of that line */
    double text_end; /* x where that line's text ends (dot leaders start) */
    double top;      /* top of the entry (its first line), for the link */
    size_t top_page; /* page of the first line */
    double x0, x1;   /* horizontal extent */
    size_t heading;  /* index into ctx->headings */
    double size;
    pdf_face *face;
} pdf_toc_entry;

#define HEADING_COLOR_1 0x1F3864
#define HEADING_COLOR 0x2F5496
#define TEXT_COLOR 0x000000
#define MUTED_COLOR 0x595959
#define RULE_COLOR 0xA6A6A6
#define CODE_FILL 0xF5F5F5
#define CODE_BORDER 0xD9D9D9
#define LIST_INDENT 18.0
/* Code is set in the mono face at this share of the body size, its lines
 * this far apart (every line: the face is one). */
#define CODE_SIZE 0.85
#define CODE_LEADING 1.25
#define CODE_PAD 6.0 /* inside the frame, above and below */
#define TOC_NUMBER_WIDTH 36.0

/* Vertical space before a block: none at the top of a page. */
static void space_before(pdf_ctx *ctx, double space)
{
    if (ctx->page && !ctx->page_fresh)
        ctx->y -= space;
    if (ctx->page && ctx->y < ctx->bottom)
        ctx->y = ctx->bottom;
}

static void space_after(pdf_ctx *ctx, double space)
{
    ctx->y -= space;
    if (ctx->y < ctx->bottom)
        ctx->y = ctx->bottom;
}

static void mark_used(pdf_ctx *ctx)
{
    ctx->page_fresh = 0;
}

/* ------------------------------------------------------------------ styles */

static pdf_para_style body_style(const pdf_ctx *ctx)
{
    pdf_para_style st = {ctx->body_family,   0, ctx->body_size, 1.3, TEXT_COLOR,
                         KILN_ALIGN_DEFAULT, 0}; /* left, or right for right-to-left text */
    return st;
}

static double heading_size(const pdf_ctx *ctx, int level)
{
    static const double scale[7] = {1, 1.8, 1.45, 1.25, 1.1, 1.0, 1.0};
    return ctx->body_size * scale[level < 1 ? 1 : level > 6 ? 6 : level];
}

static pdf_para_style heading_style(const pdf_ctx *ctx, int level)
{
    pdf_para_style st = {ctx->heading_family,
                         PDF_STYLE_BOLD,
                         heading_size(ctx, level),
                         1.2,
                         level == 1 ? HEADING_COLOR_1 : HEADING_COLOR,
                         KILN_ALIGN_DEFAULT,
                         0};
    if (level >= 5)
        st.style |= PDF_STYLE_ITALIC;
    return st;
}

/* ------------------------------------------------------------------ paragraphs */

/* How many of the lines from done on go on the current page: as many as
 * fit, less what widow and orphan control moves on. 0 = start a new page. */
static size_t lines_here(const pdf_ctx *ctx, const pdf_para *para, size_t done)
{
    size_t n = para->line_count, fit = 0, rest;
    double room = pdf_space_left(ctx), h = 0;

    while (done + fit < n && h + para->lines[done + fit].height <= room + 0.01) {
        h += para->lines[done + fit].height;
        fit++;
    }
    rest = n - done - fit;
    if (rest > 0) {
        /* widow: never one line alone at the top of the next page */
        if (rest == 1 && fit >= 2)
            fit--;
        /* orphan: never a paragraph's first line alone at the bottom (on an
         * empty page there is nowhere better to go) */
        if (done == 0 && fit == 1 && n > 1 && !ctx->page_fresh)
            fit = 0;
    }
    if (fit == 0 && ctx->page_fresh)
        fit = 1; /* a line taller than a page still has to go somewhere */
    return fit;
}

/* Place a laid-out paragraph at x (its width already set), splitting it
 * across pages with widow and orphan control. */
static kiln_status flow_para(pdf_ctx *ctx, const pdf_para *para, double x)
{
    size_t done = 0, n = para->line_count;
    kiln_status st;

    while (done < n) {
        size_t fit;

        if (!ctx->page && (st = pdf_new_page(ctx)) != KILN_E_OK)
            return st;
        fit = lines_here(ctx, para, done);
        if (fit > 0) {
            st = pdf_para_draw(ctx, para, done, fit, x, ctx->y);
            if (st != KILN_E_OK)
                return st;
            ctx->y -= pdf_para_height(para, done, fit);
            mark_used(ctx);
            done += fit;
        }
        if (done < n && (st = pdf_new_page(ctx)) != KILN_E_OK)
            return st;
    }
    return KILN_E_OK;
}

/* The minimum height that must fit below a heading for it to stay on this
 * page: the start of the next block. */
static double next_start_height(pdf_ctx *ctx, const kiln_flow_item *next)
{
    double line = ctx->body_size * 1.3;
    const kiln_block *b;

    if (!next)
        return 0;
    b = next->block;
    switch (b->kind) {
    case KILN_BLOCK_PARAGRAPH:
    case KILN_BLOCK_QUOTE:
    case KILN_BLOCK_CODE:
    case KILN_BLOCK_LIST:
        return 2 * line;
    case KILN_BLOCK_TABLE:
        /* caption, a header row that may wrap, and the first data row */
        return 5 * line + (b->table && b->table->caption ? 2 * line : 0);
    case KILN_BLOCK_IMAGE:
    case KILN_BLOCK_CHART: {
        /* the whole figure, as it will be placed (an image is scaled to the
         * page; a chart keeps its size up to the page) */
        double w = 0, h = 0, body = ctx->top - ctx->bottom;
        const char *caption = b->kind == KILN_BLOCK_IMAGE ? b->caption
                              : b->chart                  ? b->chart->caption
                                                          : NULL;
        double cap = caption ? ctx->body_size * 0.9 * 1.3 * 2 : 0;
        if (b->kind == KILN_BLOCK_IMAGE && b->image)
            pdf_image_fit(b->image, b->width_pt, ctx->right - ctx->left, body - cap - 12, &w, &h);
        else if (b->chart)
            h = b->chart->height_px * 0.75 * (ctx->slides ? 1.5 : 1);
        if (h > body * 0.85)
            h = body * 0.85;
        return h + cap + ctx->body_size;
    }
    case KILN_BLOCK_HEADING:
        return heading_size(ctx, b->level) * 1.2 + 2 * line;
    default:
        return 0;
    }
}

static char *text_string(pdf_ctx *ctx, const kiln_text *text)
{
    size_t len = 0, at = 0;
    char *s;

    for (size_t i = 0; i < text->run_count; i++)
        len += text->runs[i].len;
    s = kiln_arena_alloc(ctx->arena, len + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < text->run_count; i++) {
        for (size_t k = 0; k < text->runs[i].len; k++) {
            char c = text->runs[i].text[k];
            s[at++] = c == '\n' || c == '\t' || c == '\r' ? ' ' : c;
        }
    }
    s[at] = '\0';
    return s;
}

static kiln_status heading_mark(pdf_ctx *ctx, const kiln_block *b, double top)
{
    pdf_heading_mark *m;

    if (ctx->heading_count == ctx->heading_cap) {
        size_t cap = ctx->heading_cap ? ctx->heading_cap * 2 : 32;
        pdf_heading_mark *h = realloc(ctx->headings, cap * sizeof *h);
        if (!h)
            return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory");
        ctx->headings = h;
        ctx->heading_cap = cap;
    }
    m = &ctx->headings[ctx->heading_count++];
    m->text = text_string(ctx, &b->text);
    if (!m->text)
        return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory");
    m->level = b->level;
    m->page = ctx->page_count - 1;
    m->y = top;
    ctx->flow_heading_count++;
    return KILN_E_OK;
}

static kiln_status layout_heading(pdf_ctx *ctx, const kiln_block *b, const kiln_flow_item *next)
{
    pdf_para_style st = heading_style(ctx, b->level);
    pdf_para para = {0};
    double before = b->level == 1 ? st.size * 1.0 : st.size * 0.9, need;
    kiln_status rc;

    rc = pdf_para_layout(ctx, &b->text, &st, ctx->right - ctx->left, &para);
    if (rc != KILN_E_OK)
        goto release;
    need = pdf_para_height(&para, 0, para.line_count) + st.size * 0.4 +
           next_start_height(ctx, next);
    if (!ctx->page_fresh)
        need += before;
    if ((rc = pdf_ensure_space(ctx, need)) != KILN_E_OK)
        goto release;
    space_before(ctx, before);
    rc = heading_mark(ctx, b, ctx->y + (ctx->page_fresh ? 0 : 4));
    if (rc != KILN_E_OK)
        goto release;
    rc = flow_para(ctx, &para, ctx->left);
    if (rc != KILN_E_OK)
        goto release;
    if (b->level == 1) { /* a thin accent rule under top-level headings */
        HPDF_Page_SetLineWidth(ctx->page, 0.75f);
        pdf_set_stroke(ctx->page, ctx->accent_count ? ctx->accents[0] : HEADING_COLOR);
        HPDF_Page_MoveTo(ctx->page, (HPDF_REAL)ctx->left, (HPDF_REAL)(ctx->y - 2));
        HPDF_Page_LineTo(ctx->page, (HPDF_REAL)ctx->right, (HPDF_REAL)(ctx->y - 2));
        HPDF_Page_Stroke(ctx->page);
    }
    space_after(ctx, st.size * 0.4);
release:
    pdf_para_release(&para);
    return rc;
}

static kiln_status layout_text(pdf_ctx *ctx, const kiln_text *text, pdf_para_style st, double x,
                               double width, double after)
{
    pdf_para para = {0};
    kiln_status rc = pdf_para_layout(ctx, text, &st, width, &para);
    if (rc == KILN_E_OK)
        rc = flow_para(ctx, &para, x);
    pdf_para_release(&para);
    if (rc == KILN_E_OK)
        space_after(ctx, after);
    return rc;
}

/* ------------------------------------------------------------------ lists */

/* A list whose markers hang from left; nested lists hang from their item's
 * text. The hanging indent is wide enough for the list's widest marker
 * ("100000." in a list that starts at 99998), so a marker never runs into
 * its text or out of the margin. */
static kiln_status layout_list(pdf_ctx *ctx, const kiln_list *list, int depth, double left)
{
    pdf_para_style st = body_style(ctx);
    pdf_face *face = pdf_fonts_face(&ctx->fonts, st.family, 0, ctx->err);
    double hang = LIST_INDENT * st.size / 11.0, text_x, width;
    pdf_para para = {0};
    kiln_status rc = KILN_E_OK;
    char marker[KILN_LIST_MARKER_MAX];
    kiln_list_marks marks = kiln_list_marks_of(list, depth);

    if (!face)
        return ctx->err->code;
    if (hang < LIST_INDENT)
        hang = LIST_INDENT;
    for (size_t i = 0; i < list->item_count; i++) {
        double mw;
        /* start + i in 64 bits: a list may start at 2147483647 */
        kiln_list_marker(marks, depth, (int64_t)list->start + (int64_t)i, marker, sizeof marker);
        mw = pdf_text_width(&ctx->fonts, face, marker, strlen(marker), st.size) + st.size * 0.5;
        if (mw + 4 > hang)
            hang = mw + 4;
    }
    /* nesting stops indenting once the text would get too narrow */
    if (ctx->right - left - hang < 72)
        left = ctx->right - hang - 72 > ctx->left ? ctx->right - hang - 72 : ctx->left;
    text_x = left + hang;
    width = ctx->right - text_x;

    for (size_t i = 0; i < list->item_count; i++) {
        const kiln_list_item *item = &list->items[i];

        kiln_list_marker(marks, depth, (int64_t)list->start + (int64_t)i, marker, sizeof marker);
        rc = pdf_para_layout(ctx, &item->text, &st, width, &para);
        if (rc != KILN_E_OK)
            break;
        /* the marker goes with the first line: start a new page first when
         * widow and orphan control would move that line on */
        if (para.line_count && lines_here(ctx, &para, 0) == 0 &&
            (rc = pdf_new_page(ctx)) != KILN_E_OK)
            break;
        if (para.line_count) {
            const pdf_line *l = &para.lines[0];
            double baseline = ctx->y - (l->height - (l->ascent - l->descent)) / 2 - l->ascent;
            double marker_w = pdf_text_width(&ctx->fonts, face, marker, strlen(marker), st.size);
            /* numbers end just before the text; bullets sit at the list's edge */
            double mx = list->ordered ? text_x - st.size * 0.35 - marker_w : left + 4;
            pdf_draw_text(ctx, ctx->page, face, st.size, TEXT_COLOR, mx, baseline, marker,
                          strlen(marker));
        }
        rc = flow_para(ctx, &para, text_x);
        if (rc != KILN_E_OK)
            break;
        space_after(ctx, st.size * 0.2);
        if (item->children) {
            rc = layout_list(ctx, item->children, depth + 1, text_x);
            if (rc != KILN_E_OK)
                break;
        }
    }
    pdf_para_release(&para);
    return rc;
}

/* ------------------------------------------------------------------ code, quotes, rules */

static kiln_status layout_code(pdf_ctx *ctx, const kiln_block *b)
{
    pdf_para_style st = {ctx->mono_family, 0, ctx->body_size * CODE_SIZE, CODE_LEADING, 0x1F1F1F,
                         KILN_ALIGN_LEFT,  1};
    const double pad = CODE_PAD;
    pdf_para para = {0};
    size_t done = 0;
    kiln_status rc;

    rc = pdf_para_layout_plain(ctx, b->code ? b->code : "", b->code ? strlen(b->code) : 0, &st,
                               ctx->right - ctx->left - 2 * pad, &para);
    if (rc != KILN_E_OK)
        goto release;
    space_before(ctx, ctx->body_size * 0.3);
    while (done < para.line_count) {
        size_t fit = 0;
        double h = 0, room;
        if ((rc = pdf_ensure_space(ctx, 2 * pad + para.lines[done].height * 2)) != KILN_E_OK)
            goto release;
        room = pdf_space_left(ctx) - 2 * pad;
        while (done + fit < para.line_count && h + para.lines[done + fit].height <= room + 0.01) {
            h += para.lines[done + fit].height;
            fit++;
        }
        if (fit == 0)
            fit = 1;
        h = pdf_para_height(&para, done, fit);
        pdf_set_fill(ctx->page, CODE_FILL);
        pdf_set_stroke(ctx->page, CODE_BORDER);
        HPDF_Page_SetLineWidth(ctx->page, 0.5f);
        HPDF_Page_Rectangle(ctx->page, (HPDF_REAL)ctx->left, (HPDF_REAL)(ctx->y - h - 2 * pad),
                            (HPDF_REAL)(ctx->right - ctx->left), (HPDF_REAL)(h + 2 * pad));
        HPDF_Page_FillStroke(ctx->page);
        rc = pdf_para_draw(ctx, &para, done, fit, ctx->left + pad, ctx->y - pad);
        if (rc != KILN_E_OK)
            goto release;
        ctx->y -= h + 2 * pad;
        mark_used(ctx);
        done += fit;
        if (done < para.line_count && (rc = pdf_new_page(ctx)) != KILN_E_OK)
            goto release;
    }
    space_after(ctx, ctx->body_size * 0.8);
release:
    pdf_para_release(&para);
    return rc;
}

static kiln_status layout_quote(pdf_ctx *ctx, const kiln_block *b)
{
    pdf_para_style st = body_style(ctx);
    const double indent = 18;
    size_t first_page = ctx->page_count;
    double top;
    kiln_status rc;

    st.style = PDF_STYLE_ITALIC;
    st.color = MUTED_COLOR;
    space_before(ctx, ctx->body_size * 0.3);
    if ((rc = pdf_ensure_space(ctx, st.size * st.leading * 2)) != KILN_E_OK)
        return rc;
    first_page = ctx->page_count;
    top = ctx->y;
    rc = layout_text(ctx, &b->text, st, ctx->left + indent, ctx->right - ctx->left - indent, 0);
    if (rc != KILN_E_OK)
        return rc;
    if (b->attribution) {
        pdf_para para = {0};
        char *s = kiln_arena_printf(ctx->arena, "\xE2\x80\x94 %s", b->attribution);
        if (!s)
            return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory");
        st.style = 0;
        st.align = KILN_ALIGN_RIGHT;
        rc = pdf_para_layout_plain(ctx, s, strlen(s), &st, ctx->right - ctx->left - indent,
                                   &para);
        if (rc == KILN_E_OK)
            rc = flow_para(ctx, &para, ctx->left + indent);
        pdf_para_release(&para);
        if (rc != KILN_E_OK)
            return rc;
    }
    /* the bar beside the quote, on every page the quote is on */
    for (size_t p = first_page; p <= ctx->page_count; p++) {
        HPDF_Page page = ctx->pages[p - 1];
        double from = p == first_page ? top : ctx->top;
        double to = p == ctx->page_count ? ctx->y : ctx->bottom;
        HPDF_Page_SetLineWidth(page, 3);
        pdf_set_stroke(page, ctx->accent_count ? ctx->accents[0] : HEADING_COLOR);
        HPDF_Page_MoveTo(page, (HPDF_REAL)(ctx->left + 4), (HPDF_REAL)from);
        HPDF_Page_LineTo(page, (HPDF_REAL)(ctx->left + 4), (HPDF_REAL)to);
        HPDF_Page_Stroke(page);
    }
    space_after(ctx, ctx->body_size * 0.8);
    return KILN_E_OK;
}

static kiln_status layout_rule(pdf_ctx *ctx)
{
    kiln_status rc = pdf_ensure_space(ctx, ctx->body_size);
    if (rc != KILN_E_OK)
        return rc;
    space_before(ctx, ctx->body_size * 0.4);
    HPDF_Page_SetLineWidth(ctx->page, 0.75f);
    pdf_set_stroke(ctx->page, RULE_COLOR);
    HPDF_Page_MoveTo(ctx->page, (HPDF_REAL)ctx->left, (HPDF_REAL)ctx->y);
    HPDF_Page_LineTo(ctx->page, (HPDF_REAL)ctx->right, (HPDF_REAL)ctx->y);
    HPDF_Page_Stroke(ctx->page);
    mark_used(ctx);
    space_after(ctx, ctx->body_size * 0.8);
    return KILN_E_OK;
}

/* ------------------------------------------------------------------ captions, images, charts */

static kiln_status layout_caption(pdf_ctx *ctx, const char *label, size_t number,
                                  const char *caption)
{
    pdf_para_style st = body_style(ctx);
    pdf_para para = {0};
    size_t label_len = strlen(label);
    char *s;
    kiln_status rc;

    /* a caption that already reads "Figure 2: ..." keeps its own wording, as
     * in the docx */
    if (caption && strncasecmp(caption, label, label_len) == 0 && caption[label_len] == ' ') {
        size_t i = label_len;
        while (caption[i] == ' ')
            i++;
        if (caption[i] >= '0' && caption[i] <= '9') {
            while (caption[i] >= '0' && caption[i] <= '9')
                i++;
            if (!((caption[i] >= 'A' && caption[i] <= 'Z') ||
                  (caption[i] >= 'a' && caption[i] <= 'z')))
                label = NULL;
        }
    }
    s = !label ? kiln_arena_strdup(ctx->arena, caption)
        : caption && *caption
            ? kiln_arena_printf(ctx->arena, "%s %zu: %s", label, number, caption)
            : kiln_arena_printf(ctx->arena, "%s %zu", label, number);

    if (!s)
        return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory");
    st.style = PDF_STYLE_ITALIC;
    st.size = ctx->body_size * 0.9;
    st.color = MUTED_COLOR;
    st.align = KILN_ALIGN_CENTER;
    rc = pdf_para_layout_plain(ctx, s, strlen(s), &st, ctx->right - ctx->left, &para);
    if (rc == KILN_E_OK)
        rc = flow_para(ctx, &para, ctx->left);
    pdf_para_release(&para);
    return rc;
}

static double caption_height(const pdf_ctx *ctx)
{
    return ctx->body_size * 0.9 * 1.3 * 2;
}

static kiln_status layout_image(pdf_ctx *ctx, const kiln_block *b)
{
    HPDF_Image img;
    double w, h, x;
    kiln_status rc = pdf_image_load(ctx, b->image, &img);

    if (rc != KILN_E_OK) {
        /* the image code knows the file, the block knows where it is in the spec */
        if (ctx->err->pointer[0] == '\0' && b->pointer)
            snprintf(ctx->err->pointer, sizeof ctx->err->pointer, "%s", b->pointer);
        return rc;
    }
    pdf_image_fit(b->image, b->width_pt, ctx->right - ctx->left,
                  ctx->top - ctx->bottom - (b->caption ? caption_height(ctx) : 0) - 12, &w, &h);
    space_before(ctx, ctx->body_size * 0.4);
    if ((rc = pdf_ensure_space(ctx, h + (b->caption ? caption_height(ctx) : 0))) != KILN_E_OK)
        return rc;
    x = ctx->left + (ctx->right - ctx->left - w) / 2;
    HPDF_Page_DrawImage(ctx->page, img, (HPDF_REAL)x, (HPDF_REAL)(ctx->y - h), (HPDF_REAL)w,
                        (HPDF_REAL)h);
    ctx->y -= h + 4;
    mark_used(ctx);
    if (b->caption) {
        rc = layout_caption(ctx, "Figure", ++ctx->figure_number, b->caption);
        if (rc != KILN_E_OK)
            return rc;
    }
    space_after(ctx, ctx->body_size * 0.8);
    return KILN_E_OK;
}

static kiln_status layout_chart(pdf_ctx *ctx, const kiln_flow_item *item)
{
    const kiln_chart *chart = item->block->chart;
    kiln_chart_data data;
    double w = chart->width_px * 0.75, h = chart->height_px * 0.75, x, avail;
    kiln_status rc;

    rc = kiln_chart_data_resolve(ctx->doc, item->sheet, chart, &ctx->doc->theme, ctx->arena,
                                 &data, ctx->err);
    if (rc != KILN_E_OK)
        return rc;
    avail = ctx->right - ctx->left;
    if (ctx->slides) { /* as large as the slide's text, like the rest of it */
        w *= 1.5;
        h *= 1.5;
    }
    if (w < 200)
        w = 200;
    if (h < 120)
        h = 120;
    if (w > avail) {
        h *= avail / w;
        w = avail;
    }
    if (h > (ctx->top - ctx->bottom) * 0.85)
        h = (ctx->top - ctx->bottom) * 0.85;
    space_before(ctx, ctx->body_size * 0.4);
    if ((rc = pdf_ensure_space(ctx, h + (chart->caption ? caption_height(ctx) : 0))) != KILN_E_OK)
        return rc;
    x = ctx->left + (avail - w) / 2;
    HPDF_Page_GSave(ctx->page);
    rc = pdf_chart_draw(ctx, &data, x, ctx->y, w, h);
    HPDF_Page_GRestore(ctx->page);
    if (rc != KILN_E_OK)
        return rc;
    ctx->y -= h + 4;
    mark_used(ctx);
    if (chart->caption) {
        rc = layout_caption(ctx, "Figure", ++ctx->figure_number, chart->caption);
        if (rc != KILN_E_OK)
            return rc;
    }
    space_after(ctx, ctx->body_size * 0.8);
    return KILN_E_OK;
}

/* ------------------------------------------------------------------ TOC */

static kiln_status toc_push(pdf_ctx *ctx, pdf_toc_entry **out)
{
    if (ctx->toc_count == ctx->toc_cap) {
        size_t cap = ctx->toc_cap ? ctx->toc_cap * 2 : 32;
        pdf_toc_entry *t = realloc(ctx->toc, cap * sizeof *t);
        if (!t)
            return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory");
        ctx->toc = t;
        ctx->toc_cap = cap;
    }
    *out = &ctx->toc[ctx->toc_count++];
    memset(*out, 0, sizeof **out);
    return KILN_E_OK;
}

static kiln_status layout_toc(pdf_ctx *ctx, const kiln_block *b)
{
    const char *title = b->title ? b->title : "Contents";
    kiln_run run = {.text = title, .len = strlen(title), .color = KILN_COLOR_NONE};
    kiln_text text = {&run, 1};
    pdf_para_style hs = heading_style(ctx, 1);
    int max_level = b->level > 0 ? b->level : 3;
    size_t ordinal = 0; /* of the heading among all headings of the flow */
    pdf_para para = {0};
    kiln_status rc;

    /* the TOC title looks like a heading but is not one: no outline entry */
    if ((rc = pdf_ensure_space(ctx, hs.size * 4)) != KILN_E_OK)
        return rc;
    space_before(ctx, hs.size);
    rc = layout_text(ctx, &text, hs, ctx->left, ctx->right - ctx->left, hs.size * 0.6);
    if (rc != KILN_E_OK)
        return rc;
    /* every heading of the flow from here on, counted the way heading_mark
     * will number them */
    for (size_t i = 0; i < ctx->flow->count; i++) {
        const kiln_block *hb = ctx->flow->items[i].block;
        pdf_para_style st = body_style(ctx);
        double indent, width;
        pdf_toc_entry *e = NULL;
        const pdf_line *last;
        char *s;

        if (hb->kind != KILN_BLOCK_HEADING)
            continue;
        ordinal++;
        if (hb->level > max_level)
            continue;
        indent = (hb->level - 1) * 14.0;
        width = ctx->right - ctx->left - indent - TOC_NUMBER_WIDTH;
        if (hb->level == 1)
            st.style = PDF_STYLE_BOLD;
        s = text_string(ctx, &hb->text);
        if (!s)
            return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory");
        rc = pdf_para_layout_plain(ctx, s, strlen(s), &st, width, &para);
        if (rc != KILN_E_OK)
            break;
        space_before(ctx, hb->level == 1 ? st.size * 0.35 : 0);
        {
            /* an entry stays with its first sub-entry, like a heading with its text */
            double need = pdf_para_height(&para, 0, para.line_count);
            for (size_t k = i + 1; k < ctx->flow->count; k++) {
                const kiln_block *nb = ctx->flow->items[k].block;
                if (nb->kind != KILN_BLOCK_HEADING)
                    continue;
                if (nb->level > hb->level && nb->level <= max_level)
                    need += st.size * st.leading;
                break;
            }
            if ((rc = pdf_ensure_space(ctx, need)) != KILN_E_OK)
                break;
        }
        rc = toc_push(ctx, &e);
        if (rc != KILN_E_OK)
            break;
        e->top_page = ctx->page_count - 1;
        e->top = ctx->y;
        rc = flow_para(ctx, &para, ctx->left + indent);
        if (rc != KILN_E_OK)
            break;
        last = &para.lines[para.line_count - 1];
        e->page = ctx->page_count - 1;
        e->baseline = ctx->y + last->height -
                      (last->height - (last->ascent - last->descent)) / 2 - last->ascent;
        e->text_end = ctx->left + indent + last->width;
        e->x0 = ctx->left + indent;
        e->x1 = ctx->right;
        e->size = st.size;
        e->face = pdf_fonts_face(&ctx->fonts, st.family, st.style & ~PDF_STYLE_BOLD, ctx->err);
        if (!e->face) {
            rc = ctx->err->code;
            break;
        }
        e->heading = ordinal - 1; /* heading_mark numbers them in the same order */
    }
    pdf_para_release(&para);
    if (rc == KILN_E_OK)
        space_after(ctx, ctx->body_size);
    return rc;
}

kiln_status pdf_toc_finish(pdf_ctx *ctx)
{
    for (size_t i = 0; i < ctx->toc_count; i++) {
        pdf_toc_entry *e = &ctx->toc[i];
        HPDF_Page page = ctx->pages[e->page];
        char number[32];
        double nw, dot_w, x;
        const pdf_heading_mark *h;

        if (e->heading >= ctx->heading_count)
            continue; /* a heading that never got placed (cannot happen after a full layout) */
        h = &ctx->headings[e->heading];
        snprintf(number, sizeof number, "%zu", h->page + 1);
        nw = pdf_text_width(&ctx->fonts, e->face, number, strlen(number), e->size);
        pdf_draw_text(ctx, page, e->face, e->size, TEXT_COLOR, e->x1 - nw, e->baseline, number,
                      strlen(number));
        /* dot leaders from the text to the number */
        dot_w = pdf_text_width(&ctx->fonts, e->face, ". ", 2, e->size);
        if (dot_w > 0) {
            double start = e->text_end + 6, end = e->x1 - nw - 6;
            size_t dots = end > start ? (size_t)((end - start) / dot_w) : 0;
            if (dots > 0) {
                char *lead = kiln_arena_alloc(ctx->arena, dots * 2 + 1);
                if (!lead)
                    return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory");
                for (size_t d = 0; d < dots; d++)
                    memcpy(lead + 2 * d, ". ", 2);
                x = end - dots * dot_w;
                pdf_draw_text(ctx, page, e->face, e->size, MUTED_COLOR, x, e->baseline, lead,
                              dots * 2);
            }
        }
        /* the whole entry links to its heading */
        {
            size_t saved = ctx->page_count;
            kiln_status rc;
            ctx->page_count = e->page + 1; /* pdf_add_link files it on the entry's page */
            rc = pdf_add_link(ctx, e->x0, e->baseline - e->size * 0.3, e->x1,
                              e->page == e->top_page ? e->top : e->baseline + e->size, NULL,
                              e->heading);
            ctx->page_count = saved;
            if (rc != KILN_E_OK)
                return rc;
        }
    }
    return KILN_E_OK;
}

/* ------------------------------------------------------------------ the page limit, early */

/* The smallest size any run of text is set in (size_pt for a run that sets
 * none, and for no runs). */
static double smallest_run(const kiln_text *t, double size_pt)
{
    double least = t->run_count ? HUGE_VAL : size_pt;
    for (size_t i = 0; i < t->run_count; i++) {
        double size = t->runs[i].size > 0 ? t->runs[i].size : size_pt;
        if (size < least)
            least = size;
    }
    return least;
}

/* The lines a text certainly has: one, and one more for each line break
 * (LF or U+2028) with something other than white space after it; breaks in
 * a row make empty lines, each a line high. A break with nothing after it
 * starts no line. */
static double forced_lines(const kiln_text *t)
{
    size_t lines = 1, pending = 0;
    for (size_t i = 0; i < t->run_count; i++) {
        const unsigned char *s = (const unsigned char *)t->runs[i].text;
        size_t len = t->runs[i].len;
        for (size_t j = 0; j < len; j++) {
            if (s[j] == '\n') {
                pending++;
            } else if (s[j] == 0xE2 && j + 2 < len && s[j + 1] == 0x80 && s[j + 2] == 0xA8) {
                pending++;
                j += 2;
            } else if (s[j] != ' ' && s[j] != '\t' && s[j] != '\r') {
                lines += pending;
                pending = 0;
            }
        }
    }
    return (double)lines;
}

/* The least height of a text: its forced lines at the smallest size it is set
 * in, at single spacing. */
static double text_min_height(const kiln_text *t, double size_pt)
{
    return forced_lines(t) * smallest_run(t, size_pt);
}

/* The least height a block can take, in points: the lines it certainly has
 * (those of each paragraph, heading, quote and list item, one per line of code) at
 * the smallest size its text is set in, at single spacing, and the space
 * after it; a table's rows in the spec at the least a row can be
 * (pdf_table_min_height). Images, charts and a data file's rows count for
 * nothing: they only make more pages. */
static double block_min_height(const pdf_ctx *ctx, const kiln_block *b)
{
    switch (b->kind) {
    case KILN_BLOCK_TABLE:
        return b->table ? pdf_table_min_height(&b->table->data) : 0;
    case KILN_BLOCK_CODE: {
        size_t lines = 1;
        for (const char *p = b->code; p && (p = strchr(p, '\n')); p++)
            lines++;
        /* ... and each page's part of the block has its padding. */
        double text = (double)lines * ctx->body_size * CODE_SIZE * CODE_LEADING;
        double room = ctx->top - ctx->bottom - 2 * CODE_PAD;
        return text + (room > 0 ? ceil(text / room) : 1) * 2 * CODE_PAD;
    }
    case KILN_BLOCK_PARAGRAPH:
        return text_min_height(&b->text, ctx->body_size) + ctx->body_size * 0.6;
    case KILN_BLOCK_HEADING:
        return text_min_height(&b->text, heading_size(ctx, b->level));
    case KILN_BLOCK_QUOTE:
        return text_min_height(&b->text, ctx->body_size) + ctx->body_size * 0.8;
    case KILN_BLOCK_LIST: {
        double h = ctx->body_size * 0.5;
        for (size_t i = 0; i < b->list.item_count; i++)
            h += text_min_height(&b->list.items[i].text, ctx->body_size);
        return h;
    }
    default:
        return 0;
    }
}

kiln_status pdf_check_page_limit(pdf_ctx *ctx, const kiln_flow *flow, size_t slides)
{
    /* Every page holds at most its text height, plus the space after its last
     * block, which the page's bottom may cut short; a page break starts a
     * page; each slide has its own. */
    double per_page = (ctx->top - ctx->bottom) + ctx->body_size;
    double height = 0;
    uint64_t breaks = slides;
    for (size_t i = 0; i < flow->count; i++) {
        const kiln_block *b = flow->items[i].block;
        if (b->kind == KILN_BLOCK_PAGE_BREAK)
            breaks++;
        height += block_min_height(ctx, b);
        uint64_t pages = breaks + (uint64_t)(height / per_page);
        if (pages > PDF_MAX_PAGES)
            return kiln_error_limit(ctx->err, KILN_E_LIMIT, b->pointer, PDF_MAX_PAGES, pages,
                                    "the PDF would have more than %u pages (at least %llu by "
                                    "this block)",
                                    PDF_MAX_PAGES, (unsigned long long)pages);
    }
    return KILN_E_OK;
}

/* ------------------------------------------------------------------ dispatch */

kiln_status pdf_layout_item(pdf_ctx *ctx, const kiln_flow_item *item, const kiln_flow_item *next)
{
    const kiln_block *b = item->block;
    kiln_status rc;

    if (!ctx->page && b->kind != KILN_BLOCK_PAGE_BREAK && (rc = pdf_new_page(ctx)) != KILN_E_OK)
        return rc;
    switch (b->kind) {
    case KILN_BLOCK_HEADING:
        return layout_heading(ctx, b, next);
    case KILN_BLOCK_PARAGRAPH: {
        pdf_para_style st = body_style(ctx);
        st.align = b->align;
        return layout_text(ctx, &b->text, st, ctx->left, ctx->right - ctx->left,
                           ctx->body_size * 0.6);
    }
    case KILN_BLOCK_LIST:
        rc = layout_list(ctx, &b->list, 0, ctx->left);
        if (rc == KILN_E_OK)
            space_after(ctx, ctx->body_size * 0.5);
        return rc;
    case KILN_BLOCK_TABLE:
        space_before(ctx, ctx->body_size * 0.3);
        return pdf_table_layout(ctx, &b->table->data, item->sheet, b->table->caption);
    case KILN_BLOCK_IMAGE:
        return layout_image(ctx, b);
    case KILN_BLOCK_CHART:
        return layout_chart(ctx, item);
    case KILN_BLOCK_PAGE_BREAK:
        if (ctx->page && !ctx->page_fresh)
            return pdf_new_page(ctx);
        return ctx->page ? KILN_E_OK : pdf_new_page(ctx);
    case KILN_BLOCK_TOC:
        return layout_toc(ctx, b);
    case KILN_BLOCK_CODE:
        return layout_code(ctx, b);
    case KILN_BLOCK_QUOTE:
        return layout_quote(ctx, b);
    case KILN_BLOCK_RULE:
        return layout_rule(ctx);
    }
    return KILN_E_OK;
}
