/*
 * tests/nn/test_pyrandom.c - Python's random module in C (nn/pyrandom.c)
 * against the interpreter's own numbers.
 *
 * The references are drawn by Python's random.Random itself
 * (scripts/reference/gen_pyrandom.py, which says what each file holds):
 * random(), getrandbits(k) for k of 1, 31, 32, 33, 64 and 100 (through
 * both C functions), _randbelow(n) for n from 1 to 2^64 - 1, randrange and
 * randint with negative and large bounds, and shuffles of lists of 0, 1,
 * 2, 3, 10, 1000 and 32033 elements (the last is the makemore split's
 * permutation), for the seeds 0, 42, 2^31 - 1, 2^32 + 5 and 2^64 - 1.
 * Every comparison is exact. The comparisons can fail: the streams of
 * neighbouring seeds, of a seed without its high word, and of the
 * PyTorch-seeded engine are each rejected. Then reseeding, shuffles of
 * elements of other sizes, and every error.
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const uint64_t SEEDS[] = {0, 42, 2147483647, UINT64_C(4294967301),
                                 UINT64_MAX};
#define NSEEDS (sizeof SEEDS / sizeof *SEEDS)
static const int BITS[] = {1, 31, 32, 33, 64, 100};
#define NBITS 6
static const uint64_t BELOW[] = {1, 2, 3, 10, 1000, UINT64_C(1) << 31,
                                 UINT64_C(4294967295), UINT64_C(1) << 32,
                                 UINT64_C(4294967297),
                                 (UINT64_C(1) << 53) + 7, UINT64_C(1) << 63,
                                 UINT64_MAX};
#define NBELOW 12
static const size_t SHUFFLE_LENGTHS[] = {0, 1, 2, 3, 10, 1000};
#define NLENGTHS 6

static tg_tensor *load(uint64_t seed, const char *what)
{
    char name[96];
    snprintf(name, sizeof name, "pyrandom_s%llu_%s",
             (unsigned long long)seed, what);
    return tg_test_load_ref(name);
}

/* Whether the next ten random() of r are those of the reference file of
 * seed ref_seed. */
static bool random_matches(tg_pyrandom *r, uint64_t ref_seed)
{
    tg_tensor *ref = load(ref_seed, "random");
    cr_assert_eq(ref->numel, 10);
    const double *want = tg_data_f64(ref);
    bool same = true;
    for (int i = 0; i < 10; i++)
        same = same && tg_pyrandom_random(r) == want[i];
    tg_release(ref);
    return same;
}

TG_TEST(pyrandom, random_matches_python)
{
    for (size_t s = 0; s < NSEEDS; s++) {
        tg_pyrandom *r = tg_pyrandom_new(SEEDS[s]);
        cr_assert(random_matches(r, SEEDS[s]), "seed %llu",
                  (unsigned long long)SEEDS[s]);
        tg_pyrandom_free(r);
    }
}

/* The check can fail: other seeds give other numbers, the high word of a
 * seed counts, and PyTorch's seeding of the same engine differs. */
TG_TEST(pyrandom, random_check_rejects_other_streams)
{
    tg_pyrandom *r = tg_pyrandom_new(43);
    cr_assert_not(random_matches(r, 42));
    tg_pyrandom_seed(r, 5); // 2^32 + 5 without its high word
    cr_assert_not(random_matches(r, UINT64_C(4294967301)));
    tg_pyrandom_seed(r, UINT64_MAX - 1);
    cr_assert_not(random_matches(r, UINT64_MAX));
    tg_pyrandom_seed(r, 42); // and the right seed passes
    cr_assert(random_matches(r, 42));
    tg_pyrandom_free(r);

    /* torch.manual_seed(42): the same engine seeded by state[0] = 42 and
     * the 1812433253 recurrence; its float64 uniforms use other bits too */
    tg_generator *g = tg_generator_new(42);
    tg_tensor *u = tg_rand_gen(g, TG_SHAPE(10), TG_FLOAT64);
    tg_tensor *ref = load(42, "random");
    const double *a = tg_data_f64(u), *b = tg_data_f64(ref);
    int same = 0;
    for (int i = 0; i < 10; i++)
        same += a[i] == b[i];
    cr_assert_eq(same, 0);
    tg_release(ref);
    tg_release(u);
    tg_generator_free(g);
}

