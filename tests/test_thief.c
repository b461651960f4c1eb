/* SPDX-License-Identifier: MIT */
/*
 * tests/test_thief.c - waking a thief (wake_thief in lib/steal.c): a
 * search whose waker stalled before its signal is taken over by the next
 * producer; a search that is woken, or was taken just now, wakes nobody
 * else.  Linked with the static library: the search word is private.
 *
 * Each test blocks routee 0 of a two-routee pool behind a gate, lets
 * routee 1 fall asleep idle, sets the search word, and queues stealable
 * jobs on routee 0: only a thief woken for them can run them before the
 * gate opens.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <limits.h>
#include <sched.h>

#include "common.h"
#include "clock.h"
#include "pool_record.h"
#include "routee_record.h"
#include "steal.h"
#include "steal_fixture.h"

TestSuite(thief, .fini = rp_leak_check);

static gate g;

/* Two stealing routees that sleep at once, routed by route. */
static void two_routees(rp_pool_options *o, const char *name, rp_strategy_fn route)
{
    rp_pool_options_init(o);
    o->routees = 2;
    o->name = name;
    o->steal = true;
    o->idle_spin_us = 0; /* sleep at once */
    o->strategy = rp_strategy_custom(route, NULL);
    o->metrics = false; /* no sampled tell: a record of one function holds 8 */
}

/* Routee 0 blocked in the gate, routee 1 asleep with its idle bit set;
 * with cpus (ncpus > 0) the routees are pinned to them. */
static rp_pool *blocked_pool_on(const int *cpus, size_t ncpus)
{
    rp_pool_options o;
    rp_pool *pool;

    gate_init(&g);
    atomic_store(&ran, 0);
    atomic_store(&ran_on_1, 0);
    two_routees(&o, "thief", to_zero);
    o.cpus = cpus;
    o.ncpus = ncpus;
    cr_assert_eq(rp_pool_create(&pool, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 0), gate_job, &g), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000), "the gate job never started");
    for (int i = 0; i < 5000 && !(atomic_load(&pool->idle_bits[0]) & 2); i++)
        sleep_ms(1);
    cr_assert(atomic_load(&pool->idle_bits[0]) & 2, "routee 1 never went idle");
    sleep_ms(20); /* inside FUTEX_WAIT by now */
    return pool;
}

static rp_pool *blocked_pool(void)
{
    return blocked_pool_on(NULL, 0);
}

/* Open the gate, check every job ran, destroy. */
static void finish(rp_pool *pool, int jobs)
{
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0, "%s", rp_errmsg());
    cr_assert_eq(atomic_load(&ran), jobs);
    rp_pool_destroy(pool);
    gate_destroy(&g);
}

/* A search begun at t_ns whose waker has not signalled yet. */
static int64_t unwoken_search(int64_t t_ns)
{
    return t_ns << 1;
}

Test(thief, a_search_whose_waker_stalled_is_taken_over_by_the_next_producer)
{
    rp_pool *pool = blocked_pool();

    /* A waker took the search 1 ms ago and was descheduled before it
     * signalled anyone. */
    atomic_store(&pool->searching, unwoken_search(rp__now_ns() - 1000000));
    cr_assert_eq(rp_pool_submit(pool, count_job, NULL), 0);
    cr_assert(wait_atomic_ge(&ran, 1, 2000),
              "the stalled search kept every producer from waking a thief");
    cr_assert_eq(atomic_load(&ran_on_1), 1, "the job ran on the idle routee");
    /* The thief ended the search it was woken for. */
    cr_assert_eq(atomic_load(&pool->searching), 0);
    finish(pool, 1);
}

Test(thief, a_woken_or_fresh_search_wakes_no_second_thief)
{
    rp_pool *pool = blocked_pool();
    const int64_t searches[] = {
        /* A thief was woken a second ago and still searches (runnable,
         * waiting for a CPU): however old, a woken search is not taken
         * over. */
        unwoken_search(rp__now_ns() - 1000000000LL) | RP__SEARCH_WOKEN,
        /* A waker took the search just now (never stale in this test). */
        unwoken_search(rp__now_ns() + 60 * 1000000000LL),
    };

    for (int i = 0; i < 2; i++) {
        atomic_store(&pool->searching, searches[i]);
        cr_assert_eq(rp_pool_submit(pool, count_job, NULL), 0);
        sleep_ms(100);
        cr_assert_eq(atomic_load(&ran), 0, "search %d: a second thief was woken", i);
    }
    /* The search ends: the next producer wakes the thief, which takes
     * both jobs and the third. */
    atomic_store(&pool->searching, 0);
    cr_assert_eq(rp_pool_submit(pool, count_job, NULL), 0);
    cr_assert(wait_atomic_ge(&ran, 3, 2000), "only %d of 3 ran", atomic_load(&ran));
    cr_assert_eq(atomic_load(&ran_on_1), 3);
    finish(pool, 3);
}

