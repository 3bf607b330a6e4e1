/*
 * opc_package.c - parts, relationships and the zip (see opc.h).
 *
 * Parts are kept in memory in the order they were added; relationships are
 * grouped by source. Nothing is zipped until opc_package_write, which first
 * checks the package as Word would (every relationship's source and
 * internal target is a part, every part has a content type), then writes
 * [Content_Types].xml and the .rels parts, and zips everything with libzip
 * into a buffer that is streamed into the size-enforced kiln_output.
 *
 * The zip is built in memory, not written straight to the output's file,
 * because libzip seeks back to fill in each entry's header, while
 * kiln_output is an append-only, byte-counting sink.
 *
 * XML parts arrive already deflated (opc_xml.c compresses them as they are
 * written). libzip 1.7.3 has no call to add compressed data, but its
 * zip_close copies an entry's data as it is when the source's stat says the
 * data is compressed with the entry's method (that is how it copies entries
 * between archives): add_data() sets needs_recompress only when the stat's
 * comp_method differs from the entry's, and needs_crc only for stored or
 * decompressed data, taking size, CRC and method from the stat. So each such
 * part is a zip_source_function source (deflated_source below) whose stat
 * says ZIP_CM_DEFLATE with the CRC and plain size, and which reports the
 * general-purpose bits libzip's own deflate would set for the level; the zip
 * comes out byte for byte as when libzip deflated the plain part itself.
 */
#include "opc.h"
#include "opc_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <zip.h>
#include <zlib.h>
#include "../../common/banned.h"

/* Bytes handed to kiln_output_write at a time. */
#define OPC_COPY_CHUNK (64 * 1024)

#define OPC_CONTENT_TYPES_PART "[Content_Types].xml"

opc_package *opc_package_new(void)
{
    return calloc(1, sizeof(opc_package));
}

void opc_package_free(opc_package *pkg)
{
    if (!pkg)
        return;
    for (size_t i = 0; i < pkg->part_count; i++) {
        free(pkg->parts[i].name);
        free(pkg->parts[i].content_type);
        free(pkg->parts[i].data);
    }
    free(pkg->parts);
    free(pkg->index);
    for (size_t i = 0; i < pkg->source_count; i++) {
        opc_rel_source *s = &pkg->sources[i];
        for (size_t j = 0; j < s->count; j++) {
            free(s->rels[j].type);
            free(s->rels[j].target);
        }
        free(s->rels);
        free(s->name);
    }
    free(pkg->sources);
    for (size_t i = 0; i < pkg->default_count; i++) {
        free(pkg->defaults[i].extension);
        free(pkg->defaults[i].content_type);
    }
    free(pkg->defaults);
    free(pkg);
}

/* Grow an array of n items (each size bytes) so one more fits. */
static int reserve_one(void **items, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 1;
    size_t new_cap = *cap ? *cap * 2 : 8;
    if (new_cap > SIZE_MAX / size)
        return 0;
    void *p = realloc(*items, new_cap * size);
    if (!p)
        return 0;
    *items = p;
    *cap = new_cap;
    return 1;
}

/* ---- the part-name index ---- */

/* FNV-1a over the lower-cased name: part names compare case-insensitively. */
static size_t name_hash(const char *name, size_t len)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)tolower((unsigned char)name[i]);
        h *= 1099511628211ull;
    }
    return (size_t)h;
}

static int name_equal(const char *a, const char *b, size_t b_len)
{
    return strncasecmp(a, b, b_len) == 0 && a[b_len] == '\0';
}

/* The index slot holding name, or the empty slot where it would go. */
static size_t index_slot(const opc_package *pkg, const char *name, size_t len)
{
    size_t mask = pkg->index_cap - 1;
    size_t slot = name_hash(name, len) & mask;
    while (pkg->index[slot] != 0 && !name_equal(pkg->parts[pkg->index[slot] - 1].name, name, len))
        slot = (slot + 1) & mask;
    return slot;
}

