/* tests/conformance/test_roundtrip.c: the print -> parse property of issue
 * 16 over every golden, conformance and loop program (JAX's printouts of each
 * function and of each transform JAX captured) and over our transforms of
 * each forward program (jvp, vjp, linearize's two programs, vmap, grad, and
 * the manifest's jacfwd, jacrev, hessian, grad_grad, vmap_grad): printing
 * then parsing gives the same canonical hash, and the re-parsed program run
 * by the interpreter gives bitwise the in-memory program's outputs
 * (conf_roundtrip.c). Fails on any failure the known-failure list does not
 * name. FT_CONF_ONLY=PREFIX runs the cases whose name starts with PREFIX. */
#include <check.h>
#include <stdlib.h>
#include <time.h>

#include "conf.h"

START_TEST(print_parse_roundtrip) {
  const char *root = getenv("FT_FIXTURES");
  ck_assert_msg(root != NULL, "FT_FIXTURES is not set");
  char g[4096], c[4096], l[4096], cp[4096];
  snprintf(g, sizeof g, "%s/golden", root);
  snprintf(c, sizeof c, "%s/conformance", root);
  snprintf(l, sizeof l, "%s/loops", root); /* JAX 0.12's loop transforms: nested ft_out filters */
  snprintf(cp, sizeof cp, "%s/ctlprims", root); /* CustomRoot, generic reduce */
  char rg[4096];
  snprintf(rg, sizeof rg, "%s/ragged", root); /* ragged_dot_general */
  conf_opts o = {.golden_dir = g, .conf_dir = c, .more_dirs = {l, cp, rg}, .n_more = 3,
                 .only = getenv("FT_CONF_ONLY"), .verbose = true, .interp_only = true, .roundtrip = true};
  conf_stats st;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int r = conf_run(&o, &st);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  int rt = 0, rt_fail = 0, rt_skip = 0;
  for (int i = 0; i < st.n_notes; i++)
    if (!strncmp(st.notes[i].check, "roundtrip:", 10)) {
      rt_fail += st.notes[i].status == CONF_FAIL;
      rt_skip += st.notes[i].status == CONF_SKIP;
    }
  rt = st.checks;
  fprintf(stderr,
          "roundtrip: %d cases, %d checks (%d fail, %d known, %d skipped: %d of them transforms not "
          "built); %d roundtrip failures (%.1f s)\n",
          st.cases, rt, st.checks_fail, st.checks_known, st.checks_skip, rt_skip, rt_fail,
          (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
  if (getenv("FT_RT_VERBOSE"))
    for (int i = 0; i < st.n_notes; i++)
      fprintf(stderr, "%s %s %s: %s\n", st.notes[i].status == CONF_KNOWN ? "KNOWN" : st.notes[i].status == CONF_SKIP ? "SKIP" : "NOTE",
              st.notes[i].case_name, st.notes[i].check, st.notes[i].reason);
  int fails = st.fail, cases = st.cases;
  conf_stats_free(&st);
  ck_assert_int_eq(r, 0);
  if (!o.only) ck_assert_int_ge(cases, 1400);
  ck_assert_msg(fails == 0, "%d cases fail (see the FAIL lines above)", fails);
}
END_TEST

int main(void) {
  Suite *s = suite_create("roundtrip");
  TCase *t = tcase_create("all");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, print_parse_roundtrip);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
