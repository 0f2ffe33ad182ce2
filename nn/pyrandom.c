/*
 * nn/pyrandom.c - Python's random module (random.Random), bit for bit: the
 * generator that a course uses before any tensor exists, e.g. the makemore
 * lectures' random.seed(42); random.shuffle(words).
 *
 * The engine is MT19937, the same as the library's PyTorch-compatible
 * generator (tensor/random.c), but CPython seeds it differently and turns
 * its 32-bit draws into numbers in its own ways. What CPython 3 does
 * (Modules/_randommodule.c and Lib/random.py), and so what this file does:
 *
 *   seed(n), n an int >= 0: the key is n in 32-bit words, least
 *       significant first (one word [0] for n == 0; 2^32 + 5 is [5, 1]),
 *       and the state is init_by_array(key) of the reference MT19937 code
 *       (Matsumoto and Nishimura, 2002): init_genrand(19650218), then two
 *       mixing passes over the key. (A negative n seeds as abs(n); PyTorch
 *       instead sets state[0] = seed and runs the 1812433253 recurrence.)
 *   getrandbits(k): k <= 32: one draw >> (32 - k). k > 32: ceil(k / 32)
 *       draws, the first one the least significant word; the last (most
 *       significant) word keeps only the top k mod 32 bits of its draw,
 *       shifted down (when k is not a multiple of 32).
 *   random(): a = draw >> 5 (27 bits), b = draw >> 6 (26 bits),
 *       (a * 2^26 + b) / 2^53: a double in [0, 1) with 53 random bits.
 *   _randbelow(n), n >= 1: k = n.bit_length(); r = getrandbits(k) until
 *       r < n (rejection: no modulo bias; at most 2 tries on average).
 *   randrange(start, stop) = start + _randbelow(stop - start);
 *       randint(a, b) = randrange(a, b + 1).
 *   shuffle(x): for i = len(x) - 1 down to 1: j = _randbelow(i + 1);
 *       swap x[i] and x[j] (Fisher-Yates from the back; torch.randperm,
 *       nn/data.c, goes from the front with a modulo instead).
 *
 * What this file is not: not the rest of random (no gauss, choice, sample,
 * getstate), not seeding from a str, bytes or float (Python hashes those),
 * not a source of secure randomness, and not thread-safe on one generator.
 */
#include "nn.h"

#include "../tensor/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- engine */

struct tg_pyrandom {
    tg_mt19937 mt; // the engine, shared with tg_generator (tensor/random.c)
};

/* init_by_array(key, n): start from init_genrand(19650218), then mix the
 * key in (max(624, n) steps, cycling through the key, adding the key
 * word and its index), then mix once more (623 steps, subtracting the
 * position); state[0] = 2^31 makes the state non-zero whatever the key.
 * All arithmetic is modulo 2^32. */
static void mt_init_by_array(tg_pyrandom *r, const uint32_t *key, size_t n)
{
    uint32_t *mt = r->mt.state;
    tg_mt_init(&r->mt, 19650218u);
    size_t i = 1, j = 0;
    for (size_t k = TG_MT_N > n ? TG_MT_N : n; k > 0; k--) {
        uint32_t prev = mt[i - 1];
        mt[i] = (mt[i] ^ ((prev ^ (prev >> 30)) * 1664525u)) + key[j] +
                (uint32_t)j;
        i++;
        j++;
        if (i >= TG_MT_N) {
            mt[0] = mt[TG_MT_N - 1];
            i = 1;
        }
        if (j >= n)
            j = 0;
    }
    for (size_t k = TG_MT_N - 1; k > 0; k--) {
        uint32_t prev = mt[i - 1];
        mt[i] = (mt[i] ^ ((prev ^ (prev >> 30)) * 1566083941u)) - (uint32_t)i;
        i++;
        if (i >= TG_MT_N) {
            mt[0] = mt[TG_MT_N - 1];
            i = 1;
        }
    }
    mt[0] = 0x80000000u;
    r->mt.index = TG_MT_N;
}

