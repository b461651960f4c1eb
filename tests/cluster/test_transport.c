/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/test_transport.c - tells to a named node: each runs once,
 * bounded prefetch, errors of tells (acknowledged and counted, not
 * retried), graceful leave hands unstarted entries to the others (the
 * node-level part of issue 19's test 7).
 */
#include <pthread.h>

#include "common_cluster.h"
#include "node.h"

TestSuite(transport, .init = cluster_setup, .fini = cluster_teardown, .timeout = 90);

Test(transport, tell__every_job_runs_exactly_once_on_its_node)
{
    h_node n;
    cr_assert_eq(h_node_start(&n, &redis, prefix, "a", NULL), 0);
    rp_cluster_node *c = client();
    enum { N = 500 };
    for (int i = 0; i < N; i++)
        tell(c, "a", "record", i);
    lines_arg la = {&n, 1, N};
    cr_assert(h_wait(enough_lines, &la, 30000), "only %ld of %d ran", h_count_lines(n.out), N);
    int counts[N];
    long dups;
    cr_assert_eq(tally(&n, 1, N, counts, &dups), N);
    for (int i = 0; i < N; i++)
        cr_assert_eq(counts[i], 1, "job %d ran %d times", i, counts[i]);
    cr_assert_eq(dups, 0);
    rp_cluster_stats s;
    cr_assert_eq(rp_cluster_node_stats(c, &s), 0);
    cr_assert_eq(s.added, N);
    cr_assert_eq(node_stat(c, "a", "fetched"), N + 1); /* + the stats ask itself */
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&n), 0);
    h_node_cleanup(&n);
}

Test(transport, tell__to_a_node_that_is_not_a_member_fails_enoroutee)
{
    rp_cluster_node *c = client();
    cr_assert_eq(rp_cluster_tell_node(c, "ghost", "record", "x", 1, NULL, 0), RP_ENOROUTEE);
    cr_assert(strstr(rp_errmsg(), "rp_cluster_tell_node"), "%s", rp_errmsg());
    redisContext *r = h_redis_connect(&redis);
    cr_assert_eq(h_int(r, "EXISTS %s:inbox:ghost", prefix), 0, "no orphan inbox");
    redisFree(r);
    cr_assert_eq(rp_cluster_tell_node(c, "bad id", "record", "x", 1, NULL, 0), RP_EINVAL);
    cr_assert_eq(rp_cluster_tell_node(c, "a", "bad handler", "x", 1, NULL, 0), RP_EINVAL);
    rp_cluster_leave(c);
}

typedef struct pel_arg {
    redisContext *r;
    long long max_seen;
    long long lines_target;
    const char *out;
} pel_arg;

/* Samples the pending count while the node works through its backlog. */
static bool sample_pending(void *arg)
{
    pel_arg *a = arg;
    redisReply *x = h_cmd(a->r, "XPENDING %s:inbox:slow rp", prefix);
    if (x && x->type == REDIS_REPLY_ARRAY && x->elements >= 1 &&
        x->element[0]->type == REDIS_REPLY_INTEGER && x->element[0]->integer > a->max_seen)
        a->max_seen = x->element[0]->integer;
    if (x)
        freeReplyObject(x);
    return h_count_lines(a->out) >= a->lines_target;
}

Test(transport, prefetch__is_bounded_by_max_inflight_and_backlog_stays_in_redis)
{
    h_node n;
    const char *extra[] = {"--routees", "1", "--inflight", "4", "--sleep-us", "5000", NULL};
    cr_assert_eq(h_node_start(&n, &redis, prefix, "slow", extra), 0);
    rp_cluster_node *c = client();
    enum { N = 200 };
    for (int i = 0; i < N; i++)
        tell(c, "slow", "record", i);
    pel_arg a = {h_redis_connect(&redis), 0, N, n.out};
    redisReply *len = h_cmd(a.r, "XLEN %s:inbox:slow", prefix);
    cr_assert(len && len->integer > N / 2, "the backlog waits in Redis");
    freeReplyObject(len);
    cr_assert(h_wait(sample_pending, &a, 60000), "all jobs ran");
    /* Fetched and unacknowledged: at most max_inflight running or queued,
     * plus at most as many finished ones waiting for the next batch ack. */
    cr_assert(a.max_seen >= 1 && a.max_seen <= 8, "pending peaked at %lld", a.max_seen);
    redisFree(a.r);
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&n), 0);
    h_node_cleanup(&n);
}

static bool inbox_empty(void *id)
{
    redisContext *r = h_redis_connect(&redis);
    long long n = h_int(r, "XLEN %s:inbox:%s", prefix, (const char *)id);
    redisFree(r);
    return n == 0;
}

Test(transport, tell__handler_errors_are_acked_and_counted_not_retried)
{
    h_node n;
    cr_assert_eq(h_node_start(&n, &redis, prefix, "a", NULL), 0);
    rp_cluster_node *c = client();
    for (int i = 0; i < 3; i++)
        tell(c, "a", "fail", i);
    for (int i = 0; i < 2; i++)
        tell(c, "a", "nosuchhandler", i);
    tell(c, "a", "record", 0);
    lines_arg la = {&n, 1, 1};
    cr_assert(h_wait(enough_lines, &la, 20000));
    cr_assert_eq(node_stat(c, "a", "failed"), 3);
    cr_assert_eq(node_stat(c, "a", "no_handler"), 2);
    /* Acknowledged and deleted: nothing pending, nothing left (the last
     * acknowledgements go with the node's next fetch). */
    cr_assert(h_wait(inbox_empty, "a", 5000), "the inbox drains");
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&n), 0);
    h_node_cleanup(&n);
}

