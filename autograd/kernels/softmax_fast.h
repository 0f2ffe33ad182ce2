/*
 * autograd/kernels/softmax_fast.h - the fast float32 softmax and
 * log_softmax over contiguous rows (softmax_fast.c), as
 * autograd/ops/softmax.c calls them. Not installed.
 *
 * The ops, with the math, the plain kernel and the backwards, are
 * autograd/ops/softmax.c; it runs this kernel for a float32 x along its
 * last dim unless tg_get_kernels() is TG_KERNELS_REFERENCE.
 */
#ifndef TG_AUTOGRAD_KERNELS_SOFTMAX_FAST_H
#define TG_AUTOGRAD_KERNELS_SOFTMAX_FAST_H

#include <stdbool.h>
#include <stdint.h>

/* out[r, j] = softmax or log_softmax of x[r, :] at j, for rows rows of n
 * contiguous float32 elements: the math of softmax.c's softmax_row in
 * double, rounded once, with exp and log from exp_log_fast.h. */
void tg_softmax_rows_f32_fast(const float *x, int64_t rows, int64_t n,
                              float *out, bool log_form);

#endif
