/* tests/shape/test_shape.c: the shape/dtype rule of every primitive family
 * (ft_infer): exact result avals for valid inputs, including rank-0 and
 * zero-size operands, and a clear error (status + message fragment naming
 * the primitive, shapes and dtypes) for each class of misuse. */
#include <stdlib.h>

#include "shape_util.h"

typedef struct scase {
  ft_prim p;
  const char *in[6];     /* operand avals, NULL-terminated */
  const char *params;    /* text, see shape_util.h */
  const char *out[4];    /* expected result avals, NULL-terminated */
} scase;

typedef struct mcase {
  ft_prim p;
  const char *in[6];
  const char *params;
  ft_status st;          /* the expected error status */
  const char *frag;      /* and a fragment of its message */
} mcase;

static const scase valid[] = {
  /* unary */
  {FT_P_NEG, {"f32[3]"}, "", {"f32[3]"}},
  {FT_P_NEG, {"i32[]"}, "", {"i32[]"}},
  {FT_P_EXP, {"f32[0,2]"}, "", {"f32[0,2]"}},
  {FT_P_SIN, {"c64[2]"}, "", {"c64[2]"}},
  {FT_P_IS_FINITE, {"f64[2]"}, "", {"bool[2]"}},
  {FT_P_ABS, {"c64[3]"}, "", {"f32[3]"}},
  {FT_P_ABS, {"c128[]"}, "", {"f64[]"}},
  {FT_P_NOT, {"bool[2]"}, "", {"bool[2]"}},
  {FT_P_NOT, {"u8[2]"}, "", {"u8[2]"}},
  {FT_P_INTEGER_POW, {"i32[4]"}, "y=3", {"i32[4]"}},
  {FT_P_INTEGER_POW, {"f32[4]"}, "y=-2", {"f32[4]"}},
  {FT_P_ROUND, {"f32[]"}, "rounding_method=1", {"f32[]"}},
  {FT_P_REDUCE_PRECISION, {"f32[6]"}, "exponent_bits=5 mantissa_bits=10", {"f32[6]"}},
  {FT_P_STOP_GRADIENT, {"i32[2]"}, "", {"i32[2]"}},
  {FT_P_COPY, {"bool[0]"}, "", {"bool[0]"}},
  /* binary: equal shapes, rank-0 and size-1 broadcasting */
  {FT_P_ADD, {"f32[3]", "f32[3]"}, "", {"f32[3]"}},
  {FT_P_ADD, {"f32[2,3]", "f32[]"}, "", {"f32[2,3]"}},
  {FT_P_ADD, {"f32[]", "f32[2,3]"}, "", {"f32[2,3]"}},
  {FT_P_MUL, {"f32[]", "f32[]"}, "", {"f32[]"}},
  {FT_P_SUB, {"f32[2,3]", "f32[1,3]"}, "", {"f32[2,3]"}},
  {FT_P_MUL, {"f32[2,1]", "f32[1,3]"}, "", {"f32[2,3]"}},
  {FT_P_MUL, {"f32[4]", "f32[4]"}, "out_dtype=float32", {"f32[4]"}},
  {FT_P_DIV, {"i32[0]", "i32[0]"}, "", {"i32[0]"}},
  {FT_P_POW, {"f32[3]", "i32[3]"}, "", {"f32[3]"}},
  {FT_P_POW, {"f64[3]", "f64[]"}, "", {"f64[3]"}},
  {FT_P_MAX, {"bool[2]", "bool[2]"}, "", {"bool[2]"}},
  {FT_P_AND, {"u8[4]", "u8[4]"}, "", {"u8[4]"}},
  {FT_P_SHIFT_LEFT, {"i32[0]", "i32[0]"}, "", {"i32[0]"}},
  {FT_P_ATAN2, {"f32[2]", "f32[2]"}, "", {"f32[2]"}},
  {FT_P_ADD_ANY, {"f32[2]", "f32[2]"}, "", {"f32[2]"}},
  /* comparisons */
  {FT_P_LT, {"i32[3]", "i32[3]"}, "", {"bool[3]"}},
  {FT_P_EQ, {"bool[2]", "bool[2]"}, "", {"bool[2]"}},
  {FT_P_GE, {"f32[4,1]", "f32[1,5]"}, "", {"bool[4,5]"}},
  /* select_n, clamp */
  {FT_P_SELECT_N, {"bool[3]", "f32[3]", "f32[3]"}, "", {"f32[3]"}},
  {FT_P_SELECT_N, {"i32[]", "f32[2]", "f32[2]", "f32[2]"}, "", {"f32[2]"}},
  {FT_P_SELECT_N, {"i32[3]", "f32[3]"}, "", {"f32[3]"}},
  {FT_P_CLAMP, {"f32[]", "f32[4]", "f32[]"}, "", {"f32[4]"}},
  {FT_P_CLAMP, {"i32[4]", "i32[4]", "i32[4]"}, "", {"i32[4]"}},
  /* conversions */
  {FT_P_CONVERT_ELEMENT_TYPE, {"f32[2,3]"}, "new_dtype=int32 weak_type=False", {"i32[2,3]"}},
  {FT_P_CONVERT_ELEMENT_TYPE, {"bool[]"}, "new_dtype=float32 weak_type=False", {"f32[]"}},
  {FT_P_BITCAST_CONVERT_TYPE, {"f32[4]"}, "new_dtype=int32", {"i32[4]"}},
  {FT_P_BITCAST_CONVERT_TYPE, {"f32[4]"}, "new_dtype=uint8", {"u8[4,4]"}},
  {FT_P_BITCAST_CONVERT_TYPE, {"u8[2,2]"}, "new_dtype=uint16", {"u16[2]"}},
  /* layout */
  {FT_P_BROADCAST_IN_DIM, {"f32[3]"}, "shape=(2, 3) broadcast_dimensions=(1,)", {"f32[2,3]"}},
  {FT_P_BROADCAST_IN_DIM, {"f32[]"}, "shape=(2,) broadcast_dimensions=()", {"f32[2]"}},
  {FT_P_BROADCAST_IN_DIM, {"f32[1,3]"}, "shape=(4, 3) broadcast_dimensions=(0, 1)", {"f32[4,3]"}},
  {FT_P_BROADCAST_IN_DIM, {"f32[3]"}, "shape=(0, 3) broadcast_dimensions=(1,)", {"f32[0,3]"}},
  {FT_P_RESHAPE, {"f32[2,3]"}, "new_sizes=(3, 2)", {"f32[3,2]"}},
  {FT_P_RESHAPE, {"f32[0,3]"}, "new_sizes=(0,)", {"f32[0]"}},
  {FT_P_RESHAPE, {"f32[]"}, "new_sizes=(1, 1)", {"f32[1,1]"}},
  {FT_P_TRANSPOSE, {"f32[2,3,4]"}, "permutation=(2, 0, 1)", {"f32[4,2,3]"}},
  {FT_P_TRANSPOSE, {"f32[]"}, "permutation=()", {"f32[]"}},
  {FT_P_SQUEEZE, {"f32[1,3,1]"}, "dimensions=(0, 2)", {"f32[3]"}},
  {FT_P_EXPAND_DIMS, {"f32[3]"}, "dimensions=(0, 2)", {"f32[1,3,1]"}},
  {FT_P_REV, {"f32[2,3]"}, "dimensions=(0, 1)", {"f32[2,3]"}},
  {FT_P_SLICE, {"f32[4,6]"}, "start_indices=(1, 0) limit_indices=(3, 6) strides=(1, 2)", {"f32[2,3]"}},
  {FT_P_SLICE, {"f32[4,6]"}, "start_indices=(1, 1) limit_indices=(4, 1)", {"f32[3,0]"}},
  {FT_P_SLICE, {"f32[7]"}, "start_indices=(0,) limit_indices=(7,) strides=(3,)", {"f32[3]"}},
  {FT_P_DYNAMIC_SLICE, {"f32[5,4]", "i32[]", "i32[]"}, "slice_sizes=(2, 2)", {"f32[2,2]"}},
  {FT_P_DYNAMIC_UPDATE_SLICE, {"f32[5,4]", "f32[2,2]", "i32[]", "i32[]"}, "", {"f32[5,4]"}},
  {FT_P_CONCATENATE, {"f32[0]", "f32[3]"}, "dimension=0", {"f32[3]"}},
  {FT_P_CONCATENATE, {"i32[2,1]", "i32[2,3]", "i32[2,0]"}, "dimension=1", {"i32[2,4]"}},
  {FT_P_PAD, {"f32[3,4]", "f32[]"}, "padding_config=((1, 2, 1), (-1, 0, 0))", {"f32[8,3]"}},
  {FT_P_PAD, {"f32[3,4]", "f32[]"}, "padding_config=((0, 0, 0), (2, -2, 2))", {"f32[3,10]"}},
  {FT_P_PAD, {"f32[0]", "f32[]"}, "padding_config=((1, 1, 5),)", {"f32[2]"}},
  {FT_P_SPLIT, {"f32[6]"}, "axis=0 sizes=(2, 3, 1)", {"f32[2]", "f32[3]", "f32[1]"}},
  /* reductions */
  {FT_P_REDUCE_SUM, {"f32[2,3]"}, "axes=(1,)", {"f32[2]"}},
  {FT_P_REDUCE_SUM, {"f32[2,3]"}, "axes=(0, 1)", {"f32[]"}},
  {FT_P_REDUCE_SUM, {"f32[]"}, "axes=()", {"f32[]"}},
  {FT_P_REDUCE_MAX, {"i32[2,0]"}, "axes=(1,)", {"i32[2]"}},
  {FT_P_REDUCE_AND, {"bool[2,3]"}, "axes=(1,)", {"bool[2]"}},
  {FT_P_ARGMAX, {"f32[3,4]"}, "axes=(1,) index_dtype=int32", {"i32[3]"}},
  {FT_P_ARGMIN, {"f32[3,4]"}, "axes=(0,) index_dtype=int64", {"i64[4]"}},
  {FT_P_CUMSUM, {"f32[2,3]"}, "axis=1 reverse=False", {"f32[2,3]"}},
  {FT_P_CUMMAX, {"i32[0]"}, "axis=0 reverse=True", {"i32[0]"}},
  /* dot_general */
  {FT_P_DOT_GENERAL, {"f32[5,4]", "f32[4,3]"}, "dimension_numbers=(((1,), (0,)), ((), ()))", {"f32[5,3]"}},
  {FT_P_DOT_GENERAL, {"f32[2,3,4]", "f32[2,4,5]"}, "dimension_numbers=(((2,), (1,)), ((0,), (0,)))",
   {"f32[2,3,5]"}},
  {FT_P_DOT_GENERAL, {"f32[4]", "f32[4]"}, "dimension_numbers=(((0,), (0,)), ((), ()))", {"f32[]"}},
  {FT_P_DOT_GENERAL, {"f32[2]", "f32[3]"}, "dimension_numbers=(((), ()), ((), ()))", {"f32[2,3]"}},
  {FT_P_DOT_GENERAL, {"i8[2,3]", "i8[3]"},
   "dimension_numbers=(((1,), (0,)), ((), ())) preferred_element_type=int32", {"i32[2]"}},
  {FT_P_DOT_GENERAL, {"f32[2,3]", "f64[3]"}, "dimension_numbers=(((1,), (0,)), ((), ()))", {"f64[2]"}},
  {FT_P_DOT_GENERAL, {"f16[2]", "bf16[2]"}, "dimension_numbers=(((0,), (0,)), ((), ()))", {"bf16[]"}},
  {FT_P_DOT_GENERAL, {"f32[0,3]", "f32[3,2]"}, "dimension_numbers=(((1,), (0,)), ((), ()))", {"f32[0,2]"}},
  /* other */
  {FT_P_IOTA, {NULL}, "dtype=int32 shape=(2, 3) dimension=1", {"i32[2,3]"}},
  {FT_P_SORT, {"f32[6]", "i32[6]"}, "dimension=0 is_stable=True num_keys=1", {"f32[6]", "i32[6]"}},
  {FT_P_SORT, {"f32[0]"}, "dimension=0 is_stable=True num_keys=1", {"f32[0]"}},
  {FT_P_FFT, {"c64[8]"}, "fft_type=0 fft_lengths=(8,)", {"c64[8]"}},
  {FT_P_FFT, {"c64[4,4]"}, "fft_type=1 fft_lengths=(4, 4)", {"c64[4,4]"}},
  {FT_P_FFT, {"f32[8]"}, "fft_type=2 fft_lengths=(8,)", {"c64[5]"}},
  {FT_P_FFT, {"c128[3,5]"}, "fft_type=3 fft_lengths=(8,)", {"f64[3,8]"}},
  {FT_P_TOP_K, {"f32[6]"}, "k=3 axis=0", {"f32[3]", "i32[3]"}},
  {FT_P_TOP_K, {"f32[2,5]"}, "k=2", {"f32[2,2]", "i32[2,2]"}},
  {FT_P_SEARCHSORTED, {"f32[4]", "f32[2,3]"}, "side=left dimension=0 batch_dims=0 method=scan out_dtype=int32", {"i32[2,3]"}},
  {FT_P_SEARCHSORTED, {"f32[3,7,2]", "f32[4,2]"}, "side=right dimension=1 batch_dims=0 method=sort out_dtype=int32", {"i32[3,2,4,2]"}},
  {FT_P_SEARCHSORTED, {"i8[3,2,6]", "i8[3,5]"}, "side=left dimension=2 batch_dims=1 method=compare_all out_dtype=int64", {"i64[3,2,5]"}},
  {FT_P_GATHER, {"f32[5]", "i32[4,1]"},
   "dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), "
   "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) "
   "slice_sizes=(1,) indices_are_sorted=False unique_indices=False mode=CLIP", {"f32[4]"}},
  {FT_P_GATHER, {"f32[5,3]", "i32[2,1]"},
   "dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), "
   "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) "
   "slice_sizes=(1, 3) indices_are_sorted=False unique_indices=False mode=CLIP", {"f32[2,3]"}},
  {FT_P_SCATTER_ADD, {"f32[5]", "i32[4,1]", "f32[4]"},
   "dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
   "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()) "
   "indices_are_sorted=False unique_indices=False mode=FILL_OR_DROP", {"f32[5]"}},
  {FT_P_REDUCE_WINDOW_MAX, {"f32[1,4,4,1]"},
   "window_dimensions=(1, 2, 2, 1) window_strides=(1, 2, 2, 1) padding=((0, 0), (0, 0), (0, 0), (0, 0)) "
   "base_dilation=(1, 1, 1, 1) window_dilation=(1, 1, 1, 1)", {"f32[1,2,2,1]"}},
  {FT_P_REDUCE_WINDOW_SUM, {"f32[1,4,4,1]"},
   "window_dimensions=(1, 3, 3, 1) window_strides=(1, 1, 1, 1) padding=((0, 0), (1, 1), (1, 1), (0, 0)) "
   "base_dilation=(1, 1, 1, 1) window_dilation=(1, 1, 1, 1)", {"f32[1,4,4,1]"}},
  {FT_P_CONV_GENERAL_DILATED, {"f32[1,2,5,5]", "f32[3,2,2,2]"},
   "dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), "
   "out_spec=(0, 1, 2, 3)) window_strides=(1, 1) padding=((0, 0), (0, 0)) lhs_dilation=(1, 1) "
   "rhs_dilation=(1, 1) feature_group_count=1 batch_group_count=1", {"f32[1,3,4,4]"}},
  {FT_P_CONV_GENERAL_DILATED, {"f32[1,2,5,5]", "f32[3,2,2,2]"},
   "dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), "
   "out_spec=(0, 1, 2, 3)) window_strides=(2, 2) padding=((1, 1), (1, 1)) lhs_dilation=(1, 1) "
   "rhs_dilation=(1, 1) feature_group_count=1 batch_group_count=1", {"f32[1,3,3,3]"}},
  /* JAX 0.12 additions (issue 17 §1) */
  {FT_P_CLZ, {"u8[3]"}, "", {"u8[3]"}},
  {FT_P_POPULATION_COUNT, {"i64[]"}, "", {"i64[]"}},
  {FT_P_MULHI, {"u32[2]", "u32[2]"}, "", {"u32[2]"}},
  {FT_P_LT_TO, {"f32[2]", "f32[]"}, "", {"bool[2]"}},
  {FT_P_REDUCE_XOR, {"bool[2,3]"}, "axes=(1,)", {"bool[2]"}},
  {FT_P_SHARDING_CONSTRAINT, {"c64[2]"}, "", {"c64[2]"}},
  {FT_P_POLYNOMIAL, {"f32[2,3]", "f32[1,3]", "f32[]"}, "", {"f32[2,3]"}},
  {FT_P_POLYNOMIAL, {"f32[1,3]", "f32[2,1]"}, "unroll=3", {"f32[2,3]"}},
  {FT_P_STACK, {"f32[2,3]", "f32[2,3]", "f32[2,3]"}, "axis=2", {"f32[2,3,3]"}},
  {FT_P_STACK, {"i32[]"}, "axis=0", {"i32[1]"}},
  {FT_P_UNSTACK, {"f32[2,3]"}, "axis=1", {"f32[2]", "f32[2]", "f32[2]"}},
  {FT_P_TILE, {"f32[2,3]"}, "reps=(2, 0)", {"f32[4,0]"}},
  {FT_P_OPTIMIZATION_BARRIER, {"f32[2]", "i32[]"}, "", {"f32[2]", "i32[]"}},
  {FT_P_PLATFORM_INDEX, {NULL}, "platforms=((cuda, rocm), (cpu,), None)", {"i32[]"}},
  {FT_P_PLATFORM_INDEX, {NULL}, "platforms=((mosaic,), None)", {"i32[]"}},
  {FT_P_EMPTY, {NULL}, "dtype=int8 shape=(2, 0) out_sharding=None", {"i8[2,0]"}},
};

