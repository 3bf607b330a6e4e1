/*
 * opc.h - the Open Packaging Conventions layer shared by the .docx and .pptx
 * writers (artifacts/opc/).
 *
 * A package is a zip of XML parts tied together by [Content_Types].xml and
 * relationship (.rels) parts. The writers never touch the zip or the .rels
 * files: they add parts (opc_part_add, or an opc_xml writer finished into a
 * part) and declare relationships (opc_rel_add, which hands back the rId to
 * use in the part's XML). opc_package_write then writes the content types,
 * every .rels part, core/app properties already added, and zips it all
 * (libzip) into the size-enforced kiln_output, stopping as soon as the
 * ceiling would be passed.
 *
 * Files, one per part kind, as libxlsxwriter does it (opc_internal.h gives
 * their layers):
 *   opc_xml.c            the XML writer every part is written with (libxml2's
 *                        xmlTextWriter) and the one text-escaping path
 *   opc_package.c        parts, relationships, zip assembly into kiln_output,
 *                        and an XML writer's part added to the package
 *                        (opc_xml_set_ceiling, opc_xml_finish)
 *   opc_content_types.c  [Content_Types].xml
 *   opc_relationships.c  _rels/.rels and every PART_rels/NAME.rels
 *   opc_core.c           docProps/core.xml (Dublin Core properties)
 *   opc_app.c            docProps/app.xml (extended properties)
 *   opc_template.c       a part from a file under templates/ with {{name}}
 *                        placeholders filled in through the escaping path
 *   opc_chart.c          a DrawingML chart part (c:chartSpace) with cached
 *                        values, and opc_chart_workbook.c, the embedded
 *                        workbook (libxlsxwriter) behind "Edit Data"
 *
 * Memory: an XML part past 64 KB is deflated while it is written (opc_xml.c
 * feeds zlib from libxml2's output buffer), so a 400 MB document.xml is held
 * as its ~13 MB of compressed bytes, and libzip copies those into the zip as
 * they are instead of deflating the part again.
 *
 * Ownership: an opc_package owns every part's bytes once added; strings
 * passed in are copied. Nothing here prints (libxml2's error output is
 * silenced while an opc_xml exists).
 */
#ifndef KILN_OPC_H
#define KILN_OPC_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/error.h"
#include "../../common/output.h"
#include "../layout/chart_data.h"
#include "../spec/spec.h"

/* ---- relationship types and content types used by the writers ---- */
#define OPC_NS_R "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
#define OPC_REL_BASE "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
#define OPC_REL_OFFICE_DOCUMENT OPC_REL_BASE "officeDocument"
#define OPC_REL_CORE \
    "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"
#define OPC_REL_APP OPC_REL_BASE "extended-properties"
#define OPC_REL_STYLES OPC_REL_BASE "styles"
#define OPC_REL_NUMBERING OPC_REL_BASE "numbering"
#define OPC_REL_SETTINGS OPC_REL_BASE "settings"
#define OPC_REL_FONT_TABLE OPC_REL_BASE "fontTable"
#define OPC_REL_THEME OPC_REL_BASE "theme"
#define OPC_REL_HEADER OPC_REL_BASE "header"
#define OPC_REL_FOOTER OPC_REL_BASE "footer"
#define OPC_REL_FOOTNOTES OPC_REL_BASE "footnotes"
#define OPC_REL_ENDNOTES OPC_REL_BASE "endnotes"
#define OPC_REL_HYPERLINK OPC_REL_BASE "hyperlink"
#define OPC_REL_IMAGE OPC_REL_BASE "image"
#define OPC_REL_CHART OPC_REL_BASE "chart"
#define OPC_REL_PACKAGE OPC_REL_BASE "package"
#define OPC_REL_SLIDE OPC_REL_BASE "slide"
#define OPC_REL_SLIDE_LAYOUT OPC_REL_BASE "slideLayout"
#define OPC_REL_SLIDE_MASTER OPC_REL_BASE "slideMaster"
#define OPC_REL_NOTES_SLIDE OPC_REL_BASE "notesSlide"
#define OPC_REL_NOTES_MASTER OPC_REL_BASE "notesMaster"
#define OPC_REL_PRES_PROPS OPC_REL_BASE "presProps"
#define OPC_REL_VIEW_PROPS OPC_REL_BASE "viewProps"
#define OPC_REL_TABLE_STYLES OPC_REL_BASE "tableStyles"

