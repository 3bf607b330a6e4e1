/*
 * test_pdf_text.c - the PDF writer's text engine: UTF-8 decoding, font
 * family names, glyph widths (with the CJK fallback face and '?' for what no
 * face has), paragraphs broken into lines (random texts checked against
 * invariants that hold for any greedy breaker, then the particular rules:
 * hyphens, CJK and kinsoku, over-long words, hard breaks, code), drawing and
 * saving, missing-glyph counting, and pdf_font_trim's copies of TrueType
 * fonts read back by FreeType and libharu.
 *
 * Every test gets a fresh libharu document with the fonts set up the way
 * kiln_pdf_write does it, and releases all of it, so the suite is clean
 * under AddressSanitizer.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "artifacts/pdf/pdf_internal.h"

#include FT_ADVANCES_H
#include FT_TRUETYPE_TABLES_H
#include "common/banned.h"

#define DEJAVU_SANS "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
#define WQY_ZENHEI "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc"

/* UTF-8 of the characters the tests use */
#define ZH_MID "\xE4\xB8\xAD"     /* U+4E2D 中 */
#define ZH_WEN "\xE6\x96\x87"     /* U+6587 文 */
#define ZH_STOP "\xE3\x80\x82"    /* U+3002 。 ideographic full stop */
#define ZH_COMMA "\xE3\x80\x81"   /* U+3001 、 ideographic comma */
#define EM_DASH "\xE2\x80\x94"    /* U+2014 */
#define EN_DASH "\xE2\x80\x93"    /* U+2013 */
#define EMOJI "\xF0\x9F\x98\x80"  /* U+1F600, beyond the BMP: no face can draw it */
#define TIBETAN_KA "\xE0\xBD\x80" /* U+0F40: in neither DejaVu Sans nor WenQuanYi */

static char tmpdir[256];

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ------------------------------------------------------------------ fixture */

typedef struct fixture {
    pdf_ctx ctx;
    kiln_arena arena;
    kiln_error err;
    HPDF_STATUS haru_code, haru_detail; /* libharu's first error */
    pdf_para para;
} fixture;

static void on_haru_error(HPDF_STATUS code, HPDF_STATUS detail, void *user)
{
    fixture *f = user;
    if (f->haru_code == 0) {
        f->haru_code = code;
        f->haru_detail = detail;
    }
}

/* What kiln_pdf_write sets up before laying anything out. */
static int fx_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    memset(&f->ctx, 0, sizeof f->ctx);
    kiln_arena_init(&f->arena, 0);
    f->ctx.err = &f->err;
    f->ctx.arena = &f->arena;
    f->ctx.pdf = HPDF_New(on_haru_error, f);
    assert_non_null(f->ctx.pdf);
    assert_int_equal(HPDF_UseUTFEncodings(f->ctx.pdf), HPDF_OK);
    assert_int_equal(HPDF_SetCompressionMode(f->ctx.pdf, HPDF_COMP_ALL), HPDF_OK);
    assert_int_equal(pdf_fonts_init(&f->ctx.fonts, f->ctx.pdf, &f->err), KILN_E_OK);
    f->ctx.page_w = 595;
    f->ctx.page_h = 842;
    f->ctx.left = 72;
    f->ctx.right = 523;
    f->ctx.top = 770;
    f->ctx.bottom = 72;
    f->ctx.body_family = PDF_FAMILY_SANS;
    f->ctx.heading_family = PDF_FAMILY_SANS;
    f->ctx.mono_family = PDF_FAMILY_MONO;
    f->ctx.body_size = 11;
    *state = f;
    return 0;
}

static int fx_teardown(void **state)
{
    fixture *f = *state;
    pdf_para_release(&f->para);
    pdf_fonts_release(&f->ctx.fonts);
    HPDF_Free(f->ctx.pdf);
    free(f->ctx.pages);
    free(f->ctx.links);
    kiln_arena_release(&f->arena);
    free(f);
    return 0;
}

static pdf_face *face_of(fixture *f, pdf_family family, unsigned style)
{
    pdf_face *face = pdf_fonts_face(&f->ctx.fonts, family, style, &f->err);
    if (!face)
        fail_msg("cannot load face %d/%u: %s", (int)family, style, f->err.message);
    return face;
}

static pdf_para_style body_style(double size)
{
    pdf_para_style st;
    memset(&st, 0, sizeof st);
    st.family = PDF_FAMILY_SANS;
    st.size = size;
    st.leading = 1.25;
    st.color = 0;
    st.align = KILN_ALIGN_LEFT;
    return st;
}

static void layout_plain(fixture *f, const char *s, const pdf_para_style *st, double width)
{
    kiln_status rc = pdf_para_layout_plain(&f->ctx, s, strlen(s), st, width, &f->para);
    if (rc != KILN_E_OK)
        fail_msg("layout of \"%s\" failed: %s", s, f->err.message);
}

/* Line k's text: its fragments' bytes, trailing spaces dropped. */
static void line_text(const pdf_para *para, size_t k, char *out, size_t cap)
{
    size_t n = 0;
    const pdf_line *line = &para->lines[k];
    for (size_t i = line->first; i < line->first + line->count; i++) {
        const pdf_frag *fr = &para->frags[i];
        assert_true(n + fr->len < cap);
        memcpy(out + n, fr->text, fr->len);
        n += fr->len;
    }
    while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t'))
        n--;
    out[n] = '\0';
}

static void dump_lines(const pdf_para *para)
{
    char buf[4096];
    for (size_t k = 0; k < para->line_count; k++) {
        line_text(para, k, buf, sizeof buf);
        fprintf(stderr, "  line %zu (w %.2f): \"%s\"%s\n", k, para->lines[k].width, buf,
                para->lines[k].ends_paragraph ? " [end]" : "");
    }
}

/* ------------------------------------------------------------------ invariants */

