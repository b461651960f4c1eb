/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_omp.c - OpenMP tasks as a peer of rp-bench-tiny (see
 * peer_omp.h for the round and the throttling caveat).
 *
 * Counting the jobs that ran on a submitting thread costs one thread-local
 * read (omp_get_thread_num) per job and a write to that thread's own cache
 * line, so the count does not add sharing between threads.
 */
#include "peer_omp.h"

#include <omp.h>

#include "common.h"

#define MAXT 16

typedef struct counter {
    _Alignas(64) size_t n;
} counter;

static counter ran_on[MAXT];

static void job(void (*fn)(void *rec), void *rec, int submitters)
{
    int me = omp_get_thread_num();

    fn(rec);
    if (me < submitters)
        ran_on[me].n++;
}

void peer_omp_round(void (*fn)(void *rec), char *base, size_t stride, size_t n,
                    int submitters, int workers, int64_t *submit_ns, size_t *on_submitters)
{
    int64_t t0 = bench_now_ns(), last = t0;

    for (int k = 0; k < MAXT; k++)
        ran_on[k].n = 0;
#pragma omp parallel num_threads(submitters + workers) shared(last)
    {
        int me = omp_get_thread_num();
        if (me < submitters) {
            size_t lo = n * (size_t)me / (size_t)submitters;
            size_t hi = n * (size_t)(me + 1) / (size_t)submitters;
            int64_t end;
            for (size_t i = lo; i < hi; i++) {
#pragma omp task firstprivate(i)
                job(fn, base + i * stride, submitters);
            }
            end = bench_now_ns();
#pragma omp critical
            last = end > last ? end : last;
        }
    } /* the implicit barrier: every task has run */
    *submit_ns = last - t0;
    *on_submitters = 0;
    for (int k = 0; k < submitters && k < MAXT; k++)
        *on_submitters += ran_on[k].n;
}

int peer_omp_version(void)
{
    return _OPENMP;
}
