/*
 * examples/tutorial/06_layernorm_vs_batchnorm.c - the program of tutorial
 * chapter 6 (docs/tutorial/06-layernorm-vs-batchnorm.md): which numbers
 * LayerNorm and BatchNorm average over in an (N, C) batch, BatchNorm's
 * running statistics and its train and eval modes, why sum(BN(x)) is a
 * useless loss for checking a backward, and the fused ops against the
 * composed ones.
 *
 * Sections run in the chapter's order. The derivations of both backwards
 * are in docs/normalization.md; this program only shows behaviour. Every
 * claim the chapter makes from these numbers is also checked: the program
 * exits 1 when one does not hold or when a tensor is left alive.
 */
#include "tapegrad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int surprises; // claims that did not hold

static void claim(bool ok, const char *what)
{
    if (!ok) {
        surprises++;
        printf("UNEXPECTED: %s\n", what);
    }
}

/* Prints a label and a tensor's values (without its grad_fn). */
static void show(const char *label, const tg_tensor *t)
{
    tg_tensor *values = tg_detach(t);
    printf("%s\n", label);
    tg_print(values);
    tg_release(values);
}

/* max |t| over all elements; NaN for NULL. */
static double max_abs(const tg_tensor *t)
{
    tg_tensor *a = tg_abs(t);
    tg_tensor *m = tg_max(a, NULL, 0, false);
    double v = tg_item(m);
    tg_release(m);
    tg_release(a);
    return v;
}

static double max_diff(const tg_tensor *a, const tg_tensor *b)
{
    tg_tensor *d = tg_sub(a, b);
    double v = max_abs(d);
    tg_release(d);
    return v;
}

/* Prints the values of a small 1-D tensor as (a, b, ...) with 4 decimals;
 * values that round to zero print as 0.0000, without a sign. */
static void print_values(const tg_tensor *t)
{
    double v[16];
    int64_t n = t && t->numel <= 16 ? t->numel : 0;
    if (n == 0 || tg_to_f64_array(t, v) != 0) {
        printf("(?)");
        return;
    }
    for (int64_t i = 0; i < n; i++)
        printf("%s%.4f", i ? ", " : "(", fabs(v[i]) < 5e-5 ? 0.0 : v[i]);
    printf(")");
}

/* Prints the mean and biased variance of t along dim (0: each column, over
 * the batch; -1: each row, over the features); what is "row" or
 * "column". */
static void stats(const tg_tensor *t, int dim, const char *what)
{
    tg_tensor *m = tg_mean(t, &dim, 1, false);
    tg_tensor *v = tg_var(t, &dim, 1, 0, false);
    char label[32];
    snprintf(label, sizeof label, "%s means:", what);
    printf("  %-18s", label);
    print_values(m);
    snprintf(label, sizeof label, "%s variances:", what);
    printf("\n  %-18s", label);
    print_values(v);
    printf("\n");
    tg_release(v);
    tg_release(m);
}

/* ------------------------------------------- 1. which numbers form a group */

static void groups(void)
{
    printf("== 1. Which numbers form a group ==\n");
    /* 4 examples (rows) of 3 features (columns) on very different scales */
    tg_tensor *x = tg_from_array((float[]){1, 10, 100,
                                           2, 20, 300,
                                           3, 30, 500,
                                           4, 40, 700},
                                 TG_SHAPE(4, 3), TG_FLOAT32);
    show("x (N, C) = (4, 3)", x);

    /* F.layer_norm(x, (3,)): each row over its C = 3 features */
    tg_tensor *ln = tg_layer_norm(x, TG_SHAPE(3), NULL, NULL, 1e-5);
    /* F.batch_norm(x, None, None, training=True): each column over the
     * N = 4 examples of the batch */
    tg_tensor *bn = tg_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1,
                                  1e-5);
    show("LayerNorm(x): each row normalised", ln);
    stats(ln, -1, "row");
    show("BatchNorm(x): each column normalised", bn);
    stats(bn, 0, "column");

    /* BatchNorm makes the three columns equal here: each column of x is
     * an affine function a + b * (1, 2, 3, 4) with b > 0, and
     * normalising removes a and b. */
    tg_tensor *c0 = tg_select(bn, 1, 0), *c2 = tg_select(bn, 1, 2);
    claim(max_diff(c0, c2) < 1e-5, "BN(x) has equal columns");
    tg_release(c2);
    tg_release(c0);
    tg_release(bn);
    tg_release(ln);
    tg_release(x);
}

