/*
 * tests/exercises/grade_ex03_mul_div_pow_backward.c - grades exercise 03,
 * ex_mul_backward, ex_div_backward and ex_pow_backward
 * (docs/exercises/03-mul-div-pow-backward.md), each:
 *   - against NumPy's gradients, measured with the complex step rather
 *     than from the formulas (scripts/reference/gen_ex03.py);
 *   - with tg_gradcheck, the student's function as the backward of a
 *     tg_function whose forward is tg_mul, tg_div or tg_pow;
 *   - against tapegrad's own backward of that op on shapes (), (1, 5),
 *     (5, 1) and (2, 3, 4);
 *   - for leaving its inputs alone.
 */
#define EX_STATEMENT "03-mul-div-pow-backward.md"
#include "grade.h"

#include <stdio.h>

typedef int (*backward_fn)(const tg_tensor *a, const tg_tensor *b,
                           const tg_tensor *grad_out, tg_tensor **grad_a,
                           tg_tensor **grad_b);

/* One of the three ops: its name in the fixtures, the student's function
 * and tapegrad's forward. */
typedef struct op_case {
    const char *name;     // "mul"
    const char *function; // "ex_mul_backward"
    tg_tensor *(*forward)(const tg_tensor *a, const tg_tensor *b);
    backward_fn backward;
} op_case;

static const op_case MUL = {"mul", "ex_mul_backward", tg_mul,
                            ex_mul_backward};
static const op_case DIV = {"div", "ex_div_backward", tg_div,
                            ex_div_backward};
static const op_case POW = {"pow", "ex_pow_backward", tg_pow,
                            ex_pow_backward};

/* Checks one of the two results: there, of a's shape, float64. */
static void check_result(const op_case *op, const char *which,
                         tg_tensor *r, const tg_tensor *a)
{
    char what[96];
    snprintf(what, sizeof what, "%s (in *%s)", op->function, which);
    ex_require(r, what);
    char rs[TG_SHAPE_STR_MAX], as[TG_SHAPE_STR_MAX];
    cr_assert(tg_same_shape(r, a), "%s stored *%s of shape %s;\n    it "
              "must have the shape of a, %s.", op->function, which,
              tg_shape_str(r, rs), tg_shape_str(a, as));
    cr_assert(r->dtype == TG_FLOAT64, "%s stored *%s as %s; it must be "
              "float64, like a and b.", op->function, which,
              tg_dtype_name(r->dtype));
}

/* Calls the student's backward; both results are new references. */
static void student_grads(const op_case *op, const tg_tensor *a,
                          const tg_tensor *b, const tg_tensor *g,
                          tg_tensor **ga, tg_tensor **gb)
{
    int rc;
    *ga = *gb = NULL;
    EX_CALL(rc = op->backward(a, b, g, ga, gb));
    cr_assert(rc == 0, "%s returned %d; the last error was:\n%s",
              op->function, rc,
              tg_last_error()[0] ? tg_last_error() : "(none reported)");
    check_result(op, "grad_a", *ga, a);
    check_result(op, "grad_b", *gb, a);
}

/* Compares a result with an expected tensor; `source` says where the
 * expected values come from. */
static void check_close(const op_case *op, const char *which,
                        const tg_tensor *r, const tg_tensor *expected,
                        const char *source)
{
    char report[1024];
    cr_assert(tg_test_close(r, expected, 1e-12, 1e-14, true, report,
                            sizeof report),
              "%s: %s differs from %s:\n    %s", op->function, which,
              source, report);
}

static tg_tensor *load(const op_case *op, const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "ex03_%s_%s", op->name, what);
    return tg_test_load_ref(name);
}

