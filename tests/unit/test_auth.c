/* test_auth.c - API keys and signed download links (service/auth.c). */
#include <dirent.h>
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

#include <nettle/hmac.h>

#include "tests/unit/test_util.h"

#include "common/error.h"
#include "service/auth.h"
#include "common/banned.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    return test_dir_make(dir, sizeof dir, "auth");
}

static int teardown(void **state)
{
    (void)state;
    return test_dir_remove(dir);
}

static char *path_in(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

/* Write text to dir/name; returns the path. */
static const char *write_file(const char *name, const char *text)
{
    const char *p = path_in(name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    return p;
}

static void hash_hex(const char *key, char *hex)
{
    kiln_auth_hash_key(key, strlen(key), hex);
}

/* A keys-file line "TENANT HASH(key)\n" appended to buf. */
static void add_line(char *buf, size_t cap, const char *tenant, const char *key)
{
    char hex[65];
    hash_hex(key, hex);
    size_t used = strlen(buf);
    snprintf(buf + used, cap - used, "%s %s\n", tenant, hex);
}

static int check(const kiln_auth *auth, const char *token, char *tenant)
{
    return kiln_auth_check(auth, token, strlen(token), tenant);
}

static void test_hash_key_vector(void **state)
{
    (void)state;
    char hex[65];
    hash_hex("abc", hex); /* FIPS 180-2 example */
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    kiln_auth_hash_key("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_keys_file_good(void **state)
{
    (void)state;
    char text[1024] = "# Kiln API keys\n\n   \n";
    add_line(text, sizeof text, "acme", "key-one");
    test_append(text, sizeof text, "  # indented comment\n");
    add_line(text, sizeof text, "beta.corp_2-x", "key-two");
    add_line(text, sizeof text, "acme", "key-three"); /* a tenant may have several keys */
    /* Uppercase hex and CRLF, as a hand-edited file may have. */
    char hex[65];
    hash_hex("key-four", hex);
    for (char *p = hex; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char)(*p - 'a' + 'A');
    size_t used = strlen(text);
    snprintf(text + used, sizeof text - used, "\tgamma\t%s  \r\n", hex);
    const char *path = write_file("keys.txt", text);

    kiln_auth *auth = NULL;
    kiln_error err;
    assert_int_equal(kiln_auth_load(&auth, path, NULL, &err), KILN_E_OK);
    assert_int_equal(kiln_auth_key_count(auth), 4);
    char tenant[KILN_AUTH_TENANT_MAX + 1];
    assert_int_equal(check(auth, "key-one", tenant), 0);
    assert_string_equal(tenant, "acme");
    assert_int_equal(check(auth, "key-two", tenant), 0);
    assert_string_equal(tenant, "beta.corp_2-x");
    assert_int_equal(check(auth, "key-three", tenant), 0);
    assert_string_equal(tenant, "acme");
    assert_int_equal(check(auth, "key-four", tenant), 0);
    assert_string_equal(tenant, "gamma");
    kiln_auth_free(auth);
}

/* Load a keys file that must fail; its message must start "PATH:LINE: "
 * and contain what. */
static void expect_bad_file(const char *text, int line, const char *what)
{
    const char *path = write_file("bad.txt", text);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
    kiln_auth *auth = (kiln_auth *)1;
    kiln_error err;
    assert_int_equal(kiln_auth_load(&auth, path, NULL, &err), KILN_E_USAGE);
    assert_null(auth);
    if (strncmp(err.message, prefix, strlen(prefix)) != 0 || !strstr(err.message, what))
        fail_msg("message \"%s\" wants prefix \"%s\" and \"%s\"", err.message, prefix, what);
}

static void test_keys_file_bad_tenant(void **state)
{
    (void)state;
    char text[1024] = "# keys\n";
    add_line(text, sizeof text, "acme", "k1");
    add_line(text, sizeof text, "ac/me", "k2");
    expect_bad_file(text, 3, "bad tenant name");

    char text2[1024] = "";
    char long_name[KILN_AUTH_TENANT_MAX + 2];
    memset(long_name, 'a', KILN_AUTH_TENANT_MAX + 1);
    long_name[KILN_AUTH_TENANT_MAX + 1] = '\0';
    add_line(text2, sizeof text2, long_name, "k1");
    expect_bad_file(text2, 1, "bad tenant name");

    /* Exactly the maximum is fine. */
    long_name[KILN_AUTH_TENANT_MAX] = '\0';
    char text3[1024] = "";
    add_line(text3, sizeof text3, long_name, "k1");
    kiln_auth *auth = NULL;
    kiln_error err;
    assert_int_equal(kiln_auth_load(&auth, write_file("ok.txt", text3), NULL, &err), KILN_E_OK);
    char tenant[KILN_AUTH_TENANT_MAX + 1];
    assert_int_equal(check(auth, "k1", tenant), 0);
    assert_string_equal(tenant, long_name);
    kiln_auth_free(auth);
}

static void test_keys_file_bad_hex(void **state)
{
    (void)state;
    char text[1024] = "\n";
    add_line(text, sizeof text, "acme", "k1");
    test_append(text, sizeof text,
                "beta e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8\n");
    expect_bad_file(text, 3, "bad key hash"); /* 62 digits */

    char text2[1024] = "";
    add_line(text2, sizeof text2, "acme", "k1");
    test_append(text2, sizeof text2,
                "beta g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n");
    expect_bad_file(text2, 2, "bad key hash");

    expect_bad_file("# only a tenant\nacme\n", 2, "missing key hash");
    char text3[1024] = "";
    add_line(text3, sizeof text3, "acme", "k1");
    text3[strlen(text3) - 1] = '\0';
    test_append(text3, sizeof text3, " extra\n");
    expect_bad_file(text3, 1, "unexpected text");
    /* The empty key's hash would let an empty bearer token in. */
    expect_bad_file("acme e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n", 1,
                    "empty key");
}

static void test_keys_file_duplicate(void **state)
{
    (void)state;
    char text[1024] = "";
    add_line(text, sizeof text, "acme", "k1");
    add_line(text, sizeof text, "beta", "k2");
    test_append(text, sizeof text, "# again\n");
    add_line(text, sizeof text, "gamma", "k1");
    expect_bad_file(text, 4, "duplicate key");
}

static void test_keys_file_missing(void **state)
{
    (void)state;
    kiln_auth *auth = NULL;
    kiln_error err;
    assert_int_equal(kiln_auth_load(&auth, path_in("nope.txt"), NULL, &err), KILN_E_INPUT);
    assert_null(auth);
    assert_non_null(strstr(err.message, "nope.txt"));
}

static void expect_bad_env(const char *env, const char *what)
{
    kiln_auth *auth = (kiln_auth *)1;
    kiln_error err;
    assert_int_equal(kiln_auth_load(&auth, NULL, env, &err), KILN_E_USAGE);
    assert_null(auth);
    if (strncmp(err.message, what, strlen(what)) != 0)
        fail_msg("message \"%s\" wants prefix \"%s\"", err.message, what);
}

static void test_env_keys(void **state)
{
    (void)state;
    kiln_auth *auth = NULL;
    kiln_error err;
    assert_int_equal(kiln_auth_load(&auth, NULL, "acme:s3cret,beta:other:with:colons", &err),
                     KILN_E_OK);
    assert_int_equal(kiln_auth_key_count(auth), 2);
    char tenant[KILN_AUTH_TENANT_MAX + 1];
    assert_int_equal(check(auth, "s3cret", tenant), 0);
    assert_string_equal(tenant, "acme");
    assert_int_equal(check(auth, "other:with:colons", tenant), 0);
    assert_string_equal(tenant, "beta");
    assert_int_equal(check(auth, "acme:s3cret", tenant), -1);
    kiln_auth_free(auth);

    /* An empty variable means no keys; neither argument means none too. */
    assert_int_equal(kiln_auth_load(&auth, NULL, "", &err), KILN_E_OK);
    assert_int_equal(kiln_auth_key_count(auth), 0);
    assert_int_equal(check(auth, "s3cret", tenant), -1);
    kiln_auth_free(auth);
    assert_int_equal(kiln_auth_load(&auth, NULL, NULL, &err), KILN_E_OK);
    assert_int_equal(kiln_auth_key_count(auth), 0);
    kiln_auth_free(auth);

    expect_bad_env(":k1", "KILN_API_KEYS: pair 1: empty tenant");
    expect_bad_env("a:k1,b:", "KILN_API_KEYS: pair 2: empty key");
    expect_bad_env("a:k1,,b:k2", "KILN_API_KEYS: pair 2: want TENANT:KEY");
    expect_bad_env("a:k1,b:k2,", "KILN_API_KEYS: pair 3: want TENANT:KEY");
    expect_bad_env("a:k1,b:k2,c d:k3", "KILN_API_KEYS: pair 3: bad tenant name");
    expect_bad_env("a:k1,b:k1", "KILN_API_KEYS: pair 2: duplicate key");
}

static void test_env_and_file_together(void **state)
{
    (void)state;
    char text[256] = "";
    add_line(text, sizeof text, "acme", "file-key");
    const char *path = write_file("keys.txt", text);
    kiln_auth *auth = NULL;
    kiln_error err;
    assert_int_equal(kiln_auth_load(&auth, path, "beta:env-key", &err), KILN_E_OK);
    assert_int_equal(kiln_auth_key_count(auth), 2);
    char tenant[KILN_AUTH_TENANT_MAX + 1];
    assert_int_equal(check(auth, "env-key", tenant), 0);
    assert_string_equal(tenant, "beta");
    kiln_auth_free(auth);
    /* The same key in both places is the same duplicate. */
    auth = (kiln_auth *)1;
    assert_int_equal(kiln_auth_load(&auth, path, "beta:file-key", &err), KILN_E_USAGE);
    assert_null(auth);
    assert_non_null(strstr(err.message, "pair 1: duplicate key"));
}

static void test_check(void **state)
{
    (void)state;
    kiln_auth *auth = NULL;
    kiln_error err;
    assert_int_equal(kiln_auth_load(&auth, NULL, "acme:right-key-123,beta:beta-key", &err),
                     KILN_E_OK);
    char tenant[KILN_AUTH_TENANT_MAX + 1];
    assert_int_equal(check(auth, "right-key-123", tenant), 0);
    assert_string_equal(tenant, "acme");
    assert_int_equal(check(auth, "beta-key", tenant), 0);
    assert_string_equal(tenant, "beta");
    assert_int_equal(check(auth, "wrong-key-123", tenant), -1);
    assert_int_equal(check(auth, "", tenant), -1);
    assert_int_equal(kiln_auth_check(auth, NULL, 0, tenant), -1);
    assert_int_equal(check(auth, "right-key-12", tenant), -1);   /* a prefix */
    assert_int_equal(check(auth, "right-key-1234", tenant), -1); /* longer */
    assert_int_equal(check(auth, "RIGHT-KEY-123", tenant), -1);
    /* The length given is what counts, not a NUL. */
    assert_int_equal(kiln_auth_check(auth, "right-key-123", 12, tenant), -1);
    assert_int_equal(kiln_auth_check(auth, "right-key-123XYZ", 13, tenant), 0);
    assert_string_equal(tenant, "acme");
    kiln_auth_free(auth);
}

static const unsigned char secret_a[KILN_AUTH_SECRET_BYTES] = {1,  2,  3,  4,  5,  6,  7,  8,
                                                               9,  10, 11, 12, 13, 14, 15, 16,
                                                               17, 18, 19, 20, 21, 22, 23, 24,
                                                               25, 26, 27, 28, 29, 30, 31, 32};

static void test_link_round_trip(void **state)
{
    (void)state;
    char sig[KILN_AUTH_SIG_HEX + 1];
    kiln_auth_sign_link(secret_a, "acme", "0123456789abcdef0123456789abcdef", 1700000000, sig);
    assert_int_equal(strlen(sig), KILN_AUTH_SIG_HEX);
    for (const char *p = sig; *p; p++)
        assert_non_null(strchr("0123456789abcdef", *p));
    int expired = -1;
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "0123456789abcdef0123456789abcdef",
                                           1700000000, sig, 1699999999, &expired),
                     0);
    assert_int_equal(expired, 0);
    /* Valid up to and including the expiry second. */
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "0123456789abcdef0123456789abcdef",
                                           1700000000, sig, 1700000000, &expired),
                     0);
    /* Signing is deterministic. */
    char again[KILN_AUTH_SIG_HEX + 1];
    kiln_auth_sign_link(secret_a, "acme", "0123456789abcdef0123456789abcdef", 1700000000, again);
    assert_string_equal(sig, again);
}

