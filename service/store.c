/*
 * store.c - see store.h for what the store promises.
 *
 * Layout of DIR:
 *   kiln.db      the metadata (SQLite, WAL mode), one row per file;
 *   kiln.lock    held with flock() while a process has the store open;
 *   content/ID   one body per file, named by its id, mode 0600.
 *
 * The order of every change is what keeps "never a row without a body":
 *   upload: body written to an unnamed O_TMPFILE (or ".tmp-RANDOM") in
 *           content/, fsynced, linked as content/ID, content/ fsynced, and
 *           only then the row inserted and committed;
 *   delete: row deleted and committed, then the body unlinked;
 *   sweep:  rows marked expired and committed, then the bodies unlinked.
 * Whatever a crash interrupts leaves at worst a body with no live row or a
 * named temporary, and kiln_store_open's orphan pass removes both. That pass
 * would also remove the body of an upload another process is committing at
 * that moment, so one process at a time holds a store: kiln.lock is taken
 * with flock(LOCK_EX | LOCK_NB) and a second opener is refused.
 *
 * Connections: two SQLite connections, one for writes and one for reads,
 * each behind its own mutex. A single writer is all SQLite allows anyway,
 * and serializing writers in-process avoids SQLITE_BUSY between them; the
 * separate reader means a download's lookup never waits for a commit's
 * fsync (WAL lets a reader run beside the writer). A connection per thread
 * would let reads run in parallel too, but the server's pool threads are not
 * ours to hook, and a lookup by primary key takes microseconds. busy_timeout
 * covers any other process (sqlite3 on the command line) touching the
 * database.
 *
 * Uploads: kiln_store_commit frees the upload whatever it returns, as
 * kiln_store_abort does; after a failed kiln_store_write (TOO_LARGE or an
 * I/O error) the temporary file is already gone and the only thing left to
 * do with the upload is kiln_store_abort (kiln_store_commit refuses it).
 */
#include "service/store.h"
#include "service/store_testing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <nettle/sha2.h>
#include <sqlite3.h>

#include "common/dirs.h"
#include "common/output.h"
#include "common/utf8.h"
#include "../common/banned.h"

#define GRACE_SECONDS (7 * 24 * 3600) /* an expired row answers 410 this long */
#define TEMP_PREFIX ".tmp-"
#define BUSY_TIMEOUT_MS 5000
/* Read connections: the server's HTTP threads look a row up on every
 * download, and one connection behind one mutex made them queue (a fifth of
 * a small download's CPU was the lookup; wrk, bench/README.md). */
#define READERS 4
/* Uploads arrive in whatever pieces the HTTP library hands over (often
 * 16-64 KiB, not page-aligned); written as they come, such a file sits in
 * the page cache in small folios and costs sendfile a quarter more CPU to
 * send (measured). Gathered into 256 KiB writes, it is cached like a file
 * written in one go. (256 KiB, so a thousand uploads at once hold 256 MiB.) */
#define UPLOAD_BUFFER (256u << 10)

/* One read connection, its lock, and its lookup statement prepared once. */
struct store_reader {
    pthread_mutex_t lock;
    sqlite3 *db;
    sqlite3_stmt *lookup;
};

struct kiln_store {
    sqlite3 *wdb;                         /* writes: insert, delete, sweep */
    struct store_reader readers[READERS]; /* reads: get, open_body, list, bytes */
    unsigned next_reader;                 /* where the next read starts looking */
    int readers_ready;                    /* how many readers[] have their lock */
    pthread_mutex_t wlock;
    int content_fd; /* DIR/content, O_DIRECTORY */
    int lock_fd;    /* DIR/kiln.lock, flocked */
    int64_t ttl;
    uint64_t max_bytes;
    int64_t (*now)(void *arg);
    void *now_arg;
    int force_named_temp;
    kiln_store_recovery recovery;
};

