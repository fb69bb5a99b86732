/* src/ir/shape.c: the shape/dtype rule of every primitive (ft_infer).
 *
 * Each rule follows JAX's abstract evaluation (jax._src.lax): the same
 * accepted dtypes, the same broadcasting (rank-0 operands and size-1 axes
 * of equal-rank operands broadcast in elementwise primitives, nothing else),
 * the same checks on params. Errors start with the primitive's name and
 * show the avals involved, e.g. "add: operand shapes f32[3] and f32[4] do
 * not match". The verifier rewrites the "add: " prefix to "eqn 3 (add): ".
 *
 * Weak types follow JAX's default rule (the result is weak when every
 * operand is weak); rules that fix the result dtype make it strong. */
#include <string.h>

#include "ir.h"

/* dtype classes, as sets (JAX's _bool, _int, _float, _complex, ...) */
enum {
  K_BOOL = 1, K_SINT = 2, K_UINT = 4, K_FLOAT = 8, K_COMPLEX = 16, K_FLOAT0 = 32, K_KEY = 64,
  K_INT = K_SINT | K_UINT,
  K_INEXACT = K_FLOAT | K_COMPLEX,
  K_NUM = K_INT | K_INEXACT,
  K_ORDERED = K_BOOL | K_INT | K_FLOAT,
  K_BOOL_INT = K_BOOL | K_INT,
  K_ANY = K_BOOL | K_NUM,
  K_ALL = K_ANY | K_FLOAT0,
};

static int dtype_class(ft_dtype dt) {
  if (dt == FT_BOOL) return K_BOOL;
  if (ft_dtype_is_signed(dt)) return K_SINT;
  if (ft_dtype_is_unsigned(dt)) return K_UINT;
  if (ft_dtype_is_float(dt)) return K_FLOAT;
  if (ft_dtype_is_complex(dt)) return K_COMPLEX;
  if (dt == FT_FLOAT0) return K_FLOAT0;
  if (ft_dtype_is_key(dt)) return K_KEY;
  return 0;
}

static const char *class_text(int mask) {
  switch (mask) {
  case K_NUM: return "an integer, floating or complex type";
  case K_FLOAT: return "a floating type";
  case K_INEXACT: return "a floating or complex type";
  case K_INT: return "an integer type";
  case K_BOOL_INT: return "bool or an integer type";
  case K_ORDERED: return "bool, an integer or a floating type";
  case K_INT | K_FLOAT: return "an integer or a floating type";
  case K_BOOL: return "bool";
  default: return "an array type";
  }
}

/* The state of one rule application: inputs, params, outputs, and scratch
 * buffers for the avals an error message shows. */
typedef struct R {
  ft_ctx *ctx;
  ft_prim p;
  const ft_prim_info *pi;
  const ft_pval *params;
  int n_in;
  const ft_aval *in;
  ft_aval *out;
  int max_out, n_out;
  char sbuf[6][256];
  int si;
} R;

static const char *S(R *r, const ft_aval *a) {
  char *b = r->sbuf[r->si++ % 6];
  return ft_aval_str(a, b, sizeof r->sbuf[0]);
}

/* Formats an int tuple "(0, 1)" for messages. */
static const char *T(R *r, int n, const int64_t *v) {
  char *b = r->sbuf[r->si++ % 6];
  size_t k = (size_t)snprintf(b, sizeof r->sbuf[0], "(");
  for (int i = 0; i < n && k < sizeof r->sbuf[0]; i++)
    k += (size_t)snprintf(b + k, sizeof r->sbuf[0] - k, i ? ", %lld" : "%lld", (long long)v[i]);
  if (n == 1 && k < sizeof r->sbuf[0]) k += (size_t)snprintf(b + k, sizeof r->sbuf[0] - k, ",");
  if (k < sizeof r->sbuf[0]) snprintf(b + k, sizeof r->sbuf[0] - k, ")");
  return b;
}

