/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_omp.h - OpenMP tasks (libgomp) as a peer of rp-bench-tiny.
 *
 * One round is one `omp parallel` region of submitters + workers threads:
 * threads 0..submitters-1 each create `#pragma omp task`s for their slice
 * of the records, the others (and the submitters once done) run tasks at
 * the region's closing barrier, which returns when every task has run.
 * libgomp keeps the team's threads between regions.
 *
 * CAVEAT, printed with the results: libgomp runs a task undeferred, at
 * once in the creating thread, when more than 64 x threads tasks are
 * pending.  That throttles the submitters and runs part of the jobs with
 * no handoff at all, which flatters the ns/job; peer_omp_round() reports
 * the share of jobs that ran on a submitting thread.
 *
 * Compiled with -fopenmp (this file only); the rest of the benchmark is
 * plain C.
 */
#ifndef RP_BENCH_PEER_OMP_H
#define RP_BENCH_PEER_OMP_H

#include <stddef.h>
#include <stdint.h>

/**
 * Run n jobs fn(base + i * stride), i in 0..n-1.
 * @param submit_ns  receives the time from the start until the last
 *                   submitter created its last task.
 * @param on_submitters  receives how many jobs ran on submitting threads.
 */
void peer_omp_round(void (*fn)(void *rec), char *base, size_t stride, size_t n,
                    int submitters, int workers, int64_t *submit_ns, size_t *on_submitters);

/** The OpenMP version implemented (_OPENMP, yyyymm). */
int peer_omp_version(void);

#endif /* RP_BENCH_PEER_OMP_H */