/* genrand_uint32: one tempered 32-bit draw. */
static uint32_t draw32(tg_pyrandom *r)
{
    return tg_mt_next32(&r->mt);
}

/* ----------------------------------------------------------- the numbers */

/* getrandbits(k) for 0 <= k <= 64: the low word first, the high word's
 * draw shifted down to its k - 32 top bits. */
static uint64_t bits64(tg_pyrandom *r, int k)
{
    if (k == 0)
        return 0;
    if (k <= 32)
        return draw32(r) >> (32 - k);
    uint64_t lo = draw32(r);
    uint64_t hi = draw32(r) >> (64 - k);
    return (hi << 32) | lo;
}

/* n.bit_length() for n >= 1. */
static int bit_length(uint64_t n)
{
    int k = 0;
    for (; n; n >>= 1)
        k++;
    return k;
}

/* _randbelow(n) for n >= 1: rejection sampling on bit_length(n) bits. */
static uint64_t below(tg_pyrandom *r, uint64_t n)
{
    int k = bit_length(n);
    uint64_t v = bits64(r, k);
    while (v >= n)
        v = bits64(r, k);
    return v;
}

void tg_pyrandom_seed(tg_pyrandom *r, uint64_t seed)
{
    if (!r) // as tg_generator_seed(NULL, s): nothing to seed
        return;
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    mt_init_by_array(r, key, key[1] != 0 ? 2 : 1);
}

tg_pyrandom *tg_pyrandom_new(uint64_t seed)
{
    tg_pyrandom *r = tg_malloc(sizeof *r);
    if (!r) {
        tg_error("tg_pyrandom_new",
                 "out of memory allocating a generator (%zu bytes)",
                 sizeof *r);
        return NULL;
    }
    tg_pyrandom_seed(r, seed);
    return r;
}

void tg_pyrandom_free(tg_pyrandom *r)
{
    free(r);
}

double tg_pyrandom_random(tg_pyrandom *r)
{
    if (!r) // tg_pyrandom_new failed and said why
        return NAN;
    uint32_t a = draw32(r) >> 5, b = draw32(r) >> 6;
    return ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
}

int tg_pyrandom_getrandbits(tg_pyrandom *r, int k, uint64_t *out)
{
    const char *fn = "tg_pyrandom_getrandbits";
    if (out)
        *out = 0;
    if (!r)
        return -1;
    if (!out) {
        tg_error(fn, "out is NULL\n"
                     "  rule: pass the address of a uint64_t to fill");
        return -1;
    }
    if (k < 0 || k > 64) {
        tg_error(fn,
                 "k is %d\n"
                 "  rule: a uint64_t holds 0 to 64 random bits\n"
                 "  hint: for more bits use "
                 "tg_pyrandom_getrandbits_words",
                 k);
        return -1;
    }
    *out = bits64(r, k);
    return 0;
}

int tg_pyrandom_getrandbits_words(tg_pyrandom *r, int k, uint32_t *words)
{
    const char *fn = "tg_pyrandom_getrandbits_words";
    if (!r)
        return -1;
    if (k < 0) {
        tg_error(fn,
                 "k is %d\n"
                 "  rule: the number of bits must be non-negative "
                 "(Python's ValueError)",
                 k);
        return -1;
    }
    if (k > 0 && !words) {
        tg_error(fn, "words is NULL\n"
                     "  rule: pass an array of (k + 31) / 32 uint32_t to "
                     "fill");
        return -1;
    }
    if (k > 0 && k <= 32) { // CPython's fast path: one word
        words[0] = draw32(r) >> (32 - k);
        return 0;
    }
    for (int i = 0; k > 0; i++, k -= 32) {
        uint32_t w = draw32(r);
        words[i] = k < 32 ? w >> (32 - k) : w;
    }
    return 0;
}