static int is_space_byte(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/*
 * What must hold for any paragraph laid out from the text buf[0, len) (the
 * runs being consecutive slices of buf, so fragments point into it):
 *  - every line is at most width wide, and its width is what its fragments
 *    measure without trailing spaces;
 *  - the lines' fragments, in order, are buf itself: each byte once, in
 *    order, except runs of spaces dropped at the start of a wrapped line;
 *    a forced-break fragment stands for the line feed;
 *  - only the last line and lines ending in a forced break end the paragraph;
 *  - heights are positive and pdf_para_height sums them.
 */
static void check_para(fixture *f, const pdf_para *para, const char *buf, size_t len,
                       double width, const char *what)
{
    size_t p = 0, next_frag = 0;
    double total = 0;

    if (para->line_count == 0)
        fail_msg("%s: no lines", what);
    for (size_t k = 0; k < para->line_count; k++) {
        const pdf_line *line = &para->lines[k];
        size_t end = line->first + line->count, last = end;
        double natural = 0;

        if (line->width > width + 0.01) {
            dump_lines(para);
            fail_msg("%s: line %zu is %.3f wide, over %.3f", what, k, line->width, width);
        }
        if (line->height <= 0 || !(line->height >= line->ascent - line->descent - 1e-9))
            fail_msg("%s: line %zu height %g (ascent %g descent %g)", what, k, line->height,
                     line->ascent, line->descent);
        total += line->height;
        if (len > 0 && line->count == 0)
            fail_msg("%s: line %zu is empty", what, k);
        if (end > para->frag_count)
            fail_msg("%s: line %zu runs past the fragments", what, k);
        /* fragments skipped between lines: only dropped spaces */
        for (size_t i = next_frag; i < line->first; i++)
            if (para->frags[i].is_space != 1)
                fail_msg("%s: fragment %zu (\"%.*s\") is in no line", what, i,
                         (int)para->frags[i].len, para->frags[i].text);
        next_frag = end;

        while (last > line->first && para->frags[last - 1].is_space)
            last--;
        for (size_t i = line->first; i < end; i++) {
            const pdf_frag *fr = &para->frags[i];
            if (fr->is_space == 2) {
                if (i != end - 1)
                    fail_msg("%s: a forced break inside line %zu", what, k);
                if (p < len && buf[p] == '\n')
                    p += 1;
                else if (p + 3 <= len && memcmp(buf + p, "\xE2\x80\xA8", 3) == 0)
                    p += 3;
                else
                    fail_msg("%s: a forced break at byte %zu, which is no line feed", what, p);
                continue;
            }
            if (fr->text < buf || fr->text + fr->len > buf + len)
                fail_msg("%s: fragment %zu does not point into the text", what, i);
            size_t at = (size_t)(fr->text - buf);
            if (at < p)
                fail_msg("%s: fragment %zu (\"%.*s\") repeats bytes from %zu (expected %zu)",
                         what, i, (int)fr->len, fr->text, at, p);
            if (at > p) {
                /* only a wrapped line's leading spaces may be left out */
                if (i != line->first || k == 0)
                    fail_msg("%s: bytes %zu..%zu (\"%.*s\") lost before fragment %zu", what, p,
                             at, (int)(at - p), buf + p, i);
                for (size_t b = p; b < at; b++)
                    if (!is_space_byte(buf[b]))
                        fail_msg("%s: byte %zu ('%c') lost at the start of line %zu", what, b,
                                 buf[b], k);
            }
            p = at + fr->len;
            if (i < last) {
                if (fr->is_space == 0) {
                    double w = pdf_text_width(&f->ctx.fonts, fr->face, fr->text, fr->len,
                                              fr->size);
                    if (fabs(w - fr->width) > 1e-6)
                        fail_msg("%s: fragment \"%.*s\" says %.4f wide, measures %.4f", what,
                                 (int)fr->len, fr->text, fr->width, w);
                }
                natural += fr->width;
            }
        }
        if (fabs(natural - line->width) > 1e-6)
            fail_msg("%s: line %zu width %.4f, its fragments %.4f", what, k, line->width,
                     natural);
        int hard = end > line->first && para->frags[end - 1].is_space == 2;
        int want_end = hard || k == para->line_count - 1;
        if (line->ends_paragraph != want_end)
            fail_msg("%s: line %zu ends_paragraph %d, want %d", what, k, line->ends_paragraph,
                     want_end);
    }
    if (next_frag != para->frag_count)
        fail_msg("%s: fragments after the last line", what);
    if (p != len)
        fail_msg("%s: the lines hold bytes 0..%zu of %zu", what, p, len);
    if (fabs(pdf_para_height(para, 0, para->line_count) - total) > 1e-9)
        fail_msg("%s: pdf_para_height %g, lines sum to %g", what,
                 pdf_para_height(para, 0, para->line_count), total);

    /* the brief's form of the byte check: the text without spaces, once, in order */
    {
        char *want = malloc(len + 1), *got = malloc(len + 1);
        size_t nw = 0, ng = 0;
        assert_non_null(want);
        assert_non_null(got);
        for (size_t b = 0; b < len; b++) {
            if (b + 3 <= len && memcmp(buf + b, "\xE2\x80\xA8", 3) == 0) {
                b += 2; /* U+2028, a line feed */
                continue;
            }
            if (!is_space_byte(buf[b]) && buf[b] != '\n')
                want[nw++] = buf[b];
        }
        for (size_t k = 0; k < para->line_count; k++)
            for (size_t i = para->lines[k].first; i < para->lines[k].first + para->lines[k].count;
                 i++)
                for (size_t b = 0; b < para->frags[i].len; b++)
                    if (!is_space_byte(para->frags[i].text[b]))
                        got[ng < len ? ng++ : ng] = para->frags[i].text[b];
        if (nw != ng || memcmp(want, got, nw) != 0)
            fail_msg("%s: non-space bytes differ (%zu in the text, %zu in the lines)", what, nw,
                     ng);
        free(want);
        free(got);
    }
}

/* No line after the first starts with 。 or 、 (unless a line feed put it there). */
static void check_kinsoku(const pdf_para *para, const char *what)
{
    for (size_t k = 1; k < para->line_count; k++) {
        const pdf_line *prev = &para->lines[k - 1], *line = &para->lines[k];
        if (prev->count && para->frags[prev->first + prev->count - 1].is_space == 2)
            continue;
        for (size_t i = line->first; i < line->first + line->count; i++) {
            const pdf_frag *fr = &para->frags[i];
            if (fr->is_space)
                continue;
            if (fr->len >= 3 &&
                (memcmp(fr->text, ZH_STOP, 3) == 0 || memcmp(fr->text, ZH_COMMA, 3) == 0)) {
                dump_lines(para);
                fail_msg("%s: line %zu starts with closing CJK punctuation", what, k);
            }
            break;
        }
    }
}

/* ------------------------------------------------------------------ random text */

static uint64_t rng;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static uint32_t rnd_below(uint32_t n)
{
    return n ? rnd() % n : 0;
}

static double rnd_range(double lo, double hi)
{
    return lo + (hi - lo) * (rnd() % 100000) / 100000.0;
}

static const char *const cjk_chars[] = {ZH_MID,         ZH_WEN,         "\xE5\xAD\x97",
                                        "\xE7\xAC\xA6", "\xE6\xB5\x8B", "\xE8\xAF\x95",
                                        "\xE3\x81\x82", "\xEA\xB0\x80", "\xE5\x9B\xBD",
                                        "\xE8\xAA\x9E"};

typedef struct textbuf {
    char *s;
    size_t len, cap;
} textbuf;

static void put(textbuf *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap)
        return; /* the text just ends shorter */
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void puts_(textbuf *t, const char *s)
{
    put(t, s, strlen(s));
}

/* A paragraph of words, hyphenated words, long words, accented and CJK text,
 * runs of spaces, tabs and line feeds. Closing CJK punctuation only ever
 * follows a CJK character. */
static void random_text(textbuf *t, int cjk)
{
    static const char letters[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static const char *const words[] = {"well-known",    "caf\xC3\xA9",
                                        "na\xC3\xAFve",  "1990" EN_DASH "2000",
                                        "x" EM_DASH "y", "(a)",
                                        "end.",          "W",
                                        "mmmm"};
    size_t pieces = rnd_below(70);

    t->len = 0;
    t->s[0] = '\0';
    if (rnd_below(10) == 0)
        puts_(t, "  ");
    for (size_t n = 0; n < pieces; n++) {
        uint32_t kind = rnd_below(100);
        if (kind < 50) {
            size_t wl = 1 + rnd_below(10), hy = wl > 3 && rnd_below(8) == 0 ? wl / 2 : 0;
            for (size_t i = 0; i < wl; i++) {
                char c = hy && i == hy ? '-' : letters[rnd_below(sizeof letters - 1)];
                put(t, &c, 1);
            }
        } else if (kind < 55) {
            size_t wl = 20 + rnd_below(70);
            for (size_t i = 0; i < wl; i++)
                put(t, &letters[rnd_below(26)], 1);
        } else if (kind < 68) {
            puts_(t, words[rnd_below(sizeof words / sizeof words[0])]);
        } else if (kind < 85 && cjk) {
            size_t cl = 1 + rnd_below(12);
            for (size_t i = 0; i < cl; i++) {
                puts_(t, cjk_chars[rnd_below(sizeof cjk_chars / sizeof cjk_chars[0])]);
                if (rnd_below(6) == 0)
                    puts_(t, rnd_below(2) ? ZH_STOP : ZH_COMMA);
            }
        } else if (kind < 90) {
            puts_(t, "\n");
            continue;
        } else {
            puts_(t, "well-known");
        }
        uint32_t sep = rnd_below(100);
        if (sep < 80)
            puts_(t, " ");
        else if (sep < 88)
            puts_(t, rnd_below(2) ? "  " : "   ");
        else if (sep < 93)
            puts_(t, "\t");
        /* else nothing: the next piece joins this one */
    }
    if (rnd_below(5) == 0)
        puts_(t, " ");
}

/* ------------------------------------------------------------------ UTF-8 */

static void expect_cps(const char *s, size_t len, const uint32_t *want, size_t n,
                       const size_t *ends)
{
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        size_t before = pos;
        uint32_t cp = kiln_utf8_next(s, len, &pos);
        if (cp != want[i] || pos != ends[i] || pos <= before)
            fail_msg("code point %zu: got U+%04X ending at %zu, want U+%04X ending at %zu", i, cp,
                     pos, want[i], ends[i]);
    }
    assert_int_equal(pos, len);
}

static void test_utf8_next(void **state)
{
    (void)state;
    {
        const uint32_t w[] = {'H', 'i', '!'};
        const size_t e[] = {1, 2, 3};
        expect_cps("Hi!", 3, w, 3, e);
    }
    {
        /* é (2 bytes), € (3), 中 (3), 😀 (4), then ASCII */
        const char s[] = "\xC3\xA9\xE2\x82\xAC" ZH_MID EMOJI "z";
        const uint32_t w[] = {0xE9, 0x20AC, 0x4E2D, 0x1F600, 'z'};
        const size_t e[] = {2, 5, 8, 12, 13};
        expect_cps(s, sizeof s - 1, w, 5, e);
    }
    {
        /* the extremes of each length */
        const char s[] = "\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF4\x8F\xBF\xBF";
        const uint32_t w[] = {0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10FFFF};
        const size_t e[] = {1, 3, 5, 8, 11, 15};
        expect_cps(s, sizeof s - 1, w, 6, e);
    }
    {
        /* a stray continuation byte and an invalid lead byte: one byte each */
        const char s[] = "a\x80"
                         "b\xFF"
                         "c\xF8\x88";
        const uint32_t w[] = {'a', 0xFFFD, 'b', 0xFFFD, 'c', 0xFFFD, 0xFFFD};
        const size_t e[] = {1, 2, 3, 4, 5, 6, 7};
        expect_cps(s, sizeof s - 1, w, 7, e);
    }
    {
        /* a lead byte followed by a non-continuation byte: U+FFFD, and the
         * next byte is read again as itself */
        const char s[] = "\xE4"
                         "A"
                         "\xC3"
                         " ";
        size_t pos = 0;
        /* "\xE4A..." has room for its 2 continuation bytes: 'A' breaks it */
        assert_int_equal(kiln_utf8_next(s, sizeof s - 1, &pos), 0xFFFD);
        assert_int_equal(pos, 1);
        assert_int_equal(kiln_utf8_next(s, sizeof s - 1, &pos), 'A');
        assert_int_equal(pos, 2);
        assert_int_equal(kiln_utf8_next(s, sizeof s - 1, &pos), 0xFFFD);
        assert_int_equal(pos, 3);
        assert_int_equal(kiln_utf8_next(s, sizeof s - 1, &pos), ' ');
        assert_int_equal(pos, 4);
    }
    {
        /* truncated at the end of the string: U+FFFD, and the end is reached */
        const char *cases[] = {"\xC3", "\xE4\xB8", "\xF0\x9F\x98", "\xF0", "\xE4"};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            size_t len = strlen(cases[i]), pos = 0;
            uint32_t cp = kiln_utf8_next(cases[i], len, &pos);
            if (cp != 0xFFFD || pos != len)
                fail_msg("truncated case %zu: U+%04X, pos %zu of %zu", i, cp, pos, len);
        }
        /* a length cutting a valid sequence short is the same */
        size_t pos = 0;
        assert_int_equal(kiln_utf8_next(ZH_MID, 2, &pos), 0xFFFD);
        assert_int_equal(pos, 2);
    }
    {
        /* at or past the end: 0, no move */
        size_t pos = 3;
        assert_int_equal(kiln_utf8_next("abc", 3, &pos), 0);
        assert_int_equal(pos, 3);
    }
    {
        /* whatever the bytes, every call advances and stays within the string */
        rng = 0x9E3779B97F4A7C15ull;
        for (int round = 0; round < 2000; round++) {
            unsigned char junk[16];
            size_t len = 1 + rnd_below(sizeof junk), pos = 0, calls = 0;
            for (size_t i = 0; i < len; i++)
                junk[i] = (unsigned char)(rnd_below(4) ? 0x80 + rnd_below(0x80) : rnd());
            while (pos < len) {
                size_t before = pos;
                uint32_t cp = kiln_utf8_next((const char *)junk, len, &pos);
                if (pos <= before || pos > len)
                    fail_msg("round %d: pos %zu -> %zu (len %zu)", round, before, pos, len);
                (void)cp;
                assert_true(++calls <= len);
            }
        }
    }
}

