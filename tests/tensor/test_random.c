/*
 * tests/tensor/test_random.c - the random generator against PyTorch 1.13.1.
 *
 * tests/reference/torch-rng-vectors.txt holds numbers printed by PyTorch
 * with the bit pattern of each; every one of them is checked here bit for
 * bit (the section order of the file is pinned by the first test, so a new
 * vector cannot slip in unchecked). The other tests check what the vectors
 * imply but do not show: the cached normal, private generators, the 64-bit
 * randint path, the path choice of normal_, and the error messages.
 *
 * No NumPy fixtures: NumPy's generators are not PyTorch's.
 */
#include "../common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------ the vector file */

/* The sections of the file, in file order, named by the start of their
 * "## " title line, with the number of values each holds. */
enum {
    V_RAND6,
    V_RAND3_F64,
    V_RANDN4,
    V_RANDN3_FIRST,
    V_RANDN3_SECOND,
    V_RANDN44,
    V_RANDN234,
    V_RANDN5_F64,
    V_RANDINT,
    V_LIN32_W,
    V_LIN32_B,
    V_LIN43_W,
    V_LIN43_B,
    V_LIN43_X,
    V_LIN43_Y,
    V_COUNT
};

static const struct {
    const char *title;
    int n;
    bool has_bits; // false: plain integers
} sections[V_COUNT] = {
    [V_RAND6] = {"manual_seed(0); rand(6)", 6, true},
    [V_RAND3_F64] = {"manual_seed(0); rand(3, dtype=float64)", 3, true},
    [V_RANDN4] = {"manual_seed(0); randn(4)", 4, true},
    [V_RANDN3_FIRST] = {"manual_seed(42); randn(3)", 3, true},
    [V_RANDN3_SECOND] = {"then randn(3) again", 3, true},
    [V_RANDN44] = {"manual_seed(0); randn(4,4)", 16, true},
    [V_RANDN234] = {"manual_seed(42); randn(2,3,4)", 24, true},
    [V_RANDN5_F64] = {"manual_seed(7); randn(5, dtype=float64)", 5, true},
    [V_RANDINT] = {"manual_seed(3); randint(0, 10, (8,))", 8, false},
    [V_LIN32_W] = {"manual_seed(42); nn.Linear(3,2).weight", 6, true},
    [V_LIN32_B] = {"... .bias", 2, true},
    [V_LIN43_W] = {"manual_seed(1); lin=nn.Linear(4,3); x=rand(2,4): "
                   "lin.weight",
                   12, true},
    [V_LIN43_B] = {"... lin.bias", 3, true},
    [V_LIN43_X] = {"... x (drawn after the Linear)", 8, true},
    [V_LIN43_Y] = {"... lin(x)", 6, true},
};

#define MAX_SECTIONS 64
#define MAX_VALUES 64

typedef struct vector {
    char title[256];
    int n;
    double values[MAX_VALUES]; // the decimal column (or the integers)
    uint64_t bits[MAX_VALUES]; // the hex column: float32 in the low 32 bits
    int nbits;
} vector;

static vector file_vectors[MAX_SECTIONS];
static int file_nvectors = -1;

static void load_vectors(void)
{
    if (file_nvectors >= 0)
        return;
    const char *path = tg_test_ref_path("torch-rng-vectors.txt");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strncmp(line, "## ", 3) == 0) {
            cr_assert_lt(n, MAX_SECTIONS, "too many sections in %s", path);
            vector *v = &file_vectors[n++];
            memset(v, 0, sizeof *v);
            snprintf(v->title, sizeof v->title, "%.255s", line + 3);
            continue;
        }
        if (n == 0)
            continue; // nothing before the first title
        vector *v = &file_vectors[n - 1];
        for (char *tok = strtok(line, " \t"); tok; tok = strtok(NULL, " \t")) {
            if (strncmp(tok, "0x", 2) == 0) {
                cr_assert_eq(v->nbits, v->n - 1,
                             "a hex pattern without its value in \"%s\"",
                             v->title);
                v->bits[v->nbits++] = strtoull(tok + 2, NULL, 16);
            } else {
                cr_assert_lt(v->n, MAX_VALUES, "too many values in \"%s\"",
                             v->title);
                char *end;
                v->values[v->n++] = strtod(tok, &end);
                cr_assert(*end == '\0', "cannot read \"%s\" in \"%s\"", tok,
                          v->title);
            }
        }
    }
    fclose(f);
    file_nvectors = n;
}

