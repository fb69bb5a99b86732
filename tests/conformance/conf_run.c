/* tests/conformance/conf_run.c: loads the JAX-captured cases (the golden
 * set and the conformance set, each described by its MANIFEST.json) and runs
 * every check of each:
 *   parse        JAX's printout parses (and verifies);
 *   print        printing it back reproduces JAX's text byte for byte;
 *   eval:E       engine E on JAX's inputs gives JAX's outputs (conf_compare);
 *   T:parse, T:print, T:jax:E
 *                the same for JAX's printout of transform T of the function;
 *   T:ours:E     OUR transform T of JAX's forward jaxpr, run by engine E,
 *                gives JAX's outputs of T.
 * A transform we cannot build yet (FT_ERR_UNSUPPORTED) is a skip, with its
 * reason; every other failure is a failure unless conf_known_failures lists
 * it (with the reason, printed by the report). */
#include <fnmatch.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

/* ---- engines: one line per engine (the table below). CONF_JIT 0 leaves
 * the JIT out (a build without src/lower/jit.c). */
#ifndef CONF_JIT
#define CONF_JIT 1
#endif

typedef ft_status (*conf_engine_fn)(ft_ctx *ctx, const ft_jaxpr *j, int n_in,
                                    ft_array *const *in, int n_out, ft_array **out);

static ft_status eng_interp(ft_ctx *ctx, const ft_jaxpr *j, int n_in, ft_array *const *in,
                            int n_out, ft_array **out) {
  return ft_eval(ctx, j, n_in, (const ft_array *const *)in, n_out, out);
}
#if CONF_JIT
static ft_status eng_jit(ft_ctx *ctx, const ft_jaxpr *j, int n_in, ft_array *const *in,
                         int n_out, ft_array **out) {
  /* The harness checks the JIT's numbers: equations it does not compile run
   * as interpreter fallback steps (tools/jit-fallbacks counts them), which
   * ft_jit refuses unless asked. */
  ft_jit_options jo = {.size = sizeof(ft_jit_options), .no_disk_cache = true, .allow_fallback = true};
  ft_fn *fn = ft_jit(ctx, j, &jo);
  if (!fn) return ft_ctx_status(ctx);
  ft_status st = ft_call(fn, n_in, (const ft_array *const *)in, n_out, out);
  ft_fn_free(fn);
  return st;
}
#endif

static const struct {
  const char *name;
  conf_engine_fn run;
} ENGINES[] = {
    {"interp", eng_interp},
#if CONF_JIT
    {"jit", eng_jit},
#endif
};

enum { MAXA = 96 };

typedef struct runctx {
  const conf_opts *o;
  conf_stats *st;
  ft_ctx *ctx;
  const char *dir;
  char *pack;            /* the current case's .npys file, or NULL */
  size_t pack_len;
  const char *name, *family, *group;
  bool failed, known, skipped;
  int cand[64], n_cand;  /* known-failure entries whose case glob matches name */
  bool many_cand;        /* more than fit: search the whole list */
} runctx;

/* ---- notes and counters */

/* The known-failure entries whose case glob matches the current case
 * (checked once per case, not once per check). */
static void known_candidates(runctx *rc) {
  rc->n_cand = 0, rc->many_cand = false;
  for (int i = 0; i < conf_n_known_failures && !rc->many_cand; i++) {
    if (fnmatch(conf_known_failures[i].case_glob, rc->name, 0)) continue;
    if (rc->n_cand == (int)FT_COUNTOF(rc->cand)) rc->many_cand = true;
    else rc->cand[rc->n_cand++] = i;
  }
}

/* The index of the known-failure entry naming this check, or -1. */
static int known_index(const runctx *rc, const char *check) {
  if (rc->many_cand) {
    for (int i = 0; i < conf_n_known_failures; i++) {
      const conf_known *k = &conf_known_failures[i];
      if (!fnmatch(k->case_glob, rc->name, 0) && !fnmatch(k->check_glob, check, 0)) return i;
    }
    return -1;
  }
  for (int c = 0; c < rc->n_cand; c++)
    if (!fnmatch(conf_known_failures[rc->cand[c]].check_glob, check, 0)) return rc->cand[c];
  return -1;
}

