/*
 * pptx_slide.c - ppt/slides/slideN.xml: one deck item as one slide, or as
 * several when its bullets or its table need more room.
 *
 * Everything a slide shows sits in a placeholder of its layout (p:ph with
 * the layout's type and idx), so the user restyles the deck from the master
 * and "Reset slide" puts things back where the layout has them: the title in
 * the title placeholder, bullets in the body, and a table, picture or chart
 * in the content placeholder (idx 1), as PowerPoint itself stores an object
 * inserted into a content placeholder. Text placeholders carry no geometry
 * of their own and inherit the layout's; an object carries its fitted frame.
 *
 * Continuations: a slide whose bullets do not fit (pptx_text.c) or whose
 * table has rows left (pptx_table.c) is followed by another with the same
 * layout, the title with " (continued)" after it, and the rest. Speaker
 * notes go with the first slide of an item. Every slide but a title slide
 * shows its number in the footer's slide-number placeholder.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pptx_internal.h"
#include "../../common/banned.h"

#define CONTINUED " (continued)"
/* The slide number field's id: PowerPoint gives a field the same id on every
 * slide that shows it (any GUID works; this one is Kiln's). */
#define SLIDENUM_FIELD_ID "{B6F15528-21DE-4FAA-801E-634DDDAF4B2B}" /* as templates/pptx/ */
#define DEFAULT_DPI 96.0
/* Text of a chart filling a slide's content area: 14 pt (titles 19.6 pt). */
#define PPTX_CHART_TEXT_SIZE 1400

/* An image part already in the package. */
typedef struct pptx_media {
    const kiln_image *image; /* the first image stored as this part */
    char part[40];           /* "ppt/media/image3.png" */
} pptx_media;

/* The same picture, whichever block or slide it came from: the parser loads
 * an image once per use, so a logo on every slide is as many copies of the
 * same bytes. */
static int same_image(const kiln_image *a, const kiln_image *b)
{
    return a == b || (a->format == b->format && a->size == b->size &&
                      (a->data == b->data || memcmp(a->data, b->data, a->size) == 0));
}

static kiln_status fail_status(pptx_ctx *c, kiln_status st, const char *pointer)
{
    if (st == KILN_E_NOMEM && (!c->err || c->err->code == KILN_E_OK))
        return pptx_nomem(c, pointer);
    return st;
}

/* ---- the slide's frame ---- */

/* The deck-size error, for the plan (which knows early) and for the slide
 * that passes the limit (tables whose rows are only counted as they are
 * read). */
static kiln_status too_many_slides(pptx_ctx *c, const char *pointer, uint64_t at_least)
{
    return kiln_error_limit(c->err, KILN_E_LIMIT, pointer, PPTX_MAX_SLIDES, at_least,
                            "the deck would need more than %u slides (long tables and "
                            "bullets continue over as many slides as they need)",
                            PPTX_MAX_SLIDES);
}

