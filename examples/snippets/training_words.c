/*
 * examples/snippets/training_words.c - the word-list code of
 * docs/training.md, section 6: data/names.txt split as the makemore
 * lectures split it, the first contexts of the training set, and Python's
 * random module. The doc shows excerpts and their output. TG_DATA_DIR is
 * the repository's data/ folder, given by the build.
 */
#include "tapegrad.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    tg_words *words = tg_words_load(TG_DATA_DIR "/names.txt");
    if (!words)
        return 1; // the error is printed
    const char *itos = tg_words_vocab(words); // itos[0] == '.'
    printf("%lld words, vocabulary %s (%zu)\n",
           (long long)tg_words_count(words), itos, strlen(itos));

    /* random.seed(42); random.shuffle(words); 80% / 10% / 10% */
    tg_dataset tr, dev, te;
    if (tg_words_split(words, 3, 42, &tr, &dev, &te) != 0)
        return 1;
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX], s3[TG_SHAPE_STR_MAX];
    printf("Xtr %s  Xdev %s  Xte %s\n", tg_shape_str(tr.x, s1),
           tg_shape_str(dev.x, s2), tg_shape_str(te.x, s3));

    /* the first rows of Xtr, Ytr as the lecture prints them */
    const int64_t *x = tg_data_i64(tr.x), *y = tg_data_i64(tr.y);
    for (int i = 0; i < 7; i++)
        printf("%c%c%c ---> %c\n", itos[x[3 * i]], itos[x[3 * i + 1]],
               itos[x[3 * i + 2]], itos[y[i]]);

    tg_pyrandom *r = tg_pyrandom_new(42);    // random.seed(42)
    double u = tg_pyrandom_random(r);        // random.random()
    int64_t die;
    tg_pyrandom_randint(r, 1, 6, &die);      // random.randint(1, 6)
    printf("random() %.16g, randint(1, 6) %lld\n", u, (long long)die);
    tg_pyrandom_free(r);

    tg_dataset_free(&tr);
    tg_dataset_free(&dev);
    tg_dataset_free(&te);
    tg_words_free(words);
    return tg_live_tensors() == 0 ? 0 : 1;
}