static void note(runctx *rc, const char *check, conf_status s, const char *reason) {
  conf_stats *st = rc->st;
  if (s != CONF_INFO) st->checks++;
  int ki = s == CONF_FAIL || s == CONF_PASS ? known_index(rc, check) : -1;
  char unexpected[320];
  if (ki >= 0 && s == CONF_PASS) {
    /* a listed failure that passes: the list is stale, say so */
    snprintf(unexpected, sizeof unexpected, "unexpected pass: known failure K%d (%.40s / %.40s) "
             "names this check but it passes now; remove the entry from "
             "tests/conformance/conf_known.c", ki + 1, conf_known_failures[ki].case_glob,
             conf_known_failures[ki].check_glob);
    reason = unexpected;
    s = CONF_FAIL;
  } else if (ki >= 0) s = CONF_KNOWN;
  if (rc->o->dump && s != CONF_INFO) {
    char line[320];
    snprintf(line, sizeof line, "%s", s == CONF_PASS ? "" : reason);
    for (char *p = line; *p; p++)
      if (*p == '\n' || *p == '\t') *p = ' ';
    fprintf(rc->o->dump, "%s\t%s\t%s\t%s\n", rc->name, check,
            s == CONF_PASS ? "pass" : s == CONF_FAIL ? "fail" : s == CONF_KNOWN ? "known" : "skip", line);
  }
  switch (s) {
  case CONF_PASS: st->checks_pass++; return;
  case CONF_FAIL: st->checks_fail++, rc->failed = true; break;
  case CONF_KNOWN: st->checks_known++, rc->known = true; break;
  case CONF_SKIP: st->checks_skip++, rc->skipped = true; break;
  case CONF_INFO: break;
  }
  if (st->n_notes == st->cap_notes) {
    st->cap_notes = st->cap_notes ? 2 * st->cap_notes : 256;
    st->notes = realloc(st->notes, (size_t)st->cap_notes * sizeof *st->notes);
  }
  conf_note *n = &st->notes[st->n_notes++];
  memset(n, 0, sizeof *n);
  snprintf(n->case_name, sizeof n->case_name, "%s", rc->name);
  snprintf(n->check, sizeof n->check, "%s", check);
  n->status = s;
  n->known = ki;
  if (s == CONF_KNOWN) snprintf(n->reason, sizeof n->reason, "K%d: %.300s", ki + 1, reason);
  else snprintf(n->reason, sizeof n->reason, "%s", reason);
  /* one line, for tables */
  for (char *p = n->reason; *p; p++)
    if (*p == '\n' || *p == '|') *p = ' ';
  if (rc->o->verbose && s == CONF_FAIL) fprintf(stderr, "FAIL %s %s: %s\n", rc->name, check, reason);
}

/* conf_roundtrip's results as checks "roundtrip:<program>" (a transform
 * that cannot be built, or a program that does not run, is a skip). */
typedef struct rt_user {
  runctx *rc;
  const char *prefix;
} rt_user;

static void rt_note(void *user, const char *what, int r, const char *why) {
  rt_user *u = user;
  char ck[64];
  snprintf(ck, sizeof ck, "roundtrip:%s%s", u->prefix, what);
  note(u->rc, ck, r == CONF_RT_FAIL ? CONF_FAIL : r == CONF_RT_NOBUILD ? CONF_SKIP : CONF_PASS, why);
}

static void rt_check(runctx *rc, const char *prefix, const char *what, const ft_jaxpr *j, ft_array **in, int n_in) {
  char why[512];
  rt_user u = {rc, prefix};
  ft_ctx_clear_error(rc->ctx);
  rt_note(&u, what, conf_rt_program(rc->ctx, j, in, n_in, why, sizeof why), why);
  ft_ctx_clear_error(rc->ctx);
}

static conf_tstat *tstat(conf_stats *st, const char *t) {
  for (int i = 0; i < st->n_tf; i++)
    if (!strcmp(st->tf[i].name, t)) return &st->tf[i];
  if (st->n_tf == (int)FT_COUNTOF(st->tf)) return &st->tf[st->n_tf - 1];
  conf_tstat *s = &st->tf[st->n_tf++];
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", t);
  return s;
}

static conf_pstat *pstat(conf_stats *st, const char *prim, ft_dtype dt) {
  for (int i = 0; i < st->n_ps; i++)
    if (!strcmp(st->ps[i].prim, prim) && st->ps[i].dt == dt) return &st->ps[i];
  if (st->n_ps == st->cap_ps) {
    st->cap_ps = st->cap_ps ? 2 * st->cap_ps : 128;
    st->ps = realloc(st->ps, (size_t)st->cap_ps * sizeof *st->ps);
  }
  conf_pstat *p = &st->ps[st->n_ps++];
  memset(p, 0, sizeof *p);
  snprintf(p->prim, sizeof p->prim, "%s", prim);
  p->dt = dt;
  return p;
}

