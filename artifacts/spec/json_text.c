/*
 * json_text.c - the spec's JSON text walked without building it (see
 * spec_internal.h, "the spec's text").
 *
 * jansson builds a tree of the whole text, and for a spec of many small
 * values that tree is many times the text: a block {"type": "paragraph",
 * "text": "..."} of 48 bytes costs jansson about 560 (an object with its own
 * hash table, two pairs, two strings, each its own allocation), so a spec of
 * a million short paragraphs took 540 MB before the model was built. The
 * parser therefore never builds the whole tree. kiln_json_check reads the
 * whole text once for its syntax (RFC 8259, with jansson's own refusals:
 * integers past 64 bits, reals past a double, invalid UTF-8), and the
 * walkers below find the pieces of a checked text: an object's members and
 * an array's elements, as byte spans. The parser has jansson build one piece
 * at a time (kiln_json_load_span: a block, a slide, a sheet without its rows,
 * one row), turns it into the model and frees it.
 *
 * The walkers trust the text: they are only ever given text that
 * kiln_json_check passed, so they skip strings and nesting without checking
 * them again.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"
#include "../../common/banned.h"

/* jansson's own nesting ceiling (JSON_PARSER_MAX_DEPTH); the spec's own,
 * lower limit is checked on each piece with a JSON Pointer (kiln_json_scan). */
#define JSON_TEXT_MAX_DEPTH 2048

