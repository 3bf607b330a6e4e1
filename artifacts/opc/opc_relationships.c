/*
 * opc_relationships.c - the .rels parts: _rels/.rels for the package and
 * FOLDER/_rels/NAME.rels for each part that relates to others (see opc.h).
 *
 *   <Relationships xmlns="...package/2006/relationships">
 *     <Relationship Id="rId1" Type="..." Target="styles.xml"/>
 *     <Relationship Id="rId2" Type="...hyperlink" Target="https://..."
 *                   TargetMode="External"/>
 *   </Relationships>
 *
 * Relationships are written in id order. Targets go through the escaping
 * path: a hyperlink's URL comes from the spec, and is also percent-encoded
 * where it is not a valid URI.
 */
#include "opc.h"
#include "opc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../common/banned.h"

#define OPC_NS_RELATIONSHIPS "http://schemas.openxmlformats.org/package/2006/relationships"

char *opc_relationships_part_name(const char *source)
{
    const char *slash = strrchr(source, '/');
    size_t folder = slash ? (size_t)(slash - source) + 1 : 0; /* with its slash */
    const char *base = source + folder;
    size_t len = folder + strlen("_rels/") + strlen(base) + strlen(".rels") + 1;
    char *name = malloc(len);
    if (!name)
        return NULL;
    snprintf(name, len, "%.*s_rels/%s.rels", (int)folder, source, base);
    return name;
}

static int is_hex_digit(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
}

/* Whether byte i of url must be written as %XX in a Target: Word rejects or
 * mangles a Target that is not a valid URI (RFC 3986), and a URL from the spec
 * may hold spaces, quotes or UTF-8 text. Every other URI character stays as
 * it is, and so does a "%" that already starts an escape. */
static int needs_percent(const unsigned char *url, size_t i)
{
    unsigned char c = url[i];
    if (c <= 0x20 || c >= 0x7F)
        return 1; /* controls, space, DEL, the bytes of non-ASCII characters */
    if (c == '%')
        return !(is_hex_digit(url[i + 1]) && is_hex_digit(url[i + 2]));
    return strchr("\"<>\\^`{|}", c) != NULL;
}

/* url with the bytes needs_percent picks as %XX (upper-case hex), malloc'd;
 * NULL when out of memory. */
static char *percent_encode(const char *url)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *u = (const unsigned char *)url;
    size_t len = 0;
    for (size_t i = 0; u[i]; i++)
        len += needs_percent(u, i) ? 3 : 1;
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    char *p = out;
    for (size_t i = 0; u[i]; i++) {
        if (needs_percent(u, i)) {
            *p++ = '%';
            *p++ = hex[u[i] >> 4];
            *p++ = hex[u[i] & 15];
        } else {
            *p++ = (char)u[i];
        }
    }
    *p = '\0';
    return out;
}

/* 0, or -1 when out of memory. */
static int write_relationship(opc_xml *x, const opc_rel *r)
{
    char id[32];
    snprintf(id, sizeof id, "rId%u", r->id);
    /* Internal targets are part names the writers built; only an external
     * one (a URL from the spec) needs encoding. */
    char *encoded = NULL;
    if (r->external) {
        encoded = percent_encode(r->target);
        if (!encoded)
            return -1;
    }
    opc_xml_start(x, "Relationship");
    opc_xml_attr(x, "Id", id);
    opc_xml_attr(x, "Type", r->type);
    opc_xml_attr(x, "Target", encoded ? encoded : r->target);
    if (r->external)
        opc_xml_attr(x, "TargetMode", "External");
    opc_xml_end(x);
    free(encoded);
    return 0;
}

kiln_status opc_relationships_build(const opc_rel_source *source, unsigned char **data,
                                    size_t *len, kiln_error *err)
{
    opc_xml *x = opc_xml_new();
    if (!x)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory writing relationships");
    opc_xml_start(x, "Relationships");
    opc_xml_attr(x, "xmlns", OPC_NS_RELATIONSHIPS);
    for (size_t i = 0; i < source->count; i++) {
        if (write_relationship(x, &source->rels[i]) != 0) {
            opc_xml_free(x);
            return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory writing relationships");
        }
    }
    opc_xml_end(x);
    return opc_xml_take(x, data, len, err);
}
