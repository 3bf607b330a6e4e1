/*
 * test_numfmt.c - values shown as Excel shows them under number formats
 * (artifacts/layout/numfmt.c), for the docx, pdf and pptx tables.
 *
 * lo_cases were checked against LibreOffice 7.4 (an .xlsx written with
 * openpyxl, converted to CSV with the formatted text), keeping the cases
 * where LibreOffice and Excel agree. excel_cases are where LibreOffice
 * differs from Excel and the expected text is Excel's: the 1900 leap-year
 * bug (serial 60 is 1900-02-29, serial 0 is 1900-01-00), "-0" for small
 * negatives, "5." under "#.##", times rounded to the second, General's
 * 11-character display, rounding on 15 significant digits, and the
 * fraction Excel picks (a convergent, not the closest fraction).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "artifacts/layout/numfmt.h"
#include "test_util.h"
#include "common/banned.h"

typedef struct fmt_case {
    double value;
    const char *format;
    const char *expected;
} fmt_case;

static const fmt_case lo_cases[] = {
    {2.675, "0.00", "2.68"},
    {1234.5, "#,##0.00", "1,234.50"},
    {-1234.5, "$#,##0.00", "-$1,234.50"},
    {0.125, "0.0%", "12.5%"},
    {-5.0, "[>=100]0;0", "5"},
    {-5.0, "[<0]\"neg\"0;0", "neg5"},
    {-5.0, "[<=-100]0;[>=100]0;0", "5"},
    {5.0, "[>100]0", "5"},
    {-5.0, "[=1]\"one\";0", "5"},
    {123456789012.0, "General", "123456789012"},
    {12345.0, "00.00E+00", "01.23E+04"},
    {12345.0, "##0.0E+0", "12.3E+3"},
    {123456789.0, "000-00-0000", "123-45-6789"},
    {0.5, "#.##", ".5"},
    {45000.5, "yyyy-mm-dd hh:mm", "2023-03-15 12:00"},
    {1.5, "[h]:mm:ss", "36:00:00"},
    {0.75, "h:mm AM/PM", "6:00 PM"},
    {0.0, "#,##0", "0"},
    {-1.0, "#,##0", "-1"},
    {-1234.5678, "#,##0", "-1,235"},
    {2.675, "#,##0", "3"},
    {999.995, "#,##0", "1,000"},
    {0.0, "#,##0.00", "0.00"},
    {0.5, "#,##0.00", "0.50"},
    {1234567.891, "#,##0.00", "1,234,567.89"},
    {1.005, "#,##0.00", "1.01"},
    {999.995, "#,##0.00", "1,000.00"},
    {0.0, "$#,##0.00", "$0.00"},
    {0.5, "$#,##0.00", "$0.50"},
    {1234567.891, "$#,##0.00", "$1,234,567.89"},
    {1.005, "$#,##0.00", "$1.01"},
    {999.995, "$#,##0.00", "$1,000.00"},
    {0.0, "0.0%", "0.0%"},
    {0.5, "0.0%", "50.0%"},
    {1234567.891, "0.0%", "123456789.1%"},
    {1.005, "0.0%", "100.5%"},
    {999.995, "0.0%", "99999.5%"},
    {0.0, "0", "0"},
    {0.5, "0", "1"},
    {1234567.891, "0", "1234568"},
    {1.005, "0", "1"},
    {12345678901.0, "0", "12345678901"},
    {1.0, "0.00", "1.00"},
    {1234.5678, "0.00", "1234.57"},
    {0.001234, "0.00", "0.00"},
    {0.125, "0.00", "0.13"},
    {12345678901.0, "0.00", "12345678901.00"},
    {0.0, "0.000", "0.000"},
    {1.0, "0.000", "1.000"},
    {1234.5678, "0.000", "1234.568"},
    {0.001234, "0.000", "0.001"},
    {0.125, "0.000", "0.125"},
    {12345678901.0, "0.000", "12345678901.000"},
    {0.0, "#,##0.0", "0.0"},
    {1.0, "#,##0.0", "1.0"},
    {1234.5678, "#,##0.0", "1,234.6"},
    {0.001234, "#,##0.0", "0.0"},
    {0.125, "#,##0.0", "0.1"},
    {12345678901.0, "#,##0.0", "12,345,678,901.0"},
    {0.0, "0%", "0%"},
    {1.0, "0%", "100%"},
    {1234.5678, "0%", "123457%"},
    {0.001234, "0%", "0%"},
    {-0.125, "0%", "-13%"},
    {5551234567.0, "0%", "555123456700%"},
    {0.0, "0.00%", "0.00%"},
    {-1.0, "0.00%", "-100.00%"},
    {-1234.5678, "0.00%", "-123456.78%"},
    {2.675, "0.00%", "267.50%"},
    {-0.125, "0.00%", "-12.50%"},
    {5551234567.0, "0.00%", "555123456700.00%"},
    {0.0, "#,##0,", "0"},
    {0.5, "#,##0,", "0"},
    {1234567.891, "#,##0,", "1,235"},
    {1.005, "#,##0,", "0"},
    {12345678901.0, "#,##0,", "12,345,679"},
    {0.0, "#,##0,,\"M\"", "0M"},
    {1.0, "#,##0,,\"M\"", "0M"},
    {1234567.891, "#,##0,,\"M\"", "1M"},
    {1.005, "#,##0,,\"M\"", "0M"},
    {12345678901.0, "#,##0,,\"M\"", "12,346M"},
    {0.0, "0.0,,", "0.0"},
    {1.0, "0.0,,", "0.0"},
    {1234567.891, "0.0,,", "1.2"},
    {1.005, "0.0,,", "0.0"},
    {12345678901.0, "0.0,,", "12345.7"},
    {0.0, "$#,##0_);($#,##0)", "$0 "},
    {1.0, "$#,##0_);($#,##0)", "$1 "},
    {1234.5678, "$#,##0_);($#,##0)", "$1,235 "},
    {0.001234, "$#,##0_);($#,##0)", "$0 "},
    {0.125, "$#,##0_);($#,##0)", "$0 "},
    {12345678901.0, "$#,##0_);($#,##0)", "$12,345,678,901 "},
    {0.0, "$#,##0.00_);[Red]($#,##0.00)", "$0.00 "},
    {1.0, "$#,##0.00_);[Red]($#,##0.00)", "$1.00 "},
    {1234.5678, "$#,##0.00_);[Red]($#,##0.00)", "$1,234.57 "},
    {0.001234, "$#,##0.00_);[Red]($#,##0.00)", "$0.00 "},
    {0.125, "$#,##0.00_);[Red]($#,##0.00)", "$0.13 "},
    {12345678901.0, "$#,##0.00_);[Red]($#,##0.00)", "$12,345,678,901.00 "},
    {0.0, "#,##0;[Red]-#,##0", "0"},
    {1.0, "#,##0;[Red]-#,##0", "1"},
    {1234.5678, "#,##0;[Red]-#,##0", "1,235"},
    {0.001234, "#,##0;[Red]-#,##0", "0"},
    {0.125, "#,##0;[Red]-#,##0", "0"},
    {12345678901.0, "#,##0;[Red]-#,##0", "12,345,678,901"},
    {0.0, "0.00E+00", "0.00E+00"},
    {1.0, "0.00E+00", "1.00E+00"},
    {1234.5678, "0.00E+00", "1.23E+03"},
    {0.001234, "0.00E+00", "1.23E-03"},
    {0.125, "0.00E+00", "1.25E-01"},
    {12345678901.0, "0.00E+00", "1.23E+10"},
    {0.0, "0.0E+0", "0.0E+0"},
    {1.0, "0.0E+0", "1.0E+0"},
    {1234.5678, "0.0E+0", "1.2E+3"},
    {0.001234, "0.0E+0", "1.2E-3"},
    {0.125, "0.0E+0", "1.3E-1"},
    {12345678901.0, "0.0E+0", "1.2E+10"},
    {1.0, "##0.0E+0", "1.0E+0"},
    {1234.5678, "##0.0E+0", "1.2E+3"},
    {0.001234, "##0.0E+0", "1.2E-3"},
    {0.125, "##0.0E+0", "125.0E-3"},
    {12345678901.0, "##0.0E+0", "12.3E+9"},
    {1234.5678, "#.##", "1234.57"},
    {2.675, "#.##", "2.68"},
    {-0.125, "#.##", "-.13"},
    {0.5, "0.#", "0.5"},
    {-1234.5678, "0.#", "-1234.6"},
    {0.125, "0.#", "0.1"},
    {0.0, "#,###", ""},
    {1.0, "#,###", "1"},
    {1234.5678, "#,###", "1,235"},
    {0.001234, "#,###", ""},
    {0.125, "#,###", ""},
    {5551234567.0, "#,###", "5,551,234,567"},
    {0.0, "[$€-407]#,##0.00", "€0.00"},
    {-1.0, "[$€-407]#,##0.00", "-€1.00"},
    {-1234.5678, "[$€-407]#,##0.00", "-€1,234.57"},
    {2.675, "[$€-407]#,##0.00", "€2.68"},
    {-0.125, "[$€-407]#,##0.00", "-€0.13"},
    {5551234567.0, "[$€-407]#,##0.00", "€5,551,234,567.00"},
    {0.0, "[$$-409]#,##0.00", "$0.00"},
    {-1.0, "[$$-409]#,##0.00", "-$1.00"},
    {-1234.5678, "[$$-409]#,##0.00", "-$1,234.57"},
    {2.675, "[$$-409]#,##0.00", "$2.68"},
    {-0.125, "[$$-409]#,##0.00", "-$0.13"},
    {5551234567.0, "[$$-409]#,##0.00", "$5,551,234,567.00"},
    {0.0, "\"USD \"#,##0", "USD 0"},
    {-1.0, "\"USD \"#,##0", "-USD 1"},
    {-1234.5678, "\"USD \"#,##0", "-USD 1,235"},
    {2.675, "\"USD \"#,##0", "USD 3"},
    {999.995, "\"USD \"#,##0", "USD 1,000"},
    {0.0, "#,##0\" units\"", "0 units"},
    {0.5, "#,##0\" units\"", "1 units"},
    {1234567.891, "#,##0\" units\"", "1,234,568 units"},
    {1.005, "#,##0\" units\"", "1 units"},
    {12345678901.0, "#,##0\" units\"", "12,345,678,901 units"},
    {0.0, "0.00\\x", "0.00x"},
    {1.0, "0.00\\x", "1.00x"},
    {1234.5678, "0.00\\x", "1234.57x"},
    {0.001234, "0.00\\x", "0.00x"},
    {0.125, "0.00\\x", "0.13x"},
    {12345678901.0, "0.00\\x", "12345678901.00x"},
    {0.0, "?.??", " .  "},
    {1.0, "?.??", "1.  "},
    {1234.5678, "?.??", "1234.57"},
    {0.001234, "?.??", " .  "},
    {0.125, "?.??", " .13"},
    {12345678901.0, "?.??", "12345678901.  "},
    {0.0, "#,##0.00;(#,##0.00);\"-\"", "-"},
    {1.0, "#,##0.00;(#,##0.00);\"-\"", "1.00"},
    {1234.5678, "#,##0.00;(#,##0.00);\"-\"", "1,234.57"},
    {0.001234, "#,##0.00;(#,##0.00);\"-\"", "0.00"},
    {0.125, "#,##0.00;(#,##0.00);\"-\"", "0.13"},
    {12345678901.0, "#,##0.00;(#,##0.00);\"-\"", "12,345,678,901.00"},
    {0.0, "0;-0;\"zero\"", "zero"},
    {1.0, "0;-0;\"zero\"", "1"},
    {1234.5678, "0;-0;\"zero\"", "1235"},
    {0.001234, "0;-0;\"zero\"", "0"},
    {0.125, "0;-0;\"zero\"", "0"},
    {12345678901.0, "0;-0;\"zero\"", "12345678901"},
    {0.0, "00000", "00000"},
    {1.0, "00000", "00001"},
    {1234.5678, "00000", "01235"},
    {0.001234, "00000", "00000"},
    {0.125, "00000", "00000"},
    {5551234567.0, "00000", "5551234567"},
    {0.0, "(###) ###-####", "() -"},
    {-1.0, "(###) ###-####", "-() -1"},
    {-1234.5678, "(###) ###-####", "-() -1235"},
    {2.675, "(###) ###-####", "() -3"},
    {999.995, "(###) ###-####", "() -1000"},
    {0.0, "#,##0.00 [$€-1]", "0.00 €"},
    {0.5, "#,##0.00 [$€-1]", "0.50 €"},
    {1234567.891, "#,##0.00 [$€-1]", "1,234,567.89 €"},
    {1.005, "#,##0.00 [$€-1]", "1.01 €"},
    {999.995, "#,##0.00 [$€-1]", "1,000.00 €"},
    {0.0, "0.000%", "0.000%"},
    {0.5, "0.000%", "50.000%"},
    {1234567.891, "0.000%", "123456789.100%"},
    {1.005, "0.000%", "100.500%"},
    {999.995, "0.000%", "99999.500%"},
    {0.0, "# ##0", " 0"},
    {0.5, "# ##0", " 1"},
    {1234567.891, "# ##0", "1234 568"},
    {1.005, "# ##0", " 1"},
    {12345678901.0, "# ##0", "12345678 901"},
    {0.0, "0.00;-0.00;0.00;@", "0.00"},
    {1.0, "0.00;-0.00;0.00;@", "1.00"},
    {1234.5678, "0.00;-0.00;0.00;@", "1234.57"},
    {0.001234, "0.00;-0.00;0.00;@", "0.00"},
    {0.125, "0.00;-0.00;0.00;@", "0.13"},
    {12345678901.0, "0.00;-0.00;0.00;@", "12345678901.00"},
    {61.0, "yyyy-mm-dd", "1900-03-01"},
    {45000.0, "yyyy-mm-dd", "2023-03-15"},
    {45678.123456, "yyyy-mm-dd", "2025-01-21"},
    {100.75, "yyyy-mm-dd", "1900-04-09"},
    {45000.0, "yyyy-mm-dd hh:mm", "2023-03-15 00:00"},
    {45678.123456, "yyyy-mm-dd hh:mm", "2025-01-21 02:57"},
    {100.75, "yyyy-mm-dd hh:mm", "1900-04-09 18:00"},
    {61.0, "m/d/yyyy", "3/1/1900"},
    {45000.0, "m/d/yyyy", "3/15/2023"},
    {45678.123456, "m/d/yyyy", "1/21/2025"},
    {100.75, "m/d/yyyy", "4/9/1900"},
    {61.0, "d-mmm-yy", "1-Mar-00"},
    {45000.0, "d-mmm-yy", "15-Mar-23"},
    {45678.123456, "d-mmm-yy", "21-Jan-25"},
    {100.75, "d-mmm-yy", "9-Apr-00"},
    {61.0, "dddd, mmmm d, yyyy", "Thursday, March 1, 1900"},
    {45000.0, "dddd, mmmm d, yyyy", "Wednesday, March 15, 2023"},
    {45678.123456, "dddd, mmmm d, yyyy", "Tuesday, January 21, 2025"},
    {100.75, "dddd, mmmm d, yyyy", "Monday, April 9, 1900"},
    {61.0, "mmm yyyy", "Mar 1900"},
    {45000.0, "mmm yyyy", "Mar 2023"},
    {45678.123456, "mmm yyyy", "Jan 2025"},
    {100.75, "mmm yyyy", "Apr 1900"},
    {61.0, "hh:mm:ss", "00:00:00"},
    {45000.0, "hh:mm:ss", "00:00:00"},
    {36526.25, "hh:mm:ss", "06:00:00"},
    {44197.0000057, "hh:mm:ss", "00:00:00"},
    {45000.999994, "h:mm AM/PM", "11:59 PM"},
    {2958465.999, "h:mm AM/PM", "11:58 PM"},
    {1.5, "h:mm AM/PM", "12:00 PM"},
    {61.0, "h:mm:ss a/p", "12:00:00 a"},
    {45000.0, "h:mm:ss a/p", "12:00:00 a"},
    {36526.25, "h:mm:ss a/p", "6:00:00 a"},
    {44197.0000057, "h:mm:ss a/p", "12:00:00 a"},
    {61.0, "[h]:mm", "1464:00"},
    {45000.999994, "[h]:mm", "1080023:59"},
    {36526.25, "[h]:mm", "876630:00"},
    {0.3333333, "[h]:mm", "8:00"},
    {61.0, "[mm]:ss", "87840:00"},
    {45000.0, "[mm]:ss", "64800000:00"},
    {45678.123456, "[mm]:ss", "65776497:47"},
    {1.5, "[mm]:ss", "2160:00"},
    {61.0, "mm:ss.0", "00:00.0"},
    {45000.5, "mm:ss.0", "00:00.0"},
    {36526.25, "mm:ss.0", "00:00.0"},
    {44197.0000057, "mm:ss.0", "00:00.5"},
    {61.0, "hh:mm:ss.000", "00:00:00.000"},
    {45000.999994, "hh:mm:ss.000", "23:59:59.482"},
    {2958465.999, "hh:mm:ss.000", "23:58:33.600"},
    {1.5, "hh:mm:ss.000", "12:00:00.000"},
    {61.0, "yy", "00"},
    {45000.5, "yy", "23"},
    {36526.25, "yy", "00"},
    {61.0, "mmmmm", "M"},
    {45000.5, "mmmmm", "M"},
    {36526.25, "mmmmm", "J"},
    {61.0, "d/m/yy h:mm", "1/3/00 0:00"},
    {45000.5, "d/m/yy h:mm", "15/3/23 12:00"},
    {36526.25, "d/m/yy h:mm", "1/1/00 6:00"},
    {61.0, "[$-409]mmmm d, yyyy;@", "March 1, 1900"},
    {45000.5, "[$-409]mmmm d, yyyy;@", "March 15, 2023"},
    {36526.25, "[$-409]mmmm d, yyyy;@", "January 1, 2000"},
    {61.0, "ddd dd mmm", "Thu 01 Mar"},
    {45000.5, "ddd dd mmm", "Wed 15 Mar"},
    {36526.25, "ddd dd mmm", "Sat 01 Jan"},
    {-5000.0, "[>=1000000]0.0,,\"M\";[>=1000]0.0,\"K\";0", "5000"},
    {-5.0, "[<=0]0;0", "5"},
    {-5.0, "[<-1]0;0", "-5"},
    {-50.0, "[Red][<=100]0;[Blue][>100]0", "-50"},
    {-5.0, "[>0]0;[<0]0", "5"},
    {-5.0, "[>0]0;[<0]0;0", "5"},
    {5.0, "0;[>10]0", "5"},
    {-5.0, "0;[<-10]\"x\"0", "-5"},
    /* fractions (LibreOffice 7.4 agrees; where it does not, excel_cases).
     * "?\?" is "??": C11 reads "??/" as a trigraph. */
    {1.25, "# ?/?", "1 1/4"},
    {0.5, "# ?/?", " 1/2"}, /* no integer: '#' shows nothing, the space stays */
    {3.14159, "# ?/?", "3 1/7"},
    {0.3333, "# ?/?", " 1/3"},
    {5, "# ?/?", "5    "}, /* a whole number: the fraction's width in spaces */
    {0, "# ?/?", "0    "},
    {0.05, "# ?/?", "0    "},
    {0.999, "# ?/?", "1    "},
    {-1.25, "# ?/?", "-1 1/4"},
    {-0.5, "# ?/?", "- 1/2"},
    {1234.5, "# ?/?", "1234 1/2"},
    {12345.678, "# ?/?", "12345 2/3"},
    {7.875, "# ?/?", "7 7/8"},
    {1.25, "# ?\?/?\?", "1  1/4 "}, /* numerator right-aligned, denominator left */
    {10.0625, "# ?\?/?\?", "10  1/16"},
    {0.99, "# ?\?/?\?", " 98/99"},
    {2.96, "# ?\?/?\?", "2 24/25"},
    {0.05, "# ?\?/?\?", "  1/20"},
    {5, "# ?\?/?\?", "5      "},
    {3.14159, "# ?\?\?/?\?\?", "3  16/113"},
    {0.999, "# ?\?\?/?\?\?", " 998/999"},
    {12345.678, "# ?\?\?/?\?\?", "12345 339/500"},
    {0.3333, "?/?", "1/3"},
    {1.25, "?/?", "5/4"},
    {5, "?/?", "5/1"},
    {0, "?/?", "0/1"},
    {3.14159, "?/?", "22/7"},
    {1.25, "#?/?", "5/4"},
    {1.25, "?\?/?\?", " 5/4 "},
    {0.99, "?\?/?\?", "98/99"},
    {12345.678, "?\?/?\?", "728395/59"},
    {1.25, "0 ?/?", "1 1/4"},
    {0.5, "0 ?/?", "0 1/2"},
    {0, "0 ?/?", "0    "},
    {1.25, "# ?/8", "1 2/8"}, /* a written denominator: not reduced */
    {0.5, "# ?/8", " 4/8"},
    {0.3333, "# ?/8", " 3/8"},
    {12345.678, "# ?/8", "12345 5/8"},
    {1.25, "# ?\?/16", "1  4/16"},
    {2.96, "# ?\?/16", "2 15/16"},
    {2.0 / 3, "# ?\?/16", " 11/16"},
    {1.25, "?/8", "10/8"},
    {12345.678, "?/8", "98765/8"},
    {0.99, "0 ?\?/100", "0 99/100"},
    {10.0625, "0 ?\?/100", "10  6/100"},
    {0.05, "0 ?\?/100", "0  5/100"},
    {1.25, "# ?/? \"in\"", "1 1/4 in"},
    {5, "# ?/? \"in\"", "5     in"},
    {1234.5, "#,### ?/?", "1,234 1/2"},
    {12345.678, "#,### ?/?", "12,345 2/3"},
    {-1.25, "# ?/?;(# ?/?)", "(1 1/4)"},
    {-0.5, "# ?/?;(# ?/?)", "( 1/2)"},
    {-1.25, "\"x\"# ?/?", "-x1 1/4"},
    {1.25, "# #/#", "1 1/4"},
    {5, "# #/#", "5"}, /* '#' alone: nothing of the fraction shows */
    {1.25, "# 0/0", "1 1/4"},
    {5, "# 0/0", "5 0/1"},     /* a '0' placeholder: the fraction always shows */
    {1.25, "0.0 ?/?", "1.25"}, /* a point and a fraction: General */
};