/* Both spellings of getrandbits against the interpreter: the 64-bit one
 * for k <= 64, the word one for every k (its unused words stay as they
 * were: the reference pads them with 0). */
TG_TEST(pyrandom, getrandbits_matches_python)
{
    for (size_t s = 0; s < NSEEDS; s++) {
        tg_tensor *ref = load(SEEDS[s], "bits");
        cr_assert_eq(ref->ndim, 3);
        cr_assert_eq(ref->shape[0], NBITS);
        cr_assert_eq(ref->shape[1], 5);
        cr_assert_eq(ref->shape[2], 4);
        const int64_t *want = tg_data_i64(ref);
        tg_pyrandom *r64 = tg_pyrandom_new(SEEDS[s]);
        tg_pyrandom *rw = tg_pyrandom_new(SEEDS[s]);
        for (int b = 0; b < NBITS; b++)
            for (int i = 0; i < 5; i++) {
                const int64_t *w = want + (b * 5 + i) * 4;
                int k = BITS[b];
                uint32_t words[4] = {0, 0, 0, 0};
                cr_assert_eq(tg_pyrandom_getrandbits_words(rw, k, words), 0);
                for (int j = 0; j < 4; j++)
                    cr_assert_eq(words[j], (uint32_t)w[j],
                                 "seed %llu k %d draw %d word %d",
                                 (unsigned long long)SEEDS[s], k, i, j);
                if (k > 64) {
                    /* keep r64 in step: the same draws, by words */
                    uint32_t skip[4];
                    cr_assert_eq(tg_pyrandom_getrandbits_words(r64, k, skip),
                                 0);
                    continue;
                }
                uint64_t v = 1;
                cr_assert_eq(tg_pyrandom_getrandbits(r64, k, &v), 0);
                uint64_t expect = (uint64_t)w[0] | ((uint64_t)w[1] << 32);
                cr_assert_eq(v, expect, "seed %llu k %d draw %d",
                             (unsigned long long)SEEDS[s], k, i);
                cr_assert(k == 64 || v >> k == 0);
            }
        tg_pyrandom_free(rw);
        tg_pyrandom_free(r64);
        tg_release(ref);
    }
}

/* getrandbits(0) is 0 and draws nothing, in both spellings. */
TG_TEST(pyrandom, zero_bits_draw_nothing)
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    uint64_t v = 7;
    cr_assert_eq(tg_pyrandom_getrandbits(r, 0, &v), 0);
    cr_assert_eq(v, 0);
    cr_assert_eq(tg_pyrandom_getrandbits_words(r, 0, NULL), 0);
    cr_assert(random_matches(r, 42));
    tg_pyrandom_free(r);
}

TG_TEST(pyrandom, randbelow_matches_python)
{
    for (size_t s = 0; s < NSEEDS; s++) {
        tg_tensor *ref = load(SEEDS[s], "below");
        cr_assert_eq(ref->numel, NBELOW * 3);
        const int64_t *want = tg_data_i64(ref);
        tg_pyrandom *r = tg_pyrandom_new(SEEDS[s]);
        for (int b = 0; b < NBELOW; b++)
            for (int i = 0; i < 3; i++) {
                uint64_t v;
                cr_assert_eq(tg_pyrandom_randbelow(r, BELOW[b], &v), 0);
                cr_assert_eq(v, (uint64_t)want[b * 3 + i],
                             "seed %llu n %llu draw %d",
                             (unsigned long long)SEEDS[s],
                             (unsigned long long)BELOW[b], i);
                cr_assert_lt(v, BELOW[b]);
            }
        tg_pyrandom_free(r);
        tg_release(ref);
    }
}

