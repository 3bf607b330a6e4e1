/*
 * test_opc.c - the OPC layer (artifacts/opc/): the XML writer and its one
 * escaping path, packages written into a kiln_output and read back with
 * libzip, the checks that catch writer bugs, templates, and a minimal .docx
 * through ooxml-check ($OOXML_CHECK, else ../shared/tools/ooxml-check beside
 * the checkout, where make runs the tests; a missing checker fails the test).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"
#include <libxml/globals.h>
#include <libxml/xmlerror.h>
#include <zip.h>

#include "artifacts/layout/chart_data.h"
#include "artifacts/opc/opc.h"
#include "artifacts/opc/opc_internal.h"
#include "common/error.h"
#include "common/output.h"
#include "common/banned.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    return test_dir_make(dir, sizeof dir, "opc");
}

static int teardown(void **state)
{
    (void)state;
    return test_dir_remove(dir);
}

static char *path_in(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

/* Number of directory entries other than . and .. */
static int entries(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

/* Finish x and compare what it wrote with expect (a NUL-terminated copy is
 * made so the comparison reports readable text). */
static void expect_xml(opc_xml *x, const char *expect)
{
    unsigned char *data;
    size_t len;
    kiln_error err;
    assert_int_equal(opc_xml_take(x, &data, &len, &err), KILN_E_OK);
    char *text = malloc(len + 1);
    assert_non_null(text);
    memcpy(text, data, len);
    text[len] = '\0';
    assert_string_equal(text, expect);
    free(text);
    free(data);
}

/* ---- the XML writer ---- */

static void test_declaration(void **state)
{
    (void)state;
    opc_xml *x = opc_xml_new();
    assert_non_null(x);
    opc_xml_empty(x, "a");
    expect_xml(x, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<a/>");

    x = opc_xml_new_bare();
    assert_non_null(x);
    assert_int_equal(opc_xml_size(x), 0);
    expect_xml(x, "");
}

static void test_markup_escaped(void **state)
{
    (void)state;
    opc_xml *x = opc_xml_new_bare();
    const char *t = "a & b < c > d \"q\" 'x' ]]>";
    opc_xml_start(x, "t");
    opc_xml_attr(x, "v", "& < > \" ' \t\n\r");
    opc_xml_text(x, t, strlen(t));
    opc_xml_end(x);
    expect_xml(x, "<t v=\"&amp; &lt; &gt; &quot; ' &#9;&#10;&#13;\">"
                  "a &amp; b &lt; c &gt; d \"q\" 'x' ]]&gt;</t>");
}

static void test_forbidden_controls_dropped(void **state)
{
    (void)state;
    /* NUL, C0 controls and DEL's neighbours: tab, LF stay in text, CR
     * becomes a reference, the others vanish. */
    static const char t[] = "a\x01"
                            "b\0c\td\ne\rf\x1f\x7fg\x0b\x0c";
    opc_xml *x = opc_xml_new_bare();
    opc_xml_start(x, "t");
    opc_xml_attr_len(x, "v", t, sizeof t - 1);
    opc_xml_text(x, t, sizeof t - 1);
    opc_xml_end(x);
    expect_xml(x, "<t v=\"abc&#9;d&#10;e&#13;f\x7fg\">abc\td\ne&#13;f\x7fg</t>");
}

static void test_invalid_utf8_dropped(void **state)
{
    (void)state;
    static const char t[] =
        "A\xff"                                             /* never valid */
        "B\xc3"                                             /* truncated two-byte sequence */
        "C\xc0\xaf"                                         /* overlong "/" */
        "D\xe0\x80\xaf"                                     /* overlong, three bytes */
        "E\xed\xa0\x80"                                     /* a surrogate (U+D800) */
        "F\xef\xbf\xbe"                                     /* U+FFFE */
        "G\xef\xbf\xbf"                                     /* U+FFFF */
        "H\xf4\x90\x80\x80"                                 /* past U+10FFFF */
        "I\x80\xbf"                                         /* stray continuation bytes */
        "J\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbd" /* é € 😀 U+FFFD: kept */
        "K\xe2\x82";                                        /* truncated at the end */
    opc_xml *x = opc_xml_new_bare();
    opc_xml_start(x, "t");
    opc_xml_text(x, t, sizeof t - 1);
    opc_xml_end(x);
    expect_xml(x, "<t>ABCDEFGHIJ\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbdK</t>");
}

static void test_clean_text_untouched(void **state)
{
    (void)state;
    /* A long clean text (non-ASCII included) comes out byte for byte, and
     * len is honoured: the bytes after it are not read. */
    size_t n = 100000;
    char *t = malloc(n + 8);
    assert_non_null(t);
    for (size_t i = 0; i < n; i += 4)
        memcpy(t + i, i % 8 ? "abc " : "\xc3\xa9z ", 4);
    memcpy(t + n, "&<\x01", 4);
    opc_xml *x = opc_xml_new_bare();
    opc_xml_start(x, "t");
    opc_xml_text(x, t, n);
    opc_xml_end(x);
    unsigned char *data;
    size_t len;
    kiln_error err;
    assert_int_equal(opc_xml_take(x, &data, &len, &err), KILN_E_OK);
    assert_int_equal(len, n + strlen("<t></t>"));
    assert_memory_equal(data + 3, t, n);
    free(data);
    free(t);
}

static void test_escaped_text_long(void **state)
{
    (void)state;
    /* Text needing many references grows the scratch buffer as it goes. */
    size_t n = 50000;
    char *t = malloc(n);
    assert_non_null(t);
    memset(t, '"', n);
    opc_xml *x = opc_xml_new_bare();
    opc_xml_start(x, "t");
    opc_xml_attr_len(x, "v", t, n);
    opc_xml_end(x);
    unsigned char *data;
    size_t len;
    kiln_error err;
    assert_int_equal(opc_xml_take(x, &data, &len, &err), KILN_E_OK);
    assert_int_equal(len, strlen("<t v=\"\"/>") + n * strlen("&quot;"));
    free(data);
    free(t);
}

static void test_numbers(void **state)
{
    (void)state;
    opc_xml *x = opc_xml_new_bare();
    opc_xml_start(x, "n");
    opc_xml_attr_double(x, "a", 0.1);
    opc_xml_attr_double(x, "b", 1.0 / 3);
    opc_xml_attr_double(x, "c", 12.5);
    opc_xml_attr_double(x, "d", 100);
    opc_xml_attr_double(x, "e", -0.0);
    opc_xml_attr_double(x, "f", 1e21);
    opc_xml_attr_double(x, "g", -2.75);
    opc_xml_attr_int(x, "h", INT64_MIN);
    opc_xml_attr_int(x, "i", 0);
    opc_xml_attr_uint(x, "j", UINT64_MAX);
    opc_xml_attr_color(x, "k", 0x1F4E79);
    opc_xml_attr_color(x, "l", 0);
    opc_xml_attr_color(x, "m", 0xFFFFFF);
    opc_xml_end(x);
    opc_xml_val_int(x, "o", "w:val", -12);
    opc_xml_val(x, "p", "w:val", "x&y");
    opc_xml_element_text(x, "q", "1 < 2");
    opc_xml_element_text(x, "r", NULL);
    expect_xml(x, "<n a=\"0.1\" b=\"0.33333333333333331\" c=\"12.5\" d=\"100\" e=\"0\" "
                  "f=\"1e+21\" g=\"-2.75\" h=\"-9223372036854775808\" i=\"0\" "
                  "j=\"18446744073709551615\" k=\"1F4E79\" l=\"000000\" m=\"FFFFFF\"/>"
                  "<o w:val=\"-12\"/><p w:val=\"x&amp;y\"/><q>1 &lt; 2</q><r/>");
}

static void test_elements_closed_on_finish(void **state)
{
    (void)state;
    opc_xml *x = opc_xml_new_bare();
    opc_xml_start(x, "a");
    opc_xml_start(x, "b");
    opc_xml_text(x, "t", 1);
    opc_xml_start(x, "c");
    opc_xml_text(x, "", 0); /* nothing to write keeps <c/> empty */
    expect_xml(x, "<a><b>t<c/></b></a>");
}

static void test_failure_is_sticky(void **state)
{
    (void)state;
    opc_xml *x = opc_xml_new_bare();
    opc_xml_start(x, "a");
    opc_xml_end(x);
    assert_false(opc_xml_failed(x));
    size_t size = opc_xml_size(x);
    assert_int_equal(size, strlen("<a/>"));
    opc_xml_end(x); /* nothing open: a writer bug */
    assert_true(opc_xml_failed(x));
    opc_xml_start(x, "b");
    opc_xml_text(x, "text", 4);
    opc_xml_attr(x, "v", "1");
    assert_true(opc_xml_failed(x));
    assert_int_equal(opc_xml_size(x), size); /* nothing more was written */

    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    kiln_error err;
    assert_int_equal(opc_xml_finish(x, pkg, "word/document.xml", OPC_CT_DOCX_DOCUMENT, &err),
                     KILN_E_INTERNAL);
    assert_non_null(strstr(err.message, "word/document.xml"));
    assert_int_equal(opc_package_bytes(pkg), 0);
    opc_package_free(pkg);
}

static void test_bad_values_fail(void **state)
{
    (void)state;
    int32_t colors[] = {-1, 0x1000000};
    for (size_t i = 0; i < 2; i++) {
        opc_xml *x = opc_xml_new_bare();
        opc_xml_start(x, "a");
        opc_xml_attr_color(x, "c", colors[i]);
        assert_true(opc_xml_failed(x));
        opc_xml_free(x);
    }
    opc_xml *x = opc_xml_new_bare();
    opc_xml_start(x, "a");
    opc_xml_attr_double(x, "d", 1.0 / 0.0);
    assert_true(opc_xml_failed(x));
    opc_xml_free(x);

    x = opc_xml_new_bare();
    opc_xml_attr(x, "v", "1"); /* no element open */
    assert_true(opc_xml_failed(x));
    opc_xml_free(x);

    /* An attribute after a child or text is a writer bug, not memory. */
    x = opc_xml_new_bare();
    opc_xml_start(x, "a");
    opc_xml_empty(x, "b");
    opc_xml_attr_int(x, "v", 1);
    assert_true(opc_xml_failed(x));
    unsigned char *data;
    size_t len;
    kiln_error err;
    assert_int_equal(opc_xml_take(x, &data, &len, &err), KILN_E_INTERNAL);
    assert_non_null(strstr(err.message, "after the element's content"));

    /* Text that is all dropped leaves the start tag open for attributes. */
    x = opc_xml_new_bare();
    opc_xml_start(x, "a");
    opc_xml_text(x, "\x01", 1);
    opc_xml_attr(x, "v", "1");
    expect_xml(x, "<a v=\"1\"/>");
    opc_xml_free(NULL);
}

static void test_held_back_elements(void **state)
{
    (void)state;
    /* An element is written whole when it closes with no content, and
     * handed to libxml2 with its attributes when it gets some: the bytes
     * are the same either way. */
    opc_xml *x = opc_xml_new_bare();
    opc_xml_start(x, "a");
    opc_xml_attr(x, "x", "1 & 2");
    assert_int_equal(opc_xml_size(x), strlen("<a x=\"1 &amp; 2\"")); /* exact while held */
    opc_xml_start(x, "b");
    opc_xml_attr_int(x, "n", -5);
    opc_xml_attr(x, "e", "");
    opc_xml_end(x);
    opc_xml_start(x, "c");
    opc_xml_attr(x, "q", "\"");
    opc_xml_text(x, "t<", 2);
    opc_xml_end(x);
    opc_xml_start(x, "d");
    opc_xml_attr(x, "r", "1");
    opc_xml_raw(x, "<raw/>", 6);
    opc_xml_end(x);
    opc_xml_empty(x, "e");
    opc_xml_end(x);
    expect_xml(x, "<a x=\"1 &amp; 2\"><b n=\"-5\" e=\"\"/><c q=\"&quot;\">t&lt;</c>"
                  "<d r=\"1\"><raw/></d><e/></a>");

    /* Long names and many attributes, on a held-back element and on one
     * handed over. */
    char name[600];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    x = opc_xml_new_bare();
    for (int pass = 0; pass < 2; pass++) {
        opc_xml_start(x, name);
        for (int i = 0; i < 40; i++)
            opc_xml_attr_int(x, name, i);
        if (pass == 1)
            opc_xml_text(x, "t", 1);
        opc_xml_end(x);
    }
    unsigned char *data;
    size_t len;
    kiln_error err;
    assert_int_equal(opc_xml_take(x, &data, &len, &err), KILN_E_OK);
    size_t attrs = 0;
    for (int i = 0; i < 40; i++)
        attrs += 1 + strlen(name) + 2 + (i < 10 ? 1 : 2) + 1;
    size_t tag = 1 + strlen(name) + attrs;
    assert_int_equal(len, tag + 2 + tag + 1 + 1 + 2 + strlen(name) + 1);
    assert_memory_equal(data + tag, "/>", 2);
    assert_memory_equal(data + tag + 2 + tag, ">t</", 4);
    free(data);

    /* Names libxml2 would refuse are writer bugs. */
    x = opc_xml_new_bare();
    opc_xml_start(x, "");
    assert_int_equal(opc_xml_status(x), KILN_E_INTERNAL);
    opc_xml_free(x);
    x = opc_xml_new_bare();
    opc_xml_start(x, "a");
    opc_xml_attr(x, "", "v");
    assert_int_equal(opc_xml_status(x), KILN_E_INTERNAL);
    assert_int_equal(opc_xml_error(x, "/p", &err), KILN_E_INTERNAL);
    assert_string_equal(err.pointer, "/p");
    opc_xml_free(x);
}

/* n bytes of text deflate can hardly shrink (letters from a generator), so
 * a part of them passes a ceiling near n. */
static char *noise(size_t n, uint32_t seed)
{
    char *t = malloc(n);
    assert_non_null(t);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        t[i] = (char)('A' + (seed >> 16) % 58); /* A-z: '\\', '^', '`' are fine in text */
    }
    return t;
}

static void test_large_part_deflated(void **state)
{
    (void)state;
    /* A part past 64 KB is held deflated; taking it inflates it back. */
    size_t n = 3u << 20;
    char *t = noise(n, 1);
    opc_xml *x = opc_xml_new_bare();
    for (size_t i = 0; i < n; i += 1024) {
        opc_xml_start(x, "p");
        opc_xml_attr_uint(x, "i", i);
        opc_xml_text(x, t + i, 1024);
        opc_xml_end(x);
    }
    size_t size = opc_xml_size(x);
    unsigned char *data;
    size_t len;
    kiln_error err;
    assert_int_equal(opc_xml_take(x, &data, &len, &err), KILN_E_OK);
    assert_int_equal(len, size);
    assert_memory_equal(data, "<p i=\"0\">", 9);
    assert_memory_equal(data + 9, t, 1024);
    assert_memory_equal(data + len - 1024 - 4, t + n - 1024, 1024);
    assert_memory_equal(data + len - 4, "</p>", 4);
    free(data);
    free(t);
}

static void test_ceiling_stops_writer(void **state)
{
    (void)state;
    kiln_error err;
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    void *image = calloc(1, 1000);
    assert_non_null(image);
    assert_int_equal(opc_default_add(pkg, "png", OPC_CT_PNG, &err), KILN_E_OK);
    assert_int_equal(opc_part_add(pkg, "word/media/a.png", NULL, image, 1000, 0, &err),
                     KILN_E_OK);

    /* The compressed bytes so far plus the stored image pass 200 KB: the
     * writer fails at once and writes nothing more. */
    size_t n = 1u << 20;
    char *t = noise(n, 2);
    opc_xml *x = opc_xml_new();
    opc_xml_set_ceiling(x, pkg, 200000);
    opc_xml_start(x, "w:document");
    size_t written = 0;
    while (!opc_xml_failed(x) && written < n) {
        opc_xml_element_text(x, "w:t", NULL);
        opc_xml_text(x, t + written, 4096);
        written += 4096;
    }
    assert_int_equal(opc_xml_status(x), KILN_E_TOO_LARGE);
    assert_true(written < 400000); /* stopped near the ceiling, not at the end */
    size_t size = opc_xml_size(x);
    opc_xml_text(x, t, 4096);
    assert_int_equal(opc_xml_size(x), size);
    assert_int_equal(opc_xml_error(x, NULL, &err), KILN_E_TOO_LARGE);
    assert_int_equal(err.limit, 200000);
    assert_true(err.actual > 200000 && err.actual < 260000); /* deflate emits ~32 KB blocks */
    assert_int_equal(opc_xml_finish(x, pkg, "word/document.xml", OPC_CT_DOCX_DOCUMENT, &err),
                     KILN_E_TOO_LARGE);
    assert_int_equal(err.limit, 200000);
    assert_non_null(strstr(err.message, "size ceiling of 200000 bytes"));
    assert_null(opc_part_find(pkg, "word/document.xml", strlen("word/document.xml")));

    /* A package already past the ceiling fails the writer at once; no
     * ceiling (0) and a ceiling not reached leave it be. */
    x = opc_xml_new();
    opc_xml_set_ceiling(x, pkg, 999);
    assert_int_equal(opc_xml_status(x), KILN_E_TOO_LARGE);
    opc_xml_free(x);
    x = opc_xml_new();
    opc_xml_set_ceiling(x, pkg, 0);
    opc_xml_text(x, t, n);
    assert_false(opc_xml_failed(x));
    opc_xml_free(x);
    x = opc_xml_new();
    opc_xml_set_ceiling(x, pkg, 2u << 20);
    opc_xml_start(x, "a");
    opc_xml_text(x, t, n);
    assert_int_equal(opc_xml_finish(x, pkg, "word/document.xml", OPC_CT_DOCX_DOCUMENT, &err),
                     KILN_E_OK);
    /* What the parts take in the zip: the image and the deflated part. */
    assert_true(opc_package_packed_bytes(pkg) > 1000 + n / 2);
    assert_int_equal(
        opc_package_bytes(pkg),
        1000 + strlen("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<a></a>") +
            n);
    free(t);
    opc_package_free(pkg);
}

/* Count what reaches a handler: libxml2's output must never get there. */
static int handler_calls;
static void XMLCDECL count_generic(void *context, const char *msg, ...)
{
    (void)context;
    (void)msg;
    handler_calls++;
}
static void XMLCALL count_structured(void *context, xmlErrorPtr error)
{
    (void)context;
    (void)error;
    handler_calls++;
}

static void test_libxml2_silenced(void **state)
{
    (void)state;
    /* libxml2 reports a refused write (here: the ceiling) through its error
     * handlers. While writers exist they are silent ones; the handlers that
     * were there come back when the last writer goes, in any order. */
    int marker;
    xmlSetGenericErrorFunc(&marker, count_generic);
    xmlSetStructuredErrorFunc(&marker, count_structured);
    handler_calls = 0;
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    char *t = noise(1u << 20, 3);
    opc_xml *a = opc_xml_new();
    opc_xml *b = opc_xml_new_bare();
    assert_true(xmlGenericError != count_generic);
    assert_true(xmlStructuredError != count_structured);
    opc_xml_set_ceiling(b, pkg, 100000);
    opc_xml_start(b, "a");
    opc_xml_text(b, t, 1u << 20);
    assert_int_equal(opc_xml_status(b), KILN_E_TOO_LARGE);
    opc_xml_free(a); /* the first made goes first */
    assert_true(xmlGenericError != count_generic);
    kiln_error err;
    assert_int_equal(opc_xml_finish(b, pkg, "word/document.xml", OPC_CT_DOCX_DOCUMENT, &err),
                     KILN_E_TOO_LARGE);
    assert_int_equal(handler_calls, 0);
    assert_true(xmlGenericError == count_generic);
    assert_true(xmlGenericErrorContext == &marker);
    assert_true(xmlStructuredError == count_structured);
    assert_true(xmlStructuredErrorContext == &marker);
    xmlSetGenericErrorFunc(NULL, NULL);
    xmlSetStructuredErrorFunc(NULL, NULL);
    free(t);
    opc_package_free(pkg);
}

/* ---- templates ---- */

static void test_template_placeholders(void **state)
{
    (void)state;
    static const char tpl[] = "<?xml version=\"1.0\"?>\n<a b=\"{{v}}\">{{t}}{{empty}}</a>";
    opc_var vars[] = {{"t", "<y> & \x01z"}, {"v", "\"x\"\n&"}, {"empty", NULL}};
    opc_xml *x = opc_xml_new_bare();
    kiln_error err;
    assert_int_equal(opc_template_write_bytes(x, "t.xml", tpl, sizeof tpl - 1, vars, 3, &err),
                     KILN_E_OK);
    expect_xml(x, "<?xml version=\"1.0\"?>\n"
                  "<a b=\"&quot;x&quot;&#10;&amp;\">&lt;y&gt; &amp; z</a>");
}

static void test_template_errors(void **state)
{
    (void)state;
    static const char unknown[] = "<a>{{nope}}</a>";
    static const char unclosed[] = "<a>{{t</a>";
    opc_var vars[] = {{"t", "x"}};
    kiln_error err;
    opc_xml *x = opc_xml_new_bare();
    assert_int_equal(opc_template_write_bytes(x, "u.xml", unknown, sizeof unknown - 1, vars, 1,
                                              &err),
                     KILN_E_INTERNAL);
    assert_non_null(strstr(err.message, "{{nope}}"));
    assert_non_null(strstr(err.message, "u.xml"));
    opc_xml_free(x);

    x = opc_xml_new_bare();
    assert_int_equal(opc_template_write_bytes(x, "c.xml", unclosed, sizeof unclosed - 1, vars, 1,
                                              &err),
                     KILN_E_INTERNAL);
    opc_xml_free(x);

    x = opc_xml_new_bare();
    assert_int_equal(opc_template_write(x, "docx/no-such-template.xml", vars, 1, &err),
                     KILN_E_INTERNAL);
    assert_non_null(strstr(err.message, "docx/no-such-template.xml"));
    opc_xml_free(x);
}

/* ---- packages ---- */

static const kiln_metadata test_meta = {
    .title = "Q3 <Report> & \"more\"",
    .author = "Ada Lovelace",
    .subject = "Revenue",
    .keywords = "finance, q3",
    .company = "Kiln & Co",
    .has_created = 1,
    .created = 1714555800, /* 2024-05-01T09:30:00Z */
};

static void add_xml_part(opc_package *pkg, const char *name, const char *ct, const char *root)
{
    opc_xml *x = opc_xml_new();
    assert_non_null(x);
    opc_xml_start(x, root);
    opc_xml_end(x);
    kiln_error err;
    assert_int_equal(opc_xml_finish(x, pkg, name, ct, &err), KILN_E_OK);
}

/* A small package: document with styles, an image, a hyperlink, a chart
 * with an embedding reached through "..", core and app properties. */
static opc_package *sample_package(void)
{
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    kiln_error err;
    /* Relationships may be declared before their source part exists. */
    assert_int_equal(opc_rel_add(pkg, "", OPC_REL_OFFICE_DOCUMENT, "word/document.xml", 0, &err),
                     1);
    assert_int_equal(opc_rel_add(pkg, "word/document.xml", OPC_REL_STYLES, "styles.xml", 0, &err),
                     1);
    assert_int_equal(opc_rel_add(pkg, "word/document.xml", OPC_REL_HYPERLINK,
                                 "https://example.com/?a=1&b=\"2\"", 1, &err),
                     2);
    assert_int_equal(opc_rel_add(pkg, "word/document.xml", OPC_REL_IMAGE, "media/image1.png", 0,
                                 &err),
                     3);
    assert_int_equal(opc_rel_add(pkg, "word/document.xml", OPC_REL_CHART, "charts/chart1.xml", 0,
                                 &err),
                     4);
    assert_int_equal(opc_rel_add(pkg, "word/charts/chart1.xml", OPC_REL_PACKAGE,
                                 "../embeddings/Microsoft_Excel_Worksheet1.xlsx", 0, &err),
                     1);
    add_xml_part(pkg, "word/document.xml", OPC_CT_DOCX_DOCUMENT, "w:document");
    add_xml_part(pkg, "word/styles.xml", OPC_CT_DOCX_STYLES, "w:styles");
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    assert_int_equal(opc_default_add(pkg, "png", OPC_CT_PNG, &err), KILN_E_OK);
    assert_int_equal(opc_default_add(pkg, "png", OPC_CT_PNG, &err), KILN_E_OK); /* twice: fine */
    assert_int_equal(opc_default_add(pkg, "xlsx", OPC_CT_XLSX, &err), KILN_E_OK);
    assert_int_equal(opc_part_add_copy(pkg, "word/media/image1.png", OPC_CT_PNG, png, sizeof png,
                                       0, &err),
                     KILN_E_OK);
    add_xml_part(pkg, "word/charts/chart1.xml", OPC_CT_CHART, "c:chartSpace");
    assert_int_equal(opc_part_add_copy(pkg, "word/embeddings/Microsoft_Excel_Worksheet1.xlsx",
                                       NULL, "PK", 2, 0, &err),
                     KILN_E_OK);
    assert_int_equal(opc_core_add(pkg, &test_meta, &err), KILN_E_OK);
    assert_int_equal(opc_app_add(pkg, &test_meta, NULL, &err), KILN_E_OK);
    return pkg;
}

static kiln_status write_package(opc_package *pkg, const char *name, uint64_t max,
                                 kiln_error *err)
{
    kiln_output out;
    kiln_status st = kiln_output_open(&out, path_in(name), max, err);
    assert_int_equal(st, KILN_E_OK);
    st = opc_package_write(pkg, &out, err);
    if (st != KILN_E_OK) {
        kiln_output_abort(&out);
        return st;
    }
    return kiln_output_commit(&out, NULL, err);
}

/* A member of the zip as a NUL-terminated string (caller frees). */
static char *read_member(zip_t *za, const char *name)
{
    zip_stat_t st;
    assert_int_equal(zip_stat(za, name, 0, &st), 0);
    char *buf = malloc(st.size + 1);
    assert_non_null(buf);
    zip_file_t *f = zip_fopen(za, name, 0);
    assert_non_null(f);
    assert_int_equal(zip_fread(f, buf, st.size), (zip_int64_t)st.size);
    zip_fclose(f);
    buf[st.size] = '\0';
    return buf;
}

static void test_package_written(void **state)
{
    (void)state;
    opc_package *pkg = sample_package();
    kiln_error err;
    assert_int_equal(write_package(pkg, "a.docx", 0, &err), KILN_E_OK);
    opc_package_free(pkg);

    int zerr;
    zip_t *za = zip_open(path_in("a.docx"), ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    assert_non_null(za);
    static const char *const order[] = {
        "[Content_Types].xml",
        "_rels/.rels",
        "word/document.xml",
        "word/styles.xml",
        "word/media/image1.png",
        "word/charts/chart1.xml",
        "word/embeddings/Microsoft_Excel_Worksheet1.xlsx",
        "docProps/core.xml",
        "docProps/app.xml",
        "word/_rels/document.xml.rels",
        "word/charts/_rels/chart1.xml.rels",
    };
    size_t n = sizeof order / sizeof order[0];
    assert_int_equal(zip_get_num_entries(za, 0), n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(zip_get_name(za, i, 0), order[i]);
        zip_stat_t st;
        assert_int_equal(zip_stat_index(za, i, 0, &st), 0);
        int stored = strstr(order[i], ".png") || strstr(order[i], ".xlsx");
        assert_int_equal(st.comp_method, stored ? ZIP_CM_STORE : ZIP_CM_DEFLATE);
        struct tm tm;
        localtime_r(&st.mtime, &tm);
        assert_int_equal(tm.tm_year, 80);
        assert_int_equal(tm.tm_mon, 0);
        assert_int_equal(tm.tm_mday, 1);
    }

    char *types = read_member(za, "[Content_Types].xml");
    assert_non_null(
        strstr(types, "<Default Extension=\"rels\" ContentType=\"" OPC_CT_RELS "\"/>"));
    assert_non_null(
        strstr(types, "<Default Extension=\"xml\" ContentType=\"application/xml\"/>"));
    assert_non_null(strstr(types, "<Default Extension=\"png\" ContentType=\"image/png\"/>"));
    assert_non_null(
        strstr(types,
               "<Override PartName=\"/word/document.xml\" ContentType=\"" OPC_CT_DOCX_DOCUMENT
               "\"/>"));
    assert_non_null(strstr(types, "<Override PartName=\"/word/styles.xml\""));
    assert_non_null(strstr(types, "<Override PartName=\"/word/charts/chart1.xml\""));
    assert_non_null(strstr(types,
                           "<Override PartName=\"/docProps/core.xml\" ContentType=\"" OPC_CT_CORE
                           "\"/>"));
    assert_non_null(strstr(types, "<Override PartName=\"/docProps/app.xml\""));
    assert_null(strstr(types, "image1.png")); /* covered by its Default */
    assert_null(strstr(types, "Worksheet1.xlsx"));
    assert_null(strstr(types, ".rels\"")); /* no Override for a .rels part */
    free(types);

    char *rels = read_member(za, "_rels/.rels");
    assert_non_null(strstr(rels, "<Relationship Id=\"rId1\" Type=\"" OPC_REL_OFFICE_DOCUMENT
                                 "\" Target=\"word/document.xml\"/>"));
    assert_non_null(strstr(rels, "<Relationship Id=\"rId2\" Type=\"" OPC_REL_CORE
                                 "\" Target=\"docProps/core.xml\"/>"));
    assert_non_null(strstr(rels, "<Relationship Id=\"rId3\" Type=\"" OPC_REL_APP
                                 "\" Target=\"docProps/app.xml\"/>"));
    free(rels);

    rels = read_member(za, "word/_rels/document.xml.rels");
    assert_non_null(strstr(rels, "<Relationship Id=\"rId1\" Type=\"" OPC_REL_STYLES
                                 "\" Target=\"styles.xml\"/>"));
    assert_non_null(strstr(rels, "<Relationship Id=\"rId2\" Type=\"" OPC_REL_HYPERLINK "\" "
                                 "Target=\"https://example.com/?a=1&amp;b=%222%22\" "
                                 "TargetMode=\"External\"/>"));
    assert_non_null(
        strstr(rels, "Id=\"rId3\" Type=\"" OPC_REL_IMAGE "\" Target=\"media/image1.png\"/>"));
    free(rels);

    char *core = read_member(za, "docProps/core.xml");
    assert_non_null(strstr(core, "<dc:title>Q3 &lt;Report&gt; &amp; \"more\"</dc:title>"));
    assert_non_null(strstr(core, "<dc:creator>Ada Lovelace</dc:creator>"));
    assert_non_null(strstr(core, "<cp:lastModifiedBy>Ada Lovelace</cp:lastModifiedBy>"));
    assert_non_null(strstr(core, "<cp:keywords>finance, q3</cp:keywords>"));
    assert_non_null(strstr(
        core,
        "<dcterms:created xsi:type=\"dcterms:W3CDTF\">2024-05-01T09:30:00Z</dcterms:created>"));
    assert_non_null(strstr(
        core,
        "<dcterms:modified xsi:type=\"dcterms:W3CDTF\">2024-05-01T09:30:00Z</dcterms:modified>"));
    assert_null(strstr(core, "dc:description")); /* absent from the metadata */
    assert_null(strstr(core, "cp:category"));
    free(core);

    char *app = read_member(za, "docProps/app.xml");
    assert_non_null(strstr(app, "<Application>Kiln</Application>"));
    assert_non_null(strstr(app, "<Company>Kiln &amp; Co</Company>"));
    assert_non_null(strstr(app, "<AppVersion>"));
    char *v = strstr(app, "<AppVersion>") + strlen("<AppVersion>");
    assert_true(strspn(v, "0123456789") == 2 && v[2] == '.' && strspn(v + 3, "0123456789") == 4 &&
                v[7] == '<');
    free(app);
    zip_close(za);
}

static void test_package_reproducible(void **state)
{
    (void)state;
    kiln_error err;
    opc_package *pkg = sample_package();
    assert_int_equal(write_package(pkg, "r1.docx", 0, &err), KILN_E_OK);
    opc_package_free(pkg);
    sleep(1); /* a different second: a clock in the output would show */
    pkg = sample_package();
    assert_int_equal(write_package(pkg, "r2.docx", 0, &err), KILN_E_OK);
    opc_package_free(pkg);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cmp -s '%s/r1.docx' '%s/r2.docx'", dir, dir);
    assert_int_equal(system(cmd), 0);
}

/* The bytes of a file (malloc'd). */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    unsigned char *data = malloc((size_t)n + 1);
    assert_non_null(data);
    assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return data;
}

#define NS_W_URI "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

/* A document.xml of paragraphs holding t[0..n) in 4 KB pieces. */
static void write_paragraphs(opc_xml *x, const char *t, size_t n)
{
    opc_xml_start(x, "w:document");
    opc_xml_attr(x, "xmlns:w", NS_W_URI);
    for (size_t i = 0; i + 4096 <= n; i += 4096) {
        opc_xml_start(x, "w:p");
        opc_xml_empty(x, "w:pPr");
        opc_xml_text(x, t + i, 4096);
        opc_xml_end(x);
    }
}

static void test_deflated_part_zipped_as_is(void **state)
{
    (void)state;
    /* A part deflated as it was written goes into the zip byte for byte as
     * if libzip had deflated the plain part itself (same stream, same entry
     * header), and reads back with its CRC checked. */
    size_t n = 2u << 20;
    char *t = noise(n, 4);
    for (size_t i = 0; i < n; i += 97)
        t[i] = ' '; /* some repetition, so deflate has matches to find */
    kiln_error err;
    opc_package *streamed = opc_package_new();
    opc_package *plain = opc_package_new();
    assert_non_null(streamed);
    assert_non_null(plain);
    opc_xml *x = opc_xml_new();
    write_paragraphs(x, t, n);
    size_t size = opc_xml_size(x);
    assert_int_equal(opc_xml_finish(x, streamed, "word/document.xml", OPC_CT_DOCX_DOCUMENT, &err),
                     KILN_E_OK);
    /* The same bytes, plain (opc_xml_take inflates them back), for libzip
     * to deflate. */
    unsigned char *bytes;
    size_t len;
    x = opc_xml_new();
    write_paragraphs(x, t, n);
    assert_int_equal(opc_xml_take(x, &bytes, &len, &err), KILN_E_OK);
    assert_int_equal(len, size + strlen("</w:document>"));
    assert_int_equal(opc_part_add_copy(plain, "word/document.xml", OPC_CT_DOCX_DOCUMENT, bytes,
                                       len, 1, &err),
                     KILN_E_OK);
    opc_package *pkgs[2] = {streamed, plain};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(opc_rel_add(pkgs[i], "", OPC_REL_OFFICE_DOCUMENT, "word/document.xml", 0,
                                     &err),
                         1);
        assert_int_equal(opc_core_add(pkgs[i], &test_meta, &err), KILN_E_OK);
    }
    assert_int_equal(opc_package_bytes(streamed), opc_package_bytes(plain));
    assert_int_equal(write_package(streamed, "s.docx", 0, &err), KILN_E_OK);
    assert_int_equal(write_package(plain, "p.docx", 0, &err), KILN_E_OK);
    opc_package_free(streamed);
    opc_package_free(plain);

    size_t s_len, p_len;
    unsigned char *s_bytes = slurp(path_in("s.docx"), &s_len);
    unsigned char *p_bytes = slurp(path_in("p.docx"), &p_len);
    assert_int_equal(s_len, p_len);
    assert_memory_equal(s_bytes, p_bytes, s_len);
    free(s_bytes);
    free(p_bytes);

    int zerr;
    zip_t *za = zip_open(path_in("s.docx"), ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    assert_non_null(za);
    zip_stat_t st;
    assert_int_equal(zip_stat(za, "word/document.xml", 0, &st), 0);
    assert_int_equal(st.comp_method, ZIP_CM_DEFLATE);
    assert_int_equal(st.size, len);
    assert_true(st.comp_size < len);
    char *back = read_member(za, "word/document.xml"); /* libzip checks the CRC */
    assert_memory_equal(back, bytes, len);
    free(back);
    zip_close(za);
    free(bytes);
    free(t);

    /* And the zip tools agree. */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "unzip -tq '%s' >/dev/null", path_in("s.docx"));
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import sys, zipfile; "
             "sys.exit(zipfile.ZipFile(sys.argv[1]).testzip() is not None)' '%s'",
             path_in("s.docx"));
    assert_int_equal(system(cmd), 0);
}

