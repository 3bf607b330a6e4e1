/*
 * auth.c - API keys and signed download links (auth.h is the contract).
 *
 * Everything secret is compared as bytes with nettle's memeql_sec, which
 * reads every byte whatever it finds, so the time a comparison takes does
 * not depend on where the first difference is. Hex given by a client is
 * decoded without branching on its digits, and a token is compared with
 * every known hash, never stopping at the first match, so neither how much
 * of a signature is right nor where a key sits in the list shows in the
 * time a request takes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>

#include "service/auth.h"
#include "../common/fdio.h"
#include "../common/banned.h"

#define HASH_BYTES SHA256_DIGEST_SIZE
/* A keys-file line is a tenant, a space and 64 digits: anything far longer
 * is not a keys file, and reading it whole would only cost memory. */
#define LINE_MAX_BYTES 1024

typedef struct auth_key {
    char tenant[KILN_AUTH_TENANT_MAX + 1];
    unsigned char hash[HASH_BYTES];
} auth_key;

struct kiln_auth {
    auth_key *keys;
    size_t count;
    size_t cap;
};

static const char hex_digits[] = "0123456789abcdef";

static void to_hex(const unsigned char *bytes, size_t n, char *hex)
{
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = hex_digits[bytes[i] >> 4];
        hex[2 * i + 1] = hex_digits[bytes[i] & 0xf];
    }
    hex[2 * n] = '\0';
}

/* One hex digit's value, and *bad |= 1 if c is not one, without a branch
 * on c: the digits may be a client's guess at a signature. Uppercase is
 * accepted only when allow_upper (keys files, written by people); a
 * signature has one spelling, lowercase, as kiln_auth_sign_link makes it. */
static unsigned hex_value(unsigned char c, int allow_upper, unsigned *bad)
{
    unsigned digit = (unsigned)c - '0';
    unsigned lower = (unsigned)c - 'a';
    unsigned upper = (unsigned)c - 'A';
    unsigned is_digit = digit < 10;
    unsigned is_lower = lower < 6;
    unsigned is_upper = (upper < 6) & (unsigned)(allow_upper != 0);
    *bad |= 1u ^ (is_digit | is_lower | is_upper);
    return (digit & -is_digit) | ((lower + 10) & -is_lower) | ((upper + 10) & -is_upper);
}

/* Exactly 2 * n hex digits into bytes: 0, or -1 after looking at all of
 * them (the length is not secret, so a wrong one returns at once). */
static int from_hex(const char *hex, size_t hex_len, unsigned char *bytes, size_t n,
                    int allow_upper)
{
    if (hex_len != 2 * n)
        return -1;
    unsigned bad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned hi = hex_value((unsigned char)hex[2 * i], allow_upper, &bad);
        unsigned lo = hex_value((unsigned char)hex[2 * i + 1], allow_upper, &bad);
        bytes[i] = (unsigned char)((hi << 4) | lo);
    }
    return bad ? -1 : 0;
}

static void sha256(const void *data, size_t len, unsigned char out[HASH_BYTES])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, len, data);
    sha256_digest(&ctx, HASH_BYTES, out);
    explicit_bzero(&ctx, sizeof ctx); /* it held the key being hashed */
}

