/*
 * raw_libxlsxwriter.c - the baseline for `make bench`: libxlsxwriter driven
 * directly, in constant_memory mode, on the benchmark CSV, with the same
 * column formats and widths as the Kiln spec. Whatever Kiln adds on top of
 * libxlsxwriter (spec parsing, validation, typing, the output guard) is the
 * difference between this program and `kiln render`.
 *
 *   raw_libxlsxwriter IN.csv OUT.xlsx
 *
 * The CSV is RFC 4180 (quoted fields may hold commas and doubled quotes, not
 * line breaks) with a header row; the columns are those bench/run.py writes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xlsxwriter.h>
#include "../common/banned.h"

#define MAX_FIELDS 10
#define LINE_MAX_BYTES (1 << 16)

/* The bench/run.py columns, left to right. */
enum {
    C_ID,
    C_DATE,
    C_NAME,
    C_CATEGORY,
    C_DESCRIPTION,
    C_AMOUNT,
    C_PRICE,
    C_ACTIVE,
    C_CODE,
    C_DISCOUNT
};

static const double widths[MAX_FIELDS] = {10, 12, 22, 14, 48, 14, 12, 8, 10, 10};

/* Split one CSV record in place; returns the number of fields, -1 on a bad record. */
static int split_csv(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return -1;
        if (*p == '"') {
            char *out = ++p;
            fields[n++] = out;
            for (;;) {
                if (*p == '\0')
                    return -1;
                if (*p == '"') {
                    if (p[1] == '"') {
                        *out++ = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                *out++ = *p++;
            }
            *out = '\0';
            if (*p == ',') {
                p++;
                continue;
            }
            return *p == '\0' ? n : -1;
        }
        fields[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            return n;
        *comma = '\0';
        p = comma + 1;
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s IN.csv OUT.xlsx\n", argv[0]);
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (!in) {
        fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
        return 1;
    }

    lxw_workbook_options options = {.constant_memory = LXW_TRUE,
                                    .tmpdir = NULL,
                                    .use_zip64 = LXW_FALSE};
    lxw_workbook *wb = workbook_new_opt(argv[2], &options);
    if (!wb) {
        fprintf(stderr, "cannot create %s\n", argv[2]);
        return 1;
    }
    lxw_worksheet *ws = workbook_add_worksheet(wb, "Data");

    lxw_format *header = workbook_add_format(wb);
    format_set_bold(header);
    format_set_bg_color(header, 0x1F4E79);
    format_set_font_color(header, 0xFFFFFF);
    lxw_format *integer = workbook_add_format(wb);
    format_set_num_format(integer, "#,##0");
    lxw_format *number = workbook_add_format(wb);
    format_set_num_format(number, "#,##0.00");
    lxw_format *currency = workbook_add_format(wb);
    format_set_num_format(currency, "$#,##0.00");
    lxw_format *percent = workbook_add_format(wb);
    format_set_num_format(percent, "0.0%");
    lxw_format *date = workbook_add_format(wb);
    format_set_num_format(date, "yyyy-mm-dd");

    for (lxw_col_t c = 0; c < MAX_FIELDS; c++)
        worksheet_set_column(ws, c, c, widths[c], NULL);

    static char line[LINE_MAX_BYTES];
    char *f[MAX_FIELDS];
    lxw_row_t row = 0;
    while (fgets(line, sizeof line, in)) {
        size_t len = strcspn(line, "\r\n");
        line[len] = '\0';
        int n = split_csv(line, f, MAX_FIELDS);
        if (n != MAX_FIELDS) {
            fprintf(stderr, "%s: record %u: expected %d fields\n", argv[1], (unsigned)row + 1,
                    MAX_FIELDS);
            return 1;
        }
        if (row == 0) {
            for (lxw_col_t c = 0; c < MAX_FIELDS; c++)
                worksheet_write_string(ws, row, c, f[c], header);
            row++;
            continue;
        }
        worksheet_write_number(ws, row, C_ID, strtod(f[C_ID], NULL), integer);
        lxw_datetime dt = {0, 0, 0, 0, 0, 0};
        if (sscanf(f[C_DATE], "%d-%d-%d", &dt.year, &dt.month, &dt.day) != 3) {
            fprintf(stderr, "bad date %s\n", f[C_DATE]);
            return 1;
        }
        worksheet_write_datetime(ws, row, C_DATE, &dt, date);
        worksheet_write_string(ws, row, C_NAME, f[C_NAME], NULL);
        worksheet_write_string(ws, row, C_CATEGORY, f[C_CATEGORY], NULL);
        worksheet_write_string(ws, row, C_DESCRIPTION, f[C_DESCRIPTION], NULL);
        worksheet_write_number(ws, row, C_AMOUNT, strtod(f[C_AMOUNT], NULL), number);
        worksheet_write_number(ws, row, C_PRICE, strtod(f[C_PRICE], NULL), currency);
        worksheet_write_boolean(ws, row, C_ACTIVE, strcmp(f[C_ACTIVE], "true") == 0, NULL);
        worksheet_write_string(ws, row, C_CODE, f[C_CODE], NULL);
        worksheet_write_number(ws, row, C_DISCOUNT, strtod(f[C_DISCOUNT], NULL), percent);
        row++;
    }
    fclose(in);

    lxw_error err = workbook_close(wb);
    if (err != LXW_NO_ERROR) {
        fprintf(stderr, "workbook_close: %s\n", lxw_strerror(err));
        return 1;
    }
    return 0;
}
