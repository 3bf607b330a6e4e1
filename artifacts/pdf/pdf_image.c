/*
 * pdf_image.c - PNG and JPEG images as PDF image XObjects, each kiln_image
 * loaded once per document and reused wherever it is drawn again.
 *
 * libharu's own loaders are not used, for these reasons (libharu 2.3.0):
 *
 *   PNG   HPDF_LoadPngImage* decodes the pixels and holds them uncompressed
 *         until the document is saved, and writes an alpha channel as an
 *         UNCOMPRESSED soft mask: 2 MB of a 2.8 MB report in a measurement.
 *   JPEG  HPDF_LoadJpegImage* finds the frame header with a parser that
 *         loses its way at fill bytes and stand-alone markers, accepts
 *         codings PDF readers cannot decode (SOF9: arithmetic) and gives
 *         every four-component JPEG an inverting /Decode, right for Adobe
 *         CMYK files (which store the ink inverted) but wrong for others.
 *
 * So the XObject dictionaries are built here with libharu's object API, the
 * same calls hpdf_image.c makes:
 *
 *   JPEG  the file itself, /DCTDecode (what every PDF writer does).
 *   PNG   a zlib stream of PNG-filtered rows, which PDF reads directly with
 *         /FlateDecode and /DecodeParms << /Predictor 15 ... >>. A
 *         non-interlaced PNG without transparency in 1-8 bit gray, 8-bit
 *         RGB or a palette IS such a stream: its IDAT data is copied as it
 *         is (as ReportLab does), after inflating it once to check it.
 *         Anything else (alpha, tRNS, 16 bits, interlacing) is decoded with
 *         libpng's simplified API, flattened onto white, filtered the way
 *         PNG encoders do and deflated here.
 *
 * Either way the stream libharu holds until the save is already
 * compressed, so many large images do not mean gigabytes of raw pixels in
 * memory. libharu decides what to do with a stream from one field, the
 * dictionary's `filter` (hpdf_dict.c, HPDF_Dict_Write): it writes the /Filter
 * names from it and deflates the data when it includes FLATE_DECODE, so
 * "already compressed, write /FlateDecode" cannot be said with it directly.
 * The image's /DecodeParms dictionary is written after /Filter and before the
 * stream data, and its before-write hook clears the image's FLATE bit at that
 * moment; the image's after-write hook sets it again, so a second save writes
 * the same bytes. See keep_compressed().
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>
#include <zlib.h>

#include <hpdf_doc.h>
#include <hpdf_objects.h>

#include "pdf_internal.h"
#include "../../common/banned.h"

/* The most pixels one image may have (docs/spec.md "Limits"). A PNG of a few
 * kilobytes can declare a billion pixels; decoding it here (or in the
 * reader) would take gigabytes. 50 million pixels covers a 50-megapixel
 * photo and a full-page scan at 600 dpi (about 35 million). */
#define PDF_MAX_IMAGE_PIXELS (50u * 1000 * 1000)

#define DEFAULT_DPI 96.0
#define PT_PER_INCH 72.0

/* One loaded image; a list from ctx->arena, so nothing needs freeing (the
 * XObjects belong to the libharu document). */
struct pdf_image_cache {
    const kiln_image *image;
    HPDF_Image xobject;
    struct pdf_image_cache *next;
};

/* ------------------------------------------------------------------ fitting */

void pdf_image_fit(const kiln_image *image, double width_pt, double max_w, double max_h,
                   double *w, double *h)
{
    /* The natural size in points; the aspect ratio is taken from it, so an
     * image with different horizontal and vertical dpi keeps its shape (the
     * same rule as the docx writer). */
    double dpi_x = image->dpi_x > 0 ? image->dpi_x : DEFAULT_DPI;
    double dpi_y = image->dpi_y > 0 ? image->dpi_y : DEFAULT_DPI;
    double nw = (image->width_px ? image->width_px : 1) / dpi_x * PT_PER_INCH;
    double nh = (image->height_px ? image->height_px : 1) / dpi_y * PT_PER_INCH;
    if (width_pt > 0) {
        nh *= width_pt / nw;
        nw = width_pt;
    }
    /* Scaled down, never up; a bound <= 0 does not bound. */
    if (max_w > 0 && nw > max_w) {
        nh *= max_w / nw;
        nw = max_w;
    }
    if (max_h > 0 && nh > max_h) {
        nw *= max_h / nh;
        nh = max_h;
    }
    *w = nw;
    *h = nh;
}

