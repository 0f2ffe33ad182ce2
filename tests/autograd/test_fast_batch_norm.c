/*
 * tests/autograd/test_fast_batch_norm.c - the fast BatchNorm kernels against the reference kernels.
 */
#include "../common.h"
