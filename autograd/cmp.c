/*
 * autograd/cmp.c - tg_cmp, makemore part 4's cmp(): a gradient worked out
 * by hand against the one the tape stored, in one printed line.
 *
 * The lecture's helper, in Python:
 *
 *   def cmp(s, dt, t):
 *     ex = torch.all(dt == t.grad).item()
 *     app = torch.allclose(dt, t.grad)
 *     maxdiff = (dt - t.grad).abs().max().item()
 *     print(f'{s:15s} | exact: {str(ex):5s} | approximate: {str(app):5s} | maxdiff: {maxdiff}')
 *
 * tg_cmp prints the same line, character for character: "True"/"False",
 * and maxdiff as Python prints a float (the shortest decimal that reads
 * back to the same double, "0.0", "5.122274160385132e-09").
 *
 * One difference on purpose: PyTorch broadcasts dt against t.grad, so a
 * hand gradient of shape (32,) against a true one of shape (32, 1) (a sum
 * that lost its keepdim) is compared as a (32, 32) grid and may even be
 * reported "approximate: True". tg_cmp refuses different shapes with an
 * error that names both.
 *
 * Not here: comparing whole tensors in tests (tests/common.c's
 * tg_test_close reports the worst element), gradcheck (gradcheck.c).
 */
#include "autograd.h"
#include "internal.h" // tg_check_alive
#include "ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* torch.allclose's defaults: |a - b| <= atol + rtol * |b|. */
#define CMP_RTOL 1e-5
#define CMP_ATOL 1e-8

/* x as Python's repr(float) writes it: the fewest significant digits that
 * read back to x, in fixed notation when the decimal exponent is in
 * [-4, 16) ("0.0001", "1234.5", "0.0"), in scientific notation otherwise
 * with a signed exponent of at least two digits ("1e-05", "5.12e-09",
 * "1e+16"); "inf", "-inf", "nan". */
static void python_float_repr(double x, char *buf, size_t size)
{
    if (isnan(x)) {
        snprintf(buf, size, "nan");
        return;
    }
    if (isinf(x)) {
        snprintf(buf, size, x > 0 ? "inf" : "-inf");
        return;
    }
    if (x == 0) {
        snprintf(buf, size, signbit(x) ? "-0.0" : "0.0");
        return;
    }
    /* the shortest %.*e that reads back to x: its digits and exponent */
    char e[40];
    for (int p = 0; p < 17; p++) {
        snprintf(e, sizeof e, "%.*e", p, x);
        if (strtod(e, NULL) == x)
            break;
    }
    const char *s = e;
    bool negative = *s == '-';
    if (negative)
        s++;
    char digits[24];
    int nd = 0;
    for (; *s != 'e'; s++)
        if (*s != '.')
            digits[nd++] = *s;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int exp10 = atoi(s + 1); // x = d.ddd * 10^exp10
    size_t k = 0;
    if (negative)
        k += (size_t)snprintf(buf + k, size - k, "-");
    if (exp10 < -4 || exp10 >= 16) {
        k += (size_t)snprintf(buf + k, size - k, "%c", digits[0]);
        if (nd > 1 && k < size)
            k += (size_t)snprintf(buf + k, size - k, ".%s", digits + 1);
        if (k < size)
            snprintf(buf + k, size - k, "e%c%02d", exp10 < 0 ? '-' : '+',
                     abs(exp10));
    } else if (exp10 < 0) { // 0.000ddd
        if (k < size)
            k += (size_t)snprintf(buf + k, size - k, "0.%.*s", -exp10 - 1,
                                  "000");
        if (k < size)
            snprintf(buf + k, size - k, "%s", digits);
    } else { // ddd.ddd, at least one digit after the point
        char fixed[40];
        int f = 0;
        for (int i = 0; i <= exp10; i++)
            fixed[f++] = i < nd ? digits[i] : '0';
        fixed[f++] = '.';
        if (nd > exp10 + 1)
            for (int i = exp10 + 1; i < nd; i++)
                fixed[f++] = digits[i];
        else
            fixed[f++] = '0';
        fixed[f] = '\0';
        if (k < size)
            snprintf(buf + k, size - k, "%s", fixed);
    }
}

