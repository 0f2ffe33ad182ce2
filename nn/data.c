/*
 * nn/data.c - seeded toy datasets, a shuffled train/validation split,
 * mini-batches over a dataset (as torch.utils.data.DataLoader) and the
 * accuracy of a batch of logits.
 *
 * The three 2-D problems put n points in each class, class after class
 * (row k n + i is point i of class k, labelled k), with t_i = i / (n - 1)
 * (t_0 = 0 when n == 1: np.linspace(0, 1, n)). Everything is computed in
 * double and rounded once to float32:
 *
 *   spirals, class k of K:  r = t_i,  theta = 2 pi k / K + 3 pi t_i
 *                           x = (r cos theta, r sin theta) + noise z
 *     (K arms from the origin out to radius 1, each turning 3 pi = one and
 *     a half turns, rotated 2 pi / K from one another; the CS231n
 *     construction with the noise on the points rather than on theta);
 *   moons (K = 2), s = pi t_i:
 *                           class 0 (outer): (cos s, sin s) + noise z
 *                           class 1 (inner): (1 - cos s, 1 - sin s - 0.5)
 *                                            + noise z
 *     (scikit-learn's make_moons(2 n, shuffle=False));
 *   blobs, class k of K:    x = 2 (cos(2 pi k / K), sin(2 pi k / K))
 *                               + spread z
 *
 * where z (N, 2) = tg_randn_gen(g, (N, 2), TG_FLOAT64), one call drawn
 * before the points are made, whatever the noise (so a generator advances
 * by the same draws at noise 0 too); row r of the dataset takes row r of
 * z, which is torch.randn(N, 2, dtype=torch.float64, generator=g) for the
 * same seed. Same seed, same dataset, on any machine that computes cos and
 * sin in double the same way.
 *
 * Shuffling uses torch.randperm's algorithm on the library's generator
 * (PyTorch 1.13, n < 2^32 / 20): the identity, then for i = 0 .. n - 2
 * swap element i with element i + j, j = tg_randint(0, n - i) (one 32-bit
 * draw modulo n - i); so after tg_manual_seed(s) the order equals
 * torch.manual_seed(s); torch.randperm(n). tg_dataset_split draws one
 * permutation; tg_batches draws one at the start of every epoch.
 *
 * Output datasets (out, train, val) are overwritten, not released: pass
 * fresh ones, or ones already emptied by tg_dataset_free. After an error
 * they hold NULL tensors (so tg_dataset_free on them is harmless).
 *
 * What this file is not: no file formats, no data augmentation, no worker
 * threads, no DataLoader sampler objects. A dataset's inputs may be any
 * tensor with the rows along dim 0 (x (N, ...) of any dtype; the toy
 * problems make (N, 2) float32); its labels are int64 (N,).
 */
#include "nn.h"

#include "../tensor/debug.h"
#include "../tensor/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const double TG_PI = 3.14159265358979323846;

void tg_dataset_free(tg_dataset *d)
{
    if (!d)
        return;
    tg_release(d->x);
    tg_release(d->y);
    d->x = NULL;
    d->y = NULL;
}

/* ------------------------------------------------------------- toy data */

/* Point i of n of class k (of classes), before the noise. */
typedef void (*point_fn)(int64_t i, int64_t n, int k, int classes,
                         double xy[2]);

/* np.linspace(0, 1, n)[i], with [0] for n == 1. */
static double unit_step(int64_t i, int64_t n)
{
    return n > 1 ? (double)i / (double)(n - 1) : 0.0;
}

static void spiral_point(int64_t i, int64_t n, int k, int classes,
                         double xy[2])
{
    double r = unit_step(i, n);
    double theta = 2.0 * TG_PI * k / classes + 3.0 * TG_PI * r;
    xy[0] = r * cos(theta);
    xy[1] = r * sin(theta);
}

static void moon_point(int64_t i, int64_t n, int k, int classes,
                       double xy[2])
{
    (void)classes;
    double s = TG_PI * unit_step(i, n);
    if (k == 0) {
        xy[0] = cos(s);
        xy[1] = sin(s);
    } else {
        xy[0] = 1.0 - cos(s);
        xy[1] = 1.0 - sin(s) - 0.5;
    }
}