static void syntax(kiln_json_syntax *e, size_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void syntax(kiln_json_syntax *e, size_t offset, const char *fmt, ...)
{
    va_list ap;
    e->offset = offset;
    e->too_deep = 0;
    va_start(ap, fmt);
    vsnprintf(e->what, sizeof e->what, fmt, ap);
    va_end(ap);
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t kiln_json_skip_ws(const char *s, size_t len, size_t pos)
{
    while (pos < len && is_ws(s[pos]))
        pos++;
    return pos;
}

/* What is at pos, for messages: "'x'", or "end of text". */
static const char *near(const char *s, size_t len, size_t pos, char buf[16])
{
    if (pos >= len)
        return "the end of the text";
    unsigned char ch = (unsigned char)s[pos];
    if (ch >= 0x20 && ch < 0x7F)
        snprintf(buf, 16, "'%c'", ch);
    else
        snprintf(buf, 16, "byte 0x%02X", ch);
    return buf;
}

static int hex4(const char *s, size_t len, size_t pos, unsigned *out)
{
    unsigned v = 0;
    if (pos + 4 > len)
        return -1;
    for (size_t i = 0; i < 4; i++) {
        char c = s[pos + i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* A string starting at the quote at *pos; *pos ends after the closing quote.
 * A member name may not hold U+0000 (jansson's objects cannot). */
static int check_string(const char *s, size_t len, size_t *pos, int is_key, kiln_json_syntax *e)
{
    size_t p = *pos + 1;
    while (p < len) {
        unsigned char ch = (unsigned char)s[p];
        if (ch == '"') {
            *pos = p + 1;
            return 0;
        }
        if (ch < 0x20) {
            syntax(e, p, "control character 0x%02X in a string (write it as \\u%04X)", ch, ch);
            return -1;
        }
        if (ch != '\\') {
            p++;
            continue;
        }
        if (p + 1 >= len)
            break;
        char esc = s[p + 1];
        if (esc == 'u') {
            unsigned u;
            if (hex4(s, len, p + 2, &u) != 0) {
                syntax(e, p, "invalid \\u escape in a string");
                return -1;
            }
            if (u == 0 && is_key) {
                syntax(e, p, "NUL byte in object key not supported");
                return -1;
            }
            if (u >= 0xDC00 && u <= 0xDFFF) {
                syntax(e, p, "invalid Unicode '\\u%04X' (a lone low surrogate)", u);
                return -1;
            }
            p += 6;
            if (u >= 0xD800 && u <= 0xDBFF) {
                unsigned lo;
                if (p + 1 >= len || s[p] != '\\' || s[p + 1] != 'u' ||
                    hex4(s, len, p + 2, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF) {
                    syntax(e, p - 6,
                           "invalid Unicode '\\u%04X' (a high surrogate without its "
                           "low half)",
                           u);
                    return -1;
                }
                p += 6;
            }
        } else if (strchr("\"\\/bfnrt", esc) && esc) {
            p += 2;
        } else {
            syntax(e, p, "invalid escape '\\%c' in a string",
                   esc >= 0x20 && esc < 0x7F ? esc : '?');
            return -1;
        }
    }
    syntax(e, *pos, "a string that never ends");
    return -1;
}

static int digit(char c)
{
    return c >= '0' && c <= '9';
}

/* 1 when the number text s[0..n) is past a 64-bit integer (is_real 0) or a
 * double (is_real 1), as strtoll and strtod judge it; 0 when it fits; -1
 * when out of memory (a long real needs a copy to be NUL-terminated). */
static int number_overflows(const char *s, size_t n, int is_real)
{
    char small[64];
    char *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    int over;
    if (is_real) {
        double d = strtod(buf, NULL);
        over = errno == ERANGE && isinf(d);
    } else {
        (void)strtoll(buf, NULL, 10);
        over = errno == ERANGE;
    }
    if (buf != small)
        free(buf);
    return over;
}

/* A number at *pos, with jansson's refusals: an integer (no fraction or
 * exponent) must fit 64 bits, a real a double. */
static int check_number(const char *s, size_t len, size_t *pos, kiln_json_syntax *e)
{
    size_t p = *pos, start = p;
    int is_real = 0;
    if (p < len && s[p] == '-')
        p++;
    if (p < len && s[p] == '0') {
        p++;
    } else if (p < len && s[p] >= '1' && s[p] <= '9') {
        while (p < len && digit(s[p]))
            p++;
    } else {
        syntax(e, start, "invalid number");
        return -1;
    }
    if (p < len && s[p] == '.') {
        is_real = 1;
        p++;
        if (p >= len || !digit(s[p])) {
            syntax(e, start, "invalid number (no digit after the point)");
            return -1;
        }
        while (p < len && digit(s[p]))
            p++;
    }
    if (p < len && (s[p] == 'e' || s[p] == 'E')) {
        is_real = 1;
        p++;
        if (p < len && (s[p] == '+' || s[p] == '-'))
            p++;
        if (p >= len || !digit(s[p])) {
            syntax(e, start, "invalid number (no digit in the exponent)");
            return -1;
        }
        while (p < len && digit(s[p]))
            p++;
    }
    /* Integers of 18 digits or fewer always fit 64 bits; only a real's
     * value can tell whether it overflows a double. */
    size_t n = p - start, digits = n - (s[start] == '-');
    if (is_real || digits >= 19) {
        int over = number_overflows(s + start, n, is_real);
        if (over != 0) {
            syntax(e, start,
                   over < 0  ? "out of memory"
                   : is_real ? "real number overflow"
                             : "too big integer");
            return -1;
        }
    }
    *pos = p;
    return 0;
}

static int check_literal(const char *s, size_t len, size_t *pos, const char *word,
                         kiln_json_syntax *e)
{
    size_t n = strlen(word);
    if (*pos + n > len || memcmp(s + *pos, word, n) != 0) {
        char b[16];
        syntax(e, *pos, "unexpected %s", near(s, len, *pos, b));
        return -1;
    }
    *pos += n;
    return 0;
}

/*
 * The whole text, iteratively (a text nested 2,000 deep must not take 2,000
 * stack frames of recursion). stack[d] is the kind of the container open at
 * depth d; after a value, what may follow depends on it.
 */
int kiln_json_check(const char *s, size_t len, kiln_json_syntax *e)
{
    char stack[JSON_TEXT_MAX_DEPTH + 1];
    size_t depth = 0;
    size_t pos = 0;
    char b[16];

    size_t bad = kiln_utf8_invalid_at(s, len);
    if (bad < len) {
        syntax(e, bad, "unable to decode byte 0x%02X (not UTF-8)", (unsigned char)s[bad]);
        return -1;
    }
    for (;;) {
        /* A value is expected here. */
        pos = kiln_json_skip_ws(s, len, pos);
        if (pos >= len) {
            syntax(e, pos, "unexpected end of the text (a value was expected)");
            return -1;
        }
        char ch = s[pos];
        if (ch == '{' || ch == '[') {
            if (depth == JSON_TEXT_MAX_DEPTH) {
                syntax(e, pos, "maximum parsing depth reached");
                e->too_deep = 1;
                return -1;
            }
            stack[++depth] = ch;
            pos = kiln_json_skip_ws(s, len, pos + 1);
            if (ch == '[' && pos < len && s[pos] == ']') {
                pos++;
                depth--;
                goto after_value;
            }
            if (ch == '{') {
                if (pos < len && s[pos] == '}') {
                    pos++;
                    depth--;
                    goto after_value;
                }
                goto member_key;
            }
            continue;
        }
        if (ch == '"') {
            if (check_string(s, len, &pos, 0, e) != 0)
                return -1;
        } else if (ch == '-' || digit(ch)) {
            if (check_number(s, len, &pos, e) != 0)
                return -1;
        } else if (ch == 't') {
            if (check_literal(s, len, &pos, "true", e) != 0)
                return -1;
        } else if (ch == 'f') {
            if (check_literal(s, len, &pos, "false", e) != 0)
                return -1;
        } else if (ch == 'n') {
            if (check_literal(s, len, &pos, "null", e) != 0)
                return -1;
        } else {
            syntax(e, pos, "unexpected %s (a value was expected)", near(s, len, pos, b));
            return -1;
        }
    after_value:
        /* What follows a value: the end of the text at depth 0, else a
         * comma or the container's close. */
        for (;;) {
            pos = kiln_json_skip_ws(s, len, pos);
            if (depth == 0) {
                if (pos != len) {
                    syntax(e, pos, "end of the text expected, not %s", near(s, len, pos, b));
                    return -1;
                }
                return 0;
            }
            char close = stack[depth] == '{' ? '}' : ']';
            if (pos < len && s[pos] == close) {
                pos++;
                depth--;
                continue;
            }
            if (pos < len && s[pos] == ',') {
                pos++;
                if (stack[depth] == '{')
                    goto member_key;
                break; /* the next element */
            }
            syntax(e, pos, "',' or '%c' expected, not %s", close, near(s, len, pos, b));
            return -1;
        }
        continue;
    member_key:
        pos = kiln_json_skip_ws(s, len, pos);
        if (pos >= len || s[pos] != '"') {
            syntax(e, pos, "a member name (a string) expected, not %s", near(s, len, pos, b));
            return -1;
        }
        if (check_string(s, len, &pos, 1, e) != 0)
            return -1;
        pos = kiln_json_skip_ws(s, len, pos);
        if (pos >= len || s[pos] != ':') {
            syntax(e, pos, "':' expected after a member name, not %s", near(s, len, pos, b));
            return -1;
        }
        pos++;
    }
}

/* ---- walking checked text ---- */

/* Past the string whose opening quote is at pos. */
static size_t skip_string(const char *s, size_t len, size_t pos)
{
    pos++;
    while (pos < len && s[pos] != '"')
        pos += s[pos] == '\\' ? 2 : 1;
    return pos < len ? pos + 1 : len;
}

size_t kiln_json_value_end(const char *s, size_t len, size_t pos)
{
    size_t depth = 0;
    do {
        char ch = s[pos];
        if (ch == '"') {
            pos = skip_string(s, len, pos);
        } else if (ch == '{' || ch == '[') {
            depth++;
            pos++;
        } else if (ch == '}' || ch == ']') {
            depth--;
            pos++;
        } else if (depth > 0) {
            pos++; /* separators, whitespace, scalars inside */
        } else {
            while (pos < len && !is_ws(s[pos]) && s[pos] != ',' && s[pos] != ']' && s[pos] != '}')
                pos++;
        }
    } while (depth > 0 && pos < len);
    return pos;
}

void kiln_json_iter_init(kiln_json_iter *it, const char *s, size_t len, kiln_span container)
{
    it->s = s;
    it->len = (size_t)container.off + container.len;
    it->pos = (size_t)container.off + 1; /* past '[' or '{' */
    (void)len;
}

int kiln_json_next_element(kiln_json_iter *it, kiln_span *el)
{
    size_t p = kiln_json_skip_ws(it->s, it->len, it->pos);
    if (p < it->len && it->s[p] == ',')
        p = kiln_json_skip_ws(it->s, it->len, p + 1);
    if (p >= it->len || it->s[p] == ']' || it->s[p] == '}') {
        it->pos = p;
        return 0;
    }
    size_t end = kiln_json_value_end(it->s, it->len, p);
    el->off = (uint32_t)p;
    el->len = (uint32_t)(end - p);
    it->pos = end;
    return 1;
}

int kiln_json_next_member(kiln_json_iter *it, kiln_span *key, kiln_span *value)
{
    if (!kiln_json_next_element(it, key)) /* the name, a string */
        return 0;
    size_t p = kiln_json_skip_ws(it->s, it->len, it->pos);
    p = kiln_json_skip_ws(it->s, it->len, p + 1); /* past ':' */
    size_t end = kiln_json_value_end(it->s, it->len, p);
    value->off = (uint32_t)p;
    value->len = (uint32_t)(end - p);
    it->pos = end;
    return 1;
}

size_t kiln_json_count(const char *s, size_t len, kiln_span container)
{
    kiln_json_iter it;
    kiln_span el, value;
    size_t n = 0;
    kiln_json_iter_init(&it, s, len, container);
    if (s[container.off] == '{') {
        while (kiln_json_next_member(&it, &el, &value))
            n++;
    } else {
        while (kiln_json_next_element(&it, &el))
            n++;
    }
    return n;
}

int kiln_json_key_is(const char *s, kiln_span key, const char *name, size_t n)
{
    const char *k = s + key.off + 1;
    size_t klen = key.len - 2;
    if (!memchr(k, '\\', klen))
        return klen == n && memcmp(k, name, n) == 0;
    /* Escapes: let jansson decode the name. */
    json_t *v = json_loadb(s + key.off, key.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    int same = json_is_string(v) && json_string_length(v) == n &&
               memcmp(json_string_value(v), name, n) == 0;
    json_decref(v);
    return same;
}

json_t *kiln_json_load_span(const char *s, kiln_span span, kiln_json_syntax *e)
{
    json_error_t je;
    json_t *v = json_loadb(s + span.off, span.len,
                           JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &je);
    if (!v && e) {
        size_t at = je.position > 0 ? (size_t)je.position - 1 : 0;
        if (at > span.len)
            at = span.len;
        syntax(e, span.off + at, "%s", je.text);
        e->too_deep = strstr(je.text, "depth") != NULL;
    }
    return v;
}

void kiln_json_line_col(const char *s, size_t len, size_t offset, int *line, int *column)
{
    int l = 1, c = 1;
    if (offset > len)
        offset = len;
    for (size_t i = 0; i < offset; i++) {
        if (s[i] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)s[i] & 0xC0) != 0x80) {
            c++; /* columns count characters, as jansson's do */
        }
    }
    *line = l;
    *column = c;
}
