/*
 * autograd/tape.c - the tape and the backward pass.
 *
 * The tape is a doubly linked list of nodes in execution order, one list
 * per thread. A node is one call of a differentiable op: its backward
 * function, the tensors it saved, its parameters, and one edge per input
 * saying where that input's gradient goes: to the node that made it, or to
 * a leaf's ->grad.
 *
 * Because nodes are appended as ops run, every node comes after the nodes
 * of its inputs, and each is numbered by its place (seq). Backward lists
 * the nodes the loss depends on by following the edges, and runs them
 * latest first: each node after every node that consumes its output,
 * which is exactly when its gradient is complete (a reverse topological
 * order, for the price of a sort, which a list found already in order
 * skips). The listing is a loop over a growing array: a chain of a million
 * ops needs no stack.
 *
 * Lifetime: a node holds one reference for its output tensor while that
 * tensor lives (the tensor only borrows the node, so there is no cycle) and
 * one for each later node that links to it. When the count reaches zero
 * the node releases what it saved and its links, which may free the nodes
 * before it; that cascade also runs as a loop. Backward additionally
 * releases the tensors saved by the nodes it walked, unless asked to keep
 * them (PyTorch's retain_graph=False); such a node stays while its output
 * lives, so a second backward through it is caught with a clear message.
 *
 * Not here: the ops' own backward functions (autograd/ops/), custom
 * functions (function.c), gradcheck (gradcheck.c), Graphviz (dot.c).
 */
#include "../tensor/debug.h"
#include "anomaly.h"
#include "tape.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- the tape */

typedef struct tape {
    tg_node *first, *last;  // execution order
    int64_t size;           // nodes alive
    uint64_t walks;         // backward walks so far (marks visited nodes)
    uint64_t appended;      // nodes ever put on the tape (numbers them)
    int no_grad_depth;
    tg_node *dying;         // nodes whose count reached zero, to free
    bool freeing;
    const char *in_backward; // the node whose backward runs, or NULL
    uint64_t id;            // 0 until this thread records its first node
} tape;

static _Thread_local tape the_tape;

/* The calling thread's tape, for a function that uses it more than once:
 * kept in a register (tg_tls_keep) instead of asked again at each use. */
static tape *this_tape(void)
{
    tape *tp = &the_tape;
    tg_tls_keep(tp);
    return tp;
}

/* Numbers the tapes, so that a node knows which thread's tape holds it.
 * (Not the tape's address: a new thread may get a finished one's.) */
static _Atomic uint64_t tapes_numbered;

static uint64_t tape_id(void)
{
    tape *tp = this_tape();
    if (!tp->id)
        tp->id = atomic_fetch_add_explicit(&tapes_numbered, 1,
                                           memory_order_relaxed) + 1;
    return tp->id;
}

/* Reports, as fn, that t was made on another thread's tape. Such a graph
 * is left alone: its nodes are linked into that thread's list, and
 * touching them here would corrupt it (and race with its owner). */
static void foreign_graph_error(const char *fn, const char *what,
                                const tg_tensor *t)
{
    tg_error(fn,
             "%s was made by %s on another thread\n"
             "  rule: a graph belongs to the thread that recorded it: only "
             "that thread extends it, runs its backward and releases its "
             "tensors\n"
             "  hint: hand other threads a copy without history, made on "
             "this thread (tg_clone(t) between tg_no_grad_begin and "
             "tg_no_grad_end; tg_item for a number), and release this one "
             "on its own thread",
             what, t->grad_fn->name);
}

int64_t tg_tape_size(void)
{
    return the_tape.size;
}

void tg_no_grad_begin(void)
{
    the_tape.no_grad_depth++;
}

void tg_no_grad_end(void)
{
    if (the_tape.no_grad_depth > 0) {
        the_tape.no_grad_depth--;
        return;
    }
    /* Unmatched: ignoring it would hide the bug until a later end closes
     * the wrong scope and gradients come back too early. */
    tg_error("tg_no_grad_end",
             "called without a matching tg_no_grad_begin\n"
             "  rule: each tg_no_grad_end closes one tg_no_grad_begin of "
             "the same thread\n"
             "  hint: look for an end called twice, or an end on a path "
             "that skipped its begin");
}

bool tg_is_grad_enabled(void)
{
    return the_tape.no_grad_depth == 0;
}

/* What backward frees, as PyTorch's retain_graph=False: the saved tensors.
 * A node that saved some can no longer run its backward; one that saved
 * none (add, a view) still can, so a second backward may pass through it.
 * The links stay until the node dies. */