static void check_numpy(const op_case *op)
{
    tg_tensor *a = load(op, "a"), *b = load(op, "b"), *g = load(op, "g");
    tg_tensor *ga_ref = load(op, "grad_a"), *gb_ref = load(op, "grad_b");
    tg_tensor *ga, *gb;
    student_grads(op, a, b, g, &ga, &gb);
    char source[96];
    snprintf(source, sizeof source, "NumPy (ex03_%s_grad_a.npy)", op->name);
    check_close(op, "dL/da", ga, ga_ref, source);
    snprintf(source, sizeof source, "NumPy (ex03_%s_grad_b.npy)", op->name);
    check_close(op, "dL/db", gb, gb_ref, source);
    tg_release(gb);
    tg_release(ga);
    tg_release(gb_ref);
    tg_release(ga_ref);
    tg_release(g);
    tg_release(b);
    tg_release(a);
}

TG_TEST(ex03, mul_matches_numpy)
{
    check_numpy(&MUL);
}

TG_TEST(ex03, div_matches_numpy)
{
    check_numpy(&DIV);
}

TG_TEST(ex03, pow_matches_numpy)
{
    check_numpy(&POW);
}

/* A tg_function: forward is tapegrad's op (which one is in the node's
 * data), backward the student's, so tg_gradcheck tests the student's
 * backward alone. Saved: a, b. */
static tg_tensor *op_forward(tg_ctx *ctx, const tg_tensor *const *in, int n,
                             const void *args)
{
    (void)n;
    const op_case *op = args;
    *(const op_case **)tg_ctx_data(ctx) = op;
    tg_ctx_save(ctx, in[0]);
    tg_ctx_save(ctx, in[1]);
    return op->forward(in[0], in[1]);
}

static int op_backward(tg_ctx *ctx, const tg_tensor *g,
                       tg_tensor **grad_inputs)
{
    const op_case *op = *(const op_case *const *)tg_ctx_data(ctx);
    tg_tensor *ga = NULL, *gb = NULL;
    int rc;
    EX_CALL(rc = op->backward(tg_ctx_saved(ctx, 0), tg_ctx_saved(ctx, 1), g,
                              &ga, &gb));
    if (rc != 0 || !ga || !gb) {
        tg_release(ga);
        tg_release(gb);
        return -1;
    }
    grad_inputs[0] = ga;
    grad_inputs[1] = gb;
    return 0;
}

static const tg_function student_op = {"StudentBackward", op_forward,
                                       op_backward, sizeof(const op_case *)};

static tg_tensor *apply_student_op(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    return tg_function_apply(&student_op, (const tg_tensor *const *)in, 2,
                             user);
}

/* Operands where the op and its gradients are smooth: any a and b for
 * mul; |b| in [0.5, 1.5] for div (away from b = 0); a in [0.5, 2] for pow
 * (ln a exists), b in [-2, 2]. New references. */
static void operands(const op_case *op, tg_generator *gen,
                     const int64_t *shape, int ndim, tg_tensor **a,
                     tg_tensor **b)
{
    *a = tg_randn_gen(gen, shape, ndim, TG_FLOAT64);
    *b = tg_randn_gen(gen, shape, ndim, TG_FLOAT64);
    if (op == &DIV) {
        tg_tensor *u = tg_empty(shape, ndim, TG_FLOAT64);
        tg_uniform_(u, 0.5, 1.5, gen);
        tg_tensor *neg = tg_lt_scalar(*b, 0.0); // a random sign from b
        tg_tensor *minus_u = tg_neg(u);
        tg_release(*b);
        *b = tg_where(neg, minus_u, u);
        tg_release(minus_u);
        tg_release(neg);
        tg_release(u);
    } else if (op == &POW) {
        tg_uniform_(*a, 0.5, 2.0, gen);
        tg_uniform_(*b, -2.0, 2.0, gen);
    }
    cr_assert(*a && *b, "could not make the operands: %s", tg_last_error());
}