static void blob_centre(int64_t i, int64_t n, int k, int classes,
                        double xy[2])
{
    (void)i;
    (void)n;
    double a = 2.0 * TG_PI * k / classes;
    xy[0] = 2.0 * cos(a);
    xy[1] = 2.0 * sin(a);
}

/* Checks the arguments shared by the three problems and fills out with
 * x (N, 2) = point + noise * z and y (N,) = class. out is set to NULL
 * tensors first, so it holds NULLs after any error. */
static int make_toy(const char *fn, int64_t n_per_class, int classes,
                    double noise, const char *noise_name, point_fn point,
                    tg_generator *g, tg_dataset *out)
{
    if (!out) {
        tg_error(fn,
                 "out is NULL\n"
                 "  rule: pass the address of a tg_dataset to fill\n"
                 "  hint: tg_dataset d; %s(..., &d); ... "
                 "tg_dataset_free(&d);",
                 fn);
        return -1;
    }
    out->x = NULL;
    out->y = NULL;
    if (n_per_class < 1) {
        tg_error(fn,
                 "n_per_class is %lld\n"
                 "  rule: every class needs at least one point",
                 (long long)n_per_class);
        return -1;
    }
    if (classes < 2) {
        tg_error(fn,
                 "classes is %d\n"
                 "  rule: a classification problem has at least 2 classes",
                 classes);
        return -1;
    }
    if (!(noise >= 0) || isinf(noise)) {
        tg_error(fn,
                 "%s is %g\n"
                 "  rule: %s is the standard deviation of the Gaussian "
                 "jitter: a finite number >= 0\n"
                 "  hint: 0 gives the exact curves; 0.1 to 0.3 is a usual "
                 "amount",
                 noise_name, noise, noise_name);
        return -1;
    }
    if (n_per_class > TG_MAX_NUMEL / 2 / classes) {
        tg_error(fn,
                 "%lld points per class in %d classes is too many\n"
                 "  rule: the dataset has at most %lld points",
                 (long long)n_per_class, classes,
                 (long long)(TG_MAX_NUMEL / 2));
        return -1;
    }
    int64_t n = n_per_class * classes;
    tg_tensor *z = tg_randn_gen(g, TG_SHAPE(n, 2), TG_FLOAT64);
    tg_tensor *x = z ? tg_alloc(TG_SHAPE(n, 2), TG_FLOAT32) : NULL;
    tg_tensor *y = x ? tg_alloc(TG_SHAPE(n), TG_INT64) : NULL;
    if (!y) {
        tg_release(z);
        tg_release(x);
        return -1;
    }
    const double *zd = (const double *)tg_base_ptr(z); // (N, 2)
    float *xd = (float *)tg_base_ptr(x);               // (N, 2)
    int64_t *yd = (int64_t *)tg_base_ptr(y);           // (N,)
    for (int k = 0; k < classes; k++)
        for (int64_t i = 0; i < n_per_class; i++) {
            int64_t row = k * n_per_class + i;
            double xy[2];
            point(i, n_per_class, k, classes, xy);
            xd[2 * row] = (float)(xy[0] + noise * zd[2 * row]);
            xd[2 * row + 1] = (float)(xy[1] + noise * zd[2 * row + 1]);
            yd[row] = k;
        }
    tg_release(z);
    out->x = x;
    out->y = y;
    return 0;
}

int tg_make_spirals(int64_t n_per_class, int classes, double noise,
                    tg_generator *g, tg_dataset *out)
{
    return make_toy("tg_make_spirals", n_per_class, classes, noise, "noise",
                    spiral_point, g, out);
}

int tg_make_moons(int64_t n_per_class, double noise, tg_generator *g,
                  tg_dataset *out)
{
    return make_toy("tg_make_moons", n_per_class, 2, noise, "noise",
                    moon_point, g, out);
}

int tg_make_blobs(int64_t n_per_class, int classes, double spread,
                  tg_generator *g, tg_dataset *out)
{
    return make_toy("tg_make_blobs", n_per_class, classes, spread, "spread",
                    blob_centre, g, out);
}

/* -------------------------------------------------------- rows, orders */

/* Checks that d is a dataset: rows along dim 0 of x, one int64 label per
 * row. A NULL x or y (a constructor that failed and said so) fails
 * without a second message. */
