/* SPDX-License-Identifier: MIT */
/*
 * tests/test_router.c - routers over live pools: smallest mailbox under
 * backlog, stopped and foreign routees, broadcast, empty groups, custom
 * strategies' bad choices, keyed ordering and exact weighted/round-robin
 * splits.
 *
 * Routed unkeyed jobs may be stolen by an idle routee, so where a routing
 * decision must be observed exactly, the tests hold every routee busy on a
 * gate and read queue depths and the per-routee "enqueued" counter (the
 * mailbox a job was routed to) instead of where the job finally ran.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "common.h"

TestSuite(broadcast, .fini = rp_leak_check);
TestSuite(consistent_hash, .fini = rp_leak_check);
TestSuite(custom, .fini = rp_leak_check);
TestSuite(foreign, .fini = rp_leak_check);
TestSuite(group_router, .fini = rp_leak_check);
TestSuite(round_robin, .fini = rp_leak_check);
TestSuite(smallest_mailbox, .fini = rp_leak_check);
TestSuite(weighted, .fini = rp_leak_check);

static tlog LOG;

static void setup(void)
{
    tlog_init(&LOG);
}


static uint64_t enqueued(rp_pool *p, size_t i)
{
    rp_routee_stats st;
    cr_assert_eq(rp_routee_stats_get(rp_pool_routee(p, i), &st), 0);
    return st.enqueued;
}

static int64_t depth(rp_pool *p, size_t i)
{
    return rp_routee_depth(rp_pool_routee(p, i));
}

static rp_router *make_router(rp_pool *p, rp_strategy s)
{
    rp_router_options o;
    rp_router_options_init(&o);
    o.strategy = s;
    rp_router *r = NULL;
    cr_assert_eq(rp_router_create(&r, p, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_router_size(r), rp_pool_size(p));
    return r;
}

/* Tell n quick probes straight to routee i. */
static void tell_n(rp_pool *p, size_t i, probe *ps, size_t n, int tag0)
{
    probe_init_n(ps, n, &LOG, tag0, NULL);
    for (size_t k = 0; k < n; k++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, i), probe_job, &ps[k]),
                     0);
}

/* After a rotation step exactly one routee's depth rose by one: which? */
static int depth_step(rp_pool *p, int64_t *before)
{
    const size_t n = rp_pool_size(p);
    int which = -1;
    for (size_t i = 0; i < n; i++) {
        const int64_t d = depth(p, i);
        if (d == before[i])
            continue;
        cr_assert_eq(d, before[i] + 1, "routee %zu depth %lld -> %lld", i,
                     (long long)before[i], (long long)d);
        cr_assert_eq(which, -1, "two routees received one job");
        which = (int)i;
        before[i] = d;
    }
    cr_assert_neq(which, -1, "no routee's depth rose");
    return which;
}

/* ---- smallest mailbox ---- */

Test(smallest_mailbox, ties_rotate_on_idle_pool, .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "sm", 5, 0, 0, rp_strategy_smallest_mailbox()),
                 0);
    /* Idle: every routee asleep, none still in its first look for work. */
    cr_assert(wait_all_asleep(p, 5000));
    probe pr[10];
    probe_init_n(pr, 10, &LOG, 0, NULL);
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(rp_pool_submit(p, probe_job, &pr[i]), 0);
        cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
        cr_assert_eq(probe_runs(&pr[i]), 1);
        cr_assert_eq(probe_routee(&pr[i]), i % 5,
                     "job %d ran on routee %d, want %d", i + 1,
                     probe_routee(&pr[i]), i % 5);
    }
    rp_pool_destroy(p);
}

Test(smallest_mailbox, routee_with_backlog_gets_nothing_while_others_free,
     .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "sm", 5, 0, 0, rp_strategy_round_robin()), 0);
    rp_router *r = make_router(p, rp_strategy_smallest_mailbox());
    gate g1, g2;
    gate_init(&g1);
    gate_init(&g2);

    probe hold;
    probe_init(&hold, &LOG, 100, &g1);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&g1, 1, 5000));
    probe queued[10];
    tell_n(p, 0, queued, 10, 200);
    cr_assert_eq(depth(p, 0), 10);

    /* The routed jobs block too, so each keeps its routee busy. */
    probe routed[5];
    probe_init_n(routed, 5, &LOG, 0, &g2);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(rp_router_tell(r, probe_job, &routed[i]), 0);
    cr_assert(gate_wait_entered(&g2, 4, 5000), "only %d routed jobs started",
              gate_entered(&g2));

    bool seen[5] = {false};
    int running = 0;
    for (int i = 0; i < 5; i++) {
        if (probe_routee(&routed[i]) < 0)
            continue;
        const int k = probe_routee(&routed[i]);
        cr_assert(k >= 1 && k <= 4, "routed job %d ran on routee %d", i, k);
        cr_assert_not(seen[k], "two routed jobs run on routee %d", k);
        seen[k] = true;
        running++;
    }
    cr_assert_eq(running, 4, "%d routed jobs running, want 4", running);
    cr_assert_eq(depth(p, 0), 10, "routee 0's backlog changed");
    cr_assert_eq(enqueued(p, 0), 11u, "routee 0 was routed a job");
    int64_t queued_elsewhere = 0;
    for (size_t i = 1; i < 5; i++)
        queued_elsewhere += depth(p, i);
    cr_assert_eq(queued_elsewhere, 1, "the fifth routed job is queued on "
                 "routees 1..4");

    gate_open(&g1);
    gate_open(&g2);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(tlog_nrun(&LOG), 16);
    cr_assert_eq(tlog_nundel(&LOG), 0);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(probe_runs(&routed[i]), 1);
    rp_router_destroy(r);
    rp_pool_destroy(p);
    gate_destroy(&g1);
    gate_destroy(&g2);
}

