/* test_output.c - the size-enforcing output path (common/output.c), also
 * over a caller's file, and the render entry point's format table and
 * kiln_render_to_output (artifacts/render.c). */
#include <dirent.h>
#include <fcntl.h>
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

#include "artifacts/render.h"
#include "artifacts/spec/spec.h"
#include "common/error.h"
#include "common/output.h"
#include "common/banned.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    return test_dir_make(dir, sizeof dir, "output");
}

static int teardown(void **state)
{
    (void)state;
    return test_dir_remove(dir);
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

static char *path_in(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void test_commit_makes_file(void **state)
{
    (void)state;
    kiln_output out;
    kiln_error err;
    uint64_t bytes = 0;
    assert_int_equal(kiln_output_open(&out, path_in("a.bin"), 100, &err), KILN_E_OK);
    assert_int_equal(entries(), 0); /* the temporary file has no name */
    assert_int_equal(kiln_output_write(&out, "hello", 5, &err), KILN_E_OK);
    assert_int_equal(kiln_output_commit(&out, &bytes, &err), KILN_E_OK);
    assert_int_equal(bytes, 5);
    struct stat st;
    assert_int_equal(stat(path_in("a.bin"), &st), 0);
    assert_int_equal(st.st_size, 5);
    assert_int_equal(entries(), 1);
}

static void test_abort_leaves_nothing(void **state)
{
    (void)state;
    kiln_output out;
    kiln_error err;
    assert_int_equal(kiln_output_open(&out, path_in("b.bin"), 100, &err), KILN_E_OK);
    assert_int_equal(kiln_output_write(&out, "data", 4, &err), KILN_E_OK);
    kiln_output_abort(&out);
    assert_int_equal(entries(), 0);
    kiln_output_abort(&out); /* twice is harmless */
}

static void test_write_past_ceiling_stops_early(void **state)
{
    (void)state;
    kiln_output out;
    kiln_error err;
    assert_int_equal(kiln_output_open(&out, path_in("c.bin"), 8, &err), KILN_E_OK);
    assert_int_equal(kiln_output_write(&out, "12345", 5, &err), KILN_E_OK);
    assert_int_equal(kiln_output_write(&out, "6789", 4, &err), KILN_E_TOO_LARGE);
    assert_int_equal(err.limit, 8);
    assert_int_equal(err.actual, 9);
    assert_non_null(strstr(err.message, "8 bytes"));
    assert_int_equal(kiln_output_size(&out), 5); /* nothing past the ceiling was written */
    kiln_output_abort(&out);
    assert_int_equal(entries(), 0);
}

/* A library that writes through the path (as libxlsxwriter does) is caught
 * on commit, and the existing target survives untouched. */
static void test_commit_over_ceiling_keeps_old_file(void **state)
{
    (void)state;
    FILE *f = fopen(path_in("d.bin"), "w");
    assert_non_null(f);
    fputs("old", f);
    fclose(f);

    kiln_output out;
    kiln_error err;
    assert_int_equal(kiln_output_open(&out, path_in("d.bin"), 10, &err), KILN_E_OK);
    FILE *lib = fopen(kiln_output_path(&out), "wb");
    assert_non_null(lib);
    for (int i = 0; i < 20; i++)
        fputc('x', lib);
    fclose(lib);
    assert_int_equal(kiln_output_size(&out), 20);
    assert_int_equal(kiln_output_commit(&out, NULL, &err), KILN_E_TOO_LARGE);
    assert_int_equal(err.limit, 10);
    assert_int_equal(err.actual, 20);
    assert_non_null(strstr(err.message, "reached 20 bytes"));

    char buf[16] = {0};
    f = fopen(path_in("d.bin"), "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "old");
    assert_int_equal(entries(), 1);
}

static void test_commit_replaces_existing(void **state)
{
    (void)state;
    FILE *f = fopen(path_in("e.bin"), "w");
    assert_non_null(f);
    fputs("old contents", f);
    fclose(f);
    kiln_output out;
    kiln_error err;
    assert_int_equal(kiln_output_open(&out, path_in("e.bin"), 0, &err), KILN_E_OK);
    assert_int_equal(out.max_bytes, KILN_DEFAULT_MAX_BYTES);
    assert_int_equal(kiln_output_write(&out, "new", 3, &err), KILN_E_OK);
    assert_int_equal(kiln_output_commit(&out, NULL, &err), KILN_E_OK);
    struct stat st;
    assert_int_equal(stat(path_in("e.bin"), &st), 0);
    assert_int_equal(st.st_size, 3);
    assert_int_equal(entries(), 1);
}

/* A symbolic link at the target is replaced, never written through. */
static void test_symlink_target_replaced(void **state)
{
    (void)state;
    FILE *f = fopen(path_in("victim"), "w");
    assert_non_null(f);
    fputs("keep", f);
    fclose(f);
    assert_int_equal(symlink("victim", path_in("link.bin")), 0);
    kiln_output out;
    kiln_error err;
    assert_int_equal(kiln_output_open(&out, path_in("link.bin"), 0, &err), KILN_E_OK);
    assert_int_equal(kiln_output_write(&out, "new!!", 5, &err), KILN_E_OK);
    assert_int_equal(kiln_output_commit(&out, NULL, &err), KILN_E_OK);
    struct stat st;
    assert_int_equal(lstat(path_in("link.bin"), &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, 5);
    assert_int_equal(stat(path_in("victim"), &st), 0);
    assert_int_equal(st.st_size, 4);
    assert_int_equal(entries(), 2);
}

static void test_missing_directory(void **state)
{
    (void)state;
    kiln_output out;
    kiln_error err;
    assert_int_equal(kiln_output_open(&out, path_in("nope/x.bin"), 0, &err), KILN_E_WRITE);
    assert_non_null(strstr(err.message, "nope"));
    assert_int_equal(kiln_output_open(&out, path_in(""), 0, &err), KILN_E_USAGE);
}

/* An unnamed file in the test directory, as the store's upload is. */
static int caller_file(void)
{
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    return fd;
}

static uint64_t fd_size(int fd)
{
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    return (uint64_t)st.st_size;
}

/* Over a caller's file: written, committed, nothing named anywhere, the
 * descriptor still the caller's. */
static void test_over_fd_commit(void **state)
{
    (void)state;
    int fd = caller_file();
    kiln_output out;
    kiln_error err;
    uint64_t bytes = 0;
    assert_int_equal(kiln_output_open_fd(&out, fd, "upload", 100, &err), KILN_E_OK);
    assert_int_equal(kiln_output_write(&out, "hello", 5, &err), KILN_E_OK);
    assert_int_equal(kiln_output_commit(&out, &bytes, &err), KILN_E_OK);
    assert_int_equal(bytes, 5);
    assert_int_equal(entries(), 0);
    assert_true(fcntl(fd, F_GETFD) >= 0); /* not closed */
    char back[8] = "";
    assert_int_equal(pread(fd, back, sizeof back, 0), 5);
    assert_memory_equal(back, "hello", 5);
    kiln_output_abort(&out); /* after a commit: harmless, the body stays */
    assert_int_equal(fd_size(fd), 5);
    close(fd);
}

/* The ceiling as for a named target: the early stop, and the size check
 * at commit for what a library wrote through the path; a failure or an
 * abort empties the file and leaves it open. */
static void test_over_fd_ceiling(void **state)
{
    (void)state;
    int fd = caller_file();
    kiln_output out;
    kiln_error err;
    assert_int_equal(kiln_output_open_fd(&out, fd, "upload", 8, &err), KILN_E_OK);
    assert_int_equal(kiln_output_write(&out, "12345", 5, &err), KILN_E_OK);
    assert_int_equal(kiln_output_write(&out, "6789", 4, &err), KILN_E_TOO_LARGE);
    assert_int_equal(err.limit, 8);
    assert_int_equal(err.actual, 9);
    assert_int_equal(kiln_output_size(&out), 5);
    kiln_output_abort(&out);
    assert_int_equal(fd_size(fd), 0);
    assert_true(fcntl(fd, F_GETFD) >= 0);

    assert_int_equal(kiln_output_open_fd(&out, fd, "upload", 8, &err), KILN_E_OK);
    FILE *f = fopen(kiln_output_path(&out), "w");
    assert_non_null(f);
    fputs("0123456789", f);
    fclose(f);
    uint64_t bytes = 0;
    assert_int_equal(kiln_output_commit(&out, &bytes, &err), KILN_E_TOO_LARGE);
    assert_int_equal(err.limit, 8);
    assert_int_equal(err.actual, 10);
    assert_int_equal(fd_size(fd), 0);
    assert_true(fcntl(fd, F_GETFD) >= 0);
    assert_int_equal(entries(), 0);

    /* Only an empty regular file. */
    assert_int_equal(write(fd, "x", 1), 1);
    assert_int_equal(kiln_output_open_fd(&out, fd, "upload", 8, &err), KILN_E_USAGE);
    close(fd);
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_int_equal(kiln_output_open_fd(&out, d, "upload", 8, &err), KILN_E_USAGE);
    close(d);
}

/* kiln_render_to_output fills an output over a caller's file with the
 * document kiln_render writes to a path, and aborts it when it fails. */
static void test_render_to_output(void **state)
{
    (void)state;
    static const char spec[] = "{\"metadata\": {\"created\": \"2026-01-01T00:00:00Z\"}, "
                               "\"blocks\": [{\"type\": \"heading\", \"text\": \"T\"}]}";
    kiln_doc *doc;
    assert_int_equal(kiln_doc_parse(spec, strlen(spec), NULL, &doc, NULL), KILN_E_OK);
    kiln_render_options ro = {.max_bytes = 0, .tmp_dir = dir};
    kiln_render_result res;
    kiln_error err;
    assert_int_equal(kiln_render(doc, KILN_FORMAT_DOCX, path_in("a.docx"), &ro, &res, &err),
                     KILN_E_OK);
    uint64_t by_path = res.bytes;

    int fd = caller_file();
    kiln_output out;
    uint64_t bytes = 0;
    assert_int_equal(kiln_output_open_fd(&out, fd, "upload", 0, &err), KILN_E_OK);
    memset(&res, 0, sizeof res);
    assert_int_equal(kiln_render_to_output(doc, KILN_FORMAT_DOCX, &out, &ro, &res, &err),
                     KILN_E_OK);
    assert_int_equal(res.format, KILN_FORMAT_DOCX);
    assert_int_equal(res.bytes, by_path);
    assert_int_equal(kiln_output_commit(&out, &bytes, &err), KILN_E_OK);
    assert_int_equal(bytes, by_path);
    /* The same bytes as the file kiln_render named. */
    unsigned char *a = malloc(by_path), *b = malloc(by_path);
    assert_non_null(a);
    assert_non_null(b);
    int afd = open(path_in("a.docx"), O_RDONLY | O_CLOEXEC);
    assert_int_equal(pread(afd, a, by_path, 0), (ssize_t)by_path);
    close(afd);
    assert_int_equal(pread(fd, b, by_path, 0), (ssize_t)by_path);
    assert_memory_equal(a, b, by_path);
    free(a);
    free(b);
    assert_int_equal(ftruncate(fd, 0), 0);

    /* Past the ceiling: the writer's early stop, the output aborted (the
     * file empty), nothing named. */
    assert_int_equal(kiln_output_open_fd(&out, fd, "upload", 100, &err), KILN_E_OK);
    assert_int_equal(kiln_render_to_output(doc, KILN_FORMAT_DOCX, &out, &ro, &res, &err),
                     KILN_E_TOO_LARGE);
    assert_int_equal(fd_size(fd), 0);
    assert_int_equal(entries(), 1); /* a.docx only */
    close(fd);
    kiln_doc_free(doc);
}

static void test_formats(void **state)
{
    (void)state;
    kiln_format f;
    assert_int_equal(kiln_format_from_path("a/b.XLSX", &f), 0);
    assert_int_equal(f, KILN_FORMAT_XLSX);
    assert_int_equal(kiln_format_from_path("report.pdf", &f), 0);
    assert_int_equal(f, KILN_FORMAT_PDF);
    assert_int_equal(kiln_format_from_path("dir.x/noext", &f), -1);
    assert_int_equal(kiln_format_from_name("pptx", &f), 0);
    assert_int_equal(f, KILN_FORMAT_PPTX);
    assert_int_equal(kiln_format_from_name("csv", &f), -1);
    assert_string_equal(kiln_writer_for(KILN_FORMAT_XLSX)->media_type,
                        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
}

static void test_error_codes(void **state)
{
    (void)state;
    assert_string_equal(kiln_status_name(KILN_E_INVALID_SPEC), "invalid_spec");
    assert_int_equal(kiln_status_exit(KILN_E_USAGE), 2);
    assert_int_equal(kiln_status_exit(KILN_E_INVALID_SPEC), 3);
    assert_int_equal(kiln_status_exit(KILN_E_LIMIT), 3);
    assert_int_equal(kiln_status_exit(KILN_E_TOO_LARGE), 4);
    assert_int_equal(kiln_status_exit(KILN_E_INPUT), 5);
    assert_int_equal(kiln_status_exit(KILN_E_WRITE), 6);
    kiln_errors list;
    kiln_errors_init(&list);
    for (int i = 0; i < KILN_ERRORS_MAX + 3; i++)
        kiln_errors_addf(&list, KILN_E_INVALID_SPEC, "/a", "error %d", i);
    assert_int_equal(list.count, KILN_ERRORS_MAX);
    assert_int_equal(list.dropped, 3);
    assert_string_equal(list.items[1].message, "error 1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_makes_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_past_ceiling_stops_early, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_over_ceiling_keeps_old_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_replaces_existing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_target_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_over_fd_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_over_fd_ceiling, setup, teardown),
        cmocka_unit_test_setup_teardown(test_render_to_output, setup, teardown),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_error_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