/* ------------------------------------- 2. running statistics, train, eval */

/* A batch of 16 examples of 3 features with means (0, 5, -5) and standard
 * deviations (1, 2, 3): x = z * std + mean, z ~ N(0, 1). */
static tg_tensor *batch(tg_generator *g)
{
    tg_tensor *z = tg_randn_gen(g, TG_SHAPE(16, 3), TG_FLOAT32);
    tg_tensor *s = tg_from_array((float[]){1, 2, 3}, TG_SHAPE(3),
                                 TG_FLOAT32);
    tg_tensor *m = tg_from_array((float[]){0, 5, -5}, TG_SHAPE(3),
                                 TG_FLOAT32);
    tg_tensor *zs = tg_mul(z, s);
    tg_tensor *x = tg_add(zs, m);
    tg_release(zs);
    tg_release(m);
    tg_release(s);
    tg_release(z);
    return x;
}

static void running_stats(void)
{
    printf("\n== 2. Train and eval: BatchNorm's running statistics ==\n");
    tg_module *bn = tg_batch_norm1d_new(3, NULL); // nn.BatchNorm1d(3)
    tg_module_print(bn);
    tg_tensor *rm = tg_module_buffer(bn, "running_mean"); // borrowed
    tg_tensor *rv = tg_module_buffer(bn, "running_var");
    tg_generator *g = tg_generator_new(6);

    printf("the data: features of mean (0, 5, -5), variance (1, 4, 9)\n");
    printf("batch  running_mean               running_var\n");
    printf("%5d  (%6.3f, %6.3f, %6.3f)   (%6.3f, %6.3f, %6.3f)\n", 0, 0.0,
           0.0, 0.0, 1.0, 1.0, 1.0);
    for (int step = 1; step <= 50; step++) {
        tg_tensor *x = batch(g);
        tg_tensor *y = tg_module_forward(bn, x); // training mode
        if (step <= 3 || step == 10 || step == 50) {
            double m[3], v[3];
            tg_to_f64_array(rm, m);
            tg_to_f64_array(rv, v);
            printf("%5d  (%6.3f, %6.3f, %6.3f)   (%6.3f, %6.3f, %6.3f)\n",
                   step, m[0], m[1], m[2], v[0], v[1], v[2]);
        }
        tg_release(y);
        tg_release(x);
    }
    printf("num_batches_tracked = %g\n",
           tg_item(tg_module_buffer(bn, "num_batches_tracked")));

    /* One example at a time: impossible in training mode (a variance of
     * one value), fine in eval mode, which uses the running statistics. */
    tg_tensor *one = tg_from_array((float[]){0, 5, -5}, TG_SHAPE(1, 3),
                                   TG_FLOAT32);
    tg_error_handler prev = tg_set_error_handler(tg_error_handler_quiet);
    tg_tensor *y_train = tg_module_forward(bn, one);
    tg_set_error_handler(prev);
    printf("training mode, a batch of one example:\n%s\n",
           y_train ? "(no error)" : tg_last_error());
    claim(y_train == NULL, "a batch of one is refused in training mode");
    tg_module_train(bn, false); // bn.eval()
    tg_tensor *y_eval = tg_module_forward(bn, one);
    show("eval mode, the example (0, 5, -5), the features' true means:",
         y_eval);
    claim(y_eval && max_abs(y_eval) < 0.5,
          "eval maps the true means close to 0");
    tg_release(y_eval);
    tg_release(y_train);
    tg_release(one);
    tg_generator_free(g);
    tg_module_free(bn);
}

/* ------------------------------------------------- 3. the sum(BN(x)) trap */

/* A BatchNorm (training, no affine part, no running statistics) as a
 * tg_function whose backward forgets the path through the variance: it
 * treats invstd as a constant. The correct backward has one more term,
 * -xhat * mean(g * xhat) (docs/normalization.md, section 4). */
