/*
 * test_rows.c - row readers: inline JSON rows, CSV (RFC 4180) and JSON Lines,
 * field typing per column, error messages with file, line and column, and the
 * row limit both at parse time (scan_data_files) and while streaming.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "artifacts/spec/spec.h"
#include "artifacts/spec/spec_internal.h"
#include "common/banned.h"

static char tmpdir[256];
static kiln_errors errs;

static char *q(const char *s)
{
    return test_quote(s);
}

static void dump_errors(void)
{
    test_dump_errors(&errs);
}

static void write_file(const char *name, const char *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void write_str(const char *name, const char *data)
{
    write_file(name, data, strlen(data));
}

static kiln_status parse_opts(const char *spec, kiln_parse_options *o, kiln_doc **doc)
{
    char *json = q(spec);
    kiln_status rc = kiln_doc_parse(json, strlen(json), o, doc, &errs);
    free(json);
    return rc;
}

static kiln_doc *parse_ok(const char *spec, int scan)
{
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.base_dir = tmpdir;
    o.scan_data_files = scan;
    kiln_doc *doc = NULL;
    kiln_status rc = parse_opts(spec, &o, &doc);
    if (rc != KILN_E_OK) {
        fprintf(stderr, "unexpected failure for %s\n", spec);
        dump_errors();
    }
    assert_int_equal(rc, KILN_E_OK);
    return doc;
}

/* Read every row of sheet 0; returns the reader (still open) after the end
 * or the error; *rows gets the number of rows read. */
typedef struct {
    kiln_row_reader *r;
    kiln_error err;
} reader_t;

static void open_reader(kiln_doc *doc, reader_t *rd)
{
    assert_int_equal(kiln_rows_open(doc, &doc->sheets[0].data, &rd->r, &rd->err), KILN_E_OK);
}

static const kiln_cell *next_row(reader_t *rd, size_t *n)
{
    const kiln_cell *cells;
    int rc = kiln_rows_next(rd->r, &cells, n, &rd->err);
    if (rc < 0)
        fprintf(stderr, "row error: %s: %s\n", rd->err.pointer, rd->err.message);
    assert_int_equal(rc, 1);
    return cells;
}

static void expect_end(reader_t *rd)
{
    const kiln_cell *cells;
    size_t n;
    assert_int_equal(kiln_rows_next(rd->r, &cells, &n, &rd->err), 0);
    kiln_rows_close(rd->r);
}

static void expect_row_error(reader_t *rd, kiln_status code, const char *fragment)
{
    const kiln_cell *cells;
    size_t n;
    int rc;
    while ((rc = kiln_rows_next(rd->r, &cells, &n, &rd->err)) == 1)
        ;
    assert_int_equal(rc, -1);
    if (!strstr(rd->err.message, fragment) || rd->err.code != code) {
        fprintf(stderr, "expected ...%s..., got [%s] %s: %s\n", fragment,
                kiln_status_name(rd->err.code), rd->err.pointer, rd->err.message);
        fail();
    }
    kiln_rows_close(rd->r);
}

static void assert_text(const kiln_cell *c, const char *text)
{
    assert_int_equal(c->kind, KILN_CELL_STRING);
    assert_string_equal(c->text, text);
    assert_int_equal(c->text_len, strlen(text));
}

static void assert_number(const kiln_cell *c, double v)
{
    assert_int_equal(c->kind, KILN_CELL_NUMBER);
    assert_true(c->number == v);
}

static int setup_dir(void **state)
{
    (void)state;
    return test_dir_make(tmpdir, sizeof tmpdir, "rows");
}

static int teardown_dir(void **state)
{
    (void)state;
    return test_dir_remove(tmpdir);
}

/* ---- inline rows ---- */

