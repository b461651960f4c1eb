/* SPDX-License-Identifier: MIT */
/*
 * tests/test_rescue.c - the rescue (rp__steal_rescue in lib/steal.c): a
 * routee busy with work of its own takes the queued work of a routee that
 * makes no progress, which a thief (idle by definition) would never see.
 * Linked with the static library: the watch fields are private.
 *
 * Routee 0 of a two-routee pool is blocked in a gate with stealable jobs
 * queued behind it.  The first test keeps routee 1 busy with a chain of
 * pinned jobs, so that only the rescue can move those jobs; the others
 * block routee 1 too and make the rescue's decisions from the test
 * thread, standing in for routee 1 (whose owner-only fields it does not
 * touch while blocked: the gates order the accesses).
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include "common.h"
#include "clock.h"
#include "pool_record.h"
#include "routee_record.h"
#include "steal.h"
#include "steal_fixture.h"

TestSuite(rescue, .fini = rp_leak_check);

static gate g0, g1;
static atomic_int chained;
static atomic_bool chain_stop;

/* Routee 1's own work: a job that queues the next one on its routee
 * (pinned: never stolen) before it returns, until chain_stop. */
static void chain_job(rp_job_ctx *ctx, void *arg)
{
    rp_routee *self = arg;
    int64_t end = rp__now_ns() + 2000;

    atomic_fetch_add(&chained, 1);
    while (rp__now_ns() < end)
        ;
    if (!atomic_load(&chain_stop))
        cr_assert_eq(rp_routee_tell(self, chain_job, self), 0);
    (void)ctx;
}

static rp_pool *two_routees(void)
{
    rp_pool_options o;
    rp_pool *pool;

    rp_pool_options_init(&o);
    o.routees = 2;
    o.name = "rescue";
    o.steal = true;
    o.idle_spin_us = 0;
    o.strategy = rp_strategy_custom(to_zero, NULL);
    o.metrics = false; /* no sampled tell: records hold one function each */
    cr_assert_eq(rp_pool_create(&pool, &o), 0, "%s", rp_errmsg());
    gate_init(&g0);
    gate_init(&g1);
    atomic_store(&ran, 0);
    atomic_store(&ran_on_1, 0);
    atomic_store(&chained, 0);
    atomic_store(&chain_stop, false);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 0), gate_job, &g0), 0);
    cr_assert(gate_wait_entered(&g0, 1, 5000), "routee 0 never reached its gate");
    return pool;
}

/* n stealable jobs queued behind routee 0, one record each. */
static void queue_behind_0(rp_pool *pool, int n)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(rp_pool_submit(pool, i % 2 ? count_job_too : count_job, NULL), 0);
}

Test(rescue, a_busy_routee_takes_the_queue_of_a_routee_stuck_in_a_job)
{
    rp_pool *pool = two_routees();
    rp_routee *r1 = rp_pool_routee(pool, 1);

    uint64_t sleeps;

    cr_assert_eq(rp_routee_tell(r1, chain_job, r1), 0);
    cr_assert(wait_atomic_ge(&chained, 10, 5000), "routee 1's chain never ran");
    sleeps = atomic_load(&pool->routees[1].sleeps);
    queue_behind_0(pool, 6);
    /* Routee 1 never runs out of its own work, so no thief looks: only
     * the rescue moves routee 0's jobs while its gate stays shut. */
    cr_assert(wait_atomic_ge(&ran, 6, 5000), "only %d of 6 jobs left the stuck routee",
              atomic_load(&ran));
    cr_assert_eq(atomic_load(&ran_on_1), 6);
    cr_assert_geq(atomic_load(&pool->routees[1].rescues), 1);
    cr_assert_eq(atomic_load(&pool->routees[1].sleeps), sleeps, "routee 1 went idle");
    atomic_store(&chain_stop, true);
    gate_open(&g0);
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0, "%s", rp_errmsg());
    cr_assert_eq(atomic_load(&ran), 6);
    cr_assert_eq(atomic_load(&pool->routees[0].run), 1, "routee 0 ran only its gate job");
    rp_pool_destroy(pool);
    gate_destroy(&g0);
    gate_destroy(&g1);
}

/* Both routees blocked, 4 jobs behind routee 0; the test looks for
 * routee 1. */
static rp_pool *both_blocked(void)
{
    rp_pool *pool = two_routees();

    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 1), gate_job, &g1), 0);
    cr_assert(gate_wait_entered(&g1, 1, 5000), "routee 1 never reached its gate");
    queue_behind_0(pool, 4);
    return pool;
}

/* A look at routee 0 as routee 1's previous one, `ago` ns back: it had
 * work queued then (had), and had finished `run` jobs. */
static void looked(rp_routee *r1, int64_t ago, bool had, uint64_t run)
{
    r1->watch = &r1->pool->routees[0];
    r1->watch_at = rp__now_ns() - ago;
    r1->watch_had = had;
    r1->watch_run = run;
}

