/*
 * collect.c - the files a job left in its directory, found without ever
 * following a symlink or leaving the directory (exec_internal.h).
 *
 * Collecting output is an escape route (Judge0 had three CVEs for following
 * symlinks the job planted), so:
 *   - every open is openat2() relative to the job directory or to a
 *     directory already opened this way, with RESOLVE_BENEATH |
 *     RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV, which
 *     guards every component of the path, not just the last (O_NOFOLLOW);
 *   - O_NONBLOCK on every open, so a FIFO swapped in after the type check
 *     cannot block the supervisor; the type that counts is fstat() of the
 *     descriptor we then read, never a name looked up earlier;
 *   - sizes are checked against the caps from fstat() before a byte is read
 *     (a sparse file can claim a terabyte), and the bytes read must match
 *     that size exactly;
 *   - directory entries, depth, path length, file count, per-file and total
 *     bytes are all capped, and so is the list of refusals itself;
 *   - nothing vanishes at a cap: an entry is collected, or refused with a
 *     reason (listed, or counted once the list is full), or, past the cap
 *     on entries examined, counted as not examined, with the result saying
 *     the collection stopped early (kiln_collect_result.not_examined).
 * Hard links to host files cannot exist: the job directory is a tmpfs of
 * its own and link(2) across file systems fails with EXDEV. Hard links
 * between two files of the job are ordinary files and are collected.
 *
 * Everything wrong with the job's files is a refusal listed in the result;
 * only the runner's own failures (out of memory, out of descriptors, an out
 * directory it cannot write) are errors.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "common/media_type.h"
#include "common/output.h"
#include "exec/exec_internal.h"
#include "../common/banned.h"

#define RESOLVE_JOB \
    (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

/* Reasons, exactly as the result documents them. */
#define R_SYMLINK "symlink"
#define R_NOT_REGULAR "not a regular file"
#define R_FILE_BYTES "file over the per-file limit"
#define R_COUNT "over the file count limit"
#define R_TOTAL "over the total size limit"
#define R_DEPTH "too deep"
#define R_PATH_LONG "path too long"
#define R_NAME "name not UTF-8"
#define R_NAME_CONTROL "name with a control character"
#define R_UNREADABLE "unreadable"

/* The longest path a collected file may have, with its NUL: as
 * /mnt/data/NAME in the sandbox and as DIR/NAME in the output directory
 * (PATH_MAX, what open(2) takes). A longer name could not be opened by the
 * job or by whoever reads the output directory. */
#define KILN_COLLECT_PATH_MAX PATH_MAX

typedef struct collect_walk {
    kiln_collect_limits lim; /* with the defaults filled in */
    const char *out_dir;
    const char *const *skip;
    json_t *files;   /* owned */
    json_t *refused; /* owned */
    uint64_t refused_more;
    size_t capped_listed; /* entries of `refused` for a count or total cap */
    json_t *by_reason;    /* owned: {reason: every refusal of it, listed or not} */
    int cap_hit;
    uint32_t file_count;
    uint64_t total_bytes;
    uint32_t entries;      /* directory entries taken for examining so far */
    uint64_t not_examined; /* entries past max_entries, counted */
    char *stopped_in;      /* the first directory an entry was left unexamined in */
    size_t max_name;       /* the longest name (relative path) a file may have */
    kiln_error *err;
} collect_walk;

/* ---- names ------------------------------------------------------------- */

/*
 * Length of a well-formed UTF-8 sequence at s[0..n) (no overlong forms, no
 * surrogates, nothing past U+10FFFF), or 0 when it is not one.
 */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t need;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (need >= n)
        return 0;
    for (size_t k = 1; k <= need; k++) {
        unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
        if (s[k] < l || s[k] > h)
            return 0;
    }
    return need + 1;
}

/* A control character would let a name forge lines in whatever displays it:
 * C0, DEL, and C1 (U+0080..U+009F, encoded C2 80..C2 9F). */
static int is_control(const unsigned char *s, size_t len)
{
    return (len == 1 && (s[0] < 0x20 || s[0] == 0x7F)) ||
           (len == 2 && s[0] == 0xC2 && s[1] < 0xA0);
}

