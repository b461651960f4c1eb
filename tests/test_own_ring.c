/* SPDX-License-Identifier: MIT */
/*
 * tests/test_own_ring.c - the owner ring (lib/mailbox.c, "The owner
 * ring"): a plain tell from a job to its own routee queues in the
 * mailbox's ring instead of a lane.  Every such job runs exactly once (or
 * is handed back), in FIFO order with the lanes' jobs, stays stealable,
 * counts in depth and in wait_idle(), is drained or rerouted when its
 * routee stops, and a bounded mailbox never uses the ring.  Linked with
 * the static library: the ring's counter (enqueued_owner) is private.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common.h"
#include "routee_record.h"

TestSuite(own_ring, .fini = rp_leak_check);

/* A custom strategy that sends every job to routee 0, unpinned. */
static int to_zero(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                   size_t *out)
{
    (void)user, (void)st, (void)routees, (void)n;
    out[0] = 0;
    return 1;
}

static rp_pool *pool_of(unsigned routees, bool steal, size_t capacity, rp_undelivered_fn undel)
{
    rp_pool_options o;
    rp_pool *p;

    rp_pool_options_init(&o);
    o.name = "ring";
    o.routees = routees;
    o.steal = steal;
    o.mailbox_capacity = capacity;
    o.strategy = rp_strategy_custom(to_zero, NULL);
    o.on_undelivered = undel;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    return p;
}

static uint64_t ring_jobs(rp_pool *p, unsigned i)
{
    return atomic_load(&rp_pool_routee(p, i)->mb.enqueued_owner);
}

static uint64_t lane_jobs(rp_pool *p, unsigned i)
{
    return atomic_load(&rp_pool_routee(p, i)->mb.enqueued);
}

/* ---- every job once ---- */

#define TREE_JOBS 20000
static rp_pool *tree_pool;
static atomic_uchar tree_ran[TREE_JOBS];
static atomic_int tree_failed;

/* Job i tells jobs 3i+1 .. 3i+3 (a tree): more at once than the ring
 * holds, so the lanes take the rest. */
static void tree_job(rp_job_ctx *ctx, void *arg)
{
    int i = (int)(intptr_t)arg;

    (void)ctx;
    atomic_fetch_add(&tree_ran[i], 1);
    for (int k = 1; k <= 3; k++) {
        int c = 3 * i + k;
        if (c < TREE_JOBS && rp_pool_submit(tree_pool, tree_job, (void *)(intptr_t)c) != 0)
            atomic_fetch_add(&tree_failed, 1);
    }
}

Test(own_ring, jobs_a_job_tells_its_own_routee_each_run_once_and_wait_idle_counts_them,
     .timeout = 60)
{
    rp_routee_stats st;

    tree_pool = pool_of(1, true, 0, NULL);
    cr_assert_eq(rp_pool_submit(tree_pool, tree_job, (void *)(intptr_t)0), 0);
    cr_assert_eq(rp_pool_wait_idle(tree_pool, 30000), 0);
    cr_assert_eq(atomic_load(&tree_failed), 0);
    for (int i = 0; i < TREE_JOBS; i++)
        cr_assert_eq(atomic_load(&tree_ran[i]), 1, "job %d ran %d times", i,
                     atomic_load(&tree_ran[i]));
    cr_assert_gt(ring_jobs(tree_pool, 0), 0, "no tell went through the ring");
    cr_assert_gt(lane_jobs(tree_pool, 0), 1, "a full ring sends tells to the lanes");
    cr_assert_eq(rp_routee_stats_get(rp_pool_routee(tree_pool, 0), &st), 0);
    cr_assert_eq(st.enqueued, TREE_JOBS, "enqueued counts the ring's jobs too");
    cr_assert_eq(st.run, TREE_JOBS);
    cr_assert_eq(rp_routee_depth(rp_pool_routee(tree_pool, 0)), 0);
    rp_pool_destroy(tree_pool);
}

/* ---- FIFO with the lanes ---- */

