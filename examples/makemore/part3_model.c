/*
 * examples/makemore/part3_model.c - makemore part 3's network and
 * training step, shared by part3_mlp.c, part3_modules.c and the test
 * that compares them with PyTorch (part3_model.h says what each function
 * does). Each function quotes the lecture's Python it performs.
 *
 * Every tensor an op returns is a new reference, released here once it
 * is used; an op given a NULL (after an error) returns NULL, so each
 * function checks its last result only.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // clock_gettime
#endif

#include "part3_model.h"

#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ----------------------------------------------------------------- data */

int part3_data_load(const char *path, int64_t max_words, part3_data *d)
{
    memset(d, 0, sizeof *d);
    /* words = open('names.txt', 'r').read().splitlines() */
    d->words = tg_words_load(path);
    if (!d->words)
        return -1;
    d->vocab_size = (int64_t)strlen(tg_words_vocab(d->words));
    int64_t n = tg_words_count(d->words);
    int rc;
    if (max_words <= 0 || max_words >= n) {
        /* random.seed(42); random.shuffle(words)
         * n1 = int(0.8*len(words)); n2 = int(0.9*len(words))
         * Xtr, Ytr = build_dataset(words[:n1]) ... */
        rc = tg_words_split(d->words, PART3_BLOCK_SIZE, PART3_SPLIT_SEED,
                            &d->train, &d->val, &d->test);
    } else {
        /* the same shuffle, then words = words[:max_words] */
        tg_pyrandom *r = tg_pyrandom_new(PART3_SPLIT_SEED);
        rc = r ? tg_words_shuffle(d->words, r) : -1;
        tg_pyrandom_free(r);
        int64_t n1 = (int64_t)(0.8 * (double)max_words);
        int64_t n2 = (int64_t)(0.9 * (double)max_words);
        if (rc == 0)
            rc = tg_words_dataset(d->words, 0, n1, PART3_BLOCK_SIZE,
                                  &d->train);
        if (rc == 0)
            rc = tg_words_dataset(d->words, n1, n2, PART3_BLOCK_SIZE,
                                  &d->val);
        if (rc == 0)
            rc = tg_words_dataset(d->words, n2, max_words, PART3_BLOCK_SIZE,
                                  &d->test);
    }
    if (rc != 0) {
        part3_data_free(d);
        return -1;
    }
    return 0;
}

void part3_data_free(part3_data *d)
{
    tg_dataset_free(&d->test);
    tg_dataset_free(&d->val);
    tg_dataset_free(&d->train);
    tg_words_free(d->words);
    d->words = NULL;
}

/* ------------------------------------------------------- the raw network */

/* torch.randn(shape, generator=g) * scale, as a new leaf. */
static tg_tensor *randn_scaled(tg_generator *g, const int64_t *shape,
                               int ndim, double scale)
{
    tg_tensor *r = tg_randn_gen(g, shape, ndim, TG_FLOAT32);
    tg_tensor *t = tg_mul_scalar(r, scale);
    tg_release(r);
    return t;
}

