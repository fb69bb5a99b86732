/* src/replay/builtins.c: the replayers FrankenTrace provides, one line per
 * (kind, op). The replayers themselves are in replayers.c (they need only
 * the public API); this table only wires them in. Records whose (kind, op)
 * has no entry are reported by replay as "not replayable yet".
 *
 *   parse     "parse"                     source text -> canonical text
 *   trace     "trace"                     self-check of the stored outputs
 *   transform "jvp" "dce" "inline" "linearize" "transpose" "vjp" "grad"
 *             "value_and_grad" "vmap" "jacfwd" "jacrev" "hessian"
 *                                         canonical text + params -> canonical text
 *   call      "interp" "jit"              reexec: program + arrays -> arrays (the
 *                                         JIT equals the interpreter bitwise)
 *   compile   "jit"                       program + constants + options -> plan
 *                                         text and cache key (re-planned)
 *   optimize  "saturate"                  canonical text + tier -> canonical text */
#include "replay/replay.h"

typedef struct builtin {
  ft_ledger_kind kind;
  const char *op;
  ft_ledger_replayer fn;
} builtin;

static const builtin builtins[] = {
    {FT_LEDGER_PARSE, "parse", ft_lreplay_parse},
    {FT_LEDGER_TRACE, "trace", ft_lreplay_trace},
    {FT_LEDGER_TRANSFORM, "jvp", ft_lreplay_transform},
    {FT_LEDGER_TRANSFORM, "dce", ft_lreplay_transform},
    {FT_LEDGER_TRANSFORM, "inline", ft_lreplay_transform},
    {FT_LEDGER_TRANSFORM, "linearize", ft_lreplay_transform},
    {FT_LEDGER_TRANSFORM, "transpose", ft_lreplay_transform},
    {FT_LEDGER_TRANSFORM, "vjp", ft_lreplay_transform},
    {FT_LEDGER_TRANSFORM, "grad", ft_lreplay_transform},
    {FT_LEDGER_TRANSFORM, "value_and_grad", ft_lreplay_transform},
    {FT_LEDGER_TRANSFORM, "vmap", ft_lreplay_transform},
    {FT_LEDGER_TRANSFORM, "jacfwd", ft_lreplay_transform},
    {FT_LEDGER_TRANSFORM, "jacrev", ft_lreplay_transform},
    {FT_LEDGER_TRANSFORM, "hessian", ft_lreplay_transform},
    {FT_LEDGER_CALL, "interp", ft_lreplay_interp},
    {FT_LEDGER_CALL, "jit", ft_lreplay_interp},
    {FT_LEDGER_COMPILE, "jit", ft_lreplay_jit_plan},
    {FT_LEDGER_OPTIMIZE, "saturate", ft_lreplay_transform},
};

void ft_ledger_register_builtins(void) {
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    ft_ledger_register_replayer(builtins[i].kind, builtins[i].op, builtins[i].fn, NULL);
}
