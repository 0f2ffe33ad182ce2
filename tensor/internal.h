/*
 * tensor/internal.h - what the library's own files share: error recording,
 * argument checks, view construction, type promotion, broadcasting and the
 * strided iterator that every elementwise kernel runs on.
 *
 * Not installed and not part of the public API. The public operations that
 * use these pieces live in autograd/ops/.
 */
#ifndef TG_TENSOR_INTERNAL_H
#define TG_TENSOR_INTERNAL_H

#include "tensor.h"

/* tg_dtype_size in the library's own files: inline, as the kernels ask it
 * for every tensor they touch and a call through the shared library's
 * PLT costs more than the answer. (tg_dtype_size)(d) is the function. */
static inline size_t tg_dtype_size_inline(tg_dtype dtype)
{
    return dtype == TG_FLOAT32 ? 4 : 8;
}
#define tg_dtype_size(dtype) tg_dtype_size_inline(dtype)

/* Makes p, the address of a thread-local, opaque to the optimiser, so
 * that a function keeps it in a register: GCC otherwise computes it again
 * at each use after a call (a call through the TLS descriptor each time;
 * three per freed block before). Nothing else changes. */
#if defined(__GNUC__)
#define tg_tls_keep(p) __asm__("" : "+r"(p))
#else
#define tg_tls_keep(p) ((void)(p))
#endif

/* ------------------------------------------------------------------ errors */

/* A path as messages show it: whole when it has at most TG_PATH_SHOWN_MAX
 * bytes, else its start and its end (where the file's name is) around
 * "...", so that a message, cut at a fixed size, keeps its reason, rule
 * and hint whatever the path. Returns path itself or buf. */
#define TG_PATH_SHOWN_MAX 200
const char *tg_path_shown(const char *path, char buf[TG_PATH_SHOWN_MAX + 1]);

/* Formats shape[0..ndim) as "(2, 3)" into buf. */
char *tg_shape_format(const int64_t *shape, int ndim,
                      char buf[TG_SHAPE_STR_MAX]);

/* Maps dim (negative counts from the end) into [0, ndim); on failure records
 * an error naming fn and returns -1. ndim 0 accepts dims 0 and -1, as
 * PyTorch does for scalars. */
int tg_dim_normalize(const char *fn, int dim, int ndim);

/* Checks a shape argument before its sizes are read: ndim in
 * [0, TG_MAX_DIMS] and a non-NULL array when ndim > 0. False with an error
 * naming fn otherwise. */
bool tg_shape_arg_ok(const char *fn, const int64_t *shape, int ndim);

/* The most elements a tensor may have. 2^59 elements of 8 bytes is far
 * beyond any machine and keeps every byte count and offset in int64. */
#define TG_MAX_NUMEL (INT64_C(1) << 59)

/* Validates a requested shape (ndim in range, no negative sizes, no
 * overflowing product) and returns its element count, or -1 with an error. */
int64_t tg_shape_check(const char *fn, const int64_t *shape, int ndim);

/* -------------------------------------------------------------- memory */

/* Every allocation the library makes goes through these, so that
 * tg_fail_allocations_after() can make any of them fail. Same contracts as
 * the C functions (tg_aligned_alloc: size rounded up by the caller). */
void *tg_malloc(size_t size);
void *tg_calloc(size_t count, size_t size);
void *tg_realloc(void *p, size_t size);
void *tg_aligned_alloc(size_t alignment, size_t size);
/* For tensor blocks, view headers and tape nodes: tg_malloc, but a freed
 * block of at most 16 KiB is kept on the freeing thread's free lists and
 * one of 64 KiB or more in a shared cache, and returned for a later
 * request of its size (tensor/memory.c; tg_empty_cache() in tensor.h).
 * tg_block_free takes the size the block was asked with; a block from
 * tg_block_alloc goes back through tg_block_free, never free(). */
void *tg_block_alloc(size_t size);
void tg_block_free(void *block, size_t size);

/* ------------------------------------------------------------------ random */

/* One integer in [0, range) from g (NULL: the default generator), drawn
 * as tg_randint draws each element, so a loop of these follows the same
 * stream as torch.randint. range >= 1. */
uint64_t tg_random_below(tg_generator *g, uint64_t range);
/* One U[0, 1) double from g (NULL: the default generator): the low 53
 * bits of two 32-bit draws times 2^-53, as a float64 tg_rand element. */
