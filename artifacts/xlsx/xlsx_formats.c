/*
 * xlsx_formats.c - one lxw_format per distinct look.
 *
 * libxlsxwriter de-duplicates formats only when the file is closed, and every
 * workbook_add_format() lives until then: creating one per styled cell would
 * make a styled million-row sheet a million format objects. So the writer
 * asks this cache, keyed by the look's content (style members, number
 * format, column alignment, header/link/merge role), and styled cells share
 * a few formats. Lookups are an open-addressing hash over the key; the key's
 * strings are copied, because a CSV row's strings die with the row.
 */
#include <stdlib.h>
#include <string.h>

#include "xlsx_internal.h"
#include "../../common/banned.h"

#define HYPERLINK_COLOR 0x0563C1 /* Excel's "Hyperlink" cell style */

typedef struct entry {
    xlsx_fmt_key key; /* strings owned by the entry */
    uint64_t hash;
    lxw_format *format;
    int used;
} entry;

struct xlsx_formats {
    lxw_workbook *wb;
    const kiln_theme *theme;
    int default_font; /* theme font is libxlsxwriter's default (Calibri 11) */
    entry *slots;
    size_t cap, count;
};

lxw_color_t xlsx_color(int32_t color)
{
    /* LXW_COLOR_UNSET is 0x000000, so black needs the library's own name. */
    return color == 0 ? LXW_COLOR_BLACK : (lxw_color_t)color;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t mix_str(uint64_t h, const char *s)
{
    uint64_t f = 1469598103934665603ull; /* FNV-1a */
    if (!s)
        return mix(h, 0);
    for (; *s; s++)
        f = (f ^ (unsigned char)*s) * 1099511628211ull;
    return mix(h, f);
}

static uint64_t key_hash(const xlsx_fmt_key *k)
{
    const kiln_style *s = &k->style;
    uint64_t h = 0;
    h = mix(h, (uint64_t)s->bold | (uint64_t)s->italic << 1 | (uint64_t)s->underline << 2 |
                   (uint64_t)s->strike << 3 | (uint64_t)s->wrap << 4 | (uint64_t)k->header << 5 |
                   (uint64_t)k->link << 6 | (uint64_t)k->merge << 7);
    h = mix(h, (uint64_t)(uint32_t)s->color << 32 | (uint32_t)s->fill);
    h = mix(h, (uint64_t)(s->size * 4));
    h = mix(h, (uint64_t)s->align | (uint64_t)s->valign << 4 | (uint64_t)s->border << 8 |
                   (uint64_t)k->col_align << 12);
    h = mix_str(h, s->font);
    h = mix_str(h, k->number_format);
    return h;
}

static int str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static int key_eq(const xlsx_fmt_key *a, const xlsx_fmt_key *b)
{
    const kiln_style *x = &a->style, *y = &b->style;
    return x->bold == y->bold && x->italic == y->italic && x->underline == y->underline &&
           x->strike == y->strike && x->wrap == y->wrap && x->color == y->color &&
           x->fill == y->fill && x->size == y->size && x->align == y->align &&
           x->valign == y->valign && x->border == y->border && a->col_align == b->col_align &&
           a->header == b->header && a->link == b->link && a->merge == b->merge &&
           str_eq(x->font, y->font) && str_eq(a->number_format, b->number_format);
}

xlsx_formats *xlsx_formats_new(lxw_workbook *wb, const kiln_theme *theme)
{
    xlsx_formats *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->cap = 64;
    f->slots = calloc(f->cap, sizeof *f->slots);
    if (!f->slots) {
        free(f);
        return NULL;
    }
    f->wb = wb;
    f->theme = theme;
    f->default_font = (!theme->font || strcmp(theme->font, "Calibri") == 0) &&
                      (theme->font_size == 0 || theme->font_size == 11);
    return f;
}

static void entry_release(entry *e)
{
    free((char *)e->key.style.font);
    free((char *)e->key.number_format);
}

void xlsx_formats_free(xlsx_formats *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->cap; i++)
        if (f->slots[i].used)
            entry_release(&f->slots[i]);
    free(f->slots);
    free(f);
}

static uint8_t to_lxw_align(kiln_align a)
{
    switch (a) {
    case KILN_ALIGN_LEFT:
        return LXW_ALIGN_LEFT;
    case KILN_ALIGN_CENTER:
        return LXW_ALIGN_CENTER;
    case KILN_ALIGN_RIGHT:
        return LXW_ALIGN_RIGHT;
    case KILN_ALIGN_JUSTIFY:
        return LXW_ALIGN_JUSTIFY;
    default:
        return LXW_ALIGN_NONE;
    }
}

static uint8_t to_lxw_valign(kiln_valign a)
{
    switch (a) {
    case KILN_VALIGN_TOP:
        return LXW_ALIGN_VERTICAL_TOP;
    case KILN_VALIGN_MIDDLE:
        return LXW_ALIGN_VERTICAL_CENTER;
    case KILN_VALIGN_BOTTOM:
        return LXW_ALIGN_VERTICAL_BOTTOM;
    default:
        return LXW_ALIGN_NONE;
    }
}

static uint8_t to_lxw_border(kiln_border b)
{
    switch (b) {
    case KILN_BORDER_THIN:
        return LXW_BORDER_THIN;
    case KILN_BORDER_MEDIUM:
        return LXW_BORDER_MEDIUM;
    case KILN_BORDER_THICK:
        return LXW_BORDER_THICK;
    default:
        return LXW_BORDER_NONE;
    }
}