Test(transport, leave__hands_unstarted_entries_to_the_others_without_running_them)
{
    h_node n[2];
    const char *slow[] = {"--routees", "1", "--inflight", "8", "--sleep-us", "3000", NULL};
    cr_assert_eq(h_node_start(&n[0], &redis, prefix, "leaver", slow), 0);
    cr_assert_eq(h_node_start(&n[1], &redis, prefix, "stayer", NULL), 0);
    rp_cluster_node *c = client();
    enum { N = 400 };
    for (int i = 0; i < N; i++)
        tell(c, "leaver", "record", i);
    lines_arg some = {&n[0], 1, 20};
    cr_assert(h_wait(enough_lines, &some, 20000));
    cr_assert_eq(h_node_term(&n[0]), 0, "graceful leave exits 0");
    /* Later jobs cannot go to the node that left. */
    cr_assert_eq(rp_cluster_tell_node(c, "leaver", "record", "x", 1, NULL, 0), RP_ENOROUTEE);
    lines_arg all = {n, 2, N};
    cr_assert(h_wait(enough_lines, &all, 60000), "every job ran");
    int counts[N];
    long dups;
    /* Exactly once: the leaver finished what ran and handed back the
     * rest unrun, so nobody ran anything twice. */
    cr_assert_eq(tally(n, 2, N, counts, &dups), N);
    for (int i = 0; i < N; i++)
        cr_assert_eq(counts[i], 1, "job %d ran %d times", i, counts[i]);
    cr_assert_eq(dups, 0);
    cr_assert(h_count_lines(n[1].out) > 0, "the stayer took over");
    redisContext *r = h_redis_connect(&redis);
    cr_assert_eq(h_int(r, "SISMEMBER %s:nodes leaver", prefix), 0);
    cr_assert_eq(h_int(r, "EXISTS %s:inbox:leaver", prefix), 0);
    redisFree(r);
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&n[1]), 0);
    h_node_cleanup(&n[0]);
    h_node_cleanup(&n[1]);
}

/* ---- the transport interface the routers use (lib/cluster/node.h) ---- */

Test(transport, send_batch__pipelines_many_tells_to_several_nodes)
{
    h_node n[2];
    cr_assert_eq(h_node_start(&n[0], &redis, prefix, "a", NULL), 0);
    cr_assert_eq(h_node_start(&n[1], &redis, prefix, "b", NULL), 0);
    rp_cluster_node *c = client();
    enum { N = 1000 };
    static char payloads[N][8];
    static rp__cluster_msg msgs[N];
    static const char *targets[N];
    for (int i = 0; i < N; i++) {
        int len = snprintf(payloads[i], sizeof payloads[i], "%d", i);
        msgs[i] = (rp__cluster_msg){"record", payloads[i], (size_t)len, NULL, 0};
        targets[i] = i % 2 ? "a" : "b";
    }
    size_t sent = 0;
    cr_assert_eq(rp__cluster_send_batch(c, "test", targets, msgs, N, &sent), 0, "%s",
                 rp_errmsg());
    cr_assert_eq(sent, N);
    lines_arg la = {n, 2, N};
    cr_assert(h_wait(enough_lines, &la, 30000));
    int counts[N];
    cr_assert_eq(tally(n, 2, N, counts, NULL), N);
    for (int i = 0; i < N; i++)
        cr_assert_eq(counts[i], 1);
    cr_assert_eq(h_count_lines(n[0].out), N / 2);
    /* One bad message: nothing is sent. */
    msgs[7].handler = "bad name";
    cr_assert_eq(rp__cluster_send_batch(c, "test", targets, msgs, N, &sent), RP_EINVAL);
    cr_assert_eq(sent, 0);
    rp_cluster_leave(c);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(h_node_term(&n[i]), 0);
        h_node_cleanup(&n[i]);
    }
}

typedef struct seen {
    pthread_mutex_t lock;
    int calls;
    bool saw_a;
    int64_t depth, age;
} seen;

static void on_members(const rp__cluster_member *m, size_t n, int64_t now, void *user)
{
    seen *s = user;
    pthread_mutex_lock(&s->lock);
    s->calls++;
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].id, "a") == 0) {
            s->saw_a = true;
            s->depth = m[i].depth;
            s->age = now - m[i].report_ms;
        }
    pthread_mutex_unlock(&s->lock);
}

static bool saw_a(void *arg)
{
    seen *s = arg;
    pthread_mutex_lock(&s->lock);
    bool ok = s->saw_a && s->calls >= 2;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

Test(transport, members__listeners_get_every_report_with_server_time)
{
    h_node n;
    cr_assert_eq(h_node_start(&n, &redis, prefix, "a", NULL), 0);
    rp_cluster_node *c = client();
    static seen s = {PTHREAD_MUTEX_INITIALIZER, 0, false, -1, -1};
    int h = rp__cluster_on_members(c, on_members, &s);
    cr_assert(h >= 0);
    cr_assert(h_wait(saw_a, &s, 10000));
    rp__cluster_off_members(c, h);
    pthread_mutex_lock(&s.lock);
    int calls = s.calls;
    cr_assert_eq(s.depth, 0, "an idle node reports depth 0");
    cr_assert(s.age >= -50 && s.age < 2000, "report age %lld ms", (long long)s.age);
    pthread_mutex_unlock(&s.lock);
    h_sleep_ms(500); /* would be several ticks: none may call it now */
    cr_assert_eq(s.calls, calls);
    cr_assert_not_null(rp__cluster_node_timer_pool(c));
    cr_assert_null(rp__cluster_node_pool(c));
    cr_assert_str_eq(rp__cluster_node_prefix(c), prefix);
    cr_assert_eq(rp__cluster_node_settings(c)->port, redis.port);
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&n), 0);
    h_node_cleanup(&n);
}
