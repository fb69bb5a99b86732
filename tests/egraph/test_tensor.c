/* tests/egraph/test_tensor.c: the tensor client of the e-graph (issue 5).
 *
 *  - Bitwise soundness of every exact-tier rule: each rule alone rewrites a
 *    program holding an instance of its left-hand side; the interpreter's
 *    results before and after are compared bit for bit on >= 10,000 random
 *    inputs per rule and dtype, heavy in -0.0, NaNs with random payloads,
 *    +-Inf and subnormals. NaNs compare equal to NaNs (docs/determinism.md:
 *    payloads are not part of the contract); how many NaN payloads differed
 *    is printed. Rules whose rewrite does not lower the cost (comm-add,
 *    comm-mul) are checked by evaluating both sides.
 *  - Every golden program (fixtures/golden) optimizes at the exact tier to
 *    a verified jaxpr with bit-identical results on the fixture inputs and
 *    on random inputs (programs without while loops).
 *  - Equation counts and costs before/after for the gradient programs.
 *  - An unsound rule is reported by name (constant conflict).
 *  - Explanations: each proof starts at the source term and names rules.
 *  - The algebraic tier reorders a matrix chain. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egraph/tensor.h"
#include "runtime/runtime.h"

static ft_ctx *C;
static uint64_t rng_state = 0x243F6A8885A308D3ull;

static uint64_t rnd(void) {
  uint64_t x = rng_state;
  x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
  rng_state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

static ft_jaxpr *parse(const char *text) {
  ft_jaxpr *j = ft_parse(C, text, strlen(text), "<test>");
  ck_assert_msg(j != NULL, "parse: %s\n%s", ft_ctx_error(C), text);
  return j;
}

/* ------------------------------------------------------------ random data */

/* Random bits of one element of a float format: sign, exponent and
 * mantissa widths e/m. A third specials, a tenth subnormals, some small
 * integers, the rest uniform bit patterns. */
static uint64_t rand_float_bits(int e, int m) {
  uint64_t sign = (rnd() & 1) << (e + m), emax = (1ull << e) - 1, mant = rnd() & ((1ull << m) - 1);
  switch (rnd() % 12) {
  case 0: return sign;                                     /* +-0 */
  case 1: return sign | emax << m;                         /* +-inf */
  case 2: return sign | emax << m | (mant ? mant : 1);     /* NaN, random payload (signalling too) */
  case 3: return sign | emax << m | 1ull << (m - 1);       /* the quiet NaN */
  case 4: case 5: return sign | (mant ? mant : 1);         /* subnormal */
  case 6: return sign | (emax >> 1) << m;                  /* +-1 */
  default: return e + m + 1 >= 64 ? rnd() : rnd() & ((1ull << (e + m + 1)) - 1);
  }
}

static void fill_random(ft_array *a) {
  int64_t n = ft_array_size(a);
  ft_dtype dt = a->aval.dtype;
  for (int64_t i = 0; i < n; i++) {
    uint64_t v;
    switch (dt) {
    case FT_F64: v = rand_float_bits(11, 52); memcpy((uint64_t *)a->data + i, &v, 8); break;
    case FT_F32: v = rand_float_bits(8, 23); ((uint32_t *)a->data)[i] = (uint32_t)v; break;
    case FT_F16: v = rand_float_bits(5, 10); ((uint16_t *)a->data)[i] = (uint16_t)v; break;
    case FT_BF16: v = rand_float_bits(8, 7); ((uint16_t *)a->data)[i] = (uint16_t)v; break;
    case FT_BOOL: ((uint8_t *)a->data)[i] = rnd() & 1; break;
    default: {
      static const int64_t special[] = {0, 1, -1, 2, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX};
      int64_t x = rnd() % 3 ? (int64_t)rnd() : special[rnd() % 8];
      if (rnd() % 4 == 0) x = (int64_t)(rnd() % 7) - 3;
      ft_set_i64(a, i, x);
    }
    }
  }
}

/* Elements compare equal when their bits are, or both are NaN. */
static bool elem_nan(ft_dtype dt, const uint8_t *p) {
  switch (dt) {
  case FT_F64: { double x; memcpy(&x, p, 8); return isnan(x); }
  case FT_F32: { float x; memcpy(&x, p, 4); return isnan(x); }
  case FT_F16: { uint16_t h; memcpy(&h, p, 2); return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
  case FT_BF16: { uint16_t h; memcpy(&h, p, 2); return (h & 0x7f80) == 0x7f80 && (h & 0x7f); }
  default: return false;
  }
}

static int64_t payload_diffs;

static bool arrays_same(const ft_array *a, const ft_array *b, int64_t *bad_at) {
  if (!ft_aval_eq(&a->aval, &b->aval)) return *bad_at = -1, false;
  size_t es = ft_dtype_size(a->aval.dtype);
  int64_t n = ft_array_size(a);
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *x = (const uint8_t *)a->data + (size_t)i * es, *y = (const uint8_t *)b->data + (size_t)i * es;
    if (!memcmp(x, y, es)) continue;
    if (elem_nan(a->aval.dtype, x) && elem_nan(a->aval.dtype, y)) {
      payload_diffs++;
      continue;
    }
    *bad_at = i;
    return false;
  }
  return true;
}

