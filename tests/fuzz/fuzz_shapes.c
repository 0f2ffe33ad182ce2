/*
 * tests/fuzz/fuzz_shapes.c - fuzz target for the shape machinery: the input
 * is a small program of tensor operations over four slots, run against the
 * library and, alongside, against a plain model of every tensor (a shadow)
 * that this file computes itself from the documented rules.
 *
 * Operations: create (zeros, ones, arange, from_array; 0-4 dims of sizes
 * 0-5, now and then a huge size; float32, float64, int64; optionally
 * requires_grad), reshape, view, permute, transpose, squeeze,
 * squeeze_all, unsqueeze, expand, broadcast_to, narrow, slice, select,
 * contiguous, clone, to_dtype, add, sub, mul (broadcasting, type
 * promotion), sum and mean over dims with keepdim, matmul, detach,
 * no_grad scopes, and copying or emptying a slot. Empty slots are passed
 * as NULL arguments.
 *
 * Input format: a flags byte (bit 0: end with a backward from the sum of
 * slot (flags >> 1) & 3), then operations: an opcode byte (enum opcode,
 * modulo OP_COUNT) and, for all but create, an operand byte (bits 0-1 the
 * destination slot, 2-3 the first argument's, 4-5 the second's), then the
 * op's own arguments (dims, shapes, indices: see each case). At most
 * MAX_OPS operations; a missing byte reads as 0.
 *
 * The shadow of a tensor is its shape, dtype, requires_grad and values in
 * C order (doubles rounded to float32 where the dtype is float32; int64
 * exactly, wrapping as the library and PyTorch do), plus a bound on the
 * magnitudes involved that gives each value its rounding tolerance (an
 * infinite bound marks a value that is not predicted). Every op is
 * recorded with index maps, so the shadow also runs its own backward.
 *
 * Invariants, after every operation:
 * - a NULL argument gives NULL and no new error message;
 * - the call succeeds exactly when the documented rule says it should
 *   (NumPy broadcasting, reshape's element count and -1, a view exists
 *   exactly when the elements in C order are an affine function of the
 *   new index, dims in range, permutations, narrow/select ranges, Python
 *   slice clamping, matmul's inner and batch dims, mean of int64 refused,
 *   at most TG_MAX_DIMS dims and 2^59 elements counting zero sizes as
 *   1); a failure's message starts with the function's name and
 *   states a rule;
 * - on success: the shape, dtype, requires_grad and leaf status
 *   predicted; a layout that stays inside the storage; tg_is_contiguous
 *   agreeing with the strides; views sharing the input's storage and
 *   copies not; every element (read through the strides here, not through
 *   the library) equal to the shadow within its tolerance.
 * At the end: every slot still holds its values (no op wrote into its
 * input), the gradients of every leaf equal the shadow's backward (and a
 * leaf the loss does not reach has none), and once everything is
 * released no tensor is alive and the tape is empty.
 */
#include "fuzz_common.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>

#define NSLOTS 4
#define MAX_OPS 48
#define MAX_NUMEL 512 // larger results are not computed (kept fast)
#define MAX_SHADOWS (MAX_OPS + 8)
#define MAX_NUMEL_BOUND (INT64_C(1) << 59) // TG_MAX_NUMEL

/* ------------------------------------------------------------ the input */

typedef struct reader {
    const uint8_t *p, *end;
} reader;

static unsigned next(reader *r)
{
    return r->p < r->end ? *r->p++ : 0;
}

/* A dim argument for a tensor whose valid dims are [-n, n): mostly in
 * [-n-1, n], now and then INT_MIN or INT_MAX. */
static int dim_arg(reader *r, int n)
{
    unsigned b = next(r);
    if (b == 255)
        return INT_MIN;
    if (b == 254)
        return INT_MAX;
    return (int)(b % (unsigned)(2 * n + 2)) - n - 1;
}

/* A size for reshape, view, expand: mostly in [-1, 6], now and then
 * another negative number or a huge one. */
static int64_t size_arg(reader *r)
{
    unsigned b = next(r);
    switch (b) {
    case 250: return -2;
    case 251: return INT64_MIN;
    case 252: return INT64_MAX;
    case 253: return INT64_C(1) << 40;
    case 254: return INT64_C(1) << 58;
    case 255: return INT64_C(1) << 62;
    }
    return (int64_t)(b % 8) - 1;
}

/* An index or length for narrow, slice, select. */
static int64_t index_arg(reader *r, int64_t size)
{
    unsigned b = next(r);
    switch (b) {
    case 251: return INT64_MIN;
    case 252: return INT64_MAX;
    case 253: return INT64_MIN + 1;
    case 254: return INT64_MAX - 1;
    case 255: return -size - 1;
    }
    return (int64_t)(b % (unsigned)(2 * (size < 6 ? size : 6) + 5)) -
           (size < 6 ? size : 6) - 2;
}

/* A shape argument: ndim mostly 0-8, now and then -1 or 9. */
static int shape_arg(reader *r, int64_t *shape)
{
    unsigned b = next(r);
    int ndim = b == 255 ? -1 : b == 254 ? TG_MAX_DIMS + 1 : (int)(b % 6);
    if (b >= 128 && b < 254)
        ndim = (int)(b % 9);
    for (int d = 0; d < ndim && d < TG_MAX_DIMS; d++)
        shape[d] = size_arg(r);
    return ndim;
}

/* ----------------------------------------------------------- the shadow */

typedef enum kind { K_LEAF, K_GATHER, K_BINARY, K_REDUCE, K_MATMUL } kind;
typedef enum binop { B_ADD, B_SUB, B_MUL } binop;

typedef struct shadow {
    int ndim;
    int64_t shape[TG_MAX_DIMS];
    int64_t numel;
    tg_dtype dtype;
    double *v;     // (numel,) float values, already rounded to dtype
    int64_t *iv;   // (numel,) int64 values
    double *mag;   // (numel,) magnitude bound; INFINITY: not predicted
    bool requires_grad;
    kind k;
    int in[2];     // shadow ids of the inputs
    /* K_GATHER: out[i] = in0[map0[i]]. K_BINARY: out[i] = in0[map0[i]] op
     * in1[map1[i]]. K_REDUCE: in0's element j goes into out[map0[j]],
     * times scale. K_MATMUL: map0 (nb, m, k) and map1 (nb, k, n) index
     * the operands, out is (nb, m, n) in C order. */
    int64_t *map0, *map1;
    binop op;
    double scale;
    int64_t nb, m, kk, n;
    /* The relative precision of the values and of the gradient: the
     * largest epsilon of the float dtypes they went through (an error
     * made in float32 stays float32-sized after a conversion to
     * float64). */
    double feps, geps;
    double *grad, *gmag; // (numel,) filled by the shadow backward
    tg_tensor *lib;      // leaves that require grad: the library's tensor
} shadow;

static shadow shadows[MAX_SHADOWS];
static bool trace; // TG_FUZZ_TRACE set: print each operation to stderr

static void trace_shape(const char *what, const int64_t *shape, int ndim)
{
    if (!trace)
        return;
    fprintf(stderr, "  %s (", what);
    for (int d = 0; d < ndim && d < TG_MAX_DIMS; d++)
        fprintf(stderr, "%s%lld", d ? ", " : "", (long long)shape[d]);
    fprintf(stderr, ")%s\n", ndim < 0 || ndim > TG_MAX_DIMS ? " (bad ndim)" : "");
}
static int nshadows;

typedef struct slot {
    tg_tensor *t;
    int sid; // its shadow, when t is not NULL
} slot;

/* The element count of a shape known to be valid (a zero size first, so
 * that huge sizes next to it cannot overflow the product). */
static int64_t numel_of(const int64_t *shape, int ndim)
{
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0)
            return 0;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

/* Whether shape describes a tensor the library must accept: sizes >= 0
 * and, counting zero sizes as 1 (so that strides stay in range too), at
 * most 2^59 elements (tg_shape_check's bound). *numel gets the real
 * count. */
static bool shape_ok(const int64_t *shape, int ndim, int64_t *numel)
{
    if (ndim < 0 || ndim > TG_MAX_DIMS)
        return false;
    int64_t bound = 1, n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return false;
        int64_t s = shape[d] > 0 ? shape[d] : 1;
        if (bound > MAX_NUMEL_BOUND / s)
            return false;
        bound *= s;
        n = shape[d] == 0 || n == 0 ? 0 : n * shape[d];
    }
    *numel = n;
    return true;
}

static double eps_of(tg_dtype t);

