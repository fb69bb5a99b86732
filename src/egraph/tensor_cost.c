/* src/egraph/tensor_cost.c: the cost model extraction minimizes and the
 * report prints. One unit is one floating-point operation; moving four
 * bytes (one float32 read or written) also costs one unit; every equation
 * costs one more unit (a kernel launch, a buffer). Shapes decide all of it,
 * so the model is cheap and deterministic. It is a model, not a timing:
 * what matters is that it orders programs sensibly (fewer equations, fewer
 * bytes, cheaper matrix chains). */
#include <string.h>

#include "egraph/tensor.h"

static double elems(const ft_aval *a) { return (double)ft_aval_size(a); }
static double nbytes(const ft_aval *a) { return elems(a) * (double)ft_dtype_size(a->dtype); }

/* FLOPs per element of an elementwise primitive. */
static double flop_weight(ft_prim p) {
  switch (p) {
  case FT_P_EXP: case FT_P_EXP2: case FT_P_LOG: case FT_P_LOG2: case FT_P_LOG1P: case FT_P_EXPM1:
  case FT_P_TANH: case FT_P_LOGISTIC: case FT_P_SIN: case FT_P_COS: case FT_P_TAN:
  case FT_P_ASIN: case FT_P_ACOS: case FT_P_ATAN: case FT_P_SINH: case FT_P_COSH:
  case FT_P_ASINH: case FT_P_ACOSH: case FT_P_ATANH: case FT_P_ERF: case FT_P_ERFC:
  case FT_P_ERF_INV: case FT_P_POW: case FT_P_ATAN2: case FT_P_CBRT: case FT_P_LGAMMA:
  case FT_P_DIGAMMA: case FT_P_BESSEL_I0E: case FT_P_BESSEL_I1E:
    return 16;
  case FT_P_POLYGAMMA: case FT_P_ZETA: case FT_P_IGAMMA: case FT_P_IGAMMAC:
  case FT_P_IGAMMA_GRAD_A: case FT_P_REGULARIZED_INCOMPLETE_BETA:
    return 64;
  case FT_P_DIV: case FT_P_REM: case FT_P_SQRT: case FT_P_RSQRT: case FT_P_INTEGER_POW:
    return 4;
  default:
    return 1;
  }
}

static double jaxpr_param_cost(const ft_pval *v, bool max) {
  if (v->tag == FT_PV_JAXPR) return ft_tensor_jaxpr_cost(v->u.jaxpr);
  if (v->tag != FT_PV_TUPLE) return 0;
  double c = 0;
  for (int i = 0; i < v->n; i++) {
    double x = jaxpr_param_cost(&v->u.items[i], max);
    c = max ? (x > c ? x : c) : c + x;
  }
  return c;
}

/* Product of the contracting dimensions of a dot_general's lhs. */
static double dot_k(const ft_pval *ps, const ft_aval *lhs) {
  int k = ft_prim_param_index(FT_P_DOT_GENERAL, "dimension_numbers");
  if (!ps || k < 0) return 1;
  const ft_pval *dn = &ps[k];
  if (dn->tag != FT_PV_TUPLE || dn->n < 1 || dn->u.items[0].tag != FT_PV_TUPLE ||
      dn->u.items[0].n < 1)
    return 1;
  int64_t ax[FT_MAX_RANK];
  int n = 0;
  if (!ft_pv_get_ints(&dn->u.items[0].u.items[0], ax, FT_MAX_RANK, &n)) return 1;
  double r = 1;
  for (int i = 0; i < n; i++)
    if (ax[i] >= 0 && ax[i] < lhs->rank) r *= (double)lhs->dims[ax[i]];
  return r;
}

double ft_tensor_eqn_cost(ft_prim p, const ft_pval *ps, int n_in, const ft_aval *in, int n_out,
                          const ft_aval *out) {
  const ft_prim_info *pi = ft_prim_get(p);
  double in_b = 0, out_b = 0, in_e = 0, out_e = 0;
  for (int i = 0; i < n_in; i++)
    if (in[i].rank > 0) in_b += nbytes(&in[i]), in_e += elems(&in[i]);
  for (int i = 0; i < n_out; i++) out_b += nbytes(&out[i]), out_e += elems(&out[i]);
  double flops = 0, moved = in_b + out_b;
  switch (pi->family) {
  case FT_FAM_UNARY: case FT_FAM_BINARY: case FT_FAM_COMPARE: case FT_FAM_TERNARY:
  case FT_FAM_SELECT: case FT_FAM_CONVERT:
    flops = out_e * flop_weight(p);
    break;
  case FT_FAM_LAYOUT:
    break;
  case FT_FAM_REDUCE: case FT_FAM_CUMULATIVE:
    flops = in_e;
    break;
  case FT_FAM_DOT:
    flops = n_in >= 1 ? 2 * out_e * dot_k(ps, &in[0]) : 0;
    break;
  case FT_FAM_CONTROL: {
    double body = 0;
    if (ps) {
      for (int i = 0; i < pi->n_params; i++)
        body += jaxpr_param_cost(&ps[i], p == FT_P_COND);
      if (p == FT_P_SCAN) {
        int k = ft_prim_param_index(p, "length");
        if (k >= 0 && ps[k].tag == FT_PV_INT && ps[k].u.i > 0) body *= (double)ps[k].u.i;
      } else if (p == FT_P_WHILE) {
        body *= 8; /* an unknown trip count */
      }
    }
    flops = body;
    break;
  }
  default:
    flops = 2 * (in_e + out_e);
    break;
  }
  return 1.0 + flops + moved / 4;
}

double ft_tensor_jaxpr_cost(const ft_jaxpr *j) {
  double c = 0;
  ft_aval in[256], out[256];
  for (int e = 0; e < j->n_eqn; e++) {
    const ft_eqn *q = &j->eqns[e];
    int ni = q->n_in < 256 ? q->n_in : 256, no = q->n_out < 256 ? q->n_out : 256;
    for (int i = 0; i < ni; i++) in[i] = q->in[i]->aval;
    for (int i = 0; i < no; i++) out[i] = q->out[i]->aval;
    c += ft_tensor_eqn_cost(q->prim, q->params, ni, in, no, out);
  }
  return c;
}

static int pval_eqns(const ft_pval *v) {
  if (v->tag == FT_PV_JAXPR) return ft_tensor_jaxpr_eqns(v->u.jaxpr);
  if (v->tag != FT_PV_TUPLE) return 0;
  int n = 0;
  for (int i = 0; i < v->n; i++) n += pval_eqns(&v->u.items[i]);
  return n;
}

int ft_tensor_jaxpr_eqns(const ft_jaxpr *j) {
  int n = j->n_eqn;
  for (int e = 0; e < j->n_eqn; e++) {
    const ft_eqn *q = &j->eqns[e];
    if (ft_prim_get(q->prim)->family != FT_FAM_CONTROL) continue;
    for (int i = 0; i < ft_prim_get(q->prim)->n_params; i++) n += pval_eqns(&q->params[i]);
  }
  return n;
}
