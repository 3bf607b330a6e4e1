/*
 * numfmt.c - a value shown as Excel shows it under a number format, for the
 * writers that hold only text (see numfmt.h for the subset handled).
 *
 * How a number is formatted:
 *   1. The format is split into sections at ';' (not inside quotes, brackets
 *      or after a backslash) and one section is chosen: by [<op>N]
 *      conditions when the first two sections have any, else by sign
 *      (positive;negative;zero). A section ending the format that holds @
 *      is for text only.
 *   2. The number becomes decimal digits once, at the 15 significant digits
 *      Excel keeps, and every later step (percent, trailing-comma scaling,
 *      rounding) works on those digits. That is what makes 2.675 under
 *      "0.00" show 2.68 as in Excel, where rounding the binary double
 *      (2.67499999...) would give 2.67. Rounding is half away from zero.
 *   3. The section is walked token by token (digit placeholders 0 # ?,
 *      literals, grouping commas, E+ exponents, date codes) writing the text.
 *
 * Choices where Excel depends on the cell, or where it could not be checked:
 *   - General: integers below 10^15 in full (a table cell has no column
 *     width to overflow); other numbers at most 11 characters, as Excel's
 *     General shows them in a cell: 10 significant digits for 1e-4 <= |x| <
 *     1e10 (9 decimals below 1), trailing zeros removed; otherwise scientific
 *     with up to 6 significant digits, "1.23457E+11", "1E-05" (the same
 *     thresholds as printf's %.10g).
 *   - A number whose rounded value is zero keeps its sign: -0.3 under "0"
 *     shows "-0", as in Excel.
 *   - Exponents: the exponent is a multiple of the number of integer digit
 *     placeholders ("##0.0E+0" is engineering notation: 12345 -> 12.3E+3).
 *   - Conditions: the first section whose [<op>N] holds; when none holds, the
 *     third section if the first two both have conditions, else the second
 *     (else General). A negative number gets a minus sign in the first
 *     section unless its condition is [<0] or [<=0], never in the others
 *     (what LibreOffice shows for such formats; "-150" under
 *     "[<=-100]0;[>=100]0;0", "5" for -5 under "[>=100]0;0").
 *   - A negative number (or one past 9999-12-31) under a date format shows
 *     "########", as Excel fills such a cell.
 *   - Fractions ("# ?/?", "# ??/??", "?/?", "# ?/8"): the numerator is the
 *     run of placeholders before the '/', the integer part (when there is
 *     one) the placeholders before it. Excel's choice of fraction is the
 *     last convergent of the value's continued fraction whose denominator
 *     has at most as many digits as the placeholders (7 at most), computed
 *     in doubles: 123.456 under "# ??/??" is "123 26/57" as in Excel's own
 *     samples, where LibreOffice shows the closest fraction, "123 31/68". A
 *     written denominator ("# ?/8") is kept and the numerator rounded half
 *     away from zero. A number without fraction shows spaces as wide as the
 *     fraction ("5    " under "# ?/?"), or nothing of it when the fraction
 *     has only '#' placeholders, or "5 0/1" when it has a '0' one; an empty
 *     integer part keeps the space after it (" 1/2"). A fraction in a
 *     section that also has a decimal point or an exponent is General.
 *   - [Red] and the other colors are ignored: the text has no color.
 *   - Text longer than the buffer: a number falls back to General, a string
 *     under a text section is shown as it is.
 */
#include "numfmt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "../../common/banned.h"

/* ---- output ---- */

/* A bounded, always NUL-terminated output; a write that does not fit is
 * dropped whole and remembered, so a caller can fall back. */
typedef struct sink {
    char *buf;
    size_t cap;
    size_t len;
    int overflow;
} sink;