static int new_shadow(const int64_t *shape, int ndim, tg_dtype dtype)
{
    FUZZ_CHECK(nshadows < MAX_SHADOWS, "too many shadows");
    shadow *s = &shadows[nshadows];
    memset(s, 0, sizeof *s);
    s->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        s->shape[d] = shape[d];
    s->numel = numel_of(shape, ndim);
    s->dtype = dtype;
    size_t n = (size_t)(s->numel > 0 ? s->numel : 1);
    s->v = calloc(n, sizeof *s->v);
    s->iv = calloc(n, sizeof *s->iv);
    s->mag = calloc(n, sizeof *s->mag);
    FUZZ_CHECK(s->v && s->iv && s->mag, "out of memory");
    s->in[0] = s->in[1] = -1;
    s->feps = eps_of(dtype);
    return nshadows++;
}

static void free_shadows(void)
{
    for (int i = 0; i < nshadows; i++) {
        shadow *s = &shadows[i];
        free(s->v);
        free(s->iv);
        free(s->mag);
        free(s->map0);
        free(s->map1);
        free(s->grad);
        free(s->gmag);
        tg_release(s->lib);
    }
    nshadows = 0;
}

static bool is_float(tg_dtype t)
{
    return t != TG_INT64;
}

static double eps_of(tg_dtype t)
{
    return t == TG_FLOAT32 ? FLT_EPSILON : t == TG_FLOAT64 ? DBL_EPSILON : 0;
}

/* Precision of a float result computed from inputs of precision in. */
static double merge_eps(double own, double in)
{
    return own == 0 ? 0 : own > in ? own : in; // int64 results are exact
}

/* A magnitude bound, or INFINITY when a value of that size is not
 * predicted in dtype t: near overflow (where rounding decides between a
 * number and inf) or near underflow (where subnormals lose the relative
 * precision the tolerances assume). Everything computed from it is then
 * not predicted either. */
static double settle(tg_dtype t, double mag)
{
    if (t == TG_INT64)
        return mag;
    double huge = t == TG_FLOAT32 ? FLT_MAX / 4 : DBL_MAX / 4;
    double tiny = (t == TG_FLOAT32 ? FLT_MIN : DBL_MIN) * 0x1p30;
    return mag > huge || (mag != 0 && mag < tiny) ? INFINITY : mag;
}

static double round_to(tg_dtype t, double x)
{
    return t == TG_FLOAT32 ? (double)(float)x : x;
}

/* Float to int64 as the library documents it: toward zero, INT64_MIN for
 * NaN, infinities and values out of range. */
static int64_t to_int64(double v)
{
    const double two63 = 9223372036854775808.0;
    if (!(v >= -two63 && v < two63))
        return INT64_MIN;
    return (int64_t)v;
}

/* Element i of s converted to dtype t, with its magnitude bound; the
 * conversion rounds as a cast does. */
static void value_as(const shadow *s, int64_t i, tg_dtype t, double *v,
                     int64_t *iv, double *mag)
{
    if (s->dtype == TG_INT64) {
        if (t == TG_INT64) {
            *iv = s->iv[i];
        } else {
            *v = t == TG_FLOAT32 ? (double)(float)s->iv[i]
                                 : (double)s->iv[i];
        }
        *mag = isinf(s->mag[i]) ? INFINITY : settle(t, fabs((double)s->iv[i]));
        return;
    }
    if (t != TG_INT64) {
        *v = round_to(t, s->v[i]);
        *mag = settle(t, s->mag[i]);
        return;
    }
    /* float -> int64: predicted only when the tolerance cannot move the
     * value across an integer. */
    double x = s->v[i];
    double tol = 64 * s->feps * s->mag[i];
    *iv = to_int64(x);
    bool sure = isfinite(tol) && to_int64(x - tol) == *iv &&
                to_int64(x + tol) == *iv;
    *mag = sure ? fabs((double)*iv) : INFINITY;
}

/* Multi-index of flat position i in shape. */
static void unflatten(int64_t i, const int64_t *shape, int ndim,
                      int64_t *idx)
{
    for (int d = ndim - 1; d >= 0; d--) {
        idx[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
}

static void c_strides(const int64_t *shape, int ndim, int64_t *st)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

/* map[i] = base + sum_k idx_k(i) * step[k] over the C-order positions i
 * of shape. */
static int64_t *affine_map(const int64_t *shape, int ndim, int64_t base,
                           const int64_t *step)
{
    int64_t n = numel_of(shape, ndim);
    int64_t *map = calloc((size_t)(n > 0 ? n : 1), sizeof *map);
    FUZZ_CHECK(map, "out of memory");
    int64_t idx[TG_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        unflatten(i, shape, ndim, idx);
        int64_t f = base;
        for (int d = 0; d < ndim; d++)
            f += idx[d] * step[d];
        map[i] = f;
    }
    return map;
}

/* The shadow of a gather: out[i] = src[map[i]] converted to dtype. Takes
 * map. */
static int gather(int src, const int64_t *shape, int ndim, tg_dtype dtype,
                  int64_t *map, bool grad_on)
{
    int o = new_shadow(shape, ndim, dtype);
    shadow *s = &shadows[o], *x = &shadows[src];
    for (int64_t i = 0; i < s->numel; i++) {
        FUZZ_CHECK(map[i] >= 0 && map[i] < x->numel, "shadow map out of range");
        value_as(x, map[i], dtype, &s->v[i], &s->iv[i], &s->mag[i]);
    }
    s->k = K_GATHER;
    s->in[0] = src;
    s->map0 = map;
    s->feps = merge_eps(s->feps, x->feps);
    s->requires_grad = grad_on && x->requires_grad && is_float(dtype);
    return o;
}

static int gather_identity(int src, const int64_t *shape, int ndim,
                           tg_dtype dtype, bool grad_on)
{
    int64_t st[TG_MAX_DIMS];
    c_strides(shape, ndim, st);
    return gather(src, shape, ndim, dtype, affine_map(shape, ndim, 0, st),
                  grad_on);
}

/* PyTorch's result_type for two tensors (ops.h): a 0-d operand decides
 * only when its category (int < float) is higher. */
static tg_dtype promote(tg_dtype a, tg_dtype b)
{
    if (a == b)
        return a;
    if (is_float(a) != is_float(b))
        return is_float(a) ? a : b;
    return TG_FLOAT64;
}

static tg_dtype result_type(const shadow *a, const shadow *b)
{
    bool a0 = a->ndim == 0, b0 = b->ndim == 0;
    if (a0 == b0)
        return promote(a->dtype, b->dtype);
    const shadow *dimmed = a0 ? b : a, *zero = a0 ? a : b;
    if (is_float(zero->dtype) && !is_float(dimmed->dtype))
        return zero->dtype;
    return dimmed->dtype;
}

/* NumPy broadcasting of two shapes. */
static bool broadcast(const shadow *a, const shadow *b, int64_t *out,
                      int *nout)
{
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = 0; i < n; i++) {
        int64_t sa = i < a->ndim ? a->shape[a->ndim - 1 - i] : 1;
        int64_t sb = i < b->ndim ? b->shape[b->ndim - 1 - i] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return false;
        out[n - 1 - i] = sa == 1 ? sb : sa;
    }
    *nout = n;
    return true;
}

/* Steps that read x broadcast to shape (aligned from the right). */
static void broadcast_steps(const shadow *x, int ndim, int64_t *step)
{
    int64_t st[TG_MAX_DIMS];
    c_strides(x->shape, x->ndim, st);
    for (int k = 0; k < ndim; k++) {
        int d = k - (ndim - x->ndim);
        step[k] = d >= 0 && x->shape[d] != 1 ? st[d] : 0;
    }
}

static int binary(binop op, int a, int b, const int64_t *shape, int ndim,
                  bool grad_on)
{
    shadow *x = &shadows[a], *y = &shadows[b];
    tg_dtype t = result_type(x, y);
    int64_t sa[TG_MAX_DIMS], sb[TG_MAX_DIMS];
    broadcast_steps(x, ndim, sa);
    broadcast_steps(y, ndim, sb);
    int o = new_shadow(shape, ndim, t);
    shadow *s = &shadows[o];
    x = &shadows[a];
    y = &shadows[b];
    s->map0 = affine_map(shape, ndim, 0, sa);
    s->map1 = affine_map(shape, ndim, 0, sb);
    for (int64_t i = 0; i < s->numel; i++) {
        double va = 0, vb = 0, ma, mb;
        int64_t ia = 0, ib = 0;
        value_as(x, s->map0[i], t, &va, &ia, &ma);
        value_as(y, s->map1[i], t, &vb, &ib, &mb);
        if (t == TG_INT64) {
            uint64_t ua = (uint64_t)ia, ub = (uint64_t)ib;
            s->iv[i] = (int64_t)(op == B_ADD   ? ua + ub
                                 : op == B_SUB ? ua - ub
                                               : ua * ub);
            s->mag[i] = isinf(ma) || isinf(mb) ? INFINITY
                                               : fabs((double)s->iv[i]);
        } else {
            s->v[i] = round_to(t, op == B_ADD   ? va + vb
                                  : op == B_SUB ? va - vb
                                                : va * vb);
            s->mag[i] = settle(t, op == B_MUL ? ma * mb : ma + mb);
        }
    }
    s->k = K_BINARY;
    s->feps = merge_eps(s->feps, x->feps > y->feps ? x->feps : y->feps);
    s->op = op;
    s->in[0] = a;
    s->in[1] = b;
    s->requires_grad = grad_on && is_float(t) &&
                       (x->requires_grad || y->requires_grad);
    return o;
}

/* Sum (mean: scale 1/n) of x over the dims marked in reduced. */
static int reduce(int src, const bool *reduced, bool keepdim, bool mean,
                  bool grad_on)
{
    shadow *x = &shadows[src];
    int64_t shape[TG_MAX_DIMS];
    int ndim = 0;
    int64_t n = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (reduced[d]) {
            n *= x->shape[d];
            if (keepdim)
                shape[ndim++] = 1;
        } else {
            shape[ndim++] = x->shape[d];
        }
    }
    int o = new_shadow(shape, ndim, x->dtype);
    shadow *s = &shadows[o];
    x = &shadows[src];
    s->map0 = calloc((size_t)(x->numel > 0 ? x->numel : 1), sizeof *s->map0);
    FUZZ_CHECK(s->map0, "out of memory");
    int64_t idx[TG_MAX_DIMS];
    for (int64_t j = 0; j < x->numel; j++) {
        unflatten(j, x->shape, x->ndim, idx);
        int64_t r = 0;
        for (int d = 0; d < x->ndim; d++)
            if (!reduced[d])
                r = r * x->shape[d] + idx[d];
        s->map0[j] = r;
    }
    double *sum = calloc((size_t)(s->numel > 0 ? s->numel : 1), sizeof *sum);
    FUZZ_CHECK(sum, "out of memory");
    for (int64_t j = 0; j < x->numel; j++) {
        int64_t r = s->map0[j];
        if (x->dtype == TG_INT64) {
            s->iv[r] = (int64_t)((uint64_t)s->iv[r] + (uint64_t)x->iv[j]);
            if (isinf(x->mag[j]))
                sum[r] = INFINITY;
        } else {
            s->v[r] += x->v[j]; // in double, rounded once below
            sum[r] += x->mag[j];
        }
    }
    s->scale = mean ? 1.0 / (double)n : 1.0;
    for (int64_t r = 0; r < s->numel; r++) {
        if (x->dtype == TG_INT64) {
            s->mag[r] = isinf(sum[r]) ? INFINITY : fabs((double)s->iv[r]);
        } else if (mean) {
            s->v[r] = round_to(x->dtype, s->v[r] / (double)n); // 0/0: NaN
            s->mag[r] = settle(x->dtype, n ? sum[r] / (double)n : 0);
        } else {
            s->v[r] = round_to(x->dtype, s->v[r]);
            s->mag[r] = settle(x->dtype, sum[r]);
        }
    }
    free(sum);
    s->k = K_REDUCE;
    s->feps = merge_eps(s->feps, x->feps);
    s->in[0] = src;
    s->requires_grad = grad_on && x->requires_grad;
    return o;
}

