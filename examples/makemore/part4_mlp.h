/*
 * examples/makemore/part4_mlp.h - the network of makemore part 4,
 * "becoming a backprop ninja": a character MLP with one BatchNorm layer,
 * its forward pass cut into every intermediate the lecture names, and the
 * lecture's backward passes written out with tensor ops.
 *
 *   emb = C[Xb]                    (n, block_size, n_embd)
 *   embcat = emb.view(n, -1)       (n, block_size * n_embd)
 *   hprebn = embcat @ W1 + b1      (n, n_hidden)
 *   BatchNorm with the unbiased variance (1/(n-1)), as the lecture
 *   h = tanh(bngain * bnraw + bnbias)
 *   logits = h @ W2 + b2           (n, vocab)
 *   loss = cross-entropy, as max, exp, sum, 1/sum, log, mean
 *
 * Shared by part4_backprop.c (exercises 1 to 3 of the lecture),
 * part4_train.c (exercise 4), their test against PyTorch and the graders
 * of exercises 14 and 16. Not part of the library: names start with p4_.
 * Everything is float32, as in the lecture.
 */
#ifndef TG_EXAMPLES_PART4_MLP_H
#define TG_EXAMPLES_PART4_MLP_H

#include "tapegrad.h"

/* torch.Generator().manual_seed(2147483647), the lecture's g */
#define P4_SEED UINT64_C(2147483647)
/* The seed a fresh PyTorch process's default generator starts with. The
 * lecture draws bngain and bnbias from that generator (torch.randn with no
 * generator=g), so a fresh process is the only state that reproduces it. */
#define P4_TORCH_DEFAULT_SEED UINT64_C(67280421310721)

/* The parameters, in the lecture's order: parameters = [C, W1, b1, W2,
 * b2, bngain, bnbias]. Owned. */
typedef struct p4_params {
    tg_tensor *C;      // (vocab, n_embd)
    tg_tensor *W1;     // (block_size * n_embd, n_hidden)
    tg_tensor *b1;     // (n_hidden,)
    tg_tensor *W2;     // (n_hidden, vocab)
    tg_tensor *b2;     // (vocab,)
    tg_tensor *bngain; // (1, n_hidden)
    tg_tensor *bnbias; // (1, n_hidden)
} p4_params;
#define P4_NPARAMS 7
/* The parameters as an array, in the order above; names for printing. */
tg_tensor **p4_params_list(p4_params *p, tg_tensor *out[P4_NPARAMS]);
extern const char *const p4_param_names[P4_NPARAMS];

/* The lecture's initialisation ("non-standard on purpose: all zeros could
 * mask a wrong backward"): C, W1 * (5/3)/sqrt(n_embd * block_size),
 * b1 * 0.1, W2 * 0.1, b2 * 0.1 drawn from g in that order; bngain =
 * randn * 0.1 + 1 and bnbias = randn * 0.1 drawn from torch_default (the
 * lecture's unseeded default generator). Returns 0, or -1 after an error
 * (nothing to free then). */
int p4_params_init(p4_params *p, int64_t vocab, int64_t n_embd,
                   int64_t block_size, int64_t n_hidden, tg_generator *g,
                   tg_generator *torch_default);
void p4_params_free(p4_params *p);
/* sum(p.nelement() for p in parameters) */
int64_t p4_params_count(const p4_params *p);

/* ix = torch.randint(0, N, (batch_size,), generator=g); Xb, Yb = X[ix],
 * Y[ix]. New references in *xb and *yb. Returns 0 or -1. */
int p4_batch(const tg_dataset *train, int64_t batch_size, tg_generator *g,
             tg_tensor **xb, tg_tensor **yb);

/* Every intermediate of the lecture's forward, in order. Owned. */
typedef struct p4_forward {
    tg_tensor *emb, *embcat, *hprebn;
    tg_tensor *bnmeani, *bndiff, *bndiff2, *bnvar, *bnvar_inv, *bnraw;
    tg_tensor *hpreact, *h, *logits;
    tg_tensor *logit_maxes, *norm_logits, *counts, *counts_sum,
        *counts_sum_inv, *probs, *logprobs, *loss;
} p4_forward;
#define P4_NFORWARD 20

/* The forward "chunkated into smaller steps", on xb (n, block_size) and
 * yb (n,) int64. With gradients enabled and parameters that require grad,
 * every intermediate (not the loss) gets tg_retain_grad, as the lecture's
 * loop over them does. Returns 0, or -1 after an error (f is then
 * empty). */
