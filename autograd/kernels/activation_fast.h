/*
 * autograd/kernels/activation_fast.h - the fast float32 tanh
 * (activation_fast.c) as autograd/ops/activation.c calls it. Not
 * installed.
 *
 * The op, with the math, the plain kernel (C's tanhf) and the backward,
 * is autograd/ops/activation.c; it runs this kernel unless tg_get_kernels()
 * is TG_KERNELS_REFERENCE.
 */
#ifndef TG_AUTOGRAD_KERNELS_ACTIVATION_FAST_H
#define TG_AUTOGRAD_KERNELS_ACTIVATION_FAST_H

#include "../internal.h"

/* tanh of one float32, computed in double and rounded once (see
 * activation_fast.c): exported for the tests, which hold it to the float64
 * answer over the float32 range. */
float tg_tanh_f32_fast_one(float x);

/* The elementwise loop of tanh on float32 (the tg_elementwise_kernel
 * form: data[0] the output, data[1] the input, st their strides in
 * elements, n elements). */
void tg_tanh_f32_fast(char **data, const int64_t *st, int64_t n, void *ctx);

#endif