TG_TEST(pyrandom, randrange_and_randint_match_python)
{
    tg_tensor *ref = tg_test_load_ref("pyrandom_s42_range");
    cr_assert_eq(ref->numel, 40);
    const int64_t *want = tg_data_i64(ref);
    tg_pyrandom *r = tg_pyrandom_new(42);
    for (int i = 0; i < 40; i++) {
        int64_t v = 0;
        int rc;
        if (i < 10)
            rc = tg_pyrandom_randrange(r, 0, 10, &v);
        else if (i < 20)
            rc = tg_pyrandom_randrange(r, -5, 5, &v);
        else if (i < 30)
            rc = tg_pyrandom_randint(r, -INT64_C(1000000000000),
                                     INT64_C(1000000000000), &v);
        else
            rc = tg_pyrandom_randint(r, INT64_C(1) << 62, INT64_MAX, &v);
        cr_assert_eq(rc, 0);
        cr_assert_eq(v, want[i], "draw %d: %lld, Python %lld", i,
                     (long long)v, (long long)want[i]);
    }
    tg_pyrandom_free(r);
    tg_release(ref);
}

/* The widest ranges work: randrange over all of int64 but one value, and
 * randint with one end at an int64 limit. */
TG_TEST(pyrandom, ranges_at_the_int64_limits)
{
    tg_pyrandom *r = tg_pyrandom_new(1);
    for (int i = 0; i < 100; i++) {
        int64_t v;
        cr_assert_eq(tg_pyrandom_randrange(r, INT64_MIN, INT64_MAX, &v), 0);
        cr_assert_lt(v, INT64_MAX);
        cr_assert_eq(tg_pyrandom_randint(r, INT64_MIN, INT64_MIN + 1, &v), 0);
        cr_assert(v == INT64_MIN || v == INT64_MIN + 1);
        cr_assert_eq(tg_pyrandom_randint(r, INT64_MAX - 2, INT64_MAX, &v), 0);
        cr_assert_geq(v, INT64_MAX - 2);
        cr_assert_eq(tg_pyrandom_randint(r, 7, 7, &v), 0);
        cr_assert_eq(v, 7);
    }
    tg_pyrandom_free(r);
}

/* Shuffles of list(range(n)) one after the other from one generator, as
 * the reference file of seed ref_seed holds them; int64 elements. */
static bool shuffles_match(uint64_t seed, uint64_t ref_seed)
{
    tg_tensor *ref = load(ref_seed, "shuffles");
    cr_assert_eq(ref->numel, 1016);
    const int64_t *want = tg_data_i64(ref);
    tg_pyrandom *r = tg_pyrandom_new(seed);
    bool same = true;
    size_t at = 0;
    for (int l = 0; l < NLENGTHS; l++) {
        size_t n = SHUFFLE_LENGTHS[l];
        int64_t *x = malloc((n ? n : 1) * sizeof *x);
        for (size_t i = 0; i < n; i++)
            x[i] = (int64_t)i;
        cr_assert_eq(tg_pyrandom_shuffle(r, n ? x : NULL, n, sizeof *x), 0);
        for (size_t i = 0; i < n; i++)
            same = same && x[i] == want[at + i];
        at += n;
        free(x);
    }
    tg_pyrandom_free(r);
    tg_release(ref);
    return same;
}

TG_TEST(pyrandom, shuffles_match_python)
{
    for (size_t s = 0; s < NSEEDS; s++)
        cr_assert(shuffles_match(SEEDS[s], SEEDS[s]), "seed %llu",
                  (unsigned long long)SEEDS[s]);
    cr_assert_not(shuffles_match(0, 42));
    cr_assert_not(shuffles_match(43, 42));
}

/* random.seed(42); random.shuffle(list(range(32033))): the permutation of
 * the makemore split. */
