/*
 * opc_xml.c - the XML writer every part is written with, and the one
 * text-escaping path (see opc.h).
 *
 * Markup goes through libxml2's xmlTextWriter (element nesting, closing
 * tags, attribute quoting), fed so that a 400 MB part costs little more
 * than the bytes themselves:
 *
 * - Text and attribute values are escaped here, then handed over with
 *   xmlTextWriterWriteRawLen rather than through xmlTextWriterWriteString /
 *   WriteAttribute, because in libxml2 2.9 those write the string unescaped
 *   when no element is open (a template's placeholder value would be
 *   injected as markup); turn every non-ASCII character of an attribute
 *   into a character reference unless an encoder is set up (a second pass
 *   over every byte); and take NUL-terminated strings only, mallocing an
 *   escaped copy per call. Escaping ourselves is one scan that hands clean
 *   text (the common case) over without copying it, and builds an escaped
 *   copy only when something must change.
 *
 * - An element is held back until it gets content (a child or text): its
 *   start tag is built here as it will be written, "<name a=\"v\"". Most
 *   elements of a WordprocessingML part are empty ones carrying attributes
 *   (<w:jc w:val="right"/>, <w:tcW w:w="694" w:type="dxa"/>), and one closed
 *   before any content is handed to the writer whole, "<name .../>", in one
 *   xmlTextWriterWriteRawLen call; xmlTextWriterStartElement would malloc a
 *   stack entry, a copy of the name and a list link per element, and every
 *   attribute costs six writes into libxml2's output buffer. An element that
 *   gets content is handed to libxml2 with xmlTextWriterStartElement and
 *   its attributes then, and libxml2 keeps it open and closes it, so the
 *   nesting of every element with content is libxml2's. The bytes are the
 *   same either way.
 *
 * - Where the bytes go: libxml2's output buffer stages about 4 KB and hands
 *   it to sink_write. A small part is kept as it is; once a part passes
 *   OPC_XML_DEFLATE_AFTER, it is deflated as it arrives (raw deflate, as a
 *   zip entry holds it), keeping only the compressed bytes and the CRC-32:
 *   a 400 MB document.xml is held as ~13 MB and never copied whole, and
 *   opc_package.c has libzip copy the compressed bytes into the zip as they
 *   are. Knowing the compressed size as it grows is also what lets a writer
 *   stop early at the output ceiling (opc_xml_set_ceiling).
 */
#include "opc.h"
#include "opc_internal.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/globals.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlwriter.h>
#define ZLIB_CONST
#include <zlib.h>
#include "../../common/banned.h"

#define OPC_XML_DECLARATION "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
/*
 * A part is held plain up to this many bytes, deflated from there on.
 * Below it, compressing as it goes would gain nothing worth zlib's ~400 KB
 * of state per writer (most parts are a few KB: relationships, settings,
 * styles); the parts that matter for memory are megabytes.
 */
#define OPC_XML_DEFLATE_AFTER (64 * 1024)
/* First size of the plain and the compressed buffers; each doubles. */
#define OPC_XML_INITIAL_BYTES 4096
/* xmlTextWriterWriteRawLen takes an int; larger text goes in pieces. */
#define OPC_XML_RAW_CHUNK (1 << 30)

/* The part as written so far. */
typedef struct xml_sink {
    unsigned char *plain; /* the bytes while the part is small */
    size_t plain_cap;
    z_stream z;
    int deflating;         /* deflateInit2 done and deflateEnd not yet */
    unsigned char *packed; /* the compressed bytes, once deflating */
    size_t packed_len, packed_cap;
    uint64_t len; /* plain bytes so far */
    uint32_t crc; /* their CRC-32, once deflating */
} xml_sink;

/* An attribute of the held-back element: offsets into its tag. */
typedef struct tag_attr {
    size_t name_off, name_len, value_off, value_len;
} tag_attr;

