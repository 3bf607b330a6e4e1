/*
 * image.c - files named by a spec (images, data files) and the PNG/JPEG
 * checks.
 *
 * A spec may come from an untrusted assistant, so a path in it must not reach
 * outside the base directory: no absolute path, no ".." component, and no
 * symbolic link anywhere on the way (a link could point anywhere). Every
 * component is opened with openat(O_NOFOLLOW) from the one before, so the
 * check and the open are the same operation and cannot race.
 *
 * An image is checked for its structure (probe_png, probe_jpeg) without
 * decoding its pixels, so a truncated or damaged file is a spec error naming
 * the image rather than a broken picture in the output.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "spec_internal.h"
#include "../../common/base64.h"
#include "../../common/banned.h"

int kiln_open_beneath(const char *base_dir, const char *rel, char *why, size_t why_cap,
                      int *is_input)
{
    *is_input = 0;
    if (!rel || !*rel) {
        snprintf(why, why_cap, "the path is empty");
        return -1;
    }
    if (rel[0] == '/') {
        snprintf(why, why_cap,
                 "absolute paths are refused; give a path relative to the base "
                 "directory");
        return -1;
    }
    size_t len = strlen(rel);
    if (len >= 4096) {
        snprintf(why, why_cap, "the path is too long");
        return -1;
    }
    char path[4096];
    memcpy(path, rel, len + 1);
    /* Refuse ".." before opening anything, so the answer does not depend on
     * what exists on disk. */
    for (char *seg = path, *next; seg; seg = next) {
        next = strchr(seg, '/');
        size_t n = next ? (size_t)(next - seg) : strlen(seg);
        if (n == 2 && seg[0] == '.' && seg[1] == '.') {
            snprintf(why, why_cap, "\"..\" components are refused");
            return -1;
        }
        if (next)
            next++;
    }
    if (path[len - 1] == '/') {
        snprintf(why, why_cap, "the path names a directory");
        return -1;
    }

    *is_input = 1;
    int dir = open(base_dir && *base_dir ? base_dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) {
        snprintf(why, why_cap, "cannot open the base directory: %s", strerror(errno));
        return -1;
    }
    char *seg = path;
    for (;;) {
        char *slash = strchr(seg, '/');
        if (slash)
            *slash = '\0';
        if (*seg == '\0' || strcmp(seg, ".") == 0) {
            /* "a//b" and "./a" name the same file as "a/b" and "a". */
            if (!slash) {
                snprintf(why, why_cap, "the path names a directory");
                *is_input = 0;
                goto close_dir;
            }
            seg = slash + 1;
            continue;
        }
        int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (slash ? O_DIRECTORY : O_NONBLOCK);
        int fd = openat(dir, seg, flags);
        if (fd < 0) {
            int e = errno;
            /* O_NOFOLLOW reports a final link as ELOOP; O_DIRECTORY on a link
             * to a directory reports ENOTDIR. Look before naming the cause. */
            struct stat st;
            if (fstatat(dir, seg, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
                snprintf(why, why_cap, "\"%s\" is a symbolic link, which is refused", seg);
                *is_input = 0;
            } else {
                snprintf(why, why_cap, "cannot open \"%s\": %s", seg, strerror(e));
            }
            goto close_dir;
        }
        close(dir);
        dir = fd;
        if (!slash)
            break;
        seg = slash + 1;
    }
    struct stat st;
    if (fstat(dir, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, why_cap, "not a regular file");
        goto close_dir;
    }
    /* The O_NONBLOCK only kept a FIFO from blocking the open. */
    int fl = fcntl(dir, F_GETFL);
    if (fl >= 0)
        fcntl(dir, F_SETFL, fl & ~O_NONBLOCK);
    return dir;

close_dir:
    close(dir);
    return -1;
}

