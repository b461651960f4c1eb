/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mailbox.c - bounded mailboxes and their overflow policies.
 *
 * Each test uses a pool of one routee (no other routee can steal), holds it
 * on a gate job that is already running (so it does not count toward the
 * capacity), queues jobs a..e behind it, and then checks which jobs ran, in
 * what order, which came back through on_undelivered with which reason,
 * exactly once each, and what the routee's counters say.
 */
#include <criterion/criterion.h>

#include "common.h"

TestSuite(mailbox, .fini = rp_leak_check);

static tlog LOG;

static void setup(void)
{
    tlog_init(&LOG);
}

typedef struct held {
    rp_pool *pool;
    gate g;
    probe hold;
    probe job[5]; /* a..e, tags 0..4 */
} held;

/* A one-routee pool with the given capacity and policy, its routee held on
 * a running gate job. */
static void held_init(held *h, size_t capacity, int overflow)
{
    cr_assert_eq(make_pool(&h->pool, "mb", 1, capacity, overflow,
                           rp_strategy_round_robin()), 0, "%s", rp_errmsg());
    gate_init(&h->g);
    probe_init(&h->hold, &LOG, -1, &h->g);
    cr_assert_eq(rp_pool_submit(h->pool, probe_job, &h->hold), 0);
    cr_assert(gate_wait_entered(&h->g, 1, 5000));
    cr_assert_eq(rp_routee_depth(rp_pool_routee(h->pool, 0)), 0);
    probe_init_n(h->job, 5, &LOG, 0, NULL);
}

static void held_release(held *h)
{
    gate_open(&h->g);
    cr_assert_eq(rp_pool_wait_idle(h->pool, 5000), 0);
}

static void held_destroy(held *h)
{
    rp_pool_destroy(h->pool);
    gate_destroy(&h->g);
}

static rp_routee_stats held_stats(held *h)
{
    rp_routee_stats st;
    cr_assert_eq(rp_routee_stats_get(rp_pool_routee(h->pool, 0), &st), 0);
    return st;
}

static void assert_ran_in_order(const int *tags, int n)
{
    cr_assert_eq(tlog_nrun(&LOG), n, "%d jobs ran, want %d", tlog_nrun(&LOG),
                 n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(LOG.run_tag[i], tags[i], "run %d was job %d, want %d", i,
                     LOG.run_tag[i], tags[i]);
}

static void assert_handed_back(held *h, int i, int reason)
{
    cr_assert_eq(probe_runs(&h->job[i]), 0, "job %c ran", 'a' + i);
    cr_assert_eq(probe_undel(&h->job[i]), 1, "job %c handed back %d times",
                 'a' + i, probe_undel(&h->job[i]));
    cr_assert_eq(atomic_load(&h->job[i].reason), reason, "job %c: %s", 'a' + i,
                 rp_err_name(atomic_load(&h->job[i].reason)));
}

static void assert_ran_once(held *h, int i)
{
    cr_assert_eq(probe_runs(&h->job[i]), 1, "job %c ran %d times", 'a' + i,
                 probe_runs(&h->job[i]));
    cr_assert_eq(probe_undel(&h->job[i]), 0, "job %c handed back", 'a' + i);
}

Test(mailbox, drop_head_capacity_3_keeps_the_newest, .init = setup,
     .timeout = 10)
{
    held h;
    held_init(&h, 3, RP_OVERFLOW_DROP_HEAD);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(rp_pool_submit(h.pool, probe_job, &h.job[i]), 0,
                     "drop-head accepts job %c", 'a' + i);
        cr_assert_eq(rp_routee_depth(rp_pool_routee(h.pool, 0)),
                     i < 3 ? i + 1 : 3);
    }
    /* Evictions are decided, and handed back, by the submitter. */
    cr_assert_eq(probe_undel(&h.job[0]), 1, "a not evicted by d's submit");
    cr_assert_eq(probe_undel(&h.job[1]), 1, "b not evicted by e's submit");
    held_release(&h);

    const int order[] = {-1, 2, 3, 4};
    assert_ran_in_order(order, 4);
    assert_handed_back(&h, 0, RP_EEVICTED);
    assert_handed_back(&h, 1, RP_EEVICTED);
    for (int i = 2; i < 5; i++)
        assert_ran_once(&h, i);
    cr_assert_eq(tlog_nundel(&LOG), 2);
    cr_assert_eq(LOG.undel_tag[0], 0, "a is evicted first");
    cr_assert_eq(LOG.undel_tag[1], 1);

    const rp_routee_stats st = held_stats(&h);
    cr_assert_eq(st.enqueued, 6u);
    cr_assert_eq(st.run, 4u);
    cr_assert_eq(st.dropped, 2u);
    cr_assert_eq(st.undelivered, 2u);
    cr_assert_eq(st.rejected, 0u);
    held_destroy(&h);
}

