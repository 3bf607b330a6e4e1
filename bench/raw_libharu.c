/*
 * raw_libharu.c - the floor for the PDF benchmark (bench/README.md): the report
 * of bench/docx_workload.py written with libharu directly, with no more layout
 * than the content needs. Whatever Kiln adds on top of libharu (spec parsing
 * and validation, FreeType metrics, line breaking with widows and orphans,
 * keep-with-next, fallback fonts, outlines, table column fitting) is the
 * difference between this program and `kiln render`.
 *
 *   raw_libharu SPEC.json OUT.pdf
 *
 * It reads the same Kiln spec with jansson and draws the same text: DejaVu Sans
 * in the styles the runs ask for, embedded as UTF-8 (Type0) fonts; A4 with
 * 72 pt margins; greedy line breaking at spaces with libharu's own glyph
 * widths; bulleted list items with a hanging indent; tables with columns
 * sized to their widest cell, a grid, a shaded bold header row repeated on
 * every page and the numbers right-aligned as Kiln shows them; PNG images at
 * the spec's width, centered, each file loaded once. Only the block types of
 * the workload are handled (heading, paragraph, list, table, image).
 */
#include <jansson.h>
#include <hpdf.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../common/banned.h"

#define FONT_DIR "/usr/share/fonts/truetype/dejavu/"
#define MARGIN 72.0 /* docs/spec.md "page": the default margins */
#define BODY 11.0   /* docs/spec.md "theme": the default font_size */
/* Kiln's PDF typography (artifacts/pdf/pdf_layout.c, pdf_table.c), so that
 * every tool fills about as many pages. */
#define LEADING 1.3
#define PARA_AFTER (0.6 * BODY)
#define HEADING (1.8 * BODY)
#define HEADING_LEADING 1.2
#define HEADING_BEFORE HEADING
#define HEADING_AFTER (0.4 * HEADING)
#define ITEM_AFTER (0.2 * BODY)
#define LIST_AFTER (0.5 * BODY)
#define LIST_INDENT 18.0
#define CELL (0.9 * BODY)
#define CELL_LEADING 1.2
#define CELL_PAD_X 4.0
#define CELL_PAD_Y 3.0
#define TABLE_BEFORE (0.3 * BODY)
#define TABLE_AFTER (0.6 * BODY)
#define IMAGE_BEFORE (0.4 * BODY)
#define IMAGE_AFTER (0.8 * BODY)
#define MAX_COLS 32
#define MAX_IMAGES 64

enum { F_REGULAR, F_BOLD, F_ITALIC, F_BOLD_ITALIC, F_COUNT };

static const char *const font_files[F_COUNT] = {FONT_DIR "DejaVuSans.ttf",
                                                FONT_DIR "DejaVuSans-Bold.ttf",
                                                FONT_DIR "DejaVuSans-Oblique.ttf",
                                                FONT_DIR "DejaVuSans-BoldOblique.ttf"};

typedef struct {
    HPDF_Font font;
    /* advance in 1/1000 em, < 0 until looked up: looked up only when used, because
     * libharu counts a glyph whose width is asked for as used and embeds it */
    double ascii[128];
} face;

typedef struct {
    const char *path; /* as the spec names it */
    HPDF_Image image;
} loaded_image;

typedef struct {
    HPDF_Doc pdf;
    HPDF_Page page;
    face faces[F_COUNT];
    double page_w, page_h, left, right, top, bottom, y;
    int page_fresh;
    const char *base_dir;
    loaded_image images[MAX_IMAGES];
    int image_count;
    char *buf;
    size_t buf_cap;
} doc;

/* A piece of one run between spaces, drawn in one face. */
typedef struct {
    int face;
    const char *text;
    size_t len;
    double width;
    int space_before; /* a break opportunity (and a space) precedes it */
} piece;

static HPDF_STATUS first_error;
static HPDF_STATUS first_detail;

static void on_error(HPDF_STATUS error_no, HPDF_STATUS detail_no, void *user_data)
{
    (void)user_data;
    if (!first_error) {
        first_error = error_no;
        first_detail = detail_no;
    }
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fputs("raw_libharu: out of memory\n", stderr);
        exit(1);
    }
    return q;
}

