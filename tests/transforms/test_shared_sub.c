/* tests/transforms/test_shared_sub.c: transforms of programs whose
 * sub-jaxprs are shared or named (issues 16 and 28).
 *
 *  - fixtures/shared_sub (JAX 0.12, tools/oracle/gen_shared_sub.py): one
 *    hoisted jaxpr called at several sites with other operands, one name
 *    (`_where`, `_resize`) for jaxprs of different shapes, inline and hoisted
 *    definitions mixed, scan bodies beside `_linspace`. The forward program,
 *    jvp (all tangents one) and grad (with has_aux where the program has
 *    more outputs) give JAX's numbers: before the fix, grad of
 *    resize_two_shapes gave every element wrong and a scalar aux, with no
 *    error.
 *  - the property of issue 16 over every golden and shared_sub program and
 *    its jvp and grad: print then parse gives the same canonical hash, and
 *    the re-parsed program's outputs are bitwise the in-memory one's.
 *  - a transform reached through a different arena (the program deep-copied
 *    into a fresh one, as a C caller's jaxpr is) gives bitwise the same. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "../ir/text_util.h"

static ft_ctx *C;
static void setup(void) { C = ft_ctx_new(NULL); }
static void teardown(void) { ft_ctx_free(C); }

static ft_jaxpr *load(const char *path) {
  size_t n;
  char *text = tu_slurp(path, &n);
  ck_assert_msg(text != NULL, "cannot read %s", path);
  ft_jaxpr *j = ft_parse(C, text, n, path);
  free(text);
  ck_assert_msg(j != NULL, "%s", ft_ctx_error(C));
  return j;
}

static ft_array *npy(const char *dir, const char *name, const char *what, int k) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.%s%d.npy", dir, name, what, k);
  ft_array *a = ft_npy_read(C, path);
  ck_assert_msg(a != NULL, "%s: %s", path, ft_ctx_error(C));
  return a;
}

static void run(const ft_jaxpr *j, int n_in, ft_array *const *in, ft_array **out) {
  ft_status st = ft_eval(C, j, n_in, (const ft_array *const *)in, ft_jaxpr_num_outputs(j), out);
  ck_assert_msg(st == FT_OK, "eval: %s", ft_ctx_error(C));
}

static void free_all(int n, ft_array **a) {
  for (int i = 0; i < n; i++) ft_array_free(a[i]);
}

/* print -> parse keeps the canonical hash, and the re-parsed program gives
 * bitwise the same outputs on in. */
static void roundtrip(const char *what, const ft_jaxpr *j, int n_in, ft_array *const *in) {
  char *text = ft_jaxpr_print(C, j);
  ck_assert_ptr_nonnull(text);
  ft_jaxpr *k = ft_parse(C, text, strlen(text), what);
  ck_assert_msg(k != NULL, "%s: the printout does not parse back: %s\n%s", what, ft_ctx_error(C), text);
  uint8_t h1[16], h2[16];
  ft_jaxpr_hash(j, h1);
  ft_jaxpr_hash(k, h2);
  ck_assert_msg(!memcmp(h1, h2, 16), "%s: print -> parse changes the canonical hash", what);
  int no = ft_jaxpr_num_outputs(j);
  ft_array *a[64], *b[64];
  ck_assert_int_le(no, 64);
  run(j, n_in, in, a);
  run(k, n_in, in, b);
  for (int i = 0; i < no; i++)
    ck_assert_msg(ft_array_equal_bits(a[i], b[i]), "%s: output %d of the re-parsed program differs", what, i);
  free_all(no, a);
  free_all(no, b);
  ft_jaxpr_free(k);
  free(text);
}

/* The JIT gives the interpreter's outputs bit for bit (DESIGN.md §10):
 * compiles j, runs it on in and compares with ref (the interpreter's). */
