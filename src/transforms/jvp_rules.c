/* src/transforms/jvp_rules.c: the JVP rule of every primitive (JAX's
 * ad.defjvp / deflinear rules), emitted after the primal equation. Each rule
 * keeps the tangent part linear in the input tangents: factors that depend
 * only on primals (cos x, 1 - y², masks) are computed as primal values and
 * multiply the tangent, so partial evaluation moves them to the primal side
 * and transposition sees only linear primitives. NULL tangents are symbolic
 * zeros and produce no equations. ft_jvp_rule_status says which primitives
 * have no rule and why. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "custom.h"
#include "transforms.h"

#define JVP_NO_RULE_NEXTAFTER "unsupported: nextafter has no derivative (JAX defines no JVP rule)"
#define JVP_NO_RULE_ZETA \
  "unsupported: JAX defines no JVP rule for zeta (\"Differentiation rule for 'zeta' not implemented\")"
#define JVP_NO_RULE_POLYGAMMA_M \
  "unsupported: JAX refuses it (\"polygamma gradient with respect to m is not supported\")"
#define JVP_NO_RULE_IGAMMA_GRAD_A \
  "unsupported: JAX defines no JVP rule for igamma_grad_a (\"Differentiation rule for " \
  "'igamma_grad_a' not implemented\")"
#define JVP_NO_RULE_BETAINC_AB \
  "unsupported: JAX refuses it (\"Betainc gradient with respect to a and b not supported.\")"
#define JVP_NO_RULE_BITCAST \
  "unsupported: reinterpreting bits as a float has no derivative (JAX defines no JVP rule)"

const char *ft_jvp_rule_status(ft_prim p) {
  switch (p) {
  case FT_P_NEXTAFTER: return JVP_NO_RULE_NEXTAFTER;
  case FT_P_BITCAST_CONVERT_TYPE: return JVP_NO_RULE_BITCAST;
  case FT_P_ZETA: return JVP_NO_RULE_ZETA;
  case FT_P_IGAMMA_GRAD_A: return JVP_NO_RULE_IGAMMA_GRAD_A;
  case FT_P_CUSTOM_LIN: return "unsupported: " FT_CUSTOM_LIN_NO_JVP;
  case FT_P_CUSTOM_ROOT: /* jvp_control.c: a zero tangent in f's consts is supported */
    return "unsupported: only where f's consts carry no tangent (the root's is then zero, as JAX's); "
           FT_CUSTOM_ROOT_NO_F;
  /* issue 27: JAX 0.12 registers no JVP for pmax_p/pmin_p (jax/_src/lax/parallel.py) */
  case FT_P_PMAX:
    return "unsupported: JAX defines no JVP rule for pmax (\"Differentiation rule for 'pmax' not implemented\")";
  case FT_P_PMIN:
    return "unsupported: JAX defines no JVP rule for pmin (\"Differentiation rule for 'pmin' not implemented\")";
  case FT_P_QR: case FT_P_EIG: case FT_P_SCHUR: case FT_P_HESSENBERG: case FT_P_TRIDIAGONAL:
  case FT_P_HOUSEHOLDER_PRODUCT: case FT_P_GEQRF: case FT_P_ORMQR:
    return ft_spectral_jvp_status(p); /* linalg2 */
  default: return ad_linalg_jvp_status(p); /* ad_linalg.c */
  }
}

/* The same primitive applied to the tangents (linear primitives): the
 * primal operands at positions with nonlin[i] are passed as they are. */
static ft_var *same_op(jvp_call *c, int n_in, ft_var **in) {
  return tx_emit(c->t, c->e->prim, c->params, n_in, in);
}

/* Tangent of x, or explicit zeros when another operand needs a real array. */
static ft_var *inst(jvp_call *c, int i) {
  return c->dx[i] ? c->dx[i] : tx_zeros(c->t, &c->x[i]->aval);
}

static ft_var *lit(jvp_call *c, double v) { return tx_lit(c->t, c->y[0]->aval.dtype, v); }

/* dy = dx * scale, where scale is a primal value (or NULL when dx is zero). */
static ft_var *scale(jvp_call *c, ft_var *dx, ft_var *s) {
  if (!dx) return NULL;
  return tx_mul(c->t, dx, s);
}

/* The complex jvps of the inverse trigonometric and hyperbolic functions,
 * written as JAX 0.12 writes them (lax.py) so that the branch of each
 * square root is JAX's: asin g rsqrt(1 - x^2), acos -g rsqrt(1 - x^2),
 * atan g / (1 + x^2), asinh g rsqrt(complex(re^2 + (1 - im^2), 2 re im)),
 * acosh g rsqrt(x - 1) rsqrt(x + 1), atanh g / (1 - x^2), with 1 - x^2
 * the one_minus_square primitive, asinh's with x scaled as JAX scales it.
 * NULL when the rule does not apply (not complex, or another primitive). */
