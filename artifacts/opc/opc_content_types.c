/*
 * opc_content_types.c - [Content_Types].xml (see opc.h).
 *
 *   <Types xmlns="...package/2006/content-types">
 *     <Default Extension="rels" ContentType="...relationships+xml"/>
 *     <Default Extension="xml" ContentType="application/xml"/>
 *     <Default Extension="png" ContentType="image/png"/>        (opc_default_add)
 *     <Override PartName="/word/document.xml" ContentType="..."/>
 *   </Types>
 *
 * A part gets an Override unless a Default for its extension already gives
 * its content type. So every .xml part with a type of its own is listed, as
 * Word writes it, and media added under a Default are not. Which Default a
 * part falls under (opc_default_for) is here too: opc_package.c asks it when
 * it checks that every part has a content type.
 */
#include "opc.h"
#include "opc_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "../../common/banned.h"

#define OPC_NS_CONTENT_TYPES "http://schemas.openxmlformats.org/package/2006/content-types"

static void write_default(opc_xml *x, const char *extension, const char *content_type)
{
    opc_xml_start(x, "Default");
    opc_xml_attr(x, "Extension", extension);
    opc_xml_attr(x, "ContentType", content_type);
    opc_xml_end(x);
}

static const char *extension_of(const char *part_name)
{
    const char *slash = strrchr(part_name, '/');
    const char *base = slash ? slash + 1 : part_name;
    const char *dot = strrchr(base, '.');
    return dot ? dot + 1 : NULL;
}

const opc_default *opc_default_for(const opc_package *pkg, const char *part_name)
{
    const char *ext = extension_of(part_name);
    if (!ext)
        return NULL;
    for (size_t i = 0; i < pkg->default_count; i++)
        if (strcasecmp(pkg->defaults[i].extension, ext) == 0)
            return &pkg->defaults[i];
    return NULL;
}

/* 1 when the part's content type must be spelled out. */
static int needs_override(const opc_package *pkg, const opc_part *part)
{
    if (!part->content_type)
        return 0; /* typed by its extension's Default (checked before writing) */
    const opc_default *d = opc_default_for(pkg, part->name);
    return !d || strcmp(d->content_type, part->content_type) != 0;
}

kiln_status opc_content_types_build(const opc_package *pkg, unsigned char **data, size_t *len,
                                    kiln_error *err)
{
    opc_xml *x = opc_xml_new();
    if (!x)
        goto fail_memory;
    /* "/" + the longest part name: PartName is the name as an absolute URI
     * (part names are checked to need no percent-encoding). */
    size_t longest = 0;
    for (size_t i = 0; i < pkg->part_count; i++) {
        size_t n = strlen(pkg->parts[i].name);
        if (n > longest)
            longest = n;
    }
    char *part_uri = malloc(longest + 2);
    if (!part_uri) {
        opc_xml_free(x);
        goto fail_memory;
    }
    opc_xml_start(x, "Types");
    opc_xml_attr(x, "xmlns", OPC_NS_CONTENT_TYPES);
    write_default(x, "rels", OPC_CT_RELS);
    write_default(x, "xml", OPC_CT_XML);
    for (size_t i = 0; i < pkg->default_count; i++)
        write_default(x, pkg->defaults[i].extension, pkg->defaults[i].content_type);
    for (size_t i = 0; i < pkg->part_count; i++) {
        const opc_part *part = &pkg->parts[i];
        if (!needs_override(pkg, part))
            continue;
        snprintf(part_uri, longest + 2, "/%s", part->name);
        opc_xml_start(x, "Override");
        opc_xml_attr(x, "PartName", part_uri);
        opc_xml_attr(x, "ContentType", part->content_type);
        opc_xml_end(x);
    }
    opc_xml_end(x);
    free(part_uri);
    return opc_xml_take(x, data, len, err);

fail_memory:
    return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory writing content types");
}
