/*
 * tests/nn/test_data.c - the toy datasets, the train/validation split,
 * the mini-batches and the accuracy (nn/data.c).
 *
 * Covered here: the geometry of spirals, moons and blobs against NumPy
 * (scripts/reference/gen_data.py, noise 0), the noise as exactly
 * noise * tg_randn_gen(g, (N, 2), float64) on top of it, seeding (same
 * seed same data, the default generator for g NULL); the split's sizes,
 * rows (the union of train and val is the dataset), rounding and order
 * (torch.randperm's, the permutations below checked by hand against
 * PyTorch 1.13); the batches' coverage of every row once per epoch, in
 * order or in a fresh order per epoch, drop_last, the epoch boundary and
 * per_epoch; the accuracy against NumPy's argmax, with ties and NaN as
 * torch.argmax; every error and its message.
 *
 * The permutations, from PyTorch 1.13:
 *   g = torch.Generator().manual_seed(5)
 *   torch.randperm(10, generator=g)  # [1, 4, 9, 6, 3, 5, 0, 2, 8, 7]
 *   torch.randperm(10, generator=g)  # [4, 2, 8, 7, 6, 1, 0, 3, 5, 9]
 *   torch.randperm(7, generator=torch.Generator().manual_seed(11))
 *                                    # [4, 0, 2, 6, 3, 1, 5]
 * and torch.manual_seed(5); torch.randperm(10) gives the first again.
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Geometry tolerance: absolute 2e-7. The C code and NumPy both compute in
 * float64 (i / (n - 1) against np.linspace, libm's cos and sin against
 * NumPy's), which can differ in the last bit of a double; rounded to
 * float32 that is at most one float32 ulp, and the points lie within
 * radius 2, where an ulp is at most 2.4e-7 (1.2e-7 below 1). A wrong
 * angle, radius or offset moves points by 1e-2 or more. */
#define GEOM_ATOL 2.4e-7

typedef int (*make_fn)(int64_t n, int classes, double noise, tg_generator *g,
                       tg_dataset *out);

static int make_moons2(int64_t n, int classes, double noise, tg_generator *g,
                       tg_dataset *out)
{
    (void)classes;
    return tg_make_moons(n, noise, g, out);
}

/* A dataset of n rows whose x row i is (i, 100 + i) and label labels[i]
 * (or i when labels is NULL), so a row tells where it came from. */
static tg_dataset numbered(int64_t n, const int64_t *labels)
{
    float *x = malloc((size_t)(2 * n) * sizeof *x);
    int64_t *y = malloc((size_t)n * sizeof *y);
    for (int64_t i = 0; i < n; i++) {
        x[2 * i] = (float)i;
        x[2 * i + 1] = (float)(100 + i);
        y[i] = labels ? labels[i] : i;
    }
    tg_dataset d = {tg_from_array(x, TG_SHAPE(n, 2), TG_FLOAT32),
                    tg_from_array(y, TG_SHAPE(n), TG_INT64)};
    free(x);
    free(y);
    cr_assert(d.x && d.y);
    return d;
}

/* The source row of each row of a numbered() dataset, checking that x
 * and y agree (y == i) and that x is (B, 2) float32, y (B,) int64, and
 * that neither records gradients. */
static void rows_of(const tg_tensor *x, const tg_tensor *y, int64_t *rows)
{
    cr_assert_eq(x->dtype, TG_FLOAT32);
    cr_assert_eq(y->dtype, TG_INT64);
    cr_assert_eq(x->ndim, 2);
    cr_assert_eq(x->shape[1], 2);
    cr_assert_eq(y->ndim, 1);
    cr_assert_eq(y->shape[0], x->shape[0]);
    cr_assert(!x->requires_grad && !y->requires_grad && !x->grad_fn &&
              !y->grad_fn);
    const float *xd = tg_data_f32(x);
    const int64_t *yd = tg_data_i64(y);
    for (int64_t i = 0; i < x->shape[0]; i++) {
        cr_assert_eq(xd[2 * i + 1], xd[2 * i] + 100.0f, "row %lld",
                     (long long)i);
        cr_assert_eq((int64_t)xd[2 * i], yd[i], "row %lld", (long long)i);
        rows[i] = yd[i];
    }
}

static bool same_tensor_values(const tg_tensor *a, const tg_tensor *b)
{
    char report[256];
    return tg_test_close(a, b, 0, 0, true, report, sizeof report);
}

/* ------------------------------------------------------- toy datasets */

static void check_geometry(make_fn make, int64_t n, int classes,
                           const char *name)
{
    tg_generator *g = tg_generator_new(1);
    tg_dataset d;
    cr_assert_eq(make(n, classes, 0.0, g, &d), 0, "%s", tg_last_error());
    char ref[64];
    snprintf(ref, sizeof ref, "data_%s_x", name);
    tg_tensor *x = tg_test_load_ref(ref);
    tg_assert_close(d.x, x, 0, GEOM_ATOL);
    snprintf(ref, sizeof ref, "data_%s_y", name);
    tg_tensor *y = tg_test_load_ref(ref);
    tg_assert_close(d.y, y, 0, 0);
    tg_release(x);
    tg_release(y);
    tg_dataset_free(&d);
    cr_assert_null(d.x);
    cr_assert_null(d.y);
    tg_generator_free(g);
}

TG_TEST(data, spirals_match_numpy) { check_geometry(tg_make_spirals, 7, 3, "spirals"); }
TG_TEST(data, four_spirals_match_numpy) { check_geometry(tg_make_spirals, 5, 4, "spirals4"); }
TG_TEST(data, moons_match_numpy) { check_geometry(make_moons2, 6, 2, "moons"); }
TG_TEST(data, blobs_match_numpy) { check_geometry(tg_make_blobs, 2, 5, "blobs"); }

/* The geometry check can fail: points a few ulp off, or jittered by a
 * noise of 1e-5, are rejected at its tolerance. */
