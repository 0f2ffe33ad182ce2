/*
 * tests/nn/test_module.c - the module object (nn/module.c): registering
 * parameters, buffers and children, the named lists and lookup by dotted
 * name, train/eval mode, zero_grad, counting, dtype conversion, printing
 * as PyTorch does, and ownership (freeing a module releases everything).
 *
 * The modules are small types defined here, with the torch.nn classes they
 * mirror written next to them (the printed texts below are what PyTorch
 * 1.13 prints for those classes):
 *
 *   class Affine(nn.Module):          # y = x * weight + bias
 *       def __init__(self, f):
 *           super().__init__(); self.f = f
 *           self.weight = nn.Parameter(torch.ones(f))
 *           self.bias = nn.Parameter(torch.zeros(f))
 *           self.register_buffer("running", torch.zeros(f))
 *           self.register_buffer("steps", torch.tensor(0))
 *       def extra_repr(self): return f"features={self.f}"
 *   class Stack(nn.Module):           # children "0" and "1", own "gain"
 *   class Outer(nn.Module):           # "enc": Stack, "norm": BatchNorm1d
 *       def extra_repr(self): return "depth=2"
 *   class Empty(nn.Module): pass
 *
 * Layers proper (LayerNorm, BatchNorm) are tested in test_norm_modules.c.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // dup, dup2, fileno: to capture stdout
#endif

#include "../common.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ------------------------------------------------------ the test modules */

typedef struct affine_data {
    int64_t features;
} affine_data;

/* y = x * weight + bias */
static tg_tensor *affine_forward(tg_module *m, const tg_tensor *x)
{
    tg_tensor *xw = tg_mul(x, tg_module_parameter(m, "weight"));
    tg_tensor *y = tg_add(xw, tg_module_parameter(m, "bias"));
    tg_release(xw);
    return y;
}

static void affine_describe(const tg_module *m, char *buf, size_t size)
{
    const affine_data *d = tg_module_data_const(m);
    snprintf(buf, size, "features=%lld", (long long)d->features);
}

static const tg_module_type affine_type = {"Affine", affine_forward,
                                           affine_describe,
                                           sizeof(affine_data)};

/* Registers t (released here: the module keeps its own reference). */
static void add_param(tg_module *m, const char *name, tg_tensor *t)
{
    cr_assert_eq(tg_module_add_parameter(m, name, t), 0, "%s",
                 tg_last_error());
    tg_release(t);
}

static void add_buffer(tg_module *m, const char *name, tg_tensor *t)
{
    cr_assert_eq(tg_module_add_buffer(m, name, t), 0, "%s", tg_last_error());
    tg_release(t);
}

/* Affine(f): weight = 1 + 0.5 k, bias = 0.25 k (k the element index, so
 * the two children of a Stack differ only by what is done to them),
 * buffers running (zeros, float32) and steps (int64 0-d, 7). */
static tg_module *affine_new(int64_t f)
{
    tg_module *m = tg_module_new(&affine_type);
    cr_assert_not_null(m, "%s", tg_last_error());
    ((affine_data *)tg_module_data(m))->features = f;
    tg_tensor *k = tg_arange(0, (double)f, 1, TG_FLOAT32);
    tg_tensor *half = tg_mul_scalar(k, 0.5);
    add_param(m, "weight", tg_add_scalar(half, 1.0));
    add_param(m, "bias", tg_mul_scalar(k, 0.25));
    add_buffer(m, "running", tg_zeros(&f, 1, TG_FLOAT32));
    add_buffer(m, "steps", tg_full(NULL, 0, 7, TG_INT64));
    tg_release(half);
    tg_release(k);
    return m;
}

/* (child "0" then child "1"), times gain */
static tg_tensor *stack_forward(tg_module *m, const tg_tensor *x)
{
    tg_tensor *h = tg_module_forward(tg_module_child(m, "0"), x);
    tg_tensor *h2 = tg_module_forward(tg_module_child(m, "1"), h);
    tg_tensor *y = tg_mul(h2, tg_module_parameter(m, "gain"));
    tg_release(h2);
    tg_release(h);
    return y;
}

static const tg_module_type stack_type = {"Stack", stack_forward, NULL, 0};

/* Stack(f). Its own parameter is registered between the children: the
 * named lists still give a module's own tensors before its children's. */
static tg_module *stack_new(int64_t f)
{
    tg_module *m = tg_module_new(&stack_type);
    cr_assert_not_null(m, "%s", tg_last_error());
    cr_assert_eq(tg_module_add_child(m, "0", affine_new(f)), 0);
    add_param(m, "gain", tg_full(TG_SHAPE(1), 2.0, TG_FLOAT32));
    cr_assert_eq(tg_module_add_child(m, "1", affine_new(f)), 0);
    return m;
}

