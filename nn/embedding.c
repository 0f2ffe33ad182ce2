/*
 * nn/embedding.c - the two layers that makemore's MLP and WaveNet models
 * add to Linear, BatchNorm and Tanh: Embedding, a table of learned
 * vectors looked up by integer index, and Flatten, which merges dims of
 * its input (the lecture's emb.view(emb.shape[0], -1)).
 *
 * Neither has a backward of its own: Embedding's forward is tg_index (x[idx],
 * autograd/ops/index.c, whose backward adds the gradient of each looked-up
 * row into the table row, repeats summed) and Flatten's is tg_reshape.
 * Embedding draws its initial weights from the default generator exactly as
 * PyTorch does, so a table made after tg_manual_seed(s) equals
 * nn.Embedding's after torch.manual_seed(s).
 *
 * Not here: Embedding's padding_idx, max_norm and sparse gradients, and
 * nn.Unflatten.
 */
#include "nn.h"

#include "../autograd/internal.h"
#include "internal.h"

#include <stdio.h>

/* -------------------------------------------------------------- Embedding */

typedef struct embedding_data {
    int64_t num_embeddings, embedding_dim;
} embedding_data;

static void embedding_describe(const tg_module *m, char *buf, size_t size)
{
    const embedding_data *d = tg_module_data_const(m);
    snprintf(buf, size, "%lld, %lld", (long long)d->num_embeddings,
             (long long)d->embedding_dim);
}

/* y[p..., :] = weight[idx[p...], :]: idx of any shape gives idx.shape +
 * (embedding_dim,). As F.embedding, every index lies in
 * [0, num_embeddings): a negative one is refused (where x[idx] would
 * count it from the end). */
static tg_tensor *embedding_forward(tg_module *m, const tg_tensor *idx)
{
    const embedding_data *d = tg_module_data(m);
    tg_tensor *w = tg_module_parameter(m, "weight");
    if (!w)
        return NULL;
    char si[TG_SHAPE_STR_MAX];
    if (idx->dtype != TG_INT64) {
        tg_error("tg_module_forward",
                 "Embedding(%lld, %lld) got a %s input of shape %s\n"
                 "  rule: the input holds int64 indices into the table "
                 "(PyTorch's Long)\n"
                 "  hint: convert them: tg_to_dtype(idx, TG_INT64)",
                 (long long)d->num_embeddings, (long long)d->embedding_dim,
                 tg_dtype_name(idx->dtype), tg_shape_str(idx, si));
        return NULL;
    }
    tg_tensor *ic = tg_contiguous(idx);
    if (!ic)
        return NULL;
    const int64_t *v = tg_data_i64(ic);
    for (int64_t k = 0; k < ic->numel; k++)
        if (v[k] < 0 || v[k] >= d->num_embeddings) {
            tg_error("tg_module_forward",
                     "Embedding(%lld, %lld) got index %lld\n"
                     "  rule: every index lies in [0, num_embeddings) = "
                     "[0, %lld), as in PyTorch (index out of range in "
                     "self); negative ones are refused\n"
                     "  hint: it is at flat position %lld of the input of "
                     "shape %s; the table needs a row per token",
                     (long long)d->num_embeddings,
                     (long long)d->embedding_dim, (long long)v[k],
                     (long long)d->num_embeddings, (long long)k,
                     tg_shape_str(idx, si));
            tg_release(ic);
            return NULL;
        }
    tg_release(ic);
    return tg_index(w, idx);
}

static const tg_module_type embedding_type = {"Embedding", embedding_forward,
                                              embedding_describe,
                                              sizeof(embedding_data)};

/* PyTorch's reset_parameters: init.normal_(weight), N(0, 1) drawn into the
 * (num_embeddings, embedding_dim) table row by row. tg_normal_ takes the
 * same path as torch's normal_ for the same element count (the scalar
 * Box-Muller below 16 elements, the 16-wide fill from 16 on). */
