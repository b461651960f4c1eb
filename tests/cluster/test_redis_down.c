/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/test_redis_down.c - Redis failures (issue 19's test 6 and
 * the transport's fault handling): Redis killed and restarted mid-run
 * (submits fail fast with RP_EUNAVAILABLE while it is down, the local pool
 * keeps working, nodes recover within 5 s, every accepted job completes);
 * a deleted inbox (NOGROUP: the group is re-created); SCRIPT FLUSH
 * (EVALSHA falls back to EVAL); CLIENT KILL (reconnects counted); ACL
 * users confined to the deployment's prefix (NOPERM elsewhere) and a
 * wrong password.
 */
#include <stdatomic.h>

#include "common_cluster.h"

TestSuite(down, .fini = cluster_teardown, .timeout = 120);

enum { N1 = 300, N2 = 300, NDOWN = 50 };

static atomic_int local_runs;

static void local_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_fetch_add(&local_runs, 1);
}

typedef struct accepted {
    char ok[N1 + N2 + NDOWN + 1000];
    h_node *nodes;
} accepted;

static bool accepted_all_ran(void *arg)
{
    accepted *a = arg;
    static int counts[N1 + N2 + NDOWN + 1000];
    tally(a->nodes, 2, N1 + N2 + NDOWN + 1000, counts, NULL);
    for (int i = 0; i < N1 + N2 + NDOWN + 1000; i++)
        if (a->ok[i] && counts[i] == 0)
            return false;
    return true;
}

static int send_i(rp_cluster_node *c, int i)
{
    char p[16];
    int n = snprintf(p, sizeof p, "%d", i);
    return rp_cluster_tell_node(c, i % 2 ? "a" : "b", "record", p, (size_t)n, NULL, 0);
}

/* The local member node and pool of the test process. */
static rp_cluster_node *local_member(rp_pool **pool)
{
    rp_pool_options po;
    rp_pool_options_init(&po);
    po.routees = 2;
    cr_assert_eq(rp_pool_create(pool, &po), 0);
    rp_cluster_options o;
    rp_cluster_node *m;
    client_opts(&o, "local");
    cr_assert_eq(rp_cluster_join(&m, *pool, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_start(m), 0);
    return m;
}

/* Two nodes a and b, the local member and a client; N1 jobs, Redis killed
 * (NDOWN submits fail fast with RP_EUNAVAILABLE, the local pool keeps
 * working), restarted (same port, directory and - under
 * h_redis_start_acl() - ACL file), recovery within 5 s, N2 more jobs, and
 * every accepted job completes on the nodes, which reconnected.  The
 * client and the nodes are left to the caller (leave / h_node_term). */
static rp_cluster_node *restart_mid_run(h_node *n, rp_pool **pool, rp_cluster_node **local)
{
    const char *args[] = {"--heartbeat", "100", "--sleep-us", "300", NULL};
    cr_assert_eq(h_node_start(&n[0], &redis, prefix, "a", args), 0);
    cr_assert_eq(h_node_start(&n[1], &redis, prefix, "b", args), 0);
    *local = local_member(pool);
    rp_cluster_node *c = client();
    static accepted acc;
    memset(&acc, 0, sizeof acc);
    acc.nodes = n;
    for (int i = 0; i < N1; i++) {
        cr_assert_eq(send_i(c, i), 0, "%s", rp_errmsg());
        acc.ok[i] = 1;
    }
    /* A least-used router: its refresh connection and its set's connection
     * must come back too. */
    rp_cluster_router_options ro;
    rp_cluster_router *lr;
    rp_cluster_router_options_init(&ro);
    ro.kind = RP_CLUSTER_ROUTER_LEAST_USED;
    cr_assert_eq(rp_cluster_router_create(&lr, c, &ro), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_tell(lr, "record", "900100", 6), 0, "%s", rp_errmsg());
    h_redis_kill(&redis);
    long long worst = 0;
    for (int i = N1; i < N1 + NDOWN; i++) {
        long long t0 = h_now_ms();
        int rc = send_i(c, i);
        long long dt = h_now_ms() - t0;
        worst = dt > worst ? dt : worst;
        cr_assert_eq(rc, RP_EUNAVAILABLE, "send %d while Redis is down: %d", i, rc);
        cr_assert(strstr(rp_errmsg(), "unavailable"), "%s", rp_errmsg());
        h_sleep_ms(10);
    }
    cr_assert(worst < 1000, "a submit while down took %lld ms", worst);
    /* The local pool does not need Redis. */
    atomic_store(&local_runs, 0);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(rp_pool_submit(*pool, local_job, NULL), 0);
    cr_assert_eq(rp_pool_wait_idle(*pool, 10000), 0);
    cr_assert_eq(atomic_load(&local_runs), 100);
    cr_assert_eq(h_redis_restart(&redis), 0);
    long long t0 = h_now_ms();
    int i = N1 + NDOWN;
    while (send_i(c, i) != 0) {
        cr_assert(h_now_ms() - t0 < 5000, "no recovery within 5 s: %s", rp_errmsg());
        h_sleep_ms(20);
    }
    acc.ok[i++] = 1;
    for (int k = 0; k < N2; k++, i++) {
        cr_assert_eq(send_i(c, i), 0, "%s", rp_errmsg());
        acc.ok[i] = 1;
    }
    cr_assert(h_wait(accepted_all_ran, &acc, 60000), "every accepted job completes");
    t0 = h_now_ms();
    while (rp_cluster_router_refresh(lr) != 0 || rp_cluster_router_size(lr) != 3 ||
           rp_cluster_tell(lr, "record", "900101", 6) != 0) {
        cr_assert(h_now_ms() - t0 < 5000, "the router did not recover within 5 s: %s",
                  rp_errmsg());
        h_sleep_ms(20);
    }
    rp_cluster_router_destroy(lr);
    rp_cluster_stats s;
    rp_cluster_node_stats(c, &s);
    cr_assert(s.reconnects >= 1);
    cr_assert(node_stat(c, "a", "reconnects") >= 1);
    cr_assert(node_stat(c, "b", "reconnects") >= 1);
    return c;
}

static void stop_all(h_node *n, rp_pool *pool, rp_cluster_node *local, rp_cluster_node *c)
{
    rp_cluster_leave(c);
    rp_cluster_leave(local);
    rp_pool_destroy(pool);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(h_node_term(&n[k]), 0);
        h_node_cleanup(&n[k]);
    }
}

