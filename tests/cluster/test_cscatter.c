/* SPDX-License-Identifier: MIT */
/*
 * test_cscatter.c - scatter-gather-first-completed over cluster nodes and
 * asks through a cluster router (issue 19, test 9): seed 004's contract -
 * the first reply wins over a silent node; all silent gives "none of 3
 * routees replied within Tms" with 3 RP_ETIMEDOUT members; all failing gives
 * "all 3 routees failed" with each member's remote code and message; no node
 * gives "no routees left to scatter to"; destroying the router gives
 * "stopped while the scatter was still open"; the outcome counters and the
 * latency histogram.  Nodes are test_node processes.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "routepool/cluster.h"
#include "routepool/routepool.h"
#include "assert_no_leaks.h"

static h_redis redis;
static char prefix[64];
static rp_cluster_node *client;
static h_node nodes[3];
static int nnodes;

static void setup(void)
{
    rp_cluster_options o;

    cr_assert_eq(h_redis_start(&redis, false), 0, "redis-server must start (in PATH?)");
    h_prefix(prefix, sizeof prefix);
    rp_cluster_options_init(&o);
    o.redis = redis.addr;
    o.prefix = prefix;
    o.node_id = "asker";
    cr_assert_eq(rp_cluster_join(&client, NULL, &o), 0, "%s", rp_errmsg());
}

static void teardown(void)
{
    for (int i = 0; i < nnodes; i++) {
        if (nodes[i].pid) {
            kill(nodes[i].pid, SIGCONT);
            h_node_kill9(&nodes[i]);
        }
        h_node_cleanup(&nodes[i]);
    }
    nnodes = 0;
    rp_cluster_leave(client);
    client = NULL;
    h_redis_stop(&redis);
    ASSERT_NO_LEAKS();
}

TestSuite(cscatter, .init = setup, .fini = teardown, .timeout = 120);

static void start_nodes(int n)
{
    char id[16];

    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "node-%d", i + 1);
        cr_assert_eq(h_node_start(&nodes[i], &redis, prefix, id, NULL), 0, "node %d", i + 1);
    }
    nnodes = n;
}

/* Whether /proc/<pid>/task/<tid>/stat says stopped ("pid (comm) T ..."). */
static bool task_stopped(const char *path)
{
    char buf[256], *p;
    FILE *f = fopen(path, "r");
    size_t n;

    if (!f)
        return false;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

/* Every thread of the process is stopped. */
static bool is_stopped(void *arg)
{
    char path[300];
    struct dirent *d;
    bool all = true;
    DIR *dir;

    snprintf(path, sizeof path, "/proc/%d/task", (int)*(pid_t *)arg);
    if (!(dir = opendir(path)))
        return false;
    while (all && (d = readdir(dir)))
        if (d->d_name[0] != '.') {
            snprintf(path, sizeof path, "/proc/%d/task/%.32s/stat", (int)*(pid_t *)arg,
                     d->d_name);
            all = task_stopped(path);
        }
    closedir(dir);
    return all;
}

/* SIGSTOP a node and wait until every thread of it has stopped (kill()
 * returns before that): a silent node, for sure. */
static void silence(h_node *n)
{
    cr_assert_eq(kill(n->pid, SIGSTOP), 0);
    cr_assert(h_wait(is_stopped, &n->pid, 10000), "%s did not stop", n->id);
}

static rp_cluster_router *router(double timeout_ms, size_t want)
{
    rp_cluster_router_options o;
    rp_cluster_router *r;
    long long end = h_now_ms() + 20000;

    rp_cluster_router_options_init(&o);
    o.name = "replicas";
    o.scatter_timeout_ms = timeout_ms;
    cr_assert_eq(rp_cluster_router_create(&r, client, &o), 0, "%s", rp_errmsg());
    while (rp_cluster_router_size(r) != want && h_now_ms() < end) {
        h_sleep_ms(10); /* bounded: the nodes' first reports */
        rp_cluster_router_refresh(r);
    }
    cr_assert_eq(rp_cluster_router_size(r), want);
    return r;
}

static const rp_error *wait_failed(rp_future *f)
{
    cr_assert_eq(rp_future_wait(f, 20000), 0, "the scatter never resolved");
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FAILED);
    return rp_future_error(f);
}

Test(cscatter, one_silent_node_first_reply_wins)
{
    rp_cluster_router *r;
    rp_scatter_stats st;
    rp_future *f;
    const char *bytes;
    size_t len;

    start_nodes(3);
    r = router(5000, 3);
    silence(&nodes[2]); /* node-3 stops answering anything */
    cr_assert_eq(rp_cluster_scatter(r, "echo", "user-42", 7, &f), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_future_wait(f, 20000), 0);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FULFILLED, "%s",
                 rp_future_error(f) ? rp_future_error(f)->message : "");
    bytes = rp_cluster_reply_bytes(f, &len);
    cr_assert_eq(len, 7);
    cr_assert_eq(memcmp(bytes, "user-42", 7), 0);
    cr_assert(rp_future_routee(f) == 0 || rp_future_routee(f) == 1,
              "the winner is node %d", rp_future_routee(f) + 1);
    cr_assert_eq(rp_cluster_router_scatter_stats(r, &st), 0);
    cr_assert_eq(st.resolved[RP_SCATTER_FIRST], 1);
    cr_assert_eq(st.resolved[RP_SCATTER_TIMEOUT] + st.resolved[RP_SCATTER_ALL_FAILED], 0);
    cr_assert_eq(st.latency_count, 1);
    rp_future_release(f);
    rp_cluster_router_destroy(r);
}

