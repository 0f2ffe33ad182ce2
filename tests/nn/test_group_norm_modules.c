/*
 * tests/nn/test_group_norm_modules.c - the layers GroupNorm,
 * InstanceNorm1d and InstanceNorm2d (nn/group_norm.c) as modules: what
 * they print (PyTorch 1.13's reprs, from tests/reference/
 * torch-group-norm-vectors.txt), their parameters and buffers, outputs and
 * running statistics over two training batches and an eval batch against
 * nn.InstanceNorm run by PyTorch on the same inputs, inputs without a
 * batch dim, num_batches_tracked left at 0 as in PyTorch, and a checkpoint
 * round trip. The ops are tested in tests/autograd/test_group_norm.c.
 *
 * Tolerance against PyTorch, RTOL 2e-6 / ATOL 2e-6 (float32 layers): the
 * layers compute in double and round once, PyTorch in float32 with its
 * own order of sums; measured differences are a few ulps (<= 5e-7 on
 * values up to ~10).
 */
#define _POSIX_C_SOURCE 200809L // mkdtemp, rmdir, unlink
#include "../common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Element i (C order) of t as a double. */
static double at(const tg_tensor *t, int64_t i)
{
    double *v = malloc((size_t)t->numel * sizeof *v + 1);
    cr_assert(v);
    cr_assert_eq(tg_to_f64_array(t, v), 0);
    double r = v[i];
    free(v);
    return r;
}

#define RTOL 2e-6
#define ATOL 2e-6

/* The section "## <title>" of torch-group-norm-vectors.txt: its "text"
 * line into text (when text is not NULL), or its values as a float32
 * tensor (new reference; NULL when text is given). */
static tg_tensor *torch_section(const char *title, char *text, size_t size)
{
    char line[512];
    FILE *f = fopen(tg_test_ref_path("torch-group-norm-vectors.txt"), "r");
    cr_assert(f, "cannot open torch-group-norm-vectors.txt");
    bool in = false, found = false;
    int64_t shape[TG_MAX_DIMS];
    int ndim = 0;
    size_t count = 0;
    double *v = NULL;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "## ", 3) == 0) {
            if (in)
                break;
            in = strcmp(line + 3, title) == 0;
            found = found || in;
        } else if (in && strncmp(line, "text ", 5) == 0) {
            snprintf(text, size, "%s", line + 5);
        } else if (in && strncmp(line, "shape", 5) == 0) {
            char *p = line + 5, *end;
            for (long d; (d = strtol(p, &end, 10)), end != p; p = end)
                shape[ndim++] = d;
        } else if (in) {
            v = realloc(v, (count + 1) * sizeof *v);
            cr_assert(v);
            v[count++] = strtod(line, NULL);
        }
    }
    fclose(f);
    cr_assert(found, "no section \"%s\"", title);
    if (text) {
        free(v);
        return NULL;
    }
    tg_tensor *t64 = tg_from_array(v, shape, ndim, TG_FLOAT64);
    free(v);
    tg_tensor *t = tg_to_dtype(t64, TG_FLOAT32);
    tg_release(t64);
    return t;
}

static void check_torch(const tg_tensor *actual, const char *title)
{
    char report[1024];
    cr_assert(actual, "%s: no result: %s", title, tg_last_error());
    tg_tensor *e = torch_section(title, NULL, 0);
    tg_tensor *a = actual->ndim == 0 ? tg_to_dtype(actual, TG_FLOAT32)
                                     : tg_retain((tg_tensor *)actual);
    cr_assert(tg_test_close(a, e, RTOL, ATOL, true, report, sizeof report),
              "%s: %s", title, report);
    tg_release(a);
    tg_release(e);
}

static void check_repr(tg_module *m, int i)
{
    char title[32], expected[512];
    snprintf(title, sizeof title, "repr %d", i);
    torch_section(title, expected, sizeof expected);
    cr_assert(m, "%s", tg_last_error());
    char *s = tg_module_format(m);
    cr_assert_str_eq(s, expected);
    free(s);
    tg_module_free(m);
}