struct opc_xml {
    xml_sink sink;
    xmlOutputBufferPtr out; /* the writer's staging buffer in front of the
                               sink (the writer owns it) */
    xmlTextWriterPtr w;
    int failed;
    kiln_status fail_code; /* KILN_E_NOMEM, KILN_E_INTERNAL or KILN_E_TOO_LARGE */
    const char *fail_what; /* a literal saying what went wrong */
    size_t depth;          /* elements open, the held-back one included */
    /* The innermost element while it has neither children nor text (so
     * attributes may still be added): held back, its start tag built in
     * tag as it will be written. */
    int pending;
    char *tag;
    size_t tag_len, tag_cap;
    size_t tag_name_len; /* its name is at tag + 1 */
    tag_attr *attrs;
    size_t attr_count, attr_cap;
    char *name; /* a NUL-terminated name for libxml2 */
    size_t name_cap;
    char *scratch; /* escaped copies of text that needed escaping */
    size_t scratch_cap;
    const uint64_t *rest_of_zip; /* opc_xml_set_zip_ceiling; NULL = none */
    uint64_t ceiling;
    uint64_t ceiling_reached; /* the zip's least size when it failed */
};

enum { ESCAPE_TEXT, ESCAPE_ATTR };

static void fail(opc_xml *x, kiln_status code, const char *what)
{
    if (!x->failed) {
        x->failed = 1;
        x->fail_code = code;
        x->fail_what = what;
    }
}

/* libxml2 reports -1 for out of memory, for misuse and for a refused write.
 * Misuse is caught here before libxml2 sees it (open elements and whether
 * the start tag still takes attributes are tracked), and the sink records
 * why it refused before refusing, so an unexplained -1 means memory. */
static void check(opc_xml *x, int n)
{
    if (n < 0)
        fail(x, KILN_E_NOMEM, "the XML writer failed (out of memory)");
}

/* Make buf hold at least need bytes (doubling); 0 = out of memory, recorded. */
static int reserve(opc_xml *x, char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 1;
    size_t new_cap = *cap ? *cap : 256;
    while (new_cap < need) {
        if (new_cap > SIZE_MAX / 2) {
            new_cap = need;
            break;
        }
        new_cap *= 2;
    }
    char *p = realloc(*buf, new_cap);
    if (!p) {
        fail(x, KILN_E_NOMEM, "out of memory writing XML");
        return 0;
    }
    *buf = p;
    *cap = new_cap;
    return 1;
}

static void write_raw(opc_xml *x, const char *s, size_t len)
{
    while (!x->failed && len > 0) {
        size_t piece = len < OPC_XML_RAW_CHUNK ? len : OPC_XML_RAW_CHUNK;
        check(x, xmlTextWriterWriteRawLen(x->w, (const xmlChar *)s, (int)piece));
        s += piece;
        len -= piece;
    }
}

/* ---- libxml2's error output ---- */

/*
 * libxml2 reports some failures (out of memory, a refused write) through its
 * error handlers, which print to stderr by default, and library code never
 * prints: the failure reaches the caller through opc_xml_failed instead.
 * The handlers are per thread in libxml2 2.9, so while any opc_xml exists on
 * a thread, silent ones are installed on it; the ones found there come back
 * when the last is freed, whatever the order the writers are freed in.
 */
static _Thread_local unsigned writers_alive;
static _Thread_local xmlGenericErrorFunc saved_generic;
static _Thread_local void *saved_generic_context;
static _Thread_local xmlStructuredErrorFunc saved_structured;
static _Thread_local void *saved_structured_context;

static void XMLCDECL ignore_generic_error(void *context, const char *msg, ...)
{
    (void)context;
    (void)msg;
}

static void XMLCALL ignore_structured_error(void *context, xmlErrorPtr error)
{
    (void)context;
    (void)error;
}

static void silence_libxml2(void)
{
    if (writers_alive++ > 0)
        return;
    saved_generic = xmlGenericError;
    saved_generic_context = xmlGenericErrorContext;
    saved_structured = xmlStructuredError;
    saved_structured_context = xmlStructuredErrorContext;
    xmlSetGenericErrorFunc(NULL, ignore_generic_error);
    xmlSetStructuredErrorFunc(NULL, ignore_structured_error);
}

static void unsilence_libxml2(void)
{
    if (writers_alive == 0 || --writers_alive > 0)
        return;
    xmlSetGenericErrorFunc(saved_generic_context, saved_generic);
    xmlSetStructuredErrorFunc(saved_structured_context, saved_structured);
}

/* ---- the sink ---- */

/* The zip can no longer fit under the ceiling: fail, and say so. */
static int past_ceiling(opc_xml *x)
{
    if (!x->rest_of_zip)
        return 0;
    uint64_t least = (uint64_t)x->sink.packed_len + *x->rest_of_zip;
    if (least <= x->ceiling)
        return 0;
    x->ceiling_reached = least;
    fail(x, KILN_E_TOO_LARGE, "the output passed the size ceiling");
    return 1;
}