TG_TEST(data, geometry_check_rejects_small_errors)
{
    tg_tensor *ref = tg_test_load_ref("data_spirals_x");
    char report[512];
    tg_dataset d;
    cr_assert_eq(tg_make_spirals(7, 3, 1e-5, NULL, &d), 0);
    cr_assert_not(tg_test_close(d.x, ref, 0, GEOM_ATOL, true, report,
                                sizeof report));
    tg_dataset_free(&d);
    cr_assert_eq(tg_make_spirals(7, 3, 0.0, NULL, &d), 0);
    cr_assert(tg_test_close(d.x, ref, 0, GEOM_ATOL, true, report,
                            sizeof report), "%s", report);
    int64_t at[2] = {9, 1}; // a point near radius 1/3
    double v;
    tg_get(d.x, at, 2, &v);
    tg_set(d.x, at, 2, v + 1e-6);
    cr_assert_not(tg_test_close(d.x, ref, 0, GEOM_ATOL, true, report,
                                sizeof report));
    tg_dataset_free(&d);
    tg_release(ref);
}

/* At radius 0 .. 1 over one and a half turns: the first point of each arm
 * is the origin, the last is on the unit circle at angle 2 pi k / K + 3 pi,
 * so that the arm has turned 540 degrees. */
TG_TEST(data, spiral_arms_run_from_the_origin_to_the_unit_circle)
{
    tg_dataset d;
    cr_assert_eq(tg_make_spirals(50, 3, 0.0, NULL, &d), 0);
    const float *x = tg_data_f32(d.x);
    for (int k = 0; k < 3; k++) {
        const float *first = x + 2 * (k * 50), *last = x + 2 * (k * 50 + 49);
        cr_assert_float_eq(first[0], 0.0f, 1e-7);
        cr_assert_float_eq(first[1], 0.0f, 1e-7);
        const double pi = 3.14159265358979323846;
        double a = 2 * pi * k / 3 + 3 * pi;
        cr_assert_float_eq(last[0], cos(a), 1e-6);
        cr_assert_float_eq(last[1], sin(a), 1e-6);
        /* radius grows along the arm */
        for (int i = 1; i < 50; i++) {
            const float *p = x + 2 * (k * 50 + i);
            cr_assert_float_eq(hypot(p[0], p[1]), i / 49.0, 1e-6);
        }
    }
    tg_dataset_free(&d);
}

/* One point per class: linspace(0, 1, 1) is [0], so every spiral starts
 * (and ends) at the origin and both moons at their t = 0 end. */
TG_TEST(data, one_point_per_class)
{
    tg_dataset d;
    cr_assert_eq(tg_make_spirals(1, 2, 0.0, NULL, &d), 0);
    float want_s[4] = {0, 0, 0, 0};
    tg_tensor *w = tg_from_array(want_s, TG_SHAPE(2, 2), TG_FLOAT32);
    tg_assert_close(d.x, w, 0, 0);
    tg_release(w);
    tg_dataset_free(&d);
    cr_assert_eq(tg_make_moons(1, 0.0, NULL, &d), 0);
    float want_m[4] = {1, 0, 0, 0.5f};
    w = tg_from_array(want_m, TG_SHAPE(2, 2), TG_FLOAT32);
    tg_assert_close(d.x, w, 0, 0);
    tg_release(w);
    tg_dataset_free(&d);
}

/* x = (clean point + noise z) rounded to float32, with z the (N, 2)
 * float64 normals of tg_randn_gen from the same generator state. The
 * clean point comes from the same seed at noise 0, already rounded to
 * float32, so the two sides differ by two float32 roundings of values
 * below 5 in size: 2 * 4.8e-7 at most; 1e-6 allows it. Using the wrong
 * draws, a float32 draw or the wrong scale moves points by ~0.1. */
static void check_noise(make_fn make, int64_t n, int classes, double noise)
{
    const uint64_t seed = 3;
    tg_generator *g = tg_generator_new(seed);
    tg_dataset clean, noisy;
    cr_assert_eq(make(n, classes, 0.0, g, &clean), 0);
    tg_generator_seed(g, seed);
    cr_assert_eq(make(n, classes, noise, g, &noisy), 0);
    tg_generator_seed(g, seed);
    int64_t rows = n * classes;
    tg_tensor *z = tg_randn_gen(g, TG_SHAPE(rows, 2), TG_FLOAT64);
    const float *c = tg_data_f32(clean.x), *x = tg_data_f32(noisy.x);
    const double *zd = tg_data_f64(z);
    double worst = 0, moved = 0;
    for (int64_t i = 0; i < 2 * rows; i++) {
        double want = (double)c[i] + noise * zd[i];
        worst = fmax(worst, fabs(x[i] - want));
        moved = fmax(moved, fabs(x[i] - c[i]));
    }
    cr_assert_leq(worst, 1e-6, "off by %g", worst);
    cr_assert_gt(moved, 0.1 * noise, "the noise is missing");
    tg_assert_close(noisy.y, clean.y, 0, 0);
    tg_release(z);
    tg_dataset_free(&clean);
    tg_dataset_free(&noisy);
    tg_generator_free(g);
}

TG_TEST(data, spirals_noise_is_randn_times_noise) { check_noise(tg_make_spirals, 40, 3, 0.2); }
TG_TEST(data, moons_noise_is_randn_times_noise) { check_noise(make_moons2, 25, 2, 0.1); }
TG_TEST(data, blobs_spread_is_randn_times_spread) { check_noise(tg_make_blobs, 30, 4, 0.5); }

/* Noise 0 still draws z: the generator ends in the same state whatever
 * the noise, so what comes after a dataset does not depend on it. */