static const mcase misuse[] = {
  {FT_P_ADD, {"f32[3]", "f32[4]"}, "", FT_ERR_SHAPE, "add: operand shapes f32[3] and f32[4] do not match"},
  {FT_P_ADD, {"f32[2,3]", "f32[3]"}, "", FT_ERR_SHAPE, "add: operand shapes f32[2,3] and f32[3] do not match"},
  {FT_P_MUL, {"f32[2,3]", "f32[3,2]"}, "", FT_ERR_SHAPE, "mul: operand shapes f32[2,3] and f32[3,2]"},
  {FT_P_ADD, {"f32[3]", "i32[3]"}, "", FT_ERR_TYPE, "add: operand dtypes f32 and i32 do not match (f32[3], i32[3])"},
  {FT_P_ADD, {"bool[2]", "bool[2]"}, "", FT_ERR_TYPE, "add: operand dtype bool is not accepted"},
  {FT_P_EXP, {"i32[3]"}, "", FT_ERR_TYPE, "exp: operand dtype i32 is not accepted (expects a floating or complex type), got i32[3]"},
  {FT_P_NOT, {"f32[2]"}, "", FT_ERR_TYPE, "not: operand dtype f32 is not accepted"},
  {FT_P_SHIFT_LEFT, {"f32[2]", "f32[2]"}, "", FT_ERR_TYPE, "shift_left: operand dtype f32"},
  {FT_P_POW, {"i32[2]", "i32[2]"}, "", FT_ERR_TYPE, "pow: operand dtype i32 is not accepted"},
  {FT_P_POW, {"f32[2]", "f64[2]"}, "", FT_ERR_TYPE, "pow: exponent dtype f64 must be an integer type or match"},
  {FT_P_NEG, {"f32[2]", "f32[2]"}, "", FT_ERR_TYPE, "neg: expects 1 operand, got 2"},
  {FT_P_INTEGER_POW, {"f32[2]"}, "", FT_ERR_TYPE, "integer_pow: missing param y"},
  {FT_P_INTEGER_POW, {"i32[2]"}, "y=-1", FT_ERR_TYPE, "negative exponent"},
  {FT_P_SELECT_N, {"f32[3]", "f32[3]", "f32[3]"}, "", FT_ERR_TYPE, "select_n: which must be bool or an integer type, got f32[3]"},
  {FT_P_SELECT_N, {"bool[3]", "f32[3]", "f32[4]"}, "", FT_ERR_SHAPE, "select_n: cases must have the same shape and dtype, got f32[3] and f32[4]"},
  {FT_P_SELECT_N, {"bool[2]", "f32[3]", "f32[3]"}, "", FT_ERR_SHAPE, "which must be a scalar or have the cases' shape"},
  {FT_P_CLAMP, {"f32[2]", "f32[4]", "f32[]"}, "", FT_ERR_SHAPE, "clamp: min and max must be scalars"},
  {FT_P_CONVERT_ELEMENT_TYPE, {"f32[2]"}, "", FT_ERR_TYPE, "convert_element_type: missing param new_dtype"},
  {FT_P_BITCAST_CONVERT_TYPE, {"u8[3]"}, "new_dtype=float32", FT_ERR_SHAPE, "needs a last axis of size 4"},
  {FT_P_BROADCAST_IN_DIM, {"f32[3]"}, "shape=(2, 4) broadcast_dimensions=(1,)", FT_ERR_SHAPE,
   "broadcast_in_dim: operand f32[3] cannot broadcast to shape (2, 4)"},
  {FT_P_BROADCAST_IN_DIM, {"f32[3]"}, "shape=(3,) broadcast_dimensions=()", FT_ERR_SHAPE,
   "one entry per operand axis"},
  {FT_P_BROADCAST_IN_DIM, {"f32[1,1]"}, "shape=(3, 3) broadcast_dimensions=(1, 0)", FT_ERR_SHAPE,
   "strictly increasing"},
  {FT_P_RESHAPE, {"f32[2,3]"}, "new_sizes=(4,)", FT_ERR_SHAPE, "reshape: cannot reshape f32[2,3] (6 elements) to new_sizes (4,) (4 elements)"},
  {FT_P_RESHAPE, {"f32[2,3]"}, "new_sizes=(-1, 6)", FT_ERR_SHAPE, "negative size"},
  {FT_P_TRANSPOSE, {"f32[2,3]"}, "permutation=(0, 0)", FT_ERR_SHAPE, "transpose: permutation (0, 0) is not a permutation"},
  {FT_P_SQUEEZE, {"f32[2,3]"}, "dimensions=(0,)", FT_ERR_SHAPE, "squeeze: cannot squeeze axis 0 of f32[2,3]"},
  {FT_P_REDUCE_SUM, {"f32[2,3]"}, "axes=(2,)", FT_ERR_SHAPE, "reduce_sum: axes (2,) out of range for operand f32[2,3]"},
  {FT_P_REDUCE_MAX, {"f32[2,3]"}, "axes=(1, 1)", FT_ERR_SHAPE, "repeats axis 1"},
  {FT_P_REDUCE_SUM, {"f32[2]"}, "axes=1", FT_ERR_TYPE, "param axes must be a tuple of ints"},
  {FT_P_REDUCE_AND, {"f32[2]"}, "axes=(0,)", FT_ERR_TYPE, "reduce_and: operand dtype f32"},
  {FT_P_ARGMAX, {"f32[3,4]"}, "axes=(0, 1) index_dtype=int32", FT_ERR_SHAPE, "exactly one axis"},
  {FT_P_ARGMAX, {"f32[3,0]"}, "axes=(1,) index_dtype=int32", FT_ERR_SHAPE, "is empty"},
  {FT_P_ARGMIN, {"f32[3]"}, "axes=(0,) index_dtype=float32", FT_ERR_TYPE, "index_dtype must be an integer"},
  {FT_P_SLICE, {"f32[4]"}, "start_indices=(2,) limit_indices=(5,)", FT_ERR_SHAPE, "out of bounds for f32[4]"},
  {FT_P_SLICE, {"f32[4]"}, "start_indices=(0,) limit_indices=(4,) strides=(0,)", FT_ERR_SHAPE, "must be positive"},
  {FT_P_DYNAMIC_SLICE, {"f32[5,4]", "i32[]"}, "slice_sizes=(2, 2)", FT_ERR_TYPE, "needs 2 start indices, got 1"},
  {FT_P_DYNAMIC_SLICE, {"f32[5]", "f32[]"}, "slice_sizes=(2,)", FT_ERR_TYPE, "start index 0 must be an integer scalar, got f32[]"},
  {FT_P_DYNAMIC_SLICE, {"f32[5]", "i32[]"}, "slice_sizes=(6,)", FT_ERR_SHAPE, "slice_sizes (6,) out of bounds for f32[5]"},
  {FT_P_DYNAMIC_UPDATE_SLICE, {"f32[5]", "f32[6]", "i32[]"}, "", FT_ERR_SHAPE, "update f32[6] must have the rank of operand f32[5]"},
  {FT_P_CONCATENATE, {"f32[2,3]", "f32[2,4]"}, "dimension=0", FT_ERR_SHAPE, "concatenate: operand shapes f32[2,3] and f32[2,4] must match except in dimension 0"},
  {FT_P_CONCATENATE, {"f32[]", "f32[]"}, "dimension=0", FT_ERR_SHAPE, "cannot concatenate scalars"},
  {FT_P_CONCATENATE, {"f32[2]", "i32[2]"}, "dimension=0", FT_ERR_TYPE, "operand dtypes must match"},
  {FT_P_PAD, {"f32[3]", "i32[]"}, "padding_config=((0, 0, 0),)", FT_ERR_TYPE, "padding value must be a scalar of the operand's dtype"},
  {FT_P_PAD, {"f32[3]", "f32[]"}, "padding_config=((-3, -1, 0),)", FT_ERR_SHAPE, "gives a negative size"},
  {FT_P_PAD, {"f32[3]", "f32[]"}, "padding_config=((0, 0, -1),)", FT_ERR_SHAPE, "interior padding -1"},
  {FT_P_SPLIT, {"f32[6]"}, "axis=0 sizes=(2, 2)", FT_ERR_SHAPE, "must add up to the size 6"},
  {FT_P_CUMSUM, {"f32[3]"}, "axis=2 reverse=False", FT_ERR_SHAPE, "cumsum: axis 2 out of range for operand f32[3]"},
  {FT_P_CUMSUM, {"bool[3]"}, "axis=0 reverse=False", FT_ERR_TYPE, "cumsum: operand dtype bool"},
  {FT_P_DOT_GENERAL, {"f32[5,4]", "f32[3,2]"}, "dimension_numbers=(((1,), (0,)), ((), ()))", FT_ERR_SHAPE,
   "dot_general: contracting dimensions of f32[5,4] and f32[3,2] differ"},
  {FT_P_DOT_GENERAL, {"f32[5,4]", "f32[4,2]"}, "dimension_numbers=(((2,), (0,)), ((), ()))", FT_ERR_SHAPE,
   "are invalid for lhs f32[5,4]"},
  {FT_P_DOT_GENERAL, {"f32[2,3,4]", "f32[3,4,5]"}, "dimension_numbers=(((2,), (1,)), ((0,), (0,)))",
   FT_ERR_SHAPE, "batch dimensions of f32[2,3,4] and f32[3,4,5] differ"},
  {FT_P_DOT_GENERAL, {"f32[2]", "f32[2]"},
   "dimension_numbers=(((0,), (0,)), ((), ())) preferred_element_type=float16", FT_ERR_TYPE,
   "must not be narrower"},
  {FT_P_DOT_GENERAL, {"bool[2]", "i8[2]"}, "dimension_numbers=(((0,), (0,)), ((), ()))", FT_ERR_TYPE,
   "operand dtypes bool and i8 are incompatible"},
  {FT_P_IOTA, {NULL}, "dtype=int32 shape=(2, 3) dimension=2", FT_ERR_SHAPE, "iota: dimension 2 out of range for shape (2, 3)"},
  {FT_P_SORT, {"f32[6]", "i32[5]"}, "dimension=0 is_stable=True num_keys=1", FT_ERR_SHAPE, "sort: operands must have equal shapes, got f32[6] and i32[5]"},
  {FT_P_SORT, {"f32[6]"}, "dimension=0 is_stable=True num_keys=2", FT_ERR_TYPE, "num_keys 2"},
  {FT_P_SORT, {"f32[]"}, "dimension=0 is_stable=True num_keys=1", FT_ERR_SHAPE, "dimension 0 out of range for operand f32[]"},
  {FT_P_FFT, {"c64[8]"}, "fft_type=0 fft_lengths=(4,)", FT_ERR_SHAPE, "fft: FFT fft_lengths (4,) do not match the trailing axes of c64[8]"},
  {FT_P_FFT, {"c64[8]"}, "fft_type=2 fft_lengths=(8,)", FT_ERR_TYPE, "RFFT needs a float32 or float64 operand, got c64[8]"},
  {FT_P_FFT, {"f32[8]"}, "fft_type=0 fft_lengths=(8,)", FT_ERR_TYPE, "FFT needs a complex operand"},
  {FT_P_TOP_K, {"f32[3]"}, "k=4 axis=0", FT_ERR_SHAPE, "top_k: k=4 must be between 0 and the size 3"},
  {FT_P_SEARCHSORTED, {"f32[4]", "f64[2]"}, "side=left dimension=0 batch_dims=0 method=scan out_dtype=int32", FT_ERR_TYPE, "SearchSorted: dtypes of sorted_arr and query must match; got f32 and f64"},
  {FT_P_SEARCHSORTED, {"f32[4]", "f32[2]"}, "side=left dimension=1 batch_dims=0 method=scan out_dtype=int32", FT_ERR_SHAPE, "SearchSorted: dimension=1 must be in range [0, 1) for sorted_arr f32[4]"},
  {FT_P_SEARCHSORTED, {"f32[3,4]", "f32[2,5]"}, "side=left dimension=1 batch_dims=1 method=scan out_dtype=int32", FT_ERR_SHAPE, "SearchSorted: batch dimension sizes must match; got f32[3,4] and f32[2,5]"},
  {FT_P_SEARCHSORTED, {"f32[4]", "f32[2]"}, "side=left dimension=0 batch_dims=0 method=scan out_dtype=float32", FT_ERR_TYPE, "SearchSorted: out_dtype should be an integer type; got f32"},
  {FT_P_SEARCHSORTED, {"f32[300]", "f32[2]"}, "side=left dimension=0 batch_dims=0 method=scan out_dtype=int8", FT_ERR_TYPE, "the size 300 of the searched axis does not fit out_dtype i8"},
  {FT_P_GATHER, {"f32[5]", "i32[4,2]"},
   "dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), "
   "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) "
   "slice_sizes=(1,) indices_are_sorted=False unique_indices=False mode=CLIP", FT_ERR_SHAPE,
   "gather: the last axis of indices i32[4,2]"},
  {FT_P_REDUCE_WINDOW_SUM, {"f32[2,2]"},
   "window_dimensions=(3, 1) window_strides=(1, 1) padding=((0, 0), (0, 0)) base_dilation=(1, 1) "
   "window_dilation=(1, 1)", FT_ERR_SHAPE, "does not fit operand f32[2,2]"},
  {FT_P_CONV_GENERAL_DILATED, {"f32[1,3,5,5]", "f32[3,2,2,2]"},
   "dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), "
   "out_spec=(0, 1, 2, 3)) window_strides=(1, 1) padding=((0, 0), (0, 0)) lhs_dilation=(1, 1) "
   "rhs_dilation=(1, 1) feature_group_count=1 batch_group_count=1", FT_ERR_SHAPE,
   "feature sizes of lhs f32[1,3,5,5] and rhs f32[3,2,2,2]"},
  /* JAX 0.12 additions (issue 17 §1) */
  {FT_P_CLZ, {"f32[2]"}, "", FT_ERR_TYPE, "clz: operand dtype f32 is not accepted"},
  {FT_P_MULHI, {"bool[2]", "bool[2]"}, "", FT_ERR_TYPE, "mulhi: operand dtype bool is not accepted"},
  {FT_P_REDUCE_XOR, {"f32[2]"}, "axes=(0,)", FT_ERR_TYPE, "reduce_xor: operand dtype f32"},
  {FT_P_POLYNOMIAL, {"f32[2]", "f64[2]"}, "", FT_ERR_TYPE, "polynomial: operand dtypes f32 and f64 do not match"},
  {FT_P_POLYNOMIAL, {"f32[2]", "f32[3]"}, "", FT_ERR_SHAPE, "polynomial: operand shapes f32[2] and f32[3] do not match"},
  {FT_P_POLYNOMIAL, {"f32[2]"}, "", FT_ERR_TYPE, "polynomial: expects at least 2 operands, got 1"},
  {FT_P_STACK, {"f32[2]", "f32[3]"}, "axis=0", FT_ERR_TYPE, "stack: operands must have one shape and dtype, got f32[2] and f32[3]"},
  {FT_P_STACK, {"f32[2]"}, "axis=2", FT_ERR_SHAPE, "stack: axis 2 out of range for operand f32[2]"},
  {FT_P_UNSTACK, {"f32[]"}, "axis=0", FT_ERR_SHAPE, "unstack requires rank > 0"},
  {FT_P_TILE, {"f32[2,3]"}, "reps=(2,)", FT_ERR_SHAPE, "tile: reps (2,) must have one entry per axis of f32[2,3]"},
  {FT_P_PLATFORM_INDEX, {NULL}, "platforms=((cuda,), (tpu,))", FT_ERR_UNSUPPORTED,
   "platform_index: platforms names no branch for cpu and has no default"},
  {FT_P_EMPTY, {NULL}, "dtype=float32 shape=(-1,)", FT_ERR_SHAPE, "empty: shape (-1,) has a negative size"},
};