Test(down, redis_restart__fails_fast_while_down_recovers_and_loses_nothing, .init = cluster_setup_aof)
{
    h_node n[2];
    rp_pool *pool;
    rp_cluster_node *local, *c = restart_mid_run(n, &pool, &local);

    stop_all(n, pool, local, c);
}

static void setup_aof_acl(void)
{
    cr_assert_eq(h_redis_start_acl(&redis, true, "dep", "s3cret"), 0,
                 "redis-server must start (in PATH?)");
    h_prefix(prefix, sizeof prefix);
}

/* The default user is off: a connection that did not AUTH as "dep" can run
 * nothing (NOAUTH), so the jobs sent after the restart run only because
 * every reconnected connection - the nodes' fetch, send, heartbeat and
 * reply connections, the client's - sent AUTH again.  Then the command
 * timeout: a reconnected context that lost it would wait out a CLIENT
 * PAUSE (3 s) instead of failing after command_timeout_ms (500 ms). */
Test(down, redis_restart_with_acl__auth_and_timeouts_are_reapplied_on_reconnect,
     .init = setup_aof_acl)
{
    h_node n[2];
    rp_pool *pool;
    rp_cluster_node *local, *c = restart_mid_run(n, &pool, &local);
    rp_cluster_options o;
    rp_cluster_node *t, *bad;

    client_opts(&o, "timed");
    o.command_timeout_ms = 500;
    cr_assert_eq(rp_cluster_join(&t, NULL, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_tell_node(t, "a", "record", "899999", 6, NULL, 0), 0, "%s",
                 rp_errmsg()); /* t's send connection is up */
    redisContext *r = h_redis_connect(&redis);
    cr_assert_not_null(r, "the harness AUTHs as dep");
    freeReplyObject(h_cmd(r, "CLIENT KILL TYPE normal SKIPME yes"));
    redisFree(r);
    /* t's send connection died: its next send reconnects (AUTH, timeout). */
    int rc = rp_cluster_tell_node(t, "a", "record", "900000", 6, NULL, 0);
    if (rc != 0)
        rc = rp_cluster_tell_node(t, "a", "record", "900000", 6, NULL, 0);
    cr_assert_eq(rc, 0, "%s", rp_errmsg());
    rp_cluster_stats s;
    rp_cluster_node_stats(t, &s);
    cr_assert_geq(s.reconnects, 1, "the send went over a reconnected context");
    r = h_redis_connect(&redis);
    freeReplyObject(h_cmd(r, "CLIENT PAUSE 3000 ALL"));
    long long t0 = h_now_ms();
    rc = rp_cluster_tell_node(t, "a", "record", "900001", 6, NULL, 0);
    long long dt = h_now_ms() - t0;
    cr_assert_eq(rc, RP_EUNAVAILABLE, "a send during the pause: %d", rc);
    cr_assert(dt >= 400 && dt < 2000, "the send gave up after %lld ms, not ~500", dt);
    freeReplyObject(h_cmd(r, "CLIENT UNPAUSE"));
    redisFree(r);
    rp_cluster_leave(t);
    /* A wrong password is refused, saying so. */
    client_opts(&o, "intruder");
    o.password = "wrong";
    cr_assert_eq(rp_cluster_join(&bad, NULL, &o), RP_EUNAVAILABLE);
    cr_assert_null(bad);
    cr_assert(strstr(rp_errmsg(), "AUTH refused: WRONGPASS"), "%s", rp_errmsg());
    stop_all(n, pool, local, c);
}

static bool has_lines(void *arg)
{
    lines_arg *la = arg;
    return enough_lines(la);
}

Test(down, nogroup__a_deleted_inbox_gets_its_group_back, .init = cluster_setup)
{
    h_node n;
    cr_assert_eq(h_node_start(&n, &redis, prefix, "a", NULL), 0);
    rp_cluster_node *c = client();
    redisContext *r = h_redis_connect(&redis);
    cr_assert_eq(h_int(r, "DEL %s:inbox:a", prefix), 1);
    /* Without its inbox the node takes nothing (sends never create one)
     * until its next read meets NOGROUP and makes inbox and group again. */
    long long t0 = h_now_ms();
    int rc;
    while ((rc = rp_cluster_tell_node(c, "a", "record", "1", 1, NULL, 0)) == RP_ENOROUTEE) {
        cr_assert(h_now_ms() - t0 < 5000, "the inbox is back within 5 s");
        h_sleep_ms(10);
    }
    cr_assert_eq(rc, 0, "%s", rp_errmsg());
    lines_arg la = {&n, 1, 1};
    cr_assert(h_wait(has_lines, &la, 10000), "the node re-created its group and ran the job");
    redisFree(r);
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&n), 0);
    h_node_cleanup(&n);
}