static uint32_t utf8_next(const unsigned char *s, size_t len, size_t *pos)
{
    unsigned char c = s[*pos];
    int n = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    uint32_t cp = n == 0 ? c : n == 1 ? c & 0x1F : n == 2 ? c & 0x0F : c & 0x07;
    (*pos)++;
    for (int i = 0; i < n && *pos < len; i++)
        cp = cp << 6 | (s[(*pos)++] & 0x3F);
    return cp;
}

/* The face in style f, loaded on first use: libharu embeds every font it loads,
 * used or not. Exits when the file cannot be loaded. */
static face *get_face(doc *d, int f)
{
    face *fc = &d->faces[f];
    if (fc->font)
        return fc;
    const char *name = HPDF_LoadTTFontFromFile(d->pdf, font_files[f], HPDF_TRUE);
    fc->font = name ? HPDF_GetFont(d->pdf, name, "UTF-8") : NULL;
    if (!fc->font) {
        fprintf(stderr, "raw_libharu: cannot load %s\n", font_files[f]);
        exit(1);
    }
    for (int c = 0; c < 128; c++)
        fc->ascii[c] = -1;
    return fc;
}

static double text_width(doc *d, int f, const char *s, size_t len, double size)
{
    face *fc = get_face(d, f);
    double w = 0;
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            if (fc->ascii[c] < 0)
                fc->ascii[c] = HPDF_Font_GetUnicodeWidth(fc->font, (HPDF_UNICODE)c);
            w += fc->ascii[c];
            i++;
        } else {
            uint32_t cp = utf8_next((const unsigned char *)s, len, &i);
            w += HPDF_Font_GetUnicodeWidth(fc->font, (HPDF_UNICODE)cp);
        }
    }
    return w * size / 1000.0;
}

static void new_page(doc *d)
{
    d->page = HPDF_AddPage(d->pdf);
    HPDF_Page_SetSize(d->page, HPDF_PAGE_SIZE_A4, HPDF_PAGE_PORTRAIT);
    d->page_w = HPDF_Page_GetWidth(d->page);
    d->page_h = HPDF_Page_GetHeight(d->page);
    d->left = MARGIN;
    d->right = d->page_w - MARGIN;
    d->top = d->page_h - MARGIN;
    d->bottom = MARGIN;
    d->y = d->top;
    d->page_fresh = 1;
}

static void ensure(doc *d, double h)
{
    if (!d->page || (d->y - h < d->bottom && !d->page_fresh))
        new_page(d);
}

/* Space before a block, dropped at the top of a page. */
static void gap(doc *d, double h)
{
    if (d->page && !d->page_fresh)
        d->y -= h;
}

/* Split styled runs into pieces at spaces. */
static piece *split_runs(doc *d, json_t *runs, double size, size_t *count)
{
    size_t n = 0, cap = 64;
    piece *p = xrealloc(NULL, cap * sizeof *p);
    int pending_space = 0;
    size_t i;
    json_t *run;
    json_array_foreach(runs, i, run) {
        const char *t = json_string_value(json_object_get(run, "text"));
        size_t len = json_string_length(json_object_get(run, "text"));
        int f = (json_is_true(json_object_get(run, "bold")) ? F_BOLD : 0) |
                (json_is_true(json_object_get(run, "italic")) ? F_ITALIC : 0);
        size_t k = 0;
        while (k < len) {
            if (t[k] == ' ') {
                pending_space = 1;
                k++;
                continue;
            }
            size_t start = k;
            while (k < len && t[k] != ' ')
                k++;
            if (n == cap) {
                cap *= 2;
                p = xrealloc(p, cap * sizeof *p);
            }
            p[n] = (piece){f, t + start, k - start, text_width(d, f, t + start, k - start, size),
                           pending_space && n > 0};
            n++;
            pending_space = 0;
        }
    }
    *count = n;
    return p;
}

/* Draw pieces [a, b) as one line: one text object, a Tj per change of face. */
static void draw_line(doc *d, const piece *p, size_t a, size_t b, double x, double baseline,
                      double size)
{
    HPDF_Page_BeginText(d->page);
    HPDF_Page_MoveTextPos(d->page, x, baseline);
    size_t i = a;
    while (i < b) {
        int f = p[i].face;
        /* gather this face's pieces with the spaces between them */
        size_t need = 0, j;
        for (j = i; j < b && p[j].face == f; j++)
            need += p[j].len + 1;
        if (need + 2 > d->buf_cap) {
            d->buf_cap = (need + 2) * 2;
            d->buf = xrealloc(d->buf, d->buf_cap);
        }
        size_t o = 0;
        for (size_t k = i; k < j; k++) {
            if (p[k].space_before && k > i)
                d->buf[o++] = ' ';
            memcpy(d->buf + o, p[k].text, p[k].len);
            o += p[k].len;
        }
        /* a space before the next face's first piece belongs to this Tj */
        if (j < b && p[j].space_before)
            d->buf[o++] = ' ';
        d->buf[o] = '\0';
        HPDF_Page_SetFontAndSize(d->page, get_face(d, f)->font, (HPDF_REAL)size);
        HPDF_Page_ShowText(d->page, d->buf);
        i = j;
    }
    HPDF_Page_EndText(d->page);
}