static ft_status fail(R *r, ft_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static ft_status fail(R *r, ft_status st, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ft_set_error(r->ctx, st, "%s: %s", r->pi->name, msg);
}

/* Appends one output aval. */
static ft_status put(R *r, ft_aval a) {
  if (r->n_out >= r->max_out)
    return fail(r, FT_ERR_INVALID_ARG, "more than %d outputs", r->max_out);
  r->out[r->n_out++] = a;
  return FT_OK;
}

/* ------------------------------------------------------------- params */

/* The param named `name`, or NULL when the schema has no such param or it
 * is None (absent): optional params read as "not given". */
static const ft_pval *param(R *r, const char *name) {
  if (!r->params) return NULL;
  int i = ft_prim_param_index(r->p, name);
  if (i < 0 || r->params[i].tag == FT_PV_NONE) return NULL;
  return &r->params[i];
}

static ft_status need_int(R *r, const char *name, int64_t *v) {
  const ft_pval *pv = param(r, name);
  if (!pv) return fail(r, FT_ERR_TYPE, "missing param %s", name);
  if (pv->tag == FT_PV_BOOL) { *v = pv->u.b; return FT_OK; }
  if (pv->tag != FT_PV_INT) return fail(r, FT_ERR_TYPE, "param %s must be an int", name);
  *v = pv->u.i;
  return FT_OK;
}

static bool opt_bool(R *r, const char *name, bool dflt) {
  const ft_pval *pv = param(r, name);
  if (!pv) return dflt;
  if (pv->tag == FT_PV_BOOL) return pv->u.b;
  if (pv->tag == FT_PV_INT) return pv->u.i != 0;
  return dflt;
}

#define MAX_INTS 256

/* Reads a tuple of ints (at most MAX_INTS). *present tells whether it was given. */
static ft_status get_ints(R *r, const char *name, bool required, int64_t *v, int *n) {
  const ft_pval *pv = param(r, name);
  *n = 0;
  if (!pv) return required ? fail(r, FT_ERR_TYPE, "missing param %s", name) : FT_OK;
  if (!ft_pv_get_ints(pv, v, MAX_INTS, n))
    return fail(r, FT_ERR_TYPE, "param %s must be a tuple of ints", name);
  if (*n > MAX_INTS) return fail(r, FT_ERR_TYPE, "param %s has more than %d entries", name, MAX_INTS);
  return FT_OK;
}

static ft_status need_dtype(R *r, const char *name, ft_dtype *dt) {
  const ft_pval *pv = param(r, name);
  if (!pv) return fail(r, FT_ERR_TYPE, "missing param %s", name);
  if (pv->tag != FT_PV_DTYPE || (unsigned)pv->u.dt >= FT_NUM_DTYPES)
    return fail(r, FT_ERR_TYPE, "param %s must be a dtype", name);
  *dt = pv->u.dt;
  return FT_OK;
}

static ft_status need_jaxpr(R *r, const char *name, const ft_jaxpr **j) {
  const ft_pval *pv = param(r, name);
  if (!pv || pv->tag != FT_PV_JAXPR || !pv->u.jaxpr)
    return fail(r, FT_ERR_TYPE, "param %s must be a jaxpr", name);
  *j = pv->u.jaxpr;
  return FT_OK;
}

/* -------------------------------------------------------------- checks */

static ft_status check_dtype(R *r, int i, int mask, const char *what) {
  if (dtype_class(r->in[i].dtype) & mask) return FT_OK;
  return fail(r, FT_ERR_TYPE, "%s dtype %s is not accepted (expects %s), got %s", what,
              ft_dtype_name(r->in[i].dtype), class_text(mask), S(r, &r->in[i]));
}

static ft_status check_count(R *r, int min) {
  if (r->n_in >= min) return FT_OK;
  return fail(r, FT_ERR_TYPE, "expects at least %d operands, got %d", min, r->n_in);
}

/* Axis lists (reductions, squeeze, rev): each in [0, rank), no repeats. */
static ft_status check_axes(R *r, const char *name, int n, const int64_t *ax, int rank,
                            const ft_aval *a) {
  bool seen[FT_MAX_RANK] = {false};
  for (int i = 0; i < n; i++) {
    if (ax[i] < 0 || ax[i] >= rank)
      return fail(r, FT_ERR_SHAPE, "%s %s out of range for operand %s", name, T(r, n, ax), S(r, a));
    if (seen[ax[i]])
      return fail(r, FT_ERR_SHAPE, "%s %s repeats axis %lld", name, T(r, n, ax), (long long)ax[i]);
    seen[ax[i]] = true;
  }
  return FT_OK;
}

static ft_status check_dims_nonneg(R *r, const char *name, int n, const int64_t *d) {
  if (n > FT_MAX_RANK)
    return fail(r, FT_ERR_SHAPE, "%s %s has rank %d, more than %d", name, T(r, n, d), n, FT_MAX_RANK);
  for (int i = 0; i < n; i++)
    if (d[i] < 0) return fail(r, FT_ERR_SHAPE, "%s %s has a negative size", name, T(r, n, d));
  return FT_OK;
}

static bool all_weak(R *r, int from, int to) {
  for (int i = from; i < to; i++)
    if (!r->in[i].weak_type) return false;
  return to > from;
}

/* ------------------------------------------------------- elementwise */

static int unary_mask(ft_prim p) {
  switch (p) {
  case FT_P_NEG: case FT_P_SIGN: case FT_P_SQUARE: case FT_P_ABS: case FT_P_INTEGER_POW:
  case FT_P_ONE_MINUS_SQUARE:
    return K_NUM;
  case FT_P_FLOOR: case FT_P_CEIL: case FT_P_ROUND: case FT_P_IS_FINITE: case FT_P_CBRT:
  case FT_P_ERF: case FT_P_ERFC: case FT_P_ERF_INV: case FT_P_REDUCE_PRECISION:
  case FT_P_LGAMMA: case FT_P_DIGAMMA: case FT_P_LOG2: case FT_P_BESSEL_I0E: case FT_P_BESSEL_I1E:
    return K_FLOAT;
  case FT_P_NOT: return K_BOOL_INT;
  case FT_P_CLZ: case FT_P_POPULATION_COUNT: return K_INT;
  case FT_P_COPY: case FT_P_COPY_P: case FT_P_STOP_GRADIENT: case FT_P_SHARDING_CONSTRAINT:
  case FT_P_LAYOUT_CONSTRAINT: case FT_P_RESHARD:
    return K_ALL | K_KEY;
  default: return K_INEXACT; /* exp log tanh logistic sin ... sqrt rsqrt */
  }
}

static ft_status rule_unary(R *r) {
  ft_status st = check_dtype(r, 0, unary_mask(r->p), "operand");
  if (st) return st;
  ft_aval o = r->in[0];
  if (r->p == FT_P_IS_FINITE) {
    o.dtype = FT_BOOL;
    o.weak_type = false;
  } else if (r->p == FT_P_ABS && ft_dtype_is_complex(o.dtype)) {
    o.dtype = o.dtype == FT_C64 ? FT_F32 : FT_F64;
  } else if (r->p == FT_P_INTEGER_POW) {
    int64_t y;
    if ((st = need_int(r, "y", &y))) return st;
    if (y < 0 && ft_dtype_is_int(o.dtype))
      return fail(r, FT_ERR_TYPE, "integer_pow with a negative exponent y=%lld needs an inexact "
                  "dtype, got %s", (long long)y, S(r, &r->in[0]));
  } else if (r->p == FT_P_REDUCE_PRECISION) {
    int64_t e, m;
    if ((st = need_int(r, "exponent_bits", &e)) || (st = need_int(r, "mantissa_bits", &m))) return st;
    if (e < 1 || m < 0)
      return fail(r, FT_ERR_TYPE, "exponent_bits=%lld must be >= 1 and mantissa_bits=%lld >= 0",
                  (long long)e, (long long)m);
  }
  return put(r, o);
}

/* JAX's broadcasting_shape_rule: rank-0 operands broadcast against anything;
 * the others must have one rank, and each axis one size or size 1. */
static ft_status nary_shape(R *r, int n, const ft_aval *const *ops, ft_aval *o) {
  const ft_aval *ref = NULL;
  for (int i = 0; i < n; i++) {
    if (ops[i]->rank == 0) continue;
    if (!ref) { ref = ops[i]; *o = *ops[i]; continue; }
    bool ok = ops[i]->rank == ref->rank;
    for (int d = 0; ok && d < ref->rank; d++) {
      int64_t x = o->dims[d], y = ops[i]->dims[d];
      if (x == y) continue;
      if (x == 1) o->dims[d] = y;
      else if (y != 1) ok = false;
    }
    if (!ok)
      return fail(r, FT_ERR_SHAPE, "operand shapes %s and %s do not match", S(r, ref), S(r, ops[i]));
  }
  if (!ref) *o = *ops[0];
  return FT_OK;
}

static int binary_mask(ft_prim p) {
  switch (p) {
  case FT_P_ADD: case FT_P_SUB: case FT_P_MUL: case FT_P_DIV: return K_NUM;
  case FT_P_REM: return K_INT | K_FLOAT;
  case FT_P_POW: return K_INEXACT;
  case FT_P_MAX: case FT_P_MIN: return K_ANY;
  case FT_P_ATAN2: case FT_P_NEXTAFTER: case FT_P_POLYGAMMA: case FT_P_ZETA: return K_FLOAT;
  case FT_P_IGAMMA: case FT_P_IGAMMAC: case FT_P_IGAMMA_GRAD_A: return K_FLOAT;
  case FT_P_AND: case FT_P_OR: case FT_P_XOR: return K_BOOL_INT;
  case FT_P_SHIFT_LEFT: case FT_P_SHIFT_RIGHT_LOGICAL: case FT_P_SHIFT_RIGHT_ARITHMETIC:
  case FT_P_MULHI:
    return K_INT;
  case FT_P_ADD_ANY: return K_ALL;
  case FT_P_EQ: case FT_P_NE: case FT_P_EQ_TO: return K_ANY;
  default: return K_ORDERED; /* lt le gt ge */
  }
}

static ft_status rule_binary(R *r) {
  const ft_aval *a = &r->in[0], *b = &r->in[1];
  int mask = binary_mask(r->p);
  ft_status st = check_dtype(r, 0, mask, "operand");
  if (st) return st;
  if (r->p == FT_P_POW) {
    /* pow: an inexact base; the exponent is an integer or the base's dtype. */
    if (!ft_dtype_is_int(b->dtype) && b->dtype != a->dtype)
      return fail(r, FT_ERR_TYPE, "exponent dtype %s must be an integer type or match the base "
                  "dtype %s (%s, %s)", ft_dtype_name(b->dtype), ft_dtype_name(a->dtype), S(r, a), S(r, b));
  } else {
    if ((st = check_dtype(r, 1, mask, "operand"))) return st;
    if (a->dtype != b->dtype)
      return fail(r, FT_ERR_TYPE, "operand dtypes %s and %s do not match (%s, %s)",
                  ft_dtype_name(a->dtype), ft_dtype_name(b->dtype), S(r, a), S(r, b));
  }
  const ft_aval *ops[2] = {a, b};
  ft_aval o;
  if ((st = nary_shape(r, 2, ops, &o))) return st;
  o.dtype = r->pi->family == FT_FAM_COMPARE ? FT_BOOL : a->dtype;
  /* mul[out_dtype=...] (JAX 0.10's accumulation-type hint) sets the result. */
  if (r->p == FT_P_MUL) {
    const ft_pval *od = param(r, "out_dtype");
    if (od && od->tag == FT_PV_DTYPE) o.dtype = od->u.dt;
  }
  o.weak_type = all_weak(r, 0, 2);
  return put(r, o);
}

/* regularized_incomplete_beta (JAX's standard_naryop([_float] * 3)): three
 * float operands of one dtype, broadcast as the binary operations are. */
static ft_status rule_ternary(R *r) {
  ft_status st;
  for (int k = 0; k < 3; k++)
    if ((st = check_dtype(r, k, K_FLOAT, "operand"))) return st;
  const ft_aval *ops[3] = {&r->in[0], &r->in[1], &r->in[2]};
  for (int k = 1; k < 3; k++)
    if (ops[k]->dtype != ops[0]->dtype)
      return fail(r, FT_ERR_TYPE, "operand dtypes %s, %s and %s do not match (%s, %s, %s)",
                  ft_dtype_name(ops[0]->dtype), ft_dtype_name(ops[1]->dtype),
                  ft_dtype_name(ops[2]->dtype), S(r, ops[0]), S(r, ops[1]), S(r, ops[2]));
  ft_aval o;
  if ((st = nary_shape(r, 3, ops, &o))) return st;
  o.dtype = ops[0]->dtype;
  o.weak_type = all_weak(r, 0, 3);
  return put(r, o);
}

/* real, imag, conj, complex (JAX's real_p, imag_p, conj_p, complex_p):
 * elementwise between a float32/float64 type and its complex type. */
static ft_dtype complex_of(ft_dtype dt) { return dt == FT_F32 || dt == FT_C64 ? FT_C64 : FT_C128; }

static ft_status rule_complex_parts(R *r) {
  const ft_aval *a = &r->in[0];
  ft_aval o = *a;
  bool wide = a->dtype == FT_F32 || a->dtype == FT_F64;
  ft_status st;
  switch (r->p) {
  case FT_P_REAL: case FT_P_IMAG:
    if (!ft_dtype_is_complex(a->dtype))
      return fail(r, FT_ERR_TYPE, "operand dtype %s is not accepted (expects a complex type), got %s",
                  ft_dtype_name(a->dtype), S(r, a));
    o.dtype = a->dtype == FT_C64 ? FT_F32 : FT_F64;
    return put(r, o);
  case FT_P_CONJ: {
    ft_dtype in;
    if (!wide && !ft_dtype_is_complex(a->dtype))
      return fail(r, FT_ERR_TYPE, "operand dtype %s is not accepted (expects float32, float64 or a "
                  "complex type), got %s", ft_dtype_name(a->dtype), S(r, a));
    if ((st = need_dtype(r, "input_dtype", &in))) return st;
    /* the transpose reads input_dtype, so it must say what the operand is */
    if (in != a->dtype)
      return fail(r, FT_ERR_TYPE, "input_dtype=%s does not match the operand %s", ft_dtype_name(in),
                  S(r, a));
    o.dtype = complex_of(a->dtype);
    return put(r, o);
  }
  default: { /* complex: two operands of one float type */
    const ft_aval *b = &r->in[1], *ops[2] = {a, b};
    if (!wide)
      return fail(r, FT_ERR_TYPE, "operand dtype %s is not accepted (expects float32 or float64), got %s",
                  ft_dtype_name(a->dtype), S(r, a));
    if (a->dtype != b->dtype)
      return fail(r, FT_ERR_TYPE, "operand dtypes %s and %s do not match (%s, %s)",
                  ft_dtype_name(a->dtype), ft_dtype_name(b->dtype), S(r, a), S(r, b));
    if ((st = nary_shape(r, 2, ops, &o))) return st;
    o.dtype = complex_of(a->dtype);
    o.weak_type = all_weak(r, 0, 2);
    return put(r, o);
  }
  }
}

static ft_status rule_select_n(R *r) {
  ft_status st = check_count(r, 2);
  if (st) return st;
  const ft_aval *w = &r->in[0], *c0 = &r->in[1];
  /* JAX: "which must be boolean or integer type" (x64 programs carry i64) */
  if (w->dtype != FT_BOOL && !ft_dtype_is_int(w->dtype))
    return fail(r, FT_ERR_TYPE, "which must be bool or an integer type, got %s", S(r, w));
  if (w->dtype == FT_BOOL && r->n_in > 3)
    return fail(r, FT_ERR_TYPE, "a bool which selects between at most 2 cases, got %d cases", r->n_in - 1);
  for (int i = 2; i < r->n_in; i++)
    if (!ft_aval_eq(&r->in[i], c0))
      return fail(r, ft_shape_eq(&r->in[i], c0) ? FT_ERR_TYPE : FT_ERR_SHAPE,
                  "cases must have the same shape and dtype, got %s and %s", S(r, c0), S(r, &r->in[i]));
  if (w->rank != 0 && !ft_shape_eq(w, c0))
    return fail(r, FT_ERR_SHAPE, "which must be a scalar or have the cases' shape, got which %s and "
                "cases %s", S(r, w), S(r, c0));
  ft_aval o = *c0;
  o.weak_type = all_weak(r, 1, r->n_in);
  return put(r, o);
}

static ft_status rule_clamp(R *r) {
  const ft_aval *lo = &r->in[0], *x = &r->in[1], *hi = &r->in[2];
  ft_status st = check_dtype(r, 1, K_ORDERED, "operand");
  if (st) return st;
  if (lo->dtype != x->dtype || hi->dtype != x->dtype)
    return fail(r, FT_ERR_TYPE, "operand dtypes must match, got min %s, operand %s, max %s",
                S(r, lo), S(r, x), S(r, hi));
  if ((lo->rank && !ft_shape_eq(lo, x)) || (hi->rank && !ft_shape_eq(hi, x)))
    return fail(r, FT_ERR_SHAPE, "min and max must be scalars or have the operand's shape, got "
                "min %s, operand %s, max %s", S(r, lo), S(r, x), S(r, hi));
  ft_aval o = *x;
  o.weak_type = all_weak(r, 0, 3);
  return put(r, o);
}

/* ---------------------------------------------------------- conversions */

static ft_status rule_convert(R *r) {
  ft_dtype nd;
  ft_status st = need_dtype(r, "new_dtype", &nd);
  if (st) return st;
  if (nd == FT_FLOAT0 || r->in[0].dtype == FT_FLOAT0 || ft_dtype_is_key(nd) ||
      ft_dtype_is_key(r->in[0].dtype))
    return fail(r, FT_ERR_TYPE, "cannot convert %s to %s%s", S(r, &r->in[0]), ft_dtype_name(nd),
                ft_dtype_is_key(nd) || ft_dtype_is_key(r->in[0].dtype)
                    ? " (keys convert through random_wrap/random_unwrap)" : "");
  ft_aval o = r->in[0];
  o.dtype = nd;
  o.weak_type = false;
  if (r->p == FT_P_CONVERT_ELEMENT_TYPE) {
    o.weak_type = opt_bool(r, "weak_type", false);
    return put(r, o);
  }
  /* bitcast_convert_type: equal widths keep the shape; a wider input gains
   * a minor axis of the width ratio; a narrower one loses it. */
  int ib = ft_dtype_bits(r->in[0].dtype), ob = ft_dtype_bits(nd);
  bool odd = r->in[0].dtype == FT_BOOL || nd == FT_BOOL || ft_dtype_is_complex(r->in[0].dtype) ||
             ft_dtype_is_complex(nd);
  if (ib == ob) return put(r, o);
  if (odd)
    return fail(r, FT_ERR_TYPE, "cannot bitcast %s to %s of a different width", S(r, &r->in[0]),
                ft_dtype_name(nd));
  if (ib > ob) {
    if (o.rank == FT_MAX_RANK) return fail(r, FT_ERR_SHAPE, "result of %s would exceed rank %d", S(r, &r->in[0]), FT_MAX_RANK);
    o.dims[o.rank++] = ib / ob;
    return put(r, o);
  }
  if (o.rank == 0 || o.dims[o.rank - 1] != ob / ib)
    return fail(r, FT_ERR_SHAPE, "bitcasting %s to the wider %s needs a last axis of size %d",
                S(r, &r->in[0]), ft_dtype_name(nd), ob / ib);
  o.rank--;
  return put(r, o);
}

/* --------------------------------------------------------------- layout */

static ft_status rule_broadcast_in_dim(R *r) {
  int64_t shape[MAX_INTS], bd[MAX_INTS];
  int ns, nb;
  ft_status st;
  const ft_aval *a = &r->in[0];
  if ((st = get_ints(r, "shape", true, shape, &ns)) || (st = get_ints(r, "broadcast_dimensions", false, bd, &nb)))
    return st;
  if ((st = check_dims_nonneg(r, "shape", ns, shape))) return st;
  if (nb != a->rank)
    return fail(r, FT_ERR_SHAPE, "broadcast_dimensions %s must have one entry per operand axis, "
                "operand %s", T(r, nb, bd), S(r, a));
  for (int i = 0; i < nb; i++) {
    if (bd[i] < 0 || bd[i] >= ns)
      return fail(r, FT_ERR_SHAPE, "broadcast_dimensions %s out of range for shape %s",
                  T(r, nb, bd), T(r, ns, shape));
    if (i && bd[i] <= bd[i - 1])
      return fail(r, FT_ERR_SHAPE, "broadcast_dimensions %s must be strictly increasing", T(r, nb, bd));
    if (a->dims[i] != 1 && a->dims[i] != shape[bd[i]])
      return fail(r, FT_ERR_SHAPE, "operand %s cannot broadcast to shape %s: axis %d (size %lld) "
                  "maps to size %lld", S(r, a), T(r, ns, shape), i, (long long)a->dims[i],
                  (long long)shape[bd[i]]);
  }
  ft_aval o = ft_aval_make(a->dtype, ns, shape);
  o.weak_type = a->weak_type;
  return put(r, o);
}

static ft_status rule_reshape(R *r) {
  int64_t ns[MAX_INTS], dims[MAX_INTS];
  int n, nd;
  ft_status st;
  const ft_aval *a = &r->in[0];
  if ((st = get_ints(r, "new_sizes", true, ns, &n)) || (st = check_dims_nonneg(r, "new_sizes", n, ns)))
    return st;
  if ((st = get_ints(r, "dimensions", false, dims, &nd))) return st;
  if (param(r, "dimensions")) {
    if (nd != a->rank || check_axes(r, "dimensions", nd, dims, a->rank, a))
      return fail(r, FT_ERR_SHAPE, "dimensions %s must be a permutation of the axes of %s",
                  T(r, nd, dims), S(r, a));
  }
  ft_aval o = ft_aval_make(a->dtype, n, ns);
  o.weak_type = a->weak_type;
  if (!ft_aval_size_ok(&o))
    return fail(r, FT_ERR_SHAPE, "new_sizes %s have more than 2^56 elements", T(r, n, ns));
  if (ft_aval_size(&o) != ft_aval_size(a))
    return fail(r, FT_ERR_SHAPE, "cannot reshape %s (%lld elements) to new_sizes %s (%lld elements)",
                S(r, a), (long long)ft_aval_size(a), T(r, n, ns), (long long)ft_aval_size(&o));
  return put(r, o);
}

static ft_status rule_transpose(R *r) {
  int64_t perm[MAX_INTS];
  int n;
  ft_status st;
  const ft_aval *a = &r->in[0];
  if ((st = get_ints(r, "permutation", true, perm, &n))) return st;
  if (n != a->rank || check_axes(r, "permutation", n, perm, a->rank, a))
    return fail(r, FT_ERR_SHAPE, "permutation %s is not a permutation of the axes of %s",
                T(r, n, perm), S(r, a));
  ft_aval o = *a;
  for (int i = 0; i < n; i++) o.dims[i] = a->dims[perm[i]];
  return put(r, o);
}

static ft_status rule_squeeze(R *r) {
  int64_t d[MAX_INTS];
  int n;
  ft_status st;
  const ft_aval *a = &r->in[0];
  if ((st = get_ints(r, "dimensions", true, d, &n)) || (st = check_axes(r, "dimensions", n, d, a->rank, a)))
    return st;
  bool drop[FT_MAX_RANK] = {false};
  for (int i = 0; i < n; i++) {
    if (a->dims[d[i]] != 1)
      return fail(r, FT_ERR_SHAPE, "cannot squeeze axis %lld of %s: its size is not 1",
                  (long long)d[i], S(r, a));
    drop[d[i]] = true;
  }
  ft_aval o = *a;
  o.rank = 0;
  for (int i = 0; i < a->rank; i++)
    if (!drop[i]) o.dims[o.rank++] = a->dims[i];
  return put(r, o);
}

static ft_status rule_expand_dims(R *r) {
  int64_t d[MAX_INTS];
  int n;
  ft_status st;
  const ft_aval *a = &r->in[0];
  if ((st = get_ints(r, "dimensions", true, d, &n))) return st;
  int orank = a->rank + n;
  if (orank > FT_MAX_RANK)
    return fail(r, FT_ERR_SHAPE, "expanding %s by %d axes exceeds rank %d", S(r, a), n, FT_MAX_RANK);
  bool ins[FT_MAX_RANK] = {false};
  for (int i = 0; i < n; i++) {
    if (d[i] < 0 || d[i] >= orank || ins[d[i]])
      return fail(r, FT_ERR_SHAPE, "dimensions %s invalid for %s (result rank %d)", T(r, n, d),
                  S(r, a), orank);
    ins[d[i]] = true;
  }
  ft_aval o = *a;
  o.rank = orank;
  for (int i = 0, k = 0; i < orank; i++) o.dims[i] = ins[i] ? 1 : a->dims[k++];
  return put(r, o);
}

static ft_status rule_rev(R *r) {
  int64_t d[MAX_INTS];
  int n;
  ft_status st;
  if ((st = get_ints(r, "dimensions", true, d, &n)) ||
      (st = check_axes(r, "dimensions", n, d, r->in[0].rank, &r->in[0])))
    return st;
  return put(r, r->in[0]);
}

static ft_status rule_slice(R *r) {
  int64_t s[MAX_INTS], l[MAX_INTS], k[MAX_INTS];
  int ns, nl, nk;
  ft_status st;
  const ft_aval *a = &r->in[0];
  if ((st = get_ints(r, "start_indices", true, s, &ns)) || (st = get_ints(r, "limit_indices", true, l, &nl)) ||
      (st = get_ints(r, "strides", false, k, &nk)))
    return st;
  bool has_strides = param(r, "strides") != NULL;
  if (ns != a->rank || nl != a->rank || (has_strides && nk != a->rank))
    return fail(r, FT_ERR_SHAPE, "start_indices %s, limit_indices %s%s need one entry per axis of %s",
                T(r, ns, s), T(r, nl, l), has_strides ? " and strides" : "", S(r, a));
  ft_aval o = *a;
  for (int i = 0; i < a->rank; i++) {
    int64_t stride = has_strides ? k[i] : 1;
    if (stride < 1)
      return fail(r, FT_ERR_SHAPE, "strides %s must be positive", T(r, nk, k));
    if (s[i] < 0 || s[i] > l[i] || l[i] > a->dims[i])
      return fail(r, FT_ERR_SHAPE, "start_indices %s and limit_indices %s out of bounds for %s "
                  "(need 0 <= start <= limit <= size)", T(r, ns, s), T(r, nl, l), S(r, a));
    o.dims[i] = l[i] == s[i] ? 0 : (l[i] - s[i] - 1) / stride + 1; /* no overflow for huge strides */
  }
  return put(r, o);
}

/* The scalar integer index operands [from, to) of dynamic_(update_)slice. */
static ft_status check_indices(R *r, int from, int to) {
  for (int i = from; i < to; i++) {
    if (r->in[i].rank != 0 || !ft_dtype_is_int(r->in[i].dtype))
      return fail(r, FT_ERR_TYPE, "start index %d must be an integer scalar, got %s", i - from,
                  S(r, &r->in[i]));
    if (r->in[i].dtype != r->in[from].dtype)
      return fail(r, FT_ERR_TYPE, "start indices must have one dtype, got %s and %s",
                  S(r, &r->in[from]), S(r, &r->in[i]));
  }
  return FT_OK;
}

static ft_status rule_dynamic_slice(R *r) {
  ft_status st = check_count(r, 1);
  if (st) return st;
  const ft_aval *a = &r->in[0];
  int64_t sz[MAX_INTS];
  int n;
  if ((st = get_ints(r, "slice_sizes", true, sz, &n))) return st;
  if (r->n_in != 1 + a->rank)
    return fail(r, FT_ERR_TYPE, "operand %s needs %d start indices, got %d", S(r, a), a->rank, r->n_in - 1);
  if ((st = check_indices(r, 1, r->n_in))) return st;
  if (n != a->rank)
    return fail(r, FT_ERR_SHAPE, "slice_sizes %s must have one entry per axis of %s", T(r, n, sz), S(r, a));
  ft_aval o = *a;
  for (int i = 0; i < n; i++) {
    if (sz[i] < 0 || sz[i] > a->dims[i])
      return fail(r, FT_ERR_SHAPE, "slice_sizes %s out of bounds for %s", T(r, n, sz), S(r, a));
    o.dims[i] = sz[i];
  }
  return put(r, o);
}

static ft_status rule_dynamic_update_slice(R *r) {
  ft_status st = check_count(r, 2);
  if (st) return st;
  const ft_aval *a = &r->in[0], *u = &r->in[1];
  if (r->n_in != 2 + a->rank)
    return fail(r, FT_ERR_TYPE, "operand %s needs %d start indices, got %d", S(r, a), a->rank, r->n_in - 2);
  if ((st = check_indices(r, 2, r->n_in))) return st;
  if (a->dtype != u->dtype)
    return fail(r, FT_ERR_TYPE, "update dtype must match the operand's, got operand %s and update %s",
                S(r, a), S(r, u));
  bool ok = u->rank == a->rank;
  for (int i = 0; ok && i < a->rank; i++) ok = u->dims[i] <= a->dims[i];
  if (!ok)
    return fail(r, FT_ERR_SHAPE, "update %s must have the rank of operand %s and fit in it", S(r, u), S(r, a));
  return put(r, *a);
}

static ft_status rule_concatenate(R *r) {
  ft_status st = check_count(r, 1);
  if (st) return st;
  int64_t dim;
  if ((st = need_int(r, "dimension", &dim))) return st;
  const ft_aval *a = &r->in[0];
  if (a->rank == 0) return fail(r, FT_ERR_SHAPE, "cannot concatenate scalars (%s)", S(r, a));
  if (dim < 0 || dim >= a->rank)
    return fail(r, FT_ERR_SHAPE, "dimension %lld out of range for operand %s", (long long)dim, S(r, a));
  ft_aval o = *a;
  for (int i = 1; i < r->n_in; i++) {
    const ft_aval *b = &r->in[i];
    if (b->dtype != a->dtype)
      return fail(r, FT_ERR_TYPE, "operand dtypes must match, got %s and %s", S(r, a), S(r, b));
    bool ok = b->rank == a->rank;
    for (int d = 0; ok && d < a->rank; d++) ok = d == dim || b->dims[d] == a->dims[d];
    if (!ok)
      return fail(r, FT_ERR_SHAPE, "operand shapes %s and %s must match except in dimension %lld",
                  S(r, a), S(r, b), (long long)dim);
    o.dims[dim] += b->dims[dim];
  }
  o.weak_type = all_weak(r, 0, r->n_in);
  return put(r, o);
}

static ft_status rule_pad(R *r) {
  const ft_aval *a = &r->in[0], *pv = &r->in[1];
  if (pv->rank != 0 || pv->dtype != a->dtype)
    return fail(r, FT_ERR_TYPE, "padding value must be a scalar of the operand's dtype, got operand "
                "%s and padding value %s", S(r, a), S(r, pv));
  const ft_pval *cfg = param(r, "padding_config");
  if (!cfg || cfg->tag != FT_PV_TUPLE)
    return fail(r, FT_ERR_TYPE, "param padding_config must be a tuple of (lo, hi, interior)");
  if (cfg->n != a->rank)
    return fail(r, FT_ERR_SHAPE, "padding_config has %d entries for operand %s", cfg->n, S(r, a));
  ft_aval o = *a;
  for (int i = 0; i < a->rank; i++) {
    int64_t t[3];
    int n;
    if (!ft_pv_get_ints(&cfg->u.items[i], t, 3, &n) || n != 3)
      return fail(r, FT_ERR_TYPE, "padding_config entry %d must be (lo, hi, interior)", i);
    if (t[2] < 0)
      return fail(r, FT_ERR_SHAPE, "interior padding %lld of axis %d must be >= 0", (long long)t[2], i);
    int64_t d = a->dims[i], grown;
    if (__builtin_mul_overflow(d > 0 ? d - 1 : 0, t[2], &grown) ||
        __builtin_add_overflow(grown, d, &grown) || __builtin_add_overflow(grown, t[0], &grown) ||
        __builtin_add_overflow(grown, t[1], &grown))
      return fail(r, FT_ERR_SHAPE, "padding (%lld, %lld, %lld) of axis %d of %s overflows the size",
                  (long long)t[0], (long long)t[1], (long long)t[2], i, S(r, a));
    o.dims[i] = grown;
    if (o.dims[i] < 0)
      return fail(r, FT_ERR_SHAPE, "padding (%lld, %lld, %lld) of axis %d of %s gives a negative size",
                  (long long)t[0], (long long)t[1], (long long)t[2], i, S(r, a));
  }
  o.weak_type = all_weak(r, 0, 2);
  return put(r, o);
}

static ft_status rule_split(R *r) {
  int64_t axis, sz[MAX_INTS];
  int n;
  ft_status st;
  const ft_aval *a = &r->in[0];
  if ((st = need_int(r, "axis", &axis)) || (st = get_ints(r, "sizes", true, sz, &n))) return st;
  if (axis < 0 || axis >= a->rank)
    return fail(r, FT_ERR_SHAPE, "axis %lld out of range for operand %s", (long long)axis, S(r, a));
  int64_t sum = 0;
  for (int i = 0; i < n; i++) {
    if (sz[i] < 0) return fail(r, FT_ERR_SHAPE, "sizes %s must be >= 0", T(r, n, sz));
    sum += sz[i];
  }
  if (sum != a->dims[axis])
    return fail(r, FT_ERR_SHAPE, "sizes %s must add up to the size %lld of axis %lld of %s",
                T(r, n, sz), (long long)a->dims[axis], (long long)axis, S(r, a));
  for (int i = 0; i < n; i++) {
    ft_aval o = *a;
    o.dims[axis] = sz[i];
    if ((st = put(r, o))) return st;
  }
  return FT_OK;
}

/* ----------------------------------------------------------- reductions */

static ft_status rule_reduce(R *r) {
  int64_t ax[MAX_INTS];
  int n;
  ft_status st;
  const ft_aval *a = &r->in[0];
  bool arg = r->p == FT_P_ARGMAX || r->p == FT_P_ARGMIN;
  int mask = r->p == FT_P_REDUCE_SUM || r->p == FT_P_REDUCE_PROD ? K_NUM
           : r->p == FT_P_REDUCE_AND || r->p == FT_P_REDUCE_OR || r->p == FT_P_REDUCE_XOR ? K_BOOL_INT
           : arg ? K_ORDERED : K_ANY;
  if ((st = check_dtype(r, 0, mask, "operand"))) return st;
  if ((st = get_ints(r, "axes", true, ax, &n)) || (st = check_axes(r, "axes", n, ax, a->rank, a)))
    return st;
  ft_aval o = *a;
  if (arg) {
    ft_dtype it;
    if ((st = need_dtype(r, "index_dtype", &it))) return st;
    if (!ft_dtype_is_int(it))
      return fail(r, FT_ERR_TYPE, "index_dtype must be an integer type, got %s", ft_dtype_long_name(it));
    if (n != 1) return fail(r, FT_ERR_SHAPE, "axes %s must name exactly one axis", T(r, n, ax));
    if (a->dims[ax[0]] == 0)
      return fail(r, FT_ERR_SHAPE, "the reduced axis %lld of %s is empty", (long long)ax[0], S(r, a));
    o.dtype = it;
    o.weak_type = false;
  }
  bool drop[FT_MAX_RANK] = {false};
  for (int i = 0; i < n; i++) drop[ax[i]] = true;
  o.rank = 0;
  for (int i = 0; i < a->rank; i++)
    if (!drop[i]) o.dims[o.rank++] = a->dims[i];
  return put(r, o);
}

static ft_status rule_cumulative(R *r) {
  int64_t axis;
  ft_status st;
  if ((st = check_dtype(r, 0, K_NUM, "operand")) || (st = need_int(r, "axis", &axis))) return st;
  if (axis < 0 || axis >= r->in[0].rank)
    return fail(r, FT_ERR_SHAPE, "axis %lld out of range for operand %s", (long long)axis, S(r, &r->in[0]));
  return put(r, r->in[0]);
}

/* ------------------------------------------------------------------ dot */

/* XLA's "higher precision type" order used by JAX's dot_general dtype rule:
 * complex first, then exponent range, mantissa, width, signedness. */
static void dot_props(ft_dtype dt, int p[5]) {
  ft_dtype c = dt == FT_C64 ? FT_F32 : dt == FT_C128 ? FT_F64 : dt;
  static const int maxexp[FT_NUM_DTYPES] = {[FT_F16] = 16, [FT_BF16] = 128, [FT_F32] = 128, [FT_F64] = 1024};
  static const int nmant[FT_NUM_DTYPES] = {[FT_F16] = 10, [FT_BF16] = 7, [FT_F32] = 23, [FT_F64] = 52};
  bool fl = ft_dtype_is_float(c);
  p[0] = ft_dtype_is_complex(dt);
  p[1] = fl ? maxexp[c] : -1;
  p[2] = fl ? nmant[c] : -1;
  p[3] = ft_dtype_bits(c);
  p[4] = !ft_dtype_is_unsigned(c);
}

static int cmp_props(const int *a, const int *b) {
  for (int i = 0; i < 5; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

/* Reads ((lc, rc), (lb, rb)). */
static ft_status get_dotdims(R *r, int64_t v[4][MAX_INTS], int n[4]) {
  const ft_pval *dn = param(r, "dimension_numbers");
  bool ok = dn && dn->tag == FT_PV_TUPLE && dn->n == 2;
  for (int k = 0; ok && k < 2; k++) {
    const ft_pval *pair = &dn->u.items[k];
    ok = pair->tag == FT_PV_TUPLE && pair->n == 2;
    for (int s = 0; ok && s < 2; s++)
      ok = ft_pv_get_ints(&pair->u.items[s], v[2 * k + s], MAX_INTS, &n[2 * k + s]) &&
           n[2 * k + s] <= FT_MAX_RANK;
  }
  if (!ok)
    return fail(r, FT_ERR_TYPE, "param dimension_numbers must be ((lhs_contract, rhs_contract), "
                "(lhs_batch, rhs_batch))");
  return FT_OK;
}

/* The result of dot_general's dimension numbers v/n on operands 0 and 1
 * (rhs axis rgroup, when >= 0, is left out of the result: ragged_dot's
 * group axis). */
static ft_status dot_core(R *r, int64_t v[4][MAX_INTS], const int n[4], int64_t rgroup, ft_aval *out);

static ft_status rule_dot_general(R *r) {
  int64_t v[4][MAX_INTS];
  int n[4];
  ft_status st = get_dotdims(r, v, n);
  if (st) return st;
  ft_aval o;
  if ((st = dot_core(r, v, n, -1, &o))) return st;
  return put(r, o);
}

static ft_status dot_core(R *r, int64_t v[4][MAX_INTS], const int n[4], int64_t rgroup, ft_aval *out) {
  const ft_aval *a = &r->in[0], *b = &r->in[1];
  const int64_t *lc = v[0], *rc = v[1], *lb = v[2], *rbt = v[3];
  if (n[0] != n[1] || n[2] != n[3])
    return fail(r, FT_ERR_SHAPE, "contracting dimensions %s/%s and batch dimensions %s/%s must "
                "pair up", T(r, n[0], lc), T(r, n[1], rc), T(r, n[2], lb), T(r, n[3], rbt));
  /* Each side: batch + contracting axes are distinct and in range. */
  for (int side = 0; side < 2; side++) {
    const ft_aval *x = side ? b : a;
    int64_t all[2 * FT_MAX_RANK];
    int m = 0;
    for (int i = 0; i < n[2 + side]; i++) all[m++] = v[2 + side][i];
    for (int i = 0; i < n[side]; i++) all[m++] = v[side][i];
    if (m > x->rank || check_axes(r, side ? "rhs dimensions" : "lhs dimensions", m, all, x->rank, x))
      return fail(r, FT_ERR_SHAPE, "dimension_numbers ((%s, %s), (%s, %s)) are invalid for %s %s",
                  T(r, n[0], lc), T(r, n[1], rc), T(r, n[2], lb), T(r, n[3], rbt),
                  side ? "rhs" : "lhs", S(r, x));
  }
  for (int i = 0; i < n[2]; i++)
    if (a->dims[lb[i]] != b->dims[rbt[i]])
      return fail(r, FT_ERR_SHAPE, "batch dimensions of %s and %s differ: lhs axis %lld has size "
                  "%lld, rhs axis %lld has size %lld", S(r, a), S(r, b), (long long)lb[i],
                  (long long)a->dims[lb[i]], (long long)rbt[i], (long long)b->dims[rbt[i]]);
  for (int i = 0; i < n[0]; i++)
    if (a->dims[lc[i]] != b->dims[rc[i]])
      return fail(r, FT_ERR_SHAPE, "contracting dimensions of %s and %s differ: lhs axis %lld has "
                  "size %lld, rhs axis %lld has size %lld", S(r, a), S(r, b), (long long)lc[i],
                  (long long)a->dims[lc[i]], (long long)rc[i], (long long)b->dims[rc[i]]);
  /* dtype: the higher-precision operand type, then preferred_element_type. */
  int pa[5], pb[5];
  dot_props(a->dtype, pa);
  dot_props(b->dtype, pb);
  int c = cmp_props(pa, pb);
  if (c == 0 && a->dtype != b->dtype)
    return fail(r, FT_ERR_TYPE, "operand dtypes %s and %s are incompatible (%s, %s)",
                ft_dtype_name(a->dtype), ft_dtype_name(b->dtype), S(r, a), S(r, b));
  if (a->dtype == FT_FLOAT0 || b->dtype == FT_FLOAT0)
    return fail(r, FT_ERR_TYPE, "operand dtypes %s and %s are not accepted", S(r, a), S(r, b));
  ft_dtype dt = c >= 0 ? a->dtype : b->dtype;
  const ft_pval *pe = param(r, "preferred_element_type");
  if (pe) {
    if (pe->tag != FT_PV_DTYPE) return fail(r, FT_ERR_TYPE, "param preferred_element_type must be a dtype");
    ft_dtype p = pe->u.dt;
    bool ok = (ft_dtype_is_int(dt) || dt == FT_BOOL) ? (ft_dtype_is_int(p) || ft_dtype_is_inexact(p))
            : ft_dtype_is_float(dt) ? ft_dtype_is_float(p) : ft_dtype_is_complex(p);
    if (!ok)
      return fail(r, FT_ERR_TYPE, "preferred_element_type %s is incompatible with operand dtype %s",
                  ft_dtype_long_name(p), ft_dtype_name(dt));
    if (ft_dtype_bits(p) < ft_dtype_bits(dt))
      return fail(r, FT_ERR_TYPE, "preferred_element_type %s must not be narrower than %s",
                  ft_dtype_long_name(p), ft_dtype_name(dt));
    dt = p;
  }
  ft_aval o = {0};
  o.dtype = dt;
  bool used_a[FT_MAX_RANK] = {false}, used_b[FT_MAX_RANK] = {false};
  for (int i = 0; i < n[2]; i++) used_a[lb[i]] = used_b[rbt[i]] = true;
  for (int i = 0; i < n[0]; i++) used_a[lc[i]] = used_b[rc[i]] = true;
  if (rgroup >= 0) used_b[rgroup] = true;
  int rank = n[2] + (a->rank - n[2] - n[0]) + (b->rank - n[3] - n[1]) - (rgroup >= 0);
  if (rank > FT_MAX_RANK)
    return fail(r, FT_ERR_SHAPE, "result of %s . %s exceeds rank %d", S(r, a), S(r, b), FT_MAX_RANK);
  for (int i = 0; i < n[2]; i++) o.dims[o.rank++] = a->dims[lb[i]];
  for (int i = 0; i < a->rank; i++)
    if (!used_a[i]) o.dims[o.rank++] = a->dims[i];
  for (int i = 0; i < b->rank; i++)
    if (!used_b[i]) o.dims[o.rank++] = b->dims[i];
  o.weak_type = all_weak(r, 0, 2);
  *out = o;
  return FT_OK;
}

/* ragged_dot_general (JAX 0.12's _ragged_dot_general_shape_rule and
 * dtype rule): the dot of its dimension numbers, the rhs group axis left
 * out (mode RAGGED_NONCONTRACTING), or a leading group axis (mode
 * RAGGED_CONTRACTING). */
static ft_status rule_ragged_dot(R *r) {
  const ft_aval *a = &r->in[0], *b = &r->in[1], *gs = &r->in[2];
  ft_ragged_dims d;
  const ft_pval *go = param(r, "group_offset");
  if (go)
    return fail(r, FT_ERR_UNSUPPORTED, "group_offset is not supported (JAX 0.12 refuses it on CPU: "
                "\"Unimplemented group_offset support.\")");
  if (!ft_ragged_dims_read(param(r, "ragged_dot_dimension_numbers"), &d))
    return fail(r, FT_ERR_TYPE, "param ragged_dot_dimension_numbers must be RaggedDotDimensionNumbers("
                "dot_dimension_numbers=((lc, rc), (lb, rb)), lhs_ragged_dimensions=(d,), "
                "rhs_group_dimensions=(...))");
  if (d.n_ragged != 1) return fail(r, FT_ERR_TYPE, "expects exactly one lhs ragged dimension");
  if (d.ragged[0] < 0 || d.ragged[0] >= a->rank)
    return fail(r, FT_ERR_TYPE, "requires lhs ragged dimension numbers to be nonnegative and less than "
                "the number of axes of the lhs value, got %lld for lhs of rank %d",
                (long long)d.ragged[0], a->rank);
  ft_ragged_mode m = ft_ragged_mode_of(&d, a->rank);
  if (!ft_dtype_is_int(gs->dtype))
    return fail(r, FT_ERR_TYPE, "requires that group_sizes.dtype is subtype of np.integer, got %s",
                S(r, gs));
  if (gs->rank == 0) return fail(r, FT_ERR_TYPE, "expected rank of group_sizes to be >=1.");
  if (gs->rank != 1) {
    int64_t pre[FT_MAX_RANK];
    int np = ft_ragged_prefix(&d, m, a->rank, pre);
    bool ok = gs->rank == np + 1;
    for (int i = 0; ok && i < np; i++) ok = pre[i] >= 0 && pre[i] < a->rank && gs->dims[i] == a->dims[pre[i]];
    if (!ok) return fail(r, FT_ERR_TYPE, "group_sizes %s does not have the shape [prefix dims of lhs %s..., g] "
                         "that mode %s expects", S(r, gs), S(r, a), ft_ragged_mode_name(m));
  }
  int64_t g = gs->dims[gs->rank - 1], rgroup = -1;
  if (m == FT_RAGGED_NONCONTRACTING) {
    if (d.n_group != 1)
      return fail(r, FT_ERR_TYPE, "requires exactly one rhs group dimension when lhs ragged dimension is "
                  "noncontracting.");
    rgroup = d.group[0];
    if (rgroup < 0 || rgroup >= b->rank)
      return fail(r, FT_ERR_TYPE, "requires rhs group dimension numbers to be nonnegative and less than "
                  "the number of axes of the rhs value, got %lld for rhs of rank %d", (long long)rgroup, b->rank);
    for (int i = 0; i < d.nc; i++)
      if (d.rc[i] == rgroup) rgroup = -2;
    for (int i = 0; i < d.nb; i++)
      if (d.rb[i] == rgroup) rgroup = -2;
    if (rgroup == -2)
      return fail(r, FT_ERR_TYPE, "requires rhs group dimension numbers to be distinct from contracting "
                  "and batch dimensions.");
    if (b->dims[rgroup] != g)
      return fail(r, FT_ERR_TYPE, "expected rhs group dimension size to be %lld, got %lld.", (long long)g,
                  (long long)b->dims[rgroup]);
  } else if (d.n_group != 0) {
    return fail(r, FT_ERR_TYPE, "requires zero group dimensions in the rhs when lhs ragged dimension is "
                "contracting or batch.");
  }
  int64_t v[4][MAX_INTS];
  int n[4] = {d.nc, d.nc, d.nb, d.nb};
  memcpy(v[0], d.lc, sizeof d.lc), memcpy(v[1], d.rc, sizeof d.rc);
  memcpy(v[2], d.lb, sizeof d.lb), memcpy(v[3], d.rb, sizeof d.rb);
  ft_aval o;
  ft_status st = dot_core(r, v, n, rgroup, &o);
  if (st) return st;
  if (m == FT_RAGGED_CONTRACTING) {
    if (o.rank + 1 > FT_MAX_RANK)
      return fail(r, FT_ERR_SHAPE, "result of %s . %s exceeds rank %d", S(r, a), S(r, b), FT_MAX_RANK);
    memmove(o.dims + 1, o.dims, sizeof(int64_t) * (size_t)o.rank);
    o.dims[0] = g;
    o.rank++;
  }
  return put(r, o);
}

/* ---------------------------------------------------------------- other */

static ft_status rule_iota(R *r) {
  ft_dtype dt;
  int64_t shape[MAX_INTS], dim;
  int n;
  ft_status st;
  if ((st = need_dtype(r, "dtype", &dt)) || (st = get_ints(r, "shape", true, shape, &n)) ||
      (st = need_int(r, "dimension", &dim)) || (st = check_dims_nonneg(r, "shape", n, shape)))
    return st;
  if (!(dtype_class(dt) & K_NUM))
    return fail(r, FT_ERR_TYPE, "dtype %s is not accepted (expects %s)", ft_dtype_long_name(dt), class_text(K_NUM));
  if (dim < 0 || dim >= n)
    return fail(r, FT_ERR_SHAPE, "dimension %lld out of range for shape %s", (long long)dim, T(r, n, shape));
  return put(r, ft_aval_make(dt, n, shape));
}

/* empty2: a scalar of its dtype (JAX's _empty2_abstract_eval). */
static ft_status rule_empty2(R *r) {
  ft_dtype dt;
  ft_status st = need_dtype(r, "dtype", &dt);
  if (st) return st;
  return put(r, ft_aval_make(dt, 0, NULL));
}

/* ----------------------------------------------------------------- PRNG */
/* The key dtype an impl param names (random_seed, random_wrap). */
static ft_status need_impl(R *r, ft_dtype *dt) {
  const ft_pval *pv = param(r, "impl");
  if (!pv || pv->tag != FT_PV_SYM || ft_key_from_tag(pv->s, strlen(pv->s), dt) != FT_OK)
    return fail(r, FT_ERR_TYPE, "param impl must name a PRNG implementation (fry, rbg, ...)");
  return FT_OK;
}

static ft_status need_key(R *r, int i) {
  if (ft_dtype_is_key(r->in[i].dtype)) return FT_OK;
  return fail(r, FT_ERR_TYPE, "operand %d must be a PRNG key array (key<fry>[...]), got %s", i,
              S(r, &r->in[i]));
}

/* keys.shape + shape, checked against the rank limit. */
static ft_status keys_then(R *r, ft_dtype dt, const int64_t *shape, int ns) {
  const ft_aval *k = &r->in[0];
  if (k->rank + ns > FT_MAX_RANK)
    return fail(r, FT_ERR_SHAPE, "keys %s with shape %s exceed rank %d", S(r, k), T(r, ns, shape),
                FT_MAX_RANK);
  ft_aval o = ft_aval_make(dt, k->rank, k->dims);
  for (int i = 0; i < ns; i++) {
    if (shape[i] < 0) return fail(r, FT_ERR_SHAPE, "shape %s has a negative size", T(r, ns, shape));
    o.dims[o.rank++] = shape[i];
  }
  return put(r, o);
}

static ft_status rule_random(R *r) {
  ft_status st;
  int64_t shape[MAX_INTS], bw;
  int ns;
  ft_dtype dt;
  const ft_aval *a = &r->in[0];
  switch (r->p) {
  case FT_P_RANDOM_SEED:
    if ((st = need_impl(r, &dt))) return st;
    if (!ft_dtype_is_int(a->dtype))
      return fail(r, FT_ERR_TYPE, "seeds must be integers, got %s", S(r, a));
    return put(r, ft_aval_make(dt, a->rank, a->dims));
  case FT_P_RANDOM_BITS:
    if ((st = need_key(r, 0)) || (st = need_int(r, "bit_width", &bw)) ||
        (st = get_ints(r, "shape", true, shape, &ns)))
      return st;
    switch (bw) {
    case 8: dt = FT_U8; break;
    case 16: dt = FT_U16; break;
    case 32: dt = FT_U32; break;
    case 64: dt = FT_U64; break;
    default: return fail(r, FT_ERR_TYPE, "bit_width must be 8, 16, 32 or 64, got %lld", (long long)bw);
    }
    return keys_then(r, dt, shape, ns);
  case FT_P_RANDOM_SPLIT:
    if ((st = need_key(r, 0)) || (st = get_ints(r, "shape", true, shape, &ns))) return st;
    return keys_then(r, a->dtype, shape, ns);
  case FT_P_RANDOM_FOLD_IN: {
    if ((st = need_key(r, 0))) return st;
    if (!ft_dtype_is_int(r->in[1].dtype))
      return fail(r, FT_ERR_TYPE, "messages must be integers, got %s", S(r, &r->in[1]));
    const ft_aval *ops[2] = {a, &r->in[1]};
    ft_aval o;
    if ((st = nary_shape(r, 2, ops, &o))) return st;
    o.dtype = a->dtype;
    o.weak_type = false;
    return put(r, o);
  }
  case FT_P_RANDOM_WRAP: {
    if ((st = need_impl(r, &dt))) return st;
    int w = ft_key_words(dt);
    if (a->dtype != FT_U32 || a->rank < 1 || a->dims[a->rank - 1] != w)
      return fail(r, FT_ERR_TYPE, "key data for %s must be u32[...,%d], got %s", ft_dtype_name(dt),
                  w, S(r, a));
    return put(r, ft_aval_make(dt, a->rank - 1, a->dims));
  }
  case FT_P_RANDOM_UNWRAP: {
    if ((st = need_key(r, 0))) return st;
    if (a->rank + 1 > FT_MAX_RANK)
      return fail(r, FT_ERR_SHAPE, "key data of %s would exceed rank %d", S(r, a), FT_MAX_RANK);
    ft_aval o = ft_aval_make(FT_U32, a->rank, a->dims);
    o.dims[o.rank++] = ft_key_words(a->dtype);
    return put(r, o);
  }
  case FT_P_RANDOM_CLONE:
    if ((st = need_key(r, 0))) return st;
    return put(r, *a);
  case FT_P_RANDOM_GAMMA: { /* JAX: the result is a's aval */
    const ft_aval *x = &r->in[1];
    if ((st = need_key(r, 0))) return st;
    if (x->dtype != FT_F32 && x->dtype != FT_F64)
      return fail(r, FT_ERR_TYPE, "a must be f32 or f64, got %s", S(r, x));
    bool prefix = a->rank <= x->rank;
    for (int i = 0; prefix && i < a->rank; i++) prefix = a->dims[i] == x->dims[i];
    if (!prefix)
      return fail(r, FT_ERR_SHAPE, "the keys' shape must prefix a's shape (JAX splits each key "
                  "over the rest of a), got keys %s and a %s", S(r, a), S(r, x));
    ft_aval o = *x;
    o.weak_type = false;
    return put(r, o);
  }
  case FT_P_THREEFRY2X32: {
    for (int i = 0; i < 4; i++)
      if (r->in[i].dtype != FT_U32)
        return fail(r, FT_ERR_TYPE, "operands must be u32, got %s (operand %d)", S(r, &r->in[i]), i);
    const ft_aval *ops[4] = {&r->in[0], &r->in[1], &r->in[2], &r->in[3]};
    ft_aval o;
    if ((st = nary_shape(r, 4, ops, &o))) return st;
    o.weak_type = false;
    if ((st = put(r, o))) return st;
    return put(r, o);
  }
  default: { /* rng_bit_generator: (new state, bits) */
    if ((st = need_dtype(r, "dtype", &dt)) || (st = get_ints(r, "shape", true, shape, &ns))) return st;
    if (!ft_dtype_is_unsigned(dt))
      return fail(r, FT_ERR_TYPE, "dtype must be an unsigned integer type, got %s", ft_dtype_name(dt));
    if (a->dtype != FT_U32 && a->dtype != FT_U64)
      return fail(r, FT_ERR_TYPE, "the state must be u32 or u64, got %s", S(r, a));
    if ((st = put(r, ft_aval_make(a->dtype, a->rank, a->dims)))) return st;
    ft_aval o = ft_aval_make(dt, 0, NULL);
    for (int i = 0; i < ns && i < FT_MAX_RANK; i++) o.dims[o.rank++] = shape[i];
    if (ns > FT_MAX_RANK) return fail(r, FT_ERR_SHAPE, "shape %s exceeds rank %d", T(r, ns, shape), FT_MAX_RANK);
    return put(r, o);
  }
  }
}

static ft_status rule_sort(R *r) {
  ft_status st = check_count(r, 1);
  if (st) return st;
  int64_t dim, nk;
  if ((st = need_int(r, "dimension", &dim)) || (st = need_int(r, "num_keys", &nk))) return st;
  const ft_aval *a = &r->in[0];
  for (int i = 1; i < r->n_in; i++)
    if (!ft_shape_eq(&r->in[i], a))
      return fail(r, FT_ERR_SHAPE, "operands must have equal shapes, got %s and %s", S(r, a), S(r, &r->in[i]));
  if (dim < 0 || dim >= a->rank)
    return fail(r, FT_ERR_SHAPE, "dimension %lld out of range for operand %s", (long long)dim, S(r, a));
  if (nk < 1 || nk > r->n_in)
    return fail(r, FT_ERR_TYPE, "num_keys %lld must be between 1 and the number of operands (%d)",
                (long long)nk, r->n_in);
  for (int i = 0; i < r->n_in; i++)
    if ((st = check_dtype(r, i, K_ANY, "operand"))) return st;
  for (int i = 0; i < r->n_in; i++)
    if ((st = put(r, r->in[i]))) return st;
  return FT_OK;
}

/* fft_type: JAX 0.10 prints the FftType enum as its value (0 FFT, 1 IFFT,
 * 2 RFFT, 3 IRFFT); older JAX printed a name, which is accepted too. */
static int fft_kind(const ft_pval *v) {
  if (!v) return -1;
  if (v->tag == FT_PV_INT || v->tag == FT_PV_SYM) return v->u.i >= 0 && v->u.i <= 3 ? (int)v->u.i : -1;
  if (!v->s) return -1;
  const char *dot = strrchr(v->s, '.');
  const char *s = dot ? dot + 1 : v->s;
  static const char *names[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  for (int i = 0; i < 4; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

static ft_status rule_fft(R *r) {
  int64_t len[MAX_INTS];
  int n;
  ft_status st;
  const ft_aval *a = &r->in[0];
  int kind = fft_kind(param(r, "fft_type"));
  if (kind < 0) return fail(r, FT_ERR_TYPE, "param fft_type must be 0-3 (FFT, IFFT, RFFT, IRFFT)");
  if ((st = get_ints(r, "fft_lengths", true, len, &n))) return st;
  static const char *kn[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  if (n < 1 || n > 3 || n > a->rank)
    return fail(r, FT_ERR_SHAPE, "%s fft_lengths %s must name 1 to 3 trailing axes of %s", kn[kind],
                T(r, n, len), S(r, a));
  ft_aval o = *a;
  o.weak_type = false;
  const int64_t *tail = a->dims + a->rank - n;
  bool ok = true;
  if (kind == 2) { /* RFFT: real in, complex out, last axis n/2+1 */
    if (!ft_dtype_is_float(a->dtype) || (a->dtype != FT_F32 && a->dtype != FT_F64))
      return fail(r, FT_ERR_TYPE, "RFFT needs a float32 or float64 operand, got %s", S(r, a));
    for (int i = 0; i < n; i++) ok = ok && tail[i] == len[i];
    o.dtype = a->dtype == FT_F32 ? FT_C64 : FT_C128;
    o.dims[a->rank - 1] = len[n - 1] / 2 + 1;
  } else {
    if (!ft_dtype_is_complex(a->dtype))
      return fail(r, FT_ERR_TYPE, "%s needs a complex operand, got %s", kn[kind], S(r, a));
    if (kind == 3) { /* IRFFT: complex in (last axis n/2+1), real out */
      for (int i = 0; i < n - 1; i++) ok = ok && tail[i] == len[i];
      ok = ok && tail[n - 1] == len[n - 1] / 2 + 1;
      o.dtype = a->dtype == FT_C64 ? FT_F32 : FT_F64;
      o.dims[a->rank - 1] = len[n - 1];
    } else {
      for (int i = 0; i < n; i++) ok = ok && tail[i] == len[i];
    }
  }
  if (!ok)
    return fail(r, FT_ERR_SHAPE, "%s fft_lengths %s do not match the trailing axes of %s", kn[kind],
                T(r, n, len), S(r, a));
  return put(r, o);
}

/* ------------------------------------- top_k, gather/scatter, windows, conv */

static ft_status rule_top_k(R *r) {
  const ft_aval *a = &r->in[0];
  int64_t k, axis = -1;
  ft_status st;
  if ((st = need_int(r, "k", &k))) return st;
  if (param(r, "axis") && (st = need_int(r, "axis", &axis))) return st;
  if (a->rank < 1) return fail(r, FT_ERR_SHAPE, "operand %s must have rank >= 1", S(r, a));
  if (axis < 0) axis += a->rank;
  if (axis < 0 || axis >= a->rank)
    return fail(r, FT_ERR_SHAPE, "axis out of range for operand %s", S(r, a));
  if (k < 0 || k > a->dims[axis])
    return fail(r, FT_ERR_SHAPE, "k=%lld must be between 0 and the size %lld of axis %lld of %s",
                (long long)k, (long long)a->dims[axis], (long long)axis, S(r, a));
  if ((st = check_dtype(r, 0, K_ORDERED, "operand"))) return st;
  ft_aval o = *a;
  o.dims[axis] = k;
  if ((st = put(r, o))) return st;
  o.dtype = FT_I32;
  o.weak_type = false;
  return put(r, o);
}

/* Frexp x -> (m, e: i32) and Ldexp x n -> x (jnp.frexp, jnp.ldexp): a
 * real float x; Ldexp's n an integer array of x's shape (jnp.ldexp
 * broadcasts before binding). */
static ft_status rule_frexp_ldexp(R *r) {
  ft_status st = check_dtype(r, 0, K_FLOAT, "x");
  if (st) return st;
  ft_aval o = r->in[0];
  o.weak_type = false;
  if (r->p == FT_P_LDEXP) {
    if ((st = check_dtype(r, 1, K_INT, "exponent"))) return st;
    if (!ft_shape_eq(&r->in[0], &r->in[1]))
      return fail(r, FT_ERR_SHAPE, "x %s and exponent %s must have one shape", S(r, &r->in[0]), S(r, &r->in[1]));
    return put(r, o);
  }
  if ((st = put(r, o))) return st;
  o.dtype = FT_I32;
  return put(r, o);
}

/* Nonzero a [fill per axis]: the checks of JAX's Nonzero (its words); one
 * result per axis, a's other axes then size. */
static ft_status rule_nonzero(R *r) {
  const ft_aval *a = &r->in[0];
  int64_t size, axes[MAX_INTS];
  int na;
  ft_dtype odt;
  ft_status st;
  if ((st = need_int(r, "size", &size)) || (st = get_ints(r, "axes", true, axes, &na)) ||
      (st = need_dtype(r, "out_dtype", &odt)))
    return st;
  if (size < 0) return fail(r, FT_ERR_SHAPE, "size must be a positive integer; got size=%lld", (long long)size);
  if ((st = check_axes(r, "axes", na, axes, a->rank, a))) return st;
  if (na < 1) return fail(r, FT_ERR_SHAPE, "axes is empty: no results");
  if (!ft_dtype_is_int(odt)) return fail(r, FT_ERR_TYPE, "out_dtype must be an integer type, got %s", ft_dtype_name(odt));
  if (r->n_in != 1 && r->n_in != 1 + na)
    return fail(r, FT_ERR_TYPE, "Expected %d fill values, got %d", na, r->n_in - 1);
  if ((st = check_dtype(r, 0, K_ANY, "operand"))) return st;
  ft_aval o = {.dtype = odt};
  for (int i = 0; i < a->rank; i++) {
    bool in_axes = false;
    for (int k = 0; k < na; k++) in_axes |= axes[k] == i;
    if (!in_axes) o.dims[o.rank++] = a->dims[i];
  }
  for (int k = 1; k < r->n_in; k++) {
    const ft_aval *fv = &r->in[k];
    if (fv->dtype != odt)
      return fail(r, FT_ERR_TYPE, "Expected fill values to have dtype %s, got %s", ft_dtype_name(odt), S(r, fv));
    bool ok = fv->rank <= o.rank;
    for (int i = 0; ok && i < fv->rank; i++) {
      int64_t bd = o.dims[o.rank - fv->rank + i];
      ok = fv->dims[i] == bd || fv->dims[i] == 1;
    }
    if (!ok) return fail(r, FT_ERR_SHAPE, "fill_value shape %s cannot be broadcast to the batch shape", S(r, fv));
  }
  o.dims[o.rank++] = size;
  for (int k = 0; k < na; k++)
    if ((st = put(r, o))) return st;
  return FT_OK;
}

/* approx_top_k: JAX's abstract eval (its words) for aggregate_to_topk; the
 * other output size (XLA's approx_top_k_reduction_output_size) is not
 * reproduced, so that form is refused. */
static ft_status rule_approx_top_k(R *r) {
  const ft_aval *a = &r->in[0];
  int64_t k, dim;
  ft_status st;
  if ((st = need_int(r, "k", &k)) || (st = need_int(r, "reduction_dimension", &dim))) return st;
  if (k <= 0) return fail(r, FT_ERR_SHAPE, "k must be positive, got %lld", (long long)k);
  if (a->rank < 1) return fail(r, FT_ERR_SHAPE, "approx_top_k operand must have >= 1 dimension, got %s", S(r, a));
  if (dim < 0) dim += a->rank;
  if (dim < 0 || dim >= a->rank)
    return fail(r, FT_ERR_SHAPE, "reduction_dimension out of range for operand %s", S(r, a));
  if (a->dims[dim] < k)
    return fail(r, FT_ERR_SHAPE, "k must be smaller than the size of reduction_dim %lld, got %lld",
                (long long)a->dims[dim], (long long)k);
  if ((st = check_dtype(r, 0, K_FLOAT, "operand"))) return st;
  if (!opt_bool(r, "aggregate_to_topk", true))
    return fail(r, FT_ERR_UNSUPPORTED, "aggregate_to_topk=False is not supported: its output size "
                "(XLA's approx_top_k_reduction_output_size) is not reproduced");
  ft_aval o = *a;
  o.dims[dim] = k;
  if ((st = put(r, o))) return st;
  o.dtype = FT_I32;
  o.weak_type = false;
  return put(r, o);
}

/* SearchSorted's side and method (a parsed sym, or the plain word a C
 * caller wrote): false unless side is left/right and method one of JAX's. */
bool ft_searchsorted_mode(const ft_pval *side, const ft_pval *method, bool *left, bool *binary) {
  if (!side || !method || (side->tag != FT_PV_SYM && side->tag != FT_PV_STR) ||
      (method->tag != FT_PV_SYM && method->tag != FT_PV_STR) || !side->s || !method->s)
    return false;
  bool l = !strcmp(side->s, "left"), bin = !strcmp(method->s, "scan") || !strcmp(method->s, "scan_unrolled");
  if (!l && strcmp(side->s, "right")) return false;
  if (!bin && strcmp(method->s, "compare_all") && strcmp(method->s, "sort")) return false;
  if (left) *left = l;
  if (binary) *binary = bin;
  return true;
}

/* SearchSorted (JAX 0.12's HiPrim, jax/_src/numpy/hijax.py): its
 * constructor's checks, in its words, and the shape its vmapped impl gives:
 * sorted's batch axes, sorted's other axes but `dimension`, query's
 * non-batch axes. */
static ft_status rule_searchsorted(R *r) {
  const ft_aval *a = &r->in[0], *q = &r->in[1];
  int64_t b, d;
  ft_dtype odt;
  ft_status st;
  if ((st = need_int(r, "batch_dims", &b)) || (st = need_int(r, "dimension", &d)) ||
      (st = need_dtype(r, "out_dtype", &odt)))
    return st;
  const ft_pval *side = param(r, "side"), *method = param(r, "method");
  if (!ft_searchsorted_mode(side, method, NULL, NULL))
    return fail(r, FT_ERR_TYPE, "side must be left or right and method one of compare_all, scan, "
                "scan_unrolled, sort");
  if (b < 0 || b >= a->rank)
    return fail(r, FT_ERR_SHAPE, "batch_dims=%lld must be in range [0, %d) for sorted_arr %s",
                (long long)b, a->rank, S(r, a));
  if (d < b || d >= a->rank)
    return fail(r, FT_ERR_SHAPE, "dimension=%lld must be in range [%lld, %d) for sorted_arr %s",
                (long long)d, (long long)b, a->rank, S(r, a));
  if (a->dtype != q->dtype)
    return fail(r, FT_ERR_TYPE, "dtypes of sorted_arr and query must match; got %s and %s",
                ft_dtype_name(a->dtype), ft_dtype_name(q->dtype));
  if ((st = check_dtype(r, 0, K_ANY, "sorted_arr"))) return st;
  if (q->rank < b) return fail(r, FT_ERR_SHAPE, "query %s has fewer than batch_dims=%lld axes", S(r, q), (long long)b);
  for (int i = 0; i < b; i++)
    if (a->dims[i] != q->dims[i])
      return fail(r, FT_ERR_SHAPE, "batch dimension sizes must match; got %s and %s", S(r, a), S(r, q));
  if (!ft_dtype_is_int(odt))
    return fail(r, FT_ERR_TYPE, "out_dtype should be an integer type; got %s", ft_dtype_name(odt));
  int bits = (int)ft_dtype_size(odt) * 8 - (ft_dtype_is_signed(odt) ? 1 : 0);
  if (bits < 63 && a->dims[d] > (INT64_C(1) << bits) - 1)
    return fail(r, FT_ERR_TYPE, "the size %lld of the searched axis does not fit out_dtype %s",
                (long long)a->dims[d], ft_dtype_name(odt));
  if (a->rank - 1 + q->rank - b > FT_MAX_RANK)
    return fail(r, FT_ERR_SHAPE, "the result of %s and %s would have more than %d axes", S(r, a), S(r, q), FT_MAX_RANK);
  ft_aval o = {.dtype = odt, .rank = 0};
  for (int i = 0; i < a->rank; i++)
    if (i != d) o.dims[o.rank++] = a->dims[i];
  for (int i = (int)b; i < q->rank; i++) o.dims[o.rank++] = q->dims[i];
  return put(r, o);
}

/* Reads field `name` of a dimension-numbers param. JAX prints these as
 * `GatherDimensionNumbers(offset_dims=(), ...)`; the value is kept as text
 * (opaque) or as a positional tuple of int tuples (pos is the field index). */
static bool dn_field(const ft_pval *v, const char *name, int pos, int64_t *out, int *n) {
  *n = 0;
  if (!v) return false;
  if (v->tag == FT_PV_TUPLE) {
    if (pos >= v->n) return false;
    return ft_pv_get_ints(&v->u.items[pos], out, FT_MAX_RANK, n) && *n <= FT_MAX_RANK;
  }
  if (!v->s) return false;
  size_t nl = strlen(name);
  for (const char *s = strstr(v->s, name); s; s = strstr(s + 1, name)) {
    if (s > v->s && s[-1] != '(' && s[-1] != ' ' && s[-1] != ',') continue;
    if (s[nl] != '=') continue;
    const char *q = s + nl + 1;
    if (*q != '(') return false;
    q++;
    while (*q && *q != ')') {
      while (*q == ' ' || *q == ',') q++;
      if (*q == ')') break;
      bool wrapped = !strncmp(q, "np.int64(", 9);
      if (wrapped) q += 9;
      char *e;
      long long x = strtoll(q, &e, 10);
      if (e == q || *n >= FT_MAX_RANK || (wrapped && *e != ')')) return false;
      out[(*n)++] = x;
      q = e + wrapped;
    }
    return *q == ')';
  }
  return false;
}

/* Exposed for the runtime (interp_index.c, interp_window.c): one decoder of
 * the printed dimension numbers for the shape rules and the interpreter. */
bool ft_dimnums_field(const ft_pval *v, const char *name, int pos, int64_t *out, int *n) {
  return dn_field(v, name, pos, out, n);
}

static bool contains(int n, const int64_t *v, int64_t x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return true;
  return false;
}

static ft_status rule_gather(R *r) {
  const ft_aval *a = &r->in[0], *ix = &r->in[1];
  const ft_pval *dn = param(r, "dimension_numbers");
  int64_t off[FT_MAX_RANK], col[FT_MAX_RANK], sim[FT_MAX_RANK], obd[FT_MAX_RANK], ibd[FT_MAX_RANK];
  int noff, ncol, nsim, nobd, nibd;
  if (!dn_field(dn, "offset_dims", 0, off, &noff) || !dn_field(dn, "collapsed_slice_dims", 1, col, &ncol) ||
      !dn_field(dn, "start_index_map", 2, sim, &nsim))
    return fail(r, FT_ERR_TYPE, "param dimension_numbers must be GatherDimensionNumbers(offset_dims=..., "
                "collapsed_slice_dims=..., start_index_map=...)");
  if (!dn_field(dn, "operand_batching_dims", 3, obd, &nobd)) nobd = 0;
  if (!dn_field(dn, "start_indices_batching_dims", 4, ibd, &nibd)) nibd = 0;
  int64_t ss[MAX_INTS];
  int nss;
  ft_status st;
  if ((st = get_ints(r, "slice_sizes", true, ss, &nss))) return st;
  if (!ft_dtype_is_int(ix->dtype) || ix->rank < 1)
    return fail(r, FT_ERR_TYPE, "indices must be an integer array of rank >= 1, got %s", S(r, ix));
  if (ix->dims[ix->rank - 1] != nsim)
    return fail(r, FT_ERR_SHAPE, "the last axis of indices %s must have start_index_map's length %d",
                S(r, ix), nsim);
  if (nss != a->rank)
    return fail(r, FT_ERR_SHAPE, "slice_sizes %s must have one entry per axis of %s", T(r, nss, ss), S(r, a));
  for (int i = 0; i < nss; i++)
    if (ss[i] < 0 || ss[i] > a->dims[i])
      return fail(r, FT_ERR_SHAPE, "slice_sizes %s out of bounds for %s", T(r, nss, ss), S(r, a));
  for (int i = 0; i < ncol; i++)
    if (col[i] < 0 || col[i] >= a->rank || ss[col[i]] > 1)
      return fail(r, FT_ERR_SHAPE, "collapsed_slice_dims %s must name axes of %s with slice size <= 1",
                  T(r, ncol, col), S(r, a));
  for (int i = 0; i < nsim; i++)
    if (sim[i] < 0 || sim[i] >= a->rank)
      return fail(r, FT_ERR_SHAPE, "start_index_map %s out of range for %s", T(r, nsim, sim), S(r, a));
  if (noff + ncol + nobd != a->rank)
    return fail(r, FT_ERR_SHAPE, "offset_dims %s, collapsed_slice_dims %s and operand_batching_dims "
                "must account for every axis of %s", T(r, noff, off), T(r, ncol, col), S(r, a));
  int orank = noff + ix->rank - 1;
  if (orank > FT_MAX_RANK) return fail(r, FT_ERR_SHAPE, "result would exceed rank %d", FT_MAX_RANK);
  for (int i = 0; i < noff; i++)
    if (off[i] < 0 || off[i] >= orank || (i && off[i] <= off[i - 1]))
      return fail(r, FT_ERR_SHAPE, "offset_dims %s must be sorted and below the result rank %d",
                  T(r, noff, off), orank);
  ft_aval o = {0};
  o.dtype = a->dtype;
  o.rank = orank;
  int bi = 0, si = 0;
  for (int d = 0; d < orank; d++) {
    if (contains(noff, off, d)) {
      while (si < nss && (contains(ncol, col, si) || contains(nobd, obd, si))) si++;
      o.dims[d] = si < nss ? ss[si++] : 0;
    } else {
      o.dims[d] = ix->dims[bi++];
    }
  }
  o.weak_type = a->weak_type;
  return put(r, o);
}

static ft_status rule_scatter(R *r) {
  const ft_aval *a = &r->in[0], *ix = &r->in[1], *u = &r->in[2];
  const ft_pval *dn = param(r, "dimension_numbers");
  int64_t uwd[FT_MAX_RANK], iwd[FT_MAX_RANK], sdo[FT_MAX_RANK], obd[FT_MAX_RANK];
  int nuwd, niwd, nsdo, nobd;
  if (!dn_field(dn, "update_window_dims", 0, uwd, &nuwd) || !dn_field(dn, "inserted_window_dims", 1, iwd, &niwd) ||
      !dn_field(dn, "scatter_dims_to_operand_dims", 2, sdo, &nsdo))
    return fail(r, FT_ERR_TYPE, "param dimension_numbers must be ScatterDimensionNumbers(update_window_dims=..., "
                "inserted_window_dims=..., scatter_dims_to_operand_dims=...)");
  if (!dn_field(dn, "operand_batching_dims", 3, obd, &nobd)) nobd = 0;
  if (u->dtype != a->dtype)
    return fail(r, FT_ERR_TYPE, "updates dtype must match the operand's, got operand %s and updates %s",
                S(r, a), S(r, u));
  if (r->p != FT_P_SCATTER && r->p != FT_P_SCATTER_MIN && r->p != FT_P_SCATTER_MAX) {
    ft_status st = check_dtype(r, 0, K_NUM, "operand");
    if (st) return st;
  }
  if (!ft_dtype_is_int(ix->dtype) || ix->rank < 1)
    return fail(r, FT_ERR_TYPE, "indices must be an integer array of rank >= 1, got %s", S(r, ix));
  if (ix->dims[ix->rank - 1] != nsdo)
    return fail(r, FT_ERR_SHAPE, "the last axis of indices %s must have scatter_dims_to_operand_dims' "
                "length %d", S(r, ix), nsdo);
  if (u->rank != nuwd + ix->rank - 1)
    return fail(r, FT_ERR_SHAPE, "updates %s must have rank %d (update_window_dims %s plus the batch "
                "axes of indices %s)", S(r, u), nuwd + ix->rank - 1, T(r, nuwd, uwd), S(r, ix));
  if (nuwd + niwd + nobd != a->rank)
    return fail(r, FT_ERR_SHAPE, "update_window_dims %s and inserted_window_dims %s must account for "
                "every axis of %s", T(r, nuwd, uwd), T(r, niwd, iwd), S(r, a));
  for (int i = 0, bi = 0; i < u->rank; i++) {
    if (contains(nuwd, uwd, i)) continue;
    if (u->dims[i] != ix->dims[bi++])
      return fail(r, FT_ERR_SHAPE, "the scatter axes of updates %s must match the batch axes of indices %s",
                  S(r, u), S(r, ix));
  }
  return put(r, *a);
}

/* reduce_window_*: dilate the operand and the window, pad, stride. */
static ft_status window_shape(R *r, const ft_aval *a, ft_aval *out);
/* 1 + f * (n - 1), a length of n dilated by f (0 for n == 0), and
 * d + lo + hi, a padded length: false when either overflows int64 (the
 * params are user input, so a huge dilation or padding is a shape error,
 * not undefined behaviour). */
static bool dilated_len(int64_t n, int64_t f, int64_t *out) {
  int64_t m;
  if (n == 0) return *out = 0, true;
  return !__builtin_mul_overflow(f, n - 1, &m) && !__builtin_add_overflow(m, 1, out);
}
static bool padded_len(int64_t d, int64_t lo, int64_t hi, int64_t *out) {
  int64_t t;
  return !__builtin_add_overflow(d, lo, &t) && !__builtin_add_overflow(t, hi, out);
}

static ft_status rule_reduce_window(R *r) {
  ft_status st = check_dtype(r, 0, r->p == FT_P_REDUCE_WINDOW_SUM ? K_NUM : K_ANY, "operand");
  ft_aval o;
  if (st || (st = window_shape(r, &r->in[0], &o))) return st;
  return put(r, o);
}

/* select_and_gather_add tangents operand (one aval; the result is the
 * reduce_window of operand) and select_and_scatter_add source operand
 * (source of that reduce_window's shape; the result is operand's). */
static ft_status rule_select_and(R *r) {
  const ft_aval *src = &r->in[0], *a = &r->in[1];
  ft_status st = check_dtype(r, 1, K_FLOAT, "operand");
  if (st) return st;
  const ft_pval *sp = param(r, "select_prim");
  if (!sp || sp->tag != FT_PV_SYM) return fail(r, FT_ERR_TYPE, "select_prim must be ge or le");
  ft_aval o;
  if ((st = window_shape(r, a, &o))) return st;
  if (r->p == FT_P_SELECT_AND_GATHER_ADD) {
    if (!ft_aval_eq(src, a) && !(src->dtype == a->dtype && ft_shape_eq(src, a)))
      return fail(r, FT_ERR_TYPE, "tangents %s and operand %s must have one shape and dtype", S(r, src),
                  S(r, a));
    return put(r, o);
  }
  if (src->dtype != a->dtype || !ft_shape_eq(src, &o))
    return fail(r, FT_ERR_SHAPE, "source %s must have the window result's shape and dtype %s", S(r, src),
                S(r, &o));
  ft_aval res = *a;
  res.weak_type = false;
  return put(r, res);
}

/* The result of reduce_window's windows over a (the window params of r). */
static ft_status window_shape(R *r, const ft_aval *a, ft_aval *out) {
  int64_t wd[MAX_INTS], ws[MAX_INTS], bd[MAX_INTS], wdl[MAX_INTS];
  int nwd, nws, nbd, nwdl;
  ft_status st;
  if ((st = get_ints(r, "window_dimensions", true, wd, &nwd)) ||
      (st = get_ints(r, "window_strides", true, ws, &nws)) ||
      (st = get_ints(r, "base_dilation", false, bd, &nbd)) ||
      (st = get_ints(r, "window_dilation", false, wdl, &nwdl)))
    return st;
  const ft_pval *pad = param(r, "padding");
  if (nwd != a->rank || nws != a->rank || (nbd && nbd != a->rank) || (nwdl && nwdl != a->rank) ||
      (pad && (pad->tag != FT_PV_TUPLE || pad->n != a->rank)))
    return fail(r, FT_ERR_SHAPE, "window_dimensions %s, window_strides %s, padding and dilations need "
                "one entry per axis of %s", T(r, nwd, wd), T(r, nws, ws), S(r, a));
  ft_aval o = *a;
  for (int i = 0; i < a->rank; i++) {
    int64_t lh[2] = {0, 0};
    int n2 = 0;
    if (pad && (!ft_pv_get_ints(&pad->u.items[i], lh, 2, &n2) || n2 != 2))
      return fail(r, FT_ERR_TYPE, "padding entry %d must be (lo, hi)", i);
    int64_t b = nbd ? bd[i] : 1, w = nwdl ? wdl[i] : 1;
    if (wd[i] < 1 || ws[i] < 1 || b < 1 || w < 1)
      return fail(r, FT_ERR_SHAPE, "window sizes, strides and dilations must be >= 1 (axis %d)", i);
    int64_t d, padded, win;
    if (!dilated_len(a->dims[i], b, &d) || !padded_len(d, lh[0], lh[1], &padded) ||
        !dilated_len(wd[i], w, &win))
      return fail(r, FT_ERR_SHAPE, "window, dilations or padding of axis %d overflow int64 (operand "
                  "%s, window %s)", i, S(r, a), T(r, nwd, wd));
    if (padded < win)
      return fail(r, FT_ERR_SHAPE, "window %s does not fit operand %s after padding (axis %d)",
                  T(r, nwd, wd), S(r, a), i);
    o.dims[i] = (padded - win) / ws[i] + 1;
  }
  *out = o;
  return FT_OK;
}

static ft_status rule_conv(R *r) {
  const ft_aval *a = &r->in[0], *k = &r->in[1];
  int n = a->rank;
  if (n < 2 || k->rank != n)
    return fail(r, FT_ERR_SHAPE, "lhs %s and rhs %s must have one rank >= 2", S(r, a), S(r, k));
  int64_t ls[FT_MAX_RANK], rs[FT_MAX_RANK], os[FT_MAX_RANK];
  int nl, nr, no;
  const ft_pval *dn = param(r, "dimension_numbers");
  if (!dn) { /* None: NC..., OI..., NC... */
    for (int i = 0; i < n; i++) ls[i] = rs[i] = os[i] = i;
    nl = nr = no = n;
  } else if (!dn_field(dn, "lhs_spec", 0, ls, &nl) || !dn_field(dn, "rhs_spec", 1, rs, &nr) ||
             !dn_field(dn, "out_spec", 2, os, &no)) {
    return fail(r, FT_ERR_TYPE, "param dimension_numbers must be ConvDimensionNumbers(lhs_spec=..., "
                "rhs_spec=..., out_spec=...)");
  }
  if (nl != n || nr != n || no != n || check_axes(r, "lhs_spec", n, ls, n, a) ||
      check_axes(r, "rhs_spec", n, rs, n, k) || check_axes(r, "out_spec", n, os, n, a))
    return fail(r, FT_ERR_SHAPE, "dimension_numbers specs must be permutations of the %d axes", n);
  int ns = n - 2;
  int64_t st_[MAX_INTS], ld[MAX_INTS], rd[MAX_INTS];
  int nst, nld, nrd;
  int64_t fg, bg;
  ft_status st;
  if ((st = get_ints(r, "window_strides", true, st_, &nst)) || (st = get_ints(r, "lhs_dilation", false, ld, &nld)) ||
      (st = get_ints(r, "rhs_dilation", false, rd, &nrd)) || (st = need_int(r, "feature_group_count", &fg)) ||
      (st = need_int(r, "batch_group_count", &bg)))
    return st;
  const ft_pval *pad = param(r, "padding");
  if (nst != ns || (nld && nld != ns) || (nrd && nrd != ns) ||
      (pad && (pad->tag != FT_PV_TUPLE || pad->n != ns)))
    return fail(r, FT_ERR_SHAPE, "window_strides %s, padding and dilations need one entry per spatial "
                "axis (%d)", T(r, nst, st_), ns);
  if (fg < 1 || bg < 1) return fail(r, FT_ERR_SHAPE, "group counts must be >= 1");
  int64_t in_f = a->dims[ls[1]], k_in = k->dims[rs[1]], k_out = k->dims[rs[0]], batch = a->dims[ls[0]];
  if (in_f != k_in * fg || k_out % fg || k_out % bg || batch % bg)
    return fail(r, FT_ERR_SHAPE, "feature sizes of lhs %s and rhs %s do not agree with "
                "feature_group_count=%lld and batch_group_count=%lld", S(r, a), S(r, k), (long long)fg,
                (long long)bg);
  if (a->dtype != k->dtype && !param(r, "preferred_element_type"))
    return fail(r, FT_ERR_TYPE, "operand dtypes %s and %s do not match (%s, %s)", ft_dtype_name(a->dtype),
                ft_dtype_name(k->dtype), S(r, a), S(r, k));
  if ((st = check_dtype(r, 0, K_NUM, "lhs"))) return st;
  ft_aval o = {0};
  o.rank = n;
  o.dtype = a->dtype;
  ft_dtype pe;
  if (param(r, "preferred_element_type") && !need_dtype(r, "preferred_element_type", &pe)) o.dtype = pe;
  o.dims[os[0]] = batch / bg;
  o.dims[os[1]] = k_out;
  for (int i = 0; i < ns; i++) {
    int64_t lh[2] = {0, 0};
    int n2 = 0;
    if (pad && (!ft_pv_get_ints(&pad->u.items[i], lh, 2, &n2) || n2 != 2))
      return fail(r, FT_ERR_TYPE, "padding entry %d must be (lo, hi)", i);
    int64_t d = a->dims[ls[2 + i]], w = k->dims[rs[2 + i]], dl, wl, padded;
    int64_t fl = nld ? ld[i] : 1, fr = nrd ? rd[i] : 1;
    if (fl < 1 || fr < 1)
      return fail(r, FT_ERR_SHAPE, "lhs_dilation and rhs_dilation must be >= 1 (spatial dimension %d)", i);
    if (!dilated_len(d, fl, &dl) || !dilated_len(w, fr, &wl) || !padded_len(dl, lh[0], lh[1], &padded))
      return fail(r, FT_ERR_SHAPE, "dilations or padding of spatial dimension %d overflow int64 "
                  "(lhs %s, rhs %s)", i, S(r, a), S(r, k));
    if (st_[i] < 1) return fail(r, FT_ERR_SHAPE, "window_strides %s must be positive", T(r, nst, st_));
    o.dims[os[2 + i]] = padded < wl ? 0 : (padded - wl) / st_[i] + 1;
  }
  return put(r, o);
}

/* --------------------------------------------------------- control flow */

/* Checks that sub-jaxpr j takes n args of avals args[] (its invars; a
 * sub-jaxpr's constvars are closed over and take no operand). */
static ft_status check_sig(R *r, const char *what, const ft_jaxpr *j, int n, const ft_aval *args,
                           int arg0) {
  if (j->n_in != n)
    return fail(r, FT_ERR_TYPE, "%s takes %d inputs but is given %d operands", what, j->n_in, n);
  for (int i = 0; i < n; i++)
    if (!ft_aval_eq(&j->invars[i]->aval, &args[i]))
      return fail(r, ft_shape_eq(&j->invars[i]->aval, &args[i]) ? FT_ERR_TYPE : FT_ERR_SHAPE,
                  "%s input %d is %s but operand %d is %s", what, i, S(r, &j->invars[i]->aval),
                  arg0 + i, S(r, &args[i]));
  return FT_OK;
}

static ft_status put_outs(R *r, const ft_jaxpr *j) {
  for (int i = 0; i < j->n_out; i++) {
    ft_aval o = j->outvars[i]->aval;
    ft_status st = put(r, o);
    if (st) return st;
  }
  return FT_OK;
}

static ft_status rule_cond(R *r) {
  ft_status st = check_count(r, 1);
  if (st) return st;
  const ft_aval *ix = &r->in[0];
  if (ix->rank != 0 || (ix->dtype != FT_I32 && ix->dtype != FT_BOOL))
    return fail(r, FT_ERR_TYPE, "the index operand must be an int32 or bool scalar, got %s", S(r, ix));
  const ft_pval *br = param(r, "branches");
  if (!br || br->tag != FT_PV_TUPLE || br->n < 1)
    return fail(r, FT_ERR_TYPE, "param branches must be a non-empty tuple of jaxprs");
  const ft_jaxpr *b0 = NULL;
  for (int k = 0; k < br->n; k++) {
    const ft_pval *bv = &br->u.items[k];
    if (bv->tag != FT_PV_JAXPR || !bv->u.jaxpr)
      return fail(r, FT_ERR_TYPE, "branch %d is not a jaxpr", k);
    const ft_jaxpr *b = bv->u.jaxpr;
    char what[32];
    snprintf(what, sizeof what, "branch %d", k);
    if ((st = check_sig(r, what, b, r->n_in - 1, r->in + 1, 1))) return st;
    if (!b0) { b0 = b; continue; }
    if (b->n_out != b0->n_out)
      return fail(r, FT_ERR_TYPE, "branches must agree on outputs: branch 0 has %d, branch %d has %d",
                  b0->n_out, k, b->n_out);
    for (int i = 0; i < b->n_out; i++)
      if (!ft_aval_eq(&b->outvars[i]->aval, &b0->outvars[i]->aval))
        return fail(r, FT_ERR_TYPE, "branches must agree on outputs: output %d is %s in branch 0 "
                    "and %s in branch %d", i, S(r, &b0->outvars[i]->aval), S(r, &b->outvars[i]->aval), k);
  }
  return put_outs(r, b0);
}

static ft_status rule_while(R *r) {
  int64_t cn = 0, bn = 0;
  const ft_jaxpr *cj = NULL, *bj = NULL;
  ft_status st;
  if ((st = need_int(r, "cond_nconsts", &cn)) || (st = need_int(r, "body_nconsts", &bn)) ||
      (st = need_jaxpr(r, "cond_jaxpr", &cj)) || (st = need_jaxpr(r, "body_jaxpr", &bj)))
    return st;
  if (cn < 0 || bn < 0 || cn + bn > r->n_in)
    return fail(r, FT_ERR_TYPE, "cond_nconsts=%lld and body_nconsts=%lld do not fit %d operands",
                (long long)cn, (long long)bn, r->n_in);
  int nc = r->n_in - (int)(cn + bn);
  const ft_aval *carry = r->in + cn + bn;
  ft_aval args[2 * 64];
  ft_aval *buf = args;
  if (r->n_in > 64) {
    buf = malloc(sizeof(ft_aval) * (size_t)r->n_in);
    if (!buf) return fail(r, FT_ERR_NOMEM, "out of memory");
  }
  /* cond takes cond consts + carry; body takes body consts + carry. */
  memcpy(buf, r->in, sizeof(ft_aval) * (size_t)cn);
  memcpy(buf + cn, carry, sizeof(ft_aval) * (size_t)nc);
  st = check_sig(r, "cond_jaxpr", cj, (int)cn + nc, buf, 0);
  if (!st) {
    memcpy(buf, r->in + cn, sizeof(ft_aval) * (size_t)bn);
    memcpy(buf + bn, carry, sizeof(ft_aval) * (size_t)nc);
    st = check_sig(r, "body_jaxpr", bj, (int)bn + nc, buf, (int)cn);
  }
  if (buf != args) free(buf);
  if (st) return st;
  if (cj->n_out != 1 || cj->outvars[0]->aval.dtype != FT_BOOL)
    return fail(r, FT_ERR_TYPE, "cond_jaxpr must return one bool[], got %d outputs%s%s", cj->n_out,
                cj->n_out ? ", the first " : "", cj->n_out ? S(r, &cj->outvars[0]->aval) : "");
  if (bj->n_out != nc)
    return fail(r, FT_ERR_TYPE, "body_jaxpr returns %d values for a carry of %d", bj->n_out, nc);
  /* A batched predicate, bool[B...], as JAX's vmap prints a while whose
   * predicate depends on mapped values: the loop runs while any lane is
   * true and each carry keeps its lanes whose predicate is false, so every
   * carry must have B... as its leading axes (JAX's _pred_bcast_select_hlo). */
  const ft_aval *pa = &cj->outvars[0]->aval;
  for (int i = 0; i < nc && pa->rank > 0; i++)
    if (carry[i].rank < pa->rank || memcmp(carry[i].dims, pa->dims, sizeof(int64_t) * (size_t)pa->rank))
      return fail(r, FT_ERR_SHAPE, "cond_jaxpr returns the batched predicate %s but carry %d is %s "
                  "(a batched predicate's shape must lead every carry's)", S(r, pa), i, S(r, &carry[i]));
  for (int i = 0; i < nc; i++)
    if (!ft_aval_eq(&bj->outvars[i]->aval, &carry[i]))
      return fail(r, FT_ERR_TYPE, "body_jaxpr output %d is %s but the carry is %s", i,
                  S(r, &bj->outvars[i]->aval), S(r, &carry[i]));
  for (int i = 0; i < nc; i++)
    if ((st = put(r, carry[i]))) return st;
  return FT_OK;
}

static ft_status rule_scan(R *r) {
  int64_t ncon = 0, ncar = 0, len = 0;
  const ft_jaxpr *j = NULL;
  ft_status st;
  if ((st = need_int(r, "num_consts", &ncon)) || (st = need_int(r, "num_carry", &ncar)) ||
      (st = need_int(r, "length", &len)) || (st = need_jaxpr(r, "jaxpr", &j)))
    return st;
  if (ncon < 0 || ncar < 0 || ncon + ncar > r->n_in || len < 0)
    return fail(r, FT_ERR_TYPE, "num_consts=%lld, num_carry=%lld, length=%lld do not fit %d operands",
                (long long)ncon, (long long)ncar, (long long)len, r->n_in);
  /* A pytree structure kept from a printout must still say the counts
   * (a pass that changes them must drop it). */
  const ft_pval *ftin = param(r, "ft_in"), *ftout = param(r, "ft_out");
  int64_t g[3];
  if (ftin && ftin->tag != FT_PV_NONE &&
      (!ft_flattree_groups(ftin, 3, g) || g[0] != ncon || g[1] != ncar || g[2] != r->n_in - ncon - ncar))
    return fail(r, FT_ERR_TYPE, "ft_in does not have num_consts=%lld, num_carry=%lld and %lld xs leaves",
                (long long)ncon, (long long)ncar, (long long)(r->n_in - ncon - ncar));
  if (ftout && ftout->tag != FT_PV_NONE &&
      (!ft_flattree_groups(ftout, 2, g) || g[0] != ncar || g[1] != j->n_out - ncar))
    return fail(r, FT_ERR_TYPE, "ft_out does not have num_carry=%lld and %lld ys leaves",
                (long long)ncar, (long long)(j->n_out - ncar));
  const ft_pval *lin = param(r, "linear");
  if (lin && (lin->tag != FT_PV_TUPLE || lin->n != r->n_in))
    return fail(r, FT_ERR_TYPE, "param linear must have one bool per operand (%d)", r->n_in);
  int nx = r->n_in - (int)(ncon + ncar);
  ft_aval *buf = malloc(sizeof(ft_aval) * (size_t)(r->n_in ? r->n_in : 1));
  if (!buf) return fail(r, FT_ERR_NOMEM, "out of memory");
  memcpy(buf, r->in, sizeof(ft_aval) * (size_t)(ncon + ncar));
  st = FT_OK;
  for (int i = 0; i < nx && !st; i++) {
    const ft_aval *x = &r->in[ncon + ncar + i];
    if (x->rank < 1 || x->dims[0] != len)
      st = fail(r, FT_ERR_SHAPE, "scanned operand %d is %s but needs a leading axis of length %lld",
                (int)(ncon + ncar) + i, S(r, x), (long long)len);
    ft_aval s = *x;
    s.rank = x->rank ? x->rank - 1 : 0;
    memmove(s.dims, x->dims + 1, sizeof(int64_t) * (size_t)s.rank);
    buf[ncon + ncar + i] = s;
  }
  if (!st) st = check_sig(r, "jaxpr", j, r->n_in, buf, 0);
  free(buf);
  if (st) return st;
  if (j->n_out < ncar)
    return fail(r, FT_ERR_TYPE, "jaxpr returns %d values for a carry of %lld", j->n_out, (long long)ncar);
  for (int i = 0; i < ncar; i++) {
    const ft_aval *c = &r->in[ncon + i], *o = &j->outvars[i]->aval;
    if (!ft_aval_eq(c, o))
      return fail(r, FT_ERR_TYPE, "carry output %d is %s but the carry input is %s", i, S(r, o), S(r, c));
    if ((st = put(r, *c))) return st;
  }
  for (int i = (int)ncar; i < j->n_out; i++) {
    const ft_aval *y = &j->outvars[i]->aval;
    if (y->rank == FT_MAX_RANK)
      return fail(r, FT_ERR_SHAPE, "stacked output %s would exceed rank %d", S(r, y), FT_MAX_RANK);
    ft_aval o = *y;
    o.rank = y->rank + 1;
    o.dims[0] = len;
    memcpy(o.dims + 1, y->dims, sizeof(int64_t) * (size_t)y->rank);
    if ((st = put(r, o))) return st;
  }
  return FT_OK;
}

/* The first i where a[i] and the aval of v[i] differ (of n), or -1. */
static int avals_differ(const ft_aval *a, ft_var *const *v, int n) {
  for (int i = 0; i < n; i++)
    if (!ft_aval_eq(a + i, &v[i]->aval)) return i;
  return -1;
}

static ft_status rule_mismatch(R *r, const char *what) {
  return fail(r, FT_ERR_TYPE, "the %s rule does not fit the call (docs/autodiff.md, Custom rules)", what);
}

/* Rules given as jaxprs (C tracing) must fit the call; a rule JAX printed
 * as a Python function's name is not checked. With n operands (the first
 * nc consts), m outputs and nr residuals:
 *   jvp: [operands..., their tangents...] -> [outputs..., their tangents...]
 *   fwd: [operands...] -> [outputs..., residuals...]
 *   bwd: [consts..., residuals..., cts of outputs...] -> [cts of the n - nc arguments...]
 * Tangents and cotangents have their primal's aval. */
static ft_status check_rules(R *r, const ft_jaxpr *call, int nc) {
  const ft_pval *jv = param(r, "jvp"), *fw = param(r, "fwd"), *bw = param(r, "bwd");
  int n = r->n_in, m = call->n_out;
  ft_aval *outs = malloc(sizeof(ft_aval) * (size_t)(m + 1));
  if (!outs) return ft_set_error(r->ctx, FT_ERR_NOMEM, "out of memory");
  for (int k = 0; k < m; k++) outs[k] = call->outvars[k]->aval;
  ft_status st = FT_OK;
  if (jv && jv->tag == FT_PV_JAXPR) {
    const ft_jaxpr *j = jv->u.jaxpr;
    if (j->n_in != 2 * n || j->n_out != 2 * m || avals_differ(r->in, j->invars, n) >= 0 ||
        avals_differ(r->in, j->invars + n, n) >= 0 || avals_differ(outs, j->outvars, m) >= 0 ||
        avals_differ(outs, j->outvars + m, m) >= 0)
      st = rule_mismatch(r, "jvp");
  }
  bool fj = fw && fw->tag == FT_PV_JAXPR, bj = bw && bw->tag == FT_PV_JAXPR;
  if (!st && fj != bj && (fw || bw))
    st = fail(r, FT_ERR_TYPE, "fwd and bwd must both be jaxprs or both be names");
  if (!st && fj && bj) {
    const ft_jaxpr *f = fw->u.jaxpr, *b = bw->u.jaxpr;
    int nr = f->n_out - m;
    if (f->n_in != n || nr < 0 || avals_differ(r->in, f->invars, n) >= 0 ||
        avals_differ(outs, f->outvars, m) >= 0)
      st = rule_mismatch(r, "fwd");
    else if (b->n_in != nc + nr + m || b->n_out != n - nc || avals_differ(r->in, b->invars, nc) >= 0 ||
             avals_differ(r->in + nc, b->outvars, n - nc) >= 0 ||
             avals_differ(outs, b->invars + nc + nr, m) >= 0)
      st = rule_mismatch(r, "bwd");
    for (int i = 0; !st && i < nr; i++)
      if (!ft_aval_eq(&f->outvars[m + i]->aval, &b->invars[nc + i]->aval)) st = rule_mismatch(r, "bwd");
  }
  free(outs);
  return st;
}

/* jit, remat2, custom_jvp_call, custom_vjp_call: the operands are the sub-jaxpr's
 * inputs (consts first, when num_consts is given), its outputs the results. */
static ft_status rule_call(R *r) {
  const ft_jaxpr *j = NULL;
  const char *key = r->p == FT_P_JIT || r->p == FT_P_REMAT2 ? "jaxpr" : "call_jaxpr"; /* (eval_jaxpr too) */
  ft_status st = need_jaxpr(r, key, &j);
  if (st) return st;
  const ft_pval *nc = param(r, "num_consts");
  if (nc && (nc->tag != FT_PV_INT || nc->u.i < 0 || nc->u.i > r->n_in))
    return fail(r, FT_ERR_TYPE, "num_consts does not fit %d operands", r->n_in);
  if ((st = check_sig(r, key, j, r->n_in, r->in, 0))) return st;
  if (r->p != FT_P_JIT && r->p != FT_P_REMAT2 && r->p != FT_P_EVAL_JAXPR &&
      (st = check_rules(r, j, nc ? (int)nc->u.i : 0)))
    return st;
  return put_outs(r, j);
}

/* The computation of a generic reduce/reduce_window over m operands:
 * (acc..., x...) -> m scalars of the operands' dtypes. */
static ft_status check_computation(R *r, const ft_jaxpr *j, int m) {
  if (j->n_in != 2 * m || j->n_out != m)
    return fail(r, FT_ERR_TYPE, "jaxpr takes %d inputs and gives %d outputs; %d operands need %d and %d",
                j->n_in, j->n_out, m, 2 * m, m);
  for (int k = 0; k < 2 * m; k++) {
    const ft_aval *v = &j->invars[k]->aval;
    if (v->rank != 0 || v->dtype != r->in[k % m].dtype)
      return fail(r, FT_ERR_TYPE, "jaxpr input %d is %s, not a %s scalar", k, S(r, v),
                  ft_dtype_name(r->in[k % m].dtype));
  }
  for (int k = 0; k < m; k++) {
    const ft_aval *v = &j->outvars[k]->aval;
    if (v->rank != 0 || v->dtype != r->in[k].dtype)
      return fail(r, FT_ERR_TYPE, "jaxpr output %d is %s, not a %s scalar", k, S(r, v),
                  ft_dtype_name(r->in[k].dtype));
  }
  return FT_OK;
}

/* reduce (JAX's generic reduce_p): n operands of one shape, n scalar
 * inits of their dtypes (JAX's _reduce_shape_rule and _reduce_dtype_rule,
 * in their words), jaxpr (acc..., x...) -> n scalars; results: each
 * operand without the reduced dims, weak when operand and init both are. */
static ft_status rule_reduce_generic(R *r) {
  const ft_jaxpr *j = NULL;
  ft_status st = need_jaxpr(r, "jaxpr", &j);
  if (st) return st;
  if (r->n_in < 2 || r->n_in % 2)
    return fail(r, FT_ERR_TYPE, "expects operands then as many init values, got %d operands", r->n_in);
  int m = r->n_in / 2;
  for (int k = 0; k < m; k++)
    if (r->in[m + k].rank != 0) {
      char buf[256];
      int w = 0;
      for (int i = 0; i < m && w < (int)sizeof buf - 32; i++) {
        w += snprintf(buf + w, sizeof buf - (size_t)w, "%s(", i ? ", " : "");
        for (int d = 0; d < r->in[m + i].rank; d++)
          w += snprintf(buf + w, sizeof buf - (size_t)w, "%lld%s", (long long)r->in[m + i].dims[d],
                        r->in[m + i].rank == 1 ? "," : d + 1 < r->in[m + i].rank ? ", " : "");
        w += snprintf(buf + w, sizeof buf - (size_t)w, ")");
      }
      return fail(r, FT_ERR_SHAPE, "reduce found non-scalar initial value: [%s]", buf);
    }
  for (int k = 0; k < m; k++)
    if (r->in[k].dtype != r->in[m + k].dtype)
      return fail(r, FT_ERR_TYPE, "reduce operand dtypes should match corresponding initial value dtypes, "
                  "got operand %d %s and initial value %s", k, S(r, &r->in[k]), S(r, &r->in[m + k]));
  for (int k = 1; k < m; k++)
    if (!ft_shape_eq(&r->in[k], &r->in[0]))
      return fail(r, FT_ERR_SHAPE, "operands must have one shape (XLA's Reduce), got %s and %s",
                  S(r, &r->in[0]), S(r, &r->in[k]));
  if ((st = check_computation(r, j, m))) return st;
  int64_t ax[MAX_INTS];
  int n;
  const ft_aval *a = &r->in[0];
  if ((st = get_ints(r, "dimensions", true, ax, &n)) || (st = check_axes(r, "dimensions", n, ax, a->rank, a)))
    return st;
  bool drop[FT_MAX_RANK] = {false};
  for (int i = 0; i < n; i++) drop[ax[i]] = true;
  for (int k = 0; k < m; k++) {
    ft_aval o = r->in[k];
    o.weak_type = r->in[k].weak_type && r->in[m + k].weak_type;
    o.rank = 0;
    for (int i = 0; i < a->rank; i++)
      if (!drop[i]) o.dims[o.rank++] = a->dims[i];
    if ((st = put(r, o))) return st;
  }
  return FT_OK;
}

/* reduce_window (JAX's generic reduce_window_p): n operands of one shape,
 * n scalar inits of their dtypes (JAX's _reduce_window_abstract_eval_rule,
 * in its words), jaxpr (acc..., x...) -> n scalars with no constvars
 * (consts must be ()); results: the window shape of operand 0 (the
 * reduce_window_* rule), each operand's dtype, never weak. */
static ft_status rule_reduce_window_generic(R *r) {
  const ft_jaxpr *j = NULL;
  ft_status st = need_jaxpr(r, "jaxpr", &j);
  if (st) return st;
  if (r->n_in < 2 || r->n_in % 2)
    return fail(r, FT_ERR_TYPE, "expects operands then as many init values, got %d operands", r->n_in);
  int m = r->n_in / 2;
  for (int k = 0; k < m; k++)
    if (r->in[k].dtype != r->in[m + k].dtype)
      return fail(r, FT_ERR_TYPE, "reduce_window got inconsistent dtypes for operands and init_values: "
                  "operand %d %s and init value %s", k, S(r, &r->in[k]), S(r, &r->in[m + k]));
  for (int k = 0; k < m; k++)
    if (r->in[m + k].rank != 0)
      return fail(r, FT_ERR_TYPE, "reduce_window expected init_values to be scalars but init value %d is %s",
                  k, S(r, &r->in[m + k]));
  for (int k = 1; k < m; k++)
    if (!ft_shape_eq(&r->in[k], &r->in[0]))
      return fail(r, FT_ERR_SHAPE, "operands must have one shape (XLA's ReduceWindow), got %s and %s",
                  S(r, &r->in[0]), S(r, &r->in[k]));
  const ft_pval *cs = param(r, "consts");
  if (j->n_const || (cs && (cs->tag != FT_PV_TUPLE || cs->n != 0)))
    return fail(r, FT_ERR_UNSUPPORTED, "a computation that closes over constants (consts and the jaxpr's "
                "constvars must be empty: the text does not carry their values)");
  if ((st = check_computation(r, j, m))) return st;
  ft_aval o;
  if ((st = window_shape(r, &r->in[0], &o))) return st;
  for (int k = 0; k < m; k++) {
    o.dtype = r->in[k].dtype;
    o.weak_type = false;
    if ((st = put(r, o))) return st;
  }
  return FT_OK;
}

/* CustomRoot (JAX 0.12's lax.custom_root): solve_jaxpr runs on the first
 * solve_jaxpr.n_in operands (solve's consts, then the initial guess); f's
 * and tangent_solve's consts follow. Its results are solve_jaxpr's: the
 * root leaves (as many as the guess has, their avals), then, with has_aux,
 * the auxiliary outputs. */
static ft_status rule_custom_root(R *r) {
  const ft_jaxpr *j = NULL;
  ft_status st = need_jaxpr(r, "solve_jaxpr", &j);
  if (st) return st;
  if (j->n_in > r->n_in)
    return fail(r, FT_ERR_TYPE, "solve_jaxpr takes %d inputs but is given %d operands", j->n_in, r->n_in);
  if ((st = check_sig(r, "solve_jaxpr", j, j->n_in, r->in, 0))) return st;
  const ft_pval *aux = param(r, "has_aux");
  if (aux && aux->tag == FT_PV_BOOL && !aux->u.b && j->n_out > j->n_in)
    return fail(r, FT_ERR_TYPE, "solve_jaxpr gives %d outputs from %d inputs: the root must have the "
                "initial guess's structure", j->n_out, j->n_in);
  return put_outs(r, j);
}

/* custom_lin: [residuals (num_res)..., tangents...] -> the cotangent inputs
 * of bwd after its residuals; bwd maps them back to one cotangent per
 * tangent operand, of its aval. */
static ft_status rule_custom_lin(R *r) {
  const ft_jaxpr *bwd = NULL;
  int64_t nr = 0;
  ft_status st = need_jaxpr(r, "bwd", &bwd);
  if (st || (st = need_int(r, "num_res", &nr))) return st;
  if (nr < 0 || nr > r->n_in || bwd->n_in < nr)
    return fail(r, FT_ERR_TYPE, "num_res=%lld does not fit %d operands and a bwd of %d inputs",
                (long long)nr, r->n_in, bwd->n_in);
  int n = (int)nr, nt = r->n_in - n;
  for (int i = 0; i < n; i++)
    if (!ft_aval_eq(&bwd->invars[i]->aval, &r->in[i]))
      return fail(r, FT_ERR_TYPE, "bwd input %d is %s but residual %d is %s", i,
                  S(r, &bwd->invars[i]->aval), i, S(r, &r->in[i]));
  if (bwd->n_out != nt)
    return fail(r, FT_ERR_TYPE, "bwd returns %d cotangents for %d tangent operands", bwd->n_out, nt);
  for (int i = 0; i < nt; i++)
    if (!ft_aval_eq(&bwd->outvars[i]->aval, &r->in[n + i]))
      return fail(r, FT_ERR_TYPE, "bwd output %d is %s but tangent operand %d is %s", i,
                  S(r, &bwd->outvars[i]->aval), n + i, S(r, &r->in[n + i]));
  for (int i = n; i < bwd->n_in; i++)
    if ((st = put(r, bwd->invars[i]->aval))) return st;
  return FT_OK;
}

/* ------------------------------------------------ JAX 0.12 additions */

/* polynomial x c0 ... cN: one dtype (numeric), shapes broadcasting as a
 * binary op's (lax._polynomial_dtype_rule, broadcasting_shape_rule). */
static ft_status rule_polynomial(R *r) {
  ft_status st = check_count(r, 2);
  if (st) return st;
  if (r->n_in > 64) return fail(r, FT_ERR_UNSUPPORTED, "%d coefficients (at most 63)", r->n_in - 1);
  const ft_aval *ops[64];
  for (int i = 0; i < r->n_in; i++) {
    if ((st = check_dtype(r, i, K_NUM, "operand"))) return st;
    if (r->in[i].dtype != r->in[0].dtype)
      return fail(r, FT_ERR_TYPE, "operand dtypes %s and %s do not match (%s, %s)",
                  ft_dtype_name(r->in[0].dtype), ft_dtype_name(r->in[i].dtype), S(r, &r->in[0]),
                  S(r, &r->in[i]));
    ops[i] = &r->in[i];
  }
  const ft_pval *u = param(r, "unroll");
  if (u && u->tag != FT_PV_NONE && (u->tag != FT_PV_INT || u->u.i < 0))
    return fail(r, FT_ERR_TYPE, "unroll must be None or a nonnegative int");
  ft_aval o;
  if ((st = nary_shape(r, r->n_in, ops, &o))) return st;
  o.dtype = r->in[0].dtype;
  o.weak_type = all_weak(r, 0, r->n_in);
  return put(r, o);
}

/* stack[axis]: operands of one shape and dtype, a new axis of their count. */
static ft_status rule_stack(R *r) {
  ft_status st = check_count(r, 1);
  if (st) return st;
  int64_t axis;
  if ((st = need_int(r, "axis", &axis))) return st;
  const ft_aval *a = &r->in[0];
  if (axis < 0 || axis > a->rank || a->rank + 1 > FT_MAX_RANK)
    return fail(r, FT_ERR_SHAPE, "axis %lld out of range for operand %s", (long long)axis, S(r, a));
  for (int i = 1; i < r->n_in; i++)
    if (!ft_aval_eq(&r->in[i], a))
      return fail(r, FT_ERR_TYPE, "operands must have one shape and dtype, got %s and %s", S(r, a),
                  S(r, &r->in[i]));
  ft_aval o = *a;
  o.rank = a->rank + 1;
  for (int d = 0; d < o.rank; d++)
    o.dims[d] = d < axis ? a->dims[d] : d == axis ? r->n_in : a->dims[d - 1];
  o.weak_type = all_weak(r, 0, r->n_in);
  return put(r, o);
}

/* unstack[axis]: one result per index of the axis, the axis removed. */
static ft_status rule_unstack(R *r) {
  int64_t axis;
  ft_status st = need_int(r, "axis", &axis);
  if (st) return st;
  const ft_aval *a = &r->in[0];
  if (a->rank == 0) return fail(r, FT_ERR_SHAPE, "unstack requires rank > 0, got %s", S(r, a));
  if (axis < 0 || axis >= a->rank)
    return fail(r, FT_ERR_SHAPE, "axis %lld out of range for operand %s", (long long)axis, S(r, a));
  ft_aval o = *a;
  o.rank = a->rank - 1;
  for (int d = 0; d < o.rank; d++) o.dims[d] = a->dims[d < axis ? d : d + 1];
  for (int64_t k = 0; k < a->dims[axis]; k++)
    if ((st = put(r, o))) return st;
  return FT_OK;
}

/* tile[reps]: one rep per axis, each axis multiplied by its rep. */
static ft_status rule_tile(R *r) {
  int64_t reps[MAX_INTS];
  int n;
  ft_status st = get_ints(r, "reps", true, reps, &n);
  if (st) return st;
  const ft_aval *a = &r->in[0];
  if (n != a->rank)
    return fail(r, FT_ERR_SHAPE, "reps %s must have one entry per axis of %s", T(r, n, reps), S(r, a));
  ft_aval o = *a;
  for (int d = 0; d < n; d++) {
    if (reps[d] < 0 || (reps[d] > 0 && a->dims[d] > FT_MAX_ELEMS / reps[d]))
      return fail(r, FT_ERR_SHAPE, "reps %s: bad entry for %s", T(r, n, reps), S(r, a));
    o.dims[d] = a->dims[d] * reps[d];
  }
  return put(r, o);
}

/* platform_index: an int32 scalar; platforms is a tuple whose items are
 * tuples of platform names or None (ft_platform_index checks it). */
static ft_status rule_platform_index(R *r) {
  const ft_pval *pl = param(r, "platforms");
  if (ft_platform_index(pl) < 0)
    return fail(r, FT_ERR_UNSUPPORTED, "platforms names no branch for cpu and has no default "
                "(JAX: 'the platform cpu is not among the platforms required for lowering')");
  return put(r, ft_aval_make(FT_I32, 0, NULL));
}

static ft_status rule_empty(R *r) {
  ft_dtype dt;
  int64_t dims[MAX_INTS];
  int n;
  ft_status st = need_dtype(r, "dtype", &dt);
  if (st || (st = get_ints(r, "shape", true, dims, &n)) || (st = check_dims_nonneg(r, "shape", n, dims)))
    return st;
  return put(r, ft_aval_make(dt, n, dims));
}

/* ------------------------------------ spectral linear algebra (linalg2) */

/* subset_by_index: None or the whole range (0, k), the only form JAX's CPU
 * lowering accepts. */
static ft_status spectral_subset(R *r, int64_t k) {
  const ft_pval *pv = param(r, "subset_by_index");
  if (!pv) return FT_OK;
  int64_t v[2];
  int n = 0;
  if (ft_pv_get_ints(pv, v, 2, &n) && n == 2 && v[0] == 0 && v[1] == k) return FT_OK;
  return fail(r, FT_ERR_UNSUPPORTED,
              "subset_by_index other than None or (0, %lld) is not supported on CPU "
              "(JAX's CPU lowering refuses it too)", (long long)k);
}

/* The operand of a matrix decomposition: rank >= 2, f32/f64/c64/c128. */
static ft_status spectral_operand(R *r, bool square) {
  const ft_aval *a = &r->in[0];
  ft_status st;
  if ((st = check_dtype(r, 0, K_INEXACT, "operand"))) return st;
  if (a->rank < 2)
    return fail(r, FT_ERR_SHAPE, "operand %s must have rank >= 2 (a matrix, or a batch of them)",
                S(r, a));
  if (square && a->dims[a->rank - 1] != a->dims[a->rank - 2])
    return fail(r, FT_ERR_SHAPE, "operand %s must be square in its last two axes", S(r, a));
  return FT_OK;
}

static ft_aval spectral_real(ft_aval o) {
  if (o.dtype == FT_C64) o.dtype = FT_F32;
  if (o.dtype == FT_C128) o.dtype = FT_F64;
  return o;
}

static ft_status rule_eigh(R *r) {
  ft_status st;
  if ((st = spectral_operand(r, true))) return st;
  const ft_aval *a = &r->in[0];
  if ((st = spectral_subset(r, a->dims[a->rank - 1]))) return st;
  ft_aval w = spectral_real(*a);
  w.rank--;
  w.weak_type = false;
  ft_aval v = *a;
  v.weak_type = false;
  if ((st = put(r, v))) return st;
  return put(r, w);
}

static ft_status rule_svd(R *r) {
  ft_status st;
  if ((st = spectral_operand(r, false))) return st;
  const ft_aval *a = &r->in[0];
  int rk = a->rank;
  int64_t m = a->dims[rk - 2], n = a->dims[rk - 1], k = m < n ? m : n;
  if ((st = spectral_subset(r, k))) return st;
  bool full = opt_bool(r, "full_matrices", true), uv = opt_bool(r, "compute_uv", true);
  ft_aval s = spectral_real(*a);
  s.rank--;
  s.dims[rk - 2] = k;
  s.weak_type = false;
  if ((st = put(r, s)) || !uv) return st;
  ft_aval u = *a, vt = *a;
  u.weak_type = vt.weak_type = false;
  u.dims[rk - 1] = full ? m : k;
  vt.dims[rk - 2] = full ? n : k;
  if ((st = put(r, u))) return st;
  return put(r, vt);
}

static ft_status rule_eig(R *r) {
  ft_status st;
  if ((st = spectral_operand(r, true))) return st;
  const ft_aval *a = &r->in[0];
  ft_aval c = *a;
  c.weak_type = false;
  c.dtype = a->dtype == FT_F32 || a->dtype == FT_C64 ? FT_C64 : FT_C128;
  ft_aval w = c;
  w.rank--;
  if ((st = put(r, w))) return st;
  if (opt_bool(r, "compute_left_eigenvectors", false) && (st = put(r, c))) return st;
  if (opt_bool(r, "compute_right_eigenvectors", true) && (st = put(r, c))) return st;
  return FT_OK;
}

/* schur (t, [vs]), hessenberg (a, taus[n-1]), tridiagonal (a, d[n], e[n-1],
 * taus[n-1]; d and e real). */
static ft_status rule_reduction(R *r) {
  ft_status st;
  if ((st = spectral_operand(r, true))) return st;
  const ft_aval *a = &r->in[0];
  ft_aval m = *a, v = spectral_real(*a);
  m.weak_type = v.weak_type = false;
  v.rank--;
  int64_t n = a->dims[a->rank - 1];
  if ((st = put(r, m))) return st;
  switch (r->p) {
  case FT_P_SCHUR:
    if (opt_bool(r, "sort_eig_vals", false))
      return fail(r, FT_ERR_UNSUPPORTED, "sort_eig_vals=True is not supported (nor on JAX's CPU)");
    return opt_bool(r, "compute_schur_vectors", true) ? put(r, m) : FT_OK;
  case FT_P_HESSENBERG:
    m.rank--;
    m.dims[m.rank - 1] = n > 0 ? n - 1 : 0;
    return put(r, m);
  default: /* tridiagonal */
    if (n == 0) return fail(r, FT_ERR_SHAPE, "operand %s must not be empty", S(r, a));
    if ((st = put(r, v))) return st;
    v.dims[v.rank - 1] = n - 1;
    if ((st = put(r, v))) return st;
    m.rank--;
    m.dims[m.rank - 1] = n - 1;
    return put(r, m);
  }
}

static ft_status rule_householder_product(R *r) {
  ft_status st;
  if ((st = spectral_operand(r, false))) return st;
  const ft_aval *a = &r->in[0], *t = &r->in[1];
  int64_t m = a->dims[a->rank - 2], n = a->dims[a->rank - 1];
  if (m < n)
    return fail(r, FT_ERR_SHAPE, "the first operand %s must have at least as many rows as columns",
                S(r, a));
  bool ok = t->dtype == a->dtype && t->rank == a->rank - 1 && t->dims[t->rank - 1] <= n;
  for (int d = 0; ok && d < a->rank - 2; d++) ok = t->dims[d] == a->dims[d];
  if (!ok)
    return fail(r, FT_ERR_SHAPE, "taus %s must be [..., k] of %s's dtype and batch, k <= %lld",
                S(r, t), S(r, a), (long long)n);
  ft_aval q = *a;
  q.weak_type = false;
  return put(r, q);
}

static ft_status rule_geqrf(R *r) {
  ft_status st;
  if ((st = spectral_operand(r, false))) return st;
  const ft_aval *a = &r->in[0];
  int64_t m = a->dims[a->rank - 2], n = a->dims[a->rank - 1];
  ft_aval q = *a, t = *a;
  q.weak_type = t.weak_type = false;
  t.rank--, t.dims[t.rank - 1] = m < n ? m : n;
  if ((st = put(r, q))) return st;
  return put(r, t);
}

/* JAX's _ormqr_shape_rule: c's rows (left) or columns (right) are a's rows;
 * the result is c's aval. */
static ft_status rule_ormqr(R *r) {
  ft_status st;
  if ((st = spectral_operand(r, false))) return st;
  const ft_aval *a = &r->in[0], *t = &r->in[1], *c = &r->in[2];
  int rk = a->rank;
  int64_t m = a->dims[rk - 2], n = a->dims[rk - 1];
  bool left = opt_bool(r, "left", true);
  bool ok = t->dtype == a->dtype && c->dtype == a->dtype && t->rank == rk - 1 && c->rank == rk &&
            t->dims[rk - 2] <= (m < n ? m : n);
  for (int d = 0; ok && d < rk - 2; d++) ok = t->dims[d] == a->dims[d] && c->dims[d] == a->dims[d];
  if (!ok)
    return fail(r, FT_ERR_SHAPE, "taus %s and c %s must have a %s's dtype and batch, taus [..., k] with "
                "k <= min(m, n)", S(r, t), S(r, c), S(r, a));
  if (c->dims[rk - (left ? 2 : 1)] != m)
    return fail(r, FT_ERR_SHAPE, "ormqr with left=%s expects c %s to have as many %s as a %s has rows",
                left ? "True" : "False", S(r, c), left ? "rows" : "columns", S(r, a));
  ft_aval o = *c;
  o.weak_type = false;
  return put(r, o);
}

static ft_status rule_qr(R *r) {
  ft_status st;
  if ((st = spectral_operand(r, false))) return st;
  if (!param(r, "full_matrices")) return fail(r, FT_ERR_TYPE, "missing param full_matrices");
  const ft_aval *a = &r->in[0];
  int rk = a->rank;
  int64_t m = a->dims[rk - 2], n = a->dims[rk - 1], k = m < n ? m : n;
  bool full = opt_bool(r, "full_matrices", false);
  ft_aval q = *a, rr = *a;
  q.weak_type = rr.weak_type = false;
  q.dims[rk - 1] = full ? m : k;
  rr.dims[rk - 2] = full ? m : k;
  if ((st = put(r, q))) return st;
  if ((st = put(r, rr))) return st;
  if (!opt_bool(r, "pivoting", false)) return FT_OK;
  ft_aval p = *a; /* pivoting: the column permutation, i32 [..., n] */
  p.rank = rk - 1, p.dims[rk - 2] = n, p.dtype = FT_I32, p.weak_type = false;
  return put(r, p);
}

/* ---------------------------------------------------------------- entry */

static ft_status dispatch(R *r) {
  switch (r->pi->family) {
  case FT_FAM_UNARY: return rule_unary(r);
  case FT_FAM_BINARY: case FT_FAM_COMPARE: return rule_binary(r);
  case FT_FAM_TERNARY: return rule_ternary(r);
  case FT_FAM_CONVERT: return rule_convert(r);
  case FT_FAM_REDUCE: return rule_reduce(r);
  case FT_FAM_CUMULATIVE: return rule_cumulative(r);
  case FT_FAM_DOT: return rule_dot_general(r);
  default: break;
  }
  switch (r->p) {
  case FT_P_SELECT_N: return rule_select_n(r);
  case FT_P_CLAMP: return rule_clamp(r);
  case FT_P_BROADCAST_IN_DIM: return rule_broadcast_in_dim(r);
  case FT_P_RESHAPE: return rule_reshape(r);
  case FT_P_TRANSPOSE: return rule_transpose(r);
  case FT_P_SQUEEZE: return rule_squeeze(r);
  case FT_P_EXPAND_DIMS: return rule_expand_dims(r);
  case FT_P_REV: return rule_rev(r);
  case FT_P_SLICE: return rule_slice(r);
  case FT_P_DYNAMIC_SLICE: return rule_dynamic_slice(r);
  case FT_P_DYNAMIC_UPDATE_SLICE: return rule_dynamic_update_slice(r);
  case FT_P_CONCATENATE: return rule_concatenate(r);
  case FT_P_PAD: return rule_pad(r);
  case FT_P_SPLIT: return rule_split(r);
  case FT_P_IOTA: return rule_iota(r);
  case FT_P_EMPTY2: return rule_empty2(r);
  case FT_P_SORT: return rule_sort(r);
  case FT_P_FFT: return rule_fft(r);
  case FT_P_REAL: case FT_P_IMAG: case FT_P_CONJ: case FT_P_COMPLEX: return rule_complex_parts(r);
  case FT_P_TOP_K: return rule_top_k(r);
  case FT_P_SEARCHSORTED: return rule_searchsorted(r);
  case FT_P_APPROX_TOP_K: return rule_approx_top_k(r);
  case FT_P_RAGGED_DOT_GENERAL: return rule_ragged_dot(r);
  case FT_P_NONZERO: return rule_nonzero(r);
  case FT_P_FREXP: case FT_P_LDEXP: return rule_frexp_ldexp(r);
  case FT_P_QR: return rule_qr(r); /* linalg2 */
  case FT_P_EIGH: return rule_eigh(r);
  case FT_P_SVD: return rule_svd(r);
  case FT_P_EIG: return rule_eig(r);
  case FT_P_HOUSEHOLDER_PRODUCT: return rule_householder_product(r);
  case FT_P_GEQRF: return rule_geqrf(r);
  case FT_P_ORMQR: return rule_ormqr(r);
  case FT_P_SCHUR: case FT_P_HESSENBERG: case FT_P_TRIDIAGONAL: return rule_reduction(r);
  case FT_P_GATHER: return rule_gather(r);
  case FT_P_SCATTER: case FT_P_SCATTER_ADD: case FT_P_SCATTER_MUL: case FT_P_SCATTER_MIN:
  case FT_P_SCATTER_MAX: case FT_P_SCATTER_SUB: return rule_scatter(r);
  case FT_P_POLYNOMIAL: return rule_polynomial(r);
  case FT_P_STACK: return rule_stack(r);
  case FT_P_UNSTACK: return rule_unstack(r);
  case FT_P_TILE: return rule_tile(r);
  case FT_P_OPTIMIZATION_BARRIER:
    for (int i = 0; i < r->n_in; i++) {
      ft_status st = put(r, r->in[i]);
      if (st) return st;
    }
    return FT_OK;
  case FT_P_PLATFORM_INDEX: return rule_platform_index(r);
  case FT_P_EMPTY: return rule_empty(r);
  case FT_P_SELECT_AND_GATHER_ADD: case FT_P_SELECT_AND_SCATTER_ADD: return rule_select_and(r);
  case FT_P_REDUCE_WINDOW_SUM: case FT_P_REDUCE_WINDOW_MAX: case FT_P_REDUCE_WINDOW_MIN:
    return rule_reduce_window(r);
  case FT_P_CONV_GENERAL_DILATED: return rule_conv(r);
  case FT_P_COND: return rule_cond(r);
  case FT_P_WHILE: return rule_while(r);
  case FT_P_SCAN: return rule_scan(r);
  case FT_P_JIT: case FT_P_CUSTOM_JVP_CALL: case FT_P_CUSTOM_VJP_CALL: case FT_P_REMAT2:
  case FT_P_EVAL_JAXPR:
    return rule_call(r);
  case FT_P_CUSTOM_LIN: return rule_custom_lin(r);
  case FT_P_CUSTOM_ROOT: return rule_custom_root(r);
  case FT_P_REDUCE: return rule_reduce_generic(r);
  case FT_P_REDUCE_WINDOW: return rule_reduce_window_generic(r);
  /* SPMD (issue 27): shape_spmd.c */
  case FT_P_SHARD_MAP: case FT_P_PSUM: case FT_P_PSUM_INVARIANT: case FT_P_PMAX: case FT_P_PMIN:
  case FT_P_PVARY: case FT_P_ALL_GATHER: case FT_P_REDUCE_SCATTER: case FT_P_ALL_TO_ALL:
  case FT_P_PPERMUTE: case FT_P_AXIS_INDEX:
    return ft_infer_spmd(r->ctx, r->p, r->params, r->n_in, r->in, r->out, r->max_out, &r->n_out);
  case FT_P_RANDOM_SEED: case FT_P_RANDOM_BITS: case FT_P_RANDOM_SPLIT: case FT_P_RANDOM_FOLD_IN:
  case FT_P_RANDOM_WRAP: case FT_P_RANDOM_UNWRAP: case FT_P_RANDOM_CLONE: case FT_P_THREEFRY2X32:
  case FT_P_RNG_BIT_GENERATOR: case FT_P_RANDOM_GAMMA:
    return rule_random(r);
  default: {
    ft_status st = FT_OK;
    int n = 0;
    if (ft_infer_linalg(r->ctx, r->p, r->params, r->n_in, r->in, r->out + r->n_out,
                        r->max_out - r->n_out, &n, &st)) { /* shape_linalg.c */
      r->n_out += n;
      return st;
    }
    return fail(r, FT_ERR_UNSUPPORTED, "no shape rule (internal: add one to shape.c)");
  }
  }
}

ft_status ft_infer(ft_ctx *ctx, ft_prim p, const ft_pval *params, int n_in, const ft_aval *in,
                   int *n_out, ft_aval *out, int max_out) {
  if ((unsigned)p >= FT_NUM_PRIMS) return ft_set_error(ctx, FT_ERR_INVALID_ARG, "unknown primitive %d", (int)p);
  R *r = malloc(sizeof *r);
  if (!r) return ft_set_error(ctx, FT_ERR_NOMEM, "out of memory");
  *r = (R){.ctx = ctx, .p = p, .pi = ft_prim_get(p), .params = params, .n_in = n_in, .in = in,
           .out = out, .max_out = max_out};
  ft_status st = FT_OK;
  if (r->pi->n_in >= 0 && n_in != r->pi->n_in)
    st = fail(r, FT_ERR_TYPE, "expects %d operand%s, got %d", r->pi->n_in, r->pi->n_in == 1 ? "" : "s", n_in);
  for (int i = 0; !st && i < n_in; i++)
    if ((unsigned)in[i].dtype >= FT_NUM_DTYPES || in[i].rank < 0 || in[i].rank > FT_MAX_RANK)
      st = fail(r, FT_ERR_INVALID_ARG, "operand %d has an invalid aval", i);
    else if (!ft_aval_size_ok(&in[i]))
      st = fail(r, FT_ERR_SHAPE, "operand %d (%s) has a negative dimension or more than 2^56 "
                "elements", i, S(r, &in[i]));
  if (!st) st = dispatch(r);
  /* A shape built from params (broadcast, reshape, iota, pad, ...) can
   * overflow where no operand did. */
  for (int k = 0; !st && k < r->n_out; k++)
    if (!ft_aval_size_ok(&out[k]))
      st = fail(r, FT_ERR_SHAPE, "result %d would be %s, more than 2^56 elements", k, S(r, &out[k]));
  if (n_out) *n_out = st ? 0 : r->n_out;
  free(r);
  return st;
}