struct kiln_store_upload {
    kiln_store *store;
    char tenant[KILN_STORE_TENANT_MAX + 1];
    char filename[KILN_STORE_FILENAME_MAX + 1];
    char media_type[128];
    kiln_store_source source;
    int fd;                /* the temporary body, -1 once dropped */
    unsigned char *buffer; /* UPLOAD_BUFFER bytes not yet written */
    size_t buffered;
    uint64_t written;                                       /* bytes already in the file */
    char temp_name[sizeof TEMP_PREFIX + KILN_STORE_ID_LEN]; /* "" for O_TMPFILE */
    uint64_t bytes;
    struct sha256_ctx sha;
    int failed; /* a write failed: only abort is left */
};

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS files ("
    "  id TEXT NOT NULL UNIQUE,"
    "  tenant TEXT NOT NULL,"
    "  filename TEXT NOT NULL,"
    "  media_type TEXT NOT NULL,"
    "  sha256 TEXT NOT NULL,"
    "  bytes INTEGER NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  expires_at INTEGER NOT NULL,"
    "  expired INTEGER NOT NULL DEFAULT 0,"
    "  source TEXT);"
    "CREATE INDEX IF NOT EXISTS files_tenant ON files (tenant, created_at);"
    "CREATE INDEX IF NOT EXISTS files_expiry ON files (expired, expires_at);"
    /* A session of the service (sessions.c): its object as JSON, kept so
     * that after a restart it answers 410 with why, not 404. */
    "CREATE TABLE IF NOT EXISTS sessions ("
    "  id TEXT NOT NULL UNIQUE,"
    "  tenant TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  ended INTEGER NOT NULL DEFAULT 0,"
    "  object TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS sessions_tenant ON sessions (tenant, created_at);"
    /* A batch (batches.c): its object as JSON, its status for the manager's
     * start-up, and the `kiln batch` child last started for it, so a server
     * started after a crash can end that child before starting another on
     * the same journal. */
    "CREATE TABLE IF NOT EXISTS batches ("
    "  id TEXT NOT NULL UNIQUE,"
    "  tenant TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  status TEXT NOT NULL,"
    "  child_pid INTEGER NOT NULL DEFAULT 0,"
    "  child_start INTEGER NOT NULL DEFAULT 0,"
    "  object TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS batches_tenant ON batches (tenant, created_at);"
    /* One finished job of a batch: its journal line with the stored files'
     * ids. seq keeps the order the journal had. */
    "CREATE TABLE IF NOT EXISTS batch_results ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  batch_id TEXT NOT NULL,"
    "  job_id TEXT NOT NULL,"
    "  line TEXT NOT NULL,"
    "  UNIQUE (batch_id, job_id));";
/* user_version 1 had no source column; 2 adds it (NULL in the rows of 1:
 * nobody knows any more how those came to be); 3 adds the batches tables
 * (made by SCHEMA's CREATE IF NOT EXISTS). */
#define SCHEMA_VERSION 3

/* The columns every lookup reads, in the order row_to_file expects. */
#define FILE_COLUMNS \
    "id, tenant, filename, media_type, sha256, bytes, created_at, expires_at, expired, source"

static const char *const source_names[] = {
    [KILN_STORE_SOURCE_INPUT] = "input",
    [KILN_STORE_SOURCE_OUTPUT] = "output",
    [KILN_STORE_SOURCE_DOCUMENT] = "document",
};

const char *kiln_store_source_name(kiln_store_source source)
{
    if ((unsigned)source >= sizeof source_names / sizeof source_names[0])
        return NULL;
    return source_names[source];
}

static kiln_store_source source_of(const unsigned char *name)
{
    for (size_t i = 0; name && i < sizeof source_names / sizeof source_names[0]; i++)
        if (source_names[i] && strcmp((const char *)name, source_names[i]) == 0)
            return (kiln_store_source)i;
    return KILN_STORE_SOURCE_UNKNOWN;
}

static int64_t system_clock(void *arg)
{
    (void)arg;
    return (int64_t)time(NULL);
}

static int64_t store_now(const kiln_store *store)
{
    return store->now(store->now_arg);
}

/* ---- validation ---------------------------------------------------------- */

/* Exactly 32 lowercase hex digits: checked before an id goes near a query
 * or the file system, so "../x" can never name a path. */
static int valid_id(const char *id)
{
    if (!id)
        return 0;
    for (int i = 0; i < KILN_STORE_ID_LEN; i++) {
        char c = id[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
    }
    return id[KILN_STORE_ID_LEN] == '\0';
}

static int valid_tenant(const char *tenant)
{
    return tenant && *tenant && strlen(tenant) <= KILN_STORE_TENANT_MAX;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static int random_hex(char out[KILN_STORE_ID_LEN + 1])
{
    unsigned char raw[KILN_STORE_ID_LEN / 2];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[KILN_STORE_ID_LEN] = '\0';
    return 0;
}

/* ---- database helpers ---------------------------------------------------- */

static kiln_store_result db_fail(sqlite3 *db, kiln_error *err, const char *what)
{
    kiln_error_set(err, KILN_E_INTERNAL, NULL, "store database: %s: %s", what,
                   sqlite3_errmsg(db));
    return KILN_STORE_ERROR;
}

static void copy_text(char *dst, size_t cap, const unsigned char *src)
{
    snprintf(dst, cap, "%s", src ? (const char *)src : "");
}

static void row_to_file(sqlite3_stmt *st, kiln_store_file *file)
{
    memset(file, 0, sizeof *file);
    copy_text(file->id, sizeof file->id, sqlite3_column_text(st, 0));
    copy_text(file->tenant, sizeof file->tenant, sqlite3_column_text(st, 1));
    copy_text(file->filename, sizeof file->filename, sqlite3_column_text(st, 2));
    copy_text(file->media_type, sizeof file->media_type, sqlite3_column_text(st, 3));
    copy_text(file->sha256, sizeof file->sha256, sqlite3_column_text(st, 4));
    file->bytes = (uint64_t)sqlite3_column_int64(st, 5);
    file->created_at = sqlite3_column_int64(st, 6);
    file->expires_at = sqlite3_column_int64(st, 7);
    file->expired = sqlite3_column_int(st, 8) != 0;
    file->source = source_of(sqlite3_column_text(st, 9));
}

/* A file whose row is marked, or whose time is up but the sweep has not yet
 * come by, is gone either way: its row says expired from then on. */
static kiln_store_result file_state(const kiln_store *store, kiln_store_file *file)
{
    if (file->expired || file->expires_at <= store_now(store)) {
        file->expired = 1;
        return KILN_STORE_GONE;
    }
    return KILN_STORE_OK;
}

/* One integer a statement answers (PRAGMA user_version, a count), or -1. */
static int64_t query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *q = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* Bring a database SCHEMA has just made sure of to SCHEMA_VERSION: a
 * version-1 table gets its source column. A database of a later version is
 * a newer Kiln's, whose rows this one might misread: refused. */
static kiln_status migrate(sqlite3 *db, const char *path, kiln_error *err)
{
    int64_t version = query_int(db, "PRAGMA user_version");
    if (version > SCHEMA_VERSION)
        return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                              "the store database '%s' is of version %lld, made by a newer Kiln "
                              "(this one reads up to %d)",
                              path, (long long)version, SCHEMA_VERSION);
    char *msg = NULL;
    if (query_int(db, "SELECT count(*) FROM pragma_table_info('files') WHERE name = 'source'") ==
            0 &&
        sqlite3_exec(db, "ALTER TABLE files ADD COLUMN source TEXT", NULL, NULL, &msg) !=
            SQLITE_OK)
        goto fail;
    char stamp[48];
    snprintf(stamp, sizeof stamp, "PRAGMA user_version = %d", SCHEMA_VERSION);
    if (version != SCHEMA_VERSION && sqlite3_exec(db, stamp, NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    return KILN_E_OK;

fail:;
    kiln_status st = kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                    "cannot bring the store database '%s' up to date: %s", path,
                                    msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return st;
}

static kiln_status open_db(sqlite3 **db, const char *path, int writer, kiln_error *err)
{
    /* Our own mutexes serialize each connection, so SQLite's are not needed. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
        kiln_status st = kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                        "cannot open the store database '%s': %s", path,
                                        *db ? sqlite3_errmsg(*db) : "out of memory");
        sqlite3_close(*db);
        *db = NULL;
        return st;
    }
    sqlite3_busy_timeout(*db, BUSY_TIMEOUT_MS);
    /* WAL: readers never block the writer nor it them. synchronous=FULL:
     * every commit reaches the disk before it returns, so a row the server
     * has answered with survives a power cut, like its fsynced body. */
    const char *pragmas = writer ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                                 : "PRAGMA synchronous=FULL;";
    char *msg = NULL;
    if (sqlite3_exec(*db, pragmas, NULL, NULL, &msg) != SQLITE_OK ||
        (writer && sqlite3_exec(*db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK)) {
        kiln_status st = kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                        "cannot set up the store database '%s': %s", path,
                                        msg ? msg : sqlite3_errmsg(*db));
        sqlite3_free(msg);
        sqlite3_close(*db);
        *db = NULL;
        return st;
    }
    kiln_status migrated = writer ? migrate(*db, path, err) : KILN_E_OK;
    if (migrated != KILN_E_OK) {
        sqlite3_close(*db);
        *db = NULL;
        return migrated;
    }
    if (writer) {
        /* journal_mode=WAL answers with the mode it got, and does not fail
         * when it cannot switch (a file system without shared memory). */
        sqlite3_stmt *q = NULL;
        int wal = 0;
        if (sqlite3_prepare_v2(*db, "PRAGMA journal_mode", -1, &q, NULL) == SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW)
            wal = sqlite3_column_text(q, 0) &&
                  strcmp((const char *)sqlite3_column_text(q, 0), "wal") == 0;
        sqlite3_finalize(q);
        if (!wal) {
            sqlite3_close(*db);
            *db = NULL;
            return kiln_error_set(err, KILN_E_INTERNAL, NULL,
                                  "the store database '%s' cannot use WAL mode", path);
        }
    }
    return KILN_E_OK;
}

/* SQLite creates a database 0644 (less the umask) and gives its -wal and
 * -shm the database's own mode. The rows (tenants, file names) are the
 * server's alone, like the bodies: so kiln.db is made 0600 before SQLite
 * opens it, and a database an older version made, or a -wal or -shm a
 * crash left, is set to 0600. Best effort: a file system without modes
 * (or a file not ours) keeps what it has, and SQLite reports what it
 * cannot open. */
static void private_db_files(const char *db_path)
{
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char path[PATH_MAX];
        int n = snprintf(path, sizeof path, "%s%s", db_path, suffixes[i]);
        if (n < 0 || (size_t)n >= sizeof path)
            continue;
        /* Only the database is created: an empty file is an empty
         * database to SQLite, but an empty -wal or -shm is not theirs. */
        int fd = open(path, O_RDWR | O_CLOEXEC | (i == 0 ? O_CREAT : 0), 0600);
        if (fd < 0)
            continue;
        fchmod(fd, 0600); /* a failure keeps the mode it has (see above) */
        close(fd);
    }
}

/* ---- open, orphan pass, close -------------------------------------------- */

/* Is there a live (not expired) row for this id? 1, 0, -1 on error. */
static int live_row(kiln_store *store, const char *id)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store->wdb, "SELECT 1 FROM files WHERE id = ? AND expired = 0", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/*
 * Remove what a crash left: named temporaries, bodies with no live row
 * (killed between link and commit, or between the row's delete or expiry
 * mark and the unlink). A live row without a body cannot come from any
 * crash; if the disk lost one anyway, the row is deleted so the file
 * answers 404 instead of failing every download. Runs before any other
 * thread can see the store, so it needs no lock.
 */
static kiln_status recover(kiln_store *store, kiln_error *err)
{
    int removed = 0;
    int dup = fcntl(store->content_fd, F_DUPFD_CLOEXEC, 0);
    DIR *dir = dup >= 0 ? fdopendir(dup) : NULL;
    if (!dir) {
        if (dup >= 0)
            close(dup);
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot read the content directory: %s",
                              strerror(errno));
    }
    struct dirent *de;
    kiln_status st = KILN_E_OK;
    sqlite3_stmt *q = NULL, *del = NULL;
    char(*lost)[KILN_STORE_ID_LEN + 1] = NULL;
    size_t nlost = 0, cap = 0;
    int rc;
    while ((de = readdir(dir)) != NULL) {
        if (strncmp(de->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX)) == 0) {
            if (unlinkat(store->content_fd, de->d_name, 0) == 0) {
                store->recovery.temporaries++;
                removed = 1;
            }
            continue;
        }
        if (!valid_id(de->d_name))
            continue; /* not ours: left alone */
        int live = live_row(store, de->d_name);
        if (live < 0) {
            st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "store database: %s",
                                sqlite3_errmsg(store->wdb));
            goto cleanup_statements;
        }
        if (!live && unlinkat(store->content_fd, de->d_name, 0) == 0) {
            store->recovery.orphan_bodies++;
            removed = 1;
        }
    }

    /* Live rows whose body is missing. */
    if (sqlite3_prepare_v2(store->wdb, "SELECT id FROM files WHERE expired = 0", -1, &q, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(store->wdb, "DELETE FROM files WHERE id = ?", -1, &del, NULL) !=
            SQLITE_OK) {
        st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "store database: %s",
                            sqlite3_errmsg(store->wdb));
        goto cleanup_statements;
    }
    /* Collect first: deleting while stepping the same table is allowed in
     * SQLite, but a plain list is easier to reason about. */
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(q, 0);
        struct stat sb;
        if (!id || !valid_id(id) ||
            (fstatat(store->content_fd, id, &sb, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)) {
            if (nlost == cap) {
                size_t ncap = cap ? cap * 2 : 16;
                void *grown = realloc(lost, ncap * sizeof *lost);
                if (!grown) {
                    st = kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
                    goto cleanup_lost;
                }
                lost = grown;
                cap = ncap;
            }
            snprintf(lost[nlost++], sizeof lost[0], "%s", id ? id : "");
        }
    }
    if (rc != SQLITE_DONE) {
        st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "store database: %s",
                            sqlite3_errmsg(store->wdb));
        goto cleanup_lost;
    }
    sqlite3_reset(q);
    for (size_t i = 0; i < nlost; i++) {
        sqlite3_bind_text(del, 1, lost[i], -1, SQLITE_STATIC);
        if (sqlite3_step(del) != SQLITE_DONE) {
            st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "store database: %s",
                                sqlite3_errmsg(store->wdb));
            goto cleanup_lost;
        }
        sqlite3_reset(del);
        store->recovery.lost_rows++;
    }
    if (removed && fsync(store->content_fd) != 0)
        st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot sync the content directory: %s",
                            strerror(errno));