/* ---- loading */

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  size_t got = fread(b, 1, (size_t)n, f);
  fclose(f);
  b[got] = 0;
  if (len) *len = got;
  return b;
}

static char *load_text(runctx *rc, const char *file, size_t *len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", rc->dir, file);
  return slurp(path, len);
}

/* One array of a manifest entry ({file[, offset, length], storage?}). */
static ft_array *load_array(runctx *rc, json_t *ent) {
  const char *file = json_string_value(json_object_get(ent, "file"));
  if (!file) return NULL;
  ft_array *a;
  json_t *off = json_object_get(ent, "offset");
  if (off) {
    size_t o = (size_t)json_integer_value(off);
    size_t l = (size_t)json_integer_value(json_object_get(ent, "length"));
    if (!rc->pack || o + l > rc->pack_len) return NULL;
    a = ft_npy_read_mem(rc->ctx, rc->pack + o, l, file);
  } else {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", rc->dir, file);
    a = ft_npy_read(rc->ctx, path);
  }
  const char *storage = json_string_value(json_object_get(ent, "storage"));
  if (a && storage && !strcmp(storage, "bf16_bits_as_u16") && a->aval.dtype == FT_U16)
    a->aval.dtype = FT_BF16;
  return a;
}

/* Appends the arrays of list to a[*n]; false when one cannot be read. */
static bool load_arrays(runctx *rc, json_t *list, ft_array **a, int *n) {
  size_t i;
  json_t *e;
  json_array_foreach(list, i, e) {
    if (*n >= MAXA || !(a[*n] = load_array(rc, e))) return false;
    (*n)++;
  }
  return true;
}

static void free_arrays(ft_array **a, int n) {
  for (int i = 0; i < n; i++) ft_array_free(a[i]), a[i] = NULL;
}

/* A copy of a with subnormal floats flushed to signed zero (XLA's DAZ), or
 * NULL when a has none. */
static ft_array *flushed(ft_ctx *ctx, const ft_array *a) {
  ft_dtype dt = a->aval.dtype;
  if (!ft_dtype_is_float(dt)) return NULL;
  double tiny = dt == FT_F16 ? 0x1p-14 : dt == FT_F64 ? 0x1p-1022 : 0x1p-126;
  ft_array *c = NULL;
  for (int64_t i = 0; i < ft_array_size(a); i++) {
    double v = ft_get_f64(a, i);
    if (v == 0 || fabs(v) >= tiny || isnan(v)) continue;
    if (!c) c = ft_array_clone(ctx, a);
    ft_set_f64(c, i, signbit(v) ? -0.0 : 0.0);
  }
  return c;
}

/* ---- checks */

/* parse + print round trip of one printout; returns the jaxpr or NULL. */
static ft_jaxpr *check_text(runctx *rc, const char *file, const char *prefix) {
  char ck[48], why[512];
  size_t len = 0;
  char *text = load_text(rc, file, &len);
  snprintf(ck, sizeof ck, "%sparse", prefix);
  if (!text) {
    snprintf(why, sizeof why, "cannot read %s", file);
    note(rc, ck, CONF_FAIL, why);
    return NULL;
  }
  ft_ctx_clear_error(rc->ctx);
  ft_jaxpr *j = ft_parse(rc->ctx, text, len, file);
  if (!j) {
    snprintf(why, sizeof why, "%s", ft_ctx_error(rc->ctx));
    note(rc, ck, CONF_FAIL, why);
    free(text);
    return NULL;
  }
  note(rc, ck, CONF_PASS, "");
  snprintf(ck, sizeof ck, "%sprint", prefix);
  char *out = ft_jaxpr_print(rc->ctx, j);
  if (!out) note(rc, ck, CONF_FAIL, "print failed");
  else if (strlen(out) + 1 == len && !memcmp(out, text, len - 1) && text[len - 1] == '\n')
    note(rc, ck, CONF_PASS, "");
  else {
    size_t k = 0;
    while (out[k] && out[k] == text[k]) k++;
    int line = 1;
    for (size_t i = 0; i < k; i++) line += text[i] == '\n';
    snprintf(why, sizeof why, "printed text differs from JAX's at line %d: ours \"%.60s\" vs \"%.60s\"",
             line, out + k, text + k);
    note(rc, ck, CONF_FAIL, why);
  }
  ft_free(out);
  free(text);
  return j;
}