/* ------------------------------------------------------------------ helpers */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t be16(const unsigned char *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

static const char *image_name(const kiln_image *image)
{
    return image->name && *image->name ? image->name : "image";
}

static kiln_status no_memory(pdf_ctx *ctx, const kiln_image *image)
{
    return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory loading image %s",
                          image_name(image));
}

/* A libharu failure while building an XObject: libharu only fails here when
 * an allocation does (or the document is already in error). */
static kiln_status haru_failed(pdf_ctx *ctx, const kiln_image *image)
{
    return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL,
                          "cannot add image %s to the PDF (libharu error %#lx)",
                          image_name(image), (unsigned long)HPDF_GetError(ctx->pdf));
}

/* A new image XObject with its stream; NULL when libharu fails. The calls
 * are the ones HPDF_Image_LoadRawImage makes (hpdf_image.c). Once created it
 * belongs to the document (its cross-reference table), also on failure. */
static HPDF_Dict xobject_new(pdf_ctx *ctx, uint32_t width, uint32_t height, unsigned bits)
{
    HPDF_Dict img = HPDF_DictStream_New(ctx->pdf->mmgr, ctx->pdf->xref);
    if (!img)
        return NULL;
    img->header.obj_class |= HPDF_OSUBCLASS_XOBJECT;
    HPDF_STATUS st = HPDF_Dict_AddName(img, "Type", "XObject");
    st |= HPDF_Dict_AddName(img, "Subtype", "Image");
    st |= HPDF_Dict_AddNumber(img, "Width", (HPDF_INT32)width);
    st |= HPDF_Dict_AddNumber(img, "Height", (HPDF_INT32)height);
    st |= HPDF_Dict_AddNumber(img, "BitsPerComponent", (HPDF_INT32)bits);
    return st == HPDF_OK ? img : NULL;
}

/* /DecodeParms [parms]: an array, as /Filter is one (libharu writes it so). */
static HPDF_STATUS add_decode_parms(HPDF_Dict img, HPDF_Dict parms)
{
    HPDF_Array arr = HPDF_Array_New(img->mmgr);
    if (!arr) {
        HPDF_Dict_Free(parms);
        return HPDF_FAILD_TO_ALLOC_MEM;
    }
    /* Both calls free their argument when they fail. */
    HPDF_STATUS st = HPDF_Array_Add(arr, parms);
    if (st != HPDF_OK) {
        HPDF_Array_Free(arr);
        return st;
    }
    return HPDF_Dict_Add(img, "DecodeParms", arr);
}

/* ------------------------------------------------------------------ compressed streams */

/* Hooks around libharu's HPDF_Dict_Write (see the top of the file). The
 * /DecodeParms dictionary's attr points at its image. */
static HPDF_STATUS parms_before_write(HPDF_Dict parms)
{
    HPDF_Dict img = parms->attr;
    /* /Filter [/FlateDecode] is already written: now have the data copied
     * as it is rather than deflated a second time. */
    img->filter = HPDF_STREAM_FILTER_NONE;
    return HPDF_OK;
}

static HPDF_STATUS image_after_write(HPDF_Dict img)
{
    img->filter = HPDF_STREAM_FILTER_FLATE_DECODE;
    return HPDF_OK;
}

/* Give img /Filter [/FlateDecode] /DecodeParms [<< /Predictor 15 ... >>] for
 * a stream the caller fills with zlib data of PNG-filtered rows. */