/* The first CPU this process may run on. */
static int first_cpu(void)
{
    cpu_set_t set;

    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            return c;
    cr_assert_fail("no CPU in the affinity mask");
    return -1;
}

/*
 * worth_stealing (lib/steal.c): the queue of a routee that is not running
 * a job, last seen on the thief's own CPU, is left to that routee - the
 * two share the CPU, so a steal gains no parallelism, only a switch per
 * yield.  The same queue is stolen once the routee last ran elsewhere.
 * Both routees are pinned to one CPU; routee 0, blocked in the gate, is
 * made to look between jobs (running 0) and its CPU is set by hand.
 */
Test(thief, a_routee_not_running_on_the_thiefs_cpu_keeps_its_queue)
{
    int c = first_cpu();
    const int cpus[2] = {c, c};
    rp_pool *pool = blocked_pool_on(cpus, 2);
    rp_routee *r0 = &pool->routees[0];

    atomic_store(&r0->running, 0);
    atomic_store(&r0->cpu, c);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(rp_pool_submit(pool, i % 2 ? count_job_too : count_job, NULL), 0);
    sleep_ms(100);
    cr_assert_eq(atomic_load(&ran), 0,
                 "the thief stole from a routee between jobs on its own CPU");
    /* Routee 0 last ran on another CPU: now its queue is stolen - half of
     * 4 jobs, then half of the 2 left, and the last one stays (an idle
     * routee's single job is its own). */
    atomic_store(&r0->cpu, c + 1);
    cr_assert_eq(rp_pool_submit(pool, count_job_too, NULL), 0);
    cr_assert(wait_atomic_ge(&ran, 3, 2000), "only %d of 3 stolen", atomic_load(&ran));
    sleep_ms(50);
    cr_assert_eq(atomic_load(&ran_on_1), 3);
    cr_assert_eq(atomic_load(&ran), 3);
    finish(pool, 4);
}

/*
 * worth_stealing's sleeper (lib/steal.c): a routee asleep with one queued
 * job runs it only after its wake-up, so a thief that has just ended a
 * job takes it - at a low load (rp__steal_low_load) only; a routee awake
 * between jobs keeps its one job.  Routee 0, blocked in the gate, is made
 * to look between jobs (running 0, last started on no CPU of the
 * thief's), then asleep (its idle bit set by hand); routee 1 is woken by
 * tells of its own and looks for work when each ends.  Its load is set by
 * hand too, with a window that never closes (its start in the future),
 * and so is its rescue's last look, in the future too: routee 0 is stuck
 * in the gate with a job queued, which is what a rescue serves (a routee
 * preempted 10-40 us between two looks, as on a busy CI machine, would
 * otherwise take the job as a rescue whatever its load).  All while
 * routee 1 sleeps: these fields are its own.
 */
static void set_load(rp_routee *r, bool low)
{
    r->load_t0 = INT64_MAX / 2;
    r->low_load = low;
    r->watch_at = INT64_MAX / 2;
}

Test(thief, a_thief_at_a_low_load_takes_a_sleeping_routees_one_job)
{
    rp_pool *pool = blocked_pool();
    rp_routee *r0 = &pool->routees[0], *r1 = &pool->routees[1];

    atomic_store(&r0->running, 0);
    atomic_store(&r0->cpu, INT_MAX);
    set_load(r1, true);
    cr_assert_eq(rp_pool_submit(pool, count_job, NULL), 0);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 1), count_job_too, NULL), 0);
    cr_assert(wait_atomic_ge(&ran, 1, 2000), "routee 1 never ran its own job");
    sleep_ms(50);
    cr_assert_eq(atomic_load(&ran), 1, "the thief took the one job of a routee awake between jobs");
    /* Routee 0 asleep, routee 1 at a high load: the job stays. */
    atomic_fetch_or(&pool->idle_bits[0], 1);
    set_load(r1, false);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 1), count_job_too, NULL), 0);
    cr_assert(wait_atomic_ge(&ran, 2, 2000), "routee 1 never ran its second job");
    sleep_ms(50);
    cr_assert_eq(atomic_load(&ran), 2, "a thief at a high load took a sleeping routee's one job");
    /* At a low load, routee 1's next look takes it. */
    set_load(r1, true);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 1), count_job_too, NULL), 0);
    cr_assert(wait_atomic_ge(&ran, 4, 2000),
              "a thief at a low load left a sleeping routee's one job (%d of 4 ran)",
              atomic_load(&ran));
    cr_assert_eq(atomic_load(&ran_on_1), 4);
    atomic_fetch_and(&pool->idle_bits[0], ~1ull); /* routee 0 never slept */
    finish(pool, 4);
}