TG_TEST(data, noise_zero_advances_the_generator_the_same)
{
    tg_generator *a = tg_generator_new(9), *b = tg_generator_new(9);
    tg_dataset d1, d2;
    cr_assert_eq(tg_make_blobs(10, 3, 0.0, a, &d1), 0);
    cr_assert_eq(tg_make_blobs(10, 3, 0.7, b, &d2), 0);
    tg_tensor *ra = tg_rand_gen(a, TG_SHAPE(4), TG_FLOAT64);
    tg_tensor *rb = tg_rand_gen(b, TG_SHAPE(4), TG_FLOAT64);
    tg_assert_close(ra, rb, 0, 0);
    tg_release(ra);
    tg_release(rb);
    tg_dataset_free(&d1);
    tg_dataset_free(&d2);
    tg_generator_free(a);
    tg_generator_free(b);
}

TG_TEST(data, same_seed_same_data_and_null_is_the_default_generator)
{
    tg_generator *g = tg_generator_new(42);
    tg_dataset a, b, c;
    cr_assert_eq(tg_make_spirals(30, 3, 0.3, g, &a), 0);
    tg_generator_seed(g, 42);
    cr_assert_eq(tg_make_spirals(30, 3, 0.3, g, &b), 0);
    cr_assert(same_tensor_values(a.x, b.x));
    cr_assert(same_tensor_values(a.y, b.y));
    tg_dataset_free(&b);
    /* the generator moved on: the next dataset differs */
    cr_assert_eq(tg_make_spirals(30, 3, 0.3, g, &b), 0);
    cr_assert_not(same_tensor_values(a.x, b.x));
    tg_manual_seed(42);
    cr_assert_eq(tg_make_spirals(30, 3, 0.3, NULL, &c), 0);
    cr_assert(same_tensor_values(a.x, c.x));
    tg_dataset_free(&a);
    tg_dataset_free(&b);
    tg_dataset_free(&c);
    tg_generator_free(g);
}

TG_TEST(data, datasets_are_float32_points_and_int64_labels_in_class_order)
{
    tg_dataset d;
    cr_assert_eq(tg_make_blobs(4, 3, 0.1, NULL, &d), 0);
    cr_assert_eq(d.x->dtype, TG_FLOAT32);
    cr_assert_eq(d.x->ndim, 2);
    cr_assert_eq(d.x->shape[0], 12);
    cr_assert_eq(d.x->shape[1], 2);
    cr_assert_eq(d.y->dtype, TG_INT64);
    cr_assert_eq(d.y->ndim, 1);
    cr_assert_eq(d.y->shape[0], 12);
    cr_assert(!d.x->requires_grad);
    const int64_t *y = tg_data_i64(d.y);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(y[i], i / 4);
    tg_dataset_free(&d);
    tg_dataset_free(&d); // freeing twice is harmless: the fields are NULL
    tg_dataset_free(NULL);
}

TG_TEST(data, dataset_errors_leave_null_tensors)
{
    tg_tensor *keep = tg_zeros(TG_SHAPE(1), TG_FLOAT32);
    tg_dataset d = {keep, keep};
    cr_assert_eq(tg_make_spirals(0, 3, 0.1, NULL, &d), -1);
    tg_assert_error("tg_make_spirals: n_per_class is 0",
                    "rule: every class needs at least one point");
    cr_assert(!d.x && !d.y);
    d = (tg_dataset){keep, keep};
    cr_assert_eq(tg_make_spirals(5, 1, 0.1, NULL, &d), -1);
    tg_assert_error("tg_make_spirals: classes is 1", "at least 2 classes");
    cr_assert(!d.x && !d.y);
    d = (tg_dataset){keep, keep};
    cr_assert_eq(tg_make_blobs(5, 0, 0.1, NULL, &d), -1);
    tg_assert_error("tg_make_blobs: classes is 0");
    cr_assert(!d.x && !d.y);
    d = (tg_dataset){keep, keep};
    cr_assert_eq(tg_make_moons(-2, 0.1, NULL, &d), -1);
    tg_assert_error("tg_make_moons: n_per_class is -2");
    cr_assert(!d.x && !d.y);
    d = (tg_dataset){keep, keep};
    cr_assert_eq(tg_make_moons(5, -0.1, NULL, &d), -1);
    tg_assert_error("tg_make_moons: noise is -0.1",
                    "a finite number >= 0", "hint: 0 gives the exact");
    cr_assert(!d.x && !d.y);
    cr_assert_eq(tg_make_blobs(5, 3, -1, NULL, &d), -1);
    tg_assert_error("tg_make_blobs: spread is -1", "rule: spread is the");
    cr_assert_eq(tg_make_spirals(5, 3, NAN, NULL, &d), -1);
    tg_assert_error("tg_make_spirals: noise is nan");
    cr_assert_eq(tg_make_spirals(5, 3, INFINITY, NULL, &d), -1);
    tg_assert_error("tg_make_spirals: noise is inf");
    cr_assert_eq(tg_make_spirals(INT64_C(1) << 60, 3, 0.1, NULL, &d), -1);
    tg_assert_error("is too many");
    cr_assert(!d.x && !d.y);
    cr_assert_eq(tg_make_moons(5, 0.1, NULL, NULL), -1);
    tg_assert_error("tg_make_moons: out is NULL", "hint: tg_dataset d;");
    cr_assert_eq(tg_make_spirals(5, 3, 0.1, NULL, NULL), -1);
    tg_assert_error("tg_make_spirals: out is NULL");
    cr_assert_eq(tg_make_blobs(5, 3, 0.1, NULL, NULL), -1);
    tg_assert_error("tg_make_blobs: out is NULL");
    tg_release(keep);
}

/* ---------------------------------------------------------------- split */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