Test(smallest_mailbox, stuck_routee_with_growing_queue_gets_nothing_new,
     .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "stuck", 3, 0, 0, rp_strategy_round_robin()),
                 0);
    rp_router *r = make_router(p, rp_strategy_smallest_mailbox());
    gate g;
    gate_init(&g);
    probe slow;
    probe_init(&slow, &LOG, 100, &g);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &slow), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000));

    enum { N = 30 };
    probe backlog[N], routed[N];
    probe_init_n(backlog, N, &LOG, 1000, NULL);
    probe_init_n(routed, N, &LOG, 0, NULL);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job,
                                    &backlog[i]), 0);
        cr_assert_eq(rp_router_tell(r, probe_job, &routed[i]), 0);
        cr_assert_eq(depth(p, 0), i + 1);
    }
    /* Routee 0 is still stuck, so every routed job ran elsewhere. */
    for (int i = 0; i < N; i++) {
        cr_assert(wait_atomic_ge(&routed[i].runs, 1, 5000), "job %d", i);
        const int k = probe_routee(&routed[i]);
        cr_assert(k == 1 || k == 2, "routed job %d ran on %d", i, k);
    }
    cr_assert_eq(enqueued(p, 0), (uint64_t)N + 1, "routee 0 was routed a job");
    cr_assert_eq(enqueued(p, 1) + enqueued(p, 2), (uint64_t)N);
    cr_assert_eq(depth(p, 0), N);

    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(tlog_nrun(&LOG), 2 * N + 1);
    cr_assert_eq(tlog_nundel(&LOG), 0);
    rp_router_destroy(r);
    rp_pool_destroy(p);
    gate_destroy(&g);
}

Test(smallest_mailbox, equal_depth_three_rotates, .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "eq", 4, 0, 0, rp_strategy_round_robin()), 0);
    rp_router *r = make_router(p, rp_strategy_smallest_mailbox());
    gate g;
    gate_init(&g);
    probe holds[4], q[4][3];
    cr_assert(block_all_routees(p, holds, &LOG, &g));
    for (size_t i = 0; i < 4; i++)
        tell_n(p, i, q[i], 3, (int)(10 * i));
    rp_routee *rs[4];
    int64_t d[4];
    for (size_t i = 0; i < 4; i++) {
        rs[i] = rp_pool_routee(p, i);
        d[i] = depth(p, i);
        cr_assert_eq(d[i], 3);
        cr_assert(rp_routee_busy(rs[i]));
    }

    /* Pure: every score is 4, so the pick is the scan's start. */
    const rp_strategy sm = rp_strategy_smallest_mailbox();
    for (uint64_t i = 0; i < 12; i++) {
        rp_route_state st = {.message_index = i};
        size_t out[4];
        cr_assert_eq(rp_strategy_pick(&sm, &st, rs, 4, out), 1);
        cr_assert_eq(out[0], i % 4, "index %llu picked %zu",
                     (unsigned long long)i, out[0]);
    }

    /* Routed: successive jobs go to successive routees. */
    probe routed[8];
    probe_init_n(routed, 8, &LOG, 100, NULL);
    int prev = -1;
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(rp_router_tell(r, probe_job, &routed[i]), 0);
        const int k = depth_step(p, d);
        if (prev >= 0)
            cr_assert_eq(k, (prev + 1) % 4, "job %d went to %d after %d", i,
                         k, prev);
        prev = k;
    }
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(depth(p, i), 5);

    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(tlog_nrun(&LOG), 4 + 12 + 8);
    cr_assert_eq(tlog_nundel(&LOG), 0);
    rp_router_destroy(r);
    rp_pool_destroy(p);
    gate_destroy(&g);
}

Test(smallest_mailbox, stopped_routee_is_skipped, .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "stop", 3, 0, 0,
                           rp_strategy_smallest_mailbox()), 0);
    cr_assert_eq(rp_routee_stop(rp_pool_routee(p, 1)), 0);
    probe pr[9];
    probe_init_n(pr, 9, &LOG, 0, NULL);
    for (int i = 0; i < 9; i++) {
        cr_assert_eq(rp_pool_submit(p, probe_job, &pr[i]), 0);
        cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
        cr_assert_eq(probe_runs(&pr[i]), 1);
        cr_assert_neq(probe_routee(&pr[i]), 1, "job %d ran on the stopped "
                      "routee", i);
    }
    cr_assert_eq(enqueued(p, 1), 0u);
    cr_assert_eq(enqueued(p, 0) + enqueued(p, 2), 9u);
    cr_assert_eq(tlog_nundel(&LOG), 0);
    rp_pool_destroy(p);
}