static void test_ceiling(void **state)
{
    (void)state;
    kiln_error err;
    opc_package *pkg = sample_package();
    assert_int_equal(write_package(pkg, "big.docx", 1000, &err), KILN_E_TOO_LARGE);
    assert_int_equal(err.limit, 1000);
    assert_true(err.actual > 1000);
    assert_int_equal(entries(), 0);
    opc_package_free(pkg);

    /* A stored part alone past the ceiling stops before zipping. */
    pkg = opc_package_new();
    assert_non_null(pkg);
    void *image = calloc(1, 5000);
    assert_non_null(image);
    assert_int_equal(opc_default_add(pkg, "png", OPC_CT_PNG, &err), KILN_E_OK);
    assert_int_equal(opc_part_add(pkg, "media/a.png", NULL, image, 5000, 0, &err), KILN_E_OK);
    assert_int_equal(opc_package_bytes(pkg), 5000);
    assert_int_equal(write_package(pkg, "big.docx", 4000, &err), KILN_E_TOO_LARGE);
    assert_int_equal(err.limit, 4000);
    assert_int_equal(err.actual, 5000);
    assert_int_equal(entries(), 0);
    opc_package_free(pkg);

    /* So does a part deflated as it was written. */
    pkg = opc_package_new();
    assert_non_null(pkg);
    size_t n = 1u << 20;
    char *t = noise(n, 5);
    opc_xml *x = opc_xml_new();
    opc_xml_start(x, "a");
    opc_xml_text(x, t, n);
    assert_int_equal(opc_xml_finish(x, pkg, "a.xml", OPC_CT_XML, &err), KILN_E_OK);
    uint64_t packed = opc_package_packed_bytes(pkg);
    assert_true(packed > n / 2 && packed < n);
    assert_int_equal(write_package(pkg, "big.docx", packed - 1, &err), KILN_E_TOO_LARGE);
    assert_int_equal(err.actual, packed);
    assert_int_equal(entries(), 0);
    free(t);
    opc_package_free(pkg);
}