/* torch.matmul's shapes; false when the operands do not fit. */
typedef struct mm_plan {
    int nbatch;
    int64_t batch[TG_MAX_DIMS];
    int64_t nb, m, k, n;
    int64_t out[TG_MAX_DIMS];
    int nout;
} mm_plan;

static bool matmul_plan(const shadow *a, const shadow *b, mm_plan *p)
{
    memset(p, 0, sizeof *p);
    if (a->ndim == 0 || b->ndim == 0)
        return false;
    int64_t ka = a->shape[a->ndim - 1];
    int64_t kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    if (ka != kb)
        return false;
    p->m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
    p->k = ka;
    p->n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    int na = a->ndim > 2 ? a->ndim - 2 : 0, nb = b->ndim > 2 ? b->ndim - 2 : 0;
    p->nbatch = na > nb ? na : nb;
    p->nb = 1;
    for (int i = 0; i < p->nbatch; i++) {
        int64_t da = i < na ? a->shape[na - 1 - i] : 1;
        int64_t db = i < nb ? b->shape[nb - 1 - i] : 1;
        if (da != db && da != 1 && db != 1)
            return false;
        p->batch[p->nbatch - 1 - i] = da == 1 ? db : da;
    }
    for (int i = 0; i < p->nbatch; i++) {
        p->out[p->nout++] = p->batch[i];
        if (__builtin_mul_overflow(p->nb, p->batch[i], &p->nb))
            p->nb = INT64_MAX; // only for the size limit below
    }
    if (a->ndim >= 2)
        p->out[p->nout++] = p->m;
    if (b->ndim >= 2)
        p->out[p->nout++] = p->n;
    return true;
}

/* Flat index into x (a matmul operand) of batch position bi and matrix
 * position (r, c), its 1-D promotion and batch broadcasting applied. */
static int64_t mm_index(const shadow *x, const mm_plan *p, int64_t bi,
                        int64_t r, int64_t c, bool is_a)
{
    int64_t st[TG_MAX_DIMS];
    c_strides(x->shape, x->ndim, st);
    if (x->ndim == 1) // a: (1, k), so c indexes; b: (k, 1), so r does
        return is_a ? c : r;
    int64_t f = r * st[x->ndim - 2] + c * st[x->ndim - 1];
    int64_t bidx[TG_MAX_DIMS];
    unflatten(bi, p->batch, p->nbatch, bidx);
    int nx = x->ndim - 2;
    for (int i = 0; i < nx; i++) {
        int bd = p->nbatch - nx + i;
        if (x->shape[i] != 1)
            f += bidx[bd] * st[i];
    }
    return f;
}

static int matmul(int a, int b, const mm_plan *p, bool grad_on)
{
    shadow *x = &shadows[a], *y = &shadows[b];
    tg_dtype t = result_type(x, y);
    int o = new_shadow(p->out, p->nout, t);
    shadow *s = &shadows[o];
    x = &shadows[a];
    y = &shadows[b];
    size_t na = (size_t)(p->nb * p->m * p->k), nb = (size_t)(p->nb * p->k * p->n);
    s->map0 = calloc(na ? na : 1, sizeof *s->map0);
    s->map1 = calloc(nb ? nb : 1, sizeof *s->map1);
    FUZZ_CHECK(s->map0 && s->map1, "out of memory");
    for (int64_t bi = 0; bi < p->nb; bi++) {
        for (int64_t i = 0; i < p->m; i++)
            for (int64_t q = 0; q < p->k; q++)
                s->map0[(bi * p->m + i) * p->k + q] =
                    mm_index(x, p, bi, i, q, true);
        for (int64_t q = 0; q < p->k; q++)
            for (int64_t j = 0; j < p->n; j++)
                s->map1[(bi * p->k + q) * p->n + j] =
                    mm_index(y, p, bi, q, j, false);
    }
    for (int64_t bi = 0; bi < p->nb; bi++)
        for (int64_t i = 0; i < p->m; i++)
            for (int64_t j = 0; j < p->n; j++) {
                double acc = 0, mag = 0;
                uint64_t iacc = 0;
                for (int64_t q = 0; q < p->k; q++) {
                    double va = 0, vb = 0, ma, mb;
                    int64_t ia = 0, ib = 0;
                    value_as(x, s->map0[(bi * p->m + i) * p->k + q], t, &va,
                             &ia, &ma);
                    value_as(y, s->map1[(bi * p->k + q) * p->n + j], t, &vb,
                             &ib, &mb);
                    /* The library sums float32 products in float32, in
                     * q order from 0 (autograd/ops/gemm.c): the same
                     * roundings here, so the value is exact again and
                     * the tolerance stays what it is for other ops. */
                    acc = t == TG_FLOAT32
                              ? round_to(t, acc + round_to(t, va * vb))
                              : acc + va * vb;
                    iacc += (uint64_t)ia * (uint64_t)ib;
                    mag += ma * mb;
                }
                int64_t f = (bi * p->m + i) * p->n + j;
                if (t == TG_INT64) {
                    s->iv[f] = (int64_t)iacc;
                    s->mag[f] = isinf(mag) || isnan(mag)
                                    ? INFINITY
                                    : fabs((double)s->iv[f]);
                } else {
                    s->v[f] = round_to(t, acc);
                    s->mag[f] = settle(t, mag);
                }
            }
    s->k = K_MATMUL;
    s->feps = merge_eps(s->feps, x->feps > y->feps ? x->feps : y->feps);
    s->in[0] = a;
    s->in[1] = b;
    s->nb = p->nb;
    s->m = p->m;
    s->kk = p->k;
    s->n = p->n;
    s->requires_grad = grad_on && is_float(t) &&
                       (x->requires_grad || y->requires_grad);
    return o;
}

