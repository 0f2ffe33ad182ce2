/*
 * tensor/tensor.h - the tensor core of tapegrad: dtypes, reference-counted
 * storage, strided tensors, creation, errors, random numbers, printing and
 * .npy files.
 *
 * This header knows nothing of autograd. The differentiable operations
 * (tg_add, tg_reshape, tg_sum, ...) are declared in autograd/ops.h; they use
 * the kernels of tensor/ and record themselves on the tape.
 *
 * Ownership (as in CPython): every function that returns a tg_tensor * returns
 * a NEW reference that the caller releases with tg_release(); arguments are
 * BORROWED. Keep a borrowed tensor with tg_retain(). Each prototype's comment
 * says which applies (docs/api.md lists them all).
 *
 * Errors: a failing function returns NULL (or -1), records a message for
 * tg_last_error() and calls the installed error handler. A NULL tensor
 * argument makes a function return NULL without a second message, so a chain
 * of calls fails once.
 */
#ifndef TG_TENSOR_H
#define TG_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TG_MAX_DIMS 8

typedef enum tg_dtype {
    TG_FLOAT32 = 0,
    TG_FLOAT64 = 1,
    TG_INT64 = 2,
} tg_dtype;

/* Shape and dim-list literals: tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32) passes
 * the array and its length as two arguments. */
#define TG_SHAPE(...) \
    ((const int64_t[]){__VA_ARGS__}), \
    ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define TG_DIMS(...) \
    ((const int[]){__VA_ARGS__}), \
    ((int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)))

/* One allocation of elements, shared by every view of it. */
typedef struct tg_storage {
    void *data;        // nbytes bytes, 64-byte aligned
    size_t nbytes;
    int64_t refcount;  // tensors that point here
    uint64_t version;  // bumped by every in-place write (autograd checks it)
} tg_storage;

struct tg_node; // autograd/: the tape entry that produced a tensor

/* A strided view of a storage. Read the fields freely; change them only
 * through the API. Element i0..ik lives at
 * storage->data + (offset + sum_d i_d * strides[d]) * itemsize. */
typedef struct tg_tensor {
    tg_dtype dtype;
    int ndim;                      // 0 (a scalar) .. TG_MAX_DIMS
    int64_t shape[TG_MAX_DIMS];    // (ndim,)
    int64_t strides[TG_MAX_DIMS];  // (ndim,) in elements; 0 for broadcast dims
    int64_t offset;                // in elements
    int64_t numel;                 // prod(shape); 1 for a scalar
    tg_storage *storage;
    int64_t refcount;
    /* Used by autograd/ (tensor/ only releases grad when the tensor dies). */
    bool requires_grad;
    bool retains_grad;
    struct tg_tensor *grad;        // same shape, owned
    struct tg_node *grad_fn;       // borrowed from the tape; NULL for leaves
    /* Where the tensor came from, for the leak report and the debug mode
     * (tg_print_live_tensors, TG_DEBUG): */
    uint64_t serial;               // creation number, counted per thread
    const char *made_by;           // the function that made it, or NULL
    struct tg_tensor_debug *debug; // debug mode's record; NULL when off
} tg_tensor;

/* ------------------------------------------------------------------ errors */

/* Receives each error message (several lines, no trailing newline),
 * borrowed for the call: copy it to keep it. */
typedef void (*tg_error_handler)(const char *message);

/* Installs h (NULL restores the default) and returns the previous handler.
 * The handler is per thread. */
tg_error_handler tg_set_error_handler(tg_error_handler h);
/* The handlers tapegrad provides; message is borrowed. */
void tg_error_handler_print(const char *message); // default: prints to stderr
void tg_error_handler_abort(const char *message); // prints, then abort()
void tg_error_handler_quiet(const char *message); // does nothing (tests)

/* Reports an error as the library does: records "fn: <formatted>" as this
 * thread's last error and calls the handler. Messages say what failed with
 * the values, then "\n  rule: ...", then "\n  hint: ..." where a fix can be
 * suggested. For user code that fails like a tapegrad function (a custom
 * function's backward, say). Arguments borrowed. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void tg_error(const char *fn, const char *fmt, ...);

/* The last error message of this thread ("" when none), borrowed: the
 * thread's own buffer, valid while the thread lives, which the next error
 * overwrites. */