/* Run deflate over the input set in the stream (flush Z_NO_FLUSH), or end
 * the stream (Z_FINISH). 1 = done; 0 = failed (recorded). */
static int sink_deflate(opc_xml *x, int flush)
{
    xml_sink *s = &x->sink;
    for (;;) {
        if (s->packed_len == s->packed_cap) {
            /* realloc: for a multi-megabyte part glibc moves pages
             * (mremap) rather than copying them. */
            char *packed = (char *)s->packed;
            if (!reserve(x, &packed, &s->packed_cap,
                         s->packed_cap ? s->packed_cap + 1 : OPC_XML_INITIAL_BYTES))
                return 0;
            s->packed = (unsigned char *)packed;
        }
        size_t room = s->packed_cap - s->packed_len;
        s->z.next_out = s->packed + s->packed_len;
        s->z.avail_out = room < UINT_MAX ? (uInt)room : UINT_MAX;
        int rc = deflate(&s->z, flush);
        s->packed_len = (size_t)(s->z.next_out - s->packed);
        if (rc == Z_STREAM_END)
            break;
        /* Z_BUF_ERROR only says no progress was possible: the input ran out
         * (Z_NO_FLUSH, which ends the loop below) or the output is full (it
         * grows on the next round). Finishing with room left and no
         * progress would loop for ever, so that is a failure. */
        if ((rc != Z_OK && rc != Z_BUF_ERROR) ||
            (rc == Z_BUF_ERROR && flush == Z_FINISH && s->z.avail_out > 0)) {
            fail(x, rc == Z_MEM_ERROR ? KILN_E_NOMEM : KILN_E_INTERNAL,
                 "zlib failed compressing an XML part");
            return 0;
        }
        if (flush == Z_NO_FLUSH && s->z.avail_in == 0 && s->z.avail_out > 0)
            break;
    }
    return !past_ceiling(x);
}

/* Deflate n plain bytes (n fits zlib's 32-bit counts: the sink gets an
 * int's worth at most). */
static int deflate_bytes(opc_xml *x, const void *data, size_t n)
{
    xml_sink *s = &x->sink;
    s->crc = (uint32_t)crc32_z(s->crc, data, n);
    s->len += n;
    s->z.next_in = data;
    s->z.avail_in = (uInt)n;
    return sink_deflate(x, Z_NO_FLUSH);
}

/* The part passed OPC_XML_DEFLATE_AFTER: deflate what is held, and all
 * that comes from now on. */
static int start_deflating(opc_xml *x)
{
    xml_sink *s = &x->sink;
    int rc = deflateInit2(&s->z, OPC_DEFLATE_LEVEL, Z_DEFLATED, OPC_DEFLATE_WINDOW_BITS,
                          OPC_DEFLATE_MEM_LEVEL, Z_DEFAULT_STRATEGY);
    if (rc != Z_OK) {
        fail(x, rc == Z_MEM_ERROR ? KILN_E_NOMEM : KILN_E_INTERNAL,
             "zlib failed compressing an XML part");
        return 0;
    }
    s->deflating = 1;
    unsigned char *held = s->plain;
    size_t held_len = (size_t)s->len;
    s->plain = NULL;
    s->plain_cap = 0;
    s->len = 0;
    s->crc = 0; /* crc32's starting value */
    int ok = held_len == 0 || deflate_bytes(x, held, held_len);
    free(held);
    return ok;
}

/* The output buffer's write callback. Returning -1 makes every later write
 * fail; the reason is recorded in x first. */
static int sink_write(void *context, const char *data, int len)
{
    opc_xml *x = context;
    xml_sink *s = &x->sink;
    if (len <= 0)
        return 0;
    if (x->failed)
        return -1;
    size_t n = (size_t)len;
    if (!s->deflating) {
        if (s->len + n <= OPC_XML_DEFLATE_AFTER) {
            char *plain = (char *)s->plain;
            size_t need = (size_t)s->len + n;
            if (need < OPC_XML_INITIAL_BYTES)
                need = OPC_XML_INITIAL_BYTES;
            if (!reserve(x, &plain, &s->plain_cap, need))
                return -1;
            s->plain = (unsigned char *)plain;
            memcpy(s->plain + s->len, data, n);
            s->len += n;
            return len;
        }
        if (!start_deflating(x))
            return -1;
    }
    return deflate_bytes(x, data, n) ? len : -1;
}

