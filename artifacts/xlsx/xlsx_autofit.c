/*
 * xlsx_autofit.c - column widths from content, the way XlsxWriter's
 * autofit() estimates them: the pixel width of each cell's displayed text in
 * Calibri 11, the widest cell of a column plus Excel's 7 pixel padding,
 * converted to Excel's character units and capped at 255.
 *
 * The widths are approximate by design (no font is loaded): our own table of
 * Calibri 11 advance widths for ASCII, 8 pixels for other alphabetic scripts
 * and 15 for wide (CJK, Hangul, full-width, emoji) characters. Numbers are
 * measured as their number format would show them, without formatting them:
 * digits are counted arithmetically, so measuring costs a few comparisons
 * per cell rather than an snprintf.
 */
#include <math.h>
#include <string.h>

#include "xlsx_internal.h"
#include "../../common/banned.h"

#define DIGIT_PX 7
#define MAX_COL_PX 1790 /* 255 characters */
#define WIDE_PX 15
#define OTHER_PX 8

/* Calibri 11 advance widths in pixels at 96 dpi, for ' ' .. '~'. */
static const uint8_t ascii_px[95] = {
    3,  5,  6, 7, 7, 11, 10, 3,  5, 5, 7, 7, 4, 5,  4,  6,  /*  !"#$%&'()*+,-./ */
    7,  7,  7, 7, 7, 7,  7,  7,  7, 7, 4, 4, 7, 7,  7,  7,  /* 0-9:;<=>? */
    13, 9,  8, 8, 9, 7,  7,  9,  9, 4, 5, 8, 6, 12, 10, 10, /* @A-O */
    8,  10, 8, 7, 7, 9,  9,  13, 8, 7, 7, 5, 6, 5,  7,  7,  /* P-Z[\]^_ */
    4,  7,  8, 6, 8, 8,  5,  7,  8, 4, 4, 7, 4, 12, 8,  8,  /* `a-o */
    8,  8,  5, 6, 5, 8,  7,  11, 7, 7, 6, 5, 7, 5,  7,      /* p-z{|}~ */
};

static uint32_t char_px(unsigned char c)
{
    if (c >= 32 && c < 127)
        return ascii_px[c - 32];
    return c == '\t' ? 4 * 3 : 0;
}

