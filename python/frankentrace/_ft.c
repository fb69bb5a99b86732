/* _ft.c: the CPython extension behind the frankentrace package: a thin
 * client of the public C API (<frankentrace.h>) and nothing else.
 *
 * What lives here: one process-wide ft_ctx; Program (an ft_jaxpr), Fn (an
 * ft_fn) and Dispatcher (the per-call fast path of ft.jit: a small cache
 * from input signatures to compiled functions, looked up in C); the
 * conversions between NumPy arrays and ft_arrays; the mapping of ft_status
 * to the package's exception classes. Everything JAX-shaped (tracing,
 * pytrees, argnums) is Python, in __init__.py.
 *
 * Threads: every call that runs compiled code or the interpreter releases
 * the GIL. Calls of one ft_fn may run concurrently (the library allows it);
 * everything else that uses the context (parse, transforms, jit, ledger)
 * holds ctx_lock, taken with the GIL released so that a long compile never
 * blocks Python threads. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <frankentrace.h>
#include <stdlib.h>
#include <string.h>

static ft_ctx *g_ctx;
static PyThread_type_lock g_lock;
static ft_ledger *g_ledger;
/* Exception classes, installed by __init__.py through _set_errors. */
static PyObject *g_err_base, *g_err_parse, *g_err_type, *g_err_unsupported, *g_err_runtime;
/* The bfloat16 dtype of ml_dtypes when present (set by __init__.py), else NULL. */
static PyArray_Descr *g_bf16_descr;

/* The failure of this thread's last locked operation, taken while the lock
 * was held (another thread's later failure cannot replace it). */
static _Thread_local ft_status t_status;
static _Thread_local char t_msg[8192];

#define LOCKED_BEGIN \
  Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(g_lock, WAIT_LOCK); ft_ctx_clear_error(g_ctx);
#define LOCKED_END \
  t_status = ft_ctx_status(g_ctx); \
  if (t_status) snprintf(t_msg, sizeof t_msg, "%s", ft_ctx_error(g_ctx)); \
  PyThread_release_lock(g_lock); Py_END_ALLOW_THREADS

/* ------------------------------------------------------------------ errors */

/* Raises the exception for status with the library's message msg. */
static PyObject *raise_status(ft_status st, const char *msg) {
  PyObject *cls = g_err_base ? g_err_base : PyExc_RuntimeError;
  switch (st) {
  case FT_ERR_PARSE: cls = g_err_parse; break;
  case FT_ERR_TYPE:
  case FT_ERR_SHAPE: cls = g_err_type; break;
  case FT_ERR_UNSUPPORTED: cls = g_err_unsupported; break;
  case FT_ERR_RUNTIME:
  case FT_ERR_LIMIT:
  case FT_ERR_CANCELLED: cls = g_err_runtime; break;
  case FT_ERR_NOMEM: PyErr_NoMemory(); return NULL;
  default: break;
  }
  if (!cls) cls = g_err_base ? g_err_base : PyExc_RuntimeError;
  PyObject *exc = PyObject_CallFunction(cls, "s", msg && *msg ? msg : ft_status_string(st));
  if (!exc) return NULL;
  PyObject *name = PyUnicode_FromString(ft_status_string(st));
  if (name) {
    PyObject_SetAttrString(exc, "status", name);
    Py_DECREF(name);
  }
  PyErr_SetObject(cls, exc);
  Py_DECREF(exc);
  return NULL;
}

/* Raises the failure of this thread's last locked operation. */
static PyObject *raise_ctx(void) {
  return raise_status(t_status ? t_status : FT_ERR_INTERNAL, t_status ? t_msg : "unknown failure");
}

/* Raises the context's last error, for an unlocked call that just failed. */
static PyObject *raise_ctx_now(void) {
  ft_status st = ft_ctx_status(g_ctx);
  return raise_status(st ? st : FT_ERR_INTERNAL, ft_ctx_error(g_ctx));
}

/* ------------------------------------------------------------------ dtypes */

static int dtype_from_numpy(PyArray_Descr *d, ft_dtype *out) {
  switch (d->type_num) {
  case NPY_BOOL: *out = FT_BOOL; return 0;
  case NPY_INT8: *out = FT_I8; return 0;
  case NPY_INT16: *out = FT_I16; return 0;
  case NPY_INT32: *out = FT_I32; return 0;
  case NPY_INT64: *out = FT_I64; return 0;
  case NPY_UINT8: *out = FT_U8; return 0;
  case NPY_UINT16: *out = FT_U16; return 0;
  case NPY_UINT32: *out = FT_U32; return 0;
  case NPY_UINT64: *out = FT_U64; return 0;
  case NPY_FLOAT16: *out = FT_F16; return 0;
  case NPY_FLOAT32: *out = FT_F32; return 0;
  case NPY_FLOAT64: *out = FT_F64; return 0;
  case NPY_COMPLEX64: *out = FT_C64; return 0;
  case NPY_COMPLEX128: *out = FT_C128; return 0;
  default: break;
  }
  if (g_bf16_descr && PyArray_EquivTypes(d, g_bf16_descr)) {
    *out = FT_BF16;
    return 0;
  }
  return -1;
}

/* A new reference to the NumPy dtype of dt (key types: their u32 key data). */
static PyArray_Descr *numpy_descr(ft_dtype dt) {
  int t;
  switch (dt) {
  case FT_BOOL: t = NPY_BOOL; break;
  case FT_I8: t = NPY_INT8; break;
  case FT_I16: t = NPY_INT16; break;
  case FT_I32: t = NPY_INT32; break;
  case FT_I64: t = NPY_INT64; break;
  case FT_U8: t = NPY_UINT8; break;
  case FT_U16: t = NPY_UINT16; break;
  case FT_U32: t = NPY_UINT32; break;
  case FT_U64: t = NPY_UINT64; break;
  case FT_F16: t = NPY_FLOAT16; break;
  case FT_F32: t = NPY_FLOAT32; break;
  case FT_F64: t = NPY_FLOAT64; break;
  case FT_C64: t = NPY_COMPLEX64; break;
  case FT_C128: t = NPY_COMPLEX128; break;
  case FT_BF16:
    if (g_bf16_descr) {
      Py_INCREF(g_bf16_descr);
      return g_bf16_descr;
    }
    PyErr_SetString(PyExc_TypeError, "frankentrace: a bfloat16 result needs the ml_dtypes package");
    return NULL;
  default:
    PyErr_Format(PyExc_TypeError, "frankentrace: dtype %s has no NumPy equivalent", ft_dtype_name(dt));
    return NULL;
  }
  return PyArray_DescrFromType(t);
}

