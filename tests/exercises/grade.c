/*
 * tests/exercises/grade.c - the graders' shared checks (grade.h).
 */
#include "grade.h"

#include <stdio.h>
#include <string.h>

void ex_check_stub(const char *statement)
{
    const char *file, *fn;
    if (!ex_stub_ran(&file, &fn))
        return;
    /* __FILE__ is as the compiler saw it, relative to the build folder */
    const char *rel = strstr(file, "examples/exercises/");
    if (rel != NULL)
        file = rel;
    cr_assert_fail("%s() is not implemented yet.\n"
                   "    Write it in %s (replace the EX_NOT_IMPLEMENTED() stub);\n"
                   "    the statement is docs/exercises/%s.",
                   fn, file, statement);
}

tg_tensor *ex_require(tg_tensor *t, const char *what)
{
    if (t == NULL)
        cr_assert_fail("%s returned NULL; the last error was:\n%s", what,
                 tg_last_error()[0] ? tg_last_error() : "(none reported)");
    return t;
}

const char *ex_shape_text(const int64_t *shape, int ndim, char *buf,
                          size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < ndim && k < size; d++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", d ? ", " : "",
                              (long long)shape[d]);
    if (k < size)
        snprintf(buf + k, size - k, ndim == 1 ? ",)" : ")");
    return buf;
}

void ex_check_shape(const tg_tensor *t, const char *what,
                    const int64_t *shape, int ndim, const char *hint_2d)
{
    char got[TG_SHAPE_STR_MAX], want[TG_SHAPE_STR_MAX];
    ex_shape_text(shape, ndim, want, sizeof want);
    bool same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->shape[i] == shape[i];
    bool slip = hint_2d != NULL && ndim == 1 && t->ndim == 2;
    cr_assert(same, "%s has shape %s but must have shape %s%s%s%s", what,
              tg_shape_str(t, got), want, slip ? " (" : "",
              slip ? hint_2d : "", slip ? ")" : "");
    cr_assert(t->dtype == TG_FLOAT64, "%s is %s but must be float64", what,
              tg_dtype_name(t->dtype));
}

void ex_check_close(const tg_tensor *actual, const tg_tensor *expected,
                    const char *what, double rtol, double atol)
{
    char report[1024];
    cr_assert(tg_test_close(actual, expected, rtol, atol, true, report,
                            sizeof report),
              "%s: %s", what, report);
}

/* ------------------------------------------ a normalisation's backward */

void ex_norm_grads_release(ex_norm_grads *r)
{
    tg_release(r->db);
    tg_release(r->dw);
    tg_release(r->dx);
}

bool ex_norm_call(const ex_norm_exercise *e, const tg_tensor *dy,
                  const tg_tensor *x, const tg_tensor *w,
                  const tg_tensor *mean, const tg_tensor *rstd,
                  ex_norm_grads *r)
{
    int rc = -1;
    *r = (ex_norm_grads){NULL, NULL, NULL};
    /* EX_CALL, with the statement of this exercise */
    ex_stub_reset();
    tg_no_grad_begin();
    rc = e->backward(dy, x, w, mean, rstd, &r->dx, &r->dw, &r->db);
    tg_no_grad_end();
    ex_check_stub(e->statement);
    return rc == 0 && r->dx && r->dw && r->db;
}

ex_norm_grads ex_norm_backward(const ex_norm_exercise *e, const tg_tensor *dy,
                               const tg_tensor *x, const tg_tensor *w,
                               const tg_tensor *mean, const tg_tensor *rstd)
{
    ex_norm_grads r;
    bool ok = ex_norm_call(e, dy, x, w, mean, rstd, &r);
    cr_assert(ok,
              "%s returned -1 or left a result NULL (dx %s, dweight %s, "
              "dbias %s); the last error was:\n%s",
              e->name, r.dx ? "set" : "NULL", r.dw ? "set" : "NULL",
              r.db ? "set" : "NULL",
              tg_last_error()[0] ? tg_last_error() : "(none reported)");
    ex_check_shape(r.dx, "*dx", x->shape, 2, e->shape_hint);
    ex_check_shape(r.dw, "*dweight", &x->shape[1], 1, e->shape_hint);
    ex_check_shape(r.db, "*dbias", &x->shape[1], 1, e->shape_hint);
    return r;
}

int ex_norm_function_backward(const ex_norm_exercise *e, tg_ctx *ctx,
                              const tg_tensor *g, tg_tensor **grad_inputs)
{
    ex_norm_grads r;
    if (!ex_norm_call(e, g, tg_ctx_saved(ctx, 0), tg_ctx_saved(ctx, 1),
                      tg_ctx_saved(ctx, 2), tg_ctx_saved(ctx, 3), &r)) {
        ex_norm_grads_release(&r);
        return -1;
    }
    tg_tensor *grads[3] = {r.dx, r.dw, r.db};
    for (int i = 0; i < 3; i++) {
        if (tg_ctx_needs_grad(ctx, i))
            grad_inputs[i] = grads[i];
        else
            tg_release(grads[i]);
    }
    return 0;
}

void ex_norm_gradcheck(const ex_norm_exercise *e, tg_gradcheck_fn apply,
                       int64_t rows, int64_t cols, uint64_t seed)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *in[3] = {
        tg_randn_gen(gen, TG_SHAPE(rows, cols), TG_FLOAT64),
        tg_randn_gen(gen, TG_SHAPE(cols), TG_FLOAT64),
        tg_randn_gen(gen, TG_SHAPE(cols), TG_FLOAT64),
    };
    for (int i = 0; i < 3; i++)
        tg_set_requires_grad(in[i], true);
    tg_gradcheck_options opts = tg_gradcheck_defaults();
    opts.quiet = true;
    tg_gradcheck_result r;
    int ok = tg_gradcheck(apply, NULL, in, 3, &opts, &r);
    char shape[TG_SHAPE_STR_MAX];
    cr_assert_neq(ok, -1,
                  "%s failed inside gradcheck, on x of shape %s:\n%s",
                  e->name, tg_shape_str(in[0], shape), tg_last_error());
    cr_assert_eq(ok, 1,
                 "gradcheck of dx, dweight and dbias failed (input 0 is "
                 "x, 1 weight, 2 bias):\n%s",
                 r.message);
    for (int i = 0; i < 3; i++)
        tg_release(in[i]);
    tg_generator_free(gen);
}

void ex_norm_leaves_inputs_alone(const ex_norm_exercise *e,
                                 const char *prefix)
{
    const char *names[5] = {"dy", "x", "w", "mean", "rstd"};
    tg_tensor *in[5], *before[5];
    for (int i = 0; i < 5; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s_%s", prefix, names[i]);
        in[i] = tg_test_load_ref(file);
        before[i] = tg_test_load_ref(file);
    }
    ex_norm_grads r = ex_norm_backward(e, in[0], in[1], in[2], in[3], in[4]);
    const tg_tensor *out[3] = {r.dx, r.dw, r.db};
    const char *out_names[3] = {"*dx", "*dweight", "*dbias"};
    for (int i = 0; i < 5; i++) {
        for (int k = 0; k < 3; k++)
            cr_assert(out[k] != in[i],
                      "%s is the argument %s: return a new tensor, not an "
                      "argument",
                      out_names[k], names[i]);
        char what[128];
        snprintf(what, sizeof what, "the argument %s was changed by %s",
                 names[i], e->name);
        ex_check_close(in[i], before[i], what, 0, 0);
    }
    ex_norm_grads_release(&r);
    for (int i = 0; i < 5; i++) {
        tg_release(before[i]);
        tg_release(in[i]);
    }
}