cleanup_lost:
    free(lost);
cleanup_statements:
    sqlite3_finalize(q);
    sqlite3_finalize(del);
    closedir(dir);
    return st;
}

kiln_status kiln_store_open(kiln_store **out, const kiln_store_options *opt, kiln_error *err)
{
    kiln_status st;
    *out = NULL;
    if (!opt || !opt->dir || !*opt->dir || strlen(opt->dir) > PATH_MAX - 32)
        return kiln_error_set(err, KILN_E_USAGE, NULL, "the store needs a directory");
    if (opt->ttl_seconds < 0)
        return kiln_error_set(err, KILN_E_USAGE, NULL, "a file lifetime cannot be negative");

    kiln_store *store = calloc(1, sizeof *store);
    if (!store)
        return kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
    store->content_fd = -1;
    store->lock_fd = -1;
    store->ttl = opt->ttl_seconds ? opt->ttl_seconds : KILN_STORE_DEFAULT_TTL;
    store->max_bytes = opt->max_bytes ? opt->max_bytes : KILN_DEFAULT_MAX_BYTES;
    store->now = system_clock;
    if (pthread_mutex_init(&store->wlock, NULL) != 0) {
        free(store);
        return kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot create a mutex");
    }
    for (; store->readers_ready < READERS; store->readers_ready++)
        if (pthread_mutex_init(&store->readers[store->readers_ready].lock, NULL) != 0) {
            st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot create a mutex");
            goto fail_close;
        }

    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/content", opt->dir);
    if (kiln_mkdir_p(opt->dir, 0700, 0700) != 0 || kiln_mkdir_p(path, 0700, 0700) != 0) {
        st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create the store directory '%s': %s",
                            path, strerror(errno));
        goto fail_close;
    }
    store->content_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (store->content_fd < 0) {
        st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot open '%s': %s", path,
                            strerror(errno));
        goto fail_close;
    }
    snprintf(path, sizeof path, "%s/kiln.lock", opt->dir);
    store->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (store->lock_fd < 0) {
        st = kiln_error_set(err, KILN_E_WRITE, NULL, "cannot open '%s': %s", path,
                            strerror(errno));
        goto fail_close;
    }
    if (flock(store->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        long pid = 0;
        if (errno == EWOULDBLOCK && kiln_store_holder(opt->dir, &pid) == 1 && pid > 0)
            st = kiln_error_set(err, KILN_E_USAGE, NULL,
                                "the data directory '%s' is in use by another process (pid %ld)",
                                opt->dir, pid);
        else
            st = kiln_error_set(err, KILN_E_USAGE, NULL,
                                "the data directory '%s' is in use by another process", opt->dir);
        goto fail_close;
    }

    snprintf(path, sizeof path, "%s/kiln.db", opt->dir);
    private_db_files(path);
    st = open_db(&store->wdb, path, 1, err);
    if (st != KILN_E_OK)
        goto fail_close;
    for (int i = 0; i < READERS; i++) {
        st = open_db(&store->readers[i].db, path, 0, err);
        if (st != KILN_E_OK)
            goto fail_close;
    }
    st = recover(store, err);
    if (st != KILN_E_OK)
        goto fail_close;
    *out = store;
    return KILN_E_OK;

fail_close:
    kiln_store_close(store);
    return st;
}

/* /proc/locks has a line per lock: "N: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE
 * START END", the device numbers in hex; a waiter's line has "->" after
 * the number. The lock file's device and inode name its line. */
int kiln_store_holder(const char *dir, long *pid)
{
    *pid = 0;
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/kiln.lock", dir) >= (int)sizeof path)
        return -1;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    FILE *f = fopen("/proc/locks", "re");
    if (!f)
        return -1;
    char line[256];
    int held = 0;
    while (!held && fgets(line, sizeof line, f)) {
        char kind[16], mode[16], access[16];
        long holder;
        unsigned maj, min;
        unsigned long long ino;
        if (strstr(line, "->") || sscanf(line, "%*d: %15s %15s %15s %ld %x:%x:%llu", kind, mode,
                                         access, &holder, &maj, &min, &ino) != 7)
            continue;
        if (strcmp(kind, "FLOCK") == 0 && maj == major(sb.st_dev) && min == minor(sb.st_dev) &&
            ino == (unsigned long long)sb.st_ino) {
            held = 1;
            *pid = holder > 0 ? holder : 0;
        }
    }
    fclose(f);
    return held;
}