/* What routee 1 does with the job a rescue handed it, done by the test
 * standing in for it: run it (count_job's count) and count it run (the
 * pool's accounting, worker.c run_job). */
static void run_as_1(rp_routee *r1, const rp__job *job)
{
    cr_assert(job->fn == count_job || job->fn == count_job_too);
    atomic_fetch_add(&ran_on_1, 1);
    atomic_fetch_add(&ran, 1);
    rp__owner_add(&r1->run, 1);
}

static void finish_blocked(rp_pool *pool)
{
    gate_open(&g0);
    gate_open(&g1);
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0, "%s", rp_errmsg());
    cr_assert_eq(atomic_load(&ran), 4);
    rp_pool_destroy(pool);
    gate_destroy(&g0);
    gate_destroy(&g1);
}

Test(rescue, work_waiting_since_the_last_look_behind_no_progress_is_stolen)
{
    rp_pool *pool = both_blocked();
    rp_routee *r1 = &pool->routees[1];
    uint64_t run0 = atomic_load(&pool->routees[0].run);
    bool searching = false;
    rp__job job;

    /* The first look only watches: routee 0, its run count, its work. */
    r1->watch = NULL;
    r1->watch_at = rp__now_ns() - 2 * RP__RESCUE_NS;
    cr_assert_not(rp__steal_rescue(r1, &searching, &job));
    cr_assert_eq(r1->watch, &pool->routees[0]);
    cr_assert(r1->watch_had);
    cr_assert_eq(r1->watch_run, run0);
    /* Too soon after that look: nothing is judged.  (The look's time is
     * moved ahead, so that a stall of the VM between the two calls, which
     * CI once met under ASan, cannot make the second one due.) */
    r1->watch_at = rp__now_ns() + 1000000000;
    cr_assert_not(rp__steal_rescue(r1, &searching, &job));
    /* RP__RESCUE_NS later, no job finished: half of the 4 are stolen.  A
     * VM stall of more than 2 RP__RESCUE_NS between looked() and the call
     * makes the look stale (more than 4 RP__RESCUE_NS after the previous:
     * it only watches, and steals nothing); such a try is made again. */
    for (int tries = 1;; tries++) {
        int64_t t0 = rp__now_ns();

        looked(r1, 2 * RP__RESCUE_NS, true, run0);
        if (rp__steal_rescue(r1, &searching, &job))
            break;
        cr_assert_gt(rp__now_ns() - t0, 2 * RP__RESCUE_NS,
                     "a look 2 RP__RESCUE_NS after the last did not rescue");
        cr_assert_lt(tries, 20, "20 tries, each stalled over 2 RP__RESCUE_NS");
    }
    cr_assert_eq(atomic_load(&r1->rescues), 1);
    cr_assert_eq(atomic_load(&r1->stole), 2);
    cr_assert_eq(rp__mailbox_depth(&pool->routees[0].mb), 2);
    cr_assert(job.fn == count_job, "the oldest job comes first");
    cr_assert_geq(r1->watch_left, 1);
    cr_assert_leq(r1->watch_left, RP__RESCUE_TAKES_MAX);
    run_as_1(r1, &job);
    /* The other stolen job waits in routee 1's stolen batch (and once
     * free, routee 1 may steal more of routee 0's). */
    finish_blocked(pool);
    cr_assert_geq(atomic_load(&ran_on_1), 2);
}

/* A look after `looked(ago, had, run)` that must not steal: routee 0
 * keeps its 4 jobs, and the look watches routee 0 afresh (its run count
 * now, and the work it has). */
static void no_rescue(int64_t ago, bool had, int64_t run_delta, const char *why)
{
    rp_pool *pool = both_blocked();
    rp_routee *r1 = &pool->routees[1];
    uint64_t run0 = atomic_load(&pool->routees[0].run);
    bool searching = false;
    rp__job job;

    looked(r1, ago, had, run0 + (uint64_t)run_delta);
    cr_assert_not(rp__steal_rescue(r1, &searching, &job), "%s", why);
    cr_assert_eq(atomic_load(&r1->rescues), 0);
    cr_assert_eq(rp__mailbox_depth(&pool->routees[0].mb), 4);
    cr_assert_eq(r1->watch, &pool->routees[0]);
    cr_assert_eq(r1->watch_run, run0);
    cr_assert(r1->watch_had, "the look records the work it saw");
    finish_blocked(pool);
}

Test(rescue, a_routee_that_finished_a_job_since_the_last_look_keeps_its_work)
{
    no_rescue(2 * RP__RESCUE_NS, true, -1, "a routee making progress was robbed");
}

Test(rescue, work_not_queued_at_the_last_look_is_not_stolen)
{
    no_rescue(2 * RP__RESCUE_NS, false, 0, "work that may be new was stolen");
}

/* Routee 1 slept (or ran a long job) since its last look: the work seen
 * then may be gone, and what is queued now new. */
Test(rescue, a_look_long_after_the_last_only_watches)
{
    no_rescue(5 * RP__RESCUE_NS, true, 0, "a stale look stole");
}