static void node_release_saved(tg_node *n)
{
    for (int i = 0; i < n->nsaved; i++) {
        tg_release(n->saved[i]);
        n->saved[i] = NULL;
    }
    if (n->nsaved > 0)
        n->freed = true;
}


/* The bytes of a node's one allocation (tg_node_new): the node, its
 * ctx_bytes of op parameters, then its edges. node_bytes reads them back
 * from a node, for tg_block_free. */
static size_t node_bytes_for(size_t ctx_bytes, size_t edges)
{
    return offsetof(tg_node, ctx) + ctx_bytes + edges;
}

static size_t node_bytes(const tg_node *n)
{
    size_t ctx_bytes = (size_t)((const char *)n->inputs -
                                (const char *)n->ctx);
    return node_bytes_for(ctx_bytes, (size_t)n->ninputs * sizeof(tg_edge));
}
/* Drops a node's saved tensors and links (its inputs may die with it). */
static void node_empty(tg_node *n)
{
    for (int i = 0; i < n->nsaved; i++) {
        tg_release(n->saved[i]);
        n->saved[i] = NULL;
    }
    for (int i = 0; i < n->ninputs; i++) {
        tg_edge *e = &n->inputs[i];
        tg_release(e->leaf);
        e->leaf = NULL;
        if (e->node)
            tg_node_unref(e->node);
        e->node = NULL;
    }
    tg_release(n->grad);
    n->grad = NULL;
}

void tg_node_unref(tg_node *n)
{
    if (--n->refs > 0)
        return;
    tape *tp = this_tape();
    /* Queue it; the loop below frees the queue, including the nodes that
     * freeing this one lets go. */
    n->next_dying = tp->dying;
    tp->dying = n;
    if (tp->freeing)
        return;
    tp->freeing = true;
    while (tp->dying) {
        tg_node *d = tp->dying;
        tp->dying = d->next_dying;
        node_empty(d);
        if (d->on_tape) {
            if (d->prev)
                d->prev->next = d->next;
            else
                tp->first = d->next;
            if (d->next)
                d->next->prev = d->prev;
            else
                tp->last = d->prev;
            tp->size--;
        }
        tg_block_free(d, node_bytes(d));
    }
    tp->freeing = false;
}

/* The hooks tensor/ calls. */
static bool tensor_freed(tg_tensor *t)
{
    tg_node *n = t->grad_fn;
    if (n->out != t)
        return true;
    if (n->tape_id != the_tape.id) {
        foreign_graph_error("tg_release", "the tensor released", t);
        return false;
    }
    n->out = NULL;
    tg_node_unref(n);
    return true;
}

static const char *grad_fn_name(const tg_node *n)
{
    return n->name;
}

static const tg_autograd_hooks hooks = {tensor_freed, grad_fn_name,
                                        tg_is_grad_enabled};

const char *tg_grad_fn_name(const tg_tensor *x)
{
    return x && x->grad_fn ? x->grad_fn->name : NULL;
}

/* ---------------------------------------------------------- recording */

bool tg_grad_needed(const tg_tensor *const *inputs, int ninputs)
{
    if (!tg_is_grad_enabled())
        return false;
    for (int i = 0; i < ninputs; i++)
        if (inputs[i] && inputs[i]->requires_grad)
            return true;
    return false;
}

tg_node *tg_node_new(const char *name, tg_backward_fn backward,
                     size_t ctx_size, const tg_tensor *const *inputs,
                     int ninputs)
{
    for (int i = 0; i < ninputs; i++) {
        const tg_tensor *x = inputs[i];
        if (x && x->requires_grad && x->grad_fn &&
            x->grad_fn->tape_id != the_tape.id) {
            char what[32];
            snprintf(what, sizeof what, "input %d", i);
            foreign_graph_error(name, what, x);
            return NULL;
        }
    }
    /* One allocation: the node, the op's parameters, then the edges. */
    size_t align = sizeof(max_align_t);
    size_t edges = (size_t)ninputs * sizeof(tg_edge);
    /* Sizes that would wrap (tg_function_apply refuses them first) ask for
     * all of memory instead, and fail. */
    size_t ctx_bytes = ctx_size > SIZE_MAX - align - sizeof(tg_node) - edges
                           ? SIZE_MAX - sizeof(tg_node) - edges
                           : (ctx_size + align - 1) / align * align;
    /* From the thread's small-block free lists when it is small (most
     * are): a training step records the same few dozen nodes each time. */
    size_t bytes = node_bytes_for(ctx_bytes, edges);
    tg_node *n = tg_block_alloc(bytes);
    if (n)
        memset(n, 0, bytes);
    if (!n) {
        tg_error(name, "out of memory recording the op on the tape");
        return NULL;
    }
    n->name = name;
    n->backward = backward;
    n->ctx_size = ctx_size;
    n->ninputs = ninputs;
    n->inputs = (tg_edge *)((char *)n->ctx + ctx_bytes);
    for (int i = 0; i < ninputs; i++) {
        const tg_tensor *x = inputs[i];
        tg_edge *e = &n->inputs[i];
        if (!x)
            continue;
        e->dtype = x->dtype;
        e->ndim = x->ndim;
        memcpy(e->shape, x->shape, sizeof x->shape);
        if (!x->requires_grad)
            continue;
        e->needs_grad = true;
        if (x->grad_fn) {
            e->node = x->grad_fn;
            e->node->refs++;
        } else {
            e->leaf = tg_retain((tg_tensor *)x);
        }
    }
    return n;
}