static int tenant_ok(const char *s, size_t len)
{
    if (len == 0 || len > KILN_AUTH_TENANT_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* Add a key; where says which line or pair it came from, for the errors.
 * Two tenants sharing a key would make the key's owner ambiguous, and one
 * tenant listing it twice is a mistake, so a repeated hash is refused. */
static kiln_status add_key(kiln_auth *auth, const char *tenant, size_t tenant_len,
                           const unsigned char hash[HASH_BYTES], const char *where,
                           kiln_error *err)
{
    static const unsigned char empty_hash[HASH_BYTES] = {0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c,
                                                         0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f,
                                                         0xb9, 0x24, 0x27, 0xae, 0x41, 0xe4, 0x64,
                                                         0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b,
                                                         0x78, 0x52, 0xb8, 0x55};
    if (memcmp(hash, empty_hash, HASH_BYTES) == 0)
        return kiln_error_set(err, KILN_E_USAGE, NULL,
                              "%s: that is the hash of an empty key, which is never accepted",
                              where);
    for (size_t i = 0; i < auth->count; i++)
        if (memcmp(auth->keys[i].hash, hash, HASH_BYTES) == 0)
            return kiln_error_set(err, KILN_E_USAGE, NULL,
                                  "%s: duplicate key (already given for tenant \"%s\")", where,
                                  auth->keys[i].tenant);
    if (auth->count == auth->cap) {
        size_t cap = auth->cap ? 2 * auth->cap : 8;
        auth_key *keys = realloc(auth->keys, cap * sizeof *keys);
        if (!keys)
            return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory loading API keys");
        auth->keys = keys;
        auth->cap = cap;
    }
    auth_key *k = &auth->keys[auth->count++];
    memcpy(k->tenant, tenant, tenant_len);
    k->tenant[tenant_len] = '\0';
    memcpy(k->hash, hash, HASH_BYTES);
    return KILN_E_OK;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* One line of the keys file (without its newline). */
static kiln_status parse_line(kiln_auth *auth, char *line, const char *where, kiln_error *err)
{
    char *p = line;
    while (is_blank(*p))
        p++;
    if (*p == '\0' || *p == '#')
        return KILN_E_OK;
    char *tenant = p;
    while (*p && !is_blank(*p))
        p++;
    size_t tenant_len = (size_t)(p - tenant);
    while (is_blank(*p))
        p++;
    char *hex = p;
    while (*p && !is_blank(*p))
        p++;
    size_t hex_len = (size_t)(p - hex);
    while (is_blank(*p))
        p++;
    if (!tenant_ok(tenant, tenant_len))
        return kiln_error_set(err, KILN_E_USAGE, NULL,
                              "%s: bad tenant name \"%.*s\" (1 to %d of A-Z a-z 0-9 . _ -)",
                              where, (int)(tenant_len > 80 ? 80 : tenant_len), tenant,
                              KILN_AUTH_TENANT_MAX);
    if (hex_len == 0)
        return kiln_error_set(err, KILN_E_USAGE, NULL,
                              "%s: missing key hash after the tenant (want \"TENANT SHA256HEX\")",
                              where);
    if (*p != '\0')
        return kiln_error_set(
            err, KILN_E_USAGE, NULL,
            "%s: unexpected text after the key hash (want \"TENANT SHA256HEX\")", where);
    unsigned char hash[HASH_BYTES];
    if (from_hex(hex, hex_len, hash, HASH_BYTES, 1) != 0)
        return kiln_error_set(err, KILN_E_USAGE, NULL,
                              "%s: bad key hash (want 64 hex digits, the SHA-256 of the key; "
                              "kiln serve --hash-key prints it)",
                              where);
    return add_key(auth, tenant, tenant_len, hash, where, err);
}

static kiln_status load_file(kiln_auth *auth, const char *path, kiln_error *err)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return kiln_error_set(err, KILN_E_INPUT, NULL, "cannot read keys file %s: %s", path,
                              strerror(errno));
    kiln_status st = KILN_E_OK;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    unsigned long lineno = 0;
    char where[300];
    errno = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        snprintf(where, sizeof where, "%.280s:%lu", path, lineno);
        if (len > LINE_MAX_BYTES) {
            st = kiln_error_set(err, KILN_E_USAGE, NULL, "%s: line longer than %d bytes", where,
                                LINE_MAX_BYTES);
            goto out_close;
        }
        if ((size_t)len != strlen(line)) {
            st = kiln_error_set(err, KILN_E_USAGE, NULL, "%s: NUL byte in the line", where);
            goto out_close;
        }
        st = parse_line(auth, line, where, err);
        if (st != KILN_E_OK)
            goto out_close;
    }
    if (ferror(f))
        st = kiln_error_set(err, KILN_E_INPUT, NULL, "cannot read keys file %s: %s", path,
                            strerror(errno ? errno : EIO));

out_close:
    /* The file holds only hashes, but a line may be a pasted key by mistake. */
    if (line)
        explicit_bzero(line, cap);
    free(line);
    fclose(f);
    return st;
}

/* "TENANT:KEY,TENANT:KEY": the key is everything after the first colon up
 * to the next comma. Errors name the pair by position, never the key. An
 * empty string means no keys (a variable set but left empty). */
static kiln_status load_env(kiln_auth *auth, const char *env, kiln_error *err)
{
    if (*env == '\0')
        return KILN_E_OK;
    const char *p = env;
    for (unsigned long pos = 1;; pos++) {
        const char *end = strchr(p, ',');
        size_t pair_len = end ? (size_t)(end - p) : strlen(p);
        char where[64];
        snprintf(where, sizeof where, "KILN_API_KEYS: pair %lu", pos);
        const char *colon = memchr(p, ':', pair_len);
        if (!colon)
            return kiln_error_set(err, KILN_E_USAGE, NULL, "%s: want TENANT:KEY", where);
        size_t tenant_len = (size_t)(colon - p);
        size_t key_len = pair_len - tenant_len - 1;
        if (tenant_len == 0)
            return kiln_error_set(err, KILN_E_USAGE, NULL, "%s: empty tenant", where);
        if (key_len == 0)
            return kiln_error_set(err, KILN_E_USAGE, NULL, "%s: empty key", where);
        if (!tenant_ok(p, tenant_len))
            return kiln_error_set(err, KILN_E_USAGE, NULL,
                                  "%s: bad tenant name \"%.*s\" (1 to %d of A-Z a-z 0-9 . _ -)",
                                  where, (int)(tenant_len > 80 ? 80 : tenant_len), p,
                                  KILN_AUTH_TENANT_MAX);
        unsigned char hash[HASH_BYTES];
        sha256(colon + 1, key_len, hash);
        kiln_status st = add_key(auth, p, tenant_len, hash, where, err);
        explicit_bzero(hash, sizeof hash);
        if (st != KILN_E_OK)
            return st;
        if (!end)
            return KILN_E_OK;
        p = end + 1;
    }
}

kiln_status kiln_auth_load(kiln_auth **auth, const char *keys_file, const char *env_keys,
                           kiln_error *err)
{
    *auth = NULL;
    kiln_auth *a = calloc(1, sizeof *a);
    if (!a)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory loading API keys");
    kiln_status st = KILN_E_OK;
    if (keys_file) {
        st = load_file(a, keys_file, err);
        if (st != KILN_E_OK)
            goto fail_free;
    }
    if (env_keys) {
        st = load_env(a, env_keys, err);
        if (st != KILN_E_OK)
            goto fail_free;
    }
    *auth = a;
    return KILN_E_OK;

fail_free:
    kiln_auth_free(a);
    return st;
}

void kiln_auth_free(kiln_auth *auth)
{
    if (!auth)
        return;
    if (auth->keys)
        explicit_bzero(auth->keys, auth->cap * sizeof *auth->keys);
    free(auth->keys);
    free(auth);
}

size_t kiln_auth_key_count(const kiln_auth *auth)
{
    return auth ? auth->count : 0;
}

int kiln_auth_check(const kiln_auth *auth, const char *token, size_t token_len, char *tenant)
{
    /* An empty token is refused before hashing: that it is empty is no
     * secret, and no key is empty (add_key refuses the empty key's hash). */
    if (!auth || !token || token_len == 0)
        return -1;
    unsigned char hash[HASH_BYTES];
    sha256(token, token_len, hash);
    /* Compare with every key and pick the match with masks, not a branch:
     * hashes are unique, so at most one comparison succeeds. */
    size_t match = 0;
    unsigned found = 0;
    for (size_t i = 0; i < auth->count; i++) {
        unsigned eq = (unsigned)memeql_sec(auth->keys[i].hash, hash, HASH_BYTES) & 1u;
        match |= i & ((size_t)0 - (size_t)eq);
        found |= eq;
    }
    explicit_bzero(hash, sizeof hash);
    if (!found)
        return -1;
    memcpy(tenant, auth->keys[match].tenant, KILN_AUTH_TENANT_MAX + 1);
    return 0;
}

/* Exactly n bytes from fd. 0 / -1 (errno set; 0 for a short file). */
static int read_full(int fd, unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = 0;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

/* Read an existing secret. 1 when there is none (ENOENT), 0 when read. */
static int read_secret(const char *path, unsigned char secret[KILN_AUTH_SECRET_BYTES],
                       kiln_status *st, kiln_error *err)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        *st = kiln_error_set(err, KILN_E_INPUT, NULL, "cannot read the link secret %s: %s", path,
                             strerror(errno));
        return 0;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        *st = kiln_error_set(err, KILN_E_INPUT, NULL, "cannot read the link secret %s: %s", path,
                             strerror(errno));
        goto out_close;
    }
    /* A secret others can read lets them sign links for any file: refuse
     * to use it rather than silently trusting it. */
    if (!S_ISREG(sb.st_mode) || (sb.st_mode & 077) != 0) {
        *st = kiln_error_set(err, KILN_E_INPUT, NULL,
                             "link secret %s must be a regular file readable only by its owner "
                             "(mode 0600; it is %04o)",
                             path, (unsigned)(sb.st_mode & 07777));
        goto out_close;
    }
    if (sb.st_size != KILN_AUTH_SECRET_BYTES) {
        *st = kiln_error_set(err, KILN_E_INPUT, NULL,
                             "link secret %s must be %d bytes (it is %lld); remove it to make "
                             "a new one (existing links then stop working)",
                             path, KILN_AUTH_SECRET_BYTES, (long long)sb.st_size);
        goto out_close;
    }
    if (read_full(fd, secret, KILN_AUTH_SECRET_BYTES) != 0) {
        *st = kiln_error_set(err, KILN_E_INPUT, NULL, "cannot read the link secret %s: %s", path,
                             errno ? strerror(errno) : "file shrank while read");
        goto out_close;
    }
    *st = KILN_E_OK;

out_close:
    close(fd);
    return 0;
}

