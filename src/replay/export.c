/* src/replay/export.c: renderings of a ledger for people and scripts: the
 * records as a JSON array, a Graphviz graph of records and the objects that
 * flow between them, and a self-contained HTML page (an SVG of the chain,
 * each step's IR before and after, the rules that fired). */
#include <string.h>

#include "replay/replay.h"

#define SVG_MAX 400         /* records drawn in the picture */
#define SHOW_TEXT_MAX 65536 /* stored objects shown inline up to this size */

/* Text made safe for HTML/XML content and attributes. */
static void sb_esc(ft_buf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    switch (s[i]) {
      case '<': ft_buf_putn(b, "&lt;", 4); break;
      case '>': ft_buf_putn(b, "&gt;", 4); break;
      case '&': ft_buf_putn(b, "&amp;", 5); break;
      case '"': ft_buf_putn(b, "&quot;", 6); break;
      default: ft_buf_putn(b, s + i, 1);
    }
  }
}

/* Text made safe inside a DOT double-quoted string. */
static void sb_dot(ft_buf *b, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') ft_buf_putn(b, "\\", 1);
    if (*s == '\n') ft_buf_putn(b, "\\n", 2);
    else ft_buf_putn(b, s, 1);
  }
}

static const char *rec_str(const json_t *rec, const char *key) {
  const char *s = json_string_value(json_object_get(rec, key));
  return s ? s : "";
}

static const char *kind_color(const char *kind) {
  static const struct { const char *k, *c; } colors[] = {
      {"trace", "#dbeafe"},   {"parse", "#e0e7ff"}, {"transform", "#dcfce7"},
      {"optimize", "#fef9c3"}, {"compile", "#fde68a"}, {"call", "#fce7f3"},
      {"guard", "#fee2e2"}};
  for (size_t i = 0; i < sizeof colors / sizeof colors[0]; i++)
    if (!strcmp(kind, colors[i].k)) return colors[i].c;
  return "#eeeeee";
}

static void export_dot(ft_buf *b, const json_t *recs) {
  ft_buf_printf(b, "digraph ledger {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
  json_t *seen = json_object();
  size_t i, j;
  json_t *rec, *o;
  json_array_foreach(recs, i, rec) {
    long long seq = (long long)json_integer_value(json_object_get(rec, "seq"));
    ft_buf_printf(b, "  r%lld [shape=box, style=filled, fillcolor=\"%s\", label=\"#%lld ", seq,
              kind_color(rec_str(rec, "kind")), seq);
    sb_dot(b, rec_str(rec, "kind"));
    ft_buf_printf(b, "\\n");
    sb_dot(b, rec_str(rec, "op"));
    ft_buf_printf(b, "\"];\n");
    if (i) ft_buf_printf(b, "  r%lld -> r%lld [style=dotted, arrowhead=none];\n", seq - 1, seq);
    for (int io = 0; io < 2; io++) {
      json_array_foreach(json_object_get(rec, io ? "outputs" : "inputs"), j, o) {
        const char *h = rec_str(o, "hash");
        if (!json_object_get(seen, h)) {
          json_object_set_new(seen, h, json_true());
          ft_buf_printf(b, "  h%s [shape=ellipse, label=\"", h);
          if (json_object_get(o, "name")) {
            sb_dot(b, rec_str(o, "name"));
            ft_buf_printf(b, "\\n");
          }
          ft_buf_printf(b, "%.8s\\n%lld B\"];\n", h, (long long)json_integer_value(json_object_get(o, "size")));
        }
        if (io) ft_buf_printf(b, "  r%lld -> h%s;\n", seq, h);
        else ft_buf_printf(b, "  h%s -> r%lld;\n", h, seq);
      }
    }
  }
  ft_buf_printf(b, "}\n");
  json_decref(seen);
}

/* The chain as SVG: a box per record, dotted chain links, and arcs on the
 * right from the record that produced an object to each record using it. */
static void export_svg(ft_buf *b, const json_t *recs) {
  size_t n = json_array_size(recs);
  if (n > SVG_MAX) n = SVG_MAX;
  int w = 760, bh = 44, gap = 26, x = 20, bw = 300;
  int h = 20 + (int)n * (bh + gap);
  ft_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"Helvetica,Arial,sans-serif\" font-size=\"12\">\n"
               "<defs><marker id=\"ah\" markerWidth=\"8\" markerHeight=\"8\" refX=\"7\" refY=\"4\" "
               "orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#555\"/></marker></defs>\n",
            w, h);
  json_t *producer = json_object();
  for (size_t i = 0; i < n; i++) {
    const json_t *rec = json_array_get(recs, i);
    long long seq = (long long)json_integer_value(json_object_get(rec, "seq"));
    int y = 20 + (int)i * (bh + gap);
    if (i)
      ft_buf_printf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\" "
                   "stroke-dasharray=\"3,3\" marker-end=\"url(#ah)\"/>\n",
                x + bw / 2, y - gap, x + bw / 2, y);
    /* Data flow: an input some earlier record produced. */
    size_t j;
    json_t *o;
    json_array_foreach(json_object_get(rec, "inputs"), j, o) {
      json_t *p = json_object_get(producer, rec_str(o, "hash"));
      if (!p) continue;
      int from = (int)json_integer_value(p), y0 = 20 + from * (bh + gap) + bh / 2;
      int y1 = y + bh / 2, bulge = x + bw + 30 + ((int)i - from) * 12;
      if (bulge > w - 10) bulge = w - 10;
      ft_buf_printf(b, "<path d=\"M%d,%d C%d,%d %d,%d %d,%d\" fill=\"none\" stroke=\"#2563eb\" "
                   "stroke-width=\"1.2\" marker-end=\"url(#ah)\"/>\n",
                x + bw, y0, bulge, y0, bulge, y1, x + bw, y1);
    }
    json_array_foreach(json_object_get(rec, "outputs"), j, o) {
      json_object_set_new(producer, rec_str(o, "hash"), json_integer((json_int_t)i));
    }
    ft_buf_printf(b, "<a href=\"#r%lld\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"6\" "
                 "fill=\"%s\" stroke=\"#444\"/>\n<text x=\"%d\" y=\"%d\"><tspan font-weight=\"bold\">#%lld ",
              seq, x, y, bw, bh, kind_color(rec_str(rec, "kind")), x + 10, y + 18, seq);
    sb_esc(b, rec_str(rec, "kind"), strlen(rec_str(rec, "kind")));
    ft_buf_printf(b, "</tspan> ");
    sb_esc(b, rec_str(rec, "op"), strlen(rec_str(rec, "op")));
    ft_buf_printf(b, "</text><text x=\"%d\" y=\"%d\" fill=\"#555\" font-size=\"10\">%.12s</text></a>\n",
              x + 10, y + 34, rec_str(rec, "sum"));
  }
  json_decref(producer);
  ft_buf_printf(b, "</svg>\n");
}