static void sink_put(sink *s, const char *p, size_t n)
{
    if (s->overflow)
        return;
    if (s->cap == 0 || n >= s->cap - s->len) {
        s->overflow = 1;
        return;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = '\0';
}

static void sink_char(sink *s, char c)
{
    sink_put(s, &c, 1);
}

static void sink_reset(sink *s)
{
    s->len = 0;
    s->overflow = 0;
    if (s->cap)
        s->buf[0] = '\0';
}

/* Bytes of the UTF-8 sequence starting with byte c (1 for stray bytes). */
static size_t utf8_seq_len(unsigned char c)
{
    if (c >= 0xF0 && c < 0xF8)
        return 4;
    if (c >= 0xE0)
        return c < 0xF0 ? 3 : 1;
    if (c >= 0xC0)
        return 2;
    return 1;
}

static size_t utf8_char_len(const char *p, const char *end)
{
    size_t n = utf8_seq_len((unsigned char)*p);
    return n <= (size_t)(end - p) ? n : (size_t)(end - p);
}

/* ---- decimal digits ---- */

#define DEC_DIGITS 15 /* Excel's precision */

/* value = 0.d[0]d[1]...d[n-1] x 10^point; n == 0 is zero. No trailing zeros. */
typedef struct decimal {
    char d[DEC_DIGITS + 1];
    int n;
    int point;
} decimal;

static void decimal_trim(decimal *x)
{
    while (x->n > 0 && x->d[x->n - 1] == '0')
        x->n--;
    if (x->n == 0)
        x->point = 0;
}

/* a >= 0 and finite. */
static void decimal_from(double a, decimal *x)
{
    x->n = 0;
    x->point = 0;
    if (a == 0)
        return;
    /* "d.dddddddddddddde+XX": the digits printf rounds correctly from the
     * binary value, which is how Excel sees a double too. */
    char tmp[48];
    snprintf(tmp, sizeof tmp, "%.*e", DEC_DIGITS - 1, a);
    x->d[0] = tmp[0];
    memcpy(x->d + 1, tmp + 2, DEC_DIGITS - 1);
    x->point = (int)strtol(tmp + DEC_DIGITS + 2, NULL, 10) + 1;
    x->n = DEC_DIGITS;
    decimal_trim(x);
}

/* Round to `decimals` digits after the point, half away from zero. */
static void decimal_round(decimal *x, int decimals)
{
    if (x->n == 0)
        return;
    int keep = x->point + decimals;
    if (keep >= x->n)
        return;
    if (keep < 0) {
        x->n = 0;
        x->point = 0;
        return;
    }
    int up = x->d[keep] >= '5';
    x->n = keep;
    if (up) {
        int i = keep - 1;
        while (i >= 0 && x->d[i] == '9')
            i--;
        if (i < 0) {
            x->d[0] = '1';
            x->n = 1;
            x->point++;
            return;
        }
        x->d[i]++;
        x->n = i + 1;
    }
    decimal_trim(x);
}

/* Digit i of the digit string ('0' outside it). */
static char decimal_digit(const decimal *x, int i)
{
    return i >= 0 && i < x->n ? x->d[i] : '0';
}

/* Number of digits before the point (0 for values below 1). */
static int decimal_int_len(const decimal *x)
{
    return x->n && x->point > 0 ? x->point : 0;
}

/* ---- General ---- */

static void put_exponent(sink *s, int e, int min_digits, int always_sign)
{
    if (e < 0)
        sink_char(s, '-');
    else if (always_sign)
        sink_char(s, '+');
    char tmp[16];
    int n = snprintf(tmp, sizeof tmp, "%0*d", min_digits, e < 0 ? -e : e);
    sink_put(s, tmp, (size_t)n);
}

/* Digits of x in fixed notation (x has no trailing zeros to hide). */
static void put_fixed(sink *s, const decimal *x)
{
    int int_len = decimal_int_len(x);
    if (int_len == 0)
        sink_char(s, '0');
    for (int i = 0; i < int_len; i++)
        sink_char(s, decimal_digit(x, i));
    if (x->n > x->point) {
        sink_char(s, '.');
        for (int i = x->point; i < x->n; i++)
            sink_char(s, decimal_digit(x, i));
    }
}

static void put_general(sink *s, double v)
{
    if (v < 0) {
        sink_char(s, '-');
        v = -v;
    }
    decimal x;
    decimal_from(v, &x);
    if (x.n == 0) {
        sink_char(s, '0');
        return;
    }
    if (x.point >= x.n && x.point <= DEC_DIGITS) {
        put_fixed(s, &x); /* an integer, shown in full */
        return;
    }
    int e = x.point - 1;
    if (e >= -4 && e <= 10) {
        decimal y = x;
        /* 11 characters: "0." and 9 decimals, or 10 digits and the point. */
        decimal_round(&y, e < 0 ? 9 : e < 9 ? 9 - e : 0);
        if (decimal_int_len(&y) <= 11) {
            put_fixed(s, &y);
            return;
        }
    }
    decimal_round(&x, 6 - x.point); /* six significant digits */
    e = x.point - 1;
    sink_char(s, x.d[0]);
    if (x.n > 1) {
        sink_char(s, '.');
        sink_put(s, x.d + 1, (size_t)(x.n - 1));
    }
    sink_char(s, 'E');
    put_exponent(s, e, 2, 1);
}

/* ---- tokens of a format section ---- */

typedef enum {
    T_END,
    T_LIT,
    T_DIGIT,
    T_POINT,
    T_COMMA,
    T_PERCENT,
    T_EXP,
    T_GENERAL,
    T_AT,
    T_DATE,
    T_AMPM,
    T_ELAPSED,
    T_COND,
    T_SKIP
} tok_kind;

typedef struct tok {
    tok_kind kind;
    const char *s; /* T_LIT: text; T_AMPM: the code as written; T_COND: inside [] */
    size_t len;    /* T_LIT/T_COND: bytes; T_DATE/T_ELAPSED: letters in the run */
    char c;        /* T_DIGIT: 0 # ?; T_EXP: + or -; T_DATE/T_ELAPSED: y m d h s */
} tok;

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int is_date_letter(int c)
{
    c = lower(c);
    return c == 'y' || c == 'm' || c == 'd' || c == 'h' || c == 's';
}

/* The token at p (p < end); returns where the next one starts. */
static const char *next_tok(const char *p, const char *end, tok *t)
{
    t->s = p;
    t->len = 1;
    t->c = 0;
    if (p >= end) {
        t->kind = T_END;
        return end;
    }
    char c = *p;
    switch (c) {
    case '"': {
        const char *q = p + 1;
        while (q < end && *q != '"')
            q++;
        t->kind = T_LIT;
        t->s = p + 1;
        t->len = (size_t)(q - (p + 1));
        return q < end ? q + 1 : end;
    }
    case '\\':
        if (p + 1 >= end) {
            t->kind = T_SKIP;
            return end;
        }
        t->kind = T_LIT;
        t->s = p + 1;
        t->len = utf8_char_len(p + 1, end);
        return p + 1 + t->len;
    case '_':
        /* Space as wide as the next character: one space in plain text. */
        t->kind = T_LIT;
        t->s = " ";
        return p + 1 < end ? p + 1 + utf8_char_len(p + 1, end) : end;
    case '*':
        /* Repeat the next character to fill the cell: nothing to fill. */
        t->kind = T_SKIP;
        return p + 1 < end ? p + 1 + utf8_char_len(p + 1, end) : end;
    case '[': {
        const char *close = memchr(p, ']', (size_t)(end - p));
        if (!close) {
            t->kind = T_SKIP;
            return end;
        }
        const char *in = p + 1;
        size_t n = (size_t)(close - in);
        if (n > 0 && in[0] == '$') {
            /* [$€-407]: the symbol before the locale id. */
            const char *dash = memchr(in + 1, '-', n - 1);
            t->kind = T_LIT;
            t->s = in + 1;
            t->len = (size_t)((dash ? dash : close) - (in + 1));
            return close + 1;
        }
        if (n > 0 && (in[0] == '<' || in[0] == '>' || in[0] == '=')) {
            t->kind = T_COND;
            t->s = in;
            t->len = n;
            return close + 1;
        }
        int first = n > 0 ? lower((unsigned char)in[0]) : 0;
        if (first == 'h' || first == 'm' || first == 's') {
            size_t i = 1;
            while (i < n && lower((unsigned char)in[i]) == first)
                i++;
            if (i == n) {
                t->kind = T_ELAPSED;
                t->c = (char)first;
                t->len = n;
                return close + 1;
            }
        }
        t->kind = T_SKIP; /* [Red], [Color 10], [DBNum1], ... */
        return close + 1;
    }
    case '0':
    case '#':
    case '?':
        t->kind = T_DIGIT;
        t->c = c;
        return p + 1;
    case '.':
        t->kind = T_POINT;
        return p + 1;
    case ',':
        t->kind = T_COMMA;
        return p + 1;
    case '%':
        t->kind = T_PERCENT;
        return p + 1;
    case '@':
        t->kind = T_AT;
        return p + 1;
    default:
        break;
    }
    if ((c == 'E' || c == 'e') && p + 1 < end && (p[1] == '+' || p[1] == '-')) {
        t->kind = T_EXP;
        t->c = p[1];
        t->len = 2;
        return p + 2;
    }
    if ((c == 'G' || c == 'g') && end - p >= 7 && strncasecmp(p, "General", 7) == 0) {
        t->kind = T_GENERAL;
        t->len = 7;
        return p + 7;
    }
    if (c == 'A' || c == 'a') {
        if (end - p >= 5 && strncasecmp(p, "AM/PM", 5) == 0) {
            t->kind = T_AMPM;
            t->len = 5;
            return p + 5;
        }
        if (end - p >= 3 && strncasecmp(p, "A/P", 3) == 0) {
            t->kind = T_AMPM;
            t->len = 3;
            return p + 3;
        }
    }
    if (is_date_letter((unsigned char)c)) {
        const char *q = p + 1;
        while (q < end && lower((unsigned char)*q) == lower((unsigned char)c))
            q++;
        t->kind = T_DATE;
        t->c = (char)lower((unsigned char)c);
        t->len = (size_t)(q - p);
        return q;
    }
    t->kind = T_LIT;
    t->len = utf8_char_len(p, end);
    return p + t->len;
}

/* ---- sections ---- */

#define MAX_SECTIONS 4

typedef enum { OP_NONE, OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE } cond_op;

typedef struct section {
    const char *p;
    const char *end;
    cond_op op;
    double limit;
    int is_date, is_text, is_general;
} section;

static void parse_cond(section *sec, const char *s, size_t n)
{
    const char *p = s, *end = s + n;
    cond_op op = OP_NONE;
    if (end - p >= 2 && p[0] == '<' && p[1] == '=')
        op = OP_LE, p += 2;
    else if (end - p >= 2 && p[0] == '>' && p[1] == '=')
        op = OP_GE, p += 2;
    else if (end - p >= 2 && p[0] == '<' && p[1] == '>')
        op = OP_NE, p += 2;
    else if (*p == '<')
        op = OP_LT, p++;
    else if (*p == '>')
        op = OP_GT, p++;
    else if (*p == '=')
        op = OP_EQ, p++;
    char num[64];
    size_t len = (size_t)(end - p);
    if (len == 0 || len >= sizeof num)
        return;
    memcpy(num, p, len);
    num[len] = '\0';
    char *stop;
    double limit = strtod(num, &stop);
    if (stop == num || *stop != '\0')
        return;
    sec->op = op;
    sec->limit = limit;
}

static void analyse_section(section *sec)
{
    sec->op = OP_NONE;
    sec->is_date = sec->is_text = sec->is_general = 0;
    tok t;
    for (const char *p = next_tok(sec->p, sec->end, &t); t.kind != T_END;
         p = next_tok(p, sec->end, &t)) {
        switch (t.kind) {
        case T_DATE:
        case T_AMPM:
        case T_ELAPSED:
            sec->is_date = 1;
            break;
        case T_AT:
            sec->is_text = 1;
            break;
        case T_GENERAL:
            sec->is_general = 1;
            break;
        case T_COND:
            if (sec->op == OP_NONE)
                parse_cond(sec, t.s, t.len);
            break;
        default:
            break;
        }
    }
}

/* Split format into up to MAX_SECTIONS sections; returns how many. */
static int split_sections(const char *format, section *secs)
{
    const char *end = format + strlen(format);
    int count = 0;
    const char *start = format;
    tok t;
    const char *p = format;
    for (;;) {
        const char *tok_start = p;
        p = next_tok(p, end, &t);
        int at_end = t.kind == T_END;
        if (at_end || (t.kind == T_LIT && t.len == 1 && *t.s == ';' && t.s == tok_start)) {
            secs[count].p = start;
            secs[count].end = at_end ? end : tok_start;
            analyse_section(&secs[count]);
            count++;
            if (at_end || count == MAX_SECTIONS)
                break;
            start = p;
        }
    }
    return count;
}

static int cond_holds(const section *sec, double v)
{
    switch (sec->op) {
    case OP_LT:
        return v < sec->limit;
    case OP_LE:
        return v <= sec->limit;
    case OP_GT:
        return v > sec->limit;
    case OP_GE:
        return v >= sec->limit;
    case OP_EQ:
        return v == sec->limit;
    case OP_NE:
        return v != sec->limit;
    default:
        return 0;
    }
}

/* 1 when the section is for the negative numbers, [<0] or [<=0]: it writes
 * its own sign, if any. */
static int cond_is_negative(const section *sec)
{
    return (sec->op == OP_LT || sec->op == OP_LE) && sec->limit == 0;
}

/* The number sections: all but a trailing text section. */
static int number_section_count(const section *secs, int count)
{
    if (count == MAX_SECTIONS)
        return MAX_SECTIONS - 1;
    if (secs[count - 1].is_text)
        return count - 1;
    return count;
}

/* Index of the section for v (-1 = General), and whether a minus sign goes
 * in front of it (the value itself is then formatted without sign). */
static int choose_section(const section *secs, int count, double v, int *minus)
{
    int n = number_section_count(secs, count);
    *minus = v < 0;
    if (n == 0)
        return -1;
    if (secs[0].op != OP_NONE || (n > 1 && secs[1].op != OP_NONE)) {
        int idx;
        if (secs[0].op != OP_NONE && cond_holds(&secs[0], v))
            idx = 0;
        else if (n > 1 && secs[1].op != OP_NONE && cond_holds(&secs[1], v))
            idx = 1;
        else if (n > 2 && secs[0].op != OP_NONE && secs[1].op != OP_NONE)
            idx = 2;
        else if (n > 1 && secs[1].op == OP_NONE)
            idx = 1;
        else
            return -1;
        /* As LibreOffice does it for Excel's files: the first section shows
         * the sign unless it is the [<0] section; the others never do. */
        if (idx > 0 || cond_is_negative(&secs[0]))
            *minus = 0;
        return idx;
    }
    if (n == 1)
        return 0;
    if (v < 0) {
        *minus = 0; /* the negative section writes its own sign, if any */
        return 1;
    }
    if (n == 3 && v == 0)
        return 2;
    return 0;
}

/* ---- number sections ---- */

#define MAX_FRAC 30 /* Excel's most decimals */

typedef struct numinfo {
    int int_ph;  /* digit placeholders before the point (or the E) */
    int frac_ph; /* after the point, at most MAX_FRAC */
    char frac_kind[MAX_FRAC];
    int exp_min;       /* '0' placeholders of the exponent */
    int grouping;      /* a comma between integer placeholders */
    int scale;         /* trailing commas: divide by 1000 each */
    int percent;       /* multiply by 100 each */
    int sci, sci_plus; /* E+ / E- */
} numinfo;

enum { PHASE_INT, PHASE_FRAC, PHASE_EXP };

typedef enum { COMMA_LITERAL, COMMA_GROUP, COMMA_SCALE, COMMA_IGNORE } comma_role;

/* A comma right after a digit placeholder groups thousands when another
 * placeholder follows in the integer part, and scales by 1000 when none
 * follows; anywhere else it is a literal. */
static comma_role comma_kind(int after_digit, int phase, const char *next, const char *end)
{
    if (!after_digit || phase == PHASE_EXP)
        return COMMA_LITERAL;
    tok t;
    next_tok(next, end, &t);
    if (t.kind == T_DIGIT)
        return phase == PHASE_INT ? COMMA_GROUP : COMMA_IGNORE;
    return COMMA_SCALE;
}

static void analyse_number(const section *sec, numinfo *ni)
{
    memset(ni, 0, sizeof *ni);
    int phase = PHASE_INT, after_digit = 0;
    tok t;
    for (const char *p = next_tok(sec->p, sec->end, &t); t.kind != T_END;
         p = next_tok(p, sec->end, &t)) {
        switch (t.kind) {
        case T_DIGIT:
            if (phase == PHASE_INT)
                ni->int_ph++;
            else if (phase == PHASE_FRAC) {
                if (ni->frac_ph < MAX_FRAC)
                    ni->frac_kind[ni->frac_ph++] = t.c;
            } else if (t.c == '0')
                ni->exp_min++;
            after_digit = 1;
            break;
        case T_COMMA:
            switch (comma_kind(after_digit, phase, p, sec->end)) {
            case COMMA_GROUP:
                ni->grouping = 1;
                break;
            case COMMA_SCALE:
                ni->scale++;
                break;
            case COMMA_IGNORE:
                break;
            case COMMA_LITERAL:
                after_digit = 0;
                break;
            }
            break;
        case T_POINT:
            if (phase == PHASE_INT)
                phase = PHASE_FRAC;
            after_digit = 0;
            break;
        case T_PERCENT:
            ni->percent++;
            after_digit = 0;
            break;
        case T_EXP:
            if (phase != PHASE_EXP && ni->int_ph + ni->frac_ph > 0) {
                ni->sci = 1;
                ni->sci_plus = t.c == '+';
                phase = PHASE_EXP;
            }
            after_digit = 0;
            break;
        case T_SKIP:
        case T_COND:
            break;
        default:
            after_digit = 0;
            break;
        }
    }
}

/* State of the emitting walk over integer placeholders. */
typedef struct intwalk {
    const decimal *x;
    int int_len; /* digits of the integer part */
    int int_ph;
    int seen; /* integer placeholders met so far */
    int grouping;
} intwalk;

static void put_int_position(sink *s, const intwalk *w, int pos, char kind)
{
    int comma = w->grouping && pos > 0 && pos % 3 == 0;
    if (pos < w->int_len) {
        sink_char(s, decimal_digit(w->x, w->int_len - 1 - pos));
    } else if (kind == '0') {
        sink_char(s, '0');
    } else if (kind == '?') {
        sink_char(s, ' ');
        if (comma)
            sink_char(s, ' ');
        return;
    } else {
        return; /* '#' without a digit shows nothing */
    }
    if (comma)
        sink_char(s, ',');
}

/* All integer digits where the first placeholder is, the rest in theirs. */
static void put_int_placeholder(sink *s, intwalk *w, char kind)
{
    int i = w->seen++;
    int pos = w->int_ph - 1 - i;
    if (i == 0)
        for (int extra = w->int_len - 1; extra > pos; extra--)
            put_int_position(s, w, extra, '0');
    put_int_position(s, w, pos, kind);
}

/* ---- fractions ---- */

/* Excel shows at most 7 denominator digits, however many placeholders. */
#define MAX_DEN_DIGITS 7

/* Where the fraction of a section such as "# ??/??" or "0 ?/8" is: the
 * numerator is the run of digit placeholders right before the '/', the
 * denominator the placeholders (or the number) right after it, spaces
 * allowed around the '/'; placeholders before the numerator are the
 * integer part. */
typedef struct fraction_fmt {
    const char *sep; /* after the last integer placeholder (= num when none) */
    const char *num; /* the numerator's placeholders, one byte each */
    int num_ph;
    int gap_left, gap_right; /* spaces before and after the '/' */
    const char *den;         /* the denominator as written: placeholders or digits */
    int den_len;
    const char *den_end; /* where the rest of the section starts */
    double fixed;        /* a denominator written as a number ("# ?/8"), else 0 */
    int int_ph;          /* integer placeholders: 0 = an improper fraction ("?/?") */
    int forced;          /* a '0' placeholder in the fraction: a zero fraction shows */
    int any_q;           /* a '?' placeholder in the fraction: blanks are spaces */
} fraction_fmt;

static int is_plain_char(const tok *t, const char *start, char c)
{
    return t->kind == T_LIT && t->s == start && t->len == 1 && *t->s == c;
}

static const char *skip_spaces(const char *p, const char *end, int *count)
{
    *count = 0;
    while (p < end && *p == ' ') {
        p++;
        (*count)++;
    }
    return p;
}

/* The denominator at p: placeholders or a number; 1 when there is one. */
static int parse_denominator(const char *p, const char *end, fraction_fmt *ff)
{
    tok t;
    const char *next = next_tok(p, end, &t);
    ff->den = p;
    ff->fixed = 0;
    if (t.kind == T_DIGIT) {
        while (t.kind == T_DIGIT) {
            p = next;
            next = next_tok(p, end, &t);
        }
    } else if (t.kind == T_LIT && t.s == p && t.len == 1 && *p >= '1' && *p <= '9') {
        /* "8", "16", "100": written digits ('0' is a placeholder token too) */
        while ((t.kind == T_LIT && t.s == p && t.len == 1 && *p >= '0' && *p <= '9') ||
               (t.kind == T_DIGIT && t.c == '0')) {
            if (ff->fixed < 1e9)
                ff->fixed = ff->fixed * 10 + (*p - '0');
            p = next;
            next = next_tok(p, end, &t);
        }
    } else {
        return 0;
    }
    ff->den_len = (int)(p - ff->den);
    ff->den_end = p;
    return 1;
}

/* 1 when the section shows a fraction, 0 when it does not, -1 when it
 * also has a decimal point or an exponent (no such number exists: shown as
 * General, as LibreOffice shows "0.0 ?/?"). */
static int find_fraction(const section *sec, fraction_fmt *ff)
{
    memset(ff, 0, sizeof *ff);
    /* Most formats have no '/' at all: no token walk for them. */
    if (!memchr(sec->p, '/', (size_t)(sec->end - sec->p)))
        return 0;
    int decimal_or_exp = 0;
    tok t;
    for (const char *p = next_tok(sec->p, sec->end, &t); t.kind != T_END;
         p = next_tok(p, sec->end, &t))
        if (t.kind == T_POINT || t.kind == T_EXP)
            decimal_or_exp = 1;

    const char *run = NULL, *run_end = NULL, *last_int_end = NULL;
    int run_len = 0, before_run = 0, digits = 0;
    const char *p = sec->p;
    while (p < sec->end) {
        const char *start = p;
        p = next_tok(p, sec->end, &t);
        if (t.kind == T_END)
            break;
        if (t.kind == T_DIGIT) {
            if (!run || run_end != start) {
                last_int_end = run_end; /* the previous run belongs to the integer part */
                before_run = digits;
                run = start;
                run_len = 0;
            }
            run_len++;
            digits++;
            run_end = p;
            continue;
        }
        if (!run || !is_plain_char(&t, start, '/'))
            continue;
        int gap;
        skip_spaces(run_end, start, &gap);
        if (run_end + gap != start)
            continue; /* something other than spaces between the digits and the '/' */
        const char *den = skip_spaces(p, sec->end, &ff->gap_right);
        if (!parse_denominator(den, sec->end, ff))
            return 0;
        ff->num = run;
        ff->num_ph = run_len;
        ff->gap_left = gap;
        ff->int_ph = before_run;
        ff->sep = before_run ? last_int_end : run;
        for (int i = 0; i < run_len; i++) {
            ff->forced |= run[i] == '0';
            ff->any_q |= run[i] == '?';
        }
        if (ff->fixed == 0)
            for (int i = 0; i < ff->den_len; i++) {
                ff->forced |= ff->den[i] == '0';
                ff->any_q |= ff->den[i] == '?';
            }
        return decimal_or_exp ? -1 : 1;
    }
    return 0;
}

/* The last convergent of x's continued fraction whose denominator is at
 * most max_den, computed in doubles the way Excel does it (and SheetJS and
 * Apache POI after it, whose tests compare with Excel): 123.456 under
 * "# ?/?" is 123 1/2 and under "# ??/??" 123 26/57, as Excel's own Format
 * Cells samples show, where the closest fraction would be 4/9 and 31/68
 * (what LibreOffice shows). The doubles' rounding matters: 0.3 shows as
 * 2/7 but 1.3 as 1 1/3, as in Excel. */
static void convergent(double x, double max_den, double *num, double *den)
{
    double p2 = 0, p1 = 1, p = 0, q2 = 1, q1 = 0, q = 0, b = x;
    for (int i = 0; i < 64 && q1 < max_den; i++) {
        double a = floor(b);
        p = a * p1 + p2;
        q = a * q1 + q2;
        if (b - a < 5e-8)
            break;
        b = 1 / (b - a);
        p2 = p1, p1 = p;
        q2 = q1, q1 = q;
    }
    if (q > max_den) {
        if (q1 > max_den)
            p = p2, q = q2;
        else
            p = p1, q = q1;
    }
    *num = p;
    *den = q;
}

/* A whole number's digits; zero as "0" when it must show. */
static void decimal_whole(double v, int zero_shows, decimal *x)
{
    decimal_from(v, x);
    if (x->n == 0 && zero_shows) {
        x->d[0] = '0';
        x->n = 1;
        x->point = 1;
    }
}

/* The numerator, the '/' and the denominator. blank: a whole number under
 * a format without '0' placeholders, whose fraction shows as spaces (or
 * nothing, under '#' alone) the width of the fraction. */
static void put_fraction_body(sink *s, const fraction_fmt *ff, double num, double den, int blank)
{
    if (blank) {
        if (!ff->any_q)
            return;
        int width = ff->gap_left + 1 + ff->gap_right + (ff->fixed > 0 ? ff->den_len : 0);
        for (int i = 0; i < ff->num_ph; i++)
            width += ff->num[i] == '?';
        for (int i = 0; ff->fixed == 0 && i < ff->den_len; i++)
            width += ff->den[i] == '?';
        for (int i = 0; i < width; i++)
            sink_char(s, ' ');
        return;
    }
    decimal x;
    decimal_whole(num, 1, &x);
    intwalk w = {&x, decimal_int_len(&x), ff->num_ph, 0, 0};
    for (int i = 0; i < ff->num_ph; i++)
        put_int_placeholder(s, &w, ff->num[i]);
    for (int i = 0; i < ff->gap_left; i++)
        sink_char(s, ' ');
    sink_char(s, '/');
    for (int i = 0; i < ff->gap_right; i++)
        sink_char(s, ' ');
    if (ff->fixed > 0) {
        sink_put(s, ff->den, (size_t)ff->den_len);
        return;
    }
    decimal_whole(den, 1, &x);
    int len = decimal_int_len(&x);
    int has_zero = memchr(ff->den, '0', (size_t)ff->den_len) != NULL;
    if (has_zero) {
        /* '0' placeholders: right-aligned and zero-filled, like an integer */
        intwalk dw = {&x, len, ff->den_len, 0, 0};
        for (int i = 0; i < ff->den_len; i++)
            put_int_placeholder(s, &dw, ff->den[i]);
        return;
    }
    /* left-aligned: the digits, then a space for each '?' left over */
    for (int i = 0; i < len; i++)
        sink_char(s, decimal_digit(&x, i));
    for (int i = len; i < ff->den_len; i++)
        if (ff->den[i] == '?')
            sink_char(s, ' ');
}

/* Format a (>= 0) under a fraction section: "# ?/?" shows 1.25 as "1 1/4",
 * 0.5 as " 1/2" (the space stays), 5 as "5    "; "?/?" shows 1.25 as
 * "5/4"; "# ?/8" shows 0.3 as " 2/8" (a written denominator is kept and
 * the numerator rounded half away from zero). */
static void put_fraction_section(sink *s, const section *sec, double a, const fraction_fmt *ff)
{
    numinfo ni;
    analyse_number(sec, &ni);
    for (int i = 0; i < ni.percent; i++)
        a *= 100;
    for (int i = 0; i < ni.scale; i++)
        a /= 1000;

    double whole = 0, num, den;
    if (ff->fixed > 0) {
        den = ff->fixed;
        if (ff->int_ph)
            whole = floor(a);
        num = floor((a - whole) * den + 0.5);
        if (ff->int_ph && num >= den) {
            whole += 1;
            num = 0;
        }
    } else {
        int digits = ff->den_len;
        if (digits > MAX_DEN_DIGITS)
            digits = MAX_DEN_DIGITS;
        convergent(a, pow(10, digits) - 1, &num, &den);
        if (ff->int_ph) {
            whole = floor(num / den);
            num -= whole * den;
        }
    }
    int blank = ff->int_ph && num == 0 && !ff->forced;

    /* The integer part and what comes before the numerator. */
    decimal wx;
    decimal_whole(whole, blank, &wx);
    intwalk w = {&wx, decimal_int_len(&wx), ff->int_ph, 0, ni.grouping};
    int after_digit = 0;
    tok t;
    const char *p = sec->p;
    while (p < ff->num) {
        const char *start = p;
        p = next_tok(p, ff->num, &t);
        switch (t.kind) {
        case T_DIGIT:
            put_int_placeholder(s, &w, t.c);
            after_digit = 1;
            continue;
        case T_COMMA:
            if (comma_kind(after_digit, PHASE_INT, p, sec->end) != COMMA_LITERAL)
                continue; /* grouping (or scaling): the digits write it */
            sink_char(s, ',');
            break;
        case T_LIT:
            /* "# #/#" shows a whole number without the space before the
             * fraction: nothing of the fraction shows. */
            if (!(blank && !ff->any_q && start >= ff->sep && t.len == 1 && *t.s == ' '))
                sink_put(s, t.s, t.len);
            break;
        case T_PERCENT:
            sink_char(s, '%');
            break;
        default:
            break;
        }
        after_digit = 0;
    }

    put_fraction_body(s, ff, num, den, blank);

    /* What follows the denominator: literals (" in"). */
    for (p = next_tok(ff->den_end, sec->end, &t); t.kind != T_END;
         p = next_tok(p, sec->end, &t)) {
        if (t.kind == T_LIT)
            sink_put(s, t.s, t.len);
        else if (t.kind == T_PERCENT)
            sink_char(s, '%');
    }
}

/* Format |v| (a >= 0) under a number section (a fraction section above). */
static void put_number_section(sink *s, const section *sec, double a)
{
    fraction_fmt ff;
    int fraction = find_fraction(sec, &ff);
    if (fraction != 0) {
        if (fraction > 0)
            put_fraction_section(s, sec, a, &ff);
        else
            put_general(s, a);
        return;
    }
    numinfo ni;
    analyse_number(sec, &ni);
    decimal x;
    decimal_from(a, &x);
    if (x.n)
        x.point += 2 * ni.percent - 3 * ni.scale;
    int exponent = 0;
    if (ni.sci) {
        if (x.n) {
            if (ni.int_ph > 0) {
                int q = x.point - 1;
                /* floor division: the exponent a multiple of int_ph */
                int m = (q >= 0 ? q / ni.int_ph : -((-q + ni.int_ph - 1) / ni.int_ph));
                exponent = m * ni.int_ph;
            } else {
                exponent = x.point;
            }
            x.point -= exponent;
        }
        decimal_round(&x, ni.frac_ph);
        if (x.n && ni.int_ph > 0 && x.point - 1 >= ni.int_ph) {
            /* rounding carried into one more integer digit */
            int adjust = ((x.point - 1) / ni.int_ph) * ni.int_ph;
            x.point -= adjust;
            exponent += adjust;
        }
    } else {
        decimal_round(&x, ni.frac_ph);
    }

    /* Trailing fraction zeros that '#' and '?' placeholders hide. */
    int trim_from = ni.frac_ph;
    for (int j = ni.frac_ph - 1; j >= 0; j--) {
        if (ni.frac_kind[j] == '0' || decimal_digit(&x, x.point + j) != '0')
            break;
        trim_from = j;
    }

    intwalk w = {&x, decimal_int_len(&x), ni.int_ph, 0, ni.grouping};
    int phase = PHASE_INT, after_digit = 0, frac_seen = 0, exp_written = 0;
    tok t;
    for (const char *p = next_tok(sec->p, sec->end, &t); t.kind != T_END;
         p = next_tok(p, sec->end, &t)) {
        switch (t.kind) {
        case T_DIGIT:
            if (phase == PHASE_INT) {
                put_int_placeholder(s, &w, t.c);
            } else if (phase == PHASE_FRAC) {
                int j = frac_seen++;
                if (j < trim_from)
                    sink_char(s, decimal_digit(&x, x.point + j));
                else if (t.c == '?')
                    sink_char(s, ' ');
            } else if (!exp_written) {
                int e = exponent < 0 ? -exponent : exponent;
                char tmp[16];
                int len = snprintf(tmp, sizeof tmp, "%0*d", ni.exp_min ? ni.exp_min : 1, e);
                sink_put(s, tmp, (size_t)len);
                exp_written = 1;
            }
            after_digit = 1;
            break;
        case T_COMMA:
            switch (comma_kind(after_digit, phase, p, sec->end)) {
            case COMMA_LITERAL:
                sink_char(s, ',');
                after_digit = 0;
                break;
            default:
                break;
            }
            break;
        case T_POINT:
            if (phase == PHASE_INT) {
                if (ni.int_ph == 0 && !ni.sci)
                    for (int i = 0; i < w.int_len; i++)
                        sink_char(s, decimal_digit(&x, i));
                phase = PHASE_FRAC;
            }
            sink_char(s, '.');
            after_digit = 0;
            break;
        case T_PERCENT:
            sink_char(s, '%');
            after_digit = 0;
            break;
        case T_EXP:
            if (phase != PHASE_EXP && ni.int_ph + ni.frac_ph > 0) {
                phase = PHASE_EXP;
                sink_char(s, 'E');
                if (exponent < 0)
                    sink_char(s, '-');
                else if (ni.sci_plus)
                    sink_char(s, '+');
            } else {
                sink_put(s, t.s, t.len);
            }
            after_digit = 0;
            break;
        case T_GENERAL:
            put_general(s, a);
            after_digit = 0;
            break;
        case T_LIT:
            sink_put(s, t.s, t.len);
            after_digit = 0;
            break;
        case T_DATE:
        case T_AMPM:
            sink_put(s, t.s, t.len); /* not reached: such a section is a date */
            after_digit = 0;
            break;
        default:
            break;
        }
    }
}

/* ---- date sections ---- */

static const char *const month_names[12] = {"January",   "February", "March",    "April",
                                            "May",       "June",     "July",     "August",
                                            "September", "October",  "November", "December"};
static const char *const day_names[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                         "Thursday", "Friday", "Saturday"};

/* Howard Hinnant's civil_from_days: days since 1970-01-01 -> y, m, d. */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

typedef struct datetime {
    int64_t year;
    unsigned month, day, weekday; /* weekday 0 = Sunday */
    int64_t days;                 /* whole days (for elapsed hours) */
    unsigned hour, minute, second;
    unsigned sub; /* fraction of a second in sub_digits digits */
} datetime;

/* An Excel 1900-system serial, split; sub_digits (0..3) is the precision of
 * the seconds shown, to which the time is rounded (Excel rounds the time to
 * what it shows and truncates the larger units). */
static void split_serial(double v, int sub_digits, datetime *dt)
{
    static const int64_t pow10[4] = {1, 10, 100, 1000};
    int64_t days = (int64_t)floor(v);
    double frac = v - (double)days;
    int64_t per_day = 86400 * pow10[sub_digits];
    int64_t units = (int64_t)floor(frac * (double)per_day + 0.5);
    if (units >= per_day) {
        days++;
        units -= per_day;
    }
    dt->days = days;
    dt->sub = (unsigned)(units % pow10[sub_digits]);
    int64_t secs = units / pow10[sub_digits];
    dt->hour = (unsigned)(secs / 3600);
    dt->minute = (unsigned)(secs / 60 % 60);
    dt->second = (unsigned)(secs % 60);
    /* Excel counts the day 1900-02-29 that never was (serial 60), so its
     * weekdays before March 1900 are one off from the calendar's; the
     * formula follows Excel (serial 1 is a Sunday). */
    dt->weekday = (unsigned)((days + 6) % 7);
    if (days == 0) {
        dt->year = 1900, dt->month = 1, dt->day = 0; /* Excel's 1900-01-00 */
    } else if (days == 60) {
        dt->year = 1900, dt->month = 2, dt->day = 29;
    } else {
        /* serial 61 = 1900-03-01 = 1899-12-30 + 61; serial 1 = 1899-12-31 + 1 */
        civil_from_days(days - (days > 60 ? 25569 : 25568), &dt->year, &dt->month, &dt->day);
    }
}

static void put_num(sink *s, int64_t v, int width)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%0*lld", width, (long long)v);
    sink_put(s, tmp, (size_t)n);
}