static int is_wide(uint32_t cp)
{
    return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
           (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
           (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
           (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1FAFF) ||
           (cp >= 0x20000 && cp <= 0x3FFFD);
}

uint32_t xlsx_text_px(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    uint32_t best = 0, line = 0;
    while (p < end) {
        unsigned char c = *p;
        if (c < 0x80) {
            p++;
            if (c == '\n' || c == '\r') {
                if (line > best)
                    best = line;
                line = 0;
                continue;
            }
            line += char_px(c);
        } else {
            uint32_t cp;
            size_t n;
            if (c >= 0xF0) {
                n = 4;
                cp = c & 0x07u;
            } else if (c >= 0xE0) {
                n = 3;
                cp = c & 0x0Fu;
            } else {
                n = 2;
                cp = c & 0x1Fu;
            }
            if ((size_t)(end - p) < n)
                break;
            for (size_t i = 1; i < n; i++)
                cp = cp << 6 | (p[i] & 0x3Fu);
            p += n;
            line += is_wide(cp) ? WIDE_PX : OTHER_PX;
        }
        /* Past the cap the rest of the line cannot matter: skip to its end. */
        if (line >= MAX_COL_PX) {
            const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
            best = MAX_COL_PX;
            line = 0;
            if (!nl)
                break;
            p = nl;
        }
    }
    return line > best ? line : best;
}

/* ---- number formats ---- */

int xlsx_numfmt_is_date(const char *fmt)
{
    if (!fmt)
        return 0;
    int quoted = 0, bracket = 0;
    for (const char *p = fmt; *p; p++) {
        char c = *p;
        if (quoted) {
            quoted = c != '"';
            continue;
        }
        if (bracket) {
            bracket = c != ']';
            continue;
        }
        if (c == '"')
            quoted = 1;
        else if (c == '[')
            bracket = 1;
        else if (c == '\\' || c == '_' || c == '*') {
            if (p[1])
                p++;
        } else if (c == 'y' || c == 'Y' || c == 'd' || c == 'D' || c == 'h' || c == 'H' ||
                   c == 's' || c == 'S')
            return 1;
    }
    return 0;
}

/* Width of a date format's rendering: digits for numeric fields, names for
 * "mmm"/"dddd" runs, other characters as themselves. */
static uint32_t date_format_px(const char *fmt)
{
    uint32_t px = 0;
    for (const char *p = fmt; *p;) {
        char c = *p;
        char lc = (char)(c | 0x20);
        if (c == '"') {
            for (p++; *p && *p != '"'; p++)
                px += char_px((unsigned char)*p);
            if (*p)
                p++;
            continue;
        }
        if (c == '[') {
            while (*p && *p != ']')
                p++;
            if (*p)
                p++;
            continue;
        }
        if (c == '\\' && p[1]) {
            px += char_px((unsigned char)p[1]);
            p += 2;
            continue;
        }
        if (lc == 'a' && (strncmp(p, "AM/PM", 5) == 0 || strncmp(p, "am/pm", 5) == 0)) {
            px += 2 * 9;
            p += 5;
            continue;
        }
        if (lc == 'y' || lc == 'm' || lc == 'd' || lc == 'h' || lc == 's') {
            size_t run = 0;
            while ((char)(p[run] | 0x20) == lc)
                run++;
            if ((lc == 'm' || lc == 'd') && run >= 4)
                px += 66; /* "September", "Wednesday" */
            else if ((lc == 'm' || lc == 'd') && run == 3)
                px += 26; /* "Sep", "Wed" */
            else if (lc == 'y' && run <= 2)
                px += 2 * DIGIT_PX;
            else if (lc == 'y')
                px += 4 * DIGIT_PX;
            else
                px += 2 * DIGIT_PX;
            p += run;
            continue;
        }
        px += char_px((unsigned char)c);
        p++;
    }
    return px;
}

void xlsx_numfmt_analyse(const char *fmt, xlsx_numfmt_info *out)
{
    memset(out, 0, sizeof *out);
    if (!fmt || strcmp(fmt, "General") == 0 || strcmp(fmt, "general") == 0) {
        out->kind = XLSX_NF_GENERAL;
        return;
    }
    if (strcmp(fmt, "@") == 0) {
        out->kind = XLSX_NF_TEXT;
        return;
    }
    if (xlsx_numfmt_is_date(fmt)) {
        out->kind = XLSX_NF_DATE;
        out->date_px = (uint16_t)(date_format_px(fmt) > MAX_COL_PX ? MAX_COL_PX
                                                                   : date_format_px(fmt));
        return;
    }
    /* The first section (positive numbers) decides. */
    out->kind = XLSX_NF_NUMBER;
    int after_point = 0, seen_digit = 0;
    uint32_t lit = 0;
    for (const char *p = fmt; *p && *p != ';'; p++) {
        char c = *p;
        switch (c) {
        case '0':
        case '#':
        case '?':
            seen_digit = 1;
            if (after_point && out->decimals < 30)
                out->decimals++;
            break;
        case '.':
            after_point = 1;
            break;
        case ',':
            if (seen_digit && !after_point)
                out->thousands = 1;
            break;
        case '%':
            out->kind = XLSX_NF_PERCENT;
            lit += char_px('%');
            break;
        case '"':
            for (p++; *p && *p != '"'; p++)
                lit += char_px((unsigned char)*p);
            if (!*p)
                p--;
            break;
        case '[':
            /* [Red], [$€-407]: only a currency symbol shows. */
            if (p[1] == '$') {
                for (p += 2; *p && *p != '-' && *p != ']'; p++)
                    lit += (unsigned char)*p < 0x80 ? char_px((unsigned char)*p) : 0;
                lit += DIGIT_PX; /* a non-ASCII symbol (its bytes were skipped) */
            }
            while (*p && *p != ']')
                p++;
            if (!*p)
                p--;
            break;
        case '\\':
        case '_':
            if (p[1]) {
                lit += char_px((unsigned char)p[1]);
                p++;
            }
            break;
        case '*':
            if (p[1])
                p++;
            break;
        case 'E':
        case 'e':
            lit += 4 * DIGIT_PX;
            break;
        default:
            lit += (unsigned char)c < 0x80 ? char_px((unsigned char)c) : 0;
            if ((unsigned char)c >= 0xC0)
                lit += DIGIT_PX; /* e.g. "€" written as itself */
            break;
        }
    }
    out->literal_px = (uint16_t)(lit > MAX_COL_PX ? MAX_COL_PX : lit);
}

static uint32_t int_digits(double a)
{
    static const double pow10[] = {1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7, 1e8,
                                   1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    uint32_t d = 1;
    while (d <= 15 && a >= pow10[d - 1])
        d++;
    return d;
}

uint32_t xlsx_number_px(double v, const xlsx_numfmt_info *nf)
{
    double a = fabs(v);
    uint32_t sign = v < 0 ? char_px('-') : 0;
    switch (nf->kind) {
    case XLSX_NF_DATE:
        return nf->date_px;
    case XLSX_NF_NUMBER:
    case XLSX_NF_PERCENT: {
        if (nf->kind == XLSX_NF_PERCENT)
            a *= 100;
        uint32_t d = int_digits(a);
        uint32_t px = d * DIGIT_PX + sign + nf->literal_px;
        if (nf->thousands)
            px += (d - 1) / 3 * char_px(',');
        if (nf->decimals)
            px += char_px('.') + nf->decimals * DIGIT_PX;
        return px;
    }
    default: {
        /* General shows at most 11 characters: the integer digits, then as
         * many decimals as the value has, or scientific notation. */
        if (a != 0 && (a >= 1e11 || a < 1e-9))
            return sign + 11 * DIGIT_PX;
        uint32_t d = int_digits(a);
        uint32_t dec = 0;
        double scaled = a;
        while (dec < 10 && d + dec < 10) {
            double r = scaled - floor(scaled);
            if (r < 1e-9 * (scaled + 1) || r > 1 - 1e-9 * (scaled + 1))
                break;
            scaled *= 10;
            dec++;
        }
        return sign + d * DIGIT_PX + (dec ? char_px('.') + dec * DIGIT_PX : 0);
    }
    }
}

double xlsx_px_to_width(uint32_t px)
{
    /* Excel: a column of W characters is trunc(W * 7 + 5) pixels wide (for
     * Calibri 11's maximum digit width of 7), plus the 7 pixel padding
     * XlsxWriter adds as Excel's own autofit does. */
    px += 7;
    if (px > MAX_COL_PX)
        px = MAX_COL_PX;
    double w = px <= 12 ? px / 12.0 : (px - 5) / 7.0;
    w = floor(w * 100 + 0.5) / 100;
    return w > 255 ? 255 : w;
}