void kiln_store_close(kiln_store *store)
{
    if (!store)
        return;
    /* The last connection to close checkpoints the WAL into kiln.db. */
    for (int i = 0; i < READERS; i++) {
        sqlite3_finalize(store->readers[i].lookup);
        sqlite3_close(store->readers[i].db);
    }
    sqlite3_close(store->wdb);
    if (store->content_fd >= 0)
        close(store->content_fd);
    if (store->lock_fd >= 0)
        close(store->lock_fd); /* releases the flock */
    for (int i = 0; i < store->readers_ready; i++)
        pthread_mutex_destroy(&store->readers[i].lock);
    pthread_mutex_destroy(&store->wlock);
    free(store);
}

void kiln_store_set_clock(kiln_store *store, int64_t (*now)(void *arg), void *arg)
{
    store->now = now ? now : system_clock;
    store->now_arg = now ? arg : NULL;
}

void kiln_store_force_named_temp(kiln_store *store, int on)
{
    store->force_named_temp = on;
}

void kiln_store_last_recovery(const kiln_store *store, kiln_store_recovery *out)
{
    *out = store->recovery;
}

/* ---- uploads ------------------------------------------------------------- */

/* Drop the temporary body: nothing of it stays on disk. */
static void drop_temp(kiln_store_upload *up)
{
    if (up->temp_name[0]) {
        unlinkat(up->store->content_fd, up->temp_name, 0);
        up->temp_name[0] = '\0';
    }
    if (up->fd >= 0) {
        close(up->fd);
        up->fd = -1;
    }
}

static kiln_store_result create_temp(kiln_store_upload *up, kiln_error *err)
{
    int dir = up->store->content_fd;
    if (!up->store->force_named_temp) {
        up->fd = openat(dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (up->fd >= 0)
            return KILN_STORE_OK;
        if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT) {
            kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create a file in the store: %s",
                           strerror(errno));
            return KILN_STORE_ERROR;
        }
    }
    for (int attempt = 0; attempt < 10; attempt++) {
        char rnd[KILN_STORE_ID_LEN + 1];
        if (random_hex(rnd) != 0)
            break;
        snprintf(up->temp_name, sizeof up->temp_name, TEMP_PREFIX "%s", rnd);
        up->fd = openat(dir, up->temp_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                        0600);
        if (up->fd >= 0)
            return KILN_STORE_OK;
        if (errno != EEXIST)
            break;
    }
    up->temp_name[0] = '\0';
    kiln_error_set(err, KILN_E_WRITE, NULL, "cannot create a file in the store: %s",
                   strerror(errno));
    return KILN_STORE_ERROR;
}

kiln_store_result kiln_store_begin(kiln_store *store, const char *tenant, const char *filename,
                                   const char *media_type, kiln_store_source source,
                                   kiln_store_upload **out, kiln_error *err)
{
    *out = NULL;
    if (!filename)
        filename = "";
    if (!media_type || !*media_type)
        media_type = "application/octet-stream";
    if (!valid_tenant(tenant)) {
        kiln_error_set(err, KILN_E_USAGE, NULL, "a tenant name is 1 to %d bytes",
                       KILN_STORE_TENANT_MAX);
        return KILN_STORE_ERROR;
    }
    if (strlen(filename) > KILN_STORE_FILENAME_MAX ||
        !kiln_utf8_valid(filename, strlen(filename))) {
        kiln_error_set(err, KILN_E_USAGE, NULL, "a file name is UTF-8 of at most %d bytes",
                       KILN_STORE_FILENAME_MAX);
        return KILN_STORE_ERROR;
    }
    if (strlen(media_type) >= sizeof((kiln_store_upload *)0)->media_type) {
        kiln_error_set(err, KILN_E_USAGE, NULL, "the media type is too long");
        return KILN_STORE_ERROR;
    }
    kiln_store_upload *up = calloc(1, sizeof *up);
    if (!up) {
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
        return KILN_STORE_ERROR;
    }
    up->store = store;
    up->fd = -1;
    snprintf(up->tenant, sizeof up->tenant, "%s", tenant);
    snprintf(up->filename, sizeof up->filename, "%s", filename);
    snprintf(up->media_type, sizeof up->media_type, "%s", media_type);
    up->source = source;
    sha256_init(&up->sha);
    kiln_store_result r = create_temp(up, err);
    if (r != KILN_STORE_OK) {
        free(up);
        return r;
    }
    *out = up;
    return KILN_STORE_OK;
}

/* Write what is buffered to the temporary body. */
static kiln_store_result flush_upload(kiln_store_upload *up, kiln_error *err)
{
    size_t done = 0;
    while (done < up->buffered) {
        ssize_t n = pwrite(up->fd, up->buffer + done, up->buffered - done, (off_t)up->written);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            kiln_error_set(err, KILN_E_WRITE, NULL, "cannot write a file in the store: %s",
                           strerror(errno));
            up->failed = 1;
            drop_temp(up);
            return KILN_STORE_ERROR;
        }
        done += (size_t)n;
        up->written += (uint64_t)n;
    }
    up->buffered = 0;
    return KILN_STORE_OK;
}

kiln_store_result kiln_store_write(kiln_store_upload *up, const void *data, size_t len,
                                   kiln_error *err)
{
    if (up->failed) {
        kiln_error_set(err, KILN_E_INTERNAL, NULL, "this upload already failed");
        return KILN_STORE_ERROR;
    }
    uint64_t max = up->store->max_bytes;
    if (len > max || up->bytes > max - len) {
        kiln_error_limit(err, KILN_E_TOO_LARGE, NULL, max, up->bytes + len,
                         "the file is larger than the limit of %llu bytes",
                         (unsigned long long)max);
        up->failed = 1;
        drop_temp(up);
        return KILN_STORE_TOO_LARGE;
    }
    if (!up->buffer && !(up->buffer = malloc(UPLOAD_BUFFER))) {
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
        up->failed = 1;
        drop_temp(up);
        return KILN_STORE_ERROR;
    }
    sha256_update(&up->sha, len, data);
    up->bytes += len;
    const unsigned char *p = data;
    while (len > 0) {
        size_t take = UPLOAD_BUFFER - up->buffered;
        if (take > len)
            take = len;
        memcpy(up->buffer + up->buffered, p, take);
        up->buffered += take;
        p += take;
        len -= take;
        if (up->buffered == UPLOAD_BUFFER && flush_upload(up, err) != KILN_STORE_OK)
            return KILN_STORE_ERROR;
    }
    return KILN_STORE_OK;
}

/* Give the temporary body its final name, content/ID, with a fresh id. */
static kiln_store_result link_body(kiln_store_upload *up, char id[KILN_STORE_ID_LEN + 1],
                                   kiln_error *err)
{
    int dir = up->store->content_fd;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", up->fd);
    for (int attempt = 0; attempt < 10; attempt++) {
        if (random_hex(id) != 0) {
            kiln_error_set(err, KILN_E_INTERNAL, NULL, "getrandom failed: %s", strerror(errno));
            return KILN_STORE_ERROR;
        }
        /* linkat never replaces: a (128-bit, so never seen) collision is
         * EEXIST and another id, not an overwritten file. */
        int rc = up->temp_name[0] ? linkat(dir, up->temp_name, dir, id, 0)
                                  : linkat(AT_FDCWD, proc, dir, id, AT_SYMLINK_FOLLOW);
        if (rc == 0) {
            if (up->temp_name[0]) {
                unlinkat(dir, up->temp_name, 0);
                up->temp_name[0] = '\0';
            }
            return KILN_STORE_OK;
        }
        if (errno != EEXIST)
            break;
    }
    kiln_error_set(err, KILN_E_WRITE, NULL, "cannot name a file in the store: %s",
                   strerror(errno));
    return KILN_STORE_ERROR;
}

