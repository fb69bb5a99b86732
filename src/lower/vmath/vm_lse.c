/* src/lower/vmath/vm_lse.c: the one-pass logsumexp (docs/jit.md, "One-pass
 * logsumexp"), one C source for both engines as the rest of vmath: the
 * interpreter calls the library's build (runtime/interp_lse.c), the JIT's
 * LSE kernels the bitcode build, inlined. This file's bitcode is compiled
 * without clang's vectorizers (src/lower/meson.build) so that the JIT
 * vectorizes its loops for the host's width; the bits do not depend on it
 * (no reassociation: 16 explicit lanes, -ffp-contract=off, fma written out). */
#include "lower/vmath/vm_expf.h"

/* One block of the one-pass logsumexp (docs/jit.md, "One-pass logsumexp"):
 * x[0..n), 0 < n <= FT_VM_LSE_BLOCK. *m receives the block's maximum, or NaN
 * when the block holds a NaN or +inf (the caller then recomputes the row the
 * two-pass way); -inf when every element is -inf. Returns the block's sum of
 * e^(x_k - *m) in the canonical order of docs/determinism.md §3 (16 lanes
 * from +0, the halving tree), 0 when *m is not finite. The block is read
 * twice (its maximum, then the sum), from L1: memory sees one pass. */
VM_FMA_CLONES float ft_vm_lse_block_f32(const float *x, int64_t n, float *m)
{
    /* the maximum in 16 lanes (exact, so any grouping gives the same
     * value; the lanes let a vectorizer work without reassociating) */
    float ml[16];
    uint32_t bl[16];
    for (int l = 0; l < 16; l++) ml[l] = -VM_INF32, bl[l] = 0;
    int64_t k0 = 0;
    for (; k0 + 16 <= n; k0 += 16)
        for (int l = 0; l < 16; l++) {
            float v = x[k0 + l];
            bl[l] |= (uint32_t)((v != v) | (v == VM_INF32));
            ml[l] = v > ml[l] ? v : ml[l];
        }
    for (int l = 0; k0 + l < n; l++) {
        float v = x[k0 + l];
        bl[l] |= (uint32_t)((v != v) | (v == VM_INF32));
        ml[l] = v > ml[l] ? v : ml[l];
    }
    float mx = ml[0];
    uint32_t bad = bl[0];
    for (int l = 1; l < 16; l++) {
        bad |= bl[l];
        mx = ml[l] > mx ? ml[l] : mx;
    }
    if (bad || mx == -VM_INF32) {
        *m = bad ? VM_NAN32 : mx;
        return 0.0f;
    }
    *m = mx;
    float acc[16];
    for (int l = 0; l < 16; l++) acc[l] = 0.0f;
    for (k0 = 0; k0 + 16 <= n; k0 += 16)
        for (int l = 0; l < 16; l++) acc[l] = acc[l] + vm_expf_body(x[k0 + l] - mx);
    for (int l = 0; k0 + l < n; l++) acc[l] = acc[l] + vm_expf_body(x[k0 + l] - mx);
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) acc[l] = acc[l] + acc[l + w];
    return acc[0];
}

/* The end of a one-pass logsumexp row of n elements at x, from its nb =
 * ceil(n / FT_VM_LSE_BLOCK) block partials (pm[b], ps[b]) of
 * ft_vm_lse_block_f32. *shift receives what jax.nn.logsumexp subtracts,
 * stop_gradient(select(is_finite(max), max, 0)) with max = reduce_max of the
 * row (-0 < +0, as docs/determinism.md orders it); returns the row's
 * sum of e^(x - shift).
 *   - Finite maximum M: the partials combine left to right from the first,
 *     total = total + ps[b] * e^(pm[b] - M), where a block whose maximum is
 *     M adds ps[b] itself (e^0 = 1 exactly). A row of one block is
 *     therefore the two-pass sum bit for bit; see docs/jit.md for the rest.
 *   - Otherwise (a NaN or +inf in the row, every element -inf, n == 0): the
 *     shift is +0 and the sum is the two-pass one, recomputed in the
 *     canonical order (docs/determinism.md §3), so special values are
 *     exactly the two-pass results. */
VM_FMA_CLONES float ft_vm_lse_finish_f32(const float *x, int64_t n, const float *pm, const float *ps,
                                         int64_t nb, float *shift)
{
    float mx = -VM_INF32;
    int bad = 0;
    for (int64_t b = 0; b < nb; b++) {
        bad |= pm[b] != pm[b];
        mx = pm[b] > mx ? pm[b] : mx;
    }
    if (!bad && mx != -VM_INF32) {
        if (mx == 0.0f) { /* reduce_max's zero: +0 if the row holds one */
            uint32_t any_pos = 0;
            for (int64_t k = 0; k < n; k++) any_pos |= asu32(x[k]) == 0u;
            mx = any_pos ? 0.0f : -0.0f;
        }
        *shift = mx;
        float total = 0.0f;
        for (int64_t b = 0; b < nb; b++) {
            float t = pm[b] == mx ? ps[b] : ps[b] * vm_expf_body(pm[b] - mx);
            total = b == 0 ? t : total + t;
        }
        return total;
    }
    *shift = 0.0f;
    if (n == 0) return 0.0f;
    if (n == 1) return vm_expf_body(x[0] - 0.0f);
    float total = 0.0f;
    for (int64_t b0 = 0; b0 < n; b0 += FT_VM_LSE_BLOCK) {
        int64_t m = n - b0 < FT_VM_LSE_BLOCK ? n - b0 : FT_VM_LSE_BLOCK;
        float acc[16];
        for (int l = 0; l < 16; l++) acc[l] = 0.0f;
        for (int64_t k = 0; k < m; k++) acc[k % 16] = acc[k % 16] + vm_expf_body(x[b0 + k] - 0.0f);
        for (int w = 8; w >= 1; w /= 2)
            for (int l = 0; l < w; l++) acc[l] = acc[l] + acc[l + w];
        total = b0 == 0 ? acc[0] : total + acc[0];
    }
    return total;
}

