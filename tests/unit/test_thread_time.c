/* test_thread_time.c - common/thread_time.c: gmtime and ctime keep one
 * buffer per thread, so the document libraries can call them from several
 * render workers at once. */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

struct probe {
    time_t when;
    struct tm *tm_buffer;
    char *ctime_buffer;
    int year;
};

static void *probe_thread(void *arg)
{
    struct probe *p = arg;
    p->tm_buffer = gmtime(&p->when);
    p->ctime_buffer = ctime(&p->when);
    /* Another thread's call happens in between in the main thread's
     * test below; the value read here must still be this thread's. */
    p->year = p->tm_buffer->tm_year;
    return NULL;
}

/* AddressSanitizer's runtime brings its own gmtime and ctime (interceptors
 * that call libc's, static buffer and all), and being linked first they
 * take the place of thread_time.c's: under ASan there is nothing of ours
 * to test here. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static void buffers_are_per_thread(void **state)
{
    (void)state;
#ifdef UNDER_ASAN
    skip();
#endif
    struct probe other = {.when = 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, probe_thread, &other), 0);
    assert_int_equal(pthread_join(th, NULL), 0);

    time_t when = 4102444800; /* 2100-01-01T00:00:00Z */
    struct tm *mine = gmtime(&when);
    assert_non_null(mine);
    assert_ptr_not_equal(mine, other.tm_buffer);
    assert_ptr_not_equal(ctime(&when), other.ctime_buffer);
    assert_int_equal(mine->tm_year, 200);
    assert_int_equal(other.year, 70);
}

static void values_match_the_reentrant_calls(void **state)
{
    (void)state;
    time_t when = 1796083200; /* 2026-12-01T00:00:00Z */
    struct tm want;
    char want_text[26];
    gmtime_r(&when, &want);
    struct tm *got = gmtime(&when);
    assert_int_equal(got->tm_year, want.tm_year);
    assert_int_equal(got->tm_mon, want.tm_mon);
    assert_int_equal(got->tm_mday, want.tm_mday);
    assert_int_equal(got->tm_hour, want.tm_hour);
    struct tm local;
    localtime_r(&when, &local);
    asctime_r(&local, want_text);
    assert_string_equal(ctime(&when), want_text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buffers_are_per_thread),
        cmocka_unit_test(values_match_the_reentrant_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
