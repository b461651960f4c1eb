/* SPDX-License-Identifier: MIT */
/*
 * bench/sojourn_sched.c - rp-bench-sojourn's scheduler adapter: one interface (start,
 * submit, finish) over the schedulers under test - the central queue
 * (sojourn_central.c), a routepool pool of two routees with the variant's
 * strategy and stealing, or oneTBB's two-worker arena (peer_tbb.cpp).
 * Each job records the worker that ran it (tl_worker) before it runs.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sojourn.h"

static void rp_job(rp_job_ctx *ctx, void *arg)
{
    tl_worker = rp_job_routee(ctx);
    run_job(arg);
}

#ifdef RP_BENCH_HAVE_TBB
static void tbb_job(void *arg)
{
    tl_worker = peer_tbb_thread_index(); /* worker slots 0..ROUTEES-1: no reserved slot */
    run_job(arg);
}

/* A two-worker arena, worker i pinned to CPU i as the routees (--no-pin: not). */
static void tbb_start(sched *s, bool pin)
{
    int cpus[ROUTEES];

    for (unsigned i = 0; i < ROUTEES; i++)
        cpus[i] = bench_nth_cpu((int)i);
    if (peer_tbb_create(&s->tbb, (int)ROUTEES, 0, pin ? cpus : NULL) != 0) {
        fprintf(stderr, "rp-bench-sojourn: cannot create the oneTBB arena\n");
        exit(1);
    }
}
#endif

static void die_rp(const char *what, int rc)
{
    fprintf(stderr, "rp-bench-sojourn: %s: %s (%s)\n", what, rp_strerror(rc), rp_errmsg());
    exit(1);
}

void sched_start(sched *s, const config *cfg, enum variant v, job **ring, uint64_t seed)
{
    bool pin = cfg->pin;

    rp_pool_options o;
    int rc;

    s->v = v;
    s->pool = NULL;
    if (v == V_CENTRAL) {
        if (central_start(&s->cq, ring, pin, (central_wake)cfg->central_wake) != 0) {
            fprintf(stderr, "rp-bench-sojourn: pthread_create failed\n");
            exit(1);
        }
        return;
    }
#ifdef RP_BENCH_HAVE_TBB
    if (v == V_TBB) {
        tbb_start(s, pin);
        return;
    }
#endif
    rp_pool_options_init(&o);
    o.idle_spin_us = g_idle_spin_us;
    o.name = "soj";
    o.routees = ROUTEES;
    o.steal = v == V_RR_STEAL || v == V_SM_STEAL;
    o.pin_cpus = pin;
    o.strategy = v == V_RANDOM ? rp_strategy_random(seed)
                 : (v == V_SM || v == V_SM_STEAL) ? rp_strategy_smallest_mailbox()
                                                  : rp_strategy_round_robin();
    if ((rc = rp_pool_create(&s->pool, &o)) < 0)
        die_rp("rp_pool_create", rc);
}

void sched_submit(sched *s, job *j)
{
    int rc;

    if (s->v == V_CENTRAL) {
        central_submit(&s->cq, j);
        return;
    }
#ifdef RP_BENCH_HAVE_TBB
    if (s->v == V_TBB) {
        if (peer_tbb_run(s->tbb, tbb_job, j) != 0) {
            fprintf(stderr, "rp-bench-sojourn: oneTBB could not take a job\n");
            exit(1);
        }
        return;
    }
#endif
    if ((rc = rp_pool_submit(s->pool, rp_job, j)) < 0)
        die_rp("rp_pool_submit", rc);
}

uint64_t sched_finish(sched *s)
{
    uint64_t stole = 0;
    int rc;

    if (s->v == V_CENTRAL) {
        central_wait_idle(&s->cq);
        central_stop(&s->cq);
        return 0;
    }
#ifdef RP_BENCH_HAVE_TBB
    if (s->v == V_TBB) { /* the waiter runs no job: it waits outside the arena */
        peer_tbb_wait(s->tbb);
        peer_tbb_destroy(s->tbb);
        return 0;
    }
#endif
    if ((rc = rp_pool_wait_idle(s->pool, -1)) < 0)
        die_rp("rp_pool_wait_idle", rc);
    for (size_t i = 0; i < rp_pool_size(s->pool); i++) {
        rp_routee_stats st;
        if (rp_routee_stats_get(rp_pool_routee(s->pool, i), &st) == 0)
            stole += st.stole;
    }
    rp_pool_destroy(s->pool);
    return stole;
}
