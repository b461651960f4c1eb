/* SPDX-License-Identifier: MIT */
/*
 * test_batch.c - rp_router_tell_batch() and rp_pool_submit_batch(): a batch
 * goes where the same tells would go, every job runs or comes back exactly
 * once, and bad input is refused before anything is routed.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "common.h"

TestSuite(batch, .fini = rp_leak_check);

static tlog LOG;

static void setup(void)
{
    tlog_init(&LOG);
}

static void *probe_args[10000];

/* args[i] = &ps[i] for n probes. */
static void *const *args_of(probe *ps, size_t n)
{
    cr_assert_leq(n, sizeof probe_args / sizeof probe_args[0]);
    for (size_t i = 0; i < n; i++)
        probe_args[i] = &ps[i];
    return probe_args;
}

/* Every probe ran exactly once and none came back. */
static void assert_all_ran_once(probe *ps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(probe_runs(&ps[i]), 1, "job %zu ran %d times", i, probe_runs(&ps[i]));
        cr_assert_eq(probe_undel(&ps[i]), 0, "job %zu was handed back", i);
    }
}

Test(batch, round_robin_batch_lands_like_tells_in_order_per_routee, .init = setup,
     .timeout = 20)
{
    /* Stealing off: the test checks where the router put each job. */
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = "rrb";
    o.routees = 3;
    o.steal = false;
    o.on_undelivered = probe_undelivered;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    gate g;
    gate_init(&g);
    probe holds[3], pr[9];
    cr_assert(block_all_routees(p, holds, &LOG, &g));
    probe_init_n(pr, 9, &LOG, 0, NULL);

    cr_assert_eq(rp_pool_submit_batch(p, probe_job, args_of(pr, 9), 9), 0, "%s", rp_errmsg());
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(rp_routee_depth(rp_pool_routee(p, i)), 3, "routee %zu", i);
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    assert_all_ran_once(pr, 9);
    /* Job i goes to routee i % 3 (a tell with index i would), and each
     * routee runs its jobs in submission order. */
    int last[3] = {-1, -1, -1};
    for (int k = 0; k < tlog_nrun(&LOG); k++) {
        int tag = LOG.run_tag[k], r = LOG.run_routee[k];
        if (tag < 0)
            continue; /* a gate job */
        cr_assert_eq(r, tag % 3, "job %d ran on routee %d", tag, r);
        cr_assert_gt(tag, last[r], "routee %d ran job %d after %d", r, tag, last[r]);
        last[r] = tag;
    }
    rp_pool_destroy(p);
    gate_destroy(&g);
}

static probe big[10000];

Test(batch, ten_thousand_jobs_with_stealing_each_run_exactly_once, .timeout = 60)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "bigb", 4, 0, 0, rp_strategy_round_robin()), 0);
    probe_init_n(big, 10000, NULL, 0, NULL);
    void *const *args = args_of(big, 10000);

    /* Uneven slices, including an empty one and one past a chunk. */
    size_t sizes[] = {0, 1, 63, 64, 65, 1000, 8807}, off = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        cr_assert_eq(rp_pool_submit_batch(p, probe_job, args + off, sizes[s]), 0, "%s", rp_errmsg());
        off += sizes[s];
    }
    cr_assert_eq(off, 10000);
    cr_assert_eq(rp_pool_wait_idle(p, 20000), 0);
    assert_all_ran_once(big, 10000);
    uint64_t run = 0, enq = 0;
    for (size_t i = 0; i < 4; i++) {
        rp_routee_stats st;
        cr_assert_eq(rp_routee_stats_get(rp_pool_routee(p, i), &st), 0);
        run += st.run;
        enq += st.enqueued;
        cr_assert_eq(st.enqueued, 2500, "routee %zu was given %llu jobs", i,
                     (unsigned long long)st.enqueued);
    }
    cr_assert_eq(run, 10000);
    cr_assert_eq(enq, 10000);
    rp_pool_destroy(p);
}

Test(batch, smallest_mailbox_batch_spreads_over_blocked_routees, .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "smb", 4, 0, 0, rp_strategy_smallest_mailbox()), 0);
    gate g;
    gate_init(&g);
    probe holds[4], pr[8];
    cr_assert(block_all_routees(p, holds, &LOG, &g));
    probe_init_n(pr, 8, &LOG, 0, NULL);

    cr_assert_eq(rp_pool_submit_batch(p, probe_job, args_of(pr, 8), 8), 0, "%s", rp_errmsg());
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(rp_routee_depth(rp_pool_routee(p, i)), 2, "routee %zu", i);
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    assert_all_ran_once(pr, 8);
    rp_pool_destroy(p);
    gate_destroy(&g);
}

