/*
 * tests/exercises/grade.h - what the exercise graders share.
 *
 * A grader is a Criterion test file, grade_exNN_<name>.c, built against
 * one implementation of exercise NN: the student's file in
 * examples/exercises/, the reference solution in solutions/, or the
 * deliberately wrong answer in wrong/ (tests/exercises/meson.build).
 *
 * Every call of the student's code goes through EX_CALL (or
 * EX_CALL_RECORDING), which fails the
 * test with a friendly "not implemented yet" when the call reached a stub,
 * and every result through ex_require, which fails with the library's error
 * message when the call returned NULL. So a stub or a failing exercise
 * ends the test with a message, never a crash.
 */
#ifndef TG_GRADE_H
#define TG_GRADE_H

#include "../common.h"
#include "exercises.h"

bool ex_stub_ran(const char **file, const char **fn);
void ex_stub_reset(void);

/* Fails the test when a stub ran since the last check. */
void ex_check_stub(const char *statement);

/* Runs stmt (a statement that calls into the exercise, such as
 * `dx = ex_softmax_backward(y, g)`) with gradients disabled, as a backward
 * runs, and fails the test if it reached a stub. With nothing recorded,
 * an answer that hands the work to the tape (an op on fresh leaves, then
 * tg_backward) fails: the exercises ask for the math. EX_STATEMENT
 * (defined by each grader before including this header) names the
 * statement file in docs/exercises/. */
#define EX_CALL(stmt)                                                       \
    do {                                                                    \
        ex_stub_reset();                                                    \
        tg_no_grad_begin();                                                 \
        stmt;                                                               \
        tg_no_grad_end();                                                   \
        ex_check_stub(EX_STATEMENT);                                        \
    } while (0)

/* EX_CALL with gradients as the caller has them: for the exercises whose
 * code must record on the tape (a custom op, a training loop). */
#define EX_CALL_RECORDING(stmt)                                             \
    do {                                                                    \
        ex_stub_reset();                                                    \
        stmt;                                                               \
        ex_check_stub(EX_STATEMENT);                                        \
    } while (0)

/* Formats a shape as "(2, 3)", "(3,)" or "()" into buf; returns buf. */
const char *ex_shape_text(const int64_t *shape, int ndim, char *buf,
                          size_t size);

/* Fails the test unless t (a result of the exercise, called `what` in the
 * message) is float64 with the given shape. hint_2d, when not NULL, is
 * added to the message when a 1-D result came back 2-D, the usual slip
 * (a reduction that kept its dim). */
void ex_check_shape(const tg_tensor *t, const char *what,
                    const int64_t *shape, int ndim, const char *hint_2d);

/* Fails the test, naming what and the worst element, unless actual is
 * close to expected (tg_test_close, dtypes compared). */
void ex_check_close(const tg_tensor *actual, const tg_tensor *expected,
                    const char *what, double rtol, double atol);

/* Fails the test, with the last error message, when t is NULL; returns t. */
tg_tensor *ex_require(tg_tensor *t, const char *what);

/* ------------------------------------------ a normalisation's backward */

/* Exercises 06 (LayerNorm) and 07 (BatchNorm) ask for the same contract:
 * from (dy, x, weight, mean, rstd), all borrowed, new tensors *dx,
 * *dweight and *dbias; 0, or -1 on error. Their graders share what
 * follows and keep what differs (the forward, the statistics' shapes, the
 * cases) in their own files. */
typedef int ex_norm_backward_fn(const tg_tensor *dy, const tg_tensor *x,
                                const tg_tensor *weight,
                                const tg_tensor *mean, const tg_tensor *rstd,
                                tg_tensor **dx, tg_tensor **dweight,
                                tg_tensor **dbias);

/* The exercise under test: its function, the name messages give it, its
 * statement file in docs/exercises/, and the hint added when a 1-D
 * result came back 2-D. */
typedef struct ex_norm_exercise {
    ex_norm_backward_fn *backward;
    const char *name;
    const char *statement;
    const char *shape_hint;
} ex_norm_exercise;

typedef struct ex_norm_grads {
    tg_tensor *dx, *dw, *db; // (N, C), (C,), (C,)
} ex_norm_grads;

void ex_norm_grads_release(ex_norm_grads *r);

/* Calls the exercise's backward as EX_CALL does; true when it returned 0
 * and three results (*r holds what it returned either way). */
bool ex_norm_call(const ex_norm_exercise *e, const tg_tensor *dy,
                  const tg_tensor *x, const tg_tensor *w,
                  const tg_tensor *mean, const tg_tensor *rstd,
                  ex_norm_grads *r);

/* ex_norm_call, failing the test with a message when it did not work or
 * a result is not float64 of the contract's shape. */
ex_norm_grads ex_norm_backward(const ex_norm_exercise *e, const tg_tensor *dy,
                               const tg_tensor *x, const tg_tensor *w,
                               const tg_tensor *mean, const tg_tensor *rstd);

/* The backward of a tg_function whose forward saved (x, weight, mean,
 * rstd): the exercise's, handing back the gradients of the inputs that
 * need one. */
int ex_norm_function_backward(const ex_norm_exercise *e, tg_ctx *ctx,
                              const tg_tensor *g, tg_tensor **grad_inputs);

/* tg_gradcheck of apply (x, weight, bias) -> y on random float64 inputs of
 * shape (rows, cols), (cols,), (cols,) from seed: y itself, so the full
 * Jacobian is compared (a loss of sum(y) has a zero gradient for x and
 * would pass wrong backwards). */
void ex_norm_gradcheck(const ex_norm_exercise *e, tg_gradcheck_fn apply,
                       int64_t rows, int64_t cols, uint64_t seed);

/* Loads the reference inputs <prefix>_dy, _x, _w, _mean and _rstd, runs
 * the backward and fails the test when a result is one of its arguments
 * or an argument was changed. */
void ex_norm_leaves_inputs_alone(const ex_norm_exercise *e,
                                 const char *prefix);

#endif