/* rp__steal_low_load: more than RP__LOW_LOAD_SLEEP_PCT percent of the
 * window asleep; never on no time. */
Test(thief, a_low_load_is_a_window_mostly_asleep)
{
    cr_assert(rp__steal_low_load(500000, 1000000));
    cr_assert(rp__steal_low_load(300001, 1000000));
    cr_assert_not(rp__steal_low_load(300000, 1000000));
    cr_assert_not(rp__steal_low_load(0, 1000000));
    cr_assert_not(rp__steal_low_load(1000, 0));
    cr_assert_not(rp__steal_low_load(-5, 1000000));
    /* A whole second asleep does not overflow. */
    cr_assert(rp__steal_low_load(1000000000LL, 1000000000LL));
}

/* A job that counts where it ran and, given a gate, waits in it. */
static atomic_int ran_on_0;
static void share_job(rp_job_ctx *ctx, void *arg)
{
    if (rp_job_routee(ctx) == 0)
        atomic_fetch_add(&ran_on_0, 1);
    else
        atomic_fetch_add(&ran_on_1, 1);
    atomic_fetch_add(&ran, 1);
    if (arg)
        gate_pass(arg);
}

/*
 * rp__steal_batch: a steal whose record holds more than the thief's share
 * (tells of one producer grown into one record: lib/lane.c, "Growing")
 * queues the rest on the thief's own stealable lane, where the victim,
 * once free, takes it back - rather than leaving it in the thief's
 * private batch behind the job the thief runs.  Four tells grow one
 * record on routee 0 (blocked); the thief's share of a depth of 4 is 2:
 * it runs the first (which blocks in a second gate) and keeps one, and
 * routee 0, freed, runs the other two while the thief is still blocked.
 */
Test(thief, a_thief_requeues_what_a_whole_record_brought_beyond_its_share)
{
    rp_pool *pool = blocked_pool();
    gate g2;

    gate_init(&g2);
    atomic_store(&ran_on_0, 0);
    /* No thief is woken while the record grows (a search was taken just
     * now), then the fourth tell wakes one. */
    atomic_store(&pool->searching, unwoken_search(rp__now_ns() + 60 * 1000000000LL));
    cr_assert_eq(rp_pool_submit(pool, share_job, &g2), 0);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(rp_pool_submit(pool, share_job, NULL), 0);
    sleep_ms(50);
    cr_assert_eq(atomic_load(&ran), 0, "a thief was woken during the search");
    atomic_store(&pool->searching, 0);
    cr_assert_eq(rp_pool_submit(pool, share_job, NULL), 0);
    cr_assert(gate_wait_entered(&g2, 1, 5000), "the thief never ran the first tell");
    /* Routee 0 is freed: it takes the thief's requeued two. */
    gate_open(&g);
    for (int i = 0; i < 5000 && atomic_load(&ran_on_0) < 2; i++)
        sleep_ms(1);
    sleep_ms(20);
    cr_assert_eq(atomic_load(&ran_on_0), 2,
                 "routee 0 ran %d of the tells (the 2 requeued expected) while the thief was "
                 "blocked", atomic_load(&ran_on_0));
    cr_assert_eq(atomic_load(&ran_on_1), 1);
    gate_open(&g2);
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0, "%s", rp_errmsg());
    cr_assert_eq(atomic_load(&ran), 4);
    cr_assert_eq(atomic_load(&ran_on_1), 2, "the thief ran its share: the first and one more");
    rp_pool_destroy(pool);
    gate_destroy(&g2);
    gate_destroy(&g);
}

/* Where to_target sends a submit, and the order the jobs ran in (their
 * numbers, routee 1's only). */
