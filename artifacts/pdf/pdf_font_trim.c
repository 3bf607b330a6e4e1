/*
 * pdf_font_trim.c - a slimmer copy of a TrueType font for libharu to embed.
 *
 * libharu subsets the glyph outlines it embeds, but copies every other
 * table it needs whole. The largest of them is usually `post`, whose
 * version 2 holds a PostScript name for every glyph: 28 KB compressed per
 * DejaVu face, 177 KB for WenQuanYi Zen Hei, in every PDF that uses them,
 * and useless in an embedded CID font (text is mapped to glyphs by ID, and
 * to Unicode by the ToUnicode map). So each font is copied, before libharu
 * loads it, into an anonymous memory file (memfd) holding only the tables
 * libharu embeds, with `post` cut to its version 3 header (no names). A face
 * inside a collection (.ttc) becomes a stand-alone font on the way.
 *
 * The `cmap` goes too, for one that maps nothing. libharu builds the
 * CIDToGIDMap and /W array of a UTF-8 font by looking up every one of the
 * 65,536 CIDs in the font's cmap with a linear search over its segments
 * (HPDF_TTFontDef_GetGlyphid), which made that one step half of the time of
 * a one-page PDF (a batch of invoices spent 46% of its CPU there). Kiln
 * writes both of those tables again itself from FreeType, for the
 * characters drawn (pdf_fonts.c, compact_cid_tables), and marks the glyphs
 * to embed from FreeType too, so libharu's lookups have nothing to find and
 * cost nothing. A viewer never reads the embedded cmap of a CID font: it
 * maps codes to glyphs through the CIDToGIDMap.
 *
 * Everything else is byte for byte the original, so metrics, glyph IDs and
 * outlines are unchanged (FreeType keeps reading the original file).
 */
#include "pdf_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../../common/banned.h"

/* The tables libharu 2.3.0 copies into the PDF (REQUIRED_TAGS in
 * hpdf_fontdef_tt.c); anything else is left out of the copy. */
static const char *const kept_tables[] = {"OS/2", "cmap", "cvt ", "fpgm", "glyf", "head", "hhea",
                                          "hmtx", "loca", "maxp", "name", "post", "prep"};

#define MAX_TABLES 64

/* A cmap with one (3,1) format 4 subtable whose only segment is the
 * required 0xFFFF terminator: every character maps to glyph 0. */
