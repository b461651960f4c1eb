/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/test_join.c - joining and leaving: membership keys, the
 * id's lease (RP_EEXIST), option validation, node processes.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "routepool/cluster.h"
#include "routepool/routepool.h"

static h_redis redis;
static char prefix[64];

static void setup(void)
{
    cr_assert_eq(h_redis_start(&redis, false), 0, "redis-server must start (in PATH?)");
    h_prefix(prefix, sizeof prefix);
}

static void teardown(void)
{
    h_redis_stop(&redis);
}

TestSuite(join, .init = setup, .fini = teardown, .timeout = 60);

static void opts_for(rp_cluster_options *o, const char *id)
{
    rp_cluster_options_init(o);
    o->redis = redis.addr;
    o->prefix = prefix;
    o->node_id = id;
}

static rp_pool *small_pool(void)
{
    rp_pool_options po;
    rp_pool *pool;
    rp_pool_options_init(&po);
    po.routees = 2;
    cr_assert_eq(rp_pool_create(&pool, &po), 0);
    return pool;
}

Test(join, join__makes_a_member_and_leave_removes_it)
{
    rp_pool *pool = small_pool();
    rp_cluster_options o;
    rp_cluster_node *node;
    opts_for(&o, "alpha");
    cr_assert_eq(rp_cluster_join(&node, pool, &o), 0, "%s", rp_errmsg());
    cr_assert_str_eq(rp_cluster_node_id(node), "alpha");
    redisContext *c = h_redis_connect(&redis);
    cr_assert_eq(h_int(c, "SISMEMBER %s:nodes alpha", prefix), 1);
    cr_assert_eq(h_int(c, "HEXISTS %s:depth alpha", prefix), 1);
    cr_assert_eq(h_int(c, "EXISTS %s:node:alpha", prefix), 1);
    rp_cluster_leave(node);
    cr_assert_eq(h_int(c, "SISMEMBER %s:nodes alpha", prefix), 0);
    cr_assert_eq(h_int(c, "HEXISTS %s:depth alpha", prefix), 0);
    cr_assert_eq(h_int(c, "EXISTS %s:node:alpha", prefix), 0);
    cr_assert_eq(h_int(c, "EXISTS %s:inbox:alpha", prefix), 0);
    redisFree(c);
    rp_pool_destroy(pool);
}

