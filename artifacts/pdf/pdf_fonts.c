/*
 * pdf_fonts.c - the font faces a PDF is set in.
 *
 * Three DejaVu families (Sans, Serif, Sans Mono) in four styles, from
 * Debian's fonts-dejavu, are embedded through libharu, which writes them as
 * CID TrueType fonts with Identity-H encoding and subsets their glyphs. A
 * face is loaded the first time text needs it, so a document that never
 * uses italic does not carry an italic font.
 *
 * Metrics and glyph coverage come from FreeType reading the same file, not
 * from libharu: libharu has no public way to ask whether a glyph exists, and
 * its text-width functions walk the encoder per byte. The widths are cached
 * per code point in exactly the unit libharu writes into the font's /W array
 * (advance * 1000 / unitsPerEm, truncated), so what Kiln measures is what a
 * viewer places.
 *
 * Characters a face lacks are set in the fallback face (WenQuanYi Zen Hei,
 * Debian's fonts-wqy-zenhei, for CJK); characters no face has are drawn as
 * '?' and counted, so the front end can report them (never silently lost).
 * Code points beyond the Basic Multilingual Plane count as missing: libharu
 * 2.3.0's UTF-8 encoder maps characters to 16-bit CIDs and cannot show them.
 */
#include "pdf_internal.h"

#include <hpdf_font.h>
#include <hpdf_fontdef.h>
#include FT_ADVANCES_H
#include <hpdf_streams.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../../common/banned.h"

#ifndef KILN_PDF_FONT_DIR
#define KILN_PDF_FONT_DIR "/usr/share/fonts/truetype/dejavu"
#endif
#ifndef KILN_PDF_FALLBACK_FONT
#define KILN_PDF_FALLBACK_FONT "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc"
#endif

static const char *const face_files[PDF_FAMILY__COUNT][PDF_STYLE__COUNT] = {
    [PDF_FAMILY_SANS] = {"DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSans-Oblique.ttf",
                         "DejaVuSans-BoldOblique.ttf"},
    [PDF_FAMILY_SERIF] = {"DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSerif-Italic.ttf",
                          "DejaVuSerif-BoldItalic.ttf"},
    [PDF_FAMILY_MONO] = {"DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf",
                         "DejaVuSansMono-Oblique.ttf", "DejaVuSansMono-BoldOblique.ttf"},
};

static int name_has(const char *name, const char *part)
{
    return strcasestr(name, part) != NULL;
}

pdf_family pdf_family_for_name(const char *name)
{
    static const char *const mono[] = {"mono",  "courier", "consolas",  "code",
                                       "menlo", "monaco",  "typewriter"};
    static const char *const serif[] = {"times",    "georgia", "cambria",     "garamond", "book",
                                        "palatino", "minion",  "baskerville", "charter"};
    if (!name)
        return PDF_FAMILY_SANS;
    for (size_t i = 0; i < sizeof mono / sizeof mono[0]; i++)
        if (name_has(name, mono[i]))
            return PDF_FAMILY_MONO;
    if (name_has(name, "serif") && !name_has(name, "sans"))
        return PDF_FAMILY_SERIF;
    for (size_t i = 0; i < sizeof serif / sizeof serif[0]; i++)
        if (name_has(name, serif[i]))
            return PDF_FAMILY_SERIF;
    return PDF_FAMILY_SANS;
}

kiln_status pdf_fonts_init(pdf_fonts *fonts, HPDF_Doc pdf, kiln_error *err)
{
    memset(fonts, 0, sizeof *fonts);
    fonts->pdf = pdf;
    if (FT_Init_FreeType(&fonts->ft) != 0) {
        fonts->ft = NULL;
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "cannot start FreeType");
    }
    return KILN_E_OK;
}

static void face_free(pdf_face *face)
{
    if (!face)
        return;
    if (face->ft)
        FT_Done_Face(face->ft);
    free(face->widths);
    free(face->drawn);
    free(face);
}