/* ------------------------------------------------------------------ families */

static void test_family_for_name(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        pdf_family want;
    } cases[] = {
        {"Calibri", PDF_FAMILY_SANS},
        {"Arial", PDF_FAMILY_SANS},
        {"Helvetica", PDF_FAMILY_SANS},
        {"Liberation Sans", PDF_FAMILY_SANS},
        {"Sans Serif", PDF_FAMILY_SANS},
        {"sans-serif", PDF_FAMILY_SANS},
        {"Microsoft Sans Serif", PDF_FAMILY_SANS},
        {"", PDF_FAMILY_SANS},
        {"Times New Roman", PDF_FAMILY_SERIF},
        {"Georgia", PDF_FAMILY_SERIF},
        {"Cambria", PDF_FAMILY_SERIF},
        {"DejaVu Serif", PDF_FAMILY_SERIF},
        {"serif", PDF_FAMILY_SERIF},
        {"GARAMOND", PDF_FAMILY_SERIF},
        {"Palatino Linotype", PDF_FAMILY_SERIF},
        {"Consolas", PDF_FAMILY_MONO},
        {"Courier New", PDF_FAMILY_MONO},
        {"DejaVu Sans Mono", PDF_FAMILY_MONO},
        {"monospace", PDF_FAMILY_MONO},
        {"Source Code Pro", PDF_FAMILY_MONO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pdf_family got = pdf_family_for_name(cases[i].name);
        if (got != cases[i].want)
            fail_msg("\"%s\": family %d, want %d", cases[i].name, (int)got, (int)cases[i].want);
    }
    assert_int_equal(pdf_family_for_name(NULL), PDF_FAMILY_SANS);
}

/* ------------------------------------------------------------------ widths */

/* Advance of cp in the font file at path, in libharu's /W units (1/1000 em,
 * truncated), read with a FreeType of our own; -1 when it has no glyph. */
static long ft_width(const char *path, int index, uint32_t cp)
{
    FT_Library lib;
    FT_Face face;
    FT_Fixed adv = 0;
    long w = -1;
    assert_int_equal(FT_Init_FreeType(&lib), 0);
    assert_int_equal(FT_New_Face(lib, path, index, &face), 0);
    FT_UInt gid = FT_Get_Char_Index(face, cp);
    if (gid && FT_Get_Advance(face, gid, FT_LOAD_NO_SCALE, &adv) == 0)
        w = (long)((unsigned long)adv * 1000u / face->units_per_EM);
    FT_Done_Face(face);
    FT_Done_FreeType(lib);
    return w;
}

static void test_widths(void **state)
{
    fixture *f = *state;
    pdf_face *sans = face_of(f, PDF_FAMILY_SANS, 0);
    pdf_fonts *fonts = &f->ctx.fonts;
    const char *hello = "Hello";
    double sum = 0;

    for (const char *c = hello; *c; c++)
        sum += pdf_char_width(fonts, sans, (unsigned char)*c, 11);
    double w = pdf_text_width(fonts, sans, hello, 5, 11);
    if (fabs(w - sum) > 1e-9)
        fail_msg("\"Hello\" at 11pt: %.6f, its letters sum to %.6f", w, sum);
    assert_true(w > 11); /* five letters are wider than one em */
    /* linear in the size */
    assert_true(fabs(pdf_text_width(fonts, sans, hello, 5, 22) - 2 * w) < 1e-9);
    assert_true(fabs(pdf_text_width(fonts, sans, hello, 5, 5.5) - w / 2) < 1e-9);
    assert_true(pdf_text_width(fonts, sans, hello, 0, 11) == 0);
    /* the unit libharu writes into /W, from the font file itself */
    long h = ft_width(DEJAVU_SANS, 0, 'H');
    assert_true(h > 0);
    assert_true(fabs(pdf_char_width(fonts, sans, 'H', 1000) - (double)h) < 1e-9);
    /* a second call (cached) gives the same */
    assert_true(fabs(pdf_text_width(fonts, sans, hello, 5, 11) - w) < 1e-12);
    /* bold is wider than regular, mono letters are all alike */
    pdf_face *bold = face_of(f, PDF_FAMILY_SANS, PDF_STYLE_BOLD);
    assert_true(pdf_text_width(fonts, bold, hello, 5, 11) > w);
    pdf_face *mono = face_of(f, PDF_FAMILY_MONO, 0);
    assert_true(
        fabs(pdf_char_width(fonts, mono, 'i', 10) - pdf_char_width(fonts, mono, 'W', 10)) < 1e-9);
    /* controls and zero-width characters take no room */
    assert_true(pdf_char_width(fonts, sans, '\n', 11) == 0);
    assert_true(pdf_char_width(fonts, sans, 0x200B, 11) == 0);
    assert_true(fabs(pdf_text_width(fonts, sans, "He\tllo", 6, 11) - w) < 1e-9);
    /* a multi-byte Latin letter has its own width */
    double e_acute = pdf_char_width(fonts, sans, 0xE9, 11);
    assert_true(e_acute > 0);
    assert_true(fabs(pdf_text_width(fonts, sans, "caf\xC3\xA9", 5, 11) -
                     (pdf_text_width(fonts, sans, "caf", 3, 11) + e_acute)) < 1e-9);
}

static void test_widths_fallback_and_missing(void **state)
{
    fixture *f = *state;
    pdf_face *sans = face_of(f, PDF_FAMILY_SANS, 0);
    pdf_fonts *fonts = &f->ctx.fonts;
    double q = pdf_char_width(fonts, sans, '?', 12);

    assert_true(q > 0);
    /* beyond the BMP nothing can draw it: the width of the '?' drawn instead */
    assert_true(fabs(pdf_char_width(fonts, sans, 0x1F600, 12) - q) < 1e-9);
    assert_true(fabs(pdf_text_width(fonts, sans, EMOJI, 4, 12) - q) < 1e-9);
    assert_true(fabs(pdf_text_width(fonts, sans, "a" EMOJI "b", 6, 12) -
                     (pdf_char_width(fonts, sans, 'a', 12) + q +
                      pdf_char_width(fonts, sans, 'b', 12))) < 1e-9);
    /* a BMP character no face has: '?' too */
    assert_true(fabs(pdf_text_width(fonts, sans, TIBETAN_KA, 3, 12) - q) < 1e-9);

    if (!file_exists(WQY_ZENHEI)) {
        fprintf(stderr, "  (skipped the CJK width checks: %s is absent)\n", WQY_ZENHEI);
        return;
    }
    /* DejaVu Sans has no 中: its width is WenQuanYi's */
    assert_int_equal(ft_width(DEJAVU_SANS, 0, 0x4E2D), -1);
    long zh = ft_width(WQY_ZENHEI, 0, 0x4E2D);
    assert_true(zh > 0);
    double want = (double)zh * 12 / 1000.0;
    double got = pdf_char_width(fonts, sans, 0x4E2D, 12);
    if (fabs(got - want) > 1e-9)
        fail_msg("中 at 12pt: %.4f, WenQuanYi says %.4f", got, want);
    assert_true(fabs(pdf_text_width(fonts, sans, ZH_MID ZH_WEN, 6, 12) -
                     (got + pdf_char_width(fonts, sans, 0x6587, 12))) < 1e-9);
    assert_non_null(fonts->fallback);
    assert_true(fonts->fallback_tried);
}

