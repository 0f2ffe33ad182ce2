/*
 * tests/fuzz/fuzz_npy.c - fuzz target for the .npy parser: the input bytes
 * are a whole file given to tg_npy_parse.
 *
 * Invariants checked on every input:
 * - failure: NULL, with a message that names tg_npy_parse and the file,
 *   and states the rule that was broken;
 * - success: a well-formed tensor (known dtype, 0..TG_MAX_DIMS dims, numel
 *   equal to the product of the sizes, contiguous, fresh: no autograd
 *   state) whose elements are exactly the last numel * itemsize bytes of
 *   the input; cutting one byte off the input or adding one makes the
 *   parse fail; the tensor survives tg_save_npy and tg_load_npy unchanged,
 *   and re-saving the loaded copy gives the same file; tg_format prints
 *   it;
 * - afterwards no tensor or storage is left alive.
 * What it does not check: that the messages are the best possible ones.
 */
#include "fuzz_common.h"

static char scratch[4096];
static char roundtrip_path[4200];

static void remove_scratch(void)
{
    remove(roundtrip_path);
    rmdir(scratch);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tg_set_error_handler(tg_error_handler_quiet);
    fuzz_scratch_dir("npy", scratch, sizeof scratch);
    snprintf(roundtrip_path, sizeof roundtrip_path, "%s/roundtrip.npy",
             scratch);
    atexit(remove_scratch);
    return 0;
}

static void check_parse_fails(const uint8_t *data, size_t size,
                              const char *why)
{
    tg_clear_error();
    tg_tensor *t = tg_npy_parse(data, size, "fuzz");
    FUZZ_CHECK(t == NULL, "the input with %s parsed too", why);
    FUZZ_CHECK(strncmp(tg_last_error(), "tg_npy_parse: ", 14) == 0,
               "the input with %s failed without a message", why);
}

static void check_tensor(const tg_tensor *t, const uint8_t *data,
                         size_t size)
{
    FUZZ_CHECK(t->dtype == TG_FLOAT32 || t->dtype == TG_FLOAT64 ||
                   t->dtype == TG_INT64,
               "dtype %d", (int)t->dtype);
    FUZZ_CHECK(t->ndim >= 0 && t->ndim <= TG_MAX_DIMS, "ndim %d", t->ndim);
    int64_t numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        FUZZ_CHECK(t->shape[d] >= 0, "size %lld at dim %d",
                   (long long)t->shape[d], d);
        numel *= t->shape[d]; // bounded: the data is in the input
    }
    FUZZ_CHECK(t->numel == numel, "numel %lld but the shape gives %lld",
               (long long)t->numel, (long long)numel);
    FUZZ_CHECK(tg_is_contiguous(t) && t->offset == 0,
               "the parsed tensor is not a fresh contiguous tensor");
    FUZZ_CHECK(t->refcount == 1 && !t->requires_grad && !t->grad &&
                   !t->grad_fn,
               "the parsed tensor has autograd state or extra references");
    size_t bytes = (size_t)numel * tg_dtype_size(t->dtype);
    FUZZ_CHECK(bytes <= size && t->storage->nbytes >= bytes,
               "%zu data bytes from a %zu-byte input, storage %zu", bytes,
               size, t->storage->nbytes);
    /* .npy data is little-endian; so is every host this runs on. */
    const uint16_t one = 1;
    if (*(const unsigned char *)&one == 1)
        FUZZ_CHECK(bytes == 0 ||
                       memcmp(t->storage->data, data + size - bytes, bytes) ==
                           0,
                   "the elements differ from the input's last %zu bytes",
                   bytes);
}

static void check_roundtrip(const tg_tensor *t)
{
    FUZZ_CHECK(tg_save_npy(roundtrip_path, t) == 0, "tg_save_npy failed");
    size_t n1;
    unsigned char *file1 = fuzz_read_file(roundtrip_path, &n1);
    FUZZ_CHECK(file1 != NULL, "cannot read back %s", roundtrip_path);
    FUZZ_CHECK(n1 >= 10 && (10 + (size_t)(file1[8] | file1[9] << 8)) % 64 == 0,
               "tg_save_npy wrote a header that does not end at a multiple "
               "of 64");
    tg_tensor *u = tg_load_npy(roundtrip_path);
    FUZZ_CHECK(u != NULL, "tg_load_npy cannot read what tg_save_npy wrote");
    FUZZ_CHECK(u->dtype == t->dtype && tg_same_shape(u, t),
               "the round trip changed the dtype or shape");
    size_t bytes = (size_t)t->numel * tg_dtype_size(t->dtype);
    FUZZ_CHECK(bytes == 0 || memcmp(u->storage->data, t->storage->data,
                                    bytes) == 0,
               "the round trip changed the elements");
    /* Saving is deterministic: the copy saves to the same bytes. */
    FUZZ_CHECK(tg_save_npy(roundtrip_path, u) == 0, "second save failed");
    size_t n2;
    unsigned char *file2 = fuzz_read_file(roundtrip_path, &n2);
    FUZZ_CHECK(file2 && n2 == n1 && memcmp(file1, file2, n1) == 0,
               "saving the loaded copy wrote a different file");
    free(file1);
    free(file2);
    tg_release(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_clear_error();
    tg_tensor *t = tg_npy_parse(data, size, "fuzz");
    if (!t) {
        const char *msg = tg_last_error();
        FUZZ_CHECK(strncmp(msg, "tg_npy_parse: cannot load 'fuzz': ", 34) ==
                       0,
                   "a failed parse must name the function and the file");
        FUZZ_CHECK(strstr(msg, "\n  rule: ") != NULL,
                   "a failed parse must state the rule");
    } else {
        check_tensor(t, data, size);
        if (size > 0)
            check_parse_fails(data, size - 1, "its last byte cut");
        unsigned char *longer = malloc(size + 1);
        FUZZ_CHECK(longer != NULL, "out of memory");
        memcpy(longer, data, size);
        longer[size] = 0;
        check_parse_fails(longer, size + 1, "one byte appended");
        free(longer);
        check_roundtrip(t);
        if (t->numel <= 4096) {
            char *s = tg_format(t);
            FUZZ_CHECK(s && strncmp(s, "tensor(", 7) == 0,
                       "tg_format failed on a parsed tensor");
            free(s);
        }
        tg_release(t);
    }
    FUZZ_CHECK(tg_live_tensors() == 0 && tg_live_storages() == 0,
               "%lld tensors and %lld storages alive after the input",
               (long long)tg_live_tensors(), (long long)tg_live_storages());
    return 0;
}