void pdf_fonts_release(pdf_fonts *fonts)
{
    for (int f = 0; f < PDF_FAMILY__COUNT; f++)
        for (int s = 0; s < PDF_STYLE__COUNT; s++)
            face_free(fonts->faces[f][s]);
    face_free(fonts->fallback);
    if (fonts->ft)
        FT_Done_FreeType(fonts->ft);
    memset(fonts, 0, sizeof *fonts);
}

/*
 * The trimmed copies of the font files (pdf_font_trim.c), made once per
 * process and kept: a batch worker or the service renders thousands of
 * documents with the same four faces, and copying 600 KB of font per face
 * per document cost more than laying out a one-page invoice. A copy is
 * keyed by the file's identity (device, inode, size, mtime), so a font
 * replaced on disk is copied again. Shared by the service's render threads,
 * hence the lock.
 */
#define TRIMMED_CACHE_MAX 32

typedef struct trimmed_font {
    char path[512];
    int index, fd;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} trimmed_font;

static trimmed_font trimmed_cache[TRIMMED_CACHE_MAX];
static size_t trimmed_count;
static pthread_mutex_t trimmed_lock = PTHREAD_MUTEX_INITIALIZER;

/* The trimmed copy of face index of path, named in out ("/proc/self/fd/N").
 * Returns its descriptor, *owned 1 when the caller must close it (the cache
 * was full), or -1 when there is no copy (pdf_font_trim refused). */
static int trimmed_copy(const char *path, int index, char *out, size_t cap, int *owned)
{
    struct stat st;
    *owned = 0;
    if (stat(path, &st) != 0 || strlen(path) >= sizeof trimmed_cache[0].path)
        return -1;
    pthread_mutex_lock(&trimmed_lock);
    int fd = -1;
    for (size_t i = 0; i < trimmed_count && fd < 0; i++) {
        trimmed_font *t = &trimmed_cache[i];
        if (t->index == index && t->dev == st.st_dev && t->ino == st.st_ino &&
            t->size == st.st_size && t->mtime.tv_sec == st.st_mtim.tv_sec &&
            t->mtime.tv_nsec == st.st_mtim.tv_nsec && strcmp(t->path, path) == 0)
            fd = t->fd;
    }
    if (fd >= 0) {
        snprintf(out, cap, "/proc/self/fd/%d", fd);
    } else if ((fd = pdf_font_trim(path, index, out, cap)) >= 0) {
        if (trimmed_count < TRIMMED_CACHE_MAX) {
            trimmed_font *t = &trimmed_cache[trimmed_count++];
            snprintf(t->path, sizeof t->path, "%s", path);
            t->index = index;
            t->fd = fd;
            t->dev = st.st_dev;
            t->ino = st.st_ino;
            t->size = st.st_size;
            t->mtime = st.st_mtim;
        } else {
            *owned = 1;
        }
    }
    pthread_mutex_unlock(&trimmed_lock);
    return fd;
}

/* Load one font file (index: the face inside a .ttc) into both libharu and
 * FreeType. NULL with err set on failure. */
