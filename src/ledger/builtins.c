/* src/ledger/builtins.c: the replayers FrankenTrace itself provides, one line
 * per (kind, op). Each is a function with the ft_ledger_replayer signature
 * that lives with the code it replays (the parser's next to the parser, a
 * transform's next to the transform) and is declared in that folder's
 * internal header; this table only wires them in. Records whose (kind, op)
 * has no entry are reported by replay as "not replayable yet".
 *
 * Expected entries (see docs/ledger.md, "Replayers"):
 *   parse     "parse"            src/ir        jaxpr text -> canonical text
 *   transform "jvp" "vjp" "grad" "vmap" ...    src/transforms
 *   optimize  "saturate"         src/egraph
 *   compile   "jit"              src/lower     (output: the compiled-code hash)
 *   call      "interp" "jit"     src/runtime   (reexec: inputs -> outputs)
 */
#include "ledger/ledger.h"

typedef struct builtin {
  ft_ledger_kind kind;
  const char *op;
  ft_ledger_replayer fn;
} builtin;

static const builtin builtins[] = {
    {FT_LEDGER_NUM_KINDS, NULL, NULL}, /* placeholder: keeps the table non-empty */
};

void ft_ledger_register_builtins(void) {
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    if (builtins[i].fn) ft_ledger_register_replayer(builtins[i].kind, builtins[i].op, builtins[i].fn, NULL);
}