static ft_var *inverse_trig_cpx(jvp_call *c, ft_var *one) {
  tx *t = c->t;
  ft_var *x = c->x[0], *dx = c->dx[0];
  ft_prim p = c->e->prim;
  if (!dx) return NULL;
  switch (p) {
  case FT_P_ASIN: case FT_P_ACOS: {
    ft_var *d = tx_unop(t, FT_P_RSQRT, tx_unop(t, FT_P_ONE_MINUS_SQUARE, x));
    return tx_mul(t, dx, p == FT_P_ACOS ? tx_neg(t, d) : d);
  }
  case FT_P_ATAN: return tx_div(t, dx, tx_add(t, one, tx_unop(t, FT_P_SQUARE, x)));
  case FT_P_ATANH: return tx_div(t, dx, tx_unop(t, FT_P_ONE_MINUS_SQUARE, x));
  case FT_P_ACOSH:
    return tx_mul(t, dx, tx_mul(t, tx_unop(t, FT_P_RSQRT, tx_sub(t, x, one)),
                                tx_unop(t, FT_P_RSQRT, tx_add(t, x, one))));
  case FT_P_ASINH: {
    /* JAX's _asinh_jvp: x scaled by s = clamp(1, max(|re|, |im|) 2^-(e/2-2),
     * 2^(e/2+2)) (e = the part type's maxexp) so that the squares cannot
     * overflow; rsqrt(x_s^2 + 1) / s, 0 where a part is infinite. */
    ft_dtype pd = x->aval.dtype == FT_C64 ? FT_F32 : FT_F64;
    int half = x->aval.dtype == FT_C64 ? 64 : 512;
    ft_var *rx = tx_unop(t, FT_P_REAL, x), *ix = tx_unop(t, FT_P_IMAG, x);
    ft_var *ma = tx_binop(t, FT_P_MAX, tx_unop(t, FT_P_ABS, rx), tx_unop(t, FT_P_ABS, ix));
    ft_var *cl[3] = {tx_lit(t, pd, 1.0), tx_mul(t, ma, tx_lit(t, pd, ldexp(1.0, -(half - 2)))),
                     tx_lit(t, pd, ldexp(1.0, half + 2))};
    ft_var *sc = tx_unop(t, FT_P_STOP_GRADIENT, tx_emit(t, FT_P_CLAMP, NULL, 3, cl));
    ft_var *inv = tx_integer_pow(t, sc, -1);
    ft_var *rs = tx_mul(t, rx, inv), *is = tx_mul(t, ix, inv);
    ft_var *re = tx_add(t, tx_unop(t, FT_P_SQUARE, rs), tx_unop(t, FT_P_ONE_MINUS_SQUARE, is));
    ft_var *im = tx_mul(t, tx_lit(t, pd, 2.0), tx_mul(t, rs, is));
    ft_var *in[2] = {re, im};
    ft_var *r = tx_unop(t, FT_P_RSQRT, tx_emit(t, FT_P_COMPLEX, NULL, 2, in));
    ft_var *pr[2] = {tx_mul(t, tx_unop(t, FT_P_REAL, r), inv), tx_mul(t, tx_unop(t, FT_P_IMAG, r), inv)};
    ft_var *d = tx_emit(t, FT_P_COMPLEX, NULL, 2, pr);
    ft_var *eq[2] = {ma, tx_lit(t, pd, INFINITY)};
    ft_var *isinf = tx_emit(t, FT_P_EQ, NULL, 2, eq);
    return tx_mul(t, dx, tx_select(t, isinf, d, tx_zeros(t, &x->aval)));
  }
  default: return NULL;
  }
}

static bool is_inverse_trig(ft_prim p) {
  return p == FT_P_ASIN || p == FT_P_ACOS || p == FT_P_ATAN || p == FT_P_ASINH || p == FT_P_ACOSH ||
         p == FT_P_ATANH;
}