Test(mailbox, drop_new_capacity_2_keeps_the_oldest, .init = setup,
     .timeout = 10)
{
    held h;
    held_init(&h, 2, RP_OVERFLOW_DROP_NEW);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(rp_pool_submit(h.pool, probe_job, &h.job[i]), 0,
                     "drop-new accepts job %c", 'a' + i);
    cr_assert_eq(rp_routee_depth(rp_pool_routee(h.pool, 0)), 2);
    for (int i = 2; i < 5; i++)
        cr_assert_eq(probe_undel(&h.job[i]), 1, "job %c not dropped at "
                     "submit", 'a' + i);
    held_release(&h);

    const int order[] = {-1, 0, 1};
    assert_ran_in_order(order, 3);
    assert_ran_once(&h, 0);
    assert_ran_once(&h, 1);
    for (int i = 2; i < 5; i++)
        assert_handed_back(&h, i, RP_EDROPPED);
    cr_assert_eq(tlog_nundel(&LOG), 3);

    const rp_routee_stats st = held_stats(&h);
    cr_assert_eq(st.enqueued, 3u, "dropped jobs never entered the mailbox");
    cr_assert_eq(st.run, 3u);
    cr_assert_eq(st.dropped, 3u);
    cr_assert_eq(st.undelivered, 3u);
    cr_assert_eq(st.rejected, 0u);
    held_destroy(&h);
}

Test(mailbox, reject_capacity_2_refuses_the_third_with_efull, .init = setup,
     .timeout = 10)
{
    held h;
    held_init(&h, 2, RP_OVERFLOW_REJECT);
    cr_assert_eq(rp_pool_submit(h.pool, probe_job, &h.job[0]), 0);
    cr_assert_eq(rp_pool_submit(h.pool, probe_job, &h.job[1]), 0);
    cr_assert_eq(rp_pool_submit(h.pool, probe_job, &h.job[2]), RP_EFULL);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(h.pool, 0), probe_job,
                                &h.job[3]), RP_EFULL);
    cr_assert_eq(rp_router_tell(rp_pool_router(h.pool), probe_job, &h.job[4]),
                 RP_EFULL);
    held_release(&h);

    const int order[] = {-1, 0, 1};
    assert_ran_in_order(order, 3);
    for (int i = 2; i < 5; i++) {
        cr_assert_eq(probe_runs(&h.job[i]), 0);
        cr_assert_eq(probe_undel(&h.job[i]), 0, "a refused job (%c) is not "
                     "handed back", 'a' + i);
    }
    cr_assert_eq(tlog_nundel(&LOG), 0);

    const rp_routee_stats st = held_stats(&h);
    cr_assert_eq(st.enqueued, 3u);
    cr_assert_eq(st.run, 3u);
    cr_assert_eq(st.rejected, 3u);
    cr_assert_eq(st.dropped, 0u);
    cr_assert_eq(st.undelivered, 0u);

    /* Once drained, the mailbox accepts again. */
    probe again;
    probe_init(&again, &LOG, 9, NULL);
    cr_assert_eq(rp_pool_submit(h.pool, probe_job, &again), 0);
    cr_assert_eq(rp_pool_wait_idle(h.pool, 5000), 0);
    cr_assert_eq(probe_runs(&again), 1);
    held_destroy(&h);
}