static kiln_store_result insert_row(kiln_store *store, const kiln_store_file *f, kiln_error *err)
{
    kiln_store_result r = KILN_STORE_OK;
    pthread_mutex_lock(&store->wlock);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store->wdb,
                           "INSERT INTO files (" FILE_COLUMNS ") VALUES (?,?,?,?,?,?,?,?,0,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "insert");
        goto cleanup_unlock;
    }
    sqlite3_bind_text(st, 1, f->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, f->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, f->filename, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, f->media_type, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, f->sha256, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)f->bytes);
    sqlite3_bind_int64(st, 7, f->created_at);
    sqlite3_bind_int64(st, 8, f->expires_at);
    const char *source = kiln_store_source_name(f->source);
    if (source)
        sqlite3_bind_text(st, 9, source, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 9);
    /* Autocommit: the statement is its own transaction, durable on return. */
    if (sqlite3_step(st) != SQLITE_DONE)
        r = db_fail(store->wdb, err, "insert");
    sqlite3_finalize(st);
cleanup_unlock:
    pthread_mutex_unlock(&store->wlock);
    return r;
}

/* The body complete in the temporary file, up->bytes and up->sha its size
 * and digest: make it a stored file. Frees up. */
static kiln_store_result commit_body(kiln_store_upload *up, kiln_store_file *file,
                                     kiln_error *err)
{
    kiln_store *store = up->store;
    kiln_store_result r;
    kiln_store_file f;
    memset(&f, 0, sizeof f);
    /* Durable before named: a crash must not leave a linked body whose
     * blocks never reached the disk. */
    if (fsync(up->fd) != 0) {
        kiln_error_set(err, KILN_E_WRITE, NULL, "cannot sync a file in the store: %s",
                       strerror(errno));
        r = KILN_STORE_ERROR;
        goto cleanup_upload;
    }
    r = link_body(up, f.id, err);
    if (r != KILN_STORE_OK)
        goto cleanup_upload;
    /* The name itself durable before the row that points at it. */
    if (fsync(store->content_fd) != 0) {
        kiln_error_set(err, KILN_E_WRITE, NULL, "cannot sync the content directory: %s",
                       strerror(errno));
        r = KILN_STORE_ERROR;
        goto cleanup_body;
    }

    unsigned char digest[SHA256_DIGEST_SIZE];
    sha256_digest(&up->sha, sizeof digest, digest);
    for (size_t i = 0; i < sizeof digest; i++)
        snprintf(f.sha256 + 2 * i, 3, "%02x", digest[i]);
    snprintf(f.tenant, sizeof f.tenant, "%s", up->tenant);
    snprintf(f.filename, sizeof f.filename, "%s", up->filename);
    snprintf(f.media_type, sizeof f.media_type, "%s", up->media_type);
    f.source = up->source;
    f.bytes = up->bytes;
    f.created_at = store_now(store);
    f.expires_at = f.created_at + store->ttl;
    r = insert_row(store, &f, err);
    if (r != KILN_STORE_OK)
        goto cleanup_body;
    if (file)
        *file = f;
    goto cleanup_upload;

cleanup_body:
    /* No row: the body must not stay (a crash here is the orphan pass's). */
    unlinkat(store->content_fd, f.id, 0);
cleanup_upload:
    kiln_store_abort(up);
    return r;
}

/* The body ready (r OK): commit it; else drop it. Frees up. */
static kiln_store_result finish_upload(kiln_store_upload *up, kiln_store_result r,
                                       kiln_store_file *file, kiln_error *err)
{
    if (r == KILN_STORE_OK)
        return commit_body(up, file, err);
    kiln_store_abort(up);
    return r;
}

kiln_store_result kiln_store_commit(kiln_store_upload *up, kiln_store_file *file, kiln_error *err)
{
    kiln_store_result r = KILN_STORE_ERROR;
    if (up->failed)
        kiln_error_set(err, KILN_E_INTERNAL, NULL, "this upload already failed");
    else
        r = flush_upload(up, err);
    return finish_upload(up, r, file, err);
}

int kiln_store_upload_fd(const kiln_store_upload *up)
{
    return up->fd;
}

/* Size and digest of a body someone else wrote, from the file itself:
 * into up->bytes and up->sha. */
static kiln_store_result hash_written(kiln_store_upload *up, kiln_error *err)
{
    uint64_t max = up->store->max_bytes;
    struct stat sb;
    if (up->failed || up->bytes || up->buffered) {
        kiln_error_set(err, KILN_E_INTERNAL, NULL,
                       up->failed ? "this upload already failed"
                                  : "this upload's body came through kiln_store_write");
        return KILN_STORE_ERROR;
    }
    if (fstat(up->fd, &sb) != 0) {
        kiln_error_set(err, KILN_E_WRITE, NULL, "cannot read a file in the store: %s",
                       strerror(errno));
        return KILN_STORE_ERROR;
    }
    /* Refused before any of it is read. */
    if ((uint64_t)sb.st_size > max) {
        kiln_error_limit(err, KILN_E_TOO_LARGE, NULL, max, (uint64_t)sb.st_size,
                         "the file is larger than the limit of %llu bytes",
                         (unsigned long long)max);
        return KILN_STORE_TOO_LARGE;
    }
    unsigned char *buf = malloc(UPLOAD_BUFFER);
    if (!buf) {
        kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
        return KILN_STORE_ERROR;
    }
    kiln_store_result r = KILN_STORE_ERROR;
    for (;;) {
        ssize_t n = pread(up->fd, buf, UPLOAD_BUFFER, (off_t)up->bytes);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            kiln_error_set(err, KILN_E_WRITE, NULL, "cannot read a file in the store: %s",
                           strerror(errno));
            break;
        }
        if (n == 0) {
            r = KILN_STORE_OK;
            break;
        }
        if ((uint64_t)n > max - up->bytes) {
            /* It grew past the limit since the fstat. */
            kiln_error_limit(err, KILN_E_TOO_LARGE, NULL, max, up->bytes + (uint64_t)n,
                             "the file is larger than the limit of %llu bytes",
                             (unsigned long long)max);
            r = KILN_STORE_TOO_LARGE;
            break;
        }
        sha256_update(&up->sha, (size_t)n, buf);
        up->bytes += (uint64_t)n;
    }
    free(buf);
    return r;
}

kiln_store_result kiln_store_commit_written(kiln_store_upload *up, kiln_store_file *file,
                                            kiln_error *err)
{
    return finish_upload(up, hash_written(up, err), file, err);
}

void kiln_store_abort(kiln_store_upload *up)
{
    if (!up)
        return;
    drop_temp(up);
    free(up->buffer);
    free(up);
}

kiln_store_result kiln_store_put_path(kiln_store *store, const char *tenant, const char *path,
                                      const char *filename, const char *media_type,
                                      kiln_store_source source, kiln_store_file *file,
                                      kiln_error *err)
{
    kiln_store_result r;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        kiln_error_set(err, KILN_E_INPUT, NULL, "cannot open '%s': %s", path, strerror(errno));
        return KILN_STORE_ERROR;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        kiln_error_set(err, KILN_E_INPUT, NULL, "'%s' is not a regular file", path);
        r = KILN_STORE_ERROR;
        goto cleanup_fd;
    }
    /* Refuse an oversized file before copying any of it. */
    if ((uint64_t)sb.st_size > store->max_bytes) {
        kiln_error_limit(err, KILN_E_TOO_LARGE, NULL, store->max_bytes, (uint64_t)sb.st_size,
                         "the file is larger than the limit of %llu bytes",
                         (unsigned long long)store->max_bytes);
        r = KILN_STORE_TOO_LARGE;
        goto cleanup_fd;
    }
    kiln_store_upload *up = NULL;
    r = kiln_store_begin(store, tenant, filename, media_type, source, &up, err);
    if (r != KILN_STORE_OK)
        goto cleanup_fd;
    char buf[1 << 16];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            kiln_error_set(err, KILN_E_INPUT, NULL, "cannot read '%s': %s", path,
                           strerror(errno));
            r = KILN_STORE_ERROR;
            goto cleanup_upload;
        }
        if (n == 0)
            break;
        r = kiln_store_write(up, buf, (size_t)n, err);
        if (r != KILN_STORE_OK)
            goto cleanup_upload; /* the file grew past the limit while read */
    }
    r = kiln_store_commit(up, file, err); /* frees up */
    goto cleanup_fd;

