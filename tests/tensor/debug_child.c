/*
 * tests/tensor/debug_child.c - a program for test_debug.c to start with
 * TG_LEAK_CHECK or TG_DEBUG in its environment, which the library reads
 * once per process: "leak" leaves one tensor alive at exit, "clean"
 * releases everything, "many" leaves 25 alive, "mode" prints whether the
 * debug mode is on, "double" releases a tensor twice.
 */
#include "tapegrad.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "clean";
    tg_tensor *a = tg_ones(TG_SHAPE(3, 4), TG_FLOAT32);
    tg_tensor *b = tg_ones(TG_SHAPE(4, 2), TG_FLOAT32);
    tg_tensor *c = tg_matmul(a, b);
    tg_release(a);
    tg_release(b);
    if (strcmp(what, "many") == 0)
        for (int i = 0; i < 24; i++)
            tg_zeros(TG_SHAPE(i + 1), TG_FLOAT64); // left alive on purpose
    if (strcmp(what, "mode") == 0)
        fprintf(stderr, "debug %s\n", tg_debug_enabled() ? "on" : "off");
    if (strcmp(what, "double") == 0)
        tg_release(c); // and once more below: the mistake
    if (strcmp(what, "clean") == 0 || strcmp(what, "mode") == 0 ||
        strcmp(what, "double") == 0)
        tg_release(c);
    return 0;
}