Test(smallest_mailbox, all_stopped_hands_job_back_with_estopped,
     .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "dead", 3, 0, 0,
                           rp_strategy_smallest_mailbox()), 0);
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(rp_routee_stop(rp_pool_routee(p, i)), 0);
    probe a, b;
    probe_init(&a, &LOG, 1, NULL);
    probe_init(&b, &LOG, 2, NULL);
    cr_assert_eq(rp_pool_submit(p, probe_job, &a), 0,
                 "the job is accepted and handed back, not refused");
    rp_router *r = make_router(p, rp_strategy_smallest_mailbox());
    cr_assert_eq(rp_router_tell(r, probe_job, &b), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert(wait_atomic_ge(&a.undelivered, 1, 5000));
    cr_assert(wait_atomic_ge(&b.undelivered, 1, 5000));
    sleep_ms(20); /* a second hand-back would show up here */
    probe *both[2] = {&a, &b};
    for (int j = 0; j < 2; j++) {
        probe *x = both[j];
        cr_assert_eq(probe_runs(x), 0);
        cr_assert_eq(probe_undel(x), 1);
        cr_assert_eq(atomic_load(&x->reason), RP_ESTOPPED, "reason %s",
                     rp_err_name(atomic_load(&x->reason)));
    }
    rp_router_destroy(r);
    rp_pool_destroy(p);
}

/* ---- foreign routees in a group ---- */

Test(foreign, routee_without_depth_is_treated_as_empty,
     .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "loc", 2, 0, 0, rp_strategy_round_robin()), 0);
    gate g;
    gate_init(&g);
    probe holds[2], q[2][2];
    cr_assert(block_all_routees(p, holds, &LOG, &g));
    tell_n(p, 0, q[0], 2, 10);
    tell_n(p, 1, q[1], 2, 20);

    fake_foreign f = {.id = 0};
    atomic_init(&f.sent, 0);
    rp_routee *fr = NULL;
    cr_assert_eq(rp_routee_foreign_create(&fr, fake_foreign_send, NULL, &f), 0);
    rp_routee *list[3] = {rp_pool_routee(p, 0), rp_pool_routee(p, 1), fr};
    rp_router_options o;
    rp_router_options_init(&o);
    o.strategy = rp_strategy_smallest_mailbox();
    o.on_undelivered = probe_undelivered;
    rp_router *r = NULL;
    cr_assert_eq(rp_router_create_group(&r, list, 3, &o), 0);
    cr_assert_eq(rp_router_size(r), 3u);

    probe pr[9];
    probe_init_n(pr, 9, &LOG, 0, NULL);
    for (int i = 0; i < 9; i++) {
        cr_assert_eq(rp_router_tell(r, probe_job, &pr[i]), 0);
        cr_assert_eq(atomic_load(&pr[i].foreign), 0, "job %d not sent to the "
                     "foreign routee", i);
    }
    cr_assert_eq(atomic_load(&f.sent), 9);
    cr_assert_eq(depth(p, 0), 2);
    cr_assert_eq(depth(p, 1), 2);
    cr_assert_eq(enqueued(p, 0) + enqueued(p, 1), 6u);
    cr_assert_eq(rp_router_undelivered(r), 0u);

    rp_router_destroy(r);
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(tlog_nrun(&LOG), 6);
    cr_assert_eq(tlog_nundel(&LOG), 0);
    rp_pool_destroy(p);
    rp_routee_foreign_destroy(fr);
    gate_destroy(&g);
}