static pdf_face *face_load(pdf_fonts *fonts, const char *path, int index, kiln_error *err)
{
    pdf_face *face = calloc(1, sizeof *face);
    const char *name;

    if (!face) {
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory loading font %s", path);
        return NULL;
    }
    face->file = path;
    face->widths = malloc(65536 * sizeof face->widths[0]);
    if (!face->widths) {
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory loading font %s", path);
        goto fail_free_face;
    }
    for (size_t i = 0; i < 65536; i++)
        face->widths[i] = PDF_WIDTH_UNKNOWN;
    face->drawn = calloc(65536 / 8, 1);
    if (!face->drawn) {
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory loading font %s", path);
        goto fail_free_face;
    }
    if (FT_New_Face(fonts->ft, path, index, &face->ft) != 0) {
        face->ft = NULL;
        kiln_error_set(err, KILN_E_INTERNAL, NULL,
                       "cannot read font %s (install Debian's fonts-dejavu-core and "
                       "fonts-dejavu-extra)",
                       path);
        goto fail_free_face;
    }
    if (!FT_IS_SFNT(face->ft) || face->ft->units_per_EM == 0) {
        kiln_error_set(err, KILN_E_INTERNAL, NULL, "font %s is not a TrueType font", path);
        goto fail_free_face;
    }
    /* Ascent and descent as libharu writes them (the hhea values), per point. */
    face->ascent = (double)face->ft->ascender / face->ft->units_per_EM;
    face->descent = (double)face->ft->descender / face->ft->units_per_EM;

    {
        char trimmed[64];
        int owned;
        int fd = trimmed_copy(path, index, trimmed, sizeof trimmed, &owned);
        if (fd >= 0) {
            name = HPDF_LoadTTFontFromFile(fonts->pdf, trimmed, HPDF_TRUE);
            if (owned)
                close(fd); /* libharu holds its own handle on the memory file */
        } else {
            name = index > 0 || strstr(path, ".ttc")
                       ? HPDF_LoadTTFontFromFile2(fonts->pdf, path, (HPDF_UINT)index, HPDF_TRUE)
                       : HPDF_LoadTTFontFromFile(fonts->pdf, path, HPDF_TRUE);
        }
    }
    if (!name) {
        kiln_error_set(err, KILN_E_INTERNAL, NULL, "libharu cannot load font %s (error %#lx)",
                       path, (unsigned long)HPDF_GetError(fonts->pdf));
        goto fail_free_face;
    }
    face->font = HPDF_GetFont(fonts->pdf, name, "UTF-8");
    if (!face->font) {
        kiln_error_set(err, KILN_E_INTERNAL, NULL, "libharu cannot use font %s (error %#lx)",
                       path, (unsigned long)HPDF_GetError(fonts->pdf));
        goto fail_free_face;
    }
    return face;

fail_free_face:
    HPDF_ResetError(fonts->pdf);
    face_free(face);
    return NULL;
}

pdf_face *pdf_fonts_face(pdf_fonts *fonts, pdf_family family, unsigned style, kiln_error *err)
{
    char path[512];

    if ((unsigned)family >= PDF_FAMILY__COUNT)
        family = PDF_FAMILY_SANS;
    style &= PDF_STYLE_BOLD | PDF_STYLE_ITALIC;
    if (fonts->faces[family][style])
        return fonts->faces[family][style];
    snprintf(path, sizeof path, "%s/%s", KILN_PDF_FONT_DIR, face_files[family][style]);
    fonts->faces[family][style] = face_load(fonts, path, 0, err);
    if (fonts->faces[family][style])
        fonts->faces[family][style]->style = style;
    return fonts->faces[family][style];
}

/* The fallback face, loaded on first need; NULL when the system has none
 * (not an error: the characters are then reported as missing). */
static pdf_face *fallback_face(pdf_fonts *fonts)
{
    if (!fonts->fallback_tried) {
        kiln_error ignored;
        fonts->fallback_tried = 1;
        fonts->fallback = face_load(fonts, KILN_PDF_FALLBACK_FONT, 0, &ignored);
    }
    return fonts->fallback;
}

/* Width of cp in face in 1/1000 em, or PDF_WIDTH_MISSING. */
static int16_t face_width(pdf_face *face, uint32_t cp)
{
    int16_t w;

    if (cp > 0xFFFF)
        return PDF_WIDTH_MISSING;
    w = face->widths[cp];
    if (w == PDF_WIDTH_UNKNOWN) {
        FT_UInt gid = FT_Get_Char_Index(face->ft, cp);
        FT_Fixed advance = 0;
        if (gid == 0 || FT_Get_Advance(face->ft, gid, FT_LOAD_NO_SCALE, &advance) != 0) {
            w = PDF_WIDTH_MISSING;
        } else {
            /* libharu: (HPDF_UINT)advance * 1000 / units_per_em, truncated */
            w = (int16_t)((unsigned long)advance * 1000u / face->ft->units_per_EM);
        }
        face->widths[cp] = w;
    }
    return w;
}

