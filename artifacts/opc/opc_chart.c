/*
 * opc_chart.c - a DrawingML chart part (c:chartSpace) and its embedded
 * workbook, shared by the .docx and .pptx writers.
 *
 * The chart reads its data from the embedded workbook ("Edit Data" opens
 * it: categories in column A, one series per column from B, names in row 1,
 * opc_chart_workbook.c), and carries every value in its caches (c:strCache,
 * c:numCache) too, so Word, PowerPoint and LibreOffice draw it without
 * opening the workbook. The XML follows what Word and PowerPoint write for a
 * chart they made (element order of dml-chart.xsd), without the Microsoft
 * extensions (no c14:style, no mc:AlternateContent).
 *
 * Conventions shared with the .xlsx writer's charts (xlsx_charts.c): x_title
 * names the category axis and y_title the value axis whatever the
 * orientation; series colors are the spec's or the theme's accents in turn;
 * pie and doughnut slices take the accents in turn unless the series has a
 * color of its own; line series are 2.25 pt lines with markers, scatter
 * series markers only.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opc.h"
#include "../../common/banned.h"

/* Any positive numbers unique within the chart do: the schema types axis
 * ids as unsigned (Word's own negative ids are out of the schema). */
/* Office's size for a chart's text, 1/100 pt. */
#define DEFAULT_TEXT_SIZE 1000u
#define AXIS_ID_CATEGORY 50010001u
#define AXIS_ID_VALUE 50010002u

#define NS_C "http://schemas.openxmlformats.org/drawingml/2006/chart"
#define NS_A "http://schemas.openxmlformats.org/drawingml/2006/main"

#define LINE_WIDTH_EMU 28575 /* 2.25 pt */
#define MARKER_SIZE 5

/* Excel's sheet: 1,048,576 rows, the first one holding the names. */
#define MAX_POINTS 1048575u

/* ---- references into the embedded workbook ---- */

#define REF_MAX 48

/* "Sheet1!$B$1": series i's name. */
static void ref_name(size_t series, char *buf)
{
    char col[4];
    kiln_col_name(OPC_CHART_SERIES_COL(series), col);
    snprintf(buf, REF_MAX, OPC_CHART_SHEET "!$%s$1", col);
}

static void column_ref(const char *col, size_t point_count, char *buf)
{
    /* An empty series still names one cell: a reference needs one. */
    size_t last = point_count ? point_count + 1 : 2;
    snprintf(buf, REF_MAX, OPC_CHART_SHEET "!$%s$2:$%s$%zu", col, col, last);
}

/* "Sheet1!$A$2:$A$5": the categories. */
static void ref_categories(size_t point_count, char *buf)
{
    column_ref("A", point_count, buf);
}

/* "Sheet1!$B$2:$B$5": series i's values. */
static void ref_values(size_t series, size_t point_count, char *buf)
{
    char col[4];
    kiln_col_name(OPC_CHART_SERIES_COL(series), col);
    column_ref(col, point_count, buf);
}

/* ---- the writer ---- */

typedef struct chart_writer {
    opc_xml *x;
    const kiln_chart_data *data;
    const kiln_chart *chart;
    const kiln_theme *theme;
    unsigned text_size; /* 1/100 pt: labels, legend and axis titles; the title 1.4x */
} chart_writer;

static int is_pie(const kiln_chart *c)
{
    return c->kind == KILN_CHART_PIE || c->kind == KILN_CHART_DOUGHNUT;
}