/* Why a name cannot be shown as it is, or NULL when it can. */
static const char *name_problem(const char *name)
{
    const unsigned char *s = (const unsigned char *)name;
    size_t n = strlen(name);
    const char *problem = NULL;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq_len(s + i, n - i);
        if (len == 0)
            return R_NAME;
        if (is_control(s + i, len))
            problem = R_NAME_CONTROL;
        i += len ? len : 1;
    }
    return problem;
}

/* A printable stand-in for a name that is not valid UTF-8: every bad byte
 * and control character becomes U+FFFD. malloc'd, NULL when out of memory. */
static char *name_display(const char *name)
{
    const unsigned char *s = (const unsigned char *)name;
    size_t n = strlen(name);
    char *out = malloc(n * 3 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq_len(s + i, n - i);
        if (len == 0 || is_control(s + i, len)) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += len ? len : 1;
        } else {
            memcpy(out + o, s + i, len);
            o += len;
            i += len;
        }
    }
    out[o] = '\0';
    return out;
}

/* "prefix/name", or name alone at the top. malloc'd. */
static char *path_join(const char *prefix, const char *name)
{
    size_t pl = prefix ? strlen(prefix) : 0, nl = strlen(name);
    char *p = malloc(pl + nl + 2);
    if (!p)
        return NULL;
    if (pl) {
        memcpy(p, prefix, pl);
        p[pl] = '/';
        memcpy(p + pl + 1, name, nl + 1);
    } else {
        memcpy(p, name, nl + 1);
    }
    return p;
}

/* ---- results ----------------------------------------------------------- */

static kiln_status no_memory(collect_walk *w)
{
    return kiln_error_set(w->err, KILN_E_NOMEM, NULL, "out of memory while collecting files");
}

/* Refusals for the count and total caps are alike by the thousand (a job
 * that writes 50,000 files): they give way in the list to any other, so a
 * file refused for its own size, a symlink or a bad name is always listed
 * while there is room for it, whatever came first. */
static int is_capped_reason(const char *reason)
{
    return reason && (strcmp(reason, R_COUNT) == 0 || strcmp(reason, R_TOTAL) == 0);
}

/* The index of the last listed refusal for a count or total cap. */
static size_t last_capped(const collect_walk *w)
{
    size_t i = json_array_size(w->refused);
    while (i-- > 0)
        if (is_capped_reason(
                json_string_value(json_object_get(json_array_get(w->refused, i), "reason"))))
            return i;
    return SIZE_MAX;
}

/* List a refusal (or count it once the list is full), and count it by its
 * reason either way. */
static kiln_status refuse(collect_walk *w, const char *name, const char *reason, int is_cap)
{
    if (is_cap)
        w->cap_hit = 1;
    json_t *n = json_object_get(w->by_reason, reason);
    if (json_object_set_new(w->by_reason, reason,
                            json_integer(n ? json_integer_value(n) + 1 : 1)) != 0)
        return no_memory(w);
    int capped = is_capped_reason(reason);
    if (json_array_size(w->refused) >= w->lim.max_refused) {
        if (capped || w->capped_listed == 0) {
            w->refused_more++;
            return KILN_E_OK;
        }
        /* A refusal of its own reason takes a capped one's place. */
        json_array_remove(w->refused, last_capped(w));
        w->capped_listed--;
        w->refused_more++;
    }
    json_t *item = json_pack("{s:s,s:s}", "name", name, "reason", reason);
    if (!item || json_array_append_new(w->refused, item) != 0)
        return no_memory(w);
    w->capped_listed += capped;
    return KILN_E_OK;
}

/* Refuse an entry whose own name is the problem; shows a repaired name. */
static kiln_status refuse_bad_name(collect_walk *w, const char *prefix, const char *name)
{
    char *shown = name_display(name);
    char *full = shown ? path_join(prefix, shown) : NULL;
    kiln_status st = full ? refuse(w, full, name_problem(name), 0) : no_memory(w);
    free(full);
    free(shown);
    return st;
}

/* openat2 as the file's comment describes; -1 with errno on failure. */
static int open_beneath(int dir_fd, const char *name, int directory)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (directory ? O_DIRECTORY : 0);
    how.resolve = RESOLVE_JOB;
    long fd;
    do
        fd = syscall(SYS_openat2, dir_fd, name, &how, sizeof how);
    while (fd < 0 && errno == EINTR);
    return (int)fd;
}

