/*
 * tests/reliability/test_limits.c - values at the edge of their type and
 * callbacks that overstep, each of which once slipped past a check:
 *
 *   - a tg_function whose data_size is near SIZE_MAX (the rounding of the
 *     node's allocation wrapped to a few bytes);
 *   - print options whose arithmetic overflows (n > 2 * edgeitems);
 *   - a custom backward that writes past its inputs' gradient slots (the
 *     tensor leaked, one per backward);
 *   - a BatchNorm whose num_batches_tracked cannot count one more batch (the
 *     running statistics moved, then the forward failed);
 *   - paths longer than a message (the reason and the rule were cut off).
 *
 * Each test fails on the code before its fix.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkdtemp
#endif

#include "../common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ----------------------------------------------- tg_function.data_size */

static tg_tensor *clone_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                int n, const void *args)
{
    (void)ctx, (void)n, (void)args;
    return tg_clone(in[0]);
}

static int pass_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx;
    gi[0] = tg_retain((tg_tensor *)g);
    return 0;
}

TG_TEST(limits, function_data_size_near_size_max_is_refused)
{
    tg_tensor *x = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    /* Rounded up to a multiple of the alignment, these wrapped to 0. */
    const size_t sizes[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 15};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        tg_function f = {"HugeDataBackward", clone_forward, pass_backward,
                         sizes[k]};
        const tg_tensor *in[] = {x};
        tg_clear_error();
        tg_tensor *y = tg_function_apply(&f, in, 1, NULL);
        cr_assert_null(y, "data_size %zu was accepted", sizes[k]);
        tg_assert_error("tg_function_apply: HugeDataBackward asks for",
                        "rule: ", "hint: ");
    }
    tg_release(x);
}

/* A data_size that is merely too big for memory is reported as such. */
TG_TEST(limits, function_data_size_too_big_for_memory)
{
    tg_tensor *x = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_function f = {"BigDataBackward", clone_forward, pass_backward,
                     (size_t)1 << 62};
    const tg_tensor *in[] = {x};
    tg_tensor *y = tg_function_apply(&f, in, 1, NULL);
    cr_assert_null(y);
    tg_assert_error("out of memory");
    tg_release(x);
}

/* ------------------------------------------------------ print options */

TG_TEST(limits, print_edgeitems_beyond_half_of_int64_is_refused)
{
    tg_print_options before = tg_get_print_options();
    tg_print_options o = before;
    o.edgeitems = INT64_MAX;
    tg_set_print_options(o);
    cr_assert_eq(tg_get_print_options().edgeitems, before.edgeitems,
                 "edgeitems INT64_MAX was accepted");
    tg_assert_error("tg_set_print_options: edgeitems is "
                    "9223372036854775807",
                    "rule: ");
    o.edgeitems = INT64_MAX / 2 + 1;
    tg_set_print_options(o);
    cr_assert_eq(tg_get_print_options().edgeitems, before.edgeitems);
}

/* The largest accepted values print a tensor whole and on as few lines as
 * fit (under UBSan an overflow aborts here). */
TG_TEST(limits, print_largest_options_format)
{
    tg_print_options before = tg_get_print_options();
    tg_print_options o = before;
    o.edgeitems = INT64_MAX / 2;
    o.threshold = 0; // summarize every tensor
    o.linewidth = INT32_MAX;
    tg_set_print_options(o);
    cr_assert_eq(tg_get_print_options().edgeitems, INT64_MAX / 2);
    tg_tensor *x = tg_arange(0, 8, 1, TG_INT64);
    char *s = tg_format(x);
    tg_set_print_options(before);
    cr_assert_not_null(s);
    cr_assert_str_eq(s, "tensor([0, 1, 2, 3, 4, 5, 6, 7])");
    free(s);
    tg_release(x);
}

/* ------------------------------------- a backward that writes too many */

/* One input; writes its gradient and one more, past the end. */
static int overstep_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx;
    gi[0] = tg_retain((tg_tensor *)g);
    gi[1] = tg_clone(g);
    return 0;
}

