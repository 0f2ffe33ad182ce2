/*
 * nn/module.c - the module object: named parameters, buffers and children
 * in registration order, train/eval mode, lookup by dotted name, dtype
 * conversion and PyTorch-style printing. The layers themselves (norm.c,
 * ...) are types built on this; nothing here knows any particular layer.
 */
#include "nn.h"
#include "internal.h"

#include "../tensor/debug.h"
#include "../tensor/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum slot_kind { SLOT_PARAMETER, SLOT_BUFFER, SLOT_CHILD } slot_kind;

/* One registered name. */
typedef struct slot {
    slot_kind kind;
    char name[TG_NAME_MAX];
    tg_tensor *tensor; // parameters and buffers (owned reference)
    tg_module *child;  // children (owned)
} slot;

struct tg_module {
    const tg_module_type *type;
    bool training;
    bool has_parent; // a child of another module (which frees it)
    slot *slots; // (nslots,), all kinds in registration order
    int nslots, capacity;
    void *data;  // type->data_size bytes
};

static const char *const kind_names[] = {"parameter", "buffer", "child"};

/* Makes room for one more item in a growing array of n items of `size`
 * bytes with capacity *cap (doubling). Returns the array, moved or not, or
 * NULL when out of memory (the old array is then unchanged). */
static void *grow(void *items, int n, int *cap, size_t size)
{
    if (n < *cap)
        return items;
    int more = *cap ? 2 * *cap : 8;
    void *p = tg_realloc(items, (size_t)more * size);
    if (p)
        *cap = more;
    return p;
}

tg_module *tg_module_new(const tg_module_type *type)
{
    if (!type || !type->forward || !type->name) {
        tg_error("tg_module_new",
                 "the module type is NULL or has no name or forward\n"
                 "  rule: a tg_module_type names its layer and gives its "
                 "forward function\n"
                 "  hint: static const tg_module_type t = {\"MyLayer\", "
                 "my_forward, NULL, sizeof(my_data)};");
        return NULL;
    }
    tg_module *m = tg_calloc(1, sizeof *m);
    if (m && type->data_size && !(m->data = tg_calloc(1, type->data_size))) {
        free(m);
        m = NULL;
    }
    if (!m) {
        tg_error("tg_module_new", "out of memory");
        return NULL;
    }
    m->type = type;
    m->training = true;
    return m;
}

void tg_module_free(tg_module *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nslots; i++) {
        tg_release(m->slots[i].tensor);
        tg_module_free(m->slots[i].child);
    }
    free(m->slots);
    free(m->data);
    free(m);
}

void *tg_module_data(tg_module *m) { return m ? m->data : NULL; }
const void *tg_module_data_const(const tg_module *m)
{
    return m ? m->data : NULL;
}
const tg_module_type *tg_module_get_type(const tg_module *m)
{
    return m ? m->type : NULL;
}

/* ------------------------------------------------------------ registering */

static slot *find_slot(const tg_module *m, const char *name, size_t len)
{
    for (int i = 0; i < m->nslots; i++)
        if (strlen(m->slots[i].name) == len &&
            memcmp(m->slots[i].name, name, len) == 0)
            return &m->slots[i];
    return NULL;
}

/* Appends a slot after checking the name; the slot is zeroed but for kind
 * and name. NULL with an error naming fn. */