static bool unary(jvp_call *c) {
  tx *t = c->t;
  ft_var *x = c->x[0], *dx = c->dx[0], *y = c->y[0], *r = NULL;
  const ft_aval *av = &x->aval;
  ft_var *one = lit(c, 1.0);
  if (ft_dtype_is_complex(av->dtype) && is_inverse_trig(c->e->prim)) {
    r = inverse_trig_cpx(c, one);
    c->dy[0] = r ? tx_bcast_to(t, r, &y->aval) : NULL;
    return !t->failed;
  }
  switch (c->e->prim) {
  case FT_P_NEG: r = tx_neg(t, dx); break;
  case FT_P_SIGN:
    if (ft_dtype_is_complex(av->dtype) && dx) {
      /* JAX 0.12's _sign_jvp_rule: y * complex(0, dtheta) with dtheta =
       * imag(conj(y) g) / where(|x| == 0, 1, |x|) (0 at x = 0, as real sign) */
      ft_pval *ps = tx_params(t, FT_P_CONJ);
      if (!ps) return false;
      pset(FT_P_CONJ, ps, "input_dtype", ft_pv_dtype(av->dtype));
      ft_var *num = tx_unop(t, FT_P_IMAG, tx_mul(t, tx_emit(t, FT_P_CONJ, ps, 1, &y), dx));
      ft_var *ax = tx_unop(t, FT_P_ABS, x);
      ft_var *in[2] = {ax, tx_lit(t, ax ? ax->aval.dtype : FT_F32, 0.0)};
      ft_var *z = tx_emit(t, FT_P_EQ, NULL, 2, in);
      ft_var *dth = tx_div(t, num, tx_select(t, z, ax, tx_full(t, ax ? &ax->aval : av, 1.0)));
      ft_var *parts[2] = {dth ? tx_zeros(t, &dth->aval) : NULL, dth};
      r = tx_mul(t, y, tx_emit(t, FT_P_COMPLEX, NULL, 2, parts));
      break;
    }
    return true;
  case FT_P_FLOOR: case FT_P_CEIL: case FT_P_ROUND: case FT_P_STOP_GRADIENT:
    return true;
  case FT_P_EXP: r = scale(c, dx, y); break;
  case FT_P_EXP2: /* complex: JAX's order, log(2 + 0i) * (g * y) */
    if (ft_dtype_is_complex(av->dtype)) r = dx ? tx_mul(t, lit(c, M_LN2), tx_mul(t, dx, y)) : NULL;
    else r = scale(c, dx, tx_mul(t, y, lit(c, M_LN2)));
    break;
  case FT_P_LOG: r = tx_div(t, dx, x); break;
  case FT_P_LOG2: r = tx_div(t, dx, tx_mul(t, x, lit(c, 0.69314718055994531))); break; /* JAX's */
  case FT_P_LOG1P: r = tx_div(t, dx, tx_add(t, one, x)); break;
  case FT_P_EXPM1: r = scale(c, dx, tx_add(t, y, one)); break;
  case FT_P_TANH: r = scale(c, dx, tx_sub(t, one, tx_mul(t, y, y))); break;
  case FT_P_LOGISTIC: r = scale(c, dx, tx_mul(t, y, tx_sub(t, one, y))); break;
  case FT_P_SIN: r = scale(c, dx, tx_unop(t, FT_P_COS, x)); break;
  case FT_P_COS: r = scale(c, dx, tx_neg(t, tx_unop(t, FT_P_SIN, x))); break;
  case FT_P_TAN: r = scale(c, dx, tx_add(t, one, tx_mul(t, y, y))); break;
  case FT_P_ASIN:
    r = scale(c, dx, tx_unop(t, FT_P_RSQRT, tx_sub(t, one, tx_mul(t, x, x))));
    break;
  case FT_P_ACOS:
    r = scale(c, dx, tx_neg(t, tx_unop(t, FT_P_RSQRT, tx_sub(t, one, tx_mul(t, x, x)))));
    break;
  case FT_P_ATAN: r = tx_div(t, dx, tx_add(t, one, tx_mul(t, x, x))); break;
  case FT_P_SINH: r = scale(c, dx, tx_unop(t, FT_P_COSH, x)); break;
  case FT_P_COSH: r = scale(c, dx, tx_unop(t, FT_P_SINH, x)); break;
  case FT_P_ASINH:
    r = scale(c, dx, tx_unop(t, FT_P_RSQRT, tx_add(t, tx_mul(t, x, x), one)));
    break;
  case FT_P_ACOSH:
    r = scale(c, dx, tx_unop(t, FT_P_RSQRT, tx_mul(t, tx_sub(t, x, one), tx_add(t, x, one))));
    break;
  case FT_P_ATANH:
    r = tx_div(t, dx, tx_mul(t, tx_sub(t, one, x), tx_add(t, one, x)));
    break;
  case FT_P_SQRT: r = tx_div(t, dx, tx_mul(t, y, lit(c, 2.0))); break;
  case FT_P_RSQRT: r = scale(c, dx, tx_mul(t, tx_div(t, y, x), lit(c, -0.5))); break;
  case FT_P_CBRT: r = scale(c, dx, tx_mul(t, tx_integer_pow(t, y, -2), lit(c, 1.0 / 3.0))); break;
  case FT_P_SQUARE: r = scale(c, dx, tx_mul(t, x, lit(c, 2.0))); break;
  case FT_P_ONE_MINUS_SQUARE: r = scale(c, dx, tx_mul(t, lit(c, -2.0), x)); break; /* JAX: g * (-2 * x) */
  case FT_P_ABS: {
    if (ft_dtype_is_complex(av->dtype)) {
      /* JAX: real(g * conj(x) / where(|x| == 0, 1, |x|)), the |x| as complex */
      ft_pval *ps = tx_params(t, FT_P_CONJ);
      if (!ps) return false;
      pset(FT_P_CONJ, ps, "input_dtype", ft_pv_dtype(av->dtype));
      ft_var *cj = tx_emit(t, FT_P_CONJ, ps, 1, &x);
      ft_var *d = tx_convert(t, y, av->dtype);
      ft_var *in[2] = {d, tx_lit(t, av->dtype, 0.0)};
      ft_var *z = tx_emit(t, FT_P_EQ, NULL, 2, in);
      ft_var *h = tx_div(t, cj, tx_select(t, z, d, tx_full(t, av, 1.0)));
      r = dx ? tx_unop(t, FT_P_REAL, tx_mul(t, dx, h)) : NULL;
      break;
    }
    /* JAX: select(x >= 0, g, -g), so d|x|/dx at 0 is 1. */
    ft_var *in[2] = {x, lit(c, 0.0)};
    ft_var *ge = tx_emit(t, FT_P_GE, NULL, 2, in);
    r = tx_select(t, ge, tx_neg(t, dx), dx);
    break;
  }
  case FT_P_ERF:
    r = scale(c, dx, tx_mul(t, lit(c, 2.0 / sqrt(M_PI)),
                            tx_unop(t, FT_P_EXP, tx_neg(t, tx_mul(t, x, x)))));
    break;
  case FT_P_ERFC:
    r = scale(c, dx, tx_mul(t, lit(c, -2.0 / sqrt(M_PI)),
                            tx_unop(t, FT_P_EXP, tx_neg(t, tx_mul(t, x, x)))));
    break;
  case FT_P_ERF_INV:
    r = scale(c, dx, tx_mul(t, lit(c, sqrt(M_PI) / 2.0), tx_unop(t, FT_P_EXP, tx_mul(t, y, y))));
    break;
  case FT_P_LGAMMA: r = scale(c, dx, tx_unop(t, FT_P_DIGAMMA, x)); break;
  case FT_P_DIGAMMA: r = scale(c, dx, tx_binop(t, FT_P_POLYGAMMA, one, x)); break;
  case FT_P_BESSEL_I0E: /* JAX: g * (bessel_i1e(x) - sign(x) * y) */
    r = scale(c, dx, tx_sub(t, tx_unop(t, FT_P_BESSEL_I1E, x), tx_mul(t, tx_unop(t, FT_P_SIGN, x), y)));
    break;
  case FT_P_BESSEL_I1E: {
    /* JAX: with safe_x = select(|x| > eps, x, eps),
     * g * select(|x| > eps, i0e(safe_x) - y * (sign(safe_x) + 1/safe_x), 0.5) */
    double eps = av->dtype == FT_F16 ? 0x1p-10 : av->dtype == FT_BF16 ? 0x1p-7
               : av->dtype == FT_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
    ft_var *in[2] = {tx_unop(t, FT_P_ABS, x), lit(c, eps)};
    ft_var *big = tx_emit(t, FT_P_GT, NULL, 2, in);
    ft_var *sx = tx_select(t, big, tx_full(t, av, eps), x);
    ft_var *d = tx_sub(t, tx_unop(t, FT_P_BESSEL_I0E, sx),
                       tx_mul(t, y, tx_add(t, tx_unop(t, FT_P_SIGN, sx), tx_integer_pow(t, sx, -1))));
    r = scale(c, dx, tx_select(t, big, tx_full(t, av, 0.5), d));
    break;
  }
  case FT_P_INTEGER_POW: {
    int64_t n = pget_int(FT_P_INTEGER_POW, c->params, "y", 1);
    if (n == 0) return true;
    ft_var *p = n == 2 ? x : tx_integer_pow(t, x, n - 1);
    r = scale(c, dx, n == 1 ? one : tx_mul(t, lit(c, (double)n), p));
    break;
  }
  case FT_P_COPY: case FT_P_COPY_P: case FT_P_REDUCE_PRECISION: r = same_op(c, 1, &dx); break;
  case FT_P_SHARDING_CONSTRAINT: case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD:
    r = same_op(c, 1, &dx); /* JAX: the constraint applied to the tangent */
    break;
  case FT_P_CLZ: case FT_P_POPULATION_COUNT: return true; /* integer results */
  default: return tx_fail(t, FT_ERR_INTERNAL, "jvp: no unary rule"), false;
  }
  (void)av;
  c->dy[0] = tx_bcast_to(t, r, &y->aval);
  return !t->failed;
}

/* max/min: JAX's balanced rule: where both operands attain the result
 * each gets half of the tangent. */
static bool minmax(jvp_call *c) {
  tx *t = c->t;
  ft_var *y = c->y[0];
  const ft_aval *av = &y->aval;
  ft_var *r = NULL;
  for (int i = 0; i < 2; i++) {
    if (!c->dx[i]) continue;
    ft_var *in[2] = {c->x[i], y}, *oth[2] = {c->x[1 - i], y};
    ft_var *mine = tx_emit(t, FT_P_EQ, NULL, 2, in);
    ft_var *other = tx_emit(t, FT_P_EQ, NULL, 2, oth);
    if (mine && mine->aval.rank != av->rank) mine = tx_bcast_to(t, mine, av);
    if (other && other->aval.rank != av->rank) other = tx_bcast_to(t, other, av);
    ft_var *w = tx_select(t, mine, tx_zeros(t, av), tx_full(t, av, 1.0));
    ft_var *d = tx_select(t, other, tx_full(t, av, 1.0), tx_full(t, av, 2.0));
    r = tx_acc(t, r, tx_mul(t, tx_bcast_to(t, c->dx[i], av), tx_div(t, w, d)));
  }
  c->dy[0] = r;
  return !t->failed;
}

