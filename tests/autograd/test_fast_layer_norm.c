/*
 * tests/autograd/test_fast_layer_norm.c - the fast LayerNorm kernels against the reference kernels.
 */
#include "../common.h"