const char *tg_last_error(void);
/* Empties this thread's last error. */
void tg_clear_error(void);

/* ----------------------------------------------------------------- dtypes */

/* A dtype's name (a static string, borrowed), its element size in bytes,
 * and whether it is float32 or float64. */
const char *tg_dtype_name(tg_dtype dtype); // "float32", "float64", "int64"
size_t tg_dtype_size(tg_dtype dtype);
bool tg_dtype_is_float(tg_dtype dtype);

/* ----------------------------------------------------- lifetime, counters */

/* Another reference to t: returns t itself as a new reference (its count
 * goes up by one); t is borrowed. */
tg_tensor *tg_retain(tg_tensor *t); // returns t; NULL-safe
/* Takes ownership of the caller's reference to t and gives it up; a tensor
 * and its storage are freed with their last reference. A tensor made by a
 * recorded op belongs to the thread whose tape recorded it: its last
 * reference released on another thread is refused with an error and stays
 * the caller's (earlier references are not checked: do not share tensors
 * between threads). */
void tg_release(tg_tensor *t);      // NULL is a no-op
/* tg_release, told where it is called from: in the debug mode (TG_DEBUG)
 * a released tensor remembers func, file and line, and a later use of it
 * names them. The macro below makes every tg_release(t) call this one;
 * (tg_release)(t) calls the function itself. Takes ownership of the
 * caller's reference to t, as tg_release; file and func are borrowed (and
 * must be static strings, as __FILE__ and __func__ are). */
void tg_release_at(tg_tensor *t, const char *file, int line,
                   const char *func);
#define tg_release(t) tg_release_at((t), __FILE__, __LINE__, __func__)
/* Tensors and storages alive in the process: 0 once a program has released
 * everything it made. */
int64_t tg_live_tensors(void);      // tensors alive in the process
int64_t tg_live_storages(void);
/* Bytes of tensor storage alive in the process (the elements, not the
 * tensor headers or the tape), and the most there has been at once since
 * the start or the last tg_reset_peak_bytes(), which sets the peak to what
 * is alive now (as torch.cuda's max_memory_allocated and
 * reset_peak_memory_stats). */
int64_t tg_live_bytes(void);
int64_t tg_peak_bytes(void);
void tg_reset_peak_bytes(void);
/* Freed tensors of 64 KiB or more keep their memory for the next tensor of
 * the same size (1 MiB and more: at most 8 blocks, 256 MiB; 64 KiB to
 * 1 MiB: at most 64 blocks, 16 MiB), so a loop repeating one shape
 * does not hand its buffers back to the system and fault them in again on
 * every step; tensors of up to about 15 KiB, on free lists of the thread
 * that released them. tg_empty_cache() frees what is kept (the calling
 * thread's small blocks, every thread's large ones) (as
 * torch.cuda.empty_cache); tg_live_bytes() never counts it. TG_BLOCK_CACHE=0
 * in the environment keeps nothing (the valgrind test setup sets it, so a
 * use after free of a large tensor is still caught). A tensor of 2 MiB or
 * more asks the kernel for transparent huge pages where the kernel gives
 * them only to mappings that ask ("madvise" mode: madvise MADV_HUGEPAGE
 * over its whole 2 MiB stretches, taken back when its memory goes back to
 * malloc), so kernels streaming it take one TLB entry per 2 MiB rather
 * than per 4 KiB; TG_HUGE_PAGES=0 asks for none. */
void tg_empty_cache(void);

/* Test hook for out-of-memory paths: on the calling thread, the next n
 * allocations the library makes succeed and every one after them fails as
 * if memory had run out, until the hook is set again; n < 0 switches it
 * off (the default). Other threads are not affected. Returns how many
 * allocations the previous setting made fail, so a test can sweep n = 0,
 * 1, 2, ... until an operation completes with nothing failed. */
