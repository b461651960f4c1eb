/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/common_cluster.h - fixtures shared by the node and
 * transport tests: one redis-server per test, a unique prefix, a
 * client-only node of the test process, and output-file checks.  Header
 * only (static functions), included by one test file each.
 */
#ifndef RP_TESTS_COMMON_CLUSTER_H
#define RP_TESTS_COMMON_CLUSTER_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "routepool/cluster.h"
#include "routepool/routepool.h"

static h_redis redis;
static char prefix[64];

static void cluster_setup(void)
{
    cr_assert_eq(h_redis_start(&redis, false), 0, "redis-server must start (in PATH?)");
    h_prefix(prefix, sizeof prefix);
}

static inline void cluster_setup_aof(void)
{
    cr_assert_eq(h_redis_start(&redis, true), 0, "redis-server must start (in PATH?)");
    h_prefix(prefix, sizeof prefix);
}

static void cluster_teardown(void)
{
    h_redis_stop(&redis);
}

static inline void client_opts(rp_cluster_options *o, const char *id)
{
    rp_cluster_options_init(o);
    o->redis = redis.addr;
    o->prefix = prefix;
    o->node_id = id;
    if (redis.user[0]) { /* h_redis_start_acl(): the server's ACL user */
        o->user = redis.user;
        o->password = redis.pass;
    }
}

/* The test process's client-only node. */
static inline rp_cluster_node *client(void)
{
    rp_cluster_options o;
    rp_cluster_node *c;
    client_opts(&o, "client");
    cr_assert_eq(rp_cluster_join(&c, NULL, &o), 0, "%s", rp_errmsg());
    return c;
}

static inline void tell(rp_cluster_node *c, const char *target, const char *handler, int i)
{
    char p[32];
    int n = snprintf(p, sizeof p, "%d", i);
    int rc = rp_cluster_tell_node(c, target, handler, p, (size_t)n, NULL, 0);
    cr_assert_eq(rc, 0, "tell %d: %s", i, rp_errmsg());
}

typedef struct lines_arg {
    h_node *nodes;
    int n;
    long want;
} lines_arg;

static inline bool enough_lines(void *arg)
{
    lines_arg *a = arg;
    long total = 0;
    for (int i = 0; i < a->n; i++)
        total += h_count_lines(a->nodes[i].out);
    return total >= a->want;
}

/* Per payload 0..n-1 how many times it ran across the nodes' files
 * (counts: caller-owned array of n); returns the total lines. */
static inline long tally(h_node *nodes, int nn, int n, int *counts, long *dup_lines)
{
    long total = 0;
    memset(counts, 0, sizeof *counts * (size_t)n);
    if (dup_lines)
        *dup_lines = 0;
    for (int i = 0; i < nn; i++) {
        char *b = h_read_file(nodes[i].out, NULL);
        for (char *line = b; line && *line;) {
            char *nl = strchr(line, '\n');
            if (!nl)
                break;
            int v = atoi(line);
            const char *sp = strchr(line, ' ');
            if (v >= 0 && v < n)
                counts[v]++;
            if (dup_lines && sp && atoi(sp + 1) > 1)
                (*dup_lines)++;
            total++;
            line = nl + 1;
        }
        free(b);
    }
    return total;
}

/* A node's stats via its "stats" handler: the value of key, or -1. */
static inline long long node_stat(rp_cluster_node *c, const char *target, const char *key)
{
    rp_future *f;
    if (rp_cluster_ask_node(c, target, "stats", NULL, 0, 5000, &f) < 0)
        return -1;
    long long v = -1;
    if (rp_future_wait(f, 10000) == 0 && rp_future_status(f) == RP_FUTURE_FULFILLED) {
        const char *s = rp_cluster_reply_bytes(f, NULL);
        char want[64];
        snprintf(want, sizeof want, "%s=", key);
        const char *at = strstr(s, want);
        if (at)
            v = atoll(at + strlen(want));
    }
    rp_future_release(f);
    return v;
}

#endif /* RP_TESTS_COMMON_CLUSTER_H */
