/*
 * autograd/dot.c - the graph behind some tensors, written as Graphviz DOT
 * (tg_tape_write_dot), to be rendered with `dot -Tpng g.dot -o g.png`.
 *
 * The walk starts at the roots and follows each node's edges towards the
 * leaves, breadth first, with a queue instead of recursion (a chain of a
 * million ops must not need a million stack frames). Every vertex gets its
 * id from a counter in the order it is first met, so the same graph always
 * gives the same text, whatever the addresses of its nodes.
 *
 *   op node  -> a box:     name, output shape and dtype, "saved: k tensors"
 *   leaf     -> an ellipse: shape, dtype, requires_grad, .grad (None or
 *               its shape)
 *   (one-element tensors and gradients also show their value)
 *   root     -> drawn with a thick green outline
 *   freed    -> dashed, "(freed by backward)": its saved tensors are
 *               gone, so another backward cannot pass through it
 *
 * Edges point the way data flows, from an input to the op that used it.
 * Inputs that needed no gradient (constants) are not on the tape and are
 * not drawn.
 *
 * Not here: the tape itself (tape.c). This file only reads it.
 */
#include "tape.h"

#include <stdint.h>
#include <stdlib.h>

/* One vertex of the drawing: an op node or a leaf tensor. */
typedef struct vertex {
    const void *key;       // the tg_node or the leaf tg_tensor
    const tg_node *node;   // set for an op
    const tg_tensor *leaf; // set for a leaf
    bool root;
} vertex;

/* The vertices in the order they were met (also the walk's queue), and a
 * hash set from key to position so each is drawn once. */
typedef struct graph {
    vertex *v;
    int64_t n, cap;
    int64_t *slots; // index + 1 into v, 0 for empty; open addressing
    int64_t nslots; // a power of two, at least twice n
} graph;

/* Mixes all the address bits into the low ones that pick the slot
 * (allocations are aligned, so the low bits of an address are zeros). */
static uint64_t hash_ptr(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return h;
}

/* Position of key in g->v, or -1. */
static int64_t find(const graph *g, const void *key)
{
    if (!g->nslots)
        return -1;
    uint64_t mask = (uint64_t)g->nslots - 1;
    for (uint64_t s = hash_ptr(key) & mask;; s = (s + 1) & mask) {
        int64_t k = g->slots[s];
        if (k == 0)
            return -1;
        if (g->v[k - 1].key == key)
            return k - 1;
    }
}

static void slot_put(graph *g, int64_t index)
{
    uint64_t mask = (uint64_t)g->nslots - 1;
    uint64_t s = hash_ptr(g->v[index].key) & mask;
    while (g->slots[s])
        s = (s + 1) & mask;
    g->slots[s] = index + 1;
}

/* The vertex of key, appended (and so queued) when new. -1: no memory. */
static int64_t add(graph *g, const tg_node *node, const tg_tensor *leaf)
{
    const void *key = node ? (const void *)node : (const void *)leaf;
    int64_t k = find(g, key);
    if (k >= 0)
        return k;
    if (g->n == g->cap) {
        int64_t cap = g->cap ? 2 * g->cap : 16;
        vertex *v = tg_realloc(g->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        g->v = v;
        g->cap = cap;
    }
    if (2 * (g->n + 1) > g->nslots) {
        int64_t nslots = g->nslots ? 2 * g->nslots : 32;
        int64_t *slots = tg_calloc((size_t)nslots, sizeof *slots);
        if (!slots)
            return -1;
        free(g->slots);
        g->slots = slots;
        g->nslots = nslots;
        for (int64_t i = 0; i < g->n; i++)
            slot_put(g, i);
    }
    g->v[g->n] = (vertex){key, node, leaf, false};
    slot_put(g, g->n);
    return g->n++;
}

/* s inside a DOT double-quoted string: " and \ escaped, a newline as the
 * DOT line break \n, other control characters as spaces. */
static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
        } else if (c == '\n') {
            fputs("\\n", f);
        } else if (c < 0x20 || c == 0x7f) {
            fputc(' ', f);
        } else {
            fputc(c, f);
        }
    }
}

/* " = 2.5" for a one-element float tensor (worked examples read better
 * with their numbers), nothing otherwise. */
static void put_value(FILE *f, const tg_tensor *x)
{
    if (x && x->numel == 1 && tg_dtype_is_float(x->dtype))
        fprintf(f, " = %.6g", tg_item(x));
}

/* "\n.grad: None", or the gradient's shape (and value when it has one
 * element). */
static void put_grad(FILE *f, const tg_tensor *x)
{
    char shape[TG_SHAPE_STR_MAX];
    if (!x->grad) {
        fputs("\\n.grad: None", f);
        return;
    }
    fprintf(f, "\\n.grad: %s", tg_shape_str(x->grad, shape));
    put_value(f, x->grad);
}