/* The face that draws cp, starting from face: face itself, the fallback, or
 * NULL when none has it. Control characters draw as nothing in face. */
static pdf_face *face_for(pdf_fonts *fonts, pdf_face *face, uint32_t cp)
{
    pdf_face *fb;

    if (face_width(face, cp) != PDF_WIDTH_MISSING)
        return face;
    /* DejaVu Sans upright has the widest coverage (Arabic and Hebrew, which
     * the Serif and the oblique faces lack), then the CJK fallback */
    if (face != fonts->faces[PDF_FAMILY_SANS][face->style & PDF_STYLE_BOLD] && cp <= 0xFFFF) {
        kiln_error ignored;
        fb = pdf_fonts_face(fonts, PDF_FAMILY_SANS, face->style & PDF_STYLE_BOLD, &ignored);
        if (fb && face_width(fb, cp) != PDF_WIDTH_MISSING)
            return fb;
    }
    fb = fallback_face(fonts);
    if (fb && face_width(fb, cp) != PDF_WIDTH_MISSING)
        return fb;
    return NULL;
}

static int is_invisible(uint32_t cp)
{
    /* C0/C1 controls, soft hyphen, zero-width space/joiners, BOM: no glyph is
     * wanted, so they are neither drawn nor reported */
    return cp < 0x20 || (cp >= 0x7F && cp < 0xA0) || cp == 0xAD || cp == 0x200B || cp == 0x200C ||
           cp == 0x200D || cp == 0xFEFF;
}

double pdf_char_width(pdf_fonts *fonts, pdf_face *face, uint32_t cp, double size)
{
    pdf_face *drawn;

    if (is_invisible(cp))
        return 0;
    drawn = face_for(fonts, face, cp);
    if (!drawn) {
        drawn = face;
        cp = '?';
    }
    return face_width(drawn, cp) * size / 1000.0;
}

double pdf_text_width(pdf_fonts *fonts, pdf_face *face, const char *s, size_t len, double size)
{
    long units = 0;
    size_t pos = 0;

    while (pos < len) {
        uint32_t cp = kiln_utf8_next(s, len, &pos);
        pdf_face *drawn;
        if (is_invisible(cp))
            continue;
        if (cp < 0x80 && face->widths[cp] >= 0) { /* the common case, cached */
            units += face->widths[cp];
            continue;
        }
        drawn = face_for(fonts, face, cp);
        if (!drawn) {
            drawn = face;
            cp = '?';
        }
        units += face_width(drawn, cp);
    }
    return units * size / 1000.0;
}

/* libharu tracks the graphics state (through GSave/GRestore too), and every
 * operator it writes costs a buffer clear and a float formatting: setting a
 * color or a font that is already current is skipped. */
static int same_rgb(HPDF_RGBColor have, int32_t rgb)
{
    return (int)(have.r * 255.0f + 0.5f) == ((rgb >> 16) & 0xFF) &&
           (int)(have.g * 255.0f + 0.5f) == ((rgb >> 8) & 0xFF) &&
           (int)(have.b * 255.0f + 0.5f) == (rgb & 0xFF);
}

void pdf_set_fill(HPDF_Page page, int32_t rgb)
{
    if (rgb < 0)
        rgb = 0;
    if (HPDF_Page_GetFillingColorSpace(page) == HPDF_CS_DEVICE_RGB &&
        same_rgb(HPDF_Page_GetRGBFill(page), rgb))
        return;
    HPDF_Page_SetRGBFill(page, (HPDF_REAL)((rgb >> 16) & 0xFF) / 255.0f,
                         (HPDF_REAL)((rgb >> 8) & 0xFF) / 255.0f,
                         (HPDF_REAL)(rgb & 0xFF) / 255.0f);
}

