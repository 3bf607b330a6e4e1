/*
 * pdf_writer.c - kiln_pdf_write: a validated kiln_doc into a PDF.
 *
 * The order of work:
 *   1. a libharu document with UTF-8 fonts and compression, and the
 *      document information (title, author, subject, keywords, dates);
 *   2. the layout pass over the flow (artifacts/layout/flow.h), drawing as it goes
 *      (pdf_layout.c); a spec of slides puts each slide on a landscape page;
 *   3. what needed the whole layout: TOC page numbers, the header and the
 *      "Page X of Y" footer on every page, link annotations, the outline;
 *   4. the file, streamed out of libharu through kiln_output_write, which
 *      enforces the ceiling.
 * libharu reports errors through a callback; the first one is kept and the
 * write fails with it, since libharu's calls after an error do nothing.
 */
#include "pdf_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hpdf_doc.h>

#include "../../common/version.h"
#include "../../common/banned.h"

#define FURNITURE_COLOR 0x7F7F7F

typedef struct haru_error {
    HPDF_STATUS code, detail;
} haru_error;

static void on_haru_error(HPDF_STATUS code, HPDF_STATUS detail, void *user)
{
    haru_error *e = user;
    if (e->code == 0) {
        e->code = code;
        e->detail = detail;
    }
}

static kiln_status haru_failed(pdf_ctx *ctx, const haru_error *e)
{
    /* 0x1015 HPDF_FAILD_TO_ALLOC_MEM; anything else is a bug or a font problem */
    if (e->code == 0x1015)
        return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "libharu ran out of memory");
    return kiln_error_set(ctx->err, KILN_E_INTERNAL, NULL,
                          "libharu failed (error %#lx, detail %lu)", (unsigned long)e->code,
                          (unsigned long)e->detail);
}

/*
 * A PDF text string for UTF-8 s: UTF-16BE with a byte-order mark, as a hex
 * string. libharu's own conversion (through its UTF-8 encoder) is 16-bit and
 * mangles characters beyond the Basic Multilingual Plane (an emoji in a title
 * came out as spaces); surrogate pairs carry them whole. NULL when out of
 * memory.
 */
static HPDF_Binary text_string(HPDF_MMgr mmgr, const char *s)
{
    size_t len = strlen(s), pos = 0, at = 2;
    HPDF_BYTE *buf = malloc(2 + len * 4);
    HPDF_Binary bin;

    if (!buf)
        return NULL;
    buf[0] = 0xFE;
    buf[1] = 0xFF;
    while (pos < len) {
        uint32_t cp = kiln_utf8_next(s, len, &pos);
        if (cp > 0xFFFF) {
            uint32_t v = cp - 0x10000, hi = 0xD800 + (v >> 10), lo = 0xDC00 + (v & 0x3FF);
            buf[at++] = (HPDF_BYTE)(hi >> 8);
            buf[at++] = (HPDF_BYTE)hi;
            buf[at++] = (HPDF_BYTE)(lo >> 8);
            buf[at++] = (HPDF_BYTE)lo;
        } else {
            buf[at++] = (HPDF_BYTE)(cp >> 8);
            buf[at++] = (HPDF_BYTE)cp;
        }
    }
    bin = HPDF_Binary_New(mmgr, buf, (HPDF_UINT)at);
    free(buf);
    return bin;
}

static void set_info(HPDF_Doc pdf, HPDF_InfoType type, const char *key, const char *value)
{
    HPDF_Binary bin;

    if (!value || !*value)
        return;
    HPDF_SetInfoAttr(pdf, type, value); /* creates the info dictionary */
    bin = pdf->info ? text_string(pdf->mmgr, value) : NULL;
    if (bin)
        HPDF_Dict_Add(pdf->info, key, bin);
}