/* ------------------------------------------------- the library's tensor */

/* The storage position of element i (C order) of t. */
static int64_t position(const tg_tensor *t, int64_t i)
{
    int64_t idx[TG_MAX_DIMS];
    unflatten(i, t->shape, t->ndim, idx);
    int64_t pos = t->offset;
    for (int d = 0; d < t->ndim; d++)
        pos += idx[d] * t->strides[d];
    return pos;
}

static double read_f(const tg_tensor *t, int64_t i)
{
    int64_t pos = position(t, i);
    if (t->dtype == TG_FLOAT32)
        return ((const float *)t->storage->data)[pos];
    if (t->dtype == TG_FLOAT64)
        return ((const double *)t->storage->data)[pos];
    return (double)((const int64_t *)t->storage->data)[pos];
}

static int64_t read_i(const tg_tensor *t, int64_t i)
{
    return ((const int64_t *)t->storage->data)[position(t, i)];
}

/* Contiguity as PyTorch defines it: empty tensors are contiguous, and
 * size-1 dims do not count. */
static bool my_contiguous(const tg_tensor *t)
{
    if (t->numel == 0)
        return true;
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] == 1)
            continue;
        if (t->strides[d] != expected)
            return false;
        expected *= t->shape[d];
    }
    return true;
}

/* The layout addresses only elements of the storage. */
static void check_layout(const tg_tensor *t, const char *what)
{
    FUZZ_CHECK(t->ndim >= 0 && t->ndim <= TG_MAX_DIMS, "%s: ndim %d", what,
               t->ndim);
    int64_t numel = 1;
    bool zero = false;
    for (int d = 0; d < t->ndim; d++) {
        FUZZ_CHECK(t->shape[d] >= 0, "%s: negative size", what);
        if (t->shape[d] == 0)
            zero = true;
        else if (!zero)
            FUZZ_CHECK(!__builtin_mul_overflow(numel, t->shape[d], &numel),
                       "%s: element count overflows", what);
    }
    if (zero)
        numel = 0;
    FUZZ_CHECK(t->numel == numel, "%s: numel %lld, shape gives %lld", what,
               (long long)t->numel, (long long)numel);
    FUZZ_CHECK(tg_is_contiguous(t) == my_contiguous(t),
               "%s: tg_is_contiguous says %d for these strides", what,
               (int)tg_is_contiguous(t));
    if (numel == 0)
        return;
    int64_t lo = t->offset, hi = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        int64_t span;
        FUZZ_CHECK(!__builtin_mul_overflow(t->shape[d] - 1, t->strides[d],
                                           &span),
                   "%s: stride %lld overflows", what,
                   (long long)t->strides[d]);
        if (span < 0)
            lo += span;
        else
            hi += span;
    }
    size_t itemsize = tg_dtype_size(t->dtype);
    FUZZ_CHECK(lo >= 0 && (uint64_t)hi < t->storage->nbytes / itemsize,
               "%s: the layout reaches [%lld, %lld] of a storage of %zu "
               "elements",
               what, (long long)lo, (long long)hi,
               t->storage->nbytes / itemsize);
}

/* |got - want| <= factor * eps * mag, give or take underflow; anything
 * goes when mag is infinite (not predicted) or near overflow. */
static bool close_enough(double got, double want, double mag, tg_dtype t,
                         double eps, double factor)
{
    double tiny = t == TG_FLOAT32 ? FLT_MIN : DBL_MIN;
    double huge = t == TG_FLOAT32 ? FLT_MAX / 4 : DBL_MAX / 4;
    if (!(mag <= huge)) // not predicted, or near overflow
        return true;
    if (isnan(want))
        return isnan(got);
    return fabs(got - want) <= factor * eps * mag + 64 * tiny;
}

/* Every element of t against shadow s. */
static void check_values(const tg_tensor *t, const shadow *s,
                         const char *what)
{
    for (int64_t i = 0; i < s->numel; i++) {
        if (s->dtype == TG_INT64) {
            int64_t got = read_i(t, i);
            FUZZ_CHECK(isinf(s->mag[i]) || got == s->iv[i],
                       "%s: element %lld is %lld, expected %lld", what,
                       (long long)i, (long long)got, (long long)s->iv[i]);
        } else {
            double got = read_f(t, i);
            FUZZ_CHECK(close_enough(got, s->v[i], s->mag[i], s->dtype,
                                    s->feps, 64),
                       "%s: element %lld is %.17g, expected %.17g (bound "
                       "%g)",
                       what, (long long)i, got, s->v[i], s->mag[i]);
        }
    }
}

/* Everything about a result: shape, dtype, autograd state, layout,
 * values. */
static void check_result(const tg_tensor *t, const shadow *s,
                         const char *what)
{
    FUZZ_CHECK(t->ndim == s->ndim, "%s: %d dims, expected %d", what, t->ndim,
               s->ndim);
    for (int d = 0; d < s->ndim; d++)
        FUZZ_CHECK(t->shape[d] == s->shape[d],
                   "%s: size %lld at dim %d, expected %lld", what,
                   (long long)t->shape[d], d, (long long)s->shape[d]);
    FUZZ_CHECK(t->dtype == s->dtype, "%s: dtype %s, expected %s", what,
               tg_dtype_name(t->dtype), tg_dtype_name(s->dtype));
    FUZZ_CHECK(t->requires_grad == s->requires_grad,
               "%s: requires_grad %d, expected %d", what,
               (int)t->requires_grad, (int)s->requires_grad);
    bool leaf = !s->requires_grad || s->k == K_LEAF;
    FUZZ_CHECK(tg_is_leaf(t) == leaf && (t->grad_fn == NULL) == leaf,
               "%s: is_leaf %d, expected %d", what, (int)tg_is_leaf(t),
               (int)leaf);
    check_layout(t, what);
    check_values(t, s, what);
}

/* ------------------------------------------------------------ the run */

typedef struct run {
    slot slots[NSLOTS];
    int no_grad_depth;
    reader in;
} run;

static bool grad_on(const run *r)
{
    return r->no_grad_depth == 0;
}

/* After a call with a NULL tensor argument: NULL and no new message. */
static void expect_null_silent(tg_tensor *out, const char *fn)
{
    FUZZ_CHECK(out == NULL, "%s(NULL, ...) returned a tensor", fn);
    FUZZ_CHECK(tg_last_error()[0] == '\0',
               "%s(NULL, ...) reported an error; it must fail silently", fn);
}

/* After a call the rules refuse: NULL and a message naming fn, with a
 * rule. */
static void expect_error(tg_tensor *out, const char *fn)
{
    FUZZ_CHECK(out == NULL, "%s succeeded where the rules say it must fail",
               fn);
    const char *msg = tg_last_error();
    size_t n = strlen(fn);
    FUZZ_CHECK(strncmp(msg, fn, n) == 0 && strncmp(msg + n, ": ", 2) == 0,
               "%s's error message does not start with \"%s: \"", fn, fn);
    FUZZ_CHECK(strstr(msg, "\n  rule: ") != NULL,
               "%s's error message states no rule", fn);
}

static void put(run *r, int dst, tg_tensor *t, int sid)
{
    tg_release(r->slots[dst].t);
    r->slots[dst].t = t;
    r->slots[dst].sid = sid;
}

/* A call the rules accept: out must be a tensor matching shadow sid. */
static void expect_ok(run *r, int dst, tg_tensor *out, int sid,
                      const char *fn)
{
    FUZZ_CHECK(out != NULL, "%s failed where the rules say it must work",
               fn);
    check_result(out, &shadows[sid], fn);
    put(r, dst, out, sid);
}

/* Whether the elements of x, in C order, sit at storage positions that
 * are an affine function of the index in shape: then (and only then) a
 * view with that shape exists. */
