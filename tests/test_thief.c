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

#include "common.h"
#include "clock.h"
#include "pool_record.h"
#include "routee_record.h"
#include "steal.h"

TestSuite(thief, .fini = rp_leak_check);

static gate g;
static atomic_int ran, ran_on_1;

static void gate_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    gate_pass(arg);
}

static void count_job(rp_job_ctx *ctx, void *arg)
{
    (void)arg;
    if (rp_job_routee(ctx) == 1)
        atomic_fetch_add(&ran_on_1, 1);
    atomic_fetch_add(&ran, 1);
}

static int to_zero(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                   size_t *out)
{
    (void)user, (void)st, (void)routees, (void)n;
    out[0] = 0;
    return 1;
}

/* Routee 0 blocked in the gate, routee 1 asleep with its idle bit set. */
static rp_pool *blocked_pool(void)
{
    rp_pool_options o;
    rp_pool *pool;

    gate_init(&g);
    atomic_store(&ran, 0);
    atomic_store(&ran_on_1, 0);
    rp_pool_options_init(&o);
    o.routees = 2;
    o.name = "thief";
    o.steal = true;
    o.idle_spin_us = 0; /* sleep at once */
    o.strategy = rp_strategy_custom(to_zero, NULL);
    cr_assert_eq(rp_pool_create(&pool, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_routee_tell(rp_pool_routee(pool, 0), gate_job, &g), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000), "the gate job never started");
    for (int i = 0; i < 5000 && !(atomic_load(&pool->idle_bits[0]) & 2); i++)
        sleep_ms(1);
    cr_assert(atomic_load(&pool->idle_bits[0]) & 2, "routee 1 never went idle");
    sleep_ms(20); /* inside FUTEX_WAIT by now */
    return pool;
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