static void write_vertex(FILE *f, int64_t id, const vertex *v)
{
    char shape[TG_SHAPE_STR_MAX];
    fprintf(f, "  n%lld [", (long long)id);
    if (v->node) {
        const tg_node *n = v->node;
        fputs("shape=box, label=\"", f);
        put_escaped(f, n->name);
        tg_shape_format(n->out_shape, n->out_ndim, shape);
        fprintf(f, "\\n%s %s", shape, tg_dtype_name(n->out_dtype));
        put_value(f, n->out); // NULL once the output tensor died
        if (n->out && n->out->retains_grad) {
            fputs("\\nretain_grad", f);
            put_grad(f, n->out);
        }
        if (n->freed)
            fputs("\\n(freed by backward)\", style=dashed", f);
        else
            fprintf(f, "\\nsaved: %d tensor%s\", style=filled, "
                       "fillcolor=lightgrey",
                    n->nsaved, n->nsaved == 1 ? "" : "s");
    } else {
        const tg_tensor *x = v->leaf;
        fprintf(f, "shape=ellipse, label=\"leaf %s %s",
                tg_shape_str(x, shape), tg_dtype_name(x->dtype));
        put_value(f, x);
        fprintf(f, "\\nrequires_grad=%s", x->requires_grad ? "True" : "False");
        put_grad(f, x);
        fprintf(f, "\", style=filled, fillcolor=%s",
                x->requires_grad ? "lightblue" : "white");
    }
    if (v->root)
        fputs(", penwidth=3, color=darkgreen", f);
    fputs("];\n", f);
}

/* Writes the whole file; -1 when memory runs out. */
static int write_graph(FILE *f, graph *g, tg_tensor *const *roots,
                       int nroots, const char *title)
{
    fputs("// The autograd graph of tapegrad; render it with\n"
          "//   dot -Tpng graph.dot -o graph.png\n"
          "digraph tapegrad {\n"
          "  graph [label=\"",
          f);
    if (title) {
        put_escaped(f, title);
        fputs("\\n", f);
    }
    fprintf(f, "grad mode: %s\", labelloc=t, fontname=\"Helvetica\"];\n"
               "  node [fontname=\"Helvetica\", fontsize=11];\n"
               "  edge [fontname=\"Helvetica\", fontsize=9];\n",
            tg_is_grad_enabled() ? "on" : "off");

    /* The roots first, so that they are known as roots when drawn. */
    for (int r = 0; r < nroots; r++) {
        const tg_tensor *x = roots[r];
        if (!x)
            continue;
        int64_t k = add(g, x->grad_fn, x->grad_fn ? NULL : x);
        if (k < 0)
            return -1;
        g->v[k].root = true;
    }
    /* Breadth first: g->v is the queue, the head walks along it. */
    for (int64_t head = 0; head < g->n; head++) {
        vertex v = g->v[head]; // a copy: add() may move the array
        write_vertex(f, head, &v);
        if (!v.node)
            continue;
        const tg_node *n = v.node;
        int ndrawn = 0;
        for (int i = 0; i < n->ninputs; i++)
            ndrawn += n->inputs[i].node || n->inputs[i].leaf;
        for (int i = 0; i < n->ninputs; i++) {
            const tg_edge *e = &n->inputs[i];
            if (!e->node && !e->leaf)
                continue; // a constant, or an edge freed by backward
            int64_t k = add(g, e->node, e->node ? NULL : e->leaf);
            if (k < 0)
                return -1;
            fprintf(f, "  n%lld -> n%lld", (long long)k, (long long)head);
            if (ndrawn > 1) // which operand, when there are several
                fprintf(f, " [label=\"%d\"]", i);
            fputs(";\n", f);
        }
    }
    fputs("}\n", f);
    return 0;
}

int tg_tape_write_dot(FILE *f, tg_tensor *const *roots, int nroots,
                      const char *title)
{
    if (!f) {
        tg_error("tg_tape_write_dot",
                 "the file is NULL\n"
                 "  rule: the graph is written to an open FILE *\n"
                 "  hint: FILE *f = fopen(\"graph.dot\", \"w\"); check it "
                 "is not NULL, then pass it");
        return -1;
    }
    if (nroots < 0 || (nroots > 0 && !roots)) {
        tg_error("tg_tape_write_dot",
                 "%s (nroots is %d)\n"
                 "  rule: roots is an array of nroots >= 0 tensors; NULL "
                 "entries are skipped\n"
                 "  hint: tg_tape_write_dot(f, &loss, 1, \"my graph\")",
                 nroots < 0 ? "the number of roots is negative"
                            : "roots is NULL",
                 nroots);
        return -1;
    }
    /* Every root NULL (the usual &loss after a failed forward): the call
     * that made them has reported, and an empty drawing would pass that
     * failure on as a success. Some NULL among real roots are skipped. */
    bool any = nroots == 0;
    for (int r = 0; r < nroots && !any; r++)
        any = roots[r] != NULL;
    if (!any)
        return -1;
    graph g = {0};
    int rc = write_graph(f, &g, roots, nroots, title);
    free(g.v);
    free(g.slots);
    if (rc < 0) {
        tg_error("tg_tape_write_dot", "out of memory walking the graph");
        return -1;
    }
    if (fflush(f) != 0 || ferror(f)) {
        tg_error("tg_tape_write_dot",
                 "writing the graph failed\n"
                 "  rule: the file must be open for writing, with room "
                 "left on its device\n"
                 "  hint: open it with fopen(path, \"w\")");
        return -1;
    }
    return 0;
}