Test(foreign, several_foreign_routees_take_the_traffic_in_rotation,
     .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "loc", 2, 0, 0, rp_strategy_round_robin()), 0);
    gate g;
    gate_init(&g);
    probe holds[2], q[2][3];
    cr_assert(block_all_routees(p, holds, &LOG, &g));
    tell_n(p, 0, q[0], 3, 10);
    tell_n(p, 1, q[1], 3, 20);

    fake_foreign f[3];
    rp_routee *fr[3];
    for (int i = 0; i < 3; i++) {
        f[i] = (fake_foreign){.id = i};
        atomic_init(&f[i].sent, 0);
        cr_assert_eq(rp_routee_foreign_create(&fr[i], fake_foreign_send, NULL,
                                              &f[i]), 0);
    }
    rp_routee *mixed[5] = {rp_pool_routee(p, 0), rp_pool_routee(p, 1), fr[0],
                           fr[1], fr[2]};
    const rp_strategy sm = rp_strategy_smallest_mailbox();

    /* Pure: a scan starting on a busy local routee moves on to the first
     * foreign one; a scan starting on a foreign one stays there. */
    const size_t want[5] = {2, 2, 2, 3, 4};
    for (uint64_t i = 0; i < 10; i++) {
        rp_route_state st = {.message_index = i};
        size_t out[5];
        cr_assert_eq(rp_strategy_pick(&sm, &st, mixed, 5, out), 1);
        cr_assert_eq(out[0], want[i % 5], "index %llu picked %zu",
                     (unsigned long long)i, out[0]);
    }

    /* Routed: any 10 consecutive indices start twice on each position. */
    rp_router_options o;
    rp_router_options_init(&o);
    o.strategy = sm;
    o.on_undelivered = probe_undelivered;
    rp_router *r = NULL;
    cr_assert_eq(rp_router_create_group(&r, mixed, 5, &o), 0);
    probe pr[10];
    probe_init_n(pr, 10, &LOG, 0, NULL);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(rp_router_tell(r, probe_job, &pr[i]), 0);
    cr_assert_eq(atomic_load(&f[0].sent), 6);
    cr_assert_eq(atomic_load(&f[1].sent), 2);
    cr_assert_eq(atomic_load(&f[2].sent), 2);
    cr_assert_eq(depth(p, 0), 3);
    cr_assert_eq(depth(p, 1), 3);
    rp_router_destroy(r);

    /* Foreign routees alone rotate exactly like round-robin. */
    cr_assert_eq(rp_router_create_group(&r, fr, 3, &o), 0);
    probe pf[9];
    probe_init_n(pf, 9, &LOG, 0, NULL);
    int first = -1;
    for (int i = 0; i < 9; i++) {
        cr_assert_eq(rp_router_tell(r, probe_job, &pf[i]), 0);
        const int got = atomic_load(&pf[i].foreign);
        if (first < 0)
            first = got;
        cr_assert_eq(got, (first + i) % 3, "job %d went to foreign %d", i,
                     got);
    }
    cr_assert_eq(atomic_load(&f[0].sent), 9);
    cr_assert_eq(atomic_load(&f[1].sent), 5);
    cr_assert_eq(atomic_load(&f[2].sent), 5);
    rp_router_destroy(r);

    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(tlog_nrun(&LOG), 8);
    cr_assert_eq(tlog_nundel(&LOG), 0);
    rp_pool_destroy(p);
    for (int i = 0; i < 3; i++)
        rp_routee_foreign_destroy(fr[i]);
    gate_destroy(&g);
}

Test(foreign, refusing_send_hands_job_back_with_esend,
     .init = setup, .timeout = 20)
{
    fake_foreign f = {.id = 0, .refuse = true};
    atomic_init(&f.sent, 0);
    rp_routee *fr = NULL;
    cr_assert_eq(rp_routee_foreign_create(&fr, fake_foreign_send, NULL, &f), 0);
    rp_router_options o;
    rp_router_options_init(&o);
    o.on_undelivered = probe_undelivered;
    rp_router *r = NULL;
    cr_assert_eq(rp_router_create_group(&r, &fr, 1, &o), 0);
    probe pr;
    probe_init(&pr, &LOG, 0, NULL);
    cr_assert_eq(rp_router_tell(r, probe_job, &pr), 0);
    cr_assert_eq(probe_undel(&pr), 1);
    cr_assert_eq(atomic_load(&pr.reason), RP_ESEND, "reason %s",
                 rp_err_name(atomic_load(&pr.reason)));
    cr_assert_eq(rp_router_undelivered(r), 1u);
    cr_assert_eq(atomic_load(&f.sent), 0);
    rp_router_destroy(r);
    rp_routee_foreign_destroy(fr);
}

Test(foreign, routee_tell_calls_the_send_callback, .init = setup,
     .timeout = 20)
{
    fake_foreign f = {.id = 4, .depth = 3};
    atomic_init(&f.sent, 0);
    rp_routee *fr = NULL;
    cr_assert_eq(rp_routee_foreign_create(&fr, fake_foreign_send,
                                          fake_foreign_depth, &f), 0);
    probe pr[3];
    probe_init_n(pr, 3, &LOG, 0, NULL);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(rp_routee_tell(fr, probe_job, &pr[i]), 0);
        cr_assert_eq(atomic_load(&pr[i].foreign), 4);
        cr_assert_eq(probe_runs(&pr[i]) + probe_undel(&pr[i]), 0);
    }
    cr_assert_eq(atomic_load(&f.sent), 3);
    cr_assert_eq(rp_routee_depth(fr), 3, "depth comes from the callback");
    cr_assert_not(rp_routee_stopped(fr));
    rp_routee_foreign_destroy(fr);
}

/* ---- broadcast ---- */

typedef struct bcast {
    atomic_int per[8];
    atomic_int undelivered;
} bcast;

static void bcast_job(rp_job_ctx *ctx, void *arg)
{
    bcast *b = arg;
    atomic_fetch_add_explicit(&b->per[rp_job_routee(ctx)], 1,
                              memory_order_relaxed);
}

static void bcast_undelivered(void *arg, int reason, void *user)
{
    (void)reason;
    (void)user;
    atomic_fetch_add_explicit(&((bcast *)arg)->undelivered, 1,
                              memory_order_relaxed);
}

static void bcast_init(bcast *b)
{
    for (int i = 0; i < 8; i++)
        atomic_init(&b->per[i], 0);
    atomic_init(&b->undelivered, 0);
}

static int discard_all(void *user, rp_route_state *state,
                       rp_routee *const *routees, size_t n, size_t *out)
{
    (void)user;
    (void)state;
    (void)routees;
    (void)n;
    (void)out;
    return 0;
}

static rp_pool *bcast_pool(void)
{
    rp_pool_options po;
    rp_pool_options_init(&po);
    po.name = "bc";
    po.routees = 4;
    po.on_undelivered = bcast_undelivered;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &po), 0);
    return p;
}