static void gradcheck_op(const op_case *op, uint64_t seed)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *in[2];
    operands(op, gen, TG_SHAPE(3, 4), &in[0], &in[1]);
    tg_set_requires_grad(in[0], true);
    tg_set_requires_grad(in[1], true);
    tg_gradcheck_options opts = tg_gradcheck_defaults();
    opts.quiet = true;
    tg_gradcheck_result r;
    int ok = tg_gradcheck(apply_student_op, (void *)op, in, 2, &opts, &r);
    cr_assert_neq(ok, -1, "the backward (%s) failed: %s", op->function,
                  tg_last_error());
    cr_assert_eq(ok, 1, "gradcheck of %s failed (input 0 is a, input 1 "
                 "is b):\n%s", op->function, r.message);
    tg_release(in[1]);
    tg_release(in[0]);
    tg_generator_free(gen);
}

TG_TEST(ex03, mul_gradcheck)
{
    gradcheck_op(&MUL, 1);
}

TG_TEST(ex03, div_gradcheck)
{
    gradcheck_op(&DIV, 2);
}

TG_TEST(ex03, pow_gradcheck)
{
    gradcheck_op(&POW, 3);
}

/* The student's gradients against tapegrad's own backward of the op: the
 * backward of sum(op(a, b) * g). */
static void check_against_library(const op_case *op, const int64_t *shape,
                                  int ndim, uint64_t seed)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *a, *b;
    operands(op, gen, shape, ndim, &a, &b);
    tg_tensor *g = tg_randn_gen(gen, shape, ndim, TG_FLOAT64);
    tg_set_requires_grad(a, true);
    tg_set_requires_grad(b, true);
    tg_tensor *out = op->forward(a, b);
    tg_tensor *weighted = tg_mul(out, g);
    tg_tensor *loss = tg_sum(weighted, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_tensor *ga, *gb;
    student_grads(op, a, b, g, &ga, &gb);
    char source[96], s[TG_SHAPE_STR_MAX];
    snprintf(source, sizeof source, "tapegrad's own backward of tg_%s on "
             "shape %s", op->name, tg_shape_str(a, s));
    check_close(op, "dL/da", ga, a->grad, source);
    check_close(op, "dL/db", gb, b->grad, source);
    tg_release(gb);
    tg_release(ga);
    tg_release(loss);
    tg_release(weighted);
    tg_release(out);
    tg_release(g);
    tg_release(b);
    tg_release(a);
    tg_generator_free(gen);
}

static void check_shapes_against_library(const op_case *op, uint64_t seed)
{
    check_against_library(op, NULL, 0, seed);
    check_against_library(op, TG_SHAPE(1, 5), seed + 1);
    check_against_library(op, TG_SHAPE(5, 1), seed + 2);
    check_against_library(op, TG_SHAPE(2, 3, 4), seed + 3);
}

TG_TEST(ex03, mul_against_library)
{
    check_shapes_against_library(&MUL, 10);
}

TG_TEST(ex03, div_against_library)
{
    check_shapes_against_library(&DIV, 20);
}

TG_TEST(ex03, pow_against_library)
{
    check_shapes_against_library(&POW, 30);
}

/* a, b and grad_out come back unchanged, and the results are new
 * tensors. */
TG_TEST(ex03, leaves_inputs_alone)
{
    const op_case *ops[] = {&MUL, &DIV, &POW};
    for (size_t k = 0; k < 3; k++) {
        const op_case *op = ops[k];
        tg_tensor *in[3] = {load(op, "a"), load(op, "b"), load(op, "g")};
        tg_tensor *before[3] = {load(op, "a"), load(op, "b"), load(op, "g")};
        tg_tensor *ga, *gb;
        student_grads(op, in[0], in[1], in[2], &ga, &gb);
        static const char *const names[] = {"a", "b", "grad_out"};
        for (int i = 0; i < 3; i++) {
            cr_assert(ga != in[i] && gb != in[i], "%s stored %s itself "
                      "as a gradient; store a new tensor.", op->function,
                      names[i]);
            char report[1024];
            cr_assert(tg_test_close(in[i], before[i], 0, 0, true, report,
                                    sizeof report),
                      "%s changed %s:\n    %s", op->function, names[i],
                      report);
        }
        tg_release(gb);
        tg_release(ga);
        for (int i = 0; i < 3; i++) {
            tg_release(before[i]);
            tg_release(in[i]);
        }
    }
}
