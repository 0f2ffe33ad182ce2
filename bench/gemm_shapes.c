/*
 * bench/gemm_shapes.c - the time of each float32 product one training
 * step of bench/tg_bench.c's mlp_medium_step and mlp_tiny_step runs, on
 * the portable C kernels at one thread, with the strides the step passes
 * (a Linear layer's three orientations: y = x @ W^T, b's rows strided;
 * dx = g @ W, both row-major; dW = g^T @ x, a's rows strided), and their
 * sum per step. Each row is the fastest of several repetitions of a timed
 * loop (the machine may be shared).
 *
 *     gemm_shapes [auto|direct|blocked|columns|small [NAME]]
 * (the forced path; NAME: only the products whose step and name, as
 * printed, contain it)
 */
#include "autograd/ops/gemm.h"
#include "tapegrad.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* m, k, n, a's strides (i, p), b's strides (p, j): one step's products. */
static const struct {
    const char *step, *what;
    int64_t m, k, n, sa_i, sa_p, sb_p, sb_j;
} products[] = {
    {"medium", "x @ W1^T", 256, 2, 128, 2, 1, 1, 2},
    {"medium", "h @ W2^T", 256, 128, 128, 128, 1, 1, 128},
    {"medium", "h @ W3^T", 256, 128, 3, 128, 1, 1, 128},
    {"medium", "g @ W3", 256, 3, 128, 3, 1, 128, 1},
    {"medium", "g^T @ h (dW3)", 3, 256, 128, 1, 3, 128, 1},
    {"medium", "g @ W2", 256, 128, 128, 128, 1, 128, 1},
    {"medium", "g^T @ h (dW2)", 128, 256, 128, 1, 128, 128, 1},
    {"medium", "g^T @ x (dW1)", 128, 256, 2, 1, 128, 2, 1},
    {"tiny", "x @ W1^T", 32, 2, 32, 2, 1, 1, 2},
    {"tiny", "h @ W2^T", 32, 32, 32, 32, 1, 1, 32},
    {"tiny", "h @ W3^T", 32, 32, 3, 32, 1, 1, 32},
    {"tiny", "g @ W3", 32, 3, 32, 3, 1, 32, 1},
    {"tiny", "g^T @ h (dW3)", 3, 32, 32, 1, 3, 32, 1},
    {"tiny", "g @ W2", 32, 32, 32, 32, 1, 32, 1},
    {"tiny", "g^T @ h (dW2)", 32, 32, 32, 1, 32, 32, 1},
    {"tiny", "g^T @ x (dW1)", 32, 32, 2, 1, 32, 2, 1},
};

int main(int argc, char **argv)
{
    static const char *const paths[] = {"auto", "direct", "blocked",
                                        "columns", "small"};
    for (int p = 0; argc > 1 && p < (int)(sizeof paths / sizeof *paths);
         p++)
        if (strcmp(argv[1], paths[p]) == 0)
            tg_gemm_force_path((tg_gemm_path)p);
    tg_set_num_threads(1);
    tg_set_kernels(TG_KERNELS_PORTABLE);
    enum { MAXE = 256 * 256 };
    static float a[MAXE], b[MAXE], c[MAXE];
    for (int64_t i = 0; i < MAXE; i++) {
        a[i] = (float)((i * 7 % 13) - 6) / 8;
        b[i] = (float)((i * 5 % 11) - 5) / 8;
    }
    double total = 0;
    int count = (int)(sizeof products / sizeof products[0]);
    for (int q = 0; q < count; q++) {
        int64_t m = products[q].m, k = products[q].k, n = products[q].n;
        char name[64];
        snprintf(name, sizeof name, "%s %s", products[q].step,
                 products[q].what);
        if (argc > 2 && !strstr(name, argv[2]))
            continue;
        double best = 1e30;
        int iters = (int)(2e7 / (double)(m * k * n)) + 1;
        for (int rep = 0; rep < 7; rep++) {
            double t0 = now();
            for (int it = 0; it < iters; it++)
                tg_gemm_f32(a, products[q].sa_i, products[q].sa_p, b,
                            products[q].sb_p, products[q].sb_j, c, m, k, n);
            double t = (now() - t0) / iters;
            if (t < best)
                best = t;
        }
        total += best;
        printf("%-6s %-14s (%3lld,%3lld,%3lld) %9.3f us %6.1f GFLOP/s\n",
               products[q].step, products[q].what, (long long)m,
               (long long)k, (long long)n, best * 1e6,
               2.0 * (double)(m * k * n) / best * 1e-9);
        if (q + 1 == count || strcmp(products[q + 1].step, products[q].step)) {
            printf("%-6s all %d products %26.3f us\n", products[q].step,
                   q + 1 - (q >= 8 ? 8 : 0), total * 1e6);
            total = 0;
        }
    }
    return 0;
}