static rp_pool *fifo_pool;
static atomic_int fifo_step;
static int fifo_order[3];
static atomic_int fifo_n;

static void fifo_mark(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    fifo_order[atomic_fetch_add(&fifo_n, 1)] = (int)(intptr_t)arg;
}

/* Tells B1 to itself, lets the test thread queue C, then tells B2. */
static void fifo_teller(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    rp_pool_submit(fifo_pool, fifo_mark, (void *)(intptr_t)1);
    atomic_store(&fifo_step, 1);
    while (atomic_load(&fifo_step) != 2)
        sleep_ms(1);
    rp_pool_submit(fifo_pool, fifo_mark, (void *)(intptr_t)3);
}

Test(own_ring, jobs_from_the_ring_and_from_other_threads_run_in_the_order_they_were_queued,
     .timeout = 30)
{
    fifo_pool = pool_of(1, true, 0, NULL);
    cr_assert_eq(rp_pool_submit(fifo_pool, fifo_teller, NULL), 0);
    cr_assert(wait_atomic_ge(&fifo_step, 1, 10000));
    cr_assert_eq(rp_pool_submit(fifo_pool, fifo_mark, (void *)(intptr_t)2), 0);
    atomic_store(&fifo_step, 2);
    cr_assert_eq(rp_pool_wait_idle(fifo_pool, 10000), 0);
    cr_assert_eq(atomic_load(&fifo_n), 3);
    cr_assert_eq(ring_jobs(fifo_pool, 0), 2, "both of the job's tells went through the ring");
    cr_assert(fifo_order[0] == 1 && fifo_order[1] == 2 && fifo_order[2] == 3,
              "order %d %d %d, queued 1 2 3", fifo_order[0], fifo_order[1], fifo_order[2]);
    rp_pool_destroy(fifo_pool);
}

/* ---- stealable ---- */

static rp_pool *steal_pool;
static atomic_int told_ran_on = -1;
static atomic_int told_done;

static void told_job(rp_job_ctx *ctx, void *arg)
{
    (void)arg;
    atomic_store(&told_ran_on, rp_job_routee(ctx));
    atomic_store(&told_done, 1);
}

/* Tells itself a job, then waits (up to 10 s) until that job ran. */
static void tell_and_wait(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    rp_pool_submit(steal_pool, told_job, NULL);
    for (int64_t end = now_ms() + 10000; !atomic_load(&told_done) && now_ms() < end;)
        sleep_ms(1);
}

Test(own_ring, a_job_told_to_its_own_routee_is_stolen_while_the_teller_keeps_running,
     .timeout = 30)
{
    rp_routee_stats st;

    steal_pool = pool_of(2, true, 0, NULL);
    cr_assert_eq(rp_pool_submit(steal_pool, tell_and_wait, NULL), 0);
    cr_assert_eq(rp_pool_wait_idle(steal_pool, 20000), 0);
    cr_assert_eq(atomic_load(&told_done), 1, "the told job waited for its teller");
    cr_assert_eq(atomic_load(&told_ran_on), 1, "the idle routee took it");
    cr_assert_eq(ring_jobs(steal_pool, 0), 1);
    cr_assert_eq(rp_routee_stats_get(rp_pool_routee(steal_pool, 0), &st), 0);
    cr_assert_eq(st.stolen_from, 1);
    cr_assert_eq(st.enqueued, 2);
    rp_pool_destroy(steal_pool);
}

/* ---- stopped: rerouted or handed back ---- */

#define STOP_TOLD 5
static rp_pool *stop_pool;
static gate stop_gate, busy_gate;
static atomic_int stop_ran_on[2];
static atomic_int stop_undelivered, stop_other_reason;

static void stop_told(rp_job_ctx *ctx, void *arg)
{
    (void)arg;
    atomic_fetch_add(&stop_ran_on[rp_job_routee(ctx)], 1);
}

