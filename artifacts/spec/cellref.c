/*
 * cellref.c - A1 references, ranges, column names and ISO 8601 dates as
 * Excel 1900-system serial numbers. Pure functions: no allocation.
 */
#include <stdint.h>
#include <string.h>

#include "spec.h"
#include "spec_internal.h"
#include "../../common/banned.h"

/* Excel's sheet size, fixed by the file format (the configurable limits in
 * kiln_limits may only be lower). */
#define XL_MAX_ROWS 1048576u
#define XL_MAX_COLS 16384u

static int is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}
static int is_lower(char c)
{
    return c >= 'a' && c <= 'z';
}
static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Parse one reference at *s, advancing *s past it. */
static int parse_ref(const char **s, uint32_t *row, uint32_t *col)
{
    const char *p = *s;
    if (*p == '$')
        p++;
    uint32_t c = 0;
    int letters = 0;
    while (is_upper(*p) || is_lower(*p)) {
        if (++letters > 3)
            return -1;
        c = c * 26 + (uint32_t)((is_upper(*p) ? *p - 'A' : *p - 'a') + 1);
        p++;
    }
    if (!letters || c > XL_MAX_COLS)
        return -1;
    if (*p == '$')
        p++;
    if (!is_digit(*p) || *p == '0')
        return -1;
    uint32_t r = 0;
    int digits = 0;
    while (is_digit(*p)) {
        if (++digits > 7)
            return -1;
        r = r * 10 + (uint32_t)(*p - '0');
        p++;
    }
    if (r > XL_MAX_ROWS)
        return -1;
    *row = r - 1;
    *col = c - 1;
    *s = p;
    return 0;
}

int kiln_cell_ref_parse(const char *ref, uint32_t *row, uint32_t *col)
{
    if (!ref)
        return -1;
    const char *p = ref;
    uint32_t r, c;
    if (parse_ref(&p, &r, &c) != 0 || *p)
        return -1;
    *row = r;
    *col = c;
    return 0;
}

int kiln_range_parse(const char *ref, kiln_range *out)
{
    if (!ref)
        return -1;
    const char *p = ref;
    uint32_t r1, c1, r2, c2;
    if (parse_ref(&p, &r1, &c1) != 0)
        return -1;
    if (*p == '\0') {
        r2 = r1;
        c2 = c1;
    } else {
        if (*p != ':')
            return -1;
        p++;
        if (parse_ref(&p, &r2, &c2) != 0 || *p)
            return -1;
    }
    /* Excel accepts the corners in either order ("D10:A1"); normalise. */
    out->first_row = r1 < r2 ? r1 : r2;
    out->last_row = r1 < r2 ? r2 : r1;
    out->first_col = c1 < c2 ? c1 : c2;
    out->last_col = c1 < c2 ? c2 : c1;
    return 0;
}

void kiln_col_name(uint32_t col, char buf[4])
{
    /* Three letters reach column 18,278; beyond that there is no name. */
    if (col >= 18278u) {
        buf[0] = '\0';
        return;
    }
    char tmp[4];
    int n = 0;
    uint32_t c = col + 1;
    while (c > 0 && n < 3) {
        c--;
        tmp[n++] = (char)('A' + c % 26);
        c /= 26;
    }
    for (int i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
}

int kiln_ref_split_sheet(const char *ref, char *sheet_buf, size_t cap, const char **sheet,
                         const char **rest)
{
    *sheet = NULL;
    *rest = ref;
    if (ref[0] == '\'') {
        /* 'It''s here'!A1 : a doubled apostrophe stands for one. */
        size_t n = 0;
        const char *p = ref + 1;
        for (;;) {
            if (*p == '\0')
                return -1;
            if (*p == '\'') {
                if (p[1] == '\'') {
                    if (n + 1 >= cap)
                        return -1;
                    sheet_buf[n++] = '\'';
                    p += 2;
                    continue;
                }
                break;
            }
            if (n + 1 >= cap)
                return -1;
            sheet_buf[n++] = *p++;
        }
        if (p[1] != '!' || n == 0)
            return -1;
        sheet_buf[n] = '\0';
        *sheet = sheet_buf;
        *rest = p + 2;
        return 0;
    }
    const char *bang = strchr(ref, '!');
    if (!bang)
        return 0;
    size_t n = (size_t)(bang - ref);
    if (n == 0 || n + 1 > cap)
        return -1;
    /* An unquoted sheet name is a plain word: Excel quotes anything else. */
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)ref[i];
        if (!(ch >= 0x80 || is_upper((char)ch) || is_lower((char)ch) || is_digit((char)ch) ||
              ch == '_' || ch == '.'))
            return -1;
    }
    memcpy(sheet_buf, ref, n);
    sheet_buf[n] = '\0';
    *sheet = sheet_buf;
    *rest = bang + 1;
    return 0;
}

