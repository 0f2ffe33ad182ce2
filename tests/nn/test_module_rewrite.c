/*
 * tests/nn/test_module_rewrite.c - swapping a layer inside a built model
 * (tg_module_replace_child_at) and recognising BatchNorm layers
 * (tg_batch_norm_module_info), the two pieces convert functions such as
 * tg_sync_batch_norm_convert are made of. Their errors are rows of
 * tests/errors/catalogue_nn.c.
 */
#include "../common.h"

#include <string.h>

TG_TEST(module_rewrite, replace_keeps_name_and_order)
{
    tg_module *net = TG_SEQUENTIAL(tg_linear_new(2, 3, true), tg_tanh_new(),
                                   tg_linear_new(3, 1, true));
    tg_module *old = tg_module_replace_child_at(net, 1, tg_relu_new());
    cr_assert(old && strcmp(tg_module_get_type(old)->name, "Tanh") == 0);
    cr_assert_str_eq(tg_module_get_type(tg_module_child(net, "1"))->name,
                     "ReLU");
    cr_assert(tg_module_num_children(net) == 3);
    // the old child is the caller's: a parent takes it again
    tg_module *holder = TG_SEQUENTIAL(old);
    cr_assert(holder != NULL);
    // and the model still runs, through the new layer
    tg_tensor *x = tg_full(TG_SHAPE(4, 2), -5.0, TG_FLOAT32);
    tg_tensor *y = tg_module_forward(net, x);
    cr_assert(y && y->shape[0] == 4 && y->shape[1] == 1);
    tg_release(y);
    tg_release(x);
    tg_module_free(holder);
    tg_module_free(net);
}

TG_TEST(module_rewrite, batch_norm_info)
{
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.eps = 1e-3;
    c.no_affine = true;
    tg_module *b1 = tg_batch_norm1d_new(5, &c);
    tg_module *b2 = tg_batch_norm2d_new(4, NULL);
    tg_module *ln = tg_layer_norm_new(TG_SHAPE(4), 1e-5, true);
    tg_batch_norm_module_desc d;
    cr_assert(tg_batch_norm_module_info(b1, &d));
    cr_assert(d.num_features == 5 && d.spatial == 1 && d.config.eps == 1e-3 &&
              d.config.no_affine && !d.config.no_running_stats);
    cr_assert(tg_batch_norm_module_info(b2, &d));
    cr_assert(d.num_features == 4 && d.spatial == 2 && !d.config.no_affine);
    cr_assert(!tg_batch_norm_module_info(ln, &d));
    cr_assert(!tg_batch_norm_module_info(NULL, NULL));
    tg_module_free(ln);
    tg_module_free(b2);
    tg_module_free(b1);
}