void tg_node_attach(tg_node *n, tg_tensor *out)
{
    tape *tp = this_tape();
    tg_set_autograd_hooks(&hooks);
    n->out = out;
    n->out_dtype = out->dtype;
    n->out_ndim = out->ndim;
    memcpy(n->out_shape, out->shape, sizeof out->shape);
    n->refs = 1;
    out->requires_grad = true;
    out->grad_fn = n;
    n->on_tape = true;
    n->tape_id = tape_id();
    n->seq = ++tp->appended;
    n->prev = tp->last;
    if (tp->last)
        tp->last->next = n;
    else
        tp->first = n;
    tp->last = n;
    tp->size++;
}

void tg_node_discard(tg_node *n)
{
    if (!n)
        return;
    n->refs = 1;
    tg_node_unref(n);
}

tg_node *tg_record(const tg_op *op, tg_tensor **out,
                   const tg_tensor *const *inputs, int ninputs)
{
    tg_tensor *o = *out;
    /* Integer results (argmax, comparisons) carry no gradient. */
    if (!o || o->dtype == TG_INT64 || !tg_grad_needed(inputs, ninputs))
        return NULL;
    if (o->grad_fn) { // an op bug: its forward recorded ops of its own
        tg_error(op->name,
                 "internal error: the output already has grad_fn %s\n"
                 "  rule: an op records one node; a forward built from "
                 "other ops must run them under tg_no_grad_begin/end",
                 o->grad_fn->name);
        tg_release(o);
        *out = NULL;
        return NULL;
    }
    if (tg_anomaly_on() &&
        tg_anomaly_check_forward(NULL, op->name, o, inputs, ninputs) < 0) {
        tg_release(o);
        *out = NULL;
        return NULL;
    }
    tg_node *n = tg_node_new(op->name, op->backward, op->ctx_size, inputs,
                             ninputs);
    if (!n) {
        tg_release(o);
        *out = NULL;
        return NULL;
    }
    tg_node_attach(n, o);
    if (!o->made_by)
        o->made_by = op->name; // an op that does not name its results
    return n;
}

int tg_node_save(tg_node *n, const tg_tensor *t)
{
    if (n->nsaved == TG_MAX_SAVED || !t) {
        n->save_failed = true;
        return -1;
    }
    tg_tensor *alias = tg_view_make(t, t->shape, t->strides, t->ndim,
                                    t->offset);
    if (!alias) {
        n->save_failed = true;
        return -1;
    }
    n->saved[n->nsaved] = alias;
    n->saved_version[n->nsaved] = t->storage->version;
    return n->nsaved++;
}

const tg_tensor *tg_node_saved(const tg_node *n, int i)
{
    return i >= 0 && i < n->nsaved ? n->saved[i] : NULL;
}

bool tg_node_needs_grad(const tg_node *n, int i)
{
    return i >= 0 && i < n->ninputs && n->inputs[i].needs_grad;
}

void *tg_node_ctx(tg_node *n)
{
    return n->ctx;
}

const int64_t *tg_node_input_shape(const tg_node *n, int i, int *ndim)
{
    *ndim = n->inputs[i].ndim;
    return n->inputs[i].shape;
}

tg_dtype tg_node_input_dtype(const tg_node *n, int i)
{
    return n->inputs[i].dtype;
}

/* ------------------------------------------------------- requires_grad */

