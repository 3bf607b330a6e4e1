/*
 * text_metrics.c - the font metrics the Office writers measure text with:
 * the docx and pptx tables' column widths and row heights (through
 * table_layout.h's kiln_calibri_metrics), the TOC's page estimate to break
 * lines (docx_toc.c), the pptx writer to fit text into placeholders
 * (pptx_text.c). No font file is read at render time; Calibri is
 * the default theme font, and Carlito, which LibreOffice uses in its place,
 * has the same advance widths (these numbers were read from Carlito).
 */
#include "text_metrics.h"
#include "../../common/banned.h"

/* Calibri's advance widths in 1/2048 em for ' ' .. '~' (Carlito's, which
 * are the same). */
const unsigned short kiln_calibri_regular[95] = {
    463,  667,  821,  1020, 1038, 1464, 1397, 452,  621,  621,  1020, 1020, 511,  627,
    517,  791,  1038, 1038, 1038, 1038, 1038, 1038, 1038, 1038, 1038, 1038, 548,  548,
    1020, 1020, 1020, 949,  1831, 1185, 1114, 1092, 1260, 1000, 941,  1292, 1276, 516,
    653,  1064, 861,  1751, 1322, 1356, 1058, 1378, 1112, 941,  998,  1314, 1162, 1822,
    1063, 998,  959,  628,  791,  628,  1020, 1020, 596,  981,  1076, 866,  1076, 1019,
    625,  964,  1076, 470,  490,  931,  470,  1636, 1076, 1080, 1076, 1076, 714,  801,
    686,  1076, 925,  1464, 887,  927,  809,  644,  943,  644,  1020,
};
const unsigned short kiln_calibri_bold[95] = {
    463,  667,  898,  1020, 1038, 1493, 1443, 478,  638,  638,  1020, 1020, 528,  627,
    547,  880,  1038, 1038, 1038, 1038, 1038, 1038, 1038, 1038, 1038, 1038, 565,  565,
    1020, 1020, 1020, 949,  1840, 1241, 1148, 1084, 1291, 999,  940,  1305, 1292, 546,
    678,  1120, 866,  1790, 1349, 1385, 1090, 1405, 1153, 968,  1014, 1337, 1211, 1856,
    1128, 1064, 979,  665,  880,  665,  1020, 1020, 615,  1011, 1099, 857,  1099, 1031,
    648,  971,  1099, 503,  523,  983,  503,  1666, 1099, 1101, 1099, 1099, 728,  817,
    710,  1099, 969,  1526, 941,  970,  814,  704,  973,  704,  1020,
};

int kiln_char_is_wide(uint32_t cp)
{
    return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
           (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
           (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
           (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1FAFF) ||
           (cp >= 0x20000 && cp <= 0x3FFFD);
}