static bool dataset_ok(const char *fn, const tg_dataset *d)
{
    if (!d) {
        tg_error(fn, "the dataset is NULL\n"
                     "  rule: pass the address of a filled tg_dataset");
        return false;
    }
    if (!d->x || !d->y)
        return false;
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
    if (d->x->ndim < 1) {
        tg_error(fn,
                 "x is a 0-d tensor\n"
                 "  rule: x holds one example per row, along dim 0: "
                 "(N, D), or (N, ...)");
        return false;
    }
    if (d->y->ndim != 1 || d->y->dtype != TG_INT64) {
        tg_error(fn,
                 "y has dtype %s and shape %s\n"
                 "  rule: the labels are an int64 tensor (N,), one class "
                 "index per row of x\n"
                 "  hint: make them with tg_from_array(..., TG_INT64)",
                 tg_dtype_name(d->y->dtype), tg_shape_str(d->y, s1));
        return false;
    }
    if (d->x->shape[0] != d->y->shape[0]) {
        tg_error(fn,
                 "x of shape %s has %lld row%s but y of shape %s has %lld "
                 "label%s\n"
                 "  rule: one label per row of x",
                 tg_shape_str(d->x, s1), (long long)d->x->shape[0],
                 tg_plural(d->x->shape[0]), tg_shape_str(d->y, s2),
                 (long long)d->y->shape[0], tg_plural(d->y->shape[0]));
        return false;
    }
    return true;
}

/* order[0 .. n) = torch.randperm(n, generator=g): Fisher-Yates from the
 * front, one draw of tg_randint's per swap (see the file header). */