static const vector *vec(int which)
{
    load_vectors();
    cr_assert_lt(which, file_nvectors, "the file has no section %d",
                 which);
    return &file_vectors[which];
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint64_t f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static float f32_from_bits(uint64_t u64)
{
    uint32_t u = (uint32_t)u64;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Asserts that t (any layout) holds exactly the vector's values: the same
 * bit patterns for float tensors, the same integers for int64. */
static void expect_vector(const tg_tensor *t, int which)
{
    const vector *v = vec(which);
    cr_assert_not_null(t, "no tensor for \"%s\": %s", v->title,
                       tg_last_error());
    cr_assert_eq(t->numel, v->n, "\"%s\": %lld elements, expected %d",
                 v->title, (long long)t->numel, v->n);
    double got[MAX_VALUES];
    cr_assert_eq(tg_to_f64_array(t, got), 0);
    for (int i = 0; i < v->n; i++) {
        switch (t->dtype) {
        case TG_FLOAT32: {
            /* float -> double -> float is exact, so these are t's bits. */
            uint32_t g = f32_bits((float)got[i]);
            cr_assert_eq(g, (uint32_t)v->bits[i],
                         "\"%s\" element %d: got 0x%08" PRIx32
                         " (%.9g), expected 0x%08" PRIx32 " (%.9g)",
                         v->title, i, g, got[i], (uint32_t)v->bits[i],
                         v->values[i]);
            break;
        }
        case TG_FLOAT64:
            cr_assert_eq(f64_bits(got[i]), v->bits[i],
                         "\"%s\" element %d: got 0x%016" PRIx64
                         " (%.17g), expected 0x%016" PRIx64 " (%.17g)",
                         v->title, i, f64_bits(got[i]), got[i], v->bits[i],
                         v->values[i]);
            break;
        case TG_INT64:
            cr_assert_eq(got[i], v->values[i],
                         "\"%s\" element %d: got %.0f, expected %.0f",
                         v->title, i, got[i], v->values[i]);
            break;
        }
    }
}

/* nn.Linear(in, out)'s default init: weight (out, in) then bias (out,),
 * each U(-bound, bound) with bound = (float)(1 / sqrt(in)). */
static void linear_init(int64_t in, int64_t out, tg_tensor **w,
                        tg_tensor **b)
{
    double bound = (float)(1.0 / sqrt((double)in));
    *w = tg_empty(TG_SHAPE(out, in), TG_FLOAT32);
    *b = tg_empty(TG_SHAPE(out), TG_FLOAT32);
    cr_assert_eq(tg_uniform_(*w, -bound, bound, NULL), 0, "%s",
                 tg_last_error());
    cr_assert_eq(tg_uniform_(*b, -bound, bound, NULL), 0, "%s",
                 tg_last_error());
}

/* ---------------------------------------------------- the vectors, exact */

/* Every section of the file is one of those above, in that order, with the
 * announced number of values: a changed file fails here rather than going
 * partly unchecked. */
TG_TEST(random_vectors, file_has_exactly_the_checked_sections)
{
    load_vectors();
    cr_assert_eq(file_nvectors, V_COUNT, "%d sections, expected %d",
                 file_nvectors, V_COUNT);
    for (int i = 0; i < V_COUNT; i++) {
        const vector *v = vec(i);
        cr_assert(strncmp(v->title, sections[i].title,
                          strlen(sections[i].title)) == 0,
                  "section %d is \"%s\", expected \"%s...\"", i, v->title,
                  sections[i].title);
        cr_assert_eq(v->n, sections[i].n, "\"%s\": %d values, expected %d",
                     v->title, v->n, sections[i].n);
        cr_assert_eq(v->nbits, sections[i].has_bits ? v->n : 0,
                     "\"%s\": %d bit patterns for %d values", v->title,
                     v->nbits, v->n);
    }
}

TG_TEST(random_vectors, rand_float32_uses_the_low_24_bits)
{
    tg_manual_seed(0);
    tg_tensor *t = tg_rand(TG_SHAPE(6), TG_FLOAT32);
    expect_vector(t, V_RAND6);
    tg_release(t);
}

TG_TEST(random_vectors, rand_float64_uses_53_bits_of_two_draws)
{
    tg_manual_seed(0);
    tg_tensor *t = tg_rand(TG_SHAPE(3), TG_FLOAT64);
    cr_assert_eq(t->dtype, TG_FLOAT64);
    expect_vector(t, V_RAND3_F64);
    tg_release(t);
}

TG_TEST(random_vectors, randn_small_takes_the_scalar_path)
{
    tg_manual_seed(0);
    tg_tensor *t = tg_randn(TG_SHAPE(4), TG_FLOAT32);
    expect_vector(t, V_RANDN4);
    tg_release(t);
}

/* randn(3) uses one and a half Box-Muller pairs: the second call starts
 * with the sine sample the first call left on the generator. */
TG_TEST(random_vectors, randn_cached_normal_carries_to_the_next_tensor)
{
    tg_manual_seed(42);
    tg_tensor *first = tg_randn(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *second = tg_randn(TG_SHAPE(3), TG_FLOAT32);
    expect_vector(first, V_RANDN3_FIRST);
    expect_vector(second, V_RANDN3_SECOND);
    tg_release(first);
    tg_release(second);
}

TG_TEST(random_vectors, randn_16_takes_the_fill_path)
{
    tg_manual_seed(0);
    tg_tensor *t = tg_randn(TG_SHAPE(4, 4), TG_FLOAT32);
    expect_vector(t, V_RANDN44);
    tg_release(t);
}

/* 24 elements: one block of 16, then 16 fresh uniforms for elements
 * 8..23, so elements 8..15 of the first block are overwritten. */
TG_TEST(random_vectors, randn_24_redraws_the_last_16)
{
    tg_manual_seed(42);
    tg_tensor *t = tg_randn(TG_SHAPE(2, 3, 4), TG_FLOAT32);
    expect_vector(t, V_RANDN234);
    tg_release(t);
}

TG_TEST(random_vectors, randn_float64_small_is_exact_in_double)
{
    tg_manual_seed(7);
    tg_tensor *t = tg_randn(TG_SHAPE(5), TG_FLOAT64);
    expect_vector(t, V_RANDN5_F64);
    tg_release(t);
}

TG_TEST(random_vectors, randint_is_draw_mod_range_plus_low)
{
    tg_manual_seed(3);
    tg_tensor *t = tg_randint(0, 10, TG_SHAPE(8));
    cr_assert_eq(t->dtype, TG_INT64);
    expect_vector(t, V_RANDINT);
    tg_release(t);
}

/* nn.Linear's weights are uniform_ with the fused multiply-add: half of
 * them would be one ulp off without it. */
TG_TEST(random_vectors, linear_init_weight_then_bias)
{
    tg_manual_seed(42);
    tg_tensor *w, *b;
    linear_init(3, 2, &w, &b);
    expect_vector(w, V_LIN32_W);
    expect_vector(b, V_LIN32_B);
    tg_release(w);
    tg_release(b);
}

TG_TEST(random_vectors, linear_forward_on_rand_input)
{
    tg_manual_seed(1);
    tg_tensor *w, *b;
    linear_init(4, 3, &w, &b);
    tg_tensor *x = tg_rand(TG_SHAPE(2, 4), TG_FLOAT32);
    expect_vector(w, V_LIN43_W);
    expect_vector(b, V_LIN43_B);
    expect_vector(x, V_LIN43_X);

    /* lin(x) = x W^T + b, plain float loops. */
    const float *pw = tg_data_f32(w), *pb = tg_data_f32(b),
                *px = tg_data_f32(x);
    float y[2][3];
    for (int i = 0; i < 2; i++)
        for (int o = 0; o < 3; o++) {
            float acc = 0;
            for (int k = 0; k < 4; k++)
                acc += px[i * 4 + k] * pw[o * 4 + k];
            y[i][o] = acc + pb[o];
        }
    const vector *vy = vec(V_LIN43_Y);
    float yref[6];
    for (int i = 0; i < 6; i++)
        yref[i] = f32_from_bits(vy->bits[i]);
    tg_tensor *actual = tg_from_array(y, TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *expected = tg_from_array(yref, TG_SHAPE(2, 3), TG_FLOAT32);
    /* PyTorch multiplies with BLAS (another summation order, maybe fused
     * multiply-adds). Each output sums 5 terms of magnitude below 1 in
     * float32, so the orders differ by a few float32 ulp of 1 (6e-8):
     * atol 1e-6 allows that and nothing like a wrong weight (>= 1e-3). */
    tg_assert_close(actual, expected, 0, 1e-6);
    tg_release(actual);
    tg_release(expected);
    tg_release(w);
    tg_release(b);
    tg_release(x);
}

/* ---------------------------------------- the bit-exact test is sensitive */

/* The fill path with libm's logf/sinf/cosf instead of the avx_mathfun
 * polynomials: the same algorithm, so close to the vector, but not equal
 * in every bit. If this test failed, the randn(4,4) vector could not tell
 * the polynomials from libm and the bit-exact test above would prove
 * nothing about them. */
TG_TEST(random_vectors, libm_fill_differs_from_the_vector)
{
    tg_manual_seed(0);
    tg_tensor *u = tg_rand(TG_SHAPE(16), TG_FLOAT32); // the same 16 draws
    const float *d = tg_data_f32(u);
    float libm[16];
    for (int j = 0; j < 8; j++) {
        float radius = sqrtf(-2.0f * logf(1.0f - d[j]));
        float theta = 6.2831855f * d[j + 8];
        libm[j] = radius * cosf(theta);
        libm[j + 8] = radius * sinf(theta);
    }
    const vector *v = vec(V_RANDN44);
    int differ = 0;
    for (int i = 0; i < 16; i++) {
        float ref = f32_from_bits(v->bits[i]);
        /* Same algorithm: within a few ulp (1e-5 absolute at |x| < 3). */
        cr_assert_lt(fabsf(libm[i] - ref), 1e-5f,
                     "element %d: libm %.9g, vector %.9g", i, libm[i], ref);
        if (f32_bits(libm[i]) != f32_bits(ref))
            differ++;
    }
    cr_assert_gt(differ, 0, "libm reproduces the vector exactly; the "
                            "bit-exact test cannot see the polynomials");
    tg_release(u);
}

/* ------------------------------------------------------------ behaviour */

TG_TEST(random, manual_seed_clears_the_cached_normal)
{
    tg_manual_seed(42);
    tg_tensor *a = tg_randn(TG_SHAPE(3), TG_FLOAT32); // leaves a cached sample
    tg_manual_seed(42);
    tg_tensor *b = tg_randn(TG_SHAPE(3), TG_FLOAT32);
    expect_vector(a, V_RANDN3_FIRST);
    expect_vector(b, V_RANDN3_FIRST); // not V_RANDN3_SECOND's first value
    tg_release(a);
    tg_release(b);
}

TG_TEST(random, generator_seed_and_cache_are_per_generator)
{
    tg_generator *g = tg_generator_new(42);
    cr_assert_not_null(g);
    tg_tensor *a = tg_randn_gen(g, TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *b = tg_randn_gen(g, TG_SHAPE(3), TG_FLOAT32);
    tg_generator_seed(g, 42);
    tg_tensor *c = tg_randn_gen(g, TG_SHAPE(3), TG_FLOAT32);
    expect_vector(a, V_RANDN3_FIRST);
    expect_vector(b, V_RANDN3_SECOND);
    expect_vector(c, V_RANDN3_FIRST); // reseeding dropped b's cache
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_generator_free(g);
}

/* Draws and cached normals of a private generator leave the default one
 * where it was. */
TG_TEST(random, private_generator_does_not_disturb_the_default)
{
    tg_generator *g = tg_generator_new(0);
    tg_manual_seed(42);
    tg_tensor *first = tg_randn(TG_SHAPE(3), TG_FLOAT32); // default caches
    tg_tensor *p1 = tg_randn_gen(g, TG_SHAPE(5), TG_FLOAT32); // g caches
    tg_tensor *p2 = tg_rand_gen(g, TG_SHAPE(100), TG_FLOAT64);
    tg_tensor *p3 = tg_randint_gen(g, 0, 7, TG_SHAPE(9));
    tg_tensor *second = tg_randn(TG_SHAPE(3), TG_FLOAT32);
    expect_vector(first, V_RANDN3_FIRST);
    expect_vector(second, V_RANDN3_SECOND);
    cr_assert(p1 && p2 && p3);
    tg_release(first);
    tg_release(second);
    tg_release(p1);
    tg_release(p2);
    tg_release(p3);

    /* And g seeded with 0 replays manual_seed(0). */
    tg_generator_seed(g, 0);
    tg_tensor *r = tg_rand_gen(g, TG_SHAPE(6), TG_FLOAT32);
    expect_vector(r, V_RAND6);
    tg_release(r);
    tg_generator_free(g);
}

/* Only the low 32 bits of the seed reach the engine, as in PyTorch. */
TG_TEST(random, seed_keeps_its_low_32_bits)
{
    tg_manual_seed(UINT64_C(1) << 32);
    tg_tensor *t = tg_rand(TG_SHAPE(6), TG_FLOAT32);
    expect_vector(t, V_RAND6);
    tg_release(t);
}

/* An empty tensor draws nothing; a 0-d tensor draws one element. */
TG_TEST(random, empty_draws_nothing_scalar_draws_one)
{
    tg_manual_seed(0);
    tg_tensor *e = tg_rand(TG_SHAPE(0, 3), TG_FLOAT32);
    cr_assert_not_null(e);
    cr_assert_eq(e->numel, 0);
    tg_tensor *s = tg_rand(NULL, 0, TG_FLOAT32);
    cr_assert_not_null(s);
    cr_assert_eq(f32_bits((float)tg_item(s)),
                 (uint32_t)vec(V_RAND6)->bits[0]);
    tg_release(e);
    tg_release(s);
}

/* Below 2^32 randint uses one draw, so with range 2^24 it sees the same
 * low 24 bits as rand float32: randint = rand * 2^24 exactly. */
TG_TEST(random, randint_small_range_uses_one_draw)
{
    tg_manual_seed(11);
    tg_tensor *a = tg_randint(0, INT64_C(1) << 24, TG_SHAPE(50));
    tg_manual_seed(11);
    tg_tensor *u = tg_rand(TG_SHAPE(50), TG_FLOAT32);
    const int64_t *pa = tg_data_i64(a);
    const float *pu = tg_data_f32(u);
    for (int i = 0; i < 50; i++)
        cr_assert_eq(pa[i], (int64_t)(pu[i] * 16777216.0f), "element %d", i);
    tg_release(a);
    tg_release(u);
}

/* From 2^32 up randint uses random64 (two draws, the first high): with
 * range 2^62 its low 53 bits are rand float64's 53 bits. */
TG_TEST(random, randint_large_range_uses_random64)
{
    tg_manual_seed(5);
    tg_tensor *a = tg_randint(0, INT64_C(1) << 62, TG_SHAPE(50));
    tg_manual_seed(5);
    tg_tensor *u = tg_rand(TG_SHAPE(50), TG_FLOAT64);
    const int64_t *pa = tg_data_i64(a);
    const double *pu = tg_data_f64(u);
    const int64_t mask53 = (INT64_C(1) << 53) - 1;
    for (int i = 0; i < 50; i++)
        cr_assert_eq(pa[i] & mask53, (int64_t)(pu[i] * 9007199254740992.0),
                     "element %d", i);
    tg_release(a);
    tg_release(u);
}

/* A range above 2^32 that is not a power of two, around 0, and the
 * widest range of all: every value in range, and the values spread beyond
 * what one 32-bit draw could reach. */
TG_TEST(random, randint_range_above_2_32_stays_in_range)
{
    const int64_t low = -(INT64_C(1) << 40) + 3, high = (INT64_C(1) << 40) + 5;
    tg_manual_seed(9);
    tg_tensor *t = tg_randint(low, high, TG_SHAPE(1000));
    const int64_t *p = tg_data_i64(t);
    int big = 0;
    for (int i = 0; i < 1000; i++) {
        cr_assert(p[i] >= low && p[i] < high, "element %d = %lld", i,
                  (long long)p[i]);
        if (p[i] > (INT64_C(1) << 32) || p[i] < -(INT64_C(1) << 32))
            big++;
    }
    /* With a uniform draw, |v| > 2^32 has probability 1 - 2^-7; 900 of
     * 1000 is far below the expected 992 yet impossible for 32-bit draws. */
    cr_assert_gt(big, 900, "only %d of 1000 values beyond 2^32", big);
    tg_release(t);

    /* The widest range, 2^64 - 1: low + draw % range wraps past INT64_MAX
     * on the way (unsigned arithmetic; the sanitizer build would flag a
     * signed overflow) and must still stay below high. */
    tg_tensor *w = tg_randint(INT64_MIN, INT64_MAX, TG_SHAPE(100));
    cr_assert_not_null(w, "%s", tg_last_error());
    const int64_t *pw = tg_data_i64(w);
    for (int i = 0; i < 100; i++)
        cr_assert_neq(pw[i], INT64_MAX, "element %d", i);
    tg_release(w);
}

/* 16 elements with stride 2 are not contiguous: normal_ takes the scalar
 * path (so its first four are randn(4)'s, not randn(4,4)'s), and the
 * elements between them stay untouched. */
TG_TEST(random, normal_on_a_non_contiguous_view_takes_the_scalar_path)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(32), TG_FLOAT32);
    tg_tensor *v = tg_slice(x, 0, 0, 32, 2);
    cr_assert_not_null(v);
    cr_assert_not(tg_is_contiguous(v));
    uint64_t version = x->storage->version;
    tg_manual_seed(0);
    cr_assert_eq(tg_normal_(v, 0, 1, NULL), 0, "%s", tg_last_error());
    cr_assert_gt(x->storage->version, version, "version not bumped");
    tg_tensor *head = tg_narrow(v, 0, 0, 4);
    expect_vector(head, V_RANDN4);
    const float *px = tg_data_f32(x);
    for (int i = 1; i < 32; i += 2)
        cr_assert_eq(px[i], 0.0f, "element %d written", i);
    tg_release(head);
    tg_release(v);
    tg_release(x);
}

/* The fill path writes through the offset of a contiguous view. */
TG_TEST(random, normal_fill_path_on_a_contiguous_view)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3, 16), TG_FLOAT32);
    tg_tensor *row = tg_select(x, 0, 1);
    cr_assert(tg_is_contiguous(row));
    tg_manual_seed(0);
    cr_assert_eq(tg_normal_(row, 0, 1, NULL), 0, "%s", tg_last_error());
    expect_vector(row, V_RANDN44);
    const float *px = tg_data_f32(x);
    for (int i = 0; i < 16; i++)
        cr_assert(px[i] == 0.0f && px[32 + i] == 0.0f, "row 0 or 2 written");
    tg_release(row);
    tg_release(x);
}

