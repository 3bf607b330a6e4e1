/*
 * markdown.c - see markdown.h.
 *
 * md4c is a push parser: it calls enter/leave callbacks for blocks and spans
 * and a text callback for the characters in between. This file keeps a stack
 * of the open blocks ("frames") and turns them into kiln_block values:
 *
 *   - A leaf block (paragraph, heading, code) at the top level becomes a block
 *     of its own; its text collects in a text builder (a byte buffer plus a
 *     list of runs with their formatting flags).
 *   - A list at the top level becomes a KILN_BLOCK_LIST; each item has its own
 *     text builder, and a list directly inside an item becomes that item's
 *     children. Loose items with several paragraphs get them joined by "\n".
 *   - A block quote at the top level becomes a KILN_BLOCK_QUOTE; everything
 *     inside it (paragraphs, headings, lists, code, nested quotes) is
 *     flattened into the quote's one text, a line per paragraph or item.
 *     The same flattening applies to quotes inside list items.
 *   - A table becomes a KILN_BLOCK_TABLE with its rows as a JSON array of
 *     arrays of strings (empty cells are null, i.e. blank). A table nested in
 *     a list or quote cannot be part of that block's text without losing its
 *     data, so it is emitted as a block of its own right after the top-level
 *     block that contains it.
 *
 * Raw HTML is never passed through: md4c runs with MD_FLAG_NOHTML, so tags
 * arrive as ordinary (literal) text. Links keep their URL only for the
 * schemes the spec allows (http, https, mailto, ftp); others become plain
 * text. Images are never fetched: their alt text stands in their place.
 * Entities are decoded (numeric ones, and the common named ones; unknown
 * names stay literal). Task-list markers ("- [ ] x") are not an extension
 * here: they stay literal text.
 *
 * Text is checked once, up front, for invalid UTF-8 and for the characters
 * XML 1.0 cannot hold; decoded entities are checked as they are decoded.
 */
#include "markdown.h"

#include <md4c.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/utf8.h"
#include "spec_internal.h"
#include "../../common/banned.h"

#define MD_FLAGS \
    (MD_FLAG_TABLES | MD_FLAG_STRIKETHROUGH | MD_FLAG_PERMISSIVEAUTOLINKS | MD_FLAG_NOHTML)

/* Zero bytes after the copy of the input md4c parses (see below). */
#define MD_PAD 64

/* ---- growing arrays ---- */

/* Make room for need elements of elem bytes in *p (capacity *cap). 0 / -1. */
static int grow(void *p, size_t *cap, size_t need, size_t elem)
{
    void **pp = p;
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return -1;
        n *= 2;
    }
    if (n > SIZE_MAX / elem)
        return -1;
    void *q = realloc(*pp, n * elem);
    if (!q)
        return -1;
    *pp = q;
    *cap = n;
    return 0;
}

/* ---- text builders ---- */

typedef struct tb_run {
    size_t off, len;
    unsigned flags;
    const char *link; /* arena string or NULL */
} tb_run;

typedef struct text_builder {
    char *buf;
    size_t len, cap;
    tb_run *runs;
    size_t run_count, run_cap;
    unsigned base_flags; /* added to every run (headings flattened into text: bold) */
    int need_sep;        /* a leaf block ended: the next one starts on a new line */
} text_builder;

static void tb_free(text_builder *tb)
{
    if (!tb)
        return;
    free(tb->buf);
    free(tb->runs);
    free(tb);
}

/* ---- frames: the open md4c blocks ---- */

typedef struct frame {
    MD_BLOCKTYPE type;
    int owns;                 /* leaf/quote: builds a block of its own; list/item: structural */
    text_builder *tb;         /* owned builder (freed with the frame) */
    text_builder *saved_sink; /* sink to restore on leave */
    unsigned saved_base;      /* base flags of the sink to restore on leave */
    /* lists */
    int ordered;
    unsigned counter; /* next number (flattened ordered lists) */
    unsigned start;
    kiln_list_item *items;
    size_t item_count, item_cap;
    /* list items */
    size_t item_index;
    /* headings, code */
    size_t mark; /* flattened leaf: the sink's length when it started */
    int level;
    const char *language;
} frame;

typedef struct md_state {
    kiln_arena *arena;
    size_t input_len;
    const char *pointer;     /* arena copy, shared by every block */
    const char *err_pointer; /* pointer + "/text": the markdown text, named by errors */
    kiln_limits limits;
    kiln_error *err;
    kiln_status status;

    kiln_block *blocks;
    size_t block_count, block_cap;
    kiln_block *pending; /* tables found inside a list or quote, emitted after it */
    size_t pending_count, pending_cap;

    frame *frames;
    size_t frame_count, frame_cap;
    text_builder *sink;       /* where text goes; NULL outside leaf blocks */
    unsigned lists_open;      /* lists open now, structural or flattened */
    unsigned flat_lists_open; /* ... of which flattened into a shared text */

    /* spans */
    unsigned strong, em, del, code;
    const char **links; /* stack: one entry per open link (NULL = not a kept link) */
    size_t link_count, link_cap;

    /* the table being built */
    kiln_block table_block;
    kiln_table *table;
    json_t *rows; /* the body rows built so far (owned until the table ends) */
    json_t *row;  /* the body row being built (owned until appended) */
    int in_head;
    unsigned col; /* cell index in the current row */
    unsigned col_count;
    text_builder *cell; /* builder for the current cell */
} md_state;