static slot *add_slot(const char *fn, tg_module *m, slot_kind kind,
                      const char *name)
{
    bool odd = false; // a character a file name cannot hold
    for (const char *c = name; c && *c && !odd; c++)
        odd = *c == '/' || (unsigned char)*c < 0x20 || *c == 0x7f;
    if (!name || !name[0] || strchr(name, '.') || odd ||
        strlen(name) >= TG_NAME_MAX / 4) {
        tg_error(fn,
                 "invalid %s name \"%s\"\n"
                 "  rule: a name is non-empty, shorter than %d characters, "
                 "has no '.' (dots join the names of nested modules) and "
                 "no '/' or control character (a checkpoint saves each "
                 "tensor as <dotted name>.npy)",
                 kind_names[kind], name ? name : "(null)", TG_NAME_MAX / 4);
        return NULL;
    }
    if (find_slot(m, name, strlen(name))) {
        tg_error(fn,
                 "%s already has something named \"%s\"\n"
                 "  rule: the names of a module's parameters, buffers and "
                 "children are unique",
                 m->type->name, name);
        return NULL;
    }
    slot *slots = grow(m->slots, m->nslots, &m->capacity, sizeof *slots);
    if (!slots) {
        tg_error(fn, "out of memory");
        return NULL;
    }
    m->slots = slots;
    slot *s = &m->slots[m->nslots++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    strcpy(s->name, name);
    return s;
}

/* Parameters and buffers are written in place, element by element (a
 * step, a load, running statistics): an expanded view, whose elements
 * share memory, cannot be. */
static bool refuse_expanded(const char *fn, const char *kind,
                            const char *name, const tg_tensor *t)
{
    int d = tg_expanded_dim(t);
    if (d < 0)
        return false;
    char s[TG_SHAPE_STR_MAX];
    tg_error(fn,
             "%s \"%s\" is an expanded view of shape %s (dim %d has "
             "stride 0)\n"
             "  rule: a %s is written in place element by element, and the "
             "elements of an expanded view share memory\n"
             "  hint: register tg_contiguous(t)",
             kind, name ? name : "(null)", tg_shape_str(t, s), d, kind);
    return true;
}

int tg_module_add_parameter(tg_module *m, const char *name, tg_tensor *t)
{
    if (!m || !t)
        return -1;
    tg_check_alive("tg_module_add_parameter", t);
    if (!tg_dtype_is_float(t->dtype)) {
        tg_error("tg_module_add_parameter",
                 "parameter \"%s\" is %s\n"
                 "  rule: a parameter is a float tensor (it gets a "
                 "gradient)\n"
                 "  hint: register tg_to_dtype(t, TG_FLOAT32), or keep "
                 "integer state as a buffer",
                 name ? name : "(null)", tg_dtype_name(t->dtype));
        return -1;
    }
    if (!tg_is_leaf(t)) {
        tg_error("tg_module_add_parameter",
                 "parameter \"%s\" was made by an op (%s)\n"
                 "  rule: a parameter is a leaf tensor: the optimiser "
                 "updates it in place\n"
                 "  hint: register a fresh tensor, or tg_detach(t)",
                 name ? name : "(null)", tg_grad_fn_name(t));
        return -1;
    }
    if (refuse_expanded("tg_module_add_parameter", "parameter", name, t))
        return -1;
    slot *s = add_slot("tg_module_add_parameter", m, SLOT_PARAMETER, name);
    if (!s || tg_set_requires_grad(t, true) < 0) {
        if (s)
            m->nslots--;
        return -1;
    }
    s->tensor = tg_retain(t);
    return 0;
}

int tg_module_add_buffer(tg_module *m, const char *name, tg_tensor *t)
{
    if (!m || !t)
        return -1;
    tg_check_alive("tg_module_add_buffer", t);
    if (t->requires_grad) {
        tg_error("tg_module_add_buffer",
                 "buffer \"%s\" requires grad\n"
                 "  rule: a buffer is state that is not trained\n"
                 "  hint: register trained tensors with "
                 "tg_module_add_parameter, or a buffer made without "
                 "tg_set_requires_grad",
                 name ? name : "(null)");
        return -1;
    }
    if (refuse_expanded("tg_module_add_buffer", "buffer", name, t))
        return -1;
    slot *s = add_slot("tg_module_add_buffer", m, SLOT_BUFFER, name);
    if (!s)
        return -1;
    s->tensor = tg_retain(t);
    return 0;
}

/* Whether m is tree or one of its descendants. */
static bool contains(const tg_module *tree, const tg_module *m)
{
    if (tree == m)
        return true;
    for (int i = 0; i < tree->nslots; i++)
        if (tree->slots[i].kind == SLOT_CHILD &&
            contains(tree->slots[i].child, m))
            return true;
    return false;
}

void tg_module_drop(tg_module *m)
{
    if (m && !m->has_parent)
        tg_module_free(m);
}

int tg_module_add_child(tg_module *m, const char *name, tg_module *child)
{
    if (!m || !child) {
        tg_module_drop(child);
        return -1;
    }
    if (child->has_parent || contains(child, m)) {
        /* Freed once, by its one parent: a second owner would free it
         * twice. And a module inside itself would make every walk over
         * the tree (forward, the named lists, free) endless. */
        tg_error("tg_module_add_child",
                 "%s \"%s\" %s\n"
                 "  rule: a module has at most one parent, which frees it, "
                 "and cannot contain itself\n"
                 "  hint: to share weights between two layers, register the "
                 "same parameter tensor in both",
                 child->type->name, name ? name : "(null)",
                 child->has_parent ? "is already a child of another module"
                 : child == m      ? "cannot be a child of itself"
                                   : "contains the module it would be "
                                     "added to");
        return -1; // it stays with its owner
    }
    slot *s = add_slot("tg_module_add_child", m, SLOT_CHILD, name);
    if (!s) {
        tg_module_free(child);
        return -1;
    }
    s->child = child; // keeps its own mode, as in PyTorch
    child->has_parent = true;
    return 0;
}

/* ---------------------------------------------------------------- running */

tg_tensor *tg_module_forward(tg_module *m, const tg_tensor *x)
{
    if (!m || !x)
        return NULL;
    tg_check_alive("tg_module_forward", x);
    return m->type->forward(m, x);
}

void tg_module_train(tg_module *m, bool training)
{
    if (!m)
        return;
    m->training = training;
    for (int i = 0; i < m->nslots; i++)
        tg_module_train(m->slots[i].child, training);
}

bool tg_module_is_training(const tg_module *m)
{
    return m && m->training;
}

/* ----------------------------------------------------------------- lookup */

/* Lists the names of kind in m (own ones, not children's) into buf. */
static void names_format(const tg_module *m, slot_kind kind, char *buf,
                         size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->nslots && len + 4 < size; i++)
        if (m->slots[i].kind == kind || m->slots[i].kind == SLOT_CHILD)
            len += (size_t)snprintf(buf + len, size - len, "%s%s%s",
                                    len ? ", " : "", m->slots[i].name,
                                    m->slots[i].kind == SLOT_CHILD ? ".*"
                                                                   : "");
    if (!len)
        snprintf(buf, size, "none");
}

