/* SPDX-License-Identifier: MIT */
/*
 * stress_routers.c - cluster routers under concurrency, a plain program
 * (so ThreadSanitizer can run it, which Criterion binaries cannot): two
 * threads tell through round-robin, smallest-mailbox, consistent-hash,
 * least-used, weighted and custom routers (single tells and batches; the
 * custom pick reads its router's membership, which takes the router's
 * lock, from inside the pick) while a third changes the
 * membership and refreshes every router (snapshot rebuilds under load), and
 * a fourth runs scatters that time out (member callbacks on the timer
 * thread) on a second deployment, whose router is finally destroyed with a
 * scatter open.  Nodes are fake (a report, a membership entry and an inbox
 * written into Redis): every accepted tell must be in exactly one inbox.
 *
 * Exit 0 when every count matches; 1 with a message otherwise.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "routepool/cluster.h"
#include "routepool/routepool.h"

#define TELLERS 2
#define ROUNDS 600
#define TOGGLES 60
#define SCATTERS 60

static h_redis redis;
static char prefix[64], prefix2[64];
static rp_cluster_node *client, *client2;
#define NROUTERS 6
static rp_cluster_router *routers[NROUTERS]; /* rr, smallest, hash, least-used, weighted,
                                              * custom */
static _Atomic long picks;                   /* calls of the custom pick */
static _Atomic long custom_jobs;             /* jobs given to the custom router */
static _Atomic long stored;           /* entries the routers said were stored */
static _Atomic long failures;
static _Atomic bool toggling_done;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "stress_routers: " __VA_ARGS__);                               \
            fprintf(stderr, "\n");                                                         \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static long long server_ms(redisContext *c)
{
    redisReply *t = h_cmd(c, "TIME");
    long long ms = t ? atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000 : 0;

    freeReplyObject(t);
    return ms;
}

static void fake_node(redisContext *c, const char *pre, const char *id)
{
    freeReplyObject(h_cmd(c, "HSET %s:depth %s 0:%lld", pre, id, server_ms(c)));
    freeReplyObject(h_cmd(c, "SADD %s:nodes %s", pre, id));
    freeReplyObject(h_cmd(c, "XGROUP CREATE %s:inbox:%s rp $ MKSTREAM", pre, id));
}

/* The custom router's pick: by the payload's first byte, among the live
 * nodes it is offered (thread-safe: reads only its arguments, the
 * router's size, and bumps an atomic counter). */
static int pick_by_byte(const rp_cluster_pick_job *job, const char *const *ids, size_t n,
                        void *user)
{
    rp_cluster_router *const *self = user;

    (void)ids;
    atomic_fetch_add(&picks, 1);
    if (*self && rp_cluster_router_size(*self) == 0)
        return -1; /* never: the pick runs on a non-empty node list */
    return job->len ? ((const unsigned char *)job->payload)[0] % (int)n : 0;
}

static rp_cluster_router *router(rp_cluster_node *node, rp_cluster_router_kind kind,
                                 double scatter_ms)
{
    static const rp_cluster_weight w[] = {{"f1", 3}, {"f2", 1}}; /* f3, f4: 1 */
    rp_cluster_router_options o;
    rp_cluster_router *r;

    rp_cluster_router_options_init(&o);
    o.kind = kind;
    if (kind == RP_CLUSTER_ROUTER_WEIGHTED) {
        o.weights = w;
        o.nweights = 2;
    }
    if (kind == RP_CLUSTER_ROUTER_CUSTOM) {
        o.pick = pick_by_byte;
        o.pick_user = &routers[5];
    }
    o.refresh_ms = 20; /* the refresh thread rebuilds often too */
    o.staleness_ms = 0;
    o.member_timeout_ms = 600000; /* the fake reports never age out */
    o.scatter_timeout_ms = scatter_ms;
    o.least_used_name = "stress";
    CHECK(rp_cluster_router_create(&r, node, &o) == 0, "create: %s", rp_errmsg());
    return r;
}

static void count(int rc, long n)
{
    if (rc == 0)
        atomic_fetch_add(&stored, n);
    else
        atomic_fetch_add(&failures, 1);
}

static void *teller(void *arg)
{
    long id = (long)(intptr_t)arg;
    char key[32];
    const void *p[8] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    size_t lens[8] = {1, 1, 1, 1, 1, 1, 1, 1}, sent;

    for (int i = 0; i < ROUNDS; i++) {
        int kl = snprintf(key, sizeof key, "k%ld-%d", id, i);
        count(rp_cluster_tell(routers[0], "record", "x", 1), 1);
        count(rp_cluster_tell(routers[1], "record", "x", 1), 1);
        count(rp_cluster_tell_key(routers[2], key, (size_t)kl, "record", "x", 1), 1);
        count(rp_cluster_tell(routers[3], "record", "x", 1), 1);
        count(rp_cluster_tell(routers[4], "record", "x", 1), 1);
        count(rp_cluster_tell(routers[5], "record", p[i % 8], 1), 1);
        atomic_fetch_add(&custom_jobs, 1);
        if (i % 20 == 0) {
            /* round-robin, smallest-mailbox, weighted and custom in turn */
            static const int batchers[] = {0, 1, 4, 5};
            int b = batchers[i / 20 % 4];
            int rc = rp_cluster_tell_batch(routers[b], "record", p, lens, 8, &sent);
            if (b == 5)
                atomic_fetch_add(&custom_jobs, 8);
            CHECK(rc == 0 && sent == 8, "batch: %d %s", rc, rp_errmsg());
            atomic_fetch_add(&stored, 8);
        }
    }
    return NULL;
}