const opc_part *opc_part_find(const opc_package *pkg, const char *name, size_t name_len)
{
    if (pkg->index_cap == 0)
        return NULL;
    size_t slot = index_slot(pkg, name, name_len);
    return pkg->index[slot] ? &pkg->parts[pkg->index[slot] - 1] : NULL;
}

/* Make room so one more name keeps the index at most half full. */
static int index_reserve(opc_package *pkg)
{
    if ((pkg->part_count + 1) * 2 <= pkg->index_cap)
        return 1;
    size_t cap = pkg->index_cap ? pkg->index_cap * 2 : 64;
    size_t *old = pkg->index;
    size_t old_cap = pkg->index_cap;
    size_t *fresh = calloc(cap, sizeof *fresh);
    if (!fresh)
        return 0;
    pkg->index = fresh;
    pkg->index_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i]) {
            const char *name = pkg->parts[old[i] - 1].name;
            pkg->index[index_slot(pkg, name, strlen(name))] = old[i];
        }
    }
    free(old);
    return 1;
}

/* ---- parts ---- */

/*
 * A part name Kiln may write: segments of ASCII letters, digits and "-._~"
 * (URI unreserved characters, so the name needs no percent-encoding in
 * [Content_Types].xml or a relationship), separated by single slashes, no
 * segment "." or ".." or ending in a dot (OPC forbids that), no leading or
 * trailing slash. .rels parts and [Content_Types].xml are the package's own.
 */
static const char *part_name_problem(const char *name)
{
    if (!name || !*name)
        return "is empty";
    if (strcmp(name, OPC_CONTENT_TYPES_PART) == 0)
        return "is reserved for the content types";
    size_t len = strlen(name);
    if (len >= 5 && strcasecmp(name + len - 5, ".rels") == 0)
        return "is a relationships part, which the package writes itself";
    const char *seg = name;
    for (const char *p = name;; p++) {
        if (*p == '/' || *p == '\0') {
            size_t seg_len = (size_t)(p - seg);
            if (seg_len == 0)
                return "has an empty segment (leading, trailing or double slash)";
            if (seg[seg_len - 1] == '.')
                return "has a segment ending in a dot (or \".\" / \"..\")";
            if (*p == '\0')
                return NULL;
            seg = p + 1;
            continue;
        }
        unsigned char c = (unsigned char)*p;
        if (!(isalnum(c) && c < 0x80) && c != '-' && c != '.' && c != '_' && c != '~')
            return "has a character other than letters, digits, \"-._~\" and \"/\"";
    }
}

/* Add a part (see opc_part_add); data is freed on failure. */
static kiln_status part_add(opc_package *pkg, const char *name, const char *content_type,
                            void *data, size_t len, const opc_part *how, kiln_error *err)
{
    kiln_status st;
    const char *problem = part_name_problem(name);
    if (problem) {
        st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "part name \"%s\" %s", name ? name : "",
                            problem);
        goto fail_free_data;
    }
    if (opc_part_find(pkg, name, strlen(name))) {
        st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "part \"%s\" was added twice", name);
        goto fail_free_data;
    }
    if (!reserve_one((void **)&pkg->parts, &pkg->part_cap, pkg->part_count, sizeof(opc_part)) ||
        !index_reserve(pkg))
        goto fail_memory;
    opc_part *part = &pkg->parts[pkg->part_count];
    *part = *how;
    part->name = strdup(name);
    part->content_type = content_type ? strdup(content_type) : NULL;
    if (!part->name || (content_type && !part->content_type)) {
        free(part->name);
        free(part->content_type);
        goto fail_memory;
    }
    part->data = data;
    part->len = len;
    pkg->index[index_slot(pkg, name, strlen(name))] = pkg->part_count + 1;
    pkg->part_count++;
    pkg->bytes += part->plain_len;
    if (part->deflated || !part->compress)
        pkg->packed += len;
    return KILN_E_OK;

