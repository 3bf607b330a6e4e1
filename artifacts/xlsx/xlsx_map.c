/*
 * xlsx_map.c - which worksheets a document becomes (docs/spec.md, "Mapping
 * between formats").
 *
 *   - A doc with sheets: those sheets, in order (blocks and slides are not
 *     rendered into a workbook then).
 *   - Otherwise each table block is a sheet, named from the table's name,
 *     else the nearest heading above it, else "Table N"; the chart blocks
 *     after it (up to the next table) are placed beside it. A spec with
 *     slides and no blocks maps its slides the same way: a slide's table is
 *     a sheet named from the table's name, else the slide's title, else
 *     "Table N", and a slide's chart goes beside the slide's table, or beside
 *     the table before it.
 *     Charts that come before any table go beside the first table.
 *   - A doc with neither sheets nor tables becomes one sheet, "Sheet1", that
 *     lists the text of the headings, paragraphs, lists, quotes and code (or,
 *     without blocks, of the slides: titles, subtitles, bullets) down column
 *     A, with any charts beside it: a workbook that shows the content beats
 *     refusing to render. List nesting is the cells' indent.
 *
 * Sheet names follow Excel's rules: none of []:*?/\, no leading or trailing
 * apostrophe, at most 31 characters (UTF-16 units, as Excel counts), unique
 * ignoring case (" (2)", " (3)", … appended), and never "History", which
 * Excel reserves. A doc sheet's own name, which the parser has checked, is
 * kept exactly as written (chart ranges refer to it). Case is folded for
 * ASCII letters only; Excel also folds other scripts, so two names differing
 * only in, say, Greek case would collide in Excel but not here (the parser
 * applies the same rule).
 */
#include <stdio.h>
#include <string.h>

#include "xlsx_internal.h"
#include "../../common/banned.h"

int xlsx_name_equal(const char *a, const char *b)
{
    for (;; a++, b++) {
        unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
        if (x >= 'A' && x <= 'Z')
            x = (unsigned char)(x + 32);
        if (y >= 'A' && y <= 'Z')
            y = (unsigned char)(y + 32);
        if (x != y)
            return 0;
        if (!x)
            return 1;
    }
}

/* Length in bytes of the UTF-8 sequence starting with c. */
static size_t seq_len(unsigned char c)
{
    return c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
}

/* Copy at most max_units UTF-16 units of src into dst (cap bytes). */
static void copy_units(char *dst, size_t cap, const char *src, size_t src_len, int max_units)
{
    size_t o = 0;
    int units = 0;
    for (size_t i = 0; i < src_len;) {
        size_t n = seq_len((unsigned char)src[i]);
        int u = n == 4 ? 2 : 1;
        if (i + n > src_len || units + u > max_units || o + n + 1 > cap)
            break;
        memcpy(dst + o, src + i, n);
        o += n;
        i += n;
        units += u;
    }
    dst[o] = '\0';
}

void xlsx_sheet_name_sanitize(char *dst, const char *src, size_t src_len)
{
    char tmp[1024];
    size_t o = 0;
    for (size_t i = 0; i < src_len && o + 4 < sizeof tmp; i++) {
        char c = src[i];
        if (strchr("[]:*?/\\", c) && c != '\0')
            continue;
        if ((unsigned char)c < 0x20)
            c = ' '; /* line breaks in a heading */
        tmp[o++] = c;
    }
    /* Trim apostrophes and blanks at both ends. */
    size_t b = 0, e = o;
    while (b < e && (tmp[b] == '\'' || tmp[b] == ' '))
        b++;
    while (e > b && (tmp[e - 1] == '\'' || tmp[e - 1] == ' '))
        e--;
    copy_units(dst, XLSX_SHEET_NAME_BUF, tmp + b, e - b, XLSX_SHEET_NAME_MAX);
    /* Truncation may leave a trailing apostrophe or blank. */
    size_t n = strlen(dst);
    while (n > 0 && (dst[n - 1] == '\'' || dst[n - 1] == ' '))
        dst[--n] = '\0';
}

xlsx_plan_sheet *xlsx_plan_find(xlsx_plan *plan, const char *name)
{
    for (size_t i = 0; i < plan->count; i++)
        if (xlsx_name_equal(plan->sheets[i].name, name))
            return &plan->sheets[i];
    return NULL;
}