/* One routee blocked, capacity 5: a batch of 20 under the given policy. */
static void overflow_case(int policy, int expect_rc, int expect_reason)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "ovb", 1, 5, policy, rp_strategy_round_robin()), 0);
    gate g;
    gate_init(&g);
    probe hold, pr[20];
    cr_assert(block_all_routees(p, &hold, &LOG, &g));
    probe_init_n(pr, 20, &LOG, 0, NULL);

    int rc = rp_pool_submit_batch(p, probe_job, args_of(pr, 20), 20);
    cr_assert_eq(rc, expect_rc, "got %s", rp_err_name(rc));
    cr_assert_eq(rp_routee_depth(rp_pool_routee(p, 0)), 5);
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    int ran = 0, back = 0;
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(probe_runs(&pr[i]) + probe_undel(&pr[i]), 1, "job %d: ran %d, back %d", i,
                     probe_runs(&pr[i]), probe_undel(&pr[i]));
        ran += probe_runs(&pr[i]);
        if (probe_undel(&pr[i])) {
            back++;
            cr_assert_eq(atomic_load(&pr[i].reason), expect_reason, "job %d came back with %s", i,
                         rp_err_name(atomic_load(&pr[i].reason)));
        }
    }
    cr_assert_eq(ran, 5);
    cr_assert_eq(back, 15);
    rp_pool_destroy(p);
    gate_destroy(&g);
}

Test(batch, full_mailbox_reject_hands_the_rest_back_with_efull, .init = setup, .timeout = 20)
{
    overflow_case(RP_OVERFLOW_REJECT, RP_EFULL, RP_EFULL);
}

Test(batch, full_mailbox_drop_new_drops_the_rest_and_returns_0, .init = setup, .timeout = 20)
{
    overflow_case(RP_OVERFLOW_DROP_NEW, 0, RP_EDROPPED);
}

Test(batch, drop_head_keeps_the_newest_five, .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "dhb", 1, 5, RP_OVERFLOW_DROP_HEAD, rp_strategy_round_robin()), 0);
    gate g;
    gate_init(&g);
    probe hold, pr[20];
    cr_assert(block_all_routees(p, &hold, &LOG, &g));
    probe_init_n(pr, 20, &LOG, 0, NULL);
    cr_assert_eq(rp_pool_submit_batch(p, probe_job, args_of(pr, 20), 20), 0, "%s", rp_errmsg());
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(probe_runs(&pr[i]), i >= 15, "job %d ran %d times", i, probe_runs(&pr[i]));
        cr_assert_eq(probe_undel(&pr[i]), i < 15, "job %d handed back %d times", i,
                     probe_undel(&pr[i]));
    }
    rp_pool_destroy(p);
    gate_destroy(&g);
}

Test(batch, after_shutdown_every_job_comes_back_with_eshutdown, .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "sdb", 2, 0, 0, rp_strategy_round_robin()), 0);
    cr_assert_eq(rp_pool_shutdown(p, RP_SHUTDOWN_DRAIN), 0);
    probe pr[100];
    probe_init_n(pr, 100, &LOG, 0, NULL);
    cr_assert_eq(rp_pool_submit_batch(p, probe_job, args_of(pr, 100), 100), RP_ESHUTDOWN);
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(probe_runs(&pr[i]), 0);
        cr_assert_eq(probe_undel(&pr[i]), 1, "job %d", i);
        cr_assert_eq(atomic_load(&pr[i].reason), RP_ESHUTDOWN);
    }
    rp_pool_destroy(p);
}

Test(batch, stopped_routee_gets_nothing_and_nothing_is_lost, .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "stb", 3, 0, 0, rp_strategy_round_robin()), 0);
    cr_assert_eq(rp_routee_stop(rp_pool_routee(p, 1)), 0);
    probe pr[300];
    probe_init_n(pr, 300, &LOG, 0, NULL);
    cr_assert_eq(rp_pool_submit_batch(p, probe_job, args_of(pr, 300), 300), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    assert_all_ran_once(pr, 300);
    for (int i = 0; i < 300; i++)
        cr_assert_neq(probe_routee(&pr[i]), 1, "job %d ran on the stopped routee", i);
    rp_pool_destroy(p);
}