static void set_metadata(pdf_ctx *ctx)
{
    const kiln_metadata *m = &ctx->doc->metadata;
    HPDF_Date date;
    struct tm tm;
    time_t t = m->has_created ? (time_t)m->created : time(NULL);

    /* the current encoder is what libharu writes info strings with: UTF-8
     * makes them UTF-16BE text strings, so non-Latin titles survive */
    HPDF_SetCurrentEncoder(ctx->pdf, "UTF-8");
    set_info(ctx->pdf, HPDF_INFO_TITLE, "Title", m->title);
    set_info(ctx->pdf, HPDF_INFO_AUTHOR, "Author", m->author);
    set_info(ctx->pdf, HPDF_INFO_SUBJECT, "Subject", m->subject);
    set_info(ctx->pdf, HPDF_INFO_KEYWORDS, "Keywords", m->keywords);
    set_info(ctx->pdf, HPDF_INFO_CREATOR, "Creator", "Kiln " KILN_VERSION);
    gmtime_r(&t, &tm);
    memset(&date, 0, sizeof date);
    date.year = tm.tm_year + 1900;
    date.month = tm.tm_mon + 1;
    date.day = tm.tm_mday;
    date.hour = tm.tm_hour;
    date.minutes = tm.tm_min;
    date.seconds = tm.tm_sec;
    date.ind = 'Z';
    HPDF_SetInfoDateAttr(ctx->pdf, HPDF_INFO_CREATION_DATE, date);
    HPDF_SetInfoDateAttr(ctx->pdf, HPDF_INFO_MOD_DATE, date);
}

static void setup_page_geometry(pdf_ctx *ctx, int slides)
{
    const kiln_page *p = &ctx->doc->page;
    double fs;

    ctx->page_w = p->width_pt;
    ctx->page_h = p->height_pt;
    if (slides && ctx->page_w < ctx->page_h) { /* slides are landscape pages */
        double t = ctx->page_w;
        ctx->page_w = ctx->page_h;
        ctx->page_h = t;
    }
    ctx->left = p->margin_left;
    ctx->right = ctx->page_w - p->margin_right;
    ctx->top = ctx->page_h - p->margin_top;
    ctx->bottom = p->margin_bottom;

    /* The header and the footer sit in the middle of their margins, in small
     * type. A margin too narrow to hold them (down to 0) keeps them on the
     * page and moves the text area's edge in instead, so they never overlap
     * the text or leave the paper. */
    fs = ctx->body_size * 0.8 < 9 ? ctx->body_size * 0.8 : 9;
    ctx->furniture_size = fs;
    ctx->footer_baseline = p->margin_bottom / 2 - fs * 0.3;
    if (ctx->footer_baseline < fs * 0.8)
        ctx->footer_baseline = fs * 0.8;
    if (p->page_numbers && ctx->bottom < ctx->footer_baseline + fs * 1.6)
        ctx->bottom = ctx->footer_baseline + fs * 1.6;
    ctx->header_baseline = ctx->page_h - p->margin_top / 2 - fs * 0.3;
    if (ctx->header_baseline > ctx->page_h - fs * 1.2)
        ctx->header_baseline = ctx->page_h - fs * 1.2;
    if (p->header_text && *p->header_text && ctx->top > ctx->header_baseline - fs * 1.2)
        ctx->top = ctx->header_baseline - fs * 1.2;
    /* the parser keeps the margins inside the page; keep a sliver anyway so
     * arithmetic below never goes negative */
    if (ctx->right - ctx->left < 72)
        ctx->right = ctx->left + 72;
    if (ctx->top - ctx->bottom < 72)
        ctx->bottom = ctx->top - 72;
}

