/*
 * tests/tensor/test_multinomial.c - tg_multinomial against PyTorch 1.13.1.
 *
 * tests/reference/multinomial_cases.txt holds torch.multinomial results
 * written by scripts/reference/torch_multinomial_cases.py: for each case
 * the probs, the seed, the indices PyTorch returned and the torch.rand
 * numbers drawn right after (so the generator state is checked, not just
 * the indices). Every case is compared exactly; the number of cases is
 * pinned, so a case cannot slip out unchecked, and the checker is fed
 * wrong answers to show that it can fail.
 *
 * Then what the vectors cannot show: the frequencies over many draws (a
 * statistical test with its bound explained), the default generator, the
 * shapes of the result, that probs is left alone and that nothing needs a
 * gradient. The error messages are in tests/errors/catalogue_tensor.c.
 */
#include "../common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The cases the generator script writes (its "# N cases" line says so
 * too). */
#define EXPECTED_CASES 65

/* ------------------------------------------------------ the vector file */

typedef struct mcase {
    char name[64];
    bool loop;      // the makemore sampling loop (a table, not one probs)
    uint64_t seed;
    tg_dtype dtype;
    char layout[16]; // contiguous, transpose, every_other
    int ndim;
    int64_t shape[2]; // of the base tensor
    int64_t nvalues;
    double *values; // (nvalues,) the base in C order
    int64_t num_samples;
    bool replacement;
    int64_t names; // loop: how many names
    int64_t nexpect;
    int64_t *expect; // (nexpect,)
    int64_t compare; // samples compared per row
    int nafter;
    uint32_t after[8]; // float32 bits of the torch.rand drawn next
} mcase;

typedef struct case_file {
    mcase cases[128];
    int n;
    int declared; // the "# N cases" line
} case_file;

static void read_token(FILE *f, char *tok, size_t size)
{
    char fmt[16];
    snprintf(fmt, sizeof fmt, "%%%zus", size - 1);
    cr_assert_eq(fscanf(f, fmt, tok), 1, "the case file ends early");
}

static int64_t read_int(FILE *f)
{
    char tok[64];
    read_token(f, tok, sizeof tok);
    char *end;
    long long v = strtoll(tok, &end, 0);
    cr_assert(*end == '\0', "cannot read \"%s\" as an integer", tok);
    return v;
}

static double read_double(FILE *f)
{
    char tok[64];
    read_token(f, tok, sizeof tok);
    char *end;
    double v = strtod(tok, &end); // float.hex values: exact
    cr_assert(*end == '\0', "cannot read \"%s\" as a number", tok);
    return v;
}

static void expect_word(FILE *f, const char *word, const char *name)
{
    char tok[64];
    read_token(f, tok, sizeof tok);
    cr_assert_str_eq(tok, word, "case %s: expected \"%s\", got \"%s\"", name,
                     word, tok);
}