static void test_inline_rows(void **state)
{
    (void)state;
    kiln_doc *doc = parse_ok(
        "{'sheets': [{'columns': [{'header': 'Name'}, {'header': 'Day', 'key': 'd', 'type': "
        "'date'}, {'header': 'When', 'type': 'datetime'}, {'header': 'N', 'type': 'number'}],"
        "'rows': [['a', '2026-03-31', '2026-03-31T12:00:00Z', 5],"
        "{'Name': {'value': 'b', 'style': {'bold': true, 'fill': '#00FF00'}, 'number_format': '@'},"
        " 'd': {'date': '1900-03-01'}},"
        "[null, 46000, {'datetime': '2026-03-31T06:00'}, 'text stays'],"
        "[{'url': 'https://example.com', 'text': 'Example'}, true]]}]}",
        0);
    reader_t rd;
    open_reader(doc, &rd);
    size_t n;
    const kiln_cell *c = next_row(&rd, &n);
    assert_int_equal(n, 4);
    assert_text(&c[0], "a");
    assert_int_equal(c[1].kind, KILN_CELL_DATE);
    assert_true(c[1].number == 46112);
    assert_int_equal(c[2].kind, KILN_CELL_DATETIME);
    assert_true(c[2].number == 46112.5);
    assert_number(&c[3], 5);
    assert_null(c[0].style);
    assert_int_equal(kiln_rows_index(rd.r), 0);

    c = next_row(&rd, &n);
    assert_int_equal(n, 4);
    assert_text(&c[0], "b");
    assert_non_null(c[0].style);
    assert_int_equal(c[0].style->bold, 1);
    assert_int_equal(c[0].style->fill, 0x00FF00);
    assert_int_equal(c[0].style->color, KILN_COLOR_NONE);
    assert_string_equal(c[0].number_format, "@");
    assert_int_equal(c[1].kind, KILN_CELL_DATE);
    assert_true(c[1].number == 61);
    assert_int_equal(c[2].kind, KILN_CELL_BLANK);
    assert_int_equal(c[3].kind, KILN_CELL_BLANK);

    c = next_row(&rd, &n);
    assert_int_equal(c[0].kind, KILN_CELL_BLANK);
    assert_number(&c[1], 46000); /* a number in a date column stays a number */
    assert_int_equal(c[2].kind, KILN_CELL_DATETIME);
    assert_true(c[2].number == 46112.25);
    assert_text(&c[3], "text stays"); /* a string in a number column stays text */

    c = next_row(&rd, &n);
    assert_int_equal(c[0].kind, KILN_CELL_URL);
    assert_string_equal(c[0].text, "https://example.com");
    assert_string_equal(c[0].link_text, "Example");
    assert_int_equal(c[1].kind, KILN_CELL_BOOL);
    assert_true(c[1].number == 1);
    assert_int_equal(c[2].kind, KILN_CELL_BLANK);
    assert_int_equal(kiln_rows_index(rd.r), 3);
    expect_end(&rd);
    kiln_doc_free(doc);

    /* Without columns a row has as many cells as it holds. */
    doc = parse_ok("{'sheets': [{'rows': [[1, 2, 3], [], ['x']]}]}", 0);
    open_reader(doc, &rd);
    next_row(&rd, &n);
    assert_int_equal(n, 3);
    next_row(&rd, &n);
    assert_int_equal(n, 0);
    c = next_row(&rd, &n);
    assert_int_equal(n, 1);
    assert_text(&c[0], "x");
    expect_end(&rd);
    kiln_doc_free(doc);

    /* No rows at all: the reader simply ends. */
    doc = parse_ok("{'sheets': [{'columns': [{'header': 'a'}]}]}", 0);
    open_reader(doc, &rd);
    expect_end(&rd);
    kiln_doc_free(doc);
}

/* ---- CSV ---- */

