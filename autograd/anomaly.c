/*
 * autograd/anomaly.c - anomaly detection, as torch.autograd.detect_anomaly:
 * while it is on, the first NaN or infinity a recorded op or a backward
 * produces stops the computation with a message that says where it came
 * from.
 *
 * Forward: tg_record and tg_function_apply call tg_anomaly_check_forward
 * on an op's output before putting the op on the tape; a non-finite output
 * makes the op return NULL (nothing recorded, the output released). Ops
 * that are not recorded (gradients disabled, or no input needs one) are
 * not checked: they have no place on the tape to report, and leaving them
 * alone keeps evaluation code as fast with detection on as without.
 *
 * Backward: node_backward (tape.c) calls tg_anomaly_check_backward on each
 * gradient a node's backward gives; a non-finite one makes tg_backward
 * return -1.
 *
 * Where: an op's place is counted on this thread's tape from the oldest op
 * alive on it, from 1. Counting what is alive costs nothing while
 * recording (a walk of the tape happens only when a report is written);
 * when every tensor of the previous step was released, op k is simply the
 * k-th recorded op of this step.
 *
 * Not here: the switch's cost when off (anomaly.h inlines it), the tape
 * itself (tape.c).
 */
#include "anomaly.h"

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- the switch */

_Thread_local signed char tg_anomaly_mode = -1;

/* TG_DETECT_ANOMALY, read once per process: -1 until read, then 0 or 1.
 * Two threads reading it at once read the same value, so the race is
 * harmless. */
static atomic_int env_setting = -1;

static bool env_default(void)
{
    int v = atomic_load(&env_setting);
    if (v >= 0)
        return v;
    static const char *const names[] = {"0", "1"};
    v = tg_env_choice(TG_DETECT_ANOMALY, names, 2, 0,
                      "anomaly detection stays off");
    atomic_store(&env_setting, v);
    return v;
}

bool tg_anomaly_resolve(void)
{
    if (tg_anomaly_mode < 0)
        tg_anomaly_mode = env_default() ? 1 : 0;
    return tg_anomaly_mode > 0;
}

bool tg_set_detect_anomaly(bool on)
{
    bool previous = tg_anomaly_resolve();
    tg_anomaly_mode = on ? 1 : 0;
    return previous;
}

bool tg_is_anomaly_enabled(void)
{
    return tg_anomaly_resolve();
}

/* ------------------------------------------------------- the finite test */

/* A float is NaN or +-inf exactly when its exponent bits are all ones.
 * Blocks of BLOCK elements are tested without an early exit, on the bits,
 * so that the compiler vectorises the loop (isfinite with a break in the
 * loop runs one element at a time, which made checking cost more than a
 * cheap op); the block holding a bad element is then searched one by one.
 * This is the plain loop at the end of each function, run on fewer
 * elements. */
enum { BLOCK = 256 };

static int64_t first_bad_f32(const float *p, int64_t n) // p: (n,)
{
    int64_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        uint32_t any = 0;
        for (int j = 0; j < BLOCK; j++) {
            uint32_t u;
            memcpy(&u, p + i + j, sizeof u);
            any |= (u & 0x7f800000u) == 0x7f800000u;
        }
        if (any)
            break;
    }
    for (; i < n; i++)
        if (!isfinite(p[i]))
            return i;
    return -1;
}

static int64_t first_bad_f64(const double *p, int64_t n) // p: (n,)
{
    const uint64_t exp = UINT64_C(0x7ff0000000000000);
    int64_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        uint64_t any = 0;
        for (int j = 0; j < BLOCK; j++) {
            uint64_t u;
            memcpy(&u, p + i + j, sizeof u);
            any |= (u & exp) == exp;
        }
        if (any)
            break;
    }
    for (; i < n; i++)
        if (!isfinite(p[i]))
            return i;
    return -1;
}