TG_TEST(data, split_is_a_partition_of_the_rows)
{
    tg_dataset d;
    cr_assert_eq(tg_make_spirals(20, 3, 0.2, NULL, &d), 0);
    tg_tensor *x0 = tg_clone(d.x), *y0 = tg_clone(d.y);
    tg_dataset tr, va;
    tg_generator *g = tg_generator_new(1);
    cr_assert_eq(tg_dataset_split(&d, 0.2, g, &tr, &va), 0, "%s",
                 tg_last_error());
    cr_assert_eq(tr.x->shape[0], 48);
    cr_assert_eq(va.x->shape[0], 12);
    cr_assert_eq(tr.y->shape[0], 48);
    cr_assert_eq(va.y->shape[0], 12);
    cr_assert_eq(tr.x->dtype, TG_FLOAT32);
    cr_assert_eq(va.y->dtype, TG_INT64);
    /* new tensors; d unchanged */
    cr_assert(tr.x->storage != d.x->storage && va.x->storage != d.x->storage);
    cr_assert(same_tensor_values(d.x, x0) && same_tensor_values(d.y, y0));
    /* the multiset of (x0, x1, y) rows: each row of d found exactly once
     * in train or val (the noisy points are all distinct) */
    const float *dx = tg_data_f32(d.x);
    const int64_t *dy = tg_data_i64(d.y);
    int used[60] = {0};
    const tg_dataset *parts[2] = {&tr, &va};
    for (int p = 0; p < 2; p++) {
        const float *px = tg_data_f32(parts[p]->x);
        const int64_t *py = tg_data_i64(parts[p]->y);
        for (int64_t i = 0; i < parts[p]->x->shape[0]; i++) {
            int found = -1;
            for (int r = 0; r < 60 && found < 0; r++)
                if (dx[2 * r] == px[2 * i] && dx[2 * r + 1] == px[2 * i + 1] &&
                    dy[r] == py[i])
                    found = r;
            cr_assert_geq(found, 0, "row %lld of part %d is not in d",
                          (long long)i, p);
            used[found]++;
        }
    }
    for (int r = 0; r < 60; r++)
        cr_assert_eq(used[r], 1, "row %d used %d times", r, used[r]);
    tg_dataset_free(&tr);
    tg_dataset_free(&va);
    tg_dataset_free(&d);
    tg_release(x0);
    tg_release(y0);
    tg_generator_free(g);
}

/* The order is torch.randperm(10) after seed 5: train gets the first 7
 * rows of [1, 4, 9, 6, 3, 5, 0, 2, 8, 7], val the last 3. */
TG_TEST(data, split_order_is_torch_randperm)
{
    tg_dataset d = numbered(10, NULL), tr, va;
    tg_generator *g = tg_generator_new(5);
    cr_assert_eq(tg_dataset_split(&d, 0.3, g, &tr, &va), 0);
    int64_t rows[10];
    rows_of(tr.x, tr.y, rows);
    rows_of(va.x, va.y, rows + 7);
    const int64_t want[10] = {1, 4, 9, 6, 3, 5, 0, 2, 8, 7};
    for (int i = 0; i < 10; i++)
        cr_assert_eq(rows[i], want[i], "position %d", i);
    tg_dataset_free(&tr);
    tg_dataset_free(&va);
    /* g NULL: the default generator */
    tg_manual_seed(5);
    cr_assert_eq(tg_dataset_split(&d, 0.3, NULL, &tr, &va), 0);
    rows_of(tr.x, tr.y, rows);
    rows_of(va.x, va.y, rows + 7);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(rows[i], want[i], "position %d", i);
    tg_dataset_free(&tr);
    tg_dataset_free(&va);
    tg_dataset_free(&d);
    tg_generator_free(g);
}

TG_TEST(data, split_is_deterministic_per_seed)
{
    tg_dataset d = numbered(50, NULL), a1, a2, b1, b2;
    tg_generator *g = tg_generator_new(77);
    cr_assert_eq(tg_dataset_split(&d, 0.5, g, &a1, &a2), 0);
    tg_generator_seed(g, 77);
    cr_assert_eq(tg_dataset_split(&d, 0.5, g, &b1, &b2), 0);
    cr_assert(same_tensor_values(a1.x, b1.x) && same_tensor_values(a2.y, b2.y));
    tg_dataset_free(&b1);
    tg_dataset_free(&b2);
    tg_generator_seed(g, 78);
    cr_assert_eq(tg_dataset_split(&d, 0.5, g, &b1, &b2), 0);
    cr_assert_not(same_tensor_values(a1.y, b1.y));
    tg_dataset_free(&a1);
    tg_dataset_free(&a2);
    tg_dataset_free(&b1);
    tg_dataset_free(&b2);
    tg_dataset_free(&d);
    tg_generator_free(g);
}

/* round(val_fraction * N) with halves away from zero; 0 gives an empty
 * val (0 rows of 2 columns). */
TG_TEST(data, split_sizes_round_half_away_from_zero)
{
    tg_dataset d = numbered(10, NULL), tr, va;
    const double fractions[] = {0.0, 0.04, 0.05, 0.25, 0.5, 0.94};
    const int64_t n_val[] = {0, 0, 1, 3, 5, 9};
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(tg_dataset_split(&d, fractions[i], NULL, &tr, &va), 0);
        cr_assert_eq(va.x->shape[0], n_val[i], "fraction %g", fractions[i]);
        cr_assert_eq(va.y->shape[0], n_val[i]);
        cr_assert_eq(va.x->ndim, 2);
        cr_assert_eq(va.x->shape[1], 2);
        cr_assert_eq(tr.x->shape[0], 10 - n_val[i]);
        tg_dataset_free(&tr);
        tg_dataset_free(&va);
    }
    tg_dataset_free(&d);
}