int tg_pyrandom_randbelow(tg_pyrandom *r, uint64_t n, uint64_t *out)
{
    const char *fn = "tg_pyrandom_randbelow";
    if (out)
        *out = 0;
    if (!r)
        return -1;
    if (!out) {
        tg_error(fn, "out is NULL\n"
                     "  rule: pass the address of a uint64_t to fill");
        return -1;
    }
    if (n == 0) {
        tg_error(fn, "n is 0\n"
                     "  rule: the result is in [0, n), so n >= 1");
        return -1;
    }
    *out = below(r, n);
    return 0;
}

/* randrange(start, start + width) for width >= 1 (width may exceed
 * INT64_MAX: the sum wraps back into [start, stop) as unsigned numbers
 * do). */
static int64_t in_range(tg_pyrandom *r, int64_t start, uint64_t width)
{
    return (int64_t)((uint64_t)start + below(r, width));
}

int tg_pyrandom_randrange(tg_pyrandom *r, int64_t start, int64_t stop,
                          int64_t *out)
{
    const char *fn = "tg_pyrandom_randrange";
    if (out)
        *out = 0;
    if (!r)
        return -1;
    if (!out) {
        tg_error(fn, "out is NULL\n"
                     "  rule: pass the address of an int64_t to fill");
        return -1;
    }
    if (stop <= start) {
        tg_error(fn,
                 "empty range [%lld, %lld)\n"
                 "  rule: start < stop, as Python's randrange(start, stop)",
                 (long long)start, (long long)stop);
        return -1;
    }
    *out = in_range(r, start, (uint64_t)stop - (uint64_t)start);
    return 0;
}

int tg_pyrandom_randint(tg_pyrandom *r, int64_t a, int64_t b, int64_t *out)
{
    const char *fn = "tg_pyrandom_randint";
    if (out)
        *out = 0;
    if (!r)
        return -1;
    if (!out) {
        tg_error(fn, "out is NULL\n"
                     "  rule: pass the address of an int64_t to fill");
        return -1;
    }
    if (b < a) {
        tg_error(fn,
                 "empty range [%lld, %lld]\n"
                 "  rule: a <= b, as Python's randint(a, b)",
                 (long long)a, (long long)b);
        return -1;
    }
    uint64_t width = (uint64_t)b - (uint64_t)a + 1; // 0: all 2^64 values
    if (width == 0) {
        tg_error(fn,
                 "[%lld, %lld] holds 2^64 integers\n"
                 "  rule: the range holds at most 2^64 - 1 integers (Python "
                 "would draw 65 bits)",
                 (long long)a, (long long)b);
        return -1;
    }
    *out = in_range(r, a, width);
    return 0;
}

int tg_pyrandom_shuffle(tg_pyrandom *r, void *base, size_t n, size_t size)
{
    const char *fn = "tg_pyrandom_shuffle";
    if (!r)
        return -1;
    if (n > 1 && (!base || size == 0)) {
        tg_error(fn,
                 "%s for %zu elements\n"
                 "  rule: pass the array and the size of one element, as "
                 "for qsort\n"
                 "  hint: tg_pyrandom_shuffle(r, a, n, sizeof a[0])",
                 !base ? "base is NULL" : "size is 0", n);
        return -1;
    }
    if (n < 2) // nothing moves, and Python draws nothing
        return 0;
    char *a = base;
    unsigned char tmp[64];
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)below(r, (uint64_t)i + 1);
        if (j == i)
            continue;
        /* swap elements i and j, through tmp in pieces */
        char *x = a + i * size, *y = a + j * size;
        for (size_t done = 0; done < size; done += sizeof tmp) {
            size_t piece = size - done < sizeof tmp ? size - done : sizeof tmp;
            memcpy(tmp, x + done, piece);
            memcpy(x + done, y + done, piece);
            memcpy(y + done, tmp, piece);
        }
    }
    return 0;
}