void pdf_set_stroke(HPDF_Page page, int32_t rgb)
{
    if (rgb < 0)
        rgb = 0;
    if (HPDF_Page_GetStrokingColorSpace(page) == HPDF_CS_DEVICE_RGB &&
        same_rgb(HPDF_Page_GetRGBStroke(page), rgb))
        return;
    HPDF_Page_SetRGBStroke(page, (HPDF_REAL)((rgb >> 16) & 0xFF) / 255.0f,
                           (HPDF_REAL)((rgb >> 8) & 0xFF) / 255.0f,
                           (HPDF_REAL)(rgb & 0xFF) / 255.0f);
}

/* Show bytes [start, end) of s in face at (x, y); returns the advance. The
 * bytes are copied because HPDF_Page_ShowText wants a NUL-terminated string. */
static double show_span(HPDF_Page page, pdf_face *face, double size, double x, double y,
                        const char *s, size_t start, size_t end, double advance)
{
    char stack[512];
    char *buf = stack;
    size_t n = end - start;

    if (n == 0)
        return 0;
    if (n >= sizeof stack) {
        buf = malloc(n + 1);
        if (!buf)
            return advance; /* out of memory mid-draw: leave the gap, keep the layout */
    }
    memcpy(buf, s + start, n);
    buf[n] = '\0';
    HPDF_Page_BeginText(page);
    if (HPDF_Page_GetCurrentFont(page) != face->font ||
        HPDF_Page_GetCurrentFontSize(page) != (HPDF_REAL)size)
        HPDF_Page_SetFontAndSize(page, face->font, (HPDF_REAL)size);
    HPDF_Page_TextOut(page, (HPDF_REAL)x, (HPDF_REAL)y, buf);
    HPDF_Page_EndText(page);
    if (buf != stack)
        free(buf);
    return advance;
}

void pdf_draw_text(pdf_ctx *ctx, HPDF_Page page, pdf_face *face, double size, int32_t color,
                   double x, double y, const char *s, size_t len)
{
    pdf_fonts *fonts = &ctx->fonts;
    size_t pos = 0, span_start = 0;
    pdf_face *span_face = face;
    double span_width = 0;

    pdf_set_fill(page, color);
    while (pos < len) {
        size_t at = pos;
        uint32_t cp = kiln_utf8_next(s, len, &pos);
        pdf_face *drawn;

        if (is_invisible(cp)) {
            x += show_span(page, span_face, size, x, y, s, span_start, at, span_width);
            span_width = 0;
            span_start = pos;
            continue;
        }
        drawn = face_for(fonts, face, cp);
        if (!drawn || cp > 0xFFFF) {
            x += show_span(page, span_face, size, x, y, s, span_start, at, span_width);
            if (fonts->missing_count++ == 0)
                fonts->missing_first = cp;
            face->drawn['?' >> 3] |= (uint8_t)(1u << ('?' & 7));
            x += show_span(page, face, size, x, y, "?", 0, 1,
                           face_width(face, '?') * size / 1000.0);
            span_width = 0;
            span_start = pos;
            span_face = face;
            continue;
        }
        if (drawn != span_face) {
            x += show_span(page, span_face, size, x, y, s, span_start, at, span_width);
            span_width = 0;
            span_start = at;
            span_face = drawn;
        }
        drawn->drawn[cp >> 3] |= (uint8_t)(1u << (cp & 7));
        span_width += face_width(drawn, cp) * size / 1000.0;
    }
    show_span(page, span_face, size, x, y, s, span_start, len, span_width);
}

/*
 * libharu 2.3.0 gives each UTF-8 font a ToUnicode stream holding its encoder
 * CMap, whose "begincidrange" sections are not ToUnicode syntax (pdftotext
 * warns about every one, and copy-paste depends on the reader guessing).
 * With the UTF-8 encoder a character's code is its BMP code point, so the
 * right ToUnicode map is the identity: rewrite the stream as that.
 */
static int was_drawn(const pdf_face *face, uint32_t cp)
{
    return (face->drawn[cp >> 3] >> (cp & 7)) & 1;
}

