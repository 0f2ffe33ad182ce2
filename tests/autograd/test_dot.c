/*
 * tests/autograd/test_dot.c - the Graphviz export (tg_tape_write_dot): what
 * each vertex shows, how many edges a small graph has, escaping, freed
 * nodes after backward, identical text for identical graphs, and errors.
 *
 * The graphs use tg_add, tg_mul and a tg_function of the test's own, so
 * they do not depend on the other ops recording themselves.
 */
#include "../common.h"

#include <stdio.h>
#include <stdlib.h>

/* The DOT text for roots (malloc'd; the caller frees). */
static char *dot_text(tg_tensor *const *roots, int nroots, const char *title)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    int rc = tg_tape_write_dot(f, roots, nroots, title);
    fclose(f);
    cr_assert_eq(rc, 0, "%s", tg_last_error());
    return buf;
}

/* Occurrences of what in text. (By hand: a sanitizer's strstr measures
 * the whole text on every call, which makes a loop of strstr quadratic.) */
static int count(const char *text, const char *what)
{
    size_t len = strlen(what);
    int n = 0;
    for (const char *p = text; *p;) {
        size_t k = 0;
        while (k < len && p[k] == what[k])
            k++;
        if (k == len) {
            n++;
            p += len;
        } else {
            p++;
        }
    }
    return n;
}

/* (The text in the message is cut short: Criterion sends the message of
 * every assertion, passing or not, and chokes on megabytes.) */
#define assert_has(text, what)                                              \
    cr_assert(strstr((text), (what)) != NULL,                               \
              "expected \"%s\" in the DOT text:\n%.2000s", (what), (text))

static tg_tensor *leaf(double v)
{
    tg_tensor *x = tg_scalar(v, TG_FLOAT64);
    tg_set_requires_grad(x, true);
    return x;
}

/* The worked example of docs/autograd.md: L = (a*b + c) * a. */
typedef struct worked {
    tg_tensor *a, *b, *c, *e, *d, *L;
} worked;

static worked worked_build(void)
{
    worked w;
    w.a = leaf(2);
    w.b = leaf(-3);
    w.c = leaf(10);
    w.e = tg_mul(w.a, w.b);
    w.d = tg_add(w.e, w.c);
    w.L = tg_mul(w.d, w.a);
    return w;
}

static void worked_release(worked *w)
{
    tg_tensor *all[] = {w->L, w->d, w->e, w->c, w->b, w->a};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        tg_release(all[i]);
}

/* The whole file, exactly: ids in visiting order (breadth first from the
 * root, inputs in operand order), edges from input to op. */
static const char worked_dot[] =
    "// The autograd graph of tapegrad; render it with\n"
    "//   dot -Tpng graph.dot -o graph.png\n"
    "digraph tapegrad {\n"
    "  graph [label=\"L = (a*b + c) * a\\ngrad mode: on\", labelloc=t, "
    "fontname=\"Helvetica\"];\n"
    "  node [fontname=\"Helvetica\", fontsize=11];\n"
    "  edge [fontname=\"Helvetica\", fontsize=9];\n"
    "  n0 [shape=box, label=\"MulBackward0\\n() float64 = 8\\nsaved: 2 "
    "tensors\", style=filled, fillcolor=lightgrey, penwidth=3, "
    "color=darkgreen];\n"
    "  n1 -> n0 [label=\"0\"];\n"
    "  n2 -> n0 [label=\"1\"];\n"
    "  n1 [shape=box, label=\"AddBackward0\\n() float64 = 4\\nsaved: 0 "
    "tensors\", style=filled, fillcolor=lightgrey];\n"
    "  n3 -> n1 [label=\"0\"];\n"
    "  n4 -> n1 [label=\"1\"];\n"
    "  n2 [shape=ellipse, label=\"leaf () float64 = 2\\nrequires_grad=True"
    "\\n.grad: None\", style=filled, fillcolor=lightblue];\n"
    "  n3 [shape=box, label=\"MulBackward0\\n() float64 = -6\\nsaved: 2 "
    "tensors\", style=filled, fillcolor=lightgrey];\n"
    "  n2 -> n3 [label=\"0\"];\n"
    "  n5 -> n3 [label=\"1\"];\n"
    "  n4 [shape=ellipse, label=\"leaf () float64 = 10\\nrequires_grad=True"
    "\\n.grad: None\", style=filled, fillcolor=lightblue];\n"
    "  n5 [shape=ellipse, label=\"leaf () float64 = -3\\nrequires_grad=True"
    "\\n.grad: None\", style=filled, fillcolor=lightblue];\n"
    "}\n";

