/* src/ir/dot.c: ft_jaxpr_dot — a Graphviz picture of a jaxpr: inputs,
 * constants, one box per equation, outputs, and an edge per use. Sub-jaxprs
 * of control flow are drawn as clusters inside their equation's cluster. */
#include <string.h>

#include "ir.h"

/* Node ids: v<id> for a variable's producer (input/const node or the
 * equation's node), e<k> for equations (numbered across sub-jaxprs). */
typedef struct dctx {
  ft_buf b;
  int next_eqn, next_lit, next_cluster;
  int *producer;        /* var id -> equation node number, or -1 for an input */
  uint32_t n_ids;
} dctx;

static void quoted(ft_buf *b, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') ft_buf_putn(b, "\\", 1);
    ft_buf_putn(b, s, 1);
  }
}

static void atom_ref(dctx *d, const ft_var *v, const char *indent) {
  if (v->kind == FT_LIT) {
    int k = d->next_lit++;
    ft_buf_printf(&d->b, "%sl%d [shape=plaintext label=\"", indent, k);
    ft_buf lit = {0};
    ft_print_lit_value(&lit, v);
    quoted(&d->b, lit.p ? lit.p : "");
    free(lit.p);
    ft_buf_printf(&d->b, "\"];\n");
    ft_buf_printf(&d->b, "%sl%d", indent, k);
    return;
  }
  int pr = v->id < d->n_ids ? d->producer[v->id] : -1;
  if (pr >= 0) ft_buf_printf(&d->b, "%se%d", indent, pr);
  else ft_buf_printf(&d->b, "%sv%u", indent, v->id);
}

static void var_node(dctx *d, const ft_var *v, const char *kind) {
  char av[128];
  ft_aval_str(&v->aval, av, sizeof av);
  ft_buf_printf(&d->b, "  v%u [shape=ellipse label=\"%s %s\"];\n", v->id, kind, av);
  if (v->id < d->n_ids) d->producer[v->id] = -1;
}

static void draw(dctx *d, const ft_jaxpr *j, const char *prefix);

static void draw_eqn(dctx *d, const ft_eqn *e, const char *prefix) {
  int k = d->next_eqn++;
  const ft_prim_info *pi = ft_prim_get(e->prim);
  ft_buf_printf(&d->b, "  e%d [shape=box label=\"%s", k, pi->name);
  for (int i = 0; i < e->n_out; i++) {
    char av[128];
    ft_buf_printf(&d->b, "%s%s", i ? ", " : "\\n", ft_aval_str(&e->out[i]->aval, av, sizeof av));
  }
  ft_buf_puts(&d->b, "\"];\n");
  for (int i = 0; i < e->n_in; i++) {
    atom_ref(d, e->in[i], "  ");
    ft_buf_printf(&d->b, " -> e%d;\n", k);
  }
  for (int i = 0; i < e->n_out; i++)
    if (e->out[i]->id < d->n_ids) d->producer[e->out[i]->id] = k;
  for (int p = 0; p < pi->n_params; p++) {
    const ft_pval *v = &e->params[p];
    int n = v->tag == FT_PV_TUPLE ? v->n : 1;
    for (int i = 0; i < n; i++) {
      const ft_pval *x = v->tag == FT_PV_TUPLE ? &v->u.items[i] : v;
      if (x->tag != FT_PV_JAXPR) continue;
      ft_buf_printf(&d->b, "  subgraph cluster_%d {\n  label=\"%s %s\";\n", d->next_cluster++, pi->name,
                    pi->params[p].name);
      draw(d, x->u.jaxpr, prefix);
      ft_buf_puts(&d->b, "  }\n");
    }
  }
}

static void draw(dctx *d, const ft_jaxpr *j, const char *prefix) {
  for (int i = 0; i < j->n_const; i++) var_node(d, j->constvars[i], "const");
  for (int i = 0; i < j->n_in; i++) var_node(d, j->invars[i], "in");
  for (int i = 0; i < j->n_eqn; i++) draw_eqn(d, &j->eqns[i], prefix);
  for (int i = 0; i < j->n_out; i++) {
    int k = d->next_eqn++;
    ft_buf_printf(&d->b, "  e%d [shape=doublecircle label=\"out%d\"];\n", k, i);
    atom_ref(d, j->outvars[i], "  ");
    ft_buf_printf(&d->b, " -> e%d;\n", k);
  }
}

char *ft_jaxpr_dot(ft_ctx *ctx, const ft_jaxpr *j) {
  if (!j) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "ft_jaxpr_dot: NULL jaxpr");
    return NULL;
  }
  dctx d = {0};
  d.n_ids = ft_arena_num_var_ids(j->arena);
  d.producer = malloc(sizeof *d.producer * (d.n_ids ? d.n_ids : 1));
  if (!d.producer) {
    ft_set_error(ctx, FT_ERR_NOMEM, "ft_jaxpr_dot: out of memory");
    return NULL;
  }
  for (uint32_t i = 0; i < d.n_ids; i++) d.producer[i] = -1;
  ft_buf_puts(&d.b, "digraph jaxpr {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n");
  draw(&d, j, "");
  ft_buf_puts(&d.b, "}\n");
  free(d.producer);
  if (d.b.failed) {
    free(d.b.p);
    ft_set_error(ctx, FT_ERR_NOMEM, "ft_jaxpr_dot: out of memory");
    return NULL;
  }
  return d.b.p;
}