int p4_forward_run(const p4_params *p, const tg_tensor *xb,
                   const tg_tensor *yb, p4_forward *f);
void p4_forward_free(p4_forward *f);

/* A gradient for each parameter and each intermediate: the lecture's
 * dC, dW1, ..., dlogprobs. Owned; a NULL entry has not been computed. */
typedef struct p4_grads {
    tg_tensor *C, *W1, *b1, *W2, *b2, *bngain, *bnbias;
    tg_tensor *emb, *embcat, *hprebn;
    tg_tensor *bnmeani, *bndiff, *bndiff2, *bnvar, *bnvar_inv, *bnraw;
    tg_tensor *hpreact, *h, *logits;
    tg_tensor *logit_maxes, *norm_logits, *counts, *counts_sum,
        *counts_sum_inv, *probs, *logprobs;
} p4_grads;
void p4_grads_free(p4_grads *d);

/* One row per cmp line of the lecture's exercise 1, in its order: the
 * name, the hand gradient in d and the variable whose .grad it must
 * equal. Fills rows (room for P4_NCMP) and returns their number. */
#define P4_NCMP 26
typedef struct p4_cmp_row {
    const char *name;
    const tg_tensor *dt;
    const tg_tensor *t;
} p4_cmp_row;
int p4_cmp_rows(const p4_params *p, const p4_forward *f, const p4_grads *d,
                p4_cmp_row rows[P4_NCMP]);

/* Exercise 1: backprop through every intermediate, one at a time, as
 * the lecture writes it. Needs no tape. Returns 0 or -1. */
int p4_backward_manual(const p4_params *p, const p4_forward *f,
                       const tg_tensor *xb, const tg_tensor *yb,
                       p4_grads *d);
/* Exercise 2: dlogits of the mean cross-entropy in one expression:
 * (softmax(logits, 1) - one_hot(y)) / n. New reference. */
tg_tensor *p4_cross_entropy_backward(const tg_tensor *logits,
                                     const tg_tensor *yb);
/* Exercise 3: dhprebn from dhpreact through the BatchNorm in one
 * expression, with the unbiased variance's factor n/(n-1):
 * bngain * bnvar_inv / n * (n dhpreact - sum0(dhpreact)
 *                           - n/(n-1) bnraw sum0(dhpreact * bnraw)).
 * New reference. */
tg_tensor *p4_batch_norm_backward(const tg_tensor *dhpreact,
                                  const tg_tensor *bngain,
                                  const tg_tensor *bnvar_inv,
                                  const tg_tensor *bnraw);
/* dC from demb (n, block_size, n_embd): for each k, j, dC[Xb[k, j]] +=
 * demb[k, j], in that order, into a new zero (vocab, n_embd) tensor. New
 * reference. */
tg_tensor *p4_embedding_backward(const tg_tensor *demb, const tg_tensor *xb,
                                 int64_t vocab);

/* ------------------------------------------------ exercise 4: training */

/* One training step with the manual backward only (no tape): the
 * forward of exercise 4 (F.cross_entropy, BatchNorm in three lines), the
 * backward of exercises 2 and 3, and p -= lr * grad. Stores the batch
 * loss in *loss. When grads is not NULL it receives the seven parameter
 * gradients (new references, the order of p4_params_list) instead of
 * them being released. Returns 0 or -1. */
int p4_train_step(p4_params *p, const tg_tensor *xb, const tg_tensor *yb,
                  double lr, double *loss, tg_tensor *grads[P4_NPARAMS]);

/* The BatchNorm statistics over a whole set ("calibrate the batch norm at
 * the end of training"): the mean and unbiased variance of hpreact, each
 * (1, n_hidden), new references. Returns 0 or -1. */
int p4_calibrate(const p4_params *p, const tg_tensor *x, tg_tensor **bnmean,
                 tg_tensor **bnvar);
/* The mean cross-entropy of the set (x, y) with the calibrated
 * statistics (split_loss), or NAN after an error. */
double p4_split_loss(const p4_params *p, const tg_tensor *bnmean,
                     const tg_tensor *bnvar, const tg_tensor *x,
                     const tg_tensor *y);
/* One name sampled from the model as the lecture's sampling cell: writes
 * the characters (the final '.' included) into out (size bytes) with
 * itos. Returns 0 or -1. */
int p4_sample(const p4_params *p, const tg_tensor *bnmean,
              const tg_tensor *bnvar, int64_t block_size, const char *itos,
              tg_generator *g, char *out, size_t size);

#endif