static bool printable(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!s[i] || ((unsigned char)s[i] < 32 && s[i] != '\n' && s[i] != '\t' && s[i] != '\r'))
      return false;
  return true;
}

static void html_objects(ft_ctx *ctx, ft_buf *b, const char *dir, const json_t *rec,
                         const char *which) {
  size_t j;
  json_t *o;
  json_array_foreach(json_object_get(rec, which), j, o) {
    const char *h = rec_str(o, "hash");
    ft_buf_printf(b, "<div class=obj><b>%s %zu</b> ", which, j);
    if (json_object_get(o, "name")) sb_esc(b, rec_str(o, "name"), strlen(rec_str(o, "name")));
    ft_buf_printf(b, " <code>%s</code> %lld bytes%s", h,
              (long long)json_integer_value(json_object_get(o, "size")),
              json_is_true(json_object_get(o, "stored")) ? "" : " (not stored)");
    void *d;
    size_t len;
    if (json_is_true(json_object_get(o, "stored")) && ft_ledger_object_read(ctx, dir, h, &d, &len) == FT_OK) {
      if (len <= SHOW_TEXT_MAX && printable(d, len)) {
        ft_buf_printf(b, "<details><summary>content</summary><pre>");
        sb_esc(b, d, len);
        ft_buf_printf(b, "</pre></details>");
      }
      free(d);
    }
    ft_ctx_clear_error(ctx);
    ft_buf_printf(b, "</div>\n");
  }
}

/* Rules that fired: a table when they are {rule, count} entries, else JSON. */
static void html_fired(ft_buf *b, const json_t *fired) {
  if (!fired || (json_is_array(fired) && !json_array_size(fired))) return;
  bool table = json_is_array(fired);
  size_t j;
  json_t *f;
  json_array_foreach(fired, j, f) {
    if (!json_is_string(json_object_get(f, "rule"))) table = false;
  }
  if (!table) {
    char *t = ft_ledger_canon(fired);
    ft_buf_printf(b, "<div><b>fired</b> <code>");
    if (t) sb_esc(b, t, strlen(t));
    ft_buf_printf(b, "</code></div>\n");
    free(t);
    return;
  }
  ft_buf_printf(b, "<table><tr><th>rule</th><th>count</th><th>proof</th></tr>\n");
  json_array_foreach(fired, j, f) {
    ft_buf_printf(b, "<tr><td>");
    sb_esc(b, rec_str(f, "rule"), strlen(rec_str(f, "rule")));
    ft_buf_printf(b, "</td><td>%lld</td><td>", (long long)json_integer_value(json_object_get(f, "count")));
    if (json_object_get(f, "proof")) {
      ft_buf_printf(b, "<details><summary>proof</summary><pre>");
      sb_esc(b, rec_str(f, "proof"), strlen(rec_str(f, "proof")));
      ft_buf_printf(b, "</pre></details>");
    }
    ft_buf_printf(b, "</td></tr>\n");
  }
  ft_buf_printf(b, "</table>\n");
}