static void test_csv_quoting(void **state)
{
    (void)state;
    /* BOM, CRLF, quoted fields with commas, doubled quotes, an embedded
     * newline, an empty quoted field, blank lines, and no final newline. */
    write_str("q.csv", "\xEF\xBB\xBFname,note,n\r\n"
                       "\"Smith, J\",\"said \"\"hi\"\"\",1\r\n"
                       "\r\n"
                       "multi,\"line one\nline two\",2\r\n"
                       "empty,\"\",\n"
                       "breaks,\"cr\rcr lf\r\nend\",4\r\n"
                       "last,x,3");
    kiln_doc *doc = parse_ok("{'sheets': [{'data': {'path': 'q.csv', 'format': 'csv'}}]}", 1);
    const kiln_table_data *t = &doc->sheets[0].data;
    assert_int_equal(t->column_count, 3);
    assert_string_equal(t->columns[0].header, "name"); /* the BOM is not part of it */
    assert_string_equal(t->columns[2].header, "n");
    reader_t rd;
    open_reader(doc, &rd);
    size_t n;
    const kiln_cell *c = next_row(&rd, &n);
    assert_int_equal(n, 3);
    assert_text(&c[0], "Smith, J");
    assert_text(&c[1], "said \"hi\"");
    assert_number(&c[2], 1);
    c = next_row(&rd, &n);
    assert_text(&c[0], "multi");
    assert_text(&c[1], "line one\nline two");
    assert_number(&c[2], 2);
    c = next_row(&rd, &n);
    assert_text(&c[0], "empty");
    assert_int_equal(c[1].kind, KILN_CELL_BLANK);
    assert_int_equal(c[2].kind, KILN_CELL_BLANK);
    /* A CR and a CR LF inside a field are line feeds (docs/spec.md "Line breaks"). */
    c = next_row(&rd, &n);
    assert_text(&c[1], "cr\ncr lf\nend");
    assert_number(&c[2], 4);
    c = next_row(&rd, &n);
    assert_text(&c[0], "last");
    assert_number(&c[2], 3);
    assert_int_equal(kiln_rows_index(rd.r), 4);
    expect_end(&rd);
    kiln_doc_free(doc);
}

static void test_csv_auto_typing(void **state)
{
    (void)state;
    write_str("auto.csv", "007,0,0.5,-12.25,1e5,12345678901234567,1234567890.12345,+5, 7,"
                          "1.,.5,00,-0,TRUE,2026-03-31\n");
    kiln_doc *doc = parse_ok("{'sheets': [{'data': {'path': 'auto.csv', 'header': false}}]}", 0);
    reader_t rd;
    open_reader(doc, &rd);
    size_t n;
    const kiln_cell *c = next_row(&rd, &n);
    assert_int_equal(n, 15);
    assert_text(&c[0], "007"); /* a code keeps its zeros */
    assert_number(&c[1], 0);
    assert_number(&c[2], 0.5);
    assert_number(&c[3], -12.25);
    assert_text(&c[4], "1e5");               /* not a plain decimal */
    assert_text(&c[5], "12345678901234567"); /* more digits than Excel keeps */
    assert_number(&c[6], 1234567890.12345);
    assert_text(&c[7], "+5");
    assert_text(&c[8], " 7");
    assert_text(&c[9], "1.");
    assert_text(&c[10], ".5");
    assert_text(&c[11], "00");
    assert_number(&c[12], 0);
    assert_text(&c[13], "TRUE"); /* auto never guesses booleans or dates */
    assert_text(&c[14], "2026-03-31");
    expect_end(&rd);
    kiln_doc_free(doc);
}

static void test_csv_typed_columns(void **state)
{
    (void)state;
    write_str("typed.csv", "id;amount;day;ok;when;code\n"
                           "1;1234.5;2026-03-31;true;2026-03-31 12:00;007\n"
                           "2; -3e2 ;;0;2026-03-31T18:00:00+01:00;42\n"
                           "3;;1900-03-01;FALSE;;\n");
    kiln_doc *doc =
        parse_ok("{'sheets': [{'columns': [{'header': 'Id', 'type': 'integer'},"
                 " {'header': 'Amount', 'type': 'currency'}, {'header': 'Day', 'type': 'date'},"
                 " {'header': 'OK', 'type': 'boolean'}, {'header': 'When', 'type': 'datetime'},"
                 " {'header': 'Code', 'type': 'string'}],"
                 " 'data': {'path': 'typed.csv', 'format': 'csv', 'delimiter': ';'}}]}",
                 1);
    const kiln_table_data *t = &doc->sheets[0].data;
    /* columns given: the file's header record is skipped, not used. */
    assert_string_equal(t->columns[0].header, "Id");
    assert_int_equal(t->delimiter, ';');
    reader_t rd;
    open_reader(doc, &rd);
    size_t n;
    const kiln_cell *c = next_row(&rd, &n);
    assert_number(&c[0], 1);
    assert_number(&c[1], 1234.5);
    assert_int_equal(c[2].kind, KILN_CELL_DATE);
    assert_true(c[2].number == 46112);
    assert_int_equal(c[3].kind, KILN_CELL_BOOL);
    assert_true(c[3].number == 1);
    assert_int_equal(c[4].kind, KILN_CELL_DATETIME);
    assert_true(c[4].number == 46112.5);
    assert_text(&c[5], "007");
    c = next_row(&rd, &n);
    assert_number(&c[1], -300);
    assert_int_equal(c[2].kind, KILN_CELL_BLANK);
    assert_true(c[3].number == 0);
    assert_true(c[4].number == 46112.75); /* zone ignored */
    assert_text(&c[5], "42");             /* string column: never a number */
    c = next_row(&rd, &n);
    assert_int_equal(c[1].kind, KILN_CELL_BLANK);
    assert_true(c[2].number == 61);
    assert_int_equal(c[3].kind, KILN_CELL_BOOL);
    assert_true(c[3].number == 0);
    assert_int_equal(c[5].kind, KILN_CELL_BLANK);
    expect_end(&rd);
    kiln_doc_free(doc);
}