static void test_bad_part_names(void **state)
{
    (void)state;
    kiln_error err;
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    assert_int_equal(opc_part_add_copy(pkg, "word/document.xml", OPC_CT_XML, "<a/>", 4, 1, &err),
                     KILN_E_OK);
    assert_int_equal(opc_part_add_copy(pkg, "word/document.xml", OPC_CT_XML, "<a/>", 4, 1, &err),
                     KILN_E_INTERNAL);
    assert_non_null(strstr(err.message, "twice"));
    /* Part names are equal ignoring ASCII case. */
    assert_int_equal(opc_part_add_copy(pkg, "Word/Document.XML", OPC_CT_XML, "<a/>", 4, 1, &err),
                     KILN_E_INTERNAL);
    static const char *const bad[] = {
        "/word/x.xml",
        "word/../x.xml",
        "word//x.xml",
        "word/",
        "",
        "./x.xml",
        "word/x.",
        "word/a b.xml",
        "word/_rels/document.xml.rels",
        "[Content_Types].xml",
        "word\\x.xml",
        "word/\xc3\xa9.xml",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* opc_part_add takes the data even on failure (ASan checks it is freed). */
        void *data = malloc(4);
        assert_non_null(data);
        assert_int_equal(opc_part_add(pkg, bad[i], OPC_CT_XML, data, 4, 1, &err),
                         KILN_E_INTERNAL);
    }
    assert_int_equal(opc_package_bytes(pkg), 4);
    assert_int_equal(opc_default_add(pkg, "png", OPC_CT_PNG, &err), KILN_E_OK);
    assert_int_equal(opc_default_add(pkg, "PNG", OPC_CT_JPEG, &err), KILN_E_INTERNAL);
    assert_int_equal(opc_default_add(pkg, ".png", OPC_CT_PNG, &err), KILN_E_INTERNAL);
    opc_package_free(pkg);
}