/* ------------------------------------------------------------------ arrays */

static void capsule_free_array(PyObject *cap) {
  ft_array_free((ft_array *)PyCapsule_GetPointer(cap, "ft_array"));
}

/* A NumPy array over a's buffer that owns a (freed when the array dies).
 * Takes ownership of a in every case. */
static PyObject *to_numpy(ft_array *a) {
  ft_aval av = ft_array_aval(a);
  PyArray_Descr *d = numpy_descr(av.dtype);
  if (!d) {
    ft_array_free(a);
    return NULL;
  }
  npy_intp dims[FT_MAX_RANK];
  for (int i = 0; i < av.rank; i++) dims[i] = (npy_intp)av.dims[i];
  PyObject *cap = PyCapsule_New(a, "ft_array", capsule_free_array);
  if (!cap) {
    Py_DECREF(d);
    ft_array_free(a);
    return NULL;
  }
  PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, d, av.rank, dims, NULL, ft_array_data_mut(a),
                                       NPY_ARRAY_CARRAY, NULL);
  if (!arr) {
    Py_DECREF(cap);
    return NULL;
  }
  if (PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) {
    Py_DECREF(arr);
    return NULL;
  }
  return arr;
}

/* The ft_array for a NumPy array: a borrowed view when the data is
 * C-contiguous and 64-byte aligned (what the library's kernels and FFT plans
 * are made for), else a copy. Sets a Python error and returns NULL when obj
 * is not an ndarray of a supported dtype. The caller frees the result (the
 * ndarray must outlive it). */
static ft_array *from_numpy(PyObject *obj, int index) {
  if (PyArray_IsScalar(obj, Generic) && !PyArray_IsScalar(obj, Object) &&
      !PyArray_IsScalar(obj, Flexible)) {
    /* A NumPy scalar (np.float32(2.0)): its value, copied. */
    PyObject *arr = PyArray_FromScalar(obj, NULL);
    if (!arr) return NULL;
    ft_array *r = from_numpy(arr, index);
    Py_DECREF(arr);
    return r;
  }
  if (!PyArray_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "frankentrace: argument %d is a %.100s, not a NumPy array", index,
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  PyArrayObject *a = (PyArrayObject *)obj;
  ft_dtype dt;
  if (dtype_from_numpy(PyArray_DESCR(a), &dt) < 0) {
    PyObject *r = PyObject_Repr((PyObject *)PyArray_DESCR(a));
    PyErr_Format(g_err_type ? g_err_type : PyExc_TypeError,
                 "frankentrace: argument %d has dtype %U, which FrankenTrace does not support",
                 index, r ? r : Py_None);
    Py_XDECREF(r);
    return NULL;
  }
  int rank = PyArray_NDIM(a);
  if (rank > FT_MAX_RANK) {
    PyErr_Format(g_err_type ? g_err_type : PyExc_TypeError,
                 "frankentrace: argument %d has rank %d, more than %d", index, rank, FT_MAX_RANK);
    return NULL;
  }
  int64_t dims[FT_MAX_RANK];
  for (int i = 0; i < rank; i++) dims[i] = (int64_t)PyArray_DIM(a, i);
  ft_array *r;
  void *data = PyArray_DATA(a);
  if (PyArray_IS_C_CONTIGUOUS(a) && ((uintptr_t)data % 64) == 0)
    r = ft_array_wrap(g_ctx, dt, rank, dims, data);
  else if (PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a))
    r = ft_array_from_data(g_ctx, dt, rank, dims, data);
  else {
    PyErr_Format(PyExc_ValueError,
                 "frankentrace: argument %d is not C-contiguous and aligned (use numpy.ascontiguousarray)",
                 index);
    return NULL;
  }
  if (!r) raise_ctx_now();
  return r;
}

/* Fills av from a (dtype-name, shape) pair. */
static int aval_from_py(PyObject *o, ft_aval *av) {
  const char *dn;
  PyObject *shape;
  if (!PyArg_ParseTuple(o, "sO", &dn, &shape)) return -1;
  memset(av, 0, sizeof *av);
  if (ft_dtype_from_name(dn, &av->dtype) != FT_OK) {
    PyErr_Format(PyExc_ValueError, "frankentrace: unknown dtype '%s'", dn);
    return -1;
  }
  PyObject *seq = PySequence_Fast(shape, "frankentrace: a shape must be a sequence");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n > FT_MAX_RANK) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_ValueError, "frankentrace: rank %zd is more than %d", n, FT_MAX_RANK);
    return -1;
  }
  av->rank = (int)n;
  for (Py_ssize_t i = 0; i < n; i++) {
    long long d = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    if (d == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return -1;
    }
    av->dims[i] = d;
  }
  Py_DECREF(seq);
  return 0;
}

static PyObject *aval_to_py(const ft_aval *av) {
  PyObject *shape = PyTuple_New(av->rank);
  if (!shape) return NULL;
  for (int i = 0; i < av->rank; i++) PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong(av->dims[i]));
  return Py_BuildValue("(sNO)", ft_dtype_name(av->dtype), shape, av->weak_type ? Py_True : Py_False);
}

/* ----------------------------------------------------------------- Program */

typedef struct {
  PyObject_HEAD
  ft_jaxpr *j;
} ProgramObject;

static PyTypeObject ProgramType;

static PyObject *program_new_from(ft_jaxpr *j) {
  if (!j) return raise_ctx();
  ProgramObject *p = PyObject_New(ProgramObject, &ProgramType);
  if (!p) {
    ft_jaxpr_free(j);
    return NULL;
  }
  p->j = j;
  return (PyObject *)p;
}

static void program_dealloc(ProgramObject *p) {
  ft_jaxpr_free(p->j);
  PyObject_Free(p);
}

static PyObject *program_text(ProgramObject *p, PyObject *unused) {
  char *s;
  LOCKED_BEGIN
  s = ft_jaxpr_print(g_ctx, p->j);
  LOCKED_END
  if (!s) return PyErr_NoMemory();
  PyObject *r = PyUnicode_FromString(s);
  ft_free(s);
  return r;
}

static PyObject *program_hash(ProgramObject *p, PyObject *unused) {
  char h[33];
  ft_jaxpr_hash_hex(p->j, h);
  return PyUnicode_FromString(h);
}

static PyObject *avals_list(const ft_jaxpr *j, int n, ft_status (*get)(const ft_jaxpr *, int, ft_aval *)) {
  PyObject *l = PyList_New(n);
  if (!l) return NULL;
  for (int i = 0; i < n; i++) {
    ft_aval av;
    get(j, i, &av);
    PyObject *o = aval_to_py(&av);
    if (!o) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, i, o);
  }
  return l;
}