static bool binary(jvp_call *c) {
  tx *t = c->t;
  ft_var *a = c->x[0], *b = c->x[1], *da = c->dx[0], *db = c->dx[1], *y = c->y[0], *r = NULL;
  switch (c->e->prim) {
  case FT_P_ADD: case FT_P_ADD_ANY:
    r = tx_acc(t, tx_bcast_to(t, da, &y->aval), tx_bcast_to(t, db, &y->aval));
    break;
  case FT_P_SUB:
    r = tx_acc(t, tx_bcast_to(t, da, &y->aval), tx_bcast_to(t, tx_neg(t, db), &y->aval));
    break;
  case FT_P_MUL: r = tx_acc(t, scale(c, da, b), db ? tx_mul(t, a, db) : NULL); break;
  case FT_P_DIV: r = tx_acc(t, da ? tx_div(t, da, b) : NULL, scale(c, db, tx_neg(t, tx_div(t, y, b)))); break;
  case FT_P_REM:
    if (db) {
      ft_var *q = tx_div(t, a, b);
      ft_var *trunc = tx_mul(t, tx_unop(t, FT_P_SIGN, q), tx_unop(t, FT_P_FLOOR, tx_unop(t, FT_P_ABS, q)));
      r = scale(c, db, tx_neg(t, trunc));
    }
    r = tx_acc(t, tx_bcast_to(t, da, &y->aval), r);
    break;
  case FT_P_POW:
    if (ft_dtype_is_int(b->aval.dtype)) db = NULL; /* an integer exponent has no tangent */
    if (da && ft_dtype_is_int(b->aval.dtype)) {
      /* JAX's integer exponent: jac = select(y == 0, 0, y' * pow(x, y - 1)) with y as the
       * base's dtype and y' = y with zeros replaced by ones (so 0 * inf never appears). */
      ft_var *yf = tx_convert(t, b, a->aval.dtype);
      ft_var *in[2] = {yf, lit(c, 0.0)};
      ft_var *z = tx_emit(t, FT_P_EQ, NULL, 2, in);
      ft_var *z2 = tx_emit(t, FT_P_EQ, NULL, 2, in);
      ft_var *y1 = tx_select(t, z2, yf, tx_full(t, &yf->aval, 1.0));
      ft_var *m = tx_mul(t, y1, tx_binop(t, FT_P_POW, a, tx_sub(t, yf, tx_full(t, &yf->aval, 1.0))));
      r = scale(c, da, tx_select(t, z, m, tx_full(t, &m->aval, 0.0)));
    } else if (da) {
      r = scale(c, da, tx_mul(t, b, tx_binop(t, FT_P_POW, a, tx_sub(t, b, lit(c, 1.0)))));
    }
    if (db) {
      /* JAX: log of x with zeros replaced by ones, so d(0^y)/dy = 0. */
      ft_var *la;
      if (a->kind == FT_LIT) la = lit(c, a->lit.f == 0 ? 0.0 : log(a->lit.f));
      else {
        ft_var *in[2] = {a, lit(c, 0.0)};
        ft_var *z = tx_emit(t, FT_P_EQ, NULL, 2, in);
        la = tx_unop(t, FT_P_LOG, tx_select(t, z, a, tx_full(t, &a->aval, 1.0)));
      }
      r = tx_acc(t, r, scale(c, db, tx_mul(t, la, y)));
    }
    break;
  case FT_P_MAX: case FT_P_MIN: return minmax(c);
  case FT_P_ATAN2: {
    ft_var *den = tx_add(t, tx_mul(t, a, a), tx_mul(t, b, b));
    r = tx_acc(t, scale(c, da, tx_div(t, b, den)), scale(c, db, tx_neg(t, tx_div(t, a, den))));
    break;
  }
  case FT_P_NEXTAFTER: return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of nextafter: %s", JVP_NO_RULE_NEXTAFTER), false;
  case FT_P_MULHI: return true; /* integer results */
  case FT_P_ZETA: return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of zeta: %s", JVP_NO_RULE_ZETA), false;
  case FT_P_IGAMMA_GRAD_A:
    return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of igamma_grad_a: %s", JVP_NO_RULE_IGAMMA_GRAD_A), false;
  case FT_P_IGAMMA: case FT_P_IGAMMAC: {
    /* JAX: in a, g * igamma_grad_a(a, x); in x, g * exp(-x + (a - 1) log x - lgamma(a));
     * igammac negates both */
    bool neg = c->e->prim == FT_P_IGAMMAC;
    ft_var *ra = NULL, *rx = NULL;
    if (da) ra = scale(c, da, tx_binop(t, FT_P_IGAMMA_GRAD_A, a, b));
    if (db) {
      ft_var *e = tx_add(t, tx_neg(t, b), tx_mul(t, tx_sub(t, a, lit(c, 1.0)), tx_unop(t, FT_P_LOG, b)));
      rx = scale(c, db, tx_unop(t, FT_P_EXP, tx_sub(t, e, tx_unop(t, FT_P_LGAMMA, a))));
    }
    if (neg && ra) ra = tx_neg(t, ra);
    if (neg && rx) rx = tx_neg(t, rx);
    r = tx_acc(t, ra, rx);
    break;
  }
  case FT_P_POLYGAMMA:
    if (da) return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of polygamma in m: %s", JVP_NO_RULE_POLYGAMMA_M), false;
    /* JAX: g * polygamma(m + 1, x) */
    r = scale(c, db, tx_binop(t, FT_P_POLYGAMMA, tx_add(t, a, lit(c, 1.0)), b));
    break;
  default: return tx_fail(t, FT_ERR_INTERNAL, "jvp: no binary rule"), false;
  }
  c->dy[0] = tx_bcast_to(t, r, &y->aval);
  return !t->failed;
}

static bool select_n(jvp_call *c) {
  int n = c->e->n_in;
  ft_var *in[64];
  if (n > 64) return tx_fail(c->t, FT_ERR_UNSUPPORTED, "jvp of select_n with more than 63 cases"), false;
  in[0] = c->x[0];
  for (int i = 1; i < n; i++) in[i] = inst(c, i);
  c->dy[0] = tx_emit(c->t, FT_P_SELECT_N, NULL, n, in);
  return !c->t->failed;
}