int tg_set_requires_grad(tg_tensor *x, bool requires_grad)
{
    if (!x)
        return -1;
    tg_check_alive("tg_set_requires_grad", x);
    if (x->grad_fn) {
        if (requires_grad)
            return 0; // it already does
        tg_error("tg_set_requires_grad",
                 "cannot turn off requires_grad of a tensor made by %s\n"
                 "  rule: only leaves (tensors not made by a recorded op) "
                 "can change it\n"
                 "  hint: tg_detach(x) gives a tensor with the same data "
                 "and no history",
                 x->grad_fn->name);
        return -1;
    }
    if (requires_grad && !tg_dtype_is_float(x->dtype)) {
        tg_error("tg_set_requires_grad",
                 "an %s tensor cannot require grad\n"
                 "  rule: only float32 and float64 tensors have gradients\n"
                 "  hint: convert first: tg_to_dtype(x, TG_FLOAT64)",
                 tg_dtype_name(x->dtype));
        return -1;
    }
    tg_set_autograd_hooks(&hooks); // in-place writes now ask grad mode
    x->requires_grad = requires_grad;
    return 0;
}

bool tg_is_leaf(const tg_tensor *x)
{
    return x && !x->grad_fn;
}

int tg_retain_grad(tg_tensor *x)
{
    if (!x)
        return -1;
    tg_check_alive("tg_retain_grad", x);
    if (!x->requires_grad) {
        tg_error("tg_retain_grad",
                 "the tensor does not require grad, so it gets no gradient\n"
                 "  rule: only tensors that depend on a leaf with "
                 "requires_grad have gradients\n"
                 "  hint: call tg_set_requires_grad(w, true) on the "
                 "parameters before the forward pass");
        return -1;
    }
    if (x->grad_fn)
        x->retains_grad = true;
    return 0;
}

void tg_zero_grad(tg_tensor *x)
{
    tg_check_alive("tg_zero_grad", x);
    if (x && x->grad)
        tg_fill_(x->grad, 0.0);
}

void tg_clear_grad(tg_tensor *x)
{
    if (!x)
        return;
    tg_check_alive("tg_clear_grad", x);
    tg_release(x->grad);
    x->grad = NULL;
}

tg_tensor *tg_detach(const tg_tensor *x)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_detach", x);
    return tg_view_make(x, x->shape, x->strides, x->ndim, x->offset);
}

/* ------------------------------------------------------------ backward */

/* *acc += g for a gradient that belongs to a tensor (a leaf's or a
 * retained one's ->grad): a private contiguous copy the first time, then
 * added in place so the grad tensor keeps its identity. Takes g. */
/* An existing ->grad (grad, may be NULL) can take gradients of this dtype
 * and shape; else an error naming whose grad it is (none when whose is
 * NULL: formatting a name for every input of every node costs more than
 * the check, so callers name it once the check has failed). */
static bool grad_slot_ok(const tg_tensor *grad, tg_dtype dtype,
                         const int64_t *shape, int ndim, const char *whose)
{
    if (!grad)
        return true;
    bool same = grad->dtype == dtype && grad->ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = grad->shape[d] == shape[d];
    if (same || !whose)
        return same;
    char gs[TG_SHAPE_STR_MAX], es[TG_SHAPE_STR_MAX];
    tg_shape_format(shape, ndim, es);
    tg_error("tg_backward",
             "%s is %s of shape %s, but its .grad is %s of shape %s\n"
             "  rule: gradients accumulate into a .grad of the tensor's "
             "shape and dtype\n"
             "  hint: a .grad set by hand must match; tg_clear_grad(x) lets "
             "backward make it",
             whose, tg_dtype_name(dtype), es, tg_dtype_name(grad->dtype),
             tg_shape_str(grad, gs));
    return false;
}

/* acc += g element by element, for a contiguous float acc and a g of the
 * same dtype and shape in another storage (every gradient a backward
 * makes and every .grad it made): tg_add's loops (tg_add_into), so the
 * same additions as tg_add then tg_copy_, without the temporary. False, with
 * nothing done, for any other case, which takes that general path (and
 * its checks), as do the reference kernels. */
static bool add_in_place(tg_tensor *acc, const tg_tensor *g)
{
    if (tg_use_reference_kernels() || acc->dtype != g->dtype ||
        !tg_dtype_is_float(acc->dtype) ||
        !tg_same_shape(acc, g) || acc->storage == g->storage ||
        !tg_is_contiguous(acc))
        return false;
    tg_add_into(acc, g);
    acc->storage->version++;
    return true;
}

