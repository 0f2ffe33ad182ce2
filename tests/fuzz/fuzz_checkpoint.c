/*
 * tests/fuzz/fuzz_checkpoint.c - fuzz target for tg_module_load: the input
 * rewrites some files of a valid checkpoint folder, then the folder is
 * loaded into the model it was saved from.
 *
 * The model is Linear(3, 4) -> BatchNorm1d(4) -> Linear(4, 2): nine files
 * (weights, biases, running statistics, and the int64 0-d
 * num_batches_tracked). At start-up it is saved once into a scratch
 * folder; before each input every file the previous input touched is put
 * back, so the folder is made once per process.
 *
 * Input format: a sequence of records, each
 *     selector (1 byte): bits 0-3 pick the file (modulo the file count),
 *                        bits 6-7 the action: 0 or 1 write; 2 remove the
 *                        file (bit 5 clear) or replace it with a symbolic
 *                        link to /dev/zero (bit 5 set); 3 replace it with
 *                        bits 4-5: 0 a folder, 2 a symbolic link to
 *                        itself, 1 a FIFO, 3 a character device (as
 *                        root: a device node of /dev/zero's numbers;
 *                        otherwise, or where device nodes cannot be
 *                        made, a symbolic link to /dev/null)
 *     for a write: length (2 bytes, little-endian), then that many bytes
 *                  (fewer if the input ends first): the new file
 * at most 16 records.
 *
 * Invariants: the load succeeds exactly when every rewritten file holds a
 * .npy that tg_npy_parse accepts with the tensor's own shape and dtype;
 * then each tensor of the model holds exactly the file's elements, is the
 * same object as before, and keeps requires_grad. When it fails, the
 * message names tg_module_load and the first bad tensor, and no tensor of
 * the model changed (values, version counters): loading is all or nothing.
 * A folder, FIFO or device in the place of the first bad file makes the
 * message say it is not a regular file, and the load ends within
 * LOAD_SECONDS: it never waits on a FIFO nor reads an endless device.
 * No tensor is left alive beyond the model's own, the tape stays empty.
 */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 // mknod, mkfifo, symlink, clock_gettime
#endif

#include "fuzz_common.h"

#include <sys/stat.h>
#include <sys/sysmacros.h> // makedev
#include <time.h>

#define MAX_FILES 16
#define MAX_RECORDS 16
#define LOAD_SECONDS 5.0 // "at once", with room for a loaded machine

static tg_module *model;
static char scratch[4096];
static int nfiles;
static tg_named_tensor items[MAX_FILES];
static bool is_param[MAX_FILES];
static char paths[MAX_FILES][4096 + TG_NAME_MAX + 8];
static unsigned char *valid[MAX_FILES]; // the files as saved
static size_t valid_len[MAX_FILES];
static tg_tensor *initial[MAX_FILES];   // the model's values as saved
static bool dirty[MAX_FILES];           // differs from valid[] now
static int64_t live_baseline;
static bool trace; // TG_FUZZ_TRACE set: print each input's outcome

enum {
    STATE_WRITTEN, STATE_REMOVED, STATE_FOLDER, STATE_LOOP,
    STATE_SPECIAL, // a FIFO, a device, or a link to one
};

/* A device node where path was: /dev/zero's numbers when the process may
 * make one, else a link to /dev/null. */