/* clamp(lo, x, hi): JAX's masks, as multipliers computed on the primal side. */
static bool clamp(jvp_call *c) {
  tx *t = c->t;
  ft_var *lo = c->x[0], *x = c->x[1], *hi = c->x[2], *y = c->y[0], *r = NULL;
  const ft_aval *av = &y->aval;
  ft_dtype dt = av->dtype;
  ft_var *lob = tx_bcast_to(t, lo, av), *hib = tx_bcast_to(t, hi, av);
#define CMP(p, a, b) tx_emit(t, p, NULL, 2, (ft_var *[]){a, b})
  if (c->dx[1]) {
    ft_var *m = CMP(FT_P_AND, CMP(FT_P_GT, x, lob), CMP(FT_P_LT, x, hib));
    r = tx_mul(t, c->dx[1], tx_convert(t, m, dt));
  }
  if (c->dx[0]) {
    ft_var *m = CMP(FT_P_AND, CMP(FT_P_GT, lob, x), CMP(FT_P_LT, lob, hib));
    r = tx_acc(t, r, tx_mul(t, tx_bcast_to(t, c->dx[0], av), tx_convert(t, m, dt)));
  }
  if (c->dx[2]) {
    ft_var *m = CMP(FT_P_LT, hib, x);
    r = tx_acc(t, r, tx_mul(t, tx_bcast_to(t, c->dx[2], av), tx_convert(t, m, dt)));
  }
#undef CMP
  c->dy[0] = r;
  return !t->failed;
}

/* reduce_max/min: the tangent at the positions that attain the result,
 * averaged over ties (JAX's _reduce_chooser_jvp_rule). */
static bool reduce_chooser(jvp_call *c) {
  tx *t = c->t;
  ft_var *x = c->x[0], *y = c->y[0];
  int64_t axes[FT_MAX_RANK], kept[FT_MAX_RANK];
  int na = pget_ints(c->e->prim, c->params, "axes", axes, FT_MAX_RANK), nk = 0;
  if (na < 0) return tx_fail(t, FT_ERR_TYPE, "jvp of %s: bad axes", ft_prim_get(c->e->prim)->name), false;
  for (int d = 0; d < x->aval.rank; d++) {
    bool red = false;
    for (int i = 0; i < na; i++) red = red || axes[i] == d;
    if (!red) kept[nk++] = d;
  }
  ft_var *yb = tx_bcast(t, y, x->aval.rank, x->aval.dims, kept);
  ft_var *mask = tx_convert(t, tx_emit(t, FT_P_EQ, NULL, 2, (ft_var *[]){x, yb}), x->aval.dtype);
  ft_var *cnt = tx_reduce_sum(t, mask, na, axes);
  ft_var *w = tx_div(t, mask, tx_bcast(t, cnt, x->aval.rank, x->aval.dims, kept));
  c->dy[0] = tx_reduce_sum(t, tx_mul(t, c->dx[0], w), na, axes);
  return !t->failed;
}

/* reduce_prod: d prod = sum_i dx_i * prod_{j != i} x_j, with the products
 * of the others from exclusive prefix and suffix products, so zeros in x
 * are handled exactly (no division). */
static bool reduce_prod(jvp_call *c) {
  tx *t = c->t;
  ft_var *x = c->x[0], *y = c->y[0];
  int r = x->aval.rank;
  int64_t axes[FT_MAX_RANK], perm[FT_MAX_RANK];
  int na = pget_ints(FT_P_REDUCE_PROD, c->params, "axes", axes, FT_MAX_RANK), np = 0;
  if (na < 0) return tx_fail(t, FT_ERR_TYPE, "jvp of reduce_prod: bad axes"), false;
  int64_t K = 1, N = 1;
  for (int d = 0; d < r; d++) {
    bool red = false;
    for (int i = 0; i < na; i++) red = red || axes[i] == d;
    if (!red) perm[np++] = d, K *= x->aval.dims[d];
  }
  for (int d = 0; d < r; d++) {
    bool red = false;
    for (int i = 0; i < na; i++) red = red || axes[i] == d;
    if (red) perm[np++] = d, N *= x->aval.dims[d];
  }
  if (N == 0) return true; /* empty product: constant 1 */
  int64_t kn[2] = {K, N};
  ft_var *xr = tx_reshape(t, tx_transpose(t, x, r, perm), 2, kn);
  ft_pval *ps = tx_params(t, FT_P_CUMPROD);
  if (!ps) return false;
  pset(FT_P_CUMPROD, ps, "axis", ft_pv_int(1));
  pset(FT_P_CUMPROD, ps, "reverse", ft_pv_bool(false));
  ft_var *fwd = tx_emit(t, FT_P_CUMPROD, ps, 1, &xr);
  ft_pval *ps2 = tx_params(t, FT_P_CUMPROD);
  if (!ps2) return false;
  pset(FT_P_CUMPROD, ps2, "axis", ft_pv_int(1));
  pset(FT_P_CUMPROD, ps2, "reverse", ft_pv_bool(true));
  ft_var *bwd = tx_emit(t, FT_P_CUMPROD, ps2, 1, &xr);
  ft_var *one = lit(c, 1.0);
  int64_t z[2] = {0, 0}, l1[2] = {K, N - 1}, s1[2] = {0, 1}, l2[2] = {K, N};
  int64_t lo1[2] = {0, 1}, hi1[2] = {0, 0}, lo2[2] = {0, 0}, hi2[2] = {0, 1};
  ft_var *fex = tx_pad(t, tx_slice(t, fwd, z, l1, NULL), one, lo1, hi1, NULL);
  ft_var *bex = tx_pad(t, tx_slice(t, bwd, s1, l2, NULL), one, lo2, hi2, NULL);
  ft_var *others = tx_mul(t, fex, bex);
  ft_var *dr = tx_reshape(t, tx_transpose(t, c->dx[0], r, perm), 2, kn);
  int64_t ax1 = 1;
  ft_var *s = tx_reduce_sum(t, tx_mul(t, dr, others), 1, &ax1);
  c->dy[0] = tx_reshape(t, s, y->aval.rank, y->aval.dims);
  return !t->failed;
}

