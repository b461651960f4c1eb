/* SPDX-License-Identifier: MIT */
/*
 * tests/trace_workload.c - workloads whose traces test_profile.sh feeds to
 * rp-profile.
 *
 *   imbalanced TRACE  4 routees traced with rp_trace_start().  One key sent
 *                     through a consistent-hash router gets many jobs of
 *                     ~200 us each; keyed jobs are pinned (never stolen),
 *                     so the routee owning the key builds a deep queue
 *                     while light unkeyed jobs (round-robin, stealable) go
 *                     everywhere.  Prints "hot_routee N": the routee the
 *                     first keyed job ran on (rp_job_routee).
 *   balanced TRACE    4 routees, round-robin, uniform jobs (each sleeps
 *                     500 us) submitted faster than the routees run them,
 *                     stealing on: every queue grows and drains alike.
 *   plain             a small mixed workload that never calls the trace
 *                     API: run it with RP_TRACE=path to trace it.
 *
 * Jobs spin on the clock, not on a count, so a job takes its time however
 * fast the CPU is; on a loaded machine the queues only grow deeper, which
 * keeps the checks robust.  Exit status: 0 ok, 1 a routepool call failed,
 * 2 bad command line.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "routepool/routepool.h"

#define ROUTEES 4u
#define HEAVY_US 200u
#define LIGHT_US 5u
#define TICK_US 100u          /* one heavy job (and two light) per tick */
#define IMBALANCED_TICKS 1500u
#define BALANCED_US 500u      /* a uniform job sleeps this long */
#define BALANCED_JOBS 2000u
#define BALANCED_GAP_US 100u  /* 10000 jobs/s into 4 x 2000/s: queues grow */
#define PLAIN_JOBS 3000u

static atomic_int key_owner = -1;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until_ns(int64_t t)
{
    const struct timespec ts = {(time_t)(t / 1000000000), (long)(t % 1000000000)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static void spin_us(unsigned us)
{
    const int64_t end = now_ns() + (int64_t)us * 1000;
    while (now_ns() < end) {
    }
}

static void light_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    spin_us(LIGHT_US);
}

/* Sleeps rather than spins: a routee then drains at the same rate however
 * the OS shares the CPUs among the 4 routee threads and whatever else runs
 * on a loaded test machine.  CPU-bound jobs on more threads than cores
 * drain at the rates the scheduler hands out, and that real imbalance is
 * what rp-profile would (rightly) report. */
static void uniform_job(rp_job_ctx *ctx, void *arg)
{
    const struct timespec ts = {0, (long)BALANCED_US * 1000};
    (void)ctx;
    (void)arg;
    nanosleep(&ts, NULL);
}

/* The first keyed job to run records where the key lives. */
static void heavy_job(rp_job_ctx *ctx, void *arg)
{
    int expected = -1;
    (void)arg;
    atomic_compare_exchange_strong_explicit(&key_owner, &expected, rp_job_routee(ctx),
                                            memory_order_relaxed, memory_order_relaxed);
    spin_us(HEAVY_US);
}

static int check(const char *what, int rc)
{
    if (rc < 0)
        fprintf(stderr, "trace_workload: %s: %s (%s)\n", what, rp_strerror(rc), rp_errmsg());
    return rc;
}

static rp_pool *make_pool(void)
{
    rp_pool_options opts;
    rp_pool *pool = NULL;

    rp_pool_options_init(&opts);
    opts.name = "workload";
    opts.routees = ROUTEES;
    opts.steal = true;
    check("rp_pool_create", rp_pool_create(&pool, &opts));
    return pool;
}

static int start_trace(rp_pool *pool, const char *path)
{
    rp_trace_options topts;

    rp_trace_options_init(&topts);
    topts.job_sample = 16; /* enough slices in a short run */
    return check("rp_trace_start", rp_trace_start(pool, path, &topts));
}

/* Heavy keyed jobs and light unkeyed ones, one tick at a time. */
static int submit_imbalanced(rp_pool *pool, rp_router *ch)
{
    static const char key[] = "hot-key";
    const int64_t t0 = now_ns();

    for (unsigned i = 0; i < IMBALANCED_TICKS; i++) {
        sleep_until_ns(t0 + (int64_t)i * TICK_US * 1000);
        if (check("rp_router_tell_key", rp_router_tell_key(ch, key, sizeof key - 1, heavy_job,
                                                           NULL)) < 0 ||
            check("rp_pool_submit", rp_pool_submit(pool, light_job, NULL)) < 0 ||
            check("rp_pool_submit", rp_pool_submit(pool, light_job, NULL)) < 0)
            return -1;
    }
    return 0;
}

static int imbalanced(const char *path)
{
    rp_pool *pool = make_pool();
    rp_router *ch = NULL;
    rp_router_options ropts;
    int rc = -1;

    if (!pool)
        return 1;
    rp_router_options_init(&ropts);
    ropts.name = "hash";
    ropts.strategy = rp_strategy_consistent_hash(1);
    if (check("rp_router_create", rp_router_create(&ch, pool, &ropts)) == 0 &&
        start_trace(pool, path) == 0 && submit_imbalanced(pool, ch) == 0 &&
        check("rp_pool_wait_idle", rp_pool_wait_idle(pool, 60000)) == 0 &&
        check("rp_trace_stop", rp_trace_stop(pool)) == 0)
        rc = 0;
    rp_router_destroy(ch);
    rp_pool_destroy(pool);
    if (rc == 0)
        printf("hot_routee %d\n", atomic_load(&key_owner));
    return rc == 0 && atomic_load(&key_owner) >= 0 ? 0 : 1;
}

static int submit_paced(rp_pool *pool, rp_job_fn fn, unsigned jobs, unsigned gap_us)
{
    const int64_t t0 = now_ns();

    for (unsigned i = 0; i < jobs; i++) {
        if (gap_us)
            sleep_until_ns(t0 + (int64_t)i * gap_us * 1000);
        if (check("rp_pool_submit", rp_pool_submit(pool, fn, NULL)) < 0)
            return -1;
    }
    return 0;
}

static int balanced(const char *path)
{
    rp_pool *pool = make_pool();
    int rc = -1;

    if (!pool)
        return 1;
    if (start_trace(pool, path) == 0 &&
        submit_paced(pool, uniform_job, BALANCED_JOBS, BALANCED_GAP_US) == 0 &&
        check("rp_pool_wait_idle", rp_pool_wait_idle(pool, 60000)) == 0 &&
        check("rp_trace_stop", rp_trace_stop(pool)) == 0)
        rc = 0;
    rp_pool_destroy(pool);
    return rc == 0 ? 0 : 1;
}

/* Knows nothing of tracing: RP_TRACE does it. */
static int plain(void)
{
    rp_pool *pool = make_pool();
    int rc = -1;

    if (!pool)
        return 1;
    if (submit_paced(pool, light_job, PLAIN_JOBS, 10) == 0 &&
        check("rp_pool_wait_idle", rp_pool_wait_idle(pool, 60000)) == 0)
        rc = 0;
    rp_pool_destroy(pool);
    return rc == 0 ? 0 : 1;
}

int main(int argc, char *argv[])
{
    if (argc == 3 && strcmp(argv[1], "imbalanced") == 0)
        return imbalanced(argv[2]);
    if (argc == 3 && strcmp(argv[1], "balanced") == 0)
        return balanced(argv[2]);
    if (argc == 2 && strcmp(argv[1], "plain") == 0)
        return plain();
    fprintf(stderr, "usage: trace_workload imbalanced TRACE | balanced TRACE | plain\n");
    return 2;
}