fail_memory:
    st = kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory adding part \"%s\"", name);
fail_free_data:
    free(data);
    return st;
}

kiln_status opc_part_add(opc_package *pkg, const char *name, const char *content_type, void *data,
                         size_t len, int compress, kiln_error *err)
{
    opc_part how = {.compress = compress ? 1 : 0, .plain_len = len};
    return part_add(pkg, name, content_type, data, len, &how, err);
}

kiln_status opc_part_add_deflated(opc_package *pkg, const char *name, const char *content_type,
                                  void *data, size_t len, uint64_t plain_len, uint32_t crc,
                                  kiln_error *err)
{
    opc_part how = {.compress = 1, .deflated = 1, .plain_len = plain_len, .crc = crc};
    return part_add(pkg, name, content_type, data, len, &how, err);
}

kiln_status opc_part_add_copy(opc_package *pkg, const char *name, const char *content_type,
                              const void *data, size_t len, int compress, kiln_error *err)
{
    /* malloc(0) may return NULL; one byte more keeps "no memory" unambiguous. */
    void *copy = malloc(len ? len : 1);
    if (!copy)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory adding part \"%s\"",
                              name ? name : "");
    if (len)
        memcpy(copy, data, len);
    return opc_part_add(pkg, name, content_type, copy, len, compress, err);
}

uint64_t opc_package_bytes(const opc_package *pkg)
{
    return pkg->bytes;
}

kiln_status opc_precheck(const kiln_output *out, uint64_t image_bytes, int has_chart,
                         const char *tmp_dir, kiln_error *err)
{
    if (out->max_bytes && image_bytes > out->max_bytes)
        return kiln_error_limit(err, KILN_E_TOO_LARGE, "", out->max_bytes, image_bytes,
                                "the images alone (%llu bytes) exceed the output limit of "
                                "%llu bytes",
                                (unsigned long long)image_bytes,
                                (unsigned long long)out->max_bytes);
    if (has_chart && tmp_dir && access(tmp_dir, W_OK | X_OK) != 0)
        return kiln_error_set(err, KILN_E_WRITE, NULL,
                              "the scratch directory '%s' is not a writable directory", tmp_dir);
    return KILN_E_OK;
}

uint64_t opc_package_packed_bytes(const opc_package *pkg)
{
    return pkg->packed;
}

/* ---- parts from the XML writer ----
 * opc_xml.c writes a part and knows nothing of the package: these two give
 * it the package's side, the size the rest of the zip takes and the part
 * to add its bytes as. */

void opc_xml_set_ceiling(opc_xml *x, const opc_package *pkg, uint64_t max_bytes)
{
    /* pkg->packed is read as it grows: parts added while x is written
     * (images of a long document) count as soon as they are added. */
    opc_xml_set_zip_ceiling(x, pkg ? &pkg->packed : NULL, max_bytes);
}

kiln_status opc_xml_finish(opc_xml *x, opc_package *pkg, const char *part_name,
                           const char *content_type, kiln_error *err)
{
    kiln_status st = opc_xml_close(x, err);
    if (st != KILN_E_OK) {
        opc_xml_free(x);
        /* Say which part, keeping the cause (a limit error keeps the
         * message the ceiling's other checks give). */
        if (err && st != KILN_E_TOO_LARGE) {
            char cause[KILN_MESSAGE_MAX];
            snprintf(cause, sizeof cause, "%s", err->message);
            kiln_error_set(err, st, NULL, "writing %s: %s", part_name, cause);
        }
        return st;
    }
    opc_xml_held part;
    st = opc_xml_take_held(x, &part, err);
    if (st != KILN_E_OK)
        return st;
    if (!part.deflated)
        return opc_part_add(pkg, part_name, content_type, part.data, part.len, 1, err);
    return opc_part_add_deflated(pkg, part_name, content_type, part.data, part.len,
                                 part.plain_len, part.crc, err);
}

