/*
 * examples/makemore/part4_mlp.c - makemore part 4's network, forward and
 * hand-written backward passes (part4_mlp.h). Each block quotes the
 * lecture's Python line it translates. A NULL passes through the
 * library's calls without a new error, so a block computes its results
 * and checks them once at the end.
 */
#include "part4_mlp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const p4_param_names[P4_NPARAMS] = {"C",  "W1",     "b1",
                                                "W2", "b2",     "bngain",
                                                "bnbias"};

tg_tensor **p4_params_list(p4_params *p, tg_tensor *out[P4_NPARAMS])
{
    out[0] = p->C, out[1] = p->W1, out[2] = p->b1, out[3] = p->W2;
    out[4] = p->b2, out[5] = p->bngain, out[6] = p->bnbias;
    return out;
}

/* randn(shape, generator=g) * scale + shift, a new reference */
static tg_tensor *randn_affine(tg_generator *g, const int64_t *shape,
                               int ndim, double scale, double shift)
{
    tg_tensor *r = tg_randn_gen(g, shape, ndim, TG_FLOAT32);
    tg_tensor *s = tg_mul_scalar(r, scale);
    tg_release(r);
    if (shift == 0.0)
        return s;
    tg_tensor *out = tg_add_scalar(s, shift);
    tg_release(s);
    return out;
}

int p4_params_init(p4_params *p, int64_t vocab, int64_t n_embd,
                   int64_t block_size, int64_t n_hidden, tg_generator *g,
                   tg_generator *torch_default)
{
    int64_t fan_in = n_embd * block_size;
    memset(p, 0, sizeof *p);
    /* C  = torch.randn((vocab_size, n_embd), generator=g) */
    p->C = tg_randn_gen(g, TG_SHAPE(vocab, n_embd), TG_FLOAT32);
    /* W1 = torch.randn((n_embd * block_size, n_hidden), generator=g)
     *      * (5/3)/((n_embd * block_size)**0.5) */
    p->W1 = randn_affine(g, TG_SHAPE(fan_in, n_hidden),
                         (5.0 / 3.0) / sqrt((double)fan_in), 0.0);
    /* b1 = torch.randn(n_hidden, generator=g) * 0.1 */
    p->b1 = randn_affine(g, TG_SHAPE(n_hidden), 0.1, 0.0);
    /* W2 = torch.randn((n_hidden, vocab_size), generator=g) * 0.1 */
    p->W2 = randn_affine(g, TG_SHAPE(n_hidden, vocab), 0.1, 0.0);
    /* b2 = torch.randn(vocab_size, generator=g) * 0.1 */
    p->b2 = randn_affine(g, TG_SHAPE(vocab), 0.1, 0.0);
    /* bngain = torch.randn((1, n_hidden))*0.1 + 1.0  (no generator=g) */
    p->bngain = randn_affine(torch_default, TG_SHAPE(1, n_hidden), 0.1, 1.0);
    /* bnbias = torch.randn((1, n_hidden))*0.1 */
    p->bnbias = randn_affine(torch_default, TG_SHAPE(1, n_hidden), 0.1, 0.0);
    tg_tensor *list[P4_NPARAMS];
    p4_params_list(p, list);
    for (int i = 0; i < P4_NPARAMS; i++)
        if (list[i] == NULL) {
            p4_params_free(p);
            return -1;
        }
    return 0;
}

void p4_params_free(p4_params *p)
{
    tg_tensor *list[P4_NPARAMS];
    p4_params_list(p, list);
    for (int i = 0; i < P4_NPARAMS; i++)
        tg_release(list[i]);
    memset(p, 0, sizeof *p);
}

int64_t p4_params_count(const p4_params *p)
{
    tg_tensor *list[P4_NPARAMS];
    p4_params_list((p4_params *)p, list);
    int64_t n = 0;
    for (int i = 0; i < P4_NPARAMS; i++)
        n += list[i]->numel;
    return n;
}