static bool cumulative(jvp_call *c) {
  tx *t = c->t;
  ft_var *x = c->x[0], *y = c->y[0], *dx = c->dx[0];
  ft_pval *ps = tx_params(t, FT_P_CUMSUM);
  if (!ps) return false;
  pset(FT_P_CUMSUM, ps, "axis", *pget(c->e->prim, c->params, "axis"));
  pset(FT_P_CUMSUM, ps, "reverse", *pget(c->e->prim, c->params, "reverse"));
  switch (c->e->prim) {
  case FT_P_CUMSUM: c->dy[0] = tx_emit(t, FT_P_CUMSUM, ps, 1, &dx); break;
  case FT_P_CUMPROD: {
    /* y_i * sum_{j<=i} dx_j / x_j: exact where x has no zeros (see
     * docs/autodiff.md; JAX's associative-scan rule also covers zeros). */
    ft_var *q = tx_div(t, dx, x);
    c->dy[0] = tx_mul(t, tx_emit(t, FT_P_CUMSUM, ps, 1, &q), y);
    break;
  }
  case FT_P_CUMLOGSUMEXP: {
    /* dy_i = sum_{j<=i} dx_j exp(x_j - y_i), shifted by the axis max m of x:
     * exp(m - y_i) * cumsum(dx * exp(x - m)). */
    int64_t ax = pget_int(c->e->prim, c->params, "axis", 0);
    int r = x->aval.rank;
    int64_t kept[FT_MAX_RANK];
    int nk = 0;
    for (int d = 0; d < r; d++)
      if (d != ax) kept[nk++] = d;
    ft_pval *pm = tx_params(t, FT_P_REDUCE_MAX);
    if (!pm) return false;
    pset(FT_P_REDUCE_MAX, pm, "axes", ft_pv_ints(t->a, 1, &ax));
    ft_var *m = tx_bcast(t, tx_emit(t, FT_P_REDUCE_MAX, pm, 1, &x), r, x->aval.dims, kept);
    ft_var *e1 = tx_unop(t, FT_P_EXP, tx_sub(t, x, m));
    ft_var *e2 = tx_unop(t, FT_P_EXP, tx_sub(t, m, y));
    ft_var *q = tx_mul(t, dx, e1);
    c->dy[0] = tx_mul(t, tx_emit(t, FT_P_CUMSUM, ps, 1, &q), e2);
    break;
  }
  default: /* cummax/cummin: ad_index.c */
    return tx_fail(t, FT_ERR_INTERNAL, "jvp: no cumulative rule for %s", ft_prim_get(c->e->prim)->name), false;
  }
  return !t->failed;
}

static bool dot_general(jvp_call *c) {
  tx *t = c->t;
  ft_var *r = NULL;
  if (c->dx[0]) r = tx_emit(t, FT_P_DOT_GENERAL, c->params, 2, (ft_var *[]){c->dx[0], c->x[1]});
  if (c->dx[1]) r = tx_acc(t, r, tx_emit(t, FT_P_DOT_GENERAL, c->params, 2, (ft_var *[]){c->x[0], c->dx[1]}));
  c->dy[0] = r;
  return !t->failed;
}

/* sort: the tangent of each operand is permuted like the operand, by
 * sorting it as an extra (non-key) operand with the same keys. */
static bool sort(jvp_call *c) {
  tx *t = c->t;
  int nk = (int)pget_int(FT_P_SORT, c->params, "num_keys", 1);
  if (nk < 1 || nk > 32) return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of sort: num_keys=%d", nk), false;
  ft_var *in[33], *out[33];
  for (int k = 0; k < c->e->n_out; k++) {
    if (!c->dx[k] || !var_inexact(c->y[k])) continue;
    for (int i = 0; i < nk; i++) in[i] = c->x[i];
    in[nk] = c->dx[k];
    if (!tx_emitn(t, FT_P_SORT, c->params, nk + 1, in, nk + 1, out)) return false;
    c->dy[k] = out[nk];
  }
  return !t->failed;
}

static bool layout(jvp_call *c) {
  tx *t = c->t;
  const ft_eqn *e = c->e;
  ft_var *in[64];
  int n = e->n_in;
  if (n > 64) return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of %s with %d operands", ft_prim_get(e->prim)->name, n), false;
  switch (e->prim) {
  case FT_P_DYNAMIC_SLICE: /* operand linear, indices primal */
    in[0] = c->dx[0];
    for (int i = 1; i < n; i++) in[i] = c->x[i];
    if (!in[0]) return true;
    break;
  case FT_P_DYNAMIC_UPDATE_SLICE:
    in[0] = inst(c, 0);
    in[1] = inst(c, 1);
    for (int i = 2; i < n; i++) in[i] = c->x[i];
    break;
  case FT_P_PAD:
    in[0] = inst(c, 0);
    in[1] = inst(c, 1);
    break;
  default: /* every operand linear */
    for (int i = 0; i < n; i++) in[i] = inst(c, i);
  }
  return tx_emitn(t, e->prim, c->params, n, in, e->n_out, c->dy);
}

/* conv_general_dilated is bilinear like dot_general. */
static bool conv(jvp_call *c) {
  tx *t = c->t;
  ft_var *r = NULL;
  if (c->dx[0]) r = tx_emit(t, c->e->prim, c->params, 2, (ft_var *[]){c->dx[0], c->x[1]});
  if (c->dx[1]) r = tx_acc(t, r, tx_emit(t, c->e->prim, c->params, 2, (ft_var *[]){c->x[0], c->dx[1]}));
  c->dy[0] = r;
  return !t->failed;
}

/* polynomial (JAX's _polynomial_jvp): dx * p'(x), where p' has the
 * coefficients k*c_k, plus the polynomial of the coefficient tangents. */
static bool polynomial(jvp_call *c) {
  tx *t = c->t;
  int n = c->e->n_in; /* x, c0 ... cN */
  ft_var *in[64], *r = NULL;
  if (n > 64) return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of polynomial with %d operands", n), false;
  if (c->dx[0] && n > 2) {
    in[0] = c->x[0];
    for (int k = 1; k < n - 1; k++) in[k] = tx_mul(t, tx_lit(t, c->x[k + 1]->aval.dtype, (double)k), c->x[k + 1]);
    ft_var *d = tx_emit(t, FT_P_POLYNOMIAL, c->params, n - 1, in);
    r = tx_mul(t, tx_bcast_to(t, c->dx[0], &c->y[0]->aval), tx_bcast_to(t, d, &c->y[0]->aval));
  }
  bool any = false;
  for (int k = 1; k < n; k++) any |= c->dx[k] != NULL;
  if (any) {
    in[0] = c->x[0];
    for (int k = 1; k < n; k++) in[k] = inst(c, k);
    r = tx_acc(t, r, tx_bcast_to(t, tx_emit(t, FT_P_POLYNOMIAL, c->params, n, in), &c->y[0]->aval));
  }
  c->dy[0] = r;
  return !t->failed;
}

