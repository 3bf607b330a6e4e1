/*
 * cli.h - what the `kiln` commands share across the files of cli/.
 */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stddef.h>

/* One --help line per limit of the table (contract/limits.h), as `kiln run`
 * and `kiln session` show them, into text[cap]; returns the length. */
size_t kiln_cli_limit_help(char *text, size_t cap);

/* `kiln session` (cli/session.c). */
int kiln_session_main(int argc, char **argv);
/* `kiln batch` (cli/batch.c). */
int kiln_batch_main(int argc, char **argv);
/* `kiln mcp` (cli/mcp.c). */
int kiln_mcp_main(int argc, char **argv);
/* `kiln zygote SOCKET` (cli/session.c). */
int kiln_zygote_command(int argc, char **argv);

#endif