static tg_tensor *outer_forward(tg_module *m, const tg_tensor *x)
{
    tg_tensor *h = tg_module_forward(tg_module_child(m, "enc"), x);
    tg_tensor *y = tg_module_forward(tg_module_child(m, "norm"), h);
    tg_release(h);
    return y;
}

static void outer_describe(const tg_module *m, char *buf, size_t size)
{
    (void)m;
    snprintf(buf, size, "depth=2");
}

static const tg_module_type outer_type = {"Outer", outer_forward,
                                          outer_describe, 0};

/* Outer(f): enc = Stack(f), norm = BatchNorm1d(f). */
static tg_module *outer_new(int64_t f)
{
    tg_module *m = tg_module_new(&outer_type);
    cr_assert_not_null(m, "%s", tg_last_error());
    cr_assert_eq(tg_module_add_child(m, "enc", stack_new(f)), 0);
    cr_assert_eq(tg_module_add_child(m, "norm", tg_batch_norm1d_new(f, NULL)),
                 0, "%s", tg_last_error());
    return m;
}

static tg_tensor *empty_forward(tg_module *m, const tg_tensor *x)
{
    (void)m;
    return tg_clone(x);
}

static const tg_module_type empty_type = {"Empty", empty_forward, NULL, 0};

/* --------------------------------------------------------------- helpers */

/* torch's Outer(2).named_parameters() / named_buffers() */
static const char *const outer_params[] = {
    "enc.gain",    "enc.0.weight", "enc.0.bias", "enc.1.weight",
    "enc.1.bias",  "norm.weight",  "norm.bias"};
static const char *const outer_buffers[] = {
    "enc.0.running", "enc.0.steps", "enc.1.running", "enc.1.steps",
    "norm.running_mean", "norm.running_var", "norm.num_batches_tracked"};

/* Whether every element of t equals v. */
static bool all_equal(const tg_tensor *t, double v)
{
    double buf[64];
    cr_assert_leq(t->numel, 64);
    cr_assert_eq(tg_to_f64_array(t, buf), 0, "%s", tg_last_error());
    for (int64_t i = 0; i < t->numel; i++)
        if (buf[i] != v)
            return false;
    return true;
}

/* -------------------------------------------------------------- registering */

TG_TEST(module, parameters_are_registered_in_order_and_require_grad)
{
    tg_module *m = tg_module_new(&affine_type);
    tg_tensor *w = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *b = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    cr_assert_not(w->requires_grad);
    cr_assert_eq(tg_module_add_parameter(m, "weight", w), 0);
    cr_assert_eq(tg_module_add_parameter(m, "bias", b), 0);
    cr_assert(w->requires_grad && b->requires_grad,
              "a registered parameter requires grad");
    cr_assert_eq(w->refcount, 2, "the module keeps its own reference");
    tg_named_tensor p[2];
    cr_assert_eq(tg_module_named_parameters(m, p, 2), 2);
    cr_assert_str_eq(p[0].name, "weight");
    cr_assert_eq(p[0].tensor, w);
    cr_assert_str_eq(p[1].name, "bias");
    cr_assert_eq(p[1].tensor, b);
    cr_assert_eq(tg_module_parameter(m, "bias"), b);
    cr_assert_eq(tg_module_named_buffers(m, NULL, 0), 0);
    tg_release(w);
    tg_release(b);
    /* the module's references keep them alive */
    cr_assert_eq(tg_live_tensors(), 2);
    cr_assert(all_equal(tg_module_parameter(m, "weight"), 1.0));
    tg_module_free(m);
}

/* Own tensors first, then each child's, depth first, with dotted names:
 * the lists torch gives for Outer(2). Counting works with out NULL, and
 * with max smaller than the count only max entries are written. */
