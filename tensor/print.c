/*
 * tensor/print.c - tensors printed exactly as PyTorch 1.13 prints them:
 * tg_format, tg_fprint, tg_print and the print options.
 *
 * A port of torch/_tensor_str.py, for strided CPU tensors of float32,
 * float64 and int64: the _Formatter class (one width and one notation for
 * all elements), _vector_str (rows wrapped at linewidth), the recursion of
 * _tensor_str_with_formatter, get_summarized_data ("..." above threshold)
 * and the prefix and suffixes of _str_intern and _add_suffixes. Names below
 * follow the Python so the two can be read side by side.
 *
 * The grad_fn=<...> suffix of a non-leaf tensor names its node through the
 * hook autograd/ installs (tensor/ does not know the tape).
 *
 * Not here: complex, sparse, quantized, named or non-CPU tensors (tapegrad
 * has none).
 */
#include "debug.h"
#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- options */

/* torch.set_printoptions(profile="default"). */
static tg_print_options print_opts = {
    .precision = 4,
    .sci_mode = -1,
    .threshold = 1000,
    .edgeitems = 3,
    .linewidth = 80,
};

/* Bounds that keep every formatted number within a fixed buffer: "%.*f" of
 * 1e308 with 100 decimals is about 410 characters. */
#define PRINT_MAX_PRECISION 100
/* A dim is summarized when its size exceeds 2 * edgeitems, which must not
 * overflow; no dim is longer than INT64_MAX, so larger values change
 * nothing. */
#define PRINT_MAX_EDGEITEMS (INT64_MAX / 2)
#define PRINT_NUM_MAX 512

tg_print_options tg_get_print_options(void)
{
    return print_opts;
}

void tg_set_print_options(tg_print_options o)
{
    static const char *fn = "tg_set_print_options";
    if (o.precision < 0 || o.precision > PRINT_MAX_PRECISION) {
        tg_error(fn,
                 "precision is %d\n"
                 "  rule: precision must be in [0, %d]",
                 o.precision, PRINT_MAX_PRECISION);
    } else if (o.sci_mode < -1 || o.sci_mode > 1) {
        tg_error(fn,
                 "sci_mode is %d\n"
                 "  rule: sci_mode is -1 (automatic), 0 (never) or 1 "
                 "(always)",
                 o.sci_mode);
    } else if (o.threshold < 0) {
        tg_error(fn,
                 "threshold is %lld\n"
                 "  rule: threshold must be >= 0\n"
                 "  hint: INT64_MAX never summarizes, as profile=\"full\"",
                 (long long)o.threshold);
    } else if (o.edgeitems < 1 || o.edgeitems > PRINT_MAX_EDGEITEMS) {
        tg_error(fn,
                 "edgeitems is %lld\n"
                 "  rule: edgeitems must be in [1, %lld] (PyTorch itself "
                 "fails on 0 for tensors of 2 dims or more; 2 * edgeitems "
                 "must fit in int64)\n"
                 "  hint: INT64_MAX / 2 already prints every dim whole",
                 (long long)o.edgeitems, (long long)PRINT_MAX_EDGEITEMS);
    } else if (o.linewidth < 1) {
        tg_error(fn,
                 "linewidth is %d\n"
                 "  rule: linewidth must be >= 1",
                 o.linewidth);
    } else {
        print_opts = o;
    }
}

/* ------------------------------------------------------ growing string */

typedef struct strbuf {
    char *s;
    size_t len, cap;
    bool failed; // out of memory: the result is dropped
} strbuf;

