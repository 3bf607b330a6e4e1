/* version.h - Kiln's version, reported by `kiln --version` and the API. */
#ifndef KILN_VERSION_H
#define KILN_VERSION_H
#define KILN_VERSION "0.1.0"
#endif
