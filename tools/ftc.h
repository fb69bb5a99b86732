/* tools/ftc.h: shared declarations of the ftc command-line tool. Only tools/
 * prints and exits; the library never does. */
#ifndef FTC_H
#define FTC_H
#include "ft.h"

#define FTC_CMD(name, summary) int ftc_cmd_##name(int argc, char **argv);
#include "ftc_cmds.def"
#undef FTC_CMD

/* True when argv holds -h or --help. */
int ftc_wants_help(int argc, char **argv);
/* Prints "ftc <cmd>: <message>" to stderr; returns 1 (the exit status for bad input). */
int ftc_fail(const char *cmd, const char *fmt, ...);
/* Prints "ftc <cmd>: <message> (try 'ftc help <cmd>')" to stderr; returns 2,
 * the exit status of a usage error (an unknown option, a missing or
 * malformed option value or FILE). */
int ftc_usage(const char *cmd, const char *fmt, ...);
/* A new context for a command: the ledger given by the global --ledger DIR
 * option, if any, is attached to it (one context at a time; free it with
 * ft_ctx_free before making another). NULL (after a message) on failure. */
ft_ctx *ftc_ctx_new(void);
/* This process's MPI rank under mpirun or --dist (docs/spmd.md), else 0. */
int ftc_dist_rank(void);
/* Whether ftc attaches MPI_COMM_WORLD to its contexts (mpirun or --dist). */
bool ftc_dist_on(void);
/* The ledger of the global --ledger DIR option, or NULL (owned by ftc). */
ft_ledger *ftc_ledger(void);
/* Evaluates j (reference interpreter) on the .npy files ins (a parsed
 * jaxpr's constants first, then its inputs) and prints each output's aval and
 * first values; returns the exit status. */
int ftc_run_and_print(ft_ctx *ctx, const char *cmd, const ft_jaxpr *j, int n_ins, const char *const *ins);
/* Prints a's first values (at most max), every dtype exactly: integers in
 * full, f32/f16/bf16 with 9 significant digits, f64 with the fewest that
 * read back to the same double, complex as re+imj; "[...]" closes a
 * truncated list. No newline. */
void ftc_print_values(const ft_array *a, int64_t max);
/* The JIT options the global options give (--allow-fallback). Static. */
const ft_jit_options *ftc_jit_options(void);
/* Prints each guard fired on ctx (hardened mode) as "ftc <cmd>: guard ...". */
void ftc_report_guards(const char *cmd, const ft_ctx *ctx);
/* Reads a whole file ("-" = stdin) into a malloc'd NUL-terminated buffer; NULL on error. */
char *ftc_read_file(const char *path, size_t *len_out);
#endif
