/* SPDX-License-Identifier: MIT */
/*
 * tests/test_rescue.c - the rescue (rp__steal_rescue in lib/steal.c): a
 * routee busy with work of its own takes the queued work of a routee that
 * makes no progress, which a thief (idle by definition) would never see;
 * and the age look beside it, which takes one job older than the looker's
 * own, dated by the routees' marks.  Linked with the static library: the
 * watch fields and the marks are private.
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
    /* The public counters say the same: every job routee 1 took from
     * routee 0 came by a rescue of one of its looks. */
    rp_routee_stats st;
    cr_assert_eq(rp_routee_stats_get(r1, &st), 0);
    cr_assert_eq(st.rescues, atomic_load(&pool->routees[1].rescues));
    cr_assert_geq(st.looks, st.rescues + 1, "the first look only watched");
    cr_assert_eq(st.stole, 6);
    cr_assert_eq(st.age_takes, 0, "no job of routee 0 is dated: it made no mark since");
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
static rp_pool *blocked_in_both_gates(void)
{
    rp_pool *pool = two_routees();

    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 1), gate_job, &g1), 0);
    cr_assert(gate_wait_entered(&g1, 1, 5000), "routee 1 never reached its gate");
    return pool;
}

static rp_pool *both_blocked(void)
{
    rp_pool *pool = blocked_in_both_gates();

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

/* A look RP__RESCUE_NS after one that saw routee 0 with work and `run0`
 * jobs finished: it must rescue.  A VM stall of more than 2 RP__RESCUE_NS
 * between looked() and the call makes the look stale (more than 4
 * RP__RESCUE_NS after the previous: it only watches, and steals nothing);
 * such a try is made again. */
static void rescue_after_a_look(rp_routee *r1, uint64_t run0, bool *searching, rp__job *job)
{
    for (int tries = 1;; tries++) {
        int64_t t0 = rp__now_ns();

        looked(r1, 2 * RP__RESCUE_NS, true, run0);
        if (rp__steal_rescue(r1, searching, job))
            return;
        cr_assert_gt(rp__now_ns() - t0, 2 * RP__RESCUE_NS,
                     "a look 2 RP__RESCUE_NS after the last did not rescue");
        cr_assert_lt(tries, 20, "20 tries, each stalled over 2 RP__RESCUE_NS");
    }
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
    /* RP__RESCUE_NS later, no job finished: half of the 4 are stolen. */
    rescue_after_a_look(r1, run0, &searching, &job);
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
    if (ago > 4 * RP__RESCUE_NS)
        cr_assert_geq(atomic_load(&r1->stale_looks), 1, "a look %lld ns after the last is stale",
                      (long long)ago);
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

/*
 * The age look (lib/steal.c, "The age look"): at a look that rescues
 * nothing, routee 1 takes routee 0's oldest job when its marks date that
 * job RP__OLDER_NS or more before routee 1's own oldest.  The marks are
 * set by hand (both routees are blocked in their gates, so their
 * owner-only fields are the test's), and routee 1 makes none of its own
 * meanwhile (its last mark's time moved ahead): the dates are the test's
 * whatever the clock reads.  Routee 0 runs its gate job with 4 jobs
 * queued (numbered 1-4: its gate job was 0), routee 1 has none queued (its
 * oldest would be job 1, the next it accepts).
 */
static void date_jobs(rp_pool *pool, int64_t older_ns)
{
    rp_routee *r0 = &pool->routees[0], *r1 = &pool->routees[1];
    int64_t now = rp__now_ns();

    cr_assert_eq(rp__mailbox_enqueued(&r0->mb), 5);
    cr_assert_eq(rp__mailbox_depth(&r0->mb), 4);
    cr_assert_eq(rp__mailbox_enqueued(&r1->mb), 1);
    /* Routee 0 had accepted its 5 jobs 1 ms ago; routee 1's next job
     * comes after its mark of 1 ms - older_ns ago. */
    atomic_store(&r0->mark[0], rp__mark(now - 1000000, 5));
    atomic_store(&r0->mark_n, 1);
    atomic_store(&r1->mark[0], rp__mark(now - 1000000 + older_ns, 1));
    atomic_store(&r1->mark_n, 1);
    r1->mark_at = INT64_MAX / 2;
}

/* Routee 1 looks (its last look `ago` ns back saw no work, so no rescue,
 * and routee 0 had finished `run_back` jobs fewer than now); returns
 * whether it took a job, which it then runs. */
static bool older_look(rp_pool *pool, int64_t ago, uint64_t run_back)
{
    rp_routee *r1 = &pool->routees[1];
    bool searching = false, took;
    rp__job job;

    looked(r1, ago, false, atomic_load(&pool->routees[0].run) - run_back);
    took = rp__steal_rescue(r1, &searching, &job);
    cr_assert_eq(atomic_load(&r1->rescues), 0, "the look rescued");
    if (took) {
        cr_assert(job.fn == count_job, "the oldest job comes first");
        run_as_1(r1, &job);
    }
    return took;
}

Test(rescue, a_busy_routee_takes_a_job_older_than_its_own_by_the_margin)
{
    rp_pool *pool = both_blocked();
    rp_routee *r1 = &pool->routees[1];

    date_jobs(pool, RP__OLDER_NS);
    cr_assert(older_look(pool, 2 * RP__RESCUE_NS, 0),
              "a job RP__OLDER_NS older than ours stayed");
    cr_assert_eq(atomic_load(&r1->olders), 1);
    cr_assert_eq(atomic_load(&r1->stole), 1, "the age look takes one job");
    rp_routee_stats st;
    cr_assert_eq(rp_routee_stats_get(r1, &st), 0);
    cr_assert_eq(st.age_takes, 1);
    cr_assert_eq(st.rescues, 0);
    cr_assert_geq(st.looks, 1);
    cr_assert_eq(rp__mailbox_depth(&pool->routees[0].mb), 3);
    /* Routee 0 is still watched, from here: the rescue's if it stays
     * stuck with the work it has left. */
    cr_assert_eq(r1->watch, &pool->routees[0]);
    cr_assert(r1->watch_had);
    cr_assert_eq(atomic_load(&ran_on_1), 1);
    /* Once free, routee 1 may steal more of routee 0's. */
    finish_blocked(pool);
}

/* One look of routee 1's after date_jobs(older_ns) and
 * older_look(ago, run_back): whether it takes routee 0's oldest job. */
static void one_look(int64_t older_ns, int64_t ago, uint64_t run_back, bool takes,
                     const char *why)
{
    rp_pool *pool = both_blocked();

    date_jobs(pool, older_ns);
    cr_assert_eq(older_look(pool, ago, run_back), takes, "%s", why);
    cr_assert_eq(atomic_load(&pool->routees[1].olders), takes ? 1 : 0);
    cr_assert_eq(rp__mailbox_depth(&pool->routees[0].mb), takes ? 3 : 4);
    finish_blocked(pool);
}

Test(rescue, a_job_less_than_the_margin_older_stays)
{
    /* A mark is 1 us fine. */
    one_look(RP__OLDER_NS - 1000, 2 * RP__RESCUE_NS, 0, false, "a job not old enough was taken");
}

/* Ages do not depend on when routee 1 looked last, unlike the rescue's
 * judgement (a_look_long_after_the_last_only_watches). */
Test(rescue, a_look_long_after_the_last_still_takes_an_older_job)
{
    one_look(2 * RP__OLDER_NS, 1000 * RP__RESCUE_NS, 0, true, "a stale look left an older job");
}

/*
 * A busy thief's surplus (lib/steal.c, steal_from).  Records are taken
 * whole; four tells of one function from the test thread grow one record
 * behind routee 0 (lib/lane.c, "Growing").  An idle thief puts what such a
 * record brings beyond its share back on its own lane (test_thief,
 * a_thief_requeues_what_a_whole_record_brought_beyond_its_share); the
 * rescue and the age look keep all of it in the held batch, which runs
 * before the looker's own work: back on its lane it would queue behind
 * that work, though it is the stuck routee's oldest.
 */
static rp_pool *one_record_behind_0(void)
{
    rp_pool *pool = blocked_in_both_gates();

    for (int i = 0; i < 4; i++)
        cr_assert_eq(rp_pool_submit(pool, count_job, NULL), 0);
    return pool;
}

/* After a busy take of the record (its first job run by the test, as
 * routee 1): the other three wait in routee 1's held batch, none on its
 * lane; freed, routee 0 finds nothing, and routee 1 runs all three. */
static void kept_whole(rp_pool *pool)
{
    rp_routee *r1 = &pool->routees[1];

    cr_assert_eq(atomic_load(&r1->stole), 4, "the record was taken whole");
    cr_assert_eq(atomic_load(&r1->held_stolen), 3,
                 "%lu of the record's other 3 jobs are held ahead of routee 1's own work",
                 (unsigned long)atomic_load(&r1->held_stolen));
    cr_assert_not(rp__mailbox_has_stealable(&r1->mb),
                  "part of the record went back on routee 1's lane, behind its own work");
    cr_assert_eq(rp__mailbox_depth(&r1->mb), 3);
    cr_assert_eq(rp__mailbox_depth(&pool->routees[0].mb), 0);
    uint64_t slept = atomic_load(&pool->routees[0].sleeps);
    gate_open(&g0);
    for (int i = 0; i < 5000 && atomic_load(&pool->routees[0].sleeps) == slept; i++)
        sleep_ms(1);
    cr_assert_gt(atomic_load(&pool->routees[0].sleeps), slept, "routee 0 never went to sleep");
    gate_open(&g1);
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0, "%s", rp_errmsg());
    cr_assert_eq(atomic_load(&ran), 4);
    cr_assert_eq(atomic_load(&ran_on_1), 4, "routee 0 ran %d of the record's jobs",
                 4 - atomic_load(&ran_on_1));
    rp_pool_destroy(pool);
    gate_destroy(&g0);
    gate_destroy(&g1);
}

Test(rescue, a_rescue_keeps_all_of_a_whole_record_ahead_of_its_own_work)
{
    rp_pool *pool = one_record_behind_0();
    rp_routee *r1 = &pool->routees[1];
    uint64_t run0 = atomic_load(&pool->routees[0].run);
    bool searching = false;
    rp__job job;

    /* Its share of a depth of 4 is 2. */
    rescue_after_a_look(r1, run0, &searching, &job);
    cr_assert_eq(atomic_load(&r1->rescues), 1);
    run_as_1(r1, &job);
    kept_whole(pool);
}

Test(rescue, the_age_look_keeps_all_of_a_whole_record_ahead_of_its_own_work)
{
    rp_pool *pool = one_record_behind_0();

    date_jobs(pool, RP__OLDER_NS);
    cr_assert(older_look(pool, 2 * RP__RESCUE_NS, 0), "a job RP__OLDER_NS older stayed");
    cr_assert_eq(atomic_load(&pool->routees[1].olders), 1);
    kept_whole(pool);
}

/* A routee that ran more than RP__OLDER_PACE jobs per RP__RESCUE_NS runs
 * tiny ones: no dating.  10^9 jobs since the look 20 us back: still tiny
 * after a stall of 10 minutes between setting the look up and making it
 * (10,000 jobs were, and a stall of over 6 ms under ctest -j2 would have
 * turned them into a pace the look dates). */
Test(rescue, a_routee_running_tiny_jobs_keeps_its_older_job)
{
    one_look(2 * RP__OLDER_NS, 2 * RP__RESCUE_NS, 1000000000, false,
             "a routee at a tiny pace was robbed");
}

/* Without marks nothing is dated: routee 0's none, or routee 1's own. */
Test(rescue, jobs_without_marks_are_not_dated)
{
    rp_pool *pool = both_blocked();

    date_jobs(pool, 2 * RP__OLDER_NS);
    atomic_store(&pool->routees[0].mark_n, 0);
    cr_assert_not(older_look(pool, 2 * RP__RESCUE_NS, 0), "routee 0 had no marks");
    atomic_store(&pool->routees[0].mark_n, 1);
    atomic_store(&pool->routees[1].mark_n, 0);
    cr_assert_not(older_look(pool, 2 * RP__RESCUE_NS, 0), "routee 1 had no marks");
    cr_assert_eq(rp__mailbox_depth(&pool->routees[0].mb), 4);
    finish_blocked(pool);
}

/* Jobs of another routee's that routee 0 holds in its stolen batch count
 * in its depth but were never accepted there: the numbering leaves them
 * out.  Routee 0 is made to show 2 such jobs (held_stolen), so its oldest
 * queued job is numbered 3, not 1; marks date job 1 a millisecond back and
 * job 3 only 100 us, younger than routee 1's own (500 us). */
Test(rescue, a_routees_held_stolen_jobs_are_left_out_of_its_numbering)
{
    rp_pool *pool = both_blocked();
    rp_routee *r0 = &pool->routees[0], *r1 = &pool->routees[1];
    int64_t now = rp__now_ns();

    date_jobs(pool, 0);
    atomic_store(&r0->mark[0], rp__mark(now - 1000000, 2));
    atomic_store(&r0->mark[1], rp__mark(now - 100000, 5));
    atomic_store(&r0->mark_n, 2);
    atomic_store(&r1->mark[0], rp__mark(now - 500000, 1));
    atomic_store(&r0->held_stolen, 2);
    cr_assert_not(older_look(pool, 2 * RP__RESCUE_NS, 0),
                  "held jobs made routee 0's queue look older than it is");
    cr_assert_eq(rp__mailbox_depth(&r0->mb), 4);
    atomic_store(&r0->held_stolen, 0);
    cr_assert(older_look(pool, 2 * RP__RESCUE_NS, 0), "job 1, 500 us older than ours, stayed");
    cr_assert_eq(rp__mailbox_depth(&r0->mb), 3);
    finish_blocked(pool);
}

/* The age look is the pool's when it steals and its default router does
 * not balance depths itself; a pool without it makes none. */
Test(rescue, a_pool_routed_by_smallest_mailbox_makes_no_age_look)
{
    rp_pool_options o;
    rp_pool *p;
    rp_pool *pool;
    const rp_strategy strategies[] = {rp_strategy_round_robin(), rp_strategy_random(1),
                                      rp_strategy_smallest_mailbox(), rp_strategy_custom(to_zero, NULL)};
    const bool older[] = {true, true, false, true};

    for (size_t i = 0; i < 4; i++)
        for (int steal = 0; steal < 2; steal++) {
            rp_pool_options_init(&o);
            o.routees = 2;
            o.steal = steal;
            o.strategy = strategies[i];
            cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
            cr_assert_eq(p->older, steal && older[i], "strategy %zu, steal %d", i, steal);
            rp_pool_destroy(p);
        }
    pool = both_blocked();
    date_jobs(pool, 2 * RP__OLDER_NS);
    pool->older = false; /* as under smallest-mailbox: both routees are blocked */
    cr_assert_not(older_look(pool, 2 * RP__RESCUE_NS, 0), "a pool without the age look made one");
    cr_assert_eq(rp__mailbox_depth(&pool->routees[0].mb), 4);
    finish_blocked(pool);
}

/* A routee's clock read makes a mark of its accepted count, RP__MARK_NS
 * after its last one at the earliest. */
Test(rescue, a_routee_marks_its_accepted_jobs_every_RP__MARK_NS_at_most)
{
    rp_pool *pool = both_blocked();
    rp_routee *r0 = &pool->routees[0];
    bool searching = false;
    rp__job job;
    uint32_t n;
    int64_t t0;

    /* Routee 0 stands in this time (its look finds nothing to take:
     * routee 1 has no work). */
    r0->watch_at = INT64_MAX / 2; /* no look is due: the clock read only */
    r0->mark_at = rp__now_ns() - RP__MARK_NS;
    n = atomic_load(&r0->mark_n);
    t0 = rp__now_ns();
    cr_assert_not(rp__steal_rescue(r0, &searching, &job));
    cr_assert_eq(atomic_load(&r0->mark_n), n + 1);
    cr_assert_eq((uint32_t)atomic_load(&r0->mark[n % RP__MARKS]), 5, "the mark counts 5 jobs");
    cr_assert_geq(r0->mark_at, t0);
    cr_assert_not(rp__steal_rescue(r0, &searching, &job));
    if (rp__now_ns() - t0 < RP__MARK_NS)
        cr_assert_eq(atomic_load(&r0->mark_n), n + 1, "a second mark within RP__MARK_NS");
    finish_blocked(pool);
}

/* rp__mark_queued_by / _after: marks at 100, 200 and 300 us of 10, 20 and
 * 30 accepted jobs (jobs 0-9, 10-19, 20-29 queued before each). */
static void three_marks(_Atomic uint64_t *m)
{
    for (int i = 0; i < 3; i++)
        atomic_init(&m[i], rp__mark((i + 1) * 100000LL, (uint64_t)(i + 1) * 10));
}

/* Job head of n marks m: queued by `by` and after `after` (us; -1: no
 * such mark). */
static void dated(const _Atomic uint64_t *m, uint32_t n, uint32_t head, int64_t by,
                  int64_t after)
{
    uint32_t t = 0;

    cr_assert_eq(rp__mark_queued_by(m, n, head, &t), by >= 0, "job %u: queued by", head);
    if (by >= 0)
        cr_assert_eq(t, (uint32_t)by, "job %u queued by %u, not %lld", head, t, (long long)by);
    cr_assert_eq(rp__mark_queued_after(m, n, head, &t), after >= 0, "job %u: queued after", head);
    if (after >= 0)
        cr_assert_eq(t, (uint32_t)after, "job %u queued after %u, not %lld", head, t,
                     (long long)after);
}

Test(rescue, a_job_is_dated_between_the_marks_around_it)
{
    _Atomic uint64_t m[RP__MARKS];

    three_marks(m);
    dated(m, 3, 15, 200, 100);
    dated(m, 3, 29, 300, 200);
    dated(m, 3, 5, 100, -1);  /* before every mark: by the first, after none */
    dated(m, 3, 30, -1, 300); /* after every mark: by none, after the last */
    dated(m, 0, 15, -1, -1);  /* no marks, no dates */
}

/* The ring keeps the newest RP__MARKS: an older job is dated by the
 * oldest kept. */
Test(rescue, the_marks_kept_are_the_newest)
{
    _Atomic uint64_t m[RP__MARKS];
    uint32_t n = RP__MARKS + 5, t = 0;

    for (uint32_t i = 0; i < n; i++)
        atomic_store(&m[i % RP__MARKS], rp__mark((i + 1) * 100000LL, (uint64_t)(i + 1) * 10));
    cr_assert(rp__mark_queued_by(m, n, 5, &t));
    cr_assert_eq(t, 600, "job 5 dated by the oldest mark kept, the 6th (%u)", t);
    cr_assert_not(rp__mark_queued_after(m, n, 5, &t));
    cr_assert(rp__mark_queued_after(m, n, (n - 1) * 10 + 5, &t));
    cr_assert_eq(t, (n - 1) * 100);
}

/* A mark overwritten while read is newer than the one it replaced: the
 * job is dated later, never earlier (lib/steal.h). */
Test(rescue, a_mark_overwritten_while_read_never_dates_a_job_earlier)
{
    _Atomic uint64_t m[RP__MARKS];
    uint32_t t = 0;

    three_marks(m);
    atomic_store(&m[0], rp__mark(400000, 40)); /* the owner's 4th, in slot 0 */
    cr_assert(rp__mark_queued_by(m, 3, 15, &t));
    cr_assert_eq(t, 200);
    cr_assert(rp__mark_queued_by(m, 3, 5, &t));
    cr_assert_eq(t, 200, "job 5 dated by %u, before its true date (100) is lost", t);
}

/* Counts and times are 32 bits in a mark; their comparisons wrap. */
Test(rescue, mark_counts_and_times_wrap)
{
    _Atomic uint64_t m[RP__MARKS];
    uint64_t base = 0xfffffff0ull;
    int64_t t_base = 0xfffffff0ll * 1000; /* us: the time wraps after the first mark */
    uint32_t t = 0;

    for (int i = 0; i < 3; i++)
        atomic_init(&m[i], rp__mark(t_base + (i + 1) * 100000LL, base + (uint64_t)(i + 1) * 10));
    cr_assert(rp__mark_queued_by(m, 3, (uint32_t)(base + 15), &t));
    cr_assert_eq(t, (uint32_t)(0xfffffff0u + 200));
    cr_assert(rp__mark_queued_after(m, 3, (uint32_t)(base + 15), &t));
    cr_assert_eq(t, (uint32_t)(0xfffffff0u + 100));
    cr_assert_eq((int32_t)((uint32_t)(0xfffffff0u + 200) - (uint32_t)(0xfffffff0u + 100)), 100);
}