/* What sign_link signs, HMAC'd here in one piece with nettle: the link
 * code's message and key are the documented ones. */
static void test_link_message(void **state)
{
    (void)state;
    const char *msg = "v1\nacme\nfile-id\n-5";
    unsigned char mac[SHA256_DIGEST_SIZE];
    struct hmac_sha256_ctx ctx;
    hmac_sha256_set_key(&ctx, sizeof secret_a, secret_a);
    hmac_sha256_update(&ctx, strlen(msg), (const uint8_t *)msg);
    hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, mac);
    char want[65];
    for (size_t i = 0; i < sizeof mac; i++)
        snprintf(want + 2 * i, 3, "%02x", mac[i]);
    char sig[KILN_AUTH_SIG_HEX + 1];
    kiln_auth_sign_link(secret_a, "acme", "file-id", -5, sig);
    assert_string_equal(sig, want);
}

static void test_link_tampered(void **state)
{
    (void)state;
    const char *id = "0123456789abcdef0123456789abcdef";
    char sig[KILN_AUTH_SIG_HEX + 1];
    kiln_auth_sign_link(secret_a, "acme", id, 1700000000, sig);
    int expired = -1;
    const int64_t now = 1600000000;
    /* Each position changed in turn, first and last included. */
    for (size_t i = 0; i < KILN_AUTH_SIG_HEX; i++) {
        char bad[KILN_AUTH_SIG_HEX + 1];
        memcpy(bad, sig, sizeof bad);
        bad[i] = bad[i] == '0' ? '1' : '0';
        assert_int_equal(kiln_auth_verify_link(secret_a, "acme", id, 1700000000, bad, now,
                                               &expired),
                         -1);
        assert_int_equal(expired, 0);
    }
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "0123456789abcdef0123456789abcdee",
                                           1700000000, sig, now, &expired),
                     -1);
    assert_int_equal(kiln_auth_verify_link(secret_a, "acmf", id, 1700000000, sig, now, &expired),
                     -1);
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", id, 1700000001, sig, now, &expired),
                     -1);
    assert_int_equal(expired, 0);
    unsigned char other[KILN_AUTH_SECRET_BYTES];
    memcpy(other, secret_a, sizeof other);
    other[31] ^= 1;
    assert_int_equal(kiln_auth_verify_link(other, "acme", id, 1700000000, sig, now, &expired),
                     -1);
    /* Fields that would run into each other if a newline were allowed. */
    char sig2[KILN_AUTH_SIG_HEX + 1];
    kiln_auth_sign_link(secret_a, "a", "b\nc", 1700000000, sig2);
    assert_int_equal(kiln_auth_verify_link(secret_a, "a", "b\nc", 1700000000, sig2, now,
                                           &expired),
                     -1);
}