/* ---- errors ---- */

static int fail_nomem(md_state *st)
{
    if (st->status == KILN_E_OK)
        kiln_error_set(st->err, KILN_E_NOMEM, st->err_pointer, "markdown: out of memory");
    st->status = KILN_E_NOMEM;
    return -1;
}

static int fail_internal(md_state *st)
{
    if (st->status == KILN_E_OK)
        kiln_error_set(st->err, KILN_E_INTERNAL, st->err_pointer,
                       "markdown: unbalanced blocks from the parser");
    st->status = KILN_E_INTERNAL;
    return -1;
}

static int fail_invalid(md_state *st, const char *what)
{
    if (st->status == KILN_E_OK)
        kiln_error_set(st->err, KILN_E_INVALID_SPEC, st->err_pointer,
                       "markdown: %s is not allowed in text (XML cannot hold it)", what);
    st->status = KILN_E_INVALID_SPEC;
    return -1;
}

/* ---- UTF-8 helpers ---- */

static int xml_illegal(unsigned long cp)
{
    return (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xFFFE || cp == 0xFFFF;
}

/*
 * Check the whole input once: valid UTF-8 and no character XML 1.0 forbids.
 * Everything md4c hands back is a slice of this input, so after this only
 * decoded entities can still introduce such a character.
 */
static int check_input(md_state *st, const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c < 0x80) {
            if (xml_illegal(c)) {
                char what[48];
                snprintf(what, sizeof what, "control character U+%04X", c);
                return fail_invalid(st, what);
            }
            i++;
            continue;
        }
        size_t n;
        unsigned long cp, min;
        if ((c & 0xE0) == 0xC0) {
            n = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return fail_invalid(st, "invalid UTF-8");
        }
        if (len - i < n)
            return fail_invalid(st, "invalid UTF-8");
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return fail_invalid(st, "invalid UTF-8");
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail_invalid(st, "invalid UTF-8");
        if (xml_illegal(cp)) {
            char what[48];
            snprintf(what, sizeof what, "character U+%04lX", cp);
            return fail_invalid(st, what);
        }
        i += n;
    }
    return 0;
}

/* Characters (code points) in valid UTF-8. */
static size_t utf8_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/*
 * Decode an entity ("&amp;", "&#169;", "&#xA9;") into out (at most 4 bytes).
 * Returns the number of bytes, 0 when the entity is not known (the caller
 * keeps it literally), or -1 (error set) when it decodes to a character XML
 * forbids.
 */
static int decode_entity(md_state *st, const char *s, size_t len, char out[4])
{
    static const struct {
        const char *name;
        unsigned long cp;
    } named[] = {
        {"amp", '&'},      {"lt", '<'},       {"gt", '>'},        {"quot", '"'},
        {"apos", '\''},    {"nbsp", 0xA0},    {"copy", 0xA9},     {"reg", 0xAE},
        {"mdash", 0x2014}, {"ndash", 0x2013}, {"hellip", 0x2026},
    };
    if (len < 3 || s[0] != '&' || s[len - 1] != ';')
        return 0;
    const char *body = s + 1;
    size_t blen = len - 2;
    unsigned long cp = 0;
    if (body[0] == '#') {
        size_t i = 1;
        int hex = 0;
        if (i < blen && (body[i] == 'x' || body[i] == 'X')) {
            hex = 1;
            i++;
        }
        if (i == blen)
            return 0;
        for (; i < blen; i++) {
            char c = body[i];
            int d;
            if (c >= '0' && c <= '9')
                d = c - '0';
            else if (hex && c >= 'a' && c <= 'f')
                d = c - 'a' + 10;
            else if (hex && c >= 'A' && c <= 'F')
                d = c - 'A' + 10;
            else
                return 0;
            if (cp <= 0x10FFFF) /* saturate: anything larger is invalid anyway */
                cp = cp * (hex ? 16 : 10) + (unsigned long)d;
        }
        /* CommonMark: invalid code points and NUL become U+FFFD. */
        if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            cp = 0xFFFD;
        if (xml_illegal(cp)) {
            char what[48];
            snprintf(what, sizeof what, "character U+%04lX (from an entity)", cp);
            return fail_invalid(st, what);
        }
        return (int)kiln_utf8_encode((uint32_t)cp, out);
    }
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        if (strlen(named[k].name) == blen && memcmp(named[k].name, body, blen) == 0)
            return (int)kiln_utf8_encode((uint32_t)named[k].cp, out);
    }
    return 0;
}

/* ---- text builder operations ---- */