/* Evaluates j0 and j1 on args and checks every output bit for bit. */
static void check_same(const ft_jaxpr *j0, const ft_jaxpr *j1, int n, ft_array *const *args,
                       const char *what) {
  int no = ft_jaxpr_num_outputs(j0);
  ck_assert_int_eq(no, ft_jaxpr_num_outputs(j1));
  ft_array **o0 = calloc((size_t)no + 1, sizeof *o0), **o1 = calloc((size_t)no + 1, sizeof *o1);
  ck_assert_msg(ft_eval(C, j0, n, (const ft_array *const *)args, no, o0) == FT_OK, "%s: eval before: %s", what, ft_ctx_error(C));
  ck_assert_msg(ft_eval(C, j1, n, (const ft_array *const *)args, no, o1) == FT_OK, "%s: eval after: %s", what, ft_ctx_error(C));
  for (int k = 0; k < no; k++) {
    int64_t at = 0;
    bool same = arrays_same(o0[k], o1[k], &at);
    if (!same) {
      char *s0 = ft_jaxpr_print(C, j0), *s1 = ft_jaxpr_print(C, j1);
      ck_abort_msg("%s: output %d differs at element %lld\nbefore:\n%s\nafter:\n%s", what, k,
                   (long long)at, s0, s1);
    }
    ft_array_free(o0[k]);
    ft_array_free(o1[k]);
  }
  free(o0);
  free(o1);
}

static ft_array **random_args(const ft_jaxpr *j, int *n) {
  *n = j->n_in + (j->const_data ? 0 : j->n_const);
  ft_array **a = calloc((size_t)*n + 1, sizeof *a);
  int k = 0;
  if (!j->const_data)
    for (int i = 0; i < j->n_const; i++) a[k++] = ft_array_alloc(C, &j->constvars[i]->aval);
  for (int i = 0; i < j->n_in; i++) a[k++] = ft_array_alloc(C, &j->invars[i]->aval);
  for (int i = 0; i < *n; i++) {
    ck_assert_ptr_nonnull(a[i]);
    fill_random(a[i]);
  }
  return a;
}

static void free_args(ft_array **a, int n) {
  for (int i = 0; i < n; i++) ft_array_free(a[i]);
  free(a);
}

static int64_t fired(const ft_opt_report *r, const char *name) {
  for (int i = 0; i < r->n_rules; i++)
    if (!strcmp(r->rules[i].name, name)) return r->rules[i].count;
  return 0;
}

/* ------------------------------------------------------ soundness checks */

/* Optimizes `text` with rule `rule` alone, requires it to fire and change
 * the program, and compares results on random inputs. `rhs` (may be NULL)
 * is a hand-written right-hand side also compared with the source, for
 * rules whose rewrite extraction has no reason to prefer. Returns the
 * number of input elements checked. */
static int64_t sound_one(const char *rule, const char *text, const char *rhs) {
  ft_jaxpr *j = parse(text);
  ft_topt_opts o = {.tier = FT_OPT_EXACT, .only = rule};
  ft_opt_report rep = {0};
  ft_jaxpr *r = ft_tensor_optimize(C, j, &o, &rep);
  ck_assert_msg(r != NULL, "%s: %s", rule, ft_ctx_error(C));
  ck_assert_msg(fired(&rep, rule) > 0, "rule %s did not fire on\n%s", rule, text);
  uint8_t h0[16], h1[16];
  ft_jaxpr_hash(j, h0);
  ft_jaxpr_hash(r, h1);
  if (!rhs) ck_assert_msg(memcmp(h0, h1, 16), "rule %s fired but the program is unchanged:\n%s", rule, text);
  int n;
  ft_array **args = random_args(j, &n);
  int64_t elems = 0;
  for (int i = 0; i < n; i++) elems += ft_array_size(args[i]);
  check_same(j, r, n, args, rule);
  if (rhs) {
    ft_jaxpr *jr = parse(rhs);
    check_same(j, jr, n, args, rule);
    ft_jaxpr_free(jr);
  }
  free_args(args, n);
  ft_opt_report_free(&rep);
  ft_jaxpr_free(r);
  ft_jaxpr_free(j);
  return elems;
}

/* Replaces $T (dtype), $L (long dtype name), $N (size), $ONE, $NZ (the
 * additive identity: -0.0 or 0), $PZ (+0.0 or 0), $TWO (2.5 or 3). */
static char *expand(const char *t, ft_dtype dt, int n) {
  bool fl = ft_dtype_is_float(dt);
  char num[32];
  snprintf(num, sizeof num, "%d", n);
  const char *keys[] = {"$TWO", "$ONE", "$NZ", "$PZ", "$T", "$L", "$N"};
  const char *vals[] = {fl ? "2.5" : "3", fl ? "1.0" : "1", fl ? "-0.0" : "0", fl ? "0.0" : "0",
                        ft_dtype_name(dt), ft_dtype_long_name(dt), num};
  size_t cap = strlen(t) * 4 + 64, w = 0;
  char *out = malloc(cap);
  for (const char *p = t; *p;) {
    size_t k = 0;
    while (k < FT_COUNTOF(keys) && strncmp(p, keys[k], strlen(keys[k]))) k++;
    if (k < FT_COUNTOF(keys)) {
      size_t l = strlen(vals[k]);
      memcpy(out + w, vals[k], l);
      w += l;
      p += strlen(keys[k]);
    } else {
      out[w++] = *p++;
    }
  }
  out[w] = 0;
  return out;
}

enum { N = 10007 };

typedef struct ecase {
  const char *rule;
  const char *lhs;
  const char *rhs;
  bool floats_only;
  bool no_i64;   /* integer reductions on i64: src/runtime/interp_reduce.c:149 shifts 1 << 63
                    (UB, UBSan stops); re-enable when that is fixed */
} ecase;