static void put_name(sink *s, const char *name, size_t max)
{
    size_t n = strlen(name);
    sink_put(s, name, n < max ? n : max);
}

/* The next date code after p: 'h', 'm', 's', 'y', 'd' (elapsed counted), 0 = none. */
static char next_date_code(const char *p, const char *end)
{
    tok t;
    for (p = next_tok(p, end, &t); t.kind != T_END; p = next_tok(p, end, &t))
        if (t.kind == T_DATE || t.kind == T_ELAPSED)
            return t.c;
    return 0;
}

static void put_date_section(sink *s, const section *sec, double v)
{
    /* Excel has no dates before its day 0 nor after 9999-12-31. */
    if (v < 0 || v >= (double)KILN_SERIAL_MAX + 1) {
        sink_put(s, "########", 8);
        return;
    }
    int ampm = 0, sub_digits = 0;
    tok t, t2;
    for (const char *p = next_tok(sec->p, sec->end, &t); t.kind != T_END;
         p = next_tok(p, sec->end, &t)) {
        if (t.kind == T_AMPM)
            ampm = 1;
        if (t.kind == T_POINT) {
            int zeros = 0;
            for (const char *q = next_tok(p, sec->end, &t2); t2.kind == T_DIGIT && t2.c == '0';
                 q = next_tok(q, sec->end, &t2))
                zeros++;
            if (zeros > sub_digits)
                sub_digits = zeros > 3 ? 3 : zeros;
        }
    }
    datetime dt;
    split_serial(v, sub_digits, &dt);

    char prev_code = 0;
    for (const char *p = next_tok(sec->p, sec->end, &t); t.kind != T_END;
         p = next_tok(p, sec->end, &t)) {
        int width = t.len >= 2 ? 2 : 1;
        switch (t.kind) {
        case T_DATE:
            switch (t.c) {
            case 'y':
                if (t.len <= 2)
                    put_num(s, dt.year % 100, 2);
                else
                    put_num(s, dt.year, 4);
                break;
            case 'm':
                /* minutes right after hours or right before seconds */
                if (prev_code == 'h' || next_date_code(p, sec->end) == 's')
                    put_num(s, dt.minute, width);
                else if (t.len <= 2)
                    put_num(s, dt.month, width);
                else if (t.len == 5)
                    put_name(s, month_names[dt.month - 1], 1);
                else
                    put_name(s, month_names[dt.month - 1], t.len == 3 ? 3 : 99);
                break;
            case 'd':
                if (t.len <= 2)
                    put_num(s, dt.day, width);
                else
                    put_name(s, day_names[dt.weekday], t.len == 3 ? 3 : 99);
                break;
            case 'h':
                if (ampm)
                    put_num(s, dt.hour % 12 ? dt.hour % 12 : 12, width);
                else
                    put_num(s, dt.hour, width);
                break;
            case 's':
                put_num(s, dt.second, width);
                break;
            default:
                break;
            }
            prev_code = t.c;
            break;
        case T_ELAPSED: {
            int64_t hours = dt.days * 24 + dt.hour;
            int64_t value = t.c == 'h'   ? hours
                            : t.c == 'm' ? hours * 60 + dt.minute
                                         : (hours * 60 + dt.minute) * 60 + dt.second;
            put_num(s, value, (int)(t.len > 2 ? 2 : t.len));
            prev_code = t.c;
            break;
        }
        case T_AMPM:
            if (t.len == 5)
                sink_put(s, dt.hour < 12 ? "AM" : "PM", 2);
            else
                sink_char(s, dt.hour < 12 ? t.s[0] : t.s[2]);
            break;
        case T_POINT: {
            int zeros = 0;
            const char *q = next_tok(p, sec->end, &t2);
            while (t2.kind == T_DIGIT && t2.c == '0') {
                zeros++;
                p = q;
                q = next_tok(q, sec->end, &t2);
            }
            sink_char(s, '.');
            if (zeros) {
                char tmp[8];
                snprintf(tmp, sizeof tmp, "%0*u", sub_digits, dt.sub);
                sink_put(s, tmp, (size_t)(zeros < sub_digits ? zeros : sub_digits));
            }
            break;
        }
        case T_LIT:
        case T_EXP:
            sink_put(s, t.s, t.len);
            break;
        case T_DIGIT:
        case T_COMMA:
        case T_PERCENT:
            sink_char(s, *t.s);
            break;
        default:
            break;
        }
    }
}