static void stop_undel(void *arg, int reason, void *user)
{
    (void)arg, (void)user;
    if (reason == RP_ESTOPPED)
        atomic_fetch_add(&stop_undelivered, 1);
    else
        atomic_fetch_add(&stop_other_reason, 1);
}

/* Tells itself STOP_TOLD jobs, then blocks on stop_gate. */
static void tell_then_block(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    for (int i = 0; i < STOP_TOLD; i++)
        rp_pool_submit(stop_pool, stop_told, NULL);
    gate_pass(&stop_gate);
}

static void block_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    gate_pass(arg);
}

/* Routee 1 is held busy (it cannot steal), routee 0's job fills its ring
 * and blocks, routee 0 is stopped, then both go on. */
static void stop_with_a_full_ring(bool steal)
{
    rp_routee_stats st;

    atomic_store(&stop_ran_on[0], 0);
    atomic_store(&stop_ran_on[1], 0);
    atomic_store(&stop_undelivered, 0);
    atomic_store(&stop_other_reason, 0);
    gate_init(&stop_gate);
    gate_init(&busy_gate);
    stop_pool = pool_of(2, steal, 0, stop_undel);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(stop_pool, 1), block_job, &busy_gate), 0);
    cr_assert(gate_wait_entered(&busy_gate, 1, 10000));
    cr_assert_eq(rp_pool_submit(stop_pool, tell_then_block, NULL), 0);
    cr_assert(gate_wait_entered(&stop_gate, 1, 10000));
    cr_assert_eq(ring_jobs(stop_pool, 0), STOP_TOLD);
    cr_assert_eq(rp_routee_depth(rp_pool_routee(stop_pool, 0)), STOP_TOLD,
                 "the ring's jobs count in depth");
    cr_assert_eq(rp_routee_stop(rp_pool_routee(stop_pool, 0)), 0);
    gate_open(&stop_gate);
    gate_open(&busy_gate);
    cr_assert_eq(rp_pool_wait_idle(stop_pool, 10000), 0);
    cr_assert_eq(atomic_load(&stop_ran_on[0]), 0, "a stopped routee runs nothing more");
    cr_assert_eq(atomic_load(&stop_other_reason), 0);
    cr_assert_eq(rp_routee_stats_get(rp_pool_routee(stop_pool, 0), &st), 0);
    if (steal) {
        cr_assert_eq(atomic_load(&stop_ran_on[1]), STOP_TOLD, "rerouted to the live routee");
        cr_assert_eq(atomic_load(&stop_undelivered), 0);
        /* Routee 1, let go, may steal some before routee 0 retires. */
        cr_assert_eq(st.rerouted + st.stolen_from, STOP_TOLD);
    } else {
        cr_assert_eq(atomic_load(&stop_ran_on[1]), 0);
        cr_assert_eq(atomic_load(&stop_undelivered), STOP_TOLD, "handed back RP_ESTOPPED");
    }
    rp_pool_destroy(stop_pool);
    gate_destroy(&stop_gate);
    gate_destroy(&busy_gate);
}

Test(own_ring, a_stopped_routee_reroutes_its_rings_jobs_with_stealing_on, .timeout = 30)
{
    stop_with_a_full_ring(true);
}

Test(own_ring, a_stopped_routee_hands_back_its_rings_jobs_with_stealing_off, .timeout = 30)
{
    stop_with_a_full_ring(false);
}

/* ---- shutdown drains ---- */

static rp_pool *drain_pool;
static atomic_int drain_ran, drain_told;

static void drain_count(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    atomic_fetch_add(&drain_ran, 1);
}

static void drain_teller(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    for (int i = 0; i < 10; i++)
        if (rp_pool_submit(drain_pool, drain_count, NULL) == 0)
            atomic_fetch_add(&drain_told, 1);
    atomic_fetch_add(&drain_ran, 1);
}