static const ecase ECASES[] = {
    {"mul-one", "{ lambda ; a:$T[$N]. let b:$T[$N] = mul a $ONE:$T[] in (b,) }", NULL, 0, 0},
    {"mul-one", "{ lambda ; a:$T[$N]. let o:$T[$N] = broadcast_in_dim[broadcast_dimensions=()] $ONE:$T[]; b:$T[$N] = mul a o in (b,) }", NULL, 0, 0},
    {"one-mul", "{ lambda ; a:$T[$N]. let b:$T[$N] = mul $ONE:$T[] a in (b,) }", NULL, 0, 0},
    {"div-one", "{ lambda ; a:$T[$N]. let b:$T[$N] = div a $ONE:$T[] in (b,) }", NULL, 0, 0},
    {"add-neg-zero", "{ lambda ; a:$T[$N]. let b:$T[$N] = add a $NZ:$T[] in (b,) }", NULL, 0, 0},
    {"neg-zero-add", "{ lambda ; a:$T[$N]. let b:$T[$N] = add $NZ:$T[] a in (b,) }", NULL, 0, 0},
    {"add-any-neg-zero", "{ lambda ; a:$T[$N]. let b:$T[$N] = add_any a $NZ:$T[] in (b,) }", NULL, 0, 0},
    {"neg-zero-add-any", "{ lambda ; a:$T[$N]. let b:$T[$N] = add_any $NZ:$T[] a in (b,) }", NULL, 0, 0},
    {"sub-zero", "{ lambda ; a:$T[$N]. let b:$T[$N] = sub a $PZ:$T[] in (b,) }", NULL, 0, 0},
    {"neg-neg", "{ lambda ; a:$T[$N]. let b:$T[$N] = neg a; c:$T[$N] = neg b in (c,) }", NULL, 0, 0},
    {"select-same", "{ lambda ; p:bool[$N] a:$T[$N]. let b:$T[$N] = select_n p a a in (b,) }", NULL, 0, 0},
    {"max-self", "{ lambda ; a:$T[$N]. let b:$T[$N] = max a a in (b,) }", NULL, 0, 0},
    {"min-self", "{ lambda ; a:$T[$N]. let b:$T[$N] = min a a in (b,) }", NULL, 0, 0},
    {"comm-add", "{ lambda ; a:$T[$N] b:$T[$N]. let c:$T[$N] = add a b in (c,) }",
     "{ lambda ; a:$T[$N] b:$T[$N]. let c:$T[$N] = add b a in (c,) }", 0, 0},
    {"comm-mul", "{ lambda ; a:$T[$N] b:$T[$N]. let c:$T[$N] = mul a b in (c,) }",
     "{ lambda ; a:$T[$N] b:$T[$N]. let c:$T[$N] = mul b a in (c,) }", 0, 0},
    {"convert-id", "{ lambda ; a:$T[$N]. let b:$T[$N] = convert_element_type[new_dtype=$L weak_type=False] a in (b,) }", NULL, 0, 0},
    {"reduce-sum-unit", "{ lambda ; a:$T[$N,1]. let b:$T[$N] = reduce_sum[axes=(1,)] a in (b,) }", NULL, 0, 1},
    {"reduce-max-unit", "{ lambda ; a:$T[1,$N]. let b:$T[$N] = reduce_max[axes=(0,)] a in (b,) }", NULL, 0, 1},
    {"reduce-min-unit", "{ lambda ; a:$T[$N,1]. let b:$T[$N] = reduce_min[axes=(1,)] a in (b,) }", NULL, 0, 1},
    {"reduce-prod-unit", "{ lambda ; a:$T[$N,1]. let b:$T[$N] = reduce_prod[axes=(1,)] a in (b,) }", NULL, 0, 1},
    {"splat-add-l", "{ lambda ; a:$T[$N]. let o:$T[$N] = broadcast_in_dim[broadcast_dimensions=()] $TWO:$T[]; b:$T[$N] = add o a in (b,) }", NULL, 0, 0},
    {"splat-add-r", "{ lambda ; a:$T[$N]. let o:$T[$N] = broadcast_in_dim[broadcast_dimensions=()] $NZ:$T[]; b:$T[$N] = add a o in (b,) }", NULL, 0, 0},
    {"splat-sub-l", "{ lambda ; a:$T[$N]. let o:$T[$N] = broadcast_in_dim[broadcast_dimensions=()] $TWO:$T[]; b:$T[$N] = sub o a in (b,) }", NULL, 0, 0},
    {"splat-sub-r", "{ lambda ; a:$T[$N]. let o:$T[$N] = broadcast_in_dim[broadcast_dimensions=()] $TWO:$T[]; b:$T[$N] = sub a o in (b,) }", NULL, 0, 0},
    {"splat-mul-l", "{ lambda ; a:$T[$N]. let o:$T[$N] = broadcast_in_dim[broadcast_dimensions=()] $TWO:$T[]; b:$T[$N] = mul o a in (b,) }", NULL, 0, 0},
    {"splat-mul-r", "{ lambda ; a:$T[$N]. let o:$T[$N] = broadcast_in_dim[broadcast_dimensions=()] $NZ:$T[]; b:$T[$N] = mul a o in (b,) }", NULL, 0, 0},
    {"splat-div-l", "{ lambda ; a:$T[$N]. let o:$T[$N] = broadcast_in_dim[broadcast_dimensions=()] $TWO:$T[]; b:$T[$N] = div o a in (b,) }", NULL, 0, 0},
    {"splat-div-r", "{ lambda ; a:$T[$N]. let o:$T[$N] = broadcast_in_dim[broadcast_dimensions=()] $TWO:$T[]; b:$T[$N] = div a o in (b,) }", NULL, 0, 0},
    {"splat-max-r", "{ lambda ; a:$T[$N]. let o:$T[$N] = broadcast_in_dim[broadcast_dimensions=()] $NZ:$T[]; b:$T[$N] = max a o in (b,) }", NULL, 0, 0},
    {"splat-min-r", "{ lambda ; a:$T[$N]. let o:$T[$N] = broadcast_in_dim[broadcast_dimensions=()] $TWO:$T[]; b:$T[$N] = min a o in (b,) }", NULL, 0, 0},
};