static case_file *load_cases(void)
{
    const char *path = tg_test_ref_path("multinomial_cases.txt");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    case_file *cf = calloc(1, sizeof *cf);
    cr_assert_not_null(cf);
    cf->declared = -1;
    char line[256];
    /* The header: '#' lines. */
    for (;;) {
        int c = fgetc(f);
        if (c != '#') {
            ungetc(c, f);
            break;
        }
        cr_assert_not_null(fgets(line, sizeof line, f));
        int n;
        if (sscanf(line, " %d cases", &n) == 1)
            cf->declared = n;
    }
    char tok[64];
    while (fscanf(f, "%63s", tok) == 1) {
        cr_assert_lt(cf->n, 128, "too many cases in %s", path);
        mcase *c = &cf->cases[cf->n++];
        cr_assert(strcmp(tok, "case") == 0 || strcmp(tok, "loop") == 0,
                  "expected a case, got \"%s\"", tok);
        c->loop = strcmp(tok, "loop") == 0;
        read_token(f, c->name, sizeof c->name);
        expect_word(f, "seed", c->name);
        c->seed = (uint64_t)read_int(f);
        expect_word(f, c->loop ? "table" : "probs", c->name);
        read_token(f, tok, sizeof tok);
        c->dtype = strcmp(tok, "float64") == 0 ? TG_FLOAT64 : TG_FLOAT32;
        if (c->loop) {
            snprintf(c->layout, sizeof c->layout, "contiguous");
            c->ndim = 2;
        } else {
            read_token(f, c->layout, sizeof c->layout);
            c->ndim = (int)read_int(f);
            cr_assert(c->ndim == 1 || c->ndim == 2);
        }
        for (int d = 0; d < c->ndim; d++)
            c->shape[d] = read_int(f);
        expect_word(f, "values", c->name);
        c->nvalues = read_int(f);
        c->values = malloc((size_t)c->nvalues * sizeof *c->values);
        cr_assert_not_null(c->values);
        for (int64_t i = 0; i < c->nvalues; i++)
            c->values[i] = read_double(f);
        if (c->loop) {
            expect_word(f, "names", c->name);
            c->names = read_int(f);
        } else {
            expect_word(f, "draw", c->name);
            c->num_samples = read_int(f);
            c->replacement = read_int(f) != 0;
        }
        expect_word(f, "expect", c->name);
        c->nexpect = read_int(f);
        c->expect = malloc((size_t)c->nexpect * sizeof *c->expect);
        cr_assert_not_null(c->expect);
        for (int64_t i = 0; i < c->nexpect; i++)
            c->expect[i] = read_int(f);
        if (!c->loop) {
            expect_word(f, "compare", c->name);
            c->compare = read_int(f);
        }
        expect_word(f, "after", c->name);
        c->nafter = (int)read_int(f);
        cr_assert(c->nafter >= 1 && c->nafter <= 8);
        for (int i = 0; i < c->nafter; i++)
            c->after[i] = (uint32_t)read_int(f);
        expect_word(f, "end", c->name);
    }
    fclose(f);
    return cf;
}

static void free_cases(case_file *cf)
{
    for (int i = 0; i < cf->n; i++) {
        free(cf->cases[i].values);
        free(cf->cases[i].expect);
    }
    free(cf);
}

static const mcase *find_case(const case_file *cf, const char *name)
{
    for (int i = 0; i < cf->n; i++)
        if (strcmp(cf->cases[i].name, name) == 0)
            return &cf->cases[i];
    cr_assert_fail("no case named %s", name);
    return NULL;
}

/* ------------------------------------------------------- running a case */

/* The probs of case c, laid out as the case says. New reference. */
static tg_tensor *case_probs(const mcase *c)
{
    tg_tensor *base;
    if (c->dtype == TG_FLOAT32) {
        float *v = malloc((size_t)c->nvalues * sizeof *v);
        cr_assert_not_null(v);
        for (int64_t i = 0; i < c->nvalues; i++)
            v[i] = (float)c->values[i]; // float32 values: exact
        base = tg_from_array(v, c->shape, c->ndim, TG_FLOAT32);
        free(v);
    } else {
        base = tg_from_array(c->values, c->shape, c->ndim, TG_FLOAT64);
    }
    cr_assert_not_null(base);
    tg_tensor *probs = base;
    if (strcmp(c->layout, "transpose") == 0)
        probs = tg_transpose(base, 0, 1);
    else if (strcmp(c->layout, "every_other") == 0)
        probs = tg_slice(base, 1, 0, c->shape[1], 2);
    else
        cr_assert_str_eq(c->layout, "contiguous");
    if (probs != base) {
        cr_assert_not_null(probs);
        cr_assert(!tg_is_contiguous(probs), "case %s: the view is contiguous",
                  c->name);
        tg_release(base);
    }
    return probs;
}