static HPDF_STATUS keep_compressed(HPDF_Dict img, unsigned colors, unsigned bits,
                                   uint32_t columns)
{
    HPDF_Dict parms = HPDF_Dict_New(img->mmgr);
    if (!parms)
        return HPDF_FAILD_TO_ALLOC_MEM;
    HPDF_STATUS st = HPDF_Dict_AddNumber(parms, "Predictor", 15);
    st |= HPDF_Dict_AddNumber(parms, "Colors", (HPDF_INT32)colors);
    st |= HPDF_Dict_AddNumber(parms, "BitsPerComponent", (HPDF_INT32)bits);
    st |= HPDF_Dict_AddNumber(parms, "Columns", (HPDF_INT32)columns);
    if (st != HPDF_OK) {
        HPDF_Dict_Free(parms);
        return HPDF_FAILD_TO_ALLOC_MEM;
    }
    parms->attr = img; /* HPDF_Dict_Free leaves attr alone */
    parms->before_write_fn = parms_before_write;
    img->after_write_fn = image_after_write;
    img->filter = HPDF_STREAM_FILTER_FLATE_DECODE;
    return add_decode_parms(img, parms);
}

static int too_many_pixels(pdf_ctx *ctx, const kiln_image *image, uint32_t w, uint32_t h)
{
    uint64_t pixels = (uint64_t)w * h;
    if (pixels <= PDF_MAX_IMAGE_PIXELS)
        return 0;
    kiln_error_limit(ctx->err, KILN_E_LIMIT, NULL, PDF_MAX_IMAGE_PIXELS, pixels,
                     "image %s has %ux%u pixels, more than the %u million allowed",
                     image_name(image), w, h, PDF_MAX_IMAGE_PIXELS / 1000000);
    return 1;
}

/* ------------------------------------------------------------------ JPEG */

typedef struct jpeg_info {
    unsigned sof;       /* the frame header's marker (0xC0..0xCF) */
    unsigned precision; /* bits per sample */
    unsigned components;
    int adobe;                /* an Adobe APP14 segment is present */
    unsigned adobe_transform; /* its colour transform: 0 none, 1 YCbCr, 2 YCCK */
} jpeg_info;

/* The frame header and the Adobe segment, walking the segments before the
 * first scan (image.c has checked the structure: each segment fits). */
static int jpeg_read_info(const unsigned char *d, size_t size, jpeg_info *info)
{
    memset(info, 0, sizeof *info);
    size_t pos = 2;
    while (pos + 4 <= size) {
        if (d[pos] != 0xFF)
            return -1;
        unsigned marker = d[pos + 1];
        if (marker == 0xFF) { /* fill byte */
            pos++;
            continue;
        }
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) { /* no length */
            pos += 2;
            continue;
        }
        size_t seglen = be16(d + pos + 2);
        if (seglen < 2 || seglen > size - pos - 2)
            return -1;
        const unsigned char *s = d + pos + 4;
        if (marker == 0xEE && seglen >= 14 && memcmp(s, "Adobe", 5) == 0) {
            info->adobe = 1;
            info->adobe_transform = s[11];
        } else if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 &&
                   marker != 0xCC && !info->sof) {
            if (seglen < 8)
                return -1;
            info->sof = marker;
            info->precision = s[0];
            info->components = s[5];
        } else if (marker == 0xDA || marker == 0xD9) {
            break;
        }
        pos += 2 + seglen;
    }
    return info->sof ? 0 : -1;
}