int kiln_read_fd(kiln_arena *arena, int fd, uint64_t max_bytes, unsigned char **out, size_t *size,
                 char *why, size_t why_cap)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, why_cap, "%s", strerror(errno));
        return -1;
    }
    if ((uint64_t)st.st_size > max_bytes) {
        *size = (size_t)st.st_size;
        return -2;
    }
    size_t want = (size_t)st.st_size;
    unsigned char *buf = kiln_arena_alloc(arena, want ? want : 1);
    if (!buf)
        return -3;
    size_t got = 0;
    while (got < want) {
        ssize_t n = read(fd, buf + got, want - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(why, why_cap, "%s", strerror(errno));
            return -1;
        }
        if (n == 0)
            break; /* the file shrank: take what is there */
        got += (size_t)n;
    }
    *out = buf;
    *size = got;
    return 0;
}

int kiln_base64_decode(kiln_arena *arena, const char *in, size_t len, uint64_t max_bytes,
                       unsigned char **out, size_t *out_len, char *why, size_t why_cap)
{
    size_t upper = len / 4 * 3 + 3;
    if ((uint64_t)(len / 4 * 3) > max_bytes + 3) {
        *out_len = len / 4 * 3;
        return -2;
    }
    unsigned char *buf = kiln_arena_alloc(arena, upper);
    if (!buf)
        return -3;
    size_t n = 0, bad_at = 0;
    int rc = kiln_base64_decode_into(in, len, buf, &n, &bad_at);
    if (rc == -1) {
        snprintf(why, why_cap, "not valid base64 (character %zu)", bad_at + 1);
        return -1;
    }
    if (rc == -2) {
        snprintf(why, why_cap, "not valid base64 (truncated)");
        return -1;
    }
    if (n > max_bytes) {
        *out_len = n;
        return -2;
    }
    *out = buf;
    *out_len = n;
    return 0;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t be16(const unsigned char *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

static int is_chunk_type(const unsigned char *type)
{
    for (int i = 0; i < 4; i++)
        if (!((type[i] >= 'A' && type[i] <= 'Z') || (type[i] >= 'a' && type[i] <= 'z')))
            return 0;
    return 1;
}

/* The bit depths PNG allows for a colour type (PNG spec 11.2.2, table 11.1). */
static int png_depth_allowed(unsigned color_type, unsigned depth)
{
    switch (color_type) {
    case 0:
        return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
    case 3:
        return depth == 1 || depth == 2 || depth == 4 || depth == 8;
    case 2:
    case 4:
    case 6:
        return depth == 8 || depth == 16;
    default:
        return 0;
    }
}

/*
 * A PNG's structure, without decoding the pixels: a file that passes draws
 * in Word and LibreOffice instead of showing a broken-picture box. The chunks
 * are walked from the signature to IEND: each one fits in the file and has a
 * correct CRC, IHDR comes first with a valid size and pixel format, a palette
 * image has its PLTE before the data, and at least one IDAT holds the data.
 * Bytes after IEND are ignored, as every decoder does. pHYs (before the first
 * IDAT) gives the resolution.
 */
static int probe_png(const unsigned char *d, size_t size, kiln_image *img, char *why,
                     size_t why_cap)
{
    if (size < 33 || be32(d + 8) != 13 || memcmp(d + 12, "IHDR", 4) != 0) {
        snprintf(why, why_cap, "a PNG signature without a valid IHDR header");
        return -1;
    }
    const unsigned char *ihdr = d + 16;
    img->width_px = be32(ihdr);
    img->height_px = be32(ihdr + 4);
    if (!img->width_px || !img->height_px || img->width_px > 0x7FFFFFFF ||
        img->height_px > 0x7FFFFFFF) {
        snprintf(why, why_cap, "a PNG with an invalid size %ux%u", img->width_px, img->height_px);
        return -1;
    }
    unsigned depth = ihdr[8], color_type = ihdr[9];
    if (!png_depth_allowed(color_type, depth) || ihdr[10] != 0 || ihdr[11] != 0 || ihdr[12] > 1) {
        snprintf(why, why_cap, "a PNG with an invalid pixel format in its IHDR header");
        return -1;
    }
    int seen_plte = 0, seen_idat = 0, seen_phys = 0;
    size_t pos = 8;
    for (;;) {
        if (size - pos < 12) {
            if (size == pos)
                snprintf(why, why_cap,
                         seen_idat ? "PNG has no end chunk (IEND): truncated"
                                   : "PNG has no image data (IDAT)");
            else
                snprintf(why, why_cap, "truncated PNG chunk at byte %zu", pos);
            return -1;
        }
        uint32_t clen = be32(d + pos);
        const unsigned char *type = d + pos + 4;
        if (!is_chunk_type(type) || clen > 0x7FFFFFFF) {
            snprintf(why, why_cap, "a damaged PNG chunk at byte %zu", pos);
            return -1;
        }
        if (clen > size - pos - 12) {
            snprintf(why, why_cap,
                     "truncated PNG chunk %.4s at byte %zu (%u bytes declared, "
                     "%zu present)",
                     (const char *)type, pos, clen, size - pos - 12);
            return -1;
        }
        const unsigned char *body = d + pos + 8;
        /* The CRC covers the type and the data. */
        uLong crc = crc32(0L, type, (uInt)clen + 4);
        if ((uint32_t)crc != be32(body + clen)) {
            snprintf(why, why_cap, "PNG chunk %.4s at byte %zu has a wrong CRC (damaged file)",
                     (const char *)type, pos);
            return -1;
        }
        if (pos > 8 && memcmp(type, "IHDR", 4) == 0) {
            snprintf(why, why_cap, "a PNG with a second IHDR chunk at byte %zu", pos);
            return -1;
        }
        if (memcmp(type, "PLTE", 4) == 0) {
            seen_plte = 1;
        } else if (memcmp(type, "IDAT", 4) == 0) {
            if (color_type == 3 && !seen_plte) {
                snprintf(why, why_cap,
                         "a palette PNG without a palette (PLTE) before its "
                         "image data");
                return -1;
            }
            seen_idat = 1;
        } else if (memcmp(type, "IEND", 4) == 0) {
            if (!seen_idat) {
                snprintf(why, why_cap, "PNG has no image data (IDAT)");
                return -1;
            }
            return 0;
        } else if (memcmp(type, "pHYs", 4) == 0 && !seen_idat && !seen_phys && clen >= 9) {
            seen_phys = 1;
            if (body[8] == 1) { /* unit: metre */
                img->dpi_x = be32(body) * 0.0254;
                img->dpi_y = be32(body + 4) * 0.0254;
            }
        }
        pos += 12 + (size_t)clen;
    }
}

/* A JPEG marker that stands alone, without a length: TEM, RST0..RST7, SOI. */
static int jpeg_marker_standalone(unsigned char marker)
{
    return marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8);
}

/*
 * Offset of the marker that ends the entropy-coded data starting at pos (a
 * 0xFF not followed by a stuffed 0x00 or a restart marker), or size when the
 * data runs to the end of the file.
 */
static size_t jpeg_skip_scan(const unsigned char *d, size_t size, size_t pos)
{
    while (pos + 1 < size) {
        if (d[pos] != 0xFF) {
            pos++;
            continue;
        }
        unsigned char next = d[pos + 1];
        if (next == 0x00 || (next >= 0xD0 && next <= 0xD7))
            pos += 2;
        else if (next == 0xFF)
            pos++; /* fill byte before a marker */
        else
            return pos;
    }
    return size;
}

/*
 * A JPEG's structure, without decoding: the marker segments are walked from
 * SOI, each one fits in the file, a frame header (SOF) gives a size, a scan
 * (SOS) follows it, and the data ends with EOI. Bytes after EOI are accepted:
 * many cameras and editors append data there. The JFIF header (APP0) gives
 * the resolution.
 */
static int probe_jpeg(const unsigned char *d, size_t size, kiln_image *img, char *why,
                      size_t why_cap)
{
    int seen_sof = 0, seen_sos = 0;
    size_t pos = 2;
    for (;;) {
        if (pos >= size || (pos + 1 == size && d[pos] == 0xFF)) {
            if (!seen_sof)
                snprintf(why, why_cap, "a JPEG without a frame header (SOF)");
            else if (!seen_sos)
                snprintf(why, why_cap, "JPEG has no image data (SOS)");
            else
                snprintf(why, why_cap, "JPEG has no end-of-image marker (EOI): truncated");
            return -1;
        }
        if (d[pos] != 0xFF) {
            snprintf(why, why_cap, "a JPEG with a damaged header (byte %zu)", pos);
            return -1;
        }
        unsigned char marker = d[pos + 1];
        if (marker == 0xFF) { /* fill byte */
            pos++;
            continue;
        }
        if (jpeg_marker_standalone(marker)) {
            pos += 2;
            continue;
        }
        if (marker == 0xD9) { /* EOI */
            if (!seen_sos) {
                snprintf(why, why_cap,
                         seen_sof ? "JPEG has no image data (SOS)"
                                  : "a JPEG without a frame header (SOF)");
                return -1;
            }
            return 0;
        }
        if (size - pos < 4) {
            snprintf(why, why_cap, "truncated JPEG segment at byte %zu", pos);
            return -1;
        }
        uint32_t seglen = be16(d + pos + 2);
        if (seglen < 2) {
            snprintf(why, why_cap, "a JPEG with a damaged segment length (byte %zu)", pos);
            return -1;
        }
        if (seglen > size - pos - 2) {
            snprintf(why, why_cap,
                     "truncated JPEG segment at byte %zu (%u bytes declared, "
                     "%zu present)",
                     pos, seglen, size - pos - 2);
            return -1;
        }
        const unsigned char *s = d + pos + 4;
        if (marker == 0xE0 && seglen >= 16 && memcmp(s, "JFIF\0", 5) == 0) {
            unsigned units = s[7];
            double xd = be16(s + 8), yd = be16(s + 10);
            if (units == 1) {
                img->dpi_x = xd;
                img->dpi_y = yd;
            } else if (units == 2) {
                img->dpi_x = xd * 2.54;
                img->dpi_y = yd * 2.54;
            }
        }
        /* SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC). */
        if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 &&
            marker != 0xCC) {
            if (seglen < 8) {
                snprintf(why, why_cap, "a JPEG with a damaged frame header (SOF)");
                return -1;
            }
            if (!seen_sof) {
                img->height_px = be16(s + 1);
                img->width_px = be16(s + 3);
                if (!img->width_px || !img->height_px) {
                    snprintf(why, why_cap, "a JPEG with an invalid size %ux%u", img->width_px,
                             img->height_px);
                    return -1;
                }
            }
            seen_sof = 1;
        }
        pos += 2 + seglen;
        if (marker == 0xDA) { /* SOS: the entropy-coded data follows its header */
            if (!seen_sof) {
                snprintf(why, why_cap,
                         "a JPEG without a frame header (SOF) before its "
                         "image data");
                return -1;
            }
            seen_sos = 1;
            pos = jpeg_skip_scan(d, size, pos);
        }
    }
}

int kiln_image_probe(const unsigned char *data, size_t size, kiln_image *img, char *why,
                     size_t why_cap)
{
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    img->dpi_x = img->dpi_y = 0;
    img->width_px = img->height_px = 0;
    if (size >= 8 && memcmp(data, png_sig, 8) == 0) {
        img->format = KILN_IMAGE_PNG;
        return probe_png(data, size, img, why, why_cap);
    }
    if (size >= 4 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
        img->format = KILN_IMAGE_JPEG;
        return probe_jpeg(data, size, img, why, why_cap);
    }
    snprintf(why, why_cap, "neither a PNG nor a JPEG image (by its content)");
    return -1;
}