TG_TEST(module, named_lists_give_dotted_names_in_pytorch_order)
{
    tg_module *m = outer_new(2);
    tg_named_tensor list[8];
    cr_assert_eq(tg_module_named_parameters(m, NULL, 0), 7);
    cr_assert_eq(tg_module_named_buffers(m, NULL, 0), 7);
    cr_assert_eq(tg_module_named_parameters(m, list, 8), 7);
    for (int i = 0; i < 7; i++) {
        cr_assert_str_eq(list[i].name, outer_params[i]);
        cr_assert_eq(list[i].tensor,
                     tg_module_parameter(m, outer_params[i]));
        cr_assert(list[i].tensor->requires_grad, "%s", list[i].name);
    }
    cr_assert_eq(tg_module_named_buffers(m, list, 8), 7);
    for (int i = 0; i < 7; i++) {
        cr_assert_str_eq(list[i].name, outer_buffers[i]);
        cr_assert_eq(list[i].tensor, tg_module_buffer(m, outer_buffers[i]));
        cr_assert_not(list[i].tensor->requires_grad, "%s", list[i].name);
    }
    /* max 3: the count of all, three entries written, the rest untouched */
    tg_named_tensor few[5];
    for (int i = 0; i < 5; i++) {
        strcpy(few[i].name, "untouched");
        few[i].tensor = NULL;
    }
    cr_assert_eq(tg_module_named_parameters(m, few, 3), 7);
    for (int i = 0; i < 3; i++)
        cr_assert_str_eq(few[i].name, outer_params[i]);
    cr_assert_str_eq(few[3].name, "untouched");
    cr_assert_null(few[3].tensor);
    cr_assert_eq(tg_module_named_buffers(m, few, 0), 7);
    cr_assert_str_eq(few[0].name, outer_params[0], "max 0 writes nothing");
    cr_assert_eq(tg_module_named_parameters(NULL, NULL, 0), -1);
    tg_module_free(m);
}

TG_TEST(module, lookup_by_dotted_name)
{
    tg_module *m = outer_new(2);
    tg_module *enc = tg_module_child(m, "enc");
    cr_assert_not_null(enc, "%s", tg_last_error());
    cr_assert_str_eq(tg_module_get_type(enc)->name, "Stack");
    tg_module *second = tg_module_child(m, "enc.1");
    cr_assert_eq(second, tg_module_child(enc, "1"));
    cr_assert_str_eq(tg_module_get_type(second)->name, "Affine");
    cr_assert_eq(tg_module_parameter(m, "enc.1.bias"),
                 tg_module_parameter(second, "bias"));
    cr_assert_neq(tg_module_parameter(m, "enc.1.bias"),
                  tg_module_parameter(m, "enc.0.bias"));
    tg_tensor *nbt = tg_module_buffer(m, "norm.num_batches_tracked");
    cr_assert_not_null(nbt, "%s", tg_last_error());
    cr_assert_eq(nbt->dtype, TG_INT64);
    cr_assert_eq(tg_module_buffer(m, "enc.0.steps"),
                 tg_module_buffer(tg_module_child(m, "enc.0"), "steps"));
    tg_module_free(m);
}

/* A wrong name fails with the names there are (children shown as "0.*"),
 * at the level where the path went wrong. */
TG_TEST(module, lookup_errors_list_the_names)
{
    tg_module *m = outer_new(2);
    tg_module *a = tg_module_child(m, "enc.0");
    cr_assert_null(tg_module_parameter(a, "wieght"));
    tg_assert_error("tg_module_parameter: no parameter \"wieght\"",
                    "rule: names are those given when registering",
                    "hint: the Affine has: weight, bias");
    /* a parameter is not a buffer, and the other way round */
    cr_assert_null(tg_module_buffer(a, "weight"));
    tg_assert_error("tg_module_buffer: no buffer \"weight\"",
                    "hint: the Affine has: running, steps");
    cr_assert_null(tg_module_parameter(a, "running"));
    tg_assert_error("no parameter \"running\"");
    /* inside a child: says where */
    cr_assert_null(tg_module_parameter(m, "enc.2.weight"));
    tg_assert_error("no parameter \"enc.2.weight\"",
                    "the Stack at \"enc\" has: 0.*, gain, 1.*");
    cr_assert_null(tg_module_buffer(m, "norm.running_men"));
    tg_assert_error("the BatchNorm1d at \"norm\" has: running_mean, "
                    "running_var, num_batches_tracked");
    /* a child is not a parameter; a parameter has no children */
    cr_assert_null(tg_module_parameter(m, "enc"));
    tg_assert_error("no parameter \"enc\"", "the Outer has: enc.*, norm.*");
    cr_assert_null(tg_module_child(m, "norm.weight"));
    tg_assert_error("tg_module_child: no child \"norm.weight\"");
    cr_assert_null(tg_module_parameter(m, "enc."));
    tg_assert_error("no parameter \"enc.\"");
    cr_assert_null(tg_module_parameter(m, ""));
    tg_assert_error("no parameter \"\"");
    tg_module_free(m);
}

/* Each rejected registration says why, leaves the module as it was and
 * the tensor as it was (not retained, requires_grad unchanged). */