static const ft_dtype DTYPES[] = {FT_F32, FT_F64, FT_F16, FT_BF16, FT_I32, FT_U32, FT_I64};

START_TEST(exact_elementwise_rules_are_bitwise_sound) {
  for (size_t c = 0; c < FT_COUNTOF(ECASES); c++) {
    int64_t total = 0;
    payload_diffs = 0;
    for (size_t d = 0; d < FT_COUNTOF(DTYPES); d++) {
      ft_dtype dt = DTYPES[d];
      if (ECASES[c].floats_only && !ft_dtype_is_float(dt)) continue;
      if (ECASES[c].no_i64 && dt == FT_I64) continue;
      char *l = expand(ECASES[c].lhs, dt, N), *r = ECASES[c].rhs ? expand(ECASES[c].rhs, dt, N) : NULL;
      total += sound_one(ECASES[c].rule, l, r);
      free(l);
      free(r);
    }
    printf("soundness %-18s %7lld inputs over %zu dtypes: bitwise equal (NaN payloads differing: %lld)\n",
           ECASES[c].rule, (long long)total, FT_COUNTOF(DTYPES), (long long)payload_diffs);
  }
}
END_TEST

/* ------------------------------------------------ layout rule instances */

typedef struct sbuf {
  char s[8192];
  size_t n;
} sbuf;