/* ------------------------------------------------------------------ line breaking */

static void test_layout_random_plain(void **state)
{
    fixture *f = *state;
    char buf[8192], what[96];
    textbuf t = {buf, 0, sizeof buf};

    rng = 0x2545F4914F6CDD1Dull;
    for (int round = 0; round < 600; round++) {
        int cjk = round % 3 != 0;
        random_text(&t, cjk);
        pdf_para_style st = body_style(rnd_range(7, 16));
        st.family = (pdf_family)rnd_below(3);
        st.style = rnd_below(4);
        st.align = (kiln_align)rnd_below(5);
        double width = rnd_range(4 * st.size, 480);
        snprintf(what, sizeof what, "round %d (size %.2f, width %.2f)", round, st.size, width);
        kiln_status rc = pdf_para_layout_plain(&f->ctx, t.s, t.len, &st, width, &f->para);
        if (rc != KILN_E_OK)
            fail_msg("%s: %s", what, f->err.message);
        check_para(f, &f->para, t.s, t.len, width, what);
        if (cjk)
            check_kinsoku(&f->para, what);
        assert_true(pdf_para_max_width(&f->para) <= width + 0.01);
    }
}

/* The same with the text cut into styled runs: faces, sizes, super- and
 * subscripts, code, links. The runs are consecutive slices of one buffer. */
static void test_layout_random_runs(void **state)
{
    fixture *f = *state;
    char buf[8192], what[96];
    textbuf t = {buf, 0, sizeof buf};
    kiln_run runs[8];
    static const unsigned looks[] = {0,
                                     KILN_RUN_BOLD,
                                     KILN_RUN_ITALIC,
                                     KILN_RUN_BOLD | KILN_RUN_ITALIC,
                                     KILN_RUN_CODE,
                                     KILN_RUN_SUPERSCRIPT,
                                     KILN_RUN_SUBSCRIPT,
                                     KILN_RUN_UNDERLINE | KILN_RUN_STRIKE};
    static const char *const fonts[] = {NULL, "Georgia", "Consolas", "Arial"};

    rng = 0xDEADBEEFCAFEF00Dull;
    for (int round = 0; round < 400; round++) {
        random_text(&t, 1);
        size_t nruns = 1 + rnd_below(8), start = 0;
        for (size_t r = 0; r < nruns; r++) {
            size_t end = r + 1 == nruns ? t.len
                                        : start + rnd_below((uint32_t)(t.len - start + 1));
            /* a character boundary, and never just before closing CJK
             * punctuation (test_kinsoku_across_runs covers that) */
            while (end < t.len &&
                   (((unsigned char)t.s[end] & 0xC0) == 0x80 ||
                    memcmp(t.s + end, ZH_STOP, 3) == 0 || memcmp(t.s + end, ZH_COMMA, 3) == 0))
                end++;
            memset(&runs[r], 0, sizeof runs[r]);
            runs[r].text = t.s + start;
            runs[r].len = end - start;
            runs[r].flags = looks[rnd_below(sizeof looks / sizeof looks[0])];
            runs[r].color = rnd_below(2) ? KILN_COLOR_NONE : (int32_t)rnd_below(0x1000000);
            runs[r].size = rnd_below(2) ? 0 : rnd_range(7, 16);
            runs[r].font = fonts[rnd_below(sizeof fonts / sizeof fonts[0])];
            runs[r].link = rnd_below(5) == 0 ? "https://example.com/" : NULL;
            start = end;
        }
        kiln_text text = {runs, nruns};
        pdf_para_style st = body_style(11);
        double width = rnd_range(4 * 16, 480);
        snprintf(what, sizeof what, "round %d (%zu runs, width %.2f)", round, nruns, width);
        kiln_status rc = pdf_para_layout(&f->ctx, &text, &st, width, &f->para);
        if (rc != KILN_E_OK)
            fail_msg("%s: %s", what, f->err.message);
        check_para(f, &f->para, t.s, t.len, width, what);
        check_kinsoku(&f->para, what);
    }
}

static void test_hyphen_break(void **state)
{
    fixture *f = *state;
    pdf_face *sans = face_of(f, PDF_FAMILY_SANS, 0);
    pdf_para_style st = body_style(11);
    const char *s = "a well-known fact";
    char line[256];
    double w1 = pdf_text_width(&f->ctx.fonts, sans, "a well-", 7, 11);
    double w2 = pdf_text_width(&f->ctx.fonts, sans, "a well-known", 12, 11);

    /* room for "a well-" but not "a well-known": the line ends after the hyphen */
    layout_plain(f, s, &st, (w1 + w2) / 2);
    check_para(f, &f->para, s, strlen(s), (w1 + w2) / 2, "well-known");
    assert_true(f->para.line_count >= 2);
    line_text(&f->para, 0, line, sizeof line);
    assert_string_equal(line, "a well-");
    line_text(&f->para, 1, line, sizeof line);
    assert_true(strncmp(line, "known", 5) == 0);

    /* with room, nothing breaks */
    layout_plain(f, s, &st, 400);
    assert_int_equal(f->para.line_count, 1);
    line_text(&f->para, 0, line, sizeof line);
    assert_string_equal(line, s);

    /* a leading ASCII hyphen is no break: "-5" stays whole */
    const char *neg = "aa -55";
    double n1 = pdf_text_width(&f->ctx.fonts, sans, "aa -", 4, 11);
    double n2 = pdf_text_width(&f->ctx.fonts, sans, "aa -55", 6, 11);
    layout_plain(f, neg, &st, (n1 + n2) / 2);
    assert_int_equal(f->para.line_count, 2);
    line_text(&f->para, 0, line, sizeof line);
    assert_string_equal(line, "aa");
    line_text(&f->para, 1, line, sizeof line);
    assert_string_equal(line, "-55");
}

/* The same for a leading dash that is more than one byte long (em dash):
 * "aa —bb" must break at the space, not after the dash. */
static void test_leading_dash_no_break(void **state)
{
    fixture *f = *state;
    pdf_face *sans = face_of(f, PDF_FAMILY_SANS, 0);
    pdf_para_style st = body_style(11);
    const char *s = "aa " EM_DASH "bb";
    char line[256];
    double n1 = pdf_text_width(&f->ctx.fonts, sans, "aa " EM_DASH, 6, 11);
    double n2 = pdf_text_width(&f->ctx.fonts, sans, s, strlen(s), 11);

    layout_plain(f, s, &st, (n1 + n2) / 2);
    check_para(f, &f->para, s, strlen(s), (n1 + n2) / 2, "leading em dash");
    line_text(&f->para, 0, line, sizeof line);
    if (strcmp(line, "aa") != 0) {
        dump_lines(&f->para);
        fail_msg("\"aa —bb\" in a width for \"aa —\": line 0 is \"%s\", want \"aa\" (a line "
                 "ended after a word's leading em dash: pdf_text.c cut_run compares "
                 "pos - start > 1 in bytes, not characters)",
                 line);
    }
}