int64_t tg_fail_allocations_after(int64_t n);

/* Calls the calling thread has made to the system allocator (malloc,
 * calloc, realloc, aligned_alloc) for the library since it started, for
 * tests and benchmarks: a training loop in its steady state makes none
 * for its small tensors, which the thread's free lists hand back (see
 * "Memory" in docs/tensor.md). Other threads' calls are not counted. */
int64_t tg_system_allocations(void);

/* Test hook for file-system failures: on the calling thread, every step of
 * saving (tg_save_npy, tg_module_save) first calls hook(step, path, &nbytes,
 * ctx). It returns 0 to let the step run, or an errno value (ENOSPC, EIO,
 * ...) to make it fail as the system would; for a write it may also lower
 * nbytes, which writes only that much (a disk filling up part-way). A hook
 * that ends the process (_exit) simulates a crash at that step. NULL
 * switches it off (the default). Other threads are not affected. ctx
 * borrowed: it is passed to the hook as it is. */
typedef enum tg_io_step {
    TG_IO_CREATE,   // a new file or folder (path: its name)
    TG_IO_WRITE,    // bytes into a file (nbytes: how many)
    TG_IO_SYNC,     // fsync of a file or a folder
    TG_IO_CLOSE,    // closing a written file
    TG_IO_RENAME,   // a rename (path: the new name)
    TG_IO_EXCHANGE, // two folders swapped atomically (path: the checkpoint)
    TG_IO_REMOVE,   // removing a file or folder the library created
} tg_io_step;
typedef int (*tg_io_hook)(tg_io_step step, const char *path, size_t *nbytes,
                          void *ctx);
void tg_set_io_hook(tg_io_hook hook, void *ctx);

/* ------------------------------------------------ memory mistakes shown */

/* The debug mode: TG_DEBUG=1 in the environment (read at the first tensor
 * made), or tg_set_debug(true). While it is on, every tensor made records
 * its creation number and the function that made it, and a released
 * tensor's header is poisoned and kept aside (not reused, not freed until
 * many more have been released, or the program ends). Releasing a tensor
 * twice, or passing a released tensor to a function of the library, is
 * then reported as an error that names the tensor (shape, dtype, the
 * function that made it, its creation number) and where it was released;
 * the error handler is called with it and the process then aborts (a
 * handler that never returns, such as one that longjmps, keeps it alive).
 * Tensors made before the mode was turned on are not tracked. Off (the
 * default) it costs nothing measurable (docs/tensor.md). Returns
 * nothing; tg_debug_enabled says whether it is on. */
#define TG_DEBUG "TG_DEBUG"
void tg_set_debug(bool on);
bool tg_debug_enabled(void);
/* TG_LEAK_CHECK=1 in the environment (read at the first tensor made)
 * records every tensor as the debug mode does, without keeping released
 * ones, and at exit prints tg_print_live_tensors to stderr and ends the
 * process with status 1 when any tensor is still alive. */
#define TG_LEAK_CHECK "TG_LEAK_CHECK"
/* Writes the tensors alive now to f, oldest first: "1 tensor is still
 * alive: (32, 27) float32 made by tg_matmul (#412)", or a count and one
 * line per tensor (the first 20, then "... and N more"), or "no tensor is
 * alive". Only tensors made while TG_DEBUG or TG_LEAK_CHECK was on can be
 * listed; the others are counted. Returns 0, or -1 with an error when f is
 * NULL. f borrowed. */
int tg_print_live_tensors(FILE *f);

/* ---------------------------------------------------------------- create */

/* All return new references; arguments borrowed. shape may be NULL when
 * ndim == 0 (a scalar). */
tg_tensor *tg_empty(const int64_t *shape, int ndim, tg_dtype dtype);
tg_tensor *tg_zeros(const int64_t *shape, int ndim, tg_dtype dtype);
tg_tensor *tg_ones(const int64_t *shape, int ndim, tg_dtype dtype);
tg_tensor *tg_full(const int64_t *shape, int ndim, double value,
                   tg_dtype dtype);