/* Draws follow memory order, as PyTorch 1.13 does: torch.manual_seed(0);
 * a = torch.empty(3, 2); a.t().uniform_() leaves a holding torch.rand(6)
 * in its storage order (checked against PyTorch). */
TG_TEST(random, uniform_draws_in_memory_order_on_a_transposed_view)
{
    tg_tensor *base = tg_zeros(TG_SHAPE(3, 2), TG_FLOAT32);
    tg_tensor *t = tg_transpose(base, 0, 1); // (2, 3), strides (1, 2)
    tg_manual_seed(0);
    cr_assert_eq(tg_uniform_(t, 0, 1, NULL), 0, "%s", tg_last_error());
    expect_vector(base, V_RAND6);
    tg_release(t);
    tg_release(base);
}

/* The fill path applies mean and std with one fused multiply-add on the
 * float32 standard normal: fmaf(z, std, mean), exactly. */
TG_TEST(random, normal_fill_path_scales_with_fma)
{
    tg_tensor *t = tg_empty(TG_SHAPE(16), TG_FLOAT32);
    tg_manual_seed(0);
    cr_assert_eq(tg_normal_(t, 2.0, 3.0, NULL), 0, "%s", tg_last_error());
    const float *p = tg_data_f32(t);
    const vector *v = vec(V_RANDN44);
    for (int i = 0; i < 16; i++) {
        float want = fmaf(f32_from_bits(v->bits[i]), 3.0f, 2.0f);
        cr_assert_eq(f32_bits(p[i]), f32_bits(want), "element %d: %.9g vs %.9g",
                     i, p[i], want);
    }
    tg_release(t);
}

