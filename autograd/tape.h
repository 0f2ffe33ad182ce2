/*
 * autograd/tape.h - the node struct and the engine's own entry points,
 * shared by the files of autograd/ that walk the tape (tape.c, function.c,
 * gradcheck.c, dot.c). Op files use autograd/internal.h only.
 */
#ifndef TG_AUTOGRAD_TAPE_H
#define TG_AUTOGRAD_TAPE_H

#include "internal.h"

#include <stddef.h>

/* Where the gradient of one input goes. */
typedef struct tg_edge {
    tg_node *node;     // the node that made the input (counted link), or
    tg_tensor *leaf;   // the input itself when it is a leaf (retained)
    bool needs_grad;   // the input required grad when the op ran
    tg_dtype dtype;    // the input as it was at forward time
    int ndim;
    int64_t shape[TG_MAX_DIMS];
} tg_edge;

struct tg_node {
    const char *name;
    tg_backward_fn backward;
    tg_node *prev, *next;          // neighbours on the tape
    tg_node *next_dying;           // queue of nodes being freed
    bool on_tape;
    uint64_t tape_id;              // the thread's tape it is on (from 1)
    int64_t refs;                  // output alive + later nodes linking here
    tg_tensor *out;                // borrowed; NULL once the output died
    tg_dtype out_dtype;
    int out_ndim;
    int64_t out_shape[TG_MAX_DIMS];
    tg_tensor *grad;               // dL/d(out), during a backward only
    uint64_t mark;                 // the last backward walk that reached it
    uint64_t seq;                  // its place on the tape (increasing)
    bool freed;                    // a backward released what it saved
    bool save_failed;
    int ninputs;
    tg_edge *inputs;               // (ninputs,), after ctx, same allocation
    int nsaved;
    tg_tensor *saved[TG_MAX_SAVED];          // detached aliases
    uint64_t saved_version[TG_MAX_SAVED];    // storage versions when saved
    size_t ctx_size;
    max_align_t ctx[];                       // the op's parameters
};

/* A node not yet on the tape: edges to the inputs that need grad. */
tg_node *tg_node_new(const char *name, tg_backward_fn backward,
                     size_t ctx_size, const tg_tensor *const *inputs,
                     int ninputs);
/* Puts n on the tape as the maker of out (out must have no grad_fn). */
void tg_node_attach(tg_node *n, tg_tensor *out);
/* Frees a node that was never attached. NULL-safe. */
void tg_node_discard(tg_node *n);
/* Drops one reference; the node (and whatever only it kept) goes at 0. */
void tg_node_unref(tg_node *n);

#endif
