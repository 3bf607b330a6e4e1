/* test_markdown.c - kiln_markdown_to_blocks (artifacts/spec/markdown.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artifacts/spec/markdown.h"
#include "artifacts/spec/spec_internal.h"
#include "common/banned.h"

typedef struct fixture {
    kiln_arena arena;
    kiln_limits limits;
    kiln_error err;
    kiln_block *blocks;
    size_t count;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx)
        return -1;
    kiln_arena_init(&fx->arena, 0);
    fx->limits.rows = KILN_LIMIT_ROWS;
    fx->limits.columns = KILN_LIMIT_COLUMNS;
    fx->limits.cell_chars = KILN_LIMIT_CELL_CHARS;
    fx->limits.list_depth = KILN_LIMIT_LIST_DEPTH;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    kiln_arena_release(&fx->arena);
    free(fx);
    return 0;
}

static kiln_status parse(fixture *fx, const char *md)
{
    memset(&fx->err, 0, sizeof fx->err);
    return kiln_markdown_to_blocks(&fx->arena, md, strlen(md), "/blocks/3", &fx->limits,
                                   &fx->blocks, &fx->count, &fx->err);
}

static void parse_ok(fixture *fx, const char *md)
{
    kiln_status s = parse(fx, md);
    if (s != KILN_E_OK)
        fail_msg("unexpected error %d: %s", (int)s, fx->err.message);
}

/* All runs of a text concatenated, into buf. */
static const char *plain(const kiln_text *t, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < t->run_count; i++) {
        assert_int_equal(strlen(t->runs[i].text), t->runs[i].len);
        int n = snprintf(buf + o, size - o, "%s", t->runs[i].text);
        assert_true(n >= 0 && (size_t)n < size - o);
        o += (size_t)n;
    }
    return buf;
}

static void assert_run(const kiln_run *r, const char *text, unsigned flags, const char *link)
{
    assert_string_equal(r->text, text);
    assert_int_equal(r->len, strlen(text));
    assert_int_equal(r->flags, flags);
    if (link)
        assert_string_equal(r->link, link);
    else
        assert_null(r->link);
}

static void test_empty(void **state)
{
    fixture *fx = *state;
    parse_ok(fx, "");
    assert_int_equal(fx->count, 0);
    parse_ok(fx, "\n\n   \n");
    assert_int_equal(fx->count, 0);
}

static void test_headings(void **state)
{
    fixture *fx = *state;
    char buf[256];
    parse_ok(fx, "# One\n\n## Two *it*\n\n###### Six\n\nSetext\n======\n\nbody\n");
    assert_int_equal(fx->count, 5);
    const int levels[] = {1, 2, 6, 1};
    const char *texts[] = {"One", "Two it", "Six", "Setext"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(fx->blocks[i].kind, KILN_BLOCK_HEADING);
        assert_int_equal(fx->blocks[i].level, levels[i]);
        assert_string_equal(plain(&fx->blocks[i].text, buf, sizeof buf), texts[i]);
        assert_string_equal(fx->blocks[i].pointer, "/blocks/3");
    }
    assert_run(&fx->blocks[1].text.runs[1], "it", KILN_RUN_ITALIC, NULL);
    assert_int_equal(fx->blocks[4].kind, KILN_BLOCK_PARAGRAPH);
}

static void test_nested_emphasis(void **state)
{
    fixture *fx = *state;
    parse_ok(fx, "a **b *c* d** ~~e~~ `f *g*` ***h***");
    assert_int_equal(fx->count, 1);
    const kiln_text *t = &fx->blocks[0].text;
    assert_int_equal(t->run_count, 10);
    assert_run(&t->runs[0], "a ", 0, NULL);
    assert_run(&t->runs[1], "b ", KILN_RUN_BOLD, NULL);
    assert_run(&t->runs[2], "c", KILN_RUN_BOLD | KILN_RUN_ITALIC, NULL);
    assert_run(&t->runs[3], " d", KILN_RUN_BOLD, NULL);
    assert_run(&t->runs[4], " ", 0, NULL);
    assert_run(&t->runs[5], "e", KILN_RUN_STRIKE, NULL);
    assert_run(&t->runs[6], " ", 0, NULL);
    assert_run(&t->runs[7], "f *g*", KILN_RUN_CODE, NULL);
    assert_run(&t->runs[8], " ", 0, NULL);
    assert_run(&t->runs[9], "h", KILN_RUN_BOLD | KILN_RUN_ITALIC, NULL);
}