int part3_mlp_init(part3_mlp *m, int64_t vocab_size, tg_generator *g)
{
    memset(m, 0, sizeof *m);
    const int64_t fan_in = PART3_N_EMBD * PART3_BLOCK_SIZE;
    /* C  = torch.randn((vocab_size, n_embd), generator=g)
     * W1 = torch.randn((n_embd * block_size, n_hidden), generator=g)
     *      * (5/3)/((n_embd * block_size)**0.5)
     * W2 = torch.randn((n_hidden, vocab_size), generator=g) * 0.01
     * b2 = torch.randn(vocab_size, generator=g) * 0
     * Python reads W1's line as (randn * (5/3)) / 30**0.5: two float32
     * roundings, as here, not one multiplication by 0.304. */
    m->C = tg_randn_gen(g, TG_SHAPE(vocab_size, PART3_N_EMBD), TG_FLOAT32);
    tg_tensor *w1 = randn_scaled(g, TG_SHAPE(fan_in, PART3_N_HIDDEN),
                                 5.0 / 3.0);
    m->W1 = tg_div_scalar(w1, pow((double)fan_in, 0.5));
    tg_release(w1);
    m->W2 = randn_scaled(g, TG_SHAPE(PART3_N_HIDDEN, vocab_size), 0.01);
    m->b2 = randn_scaled(g, TG_SHAPE(vocab_size), 0.0);
    /* bngain = torch.ones((1, n_hidden)) ... bnstd_running = torch.ones */
    m->bngain = tg_ones(TG_SHAPE(1, PART3_N_HIDDEN), TG_FLOAT32);
    m->bnbias = tg_zeros(TG_SHAPE(1, PART3_N_HIDDEN), TG_FLOAT32);
    m->bnmean_running = tg_zeros(TG_SHAPE(1, PART3_N_HIDDEN), TG_FLOAT32);
    m->bnstd_running = tg_ones(TG_SHAPE(1, PART3_N_HIDDEN), TG_FLOAT32);
    if (!m->bnmean_running || !m->bnstd_running) {
        part3_mlp_free(m);
        return -1;
    }
    /* for p in parameters: p.requires_grad = True */
    tg_tensor *params[PART3_NPARAMS];
    part3_mlp_parameters(m, params);
    for (int i = 0; i < PART3_NPARAMS; i++)
        if (!params[i] || tg_set_requires_grad(params[i], true) != 0) {
            part3_mlp_free(m);
            return -1;
        }
    return 0;
}

void part3_mlp_free(part3_mlp *m)
{
    tg_release(m->C);
    tg_release(m->W1);
    tg_release(m->W2);
    tg_release(m->b2);
    tg_release(m->bngain);
    tg_release(m->bnbias);
    tg_release(m->bnmean_running);
    tg_release(m->bnstd_running);
    memset(m, 0, sizeof *m);
}

void part3_mlp_parameters(const part3_mlp *m, tg_tensor **out)
{
    /* parameters = [C, W1, W2, b2, bngain, bnbias] */
    tg_tensor *p[PART3_NPARAMS] = {m->C, m->W1, m->W2, m->b2, m->bngain,
                                   m->bnbias};
    memcpy(out, p, sizeof p);
}

/* ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
 * Xb, Yb = Xtr[ix], Ytr[ix] */
static int draw_batch(const tg_dataset *train, tg_generator *g,
                      tg_tensor **ix, tg_tensor **xb, tg_tensor **yb)
{
    *ix = tg_randint_gen(g, 0, train->x->shape[0], TG_SHAPE(PART3_BATCH));
    *xb = tg_index(train->x, *ix);
    *yb = tg_index(train->y, *ix);
    return *yb ? 0 : -1;
}

/* emb = C[x]; embcat = emb.view(emb.shape[0], -1); embcat @ W1 */
static tg_tensor *hidden_preact(const part3_mlp *m, const tg_tensor *x)
{
    tg_tensor *emb = tg_index(m->C, x); // (N, 3, 10)
    tg_tensor *embcat = emb ? tg_view(emb, TG_SHAPE(emb->shape[0], -1))
                            : NULL;     // (N, 30)
    tg_tensor *hpreact = tg_matmul(embcat, m->W1); // (N, 200)
    tg_release(embcat);
    tg_release(emb);
    return hpreact;
}

/* bngain * (hpreact - mean) / std + bnbias, in Python's order:
 * ((bngain * (hpreact - mean)) / std) + bnbias */
static tg_tensor *batch_norm(const part3_mlp *m, const tg_tensor *hpreact,
                             const tg_tensor *mean, const tg_tensor *std)
{
    tg_tensor *diff = tg_sub(hpreact, mean);
    tg_tensor *scaled = tg_mul(m->bngain, diff);
    tg_tensor *normed = tg_div(scaled, std);
    tg_tensor *out = tg_add(normed, m->bnbias);
    tg_release(normed);
    tg_release(scaled);
    tg_release(diff);
    return out;
}

/* h = torch.tanh(hpreact); logits = h @ W2 + b2 */
static tg_tensor *output_layer(const part3_mlp *m, const tg_tensor *hpreact)
{
    tg_tensor *h = tg_tanh(hpreact);
    tg_tensor *hw = tg_matmul(h, m->W2);
    tg_tensor *logits = tg_add(hw, m->b2);
    tg_release(hw);
    tg_release(h);
    return logits;
}