static void *toggler(void *arg)
{
    redisContext *c = h_redis_connect(&redis);

    (void)arg;
    CHECK(c, "toggler: no connection");
    for (int i = 0; i < TOGGLES; i++) {
        if (i % 2)
            fake_node(c, prefix, "f4");
        else /* still a member: sends to it succeed either way */
            freeReplyObject(h_cmd(c, "HDEL %s:depth f4", prefix));
        for (int k = 0; k < NROUTERS; k++)
            CHECK(rp_cluster_router_refresh(routers[k]) == 0, "refresh: %s", rp_errmsg());
        h_sleep_ms(2);
    }
    redisFree(c);
    atomic_store(&toggling_done, true);
    return NULL;
}

static void *scatterer(void *arg)
{
    rp_cluster_router *r = arg;

    for (int i = 0; i < SCATTERS; i++) {
        rp_future *f;
        const rp_error *e;
        CHECK(rp_cluster_scatter(r, "echo", "x", 1, &f) == 0, "scatter: %s", rp_errmsg());
        CHECK(rp_future_wait(f, 20000) == 0, "scatter %d never resolved", i);
        e = rp_future_error(f);
        CHECK(e && e->code == RP_EAGGREGATE && e->nmembers == 3 &&
                  strstr(e->message, "none of 3 routees replied within 10ms"),
              "scatter %d: %s", i, e ? e->message : "fulfilled?");
        rp_future_release(f);
    }
    return NULL;
}

static long inbox_total(redisContext *c, const char *pre)
{
    static const char *const ids[] = {"f1", "f2", "f3", "f4"};
    long sum = 0;

    for (int i = 0; i < 4; i++)
        sum += h_int(c, "XLEN %s:inbox:%s", pre, ids[i]);
    return sum;
}

static void join(rp_cluster_node **out, const char *pre, const char *id)
{
    rp_cluster_options o;

    rp_cluster_options_init(&o);
    o.redis = redis.addr;
    o.prefix = pre;
    o.node_id = id;
    CHECK(rp_cluster_join(out, NULL, &o) == 0, "join: %s", rp_errmsg());
}

int main(void)
{
    pthread_t th[TELLERS + 2];
    rp_cluster_router *sg;
    redisContext *c;
    rp_future *open;

    CHECK(h_redis_start(&redis, false) == 0, "redis-server must start (in PATH?)");
    h_prefix(prefix, sizeof prefix);
    h_prefix(prefix2, sizeof prefix2);
    CHECK((c = h_redis_connect(&redis)), "no connection");
    for (int i = 1; i <= 3; i++) {
        char id[8];
        snprintf(id, sizeof id, "f%d", i);
        fake_node(c, prefix, id);
        fake_node(c, prefix2, id);
    }
    join(&client, prefix, "client");
    join(&client2, prefix2, "client2");
    for (int k = 0; k < NROUTERS; k++)
        routers[k] = router(client, (rp_cluster_router_kind[]){RP_CLUSTER_ROUTER_ROUND_ROBIN,
                                                             RP_CLUSTER_ROUTER_SMALLEST_MAILBOX,
                                                             RP_CLUSTER_ROUTER_CONSISTENT_HASH,
                                                             RP_CLUSTER_ROUTER_LEAST_USED,
                                                             RP_CLUSTER_ROUTER_WEIGHTED,
                                                             RP_CLUSTER_ROUTER_CUSTOM}[k],
                            RP_SCATTER_TIMEOUT_MS);
    sg = router(client2, RP_CLUSTER_ROUTER_ROUND_ROBIN, 10);
    for (long t = 0; t < TELLERS; t++)
        pthread_create(&th[t], NULL, teller, (void *)(intptr_t)t);
    pthread_create(&th[TELLERS], NULL, toggler, NULL);
    pthread_create(&th[TELLERS + 1], NULL, scatterer, sg);
    for (int t = 0; t < TELLERS + 2; t++)
        pthread_join(th[t], NULL);
    CHECK(atomic_load(&toggling_done), "toggler did not finish");
    CHECK(atomic_load(&failures) == 0, "%ld calls failed", atomic_load(&failures));
    CHECK(inbox_total(c, prefix) == atomic_load(&stored), "%ld entries in the inboxes, %ld stored",
          inbox_total(c, prefix), atomic_load(&stored));
    /* A scatter still open when its router goes: "stopped". */
    CHECK(rp_cluster_scatter(sg, "echo", "x", 1, &open) == 0, "scatter: %s", rp_errmsg());
    rp_cluster_router_destroy(sg);
    CHECK(rp_future_wait(open, 20000) == 0 && rp_future_error(open) &&
              strstr(rp_future_error(open)->message, "stopped while the scatter was still open"),
          "open scatter at destroy: %s",
          rp_future_error(open) ? rp_future_error(open)->message : "not failed");
    h_sleep_ms(50); /* its members' asks time out now, with the router gone */
    rp_future_release(open);
    /* One pick per custom tell and per job of its batches (no node ever
     * leaves its inbox here, so no job is routed twice). */
    CHECK(atomic_load(&picks) == atomic_load(&custom_jobs), "%ld custom picks for %ld jobs",
          atomic_load(&picks), atomic_load(&custom_jobs));
    for (int k = 0; k < NROUTERS; k++)
        rp_cluster_router_destroy(routers[k]);
    rp_cluster_leave(client);
    rp_cluster_leave(client2);
    redisFree(c);
    h_redis_stop(&redis);
    printf("stress_routers: %ld entries stored and found, %d scatters\n", atomic_load(&stored),
           SCATTERS + 1);
    return 0;
}