#define OPC_CT_RELS "application/vnd.openxmlformats-package.relationships+xml"
#define OPC_CT_XML "application/xml"
#define OPC_CT_CORE "application/vnd.openxmlformats-package.core-properties+xml"
#define OPC_CT_APP "application/vnd.openxmlformats-officedocument.extended-properties+xml"
#define OPC_CT_THEME "application/vnd.openxmlformats-officedocument.theme+xml"
#define OPC_CT_CHART "application/vnd.openxmlformats-officedocument.drawingml.chart+xml"
#define OPC_CT_XLSX "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
#define OPC_CT_PNG "image/png"
#define OPC_CT_JPEG "image/jpeg"
#define OPC_WML "application/vnd.openxmlformats-officedocument.wordprocessingml."
#define OPC_CT_DOCX_DOCUMENT OPC_WML "document.main+xml"
#define OPC_CT_DOCX_STYLES OPC_WML "styles+xml"
#define OPC_CT_DOCX_NUMBERING OPC_WML "numbering+xml"
#define OPC_CT_DOCX_SETTINGS OPC_WML "settings+xml"
#define OPC_CT_DOCX_FONT_TABLE OPC_WML "fontTable+xml"
#define OPC_CT_DOCX_HEADER OPC_WML "header+xml"
#define OPC_CT_DOCX_FOOTER OPC_WML "footer+xml"
#define OPC_CT_DOCX_FOOTNOTES OPC_WML "footnotes+xml"
#define OPC_CT_DOCX_ENDNOTES OPC_WML "endnotes+xml"

/* ---- the package ---- */
typedef struct opc_package opc_package;

/* A new, empty package; NULL when out of memory. */
opc_package *opc_package_new(void);
void opc_package_free(opc_package *pkg);

/*
 * Add a part. name has no leading slash ("word/document.xml"); content_type is
 * written as an Override, unless the part's extension has a Default added with
 * opc_default_add (images, embedded workbooks) giving the same type; NULL =
 * the Default's type. The package takes ownership of data (malloc'd) in every
 * case, even on failure. compress: 0 stores the part (PNG/JPEG are compressed
 * already), 1 deflates it. A name is made of ASCII letters, digits, "-._~"
 * and single slashes (no segment "." / ".." or ending in a dot); .rels parts
 * and [Content_Types].xml are the package's own; names equal ignoring ASCII
 * case are the same part. A bad or repeated name is KILN_E_INTERNAL.
 */
kiln_status opc_part_add(opc_package *pkg, const char *name, const char *content_type, void *data,
                         size_t len, int compress, kiln_error *err);
/* Copy data into a new part (for borrowed bytes such as a spec's image). */
kiln_status opc_part_add_copy(opc_package *pkg, const char *name, const char *content_type,
                              const void *data, size_t len, int compress, kiln_error *err);
/* A <Default Extension=".." ContentType=".."/> (extension without the dot);
 * adding the same twice is fine, the same extension with another type is
 * KILN_E_INTERNAL, and "xml" / "rels" are the package's own. */
kiln_status opc_default_add(opc_package *pkg, const char *extension, const char *content_type,
                            kiln_error *err);

/*
 * Declare a relationship from source ("" = the package itself, else a part
 * name such as "word/document.xml") of type to target. target is relative to
 * the source part's folder ("media/image1.png", "../embeddings/x.xlsx"), or
 * an absolute URL when external is 1 (written with TargetMode="External").
 * Returns the id's number N (the id is "rIdN", numbered from 1 per source);
 * 0 when out of memory (err set). Ids are handed out in call order, so a
 * writer that wants rId1 for styles declares styles first.
 */
unsigned opc_rel_add(opc_package *pkg, const char *source, const char *type, const char *target,
                     int external, kiln_error *err);

/* Core (docProps/core.xml) and app (docProps/app.xml) properties from the
 * spec's metadata, plus their package relationships. core.xml leaves out the
 * members the metadata has not; its dates are metadata.created, else now. */
kiln_status opc_core_add(opc_package *pkg, const kiln_metadata *meta, kiln_error *err);
/* What app.xml says of a presentation (file managers show the slide count);
 * NULL for other documents. */
typedef struct opc_app_deck {
    unsigned slides, notes;
} opc_app_deck;
kiln_status opc_app_add(opc_package *pkg, const kiln_metadata *meta, const opc_app_deck *deck,
                        kiln_error *err);

/*
 * Write the package into out: [Content_Types].xml first, then _rels/.rels,
 * then the parts in the order they were added, then the parts' .rels parts
 * (in the same order); every entry dated 1980-01-01, so the same document
 * gives the same bytes. Checks first that every relationship's source and
 * internal target is a part and every part has a content type
 * (KILN_E_INTERNAL naming it). Fails with KILN_E_TOO_LARGE as soon as the zip
 * would pass out's ceiling. The package is left as it was (free it either
 * way).
 */
