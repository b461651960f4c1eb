/* SPDX-License-Identifier: MIT */
/*
 * test_steal.c - work stealing: idle routees take stealable work queued
 * behind a busy one, and never touch pinned work.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "routepool/routepool.h"

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
    atomic_int entered;
} gate;

static gate g;

static void gate_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    gate *gt = arg;
    atomic_fetch_add(&gt->entered, 1);
    pthread_mutex_lock(&gt->mu);
    while (!gt->open)
        pthread_cond_wait(&gt->cv, &gt->mu);
    pthread_mutex_unlock(&gt->mu);
}

static void gate_setup(void)
{
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    g.open = false;
    atomic_init(&g.entered, 0);
}

static void gate_open_now(void)
{
    pthread_mutex_lock(&g.mu);
    g.open = true;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
}

static int64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool wait_count(atomic_int *c, int n, int timeout_ms)
{
    int64_t end = ms_now() + timeout_ms;
    while (atomic_load(c) < n) {
        if (ms_now() > end)
            return false;
        usleep(1000);
    }
    return true;
}

/* Every job records where it ran and in what order. */
#define NJOBS 100
static atomic_int ran;
static int ran_on[NJOBS];
static int order[NJOBS];
static atomic_int order_next;

static void record_job(rp_job_ctx *ctx, void *arg)
{
    int i = (int)(intptr_t)arg;
    ran_on[i] = rp_job_routee(ctx);
    order[atomic_fetch_add(&order_next, 1)] = i;
    atomic_fetch_add(&ran, 1);
}

/* A custom strategy that sends every job to routee 0, unpinned. */
static int to_zero(void *user, rp_route_state *st, rp_routee *const *routees,
                   size_t n, size_t *out)
{
    (void)user, (void)st, (void)routees, (void)n;
    out[0] = 0;
    return 1;
}

static rp_pool *make(unsigned routees, bool steal, rp_strategy s)
{
    rp_pool_options o;
    rp_pool *pool;

    rp_pool_options_init(&o);
    o.routees = routees;
    o.name = "steal";
    o.steal = steal;
    o.strategy = s;
    cr_assert_eq(rp_pool_create(&pool, &o), 0, "%s", rp_errmsg());
    return pool;
}

static void block_routee0(rp_pool *pool)
{
    gate_setup();
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 0), gate_job, &g), 0);
    cr_assert(wait_count(&g.entered, 1, 5000), "gate job never started");
}

static void reset(void)
{
    atomic_init(&ran, 0);
    atomic_init(&order_next, 0);
    memset(ran_on, -1, sizeof ran_on);
}

Test(steal, stealable_jobs_behind_blocked_routee_all_complete_before_gate_opens, .timeout = 30)
{
    rp_pool *pool = make(4, true, rp_strategy_custom(to_zero, NULL));
    rp_routee_stats st0, st;
    uint64_t stole = 0, stolen_from;

    reset();
    block_routee0(pool);
    for (int i = 0; i < NJOBS; i++)
        cr_assert_eq(rp_pool_submit(pool, record_job, (void *)(intptr_t)i), 0);
    cr_assert(wait_count(&ran, NJOBS, 10000), "only %d of %d ran while the gate was closed",
              atomic_load(&ran), NJOBS);
    for (int i = 0; i < NJOBS; i++)
        cr_expect_neq(ran_on[i], 0, "job %d ran on the blocked routee", i);
    /* Every job left routee 0 by a steal; a thief may be robbed in turn
     * of what it gave back (a grown record beyond its share goes on its
     * own lane: lib/steal.c), so the totals, not the thieves' zeros,
     * must agree. */
    rp_routee_stats_get(rp_pool_routee(pool, 0), &st0);
    cr_expect_eq(st0.stole, 0, "the blocked routee stole");
    stolen_from = st0.stolen_from;
    for (size_t r = 1; r < 4; r++) {
        rp_routee_stats_get(rp_pool_routee(pool, r), &st);
        stole += st.stole;
        stolen_from += st.stolen_from;
    }
    cr_expect_eq(st0.stolen_from, NJOBS);
    cr_expect_eq(stole, stolen_from, "stole totals must equal stolen-from totals");
    cr_expect_eq(rp_routee_depth(rp_pool_routee(pool, 0)), 0, "depth stays truthful");
    gate_open_now();
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0);
    rp_pool_destroy(pool);
}