/* Checks the arguments; 0, or -1 after an error. */
static int cmp_check(const char *fn, const char *name, const tg_tensor *dt,
                     const tg_tensor *t)
{
    char ds[TG_SHAPE_STR_MAX], gs[TG_SHAPE_STR_MAX];
    if (name == NULL) {
        tg_error(fn, "name is NULL\n"
                 "  rule: name labels the printed line\n"
                 "  hint: pass the variable's name, e.g. \"logits\"");
        return -1;
    }
    if (t->grad == NULL) {
        tg_error(fn,
                 "%s has no gradient to compare with\n"
                 "  rule: t->grad must have been filled by tg_backward\n"
                 "  hint: call tg_retain_grad(%s) before tg_backward (a "
                 "tensor made by an op keeps its gradient only then)",
                 name, name);
        return -1;
    }
    if (!tg_dtype_is_float(dt->dtype) || dt->dtype != t->grad->dtype) {
        tg_error(fn,
                 "cannot compare d%s (%s) with %s.grad (%s)\n"
                 "  rule: both must have the same float dtype (as "
                 "torch.allclose requires)\n"
                 "  hint: compute the gradient in %s's dtype, or convert "
                 "it with tg_to_dtype",
                 name, tg_dtype_name(dt->dtype), name,
                 tg_dtype_name(t->grad->dtype), name);
        return -1;
    }
    if (!tg_same_shape(dt, t->grad)) {
        bool same_numel = dt->numel == t->grad->numel;
        tg_error(fn,
                 "cannot compare d%s of shape %s with %s.grad of shape %s\n"
                 "  rule: the shapes must be equal (PyTorch's cmp would "
                 "broadcast them and compare the wrong pairs)\n"
                 "  hint: %s",
                 name, tg_shape_str(dt, ds), name, tg_shape_str(t->grad, gs),
                 same_numel
                     ? "the same elements in another shape: did a sum lose "
                       "its dim (keepdim true), or is a view missing?"
                     : "a gradient has its variable's shape: sum the "
                       "broadcast dims away, keeping them with keepdim "
                       "where the variable has size 1");
        return -1;
    }
    return 0;
}

/* The comparison of tg_cmp and tg_cmp_format (fn, for the messages). */
static int cmp_run(const char *fn, const char *name, const tg_tensor *dt,
                   const tg_tensor *t, char *buf, size_t size)
{
    if (buf != NULL && size > 0)
        buf[0] = '\0';
    if (dt == NULL || t == NULL)
        return -1;
    tg_check_alive(fn, dt);
    tg_check_alive(fn, t);
    if (cmp_check(fn, name, dt, t) < 0)
        return -1;
    /* both as contiguous float64, to read them in C order */
    tg_tensor *a64 = tg_to_dtype(dt, TG_FLOAT64);
    tg_tensor *b64 = tg_to_dtype(t->grad, TG_FLOAT64);
    tg_tensor *ac = tg_contiguous(a64);
    tg_tensor *bc = tg_contiguous(b64);
    tg_release(a64);
    tg_release(b64);
    if (ac == NULL || bc == NULL) {
        tg_release(ac);
        tg_release(bc);
        return -1;
    }
    const double *a = tg_data_f64(ac), *b = tg_data_f64(bc);
    int64_t n = ac->numel;
    bool exact = true, approximate = true;
    double maxdiff = 0.0; // the max of an empty tensor is taken as 0
    for (int64_t i = 0; i < n; i++) {
        exact = exact && a[i] == b[i];
        /* torch.isclose: equal values (infinities too) are close; NaN is
         * close to nothing */
        bool close = a[i] == b[i] ||
                     fabs(a[i] - b[i]) <= CMP_ATOL + CMP_RTOL * fabs(b[i]);
        approximate = approximate && close;
        /* (dt - t.grad).abs() in the tensors' dtype: float32 rounds the
         * difference to float32, as PyTorch does */
        double d = fabs(a[i] - b[i]);
        if (dt->dtype == TG_FLOAT32)
            d = (double)(float)d;
        if (isnan(d) || d > maxdiff)
            maxdiff = isnan(maxdiff) ? maxdiff : d;
    }
    tg_release(ac);
    tg_release(bc);
    char diff[40];
    python_float_repr(maxdiff, diff, sizeof diff);
    if (buf != NULL && size > 0)
        snprintf(buf, size, "%-15s | exact: %-5s | approximate: %-5s | "
                 "maxdiff: %s",
                 name, exact ? "True" : "False",
                 approximate ? "True" : "False", diff);
    return approximate ? 1 : 0;
}

int tg_cmp_format(const char *name, const tg_tensor *dt, const tg_tensor *t,
                  char *buf, size_t size)
{
    return cmp_run("tg_cmp_format", name, dt, t, buf, size);
}

int tg_cmp(const char *name, const tg_tensor *dt, const tg_tensor *t)
{
    char line[256];
    int rc = cmp_run("tg_cmp", name, dt, t, line, sizeof line);
    if (rc >= 0)
        printf("%s\n", line);
    return rc;
}
