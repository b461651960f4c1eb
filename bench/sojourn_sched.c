/* SPDX-License-Identifier: MIT */
/*
 * bench/sojourn_sched.c - rp-bench-sojourn's scheduler adapter: one interface (start,
 * submit, finish) over the schedulers under test - the central queue
 * (sojourn_central.c), a routepool pool of two routees with the variant's
 * strategy and stealing (on library A or, for a variant's -b twin, B:
 * sojourn_libs.c), or oneTBB's two-worker arena (peer_tbb.cpp).
 * Each job records the worker that ran it (tl_worker) before it runs.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sojourn.h"

/* One job function per library: a job's context belongs to the copy
 * that runs it. */
static void rp_job_a(rp_job_ctx *ctx, void *arg)
{
    tl_worker = libs[0].job_routee(ctx);
    run_job(arg);
}

static void rp_job_b(rp_job_ctx *ctx, void *arg)
{
    tl_worker = libs[1].job_routee(ctx);
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

static void die_rp(const rp_api *api, const char *what, int rc)
{
    fprintf(stderr, "rp-bench-sojourn: %s: %s (%s)\n", what, api->strerror_(rc), api->errmsg());
    exit(1);
}

void sched_start(sched *s, const config *cfg, enum variant v, job **ring, uint64_t seed)
{
    bool pin = cfg->pin;

    rp_pool_options o;
    const rp_api *api = &libs[variant_is_b(v)];
    int rc;

    if (v == V_NULL)
        v = V_CENTRAL; /* the same scheduler, run again */
    s->v = v;
    s->api = api;
    s->job_fn = variant_is_b(v) ? rp_job_b : rp_job_a;
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
    v = variant_base(v);
    api->options_init(&o);
    o.idle_spin_us = g_idle_spin_us;
    o.name = "soj";
    o.routees = ROUTEES;
    o.steal = v == V_RR_STEAL || v == V_SM_STEAL;
    o.pin_cpus = pin;
    o.strategy = v == V_RANDOM ? api->random(seed)
                 : (v == V_SM || v == V_SM_STEAL) ? api->smallest()
                                                  : api->round_robin();
    if ((rc = api->create(&s->pool, &o)) < 0)
        die_rp(api, "rp_pool_create", rc);
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
    if ((rc = s->api->submit(s->pool, s->job_fn, j)) < 0)
        die_rp(s->api, "rp_pool_submit", rc);
}

sched_counts sched_finish(sched *s)
{
    sched_counts n = {0};
    int rc;

    if (s->v == V_CENTRAL) {
        central_wait_idle(&s->cq);
        central_stop(&s->cq);
        return n;
    }
#ifdef RP_BENCH_HAVE_TBB
    if (s->v == V_TBB) { /* the waiter runs no job: it waits outside the arena */
        peer_tbb_wait(s->tbb);
        peer_tbb_destroy(s->tbb);
        return n;
    }
#endif
    if ((rc = s->api->wait_idle(s->pool, -1)) < 0)
        die_rp(s->api, "rp_pool_wait_idle", rc);
    for (size_t i = 0; i < s->api->size(s->pool); i++) {
        /* Zeroed: a library B built before a field existed leaves it. */
        rp_routee_stats st = {0};
        if (s->api->stats(s->api->routee(s->pool, i), &st) == 0) {
            n.stole += st.stole;
            n.looks += st.looks;
            n.stale_looks += st.stale_looks;
            n.rescues += st.rescues;
            n.age_takes += st.age_takes;
        }
    }
    s->api->destroy(s->pool);
    return n;
}