/* ---- text sections ---- */

static void put_text_section(sink *s, const section *sec, const char *text, size_t len)
{
    tok t;
    for (const char *p = next_tok(sec->p, sec->end, &t); t.kind != T_END;
         p = next_tok(p, sec->end, &t)) {
        switch (t.kind) {
        case T_AT:
            sink_put(s, text, len);
            break;
        case T_SKIP:
        case T_COND:
            break;
        case T_LIT:
            sink_put(s, t.s, t.len);
            break;
        default:
            sink_put(s, t.s, t.len);
            break; /* other codes are literal here */
        }
    }
}

/* ---- the interface ---- */

static int is_general(const char *format)
{
    return !format || !*format || strcasecmp(format, "General") == 0;
}

size_t kiln_format_number(double number, const char *format, char *buf, size_t cap)
{
    sink s = {buf, cap, 0, 0};
    if (cap == 0)
        return 0;
    buf[0] = '\0';
    if (!isfinite(number)) {
        sink_put(&s, "#NUM!", 5);
        return s.len;
    }
    if (is_general(format)) {
        put_general(&s, number);
        return s.len;
    }
    section secs[MAX_SECTIONS];
    int count = split_sections(format, secs);
    int minus;
    int idx = choose_section(secs, count, number, &minus);
    if (idx < 0) {
        put_general(&s, number);
        return s.len;
    }
    const section *sec = &secs[idx];
    double a = fabs(number);
    if (sec->is_date) {
        put_date_section(&s, sec, minus ? -a : a);
    } else {
        if (minus)
            sink_char(&s, '-');
        put_number_section(&s, sec, a);
    }
    if (s.overflow) {
        sink_reset(&s);
        put_general(&s, number);
    }
    return s.len;
}