/* Write pkg expecting KILN_E_INTERNAL with words in the message. */
static void expect_write_internal(opc_package *pkg, const char *words)
{
    kiln_error err;
    assert_int_equal(write_package(pkg, "bad.docx", 0, &err), KILN_E_INTERNAL);
    assert_non_null(strstr(err.message, words));
    assert_int_equal(entries(), 0);
}

static void test_dangling_relationships(void **state)
{
    (void)state;
    kiln_error err;
    /* An internal target that is not a part. */
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    add_xml_part(pkg, "word/document.xml", OPC_CT_DOCX_DOCUMENT, "w:document");
    assert_int_equal(opc_rel_add(pkg, "", OPC_REL_OFFICE_DOCUMENT, "word/document.xml", 0, &err),
                     1);
    assert_int_equal(opc_rel_add(pkg, "word/document.xml", OPC_REL_IMAGE, "media/image9.png", 0,
                                 &err),
                     1);
    expect_write_internal(pkg, "media/image9.png");
    opc_package_free(pkg);

    /* A target climbing out of the package. */
    pkg = opc_package_new();
    assert_non_null(pkg);
    add_xml_part(pkg, "word/document.xml", OPC_CT_DOCX_DOCUMENT, "w:document");
    assert_int_equal(opc_rel_add(pkg, "word/document.xml", OPC_REL_STYLES, "../../styles.xml", 0,
                                 &err),
                     1);
    expect_write_internal(pkg, "../../styles.xml");
    opc_package_free(pkg);

    /* A source that was never added. */
    pkg = opc_package_new();
    assert_non_null(pkg);
    add_xml_part(pkg, "word/styles.xml", OPC_CT_DOCX_STYLES, "w:styles");
    assert_int_equal(opc_rel_add(pkg, "word/document.xml", OPC_REL_STYLES, "styles.xml", 0, &err),
                     1);
    expect_write_internal(pkg, "word/document.xml");
    opc_package_free(pkg);

    /* A part with neither a content type nor a Default. */
    pkg = opc_package_new();
    assert_non_null(pkg);
    assert_int_equal(opc_part_add_copy(pkg, "media/a.gif", NULL, "GIF", 3, 0, &err), KILN_E_OK);
    expect_write_internal(pkg, "media/a.gif");
    opc_package_free(pkg);

    /* External targets are not looked for; absolute internal ones are. */
    pkg = opc_package_new();
    assert_non_null(pkg);
    add_xml_part(pkg, "word/document.xml", OPC_CT_DOCX_DOCUMENT, "w:document");
    add_xml_part(pkg, "word/styles.xml", OPC_CT_DOCX_STYLES, "w:styles");
    assert_int_equal(opc_rel_add(pkg, "", OPC_REL_OFFICE_DOCUMENT, "/word/document.xml", 0, &err),
                     1);
    assert_int_equal(opc_rel_add(pkg, "word/document.xml", OPC_REL_STYLES, "./styles.xml", 0,
                                 &err),
                     1);
    assert_int_equal(opc_rel_add(pkg, "word/document.xml", OPC_REL_HYPERLINK, "nowhere", 1, &err),
                     2);
    assert_int_equal(write_package(pkg, "ok.docx", 0, &err), KILN_E_OK);
    opc_package_free(pkg);
    assert_int_equal(unlink(path_in("ok.docx")), 0);
}