/* ---- the writer ---- */

static opc_xml *xml_new(int declaration)
{
    xmlInitParser(); /* idempotent; sets up libxml2's globals thread-safely */
    opc_xml *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    silence_libxml2();
    /* What xmlNewTextWriterMemory does, with our own sink, and keeping the
     * output buffer at hand so opc_xml_size can count the bytes still
     * staged in it. */
    x->out = xmlOutputBufferCreateIO(sink_write, NULL, x, NULL);
    if (!x->out)
        goto fail_free_x;
    x->w = xmlNewTextWriter(x->out); /* owns x->out from here on */
    if (!x->w) {
        xmlOutputBufferClose(x->out);
        x->out = NULL;
        goto fail_free_x;
    }
    xmlTextWriterSetIndent(x->w, 0);
    /* Written raw, not with xmlTextWriterStartDocument: that would set up a
     * UTF-8 to UTF-8 "conversion" pass over every byte. The newline follows
     * the declaration as in the parts Office writes. */
    if (declaration)
        write_raw(x, OPC_XML_DECLARATION, sizeof OPC_XML_DECLARATION - 1);
    return x;

fail_free_x:
    opc_xml_free(x);
    return NULL;
}

opc_xml *opc_xml_new(void)
{
    return xml_new(1);
}

opc_xml *opc_xml_new_bare(void)
{
    return xml_new(0);
}

void opc_xml_free(opc_xml *x)
{
    if (!x)
        return;
    if (x->w) {
        /* Freeing the writer flushes what it still stages into the sink,
         * which has nothing more to do with it. */
        fail(x, KILN_E_INTERNAL, "the XML writer was freed");
        xmlFreeTextWriter(x->w);
    }
    if (x->sink.deflating)
        deflateEnd(&x->sink.z);
    free(x->sink.plain);
    free(x->sink.packed);
    free(x->tag);
    free(x->attrs);
    free(x->name);
    free(x->scratch);
    free(x);
    unsilence_libxml2();
}

void opc_xml_set_zip_ceiling(opc_xml *x, const uint64_t *rest_of_zip, uint64_t max_bytes)
{
    if (!x || x->failed)
        return;
    x->rest_of_zip = max_bytes ? rest_of_zip : NULL;
    x->ceiling = max_bytes;
    past_ceiling(x); /* the package may be past it already */
}

/* ---- escaping ---- */

/* Length of the UTF-8 sequence at p (avail bytes) when it is well formed and
 * a character XML 1.0 allows; 0 otherwise. Rejects overlong forms,
 * surrogates (U+D800-DFFF), U+FFFE/U+FFFF and anything past U+10FFFF. */
static size_t utf8_allowed(const unsigned char *p, size_t avail)
{
    unsigned char c = p[0];
    if (c < 0xC2)
        return 0; /* continuation byte or overlong two-byte lead */
    if (c < 0xE0)
        return avail >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c < 0xF0) {
        if (avail < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
            return 0;
        if (c == 0xE0 && p[1] < 0xA0)
            return 0; /* overlong */
        if (c == 0xED && p[1] >= 0xA0)
            return 0; /* surrogate */
        if (c == 0xEF && p[1] == 0xBF && p[2] >= 0xBE)
            return 0; /* U+FFFE, U+FFFF */
        return 3;
    }
    if (c < 0xF5) {
        if (avail < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return 0;
        if (c == 0xF0 && p[1] < 0x90)
            return 0; /* overlong */
        if (c == 0xF4 && p[1] >= 0x90)
            return 0; /* past U+10FFFF */
        return 4;
    }
    return 0;
}

/* What an ASCII byte becomes: NULL = itself, "" = dropped, else a reference. */
static const char *ascii_escape(unsigned char c, int mode)
{
    switch (c) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;"; /* always, so "]]>" can never appear */
    case '"':
        return mode == ESCAPE_ATTR ? "&quot;" : NULL;
    /* Attribute values are normalized by every parser (tab and LF become
     * spaces) unless written as references; character data keeps them. A CR
     * is normalized away in both unless it is a reference. */
    case '\t':
        return mode == ESCAPE_ATTR ? "&#9;" : NULL;
    case '\n':
        return mode == ESCAPE_ATTR ? "&#10;" : NULL;
    case '\r':
        return "&#13;";
    default:
        return c < 0x20 ? "" : NULL;
    }
}