/* Apply the font-level members of a style (shared by cell and dxf formats). */
static void apply_font(lxw_format *fm, const kiln_style *s)
{
    if (s->bold)
        format_set_bold(fm);
    if (s->italic)
        format_set_italic(fm);
    if (s->underline)
        format_set_underline(fm, LXW_UNDERLINE_SINGLE);
    if (s->strike)
        format_set_font_strikeout(fm);
    if (s->color != KILN_COLOR_NONE)
        format_set_font_color(fm, xlsx_color(s->color));
    if (s->fill != KILN_COLOR_NONE)
        format_set_bg_color(fm, xlsx_color(s->fill));
    if (s->border != KILN_BORDER_DEFAULT && s->border != KILN_BORDER_NONE)
        format_set_border(fm, to_lxw_border(s->border));
}

static lxw_format *build(xlsx_formats *f, const xlsx_fmt_key *k)
{
    const kiln_theme *t = f->theme;
    const kiln_style *s = &k->style;
    lxw_format *fm = workbook_add_format(f->wb);
    if (!fm)
        return NULL;
    if (!f->default_font) {
        if (t->font)
            format_set_font_name(fm, t->font);
        if (t->font_size > 0)
            format_set_font_size(fm, t->font_size);
    }
    if (k->header) {
        format_set_bold(fm);
        if (t->header_fill != KILN_COLOR_NONE)
            format_set_bg_color(fm, xlsx_color(t->header_fill));
        if (t->header_font_color != KILN_COLOR_NONE)
            format_set_font_color(fm, xlsx_color(t->header_font_color));
        format_set_bottom(fm, LXW_BORDER_THIN);
    }
    if (k->link) {
        format_set_underline(fm, LXW_UNDERLINE_SINGLE);
        format_set_font_color(fm, HYPERLINK_COLOR);
    }
    apply_font(fm, s);
    if (s->wrap)
        format_set_text_wrap(fm);
    if (s->size > 0)
        format_set_font_size(fm, s->size);
    if (s->font)
        format_set_font_name(fm, s->font);
    kiln_align a = s->align != KILN_ALIGN_DEFAULT ? s->align : k->col_align;
    kiln_valign v = s->valign;
    if (k->merge) {
        /* A merged range reads as one cell: centre it unless told otherwise. */
        if (a == KILN_ALIGN_DEFAULT)
            a = KILN_ALIGN_CENTER;
        if (v == KILN_VALIGN_DEFAULT)
            v = KILN_VALIGN_MIDDLE;
    }
    if (a != KILN_ALIGN_DEFAULT)
        format_set_align(fm, to_lxw_align(a));
    if (v != KILN_VALIGN_DEFAULT)
        format_set_align(fm, to_lxw_valign(v));
    if (k->number_format)
        format_set_num_format(fm, k->number_format);
    return fm;
}

static int is_plain(const xlsx_fmt_key *k)
{
    const kiln_style *s = &k->style;
    return !k->header && !k->link && !k->merge && !k->number_format &&
           k->col_align == KILN_ALIGN_DEFAULT && !s->bold && !s->italic && !s->underline &&
           !s->strike && !s->wrap && s->color == KILN_COLOR_NONE && s->fill == KILN_COLOR_NONE &&
           s->size == 0 && !s->font && s->align == KILN_ALIGN_DEFAULT &&
           s->valign == KILN_VALIGN_DEFAULT && s->border == KILN_BORDER_DEFAULT;
}

static int grow(xlsx_formats *f)
{
    size_t ncap = f->cap * 2;
    entry *n = calloc(ncap, sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; i < f->cap; i++) {
        if (!f->slots[i].used)
            continue;
        size_t j = (size_t)f->slots[i].hash & (ncap - 1);
        while (n[j].used)
            j = (j + 1) & (ncap - 1);
        n[j] = f->slots[i];
    }
    free(f->slots);
    f->slots = n;
    f->cap = ncap;
    return 0;
}

lxw_format *xlsx_formats_get(xlsx_formats *f, const xlsx_fmt_key *key, int *oom)
{
    *oom = 0;
    if (f->default_font && is_plain(key))
        return NULL;
    uint64_t h = key_hash(key);
    size_t i = (size_t)h & (f->cap - 1);
    while (f->slots[i].used) {
        if (f->slots[i].hash == h && key_eq(&f->slots[i].key, key))
            return f->slots[i].format;
        i = (i + 1) & (f->cap - 1);
    }
    if ((f->count + 1) * 2 > f->cap) {
        if (grow(f) != 0)
            goto fail_oom;
        i = (size_t)h & (f->cap - 1);
        while (f->slots[i].used)
            i = (i + 1) & (f->cap - 1);
    }
    entry e = {.key = *key, .hash = h, .used = 1};
    e.key.style.font = NULL;
    e.key.number_format = NULL;
    if (key->style.font && !(e.key.style.font = strdup(key->style.font)))
        goto fail_oom;
    if (key->number_format && !(e.key.number_format = strdup(key->number_format)))
        goto fail_release;
    e.format = build(f, key);
    if (!e.format)
        goto fail_release;
    f->slots[i] = e;
    f->count++;
    return e.format;

fail_release:
    entry_release(&e);
fail_oom:
    *oom = 1;
    return NULL;
}

lxw_format *xlsx_formats_dxf(xlsx_formats *f, const kiln_style *style)
{
    /* Conditional formats are few; each gets its own (Excel cannot change
     * font name, size or alignment through one anyway). */
    lxw_format *fm = workbook_add_format(f->wb);
    if (fm)
        apply_font(fm, style);
    return fm;
}