Test(batch, broadcast_router_fans_each_job_out, .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "bcb", 3, 0, 0, rp_strategy_broadcast()), 0);
    probe pr[10];
    probe_init_n(pr, 10, &LOG, 0, NULL);
    cr_assert_eq(rp_pool_submit_batch(p, probe_job, args_of(pr, 10), 10), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(probe_runs(&pr[i]), 3, "job %d ran %d times", i, probe_runs(&pr[i]));
    rp_pool_destroy(p);
}

Test(batch, bad_input_is_refused_before_anything_is_routed, .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "bad", 2, 0, 0, rp_strategy_round_robin()), 0);
    probe pr[2];
    probe_init_n(pr, 2, &LOG, 0, NULL);
    void *const *args = args_of(pr, 2);

    cr_assert_eq(rp_pool_submit_batch(NULL, probe_job, args, 2), RP_EINVAL);
    cr_assert_eq(rp_router_tell_batch(NULL, probe_job, args, 2), RP_EINVAL);
    cr_assert_eq(rp_pool_submit_batch(p, NULL, args, 2), RP_EINVAL);
    cr_assert_eq(rp_pool_submit_batch(p, probe_job, NULL, 2), RP_EINVAL);
    cr_assert_eq(rp_pool_submit_batch(p, probe_job, NULL, 0), 0, "an empty batch is fine");

    rp_router_options o;
    rp_router_options_init(&o);
    o.strategy = rp_strategy_consistent_hash(1);
    rp_router *ch = NULL;
    cr_assert_eq(rp_router_create(&ch, p, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_router_tell_batch(ch, probe_job, args, 2), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "key") != NULL, "message: %s", rp_errmsg());
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(probe_runs(&pr[i]) + probe_undel(&pr[i]), 0, "job %d was touched", i);
    rp_router_destroy(ch);
    rp_pool_destroy(p);
}

/* ---- record reuse ---- */

static uint64_t arena_bytes(rp_pool *p)
{
    rp_metrics m;
    cr_assert_eq(rp_metrics_snapshot(p, &m), 0, "%s", rp_errmsg());
    const uint64_t bytes = m.memory_bytes;
    rp_metrics_release(&m);
    return bytes;
}

/*
 * The same backlog again must not allocate: every record freed by the
 * owners (magazines, handed over when full or when the owner goes idle),
 * by thieves (their own magazine) or into the freelist is found again by
 * the producers.  Each round queues exactly 3000 jobs behind gate jobs
 * (single and batch submits), so its high-water mark is the same; the
 * arena (0 when it is not jemalloc's, as under ASan) must stop growing
 * after the first round.
 */
Test(batch, identical_backlogs_reuse_every_record, .init = setup, .timeout = 60)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "reuse", 2, 0, 0, rp_strategy_round_robin()), 0);
    enum { ROUNDS = 8, SINGLE = 1000, BATCHED = 2000 };
    static probe pr[SINGLE + BATCHED];
    uint64_t after_first = 0;

    for (int round = 0; round < ROUNDS; round++) {
        gate g;
        gate_init(&g);
        probe holds[2];
        cr_assert(block_all_routees(p, holds, &LOG, &g));
        probe_init_n(pr, SINGLE + BATCHED, &LOG, 0, NULL);
        for (size_t i = 0; i < SINGLE; i++)
            cr_assert_eq(rp_pool_submit(p, probe_job, &pr[i]), 0, "%s", rp_errmsg());
        for (size_t i = SINGLE; i < SINGLE + BATCHED; i += 100)
            cr_assert_eq(rp_pool_submit_batch(p, probe_job, args_of(&pr[i], 100), 100), 0,
                         "%s", rp_errmsg());
        gate_open(&g);
        cr_assert_eq(rp_pool_wait_idle(p, 20000), 0, "round %d did not finish", round);
        assert_all_ran_once(pr, SINGLE + BATCHED);
        gate_destroy(&g);
        if (round == 0)
            after_first = arena_bytes(p);
        else
            cr_assert_eq(arena_bytes(p), after_first,
                         "round %d grew the arena from %llu to %llu bytes", round,
                         (unsigned long long)after_first, (unsigned long long)arena_bytes(p));
    }
    rp_pool_destroy(p);
}

/*
 * Batch runs.  A routee that takes a batch job also takes the jobs that
 * follow it in the same batch, about RUN (8) in all (ending on a whole
 * queue record), with one queue operation; they wait inside the routee.  They still count in its depth,
 * no thief can take them, and a stop hands them back like queued jobs.
 */