static bool viewable(const tg_tensor *x, const int64_t *shape, int ndim)
{
    if (x->numel == 0)
        return true;
    int64_t base = position(x, 0), step[TG_MAX_DIMS], st[TG_MAX_DIMS];
    c_strides(shape, ndim, st);
    for (int k = 0; k < ndim; k++)
        step[k] = shape[k] > 1 ? position(x, st[k]) - base : 0;
    int64_t idx[TG_MAX_DIMS];
    for (int64_t i = 0; i < x->numel; i++) {
        unflatten(i, shape, ndim, idx);
        int64_t p = base;
        for (int k = 0; k < ndim; k++)
            p += idx[k] * step[k];
        if (p != position(x, i))
            return false;
    }
    return true;
}

/* reshape's rule for the target shape: at most one -1, other sizes >= 0,
 * the same element count (-1 inferred, not when the others multiply to
 * 0). Writes the resolved shape. */
static bool reshape_rule(int64_t numel, const int64_t *shape, int ndim,
                         int64_t *out)
{
    if (ndim < 0 || ndim > TG_MAX_DIMS)
        return false;
    int infer = -1;
    int64_t known = 1;
    bool zero = false, huge = false;
    for (int d = 0; d < ndim; d++) {
        out[d] = shape[d];
        if (shape[d] == -1) {
            if (infer >= 0)
                return false;
            infer = d;
        } else if (shape[d] < 0) {
            return false;
        } else if (shape[d] == 0) {
            zero = true;
        } else if (__builtin_mul_overflow(known, shape[d], &known)) {
            huge = true;
        }
    }
    if (infer >= 0) {
        if (zero)
            return false;
        if (huge) {
            if (numel != 0)
                return false;
            out[infer] = 0;
        } else {
            if (numel % known)
                return false;
            out[infer] = numel / known;
        }
    } else if (zero ? numel != 0 : huge || known != numel) {
        return false;
    }
    int64_t n;
    return shape_ok(out, ndim, &n);
}

static void create_op(run *r)
{
    unsigned c = next(&r->in);
    int kind = (int)(c % 4);
    tg_dtype dtype = (tg_dtype)(((c >> 2) & 3) % 3);
    bool want_grad = (c >> 4) & 1, big = (c >> 5) & 1;
    int dst = (int)(next(&r->in) % NSLOTS);
    int ndim = (int)(next(&r->in) % 5);
    int64_t shape[TG_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        unsigned b = next(&r->in);
        shape[d] = !big || b < 250 ? (int64_t)(b % 6)
                   : b == 250      ? INT64_C(1) << 31
                   : b == 251      ? INT64_C(1) << 40
                   : b == 252      ? INT64_MAX
                   : b == 253      ? -3
                   : b == 254      ? INT64_C(1) << 58
                                   : INT64_C(1) << 62;
    }
    int64_t numel = 0;
    bool ok = shape_ok(shape, ndim, &numel);
    if (trace)
        fprintf(stderr, "  create kind %d dtype %d into slot %d\n", kind,
                (int)dtype, dst);
    trace_shape("shape", shape, ndim);
    if (ok && numel > MAX_NUMEL)
        return;
    const char *fn = kind == 0   ? "tg_zeros"
                     : kind == 1 ? "tg_ones"
                     : kind == 2 ? "tg_reshape"
                                 : "tg_from_array";
    int sid = ok ? new_shadow(shape, ndim, dtype) : -1;
    shadow *s = ok ? &shadows[sid] : NULL;
    tg_tensor *t = NULL;
    if (kind == 0) {
        t = tg_zeros(shape, ndim, dtype);
    } else if (kind == 1) {
        t = tg_ones(shape, ndim, dtype);
        for (int64_t i = 0; s && i < s->numel; i++)
            s->v[i] = s->iv[i] = 1;
    } else if (kind == 2) {
        int start = (int)(int8_t)next(&r->in);
        /* arange has numel elements only when the shape is valid; else
         * any length will do for reshape to refuse. */
        int64_t n = ok ? numel : 3;
        tg_tensor *a = tg_arange(start, (double)start + (double)n, 1, dtype);
        FUZZ_CHECK(a != NULL, "tg_arange(%d, %lld) failed", start,
                   (long long)(start + n));
        t = tg_reshape(a, shape, ndim);
        tg_release(a);
        for (int64_t i = 0; s && i < s->numel; i++)
            s->v[i] = s->iv[i] = start + i;
    } else {
        union {
            float f[MAX_NUMEL];
            double d[MAX_NUMEL];
            int64_t i[MAX_NUMEL];
        } buf;
        for (int64_t i = 0; ok && i < numel; i++) {
            int8_t b = (int8_t)next(&r->in);
            buf.f[i] = (float)b / 4;
        }
        /* Widen in place from the top, so nothing is overwritten early. */
        for (int64_t i = ok ? numel - 1 : -1; i >= 0 && dtype != TG_FLOAT32;
             i--) {
            double v = buf.f[i];
            if (dtype == TG_FLOAT64)
                buf.d[i] = v;
            else
                buf.i[i] = (int64_t)(v * 4);
        }
        for (int64_t i = 0; s && i < s->numel; i++) {
            s->v[i] = dtype == TG_FLOAT32   ? (double)buf.f[i]
                      : dtype == TG_FLOAT64 ? buf.d[i]
                                            : 0;
            s->iv[i] = dtype == TG_INT64 ? buf.i[i] : 0;
        }
        t = tg_from_array(&buf, shape, ndim, dtype);
    }
    if (!ok) {
        expect_error(t, fn);
        return;
    }
    for (int64_t i = 0; i < s->numel; i++)
        s->mag[i] = dtype == TG_INT64 ? fabs((double)s->iv[i]) : fabs(s->v[i]);
    s->k = K_LEAF;
    FUZZ_CHECK(t != NULL, "%s failed for a valid shape", fn);
    if (want_grad) {
        tg_clear_error();
        int rc = tg_set_requires_grad(t, true);
        if (dtype == TG_INT64) {
            FUZZ_CHECK(rc == -1 && strncmp(tg_last_error(),
                                           "tg_set_requires_grad: ", 22) == 0,
                       "an int64 tensor was allowed to require grad");
        } else {
            FUZZ_CHECK(rc == 0, "a new float leaf cannot require grad");
            s->requires_grad = true;
            s->lib = tg_retain(t);
        }
    }
    expect_ok(r, dst, t, sid, fn);
}

typedef enum opcode {
    OP_CREATE, OP_RESHAPE, OP_VIEW, OP_PERMUTE, OP_TRANSPOSE, OP_SQUEEZE,
    OP_SQUEEZE_ALL, OP_UNSQUEEZE, OP_EXPAND, OP_BROADCAST_TO, OP_NARROW,
    OP_SLICE, OP_SELECT, OP_CONTIGUOUS, OP_CLONE, OP_TO_DTYPE, OP_ADD,
    OP_SUB, OP_MUL, OP_SUM, OP_MEAN, OP_MATMUL, OP_DETACH, OP_NO_GRAD,
    OP_COPY_SLOT, OP_RELEASE_SLOT, OP_COUNT
} opcode;

static const char *const op_fn[OP_COUNT] = {
    [OP_RESHAPE] = "tg_reshape", [OP_VIEW] = "tg_view",
    [OP_PERMUTE] = "tg_permute", [OP_TRANSPOSE] = "tg_transpose",
    [OP_SQUEEZE] = "tg_squeeze", [OP_SQUEEZE_ALL] = "tg_squeeze_all",
    [OP_UNSQUEEZE] = "tg_unsqueeze", [OP_EXPAND] = "tg_expand",
    [OP_BROADCAST_TO] = "tg_broadcast_to", [OP_NARROW] = "tg_narrow",
    [OP_SLICE] = "tg_slice", [OP_SELECT] = "tg_select",
    [OP_CONTIGUOUS] = "tg_contiguous", [OP_CLONE] = "tg_clone",
    [OP_TO_DTYPE] = "tg_to_dtype", [OP_ADD] = "tg_add", [OP_SUB] = "tg_sub",
    [OP_MUL] = "tg_mul", [OP_SUM] = "tg_sum", [OP_MEAN] = "tg_mean",
    [OP_MATMUL] = "tg_matmul", [OP_DETACH] = "tg_detach",
};

/* Normalises dim for a tensor of ndim dims ([-n, n) with n = max(ndim,
 * 1)); -1 when out of range. */
static int norm_dim(int dim, int ndim)
{
    int n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n)
        return -1;
    return dim < 0 ? dim + n : dim;
}

/* The ops on one tensor whose result is a view: computes the shadow and
 * calls the library. Returns false when the rules refuse the call. */