static void make_device(const char *path)
{
    if (mknod(path, S_IFCHR | 0600, makedev(1, 5)) == 0)
        return;
    FUZZ_CHECK(symlink("/dev/null", path) == 0, "cannot link %s", path);
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void put_back(int i)
{
    struct stat st;
    if (lstat(paths[i], &st) == 0) {
        if (S_ISDIR(st.st_mode))
            FUZZ_CHECK(rmdir(paths[i]) == 0, "cannot remove %s", paths[i]);
        else
            FUZZ_CHECK(unlink(paths[i]) == 0, "cannot remove %s", paths[i]);
    }
    fuzz_write_file(paths[i], valid[i], valid_len[i]);
    dirty[i] = false;
}

static void clean_up(void)
{
    for (int i = 0; i < nfiles; i++) {
        put_back(i);
        remove(paths[i]);
        free(valid[i]);
        tg_release(initial[i]);
    }
    rmdir(scratch);
    tg_module_free(model);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tg_set_error_handler(tg_error_handler_quiet);
    trace = getenv("TG_FUZZ_TRACE") != NULL;
    tg_manual_seed(0);
    model = tg_sequential_new(NULL, 0);
    FUZZ_CHECK(model && tg_sequential_append(model, tg_linear_new(3, 4, true)) == 0 &&
                   tg_sequential_append(model, tg_batch_norm1d_new(4, NULL)) == 0 &&
                   tg_sequential_append(model, tg_linear_new(4, 2, true)) == 0,
               "cannot build the model");
    /* Running statistics that are not the initial zeros and ones, so that
     * a file is never accidentally equal to them. */
    tg_module_train(model, true);
    tg_tensor *x = tg_randn(TG_SHAPE(5, 3), TG_FLOAT32);
    tg_no_grad_begin();
    tg_tensor *y = tg_module_forward(model, x);
    tg_no_grad_end();
    FUZZ_CHECK(y != NULL, "the model's forward failed");
    tg_release(y);
    tg_release(x);

    fuzz_scratch_dir("checkpoint", scratch, sizeof scratch);
    FUZZ_CHECK(tg_module_save(model, scratch) == 0, "cannot save the model");
    int np = tg_module_named_parameters(model, items, MAX_FILES);
    int nb = tg_module_named_buffers(model, items + np, MAX_FILES - np);
    nfiles = np + nb;
    FUZZ_CHECK(nfiles == 9, "the model has %d tensors, expected 9", nfiles);
    tg_no_grad_begin();
    for (int i = 0; i < nfiles; i++) {
        is_param[i] = i < np;
        int k = snprintf(paths[i], sizeof paths[i], "%s/%s.npy", scratch,
                         items[i].name);
        FUZZ_CHECK(k > 0 && (size_t)k < sizeof paths[i], "path too long");
        valid[i] = fuzz_read_file(paths[i], &valid_len[i]);
        FUZZ_CHECK(valid[i] != NULL, "cannot read %s", paths[i]);
        initial[i] = tg_clone(items[i].tensor);
        FUZZ_CHECK(initial[i] != NULL, "cannot copy %s", items[i].name);
    }
    tg_no_grad_end();
    live_baseline = tg_live_tensors();
    atexit(clean_up);
    return 0;
}

static size_t nbytes_of(const tg_tensor *t)
{
    return (size_t)t->numel * tg_dtype_size(t->dtype);
}

/* The model's tensors are its own contiguous leaves. */
static const void *bytes_of(const tg_tensor *t)
{
    return (const char *)t->storage->data +
           t->offset * (int64_t)tg_dtype_size(t->dtype);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Undo the previous input: the files, and the model's values. */
    for (int i = 0; i < nfiles; i++)
        if (dirty[i])
            put_back(i);
    tg_no_grad_begin();
    for (int i = 0; i < nfiles; i++)
        FUZZ_CHECK(tg_copy_(items[i].tensor, initial[i]) == 0,
                   "cannot restore %s", items[i].name);
    tg_no_grad_end();

    /* Apply the records; remember each file's final state. */
    int state[MAX_FILES];
    const uint8_t *content[MAX_FILES];
    size_t content_len[MAX_FILES];
    for (int i = 0; i < nfiles; i++)
        state[i] = -1;
    size_t pos = 0;
    for (int r = 0; r < MAX_RECORDS && pos < size; r++) {
        uint8_t sel = data[pos++];
        int i = (sel & 0x0f) % nfiles;
        int action = sel >> 6;
        struct stat st;
        if (lstat(paths[i], &st) == 0) {
            if (S_ISDIR(st.st_mode))
                rmdir(paths[i]);
            else
                unlink(paths[i]);
        }
        dirty[i] = true;
        if (action <= 1) {
            size_t len = 0;
            if (pos < size)
                len = data[pos++];
            if (pos < size)
                len |= (size_t)data[pos++] << 8;
            if (len > size - pos)
                len = size - pos;
            fuzz_write_file(paths[i], data + pos, len);
            state[i] = STATE_WRITTEN;
            content[i] = data + pos;
            content_len[i] = len;
            pos += len;
        } else if (action == 2 && !(sel & 0x20)) {
            state[i] = STATE_REMOVED;
        } else if (action == 2) {
            FUZZ_CHECK(symlink("/dev/zero", paths[i]) == 0,
                       "cannot link %s", paths[i]);
            state[i] = STATE_SPECIAL;
        } else if ((sel & 0x30) == 0x00) {
            FUZZ_CHECK(mkdir(paths[i], 0700) == 0, "cannot make %s",
                       paths[i]);
            state[i] = STATE_FOLDER;
        } else if ((sel & 0x30) == 0x20) {
            FUZZ_CHECK(symlink(paths[i], paths[i]) == 0, "cannot link %s",
                       paths[i]);
            state[i] = STATE_LOOP;
        } else if ((sel & 0x30) == 0x10) {
            FUZZ_CHECK(mkfifo(paths[i], 0600) == 0, "cannot make %s",
                       paths[i]);
            state[i] = STATE_SPECIAL;
        } else {
            make_device(paths[i]);
            state[i] = STATE_SPECIAL;
        }
    }

    /* Predict: the first tensor (in the model's order) whose file is not
     * a valid .npy of its shape and dtype, or -1. */
    int first_bad = -1;
    for (int i = 0; i < nfiles && first_bad < 0; i++) {
        if (state[i] < 0)
            continue;
        bool good = false;
        if (state[i] == STATE_WRITTEN) {
            tg_tensor *t = tg_npy_parse(content[i], content_len[i], "x");
            good = t && t->dtype == items[i].tensor->dtype &&
                   tg_same_shape(t, items[i].tensor);
            tg_release(t);
        }
        if (!good)
            first_bad = i;
    }

    /* The model before loading. */
    unsigned char before[MAX_FILES][64];
    uint64_t version[MAX_FILES];
    for (int i = 0; i < nfiles; i++) {
        FUZZ_CHECK(nbytes_of(items[i].tensor) <= sizeof before[i],
                   "%s is larger than expected", items[i].name);
        memcpy(before[i], bytes_of(items[i].tensor),
               nbytes_of(items[i].tensor));
        version[i] = items[i].tensor->storage->version;
    }

    tg_clear_error();
    double start = seconds_now();
    int rc = tg_module_load(model, scratch);
    double took = seconds_now() - start;
    const char *msg = tg_last_error();
    FUZZ_CHECK(took < LOAD_SECONDS, "the load took %.1f s", took);
    if (trace)
        fprintf(stderr, "load: %d, first bad file: %s\n%s\n", rc,
                first_bad < 0 ? "none" : items[first_bad].name, msg);

    tg_named_tensor now[MAX_FILES];
    int np = tg_module_named_parameters(model, now, MAX_FILES);
    int nb = tg_module_named_buffers(model, now + np, MAX_FILES - np);
    FUZZ_CHECK(np + nb == nfiles, "the model now has %d tensors", np + nb);
    for (int i = 0; i < nfiles; i++) {
        const tg_tensor *t = now[i].tensor;
        FUZZ_CHECK(t == items[i].tensor,
                   "%s is no longer the same tensor object", items[i].name);
        FUZZ_CHECK(t->requires_grad == is_param[i] && !t->grad_fn &&
                       !t->grad,
                   "%s changed its autograd state", items[i].name);
        FUZZ_CHECK(tg_same_shape(t, initial[i]) &&
                       t->dtype == initial[i]->dtype,
                   "%s changed its shape or dtype", items[i].name);
    }
    if (first_bad < 0) {
        FUZZ_CHECK(rc == 0, "valid files were refused");
        for (int i = 0; i < nfiles; i++) {
            const void *want = bytes_of(initial[i]);
            tg_tensor *parsed = NULL;
            if (state[i] == STATE_WRITTEN) {
                parsed = tg_npy_parse(content[i], content_len[i], "x");
                want = bytes_of(parsed);
            }
            FUZZ_CHECK(memcmp(bytes_of(items[i].tensor), want,
                              nbytes_of(items[i].tensor)) == 0,
                       "%s does not hold its file's elements",
                       items[i].name);
            tg_release(parsed);
        }
    } else {
        FUZZ_CHECK(rc == -1, "%s's file is bad, but the load succeeded",
                   items[first_bad].name);
        FUZZ_CHECK(strncmp(msg, "tg_module_load: ", 16) == 0,
                   "the failure must name tg_module_load");
        char quoted[TG_NAME_MAX + 8];
        snprintf(quoted, sizeof quoted, " %s", items[first_bad].name);
        FUZZ_CHECK(strstr(msg, quoted) != NULL,
                   "the failure must name the first bad tensor, %s",
                   items[first_bad].name);
        if (state[first_bad] == STATE_FOLDER ||
            state[first_bad] == STATE_SPECIAL)
            FUZZ_CHECK(strstr(msg, "not a regular file") != NULL &&
                           strstr(msg, "\n  rule: ") != NULL,
                       "the failure must say that %s's file is not a "
                       "regular file, and the rule",
                       items[first_bad].name);
        for (int i = 0; i < nfiles; i++)
            FUZZ_CHECK(memcmp(before[i], bytes_of(items[i].tensor),
                              nbytes_of(items[i].tensor)) == 0 &&
                           version[i] == items[i].tensor->storage->version,
                       "a failed load changed %s", items[i].name);
    }
    FUZZ_CHECK(tg_live_tensors() == live_baseline,
               "%lld tensors alive, expected %lld",
               (long long)tg_live_tensors(), (long long)live_baseline);
    FUZZ_CHECK(tg_tape_size() == 0, "the tape has %lld nodes",
               (long long)tg_tape_size());
    return 0;
}