static int grad_accumulate(tg_tensor **acc, tg_tensor *g, tg_dtype dtype)
{
    if (!grad_slot_ok(*acc, dtype, g->shape, g->ndim, "the tensor")) {
        tg_release(g);
        return -1;
    }
    if (!*acc) {
        if (g->refcount == 1 && g->storage->refcount == 1 &&
            g->dtype == dtype && tg_is_contiguous(g)) {
            *acc = g; // nobody else sees g: keep it
            return 0;
        }
        *acc = g->dtype == dtype ? tg_clone(g) : tg_to_dtype(g, dtype);
        tg_release(g);
        return *acc ? 0 : -1;
    }
    if (add_in_place(*acc, g)) {
        tg_release(g);
        return 0;
    }
    tg_tensor *sum = tg_add(*acc, g);
    tg_release(g);
    int rc = sum ? tg_copy_(*acc, sum) : -1;
    tg_release(sum);
    return rc;
}

/* A node's incoming gradient: kept as given (it may be a view or shared),
 * summed out of place when a second one arrives, or in place when the
 * first is seen by nobody else. Takes g. */
static int node_accumulate(tg_node *n, tg_tensor *g)
{
    if (!n->grad) {
        n->grad = g;
        return 0;
    }
    if (n->grad->refcount == 1 && n->grad->storage->refcount == 1 &&
        add_in_place(n->grad, g)) {
        tg_release(g);
        return 0;
    }
    tg_tensor *sum = tg_add(n->grad, g);
    tg_release(g);
    tg_release(n->grad);
    n->grad = sum;
    return sum ? 0 : -1;
}

static int check_node(const tg_node *n)
{
    if (n->freed) {
        tg_error("tg_backward",
                 "the tape through %s was already freed by an earlier "
                 "backward\n"
                 "  rule: backward releases the tensors the nodes it "
                 "walked saved (PyTorch's retain_graph=False)\n"
                 "  hint: set keep_tape in tg_backward_options for the "
                 "first backward, or run the forward pass again",
                 n->name);
        return -1;
    }
    if (n->save_failed) {
        /* Full: a custom forward saved too many (tg_ctx_save said so).
         * Otherwise memory ran out while the forward saved (the forward
         * still returned its output; the failure shows here, so the
         * message must say what it was). */
        bool full = n->nsaved == TG_MAX_SAVED;
        char rule[96];
        snprintf(rule, sizeof rule, "a node keeps at most %d tensors",
                 TG_MAX_SAVED);
        tg_error("tg_backward",
                 "%s could not keep a tensor it needs for backward\n"
                 "  rule: %s\n"
                 "  hint: %s",
                 n->name,
                 full ? rule
                      : "saving needs memory, and the forward ran out of "
                        "memory while it saved",
                 full ? "save fewer tensors in the custom function (stack "
                        "several into one)"
                      : "free memory (release the tensors you no longer "
                        "need, or use a smaller batch) and run the "
                        "forward again");
        return -1;
    }
    for (int i = 0; i < n->ninputs; i++) {
        const tg_edge *e = &n->inputs[i];
        if (!e->leaf || grad_slot_ok(e->leaf->grad, e->dtype, e->shape,
                                     e->ndim, NULL))
            continue;
        char whose[96];
        snprintf(whose, sizeof whose, "input %d of %s, a leaf,", i, n->name);
        grad_slot_ok(e->leaf->grad, e->dtype, e->shape, e->ndim, whose);
        return -1;
    }
    for (int i = 0; i < n->nsaved; i++) {
        const tg_tensor *s = n->saved[i];
        if (s->storage->version == n->saved_version[i])
            continue;
        char shape[TG_SHAPE_STR_MAX];
        tg_error("tg_backward",
                 "a tensor of shape %s saved by %s was modified in place "
                 "after the forward pass\n"
                 "  rule: backward needs the values the forward used; this "
                 "storage is at version %llu, it was %llu when saved\n"
                 "  hint: modify a copy instead (tg_clone), or do the "
                 "in-place change after tg_backward",
                 tg_shape_str(s, shape), n->name,
                 (unsigned long long)s->storage->version,
                 (unsigned long long)n->saved_version[i]);
        return -1;
    }
    return 0;
}

/* Runs one node's backward and hands each input gradient on. */
static bool wanted(const tg_backward_options *o, const tg_tensor *leaf)
{
    if (!o->inputs)
        return true;
    for (int i = 0; i < o->ninputs; i++)
        if (o->inputs[i] == leaf)
            return true;
    return false;
}

/* A backward writes grads[i] for i < ninputs only; the slots after them
 * (nslots in all) are there to catch one that writes further, which would
 * otherwise leak what it wrote. Releases what is there and reports it;
 * 0 when every extra slot is empty. */