double tg_random_uniform_f64(tg_generator *g);

/* ------------------------------------------------------------------ create */

/* A new contiguous tensor; no argument checks (callers checked the shape). */
tg_tensor *tg_alloc(const int64_t *shape, int ndim, tg_dtype dtype);
/* A new contiguous tensor of dtype holding v[0 .. numel) converted from
 * double (sums and statistics kernels compute in double). No checks. */
tg_tensor *tg_alloc_from_f64(const double *v, const int64_t *shape, int ndim,
                             tg_dtype dtype);
/* A new tensor sharing base's storage with the given layout (no checks). */
tg_tensor *tg_view_make(const tg_tensor *base, const int64_t *shape,
                        const int64_t *strides, int ndim, int64_t offset);
/* Contiguous strides for shape, in elements. */
void tg_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides);
/* Address of element 0 of x (offset applied). */
static inline char *tg_base_ptr(const tg_tensor *x)
{
    return (char *)x->storage->data +
           x->offset * (int64_t)tg_dtype_size(x->dtype);
}
/* A contiguous copy of x converted to dtype, or x retained when x is already
 * contiguous of that dtype. New reference. */
tg_tensor *tg_contiguous_as(const tg_tensor *x, tg_dtype dtype);
/* The element at a flat C-order position, as double (slow; for printing and
 * tests). */
double tg_read_flat(const tg_tensor *x, int64_t i);

/* Float to int64 rounds toward zero (2.7 -> 2, -2.7 -> -2), as C's cast and
 * PyTorch. Values with no int64 (NaN, +-inf, |v| >= 2^63) are undefined
 * behaviour for a C cast; they give INT64_MIN here, which is what x86's
 * conversion instruction, and so PyTorch on x86, produces. Every float to
 * int64 conversion in the library goes through this. */
static inline int64_t tg_float_to_int64(double v)
{
    const double two63 = 9223372036854775808.0; // 2^63, exact in double
    if (!(v >= -two63 && v < two63))
        return INT64_MIN;
    return (int64_t)v;
}

/* Writes v into element i (C order) of a contiguous tensor, converted to
 * its dtype. */
static inline void tg_store_contiguous(tg_tensor *out, int64_t i, double v)
{
    char *p = tg_base_ptr(out);
    switch (out->dtype) {
    case TG_FLOAT32: ((float *)p)[i] = (float)v; break;
    case TG_FLOAT64: ((double *)p)[i] = v; break;
    case TG_INT64: ((int64_t *)p)[i] = tg_float_to_int64(v); break;
    }
}

/* --------------------------------------------------------------- promotion */

/* PyTorch's result_type for two tensors: dimensioned tensors decide within
 * a category (int < float); a 0-d tensor decides only when its category is
 * higher. float32 with float64 gives float64. */
tg_dtype tg_result_type(const tg_tensor *a, const tg_tensor *b);
/* The dtype a Python-style scalar takes next to x: x's own dtype if x is
 * float, int64 for an integral value next to int64, else float32. */
tg_dtype tg_scalar_type(const tg_tensor *x, double value);

/* The broadcast of shapes a and b into out (NumPy rules). Returns 0, or -1
 * with an error naming fn that shows both shapes. */
int tg_broadcast_shape(const char *fn, const int64_t *a, int na,
                       const int64_t *b, int nb, int64_t *out, int *nout);

/* ---------------------------------------------------------------- iterator */

/* Walks up to TG_ITER_MAX operands of one common shape in lock step.
 * Operand 0 is usually the output. Strides may be 0 (broadcast). The
 * iterator merges dims that are contiguous for every operand and calls a
 * loop function once per innermost run. */
#define TG_ITER_MAX 4

/* data[k] points at the first element of operand k in this run; strides[k]
 * is operand k's step in ELEMENTS along the run; n elements in the run. */
typedef void (*tg_loop_fn)(char **data, const int64_t *strides, int64_t n,
                           void *ctx);

typedef struct tg_iter {
    int nops;
    int ndim;
    int64_t shape[TG_MAX_DIMS];
    int64_t strides[TG_ITER_MAX][TG_MAX_DIMS]; // in elements
    char *data[TG_ITER_MAX];
    size_t itemsize[TG_ITER_MAX];
} tg_iter;

/* Sets up an iterator over `shape`; each operand is broadcast to it (its
 * shape must be broadcast-compatible; the caller has checked). */