static kiln_status slide_begin(pptx_ctx *c, pptx_slide *s, pptx_layout layout,
                               const char *pointer)
{
    memset(s, 0, sizeof *s);
    s->c = c;
    if (c->slide_count >= PPTX_MAX_SLIDES)
        return too_many_slides(c, pointer, (uint64_t)c->slide_count + 1);
    s->number = ++c->slide_count;
    s->layout = layout;
    s->next_shape_id = 2;
    snprintf(s->part, sizeof s->part, "ppt/slides/slide%u.xml", s->number);

    /* The slide's own relationship to its layout first (rId1), as PowerPoint
     * writes it; then presentation.xml's to the slide. */
    char target[48];
    snprintf(target, sizeof target, "../slideLayouts/slideLayout%d.xml", (int)layout);
    if (!opc_rel_add(c->pkg, s->part, OPC_REL_SLIDE_LAYOUT, target, 0, c->err))
        return fail_status(c, KILN_E_NOMEM, pointer);
    if (c->slide_count > c->slide_rid_cap) {
        size_t cap = c->slide_rid_cap ? c->slide_rid_cap * 2 : 64;
        unsigned *rids = kiln_arena_alloc(c->arena, cap * sizeof *rids);
        if (!rids)
            return pptx_nomem(c, pointer);
        if (c->slide_rid_cap)
            memcpy(rids, c->slide_rids, c->slide_rid_cap * sizeof *rids);
        c->slide_rids = rids;
        c->slide_rid_cap = cap;
    }
    snprintf(target, sizeof target, "slides/slide%u.xml", s->number);
    unsigned rid = opc_rel_add(c->pkg, PPTX_PRESENTATION_PART, OPC_REL_SLIDE, target, 0, c->err);
    if (!rid)
        return fail_status(c, KILN_E_NOMEM, pointer);
    c->slide_rids[s->number - 1] = rid;

    s->x = opc_xml_new();
    if (!s->x)
        return pptx_nomem(c, pointer);
    /* A deck past the output ceiling fails at the slide that passes it, not
     * after every slide is written (opc.h, the early ceiling check). */
    opc_xml_set_ceiling(s->x, c->pkg, c->out->max_bytes);
    opc_xml *x = s->x;
    opc_xml_start(x, "p:sld");
    opc_xml_attr(x, "xmlns:a", PPTX_NS_A);
    opc_xml_attr(x, "xmlns:r", OPC_NS_R);
    opc_xml_attr(x, "xmlns:p", PPTX_NS_P);
    pptx_write_tree_start(x);
    return KILN_E_OK;
}

static kiln_status slide_end(pptx_slide *s, const char *pointer)
{
    opc_xml *x = s->x;
    s->x = NULL;
    opc_xml_end(x); /* p:spTree */
    opc_xml_end(x); /* p:cSld */
    opc_xml_start(x, "p:clrMapOvr");
    opc_xml_empty(x, "a:masterClrMapping");
    opc_xml_end(x);
    if (s->status != KILN_E_OK) {
        opc_xml_free(x);
        return fail_status(s->c, s->status, pointer);
    }
    if (opc_xml_failed(x)) {
        kiln_status st = opc_xml_error(x, pointer, s->c->err);
        opc_xml_free(x);
        return st;
    }
    return opc_xml_finish(x, s->c->pkg, s->part, PPTX_CT_SLIDE, s->c->err);
}

static void slide_abort(pptx_slide *s)
{
    opc_xml_free(s->x);
    s->x = NULL;
}

/* <p:sp> of a placeholder up to its p:spPr (empty: the layout's geometry). */
static void placeholder_start(pptx_slide *s, const char *name, const char *type, int idx,
                              const char *sz)
{
    opc_xml *x = s->x;
    unsigned id = s->next_shape_id++;
    char label[64];
    snprintf(label, sizeof label, "%s %u", name, id - 1);
    opc_xml_start(x, "p:sp");
    opc_xml_start(x, "p:nvSpPr");
    opc_xml_start(x, "p:cNvPr");
    opc_xml_attr_uint(x, "id", id);
    opc_xml_attr(x, "name", label);
    opc_xml_end(x);
    opc_xml_start(x, "p:cNvSpPr");
    opc_xml_start(x, "a:spLocks");
    opc_xml_attr(x, "noGrp", "1");
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_start(x, "p:nvPr");
    opc_xml_start(x, "p:ph");
    if (type)
        opc_xml_attr(x, "type", type);
    if (sz)
        opc_xml_attr(x, "sz", sz);
    if (idx > 0)
        opc_xml_attr_int(x, "idx", idx);
    opc_xml_end(x);
    opc_xml_end(x); /* p:nvPr */
    opc_xml_end(x); /* p:nvSpPr */
    opc_xml_empty(x, "p:spPr");
}

static void note_overflow(pptx_slide *s)
{
    kiln_render_result *r = s->c->result;
    if (!r)
        return;
    if (r->overflow_slides++ == 0)
        r->overflow_first = s->number;
}