static kiln_status load_jpeg(pdf_ctx *ctx, const kiln_image *image, HPDF_Image *out)
{
    jpeg_info info;
    if (jpeg_read_info(image->data, image->size, &info) != 0)
        return kiln_error_set(ctx->err, KILN_E_INPUT, NULL,
                              "image %s is a JPEG without a readable frame header",
                              image_name(image));
    /* PDF's DCTDecode reads baseline, extended and progressive Huffman JPEGs
     * with 8-bit samples; lossless, hierarchical and arithmetic-coded ones
     * draw as nothing or an error in most readers. */
    if (info.sof > 0xC2 || info.precision != 8)
        return kiln_error_set(ctx->err, KILN_E_INPUT, NULL,
                              "image %s uses a JPEG coding PDF readers do not support "
                              "(frame type %#x, %u-bit samples); save it as a baseline or "
                              "progressive 8-bit JPEG",
                              image_name(image), info.sof, info.precision);
    const char *space;
    switch (info.components) {
    case 1:
        space = "DeviceGray";
        break;
    case 3:
        space = "DeviceRGB";
        break;
    case 4:
        space = "DeviceCMYK";
        break;
    default:
        return kiln_error_set(ctx->err, KILN_E_INPUT, NULL,
                              "image %s is a JPEG with %u colour components (1, 3 or 4 "
                              "are supported)",
                              image_name(image), info.components);
    }
    if (too_many_pixels(ctx, image, image->width_px, image->height_px))
        return KILN_E_LIMIT;
    if (image->size > UINT_MAX)
        return kiln_error_set(ctx->err, KILN_E_INPUT, NULL, "image %s is too large",
                              image_name(image));

    HPDF_Dict img = xobject_new(ctx, image->width_px, image->height_px, 8);
    if (!img)
        return haru_failed(ctx, image);
    HPDF_STATUS st = HPDF_Dict_AddName(img, "ColorSpace", space);
    /* Adobe (Photoshop) CMYK JPEGs hold the ink inverted, and libjpeg writes
     * its CMYK files the same way (always with the Adobe segment); a
     * four-component file without that segment holds it as is. */
    if (info.components == 4 && info.adobe) {
        HPDF_Array decode = HPDF_Array_New(img->mmgr);
        for (int i = 0; decode && i < 8; i++)
            st |= HPDF_Array_AddNumber(decode, i % 2 ? 0 : 1);
        st |= HPDF_Dict_Add(img, "Decode", decode);
    }
    /* DCTDecode's default colour transform is "YCbCr for three components,
     * none otherwise"; where the Adobe segment says otherwise (an RGB JPEG,
     * a YCCK one) say so too, for readers that follow the PDF default only. */
    int transform = -1;
    if (info.adobe && info.components == 3 && info.adobe_transform == 0)
        transform = 0;
    else if (info.adobe && info.components == 4 && info.adobe_transform == 2)
        transform = 1;
    if (transform >= 0 && st == HPDF_OK) {
        HPDF_Dict parms = HPDF_Dict_New(img->mmgr);
        if (!parms)
            st |= HPDF_FAILD_TO_ALLOC_MEM;
        else if (HPDF_Dict_AddNumber(parms, "ColorTransform", transform) != HPDF_OK) {
            HPDF_Dict_Free(parms);
            st |= HPDF_FAILD_TO_ALLOC_MEM;
        } else {
            st |= add_decode_parms(img, parms);
        }
    }
    img->filter = HPDF_STREAM_FILTER_DCT_DECODE;
    if (st == HPDF_OK)
        st = HPDF_Stream_Write(img->stream, image->data, (HPDF_UINT)image->size);
    if (st != HPDF_OK)
        return haru_failed(ctx, image);
    *out = img;
    return KILN_E_OK;
}

/* ------------------------------------------------------------------ PNG, copied */

typedef struct png_header {
    uint32_t width, height;
    unsigned depth, color_type, interlace;
    const unsigned char *plte;
    size_t plte_len;
    int trns;
} png_header;

