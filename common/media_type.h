/*
 * media_type.h - a file's media type from its name's extension.
 *
 * One table for every place Kiln names a type: the files a sandboxed job
 * leaves (exec/collect.c) and the service's uploads and downloads
 * (service/), so the same file never gets two types.
 */
#ifndef KILN_MEDIA_TYPE_H
#define KILN_MEDIA_TYPE_H

/* The type of name's extension (case-insensitive; the last path
 * component's, and ".csv" alone is a hidden file, not a CSV), or NULL when
 * the table has none. */
const char *kiln_media_type_guess(const char *name);

/* kiln_media_type_guess, or "application/octet-stream". */
const char *kiln_media_type(const char *name);

#endif