static void test_breaks_and_images(void **state)
{
    fixture *fx = *state;
    char buf[256];
    parse_ok(fx, "one\ntwo  \nthree ![a *logo*](https://example.com/x.png) end");
    assert_int_equal(fx->count, 1);
    assert_string_equal(plain(&fx->blocks[0].text, buf, sizeof buf), "one two\nthree a logo end");
    /* a paragraph that is only an image without alt text is dropped */
    parse_ok(fx, "![](https://example.com/x.png)");
    assert_int_equal(fx->count, 0);
}

static void test_links(void **state)
{
    fixture *fx = *state;
    parse_ok(fx, "[web](https://example.com/a?b=1&amp;c=2) [mail](mailto:x@example.com) "
                 "[js](javascript:alert(1)) [rel](page.html) <http://auto.example/> "
                 "[ftp](FTP://files.example) [**bold link**](http://b.example)");
    const kiln_text *t = &fx->blocks[0].text;
    assert_run(&t->runs[0], "web", 0, "https://example.com/a?b=1&c=2");
    assert_run(&t->runs[1], " ", 0, NULL);
    assert_run(&t->runs[2], "mail", 0, "mailto:x@example.com");
    /* other schemes and relative links are plain text */
    assert_run(&t->runs[3], " js rel ", 0, NULL);
    assert_run(&t->runs[4], "http://auto.example/", 0, "http://auto.example/");
    assert_run(&t->runs[5], " ", 0, NULL);
    assert_run(&t->runs[6], "ftp", 0, "FTP://files.example");
    assert_run(&t->runs[7], " ", 0, NULL);
    assert_run(&t->runs[8], "bold link", KILN_RUN_BOLD, "http://b.example");
    assert_int_equal(t->run_count, 9);

    /* GitHub's permissive autolinks */
    parse_ok(fx, "see www.example.com/x or https://example.org.");
    t = &fx->blocks[0].text;
    assert_run(&t->runs[1], "www.example.com/x", 0, "http://www.example.com/x");
    assert_run(&t->runs[3], "https://example.org", 0, "https://example.org");
}

static void test_nested_lists(void **state)
{
    fixture *fx = *state;
    char buf[256];
    parse_ok(fx, "3. three\n"
                 "4. four\n"
                 "   - four a\n"
                 "     1. deep *one*\n"
                 "     2. deep two\n"
                 "   - four b\n"
                 "5. five\n");
    assert_int_equal(fx->count, 1);
    const kiln_block *b = &fx->blocks[0];
    assert_int_equal(b->kind, KILN_BLOCK_LIST);
    assert_true(b->list.ordered);
    assert_int_equal(b->list.start, 3);
    assert_int_equal(b->list.item_count, 3);
    assert_string_equal(plain(&b->list.items[0].text, buf, sizeof buf), "three");
    assert_null(b->list.items[0].children);
    assert_null(b->list.items[2].children);

    const kiln_list *l2 = b->list.items[1].children;
    assert_non_null(l2);
    assert_false(l2->ordered);
    assert_int_equal(l2->item_count, 2);
    assert_string_equal(plain(&l2->items[0].text, buf, sizeof buf), "four a");
    assert_string_equal(plain(&l2->items[1].text, buf, sizeof buf), "four b");
    assert_null(l2->items[1].children);

    const kiln_list *l3 = l2->items[0].children;
    assert_non_null(l3);
    assert_true(l3->ordered);
    assert_int_equal(l3->start, 1);
    assert_int_equal(l3->item_count, 2);
    assert_run(&l3->items[0].text.runs[1], "one", KILN_RUN_ITALIC, NULL);
    assert_string_equal(plain(&l3->items[1].text, buf, sizeof buf), "deep two");

    /* a loose item: its paragraphs joined with "\n" */
    parse_ok(fx, "- first\n\n  second\n- next\n");
    assert_int_equal(fx->count, 1);
    assert_string_equal(plain(&fx->blocks[0].list.items[0].text, buf, sizeof buf),
                        "first\nsecond");
}

static void test_list_depth_limit(void **state)
{
    fixture *fx = *state;
    fx->limits.list_depth = 3;
    parse_ok(fx, "- 1\n  - 2\n    - 3\n");
    assert_int_equal(parse(fx, "- 1\n  - 2\n    - 3\n      - 4\n"), KILN_E_LIMIT);
    assert_int_equal(fx->err.code, KILN_E_LIMIT);
    assert_string_equal(fx->err.pointer, "/blocks/3/text");
    assert_int_equal(fx->err.limit, 3);
    assert_int_equal(fx->err.actual, 4);
    /* lists flattened into a quote count too */
    assert_int_equal(parse(fx, "> - 1\n>   - 2\n>     - 3\n>       - 4\n"), KILN_E_LIMIT);
}