/* The slot at a dotted path, or NULL with an error naming fn. */
static slot *lookup(const char *fn, const tg_module *m, const char *path,
                    slot_kind kind)
{
    if (!m)
        return NULL;
    if (!path) {
        tg_error(fn,
                 "the name is NULL\n"
                 "  rule: pass the dotted name of a %s, e.g. \"0.weight\"",
                 kind_names[kind]);
        return NULL;
    }
    const char *rest = path;
    for (;;) {
        const char *dot = strchr(rest, '.');
        size_t len = dot ? (size_t)(dot - rest) : strlen(rest);
        slot *s = find_slot(m, rest, len);
        if (s && dot && s->kind == SLOT_CHILD) {
            m = s->child;
            rest = dot + 1;
            continue;
        }
        if (s && !dot && s->kind == kind)
            return s;
        char names[512], where[TG_NAME_MAX + 16] = "";
        names_format(m, kind, names, sizeof names);
        if (rest != path) // inside a child: name it (without the last '.')
            snprintf(where, sizeof where, " at \"%.*s\"",
                     (int)(rest - path - 1), path);
        tg_error(fn,
                 "no %s \"%s\"\n"
                 "  rule: names are those given when registering, joined "
                 "with '.' through children\n"
                 "  hint: the %s%s has: %s",
                 kind_names[kind], path, m->type->name, where, names);
        return NULL;
    }
}

tg_tensor *tg_module_parameter(const tg_module *m, const char *name)
{
    slot *s = lookup("tg_module_parameter", m, name, SLOT_PARAMETER);
    return s ? s->tensor : NULL;
}