/* x need not be contiguous, nor (N, 2): rows are taken along dim 0. */
TG_TEST(data, split_reads_any_layout_and_keeps_row_shape)
{
    double v[24];
    for (int i = 0; i < 24; i++)
        v[i] = i;
    tg_tensor *t = tg_from_array(v, TG_SHAPE(2, 4, 3), TG_FLOAT64);
    tg_tensor *x = tg_transpose(t, 0, 1); // (4, 2, 3): row r is t[:, r, :]
    int64_t labels[4] = {0, 1, 2, 3};
    tg_dataset d = {x, tg_from_array(labels, TG_SHAPE(4), TG_INT64)}, tr, va;
    cr_assert_eq(tg_dataset_split(&d, 0.25, NULL, &tr, &va), 0);
    cr_assert_eq(tr.x->ndim, 3);
    cr_assert_eq(tr.x->shape[0], 3);
    cr_assert_eq(tr.x->shape[1], 2);
    cr_assert_eq(tr.x->shape[2], 3);
    cr_assert_eq(tr.x->dtype, TG_FLOAT64);
    const tg_dataset *parts[2] = {&tr, &va};
    for (int p = 0; p < 2; p++)
        for (int64_t i = 0; i < parts[p]->x->shape[0]; i++) {
            int64_t r = tg_data_i64(parts[p]->y)[i];
            for (int64_t a = 0; a < 2; a++)
                for (int64_t b = 0; b < 3; b++) {
                    double got;
                    tg_get(parts[p]->x, (int64_t[]){i, a, b}, 3, &got);
                    cr_assert_eq(got, (double)(a * 12 + r * 3 + b));
                }
        }
    tg_dataset_free(&tr);
    tg_dataset_free(&va);
    tg_dataset_free(&d);
    tg_release(t);
}

TG_TEST(data, split_errors)
{
    tg_dataset d = numbered(10, NULL), tr, va;
    cr_assert_eq(tg_dataset_split(&d, 1.0, NULL, &tr, &va), -1);
    tg_assert_error("tg_dataset_split: val_fraction is 1",
                    "rule: the share of rows held out is in [0, 1)");
    cr_assert(!tr.x && !tr.y && !va.x && !va.y);
    cr_assert_eq(tg_dataset_split(&d, -0.1, NULL, &tr, &va), -1);
    tg_assert_error("val_fraction is -0.1");
    cr_assert_eq(tg_dataset_split(&d, NAN, NULL, &tr, &va), -1);
    tg_assert_error("val_fraction is nan");
    cr_assert_eq(tg_dataset_split(&d, 0.95, NULL, &tr, &va), -1);
    tg_assert_error("holding out 0.95 of 10 rows leaves no row for "
                    "training");
    cr_assert(!tr.x && !va.x);
    cr_assert_eq(tg_dataset_split(&d, 0.2, NULL, NULL, &va), -1);
    tg_assert_error("tg_dataset_split: train and val must be two different");
    cr_assert_eq(tg_dataset_split(&d, 0.2, NULL, &tr, &tr), -1);
    tg_assert_error("train and val must be two different");
    cr_assert_eq(tg_dataset_split(&d, 0.2, NULL, &d, &va), -1);
    tg_assert_error("other than d");
    cr_assert(d.x && d.y, "d must not be touched");
    cr_assert_eq(tg_dataset_split(NULL, 0.2, NULL, &tr, &va), -1);
    tg_assert_error("tg_dataset_split: the dataset is NULL");

    /* bad labels: float, 2-D, or one per row missing */
    tg_dataset bad = {d.x, tg_zeros(TG_SHAPE(10), TG_FLOAT32)};
    cr_assert_eq(tg_dataset_split(&bad, 0.2, NULL, &tr, &va), -1);
    tg_assert_error("y has dtype float32 and shape (10,)",
                    "rule: the labels are an int64 tensor (N,)");
    tg_release(bad.y);
    bad.y = tg_zeros(TG_SHAPE(10, 1), TG_INT64);
    cr_assert_eq(tg_dataset_split(&bad, 0.2, NULL, &tr, &va), -1);
    tg_assert_error("y has dtype int64 and shape (10, 1)");
    tg_release(bad.y);
    bad.y = tg_zeros(TG_SHAPE(9), TG_INT64);
    cr_assert_eq(tg_dataset_split(&bad, 0.2, NULL, &tr, &va), -1);
    tg_assert_error("x of shape (10, 2) has 10 rows but y of shape (9,) has "
                    "9 labels", "rule: one label per row of x");
    tg_release(bad.y);
    bad.x = tg_scalar(1, TG_FLOAT32);
    bad.y = tg_zeros(TG_SHAPE(1), TG_INT64);
    cr_assert_eq(tg_dataset_split(&bad, 0.2, NULL, &tr, &va), -1);
    tg_assert_error("x is a 0-d tensor");
    tg_release(bad.x);
    tg_release(bad.y);

    /* a dataset whose constructor failed: no second message */
    bad = (tg_dataset){NULL, NULL};
    tg_clear_error();
    cr_assert_eq(tg_dataset_split(&bad, 0.2, NULL, &tr, &va), -1);
    cr_assert_str_empty(tg_last_error());
    tg_dataset_free(&d);
}

/* -------------------------------------------------------------- batches */

/* Runs one epoch, writing the rows visited into rows and the batch sizes
 * into sizes; returns the number of batches. Checks that the epoch ends
 * with false and NULLs. */
static int64_t run_epoch(tg_batches *it, int64_t *rows, int64_t *sizes)
{
    tg_tensor *x = NULL, *y = NULL;
    int64_t nb = 0, n = 0;
    while (tg_batches_next(it, &x, &y)) {
        cr_assert(x && y);
        rows_of(x, y, rows + n);
        sizes[nb++] = x->shape[0];
        n += x->shape[0];
        tg_release(x);
        tg_release(y);
        cr_assert_lt(nb, 1000, "the epoch does not end");
    }
    cr_assert(!x && !y);
    return nb;
}

TG_TEST(data, batches_in_order_without_shuffle)
{
    tg_dataset d = numbered(10, NULL);
    tg_batches *it = tg_batches_new(&d, 4, false, false, NULL);
    cr_assert_not_null(it);
    cr_assert_eq(tg_batches_per_epoch(it), 3);
    for (int epoch = 0; epoch < 3; epoch++) {
        int64_t rows[10], sizes[3];
        cr_assert_eq(run_epoch(it, rows, sizes), 3);
        cr_assert(sizes[0] == 4 && sizes[1] == 4 && sizes[2] == 2);
        for (int i = 0; i < 10; i++)
            cr_assert_eq(rows[i], i);
    }
    tg_batches_free(it);
    tg_dataset_free(&d);
}