static const unsigned char empty_cmap[36] = {
    0,    0,    0, 1, /* version 0, one encoding record */
    0,    3,    0, 1,  0, 0,
    0,    12,                /* Windows, Unicode BMP, at offset 12 */
    0,    4,    0, 24, 0, 0, /* format 4, length 24, language 0 */
    0,    2,    0, 2,  0, 0,
    0,    0,          /* segCountX2 2, searchRange 2, entrySelector 0, rangeShift 0 */
    0xFF, 0xFF, 0, 0, /* endCount[0], reservedPad */
    0xFF, 0xFF, 0, 1, /* startCount[0], idDelta[0] */
    0,    0           /* idRangeOffset[0] */
};

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t be16(const unsigned char *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static uint32_t checksum(const unsigned char *p, size_t len)
{
    uint32_t sum = 0;
    size_t i = 0;
    for (; i + 4 <= len; i += 4)
        sum += be32(p + i);
    if (i < len) {
        unsigned char tail[4] = {0, 0, 0, 0};
        memcpy(tail, p + i, len - i);
        sum += be32(tail);
    }
    return sum;
}

typedef struct table_ref {
    char tag[4];
    const unsigned char *data;
    uint32_t len;
} table_ref;

/* Build the trimmed font in memory. Returns a malloc'd buffer and its size,
 * or NULL when the file is not a font this code understands. */
static unsigned char *build_trimmed(const unsigned char *file, size_t size, int index,
                                    size_t *out_size)
{
    table_ref tables[MAX_TABLES];
    size_t base = 0, count = 0, total, at;
    unsigned num_tables;
    unsigned char *out, *head = NULL;
    unsigned char post3[32];

    if (size < 12)
        return NULL;
    if (memcmp(file, "ttcf", 4) == 0) {
        uint32_t fonts = be32(file + 8);
        if (index < 0 || (uint32_t)index >= fonts || 12 + 4 * (size_t)fonts > size)
            return NULL;
        base = be32(file + 12 + 4 * (size_t)index);
    } else if (index != 0) {
        return NULL;
    }
    if (base + 12 > size || be32(file + base) != 0x00010000)
        return NULL; /* TrueType outlines only (libharu embeds nothing else) */
    num_tables = be16(file + base + 4);
    if (base + 12 + 16 * (size_t)num_tables > size)
        return NULL;
    for (unsigned i = 0; i < num_tables && count < MAX_TABLES; i++) {
        const unsigned char *rec = file + base + 12 + 16 * (size_t)i;
        uint32_t off = be32(rec + 8), len = be32(rec + 12);
        int keep = 0;
        for (size_t k = 0; k < sizeof kept_tables / sizeof kept_tables[0]; k++)
            keep |= memcmp(rec, kept_tables[k], 4) == 0;
        if (!keep)
            continue;
        if (off > size || len > size - off)
            return NULL;
        memcpy(tables[count].tag, rec, 4);
        tables[count].data = file + off;
        tables[count].len = len;
        if (memcmp(rec, "cmap", 4) == 0) {
            tables[count].data = empty_cmap;
            tables[count].len = sizeof empty_cmap;
        }
        if (memcmp(rec, "post", 4) == 0 && len >= 32) {
            /* version 3.0: the same header, no glyph names */
            memcpy(post3, file + off, 32);
            put32(post3, 0x00030000);
            tables[count].data = post3;
            tables[count].len = 32;
        }
        count++;
    }
    /* what libharu cannot do without (hpdf_fontdef_tt.c parses these) */
    {
        static const char *const needed[] = {"head", "hhea", "maxp", "cmap",
                                             "hmtx", "loca", "glyf"};
        for (size_t k = 0; k < sizeof needed / sizeof needed[0]; k++) {
            int found = 0;
            for (size_t i = 0; i < count; i++)
                found |= memcmp(tables[i].tag, needed[k], 4) == 0;
            if (!found)
                return NULL;
        }
    }
    total = 12 + 16 * count;
    for (size_t i = 0; i < count; i++)
        total += ((size_t)tables[i].len + 3) & ~(size_t)3;
    out = calloc(1, total);
    if (!out)
        return NULL;
    /* the offset table, with the binary-search fields for the new count */
    {
        unsigned entry_selector = 0, power = 1;
        while (power * 2 <= count) {
            power *= 2;
            entry_selector++;
        }
        put32(out, 0x00010000);
        put16(out + 4, (uint16_t)count);
        put16(out + 6, (uint16_t)(power * 16));
        put16(out + 8, (uint16_t)entry_selector);
        put16(out + 10, (uint16_t)(count * 16 - power * 16));
    }
    at = 12 + 16 * count;
    for (size_t i = 0; i < count; i++) {
        unsigned char *rec = out + 12 + 16 * i;
        memcpy(out + at, tables[i].data, tables[i].len);
        if (memcmp(tables[i].tag, "head", 4) == 0 && tables[i].len >= 12) {
            head = out + at;
            put32(head + 8, 0); /* checkSumAdjustment, set below */
        }
        memcpy(rec, tables[i].tag, 4);
        put32(rec + 4, checksum(out + at, tables[i].len));
        put32(rec + 8, (uint32_t)at);
        put32(rec + 12, tables[i].len);
        at += ((size_t)tables[i].len + 3) & ~(size_t)3;
    }
    if (head)
        put32(head + 8, 0xB1B0AFBAu - checksum(out, total));
    *out_size = total;
    return out;
}

int pdf_font_trim(const char *path, int index, char *out_path, size_t out_cap)
{
    int fd = -1, mfd = -1;
    struct stat st;
    unsigned char *file = MAP_FAILED, *trimmed = NULL;
    size_t trimmed_size = 0, done = 0;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0)
        goto fail;
    file = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (file == MAP_FAILED)
        goto fail;
    trimmed = build_trimmed(file, (size_t)st.st_size, index, &trimmed_size);
    if (!trimmed)
        goto fail;
    mfd = memfd_create("kiln-font", MFD_CLOEXEC);
    if (mfd < 0)
        goto fail;
    while (done < trimmed_size) {
        ssize_t n = write(mfd, trimmed + done, trimmed_size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto fail;
        done += (size_t)n;
    }
    snprintf(out_path, out_cap, "/proc/self/fd/%d", mfd);
    free(trimmed);
    munmap(file, (size_t)st.st_size);
    close(fd);
    return mfd;

fail:
    if (mfd >= 0)
        close(mfd);
    free(trimmed);
    if (file != MAP_FAILED)
        munmap(file, (size_t)st.st_size);
    if (fd >= 0)
        close(fd);
    return -1;
}