static void test_cjk_breaks(void **state)
{
    fixture *f = *state;
    pdf_face *sans = face_of(f, PDF_FAMILY_SANS, 0);
    pdf_para_style st = body_style(10);
    /* 中文字符测试。这是一个句子、用于测试换行。日本語のテキストも、同じです。 */
    const char *s = "\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97\xE7\xAC\xA6\xE6\xB5\x8B\xE8\xAF\x95"
                    "\xE3\x80\x82\xE8\xBF\x99\xE6\x98\xAF\xE4\xB8\x80\xE4\xB8\xAA\xE5\x8F\xA5"
                    "\xE5\xAD\x90\xE3\x80\x81\xE7\x94\xA8\xE4\xBA\x8E\xE6\xB5\x8B\xE8\xAF\x95"
                    "\xE6\x8D\xA2\xE8\xA1\x8C\xE3\x80\x82\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"
                    "\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83\x88\xE3\x82\x82"
                    "\xE3\x80\x81\xE5\x90\x8C\xE3\x81\x98\xE3\x81\xA7\xE3\x81\x99\xE3\x80\x82";
    size_t len = strlen(s);
    double em = pdf_char_width(&f->ctx.fonts, sans, 0x4E2D, 10);
    double total = pdf_text_width(&f->ctx.fonts, sans, s, len, 10);
    char what[64];

    assert_true(em > 0);
    /* no spaces at all, yet it breaks, between characters */
    for (double ems = 2.2; ems <= 14; ems += 0.3) {
        double width = ems * em;
        snprintf(what, sizeof what, "CJK in %.1f em", ems);
        layout_plain(f, s, &st, width);
        check_para(f, &f->para, s, len, width, what);
        check_kinsoku(&f->para, what);
        if ((double)f->para.line_count < total / width)
            fail_msg("%s: %zu lines for %.1f em of text", what, f->para.line_count, total / em);
        /* every line but the last is nearly full: at most a character and
         * its closing punctuation moved down */
        for (size_t k = 0; k + 1 < f->para.line_count; k++)
            if (f->para.lines[k].width < width - 2 * em - 0.01)
                fail_msg("%s: line %zu only %.2f of %.2f wide", what, k, f->para.lines[k].width,
                         width);
    }
    /* Latin words and CJK mixed: a break between a word and a CJK character */
    const char *mixed = "Kiln" ZH_MID ZH_WEN "PDF" ZH_MID ZH_STOP;
    double wk = pdf_text_width(&f->ctx.fonts, sans, "Kiln" ZH_MID, 7, 10);
    layout_plain(f, mixed, &st, wk + em / 2);
    check_para(f, &f->para, mixed, strlen(mixed), wk + em / 2, "mixed");
    check_kinsoku(&f->para, "mixed");
    char line[128];
    line_text(&f->para, 0, line, sizeof line);
    assert_string_equal(line, "Kiln" ZH_MID);
}

/* Closing punctuation in a run of its own (markdown "**重要**。") must not
 * start a line either. */
static void test_kinsoku_across_runs(void **state)
{
    fixture *f = *state;
    pdf_face *sans = face_of(f, PDF_FAMILY_SANS, 0);
    kiln_run runs[2];
    kiln_text text = {runs, 2};
    pdf_para_style st = body_style(10);
    const char *first = ZH_MID ZH_WEN ZH_MID ZH_WEN;
    double em = pdf_char_width(&f->ctx.fonts, sans, 0x4E2D, 10);

    memset(runs, 0, sizeof runs);
    runs[0].text = first;
    runs[0].len = strlen(first);
    runs[0].color = KILN_COLOR_NONE;
    runs[1].text = ZH_STOP;
    runs[1].len = 3;
    runs[1].color = KILN_COLOR_NONE;
    /* room for the four characters but not the full stop after them */
    assert_int_equal(pdf_para_layout(&f->ctx, &text, &st, 4.5 * em, &f->para), KILN_E_OK);
    assert_true(f->para.line_count == 2);
    check_kinsoku(&f->para, "。 in a run of its own (pdf_text.c cut_run only looks ahead "
                            "within a run, so the run's last character keeps break_after)");
}

static void test_long_word(void **state)
{
    fixture *f = *state;
    pdf_face *sans = face_of(f, PDF_FAMILY_SANS, 0);
    pdf_para_style st = body_style(11);
    char word[256], withlead[300];

    for (int i = 0; i < 200; i++)
        word[i] = "abcdefghijWMil"[i % 14];
    word[200] = '\0';
    double total = pdf_text_width(&f->ctx.fonts, sans, word, 200, 11);
    layout_plain(f, word, &st, 50);
    check_para(f, &f->para, word, 200, 50, "200-character word");
    if ((double)f->para.line_count < ceil(total / 50))
        fail_msg("%zu lines for %.1f pt", f->para.line_count, total);
    assert_true(f->para.line_count >= 5);
    /* each piece but the last is full: its next character would not fit */
    for (size_t k = 0; k + 1 < f->para.line_count; k++) {
        const pdf_line *line = &f->para.lines[k];
        const pdf_frag *next = &f->para.frags[f->para.lines[k + 1].first];
        size_t pos = 0;
        uint32_t cp = kiln_utf8_next(next->text, next->len, &pos);
        if (line->width + pdf_char_width(&f->ctx.fonts, sans, cp, 11) <= 50)
            fail_msg("piece %zu (%.2f pt) had room for '%c'", k, line->width, (int)cp);
    }
    /* after a short word on the same line */
    snprintf(withlead, sizeof withlead, "x %s y", word);
    layout_plain(f, withlead, &st, 50);
    check_para(f, &f->para, withlead, strlen(withlead), 50, "x LONGWORD y");
    /* narrower than one character: one character per line, nothing lost */
    layout_plain(f, "WWW", &st, 1);
    assert_int_equal(f->para.line_count, 3);
}

static void test_forced_break(void **state)
{
    fixture *f = *state;
    pdf_para_style st = body_style(11);
    const char *s = "first\nsecond\n\nthird";
    char line[64];

    layout_plain(f, s, &st, 400);
    check_para(f, &f->para, s, strlen(s), 400, "hard breaks");
    assert_int_equal(f->para.line_count, 4);
    static const char *const want[] = {"first", "second", "", "third"};
    for (size_t k = 0; k < 4; k++) {
        line_text(&f->para, k, line, sizeof line);
        assert_string_equal(line, want[k]);
        assert_int_equal(f->para.lines[k].ends_paragraph, 1);
        assert_true(f->para.lines[k].height > 0);
    }
    /* the empty line is as tall as the others */
    assert_true(fabs(f->para.lines[2].height - f->para.lines[0].height) < 1e-9);
    /* U+2028 LINE SEPARATOR is a hard break too */
    const char *ls = "one\xE2\x80\xA8two";
    layout_plain(f, ls, &st, 400);
    check_para(f, &f->para, ls, strlen(ls), 400, "U+2028");
    assert_int_equal(f->para.line_count, 2);
    /* wrapped lines are not paragraph ends, the line before a break is */
    const char *wrap = "alpha beta gamma delta\nepsilon";
    layout_plain(f, wrap, &st, 60);
    check_para(f, &f->para, wrap, strlen(wrap), 60, "wrap and break");
    assert_true(f->para.line_count >= 3);
    assert_int_equal(f->para.lines[0].ends_paragraph, 0);
}

static void test_preserve_spaces(void **state)
{
    fixture *f = *state;
    pdf_face *mono = face_of(f, PDF_FAMILY_MONO, 0);
    pdf_para_style st = body_style(10);
    const char *code = "    int x = 1;\n\tif (x)\n        return   x;";
    char line[128];

    st.family = PDF_FAMILY_MONO;
    st.preserve_spaces = 1;
    layout_plain(f, code, &st, 400);
    assert_int_equal(f->para.line_count, 3);
    line_text(&f->para, 0, line, sizeof line);
    assert_string_equal(line, "    int x = 1;");
    assert_true(fabs(f->para.lines[0].width -
                     pdf_text_width(&f->ctx.fonts, mono, "    int x = 1;", 14, 10)) < 1e-9);
    line_text(&f->para, 1, line, sizeof line);
    assert_string_equal(line, "    if (x)"); /* the tab to the next 4-column stop */
    line_text(&f->para, 2, line, sizeof line);
    assert_string_equal(line, "        return   x;");
    for (size_t k = 0; k < 3; k++)
        assert_int_equal(f->para.lines[k].ends_paragraph, 1);

    /* an over-long code line is cut anywhere, each piece within the width,
     * and its leading spaces stay */
    const char *longline = "        value = compute(alpha, beta, gamma, delta, epsilon);";
    layout_plain(f, longline, &st, 90);
    check_para(f, &f->para, longline, strlen(longline), 90, "long code line");
    assert_true(f->para.line_count >= 3);
    line_text(&f->para, 0, line, sizeof line);
    assert_true(strncmp(line, "        v", 9) == 0 || strncmp(line, "        ", 8) == 0);
    assert_true(f->para.lines[0].width > pdf_text_width(&f->ctx.fonts, mono, "v", 1, 10));

    /* the same text as a normal paragraph keeps leading spaces only at the start */
    st.preserve_spaces = 0;
    st.family = PDF_FAMILY_SANS;
    layout_plain(f, "  lead", &st, 400);
    check_para(f, &f->para, "  lead", 6, 400, "leading spaces");
}