static int check_extra_slots(const tg_node *n, tg_tensor **grads,
                             int nslots, bool report)
{
    int first = -1;
    for (int i = n->ninputs; i < nslots; i++) {
        if (!grads[i])
            continue;
        if (first < 0)
            first = i;
        tg_release(grads[i]);
        grads[i] = NULL;
    }
    if (first < 0)
        return 0;
    if (report)
        tg_error("tg_backward",
                 "the backward of %s wrote grad_inputs[%d], but %s has %d "
                 "input%s\n"
                 "  rule: a backward stores a gradient in grad_inputs[i] "
                 "only for an input i, 0 <= i < %d\n"
                 "  hint: look at the indices the backward of %s writes; "
                 "an input that needs no gradient is left NULL",
                 n->name, first, n->name, n->ninputs,
                 n->ninputs == 1 ? "" : "s", n->ninputs, n->name);
    return -1;
}

static int node_backward_into(tg_node *n, const tg_backward_options *o,
                              tg_tensor **grads, int nslots)
{
    tape *tp = this_tape();
    tg_clear_error();
    tp->in_backward = n->name;
    int rc = n->backward(n, n->grad, grads);
    tp->in_backward = NULL;
    /* A failed backward's own message comes first. */
    if (check_extra_slots(n, grads, nslots, rc == 0) < 0 && rc == 0)
        goto fail;
    if (rc < 0) {
        if (!*tg_last_error())
            tg_error("tg_backward",
                     "the backward of %s failed without saying why\n"
                     "  rule: a backward that returns -1 reports the "
                     "reason with tg_error\n"
                     "  hint: look at the function that defines %s",
                     n->name, n->name);
        goto fail;
    }
    for (int i = 0; i < n->ninputs; i++) {
        tg_edge *e = &n->inputs[i];
        tg_tensor *g = grads[i];
        grads[i] = NULL;
        if (!g)
            continue;
        if (!e->needs_grad) {
            tg_release(g);
            continue;
        }
        bool same = g->ndim == e->ndim;
        for (int d = 0; same && d < e->ndim; d++)
            same = g->shape[d] == e->shape[d];
        if (!same) {
            char gs[TG_SHAPE_STR_MAX], es[TG_SHAPE_STR_MAX];
            tg_shape_format(g->shape, g->ndim, gs);
            tg_shape_format(e->shape, e->ndim, es);
            tg_release(g);
            tg_error("tg_backward",
                     "%s gave a gradient of shape %s for its input %d of "
                     "shape %s\n"
                     "  rule: a backward returns one gradient per input, of "
                     "that input's shape\n"
                     "  hint: reduce a broadcast gradient with a sum over "
                     "the broadcast dims",
                     n->name, gs, i, es);
            goto fail;
        }
        if (g->dtype != e->dtype) {
            tg_tensor *cast = tg_to_dtype(g, e->dtype);
            tg_release(g);
            if (!(g = cast))
                goto fail;
        }
        /* After the cast: narrowing to float32 can overflow too. */
        if (tg_anomaly_on() && tg_anomaly_check_backward(n, i, g) < 0) {
            tg_release(g);
            goto fail;
        }
        if (e->leaf && !wanted(o, e->leaf)) {
            tg_release(g);
            continue;
        }
        int rc = e->node ? node_accumulate(e->node, g)
                         : grad_accumulate(&e->leaf->grad, g, e->dtype);
        if (rc < 0)
            goto fail;
    }
    if (n->out && n->out->retains_grad && !o->inputs) {
        if (grad_accumulate(&n->out->grad, tg_retain(n->grad), n->out_dtype) <
            0)
            return -1;
    }
    return 0;
fail:
    for (int i = 0; i < n->ninputs; i++)
        tg_release(grads[i]);
    return -1;
}

static int node_backward(tg_node *n, const tg_backward_options *o)
{
    /* One gradient slot per input, and TG_MAX_INPUTS more that must stay
     * empty (a backward that writes past its inputs is caught there, not
     * beyond the array): on the stack for up to TG_MAX_INPUTS inputs,
     * allocated for an op with more (tg_cat of many tensors). */
    tg_tensor *few[2 * TG_MAX_INPUTS];
    tg_tensor **grads = few;
    int nslots = n->ninputs + TG_MAX_INPUTS;
    if (n->ninputs > TG_MAX_INPUTS &&
        !(grads = tg_calloc((size_t)nslots, sizeof *grads))) {
        tg_error("tg_backward", "out of memory running the backward of %s",
                 n->name);
        return -1;
    }
    /* The slots in use only (`= {0}` cleared all 16 with a rep stos,
     * whose start-up costs more than these stores). */
    for (int i = 0; grads == few && i < nslots; i++)
        few[i] = NULL;
    int result = node_backward_into(n, o, grads, nslots);
    if (grads != few)
        free(grads);
    return result;
}