TG_TEST(dot, worked_example_exact)
{
    worked w = worked_build();
    char *text = dot_text(&w.L, 1, "L = (a*b + c) * a");
    cr_assert_str_eq(text, worked_dot);
    free(text);
    worked_release(&w);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(dot, names_shapes_and_saved)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT64);
    tg_tensor *b = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    tg_set_requires_grad(x, true);
    tg_set_requires_grad(b, true);
    tg_tensor *y = tg_mul(x, b); // (2, 3) float64
    tg_tensor *z = tg_add(y, x);
    char *text = dot_text(&z, 1, NULL);
    assert_has(text, "label=\"MulBackward0\\n(2, 3) float64\\nsaved: 2 "
                     "tensors\"");
    assert_has(text, "label=\"AddBackward0\\n(2, 3) float64\\nsaved: 0 "
                     "tensors\"");
    assert_has(text, "label=\"leaf (2, 3) float64\\nrequires_grad=True\\n"
                     ".grad: None\"");
    assert_has(text, "label=\"leaf (3,) float32\\nrequires_grad=True\\n"
                     ".grad: None\"");
    assert_has(text, "label=\"grad mode: on\""); // no title
    cr_assert_eq(count(text, "shape=box"), 2);
    cr_assert_eq(count(text, "shape=ellipse"), 2, "x is drawn once");
    cr_assert_eq(count(text, "penwidth=3"), 1, "one root");
    free(text);
    tg_release(z);
    tg_release(y);
    tg_release(b);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(dot, edge_count)
{
    /* a used twice, by two nodes: 2 + 2 + 2 edges. */
    worked w = worked_build();
    char *text = dot_text(&w.L, 1, NULL);
    cr_assert_eq(count(text, " -> "), 6, "%s", text);
    free(text);
    /* a constant operand is not on the tape: one edge, one leaf. */
    tg_tensor *k = tg_scalar(3, TG_FLOAT64);
    tg_tensor *y = tg_mul(w.a, k);
    text = dot_text(&y, 1, NULL);
    cr_assert_eq(count(text, " -> "), 1, "%s", text);
    cr_assert_eq(count(text, "shape=ellipse"), 1, "%s", text);
    assert_has(text, "  n1 -> n0;\n"); // one operand drawn: no label
    free(text);
    /* the same leaf as both operands: two labelled edges */
    tg_tensor *sq = tg_mul(w.b, w.b);
    text = dot_text(&sq, 1, NULL);
    assert_has(text, "  n1 -> n0 [label=\"0\"];\n  n1 -> n0 [label=\"1\"];\n");
    free(text);
    tg_release(sq);
    tg_release(y);
    tg_release(k);
    worked_release(&w);
    cr_assert_eq(tg_tape_size(), 0);
}

/* A function whose name needs escaping: y = x (a copy). */
static tg_tensor *copy_forward(tg_ctx *ctx, const tg_tensor *const *in,
                               int n, const void *args)
{
    (void)ctx, (void)n, (void)args;
    return tg_clone(in[0]);
}

static int copy_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx;
    gi[0] = tg_clone(g);
    return gi[0] ? 0 : -1;
}

static const tg_function odd_name = {"My\"Odd\\nName\nBackward",
                                     copy_forward, copy_backward, 0};