/* running = 0.999 * running + 0.001 * batch statistic, replacing the
 * tensor as the lecture rebinds the name (under torch.no_grad()). */
static int running_update(tg_tensor **running, const tg_tensor *batch)
{
    tg_tensor *a = tg_mul_scalar(*running, 0.999);
    tg_tensor *b = tg_mul_scalar(batch, 0.001);
    tg_tensor *next = tg_add(a, b);
    tg_release(b);
    tg_release(a);
    if (!next)
        return -1;
    tg_release(*running);
    *running = next;
    return 0;
}

int part3_sgd_update(tg_tensor *const *params, int n, double lr)
{
    /* for p in parameters: p.data += -lr * p.grad
     * (without a tape: p.data is outside autograd's view) */
    int rc = 0;
    tg_no_grad_begin();
    for (int i = 0; i < n && rc == 0; i++) {
        tg_tensor *step = tg_mul_scalar(params[i]->grad, -lr);
        tg_tensor *next = tg_add(params[i], step);
        rc = next ? tg_copy_(params[i], next) : -1;
        tg_release(next);
        tg_release(step);
    }
    tg_no_grad_end();
    return rc;
}

double part3_lr(int64_t i, int64_t decay_at)
{
    return i < decay_at ? 0.1 : 0.01; // step learning rate decay
}

int part3_mlp_step(part3_mlp *m, const tg_dataset *train, tg_generator *g,
                   double lr, double *loss, tg_tensor **ix_out)
{
    tg_tensor *ix, *xb, *yb;
    int rc = draw_batch(train, g, &ix, &xb, &yb);

    /* forward pass: the Linear layer, then BatchNorm with the batch's own
     * statistics (std is the unbiased one, torch.std's default) */
    tg_tensor *hpreact = rc == 0 ? hidden_preact(m, xb) : NULL;
    tg_tensor *bnmeani = tg_mean(hpreact, TG_DIMS(0), true);
    tg_tensor *bnstdi = tg_std(hpreact, TG_DIMS(0), 1, true);
    tg_tensor *hbn = batch_norm(m, hpreact, bnmeani, bnstdi);
    if (hbn) { // with torch.no_grad(): the running statistics
        tg_no_grad_begin();
        rc = running_update(&m->bnmean_running, bnmeani);
        if (rc == 0)
            rc = running_update(&m->bnstd_running, bnstdi);
        tg_no_grad_end();
    }
    tg_tensor *logits = output_layer(m, hbn);
    tg_tensor *l = tg_cross_entropy(logits, yb, TG_REDUCTION_MEAN);

    /* backward pass: for p in parameters: p.grad = None; loss.backward() */
    tg_tensor *params[PART3_NPARAMS];
    part3_mlp_parameters(m, params);
    for (int i = 0; i < PART3_NPARAMS; i++)
        tg_clear_grad(params[i]);
    if (!l || rc != 0 || tg_backward(l) != 0 ||
        part3_sgd_update(params, PART3_NPARAMS, lr) != 0)
        rc = -1;
    *loss = l ? tg_item(l) : NAN;

    tg_release(l);
    tg_release(logits);
    tg_release(hbn);
    tg_release(bnstdi);
    tg_release(bnmeani);
    tg_release(hpreact);
    tg_release(yb);
    tg_release(xb);
    if (ix_out && rc == 0)
        *ix_out = ix;
    else
        tg_release(ix);
    return rc;
}

tg_tensor *part3_mlp_logits(void *mlp, const tg_tensor *x)
{
    /* hpreact = bngain * (hpreact - bnmean_running) / bnstd_running
     *           + bnbias */
    const part3_mlp *m = mlp;
    tg_tensor *hpreact = hidden_preact(m, x);
    tg_tensor *hbn = batch_norm(m, hpreact, m->bnmean_running,
                                m->bnstd_running);
    tg_tensor *logits = output_layer(m, hbn);
    tg_release(hbn);
    tg_release(hpreact);
    return logits;
}

/* ------------------------------------------------- evaluation, sampling */