/* Binds the values of j's sub-jaxpr constants from the entry's sub_consts
 * (a list per sub-jaxpr with constvars, in ft_jaxpr_num_sub_consts's order:
 * JAX's printout names them but does not carry their values). False, with
 * a failed "<prefix>bind" check, when they do not fit. */
static bool bind_subs(runctx *rc, ft_jaxpr *j, json_t *ent, const char *prefix) {
  json_t *subs = json_object_get(ent, "sub_consts");
  int want = ft_jaxpr_num_sub_consts(j);
  char ck[48], why[512];
  snprintf(ck, sizeof ck, "%sbind", prefix);
  if (!want && !json_array_size(subs)) return true;
  if ((int)json_array_size(subs) != want) {
    snprintf(why, sizeof why, "the program has %d sub-jaxprs with constants; the case captured %d",
             want, (int)json_array_size(subs));
    note(rc, ck, CONF_FAIL, why);
    return false;
  }
  bool ok = true;
  for (int k = 0; ok && k < want; k++) {
    ft_array *a[MAXA] = {0};
    int n = 0;
    ok = load_arrays(rc, json_array_get(subs, (size_t)k), a, &n);
    ft_ctx_clear_error(rc->ctx);
    if (!ok) snprintf(why, sizeof why, "cannot read the constants of sub-jaxpr %d", k);
    else if (ft_jaxpr_bind_sub_consts(rc->ctx, j, k, n, (const ft_array *const *)a)) {
      snprintf(why, sizeof why, "%s", ft_ctx_error(rc->ctx));
      ok = false;
    }
    free_arrays(a, n);
  }
  note(rc, ck, ok ? CONF_PASS : CONF_FAIL, ok ? "" : why);
  return ok;
}

/* The primitive names of a manifest entry. */
static int prim_names(json_t *ent, const char **names, int max) {
  int n = 0;
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(ent, "primitives"), i, e) {
    if (n < max) names[n++] = json_string_value(e);
  }
  return n;
}

typedef struct refctx {
  conf_ld1 f1;
  conf_ld2 f2;
  const ft_array *x, *y;
} refctx;

static long double ref_elem(void *user, int64_t i) {
  refctx *r = user;
  if (r->f1) return r->f1((long double)ft_get_f64(r->x, i));
  return r->f2((long double)ft_get_f64(r->x, i), (long double)ft_get_f64(r->y, i));
}

/* FT_CONF_NAN_DIAG=1: prints each output where got and JAX's want are both
 * NaN at an element but with other bits (sign or payload). */
static void nan_diag(runctx *rc, const char *eng, ft_array **out, ft_array **want, int n) {
  for (int k = 0; k < n; k++) {
    if (!out[k] || ft_array_nbytes(out[k]) != ft_array_nbytes(want[k])) continue;
    ft_aval av = ft_array_aval(want[k]);
    int w = ft_dtype_bits(av.dtype) / 8;
    if (!ft_dtype_is_float(av.dtype) && !ft_dtype_is_complex(av.dtype)) continue;
    if (ft_dtype_is_complex(av.dtype)) w /= 2;
    const unsigned char *g = ft_array_data(out[k]), *x = ft_array_data(want[k]);
    size_t ne = ft_array_nbytes(want[k]) / (size_t)w;
    for (size_t i = 0; i < ne; i++) {
      uint64_t gb = 0, wb = 0;
      memcpy(&gb, g + i * (size_t)w, (size_t)w), memcpy(&wb, x + i * (size_t)w, (size_t)w);
      if (gb == wb) continue;
      ft_dtype pt = w == 2 ? av.dtype : w == 4 ? FT_F32 : FT_F64;
      if (ft_dtype_is_complex(av.dtype)) pt = w == 4 ? FT_F32 : FT_F64;
      int eb = pt == FT_F16 ? 5 : pt == FT_BF16 ? 8 : pt == FT_F32 ? 8 : 11;
      int mb = w * 8 - 1 - eb;
      uint64_t em = ((UINT64_C(1) << eb) - 1) << mb, mm = (UINT64_C(1) << mb) - 1;
      bool gn = (gb & em) == em && (gb & mm), wn = (wb & em) == em && (wb & mm);
      if (gn && wn) {
        fprintf(stderr, "nandiag %s %s out%d[%zu] %s: got 0x%llx want 0x%llx\n", rc->name, eng, k, i,
                ft_dtype_name(av.dtype), (unsigned long long)gb, (unsigned long long)wb);
        break;
      }
    }
  }
}

