/*
 * nn/diagnostics.c - per-parameter gradient summaries, the numbers behind
 * makemore part 3's "weights gradient distribution" table: the mean and
 * std of each gradient and the grad:data ratio std(grad) / std(data).
 * Not here: the histograms (tg_histogram) and the update:data ratio over
 * steps, which needs the learning rate and is one line at the call site.
 */
#include "nn.h"

#include "../autograd/internal.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The value of a 0-d result, which is released; NaN when it is NULL. */
static double take_item(tg_tensor *t)
{
    double v = t ? tg_item(t) : NAN;
    tg_release(t);
    return v;
}

/* mean(t), or std(t) with correction 1, in t's dtype, recording nothing.
 * A one-element t has no unbiased std: NaN, as torch.std. */
static double mean_of(const tg_tensor *t)
{
    return take_item(tg_mean(t, NULL, 0, false));
}

static double std_of(const tg_tensor *t)
{
    if (t->numel < 2)
        return NAN;
    return take_item(tg_std(t, NULL, 0, 1, false));
}

static int summarise(const char *fn, const tg_tensor *p, const char *name,
                     tg_grad_summary *out)
{
    if (!tg_dtype_is_float(p->dtype)) {
        char s[TG_SHAPE_STR_MAX];
        tg_error(fn,
                 "%s%s%s is an %s tensor of shape %s\n"
                 "  rule: parameters, and so their gradients, are float32 "
                 "or float64\n"
                 "  hint: pass a parameter (tg_module_named_parameters "
                 "lists them)",
                 name[0] ? "parameter \"" : "p", name,
                 name[0] ? "\"" : "", tg_dtype_name(p->dtype),
                 tg_shape_str(p, s));
        return -1;
    }
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    out->ndim = p->ndim;
    memcpy(out->shape, p->shape, (size_t)p->ndim * sizeof *out->shape);
    out->has_grad = p->grad != NULL;
    out->grad_mean = out->grad_std = out->data_std = out->grad_data = NAN;
    if (!p->grad)
        return 0;
    tg_no_grad_begin();
    out->grad_mean = mean_of(p->grad);
    out->grad_std = std_of(p->grad);
    out->data_std = std_of(p);
    tg_no_grad_end();
    out->grad_data = out->grad_std / out->data_std;
    return 0;
}

int tg_param_grad_summary(const tg_tensor *p, tg_grad_summary *out)
{
    const char *fn = "tg_param_grad_summary";
    if (!p)
        return -1;
    if (!out) {
        tg_error(fn, "out is NULL\n"
                     "  rule: the summary is written into a struct of "
                     "yours\n"
                     "  hint: tg_grad_summary s; "
                     "tg_param_grad_summary(p, &s);");
        return -1;
    }
    return summarise(fn, p, "", out);
}

int tg_module_grad_summaries(const tg_module *m, tg_grad_summary *out,
                             int max)
{
    const char *fn = "tg_module_grad_summaries";
    if (!m)
        return -1;
    if (max < 0 || (max > 0 && !out)) {
        tg_error(fn,
                 "room for %d summaries at %s\n"
                 "  rule: max >= 0, and out holds max summaries (out may be "
                 "NULL only with max 0, to count)\n"
                 "  hint: int n = tg_module_grad_summaries(m, NULL, 0); "
                 "then an array of n",
                 max, out ? "out" : "NULL");
        return -1;
    }
    int n = tg_module_named_parameters(m, NULL, 0);
    if (n <= 0 || max == 0)
        return n;
    tg_named_tensor *list = tg_malloc((size_t)n * sizeof *list);
    if (!list) {
        tg_error(fn, "out of memory listing %d parameters", n);
        return -1;
    }
    int rc = tg_module_named_parameters(m, list, n) == n ? n : -1;
    for (int i = 0; rc >= 0 && i < n && i < max; i++)
        if (summarise(fn, list[i].tensor, list[i].name, &out[i]) < 0)
            rc = -1;
    free(list);
    return rc;
}