static void test_table(void **state)
{
    fixture *fx = *state;
    parse_ok(fx, "| Name | Qty | Price | Note |\n"
                 "|:-----|:---:|------:|------|\n"
                 "| *apple* | 3 | [1.50](http://p.example) | |\n"
                 "| pear &amp; plum | 10 | 2 | `x` |\n");
    assert_int_equal(fx->count, 1);
    const kiln_block *b = &fx->blocks[0];
    assert_int_equal(b->kind, KILN_BLOCK_TABLE);
    assert_non_null(b->table);
    const kiln_table_data *d = &b->table->data;
    assert_int_equal(d->column_count, 4);
    assert_int_equal(d->source, KILN_ROWS_INLINE);
    assert_int_equal(d->inline_row_count, 2);
    assert_true(d->header);
    assert_string_equal(d->pointer, "/blocks/3/text");
    assert_string_equal(d->columns[0].header, "Name");
    assert_string_equal(d->columns[3].header, "Note");
    assert_int_equal(d->columns[0].align, KILN_ALIGN_LEFT);
    assert_int_equal(d->columns[1].align, KILN_ALIGN_CENTER);
    assert_int_equal(d->columns[2].align, KILN_ALIGN_RIGHT);
    assert_int_equal(d->columns[3].align, KILN_ALIGN_DEFAULT);

    /* The rows are kept as their text, a row at a time. */
    const kiln_inline_rows *rows = d->private_rows;
    assert_int_equal(rows->count, 2);
    const char *want[] = {"[\"apple\",\"3\",\"1.50\",null]",
                          "[\"pear & plum\",\"10\",\"2\",\"x\"]"};
    for (size_t i = 0; i < 2; i++) {
        json_t *row = kiln_inline_row(rows, i);
        assert_non_null(row);
        char *dump = json_dumps(row, JSON_COMPACT);
        assert_string_equal(dump, want[i]);
        free(dump);
        json_decref(row);
    }
}

static void test_table_in_list_is_kept(void **state)
{
    fixture *fx = *state;
    parse_ok(fx, "- item\n\n  | a | b |\n  |---|---|\n  | 1 | 2 |\n\nafter\n");
    assert_int_equal(fx->count, 3);
    assert_int_equal(fx->blocks[0].kind, KILN_BLOCK_LIST);
    assert_int_equal(fx->blocks[1].kind, KILN_BLOCK_TABLE);
    assert_int_equal(fx->blocks[1].table->data.inline_row_count, 1);
    assert_int_equal(fx->blocks[2].kind, KILN_BLOCK_PARAGRAPH);
}

static void test_cell_limit(void **state)
{
    fixture *fx = *state;
    fx->limits.cell_chars = 5;
    parse_ok(fx, "| h |\n|---|\n| \xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9 |\n"); /* 5 chars */
    assert_int_equal(parse(fx, "| h |\n|---|\n| abcdef |\n"), KILN_E_LIMIT);
    assert_string_equal(fx->err.pointer, "/blocks/3/text");
    assert_int_equal(fx->err.limit, 5);
    assert_int_equal(fx->err.actual, 6);
    assert_int_equal(parse(fx, "| header |\n|---|\n| a |\n"), KILN_E_LIMIT);
}

static void test_code(void **state)
{
    fixture *fx = *state;
    parse_ok(fx, "```python {.x}\nprint(1)\n  x = \"<&>\"\n```\n\n    indented\n    more\n");
    assert_int_equal(fx->count, 2);
    assert_int_equal(fx->blocks[0].kind, KILN_BLOCK_CODE);
    assert_string_equal(fx->blocks[0].code, "print(1)\n  x = \"<&>\"");
    assert_string_equal(fx->blocks[0].language, "python");
    assert_int_equal(fx->blocks[1].kind, KILN_BLOCK_CODE);
    assert_string_equal(fx->blocks[1].code, "indented\nmore");
    assert_null(fx->blocks[1].language);
}