static void test_csv_header_names_typed_columns(void **state)
{
    (void)state;
    /* Columns that give types but no headers take the file's names. */
    write_str("named.csv", "amount,day\n5,2026-03-31\n");
    kiln_doc *doc = parse_ok("{'sheets': [{'columns': [{'type': 'currency'}, {'type': 'date'}],"
                             " 'data': {'path': 'named.csv'}}]}",
                             1);
    const kiln_table_data *t = &doc->sheets[0].data;
    assert_int_equal(t->column_count, 2);
    assert_string_equal(t->columns[0].header, "amount");
    assert_string_equal(t->columns[1].header, "day");
    assert_int_equal(t->columns[1].type, KILN_COL_DATE);
    assert_int_equal(t->header, 1);
    reader_t rd;
    open_reader(doc, &rd);
    size_t n;
    const kiln_cell *c = next_row(&rd, &n);
    assert_number(&c[0], 5);
    assert_int_equal(c[1].kind, KILN_CELL_DATE);
    expect_end(&rd);
    kiln_doc_free(doc);
}

static void test_csv_errors(void **state)
{
    (void)state;
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.base_dir = tmpdir;
    o.scan_data_files = 1;
    kiln_doc *doc;

    struct {
        const char *file;
        const char *columns;
        const char *fragment;
    } cases[] = {
        {"a\n1\nx\n", "[{'type': 'number'}]",
         "e1.csv line 3, column 1: expected a number, got \"x\""},
        {"a,b\n1,\"unterminated\n2,3\n", NULL,
         "e2.csv line 2, column 2: a quoted field is not closed"},
        {"a,b\n1,ab\"c\n", NULL, "e3.csv line 2, column 2: a quote inside an unquoted field"},
        {"a,b\n1,\"ab\"c\n", NULL,
         "e4.csv line 2, column 2: a character after the closing quote"},
        {"a\n1,2\n", "[{'header': 'a'}]",
         "e5.csv line 2: a record of 2 fields, but only 1 columns"},
        {"a\nmaybe\n", "[{'type': 'boolean'}]",
         "e6.csv line 2, column 1: expected true, false, 1 or 0"},
        {"a\n\"x\ny\"\n31/03/2026\n", "[{'type': 'date'}]",
         "e7.csv line 2, column 1: expected an ISO 8601 date"},
        {"a\nok\n\xff\n", NULL, "e8.csv line 3, column 1: field is not valid UTF-8"},
        {"a\nx\x01y\n", NULL,
         "e9.csv line 2, column 1: field contains the control character U+0001"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32], spec[512];
        snprintf(name, sizeof name, "e%zu.csv", i + 1);
        write_str(name, cases[i].file);
        snprintf(spec, sizeof spec, "{'sheets': [{%s%s%s 'data': {'path': '%s'}}]}",
                 cases[i].columns ? "'columns': " : "", cases[i].columns ? cases[i].columns : "",
                 cases[i].columns ? "," : "", name);
        /* At parse time with scan_data_files... */
        o.scan_data_files = 1;
        doc = (kiln_doc *)1;
        assert_int_equal(parse_opts(spec, &o, &doc), KILN_E_INVALID_SPEC);
        assert_null(doc);
        if (!strstr(errs.items[0].message, cases[i].fragment) ||
            strcmp(errs.items[0].pointer, "/sheets/0/data") != 0) {
            fprintf(stderr, "case %zu: expected %s\n", i + 1, cases[i].fragment);
            dump_errors();
            fail();
        }
        /* ...and without it, from the reader. */
        o.scan_data_files = 0;
        kiln_status rc = parse_opts(spec, &o, &doc);
        if (rc != KILN_E_OK) {
            /* A broken header record is found at parse time either way. */
            assert_true(strstr(errs.items[0].message, cases[i].fragment) != NULL);
            continue;
        }
        reader_t rd;
        open_reader(doc, &rd);
        expect_row_error(&rd, KILN_E_INVALID_SPEC, cases[i].fragment);
        assert_string_equal(rd.err.pointer, "/sheets/0/data");
        kiln_doc_free(doc);
    }
}