static void test_link_expired(void **state)
{
    (void)state;
    char sig[KILN_AUTH_SIG_HEX + 1];
    kiln_auth_sign_link(secret_a, "acme", "f1", 1700000000, sig);
    int expired = 0;
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "f1", 1700000000, sig, 1700000001,
                                           &expired),
                     -1);
    assert_int_equal(expired, 1);
    /* A bad signature on an expired link is not "expired". */
    sig[5] = sig[5] == 'a' ? 'b' : 'a';
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "f1", 1700000000, sig, 1700000001,
                                           &expired),
                     -1);
    assert_int_equal(expired, 0);
    /* expired may be NULL. */
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "f1", 1700000000, sig, 1700000001,
                                           NULL),
                     -1);
}

static void test_link_bad_hex(void **state)
{
    (void)state;
    char sig[KILN_AUTH_SIG_HEX + 1];
    kiln_auth_sign_link(secret_a, "acme", "f1", 1700000000, sig);
    int expired = -1;
    /* Make sure there is a letter to uppercase. */
    char upper[KILN_AUTH_SIG_HEX + 1];
    memcpy(upper, sig, sizeof upper);
    int changed = 0;
    for (char *p = upper; *p; p++)
        if (*p >= 'a' && *p <= 'f') {
            *p = (char)(*p - 'a' + 'A');
            changed = 1;
        }
    assert_true(changed);
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "f1", 1700000000, upper, 0,
                                           &expired),
                     -1);
    char shorter[KILN_AUTH_SIG_HEX + 1];
    memcpy(shorter, sig, sizeof shorter);
    shorter[KILN_AUTH_SIG_HEX - 1] = '\0';
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "f1", 1700000000, shorter, 0,
                                           &expired),
                     -1);
    char longer[KILN_AUTH_SIG_HEX + 2];
    snprintf(longer, sizeof longer, "%s0", sig);
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "f1", 1700000000, longer, 0,
                                           &expired),
                     -1);
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "f1", 1700000000, "", 0, &expired),
                     -1);
    /* A non-digit where the signature has a '0': a decoder that read it as
     * 0 and forgot it was bad would accept the link. */
    char junk[KILN_AUTH_SIG_HEX + 1];
    memcpy(junk, sig, sizeof junk);
    char *zero = strchr(junk, '0');
    assert_non_null(zero);
    for (const char *c = "g:/G@ \x7f"; *c; c++) {
        *zero = *c;
        assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "f1", 1700000000, junk, 0,
                                               &expired),
                         -1);
    }
    assert_int_equal(expired, 0);
    /* The original still verifies (nothing above changed state). */
    assert_int_equal(kiln_auth_verify_link(secret_a, "acme", "f1", 1700000000, sig, 0, &expired),
                     0);
}

