/* tools/ftc_demo_plot.c: the two pictures of `ftc demo --plot DIR`, drawn
 * with cairo (built only when meson finds cairo; docs/demo.md):
 * curves.png (the loss of every step and its per-epoch mean; train and
 * test accuracy per epoch) and confusion.png (the test set's confusion
 * matrix). */
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ftc_demo.h"

int ftc_demo_plot(const char *dir, int epochs, int n_steps, const float *losses, const double *acc_train,
                  const double *acc_test, const int32_t *pred, const int32_t *truth, int n, char *err,
                  size_t errlen);

static void text_at(cairo_t *cr, double x, double y, double size, const char *s, double align) {
  cairo_text_extents_t ext;
  cairo_set_font_size(cr, size);
  cairo_text_extents(cr, s, &ext);
  cairo_move_to(cr, x - align * ext.width - ext.x_bearing, y);
  cairo_show_text(cr, s);
}

/* A panel frame at (x, y, w, h) with a title and 5 y labels from lo to hi
 * (fmt NULL: lo and hi are log10 values, labelled as 10^v). */
static void frame(cairo_t *cr, double x, double y, double w, double h, const char *title, double lo,
                  double hi, const char *fmt, const char *xlabel) {
  cairo_set_source_rgb(cr, 0.97, 0.97, 0.97);
  cairo_rectangle(cr, x, y, w, h);
  cairo_fill(cr);
  cairo_set_line_width(cr, 1);
  for (int k = 0; k <= 4; k++) {
    double yy = y + h - h * k / 4.0;
    cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
    cairo_move_to(cr, x, yy);
    cairo_line_to(cr, x + w, yy);
    cairo_stroke(cr);
    char lab[32];
    double v = lo + (hi - lo) * k / 4.0;
    if (fmt) snprintf(lab, sizeof lab, fmt, v);
    else snprintf(lab, sizeof lab, "%.3g", pow(10.0, v)); /* a log10 axis */
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    text_at(cr, x - 6, yy + 4, 11, lab, 1.0);
  }
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  cairo_rectangle(cr, x, y, w, h);
  cairo_stroke(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text_at(cr, x + w / 2, y - 10, 14, title, 0.5);
  text_at(cr, x + w / 2, y + h + 32, 12, xlabel, 0.5);
}

/* x tick labels under a panel: n_ticks + 1 evenly spaced values from lo to hi. */
static void xticks(cairo_t *cr, double x, double y, double w, double lo, double hi, int n_ticks) {
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  for (int k = 0; k <= n_ticks; k++) {
    char lab[32];
    snprintf(lab, sizeof lab, "%.0f", lo + (hi - lo) * k / n_ticks);
    text_at(cr, x + w * k / n_ticks, y + 16, 11, lab, 0.5);
  }
}

static int save(cairo_surface_t *s, const char *dir, const char *file, char *err, size_t errlen) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  cairo_status_t st = cairo_surface_write_to_png(s, path);
  if (st != CAIRO_STATUS_SUCCESS) {
    snprintf(err, errlen, "cannot write %s: %s", path, cairo_status_to_string(st));
    return 1;
  }
  return 0;
}

static int curves(const char *dir, int epochs, int n_steps, const float *losses, const double *acc_train,
                  const double *acc_test, char *err, size_t errlen) {
  const double W = 960, H = 420;
  cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)W, (int)H);
  cairo_t *cr = cairo_create(s);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  /* Loss: log10 scale from the smallest to the largest step loss. */
  double lmin = INFINITY, lmax = -INFINITY;
  for (int i = 0; i < n_steps; i++) {
    double l = losses[i] > 1e-6f ? (double)losses[i] : 1e-6;
    lmin = fmin(lmin, log10(l));
    lmax = fmax(lmax, log10(l));
  }
  lmin = floor(lmin);
  lmax = ceil(lmax);
  if (lmax <= lmin) lmax = lmin + 1;
  double x0 = 70, y0 = 40, w = 380, h = 320;
  frame(cr, x0, y0, w, h, "training loss (log scale)", lmin, lmax, NULL, "step");
  xticks(cr, x0, y0 + h, w, 1, n_steps, 4);
  cairo_set_line_width(cr, 0.8);
  cairo_set_source_rgba(cr, 0.2, 0.4, 0.8, 0.5);
  for (int i = 0; i < n_steps; i++) {
    double l = log10(losses[i] > 1e-6f ? (double)losses[i] : 1e-6);
    double px = x0 + w * (n_steps > 1 ? (double)i / (n_steps - 1) : 0.5);
    double py = y0 + h - h * (l - lmin) / (lmax - lmin);
    if (i) cairo_line_to(cr, px, py);
    else cairo_move_to(cr, px, py);
  }
  cairo_stroke(cr);
  /* Accuracy per epoch, from the lowest test/train value rounded down. */
  double amin = 1;
  for (int e = 0; e < epochs; e++) amin = fmin(amin, fmin(acc_train[e], acc_test[e]));
  amin = floor(amin * 10) / 10;
  if (amin >= 1) amin = 0.9;
  double x1 = 540;
  frame(cr, x1, y0, w, h, "accuracy per epoch", 100 * amin, 100, "%.1f%%", "epoch");
  xticks(cr, x1, y0 + h, w, 1, epochs, epochs > 1 && epochs - 1 <= 12 ? epochs - 1 : (epochs > 1 ? 4 : 1));
  const double col[2][3] = {{0.2, 0.6, 0.2}, {0.85, 0.3, 0.1}};
  const double *acc[2] = {acc_train, acc_test};
  const char *name[2] = {"train", "test"};
  for (int k = 0; k < 2; k++) {
    cairo_set_source_rgb(cr, col[k][0], col[k][1], col[k][2]);
    cairo_set_line_width(cr, 2);
    for (int e = 0; e < epochs; e++) {
      double px = x1 + w * (epochs > 1 ? (double)e / (epochs - 1) : 0.5);
      double py = y0 + h - h * (acc[k][e] - amin) / (1 - amin);
      if (e) cairo_line_to(cr, px, py);
      else cairo_move_to(cr, px, py);
    }
    cairo_stroke(cr);
    for (int e = 0; e < epochs; e++) {
      double px = x1 + w * (epochs > 1 ? (double)e / (epochs - 1) : 0.5);
      double py = y0 + h - h * (acc[k][e] - amin) / (1 - amin);
      cairo_arc(cr, px, py, 3, 0, 2 * M_PI);
      cairo_fill(cr);
    }
    cairo_rectangle(cr, x1 + w - 90, y0 + h - 50 + 18 * k, 12, 12);
    cairo_fill(cr);
    char lab[64];
    snprintf(lab, sizeof lab, "%s %.1f%%", name[k], 100 * acc[k][epochs - 1]);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text_at(cr, x1 + w - 72, y0 + h - 39 + 18 * k, 11, lab, 0);
  }
  int rc = save(s, dir, "curves.png", err, errlen);
  cairo_destroy(cr);
  cairo_surface_destroy(s);
  return rc;
}