TG_TEST(module, registration_errors)
{
    tg_module *m = affine_new(2);
    tg_tensor *t = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    static const struct {
        const char *name;
        const char *message;
    } bad_names[] = {
        {"a.b", "invalid parameter name \"a.b\""},
        {"", "invalid parameter name \"\""},
        {NULL, "invalid parameter name \"(null)\""},
        {"a_name_of_thirty_two_characters_", "shorter than 32 characters"},
        {"weight", "Affine already has something named \"weight\""},
        {"running", "Affine already has something named \"running\""},
    };
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
        cr_assert_eq(tg_module_add_parameter(m, bad_names[i].name, t), -1);
        tg_assert_error("tg_module_add_parameter: ", bad_names[i].message,
                        "rule:");
        cr_assert_not(t->requires_grad, "%s", bad_names[i].message);
    }
    tg_assert_error("rule: the names of a module's parameters, buffers and "
                    "children are unique");
    cr_assert_eq(tg_module_add_parameter(m, "x.y", t), -1);
    tg_assert_error("has no '.' (dots join the names of nested modules)");
    /* the longest name allowed: 31 characters */
    cr_assert_eq(tg_module_add_buffer(m, "a_name_of_thirty_one_characters",
                                      t),
                 0, "%s", tg_last_error());
    cr_assert_eq(tg_module_add_buffer(m, "bias", t), -1);
    tg_assert_error("tg_module_add_buffer: Affine already has something "
                    "named \"bias\"");
    cr_assert_eq(tg_module_add_buffer(m, "a.b", t), -1);
    tg_assert_error("tg_module_add_buffer: invalid buffer name \"a.b\"");

    /* int64 parameter */
    tg_tensor *idx = tg_zeros(TG_SHAPE(2), TG_INT64);
    cr_assert_eq(tg_module_add_parameter(m, "idx", idx), -1);
    tg_assert_error("tg_module_add_parameter: parameter \"idx\" is int64",
                    "rule: a parameter is a float tensor",
                    "hint: register tg_to_dtype(t, TG_FLOAT32), or keep "
                    "integer state as a buffer");
    cr_assert_eq(idx->refcount, 1);
    /* a tensor made by an op */
    tg_tensor *leaf = tg_ones(TG_SHAPE(2), TG_FLOAT32);
    tg_set_requires_grad(leaf, true);
    tg_tensor *made = tg_mul_scalar(leaf, 3.0);
    cr_assert_eq(tg_module_add_parameter(m, "made", made), -1);
    tg_assert_error("tg_module_add_parameter: parameter \"made\" was made "
                    "by an op",
                    "rule: a parameter is a leaf tensor",
                    "hint: register a fresh tensor, or tg_detach(t)");
    cr_assert_eq(made->refcount, 1);
    /* a buffer that requires grad */
    int64_t refs = leaf->refcount; // (the tape holds one while made lives)
    cr_assert_eq(tg_module_add_buffer(m, "trained", leaf), -1);
    tg_assert_error("tg_module_add_buffer: buffer \"trained\" requires grad",
                    "rule: a buffer is state that is not trained");
    cr_assert_eq(leaf->refcount, refs);
    /* NULL arguments fail without touching anything */
    cr_assert_eq(tg_module_add_parameter(m, "n", NULL), -1);
    cr_assert_eq(tg_module_add_parameter(NULL, "n", t), -1);
    cr_assert_eq(tg_module_add_buffer(m, "n", NULL), -1);

    cr_assert_eq(tg_module_named_parameters(m, NULL, 0), 2);
    cr_assert_eq(tg_module_named_buffers(m, NULL, 0), 3);
    cr_assert_eq(t->refcount, 2, "held once by the module (the 31-char "
                                 "buffer) and once here");
    tg_release(made);
    tg_release(leaf);
    tg_release(idx);
    tg_release(t);
    tg_module_free(m);
}

/* A child belongs to the parent from the call on, also when the call
 * fails: then it is freed at once, with its tensors. A child that already
 * has a parent (or the parent itself) is refused and stays where it is. */