static PyObject *program_input_avals(ProgramObject *p, PyObject *unused) {
  return avals_list(p->j, ft_jaxpr_num_inputs(p->j), ft_jaxpr_input_aval);
}
static PyObject *program_output_avals(ProgramObject *p, PyObject *unused) {
  return avals_list(p->j, ft_jaxpr_num_outputs(p->j), ft_jaxpr_output_aval);
}
static PyObject *program_const_avals(ProgramObject *p, PyObject *unused) {
  return avals_list(p->j, ft_jaxpr_num_consts(p->j), ft_jaxpr_const_aval);
}
static PyObject *program_consts_bound(ProgramObject *p, PyObject *unused) {
  return PyBool_FromLong(ft_jaxpr_consts_bound(p->j));
}
static PyObject *program_num_eqns(ProgramObject *p, PyObject *unused) {
  return PyLong_FromLong(ft_jaxpr_num_eqns(p->j));
}

/* Converts a sequence of NumPy arrays; on failure frees what it made. */
static int arrays_from_seq(PyObject *seq, ft_array ***out, Py_ssize_t *n_out) {
  PyObject *fast = PySequence_Fast(seq, "frankentrace: expected a sequence of arrays");
  if (!fast) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  ft_array **arr = PyMem_Calloc(n ? (size_t)n : 1, sizeof *arr);
  if (!arr) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    if (!(arr[i] = from_numpy(PySequence_Fast_GET_ITEM(fast, i), (int)i))) {
      for (Py_ssize_t k = 0; k < i; k++) ft_array_free(arr[k]);
      PyMem_Free(arr);
      Py_DECREF(fast);
      return -1;
    }
  }
  Py_DECREF(fast);
  *out = arr;
  *n_out = n;
  return 0;
}

static void arrays_free(ft_array **a, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; i++) ft_array_free(a[i]);
  PyMem_Free(a);
}

/* Turns n_out library arrays into a tuple of NumPy arrays (owning them). */
static PyObject *outputs_tuple(ft_array **out, int n_out) {
  PyObject *t = PyTuple_New(n_out);
  if (!t) {
    for (int i = 0; i < n_out; i++) ft_array_free(out[i]);
    return NULL;
  }
  int i = 0;
  for (; i < n_out; i++) {
    PyObject *o = to_numpy(out[i]);
    if (!o) break;
    PyTuple_SET_ITEM(t, i, o);
  }
  if (i < n_out) {
    for (int k = i + 1; k < n_out; k++) ft_array_free(out[k]);
    Py_DECREF(t);
    return NULL;
  }
  return t;
}

static PyObject *program_bind_consts(ProgramObject *p, PyObject *seq) {
  ft_array **arr;
  Py_ssize_t n;
  if (arrays_from_seq(seq, &arr, &n) < 0) return NULL;
  ft_status st;
  LOCKED_BEGIN
  st = ft_jaxpr_bind_consts(g_ctx, p->j, (int)n, (const ft_array *const *)arr);
  LOCKED_END
  arrays_free(arr, n);
  if (st) return raise_ctx();
  Py_RETURN_NONE;
}

/* The reference interpreter (ft_eval); the GIL is released. */
static PyObject *program_eval(ProgramObject *p, PyObject *seq) {
  ft_array **arr;
  Py_ssize_t n;
  if (arrays_from_seq(seq, &arr, &n) < 0) return NULL;
  int n_out = ft_jaxpr_num_outputs(p->j);
  ft_array **out = PyMem_Calloc(n_out ? (size_t)n_out : 1, sizeof *out);
  if (!out) {
    arrays_free(arr, n);
    return PyErr_NoMemory();
  }
  ft_status st;
  PyObject *r = NULL;
  LOCKED_BEGIN
  st = ft_eval(g_ctx, p->j, (int)n, (const ft_array *const *)arr, n_out, out);
  if (st) r = NULL;
  LOCKED_END
  arrays_free(arr, n);
  if (st) {
    PyMem_Free(out);
    return raise_ctx();
  }
  r = outputs_tuple(out, n_out);
  PyMem_Free(out);
  return r;
}

static PyMethodDef program_methods[] = {
  {"text", (PyCFunction)program_text, METH_NOARGS, "The program as JAX prints a jaxpr."},
  {"hash", (PyCFunction)program_hash, METH_NOARGS, "The canonical hash (32 hex digits)."},
  {"input_avals", (PyCFunction)program_input_avals, METH_NOARGS, "[(dtype, shape, weak)]"},
  {"output_avals", (PyCFunction)program_output_avals, METH_NOARGS, "[(dtype, shape, weak)]"},
  {"const_avals", (PyCFunction)program_const_avals, METH_NOARGS, "[(dtype, shape, weak)]"},
  {"consts_bound", (PyCFunction)program_consts_bound, METH_NOARGS, "Whether constants carry values."},
  {"num_eqns", (PyCFunction)program_num_eqns, METH_NOARGS, "Top-level equations."},
  {"bind_consts", (PyCFunction)program_bind_consts, METH_O, "Binds the constvars' values."},
  {"eval", (PyCFunction)program_eval, METH_O, "Runs the reference interpreter."},
  {NULL, NULL, 0, NULL}};

static PyTypeObject ProgramType = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "frankentrace._ft.Program",
  .tp_basicsize = sizeof(ProgramObject),
  .tp_dealloc = (destructor)program_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A jaxpr held by the library (ft_jaxpr).",
  .tp_methods = program_methods,
};

#define PROGRAM_ARG(o) (((ProgramObject *)(o))->j)

/* ---------------------------------------------------------------------- Fn */

typedef struct {
  PyObject_HEAD
  ft_fn *fn;
  int n_in, n_out;
} FnObject;

static PyTypeObject FnType;

static void fn_dealloc(FnObject *f) {
  if (f->fn) {  /* the lock only: a pending error of this thread stays as it is */
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(g_lock, WAIT_LOCK);
    ft_fn_free(f->fn);
    PyThread_release_lock(g_lock);
    Py_END_ALLOW_THREADS
  }
  PyObject_Free(f);
}