tg_module *tg_embedding_new(int64_t num_embeddings, int64_t embedding_dim)
{
    const char *fn = "tg_embedding_new";
    if (num_embeddings < 1 || embedding_dim < 1) {
        tg_error(fn,
                 "cannot make an Embedding with num_embeddings %lld and "
                 "embedding_dim %lld\n"
                 "  rule: both sizes are >= 1 (PyTorch accepts 0 and makes "
                 "an empty table; tapegrad refuses)\n"
                 "  hint: num_embeddings is the number of tokens, "
                 "embedding_dim the length of each vector: makemore's "
                 "tg_embedding_new(27, 10)",
                 (long long)num_embeddings, (long long)embedding_dim);
        return NULL;
    }
    const int64_t shape[2] = {num_embeddings, embedding_dim};
    if (tg_shape_check(fn, shape, 2) < 0)
        return NULL;
    tg_module *m = tg_module_new(&embedding_type);
    if (!m)
        return NULL;
    embedding_data *d = tg_module_data(m);
    d->num_embeddings = num_embeddings;
    d->embedding_dim = embedding_dim;
    tg_tensor *w = tg_empty(shape, 2, TG_FLOAT32);
    int rc = !w || tg_normal_(w, 0.0, 1.0, NULL) < 0
                 ? -1
                 : tg_module_add_parameter(m, "weight", w);
    tg_release(w);
    if (rc < 0) {
        tg_module_free(m);
        return NULL;
    }
    return m;
}

/* ---------------------------------------------------------------- Flatten */

typedef struct flatten_data {
    int start_dim, end_dim;
} flatten_data;

static void flatten_describe(const tg_module *m, char *buf, size_t size)
{
    const flatten_data *d = tg_module_data_const(m);
    snprintf(buf, size, "start_dim=%d, end_dim=%d", d->start_dim,
             d->end_dim);
}

/* As torch.flatten(x, start_dim, end_dim): dims start..end (negative ones
 * counted from the end) become one of their product; the others stay.
 * A view when x's strides allow it, else a copy (tg_reshape). A 0-d x
 * reads as (1,), as torch.flatten treats it. */
static tg_tensor *flatten_forward(tg_module *m, const tg_tensor *x)
{
    const flatten_data *d = tg_module_data(m);
    int n = x->ndim > 0 ? x->ndim : 1;
    int start = d->start_dim < 0 ? d->start_dim + n : d->start_dim;
    int end = d->end_dim < 0 ? d->end_dim + n : d->end_dim;
    char sx[TG_SHAPE_STR_MAX];
    if (start < 0 || start >= n || end < 0 || end >= n || start > end) {
        tg_error("tg_module_forward",
                 "Flatten(start_dim=%d, end_dim=%d) got an input of shape "
                 "%s\n"
                 "  rule: start_dim and end_dim are dims of the input (in "
                 "[%d, %d]) and start_dim comes at or before end_dim\n"
                 "  hint: Flatten(start_dim=1) keeps the batch dim of an "
                 "(N, ...) input; tg_flatten_new(0, -1) flattens "
                 "everything",
                 d->start_dim, d->end_dim, tg_shape_str(x, sx), -n, n - 1);
        return NULL;
    }
    if (x->ndim == 0) {
        const int64_t one = 1;
        return tg_reshape(x, &one, 1);
    }
    int64_t shape[TG_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < start; i++)
        shape[k++] = x->shape[i];
    int64_t merged = 1;
    for (int i = start; i <= end; i++)
        merged *= x->shape[i];
    shape[k++] = merged;
    for (int i = end + 1; i < x->ndim; i++)
        shape[k++] = x->shape[i];
    return tg_reshape(x, shape, k);
}

static const tg_module_type flatten_type = {"Flatten", flatten_forward,
                                            flatten_describe,
                                            sizeof(flatten_data)};

/* The dims are checked against each input (their meaning depends on its
 * number of dims), as PyTorch does. */
tg_module *tg_flatten_new(int start_dim, int end_dim)
{
    tg_module *m = tg_module_new(&flatten_type);
    if (m) {
        flatten_data *d = tg_module_data(m);
        d->start_dim = start_dim;
        d->end_dim = end_dim;
    }
    return m;
}