static void test_empty_and_heights(void **state)
{
    fixture *f = *state;
    pdf_para_style st = body_style(11);
    pdf_face *sans = face_of(f, PDF_FAMILY_SANS, 0);

    layout_plain(f, "", &st, 200);
    assert_int_equal(f->para.line_count, 1);
    assert_int_equal(f->para.lines[0].count, 0);
    assert_true(f->para.lines[0].height > 0);
    assert_int_equal(f->para.lines[0].ends_paragraph, 1);
    assert_true(fabs(f->para.lines[0].height - 11 * 1.25) < 1e-9);
    assert_true(pdf_para_height(&f->para, 0, 1) > 0);
    assert_true(pdf_para_max_width(&f->para) == 0);

    /* no runs at all */
    kiln_text none = {NULL, 0};
    assert_int_equal(pdf_para_layout(&f->ctx, &none, &st, 200, &f->para), KILN_E_OK);
    assert_int_equal(f->para.line_count, 1);
    assert_true(f->para.lines[0].height > 0);

    /* a wrapped paragraph: heights positive, at least the ascent-descent and
     * the leading; pdf_para_height sums any range and clamps at the end */
    const char *s = "The quick brown fox jumps over the lazy dog, again and again, until "
                    "the paragraph wraps over several lines of text.";
    layout_plain(f, s, &st, 120);
    check_para(f, &f->para, s, strlen(s), 120, "heights");
    size_t n = f->para.line_count;
    assert_true(n >= 4);
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
        const pdf_line *line = &f->para.lines[k];
        assert_true(line->height >= 11 * 1.25 - 1e-9);
        assert_true(line->ascent > 0 && line->descent < 0);
        assert_true(fabs(line->ascent - sans->ascent * 11) < 1e-9);
        sum += line->height;
    }
    assert_true(fabs(pdf_para_height(&f->para, 0, n) - sum) < 1e-9);
    assert_true(fabs(pdf_para_height(&f->para, 1, 2) -
                     (f->para.lines[1].height + f->para.lines[2].height)) < 1e-9);
    assert_true(fabs(pdf_para_height(&f->para, n - 1, 100) - f->para.lines[n - 1].height) < 1e-9);
    assert_true(pdf_para_height(&f->para, n, 3) == 0);
    /* a bigger run makes its line taller */
    kiln_run runs[2];
    memset(runs, 0, sizeof runs);
    runs[0].text = "small ";
    runs[0].len = 6;
    runs[0].color = KILN_COLOR_NONE;
    runs[1].text = "BIG";
    runs[1].len = 3;
    runs[1].size = 24;
    runs[1].color = KILN_COLOR_NONE;
    kiln_text text = {runs, 2};
    assert_int_equal(pdf_para_layout(&f->ctx, &text, &st, 400, &f->para), KILN_E_OK);
    assert_int_equal(f->para.line_count, 1);
    assert_true(f->para.lines[0].height >= 24 * 1.25 - 1e-9);
    /* laying out again into the same para replaces what was there */
    layout_plain(f, "one", &st, 400);
    assert_int_equal(f->para.line_count, 1);
    assert_true(f->para.frag_count == 1);
}

/* ------------------------------------------------------------------ drawing */

static void test_draw_and_save(void **state)
{
    fixture *f = *state;
    pdf_para_style st = body_style(11);
    kiln_run runs[5];
    char path[512], cmd[4096];
    double y = 780;

    f->ctx.page = HPDF_AddPage(f->ctx.pdf);
    assert_non_null(f->ctx.page);
    HPDF_Page_SetWidth(f->ctx.page, 595);
    HPDF_Page_SetHeight(f->ctx.page, 842);
    memset(runs, 0, sizeof runs);
    static const char *const texts[] = {
        "Justified text spreads its words over the whole width of the column, ", "bold words, ",
        "a link to the site, ", "code()",
        " and the end of a paragraph that is long enough to wrap on several lines."};
    static const unsigned flags[] = {0, KILN_RUN_BOLD, 0, KILN_RUN_CODE, KILN_RUN_STRIKE};
    for (size_t r = 0; r < 5; r++) {
        runs[r].text = texts[r];
        runs[r].len = strlen(texts[r]);
        runs[r].flags = flags[r];
        runs[r].color = KILN_COLOR_NONE;
    }
    runs[2].link = "https://example.com/";
    kiln_text text = {runs, 5};
    static const kiln_align aligns[] = {KILN_ALIGN_JUSTIFY, KILN_ALIGN_LEFT, KILN_ALIGN_CENTER,
                                        KILN_ALIGN_RIGHT, KILN_ALIGN_DEFAULT};
    for (size_t a = 0; a < 5; a++) {
        st.align = aligns[a];
        assert_int_equal(pdf_para_layout(&f->ctx, &text, &st, 300, &f->para), KILN_E_OK);
        assert_true(f->para.line_count >= 3);
        size_t links_before = f->ctx.link_count;
        assert_int_equal(pdf_para_draw(&f->ctx, &f->para, 0, f->para.line_count, 72, y),
                         KILN_E_OK);
        /* the link's rectangle is recorded, inside the column */
        assert_true(f->ctx.link_count > links_before);
        for (size_t l = links_before; l < f->ctx.link_count; l++) {
            const pdf_link *lk = &f->ctx.links[l];
            assert_string_equal(lk->uri, "https://example.com/");
            assert_true(lk->x0 >= 72 - 0.01 && lk->x1 <= 72 + 300 + 0.01 && lk->x0 < lk->x1);
            assert_true(lk->y0 < lk->y1 && lk->y1 <= y + 0.01);
        }
        y -= pdf_para_height(&f->para, 0, f->para.line_count) + 12;
    }
    /* CJK, code with spaces, and a part of a paragraph (lines 1..2) */
    st.align = KILN_ALIGN_JUSTIFY;
    layout_plain(f, "Mixed " ZH_MID ZH_WEN ZH_STOP " text and more words to justify it here", &st,
                 150);
    assert_int_equal(pdf_para_draw(&f->ctx, &f->para, 0, f->para.line_count, 72, y), KILN_E_OK);
    assert_int_equal(pdf_para_draw(&f->ctx, &f->para, 1, 2, 300, y), KILN_E_OK);
    assert_int_equal(pdf_para_draw(&f->ctx, &f->para, 5, 100, 300, y), KILN_E_OK); /* past */
    st.preserve_spaces = 1;
    st.family = PDF_FAMILY_MONO;
    layout_plain(f, "    indented\n\tTabbed", &st, 300);
    assert_int_equal(pdf_para_draw(&f->ctx, &f->para, 0, f->para.line_count, 72, 200), KILN_E_OK);
    assert_int_equal(f->haru_code, 0);
    assert_int_equal(f->ctx.fonts.missing_count, 0);

    /* the fonts survive libharu's embedding: the file saves and reads back */
    assert_int_equal(pdf_fonts_finish(&f->ctx.fonts, &f->err), KILN_E_OK);
    snprintf(path, sizeof path, "%s/draw.pdf", tmpdir);
    assert_int_equal(HPDF_SaveToFile(f->ctx.pdf, path), HPDF_OK);
    assert_int_equal(f->haru_code, 0);
    if (getenv("KILN_TEST_TEXT_PDF")) /* a copy to look at */
        assert_int_equal(HPDF_SaveToFile(f->ctx.pdf, getenv("KILN_TEST_TEXT_PDF")), HPDF_OK);
    if (!file_exists("/usr/bin/pdftotext")) {
        fprintf(stderr, "  (skipped reading the PDF back: no pdftotext)\n");
        return;
    }
    /* the text reads back (the CJK through the fallback face, the ToUnicode
     * maps without complaints) */
    snprintf(cmd, sizeof cmd,
             "out=$(pdftotext '%s' - 2>&1) || exit 1; "
             "echo \"$out\" | grep -qi 'error' && exit 1; "
             "echo \"$out\" | tr -s ' \\n' '  ' | grep -q 'spreads its words' || exit 1; "
             "echo \"$out\" | grep -q 'code()' || exit 1; "
             "echo \"$out\" | grep -q '" ZH_MID ZH_WEN "' || exit 1; "
             "echo \"$out\" | grep -q 'indented' || exit 1",
             path);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof cmd, "pdftotext '%s' - >&2", path);
        if (system(cmd) != 0)
            fprintf(stderr, "  (pdftotext failed)\n");
        fail_msg("the saved PDF does not read back as text (%s)", path);
    }
}