/* A paragraph of styled runs, greedy line breaking, x0 from the left margin. */
static void paragraph(doc *d, json_t *runs, double size, double leading, double indent,
                      const char *bullet)
{
    size_t n;
    piece *p = split_runs(d, runs, size, &n);
    double width = d->right - d->left - indent;
    double space[F_COUNT];
    for (int f = 0; f < F_COUNT; f++)
        space[f] = d->faces[f].font ? text_width(d, f, " ", 1, size) : 0;
    double lh = size * leading;
    double ascent = size * 0.928; /* DejaVu Sans ascender, 928/1000 em */
    size_t a = 0;
    int first = 1;
    while (a < n) {
        double w = p[a].width;
        size_t b = a + 1;
        while (b < n) {
            /* draw_line puts a space in the face of the piece before it */
            double add = (p[b].space_before ? space[p[b - 1].face] : 0) + p[b].width;
            if (p[b].space_before && w + add > width)
                break;
            w += add;
            b++;
        }
        ensure(d, lh);
        double baseline = d->y - ascent;
        draw_line(d, p, a, b, d->left + indent, baseline, size);
        if (first && bullet) {
            HPDF_Page_BeginText(d->page);
            HPDF_Page_SetFontAndSize(d->page, get_face(d, F_REGULAR)->font, (HPDF_REAL)size);
            HPDF_Page_TextOut(d->page, (HPDF_REAL)(d->left + indent - 12), (HPDF_REAL)baseline,
                              bullet);
            HPDF_Page_EndText(d->page);
        }
        first = 0;
        d->y -= lh;
        d->page_fresh = 0;
        a = b;
    }
    free(p);
}

static void plain_paragraph(doc *d, const char *text, int f, double size, double leading,
                            double indent, const char *bullet)
{
    json_t *runs = json_pack("[{s:s, s:b}]", "text", text, "bold", f & F_BOLD);
    paragraph(d, runs, size, leading, indent, bullet);
    json_decref(runs);
}