TG_TEST(module, a_rejected_child_is_freed)
{
    tg_module *m = tg_module_new(&stack_type);
    int64_t before = tg_live_tensors();
    cr_assert_eq(tg_module_add_child(m, "a.b", affine_new(3)), -1);
    tg_assert_error("tg_module_add_child: invalid child name \"a.b\"");
    cr_assert_eq(tg_live_tensors(), before, "the child's tensors are freed");
    cr_assert_eq(tg_module_add_child(m, "x", affine_new(3)), 0);
    cr_assert_eq(tg_module_add_child(m, "x", affine_new(3)), -1);
    tg_assert_error("Stack already has something named \"x\"");
    cr_assert_eq(tg_module_add_child(m, "", affine_new(3)), -1);
    cr_assert_eq(tg_module_add_child(m, "y", NULL), -1);
    cr_assert_eq(tg_module_add_child(NULL, "y", affine_new(3)), -1);
    cr_assert_eq(tg_live_tensors(), before + 4, "only child x is kept");
    /* a module cannot be its own child (and is not freed by trying) */
    cr_assert_eq(tg_module_add_child(m, "self", m), -1);
    tg_assert_error("tg_module_add_child: Stack \"self\" cannot be a child "
                    "of itself",
                    "rule: a module has at most one parent, which frees it",
                    "hint: to share weights between two layers, register "
                    "the same parameter tensor in both");
    cr_assert_eq(tg_module_named_parameters(m, NULL, 0), 2);
    /* nor can a child be given to a second parent: it stays with the
     * first (freeing both below would otherwise free it twice) */
    tg_module *other = tg_module_new(&stack_type);
    tg_module *x = tg_module_child(m, "x");
    cr_assert_eq(tg_module_add_child(other, "x", x), -1);
    tg_assert_error("Affine \"x\" is already a child of another module");
    cr_assert_eq(tg_module_child(m, "x"), x);
    cr_assert_eq(tg_module_named_parameters(other, NULL, 0), 0);
    cr_assert_eq(tg_module_add_child(NULL, "x", x), -1);
    cr_assert_eq(tg_module_named_parameters(x, NULL, 0), 2, "x is alive");
    tg_module_free(other);
    cr_assert_eq(tg_live_tensors(), before + 4);
    tg_module_free(m);
    cr_assert_eq(tg_live_tensors(), before);
}

/* outer > inner: adding outer into inner would make a loop that every
 * walk over the tree (forward, the named lists, free) would follow
 * forever. Refused, and both stay as they were. */
TG_TEST(module, a_module_cannot_contain_itself)
{
    tg_module *outer = tg_module_new(&stack_type);
    tg_module *inner = tg_module_new(&stack_type);
    cr_assert_eq(tg_module_add_child(outer, "inner", inner), 0);
    cr_assert_eq(tg_module_add_child(inner, "w", affine_new(2)), 0);
    cr_assert_eq(tg_module_add_child(tg_module_child(inner, "w"), "outer",
                                     outer),
                 -1);
    tg_assert_error("tg_module_add_child: Stack \"outer\" contains the "
                    "module it would be added to",
                    "and cannot contain itself");
    cr_assert_eq(tg_module_num_children(outer), 1);
    cr_assert_eq(tg_module_num_children(inner), 1);
    cr_assert_eq(tg_module_named_parameters(outer, NULL, 0), 2);
    tg_module_free(outer);
}

TG_TEST(module, children_by_index)
{
    tg_module *m = tg_module_new(&stack_type);
    tg_module *a = affine_new(2), *b = affine_new(3);
    cr_assert_eq(tg_module_add_parameter(m, "p", tg_module_parameter(a,
                                                                 "weight")),
                 0);
    cr_assert_eq(tg_module_add_child(m, "a", a), 0);
    cr_assert_eq(tg_module_add_child(m, "b", b), 0);
    /* parameters do not count: children only, in registration order */
    cr_assert_eq(tg_module_num_children(m), 2);
    cr_assert_eq(tg_module_child_at(m, 0), a);
    cr_assert_eq(tg_module_child_at(m, 1), b);
    cr_assert_null(tg_module_child_at(m, 2));
    tg_assert_error("tg_module_child_at: no child 2 in Stack",
                    "rule: the index is in [0, 2), the number of children");
    cr_assert_null(tg_module_child_at(m, -1));
    tg_assert_error("no child -1 in Stack");
    cr_assert_eq(tg_module_num_children(NULL), 0);
    tg_clear_error();
    cr_assert_null(tg_module_child_at(NULL, 0));
    cr_assert_str_empty(tg_last_error());
    tg_module_free(m);
}

TG_TEST(module, new_checks_the_type)
{
    cr_assert_null(tg_module_new(NULL));
    tg_assert_error("tg_module_new: the module type is NULL or has no name "
                    "or forward",
                    "rule:");
    const tg_module_type no_forward = {"Broken", NULL, NULL, 0};
    cr_assert_null(tg_module_new(&no_forward));
    tg_assert_error("tg_module_new:");
    const tg_module_type no_name = {NULL, empty_forward, NULL, 0};
    cr_assert_null(tg_module_new(&no_name));
    tg_assert_error("tg_module_new:");
    /* data: zeroed, and none when data_size is 0 */
    tg_module *a = tg_module_new(&affine_type);
    cr_assert_eq(((affine_data *)tg_module_data(a))->features, 0);
    cr_assert_eq(tg_module_get_type(a), &affine_type);
    tg_module *e = tg_module_new(&empty_type);
    cr_assert_null(tg_module_data(e));
    cr_assert(tg_module_is_training(e), "a new module is in training mode");
    tg_module_free(e);
    tg_module_free(a);
    tg_module_free(NULL);
}

/* ----------------------------------------------------------------- using */

/* The forward runs through children; gradients reach every parameter,
 * and tg_module_zero_grad zeroes all of them, children included. */