TG_TEST(pyrandom, makemore_permutation_matches_python)
{
    tg_tensor *ref = tg_test_load_ref("pyrandom_s42_shuffle32033");
    cr_assert_eq(ref->numel, 43);
    const int64_t *want = tg_data_i64(ref);
    enum { N = 32033 };
    int64_t *x = malloc(N * sizeof *x);
    for (int64_t i = 0; i < N; i++)
        x[i] = i;
    tg_pyrandom *r = tg_pyrandom_new(42);
    cr_assert_eq(tg_pyrandom_shuffle(r, x, N, sizeof *x), 0);
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(x[i], want[i], "x[%d]", i);
        cr_assert_eq(x[N - 20 + i], want[20 + i], "x[%d]", N - 20 + i);
    }
    int64_t sum = 0, weighted = 0, zero_at = -1;
    for (int64_t i = 0; i < N; i++) {
        sum += x[i];
        weighted += (i + 1) * x[i];
        if (x[i] == 0)
            zero_at = i;
    }
    cr_assert_eq(sum, want[40]);
    cr_assert_eq(weighted, want[41]);
    cr_assert_eq(zero_at, want[42]);
    tg_pyrandom_free(r);
    free(x);
    tg_release(ref);
}

/* Elements of any size move whole: 3-byte and 100-byte records (more
 * than the 64-byte swap buffer) end up in the order of int64 indices
 * shuffled from the same seed. */
TG_TEST(pyrandom, shuffle_moves_elements_of_any_size)
{
    enum { N = 10 };
    const size_t sizes[] = {1, 3, 64, 100};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t size = sizes[s];
        unsigned char *rec = malloc(N * size);
        for (size_t i = 0; i < N; i++)
            memset(rec + i * size, (int)(i + 1), size);
        int64_t order[N];
        for (int64_t i = 0; i < N; i++)
            order[i] = i;
        tg_pyrandom *a = tg_pyrandom_new(42), *b = tg_pyrandom_new(42);
        cr_assert_eq(tg_pyrandom_shuffle(a, rec, N, size), 0);
        cr_assert_eq(tg_pyrandom_shuffle(b, order, N, sizeof *order), 0);
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < size; j++)
                cr_assert_eq(rec[i * size + j], order[i] + 1,
                             "size %zu element %zu byte %zu", size, i, j);
        tg_pyrandom_free(a);
        tg_pyrandom_free(b);
        free(rec);
    }
}

/* seed() restarts the stream, after any number of draws (past a twist of
 * the 624 state words too). */
TG_TEST(pyrandom, seed_restarts_the_stream)
{
    tg_pyrandom *r = tg_pyrandom_new(7);
    for (int i = 0; i < 1000; i++)
        tg_pyrandom_random(r);
    tg_pyrandom_seed(r, 42);
    cr_assert(random_matches(r, 42));
    tg_pyrandom_seed(r, 0);
    cr_assert(random_matches(r, 0));
    tg_pyrandom_free(r);
}

