/*
 * media_type.c - media types by extension (media_type.h): the formats Kiln
 * writes, and what jobs and users usually make or upload beside them.
 */
#include "media_type.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>
#include "banned.h"

static const struct {
    const char *ext;
    const char *type;
} media_types[] = {
    {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    {"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    {"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
    {"pdf", "application/pdf"},
    {"csv", "text/csv"},
    {"tsv", "text/tab-separated-values"},
    {"txt", "text/plain"},
    {"md", "text/markdown"},
    {"json", "application/json"},
    {"jsonl", "application/x-ndjson"},
    {"ndjson", "application/x-ndjson"},
    {"html", "text/html"},
    {"xml", "application/xml"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"svg", "image/svg+xml"},
    {"webp", "image/webp"},
    {"parquet", "application/vnd.apache.parquet"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"py", "text/x-python"},
    {"sh", "application/x-sh"},
    {"xls", "application/vnd.ms-excel"},
};

const char *kiln_media_type_guess(const char *name)
{
    if (!name)
        return NULL;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base || !dot[1])
        return NULL;
    for (size_t i = 0; i < sizeof media_types / sizeof media_types[0]; i++)
        if (strcasecmp(dot + 1, media_types[i].ext) == 0)
            return media_types[i].type;
    return NULL;
}

const char *kiln_media_type(const char *name)
{
    const char *type = kiln_media_type_guess(name);
    return type ? type : "application/octet-stream";
}