static int xlsx_plan_find_before(const xlsx_plan *plan, size_t upto, const char *name)
{
    for (size_t i = 0; i < upto; i++)
        if (xlsx_name_equal(plan->sheets[i].name, name))
            return 1;
    return 0;
}

static int name_taken(const xlsx_plan *plan, size_t upto, const char *name)
{
    if (xlsx_name_equal(name, "History"))
        return 1;
    for (size_t i = 0; i < upto; i++)
        if (xlsx_name_equal(plan->sheets[i].name, name))
            return 1;
    return 0;
}

/* Give plan->sheets[idx] the name base (already sanitized), made unique. */
static void set_unique_name(xlsx_plan *plan, size_t idx, const char *base)
{
    char *dst = plan->sheets[idx].name;
    snprintf(dst, XLSX_SHEET_NAME_BUF, "%s", base);
    for (unsigned k = 2; name_taken(plan, idx, dst); k++) {
        char suffix[16];
        int sl = snprintf(suffix, sizeof suffix, " (%u)", k);
        /* head has at most 31 - sl units, so head + suffix fits. */
        copy_units(dst, XLSX_SHEET_NAME_BUF - (size_t)sl, base, strlen(base),
                   XLSX_SHEET_NAME_MAX - sl);
        memcpy(dst + strlen(dst), suffix, (size_t)sl + 1);
    }
}

typedef struct builder {
    const kiln_doc *doc;
    kiln_arena *arena;
    xlsx_plan *plan;
    size_t cap;
    const kiln_chart **pending; /* charts seen before any table */
    size_t pending_count, pending_cap;
    unsigned table_no;
} builder;

static int push_ptr(kiln_arena *arena, const kiln_chart ***arr, size_t *count, size_t *cap,
                    const kiln_chart *c)
{
    if (*count == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        const kiln_chart **n = kiln_arena_calloc(arena, ncap, sizeof *n);
        if (!n)
            return -1;
        if (*count)
            memcpy(n, *arr, *count * sizeof *n);
        *arr = n;
        *cap = ncap;
    }
    (*arr)[(*count)++] = c;
    return 0;
}

static xlsx_plan_sheet *add_sheet(builder *b, const char *base_src, size_t base_len,
                                  const char *fallback)
{
    xlsx_plan *plan = b->plan;
    if (plan->count == b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 8;
        xlsx_plan_sheet *n = kiln_arena_calloc(b->arena, ncap, sizeof *n);
        if (!n)
            return NULL;
        if (plan->count)
            memcpy(n, plan->sheets, plan->count * sizeof *n);
        plan->sheets = n;
        b->cap = ncap;
    }
    size_t idx = plan->count++;
    char base[XLSX_SHEET_NAME_BUF] = "";
    if (base_src)
        xlsx_sheet_name_sanitize(base, base_src, base_len);
    if (!base[0])
        xlsx_sheet_name_sanitize(base, fallback, strlen(fallback));
    set_unique_name(plan, idx, base);
    return &plan->sheets[idx];
}

/* The plain text of runs, into buf (truncated). */
static size_t runs_text(const kiln_text *t, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < t->run_count && o + 1 < cap; i++) {
        size_t n = t->runs[i].len;
        if (n > cap - 1 - o)
            n = cap - 1 - o;
        memcpy(buf + o, t->runs[i].text, n);
        o += n;
    }
    buf[o] = '\0';
    return o;
}

static xlsx_plan_sheet *add_table_sheet(builder *b, const kiln_table *t, const char *name,
                                        size_t name_len, const char *pointer)
{
    char fallback[32];
    snprintf(fallback, sizeof fallback, "Table %u", ++b->table_no);
    xlsx_plan_sheet *s = add_sheet(b, name, name_len, fallback);
    if (s) {
        s->data = &t->data;
        s->pointer = pointer;
    }
    return s;
}

/* A table maps to a sheet only while the workbook has room for one more:
 * the sheet limit holds for mapped sheets as for a spec's own (and naming a
 * sheet uniquely compares it with those before it, so it also bounds that
 * work). */
static kiln_status check_sheet_room(const builder *b, const char *pointer, kiln_error *err)
{
    if (b->plan->count < KILN_LIMIT_SHEETS)
        return KILN_E_OK;
    return kiln_error_limit(err, KILN_E_LIMIT, pointer, KILN_LIMIT_SHEETS, b->plan->count + 1,
                            "the workbook would have more than %u sheets (a sheet for each "
                            "table)",
                            (unsigned)KILN_LIMIT_SHEETS);
}