static void jit_matches(const char *what, const ft_jaxpr *j, int n_in, ft_array *const *in,
                        ft_array *const *ref) {
  ft_fn *fn = ft_jit(C, j, NULL);
  ck_assert_msg(fn != NULL, "%s: ft_jit: %s", what, ft_ctx_error(C));
  int no = ft_jaxpr_num_outputs(j);
  ft_array *o[64];
  ck_assert_int_le(no, 64);
  ck_assert_msg(ft_call(fn, n_in, (const ft_array *const *)in, no, o) == FT_OK, "%s: ft_call: %s", what, ft_ctx_error(C));
  for (int k = 0; k < no; k++)
    ck_assert_msg(ft_array_equal_bits(o[k], ref[k]), "%s: output %d of the JIT differs from the interpreter's",
                  what, k);
  free_all(no, o);
  ft_fn_free(fn);
}

/* got is JAX's want up to float32 evaluation differences (XLA's and this
 * project's math libraries, summation order): same shape, every element
 * within 2e-5 + 2e-4 |want|. */
static void close_to(const char *what, int k, const ft_array *got, const ft_array *want) {
  ft_aval ga = ft_array_aval(got), wa = ft_array_aval(want);
  ck_assert_msg(ga.rank == wa.rank, "%s %d: rank %d, JAX %d", what, k, ga.rank, wa.rank);
  for (int d = 0; d < ga.rank; d++)
    ck_assert_msg(ga.dims[d] == wa.dims[d], "%s %d: dim %d is %lld, JAX %lld", what, k, d,
                  (long long)ga.dims[d], (long long)wa.dims[d]);
  ck_assert_int_eq(ga.dtype, FT_F32);
  ck_assert_int_eq(wa.dtype, FT_F32);
  const float *g = ft_array_data(got), *w = ft_array_data(want);
  size_t n = ft_array_nbytes(got) / sizeof(float);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(fabsf(g[i] - w[i]) <= 2e-5f + 2e-4f * fabsf(w[i]), "%s %d[%zu]: %.9g, JAX %.9g", what, k,
                  i, (double)g[i], (double)w[i]);
}

#define SHARED FT_FIXTURES "/shared_sub"

static const struct {
  const char *name;
  int n_in, n_out;
  bool has_aux;
} cases[] = {
    {"resize_two_shapes", 1, 2, true},   {"resize_mean_target", 1, 2, true},
    {"linspace_scan_body", 1, 1, false}, {"linspace_scan_inline", 1, 1, false},
    {"where_helpers", 1, 2, true},       {"nn_helpers", 1, 2, true},
    {"jit_twice_big", 1, 1, false},      {"scatter_shared_update", 1, 1, false},
    {"nn_softmax_onehot", 1, 2, true},   {"where_in_scan", 1, 2, true},
    {"linspace_two_shapes", 1, 1, false},
};

static ft_array *ones_like(const ft_array *a) {
  ft_aval av = ft_array_aval(a);
  ft_array *o = ft_array_new(C, av.dtype, av.rank, av.dims);
  ck_assert_ptr_nonnull(o);
  float *p = ft_array_data_mut(o);
  for (size_t i = 0; i < ft_array_nbytes(o) / sizeof(float); i++) p[i] = 1.0f;
  return o;
}

