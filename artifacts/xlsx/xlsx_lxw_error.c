/*
 * xlsx_lxw_error.c - the one translation of a libxlsxwriter error into a
 * kiln_error, for every file of the xlsx writer that calls the library (the
 * bottom of the writer's layers: it calls nothing of theirs; see
 * xlsx_internal.h).
 */
#include <xlsxwriter.h>

#include "xlsx_internal.h"
#include "../../common/banned.h"

kiln_status xlsx_lxw_error(kiln_error *err, lxw_error e, const char *pointer, const char *what)
{
    kiln_status code;
    switch (e) {
    case LXW_NO_ERROR:
        return KILN_E_OK;
    case LXW_ERROR_MEMORY_MALLOC_FAILED:
        code = KILN_E_NOMEM;
        break;
    case LXW_ERROR_CREATING_XLSX_FILE:
    case LXW_ERROR_CREATING_TMPFILE:
    case LXW_ERROR_READING_TMPFILE:
    case LXW_ERROR_ZIP_FILE_OPERATION:
    case LXW_ERROR_ZIP_PARAMETER_ERROR:
    case LXW_ERROR_ZIP_BAD_ZIP_FILE:
    case LXW_ERROR_ZIP_INTERNAL_ERROR:
    case LXW_ERROR_ZIP_FILE_ADD:
    case LXW_ERROR_ZIP_CLOSE:
        code = KILN_E_WRITE;
        break;
    case LXW_ERROR_FEATURE_NOT_SUPPORTED:
    case LXW_ERROR_SHARED_STRING_INDEX_NOT_FOUND:
        code = KILN_E_INTERNAL;
        break;
    default:
        code = KILN_E_INVALID_SPEC;
        break;
    }
    return kiln_error_set(err, code, pointer, "%s: %s", what, lxw_strerror(e));
}