/* ---- defaults ---- */

kiln_status opc_default_add(opc_package *pkg, const char *extension, const char *content_type,
                            kiln_error *err)
{
    if (!extension || !*extension || strpbrk(extension, "./") || !content_type || !*content_type)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                              "content type Default \"%s\" is not an extension with a type",
                              extension ? extension : "");
    /* rels and xml are written by the package itself. */
    if (strcasecmp(extension, "rels") == 0 || strcasecmp(extension, "xml") == 0)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                              "the Default for \"%s\" is the package's own", extension);
    for (size_t i = 0; i < pkg->default_count; i++) {
        if (strcasecmp(pkg->defaults[i].extension, extension) == 0) {
            if (strcmp(pkg->defaults[i].content_type, content_type) == 0)
                return KILN_E_OK;
            return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                  "extension \"%s\" was given two content types", extension);
        }
    }
    if (!reserve_one((void **)&pkg->defaults, &pkg->default_cap, pkg->default_count,
                     sizeof(opc_default)))
        goto fail_memory;
    opc_default *d = &pkg->defaults[pkg->default_count];
    d->extension = strdup(extension);
    d->content_type = strdup(content_type);
    if (!d->extension || !d->content_type) {
        free(d->extension);
        free(d->content_type);
        goto fail_memory;
    }
    pkg->default_count++;
    return KILN_E_OK;

fail_memory:
    return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory adding a content type");
}

/* ---- relationships ---- */

static opc_rel_source *source_get(opc_package *pkg, const char *name)
{
    if (pkg->last_source < pkg->source_count &&
        strcmp(pkg->sources[pkg->last_source].name, name) == 0)
        return &pkg->sources[pkg->last_source];
    for (size_t i = 0; i < pkg->source_count; i++) {
        if (strcmp(pkg->sources[i].name, name) == 0) {
            pkg->last_source = i;
            return &pkg->sources[i];
        }
    }
    if (!reserve_one((void **)&pkg->sources, &pkg->source_cap, pkg->source_count,
                     sizeof(opc_rel_source)))
        return NULL;
    opc_rel_source *s = &pkg->sources[pkg->source_count];
    memset(s, 0, sizeof *s);
    s->name = strdup(name);
    if (!s->name)
        return NULL;
    pkg->last_source = pkg->source_count++;
    return s;
}

unsigned opc_rel_add(opc_package *pkg, const char *source, const char *type, const char *target,
                     int external, kiln_error *err)
{
    if (!source || !type || !target) {
        kiln_error_set(err, KILN_E_INTERNAL, NULL, "a relationship is missing its %s",
                       !source ? "source"
                       : !type ? "type"
                               : "target");
        return 0;
    }
    opc_rel_source *s = source_get(pkg, source);
    if (!s || !reserve_one((void **)&s->rels, &s->cap, s->count, sizeof(opc_rel)))
        goto fail_memory;
    opc_rel *r = &s->rels[s->count];
    r->type = strdup(type);
    r->target = strdup(target);
    if (!r->type || !r->target) {
        free(r->type);
        free(r->target);
        goto fail_memory;
    }
    r->external = external ? 1 : 0;
    r->id = (unsigned)s->count + 1;
    s->count++;
    return r->id;

fail_memory:
    kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory adding a relationship");
    return 0;
}

/*
 * The part an internal target names, resolved against the source's folder as
 * a relative URI is: "media/image1.png" from "word/document.xml" is
 * "word/media/image1.png", "../embeddings/x.xlsx" from "word/charts/c.xml"
 * is "word/embeddings/x.xlsx", "/word/x.xml" is absolute. Writes the name
 * into buf; returns 0 when it climbs above the package root or is too long.
 */