TG_TEST(dot, escaping)
{
    tg_tensor *x = leaf(1);
    const tg_tensor *in = x;
    tg_tensor *y = tg_function_apply(&odd_name, &in, 1, NULL);
    char *text = dot_text(&y, 1, "say \"hi\"\\ to\nthe\tgraph");
    /* " and \ escaped, newline as \n, a tab as a space */
    assert_has(text, "label=\"say \\\"hi\\\"\\\\ to\\nthe graph\\ngrad mode");
    assert_has(text, "label=\"My\\\"Odd\\\\nName\\nBackward\\n() float64");
    /* nothing unescaped: every line is one statement or a comment */
    for (const char *p = text; *p; p = strchr(p, '\n') + 1) {
        size_t len = strcspn(p, "\n");
        cr_assert(len > 0 && (p[len - 1] == ';' || p[len - 1] == '{' ||
                              p[len - 1] == '}' || strncmp(p, "//", 2) == 0),
                  "a broken line in:\n%s", text);
    }
    free(text);
    tg_release(y);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(dot, freed_node_after_backward_is_dashed)
{
    worked w = worked_build();
    cr_assert_eq(tg_backward(w.L), 0, "%s", tg_last_error());
    char *text = dot_text(&w.L, 1, NULL);
    assert_has(text, "label=\"MulBackward0\\n() float64 = 8\\n(freed by "
                     "backward)\", style=dashed");
    /* backward released what the two muls saved; the links stay */
    cr_assert_eq(count(text, "(freed by backward)"), 2, "%s", text);
    cr_assert_eq(count(text, " -> "), 6, "%s", text);
    cr_assert_eq(count(text, "saved: 0 tensors"), 1, "the add saved none");
    free(text);
    /* the leaves now have their .grad */
    text = dot_text((tg_tensor *[]){w.a, w.b}, 2, NULL);
    assert_has(text, "leaf () float64 = 2\\nrequires_grad=True\\n.grad: () "
                     "= -2\"");
    assert_has(text, "leaf () float64 = -3\\nrequires_grad=True\\n.grad: () "
                     "= 4\"");
    free(text);
    worked_release(&w);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(dot, kept_tape_is_not_freed)
{
    worked w = worked_build();
    tg_retain_grad(w.d);
    cr_assert_eq(tg_backward_ex(w.L, &(tg_backward_options){.keep_tape = true}),
                 0, "%s", tg_last_error());
    char *text = dot_text(&w.L, 1, NULL);
    cr_assert_eq(count(text, "freed"), 0, "%s", text);
    cr_assert_eq(count(text, " -> "), 6);
    assert_has(text, "AddBackward0\\n() float64 = 4\\nretain_grad\\n.grad: () "
                     "= 2\\nsaved: 0 tensors");
    assert_has(text, "leaf () float64 = 10\\nrequires_grad=True\\n.grad: () "
                     "= 2\"");
    free(text);
    worked_release(&w);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(dot, same_graph_same_text)
{
    worked w1 = worked_build();
    char *t1 = dot_text(&w1.L, 1, "t");
    char *t1_again = dot_text(&w1.L, 1, "t");
    cr_assert_str_eq(t1, t1_again);
    worked w2 = worked_build(); // new addresses, same graph
    char *t2 = dot_text(&w2.L, 1, "t");
    cr_assert_str_eq(t1, t2);
    free(t1);
    free(t1_again);
    free(t2);
    worked_release(&w2);
    worked_release(&w1);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(dot, roots_null_leaf_and_shared)
{
    worked w = worked_build();
    /* NULL entries are skipped; a repeated root is drawn once */
    char *text = dot_text((tg_tensor *[]){NULL, w.L, NULL, w.L}, 4, NULL);
    cr_assert_str_eq(text + strlen(text) - 2, "}\n");
    cr_assert_eq(count(text, "shape=box"), 3);
    cr_assert_eq(count(text, "penwidth=3"), 1);
    free(text);
    /* two roots sharing a subgraph: shared nodes once, both roots marked */
    text = dot_text((tg_tensor *[]){w.L, w.e}, 2, NULL);
    cr_assert_eq(count(text, "shape=box"), 3);
    cr_assert_eq(count(text, "penwidth=3"), 2);
    cr_assert_eq(count(text, " -> "), 6);
    assert_has(text, "  n1 [shape=box, label=\"MulBackward0\\n() float64 = "
                     "-6\\nsaved: 2 tensors\", style=filled, "
                     "fillcolor=lightgrey, penwidth=3, color=darkgreen];");
    free(text);
    /* a leaf root: one highlighted ellipse */
    text = dot_text(&w.c, 1, NULL);
    cr_assert_eq(count(text, "shape=ellipse"), 1);
    cr_assert_eq(count(text, "shape=box"), 0);
    assert_has(text, "leaf () float64 = 10\\nrequires_grad=True\\n.grad: "
                     "None\", style=filled, fillcolor=lightblue, penwidth=3");
    free(text);
    /* a plain tensor: an ellipse that needs no gradient */
    tg_tensor *plain = tg_zeros(TG_SHAPE(2, 2), TG_INT64);
    text = dot_text(&plain, 1, NULL);
    assert_has(text, "label=\"leaf (2, 2) int64\\nrequires_grad=False\\n"
                     ".grad: None\", style=filled, fillcolor=white");
    free(text);
    /* no roots: only the header and the label */
    text = dot_text(NULL, 0, "empty");
    cr_assert_eq(count(text, "shape="), 0);
    assert_has(text, "label=\"empty\\ngrad mode: on\"");
    free(text);
    tg_release(plain);
    worked_release(&w);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(dot, grad_mode_in_label)
{
    tg_no_grad_begin();
    char *text = dot_text(NULL, 0, NULL);
    tg_no_grad_end();
    assert_has(text, "label=\"grad mode: off\"");
    free(text);
}

TG_TEST(dot, long_chain_without_recursion)
{
    /* 20000 nodes deep: a recursive walk would need 20000 frames */
    enum { N = 20000 };
    tg_tensor *x = leaf(0.5);
    tg_tensor *y = tg_retain(x);
    for (int i = 0; i < N; i++) {
        tg_tensor *next = tg_add(y, x);
        tg_release(y);
        y = next;
    }
    char *text = dot_text(&y, 1, NULL);
    cr_assert_eq(count(text, "AddBackward0"), N);
    cr_assert_eq(count(text, " -> "), 2 * N);
    /* breadth first: the root, the add before it, then x; the first add
     * is met last */
    assert_has(text, "  n2 [shape=ellipse");
    assert_has(text, "  n20000 [shape=box");
    free(text);
    tg_release(y);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(dot, errors)
{
    tg_tensor *x = leaf(1);
    cr_assert_eq(tg_tape_write_dot(NULL, &x, 1, NULL), -1);
    tg_assert_error("tg_tape_write_dot: the file is NULL", "rule:", "hint:",
                    "fopen");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(tg_tape_write_dot(f, &x, -1, NULL), -1);
    tg_assert_error("tg_tape_write_dot: the number of roots is negative",
                    "nroots is -1", "rule:", "hint:");
    cr_assert_eq(tg_tape_write_dot(f, NULL, 2, NULL), -1);
    tg_assert_error("tg_tape_write_dot: roots is NULL (nroots is 2)",
                    "rule:", "hint:");
    fclose(f);
    cr_assert_eq(len, 0, "nothing written on an error");
    free(buf);
    /* a stream that cannot be written */
    FILE *ro = fopen("/dev/null", "r");
    cr_assert_not_null(ro);
    cr_assert_eq(tg_tape_write_dot(ro, &x, 1, NULL), -1);
    tg_assert_error("tg_tape_write_dot: writing the graph failed", "rule:",
                    "hint:");
    fclose(ro);
    tg_release(x);
}