/* optimization_barrier: a second barrier over the nonzero tangents (JAX). */
static bool opt_barrier(jvp_call *c) {
  tx *t = c->t;
  int n = c->e->n_in, m = 0;
  ft_var *in[64], *out[64];
  if (n > 64) return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of optimization_barrier with %d operands", n), false;
  for (int i = 0; i < n; i++)
    if (c->dx[i]) in[m++] = c->dx[i];
  if (!m) return true;
  if (!tx_emitn(t, FT_P_OPTIMIZATION_BARRIER, c->params, m, in, m, out)) return false;
  for (int i = 0, k = 0; i < n; i++) c->dy[i] = c->dx[i] ? out[k++] : NULL;
  return true;
}

/* random_gamma[log_space] (JAX's _gamma_grad, jax/_src/random.py): the
 * tangent is da * random_gamma_grad(a, s) for the sample s (log_space:
 * s = exp(y), zeros replaced by the smallest normal, and the gradient
 * divided by s; XLA's CPU code flushes a subnormal exp to zero, so JAX
 * replaces those too, and so does this rule). random_gamma_grad is igamma's
 * SAMPLE_DERIVATIVE mode, -(dP/da) / (dP/dx): JAX runs the series or continued fraction of
 * igamma_grad_a without the factor ax = exp(a log s - s - lgamma(a)), times
 * -s. Here that is -igamma_grad_a(a, s) * s / ax, the same loops with ax
 * divided back out; where ax underflows (a log s - s - lgamma(a) below
 * -log(max)) JAX's loops do not run and it returns their first terms,
 * emitted here as they are: the series' -(log s - digamma(a + 1)) s / a and
 * the continued fraction's (dans + ans (log s - digamma(a))) s with
 * ans = (s + 1) / (z s), dans = ans / z, z = s + 2 - a. s = 0 gives 0, and
 * so does a subnormal s (XLA's CPU code flushes it: JAX's sample is 0
 * there); s < 0, a <= 0 or NaN give NaN (random_gamma_grad_impl). */
static bool random_gamma(jvp_call *c) {
  tx *t = c->t;
  ft_var *a = c->x[1], *da = c->dx[1], *y = c->y[0];
  if (!da) return true; /* keys carry no tangent */
  const ft_aval *av = &y->aval;
  const bool f32 = av->dtype == FT_F32;
  if (!f32 && av->dtype != FT_F64)
    return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of random_gamma: a of dtype %s (f32 and f64 are built)",
                   ft_dtype_name(av->dtype)), false;
  const ft_pval *lsp = pget(FT_P_RANDOM_GAMMA, c->params, "log_space");
  const bool log_space = lsp && (lsp->tag == FT_PV_BOOL ? lsp->u.b : lsp->tag == FT_PV_INT && lsp->u.i != 0);
#define CMP(P, u, v) tx_emit(t, P, NULL, 2, (ft_var *[]){(u), (v)})
  const double tiny = f32 ? 0x1p-126 : 0x1p-1022; /* the smallest normal */
  ft_var *s = y;
  if (log_space) {
    s = tx_unop(t, FT_P_EXP, y);
    s = tx_select(t, CMP(FT_P_LT, s, lit(c, tiny)), s, tx_full(t, av, tiny));
  }
  ft_var *one = lit(c, 1.0), *ls = tx_unop(t, FT_P_LOG, s);
  ft_var *lax = tx_sub(t, tx_sub(t, tx_mul(t, a, ls), s), tx_unop(t, FT_P_LGAMMA, a));
  ft_var *under = CMP(FT_P_LT, lax, lit(c, f32 ? -(double)logf(0x1.fffffep127f) : -log(0x1.fffffffffffffp1023)));
  ft_var *use_c = tx_binop(t, FT_P_AND, CMP(FT_P_GT, s, one), CMP(FT_P_GT, s, a));
  /* the loops' result, ax divided back out */
  ft_var *ga = tx_binop(t, FT_P_IGAMMA_GRAD_A, a, s);
  ft_var *full = tx_div(t, tx_mul(t, tx_neg(t, ga), s), tx_unop(t, FT_P_EXP, lax));
  /* their first terms (underflow) */
  ft_var *ser = tx_div(t, tx_mul(t, tx_neg(t, tx_sub(t, ls, tx_unop(t, FT_P_DIGAMMA, tx_add(t, a, one)))), s), a);
  ft_var *z = tx_add(t, tx_add(t, s, tx_sub(t, one, a)), one);
  ft_var *qk = tx_mul(t, z, s);
  ft_var *ans = tx_div(t, tx_add(t, s, one), qk);
  ft_var *dans = tx_div(t, tx_sub(t, lit(c, 0.0), tx_mul(t, ans, tx_neg(t, s))), qk);
  ft_var *cf = tx_mul(t, tx_add(t, dans, tx_mul(t, ans, tx_sub(t, ls, tx_unop(t, FT_P_DIGAMMA, a)))), s);
  ft_var *g = tx_select(t, under, full, tx_select(t, use_c, ser, cf));
  g = tx_select(t, CMP(FT_P_LT, s, lit(c, tiny)), g, tx_zeros(t, av));
  ft_var *bad = tx_binop(t, FT_P_OR, tx_binop(t, FT_P_OR, CMP(FT_P_LT, s, lit(c, 0.0)), CMP(FT_P_LE, a, lit(c, 0.0))),
                         tx_binop(t, FT_P_OR, CMP(FT_P_NE, a, a), CMP(FT_P_NE, s, s)));
  g = tx_select(t, bad, g, tx_full(t, av, NAN));
#undef CMP
  if (log_space) g = tx_div(t, g, s);
  c->dy[0] = scale(c, da, g);
  return !t->failed;
}

/* regularized_incomplete_beta(a, b, x): JAX defines the derivative in x,
 * g * exp((b - 1) log1p(-x) + (a - 1) log x - lbeta) with lbeta = lgamma(a)
 * + lgamma(b) - lgamma(a + b) (betainc_gradx), and refuses a tangent of a
 * or b (betainc_grad_not_implemented). */
