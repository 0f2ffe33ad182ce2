/*
 * tests/autograd/norm_clone_bits.c - prints one hash of every output of
 * the fast LayerNorm and BatchNorm kernels (y, mean, rstd, dx, dweight,
 * dbias; float32 and float64; the small-row path, chunked rows, short
 * rows, BatchNorm's blocks of rows and whole channels) and of the fast
 * float32 tanh, softmax and log_softmax (the exp and log of
 * autograd/kernels/exp_log_fast.h; short and long rows), for
 * norm_clone_bits.sh to compare between two runs of this program: one on
 * the CPU, which picks the kernels' AVX-512 (or AVX2) clone, and one
 * under valgrind, whose CPU offers no AVX-512 and so runs the AVX2 clone.
 * The same hashes mean the same bits from both clones.
 *
 * With --flip it changes the last bit of one dx element before hashing:
 * the wrong answer the script must tell apart.
 *
 * Not a Criterion test: it only prints; the script decides.
 */
#include "tapegrad.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint64_t hash = 1469598103934665603u; // FNV-1a, 64 bits

static void mix(const tg_tensor *t)
{
    const unsigned char *p = t->dtype == TG_FLOAT32
                                 ? (const void *)tg_data_f32((tg_tensor *)t)
                                 : (const void *)tg_data_f64((tg_tensor *)t);
    size_t n = (size_t)t->numel * tg_dtype_size(t->dtype);
    for (size_t i = 0; i < n; i++) {
        hash ^= p[i];
        hash *= 1099511628211u;
    }
}

/* Forward and backward of one case; returns -1 when an op fails. */
static int run(bool ln, const int64_t *shape, int ndim, tg_dtype dtype,
               bool flip)
{
    tg_manual_seed(5);
    int64_t D = ln ? shape[ndim - 1] : shape[1];
    tg_tensor *x = tg_randn(shape, ndim, dtype);
    tg_tensor *dy = tg_randn(shape, ndim, dtype);
    tg_tensor *w = tg_randn(&D, 1, dtype), *b = tg_randn(&D, 1, dtype);
    tg_set_requires_grad(x, true);
    tg_set_requires_grad(w, true);
    tg_set_requires_grad(b, true);
    tg_tensor *mean = NULL, *rstd = NULL, *y;
    tg_batch_norm_options o = tg_batch_norm_defaults();
    if (ln)
        y = tg_layer_norm_ex(x, shape + ndim - 1, 1, w, b, 1e-5, &mean,
                             &rstd);
    else
        y = tg_batch_norm_ex(x, NULL, NULL, w, b, &o, &mean, &rstd);
    tg_backward_options bo = {.grad = dy};
    int rc = y && tg_backward_ex(y, &bo) == 0 ? 0 : -1;
    if (rc == 0) {
        if (flip) { // the last bit of dx's first element
            unsigned char *p = dtype == TG_FLOAT32
                                   ? (void *)tg_data_f32(x->grad)
                                   : (void *)tg_data_f64(x->grad);
            p[0] ^= 1;
        }
        mix(y);
        mix(mean);
        mix(rstd);
        mix(x->grad);
        mix(w->grad);
        mix(b->grad);
    }
    tg_release(y);
    tg_release(mean);
    tg_release(rstd);
    tg_clear_grad(x);
    tg_clear_grad(w);
    tg_clear_grad(b);
    tg_release(b);
    tg_release(w);
    tg_release(dy);
    tg_release(x);
    return rc;
}

/* tanh, softmax and log_softmax of float32 (rows, n), and its mean and
 * std over dim 0 (the vectorised column sums of reduce.c) */
static int run_exp_log(int64_t rows, int64_t n)
{
    tg_manual_seed(6);
    tg_tensor *z = tg_randn(TG_SHAPE(rows, n), TG_FLOAT32);
    tg_tensor *x = tg_mul_scalar(z, 5.0);
    tg_tensor *t = tg_tanh(x), *s = tg_softmax(x, 1);
    tg_tensor *l = tg_log_softmax(x, 1);
    tg_tensor *m = tg_mean(x, TG_DIMS(0), false);
    tg_tensor *sd = tg_std(x, TG_DIMS(0), 1, false);
    int rc = t && s && l && m && sd ? 0 : -1;
    if (rc == 0) {
        mix(t);
        mix(s);
        mix(l);
        mix(m);
        mix(sd);
    }
    tg_release(sd);
    tg_release(m);
    tg_release(l);
    tg_release(s);
    tg_release(t);
    tg_release(x);
    tg_release(z);
    return rc;
}

int main(int argc, char **argv)
{
    bool flip = argc > 1 && strcmp(argv[1], "--flip") == 0;
    tg_set_num_threads(1);
    static const struct {
        bool ln;
        int ndim;
        int64_t shape[3];
    } cases[] = {
        {true, 2, {64, 768}},  {true, 2, {512, 257}}, {true, 2, {37, 19}},
        {false, 2, {700, 300}}, {false, 3, {8, 16, 33}},
    };
    for (int d = 0; d < 2; d++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            if (run(cases[c].ln, cases[c].shape, cases[c].ndim,
                    d ? TG_FLOAT64 : TG_FLOAT32, flip && c == 0) < 0) {
                fprintf(stderr, "norm_clone_bits: %s\n", tg_last_error());
                return 1;
            }
    if (run_exp_log(300, 27) < 0 || run_exp_log(3, 2000) < 0) {
        fprintf(stderr, "norm_clone_bits: %s\n", tg_last_error());
        return 1;
    }
    printf("%016llx\n", (unsigned long long)hash);
    return 0;
}