static int resolve_target(const char *source, const char *target, char *buf, size_t cap)
{
    size_t len = 0;
    if (target[0] == '/') {
        target++;
    } else {
        const char *slash = strrchr(source, '/');
        size_t folder = slash ? (size_t)(slash - source) : 0;
        if (folder + 1 >= cap)
            return 0;
        memcpy(buf, source, folder);
        len = folder;
    }
    const char *seg = target;
    for (;;) {
        const char *end = strchr(seg, '/');
        size_t seg_len = end ? (size_t)(end - seg) : strlen(seg);
        if (seg_len == 0 || (seg_len == 1 && seg[0] == '.')) {
            /* nothing: "a//b" and "./a" name the same part */
        } else if (seg_len == 2 && seg[0] == '.' && seg[1] == '.') {
            if (len == 0)
                return 0;
            while (len > 0 && buf[len - 1] != '/')
                len--;
            if (len > 0)
                len--; /* the slash itself */
        } else {
            if (len + 1 + seg_len + 1 > cap)
                return 0;
            if (len > 0)
                buf[len++] = '/';
            memcpy(buf + len, seg, seg_len);
            len += seg_len;
        }
        if (!end)
            break;
        seg = end + 1;
    }
    buf[len] = '\0';
    return 1;
}

/* Every relationship's source is a part and every internal target too; every
 * part has a content type. These are writer bugs that Word reports as an
 * unreadable document, so they fail the render instead. */
static kiln_status package_check(const opc_package *pkg, kiln_error *err)
{
    for (size_t i = 0; i < pkg->part_count; i++) {
        const opc_part *part = &pkg->parts[i];
        if (!part->content_type && !opc_default_for(pkg, part->name))
            return kiln_error_set(err, KILN_E_INTERNAL, NULL, "part \"%s\" has no content type",
                                  part->name);
    }
    for (size_t i = 0; i < pkg->source_count; i++) {
        const opc_rel_source *s = &pkg->sources[i];
        if (s->name[0] && !opc_part_find(pkg, s->name, strlen(s->name)))
            return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                  "relationships were declared from \"%s\", which is not a part",
                                  s->name);
        for (size_t j = 0; j < s->count; j++) {
            const opc_rel *r = &s->rels[j];
            if (r->external)
                continue;
            char resolved[1024];
            if (!resolve_target(s->name, r->target, resolved, sizeof resolved) ||
                !opc_part_find(pkg, resolved, strlen(resolved)))
                return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                      "relationship rId%u of \"%s\" targets \"%s\", "
                                      "which is not a part",
                                      r->id, s->name[0] ? s->name : "the package", r->target);
        }
    }
    return KILN_E_OK;
}

/* ---- writing ---- */

/* One member of the zip, in order. data is borrowed from the part or owned
 * by the entry list (content types and .rels). */
typedef struct zip_member {
    const char *name;
    const unsigned char *data;
    size_t len;
    int compress;
    const opc_part *deflated; /* set when data is this part's deflate stream */
    size_t offset;            /* deflated_source's read position */
    zip_error_t error;        /* ... and its error */
} zip_member;

typedef struct member_list {
    zip_member *items;
    size_t count, cap;
    /* Bytes and names built for the write (freed with the list). */
    void **owned;
    size_t owned_count, owned_cap;
} member_list;

static void member_list_free(member_list *list)
{
    for (size_t i = 0; i < list->owned_count; i++)
        free(list->owned[i]);
    free(list->owned);
    for (size_t i = 0; i < list->count; i++)
        zip_error_fini(&list->items[i].error);
    free(list->items);
}

static int member_own(member_list *list, void *p)
{
    if (!p || !reserve_one((void **)&list->owned, &list->owned_cap, list->owned_count,
                           sizeof(void *))) {
        free(p);
        return 0;
    }
    list->owned[list->owned_count++] = p;
    return 1;
}