/* What one run of a case gave: the indices and the next rand numbers. */
typedef struct run {
    int64_t n;
    int64_t *index;    // (n,) in C order
    int64_t rows, cols; // the result's shape as (rows, cols)
    uint32_t after[8]; // float32 bits of tg_rand drawn next
} run;

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void read_after(tg_generator *g, const mcase *c, run *r)
{
    tg_tensor *next = tg_rand_gen(g, (int64_t[]){c->nafter}, 1, TG_FLOAT32);
    cr_assert_not_null(next);
    const float *v = tg_data_f32(next);
    for (int i = 0; i < c->nafter; i++)
        r->after[i] = f32_bits(v[i]);
    tg_release(next);
}

/* Runs a plain case: tg_multinomial on a fresh generator seeded as PyTorch
 * was, then tg_rand. */
static run run_case(const mcase *c)
{
    run r = {0};
    tg_tensor *probs = case_probs(c);
    tg_generator *g = tg_generator_new(c->seed);
    tg_tensor *out = tg_multinomial(probs, c->num_samples, c->replacement, g);
    cr_assert_not_null(out, "case %s: %s", c->name, tg_last_error());
    cr_assert_eq(out->dtype, TG_INT64);
    cr_assert_eq(out->ndim, probs->ndim);
    r.rows = out->ndim == 2 ? out->shape[0] : 1;
    r.cols = out->shape[out->ndim - 1];
    r.n = out->numel;
    r.index = malloc((size_t)r.n * sizeof *r.index);
    cr_assert_not_null(r.index);
    memcpy(r.index, tg_data_i64(out), (size_t)r.n * sizeof *r.index);
    read_after(g, c, &r);
    tg_release(out);
    tg_release(probs);
    tg_generator_free(g);
    return r;
}

/* Runs the makemore loop: each name starts at 0 and draws from the row of
 * the last index, as a (1, K) row, until it draws 0. */
static run run_loop(const mcase *c)
{
    run r = {0};
    tg_tensor *table = case_probs(c);
    tg_generator *g = tg_generator_new(c->seed);
    int64_t cap = c->nexpect + 64;
    r.index = malloc((size_t)cap * sizeof *r.index);
    cr_assert_not_null(r.index);
    for (int64_t name = 0; name < c->names; name++) {
        int64_t ix = 0;
        do {
            tg_tensor *row = tg_slice(table, 0, ix, ix + 1, 1); // (1, K)
            tg_tensor *out = tg_multinomial(row, 1, true, g);
            cr_assert_not_null(out, "%s", tg_last_error());
            ix = (int64_t)tg_item(out);
            tg_release(out);
            tg_release(row);
            cr_assert_lt(r.n, cap, "case %s: the names run on", c->name);
            r.index[r.n++] = ix;
        } while (ix != 0);
    }
    r.rows = 1;
    r.cols = r.n;
    read_after(g, c, &r);
    tg_release(table);
    tg_generator_free(g);
    return r;
}

/* The checker: true when run r is case c's answer; otherwise says where in
 * report. The first c->compare samples of each row must be PyTorch's; the
 * rest of a row (only when ties reach the samples) must be distinct indices
 * of zero weight, in any order. */
static bool check_run(const mcase *c, const run *r, char *report,
                      size_t size)
{
    if (r->n != c->nexpect) {
        snprintf(report, size, "case %s: %" PRId64 " samples, expected %"
                 PRId64, c->name, r->n, c->nexpect);
        return false;
    }
    int64_t compare = c->loop ? r->cols : c->compare;
    for (int64_t row = 0; row < r->rows; row++) {
        for (int64_t j = 0; j < r->cols; j++) {
            int64_t i = row * r->cols + j;
            if (j < compare && r->index[i] != c->expect[i]) {
                snprintf(report, size,
                         "case %s: row %" PRId64 " sample %" PRId64
                         " is %" PRId64 ", PyTorch gave %" PRId64,
                         c->name, row, j, r->index[i], c->expect[i]);
                return false;
            }
            if (j >= compare) { // a zero weight not drawn before in the row
                int64_t k = r->index[i];
                bool ok = c->ndim == 1 && k >= 0 && k < c->shape[0] &&
                          c->values[k] == 0.0;
                for (int64_t jj = 0; ok && jj < j; jj++)
                    ok = r->index[row * r->cols + jj] != k;
                if (!ok) {
                    snprintf(report, size,
                             "case %s: sample %" PRId64 " is %" PRId64
                             ", not a zero-weight category not drawn yet",
                             c->name, j, k);
                    return false;
                }
            }
        }
    }
    for (int i = 0; i < c->nafter; i++) {
        if (r->after[i] != c->after[i]) {
            snprintf(report, size,
                     "case %s: the generator state differs: rand number %d "
                     "after the call is 0x%08" PRIx32 ", PyTorch's 0x%08"
                     PRIx32,
                     c->name, i, r->after[i], c->after[i]);
            return false;
        }
    }
    return true;
}