static ft_ctx *C;
static ft_arena *A;

static void setup(void) {
  C = ft_ctx_new(NULL);
  A = ft_arena_new();
}
static void teardown(void) {
  ft_arena_free(A);
  ft_ctx_free(C);
}

/* Applies one case; returns the status, with the results in out/n_out. */
static ft_status run_case(ft_prim p, const char *const *ins, const char *params, ft_aval *out, int *n_out) {
  ft_aval in[6];
  int n = 0;
  while (n < 6 && ins[n]) {
    in[n] = AV(ins[n]);
    n++;
  }
  return ft_infer(C, p, PARAMS(A, p, params), n, in, n_out, out, 8);
}

START_TEST(valid_cases) {
  const scase *c = &valid[_i];
  ft_aval out[8];
  int n_out = -1;
  ft_status st = run_case(c->p, c->in, c->params, out, &n_out);
  ck_assert_msg(st == FT_OK, "case %d (%s): %s", _i, ft_prim_get(c->p)->name, ft_ctx_error(C));
  int n_exp = 0;
  while (n_exp < 4 && c->out[n_exp]) n_exp++;
  ck_assert_int_eq(n_out, n_exp);
  for (int k = 0; k < n_exp; k++) {
    char got[128];
    ck_assert_msg(!strcmp(ft_aval_str(&out[k], got, sizeof got), c->out[k]), "case %d (%s) output %d: got %s, want %s",
                  _i, ft_prim_get(c->p)->name, k, got, c->out[k]);
  }
}
END_TEST