static int member_add(member_list *list, const char *name, const unsigned char *data, size_t len,
                      int compress, const opc_part *deflated)
{
    if (!reserve_one((void **)&list->items, &list->cap, list->count, sizeof(zip_member)))
        return 0;
    zip_member *m = &list->items[list->count++];
    *m = (zip_member){name, data, len, compress, deflated, 0, {0}};
    zip_error_init(&m->error);
    return 1;
}

/* The .rels part of one source as a member. */
static kiln_status add_rels_member(member_list *list, const opc_rel_source *s, kiln_error *err)
{
    unsigned char *data;
    size_t len;
    kiln_status st = opc_relationships_build(s, &data, &len, err);
    if (st != KILN_E_OK)
        return st;
    if (!member_own(list, data))
        goto fail_memory;
    char *name = opc_relationships_part_name(s->name);
    if (!member_own(list, name) || !member_add(list, name, data, len, 1, NULL))
        goto fail_memory;
    return KILN_E_OK;

fail_memory:
    return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory writing relationships");
}

/*
 * The zip order: [Content_Types].xml, the package relationships (both first,
 * as Word writes them; readers look for them first), the parts in the order
 * they were added, then the .rels part of each source part, in the order the
 * parts were added. Independent of the order relationships were declared in,
 * so the same document always gives the same bytes.
 */
static kiln_status build_members(const opc_package *pkg, member_list *list, kiln_error *err)
{
    unsigned char *types;
    size_t types_len;
    kiln_status st = opc_content_types_build(pkg, &types, &types_len, err);
    if (st != KILN_E_OK)
        return st;
    if (!member_own(list, types) ||
        !member_add(list, OPC_CONTENT_TYPES_PART, types, types_len, 1, NULL))
        goto fail_memory;

    for (size_t i = 0; i < pkg->source_count; i++) {
        if (pkg->sources[i].name[0] == '\0') {
            st = add_rels_member(list, &pkg->sources[i], err);
            if (st != KILN_E_OK)
                return st;
        }
    }
    for (size_t i = 0; i < pkg->part_count; i++) {
        const opc_part *part = &pkg->parts[i];
        if (!member_add(list, part->name, part->data, part->len, part->compress,
                        part->deflated ? part : NULL))
            goto fail_memory;
    }
    for (size_t i = 0; i < pkg->part_count; i++) {
        for (size_t j = 0; j < pkg->source_count; j++) {
            if (strcasecmp(pkg->sources[j].name, pkg->parts[i].name) == 0) {
                st = add_rels_member(list, &pkg->sources[j], err);
                if (st != KILN_E_OK)
                    return st;
                break;
            }
        }
    }
    return KILN_E_OK;

fail_memory:
    return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory assembling the package");
}

/*
 * libzip's error as Kiln's. Running out of memory shows up three ways:
 * ZIP_ER_MEMORY, zlib's Z_MEM_ERROR, and (libzip 1.7.3, in a few
 * allocation paths) a failure that leaves the error unset. Any other libzip
 * error on an in-memory archive is a bug.
 */
static kiln_status zip_failure(zip_error_t *ze, const char *doing, kiln_error *err)
{
    int code = zip_error_code_zip(ze);
    if (code == ZIP_ER_MEMORY || code == ZIP_ER_OK ||
        (code == ZIP_ER_ZLIB && zip_error_code_system(ze) == Z_MEM_ERROR))
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "zip: %s: out of memory", doing);
    return kiln_error_set(err, KILN_E_INTERNAL, NULL, "zip: %s: %s", doing,
                          zip_error_strerror(ze));
}

/*
 * The entries' modification time: 1980-01-01 00:00, the earliest a zip can
 * hold and what Word writes, so the same document gives the same bytes.
 * libzip stores local time (DOS dates have no zone), so the time_t is the
 * local midnight that it converts back to 1980-01-01 00:00.
 */
static time_t fixed_mtime(void)
{
    struct tm tm = {0};
    tm.tm_year = 80;
    tm.tm_mon = 0;
    tm.tm_mday = 1;
    tm.tm_isdst = -1;
    return mktime(&tm);
}