/* ---- a whole .docx through ooxml-check ---- */

#define NS_W "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

static void test_minimal_docx_passes_check(void **state)
{
    (void)state;
    kiln_error err;
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    assert_int_equal(opc_rel_add(pkg, "", OPC_REL_OFFICE_DOCUMENT, "word/document.xml", 0, &err),
                     1);
    unsigned link = opc_rel_add(pkg, "word/document.xml", OPC_REL_HYPERLINK,
                                "https://example.com/a?b=1&c=2", 1, &err);
    assert_int_equal(link, 1);

    opc_xml *x = opc_xml_new();
    assert_non_null(x);
    opc_xml_start(x, "w:document");
    opc_xml_attr(x, "xmlns:w", NS_W);
    opc_xml_attr(x, "xmlns:r", OPC_NS_R);
    opc_xml_start(x, "w:body");
    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:r");
    opc_xml_start(x, "w:t");
    opc_xml_attr(x, "xml:space", "preserve");
    static const char text[] = "Tom & Jerry <3 \x01\x02 caf\xc3\xa9 \xff end ";
    opc_xml_text(x, text, sizeof text - 1);
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_start(x, "w:hyperlink");
    opc_xml_attr(x, "r:id", "rId1");
    opc_xml_start(x, "w:r");
    opc_xml_element_text(x, "w:t", "a link");
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_end(x);
    opc_xml_start(x, "w:sectPr");
    opc_xml_start(x, "w:pgSz");
    opc_xml_attr_int(x, "w:w", 11906);
    opc_xml_attr_int(x, "w:h", 16838);
    /* left open: finish closes them */
    assert_int_equal(opc_xml_finish(x, pkg, "word/document.xml", OPC_CT_DOCX_DOCUMENT, &err),
                     KILN_E_OK);
    assert_int_equal(opc_core_add(pkg, &test_meta, &err), KILN_E_OK);
    assert_int_equal(opc_app_add(pkg, &test_meta, NULL, &err), KILN_E_OK);
    assert_int_equal(write_package(pkg, "min.docx", 0, &err), KILN_E_OK);
    opc_package_free(pkg);

    test_ooxml_check(path_in("min.docx"));
}