/* Make a new secret at path: a temporary file, fsynced, renamed into place
 * without replacing (RENAME_NOREPLACE) so that two servers starting at once
 * on one directory end up sharing the first secret rather than each
 * believing in its own. 0 made, 1 someone else's appeared first. */
static int make_secret(const char *dir, const char *path, kiln_status *st, kiln_error *err)
{
    char temp[PATH_MAX];
    if (snprintf(temp, sizeof temp, "%s/.link.key.XXXXXX", dir) >= (int)sizeof temp) {
        *st = kiln_error_set(err, KILN_E_USAGE, NULL, "store directory name too long: %s", dir);
        return 0;
    }
    unsigned char fresh[KILN_AUTH_SECRET_BYTES];
    size_t got = 0;
    while (got < sizeof fresh) {
        ssize_t r = getrandom(fresh + got, sizeof fresh - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            *st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "getrandom failed: %s",
                                 strerror(errno));
            return 0;
        }
        got += (size_t)r;
    }
    int made = 0;
    int fd = mkostemp(temp, O_CLOEXEC);
    if (fd < 0) {
        *st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create the link secret in %s: %s",
                             dir, strerror(errno));
        goto out_wipe;
    }
    /* mkostemp makes 0600 already; fchmod says so whatever the libc. */
    if (fchmod(fd, 0600) != 0 || kiln_write_all(fd, fresh, sizeof fresh) != 0 || fsync(fd) != 0) {
        *st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot write the link secret %s: %s", temp,
                             strerror(errno));
        goto out_unlink;
    }
    if (renameat2(AT_FDCWD, temp, AT_FDCWD, path, RENAME_NOREPLACE) != 0) {
        if (errno == EEXIST) {
            made = 1;
            goto out_unlink;
        }
        /* A file system without RENAME_NOREPLACE: link() also never replaces. */
        if (errno != EINVAL || link(temp, path) != 0) {
            if (errno == EEXIST) {
                made = 1;
                goto out_unlink;
            }
            *st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create the link secret %s: %s",
                                 path, strerror(errno));
            goto out_unlink;
        }
        unlink(temp);
    }
    /* The new name must be durable too, or a crash could forget the secret
     * after links signed with it were handed out. */
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0 || fsync(dir_fd) != 0) {
        *st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot sync the store directory %s: %s",
                             dir, strerror(errno));
        if (dir_fd >= 0)
            close(dir_fd);
        goto out_close;
    }
    close(dir_fd);
    *st = KILN_E_OK;
    goto out_close;

