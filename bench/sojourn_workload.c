/* SPDX-License-Identifier: MIT */
/*
 * bench/sojourn_workload.c - rp-bench-sojourn's job and workload.
 *
 * A job spins for its calibrated CPU cost (1 us or 100 us), stamps its
 * start and end and the worker that ran it, then submits the arrivals now
 * due (sojourn_arrivals.c).  A workload is one draw of Poisson arrival
 * offsets and job sizes from a seed: the same draw is replayed through
 * every scheduler (common random numbers).  The buffers every run uses are
 * allocated and touched once, before anything is timed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sojourn.h"

/* ---- the job ---- */

_Thread_local int tl_worker;

/* The job's CPU work alone (also used to check the calibration). */
void spin_job(job *j)
{
    j->start = bench_now_ns();
    j->sink = bench_spin(j->iters, (uint64_t)j->start);
    j->done = bench_now_ns();
}

/* A job as the schedulers run it: its work, then the arrivals now due. */
void run_job(job *j)
{
    j->worker = tl_worker;
    spin_job(j);
    feed_from_routee(j->done);
}

/* ---- workload ---- */

/* Random numbers: bench_splitmix64() and bench_unit() (common.h). */

void workload_draw(workload *w, double load, uint64_t seed)
{
    double rate_per_ns = load * ROUTEES / (MEAN_US * 1e3), t = 0;
    uint64_t x = seed;

    for (size_t i = 0; i < w->n; i++) {
        t += -log(bench_unit(&x)) / rate_per_ns;
        w->offset[i] = (int64_t)t;
        w->is_long[i] = bench_unit(&x) <= LONG_SHARE;
    }
}

void alloc_buffers(buffers *b, workload *w, size_t n)
{
    b->jobs = aligned_alloc(64, n * sizeof *b->jobs);
    b->queue = malloc(n * sizeof *b->queue);
    b->late = malloc(n * sizeof *b->late);
    b->by_routee = malloc(n);
    b->idle_wait = malloc(n * sizeof *b->idle_wait);
    b->scratch = malloc(n * sizeof *b->scratch);
    for (size_t k = 0; k < ROUTEES; k++)
        b->ring[k] = malloc(n * sizeof *b->ring[k]);
    b->order = malloc(n * sizeof *b->order);
    b->events = malloc(3 * n * sizeof *b->events);
    b->submit_ns = malloc(n * sizeof *b->submit_ns);
    w->n = n;
    w->offset = malloc(n * sizeof *w->offset);
    w->is_long = malloc(n);
    if (!b->jobs || !b->queue || !b->late || !b->by_routee || !b->idle_wait || !b->scratch || !b->ring[0] || !b->ring[1] ||
        !b->order || !b->events || !b->submit_ns || !w->offset || !w->is_long) {
        fprintf(stderr, "rp-bench-sojourn: out of memory for %zu jobs\n", n);
        exit(1);
    }
    /* Touch every page now, not during the first timed run. */
    memset(b->jobs, 0, n * sizeof *b->jobs);
    memset(b->queue, 0, n * sizeof *b->queue);
    memset(b->late, 0, n * sizeof *b->late);
    memset(b->by_routee, 0, n);
    memset(b->idle_wait, 0, n * sizeof *b->idle_wait);
    memset(b->scratch, 0, n * sizeof *b->scratch);
    memset(b->events, 0, 3 * n * sizeof *b->events);
    memset(b->submit_ns, 0, n * sizeof *b->submit_ns);
}

/* Median measured duration of a job of `iters` iterations, in us. */
double measure_job_us(uint64_t iters, int count)
{
    double d[512];
    job j = {.iters = iters};

    if (count > 512)
        count = 512;
    for (int i = 0; i < count; i++) {
        spin_job(&j);
        d[i] = (double)(j.done - j.start) / 1e3;
    }
    return bench_median(d, (size_t)count);
}