/* Runs f on n converted arrays: the GIL is released during the call. */
static PyObject *fn_run(FnObject *f, ft_array **in, int n) {
  if (n != f->n_in) {
    return PyErr_Format(g_err_type ? g_err_type : PyExc_TypeError,
                        "frankentrace: the compiled function takes %d arrays, got %d", f->n_in, n);
  }
  ft_array *out_st[16], **out = out_st;
  if (f->n_out > 16 && !(out = PyMem_Calloc((size_t)f->n_out, sizeof *out))) return PyErr_NoMemory();
  ft_status st;
  Py_BEGIN_ALLOW_THREADS
  st = ft_call(f->fn, n, (const ft_array *const *)in, f->n_out, out);
  Py_END_ALLOW_THREADS
  PyObject *r = NULL;
  if (st)
    raise_status(st, ft_ctx_error(g_ctx));
  else
    r = outputs_tuple(out, f->n_out);
  if (out != out_st) PyMem_Free(out);
  return r;
}

static PyObject *fn_call(FnObject *f, PyObject *args, PyObject *kwargs) {
  if (kwargs && PyDict_Size(kwargs)) {
    PyErr_SetString(PyExc_TypeError, "frankentrace: a compiled function takes no keyword arguments");
    return NULL;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  ft_array *in_st[16], **in = in_st;
  if (n > 16 && !(in = PyMem_Calloc((size_t)n, sizeof *in))) return PyErr_NoMemory();
  Py_ssize_t i = 0;
  for (; i < n; i++)
    if (!(in[i] = from_numpy(PyTuple_GET_ITEM(args, i), (int)i))) break;
  PyObject *r = i == n ? fn_run(f, in, (int)n) : NULL;
  for (Py_ssize_t k = 0; k < i; k++) ft_array_free(in[k]);
  if (in != in_st) PyMem_Free(in);
  return r;
}

static PyObject *fn_plan(FnObject *f, PyObject *unused) {
  char *s = ft_fn_plan(f->fn);
  if (!s) return PyErr_NoMemory();
  PyObject *r = PyUnicode_FromString(s);
  ft_free(s);
  return r;
}

static PyObject *fn_stats(FnObject *f, PyObject *unused) {
  ft_jit_stats s;
  if (ft_fn_stats(f->fn, &s)) return raise_ctx_now();
  return Py_BuildValue("{s:O,s:O,s:i,s:i,s:i,s:i,s:d,s:n}", "mem_hit", s.mem_hit ? Py_True : Py_False,
                       "disk_hit", s.disk_hit ? Py_True : Py_False, "n_steps", s.n_steps,
                       "n_kernels", s.n_kernels, "n_gemm", s.n_gemm, "n_fallback", s.n_fallback,
                       "total_ms", s.total_ms, "arena_bytes", (Py_ssize_t)s.arena_bytes);
}

static PyMethodDef fn_methods[] = {
  {"plan", (PyCFunction)fn_plan, METH_NOARGS, "The execution plan as text."},
  {"stats", (PyCFunction)fn_stats, METH_NOARGS, "What the compilation did."},
  {NULL, NULL, 0, NULL}};

static PyTypeObject FnType = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "frankentrace._ft.Fn",
  .tp_basicsize = sizeof(FnObject),
  .tp_dealloc = (destructor)fn_dealloc,
  .tp_call = (ternaryfunc)fn_call,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A compiled function (ft_fn): call it with NumPy arrays; returns a tuple.",
  .tp_methods = fn_methods,
};

/* jit(program, allow_fallback, optimize) -> Fn */
static PyObject *mod_jit(PyObject *self, PyObject *args) {
  PyObject *prog;
  int allow_fallback = 1, optimize = 1;
  if (!PyArg_ParseTuple(args, "O!|pp", &ProgramType, &prog, &allow_fallback, &optimize)) return NULL;
  ft_jit_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.allow_fallback = allow_fallback;
  o.no_optimize = !optimize;
  ft_fn *fn;
  const ft_jaxpr *j = PROGRAM_ARG(prog);
  LOCKED_BEGIN
  fn = ft_jit(g_ctx, j, &o);
  LOCKED_END
  if (!fn) return raise_ctx();
  FnObject *f = PyObject_New(FnObject, &FnType);
  if (!f) {
    ft_fn_free(fn);
    return NULL;
  }
  f->fn = fn;
  f->n_in = ft_jaxpr_num_inputs(j) + (ft_jaxpr_consts_bound(j) ? 0 : ft_jaxpr_num_consts(j));
  f->n_out = ft_jaxpr_num_outputs(j);
  return (PyObject *)f;
}

/* -------------------------------------------------------------- Dispatcher */
/* ft.jit's call path: for plain NumPy arguments, the input signature (dtype
 * and shape of each) is looked up here among the last compiled entries; a
 * hit calls the Fn without leaving C. Anything else (pytrees, Python
 * scalars, other array types, keywords, a miss) goes to the Python slow
 * path, which may add an entry. */
#define DISPATCH_ENTRIES 8
#define DISPATCH_MAX_ARGS 8

typedef struct {
  int n;
  int type_num[DISPATCH_MAX_ARGS];
  int rank[DISPATCH_MAX_ARGS];
  npy_intp dims[DISPATCH_MAX_ARGS][FT_MAX_RANK];
  FnObject *fn;
  int out_kind;       /* 0: one output returned bare; 1: a tuple of outputs */
} dispatch_entry;

typedef struct {
  PyObject_HEAD
  PyObject *slow;     /* the Python slow path: slow(*args, **kwargs) */
  int n_entries, next;
  dispatch_entry e[DISPATCH_ENTRIES];
  PyObject *weakreflist;
} DispatcherObject;

static PyTypeObject DispatcherType;

/* Dispatcher(slow=None): without slow, a miss calls self._slow (subclasses). */
static PyObject *dispatcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  DispatcherObject *d = (DispatcherObject *)type->tp_alloc(type, 0);
  if (!d) return NULL;
  PyObject *slow = type == &DispatcherType && PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : NULL;
  Py_XINCREF(slow);
  d->slow = slow;
  return (PyObject *)d;
}

static void dispatcher_clear_entries(DispatcherObject *d) {
  for (int i = 0; i < d->n_entries; i++) Py_CLEAR(d->e[i].fn);
  d->n_entries = d->next = 0;
}

static void dispatcher_dealloc(DispatcherObject *d) {
  PyObject_GC_UnTrack(d);
  if (d->weakreflist) PyObject_ClearWeakRefs((PyObject *)d);
  dispatcher_clear_entries(d);
  Py_CLEAR(d->slow);
  Py_TYPE(d)->tp_free((PyObject *)d);
}

static int dispatcher_traverse(DispatcherObject *d, visitproc visit, void *arg) {
  Py_VISIT(d->slow);
  for (int i = 0; i < d->n_entries; i++) Py_VISIT(d->e[i].fn);
  return 0;
}

