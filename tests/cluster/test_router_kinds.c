/* SPDX-License-Identifier: MIT */
/*
 * test_router_kinds.c - the WEIGHTED and CUSTOM cluster router kinds on a
 * real redis-server: exact weighted shares on real node processes (also for
 * a node that is not in the weight list and joins later), dead and gone
 * nodes skipped, a custom pick choosing by payload, bad answers refused
 * with nothing sent, the pick called with no library lock held, and the
 * options' validation naming the field.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "routers_fixture.h"

TestSuite(kinds, .init = setup, .fini = teardown, .timeout = 120);

/* A router of kind with o's other fields at their defaults but the
 * weights (WEIGHTED) or the pick (CUSTOM). */
static rp_cluster_router *kind_router(rp_cluster_router_kind kind, const rp_cluster_weight *w,
                                      size_t n, unsigned dflt, rp_cluster_pick_fn fn, void *user)
{
    rp_cluster_router_options o;
    rp_cluster_router *r;

    rp_cluster_router_options_init(&o);
    o.kind = kind;
    o.weights = w;
    o.nweights = n;
    o.default_weight = dflt;
    o.pick = fn;
    o.pick_user = user;
    cr_assert_eq(rp_cluster_router_create(&r, client, &o), 0, "%s", rp_errmsg());
    return r;
}

static rp_cluster_router *weighted(const rp_cluster_weight *w, size_t n, unsigned dflt)
{
    return kind_router(RP_CLUSTER_ROUTER_WEIGHTED, w, n, dflt, NULL, NULL);
}

/* n jobs through r: the first half with rp_cluster_tell, the rest in one
 * rp_cluster_tell_batch (both take consecutive message indexes). */
static void send_jobs(rp_cluster_router *r, int n)
{
    enum { MAXB = 1024 };
    static char bufs[MAXB][16];
    const void *p[MAXB];
    size_t lens[MAXB], sent = 0;
    int half = n / 2;

    cr_assert_leq(n - half, MAXB);
    for (int i = 0; i < half; i++) {
        int len = snprintf(bufs[0], sizeof bufs[0], "w%d", i);
        cr_assert_eq(rp_cluster_tell(r, "record", bufs[0], (size_t)len), 0, "%s", rp_errmsg());
    }
    for (int i = half; i < n; i++) {
        lens[i - half] = (size_t)snprintf(bufs[i - half], sizeof bufs[0], "w%d", i);
        p[i - half] = bufs[i - half];
    }
    cr_assert_eq(rp_cluster_tell_batch(r, "record", p, lens, (size_t)(n - half), &sent), 0, "%s",
                 rp_errmsg());
    cr_assert_eq(sent, (size_t)(n - half));
}

/* Two real nodes (node-1, node-2) and, when late, a third (node-3) that
 * joins after the router was made; n jobs through a WEIGHTED router with
 * weights w and default dflt; then node i must have run exactly want[i]. */
static void weighted_run(const rp_cluster_weight *w, size_t nw, unsigned dflt, bool late, int n,
                         const long *want)
{
    int nn = late ? 3 : 2;
    rp_cluster_router *r;

    start_nodes(2);
    r = weighted(w, nw, dflt);
    wait_size(r, 2);
    if (late) {
        cr_assert_eq(h_node_start(&nodes[2], &redis, prefix, "node-3", NULL), 0);
        nnodes = 3;
        wait_size(r, 3);
    }
    send_jobs(r, n);
    cr_assert_eq(rp_cluster_router_size(r), (size_t)nn, "membership changed during the run");
    wait_lines(nn, n);
    h_sleep_ms(100); /* a job beyond n would show up now: none may */
    for (int i = 0; i < nn; i++)
        cr_assert_eq(h_count_lines(nodes[i].out), want[i], "%s", nodes[i].id);
    rp_cluster_router_destroy(r);
}

/* The router's weighted share is exact: node i gets weight(i) of every
 * W = sum-of-weights consecutive message indexes (the core's weighted
 * strategy), the index starts at 0 for the router's node list, and one
 * sender with stable membership uses consecutive indexes - so 400 jobs at
 * 3:1 are exactly 300 and 100, not "about". */
Test(kinds, weighted_3_to_1_over_two_real_nodes_gives_exactly_300_and_100_of_400)
{
    const rp_cluster_weight w[] = {{"node-1", 3}, {"node-2", 1}};
    const long want[] = {300, 100};

    weighted_run(w, 2, 1, false, 400, want);
}

/* node-3 is not in the list and joins later: it weighs the default, 2, so
 * W = 3 + 1 + 2 and 600 jobs split exactly 300 / 100 / 200. */