static void test_csv_row_limit(void **state)
{
    (void)state;
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.base_dir = tmpdir;
    o.limits.rows = 3;
    write_str("lim.csv", "h\n1\n2\n3\n");
    kiln_doc *doc;
    /* header + 3 data rows = 4 > 3: refused at parse time when scanning... */
    o.scan_data_files = 1;
    assert_int_equal(parse_opts("{'sheets': [{'data': {'path': 'lim.csv'}}]}", &o, &doc),
                     KILN_E_LIMIT);
    assert_string_equal(errs.items[0].pointer, "/sheets/0/data");
    assert_true(strstr(errs.items[0].message, "lim.csv line 4: more than 3 rows") != NULL);
    assert_int_equal(errs.items[0].limit, 3);
    assert_int_equal(errs.items[0].actual, 4);
    /* ...and while streaming otherwise: an error, never a truncation. */
    o.scan_data_files = 0;
    assert_int_equal(parse_opts("{'sheets': [{'data': {'path': 'lim.csv'}}]}", &o, &doc),
                     KILN_E_OK);
    reader_t rd;
    open_reader(doc, &rd);
    size_t n;
    next_row(&rd, &n);
    next_row(&rd, &n);
    expect_row_error(&rd, KILN_E_LIMIT, "more than 3 rows");
    kiln_doc_free(doc);
    /* Without a header row, three data rows fit. */
    o.scan_data_files = 1;
    assert_int_equal(parse_opts("{'sheets': [{'header': false, 'data': {'path': 'lim.csv', "
                                "'header': false}}]}",
                                &o, &doc),
                     KILN_E_LIMIT); /* h,1,2,3 = four data rows */
    write_str("lim3.csv", "1\n2\n3\n");
    assert_int_equal(parse_opts("{'sheets': [{'data': {'path': 'lim3.csv', 'header': false}}]}",
                                &o, &doc),
                     KILN_E_OK);
    kiln_doc_free(doc);
}

static void test_csv_columns_limit(void **state)
{
    (void)state;
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.base_dir = tmpdir;
    o.limits.columns = 2;
    write_str("wide.csv", "a,b,c\n");
    kiln_doc *doc;
    assert_int_equal(parse_opts("{'sheets': [{'data': {'path': 'wide.csv'}}]}", &o, &doc),
                     KILN_E_LIMIT);
    assert_true(strstr(errs.items[0].message, "more than 2 fields") != NULL);
    o.limits.columns = 3;
    o.limits.cell_chars = 2;
    o.scan_data_files = 1;
    write_str("long.csv", "a\nabc\n");
    assert_int_equal(parse_opts("{'sheets': [{'data': {'path': 'long.csv'}}]}", &o, &doc),
                     KILN_E_LIMIT);
    assert_true(
        strstr(errs.items[0].message, "long.csv line 2, column 1: text of 3 characters") != NULL);
}