START_TEST(matches_jax) {
  const char *name = cases[_i].name;
  int n_in = cases[_i].n_in, n_out = cases[_i].n_out;
  char path[512];
  snprintf(path, sizeof path, "%s/%s.jaxpr", SHARED, name);
  ft_jaxpr *j = load(path);
  ft_array *in[8], *out[16];
  for (int i = 0; i < n_in; i++) in[i] = npy(SHARED, name, "in", i);
  ck_assert_int_eq(ft_jaxpr_num_outputs(j), n_out);
  run(j, n_in, in, out);
  for (int k = 0; k < n_out; k++) {
    ft_array *w = npy(SHARED, name, "out", k);
    close_to("forward", k, out[k], w);
    ft_array_free(w);
  }
  jit_matches("forward", j, n_in, in, out);
  free_all(n_out, out);
  roundtrip(name, j, n_in, in);

  /* jvp: (x, t) -> (y..., dy...) */
  ft_jaxpr *jv = ft_jvp(C, j);
  ck_assert_msg(jv != NULL, "jvp: %s", ft_ctx_error(C));
  ft_array *jin[16];
  for (int i = 0; i < n_in; i++) jin[i] = in[i], jin[n_in + i] = ones_like(in[i]);
  ck_assert_int_eq(ft_jaxpr_num_outputs(jv), 2 * n_out);
  run(jv, 2 * n_in, jin, out);
  for (int k = 0; k < n_out; k++) {
    ft_array *w = npy(SHARED, name, "jvp", k);
    close_to("jvp", k, out[n_out + k], w);
    ft_array_free(w);
  }
  jit_matches("jvp", jv, 2 * n_in, jin, out);
  free_all(2 * n_out, out);
  roundtrip("jvp", jv, 2 * n_in, jin);

  /* grad (has_aux): x -> (dL/dx, aux...) */
  int argnum = 0;
  ft_jaxpr *g = ft_grad(C, j, 1, &argnum, cases[_i].has_aux);
  ck_assert_msg(g != NULL, "grad: %s", ft_ctx_error(C));
  int ng = ft_jaxpr_num_outputs(g);
  ck_assert_int_eq(ng, n_out);
  run(g, n_in, in, out);
  for (int k = 0; k < ng; k++) {
    ft_array *w = npy(SHARED, name, "grad", k);
    close_to(k ? "aux" : "grad", k, out[k], w);
    ft_array_free(w);
  }
  jit_matches("grad", g, n_in, in, out);
  free_all(ng, out);
  roundtrip("grad", g, n_in, in);

  for (int i = 0; i < n_in; i++) ft_array_free(jin[n_in + i]);
  free_all(n_in, in);
  ft_jaxpr_free(g);
  ft_jaxpr_free(jv);
  ft_jaxpr_free(j);
}
END_TEST

/* A jaxpr read twice gives two arenas; the grad of one, transposed against
 * the other's ids, was where the maps mixed. Re-parsing the printout of
 * the grad (a new arena whose ids are dense again) and differentiating
 * that again (grad of the grad's first output summed: second order through
 * shared jits) must agree bitwise with the same done in memory. */
START_TEST(second_order_through_shared_jits) {
  ft_jaxpr *j = load(SHARED "/jit_twice_big.jaxpr");
  ft_array *in = npy(SHARED, "jit_twice_big", "in", 0);
  ft_jaxpr *jv = ft_jvp(C, j);
  ck_assert_ptr_nonnull(jv);
  char *text = ft_jaxpr_print(C, jv);
  ft_jaxpr *jv2 = ft_parse(C, text, strlen(text), "jvp");
  ck_assert_msg(jv2 != NULL, "%s", ft_ctx_error(C));
  ft_jaxpr *a = ft_jvp(C, jv), *b = ft_jvp(C, jv2);
  ck_assert_msg(a && b, "%s", ft_ctx_error(C));
  uint8_t ha[16], hb[16];
  ft_jaxpr_hash(a, ha);
  ft_jaxpr_hash(b, hb);
  ck_assert_msg(!memcmp(ha, hb, 16), "jvp of the re-parsed jvp is another program");
  ft_array *t = ones_like(in), *ins[4] = {in, t, t, t}, *oa[8], *ob[8];
  run(a, 4, ins, oa);
  run(b, 4, ins, ob);
  for (int k = 0; k < ft_jaxpr_num_outputs(a); k++) ck_assert(ft_array_equal_bits(oa[k], ob[k]));
  free_all(ft_jaxpr_num_outputs(a), oa);
  free_all(ft_jaxpr_num_outputs(b), ob);
  ft_array_free(t);
  ft_array_free(in);
  free(text);
  ft_jaxpr_free(a), ft_jaxpr_free(b), ft_jaxpr_free(jv2), ft_jaxpr_free(jv), ft_jaxpr_free(j);
}
END_TEST