/* Shortest text that reads back as v (as Excel writes numbers). */
static size_t number_text(double v, char *buf, size_t cap)
{
    int n = 0;
    for (int precision = 15; precision <= 17; precision++) {
        n = snprintf(buf, cap, "%.*g", precision, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return n > 0 ? (size_t)n : 0;
}

/* <c:v>text</c:v>. The cache holds the text as it is: LibreOffice shows a
 * cache's "_xHHHH_" literally, so escaping one as SpreadsheetML cells need
 * would show the escape. */
static void write_v(chart_writer *w, const char *text)
{
    opc_xml_element_text(w->x, "c:v", text);
}

static void write_v_number(chart_writer *w, double v)
{
    char buf[40];
    size_t n = number_text(v, buf, sizeof buf);
    opc_xml_start(w->x, "c:v");
    opc_xml_text(w->x, buf, n);
    opc_xml_end(w->x);
}

static void write_solid_fill(opc_xml *x, int32_t rgb)
{
    opc_xml_start(x, "a:solidFill");
    opc_xml_start(x, "a:srgbClr");
    opc_xml_attr_color(x, "val", rgb);
    opc_xml_end(x);
    opc_xml_end(x);
}

/* <c:strRef> with f and the cache of texts (empty texts are blank points). */
static void write_str_ref(chart_writer *w, const char *f, const char *const *texts, size_t n)
{
    opc_xml *x = w->x;
    opc_xml_start(x, "c:strRef");
    opc_xml_element_text(x, "c:f", f);
    opc_xml_start(x, "c:strCache");
    opc_xml_val_int(x, "c:ptCount", "val", (int64_t)n);
    for (size_t i = 0; i < n; i++) {
        if (!texts[i] || !*texts[i])
            continue;
        opc_xml_start(x, "c:pt");
        opc_xml_attr_uint(x, "idx", i);
        write_v(w, texts[i]);
        opc_xml_end(x);
    }
    opc_xml_end(x); /* c:strCache */
    opc_xml_end(x); /* c:strRef */
}

/* <c:numRef> with f and the cache of values (NAN values are blank points). */
static void write_num_ref(chart_writer *w, const char *f, const double *values, size_t n,
                          const char *format)
{
    opc_xml *x = w->x;
    opc_xml_start(x, "c:numRef");
    opc_xml_element_text(x, "c:f", f);
    opc_xml_start(x, "c:numCache");
    opc_xml_element_text(x, "c:formatCode", format && *format ? format : "General");
    opc_xml_val_int(x, "c:ptCount", "val", (int64_t)n);
    for (size_t i = 0; i < n; i++) {
        if (isnan(values[i]))
            continue;
        opc_xml_start(x, "c:pt");
        opc_xml_attr_uint(x, "idx", i);
        write_v_number(w, values[i]);
        opc_xml_end(x);
    }
    opc_xml_end(x); /* c:numCache */
    opc_xml_end(x); /* c:numRef */
}

/* A title to draw: an empty string counts as none, since a c:title with an
 * empty a:t makes LibreOffice draw a placeholder ("main-title"). */
static int has_title(const char *text)
{
    return text && *text;
}

/* Rich text: a chart or axis title. vertical rotates it to read upwards,
 * as a vertical axis' title does. */
static void write_title(chart_writer *w, const char *text, int size_hundredths, int vertical)
{
    opc_xml *x = w->x;
    opc_xml_start(x, "c:title");
    opc_xml_start(x, "c:tx");
    opc_xml_start(x, "c:rich");
    opc_xml_start(x, "a:bodyPr");
    if (vertical) {
        opc_xml_attr(x, "rot", "-5400000");
        opc_xml_attr(x, "vert", "horz");
    }
    opc_xml_end(x);
    opc_xml_empty(x, "a:lstStyle");
    opc_xml_start(x, "a:p");
    opc_xml_start(x, "a:pPr");
    opc_xml_start(x, "a:defRPr");
    opc_xml_attr_int(x, "sz", size_hundredths);
    opc_xml_attr(x, "b", "1");
    opc_xml_end(x);
    opc_xml_end(x); /* a:pPr */
    opc_xml_start(x, "a:r");
    opc_xml_start(x, "a:rPr");
    opc_xml_attr(x, "lang", "en-US");
    opc_xml_attr_int(x, "sz", size_hundredths);
    opc_xml_attr(x, "b", "1");
    opc_xml_end(x);
    opc_xml_element_text(x, "a:t", text);
    opc_xml_end(x); /* a:r */
    opc_xml_end(x); /* a:p */
    opc_xml_end(x); /* c:rich */
    opc_xml_end(x); /* c:tx */
    opc_xml_val(x, "c:overlay", "val", "0");
    opc_xml_end(x); /* c:title */
}

/* <c:tx>: the series name, from its cell. */
static void write_series_name(chart_writer *w, size_t i)
{
    char f[REF_MAX];
    ref_name(i, f);
    const char *name = w->data->series[i].name;
    opc_xml_start(w->x, "c:tx");
    write_str_ref(w, f, &name, 1);
    opc_xml_end(w->x);
}

/* The categories as the series' <c:cat> (or a scatter's <c:xVal>). */
static void write_categories(chart_writer *w, const char *element)
{
    const kiln_chart_data *d = w->data;
    if (!d->categories)
        return;
    char f[REF_MAX];
    ref_categories(d->point_count, f);
    opc_xml_start(w->x, element);
    if (d->categories_dates && d->category_numbers)
        write_num_ref(w, f, d->category_numbers, d->point_count, d->category_format);
    else if (d->categories_numeric && d->category_numbers)
        write_num_ref(w, f, d->category_numbers, d->point_count, NULL);
    else
        write_str_ref(w, f, d->categories, d->point_count);
    opc_xml_end(w->x);
}

static void write_values(chart_writer *w, const char *element, size_t i)
{
    const kiln_chart_data *d = w->data;
    char f[REF_MAX];
    ref_values(i, d->point_count, f);
    opc_xml_start(w->x, element);
    write_num_ref(w, f, d->series[i].values, d->point_count, d->series[i].number_format);
    opc_xml_end(w->x);
}

static void write_idx_order(opc_xml *x, size_t i)
{
    opc_xml_val_int(x, "c:idx", "val", (int64_t)i);
    opc_xml_val_int(x, "c:order", "val", (int64_t)i);
}

/* A line's shape properties: a 2.25 pt line of the series' color. */
static void write_line_sppr(opc_xml *x, int32_t color)
{
    opc_xml_start(x, "c:spPr");
    opc_xml_start(x, "a:ln");
    opc_xml_attr_int(x, "w", LINE_WIDTH_EMU);
    opc_xml_attr(x, "cap", "rnd");
    write_solid_fill(x, color);
    opc_xml_empty(x, "a:round");
    opc_xml_end(x);
    opc_xml_end(x);
}

static void write_marker(opc_xml *x, int32_t color)
{
    opc_xml_start(x, "c:marker");
    opc_xml_val(x, "c:symbol", "val", "circle");
    opc_xml_val_int(x, "c:size", "val", MARKER_SIZE);
    opc_xml_start(x, "c:spPr");
    write_solid_fill(x, color);
    opc_xml_start(x, "a:ln");
    opc_xml_attr_int(x, "w", 9525);
    write_solid_fill(x, color);
    opc_xml_end(x);
    opc_xml_end(x); /* c:spPr */
    opc_xml_end(x); /* c:marker */
}

static void write_fill_sppr(opc_xml *x, int32_t color)
{
    opc_xml_start(x, "c:spPr");
    write_solid_fill(x, color);
    opc_xml_end(x);
}

/* One data point per slice, each in the series' own color when it has one
 * (as the .xlsx writer paints it), else in the accent colors in turn;
 * outlined in white so neighbouring slices stay apart. Every slice is
 * colored explicitly: renderers disagree on what a series fill means under
 * varyColors. */
static void write_pie_points(chart_writer *w, int32_t own_color)
{
    opc_xml *x = w->x;
    static const int32_t office[] = {0x4472C4, 0xED7D31, 0xA5A5A5, 0xFFC000, 0x5B9BD5, 0x70AD47};
    const int32_t *accents = w->theme && w->theme->accent_count > 0 ? w->theme->accent_colors
                                                                    : office;
    size_t count = w->theme && w->theme->accent_count > 0 ? (size_t)w->theme->accent_count
                                                          : sizeof office / sizeof office[0];
    for (size_t p = 0; p < w->data->point_count; p++) {
        opc_xml_start(x, "c:dPt");
        opc_xml_val_int(x, "c:idx", "val", (int64_t)p);
        opc_xml_val(x, "c:bubble3D", "val", "0");
        opc_xml_start(x, "c:spPr");
        write_solid_fill(x, own_color != KILN_COLOR_NONE ? own_color : accents[p % count]);
        opc_xml_start(x, "a:ln");
        opc_xml_attr_int(x, "w", 12700);
        write_solid_fill(x, 0xFFFFFF);
        opc_xml_end(x);
        opc_xml_end(x); /* c:spPr */
        opc_xml_end(x); /* c:dPt */
    }
}

static void write_series(chart_writer *w, size_t i)
{
    opc_xml *x = w->x;
    const kiln_chart *c = w->chart;
    const kiln_chart_series_data *s = &w->data->series[i];
    opc_xml_start(x, "c:ser");
    write_idx_order(x, i);
    write_series_name(w, i);
    switch (c->kind) {
    case KILN_CHART_COLUMN:
    case KILN_CHART_BAR:
        write_fill_sppr(x, s->color);
        opc_xml_val(x, "c:invertIfNegative", "val", "0");
        write_categories(w, "c:cat");
        write_values(w, "c:val", i);
        break;
    case KILN_CHART_LINE:
        write_line_sppr(x, s->color);
        write_marker(x, s->color);
        write_categories(w, "c:cat");
        write_values(w, "c:val", i);
        opc_xml_val(x, "c:smooth", "val", "0");
        break;
    case KILN_CHART_PIE:
    case KILN_CHART_DOUGHNUT:
        write_pie_points(w, c->series[i].color);
        write_categories(w, "c:cat");
        write_values(w, "c:val", i);
        break;
    case KILN_CHART_SCATTER:
        /* Markers only, as Excel's own scatter chart and Kiln's .xlsx and
         * PDF draw it: joining the points in data order draws a zigzag
         * whenever the x values are not sorted. */
        opc_xml_start(x, "c:spPr");
        opc_xml_start(x, "a:ln");
        opc_xml_attr_int(x, "w", LINE_WIDTH_EMU);
        opc_xml_empty(x, "a:noFill");
        opc_xml_end(x);
        opc_xml_end(x);
        write_marker(x, s->color);
        write_categories(w, "c:xVal");
        write_values(w, "c:yVal", i);
        opc_xml_val(x, "c:smooth", "val", "0");
        break;
    case KILN_CHART_AREA:
        write_fill_sppr(x, s->color);
        write_categories(w, "c:cat");
        write_values(w, "c:val", i);
        break;
    }
    opc_xml_end(x); /* c:ser */
}

static void write_ax_ids(opc_xml *x)
{
    opc_xml_val_int(x, "c:axId", "val", AXIS_ID_CATEGORY);
    opc_xml_val_int(x, "c:axId", "val", AXIS_ID_VALUE);
}

static void write_plot(chart_writer *w)
{
    opc_xml *x = w->x;
    const kiln_chart *c = w->chart;
    const char *grouping = c->stacked ? "stacked" : "standard";
    switch (c->kind) {
    case KILN_CHART_COLUMN:
    case KILN_CHART_BAR:
        opc_xml_start(x, "c:barChart");
        opc_xml_val(x, "c:barDir", "val", c->kind == KILN_CHART_BAR ? "bar" : "col");
        opc_xml_val(x, "c:grouping", "val", c->stacked ? "stacked" : "clustered");
        break;
    case KILN_CHART_LINE:
        opc_xml_start(x, "c:lineChart");
        opc_xml_val(x, "c:grouping", "val", "standard");
        break;
    case KILN_CHART_PIE:
        opc_xml_start(x, "c:pieChart");
        break;
    case KILN_CHART_DOUGHNUT:
        opc_xml_start(x, "c:doughnutChart");
        break;
    case KILN_CHART_SCATTER:
        opc_xml_start(x, "c:scatterChart");
        opc_xml_val(x, "c:scatterStyle", "val", "lineMarker");
        break;
    case KILN_CHART_AREA:
        opc_xml_start(x, "c:areaChart");
        opc_xml_val(x, "c:grouping", "val", grouping);
        break;
    }
    /* Written either way: PowerPoint takes a missing varyColors for 1. */
    opc_xml_val(x, "c:varyColors", "val", is_pie(c) ? "1" : "0");
    for (size_t i = 0; i < w->data->series_count; i++)
        write_series(w, i);
    switch (c->kind) {
    case KILN_CHART_COLUMN:
    case KILN_CHART_BAR:
        opc_xml_val(x, "c:gapWidth", "val", "150");
        if (c->stacked)
            opc_xml_val(x, "c:overlap", "val", "100");
        write_ax_ids(x);
        break;
    case KILN_CHART_LINE:
        opc_xml_val(x, "c:marker", "val", "1");
        write_ax_ids(x);
        break;
    case KILN_CHART_PIE:
        opc_xml_val(x, "c:firstSliceAng", "val", "0");
        break;
    case KILN_CHART_DOUGHNUT:
        opc_xml_val(x, "c:firstSliceAng", "val", "0");
        opc_xml_val(x, "c:holeSize", "val", "50");
        break;
    case KILN_CHART_SCATTER:
    case KILN_CHART_AREA:
        write_ax_ids(x);
        break;
    }
    opc_xml_end(x);
}

/* The parts of c:catAx and c:valAx before their own members. */
static void write_axis_start(chart_writer *w, const char *element, unsigned id,
                             const char *position, int gridlines, const char *title,
                             const char *format)
{
    opc_xml *x = w->x;
    opc_xml_start(x, element);
    opc_xml_val_int(x, "c:axId", "val", id);
    opc_xml_start(x, "c:scaling");
    opc_xml_val(x, "c:orientation", "val", "minMax");
    opc_xml_end(x);
    opc_xml_val(x, "c:delete", "val", "0");
    opc_xml_val(x, "c:axPos", "val", position);
    if (gridlines)
        opc_xml_empty(x, "c:majorGridlines");
    if (has_title(title))
        write_title(w, title, (int)w->text_size, position[0] == 'l');
    if (format) {
        opc_xml_start(x, "c:numFmt");
        opc_xml_attr(x, "formatCode", format);
        opc_xml_attr(x, "sourceLinked", "1");
        opc_xml_end(x);
    }
    opc_xml_val(x, "c:majorTickMark", "val", "out");
    opc_xml_val(x, "c:minorTickMark", "val", "none");
    opc_xml_val(x, "c:tickLblPos", "val", "nextTo");
    opc_xml_val_int(x, "c:crossAx", "val",
                    id == AXIS_ID_CATEGORY ? AXIS_ID_VALUE : AXIS_ID_CATEGORY);
    opc_xml_val(x, "c:crosses", "val", "autoZero");
}

static void write_axes(chart_writer *w)
{
    opc_xml *x = w->x;
    const kiln_chart *c = w->chart;
    const kiln_chart_data *d = w->data;
    if (is_pie(c))
        return;
    const char *value_format = d->series_count > 0 && d->series[0].number_format
                                   ? d->series[0].number_format
                                   : "General";
    int horizontal = c->kind == KILN_CHART_BAR;
    const char *cat_pos = horizontal ? "l" : "b";
    const char *val_pos = horizontal ? "b" : "l";
    const char *between = c->kind == KILN_CHART_AREA || c->kind == KILN_CHART_SCATTER ? "midCat"
                                                                                      : "between";
    if (c->kind == KILN_CHART_SCATTER) {
        /* Both axes are value axes: x first, along the bottom. */
        write_axis_start(w, "c:valAx", AXIS_ID_CATEGORY, "b", 0, c->x_title, "General");
        opc_xml_val(x, "c:crossBetween", "val", between);
        opc_xml_end(x);
    } else if (d->categories_dates && d->category_numbers) {
        /* Dates: a date axis, which places the points by date and labels
         * them in the cells' format, as Excel does for date categories. */
        write_axis_start(w, "c:dateAx", AXIS_ID_CATEGORY, cat_pos, 0, c->x_title,
                         d->category_format ? d->category_format : "General");
        opc_xml_val(x, "c:auto", "val", "0");
        opc_xml_val(x, "c:lblOffset", "val", "100");
        opc_xml_end(x);
    } else {
        write_axis_start(w, "c:catAx", AXIS_ID_CATEGORY, cat_pos, 0, c->x_title,
                         d->categories_numeric ? "General" : NULL);
        opc_xml_val(x, "c:auto", "val", "1");
        opc_xml_val(x, "c:lblAlgn", "val", "ctr");
        opc_xml_val(x, "c:lblOffset", "val", "100");
        opc_xml_val(x, "c:noMultiLvlLbl", "val", "0");
        opc_xml_end(x);
    }
    write_axis_start(w, "c:valAx", AXIS_ID_VALUE, val_pos, 1, c->y_title, value_format);
    opc_xml_val(x, "c:crossBetween", "val", between);
    opc_xml_end(x);
}

static void write_legend(chart_writer *w)
{
    static const char *const positions[] = {"r", "l", "t", "b"};
    kiln_legend l = w->chart->legend;
    if (l == KILN_LEGEND_NONE || (unsigned)l >= sizeof positions / sizeof positions[0])
        return;
    opc_xml *x = w->x;
    opc_xml_start(x, "c:legend");
    opc_xml_val(x, "c:legendPos", "val", positions[l]);
    opc_xml_val(x, "c:overlay", "val", "0");
    opc_xml_end(x);
}

static void write_chart_space(chart_writer *w, unsigned workbook_rid)
{
    opc_xml *x = w->x;
    const kiln_chart *c = w->chart;
    opc_xml_start(x, "c:chartSpace");
    opc_xml_attr(x, "xmlns:c", NS_C);
    opc_xml_attr(x, "xmlns:a", NS_A);
    opc_xml_attr(x, "xmlns:r", OPC_NS_R);
    opc_xml_val(x, "c:date1904", "val", "0");
    opc_xml_val(x, "c:lang", "val", "en-US");
    opc_xml_val(x, "c:roundedCorners", "val", "0");

    opc_xml_start(x, "c:chart");
    if (has_title(c->title))
        write_title(w, c->title, (int)(w->text_size * 7 / 5), 0);
    /* Without it Office titles a one-series chart with the series' name. */
    opc_xml_val(x, "c:autoTitleDeleted", "val", has_title(c->title) ? "0" : "1");
    opc_xml_start(x, "c:plotArea");
    opc_xml_empty(x, "c:layout");
    write_plot(w);
    write_axes(w);
    opc_xml_end(x); /* c:plotArea */
    write_legend(w);
    opc_xml_val(x, "c:plotVisOnly", "val", "1");
    opc_xml_val(x, "c:dispBlanksAs", "val", "gap");
    opc_xml_end(x); /* c:chart */

    /* The size every other text of the chart takes (tick labels, legend,
     * data labels): Office's 10 pt suits a chart in a page of text, not one
     * filling a slide. */
    if (w->text_size != DEFAULT_TEXT_SIZE) {
        opc_xml_start(x, "c:txPr");
        opc_xml_empty(x, "a:bodyPr");
        opc_xml_empty(x, "a:lstStyle");
        opc_xml_start(x, "a:p");
        opc_xml_start(x, "a:pPr");
        opc_xml_start(x, "a:defRPr");
        opc_xml_attr_uint(x, "sz", w->text_size);
        opc_xml_end(x);
        opc_xml_end(x); /* a:pPr */
        opc_xml_start(x, "a:endParaRPr");
        opc_xml_attr(x, "lang", "en-US");
        opc_xml_end(x);
        opc_xml_end(x); /* a:p */
        opc_xml_end(x); /* c:txPr */
    }

    opc_xml_start(x, "c:externalData");
    char rid[24];
    snprintf(rid, sizeof rid, "rId%u", workbook_rid);
    opc_xml_attr(x, "r:id", rid);
    opc_xml_val(x, "c:autoUpdate", "val", "0");
    opc_xml_end(x);
    opc_xml_end(x); /* c:chartSpace */
}

kiln_status opc_chart_add(opc_package *pkg, const char *part_dir, unsigned n,
                          const kiln_chart_data *data, const kiln_theme *theme,
                          unsigned text_size, const char *tmp_dir, kiln_error *err)
{
    const kiln_chart *c = data->chart;
    const char *pointer = c && c->pointer ? c->pointer : "";
    if (!c)
        return kiln_error_set(err, KILN_E_INTERNAL, pointer, "a chart without its spec");
    if (data->point_count > MAX_POINTS)
        return kiln_error_limit(err, KILN_E_LIMIT, pointer, MAX_POINTS, data->point_count,
                                "a chart of %zu points does not fit in its workbook "
                                "(at most %u)",
                                data->point_count, MAX_POINTS);
    if (data->series_count > OPC_CHART_MAX_SERIES)
        return kiln_error_limit(err, KILN_E_LIMIT, pointer, OPC_CHART_MAX_SERIES,
                                data->series_count,
                                "a chart of %zu series does not fit in its workbook "
                                "(at most %u)",
                                data->series_count, OPC_CHART_MAX_SERIES);

    char chart_part[256], workbook_part[256], workbook_target[128];
    snprintf(chart_part, sizeof chart_part, "%s/charts/chart%u.xml", part_dir, n);
    snprintf(workbook_part, sizeof workbook_part,
             "%s/embeddings/Microsoft_Excel_Worksheet%u.xlsx", part_dir, n);
    snprintf(workbook_target, sizeof workbook_target,
             "../embeddings/Microsoft_Excel_Worksheet%u.xlsx", n);

    unsigned char *xlsx = NULL;
    size_t xlsx_len = 0;
    kiln_status st = opc_chart_workbook(data, tmp_dir, &xlsx, &xlsx_len, err);
    if (st != KILN_E_OK)
        return st;
    if ((st = opc_default_add(pkg, "xlsx", OPC_CT_XLSX, err)) != KILN_E_OK) {
        free(xlsx);
        return st;
    }
    /* A zip already: storing it again compressed would gain nothing. */
    if ((st = opc_part_add(pkg, workbook_part, OPC_CT_XLSX, xlsx, xlsx_len, 0, err)) != KILN_E_OK)
        return st;
    unsigned rid = opc_rel_add(pkg, chart_part, OPC_REL_PACKAGE, workbook_target, 0, err);
    if (!rid)
        return err && err->code != KILN_E_OK ? err->code : KILN_E_NOMEM;

    chart_writer w = {.data = data,
                      .chart = c,
                      .theme = theme,
                      .text_size = text_size ? text_size : DEFAULT_TEXT_SIZE};
    if (!(w.x = opc_xml_new()))
        return kiln_error_set(err, KILN_E_NOMEM, pointer, "out of memory writing a chart");
    write_chart_space(&w, rid);
    return opc_xml_finish(w.x, pkg, chart_part, OPC_CT_CHART, err);
}