/* The scalar path scales the double sample, then rounds once to float32;
 * from the float32 vector we can only check it within that rounding. */
TG_TEST(random, normal_scalar_path_scales_mean_and_std)
{
    tg_tensor *t = tg_empty(TG_SHAPE(4), TG_FLOAT32);
    tg_manual_seed(0);
    cr_assert_eq(tg_normal_(t, -1.0, 0.5, NULL), 0, "%s", tg_last_error());
    const float *p = tg_data_f32(t);
    const vector *v = vec(V_RANDN4);
    for (int i = 0; i < 4; i++) {
        double want = v->values[i] * 0.5 - 1.0;
        /* Two float32 roundings separate want from p[i]: the vector's
         * (half an ulp of |z| < 4, at most 2.4e-7, halved by std 0.5) and
         * the result's (half an ulp of |p| < 4, at most 2.4e-7). 4e-7
         * covers both; a wrong mean or std is off by far more. */
        cr_assert_lt(fabs(p[i] - want), 4e-7, "element %d: %.9g vs %.9g", i,
                     p[i], want);
    }
    tg_release(t);
}

/* The float64 fill path: the same blocks and tail rule with float64
 * uniforms and libm in double. Its reference is computed here from
 * rand(36, float64): 20 uniforms, then 16 redrawn for the tail. */
