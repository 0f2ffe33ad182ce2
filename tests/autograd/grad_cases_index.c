/*
 * tests/autograd/grad_cases_index.c - gradcheck cases for the indexing ops
 * (autograd/ops/index.c): index_select, x[idx] (tg_index) and gather, with
 * respect to x, on contiguous, transposed and strided x.
 *
 * The indices are no input (int64, no gradient): each case function makes
 * them from constants, so gradcheck's many calls all see the same ones.
 * They repeat and come out of order on purpose: an element picked twice
 * must get both gradients (index_add, scatter_add), and one never picked
 * none. Some are read through a non-contiguous view (every second element
 * of a larger tensor). The ops copy elements, so they have no kink and
 * any values do.
 */
#include "grad_cases.h"

/* An int64 tensor of shape (ndim dims) holding v, read through a view
 * that takes every second element of a tensor twice as long (strided) or
 * contiguous. New reference. */
static tg_tensor *indices(const int64_t *v, const int64_t *shape, int ndim,
                          bool strided)
{
    if (!strided)
        return tg_from_array(v, shape, ndim, TG_INT64);
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    int64_t doubled[32] = {0};
    for (int64_t k = 0; k < n; k++) {
        doubled[2 * k] = v[k];
        doubled[2 * k + 1] = 999; // out of range: must never be read
    }
    int64_t len = 2 * n;
    tg_tensor *flat = tg_from_array(doubled, &len, 1, TG_INT64);
    tg_tensor *every2 = tg_slice(flat, 0, 0, len, 2);
    tg_tensor *out = tg_reshape(every2, shape, ndim); // still a view
    tg_release(every2);
    tg_release(flat);
    return out;
}

/* name(x) = op(x[0], ...) with idx made by indices(); releases idx. */
#define INDEX_FN(name, call, values, strided, ...)                          \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *user)         \
    {                                                                       \
        (void)n, (void)user;                                                \
        static const int64_t v_[] = values;                                 \
        const int64_t s_[] = {__VA_ARGS__};                                 \
        tg_tensor *idx = indices(v_, s_, (int)(sizeof s_ / sizeof *s_),    \
                                 strided);                                  \
        tg_tensor *out = call;                                              \
        tg_release(idx);                                                    \
        return out;                                                         \
    }
#define V(...) {__VA_ARGS__}

/* index_select: rows 4, 0 and 2 of five picked, 4 three times, 1 and 3
 * never */
INDEX_FN(sel_dim0, tg_index_select(x[0], 0, idx), V(4, 0, 4, 2, 4), false, 5)
INDEX_FN(sel_dim1, tg_index_select(x[0], 1, idx), V(2, 2, 0), false, 3)
INDEX_FN(sel_last_strided_idx, tg_index_select(x[0], -1, idx),
         V(1, 0, 1, 1), true, 4)

/* A 0-d idx: one slice, the dim kept by index_select and dropped by
 * x[idx]. */
static tg_tensor *sel_0d_idx(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *idx = tg_scalar(2, TG_INT64);
    tg_tensor *out = tg_index_select(x[0], 1, idx);
    tg_release(idx);
    return out;
}
static tg_tensor *index_0d(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *idx = tg_scalar(-2, TG_INT64);
    tg_tensor *out = tg_index(x[0], idx);
    tg_release(idx);
    return out;
}

/* x[idx]: a (2, 3) batch of contexts into a table, -1 the last row */
INDEX_FN(index_2d, tg_index(x[0], idx), V(3, 0, 3, -1, 1, 3), false, 2, 3)
INDEX_FN(index_2d_strided_idx, tg_index(x[0], idx), V(0, 0, 2, -3, 1, 0),
         true, 3, 2)
INDEX_FN(index_1d, tg_index(x[0], idx), V(1, 1, 0), false, 3)

/* gather: the lecture's logprobs[range(n), Yb] as gather(x, 1, Yb (n, 1)),
 * and picks along dim 0 by an idx smaller than x */
INDEX_FN(gather_rows, tg_gather(x[0], 1, idx), V(2, 0, 4, 2), false, 4, 1)
INDEX_FN(gather_dim1_wide, tg_gather(x[0], 1, idx),
         V(1, 1, 0, 3, 2, 2, 0, 0, 1), false, 3, 3)
INDEX_FN(gather_dim0, tg_gather(x[0], 0, idx), V(2, 0, 2, 1, 1, 0), true,
         2, 3)
INDEX_FN(gather_3d, tg_gather(x[0], -1, idx),
         V(1, 0, 0, 1, 1, 1, 0, 0), false, 2, 2, 2)

#define CONT TG_CONTIGUOUS
#define TRAN TG_TRANSPOSED
#define STRD TG_STRIDED

const tg_grad_case tg_grad_cases_index[] = {
    {"index_select dim 0 (5,3), repeated rows", sel_dim0, 1,
     {{2, {5, 3}, CONT}}},
    {"index_select dim 0 (5,3)T", sel_dim0, 1, {{2, {5, 3}, TRAN}}},
    {"index_select dim 1 (2,3,4) strided", sel_dim1, 1,
     {{3, {2, 3, 4}, STRD}}},
    {"index_select dim -1 (3,2) strided, strided idx", sel_last_strided_idx,
     1, {{2, {3, 2}, STRD}}},
    {"index_select dim 1 (2,4)T, 0-d idx", sel_0d_idx, 1,
     {{2, {2, 4}, TRAN}}},

    {"index (4,3)[(2,3)], repeats and -1", index_2d, 1, {{2, {4, 3}, CONT}}},
    {"index (4,3)T[(2,3)]", index_2d, 1, {{2, {4, 3}, TRAN}}},
    {"index (3,2,2) strided[(3,2) strided idx]", index_2d_strided_idx, 1,
     {{3, {3, 2, 2}, STRD}}},
    {"index (2,)[(3,)]", index_1d, 1, {{1, {2}, CONT}}},
    {"index (3,4) strided[0-d]", index_0d, 1, {{2, {3, 4}, STRD}}},

    {"gather dim 1 (4,5), one per row", gather_rows, 1, {{2, {4, 5}, CONT}}},
    {"gather dim 1 (3,4)T, repeats", gather_dim1_wide, 1,
     {{2, {3, 4}, TRAN}}},
    {"gather dim 0 (3,4) strided, smaller strided idx", gather_dim0, 1,
     {{2, {3, 4}, STRD}}},
    {"gather dim -1 (2,3,2)T", gather_3d, 1, {{3, {2, 3, 2}, TRAN}}},
};
const size_t tg_grad_cases_index_count =
    sizeof tg_grad_cases_index / sizeof *tg_grad_cases_index;