/* Copies numel elements of the given dtype from data (C order). New
 * reference; arguments borrowed. */
tg_tensor *tg_from_array(const void *data, const int64_t *shape, int ndim,
                         tg_dtype dtype);
/* A 0-d tensor holding value, as torch.tensor(value, dtype): NaN, infinity
 * or a value outside [-2^63, 2^63) is refused for int64; float32 rounds
 * (past FLT_MAX to infinity). New reference. */
tg_tensor *tg_scalar(double value, tg_dtype dtype); // a 0-d tensor
/* [start, end) in steps of step, as torch.arange. New reference. */
tg_tensor *tg_arange(double start, double end, double step, tg_dtype dtype);
/* steps points from start to end inclusive, as torch.linspace. New
 * reference. */
tg_tensor *tg_linspace(double start, double end, int64_t steps,
                       tg_dtype dtype);
/* Ones on the diagonal and zeros elsewhere, as torch.eye. New reference. */
tg_tensor *tg_eye(int64_t n, int64_t m, tg_dtype dtype); // (n, m)
/* A tensor of x's shape and dtype: uninitialised, zeros, ones, or value.
 * New references; x borrowed. */
tg_tensor *tg_empty_like(const tg_tensor *x);
tg_tensor *tg_zeros_like(const tg_tensor *x);
tg_tensor *tg_ones_like(const tg_tensor *x);
tg_tensor *tg_full_like(const tg_tensor *x, double value);

/* --------------------------------------------------------------- inspect */

/* Whether x's elements lie in C order without gaps, and the size of one
 * dim. x borrowed. */
bool tg_is_contiguous(const tg_tensor *x);
int64_t tg_size(const tg_tensor *x, int dim); // negative dims count from the end; -1 on error
/* Formats x's shape as "(2, 3)" ("()" for a scalar) into the caller's buf
 * and returns buf (so the result is borrowed from the caller). Arguments
 * borrowed. */
#define TG_SHAPE_STR_MAX 192
char *tg_shape_str(const tg_tensor *x, char buf[TG_SHAPE_STR_MAX]);
/* Whether a and b have the same shape. Arguments borrowed. */
bool tg_same_shape(const tg_tensor *a, const tg_tensor *b);

/* The value of a one-element tensor, as double. NAN (and an error) otherwise.
 * x borrowed. */
double tg_item(const tg_tensor *x);
/* One element by full index (negative indices count from the end): tg_get
 * stores it in *out, tg_set writes value (an in-place write: the version
 * counter goes up; a value the dtype cannot hold is refused, as tg_fill_).
 * Return 0 or -1; arguments borrowed. */
int tg_get(const tg_tensor *x, const int64_t *index, int nindex, double *out);
int tg_set(tg_tensor *x, const int64_t *index, int nindex, double value);
/* Pointer to element 0 (offset applied); NULL with an error if the dtype is
 * not the one asked for. Respect x->strides when reading. Borrowed: it
 * points into x's storage, valid while x lives; x borrowed. */
float *tg_data_f32(const tg_tensor *x);
double *tg_data_f64(const tg_tensor *x);
int64_t *tg_data_i64(const tg_tensor *x);
/* Copies all elements in C order, converted to double, into the caller's
 * out[numel]. Returns 0 or -1; arguments borrowed. */
int tg_to_f64_array(const tg_tensor *x, double *out);

/* In place: x[...] = value. Bumps the version counter. A value the dtype
 * cannot hold (NaN, infinity or beyond 2^63 for int64, beyond FLT_MAX for
 * float32) is refused, as torch's fill_, and so is an expanded x (stride
 * 0 on a dim of size > 1: one memory location for several elements).
 * Allocates nothing, so it works when memory has run out. Returns 0 or -1;
 * x borrowed. */
int tg_fill_(tg_tensor *x, double value);
/* In place: dst[...] = src, src broadcast to dst's shape and converted to its
 * dtype. An expanded dst is refused, as tg_fill_. When src shares memory
 * with dst (x[1:] = x[:-1]), src is read as it was before the copy: where
 * PyTorch refuses a partial overlap and asks for a clone, tg_copy_ makes
 * that clone itself. Returns 0 or -1; arguments borrowed. */