/* ascii_escape(c, mode) == NULL, cheaper: what the scan asks of every byte. */
static inline int ascii_plain(unsigned char c, int mode)
{
    if (c >= 0x20)
        return c != '&' && c != '<' && c != '>' && (c != '"' || mode == ESCAPE_TEXT);
    return mode == ESCAPE_TEXT && (c == '\t' || c == '\n');
}

/* s escaped for mode, characters XML forbids dropped: s itself when nothing
 * needs to change (the common case), else an escaped copy in x->scratch.
 * *out_len is its length (0 when every character was dropped). NULL when
 * out of memory (recorded). */
static const char *escape(opc_xml *x, const char *s, size_t len, int mode, size_t *out_len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    *out_len = 0;
    /* The scan: text that needs nothing is handed over as it is. */
    while (i < len) {
        if (p[i] < 0x80) {
            if (!ascii_plain(p[i], mode))
                break;
            i++;
        } else {
            size_t n = utf8_allowed(p + i, len - i);
            if (n == 0)
                break;
            i += n;
        }
    }
    if (i == len) {
        *out_len = len;
        return s;
    }
    /* The copy: the clean prefix, then the rest character by character.
     * Room for the prefix plus some references; grown when it runs out. */
    size_t used = i;
    if (len - i > SIZE_MAX / 2 - i ||
        !reserve(x, &x->scratch, &x->scratch_cap, i + (len - i) + (len - i) / 4 + 16))
        goto fail_memory;
    memcpy(x->scratch, s, i);
    while (i < len) {
        const char *ref = NULL;
        size_t n = 1;
        if (p[i] < 0x80) {
            ref = ascii_escape(p[i], mode);
        } else {
            n = utf8_allowed(p + i, len - i);
            if (n == 0) {
                ref = ""; /* drop one byte and look again at the next */
                n = 1;
            }
        }
        size_t out = ref ? strlen(ref) : n;
        /* Longest output per input byte is 6 ("&quot;"); keep room for the
         * rest at 1 each so a reallocation is rare. */
        if (x->scratch_cap - used < out + (len - i) &&
            !reserve(x, &x->scratch, &x->scratch_cap, used + out + (len - i)))
            goto fail_memory;
        memcpy(x->scratch + used, ref ? ref : (const char *)p + i, out);
        used += out;
        i += n;
    }
    *out_len = used;
    return x->scratch;

fail_memory:
    fail(x, KILN_E_NOMEM, "out of memory escaping text");
    return NULL;
}

/* ---- elements and attributes ---- */

/* name[0..len) NUL-terminated, for libxml2; NULL when out of memory. */
static const xmlChar *c_name(opc_xml *x, const char *name, size_t len)
{
    if (!reserve(x, &x->name, &x->name_cap, len + 1))
        return NULL;
    memcpy(x->name, name, len);
    x->name[len] = '\0';
    return (const xmlChar *)x->name;
}

/* The held-back element gets content: hand it to libxml2 with its
 * attributes, which from now on keeps it open and closes it. */
static void flush_pending(opc_xml *x)
{
    x->pending = 0;
    const xmlChar *name = c_name(x, x->tag + 1, x->tag_name_len);
    if (!name)
        return;
    check(x, xmlTextWriterStartElement(x->w, name));
    for (size_t i = 0; i < x->attr_count && !x->failed; i++) {
        const tag_attr *a = &x->attrs[i];
        name = c_name(x, x->tag + a->name_off, a->name_len);
        if (!name)
            return;
        check(x, xmlTextWriterStartAttribute(x->w, name));
        write_raw(x, x->tag + a->value_off, a->value_len);
        if (!x->failed)
            check(x, xmlTextWriterEndAttribute(x->w));
    }
}

/* Content (len > 0 bytes, already safe) for the innermost element. */
static void write_content(opc_xml *x, const char *s, size_t len)
{
    if (x->pending)
        flush_pending(x);
    write_raw(x, s, len);
}

