/*
 * autograd/anomaly.h - the checks of anomaly detection, for the places that
 * record ops (tape.c's tg_record, function.c's tg_function_apply) and run
 * backwards (tape.c). Not installed; the switch itself is public
 * (tg_set_detect_anomaly in autograd/autograd.h).
 *
 * The switch costs one test of a thread-local byte per op when it is off:
 * tg_anomaly_on() reads it inline, and only the first call of a thread
 * (the byte is still -1) goes to anomaly.c to read TG_DETECT_ANOMALY.
 */
#ifndef TG_AUTOGRAD_ANOMALY_H
#define TG_AUTOGRAD_ANOMALY_H

#include "tape.h"

/* This thread's setting: -1 until first used (then the environment
 * decides), 0 off, 1 on. */
extern _Thread_local signed char tg_anomaly_mode;
/* Settles a -1 from TG_DETECT_ANOMALY; returns whether detection is on. */
bool tg_anomaly_resolve(void);

static inline bool tg_anomaly_on(void)
{
    return tg_anomaly_mode != 0 && tg_anomaly_resolve();
}

/* The first element of t, in C order, that is NaN or +-inf: its flat
 * index, with the element in *value (may be NULL); -1 when every element
 * is finite, which int64 tensors always are. t borrowed. */
int64_t tg_first_nonfinite(const tg_tensor *t, double *value);

/* Checks the output of an op about to be recorded: 0 when finite, else -1
 * with an error naming the op (node_name, and fn when the public function
 * is known, as for tg_function_apply; NULL otherwise), its output, its
 * inputs (NULL entries allowed) and the place it would take on the tape.
 * Arguments borrowed. */
int tg_anomaly_check_forward(const char *fn, const char *node_name,
                             const tg_tensor *out,
                             const tg_tensor *const *inputs, int ninputs);

/* Checks g, the gradient node n's backward gave for its input i: 0 when
 * finite, else -1 with an error naming n, the input, the element, whether
 * n's incoming gradient (n->grad) was already not finite, and n's place on
 * the tape. Arguments borrowed. */
int tg_anomaly_check_backward(const tg_node *n, int i, const tg_tensor *g);

#endif