/* Runs j on in[] with every engine and compares with want[]. tol_ent: the
 * manifest entry with primitives and reduction_length. stat_prim: when not
 * NULL, the interpreter's errors are recorded under that primitive. */
static void check_eval(runctx *rc, const ft_jaxpr *j, ft_array **in, int n_in, ft_array **want,
                       int n_want, json_t *tol_ent, long red, bool structural,
                       const char *prefix, const char *stat_prim) {
  char ck[64], why[512];
  const char *prims[64];
  int np = prim_names(tol_ent, prims, 64);
  int n_out = ft_jaxpr_num_outputs(j);
  int need = j->n_const + j->n_in;
  ft_array *alt_in[MAXA] = {0};
  bool any_alt = false;
  for (int i = 0; i < n_in; i++) any_alt |= (alt_in[i] = flushed(rc->ctx, in[i])) != NULL;
  for (int i = 0; i < n_in; i++)
    if (!alt_in[i]) alt_in[i] = in[i];
  /* A reference for single elementwise primitives (where JAX may be the
   * less accurate one). */
  refctx ref = {0};
  bool have_ref = stat_prim && conf_reference(stat_prim, &ref.f1, &ref.f2) && n_out >= 1 &&
                  n_in == (ref.f1 ? 1 : 2) && j->n_const == 0;
  if (have_ref) {
    ref.x = in[0], ref.y = n_in > 1 ? in[1] : NULL;
    for (int i = 0; i < n_in; i++)
      if (ft_array_size(in[i]) != ft_array_size(want[0])) have_ref = false;
  }
  for (size_t e = 0; e < FT_COUNTOF(ENGINES); e++) {
    if (e > 0 && rc->o->interp_only) continue;
    snprintf(ck, sizeof ck, "%s%s", prefix, ENGINES[e].name);
    if (n_in != need || n_out != n_want || n_out > MAXA) {
      snprintf(why, sizeof why, "arity: the jaxpr takes %d arrays and returns %d; JAX gave %d and %d",
               need, n_out, n_in, n_want);
      note(rc, ck, CONF_FAIL, why);
      continue;
    }
    ft_array *out[MAXA] = {0}, *alt[MAXA] = {0};
    ft_ctx_clear_error(rc->ctx);
    if (ENGINES[e].run(rc->ctx, j, n_in, in, n_out, out) != FT_OK) {
      snprintf(why, sizeof why, "evaluation failed: %s", ft_ctx_error(rc->ctx));
      note(rc, ck, CONF_FAIL, why);
      continue;
    }
    if (any_alt && ENGINES[e].run(rc->ctx, j, n_in, alt_in, n_out, alt) != FT_OK)
      memset(alt, 0, sizeof alt);
    why[0] = 0;
    for (int k = 0; k < n_out; k++) {
      conf_tol tol = conf_tolerance(prims, np, red, want[k]->aval.dtype, structural);
      conf_cmp c = conf_compare(out[k], alt[k], want[k], &tol, have_ref && k == 0 ? ref_elem : NULL,
                                &ref);
      if (c.verdict == 2 && !why[0]) snprintf(why, sizeof why, "output %d: %s", k, c.why);
      if (stat_prim && e == 0) {
        conf_pstat *p = pstat(rc->st, stat_prim, want[k]->aval.dtype);
        p->outputs++;
        p->bitwise += c.verdict == 0;
        if (c.max_ulp > p->max_ulp) p->max_ulp = c.max_ulp;
        if (c.max_nrm > p->max_nrm) p->max_nrm = c.max_nrm;
        p->jax_less_accurate += c.jax_less_accurate;
        p->tol = tol;
        if (c.jax_less_accurate) {
          char msg[400];
          snprintf(msg, sizeof msg, "output %d: %d element(s) beyond %g ulp of JAX where JAX is the "
                   "less accurate (long double reference); %s", k, c.jax_less_accurate, tol.ulp,
                   c.jax_note);
          note(rc, "accuracy", CONF_INFO, msg);
        }
      }
    }
    note(rc, ck, why[0] ? CONF_FAIL : CONF_PASS, why);
    if (getenv("FT_CONF_NAN_DIAG")) nan_diag(rc, ENGINES[e].name, out, want, n_out);
    free_arrays(out, n_out), free_arrays(alt, n_out);
  }
  for (int i = 0; i < n_in; i++)
    if (alt_in[i] != in[i]) ft_array_free(alt_in[i]);
}