/*
 * An openat2 failure: a refusal for what the job made (a symlink, a
 * socket, a type swapped under us), an error for what is the runner's
 * (descriptors, memory, a kernel without openat2). Returns the status and
 * sets *reason when it is a refusal.
 */
static kiln_status open_failure(collect_walk *w, const char *path, int errnum,
                                const char **reason)
{
    switch (errnum) {
    case ELOOP:
        *reason = R_SYMLINK;
        return KILN_E_OK;
    case ENOTDIR:
    case ENXIO: /* a unix socket */
    case ENODEV:
        *reason = R_NOT_REGULAR;
        return KILN_E_OK;
    case ENOMEM:
        return no_memory(w);
    case EMFILE:
    case ENFILE:
    case ENOSYS:
        return kiln_error_set(w->err, KILN_E_INTERNAL, NULL,
                              "cannot open '%s' in the job directory: %s", path,
                              strerror(errnum));
    default:
        *reason = R_UNREADABLE;
        return KILN_E_OK;
    }
}

/* ---- copying ----------------------------------------------------------- */

/*
 * Open the directory rel's file goes in, below out_dir, making the missing
 * ones (mode 0755), and return it as *dir_fd. Every component is opened
 * with RESOLVE_NO_SYMLINKS: the copy runs as root, and a symlink someone
 * else planted in a shared output directory ("sub" -> /etc) must not
 * carry a job's "sub/passwd" out of it. Such a directory is an error of
 * the runner's environment (KILN_E_WRITE), not something the job did.
 */
static kiln_status open_out_parent(collect_walk *w, const char *rel, int *dir_fd)
{
    *dir_fd = -1;
    int fd = open(w->out_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return kiln_error_set(w->err, KILN_E_WRITE, NULL,
                              "cannot open the output directory '%s': %s", w->out_dir,
                              strerror(errno));
    char *copy = strdup(rel);
    if (!copy) {
        close(fd);
        return no_memory(w);
    }
    kiln_status st = KILN_E_OK;
    char *part = copy;
    for (char *slash = strchr(part, '/'); slash; part = slash + 1, slash = strchr(part, '/')) {
        *slash = '\0';
        if (mkdirat(fd, part, 0755) != 0 && errno != EEXIST) {
            st = kiln_error_set(w->err, KILN_E_WRITE, NULL,
                                "cannot create directory '%s' in '%s': %s", copy, w->out_dir,
                                strerror(errno));
            break;
        }
        struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                               .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                                          RESOLVE_NO_MAGICLINKS};
        int next = (int)syscall(SYS_openat2, fd, part, &how, sizeof how);
        if (next < 0) {
            int e = errno;
            st = kiln_error_set(w->err, KILN_E_WRITE, NULL,
                                "'%s' in the output directory '%s' is %s", copy, w->out_dir,
                                e == ELOOP || e == ENOTDIR ? "a symlink or not a directory; "
                                                             "nothing is written through it"
                                                           : strerror(e));
            break;
        }
        close(fd);
        fd = next;
        *slash = '/';
    }
    free(copy);
    if (st != KILN_E_OK) {
        close(fd);
        return st;
    }
    *dir_fd = fd;
    return KILN_E_OK;
}

/*
 * Read fd to its end, hashing and (when out is not NULL) copying. *got is
 * the number of bytes read; reading stops one byte past `expect`, enough to
 * know the file grew. Returns 0, or -1 when the file could not be read
 * (a refusal), or a kiln_status > 0 from the output (an error).
 */