TG_TEST(data, drop_last_drops_the_short_batch)
{
    tg_dataset d = numbered(10, NULL);
    tg_batches *it = tg_batches_new(&d, 4, false, true, NULL);
    cr_assert_eq(tg_batches_per_epoch(it), 2);
    int64_t rows[10], sizes[3];
    for (int epoch = 0; epoch < 2; epoch++) {
        cr_assert_eq(run_epoch(it, rows, sizes), 2);
        cr_assert(sizes[0] == 4 && sizes[1] == 4);
        for (int i = 0; i < 8; i++)
            cr_assert_eq(rows[i], i);
    }
    tg_batches_free(it);
    /* nothing is dropped when the batches divide N */
    it = tg_batches_new(&d, 5, false, true, NULL);
    cr_assert_eq(tg_batches_per_epoch(it), 2);
    cr_assert_eq(run_epoch(it, rows, sizes), 2);
    cr_assert(sizes[0] == 5 && sizes[1] == 5);
    tg_batches_free(it);
    tg_dataset_free(&d);
}

/* Shuffled: epoch 1 is torch.randperm(10, generator=g) after seed 5,
 * epoch 2 the next randperm of the same generator; every epoch visits
 * every row once. */
TG_TEST(data, shuffled_epochs_are_fresh_torch_randperms)
{
    tg_dataset d = numbered(10, NULL);
    tg_generator *g = tg_generator_new(5);
    tg_batches *it = tg_batches_new(&d, 3, true, false, g);
    cr_assert_eq(tg_batches_per_epoch(it), 4);
    const int64_t want[2][10] = {{1, 4, 9, 6, 3, 5, 0, 2, 8, 7},
                                 {4, 2, 8, 7, 6, 1, 0, 3, 5, 9}};
    int64_t rows[10], sizes[4], seen[10];
    for (int epoch = 0; epoch < 2; epoch++) {
        cr_assert_eq(run_epoch(it, rows, sizes), 4);
        cr_assert(sizes[0] == 3 && sizes[3] == 1);
        for (int i = 0; i < 10; i++)
            cr_assert_eq(rows[i], want[epoch][i], "epoch %d position %d",
                         epoch, i);
    }
    /* later epochs: still every row exactly once */
    for (int epoch = 0; epoch < 5; epoch++) {
        cr_assert_eq(run_epoch(it, rows, sizes), 4);
        memcpy(seen, rows, sizeof seen);
        qsort(seen, 10, sizeof *seen, cmp_i64);
        for (int i = 0; i < 10; i++)
            cr_assert_eq(seen[i], i);
    }
    tg_batches_free(it);
    tg_generator_free(g);
    /* g NULL: the default generator */
    tg_manual_seed(5);
    it = tg_batches_new(&d, 10, true, false, NULL);
    cr_assert_eq(run_epoch(it, rows, sizes), 1);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(rows[i], want[0][i]);
    tg_batches_free(it);
    tg_dataset_free(&d);
}

/* shuffle with drop_last: each epoch takes floor(N / B) full batches of
 * distinct rows, and the rows left out change from epoch to epoch. */
TG_TEST(data, shuffled_drop_last_takes_distinct_rows)
{
    tg_dataset d = numbered(7, NULL);
    tg_generator *g = tg_generator_new(11);
    tg_batches *it = tg_batches_new(&d, 3, true, true, g);
    cr_assert_eq(tg_batches_per_epoch(it), 2);
    int64_t rows[7], sizes[3];
    cr_assert_eq(run_epoch(it, rows, sizes), 2);
    const int64_t want[6] = {4, 0, 2, 6, 3, 1}; // randperm(7) after seed 11
    for (int i = 0; i < 6; i++)
        cr_assert_eq(rows[i], want[i]);
    bool left_out_changed = false;
    for (int epoch = 0; epoch < 20; epoch++) {
        cr_assert_eq(run_epoch(it, rows, sizes), 2);
        qsort(rows, 6, sizeof *rows, cmp_i64);
        for (int i = 1; i < 6; i++)
            cr_assert_neq(rows[i], rows[i - 1]);
        int64_t missing = 21 - (rows[0] + rows[1] + rows[2] + rows[3] +
                                rows[4] + rows[5]);
        left_out_changed |= missing != 5; // epoch 1 left out row 5
    }
    cr_assert(left_out_changed);
    tg_batches_free(it);
    tg_generator_free(g);
    tg_dataset_free(&d);
}

/* The same seed gives the same batches. */
TG_TEST(data, batches_are_deterministic_per_seed)
{
    tg_dataset d;
    cr_assert_eq(tg_make_moons(20, 0.1, NULL, &d), 0);
    tg_generator *g1 = tg_generator_new(3), *g2 = tg_generator_new(3);
    tg_batches *a = tg_batches_new(&d, 16, true, false, g1);
    tg_batches *b = tg_batches_new(&d, 16, true, false, g2);
    tg_tensor *xa, *ya, *xb, *yb;
    int batches = 0;
    for (int epoch = 0; epoch < 3; epoch++) {
        while (tg_batches_next(a, &xa, &ya)) {
            cr_assert(tg_batches_next(b, &xb, &yb));
            cr_assert(same_tensor_values(xa, xb) && same_tensor_values(ya, yb));
            tg_release(xa);
            tg_release(ya);
            tg_release(xb);
            tg_release(yb);
            batches++;
        }
        cr_assert_not(tg_batches_next(b, &xb, &yb)); // b's epoch ends too
    }
    cr_assert_eq(batches, 9);
    tg_batches_free(a);
    tg_batches_free(b);
    tg_generator_free(g1);
    tg_generator_free(g2);
    tg_dataset_free(&d);
}