static void unary_op(run *r, opcode op, int dst, int src)
{
    const char *fn = op_fn[op];
    tg_tensor *x = r->slots[src].t;
    const shadow *xs = x ? &shadows[r->slots[src].sid] : NULL;
    int xn = xs ? xs->ndim : 0;
    int dn = xn > 0 ? xn : 1; // dims a 0-d tensor accepts: 0 and -1
    int64_t shape[TG_MAX_DIMS];
    int ndim = 0;
    tg_tensor *out = NULL;
    int sid = -1;
    bool ok = true, is_view = true, same_object = false;
    int64_t step[TG_MAX_DIMS], st[TG_MAX_DIMS], base = 0;
    if (xs)
        c_strides(xs->shape, xs->ndim, st);
    int xsid = xs ? r->slots[src].sid : -1;
    bool g = grad_on(r);

    /* Each case reads its arguments, decides ok and (when ok) the shape
     * and the gather map of the result, then calls the library. */
    switch (op) {
    case OP_RESHAPE:
    case OP_VIEW: {
        int64_t req[TG_MAX_DIMS] = {0};
        int n = shape_arg(&r->in, req);
        trace_shape("requested", req, n);
        if (!x) {
            out = op == OP_RESHAPE ? tg_reshape(NULL, req, n)
                                   : tg_view(NULL, req, n);
            break;
        }
        ok = reshape_rule(xs->numel, req, n, shape);
        ndim = n;
        if (ok && op == OP_VIEW)
            ok = viewable(x, shape, ndim);
        if (ok && numel_of(shape, ndim) > MAX_NUMEL)
            return;
        if (ok)
            is_view = viewable(x, shape, ndim);
        out = op == OP_RESHAPE ? tg_reshape(x, req, n) : tg_view(x, req, n);
        if (ok)
            sid = gather_identity(xsid, shape, ndim, xs->dtype, g);
        break;
    }
    case OP_PERMUTE: {
        unsigned b = next(&r->in);
        int n = b >= 250 ? xn + 1 : xn; // now and then a wrong count
        int dims[TG_MAX_DIMS + 1];
        bool seen[TG_MAX_DIMS] = {false};
        for (int i = 0; i < n; i++) {
            dims[i] = (b & 1) ? i : dim_arg(&r->in, dn);
            if (b & 2) // a reversal, a real permutation
                dims[i] = n - 1 - i;
        }
        if (!x) {
            out = tg_permute(NULL, dims, n);
            break;
        }
        ok = n == xn;
        for (int i = 0; ok && i < n; i++) {
            int d = norm_dim(dims[i], xn);
            ok = d >= 0 && !seen[d];
            if (ok) {
                seen[d] = true;
                shape[i] = xs->shape[d];
                step[i] = st[d];
            }
        }
        ndim = n;
        out = tg_permute(x, dims, n);
        if (ok)
            sid = gather(xsid, shape, ndim, xs->dtype,
                         affine_map(shape, ndim, 0, step), g);
        break;
    }
    case OP_TRANSPOSE: {
        int d0 = dim_arg(&r->in, dn), d1 = dim_arg(&r->in, dn);
        if (!x) {
            out = tg_transpose(NULL, d0, d1);
            break;
        }
        int a = norm_dim(d0, xn), b = norm_dim(d1, xn);
        ok = a >= 0 && b >= 0;
        ndim = xn;
        for (int d = 0; ok && d < xn; d++) {
            int from = d == a ? b : d == b ? a : d;
            shape[d] = xs->shape[from];
            step[d] = st[from];
        }
        out = tg_transpose(x, d0, d1);
        if (ok)
            sid = gather(xsid, shape, ndim, xs->dtype,
                         affine_map(shape, ndim, 0, step), g);
        break;
    }
    case OP_SQUEEZE:
    case OP_SQUEEZE_ALL:
    case OP_UNSQUEEZE: {
        int dim = op == OP_SQUEEZE_ALL ? 0
                  : op == OP_SQUEEZE   ? dim_arg(&r->in, dn)
                                       : dim_arg(&r->in, xn + 1);
        if (!x) {
            out = op == OP_SQUEEZE       ? tg_squeeze(NULL, dim)
                  : op == OP_SQUEEZE_ALL ? tg_squeeze_all(NULL)
                                         : tg_unsqueeze(NULL, dim);
            break;
        }
        if (op == OP_SQUEEZE) {
            int d = norm_dim(dim, xn);
            ok = d >= 0;
            for (int i = 0; ok && i < xn; i++)
                if (i != d || xs->shape[i] != 1)
                    shape[ndim++] = xs->shape[i];
            out = tg_squeeze(x, dim);
        } else if (op == OP_SQUEEZE_ALL) {
            for (int i = 0; i < xn; i++)
                if (xs->shape[i] != 1)
                    shape[ndim++] = xs->shape[i];
            out = tg_squeeze_all(x);
        } else {
            int n = xn + 1;
            ok = dim >= -n && dim < n && n <= TG_MAX_DIMS;
            int d = dim < 0 ? dim + n : dim;
            for (int i = 0, j = 0; ok && i < n; i++)
                shape[ndim++] = i == d ? 1 : xs->shape[j++];
            out = tg_unsqueeze(x, dim);
        }
        if (ok)
            sid = gather_identity(xsid, shape, ndim, xs->dtype, g);
        break;
    }
    case OP_EXPAND:
    case OP_BROADCAST_TO: {
        int64_t req[TG_MAX_DIMS] = {0};
        int n = shape_arg(&r->in, req);
        trace_shape("requested", req, n);
        bool keep = op == OP_EXPAND;
        if (!x) {
            out = keep ? tg_expand(NULL, req, n) : tg_broadcast_to(NULL, req, n);
            break;
        }
        ok = n >= xn && n <= TG_MAX_DIMS;
        for (int i = 0; ok && i < n; i++) {
            int d = i - (n - xn);
            int64_t size = d >= 0 ? xs->shape[d] : 1, want = req[i];
            if (want == -1 && keep && d >= 0)
                want = size;
            ok = want >= 0 && (want == size || size == 1);
            shape[i] = want;
            step[i] = d >= 0 && size == want ? st[d] : 0;
        }
        ndim = n;
        int64_t count;
        ok = ok && shape_ok(shape, ndim, &count);
        if (ok && count > MAX_NUMEL)
            return;
        out = keep ? tg_expand(x, req, n) : tg_broadcast_to(x, req, n);
        if (ok)
            sid = gather(xsid, shape, ndim, xs->dtype,
                         affine_map(shape, ndim, 0, step), g);
        break;
    }
    case OP_NARROW:
    case OP_SLICE:
    case OP_SELECT: {
        int dim = dim_arg(&r->in, dn);
        int d = xs ? norm_dim(dim, xn) : -1;
        int64_t size = d >= 0 && xn > 0 ? xs->shape[d] : 1;
        int64_t a = index_arg(&r->in, size);
        int64_t b = op == OP_SELECT ? 0 : index_arg(&r->in, size);
        unsigned sb = op == OP_SLICE ? next(&r->in) : 1;
        int64_t stepv = sb == 255 ? INT64_MAX : sb == 254 ? -1 : (int64_t)(sb % 4);
        if (!x) {
            out = op == OP_NARROW  ? tg_narrow(NULL, dim, a, b)
                  : op == OP_SLICE ? tg_slice(NULL, dim, a, b, stepv)
                                   : tg_select(NULL, dim, a);
            break;
        }
        ok = xn > 0 && d >= 0;
        int64_t start = 0, len = 0, every = 1;
        if (ok && op == OP_NARROW) {
            int64_t s = a < 0 ? a + size : a;
            ok = a >= -size && a <= size && b >= 0 && s <= size - b;
            start = s;
            len = b;
        } else if (ok && op == OP_SLICE) {
            ok = stepv >= 1;
            int64_t s = a, e = b;
            if (s < 0)
                s += size;
            if (e < 0)
                e += size;
            s = s < 0 ? 0 : s > size ? size : s;
            e = e < s ? s : e > size ? size : e;
            start = s;
            len = e == s ? 0 : (e - s - 1) / (ok ? stepv : 1) + 1;
            every = stepv;
        } else if (ok) {
            ok = a >= -size && a < size;
            start = a < 0 ? a + size : a;
        }
        if (ok) {
            base = start * st[d];
            for (int i = 0; i < xn; i++) {
                if (i == d && op == OP_SELECT)
                    continue;
                shape[ndim] = i == d ? len : xs->shape[i];
                /* A step only matters with two elements or more. */
                step[ndim] = i != d ? st[i] : len > 1 ? st[i] * every : 0;
                ndim++;
            }
        }
        out = op == OP_NARROW  ? tg_narrow(x, dim, a, b)
              : op == OP_SLICE ? tg_slice(x, dim, a, b, stepv)
                               : tg_select(x, dim, a);
        if (ok)
            sid = gather(xsid, shape, ndim, xs->dtype,
                         affine_map(shape, ndim, base, step), g);
        break;
    }
    case OP_CONTIGUOUS:
    case OP_CLONE:
    case OP_TO_DTYPE:
    case OP_DETACH: {
        tg_dtype t = op == OP_TO_DTYPE ? (tg_dtype)(next(&r->in) % 3)
                     : xs              ? xs->dtype
                                       : TG_FLOAT32;
        if (!x) {
            out = op == OP_CONTIGUOUS ? tg_contiguous(NULL)
                  : op == OP_CLONE    ? tg_clone(NULL)
                  : op == OP_TO_DTYPE ? tg_to_dtype(NULL, t)
                                      : tg_detach(NULL);
            break;
        }
        ndim = xn;
        memcpy(shape, xs->shape, sizeof shape);
        is_view = op == OP_DETACH ||
                  (op == OP_CONTIGUOUS && my_contiguous(x)) ||
                  (op == OP_TO_DTYPE && t == xs->dtype);
        same_object = is_view && op != OP_DETACH;
        out = op == OP_CONTIGUOUS ? tg_contiguous(x)
              : op == OP_CLONE    ? tg_clone(x)
              : op == OP_TO_DTYPE ? tg_to_dtype(x, t)
                                  : tg_detach(x);
        if (same_object) {
            FUZZ_CHECK(out == x, "%s must return its argument itself here",
                       fn);
            sid = xsid;
        } else {
            sid = gather_identity(xsid, shape, ndim, t, g);
            if (op == OP_DETACH) {
                shadows[sid].k = K_LEAF;
                shadows[sid].requires_grad = false;
            }
        }
        break;
    }
    default:
        fuzz_fail("unary_op called with op %d", (int)op);
    }
    if (!x) {
        expect_null_silent(out, fn);
        return;
    }
    if (!ok) {
        expect_error(out, fn);
        return;
    }
    FUZZ_CHECK(out != NULL, "%s failed where the rules say it must work",
               fn);
    if (same_object) {
        put(r, dst, out, sid);
        return;
    }
    FUZZ_CHECK(out != x, "%s returned its argument itself", fn);
    FUZZ_CHECK((out->storage == x->storage) == is_view,
               "%s %s its argument's storage", fn,
               is_view ? "must share" : "must not share");
    expect_ok(r, dst, out, sid, fn);
}

