/*
 * tensor/shape.c - shapes, dims, dtypes, type promotion and broadcasting.
 *
 * Pure bookkeeping: nothing here touches element data.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *tg_dtype_name(tg_dtype dtype)
{
    switch (dtype) {
    case TG_FLOAT32: return "float32";
    case TG_FLOAT64: return "float64";
    case TG_INT64: return "int64";
    }
    return "unknown";
}

size_t (tg_dtype_size)(tg_dtype dtype)
{
    return tg_dtype_size_inline(dtype);
}

bool tg_dtype_is_float(tg_dtype dtype)
{
    return dtype == TG_FLOAT32 || dtype == TG_FLOAT64;
}

char *tg_shape_format(const int64_t *shape, int ndim,
                      char buf[TG_SHAPE_STR_MAX])
{
    size_t n = 0;
    buf[n++] = '(';
    buf[n] = '\0';
    for (int d = 0; d < ndim && n < TG_SHAPE_STR_MAX - 32; d++)
        n += (size_t)snprintf(buf + n, TG_SHAPE_STR_MAX - n, "%s%lld",
                              d ? ", " : "", (long long)shape[d]);
    /* A 1-d shape prints as "(3,)" in NumPy and PyTorch; keep "(3)" out. */
    if (ndim == 1)
        n += (size_t)snprintf(buf + n, TG_SHAPE_STR_MAX - n, ",");
    snprintf(buf + n, TG_SHAPE_STR_MAX - n, ")");
    return buf;
}

char *tg_shape_str(const tg_tensor *x, char buf[TG_SHAPE_STR_MAX])
{
    if (!x) {
        snprintf(buf, TG_SHAPE_STR_MAX, "(null)");
        return buf;
    }
    return tg_shape_format(x->shape, x->ndim, buf);
}

bool tg_same_shape(const tg_tensor *a, const tg_tensor *b)
{
    if (!a || !b || a->ndim != b->ndim)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

int tg_dim_normalize(const char *fn, int dim, int ndim)
{
    int n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n) {
        tg_error(fn,
                 "dim %d is out of range for a tensor with %d dim%s\n"
                 "  rule: dim must be in [%d, %d] (negative dims count "
                 "from the end)",
                 dim, ndim, tg_plural(ndim), -n, n - 1);
        return -1;
    }
    return dim < 0 ? dim + n : dim;
}

bool tg_shape_arg_ok(const char *fn, const int64_t *shape, int ndim)
{
    if (ndim < 0 || ndim > TG_MAX_DIMS) {
        tg_error(fn,
                 "cannot make a shape with %d dims\n"
                 "  rule: ndim must be in [0, %d]",
                 ndim, TG_MAX_DIMS);
        return false;
    }
    if (ndim > 0 && !shape) {
        tg_error(fn,
                 "shape is NULL but ndim is %d\n"
                 "  hint: pass TG_SHAPE(2, 3), or NULL with ndim 0 for a "
                 "scalar",
                 ndim);
        return false;
    }
    return true;
}

int64_t tg_shape_check(const char *fn, const int64_t *shape, int ndim)
{
    if (!tg_shape_arg_ok(fn, shape, ndim))
        return -1;
    int64_t numel = 1;
    bool zero = false;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            char s[TG_SHAPE_STR_MAX];
            tg_error(fn,
                     "invalid shape %s\n"
                     "  rule: sizes must be >= 0, but dim %d is %lld",
                     tg_shape_format(shape, ndim, s), d,
                     (long long)shape[d]);
            return -1;
        }
        if (shape[d] == 0)
            zero = true;
    }
    /* A size 0 counts as 1 here: the tensor is empty, but its strides are
     * products of the other sizes (tg_contiguous_strides) and must not
     * overflow, e.g. for (0, 2^62, 4). */
    for (int d = 0; d < ndim; d++) {
        int64_t size = shape[d] > 0 ? shape[d] : 1;
        if (numel > TG_MAX_NUMEL / size) {
            char s[TG_SHAPE_STR_MAX];
            tg_error(fn,
                     "shape %s has too many elements\n"
                     "  rule: the product of the sizes must be below 2^59 "
                     "(a size 0 counted as 1)",
                     tg_shape_format(shape, ndim, s));
            return -1;
        }
        numel *= size;
    }
    return zero ? 0 : numel;
}