static text_builder *tb_new(md_state *st)
{
    text_builder *tb = calloc(1, sizeof *tb);
    if (!tb)
        fail_nomem(st);
    return tb;
}

static int tb_append(md_state *st, text_builder *tb, const char *s, size_t n, unsigned flags,
                     const char *link)
{
    if (n == 0)
        return 0;
    if (n > SIZE_MAX - tb->len || grow(&tb->buf, &tb->cap, tb->len + n, 1) < 0)
        return fail_nomem(st);
    memcpy(tb->buf + tb->len, s, n);
    tb_run *last = tb->run_count ? &tb->runs[tb->run_count - 1] : NULL;
    if (last && last->flags == flags && last->link == link && last->off + last->len == tb->len) {
        last->len += n;
    } else {
        if (grow(&tb->runs, &tb->run_cap, tb->run_count + 1, sizeof *tb->runs) < 0)
            return fail_nomem(st);
        tb->runs[tb->run_count++] = (tb_run){tb->len, n, flags, link};
    }
    tb->len += n;
    return 0;
}

/* Start a new line in a shared builder when a leaf block came before. */
static int tb_separate(md_state *st, text_builder *tb)
{
    int r = 0;
    if (tb->need_sep)
        r = tb_append(st, tb, "\n", 1, tb->base_flags & ~(unsigned)KILN_RUN_CODE, NULL);
    tb->need_sep = 0;
    return r;
}

/* Copy a builder's runs into the arena as a kiln_text (each run NUL-terminated). */
static int tb_finish(md_state *st, const text_builder *tb, kiln_text *out)
{
    out->runs = NULL;
    out->run_count = 0;
    if (!tb || tb->run_count == 0)
        return 0;
    kiln_run *runs = kiln_arena_calloc(st->arena, tb->run_count, sizeof *runs);
    char *text = kiln_arena_alloc(st->arena, tb->len + tb->run_count);
    if (!runs || !text)
        return fail_nomem(st);
    for (size_t i = 0; i < tb->run_count; i++) {
        const tb_run *r = &tb->runs[i];
        memcpy(text, tb->buf + r->off, r->len);
        text[r->len] = '\0';
        runs[i] = (kiln_run){.text = text,
                             .len = r->len,
                             .flags = r->flags,
                             .color = KILN_COLOR_NONE,
                             .size = 0,
                             .font = NULL,
                             .link = r->link};
        text += r->len + 1;
    }
    out->runs = runs;
    out->run_count = tb->run_count;
    return 0;
}

/* ---- attributes (URLs, info strings) ---- */

/* An md4c attribute with its entities decoded, as an arena string. */
static char *attr_string(md_state *st, const MD_ATTRIBUTE *a)
{
    /* Decoding never makes text longer than its entity (at most 4 bytes for >= 4 chars). */
    char *out = kiln_arena_alloc(st->arena, (size_t)a->size + 4);
    if (!out) {
        fail_nomem(st);
        return NULL;
    }
    size_t o = 0;
    for (unsigned i = 0; a->substr_offsets[i] < a->size; i++) {
        const char *s = a->text + a->substr_offsets[i];
        size_t n = a->substr_offsets[i + 1] - a->substr_offsets[i];
        if (a->substr_types[i] == MD_TEXT_ENTITY) {
            char buf[4];
            int k = decode_entity(st, s, n, buf);
            if (k < 0)
                return NULL;
            if (k > 0) {
                memcpy(out + o, buf, (size_t)k);
                o += (size_t)k;
                continue;
            }
        } else if (a->substr_types[i] == MD_TEXT_NULLCHAR) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            continue;
        }
        memcpy(out + o, s, n);
        o += n;
    }
    out[o] = '\0';
    return out;
}

static int ascii_prefix(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++) {
        char c = *s;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != *prefix)
            return 0;
    }
    return 1;
}

/* The URL a link keeps, or NULL when its scheme is not one the spec allows. */
static const char *link_url(md_state *st, const MD_ATTRIBUTE *href)
{
    static const char *const schemes[] = {"http:", "https:", "mailto:", "ftp:"};
    char *url = attr_string(st, href);
    if (!url)
        return NULL;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        if (ascii_prefix(url, schemes[i]))
            return url;
    }
    /* Permissive autolinks: "www.example.com" means http. */
    if (ascii_prefix(url, "www.")) {
        char *full = kiln_arena_printf(st->arena, "http://%s", url);
        if (!full)
            fail_nomem(st);
        return full;
    }
    return NULL;
}

/* ---- emitting blocks ---- */

static kiln_block *new_block(md_state *st, kiln_block_kind kind)
{
    if (grow(&st->blocks, &st->block_cap, st->block_count + 1, sizeof *st->blocks) < 0) {
        fail_nomem(st);
        return NULL;
    }
    kiln_block *b = &st->blocks[st->block_count++];
    memset(b, 0, sizeof *b);
    b->kind = kind;
    b->pointer = st->pointer;
    return b;
}