kiln_status opc_package_write(opc_package *pkg, kiln_output *out, kiln_error *err);

/*
 * The checks an Office writer makes before it writes any XML: images go into
 * the zip stored as they are, so when image_bytes alone pass out's ceiling
 * the render fails at once (KILN_E_TOO_LARGE); a document with charts needs
 * tmp_dir writable for their embedded workbooks (KILN_E_WRITE otherwise).
 */
kiln_status opc_precheck(const kiln_output *out, uint64_t image_bytes, int has_chart,
                         const char *tmp_dir, kiln_error *err);

/* Bytes of the parts added so far (uncompressed), for early ceiling checks. */
uint64_t opc_package_bytes(const opc_package *pkg);

/* ---- the XML writer (opc_xml.c) ---- */
/*
 * One part being written. Calls never return errors: the first failure
 * (out of memory, a libxml2 error) is remembered and every later call does
 * nothing, so a part writer makes its calls and checks once, at
 * opc_xml_finish. Element and attribute names are literals from the writer
 * and are trusted; every piece of text from the spec goes through
 * opc_xml_text / opc_xml_attr, the one escaping path: markup characters are
 * escaped and characters XML 1.0 forbids (C0 controls other than tab, LF and
 * CR; U+FFFE, U+FFFF; invalid UTF-8) are dropped.
 */
typedef struct opc_xml opc_xml;

/* A new writer with the XML declaration (standalone="yes") written; NULL on OOM. */
opc_xml *opc_xml_new(void);
/* Discard a writer that will not be finished. NULL is fine. */
void opc_xml_free(opc_xml *x);
/* <name */
void opc_xml_start(opc_xml *x, const char *name);
/* name="value" on the element just started, before any child or text (else
 * a failure); value escaped, NULL is a failure. */
void opc_xml_attr(opc_xml *x, const char *name, const char *value);
void opc_xml_attr_len(opc_xml *x, const char *name, const char *value, size_t len);
void opc_xml_attr_int(opc_xml *x, const char *name, int64_t value);
void opc_xml_attr_uint(opc_xml *x, const char *name, uint64_t value);
/* value as %.15g, or %.17g when that does not round-trip; -0 is "0"; NaN
 * and infinities are a failure. */
void opc_xml_attr_double(opc_xml *x, const char *name, double value);
/* 6 hex digits, upper case: 0x1F4E79 -> "1F4E79"; outside 0..0xFFFFFF is a
 * failure (a writer passing "none" through). */
void opc_xml_attr_color(opc_xml *x, const char *name, int32_t rgb);
/* Close the innermost open element (as <x/> when it has no content); a
 * failure when none is open. */
void opc_xml_end(opc_xml *x);
/* Escaped character data (tab and LF kept, CR written as &#13;). */
void opc_xml_text(opc_xml *x, const char *s, size_t len);
/* Shorthands for the shapes WordprocessingML is made of:
 * <name/>, <name val_attr="value"/>, <name val_attr="N"/> */
void opc_xml_empty(opc_xml *x, const char *name);
void opc_xml_val(opc_xml *x, const char *name, const char *val_attr, const char *value);
void opc_xml_val_int(opc_xml *x, const char *name, const char *val_attr, int64_t value);
/* <name>text</name> with text escaped. */
void opc_xml_element_text(opc_xml *x, const char *name, const char *text);
/* Bytes trusted to be well-formed XML (a template's own markup only). */
void opc_xml_raw(opc_xml *x, const char *s, size_t len);
/* 1 once any call failed. */
int opc_xml_failed(const opc_xml *x);
/* KILN_E_OK, or what the first failure was: KILN_E_NOMEM, KILN_E_INTERNAL
 * (a writer bug) or KILN_E_TOO_LARGE (opc_xml_set_ceiling). */
kiln_status opc_xml_status(const opc_xml *x);
/* The same, with err set to say what failed (at pointer, which may be NULL);
 * for KILN_E_TOO_LARGE with the ceiling and the least size the output
 * reached as err's limit and actual, the message the ceiling's other checks
 * give. Nothing is set while nothing failed. */