static void random_order(tg_generator *g, int64_t *order, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    for (int64_t i = 0; i + 1 < n; i++) {
        int64_t j = i + (int64_t)tg_random_below(g, (uint64_t)(n - i));
        int64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* Rows rows[0 .. count) of the contiguous tensor src (N, ...) as a new
 * tensor (count, ...): copies, with no gradient. */
static tg_tensor *gather_rows(const tg_tensor *src, const int64_t *rows,
                              int64_t count)
{
    int64_t shape[TG_MAX_DIMS];
    memcpy(shape, src->shape, sizeof shape);
    shape[0] = count;
    tg_tensor *out = tg_alloc(shape, src->ndim, src->dtype);
    if (!out)
        return NULL;
    size_t row_bytes = tg_dtype_size(src->dtype);
    for (int d = 1; d < src->ndim; d++)
        row_bytes *= (size_t)src->shape[d];
    const char *from = tg_base_ptr(src);
    char *to = tg_base_ptr(out);
    for (int64_t i = 0; i < count; i++)
        memcpy(to + (size_t)i * row_bytes,
               from + (size_t)rows[i] * row_bytes, row_bytes);
    return out;
}

/* ----------------------------------------------------------------- split */

int tg_dataset_split(const tg_dataset *d, double val_fraction,
                     tg_generator *g, tg_dataset *train, tg_dataset *val)
{
    const char *fn = "tg_dataset_split";
    if (!train || !val || train == val || (const tg_dataset *)train == d ||
        (const tg_dataset *)val == d) {
        tg_error(fn,
                 "train and val must be two different datasets to fill, "
                 "other than d\n"
                 "  rule: the split writes new tensors into *train and "
                 "*val and leaves d unchanged\n"
                 "  hint: tg_dataset tr, va; tg_dataset_split(&d, 0.2, "
                 "NULL, &tr, &va);");
        if (train && (const tg_dataset *)train != d)
            *train = (tg_dataset){NULL, NULL};
        if (val && (const tg_dataset *)val != d)
            *val = (tg_dataset){NULL, NULL};
        return -1;
    }
    *train = (tg_dataset){NULL, NULL};
    *val = (tg_dataset){NULL, NULL};
    if (!dataset_ok(fn, d))
        return -1;
    if (!(val_fraction >= 0 && val_fraction < 1)) {
        tg_error(fn,
                 "val_fraction is %g\n"
                 "  rule: the share of rows held out is in [0, 1)\n"
                 "  hint: 0.2 keeps a fifth of the rows for validation",
                 val_fraction);
        return -1;
    }
    int64_t n = d->x->shape[0];
    /* round half away from zero: 0.25 of 10 rows is 3 */
    int64_t n_val = (int64_t)llround(val_fraction * (double)n);
    int64_t n_train = n - n_val;
    if (n_train < 1) {
        tg_error(fn,
                 "holding out %g of %lld rows leaves no row for training\n"
                 "  rule: round(val_fraction * N) must be less than N",
                 val_fraction, (long long)n);
        return -1;
    }
    int64_t *order = tg_malloc((size_t)n * sizeof *order);
    if (!order) {
        tg_error(fn, "out of memory for a permutation of %lld rows",
                 (long long)n);
        return -1;
    }
    tg_tensor *x = NULL, *y = NULL;
    tg_dataset tr = {NULL, NULL}, va = {NULL, NULL};
    int rc = -1;
    random_order(g, order, n);
    x = tg_contiguous_as(d->x, d->x->dtype);
    y = x ? tg_contiguous_as(d->y, TG_INT64) : NULL;
    if (!y)
        goto done;
    tr.x = gather_rows(x, order, n_train);
    tr.y = tr.x ? gather_rows(y, order, n_train) : NULL;
    va.x = tr.y ? gather_rows(x, order + n_train, n_val) : NULL;
    va.y = va.x ? gather_rows(y, order + n_train, n_val) : NULL;
    if (!va.y) {
        tg_dataset_free(&tr);
        tg_dataset_free(&va);
        goto done;
    }
    *train = tr;
    *val = va;
    rc = 0;
done:
    tg_release(x);
    tg_release(y);
    free(order);
    return rc;
}

/* ---------------------------------------------------------- mini-batches */

struct tg_batches {
    tg_tensor *x; // (N, ...) the dataset's x, contiguous
    tg_tensor *y; // (N,) int64, contiguous
    int64_t n, batch_size;
    bool shuffle, drop_last;
    tg_generator *g; // borrowed; NULL: the default generator
    int64_t *order;  // (N,) the rows of this epoch, in visiting order
    int64_t pos;     // the next position in order
    bool in_epoch;   // false: the next call starts an epoch
};

tg_batches *tg_batches_new(const tg_dataset *d, int64_t batch_size,
                           bool shuffle, bool drop_last, tg_generator *g)
{
    const char *fn = "tg_batches_new";
    if (!dataset_ok(fn, d))
        return NULL;
    if (batch_size < 1) {
        tg_error(fn,
                 "batch_size is %lld\n"
                 "  rule: a batch holds at least one row\n"
                 "  hint: 32 to 256 rows is usual; the whole dataset is "
                 "batch_size = N",
                 (long long)batch_size);
        return NULL;
    }
    int64_t n = d->x->shape[0];
    tg_batches *it = tg_calloc(1, sizeof *it);
    int64_t *order = tg_malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!it || !order) {
        free(it);
        free(order);
        tg_error(fn, "out of memory for the batches of %lld rows",
                 (long long)n);
        return NULL;
    }
    it->order = order;
    /* A non-contiguous x or y is copied once here, so that every batch
     * is a run of memcpy's. */
    it->x = tg_contiguous_as(d->x, d->x->dtype);
    it->y = it->x ? tg_contiguous_as(d->y, TG_INT64) : NULL;
    if (!it->y) {
        tg_batches_free(it);
        return NULL;
    }
    it->n = n;
    it->batch_size = batch_size;
    it->shuffle = shuffle;
    it->drop_last = drop_last;
    it->g = g;
    return it;
}

bool tg_batches_next(tg_batches *it, tg_tensor **x, tg_tensor **y)
{
    const char *fn = "tg_batches_next";
    if (x)
        *x = NULL;
    if (y)
        *y = NULL;
    if (!it) // tg_batches_new failed and said why
        return false;
    if (!x || !y) {
        tg_error(fn,
                 "%s is NULL\n"
                 "  rule: pass the addresses of two tensor pointers to "
                 "fill\n"
                 "  hint: tg_tensor *x, *y; while (tg_batches_next(it, "
                 "&x, &y)) { ...; tg_release(x); tg_release(y); }",
                 !x ? "x" : "y");
        return false;
    }
    if (!it->in_epoch) {
        if (it->shuffle) {
            random_order(it->g, it->order, it->n);
        } else {
            for (int64_t i = 0; i < it->n; i++)
                it->order[i] = i;
        }
        it->pos = 0;
        it->in_epoch = true;
    }
    int64_t left = it->n - it->pos;
    int64_t take = left < it->batch_size ? left : it->batch_size;
    if (take == 0 || (it->drop_last && take < it->batch_size)) {
        it->in_epoch = false; // the epoch is over; the next call starts one
        return false;
    }
    tg_tensor *bx = gather_rows(it->x, it->order + it->pos, take);
    tg_tensor *by = bx ? gather_rows(it->y, it->order + it->pos, take) : NULL;
    if (!by) {
        tg_release(bx);
        return false;
    }
    it->pos += take;
    *x = bx;
    *y = by;
    return true;
}

int64_t tg_batches_per_epoch(const tg_batches *it)
{
    if (!it) // tg_batches_new failed and said why
        return -1;
    int64_t full = it->n / it->batch_size;
    return full + (!it->drop_last && it->n % it->batch_size != 0);
}

void tg_batches_free(tg_batches *it)
{
    if (!it)
        return;
    tg_release(it->x);
    tg_release(it->y);
    free(it->order);
    free(it);
}

/* -------------------------------------------------------------- accuracy */

/* The share of rows whose argmax is the label, as
 * (logits.argmax(1) == labels).float().mean(). An empty batch (N == 0) is
 * an error rather than a silent 0 / 0, and a label outside [0, C) is an
 * error rather than a wrong answer (tg_cross_entropy refuses it too). */
double tg_accuracy(const tg_tensor *logits, const tg_tensor *labels)
{
    const char *fn = "tg_accuracy";
    if (!logits || !labels)
        return NAN;
    tg_check_alive("tg_accuracy", logits);
    tg_check_alive("tg_accuracy", labels);
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
    if (logits->ndim != 2) {
        tg_error(fn,
                 "logits have shape %s\n"
                 "  rule: logits are (N, C): one row of C class scores per "
                 "example\n"
                 "  hint: one example's scores (C,) become a batch with "
                 "tg_unsqueeze(logits, 0)",
                 tg_shape_str(logits, s1));
        return NAN;
    }
    if (labels->dtype != TG_INT64) {
        tg_error(fn,
                 "labels are %s\n"
                 "  rule: labels are int64 class indices, as for "
                 "tg_cross_entropy",
                 tg_dtype_name(labels->dtype));
        return NAN;
    }
    int64_t n = logits->shape[0], c = logits->shape[1];
    if (labels->ndim != 1 || labels->shape[0] != n) {
        tg_error(fn,
                 "logits of shape %s and labels of shape %s do not match\n"
                 "  rule: one label per row of logits: labels must be "
                 "(%lld,)",
                 tg_shape_str(logits, s1), tg_shape_str(labels, s2),
                 (long long)n);
        return NAN;
    }
    if (n == 0 || c == 0) {
        tg_error(fn,
                 "logits of shape %s have no %s\n"
                 "  rule: the accuracy of %s is undefined",
                 tg_shape_str(logits, s1), n == 0 ? "rows" : "classes",
                 n == 0 ? "no examples (0 / 0)"
                        : "rows without classes (no argmax)");
        return NAN;
    }
    /* torch.argmax: the first maximum on ties, the first NaN of a row
     * counts as its maximum, int64 scores compared exactly */
    tg_tensor *pred = tg_argmax(logits, 1, false); // (N,) int64, contiguous
    if (!pred)
        return NAN;
    const int64_t *best = tg_data_i64(pred);
    const char *lp = tg_base_ptr(labels);
    int64_t correct = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t label = *(const int64_t *)(lp + i * labels->strides[0] *
                                                    (int64_t)sizeof(int64_t));
        if (label < 0 || label >= c) {
            tg_error(fn,
                     "label %lld of row %lld is not a class of logits of "
                     "shape %s\n"
                     "  rule: labels are in [0, C) = [0, %lld)",
                     (long long)label, (long long)i,
                     tg_shape_str(logits, s1), (long long)c);
            tg_release(pred);
            return NAN;
        }
        correct += best[i] == label;
    }
    tg_release(pred);
    return (double)correct / (double)n;
}