static void setup_theme(pdf_ctx *ctx)
{
    const kiln_theme *t = &ctx->doc->theme;
    ctx->body_family = pdf_family_for_name(t->font);
    ctx->heading_family = pdf_family_for_name(t->heading_font ? t->heading_font : t->font);
    ctx->mono_family = pdf_family_for_name(t->mono_font);
    if (ctx->mono_family != PDF_FAMILY_MONO) /* code is always monospaced */
        ctx->mono_family = PDF_FAMILY_MONO;
    ctx->body_size = t->font_size > 0 ? t->font_size : 11;
    ctx->accent_count = t->accent_count;
    memcpy(ctx->accents, t->accent_colors, sizeof ctx->accents);
    ctx->header_fill = t->header_fill;
    ctx->header_font_color = t->header_font_color;
}

/* The header line and the "Page X of Y" footer, in the margins. */
static kiln_status draw_furniture(pdf_ctx *ctx)
{
    const kiln_page *p = &ctx->doc->page;
    double size = ctx->furniture_size;
    pdf_face *face = pdf_fonts_face(&ctx->fonts, ctx->body_family, 0, ctx->err);
    char text[64];

    if (!face)
        return ctx->err->code;
    for (size_t i = 0; i < ctx->page_count; i++) {
        HPDF_Page page = ctx->pages[i];
        if (p->header_text && *p->header_text) {
            double baseline = ctx->header_baseline;
            double avail = ctx->right - ctx->left;
            size_t len = strlen(p->header_text);
            /* a header too long for one line is cut at a character boundary */
            while (len > 0 &&
                   pdf_text_width(&ctx->fonts, face, p->header_text, len, size) > avail) {
                len--;
                while (len > 0 && ((unsigned char)p->header_text[len] & 0xC0) == 0x80)
                    len--;
            }
            pdf_draw_text(ctx, page, face, size, FURNITURE_COLOR, ctx->left, baseline,
                          p->header_text, len);
            HPDF_Page_SetLineWidth(page, 0.5f);
            pdf_set_stroke(page, 0xBFBFBF);
            HPDF_Page_MoveTo(page, (HPDF_REAL)ctx->left, (HPDF_REAL)(baseline - size * 0.5));
            HPDF_Page_LineTo(page, (HPDF_REAL)ctx->right, (HPDF_REAL)(baseline - size * 0.5));
            HPDF_Page_Stroke(page);
        }
        if (p->page_numbers) {
            double w;
            snprintf(text, sizeof text, "Page %zu of %zu", i + 1, ctx->page_count);
            w = pdf_text_width(&ctx->fonts, face, text, strlen(text), size);
            pdf_draw_text(ctx, page, face, size, FURNITURE_COLOR,
                          ctx->left + (ctx->right - ctx->left - w) / 2, ctx->footer_baseline,
                          text, strlen(text));
        }
    }
    return KILN_E_OK;
}

static HPDF_Destination heading_destination(pdf_ctx *ctx, const pdf_heading_mark *h)
{
    HPDF_Destination dst = HPDF_Page_CreateDestination(ctx->pages[h->page]);
    if (dst)
        HPDF_Destination_SetFitH(dst, (HPDF_REAL)(h->y < ctx->page_h ? h->y : ctx->page_h));
    return dst;
}

static void add_links(pdf_ctx *ctx)
{
    for (size_t i = 0; i < ctx->link_count; i++) {
        const pdf_link *l = &ctx->links[i];
        HPDF_Rect rect = {(HPDF_REAL)l->x0, (HPDF_REAL)l->y0, (HPDF_REAL)l->x1, (HPDF_REAL)l->y1};
        HPDF_Annotation annot;
        if (l->page >= ctx->page_count)
            continue;
        if (l->uri) {
            annot = HPDF_Page_CreateURILinkAnnot(ctx->pages[l->page], rect, l->uri);
        } else {
            HPDF_Destination dst;
            if (l->heading >= ctx->heading_count)
                continue;
            dst = heading_destination(ctx, &ctx->headings[l->heading]);
            annot = dst ? HPDF_Page_CreateLinkAnnot(ctx->pages[l->page], rect, dst) : NULL;
        }
        if (annot)
            HPDF_LinkAnnot_SetBorderStyle(annot, 0, 0, 0);
    }
}