static void assert_each_live_once(rp_pool *p, bcast *b, int stopped)
{
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(atomic_load(&b->per[i]), i == stopped ? 0 : 1,
                     "routee %d ran %d copies", i, atomic_load(&b->per[i]));
    cr_assert_eq(atomic_load(&b->undelivered), 0);
}

Test(broadcast, reaches_every_live_routee_once_bypassing_strategy,
     .init = setup, .timeout = 20)
{
    rp_pool *p = bcast_pool();
    cr_assert_eq(rp_routee_stop(rp_pool_routee(p, 2)), 0);

    bcast b;
    bcast_init(&b);
    cr_assert_eq(rp_router_broadcast(rp_pool_router(p), bcast_job, &b), 0);
    assert_each_live_once(p, &b, 2);

    /* A consistent-hash router refuses unkeyed tells, yet broadcasts. */
    rp_router *ch = make_router(p, rp_strategy_consistent_hash(1));
    bcast_init(&b);
    cr_assert_eq(rp_router_tell(ch, bcast_job, &b), RP_EINVAL);
    cr_assert_eq(rp_router_broadcast(ch, bcast_job, &b), 0);
    assert_each_live_once(p, &b, 2);
    rp_router_destroy(ch);

    /* A custom strategy that discards everything is bypassed as well. */
    rp_router *cu = make_router(p, rp_strategy_custom(discard_all, NULL));
    bcast_init(&b);
    cr_assert_eq(rp_router_broadcast(cu, bcast_job, &b), 0);
    assert_each_live_once(p, &b, 2);
    cr_assert_eq(rp_router_undelivered(cu), 0u);
    rp_router_destroy(cu);
    rp_pool_destroy(p);
}

Test(broadcast, strategy_sends_one_copy_per_live_routee,
     .init = setup, .timeout = 20)
{
    rp_pool *p = bcast_pool();
    rp_router *r = make_router(p, rp_strategy_broadcast());
    bcast b;
    bcast_init(&b);
    cr_assert_eq(rp_router_tell(r, bcast_job, &b), 0);
    assert_each_live_once(p, &b, -1);

    cr_assert_eq(rp_routee_stop(rp_pool_routee(p, 0)), 0);
    bcast_init(&b);
    cr_assert_eq(rp_router_tell(r, bcast_job, &b), 0);
    assert_each_live_once(p, &b, 0);
    rp_router_destroy(r);
    rp_pool_destroy(p);
}

Test(broadcast, no_live_routee_returns_enoroutee, .init = setup, .timeout = 20)
{
    rp_pool *p = bcast_pool();
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(rp_routee_stop(rp_pool_routee(p, i)), 0);
    bcast b;
    bcast_init(&b);
    cr_assert_eq(rp_router_broadcast(rp_pool_router(p), bcast_job, &b),
                 RP_ENOROUTEE);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(atomic_load(&b.per[i]), 0);
    cr_assert_eq(atomic_load(&b.undelivered), 0, "nothing was accepted, so "
                 "nothing is handed back");

    rp_router *empty = NULL;
    cr_assert_eq(rp_router_create_group(&empty, NULL, 0, NULL), 0);
    cr_assert_eq(rp_router_broadcast(empty, bcast_job, &b), RP_ENOROUTEE);
    rp_router_destroy(empty);
    rp_pool_destroy(p);
}

Test(broadcast, group_broadcast_reaches_local_and_foreign_routees,
     .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "bl", 2, 0, 0, rp_strategy_round_robin()), 0);
    fake_foreign f = {.id = 7};
    atomic_init(&f.sent, 0);
    rp_routee *fr = NULL;
    cr_assert_eq(rp_routee_foreign_create(&fr, fake_foreign_send, NULL, &f), 0);
    rp_routee *list[2] = {rp_pool_routee(p, 1), fr};
    rp_router *r = NULL;
    cr_assert_eq(rp_router_create_group(&r, list, 2, NULL), 0);
    probe pr;
    probe_init(&pr, &LOG, 0, NULL);
    cr_assert_eq(rp_router_broadcast(r, probe_job, &pr), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(probe_runs(&pr), 1, "the local copy ran %d times",
                 probe_runs(&pr));
    cr_assert_eq(probe_routee(&pr), 1);
    cr_assert_eq(atomic_load(&f.sent), 1);
    cr_assert_eq(atomic_load(&pr.foreign), 7);
    cr_assert_eq(probe_undel(&pr), 0);
    rp_router_destroy(r);
    rp_routee_foreign_destroy(fr);
    rp_pool_destroy(p);
}

/* ---- empty group ---- */