static int dispatcher_clear(DispatcherObject *d) {
  dispatcher_clear_entries(d);
  Py_CLEAR(d->slow);
  return 0;
}

/* The NumPy type number of a plain argument: an exact ndarray or a NumPy
 * number/bool scalar (rank 0) of a non-object dtype; -1 for anything else. */
static int plain_type_num(PyObject *o) {
  if (PyArray_CheckExact(o)) {
    int t = PyArray_DESCR((PyArrayObject *)o)->type_num;
    return t < NPY_OBJECT ? t : -1;
  }
  if (PyArray_IsScalar(o, Number) || PyArray_IsScalar(o, Bool)) {
    PyArray_Descr *d = PyArray_DescrFromScalar(o);
    if (!d) {
      PyErr_Clear();
      return -1;
    }
    int t = d->type_num;
    Py_DECREF(d);
    return t < NPY_OBJECT ? t : -1;
  }
  return -1;
}

/* Whether the plain arguments args (type numbers tn) match entry e. */
static int entry_matches(const dispatch_entry *e, PyObject *args, Py_ssize_t n, const int *tn) {
  if (e->n != n) return 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = PyTuple_GET_ITEM(args, i);
    if (tn[i] != e->type_num[i]) return 0;
    if (!PyArray_CheckExact(o)) {
      if (e->rank[i] != 0) return 0;
      continue;
    }
    PyArrayObject *a = (PyArrayObject *)o;
    if (PyArray_NDIM(a) != e->rank[i]) return 0;
    for (int k = 0; k < e->rank[i]; k++)
      if (PyArray_DIM(a, k) != e->dims[i][k]) return 0;
  }
  return 1;
}

static PyObject *dispatcher_call(DispatcherObject *d, PyObject *args, PyObject *kwargs) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  int plain = (!kwargs || !PyDict_Size(kwargs)) && n <= DISPATCH_MAX_ARGS && d->n_entries;
  int tn[DISPATCH_MAX_ARGS];
  for (Py_ssize_t i = 0; plain && i < n; i++) plain = (tn[i] = plain_type_num(PyTuple_GET_ITEM(args, i))) >= 0;
  if (plain) {
    for (int k = 0; k < d->n_entries; k++) {
      dispatch_entry *e = &d->e[k];
      if (!entry_matches(e, args, n, tn)) continue;
      ft_array *in[DISPATCH_MAX_ARGS];
      Py_ssize_t i = 0;
      for (; i < n; i++)
        if (!(in[i] = from_numpy(PyTuple_GET_ITEM(args, i), (int)i))) break;
      /* Another thread may replace the entry while the GIL is released. */
      FnObject *fn = e->fn;
      int out_kind = e->out_kind;
      Py_INCREF(fn);
      PyObject *r = i == n ? fn_run(fn, in, (int)n) : NULL;
      Py_DECREF(fn);
      for (Py_ssize_t m = 0; m < i; m++) ft_array_free(in[m]);
      if (r && out_kind == 0) {
        PyObject *one = PyTuple_GET_ITEM(r, 0);
        Py_INCREF(one);
        Py_DECREF(r);
        return one;
      }
      return r;
    }
  }
  if (d->slow) return PyObject_Call(d->slow, args, kwargs);
  PyObject *slow = PyObject_GetAttrString((PyObject *)d, "_slow");
  if (!slow) return NULL;
  PyObject *r = PyObject_Call(slow, args, kwargs);
  Py_DECREF(slow);
  return r;
}

/* add(args_tuple, fn, out_kind): remember that plain arrays shaped like args
 * run fn directly. */
static PyObject *dispatcher_add(DispatcherObject *d, PyObject *a) {
  PyObject *args, *fn;
  int out_kind;
  if (!PyArg_ParseTuple(a, "O!O!i", &PyTuple_Type, &args, &FnType, &fn, &out_kind)) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n > DISPATCH_MAX_ARGS) Py_RETURN_FALSE;
  dispatch_entry e;
  memset(&e, 0, sizeof e);
  e.n = (int)n;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = PyTuple_GET_ITEM(args, i);
    if ((e.type_num[i] = plain_type_num(o)) < 0) Py_RETURN_FALSE;
    if (!PyArray_CheckExact(o)) continue;  /* a NumPy scalar: rank 0 */
    PyArrayObject *x = (PyArrayObject *)o;
    e.rank[i] = PyArray_NDIM(x);
    if (e.rank[i] > FT_MAX_RANK) Py_RETURN_FALSE;
    for (int k = 0; k < e.rank[i]; k++) e.dims[i][k] = PyArray_DIM(x, k);
  }
  Py_INCREF(fn);
  e.fn = (FnObject *)fn;
  e.out_kind = out_kind;
  dispatch_entry *slot = &d->e[d->next];
  if (d->n_entries < DISPATCH_ENTRIES)
    d->n_entries++;
  else
    Py_CLEAR(slot->fn);
  *slot = e;
  d->next = (d->next + 1) % DISPATCH_ENTRIES;
  Py_RETURN_TRUE;
}

static PyObject *dispatcher_clear_py(DispatcherObject *d, PyObject *unused) {
  dispatcher_clear_entries(d);
  Py_RETURN_NONE;
}

static PyObject *dispatcher_size(DispatcherObject *d, PyObject *unused) {
  return PyLong_FromLong(d->n_entries);
}

static PyMethodDef dispatcher_methods[] = {
  {"add", (PyCFunction)dispatcher_add, METH_VARARGS, "add(args, fn, out_kind)"},
  {"clear", (PyCFunction)dispatcher_clear_py, METH_NOARGS, "Forget every entry."},
  {"size", (PyCFunction)dispatcher_size, METH_NOARGS, "Entries held."},
  {NULL, NULL, 0, NULL}};

static PyTypeObject DispatcherType = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "frankentrace._ft.Dispatcher",
  .tp_basicsize = sizeof(DispatcherObject),
  .tp_dealloc = (destructor)dispatcher_dealloc,
  .tp_call = (ternaryfunc)dispatcher_call,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
  .tp_traverse = (traverseproc)dispatcher_traverse,
  .tp_clear = (inquiry)dispatcher_clear,
  .tp_new = dispatcher_new,
  .tp_weaklistoffset = offsetof(DispatcherObject, weakreflist),
  .tp_doc = "Dispatcher(slow): ft.jit's per-call fast path.",
  .tp_methods = dispatcher_methods,
};

/* ---------------------------------------------------------- module functions */

