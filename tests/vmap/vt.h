/* tests/vmap/vt.h: helpers of the vmap tests — random inputs, slicing and
 * the defining property: vmap(f)(xs) is bit-identical to evaluating f on
 * each slice and stacking the results. */
#ifndef VT_H
#define VT_H

#include <stdbool.h>
#include <stdint.h>

#include "ft.h"

/* A deterministic random generator (splitmix64). */
uint64_t vt_rand(uint64_t *s);

/* A random array: floats in [-4, 4) with a few special values (0, -0,
 * 1, 0.5) when special is set; ints in [lo, hi]; bools. */
ft_array *vt_random(ft_ctx *ctx, const ft_aval *av, uint64_t *seed, int64_t lo, int64_t hi);

/* Slice b of a along axis (a new array without that axis). */
ft_array *vt_take(ft_ctx *ctx, const ft_array *a, int axis, int64_t b);

/* The aval av with an axis of size n inserted at `at`. */
ft_aval vt_insert(const ft_aval *av, int at, int64_t n);

/* Parses text (asserting success). */
ft_jaxpr *vt_parse(ft_ctx *ctx, const char *text);

/* Checks the defining property on random inputs: f (text) vmapped with
 * in_axes/out_axes (NULL: all 0) over a batch of size B; integer inputs
 * drawn from [lo, hi]. With `inputs` non-NULL, those batched inputs are used
 * instead. Asserts (Check) bit equality of every output slice. Returns the
 * number of output elements compared. */
int64_t vt_check(ft_ctx *ctx, const char *text, const int *in_axes, const int *out_axes,
                 int64_t B, uint64_t seed, int64_t lo, int64_t hi);
/* The same for a jaxpr, with explicit batched inputs (n = number of inputs). */
int64_t vt_check_j(ft_ctx *ctx, const ft_jaxpr *j, const int *in_axes, const int *out_axes,
                   int64_t B, ft_array *const *xs);

#endif