/* The title placeholder, its text fitted to the layout's box. */
static void write_title(pptx_slide *s, const pptx_layout_info *L, const char *title,
                        int continued)
{
    if (!L->title_type || !title)
        return;
    const char *text = title;
    if (continued && *title) {
        size_t len = strlen(title);
        char *t = kiln_arena_alloc(s->c->arena, len + sizeof CONTINUED);
        if (!t) {
            s->status = KILN_E_NOMEM;
            return;
        }
        memcpy(t, title, len);
        memcpy(t + len, CONTINUED, sizeof CONTINUED);
        text = t;
    }
    pptx_fit fit = pptx_text_fit_plain(text, strlen(text), L->title_size, 0, L->title.cx,
                                       L->title.cy);
    if (fit.overflow)
        note_overflow(s);
    placeholder_start(s, "Title", L->title_type, 0, NULL);
    pptx_text_body_plain(s, text, &fit);
    opc_xml_end(s->x); /* p:sp */
}

/* A body placeholder (idx 1 or 2) with paragraphs fitted as fit says. */
static void write_body(pptx_slide *s, const pptx_layout_info *L, int idx, const pptx_para *paras,
                       size_t n, const pptx_fit *fit)
{
    const char *sz = L->body_count == 2 ? "half" : NULL;
    placeholder_start(s,
                      L->body_type && strcmp(L->body_type, "subTitle") == 0
                          ? "Subtitle"
                          : "Content Placeholder",
                      L->body_type, idx, sz);
    pptx_text_body(s, paras, n, fit);
    opc_xml_end(s->x); /* p:sp */
}

static void write_slide_number(pptx_slide *s)
{
    opc_xml *x = s->x;
    placeholder_start(s, "Slide Number Placeholder", "sldNum", PPTX_IDX_SLIDE_NUMBER, "quarter");
    opc_xml_start(x, "p:txBody");
    opc_xml_empty(x, "a:bodyPr");
    opc_xml_empty(x, "a:lstStyle");
    opc_xml_start(x, "a:p");
    opc_xml_start(x, "a:fld");
    opc_xml_attr(x, "id", SLIDENUM_FIELD_ID);
    opc_xml_attr(x, "type", "slidenum");
    opc_xml_start(x, "a:rPr");
    opc_xml_attr(x, "lang", "en-US");
    opc_xml_end(x);
    char num[16];
    snprintf(num, sizeof num, "%u", s->number);
    opc_xml_element_text(x, "a:t", num);
    opc_xml_end(x); /* a:fld */
    opc_xml_end(x); /* a:p */
    opc_xml_end(x); /* p:txBody */
    opc_xml_end(x); /* p:sp */
}

/* Everything after the content: the number, then the slide is finished and
 * its notes (first slide of an item only) added. */
static kiln_status slide_finish(pptx_slide *s, pptx_layout layout, const char *notes,
                                const char *pointer)
{
    if (layout != PPTX_LAYOUT_TITLE)
        write_slide_number(s);
    kiln_status st = slide_end(s, pointer);
    if (st != KILN_E_OK)
        return st;
    if (notes && notes[strspn(notes, " \t\r\n")])
        return pptx_notes_add(s, notes);
    return KILN_E_OK;
}

/* ---- objects in the content placeholder ---- */

/* The image's part, added the first time the image is met. */
static kiln_status media_part(pptx_ctx *c, const kiln_image *img, const char **part,
                              const char *pointer)
{
    for (size_t i = 0; i < c->media_count; i++) {
        if (same_image(c->media[i].image, img)) {
            *part = c->media[i].part;
            return KILN_E_OK;
        }
    }
    if (c->media_count == c->media_cap) {
        size_t cap = c->media_cap ? c->media_cap * 2 : 8;
        pptx_media *m = kiln_arena_alloc(c->arena, cap * sizeof *m);
        if (!m)
            return pptx_nomem(c, pointer);
        if (c->media_count)
            memcpy(m, c->media, c->media_count * sizeof *m);
        c->media = m;
        c->media_cap = cap;
    }
    int png = img->format == KILN_IMAGE_PNG;
    kiln_status st = opc_default_add(c->pkg, png ? "png" : "jpeg", png ? OPC_CT_PNG : OPC_CT_JPEG,
                                     c->err);
    if (st != KILN_E_OK)
        return st;
    pptx_media *m = &c->media[c->media_count];
    snprintf(m->part, sizeof m->part, "ppt/media/image%u.%s", ++c->image_count,
             png ? "png" : "jpeg");
    /* PNG and JPEG are compressed already: stored, not deflated again. */
    st = opc_part_add_copy(c->pkg, m->part, NULL, img->data, img->size, 0, c->err);
    if (st != KILN_E_OK)
        return st;
    m->image = img;
    c->media_count++;
    *part = m->part;
    return KILN_E_OK;
}