void tg_iter_init(tg_iter *it, const int64_t *shape, int ndim, int nops,
                  tg_tensor *const *ops);
void tg_iter_run(const tg_iter *it, tg_loop_fn loop, void *ctx);

/* ------------------------------------------------------- elementwise apply */

/* The inner loops of one elementwise op, one per compute dtype. A NULL
 * entry means the op does not run in that dtype: int64 inputs are then
 * computed in float32 (as torch.exp on an integer tensor). */
typedef struct tg_elementwise_kernel {
    tg_loop_fn f32, f64, i64;
    bool out_int64; // comparisons: out is int64 0/1 whatever the inputs
} tg_elementwise_kernel;

/* Runs loop over ops[0 .. nops), broadcast to (shape, ndim), operand 0
 * being the output: in one call, without setting up an iterator, when
 * every operand is contiguous with the output's element count or is a
 * single element (stride 0), the common case, where most of a small op's
 * time is not in the loop; else with tg_iter. The shortcut of every
 * elementwise caller. */
void tg_elementwise_run(tg_loop_fn loop, void *ctx, const int64_t *shape,
                        int ndim, int nops, tg_tensor *const *ops);

/* out = kernel(x); ctx is passed to the loop (e.g. a scalar parameter). */
tg_tensor *tg_unary_apply(const char *fn, const tg_elementwise_kernel *k,
                          const tg_tensor *x, void *ctx);
/* out = kernel(a, b) with broadcasting and type promotion. */
tg_tensor *tg_binary_apply(const char *fn, const tg_elementwise_kernel *k,
                           const tg_tensor *a, const tg_tensor *b, void *ctx);

/* op(x, s) (or op(s, x) when scalar_first) for a C double s, which becomes
 * a 0-d tensor of the dtype a Python number would take next to x
 * (tg_scalar_type). The _scalar forms of the binary ops are built on it. */
tg_tensor *tg_scalar_apply(tg_tensor *(*op)(const tg_tensor *,
                                             const tg_tensor *),
                           const tg_tensor *x, double s, bool scalar_first);

/* Loop bodies for the kernels above. Inside EXPR, `a` (and `b`) are the
 * input elements of type TI; the result is stored as TO. The contiguous
 * case is a plain indexed loop that the compiler vectorises, in a
 * function of its own marked ATTR: nothing for most ops (it is inlined),
 * TG_VECTOR_CLONES for the ones a training step runs on every activation
 * (the _CLONES forms), which gets a copy for each CPU width. EXPR is
 * evaluated alike in every copy, so the bits do not change. */
#define TG_UNARY_LOOP_AS(ATTR, name, TO, TI, EXPR)                          \
    static ATTR void name##_unit_(TO *o_, const TI *x_, int64_t n_)        \
    {                                                                       \
        for (int64_t i_ = 0; i_ < n_; i_++) {                               \
            TI a = x_[i_];                                                  \
            o_[i_] = (TO)(EXPR);                                            \
        }                                                                   \
    }                                                                       \
    static void name(char **data_, const int64_t *st_, int64_t n_,         \
                     void *ctx_)                                            \
    {                                                                       \
        (void)ctx_;                                                         \
        TO *o_ = (TO *)data_[0];                                            \
        const TI *x_ = (const TI *)data_[1];                                \
        if (st_[0] == 1 && st_[1] == 1) {                                   \
            name##_unit_(o_, x_, n_);                                       \
        } else {                                                            \
            for (int64_t i_ = 0; i_ < n_; i_++) {                           \
                TI a = x_[i_ * st_[1]];                                     \
                o_[i_ * st_[0]] = (TO)(EXPR);                               \
            }                                                               \
        }                                                                   \
    }
#define TG_UNARY_LOOP(name, TO, TI, EXPR)                                   \
    TG_UNARY_LOOP_AS(, name, TO, TI, EXPR)
#define TG_UNARY_LOOP_CLONES(name, TO, TI, EXPR)                            \
    TG_UNARY_LOOP_AS(TG_VECTOR_CLONES, name, TO, TI, EXPR)