/* ---- external targets are valid URIs ---- */

/* The Target of one relationship as opc_relationships_build writes it
 * (still XML-escaped: &amp; for &). Caller frees. */
static char *written_target(const char *target, int external)
{
    opc_rel rel = {.id = 1,
                   .type = (char *)OPC_REL_HYPERLINK,
                   .target = (char *)target,
                   .external = external};
    opc_rel_source source = {.name = (char *)"word/document.xml",
                             .rels = &rel,
                             .count = 1,
                             .cap = 1};
    unsigned char *data;
    size_t len;
    kiln_error err;
    assert_int_equal(opc_relationships_build(&source, &data, &len, &err), KILN_E_OK);
    char *text = malloc(len + 1);
    assert_non_null(text);
    memcpy(text, data, len);
    text[len] = '\0';
    free(data);
    const char *start = strstr(text, "Target=\"");
    assert_non_null(start);
    start += strlen("Target=\"");
    const char *end = strchr(start, '"');
    assert_non_null(end);
    char *out = strndup(start, (size_t)(end - start));
    assert_non_null(out);
    free(text);
    return out;
}

static void expect_target(const char *target, int external, const char *expect)
{
    char *got = written_target(target, external);
    assert_string_equal(got, expect);
    free(got);
}

static void test_external_targets_percent_encoded(void **state)
{
    (void)state;
    /* Space, quotes and a UTF-8 letter become %XX (upper-case hex); the
     * query's & stays (escaped for XML only). */
    expect_target("https://example.com/a b?q=\"x\"&y=\xc3\xbc", 1,
                  "https://example.com/a%20b?q=%22x%22&amp;y=%C3%BC");
    /* Every character RFC 3986 does not allow, and controls (which XML
     * would drop). */
    expect_target("https://example.com/<>\\^`{|}", 1,
                  "https://example.com/%3C%3E%5C%5E%60%7B%7C%7D");
    expect_target("https://example.com/tab\there\x01\x7f", 1,
                  "https://example.com/tab%09here%01%7F");
    /* Existing escapes are kept; a % that starts none is escaped itself. */
    expect_target("https://example.com/a%20b%2Fc?p=100%&q=%zz&r=%4", 1,
                  "https://example.com/a%20b%2Fc?p=100%25&amp;q=%25zz&amp;r=%254");
    /* Every other URI character is left alone. */
    expect_target("https://user:pw@example.com:8080/p/a;b=c/~d-e_f.g!$'()*+,?x=[1]#frag", 1,
                  "https://user:pw@example.com:8080/p/a;b=c/~d-e_f.g!$'()*+,?x=[1]#frag");
    expect_target("mailto:zo\xc3\xab@example.com?subject=Hi there", 1,
                  "mailto:zo%C3%AB@example.com?subject=Hi%20there");
    /* Internal targets are part names and are written as they are. */
    expect_target("media/image1.png", 0, "media/image1.png");
}