void opc_xml_start(opc_xml *x, const char *name)
{
    if (x->failed)
        return;
    if (!name || !*name) {
        fail(x, KILN_E_INTERNAL, "an element had no name");
        return;
    }
    if (x->pending)
        flush_pending(x); /* the parent gets a child */
    size_t n = strlen(name);
    if (x->failed || !reserve(x, &x->tag, &x->tag_cap, n + 1))
        return;
    x->tag[0] = '<';
    memcpy(x->tag + 1, name, n);
    x->tag_len = n + 1;
    x->tag_name_len = n;
    x->attr_count = 0;
    x->pending = 1;
    x->depth++;
}

void opc_xml_end(opc_xml *x)
{
    if (x->failed)
        return;
    if (x->depth == 0) {
        /* Not handed to libxml2, which would print a complaint. */
        fail(x, KILN_E_INTERNAL, "an element was closed that was never opened");
        return;
    }
    x->depth--;
    if (x->pending) {
        /* No content: the whole element at once. */
        x->pending = 0;
        if (!reserve(x, &x->tag, &x->tag_cap, x->tag_len + 2))
            return;
        memcpy(x->tag + x->tag_len, "/>", 2);
        write_raw(x, x->tag, x->tag_len + 2);
        return;
    }
    check(x, xmlTextWriterEndElement(x->w));
}

/* 1 when an attribute may be written now; else the failure is recorded. */
static int attr_allowed(opc_xml *x, const char *name)
{
    if (x->failed)
        return 0;
    if (!x->pending) {
        fail(x, KILN_E_INTERNAL,
             x->depth == 0 ? "an attribute was written outside an element"
                           : "an attribute was written after the element's content");
        return 0;
    }
    if (!name || !*name) {
        fail(x, KILN_E_INTERNAL, "an attribute had no name");
        return 0;
    }
    return 1;
}

/* name="value" onto the held-back element's tag; value is safe already
 * (escaped, or a number). */
static void attr_add(opc_xml *x, const char *name, const char *value, size_t len)
{
    size_t n = strlen(name);
    if (x->attr_count == x->attr_cap) {
        size_t cap = x->attr_cap ? x->attr_cap * 2 : 8;
        tag_attr *p = cap <= SIZE_MAX / sizeof *p ? realloc(x->attrs, cap * sizeof *p) : NULL;
        if (!p) {
            fail(x, KILN_E_NOMEM, "out of memory writing XML");
            return;
        }
        x->attrs = p;
        x->attr_cap = cap;
    }
    /* ' ' name '="' value '"' */
    if (len > SIZE_MAX - x->tag_len - n - 8 ||
        !reserve(x, &x->tag, &x->tag_cap, x->tag_len + n + len + 4 + 2))
        return;
    tag_attr *a = &x->attrs[x->attr_count++];
    char *p = x->tag + x->tag_len;
    *p++ = ' ';
    a->name_off = (size_t)(p - x->tag);
    a->name_len = n;
    memcpy(p, name, n);
    p += n;
    *p++ = '=';
    *p++ = '"';
    a->value_off = (size_t)(p - x->tag);
    a->value_len = len;
    if (len > 0)
        memcpy(p, value, len);
    p += len;
    *p++ = '"';
    x->tag_len = (size_t)(p - x->tag);
}

void opc_xml_attr_len(opc_xml *x, const char *name, const char *value, size_t len)
{
    if (!attr_allowed(x, name))
        return;
    if (!value && len > 0) {
        fail(x, KILN_E_INTERNAL, "an attribute value was missing");
        return;
    }
    size_t out_len = 0;
    const char *out = len > 0 ? escape(x, value, len, ESCAPE_ATTR, &out_len) : "";
    if (out)
        attr_add(x, name, out, out_len);
}

void opc_xml_attr(opc_xml *x, const char *name, const char *value)
{
    if (x->failed)
        return;
    if (!value) {
        fail(x, KILN_E_INTERNAL, "an attribute value was missing");
        return;
    }
    opc_xml_attr_len(x, name, value, strlen(value));
}

/* name="..." with value already safe for an attribute (numbers). */
static void attr_plain(opc_xml *x, const char *name, const char *value, size_t len)
{
    if (attr_allowed(x, name))
        attr_add(x, name, value, len);
}

/* Decimal digits of v at the end of buf[24]; returns where they start. */
static char *format_u64(char *end, uint64_t v)
{
    char *p = end;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p;
}

void opc_xml_attr_uint(opc_xml *x, const char *name, uint64_t value)
{
    char buf[24];
    char *p = format_u64(buf + sizeof buf, value);
    attr_plain(x, name, p, (size_t)(buf + sizeof buf - p));
}