Test(group_router, empty_group_hands_back_enoroutee_and_warns,
     .init = setup, .timeout = 20)
{
    logcap lc;
    logcap_init(&lc);
    rp_router_options o;
    rp_router_options_init(&o);
    o.name = "nobody";
    o.on_undelivered = probe_undelivered;
    o.log = logcap_fn;
    o.log_user = &lc;
    rp_router *r = NULL;
    cr_assert_eq(rp_router_create_group(&r, NULL, 0, &o), 0);
    cr_assert_eq(rp_router_size(r), 0u);

    probe a, b;
    probe_init(&a, &LOG, 1, NULL);
    probe_init(&b, &LOG, 2, NULL);
    cr_assert_eq(rp_router_tell(r, probe_job, &a), 0);
    cr_assert_eq(rp_router_tell_key(r, "k", 1, probe_job, &b), 0);
    probe *both[2] = {&a, &b};
    for (int j = 0; j < 2; j++) {
        probe *x = both[j];
        cr_assert_eq(probe_undel(x), 1);
        cr_assert_eq(atomic_load(&x->reason), RP_ENOROUTEE, "reason %s",
                     rp_err_name(atomic_load(&x->reason)));
        cr_assert_eq(probe_runs(x), 0);
    }
    cr_assert_eq(rp_router_undelivered(r), 2u);
    cr_assert_geq(logcap_count(&lc, RP_LOG_WARN), 1, "no warning logged");
    cr_assert_not_null(strstr(lc.last_warn, "nobody"),
                       "the warning \"%s\" does not name the router",
                       lc.last_warn);
    rp_router_destroy(r);
}

Test(group_router, group_spans_two_pools, .init = setup, .timeout = 20)
{
    rp_pool *p1 = NULL, *p2 = NULL;
    cr_assert_eq(make_pool(&p1, "ga", 1, 0, 0, rp_strategy_round_robin()), 0);
    cr_assert_eq(make_pool(&p2, "gb", 1, 0, 0, rp_strategy_round_robin()), 0);
    rp_routee *list[2] = {rp_pool_routee(p1, 0), rp_pool_routee(p2, 0)};
    rp_router *r = NULL;
    cr_assert_eq(rp_router_create_group(&r, list, 2, NULL), 0);
    probe pr[10];
    probe_init_n(pr, 10, &LOG, 0, NULL);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(rp_router_tell(r, probe_job, &pr[i]), 0);
    cr_assert_eq(rp_pool_wait_idle(p1, 5000), 0);
    cr_assert_eq(rp_pool_wait_idle(p2, 5000), 0);
    int in1 = 0, in2 = 0;
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(probe_runs(&pr[i]), 1);
        rp_pool *ran = atomic_load(&pr[i].pool);
        cr_assert(ran == p1 || ran == p2);
        in1 += ran == p1;
        in2 += ran == p2;
    }
    cr_assert_eq(in1, 5);
    cr_assert_eq(in2, 5);
    rp_router_destroy(r);
    rp_pool_destroy(p1);
    rp_pool_destroy(p2);
}

Test(group_router, group_of_100_foreign_routees_routes_exactly,
     .init = setup, .timeout = 20)
{
    enum { N = 100 };
    static fake_foreign f[N];
    static rp_routee *fr[N];
    for (int i = 0; i < N; i++) {
        f[i] = (fake_foreign){.id = i, .depth = 5};
        atomic_init(&f[i].sent, 0);
        cr_assert_eq(rp_routee_foreign_create(&fr[i], fake_foreign_send,
                                              fake_foreign_depth, &f[i]), 0);
    }
    rp_router_options o;
    rp_router_options_init(&o);
    o.on_undelivered = probe_undelivered;
    rp_router *rr = NULL;
    cr_assert_eq(rp_router_create_group(&rr, fr, N, &o), 0);
    cr_assert_eq(rp_router_size(rr), (size_t)N);
    static probe pr[3 * N];
    probe_init_n(pr, 3 * N, &LOG, 0, NULL);
    for (int i = 0; i < 2 * N; i++)
        cr_assert_eq(rp_router_tell(rr, probe_job, &pr[i]), 0);
    for (int i = 0; i < N; i++)
        cr_assert_eq(atomic_load(&f[i].sent), 2, "foreign %d got %d", i,
                     atomic_load(&f[i].sent));

    /* Smallest mailbox over the same 100: one shallow routee takes all. */
    f[73].depth = 1;
    o.strategy = rp_strategy_smallest_mailbox();
    rp_router *sm = NULL;
    cr_assert_eq(rp_router_create_group(&sm, fr, N, &o), 0);
    for (int i = 2 * N; i < 3 * N; i++) {
        cr_assert_eq(rp_router_tell(sm, probe_job, &pr[i]), 0);
        cr_assert_eq(atomic_load(&pr[i].foreign), 73);
    }
    cr_assert_eq(atomic_load(&f[73].sent), 2 + N);
    cr_assert_eq(tlog_nundel(&LOG), 0);

    /* Broadcast reaches all 100 once. */
    probe b;
    probe_init(&b, &LOG, -1, NULL);
    cr_assert_eq(rp_router_broadcast(sm, probe_job, &b), 0);
    int total = 0;
    for (int i = 0; i < N; i++)
        total += atomic_load(&f[i].sent);
    cr_assert_eq(total, 3 * N + N);
    rp_router_destroy(sm);
    rp_router_destroy(rr);
    for (int i = 0; i < N; i++)
        rp_routee_foreign_destroy(fr[i]);
}

/* ---- custom strategies' bad choices ---- */

typedef struct bad_choice {
    int ret;
    size_t idx;
} bad_choice;