int kiln_format_is_date(const char *format)
{
    if (is_general(format))
        return 0;
    section secs[MAX_SECTIONS];
    int count = split_sections(format, secs);
    return secs[0].is_date || (count > 1 && secs[1].is_date);
}

/* The text of a string under format's text section, or the string itself. */
static const char *display_text(const char *text, size_t text_len, const char *format, char *buf,
                                size_t cap, size_t *len)
{
    *len = text_len;
    if (is_general(format))
        return text;
    section secs[MAX_SECTIONS];
    int count = split_sections(format, secs);
    const section *text_sec = NULL;
    if (count == MAX_SECTIONS)
        text_sec = &secs[MAX_SECTIONS - 1];
    else if (secs[count - 1].is_text)
        text_sec = &secs[count - 1];
    if (!text_sec)
        return text;
    sink s = {buf, cap, 0, 0};
    if (cap)
        buf[0] = '\0';
    put_text_section(&s, text_sec, text, text_len);
    if (s.overflow || cap == 0)
        return text;
    *len = s.len;
    return buf;
}

const char *kiln_cell_number_format(const kiln_cell *cell, const kiln_column *col)
{
    const char *col_format = col ? col->number_format : NULL;
    if (cell->number_format)
        return cell->number_format;
    if (cell->kind != KILN_CELL_DATE && cell->kind != KILN_CELL_DATETIME)
        return col_format;
    /* As the xlsx writer stores them: the column's format when it shows
     * dates, else the default. */
    return kiln_format_is_date(col_format) ? col_format
           : cell->kind == KILN_CELL_DATE  ? "yyyy-mm-dd"
                                           : "yyyy-mm-dd hh:mm";
}