Test(kinds, weighted_a_node_not_in_the_list_that_joins_later_weighs_the_default)
{
    const rp_cluster_weight w[] = {{"node-1", 3}, {"node-2", 1}};
    const long want[] = {300, 100, 200};

    weighted_run(w, 2, 2, true, 600, want);
}

Test(kinds, weighted_skips_a_dead_node_and_a_node_found_gone)
{
    const rp_cluster_weight w[] = {{"f1", 3}, {"f2", 1}, {"f3", 1}};
    rp_cluster_router *r;

    fake_node("f1", 0, 0);
    fake_node("f2", 0, 0);
    fake_node("f3", 0, 0);
    r = weighted(w, 3, 1);
    cr_assert_eq(rp_cluster_router_size(r), 3);
    /* f1 is gone (inbox and membership) before the router refreshed: its
     * slots go to the next live node, no job is lost nor refused. */
    freeReplyObject(h_cmd(c, "SREM %s:nodes f1", prefix));
    freeReplyObject(h_cmd(c, "DEL %s:inbox:f1", prefix));
    for (int i = 0; i < 10; i++)
        cr_assert_eq(rp_cluster_tell(r, "record", "x", 1), 0, "%s", rp_errmsg());
    cr_assert_eq(inbox_len("f1"), 0);
    cr_assert_eq(inbox_len("f2") + inbox_len("f3"), 10);
    /* f3 is dead: its report is older than member_timeout_ms (3000).  The
     * refresh drops it and f1: f2 alone gets every job. */
    fake_node("f3", 0, 5000);
    freeReplyObject(h_cmd(c, "HDEL %s:depth f1", prefix));
    cr_assert_eq(rp_cluster_router_refresh(r), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_router_size(r), 1);
    {
        long long f2 = inbox_len("f2"), f3 = inbox_len("f3");
        for (int i = 0; i < 8; i++)
            cr_assert_eq(rp_cluster_tell(r, "record", "y", 1), 0, "%s", rp_errmsg());
        cr_assert_eq(inbox_len("f2"), f2 + 8);
        cr_assert_eq(inbox_len("f3"), f3, "the dead node got jobs");
    }
    rp_cluster_router_destroy(r);
}

Test(kinds, weighted_with_every_live_node_at_weight_0_sends_nothing)
{
    const rp_cluster_weight w[] = {{"f1", 0}, {"f9", 5}};
    rp_cluster_router *r;
    size_t sent = 7;
    const void *p[] = {"a"};
    const size_t lens[] = {1};

    fake_node("f1", 0, 0);
    r = weighted(w, 2, 0); /* f9 never joins; f1 weighs 0 */
    cr_assert_eq(rp_cluster_tell(r, "record", "x", 1), RP_ENOROUTEE);
    cr_assert(strstr(rp_errmsg(), "every live node has weight 0"), "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_tell_batch(r, "record", p, lens, 1, &sent), RP_ENOROUTEE, "%s",
                 rp_errmsg());
    cr_assert_eq(sent, 0);
    cr_assert_eq(inbox_len("f1"), 0);
    rp_cluster_router_destroy(r);
}

/* ---- custom ---- */

typedef struct by_payload {
    _Atomic int calls;
} by_payload;

static int index_of(const char *const *ids, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ids[i], id))
            return (int)i;
    return -1;
}

/* Payloads "a..." to node-1, everything else to node-2. */
static int pick_by_payload(const rp_cluster_pick_job *job, const char *const *ids, size_t n,
                           void *user)
{
    by_payload *b = user;
    const char *p = job->payload;

    atomic_fetch_add(&b->calls, 1);
    return index_of(ids, n, job->len && p[0] == 'a' ? "node-1" : "node-2");
}

static rp_cluster_router *custom(rp_cluster_pick_fn fn, void *user)
{
    return kind_router(RP_CLUSTER_ROUTER_CUSTOM, NULL, 0, 1, fn, user);
}

/* Whether every line of file starts with want (and there are n). */
static void lines_start_with(const char *path, char want, long n)
{
    char *b = h_read_file(path, NULL);
    long lines = 0;

    cr_assert_not_null(b, "%s missing", path);
    for (char *l = b; *l; lines++) {
        char *nl = strchr(l, '\n');
        cr_assert_eq(l[0], want, "%s has \"%.20s\"", path, l);
        if (!nl)
            break;
        l = nl + 1;
    }
    free(b);
    cr_assert_eq(lines, n, "%s has %ld lines", path, lines);
}

