/* arena.c - see arena.h. Chunks of at least 64 KiB, bump allocation. */
#include "arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "banned.h"

#define CHUNK_MIN (64u * 1024u)
#define ALIGN 16u

struct kiln_arena_chunk {
    kiln_arena_chunk *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    _Alignas(16) unsigned char data[];
};

void kiln_arena_init(kiln_arena *arena, uint64_t max_bytes)
{
    arena->head = NULL;
    arena->bytes = NULL;
    arena->used = 0;
    arena->max_bytes = max_bytes;
}

/* size bytes (a multiple of align) from the chunk list at *head. */
static void *take(kiln_arena *arena, kiln_arena_chunk **head, size_t size, size_t align)
{
    size_t rounded = (size + (align - 1)) & ~(size_t)(align - 1);
    if (rounded < size)
        return NULL;
    if (arena->max_bytes && arena->used + rounded > arena->max_bytes)
        return NULL;
    kiln_arena_chunk *c = *head;
    if (!c || c->size - c->used < rounded) {
        size_t want = rounded > CHUNK_MIN ? rounded : CHUNK_MIN;
        if (want > SIZE_MAX - sizeof *c)
            return NULL;
        c = malloc(sizeof *c + want);
        if (!c)
            return NULL;
        c->size = want;
        c->used = 0;
        c->next = *head;
        *head = c;
    }
    void *p = c->data + c->used;
    c->used += rounded;
    arena->used += rounded;
    return p;
}

void *kiln_arena_alloc(kiln_arena *arena, size_t size)
{
    void *p = take(arena, &arena->head, size, ALIGN);
    if (p)
        memset(p, 0, size);
    return p;
}

void *kiln_arena_calloc(kiln_arena *arena, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t total = n * size;
    return kiln_arena_alloc(arena, total > 0 ? total : 1);
}

/* Strings come from chunks of their own, packed byte by byte: a model of a
 * million short texts would otherwise spend a third of their room on
 * rounding each up to ALIGN. */
char *kiln_arena_strndup(kiln_arena *arena, const char *s, size_t len)
{
    if (len == SIZE_MAX)
        return NULL;
    char *p = take(arena, &arena->bytes, len + 1, 1);
    if (!p)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *kiln_arena_strdup(kiln_arena *arena, const char *s)
{
    return kiln_arena_strndup(arena, s, strlen(s));
}

char *kiln_arena_printf(kiln_arena *arena, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = kiln_arena_alloc(arena, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

static void free_chunks(kiln_arena_chunk *c)
{
    while (c) {
        kiln_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
}

void kiln_arena_release(kiln_arena *arena)
{
    free_chunks(arena->head);
    free_chunks(arena->bytes);
    arena->head = NULL;
    arena->bytes = NULL;
    arena->used = 0;
}
