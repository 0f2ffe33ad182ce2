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

#endif
