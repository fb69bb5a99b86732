/* src/transforms/ad_complex.c: autodiff of the complex-part primitives
 * (real, imag, conj, complex) and the transposes of RFFT and IRFFT, with
 * JAX's rules (jax/_src/lax/lax.py, jax/_src/lax/fft.py).
 *
 * All four complex-part primitives are linear over the reals, so their JVP
 * applies the primitive to the tangents. Their transposes follow JAX's
 * convention for complex cotangents: a cotangent ct of a value v stands for
 * the real linear functional dv -> Re(sum(dv * ct)) (no conjugation), which
 * makes the transpose of a complex-linear map its plain transpose (FFT's is
 * FFT) and makes grad of a real loss with respect to z = x + iy equal to
 * dL/dx - i dL/dy. Under that pairing:
 *   real:    Re(dz) . ct = Re(dz * complex(ct, 0))
 *   imag:    Im(dz) . ct = Re(dz * complex(0, -ct))
 *   conj:    Re(conj(dz) * ct) = Re(dz * conj(ct)); a float operand: real(ct)
 *   complex: Re((dx + i dy) ct) = dx Re(ct) - dy Im(ct)
 * RFFT and IRFFT are only real-linear (one side is real), and the Hermitian
 * half-spectrum counts its interior bins twice; JAX's _rfft_transpose and
 * _irfft_transpose undo that with a mask that is 1 at DC (and at Nyquist for
 * an even length) and 2 elsewhere. */
#include <string.h>

#include "transforms.h"

static ft_var *emit_conj(tx *t, ft_var *x) {
  if (!x || t->failed) return NULL;
  ft_pval *ps = tx_params(t, FT_P_CONJ);
  if (!ps) return NULL;
  pset(FT_P_CONJ, ps, "input_dtype", ft_pv_dtype(x->aval.dtype));
  return tx_emit(t, FT_P_CONJ, ps, 1, &x);
}

static ft_var *emit_complex(tx *t, ft_var *re, ft_var *im) {
  if (!re || !im) return NULL;
  return tx_emit(t, FT_P_COMPLEX, NULL, 2, (ft_var *[]){re, im});
}

/* ------------------------------------------------------------------- JVP */

bool ad_complex_jvp(jvp_call *c) {
  tx *t = c->t;
  if (c->e->prim == FT_P_COMPLEX) {
    if (!c->dx[0] && !c->dx[1]) return true;
    ft_var *in[2];
    for (int i = 0; i < 2; i++) in[i] = c->dx[i] ? c->dx[i] : tx_zeros(t, &c->x[i]->aval);
    c->dy[0] = emit_complex(t, in[0], in[1]);
    return !t->failed;
  }
  if (!c->dx[0]) return true;
  /* real, imag, conj: the tangent has the operand's dtype, so conj's
   * input_dtype stays right */
  c->dy[0] = tx_emit(t, c->e->prim, c->params, 1, c->dx);
  return !t->failed;
}

/* ------------------------------------------------------------- transpose */

bool ad_complex_transpose(tr_call *c) {
  tx *t = c->t;
  ft_var *ct = c->ct[0];
  const ft_aval *x0 = &c->e->in[0]->aval;
  switch (c->e->prim) {
  case FT_P_REAL: c->ct_x[0] = emit_complex(t, ct, tx_lit(t, ct->aval.dtype, 0.0)); break;
  case FT_P_IMAG:
    c->ct_x[0] = emit_complex(t, tx_lit(t, ct->aval.dtype, 0.0), tx_neg(t, ct));
    break;
  case FT_P_CONJ:
    c->ct_x[0] = ft_dtype_is_complex(x0->dtype) ? emit_conj(t, ct) : tx_unop(t, FT_P_REAL, ct);
    break;
  default: /* complex: operands may have been broadcast */
    if (c->lin[0]) c->ct_x[0] = tx_unbcast(t, tx_unop(t, FT_P_REAL, ct), x0);
    if (c->lin[1])
      c->ct_x[1] = tx_unbcast(t, tx_unop(t, FT_P_IMAG, tx_neg(t, ct)), &c->e->in[1]->aval);
  }
  return !t->failed;
}

/* The Hermitian mask over the last axis of `to` (m = n/2 + 1 bins): 1 at
 * DC and, for an even n, at Nyquist; 2 elsewhere. dtype dt, shape `to`. */
static ft_var *hermitian_mask(tx *t, ft_dtype dt, int64_t n, const ft_aval *to) {
  int r = to->rank;
  int64_t m = to->dims[r - 1], ones = n % 2 == 0 && m > 1 ? 2 : 1, twos = m - ones;
  ft_aval row = ft_aval_make(dt, 1, &m);
  ft_var *mask;
  if (twos <= 0) {
    mask = tx_full(t, &row, 1.0);
  } else {
    ft_aval mid = ft_aval_make(dt, 1, &twos);
    int64_t lo = 1, hi = ones - 1, in = 0;
    mask = tx_pad(t, tx_full(t, &mid, 2.0), tx_lit(t, dt, 1.0), &lo, &hi, &in);
  }
  int64_t bd = r - 1;
  return r == 1 ? mask : tx_bcast(t, mask, r, to->dims, &bd);
}

/* fft params with another fft_type and the same lengths. */
static ft_pval *fft_params(tx *t, const ft_pval *src, int kind) {
  ft_pval *ps = tx_params(t, FT_P_FFT);
  if (!ps) return NULL;
  const ft_param_spec *spec = &ft_prim_get(FT_P_FFT)->params[ft_prim_param_index(FT_P_FFT, "fft_type")];
  pset(FT_P_FFT, ps, "fft_lengths", *pget(FT_P_FFT, src, "fft_lengths"));
  pset(FT_P_FFT, ps, "fft_type", (ft_pval){.tag = FT_PV_SYM, .u.i = kind, .s = spec->syms[kind]});
  return ps;
}

/* JAX's _rfft_transpose: N * irfft(conj(ct) / mask); and _irfft_transpose:
 * conj((1/N) * mask * rfft(ct)), N the product of the fft_lengths. */
bool ad_fft_real_transpose(tr_call *c, bool rfft) {
  tx *t = c->t;
  ft_var *ct = c->ct[0];
  int64_t len[3];
  int nl = pget_ints(FT_P_FFT, c->params, "fft_lengths", len, 3);
  if (nl < 1 || nl > 3)
    return tx_fail(t, FT_ERR_TYPE, "transpose of fft: fft_lengths must list 1 to 3 lengths"), false;
  double N = 1;
  for (int i = 0; i < nl; i++) N *= (double)len[i];
  ft_pval *ps = fft_params(t, c->params, rfft ? 3 : 2);
  if (!ps) return false;
  if (rfft) {
    ft_var *mask = hermitian_mask(t, ct->aval.dtype, len[nl - 1], &ct->aval);
    ft_var *u = tx_div(t, emit_conj(t, ct), mask);
    ft_var *v = u ? tx_emit(t, FT_P_FFT, ps, 1, &u) : NULL;
    c->ct_x[0] = v ? tx_mul(t, tx_lit(t, v->aval.dtype, N), v) : NULL;
  } else {
    ft_var *x = tx_emit(t, FT_P_FFT, ps, 1, &ct);
    if (!x) return false;
    ft_var *mask = hermitian_mask(t, x->aval.dtype, len[nl - 1], &x->aval);
    ft_var *scaled = tx_mul(t, tx_lit(t, x->aval.dtype, 1.0 / N), mask);
    c->ct_x[0] = emit_conj(t, tx_mul(t, scaled, x));
  }
  return !t->failed;
}