/* The root's gradient: opts->grad checked against root, or ones. */
static tg_tensor *root_grad(const tg_tensor *root, const tg_tensor *grad)
{
    char rs[TG_SHAPE_STR_MAX], gs[TG_SHAPE_STR_MAX];
    if (!grad) {
        if (root->numel != 1) {
            tg_error("tg_backward",
                     "cannot start from a tensor of shape %s without its "
                     "gradient\n"
                     "  rule: the implicit gradient 1 exists only for "
                     "one-element outputs (a loss)\n"
                     "  hint: reduce it first (tg_sum, tg_mean), or pass "
                     "the gradient in tg_backward_options.grad",
                     tg_shape_str(root, rs));
            return NULL;
        }
        return tg_ones(root->shape, root->ndim, root->dtype);
    }
    if (!tg_same_shape(root, grad)) {
        tg_error("tg_backward",
                 "the gradient has shape %s but the tensor has shape %s\n"
                 "  rule: tg_backward_options.grad must have the shape of "
                 "the tensor backward starts from\n"
                 "  hint: d(loss)/d(y) has y's shape",
                 tg_shape_str(grad, gs), tg_shape_str(root, rs));
        return NULL;
    }
    if (!tg_dtype_is_float(grad->dtype)) {
        tg_error("tg_backward",
                 "the gradient is %s\n"
                 "  rule: gradients are float32 or float64\n"
                 "  hint: tg_to_dtype(grad, TG_FLOAT64)",
                 tg_dtype_name(grad->dtype));
        return NULL;
    }
    return tg_to_dtype(grad, root->dtype);
}

/* qsort order for the nodes of one backward: the last recorded first. */
static int later_first(const void *a, const void *b)
{
    uint64_t sa = (*(tg_node *const *)a)->seq, sb = (*(tg_node *const *)b)->seq;
    return sa < sb ? 1 : sa > sb ? -1 : 0;
}

int tg_backward(tg_tensor *root)
{
    return tg_backward_ex(root, NULL);
}