/* The iterator keeps its own references: the dataset may go first. Rows
 * of any shape and dtype come out as they went in. */
TG_TEST(data, batches_outlive_the_dataset_and_keep_row_shape)
{
    double v[5 * 2 * 3];
    for (int i = 0; i < 30; i++)
        v[i] = i + 0.5;
    int64_t labels[5] = {0, 1, 2, 3, 4};
    tg_dataset d = {tg_from_array(v, TG_SHAPE(5, 2, 3), TG_FLOAT64),
                    tg_from_array(labels, TG_SHAPE(5), TG_INT64)};
    tg_batches *it = tg_batches_new(&d, 2, false, false, NULL);
    tg_dataset_free(&d);
    tg_tensor *x, *y;
    int64_t row = 0;
    while (tg_batches_next(it, &x, &y)) {
        cr_assert_eq(x->ndim, 3);
        cr_assert_eq(x->dtype, TG_FLOAT64);
        cr_assert(x->shape[1] == 2 && x->shape[2] == 3);
        const double *xd = tg_data_f64(x);
        for (int64_t i = 0; i < x->shape[0]; i++, row++) {
            cr_assert_eq(tg_data_i64(y)[i], row);
            for (int k = 0; k < 6; k++)
                cr_assert_eq(xd[6 * i + k], v[6 * row + k]);
        }
        tg_release(x);
        tg_release(y);
    }
    cr_assert_eq(row, 5);
    tg_batches_free(it);
}

/* A batch larger than the dataset: one short batch, or none with
 * drop_last (every call then says the epoch is over). */
TG_TEST(data, batch_larger_than_the_dataset)
{
    tg_dataset d = numbered(3, NULL);
    tg_batches *it = tg_batches_new(&d, 5, true, false, NULL);
    cr_assert_eq(tg_batches_per_epoch(it), 1);
    int64_t rows[3], sizes[1];
    cr_assert_eq(run_epoch(it, rows, sizes), 1);
    cr_assert_eq(sizes[0], 3);
    tg_batches_free(it);
    it = tg_batches_new(&d, 5, true, true, NULL);
    cr_assert_eq(tg_batches_per_epoch(it), 0);
    tg_tensor *x, *y;
    for (int i = 0; i < 3; i++)
        cr_assert_not(tg_batches_next(it, &x, &y));
    tg_batches_free(it);
    tg_dataset_free(&d);
}

TG_TEST(data, batches_errors)
{
    tg_dataset d = numbered(4, NULL);
    cr_assert_null(tg_batches_new(&d, 0, false, false, NULL));
    tg_assert_error("tg_batches_new: batch_size is 0",
                    "rule: a batch holds at least one row");
    cr_assert_null(tg_batches_new(&d, -3, true, false, NULL));
    tg_assert_error("batch_size is -3");
    cr_assert_null(tg_batches_new(NULL, 2, true, false, NULL));
    tg_assert_error("tg_batches_new: the dataset is NULL");
    tg_dataset bad = {d.x, tg_zeros(TG_SHAPE(4), TG_FLOAT64)};
    cr_assert_null(tg_batches_new(&bad, 2, true, false, NULL));
    tg_assert_error("tg_batches_new: y has dtype float64");
    tg_release(bad.y);
    bad = (tg_dataset){NULL, NULL};
    tg_clear_error();
    cr_assert_null(tg_batches_new(&bad, 2, true, false, NULL));
    cr_assert_str_empty(tg_last_error());

    tg_batches *it = tg_batches_new(&d, 2, false, false, NULL);
    tg_tensor *x = tg_scalar(1, TG_FLOAT32), *y = NULL, *keep = x;
    cr_assert_not(tg_batches_next(it, &x, NULL));
    tg_assert_error("tg_batches_next: y is NULL");
    cr_assert_null(x);
    /* a NULL iterator comes from a failed tg_batches_new, which has
     * reported the error: no second message */
    tg_clear_error();
    cr_assert_not(tg_batches_next(NULL, &x, &y));
    cr_assert(!x && !y);
    cr_assert_eq(tg_batches_per_epoch(NULL), -1);
    cr_assert_str_empty(tg_last_error());
    /* an error does not disturb the epoch: it still starts at row 0 */
    int64_t rows[4], sizes[2];
    cr_assert_eq(run_epoch(it, rows, sizes), 2);
    cr_assert(rows[0] == 0 && rows[3] == 3);
    tg_batches_free(it);
    tg_batches_free(NULL);
    tg_release(keep);
    tg_dataset_free(&d);
}

/* ------------------------------------------------------------- accuracy */

/* Against NumPy's argmax on scores with ties and NaN; exact, as it is a
 * count over 40. The same data counted with the last maximum on ties, or
 * NaN skipped, gives 0.4 or 0.55. */
TG_TEST(data, accuracy_matches_numpy)
{
    tg_tensor *logits = tg_test_load_ref("data_acc_logits");
    tg_tensor *labels = tg_test_load_ref("data_acc_labels");
    tg_tensor *want = tg_test_load_ref("data_acc_value");
    double acc = tg_accuracy(logits, labels);
    cr_assert_eq(acc, tg_item(want), "%g != %g", acc, tg_item(want));
    /* float64 and a transposed layout give the same */
    tg_tensor *l64 = tg_to_dtype(logits, TG_FLOAT64);
    cr_assert_eq(tg_accuracy(l64, labels), acc);
    tg_tensor *lt = tg_transpose(logits, 0, 1);
    tg_tensor *t = tg_contiguous(lt);      // (5, 40)
    tg_tensor *tt = tg_transpose(t, 0, 1); // (40, 5), strides (1, 40)
    cr_assert(!tg_is_contiguous(tt));
    cr_assert_eq(tg_accuracy(tt, labels), acc);
    tg_release(tt);
    tg_release(t);
    tg_release(lt);
    tg_release(l64);
    tg_release(logits);
    tg_release(labels);
    tg_release(want);
}