Test(join, join__with_the_id_of_a_live_node_fails_eexist)
{
    rp_pool *pool = small_pool();
    rp_cluster_options o;
    rp_cluster_node *a, *b = (rp_cluster_node *)1;
    opts_for(&o, "twin");
    cr_assert_eq(rp_cluster_join(&a, pool, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_join(&b, pool, &o), RP_EEXIST);
    cr_assert_null(b);
    cr_assert(strstr(rp_errmsg(), "node_id"), "%s", rp_errmsg());
    rp_cluster_leave(a);
    /* Once it left, the id is free again. */
    cr_assert_eq(rp_cluster_join(&b, pool, &o), 0, "%s", rp_errmsg());
    rp_cluster_leave(b);
    rp_pool_destroy(pool);
}

Test(join, join__default_id_is_host_and_pid)
{
    rp_cluster_options o;
    rp_cluster_node *node;
    opts_for(&o, NULL);
    cr_assert_eq(rp_cluster_join(&node, NULL, &o), 0, "%s", rp_errmsg());
    char want[32];
    snprintf(want, sizeof want, ":%ld", (long)getpid());
    const char *id = rp_cluster_node_id(node);
    cr_assert(strlen(id) > strlen(want) && strcmp(id + strlen(id) - strlen(want), want) == 0,
              "id %s", id);
    rp_cluster_leave(node);
}

Test(join, join__unreachable_redis_fails_unavailable)
{
    rp_cluster_options o;
    rp_cluster_node *node;
    opts_for(&o, "nobody");
    o.redis = "127.0.0.1:1";
    o.connect_timeout_ms = 200;
    cr_assert_eq(rp_cluster_join(&node, NULL, &o), RP_EUNAVAILABLE);
    cr_assert(strstr(rp_errmsg(), "opts.redis"), "%s", rp_errmsg());
}

Test(join, join__invalid_options_name_the_field)
{
    static const struct { const char *field; } cases[] = {
        {"opts.prefix"}, {"opts.node_id"}, {"opts.heartbeat_ms"}, {"opts.dead_after_ms"},
        {"opts.max_deliveries"}, {"opts.max_payload"}, {"opts.redis"}, {"opts.command_timeout_ms"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rp_cluster_options o;
        rp_cluster_node *node;
        opts_for(&o, "x");
        switch (i) {
        case 0: o.prefix = "bad prefix"; break;
        case 1: o.node_id = "no spaces"; break;
        case 2: o.heartbeat_ms = 0; break;
        case 3: o.dead_after_ms = o.heartbeat_ms; break;
        case 4: o.max_deliveries = 0; break;
        case 5: o.max_payload = RP_CLUSTER_PAYLOAD_MAX + 1; break;
        case 6: o.redis = "127.0.0.1:99999"; break;
        default: o.command_timeout_ms = 50; break;
        }
        cr_assert_eq(rp_cluster_join(&node, NULL, &o), RP_EINVAL, "case %zu", i);
        cr_assert(strstr(rp_errmsg(), cases[i].field), "case %zu: %s", i, rp_errmsg());
    }
}

Test(join, node_process__joins_and_leaves_on_sigterm)
{
    h_node n;
    cr_assert_eq(h_node_start(&n, &redis, prefix, "proc", NULL), 0);
    redisContext *c = h_redis_connect(&redis);
    cr_assert_eq(h_int(c, "SISMEMBER %s:nodes proc", prefix), 1);
    cr_assert_eq(h_node_term(&n), 0);
    cr_assert_eq(h_int(c, "SISMEMBER %s:nodes proc", prefix), 0);
    redisFree(c);
    h_node_cleanup(&n);
}

/* The "id" field of every entry in sink's inbox, in order, ','-joined. */
static void job_ids(redisContext *c, char *out, size_t cap)
{
    redisReply *r = h_cmd(c, "XRANGE %s:inbox:sink - +", prefix);
    out[0] = '\0';
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *f = r->element[i]->element[1];
        for (size_t k = 0; k + 1 < f->elements; k += 2)
            if (strcmp(f->element[k]->str, "id") == 0) {
                strncat(out, f->element[k + 1]->str, cap - strlen(out) - 2);
                strcat(out, ",");
            }
    }
    if (r)
        freeReplyObject(r);
}

Test(join, rejoin__under_the_same_id_does_not_reuse_job_ids)
{
    rp_pool *pool = small_pool();
    rp_cluster_options o;
    rp_cluster_node *sink, *cl;
    opts_for(&o, "sink");
    /* A member that never starts fetching: entries stay in its inbox. */
    cr_assert_eq(rp_cluster_join(&sink, pool, &o), 0, "%s", rp_errmsg());
    opts_for(&o, "cl");
    for (int round = 0; round < 2; round++) {
        cr_assert_eq(rp_cluster_join(&cl, NULL, &o), 0, "%s", rp_errmsg());
        cr_assert_eq(rp_cluster_tell_node(cl, "sink", "h", "x", 1, NULL, 0), 0, "%s",
                     rp_errmsg());
        rp_cluster_leave(cl);
    }
    redisContext *c = h_redis_connect(&redis);
    char ids[512];
    job_ids(c, ids, sizeof ids);
    char *comma = strchr(ids, ',');
    cr_assert(comma && strlen(comma) > 1 && comma[strlen(comma) - 1] == ',', "%s", ids);
    *comma = '\0';
    comma[strlen(comma + 1)] = '\0'; /* the second id's trailing comma */
    cr_assert(strncmp(ids, "cl:", 3) == 0, "%s", ids);
    cr_assert_str_neq(ids, comma + 1);
    redisFree(c);
    rp_cluster_leave(sink);
    rp_pool_destroy(pool);
}