TG_TEST(limits, backward_writing_past_its_inputs_fails_and_leaks_nothing)
{
    static const tg_function f = {"OverstepBackward", clone_forward,
                                  overstep_backward, 0};
    int64_t live = tg_live_tensors();
    tg_tensor *x = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    const tg_tensor *in[] = {x};
    tg_tensor *y = tg_function_apply(&f, in, 1, NULL);
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    int rc = tg_backward(loss);
    cr_assert_eq(rc, -1, "the backward wrote grad_inputs[1] unnoticed");
    tg_assert_error("tg_backward: the backward of OverstepBackward wrote "
                    "grad_inputs[1]",
                    "rule: ", "hint: ");
    cr_assert_null(x->grad, "a failed backward gave x a gradient");
    tg_release(loss);
    tg_release(y);
    tg_release(x);
    cr_assert_eq(tg_live_tensors(), live, "%lld tensors leaked",
                 (long long)(tg_live_tensors() - live));
}

/* TG_MAX_INPUTS inputs, and a write to the slot after the last. */
static tg_tensor *first_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                int n, const void *args)
{
    (void)ctx, (void)n, (void)args;
    return tg_clone(in[0]);
}

static int one_past_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx;
    gi[0] = tg_retain((tg_tensor *)g);
    gi[TG_MAX_INPUTS] = tg_retain((tg_tensor *)g);
    return 0;
}

TG_TEST(limits, backward_writing_one_past_the_most_inputs_is_caught)
{
    static const tg_function f = {"OnePastBackward", first_forward,
                                  one_past_backward, 0};
    tg_tensor *x = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    const tg_tensor *in[TG_MAX_INPUTS];
    for (int i = 0; i < TG_MAX_INPUTS; i++)
        in[i] = x;
    tg_tensor *y = tg_function_apply(&f, in, TG_MAX_INPUTS, NULL);
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), -1);
    tg_assert_error("tg_backward: the backward of OnePastBackward wrote "
                    "grad_inputs[8]");
    tg_release(loss);
    tg_release(y);
    tg_release(x);
}

/* A backward that fails after writing past the end leaks nothing either. */
static int overstep_then_fail_backward(tg_ctx *ctx, const tg_tensor *g,
                                       tg_tensor **gi)
{
    (void)ctx;
    gi[2] = tg_clone(g);
    tg_error("OverstepFailBackward", "deliberate failure");
    return -1;
}

TG_TEST(limits, failing_backward_writing_past_its_inputs_leaks_nothing)
{
    static const tg_function f = {"OverstepFailBackward", clone_forward,
                                  overstep_then_fail_backward, 0};
    int64_t live = tg_live_tensors();
    tg_tensor *x = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    const tg_tensor *in[] = {x};
    tg_tensor *y = tg_function_apply(&f, in, 1, NULL);
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), -1);
    tg_release(loss);
    tg_release(y);
    tg_release(x);
    cr_assert_eq(tg_live_tensors(), live);
}

/* ------------------------------------------- BatchNorm's batch counter */

static void set_count(tg_module *bn, int64_t count)
{
    tg_data_i64(tg_module_buffer(bn, "num_batches_tracked"))[0] = count;
}

static int64_t get_count(tg_module *bn)
{
    return tg_data_i64(tg_module_buffer(bn, "num_batches_tracked"))[0];
}

/* x (4, 2) with known values: channel means 2.5 and -1. */
static tg_tensor *batch(void)
{
    return tg_from_array((float[]){1, -1, 2, -2, 3, 0, 4, -1},
                         TG_SHAPE(4, 2), TG_FLOAT32);
}

static void check_refused(tg_module *bn, int64_t count)
{
    float mean[2] = {0.25f, -0.5f}, var[2] = {2.0f, 3.0f};
    memcpy(tg_data_f32(tg_module_buffer(bn, "running_mean")), mean,
           sizeof mean);
    memcpy(tg_data_f32(tg_module_buffer(bn, "running_var")), var,
           sizeof var);
    set_count(bn, count);
    tg_tensor *x = batch();
    tg_clear_error();
    tg_tensor *y = tg_module_forward(bn, x);
    cr_assert_null(y, "count %lld: the forward succeeded", (long long)count);
    tg_assert_error("BatchNorm1d", "num_batches_tracked", "rule: ",
                    "hint: ");
    cr_assert_null(strstr(tg_last_error(), "tg_fill_"), "%s",
                   tg_last_error());
    const float *rm = tg_data_f32(tg_module_buffer(bn, "running_mean"));
    const float *rv = tg_data_f32(tg_module_buffer(bn, "running_var"));
    for (int c = 0; c < 2; c++) {
        cr_assert_eq(rm[c], mean[c], "running_mean[%d] moved to %g", c,
                     (double)rm[c]);
        cr_assert_eq(rv[c], var[c], "running_var[%d] moved to %g", c,
                     (double)rv[c]);
    }
    cr_assert_eq(get_count(bn), count);
    tg_release(x);
}

