/* SPDX-License-Identifier: MIT */
/*
 * stress_threads.c - the routee threads' start and stop hooks racing
 * submits and every way a pool ends, as a plain program (TSan runs it;
 * issue 17).
 *
 * Each of RP_STRESS_ROUNDS / 500 rounds (default 2000) makes a pool of 3
 * routees whose start hook sets a thread-local, tells a job to its own
 * routee and submits one through the pool while the main thread submits
 * too; the stop hook submits once more (accepted or RP_ESHUTDOWN).  The
 * round then ends by a drain shutdown, an abort shutdown, a destroy
 * without shutdown, or a stopped routee and a destroy.  Invariants,
 * checked exactly: each hook ran once per routee, both on the same thread;
 * every job saw the thread-local its routee's start hook set; every
 * accepted job ran or was handed back exactly once.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "routepool/routepool.h"

#define ROUTEES 3
#define MAIN_JOBS 50

typedef struct round_state {
    atomic_int starts[ROUTEES], stops[ROUTEES];
    pthread_t start_thr[ROUTEES], stop_thr[ROUTEES]; /* read after the join */
    atomic_int accepted, ran, handed_back, bad;
} round_state;

/* Set by the start hook: what a job of this thread must see. */
static _Thread_local int tl_routee = -1;

static void job(rp_job_ctx *ctx, void *arg)
{
    round_state *s = arg;

    if (tl_routee != rp_job_routee(ctx))
        atomic_fetch_add_explicit(&s->bad, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->ran, 1, memory_order_relaxed);
}

static void handed_back(void *arg, int reason, void *user)
{
    (void)user;
    (void)reason;
    atomic_fetch_add_explicit(&((round_state *)arg)->handed_back, 1, memory_order_relaxed);
}

/* A submit: 0 is counted; from a hook RP_ESHUTDOWN (the pool was shut
 * down meanwhile) and RP_ESTOPPED (a tell to a stopped routee) are fine;
 * anything else is bad. */
static void hook_submit(round_state *s, int rc, bool from_hook)
{
    if (rc == 0)
        atomic_fetch_add_explicit(&s->accepted, 1, memory_order_relaxed);
    else if (!from_hook || (rc != RP_ESHUTDOWN && rc != RP_ESTOPPED))
        atomic_fetch_add_explicit(&s->bad, 1, memory_order_relaxed);
}

static void on_start(rp_pool *pool, int routee, void *user)
{
    round_state *s = user;

    tl_routee = routee;
    s->start_thr[routee] = pthread_self();
    atomic_fetch_add_explicit(&s->starts[routee], 1, memory_order_relaxed);
    /* The main thread may shut the pool down before this runs. */
    hook_submit(s, rp_routee_tell(rp_pool_routee(pool, (size_t)routee), job, s), true);
    hook_submit(s, rp_pool_submit(pool, job, s), true);
}

static void on_stop(rp_pool *pool, int routee, void *user)
{
    round_state *s = user;

    if (tl_routee != routee)
        atomic_fetch_add_explicit(&s->bad, 1, memory_order_relaxed);
    s->stop_thr[routee] = pthread_self();
    atomic_fetch_add_explicit(&s->stops[routee], 1, memory_order_relaxed);
    hook_submit(s, rp_pool_submit(pool, job, s), true);
}

static rp_pool *make(round_state *s)
{
    rp_pool_options o;
    rp_pool *p = NULL;

    rp_pool_options_init(&o);
    o.name = "sth";
    o.routees = ROUTEES;
    o.on_undelivered = handed_back;
    o.on_thread_start = on_start;
    o.on_thread_stop = on_stop;
    o.thread_user = s;
    if (rp_pool_create(&p, &o) != 0) {
        fprintf(stderr, "stress_threads: rp_pool_create: %s\n", rp_errmsg());
        exit(1);
    }
    return p;
}

/* End the pool one of four ways. */
static void finish(rp_pool *p, long round)
{
    switch (round % 4) {
    case 0:
        rp_pool_shutdown(p, RP_SHUTDOWN_DRAIN);
        break;
    case 1:
        rp_pool_shutdown(p, RP_SHUTDOWN_ABORT);
        break;
    case 3:
        rp_routee_stop(rp_pool_routee(p, 1));
        break;
    default:
        break;
    }
    rp_pool_destroy(p);
}

static int check(round_state *s, long round)
{
    int ran = atomic_load(&s->ran), back = atomic_load(&s->handed_back);
    int accepted = atomic_load(&s->accepted);

    for (int i = 0; i < ROUTEES; i++) {
        if (atomic_load(&s->starts[i]) != 1 || atomic_load(&s->stops[i]) != 1 ||
            !pthread_equal(s->start_thr[i], s->stop_thr[i])) {
            fprintf(stderr, "stress_threads: round %ld routee %d: %d starts, %d stops\n", round,
                    i, atomic_load(&s->starts[i]), atomic_load(&s->stops[i]));
            return 1;
        }
    }
    if (ran + back != accepted || atomic_load(&s->bad)) {
        fprintf(stderr, "stress_threads: round %ld: %d accepted, %d ran, %d handed back, %d bad\n",
                round, accepted, ran, back, atomic_load(&s->bad));
        return 1;
    }
    return 0;
}

int main(void)
{
    const char *env = getenv("RP_STRESS_ROUNDS");
    long rounds = (env ? atol(env) : 1000000) / 500;

    for (long i = 0; i < rounds; i++) {
        round_state *s = calloc(1, sizeof *s);
        rp_pool *p;

        if (!s)
            return 1;
        p = make(s);
        for (int k = 0; k < MAIN_JOBS; k++)
            hook_submit(s, rp_pool_submit(p, job, s), false);
        finish(p, i);
        if (check(s, i))
            return 1;
        free(s);
    }
    printf("stress_threads: %ld rounds, every hook once per routee, every job accounted\n",
           rounds);
    return 0;
}
