/*
 * tests/autograd/test_grad_ops.c - gradcheck over every differentiable op,
 * on the shapes and layouts listed in grad_cases_*.c (float64, PyTorch's
 * default eps and tolerances unless a case says otherwise).
 */
#include "../common.h"
#include "grad_cases.h"

#include <criterion/parameterized.h>
#include <stdio.h>

/* The case with flat index i over all families. */
static const tg_grad_case *case_at(size_t i)
{
    const tg_grad_case *tables[] = {tg_grad_cases_elementwise,
                                    tg_grad_cases_view, tg_grad_cases_reduce,
                                    tg_grad_cases_norm, tg_grad_cases_loss,
                                    tg_grad_cases_join,
                                    tg_grad_cases_index,
                                    tg_grad_cases_group_norm,
                                    tg_grad_cases_linear,
                                    tg_grad_cases_conv};
    size_t counts[] = {tg_grad_cases_elementwise_count,
                       tg_grad_cases_view_count, tg_grad_cases_reduce_count,
                       tg_grad_cases_norm_count, tg_grad_cases_loss_count,
                       tg_grad_cases_join_count,
                       tg_grad_cases_index_count,
                       tg_grad_cases_group_norm_count,
                       tg_grad_cases_linear_count,
                       tg_grad_cases_conv_count};
    for (size_t t = 0; t < sizeof counts / sizeof *counts; t++) {
        if (i < counts[t])
            return &tables[t][i];
        i -= counts[t];
    }
    return NULL;
}

static size_t case_count(void)
{
    return tg_grad_cases_elementwise_count + tg_grad_cases_view_count +
           tg_grad_cases_reduce_count + tg_grad_cases_norm_count +
           tg_grad_cases_loss_count + tg_grad_cases_join_count +
           tg_grad_cases_index_count + tg_grad_cases_group_norm_count +
           tg_grad_cases_linear_count + tg_grad_cases_conv_count;
}

/* A float64 input laid out as spec says, values from gen. */
static tg_tensor *make_input(const tg_case_input *spec, tg_generator *gen)
{
    int64_t shape[4];
    int nd = spec->ndim;
    for (int d = 0; d < nd; d++)
        shape[d] = spec->shape[d];
    if (spec->layout == TG_TRANSPOSED) { // allocate (..., m, n)
        shape[nd - 1] = spec->shape[nd - 2];
        shape[nd - 2] = spec->shape[nd - 1];
    } else if (spec->layout == TG_STRIDED) {
        shape[nd - 1] = 2 * spec->shape[nd - 1];
    }
    double lo = spec->lo, hi = spec->hi;
    if (lo == 0 && hi == 0)
        lo = -1, hi = 1;
    tg_tensor *base = tg_empty(shape, nd, TG_FLOAT64);
    tg_uniform_(base, lo, hi, gen);
    if (spec->signed_mag) {
        tg_tensor *coin = tg_rand_gen(gen, shape, nd, TG_FLOAT64);
        tg_tensor *neg = tg_lt_scalar(coin, 0.5);
        tg_tensor *flipped = tg_neg(base);
        tg_tensor *mixed = tg_where(neg, flipped, base);
        tg_release(coin);
        tg_release(neg);
        tg_release(flipped);
        tg_release(base);
        base = mixed;
    }
    tg_tensor *x = NULL;
    if (spec->layout == TG_TRANSPOSED)
        x = tg_transpose(base, -1, -2);
    else if (spec->layout == TG_STRIDED)
        x = tg_slice(base, -1, 0, shape[nd - 1], 2);
    else
        x = tg_retain(base);
    tg_release(base);
    if (!spec->no_grad)
        tg_set_requires_grad(x, true);
    return x;
}

ParameterizedTestParameters(grad, op)
{
    static size_t index[1024];
    size_t n = case_count();
    cr_assert(n <= sizeof index / sizeof *index);
    for (size_t i = 0; i < n; i++)
        index[i] = i;
    return cr_make_param_array(size_t, index, n);
}

ParameterizedTest(size_t *i, grad, op, .init = tg_test_setup)
{
    const tg_grad_case *c = case_at(*i);
    cr_assert(c);
    tg_generator *gen = tg_generator_new(1000 + *i);
    tg_tensor *in[4] = {0};
    for (int k = 0; k < c->ninputs; k++) {
        in[k] = make_input(&c->in[k], gen);
        cr_assert(in[k], "%s: input %d: %s", c->name, k, tg_last_error());
        if (c->in[k].layout != TG_CONTIGUOUS)
            cr_assert(!tg_is_contiguous(in[k]) || in[k]->numel <= 1,
                      "%s: input %d should be non-contiguous", c->name, k);
    }
    tg_gradcheck_options o = tg_gradcheck_defaults();
    if (c->atol > 0)
        o.atol = c->atol;
    if (c->rtol > 0)
        o.rtol = c->rtol;
    o.quiet = true;
    tg_gradcheck_result r;
    int rc = tg_gradcheck(c->f, NULL, in, c->ninputs, &o, &r);
    cr_assert(rc >= 0, "%s: gradcheck failed with an error:\n%s", c->name,
              tg_last_error());
    cr_assert(rc == 1, "%s:\n%s", c->name, r.message);
    for (int k = 0; k < c->ninputs; k++)
        tg_release(in[k]);
    tg_generator_free(gen);
    tg_test_teardown();
}