/* The server ms of node a's depth report, or -1. */
static long long report_ms(redisContext *r)
{
    redisReply *x = h_cmd(r, "HGET %s:depth a", prefix);
    long long ms = -1;
    if (x && x->type == REDIS_REPLY_STRING && strchr(x->str, ':'))
        ms = atoll(strchr(x->str, ':') + 1);
    if (x)
        freeReplyObject(x);
    return ms;
}

typedef struct report_arg {
    redisContext *r;
    long long first;
} report_arg;

static bool report_moved(void *arg)
{
    report_arg *a = arg;
    return report_ms(a->r) > a->first;
}

Test(down, script_flush__the_heartbeat_scripts_fall_back_to_eval, .init = cluster_setup)
{
    h_node n;
    cr_assert_eq(h_node_start(&n, &redis, prefix, "a", NULL), 0);
    rp_cluster_node *c = client();
    redisContext *r = h_redis_connect(&redis);
    for (int i = 0; i < 20; i++) {
        tell(c, "a", "record", i);
        if (i % 5 == 0)
            freeReplyObject(h_cmd(r, "SCRIPT FLUSH"));
    }
    lines_arg la = {&n, 1, 20};
    cr_assert(h_wait(has_lines, &la, 10000));
    /* The heartbeat's scripts too: the node's report keeps advancing. */
    freeReplyObject(h_cmd(r, "SCRIPT FLUSH"));
    report_arg ra = {r, report_ms(r)};
    cr_assert(ra.first > 0);
    cr_assert(h_wait(report_moved, &ra, 5000), "the depth report is written after the flush");
    rp_future *f;
    cr_assert_eq(rp_cluster_ask_node(c, "a", "echo", "e", 1, 5000, &f), 0);
    cr_assert_eq(rp_future_wait(f, 10000), 0);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FULFILLED);
    rp_future_release(f);
    redisFree(r);
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&n), 0);
    h_node_cleanup(&n);
}