TG_TEST(pyrandom, errors)
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    uint64_t u = 5;
    int64_t v = 5;
    cr_assert_eq(tg_pyrandom_getrandbits(r, 65, &u), -1);
    cr_assert_eq(u, 0);
    tg_assert_error("tg_pyrandom_getrandbits: k is 65", "rule: a uint64_t",
                    "hint: for more bits use tg_pyrandom_getrandbits_words");
    cr_assert_eq(tg_pyrandom_getrandbits(r, -1, &u), -1);
    tg_assert_error("tg_pyrandom_getrandbits: k is -1");
    cr_assert_eq(tg_pyrandom_getrandbits(r, 3, NULL), -1);
    tg_assert_error("tg_pyrandom_getrandbits: out is NULL");
    cr_assert_eq(tg_pyrandom_getrandbits_words(r, -3, NULL), -1);
    tg_assert_error("tg_pyrandom_getrandbits_words: k is -3",
                    "must be non-negative");
    cr_assert_eq(tg_pyrandom_getrandbits_words(r, 40, NULL), -1);
    tg_assert_error("tg_pyrandom_getrandbits_words: words is NULL");
    u = 5;
    cr_assert_eq(tg_pyrandom_randbelow(r, 0, &u), -1);
    cr_assert_eq(u, 0);
    tg_assert_error("tg_pyrandom_randbelow: n is 0", "rule: the result is "
                                                     "in [0, n)");
    cr_assert_eq(tg_pyrandom_randbelow(r, 3, NULL), -1);
    tg_assert_error("tg_pyrandom_randbelow: out is NULL");
    cr_assert_eq(tg_pyrandom_randrange(r, 5, 5, &v), -1);
    cr_assert_eq(v, 0);
    tg_assert_error("tg_pyrandom_randrange: empty range [5, 5)");
    cr_assert_eq(tg_pyrandom_randrange(r, 0, 5, NULL), -1);
    tg_assert_error("tg_pyrandom_randrange: out is NULL");
    cr_assert_eq(tg_pyrandom_randint(r, 2, 1, &v), -1);
    tg_assert_error("tg_pyrandom_randint: empty range [2, 1]");
    cr_assert_eq(tg_pyrandom_randint(r, INT64_MIN, INT64_MAX, &v), -1);
    tg_assert_error("tg_pyrandom_randint: [-9223372036854775808, "
                    "9223372036854775807] holds 2^64 integers");
    cr_assert_eq(tg_pyrandom_randint(r, 0, 1, NULL), -1);
    tg_assert_error("tg_pyrandom_randint: out is NULL");
    int64_t x[3] = {1, 2, 3};
    cr_assert_eq(tg_pyrandom_shuffle(r, NULL, 3, 8), -1);
    tg_assert_error("tg_pyrandom_shuffle: base is NULL for 3 elements");
    cr_assert_eq(tg_pyrandom_shuffle(r, x, 3, 0), -1);
    tg_assert_error("tg_pyrandom_shuffle: size is 0 for 3 elements",
                    "hint: tg_pyrandom_shuffle(r, a, n, sizeof a[0])");
    /* a failed call draws nothing: the stream is still seed 42's */
    cr_assert(random_matches(r, 42));
    tg_pyrandom_free(r);
}

/* A NULL generator (tg_pyrandom_new failed and said why) fails without a
 * second message; seed and free do nothing. */
TG_TEST(pyrandom, null_generator_is_silent)
{
    tg_clear_error();
    uint64_t u = 5;
    int64_t v = 5, x[2] = {1, 2};
    uint32_t w[2];
    cr_assert(isnan(tg_pyrandom_random(NULL)));
    cr_assert_eq(tg_pyrandom_getrandbits(NULL, 3, &u), -1);
    cr_assert_eq(u, 0);
    cr_assert_eq(tg_pyrandom_getrandbits_words(NULL, 40, w), -1);
    cr_assert_eq(tg_pyrandom_randbelow(NULL, 3, &u), -1);
    cr_assert_eq(tg_pyrandom_randrange(NULL, 0, 3, &v), -1);
    cr_assert_eq(v, 0);
    cr_assert_eq(tg_pyrandom_randint(NULL, 0, 3, &v), -1);
    cr_assert_eq(tg_pyrandom_shuffle(NULL, x, 2, sizeof *x), -1);
    cr_assert_eq(x[0], 1);
    tg_pyrandom_seed(NULL, 3);
    tg_pyrandom_free(NULL);
    cr_assert_str_empty(tg_last_error());
}

TG_TEST(pyrandom, out_of_memory)
{
    tg_fail_allocations_after(0);
    tg_pyrandom *r = tg_pyrandom_new(42);
    tg_fail_allocations_after(-1);
    cr_assert_null(r);
    tg_assert_error("tg_pyrandom_new: out of memory allocating a generator");
}