/* Our transform t of the forward jaxpr j (NULL with the message on ctx). */
static ft_jaxpr *our_transform(ft_ctx *ctx, const char *t, const ft_jaxpr *j, json_t *params) {
  int argnum = 0;
  json_t *an = json_object_get(params, "argnums");
  if (an) argnum = (int)json_integer_value(json_array_get(an, 0));
  json_t *ag = json_object_get(params, "argnum");
  if (ag) argnum = (int)json_integer_value(ag);
  int64_t b = json_integer_value(json_object_get(params, "axis_size"));
  if (!strcmp(t, "grad")) return ft_grad(ctx, j, 1, &argnum, false);
  if (!strcmp(t, "jvp")) return ft_jvp(ctx, j);
  if (!strcmp(t, "vjp")) return ft_vjp_jaxpr(ctx, j);
  if (!strcmp(t, "vmap")) return ft_vmap(ctx, j, 0, NULL, 0, NULL, b);
  if (!strcmp(t, "jacfwd")) return ft_jacfwd(ctx, j, argnum);
  if (!strcmp(t, "jacrev")) return ft_jacrev(ctx, j, argnum);
  if (!strcmp(t, "hessian")) return ft_hessian(ctx, j, argnum);
  ft_jaxpr *g = ft_grad(ctx, j, 1, &argnum, false), *r = NULL;
  if (!g) return NULL;
  if (!strcmp(t, "grad_grad")) r = ft_grad(ctx, g, 1, &argnum, false);
  /* jit is the identity on values: jit_vmap_grad runs vmap(grad) (and the
   * JIT engine, when present, compiles it) */
  else if (!strcmp(t, "vmap_grad") || !strcmp(t, "jit_vmap_grad")) r = ft_vmap(ctx, g, 0, NULL, 0, NULL, b);
  ft_jaxpr_free(g);
  return r;
}

static void run_transform(runctx *rc, const char *t, json_t *tent, const ft_jaxpr *fwd,
                          ft_array **consts, int n_consts) {
  char pre[48], ck[64], why[512];
  conf_tstat *ts = tstat(rc->st, t);
  int f0 = rc->st->checks_fail, k0 = rc->st->checks_known;
  ft_array *tin[MAXA] = {0}, *tout[MAXA] = {0}, *tc[MAXA] = {0};
  int n_tin = 0, n_tout = 0, n_tc = 0;
  long red = (long)json_integer_value(json_object_get(tent, "reduction_length"));
  snprintf(pre, sizeof pre, "%s:", t);
  if (!load_arrays(rc, json_object_get(tent, "consts"), tc, &n_tc) ||
      !load_arrays(rc, json_object_get(tent, "inputs"), tin, &n_tin) ||
      !load_arrays(rc, json_object_get(tent, "outputs"), tout, &n_tout)) {
    snprintf(ck, sizeof ck, "%sload", pre);
    note(rc, ck, CONF_FAIL, "cannot read the transform's arrays");
    goto out;
  }
  /* JAX's own transformed program, in our parser and engines */
  ft_jaxpr *tj = check_text(rc, json_string_value(json_object_get(tent, "jaxpr")), pre);
  if (tj && !bind_subs(rc, tj, tent, pre)) {
    ft_jaxpr_free(tj);
    tj = NULL;
  }
  if (tj && rc->o->roundtrip) {
    ft_array *all[MAXA];
    int n = 0;
    for (int i = 0; i < n_tc && n < MAXA; i++) all[n++] = tc[i];
    for (int i = 0; i < n_tin && n < MAXA; i++) all[n++] = tin[i];
    rt_check(rc, pre, "jax", tj, all, n);
    ft_jaxpr_free(tj);
    tj = NULL;
  }
  if (tj) {
    ft_array *all[MAXA];
    int n = 0;
    for (int i = 0; i < n_tc && n < MAXA; i++) all[n++] = tc[i];
    for (int i = 0; i < n_tin && n < MAXA; i++) all[n++] = tin[i];
    snprintf(pre, sizeof pre, "%s:jax:", t);
    check_eval(rc, tj, all, n, tout, n_tout, tent, red, false, pre, NULL);
    ft_jaxpr_free(tj);
  }
  if (rc->st->checks_fail > f0) ts->jax_fail++;
  else if (rc->st->checks_known > k0) ts->jax_known++;
  else ts->jax_pass++;
  f0 = rc->st->checks_fail, k0 = rc->st->checks_known;
  /* ours */
  snprintf(pre, sizeof pre, "%s:ours:", t);
  if (!fwd) {
    snprintf(ck, sizeof ck, "%sbuild", pre);
    note(rc, ck, CONF_SKIP, "the forward printout does not parse");
    ts->ours_skip++;
    goto out;
  }
  ft_ctx_clear_error(rc->ctx);
  ft_jaxpr *oj = our_transform(rc->ctx, t, fwd, json_object_get(tent, "params"));
  if (!oj) {
    snprintf(ck, sizeof ck, "%sbuild", pre);
    snprintf(why, sizeof why, "%s", ft_ctx_error(rc->ctx));
    bool unsupported = ft_ctx_status(rc->ctx) == FT_ERR_UNSUPPORTED;
    note(rc, ck, unsupported ? CONF_SKIP : CONF_FAIL, why);
    if (unsupported) ts->ours_skip++;
    else if (rc->st->checks_fail > f0) ts->ours_fail++;
    else ts->ours_known++;
    goto out;
  }
  /* Our transforms omit float0 (the tangents of integer and boolean
   * values, which carry no data) from their signatures (frankentrace.h,
   * ft_jvp); JAX's arrays keep them: drop them for our programs. */
  ft_array *all[MAXA], *want[MAXA];
  int n = 0, n_want = 0;
  for (int i = 0; i < n_consts && n < MAXA; i++) all[n++] = consts[i];
  for (int i = 0; i < n_tin && n < MAXA; i++)
    if (ft_array_aval(tin[i]).dtype != FT_FLOAT0) all[n++] = tin[i];
  for (int k = 0; k < n_tout; k++)
    if (ft_array_aval(tout[k]).dtype != FT_FLOAT0) want[n_want++] = tout[k];
  if (rc->o->roundtrip) {
    snprintf(pre, sizeof pre, "%s:", t);
    rt_check(rc, pre, "ours", oj, all, n);
    ft_jaxpr_free(oj);
    goto out;
  }
  check_eval(rc, oj, all, n, want, n_want, tent, red, true, pre, NULL);
  ft_jaxpr_free(oj);
  if (rc->st->checks_fail > f0) ts->ours_fail++;
  else if (rc->st->checks_known > k0) ts->ours_known++;
  else ts->ours_pass++;
out:
  free_arrays(tin, n_tin), free_arrays(tout, n_tout), free_arrays(tc, n_tc);
}