START_TEST(misuse_cases) {
  const mcase *c = &misuse[_i];
  ft_aval out[8];
  int n_out = -1;
  ft_status st = run_case(c->p, c->in, c->params, out, &n_out);
  const char *msg = ft_ctx_error(C);
  ck_assert_msg(st == c->st, "case %d (%s): status %d, want %d (%s)", _i, ft_prim_get(c->p)->name, st, c->st, msg);
  ck_assert_msg(strstr(msg, c->frag), "case %d: message '%s' lacks '%s'", _i, msg, c->frag);
  /* every message starts with the primitive's name */
  const char *nm = ft_prim_get(c->p)->name;
  ck_assert_msg(!strncmp(msg, nm, strlen(nm)) && msg[strlen(nm)] == ':', "case %d: '%s'", _i, msg);
  ck_assert_int_eq(n_out, 0);
}
END_TEST

/* Weak types follow JAX: the result is weak only when every operand is. */
START_TEST(weak_types) {
  ft_aval in[2] = {AV("f32[3]"), AV("f32[]")}, out[1];
  int n;
  in[1].weak_type = true;
  ck_assert_int_eq(ft_infer(C, FT_P_MUL, NULL, 2, in, &n, out, 1), FT_OK);
  ck_assert(!out[0].weak_type);
  in[0].weak_type = true;
  ck_assert_int_eq(ft_infer(C, FT_P_MUL, NULL, 2, in, &n, out, 1), FT_OK);
  ck_assert(out[0].weak_type);
  ck_assert_int_eq(ft_infer(C, FT_P_CONVERT_ELEMENT_TYPE, PARAMS(A, FT_P_CONVERT_ELEMENT_TYPE,
                   "new_dtype=float32 weak_type=True"), 1, in, &n, out, 1), FT_OK);
  ck_assert(out[0].weak_type);
  /* more outputs than room: an error, never an overflow */
  ft_aval x = AV("f32[6]");
  ck_assert_int_eq(ft_infer(C, FT_P_SPLIT, PARAMS(A, FT_P_SPLIT, "axis=0 sizes=(2, 2, 2)"), 1, &x, &n, out, 1),
                   FT_ERR_INVALID_ARG);
}
END_TEST

