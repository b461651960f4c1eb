/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/stress_cluster.c - concurrent senders on one node, for the
 * sanitizers (a plain program: TSan cannot run Criterion binaries).
 *
 * One redis-server, one member node with a pool in this process and one
 * client-only node; 4 threads tell and 4 threads ask through the client's
 * shared send connection while the member's fetch, heartbeat and reply
 * threads run.  Every tell must run exactly once and every ask come back
 * with its own bytes.  Exit 0 on success, 1 on a failed check.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "routepool/cluster.h"
#include "routepool/routepool.h"

enum { THREADS = 4, TELLS = 500, ASKS = 150 };

static atomic_int runs[THREADS * TELLS];
static atomic_int failures;
static rp_cluster_node *client;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            fprintf(stderr, "stress_cluster: " __VA_ARGS__); \
            fprintf(stderr, "\n");                         \
            atomic_fetch_add(&failures, 1);                \
        }                                                  \
    } while (0)

static void count(rp_cluster_job *job, void *user)
{
    (void)user;
    size_t len;
    const char *p = rp_cluster_job_payload(job, &len);
    if (rp_cluster_job_is_ask(job)) {
        rp_cluster_job_reply(job, p, len);
        return;
    }
    int i = atoi(p);
    if (i >= 0 && i < THREADS * TELLS)
        atomic_fetch_add(&runs[i], 1);
}

static void *teller(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int k = 0; k < TELLS; k++) {
        char p[16];
        int n = snprintf(p, sizeof p, "%d", t * TELLS + k);
        int rc = rp_cluster_tell_node(client, "m", "count", p, (size_t)n, NULL, 0);
        CHECK(rc == 0, "tell: %s", rp_errmsg());
    }
    return NULL;
}

static void *asker(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int k = 0; k < ASKS; k++) {
        char p[32];
        int n = snprintf(p, sizeof p, "ask-%d-%d", t, k);
        rp_future *f;
        int rc = rp_cluster_ask_node(client, "m", "count", p, (size_t)n, 20000, &f);
        CHECK(rc == 0, "ask: %s", rp_errmsg());
        if (rc != 0)
            continue;
        rp_future_wait(f, -1);
        size_t len;
        const char *got = rp_cluster_reply_bytes(f, &len);
        CHECK(got && len == (size_t)n && memcmp(got, p, len) == 0, "ask %s: wrong reply", p);
        rp_future_release(f);
    }
    return NULL;
}

static bool all_ran(void *arg)
{
    (void)arg;
    for (int i = 0; i < THREADS * TELLS; i++)
        if (atomic_load(&runs[i]) == 0)
            return false;
    return true;
}

static int run(const h_redis *r)
{
    rp_pool_options po;
    rp_pool *pool;
    rp_cluster_options o;
    rp_cluster_node *member;
    rp_pool_options_init(&po);
    po.routees = 2;
    rp_cluster_options_init(&o);
    o.redis = r->addr;
    o.prefix = "stress";
    o.node_id = "m";
    if (rp_pool_create(&pool, &po) < 0 || rp_cluster_join(&member, pool, &o) < 0)
        return 1;
    rp_cluster_handle(member, "count", count, NULL);
    rp_cluster_start(member);
    o.node_id = "c";
    if (rp_cluster_join(&client, NULL, &o) < 0)
        return 1;
    pthread_t th[2 * THREADS];
    for (int t = 0; t < THREADS; t++) {
        pthread_create(&th[t], NULL, teller, (void *)(intptr_t)t);
        pthread_create(&th[THREADS + t], NULL, asker, (void *)(intptr_t)t);
    }
    for (int t = 0; t < 2 * THREADS; t++)
        pthread_join(th[t], NULL);
    CHECK(h_wait(all_ran, NULL, 120000), "not every tell ran");
    for (int i = 0; i < THREADS * TELLS; i++)
        CHECK(atomic_load(&runs[i]) == 1, "tell %d ran %d times", i, atomic_load(&runs[i]));
    rp_cluster_stats s;
    rp_cluster_node_stats(client, &s);
    CHECK(s.replies_received == THREADS * ASKS, "replies %llu",
          (unsigned long long)s.replies_received);
    rp_cluster_leave(client);
    rp_cluster_leave(member);
    rp_pool_destroy(pool);
    return 0;
}

int main(void)
{
    h_redis r;
    if (h_redis_start(&r, false) < 0)
        return 1;
    int rc = run(&r);
    h_redis_stop(&r);
    rc = rc || atomic_load(&failures) > 0;
    printf("stress_cluster: %s\n", rc ? "FAILED" : "ok");
    return rc;
}