int p4_batch(const tg_dataset *train, int64_t batch_size, tg_generator *g,
             tg_tensor **xb, tg_tensor **yb)
{
    /* ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g) */
    tg_tensor *ix = tg_randint_gen(g, 0, train->x->shape[0],
                                   TG_SHAPE(batch_size));
    /* Xb, Yb = Xtr[ix], Ytr[ix] */
    *xb = tg_index(train->x, ix);
    *yb = tg_index(train->y, ix);
    tg_release(ix);
    if (*xb == NULL || *yb == NULL) {
        tg_release(*xb);
        tg_release(*yb);
        *xb = *yb = NULL;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- forward */

static tg_tensor **forward_list(p4_forward *f, tg_tensor **out[P4_NFORWARD])
{
    tg_tensor **all[P4_NFORWARD] = {
        &f->emb,         &f->embcat,      &f->hprebn,     &f->bnmeani,
        &f->bndiff,      &f->bndiff2,     &f->bnvar,      &f->bnvar_inv,
        &f->bnraw,       &f->hpreact,     &f->h,          &f->logits,
        &f->logit_maxes, &f->norm_logits, &f->counts,     &f->counts_sum,
        &f->counts_sum_inv, &f->probs,    &f->logprobs,   &f->loss};
    memcpy(out, all, sizeof all);
    return out[0];
}

void p4_forward_free(p4_forward *f)
{
    tg_tensor **all[P4_NFORWARD];
    forward_list(f, all);
    for (int i = P4_NFORWARD - 1; i >= 0; i--) {
        tg_release(*all[i]);
        *all[i] = NULL;
    }
}

/* x @ w + b, a new reference */
static tg_tensor *linear(const tg_tensor *x, const tg_tensor *w,
                         const tg_tensor *b)
{
    tg_tensor *xw = tg_matmul(x, w);
    tg_tensor *out = tg_add(xw, b);
    tg_release(xw);
    return out;
}

int p4_forward_run(const p4_params *p, const tg_tensor *xb,
                   const tg_tensor *yb, p4_forward *f)
{
    memset(f, 0, sizeof *f);
    int64_t n = xb->shape[0];
    /* emb = C[Xb]; embcat = emb.view(emb.shape[0], -1) */
    f->emb = tg_index(p->C, xb);
    f->embcat = tg_view(f->emb, TG_SHAPE(n, -1));
    /* hprebn = embcat @ W1 + b1 */
    f->hprebn = linear(f->embcat, p->W1, p->b1);
    /* bnmeani = 1/n*hprebn.sum(0, keepdim=True) */
    tg_tensor *s = tg_sum(f->hprebn, TG_DIMS(0), true);
    f->bnmeani = tg_mul_scalar(s, 1.0 / (double)n);
    tg_release(s);
    /* bndiff = hprebn - bnmeani; bndiff2 = bndiff**2 */
    f->bndiff = tg_sub(f->hprebn, f->bnmeani);
    f->bndiff2 = tg_pow_scalar(f->bndiff, 2.0);
    /* bnvar = 1/(n-1)*(bndiff2).sum(0, keepdim=True) (Bessel's
     * correction: n-1, not n) */
    s = tg_sum(f->bndiff2, TG_DIMS(0), true);
    f->bnvar = tg_mul_scalar(s, 1.0 / (double)(n - 1));
    tg_release(s);
    /* bnvar_inv = (bnvar + 1e-5)**-0.5 */
    s = tg_add_scalar(f->bnvar, 1e-5);
    f->bnvar_inv = tg_pow_scalar(s, -0.5);
    tg_release(s);
    /* bnraw = bndiff * bnvar_inv; hpreact = bngain * bnraw + bnbias */
    f->bnraw = tg_mul(f->bndiff, f->bnvar_inv);
    s = tg_mul(p->bngain, f->bnraw);
    f->hpreact = tg_add(s, p->bnbias);
    tg_release(s);
    /* h = torch.tanh(hpreact); logits = h @ W2 + b2 */
    f->h = tg_tanh(f->hpreact);
    f->logits = linear(f->h, p->W2, p->b2);
    /* logit_maxes = logits.max(1, keepdim=True).values */
    f->logit_maxes = tg_max_dim(f->logits, 1, true, NULL);
    /* norm_logits = logits - logit_maxes; counts = norm_logits.exp() */
    f->norm_logits = tg_sub(f->logits, f->logit_maxes);
    f->counts = tg_exp(f->norm_logits);
    /* counts_sum = counts.sum(1, keepdims=True) */
    f->counts_sum = tg_sum(f->counts, TG_DIMS(1), true);
    /* counts_sum_inv = counts_sum**-1 */
    f->counts_sum_inv = tg_pow_scalar(f->counts_sum, -1.0);
    /* probs = counts * counts_sum_inv; logprobs = probs.log() */
    f->probs = tg_mul(f->counts, f->counts_sum_inv);
    f->logprobs = tg_log(f->probs);
    /* loss = -logprobs[range(n), Yb].mean() */
    tg_tensor *y2 = tg_view(yb, TG_SHAPE(n, 1));
    tg_tensor *picked = tg_gather(f->logprobs, 1, y2);
    tg_tensor *mean = tg_mean(picked, NULL, 0, false);
    f->loss = tg_neg(mean);
    tg_release(mean);
    tg_release(picked);
    tg_release(y2);

    tg_tensor **all[P4_NFORWARD];
    forward_list(f, all);
    for (int i = 0; i < P4_NFORWARD; i++)
        if (*all[i] == NULL) {
            p4_forward_free(f);
            return -1;
        }
    /* for t in [logprobs, probs, ..., embcat, emb]: t.retain_grad() */
    if (f->loss->requires_grad)
        for (int i = 0; i < P4_NFORWARD - 1; i++)
            if (tg_retain_grad(*all[i]) != 0) {
                p4_forward_free(f);
                return -1;
            }
    return 0;
}

/* --------------------------------------------------- exercise 1: by hand */

void p4_grads_free(p4_grads *d)
{
    tg_tensor **all = (tg_tensor **)d;
    for (size_t i = 0; i < sizeof *d / sizeof(tg_tensor *); i++)
        tg_release(all[i]);
    memset(d, 0, sizeof *d);
}

int p4_cmp_rows(const p4_params *p, const p4_forward *f, const p4_grads *d,
                p4_cmp_row rows[P4_NCMP])
{
    const p4_cmp_row all[P4_NCMP] = {
        {"logprobs", d->logprobs, f->logprobs},
        {"probs", d->probs, f->probs},
        {"counts_sum_inv", d->counts_sum_inv, f->counts_sum_inv},
        {"counts_sum", d->counts_sum, f->counts_sum},
        {"counts", d->counts, f->counts},
        {"norm_logits", d->norm_logits, f->norm_logits},
        {"logit_maxes", d->logit_maxes, f->logit_maxes},
        {"logits", d->logits, f->logits},
        {"h", d->h, f->h},
        {"W2", d->W2, p->W2},
        {"b2", d->b2, p->b2},
        {"hpreact", d->hpreact, f->hpreact},
        {"bngain", d->bngain, p->bngain},
        {"bnbias", d->bnbias, p->bnbias},
        {"bnraw", d->bnraw, f->bnraw},
        {"bnvar_inv", d->bnvar_inv, f->bnvar_inv},
        {"bnvar", d->bnvar, f->bnvar},
        {"bndiff2", d->bndiff2, f->bndiff2},
        {"bndiff", d->bndiff, f->bndiff},
        {"bnmeani", d->bnmeani, f->bnmeani},
        {"hprebn", d->hprebn, f->hprebn},
        {"embcat", d->embcat, f->embcat},
        {"W1", d->W1, p->W1},
        {"b1", d->b1, p->b1},
        {"emb", d->emb, f->emb},
        {"C", d->C, p->C},
    };
    memcpy(rows, all, sizeof all);
    return P4_NCMP;
}

/* x.sum(dim, keepdim), a new reference */
static tg_tensor *sum_dim(const tg_tensor *x, int dim, bool keepdim)
{
    return tg_sum(x, (const int[]){dim}, 1, keepdim);
}

/* a * b, releasing both (they are temporaries) */
static tg_tensor *mul_rel(tg_tensor *a, tg_tensor *b)
{
    tg_tensor *out = tg_mul(a, b);
    tg_release(a);
    tg_release(b);
    return out;
}

/* x * s, releasing x (a temporary) */
static tg_tensor *scale_rel(tg_tensor *x, double s)
{
    tg_tensor *out = tg_mul_scalar(x, s);
    tg_release(x);
    return out;
}

/* *acc += x, out of place: *acc becomes a new tensor; x is released */
static void add_into(tg_tensor **acc, tg_tensor *x)
{
    tg_tensor *sum = tg_add(*acc, x);
    tg_release(*acc);
    tg_release(x);
    *acc = sum;
}

/* x.T for a 2-D x, a view */
static tg_tensor *T(const tg_tensor *x) { return tg_transpose(x, 0, 1); }

/* F.one_hot(idx, num_classes) as float32 */
static tg_tensor *one_hot_f32(const tg_tensor *idx, int64_t num_classes)
{
    tg_tensor *oh = tg_one_hot(idx, num_classes);
    tg_tensor *out = tg_to_dtype(oh, TG_FLOAT32);
    tg_release(oh);
    return out;
}

tg_tensor *p4_embedding_backward(const tg_tensor *demb, const tg_tensor *xb,
                                 int64_t vocab)
{
    if (demb == NULL || xb == NULL)
        return NULL;
    int64_t n = xb->shape[0], bs = xb->shape[1], e = demb->shape[2];
    tg_tensor *dC = tg_zeros(TG_SHAPE(vocab, e), TG_FLOAT32);
    tg_tensor *dx = tg_contiguous(demb);
    tg_tensor *ix = tg_contiguous(xb);
    if (dC == NULL || dx == NULL || ix == NULL) {
        tg_release(dC), tg_release(dx), tg_release(ix);
        return NULL;
    }
    float *out = tg_data_f32(dC);
    const float *src = tg_data_f32(dx);
    const int64_t *idx = tg_data_i64(ix);
    /* for k in range(Xb.shape[0]):
     *   for j in range(Xb.shape[1]):
     *     ix = Xb[k,j]
     *     dC[ix] += demb[k,j] */
    for (int64_t k = 0; k < n; k++)
        for (int64_t j = 0; j < bs; j++) {
            int64_t row = idx[k * bs + j];
            for (int64_t c = 0; c < e; c++)
                out[row * e + c] += src[(k * bs + j) * e + c];
        }
    tg_release(dx);
    tg_release(ix);
    return dC;
}

int p4_backward_manual(const p4_params *p, const p4_forward *f,
                       const tg_tensor *xb, const tg_tensor *yb,
                       p4_grads *d)
{
    memset(d, 0, sizeof *d);
    int64_t n = xb->shape[0], vocab = f->logits->shape[1];
    tg_no_grad_begin();

    /* dlogprobs = torch.zeros_like(logprobs)
     * dlogprobs[range(n), Yb] = -1.0/n */
    d->logprobs = scale_rel(one_hot_f32(yb, vocab), -1.0 / (double)n);
    /* dprobs = (1.0 / probs) * dlogprobs */
    tg_tensor *one = tg_scalar(1.0, TG_FLOAT32);
    d->probs = mul_rel(tg_div(one, f->probs), tg_retain(d->logprobs));
    /* dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True) */
    tg_tensor *t = tg_mul(f->counts, d->probs);
    d->counts_sum_inv = sum_dim(t, 1, true);
    tg_release(t);
    /* dcounts = counts_sum_inv * dprobs */
    d->counts = tg_mul(f->counts_sum_inv, d->probs);
    /* dcounts_sum = (-counts_sum**-2) * dcounts_sum_inv */
    t = tg_pow_scalar(f->counts_sum, -2.0);
    d->counts_sum = mul_rel(tg_neg(t), tg_retain(d->counts_sum_inv));
    tg_release(t);
    /* dcounts += torch.ones_like(counts) * dcounts_sum */
    add_into(&d->counts, mul_rel(tg_ones_like(f->counts),
                                 tg_retain(d->counts_sum)));
    /* dnorm_logits = counts * dcounts */
    d->norm_logits = tg_mul(f->counts, d->counts);
    /* dlogits = dnorm_logits.clone()
     * dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True) */
    d->logits = tg_clone(d->norm_logits);
    t = tg_neg(d->norm_logits);
    d->logit_maxes = sum_dim(t, 1, true);
    tg_release(t);
    /* dlogits += F.one_hot(logits.max(1).indices, num_classes=...)
     *            * dlogit_maxes */
    tg_tensor *where = NULL;
    tg_release(tg_max_dim(f->logits, 1, false, &where));
    add_into(&d->logits, mul_rel(one_hot_f32(where, vocab),
                                 tg_retain(d->logit_maxes)));
    tg_release(where);
    /* dh = dlogits @ W2.T; dW2 = h.T @ dlogits; db2 = dlogits.sum(0) */
    tg_tensor *W2T = T(p->W2), *hT = T(f->h);
    d->h = tg_matmul(d->logits, W2T);
    d->W2 = tg_matmul(hT, d->logits);
    d->b2 = sum_dim(d->logits, 0, false);
    tg_release(W2T), tg_release(hT);
    /* dhpreact = (1.0 - h**2) * dh */
    t = tg_pow_scalar(f->h, 2.0);
    d->hpreact = mul_rel(tg_rsub_scalar(t, 1.0), tg_retain(d->h));
    tg_release(t);
    /* dbngain = (bnraw * dhpreact).sum(0, keepdim=True) */
    t = tg_mul(f->bnraw, d->hpreact);
    d->bngain = sum_dim(t, 0, true);
    tg_release(t);
    /* dbnraw = bngain * dhpreact
     * dbnbias = dhpreact.sum(0, keepdim=True) */
    d->bnraw = tg_mul(p->bngain, d->hpreact);
    d->bnbias = sum_dim(d->hpreact, 0, true);
    /* dbndiff = bnvar_inv * dbnraw
     * dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True) */
    d->bndiff = tg_mul(f->bnvar_inv, d->bnraw);
    t = tg_mul(f->bndiff, d->bnraw);
    d->bnvar_inv = sum_dim(t, 0, true);
    tg_release(t);
    /* dbnvar = (-0.5*(bnvar + 1e-5)**-1.5) * dbnvar_inv */
    t = tg_add_scalar(f->bnvar, 1e-5);
    d->bnvar = mul_rel(scale_rel(tg_pow_scalar(t, -1.5), -0.5),
                       tg_retain(d->bnvar_inv));
    tg_release(t);
    /* dbndiff2 = (1.0/(n-1))*torch.ones_like(bndiff2) * dbnvar */
    d->bndiff2 = mul_rel(scale_rel(tg_ones_like(f->bndiff2),
                                       1.0 / (double)(n - 1)),
                         tg_retain(d->bnvar));
    /* dbndiff += (2*bndiff) * dbndiff2 */
    add_into(&d->bndiff, mul_rel(tg_mul_scalar(f->bndiff, 2.0),
                                 tg_retain(d->bndiff2)));
    /* dhprebn = dbndiff.clone()
     * dbnmeani = (-dbndiff).sum(0)  -- the lecture's (n_hidden,) has lost
     * the dim bnmeani (1, n_hidden) has: PyTorch's cmp broadcasts it,
     * tg_cmp refuses it, so the sum keeps its dim here */
    d->hprebn = tg_clone(d->bndiff);
    t = tg_neg(d->bndiff);
    d->bnmeani = sum_dim(t, 0, true);
    tg_release(t);
    /* dhprebn += 1.0/n * (torch.ones_like(hprebn) * dbnmeani) */
    add_into(&d->hprebn,
             scale_rel(mul_rel(tg_ones_like(f->hprebn),
                                   tg_retain(d->bnmeani)),
                           1.0 / (double)n));
    /* dembcat = dhprebn @ W1.T; dW1 = embcat.T @ dhprebn
     * db1 = dhprebn.sum(0) */
    tg_tensor *W1T = T(p->W1), *embcatT = T(f->embcat);
    d->embcat = tg_matmul(d->hprebn, W1T);
    d->W1 = tg_matmul(embcatT, d->hprebn);
    d->b1 = sum_dim(d->hprebn, 0, false);
    tg_release(W1T), tg_release(embcatT);
    /* demb = dembcat.view(emb.shape) */
    d->emb = tg_view(d->embcat, f->emb->shape, f->emb->ndim);
    /* dC[Xb[k, j]] += demb[k, j] */
    d->C = p4_embedding_backward(d->emb, xb, p->C->shape[0]);
    tg_release(one);

    tg_no_grad_end();
    p4_cmp_row rows[P4_NCMP];
    p4_cmp_rows(p, f, d, rows);
    for (int i = 0; i < P4_NCMP; i++)
        if (rows[i].dt == NULL) {
            p4_grads_free(d);
            return -1;
        }
    return 0;
}

/* ----------------------------------------- exercises 2 and 3: one line */

tg_tensor *p4_cross_entropy_backward(const tg_tensor *logits,
                                     const tg_tensor *yb)
{
    if (logits == NULL || yb == NULL)
        return NULL;
    /* dlogits = F.softmax(logits, 1)
     * dlogits[range(n), Yb] -= 1
     * dlogits /= n */
    tg_tensor *sm = tg_softmax(logits, 1);
    tg_tensor *oh = one_hot_f32(yb, logits->shape[1]);
    tg_tensor *diff = tg_sub(sm, oh);
    tg_tensor *out = tg_div_scalar(diff, (double)logits->shape[0]);
    tg_release(diff), tg_release(oh), tg_release(sm);
    return out;
}

tg_tensor *p4_batch_norm_backward(const tg_tensor *dhpreact,
                                  const tg_tensor *bngain,
                                  const tg_tensor *bnvar_inv,
                                  const tg_tensor *bnraw)
{
    if (!dhpreact || !bngain || !bnvar_inv || !bnraw)
        return NULL;
    double n = (double)dhpreact->shape[0];
    /* dhprebn = bngain*bnvar_inv/n * (n*dhpreact - dhpreact.sum(0)
     *           - n/(n-1)*bnraw*(dhpreact*bnraw).sum(0)) */
    tg_tensor *gv = tg_mul(bngain, bnvar_inv);
    tg_tensor *scale = tg_div_scalar(gv, n);
    tg_release(gv);
    tg_tensor *a = tg_mul_scalar(dhpreact, n);
    tg_tensor *b = sum_dim(dhpreact, 0, false);
    tg_tensor *c = tg_mul_scalar(bnraw, n / (n - 1.0));
    tg_tensor *dr = tg_mul(dhpreact, bnraw);
    tg_tensor *e = sum_dim(dr, 0, false);
    tg_release(dr);
    tg_tensor *ab = tg_sub(a, b);
    tg_tensor *ce = tg_mul(c, e);
    tg_tensor *inner = tg_sub(ab, ce);
    tg_tensor *out = tg_mul(scale, inner);
    tg_release(inner), tg_release(ce), tg_release(ab), tg_release(e);
    tg_release(c), tg_release(b), tg_release(a), tg_release(scale);
    return out;
}

/* ------------------------------------------------ exercise 4: training */

/* hpreact = embcat @ W1 + b1 for x (N, block_size), a new reference; the
 * embedding lookups and the view too when the pointers are not NULL. */
static tg_tensor *layer1(const p4_params *p, const tg_tensor *x,
                         tg_tensor **emb_out, tg_tensor **embcat_out)
{
    tg_tensor *emb = tg_index(p->C, x);
    tg_tensor *embcat = tg_view(emb, TG_SHAPE(x->shape[0], -1));
    tg_tensor *out = linear(embcat, p->W1, p->b1);
    if (emb_out)
        *emb_out = tg_retain(emb);
    if (embcat_out)
        *embcat_out = tg_retain(embcat);
    tg_release(embcat);
    tg_release(emb);
    return out;
}

/* p.data += -lr * grad */
static int sgd_update(tg_tensor *param, const tg_tensor *grad, double lr)
{
    tg_tensor *step = tg_mul_scalar(grad, -lr);
    tg_tensor *next = tg_add(param, step);
    int rc = next ? tg_copy_(param, next) : -1;
    tg_release(next);
    tg_release(step);
    return rc;
}

int p4_train_step(p4_params *p, const tg_tensor *xb, const tg_tensor *yb,
                  double lr, double *loss, tg_tensor *grads[P4_NPARAMS])
{
    tg_no_grad_begin();
    /* emb = C[Xb]; embcat = emb.view(emb.shape[0], -1)
     * hprebn = embcat @ W1 + b1 */
    tg_tensor *emb = NULL, *embcat = NULL;
    tg_tensor *hprebn = layer1(p, xb, &emb, &embcat);
    /* bnmean = hprebn.mean(0, keepdim=True)
     * bnvar = hprebn.var(0, keepdim=True, unbiased=True)
     * bnvar_inv = (bnvar + 1e-5)**-0.5
     * bnraw = (hprebn - bnmean) * bnvar_inv
     * hpreact = bngain * bnraw + bnbias */
    tg_tensor *bnmean = tg_mean(hprebn, TG_DIMS(0), true);
    tg_tensor *bnvar = tg_var(hprebn, TG_DIMS(0), 1, true);
    tg_tensor *t = tg_add_scalar(bnvar, 1e-5);
    tg_tensor *bnvar_inv = tg_pow_scalar(t, -0.5);
    tg_release(t);
    tg_tensor *bnraw = mul_rel(tg_sub(hprebn, bnmean), tg_retain(bnvar_inv));
    t = tg_mul(p->bngain, bnraw);
    tg_tensor *hpreact = tg_add(t, p->bnbias);
    tg_release(t);
    /* h = torch.tanh(hpreact); logits = h @ W2 + b2
     * loss = F.cross_entropy(logits, Yb) */
    tg_tensor *h = tg_tanh(hpreact);
    tg_tensor *logits = linear(h, p->W2, p->b2);
    tg_tensor *l = tg_cross_entropy(logits, yb, TG_REDUCTION_MEAN);
    *loss = tg_item(l);
    tg_release(l);

    /* dlogits = F.softmax(logits, 1); dlogits[range(n), Yb] -= 1;
     * dlogits /= n */
    tg_tensor *dlogits = p4_cross_entropy_backward(logits, yb);
    /* dh = dlogits @ W2.T; dW2 = h.T @ dlogits; db2 = dlogits.sum(0) */
    tg_tensor *W2T = T(p->W2), *hT = T(h);
    tg_tensor *dh = tg_matmul(dlogits, W2T);
    tg_tensor *g[P4_NPARAMS] = {0};
    g[3] = tg_matmul(hT, dlogits);
    g[4] = sum_dim(dlogits, 0, false);
    tg_release(W2T), tg_release(hT);
    /* dhpreact = (1.0 - h**2) * dh */
    t = tg_pow_scalar(h, 2.0);
    tg_tensor *dhpreact = mul_rel(tg_rsub_scalar(t, 1.0), tg_retain(dh));
    tg_release(t);
    /* dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
     * dbnbias = dhpreact.sum(0, keepdim=True) */
    t = tg_mul(bnraw, dhpreact);
    g[5] = sum_dim(t, 0, true);
    tg_release(t);
    g[6] = sum_dim(dhpreact, 0, true);
    /* dhprebn = bngain*bnvar_inv/n * (n*dhpreact - dhpreact.sum(0)
     *           - n/(n-1)*bnraw*(dhpreact*bnraw).sum(0)) */
    tg_tensor *dhprebn =
        p4_batch_norm_backward(dhpreact, p->bngain, bnvar_inv, bnraw);
    /* dembcat = dhprebn @ W1.T; dW1 = embcat.T @ dhprebn
     * db1 = dhprebn.sum(0) */
    tg_tensor *W1T = T(p->W1), *embcatT = T(embcat);
    tg_tensor *dembcat = tg_matmul(dhprebn, W1T);
    g[1] = tg_matmul(embcatT, dhprebn);
    g[2] = sum_dim(dhprebn, 0, false);
    tg_release(W1T), tg_release(embcatT);
    /* demb = dembcat.view(emb.shape); dC[Xb[k, j]] += demb[k, j] */
    tg_tensor *demb = emb ? tg_view(dembcat, emb->shape, emb->ndim) : NULL;
    g[0] = p4_embedding_backward(demb, xb, p->C->shape[0]);

    /* lr = 0.1 if i < 100000 else 0.01
     * for p, grad in zip(parameters, grads): p.data += -lr * grad */
    int rc = isnan(*loss) ? -1 : 0;
    tg_tensor *list[P4_NPARAMS];
    p4_params_list(p, list);
    for (int i = 0; i < P4_NPARAMS; i++)
        if (rc == 0 && (g[i] == NULL || sgd_update(list[i], g[i], lr) != 0))
            rc = -1;
    for (int i = 0; i < P4_NPARAMS; i++) {
        if (grads && rc == 0)
            grads[i] = g[i];
        else
            tg_release(g[i]);
    }
    tg_release(demb), tg_release(dembcat), tg_release(dhprebn);
    tg_release(dhpreact), tg_release(dh), tg_release(dlogits);
    tg_release(logits), tg_release(h), tg_release(hpreact);
    tg_release(bnraw), tg_release(bnvar_inv), tg_release(bnvar);
    tg_release(bnmean), tg_release(hprebn), tg_release(embcat);
    tg_release(emb);
    tg_no_grad_end();
    return rc;
}

int p4_calibrate(const p4_params *p, const tg_tensor *x, tg_tensor **bnmean,
                 tg_tensor **bnvar)
{
    tg_no_grad_begin();
    /* emb = C[Xtr]; embcat = emb.view(emb.shape[0], -1)
     * hpreact = embcat @ W1 + b1
     * bnmean = hpreact.mean(0, keepdim=True)
     * bnvar = hpreact.var(0, keepdim=True, unbiased=True) */
    tg_tensor *hpreact = layer1(p, x, NULL, NULL);
    *bnmean = tg_mean(hpreact, TG_DIMS(0), true);
    *bnvar = tg_var(hpreact, TG_DIMS(0), 1, true);
    tg_release(hpreact);
    tg_no_grad_end();
    if (*bnmean == NULL || *bnvar == NULL) {
        tg_release(*bnmean), tg_release(*bnvar);
        *bnmean = *bnvar = NULL;
        return -1;
    }
    return 0;
}

/* The logits of x (N, block_size) in eval mode, with the calibrated
 * statistics, a new reference:
 *   hpreact = embcat @ W1 + b1
 *   hpreact = bngain * (hpreact - bnmean) * (bnvar + 1e-5)**-0.5 + bnbias
 *   h = torch.tanh(hpreact); logits = h @ W2 + b2 */
static tg_tensor *eval_logits(const p4_params *p, const tg_tensor *bnmean,
                              const tg_tensor *bnvar, const tg_tensor *x)
{
    tg_tensor *hpre = layer1(p, x, NULL, NULL);
    tg_tensor *a = mul_rel(tg_retain(p->bngain), tg_sub(hpre, bnmean));
    tg_tensor *v = tg_add_scalar(bnvar, 1e-5);
    tg_tensor *b = mul_rel(a, tg_pow_scalar(v, -0.5));
    tg_tensor *hpreact = tg_add(b, p->bnbias);
    tg_tensor *h = tg_tanh(hpreact);
    tg_tensor *logits = linear(h, p->W2, p->b2);
    tg_release(h), tg_release(hpreact), tg_release(b), tg_release(v);
    tg_release(hpre);
    return logits;
}

double p4_split_loss(const p4_params *p, const tg_tensor *bnmean,
                     const tg_tensor *bnvar, const tg_tensor *x,
                     const tg_tensor *y)
{
    tg_no_grad_begin();
    tg_tensor *logits = eval_logits(p, bnmean, bnvar, x);
    tg_tensor *loss = tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
    double v = tg_item(loss);
    tg_release(loss);
    tg_release(logits);
    tg_no_grad_end();
    return v;
}

int p4_sample(const p4_params *p, const tg_tensor *bnmean,
              const tg_tensor *bnvar, int64_t block_size, const char *itos,
              tg_generator *g, char *out, size_t size)
{
    int64_t context[16] = {0}; // context = [0] * block_size
    size_t len = 0;
    int rc = -1;
    if (block_size > 16 || size == 0)
        return -1;
    tg_no_grad_begin();
    for (;;) {
        /* emb = C[torch.tensor([context])] ... logits (1, vocab) */
        tg_tensor *x = tg_from_array(context, TG_SHAPE(1, block_size),
                                     TG_INT64);
        tg_tensor *logits = eval_logits(p, bnmean, bnvar, x);
        /* probs = F.softmax(logits, dim=1)
         * ix = torch.multinomial(probs, num_samples=1, generator=g) */
        tg_tensor *probs = tg_softmax(logits, 1);
        tg_tensor *ix = tg_multinomial(probs, 1, false, g);
        double v = ix ? tg_item(ix) : NAN;
        tg_release(ix), tg_release(probs), tg_release(logits);
        tg_release(x);
        if (isnan(v))
            break;
        /* context = context[1:] + [ix]; out.append(ix) */
        int64_t c = (int64_t)v;
        memmove(context, context + 1,
                (size_t)(block_size - 1) * sizeof *context);
        context[block_size - 1] = c;
        if (len + 1 < size)
            out[len++] = itos[c];
        if (c == 0) { // if ix == 0: break
            rc = 0;
            break;
        }
    }
    out[len] = '\0';
    tg_no_grad_end();
    return rc;
}