/* ------------------------------------------------------------- control flow */

/* A sub-jaxpr with the given input and output avals (outputs are fresh
 * vars: ft_infer only reads the signature). */
static ft_jaxpr *sig(int n_in, const char *const *ins, int n_out, const char *const *outs) {
  ft_jaxpr *j = ft_jaxpr_new(A);
  ft_var *iv[8], *ov[8];
  for (int i = 0; i < n_in; i++) {
    ft_aval a = AV(ins[i]);
    iv[i] = ft_var_new(A, &a);
  }
  for (int i = 0; i < n_out; i++) {
    ft_aval a = AV(outs[i]);
    ov[i] = ft_var_new(A, &a);
  }
  ck_assert(ft_jaxpr_set_vars(j, 0, NULL, n_in, iv, n_out, ov));
  return j;
}

static ft_status infer_text(ft_prim p, ft_pval *ps, int n, const char *const *ins, ft_aval *out, int *n_out) {
  ft_aval in[8];
  for (int i = 0; i < n; i++) in[i] = AV(ins[i]);
  return ft_infer(C, p, ps, n, in, n_out, out, 8);
}

static void set(ft_pval *ps, ft_prim p, const char *name, ft_pval v) {
  int i = ft_prim_param_index(p, name);
  ck_assert_int_ge(i, 0);
  ps[i] = v;
}