Test(cscatter, all_silent_fail_with_the_timeout_aggregate_and_3_timeout_members)
{
    rp_cluster_router *r;
    rp_scatter_stats st;
    const rp_error *e;
    rp_future *f;

    start_nodes(3);
    r = router(300, 3);
    for (int i = 0; i < 3; i++)
        silence(&nodes[i]);
    cr_assert_eq(rp_cluster_scatter(r, "echo", "x", 1, &f), 0, "%s", rp_errmsg());
    e = wait_failed(f);
    cr_assert_eq(e->code, RP_EAGGREGATE);
    cr_assert_str_eq(e->message, "replicas: none of 3 routees replied within 300ms");
    cr_assert_eq(e->nmembers, 3);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(e->members[i].code, RP_ETIMEDOUT, "member %zu: %s", i, e->members[i].message);
        cr_assert_eq(e->members[i].routee, (int)i, "members in scatter order");
    }
    cr_assert_eq(rp_cluster_router_scatter_stats(r, &st), 0);
    cr_assert_eq(st.resolved[RP_SCATTER_TIMEOUT], 1);
    cr_assert_eq(st.latency_count, 1);
    cr_assert_geq(st.latency_sum_seconds, 0.3);
    rp_future_release(f);
    rp_cluster_router_destroy(r);
}

Test(cscatter, all_failing_give_all_3_failed_with_each_members_message_intact)
{
    rp_cluster_router *r;
    rp_scatter_stats st;
    const rp_error *e;
    rp_future *f;

    start_nodes(3);
    r = router(5000, 3);
    cr_assert_eq(rp_cluster_scatter(r, "fail", "x", 1, &f), 0, "%s", rp_errmsg());
    e = wait_failed(f);
    cr_assert_eq(e->code, RP_EAGGREGATE);
    cr_assert_str_eq(e->message, "replicas: all 3 routees failed");
    cr_assert_eq(e->nmembers, 3);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(e->members[i].code, -77, "member %zu: code %d", i, e->members[i].code);
        cr_assert_str_eq(e->members[i].message, "failed on purpose");
    }
    cr_assert_eq(rp_cluster_router_scatter_stats(r, &st), 0);
    cr_assert_eq(st.resolved[RP_SCATTER_ALL_FAILED], 1);
    rp_future_release(f);
    rp_cluster_router_destroy(r);
}

Test(cscatter, unknown_handler_everywhere_is_all_failed_with_enohandler_members)
{
    rp_cluster_router *r;
    const rp_error *e;
    rp_future *f;

    start_nodes(2);
    r = router(5000, 2);
    cr_assert_eq(rp_cluster_scatter(r, "no-such-handler", "", 0, &f), 0, "%s", rp_errmsg());
    e = wait_failed(f);
    cr_assert_str_eq(e->message, "replicas: all 2 routees failed");
    for (size_t i = 0; i < e->nmembers; i++)
        cr_assert_eq(e->members[i].code, RP_ENOHANDLER);
    rp_future_release(f);
    rp_cluster_router_destroy(r);
}

Test(cscatter, no_live_node_gives_no_routees_left_to_scatter_to)
{
    rp_cluster_router *r = router(1000, 0);
    rp_scatter_stats st;
    const rp_error *e;
    rp_future *f;

    cr_assert_eq(rp_cluster_scatter(r, "echo", "x", 1, &f), 0, "%s", rp_errmsg());
    e = wait_failed(f);
    cr_assert_eq(e->code, RP_EAGGREGATE);
    cr_assert_str_eq(e->message, "replicas: no routees left to scatter to");
    cr_assert_eq(e->nmembers, 0);
    cr_assert_eq(rp_cluster_router_scatter_stats(r, &st), 0);
    cr_assert_eq(st.resolved[RP_SCATTER_ALL_FAILED], 1);
    rp_future_release(f);
    rp_cluster_router_destroy(r);
}

Test(cscatter, destroying_the_router_fails_an_open_scatter_as_stopped)
{
    rp_cluster_router *r;
    const rp_error *e;
    rp_future *f;

    start_nodes(2);
    r = router(5000, 2);
    cr_assert_eq(rp_cluster_scatter(r, "slow", "300", 3, &f), 0, "%s", rp_errmsg());
    rp_cluster_router_destroy(r);
    e = wait_failed(f);
    cr_assert_eq(e->code, RP_EAGGREGATE);
    cr_assert_str_eq(e->message, "replicas: stopped while the scatter was still open");
    cr_assert_eq(e->nmembers, 0);
    /* The members' replies still arrive (after ~300 ms) and complete their
     * own asks, with the router gone: nothing may touch it. */
    h_sleep_ms(800);
    rp_future_release(f);
}

Test(cscatter, ask_through_a_router_round_trips_bytes_and_remote_failures)
{
    rp_cluster_router *r;
    rp_future *f;
    const char *bytes;
    size_t len;

    start_nodes(2);
    r = router(5000, 2);
    cr_assert_eq(rp_cluster_ask(r, "echo", "ping\0pong", 9, 5000, &f), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_future_wait(f, 20000), 0);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FULFILLED);
    bytes = rp_cluster_reply_bytes(f, &len);
    cr_assert_eq(len, 9);
    cr_assert_eq(memcmp(bytes, "ping\0pong", 9), 0);
    rp_future_release(f);
    cr_assert_eq(rp_cluster_ask(r, "fail", "", 0, 5000, &f), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_future_wait(f, 20000), 0);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FAILED);
    cr_assert_eq(rp_future_error(f)->code, -77);
    cr_assert_str_eq(rp_future_error(f)->message, "failed on purpose");
    rp_future_release(f);
    rp_cluster_router_destroy(r);
}