static int read_hash_copy(int fd, uint64_t expect, struct sha256_ctx *md, kiln_output *out,
                          uint64_t *got, kiln_status *st, kiln_error *err)
{
    unsigned char buf[1 << 16];
    *got = 0;
    *st = KILN_E_OK;
    while (*got <= expect) {
        uint64_t left = expect + 1 - *got;
        size_t want = left < sizeof buf ? (size_t)left : sizeof buf;
        ssize_t n = read(fd, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        *got += (uint64_t)n;
        if (*got > expect)
            break; /* grew since fstat: refused, nothing more to copy */
        sha256_update(md, (size_t)n, buf);
        if (out) {
            *st = kiln_output_write(out, buf, (size_t)n, err);
            if (*st != KILN_E_OK)
                return 1;
        }
    }
    return 0;
}

static void hex_digest(const unsigned char *d, unsigned len, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < len; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[2 * len] = '\0';
}

/* An opened regular file: check the caps, then hash and copy it. */
static kiln_status take_file(collect_walk *w, int fd, const struct stat *sb, const char *rel)
{
    uint64_t size = (uint64_t)sb->st_size;
    if (size > w->lim.file_bytes)
        return refuse(w, rel, R_FILE_BYTES, 1);
    if (w->file_count >= w->lim.files)
        return refuse(w, rel, R_COUNT, 1);
    if (size > w->lim.total_bytes - w->total_bytes)
        return refuse(w, rel, R_TOTAL, 1);

    kiln_status st = KILN_E_OK;
    kiln_output out;
    int have_out = 0;
    char *target = NULL;
    if (w->out_dir) {
        int parent_fd;
        st = open_out_parent(w, rel, &parent_fd);
        if (st != KILN_E_OK)
            return st;
        /* The output goes through the directory just opened, by its
         * descriptor: no path is resolved again. */
        const char *base = strrchr(rel, '/');
        base = base ? base + 1 : rel;
        char fd_dir[32];
        snprintf(fd_dir, sizeof fd_dir, "/proc/self/fd/%d", parent_fd);
        target = path_join(fd_dir, base);
        if (!target) {
            close(parent_fd);
            return no_memory(w);
        }
        st = kiln_output_open(&out, target, w->lim.file_bytes, w->err);
        free(target);
        close(parent_fd);
        if (st != KILN_E_OK)
            return st;
        have_out = 1;
    }

    struct sha256_ctx md;
    sha256_init(&md);
    uint64_t got;
    int rc = read_hash_copy(fd, size, &md, have_out ? &out : NULL, &got, &st, w->err);
    if (rc > 0)
        goto out_abort;
    if (rc < 0 || got != size) {
        /* A read error, or the file changed size under us: what we would
         * list would not be what was there. */
        st = refuse(w, rel, R_UNREADABLE, 0);
        goto out_abort;
    }
    unsigned char digest[SHA256_DIGEST_SIZE];
    sha256_digest(&md, sizeof digest, digest);
    char hex[2 * SHA256_DIGEST_SIZE + 1];
    hex_digest(digest, sizeof digest, hex);
    if (have_out) {
        have_out = 0; /* commit frees it, whatever it returns */
        st = kiln_output_commit(&out, NULL, w->err);
        if (st != KILN_E_OK)
            goto out_abort;
    }
    json_t *item = json_pack("{s:s,s:I,s:s,s:s}", "name", rel, "bytes", (json_int_t)size,
                             "media_type", kiln_media_type(rel), "sha256", hex);
    if (!item || json_array_append_new(w->files, item) != 0) {
        st = no_memory(w);
        goto out_abort;
    }
    w->file_count++;
    w->total_bytes += size;

out_abort:
    if (have_out)
        kiln_output_abort(&out);
    return st;
}

/* ---- the walk ---------------------------------------------------------- */

/* A name read from a directory, with readdir's type for it (DT_UNKNOWN
 * where the file system does not say): enough to count what is below an
 * entry that is not examined, never to accept one. */
typedef struct entry_name {
    unsigned char type;
    char name[];
} entry_name;

static entry_name *entry_name_new(const char *name, unsigned char type)
{
    size_t n = strlen(name);
    entry_name *e = malloc(sizeof *e + n + 1);
    if (!e)
        return NULL;
    e->type = type;
    memcpy(e->name, name, n + 1);
    return e;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp((*(entry_name *const *)a)->name, (*(entry_name *const *)b)->name);
}

/*
 * The names a directory's walk keeps are the `budget` that sort first, in
 * a max-heap while the directory is read (the greatest kept name on top,
 * the first to give way), so which entries the cap on entries examined lets
 * through does not depend on the order readdir returns them in.
 */
static void heap_sift_down(entry_name **h, size_t n, size_t i)
{
    for (;;) {
        size_t big = i, l = 2 * i + 1, r = l + 1;
        if (l < n && strcmp(h[l]->name, h[big]->name) > 0)
            big = l;
        if (r < n && strcmp(h[r]->name, h[big]->name) > 0)
            big = r;
        if (big == i)
            return;
        entry_name *t = h[i];
        h[i] = h[big];
        h[big] = t;
        i = big;
    }
}

static void heap_push(entry_name **h, size_t n, entry_name *e)
{
    size_t i = n;
    h[i] = e;
    while (i > 0 && strcmp(h[(i - 1) / 2]->name, h[i]->name) < 0) {
        entry_name *t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static int skipped(const collect_walk *w, const char *name)
{
    for (const char *const *s = w->skip; s && *s; s++)
        if (strcmp(*s, name) == 0)
            return 1;
    return 0;
}

static kiln_status count_tree(collect_walk *w, int dir_fd, uint32_t depth);

/*
 * An entry of the directory dir_fd (at `depth`) that the cap on entries
 * examined leaves out: counted, with everything below it when it is a
 * directory (down to max_depth, as the walk would have gone), so the result
 * can say how much was not examined. Nothing is opened but directories,
 * openat2-guarded like every other open here, and nothing is read but
 * their names.
 */
static kiln_status not_examined(collect_walk *w, int dir_fd, const char *prefix, uint32_t depth,
                                const entry_name *e)
{
    w->not_examined++;
    w->cap_hit = 1;
    if (!w->stopped_in) {
        w->stopped_in = strdup(prefix ? prefix : ".");
        if (!w->stopped_in)
            return no_memory(w);
    }
    unsigned char type = e->type;
    if (type == DT_UNKNOWN) {
        struct stat sb;
        if (fstatat(dir_fd, e->name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            return KILN_E_OK;
        type = S_ISDIR(sb.st_mode) ? DT_DIR : DT_REG;
    }
    if (type != DT_DIR || depth + 1 > w->lim.max_depth)
        return KILN_E_OK;
    int fd = open_beneath(dir_fd, e->name, 1);
    if (fd < 0)
        return errno == ENOMEM ? no_memory(w) : KILN_E_OK; /* a symlink, gone: one entry */
    return count_tree(w, fd, depth + 1);                   /* takes fd */
}

/* Count every entry below a directory not examined. Takes dir_fd. */
static kiln_status count_tree(collect_walk *w, int dir_fd, uint32_t depth)
{
    DIR *d = fdopendir(dir_fd);
    if (!d) {
        int saved = errno;
        close(dir_fd);
        return saved == ENOMEM ? no_memory(w) : KILN_E_OK;
    }
    kiln_status st = KILN_E_OK;
    union {
        entry_name e;
        char room[sizeof(entry_name) + NAME_MAX + 1];
    } u;
    while (st == KILN_E_OK) {
        struct dirent *de = readdir(d);
        if (!de)
            break;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        u.e.type = de->d_type;
        snprintf(u.e.name, NAME_MAX + 1, "%s", de->d_name);
        st = not_examined(w, dirfd(d), NULL, depth, &u.e);
    }
    closedir(d);
    return st;
}

static kiln_status walk_dir(collect_walk *w, int dir_fd, const char *prefix, uint32_t depth);

/* One directory entry: refuse it, take it, or walk into it. */
static kiln_status walk_entry(collect_walk *w, int dir_fd, const char *prefix, uint32_t depth,
                              const char *name)
{
    if (name_problem(name))
        return refuse_bad_name(w, prefix, name);
    char *rel = path_join(prefix, name);
    if (!rel)
        return no_memory(w);
    kiln_status st = KILN_E_OK;

    /* The type from the directory is a hint: enough to refuse without
     * opening (a device is never opened), never enough to accept. */
    struct stat hint;
    if (fstatat(dir_fd, name, &hint, AT_SYMLINK_NOFOLLOW) != 0) {
        st = errno == ENOENT ? KILN_E_OK : refuse(w, rel, R_UNREADABLE, 0);
        goto rel_free;
    }
    if (S_ISLNK(hint.st_mode)) {
        st = refuse(w, rel, R_SYMLINK, 0);
        goto rel_free;
    }
    if (!S_ISREG(hint.st_mode) && !S_ISDIR(hint.st_mode)) {
        st = refuse(w, rel, R_NOT_REGULAR, 0);
        goto rel_free;
    }
    int is_dir = S_ISDIR(hint.st_mode);
    if (is_dir && depth + 1 > w->lim.max_depth) {
        st = refuse(w, rel, R_DEPTH, 0);
        goto rel_free;
    }
    /* A file's name must fit the limit; a directory's must leave room for
     * at least "/x" below it, else nothing in it could be collected. */
    if (strlen(rel) + (is_dir ? 2 : 0) > w->max_name) {
        st = refuse(w, rel, R_PATH_LONG, 0);
        goto rel_free;
    }

    int fd = open_beneath(dir_fd, name, is_dir);
    if (fd < 0) {
        const char *reason = NULL;
        if (errno == ENOENT)
            goto rel_free; /* gone since readdir: nothing to list */
        int errnum = errno;
        /* O_DIRECTORY on a symlink fails with ENOTDIR before
         * RESOLVE_NO_SYMLINKS can say ELOOP: name the real reason. */
        char c;
        if (errnum == ENOTDIR && readlinkat(dir_fd, name, &c, 1) >= 0)
            errnum = ELOOP;
        st = open_failure(w, rel, errnum, &reason);
        if (st == KILN_E_OK)
            st = refuse(w, rel, reason, 0);
        goto rel_free;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = refuse(w, rel, R_UNREADABLE, 0);
        goto fd_close;
    }
    if (is_dir && S_ISDIR(sb.st_mode)) {
        st = walk_dir(w, fd, rel, depth + 1); /* takes fd */
        goto rel_free;
    }
    if (!is_dir && S_ISREG(sb.st_mode))
        st = take_file(w, fd, &sb, rel);
    else
        st = refuse(w, rel, R_NOT_REGULAR, 0); /* swapped since the hint */

fd_close:
    close(fd);
rel_free:
    free(rel);
    return st;
}

/*
 * Read a directory's names, keep those the cap on entries examined leaves
 * room for (max_entries in all; a directory's own entries are counted
 * against it before those of its subdirectories, so the files at the top,
 * where a job's results usually are, come first), sort them so the walk
 * and so which files a cap lets through are the same every time, and take
 * each. Entries beyond the cap are counted (not_examined). Takes ownership
 * of dir_fd. prefix is NULL at the top.
 */
static kiln_status walk_dir(collect_walk *w, int dir_fd, const char *prefix, uint32_t depth)
{
    kiln_status st = KILN_E_OK;
    entry_name **names = NULL;
    size_t count = 0, cap = 0;
    size_t budget = w->lim.max_entries - w->entries;
    DIR *d = fdopendir(dir_fd);
    if (!d) {
        int saved = errno;
        close(dir_fd);
        if (saved == ENOMEM)
            return no_memory(w);
        return refuse(w, prefix ? prefix : ".", R_UNREADABLE, 0);
    }
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno != 0)
                st = refuse(w, prefix ? prefix : ".", R_UNREADABLE, 0);
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (!prefix && skipped(w, de->d_name))
            continue;
        entry_name *e = entry_name_new(de->d_name, de->d_type);
        if (!e) {
            st = no_memory(w);
            goto names_free;
        }
        if (count == budget) {
            /* Full: the greater of this name and the greatest kept one
             * is left out. */
            if (count > 0 && strcmp(e->name, names[0]->name) < 0) {
                entry_name *out = names[0];
                names[0] = e;
                heap_sift_down(names, count, 0);
                e = out;
            }
            st = not_examined(w, dirfd(d), prefix, depth, e);
            free(e);
            if (st != KILN_E_OK)
                goto names_free;
            continue;
        }
        if (count == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            if (ncap > budget)
                ncap = budget;
            entry_name **grown = realloc(names, ncap * sizeof *names);
            if (!grown) {
                free(e);
                st = no_memory(w);
                goto names_free;
            }
            names = grown;
            cap = ncap;
        }
        heap_push(names, count, e);
        count++;
    }
    if (st != KILN_E_OK)
        goto names_free;
    w->entries += (uint32_t)count;
    if (count > 1)
        qsort(names, count, sizeof *names, entry_cmp);
    /* A directory's own entries before its subdirectories' (readdir's type,
     * a hint that only orders: each entry is judged by what it opens as),
     * so the files at the top of /mnt/data are the first the caps meet. */
    for (int dirs = 0; dirs < 2; dirs++)
        for (size_t i = 0; i < count && st == KILN_E_OK; i++)
            if ((names[i]->type == DT_DIR) == dirs)
                st = walk_entry(w, dirfd(d), prefix, depth, names[i]->name);

names_free:
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return st;
}

static int by_name(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    return strcmp(json_string_value(json_object_get(x, "name")),
                  json_string_value(json_object_get(y, "name")));
}

/* Sort an array of {"name": ...} objects by name, in place. */
static kiln_status sort_by_name(collect_walk *w, json_t *array)
{
    size_t n = json_array_size(array);
    if (n < 2)
        return KILN_E_OK;
    json_t **items = malloc(n * sizeof *items);
    if (!items)
        return no_memory(w);
    for (size_t i = 0; i < n; i++)
        items[i] = json_incref(json_array_get(array, i));
    qsort(items, n, sizeof *items, by_name);
    json_array_clear(array);
    kiln_status st = KILN_E_OK;
    for (size_t i = 0; i < n; i++)
        if (json_array_append_new(array, items[i]) != 0 && st == KILN_E_OK)
            st = no_memory(w);
    free(items);
    return st;
}

kiln_status kiln_collect(int job_dir_fd, const char *out_dir, const kiln_collect_limits *limits,
                         const char *const *skip, kiln_collect_result *res, kiln_error *err)
{
    collect_walk w;
    memset(&w, 0, sizeof w);
    memset(res, 0, sizeof *res);
    if (limits)
        w.lim = *limits;
    if (!w.lim.files)
        w.lim.files = 100;
    if (!w.lim.file_bytes)
        w.lim.file_bytes = 30ull << 20;
    if (!w.lim.total_bytes)
        w.lim.total_bytes = 100ull << 20;
    if (!w.lim.max_depth)
        w.lim.max_depth = 16;
    if (!w.lim.max_entries)
        w.lim.max_entries = 10000;
    if (!w.lim.max_refused)
        w.lim.max_refused = 100;
    w.out_dir = out_dir;
    w.skip = skip;
    w.err = err;
    /* base + "/" + name + NUL must fit, where base is the longer of the
     * sandbox's job directory and the output directory. */
    size_t base = strlen(KILN_JOB_DIR);
    if (out_dir && strlen(out_dir) > base)
        base = strlen(out_dir);
    w.max_name = base + 2 < KILN_COLLECT_PATH_MAX ? KILN_COLLECT_PATH_MAX - base - 2 : 0;

    kiln_status st;
    w.files = json_array();
    w.refused = json_array();
    w.by_reason = json_object();
    if (!w.files || !w.refused || !w.by_reason) {
        st = no_memory(&w);
        goto arrays_free;
    }
    /* job_dir_fd is O_PATH, which readdir cannot use: open the directory
     * itself for reading, the same guarded way as everything under it. */
    int top = open_beneath(job_dir_fd, ".", 1);
    if (top < 0) {
        st = kiln_error_set(err, KILN_E_INTERNAL, NULL, "cannot open the job directory: %s",
                            strerror(errno));
        goto arrays_free;
    }
    st = walk_dir(&w, top, NULL, 0);
    if (st == KILN_E_OK)
        st = sort_by_name(&w, w.files);
    if (st == KILN_E_OK)
        st = sort_by_name(&w, w.refused);
    if (st != KILN_E_OK)
        goto arrays_free;
    res->files = w.files; /* new references, handed to the caller */
    res->refused = w.refused;
    res->refused_by_reason = w.by_reason;
    /* Entries not examined are refused entries not listed. */
    res->refused_more = w.refused_more + w.not_examined;
    res->cap_hit = w.cap_hit;
    res->not_examined = w.not_examined;
    res->max_entries = w.lim.max_entries;
    res->stopped_in = w.stopped_in;
    return KILN_E_OK;

arrays_free:
    json_decref(w.files);
    json_decref(w.refused);
    json_decref(w.by_reason);
    free(w.stopped_in);
    return st;
}

void kiln_collect_result_release(kiln_collect_result *res)
{
    json_decref(res->files);
    json_decref(res->refused);
    json_decref(res->refused_by_reason);
    free(res->stopped_in);
    memset(res, 0, sizeof *res);
}
