/*
 * auth.h - who is calling the service, and signed download links.
 *
 * API keys are bearer tokens. The server never keeps a key itself, only its
 * SHA-256: the keys file holds lines "TENANT SHA256HEX" (comments with #),
 * and KILN_API_KEYS holds "TENANT:KEY" pairs separated by commas (hashed
 * as they are read, for a quick start). A request's token is hashed and
 * compared with every known hash in constant time, so the time a failed
 * check takes says nothing about how close the token was.
 *
 * A signed link lets anyone holding it download one file until it expires,
 * without a key: the signature is HMAC-SHA256 (nettle) over
 * "v1\n" TENANT "\n" ID "\n" EXPIRES, keyed with the server's link secret
 * (32 random bytes made once and kept in the store directory, mode 0600),
 * carried as lowercase hex, and checked in constant time. Changing the id,
 * the tenant or the expiry invalidates it.
 */
#ifndef KILN_SERVICE_AUTH_H
#define KILN_SERVICE_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define KILN_AUTH_TENANT_MAX 64
#define KILN_AUTH_SIG_HEX 64
#define KILN_AUTH_SECRET_BYTES 32

typedef struct kiln_auth kiln_auth;

/* keys_file and env_keys may each be NULL. A malformed line is an error
 * naming the file and line; a tenant name is 1..64 of [A-Za-z0-9._-].
 * *auth is new: kiln_auth_free it. */
kiln_status kiln_auth_load(kiln_auth **auth, const char *keys_file, const char *env_keys,
                           kiln_error *err);
void kiln_auth_free(kiln_auth *auth);
/* Number of keys known (a server with none refuses to start). */
size_t kiln_auth_key_count(const kiln_auth *auth);

/* The tenant of a bearer token, copied into tenant (at least
 * KILN_AUTH_TENANT_MAX + 1 bytes): 0, or -1 when no key matches. */
int kiln_auth_check(const kiln_auth *auth, const char *token, size_t token_len, char *tenant);

/* The link secret in dir/link.key: read, or made (getrandom, written
 * atomically with mode 0600) when absent. */
kiln_status kiln_auth_link_secret(const char *dir, unsigned char secret[KILN_AUTH_SECRET_BYTES],
                                  kiln_error *err);

/* sig_hex (KILN_AUTH_SIG_HEX + 1 bytes) = the link signature. */
void kiln_auth_sign_link(const unsigned char secret[KILN_AUTH_SECRET_BYTES], const char *tenant,
                         const char *id, int64_t expires, char *sig_hex);
/* 0 when sig_hex is the right signature (constant-time) and expires >= now;
 * -1 otherwise (*expired set when only the time is wrong). */
int kiln_auth_verify_link(const unsigned char secret[KILN_AUTH_SECRET_BYTES], const char *tenant,
                          const char *id, int64_t expires, const char *sig_hex, int64_t now,
                          int *expired);

/* Hash a key as the keys file wants it: hex (65 bytes), for `kiln serve
 * --hash-key` to print. */
void kiln_auth_hash_key(const char *key, size_t len, char *hex);

#endif