static void export_html(ft_ctx *ctx, ft_buf *b, const char *dir, const json_t *recs,
                        ft_ledger_health health) {
  ft_buf_printf(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ledger ");
  sb_esc(b, dir, strlen(dir));
  ft_buf_printf(b, "</title>\n<style>body{font-family:Helvetica,Arial,sans-serif;margin:2em;max-width:"
               "60em}section{border-top:1px solid #ccc;padding:.5em 0}pre{background:#f6f6f6;"
               "padding:.5em;overflow:auto}code{font-size:90%%}table{border-collapse:collapse}"
               "td,th{border:1px solid #ddd;padding:2px 8px;text-align:left}.obj{margin:.2em 0}"
               "</style></head><body>\n<h1>Ledger <code>");
  sb_esc(b, dir, strlen(dir));
  ft_buf_printf(b, "</code></h1>\n<p>%zu records; the log reads as <b>%s</b>. Hashes are XXH3-128: "
               "they detect accidents, they do not authenticate.</p>\n",
            json_array_size(recs),
            health == FT_LEDGER_CLEAN ? "clean" : health == FT_LEDGER_TORN ? "torn" : "corrupt");
  if (json_array_size(recs) > SVG_MAX)
    ft_buf_printf(b, "<p>The picture shows the first %d records.</p>\n", SVG_MAX);
  export_svg(b, recs);
  size_t i;
  json_t *rec;
  json_array_foreach(recs, i, rec) {
    long long seq = (long long)json_integer_value(json_object_get(rec, "seq"));
    ft_buf_printf(b, "<section id=\"r%lld\"><h3>#%lld ", seq, seq);
    sb_esc(b, rec_str(rec, "kind"), strlen(rec_str(rec, "kind")));
    ft_buf_printf(b, " &middot; ");
    sb_esc(b, rec_str(rec, "op"), strlen(rec_str(rec, "op")));
    ft_buf_printf(b, "</h3>\n<div>mode %s &middot; version ", rec_str(rec, "mode"));
    sb_esc(b, rec_str(rec, "version"), strlen(rec_str(rec, "version")));
    if (json_object_get(rec, "time_ns"))
      ft_buf_printf(b, " &middot; %.3f ms",
                (double)json_integer_value(json_object_get(rec, "time_ns")) / 1e6);
    ft_buf_printf(b, " &middot; sum <code>%s</code></div>\n", rec_str(rec, "sum"));
    char *params = ft_ledger_canon(json_object_get(rec, "params"));
    ft_buf_printf(b, "<div><b>params</b> <code>");
    if (params) sb_esc(b, params, strlen(params));
    ft_buf_printf(b, "</code></div>\n");
    free(params);
    html_objects(ctx, b, dir, rec, "inputs");
    html_objects(ctx, b, dir, rec, "outputs");
    html_fired(b, json_object_get(rec, "fired"));
    ft_buf_printf(b, "</section>\n");
  }
  ft_buf_printf(b, "</body></html>\n");
}

char *ft_ledger_export(ft_ctx *ctx, const char *dir, ft_ledger_format fmt) {
  if (!dir || (unsigned)fmt > FT_LEDGER_DOT) {
    ft_set_error(ctx, FT_ERR_INVALID_ARG, "ledger export: bad arguments");
    return NULL;
  }
  json_t *recs;
  ft_ledger_health health;
  if (ft_ledger_load_records(ctx, dir, &recs, &health)) return NULL;
  ft_buf b = {0};
  if (fmt == FT_LEDGER_JSON) {
    char *t = json_dumps(recs, JSON_SORT_KEYS | JSON_INDENT(1));
    if (t) ft_buf_putn(&b, t, strlen(t)), ft_buf_putn(&b, "\n", 1);
    else b.failed = true;
    free(t);
  } else if (fmt == FT_LEDGER_DOT) {
    export_dot(&b, recs);
  } else {
    export_html(ctx, &b, dir, recs, health);
  }
  json_decref(recs);
  if (b.failed || !b.p) {
    free(b.p);
    ft_set_error(ctx, FT_ERR_NOMEM, "ledger export: out of memory");
    return NULL;
  }
  return b.p;
}
