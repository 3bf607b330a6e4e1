/*
 * xlsx_xstring.h - cell text as SpreadsheetML stores it. Used by the xlsx
 * writer and by every other writer that makes a workbook through
 * libxlsxwriter (the workbooks embedded behind native charts,
 * artifacts/opc/opc_chart_workbook.c).
 */
#ifndef KILN_XLSX_XSTRING_H
#define KILN_XLSX_XSTRING_H

#include <stddef.h>

/*
 * SpreadsheetML decodes "_xHHHH_" in cell text (ECMA-376 Part 1, 22.4.2.4
 * ST_Xstring), so a literal "_x0041_" would show as "A". Returns s itself
 * when it holds no such sequence (the usual case, found with one memchr),
 * else a copy in *buf (grown as needed) with each one written as
 * "_x005F_xHHHH_". NULL when out of memory.
 */
const char *xlsx_xstring(const char *s, size_t len, char **buf, size_t *cap);

#endif