static const char key[] = "user-42";

Test(steal, keyed_jobs_wait_for_their_routee_and_run_in_order, .timeout = 30)
{
    rp_pool *pool = make(4, true, rp_strategy_consistent_hash(7));
    rp_router *rt = rp_pool_router(pool);
    int owner;

    reset();
    /* Find the key's owner with a first keyed job, then block it. */
    cr_assert_eq(rp_router_tell_key(rt, key, sizeof key, record_job, (void *)(intptr_t)0), 0);
    cr_assert_eq(rp_pool_wait_idle(pool, 5000), 0);
    owner = ran_on[0];
    reset();
    gate_setup();
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, (size_t)owner), gate_job, &g), 0);
    cr_assert(wait_count(&g.entered, 1, 5000));
    for (int i = 0; i < NJOBS; i++)
        cr_assert_eq(rp_router_tell_key(rt, key, sizeof key, record_job, (void *)(intptr_t)i), 0);
    usleep(300 * 1000);
    cr_expect_eq(atomic_load(&ran), 0, "a pinned keyed job ran while its routee was blocked");
    gate_open_now();
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0);
    cr_assert_eq(atomic_load(&ran), NJOBS);
    for (int i = 0; i < NJOBS; i++) {
        cr_expect_eq(order[i], i, "keyed job %d ran at position %d", order[i], i);
        cr_expect_eq(ran_on[i], owner);
    }
    rp_pool_destroy(pool);
}

static atomic_int per_routee[8];

static void count_where(rp_job_ctx *ctx, void *arg)
{
    (void)arg;
    atomic_fetch_add(&per_routee[rp_job_routee(ctx)], 1);
    atomic_fetch_add(&ran, 1);
}

Test(steal, broadcast_copies_and_told_jobs_are_never_stolen, .timeout = 30)
{
    rp_pool *pool = make(4, true, rp_strategy_round_robin());
    rp_routee_stats st;

    reset();
    for (int i = 0; i < 8; i++)
        atomic_init(&per_routee[i], 0);
    block_routee0(pool);
    for (int i = 0; i < 50; i++) {
        cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 0), count_where, NULL), 0);
        cr_assert_eq(rp_router_broadcast(rp_pool_router(pool), count_where, NULL), 0);
    }
    cr_assert(wait_count(&ran, 150, 10000), "the three free routees did not run their copies");
    usleep(200 * 1000);
    cr_expect_eq(atomic_load(&per_routee[0]), 0, "pinned work of the blocked routee ran elsewhere");
    for (int r = 1; r < 4; r++)
        cr_expect_eq(atomic_load(&per_routee[r]), 50, "routee %d ran %d copies", r,
                     atomic_load(&per_routee[r]));
    rp_routee_stats_get(rp_pool_routee(pool, 0), &st);
    cr_expect_eq(st.stolen_from, 0);
    cr_expect_eq(rp_routee_depth(rp_pool_routee(pool, 0)), 100);
    gate_open_now();
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0);
    cr_expect_eq(atomic_load(&per_routee[0]), 100);
    rp_pool_destroy(pool);
}

Test(steal, stealing_off_steals_nothing, .timeout = 30)
{
    rp_pool *pool = make(4, false, rp_strategy_custom(to_zero, NULL));
    rp_routee_stats st;

    reset();
    block_routee0(pool);
    for (int i = 0; i < NJOBS; i++)
        cr_assert_eq(rp_pool_submit(pool, record_job, (void *)(intptr_t)i), 0);
    usleep(300 * 1000);
    cr_expect_eq(atomic_load(&ran), 0, "a job was stolen with stealing off");
    gate_open_now();
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0);
    cr_assert_eq(atomic_load(&ran), NJOBS);
    for (size_t r = 0; r < 4; r++) {
        rp_routee_stats_get(rp_pool_routee(pool, r), &st);
        cr_expect_eq(st.stole, 0);
        cr_expect_eq(st.stolen_from, 0);
    }
    for (int i = 0; i < NJOBS; i++)
        cr_expect_eq(ran_on[i], 0);
    rp_pool_destroy(pool);
}