/* Mark the components of composite glyph gid as used, at any depth. */
static void mark_components(FT_Face ft, HPDF_TTFontDefAttr tt, FT_UInt gid, int depth)
{
    if (depth > 8 || FT_Load_Glyph(ft, gid, FT_LOAD_NO_RECURSE | FT_LOAD_NO_SCALE) != 0 ||
        ft->glyph->format != FT_GLYPH_FORMAT_COMPOSITE)
        return;
    FT_UInt count = ft->glyph->num_subglyphs;
    FT_Int parts[64];
    if (count > 64)
        count = 64;
    for (FT_UInt i = 0; i < count; i++) {
        FT_Int index = -1, arg1, arg2;
        FT_UInt sub_flags;
        FT_Matrix matrix;
        parts[i] = -1;
        if (FT_Get_SubGlyph_Info(ft->glyph, i, &index, &sub_flags, &arg1, &arg2, &matrix) == 0)
            parts[i] = index;
    }
    /* the glyph slot is reused by the recursion: read every part first */
    for (FT_UInt i = 0; i < count; i++) {
        if (parts[i] <= 0 || parts[i] >= tt->num_glyphs)
            continue;
        tt->glyph_tbl.flgs[parts[i]] = 1;
        mark_components(ft, tt, (FT_UInt)parts[i], depth + 1);
    }
}

/*
 * libharu embeds only the glyphs it saw drawn, and for a composite glyph (a
 * Hangul syllable in WenQuanYi is built from jamo parts) only the parts one
 * level down: a part that is itself composite is left out and the syllable
 * prints blank. Complete the set from FreeType before saving.
 */
static void complete_composites(pdf_face *face)
{
    HPDF_FontAttr attr = (HPDF_FontAttr)face->font->attr;
    HPDF_TTFontDefAttr tt;

    if (!attr || !attr->fontdef || attr->fontdef->type != HPDF_FONTDEF_TYPE_TRUETYPE)
        return;
    tt = (HPDF_TTFontDefAttr)attr->fontdef->attr;
    if (!tt || !tt->glyph_tbl.flgs)
        return;
    /* The glyphs of the characters drawn: libharu reads an empty cmap
     * (pdf_font_trim.c says why), so it marks none itself. */
    for (uint32_t cp = 1; cp <= 0xFFFF; cp++) {
        if (!was_drawn(face, cp))
            continue;
        FT_UInt gid = FT_Get_Char_Index(face->ft, cp);
        if (gid > 0 && gid < tt->num_glyphs)
            tt->glyph_tbl.flgs[gid] = 1;
    }
    for (FT_UInt gid = 1; gid < tt->num_glyphs && gid < face->ft->num_glyphs; gid++)
        if (tt->glyph_tbl.flgs[gid])
            mark_components(face->ft, tt, gid, 0);
}

/*
 * libharu writes a font's /W array and its CIDToGIDMap for every character
 * the font has (3,000 for DejaVu Sans, 20,000 for WenQuanYi), whatever the
 * document uses: 30-80 KB per font, the /W array uncompressed. Only the
 * characters drawn matter, so both are rewritten for those alone.
 */
static kiln_status compact_cid_tables(pdf_face *face, kiln_error *err)
{
    HPDF_FontAttr attr = (HPDF_FontAttr)face->font->attr;
    HPDF_Dict cid_font = attr ? attr->descendant_font : NULL;
    HPDF_Array widths, run = NULL;
    HPDF_STATUS st = HPDF_OK;
    uint32_t last = 0, highest = 0;

    if (!cid_font)
        return KILN_E_OK;
    widths = HPDF_Array_New(cid_font->mmgr);
    if (!widths)
        goto fail_nomem;
    for (uint32_t cp = 1; cp <= 0xFFFF; cp++) {
        int16_t w;
        if (!was_drawn(face, cp) || (w = face_width(face, cp)) == PDF_WIDTH_MISSING) {
            run = NULL;
            continue;
        }
        if (!run || cp != last + 1) {
            st |= HPDF_Array_AddNumber(widths, (HPDF_INT32)cp);
            run = HPDF_Array_New(cid_font->mmgr);
            if (!run || HPDF_Array_Add(widths, run) != HPDF_OK)
                goto fail_nomem;
        }
        st |= HPDF_Array_AddNumber(run, w);
        last = highest = cp;
    }
    if (st != HPDF_OK || HPDF_Dict_Add(cid_font, "W", widths) != HPDF_OK)
        goto fail_nomem;
    if (attr->map_stream && attr->map_stream->stream) {
        HPDF_MemStream_FreeData(attr->map_stream->stream);
        for (uint32_t cp = 0; cp <= highest; cp++) {
            FT_UInt gid = was_drawn(face, cp) ? FT_Get_Char_Index(face->ft, cp) : 0;
            HPDF_BYTE pair[2] = {(HPDF_BYTE)(gid >> 8), (HPDF_BYTE)gid};
            st |= HPDF_Stream_Write(attr->map_stream->stream, pair, 2);
        }
        attr->map_stream->filter = HPDF_STREAM_FILTER_FLATE_DECODE;
        if (st != HPDF_OK)
            goto fail_nomem;
    }
    return KILN_E_OK;

fail_nomem:
    return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory writing a font's widths");
}