#define RUN 8
/* Most batch jobs one queue record carries (a bulk, lib/lane.h). */
#define BULK 8

Test(batch, a_held_batch_run_counts_in_depth_and_a_stop_hands_it_back, .init = setup,
     .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "runs", 1, 0, 0, rp_strategy_round_robin()), 0);
    gate g;
    gate_init(&g);
    probe pr[40];
    probe_init_n(pr, 40, &LOG, 0, NULL);
    pr[0].gate = &g;
    cr_assert_eq(rp_pool_submit_batch(p, probe_job, args_of(pr, 40), 40), 0, "%s", rp_errmsg());
    cr_assert(gate_wait_entered(&g, 1, 5000));
    /* The running job's run-mates wait in the routee: still counted. */
    cr_assert_eq(rp_routee_depth(rp_pool_routee(p, 0)), 39);
    cr_assert_eq(rp_routee_stop(rp_pool_routee(p, 0)), 0);
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(probe_runs(&pr[0]), 1);
    cr_assert_eq(probe_undel(&pr[0]), 0);
    for (int i = 1; i < 40; i++) {
        cr_assert_eq(probe_runs(&pr[i]), 0, "job %d ran after the stop", i);
        cr_assert_eq(probe_undel(&pr[i]), 1, "job %d came back %d times", i, probe_undel(&pr[i]));
        cr_assert_eq(atomic_load(&pr[i].reason), RP_ESTOPPED, "job %d: %s", i,
                     rp_err_name(atomic_load(&pr[i].reason)));
    }
    cr_assert_eq(rp_routee_depth(rp_pool_routee(p, 0)), 0);
    rp_pool_destroy(p);
    gate_destroy(&g);
}

Test(batch, a_thief_takes_the_queued_rest_of_a_batch_but_not_the_held_run, .init = setup,
     .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "runt", 2, 0, 0, rp_strategy_round_robin()), 0);
    rp_routee *r0 = rp_pool_routee(p, 0), *r1 = rp_pool_routee(p, 1);
    gate g0, g1;
    gate_init(&g0);
    gate_init(&g1);
    /* Routee 1 is busy while routee 0 takes its first batch job. */
    probe hold;
    probe_init(&hold, &LOG, -1, &g1);
    cr_assert_eq(rp_routee_tell(r1, probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&g1, 1, 5000));
    rp_router *only0 = NULL;
    cr_assert_eq(rp_router_create_group(&only0, &r0, 1, NULL), 0, "%s", rp_errmsg());
    probe pr[20];
    probe_init_n(pr, 20, &LOG, 0, NULL);
    pr[0].gate = &g0;
    cr_assert_eq(rp_router_tell_batch(only0, probe_job, args_of(pr, 20), 20), 0, "%s", rp_errmsg());
    cr_assert(gate_wait_entered(&g0, 1, 5000));
    /* Routee 1 is free: it steals the jobs still queued, not those routee
     * 0 holds.  A run takes whole records while it holds fewer than RUN
     * jobs, and the batch's records carry up to BULK jobs, one fewer when
     * one of them is sampled for the metrics (its stamp takes a slot; the
     * mailbox's first job is, and one in RP_METRICS_SAMPLE): pr[0..6],
     * pr[7..14], pr[15..19].  Routee 0 takes the first two and holds
     * pr[1..14]; routee 1 steals the last record. */
    const int held = (BULK - 1) + BULK - 1;
    gate_open(&g1);
    const int64_t deadline = now_ms() + 5000;
    while (rp_routee_depth(r0) > held && now_ms() < deadline)
        sleep_ms(1);
    cr_assert_eq(rp_routee_depth(r0), held);
    for (int i = held + 1; i < 20; i++)
        cr_assert(wait_atomic_ge(&pr[i].runs, 1, 5000), "job %d was not stolen", i);
    for (int i = 1; i <= held; i++)
        cr_assert_eq(probe_runs(&pr[i]), 0, "held job %d ran while routee 0 was blocked", i);
    gate_open(&g0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    assert_all_ran_once(pr, 20);
    for (int i = 0; i <= held; i++)
        cr_assert_eq(probe_routee(&pr[i]), 0, "job %d ran on routee %d", i, probe_routee(&pr[i]));
    for (int i = held + 1; i < 20; i++)
        cr_assert_eq(probe_routee(&pr[i]), 1, "job %d ran on routee %d", i, probe_routee(&pr[i]));
    rp_router_destroy(only0);
    rp_pool_destroy(p);
    gate_destroy(&g0);
    gate_destroy(&g1);
}