static void test_missing_glyphs(void **state)
{
    fixture *f = *state;
    pdf_face *sans = face_of(f, PDF_FAMILY_SANS, 0);

    f->ctx.page = HPDF_AddPage(f->ctx.pdf);
    assert_non_null(f->ctx.page);
    assert_int_equal(f->ctx.fonts.missing_count, 0);
    pdf_draw_text(&f->ctx, f->ctx.page, sans, 11, 0, 72, 700, "plain", 5);
    assert_int_equal(f->ctx.fonts.missing_count, 0);
    const char *s = "A" EMOJI "B";
    pdf_draw_text(&f->ctx, f->ctx.page, sans, 11, 0, 72, 680, s, strlen(s));
    assert_int_equal(f->ctx.fonts.missing_count, 1);
    assert_int_equal(f->ctx.fonts.missing_first, 0x1F600);
    /* a BMP character no face has counts too; the first stays the first */
    const char *t = "x" TIBETAN_KA TIBETAN_KA "y";
    pdf_draw_text(&f->ctx, f->ctx.page, sans, 11, 0, 72, 660, t, strlen(t));
    assert_int_equal(f->ctx.fonts.missing_count, 3);
    assert_int_equal(f->ctx.fonts.missing_first, 0x1F600);
    /* CJK is not missing when the fallback face is there */
    if (file_exists(WQY_ZENHEI)) {
        pdf_draw_text(&f->ctx, f->ctx.page, sans, 11, 0, 72, 640, ZH_MID ZH_STOP, 6);
        assert_int_equal(f->ctx.fonts.missing_count, 3);
    }
    /* a paragraph holding one, drawn, counts it */
    pdf_para_style st = body_style(11);
    layout_plain(f, "smile " EMOJI " please", &st, 300);
    assert_int_equal(pdf_para_draw(&f->ctx, &f->para, 0, f->para.line_count, 72, 600), KILN_E_OK);
    assert_int_equal(f->ctx.fonts.missing_count, 4);
    assert_int_equal(pdf_fonts_finish(&f->ctx.fonts, &f->err), KILN_E_OK);
    assert_int_equal(HPDF_SaveToStream(f->ctx.pdf), HPDF_OK);
    assert_int_equal(f->haru_code, 0);
}

/* ------------------------------------------------------------------ font trimming */

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *fp = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n;
    assert_non_null(fp);
    assert_int_equal(fseek(fp, 0, SEEK_END), 0);
    n = ftell(fp);
    assert_true(n > 0);
    rewind(fp);
    buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *size = (size_t)n;
    return buf;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

static size_t open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    size_t n = 0;
    assert_non_null(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static uint32_t table_sum(const unsigned char *p, size_t len)
{
    uint32_t sum = 0;
    for (size_t i = 0; i < len; i += 4) {
        unsigned char w[4] = {0, 0, 0, 0};
        memcpy(w, p + i, len - i < 4 ? len - i : 4);
        sum += get32(w);
    }
    return sum;
}

/* Trim face index of path and check the copy against the original. */
static void check_trim(const char *path, int index, size_t original_size)
{
    char out[64];
    int fd = pdf_font_trim(path, index, out, sizeof out);
    size_t size;
    unsigned char *t;
    static const char *const kept[] = {"OS/2", "cmap", "cvt ", "fpgm", "glyf", "head", "hhea",
                                       "hmtx", "loca", "maxp", "name", "post", "prep"};
    int has_glyf = 0, has_cmap = 0, has_post = 0, has_head = 0;

    if (fd < 0)
        fail_msg("pdf_font_trim(%s, %d) failed", path, index);
    assert_true(strncmp(out, "/proc/self/fd/", 14) == 0);
    assert_int_equal(atoi(out + 14), fd);
    t = read_all(out, &size);
    if (size >= original_size)
        fail_msg("%s[%d]: trimmed %zu bytes, original %zu", path, index, size, original_size);
    assert_true(size >= 12);
    assert_int_equal(get32(t), 0x00010000);
    unsigned n = (unsigned)(t[4] << 8 | t[5]);
    assert_true(n > 0 && 12 + 16 * (size_t)n <= size);
    /* the binary-search fields of the offset table */
    unsigned power = 1, sel = 0;
    while (power * 2 <= n) {
        power *= 2;
        sel++;
    }
    assert_int_equal(t[6] << 8 | t[7], power * 16);
    assert_int_equal(t[8] << 8 | t[9], sel);
    assert_int_equal(t[10] << 8 | t[11], n * 16 - power * 16);
    for (unsigned i = 0; i < n; i++) {
        const unsigned char *rec = t + 12 + 16 * i;
        uint32_t off = get32(rec + 8), len = get32(rec + 12);
        int known = 0;
        for (size_t k = 0; k < sizeof kept / sizeof kept[0]; k++)
            known |= memcmp(rec, kept[k], 4) == 0;
        if (!known)
            fail_msg("table '%.4s' kept", (const char *)rec);
        if (off % 4 != 0 || off > size || len > size - off)
            fail_msg("table '%.4s' at %u+%u in %zu bytes", (const char *)rec, off, len, size);
        uint32_t sum = table_sum(t + off, len);
        if (memcmp(rec, "head", 4) == 0) {
            has_head = 1;
            sum -= get32(t + off + 8); /* its checksum is taken with the adjustment 0 */
        }
        if (sum != get32(rec + 4))
            fail_msg("table '%.4s' checksum %08x, recorded %08x", (const char *)rec, sum,
                     get32(rec + 4));
        if (memcmp(rec, "post", 4) == 0) {
            has_post = 1;
            assert_int_equal(len, 32);
            assert_int_equal(get32(t + off), 0x00030000);
        }
        has_glyf |= memcmp(rec, "glyf", 4) == 0;
        has_cmap |= memcmp(rec, "cmap", 4) == 0;
    }
    assert_true(has_glyf && has_cmap && has_post && has_head);
    /* the whole file sums to the magic number */
    assert_int_equal(table_sum(t, size), 0xB1B0AFBAu);

    /* FreeType reads the copy as the same font */
    FT_Library lib;
    FT_Face a, b;
    assert_int_equal(FT_Init_FreeType(&lib), 0);
    assert_int_equal(FT_New_Face(lib, path, index, &a), 0);
    if (FT_New_Face(lib, out, 0, &b) != 0)
        fail_msg("FreeType cannot open the trimmed %s[%d]", path, index);
    assert_int_equal(b->num_glyphs, a->num_glyphs);
    assert_int_equal(b->units_per_EM, a->units_per_EM);
    assert_int_equal(b->ascender, a->ascender);
    assert_int_equal(b->descender, a->descender);
    static const uint32_t probe[] = {'A', 'g', 0xE9, 0x4E2D, 0x3002};
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
        /* The copy's cmap maps nothing (pdf_font_trim.c says why): the glyph
         * ids are the original's. */
        FT_UInt ga = FT_Get_Char_Index(a, probe[i]), gb = ga;
        FT_Fixed wa = 0, wb = 0;
        assert_int_equal(FT_Get_Char_Index(b, probe[i]), 0);
        if (!ga)
            continue;
        assert_int_equal(FT_Get_Advance(a, ga, FT_LOAD_NO_SCALE, &wa), 0);
        assert_int_equal(FT_Get_Advance(b, gb, FT_LOAD_NO_SCALE, &wb), 0);
        if (wa != wb)
            fail_msg("U+%04X: advance %ld in the copy, %ld in the original", probe[i], (long)wb,
                     (long)wa);
        /* the outline loads too */
        assert_int_equal(FT_Load_Glyph(b, gb, FT_LOAD_NO_SCALE), 0);
    }
    assert_true(FT_Get_Char_Index(a, 'A') != 0);
    /* the glyph data is the original's, byte for byte */
    static const char *const same[] = {"glyf", "loca", "hmtx", "maxp"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        FT_ULong tag = FT_MAKE_TAG(same[i][0], same[i][1], same[i][2], same[i][3]);
        FT_ULong la = 0, lb = 0;
        assert_int_equal(FT_Load_Sfnt_Table(a, tag, 0, NULL, &la), 0);
        assert_int_equal(FT_Load_Sfnt_Table(b, tag, 0, NULL, &lb), 0);
        assert_int_equal(la, lb);
        unsigned char *ba = malloc(la), *bb = malloc(lb);
        assert_non_null(ba);
        assert_non_null(bb);
        assert_int_equal(FT_Load_Sfnt_Table(a, tag, 0, ba, &la), 0);
        assert_int_equal(FT_Load_Sfnt_Table(b, tag, 0, bb, &lb), 0);
        if (memcmp(ba, bb, la) != 0)
            fail_msg("table '%s' differs from the original", same[i]);
        free(ba);
        free(bb);
    }
    FT_Done_Face(b);
    FT_Done_Face(a);
    FT_Done_FreeType(lib);

    /* and libharu embeds it */
    HPDF_Doc pdf = HPDF_New(NULL, NULL);
    assert_non_null(pdf);
    assert_int_equal(HPDF_UseUTFEncodings(pdf), HPDF_OK);
    const char *name = HPDF_LoadTTFontFromFile(pdf, out, HPDF_TRUE);
    if (!name)
        fail_msg("libharu cannot load the trimmed %s[%d] (error %#lx)", path, index,
                 (unsigned long)HPDF_GetError(pdf));
    HPDF_Font font = HPDF_GetFont(pdf, name, "UTF-8");
    assert_non_null(font);
    HPDF_Page page = HPDF_AddPage(pdf);
    assert_non_null(page);
    assert_int_equal(HPDF_Page_BeginText(page), HPDF_OK);
    assert_int_equal(HPDF_Page_SetFontAndSize(page, font, 12), HPDF_OK);
    assert_int_equal(HPDF_Page_TextOut(page, 72, 700, "Abc"), HPDF_OK);
    assert_int_equal(HPDF_Page_EndText(page), HPDF_OK);
    assert_int_equal(HPDF_SaveToStream(pdf), HPDF_OK);
    assert_true(HPDF_GetStreamSize(pdf) > 1000);
    HPDF_Free(pdf);

    free(t);
    assert_int_equal(close(fd), 0);
}