void opc_xml_attr_int(opc_xml *x, const char *name, int64_t value)
{
    char buf[24];
    /* Negated as unsigned so INT64_MIN is no overflow. */
    uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    char *p = format_u64(buf + sizeof buf, magnitude);
    if (value < 0)
        *--p = '-';
    attr_plain(x, name, p, (size_t)(buf + sizeof buf - p));
}

void opc_xml_attr_double(opc_xml *x, const char *name, double value)
{
    if (x->failed)
        return;
    if (!isfinite(value)) {
        fail(x, KILN_E_INTERNAL, "a number to write was not finite");
        return;
    }
    char buf[40];
    if (value == 0)
        value = 0; /* -0 is written as 0 */
    /* %.15g is exact for every value that came from a 15-digit decimal (what
     * a spec holds); values computed along the way may need all 17. */
    int n = snprintf(buf, sizeof buf, "%.15g", value);
    if (strtod(buf, NULL) != value)
        n = snprintf(buf, sizeof buf, "%.17g", value);
    attr_plain(x, name, buf, (size_t)n);
}

void opc_xml_attr_color(opc_xml *x, const char *name, int32_t rgb)
{
    if (x->failed)
        return;
    if (rgb < 0 || rgb > 0xFFFFFF) {
        fail(x, KILN_E_INTERNAL, "a color was not a 24-bit RGB value");
        return;
    }
    static const char hex[] = "0123456789ABCDEF";
    char buf[6];
    for (int i = 5; i >= 0; i--) {
        buf[i] = hex[rgb & 0xF];
        rgb >>= 4;
    }
    attr_plain(x, name, buf, sizeof buf);
}

/* ---- character data ---- */

/* Text escaped for mode as the innermost element's content; text that is
 * all dropped is no content (the start tag still takes attributes). */
static void text_escaped(opc_xml *x, const char *s, size_t len, int mode)
{
    if (x->failed || len == 0)
        return;
    if (!s) {
        fail(x, KILN_E_INTERNAL, "text to write was missing");
        return;
    }
    size_t out_len;
    const char *out = escape(x, s, len, mode, &out_len);
    if (out && out_len > 0)
        write_content(x, out, out_len);
}

void opc_xml_text(opc_xml *x, const char *s, size_t len)
{
    text_escaped(x, s, len, ESCAPE_TEXT);
}

void opc_xml_text_anywhere(opc_xml *x, const char *s, size_t len)
{
    text_escaped(x, s, len, ESCAPE_ATTR);
}

void opc_xml_raw(opc_xml *x, const char *s, size_t len)
{
    if (x->failed || len == 0)
        return;
    write_content(x, s, len);
}

void opc_xml_empty(opc_xml *x, const char *name)
{
    opc_xml_start(x, name);
    opc_xml_end(x);
}

void opc_xml_val(opc_xml *x, const char *name, const char *val_attr, const char *value)
{
    opc_xml_start(x, name);
    opc_xml_attr(x, val_attr, value);
    opc_xml_end(x);
}

void opc_xml_val_int(opc_xml *x, const char *name, const char *val_attr, int64_t value)
{
    opc_xml_start(x, name);
    opc_xml_attr_int(x, val_attr, value);
    opc_xml_end(x);
}

void opc_xml_element_text(opc_xml *x, const char *name, const char *text)
{
    opc_xml_start(x, name);
    if (text)
        opc_xml_text(x, text, strlen(text));
    opc_xml_end(x);
}

int opc_xml_failed(const opc_xml *x)
{
    return x->failed;
}

kiln_status opc_xml_status(const opc_xml *x)
{
    return x->failed ? x->fail_code : KILN_E_OK;
}

size_t opc_xml_size(const opc_xml *x)
{
    size_t staged = x->w ? xmlOutputBufferGetSize(x->out) : 0;
    size_t held = x->pending ? x->tag_len : 0;
    return (size_t)x->sink.len + staged + held;
}

/* ---- finishing ---- */

kiln_status opc_xml_error(const opc_xml *x, const char *pointer, kiln_error *err)
{
    if (!x->failed)
        return KILN_E_OK;
    if (x->fail_code == KILN_E_TOO_LARGE)
        return kiln_error_limit(err, KILN_E_TOO_LARGE, pointer, x->ceiling, x->ceiling_reached,
                                "output is larger than the size ceiling of %llu bytes "
                                "(reached %llu bytes)",
                                (unsigned long long)x->ceiling,
                                (unsigned long long)x->ceiling_reached);
    return kiln_error_set(err, x->fail_code, pointer, "%s", x->fail_what);
}

