/*
 * parse_image.c - an image object of the spec (kiln_parse_image), as a
 * sheet, an image block and a slide place it: a file by path (beneath the
 * base directory) or base64 data, checked to be the PNG or JPEG it claims
 * (image.c), within the image limits.
 */
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "spec_internal.h"
#include "../../common/banned.h"

kiln_image *kiln_parse_image(kiln_pctx *c, const json_t *v)
{
    static const char *const allowed[] = {"path", "data", "alt", "format", NULL};
    static const char *const formats[] = {"png", "jpeg", "jpg", NULL};
    if (!json_is_object(v)) {
        kiln_perr(c, NULL, "expected an image {\"path\": ...} or {\"data\": \"<base64>\"}");
        return NULL;
    }
    if (kiln_check_members(c, v, allowed))
        return NULL;
    const json_t *path = json_object_get(v, "path");
    const json_t *data = json_object_get(v, "data");
    if (!!path + !!data != 1) {
        kiln_perr(c, NULL, "an image needs exactly one of \"path\" and \"data\"");
        return NULL;
    }
    int fmt = -1;
    if (kiln_get_enum(c, v, "format", formats, &fmt) != 0)
        return NULL;
    kiln_image *img = kiln_arena_alloc(c->arena, sizeof *img);
    if (!img) {
        kiln_pnomem(c);
        return NULL;
    }
    img->alt = "";
    kiln_get_string(c, v, "alt", &img->alt);
    if (++c->image_count > c->lim.images) {
        kiln_perr_limit(c, NULL, c->lim.images, c->image_count,
                        "more than %u images in one document", (unsigned)c->lim.images);
        return NULL;
    }
    unsigned char *bytes = NULL;
    size_t size = 0;
    char why[300];
    const char *member = path ? "path" : "data";
    int rc;
    if (path) {
        if (!json_is_string(path)) {
            kiln_perr(c, "path", "expected a string");
            return NULL;
        }
        const char *p = json_string_value(path);
        int is_input;
        int fd = kiln_open_beneath(c->base_dir, p, why, sizeof why, &is_input);
        if (fd < 0) {
            kiln_perr_code(c, is_input ? KILN_E_INPUT : KILN_E_INVALID_SPEC, "path", "%s: %s", p,
                           why);
            return NULL;
        }
        rc = kiln_read_fd(c->arena, fd, c->lim.image_bytes, &bytes, &size, why, sizeof why);
        close(fd);
        if (rc == -1) {
            kiln_perr_code(c, KILN_E_INPUT, "path", "%s: %s", p, why);
            return NULL;
        }
        const char *slash = strrchr(p, '/');
        img->name = kiln_arena_strdup(c->arena, slash ? slash + 1 : p);
        if (!img->name) {
            kiln_pnomem(c);
            return NULL;
        }
    } else {
        if (!json_is_string(data)) {
            kiln_perr(c, "data", "expected a base64 string");
            return NULL;
        }
        if (strncasecmp(json_string_value(data), "data:", 5) == 0) {
            kiln_perr(c, "data", "expected the base64 alone, without a \"data:\" URL prefix");
            return NULL;
        }
        rc = kiln_base64_decode(c->arena, json_string_value(data), json_string_length(data),
                                c->lim.image_bytes, &bytes, &size, why, sizeof why);
        if (rc == -1) {
            kiln_perr(c, "data", "%s", why);
            return NULL;
        }
    }
    if (rc == -3) {
        kiln_pnomem(c);
        return NULL;
    }
    if (rc == -2) {
        kiln_perr_limit(c, member, c->lim.image_bytes, size,
                        "an image of %zu bytes, more than the %llu allowed", size,
                        (unsigned long long)c->lim.image_bytes);
        return NULL;
    }
    c->image_total += size;
    if (c->image_total > c->lim.images_bytes) {
        kiln_perr_limit(c, member, c->lim.images_bytes, c->image_total,
                        "the images together pass %llu bytes",
                        (unsigned long long)c->lim.images_bytes);
        return NULL;
    }
    if (kiln_image_probe(bytes, size, img, why, sizeof why) != 0) {
        kiln_perr(c, member, "%s", why);
        return NULL;
    }
    if (fmt >= 0 && (fmt == 0) != (img->format == KILN_IMAGE_PNG)) {
        kiln_perr(c, "format", "declared \"%s\" but the content is a %s image",
                  fmt == 0   ? "png"
                  : fmt == 1 ? "jpeg"
                             : "jpg",
                  img->format == KILN_IMAGE_PNG ? "PNG" : "JPEG");
        return NULL;
    }
    img->data = bytes;
    img->size = size;
    if (!img->name) {
        img->name = kiln_arena_printf(c->arena, "image%u.%s", (unsigned)c->image_count,
                                      img->format == KILN_IMAGE_PNG ? "png" : "jpg");
        if (!img->name) {
            kiln_pnomem(c);
            return NULL;
        }
    }
    return img;
}