int64_t tg_first_nonfinite(const tg_tensor *t, double *value)
{
    if (!t || t->dtype == TG_INT64 || t->numel == 0)
        return -1;
    const char *base = tg_base_ptr(t);
    bool f32 = t->dtype == TG_FLOAT32;
    if (tg_is_contiguous(t)) {
        int64_t at = f32 ? first_bad_f32((const float *)base, t->numel)
                         : first_bad_f64((const double *)base, t->numel);
        if (at >= 0 && value)
            *value = f32 ? ((const float *)base)[at]
                         : ((const double *)base)[at];
        return at;
    }
    /* Any layout: an odometer over the index, the storage offset following
     * it, so that the flat index is in C order of the shape. */
    int64_t idx[TG_MAX_DIMS] = {0};
    int64_t off = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        double v = f32 ? ((const float *)base)[off]
                       : ((const double *)base)[off];
        if (!isfinite(v)) {
            if (value)
                *value = v;
            return i;
        }
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) {
                off += t->strides[d];
                break;
            }
            off -= (t->shape[d] - 1) * t->strides[d];
            idx[d] = 0;
        }
    }
    return -1;
}

/* ------------------------------------------------------------- reports */

/* A bounded string builder: appends until the buffer is full, then drops
 * the rest (a report is cut short rather than overflowing). */
typedef struct text {
    char buf[1024];
    size_t len;
} text;