TG_TEST(module, forward_backward_and_zero_grad)
{
    tg_module *m = stack_new(3);
    tg_tensor *x = tg_arange(1, 4, 1, TG_FLOAT32); // (1, 2, 3)
    tg_tensor *y = tg_module_forward(m, x);
    cr_assert_not_null(y, "%s", tg_last_error());
    /* 2 * ((x * w + b) * w + b) with w = (1, 1.5, 2), b = (0, .25, .5):
     * x * w + b = (1, 3.25, 6.5), again (1, 5.125, 13.5), all exact */
    tg_tensor *e = tg_from_array((const float[]){2.0f, 10.25f, 27.0f},
                                 TG_SHAPE(3), TG_FLOAT32);
    tg_assert_close(y, e, 0, 0);
    tg_release(e);
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_release(loss);
    tg_release(y);
    tg_named_tensor p[5];
    cr_assert_eq(tg_module_named_parameters(m, p, 5), 5);
    for (int i = 0; i < 5; i++) {
        cr_assert_not_null(p[i].tensor->grad, "%s", p[i].name);
        /* every parameter influences the output: no all-zero gradient */
        cr_assert_not(all_equal(p[i].tensor->grad, 0.0), "%s", p[i].name);
    }
    tg_tensor *grad0 = p[0].tensor->grad;
    tg_module_zero_grad(m);
    for (int i = 0; i < 5; i++)
        cr_assert(all_equal(p[i].tensor->grad, 0.0), "%s", p[i].name);
    cr_assert_eq(p[0].tensor->grad, grad0, "zeroed in place, as torch's "
                                           "zero_grad(set_to_none=False)");
    /* a module whose parameters never got a gradient: nothing to zero */
    tg_module *fresh = affine_new(2);
    tg_module_zero_grad(fresh);
    cr_assert_null(tg_module_parameter(fresh, "weight")->grad);
    tg_module_free(fresh);
    tg_module_zero_grad(NULL);
    cr_assert_null(tg_module_forward(m, NULL));
    cr_assert_null(tg_module_forward(NULL, x));
    tg_release(x);
    tg_module_free(m);
}

/* module.train(False) / .eval() / .train() reach every descendant; a
 * subtree can be switched on its own. */
TG_TEST(module, train_and_eval_propagate_to_children)
{
    tg_module *m = outer_new(2);
    const char *const kids[] = {"enc", "enc.0", "enc.1", "norm"};
    for (int i = 0; i < 4; i++)
        cr_assert(tg_module_is_training(tg_module_child(m, kids[i])));
    tg_module_train(m, false);
    cr_assert_not(tg_module_is_training(m));
    for (int i = 0; i < 4; i++)
        cr_assert_not(tg_module_is_training(tg_module_child(m, kids[i])),
                      "%s", kids[i]);
    tg_module_train(tg_module_child(m, "enc"), true);
    cr_assert_not(tg_module_is_training(m));
    cr_assert_not(tg_module_is_training(tg_module_child(m, "norm")));
    cr_assert(tg_module_is_training(tg_module_child(m, "enc.1")));
    tg_module_train(m, true);
    for (int i = 0; i < 4; i++)
        cr_assert(tg_module_is_training(tg_module_child(m, kids[i])));
    cr_assert_not(tg_module_is_training(NULL));
    tg_module_train(NULL, true);
    tg_module_free(m);
}

/* sum(p.numel() for p in Outer(2).parameters()) is 13: gain 1, four
 * (2,) in the Affines, weight and bias (2,) in the BatchNorm. */
TG_TEST(module, num_elements_counts_children)
{
    tg_module *m = outer_new(2);
    cr_assert_eq(tg_module_num_elements(m), 13);
    tg_module *a = affine_new(5);
    cr_assert_eq(tg_module_num_elements(a), 10);
    tg_module_free(a);
    tg_module *e = tg_module_new(&empty_type);
    cr_assert_eq(tg_module_num_elements(e), 0);
    tg_module_free(e);
    cr_assert_eq(tg_module_num_elements(NULL), 0);
    tg_module_free(m);
}

/* Outer(2).double(): every parameter float64, still a leaf that requires
 * grad, float buffers float64 with their values, int64 buffers untouched;
 * the module runs on float64 input. A tensor borrowed before is no longer
 * the module's (kept alive here by a retain, still float32). */