Test(kinds, custom_pick_routes_each_job_by_its_payload_on_real_nodes)
{
    by_payload b = {0};
    rp_cluster_router *r;
    const void *p[20];
    size_t lens[20], sent = 0, len;
    char bufs[20][8];
    rp_future *f;
    const char *reply;

    start_nodes(2);
    r = custom(pick_by_payload, &b);
    wait_size(r, 2);
    for (int i = 0; i < 20; i++) {
        const char *pl = i % 3 ? "b-tell" : "a-tell";
        cr_assert_eq(rp_cluster_tell(r, "record", pl, 6), 0, "%s", rp_errmsg());
    }
    for (int i = 0; i < 20; i++) { /* a batch: the pick sees each job */
        lens[i] = (size_t)snprintf(bufs[i], sizeof bufs[i], "%c-b%d", i % 2 ? 'a' : 'b', i);
        p[i] = bufs[i];
    }
    cr_assert_eq(rp_cluster_tell_batch(r, "record", p, lens, 20, &sent), 0, "%s", rp_errmsg());
    cr_assert_eq(sent, 20);
    cr_assert_eq(rp_cluster_ask(r, "echo", "a-ask", 5, 10000, &f), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_future_wait(f, 20000), 0);
    cr_assert_not_null(reply = rp_cluster_reply_bytes(f, &len), "%s", rp_errmsg());
    cr_assert_eq(len, 5);
    cr_assert_eq(memcmp(reply, "a-ask", 5), 0);
    rp_future_release(f);
    cr_assert_eq(atomic_load(&b.calls), 41, "one pick per job");
    wait_lines(2, 40);
    h_sleep_ms(100);
    lines_start_with(nodes[0].out, 'a', 7 + 10); /* i % 3 == 0 of 20, odd i of 20 */
    lines_start_with(nodes[1].out, 'b', 13 + 10);
    rp_cluster_router_destroy(r);
}

/* Answers *user, whatever the job. */
static int pick_fixed(const rp_cluster_pick_job *job, const char *const *ids, size_t n,
                      void *user)
{
    (void)job, (void)ids, (void)n;
    return *(const int *)user;
}

Test(kinds, custom_pick_out_of_range_or_refusing_sends_nothing_and_says_why)
{
    int answer = 2;
    rp_cluster_router *r;
    rp_future *f = (rp_future *)1;
    const void *p[] = {"a", "b"};
    const size_t lens[] = {1, 1};
    size_t sent = 9;

    fake_node("f1", 0, 0);
    fake_node("f2", 0, 0);
    r = custom(pick_fixed, &answer);
    cr_assert_eq(rp_cluster_tell(r, "record", "x", 1), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "rp_cluster_tell: router cluster: the pick callback returned 2, "
                                  "not a node index 0..1"), "%s", rp_errmsg());
    answer = INT_MAX;
    cr_assert_eq(rp_cluster_tell_key(r, "k", 1, "record", "x", 1), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "returned 2147483647"), "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_ask(r, "echo", "x", 1, 1000, &f), RP_EINVAL);
    cr_assert_null(f);
    cr_assert_eq(rp_cluster_tell_batch(r, "record", p, lens, 2, &sent), RP_EINVAL, "%s",
                 rp_errmsg());
    cr_assert_eq(sent, 0);
    answer = -1;
    cr_assert_eq(rp_cluster_tell(r, "record", "x", 1), RP_ENOROUTEE);
    cr_assert(strstr(rp_errmsg(), "the pick callback refused the job (returned -1)"), "%s",
              rp_errmsg());
    cr_assert_eq(inbox_len("f1") + inbox_len("f2"), 0, "nothing may be sent");
    answer = 1;
    cr_assert_eq(rp_cluster_tell(r, "record", "x", 1), 0, "%s", rp_errmsg());
    cr_assert_eq(inbox_len("f2"), 1);
    cr_assert_eq(inbox_len("f1"), 0);
    rp_cluster_router_destroy(r);
}

typedef struct reentrant {
    rp_cluster_router *self, *other;
    int calls;
    size_t seen_n[4];
    char first[4][8];
} reentrant;

/* Calls back into the library (this router's size and membership take its
 * lock; the other router routes a job) - a deadlock if the pick ran under
 * a lock - and always picks the first node it is offered. */
static int pick_reentrant(const rp_cluster_pick_job *job, const char *const *ids, size_t n,
                          void *user)
{
    reentrant *t = user;

    (void)job;
    if (t->calls < 4) {
        t->seen_n[t->calls] = n;
        snprintf(t->first[t->calls], sizeof t->first[0], "%s", ids[0]);
    }
    t->calls++;
    if (rp_cluster_router_size(t->self) == 0 || !rp_cluster_router_has(t->self, "f2") ||
        rp_cluster_tell(t->other, "record", "inner", 5) != 0)
        return -1;
    return 0;
}