static run run_any(const mcase *c)
{
    return c->loop ? run_loop(c) : run_case(c);
}

/* ---------------------------------------------------- the vectors, exact */

TG_TEST(multinomial_vectors, file_has_exactly_the_checked_cases)
{
    case_file *cf = load_cases();
    cr_assert_eq(cf->declared, cf->n, "the header says %d cases, the file "
                 "has %d", cf->declared, cf->n);
    cr_assert_eq(cf->n, EXPECTED_CASES, "%d cases, expected %d", cf->n,
                 EXPECTED_CASES);
    free_cases(cf);
}

TG_TEST(multinomial_vectors, every_case_matches_pytorch)
{
    case_file *cf = load_cases();
    int checked = 0;
    for (int i = 0; i < cf->n; i++) {
        const mcase *c = &cf->cases[i];
        run r = run_any(c);
        char report[512];
        bool ok = check_run(c, &r, report, sizeof report);
        free(r.index);
        cr_assert(ok, "%s", report);
        checked++;
    }
    cr_assert_eq(checked, EXPECTED_CASES);
    free_cases(cf);
}

/* A few cases by name, so that a failure points at the path at fault. */
static void expect_case(const char *name)
{
    case_file *cf = load_cases();
    const mcase *c = find_case(cf, name);
    run r = run_any(c);
    char report[512];
    bool ok = check_run(c, &r, report, sizeof report);
    free(r.index);
    free_cases(cf);
    cr_assert(ok, "%s", report);
}

TG_TEST(multinomial_vectors, one_sample_races_exponentials_float32)
{
    expect_case("w5_one");
}

TG_TEST(multinomial_vectors, one_sample_with_replacement_inverts_the_cdf)
{
    /* PyTorch 1.13 draws one double uniform here (two 32-bit draws), not
     * one exponential per category: the generator state after shows it. */
    expect_case("w5_one_replacement");
    expect_case("w5_f64_one_replacement");
}

TG_TEST(multinomial_vectors, without_replacement_takes_the_largest_keys)
{
    expect_case("rand27_permutation");
    expect_case("rand27_f64_five");
}

TG_TEST(multinomial_vectors, with_replacement_inverts_the_cdf)
{
    expect_case("rand27_1000_replacement");
    expect_case("rand27_f64_1000_replacement");
    expect_case("zero_first_replacement");
}

TG_TEST(multinomial_vectors, transposed_probs_draw_in_memory_order)
{
    expect_case("transposed_6x4_three");
    expect_case("transposed_6x4_f64_one");
}

TG_TEST(multinomial_vectors, strided_probs_draw_in_c_order)
{
    expect_case("every_other_3x10_two");
    expect_case("every_other_3x10_f64_one");
}

TG_TEST(multinomial_vectors, makemore_sampling_loop)
{
    expect_case("makemore_20_names");
    expect_case("softmax_row_1x27");
}

/* ------------------------------------------ the checker can fail, too */

TG_TEST(multinomial_vectors, checker_rejects_a_wrong_index)
{
    case_file *cf = load_cases();
    const mcase *c = find_case(cf, "w5_three");
    run r = run_case(c);
    char report[512];
    cr_assert(check_run(c, &r, report, sizeof report), "%s", report);
    r.index[1] = (r.index[1] + 1) % 5; // a wrong second sample
    cr_assert_not(check_run(c, &r, report, sizeof report));
    cr_assert(strstr(report, "sample 1") != NULL, "%s", report);
    free(r.index);
    free_cases(cf);
}