static int bad_choice_fn(void *user, rp_route_state *state,
                         rp_routee *const *routees, size_t n, size_t *out)
{
    (void)state;
    (void)routees;
    (void)n;
    const bad_choice *c = user;
    if (c->ret > 0)
        out[0] = c->idx;
    return c->ret;
}

Test(custom, out_of_range_choice_dead_letters_with_einval,
     .init = setup, .timeout = 20)
{
    /* The router has no log callback of its own: the pool's gets its lines. */
    logcap lc;
    logcap_init(&lc);
    rp_pool_options po;
    rp_pool_options_init(&po);
    po.name = "cu";
    po.routees = 2;
    po.on_undelivered = probe_undelivered;
    po.log = logcap_fn;
    po.log_user = &lc;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &po), 0);
    bad_choice c = {.ret = 1, .idx = 2};
    rp_router *r = make_router(p, rp_strategy_custom(bad_choice_fn, &c));
    probe pr[3];
    probe_init_n(pr, 3, &LOG, 0, NULL);

    cr_assert_eq(rp_router_tell(r, probe_job, &pr[0]), 0);
    c.ret = -1;
    cr_assert_eq(rp_router_tell(r, probe_job, &pr[1]), 0);
    c.ret = 3; /* more choices than routees */
    c.idx = 0;
    cr_assert_eq(rp_router_tell(r, probe_job, &pr[2]), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(probe_runs(&pr[i]), 0, "job %d ran", i);
        cr_assert_eq(probe_undel(&pr[i]), 1, "job %d handed back %d times", i,
                     probe_undel(&pr[i]));
        cr_assert_eq(atomic_load(&pr[i].reason), RP_EINVAL, "job %d: %s", i,
                     rp_err_name(atomic_load(&pr[i].reason)));
    }
    cr_assert_eq(rp_router_undelivered(r), 3u);

    /* Zero choices discards the job as "no routee". */
    c.ret = 0;
    probe z;
    probe_init(&z, &LOG, 9, NULL);
    cr_assert_eq(rp_router_tell(r, probe_job, &z), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(probe_undel(&z), 1);
    cr_assert_eq(atomic_load(&z.reason), RP_ENOROUTEE);
    cr_assert_eq(rp_router_undelivered(r), 4u);

    /* A valid choice still works. */
    c.ret = 1;
    c.idx = 1;
    probe ok;
    probe_init(&ok, &LOG, 10, NULL);
    cr_assert_eq(rp_router_tell(r, probe_job, &ok), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(probe_runs(&ok), 1);
    cr_assert_eq(tlog_nrun(&LOG), 1);
    cr_assert_eq(tlog_nundel(&LOG), 4);
    cr_assert_geq(logcap_count(&lc, RP_LOG_WARN), 1,
                  "dead letters were not logged through the pool's callback");
    rp_router_destroy(r);
    rp_pool_destroy(p);
}

/* ---- keyed ordering ---- */

typedef struct keyed {
    atomic_int in_flight;
    atomic_int max_in_flight;
    pthread_mutex_t mu;
    int n;
    int seq[4000];
    int routee[4000];
} keyed;

typedef struct keyed_arg {
    keyed *k;
    int seq;
} keyed_arg;

static void keyed_job(rp_job_ctx *ctx, void *arg)
{
    keyed_arg *a = arg;
    keyed *k = a->k;
    const int now = atomic_fetch_add(&k->in_flight, 1) + 1;
    int m = atomic_load(&k->max_in_flight);
    while (now > m &&
           !atomic_compare_exchange_weak(&k->max_in_flight, &m, now)) {
    }
    pthread_mutex_lock(&k->mu);
    k->seq[k->n] = a->seq;
    k->routee[k->n] = rp_job_routee(ctx);
    k->n++;
    pthread_mutex_unlock(&k->mu);
    atomic_fetch_sub(&k->in_flight, 1);
}

Test(consistent_hash, one_key_runs_in_submission_order_on_one_routee,
     .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "key", 4, 0, 0, rp_strategy_round_robin()), 0);
    rp_router *r = make_router(p, rp_strategy_consistent_hash(77));
    static keyed k[2];
    static keyed_arg args[2][2000];
    const char *keys[2] = {"alpha", "beta-key"};
    for (int j = 0; j < 2; j++) {
        memset(&k[j], 0, sizeof k[j]);
        pthread_mutex_init(&k[j].mu, NULL);
    }
    for (int i = 0; i < 2000; i++) {
        for (int j = 0; j < 2; j++) {
            args[j][i] = (keyed_arg){.k = &k[j], .seq = i};
            cr_assert_eq(rp_router_tell_key(r, keys[j], strlen(keys[j]),
                                            keyed_job, &args[j][i]), 0);
        }
    }
    cr_assert_eq(rp_pool_wait_idle(p, 10000), 0);
    for (int j = 0; j < 2; j++) {
        cr_assert_eq(k[j].n, 2000, "key %s: %d jobs ran", keys[j], k[j].n);
        cr_assert_eq(atomic_load(&k[j].max_in_flight), 1,
                     "key %s ran concurrently", keys[j]);
        for (int i = 0; i < 2000; i++) {
            cr_assert_eq(k[j].seq[i], i, "key %s: position %d ran job %d",
                         keys[j], i, k[j].seq[i]);
            cr_assert_eq(k[j].routee[i], k[j].routee[0],
                         "key %s moved from routee %d to %d", keys[j],
                         k[j].routee[0], k[j].routee[i]);
        }
    }
    rp_router_destroy(r);
    rp_pool_destroy(p);
}