static void test_font_trim_ttf(void **state)
{
    (void)state;
    struct stat st;
    assert_int_equal(stat(DEJAVU_SANS, &st), 0);
    size_t fds = open_fds();
    check_trim(DEJAVU_SANS, 0, (size_t)st.st_size);
    check_trim("/usr/share/fonts/truetype/dejavu/DejaVuSerif-Bold.ttf", 0, SIZE_MAX);
    assert_int_equal(open_fds(), fds);
}

static void test_font_trim_ttc(void **state)
{
    (void)state;
    struct stat st;
    if (stat(WQY_ZENHEI, &st) != 0) {
        fprintf(stderr, "  (skipped: %s is absent)\n", WQY_ZENHEI);
        return;
    }
    /* a face of a collection becomes a font of its own, smaller than the whole */
    check_trim(WQY_ZENHEI, 0, (size_t)st.st_size);
    check_trim(WQY_ZENHEI, 1, (size_t)st.st_size);
    /* faces it does not have */
    char out[64];
    assert_int_equal(pdf_font_trim(WQY_ZENHEI, 99, out, sizeof out), -1);
    assert_int_equal(pdf_font_trim(WQY_ZENHEI, -1, out, sizeof out), -1);
}

static void test_font_trim_rejects(void **state)
{
    (void)state;
    char out[64], path[512];
    size_t fds = open_fds(), size;
    unsigned char *font = read_all(DEJAVU_SANS, &size);
    unsigned char junk[4096];

    /* not there, a directory, an empty file, text, random bytes */
    assert_int_equal(pdf_font_trim("/nonexistent/font.ttf", 0, out, sizeof out), -1);
    assert_int_equal(pdf_font_trim(tmpdir, 0, out, sizeof out), -1);
    snprintf(path, sizeof path, "%s/empty", tmpdir);
    write_file(path, "", 0);
    assert_int_equal(pdf_font_trim(path, 0, out, sizeof out), -1);
    snprintf(path, sizeof path, "%s/text", tmpdir);
    write_file(path, "localhost\n", 10);
    assert_int_equal(pdf_font_trim(path, 0, out, sizeof out), -1);
    if (file_exists("/etc/hostname"))
        assert_int_equal(pdf_font_trim("/etc/hostname", 0, out, sizeof out), -1);
    rng = 42;
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)rnd();
    snprintf(path, sizeof path, "%s/junk", tmpdir);
    write_file(path, junk, sizeof junk);
    assert_int_equal(pdf_font_trim(path, 0, out, sizeof out), -1);
    /* a collection header claiming more fonts than the file holds, or a face
     * offset beyond the end */
    memcpy(junk, "ttcf\x00\x01\x00\x00\x7F\xFF\xFF\xFF", 12);
    write_file(path, junk, sizeof junk);
    assert_int_equal(pdf_font_trim(path, 0, out, sizeof out), -1);
    memcpy(junk, "ttcf\x00\x01\x00\x00\x00\x00\x00\x01\x7F\x00\x00\x00", 16);
    write_file(path, junk, sizeof junk);
    assert_int_equal(pdf_font_trim(path, 0, out, sizeof out), -1);
    /* a CFF font ("OTTO"): libharu embeds only TrueType outlines */
    memcpy(junk, font, 1024);
    memcpy(junk, "OTTO", 4);
    write_file(path, junk, 1024);
    assert_int_equal(pdf_font_trim(path, 0, out, sizeof out), -1);
    /* a real font with an index it does not have */
    assert_int_equal(pdf_font_trim(DEJAVU_SANS, 1, out, sizeof out), -1);

    /* the font cut short: 100 bytes (inside the directory), 2000 (tables
     * past the end), all but its last byte */
    static const size_t cuts[] = {4, 11, 12, 100, 2000};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        snprintf(path, sizeof path, "%s/cut%zu.ttf", tmpdir, cuts[i]);
        write_file(path, font, cuts[i]);
        if (pdf_font_trim(path, 0, out, sizeof out) != -1)
            fail_msg("the font cut to %zu bytes was trimmed", cuts[i]);
    }
    snprintf(path, sizeof path, "%s/short.ttf", tmpdir);
    write_file(path, font, size - 1);
    int fd = pdf_font_trim(path, 0, out, sizeof out);
    if (fd >= 0) {
        /* the last table may end in padding; then the copy must still load */
        FT_Library lib;
        FT_Face face;
        assert_int_equal(FT_Init_FreeType(&lib), 0);
        assert_int_equal(FT_New_Face(lib, out, 0, &face), 0);
        FT_Done_Face(face);
        FT_Done_FreeType(lib);
        close(fd);
    }
    /* a table whose length runs past the end of the file */
    {
        unsigned n = (unsigned)(font[4] << 8 | font[5]);
        unsigned char *bad = malloc(size);
        assert_non_null(bad);
        memcpy(bad, font, size);
        for (unsigned i = 0; i < n; i++) {
            unsigned char *rec = bad + 12 + 16 * i;
            if (memcmp(rec, "glyf", 4) == 0)
                memcpy(rec + 12, "\x7F\xFF\xFF\xFF", 4);
        }
        snprintf(path, sizeof path, "%s/badlen.ttf", tmpdir);
        write_file(path, bad, size);
        assert_int_equal(pdf_font_trim(path, 0, out, sizeof out), -1);
        free(bad);
    }
    free(font);
    /* no descriptor is left open by a failure */
    assert_int_equal(open_fds(), fds);
}

/* A TrueType signature in front of junk is no font either: none of the
 * directory's tags is a table libharu needs, so a "trimmed" copy would have
 * no head, glyf, loca, cmap... and libharu could not load it. */
static void test_font_trim_signature_junk(void **state)
{
    (void)state;
    char out[64], path[512];
    unsigned char junk[4096];

    rng = 7;
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)rnd();
    memcpy(junk, "\x00\x01\x00\x00\x00\x10", 6); /* 16 tables of random tags */
    snprintf(path, sizeof path, "%s/sigjunk", tmpdir);
    write_file(path, junk, sizeof junk);
    int fd = pdf_font_trim(path, 0, out, sizeof out);
    if (fd >= 0) {
        size_t size;
        unsigned char *t = read_all(out, &size);
        unsigned n = (unsigned)(t[4] << 8 | t[5]);
        free(t);
        close(fd);
        fail_msg("0x00010000 + 4 KB of junk: pdf_font_trim returned a %zu-byte copy with %u "
                 "tables instead of -1 (pdf_font_trim.c build_trimmed never checks that the "
                 "tables libharu requires are present)",
                 size, n);
    }
}

/* The faces pdf_fonts_face loads (through the trimmed copies) are usable:
 * every family and style, with metrics. */
static void test_faces_load(void **state)
{
    fixture *f = *state;
    for (int fam = 0; fam < PDF_FAMILY__COUNT; fam++)
        for (unsigned s = 0; s < PDF_STYLE__COUNT; s++) {
            pdf_face *face = face_of(f, (pdf_family)fam, s);
            assert_non_null(face->font);
            assert_non_null(face->ft);
            assert_true(face->ascent > 0.5 && face->ascent < 1.5);
            assert_true(face->descent < 0 && face->descent > -0.5);
            assert_ptr_equal(pdf_fonts_face(&f->ctx.fonts, (pdf_family)fam, s, &f->err), face);
        }
    assert_int_equal(f->haru_code, 0);
}

/* ------------------------------------------------------------------ main */

static int setup_dir(void **state)
{
    (void)state;
    return test_dir_make(tmpdir, sizeof tmpdir, "pdf-text");
}

static int teardown_dir(void **state)
{
    (void)state;
    return test_dir_remove(tmpdir);
}

#define FX(t) cmocka_unit_test_setup_teardown(t, fx_setup, fx_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_next),
        cmocka_unit_test(test_family_for_name),
        FX(test_widths),
        FX(test_widths_fallback_and_missing),
        FX(test_faces_load),
        FX(test_layout_random_plain),
        FX(test_layout_random_runs),
        FX(test_hyphen_break),
        FX(test_leading_dash_no_break),
        FX(test_cjk_breaks),
        FX(test_kinsoku_across_runs),
        FX(test_long_word),
        FX(test_forced_break),
        FX(test_preserve_spaces),
        FX(test_empty_and_heights),
        FX(test_draw_and_save),
        FX(test_missing_glyphs),
        cmocka_unit_test(test_font_trim_ttf),
        cmocka_unit_test(test_font_trim_ttc),
        cmocka_unit_test(test_font_trim_rejects),
        cmocka_unit_test(test_font_trim_signature_junk),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