int tg_backward_ex(tg_tensor *root, const tg_backward_options *opts)
{
    tape *tp = this_tape();
    static const tg_backward_options defaults = {0};
    if (!opts)
        opts = &defaults;
    if (!root)
        return -1;
    tg_check_alive("tg_backward", root);
    tg_check_alive("tg_backward", opts->grad);
    for (int i = 0; opts->inputs && i < opts->ninputs; i++)
        tg_check_alive("tg_backward", opts->inputs[i]);
    if (opts->ninputs < 0 || (opts->ninputs > 0 && !opts->inputs)) {
        tg_error("tg_backward",
                 "tg_backward_options has inputs %s and ninputs %d\n"
                 "  rule: inputs points to ninputs >= 0 leaves (NULL only "
                 "when ninputs is 0)\n"
                 "  hint: tg_tensor *leaves[] = {w, b}; then .inputs = "
                 "leaves, .ninputs = 2",
                 opts->inputs ? "given" : "NULL", opts->ninputs);
        return -1;
    }
    char rs[TG_SHAPE_STR_MAX];
    if (tp->in_backward) {
        tg_error("tg_backward",
                 "called from inside the backward of %s\n"
                 "  rule: a backward computes its inputs' gradients from "
                 "what it saved; it cannot start another backward\n"
                 "  hint: compute what you need in the forward and save "
                 "it with tg_ctx_save",
                 tp->in_backward);
        return -1;
    }
    if (root->grad_fn && root->grad_fn->tape_id != tp->id) {
        foreign_graph_error("tg_backward", "the root", root);
        return -1;
    }
    if (!root->requires_grad) {
        tg_error("tg_backward",
                 "the tensor of shape %s does not require grad and has no "
                 "grad_fn\n"
                 "  rule: backward needs a result computed, with gradients "
                 "enabled, from a leaf with requires_grad\n"
                 "  hint: call tg_set_requires_grad(w, true) on the "
                 "parameters before the forward pass, and do not compute "
                 "the loss inside tg_no_grad_begin/end",
                 tg_shape_str(root, rs));
        return -1;
    }
    tg_no_grad_begin();
    tg_tensor *g = root_grad(root, opts->grad);
    int rc = -1;
    if (!g)
        goto out;
    if (!root->grad_fn) { // the root is a leaf
        if (wanted(opts, root))
            rc = grad_accumulate(&root->grad, g, root->dtype);
        else
            tg_release(g), rc = 0;
        goto out;
    }

    /* Pass 1: list what the root depends on, following the edges (not
     * the tape: other graphs recorded in between are never visited, so a
     * small backward costs the same whatever else is alive), hold every
     * node listed, put the list in reverse execution order and check each
     * node, in that order, before any gradient moves. */
    uint64_t walk = ++tp->walks;
    int64_t nmarked = 0, cap = 64;
    /* A small list comes from the thread's free lists, as the nodes. */
    tg_node **marked = tg_block_alloc((size_t)cap * sizeof *marked);
    if (!marked) {
        tg_release(g);
        tg_error("tg_backward", "out of memory");
        goto out;
    }
    root->grad_fn->mark = walk;
    root->grad_fn->refs++;
    marked[nmarked++] = root->grad_fn;
    bool ordered = true; // listed already in reverse execution order
    for (int64_t k = 0; k < nmarked; k++) {
        tg_node *n = marked[k];
        for (int i = 0; i < n->ninputs; i++) {
            tg_node *in = n->inputs[i].node;
            if (!in || in->mark == walk)
                continue;
            if (nmarked == cap) {
                tg_node **more = tg_block_alloc((size_t)cap * 2 *
                                                sizeof *marked);
                if (more) {
                    memcpy(more, marked, (size_t)cap * sizeof *marked);
                    tg_block_free(marked, (size_t)cap * sizeof *marked);
                    cap *= 2;
                }
                if (!more) {
                    tg_error("tg_backward",
                             "out of memory after listing %lld ops of the "
                             "graph",
                             (long long)nmarked);
                    goto release;
                }
                marked = more;
            }
            in->mark = walk;
            in->refs++;
            ordered = ordered && in->seq < marked[nmarked - 1]->seq;
            marked[nmarked++] = in;
        }
    }
    if (!ordered)
        qsort(marked, (size_t)nmarked, sizeof *marked, later_first);
    for (int64_t k = 0; k < nmarked; k++)
        if (check_node(marked[k]) < 0)
            goto release;

    /* Pass 2: in reverse execution order, each node's gradient is complete
     * when it is reached. */
    rc = node_accumulate(root->grad_fn, g);
    g = NULL;
    for (int64_t k = 0; rc == 0 && k < nmarked; k++) {
        tg_node *n = marked[k];
        if (n->grad) {
            rc = node_backward(n, opts);
            tg_release(n->grad);
            n->grad = NULL;
        }
    }

release:
    /* Pass 3: drop the gradients left by a failure, free the walked nodes
     * (unless kept), let go of the holds. */
    for (int64_t k = 0; k < nmarked; k++) {
        tg_node *n = marked[k];
        tg_release(n->grad);
        n->grad = NULL;
        if (rc == 0 && !opts->keep_tape)
            node_release_saved(n);
    }
    for (int64_t k = 0; k < nmarked; k++)
        tg_node_unref(marked[k]);
    tg_block_free(marked, (size_t)cap * sizeof *marked);
    tg_release(g);
out:
    tg_no_grad_end();
    return rc;
}

/* ----------------------------------------------- helpers for backwards */

/* Broadcasting lined g's dims up from the right with `shape`: the leading
 * extra dims of g were added, and dims where shape has 1 but g does not
 * were stretched. Both are summed away. */
tg_tensor *tg_sum_to_shape(const tg_tensor *g, const int64_t *shape,
                           int ndim)
{
    if (!g)
        return NULL;
    tg_check_alive("tg_sum_to_shape", g);
    int lead = g->ndim - ndim;
    int dims[TG_MAX_DIMS], ndims = 0;
    for (int d = 0; d < g->ndim; d++)
        if (d < lead || (shape[d - lead] == 1 && g->shape[d] != 1))
            dims[ndims++] = d;
    if (ndims == 0)
        return tg_retain((tg_tensor *)g);
    tg_tensor *s = tg_sum(g, dims, ndims, true);
    tg_tensor *r = tg_reshape(s, shape, ndim);
    tg_release(s);
    return r;
}

tg_tensor *tg_sum_to_input(const tg_node *node, const tg_tensor *g, int i)
{
    int ndim;
    const int64_t *shape = tg_node_input_shape(node, i, &ndim);
    return tg_sum_to_shape(g, shape, ndim);
}