static void see_prims(conf_stats *st, json_t *ent) {
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(ent, "primitives"), i, e) {
    const char *p = json_string_value(e);
    int k = 0;
    while (k < st->n_seen && strcmp(st->seen[k], p)) k++;
    if (k < st->n_seen) continue;
    if (st->n_seen == st->cap_seen) {
      st->cap_seen = st->cap_seen ? 2 * st->cap_seen : 128;
      st->seen = realloc(st->seen, (size_t)st->cap_seen * sizeof *st->seen);
    }
    snprintf(st->seen[st->n_seen++], sizeof st->seen[0], "%s", p);
  }
}

static conf_family *family(conf_stats *st, const char *name) {
  for (int i = 0; i < st->n_fam; i++)
    if (!strcmp(st->fam[i].name, name)) return &st->fam[i];
  if (st->n_fam == (int)FT_COUNTOF(st->fam)) return &st->fam[st->n_fam - 1];
  conf_family *f = &st->fam[st->n_fam++];
  memset(f, 0, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  return f;
}

/* The largest element count of the inputs: an upper bound of any reduction
 * length, for golden cases whose manifest does not give it. */
static long max_input_size(ft_array **in, int n) {
  long m = 1;
  for (int i = 0; i < n; i++)
    if (ft_array_size(in[i]) > m) m = (long)ft_array_size(in[i]);
  return m;
}

static void run_case(runctx *rc, const char *name, json_t *c, bool golden) {
  rc->name = name;
  rc->failed = rc->known = rc->skipped = false;
  known_candidates(rc);
  rc->family = golden ? "golden" : json_string_value(json_object_get(c, "family"));
  rc->group = golden ? name : json_string_value(json_object_get(c, "group"));
  if (!rc->family) rc->family = "other";
  for (int i = 0; i < rc->o->n_skip; i++)
    if (!fnmatch(rc->o->skip[i].case_glob, name, 0)) {
      note(rc, "run", CONF_SKIP, rc->o->skip[i].reason);
      conf_family *f = family(rc->st, rc->family);
      f->cases++, f->pass++, f->with_skips++;
      rc->st->cases++, rc->st->pass++;
      return;
    }
  free(rc->pack);
  rc->pack = NULL;
  if (!golden) {
    char file[256];
    snprintf(file, sizeof file, "%s.npys", name);
    rc->pack = load_text(rc, file, &rc->pack_len);
  }
  ft_array *in[MAXA] = {0}, *want[MAXA] = {0};
  int n_in = 0, n_want = 0, n_consts = 0;
  ft_jaxpr *j = check_text(rc, json_string_value(json_object_get(c, "jaxpr")), "");
  if (j && !bind_subs(rc, j, c, "")) {
    ft_jaxpr_free(j);
    j = NULL;
  }
  bool ok = load_arrays(rc, json_object_get(c, "consts"), in, &n_in);
  n_consts = n_in;
  ok = ok && load_arrays(rc, json_object_get(c, "inputs"), in, &n_in) &&
       load_arrays(rc, json_object_get(c, "outputs"), want, &n_want);
  if (!ok) note(rc, "load", CONF_FAIL, "cannot read the case's arrays");
  if (j && ok && rc->o->roundtrip) {
    rt_check(rc, "", "program", j, in, n_in);
    rt_user u = {rc, ""};
    conf_rt_transforms(rc->ctx, j, in, n_in, rt_note, &u);
  } else if (j && ok) {
    long red = golden ? max_input_size(in, n_in)
                      : (long)json_integer_value(json_object_get(c, "reduction_length"));
    const char *stat = NULL;
    json_t *prims = json_object_get(c, "primitives");
    if (!golden && !strcmp(rc->family, "prim")) stat = rc->group;
    else if (golden && json_array_size(prims) == 1) stat = json_string_value(json_array_get(prims, 0));
    check_eval(rc, j, in, n_in, want, n_want, c, red, false, "eval:", stat);
  }
  const char *t;
  json_t *tent;
  see_prims(rc->st, c);
  json_object_foreach(json_object_get(c, "transforms"), t, tent) {
    see_prims(rc->st, tent);
    run_transform(rc, t, tent, j, in, n_consts);
  }
  ft_jaxpr_free(j);
  free_arrays(in, n_in), free_arrays(want, n_want);
  conf_family *f = family(rc->st, rc->family);
  f->cases++, rc->st->cases++;
  f->with_skips += rc->skipped;
  if (rc->failed) f->fail++, rc->st->fail++;
  else if (rc->known) f->known++, rc->st->known++;
  else f->pass++, rc->st->pass++;
}

static int run_dir(runctx *rc, const char *dir, bool golden) {
  char path[4096];
  snprintf(path, sizeof path, "%s/MANIFEST.json", dir);
  json_error_t err;
  json_t *m = json_load_file(path, 0, &err);
  if (!m) {
    fprintf(stderr, "conformance: cannot read %s: %s (line %d)\n", path, err.text, err.line);
    return -1;
  }
  rc->dir = dir;
  const char *v = json_string_value(json_object_get(m, "jax_version"));
  if (v) snprintf(rc->st->jax_version, sizeof rc->st->jax_version, "%s", v);
  const char *name;
  json_t *c;
  json_object_foreach(json_object_get(m, "cases"), name, c) {
    if (rc->o->only && strncmp(name, rc->o->only, strlen(rc->o->only))) continue;
    run_case(rc, name, c, golden);
  }
  free(rc->pack);
  rc->pack = NULL;
  json_decref(m);
  return 0;
}

int conf_run(const conf_opts *o, conf_stats *st) {
  memset(st, 0, sizeof *st);
  for (size_t e = 0; e < (o->interp_only ? 1 : FT_COUNTOF(ENGINES)); e++)
    st->engines[st->n_engines++] = ENGINES[e].name;
  runctx rc = {.o = o, .st = st, .ctx = ft_ctx_new(NULL)};
  if (!rc.ctx) return -1;
  int r = 0;
  if (o->golden_dir && run_dir(&rc, o->golden_dir, true)) r = -1;
  if (o->conf_dir && run_dir(&rc, o->conf_dir, false)) r = -1;
  for (int i = 0; i < o->n_more; i++)
    if (run_dir(&rc, o->more_dirs[i], false)) r = -1;
  ft_ctx_free(rc.ctx);
  return r;
}

void conf_stats_free(conf_stats *st) {
  free(st->ps);
  free(st->notes);
  free(st->seen);
  memset(st, 0, sizeof *st);
}