TG_TEST(multinomial_vectors, checker_rejects_a_wrong_generator_state)
{
    /* The right indices but one extra draw after them: the indices agree,
     * the rand numbers after do not. */
    case_file *cf = load_cases();
    const mcase *c = find_case(cf, "rand27_1000_replacement");
    tg_tensor *probs = case_probs(c);
    tg_generator *g = tg_generator_new(c->seed);
    tg_tensor *out = tg_multinomial(probs, c->num_samples, c->replacement, g);
    cr_assert_not_null(out);
    run r = {.n = out->numel, .rows = 1, .cols = out->numel};
    r.index = malloc((size_t)r.n * sizeof *r.index);
    memcpy(r.index, tg_data_i64(out), (size_t)r.n * sizeof *r.index);
    tg_tensor *extra = tg_rand_gen(g, (int64_t[]){1}, 1, TG_FLOAT32);
    read_after(g, c, &r);
    char report[512];
    cr_assert_not(check_run(c, &r, report, sizeof report));
    cr_assert(strstr(report, "generator state") != NULL, "%s", report);
    free(r.index);
    tg_release(extra);
    tg_release(out);
    tg_release(probs);
    tg_generator_free(g);
    free_cases(cf);
}

TG_TEST(multinomial_vectors, checker_rejects_a_positive_weight_in_the_tail)
{
    /* zeros_fill_the_end compares 2 samples; the rest must be zero-weight
     * categories, each once. */
    case_file *cf = load_cases();
    const mcase *c = find_case(cf, "zeros_fill_the_end");
    run r = run_case(c);
    char report[512];
    cr_assert(check_run(c, &r, report, sizeof report), "%s", report);
    int64_t saved = r.index[3];
    r.index[3] = r.index[0]; // a positive weight drawn twice
    cr_assert_not(check_run(c, &r, report, sizeof report));
    r.index[3] = r.index[2]; // a zero weight drawn twice
    cr_assert_not(check_run(c, &r, report, sizeof report));
    r.index[3] = saved;
    cr_assert(check_run(c, &r, report, sizeof report), "%s", report);
    free(r.index);
    free_cases(cf);
}

/* ------------------------------------------------------ the frequencies */

/* Over N independent draws the count of category k is Binomial(N, p_k),
 * mean N p_k and standard deviation sigma = sqrt(N p_k (1 - p_k)). A
 * correct sampler lands within 5 sigma of the mean with probability
 * 1 - 5.7e-7 per count (normal approximation, fine at N p_k >= 10^4), so
 * with a fixed seed this test does not flake; a sampler off by 1% of
 * p_k = 0.1 (a shift of 100 counts at N = 10^5, 1.05 sigma) would pass,
 * but any systematic error of a few percent of p (an off-by-one bucket,
 * unnormalised weights, a skipped category) is 5 sigma or more. */
static bool frequencies_ok(const int64_t *counts, const double *p, int K,
                           int64_t N, const char *what, char *report,
                           size_t size)
{
    for (int k = 0; k < K; k++) {
        double mean = (double)N * p[k];
        double sigma = sqrt((double)N * p[k] * (1.0 - p[k]));
        if (!(fabs((double)counts[k] - mean) <= 5.0 * sigma)) {
            snprintf(report, size,
                     "%s: category %d drawn %" PRId64 " times in %" PRId64
                     ", expected %.1f +- %.1f (5 sigma)",
                     what, k, counts[k], N, mean, 5.0 * sigma);
            return false;
        }
    }
    return true;
}

static void expect_frequencies(const int64_t *counts, const double *p, int K,
                               int64_t N, const char *what)
{
    char report[256];
    cr_assert(frequencies_ok(counts, p, K, N, what, report, sizeof report),
              "%s", report);
}

