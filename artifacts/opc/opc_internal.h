/*
 * opc_internal.h - what the files of the OPC layer share (artifacts/opc/).
 *
 * The package's own structure is visible here so the content-types and
 * relationship part writers can walk it; nothing outside artifacts/opc/
 * includes this file (writers use opc.h).
 *
 * The files in layers, each calling only files of the layers below it (make
 * check's cycles part, tests/check_cycles.py, fails on a call back up):
 *
 *   top     opc_core.c, opc_app.c   docProps/core.xml and docProps/app.xml
 *           opc_chart.c             native charts and their caches
 *           opc_chart_workbook.c    the workbook embedded behind a chart
 *           opc_template.c          a template part with its placeholders
 *                                   filled
 *   package opc_package.c           parts, relationships, the zip; also the
 *                                   XML writer's package side
 *                                   (opc_xml_set_ceiling, opc_xml_finish)
 *   parts   opc_content_types.c     [Content_Types].xml, and which Default
 *                                   types a part (opc_default_for)
 *           opc_relationships.c     the .rels parts
 *   bottom  opc_xml.c               the XML writer: it makes a part's bytes
 *                                   and knows no package (what it needs of
 *                                   one, the size of the rest of the zip, is
 *                                   passed in)
 */
#ifndef KILN_OPC_INTERNAL_H
#define KILN_OPC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "opc.h"

/*
 * Deflate settings for XML parts, shared by opc_xml.c (which deflates a large
 * part as it is written) and opc_package.c (which has libzip deflate the parts
 * added as plain bytes). Level 1: measured on a 5.2 MB document.xml shaped
 * like Kiln's, libzip 1.7.3 with Debian 12's zlib, the whole package write
 * took 24 ms at level 1 for a 668 KB file, 46 ms at level 6 for 586 KB; level
 * 1 halves the time for a file 14% larger, and is what Word itself uses
 * ("superfast" deflate in the files it saves). Memory level 9 and a raw
 * 32 KB window are what libzip's own deflate uses, so a part deflated by
 * opc_xml.c is byte for byte what libzip would have made of it.
 */
#define OPC_DEFLATE_LEVEL 1
#define OPC_DEFLATE_MEM_LEVEL 9
#define OPC_DEFLATE_WINDOW_BITS (-15)

typedef struct opc_part {
    char *name;          /* "word/document.xml": no leading slash */
    char *content_type;  /* NULL: the Default of the part's extension applies */
    unsigned char *data; /* owned */
    size_t len;          /* bytes at data */
    int compress;        /* plain data: 1 = libzip deflates it, 0 = stored */
    int deflated;        /* data is already a raw deflate stream (an XML part
                            from opc_xml_finish), copied into the zip as it is */
    uint64_t plain_len;  /* the part's own size: len, or inflated when deflated */
    uint32_t crc;        /* CRC-32 of the plain bytes, when deflated */
} opc_part;

typedef struct opc_rel {
    unsigned id; /* "rId<id>" */
    char *type;
    char *target;
    int external;
} opc_rel;

/* The relationships of one source: the package ("") or one part. */
typedef struct opc_rel_source {
    char *name;
    opc_rel *rels;
    size_t count, cap;
} opc_rel_source;

typedef struct opc_default {
    char *extension; /* without the dot, as given ("png") */
    char *content_type;
} opc_default;

struct opc_package {
    opc_part *parts; /* in the order they were added */
    size_t part_count, part_cap;
    size_t *index;           /* open-addressed hash of part names: part
                                number + 1, 0 = empty slot */
    size_t index_cap;        /* a power of two, kept at most half full */
    opc_rel_source *sources; /* in the order first related from */
    size_t source_count, source_cap;
    size_t last_source; /* writers add runs of relations from one source */
    opc_default *defaults;
    size_t default_count, default_cap;
    uint64_t bytes;  /* sum of the parts' plain lengths */
    uint64_t packed; /* bytes the parts will take in the zip at
                        least: stored parts and deflated parts as
                        they are (plain parts to deflate count 0) */
};

