/*
 * pdf_page.c - pages, the space left on them and the links on them: what
 * every part of the layout that draws (the flow, tables, paragraphs) asks
 * of the page it draws on, so that none of them calls back into the flow
 * (pdf_layout.c).
 */
#include <stdlib.h>

#include "pdf_internal.h"
#include "../../common/banned.h"

kiln_status pdf_new_page(pdf_ctx *ctx)
{
    HPDF_Page page;

    if (ctx->page_count >= PDF_MAX_PAGES)
        return kiln_error_limit(ctx->err, KILN_E_LIMIT, NULL, PDF_MAX_PAGES, ctx->page_count + 1,
                                "the PDF would have more than %u pages", PDF_MAX_PAGES);
    if (ctx->page_count == ctx->page_cap) {
        size_t cap = ctx->page_cap ? ctx->page_cap * 2 : 64;
        HPDF_Page *pages = realloc(ctx->pages, cap * sizeof *pages);
        if (!pages)
            return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory adding a page");
        ctx->pages = pages;
        ctx->page_cap = cap;
    }
    page = HPDF_AddPage(ctx->pdf);
    if (!page)
        return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "libharu cannot add a page");
    HPDF_Page_SetWidth(page, (HPDF_REAL)ctx->page_w);
    HPDF_Page_SetHeight(page, (HPDF_REAL)ctx->page_h);
    ctx->pages[ctx->page_count++] = page;
    ctx->page = page;
    ctx->y = ctx->top;
    ctx->page_fresh = 1;
    return KILN_E_OK;
}

double pdf_space_left(const pdf_ctx *ctx)
{
    return ctx->page ? ctx->y - ctx->bottom : 0;
}

kiln_status pdf_ensure_space(pdf_ctx *ctx, double height)
{
    if (!ctx->page || (ctx->y - height < ctx->bottom - 0.01 && !ctx->page_fresh))
        return pdf_new_page(ctx);
    return KILN_E_OK;
}

kiln_status pdf_add_link(pdf_ctx *ctx, double x0, double y0, double x1, double y1,
                         const char *uri, size_t heading)
{
    pdf_link *link;

    if (ctx->link_count == ctx->link_cap) {
        size_t cap = ctx->link_cap ? ctx->link_cap * 2 : 32;
        pdf_link *links = realloc(ctx->links, cap * sizeof *links);
        if (!links)
            return kiln_error_set(ctx->err, KILN_E_NOMEM, NULL, "out of memory adding a link");
        ctx->links = links;
        ctx->link_cap = cap;
    }
    link = &ctx->links[ctx->link_count++];
    link->page = ctx->page_count ? ctx->page_count - 1 : 0;
    link->x0 = x0;
    link->y0 = y0;
    link->x1 = x1;
    link->y1 = y1;
    link->uri = uri;
    link->heading = heading;
    return KILN_E_OK;
}