/* Every golden program (JAX 0.12 printouts with their inputs) and its jvp:
 * print -> parse keeps the hash and the outputs, bit for bit. */
START_TEST(golden_and_jvp_roundtrip) {
  int n, checked = 0;
  char **files = tu_list(FT_FIXTURES "/golden", &n);
  ck_assert_int_ge(n, 100);
  for (int f = 0; f < n; f++) {
    const char *base = strrchr(files[f], '/') + 1;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(strlen(base) - 6), base);
    ft_jaxpr *j = load(files[f]);
    int ni = ft_jaxpr_num_inputs(j);
    ft_array *in[32] = {0};
    bool have = ni <= 16;
    for (int i = 0; have && i < ni; i++) {
      char path[512];
      snprintf(path, sizeof path, "%s/golden/%s.in%d.npy", FT_FIXTURES, name, i);
      FILE *fh = fopen(path, "rb");
      if (!fh) have = false;
      else fclose(fh), in[i] = npy(FT_FIXTURES "/golden", name, "in", i);
    }
    ft_array *probe[64];
    int no = ft_jaxpr_num_outputs(j);
    bool runs = have && no <= 64 && ft_eval(C, j, ni, (const ft_array *const *)in, no, probe) == FT_OK;
    if (runs) free_all(no, probe);
    if (runs) {
      roundtrip(name, j, ni, in);
      ft_jaxpr *jv = ft_jvp(C, j);
      if (jv && ft_jaxpr_num_inputs(jv) <= 32) {
        int nj = ft_jaxpr_num_inputs(jv);
        ft_array *jin[32];
        for (int i = 0; i < nj; i++) {
          ft_aval av;
          ft_jaxpr_input_aval(jv, i, &av);
          jin[i] = i < ni ? in[i] : ft_array_new(C, av.dtype, av.rank, av.dims);
          if (i >= ni) memset(ft_array_data_mut(jin[i]), 0, ft_array_nbytes(jin[i]));
        }
        roundtrip("jvp", jv, nj, jin);
        for (int i = ni; i < nj; i++) ft_array_free(jin[i]);
        checked++;
      }
      ft_ctx_clear_error(C);
      ft_jaxpr_free(jv);
    }
    ft_ctx_clear_error(C);
    for (int i = 0; i < ni && i < 32; i++) ft_array_free(in[i]);
    ft_jaxpr_free(j);
  }
  tu_free_list(files, n);
  ck_assert_int_ge(checked, 60);
}
END_TEST

/* Two programs that differ only in which of two hoisted definitions each
 * call site uses must print (and hash) differently: the printer gives every
 * hoisted jaxpr its own name (JAX's `_where, _where1, _where2`, not
 * `_where1` twice). */
START_TEST(hoisted_names_are_unique) {
  ft_jaxpr *j = load(SHARED "/resize_two_shapes.jaxpr");
  char *text = ft_jaxpr_print(C, j);
  static const char *names[] = {"let _where = ", "let _where1 = ", "let _where2 = ", "let _where3 = ",
                                "let _resize = ", "let _resize1 = "};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *p = strstr(text, names[i]);
    ck_assert_msg(p && !strstr(p + 1, names[i]), "'%s' is not printed exactly once", names[i]);
  }
  /* names the parser must take back: a transformed jit and a leading digit */
  const char *odd = "let 3d = { lambda ; a:f32[]. let b:f32[] = sin a in (b,) } in\n"
                    "{ lambda ; c:f32[]. let\n"
                    "    d:f32[] = jit[name=3d jaxpr=3d] c\n"
                    "    e:f32[] = jit[name=3d jaxpr=3d] d\n"
                    "  in (e,) }\n";
  ft_jaxpr *k = ft_parse(C, odd, strlen(odd), "odd");
  ck_assert_msg(k != NULL, "%s", ft_ctx_error(C));
  char *t2 = ft_jaxpr_print(C, k);
  ck_assert_msg(!strcmp(t2, "let 3d = { lambda ; a:f32[]. let b:f32[] = sin a in (b,) } in\n"
                            "{ lambda ; c:f32[]. let\n"
                            "    d:f32[] = jit[name=3d jaxpr=3d] c\n"
                            "    e:f32[] = jit[name=3d jaxpr=3d] d\n"
                            "  in (e,) }"),
                "%s", t2);
  free(t2), free(text);
  ft_jaxpr_free(k), ft_jaxpr_free(j);
}
END_TEST