static void put(text *t, const char *fmt, ...)
{
    if (t->len >= sizeof t->buf - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n;
    if (t->len > sizeof t->buf - 1)
        t->len = sizeof t->buf - 1;
}

/* "nan", "inf" or "-inf" (printf's "-nan" for a NaN with its sign bit set,
 * as log(-1) gives, would only confuse). */
static const char *nonfinite_name(double v)
{
    return isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

/* "index 5" and, past one dim, the element: "index 5 (element [1, 2])". */
static void put_index(text *t, const int64_t *shape, int ndim, int64_t flat)
{
    put(t, "index %lld", (long long)flat);
    if (ndim < 2)
        return;
    int64_t idx[TG_MAX_DIMS];
    int64_t rest = flat;
    for (int d = ndim - 1; d >= 0; d--) {
        idx[d] = shape[d] > 0 ? rest % shape[d] : 0;
        rest = shape[d] > 0 ? rest / shape[d] : 0;
    }
    put(t, " (element [");
    for (int d = 0; d < ndim; d++)
        put(t, d ? ", %lld" : "%lld", (long long)idx[d]);
    put(t, "])");
}

/* "float32 (2, 3)" */
static void put_tensor_kind(text *t, tg_dtype dtype, const int64_t *shape,
                            int ndim)
{
    char s[TG_SHAPE_STR_MAX];
    put(t, "%s %s", tg_dtype_name(dtype), tg_shape_format(shape, ndim, s));
}

/* "float32 (3,), finite" or "float32 (3,), holds nan at index 1";
 * returns whether x holds a non-finite element. When x has the shape of
 * out (may be NULL), its element at out's bad index `where` is shown too:
 * for an elementwise op, the value the op was given there. */
static bool put_checked(text *t, const tg_tensor *x, const tg_tensor *out,
                        int64_t where)
{
    put_tensor_kind(t, x->dtype, x->shape, x->ndim);
    double v = 0;
    int64_t at = tg_first_nonfinite(x, &v);
    if (at < 0)
        put(t, x->dtype == TG_INT64 ? ", integers" : ", finite");
    else {
        put(t, ", holds %s at ", nonfinite_name(v));
        put_index(t, x->shape, x->ndim, at);
    }
    if (out && tg_same_shape(x, out) && where != at) {
        double w = tg_read_flat(x, where);
        if (isfinite(w))
            put(t, ", %.9g at index %lld", w, (long long)where);
        else
            put(t, ", %s at index %lld", nonfinite_name(w),
                (long long)where);
    }
    return at >= 0;
}

/* Position of n on this thread's tape, from 1 at the oldest node alive. */
static int64_t tape_position(const tg_node *n)
{
    int64_t k = 1;
    for (const tg_node *p = n->prev; p; p = p->prev)
        k++;
    return k;
}

int tg_anomaly_check_forward(const char *fn, const char *node_name,
                             const tg_tensor *out,
                             const tg_tensor *const *inputs, int ninputs)
{
    double v = 0;
    int64_t at = tg_first_nonfinite(out, &v);
    if (at < 0)
        return 0;

    text head = {.len = 0}, ins = {.len = 0};
    if (fn)
        put(&head, "the forward of %s", node_name);
    else
        put(&head, "the op");
    put(&head, " gave %s at ", nonfinite_name(v));
    put_index(&head, out->shape, out->ndim, at);
    put(&head, " of its output, ");
    put_tensor_kind(&head, out->dtype, out->shape, out->ndim);

    int bad = -1; // the first input that was already not finite
    for (int i = 0; i < ninputs; i++) {
        if (!inputs[i])
            continue;
        put(&ins, "%s%d: ", ins.len ? "; " : "", i);
        if (put_checked(&ins, inputs[i], out, at) && bad < 0)
            bad = i;
    }
    if (!ins.len)
        put(&ins, "none");

    text hint = {.len = 0};
    if (bad < 0) {
        put(&hint,
            "the inputs are finite, so this op made the %s: look for "
            "values outside its domain (log of 0 or of a negative number, "
            "sqrt of a negative, 0 / 0, inf - inf) or results too large "
            "for %s",
            nonfinite_name(v), tg_dtype_name(out->dtype));
    } else if (inputs[bad]->grad_fn) {
        put(&hint,
            "input %d was already not finite, so the problem is upstream: "
            "it was made by %s, recorded before anomaly detection was "
            "turned on",
            bad, tg_grad_fn_name(inputs[bad]));
    } else {
        put(&hint,
            "input %d was already not finite, so the problem is upstream: "
            "it has no history, so it is a leaf (check how it was made or "
            "loaded) or the result of ops that were not recorded (under "
            "tg_no_grad_begin, or on tensors that need no gradient), "
            "which anomaly detection does not check",
            bad);
    }

    tg_error(fn ? fn : node_name,
             "%s, with anomaly detection on\n"
             "  where: op %lld of this thread's tape, counting from the "
             "oldest op alive on it; the call that records %s returned "
             "NULL and recorded nothing\n"
             "  inputs: %s\n"
             "  rule: while anomaly detection is on, every op recorded on "
             "the tape must give finite values\n"
             "  hint: %s",
             head.buf, (long long)(tg_tape_size() + 1), node_name, ins.buf,
             hint.buf);
    return -1;
}

int tg_anomaly_check_backward(const tg_node *n, int i, const tg_tensor *g)
{
    double v = 0;
    int64_t at = tg_first_nonfinite(g, &v);
    if (at < 0)
        return 0;

    text head = {.len = 0}, ins = {.len = 0}, in_grad = {.len = 0};
    put(&head, "the backward of %s gave %s at ", n->name, nonfinite_name(v));
    put_index(&head, g->shape, g->ndim, at);
    put(&head, " of the gradient of its input %d, ", i);
    put_tensor_kind(&head, g->dtype, g->shape, g->ndim);

    for (int k = 0; k < n->ninputs; k++) {
        const tg_edge *e = &n->inputs[k];
        put(&ins, "%s%d: ", k ? "; " : "", k);
        if (e->needs_grad)
            put_tensor_kind(&ins, e->dtype, e->shape, e->ndim);
        else
            put(&ins, "needs no gradient");
    }
    if (!ins.len)
        put(&ins, "none");
    bool grad_bad = n->grad && put_checked(&in_grad, n->grad, NULL, 0);
    if (!n->grad)
        put(&in_grad, "none");

    tg_error("tg_backward",
             "%s, with anomaly detection on\n"
             "  where: op %lld of the %lld alive on this thread's tape, "
             "counting from the oldest\n"
             "  inputs of %s at forward time: %s\n"
             "  incoming gradient dL/d(output): %s\n"
             "  rule: while anomaly detection is on, every gradient a "
             "backward gives must be finite\n"
             "  hint: %s; leaves reached before this op may hold part of "
             "a gradient, so zero them (tg_zero_grad) before trying again",
             head.buf, (long long)tape_position(n),
             (long long)tg_tape_size(), n->name, ins.buf, in_grad.buf,
             grad_bad
                 ? "the incoming gradient was already not finite: it was "
                   "given in tg_backward_options.grad, or the gradients "
                   "of several uses of the output overflowed when summed"
                 : "the incoming gradient is finite, so this backward made "
                   "the non-finite value: its derivative is infinite at "
                   "these inputs (sqrt or pow at 0, log at 0) or it divides "
                   "by 0");
    return -1;
}