Test(consistent_hash, same_key_reaches_same_routee_through_router,
     .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "key", 4, 0, 0, rp_strategy_round_robin()), 0);
    rp_router *r = make_router(p, rp_strategy_consistent_hash(3));
    enum { KEYS = 61, REP = 5 }; /* 61: not a multiple of the pool size */
    static probe pr[KEYS][REP];
    char key[16];
    for (int rep = 0; rep < REP; rep++) {
        for (int i = 0; i < KEYS; i++) {
            probe_init(&pr[i][rep], &LOG, i, NULL);
            snprintf(key, sizeof key, "k%d", i);
            cr_assert_eq(rp_router_tell_key(r, key, strlen(key), probe_job,
                                            &pr[i][rep]), 0);
        }
    }
    cr_assert_eq(rp_pool_wait_idle(p, 10000), 0);
    int used[4] = {0};
    for (int i = 0; i < KEYS; i++) {
        const int owner = probe_routee(&pr[i][0]);
        cr_assert(owner >= 0 && owner < 4);
        used[owner] = 1;
        for (int rep = 0; rep < REP; rep++) {
            cr_assert_eq(probe_runs(&pr[i][rep]), 1);
            cr_assert_eq(probe_routee(&pr[i][rep]), owner,
                         "key %d: copy %d ran on %d, first on %d", i, rep,
                         probe_routee(&pr[i][rep]), owner);
        }
    }
    cr_assert_eq(used[0] + used[1] + used[2] + used[3], 4,
                 "61 keys did not reach all 4 routees");
    cr_assert_eq(tlog_nundel(&LOG), 0);
    rp_router_destroy(r);
    rp_pool_destroy(p);
}

/* ---- exact splits, observed as queue depths ---- */

Test(weighted, router_gives_exact_proportions_over_full_cycles,
     .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "w", 4, 0, 0, rp_strategy_round_robin()), 0);
    const unsigned w[4] = {1, 2, 3, 4};
    rp_router *r = make_router(p, rp_strategy_weighted(w, 4));
    gate g;
    gate_init(&g);
    probe holds[4];
    cr_assert(block_all_routees(p, holds, &LOG, &g));
    probe pr[20];
    probe_init_n(pr, 20, &LOG, 0, NULL);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(rp_router_tell(r, probe_job, &pr[i]), 0);
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(depth(p, i), 2 * (int64_t)w[i], "routee %zu depth %lld",
                     i, (long long)depth(p, i));
        cr_assert_eq(enqueued(p, i), 1 + 2 * (uint64_t)w[i]);
    }
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(tlog_nrun(&LOG), 24);
    cr_assert_eq(tlog_nundel(&LOG), 0);
    rp_router_destroy(r);
    rp_pool_destroy(p);
    gate_destroy(&g);
}

Test(round_robin, three_routees_nine_jobs_three_each_in_order,
     .init = setup, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "rr", 3, 0, 0, rp_strategy_round_robin()), 0);
    gate g;
    gate_init(&g);
    probe holds[3];
    cr_assert(block_all_routees(p, holds, &LOG, &g));
    int64_t d[3] = {0, 0, 0};
    probe pr[9];
    probe_init_n(pr, 9, &LOG, 0, NULL);
    int prev = -1;
    for (int i = 0; i < 9; i++) {
        cr_assert_eq(rp_pool_submit(p, probe_job, &pr[i]), 0);
        const int k = depth_step(p, d);
        if (prev >= 0)
            cr_assert_eq(k, (prev + 1) % 3, "job %d went to %d after %d", i, k,
                         prev);
        else
            cr_assert_eq(k, 0, "the first job goes to routee 0");
        prev = k;
    }
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(depth(p, i), 3);
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(tlog_nrun(&LOG), 12);
    cr_assert_eq(tlog_nundel(&LOG), 0);
    rp_pool_destroy(p);
    gate_destroy(&g);
}

/* ---- issue 15 item 2: an idle pool routes like round-robin ---- */

Test(smallest_mailbox, first_job_lands_on_routee_0_in_1000_fresh_pools, .init = setup,
     .timeout = 120)
{
    int elsewhere = 0;

    for (int k = 0; k < 1000; k++) {
        rp_pool *p = NULL;
        probe pr;
        cr_assert_eq(make_pool(&p, "first", 2, 0, 0, rp_strategy_smallest_mailbox()), 0);
        probe_init(&pr, NULL, k, NULL);
        cr_assert_eq(rp_pool_submit(p, probe_job, &pr), 0);
        cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
        cr_assert_eq(probe_runs(&pr), 1);
        elsewhere += probe_routee(&pr) != 0;
        rp_pool_destroy(p);
    }
    cr_assert_eq(elsewhere, 0, "the first job ran elsewhere than routee 0 in %d of 1000 pools",
                 elsewhere);
}