TG_TEST(module, to_dtype_converts_parameters_and_float_buffers)
{
    tg_module *m = outer_new(2);
    tg_tensor *old_weight = tg_retain(tg_module_parameter(m, "enc.1.weight"));
    tg_tensor *old_steps = tg_module_buffer(m, "enc.0.steps");
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0, "%s",
                 tg_last_error());
    tg_named_tensor list[7];
    cr_assert_eq(tg_module_named_parameters(m, list, 7), 7);
    for (int i = 0; i < 7; i++) {
        cr_assert_eq(list[i].tensor->dtype, TG_FLOAT64, "%s", list[i].name);
        cr_assert(list[i].tensor->requires_grad, "%s", list[i].name);
        cr_assert(tg_is_leaf(list[i].tensor), "%s", list[i].name);
    }
    cr_assert_eq(tg_module_named_buffers(m, list, 7), 7);
    for (int i = 0; i < 7; i++) {
        bool is_int = strstr(list[i].name, "steps") ||
                      strstr(list[i].name, "num_batches_tracked");
        cr_assert_eq(list[i].tensor->dtype, is_int ? TG_INT64 : TG_FLOAT64,
                     "%s", list[i].name);
    }
    cr_assert_eq(tg_module_buffer(m, "enc.0.steps"), old_steps,
                 "an int64 buffer is left as it is");
    cr_assert_eq(tg_item(old_steps), 7);
    cr_assert(all_equal(tg_module_buffer(m, "norm.running_var"), 1.0));
    tg_tensor *w = tg_module_parameter(m, "enc.1.weight");
    cr_assert_neq(w, old_weight);
    cr_assert_eq(old_weight->dtype, TG_FLOAT32);
    tg_tensor *old_as64 = tg_to_dtype(old_weight, TG_FLOAT64);
    tg_assert_close(w, old_as64, 0, 0);
    tg_release(old_as64);

    tg_tensor *x = tg_ones(TG_SHAPE(4, 2), TG_FLOAT64);
    tg_tensor *y = tg_module_forward(m, x);
    cr_assert_not_null(y, "%s", tg_last_error());
    cr_assert_eq(y->dtype, TG_FLOAT64);
    tg_release(y);

    /* int64 is refused, and nothing changes */
    cr_assert_eq(tg_module_to_dtype(m, TG_INT64), -1);
    tg_assert_error("tg_module_to_dtype: cannot convert Outer to int64",
                    "rule: parameters and buffers are float32 or float64");
    cr_assert_eq(tg_module_parameter(m, "enc.1.weight"), w);
    cr_assert_eq(w->dtype, TG_FLOAT64);
    /* converting to the dtype it has keeps the same tensors */
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0);
    cr_assert_eq(tg_module_parameter(m, "enc.1.weight"), w);
    cr_assert_eq(tg_module_to_dtype(NULL, TG_FLOAT64), -1);
    tg_release(x);
    tg_release(old_weight);
    tg_module_free(m);
}

/* --------------------------------------------------------------- printing */

/* Each text is what PyTorch 1.13 prints for the classes at the top. */
static const char outer_text[] =
    "Outer(\n"
    "  depth=2\n"
    "  (enc): Stack(\n"
    "    (0): Affine(features=2)\n"
    "    (1): Affine(features=2)\n"
    "  )\n"
    "  (norm): BatchNorm1d(2, eps=1e-05, momentum=0.1, affine=True, "
    "track_running_stats=True)\n"
    ")";

static void expect_format(tg_module *m, const char *expected)
{
    char *s = tg_module_format(m);
    cr_assert_not_null(s, "%s", tg_last_error());
    bool same = strcmp(s, expected) == 0;
    if (!same)
        cr_log_error("printed:\n%s\nexpected:\n%s", s, expected);
    free(s);
    cr_assert(same, "printed differently from PyTorch");
}

TG_TEST(module, format_as_pytorch)
{
    tg_module *a = affine_new(3);
    expect_format(a, "Affine(features=3)");
    tg_module_free(a);
    tg_module *e = tg_module_new(&empty_type);
    expect_format(e, "Empty()");
    tg_module_free(e);
    tg_module *s = stack_new(3);
    expect_format(s, "Stack(\n"
                     "  (0): Affine(features=3)\n"
                     "  (1): Affine(features=3)\n"
                     ")");
    tg_module_free(s);
    tg_module *o = outer_new(2);
    expect_format(o, outer_text);
    tg_module_free(o);
    cr_assert_null(tg_module_format(NULL));
}

/* tg_module_print writes the same text and a newline to stdout. */
TG_TEST(module, print_writes_the_format_to_stdout)
{
    tg_module *o = outer_new(2);
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    fflush(stdout);
    int saved = dup(fileno(stdout));
    cr_assert_geq(saved, 0);
    cr_assert_geq(dup2(fileno(f), fileno(stdout)), 0);
    int rc = tg_module_print(o);
    fflush(stdout);
    dup2(saved, fileno(stdout));
    close(saved);
    cr_assert_eq(rc, 0);
    rewind(f);
    char text[1024] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    char expected[1024];
    snprintf(expected, sizeof expected, "%s\n", outer_text);
    cr_assert_str_eq(text, expected);
    cr_assert_eq(tg_module_print(NULL), -1);
    tg_module_free(o);
}