int tg_copy_(tg_tensor *dst, const tg_tensor *src);

/* ---------------------------------------------------------------- random */

/* A generator bit-compatible with PyTorch's CPU generator (mt19937). */
typedef struct tg_generator tg_generator;
/* A new generator seeded with seed, which the caller frees with
 * tg_generator_free(). */
tg_generator *tg_generator_new(uint64_t seed);
/* Takes ownership of g and frees it. */
void tg_generator_free(tg_generator *g);
/* The default generator (used whenever g is NULL) is one static object per
 * process, seeded with PyTorch's default seed, with no lock: it is not
 * thread-safe. A thread that draws numbers while another does must use its
 * own generator from tg_generator_new(). Besides the functions given a
 * NULL g (tg_rand, tg_randn, tg_randint, tg_uniform_, tg_normal_, the
 * datasets, the split and the batches of nn/), it is what tg_manual_seed
 * seeds and what tg_linear_new and tg_mlp_new draw initial weights from,
 * and what Dropout draws its masks from in training mode: so make the
 * models on one thread (or one at a time) before handing each to its
 * thread, and train them there without Dropout. tg_generator_free(NULL)
 * and tg_generator_seed(NULL, s) do nothing. */
tg_generator *tg_default_generator(void); // borrowed
/* torch.manual_seed(seed) on the default generator; tg_generator_seed does
 * the same on g (g borrowed). */
void tg_manual_seed(uint64_t seed);
void tg_generator_seed(tg_generator *g, uint64_t seed);
/* U[0, 1), N(0, 1), integers in [low, high): as torch.rand/randn/randint.
 * g NULL means the default generator. New references; arguments borrowed. */
tg_tensor *tg_rand(const int64_t *shape, int ndim, tg_dtype dtype);
tg_tensor *tg_randn(const int64_t *shape, int ndim, tg_dtype dtype);
tg_tensor *tg_randint(int64_t low, int64_t high, const int64_t *shape,
                      int ndim);
tg_tensor *tg_rand_gen(tg_generator *g, const int64_t *shape, int ndim,
                       tg_dtype dtype);
tg_tensor *tg_randn_gen(tg_generator *g, const int64_t *shape, int ndim,
                        tg_dtype dtype);
tg_tensor *tg_randint_gen(tg_generator *g, int64_t low, int64_t high,
                          const int64_t *shape, int ndim);
/* In place, as Tensor.uniform_(from, to) / normal_(mean, std). 0 or -1;
 * arguments borrowed. */
int tg_uniform_(tg_tensor *x, double from, double to, tg_generator *g);
int tg_normal_(tg_tensor *x, double mean, double std, tg_generator *g);
/* Category indices drawn from the rows of probs, as
 * torch.multinomial(probs, num_samples, replacement, generator=g). probs is (K,) or (R, K),
 * float32 or float64: the weights of K categories, finite and >= 0, each
 * row with one > 0; they need not sum to 1. The result is int64, of shape
 * (num_samples,) or (R, num_samples); without replacement an index appears
 * at most once per row (num_samples <= K). The same indices, and the same
 * generator state after, as PyTorch 1.13 on the CPU for the same state
 * (docs/tensor.md says how, and the one corner where ties are ordered
 * differently). Not differentiable, as in PyTorch: nothing is recorded.
 * g NULL means the default generator. New reference; arguments borrowed
 * (g is advanced). */
tg_tensor *tg_multinomial(const tg_tensor *probs, int64_t num_samples,
                          bool replacement, tg_generator *g);

/* -------------------------------------------------------------- printing */

/* As torch.set_printoptions: precision (default 4), sci_mode (-1 auto,
 * 0 never, 1 always), threshold (default 1000 elements before "..."),
 * edgeitems (default 3, at most INT64_MAX / 2), linewidth (default 80). */