#define TG_BINARY_LOOP_AS(ATTR, name, TO, TI, EXPR)                         \
    static ATTR void name##_unit_(TO *o_, const TI *pa_, const TI *pb_,    \
                                  int64_t n_)                               \
    {                                                                       \
        for (int64_t i_ = 0; i_ < n_; i_++) {                               \
            TI a = pa_[i_], b = pb_[i_];                                    \
            o_[i_] = (TO)(EXPR);                                            \
        }                                                                   \
    }                                                                       \
    static ATTR void name##_scalar_(TO *o_, const TI *pa_, TI b, int64_t n_) \
    {                                                                       \
        for (int64_t i_ = 0; i_ < n_; i_++) {                               \
            TI a = pa_[i_];                                                 \
            o_[i_] = (TO)(EXPR);                                            \
        }                                                                   \
    }                                                                       \
    static void name(char **data_, const int64_t *st_, int64_t n_,         \
                     void *ctx_)                                            \
    {                                                                       \
        (void)ctx_;                                                         \
        TO *o_ = (TO *)data_[0];                                            \
        const TI *pa_ = (const TI *)data_[1];                               \
        const TI *pb_ = (const TI *)data_[2];                               \
        if (st_[0] == 1 && st_[1] == 1 && st_[2] == 1) {                    \
            name##_unit_(o_, pa_, pb_, n_);                                 \
        } else if (st_[0] == 1 && st_[1] == 1 && st_[2] == 0) {             \
            name##_scalar_(o_, pa_, pb_[0], n_);                            \
        } else {                                                            \
            for (int64_t i_ = 0; i_ < n_; i_++) {                           \
                TI a = pa_[i_ * st_[1]], b = pb_[i_ * st_[2]];              \
                o_[i_ * st_[0]] = (TO)(EXPR);                               \
            }                                                               \
        }                                                                   \
    }
#define TG_BINARY_LOOP(name, TO, TI, EXPR)                                  \
    TG_BINARY_LOOP_AS(, name, TO, TI, EXPR)
#define TG_BINARY_LOOP_CLONES(name, TO, TI, EXPR)                           \
    TG_BINARY_LOOP_AS(TG_VECTOR_CLONES, name, TO, TI, EXPR)

/* The same loops reading a double parameter from ctx as `p` (clamp bounds,
 * leaky slopes, ...). ctx points at a double[2]: p = ctx[0], q = ctx[1]. */
#define TG_UNARY_LOOP_P(name, TO, TI, EXPR)                                 \
    static void name(char **data_, const int64_t *st_, int64_t n_,         \
                     void *ctx_)                                            \
    {                                                                       \
        const double *pq_ = (const double *)ctx_;                           \
        const TI p = (TI)pq_[0], q = (TI)pq_[1];                            \
        (void)p;                                                            \
        (void)q;                                                            \
        TO *o_ = (TO *)data_[0];                                            \
        const TI *x_ = (const TI *)data_[1];                                \
        for (int64_t i_ = 0; i_ < n_; i_++) {                               \
            TI a = x_[i_ * st_[1]];                                         \
            o_[i_ * st_[0]] = (TO)(EXPR);                                   \
        }                                                                   \
    }

/* ------------------------------------------------------ reference kernels */

/* tg_matmul computed by the plain strided triple loop: the reference the
 * fast kernel is tested against (autograd/ops/matmul.c). */
tg_tensor *tg_matmul_reference(const tg_tensor *a, const tg_tensor *b);

/* --------------------------------------------------------- autograd hooks */
/* tensor/ does not know the tape; autograd/ installs these hooks when it
 * records its first node, so a tensor with a grad_fn can tell its node it
 * died, and printing can name the node. */
typedef struct tg_autograd_hooks {
    /* t->grad_fn != NULL. False refuses: t stays alive (its node is on
     * another thread's tape, which this thread must not touch). */
    bool (*tensor_freed)(tg_tensor *t);
    const char *(*grad_fn_name)(const struct tg_node *node);
    bool (*grad_enabled)(void);                      // this thread's mode
} tg_autograd_hooks;
void tg_set_autograd_hooks(const tg_autograd_hooks *hooks);
const tg_autograd_hooks *tg_get_autograd_hooks(void); // NULL until set

/* In-place writes (set, fill_, copy_, uniform_, normal_) into a tensor that
 * requires grad are refused while gradients are enabled, as PyTorch: the
 * tape does not see them, so gradients through the tensor would be wrong.
 * True when the write may go ahead; else an error naming fn. */
bool tg_write_allowed(const char *fn, const tg_tensor *x);
/* The same for writes of every element (fill_, copy_, uniform_, normal_),
 * which are also refused into an expanded view (a dim of size > 1 with
 * stride 0), whose elements along that dim are one memory location, as
 * PyTorch refuses them. One element (tg_set) may be written: PyTorch's
 * e[0, 3] = 7 also sets the whole expanded row. */
