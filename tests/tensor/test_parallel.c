/*
 * tests/tensor/test_parallel.c - tg_set_kernels, tg_set_num_threads and the environment variables TG_KERNELS, TG_NUM_THREADS.
 */
#include "../common.h"