const char *kiln_cell_display(const kiln_cell *cell, const kiln_column *col, char *buf,
                              size_t cap, size_t *len)
{
    const char *col_format = col ? col->number_format : NULL;
    const char *format = cell->number_format ? cell->number_format : col_format;
    switch (cell->kind) {
    case KILN_CELL_NUMBER:
        *len = kiln_format_number(cell->number, format, buf, cap);
        return buf;
    case KILN_CELL_STRING:
        return display_text(cell->text, cell->text_len, format, buf, cap, len);
    case KILN_CELL_BOOL:
        *len = cell->number != 0 ? 4 : 5;
        return cell->number != 0 ? "TRUE" : "FALSE";
    case KILN_CELL_DATE:
    case KILN_CELL_DATETIME:
        *len = kiln_format_number(cell->number, kiln_cell_number_format(cell, col), buf, cap);
        return buf;
    case KILN_CELL_FORMULA:
        switch (cell->cached_kind) {
        case KILN_CELL_NUMBER:
            *len = kiln_format_number(cell->cached_number, format, buf, cap);
            return buf;
        case KILN_CELL_STRING:
            return display_text(cell->cached_text ? cell->cached_text : "",
                                cell->cached_text ? strlen(cell->cached_text) : 0, format, buf,
                                cap, len);
        case KILN_CELL_BOOL:
            *len = cell->cached_number != 0 ? 4 : 5;
            return cell->cached_number != 0 ? "TRUE" : "FALSE";
        default:
            *len = 0;
            return "";
        }
    case KILN_CELL_URL:
        if (cell->link_text) {
            *len = strlen(cell->link_text);
            return cell->link_text;
        }
        *len = cell->text_len;
        return cell->text;
    case KILN_CELL_BLANK:
    default:
        *len = 0;
        return "";
    }
}

int kiln_column_is_numeric(const kiln_column *col)
{
    if (!col)
        return 0;
    switch (col->type) {
    case KILN_COL_NUMBER:
    case KILN_COL_INTEGER:
    case KILN_COL_CURRENCY:
    case KILN_COL_PERCENT:
    case KILN_COL_DATE:
    case KILN_COL_DATETIME:
        return 1;
    case KILN_COL_STRING:
    case KILN_COL_BOOLEAN:
        return 0;
    case KILN_COL_AUTO:
    default:
        /* An explicit number format other than text says "numbers here". */
        return col->number_format && !is_general(col->number_format) &&
               strcmp(col->number_format, "@") != 0;
    }
}

int kiln_cell_is_numeric(const kiln_cell *cell)
{
    switch (cell->kind) {
    case KILN_CELL_NUMBER:
    case KILN_CELL_DATE:
    case KILN_CELL_DATETIME:
        return 1;
    case KILN_CELL_FORMULA:
        return cell->cached_kind == KILN_CELL_NUMBER;
    default:
        return 0;
    }
}