out_unlink:
    unlink(temp);
out_close:
    close(fd);
out_wipe:
    explicit_bzero(fresh, sizeof fresh);
    return made;
}

kiln_status kiln_auth_link_secret(const char *dir, unsigned char secret[KILN_AUTH_SECRET_BYTES],
                                  kiln_error *err)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/link.key", dir) >= (int)sizeof path)
        return kiln_error_set(err, KILN_E_USAGE, NULL, "store directory name too long: %s", dir);
    kiln_status st = KILN_E_INTERNAL;
    /* Read; if absent make one (or lose a race to another maker); read
     * again, so the secret returned is always the one on disk. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (read_secret(path, secret, &st, err) == 0)
            return st;
        if (attempt == 0) {
            st = KILN_E_OK;
            make_secret(dir, path, &st, err);
            if (st != KILN_E_OK)
                return st;
        }
    }
    return kiln_error_set(err, KILN_E_INTERNAL, NULL, "link secret %s vanished as it was made",
                          path);
}

/* The MAC of "v1\n" TENANT "\n" ID "\n" EXPIRES. The fields cannot run into
 * each other: tenants are [A-Za-z0-9._-] and verify refuses a newline in
 * either. */
static void link_mac(const unsigned char secret[KILN_AUTH_SECRET_BYTES], const char *tenant,
                     const char *id, int64_t expires, unsigned char mac[SHA256_DIGEST_SIZE])
{
    char when[32];
    int when_len = snprintf(when, sizeof when, "%" PRId64, expires);
    struct hmac_sha256_ctx ctx;
    hmac_sha256_set_key(&ctx, KILN_AUTH_SECRET_BYTES, secret);
    hmac_sha256_update(&ctx, 3, (const uint8_t *)"v1\n");
    hmac_sha256_update(&ctx, strlen(tenant), (const uint8_t *)tenant);
    hmac_sha256_update(&ctx, 1, (const uint8_t *)"\n");
    hmac_sha256_update(&ctx, strlen(id), (const uint8_t *)id);
    hmac_sha256_update(&ctx, 1, (const uint8_t *)"\n");
    hmac_sha256_update(&ctx, (size_t)when_len, (const uint8_t *)when);
    hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, mac);
    explicit_bzero(&ctx, sizeof ctx); /* the key schedule is the secret */
}