/* IHDR, PLTE and whether there is a tRNS (image.c has checked the chunks). */
static void png_read_header(const unsigned char *d, size_t size, png_header *info)
{
    memset(info, 0, sizeof *info);
    info->width = be32(d + 16);
    info->height = be32(d + 20);
    info->depth = d[24];
    info->color_type = d[25];
    info->interlace = d[28];
    for (size_t pos = 8; size - pos >= 12;) {
        size_t len = be32(d + pos);
        const unsigned char *type = d + pos + 4;
        if (len > size - pos - 12 || memcmp(type, "IEND", 4) == 0)
            break;
        if (memcmp(type, "PLTE", 4) == 0) {
            info->plte = d + pos + 8;
            info->plte_len = len;
        } else if (memcmp(type, "tRNS", 4) == 0) {
            info->trns = 1;
        }
        pos += 12 + len;
    }
}

/* Samples per pixel of the PNG colour types that can be copied. */
static unsigned png_copy_colors(const png_header *info)
{
    if (info->interlace != 0 || info->trns)
        return 0;
    if (info->color_type == 0 && info->depth <= 8)
        return 1;
    if (info->color_type == 2 && info->depth == 8)
        return 3;
    /* A palette of 1..256 whole entries (PNG requires it; else let libpng
     * say what is wrong). */
    if (info->color_type == 3 && info->plte_len >= 3 && info->plte_len <= 768 &&
        info->plte_len % 3 == 0)
        return 1;
    return 0;
}

/*
 * Inflate the IDAT data once, discarding it, to check that it is a complete
 * zlib stream of exactly `height` rows each starting with a valid PNG filter
 * type: a damaged stream is an error naming the image rather than a broken
 * picture in every reader. Returns 0, -1 with why filled, or -2 when zlib
 * has no memory.
 */
static int png_check_idat(const unsigned char *d, size_t size, size_t row_bytes, uint32_t height,
                          const char **why)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK)
        return -2;
    unsigned char buf[16384];
    uint64_t want = (uint64_t)height * (row_bytes + 1), got = 0;
    uint64_t next_row = 0; /* offset of the next row's filter byte */
    int ret = Z_OK;
    *why = NULL;
    for (size_t pos = 8; size - pos >= 12 && ret != Z_STREAM_END && !*why;) {
        size_t len = be32(d + pos);
        const unsigned char *type = d + pos + 4;
        if (memcmp(type, "IEND", 4) == 0)
            break;
        if (memcmp(type, "IDAT", 4) == 0) {
            zs.next_in = (unsigned char *)(d + pos + 8);
            zs.avail_in = (uInt)len;
            /* Until the chunk is used up and inflate has nothing more to give
             * (a full output buffer may leave some behind). */
            do {
                zs.next_out = buf;
                zs.avail_out = sizeof buf;
                ret = inflate(&zs, Z_NO_FLUSH);
                if (ret == Z_BUF_ERROR) { /* no progress: wants the next chunk */
                    ret = Z_OK;
                    break;
                }
                if (ret != Z_OK && ret != Z_STREAM_END) {
                    *why = "corrupt compressed data";
                    break;
                }
                size_t n = sizeof buf - zs.avail_out;
                for (; next_row < got + n && next_row < want; next_row += row_bytes + 1) {
                    if (buf[next_row - got] > 4) {
                        *why = "an unknown row filter type";
                        break;
                    }
                }
                got += n;
                if (*why)
                    break;
                if (got > want) {
                    *why = "more pixel data than its size";
                    break;
                }
            } while (ret != Z_STREAM_END && (zs.avail_in > 0 || zs.avail_out == 0));
        }
        pos += 12 + len;
    }
    inflateEnd(&zs);
    if (!*why && (ret != Z_STREAM_END || got != want))
        *why = "truncated pixel data";
    return *why ? -1 : 0;
}