static void test_csv_symlink_refused(void **state)
{
    (void)state;
    write_str("real.csv", "a\n1\n");
    char path[512], target[512];
    snprintf(path, sizeof path, "%s/alias.csv", tmpdir);
    snprintf(target, sizeof target, "%s/real.csv", tmpdir);
    assert_int_equal(symlink(target, path), 0);
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.base_dir = tmpdir;
    kiln_doc *doc;
    assert_int_equal(parse_opts("{'sheets': [{'data': {'path': 'alias.csv'}}]}", &o, &doc),
                     KILN_E_INVALID_SPEC);
    assert_string_equal(errs.items[0].pointer, "/sheets/0/data/path");
    assert_true(strstr(errs.items[0].message, "symbolic link") != NULL);

    /* Swapped for a link after parsing: the reader refuses it too. */
    write_str("swap.csv", "a\n1\n");
    assert_int_equal(parse_opts("{'sheets': [{'data': {'path': 'swap.csv'}}]}", &o, &doc),
                     KILN_E_OK);
    snprintf(path, sizeof path, "%s/swap.csv", tmpdir);
    unlink(path);
    assert_int_equal(symlink(target, path), 0);
    kiln_row_reader *r;
    kiln_error e;
    assert_int_equal(kiln_rows_open(doc, &doc->sheets[0].data, &r, &e), KILN_E_INVALID_SPEC);
    assert_true(strstr(e.message, "symbolic link") != NULL);
    kiln_doc_free(doc);
}

static void test_csv_long_record(void **state)
{
    (void)state;
    /* One field past the bounded record buffer. */
    size_t n = KILN_RECORD_MAX + 10;
    char *big = malloc(n + 8);
    assert_non_null(big);
    memcpy(big, "a\n", 2);
    memset(big + 2, 'x', n);
    big[n + 2] = '\n';
    write_file("big.csv", big, n + 3);
    free(big);
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.base_dir = tmpdir;
    o.scan_data_files = 1;
    kiln_doc *doc;
    assert_int_equal(parse_opts("{'sheets': [{'data': {'path': 'big.csv'}}]}", &o, &doc),
                     KILN_E_LIMIT);
    assert_true(strstr(errs.items[0].message, "big.csv line 2: a record longer than") != NULL);
}

/* ---- JSON Lines ---- */