tg_tensor *tg_module_buffer(const tg_module *m, const char *name)
{
    slot *s = lookup("tg_module_buffer", m, name, SLOT_BUFFER);
    return s ? s->tensor : NULL;
}

tg_module *tg_module_child(const tg_module *m, const char *name)
{
    slot *s = lookup("tg_module_child", m, name, SLOT_CHILD);
    return s ? s->child : NULL;
}

int tg_module_num_children(const tg_module *m)
{
    int n = 0;
    for (int i = 0; m && i < m->nslots; i++)
        n += m->slots[i].kind == SLOT_CHILD;
    return n;
}

tg_module *tg_module_child_at(const tg_module *m, int index)
{
    if (!m)
        return NULL;
    int n = 0;
    for (int i = 0; i < m->nslots; i++)
        if (m->slots[i].kind == SLOT_CHILD && n++ == index)
            return m->slots[i].child;
    tg_error("tg_module_child_at",
             "no child %d in %s\n"
             "  rule: the index is in [0, %d), the number of children\n"
             "  hint: tg_module_num_children(m) tells how many there are",
             index, m->type->name, n);
    return NULL;
}

/* The named tensors of kind under m, each tensor once (a tensor registered
 * twice, as tied weights are, is listed under its first name), m's own
 * first, then each child's, in registration order. */
typedef struct named_list {
    tg_named_tensor *items;
    int n, cap;
    bool failed; // out of memory
} named_list;

static bool listed(const named_list *l, const tg_tensor *t)
{
    for (int i = 0; i < l->n; i++)
        if (l->items[i].tensor == t)
            return true;
    return false;
}

static void collect(const tg_module *m, slot_kind kind, const char *prefix,
                    named_list *l)
{
    for (int i = 0; i < m->nslots && !l->failed; i++) {
        const slot *s = &m->slots[i];
        if (s->kind != kind || listed(l, s->tensor))
            continue;
        tg_named_tensor *items = grow(l->items, l->n, &l->cap, sizeof *items);
        if (!items) {
            l->failed = true;
            return;
        }
        l->items = items;
        snprintf(l->items[l->n].name, TG_NAME_MAX, "%s%s", prefix, s->name);
        l->items[l->n++].tensor = s->tensor;
    }
    for (int i = 0; i < m->nslots && !l->failed; i++) {
        const slot *s = &m->slots[i];
        if (s->kind != SLOT_CHILD)
            continue;
        char p[TG_NAME_MAX];
        if (snprintf(p, sizeof p, "%s%s.", prefix, s->name) >= (int)sizeof p)
            p[sizeof p - 2] = '.'; // nested past TG_NAME_MAX: names are cut
        collect(s->child, kind, p, l);
    }
}

/* Copies the list of kind into out[0 .. max) and returns its length. */
static int named_tensors(const char *fn, const tg_module *m, slot_kind kind,
                         tg_named_tensor *out, int max)
{
    if (!m)
        return -1;
    named_list l = {0};
    collect(m, kind, "", &l);
    if (l.failed) {
        free(l.items);
        tg_error(fn, "out of memory");
        return -1;
    }
    for (int i = 0; out && i < l.n && i < max; i++)
        out[i] = l.items[i];
    free(l.items);
    return l.n;
}

int tg_module_named_parameters(const tg_module *m, tg_named_tensor *out,
                               int max)
{
    return named_tensors("tg_module_named_parameters", m, SLOT_PARAMETER,
                         out, max);
}

int tg_module_named_buffers(const tg_module *m, tg_named_tensor *out,
                            int max)
{
    return named_tensors("tg_module_named_buffers", m, SLOT_BUFFER, out, max);
}

int64_t tg_module_num_elements(const tg_module *m)
{
    if (!m)
        return 0;
    named_list l = {0};
    collect(m, SLOT_PARAMETER, "", &l);
    int64_t total = 0;
    for (int i = 0; i < l.n; i++)
        total += l.items[i].tensor->numel;
    free(l.items);
    if (l.failed)
        tg_error("tg_module_num_elements", "out of memory");
    return l.failed ? -1 : total;
}