static const double W4[4] = {1.0, 2.0, 3.0, 4.0}; // unnormalised: p = w / 10

TG_TEST(multinomial_stats, with_replacement_frequencies)
{
    const int64_t N = 100000;
    tg_tensor *w = tg_from_array(W4, (int64_t[]){4}, 1, TG_FLOAT64);
    tg_generator *g = tg_generator_new(2024);
    tg_tensor *s = tg_multinomial(w, N, true, g);
    cr_assert_not_null(s);
    int64_t counts[4] = {0};
    const int64_t *idx = tg_data_i64(s);
    for (int64_t i = 0; i < N; i++)
        counts[idx[i]]++;
    double p[4] = {0.1, 0.2, 0.3, 0.4};
    expect_frequencies(counts, p, 4, N, "with replacement (inverse CDF)");
    tg_release(s);
    tg_release(w);
    tg_generator_free(g);
}

TG_TEST(multinomial_stats, exponential_race_frequencies)
{
    /* N rows of the same float32 weights, two samples each without
     * replacement: the first sample has P(k) = p_k; the second has
     * P(k) = sum over i != k of p_i p_k / (1 - p_i) (the first draw i
     * removed, the rest renormalised). */
    const int64_t N = 100000;
    tg_tensor *w1 = tg_from_array((float[]){1, 2, 3, 4}, (int64_t[]){1, 4},
                                  2, TG_FLOAT32);
    tg_tensor *w = tg_expand(w1, (int64_t[]){N, 4}, 2);
    tg_generator *g = tg_generator_new(77);
    tg_tensor *s = tg_multinomial(w, 2, false, g);
    cr_assert_not_null(s);
    int64_t first[4] = {0}, second[4] = {0};
    const int64_t *idx = tg_data_i64(s);
    for (int64_t i = 0; i < N; i++) {
        cr_assert_neq(idx[2 * i], idx[2 * i + 1], "row %" PRId64
                      " draws the same category twice", i);
        first[idx[2 * i]]++;
        second[idx[2 * i + 1]]++;
    }
    double p[4] = {0.1, 0.2, 0.3, 0.4}, p2[4] = {0};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 4; i++)
            if (i != k)
                p2[k] += p[i] * p[k] / (1.0 - p[i]);
    expect_frequencies(first, p, 4, N, "first sample without replacement");
    expect_frequencies(second, p2, 4, N,
                       "second sample without replacement");
    tg_release(s);
    tg_release(w);
    tg_release(w1);
    tg_generator_free(g);
}

TG_TEST(multinomial_stats, frequency_check_rejects_a_biased_sampler)
{
    /* The check fed wrong answers for p = (0.1, 0.2, 0.3, 0.4), N = 10^5:
     * a uniform sampler (25000 each), and the expected counts with 800
     * draws (2% of category 3's) moved to category 0, whose 5-sigma bound
     * is 474. The expected counts themselves pass. */
    double p[4] = {0.1, 0.2, 0.3, 0.4};
    char report[256];
    int64_t uniform[4] = {25000, 25000, 25000, 25000};
    cr_assert_not(frequencies_ok(uniform, p, 4, 100000, "uniform", report,
                                 sizeof report));
    int64_t shifted[4] = {10800, 20000, 30000, 39200};
    cr_assert_not(frequencies_ok(shifted, p, 4, 100000, "shifted", report,
                                 sizeof report));
    cr_assert(strstr(report, "category 0") != NULL, "%s", report);
    int64_t exact[4] = {10000, 20000, 30000, 40000};
    cr_assert(frequencies_ok(exact, p, 4, 100000, "exact", report,
                             sizeof report), "%s", report);
}

/* -------------------------------------------------------------- the rest */

TG_TEST(multinomial, default_generator_is_used_when_g_is_null)
{
    tg_tensor *w = tg_from_array(W4, (int64_t[]){4}, 1, TG_FLOAT64);
    tg_manual_seed(5);
    tg_tensor *a = tg_multinomial(w, 8, true, NULL);
    tg_generator *g = tg_generator_new(5);
    tg_tensor *b = tg_multinomial(w, 8, true, g);
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_assert_eq(memcmp(tg_data_i64(a), tg_data_i64(b),
                        8 * sizeof(int64_t)), 0);
    tg_release(a);
    tg_release(b);
    tg_release(w);
    tg_generator_free(g);
}