static int flush_pending(md_state *st)
{
    for (size_t i = 0; i < st->pending_count; i++) {
        kiln_block *b = new_block(st, KILN_BLOCK_TABLE);
        if (!b)
            return -1;
        *b = st->pending[i];
    }
    st->pending_count = 0;
    return 0;
}

/* ---- frames ---- */

static frame *push_frame(md_state *st, MD_BLOCKTYPE type)
{
    if (grow(&st->frames, &st->frame_cap, st->frame_count + 1, sizeof *st->frames) < 0) {
        fail_nomem(st);
        return NULL;
    }
    frame *f = &st->frames[st->frame_count++];
    memset(f, 0, sizeof *f);
    f->type = type;
    f->saved_sink = st->sink;
    f->saved_base = st->sink ? st->sink->base_flags : 0;
    return f;
}

static frame *top_frame(md_state *st)
{
    return st->frame_count ? &st->frames[st->frame_count - 1] : NULL;
}

static frame *parent_frame(md_state *st)
{
    return st->frame_count >= 2 ? &st->frames[st->frame_count - 2] : NULL;
}

static void frame_release(frame *f)
{
    tb_free(f->tb);
    f->tb = NULL;
    free(f->items);
    f->items = NULL;
}

/* A leaf block (paragraph, heading, code) opens: its own builder or the sink. */
static int enter_leaf(md_state *st, frame *f)
{
    if (st->sink) {
        if (tb_separate(st, st->sink) < 0)
            return -1;
        f->mark = st->sink->len;
        if (f->type == MD_BLOCK_H)
            st->sink->base_flags |= KILN_RUN_BOLD;
        else if (f->type == MD_BLOCK_CODE)
            st->sink->base_flags |= KILN_RUN_CODE;
        return 0;
    }
    f->owns = 1;
    f->tb = tb_new(st);
    if (!f->tb)
        return -1;
    st->sink = f->tb;
    return 0;
}

/* ---- tables ---- */

static int check_cell(md_state *st, const text_builder *tb)
{
    size_t chars = utf8_chars(tb->buf, tb->len);
    if (chars > st->limits.cell_chars) {
        if (st->status == KILN_E_OK)
            kiln_error_limit(st->err, KILN_E_LIMIT, st->err_pointer, st->limits.cell_chars, chars,
                             "markdown: a table cell has %zu characters; the limit is %u", chars,
                             (unsigned)st->limits.cell_chars);
        st->status = KILN_E_LIMIT;
        return -1;
    }
    return 0;
}

static int table_enter(md_state *st, const MD_BLOCK_TABLE_DETAIL *d)
{
    if (d->col_count > st->limits.columns) {
        kiln_error_limit(st->err, KILN_E_LIMIT, st->err_pointer, st->limits.columns, d->col_count,
                         "markdown: a table has %u columns; the limit is %u", d->col_count,
                         (unsigned)st->limits.columns);
        st->status = KILN_E_LIMIT;
        return -1;
    }
    /* rows: data rows plus the header row */
    if ((uint64_t)d->body_row_count + 1 > st->limits.rows) {
        kiln_error_limit(st->err, KILN_E_LIMIT, st->err_pointer, st->limits.rows,
                         (uint64_t)d->body_row_count + 1,
                         "markdown: a table has %u rows with its header; the limit is %u",
                         d->body_row_count + 1, (unsigned)st->limits.rows);
        st->status = KILN_E_LIMIT;
        return -1;
    }
    kiln_table *t = kiln_arena_alloc(st->arena, sizeof *t);
    kiln_column *cols = kiln_arena_calloc(st->arena, d->col_count ? d->col_count : 1,
                                          sizeof *cols);
    json_t *rows = json_array();
    if (!t || !cols || !rows) {
        json_decref(rows);
        return fail_nomem(st);
    }
    for (unsigned i = 0; i < d->col_count; i++) {
        cols[i].header = "";
        cols[i].key = "";
        cols[i].type = KILN_COL_STRING;
        cols[i].width = -1;
    }
    t->data.columns = cols;
    t->data.column_count = d->col_count;
    t->data.header = 1;
    t->data.source = KILN_ROWS_INLINE;
    t->data.pointer = st->err_pointer;
    st->table = t;
    st->rows = rows;
    st->col_count = d->col_count;
    st->cell = tb_new(st);
    return st->cell ? 0 : -1;
}

static kiln_align md_align(MD_ALIGN a)
{
    switch (a) {
    case MD_ALIGN_LEFT:
        return KILN_ALIGN_LEFT;
    case MD_ALIGN_CENTER:
        return KILN_ALIGN_CENTER;
    case MD_ALIGN_RIGHT:
        return KILN_ALIGN_RIGHT;
    default:
        return KILN_ALIGN_DEFAULT;
    }
}