TG_TEST(random, normal_float64_fill_path_and_tail)
{
    tg_manual_seed(123);
    tg_tensor *u = tg_rand(TG_SHAPE(36), TG_FLOAT64);
    tg_manual_seed(123);
    tg_tensor *t = tg_randn(TG_SHAPE(4, 5), TG_FLOAT64);
    const double *pu = tg_data_f64(u), *pt = tg_data_f64(t);
    double want[20], block[16];
    const double pi = 3.14159265358979323846;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: uniforms 0..15 -> elements 0..15;
         * pass 1: uniforms 20..35 -> elements 4..19 */
        const double *d = pass == 0 ? pu : pu + 20;
        for (int j = 0; j < 8; j++) {
            double radius = sqrt(-2.0 * log(1.0 - d[j]));
            double theta = 2.0 * pi * d[j + 8];
            block[j] = radius * cos(theta);
            block[j + 8] = radius * sin(theta);
        }
        memcpy(want + (pass == 0 ? 0 : 4), block, sizeof block);
    }
    for (int i = 0; i < 20; i++)
        cr_assert_eq(f64_bits(pt[i]), f64_bits(want[i]),
                     "element %d: %.17g vs %.17g", i, pt[i], want[i]);
    tg_release(u);
    tg_release(t);
}