TG_TEST(multinomial, result_shapes)
{
    tg_tensor *w1 = tg_ones((int64_t[]){5}, 1, TG_FLOAT32);
    tg_tensor *w2 = tg_ones((int64_t[]){3, 5}, 2, TG_FLOAT32);
    tg_tensor *a = tg_multinomial(w1, 4, false, NULL);
    tg_tensor *b = tg_multinomial(w2, 7, true, NULL);
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_assert(a->ndim == 1 && a->shape[0] == 4 && a->dtype == TG_INT64);
    cr_assert(b->ndim == 2 && b->shape[0] == 3 && b->shape[1] == 7);
    /* Without replacement and K samples: a permutation. */
    tg_tensor *perm = tg_multinomial(w1, 5, false, NULL);
    bool seen[5] = {false};
    const int64_t *idx = tg_data_i64(perm);
    for (int i = 0; i < 5; i++) {
        cr_assert(idx[i] >= 0 && idx[i] < 5 && !seen[idx[i]]);
        seen[idx[i]] = true;
    }
    tg_release(perm);
    tg_release(a);
    tg_release(b);
    tg_release(w1);
    tg_release(w2);
}

TG_TEST(multinomial, no_rows_gives_an_empty_result_without_draws)
{
    /* As PyTorch: (0, K) probs give (0, num_samples) and draw nothing. */
    tg_tensor *w = tg_zeros((int64_t[]){0, 3}, 2, TG_FLOAT32);
    tg_generator *g = tg_generator_new(1), *h = tg_generator_new(1);
    tg_tensor *s = tg_multinomial(w, 2, true, g);
    cr_assert_not_null(s);
    cr_assert(s->ndim == 2 && s->shape[0] == 0 && s->shape[1] == 2);
    tg_tensor *x = tg_rand_gen(g, (int64_t[]){1}, 1, TG_FLOAT32);
    tg_tensor *y = tg_rand_gen(h, (int64_t[]){1}, 1, TG_FLOAT32);
    cr_assert_eq(tg_item(x), tg_item(y));
    tg_release(x);
    tg_release(y);
    tg_release(s);
    tg_release(w);
    tg_generator_free(g);
    tg_generator_free(h);
}

TG_TEST(multinomial, not_differentiable_and_probs_unchanged)
{
    tg_tensor *w = tg_from_array(W4, (int64_t[]){4}, 1, TG_FLOAT64);
    cr_assert_eq(tg_set_requires_grad(w, true), 0);
    tg_tensor *s = tg_multinomial(w, 3, false, NULL);
    cr_assert_not_null(s);
    cr_assert_not(s->requires_grad);
    cr_assert_null(s->grad_fn);
    const double *v = tg_data_f64(w);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(v[k], W4[k]);
    tg_release(s);
    tg_release(w);
}

TG_TEST(multinomial, a_failed_check_draws_nothing)
{
    tg_tensor *w = tg_from_array((double[]){1.0, -1.0}, (int64_t[]){2}, 1,
                                 TG_FLOAT64);
    tg_generator *g = tg_generator_new(3), *h = tg_generator_new(3);
    cr_assert_null(tg_multinomial(w, 1, false, g));
    tg_assert_error("tg_multinomial: probs[1] is -1");
    tg_tensor *x = tg_rand_gen(g, (int64_t[]){1}, 1, TG_FLOAT32);
    tg_tensor *y = tg_rand_gen(h, (int64_t[]){1}, 1, TG_FLOAT32);
    cr_assert_eq(tg_item(x), tg_item(y));
    tg_release(x);
    tg_release(y);
    tg_release(w);
    tg_generator_free(g);
    tg_generator_free(h);
}