static PyObject *mod_parse(PyObject *self, PyObject *args) {
  const char *text, *name = NULL;
  Py_ssize_t len;
  if (!PyArg_ParseTuple(args, "s#|z", &text, &len, &name)) return NULL;
  ft_jaxpr *j;
  PyObject *r;
  LOCKED_BEGIN
  j = ft_parse(g_ctx, text, (size_t)len, name);
  LOCKED_END
  r = program_new_from(j);
  return r;
}

/* Reads a tuple of ints into out (at most max). */
static int ints_from_py(PyObject *o, int *out, int max, int *n) {
  PyObject *seq = PySequence_Fast(o, "frankentrace: expected a sequence of integers");
  if (!seq) return -1;
  Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
  if (k > max) {
    Py_DECREF(seq);
    PyErr_Format(PyExc_ValueError, "frankentrace: at most %d entries", max);
    return -1;
  }
  for (Py_ssize_t i = 0; i < k; i++) {
    PyObject *v = PySequence_Fast_GET_ITEM(seq, i);
    long x = v == Py_None ? (long)FT_VMAP_NONE : PyLong_AsLong(v);
    if (x == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return -1;
    }
    out[i] = (int)x;
  }
  Py_DECREF(seq);
  *n = (int)k;
  return 0;
}

#define MAX_ARGS 1024

static PyObject *mod_grad_common(PyObject *args, int value_and) {
  PyObject *prog, *argnums_o;
  int has_aux = 0;
  if (!PyArg_ParseTuple(args, "O!O|p", &ProgramType, &prog, &argnums_o, &has_aux)) return NULL;
  int argnums[MAX_ARGS];  /* on the stack: another thread may run this while the GIL is released */
  int n;
  if (ints_from_py(argnums_o, argnums, MAX_ARGS, &n) < 0) return NULL;
  ft_jaxpr *r;
  LOCKED_BEGIN
  r = value_and ? ft_value_and_grad(g_ctx, PROGRAM_ARG(prog), n, argnums, has_aux)
                : ft_grad(g_ctx, PROGRAM_ARG(prog), n, argnums, has_aux);
  LOCKED_END
  return program_new_from(r);
}

static PyObject *mod_grad(PyObject *self, PyObject *args) { return mod_grad_common(args, 0); }
static PyObject *mod_value_and_grad(PyObject *self, PyObject *args) { return mod_grad_common(args, 1); }

typedef ft_jaxpr *(*unary_tf)(ft_ctx *, const ft_jaxpr *);
static PyObject *mod_unary(PyObject *args, unary_tf f) {
  PyObject *prog;
  if (!PyArg_ParseTuple(args, "O!", &ProgramType, &prog)) return NULL;
  ft_jaxpr *r;
  LOCKED_BEGIN
  r = f(g_ctx, PROGRAM_ARG(prog));
  LOCKED_END
  return program_new_from(r);
}
static PyObject *mod_jvp(PyObject *self, PyObject *args) { return mod_unary(args, ft_jvp); }
static PyObject *mod_vjp_jaxpr(PyObject *self, PyObject *args) { return mod_unary(args, ft_vjp_jaxpr); }
static PyObject *mod_dce(PyObject *self, PyObject *args) { return mod_unary(args, ft_dce); }

static PyObject *mod_vjp(PyObject *self, PyObject *args) {
  PyObject *prog;
  if (!PyArg_ParseTuple(args, "O!", &ProgramType, &prog)) return NULL;
  ft_jaxpr *fwd = NULL, *bwd = NULL;
  int n_res = 0;
  ft_status st;
  LOCKED_BEGIN
  st = ft_vjp(g_ctx, PROGRAM_ARG(prog), &fwd, &bwd, &n_res);
  LOCKED_END
  if (st) return raise_ctx();
  PyObject *a = program_new_from(fwd);
  PyObject *b = a ? program_new_from(bwd) : (ft_jaxpr_free(bwd), NULL);
  if (!b) {
    Py_XDECREF(a);
    return NULL;
  }
  return Py_BuildValue("(NNi)", a, b, n_res);
}

typedef ft_jaxpr *(*argnum_tf)(ft_ctx *, const ft_jaxpr *, int);
static PyObject *mod_argnum(PyObject *args, argnum_tf f) {
  PyObject *prog;
  int argnum;
  if (!PyArg_ParseTuple(args, "O!i", &ProgramType, &prog, &argnum)) return NULL;
  ft_jaxpr *r;
  LOCKED_BEGIN
  r = f(g_ctx, PROGRAM_ARG(prog), argnum);
  LOCKED_END
  return program_new_from(r);
}
static PyObject *mod_jacfwd(PyObject *self, PyObject *args) { return mod_argnum(args, ft_jacfwd); }
static PyObject *mod_jacrev(PyObject *self, PyObject *args) { return mod_argnum(args, ft_jacrev); }
static PyObject *mod_hessian(PyObject *self, PyObject *args) { return mod_argnum(args, ft_hessian); }

/* vmap(program, in_axes, out_axes, batched_avals) with None meaning not mapped. */
static PyObject *mod_vmap(PyObject *self, PyObject *args) {
  PyObject *prog, *in_o, *out_o, *avals_o;
  if (!PyArg_ParseTuple(args, "O!OOO", &ProgramType, &prog, &in_o, &out_o, &avals_o)) return NULL;
  /* Per call, not static: another thread may run this while the GIL is released. */
  int in_axes[MAX_ARGS], out_axes[MAX_ARGS];
  int n_in, n_out;
  if (ints_from_py(in_o, in_axes, MAX_ARGS, &n_in) < 0 ||
      ints_from_py(out_o, out_axes, MAX_ARGS, &n_out) < 0)
    return NULL;
  ft_aval *avals = PyMem_Calloc(n_in ? (size_t)n_in : 1, sizeof *avals);
  if (!avals) return PyErr_NoMemory();
  const ft_jaxpr *j = PROGRAM_ARG(prog);
  if (n_in != ft_jaxpr_num_inputs(j) || n_out != ft_jaxpr_num_outputs(j)) {
    PyMem_Free(avals);
    return PyErr_Format(PyExc_ValueError,
                        "frankentrace: vmap: %d in_axes and %d out_axes for a program of %d inputs and %d outputs",
                        n_in, n_out, ft_jaxpr_num_inputs(j), ft_jaxpr_num_outputs(j));
  }
  PyObject *seq = PySequence_Fast(avals_o, "frankentrace: vmap: avals must be a sequence");
  if (!seq) {
    PyMem_Free(avals);
    return NULL;
  }
  if (PySequence_Fast_GET_SIZE(seq) != n_in) {
    Py_DECREF(seq);
    PyMem_Free(avals);
    return PyErr_Format(PyExc_ValueError, "frankentrace: vmap: %d avals for %d inputs",
                        (int)PySequence_Fast_GET_SIZE(seq), n_in);
  }
  for (int i = 0; i < n_in; i++)
    if (aval_from_py(PySequence_Fast_GET_ITEM(seq, i), &avals[i]) < 0) {
      Py_DECREF(seq);
      PyMem_Free(avals);
      return NULL;
    }
  Py_DECREF(seq);
  ft_jaxpr *r;
  LOCKED_BEGIN
  r = ft_vmap_avals(g_ctx, j, ft_jaxpr_num_inputs(j), in_axes, ft_jaxpr_num_outputs(j), out_axes, ft_jaxpr_num_inputs(j), avals);
  LOCKED_END
  PyMem_Free(avals);
  return program_new_from(r);
}