kiln_status opc_xml_error(const opc_xml *x, const char *pointer, kiln_error *err);
/* Bytes written so far (exact, before compression). */
size_t opc_xml_size(const opc_xml *x);
/*
 * The early ceiling check. A large part is deflated as it is written (held
 * in memory compressed), so what it will take in the zip is known while it
 * grows: once its compressed bytes so far, plus what pkg's parts already take
 * in the zip (stored parts and finished XML parts), pass max_bytes, the
 * package can no longer fit, and x fails with KILN_E_TOO_LARGE right away. A
 * writer that checks opc_xml_failed as it goes (per row of a long table)
 * stops there instead of writing the rest. pkg is only read, and must outlive
 * x; max_bytes 0 = no ceiling.
 */
void opc_xml_set_ceiling(opc_xml *x, const opc_package *pkg, uint64_t max_bytes);
/* Close every open element, and add the result as a part (compressed).
 * Frees x in every case. KILN_E_NOMEM / KILN_E_INTERNAL / KILN_E_TOO_LARGE
 * (with err's limit and actual set) on failure. This and
 * opc_xml_set_ceiling are opc_package.c's: they know the package. */
kiln_status opc_xml_finish(opc_xml *x, opc_package *pkg, const char *part_name,
                           const char *content_type, kiln_error *err);

/* ---- templates (opc_template.c) ---- */
typedef struct opc_var {
    const char *name;  /* placeholder {{name}} */
    const char *value; /* text, escaped when written */
} opc_var;

/*
 * Write the template file templates/<template_name> into x with every
 * {{name}} replaced by its escaped value. The template holds a whole part,
 * XML declaration included, so x must be fresh from opc_xml_new_bare().
 * A placeholder without a value is KILN_E_INTERNAL (a template bug); a var
 * whose value is NULL fills in nothing. Values are escaped for either text or
 * an attribute (quotes, tab, LF as references), so a placeholder may sit in
 * both.
 */
opc_xml *opc_xml_new_bare(void); /* like opc_xml_new, without the declaration */
kiln_status opc_template_write(opc_xml *x, const char *template_name, const opc_var *vars,
                               size_t var_count, kiln_error *err);

/* The placeholders of a theme template (templates/docx/theme1.xml,
 * templates/pptx/theme1.xml): major_font (headings), minor_font (body) and
 * accent1..accent6 from the spec's theme, Office 2013's accents in the slots
 * its palette does not fill. vars point into accents and the theme. */
#define OPC_THEME_VAR_COUNT 8
typedef struct opc_theme_vars {
    char accents[6][8];
    opc_var vars[OPC_THEME_VAR_COUNT];
} opc_theme_vars;
void opc_theme_vars_init(opc_theme_vars *tv, const kiln_theme *theme);

/* ---- charts (opc_chart.c, opc_chart_workbook.c) ---- */
/*
 * Write chart part number n ("word/charts/chartN.xml" under part_dir "word",
 * "ppt/charts/chartN.xml" under "ppt") with cached values from data, and its
 * embedded workbook ("<part_dir>/embeddings/Microsoft_Excel_Worksheet<n>.xlsx")
 * linked from the chart's own .rels, so the chart draws without Excel and
 * "Edit Data" opens the numbers. text_size is the chart's text size in 1/100
 * pt (axis labels, legend, axis titles; the title is 1.4 times it), 0 =
 * Office's 10 pt. tmp_dir is where libxlsxwriter may write its scratch files. The caller then
 * relates its own part to the chart part with opc_rel_add(..., OPC_REL_CHART,
 * "charts/chartN.xml", 0).
 */
kiln_status opc_chart_add(opc_package *pkg, const char *part_dir, unsigned n,
                          const kiln_chart_data *data, const kiln_theme *theme,
                          unsigned text_size, const char *tmp_dir, kiln_error *err);

/* The embedded workbook alone: an .xlsx in memory (malloc'd, caller frees)
 * with categories in column A and one column per series, names in row 1. */
kiln_status opc_chart_workbook(const kiln_chart_data *data, const char *tmp_dir,
                               unsigned char **out, size_t *out_len, kiln_error *err);

/* The embedded workbook's layout, which the chart's references and the
 * workbook must agree on: one sheet, categories in column A from row 2,
 * series i's name in row 1 and its values from row 2 of column
 * OPC_CHART_SERIES_COL(i). */
#define OPC_CHART_SHEET "Sheet1"
/* Column of series i in the embedded workbook (0-based; 0 is the categories). */
#define OPC_CHART_SERIES_COL(i) ((uint32_t)(i) + 1u)
/* The most series a chart's workbook holds (Excel's 16384 columns, less A). */
#define OPC_CHART_MAX_SERIES 16383u

#endif
