/*
 * image.c - files named by a spec (images, data files) and the PNG/JPEG
 * checks.
 *
 * A spec may come from an untrusted assistant, so a path in it must not reach
 * outside the base directory: no absolute path, no ".." component, and no
 * symbolic link anywhere on the way (a link could point anywhere). Every
 * component is opened with openat(O_NOFOLLOW) from the one before, so the
 * check and the open are the same operation and cannot race.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec_internal.h"

int kiln_open_beneath(const char *base_dir, const char *rel, char *why, size_t why_cap,
                      int *is_input)
{
    *is_input = 0;
    if (!rel || !*rel) {
        snprintf(why, why_cap, "the path is empty");
        return -1;
    }
    if (rel[0] == '/') {
        snprintf(why, why_cap, "absolute paths are refused; give a path relative to the base "
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

int kiln_read_fd(kiln_arena *arena, int fd, uint64_t max_bytes, unsigned char **out,
                 size_t *size, char *why, size_t why_cap)
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

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
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
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = b64val(c);
        if (v < 0 || pad) {
            snprintf(why, why_cap, "not valid base64 (character %zu)", i + 1);
            return -1;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (unsigned char)(acc >> bits);
        }
    }
    if (bits >= 6 || pad > 2) {
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

static int probe_png(const unsigned char *d, size_t size, kiln_image *img, char *why,
                     size_t why_cap)
{
    /* Signature, then IHDR must be the first chunk (PNG spec 11.2.2). */
    if (size < 33 || be32(d + 8) != 13 || memcmp(d + 12, "IHDR", 4) != 0) {
        snprintf(why, why_cap, "a PNG signature without a valid IHDR header");
        return -1;
    }
    img->width_px = be32(d + 16);
    img->height_px = be32(d + 20);
    if (!img->width_px || !img->height_px || img->width_px > 0x7FFFFFFF ||
        img->height_px > 0x7FFFFFFF) {
        snprintf(why, why_cap, "a PNG with an invalid size %ux%u", img->width_px,
                 img->height_px);
        return -1;
    }
    /* pHYs comes before the first IDAT; stop there. */
    size_t pos = 33;
    while (pos + 12 <= size) {
        uint32_t clen = be32(d + pos);
        const unsigned char *type = d + pos + 4;
        if (clen > size - pos - 12)
            break;
        if (memcmp(type, "pHYs", 4) == 0 && clen >= 9) {
            const unsigned char *c = d + pos + 8;
            if (c[8] == 1) { /* unit: metre */
                img->dpi_x = be32(c) * 0.0254;
                img->dpi_y = be32(c + 4) * 0.0254;
            }
            break;
        }
        if (memcmp(type, "IDAT", 4) == 0 || memcmp(type, "IEND", 4) == 0)
            break;
        pos += 12 + (size_t)clen;
    }
    return 0;
}

static int probe_jpeg(const unsigned char *d, size_t size, kiln_image *img, char *why,
                      size_t why_cap)
{
    size_t pos = 2;
    while (pos + 4 <= size) {
        if (d[pos] != 0xFF) {
            snprintf(why, why_cap, "a JPEG with a damaged header (byte %zu)", pos);
            return -1;
        }
        unsigned char marker = d[pos + 1];
        if (marker == 0xFF) { /* fill byte */
            pos++;
            continue;
        }
        if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {
            pos += 2;
            continue;
        }
        if (marker == 0xD9 || marker == 0xDA)
            break;
        uint32_t seglen = be16(d + pos + 2);
        if (seglen < 2 || pos + 2 + seglen > size)
            break;
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
            marker != 0xCC && seglen >= 7) {
            img->height_px = be16(s + 1);
            img->width_px = be16(s + 3);
            if (!img->width_px || !img->height_px) {
                snprintf(why, why_cap, "a JPEG with an invalid size %ux%u", img->width_px,
                         img->height_px);
                return -1;
            }
            return 0;
        }
        pos += 2 + seglen;
    }
    snprintf(why, why_cap, "a JPEG without a frame header (SOF)");
    return -1;
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