void kiln_auth_sign_link(const unsigned char secret[KILN_AUTH_SECRET_BYTES], const char *tenant,
                         const char *id, int64_t expires, char *sig_hex)
{
    unsigned char mac[SHA256_DIGEST_SIZE];
    link_mac(secret, tenant, id, expires, mac);
    to_hex(mac, sizeof mac, sig_hex);
    explicit_bzero(mac, sizeof mac);
}

int kiln_auth_verify_link(const unsigned char secret[KILN_AUTH_SECRET_BYTES], const char *tenant,
                          const char *id, int64_t expires, const char *sig_hex, int64_t now,
                          int *expired)
{
    if (expired)
        *expired = 0;
    if (!tenant || !id || !sig_hex || strchr(tenant, '\n') || strchr(id, '\n'))
        return -1;
    unsigned char want[SHA256_DIGEST_SIZE], given[SHA256_DIGEST_SIZE];
    /* Decode first, whatever it holds, then compare: a bad digit fails the
     * check after the same work as a wrong one. */
    size_t sig_len = strlen(sig_hex);
    if (sig_len != KILN_AUTH_SIG_HEX)
        return -1; /* the length is public: nothing to hide */
    int bad = from_hex(sig_hex, sig_len, given, sizeof given, 0);
    link_mac(secret, tenant, id, expires, want);
    int same = memeql_sec(want, given, sizeof want);
    explicit_bzero(want, sizeof want);
    if (!same || bad)
        return -1;
    if (expires < now) {
        if (expired)
            *expired = 1;
        return -1;
    }
    return 0;
}

void kiln_auth_hash_key(const char *key, size_t len, char *hex)
{
    unsigned char hash[HASH_BYTES];
    sha256(key, len, hash);
    to_hex(hash, sizeof hash, hex);
}