static const fmt_case excel_cases[] = {
    /* rounding: 15 significant digits first, then half away from zero */
    {2.675, "0.00", "2.68"},
    {1.005, "0.00", "1.01"},
    {-2.675, "0.00", "-2.68"},
    {0.285, "0.00", "0.29"},
    {1.005, "0%", "101%"},
    {0.145, "0%", "15%"},
    {999.995, "#,##0.00", "1,000.00"},
    {0.5, "0", "1"},
    {1.5, "0", "2"},
    {2.5, "0", "3"},
    {-2.5, "0", "-3"},
    {0.1 + 0.2, "0.00000000000000", "0.30000000000000"},
    /* sign kept when the value rounds to zero */
    {-0.3, "0", "-0"},
    {-0.125, "#,##0", "-0"},
    {-0.001, "0.00", "-0.00"},
    {-1, "#,##0,", "-0"},
    /* a point with no digits after it stays */
    {5, "#.##", "5."},
    {0, "#.##", "."},
    {1, "0.#", "1."},
    {0.5, "#.##", ".5"},
    {0.5, ".00", ".50"},
    {12.5, ".00", "12.50"},
    /* General */
    {0, NULL, "0"},
    {0, "General", "0"},
    {42, "General", "42"},
    {-42, "general", "-42"},
    {123456789012.0, NULL, "123456789012"},
    {999999999999999.0, NULL, "999999999999999"},
    {1e15, NULL, "1E+15"},
    {1e20, NULL, "1E+20"},
    {-1.5e20, NULL, "-1.5E+20"},
    {1234.5678, NULL, "1234.5678"},
    {0.1 + 0.2, NULL, "0.3"},
    {1.0 / 3, NULL, "0.333333333"},
    {2.0 / 3, NULL, "0.666666667"},
    {-1.0 / 3, NULL, "-0.333333333"},
    {10.0 / 3, NULL, "3.333333333"},
    {1234567.891234, NULL, "1234567.891"},
    {12345678901.5, NULL, "12345678902"},
    {123456789012.5, NULL, "1.23457E+11"},
    {0.0001, NULL, "0.0001"},
    {0.000123456789, NULL, "0.000123457"},
    {0.00001, NULL, "1E-05"},
    {0.00001234, NULL, "1.234E-05"},
    {1.5e-300, NULL, "1.5E-300"},
    {12.5, "[Red]General", "12.5"},
    {-12.5, "General;(General)", "(12.5)"},
    {3, "\"x\"General", "x3"},
    /* dates: Excel's 1900 system with its phantom 1900-02-29 */
    {0, "yyyy-mm-dd", "1900-01-00"},
    {1, "yyyy-mm-dd", "1900-01-01"},
    {1, "ddd", "Sun"},
    {59, "yyyy-mm-dd", "1900-02-28"},
    {60, "yyyy-mm-dd", "1900-02-29"},
    {61, "yyyy-mm-dd", "1900-03-01"},
    {61, "dddd", "Thursday"},
    {45000, "dddd d mmmm yyyy", "Wednesday 15 March 2023"},
    {2958465, "yyyy-mm-dd", "9999-12-31"},
    {2958466, "yyyy-mm-dd", "########"},
    {-1, "yyyy-mm-dd", "########"},
    {46355, "mmmmm", "N"},
    {46355, "yyyy-mm-dd", "2026-11-29"},
    /* times: rounded to the second (or the fraction shown), then truncated */
    {45678.123456, "hh:mm:ss", "02:57:47"},
    {0.3333333, "hh:mm", "08:00"},
    {0.3333333, "mm:ss.0", "00:00.0"},
    {0.9999999, "yyyy-mm-dd hh:mm:ss", "1900-01-01 00:00:00"},
    {45000.5 + 1.5 / 86400, "hh:mm:ss.0", "12:00:01.5"},
    {45000.5 + 0.25 / 86400, "hh:mm:ss.00", "12:00:00.25"},
    {0.5, "h AM/PM", "12 PM"},
    {0, "h AM/PM", "12 AM"},
    {0.75, "hh:mm am/pm", "06:00 PM"},
    {2.25, "[h]:mm", "54:00"},
    {2.25, "[hh]:mm", "54:00"},
    {0.0625, "[m]", "90"},
    {0.0625, "[ss]", "5400"},
    {0.0625, "h:m", "1:30"},
    {0.0625, "m:ss", "30:00"},
    {45000, "[$-409]mmmm d, yyyy;@", "March 15, 2023"},
    {45000, "m/d/yy\\ h:mm", "3/15/23 0:00"},
    {45000, "yyyy\"年\"m\"月\"d\"日\"", "2023年3月15日"},
    /* literals, escapes, locale tags, padding */
    {1234.5, "[$€-407]#,##0.00", "€1,234.50"},
    {1234.5, "#,##0.00\\ [$€-407]", "1,234.50 €"},
    {1234.5, "[$USD] #,##0", "USD 1,235"},
    {1234.5, "[$-409]#,##0.0", "1,234.5"},
    {5, "0\\x", "5x"},
    {5, "0\"\"", "5"},
    {1234.5, "_($* #,##0.00_)", " $1,234.50 "},
    {-1234.5, "_($* #,##0.00_);_($* (#,##0.00);_($* \"-\"??_);_(@_)", " $(1,234.50)"},
    {0, "_($* #,##0.00_);_($* (#,##0.00);_($* \"-\"??_);_(@_)", " $-   "},
    {5, "0;-0;;@", "5"},
    {0, "0;-0;;@", ""},
    {-5, "0;;0", ""},
    {5, ";;;", ""},
    {5, "@", "5"},
    {5, "\"N/A\"", "N/A"},
    {-5, "\"N/A\"", "-N/A"},
    {7, "0 \"item\\s\"", "7 item\\s"},
    {7, "0 \\\"\\s\\\"", "7 \"s\""},
    {1, "0;\"semi;colon\"", "1"},
    {-1, "0;\"semi;colon\"", "semi;colon"},
    {1, "0\\;0", "0;1"},
    /* digit placeholders */
    {123456789, "000-00-0000", "123-45-6789"},
    {5551234567.0, "(###) ###-####", "(555) 123-4567"},
    {42, "00000", "00042"},
    {5, "0,000", "0,005"},
    {1234567, "#,##0", "1,234,567"},
    {-1234567.891, "#,##0.00", "-1,234,567.89"},
    {1.5, "?.??", "1.5 "},
    {12.25, "??.??", "12.25"},
    {1.5, "??.??", " 1.5 "},
    {1234567, "#,##0,", "1,235"},
    {1234567, "#,##0.0,,\"M\"", "1.2M"},
    {0.125, "0%%", "1250%%"},
    {0.5, "0.0 %", "50.0 %"},
    /* scientific */
    {12345, "0.00E+00", "1.23E+04"},
    {0.00012345, "0.00E+00", "1.23E-04"},
    {0.00012345, "0.00E-00", "1.23E-04"},
    {12345, "0.00E-00", "1.23E04"},
    {0, "0.00E+00", "0.00E+00"},
    {-12345, "0.0E+0", "-1.2E+4"},
    {9.99, "0.0E+00", "1.0E+01"},
    {12345, "##0.0E+0", "12.3E+3"},
    {123456, "##0.0E+0", "123.5E+3"},
    {0.000123, "##0.0E+0", "123.0E-6"},
    {999999, "##0.0E+0", "1.0E+6"},
    /* conditions */
    {50, "[<100]\"small\";\"big\"", "small"},
    {500, "[<100]\"small\";\"big\"", "big"},
    {-50, "[Red][<=100]0;[Blue][>100]0", "-50"},
    {150, "[Red][<=100]0;[Blue][>100]0", "150"},
    {5000, "[>=1000000]0.0,,\"M\";[>=1000]0.0,\"K\";0", "5.0K"},
    {2500000, "[>=1000000]0.0,,\"M\";[>=1000]0.0,\"K\";0", "2.5M"},
    {12, "[>=1000000]0.0,,\"M\";[>=1000]0.0,\"K\";0", "12"},
    {-5, "[<0]\"neg \"0;0", "neg 5"},
    {-150, "[<=-100]0;[>=100]0;0", "-150"},
    {1, "[=1]\"one\";0", "one"},
    {2, "[=1]\"one\";0", "2"},
    {2, "[<>1]\"not one\";0", "not one"},
    {-15, "0;[<-10]\"x\"0", "x15"},
    /* fractions: Excel shows the last convergent of the value's continued
     * fraction (in doubles) with at most as many denominator digits as
     * placeholders, 7 at most, where LibreOffice shows the closest fraction.
     * 123.456 as Excel's Format Cells samples show it; the others as the
     * SheetJS and Apache POI tests, checked against Excel, have them. */
    {123.456, "# ?/?", "123 1/2"},
    {123.456, "# ?\?/?\?", "123 26/57"},
    {123.456, "# ?\?\?/?\?\?", "123  57/125"},
    {123.456, "# ?/2", "123 1/2"},
    {123.456, "# ?/4", "123 2/4"},
    {123.456, "# ?/8", "123 4/8"},
    {123.456, "# ?\?/16", "123  7/16"},
    {123.456, "# ?/10", "123 5/10"},
    {123.456, "# ?\?/100", "123 46/100"},
    {0.3, "# ?/?", " 2/7"},
    {1.3, "# ?/?", "1 1/3"},
    {2.3, "# ?/?", "2 2/7"},
    {3.14159, "# ?\?/?\?", "3  1/7 "},
    {123.45, "?\?/?\?", "2469/20"},
    {-123.456, "?\?/?\?", "-7037/57"},
    {12345.6789, "?\?/?\?", "1000000/81"},
    {0.123251512342345, "# ?\?/?\?\?\?\?\?\?\?\?", " 480894/3901729  "},
    {0.1, "# ?/?", "0    "},
    /* fractions, where neither could be checked (choices): a written
     * denominator's numerator rounds half away from zero, as "0" does
     * (LibreOffice rounds these ties down); a whole number under a written
     * denominator shows spaces as wide as the whole fraction (LibreOffice
     * leaves out the denominator's digits); "# #/#" keeps the space before
     * a fraction without integer (LibreOffice drops it). */
    {1.25, "# ?/10", "1 3/10"},
    {10.0625, "?/8", "81/8"},
    {5, "# ?/8", "5    "},
    {2.96, "# ?/8", "3    "},
    {0.5, "# #/#", " 1/2"},
    /* not numbers */
    {0.0 / 0.0, "0.00", "#NUM!"},
    {1.0 / 0.0, NULL, "#NUM!"},
};