Test(mailbox, drop_head_capacity_1_keeps_only_the_last, .init = setup,
     .timeout = 10)
{
    held h;
    held_init(&h, 1, RP_OVERFLOW_DROP_HEAD);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(h.pool, 0), probe_job,
                                    &h.job[i]), 0);
    held_release(&h);
    const int order[] = {-1, 4};
    assert_ran_in_order(order, 2);
    for (int i = 0; i < 4; i++)
        assert_handed_back(&h, i, RP_EEVICTED);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(LOG.undel_tag[i], i, "evictions out of order");
    held_destroy(&h);
}

Test(mailbox, overflow_is_ignored_when_unbounded, .init = setup,
     .timeout = 10)
{
    held h;
    held_init(&h, 0, RP_OVERFLOW_DROP_NEW);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(rp_pool_submit(h.pool, probe_job, &h.job[i]), 0);
    cr_assert_eq(rp_routee_depth(rp_pool_routee(h.pool, 0)), 5);
    held_release(&h);
    const int order[] = {-1, 0, 1, 2, 3, 4};
    assert_ran_in_order(order, 6);
    cr_assert_eq(tlog_nundel(&LOG), 0);
    held_destroy(&h);
}

Test(mailbox, stop_hands_back_each_queued_job_once_with_bounded_mailbox,
     .init = setup, .timeout = 10)
{
    /* Bounded drop-head plus a stop: every job gets exactly one fate. */
    held h;
    held_init(&h, 2, RP_OVERFLOW_DROP_HEAD);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(rp_pool_submit(h.pool, probe_job, &h.job[i]), 0);
    cr_assert_eq(rp_routee_stop(rp_pool_routee(h.pool, 0)), 0);
    held_release(&h);
    for (int i = 0; i < 3; i++)
        assert_handed_back(&h, i, RP_EEVICTED);
    for (int i = 3; i < 5; i++)
        assert_handed_back(&h, i, RP_ESTOPPED);
    cr_assert_eq(tlog_nrun(&LOG), 1);
    cr_assert_eq(tlog_nundel(&LOG), 5);
    const rp_routee_stats st = held_stats(&h);
    cr_assert_eq(st.enqueued, 6u);
    cr_assert_eq(st.run, 1u);
    cr_assert_eq(st.dropped, 3u);
    cr_assert_eq(st.undelivered, 5u);
    held_destroy(&h);
}

/* on_undelivered may submit: dropped jobs are retried on a second pool. */
static rp_pool *RETRY_POOL;
static atomic_int RETRIED;

static void retry_elsewhere(void *arg, int reason, void *user)
{
    (void)user;
    if (reason == RP_EDROPPED &&
        rp_pool_submit(RETRY_POOL, probe_job, arg) == 0)
        atomic_fetch_add(&RETRIED, 1);
}

Test(mailbox, undelivered_callback_may_submit_elsewhere, .init = setup,
     .timeout = 10)
{
    cr_assert_eq(make_pool(&RETRY_POOL, "retry", 2, 0, 0,
                           rp_strategy_round_robin()), 0);
    atomic_init(&RETRIED, 0);
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = "full";
    o.routees = 1;
    o.mailbox_capacity = 1;
    o.overflow = RP_OVERFLOW_DROP_NEW;
    o.on_undelivered = retry_elsewhere;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0);
    gate g;
    gate_init(&g);
    probe hold, job[5];
    probe_init(&hold, &LOG, -1, &g);
    probe_init_n(job, 5, &LOG, 0, NULL);
    cr_assert_eq(rp_pool_submit(p, probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000));
    for (int i = 0; i < 5; i++)
        cr_assert_eq(rp_pool_submit(p, probe_job, &job[i]), 0);
    cr_assert_eq(atomic_load(&RETRIED), 4);
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(rp_pool_wait_idle(RETRY_POOL, 5000), 0);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(probe_runs(&job[i]), 1, "job %d ran %d times", i,
                     probe_runs(&job[i]));
        cr_assert_eq(atomic_load(&job[i].pool), i == 0 ? p : RETRY_POOL);
    }
    rp_pool_destroy(p);
    rp_pool_destroy(RETRY_POOL);
    gate_destroy(&g);
}