Test(own_ring, destroying_the_pool_runs_the_jobs_left_in_a_ring, .timeout = 30)
{
    drain_pool = pool_of(1, true, 0, NULL);
    cr_assert_eq(rp_pool_submit(drain_pool, drain_teller, NULL), 0);
    /* Destroyed once the teller told all 10 (a tell after the shutdown
     * began would be refused), perhaps before any of them ran. */
    cr_assert(wait_atomic_ge(&drain_told, 10, 10000));
    rp_pool_destroy(drain_pool);
    cr_assert_eq(atomic_load(&drain_ran), 11);
}

/* ---- bounded mailboxes keep their bound ---- */

static rp_pool *bound_pool;
static atomic_int bound_ok, bound_full, bound_other, bound_ran;

static void bound_count(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    atomic_fetch_add(&bound_ran, 1);
}

static void bound_teller(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    for (int i = 0; i < 10; i++) {
        int rc = rp_pool_submit(bound_pool, bound_count, NULL);
        atomic_fetch_add(rc == 0 ? &bound_ok : rc == RP_EFULL ? &bound_full : &bound_other, 1);
    }
}

Test(own_ring, a_bounded_mailbox_takes_no_tell_into_the_ring_and_keeps_its_bound,
     .timeout = 30)
{
    bound_pool = pool_of(1, true, 4, NULL);
    cr_assert_eq(rp_pool_submit(bound_pool, bound_teller, NULL), 0);
    cr_assert_eq(rp_pool_wait_idle(bound_pool, 10000), 0);
    cr_assert_eq(atomic_load(&bound_ok), 4);
    cr_assert_eq(atomic_load(&bound_full), 6);
    cr_assert_eq(atomic_load(&bound_other), 0);
    cr_assert_eq(atomic_load(&bound_ran), 4);
    cr_assert_eq(ring_jobs(bound_pool, 0), 0);
    rp_pool_destroy(bound_pool);
}

/* ---- smallest-mailbox from a routee ---- */

#define SM_CHAIN 20
static rp_pool *sm_pool;
static atomic_int sm_on[2];
static atomic_int sm_left;

/* Counts where it ran, then tells the next link through the pool's
 * smallest-mailbox router. */
static void sm_link(rp_job_ctx *ctx, void *arg)
{
    (void)arg;
    atomic_fetch_add(&sm_on[rp_job_routee(ctx)], 1);
    if (atomic_fetch_sub(&sm_left, 1) > 1)
        rp_pool_submit(sm_pool, sm_link, NULL);
}

Test(own_ring, smallest_mailbox_from_a_routee_breaks_a_tie_toward_that_routee, .timeout = 30)
{
    rp_pool_options o;
    gate busy;
    rp_routee_stats st;

    rp_pool_options_init(&o);
    o.name = "sm";
    o.routees = 2;
    o.strategy = rp_strategy_smallest_mailbox();
    cr_assert_eq(rp_pool_create(&sm_pool, &o), 0, "%s", rp_errmsg());
    gate_init(&busy);
    /* Routee 1 runs a job (score 1, as the teller's). */
    cr_assert_eq(rp_routee_tell(rp_pool_routee(sm_pool, 1), block_job, &busy), 0);
    cr_assert(gate_wait_entered(&busy, 1, 10000));
    atomic_store(&sm_left, SM_CHAIN);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(sm_pool, 0), sm_link, NULL), 0);
    for (int64_t end = now_ms() + 10000; atomic_load(&sm_left) > 0 && now_ms() < end;)
        sleep_ms(1);
    cr_assert_eq(atomic_load(&sm_on[0]), SM_CHAIN, "every link ran on the teller's routee");
    cr_assert_eq(ring_jobs(sm_pool, 0), SM_CHAIN - 1, "each tie went to the teller's ring");
    cr_assert_eq(rp_routee_stats_get(rp_pool_routee(sm_pool, 1), &st), 0);
    cr_assert_eq(st.enqueued, 1, "routee 1 got nothing but its own job");
    gate_open(&busy);
    cr_assert_eq(rp_pool_wait_idle(sm_pool, 10000), 0);
    rp_pool_destroy(sm_pool);
    gate_destroy(&busy);
}