static atomic_int target;
static atomic_int order[16];
static atomic_int norder;

static int to_target(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                     size_t *out)
{
    (void)user, (void)st, (void)routees, (void)n;
    out[0] = (size_t)atomic_load(&target);
    return 1;
}

/* Notes its number (its argument) when it runs on routee 1; job 0 waits
 * in the second gate. */
static gate g2;
static void noted_job(rp_job_ctx *ctx, void *arg)
{
    int id = (int)(intptr_t)arg;

    if (rp_job_routee(ctx) == 1)
        atomic_store(&order[atomic_fetch_add(&norder, 1) % 16], id);
    atomic_fetch_add(&ran, 1);
    if (id == 0)
        gate_pass(&g2);
}

/* noted_job under another name: a record each (see count_job_too). */
static void noted_job_too(rp_job_ctx *ctx, void *arg)
{
    noted_job(ctx, arg);
}

/*
 * Routee 1 steals job 0 from routee 0 (blocked) and blocks in it; then
 * routee 0 gets jobs 1-4 (alternating functions: records of their own
 * unless one_record) and routee 1 two tells of one function, 5 and 6,
 * which grow one young record (lib/lane.c, "Growing").  Opens the second
 * gate and returns routee 1's order once all 7 ran.
 */
static void run_behind_own_young_record(bool one_record, int *got)
{
    rp_pool_options o;
    rp_pool *pool;

    gate_init(&g);
    gate_init(&g2);
    atomic_store(&ran, 0);
    atomic_store(&norder, 0);
    atomic_store(&target, 0);
    two_routees(&o, "passes", to_target);
    cr_assert_eq(rp_pool_create(&pool, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 0), gate_job, &g), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000), "the gate job never started");
    cr_assert_eq(rp_pool_submit(pool, noted_job, (void *)0), 0);
    cr_assert(gate_wait_entered(&g2, 1, 5000), "routee 1 never stole job 0");
    for (intptr_t i = 1; i <= 4; i++)
        cr_assert_eq(rp_pool_submit(pool, one_record || i % 2 ? noted_job : noted_job_too,
                                    (void *)i),
                     0);
    atomic_store(&target, 1);
    for (intptr_t i = 5; i <= 6; i++)
        cr_assert_eq(rp_pool_submit(pool, noted_job, (void *)i), 0);
    cr_assert_eq(rp__mailbox_young(&pool->routees[1].mb), 2, "5 and 6 share a young record");
    gate_open(&g2);
    for (int i = 0; i < 5000 && atomic_load(&norder) < 7; i++)
        sleep_ms(1);
    cr_assert_eq(atomic_load(&norder), 7, "routee 1 ran %d of the 7 jobs", atomic_load(&norder));
    for (int i = 0; i < 7; i++)
        got[i] = atomic_load(&order[i]);
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0, "%s", rp_errmsg());
    cr_assert_eq(atomic_load(&ran), 7);
    rp_pool_destroy(pool);
    gate_destroy(&g2);
    gate_destroy(&g);
}

static void assert_order(const int *got, const int *want, const char *what)
{
    for (int i = 0; i < 7; i++)
        cr_assert_eq(got[i], want[i],
                     "%s: routee 1 ran %d %d %d %d %d %d %d, expected %d %d %d %d %d %d %d", what,
                     got[0], got[1], got[2], got[3], got[4], got[5], got[6], want[0], want[1],
                     want[2], want[3], want[4], want[5], want[6]);
}

/*
 * pass_young (lib/worker.c): a routee whose own mailbox holds only a
 * young record steals first from its last victim when that one has work
 * ready - older work, and the record grows meanwhile - and takes the
 * record once it stood still across one such steal.  After job 0 routee
 * 1 steals 1 and 2 (half of routee 0's 4), runs its own 5 and 6 (their
 * record did not grow), then steals 3 and 4 one at a time.
 */
Test(thief, a_thief_takes_its_victims_ready_work_before_its_own_young_record)
{
    int got[7];

    run_behind_own_young_record(false, got);
    assert_order(got, (const int[]){0, 1, 2, 5, 6, 3, 4}, "ready work");
}

/* The victim's work is one young record too: routee 1 runs its own
 * record first, then steals routee 0's whole record (4 jobs, its share
 * 2: the other two go on its own lane and run next). */