/* A hyperlink with such a URL makes a package ooxml-check accepts. */
static void test_encoded_target_passes_check(void **state)
{
    (void)state;
    kiln_error err;
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    assert_int_equal(opc_rel_add(pkg, "", OPC_REL_OFFICE_DOCUMENT, "word/document.xml", 0, &err),
                     1);
    assert_int_equal(opc_rel_add(pkg, "word/document.xml", OPC_REL_HYPERLINK,
                                 "https://example.com/a b?q=\"x\"&y=\xc3\xbc|{}", 1, &err),
                     1);
    opc_xml *x = opc_xml_new();
    assert_non_null(x);
    opc_xml_start(x, "w:document");
    opc_xml_attr(x, "xmlns:w", NS_W);
    opc_xml_attr(x, "xmlns:r", OPC_NS_R);
    opc_xml_start(x, "w:body");
    opc_xml_start(x, "w:p");
    opc_xml_start(x, "w:hyperlink");
    opc_xml_attr(x, "r:id", "rId1");
    opc_xml_start(x, "w:r");
    opc_xml_element_text(x, "w:t", "a link");
    assert_int_equal(opc_xml_finish(x, pkg, "word/document.xml", OPC_CT_DOCX_DOCUMENT, &err),
                     KILN_E_OK);
    assert_int_equal(opc_core_add(pkg, &test_meta, &err), KILN_E_OK);
    assert_int_equal(opc_app_add(pkg, &test_meta, NULL, &err), KILN_E_OK);
    assert_int_equal(write_package(pkg, "link.docx", 0, &err), KILN_E_OK);
    opc_package_free(pkg);

    int zerr;
    zip_t *za = zip_open(path_in("link.docx"), ZIP_RDONLY, &zerr);
    assert_non_null(za);
    char *rels = read_member(za, "word/_rels/document.xml.rels");
    assert_non_null(
        strstr(rels, "Target=\"https://example.com/a%20b?q=%22x%22&amp;y=%C3%BC%7C%7B%7D\""));
    free(rels);
    zip_close(za);
    test_ooxml_check(path_in("link.docx"));
}