static atomic_int undelivered;
static atomic_int undelivered_stopped;

static void on_undelivered(void *arg, int reason, void *user)
{
    (void)arg, (void)user;
    atomic_fetch_add(&undelivered, 1);
    if (reason == RP_ESTOPPED)
        atomic_fetch_add(&undelivered_stopped, 1);
}

Test(steal, stopped_routee_reroutes_stealable_jobs_and_hands_back_pinned_ones, .timeout = 30)
{
    rp_pool_options o;
    rp_pool *pool;
    rp_routee_stats st;

    reset();
    atomic_init(&undelivered, 0);
    atomic_init(&undelivered_stopped, 0);
    rp_pool_options_init(&o);
    o.routees = 2;
    o.strategy = rp_strategy_custom(to_zero, NULL);
    o.on_undelivered = on_undelivered;
    cr_assert_eq(rp_pool_create(&pool, &o), 0);
    /* Block both routees so nothing is stolen before the stop. */
    gate_setup();
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 0), gate_job, &g), 0);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 1), gate_job, &g), 0);
    cr_assert(wait_count(&g.entered, 2, 5000));
    for (int i = 0; i < 30; i++)
        cr_assert_eq(rp_pool_submit(pool, record_job, (void *)(intptr_t)i), 0);
    for (int i = 30; i < 40; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 0), record_job, (void *)(intptr_t)i), 0);
    /* Whatever routee 1 stole before blocking is already its own. */
    cr_assert_eq(rp_routee_stop(rp_pool_routee(pool, 0)), 0);
    gate_open_now();
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0);
    cr_expect_eq(atomic_load(&ran), 30, "every stealable job runs on the live routee");
    cr_expect_eq(atomic_load(&undelivered_stopped), 10, "pinned jobs come back RP_ESTOPPED");
    cr_expect_eq(atomic_load(&undelivered), 10);
    for (int i = 0; i < 30; i++)
        cr_expect_eq(ran_on[i], 1);
    rp_routee_stats_get(rp_pool_routee(pool, 0), &st);
    cr_expect_eq(st.rerouted + st.stolen_from, 30);
    rp_pool_destroy(pool);
}

static atomic_int slept;

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void sleep_50ms(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    nap_ms(50);
    atomic_fetch_add(&slept, 1);
}

/* Issue 3: a thief that finds more backlog after its steal wakes the next
 * one.  40 slow jobs land behind a blocked routee in one burst; the
 * producer wakes one thief.  Within 150 ms - less than the 8 x 50 ms the
 * first thief's batch takes - both other routees must have stolen too.
 * (A weak check of the hand-off itself: when the producer is slower than
 * the first thief's wake-up, its own later submits wake the others.) */
Test(steal, a_woken_thief_hands_the_search_on_to_the_next_sleeper, .timeout = 30)
{
    rp_pool *pool = make(4, true, rp_strategy_custom(to_zero, NULL));

    atomic_init(&slept, 0);
    block_routee0(pool);
    nap_ms(20); /* every other routee asleep */
    for (int i = 0; i < 40; i++)
        cr_assert_eq(rp_pool_submit(pool, sleep_50ms, NULL), 0);
    nap_ms(150);
    for (size_t r = 1; r < 4; r++) {
        rp_routee_stats st;
        rp_routee_stats_get(rp_pool_routee(pool, r), &st);
        cr_expect_gt(st.stole, 0, "routee %zu was never woken to steal", r);
    }
    gate_open_now();
    cr_assert_eq(rp_pool_wait_idle(pool, 20000), 0);
    cr_assert_eq(atomic_load(&slept), 40);
    rp_pool_destroy(pool);
}