Test(kinds, custom_pick_runs_without_library_locks_and_sees_only_live_nodes)
{
    reentrant t = {0};
    rp_cluster_router *r;

    fake_node("f1", 0, 0);
    fake_node("f2", 0, 0);
    fake_node("f3", 0, 0);
    t.other = make_router(RP_CLUSTER_ROUTER_ROUND_ROBIN, 0);
    t.self = r = custom(pick_reentrant, &t);
    cr_assert_eq(rp_cluster_tell(r, "record", "outer", 5), 0, "%s", rp_errmsg());
    cr_assert_eq(t.calls, 1);
    cr_assert_eq(t.seen_n[0], 3);
    /* f1 goes before the refresh: the pick offered [f1 f2 f3] chooses f1,
     * the send finds it gone, and the job is routed again among the rest:
     * the pick is offered [f2 f3] and the job lands on f2. */
    freeReplyObject(h_cmd(c, "SREM %s:nodes f1", prefix));
    freeReplyObject(h_cmd(c, "DEL %s:inbox:f1", prefix));
    cr_assert_eq(rp_cluster_tell(r, "record", "outer", 5), 0, "%s", rp_errmsg());
    cr_assert_eq(t.calls, 3);
    cr_assert_eq(t.seen_n[1], 3);
    cr_assert_str_eq(t.first[1], "f1");
    cr_assert_eq(t.seen_n[2], 2);
    cr_assert_str_eq(t.first[2], "f2");
    {
        char got[64];
        /* The other router's round-robin put inner jobs 2 and 3 on f2 and
         * f3 (its f1 went with the inbox). */
        cr_assert_eq(inbox_len("f1"), 0);
        inbox_payloads("f2", got, sizeof got);
        cr_assert_str_eq(got, "inner,outer,");
        inbox_payloads("f3", got, sizeof got);
        cr_assert_str_eq(got, "inner,");
    }
    rp_cluster_router_destroy(r);
    rp_cluster_router_destroy(t.other);
}

/* ---- validation ---- */

static void expect_invalid(const rp_cluster_router_options *o, const char *needle)
{
    rp_cluster_router *r = (rp_cluster_router *)1;

    cr_assert_eq(rp_cluster_router_create(&r, client, o), RP_EINVAL, "wanted \"%s\"", needle);
    cr_assert_null(r);
    cr_assert(strstr(rp_errmsg(), needle), "\"%s\" lacks \"%s\"", rp_errmsg(), needle);
}

Test(kinds, options_of_the_kinds_are_validated_naming_the_field)
{
    rp_cluster_weight w[3] = {{"a", 1}, {"b", 2}, {"a", 3}};
    rp_cluster_router_options o;
    int answer = 0;

    rp_cluster_router_options_init(&o);
    cr_assert_eq(o.default_weight, 1);
    cr_assert_null(o.weights);
    cr_assert_null(o.pick);
    o.kind = RP_CLUSTER_ROUTER_WEIGHTED;
    o.nweights = 2;
    expect_invalid(&o, "rp_cluster_router_create: opts.weights is NULL with opts.nweights 2");
    o.weights = w;
    o.nweights = 3;
    expect_invalid(&o, "opts.weights names node \"a\" twice");
    w[2] = (rp_cluster_weight){NULL, 1};
    expect_invalid(&o, "opts.weights[2].node_id is NULL");
    w[2] = (rp_cluster_weight){"bad id", 1};
    expect_invalid(&o, "opts.weights[2].node_id is not a node id");
    w[2] = (rp_cluster_weight){"c", RP_WEIGHT_MAX + 1};
    expect_invalid(&o, "opts.weights[2].weight must be 0..1000000 (got 1000001)");
    w[0].weight = w[1].weight = w[2].weight = 0;
    o.default_weight = 0;
    expect_invalid(&o, "opts.weights and opts.default_weight are all 0");
    o.default_weight = RP_WEIGHT_MAX + 1;
    expect_invalid(&o, "opts.default_weight must be 0..1000000");
    o.default_weight = 1;
    o.nweights = RP_ROUTEES_MAX + 1;
    expect_invalid(&o, "opts.nweights must be 0..4096");
    o.nweights = 3;
    o.kind = RP_CLUSTER_ROUTER_ROUND_ROBIN;
    expect_invalid(&o, "opts.weights is set but opts.kind is not RP_CLUSTER_ROUTER_WEIGHTED");
    rp_cluster_router_options_init(&o);
    o.kind = RP_CLUSTER_ROUTER_CUSTOM;
    expect_invalid(&o, "opts.pick is NULL");
    o.kind = RP_CLUSTER_ROUTER_RANDOM;
    o.pick = pick_fixed;
    o.pick_user = &answer;
    expect_invalid(&o, "opts.pick is set but opts.kind is not RP_CLUSTER_ROUTER_CUSTOM");
    o.kind = (rp_cluster_router_kind)(RP_CLUSTER_ROUTER_CUSTOM + 1);
    expect_invalid(&o, "opts.kind is not an rp_cluster_router_kind");
}