void tg_module_zero_grad(tg_module *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nslots; i++) {
        if (m->slots[i].kind == SLOT_PARAMETER)
            tg_zero_grad(m->slots[i].tensor);
        tg_module_zero_grad(m->slots[i].child);
    }
}

/* Every parameter and buffer slot under m, in order (children's too). */
typedef struct slot_list {
    slot **items;
    int n, cap;
    bool failed;
} slot_list;

static void gather_slots(tg_module *m, slot_list *l)
{
    for (int i = 0; i < m->nslots && !l->failed; i++) {
        slot *s = &m->slots[i];
        if (s->child) {
            gather_slots(s->child, l);
            continue;
        }
        slot **items = grow(l->items, l->n, &l->cap, sizeof *items);
        if (!items) {
            l->failed = true;
            return;
        }
        l->items = items;
        l->items[l->n++] = s;
    }
}

/* t converted to dtype as a fresh leaf with t's requires_grad and t's
 * .grad converted too (as module.double() keeps both). New reference. */
static tg_tensor *converted(const tg_tensor *t, tg_dtype dtype)
{
    tg_no_grad_begin(); // (dtypes differ, so these are fresh copies)
    tg_tensor *out = tg_to_dtype(t, dtype);
    tg_tensor *g = out && t->grad ? tg_to_dtype(t->grad, dtype) : NULL;
    tg_no_grad_end();
    if (out && t->grad && !g) {
        tg_release(out);
        return NULL;
    }
    if (out && t->requires_grad && tg_set_requires_grad(out, true) < 0) {
        tg_release(g);
        tg_release(out);
        return NULL;
    }
    if (out)
        out->grad = g;
    return out;
}

/* Converts every float tensor once (a tied tensor stays one tensor), and
 * swaps them in only when all conversions succeeded, so a failure leaves
 * the module as it was. */
int tg_module_to_dtype(tg_module *m, tg_dtype dtype)
{
    if (!m)
        return -1;
    if (!tg_dtype_is_float(dtype)) {
        tg_error("tg_module_to_dtype",
                 "cannot convert %s to %s\n"
                 "  rule: parameters and buffers are float32 or float64\n"
                 "  hint: use TG_FLOAT32 or TG_FLOAT64",
                 m->type->name, tg_dtype_name(dtype));
        return -1;
    }
    slot_list l = {0};
    gather_slots(m, &l);
    tg_tensor **fresh = l.failed ? NULL : tg_calloc((size_t)l.n + 1,
                                                 sizeof *fresh);
    int rc = fresh ? 0 : -1;
    if (!fresh)
        tg_error("tg_module_to_dtype", "out of memory");
    for (int i = 0; rc == 0 && i < l.n; i++) {
        tg_tensor *t = l.items[i]->tensor;
        if (!tg_dtype_is_float(t->dtype) || t->dtype == dtype)
            continue;
        for (int j = 0; j < i && !fresh[i]; j++) // tied: convert once
            if (l.items[j]->tensor == t)
                fresh[i] = tg_retain(fresh[j]);
        if (!fresh[i] && !(fresh[i] = converted(t, dtype)))
            rc = -1;
    }
    for (int i = 0; i < l.n; i++) {
        if (!fresh || !fresh[i])
            continue;
        if (rc == 0) {
            tg_release(l.items[i]->tensor);
            l.items[i]->tensor = fresh[i];
        } else {
            tg_release(fresh[i]);
        }
    }
    free(fresh);
    free(l.items);
    return rc;
}

/* --------------------------------------------------------------- printing */

/* A growing string; on out of memory `failed` is set and text dropped. */
typedef struct strbuf {
    char *text;
    size_t len, cap;
    bool failed;
} strbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->failed || n < 0)
        return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = 2 * (b->len + (size_t)n + 1);
        char *t = tg_realloc(b->text, cap);
        if (!t) {
            b->failed = true;
            return;
        }
        b->text = t;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->text + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* PyTorch's repr: "Name(args)" for a leaf; with children
 *   Name(
 *     (child): ChildRepr
 *   )
 * each nested level indented two more spaces. */