static tg_tensor *bn_forward(tg_ctx *ctx, const tg_tensor *const *in,
                             int nin, const void *args)
{
    (void)nin, (void)args;
    tg_tensor *invstd = NULL;
    tg_tensor *y = tg_batch_norm_ex(in[0], NULL, NULL, NULL, NULL, NULL,
                                    NULL, &invstd);
    tg_ctx_save(ctx, invstd); // (C,)
    tg_release(invstd);
    return y;
}

static int bn_backward_wrong(tg_ctx *ctx, const tg_tensor *g,
                             tg_tensor **grad_in)
{
    const tg_tensor *invstd = tg_ctx_saved(ctx, 0);
    tg_tensor *g_mean = tg_mean(g, TG_DIMS(0), true);  // (1, C)
    tg_tensor *centred = tg_sub(g, g_mean);            // (N, C)
    grad_in[0] = tg_mul(centred, invstd);              // missing xhat term
    tg_release(centred);
    tg_release(g_mean);
    return grad_in[0] ? 0 : -1;
}

static const tg_function bn_wrong_fn = {"WrongBatchNormBackward",
                                        bn_forward, bn_backward_wrong, 0};

/* What gradcheck differentiates: sum(y), or sum(y * r) for a fixed random
 * r, with y = BN(x) computed by the library's tg_batch_norm or by the
 * tg_function above. */
typedef struct loss_ctx {
    bool wrong;        // the tg_function above instead of tg_batch_norm
    const tg_tensor *r; // the weighting, or NULL for a plain sum
} loss_ctx;

static tg_tensor *bn_loss(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    const loss_ctx *c = user;
    const tg_tensor *x = in[0];
    tg_tensor *y = c->wrong ? tg_function_apply(&bn_wrong_fn, &x, 1, NULL)
                            : tg_batch_norm(x, NULL, NULL, NULL, NULL, true,
                                            0.1, 1e-5);
    tg_tensor *yr = c->r ? tg_mul(y, c->r) : tg_retain(y);
    tg_tensor *loss = tg_sum(yr, NULL, 0, false);
    tg_release(yr);
    tg_release(y);
    return loss;
}

static void sum_trap(void)
{
    printf("\n== 3. The sum(BN(x)) trap ==\n");
    tg_generator *g = tg_generator_new(7);
    tg_tensor *x = tg_randn_gen(g, TG_SHAPE(6, 4), TG_FLOAT64);
    tg_tensor *r = tg_randn_gen(g, TG_SHAPE(6, 4), TG_FLOAT64);
    tg_set_requires_grad(x, true);

    /* the gradient of sum(BN(x)) with the library's correct backward */
    loss_ctx plain = {false, NULL};
    tg_tensor *s = bn_loss((const tg_tensor *[]){x}, 1, &plain);
    tg_backward(s);
    printf("sum(BN(x)) = %.1e for any x; max |d sum(BN(x)) / dx| = %.1e\n",
           fabs(tg_item(s)), max_abs(x->grad));
    claim(max_abs(x->grad) < 1e-12, "sum(BN(x)) has a zero gradient");
    tg_release(s);
    tg_clear_grad(x);

    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    const char *labels[4] = {
        "library's backward, loss sum(y)    ",
        "library's backward, loss sum(y * r)",
        "wrong backward,     loss sum(y)    ",
        "wrong backward,     loss sum(y * r)",
    };
    const int expected[4] = {1, 1, 1, 0}; // the trap: the third passes
    for (int i = 0; i < 4; i++) {
        loss_ctx c = {i >= 2, i % 2 ? r : NULL};
        tg_gradcheck_result res;
        int verdict = tg_gradcheck(bn_loss, &c, &x, 1, &o, &res);
        printf("%s  gradcheck %s", labels[i],
               verdict == 1 ? "passes" : "FAILS");
        if (verdict == 0)
            printf(" (element %lld: analytical %.4f, numerical %.4f)",
                   (long long)res.input_index, res.analytical,
                   res.numerical);
        printf("\n");
        claim(verdict == expected[i], labels[i]);
    }
    tg_release(r);
    tg_release(x);
    tg_generator_free(g);
}