static bool ternary(jvp_call *c) {
  tx *t = c->t;
  ft_var *a = c->x[0], *b = c->x[1], *x = c->x[2], *y = c->y[0];
  if (c->e->prim != FT_P_REGULARIZED_INCOMPLETE_BETA)
    return tx_fail(t, FT_ERR_INTERNAL, "jvp: no ternary rule"), false;
  if (c->dx[0] || c->dx[1])
    return tx_fail(t, FT_ERR_UNSUPPORTED, "jvp of regularized_incomplete_beta in %s: %s",
                   c->dx[0] ? "a" : "b", JVP_NO_RULE_BETAINC_AB), false;
  if (!c->dx[2]) return true;
  ft_var *lbeta = tx_sub(t, tx_add(t, tx_unop(t, FT_P_LGAMMA, a), tx_unop(t, FT_P_LGAMMA, b)),
                         tx_unop(t, FT_P_LGAMMA, tx_add(t, a, b)));
  ft_var *e = tx_add(t, tx_mul(t, tx_sub(t, b, lit(c, 1.0)), tx_unop(t, FT_P_LOG1P, tx_neg(t, x))),
                     tx_mul(t, tx_sub(t, a, lit(c, 1.0)), tx_unop(t, FT_P_LOG, x)));
  ft_var *px = tx_unop(t, FT_P_EXP, tx_sub(t, e, lbeta));
  c->dy[0] = tx_bcast_to(t, tx_mul(t, px, c->dx[2]), &y->aval);
  return !t->failed;
}

bool jvp_rule(jvp_call *c) {
  const ft_eqn *e = c->e;
  const char *why = ft_jvp_rule_status(e->prim);
  if (why) return tx_fail(c->t, FT_ERR_UNSUPPORTED, "jvp of %s: %s", ft_prim_get(e->prim)->name, why), false;
  if (ad_index_prim(e->prim)) return jvp_index(c); /* gather, scatter*, top_k, cummax/min */
  if (ad_linalg_prim(e->prim)) return jvp_linalg(c); /* cholesky, triangular_solve, lu, ... */
  if (ad_spectral_prim(e->prim)) return jvp_spectral(c); /* eigh, svd, qr (linalg2) */
  switch (ft_prim_get(e->prim)->family) {
  case FT_FAM_UNARY: return unary(c);
  case FT_FAM_BINARY: return binary(c);
  case FT_FAM_COMPARE: return true; /* bool results: never reached */
  case FT_FAM_TERNARY: return ternary(c);
  case FT_FAM_DOT: return dot_general(c);
  case FT_FAM_CUMULATIVE: return cumulative(c);
  default: break;
  }
  switch (e->prim) {
  case FT_P_SELECT_N: return select_n(c);
  case FT_P_CLAMP: return clamp(c);
  case FT_P_CONVERT_ELEMENT_TYPE:
    if (!var_inexact(c->x[0])) return true; /* int -> float: zero (JAX) */
    c->dy[0] = tx_emit(c->t, e->prim, c->params, 1, c->dx);
    return !c->t->failed;
  case FT_P_REDUCE_SUM: case FT_P_FFT: case FT_P_REDUCE_WINDOW_SUM:
    c->dy[0] = tx_emit(c->t, e->prim, c->params, 1, c->dx);
    return !c->t->failed;
  case FT_P_REAL: case FT_P_IMAG: case FT_P_CONJ: case FT_P_COMPLEX: return ad_complex_jvp(c);
  case FT_P_REDUCE_MAX: case FT_P_REDUCE_MIN: return reduce_chooser(c);
  case FT_P_REDUCE_WINDOW_MAX: case FT_P_REDUCE_WINDOW_MIN: return jvp_reduce_window_chooser(c); /* ad_window.c */
  case FT_P_REDUCE_PROD: return reduce_prod(c);
  case FT_P_SORT: return sort(c);
  case FT_P_CONV_GENERAL_DILATED: return conv(c);
  case FT_P_IOTA: case FT_P_EMPTY2: case FT_P_REDUCE_AND: case FT_P_REDUCE_OR: case FT_P_ARGMAX:
  case FT_P_ARGMIN: case FT_P_REDUCE_XOR: case FT_P_PLATFORM_INDEX: case FT_P_EMPTY:
  case FT_P_SEARCHSORTED: case FT_P_NONZERO: /* integer results: float0 tangents (JAX's jvp) */
    return true;
  case FT_P_POLYNOMIAL: return polynomial(c);
  case FT_P_RAGGED_DOT_GENERAL: return ad_ragged_jvp(c); /* ad_ragged.c */
  case FT_P_RANDOM_GAMMA: return random_gamma(c);
  /* issue 27: the collectives are linear: the same collective of the
   * tangents (one equation per nonzero tangent of a variadic one). */
  case FT_P_PSUM: case FT_P_PSUM_INVARIANT: case FT_P_PVARY: case FT_P_ALL_GATHER:
  case FT_P_REDUCE_SCATTER: case FT_P_ALL_TO_ALL: case FT_P_PPERMUTE:
    for (int k = 0; k < e->n_in; k++)
      if (c->dx[k] && var_inexact(c->x[k])) c->dy[k] = tx_emit(c->t, e->prim, c->params, 1, &c->dx[k]);
    return !c->t->failed;
  case FT_P_AXIS_INDEX: return true; /* an integer result */
  case FT_P_STACK: case FT_P_UNSTACK: case FT_P_TILE: return layout(c); /* linear */
  case FT_P_OPTIMIZATION_BARRIER: return opt_barrier(c);
  case FT_P_LDEXP: /* JAX's Ldexp.jvp: Ldexp(dx, n) */
    if (!c->dx[0]) return true;
    c->dy[0] = tx_emit(c->t, FT_P_LDEXP, c->params, 2, (ft_var *[]){c->dx[0], c->x[1]});
    return !c->t->failed;
  case FT_P_FREXP: { /* JAX's Frexp.jvp: dm = Ldexp(dx, -e); e's tangent is zero */
    if (!c->dx[0]) return true;
    ft_pval *ps = tx_params(c->t, FT_P_LDEXP);
    if (!ps) return false;
    c->dy[0] = tx_emit(c->t, FT_P_LDEXP, ps, 2, (ft_var *[]){c->dx[0], tx_neg(c->t, c->y[1])});
    return !c->t->failed;
  }
  case FT_P_SELECT_AND_GATHER_ADD: case FT_P_SELECT_AND_SCATTER_ADD:
    /* linear in the first operand; the choice is piecewise constant in the
     * operand, whose tangent does not contribute (JAX's rules) */
    if (!c->dx[0]) return true;
    c->dy[0] = tx_emit(c->t, e->prim, c->params, 2, (ft_var *[]){c->dx[0], c->x[1]});
    return !c->t->failed;
  default: break;
  }
  if (ft_prim_get(e->prim)->family == FT_FAM_LAYOUT) return layout(c);
  return tx_fail(c->t, FT_ERR_UNSUPPORTED, "jvp: no rule for %s", ft_prim_get(e->prim)->name), false;
}