cleanup_upload:
    kiln_store_abort(up);
cleanup_fd:
    close(fd);
    return r;
}

/* ---- lookups ------------------------------------------------------------- */

/* A read connection, locked: a free one if there is one, else wait for
 * one (spread by a rotating start). */
static struct store_reader *reader_take(kiln_store *store)
{
    unsigned start = __atomic_fetch_add(&store->next_reader, 1, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < READERS; i++) {
        struct store_reader *r = &store->readers[(start + i) % READERS];
        if (pthread_mutex_trylock(&r->lock) == 0)
            return r;
    }
    struct store_reader *r = &store->readers[start % READERS];
    pthread_mutex_lock(&r->lock);
    return r;
}

static void reader_give(struct store_reader *reader)
{
    pthread_mutex_unlock(&reader->lock);
}

/* The row of a tenant's file, read on one of the read connections. OK
 * (whatever its expiry), NOT_FOUND, or ERROR. */
static kiln_store_result lookup(kiln_store *store, const char *tenant, const char *id,
                                kiln_store_file *file, kiln_error *err)
{
    if (!valid_id(id) || !valid_tenant(tenant))
        return KILN_STORE_NOT_FOUND;
    kiln_store_result r;
    struct store_reader *reader = reader_take(store);
    if (!reader->lookup &&
        sqlite3_prepare_v3(reader->db,
                           "SELECT " FILE_COLUMNS " FROM files WHERE id = ? AND tenant = ?", -1,
                           SQLITE_PREPARE_PERSISTENT, &reader->lookup, NULL) != SQLITE_OK) {
        r = db_fail(reader->db, err, "lookup");
        goto cleanup_unlock;
    }
    sqlite3_stmt *st = reader->lookup;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        row_to_file(st, file);
        r = KILN_STORE_OK;
    } else if (rc == SQLITE_DONE) {
        r = KILN_STORE_NOT_FOUND;
    } else {
        r = db_fail(reader->db, err, "lookup");
    }
    /* Ends the read transaction the step began, and lets go of the
     * strings bound above (SQLITE_STATIC: they are the caller's). */
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
cleanup_unlock:
    reader_give(reader);
    return r;
}

kiln_store_result kiln_store_get(kiln_store *store, const char *tenant, const char *id,
                                 kiln_store_file *file, kiln_error *err)
{
    kiln_store_result r = lookup(store, tenant, id, file, err);
    return r == KILN_STORE_OK ? file_state(store, file) : r;
}

kiln_store_result kiln_store_open_body(kiln_store *store, const char *tenant, const char *id,
                                       kiln_store_file *file, int *fd, kiln_error *err)
{
    *fd = -1;
    kiln_store_result r = kiln_store_get(store, tenant, id, file, err);
    if (r != KILN_STORE_OK)
        return r;
    /* id is 32 hex digits (lookup checked), so this names content/ID only. */
    int body = openat(store->content_fd, id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (body < 0) {
        int saved = errno;
        /* A delete or a sweep between the lookup and the open: answer what
         * the row says now. */
        if (saved == ENOENT) {
            r = kiln_store_get(store, tenant, id, file, err);
            if (r != KILN_STORE_OK)
                return r;
        }
        kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot open the body of %s: %s", id,
                       strerror(saved));
        return KILN_STORE_ERROR;
    }
    *fd = body;
    return KILN_STORE_OK;
}