static int cell_leave(md_state *st, MD_BLOCKTYPE type, const MD_BLOCK_TD_DETAIL *d)
{
    text_builder *tb = st->cell;
    st->sink = NULL;
    if (check_cell(st, tb) < 0)
        return -1;
    unsigned col = st->col++;
    if (col >= st->col_count) /* md4c never sends more cells than columns; be sure */
        goto done;
    if (type == MD_BLOCK_TH) {
        kiln_column *c = &st->table->data.columns[col];
        char *h = kiln_arena_strndup(st->arena, tb->buf ? tb->buf : "", tb->len);
        if (!h)
            return fail_nomem(st);
        c->header = h;
        c->key = h;
        c->align = md_align(d->align);
    } else if (st->row) {
        json_t *v = tb->len ? json_stringn(tb->buf, tb->len) : json_null();
        if (!v || json_array_append_new(st->row, v) < 0)
            return fail_nomem(st);
    }
done:
    tb->len = 0;
    tb->run_count = 0;
    return 0;
}

static int table_leave(md_state *st)
{
    kiln_table *t = st->table;
    /* The rows as the model keeps every table's: their text. */
    t->data.private_rows = kiln_inline_rows_from_json(st->arena, st->rows);
    t->data.inline_row_count = json_array_size(st->rows);
    json_decref(st->rows);
    tb_free(st->cell);
    st->cell = NULL;
    st->table = NULL;
    st->rows = NULL;
    if (!t->data.private_rows)
        return fail_nomem(st);

    kiln_block b;
    memset(&b, 0, sizeof b);
    b.kind = KILN_BLOCK_TABLE;
    b.pointer = st->pointer;
    b.table = t;
    /* frames: DOC, TABLE -> top level; anything deeper is inside a list or quote */
    if (st->frame_count <= 2) {
        kiln_block *nb = new_block(st, KILN_BLOCK_TABLE);
        if (!nb)
            return -1;
        *nb = b;
        return 0;
    }
    if (grow(&st->pending, &st->pending_cap, st->pending_count + 1, sizeof *st->pending) < 0)
        return fail_nomem(st);
    st->pending[st->pending_count++] = b;
    return 0;
}

/* ---- md4c callbacks ---- */

static int enter_block(MD_BLOCKTYPE type, void *detail, void *userdata)
{
    md_state *st = userdata;
    frame *f = push_frame(st, type);
    if (!f)
        return -1;
    frame *parent = parent_frame(st);

    switch (type) {
    case MD_BLOCK_DOC:
        return 0;

    case MD_BLOCK_QUOTE:
        if (st->sink) { /* inside a list item or quote: flatten into its text */
            return tb_separate(st, st->sink);
        }
        f->owns = 1;
        f->tb = tb_new(st);
        if (!f->tb)
            return -1;
        st->sink = f->tb;
        return 0;

    case MD_BLOCK_UL:
    case MD_BLOCK_OL: {
        unsigned depth = ++st->lists_open;
        if (depth > st->limits.list_depth) {
            kiln_error_limit(st->err, KILN_E_LIMIT, st->err_pointer, st->limits.list_depth, depth,
                             "markdown: lists nest %u levels deep; the limit is %u", depth,
                             (unsigned)st->limits.list_depth);
            st->status = KILN_E_LIMIT;
            return -1;
        }
        f->ordered = type == MD_BLOCK_OL;
        f->start = f->ordered ? ((MD_BLOCK_OL_DETAIL *)detail)->start : 1;
        if (f->start > INT_MAX)
            f->start = INT_MAX;
        f->counter = f->start;
        /* structural: at the top level, or directly in an item of a structural list */
        f->owns = parent &&
                  (parent->type == MD_BLOCK_DOC || (parent->type == MD_BLOCK_LI && parent->owns));
        st->flat_lists_open += !f->owns;
        return 0;
    }

    case MD_BLOCK_LI: {
        frame *list = parent_frame(st); /* push_frame may have moved the stack */
        if (!list)
            return fail_internal(st);
        if (list->owns) {
            if (grow(&list->items, &list->item_cap, list->item_count + 1, sizeof *list->items) <
                0)
                return fail_nomem(st);
            memset(&list->items[list->item_count], 0, sizeof list->items[0]);
            f->item_index = list->item_count++;
            f->owns = 1;
            f->tb = tb_new(st);
            if (!f->tb)
                return -1;
            st->sink = f->tb;
            return 0;
        }
        /* flattened: a line "  • text" or "  3. text" in the shared text */
        text_builder *tb = st->sink;
        if (!tb)
            return 0;
        if (tb->len)
            tb->need_sep = 1;
        if (tb_separate(st, tb) < 0)
            return -1;
        unsigned indent = st->flat_lists_open;
        for (unsigned i = 1; i < indent; i++)
            if (tb_append(st, tb, "  ", 2, tb->base_flags, NULL) < 0)
                return -1;
        char marker[24];
        if (list->ordered)
            snprintf(marker, sizeof marker, "%u. ", list->counter++);
        else
            snprintf(marker, sizeof marker, "\xE2\x80\xA2 ");
        return tb_append(st, tb, marker, strlen(marker), tb->base_flags, NULL);
    }

    case MD_BLOCK_HR:
        if (!st->sink && !new_block(st, KILN_BLOCK_RULE))
            return -1;
        return 0;

    case MD_BLOCK_H:
        f->level = (int)((MD_BLOCK_H_DETAIL *)detail)->level;
        return enter_leaf(st, f);

    case MD_BLOCK_CODE: {
        MD_BLOCK_CODE_DETAIL *d = detail;
        if (d->lang.size) {
            char *lang = attr_string(st, &d->lang);
            if (!lang)
                return -1;
            f->language = lang;
        }
        return enter_leaf(st, f);
    }

    case MD_BLOCK_HTML: /* not produced with MD_FLAG_NOHTML; literal text if it were */
    case MD_BLOCK_P:
        return enter_leaf(st, f);

    case MD_BLOCK_TABLE:
        if (st->table) /* md4c does not nest tables */
            return 0;
        f->saved_sink = st->sink;
        st->sink = NULL;
        return table_enter(st, detail);

    case MD_BLOCK_THEAD:
        st->in_head = 1;
        return 0;
    case MD_BLOCK_TBODY:
        st->in_head = 0;
        return 0;
    case MD_BLOCK_TR:
        st->col = 0;
        if (!st->in_head && st->table) {
            st->row = json_array();
            if (!st->row)
                return fail_nomem(st);
        }
        return 0;
    case MD_BLOCK_TH:
    case MD_BLOCK_TD:
        if (st->cell) {
            st->cell->len = 0;
            st->cell->run_count = 0;
            st->sink = st->cell;
        }
        return 0;
    }
    return 0;
}