static void expect(ft_status st, ft_status want, const char *frag) {
  ck_assert_msg(st == want, "status %d, want %d: %s", st, want, ft_ctx_error(C));
  if (frag) ck_assert_msg(strstr(ft_ctx_error(C), frag), "'%s' lacks '%s'", ft_ctx_error(C), frag);
}

START_TEST(cond_rule) {
  const char *b_in[] = {"f32[3]"}, *b_out[] = {"f32[3]", "i32[]"}, *b_out2[] = {"f32[4]", "i32[]"};
  ft_pval *ps = ft_params_default(A, FT_P_COND);
  ft_pval br = ft_pv_tuple(A, 2);
  br.u.items[0] = ft_pv_jaxpr(sig(1, b_in, 2, b_out));
  br.u.items[1] = ft_pv_jaxpr(sig(1, b_in, 2, b_out));
  set(ps, FT_P_COND, "branches", br);
  ft_aval out[8];
  int n;
  const char *ok[] = {"i32[]", "f32[3]"};
  expect(infer_text(FT_P_COND, ps, 2, ok, out, &n), FT_OK, NULL);
  ck_assert_int_eq(n, 2);
  char s[64];
  ck_assert_str_eq(ft_aval_str(&out[0], s, sizeof s), "f32[3]");
  ck_assert_str_eq(ft_aval_str(&out[1], s, sizeof s), "i32[]");
  const char *bool_ix[] = {"bool[]", "f32[3]"};
  expect(infer_text(FT_P_COND, ps, 2, bool_ix, out, &n), FT_OK, NULL);
  const char *f_ix[] = {"f32[]", "f32[3]"};
  expect(infer_text(FT_P_COND, ps, 2, f_ix, out, &n), FT_ERR_TYPE,
         "cond: the index operand must be an int32 or bool scalar, got f32[]");
  const char *wrong_op[] = {"i32[]", "f32[4]"};
  expect(infer_text(FT_P_COND, ps, 2, wrong_op, out, &n), FT_ERR_SHAPE,
         "cond: branch 0 input 0 is f32[3] but operand 1 is f32[4]");
  br.u.items[1] = ft_pv_jaxpr(sig(1, b_in, 2, b_out2));
  set(ps, FT_P_COND, "branches", br);
  expect(infer_text(FT_P_COND, ps, 2, ok, out, &n), FT_ERR_TYPE,
         "branches must agree on outputs: output 0 is f32[3] in branch 0 and f32[4] in branch 1");
}
END_TEST

