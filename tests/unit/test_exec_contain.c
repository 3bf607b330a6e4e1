/* test_exec_contain.c - starting a sandbox whose setup fails
 * (exec/contain.c), as root (skipped otherwise).
 *
 * The sandbox's first process reads its go-ahead and its seccomp filter
 * from the supervisor while it sets itself up; a step that fails ends it
 * at once. The supervisor must then hear the setup failure on the report
 * pipe, not die of SIGPIPE writing to a reader that has gone. The failing
 * step here is harmless: the job directory to open does not exist, so the
 * sandbox ends before it mounts anything, in its own namespaces.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_util.h"

#include "contract/limits.h"
#include "exec/exec_internal.h"
#include "common/banned.h"

static void test_setup_failure_is_reported_not_sigpipe(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        fprintf(stderr, "  skipped: starting a sandbox needs root\n");
        skip();
    }
    /* SIGPIPE as a fresh process has it: the default action, unblocked. */
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    /* A filter far larger than a pipe holds: the supervisor is still
     * writing it when the sandbox ends, which it does without reading it. */
    size_t len = 1u << 20;
    char *bpf = calloc(1, len);
    assert_non_null(bpf);
    kiln_seccomp_program filter = {.bpf = bpf, .len = len};
    int out[2], errs[2], report[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(errs, O_CLOEXEC), 0);
    assert_int_equal(pipe2(report, O_CLOEXEC), 0);
    kiln_run_limits limits;
    kiln_job_limits_default(&limits);
    char *argv[] = {"/bin/true", NULL}, *envp[] = {NULL};
    kiln_contain_job job = {
        .mount = {.job_dir_host = "/nonexistent-kiln-test-job-dir",
                  .tmp_bytes = 1 << 20,
                  .job_dir_owner = KILN_SANDBOX_UID},
        .limits = &limits,
        .filter = &filter,
        .argv = argv,
        .envp = envp,
        .stdout_fd = out[1],
        .stderr_fd = errs[1],
        .report_fd = report[1],
    };
    kiln_idmap map;
    kiln_idmap_for_job(&map, getpid());
    kiln_error err;
    memset(&err, 0, sizeof err);

    pid_t pid = kiln_contain_spawn(&job, &map, NULL, &err);
    if (pid < 0)
        fail_msg("the sandbox did not start: %s", err.message);
    close(out[1]);
    close(errs[1]);
    close(report[1]);
    kiln_contain_report r;
    memset(&r, 0, sizeof r);
    assert_int_equal(read(report[0], &r, sizeof r), (ssize_t)sizeof r);
    assert_int_equal(r.kind, KILN_REPORT_SETUP);
    assert_string_equal(r.what, "open the job directory");
    assert_int_equal(r.err_no, ENOENT);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
    close(out[0]);
    close(errs[0]);
    close(report[0]);
    free(bpf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setup_failure_is_reported_not_sigpipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