/* ------------------------------------------------ 4. fused and composed */

static void fused_and_composed(void)
{
    printf("\n== 4. Fused and composed ==\n");
    tg_generator *g = tg_generator_new(8);
    tg_tensor *x = tg_randn_gen(g, TG_SHAPE(6, 4), TG_FLOAT64);
    tg_tensor *w = tg_randn_gen(g, TG_SHAPE(4), TG_FLOAT64);
    tg_tensor *b = tg_randn_gen(g, TG_SHAPE(4), TG_FLOAT64);
    tg_tensor *r = tg_randn_gen(g, TG_SHAPE(6, 4), TG_FLOAT64);
    tg_tensor *leaves[3] = {x, w, b};
    for (int i = 0; i < 3; i++)
        tg_set_requires_grad(leaves[i], true);

    /* the same BatchNorm (training, no running statistics) in both forms */
    tg_batch_norm_options o = tg_batch_norm_defaults();
    tg_tensor *y[2], *grads[2][3];
    const char *names[2] = {"tg_batch_norm", "tg_batch_norm_composed"};
    for (int k = 0; k < 2; k++) {
        int64_t before = tg_tape_size();
        y[k] = k == 0 ? tg_batch_norm_ex(x, NULL, NULL, w, b, &o, NULL, NULL)
                      : tg_batch_norm_composed(x, NULL, NULL, w, b, &o);
        printf("%-24s nodes on the tape: %2lld, grad_fn %s\n", names[k],
               (long long)(tg_tape_size() - before), tg_grad_fn_name(y[k]));
        /* backward of sum(y * r); keep each leaf's gradient, then clear */
        tg_tensor *yr = tg_mul(y[k], r);
        tg_tensor *loss = tg_sum(yr, NULL, 0, false);
        tg_backward(loss);
        for (int i = 0; i < 3; i++) {
            grads[k][i] = tg_clone(leaves[i]->grad);
            tg_clear_grad(leaves[i]);
        }
        tg_release(loss);
        tg_release(yr);
    }
    double dy = max_diff(y[0], y[1]);
    double dg = 0;
    for (int i = 0; i < 3; i++)
        dg = fmax(dg, max_diff(grads[0][i], grads[1][i]));
    printf("max |fused - composed|: outputs %.1e, gradients of x, w, b "
           "%.1e\n", dy, dg);
    claim(dy < 1e-12 && dg < 1e-12, "fused and composed agree");

    /* LayerNorm over the 4 features, both forms */
    int64_t before = tg_tape_size();
    tg_tensor *ln = tg_layer_norm(x, TG_SHAPE(4), w, b, 1e-5);
    int64_t fused = tg_tape_size() - before;
    before = tg_tape_size();
    tg_tensor *lnc = tg_layer_norm_composed(x, TG_SHAPE(4), w, b, 1e-5);
    int64_t composed = tg_tape_size() - before;
    printf("%-24s nodes on the tape: %2lld, grad_fn %s\n", "tg_layer_norm",
           (long long)fused, tg_grad_fn_name(ln));
    printf("%-24s nodes on the tape: %2lld, grad_fn %s\n",
           "tg_layer_norm_composed",
           (long long)composed, tg_grad_fn_name(lnc));

    tg_release(lnc);
    tg_release(ln);
    for (int k = 0; k < 2; k++) {
        tg_release(y[k]);
        for (int i = 0; i < 3; i++)
            tg_release(grads[k][i]);
    }
    tg_release(r);
    for (int i = 0; i < 3; i++)
        tg_release(leaves[i]);
    tg_generator_free(g);
}

int main(void)
{
    groups();
    running_stats();
    sum_trap();
    fused_and_composed();
    if (tg_live_tensors() != 0 || tg_tape_size() != 0) {
        printf("leak: %lld tensors, %lld tape nodes alive\n",
               (long long)tg_live_tensors(), (long long)tg_tape_size());
        surprises++;
    }
    return surprises == 0 ? 0 : 1;
}