static void format_into(strbuf *b, const tg_module *m, int indent)
{
    char args[256] = "";
    if (m->type->describe)
        m->type->describe(m, args, sizeof args);
    bool has_children = false;
    for (int i = 0; i < m->nslots; i++)
        has_children |= m->slots[i].kind == SLOT_CHILD;
    if (!has_children) {
        sb_printf(b, "%s(%s)", m->type->name, args);
        return;
    }
    sb_printf(b, "%s(", m->type->name);
    if (args[0])
        sb_printf(b, "\n%*s%s", indent + 2, "", args);
    for (int i = 0; i < m->nslots; i++) {
        if (m->slots[i].kind != SLOT_CHILD)
            continue;
        sb_printf(b, "\n%*s(%s): ", indent + 2, "", m->slots[i].name);
        format_into(b, m->slots[i].child, indent + 2);
    }
    sb_printf(b, "\n%*s)", indent, "");
}

char *tg_module_format(const tg_module *m)
{
    if (!m)
        return NULL;
    strbuf b = {0};
    format_into(&b, m, 0);
    if (b.failed || !b.text) {
        free(b.text);
        tg_error("tg_module_format", "out of memory");
        return NULL;
    }
    return b.text;
}

int tg_module_print(const tg_module *m)
{
    char *s = tg_module_format(m);
    if (!s)
        return -1;
    int rc = printf("%s\n", s) < 0 ? -1 : 0;
    free(s);
    return rc;
}

/* ------------------------------------------------ Python-style arguments */

/* Python's spelling of a bool in the printed arguments. */
const char *tg_py_bool(bool b) { return b ? "True" : "False"; }

/* Writes v as Python's repr(float) does: the fewest digits that read back
 * as v, positional for exponents -4..15 with at least one decimal ("1.0",
 * "0.1"), scientific otherwise ("1e-05", "1.5e+16"). buf has 32 bytes. */
const char *tg_py_float(double v, char buf[32])
{
    if (isnan(v) || isinf(v)) {
        snprintf(buf, 32, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return buf;
    }
    int digits = 1; // significant digits needed to read back as v (17 do)
    for (;; digits++) {
        snprintf(buf, 32, "%.*e", digits - 1, v);
        if (digits == 17 || strtod(buf, NULL) == v)
            break;
    }
    int exponent = atoi(strchr(buf, 'e') + 1); // of the rounded value
    if (exponent < -4 || exponent >= 16)
        return buf; // C's "%.Ne" is Python's form: 1e-05, 1.5e+16
    int decimals = digits - 1 - exponent;
    snprintf(buf, 32, "%.*f", decimals > 1 ? decimals : 1, v);
    return buf;
}

/* ------------------------------------------------------ replacing a child */

tg_module *tg_module_replace_child_at(tg_module *m, int index,
                                      tg_module *child)
{
    static const char *fn = "tg_module_replace_child_at";
    if (!m || !child) {
        tg_module_drop(child);
        return NULL;
    }
    slot *s = NULL;
    int n = 0;
    for (int i = 0; i < m->nslots && !s; i++)
        if (m->slots[i].kind == SLOT_CHILD && n++ == index)
            s = &m->slots[i];
    if (!s) {
        tg_error(fn,
                 "child %d of a %s with %d child%s\n"
                 "  rule: index is in [0, tg_module_num_children(m))\n"
                 "  hint: tg_module_num_children(m) gives the count",
                 index, m->type->name, n, n == 1 ? "" : "ren");
        tg_module_drop(child);
        return NULL;
    }
    if (child->has_parent || contains(child, m)) {
        tg_error(fn,
                 "the new %s %s\n"
                 "  rule: a module has at most one parent, which frees it, "
                 "and cannot contain itself\n"
                 "  hint: pass a module that belongs to no other module",
                 child->type->name,
                 child->has_parent ? "is already a child of another module"
                                   : "contains the module it would go into");
        return NULL; // it stays with its owner
    }
    tg_module *old = s->child;
    old->has_parent = false; // the caller's now
    s->child = child;
    child->has_parent = true;
    return old;
}
