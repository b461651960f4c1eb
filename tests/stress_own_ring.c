/* SPDX-License-Identifier: MIT */
/*
 * stress_own_ring.c - jobs that tell their own routee (the owner ring,
 * lib/mailbox.c) racing thieves and an outside submitter, as a plain
 * program (TSan runs it; Criterion cannot run under TSan).
 *
 * RP_STRESS_JOBS jobs (default 1,000,000) form a binary tree: job i tells
 * jobs 2i+1 and 2i+2 to its own routee (a custom strategy that names the
 * calling routee), so the rings fill, spill into the lanes and are
 * stolen from by idle routees; one job in 64 spins 1-20 us to build
 * backlogs.  Meanwhile an outside thread submits as many leaf jobs
 * round-robin.  Then the same with the smallest-mailbox strategy, whose
 * ties from a routee go to that routee.  Checks, each time: every job
 * runs exactly once; the routees' run totals and enqueued totals equal
 * the jobs submitted; stole totals equal stolen-from totals.  Exit status
 * 0 on success, 1 with a message.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "routepool/routepool.h"

#define ROUTEES 4

typedef struct job {
    atomic_int runs;
} job;

static long tree_jobs;
static job *tree, *leaves;
static rp_pool *pool;
static _Thread_local int tl_self = -1;

/* The calling routee inside a job, else round-robin. */
static int self_or_rr(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                      size_t *out)
{
    (void)user, (void)routees;
    out[0] = tl_self >= 0 ? (size_t)tl_self % n : (size_t)(st->message_index % n);
    return 1;
}

static void spin_ns(long ns)
{
    struct timespec a, b;

    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static void fail(const char *what)
{
    fprintf(stderr, "stress_own_ring: %s: %s\n", what, rp_errmsg());
    exit(1);
}

static void leaf_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_fetch_add_explicit(&((job *)arg)->runs, 1, memory_order_relaxed);
}

static void tree_job(rp_job_ctx *ctx, void *arg)
{
    long i = (job *)arg - tree;
    uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull;

    atomic_fetch_add_explicit(&tree[i].runs, 1, memory_order_relaxed);
    if ((h >> 58) == 0)
        spin_ns(1000 + (long)((h >> 20) % 19000));
    tl_self = rp_job_routee(ctx);
    for (long c = 2 * i + 1; c <= 2 * i + 2 && c < tree_jobs; c++)
        if (rp_pool_submit(pool, tree_job, &tree[c]) != 0)
            fail("a tell from a job");
    tl_self = -1;
}

static void *outside(void *p)
{
    (void)p;
    for (long i = 0; i < tree_jobs; i++)
        if (rp_pool_submit(pool, leaf_job, &leaves[i]) != 0)
            fail("an outside submit");
    return NULL;
}

static int run_phase(const char *name, rp_strategy strategy)
{
    rp_pool_options o;
    pthread_t th;
    uint64_t stole = 0, stolen_from = 0, ran = 0, enqueued = 0;
    long bad = 0;

    for (long i = 0; i < tree_jobs; i++) {
        atomic_store(&tree[i].runs, 0);
        atomic_store(&leaves[i].runs, 0);
    }
    rp_pool_options_init(&o);
    o.routees = ROUTEES;
    o.name = "ownring";
    o.strategy = strategy;
    if (rp_pool_create(&pool, &o) != 0)
        fail("rp_pool_create");
    if (pthread_create(&th, NULL, outside, NULL) != 0)
        return 1;
    if (rp_pool_submit(pool, tree_job, &tree[0]) != 0)
        fail("the root");
    pthread_join(th, NULL);
    if (rp_pool_wait_idle(pool, 300000) != 0)
        fail("rp_pool_wait_idle");
    for (long i = 0; i < tree_jobs; i++) {
        if (atomic_load(&tree[i].runs) != 1 || atomic_load(&leaves[i].runs) != 1) {
            if (bad++ < 5)
                fprintf(stderr, "%s: job %ld ran %d times (tree), %d times (leaf)\n", name, i,
                        atomic_load(&tree[i].runs), atomic_load(&leaves[i].runs));
        }
    }
    for (unsigned r = 0; r < ROUTEES; r++) {
        rp_routee_stats st;

        if (rp_routee_stats_get(rp_pool_routee(pool, r), &st) != 0)
            fail("rp_routee_stats_get");
        stole += st.stole;
        stolen_from += st.stolen_from;
        ran += st.run;
        enqueued += st.enqueued;
    }
    printf("stress_own_ring %s: %ld tree + %ld leaf jobs, %llu stolen\n", name, tree_jobs,
           tree_jobs, (unsigned long long)stole);
    rp_pool_destroy(pool);
    if (bad) {
        fprintf(stderr, "%s: %ld jobs did not run exactly once\n", name, bad);
        return 1;
    }
    if (ran != 2 * (uint64_t)tree_jobs || enqueued != 2 * (uint64_t)tree_jobs ||
        stole != stolen_from) {
        fprintf(stderr, "%s: totals: run %llu, enqueued %llu (want %ld each), stole %llu, "
                        "stolen from %llu\n",
                name, (unsigned long long)ran, (unsigned long long)enqueued, 2 * tree_jobs,
                (unsigned long long)stole, (unsigned long long)stolen_from);
        return 1;
    }
    return 0;
}

int main(void)
{
    const char *env = getenv("RP_STRESS_JOBS");
    int rc;

    tree_jobs = env ? atol(env) : 1000000;
    if (tree_jobs < 1)
        tree_jobs = 1;
    tree = calloc((size_t)tree_jobs, sizeof *tree);
    leaves = calloc((size_t)tree_jobs, sizeof *leaves);
    if (!tree || !leaves)
        return 1;
    rc = run_phase("self", rp_strategy_custom(self_or_rr, NULL));
    if (rc == 0)
        rc = run_phase("smallest-mailbox", rp_strategy_smallest_mailbox());
    free(tree);
    free(leaves);
    return rc;
}