/*
 * The general-purpose bits 1-2 libzip's deflate sets for a level
 * (zip_algorithm_deflate.c: "fast" below 3, "maximum" above 7), and the
 * bits its compressing source may set (ZIP_FILE_ATTRIBUTES_GENERAL_PURPOSE_
 * BIT_FLAGS_ALLOWED_MASK, private to libzip), so a part deflated ahead gets
 * the same entry header as one libzip deflated.
 */
#define OPC_GPBF_LEVEL_BITS(level) ((level) < 3 ? 2u << 1 : (level) > 7 ? 1u << 1 : 0u)
#define OPC_GPBF_ALLOWED_MASK 0x0836u
/* "version needed to extract" for deflate: 2.0 */
#define OPC_VERSION_NEEDED_DEFLATE 20

/* The zip source of a part deflated ahead (see the top of this file): reads
 * the compressed bytes as they are and states what they are. ud is the
 * member, which outlives the archive. */
static zip_int64_t deflated_source(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
    zip_member *m = ud;
    switch (cmd) {
    case ZIP_SOURCE_OPEN:
        m->offset = 0;
        return 0;
    case ZIP_SOURCE_READ: {
        size_t left = m->len - m->offset;
        size_t n = len < left ? (size_t)len : left;
        if (n > 0)
            memcpy(data, m->data + m->offset, n);
        m->offset += n;
        return (zip_int64_t)n;
    }
    case ZIP_SOURCE_CLOSE:
    case ZIP_SOURCE_FREE:
        return 0;
    case ZIP_SOURCE_STAT: {
        if (len < sizeof(zip_stat_t)) {
            zip_error_set(&m->error, ZIP_ER_INVAL, 0);
            return -1;
        }
        zip_stat_t *st = data;
        zip_stat_init(st);
        st->valid = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD | ZIP_STAT_CRC |
                    ZIP_STAT_ENCRYPTION_METHOD;
        st->size = m->deflated->plain_len;
        st->comp_size = m->len;
        st->comp_method = ZIP_CM_DEFLATE;
        st->crc = m->deflated->crc;
        st->encryption_method = ZIP_EM_NONE;
        return sizeof *st;
    }
    case ZIP_SOURCE_GET_FILE_ATTRIBUTES: {
        if (len < sizeof(zip_file_attributes_t)) {
            zip_error_set(&m->error, ZIP_ER_INVAL, 0);
            return -1;
        }
        zip_file_attributes_t *attributes = data;
        attributes->valid |= ZIP_FILE_ATTRIBUTES_VERSION_NEEDED |
                             ZIP_FILE_ATTRIBUTES_GENERAL_PURPOSE_BIT_FLAGS;
        attributes->version_needed = OPC_VERSION_NEEDED_DEFLATE;
        attributes->general_purpose_bit_mask = OPC_GPBF_ALLOWED_MASK;
        attributes->general_purpose_bit_flags = OPC_GPBF_LEVEL_BITS(OPC_DEFLATE_LEVEL);
        return sizeof *attributes;
    }
    case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&m->error, data, len);
    case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                              ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE,
                                              ZIP_SOURCE_GET_FILE_ATTRIBUTES, -1);
    default:
        zip_error_set(&m->error, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
}