/* Build the kiln_list of a structural list frame in the arena. */
static kiln_list *finish_list(md_state *st, const frame *f, kiln_list *out)
{
    out->ordered = f->ordered;
    out->start = (int)f->start;
    out->item_count = f->item_count;
    out->items = NULL;
    if (f->item_count) {
        out->items = kiln_arena_calloc(st->arena, f->item_count, sizeof *out->items);
        if (!out->items) {
            fail_nomem(st);
            return NULL;
        }
        memcpy(out->items, f->items, f->item_count * sizeof *out->items);
    }
    return out;
}

/* A top-level leaf block ends: emit it (an empty paragraph, e.g. a lone image
 * without alt text, is dropped). */
static int leaf_leave(md_state *st, const frame *f)
{
    text_builder *tb = f->tb;
    kiln_block *b;
    switch (f->type) {
    case MD_BLOCK_CODE: {
        size_t n = tb->len;
        if (n && tb->buf[n - 1] == '\n') /* the last line's end */
            n--;
        b = new_block(st, KILN_BLOCK_CODE);
        if (!b)
            return -1;
        b->code = kiln_arena_strndup(st->arena, tb->buf ? tb->buf : "", n);
        b->language = f->language;
        return b->code ? 0 : fail_nomem(st);
    }
    case MD_BLOCK_H:
        b = new_block(st, KILN_BLOCK_HEADING);
        if (!b)
            return -1;
        b->level = f->level;
        return tb_finish(st, tb, &b->text);
    default:
        if (!tb->run_count)
            return 0;
        b = new_block(st, KILN_BLOCK_PARAGRAPH);
        if (!b)
            return -1;
        return tb_finish(st, tb, &b->text);
    }
}