kiln_status opc_xml_close(opc_xml *x, kiln_error *err)
{
    if (!x)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory starting an XML part");
    /* When libxml2 runs out of memory pushing an element on its stack it
     * says nothing and carries on, one element short; closing every element
     * counted here then fails on its empty stack, so that is caught too. */
    while (!x->failed && x->depth > 0)
        opc_xml_end(x);
    if (!x->failed && xmlTextWriterFlush(x->w) < 0)
        fail(x, KILN_E_NOMEM, "the XML writer failed (out of memory)");
    if (!x->failed && x->sink.deflating)
        sink_deflate(x, Z_FINISH);
    return opc_xml_error(x, NULL, err);
}

/* The finished part's plain bytes (malloc'd): taken over while it is held
 * plain, else inflated back. */
static kiln_status take_plain(opc_xml *x, unsigned char **data, kiln_error *err)
{
    xml_sink *s = &x->sink;
    if (!s->deflating) {
        /* Nothing written: still hand back memory of our own. */
        *data = s->plain ? s->plain : malloc(1);
        s->plain = NULL;
        return *data ? KILN_E_OK
                     : kiln_error_set(err, KILN_E_NOMEM, NULL,
                                      "out of memory finishing an XML part");
    }
    if (s->len >= SIZE_MAX)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "an XML part is too large for memory");
    /* One byte more: inflate then has room past the end, so a stream
     * longer than counted is caught. */
    size_t room = (size_t)s->len + 1;
    unsigned char *plain = malloc(room);
    if (!plain)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory finishing an XML part");
    z_stream z = {0};
    if (inflateInit2(&z, OPC_DEFLATE_WINDOW_BITS) != Z_OK) {
        free(plain);
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory finishing an XML part");
    }
    z.next_in = s->packed;
    z.next_out = plain;
    size_t in_left = s->packed_len, out_left = room;
    int rc;
    do {
        /* avail_in and avail_out are 32-bit: a large part goes in pieces. */
        uInt in = in_left < UINT_MAX ? (uInt)in_left : UINT_MAX;
        uInt out = out_left < UINT_MAX ? (uInt)out_left : UINT_MAX;
        z.avail_in = in;
        z.avail_out = out;
        rc = inflate(&z, Z_NO_FLUSH);
        in_left -= in - z.avail_in;
        out_left -= out - z.avail_out;
    } while (rc == Z_OK);
    inflateEnd(&z);
    if (rc != Z_STREAM_END || out_left != 1) {
        free(plain);
        if (rc == Z_MEM_ERROR)
            return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory finishing an XML part");
        return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                              "an XML part did not inflate back to what was written");
    }
    *data = plain;
    return KILN_E_OK;
}

kiln_status opc_xml_take(opc_xml *x, unsigned char **data, size_t *len, kiln_error *err)
{
    *data = NULL;
    *len = 0;
    kiln_status st = opc_xml_close(x, err);
    if (st == KILN_E_OK)
        st = take_plain(x, data, err);
    if (st == KILN_E_OK)
        *len = (size_t)x->sink.len;
    opc_xml_free(x);
    return st;
}

kiln_status opc_xml_take_held(opc_xml *x, opc_xml_held *out, kiln_error *err)
{
    xml_sink *s = &x->sink;
    *out = (opc_xml_held){.plain_len = s->len};
    if (!s->deflating) {
        kiln_status st = take_plain(x, &out->data, err);
        out->len = (size_t)s->len;
        opc_xml_free(x);
        return st;
    }
    /* The compressed bytes are taken over; a buffer grown by doubling
     * gives back its unused part first (a failed shrink keeps it whole). */
    unsigned char *packed = s->packed;
    size_t packed_len = s->packed_len;
    unsigned char *shrunk = realloc(packed, packed_len ? packed_len : 1);
    if (shrunk)
        packed = shrunk;
    s->packed = NULL;
    out->data = packed;
    out->len = packed_len;
    out->deflated = 1;
    out->crc = s->crc;
    opc_xml_free(x);
    return KILN_E_OK;
}