START_TEST(while_rule) {
  const char *c_in[] = {"f32[]", "i32[]", "f32[3]"}, *c_out[] = {"bool[]"}, *c_bad[] = {"f32[]"};
  const char *b_in[] = {"i32[]", "f32[3]"}, *b_out[] = {"i32[]", "f32[3]"}, *b_bad[] = {"i32[]", "f64[3]"};
  ft_pval *ps = ft_params_default(A, FT_P_WHILE);
  set(ps, FT_P_WHILE, "cond_jaxpr", ft_pv_jaxpr(sig(3, c_in, 1, c_out)));
  set(ps, FT_P_WHILE, "body_jaxpr", ft_pv_jaxpr(sig(2, b_in, 2, b_out)));
  set(ps, FT_P_WHILE, "cond_nconsts", ft_pv_int(1));
  set(ps, FT_P_WHILE, "body_nconsts", ft_pv_int(0));
  const char *ops[] = {"f32[]", "i32[]", "f32[3]"};
  ft_aval out[8];
  int n;
  expect(infer_text(FT_P_WHILE, ps, 3, ops, out, &n), FT_OK, NULL);
  ck_assert_int_eq(n, 2);
  char s[64];
  ck_assert_str_eq(ft_aval_str(&out[1], s, sizeof s), "f32[3]");
  set(ps, FT_P_WHILE, "cond_jaxpr", ft_pv_jaxpr(sig(3, c_in, 1, c_bad)));
  expect(infer_text(FT_P_WHILE, ps, 3, ops, out, &n), FT_ERR_TYPE, "while: cond_jaxpr must return one bool[]");
  set(ps, FT_P_WHILE, "cond_jaxpr", ft_pv_jaxpr(sig(3, c_in, 1, c_out)));
  set(ps, FT_P_WHILE, "body_jaxpr", ft_pv_jaxpr(sig(2, b_in, 2, b_bad)));
  expect(infer_text(FT_P_WHILE, ps, 3, ops, out, &n), FT_ERR_TYPE,
         "while: body_jaxpr output 1 is f64[3] but the carry is f32[3]");
  set(ps, FT_P_WHILE, "cond_nconsts", ft_pv_int(4));
  expect(infer_text(FT_P_WHILE, ps, 3, ops, out, &n), FT_ERR_TYPE, "do not fit 3 operands");
}
END_TEST