TG_TEST(limits, batch_norm_full_counter_fails_before_anything_moves)
{
    tg_module *bn = tg_batch_norm1d_new(2, NULL);
    check_refused(bn, INT64_MAX);
    check_refused(bn, -1); // a count is never negative
    tg_module_free(bn);

    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.cumulative = true; // momentum 1 / count: the count is read first
    bn = tg_batch_norm1d_new(2, &c);
    check_refused(bn, INT64_MAX);
    check_refused(bn, -1);
    tg_module_free(bn);
}

/* The counter counts exactly, past 2^53 and up to INT64_MAX. */
TG_TEST(limits, batch_norm_counter_is_exact)
{
    tg_module *bn = tg_batch_norm1d_new(2, NULL);
    const int64_t counts[] = {((int64_t)1 << 53) + 1, INT64_MAX - 1};
    for (int k = 0; k < 2; k++) {
        set_count(bn, counts[k]);
        tg_tensor *x = batch();
        tg_tensor *y = tg_module_forward(bn, x);
        cr_assert_not_null(y, "count %lld: %s", (long long)counts[k],
                           tg_last_error());
        cr_assert_eq(get_count(bn), counts[k] + 1, "%lld became %lld",
                     (long long)counts[k], (long long)get_count(bn));
        tg_release(y);
        tg_release(x);
    }
    /* In eval the counter is not read: a full one is no error there. */
    tg_module_train(bn, false);
    set_count(bn, INT64_MAX);
    tg_tensor *x = batch();
    tg_tensor *y = tg_module_forward(bn, x);
    cr_assert_not_null(y, "%s", tg_last_error());
    tg_release(y);
    tg_release(x);
    tg_module_free(bn);
}

/* ------------------------------------------------------ long paths */

#define LONG_NAME 3000

/* dir + "/" + 3000 'a's + suffix; malloc'd. */
static char *long_path(const char *dir, const char *suffix)
{
    size_t n = strlen(dir) + 1 + LONG_NAME + strlen(suffix) + 1;
    char *p = malloc(n);
    cr_assert_not_null(p);
    size_t len = (size_t)snprintf(p, n, "%s/", dir);
    memset(p + len, 'a', LONG_NAME);
    strcpy(p + len + LONG_NAME, suffix);
    return p;
}

/* The message was not cut: it still has its rule line, its path is
 * shortened with "..." and keeps the path's end (the file's name). */
static void check_message_whole(const char *what, const char *end)
{
    const char *e = tg_last_error();
    cr_assert(strstr(e, "\n  rule: ") != NULL,
              "%s: the rule line was lost:\n%.300s...", what, e);
    cr_assert(strlen(e) < 1200, "%s: the message is %zu bytes", what,
              strlen(e));
    cr_assert(strstr(e, "aaa...aaa") != NULL, "%s: no shortened path:\n%s",
              what, e);
    cr_assert(strstr(e, end) != NULL, "%s: the path's end '%s' is lost:\n%s",
              what, end, e);
}

TG_TEST(limits, long_paths_leave_room_for_the_rule)
{
    char dir[] = "/tmp/tg_limits_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);

    char *npy = long_path(dir, ".npy");
    cr_assert_eq(tg_save_npy(npy, x), -1);
    check_message_whole("tg_save_npy", "aaa.npy");
    cr_assert_null(tg_load_npy(npy));
    check_message_whole("tg_load_npy", "aaa.npy");

    char *words = long_path(dir, ".txt");
    cr_assert_null(tg_words_load(words));
    check_message_whole("tg_words_load", "aaa.txt");

    char *ckpt = long_path(dir, "-ckpt");
    tg_module *m = tg_linear_new(2, 1, true);
    cr_assert_eq(tg_module_save(m, ckpt), -1);
    check_message_whole("tg_module_save", "aaa-ckpt");
    cr_assert_eq(tg_module_load(m, ckpt), -1);
    check_message_whole("tg_module_load", "aaa-ckpt");
    tg_module_free(m);

    free(ckpt);
    free(words);
    free(npy);
    tg_release(x);
    cr_assert_eq(rmdir(dir), 0, "the failed calls left files in %s", dir);
}