TG_TEST(group_norm_modules, print_as_pytorch)
{
    check_repr(tg_group_norm_new(4, 16, 1e-5, true), 0);
    check_repr(tg_group_norm_new(3, 6, 1e-3, false), 1);
    check_repr(tg_instance_norm1d_new(4, 1e-5, 0.1, false, false), 2);
    check_repr(tg_instance_norm2d_new(16, 1e-5, 0.1, false, false), 3);
    check_repr(tg_instance_norm2d_new(3, 1e-3, 0.25, true, true), 4);
}

/* Parameters and buffers as nn.GroupNorm and nn.InstanceNorm make them. */
TG_TEST(group_norm_modules, parameters_and_buffers)
{
    tg_module *gn = tg_group_norm_new(2, 6, 1e-5, true);
    tg_tensor *w = tg_module_parameter(gn, "weight");
    tg_tensor *b = tg_module_parameter(gn, "bias");
    cr_assert(w && b && w->numel == 6 && b->numel == 6);
    cr_assert(w->dtype == TG_FLOAT32 && w->requires_grad);
    for (int64_t c = 0; c < 6; c++) {
        cr_assert_eq(at(w, c), 1.0);
        cr_assert_eq(at(b, c), 0.0);
    }
    tg_named_tensor list[8];
    cr_assert_eq(tg_module_named_buffers(gn, list, 8), 0);
    tg_module_free(gn);
    tg_module *plain = tg_group_norm_new(2, 6, 1e-5, false);
    cr_assert_eq(tg_module_named_parameters(plain, list, 8), 0);
    tg_module_free(plain);

    tg_module *in = tg_instance_norm2d_new(3, 1e-5, 0.1, false, false);
    cr_assert_eq(tg_module_named_parameters(in, list, 8), 0);
    cr_assert_eq(tg_module_named_buffers(in, list, 8), 0);
    tg_module_free(in);
    in = tg_instance_norm1d_new(3, 1e-5, 0.1, true, true);
    cr_assert_eq(tg_module_named_parameters(in, list, 8), 2);
    cr_assert_eq(tg_module_named_buffers(in, list, 8), 3);
    cr_assert_str_eq(list[0].name, "running_mean");
    cr_assert_str_eq(list[1].name, "running_var");
    cr_assert_str_eq(list[2].name, "num_batches_tracked");
    cr_assert_eq(list[2].tensor->dtype, TG_INT64);
    tg_module_free(in);
}

/* The module's forward is the op with the module's settings. */
TG_TEST(group_norm_modules, group_norm_forward_is_the_op)
{
    tg_module *gn = tg_group_norm_new(3, 6, 1e-3, true);
    tg_tensor *x64 = tg_test_load_ref("gn_nchw_x_f64");
    tg_tensor *x = tg_to_dtype(x64, TG_FLOAT32);
    tg_tensor *y = tg_module_forward(gn, x);
    tg_tensor *e = tg_group_norm(x, 3, tg_module_parameter(gn, "weight"),
                                 tg_module_parameter(gn, "bias"), 1e-3);
    tg_assert_close(y, e, 0, 0);
    cr_assert_str_eq(tg_grad_fn_name(y), "NativeGroupNormBackward0");
    tg_module_train(gn, false); // same in eval
    tg_tensor *y_eval = tg_module_forward(gn, x);
    tg_assert_close(y_eval, e, 0, 0);
    tg_release(y_eval);
    tg_release(e);
    tg_release(y);
    tg_release(x);
    tg_release(x64);
    tg_module_free(gn);
}

/* nn.InstanceNorm1d/2d(C, affine=True, track_running_stats=True): two
 * batches in train(), one in eval(), against PyTorch, with the weight and
 * bias of the reference. */