static void test_jsonl(void **state)
{
    (void)state;
    write_str("r.jsonl", "[1, \"007\", \"2026-03-31\"]\n"
                         "\n"
                         "{\"name\": \"x\", \"day\": {\"date\": \"1900-01-01\"}}\r\n"
                         "[null, {\"value\": 2, \"style\": {\"italic\": true}}]\n"
                         "[\"a\\rb\\r\\nc\"]");
    kiln_doc *doc = parse_ok("{'sheets': [{'columns': [{'key': 'n'}, {'key': 'name'},"
                             " {'key': 'day', 'type': 'date'}],"
                             " 'data': {'path': 'r.jsonl', 'format': 'jsonl'}}]}",
                             1);
    assert_int_equal(doc->sheets[0].data.source, KILN_ROWS_JSONL);
    assert_int_equal(doc->sheets[0].data.header, 0);
    reader_t rd;
    open_reader(doc, &rd);
    size_t n;
    const kiln_cell *c = next_row(&rd, &n);
    assert_int_equal(n, 3);
    assert_number(&c[0], 1);
    assert_text(&c[1], "007"); /* JSON strings stay as given */
    assert_int_equal(c[2].kind, KILN_CELL_DATE);
    assert_true(c[2].number == 46112);
    c = next_row(&rd, &n);
    assert_int_equal(c[0].kind, KILN_CELL_BLANK);
    assert_text(&c[1], "x");
    assert_true(c[2].number == 1);
    c = next_row(&rd, &n);
    assert_number(&c[1], 2);
    assert_non_null(c[1].style);
    assert_int_equal(c[1].style->italic, 1);
    /* A JSON string's CR and CR LF are line feeds too. */
    c = next_row(&rd, &n);
    assert_text(&c[0], "a\nb\nc");
    expect_end(&rd);
    kiln_doc_free(doc);

    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.base_dir = tmpdir;
    o.scan_data_files = 1;
    struct {
        const char *file;
        const char *fragment;
    } cases[] = {
        {"[1]\n[1,\n", "j1.jsonl line 2: not valid JSON"},
        {"[1]\n[[1]]\n", "j2.jsonl line 2: at /0: expected a number, string"},
        {"[1]\n\n{\"nope\": 1}\n", "j3.jsonl line 3: at /nope: unknown member"},
        {"[\"a\\u0000\"]\n", "j4.jsonl line 1: at /0: text contains a NUL"},
        {"[1, 2, 3, 4]\n", "j5.jsonl line 1: at /: a row of 4 cells, but only 3"},
        {"[1, {\"date\": \"x\"}]\n", "j6.jsonl line 1: at /1/date: expected an ISO 8601"},
        {"[1]\n{\"a\": 1, \"a\": 2}\n", "j7.jsonl line 2: not valid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32], spec[256];
        snprintf(name, sizeof name, "j%zu.jsonl", i + 1);
        write_str(name, cases[i].file);
        snprintf(spec, sizeof spec,
                 "{'sheets': [{'columns': [{'key': 'a'}, {}, {}], "
                 "'data': {'path': '%s'}}]}",
                 name);
        assert_int_not_equal(parse_opts(spec, &o, &doc), KILN_E_OK);
        if (!strstr(errs.items[0].message, cases[i].fragment)) {
            fprintf(stderr, "case %zu: expected %s\n", i + 1, cases[i].fragment);
            dump_errors();
            fail();
        }
        assert_string_equal(errs.items[0].pointer, "/sheets/0/data");
    }
}

static void test_rows_open_without_doc_limits(void **state)
{
    (void)state;
    /* A markdown-style table: INLINE rows built outside the parser, kept as
     * their text. */
    json_t *rows = json_pack("[[s, s], [s]]", "a", "b", "c");
    assert_non_null(rows);
    kiln_arena arena;
    kiln_arena_init(&arena, 0);
    kiln_table_data t = {0};
    t.source = KILN_ROWS_INLINE;
    t.private_rows = kiln_inline_rows_from_json(&arena, rows);
    assert_non_null(t.private_rows);
    t.pointer = "/blocks/0";
    kiln_row_reader *r;
    kiln_error e;
    assert_int_equal(kiln_rows_open(NULL, &t, &r, &e), KILN_E_OK);
    const kiln_cell *c;
    size_t n;
    assert_int_equal(kiln_rows_next(r, &c, &n, &e), 1);
    assert_int_equal(n, 2);
    assert_text(&c[1], "b");
    assert_int_equal(kiln_rows_next(r, &c, &n, &e), 1);
    assert_int_equal(n, 1);
    assert_int_equal(kiln_rows_next(r, &c, &n, &e), 0);
    kiln_rows_close(r);
    kiln_rows_close(NULL);
    json_decref(rows);
    kiln_arena_release(&arena);
}

static void test_jsonl_row_limit(void **state)
{
    (void)state;
    write_str("lim.jsonl", "[1]\n[2]\n[3]\n");
    kiln_parse_options o;
    kiln_parse_options_init(&o);
    o.base_dir = tmpdir;
    o.scan_data_files = 1;
    o.limits.rows = 3;
    kiln_doc *doc;
    /* No header row: three data rows fit... */
    assert_int_equal(parse_opts("{'sheets': [{'data': {'path': 'lim.jsonl'}}]}", &o, &doc),
                     KILN_E_OK);
    kiln_doc_free(doc);
    /* ...but not with a header row above them. */
    assert_int_equal(parse_opts("{'sheets': [{'columns': [{'header': 'h'}], 'data': {'path': "
                                "'lim.jsonl'}}]}",
                                &o, &doc),
                     KILN_E_LIMIT);
    assert_true(strstr(errs.items[0].message, "lim.jsonl line 3: more than 3 rows") != NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inline_rows),
        cmocka_unit_test(test_csv_quoting),
        cmocka_unit_test(test_csv_auto_typing),
        cmocka_unit_test(test_csv_typed_columns),
        cmocka_unit_test(test_csv_header_names_typed_columns),
        cmocka_unit_test(test_csv_errors),
        cmocka_unit_test(test_csv_row_limit),
        cmocka_unit_test(test_csv_columns_limit),
        cmocka_unit_test(test_csv_symlink_refused),
        cmocka_unit_test(test_csv_long_record),
        cmocka_unit_test(test_jsonl),
        cmocka_unit_test(test_jsonl_row_limit),
        cmocka_unit_test(test_rows_open_without_doc_limits),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