static void check_cases(const fmt_case *cases, size_t n)
{
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        char buf[KILN_NUMFMT_MAX];
        memset(buf, 'Z', sizeof buf);
        size_t len = kiln_format_number(cases[i].value, cases[i].format, buf, sizeof buf);
        if (strcmp(buf, cases[i].expected) != 0 || len != strlen(buf)) {
            fprintf(stderr, "  %.17g under '%s': got '%s' (len %zu), expected '%s'\n",
                    cases[i].value, cases[i].format ? cases[i].format : "(null)", buf, len,
                    cases[i].expected);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

static void test_libreoffice_cases(void **state)
{
    (void)state;
    check_cases(lo_cases, sizeof lo_cases / sizeof lo_cases[0]);
}

static void test_excel_cases(void **state)
{
    (void)state;
    check_cases(excel_cases, sizeof excel_cases / sizeof excel_cases[0]);
}

/* The column types' default formats (artifacts/spec/parse_sheet.c). */
static void test_default_formats(void **state)
{
    (void)state;
    static const fmt_case cases[] = {
        {1234567.4, "#,##0", "1,234,567"},
        {-0.5, "#,##0", "-1"},
        {1234.5, "#,##0.00", "1,234.50"},
        {-1234.567, "#,##0.00", "-1,234.57"},
        {1234.5, "$#,##0.00", "$1,234.50"},
        {-1234.5, "$#,##0.00", "-$1,234.50"},
        {0, "$#,##0.00", "$0.00"},
        {0.125, "0.0%", "12.5%"},
        {-0.0375, "0.0%", "-3.8%"},
        {1.5, "0.0%", "150.0%"},
        {46355, "yyyy-mm-dd", "2026-11-29"},
        {46355.6041666667, "yyyy-mm-dd hh:mm", "2026-11-29 14:30"},
    };
    check_cases(cases, sizeof cases / sizeof cases[0]);
}

static void test_buffer_limits(void **state)
{
    (void)state;
    char buf[KILN_NUMFMT_MAX];
    /* 1e300 under "#,##0.00" would need ~400 characters: General instead */
    size_t len = kiln_format_number(1e300, "#,##0.00", buf, sizeof buf);
    assert_string_equal(buf, "1E+300");
    assert_int_equal(len, 6);
    /* a small buffer is never overrun */
    char small[4] = "xyz";
    len = kiln_format_number(123456, "#,##0", small, sizeof small);
    assert_true(len < sizeof small);
    assert_int_equal(strlen(small), len);
    /* a long literal is cut whole, never mid-character */
    char fmt[400];
    test_copy(fmt, sizeof fmt, "0 \"");
    for (int i = 0; i < 100; i++)
        test_append(fmt, sizeof fmt, "é");
    test_append(fmt, sizeof fmt, "\"");
    len = kiln_format_number(5, fmt, buf, sizeof buf);
    assert_int_equal(strlen(buf), len);
    assert_string_equal(buf, "5");
}

static void test_cell_display(void **state)
{
    (void)state;
    char buf[KILN_NUMFMT_MAX];
    size_t len;
    const char *s;
    kiln_column money = {.header = "ARR",
                         .type = KILN_COL_CURRENCY,
                         .number_format = "$#,##0.00",
                         .width = -1};
    kiln_column dates = {.type = KILN_COL_DATE, .number_format = "d mmm yyyy", .width = -1};
    kiln_column plain = {.type = KILN_COL_AUTO, .width = -1};

    kiln_cell num = {.kind = KILN_CELL_NUMBER, .number = 184000};
    s = kiln_cell_display(&num, &money, buf, sizeof buf, &len);
    assert_string_equal(s, "$184,000.00");
    assert_int_equal(len, 11);
    s = kiln_cell_display(&num, NULL, buf, sizeof buf, &len);
    assert_string_equal(s, "184000");
    num.number_format = "0.0%"; /* the cell's own format wins */
    num.number = 0.25;
    s = kiln_cell_display(&num, &money, buf, sizeof buf, &len);
    assert_string_equal(s, "25.0%");

    kiln_cell str = {.kind = KILN_CELL_STRING, .text = "North", .text_len = 5};
    s = kiln_cell_display(&str, &money, buf, sizeof buf, &len);
    assert_ptr_equal(s, str.text);
    assert_int_equal(len, 5);
    str.number_format = "0;-0;0;\"Region: \"@";
    s = kiln_cell_display(&str, NULL, buf, sizeof buf, &len);
    assert_string_equal(s, "Region: North");
    assert_int_equal(len, 13);

    kiln_cell yes = {.kind = KILN_CELL_BOOL, .number = 1};
    kiln_cell no = {.kind = KILN_CELL_BOOL, .number = 0};
    s = kiln_cell_display(&yes, NULL, buf, sizeof buf, &len);
    assert_string_equal(s, "TRUE");
    assert_int_equal(len, 4);
    s = kiln_cell_display(&no, &money, buf, sizeof buf, &len);
    assert_string_equal(s, "FALSE");
    assert_int_equal(len, 5);

    kiln_cell blank = {.kind = KILN_CELL_BLANK};
    s = kiln_cell_display(&blank, &money, buf, sizeof buf, &len);
    assert_string_equal(s, "");
    assert_int_equal(len, 0);

    /* dates: the column's date format, else the default; never a number format */
    kiln_cell date = {.kind = KILN_CELL_DATE, .number = 46355};
    s = kiln_cell_display(&date, &dates, buf, sizeof buf, &len);
    assert_string_equal(s, "29 Nov 2026");
    s = kiln_cell_display(&date, &money, buf, sizeof buf, &len);
    assert_string_equal(s, "2026-11-29");
    s = kiln_cell_display(&date, NULL, buf, sizeof buf, &len);
    assert_string_equal(s, "2026-11-29");
    kiln_cell dt = {.kind = KILN_CELL_DATETIME, .number = 46355.5};
    s = kiln_cell_display(&dt, &plain, buf, sizeof buf, &len);
    assert_string_equal(s, "2026-11-29 12:00");
    dt.number_format = "0.00"; /* the cell's own format, whatever it is */
    s = kiln_cell_display(&dt, &dates, buf, sizeof buf, &len);
    assert_string_equal(s, "46355.50");

    /* formulas show their cached value */
    kiln_cell f = {.kind = KILN_CELL_FORMULA,
                   .text = "SUM(B2:B9)",
                   .cached_kind = KILN_CELL_NUMBER,
                   .cached_number = 294};
    s = kiln_cell_display(&f, &money, buf, sizeof buf, &len);
    assert_string_equal(s, "$294.00");
    f.cached_kind = KILN_CELL_STRING;
    f.cached_text = "n/a";
    s = kiln_cell_display(&f, &money, buf, sizeof buf, &len);
    assert_string_equal(s, "n/a");
    assert_int_equal(len, 3);
    f.cached_kind = KILN_CELL_BOOL;
    f.cached_number = 1;
    s = kiln_cell_display(&f, NULL, buf, sizeof buf, &len);
    assert_string_equal(s, "TRUE");
    f.cached_kind = KILN_CELL_BLANK;
    s = kiln_cell_display(&f, &money, buf, sizeof buf, &len);
    assert_string_equal(s, "");
    assert_int_equal(len, 0);

    /* links show their text, else the URL */
    kiln_cell url = {.kind = KILN_CELL_URL,
                     .text = "https://example.com/orders/1",
                     .text_len = 28};
    s = kiln_cell_display(&url, NULL, buf, sizeof buf, &len);
    assert_string_equal(s, "https://example.com/orders/1");
    assert_int_equal(len, 28);
    url.link_text = "order 1";
    s = kiln_cell_display(&url, NULL, buf, sizeof buf, &len);
    assert_string_equal(s, "order 1");
    assert_int_equal(len, 7);

    /* a string too long for the buffer under a text section: as it is */
    static char longtext[300];
    memset(longtext, 'a', sizeof longtext - 1);
    kiln_cell lt = {.kind = KILN_CELL_STRING,
                    .text = longtext,
                    .text_len = 299,
                    .number_format = "\"x\"@"};
    s = kiln_cell_display(&lt, NULL, buf, sizeof buf, &len);
    assert_ptr_equal(s, longtext);
    assert_int_equal(len, 299);
}

static void test_column_is_numeric(void **state)
{
    (void)state;
    static const struct {
        kiln_column_type type;
        const char *format;
        int numeric;
    } cases[] = {
        {KILN_COL_NUMBER, "#,##0.00", 1},
        {KILN_COL_INTEGER, "#,##0", 1},
        {KILN_COL_CURRENCY, "$#,##0.00", 1},
        {KILN_COL_PERCENT, "0.0%", 1},
        {KILN_COL_DATE, "yyyy-mm-dd", 1},
        {KILN_COL_DATETIME, "yyyy-mm-dd hh:mm", 1},
        {KILN_COL_STRING, NULL, 0},
        {KILN_COL_BOOLEAN, NULL, 0},
        {KILN_COL_AUTO, NULL, 0},
        {KILN_COL_AUTO, "0.000", 1},
        {KILN_COL_AUTO, "@", 0},
        {KILN_COL_AUTO, "General", 0},
        {KILN_COL_STRING, "0.00", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kiln_column col = {.type = cases[i].type, .number_format = cases[i].format, .width = -1};
        assert_int_equal(kiln_column_is_numeric(&col), cases[i].numeric);
    }
    assert_int_equal(kiln_column_is_numeric(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_libreoffice_cases), cmocka_unit_test(test_excel_cases),
        cmocka_unit_test(test_default_formats),   cmocka_unit_test(test_buffer_limits),
        cmocka_unit_test(test_cell_display),      cmocka_unit_test(test_column_is_numeric),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
