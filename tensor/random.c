/*
 * tensor/random.c - random numbers that match PyTorch's CPU generator bit
 * for bit: the MT19937 engine, rand / randn / randint and the in-place
 * uniform_ / normal_ fills.
 *
 * Same seed, same numbers: torch.manual_seed(0); torch.rand(6) and
 * tg_manual_seed(0); tg_rand(TG_SHAPE(6), TG_FLOAT32) agree in every bit.
 * That takes more than the same engine: PyTorch turns draws into floats in
 * particular ways (the low 24 bits for float32, a cached second normal
 * sample, a 16-wide Box-Muller for large tensors computed with the float32
 * polynomials of avx_mathfun.h), and each of those is reproduced below. The
 * rules are collected in SEMANTICS.md section 5; the polynomial steps in
 * shared/reference/x86-randn-polynomials.md.
 *
 * What this file is not: not a source of secure randomness (MT19937 is
 * predictable from 624 outputs), not a full distributions library (no
 * bernoulli, ...; multinomial sampling is in multinomial.c), and not
 * thread-safe on a shared generator.
 * The default generator is one static object per process with no lock;
 * a thread that draws numbers while another does must use its own
 * tg_generator.
 *
 * Elements are drawn in memory order, as PyTorch's TensorIterator does: the
 * dims are walked from the largest stride to the smallest, so filling a
 * transposed view gives the storage the same numbers as filling the
 * original. For a contiguous tensor that is plain C order.
 */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- engine */

/* MT19937 (Matsumoto and Nishimura, 1998): 624 words of state, twisted in
 * one pass every 624 outputs, each output tempered. The same engine as
 * std::mt19937 and PyTorch's at::mt19937, and (seeded its own way) as
 * Python's random module (nn/pyrandom.c). */
#define MT_M 397
#define MT_MATRIX_A 0x9908b0dfu
#define MT_UPPER_MASK 0x80000000u
#define MT_LOWER_MASK 0x7fffffffu

/* torch.default_generator's seed before any manual_seed (and the seed of a
 * fresh torch.Generator()); the engine keeps its low 32 bits. */
#define TG_DEFAULT_SEED UINT64_C(67280421310721)

struct tg_generator {
    tg_mt19937 mt;
    /* Box-Muller makes normals in pairs; the scalar path returns the cosine
     * one and keeps the sine one here for the next call (even for another
     * tensor), as PyTorch's next_double_normal_sample. */
    bool has_next_normal;
    double next_normal; // an N(0, 1) sample, before mean and std
};

void tg_mt_init(tg_mt19937 *mt, uint32_t seed)
{
    /* Knuth's multiplicative recurrence (TAOCP vol. 2, 3rd ed., p. 106):
     * state[i] = 1812433253 * (state[i-1] ^ (state[i-1] >> 30)) + i. */
    mt->state[0] = seed;
    for (uint32_t i = 1; i < TG_MT_N; i++) {
        uint32_t prev = mt->state[i - 1];
        mt->state[i] = 1812433253u * (prev ^ (prev >> 30)) + i;
    }
    mt->index = TG_MT_N;
}

static void mt_seed(tg_generator *g, uint64_t seed)
{
    tg_mt_init(&g->mt, (uint32_t)seed);
    g->has_next_normal = false;
    g->next_normal = 0;
}

/* Regenerates all 624 words: word i mixes the top bit of word i with the
 * low 31 bits of word i+1, then is xor-ed with word i+397. */
static void mt_twist(tg_mt19937 *mt)
{
    uint32_t *s = mt->state;
    for (int i = 0; i < TG_MT_N; i++) {
        uint32_t y = (s[i] & MT_UPPER_MASK) |
                     (s[(i + 1) % TG_MT_N] & MT_LOWER_MASK);
        s[i] = s[(i + MT_M) % TG_MT_N] ^ (y >> 1) ^
               ((y & 1u) ? MT_MATRIX_A : 0u);
    }
    mt->index = 0;
}