/* ---- chart titles ---- */

/* Chart 1 of a column chart with these titles, as written. Caller frees. */
static char *chart_xml(const char *title, const char *x_title, const char *y_title)
{
    static const double values[] = {1, 2};
    static const char *categories[] = {"A", "B"};
    kiln_chart chart = {.kind = KILN_CHART_COLUMN,
                        .title = title,
                        .x_title = x_title,
                        .y_title = y_title,
                        .legend = KILN_LEGEND_NONE,
                        .pointer = "/blocks/0"};
    kiln_chart_series_data series = {.name = "S", .values = values, .color = 0x4472C4};
    kiln_chart_data data = {.chart = &chart,
                            .point_count = 2,
                            .categories = categories,
                            .series = &series,
                            .series_count = 1};
    kiln_theme theme = {.font = "Calibri",
                        .heading_font = "Calibri",
                        .mono_font = "Consolas",
                        .font_size = 11,
                        .accent_colors = {0x4472C4},
                        .accent_count = 1};
    kiln_error err;
    opc_package *pkg = opc_package_new();
    assert_non_null(pkg);
    kiln_status st = opc_chart_add(pkg, "word", 1, &data, &theme, 0, dir, &err);
    if (st != KILN_E_OK)
        fprintf(stderr, "opc_chart_add: %s\n", err.message);
    assert_int_equal(st, KILN_E_OK);
    assert_int_equal(write_package(pkg, "chart.docx", 0, &err), KILN_E_OK);
    opc_package_free(pkg);
    int zerr;
    zip_t *za = zip_open(path_in("chart.docx"), ZIP_RDONLY, &zerr);
    assert_non_null(za);
    char *xml = read_member(za, "word/charts/chart1.xml");
    zip_close(za);
    assert_int_equal(unlink(path_in("chart.docx")), 0);
    return xml;
}

static size_t count_of(const char *haystack, const char *needle)
{
    size_t n = 0;
    for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* An empty title is no title: LibreOffice draws a c:title with an empty
 * a:t as a "main-title" placeholder. */
static void test_empty_chart_titles(void **state)
{
    (void)state;
    char *xml = chart_xml("", "", "");
    assert_int_equal(count_of(xml, "<c:title>"), 0);
    assert_null(strstr(xml, "<a:t></a:t>"));
    assert_null(strstr(xml, "<a:t/>"));
    assert_non_null(strstr(xml, "<c:autoTitleDeleted val=\"1\"/>"));
    free(xml);

    /* Only the empty one goes: a chart title with empty axis titles. */
    xml = chart_xml("Revenue", "", NULL);
    assert_int_equal(count_of(xml, "<c:title>"), 1);
    assert_non_null(strstr(xml, "<a:t>Revenue</a:t>"));
    assert_non_null(strstr(xml, "<c:autoTitleDeleted val=\"0\"/>"));
    free(xml);

    /* Axis titles without a chart title. */
    xml = chart_xml(NULL, "Region", "USD");
    assert_int_equal(count_of(xml, "<c:title>"), 2);
    assert_non_null(strstr(xml, "<c:autoTitleDeleted val=\"1\"/>"));
    free(xml);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_declaration),
        cmocka_unit_test(test_markup_escaped),
        cmocka_unit_test(test_forbidden_controls_dropped),
        cmocka_unit_test(test_invalid_utf8_dropped),
        cmocka_unit_test(test_clean_text_untouched),
        cmocka_unit_test(test_escaped_text_long),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_elements_closed_on_finish),
        cmocka_unit_test(test_failure_is_sticky),
        cmocka_unit_test(test_bad_values_fail),
        cmocka_unit_test(test_held_back_elements),
        cmocka_unit_test(test_large_part_deflated),
        cmocka_unit_test(test_ceiling_stops_writer),
        cmocka_unit_test(test_libxml2_silenced),
        cmocka_unit_test(test_template_placeholders),
        cmocka_unit_test(test_template_errors),
        cmocka_unit_test_setup_teardown(test_package_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_package_reproducible, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deflated_part_zipped_as_is, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ceiling, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_part_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dangling_relationships, setup, teardown),
        cmocka_unit_test_setup_teardown(test_minimal_docx_passes_check, setup, teardown),
        cmocka_unit_test(test_external_targets_percent_encoded),
        cmocka_unit_test_setup_teardown(test_encoded_target_passes_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_chart_titles, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