static PyObject *mod_optimize(PyObject *self, PyObject *args) {
  PyObject *prog;
  int algebraic = 0;
  if (!PyArg_ParseTuple(args, "O!|p", &ProgramType, &prog, &algebraic)) return NULL;
  ft_jaxpr *r;
  LOCKED_BEGIN
  r = ft_optimize(g_ctx, PROGRAM_ARG(prog), algebraic ? FT_OPT_ALGEBRAIC : FT_OPT_EXACT, NULL);
  LOCKED_END
  return program_new_from(r);
}

/* emit(program, kind, name, path): ahead-of-time output (ft_jit_emit). */
static PyObject *mod_emit(PyObject *self, PyObject *args) {
  PyObject *prog;
  const char *kind, *name, *path;
  if (!PyArg_ParseTuple(args, "O!szs", &ProgramType, &prog, &kind, &name, &path)) return NULL;
  static const char *kinds[] = {"plan", "llvm", "asm", "obj", "so", "h"};
  int k = -1;
  for (int i = 0; i < 6; i++)
    if (!strcmp(kind, kinds[i])) k = i;
  if (k < 0) return PyErr_Format(PyExc_ValueError, "frankentrace: unknown emit kind '%s'", kind);
  ft_jit_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.allow_fallback = true;
  ft_status st;
  LOCKED_BEGIN
  st = ft_jit_emit(g_ctx, PROGRAM_ARG(prog), (ft_emit_kind)k, name, path, &o);
  LOCKED_END
  if (st) return raise_ctx();
  Py_RETURN_NONE;
}

/* ledger_open(dir, calls) with calls 0 none, 1 hashes, 2 bytes. */
static PyObject *mod_ledger_open(PyObject *self, PyObject *args) {
  const char *dir;
  int calls = 1;
  if (!PyArg_ParseTuple(args, "s|i", &dir, &calls)) return NULL;
  if (calls < 0 || calls > 2) return PyErr_Format(PyExc_ValueError, "frankentrace: calls must be 0, 1 or 2");
  ft_ledger_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.fsync = FT_LEDGER_FSYNC_CLOSE;
  o.calls = (ft_ledger_calls)calls;
  ft_status st = FT_OK;
  int busy = 0;
  LOCKED_BEGIN
  if (g_ledger)
    busy = 1;
  else if (!(g_ledger = ft_ledger_open(g_ctx, dir, &o)))
    st = FT_ERR_IO;
  else if ((st = ft_ctx_attach_ledger(g_ctx, g_ledger)) != FT_OK) {
    ft_ledger_close(g_ledger);
    g_ledger = NULL;
  }
  LOCKED_END
  if (busy) return raise_status(FT_ERR_INVALID_ARG, "frankentrace: a ledger is already open (ledgers do not nest)");
  if (st) return raise_ctx();
  Py_RETURN_NONE;
}

static PyObject *mod_ledger_close(PyObject *self, PyObject *unused) {
  ft_status st = FT_OK;
  LOCKED_BEGIN
  if (g_ledger) {
    ft_ctx_attach_ledger(g_ctx, NULL);
    st = ft_ledger_close(g_ledger);
    g_ledger = NULL;
  }
  LOCKED_END
  if (st) return raise_ctx();
  Py_RETURN_NONE;
}

static PyObject *mod_ledger_records(PyObject *self, PyObject *unused) {
  int64_t n = -1;
  LOCKED_BEGIN
  if (g_ledger) n = ft_ledger_num_records(g_ledger);
  LOCKED_END
  return PyLong_FromLongLong(n);
}

/* ledger_verify(dir) -> (health, records, first_bad_seq, json) */
static PyObject *mod_ledger_verify(PyObject *self, PyObject *args) {
  const char *dir;
  if (!PyArg_ParseTuple(args, "s", &dir)) return NULL;
  ft_ledger_report r;
  memset(&r, 0, sizeof r);
  ft_status st;
  LOCKED_BEGIN
  st = ft_ledger_verify(g_ctx, dir, &r);
  LOCKED_END
  if (st) {
    ft_ledger_report_free(&r);
    return raise_ctx();
  }
  static const char *health[] = {"clean", "torn", "corrupt"};
  PyObject *o = Py_BuildValue("(sLLs)", health[r.health], (long long)r.records,
                              (long long)r.first_bad_seq, r.json ? r.json : "");
  ft_ledger_report_free(&r);
  return o;
}

static PyObject *mod_set_errors(PyObject *self, PyObject *args) {
  PyObject *b, *p, *t, *u, *r;
  if (!PyArg_ParseTuple(args, "OOOOO", &b, &p, &t, &u, &r)) return NULL;
  Py_XSETREF(g_err_base, Py_NewRef(b));
  Py_XSETREF(g_err_parse, Py_NewRef(p));
  Py_XSETREF(g_err_type, Py_NewRef(t));
  Py_XSETREF(g_err_unsupported, Py_NewRef(u));
  Py_XSETREF(g_err_runtime, Py_NewRef(r));
  Py_RETURN_NONE;
}

static PyObject *mod_set_bfloat16(PyObject *self, PyObject *o) {
  PyArray_Descr *d = NULL;
  if (!PyArray_DescrConverter(o, &d)) return NULL;
  Py_XSETREF(g_bf16_descr, d);
  Py_RETURN_NONE;
}

static PyObject *mod_version(PyObject *self, PyObject *unused) {
  return PyUnicode_FromString(ft_version());
}

static PyObject *mod_is_aligned(PyObject *self, PyObject *o) {
  if (!PyArray_Check(o)) Py_RETURN_FALSE;
  PyArrayObject *a = (PyArrayObject *)o;
  return PyBool_FromLong(PyArray_IS_C_CONTIGUOUS(a) && ((uintptr_t)PyArray_DATA(a) % 64) == 0);
}