typedef struct tg_print_options {
    int precision;
    int sci_mode;
    int64_t threshold;
    int64_t edgeitems;
    int linewidth;
} tg_print_options;
tg_print_options tg_get_print_options(void);
void tg_set_print_options(tg_print_options options);
/* Formats x exactly as PyTorch's repr: "tensor([[0.2961, 0.5166]])".
 * Returns a malloc'd string the caller frees, or NULL; x borrowed. */
char *tg_format(const tg_tensor *x);
/* Prints tg_format(x) and a newline; 0 or -1. Arguments borrowed. */
int tg_fprint(FILE *f, const tg_tensor *x); // writes tg_format(x) and "\n"
int tg_print(const tg_tensor *x);           // to stdout

/* ------------------------------------------------------- kernels, threads */

/* Which kernels the ops run. Every optimised kernel (LayerNorm, BatchNorm,
 * matmul, conv, float32 tanh, softmax and log_softmax) keeps a plain,
 * obviously correct twin: the reference the tests compare it with, and
 * the one to read when learning. Results of the fast kernels agree with the reference within the
 * tolerance documented in docs/performance.md; those of the library's own
 * C kernels never depend on the number of threads (OpenBLAS's are
 * OpenBLAS's business). */
typedef enum tg_kernels {
    TG_KERNELS_FAST,      // the default: fast kernels, OpenBLAS for matmul
                          // when the library is built with -Dopenblas
    TG_KERNELS_PORTABLE,  // the fast kernels written in C, never OpenBLAS
    TG_KERNELS_REFERENCE, // the plain loops
} tg_kernels;
/* The environment variables read at first use: TG_KERNELS=reference (or
 * fast, portable) and TG_NUM_THREADS=n. */
#define TG_KERNELS "TG_KERNELS"
#define TG_NUM_THREADS "TG_NUM_THREADS"
/* Read at the first large allocation: TG_BLOCK_CACHE=0 (see
 * tg_empty_cache). */
#define TG_BLOCK_CACHE "TG_BLOCK_CACHE"
/* Read at the first allocation of 2 MiB or more: TG_HUGE_PAGES=0 (see
 * tg_empty_cache). */
#define TG_HUGE_PAGES "TG_HUGE_PAGES"
/* Chooses this thread's kernels; each thread starts with TG_KERNELS from
 * the environment ("fast", "portable" or "reference"), else
 * TG_KERNELS_FAST. Returns 0, or -1 for a value not in tg_kernels. */
int tg_set_kernels(tg_kernels kernels);
/* This thread's kernels. */
tg_kernels tg_get_kernels(void);
/* Sets how many threads the parallel kernels use, for the whole process
 * (as torch.set_num_threads); the default is TG_NUM_THREADS from the
 * environment, else OpenMP's default (OMP_NUM_THREADS, else one per
 * core). Small tensors always run on the calling thread. A count set
 * here or in TG_NUM_THREADS / OMP_NUM_THREADS is what every team gets;
 * with none set, a team is one thread while other work waits for the
 * CPUs (Linux's CPU pressure, /proc/pressure/cpu; where the kernel has
 * none, OpenMP's dynamic adjustment; docs/performance.md, "Threads on a
 * shared machine"). A build without OpenMP runs on one thread whatever
 * is set.
 * Returns 0, or -1 when n < 1. */
int tg_set_num_threads(int n);
/* The number of threads the parallel kernels use: 1 without OpenMP. */
int tg_get_num_threads(void);

/* ------------------------------------------------------------------ .npy */

/* Writes x (any layout) as a C-order little-endian .npy (version 1.0).
 * Returns 0 or -1; arguments borrowed. */
int tg_save_npy(const char *path, const tg_tensor *x);
/* Reads float32/float64/int64 little-endian C-order .npy, versions 1-3.
 * New reference; path borrowed. */
tg_tensor *tg_load_npy(const char *path);
/* The same from memory (used by the loaders and the fuzzers); name is shown
 * in error messages. New reference; arguments borrowed. */
tg_tensor *tg_npy_parse(const void *bytes, size_t nbytes, const char *name);

#ifdef __cplusplus
}
#endif

#endif
