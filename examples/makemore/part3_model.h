/*
 * examples/makemore/part3_model.h - makemore part 3's network (Karpathy,
 * "Building makemore Part 3: Activations & Gradients, BatchNorm",
 * makemore_part3_bn.ipynb) written with tapegrad, in the two forms of the
 * lecture: the raw tensors C, W1, W2, b2 with BatchNorm written out by
 * hand, and the same network made of the library's modules (Embedding,
 * Flatten, Linear, BatchNorm1d, Tanh, Linear).
 *
 * What part3_mlp.c and part3_modules.c run, and what
 * tests/examples/test_makemore_part3.c checks against PyTorch: one file
 * of training code for both, so that the test checks the code the demos
 * run. It is not part of the library (names start with part3_, not tg_).
 * Functions return 0, or -1 after a library error (printed by the
 * library's handler and kept in tg_last_error()).
 */
#ifndef TG_EXAMPLES_PART3_MODEL_H
#define TG_EXAMPLES_PART3_MODEL_H

#include "tapegrad.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The lecture's settings. */
#define PART3_BLOCK_SIZE 3     // context length
#define PART3_N_EMBD 10        // embedding dimensions per character
#define PART3_N_HIDDEN 200     // hidden units
#define PART3_BATCH 32         // mini-batch size
#define PART3_SEED 2147483647  // torch.Generator().manual_seed(...)
#define PART3_SPLIT_SEED 42    // random.seed(42) before the shuffle
#define PART3_MAX_STEPS 200000 // max_steps
#define PART3_DECAY_AT 100000  // lr 0.1 before this step, 0.01 from it
#define PART3_NAME_MAX 256     // longest sampled name kept, '.' included

/* The data: names.txt split as the lecture splits it. With max_words > 0
 * (fewer than the file has), the first max_words of the shuffled list
 * are split 80/10/10 instead: a small data set for quick runs (the whole
 * list gives the lecture's split). */
typedef struct part3_data {
    tg_words *words;
    int64_t vocab_size;            // 27 for names.txt
    tg_dataset train, val, test;   // Xtr/Ytr, Xdev/Ydev, Xte/Yte
} part3_data;
int part3_data_load(const char *path, int64_t max_words, part3_data *d);
void part3_data_free(part3_data *d);

/* The raw network of the lecture's "MLP revisited" cell. */
typedef struct part3_mlp {
    tg_tensor *C;              // (vocab, 10) embedding table
    tg_tensor *W1;             // (30, 200), no b1: BatchNorm follows
    tg_tensor *W2;             // (200, vocab)
    tg_tensor *b2;             // (vocab,)
    tg_tensor *bngain;         // (1, 200)
    tg_tensor *bnbias;         // (1, 200)
    tg_tensor *bnmean_running; // (1, 200), no gradient
    tg_tensor *bnstd_running;  // (1, 200), no gradient
} part3_mlp;
/* Draws C, W1, W2, b2 from g in the lecture's order and scale. */
int part3_mlp_init(part3_mlp *m, int64_t vocab_size, tg_generator *g);
void part3_mlp_free(part3_mlp *m);
/* The trained tensors [C, W1, W2, b2, bngain, bnbias] (borrowed), as the
 * lecture's `parameters` list. */
#define PART3_NPARAMS 6
void part3_mlp_parameters(const part3_mlp *m, tg_tensor **out);

/* One training step of the lecture's loop: a batch ix drawn from g, the
 * forward pass with batch statistics, the running statistics updated,
 * backward, and p += -lr * grad. *loss receives loss.item(); ix, when not
 * NULL, a new reference to the batch's row indices. */
int part3_mlp_step(part3_mlp *m, const tg_dataset *train, tg_generator *g,
                   double lr, double *loss, tg_tensor **ix);

/* The logits of a batch of contexts x (N, 3) in eval form: the raw
 * network normalises with its running statistics (split_loss), the
 * modules with theirs (eval mode). New reference. */
typedef tg_tensor *part3_logits_fn(void *model, const tg_tensor *x);
tg_tensor *part3_mlp_logits(void *mlp, const tg_tensor *x);

/* split_loss: the cross-entropy over a whole split, no tape. */
int part3_split_loss(part3_logits_fn *f, void *model, const tg_dataset *d,
                     double *loss);
