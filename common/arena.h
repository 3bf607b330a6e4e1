/*
 * arena.h - one allocation lifetime for a whole document model.
 *
 * The parsed spec is a tree of many small objects that all die together, so
 * they come from an arena: no per-object free, no ownership questions inside
 * the model, and a parse that fails half-way frees everything with one call.
 * The arena has a ceiling (like every growing buffer in Kiln) so a hostile
 * spec cannot make the model itself exhaust memory.
 */
#ifndef KILN_ARENA_H
#define KILN_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct kiln_arena_chunk kiln_arena_chunk;

typedef struct kiln_arena {
    kiln_arena_chunk *head;
    kiln_arena_chunk *bytes; /* strings, packed without alignment */
    uint64_t used;           /* bytes handed out, for the ceiling */
    uint64_t max_bytes;      /* 0 = no ceiling */
} kiln_arena;

void kiln_arena_init(kiln_arena *arena, uint64_t max_bytes);
/* Zeroed memory, aligned for any type; NULL when out of memory or over the ceiling. */
void *kiln_arena_alloc(kiln_arena *arena, size_t size);
/* n zeroed elements of size bytes, overflow-checked. */
void *kiln_arena_calloc(kiln_arena *arena, size_t n, size_t size);
/* Copies of strings (NUL-terminated result, not aligned). */
char *kiln_arena_strdup(kiln_arena *arena, const char *s);
char *kiln_arena_strndup(kiln_arena *arena, const char *s, size_t len);
char *kiln_arena_printf(kiln_arena *arena, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Free every allocation at once; the arena can be used again afterwards. */
void kiln_arena_release(kiln_arena *arena);

#endif