/* The largest rectangle of the image's proportions inside area, centred. */
static pptx_rect fit_image(const kiln_image *img, pptx_rect area)
{
    double dpi_x = img->dpi_x > 0 ? img->dpi_x : DEFAULT_DPI;
    double dpi_y = img->dpi_y > 0 ? img->dpi_y : DEFAULT_DPI;
    double w = img->width_px / dpi_x, h = img->height_px / dpi_y;
    if (w <= 0 || h <= 0)
        w = h = 1;
    double scale = fmin((double)area.cx / w, (double)area.cy / h);
    pptx_rect r;
    r.cx = (int64_t)floor(w * scale);
    r.cy = (int64_t)floor(h * scale);
    if (r.cx < 1)
        r.cx = 1;
    if (r.cy < 1)
        r.cy = 1;
    r.x = area.x + (area.cx - r.cx) / 2;
    r.y = area.y + (area.cy - r.cy) / 2;
    return r;
}

static kiln_status write_picture(pptx_slide *s, const kiln_image *img, const char *alt,
                                 pptx_rect area, const char *pointer)
{
    pptx_ctx *c = s->c;
    const char *part = NULL;
    kiln_status st = media_part(c, img, &part, pointer);
    if (st != KILN_E_OK)
        return st;
    char target[48];
    snprintf(target, sizeof target, "../%s", part + strlen("ppt/"));
    unsigned rid = opc_rel_add(c->pkg, s->part, OPC_REL_IMAGE, target, 0, c->err);
    if (!rid)
        return fail_status(c, KILN_E_NOMEM, pointer);

    opc_xml *x = s->x;
    unsigned id = s->next_shape_id++;
    char name[32], rid_text[24];
    snprintf(name, sizeof name, "Picture %u", id - 1);
    snprintf(rid_text, sizeof rid_text, "rId%u", rid);
    opc_xml_start(x, "p:pic");
    opc_xml_start(x, "p:nvPicPr");
    opc_xml_start(x, "p:cNvPr");
    opc_xml_attr_uint(x, "id", id);
    opc_xml_attr(x, "name", name);
    opc_xml_attr(x, "descr", alt ? alt : "");
    opc_xml_end(x);
    opc_xml_start(x, "p:cNvPicPr");
    opc_xml_start(x, "a:picLocks");
    opc_xml_attr(x, "noGrp", "1");
    opc_xml_attr(x, "noChangeAspect", "1");
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_start(x, "p:nvPr");
    opc_xml_start(x, "p:ph");
    opc_xml_attr(x, "idx", "1");
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_end(x); /* p:nvPicPr */
    opc_xml_start(x, "p:blipFill");
    opc_xml_start(x, "a:blip");
    opc_xml_attr(x, "r:embed", rid_text);
    opc_xml_end(x);
    opc_xml_start(x, "a:stretch");
    opc_xml_empty(x, "a:fillRect");
    opc_xml_end(x);
    opc_xml_end(x); /* p:blipFill */
    opc_xml_start(x, "p:spPr");
    pptx_write_xfrm(x, "a:xfrm", fit_image(img, area));
    opc_xml_start(x, "a:prstGeom");
    opc_xml_attr(x, "prst", "rect");
    opc_xml_empty(x, "a:avLst");
    opc_xml_end(x);
    opc_xml_end(x); /* p:spPr */
    opc_xml_end(x); /* p:pic */
    return KILN_E_OK;
}

