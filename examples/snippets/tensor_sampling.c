/*
 * examples/snippets/tensor_sampling.c - the code docs/tensor.md shows for
 * tg_multinomial: the sampling loop of the makemore lectures on an
 * untrained bigram model, one row of random logits per character. The
 * same loop in PyTorch 1.13 (docs/tensor.md shows it) prints the same
 * names: the generator is PyTorch's, and so are randn and multinomial.
 */
#include "tapegrad.h"

#include <stdio.h>

int main(void)
{
    tg_generator *g = tg_generator_new(2147483647);
    tg_tensor *W = tg_randn_gen(g, TG_SHAPE(27, 27), TG_FLOAT32);
    for (int i = 0; i < 5; i++) {
        char name[64];
        int len = 0;
        int64_t ix = 0;
        do {
            tg_tensor *logits = tg_slice(W, 0, ix, ix + 1, 1); // (1, 27)
            tg_tensor *probs = tg_softmax(logits, 1);
            tg_tensor *s = tg_multinomial(probs, 1, true, g);
            ix = (int64_t)tg_item(s); // torch's .item()
            if (len < 63)
                name[len++] = ix == 0 ? '.' : (char)('a' + ix - 1);
            tg_release(s);
            tg_release(probs);
            tg_release(logits);
        } while (ix != 0);
        name[len] = '\0';
        printf("%s\n", name);
    }
    tg_release(W);
    tg_generator_free(g);
    return tg_live_tensors() == 0 ? 0 : 1;
}