static int leave_block(MD_BLOCKTYPE type, void *detail, void *userdata)
{
    md_state *st = userdata;
    frame *f = top_frame(st);
    int r = 0;
    if (!f || f->type != type) /* md4c balances blocks; never trust it blindly */
        return fail_internal(st);

    switch (type) {
    case MD_BLOCK_DOC:
    case MD_BLOCK_HR:
    case MD_BLOCK_THEAD:
    case MD_BLOCK_TBODY:
        break;

    case MD_BLOCK_QUOTE:
        if (f->owns) {
            kiln_block *b = new_block(st, KILN_BLOCK_QUOTE);
            r = b ? tb_finish(st, f->tb, &b->text) : -1;
            st->sink = f->saved_sink;
        } else if (st->sink) {
            st->sink->need_sep = 1;
        }
        break;

    case MD_BLOCK_UL:
    case MD_BLOCK_OL:
        st->lists_open--;
        st->flat_lists_open -= !f->owns;
        if (f->owns) {
            frame *parent = parent_frame(st);
            if (parent->type == MD_BLOCK_DOC) {
                kiln_block *b = new_block(st, KILN_BLOCK_LIST);
                r = b && finish_list(st, f, &b->list) ? 0 : -1;
            } else { /* a structural item: the list becomes its children */
                frame *owner = &st->frames[st->frame_count - 3];
                kiln_list_item *item = &owner->items[parent->item_index];
                kiln_list *l = kiln_arena_alloc(st->arena, sizeof *l);
                if (!l || !finish_list(st, f, l)) {
                    r = fail_nomem(st);
                } else if (item->children) {
                    /* a second list in the same item: append its items */
                    kiln_list *old = item->children;
                    size_t n = old->item_count + l->item_count;
                    kiln_list_item *all = kiln_arena_calloc(st->arena, n, sizeof *all);
                    if (!all) {
                        r = fail_nomem(st);
                    } else {
                        if (old->item_count)
                            memcpy(all, old->items, old->item_count * sizeof *all);
                        if (l->item_count)
                            memcpy(all + old->item_count, l->items, l->item_count * sizeof *all);
                        old->items = all;
                        old->item_count = n;
                    }
                } else {
                    item->children = l;
                }
            }
        } else if (st->sink) {
            st->sink->need_sep = 1;
        }
        break;

    case MD_BLOCK_LI:
        if (f->owns) {
            frame *list = parent_frame(st);
            r = tb_finish(st, f->tb, &list->items[f->item_index].text);
            st->sink = f->saved_sink;
        } else if (st->sink) {
            st->sink->need_sep = 1;
        }
        break;

    case MD_BLOCK_H:
    case MD_BLOCK_P:
    case MD_BLOCK_HTML:
    case MD_BLOCK_CODE:
        if (f->owns) {
            r = leaf_leave(st, f);
            st->sink = f->saved_sink;
        } else if (st->sink) {
            text_builder *tb = st->sink;
            if (type == MD_BLOCK_CODE && tb->len > f->mark && tb->buf[tb->len - 1] == '\n') {
                /* drop the code block's last line end: the separator adds one */
                tb->len--;
                tb_run *last = &tb->runs[tb->run_count - 1];
                if (--last->len == 0)
                    tb->run_count--;
            }
            tb->base_flags = f->saved_base;
            tb->need_sep = 1;
        }
        break;

    case MD_BLOCK_TABLE:
        if (st->table) {
            r = table_leave(st);
            st->sink = f->saved_sink;
        }
        break;

    case MD_BLOCK_TR:
        if (st->row) {
            /* pad short rows (md4c pads already) so every row has every column */
            while (r == 0 && json_array_size(st->row) < st->col_count) {
                if (json_array_append_new(st->row, json_null()) < 0)
                    r = fail_nomem(st);
            }
            if (r == 0 && json_array_append_new(st->rows, st->row) < 0)
                r = fail_nomem(st);
            st->row = NULL;
        }
        break;

    case MD_BLOCK_TH:
    case MD_BLOCK_TD:
        if (st->cell)
            r = cell_leave(st, type, detail);
        break;
    }

    frame_release(f);
    st->frame_count--;
    if (r == 0 && st->frame_count == 1 && st->pending_count)
        r = flush_pending(st);
    return r < 0 ? -1 : 0;
}

static unsigned span_flags(const md_state *st)
{
    unsigned flags = st->sink ? st->sink->base_flags : 0;
    if (st->strong)
        flags |= KILN_RUN_BOLD;
    if (st->em)
        flags |= KILN_RUN_ITALIC;
    if (st->del)
        flags |= KILN_RUN_STRIKE;
    if (st->code)
        flags |= KILN_RUN_CODE;
    return flags;
}

static const char *span_link(const md_state *st)
{
    for (size_t i = st->link_count; i > 0; i--)
        if (st->links[i - 1])
            return st->links[i - 1];
    return NULL;
}

static int enter_span(MD_SPANTYPE type, void *detail, void *userdata)
{
    md_state *st = userdata;
    switch (type) {
    case MD_SPAN_STRONG:
        st->strong++;
        break;
    case MD_SPAN_EM:
        st->em++;
        break;
    case MD_SPAN_DEL:
        st->del++;
        break;
    case MD_SPAN_CODE:
        st->code++;
        break;
    case MD_SPAN_A: {
        const char *url = NULL;
        if (!st->table) { /* table cells are plain text: no need for the URL */
            url = link_url(st, &((MD_SPAN_A_DETAIL *)detail)->href);
            if (!url && st->status != KILN_E_OK)
                return -1;
        }
        if (grow(&st->links, &st->link_cap, st->link_count + 1, sizeof *st->links) < 0)
            return fail_nomem(st);
        st->links[st->link_count++] = url;
        break;
    }
    default: /* images: their alt text arrives as text; nothing else is enabled */
        break;
    }
    return 0;
}

static int leave_span(MD_SPANTYPE type, void *detail, void *userdata)
{
    md_state *st = userdata;
    (void)detail;
    switch (type) {
    case MD_SPAN_STRONG:
        st->strong -= st->strong > 0;
        break;
    case MD_SPAN_EM:
        st->em -= st->em > 0;
        break;
    case MD_SPAN_DEL:
        st->del -= st->del > 0;
        break;
    case MD_SPAN_CODE:
        st->code -= st->code > 0;
        break;
    case MD_SPAN_A:
        st->link_count -= st->link_count > 0;
        break;
    default:
        break;
    }
    return 0;
}