static void binary_op(run *r, opcode op, int dst, int a, int b)
{
    const char *fn = op_fn[op];
    tg_tensor *x = r->slots[a].t, *y = r->slots[b].t;
    tg_tensor *(*f)(const tg_tensor *, const tg_tensor *) =
        op == OP_ADD ? tg_add : op == OP_SUB ? tg_sub
                                : op == OP_MUL ? tg_mul : tg_matmul;
    if (!x || !y) {
        expect_null_silent(f(x, y), fn);
        return;
    }
    int as = r->slots[a].sid, bs = r->slots[b].sid;
    int64_t shape[TG_MAX_DIMS];
    int ndim;
    if (op == OP_MATMUL) {
        mm_plan p;
        bool ok = matmul_plan(&shadows[as], &shadows[bs], &p);
        /* The shadow loops over every block and both operands' blocks,
         * even when they are empty. */
        int64_t count = 0, t1, t2, work_a, work_b;
        ok = ok && shape_ok(p.out, p.nout, &count);
        int64_t t3;
        bool big = p.nb > 8 * MAX_NUMEL ||
                   __builtin_mul_overflow(p.nb, p.m, &t1) ||
                   __builtin_mul_overflow(t1, p.k, &work_a) ||
                   __builtin_mul_overflow(p.nb, p.k, &t2) ||
                   __builtin_mul_overflow(t2, p.n, &work_b) ||
                   __builtin_mul_overflow(p.nb, p.n, &t3) ||
                   t1 > 8 * MAX_NUMEL || t2 > 8 * MAX_NUMEL ||
                   t3 > 8 * MAX_NUMEL || work_a > 8 * MAX_NUMEL ||
                   work_b > 8 * MAX_NUMEL;
        if (ok && (count > MAX_NUMEL || big))
            return;
        tg_tensor *out = tg_matmul(x, y);
        if (!ok) {
            expect_error(out, fn);
            return;
        }
        expect_ok(r, dst, out, matmul(as, bs, &p, grad_on(r)), fn);
        return;
    }
    bool ok = broadcast(&shadows[as], &shadows[bs], shape, &ndim);
    int64_t count = 0;
    ok = ok && shape_ok(shape, ndim, &count);
    if (ok && count > MAX_NUMEL)
        return;
    tg_tensor *out = f(x, y);
    if (!ok) {
        expect_error(out, fn);
        return;
    }
    binop bop = op == OP_ADD ? B_ADD : op == OP_SUB ? B_SUB : B_MUL;
    expect_ok(r, dst, out, binary(bop, as, bs, shape, ndim, grad_on(r)), fn);
}

static void reduce_op(run *r, opcode op, int dst, int src)
{
    const char *fn = op_fn[op];
    tg_tensor *x = r->slots[src].t;
    int xn = x ? x->ndim : 0;
    unsigned b = next(&r->in);
    int ndims = (int)(b % 4);
    bool keepdim = (b >> 2) & 1;
    int dims[3];
    for (int i = 0; i < ndims; i++)
        dims[i] = dim_arg(&r->in, xn > 0 ? xn : 1);
    tg_tensor *(*f)(const tg_tensor *, const int *, int, bool) =
        op == OP_SUM ? tg_sum : tg_mean;
    if (!x) {
        expect_null_silent(f(NULL, dims, ndims, keepdim), fn);
        return;
    }
    int xsid = r->slots[src].sid;
    bool ok = !(op == OP_MEAN && x->dtype == TG_INT64);
    bool reduced[TG_MAX_DIMS] = {false};
    bool scalar_seen = false;
    for (int i = 0; i < ndims; i++) {
        int d = norm_dim(dims[i], xn);
        bool *seen = d < 0 ? NULL : xn == 0 ? &scalar_seen : &reduced[d];
        if (!seen || *seen)
            ok = false;
        else
            *seen = true;
    }
    if (ndims == 0)
        for (int d = 0; d < xn; d++)
            reduced[d] = true;
    /* Summing an empty dim away can leave a huge result: (0, 2^40) gives
     * (2^40,). */
    int64_t count = 1;
    for (int d = 0; d < xn; d++)
        if (!reduced[d] && __builtin_mul_overflow(count, x->shape[d], &count))
            count = INT64_MAX;
    if (ok && count > MAX_NUMEL)
        return;
    tg_tensor *out = f(x, dims, ndims, keepdim);
    if (!ok) {
        expect_error(out, fn);
        return;
    }
    expect_ok(r, dst, out,
              reduce(xsid, reduced, keepdim, op == OP_MEAN, grad_on(r)), fn);
}

/* --------------------------------------------------------- the backward */

/* Marks shadow sid as reached by the backward (its gradient exists,
 * zeros at first, even with no elements), when it requires grad. */
static void reach(int sid)
{
    if (sid < 0 || !shadows[sid].requires_grad || shadows[sid].grad)
        return;
    shadow *s = &shadows[sid];
    size_t n = (size_t)(s->numel > 0 ? s->numel : 1);
    s->grad = calloc(n, sizeof *s->grad);
    s->gmag = calloc(n, sizeof *s->gmag);
    FUZZ_CHECK(s->grad && s->gmag, "out of memory");
}

/* Adds g (bound gm) to the gradient of element i of shadow sid, computed
 * by a node of dtype t and converted to sid's dtype. */
static void add_grad(int sid, int64_t i, double g, double gm, tg_dtype t)
{
    shadow *s = &shadows[sid];
    if (!s->requires_grad)
        return;
    reach(sid);
    gm = settle(s->dtype, settle(t, gm));
    s->grad[i] += g;
    s->gmag[i] += gm;
}

/* Reverse mode over the shadows, from root (gradient 1), in reverse
 * creation order: every shadow is made after its inputs. */