static kiln_status load_png_copy(pdf_ctx *ctx, const kiln_image *image, const png_header *info,
                                 unsigned colors, HPDF_Image *out)
{
    size_t row_bytes = ((size_t)info->width * colors * info->depth + 7) / 8;
    const char *why;
    int checked = png_check_idat(image->data, image->size, row_bytes, info->height, &why);
    if (checked == -2)
        return no_memory(ctx, image);
    if (checked != 0)
        return kiln_error_set(ctx->err, KILN_E_INPUT, NULL, "image %s is a damaged PNG (%s)",
                              image_name(image), why);

    HPDF_Dict img = xobject_new(ctx, info->width, info->height, info->depth);
    if (!img)
        return haru_failed(ctx, image);
    HPDF_STATUS st = HPDF_OK;
    if (info->color_type == 3) {
        /* [/Indexed /DeviceRGB hival <palette>] */
        HPDF_Array space = HPDF_Array_New(img->mmgr);
        if (space) {
            st |= HPDF_Array_AddName(space, "Indexed");
            st |= HPDF_Array_AddName(space, "DeviceRGB");
            st |= HPDF_Array_AddNumber(space, (HPDF_INT32)(info->plte_len / 3 - 1));
            st |= HPDF_Array_Add(space, HPDF_Binary_New(img->mmgr, (HPDF_BYTE *)info->plte,
                                                        (HPDF_UINT)info->plte_len));
        }
        st |= HPDF_Dict_Add(img, "ColorSpace", space);
    } else {
        st |= HPDF_Dict_AddName(img, "ColorSpace", colors == 1 ? "DeviceGray" : "DeviceRGB");
    }
    if (st == HPDF_OK)
        st = keep_compressed(img, colors, info->depth, info->width);
    /* The IDAT chunks' data, concatenated, is the zlib stream. */
    const unsigned char *d = image->data;
    for (size_t pos = 8; st == HPDF_OK && image->size - pos >= 12;) {
        size_t len = be32(d + pos);
        if (memcmp(d + pos + 4, "IEND", 4) == 0)
            break;
        if (memcmp(d + pos + 4, "IDAT", 4) == 0 && len > 0)
            st = HPDF_Stream_Write(img->stream, d + pos + 8, (HPDF_UINT)len);
        pos += 12 + len;
    }
    if (st != HPDF_OK)
        return haru_failed(ctx, image);
    *out = img;
    return KILN_E_OK;
}

/* ------------------------------------------------------------------ PNG, decoded */

static unsigned paeth(unsigned a, unsigned b, unsigned c)
{
    int p = (int)a + (int)b - (int)c;
    int pa = abs(p - (int)a), pb = abs(p - (int)b), pc = abs(p - (int)c);
    if (pa <= pb && pa <= pc)
        return a;
    return pb <= pc ? b : c;
}

/*
 * PNG-filter one row of n bytes (bpp bytes per pixel; prev is the row above,
 * zeros for the first) with each of the five filters and keep the one with
 * the smallest sum of absolute (signed) values, the heuristic libpng and
 * most encoders use. a and b are scratch rows of n bytes; the result is one
 * of row, a or b, its filter type in *type.
 */
static const unsigned char *filter_row(const unsigned char *row, const unsigned char *prev,
                                       size_t n, size_t bpp, unsigned char *a, unsigned char *b,
                                       unsigned char *type)
{
    const unsigned char *best = row;
    uint64_t best_sum = 0;
    for (size_t i = 0; i < n; i++)
        best_sum += row[i] < 128 ? row[i] : 256u - row[i];
    *type = 0;
    unsigned char *t = a; /* the scratch row not holding the best so far */
    for (unsigned f = 1; f <= 4; f++) {
        /* One loop per filter, not a switch per byte: this runs over every
         * byte of the image four times. */
        switch (f) {
        case 1:
            for (size_t i = 0; i < n; i++)
                t[i] = (unsigned char)(row[i] - (i >= bpp ? row[i - bpp] : 0));
            break;
        case 2:
            for (size_t i = 0; i < n; i++)
                t[i] = (unsigned char)(row[i] - prev[i]);
            break;
        case 3:
            for (size_t i = 0; i < n; i++)
                t[i] = (unsigned char)(row[i] - ((i >= bpp ? row[i - bpp] : 0) + prev[i]) / 2);
            break;
        default:
            for (size_t i = 0; i < n; i++)
                t[i] = (unsigned char)(row[i] - (i >= bpp
                                                     ? paeth(row[i - bpp], prev[i], prev[i - bpp])
                                                     : prev[i]));
            break;
        }
        uint64_t sum = 0;
        for (size_t i = 0; i < n && sum < best_sum; i++)
            sum += t[i] < 128 ? t[i] : 256u - t[i];
        if (sum < best_sum) {
            best_sum = sum;
            best = t;
            *type = (unsigned char)f;
            t = t == a ? b : a;
        }
    }
    return best;
}

