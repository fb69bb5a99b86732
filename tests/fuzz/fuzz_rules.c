/* tests/fuzz/fuzz_rules.c: the e-graph's rule language and term parser
 * (src/egraph/rules.c). The input is rule text, then a line "%%", then
 * terms (one a line). Any input must either fail with a status and a
 * message or parse; parsed rules then run a few bounded iterations on the
 * terms (node, iteration and time limits), which must end in a stop
 * reason, never a crash. */
#include <string.h>

#include "fuzz.h"
#include "frankentrace_egraph.h"

enum { MAX_LEN = 4096 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > MAX_LEN) return 0;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  if (strlen(text) != size) { /* NUL bytes end the text: C strings */
    free(text);
    return 0;
  }
  char *terms = strstr(text, "\n%%\n");
  if (terms) *terms = 0, terms += 4;
  ft_egraph *eg = ft_egraph_new();
  FUZZ_CHECK(eg != NULL, "ft_egraph_new failed");
  ft_egraph_rules *rs = ft_egraph_rules_parse(eg, text, "fuzz.rules");
  if (!rs) {
    FUZZ_CHECK(ft_egraph_status_of(eg) != FT_EGRAPH_OK && ft_egraph_error(eg)[0],
               "rules failed without a status and message");
  } else if (terms) {
    ft_eclass *ids = NULL;
    size_t n = 0;
    ft_egraph_status st = ft_egraph_add_terms(eg, terms, "fuzz.terms", &ids, &n);
    if (st != FT_EGRAPH_OK) {
      FUZZ_CHECK(ft_egraph_error(eg)[0], "terms failed without a message");
    } else {
      ft_egraph_run_opts o = ft_egraph_run_defaults();
      o.iter_limit = 4;
      o.node_limit = 2000;
      o.time_limit = 0.5;
      ft_egraph_report rep;
      memset(&rep, 0, sizeof rep);
      ft_egraph_run(eg, rs, &o, &rep);
      FUZZ_CHECK(ft_egraph_stop_name(rep.stop) != NULL, "run ended without a stop reason");
      ft_egraph_report_free(&rep);
    }
    free(ids);
  }
  ft_egraph_rules_free(rs);
  ft_egraph_free(eg);
  free(text);
  return 0;
}