/* has_aux through every entry point (issue 28): `ftc transform` with
 * grad(f, has_aux=True) and value_and_grad (interpreter), the same under
 * jit (ft_jit: bitwise the interpreter's files), and `ftc grad --has-aux`
 * (its printed summary): the aux outputs keep JAX's shapes and values. */
static ft_array *read_out(const char *dir, int k) {
  char path[600];
  snprintf(path, sizeof path, "%s/out%d.npy", dir, k);
  ft_array *a = ft_npy_read(C, path);
  ck_assert_msg(a != NULL, "%s: %s", path, ft_ctx_error(C));
  return a;
}

static void ftc(const char *args) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s >/dev/null", FTC, args);
  ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

START_TEST(has_aux_every_entry_point) {
  if (!cases[_i].has_aux) return;
  const char *name = cases[_i].name;
  char tmpl[] = "/tmp/ft_has_aux_XXXXXX", args[1600], d_int[700], d_jit[700], d_vg[700];
  ck_assert_ptr_nonnull(mkdtemp(tmpl));
  snprintf(d_int, sizeof d_int, "%s/interp", tmpl);
  snprintf(d_jit, sizeof d_jit, "%s/jit", tmpl);
  snprintf(d_vg, sizeof d_vg, "%s/vg", tmpl);
  const char *exprs[3] = {"grad(f, has_aux=True)", "jit(grad(f, has_aux=True))",
                          "value_and_grad(f, has_aux=True)"};
  const char *dirs[3] = {d_int, d_jit, d_vg};
  for (int r = 0; r < 3; r++) {
    snprintf(args, sizeof args, "transform %s/%s.jaxpr '%s' --run --in %s/%s.in0.npy --out-dir %s --quiet", SHARED,
             name, exprs[r], SHARED, name, dirs[r]);
    ftc(args);
  }
  int n_out = cases[_i].n_out;
  for (int k = 0; k < n_out; k++) {
    ft_array *w = npy(SHARED, name, "grad", k), *a = read_out(d_int, k), *b = read_out(d_jit, k);
    close_to(k ? "ftc transform aux" : "ftc transform grad", k, a, w);
    ck_assert_msg(ft_array_equal_bits(a, b), "output %d: jit(grad) differs from grad's bits", k);
    /* value_and_grad: (value, aux..., grad) */
    ft_array *v = read_out(d_vg, k ? k : n_out);
    ck_assert_msg(ft_array_equal_bits(a, v), "value_and_grad output %d is not grad's", k ? k : n_out);
    ft_array_free(v), ft_array_free(w), ft_array_free(a), ft_array_free(b);
  }
  for (int k = 0; k < n_out; k++) {
    ft_array *w = npy(SHARED, name, "out", k), *v = read_out(d_vg, k);
    close_to("ftc transform value_and_grad", k, v, w);
    ft_array_free(v), ft_array_free(w);
  }
  /* ftc grad --has-aux: the summary of each output, "outK: f32[dims] = [v, ...]" */
  char cmd[1600];
  snprintf(cmd, sizeof cmd, "%s grad %s/%s.jaxpr --has-aux --run --in %s/%s.in0.npy --quiet", FTC, SHARED, name,
           SHARED, name);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  char *line = NULL;
  size_t cap = 0;
  int seen = 0;
  while (getline(&line, &cap, p) > 0) {
    int k;
    if (sscanf(line, "out%d:", &k) != 1 || k < 0 || k >= n_out) continue;
    ft_array *w = npy(SHARED, name, "grad", k);
    ft_aval wa = ft_array_aval(w);
    char want[256];
    int o = snprintf(want, sizeof want, "out%d: f32[", k);
    for (int d = 0; d < wa.rank; d++) o += snprintf(want + o, sizeof want - (size_t)o, "%s%lld", d ? "," : "", (long long)wa.dims[d]);
    snprintf(want + o, sizeof want - (size_t)o, "]");
    ck_assert_msg(!strncmp(line, want, strlen(want)), "ftc grad --has-aux: '%.60s', JAX's shape is '%s'", line, want);
    const char *q = strchr(line, '[');
    q = q ? strchr(q + 1, '[') : NULL;
    ck_assert_ptr_nonnull(q);
    const float *wv = ft_array_data(w);
    size_t n = ft_array_nbytes(w) / sizeof(float);
    for (size_t i = 0; i < n && i < 64 && q && *q != ']'; i++) {
      char *end;
      float g = strtof(q + 1, &end);
      ck_assert_msg(end != q + 1, "ftc grad --has-aux: no number at '%.20s'", q + 1);
      ck_assert_msg(fabsf(g - wv[i]) <= 2e-5f + 2e-4f * fabsf(wv[i]), "ftc grad --has-aux out%d[%zu]: %.9g, JAX %.9g",
                    k, i, (double)g, (double)wv[i]);
      q = strchr(end, ',');
    }
    ft_array_free(w);
    seen++;
  }
  free(line);
  ck_assert_int_eq(pclose(p), 0);
  ck_assert_int_eq(seen, n_out);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpl);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Every printout of fixtures/shared_sub, those whose sub-jaxprs have
 * constvars (functions closing over arrays: hoisted, inline and nested
 * jits, custom_jvp/vjp, cond branches, scan and while bodies) included:
 * `ftc print` writes JAX 0.12's text byte for byte, and it parses back to
 * the same canonical hash. */