static kiln_status fix_one(pdf_face *face, kiln_error *err)
{
    HPDF_FontAttr attr;
    HPDF_Dict cmap;
    char line[64];
    HPDF_STATUS st = HPDF_OK;

    if (!face || !face->font)
        return KILN_E_OK;
    complete_composites(face);
    if (compact_cid_tables(face, err) != KILN_E_OK)
        return err->code;
    attr = (HPDF_FontAttr)face->font->attr;
    cmap = attr ? attr->cmap_stream : NULL;
    if (!cmap || !cmap->stream)
        return KILN_E_OK;
    HPDF_MemStream_FreeData(cmap->stream);
    HPDF_Dict_RemoveElement(cmap, "Type");
    HPDF_Dict_RemoveElement(cmap, "CMapName");
    HPDF_Dict_RemoveElement(cmap, "CIDSystemInfo");
    HPDF_Dict_RemoveElement(cmap, "WMode");
    st |= HPDF_Stream_WriteStr(cmap->stream,
                               "/CIDInit /ProcSet findresource begin\n"
                               "12 dict begin\nbegincmap\n"
                               "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) "
                               "/Supplement 0 >> def\n"
                               "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
                               "1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n");
    /* A bfrange may not cross a change of the first byte: one range per high
     * byte, at most 100 per section; the surrogate block (D8-DF) is no
     * character and stays unmapped. */
    int highs[256], high_count = 0;
    for (int hi = 0; hi < 256; hi++)
        if (hi < 0xD8 || hi > 0xDF)
            highs[high_count++] = hi;
    for (int first = 0; first < high_count; first += 100) {
        int n = high_count - first < 100 ? high_count - first : 100;
        snprintf(line, sizeof line, "%d beginbfrange\n", n);
        st |= HPDF_Stream_WriteStr(cmap->stream, line);
        for (int k = first; k < first + n; k++) {
            snprintf(line, sizeof line, "<%02X00> <%02XFF> <%02X00>\n", highs[k], highs[k],
                     highs[k]);
            st |= HPDF_Stream_WriteStr(cmap->stream, line);
        }
        st |= HPDF_Stream_WriteStr(cmap->stream, "endbfrange\n");
    }
    st |= HPDF_Stream_WriteStr(cmap->stream,
                               "endcmap\nCMapName currentdict /CMap defineresource pop\n"
                               "end\nend\n");
    cmap->filter = HPDF_STREAM_FILTER_FLATE_DECODE;
    if (st != HPDF_OK)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory writing a font map");
    return KILN_E_OK;
}

kiln_status pdf_fonts_finish(pdf_fonts *fonts, kiln_error *err)
{
    kiln_status st;

    for (int f = 0; f < PDF_FAMILY__COUNT; f++) {
        for (int s = 0; s < PDF_STYLE__COUNT; s++) {
            st = fix_one(fonts->faces[f][s], err);
            if (st != KILN_E_OK)
                return st;
        }
    }
    return fix_one(fonts->fallback, err);
}
