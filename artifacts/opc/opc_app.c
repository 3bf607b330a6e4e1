/*
 * opc_app.c - docProps/app.xml, the extended properties: which application
 * made the document, and the company (see opc.h).
 *
 *   <Properties xmlns=".../extended-properties" xmlns:vt=".../docPropsVTypes">
 *     <Application>Kiln</Application> <DocSecurity>0</DocSecurity>
 *     <ScaleCrop>false</ScaleCrop> <Company>..</Company>
 *     <LinksUpToDate>false</LinksUpToDate> <SharedDoc>false</SharedDoc>
 *     <HyperlinksChanged>false</HyperlinksChanged> <AppVersion>00.0100</AppVersion>
 *   </Properties>
 *
 * Page, word and character counts are left out: they are optional, and Word
 * recomputes them, where a wrong guess would show in File > Info.
 */
#include "opc.h"
#include "opc_internal.h"

#include <stdio.h>
#include <string.h>

#include "../../common/version.h"
#include "../../common/banned.h"

#define OPC_APP_PART "docProps/app.xml"
#define OPC_APPLICATION "Kiln"
#define OPC_NS_EXTENDED \
    "http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"
#define OPC_NS_VT "http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes"

/*
 * AppVersion "XX.YYZZ" from "MAJOR.MINOR.PATCH": the standard says the value
 * shall have the form XX.YYYY with digits, or the document is not
 * conformant; major, minor and patch as two digits each is the usual reading
 * (Word writes "16.0000"). Parts past 99 are clamped.
 */
static void app_version(const char *version, char buf[16])
{
    unsigned part[3] = {0, 0, 0};
    sscanf(version, "%u.%u.%u", &part[0], &part[1], &part[2]);
    for (int i = 0; i < 3; i++)
        if (part[i] > 99)
            part[i] = 99;
    snprintf(buf, 16, "%02u.%02u%02u", part[0], part[1], part[2]);
}

kiln_status opc_app_add(opc_package *pkg, const kiln_metadata *meta, const opc_app_deck *deck,
                        kiln_error *err)
{
    opc_xml *x = opc_xml_new();
    if (!x)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory writing %s", OPC_APP_PART);
    char version[16];
    app_version(KILN_VERSION, version);
    opc_xml_start(x, "Properties");
    opc_xml_attr(x, "xmlns", OPC_NS_EXTENDED);
    opc_xml_attr(x, "xmlns:vt", OPC_NS_VT);
    opc_xml_element_text(x, "Application", OPC_APPLICATION);
    opc_xml_element_text(x, "DocSecurity", "0");
    if (deck) {
        /* The extended properties are an xsd:all: any order. Widescreen is
         * what PowerPoint calls a 16:9 deck. */
        char n[16];
        opc_xml_element_text(x, "PresentationFormat", "Widescreen");
        snprintf(n, sizeof n, "%u", deck->slides);
        opc_xml_element_text(x, "Slides", n);
        snprintf(n, sizeof n, "%u", deck->notes);
        opc_xml_element_text(x, "Notes", n);
        opc_xml_element_text(x, "HiddenSlides", "0");
    }
    opc_xml_element_text(x, "ScaleCrop", "false");
    if (meta->company && *meta->company)
        opc_xml_element_text(x, "Company", meta->company);
    opc_xml_element_text(x, "LinksUpToDate", "false");
    opc_xml_element_text(x, "SharedDoc", "false");
    opc_xml_element_text(x, "HyperlinksChanged", "false");
    opc_xml_element_text(x, "AppVersion", version);
    opc_xml_end(x);
    kiln_status st = opc_xml_finish(x, pkg, OPC_APP_PART, OPC_CT_APP, err);
    if (st != KILN_E_OK)
        return st;
    if (opc_rel_add(pkg, "", OPC_REL_APP, OPC_APP_PART, 0, err) == 0)
        return err ? err->code : KILN_E_NOMEM;
    return KILN_E_OK;
}