TG_TEST(data, accuracy_check_rejects_a_wrong_label)
{
    tg_tensor *logits = tg_test_load_ref("data_acc_logits");
    tg_tensor *labels = tg_test_load_ref("data_acc_labels");
    tg_tensor *want = tg_test_load_ref("data_acc_value");
    /* row 0 is right (labels[::2] are the predictions): break it */
    tg_set(labels, (int64_t[]){0}, 1,
           (double)((tg_data_i64(labels)[0] + 1) % 5));
    cr_assert_neq(tg_accuracy(logits, labels), tg_item(want));
    tg_release(logits);
    tg_release(labels);
    tg_release(want);
}

/* As torch.argmax: the first maximum on ties, the first NaN beats
 * everything, a row of -inf gives 0; int64 scores compare exactly. */
TG_TEST(data, accuracy_argmax_as_torch)
{
    const float inf = INFINITY;
    float v[5][3] = {{1, 7, 7}, {NAN, 2, NAN}, {1, 5, NAN},
                     {-inf, -inf, -inf}, {3, inf, 2}};
    tg_tensor *logits = tg_from_array(v, TG_SHAPE(5, 3), TG_FLOAT32);
    int64_t right[5] = {1, 0, 2, 0, 1}, wrong[5] = {2, 2, 1, 1, 0};
    tg_tensor *y = tg_from_array(right, TG_SHAPE(5), TG_INT64);
    cr_assert_eq(tg_accuracy(logits, y), 1.0);
    tg_release(y);
    y = tg_from_array(wrong, TG_SHAPE(5), TG_INT64);
    cr_assert_eq(tg_accuracy(logits, y), 0.0);
    tg_release(y);
    tg_release(logits);

    int64_t big[2][2] = {{INT64_C(9007199254740992), INT64_C(9007199254740993)},
                         {5, 5}};
    logits = tg_from_array(big, TG_SHAPE(2, 2), TG_INT64);
    int64_t l[2] = {1, 0};
    y = tg_from_array(l, TG_SHAPE(2), TG_INT64);
    cr_assert_eq(tg_accuracy(logits, y), 1.0);
    tg_release(y);
    tg_release(logits);
}

TG_TEST(data, accuracy_share)
{
    float v[4][2] = {{0, 1}, {1, 0}, {0, 1}, {0, 1}};
    int64_t l[4] = {1, 1, 1, 0};
    tg_tensor *logits = tg_from_array(v, TG_SHAPE(4, 2), TG_FLOAT32);
    tg_tensor *y = tg_from_array(l, TG_SHAPE(4), TG_INT64);
    cr_assert_eq(tg_accuracy(logits, y), 0.5);
    tg_release(logits);
    tg_release(y);
}

TG_TEST(data, accuracy_errors)
{
    tg_tensor *l2 = tg_zeros(TG_SHAPE(4, 3), TG_FLOAT32);
    tg_tensor *y = tg_zeros(TG_SHAPE(4), TG_INT64);
    tg_tensor *l1 = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    cr_assert(isnan(tg_accuracy(l1, y)));
    tg_assert_error("tg_accuracy: logits have shape (3,)",
                    "rule: logits are (N, C)", "tg_unsqueeze(logits, 0)");
    tg_tensor *l3 = tg_zeros(TG_SHAPE(4, 3, 1), TG_FLOAT32);
    cr_assert(isnan(tg_accuracy(l3, y)));
    tg_assert_error("logits have shape (4, 3, 1)");
    tg_tensor *yf = tg_zeros(TG_SHAPE(4), TG_FLOAT32);
    cr_assert(isnan(tg_accuracy(l2, yf)));
    tg_assert_error("tg_accuracy: labels are float32",
                    "rule: labels are int64 class indices");
    tg_tensor *y5 = tg_zeros(TG_SHAPE(5), TG_INT64);
    cr_assert(isnan(tg_accuracy(l2, y5)));
    tg_assert_error("logits of shape (4, 3) and labels of shape (5,) do not "
                    "match", "labels must be (4,)");
    tg_tensor *y41 = tg_zeros(TG_SHAPE(4, 1), TG_INT64);
    cr_assert(isnan(tg_accuracy(l2, y41)));
    tg_assert_error("labels of shape (4, 1) do not match");
    tg_tensor *e = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    tg_tensor *ye = tg_zeros(TG_SHAPE(0), TG_INT64);
    cr_assert(isnan(tg_accuracy(e, ye)));
    tg_assert_error("tg_accuracy: logits of shape (0, 3) have no rows",
                    "no examples (0 / 0)");
    tg_tensor *c0 = tg_zeros(TG_SHAPE(4, 0), TG_FLOAT32);
    cr_assert(isnan(tg_accuracy(c0, y)));
    tg_assert_error("logits of shape (4, 0) have no classes");
    tg_tensor *bad = tg_full(TG_SHAPE(4), 3, TG_INT64);
    cr_assert(isnan(tg_accuracy(l2, bad)));
    tg_assert_error("label 3 of row 0 is not a class of logits of shape "
                    "(4, 3)", "[0, 3)");
    tg_fill_(bad, -1);
    cr_assert(isnan(tg_accuracy(l2, bad)));
    tg_assert_error("label -1 of row 0");
    tg_clear_error();
    cr_assert(isnan(tg_accuracy(NULL, y)));
    cr_assert(isnan(tg_accuracy(l2, NULL)));
    cr_assert_str_empty(tg_last_error());
    tg_release(l1);
    tg_release(l2);
    tg_release(l3);
    tg_release(y);
    tg_release(yf);
    tg_release(y5);
    tg_release(y41);
    tg_release(e);
    tg_release(ye);
    tg_release(c0);
    tg_release(bad);
}
