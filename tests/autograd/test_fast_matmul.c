/*
 * tests/autograd/test_fast_matmul.c - the blocked matmul kernel (and OpenBLAS, when built with it) against the reference kernel.
 */
#include "../common.h"