kiln_store_result kiln_store_list(kiln_store *store, const char *tenant, int64_t offset,
                                  int64_t limit,
                                  void (*fn)(const kiln_store_file *file, void *arg), void *arg,
                                  int64_t *total, kiln_error *err)
{
    if (total)
        *total = 0;
    if (limit < 1 || limit > 1000 || offset < 0) {
        kiln_error_set(err, KILN_E_USAGE, NULL, "limit is 1 to 1000 and offset at least 0");
        return KILN_STORE_ERROR;
    }
    if (!valid_tenant(tenant))
        return KILN_STORE_OK; /* nobody's files: an empty list */
    /* Only live files are listed; an expired one still answers 410 by id. */
    int64_t now = store_now(store);
    kiln_store_result r = KILN_STORE_OK;
    struct store_reader *reader = reader_take(store);
    sqlite3_stmt *count = NULL, *page = NULL;
    /* Both statements in one read transaction, so total and page agree. */
    if (sqlite3_exec(reader->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(reader->db, err, "list");
        goto cleanup_unlock;
    }
    if (sqlite3_prepare_v2(reader->db,
                           "SELECT count(*) FROM files WHERE tenant = ? AND expired = 0 "
                           "AND expires_at > ?",
                           -1, &count, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(reader->db,
                           "SELECT " FILE_COLUMNS " FROM files WHERE tenant = ? AND expired = 0 "
                           "AND expires_at > ? ORDER BY created_at DESC, rowid DESC "
                           "LIMIT ? OFFSET ?",
                           -1, &page, NULL) != SQLITE_OK) {
        r = db_fail(reader->db, err, "list");
        goto cleanup_transaction;
    }
    sqlite3_bind_text(count, 1, tenant, -1, SQLITE_STATIC);
    sqlite3_bind_int64(count, 2, now);
    if (sqlite3_step(count) != SQLITE_ROW) {
        r = db_fail(reader->db, err, "list");
        goto cleanup_transaction;
    }
    if (total)
        *total = sqlite3_column_int64(count, 0);
    sqlite3_bind_text(page, 1, tenant, -1, SQLITE_STATIC);
    sqlite3_bind_int64(page, 2, now);
    sqlite3_bind_int64(page, 3, limit);
    sqlite3_bind_int64(page, 4, offset);
    int rc;
    kiln_store_file f;
    while ((rc = sqlite3_step(page)) == SQLITE_ROW) {
        row_to_file(page, &f);
        if (fn)
            fn(&f, arg);
    }
    if (rc != SQLITE_DONE)
        r = db_fail(reader->db, err, "list");
cleanup_transaction:
    sqlite3_finalize(count);
    sqlite3_finalize(page);
    sqlite3_exec(reader->db, "COMMIT", NULL, NULL, NULL);
cleanup_unlock:
    reader_give(reader);
    return r;
}

/* ---- changes ------------------------------------------------------------- */

kiln_store_result kiln_store_delete(kiln_store *store, const char *tenant, const char *id,
                                    kiln_error *err)
{
    if (!valid_id(id) || !valid_tenant(tenant))
        return KILN_STORE_NOT_FOUND;
    kiln_store_result r;
    pthread_mutex_lock(&store->wlock);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store->wdb, "DELETE FROM files WHERE id = ? AND tenant = ?", -1, &st,
                           NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "delete");
        goto cleanup_unlock;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        r = db_fail(store->wdb, err, "delete");
    else
        r = sqlite3_changes(store->wdb) > 0 ? KILN_STORE_OK : KILN_STORE_NOT_FOUND;
    sqlite3_finalize(st);
cleanup_unlock:
    pthread_mutex_unlock(&store->wlock);
    /* The row is gone (committed) before the body: a crash in between
     * leaves an orphan body, never a row without one. An already expired
     * file has no body; ENOENT is fine. */
    if (r == KILN_STORE_OK && unlinkat(store->content_fd, id, 0) == 0)
        fsync(store->content_fd);
    return r;
}

kiln_store_result kiln_store_sweep(kiln_store *store, int64_t now, uint64_t *removed,
                                   kiln_error *err)
{
    if (removed)
        *removed = 0;
    kiln_store_result r = KILN_STORE_OK;
    char(*ids)[KILN_STORE_ID_LEN + 1] = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *sel = NULL, *mark = NULL, *purge = NULL;

    pthread_mutex_lock(&store->wlock);
    /* Mark first, in one transaction, and unlink after the commit: see the
     * top of the file. */
    if (sqlite3_exec(store->wdb, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "sweep");
        goto cleanup_unlock;
    }
    if (sqlite3_prepare_v2(store->wdb,
                           "SELECT id FROM files WHERE expired = 0 AND expires_at <= ?", -1, &sel,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(store->wdb,
                           "UPDATE files SET expired = 1 WHERE expired = 0 AND expires_at <= ?",
                           -1, &mark, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(store->wdb, "DELETE FROM files WHERE expired = 1 AND expires_at <= ?",
                           -1, &purge, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "sweep");
        goto cleanup_rollback;
    }
    sqlite3_bind_int64(sel, 1, now);
    int rc;
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(sel, 0);
        if (!id || !valid_id(id))
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            void *grown = realloc(ids, ncap * sizeof *ids);
            if (!grown) {
                kiln_error_set(err, KILN_E_NOMEM, NULL, "out of memory");
                r = KILN_STORE_ERROR;
                goto cleanup_rollback;
            }
            ids = grown;
            cap = ncap;
        }
        snprintf(ids[n++], sizeof ids[0], "%s", id);
    }
    if (rc != SQLITE_DONE) {
        r = db_fail(store->wdb, err, "sweep");
        goto cleanup_rollback;
    }
    sqlite3_bind_int64(mark, 1, now);
    sqlite3_bind_int64(purge, 1, now - GRACE_SECONDS);
    if (sqlite3_step(mark) != SQLITE_DONE || sqlite3_step(purge) != SQLITE_DONE) {
        r = db_fail(store->wdb, err, "sweep");
        goto cleanup_rollback;
    }
    sqlite3_finalize(sel);
    sqlite3_finalize(mark);
    sqlite3_finalize(purge);
    sel = mark = purge = NULL;
    if (sqlite3_exec(store->wdb, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "sweep");
        goto cleanup_rollback;
    }
    pthread_mutex_unlock(&store->wlock);

    uint64_t count = 0;
    for (size_t i = 0; i < n; i++)
        if (unlinkat(store->content_fd, ids[i], 0) == 0)
            count++;
    if (count)
        fsync(store->content_fd);
    if (removed)
        *removed = count;
    free(ids);
    return KILN_STORE_OK;

cleanup_rollback:
    sqlite3_finalize(sel);
    sqlite3_finalize(mark);
    sqlite3_finalize(purge);
    sqlite3_exec(store->wdb, "ROLLBACK", NULL, NULL, NULL);
cleanup_unlock:
    pthread_mutex_unlock(&store->wlock);
    free(ids);
    return r;
}

uint64_t kiln_store_bytes(kiln_store *store)
{
    uint64_t total = 0;
    struct store_reader *reader = reader_take(store);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(reader->db,
                           "SELECT coalesce(sum(bytes), 0) FROM files "
                           "WHERE expired = 0",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        total = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    reader_give(reader);
    return total;
}

/* ---- sessions ---- */

int kiln_store_new_id(char out[KILN_STORE_ID_LEN + 1])
{
    return random_hex(out);
}

kiln_store_result kiln_store_session_put(kiln_store *store, const char *tenant, const char *id,
                                         int64_t created_at, int ended, const char *object,
                                         kiln_error *err)
{
    if (!valid_id(id) || !valid_tenant(tenant))
        return KILN_STORE_NOT_FOUND;
    kiln_store_result r = KILN_STORE_OK;
    pthread_mutex_lock(&store->wlock);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store->wdb,
                           "INSERT INTO sessions (id, tenant, created_at, ended, object) "
                           "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                           "ended = excluded.ended, object = excluded.object",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "session");
        goto cleanup_unlock;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, created_at);
    sqlite3_bind_int(st, 4, ended != 0);
    sqlite3_bind_text(st, 5, object, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        r = db_fail(store->wdb, err, "session");
    sqlite3_finalize(st);
cleanup_unlock:
    pthread_mutex_unlock(&store->wlock);
    return r;
}

kiln_store_result kiln_store_session_get(kiln_store *store, const char *tenant, const char *id,
                                         char **object, kiln_error *err)
{
    *object = NULL;
    if (!valid_id(id) || !valid_tenant(tenant))
        return KILN_STORE_NOT_FOUND;
    kiln_store_result r = KILN_STORE_NOT_FOUND;
    pthread_mutex_lock(&store->wlock);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store->wdb, "SELECT object FROM sessions WHERE id = ? AND tenant = ?",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "session");
        goto cleanup_unlock;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *text = sqlite3_column_text(st, 0);
        *object = strdup(text ? (const char *)text : "{}");
        r = *object ? KILN_STORE_OK : db_fail(store->wdb, err, "out of memory");
    } else if (rc != SQLITE_DONE) {
        r = db_fail(store->wdb, err, "session");
    }
    sqlite3_finalize(st);
cleanup_unlock:
    pthread_mutex_unlock(&store->wlock);
    return r;
}

kiln_store_result kiln_store_session_list(kiln_store *store, const char *tenant, int live_only,
                                          void (*fn)(const char *id, const char *tenant,
                                                     const char *object, void *arg),
                                          void *arg, kiln_error *err)
{
    if (tenant && !valid_tenant(tenant))
        return KILN_STORE_OK;
    kiln_store_result r = KILN_STORE_OK;
    pthread_mutex_lock(&store->wlock);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store->wdb,
                           "SELECT id, tenant, object FROM sessions WHERE (?1 IS NULL OR "
                           "tenant = ?1) AND (?2 = 0 OR ended = 0) "
                           "ORDER BY created_at DESC, id LIMIT 1000",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "sessions");
        goto cleanup_unlock;
    }
    if (tenant)
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, live_only != 0);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn((const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
           (const char *)sqlite3_column_text(st, 2), arg);
    if (rc != SQLITE_DONE)
        r = db_fail(store->wdb, err, "sessions");
    sqlite3_finalize(st);
cleanup_unlock:
    pthread_mutex_unlock(&store->wlock);
    return r;
}

/* ---- batches ---- */

kiln_store_result kiln_store_batch_put(kiln_store *store, const kiln_store_batch *b,
                                       kiln_error *err)
{
    if (!valid_id(b->id) || !valid_tenant(b->tenant))
        return KILN_STORE_NOT_FOUND;
    kiln_store_result r = KILN_STORE_OK;
    pthread_mutex_lock(&store->wlock);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store->wdb,
                           "INSERT INTO batches (id, tenant, created_at, status, child_pid, "
                           "child_start, object) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) "
                           "DO UPDATE SET status = excluded.status, child_pid = "
                           "excluded.child_pid, child_start = excluded.child_start, object = "
                           "excluded.object",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "batch");
        goto cleanup_unlock;
    }
    sqlite3_bind_text(st, 1, b->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, b->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, b->created_at);
    sqlite3_bind_text(st, 4, b->status, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, b->child_pid);
    sqlite3_bind_int64(st, 6, b->child_start);
    sqlite3_bind_text(st, 7, b->object, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        r = db_fail(store->wdb, err, "batch");
    sqlite3_finalize(st);
cleanup_unlock:
    pthread_mutex_unlock(&store->wlock);
    return r;
}

/* The batch row a statement is on, into *b (object malloc'd). 0, or -1. */
static int row_to_batch(sqlite3_stmt *st, kiln_store_batch *b)
{
    memset(b, 0, sizeof *b);
    copy_text(b->id, sizeof b->id, sqlite3_column_text(st, 0));
    copy_text(b->tenant, sizeof b->tenant, sqlite3_column_text(st, 1));
    b->created_at = sqlite3_column_int64(st, 2);
    copy_text(b->status, sizeof b->status, sqlite3_column_text(st, 3));
    b->child_pid = sqlite3_column_int64(st, 4);
    b->child_start = sqlite3_column_int64(st, 5);
    const unsigned char *text = sqlite3_column_text(st, 6);
    b->object = strdup(text ? (const char *)text : "{}");
    return b->object ? 0 : -1;
}