static kiln_status write_chart(pptx_slide *s, const kiln_chart *chart, const kiln_sheet *sheet,
                               int idx, pptx_rect area, const char *pointer)
{
    pptx_ctx *c = s->c;
    kiln_chart_data data;
    kiln_status st = kiln_chart_data_resolve(c->doc, sheet, chart, &c->doc->theme, c->arena,
                                             &data, c->err);
    if (st != KILN_E_OK)
        return st;
    unsigned n = ++c->chart_count;
    if ((st = opc_chart_add(c->pkg, "ppt", n, &data, &c->doc->theme, PPTX_CHART_TEXT_SIZE,
                            c->tmp_dir, c->err)) != KILN_E_OK)
        return st;
    char target[48];
    snprintf(target, sizeof target, "../charts/chart%u.xml", n);
    unsigned rid = opc_rel_add(c->pkg, s->part, OPC_REL_CHART, target, 0, c->err);
    if (!rid)
        return fail_status(c, KILN_E_NOMEM, pointer);

    opc_xml *x = s->x;
    char rid_text[24];
    snprintf(rid_text, sizeof rid_text, "rId%u", rid);
    /* Alternative text: what the chart shows, as far as the spec says. A
     * chart is drawn to its frame, so it takes the whole content area. */
    pptx_write_frame_start(s, "Chart", idx, chart->title ? chart->title : chart->caption, area,
                           PPTX_NS_C);
    opc_xml_start(x, "c:chart");
    opc_xml_attr(x, "xmlns:c", PPTX_NS_C);
    opc_xml_attr(x, "r:id", rid_text);
    opc_xml_end(x);
    opc_xml_end(x); /* a:graphicData */
    opc_xml_end(x); /* a:graphic */
    opc_xml_end(x); /* p:graphicFrame */
    return KILN_E_OK;
}

/* ---- items ---- */

/* Title, subtitle (or section text) slide. */
static kiln_status write_title_item(pptx_ctx *c, const pptx_item *it)
{
    const pptx_layout_info *L = &pptx_layouts[it->layout];
    pptx_slide s;
    kiln_status st = slide_begin(c, &s, it->layout, it->pointer);
    if (st != KILN_E_OK)
        goto abort_slide;
    write_title(&s, L, it->title, 0);
    if (it->subtitle && L->body_count > 0) {
        pptx_fit fit = pptx_text_fit_plain(it->subtitle, strlen(it->subtitle), L->body_size[0], 0,
                                           L->body[0].cx, L->body[0].cy);
        if (fit.overflow)
            note_overflow(&s);
        placeholder_start(&s,
                          L->body_type && strcmp(L->body_type, "subTitle") == 0
                              ? "Subtitle"
                              : "Text Placeholder",
                          L->body_type, 1, NULL);
        pptx_text_body_plain(&s, it->subtitle, &fit);
        opc_xml_end(s.x);
    }
    return slide_finish(&s, it->layout, it->notes, it->pointer);

abort_slide:
    slide_abort(&s);
    return st;
}

/* ---- the plan: every slide's share of an item's text, before any is written ---- */

/* Where each column's paragraphs start on one slide of a text item, and how
 * they are set there. */
struct pptx_text_slide {
    size_t from[2];
    pptx_fit fit[2];
    int overflow;
};

/* Bullets in one body, or two columns, split over as many slides as the text
 * needs: the slides go into it->plan (arena), at most room + 1 of them
 * (room + 1 = more than the deck has room for: planning stops there). */