/* Deflate n bytes into the image's stream (flush = Z_NO_FLUSH or Z_FINISH). */
static int deflate_to(z_stream *zs, HPDF_Stream stream, const unsigned char *in, size_t n,
                      int flush)
{
    unsigned char buf[16384];
    zs->next_in = (unsigned char *)in;
    zs->avail_in = (uInt)n;
    for (;;) {
        zs->next_out = buf;
        zs->avail_out = sizeof buf;
        int ret = deflate(zs, flush);
        if (ret == Z_STREAM_ERROR)
            return -1;
        size_t have = sizeof buf - zs->avail_out;
        if (have && HPDF_Stream_Write(stream, buf, (HPDF_UINT)have) != HPDF_OK)
            return -1;
        if (flush == Z_FINISH ? ret == Z_STREAM_END : zs->avail_out != 0)
            return 0;
    }
}

static kiln_status load_png_decoded(pdf_ctx *ctx, const kiln_image *image, HPDF_Image *out)
{
    kiln_status status = KILN_E_OK;
    unsigned char *pixels = NULL, *rows = NULL;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    png_image png;
    memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    /* The simplified API catches libpng's errors itself (its longjmp stays
     * inside libpng) and reports them in png.message. */
    if (!png_image_begin_read_from_memory(&png, image->data, image->size)) {
        status = kiln_error_set(ctx->err, KILN_E_INPUT, NULL,
                                "image %s is a PNG libpng cannot "
                                "read (%s)",
                                image_name(image), png.message);
        goto free_png;
    }
    if (too_many_pixels(ctx, image, png.width, png.height)) {
        status = KILN_E_LIMIT;
        goto free_png;
    }
    /* 16-bit files without gAMA or sRGB are taken as sRGB, as viewers take
     * them (libpng's default here is linear, which would brighten them). */
    png.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
    int color = (png.format & PNG_FORMAT_FLAG_COLOR) != 0;
    int alpha = (png.format & PNG_FORMAT_FLAG_ALPHA) != 0; /* tRNS counts */
    png.format = (color ? PNG_FORMAT_FLAG_COLOR : 0) | (alpha ? PNG_FORMAT_FLAG_ALPHA : 0);
    size_t in_px = PNG_IMAGE_PIXEL_CHANNELS(png.format);
    size_t out_px = color ? 3 : 1;
    size_t stride = (size_t)png.width * in_px, n = (size_t)png.width * out_px;
    pixels = malloc((size_t)png.height * stride);
    rows = malloc(4 * n); /* this row, the previous, two scratch rows */
    if (!pixels || !rows) {
        status = no_memory(ctx, image);
        goto free_png;
    }
    if (!png_image_finish_read(&png, NULL, pixels, (png_int_32)stride, NULL)) {
        status = kiln_error_set(ctx->err, KILN_E_INPUT, NULL,
                                "image %s is a PNG libpng cannot "
                                "read (%s)",
                                image_name(image), png.message);
        goto free_png;
    }

    HPDF_Dict img = xobject_new(ctx, png.width, png.height, 8);
    if (!img ||
        HPDF_Dict_AddName(img, "ColorSpace", color ? "DeviceRGB" : "DeviceGray") != HPDF_OK ||
        keep_compressed(img, (unsigned)out_px, 8, png.width) != HPDF_OK) {
        status = haru_failed(ctx, image);
        goto free_png;
    }
    if (deflateInit(&zs, Z_DEFAULT_COMPRESSION) != Z_OK) {
        status = no_memory(ctx, image);
        goto free_png;
    }
    unsigned char *cur = rows, *prev = rows + n, *scratch_a = prev + n,
                  *scratch_b = scratch_a + n;
    memset(prev, 0, n);
    for (uint32_t y = 0; y < png.height; y++) {
        const unsigned char *src = pixels + y * stride;
        if (alpha) {
            /* Flattened onto white, the page colour, so no soft mask is
             * needed. The blend is in sRGB values, as browsers, Word and
             * LibreOffice blend (libpng's own is in linear light and makes
             * half-transparent colours lighter than they look there). */
            for (size_t x = 0; x < png.width; x++) {
                const unsigned char *p = src + x * in_px;
                unsigned char *q = cur + x * out_px;
                unsigned a = p[in_px - 1];
                for (size_t c = 0; c < out_px; c++)
                    q[c] = a == 255 ? p[c]
                                    : (unsigned char)((p[c] * a + 255u * (255u - a) + 127) / 255);
            }
        } else {
            memcpy(cur, src, n);
        }
        unsigned char type;
        const unsigned char *filtered = filter_row(cur, prev, n, out_px, scratch_a, scratch_b,
                                                   &type);
        if (deflate_to(&zs, img->stream, &type, 1, Z_NO_FLUSH) != 0 ||
            deflate_to(&zs, img->stream, filtered, n, Z_NO_FLUSH) != 0) {
            status = haru_failed(ctx, image);
            goto end_deflate;
        }
        unsigned char *t = prev;
        prev = cur;
        cur = t;
    }
    if (deflate_to(&zs, img->stream, NULL, 0, Z_FINISH) != 0) {
        status = haru_failed(ctx, image);
        goto end_deflate;
    }
    *out = img;

end_deflate:
    deflateEnd(&zs);
free_png:
    free(rows);
    free(pixels);
    png_image_free(&png);
    return status;
}