Test(thief, a_thief_runs_its_own_young_record_before_a_victims_young_record)
{
    int got[7];

    run_behind_own_young_record(true, got);
    assert_order(got, (const int[]){0, 5, 6, 1, 2, 3, 4}, "young victim");
}

/*
 * How much a steal takes (lib/steal.c, "How much"): half the victim's
 * depth, at most RP__STEAL_MAX (8), or at most RP__STEAL_FAST_MAX (32)
 * when the thief's own jobs came at a fast pace (rp_routee.fast).  Both
 * routees are blocked in gate jobs; the test sets routee 1's pace while
 * it is blocked (the gate's lock orders the write before the routee's
 * reads) and puts off its next clock read (watch_left), which would
 * measure the pace anew.  Then 64 tells of alternating functions (a
 * record each) queue on routee 0; no thief is woken (routee 1 is busy).
 * Routee 1, freed, finds nothing of its own and steals: it runs the
 * first job, which waits in a third gate, and holds the rest, counted in
 * its depth.  read_ago_ns: how long before the steal routee 1 last read
 * its clock (watch_read; a steal of more than 8 trusts a pace read within
 * RP__STEAL_FRESH_NS only).  slept: routee 1 goes idle and sleeps after its pace was
 * set, and is woken by the 64th tell (the others queue while a search
 * holds the thief back).
 */
static void steal_from_deep_queue(bool fast, bool slept, int64_t read_ago_ns, int64_t *thief,
                                  int64_t *victim)
{
    rp_pool_options o;
    rp_pool *pool;
    rp_routee *r1;
    gate g1, g3;

    gate_init(&g);
    gate_init(&g1);
    gate_init(&g3);
    atomic_store(&ran, 0);
    two_routees(&o, "steal-size", to_zero);
    cr_assert_eq(rp_pool_create(&pool, &o), 0, "%s", rp_errmsg());
    r1 = &pool->routees[1];
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 0), gate_job, &g), 0);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 1), gate_job, &g1), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000), "routee 0 never started its gate job");
    cr_assert(gate_wait_entered(&g1, 1, 5000), "routee 1 never started its gate job");
    r1->fast = fast;
    r1->watch_left = UINT_MAX;
    r1->watch_read = rp__now_ns() - read_ago_ns;
    if (slept) {
        gate_open(&g1);
        for (int i = 0; i < 5000 && !(atomic_load(&pool->idle_bits[0]) & 2); i++)
            sleep_ms(1);
        cr_assert(atomic_load(&pool->idle_bits[0]) & 2, "routee 1 never went idle");
        sleep_ms(20); /* inside FUTEX_WAIT by now */
        atomic_store(&pool->searching, unwoken_search(rp__now_ns() + 60 * 1000000000LL));
    }
    cr_assert_eq(rp_pool_submit(pool, gate_job, &g3), 0);
    for (int i = 1; i < 63; i++)
        cr_assert_eq(rp_pool_submit(pool, i % 2 ? count_job : count_job_too, NULL), 0);
    if (slept) {
        sleep_ms(20);
        cr_assert_eq(atomic_load(&ran), 0, "a thief was woken while the queue filled");
        atomic_store(&pool->searching, 0);
    }
    cr_assert_eq(rp_pool_submit(pool, count_job_too, NULL), 0);
    if (!slept)
        gate_open(&g1);
    cr_assert(gate_wait_entered(&g3, 1, 5000), "routee 1 never stole the first job");
    *thief = rp_routee_depth(rp_pool_routee(pool, 1));
    *victim = rp_routee_depth(rp_pool_routee(pool, 0));
    gate_open(&g3);
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0, "%s", rp_errmsg());
    cr_assert_eq(atomic_load(&ran), 63, "every counted job ran once");
    rp_pool_destroy(pool);
    gate_destroy(&g3);
    gate_destroy(&g1);
    gate_destroy(&g);
}

/* steal_from_deep_queue() took `took` of routee 0's 64: the thief runs
 * one and holds the rest, routee 0 keeps the others. */
static void assert_steal_took(bool fast, bool slept, int64_t read_ago_ns, int64_t took)
{
    int64_t thief, victim;

    steal_from_deep_queue(fast, slept, read_ago_ns, &thief, &victim);
    cr_assert_eq(thief, took - 1, "the thief holds %lld, not %lld (%lld taken, one running)",
                 (long long)thief, (long long)(took - 1), (long long)took);
    cr_assert_eq(victim, 64 - took, "routee 0 kept %lld, not %lld", (long long)victim,
                 (long long)(64 - took));
}