int part3_split_loss(part3_logits_fn *f, void *model, const tg_dataset *d,
                     double *loss)
{
    /* @torch.no_grad() def split_loss(split): ...
     * loss = F.cross_entropy(logits, y) */
    tg_no_grad_begin();
    tg_tensor *logits = f(model, d->x);
    tg_tensor *l = tg_cross_entropy(logits, d->y, TG_REDUCTION_MEAN);
    tg_no_grad_end();
    *loss = l ? tg_item(l) : NAN;
    int rc = l ? 0 : -1;
    tg_release(l);
    tg_release(logits);
    return rc;
}

int part3_sample(part3_logits_fn *f, void *model, const char *itos,
                 tg_generator *g, char buf[PART3_NAME_MAX])
{
    /* context = [0] * block_size
     * while True:
     *   emb = C[torch.tensor([context])] ... logits
     *   probs = F.softmax(logits, dim=1)
     *   ix = torch.multinomial(probs, num_samples=1, generator=g).item()
     *   context = context[1:] + [ix]; out.append(ix)
     *   if ix == 0: break */
    int64_t context[PART3_BLOCK_SIZE] = {0};
    size_t len = 0;
    int rc = 0;
    tg_no_grad_begin();
    for (;;) {
        tg_tensor *x = tg_from_array(context, TG_SHAPE(1, PART3_BLOCK_SIZE),
                                     TG_INT64);
        tg_tensor *logits = f(model, x);
        tg_tensor *probs = tg_softmax(logits, 1);
        tg_tensor *s = tg_multinomial(probs, 1, false, g);
        int64_t ix = s ? tg_data_i64(s)[0] : -1;
        tg_release(s);
        tg_release(probs);
        tg_release(logits);
        tg_release(x);
        if (ix < 0) {
            rc = -1;
            break;
        }
        memmove(context, context + 1,
                (PART3_BLOCK_SIZE - 1) * sizeof *context);
        context[PART3_BLOCK_SIZE - 1] = ix;
        if (len < PART3_NAME_MAX - 1)
            buf[len++] = itos[ix];
        if (ix == 0)
            break;
    }
    tg_no_grad_end();
    buf[len] = '\0';
    return rc;
}

/* --------------------------------------------------- the modules' form */

/* dst = src (in place, without a tape), for a parameter of a module. */
static int copy_into(tg_module *net, const char *name, const tg_tensor *src)
{
    tg_tensor *dst = tg_module_parameter(net, name);
    if (!dst)
        return -1;
    tg_no_grad_begin();
    int rc = tg_copy_(dst, src);
    tg_no_grad_end();
    return rc;
}

tg_module *part3_modules_new(const part3_mlp *init, int64_t vocab_size)
{
    tg_batch_norm_config bn = tg_batch_norm_config_defaults();
    bn.eps = TG_EXACT_ZERO; // the lecture divides by the std itself
    bn.momentum = 0.001;    // 0.999 * running + 0.001 * batch
    bn.correction = 1;      // hpreact.std(0): the unbiased std
    /* each append takes the layer, also when it fails */
    tg_module *net = tg_sequential_new(NULL, 0);
    if (!net ||
        tg_sequential_append(net, tg_embedding_new(vocab_size,
                                                   PART3_N_EMBD)) != 0 ||
        tg_sequential_append(net, tg_flatten_new(1, -1)) != 0 ||
        tg_sequential_append(net, tg_linear_new(PART3_N_EMBD *
                                                    PART3_BLOCK_SIZE,
                                                PART3_N_HIDDEN, false)) != 0 ||
        tg_sequential_append(net, tg_batch_norm1d_new(PART3_N_HIDDEN,
                                                      &bn)) != 0 ||
        tg_sequential_append(net, tg_tanh_new()) != 0 ||
        tg_sequential_append(net, tg_linear_new(PART3_N_HIDDEN, vocab_size,
                                                true)) != 0) {
        tg_module_free(net);
        return NULL;
    }
    /* the raw network's values: a Linear holds W as (out, in) */
    tg_tensor *w1t = tg_transpose(init->W1, 0, 1);
    tg_tensor *w2t = tg_transpose(init->W2, 0, 1);
    int rc = w1t && w2t && copy_into(net, "0.weight", init->C) == 0 &&
                     copy_into(net, "2.weight", w1t) == 0 &&
                     copy_into(net, "5.weight", w2t) == 0 &&
                     copy_into(net, "5.bias", init->b2) == 0
                 ? 0
                 : -1;
    tg_release(w2t);
    tg_release(w1t);
    if (rc != 0) {
        tg_module_free(net);
        return NULL;
    }
    return net;
}