static int attach(builder *b, xlsx_plan_sheet *s, const kiln_chart *c)
{
    if (s)
        return push_ptr(b->arena, &s->charts, &s->chart_count, &s->chart_cap, c);
    return push_ptr(b->arena, &b->pending, &b->pending_count, &b->pending_cap, c);
}

static kiln_status map_content(builder *b, kiln_error *err)
{
    const kiln_doc *doc = b->doc;
    char heading[256] = "";
    size_t heading_len = 0;
    int have_heading = 0;
    xlsx_plan_sheet *current = NULL;

    for (size_t i = 0; i < doc->block_count; i++) {
        const kiln_block *bl = &doc->blocks[i];
        if (bl->kind == KILN_BLOCK_HEADING) {
            heading_len = runs_text(&bl->text, heading, sizeof heading);
            have_heading = heading_len > 0;
        } else if (bl->kind == KILN_BLOCK_TABLE && bl->table) {
            const kiln_table *t = bl->table;
            const char *nm = t->name ? t->name : have_heading ? heading : NULL;
            size_t nl = t->name ? strlen(t->name) : heading_len;
            kiln_status st = check_sheet_room(b, bl->pointer, err);
            if (st != KILN_E_OK)
                return st;
            current = add_table_sheet(b, t, nm, nl, bl->pointer);
            if (!current)
                goto fail_oom;
        } else if (bl->kind == KILN_BLOCK_CHART && bl->chart) {
            if (attach(b, current, bl->chart) != 0)
                goto fail_oom;
        }
    }
    /* Slides count only in a spec without blocks (docs/spec.md: "a spec with
     * only slides"). */
    for (size_t i = 0; doc->block_count == 0 && i < doc->slide_count; i++) {
        const kiln_slide *sl = &doc->slides[i];
        if (sl->table) {
            kiln_status st = check_sheet_room(b, sl->pointer, err);
            if (st != KILN_E_OK)
                return st;
            const char *nm = sl->table->name ? sl->table->name : sl->title;
            current = add_table_sheet(b, sl->table, nm, nm ? strlen(nm) : 0, sl->pointer);
            if (!current)
                goto fail_oom;
        }
        if (sl->chart && attach(b, current, sl->chart) != 0)
            goto fail_oom;
    }
    return KILN_E_OK;

fail_oom:
    return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory mapping content to sheets");
}

kiln_status xlsx_plan_build(const kiln_doc *doc, kiln_arena *arena, xlsx_plan *plan,
                            kiln_error *err)
{
    builder b = {.doc = doc, .arena = arena, .plan = plan};
    plan->sheets = NULL;
    plan->count = 0;

    if (doc->sheet_count > 0) {
        for (size_t i = 0; i < doc->sheet_count; i++) {
            const kiln_sheet *sh = &doc->sheets[i];
            char fallback[32];
            snprintf(fallback, sizeof fallback, "Sheet%zu", i + 1);
            xlsx_plan_sheet *s = add_sheet(&b, sh->name, sh->name ? strlen(sh->name) : 0,
                                           fallback);
            if (!s)
                goto fail_oom;
            /* The parser has checked a given name against Excel's rules:
             * keep it exactly (blanks at the ends included), since chart
             * ranges name it. */
            if (sh->name && strlen(sh->name) < sizeof s->name &&
                !xlsx_plan_find_before(plan, plan->count - 1, sh->name))
                snprintf(s->name, sizeof s->name, "%s", sh->name);
            s->sheet = sh;
            s->data = &sh->data;
            s->pointer = sh->pointer;
            for (size_t c = 0; c < sh->chart_count; c++)
                if (push_ptr(arena, &s->charts, &s->chart_count, &s->chart_cap, &sh->charts[c]) !=
                    0)
                    goto fail_oom;
        }
        return KILN_E_OK;
    }

    kiln_status st = map_content(&b, err);
    if (st != KILN_E_OK)
        return st;
    if (plan->count == 0) {
        xlsx_plan_sheet *s = add_sheet(&b, NULL, 0, "Sheet1");
        if (!s)
            goto fail_oom;
        s->text_sheet = 1;
        s->pointer = "";
    }
    /* Charts before the first table go beside the first sheet, after its own. */
    for (size_t i = 0; i < b.pending_count; i++)
        if (attach(&b, &plan->sheets[0], b.pending[i]) != 0)
            goto fail_oom;
    return KILN_E_OK;

fail_oom:
    return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory mapping content to sheets");
}