static void sb_append(strbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *s2 = tg_realloc(b->s, cap);
        if (!s2) {
            b->failed = true;
            return;
        }
        b->s = s2;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_puts(strbuf *b, const char *s)
{
    sb_append(b, s, strlen(s));
}

static void sb_spaces(strbuf *b, int64_t n)
{
    static const char spaces[] = "                                ";
    const int64_t chunk = (int64_t)sizeof spaces - 1;
    for (; n > 0; n -= chunk)
        sb_append(b, spaces, (size_t)(n < chunk ? n : chunk));
}

/* ------------------------------------------------------------ elements */

/* One element, whichever the dtype: int64 values are kept exact. */
typedef struct elem {
    double f;
    int64_t i;
} elem;

static elem read_elem(const tg_tensor *x, int64_t off)
{
    const char *base = x->storage->data;
    elem e = {0, 0};
    switch (x->dtype) {
    case TG_FLOAT32: e.f = ((const float *)base)[off]; break;
    case TG_FLOAT64: e.f = ((const double *)base)[off]; break;
    case TG_INT64: e.i = ((const int64_t *)base)[off]; break;
    }
    return e;
}

/* Calls visit on every element that will be printed, in order: all of
 * them, or with summarize only the first and last edgeitems of each dim
 * whose size exceeds 2 * edgeitems (get_summarized_data). */
typedef void (*visit_fn)(elem e, void *ctx);

static void visit_printed(const tg_tensor *x, int dim, int64_t off,
                          bool summarize, int64_t edge, visit_fn visit,
                          void *ctx)
{
    if (dim == x->ndim) {
        visit(read_elem(x, off), ctx);
        return;
    }
    int64_t n = x->shape[dim];
    bool cut = summarize && n - edge > edge;
    for (int64_t i = 0; i < n; i++) {
        if (cut && i == edge)
            i = n - edge;
        visit_printed(x, dim + 1, off + i * x->strides[dim], summarize,
                      edge, visit, ctx);
    }
}

/* ----------------------------------------------------------- formatter */

/* _Formatter: one notation and one width for every printed element. */
typedef struct formatter {
    bool floating_dtype;
    bool int_mode;  // every finite value is an integer: print "1."
    bool sci_mode;  // "{:.4e}" instead of "{:.4f}"
    int max_width;
    int precision;
} formatter;

/* Python's "{:.{p}f}" / "{:.{p}e}" / "{:{w}.{p}e}". C's printf rounds the
 * same way (correctly, ties to even); only NaN differs: Python never prints
 * its sign. */
static int py_format(char out[PRINT_NUM_MAX], double v, char conv,
                     int width, int precision)
{
    int n;
    if (isnan(v))
        n = snprintf(out, PRINT_NUM_MAX, "%*s", width, "nan");
    else if (conv == 'e')
        n = snprintf(out, PRINT_NUM_MAX, "%*.*e", width, precision, v);
    else
        n = snprintf(out, PRINT_NUM_MAX, "%*.*f", width, precision, v);
    /* Cannot happen with precision <= PRINT_MAX_PRECISION; never report
     * more characters than the buffer holds. */
    return n < PRINT_NUM_MAX ? n : PRINT_NUM_MAX - 1;
}

/* Statistics over the nonzero finite values (the first loop of
 * _Formatter.__init__). */
typedef struct value_stats {
    int64_t count;
    double min_abs, max_abs;
    bool all_integers;
} value_stats;

static void collect_stats(elem e, void *ctx)
{
    value_stats *s = ctx;
    if (!isfinite(e.f) || e.f == 0)
        return;
    double a = fabs(e.f);
    if (s->count == 0 || a < s->min_abs)
        s->min_abs = a;
    if (s->count == 0 || a > s->max_abs)
        s->max_abs = a;
    if (e.f != ceil(e.f))
        s->all_integers = false;
    s->count++;
}

/* The second loop: the widest string of the chosen notation. `mode` is
 * 'e' (scientific), '0' (int_mode: "{:.0f}" plus the '.') or 'f'. */
typedef struct width_pass {
    formatter *f;
    char mode;
} width_pass;

static void measure_float(elem e, void *ctx)
{
    width_pass *w = ctx;
    if (!isfinite(e.f) || e.f == 0)
        return;
    char buf[PRINT_NUM_MAX];
    int len = w->mode == '0'
                  ? py_format(buf, e.f, 'f', 0, 0) + 1
                  : py_format(buf, e.f, w->mode, 0, w->f->precision);
    if (len > w->f->max_width)
        w->f->max_width = len;
}

static void measure_int(elem e, void *ctx)
{
    formatter *f = ctx;
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%lld", (long long)e.i);
    if (len > f->max_width)
        f->max_width = len;
}

static formatter formatter_new(const tg_tensor *x, bool summarize,
                               const tg_print_options *o)
{
    formatter f = {tg_dtype_is_float(x->dtype), true, false, 1,
                   o->precision};
    if (!f.floating_dtype) {
        visit_printed(x, 0, x->offset, summarize, o->edgeitems, measure_int,
                      &f);
        /* sci_mode has no effect on integers. */
        return f;
    }
    value_stats s = {0, 0, 0, true};
    visit_printed(x, 0, x->offset, summarize, o->edgeitems, collect_stats,
                  &s);
    /* No nonzero finite value: PyTorch returns before applying the
     * sci_mode option, so zeros, nan and inf always print as "0.", "nan",
     * "inf". */
    if (s.count == 0)
        return f;
    f.int_mode = s.all_integers;
    /* Scientific notation when the values span more than 3 decades or are
     * very large, or (for non-integers) very small. */
    f.sci_mode = s.max_abs / s.min_abs > 1000.0 || s.max_abs > 1.0e8 ||
                 (!f.int_mode && s.min_abs < 1.0e-4);
    width_pass w = {&f, f.sci_mode ? 'e' : f.int_mode ? '0' : 'f'};
    visit_printed(x, 0, x->offset, summarize, o->edgeitems, measure_float,
                  &w);
    if (o->sci_mode >= 0)
        f.sci_mode = o->sci_mode == 1;
    return f;
}

/* _Formatter.format: the value right-aligned to max_width. */
static void format_elem(strbuf *b, const formatter *f, elem e)
{
    char buf[PRINT_NUM_MAX + 1];
    int len;
    if (!f->floating_dtype) {
        len = snprintf(buf, sizeof buf, "%lld", (long long)e.i);
    } else if (f->sci_mode) {
        len = py_format(buf, e.f, 'e', f->max_width, f->precision);
    } else if (f->int_mode) {
        /* "{:.0f}" and a '.' that marks the dtype as floating. */
        len = py_format(buf, e.f, 'f', 0, 0);
        if (isfinite(e.f)) {
            buf[len++] = '.';
            buf[len] = '\0';
        }
    } else {
        len = py_format(buf, e.f, 'f', 0, f->precision);
    }
    sb_spaces(b, f->max_width - len);
    sb_append(b, buf, (size_t)len);
}

/* ------------------------------------------------------------- layout */

typedef struct layout {
    const tg_tensor *x;
    const formatter *f;
    bool summarize;
    int64_t edge;
    int linewidth;
} layout;

/* _vector_str: the last dim, `elements_per_line` entries per line, where an
 * entry is the value and ", "; the " ..." of a summary counts as one. */
static void vector_str(strbuf *b, const layout *l, int64_t off,
                       int64_t indent)
{
    const tg_tensor *x = l->x;
    int dim = x->ndim - 1;
    int64_t element_length = (int64_t)l->f->max_width + 2;
    int64_t room = (int64_t)l->linewidth - indent;
    int64_t per_line = room > 0 ? room / element_length : 0;
    if (per_line < 1)
        per_line = 1;
    int64_t n = x->shape[dim];
    bool cut = l->summarize && n - l->edge > l->edge;
    int64_t item = 0;
    sb_puts(b, "[");
    for (int64_t i = 0; i < n; i++, item++) {
        if (item > 0) {
            if (item % per_line == 0) {
                sb_puts(b, ",\n");
                sb_spaces(b, indent + 1);
            } else {
                sb_puts(b, ", ");
            }
        }
        if (cut && i == l->edge) {
            sb_puts(b, " ...");
            i = n - l->edge - 1; // the loop's i++ lands on n - edge
            continue;
        }
        format_elem(b, l->f, read_elem(x, off + i * x->strides[dim]));
    }
    sb_puts(b, "]");
}

/* _tensor_str_with_formatter: "[" + the slices along dim + "]". Slices
 * are separated by "," + "\n" * (dims left - 1) + " " * (indent + 1), so a
 * 3-d tensor has one blank line between its matrices, a 4-d one two; each
 * level down indents one more column. */
static void tensor_str(strbuf *b, const layout *l, int dim, int64_t off,
                       int64_t indent)
{
    const tg_tensor *x = l->x;
    int left = x->ndim - dim;
    if (left == 0) {
        format_elem(b, l->f, read_elem(x, off));
        return;
    }
    if (left == 1) {
        vector_str(b, l, off, indent);
        return;
    }
    int64_t n = x->shape[dim];
    bool cut = l->summarize && n - l->edge > l->edge;
    sb_puts(b, "[");
    for (int64_t i = 0; i < n; i++) {
        if (i > 0) {
            sb_puts(b, ",");
            for (int k = 0; k < left - 1; k++)
                sb_puts(b, "\n");
            sb_spaces(b, indent + 1);
        }
        if (cut && i == l->edge) {
            sb_puts(b, "...");
            i = n - l->edge - 1;
            continue;
        }
        tensor_str(b, l, dim + 1, off + i * x->strides[dim], indent + 1);
    }
    sb_puts(b, "]");
}

/* _add_suffixes: ", suffix" on the same line while it fits in linewidth,
 * else on a new line indented under the first bracket. PyTorch measures
 * the last line as len - rfind("\n") + 1, which is len + 2 when there is
 * no newline; kept as is. */
static void add_suffixes(strbuf *b, const char *const *suffixes, int n,
                         int64_t indent, int linewidth)
{
    int64_t last_line_len;
    const char *nl = b->failed ? NULL : strrchr(b->s, '\n');
    if (nl)
        last_line_len = (int64_t)b->len - (nl - b->s) + 1;
    else
        last_line_len = (int64_t)b->len + 2;
    for (int k = 0; k < n; k++) {
        int64_t suffix_len = (int64_t)strlen(suffixes[k]);
        if (last_line_len + suffix_len + 2 > linewidth) {
            sb_puts(b, ",\n");
            sb_spaces(b, indent);
            last_line_len = indent + suffix_len;
        } else {
            sb_puts(b, ", ");
            last_line_len += suffix_len + 2;
        }
        sb_puts(b, suffixes[k]);
    }
    sb_puts(b, ")");
}

/* ---------------------------------------------------------------- repr */

char *tg_format(const tg_tensor *x)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_format", x);
    const tg_print_options o = print_opts;
    static const char prefix[] = "tensor(";
    const int64_t indent = (int64_t)sizeof prefix - 1;
    strbuf b = {NULL, 0, 0, false};
    sb_puts(&b, prefix);

    /* float32 is PyTorch's default dtype and int64 needs no suffix either,
     * except for an empty tensor, whose dtype cannot be guessed from the
     * digits. */
    const char *suffixes[4];
    int nsuffixes = 0;
    char size[TG_SHAPE_STR_MAX + 8];
    char dtype[32];
    snprintf(dtype, sizeof dtype, "dtype=torch.%s", tg_dtype_name(x->dtype));
    if (x->numel == 0) {
        sb_puts(&b, "[]");
        if (x->ndim != 1) {
            char s[TG_SHAPE_STR_MAX];
            snprintf(size, sizeof size, "size=%s", tg_shape_str(x, s));
            suffixes[nsuffixes++] = size;
        }
        if (x->dtype != TG_FLOAT32)
            suffixes[nsuffixes++] = dtype;
    } else {
        if (x->dtype == TG_FLOAT64)
            suffixes[nsuffixes++] = dtype;
        bool summarize = x->numel > o.threshold;
        formatter f = formatter_new(x, summarize, &o);
        layout l = {x, &f, summarize, o.edgeitems, o.linewidth};
        tensor_str(&b, &l, 0, x->offset, indent);
    }
    char grad_fn[96];
    if (x->requires_grad && !x->grad_fn)
        suffixes[nsuffixes++] = "requires_grad=True";
    if (x->grad_fn) {
        snprintf(grad_fn, sizeof grad_fn, "grad_fn=<%s>",
                 tg_get_autograd_hooks()->grad_fn_name(x->grad_fn));
        suffixes[nsuffixes++] = grad_fn;
    }
    add_suffixes(&b, suffixes, nsuffixes, indent, o.linewidth);

    if (b.failed) {
        free(b.s);
        char s[TG_SHAPE_STR_MAX];
        tg_error("tg_format",
                 "out of memory formatting a %s tensor of shape %s\n"
                 "  rule: the text must fit in memory\n"
                 "  hint: lower the threshold with tg_set_print_options "
                 "to summarize",
                 tg_dtype_name(x->dtype), tg_shape_str(x, s));
        return NULL;
    }
    return b.s;
}

int tg_fprint(FILE *f, const tg_tensor *x)
{
    if (!x)
        return -1;
    tg_check_alive("tg_fprint", x);
    if (!f) {
        tg_error("tg_fprint", "the FILE is NULL\n"
                              "  rule: pass an open stream such as stdout");
        return -1;
    }
    char *s = tg_format(x);
    if (!s)
        return -1;
    int rc = fputs(s, f) < 0 || fputc('\n', f) == EOF ? -1 : 0;
    free(s);
    if (rc < 0)
        tg_error("tg_fprint", "cannot write to the stream\n"
                              "  rule: the stream must be open for "
                              "writing");
    return rc;
}

int tg_print(const tg_tensor *x)
{
    return tg_fprint(stdout, x);
}