Test(down, client_kill__connections_reconnect_and_count_it, .init = cluster_setup)
{
    h_node n;
    cr_assert_eq(h_node_start(&n, &redis, prefix, "a", NULL), 0);
    rp_cluster_node *c = client();
    tell(c, "a", "record", 0);
    redisContext *r = h_redis_connect(&redis);
    freeReplyObject(h_cmd(r, "CLIENT KILL TYPE normal SKIPME yes"));
    /* The first send after the kill may find its connection dead. */
    int rc = rp_cluster_tell_node(c, "a", "record", "1", 1, NULL, 0);
    if (rc != 0)
        rc = rp_cluster_tell_node(c, "a", "record", "1", 1, NULL, 0);
    cr_assert_eq(rc, 0, "%s", rp_errmsg());
    lines_arg la = {&n, 1, 2};
    cr_assert(h_wait(has_lines, &la, 10000));
    cr_assert(node_stat(c, "a", "reconnects") >= 1);
    redisFree(r);
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&n), 0);
    h_node_cleanup(&n);
}

Test(down, acl__a_user_confined_to_its_prefix_is_refused_elsewhere, .init = cluster_setup)
{
    redisContext *r = h_redis_connect(&redis);
    redisReply *x = h_cmd(r, "ACL SETUSER dep on >s3cret ~%s:* +@all", prefix);
    cr_assert(x && x->type == REDIS_REPLY_STATUS);
    freeReplyObject(x);
    rp_cluster_options o;
    rp_cluster_node *node;
    client_opts(&o, "acl");
    o.user = "dep";
    o.password = "s3cret";
    cr_assert_eq(rp_cluster_join(&node, NULL, &o), 0, "%s", rp_errmsg());
    rp_cluster_leave(node);
    o.prefix = "other";
    cr_assert_eq(rp_cluster_join(&node, NULL, &o), RP_EUNAVAILABLE);
    cr_assert(strstr(rp_errmsg(), "NOPERM"), "%s", rp_errmsg());
    o.prefix = prefix;
    o.password = "wrong";
    cr_assert_eq(rp_cluster_join(&node, NULL, &o), RP_EUNAVAILABLE);
    cr_assert(strstr(rp_errmsg(), "AUTH"), "%s", rp_errmsg());
    redisFree(r);
}

Test(down, lost_read_reply__a_reconnected_node_runs_what_was_delivered_to_it, .init = cluster_setup)
{
    h_node n;
    cr_assert_eq(h_node_start(&n, &redis, prefix, "a", NULL), 0);
    rp_cluster_node *c = client();
    tell(c, "a", "record", 1); /* once it ran, the node's fetching is up */
    lines_arg first = {&n, 1, 1};
    cr_assert(h_wait(has_lines, &first, 10000));
    rp_cluster_leave(c);
    redisContext *r = h_redis_connect(&redis);
    /* Deliver an entry to consumer "a" the way a read whose reply was lost
     * would: in one transaction, so the node's blocked read never sees it. */
    freeReplyObject(h_cmd(r, "MULTI"));
    freeReplyObject(h_cmd(r, "XADD %s:inbox:a * id x:1 h record p 777", prefix));
    freeReplyObject(h_cmd(r, "XREADGROUP GROUP rp a COUNT 1 STREAMS %s:inbox:a >", prefix));
    redisReply *x = h_cmd(r, "EXEC");
    cr_assert(x && x->type == REDIS_REPLY_ARRAY && x->elements == 2);
    freeReplyObject(x);
    h_sleep_ms(300); /* a live node would have run it by now, were it told */
    char *before = h_read_file(n.out, NULL);
    cr_assert_str_eq(before, "1 1\n", "the node does not know it holds the entry");
    free(before);
    /* Its connections drop and come back: it re-reads its pending list. */
    freeReplyObject(h_cmd(r, "CLIENT KILL TYPE normal SKIPME yes"));
    lines_arg la = {&n, 1, 2};
    cr_assert(h_wait(has_lines, &la, 10000), "the delivered entry runs after the reconnect");
    char *out = h_read_file(n.out, NULL);
    cr_assert_str_eq(out, "1 1\n777 1\n");
    free(out);
    redisFree(r);
    cr_assert_eq(h_node_term(&n), 0);
    h_node_cleanup(&n);
}
