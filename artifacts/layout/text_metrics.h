/*
 * text_metrics.h - Calibri's advance widths, for writers that must measure
 * text without a font file (docx column widths and TOC, pptx text fit).
 * Calibri is the default theme font; Carlito, which LibreOffice uses in its
 * place, has the same advance widths. Other letters are estimated: letters of
 * other alphabets as an average letter, CJK and emoji as one em.
 */
#ifndef KILN_TEXT_METRICS_H
#define KILN_TEXT_METRICS_H

#include <stdint.h>

#define KILN_METRIC_UNITS_PER_EM 2048.0
#define KILN_METRIC_OTHER_UNITS 1050 /* letters of other alphabets: about an average letter */
#define KILN_METRIC_WIDE_UNITS 2048  /* CJK, Hangul, full-width forms, emoji: one em */
/* Advance widths of ' ' .. '~' in 1/2048 em. */
extern const unsigned short kiln_calibri_regular[95];
extern const unsigned short kiln_calibri_bold[95];
/* 1 for a code point set one em wide (CJK, Hangul, full-width forms, emoji). */
int kiln_char_is_wide(uint32_t cp);

#endif