/* The pace's read dated a second ahead in the tests that want it fresh:
 * fresh however long the test takes to queue the jobs
 * (RP__STEAL_FRESH_NS is 10 us). */
#define FRESH_READ (-1000000000LL)

Test(thief, a_thief_at_a_fast_pace_takes_half_a_deep_queue_up_to_32)
{
    assert_steal_took(true, false, FRESH_READ, 32);
}

Test(thief, a_thief_at_a_slow_pace_takes_half_a_deep_queue_up_to_8)
{
    assert_steal_took(false, false, FRESH_READ, 8);
}

/* A sleep ends the pace: the woken thief's first steal takes 8. */
Test(thief, a_thief_that_slept_takes_up_to_8_whatever_its_pace_before)
{
    assert_steal_took(true, true, FRESH_READ, 8);
}

/* A pace read long ago (here 1 s: the thief ran long jobs since, or
 * waited) is not trusted: 8. */
Test(thief, a_thief_whose_pace_is_stale_takes_up_to_8)
{
    assert_steal_took(true, false, 1000000000LL, 8);
}

/*
 * The pace is measured at the rescue's clock reads (rp__steal_rescue):
 * the jobs routee 1 ran since the previous read (its run count against
 * pace_run) over the time since it (watch_read).  Routee 1 is blocked in
 * a gate job, so the test thread may make its reads for it (the gate's
 * lock orders them before the routee's own).  A million jobs in 1 us is
 * fast however slow this build; 31 jobs never; 40 jobs over a second
 * not.  After each read pace_run is the run count.
 */
Test(thief, the_pace_is_the_jobs_run_between_two_clock_reads)
{
    rp_pool_options o;
    rp_pool *pool;
    rp_routee *r1;
    bool searching = false;
    rp__job out;
    uint64_t run;
    gate g1;

    gate_init(&g1);
    two_routees(&o, "pace", to_zero);
    cr_assert_eq(rp_pool_create(&pool, &o), 0, "%s", rp_errmsg());
    r1 = &pool->routees[1];
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 1), gate_job, &g1), 0);
    cr_assert(gate_wait_entered(&g1, 1, 5000), "routee 1 never started its gate job");
    run = atomic_load(&r1->run);
    r1->watch = NULL; /* nothing watched: the read only measures and watches */
    r1->pace_run = run - 1000000;
    r1->watch_read = rp__now_ns() - 1000;
    r1->watch_at = r1->watch_read - 1000000000; /* the look is another clock: not the pace's */
    cr_assert_not(rp__steal_rescue(r1, &searching, &out));
    cr_assert(r1->fast, "a million jobs in 1 us is a fast pace");
    cr_assert_eq(r1->pace_run, run, "the read keeps the run count for the next");
    r1->pace_run = run - 31;
    r1->watch_read = rp__now_ns() - 10;
    cr_assert_not(rp__steal_rescue(r1, &searching, &out));
    cr_assert_not(r1->fast, "31 jobs say nothing");
    r1->pace_run = run - 40;
    r1->watch_read = rp__now_ns() - 1000000000;
    r1->watch_at = rp__now_ns();
    cr_assert_not(rp__steal_rescue(r1, &searching, &out));
    cr_assert_not(r1->fast, "40 jobs in a second is slow");
    cr_assert_not(searching);
    gate_open(&g1);
    cr_assert_eq(rp_pool_wait_idle(pool, 10000), 0, "%s", rp_errmsg());
    rp_pool_destroy(pool);
    gate_destroy(&g1);
}

/* rp__steal_pace_fast: 32 jobs in 5 us, or faster; never on no time. */
Test(thief, the_fast_pace_is_32_jobs_per_5_us_or_faster)
{
    cr_assert(rp__steal_pace_fast(32, 5000));
    cr_assert(rp__steal_pace_fast(64, 10000));
    cr_assert(rp__steal_pace_fast(1000, 1));
    cr_assert_not(rp__steal_pace_fast(32, 5001));
    cr_assert_not(rp__steal_pace_fast(31, 100), "fewer than 32 jobs say nothing");
    cr_assert_not(rp__steal_pace_fast(63, 10000));
    cr_assert_not(rp__steal_pace_fast(100, 0));
    cr_assert_not(rp__steal_pace_fast(100, -5));
    cr_assert_not(rp__steal_pace_fast(0, 1000000000));
}