bool tg_write_all_allowed(const char *fn, const tg_tensor *x);
/* dst <- src, element by element with dtype conversion, where src
 * broadcasts to dst's shape, dst is not expanded and the two do not
 * overlap: needs no memory and cannot fail (the last step of an update
 * that must not stop half way relies on it). The version is not bumped. */
void tg_copy_unchecked(tg_tensor *dst, const tg_tensor *src);
/* The first dim of size > 1 with stride 0 (an expanded view: writing or
 * perturbing one of its elements changes the others along that dim too),
 * or -1. */
int tg_expanded_dim(const tg_tensor *x);

/* -------------------------------------------------- kernels and threads */

/* OpenMP directives that vanish in a build without OpenMP:
 *   TG_OMP(parallel for num_threads(nt) schedule(static))
 * Code inside a parallel region must not allocate (tg_malloc) or report
 * errors (tg_error): the allocation hook, the error state and the tape are
 * per thread. Results must not depend on the number of threads: give each
 * reduction to one thread, or split it into chunks of a fixed size that do
 * not depend on the thread count and combine them in a fixed order. */
#define TG_STRINGIFY(x) #x
#ifdef _OPENMP
#define TG_OMP(directive) _Pragma(TG_STRINGIFY(omp directive))
#else
#define TG_OMP(directive)
#endif
/* This thread's number in the current OpenMP team: 0 outside one, and
 * always 0 without OpenMP. For per-thread scratch inside a region. */
#ifdef _OPENMP
#include <omp.h>
static inline int tg_thread_num(void)
{
    return omp_get_thread_num();
}
#else
static inline int tg_thread_num(void)
{
    return 0;
}
#endif
/* On a hot kernel: GCC on x86-64 Linux compiles it three times (plain
 * x86-64, AVX2, AVX-512) and picks one when the program starts, from what
 * the CPU offers. A kernel that fixes the order of every addition gives
 * the same bits in all three, as the build forbids fused multiply-adds
 * (-ffp-contract=off). Elsewhere (or under clang) the ordinary function.
 * Not under ThreadSanitizer either: the clones are picked by ifunc
 * resolvers, which the dynamic loader runs before the sanitizer's runtime
 * is set up, and the instrumented resolver then crashes before main. */
#if defined(__SANITIZE_THREAD__)
#define TG_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TG_THREAD_SANITIZER 1
#endif
#endif
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&    \
    defined(__linux__) && !defined(TG_THREAD_SANITIZER)
#define TG_VECTOR_CLONES                                                     \
    __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define TG_VECTOR_CLONES
#endif
/* Below this much work (about one element touched = 1) a loop runs on the
 * calling thread: starting a team costs a few microseconds. */
#define TG_PARALLEL_MIN_WORK (INT64_C(1) << 15)
/* The number of threads for a loop doing `work`: 1 when the work is small
 * or the build has no OpenMP, else tg_get_num_threads(). */
int tg_parallel_threads(int64_t work);
/* The threads a team may have now: tg_get_num_threads(), or 1 while the
 * machine is busy with other work (CPU pressure, parallel.c) when the
 * program asked for no count and OMP_DYNAMIC is not set. Asked on the
 * thread that starts the team. */
int tg_team_threads(void);
/* The busy-machine rule's state (parallel.c; all 0 at the start). */
typedef struct tg_busy_state {
    int64_t window_start_ns;    // when stall_at_start_us was read; 0: never
    uint64_t stall_at_start_us; // the CPU-wait count then
    int64_t single_until_ns;    // teams of one until then
    int64_t backoff_ns;         // the next back-off
    int strikes;                // busy windows in a row, short of a back-off
} tg_busy_state;
/* One decision at now_ns (a monotonic clock): false when teams must be
 * one thread. read_stall gives the microseconds some task has waited for
 * a CPU so far (false: unknown); it is called at most once per window.
 * For tg_team_threads and the tests. */
bool tg_busy_step(tg_busy_state *s, int64_t now_ns,
                  bool (*read_stall)(uint64_t *us));
/* Whether teams started from this thread may have fewer threads than
 * the count on a loaded machine (OpenMP's dynamic adjustment, which
 * tg_get_num_threads turns on when no count was asked for and OMP_DYNAMIC
 * is not set); false without OpenMP. For the tests. */