/* Add the members to za (which does not take their bytes). */
static kiln_status zip_add_members(zip_t *za, member_list *list, kiln_error *err)
{
    time_t mtime = fixed_mtime();
    for (size_t i = 0; i < list->count; i++) {
        zip_member *m = &list->items[i];
        zip_source_t *src = m->deflated ? zip_source_function(za, deflated_source, m)
                                        : zip_source_buffer(za, m->data, m->len, 0);
        if (!src)
            return zip_failure(zip_get_error(za), m->name, err);
        zip_int64_t idx = zip_file_add(za, m->name, src, ZIP_FL_ENC_UTF_8);
        if (idx < 0) {
            zip_source_free(src);
            return zip_failure(zip_get_error(za), m->name, err);
        }
        zip_uint64_t u = (zip_uint64_t)idx;
        /* A deflated part's entry says deflate too: the method matching the
         * source's is what makes libzip copy the data as it is. */
        if (zip_set_file_compression(za, u, m->compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE,
                                     m->compress ? OPC_DEFLATE_LEVEL : 0) < 0 ||
            zip_file_set_mtime(za, u, mtime, 0) < 0 ||
            /* A regular file readable by all, as zip tools expect, rather
             * than whatever libzip's default would be. */
            zip_file_set_external_attributes(za, u, 0, ZIP_OPSYS_UNIX, 0100644u << 16) < 0)
            return zip_failure(zip_get_error(za), m->name, err);
    }
    return KILN_E_OK;
}

/* Copy the finished archive in src into out. */
static kiln_status stream_out(zip_source_t *src, kiln_output *out, kiln_error *err)
{
    if (zip_source_open(src) < 0)
        return zip_failure(zip_source_error(src), "reading the archive back", err);
    kiln_status st = KILN_E_OK;
    unsigned char *chunk = malloc(OPC_COPY_CHUNK);
    if (!chunk) {
        st = kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory writing the package");
        goto close_source;
    }
    for (;;) {
        zip_int64_t n = zip_source_read(src, chunk, OPC_COPY_CHUNK);
        if (n < 0) {
            st = zip_failure(zip_source_error(src), "reading the archive back", err);
            break;
        }
        if (n == 0)
            break;
        st = kiln_output_write(out, chunk, (size_t)n, err);
        if (st != KILN_E_OK)
            break;
    }
    free(chunk);
close_source:
    zip_source_close(src);
    return st;
}

kiln_status opc_package_write(opc_package *pkg, kiln_output *out, kiln_error *err)
{
    kiln_status st = package_check(pkg, err);
    if (st != KILN_E_OK)
        return st;

    /* The stored parts (images) and the parts deflated as they were written
     * go into the zip as they are: when they alone are past the ceiling,
     * stop before zipping anything. Parts still to deflate can shrink, so
     * they are judged by kiln_output_write on the finished archive. */
    uint64_t packed = pkg->packed;
    if (packed > out->max_bytes || out->written > out->max_bytes - packed)
        return kiln_error_limit(err, KILN_E_TOO_LARGE, NULL, out->max_bytes,
                                out->written + packed,
                                "output is larger than the size ceiling of %llu bytes "
                                "(reached %llu bytes)",
                                (unsigned long long)out->max_bytes,
                                (unsigned long long)(out->written + packed));

    member_list list = {0};
    st = build_members(pkg, &list, err);
    if (st != KILN_E_OK)
        goto free_list;

    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *archive = zip_source_buffer_create(NULL, 0, 0, &ze);
    if (!archive) {
        st = zip_failure(&ze, "creating the archive", err);
        goto fini_error;
    }
    zip_t *za = zip_open_from_source(archive, ZIP_TRUNCATE, &ze);
    if (!za) {
        st = zip_failure(&ze, "creating the archive", err);
        zip_source_free(archive);
        goto fini_error;
    }
    /* zip_close frees the source it was opened on; keep it to read back. */
    zip_source_keep(archive);
    st = zip_add_members(za, &list, err);
    if (st != KILN_E_OK) {
        zip_discard(za);
        goto free_archive;
    }
    if (zip_close(za) < 0) {
        st = zip_failure(zip_get_error(za), "writing the archive", err);
        zip_discard(za);
        goto free_archive;
    }
    st = stream_out(archive, out, err);

free_archive:
    zip_source_free(archive);
fini_error:
    zip_error_fini(&ze);
free_list:
    member_list_free(&list);
    return st;
}