void tg_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

/* int < float; within float, the wider wins. */
static int category(tg_dtype t)
{
    return tg_dtype_is_float(t) ? 1 : 0;
}

static tg_dtype promote(tg_dtype a, tg_dtype b)
{
    if (a == b)
        return a;
    if (category(a) != category(b))
        return category(a) ? a : b;
    return TG_FLOAT64; // float32 with float64
}

tg_dtype tg_result_type(const tg_tensor *a, const tg_tensor *b)
{
    bool a0 = a->ndim == 0, b0 = b->ndim == 0;
    if (a0 == b0)
        return promote(a->dtype, b->dtype);
    const tg_tensor *dimmed = a0 ? b : a, *zero = a0 ? a : b;
    if (category(zero->dtype) > category(dimmed->dtype))
        return zero->dtype;
    return dimmed->dtype;
}

tg_dtype tg_scalar_type(const tg_tensor *x, double value)
{
    if (tg_dtype_is_float(x->dtype))
        return x->dtype;
    return (isfinite(value) && value == floor(value) &&
            fabs(value) < 9.2e18)
               ? TG_INT64
               : TG_FLOAT32;
}

/* Whether the shorter of two shapes, one dim shorter than the other, lines
 * up with it once a size-1 dim is put back at some place other than the
 * front: the mark of a reduction that dropped its dim (keepdim=false).
 * Returns that dim of the longer shape, or -1. */
static int dropped_dim(const int64_t *a, int na, const int64_t *b, int nb)
{
    const int64_t *lo = na > nb ? a : b, *sh = na > nb ? b : a;
    int nl = na > nb ? na : nb, ns = na > nb ? nb : na;
    if (nl != ns + 1)
        return -1;
    for (int p = 1; p < nl; p++) { // p = 0 is what broadcasting does anyway
        bool fits = true;
        for (int d = 0; d < nl && fits; d++) {
            int64_t x = lo[d], y = d == p ? 1 : sh[d < p ? d : d - 1];
            fits = x == y || x == 1 || y == 1;
        }
        if (fits)
            return p;
    }
    return -1;
}

int tg_broadcast_shape(const char *fn, const int64_t *a, int na,
                       const int64_t *b, int nb, int64_t *out, int *nout)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        /* Align from the right: dim n-1-i of the result. */
        int64_t sa = i < na ? a[na - 1 - i] : 1;
        int64_t sb = i < nb ? b[nb - 1 - i] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
            int p = dropped_dim(a, na, b, nb);
            char hint[256];
            if (p >= 0) {
                /* The shorter shape with its size-1 dim put back at p. */
                const int64_t *sh = na < nb ? a : b;
                int64_t kept[TG_MAX_DIMS + 1];
                for (int d = 0, k = 0; d < n; d++)
                    kept[d] = d == p ? 1 : sh[k++];
                char s3[TG_SHAPE_STR_MAX];
                snprintf(hint, sizeof hint,
                         "if %s comes from a reduction over dim %d, keep "
                         "that dim (keepdim true): as %s it lines up",
                         tg_shape_format(sh, n - 1, s1),
                         p, tg_shape_format(kept, n, s3));
            } else {
                snprintf(hint, sizeof hint,
                         "use tg_unsqueeze or tg_reshape to add size-1 dims "
                         "where the shapes should line up");
            }
            tg_error(fn,
                     "cannot broadcast %s with %s\n"
                     "  rule: aligned from the right, sizes must be equal "
                     "or 1, but %lld != %lld at dim %d\n"
                     "  hint: %s",
                     tg_shape_format(a, na, s1), tg_shape_format(b, nb, s2),
                     (long long)sa, (long long)sb, -(i + 1), hint);
            return -1;
        }
        out[n - 1 - i] = sa == 1 ? sb : sa;
    }
    /* Two valid shapes can broadcast to one too large for a tensor, e.g.
     * (2^31, 1) with (1, 2^31) (both cheap as expanded views). */
    if (tg_shape_check(fn, out, n) < 0)
        return -1;
    *nout = n;
    return 0;
}