/* What Kiln shows for a cell of this column type (docs/spec.md default formats). */
static void thousands(char *out, size_t cap, long long v)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", v < 0 ? -v : v);
    size_t o = 0;
    if (v < 0)
        out[o++] = '-';
    for (int i = 0; i < n && o + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

static const char *cell_text(json_t *v, const char *type, char *buf, size_t cap)
{
    if (json_is_string(v))
        return json_string_value(v);
    double x = json_number_value(v);
    if (!strcmp(type, "integer")) {
        thousands(buf, cap, llround(x));
    } else if (!strcmp(type, "currency") || !strcmp(type, "number")) {
        long long cents = llround(fabs(x) * 100);
        char whole[40];
        thousands(whole, sizeof whole, cents / 100);
        snprintf(buf, cap, "%s%s%s.%02lld", x < 0 ? "-" : "",
                 !strcmp(type, "currency") ? "$" : "", whole, cents % 100);
    } else if (!strcmp(type, "percent")) {
        snprintf(buf, cap, "%.1f%%", x * 100);
    } else {
        snprintf(buf, cap, "%g", x);
    }
    return buf;
}

static int right_aligned(const char *type)
{
    return strcmp(type, "string") != 0;
}

static void table_row(doc *d, const char **cells, const double *widths, const char **types,
                      size_t cols, int header, double row_h)
{
    double size = CELL, x = d->left, total = 0;
    for (size_t c = 0; c < cols; c++)
        total += widths[c];
    double top = d->y, bottom = d->y - row_h;
    if (header) {
        HPDF_Page_SetRGBFill(d->page, 0x1F / 255.0f, 0x4E / 255.0f, 0x79 / 255.0f);
        HPDF_Page_Rectangle(d->page, (HPDF_REAL)x, (HPDF_REAL)bottom, (HPDF_REAL)total,
                            (HPDF_REAL)row_h);
        HPDF_Page_Fill(d->page);
    }
    /* the row's box and its column separators */
    HPDF_Page_SetLineWidth(d->page, 0.5);
    HPDF_Page_Rectangle(d->page, (HPDF_REAL)x, (HPDF_REAL)bottom, (HPDF_REAL)total,
                        (HPDF_REAL)row_h);
    double cx = x;
    for (size_t c = 0; c + 1 < cols; c++) {
        cx += widths[c];
        HPDF_Page_MoveTo(d->page, (HPDF_REAL)cx, (HPDF_REAL)top);
        HPDF_Page_LineTo(d->page, (HPDF_REAL)cx, (HPDF_REAL)bottom);
    }
    HPDF_Page_Stroke(d->page);

    int f = header ? F_BOLD : F_REGULAR;
    double baseline = top - CELL_PAD_Y - size * 0.928;
    HPDF_Page_BeginText(d->page);
    if (header)
        HPDF_Page_SetRGBFill(d->page, 1, 1, 1);
    HPDF_Page_SetFontAndSize(d->page, get_face(d, f)->font, (HPDF_REAL)size);
    cx = x;
    for (size_t c = 0; c < cols; c++) {
        double tx = cx + CELL_PAD_X;
        if (!header && right_aligned(types[c]))
            tx = cx + widths[c] - CELL_PAD_X - text_width(d, f, cells[c], strlen(cells[c]), size);
        HPDF_Page_TextOut(d->page, (HPDF_REAL)tx, (HPDF_REAL)baseline, cells[c]);
        cx += widths[c];
    }
    HPDF_Page_EndText(d->page);
    if (header)
        HPDF_Page_SetRGBFill(d->page, 0, 0, 0);
    d->y = bottom;
    d->page_fresh = 0;
}

static void table(doc *d, json_t *block)
{
    json_t *columns = json_object_get(block, "columns"), *rows = json_object_get(block, "rows");
    size_t cols = json_array_size(columns), nrows = json_array_size(rows);
    if (cols == 0 || cols > MAX_COLS)
        return;
    const char *headers[MAX_COLS], *types[MAX_COLS];
    double widths[MAX_COLS];
    for (size_t c = 0; c < cols; c++) {
        json_t *col = json_array_get(columns, c);
        headers[c] = json_string_value(json_object_get(col, "header"));
        const char *t = json_string_value(json_object_get(col, "type"));
        types[c] = t ? t : "string";
        widths[c] = text_width(d, F_BOLD, headers[c], strlen(headers[c]), CELL);
    }
    /* every cell's text, formatted once: measured for the widths, then drawn */
    char *text = xrealloc(NULL, nrows * cols * 48);
    const char **cells = xrealloc(NULL, nrows * cols * sizeof *cells);
    for (size_t r = 0; r < nrows; r++) {
        json_t *row = json_array_get(rows, r);
        for (size_t c = 0; c < cols; c++) {
            char *slot = text + (r * cols + c) * 48;
            const char *s = cell_text(json_array_get(row, c), types[c], slot, 48);
            cells[r * cols + c] = s;
            double w = text_width(d, F_REGULAR, s, strlen(s), CELL);
            if (w > widths[c])
                widths[c] = w;
        }
    }
    double total = 0, avail = d->right - d->left;
    for (size_t c = 0; c < cols; c++)
        total += (widths[c] += 2 * CELL_PAD_X);
    if (total > avail)
        for (size_t c = 0; c < cols; c++)
            widths[c] *= avail / total;

    double row_h = CELL * CELL_LEADING + 2 * CELL_PAD_Y;
    gap(d, TABLE_BEFORE);
    ensure(d, 2 * row_h);
    table_row(d, headers, widths, types, cols, 1, row_h);
    for (size_t r = 0; r < nrows; r++) {
        if (d->y - row_h < d->bottom) {
            new_page(d);
            table_row(d, headers, widths, types, cols, 1, row_h);
        }
        table_row(d, cells + r * cols, widths, types, cols, 0, row_h);
    }
    d->y -= TABLE_AFTER;
    free(cells);
    free(text);
}

static int image(doc *d, json_t *block)
{
    const char *rel = json_string_value(json_object_get(json_object_get(block, "image"), "path"));
    if (!rel)
        return 0;
    HPDF_Image img = NULL;
    for (int i = 0; i < d->image_count; i++)
        if (!strcmp(d->images[i].path, rel))
            img = d->images[i].image;
    if (!img) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", d->base_dir, rel);
        img = HPDF_LoadPngImageFromFile(d->pdf, path);
        if (!img) {
            fprintf(stderr, "raw_libharu: cannot load %s\n", path);
            return -1;
        }
        if (d->image_count < MAX_IMAGES)
            d->images[d->image_count++] = (loaded_image){rel, img};
    }
    double w = json_number_value(json_object_get(block, "width"));
    double iw = HPDF_Image_GetWidth(img), ih = HPDF_Image_GetHeight(img);
    if (w <= 0)
        w = iw * 72 / 96;
    if (w > d->right - d->left)
        w = d->right - d->left;
    double h = ih * w / iw;
    gap(d, IMAGE_BEFORE);
    ensure(d, h);
    HPDF_Page_DrawImage(d->page, img, (HPDF_REAL)(d->left + (d->right - d->left - w) / 2),
                        (HPDF_REAL)(d->y - h), (HPDF_REAL)w, (HPDF_REAL)h);
    d->y -= h + IMAGE_AFTER;
    d->page_fresh = 0;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SPEC.json OUT.pdf\n", argv[0]);
        return 2;
    }
    json_error_t jerr;
    json_t *spec = json_load_file(argv[1], 0, &jerr);
    if (!spec) {
        fprintf(stderr, "%s:%d: %s\n", argv[1], jerr.line, jerr.text);
        return 1;
    }
    static doc d;
    char *slash = strrchr(argv[1], '/');
    d.base_dir = slash ? strndup(argv[1], (size_t)(slash - argv[1])) : ".";

    d.pdf = HPDF_New(on_error, NULL);
    if (!d.pdf) {
        fputs("raw_libharu: HPDF_New failed\n", stderr);
        return 1;
    }
    HPDF_SetCompressionMode(d.pdf, HPDF_COMP_ALL);
    HPDF_UseUTFEncodings(d.pdf);
    json_t *meta = json_object_get(spec, "metadata");
    const char *title = json_string_value(json_object_get(meta, "title"));
    const char *author = json_string_value(json_object_get(meta, "author"));
    if (title)
        HPDF_SetInfoAttr(d.pdf, HPDF_INFO_TITLE, title);
    if (author)
        HPDF_SetInfoAttr(d.pdf, HPDF_INFO_AUTHOR, author);

    int status = 0;
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(spec, "blocks"), i, b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        if (!type)
            continue;
        if (!strcmp(type, "heading")) {
            double lh = HEADING * HEADING_LEADING;
            gap(&d, HEADING_BEFORE);
            /* keep with next: the heading and two lines of what follows */
            ensure(&d, lh + HEADING_AFTER + 2 * BODY * LEADING);
            plain_paragraph(&d, json_string_value(json_object_get(b, "text")), F_BOLD, HEADING,
                            HEADING_LEADING, 0, NULL);
            d.y -= HEADING_AFTER;
        } else if (!strcmp(type, "paragraph")) {
            paragraph(&d, json_object_get(b, "runs"), BODY, LEADING, 0, NULL);
            d.y -= PARA_AFTER;
        } else if (!strcmp(type, "list")) {
            size_t k;
            json_t *item;
            json_array_foreach(json_object_get(b, "items"), k, item) {
                plain_paragraph(&d, json_string_value(item), F_REGULAR, BODY, LEADING,
                                LIST_INDENT, "\xE2\x80\xA2");
                d.y -= ITEM_AFTER;
            }
            d.y -= LIST_AFTER;
        } else if (!strcmp(type, "table")) {
            table(&d, b);
        } else if (!strcmp(type, "image")) {
            if (image(&d, b) != 0) {
                status = 1;
                break;
            }
        } else {
            fprintf(stderr, "raw_libharu: block type %s is not in the workload\n", type);
            status = 1;
            break;
        }
    }
    if (status == 0 && !first_error && HPDF_SaveToFile(d.pdf, argv[2]) != HPDF_OK)
        status = 1;
    if (first_error) {
        fprintf(stderr, "raw_libharu: libharu error 0x%04X (detail %u)\n", (unsigned)first_error,
                (unsigned)first_detail);
        status = 1;
    }
    HPDF_Free(d.pdf);
    json_decref(spec);
    free(d.buf);
    return status;
}
