#!/usr/bin/env bash
# tests/coverage/test_coverage_jax.sh FTC LIST: `ftc coverage --jax` over the
# committed list of JAX 0.12's primitives prints one row per primitive with
# its state here; a few rows are checked exactly, and the counts add up.
set -u
FTC=$1
LIST=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0
"$FTC" coverage --jax "$LIST" >"$out" || { echo "FAIL: exit status $?"; exit 1; }

# row NAME STATE: the row of NAME is exactly STATE (after the padding)
row() {
  local got
  got=$(awk -v n="$1" '$1 == n { sub(/^[^ ]+ +/, ""); print; exit }' "$out")
  if [ "$got" != "$2" ]; then
    printf 'FAIL row %s:\n  got:  %s\n  want: %s\n' "$1" "$got" "$2"
    fail=$((fail + 1))
  fi
}

every='every pass (eval jvp transpose batch egraph lower)'
int_only='eval jvp batch egraph lower; transpose: not linear'
row stack "$every"
multi='eval jvp transpose batch lower; egraph: n/a: opaque multi-output node (outputs read by proj nodes): CSE and DCE only'
row unstack "$multi"
row tile "$every"
row polynomial "$every"
row optimization_barrier "$multi"
row sharding_constraint "$every"
row scatter-sub "$every"
row select_and_gather_add "$every"
row select_and_scatter_add "$every"
row clz "$int_only"
row population_count "$int_only"
row mulhi "$int_only"
row platform_index "$int_only"
row add "$every"
# issue 17 leftovers (branch prims2)
nonlin='eval jvp batch egraph lower; transpose: not linear'
row igamma "$nonlin"
row igammac "$nonlin"
row log2 "$nonlin"
row bessel_i0e "$nonlin"
row bessel_i1e "$nonlin"
row regularized_incomplete_beta "$nonlin"
row igamma_grad_a 'eval batch egraph lower; jvp: unsupported: JAX defines no JVP rule for igamma_grad_a ("Differentiation rule for '"'"'igamma_grad_a'"'"' not implemented"); transpose: not linear'
# JAX 0.12's HiJAX primitives of jax.numpy (branch prims)
row SearchSorted "$int_only"
row Frexp 'eval jvp batch lower; transpose: not linear; egraph: n/a: opaque multi-output node (outputs read by proj nodes): CSE and DCE only'
row Ldexp "$every"
row approx_top_k 'eval jvp batch lower; transpose: not linear; egraph: n/a: opaque multi-output node (outputs read by proj nodes): CSE and DCE only'
row Nonzero 'eval jvp batch lower; transpose: not linear; egraph: n/a: opaque multi-output node (outputs read by proj nodes): CSE and DCE only'
# ragged_dot_general (branch ragged): its transpose refuses modes RAGGED_CONTRACTING/BATCH at run time, as JAX
row ragged_dot_general "$every"
row all_gather "$every"  # compiled since branch spmdjit (routine steps in a compiled shard_map)
row pmax 'eval batch lower; jvp: unsupported: JAX defines no JVP rule for pmax ("Differentiation rule for '"'"'pmax'"'"' not implemented"); transpose: not linear; egraph: n/a: opaque multi-output node (outputs read by proj nodes): CSE and DCE only'

# the generic reduce and reduce_window (branches ctlprims, rwgeneric): no transpose (JAX: no reverse mode)
row reduce_window 'eval jvp batch lower; transpose: not linear; egraph: n/a: opaque multi-output node (outputs read by proj nodes): CSE and DCE only'
# one row per listed primitive, and a summary whose counts add up
n_list=$(grep -vc '^#' "$LIST")
n_rows=$(awk 'NF && !/^[0-9]+ JAX primitives/ {n++} END {print n}' "$out")
[ "$n_rows" = "$n_list" ] || { echo "FAIL: $n_rows rows for $n_list primitives"; fail=$((fail + 1)); }
sum=$(sed -nE 's/^([0-9]+) JAX primitives: ([0-9]+) with every rule, ([0-9]+) with some passes refused \(reasons above\), ([0-9]+) not parsed$/\1 \2 \3 \4/p' "$out")
read -r total a b c <<<"$sum"
if [ -z "$sum" ] || [ "$total" != "$n_list" ] || [ $((a + b + c)) != "$total" ]; then
  echo "FAIL: summary line: '$(tail -1 "$out")'"; fail=$((fail + 1))
fi
# a missing list is an error naming the file
if "$FTC" coverage --jax /nonexistent/list.txt >/dev/null 2>"$out"; then
  echo "FAIL: a missing list succeeded"; fail=$((fail + 1))
elif ! grep -q "cannot read the JAX primitive list '/nonexistent/list.txt'" "$out"; then
  echo "FAIL: missing-list message: $(cat "$out")"; fail=$((fail + 1))
fi
[ "$fail" = 0 ] && echo "coverage --jax: all checks passed"
exit $((fail > 0))