static kiln_status plan_text_item(pptx_ctx *c, pptx_item *it, uint64_t room)
{
    const pptx_layout_info *L = &pptx_layouts[it->layout];
    int columns = it->layout == PPTX_LAYOUT_TWO_CONTENT ? 2 : 1;
    const pptx_paras *cols[2] = {&it->body, &it->right};
    size_t next[2] = {0, 0};
    unsigned min_scale = PPTX_FIT_MIN_SCALE; /* full size only once the item is split */
    size_t cap = 0;
    struct pptx_text_slide *plan = NULL;

    it->plan = NULL;
    it->plan_count = 0;
    for (;;) {
        pptx_fit fit[2];
        int overflow = 0;
        for (int k = 0; k < columns; k++) {
            size_t left = cols[k]->count - next[k];
            /* An empty column has no items at all (NULL): no arithmetic on it. */
            const pptx_para *from = left ? cols[k]->items + next[k] : NULL;
            fit[k] = pptx_text_fit(from, left, L->body[k].cx, L->body[k].cy, L->body_size,
                                   min_scale);
            overflow |= fit[k].overflow;
        }
        /* A split column sets both at full size, so the columns match. */
        if (columns == 2 && min_scale != 100000 &&
            (fit[0].count < cols[0]->count - next[0] ||
             fit[1].count < cols[1]->count - next[1])) {
            min_scale = 100000;
            continue;
        }
        if (fit[0].count < cols[0]->count - next[0])
            min_scale = 100000;
        if (it->plan_count == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            struct pptx_text_slide *grown = kiln_arena_alloc(c->arena, ncap * sizeof *grown);
            if (!grown)
                return pptx_nomem(c, it->pointer);
            if (cap)
                memcpy(grown, plan, cap * sizeof *grown);
            plan = grown;
            cap = ncap;
        }
        struct pptx_text_slide *sl = &plan[it->plan_count++];
        memset(sl, 0, sizeof *sl);
        sl->overflow = overflow;
        for (int k = 0; k < columns; k++) {
            sl->from[k] = next[k];
            sl->fit[k] = fit[k];
            next[k] += fit[k].count;
        }
        it->plan = plan;
        int more = 0;
        for (int k = 0; k < columns; k++)
            more |= next[k] < cols[k]->count;
        if (!more || it->plan_count > room)
            return KILN_E_OK;
    }
}

kiln_status pptx_deck_plan(pptx_ctx *c, pptx_deck *deck)
{
    uint64_t total = 0;
    for (size_t i = 0; i < deck->count; i++) {
        pptx_item *it = &deck->items[i];
        uint64_t n = 1;
        if (it->table) {
            n = pptx_table_min_slides(it->table, pptx_layouts[it->layout].body[0].cy);
        } else if (!it->image && !it->chart &&
                   (it->layout == PPTX_LAYOUT_CONTENT || it->layout == PPTX_LAYOUT_TWO_CONTENT)) {
            kiln_status st = plan_text_item(c, it, PPTX_MAX_SLIDES - total);
            if (st != KILN_E_OK)
                return st;
            n = it->plan_count;
        }
        if (total + n > PPTX_MAX_SLIDES) {
            /* Name the block the first slide past the limit starts with. */
            const char *where = it->pointer;
            size_t k = PPTX_MAX_SLIDES - total; /* that slide, in the item's plan */
            if (it->plan && k < it->plan_count) {
                const struct pptx_text_slide *sl = &it->plan[k];
                const pptx_paras *col = sl->fit[0].count ? &it->body : &it->right;
                size_t from = sl->fit[0].count ? sl->from[0] : sl->from[1];
                if (from < col->count && col->items[from].pointer)
                    where = col->items[from].pointer;
            }
            return too_many_slides(c, where, total + n);
        }
        total += n;
    }
    return KILN_E_OK;
}

/* A text item's slides, as planned. */
static kiln_status write_text_item(pptx_ctx *c, const pptx_item *it)
{
    const pptx_layout_info *L = &pptx_layouts[it->layout];
    int columns = it->layout == PPTX_LAYOUT_TWO_CONTENT ? 2 : 1;
    const pptx_paras *cols[2] = {&it->body, &it->right};
    kiln_status st;

    for (size_t i = 0; i < it->plan_count; i++) {
        const struct pptx_text_slide *sl = &it->plan[i];
        pptx_slide s;
        if ((st = slide_begin(c, &s, it->layout, it->pointer)) != KILN_E_OK) {
            slide_abort(&s);
            return st;
        }
        if (sl->overflow)
            note_overflow(&s);
        write_title(&s, L, it->title, i > 0);
        /* A column with nothing (left) to show has no placeholder on the
         * slide rather than an empty one ("Click to add text"). */
        for (int k = 0; k < columns && k < L->body_count; k++) {
            if (sl->fit[k].count == 0)
                continue;
            write_body(&s, L, k + 1, cols[k]->items + sl->from[k], sl->fit[k].count, &sl->fit[k]);
        }
        if ((st = slide_finish(&s, it->layout, i == 0 ? it->notes : NULL, it->pointer)) !=
            KILN_E_OK)
            return st;
    }
    return KILN_E_OK;
}