int part3_modules_step(tg_module *net, const tg_dataset *train,
                       tg_generator *g, double lr, double *loss)
{
    tg_tensor *ix, *xb, *yb;
    int rc = draw_batch(train, g, &ix, &xb, &yb);
    /* x = Xb; for layer in layers: x = layer(x) */
    tg_tensor *logits = rc == 0 ? tg_module_forward(net, xb) : NULL;
    tg_tensor *l = tg_cross_entropy(logits, yb, TG_REDUCTION_MEAN);

    tg_named_tensor params[16];
    int n = tg_module_named_parameters(net, params, 16);
    tg_tensor *p[16];
    for (int i = 0; i < n && i < 16; i++) {
        p[i] = params[i].tensor;
        tg_clear_grad(p[i]);
    }
    if (!l || n < 0 || n > 16 || tg_backward(l) != 0 ||
        part3_sgd_update(p, n, lr) != 0)
        rc = -1;
    *loss = l ? tg_item(l) : NAN;
    tg_release(l);
    tg_release(logits);
    tg_release(yb);
    tg_release(xb);
    tg_release(ix);
    return rc;
}

tg_tensor *part3_modules_logits(void *net, const tg_tensor *x)
{
    tg_module_train(net, false);
    tg_tensor *logits = tg_module_forward(net, x);
    tg_module_train(net, true);
    return logits;
}

/* -------------------------------------------------- the deeper network */

tg_module *part3_deep_new(int64_t vocab, tg_generator *g)
{
    tg_batch_norm_config bn = tg_batch_norm_config_defaults();
    bn.correction = 1; // x.var(0, keepdim=True): the unbiased variance
    tg_module *net = tg_sequential_new(NULL, 0);
    if (!net || tg_sequential_append(net, tg_embedding_new(vocab,
                                                           PART3_N_EMBD)) ||
        tg_sequential_append(net, tg_flatten_new(1, -1))) {
        tg_module_free(net);
        return NULL;
    }
    /* C = torch.randn((vocab_size, n_embd), generator=g) */
    tg_tensor *c = tg_randn_gen(g, TG_SHAPE(vocab, PART3_N_EMBD),
                                TG_FLOAT32);
    int rc = c ? 0 : -1;
    tg_no_grad_begin();
    if (rc == 0)
        rc = tg_copy_(tg_module_parameter(net, "0.weight"), c);
    tg_release(c);
    for (int l = 0; l <= PART3_DEEP_DEPTH && rc == 0; l++) {
        int64_t in = l == 0 ? PART3_N_EMBD * PART3_BLOCK_SIZE
                            : PART3_DEEP_HIDDEN;
        int64_t out = l == PART3_DEEP_DEPTH ? vocab : PART3_DEEP_HIDDEN;
        tg_module *lin = tg_linear_new(in, out, false);
        tg_module *norm = tg_batch_norm1d_new(out, &bn);
        /* Linear(fan_in, fan_out, bias=False): self.weight =
         * torch.randn((fan_in, fan_out), generator=g) / fan_in**0.5 */
        tg_tensor *r = tg_randn_gen(g, TG_SHAPE(in, out), TG_FLOAT32);
        tg_tensor *w = tg_div_scalar(r, pow((double)in, 0.5));
        tg_tensor *wt = tg_transpose(w, 0, 1);
        rc = lin && norm && wt ? tg_copy_(tg_module_parameter(lin, "weight"),
                                          wt)
                               : -1;
        /* layers[-1].gamma *= 0.1: the last layer less confident */
        if (rc == 0 && l == PART3_DEEP_DEPTH) {
            tg_tensor *gamma = tg_module_parameter(norm, "weight");
            tg_tensor *scaled = tg_mul_scalar(gamma, 0.1);
            rc = scaled ? tg_copy_(gamma, scaled) : -1;
            tg_release(scaled);
        }
        tg_release(wt);
        tg_release(w);
        tg_release(r);
        /* each append takes the layer, also when it fails */
        if (tg_sequential_append(net, lin) != 0)
            rc = -1;
        if (tg_sequential_append(net, norm) != 0)
            rc = -1;
        if (l < PART3_DEEP_DEPTH &&
            tg_sequential_append(net, tg_tanh_new()) != 0)
            rc = -1;
    }
    tg_no_grad_end();
    if (rc != 0) {
        tg_module_free(net);
        return NULL;
    }
    return net;
}