/* The part named name (ASCII case-insensitive, as OPC compares part names);
 * NULL when there is none. */
const opc_part *opc_part_find(const opc_package *pkg, const char *name, size_t name_len);

/* The Default added for a part name's extension; NULL when none
 * (opc_content_types.c). */
const opc_default *opc_default_for(const opc_package *pkg, const char *part_name);

/* [Content_Types].xml for pkg (opc_content_types.c); *data is malloc'd. */
kiln_status opc_content_types_build(const opc_package *pkg, unsigned char **data, size_t *len,
                                    kiln_error *err);

/* The .rels part of one source (opc_relationships.c); *data is malloc'd. */
kiln_status opc_relationships_build(const opc_rel_source *source, unsigned char **data,
                                    size_t *len, kiln_error *err);
/* The name of a source's .rels part: "_rels/.rels" for the package,
 * "word/_rels/document.xml.rels" for "word/document.xml". malloc'd; NULL
 * when out of memory. */
char *opc_relationships_part_name(const char *source);

/* Add a part whose data (len bytes, malloc'd, owned by the package from here
 * on, even on failure) is a raw deflate stream of plain_len bytes with CRC-32
 * crc, written into the zip without being deflated again. Otherwise as
 * opc_part_add with compress 1. */
kiln_status opc_part_add_deflated(opc_package *pkg, const char *name, const char *content_type,
                                  void *data, size_t len, uint64_t plain_len, uint32_t crc,
                                  kiln_error *err);

/* What the parts added so far take in the zip at least (pkg->packed, which
 * opc_xml_set_ceiling has the writer read as it grows). */
uint64_t opc_package_packed_bytes(const opc_package *pkg);

/* ---- the XML writer's internal calls (opc_xml.c) ---- */

/* Close every open element and hand back the bytes written (malloc'd, the
 * caller frees) instead of adding a part; a part large enough to be held
 * deflated (opc_xml.c) is inflated back. Frees x in every case. */
kiln_status opc_xml_take(opc_xml *x, unsigned char **data, size_t *len, kiln_error *err);

/* opc_xml_set_ceiling without a package: *rest_of_zip is what the rest of
 * the zip takes at least, read each time the part's compressed bytes grow
 * (so it must outlive x). rest_of_zip NULL or max_bytes 0 = no ceiling. */
void opc_xml_set_zip_ceiling(opc_xml *x, const uint64_t *rest_of_zip, uint64_t max_bytes);

/* Close every open element, push out what libxml2 still stages and end the
 * deflate stream: the writer then holds the whole part, for
 * opc_xml_take_held. On failure err says what failed (x is still to be
 * freed); x NULL (opc_xml_new failed) is out of memory. */
kiln_status opc_xml_close(opc_xml *x, kiln_error *err);

/* A closed part as the writer holds it: its plain bytes, or for a part past
 * the size it deflates from, the raw deflate stream. */
typedef struct opc_xml_held {
    unsigned char *data; /* malloc'd, the caller's */
    size_t len;          /* bytes at data */
    int deflated;        /* data is a raw deflate stream of plain_len bytes */
    uint64_t plain_len;  /* the part's own size */
    uint32_t crc;        /* CRC-32 of the plain bytes, when deflated */
} opc_xml_held;

/* Hand over the bytes of a part opc_xml_close closed, as held (nothing is
 * inflated). Frees x in every case. */
kiln_status opc_xml_take_held(opc_xml *x, opc_xml_held *out, kiln_error *err);

/* Text escaped so that it is safe both as character data and inside an
 * attribute value (quotes, tab, LF and CR as references): what a template's
 * placeholder gets, since the template may put it in either place. */
void opc_xml_text_anywhere(opc_xml *x, const char *s, size_t len);

/* opc_template_write on bytes already in memory; template_name is only used
 * in error messages. */
kiln_status opc_template_write_bytes(opc_xml *x, const char *template_name, const char *bytes,
                                     size_t len, const opc_var *vars, size_t var_count,
                                     kiln_error *err);

#endif