/* ------------------------------------------------------------------ entry */

static kiln_status load_png(pdf_ctx *ctx, const kiln_image *image, HPDF_Image *out)
{
    png_header info;
    png_read_header(image->data, image->size, &info);
    if (too_many_pixels(ctx, image, info.width, info.height))
        return KILN_E_LIMIT;
    unsigned colors = png_copy_colors(&info);
    if (colors)
        return load_png_copy(ctx, image, &info, colors, out);
    return load_png_decoded(ctx, image, out);
}

kiln_status pdf_image_load(pdf_ctx *ctx, const kiln_image *image, HPDF_Image *out)
{
    /* the same file named by two blocks is two kiln_images with equal bytes:
     * stored once, as the docx writer does */
    for (struct pdf_image_cache *c = ctx->images; c; c = c->next) {
        if (c->image == image ||
            (c->image->format == image->format && c->image->size == image->size &&
             memcmp(c->image->data, image->data, image->size) == 0)) {
            *out = c->xobject;
            return KILN_E_OK;
        }
    }
    struct pdf_image_cache *entry = kiln_arena_alloc(ctx->arena, sizeof *entry);
    if (!entry)
        return no_memory(ctx, image);
    /* image.c accepted the file as a PNG or JPEG whose structure is whole;
     * what is checked here is what decoding or PDF needs beyond that. */
    if (image->size < 33)
        return kiln_error_set(ctx->err, KILN_E_INPUT, NULL, "image %s is truncated",
                              image_name(image));
    HPDF_Image xobject = NULL;
    kiln_status st = image->format == KILN_IMAGE_JPEG ? load_jpeg(ctx, image, &xobject)
                                                      : load_png(ctx, image, &xobject);
    if (st != KILN_E_OK)
        return st;
    entry->image = image;
    entry->xobject = xobject;
    entry->next = ctx->images;
    ctx->images = entry;
    *out = xobject;
    return KILN_E_OK;
}