/* ------------------------------------------ a 64-byte aligned NumPy allocator */
/* NumPy's data allocator (NEP 49) replaced, on request, by one that aligns
 * every array's data to 64 bytes: such arrays go to the library without a
 * copy. realloc keeps the alignment by moving the data. */
static void *al_malloc(void *ctx, size_t n) {
  return aligned_alloc(64, n ? (n + 63) / 64 * 64 : 64);
}
static void *al_calloc(void *ctx, size_t nelem, size_t elsize) {
  if (elsize && nelem > SIZE_MAX / elsize) return NULL;
  size_t n = nelem * elsize;
  void *p = al_malloc(ctx, n);
  if (p) memset(p, 0, n ? (n + 63) / 64 * 64 : 64);
  return p;
}
extern size_t malloc_usable_size(void *ptr);
static void *al_realloc(void *ctx, void *ptr, size_t n) {
  if (!ptr) return al_malloc(ctx, n);
  void *q = al_malloc(ctx, n);
  if (!q) return NULL;
  size_t old = malloc_usable_size(ptr);
  memcpy(q, ptr, old < n ? old : n);
  free(ptr);
  return q;
}
static void al_free(void *ctx, void *ptr, size_t n) { free(ptr); }

static PyDataMem_Handler g_aligned_handler = {
  "frankentrace_aligned64", 1, {NULL, al_malloc, al_calloc, al_realloc, al_free}};

/* The aligned handler as a capsule for PyDataMem_SetHandler. */
static PyObject *mod_aligned_handler(PyObject *self, PyObject *unused) {
  return PyCapsule_New(&g_aligned_handler, "mem_handler", NULL);
}

static PyObject *mod_set_handler(PyObject *self, PyObject *cap) {
  return PyDataMem_SetHandler(cap == Py_None ? NULL : cap);
}

static PyMethodDef mod_methods[] = {
  {"parse", mod_parse, METH_VARARGS, "parse(text, name=None) -> Program"},
  {"jit", mod_jit, METH_VARARGS, "jit(program, allow_fallback=True, optimize=True) -> Fn"},
  {"grad", mod_grad, METH_VARARGS, "grad(program, argnums, has_aux=False)"},
  {"value_and_grad", mod_value_and_grad, METH_VARARGS, "value_and_grad(program, argnums, has_aux=False)"},
  {"jvp", mod_jvp, METH_VARARGS, "jvp(program)"},
  {"vjp", mod_vjp, METH_VARARGS, "vjp(program) -> (fwd, bwd, n_res)"},
  {"vjp_jaxpr", mod_vjp_jaxpr, METH_VARARGS, "vjp_jaxpr(program)"},
  {"dce", mod_dce, METH_VARARGS, "dce(program)"},
  {"jacfwd", mod_jacfwd, METH_VARARGS, "jacfwd(program, argnum)"},
  {"jacrev", mod_jacrev, METH_VARARGS, "jacrev(program, argnum)"},
  {"hessian", mod_hessian, METH_VARARGS, "hessian(program, argnum)"},
  {"vmap", mod_vmap, METH_VARARGS, "vmap(program, in_axes, out_axes, batched_avals)"},
  {"optimize", mod_optimize, METH_VARARGS, "optimize(program, algebraic=False)"},
  {"emit", mod_emit, METH_VARARGS, "emit(program, kind, name, path)"},
  {"ledger_open", mod_ledger_open, METH_VARARGS, "ledger_open(dir, calls=1)"},
  {"ledger_close", mod_ledger_close, METH_NOARGS, "ledger_close()"},
  {"ledger_records", mod_ledger_records, METH_NOARGS, "records of the open ledger, -1: none"},
  {"ledger_verify", mod_ledger_verify, METH_VARARGS, "ledger_verify(dir) -> (health, records, first_bad, json)"},
  {"_set_errors", mod_set_errors, METH_VARARGS, "installs the exception classes"},
  {"_set_bfloat16", mod_set_bfloat16, METH_O, "installs ml_dtypes' bfloat16"},
  {"version", mod_version, METH_NOARGS, "the C library's version"},
  {"is_aligned", mod_is_aligned, METH_O, "whether an array would be passed without a copy"},
  {"aligned_handler", mod_aligned_handler, METH_NOARGS, "NumPy's data allocator, 64-byte aligned (capsule)"},
  {"set_handler", mod_set_handler, METH_O, "PyDataMem_SetHandler(capsule or None): returns the old one"},
  {NULL, NULL, 0, NULL}};

static void mod_free(void *m) {
  if (g_ledger) {
    ft_ctx_attach_ledger(g_ctx, NULL);
    ft_ledger_close(g_ledger);
    g_ledger = NULL;
  }
}

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_ft",
                                    "The C binding of FrankenTrace (use the frankentrace package).",
                                    -1, mod_methods, NULL, NULL, NULL, mod_free};

PyMODINIT_FUNC PyInit__ft(void);
PyMODINIT_FUNC PyInit__ft(void) {
  import_array();
  if (PyType_Ready(&ProgramType) < 0 || PyType_Ready(&FnType) < 0 || PyType_Ready(&DispatcherType) < 0)
    return NULL;
  if (!g_ctx) {
    /* FT_CUSTOM_JVP=primal: the FT_CUSTOM_JVP_PRIMAL opt-in
     * (docs/autodiff.md), read once, when the module is first imported. */
    ft_ctx_options co = FT_CTX_OPTIONS_INIT;
    const char *cj = getenv("FT_CUSTOM_JVP");
    if (cj && *cj && strcmp(cj, "refuse")) {
      if (strcmp(cj, "primal"))
        return PyErr_Format(PyExc_ValueError, "FT_CUSTOM_JVP is '%s': it takes refuse or primal", cj);
      co.custom_jvp = FT_CUSTOM_JVP_PRIMAL;
    }
    if (!(g_ctx = ft_ctx_new(&co))) return PyErr_NoMemory();
    if (!(g_lock = PyThread_allocate_lock())) return PyErr_NoMemory();
  }
  PyObject *m = PyModule_Create(&moddef);
  if (!m) return NULL;
  Py_INCREF(&ProgramType);
  Py_INCREF(&FnType);
  Py_INCREF(&DispatcherType);
  if (PyModule_AddObject(m, "Program", (PyObject *)&ProgramType) < 0 ||
      PyModule_AddObject(m, "Fn", (PyObject *)&FnType) < 0 ||
      PyModule_AddObject(m, "Dispatcher", (PyObject *)&DispatcherType) < 0 ||
      PyModule_AddStringConstant(m, "header_version", FT_VERSION_STRING) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