bool tg_dynamic_teams(void);
/* Forgets the thread count and that it was asked for: the next
 * tg_get_num_threads reads the environment again. For the tests. */
void tg_forget_num_threads(void);
/* This thread's kernels, for the dispatch in the ops: the fast path runs
 * when this is not TG_KERNELS_REFERENCE (and the layout allows it). */
static inline bool tg_use_reference_kernels(void)
{
    return tg_get_kernels() == TG_KERNELS_REFERENCE;
}
/* Whether matmul may call OpenBLAS (built with it and TG_KERNELS_FAST). */
bool tg_use_blas(void);


/* ---- file-system steps of saving (fileio.c): each returns 0, or -1 with
 * errno set and no message, and each passes through tg_set_io_hook. */
/* A new file, never an existing one (O_EXCL), mode 0666 less the umask. */
int tg_io_create(const char *path, int *fd);
/* All n bytes, through short writes; ENOSPC when the disk takes no more. */
int tg_io_write(int fd, const void *bytes, size_t n, const char *path);
int tg_io_fsync(int fd, const char *path);
int tg_io_close(int fd, const char *path); // fd is closed either way
/* fsync of a folder, so that a rename inside it is on the disk; a file
 * system that cannot sync folders counts as success. */
int tg_io_sync_dir(const char *dir);
int tg_io_mkdir(const char *path);
int tg_io_rename(const char *from, const char *to);
/* Swaps two existing folders atomically (Linux renameat2 RENAME_EXCHANGE);
 * -1 with EINVAL, ENOSYS or ENOTSUP where the file system cannot. */
int tg_io_exchange(const char *a, const char *b);
int tg_io_unlink(const char *path);
int tg_io_rmdir(const char *path);
/* Six base-36 characters for a temporary name, unlikely to repeat. */
#define TG_IO_SUFFIX_SIZE 7
void tg_io_unique_suffix(char out[TG_IO_SUFFIX_SIZE]);
/* The folder that holds path ("." for a bare name), malloc'd; NULL when
 * memory runs out. */
char *tg_io_parent(const char *path);
/* Opens path for reading, following links, without blocking on a FIFO:
 * 0 with *fd open and *size its size when it is a regular file; -2 when it is something else
 * (*mode says what; nothing is left open); -1 with errno set when it cannot
 * be opened. Loaders refuse anything but regular files so that a load can
 * neither block nor read forever. */
int tg_io_open_regular(const char *path, int *fd, unsigned *mode,
                       uint64_t *size);
/* "a folder", "a device", "a FIFO (named pipe)", ...: for messages. */
const char *tg_file_kind(unsigned mode);
/* Writes x as a .npy file at path, which must not exist yet (it is
 * created, written, flushed with fsync and closed; on failure what was
 * created is removed). Errors are reported as fn's, naming the file
 * `shown`. Returns 0, -1 (reported), or -2 without a message when path
 * exists already (the caller tries another name). */
int tg_npy_write_new(const char *fn, const char *path, const char *shown,
                     const tg_tensor *x);

/* ---- MT19937 (random.c): the engine of tg_generator and, seeded its own
 * way, of Python's random module (nn/pyrandom.c). */
#define TG_MT_N 624
typedef struct tg_mt19937 {
    uint32_t state[TG_MT_N]; // (624,) the state words
    int index;               // next word to temper; TG_MT_N: twist first
} tg_mt19937;
/* init_genrand(seed): state[0] = seed, then Knuth's recurrence. */
void tg_mt_init(tg_mt19937 *mt, uint32_t seed);
/* genrand_uint32: one tempered draw, twisting every 624. */
uint32_t tg_mt_next32(tg_mt19937 *mt);

/* The setting of an environment variable (TG_KERNELS, TG_BLOCK_CACHE,
 * TG_DETECT_ANOMALY, ...) as an index into names[0..n): unset or empty
 * gives fallback, silently; any other value warns on stderr, naming the
 * choices and fallback_says ("using the fast kernels"), and gives
 * fallback. */
int tg_env_choice(const char *var, const char *const *names, int n,
                  int fallback, const char *fallback_says);

/* The plural ending of a count in a message: "" for 1, else "s", as in
 * ("%d dim%s", n, tg_plural(n)): "1 dim", "0 dims", "3 dims". */
static inline const char *tg_plural(long long n)
{
    return n == 1 ? "" : "s";
}

#endif