START_TEST(print_matches_jax) {
  int n, consts = 0;
  char **files = tu_list(SHARED, &n);
  ck_assert_int_ge(n, 21);
  for (int f = 0; f < n; f++) {
    size_t len = 0;
    char *want = tu_slurp(files[f], &len);
    ft_jaxpr *j = load(files[f]);
    char *got = ft_jaxpr_print(C, j);
    ck_assert_msg(len > 0 && strlen(got) == len - 1 && !memcmp(got, want, len - 1),
                  "%s: the printout is not JAX's:\n%s", files[f], got);
    ft_jaxpr *k = ft_parse(C, got, strlen(got), files[f]);
    ck_assert_msg(k != NULL, "%s", ft_ctx_error(C));
    uint8_t h1[16], h2[16];
    ft_jaxpr_hash(j, h1);
    ft_jaxpr_hash(k, h2);
    ck_assert_msg(!memcmp(h1, h2, 16), "%s: print -> parse changes the hash", files[f]);
    consts += strstr(files[f], "/consts_") != NULL;
    ft_jaxpr_free(k), ft_jaxpr_free(j);
    free(got), free(want);
  }
  ck_assert_int_eq(consts, 10);
  tu_free_list(files, n);
}
END_TEST

int main(void) {
  Suite *s = suite_create("shared_sub");
  TCase *t = tcase_create("all");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 600);
  tcase_add_loop_test(t, matches_jax, 0, (int)(sizeof cases / sizeof *cases));
  tcase_add_loop_test(t, has_aux_every_entry_point, 0, (int)(sizeof cases / sizeof *cases));
  tcase_add_test(t, second_order_through_shared_jits);
  tcase_add_test(t, golden_and_jvp_roundtrip);
  tcase_add_test(t, hoisted_names_are_unique);
  tcase_add_test(t, print_matches_jax);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