static kiln_status write_object_item(pptx_ctx *c, const pptx_item *it);

/* Whether the item's whole table fits the left half of a Two Content slide
 * (a trial layout of its rows, nothing written). */
static kiln_status table_fits_half(pptx_ctx *c, const pptx_item *it, int *fits)
{
    pptx_table *probe = NULL;
    kiln_status st = pptx_table_open(c, it->table, it->sheet,
                                     pptx_layouts[PPTX_LAYOUT_TWO_CONTENT].body[0], it->pointer,
                                     &probe);
    if (st == KILN_E_OK)
        st = pptx_table_fits_one_slide(probe, fits);
    pptx_table_close(probe);
    return st;
}

/* A table over as many slides as its rows need. With a chart (a sheet's
 * first), the two side by side on one Two Content slide when the whole
 * table fits the left half; else the chart follows the table's slides on a
 * slide of its own. */
static kiln_status write_table_item(pptx_ctx *c, const pptx_item *it)
{
    pptx_layout layout = it->layout;
    int beside = 0;
    kiln_status st;
    if (it->chart && (st = table_fits_half(c, it, &beside)) != KILN_E_OK)
        return st;
    if (beside)
        layout = PPTX_LAYOUT_TWO_CONTENT;
    const pptx_layout_info *L = &pptx_layouts[layout];
    pptx_table *t = NULL;
    if ((st = pptx_table_open(c, it->table, it->sheet, L->body[0], it->pointer, &t)) != KILN_E_OK)
        return st;
    int more = 1, first = 1;
    while (more) {
        pptx_slide s;
        if ((st = slide_begin(c, &s, layout, it->pointer)) != KILN_E_OK)
            goto abort_slide;
        write_title(&s, L, it->title, !first);
        if ((st = pptx_table_write(&s, t, &more)) != KILN_E_OK)
            goto abort_slide;
        if (beside && (st = write_chart(&s, it->chart, it->sheet, 2, L->body[1],
                                        it->chart->pointer)) != KILN_E_OK)
            goto abort_slide;
        if ((st = slide_finish(&s, layout, first ? it->notes : NULL, it->pointer)) != KILN_E_OK)
            goto close_table;
        first = 0;
        continue;
    abort_slide:
        slide_abort(&s);
        goto close_table;
    }
close_table:
    pptx_table_close(t);
    if (st == KILN_E_OK && it->chart && !beside) {
        pptx_item chart_slide = *it;
        chart_slide.table = NULL;
        chart_slide.notes = NULL;
        chart_slide.layout = PPTX_LAYOUT_CONTENT;
        chart_slide.pointer = it->chart->pointer;
        return write_object_item(c, &chart_slide);
    }
    return st;
}

/* An image or a chart in the content placeholder. */
static kiln_status write_object_item(pptx_ctx *c, const pptx_item *it)
{
    const pptx_layout_info *L = &pptx_layouts[it->layout];
    pptx_slide s;
    kiln_status st = slide_begin(c, &s, it->layout, it->pointer);
    if (st != KILN_E_OK)
        goto abort_slide;
    write_title(&s, L, it->title, 0);
    st = it->image ? write_picture(&s, it->image, it->image_alt, L->body[0], it->pointer)
                   : write_chart(&s, it->chart, it->sheet, 1, L->body[0], it->pointer);
    if (st != KILN_E_OK)
        goto abort_slide;
    return slide_finish(&s, it->layout, it->notes, it->pointer);

abort_slide:
    slide_abort(&s);
    return st;
}

kiln_status pptx_slide_write_item(pptx_ctx *c, const pptx_item *it)
{
    if (it->table)
        return write_table_item(c, it);
    if (it->image || it->chart)
        return write_object_item(c, it);
    switch (it->layout) {
    case PPTX_LAYOUT_CONTENT:
    case PPTX_LAYOUT_TWO_CONTENT:
        return write_text_item(c, it);
    default: /* title, section, title only, blank */
        return write_title_item(c, it);
    }
}