START_TEST(scan_rule) {
  /* consts f32[2,3]; carry f32[3]; xs f32[5,2] -> body (f32[2,3], f32[3], f32[2]) -> (f32[3], f32[]) */
  const char *j_in[] = {"f32[2,3]", "f32[3]", "f32[2]"}, *j_out[] = {"f32[3]", "f32[]"};
  ft_pval *ps = ft_params_default(A, FT_P_SCAN);
  set(ps, FT_P_SCAN, "jaxpr", ft_pv_jaxpr(sig(3, j_in, 2, j_out)));
  set(ps, FT_P_SCAN, "length", ft_pv_int(5));
  set(ps, FT_P_SCAN, "num_consts", ft_pv_int(1));
  set(ps, FT_P_SCAN, "num_carry", ft_pv_int(1));
  set(ps, FT_P_SCAN, "reverse", ft_pv_bool(false));
  const char *ops[] = {"f32[2,3]", "f32[3]", "f32[5,2]"};
  ft_aval out[8];
  int n;
  expect(infer_text(FT_P_SCAN, ps, 3, ops, out, &n), FT_OK, NULL);
  ck_assert_int_eq(n, 2);
  char s[64];
  ck_assert_str_eq(ft_aval_str(&out[0], s, sizeof s), "f32[3]");
  ck_assert_str_eq(ft_aval_str(&out[1], s, sizeof s), "f32[5]");
  const char *bad_len[] = {"f32[2,3]", "f32[3]", "f32[4,2]"};
  expect(infer_text(FT_P_SCAN, ps, 3, bad_len, out, &n), FT_ERR_SHAPE,
         "scan: scanned operand 2 is f32[4,2] but needs a leading axis of length 5");
  const char *bad_carry[] = {"f32[2,3]", "f32[4]", "f32[5,2]"};
  expect(infer_text(FT_P_SCAN, ps, 3, bad_carry, out, &n), FT_ERR_SHAPE, "jaxpr input 1 is f32[3] but operand 1 is f32[4]");
  /* length=0 with no xs */
  const char *k_in[] = {"i32[]"}, *k_out[] = {"i32[]", "f32[2]"};
  set(ps, FT_P_SCAN, "jaxpr", ft_pv_jaxpr(sig(1, k_in, 2, k_out)));
  set(ps, FT_P_SCAN, "length", ft_pv_int(0));
  set(ps, FT_P_SCAN, "num_consts", ft_pv_int(0));
  const char *ops2[] = {"i32[]"};
  expect(infer_text(FT_P_SCAN, ps, 1, ops2, out, &n), FT_OK, NULL);
  ck_assert_str_eq(ft_aval_str(&out[1], s, sizeof s), "f32[0,2]");
}
END_TEST

START_TEST(call_rules) {
  const char *j_in[] = {"f32[4]", "i32[]"}, *j_out[] = {"f32[4]"};
  ft_prim ps_[] = {FT_P_JIT, FT_P_CUSTOM_JVP_CALL, FT_P_CUSTOM_VJP_CALL};
  for (int k = 0; k < 3; k++) {
    ft_prim p = ps_[k];
    ft_pval *ps = ft_params_default(A, p);
    set(ps, p, p == FT_P_JIT ? "jaxpr" : "call_jaxpr", ft_pv_jaxpr(sig(2, j_in, 1, j_out)));
    ft_aval out[8];
    int n;
    const char *ok[] = {"f32[4]", "i32[]"}, *bad[] = {"f32[4]", "f32[]"};
    expect(infer_text(p, ps, 2, ok, out, &n), FT_OK, NULL);
    ck_assert_int_eq(n, 1);
    expect(infer_text(p, ps, 2, bad, out, &n), FT_ERR_TYPE, "input 1 is i32[] but operand 1 is f32[]");
    expect(infer_text(p, ps, 1, ok, out, &n), FT_ERR_TYPE, "takes 2 inputs but is given 1 operands");
  }
}
END_TEST

/* Every primitive of the table has a rule: none answers "no shape rule". */
START_TEST(every_prim_has_a_rule) {
  ft_aval in[4] = {AV("f32[2]"), AV("f32[2]"), AV("f32[2]"), AV("f32[2]")}, out[8];
  for (int p = 0; p < FT_NUM_PRIMS; p++) {
    int n;
    int n_in = ft_prim_get((ft_prim)p)->n_in;
    ft_infer(C, (ft_prim)p, ft_params_default(A, (ft_prim)p), n_in < 0 ? 2 : n_in, in, &n, out, 8);
    ck_assert_msg(!strstr(ft_ctx_error(C), "no shape rule"), "%s", ft_ctx_error(C));
    ft_ctx_clear_error(C);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("shape");
  TCase *tc = tcase_create("rules");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_loop_test(tc, valid_cases, 0, (int)(sizeof valid / sizeof valid[0]));
  tcase_add_loop_test(tc, misuse_cases, 0, (int)(sizeof misuse / sizeof misuse[0]));
  tcase_add_test(tc, weak_types);
  tcase_add_test(tc, cond_rule);
  tcase_add_test(tc, while_rule);
  tcase_add_test(tc, scan_rule);
  tcase_add_test(tc, call_rules);
  tcase_add_test(tc, every_prim_has_a_rule);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
