/*
 * opc_core.c - docProps/core.xml, the Dublin Core properties Word shows under
 * File > Info (see opc.h).
 *
 *   <cp:coreProperties xmlns:cp=... xmlns:dc=... xmlns:dcterms=...
 *                      xmlns:dcmitype=... xmlns:xsi=...>
 *     <dc:title>..</dc:title> <dc:subject/> <dc:creator/> <cp:keywords/>
 *     <dc:description/> <cp:lastModifiedBy/>
 *     <dcterms:created xsi:type="dcterms:W3CDTF">2024-05-01T09:30:00Z</dcterms:created>
 *     <dcterms:modified xsi:type="dcterms:W3CDTF">..</dcterms:modified>
 *     <cp:category/>
 *   </cp:coreProperties>
 *
 * The schema takes its children in any order (xsd:all); this is the order
 * Word and libxlsxwriter write. Members the spec leaves out are left out.
 */
#include "opc.h"
#include "opc_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include "../../common/banned.h"

#define OPC_CORE_PART "docProps/core.xml"
#define OPC_NS_CP "http://schemas.openxmlformats.org/package/2006/metadata/core-properties"
#define OPC_NS_DC "http://purl.org/dc/elements/1.1/"
#define OPC_NS_DCTERMS "http://purl.org/dc/terms/"
#define OPC_NS_DCMITYPE "http://purl.org/dc/dcmitype/"
#define OPC_NS_XSI "http://www.w3.org/2001/XMLSchema-instance"

/* <name>text</name>, unless the spec has no such member. */
static void write_optional(opc_xml *x, const char *name, const char *text)
{
    if (text && *text)
        opc_xml_element_text(x, name, text);
}

/* "YYYY-MM-DDTHH:MM:SSZ"; 0 when the time is outside years 0-9999. */
static int format_w3cdtf(int64_t seconds, char buf[32])
{
    time_t t = (time_t)seconds;
    struct tm tm;
    if ((int64_t)t != seconds || !gmtime_r(&t, &tm) || tm.tm_year < -1900 ||
        tm.tm_year > 9999 - 1900)
        return 0;
    snprintf(buf, 32, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return 1;
}

static void write_date(opc_xml *x, const char *name, const char *w3cdtf)
{
    opc_xml_start(x, name);
    opc_xml_attr(x, "xsi:type", "dcterms:W3CDTF");
    opc_xml_text(x, w3cdtf, strlen(w3cdtf));
    opc_xml_end(x);
}

kiln_status opc_core_add(opc_package *pkg, const kiln_metadata *meta, kiln_error *err)
{
    /* Without a date in the spec the document was made now, as any editor
     * would record it; a spec that wants reproducible bytes gives one. */
    int64_t created = meta->has_created ? meta->created : (int64_t)time(NULL);
    char date[32];
    if (!format_w3cdtf(created, date))
        return kiln_error_set(err, KILN_E_INTERNAL, "/metadata/created",
                              "the creation date is outside the years 0 to 9999");

    opc_xml *x = opc_xml_new();
    if (!x)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory writing %s", OPC_CORE_PART);
    opc_xml_start(x, "cp:coreProperties");
    opc_xml_attr(x, "xmlns:cp", OPC_NS_CP);
    opc_xml_attr(x, "xmlns:dc", OPC_NS_DC);
    opc_xml_attr(x, "xmlns:dcterms", OPC_NS_DCTERMS);
    opc_xml_attr(x, "xmlns:dcmitype", OPC_NS_DCMITYPE);
    opc_xml_attr(x, "xmlns:xsi", OPC_NS_XSI);
    write_optional(x, "dc:title", meta->title);
    write_optional(x, "dc:subject", meta->subject);
    write_optional(x, "dc:creator", meta->author);
    write_optional(x, "cp:keywords", meta->keywords);
    write_optional(x, "dc:description", meta->description);
    write_optional(x, "cp:lastModifiedBy", meta->author);
    write_date(x, "dcterms:created", date);
    write_date(x, "dcterms:modified", date);
    write_optional(x, "cp:category", meta->category);
    opc_xml_end(x);
    kiln_status st = opc_xml_finish(x, pkg, OPC_CORE_PART, OPC_CT_CORE, err);
    if (st != KILN_E_OK)
        return st;
    if (opc_rel_add(pkg, "", OPC_REL_CORE, OPC_CORE_PART, 0, err) == 0)
        return err ? err->code : KILN_E_NOMEM;
    return KILN_E_OK;
}
