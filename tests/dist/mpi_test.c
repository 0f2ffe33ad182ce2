/*
 * tests/dist/mpi_test.c - the harness of mpi_test.h.
 */
#include "mpi_test.h"

#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tg_process_group *mt_pg;
int mt_rank, mt_size;

static bool failed;
static const char *current;

void mt_fail(const char *file, int line, const char *fmt, ...)
{
    failed = true;
    fprintf(stderr, "[rank %d] %s: %s:%d: ", mt_rank, current, file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  (last error: %s)\n", tg_last_error());
}

bool mt_failed(bool clear)
{
    bool was = failed;
    if (clear)
        failed = false;
    return was;
}

bool mt_first_line_is(const char *first_line)
{
    const char *msg = tg_last_error();
    size_t n = strcspn(msg, "\n");
    return n == strlen(first_line) && strncmp(msg, first_line, n) == 0;
}

double mt_max_abs_diff(const tg_tensor *a, const tg_tensor *b)
{
    if (!a || !b || !tg_same_shape(a, b))
        return INFINITY;
    double *x = malloc((size_t)(a->numel + 1) * sizeof *x);
    double *y = malloc((size_t)(b->numel + 1) * sizeof *y);
    double worst = 0;
    if (tg_to_f64_array(a, x) != 0 || tg_to_f64_array(b, y) != 0)
        worst = INFINITY;
    for (int64_t i = 0; i < a->numel && worst < INFINITY; i++) {
        double d = fabs(x[i] - y[i]);
        worst = isnan(d) ? INFINITY : fmax(worst, d);
    }
    free(x);
    free(y);
    return worst;
}

int mt_main(int argc, char **argv, const mt_case *cases, int ncases)
{
    tg_set_error_handler(tg_error_handler_quiet);
    if (tg_dist_init(&argc, &argv) != 0) {
        printf("Bail out! %s\n", tg_last_error());
        return 1;
    }
    mt_pg = tg_process_group_world();
    if (!mt_pg) {
        printf("Bail out! %s\n", tg_last_error());
        return 1;
    }
    mt_rank = tg_process_group_rank(mt_pg);
    mt_size = tg_process_group_size(mt_pg);
    if (mt_rank == 0)
        printf("1..%d\n", ncases);
    int failures = 0;
    for (int k = 0; k < ncases; k++) {
        current = cases[k].name;
        if (mt_size < cases[k].min_size) {
            if (mt_rank == 0)
                printf("ok %d - %s # SKIP needs %d ranks\n", k + 1,
                       cases[k].name, cases[k].min_size);
            continue;
        }
        failed = false;
        tg_clear_error();
        cases[k].run();
        if (tg_live_tensors() != 0)
            mt_fail(__FILE__, __LINE__, "%lld tensors still alive",
                    (long long)tg_live_tensors());
        int mine = failed, any = 0;
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        failures += any;
        if (mt_rank == 0)
            printf("%s %d - %s (%d ranks)\n", any ? "not ok" : "ok", k + 1,
                   cases[k].name, mt_size);
        fflush(stdout);
    }
    tg_process_group_free(mt_pg);
    tg_dist_finalize();
    return failures ? 1 : 0;
}