#define BATCH_COLUMNS "id, tenant, created_at, status, child_pid, child_start, object"

kiln_store_result kiln_store_batch_get(kiln_store *store, const char *tenant, const char *id,
                                       kiln_store_batch *b, kiln_error *err)
{
    memset(b, 0, sizeof *b);
    if (!valid_id(id) || (tenant && !valid_tenant(tenant)))
        return KILN_STORE_NOT_FOUND;
    kiln_store_result r = KILN_STORE_NOT_FOUND;
    pthread_mutex_lock(&store->wlock);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store->wdb,
                           "SELECT " BATCH_COLUMNS
                           " FROM batches WHERE id = ?1 AND (?2 IS NULL OR tenant = ?2)",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "batch");
        goto cleanup_unlock;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    if (tenant)
        sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        r = row_to_batch(st, b) == 0 ? KILN_STORE_OK : db_fail(store->wdb, err, "out of memory");
    else if (rc != SQLITE_DONE)
        r = db_fail(store->wdb, err, "batch");
    sqlite3_finalize(st);
cleanup_unlock:
    pthread_mutex_unlock(&store->wlock);
    return r;
}

void kiln_store_batch_release(kiln_store_batch *b)
{
    free(b->object);
    b->object = NULL;
}

kiln_store_result kiln_store_batch_list(kiln_store *store, const char *tenant, int active_only,
                                        int64_t offset, int64_t limit,
                                        void (*fn)(const kiln_store_batch *b, void *arg),
                                        void *arg, int64_t *total, kiln_error *err)
{
    if (total)
        *total = 0;
    if (tenant && !valid_tenant(tenant))
        return KILN_STORE_OK;
    kiln_store_result r = KILN_STORE_OK;
    pthread_mutex_lock(&store->wlock);
    sqlite3_stmt *st = NULL;
    /* Active ones oldest first (the order they start in), the rest newest
     * first (the listing). */
    const char *sql = active_only
                          ? "SELECT " BATCH_COLUMNS " FROM batches WHERE (?1 IS NULL OR tenant = "
                            "?1) AND status IN ('queued', 'running') ORDER BY created_at, rowid "
                            "LIMIT ?3 OFFSET ?2"
                          : "SELECT " BATCH_COLUMNS " FROM batches WHERE (?1 IS NULL OR tenant = "
                            "?1) ORDER BY created_at DESC, rowid DESC LIMIT ?3 OFFSET ?2";
    if (sqlite3_prepare_v2(store->wdb, sql, -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "batches");
        goto cleanup_unlock;
    }
    if (tenant)
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, offset);
    sqlite3_bind_int64(st, 3, limit);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        kiln_store_batch b;
        if (row_to_batch(st, &b) != 0) {
            r = db_fail(store->wdb, err, "out of memory");
            break;
        }
        fn(&b, arg);
        kiln_store_batch_release(&b);
    }
    if (r == KILN_STORE_OK && rc != SQLITE_DONE)
        r = db_fail(store->wdb, err, "batches");
    sqlite3_finalize(st);
    if (r == KILN_STORE_OK && total) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(store->wdb,
                               active_only ? "SELECT count(*) FROM batches WHERE (?1 IS NULL OR "
                                             "tenant = ?1) AND status IN ('queued', 'running')"
                                           : "SELECT count(*) FROM batches WHERE (?1 IS NULL OR "
                                             "tenant = ?1)",
                               -1, &q, NULL) == SQLITE_OK) {
            if (tenant)
                sqlite3_bind_text(q, 1, tenant, -1, SQLITE_STATIC);
            if (sqlite3_step(q) == SQLITE_ROW)
                *total = sqlite3_column_int64(q, 0);
        }
        sqlite3_finalize(q);
    }
cleanup_unlock:
    pthread_mutex_unlock(&store->wlock);
    return r;
}

int kiln_store_batch_result_has(kiln_store *store, const char *batch_id, const char *job_id)
{
    int found = -1;
    pthread_mutex_lock(&store->wlock);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store->wdb,
                           "SELECT 1 FROM batch_results WHERE batch_id = ? AND job_id = ?", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, job_id, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        found = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&store->wlock);
    return found;
}

kiln_store_result kiln_store_batch_result_put(kiln_store *store, const kiln_store_batch *b,
                                              const char *job_id, const char *line, int *inserted,
                                              kiln_error *err)
{
    *inserted = 0;
    if (!valid_id(b->id) || !valid_tenant(b->tenant))
        return KILN_STORE_NOT_FOUND;
    kiln_store_result r = KILN_STORE_OK;
    pthread_mutex_lock(&store->wlock);
    sqlite3_stmt *ins = NULL, *upd = NULL;
    if (sqlite3_exec(store->wdb, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "batch result");
        goto cleanup_unlock;
    }
    if (sqlite3_prepare_v2(store->wdb,
                           "INSERT OR IGNORE INTO batch_results (batch_id, job_id, line) "
                           "VALUES (?, ?, ?)",
                           -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(store->wdb,
                           "UPDATE batches SET status = ?, object = ? WHERE id = ? AND "
                           "tenant = ?",
                           -1, &upd, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "batch result");
        goto rollback;
    }
    sqlite3_bind_text(ins, 1, b->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 2, job_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 3, line, -1, SQLITE_STATIC);
    if (sqlite3_step(ins) != SQLITE_DONE) {
        r = db_fail(store->wdb, err, "batch result");
        goto rollback;
    }
    *inserted = sqlite3_changes(store->wdb) > 0;
    if (*inserted) {
        sqlite3_bind_text(upd, 1, b->status, -1, SQLITE_STATIC);
        sqlite3_bind_text(upd, 2, b->object, -1, SQLITE_STATIC);
        sqlite3_bind_text(upd, 3, b->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(upd, 4, b->tenant, -1, SQLITE_STATIC);
        if (sqlite3_step(upd) != SQLITE_DONE) {
            r = db_fail(store->wdb, err, "batch result");
            goto rollback;
        }
    }
    if (sqlite3_exec(store->wdb, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "batch result");
        goto rollback;
    }
    goto finalize;
rollback:
    *inserted = 0;
    sqlite3_exec(store->wdb, "ROLLBACK", NULL, NULL, NULL);
finalize:
    sqlite3_finalize(ins);
    sqlite3_finalize(upd);
cleanup_unlock:
    pthread_mutex_unlock(&store->wlock);
    return r;
}

kiln_store_result kiln_store_batch_results(kiln_store *store, const char *batch_id, int64_t after,
                                           int64_t limit,
                                           void (*fn)(int64_t seq, const char *line, void *arg),
                                           void *arg, kiln_error *err)
{
    kiln_store_result r = KILN_STORE_OK;
    pthread_mutex_lock(&store->wlock);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store->wdb,
                           "SELECT seq, line FROM batch_results WHERE batch_id = ? AND seq > ? "
                           "ORDER BY seq LIMIT ?",
                           -1, &st, NULL) != SQLITE_OK) {
        r = db_fail(store->wdb, err, "batch results");
        goto cleanup_unlock;
    }
    sqlite3_bind_text(st, 1, batch_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, after);
    sqlite3_bind_int64(st, 3, limit);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1), arg);
    if (rc != SQLITE_DONE)
        r = db_fail(store->wdb, err, "batch results");
    sqlite3_finalize(st);
cleanup_unlock:
    pthread_mutex_unlock(&store->wlock);
    return r;
}