static int confusion(const char *dir, const int32_t *pred, const int32_t *truth, int n, char *err,
                     size_t errlen) {
  int cm[DEMO_CLASSES][DEMO_CLASSES] = {{0}}, rows[DEMO_CLASSES] = {0}, ok = 0;
  for (int i = 0; i < n; i++) {
    cm[truth[i]][pred[i]]++;
    rows[truth[i]]++;
    ok += truth[i] == pred[i];
  }
  const double cell = 40, x0 = 70, y0 = 70;
  const int W = (int)(x0 + cell * DEMO_CLASSES + 30), H = (int)(y0 + cell * DEMO_CLASSES + 60);
  cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
  cairo_t *cr = cairo_create(s);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  char title[96];
  snprintf(title, sizeof title, "test set: %d of %d right (%.2f%%)", ok, n, 100.0 * ok / n);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text_at(cr, x0 + cell * DEMO_CLASSES / 2, 28, 14, title, 0.5);
  text_at(cr, x0 + cell * DEMO_CLASSES / 2, 52, 12, "predicted digit", 0.5);
  for (int a = 0; a < DEMO_CLASSES; a++)
    for (int c = 0; c < DEMO_CLASSES; c++) {
      double f = rows[a] ? (double)cm[a][c] / rows[a] : 0;
      double x = x0 + cell * c, y = y0 + cell * a;
      if (a == c) cairo_set_source_rgb(cr, 1 - 0.8 * f, 1 - 0.45 * f, 1 - 0.8 * f);
      else cairo_set_source_rgb(cr, 1, 1 - 0.9 * fmin(1, 4 * f), 1 - 0.9 * fmin(1, 4 * f));
      cairo_rectangle(cr, x, y, cell, cell);
      cairo_fill(cr);
      cairo_set_source_rgb(cr, 0.8, 0.8, 0.8);
      cairo_rectangle(cr, x, y, cell, cell);
      cairo_stroke(cr);
      if (cm[a][c]) {
        char num[16];
        snprintf(num, sizeof num, "%d", cm[a][c]);
        cairo_set_source_rgb(cr, 0, 0, 0);
        text_at(cr, x + cell / 2, y + cell / 2 + 5, 13, num, 0.5);
      }
    }
  cairo_set_source_rgb(cr, 0, 0, 0);
  for (int k = 0; k < DEMO_CLASSES; k++) {
    char lab[4];
    snprintf(lab, sizeof lab, "%d", k);
    text_at(cr, x0 + cell * k + cell / 2, y0 - 6, 12, lab, 0.5);
    text_at(cr, x0 - 10, y0 + cell * k + cell / 2 + 4, 12, lab, 1.0);
  }
  cairo_save(cr);
  cairo_translate(cr, 24, y0 + cell * DEMO_CLASSES / 2);
  cairo_rotate(cr, -M_PI / 2);
  text_at(cr, 0, 0, 12, "true digit", 0.5);
  cairo_restore(cr);
  int rc = save(s, dir, "confusion.png", err, errlen);
  cairo_destroy(cr);
  cairo_surface_destroy(s);
  return rc;
}

int ftc_demo_plot(const char *dir, int epochs, int n_steps, const float *losses, const double *acc_train,
                  const double *acc_test, const int32_t *pred, const int32_t *truth, int n, char *err,
                  size_t errlen) {
  if (mkdir(dir, 0777) && errno != EEXIST) {
    snprintf(err, errlen, "cannot create the directory: %s", strerror(errno));
    return 1;
  }
  struct stat st;
  if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "not a directory");
    return 1;
  }
  return curves(dir, epochs, n_steps, losses, acc_train, acc_test, err, errlen) ||
         confusion(dir, pred, truth, n, err, errlen);
}