static void run_tracked(const char *set, bool two_d)
{
    char title[128];
    tg_tensor *xs = tg_test_load_ref(two_d ? "in_nchw_x_f32" : "in_ncl_x_f32");
    int64_t C = xs->shape[2];
    tg_module *m = two_d ? tg_instance_norm2d_new(C, 1e-5, 0.1, true, true)
                         : tg_instance_norm1d_new(C, 1e-5, 0.1, true, true);
    cr_assert(m, "%s", tg_last_error());
    tg_tensor *w = tg_test_load_ref(two_d ? "in_nchw_w_f32" : "in_ncl_w_f32");
    tg_tensor *b = tg_test_load_ref(two_d ? "in_nchw_b_f32" : "in_ncl_b_f32");
    tg_no_grad_begin();
    cr_assert_eq(tg_copy_(tg_module_parameter(m, "weight"), w), 0);
    cr_assert_eq(tg_copy_(tg_module_parameter(m, "bias"), b), 0);
    tg_no_grad_end();
    for (int k = 0; k < 3; k++) {
        tg_module_train(m, k < 2);
        tg_tensor *x = tg_select(xs, 0, k);
        tg_tensor *y = tg_module_forward(m, x);
        snprintf(title, sizeof title, "module in_%s batch %d y", set, k);
        check_torch(y, title);
        snprintf(title, sizeof title, "module in_%s batch %d running_mean",
                 set, k);
        check_torch(tg_module_buffer(m, "running_mean"), title);
        snprintf(title, sizeof title, "module in_%s batch %d running_var",
                 set, k);
        check_torch(tg_module_buffer(m, "running_var"), title);
        snprintf(title, sizeof title,
                 "module in_%s batch %d num_batches_tracked", set, k);
        check_torch(tg_module_buffer(m, "num_batches_tracked"), title);
        tg_release(y);
        tg_release(x);
    }
    tg_release(b);
    tg_release(w);
    tg_release(xs);
    tg_module_free(m);
}

TG_TEST(group_norm_modules, instance_norm_running_stats_match_torch)
{
    run_tracked("ncl", false);
    run_tracked("nchw", true);
}

/* The feeding of a wrong answer: the layer's eval output differs from
 * PyTorch's training output of the same batch, and the comparison says
 * so. */
TG_TEST(group_norm_modules, comparison_catches_eval_for_train)
{
    tg_tensor *xs = tg_test_load_ref("in_ncl_x_f32");
    tg_module *m = tg_instance_norm1d_new(4, 1e-5, 0.1, false, true);
    tg_module_train(m, false);
    tg_tensor *x = tg_select(xs, 0, 0);
    tg_tensor *y = tg_module_forward(m, x); // running stats 0 and 1
    tg_tensor *e = torch_section("module in_ncl batch 0 y", NULL, 0);
    char report[512];
    cr_assert(!tg_test_close(y, e, RTOL, ATOL, true, report, sizeof report),
              "an eval output passed for the training one");
    tg_release(e);
    tg_release(y);
    tg_release(x);
    tg_release(xs);
    tg_module_free(m);
}

/* Without track_running_stats the input's statistics are used in eval
 * too; (C, L) and (C, H, W) inputs are one sample. */