/* x = emb.view(...); for layer in layers: x = layer(x), keeping each Tanh
 * output in acts[] (new references, their gradients retained). */
tg_tensor *part3_deep_forward(tg_module *net, const tg_tensor *x,
                              tg_tensor **acts)
{
    tg_tensor *h = NULL;
    int n = tg_module_num_children(net), a = 0;
    for (int i = 0; i < n; i++) {
        tg_module *child = tg_module_child_at(net, i);
        tg_tensor *next = tg_module_forward(child, i == 0 ? x : h);
        tg_release(h);
        h = next;
        if (!h)
            return NULL;
        if (strcmp(tg_module_get_type(child)->name, "Tanh") == 0) {
            /* layer.out.retain_grad() */
            if (tg_retain_grad(h) != 0) {
                tg_release(h);
                return NULL;
            }
            acts[a++] = tg_retain(h);
        }
    }
    return h;
}

int part3_deep_step(tg_module *net, const tg_dataset *train, tg_generator *g,
                    double lr, tg_tensor **acts, double *loss)
{
    tg_tensor *ix, *xb, *yb;
    int rc = draw_batch(train, g, &ix, &xb, &yb);
    for (int l = 0; l < PART3_DEEP_DEPTH; l++)
        acts[l] = NULL;
    /* emb = C[Xb]; x = emb.view(...); for layer in layers: x = layer(x) */
    tg_tensor *logits = rc == 0 ? part3_deep_forward(net, xb, acts) : NULL;
    tg_tensor *l = tg_cross_entropy(logits, yb, TG_REDUCTION_MEAN);
    tg_named_tensor params[32];
    int n = tg_module_named_parameters(net, params, 32);
    tg_tensor *p[32];
    for (int i = 0; i < n && i < 32; i++) {
        p[i] = params[i].tensor;
        tg_clear_grad(p[i]); // p.grad = None
    }
    if (!l || n < 0 || n > 32 || tg_backward(l) != 0 ||
        part3_sgd_update(p, n, lr) != 0)
        rc = -1;
    *loss = l ? tg_item(l) : NAN;
    tg_release(l);
    tg_release(logits);
    tg_release(yb);
    tg_release(xb);
    tg_release(ix);
    return rc;
}

/* ------------------------------------------------------------ progress */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void part3_progress_start(part3_progress *p, FILE *out, int64_t total)
{
    p->out = out;
    p->tty = isatty(fileno(out)) == 1;
    p->started = now_seconds();
    p->last_shown = 0.0;
    p->total = total;
}

void part3_progress_show(part3_progress *p, int64_t step, double loss)
{
    if (!p->tty)
        return;
    double now = now_seconds();
    if (now - p->last_shown < 0.1 && step < p->total)
        return;
    p->last_shown = now;
    double rate = (double)step / (now - p->started);
    double eta = rate > 0 ? (double)(p->total - step) / rate : 0.0;
    long long e = (long long)(eta + 0.5);
    fprintf(p->out, "\r\033[Kstep %lld/%lld  loss %.4f  %.0f steps/s  "
                    "ETA %lldm%02llds",
            (long long)step, (long long)p->total, loss, rate, e / 60,
            e % 60);
    fflush(p->out);
}

void part3_progress_clear(part3_progress *p)
{
    if (p->tty) {
        fputs("\r\033[K", p->out);
        fflush(p->out);
    }
}

double part3_progress_elapsed(const part3_progress *p)
{
    return now_seconds() - p->started;
}