/* A checkpoint whose folders cannot be made: the message shows two long
 * paths, the folder and the checkpoint, both shortened. */
TG_TEST(limits, long_checkpoint_path_under_a_file)
{
    char dir[] = "/tmp/tg_limits_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char file[64];
    snprintf(file, sizeof file, "%s/f", dir);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);
    /* "<dir>/f/bbb.../bbb.../ckpt": 30 folders of 99 'b's. */
    size_t n = strlen(file) + 30 * 100 + 8;
    char *ckpt = malloc(n);
    cr_assert_not_null(ckpt);
    size_t len = (size_t)snprintf(ckpt, n, "%s", file);
    for (int k = 0; k < 30; k++) {
        ckpt[len++] = '/';
        memset(ckpt + len, 'b', 99);
        len += 99;
    }
    strcpy(ckpt + len, "/ckpt");
    tg_module *m = tg_linear_new(2, 1, true);
    cr_assert_eq(tg_module_save(m, ckpt), -1);
    const char *e = tg_last_error();
    cr_assert(strstr(e, "cannot create the folder") != NULL, "%s", e);
    cr_assert(strstr(e, "\n  rule: ") && strstr(e, "\n  hint: "), "%s", e);
    cr_assert(strstr(e, "bbb/ckpt'") != NULL, "%s", e);
    tg_module_free(m);
    free(ckpt);
    cr_assert_eq(unlink(file), 0);
    cr_assert_eq(rmdir(dir), 0);
}

/* Whether s is valid UTF-8 (lead bytes of 1 to 4 bytes, each followed by
 * as many continuation bytes as it announces); the offset of the first
 * bad byte in *bad. */
static bool valid_utf8(const unsigned char *s, size_t *bad)
{
    for (size_t i = 0; s[i];) {
        int more = s[i] < 0x80 ? 0 : (s[i] & 0xE0) == 0xC0 ? 1
                 : (s[i] & 0xF0) == 0xE0 ? 2 : (s[i] & 0xF8) == 0xF0 ? 3
                 : -1;
        *bad = i;
        if (more < 0)
            return false;
        for (int k = 1; k <= more; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
        i += (size_t)more + 1;
    }
    return true;
}

/* The cuts never split a UTF-8 character: the message stays valid UTF-8,
 * whichever byte the cuts would fall on. */
TG_TEST(limits, shortened_paths_keep_utf8_characters_whole)
{
    const char *e_acute = "\xc3\xa9"; // U+00E9, two bytes
    for (size_t lead = 0; lead < 3; lead++) { // shift the cut points
        size_t n = 1 + lead + 1500 * 2 + 5;
        char *path = malloc(n);
        cr_assert_not_null(path);
        size_t len = (size_t)snprintf(path, n, "/%.*s", (int)lead, "xx");
        for (int k = 0; k < 1500; k++, len += 2)
            memcpy(path + len, e_acute, 2);
        strcpy(path + len, ".npy");
        cr_assert_null(tg_load_npy(path));
        const char *e = tg_last_error();
        cr_assert(strstr(e, "\n  rule: ") != NULL);
        size_t bad = 0;
        cr_assert(valid_utf8((const unsigned char *)e, &bad),
                  "lead %zu: invalid UTF-8 at byte %zu: ...%.12s", lead,
                  bad, e + (bad > 4 ? bad - 4 : 0));
        free(path);
    }
    size_t bad = 0; // the checker itself: a cut character is caught
    cr_assert(!valid_utf8((const unsigned char *)"ab\xc3...", &bad));
    cr_assert(!valid_utf8((const unsigned char *)"...\xa9" "b", &bad));
    cr_assert(valid_utf8((const unsigned char *)"a\xc3\xa9.", &bad));
}

/* A short path is shown whole. */
TG_TEST(limits, short_paths_are_shown_whole)
{
    cr_assert_null(tg_load_npy("/nonexistent-folder/some-name.npy"));
    tg_assert_error("'/nonexistent-folder/some-name.npy'");
}