/* The outline (bookmarks) from the headings, nested by level. */
static void add_outline(pdf_ctx *ctx)
{
    HPDF_Encoder utf8 = HPDF_GetEncoder(ctx->pdf, "UTF-8");
    HPDF_Outline open_at[7] = {0}; /* the last entry at each level */

    for (size_t i = 0; i < ctx->heading_count; i++) {
        const pdf_heading_mark *h = &ctx->headings[i];
        int level = h->level < 1 ? 1 : h->level > 6 ? 6 : h->level;
        HPDF_Outline parent = NULL, o;
        HPDF_Destination dst;

        for (int up = level - 1; up >= 1; up--) {
            if (open_at[up]) {
                parent = open_at[up];
                break;
            }
        }
        o = HPDF_CreateOutline(ctx->pdf, parent, h->text, utf8);
        if (!o)
            return;
        {
            HPDF_Binary title = text_string(ctx->pdf->mmgr, h->text);
            if (title)
                HPDF_Dict_Add(o, "Title", title);
        }
        dst = heading_destination(ctx, h);
        if (dst)
            HPDF_Outline_SetDestination(o, dst);
        HPDF_Outline_SetOpened(o, level == 1 ? HPDF_TRUE : HPDF_FALSE);
        open_at[level] = o;
        for (int down = level + 1; down <= 6; down++)
            open_at[down] = NULL;
    }
}

/* Index of the slide an item belongs to, tracked by its pointer. */
static int item_starts_slide(const kiln_doc *doc, const kiln_flow_item *item, size_t *slide)
{
    while (*slide < doc->slide_count && item->block->pointer != doc->slides[*slide].pointer)
        (*slide)++;
    return *slide < doc->slide_count;
}

static kiln_status layout_all(pdf_ctx *ctx, const kiln_flow *flow)
{
    int slides = ctx->doc->block_count == 0 && ctx->doc->slide_count > 0;
    size_t slide = 0, pages_for_slides = 0; /* slides given a page so far */
    kiln_status st;

    ctx->flow = flow;
    if ((st = pdf_check_page_limit(ctx, flow, slides ? ctx->doc->slide_count : 0)) != KILN_E_OK)
        return st;
    for (size_t i = 0; i < flow->count; i++) {
        const kiln_flow_item *item = &flow->items[i];
        if (slides && item_starts_slide(ctx->doc, item, &slide) && slide >= pages_for_slides) {
            /* a page for this slide, and one for each empty slide before it */
            while (pages_for_slides <= slide) {
                st = pdf_new_page(ctx);
                if (st != KILN_E_OK)
                    return st;
                pages_for_slides++;
            }
        }
        st = pdf_layout_item(ctx, item, i + 1 < flow->count ? &flow->items[i + 1] : NULL);
        if (st != KILN_E_OK) {
            kiln_error_locate(ctx->err, item->block->pointer);
            return st;
        }
    }
    if (slides) {
        while (pages_for_slides < ctx->doc->slide_count) { /* trailing empty slides */
            st = pdf_new_page(ctx);
            if (st != KILN_E_OK)
                return st;
            pages_for_slides++;
        }
    }
    if (!ctx->page) /* an empty document is one empty page */
        return pdf_new_page(ctx);
    return KILN_E_OK;
}

