/* Complex transcendentals of the shared math library (vm_complex.c): each
 * takes the parts of z (and of w for pow) and writes the parts of the
 * result; complex64 callers pass the float parts widened and round each
 * result part to float once. Every NaN part is the canonical quiet NaN. */
#ifndef FT_VM_COMPLEX_H
#define FT_VM_COMPLEX_H

void ft_vm_cexp_f64(double a, double b, double *re, double *im);
void ft_vm_clog_f64(double a, double b, double *re, double *im);
void ft_vm_csqrt_f64(double a, double b, double *re, double *im);
void ft_vm_csin_f64(double a, double b, double *re, double *im);
void ft_vm_ccos_f64(double a, double b, double *re, double *im);
void ft_vm_ctan_f64(double a, double b, double *re, double *im);
void ft_vm_csinh_f64(double a, double b, double *re, double *im);
void ft_vm_ccosh_f64(double a, double b, double *re, double *im);
void ft_vm_ctanh_f64(double a, double b, double *re, double *im);
void ft_vm_clog1p_f64(double a, double b, double *re, double *im);
void ft_vm_cexpm1_f64(double a, double b, double *re, double *im);
void ft_vm_cexp2_f64(double a, double b, double *re, double *im);
void ft_vm_clogistic_f64(double a, double b, double *re, double *im);
void ft_vm_crsqrt_f64(double a, double b, double *re, double *im);
void ft_vm_casin_f64(double a, double b, double *re, double *im);
void ft_vm_cacos_f64(double a, double b, double *re, double *im);
void ft_vm_catan_f64(double a, double b, double *re, double *im);
void ft_vm_casinh_f64(double a, double b, double *re, double *im);
void ft_vm_cacosh_f64(double a, double b, double *re, double *im);
void ft_vm_catanh_f64(double a, double b, double *re, double *im);
void ft_vm_cpow_f64(double a, double b, double c, double d, double *re, double *im);

/* The unary functions above as X(ID, name): ft_vm_c<name>_f64 computes the
 * primitive FT_P_<ID> on complex values. The interpreter (unary_cpx) and
 * the JIT's loop kernels (codegen.c) both dispatch from this one list. */
#define FT_VM_COMPLEX_UNARY(X)                                                                \
    X(EXP, exp) X(EXP2, exp2) X(LOG, log) X(SQRT, sqrt) X(SIN, sin) X(COS, cos) X(TAN, tan)    \
    X(SINH, sinh) X(COSH, cosh) X(TANH, tanh) X(LOG1P, log1p) X(EXPM1, expm1)                 \
    X(LOGISTIC, logistic) X(RSQRT, rsqrt) X(ASIN, asin) X(ACOS, acos) X(ATAN, atan)           \
    X(ASINH, asinh) X(ACOSH, acosh) X(ATANH, atanh)

#endif