/* One name sampled as the lecture's sampling cell does: from the context
 * "...", ix = multinomial(softmax(logits), 1, generator=g) until ix is 0.
 * Writes the characters, the final '.' included, into buf (cut at
 * PART3_NAME_MAX - 1 characters). */
int part3_sample(part3_logits_fn *f, void *model, const char *itos,
                 tg_generator *g, char buf[PART3_NAME_MAX]);

/* The learning rate of step i (from 0): 0.1, then 0.01 from decay_at. */
double part3_lr(int64_t i, int64_t decay_at);
/* for p in parameters: p.data += -lr * p.grad */
int part3_sgd_update(tg_tensor *const *params, int n, double lr);

/* The same network from the library's modules:
 *   Embedding(vocab, 10), Flatten(), Linear(30, 200, bias=False),
 *   BatchNorm1d(200, eps=0, momentum=0.001, correction=1), Tanh(),
 *   Linear(200, vocab)
 * with the raw network's initial values copied in (Linear keeps W as
 * (out, in): it gets W1^T and W2^T), so both start from the same numbers.
 * eps 0 and the unbiased variance normalise as the lecture's hand-written
 * BatchNorm does; the running statistics differ (see part3_modules.c). A
 * new module, which the caller frees with tg_module_free(); NULL on
 * error. */
tg_module *part3_modules_new(const part3_mlp *init, int64_t vocab_size);
/* One training step of the modules, with the batch drawn from g as in
 * part3_mlp_step and the same update. */
int part3_modules_step(tg_module *net, const tg_dataset *train,
                       tg_generator *g, double lr, double *loss);
/* The logits in eval mode (running statistics); the module is put back
 * in training mode. */
tg_tensor *part3_modules_logits(void *net, const tg_tensor *x);

/* The deeper network of the lecture's last section, from modules:
 *   Embedding(vocab, 10) -> Flatten()
 *   -> 5 x [Linear(., 100, bias=False) -> BatchNorm1d(100) -> Tanh()]
 *   -> Linear(100, vocab, bias=False) -> BatchNorm1d(vocab)
 * BatchNorm1d with correction 1 (the lecture's class normalises with
 * x.var(0), unbiased), eps 1e-5, momentum 0.1. C and the weights are
 * drawn from g in the lecture's order, each weight
 * randn((fan_in, fan_out)) / fan_in**0.5 (a Linear gets its transpose),
 * and the last BatchNorm's gain is 0.1. A new module (tg_module_free), or
 * NULL on error. */
#define PART3_DEEP_DEPTH 5
#define PART3_DEEP_HIDDEN 100
tg_module *part3_deep_new(int64_t vocab_size, tg_generator *g);
/* The logits of x, keeping each Tanh output in acts[0 .. 5) (new
 * references, with their gradients retained: layer.out.retain_grad()).
 * New reference, or NULL. */
tg_tensor *part3_deep_forward(tg_module *net, const tg_tensor *x,
                              tg_tensor **acts);
/* One training step of the lecture's loop for it: a batch from g, the
 * forward keeping acts (as part3_deep_forward: new references, NULL after
 * an error), backward, p += -lr * grad. *loss receives loss.item(). */
int part3_deep_step(tg_module *net, const tg_dataset *train, tg_generator *g,
                    double lr, tg_tensor **acts, double *loss);

/* ------------------------------------------------------------ progress */

/* A progress line ("step 12000/200000  loss 2.1234  1520 steps/s  ETA
 * 2m05s") rewritten in place when out is a terminal, else nothing: a log
 * file gets the lecture's lines only. */
typedef struct part3_progress {
    FILE *out;
    bool tty;
    double started, last_shown;
    int64_t total;
} part3_progress;
void part3_progress_start(part3_progress *p, FILE *out, int64_t total);
/* Shows step (done steps) at most 10 times a second. */
void part3_progress_show(part3_progress *p, int64_t step, double loss);
/* Clears the line (before a lecture line is printed over it). */
void part3_progress_clear(part3_progress *p);
/* Seconds since part3_progress_start. */
double part3_progress_elapsed(const part3_progress *p);

#endif