/* float64 with mean and std: PyTorch's x86 build applies them with one
 * fused multiply-add, fma(z, std, mean), on both paths; a separate multiply
 * and add differs in the last bit of some of these values. Expected bits
 * from PyTorch 1.13.1:
 *   torch.manual_seed(0); torch.empty(20, dtype=torch.float64).normal_(0.3, 1.7)[:4]
 *   torch.manual_seed(0); torch.empty(3, dtype=torch.float64).normal_(0.3, 1.7)
 *   torch.manual_seed(0); torch.empty(3, 2, dtype=torch.float64).uniform_(-0.3, 0.7) */
TG_TEST(random, float64_mean_std_and_bounds_match_pytorch)
{
    static const double fill[4] = {-0x1.d05879bf8db43p+1, -0x1.568e1afc7af70p-2,
                                   -0x1.80de0f2397ce8p+0, 0x1.ffc9562d368b3p+0};
    static const double scalar[3] = {0x1.75b8834758818p+1, -0x1.9733bb673e2e8p-3,
                                     -0x1.b3b45eab59952p+1};
    static const double uniform[6] = {
        0x1.57112fe2b1096p-1, 0x1.a19b87d10664dp-2, 0x1.466a90822e586p-3,
        0x1.3dd2a3f4be3cep-1, 0x1.614e00c108a73p-2, 0x1.f6ef7919a7ab1p-2};
    tg_tensor *a = tg_empty(TG_SHAPE(20), TG_FLOAT64);
    tg_tensor *b = tg_empty(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *c = tg_empty(TG_SHAPE(3, 2), TG_FLOAT64);
    tg_manual_seed(0);
    cr_assert_eq(tg_normal_(a, 0.3, 1.7, NULL), 0);
    tg_manual_seed(0);
    cr_assert_eq(tg_normal_(b, 0.3, 1.7, NULL), 0);
    tg_manual_seed(0);
    cr_assert_eq(tg_uniform_(c, -0.3, 0.7, NULL), 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(f64_bits(tg_data_f64(a)[i]), f64_bits(fill[i]),
                     "fill path, element %d: %a vs %a", i, tg_data_f64(a)[i],
                     fill[i]);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(f64_bits(tg_data_f64(b)[i]), f64_bits(scalar[i]),
                     "scalar path, element %d: %a vs %a", i,
                     tg_data_f64(b)[i], scalar[i]);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(f64_bits(tg_data_f64(c)[i]), f64_bits(uniform[i]),
                     "uniform, element %d: %a vs %a", i, tg_data_f64(c)[i],
                     uniform[i]);
    tg_release(a);
    tg_release(b);
    tg_release(c);
}

/* uniform_(from, to) in float32 is fmaf(u, to - from, from) on the rand
 * vector's u, bit for bit; and every value lies in [from, to). */
TG_TEST(random, uniform_from_to_float32)
{
    tg_tensor *t = tg_empty(TG_SHAPE(6), TG_FLOAT32);
    uint64_t version = t->storage->version;
    tg_manual_seed(0);
    cr_assert_eq(tg_uniform_(t, -2.5, 4.0, NULL), 0, "%s", tg_last_error());
    cr_assert_gt(t->storage->version, version, "version not bumped");
    const float *p = tg_data_f32(t);
    const vector *v = vec(V_RAND6);
    for (int i = 0; i < 6; i++) {
        float want = fmaf(f32_from_bits(v->bits[i]), 6.5f, -2.5f);
        cr_assert_eq(f32_bits(p[i]), f32_bits(want), "element %d", i);
        cr_assert(p[i] >= -2.5f && p[i] < 4.0f);
    }
    tg_release(t);
}

/* from == to is allowed and fills with that value. */
TG_TEST(random, uniform_empty_range_fills_the_bound)
{
    tg_tensor *t = tg_empty(TG_SHAPE(5), TG_FLOAT64);
    cr_assert_eq(tg_uniform_(t, 1.5, 1.5, NULL), 0, "%s", tg_last_error());
    const double *p = tg_data_f64(t);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(p[i], 1.5);
    tg_release(t);
}

/* ---------------------------------------------------------------- errors */

TG_TEST(random_errors, randint_low_not_below_high)
{
    cr_assert_null(tg_randint(5, 5, TG_SHAPE(3)));
    tg_assert_error("tg_randint:", "[5, 5)", "rule: low must be < high",
                    "5 >= 5", "hint:");
    cr_assert_null(tg_randint(INT64_MAX, INT64_MIN, TG_SHAPE(3)));
    tg_assert_error("tg_randint:", "rule: low must be < high");
}

TG_TEST(random_errors, randn_and_rand_reject_int64)
{
    cr_assert_null(tg_randn(TG_SHAPE(2, 3), TG_INT64));
    tg_assert_error("tg_randn:", "int64 tensor of shape (2, 3)",
                    "rule: dtype must be TG_FLOAT32 or TG_FLOAT64",
                    "hint: tg_randint");
    cr_assert_null(tg_rand(TG_SHAPE(4), TG_INT64));
    tg_assert_error("tg_rand:", "int64 tensor of shape (4,)",
                    "rule: dtype must be TG_FLOAT32 or TG_FLOAT64");
    cr_assert_null(tg_rand(TG_SHAPE(4), (tg_dtype)7));
    tg_assert_error("tg_rand:", "unknown dtype 7");
}

TG_TEST(random_errors, uniform_and_normal_reject_int64)
{
    tg_tensor *t = tg_zeros(TG_SHAPE(2, 2), TG_INT64);
    uint64_t version = t->storage->version;
    cr_assert_eq(tg_uniform_(t, 0, 1, NULL), -1);
    tg_assert_error("tg_uniform_:", "int64 tensor of shape (2, 2)",
                    "rule: the tensor must be float32 or float64",
                    "hint: use tg_randint");
    cr_assert_eq(tg_normal_(t, 0, 1, NULL), -1);
    tg_assert_error("tg_normal_:", "int64 tensor of shape (2, 2)");
    cr_assert_eq(t->storage->version, version, "a failed fill wrote");
    tg_release(t);
}

TG_TEST(random_errors, normal_negative_std)
{
    tg_tensor *t = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    tg_manual_seed(0);
    cr_assert_eq(tg_normal_(t, 0, -2, NULL), -1);
    tg_assert_error("tg_normal_:", "std=-2",
                    "rule: std must be >= 0, but it is -2", "hint:");
    /* Nothing drawn: the default generator is still at manual_seed(0). */
    tg_tensor *r = tg_rand(TG_SHAPE(6), TG_FLOAT32);
    expect_vector(r, V_RAND6);
    tg_release(r);
    tg_release(t);
}

TG_TEST(random_errors, non_finite_and_reversed_parameters)
{
    tg_tensor *t = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    cr_assert_eq(tg_normal_(t, NAN, 1, NULL), -1);
    tg_assert_error("tg_normal_:", "rule: mean and std must be finite");
    cr_assert_eq(tg_normal_(t, 0, INFINITY, NULL), -1);
    tg_assert_error("tg_normal_:", "rule: mean and std must be finite");
    cr_assert_eq(tg_uniform_(t, 0, INFINITY, NULL), -1);
    tg_assert_error("tg_uniform_:", "rule: from and to must be finite");
    cr_assert_eq(tg_uniform_(t, NAN, 1, NULL), -1);
    tg_assert_error("tg_uniform_:", "rule: from and to must be finite");
    cr_assert_eq(tg_uniform_(t, 1e39, 2e39, NULL), -1); // beyond float32
    tg_assert_error("tg_uniform_:", "float32's range");
    cr_assert_eq(tg_uniform_(t, -3e38, 3e38, NULL), -1); // to - from overflows
    tg_assert_error("tg_uniform_:", "rule: to - from must be at most");
    cr_assert_eq(tg_uniform_(t, 1, 0, NULL), -1);
    tg_assert_error("tg_uniform_:", "U[1, 0)", "rule: from must be <= to",
                    "1 > 0", "hint: swap them");
    tg_release(t);
}

TG_TEST(random_errors, negative_shape)
{
    cr_assert_null(tg_randn(TG_SHAPE(2, -1), TG_FLOAT32));
    tg_assert_error("tg_randn:", "(2, -1)", "rule: sizes must be >= 0");
    cr_assert_null(tg_rand(TG_SHAPE(-3), TG_FLOAT64));
    tg_assert_error("tg_rand:", "(-3,)", "rule: sizes must be >= 0");
    cr_assert_null(tg_randint(0, 2, TG_SHAPE(4, -2)));
    tg_assert_error("tg_randint:", "(4, -2)", "rule: sizes must be >= 0");
    cr_assert_null(tg_rand(NULL, 2, TG_FLOAT32));
    tg_assert_error("tg_rand:", "shape is NULL");
}

TG_TEST(random_errors, fill_of_an_expanded_view)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(1, 4), TG_FLOAT32);
    tg_tensor *e = tg_expand(x, TG_SHAPE(3, 4));
    cr_assert_not_null(e);
    cr_assert_eq(tg_normal_(e, 0, 1, NULL), -1);
    tg_assert_error("tg_normal_:", "shape (3, 4)", "stride 0",
                    "one memory location");
    cr_assert_eq(tg_uniform_(e, 0, 1, NULL), -1);
    tg_assert_error("tg_uniform_:", "stride 0");
    tg_release(e);
    tg_release(x);
}

/* NULL tensors fail without a new message; NULL generators mean the
 * default one; freeing NULL or the default generator does not crash. */
TG_TEST(random_errors, null_arguments)
{
    tg_clear_error();
    cr_assert_eq(tg_uniform_(NULL, 0, 1, NULL), -1);
    cr_assert_eq(tg_normal_(NULL, 0, 1, NULL), -1);
    cr_assert_str_empty(tg_last_error());
    tg_generator_free(NULL);
    tg_generator_seed(NULL, 3);
    cr_assert_str_empty(tg_last_error());
    tg_generator_free(tg_default_generator());
    tg_assert_error("tg_generator_free:", "default generator");
    tg_manual_seed(0); // the default generator still works
    tg_tensor *r = tg_rand_gen(NULL, TG_SHAPE(6), TG_FLOAT32);
    expect_vector(r, V_RAND6);
    tg_release(r);
}
