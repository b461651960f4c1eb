/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/routers_fixture.h - what the cluster routers' tests share
 * (test_routers.c, test_router_kinds.c): one redis-server per test, a
 * unique prefix, the test process's client-only node, "fake" nodes (a
 * depth report, a membership entry and an inbox written straight into
 * Redis, read back with XRANGE) and real node processes (test_node, whose
 * "record" handler appends each payload to a file).  Header only (static
 * functions), included by one test file each; each file declares its own
 * TestSuite with setup and teardown.
 */
#ifndef RP_TESTS_ROUTERS_FIXTURE_H
#define RP_TESTS_ROUTERS_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "routepool/cluster.h"
#include "routepool/routepool.h"
#include "assert_no_leaks.h"

static h_redis redis;
static char prefix[64];
static redisContext *c;
static rp_cluster_node *client;

static inline void setup(void)
{
    rp_cluster_options o;

    cr_assert_eq(h_redis_start(&redis, false), 0, "redis-server must start (in PATH?)");
    h_prefix(prefix, sizeof prefix);
    cr_assert_not_null(c = h_redis_connect(&redis));
    rp_cluster_options_init(&o);
    o.redis = redis.addr;
    o.prefix = prefix;
    o.node_id = "client";
    cr_assert_eq(rp_cluster_join(&client, NULL, &o), 0, "%s", rp_errmsg());
}

static h_node nodes[4];
static int nnodes;

static inline void stop_nodes(void)
{
    for (int i = 0; i < nnodes; i++) {
        if (nodes[i].pid)
            h_node_kill9(&nodes[i]);
        h_node_cleanup(&nodes[i]);
    }
    nnodes = 0;
}

static inline void teardown(void)
{
    stop_nodes();
    rp_cluster_leave(client);
    client = NULL;
    if (c)
        redisFree(c);
    c = NULL;
    h_redis_stop(&redis);
    ASSERT_NO_LEAKS();
}


static inline rp_cluster_router *make_router(rp_cluster_router_kind kind, uint64_t seed)
{
    rp_cluster_router_options o;
    rp_cluster_router *r;

    rp_cluster_router_options_init(&o);
    o.kind = kind;
    o.seed = seed;
    cr_assert_eq(rp_cluster_router_create(&r, client, &o), 0, "%s", rp_errmsg());
    return r;
}

/* ---- fake nodes: a report and a membership entry, no process ---- */

static inline long long server_ms(void)
{
    redisReply *t = h_cmd(c, "TIME");
    long long ms = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;

    freeReplyObject(t);
    return ms;
}

/* A report, a membership entry and an inbox (sends need the inbox to
 * exist: the transport adds with XADD NOMKSTREAM). */
static inline void fake_node(const char *id, long depth, long age_ms)
{
    freeReplyObject(h_cmd(c, "HSET %s:depth %s %ld:%lld", prefix, id, depth, server_ms() - age_ms));
    freeReplyObject(h_cmd(c, "SADD %s:nodes %s", prefix, id));
    freeReplyObject(h_cmd(c, "XGROUP CREATE %s:inbox:%s rp $ MKSTREAM", prefix, id));
}

static inline long long inbox_len(const char *id)
{
    return h_int(c, "XLEN %s:inbox:%s", prefix, id);
}

/* The payloads in a fake node's inbox, in order, joined by ','. */
static inline void inbox_payloads(const char *id, char *out, size_t cap)
{
    redisReply *r = h_cmd(c, "XRANGE %s:inbox:%s - +", prefix, id);

    out[0] = '\0';
    for (size_t i = 0; r && i < r->elements; i++) {
        redisReply *f = r->element[i]->element[1];
        for (size_t k = 0; k + 1 < f->elements; k += 2)
            if (!strcmp(f->element[k]->str, "p")) {
                strncat(out, f->element[k + 1]->str, cap - strlen(out) - 2);
                strcat(out, ",");
            }
    }
    freeReplyObject(r);
}

typedef struct size_wait {
    rp_cluster_router *r;
    size_t want;
} size_wait;

static inline bool has_size(void *arg)
{
    size_wait *w = arg;
    rp_cluster_router_refresh(w->r);
    return rp_cluster_router_size(w->r) == w->want;
}

static inline void wait_size(rp_cluster_router *r, size_t want)
{
    size_wait w = {r, want};
    cr_assert(h_wait(has_size, &w, 20000), "router has %zu nodes, want %zu",
              rp_cluster_router_size(r), want);
}

/* ---- real node processes ---- */

static inline void start_nodes_with(int n, const char *const *extra)
{
    char id[16];

    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "node-%d", i + 1);
        cr_assert_eq(h_node_start(&nodes[i], &redis, prefix, id, extra), 0, "node %d", i + 1);
    }
    nnodes = n;
}

static inline void start_nodes(int n)
{
    start_nodes_with(n, NULL);
}

typedef struct lines_wait {
    int n;
    long want;
} lines_wait;

static inline long total_lines(int n)
{
    long sum = 0;
    for (int i = 0; i < n; i++)
        sum += h_count_lines(nodes[i].out);
    return sum;
}

static inline bool has_lines(void *arg)
{
    lines_wait *w = arg;
    return total_lines(w->n) >= w->want;
}

static inline void wait_lines(int n, long want)
{
    lines_wait w = {n, want};
    cr_assert(h_wait(has_lines, &w, 30000), "%ld of %ld jobs recorded", total_lines(n), want);
}

#endif /* RP_TESTS_ROUTERS_FIXTURE_H */