static kiln_status save(pdf_ctx *ctx, kiln_output *out, haru_error *herr)
{
    unsigned char buf[65536];

    if (HPDF_SaveToStream(ctx->pdf) != HPDF_OK || herr->code)
        return haru_failed(ctx, herr);
    /* libharu has built the whole file in memory: check it before writing a byte */
    if (HPDF_GetStreamSize(ctx->pdf) > out->max_bytes)
        return kiln_error_limit(ctx->err, KILN_E_TOO_LARGE, NULL, out->max_bytes,
                                HPDF_GetStreamSize(ctx->pdf),
                                "output is larger than the size ceiling of %llu bytes "
                                "(reached %lu bytes)",
                                (unsigned long long)out->max_bytes,
                                (unsigned long)HPDF_GetStreamSize(ctx->pdf));
    HPDF_ResetStream(ctx->pdf);
    for (;;) {
        HPDF_UINT32 n = sizeof buf;
        HPDF_STATUS rs = HPDF_ReadFromStream(ctx->pdf, buf, &n);
        if (n > 0) {
            kiln_status st = kiln_output_write(out, buf, n, ctx->err);
            if (st != KILN_E_OK)
                return st;
        }
        if (rs == HPDF_STREAM_EOF)
            break;
        if (rs != HPDF_OK)
            return haru_failed(ctx, herr);
    }
    return KILN_E_OK;
}

kiln_status kiln_pdf_write(const kiln_doc *doc, kiln_output *out, const kiln_render_options *opt,
                           kiln_render_result *result, kiln_error *err)
{
    haru_error herr = {0, 0};
    kiln_arena arena;
    kiln_flow flow;
    pdf_ctx ctx;
    kiln_status st;

    memset(&ctx, 0, sizeof ctx);
    kiln_arena_init(&arena, 0);
    ctx.doc = doc;
    ctx.opt = opt;
    ctx.err = err;
    ctx.arena = &arena;
    ctx.pdf = HPDF_New(on_haru_error, &herr);
    if (!ctx.pdf) {
        st = kiln_error_set(err, KILN_E_NOMEM, NULL, "libharu cannot start a document");
        goto release_arena;
    }
    if (HPDF_UseUTFEncodings(ctx.pdf) != HPDF_OK ||
        HPDF_SetCompressionMode(ctx.pdf, HPDF_COMP_ALL) != HPDF_OK) {
        st = haru_failed(&ctx, &herr);
        goto free_pdf;
    }
    st = pdf_fonts_init(&ctx.fonts, ctx.pdf, err);
    if (st != KILN_E_OK)
        goto free_pdf;
    set_metadata(&ctx);
    setup_theme(&ctx);
    ctx.slides = doc->block_count == 0 && doc->slide_count > 0;
    if (ctx.slides)
        ctx.body_size *= 1.5; /* a slide is read from further away than a page */
    setup_page_geometry(&ctx, ctx.slides);
    HPDF_SetPageMode(ctx.pdf, HPDF_PAGE_MODE_USE_OUTLINE);

    st = kiln_flow_build(doc, &arena, &flow, err);
    if (st != KILN_E_OK)
        goto release_fonts;
    st = layout_all(&ctx, &flow);
    if (st != KILN_E_OK)
        goto release_fonts;
    st = pdf_toc_finish(&ctx);
    if (st != KILN_E_OK)
        goto release_fonts;
    st = draw_furniture(&ctx);
    if (st != KILN_E_OK)
        goto release_fonts;
    add_links(&ctx);
    if (ctx.heading_count > 0)
        add_outline(&ctx);
    else
        HPDF_SetPageMode(ctx.pdf, HPDF_PAGE_MODE_USE_NONE);
    st = pdf_fonts_finish(&ctx.fonts, err);
    if (st != KILN_E_OK)
        goto release_fonts;
    if (herr.code) {
        st = haru_failed(&ctx, &herr);
        goto release_fonts;
    }
    st = save(&ctx, out, &herr);
    result->missing_glyphs = ctx.fonts.missing_count;
    result->missing_first = ctx.fonts.missing_first;

release_fonts:
    pdf_fonts_release(&ctx.fonts);
free_pdf:
    HPDF_Free(ctx.pdf);
    free(ctx.pages);
    free(ctx.links);
    free(ctx.headings);
    free(ctx.toc);
release_arena:
    kiln_arena_release(&arena);
    return st;
}