TG_TEST(group_norm_modules, untracked_and_unbatched)
{
    tg_tensor *xs = tg_test_load_ref("in_nchw_x_f32");
    tg_tensor *x = tg_select(xs, 0, 0); // (2, 3, 4, 4)
    tg_module *m = tg_instance_norm2d_new(3, 1e-5, 0.1, false, false);
    tg_module_train(m, false);
    tg_tensor *y = tg_module_forward(m, x);
    tg_tensor *e = tg_instance_norm(x, NULL, NULL, NULL, NULL, true, 0.1,
                                    1e-5);
    tg_assert_close(y, e, 0, 0);
    tg_tensor *one = tg_select(x, 0, 1); // (3, 4, 4)
    tg_tensor *y1 = tg_module_forward(m, one);
    cr_assert(y1, "%s", tg_last_error());
    cr_assert_eq(y1->ndim, 3);
    tg_tensor *e1 = tg_select(e, 0, 1);
    tg_assert_close(y1, e1, 0, 0);
    tg_module *m1 = tg_instance_norm1d_new(3, 1e-5, 0.1, false, false);
    tg_tensor *seq = tg_reshape(one, (int64_t[]){3, 16}, 2); // (C, L)
    tg_tensor *y2 = tg_module_forward(m1, seq);
    tg_tensor *y2v = tg_reshape(y2, (int64_t[]){3, 4, 4}, 3);
    tg_assert_close(y2v, e1, 1e-6, 1e-7);
    tg_release(y2v);
    tg_release(y2);
    tg_release(seq);
    tg_module_free(m1);
    tg_release(e1);
    tg_release(y1);
    tg_release(one);
    tg_release(e);
    tg_release(y);
    tg_release(x);
    tg_release(xs);
    tg_module_free(m);
}

/* A trained layer saved and loaded into a fresh one gives the same eval
 * output: the running statistics and the affine parameters go through the
 * checkpoint. */
TG_TEST(group_norm_modules, checkpoint_round_trip)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tg_gn_ckpt_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    tg_tensor *xs = tg_test_load_ref("in_nchw_x_f32");
    tg_module *a = tg_instance_norm2d_new(3, 1e-5, 0.1, true, true);
    tg_tensor *x0 = tg_select(xs, 0, 0), *x2 = tg_select(xs, 0, 2);
    tg_tensor *y0 = tg_module_forward(a, x0); // moves the running stats
    tg_no_grad_begin();
    tg_fill_(tg_module_parameter(a, "weight"), 1.5);
    tg_no_grad_end();
    cr_assert_eq(tg_module_save(a, dir), 0, "%s", tg_last_error());
    tg_module *b = tg_instance_norm2d_new(3, 1e-5, 0.1, true, true);
    cr_assert_eq(tg_module_load(b, dir), 0, "%s", tg_last_error());
    tg_module_train(a, false);
    tg_module_train(b, false);
    tg_tensor *ya = tg_module_forward(a, x2), *yb = tg_module_forward(b, x2);
    tg_assert_close(yb, ya, 0, 0);
    tg_assert_close(tg_module_buffer(b, "running_var"),
                    tg_module_buffer(a, "running_var"), 0, 0);
    tg_module *g = tg_group_norm_new(3, 3, 1e-5, true);
    cr_assert_eq(tg_module_save(g, dir), 0, "%s", tg_last_error());
    tg_release(yb);
    tg_release(ya);
    tg_release(y0);
    tg_release(x2);
    tg_release(x0);
    tg_release(xs);
    tg_module_free(g);
    tg_module_free(b);
    tg_module_free(a);
    DIR *d = opendir(dir);
    cr_assert(d);
    char path[512];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    cr_assert_eq(rmdir(dir), 0);
}

/* GroupNorm in a module trains: its gradients reach weight and bias. */
TG_TEST(group_norm_modules, gradients_reach_the_parameters)
{
    tg_module *gn = tg_group_norm_new(2, 4, 1e-5, true);
    tg_tensor *x64 = tg_test_load_ref("gn_ncl_x_f64");
    tg_tensor *x = tg_to_dtype(x64, TG_FLOAT32);
    tg_tensor *y = tg_module_forward(gn, x);
    tg_tensor *sq = tg_mul(y, y);
    tg_tensor *loss = tg_sum(sq, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    cr_assert(tg_module_parameter(gn, "weight")->grad);
    cr_assert(tg_module_parameter(gn, "bias")->grad);
    tg_release(loss);
    tg_release(sq);
    tg_release(y);
    tg_release(x);
    tg_release(x64);
    tg_module_free(gn);
}