static void shadow_backward(int root)
{
    add_grad(root, 0, 1, 1, shadows[root].dtype);
    shadows[root].geps = shadows[root].feps;
    for (int o = root; o >= 0; o--) {
        shadow *s = &shadows[o];
        if (!s->grad || s->k == K_LEAF)
            continue;
        const shadow *x = &shadows[s->in[0]];
        const shadow *y = s->in[1] >= 0 ? &shadows[s->in[1]] : NULL;
        reach(s->in[0]);
        if (y)
            reach(s->in[1]);
        for (int64_t i = 0; i < s->numel; i++)
            s->gmag[i] = settle(s->dtype, s->gmag[i]);
        /* The gradient is computed in s's dtype from values of s's
         * precision. */
        double path = s->geps > s->feps ? s->geps : s->feps;
        for (int j = 0; j < 2; j++)
            if (s->in[j] >= 0 && shadows[s->in[j]].geps < path)
                shadows[s->in[j]].geps = path;
        if (s->k == K_MATMUL) {
            /* out[b,i,j] = sum_q A[b,i,q] B[b,q,j] */
            for (int64_t bi = 0; bi < s->nb; bi++)
                for (int64_t i = 0; i < s->m; i++)
                    for (int64_t j = 0; j < s->n; j++) {
                        int64_t f = (bi * s->m + i) * s->n + j;
                        for (int64_t q = 0; q < s->kk; q++) {
                            int64_t fa = s->map0[(bi * s->m + i) * s->kk + q];
                            int64_t fb = s->map1[(bi * s->kk + q) * s->n + j];
                            double va = 0, vb = 0, ma, mb;
                            int64_t ia, ib;
                            value_as(x, fa, s->dtype, &va, &ia, &ma);
                            value_as(y, fb, s->dtype, &vb, &ib, &mb);
                            add_grad(s->in[0], fa, s->grad[f] * vb,
                                     s->gmag[f] * mb, s->dtype);
                            add_grad(s->in[1], fb, s->grad[f] * va,
                                     s->gmag[f] * ma, s->dtype);
                        }
                    }
            continue;
        }
        for (int64_t i = 0; i < (s->k == K_REDUCE ? x->numel : s->numel);
             i++) {
            if (s->k == K_REDUCE) {
                int64_t r = s->map0[i];
                add_grad(s->in[0], i, s->grad[r] * s->scale,
                         s->gmag[r] * s->scale, s->dtype);
            } else if (s->k == K_GATHER) {
                add_grad(s->in[0], s->map0[i], s->grad[i], s->gmag[i],
                         s->dtype);
            } else {
                double g = s->grad[i], gm = s->gmag[i];
                if (s->op == B_MUL) {
                    double va = 0, vb = 0, ma, mb;
                    int64_t ia, ib;
                    value_as(x, s->map0[i], s->dtype, &va, &ia, &ma);
                    value_as(y, s->map1[i], s->dtype, &vb, &ib, &mb);
                    add_grad(s->in[0], s->map0[i], g * vb, gm * mb,
                             s->dtype);
                    add_grad(s->in[1], s->map1[i], g * va, gm * ma,
                             s->dtype);
                } else {
                    add_grad(s->in[0], s->map0[i], g, gm, s->dtype);
                    add_grad(s->in[1], s->map1[i], s->op == B_SUB ? -g : g,
                             gm, s->dtype);
                }
            }
        }
    }
}

static void backward_and_check(run *r, int src)
{
    tg_tensor *x = r->slots[src].t;
    if (!x)
        return;
    while (r->no_grad_depth > 0) {
        tg_no_grad_end();
        r->no_grad_depth--;
    }
    tg_tensor *loss = tg_sum(x, NULL, 0, false);
    bool all[TG_MAX_DIMS] = {true, true, true, true, true, true, true, true};
    int root = reduce(r->slots[src].sid, all, false, false, true);
    FUZZ_CHECK(loss != NULL, "tg_sum over every dim failed");
    check_result(loss, &shadows[root], "the loss");
    tg_clear_error();
    int rc = tg_backward(loss);
    if (!shadows[root].requires_grad) {
        FUZZ_CHECK(rc == -1 && strncmp(tg_last_error(), "tg_backward: ",
                                       13) == 0,
                   "backward from a loss that needs no grad must fail "
                   "with a message");
        tg_release(loss);
        return;
    }
    FUZZ_CHECK(rc == 0, "backward failed");
    tg_release(loss);
    shadow_backward(root);
    for (int i = 0; i < nshadows; i++) {
        const shadow *s = &shadows[i];
        if (!s->lib)
            continue;
        const tg_tensor *g = s->lib->grad;
        if (!s->grad) {
            FUZZ_CHECK(g == NULL, "a leaf the loss does not use got a grad");
            continue;
        }
        FUZZ_CHECK(g != NULL, "a leaf the loss uses got no grad");
        FUZZ_CHECK(g->dtype == s->dtype && g->ndim == s->ndim,
                   "a grad has the wrong dtype or dims");
        for (int d = 0; d < s->ndim; d++)
            FUZZ_CHECK(g->shape[d] == s->shape[d], "a grad has the wrong shape");
        check_layout(g, "a grad");
        for (int64_t k = 0; k < s->numel; k++) {
            double got = read_f(g, k);
            FUZZ_CHECK(close_enough(got, round_to(s->dtype, s->grad[k]),
                                    s->gmag[k], s->dtype,
                                    s->geps > s->feps ? s->geps : s->feps,
                                    1024),
                       "grad element %lld is %.17g, expected %.17g",
                       (long long)k, got, s->grad[k]);
        }
    }
}

/* ------------------------------------------------------------ the target */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tg_set_error_handler(tg_error_handler_quiet);
    trace = getenv("TG_FUZZ_TRACE") != NULL;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    run r;
    memset(&r, 0, sizeof r);
    r.in.p = data;
    r.in.end = data + size;
    unsigned flags = next(&r.in);
    for (int n = 0; n < MAX_OPS && r.in.p < r.in.end; n++) {
        unsigned code = next(&r.in);
        opcode op = (opcode)(code % OP_COUNT);
        tg_clear_error();
        if (trace) {
            fprintf(stderr, "op %d: %s", n, op_fn[op] ? op_fn[op] : "");
            for (int i = 0; i < NSLOTS; i++) {
                char buf[TG_SHAPE_STR_MAX];
                const tg_tensor *t = r.slots[i].t;
                fprintf(stderr, " [%d: %s %s]", i, t ? tg_shape_str(t, buf) : "-",
                        t ? tg_dtype_name(t->dtype) : "");
            }
            fprintf(stderr, "\n");
        }
        if (op == OP_CREATE) { // reads its own operands
            create_op(&r);
            continue;
        }
        unsigned o = next(&r.in);
        int dst = (int)(o & 3), a = (int)((o >> 2) & 3),
            b = (int)((o >> 4) & 3);
        switch (op) {
        case OP_ADD:
        case OP_SUB:
        case OP_MUL:
        case OP_MATMUL:
            binary_op(&r, op, dst, a, b);
            break;
        case OP_SUM:
        case OP_MEAN:
            reduce_op(&r, op, dst, a);
            break;
        case OP_NO_GRAD:
            if ((o & 0x80) && r.no_grad_depth > 0) {
                tg_no_grad_end();
                r.no_grad_depth--;
            } else if (!(o & 0x80) && r.no_grad_depth < 2) {
                tg_no_grad_begin();
                r.no_grad_depth++;
            }
            FUZZ_CHECK(tg_is_grad_enabled() == (r.no_grad_depth == 0),
                       "tg_is_grad_enabled disagrees with the scopes");
            break;
        case OP_COPY_SLOT:
            put(&r, dst, tg_retain(r.slots[a].t), r.slots[a].sid);
            break;
        case OP_RELEASE_SLOT:
            put(&r, dst, NULL, -1);
            break;
        default:
            unary_op(&r, op, dst, a);
            break;
        }
    }
    /* No op wrote into its input. */
    for (int i = 0; i < NSLOTS; i++)
        if (r.slots[i].t)
            check_values(r.slots[i].t, &shadows[r.slots[i].sid],
                         "a slot at the end");
    if (flags & 1) {
        if (trace)
            fprintf(stderr, "backward from slot %d\n", (int)(flags >> 1) % NSLOTS);
        backward_and_check(&r, (int)(flags >> 1) % NSLOTS);
    }
    while (r.no_grad_depth > 0) {
        tg_no_grad_end();
        r.no_grad_depth--;
    }
    for (int i = 0; i < NSLOTS; i++)
        put(&r, i, NULL, -1);
    free_shadows();
    FUZZ_CHECK(tg_live_tensors() == 0, "%lld tensors alive after the input",
               (long long)tg_live_tensors());
    FUZZ_CHECK(tg_tape_size() == 0, "%lld nodes on the tape after the input",
               (long long)tg_tape_size());
    return 0;
}