int64_t kiln_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    /* Howard Hinnant's days_from_civil. */
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char **s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit((*s)[i]))
            return -1;
        v = v * 10 + ((*s)[i] - '0');
    }
    *s += n;
    *out = v;
    return 0;
}

static int days_in_month(int y, int m)
{
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return dm[m - 1];
}

int kiln_iso_parse(const char *iso, int *y, int *mo, int *d, int *h, int *mi, double *sec,
                   int *has_time)
{
    int zone;
    return kiln_iso_parse_zone(iso, y, mo, d, h, mi, sec, has_time, &zone);
}

int kiln_iso_parse_zone(const char *iso, int *y, int *mo, int *d, int *h, int *mi, double *sec,
                        int *has_time, int *zone_minutes)
{
    *zone_minutes = 0;
    if (!iso)
        return -1;
    const char *p = iso;
    if (digits(&p, 4, y) || *p++ != '-' || digits(&p, 2, mo) || *p++ != '-' || digits(&p, 2, d))
        return -1;
    if (*mo < 1 || *mo > 12 || *d < 1 || *d > days_in_month(*y, *mo))
        return -1;
    *h = *mi = 0;
    *sec = 0;
    *has_time = 0;
    if (*p == '\0')
        return 0;
    /* ISO 8601 separates with 'T'; a space is what spreadsheets and databases
     * export, and RFC 3339 allows it. */
    if (*p != 'T' && *p != 't' && *p != ' ')
        return -1;
    p++;
    if (digits(&p, 2, h) || *p++ != ':' || digits(&p, 2, mi))
        return -1;
    if (*h > 23 || *mi > 59)
        return -1;
    if (*p == ':') {
        p++;
        int s;
        if (digits(&p, 2, &s) || s > 59)
            return -1;
        *sec = s;
        if (*p == '.' || *p == ',') {
            p++;
            if (!is_digit(*p))
                return -1;
            double scale = 0.1;
            while (is_digit(*p)) {
                *sec += (*p - '0') * scale;
                scale /= 10;
                p++;
            }
        }
    }
    *has_time = 1;
    /* The zone designator: cells ignore it (the wall-clock time as written is
     * what the document shows, docs/spec.md, Cell values); metadata.created
     * uses it to find the UTC instant. */
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        p++;
        int zh, zm = 0;
        if (digits(&p, 2, &zh) || zh > 23)
            return -1;
        if (*p == ':')
            p++;
        if (is_digit(*p) && (digits(&p, 2, &zm) || zm > 59))
            return -1;
        *zone_minutes = sign * (zh * 60 + zm);
    }
    return *p == '\0' ? 0 : -1;
}

int kiln_iso_to_serial(const char *iso, double *serial, int *has_time)
{
    int y, mo, d, h, mi, t;
    double sec;
    if (kiln_iso_parse(iso, &y, &mo, &d, &h, &mi, &sec, &t) != 0)
        return -1;
    /* The 1900 system starts at 1900-01-01 = 1 and cannot hold earlier days. */
    if (y < 1900)
        return -1;
    int64_t days = kiln_days_from_civil(y, (unsigned)mo, (unsigned)d) -
                   kiln_days_from_civil(1899, 12, 31);
    /* Lotus 1-2-3 counted 1900-02-29, which never existed, and Excel kept the
     * mistake: every day from 1900-03-01 on is one higher (serial 60 is the
     * phantom day). */
    if (days >= 60)
        days++;
    /* Excel keeps times to the millisecond: round there, so the serial the
     * writers store is the one Excel reads back. A time that rounds up to
     * midnight is the next day, and the day after 9999-12-31 (serial
     * 2958466) is past the last one Excel holds. */
    int64_t ms = ((int64_t)h * 3600 + mi * 60) * 1000 + (int64_t)(sec * 1000.0 + 0.5);
    if (ms >= 86400000) {
        days += ms / 86400000;
        ms %= 86400000;
    }
    if (days > KILN_SERIAL_MAX)
        return -1;
    *serial = (double)days + (double)ms / 86400000.0;
    if (has_time)
        *has_time = t;
    return 0;
}