static void test_quote_and_rule(void **state)
{
    fixture *fx = *state;
    char buf[256];
    parse_ok(fx, "> first **strong**\n> line\n>\n> second\n>\n> - a\n> - b\n\n---\n\n***\n");
    assert_int_equal(fx->count, 3);
    const kiln_block *q = &fx->blocks[0];
    assert_int_equal(q->kind, KILN_BLOCK_QUOTE);
    assert_string_equal(plain(&q->text, buf, sizeof buf),
                        "first strong line\nsecond\n\xE2\x80\xA2 a\n\xE2\x80\xA2 b");
    assert_run(&q->text.runs[1], "strong", KILN_RUN_BOLD, NULL);
    assert_int_equal(fx->blocks[1].kind, KILN_BLOCK_RULE);
    assert_int_equal(fx->blocks[2].kind, KILN_BLOCK_RULE);

    /* nested lists and code inside a quote: indented lines of the one text */
    parse_ok(fx, "> - a\n>   - b\n>     1. c\n>\n> ```\n> x = 1\n> ```\n> > inner\n");
    assert_int_equal(fx->count, 1);
    assert_string_equal(plain(&fx->blocks[0].text, buf, sizeof buf),
                        "\xE2\x80\xA2 a\n  \xE2\x80\xA2 b\n    1. c\nx = 1\ninner");
    const kiln_text *t = &fx->blocks[0].text;
    assert_run(&t->runs[t->run_count - 2], "x = 1", KILN_RUN_CODE, NULL);
}

static void test_entities(void **state)
{
    fixture *fx = *state;
    char buf[256];
    parse_ok(fx, "&amp; &lt; &gt; &quot; &apos; &nbsp; &copy; &reg; &mdash; &ndash; &hellip; "
                 "&#65; &#x263A; &#0; &bogus; &amp");
    assert_string_equal(plain(&fx->blocks[0].text, buf, sizeof buf),
                        "& < > \" ' \xC2\xA0 \xC2\xA9 \xC2\xAE \xE2\x80\x94 \xE2\x80\x93 "
                        "\xE2\x80\xA6 A \xE2\x98\xBA \xEF\xBF\xBD &bogus; &amp");
    /* an entity that decodes to a control character is refused */
    assert_int_equal(parse(fx, "bell &#7; here"), KILN_E_INVALID_SPEC);
    assert_string_equal(fx->err.pointer, "/blocks/3/text");
}

static void test_html_not_passed_through(void **state)
{
    fixture *fx = *state;
    char buf[256];
    parse_ok(fx, "<script>alert(1)</script>\n\na <b>bold</b> <a href=\"javascript:x\">y</a>\n");
    assert_int_equal(fx->count, 2);
    for (size_t i = 0; i < fx->count; i++) {
        assert_int_equal(fx->blocks[i].kind, KILN_BLOCK_PARAGRAPH);
        const kiln_text *t = &fx->blocks[i].text;
        for (size_t k = 0; k < t->run_count; k++) {
            assert_int_equal(t->runs[k].flags, 0);
            assert_null(t->runs[k].link);
        }
    }
    /* the tags stay as literal text, never markup */
    assert_string_equal(plain(&fx->blocks[0].text, buf, sizeof buf), "<script>alert(1)</script>");
    assert_string_equal(plain(&fx->blocks[1].text, buf, sizeof buf),
                        "a <b>bold</b> <a href=\"javascript:x\">y</a>");
}

static void test_control_characters(void **state)
{
    fixture *fx = *state;
    assert_int_equal(parse(fx, "# ok\n\nbad \x01 char\n"), KILN_E_INVALID_SPEC);
    assert_string_equal(fx->err.pointer, "/blocks/3/text");
    assert_int_equal(parse(fx, "| a |\n|---|\n| \x1b[0m |\n"), KILN_E_INVALID_SPEC);
    assert_int_equal(parse(fx, "x \xEF\xBF\xBF y"), KILN_E_INVALID_SPEC); /* U+FFFF */
    assert_int_equal(parse(fx, "x \xC3 y"), KILN_E_INVALID_SPEC);         /* bad UTF-8 */
    parse_ok(fx, "tab\there\r\nand cr\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_headings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested_emphasis, setup, teardown),
        cmocka_unit_test_setup_teardown(test_breaks_and_images, setup, teardown),
        cmocka_unit_test_setup_teardown(test_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested_lists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_depth_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_in_list_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cell_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quote_and_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entities, setup, teardown),
        cmocka_unit_test_setup_teardown(test_html_not_passed_through, setup, teardown),
        cmocka_unit_test_setup_teardown(test_control_characters, setup, teardown),
    };
    return cmocka_run_group_tests_name("markdown", tests, NULL, NULL);
}
