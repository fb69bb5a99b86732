/* tools/ftc_demo.h: the pieces of `ftc demo` (docs/demo.md) that the tests
 * check too (tests/demo/): the digits data set and its split, the models'
 * programs (initialization, loss, the fused training step, prediction, the
 * epoch's shuffle) and the weights' hash. ftc_demo_model.c. */
#ifndef FTC_DEMO_H
#define FTC_DEMO_H
#include <stdint.h>

#include "ft.h"

enum { DEMO_PIXELS = 64, DEMO_CLASSES = 10, DEMO_HIDDEN = 128, DEMO_CNN_CH = 8, DEMO_MAX_PARAMS = 8 };

/* The Adam hyperparameters (optax.adam's defaults, learning rate 0.01). */
#define DEMO_LR 0.01
#define DEMO_B1 0.9
#define DEMO_B2 0.999
#define DEMO_EPS 1e-8

/* The digits, split: x in [0, 1] (pixel / 16, exact), y the digit. */
typedef struct demo_data {
  int n_train, n_test;
  float *x_train, *x_test;     /* [n, 64], malloc'd */
  int32_t *y_train, *y_test;   /* [n] */
} demo_data;

/* Loads dir/images.npy (uint8[1797, 64], values 0..16) and dir/labels.npy
 * (uint8[1797], 0..9) and splits them: within each class, in data-set
 * order, every fifth sample is a test sample. Checks shapes, dtypes and
 * ranges. 0, or -1 with the reason in err. Free with demo_data_free. */
int demo_data_load(ft_ctx *ctx, const char *dir, demo_data *d, char *err, size_t errlen);
void demo_data_free(demo_data *d);

typedef enum demo_model { DEMO_MLP = 0, DEMO_CNN } demo_model;
const char *demo_model_name(demo_model m);
/* The number of parameter arrays and their avals (f32). */
int demo_param_avals(demo_model m, ft_aval *out);

/* init(seed: i32[]) -> (params..., shuffle key data u32[2]): key(seed) split
 * into an init key and a shuffle key; the init key split once per weight
 * matrix; each weight (2u - 1) * sqrt(6 / (fan_in + fan_out)) with u
 * jax.random.uniform; biases zero. As tools/oracle/gen_demo.py. */
ft_jaxpr *demo_trace_init(ft_ctx *ctx, demo_model m);
/* loss(params..., x: f32[batch, 64], y: f32[batch, 10] one-hot) -> f32[]:
 * mean softmax cross-entropy. */
ft_jaxpr *demo_trace_loss(ft_ctx *ctx, demo_model m, int batch);
/* predict(params..., x: f32[n, 64]) -> i32[n]: argmax of the logits. */
ft_jaxpr *demo_trace_predict(ft_ctx *ctx, demo_model m, int n);
/* perm(shuffle key data u32[2], epoch i32[]) -> i32[n]:
 * jax.random.permutation(fold_in(key, epoch), n). */
ft_jaxpr *demo_trace_perm(ft_ctx *ctx, int n);
/* The training step as one program: (params..., m..., v..., t: f32[],
 * x, y) -> (params'..., m'..., v'..., loss): vg (ft_value_and_grad of the
 * loss w.r.t. the params) called inside, then Adam with bias correction
 * (t = the step number, from 1). The call is left as a jit equation;
 * ft_inline flattens it. */
ft_jaxpr *demo_trace_step(ft_ctx *ctx, demo_model m, const ft_jaxpr *vg, int batch);

/* Data-parallel value and gradient (docs/spmd.md, docs/demo.md): the
 * same signature as ft_value_and_grad of demo_trace_loss(batch), as a
 * shard_map over a mesh 'i' of `devices` devices (batch must split over
 * them): each device takes the value and gradient of its shard's loss
 * (vg_shard: ft_value_and_grad of demo_trace_loss(batch / devices)),
 * psums them in device order and divides by the device count (the mean of
 * the shard means: the global batch's mean loss). The same bits on 1
 * process (the simulated mesh) and over any rank count dividing devices.
 * NULL with the error on ctx (or in err when the printout cannot be
 * wrapped). */
ft_jaxpr *demo_dp_value_and_grad(ft_ctx *ctx, demo_model m, const ft_jaxpr *vg_shard, int batch, int devices,
                                 char *err, size_t errn);

/* FNV-1a 64 over the bytes of the arrays in order (the oracle's hash). */
uint64_t demo_fnv1a(int n, ft_array *const *arrays);

#endif