static int on_text(MD_TEXTTYPE type, const MD_CHAR *text, MD_SIZE size, void *userdata)
{
    md_state *st = userdata;
    text_builder *tb = st->sink;
    /* Never trust a length from the parser blindly. Text is a slice of the
     * input, except code-block indentation, which md4c sends from a static
     * string of spaces in chunks of at most 16 bytes. */
    if (size > st->input_len && size > 16) {
        kiln_error_set(st->err, KILN_E_INTERNAL, st->err_pointer,
                       "markdown: the parser returned a text of %u bytes", (unsigned)size);
        st->status = KILN_E_INTERNAL;
        return -1;
    }
    if (!tb)
        return 0;
    unsigned flags = span_flags(st);
    const char *link = span_link(st);
    switch (type) {
    case MD_TEXT_NULLCHAR:
        return tb_append(st, tb, "\xEF\xBF\xBD", 3, flags, link) < 0 ? -1 : 0;
    case MD_TEXT_BR:
        return tb_append(st, tb, "\n", 1, flags & ~(unsigned)KILN_RUN_CODE, link) < 0 ? -1 : 0;
    case MD_TEXT_SOFTBR:
        return tb_append(st, tb, " ", 1, flags, link) < 0 ? -1 : 0;
    case MD_TEXT_ENTITY: {
        char buf[4];
        int n = decode_entity(st, text, size, buf);
        if (n < 0)
            return -1;
        if (n > 0)
            return tb_append(st, tb, buf, (size_t)n, flags, link) < 0 ? -1 : 0;
        break; /* unknown: literal */
    }
    default: /* NORMAL, CODE, HTML (literal), LATEXMATH */
        break;
    }
    return tb_append(st, tb, text, size, flags, link) < 0 ? -1 : 0;
}

/* ---- entry point ---- */

static void state_release(md_state *st)
{
    for (size_t i = 0; i < st->frame_count; i++)
        frame_release(&st->frames[i]);
    free(st->frames);
    free(st->blocks);
    free(st->pending);
    free(st->links);
    tb_free(st->cell);
    json_decref(st->row);
    json_decref(st->rows);
}

kiln_status kiln_markdown_to_blocks(kiln_arena *arena, const char *text, size_t len,
                                    const char *pointer, const kiln_limits *limits,
                                    kiln_block **blocks, size_t *count, kiln_error *err)
{
    md_state st;
    memset(&st, 0, sizeof st);
    st.arena = arena;
    st.input_len = len;
    st.err = err;
    st.status = KILN_E_OK;
    *blocks = NULL;
    *count = 0;

    if (limits) {
        st.limits = *limits;
    } else {
        st.limits.rows = KILN_LIMIT_ROWS;
        st.limits.columns = KILN_LIMIT_COLUMNS;
        st.limits.cell_chars = KILN_LIMIT_CELL_CHARS;
        st.limits.list_depth = KILN_LIMIT_LIST_DEPTH;
    }
    st.pointer = kiln_arena_strdup(arena, pointer ? pointer : "");
    st.err_pointer = kiln_arena_printf(arena, "%s/text", pointer ? pointer : "");
    if (!st.pointer || !st.err_pointer)
        return kiln_error_set(err, KILN_E_NOMEM, pointer, "markdown: out of memory");
    if (len > UINT_MAX - MD_PAD)
        return kiln_error_limit(err, KILN_E_LIMIT, st.err_pointer, UINT_MAX, len,
                                "markdown: the text is too long (%zu bytes)", len);
    if (len == 0)
        return KILN_E_OK;
    if (check_input(&st, (const unsigned char *)text, len) < 0)
        return st.status;

    MD_PARSER parser;
    memset(&parser, 0, sizeof parser);
    parser.flags = MD_FLAGS;
    parser.enter_block = enter_block;
    parser.leave_block = leave_block;
    parser.enter_span = enter_span;
    parser.leave_span = leave_span;
    parser.text = on_text;

    /*
     * md4c 0.4.8 (Debian 12) reads past the end of its input on some inputs
     * (an inline link running to the very end of the text: md_is_inline_
     * link_spec looks at doc[size]; fixed upstream in 0.5.0), and what it
     * finds there steers it (fuzz_markdown saw a 4 GiB request).
     * Give it a private copy followed by zero bytes so those reads land on
     * NULs, which no Markdown construct continues with.
     */
    char *copy = malloc(len + MD_PAD);
    if (!copy) {
        fail_nomem(&st);
        state_release(&st);
        return st.status;
    }
    memcpy(copy, text, len);
    memset(copy + len, 0, MD_PAD);
    int rc = md_parse(copy, (MD_SIZE)len, &parser, &st);
    free(copy);
    if (rc != 0 && st.status == KILN_E_OK) /* md4c's own failure: out of memory */
        fail_nomem(&st);
    if (st.status == KILN_E_OK && st.pending_count)
        flush_pending(&st);
    if (st.status == KILN_E_OK && st.block_count) {
        kiln_block *out = kiln_arena_calloc(arena, st.block_count, sizeof *out);
        if (!out) {
            fail_nomem(&st);
        } else {
            memcpy(out, st.blocks, st.block_count * sizeof *out);
            *blocks = out;
            *count = st.block_count;
        }
    }
    kiln_status status = st.status;
    state_release(&st);
    return status;
}