/* RFC 4231 test case 2, through nettle called as auth.c calls it (set_key,
 * update in pieces, digest). */
static void test_hmac_rfc4231_case2(void **state)
{
    (void)state;
    struct hmac_sha256_ctx ctx;
    hmac_sha256_set_key(&ctx, 4, (const uint8_t *)"Jefe");
    hmac_sha256_update(&ctx, 9, (const uint8_t *)"what do y");
    hmac_sha256_update(&ctx, 0, (const uint8_t *)"");
    hmac_sha256_update(&ctx, 19, (const uint8_t *)"a want for nothing?");
    unsigned char mac[SHA256_DIGEST_SIZE];
    hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, mac);
    char hex[65];
    for (size_t i = 0; i < sizeof mac; i++)
        snprintf(hex + 2 * i, 3, "%02x", mac[i]);
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

/* Files in dir other than . and .. */
static int entries(const char *d)
{
    DIR *dh = opendir(d);
    assert_non_null(dh);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dh)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(dh);
    return n;
}

static void test_link_secret(void **state)
{
    (void)state;
    char sub[400];
    snprintf(sub, sizeof sub, "%s/store", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    unsigned char s1[KILN_AUTH_SECRET_BYTES], s2[KILN_AUTH_SECRET_BYTES];
    kiln_error err;
    mode_t old_mask = umask(0); /* the mode must not come from the umask */
    kiln_status st = kiln_auth_link_secret(sub, s1, &err);
    umask(old_mask);
    assert_int_equal(st, KILN_E_OK);
    char key[500];
    snprintf(key, sizeof key, "%s/link.key", sub);
    struct stat sb;
    assert_int_equal(stat(key, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0600);
    assert_int_equal(sb.st_size, KILN_AUTH_SECRET_BYTES);
    assert_int_equal(entries(sub), 1); /* no temporary file left */
    static const unsigned char zero[KILN_AUTH_SECRET_BYTES];
    assert_memory_not_equal(s1, zero, sizeof zero);

    assert_int_equal(kiln_auth_link_secret(sub, s2, &err), KILN_E_OK);
    assert_memory_equal(s1, s2, sizeof s1);
    /* The file holds the secret itself. */
    FILE *f = fopen(key, "rb");
    assert_non_null(f);
    unsigned char disk[KILN_AUTH_SECRET_BYTES];
    assert_int_equal(fread(disk, 1, sizeof disk, f), sizeof disk);
    fclose(f);
    assert_memory_equal(s1, disk, sizeof s1);

    /* Another directory gets another secret. */
    char sub2[400];
    snprintf(sub2, sizeof sub2, "%s/store2", dir);
    assert_int_equal(mkdir(sub2, 0700), 0);
    assert_int_equal(kiln_auth_link_secret(sub2, s2, &err), KILN_E_OK);
    assert_memory_not_equal(s1, s2, sizeof s1);

    assert_int_equal(chmod(key, 0644), 0);
    assert_int_equal(kiln_auth_link_secret(sub, s2, &err), KILN_E_INPUT);
    assert_non_null(strstr(err.message, "0644"));
    assert_int_equal(chmod(key, 0640), 0);
    assert_int_equal(kiln_auth_link_secret(sub, s2, &err), KILN_E_INPUT);
    assert_int_equal(chmod(key, 0600), 0);
    assert_int_equal(kiln_auth_link_secret(sub, s2, &err), KILN_E_OK);
    assert_memory_equal(s1, s2, sizeof s1);

    assert_int_equal(truncate(key, 31), 0);
    assert_int_equal(kiln_auth_link_secret(sub, s2, &err), KILN_E_INPUT);
    assert_non_null(strstr(err.message, "32 bytes"));
    assert_int_equal(truncate(key, 33), 0);
    assert_int_equal(kiln_auth_link_secret(sub, s2, &err), KILN_E_INPUT);

    /* A directory that does not exist is an error, not a crash. */
    char missing[400];
    snprintf(missing, sizeof missing, "%s/none", dir);
    assert_int_not_equal(kiln_auth_link_secret(missing, s2, &err), KILN_E_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_key_vector),
        cmocka_unit_test_setup_teardown(test_keys_file_good, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keys_file_bad_tenant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keys_file_bad_hex, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keys_file_duplicate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keys_file_missing, setup, teardown),
        cmocka_unit_test(test_env_keys),
        cmocka_unit_test_setup_teardown(test_env_and_file_together, setup, teardown),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_link_round_trip),
        cmocka_unit_test(test_link_message),
        cmocka_unit_test(test_link_tampered),
        cmocka_unit_test(test_link_expired),
        cmocka_unit_test(test_link_bad_hex),
        cmocka_unit_test(test_hmac_rfc4231_case2),
        cmocka_unit_test_setup_teardown(test_link_secret, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