/* ---------------------------------------------------------------- freeing */

/* Freeing the root releases every parameter and buffer of the tree, also
 * the ones whose only other reference was given up long ago; a tensor
 * still held elsewhere survives with its own reference. */
TG_TEST(module, free_releases_everything)
{
    int64_t before = tg_live_tensors();
    tg_module *m = outer_new(2);
    /* 7 parameters, 7 buffers */
    cr_assert_eq(tg_live_tensors(), before + 14);
    tg_tensor *kept = tg_retain(tg_module_buffer(m, "norm.running_mean"));
    tg_tensor *x = tg_ones(TG_SHAPE(3, 2), TG_FLOAT32);
    tg_tensor *y = tg_module_forward(m, x); // BatchNorm's buffers move
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_named_tensor params[16];
    int n = tg_module_named_parameters(m, params, 16);
    cr_assert_eq(n, 7);
    for (int i = 0; i < n; i++) // every parameter now holds a .grad too
        cr_assert_not_null(params[i].tensor->grad, "%s", params[i].name);
    tg_release(loss);
    tg_release(y);
    tg_release(x);
    tg_module_free(m);
    cr_assert_eq(tg_live_tensors(), before + 1, "only the retained buffer");
    cr_assert_eq(kept->refcount, 1);
    tg_release(kept);
}

/* ------------------------------------------------------------ tied weights */

/* Two Affines sharing one weight tensor (the way layers tie weights): as
 * torch, named_parameters lists it once, under its first name
 * (["0.weight", "0.bias", "1.bias"]), the count is 6 for f = 2, both uses
 * add into its one .grad, and .double() keeps it one tensor, with its
 * .grad converted along. */
TG_TEST(module, tied_weights_are_one_parameter)
{
    tg_module *m = tg_module_new(&stack_type);
    tg_module *a = affine_new(2), *b = tg_module_new(&affine_type);
    ((affine_data *)tg_module_data(b))->features = 2;
    tg_tensor *w = tg_module_parameter(a, "weight");
    cr_assert_eq(tg_module_add_parameter(b, "weight", w), 0);
    add_param(b, "bias", tg_zeros(TG_SHAPE(2), TG_FLOAT32));
    cr_assert_eq(tg_module_add_child(m, "0", a), 0);
    cr_assert_eq(tg_module_add_child(m, "1", b), 0);
    add_param(m, "gain", tg_ones(TG_SHAPE(1), TG_FLOAT32));
    tg_named_tensor p[5];
    cr_assert_eq(tg_module_named_parameters(m, p, 5), 4);
    const char *names[] = {"gain", "0.weight", "0.bias", "1.bias"};
    for (int i = 0; i < 4; i++)
        cr_assert_str_eq(p[i].name, names[i]);
    cr_assert_eq(tg_module_num_elements(m), 7);
    cr_assert_eq(tg_module_parameter(m, "1.weight"), w, "still found by "
                                                         "either name");
    /* y = ((x w + b0) w + b1) gain: dL/dw = sum over both uses */
    tg_tensor *x = tg_full(TG_SHAPE(2), 3.0, TG_FLOAT32);
    tg_tensor *y = tg_module_forward(m, x);
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_release(loss);
    tg_release(y);
    /* w = (1, 1.5), b0 = (0, .25), b1 = 0, gain 1: y = (x w + b0) w, so
     * dy/dw = 2 x w + b0 = (6, 9.25) */
    tg_tensor *e = tg_from_array((const float[]){6.0f, 9.25f}, TG_SHAPE(2),
                                 TG_FLOAT32);
    tg_assert_close(w->grad, e, 0, 0);
    tg_release(e);
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0, "%s",
                 tg_last_error());
    tg_tensor *w64 = tg_module_parameter(m, "0.weight");
    cr_assert_eq(w64->dtype, TG_FLOAT64);
    cr_assert_eq(tg_module_parameter(m, "1.weight"), w64, "still tied");
    cr_assert(w64->requires_grad);
    cr_assert_not_null(w64->grad, "the .grad is converted along");
    cr_assert_eq(w64->grad->dtype, TG_FLOAT64);
    e = tg_from_array((const double[]){6.0, 9.25}, TG_SHAPE(2), TG_FLOAT64);
    tg_assert_close(w64->grad, e, 0, 0);
    tg_release(e);
    cr_assert_eq(tg_module_named_parameters(m, NULL, 0), 4);
    tg_release(x);
    tg_module_free(m);
}