uint32_t tg_mt_next32(tg_mt19937 *mt)
{
    if (mt->index >= TG_MT_N)
        mt_twist(mt);
    uint32_t y = mt->state[mt->index++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

/* One 32-bit draw. */
static uint32_t random32(tg_generator *g)
{
    return tg_mt_next32(&g->mt);
}

/* Two draws, the first in the high half (PyTorch's random64). */
static uint64_t random64(tg_generator *g)
{
    uint64_t hi = random32(g);
    uint64_t lo = random32(g);
    return (hi << 32) | lo;
}

/* ------------------------------------------------------------- uniforms */

/* U[0, 1) in float32: the LOW 24 bits of one draw times 2^-24 (24 = the
 * float32 significand), so every value is a multiple of 2^-24. */
static float uniform_f32(tg_generator *g)
{
    return (float)(random32(g) & 0xffffffu) * (1.0f / 16777216.0f);
}

/* U[0, 1) in float64: the low 53 bits of random64 times 2^-53. */
static double uniform_f64(tg_generator *g)
{
    const uint64_t mask = (UINT64_C(1) << 53) - 1;
    return (double)(random64(g) & mask) * (1.0 / 9007199254740992.0);
}

/* ------------------------------------------------- normal, scalar path */

static const double TG_PI = 3.14159265358979323846;

/* N(0, 1) by Box-Muller in double, one sample per call:
 *   u1, u2 ~ U[0, 1)                   (float64 uniforms, 4 draws)
 *   r      = sqrt(-2 log(1 - u2))      (log1p(-u2): 1 - u2 is in (0, 1])
 *   theta  = 2 pi u1
 * returns r cos(theta) and caches r sin(theta) for the next call. */
static double normal_scalar(tg_generator *g)
{
    if (g->has_next_normal) {
        g->has_next_normal = false;
        return g->next_normal;
    }
    double u1 = uniform_f64(g);
    double u2 = uniform_f64(g);
    double r = sqrt(-2.0 * log1p(-u2));
    double theta = 2.0 * TG_PI * u1;
    g->next_normal = r * sin(theta);
    g->has_next_normal = true;
    return r * cos(theta);
}

/* -------------------------------------- float32 log and sincos (Cephes) */

/* PyTorch's x86 build computes the 16-wide Box-Muller with log256_ps and
 * sincos256_ps of avx_mathfun.h (Cephes polynomials in float32), compiled
 * with fused multiply-adds. These are the same steps on one lane, with the
 * fusions written out as fmaf (the build adds none of its own:
 * -ffp-contract=off). libm's logf/sinf/cosf are more accurate, and that
 * is exactly why they would not match: they differ by a few ulp in about a
 * third of the values. Constants are written as the header writes them, a
 * double literal rounded to float. */

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t float_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* log(x) = log(m) + e log(2) with x = m 2^e, m in [sqrt(1/2), sqrt(2)):
 * log(1 + t) ~ t - t^2/2 + t^3 P(t) with a degree-8 P, and log(2) split as
 * 0.693359375 - 2.12194440e-4 so that e * 0.693359375 is exact. */
static float log_ps(float x)
{
    if (!(x > 0.0f))
        return NAN;
    if (x < FLT_MIN) // subnormals become the smallest normal, as avx_mathfun
        x = FLT_MIN;
    uint32_t bits = float_to_bits(x);
    float e = (float)((int32_t)(bits >> 23) - 127) + 1.0f;
    /* Keep the mantissa, set the exponent of 0.5: m in [0.5, 1). */
    float m = bits_to_float((bits & ~0x7f800000u) | 0x3f000000u);
    if (m < (float)0.707106781186547524) {
        e = e - 1.0f;
        x = (m - 1.0f) + m; // 2m - 1, exact
    } else {
        x = m - 1.0f;
    }
    float z = x * x;
    static const double p[9] = {
        7.0376836292E-2,  -1.1514610310E-1, 1.1676998740E-1,
        -1.2420140846E-1, 1.4249322787E-1,  -1.6668057665E-1,
        2.0000714765E-1,  -2.4999993993E-1, 3.3333331174E-1,
    };
    float y = (float)p[0];
    for (int i = 1; i < 9; i++)
        y = fmaf(y, x, (float)p[i]);
    y = y * x;
    y = fmaf(y, z, e * (float)-2.12194440e-4);
    y = fmaf(-z, 0.5f, y);
    x = x + y;
    x = fmaf(e, (float)0.693359375, x);
    return x;
}

/* sin and cos of x: reduce by multiples j of pi/4 (j even, so the rest x'
 * is in [-pi/4, pi/4]), with pi/4 split in three parts (Cody-Waite) for an
 * exact-ish subtraction; evaluate the sine and cosine polynomials of x';
 * j mod 8 picks which polynomial gives sin and cos, and their signs. */
static void sincos_ps(float x, float *s, float *c)
{
    bool sign_sin = signbit(x) != 0;
    x = fabsf(x);
    int32_t j = (int32_t)(x * (float)1.27323954473516); // x * 4/pi, truncated
    j = (j + 1) & ~1;
    float y = (float)j;
    bool swap_sin = (j & 4) != 0;
    bool poly_is_sin = (j & 2) == 0;
    bool sign_cos = ((j - 2) & 4) == 0;
    sign_sin = sign_sin != swap_sin;

    x = fmaf(y, (float)-0.78515625, x);
    x = fmaf(y, (float)-2.4187564849853515625e-4, x);
    x = fmaf(y, (float)-3.77489497744594108e-8, x);
    float z = x * x;

    /* cos x' ~ 1 - z/2 + z^2 (c0 z^2 + c1 z + c2) */
    float yc = fmaf((float)2.443315711809948e-5, z,
                    (float)-1.388731625493765e-3);
    yc = fmaf(yc, z, (float)4.166664568298827e-2);
    yc = yc * z;
    yc = fmaf(yc, z, -(0.5f * z));
    yc = yc + 1.0f;

    /* sin x' ~ x' + x' z (s0 z^2 + s1 z + s2) */
    float ys = fmaf((float)-1.9515295891e-4, z, (float)8.3321608736e-3);
    ys = fmaf(ys, z, (float)-1.6666654611e-1);
    ys = ys * z;
    ys = fmaf(ys, x, x);

    float sv = poly_is_sin ? ys : yc;
    float cv = poly_is_sin ? yc : ys;
    *s = sign_sin ? -sv : sv;
    *c = sign_cos ? -cv : cv;
}

/* ------------------------------------------- normal, 16-wide fill path */

/* One block of 16 uniforms d[0..16) becomes 16 normals, pairing j with
 * j + 8:
 *   u1 = 1 - d[j]                     (in (0, 1], safe for log)
 *   u2 = d[j + 8]
 *   radius = sqrt(-2 log u1),  theta = 2 pi u2
 *   d[j] = radius cos(theta) std + mean,  d[j+8] = radius sin(theta) std + mean
 * float32 uses the polynomials above and a float32 2 pi (6.2831855);
 * float64 uses libm in double. Both apply std and mean with one fused
 * multiply-add, as PyTorch's x86 build does (checked bit for bit). */
static void normal_block_f32(float *d, float mean, float std)
{
    const float two_pi = (float)(2.0 * TG_PI);
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - d[j];
        float u2 = d[j + 8];
        float radius = sqrtf(-2.0f * log_ps(u1));
        float theta = two_pi * u2;
        float s, c;
        sincos_ps(theta, &s, &c);
        d[j] = fmaf(radius * c, std, mean);
        d[j + 8] = fmaf(radius * s, std, mean);
    }
}

static void normal_block_f64(double *d, double mean, double std)
{
    for (int j = 0; j < 8; j++) {
        double u1 = 1.0 - d[j];
        double u2 = d[j + 8];
        double radius = sqrt(-2.0 * log(u1));
        double theta = 2.0 * TG_PI * u2;
        d[j] = fma(radius * cos(theta), std, mean);
        d[j + 8] = fma(radius * sin(theta), std, mean);
    }
}

/* n >= 16 contiguous elements: draw all n uniforms first, transform whole
 * blocks of 16; when n % 16 != 0, draw 16 fresh uniforms into the LAST 16
 * slots and transform that block (overwriting up to 15 finished values).
 * The cached scalar-path normal is neither used nor cleared. */
static void normal_fill_f32(float *data, int64_t n, float mean, float std,
                            tg_generator *g)
{
    for (int64_t i = 0; i < n; i++)
        data[i] = uniform_f32(g);
    for (int64_t i = 0; i + 16 <= n; i += 16)
        normal_block_f32(data + i, mean, std);
    if (n % 16 != 0) {
        float *tail = data + n - 16;
        for (int i = 0; i < 16; i++)
            tail[i] = uniform_f32(g);
        normal_block_f32(tail, mean, std);
    }
}

static void normal_fill_f64(double *data, int64_t n, double mean,
                            double std, tg_generator *g)
{
    for (int64_t i = 0; i < n; i++)
        data[i] = uniform_f64(g);
    for (int64_t i = 0; i + 16 <= n; i += 16)
        normal_block_f64(data + i, mean, std);
    if (n % 16 != 0) {
        double *tail = data + n - 16;
        for (int i = 0; i < 16; i++)
            tail[i] = uniform_f64(g);
        normal_block_f64(tail, mean, std);
    }
}

/* ------------------------------------- per-element fills, memory order */

typedef enum draw_kind { DRAW_UNIFORM, DRAW_NORMAL, DRAW_RANDINT } draw_kind;

/* What to write into each element; the iterator hands us runs in memory
 * order. */
typedef struct draw_plan {
    tg_generator *g;
    draw_kind kind;
    tg_dtype dtype;
    double a, b;    // uniform: from, to; normal: mean, std
    int64_t low;    // randint: values low + (draw % range)
    uint64_t range; // randint: high - low (> 0)
} draw_plan;

static void draw_one(const draw_plan *p, char *out)
{
    switch (p->kind) {
    case DRAW_UNIFORM:
        /* from + u (to - from). float32 rounds the bounds first and fuses
         * the multiply-add, as the shipped PyTorch build does (un-fused
         * differs by one ulp in about half of nn.Linear's weights). */
        if (p->dtype == TG_FLOAT32) {
            float from = (float)p->a, to = (float)p->b;
            *(float *)out = fmaf(uniform_f32(p->g), to - from, from);
        } else {
            *(double *)out = uniform_f64(p->g) * (p->b - p->a) + p->a;
        }
        break;
    case DRAW_NORMAL: {
        double v = fma(normal_scalar(p->g), p->b, p->a); // z std + mean, fused as PyTorch
        if (p->dtype == TG_FLOAT32)
            *(float *)out = (float)v;
        else
            *(double *)out = v;
        break;
    }
    case DRAW_RANDINT:
        /* Unsigned arithmetic: low + the draw may pass INT64_MAX only on
         * the way to a value below high. */
        *(int64_t *)out =
            (int64_t)((uint64_t)p->low + tg_random_below(p->g, p->range));
        break;
    }
}

static void draw_loop(char **data, const int64_t *strides, int64_t n,
                      void *ctx)
{
    const draw_plan *p = ctx;
    int64_t step = strides[0] * (int64_t)tg_dtype_size(p->dtype);
    char *out = data[0];
    for (int64_t i = 0; i < n; i++, out += step)
        draw_one(p, out);
}

/* Fills every element of x in memory order: the same layout with its dims
 * stably sorted by decreasing stride (size-1 dims do not matter), walked in
 * C order. */
static void draw_all(tg_tensor *x, draw_plan *p)
{
    tg_tensor sorted = *x; // a layout only: never retained or released
    for (int i = 1; i < sorted.ndim; i++) {
        int64_t size = sorted.shape[i], stride = sorted.strides[i];
        int j = i;
        for (; j > 0 && sorted.strides[j - 1] < stride; j--) {
            sorted.shape[j] = sorted.shape[j - 1];
            sorted.strides[j] = sorted.strides[j - 1];
        }
        sorted.shape[j] = size;
        sorted.strides[j] = stride;
    }
    tg_iter it;
    tg_tensor *ops[1] = {&sorted};
    tg_iter_init(&it, sorted.shape, sorted.ndim, 1, ops);
    tg_iter_run(&it, draw_loop, p);
}

/* ------------------------------------------------------------ generators */

static tg_generator default_generator;
static bool default_generator_ready;

tg_generator *tg_default_generator(void)
{
    /* Seeded on first use. Not thread-safe, like every use of the default
     * generator: give each thread its own tg_generator. */
    if (!default_generator_ready) {
        mt_seed(&default_generator, TG_DEFAULT_SEED);
        default_generator_ready = true;
    }
    return &default_generator;
}

static tg_generator *generator_or_default(tg_generator *g)
{
    return g ? g : tg_default_generator();
}

/* One 32-bit draw when the range fits in it, else random64; the modulo
 * bias (at most range / 2^32 or range / 2^64) is PyTorch's too. */
uint64_t tg_random_below(tg_generator *g, uint64_t range)
{
    g = generator_or_default(g);
    uint64_t v = range >= (UINT64_C(1) << 32) ? random64(g) : random32(g);
    return v % range;
}

/* One U[0, 1) double, 53 bits of random64, as torch's
 * uniform_real_distribution<double> draws it. */
double tg_random_uniform_f64(tg_generator *g)
{
    return uniform_f64(generator_or_default(g));
}

tg_generator *tg_generator_new(uint64_t seed)
{
    tg_generator *g = tg_malloc(sizeof *g);
    if (!g) {
        tg_error("tg_generator_new",
                 "out of memory allocating a generator (%zu bytes)",
                 sizeof *g);
        return NULL;
    }
    mt_seed(g, seed);
    return g;
}

void tg_generator_free(tg_generator *g)
{
    if (!g)
        return;
    if (g == &default_generator) {
        tg_error("tg_generator_free",
                 "cannot free the default generator\n"
                 "  rule: tg_default_generator() returns a borrowed "
                 "generator that lives as long as the process\n"
                 "  hint: free only generators made by tg_generator_new");
        return;
    }
    free(g);
}

void tg_generator_seed(tg_generator *g, uint64_t seed)
{
    if (!g) // as tg_generator_free(NULL): nothing to seed
        return;
    mt_seed(g, seed); // also drops the cached normal sample
}

void tg_manual_seed(uint64_t seed)
{
    tg_generator_seed(tg_default_generator(), seed);
}

/* ----------------------------------------------------------- validation */

static bool check_float_tensor(const char *fn, const tg_tensor *x,
                               const char *what)
{
    if (tg_dtype_is_float(x->dtype))
        return true;
    char s[TG_SHAPE_STR_MAX];
    tg_error(fn,
             "cannot fill a %s tensor of shape %s with %s\n"
             "  rule: the tensor must be float32 or float64 (as in "
             "PyTorch)\n"
             "  hint: use tg_randint for random integers, or fill a float "
             "tensor and convert it",
             tg_dtype_name(x->dtype), tg_shape_str(x, s), what);
    return false;
}

/* For tg_rand / tg_randn: a new tensor of a float dtype, or NULL. */
static tg_tensor *alloc_float(const char *fn, const int64_t *shape, int ndim,
                              tg_dtype dtype, const char *what)
{
    if (tg_shape_check(fn, shape, ndim) < 0)
        return NULL;
    if (!tg_dtype_is_float(dtype)) {
        char s[TG_SHAPE_STR_MAX];
        if (dtype == TG_INT64)
            tg_error(fn,
                     "cannot make an int64 tensor of shape %s of %s\n"
                     "  rule: dtype must be TG_FLOAT32 or TG_FLOAT64 (as "
                     "in PyTorch)\n"
                     "  hint: tg_randint(low, high, shape, ndim) gives "
                     "random integers",
                     tg_shape_format(shape, ndim, s), what);
        else
            tg_error(fn,
                     "unknown dtype %d\n"
                     "  rule: dtype must be TG_FLOAT32 or TG_FLOAT64",
                     (int)dtype);
        return NULL;
    }
    return tg_alloc(shape, ndim, dtype);
}

/* ------------------------------------------------------------- uniform_ */

/* x[...] ~ U[from, to), as Tensor.uniform_(from, to). */
int tg_uniform_(tg_tensor *x, double from, double to, tg_generator *g)
{
    const char *fn = "tg_uniform_";
    if (!x || !tg_write_all_allowed(fn, x))
        return -1;
    if (!check_float_tensor(fn, x, "uniform samples"))
        return -1;
    /* The bounds (and their difference, which scales every sample) must be
     * finite numbers in the tensor's dtype. */
    double max = x->dtype == TG_FLOAT32 ? (double)FLT_MAX : DBL_MAX;
    if (!(fabs(from) <= max) || !(fabs(to) <= max)) {
        tg_error(fn,
                 "cannot sample U[%g, %g) into a %s tensor\n"
                 "  rule: from and to must be finite and within %s's "
                 "range (|value| <= %g)",
                 from, to, tg_dtype_name(x->dtype), tg_dtype_name(x->dtype),
                 max);
        return -1;
    }
    if (from > to) {
        tg_error(fn,
                 "cannot sample U[%g, %g): the range is reversed\n"
                 "  rule: from must be <= to, but %g > %g\n"
                 "  hint: swap them: tg_uniform_(x, %g, %g, g)",
                 from, to, from, to, to, from);
        return -1;
    }
    if (!(to - from <= max)) {
        tg_error(fn,
                 "cannot sample U[%g, %g) into a %s tensor\n"
                 "  rule: to - from must be at most %g, but it is %g",
                 from, to, tg_dtype_name(x->dtype), max, to - from);
        return -1;
    }
    draw_plan p = {generator_or_default(g), DRAW_UNIFORM, x->dtype, from, to,
                   0, 0};
    draw_all(x, &p);
    x->storage->version++;
    return 0;
}

/* -------------------------------------------------------------- normal_ */

/* x[...] ~ N(mean, std^2), as Tensor.normal_(mean, std). Two paths, as
 * PyTorch: 16 or more contiguous elements take the 16-wide fill; fewer, or
 * a non-contiguous x, take the scalar path with the cached sample. The two
 * give different numbers for the same seed. */
int tg_normal_(tg_tensor *x, double mean, double std, tg_generator *g)
{
    const char *fn = "tg_normal_";
    if (!x || !tg_write_all_allowed(fn, x))
        return -1;
    if (!check_float_tensor(fn, x, "normal samples"))
        return -1;
    if (!isfinite(mean) || !isfinite(std)) {
        tg_error(fn,
                 "cannot sample N(mean=%g, std=%g)\n"
                 "  rule: mean and std must be finite numbers",
                 mean, std);
        return -1;
    }
    if (std < 0) {
        tg_error(fn,
                 "cannot sample N(mean=%g, std=%g): std is negative\n"
                 "  rule: std must be >= 0, but it is %g\n"
                 "  hint: std is a standard deviation, not a variance; "
                 "did you mean std=%g?",
                 mean, std, std, -std);
        return -1;
    }
    g = generator_or_default(g);
    if (x->numel >= 16 && tg_is_contiguous(x)) {
        /* float32 takes mean and std rounded to float32, as PyTorch. */
        if (x->dtype == TG_FLOAT32)
            normal_fill_f32((float *)tg_base_ptr(x), x->numel, (float)mean,
                            (float)std, g);
        else
            normal_fill_f64((double *)tg_base_ptr(x), x->numel, mean, std,
                            g);
    } else {
        draw_plan p = {g, DRAW_NORMAL, x->dtype, mean, std, 0, 0};
        draw_all(x, &p);
    }
    x->storage->version++;
    return 0;
}

/* ------------------------------------------------- rand, randn, randint */

/* The three draws below report errors under the name of the public
 * function called (fn), so tg_rand and tg_rand_gen each name themselves. */

/* rand = empty + uniform_(0, 1): u in [0, 1). New reference. */
static tg_tensor *rand_named(const char *fn, tg_generator *g,
                             const int64_t *shape, int ndim, tg_dtype dtype)
{
    tg_tensor *t = alloc_float(fn, shape, ndim, dtype, "uniform samples");
    if (t && tg_uniform_(t, 0.0, 1.0, g) < 0) {
        tg_release(t);
        return NULL;
    }
    return t;
}

/* randn = empty + normal_(0, 1). New reference. */
static tg_tensor *randn_named(const char *fn, tg_generator *g,
                              const int64_t *shape, int ndim, tg_dtype dtype)
{
    tg_tensor *t = alloc_float(fn, shape, ndim, dtype, "normal samples");
    if (t && tg_normal_(t, 0.0, 1.0, g) < 0) {
        tg_release(t);
        return NULL;
    }
    return t;
}

/* randint: low + (draw % (high - low)), int64 values in [low, high). New
 * reference. */
static tg_tensor *randint_named(const char *fn, tg_generator *g, int64_t low,
                                int64_t high, const int64_t *shape, int ndim)
{
    if (tg_shape_check(fn, shape, ndim) < 0)
        return NULL;
    if (low >= high) {
        tg_error(fn,
                 "cannot draw integers from the empty range [%lld, %lld)\n"
                 "  rule: low must be < high, but %lld >= %lld\n"
                 "  hint: high is exclusive: high = low + 1 gives low "
                 "every time",
                 (long long)low, (long long)high, (long long)low,
                 (long long)high);
        return NULL;
    }
    tg_tensor *t = tg_alloc(shape, ndim, TG_INT64);
    if (!t)
        return NULL;
    draw_plan p = {generator_or_default(g), DRAW_RANDINT, TG_INT64, 0, 0,
                   low, (uint64_t)high - (uint64_t)low};
    draw_all(t, &p);
    return t;
}

tg_tensor *tg_rand_gen(tg_generator *g, const int64_t *shape, int ndim,
                       tg_dtype dtype)
{
    return rand_named("tg_rand_gen", g, shape, ndim, dtype);
}

tg_tensor *tg_randn_gen(tg_generator *g, const int64_t *shape, int ndim,
                        tg_dtype dtype)
{
    return randn_named("tg_randn_gen", g, shape, ndim, dtype);
}

tg_tensor *tg_randint_gen(tg_generator *g, int64_t low, int64_t high,
                          const int64_t *shape, int ndim)
{
    return randint_named("tg_randint_gen", g, low, high, shape, ndim);
}

tg_tensor *tg_rand(const int64_t *shape, int ndim, tg_dtype dtype)
{
    return rand_named("tg_rand", NULL, shape, ndim, dtype);
}

tg_tensor *tg_randn(const int64_t *shape, int ndim, tg_dtype dtype)
{
    return randn_named("tg_randn", NULL, shape, ndim, dtype);
}

tg_tensor *tg_randint(int64_t low, int64_t high, const int64_t *shape,
                      int ndim)
{
    return randint_named("tg_randint", NULL, low, high, shape, ndim);
}