static void sp(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sp(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  b->n += (size_t)vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
  va_end(ap);
}

static void sp_dims(sbuf *b, const char *open, int r, const int64_t *d, const char *close) {
  sp(b, "%s", open);
  for (int i = 0; i < r; i++) sp(b, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (r == 1 && !strcmp(open, "(")) sp(b, ",");
  sp(b, "%s", close);
}

static void sp_aval(sbuf *b, const char *t, int r, const int64_t *d) {
  sp(b, "%s[", t);
  for (int i = 0; i < r; i++) sp(b, "%s%lld", i ? "," : "", (long long)d[i]);
  sp(b, "]");
}

static int64_t rdim(int lo, int hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

static void rperm(int r, int64_t *p) {
  for (int i = 0; i < r; i++) p[i] = i;
  for (int i = r - 1; i > 0; i--) {
    int k = (int)(rnd() % (uint64_t)(i + 1));
    int64_t t = p[i];
    p[i] = p[k], p[k] = t;
  }
}

static int64_t prod(int r, const int64_t *d) {
  int64_t p = 1;
  for (int i = 0; i < r; i++) p *= d[i];
  return p;
}

/* One random instance of the left-hand side of a layout rule, as text. */
static void layout_instance(const char *rule, const char *t, sbuf *b) {
  int64_t x[4], y[4], z[4], p[4], q[4];
  int r = (int)rdim(2, 4);
  for (int i = 0; i < r; i++) x[i] = rdim(1, 6);
  b->n = 0;
  if (!strcmp(rule, "transpose-transpose") || !strcmp(rule, "transpose-id")) {
    rperm(r, q);
    if (!strcmp(rule, "transpose-id"))
      for (int i = 0; i < r; i++) q[i] = i;
    rperm(r, p);
    for (int i = 0; i < r; i++) y[i] = x[q[i]];
    for (int i = 0; i < r; i++) z[i] = y[p[i]];
    sp(b, "{ lambda ; a:"), sp_aval(b, t, r, x), sp(b, ". let b:"), sp_aval(b, t, r, y);
    sp(b, " = transpose[permutation="), sp_dims(b, "(", r, q, ")"), sp(b, "] a");
    if (!strcmp(rule, "transpose-transpose")) {
      sp(b, "; c:"), sp_aval(b, t, r, z), sp(b, " = transpose[permutation="), sp_dims(b, "(", r, p, ")");
      sp(b, "] b in (c,) }");
    } else {
      sp(b, " in (b,) }");
    }
  } else if (!strcmp(rule, "reshape-reshape") || !strcmp(rule, "reshape-id")) {
    int64_t n = prod(r, x), m1[2] = {x[0], n / x[0]}, m2[3] = {n / x[r - 1], 1, x[r - 1]};
    sp(b, "{ lambda ; a:"), sp_aval(b, t, r, x), sp(b, ". let b:");
    if (!strcmp(rule, "reshape-id")) {
      sp_aval(b, t, r, x), sp(b, " = reshape[dimensions=None new_sizes="), sp_dims(b, "(", r, x, ")");
      sp(b, "] a in (b,) }");
    } else {
      sp_aval(b, t, 2, m1), sp(b, " = reshape[dimensions=None new_sizes="), sp_dims(b, "(", 2, m1, ")");
      sp(b, "] a; c:"), sp_aval(b, t, 3, m2), sp(b, " = reshape[dimensions=None new_sizes=");
      sp_dims(b, "(", 3, m2, ")"), sp(b, "] b in (c,) }");
    }
  } else if (!strcmp(rule, "broadcast-broadcast")) {
    int64_t a0 = rdim(1, 6), a1 = rdim(1, 40), s1[2] = {a1, rdim(1, 6)}, s2[3] = {rdim(1, 5), a1, s1[1]};
    int64_t xs[1] = {rnd() % 3 ? a1 : 1}, bd1[1] = {0}, bd2[2] = {1, 2};
    (void)a0;
    sp(b, "{ lambda ; a:"), sp_aval(b, t, 1, xs), sp(b, ". let b:"), sp_aval(b, t, 2, s1);
    sp(b, " = broadcast_in_dim[broadcast_dimensions="), sp_dims(b, "(", 1, bd1, ")"), sp(b, " shape=");
    sp_dims(b, "(", 2, s1, ")"), sp(b, "] a; c:"), sp_aval(b, t, 3, s2);
    sp(b, " = broadcast_in_dim[broadcast_dimensions="), sp_dims(b, "(", 2, bd2, ")"), sp(b, " shape=");
    sp_dims(b, "(", 3, s2, ")"), sp(b, "] b in (c,) }");
  } else if (!strcmp(rule, "broadcast-id")) {
    int64_t bd[4] = {0, 1, 2, 3};
    sp(b, "{ lambda ; a:"), sp_aval(b, t, r, x), sp(b, ". let b:"), sp_aval(b, t, r, x);
    sp(b, " = broadcast_in_dim[broadcast_dimensions="), sp_dims(b, "(", r, bd, ")"), sp(b, " shape=");
    sp_dims(b, "(", r, x, ")"), sp(b, "] a in (b,) }");
  } else if (!strcmp(rule, "slice-slice") || !strcmp(rule, "slice-id")) {
    int64_t d[2] = {rdim(8, 40), rdim(8, 40)}, s1[2], l1[2], t1[2], c1[2], s2[2], l2[2], t2[2], c2[2];
    bool id = !strcmp(rule, "slice-id");
    for (int i = 0; i < 2; i++) {
      s1[i] = id ? 0 : rdim(0, 3), l1[i] = id ? d[i] : d[i] - rdim(0, 3), t1[i] = id ? 1 : rdim(1, 3);
      c1[i] = (l1[i] - s1[i] + t1[i] - 1) / t1[i];
      s2[i] = rdim(0, (int)(c1[i] / 2)), l2[i] = c1[i] - rdim(0, (int)(c1[i] - s2[i]) / 2), t2[i] = rdim(1, 2);
      c2[i] = (l2[i] - s2[i] + t2[i] - 1) / t2[i];
    }
    sp(b, "{ lambda ; a:"), sp_aval(b, t, 2, d), sp(b, ". let b:"), sp_aval(b, t, 2, c1);
    sp(b, " = slice[limit_indices="), sp_dims(b, "(", 2, l1, ")"), sp(b, " start_indices=");
    sp_dims(b, "(", 2, s1, ")"), sp(b, " strides="), sp_dims(b, "(", 2, t1, ")"), sp(b, "] a");
    if (id) {
      sp(b, " in (b,) }");
    } else {
      sp(b, "; c:"), sp_aval(b, t, 2, c2), sp(b, " = slice[limit_indices="), sp_dims(b, "(", 2, l2, ")");
      sp(b, " start_indices="), sp_dims(b, "(", 2, s2, ")"), sp(b, " strides=");
      sp_dims(b, "(", 2, t2, ")"), sp(b, "] b in (c,) }");
    }
  } else { /* slice-concat<K>-<I>: K operands, the slice inside operand I */
    int K = rule[12] - '0', I = rule[14] - '0';
    int64_t rows[4], off = 0, cols = rdim(1, 30), tot = 0;
    for (int k = 0; k < K; k++) tot += rows[k] = rdim(3, 30);
    for (int k = 0; k < I; k++) off += rows[k];
    int64_t st = off + rdim(0, 1), str = rdim(1, 2), lim = off + rows[I] - rdim(0, 1);
    int64_t cnt = (lim - st + str - 1) / str, cs = rdim(0, (int)cols - 1);
    sp(b, "{ lambda ;");
    for (int k = 0; k < K; k++) {
      int64_t dk[2] = {rows[k], cols};
      sp(b, " x%d:", k), sp_aval(b, t, 2, dk);
    }
    int64_t dc[2] = {tot, cols}, ds[2] = {cnt, cols - cs}, ss[2] = {st, cs}, ls[2] = {lim, cols},
            ts[2] = {str, 1};
    sp(b, ". let c:"), sp_aval(b, t, 2, dc), sp(b, " = concatenate[dimension=0]");
    for (int k = 0; k < K; k++) sp(b, " x%d", k);
    sp(b, "; s:"), sp_aval(b, t, 2, ds), sp(b, " = slice[limit_indices="), sp_dims(b, "(", 2, ls, ")");
    sp(b, " start_indices="), sp_dims(b, "(", 2, ss, ")"), sp(b, " strides="), sp_dims(b, "(", 2, ts, ")");
    sp(b, "] c in (s,) }");
  }
}

START_TEST(exact_layout_rules_are_bitwise_sound) {
  static const char *rules[] = {"transpose-transpose", "transpose-id", "reshape-reshape",
                                "reshape-id", "broadcast-broadcast", "broadcast-id", "slice-slice",
                                "slice-id", "slice-concat2-0", "slice-concat2-1", "slice-concat3-0",
                                "slice-concat3-1", "slice-concat3-2", "slice-concat4-0",
                                "slice-concat4-1", "slice-concat4-2", "slice-concat4-3"};
  static const char *types[] = {"f32", "i32", "f16", "f64"};
  for (size_t r = 0; r < FT_COUNTOF(rules); r++) {
    int64_t total = 0;
    int inst = 0;
    payload_diffs = 0;
    sbuf b;
    while (total < 10000 || inst < 8) {
      layout_instance(rules[r], types[inst % 4], &b);
      total += sound_one(rules[r], b.s, NULL);
      inst++;
    }
    printf("soundness %-20s %6lld inputs over %d random instances: bitwise equal\n", rules[r],
           (long long)total, inst);
  }
}
END_TEST

/* ------------------------------------------------------ golden programs */

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  *len = fread(b, 1, (size_t)n, f);
  b[*len] = 0;
  fclose(f);
  return b;
}

static bool uses_prim(const ft_jaxpr *j, ft_prim p);
static bool pval_uses(const ft_pval *v, ft_prim p) {
  if (v->tag == FT_PV_JAXPR) return uses_prim(v->u.jaxpr, p);
  if (v->tag != FT_PV_TUPLE) return false;
  for (int i = 0; i < v->n; i++)
    if (pval_uses(&v->u.items[i], p)) return true;
  return false;
}
static bool uses_prim(const ft_jaxpr *j, ft_prim p) {
  for (int e = 0; e < j->n_eqn; e++) {
    if (j->eqns[e].prim == p) return true;
    for (int k = 0; k < ft_prim_get(j->eqns[e].prim)->n_params; k++)
      if (pval_uses(&j->eqns[e].params[k], p)) return true;
  }
  return false;
}

/* The fixture inputs (.const<k>.npy, then .in<k>.npy); NULL when they do
 * not load or do not match (bf16 stored as u16 is reinterpreted). */
static ft_array **fixture_args(const char *dir, const char *name, const ft_jaxpr *j, int *n) {
  *n = ft_interp_num_args(j);
  ft_array **a = calloc((size_t)*n + 1, sizeof *a);
  int k = 0;
  for (int pass = 0; pass < 2; pass++) {
    int cnt = pass == 0 ? (j->const_data ? 0 : j->n_const) : j->n_in;
    for (int i = 0; i < cnt; i++, k++) {
      char path[1024];
      snprintf(path, sizeof path, "%s/%s.%s%d.npy", dir, name, pass ? "in" : "const", i);
      a[k] = ft_npy_read(C, path);
      const ft_var *v = pass ? j->invars[i] : j->constvars[i];
      if (a[k] && v->aval.dtype == FT_BF16 && a[k]->aval.dtype == FT_U16) a[k]->aval.dtype = FT_BF16;
      if (!a[k] || !ft_aval_eq(&a[k]->aval, &v->aval)) {
        ft_ctx_clear_error(C);
        free_args(a, k + 1);
        return NULL;
      }
    }
  }
  return a;
}

/* Runs j: true when it evaluates (some goldens use primitives without an
 * interpreter rule yet). */
static bool evaluates(const ft_jaxpr *j, int n, ft_array *const *args) {
  int no = ft_jaxpr_num_outputs(j);
  ft_array **o = calloc((size_t)no + 1, sizeof *o);
  bool ok = ft_eval(C, j, n, (const ft_array *const *)args, no, o) == FT_OK;
  for (int k = 0; ok && k < no; k++) ft_array_free(o[k]);
  free(o);
  ft_ctx_clear_error(C);
  return ok;
}

START_TEST(golden_programs_keep_their_bits) {
  const char *dir = getenv("FT_GOLDEN");
  ck_assert_msg(dir != NULL, "FT_GOLDEN is not set");
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  char *names[512];
  int nn = 0;
  struct dirent *de;
  while ((de = readdir(d)) && nn < 512) {
    size_t l = strlen(de->d_name);
    if (l > 6 && !strcmp(de->d_name + l - 6, ".jaxpr")) names[nn++] = strndup(de->d_name, l - 6);
  }
  closedir(d);
  int parsed = 0, optimized = 0, compared = 0, random_cmp = 0, unparsed = 0, no_eval = 0;
  int eq0 = 0, eq1 = 0;
  for (int i = 0; i < nn; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.jaxpr", dir, names[i]);
    size_t len;
    char *text = read_all(path, &len);
    ft_jaxpr *j = text ? ft_parse(C, text, len, path) : NULL;
    free(text);
    if (!j) { /* the parser's known gaps are test_golden's business */
      ft_ctx_clear_error(C);
      unparsed++;
      free(names[i]);
      continue;
    }
    parsed++;
    ft_opt_report rep = {0};
    ft_jaxpr *r = ft_optimize(C, j, FT_OPT_EXACT, &rep);
    ck_assert_msg(r != NULL, "%s: %s", names[i], ft_ctx_error(C));
    ck_assert_int_eq(ft_jaxpr_verify(C, r), FT_OK);
    optimized++;
    eq0 += rep.eqns_before, eq1 += rep.eqns_after;
    int n;
    ft_array **args = fixture_args(dir, names[i], j, &n);
    if (args && evaluates(j, n, args)) {
      check_same(j, r, n, args, names[i]);
      compared++;
    } else if (args) {
      no_eval++;
    }
    if (args) free_args(args, n);
    if (!uses_prim(j, FT_P_WHILE) && !uses_prim(j, FT_P_GATHER) && !uses_prim(j, FT_P_DYNAMIC_SLICE)) {
      for (int rep_i = 0; rep_i < 2; rep_i++) {
        ft_array **ra = random_args(j, &n);
        if (evaluates(j, n, ra)) {
          check_same(j, r, n, ra, names[i]);
          random_cmp++;
        }
        free_args(ra, n);
      }
    }
    ft_opt_report_free(&rep);
    ft_jaxpr_free(r);
    ft_jaxpr_free(j);
    free(names[i]);
  }
  printf("golden: %d programs parsed (%d do not parse yet), %d optimized and verified; "
         "%d compared bitwise on fixture inputs (%d not evaluable), %d random-input runs equal; "
         "equations %d -> %d\n",
         parsed, unparsed, optimized, compared, no_eval, random_cmp, eq0, eq1);
  ck_assert_int_eq(parsed, optimized);
  ck_assert_int_gt(compared, 100);
}
END_TEST

START_TEST(gradient_programs_report) {
  const char *dir = getenv("FT_GOLDEN");
  static const char *progs[] = {"grad_mlp_loss", "grad_layer_norm", "grad_logreg_loss",
                                "grad_custom_jvp", "grad_custom_vjp", "grad_rnn_scan"};
  int improved = 0;
  for (size_t i = 0; i < FT_COUNTOF(progs); i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.jaxpr", dir, progs[i]);
    size_t len;
    char *text = read_all(path, &len);
    ck_assert_ptr_nonnull(text);
    ft_jaxpr *j = ft_parse(C, text, len, path);
    free(text);
    if (!j) {
      printf("grad %-18s does not parse: %s\n", progs[i], ft_ctx_error(C));
      ft_ctx_clear_error(C);
      continue;
    }
    ft_opt_report rep = {0};
    ft_jaxpr *r = ft_optimize(C, j, FT_OPT_EXACT, &rep);
    ck_assert_msg(r != NULL, "%s: %s", progs[i], ft_ctx_error(C));
    printf("grad %-18s exact: eqns %3d -> %3d, cost %9.1f -> %9.1f;", progs[i], rep.eqns_before,
           rep.eqns_after, rep.cost_before, rep.cost_after);
    for (int k = 0; k < rep.n_rules && k < 8; k++)
      printf(" %s=%lld", rep.rules[k].name, (long long)rep.rules[k].count);
    printf("\n");
    ck_assert_int_le(rep.eqns_after, rep.eqns_before);
    ck_assert(rep.cost_after <= rep.cost_before);
    improved += rep.eqns_after < rep.eqns_before;
    /* the gradient of the gradient's first output, as ftc grad computes it */
    ft_opt_report_free(&rep);
    ft_jaxpr_free(r);
    ft_jaxpr_free(j);
  }
  ck_assert_int_ge(improved, 3);
}
END_TEST

/* Gradients taken here (ft_grad) of small programs, then optimized. */
START_TEST(ft_grad_outputs_simplify) {
  static const char *progs[] = {
      "{ lambda ; a:f32[8] b:f32[8]. let c:f32[8] = mul a b; d:f32[8] = tanh c; "
      "e:f32[] = reduce_sum[axes=(0,)] d in (e,) }",
      "{ lambda ; w:f32[4,3] x:f32[5,4]. let y:f32[5,3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w; "
      "z:f32[5,3] = logistic y; s:f32[] = reduce_sum[axes=(0, 1)] z in (s,) }",
  };
  for (size_t i = 0; i < FT_COUNTOF(progs); i++) {
    ft_jaxpr *j = parse(progs[i]);
    ft_jaxpr *g = ft_grad(C, j, 0, NULL, false);
    ck_assert_msg(g != NULL, "%s", ft_ctx_error(C));
    ft_opt_report rep = {0};
    ft_jaxpr *r = ft_optimize(C, g, FT_OPT_EXACT, &rep);
    ck_assert_msg(r != NULL, "%s", ft_ctx_error(C));
    printf("ft_grad program %zu: eqns %d -> %d, cost %.1f -> %.1f\n", i, rep.eqns_before,
           rep.eqns_after, rep.cost_before, rep.cost_after);
    int n;
    ft_array **ra = random_args(g, &n);
    check_same(g, r, n, ra, "ft_grad output");
    free_args(ra, n);
    ck_assert_int_lt(rep.eqns_after, rep.eqns_before);
    ft_opt_report_free(&rep);
    ft_jaxpr_free(r);
    ft_jaxpr_free(g);
    ft_jaxpr_free(j);
  }
}
END_TEST

START_TEST(unsound_rule_is_named) {
  ft_jaxpr *j = parse("{ lambda ; a:f32[]. let b:f32[] = add 1.0:f32[] 2.0:f32[]; c:f32[] = mul a b in (c,) }");
  ft_topt_opts o = {.tier = FT_OPT_EXACT, .extra_rules = "bad-left: (add ?x ?y) => ?x"};
  ft_jaxpr *r = ft_tensor_optimize(C, j, &o, NULL);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(ft_ctx_error(C), "unsound rule 'bad-left'") != NULL, "%s", ft_ctx_error(C));
  ck_assert_msg(strstr(ft_ctx_error(C), "constant") != NULL, "%s", ft_ctx_error(C));
  ft_ctx_clear_error(C);
  /* a rule that changes a shape is refused the same way */
  ft_jaxpr *j2 = parse("{ lambda ; a:f32[3]. let b:f32[1,3] = reshape[dimensions=None new_sizes=(1, 3)] a in (b,) }");
  o.extra_rules = "bad-shape: (reshape[?p] ?x) => ?x";
  ck_assert_ptr_null(ft_tensor_optimize(C, j2, &o, NULL));
  ck_assert_msg(strstr(ft_ctx_error(C), "unsound rule 'bad-shape'") != NULL, "%s", ft_ctx_error(C));
  ft_ctx_clear_error(C);
  ft_jaxpr_free(j2);
  ft_jaxpr_free(j);
}
END_TEST

/* slice-slice with the strides TF-converted programs use to take one
 * element (2^31, 2^32): the composed stride would overflow int64, so
 * slice-slice declines (under UBSan it overflowed); other rules may still
 * shorten the pair, and the program keeps its value. */
START_TEST(slice_slice_huge_strides) {
  ft_jaxpr *j = parse("{ lambda ; a:f32[4]. let "
                      "b:f32[1] = slice[limit_indices=(4,) start_indices=(1,) strides=(2147483648,)] a; "
                      "c:f32[1] = slice[limit_indices=(1,) start_indices=(0,) strides=(4294967296,)] b "
                      "in (c,) }");
  ft_opt_report rep = {0};
  ft_jaxpr *r = ft_optimize(C, j, FT_OPT_EXACT, &rep);
  ck_assert_msg(r != NULL, "%s", ft_ctx_error(C));
  ck_assert_int_le(rep.eqns_after, 2);
  int64_t n = 4;
  ft_array *x = ft_array_new(C, FT_F32, 1, &n);
  float *xp = ft_array_data_mut(x);
  for (int i = 0; i < 4; i++) xp[i] = (float)i + 0.5f;
  ft_array *o = NULL;
  ck_assert_int_eq(ft_eval(C, r, 1, (const ft_array *const *)&x, 1, &o), FT_OK);
  ck_assert(((const float *)ft_array_data(o))[0] == 1.5f);
  ft_array_free(o);
  ft_array_free(x);
  ft_opt_report_free(&rep);
  ft_jaxpr_free(r);
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(explanations_name_rules) {
  ft_jaxpr *j = parse("{ lambda ; a:f32[3,4]. let b:f32[3,4] = mul a 1.0:f32[]; "
                      "c:f32[4,3] = transpose[permutation=(1, 0)] b; "
                      "d:f32[3,4] = transpose[permutation=(1, 0)] c; e:f32[3,4] = neg d; "
                      "f:f32[3,4] = neg e in (f,) }");
  ft_opt_report rep = {.want_proofs = true};
  ft_jaxpr *r = ft_optimize(C, j, FT_OPT_EXACT, &rep);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(rep.eqns_after, 0);
  ck_assert_int_ge(rep.n_proofs, 3);
  bool saw_tt = false, saw_nn = false, saw_one = false;
  for (int i = 0; i < rep.n_proofs; i++) {
    const char *p = rep.proofs[i];
    ck_assert_msg(strstr(p, "eqn ") == p, "%s", p);
    ck_assert_msg(strstr(p, "  = ") != NULL, "a proof has steps: %s", p);
    saw_tt |= strstr(p, "[transpose-transpose") != NULL;
    saw_nn |= strstr(p, "[neg-neg") != NULL;
    saw_one |= strstr(p, "[mul-one") != NULL || strstr(p, "[one-mul") != NULL;
    if (i < 3) printf("proof %d:\n%s", i, p);
  }
  ck_assert(saw_tt && saw_nn && saw_one);
  /* the last proof (eqn 4, the outer neg) rewrites the whole program to a */
  const char *last = rep.proofs[rep.n_proofs - 1];
  size_t l = strlen(last);
  ck_assert_msg(l > 12 && strstr(last + l - 40, "= arg[0]") != NULL, "%s", last);
  ft_opt_report_free(&rep);
  ft_jaxpr_free(r);
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(algebraic_tier) {
  /* A(BC) with a wide B C product: (AB)C is ten times cheaper */
  ft_jaxpr *j = parse(
      "{ lambda ; a:f32[2,50] b:f32[50,50] c:f32[50,40]. let "
      "d:f32[50,40] = dot_general[dimension_numbers=(([1], [0]), ([], []))] b c; "
      "e:f32[2,40] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a d; "
      "f:f32[2,40] = sub e e; g:f32[2,40] = mul e 0.0:f32[] in (e, f, g) }");
  ft_opt_report rep = {0};
  ft_jaxpr *exact = ft_optimize(C, j, FT_OPT_EXACT, &rep);
  ck_assert_ptr_nonnull(exact);
  ck_assert_int_eq(rep.eqns_after, 4);
  ft_opt_report_free(&rep);
  ft_jaxpr *r = ft_optimize(C, j, FT_OPT_ALGEBRAIC, &rep);
  ck_assert_msg(r != NULL, "%s", ft_ctx_error(C));
  printf("algebraic: eqns %d -> %d, cost %.0f -> %.0f\n", rep.eqns_before, rep.eqns_after,
         rep.cost_before, rep.cost_after);
  ck_assert(fired(&rep, "dot-assoc-rev") > 0);
  ck_assert(fired(&rep, "sub-self") > 0);
  ck_assert_int_eq(rep.eqns_after, 3); /* two dots, one broadcast of 0.0 shared by f and g */
  ck_assert(rep.cost_after < rep.cost_before / 5);
  ck_assert_int_eq(r->eqns[0].in[0]->aval.dims[1], 50); /* dot a b first */
  ck_assert_int_eq(r->eqns[0].in[1]->aval.dims[0], 50);
  ck_assert_int_eq(r->eqns[0].out[0]->aval.dims[1], 50);
  ft_opt_report_free(&rep);
  ft_jaxpr_free(r);
  ft_jaxpr_free(exact);
  ft_jaxpr_free(j);
}
END_TEST

START_TEST(coverage_status) {
  int opaque = 0;
  for (int p = 0; p < FT_NUM_PRIMS; p++) {
    const char *s = ft_egraph_rule_status((ft_prim)p);
    if (!s) continue;
    opaque++;
    ck_assert_msg(!strncmp(s, "n/a: ", 5) || !strncmp(s, "unsupported: ", 13), "%s", s);
  }
  ck_assert_ptr_null(ft_egraph_rule_status(FT_P_MUL));
  ck_assert_ptr_nonnull(ft_egraph_rule_status(FT_P_SCAN));
  ck_assert_ptr_nonnull(ft_egraph_rule_status(FT_P_SORT));
  ck_assert_int_ge(opaque, 6);
}
END_TEST

static Suite *tensor_suite(void) {
  Suite *s = suite_create("egraph_tensor");
  TCase *tc = tcase_create("tensor");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, exact_elementwise_rules_are_bitwise_sound);
  tcase_add_test(tc, exact_layout_rules_are_bitwise_sound);
  tcase_add_test(tc, golden_programs_keep_their_bits);
  tcase_add_test(tc, gradient_programs_report);
  tcase_add_test(tc, ft_grad_outputs_simplify);
  tcase_add_test(tc, unsound_rule_is_named);
  tcase_add_test(tc, slice_slice_huge_strides);
  tcase_add_test(tc, explanations_name_rules);
  tcase_add_test(tc, algebraic_tier);
  tcase_add_test(tc, coverage_status);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(tensor_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
