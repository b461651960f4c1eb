/* SPDX-License-Identifier: MIT */
/*
 * heartbeat.c - the node's tick: depth report, membership read, dead-node
 * recovery, sweep of timed-out asks.
 *
 * Every heartbeat_ms the heartbeat thread runs the report script (lease
 * refresh, "<depth>:<server ms>" into "<prefix>:depth", membership), then
 * reads every report and the member set in one pipelined round trip.  The
 * reports feed the listeners (routers' depth caches) and the choice of
 * targets for moved entries.  Staleness is judged by server time, so
 * clients' clocks never matter.
 *
 * A member whose report is missing or older than dead_after_ms is dead.  A
 * survivor takes "<prefix>:recover:<id>" (a short lock, so one survivor
 * works on one dead node at a time; refused while the node holds its
 * lease, so a view of the reports read before the node (re)joined - or
 * between its report and its membership, which are read by two commands -
 * never moves a live node's entries) and moves a bounded number of its
 * entries per tick (recover.c), so the tick - and so our own report - stays
 * timely.  When the dead node's inbox is empty and its lease gone, one
 * script removes its inbox, report and membership atomically: a sender's
 * XADD NOMKSTREAM (send.c) can then never create an orphan inbox.
 * Nobody is declared dead during our first dead_after_ms after
 * (re)connecting: after a Redis outage every report is old.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "heartbeat.h"
#include "impl.h"
#include "node.h"
#include "recover.h"
#include "send.h"
#include "util.h"

/* KEYS: depth, lease, inbox, nodes.  ARGV: id, token, extra depth, lease
 * px, member ("1") or client ("0").  Returns {depth, server ms}; depth -1
 * when another process holds our lease. */
static const char REPORT_LUA[] =
    "local t = redis.call('TIME')\n"
    "local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local cur = redis.call('GET', KEYS[2])\n"
    "if cur and cur ~= ARGV[2] then return {-1, ms} end\n"
    "redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4])\n"
    "if ARGV[5] ~= '1' then return {0, ms} end\n"
    "local d = redis.call('XLEN', KEYS[3]) + tonumber(ARGV[3])\n"
    "redis.call('HSET', KEYS[1], ARGV[1], d .. ':' .. ms)\n"
    "redis.call('SADD', KEYS[4], ARGV[1])\n"
    "return {d, ms}\n";

/* KEYS: inbox, depth, nodes, lease, recover lock.  ARGV: id.  Removes a
 * drained dead node; 1 when removed. */
static const char CLEANUP_LUA[] =
    "if redis.call('XLEN', KEYS[1]) > 0 then return 0 end\n"
    "if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end\n"
    "redis.call('DEL', KEYS[1])\n"
    "redis.call('HDEL', KEYS[2], ARGV[1])\n"
    "redis.call('SREM', KEYS[3], ARGV[1])\n"
    "redis.call('DEL', KEYS[5])\n"
    "return 1\n";

/* KEYS: recover lock, the dead node's lease.  ARGV: our id, px.  1 when
 * the lock is ours; 0 when another survivor holds it, or when the node
 * holds its lease: it is alive (it just joined, or rejoined under its id,
 * after our view of the reports was read), so nothing of its is moved. */
static const char LOCK_LUA[] =
    "if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end\n"
    "local v = redis.call('GET', KEYS[1])\n"
    "if v and v ~= ARGV[1] then return 0 end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "return 1\n";

void rp__init_scripts(rp_cluster_node *node)
{
    node->report_script.body = REPORT_LUA;
    node->cleanup_script.body = CLEANUP_LUA;
    node->lock_script.body = LOCK_LUA;
    node->fetch_move_script.body = rp__move_lua;
    node->hb_move_script.body = rp__move_lua;
}

/* Queued depth of the pool beyond the node's own fetched entries (which
 * XLEN of the inbox already counts): local jobs the pool also runs. */
static int64_t extra_depth(rp_cluster_node *node)
{
    if (!node->pool)
        return 0;
    int64_t d = 0;
    size_t n = rp_pool_size(node->pool);
    for (size_t i = 0; i < n; i++) {
        int64_t x = rp_routee_depth(rp_pool_routee(node->pool, i));
        d += x > 0 ? x : 0;
    }
    pthread_mutex_lock(&node->lock);
    d -= node->inflight;
    pthread_mutex_unlock(&node->lock);
    return d > 0 ? d : 0;
}

static bool int_elem(const redisReply *r, long long *v)
{
    if (!r || r->type != REDIS_REPLY_INTEGER)
        return false;
    *v = r->integer;
    return true;
}

static int report(rp_cluster_node *node)
{
    char extra[24], px[24];
    const char *av[] = {node->k_depth, node->k_lease, node->k_inbox, node->k_nodes,
                        node->id, node->token, extra, px, node->pool ? "1" : "0"};
    snprintf(extra, sizeof extra, "%lld", (long long)extra_depth(node));
    snprintf(px, sizeof px, "%d", node->dead_after_ms);
    int64_t t0 = rp__mono_ms();
    redisReply *r = rp__conn_eval(&node->hbc, &node->report_script, 4, 9, av, NULL);
    long long d, ms;
    bool ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element &&
              int_elem(r->element[0], &d) && int_elem(r->element[1], &ms);
    if (r && !ok)
        rp__node_logf(node, RP_LOG_WARN, "depth report failed: %.200s",
                      r->type == REDIS_REPLY_ERROR && r->str ? r->str : "bad reply");
    if (r)
        freeReplyObject(r);
    if (!ok)
        return RP_EUNAVAILABLE;
    int64_t t1 = rp__mono_ms();
    atomic_store_explicit(&node->server_offset_ms, (int64_t)ms - (t0 + t1) / 2,
                          memory_order_relaxed);
    atomic_store_explicit(&node->last_report_mono, t1, memory_order_relaxed);
    if (d < 0)
        rp__node_logf(node, RP_LOG_WARN, "another process holds this node's lease");
    return 0;
}

typedef struct tick_view {
    rp__cluster_member *m;   /* reports (ids borrow from depth reply) */
    size_t n;
    const redisReply *nodes; /* member set */
} tick_view;

/* Parse HGETALL "<prefix>:depth": untrusted, every field checked. */
static int parse_reports(const redisReply *r, tick_view *v)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements % 2 || r->elements > 200000)
        return -1;
    v->m = calloc(r->elements / 2 + 1, sizeof *v->m);
    if (!v->m)
        return RP_ENOMEM;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *val = r->element[i + 1];
        if (!k || k->type != REDIS_REPLY_STRING || !val || val->type != REDIS_REPLY_STRING ||
            !rp__valid_id(k->str, k->len, RP_CLUSTER_ID_MAX, true))
            continue;
        const char *colon = memchr(val->str, ':', val->len);
        int64_t d, ms;
        if (!colon || !rp__parse_i64(val->str, (size_t)(colon - val->str), 0, INT64_MAX, &d) ||
            !rp__parse_i64(colon + 1, val->len - (size_t)(colon - val->str) - 1, 0,
                           INT64_MAX, &ms))
            continue;
        v->m[v->n].id = k->str; /* hiredis NUL-terminates strings */
        v->m[v->n].depth = d;
        v->m[v->n].report_ms = ms;
        v->n++;
    }
    return 0;
}

static void call_listeners(rp_cluster_node *node, const tick_view *v, int64_t now)
{
    listener ls[MAX_LISTENERS];
    pthread_mutex_lock(&node->lst_lock);
    memcpy(ls, node->listeners, sizeof ls);
    node->lst_busy = true;
    pthread_mutex_unlock(&node->lst_lock);
    for (int i = 0; i < MAX_LISTENERS; i++)
        if (ls[i].fn)
            ls[i].fn(v->m, v->n, now, ls[i].user);
    pthread_mutex_lock(&node->lst_lock);
    node->lst_busy = false;
    pthread_cond_broadcast(&node->lst_cond);
    pthread_mutex_unlock(&node->lst_lock);
}

/* Keep the ids of the fresh reports for choosing targets. */
static void keep_live(rp_cluster_node *node, const tick_view *v, int64_t now)
{
    members nl = {calloc(v->n + 1, sizeof(char *)), 0};
    if (!nl.ids)
        return;
    for (size_t i = 0; i < v->n; i++)
        if (now - v->m[i].report_ms <= node->dead_after_ms &&
            (nl.ids[nl.n] = strdup(v->m[i].id)) != NULL)
            nl.n++;
    pthread_mutex_lock(&node->lst_lock);
    members old = node->live;
    node->live = nl;
    pthread_mutex_unlock(&node->lst_lock);
    for (size_t i = 0; i < old.n; i++)
        free(old.ids[i]);
    free(old.ids);
}

static const rp__cluster_member *find_report(const tick_view *v, const char *id, size_t len)
{
    for (size_t i = 0; i < v->n; i++)
        if (strlen(v->m[i].id) == len && memcmp(v->m[i].id, id, len) == 0)
            return &v->m[i];
    return NULL;
}

static int run_script(rp_cluster_node *node, rp__script *sc, int nkeys, int argc,
                      const char **av)
{
    redisReply *r = rp__conn_eval(&node->hbc, sc, nkeys, argc, av, NULL);
    long long v = 0;
    bool ok = r && int_elem(r, &v);
    if (r)
        freeReplyObject(r);
    return ok ? (int)v : RP_EUNAVAILABLE;
}

enum { RECOVER_BUDGET = 400 };

/* One dead node: take the lock, move a budget of entries, clean up. */
static void recover_one(rp_cluster_node *node, const char *dead)
{
    char px[24];
    char *lock = rp__key(node, "recover", dead);
    char *inbox = rp__key(node, "inbox", dead);
    char *lease = rp__key(node, "node", dead);
    if (!lock || !inbox || !lease)
        goto out;
    snprintf(px, sizeof px, "%d", node->heartbeat_ms * 10);
    const char *lav[] = {lock, lease, node->id, px};
    if (run_script(node, &node->lock_script, 2, 4, lav) != 1)
        goto out;
    /* A bounded share per tick: our own report must stay timely. */
    int moved = rp__recover(node, &node->hbc, dead, dead, RECOVER_BUDGET, true);
    if (moved >= 0 && moved < RECOVER_BUDGET) {
        const char *cav[] = {inbox, node->k_depth, node->k_nodes, lease, lock, dead};
        if (run_script(node, &node->cleanup_script, 5, 6, cav) == 1)
            rp__node_logf(node, RP_LOG_INFO, "removed dead node %s", dead);
    }
out:
    free(lock);
    free(inbox);
    free(lease);
}

static void find_dead(rp_cluster_node *node, const tick_view *v, int64_t now)
{
    const redisReply *s = v->nodes;
    if (!s || s->type != REDIS_REPLY_ARRAY || !node->pool ||
        rp__mono_ms() - node->hb_up_since < node->dead_after_ms)
        return;
    for (size_t i = 0; i < s->elements && i < 100000; i++) {
        const redisReply *e = s->element[i];
        if (!e || e->type != REDIS_REPLY_STRING ||
            !rp__valid_id(e->str, e->len, RP_CLUSTER_ID_MAX, true) ||
            strcmp(e->str, node->id) == 0)
            continue;
        const rp__cluster_member *m = find_report(v, e->str, e->len);
        if (!m || now - m->report_ms > node->dead_after_ms)
            recover_one(node, e->str);
    }
}

/* Read reports and members, then act on them. */
static void read_members(rp_cluster_node *node)
{
    const char *h[] = {"HGETALL", node->k_depth};
    const char *s[] = {"SMEMBERS", node->k_nodes};
    size_t hl[] = {7, strlen(node->k_depth)}, sl[] = {8, strlen(node->k_nodes)};
    if (rp__conn_append(&node->hbc, 2, h, hl) < 0 || rp__conn_append(&node->hbc, 2, s, sl) < 0) {
        rp__conn_drop(&node->hbc);
        return;
    }
    redisReply *hr = rp__conn_get_reply(&node->hbc);
    redisReply *sr = hr ? rp__conn_get_reply(&node->hbc) : NULL;
    tick_view v = {NULL, 0, sr};
    int64_t now = rp__server_now_ms(node);
    if (sr && parse_reports(hr, &v) == 0) {
        keep_live(node, &v, now);
        call_listeners(node, &v, now);
        find_dead(node, &v, now);
    }
    free(v.m);
    if (hr)
        freeReplyObject(hr);
    if (sr)
        freeReplyObject(sr);
}

void rp__refresh_live(rp_cluster_node *node)
{
    const char *h[] = {"HGETALL", node->k_depth};
    size_t hl[] = {7, strlen(node->k_depth)};
    redisReply *hr = rp__conn_cmd(&node->hbc, 2, h, hl);
    tick_view v = {NULL, 0, NULL};
    if (hr && parse_reports(hr, &v) == 0)
        keep_live(node, &v, rp__server_now_ms(node));
    free(v.m);
    if (hr)
        freeReplyObject(hr);
}

void rp__tick(rp_cluster_node *node)
{
    bool was_up = node->hbc.c != NULL;
    if (rp__conn_ensure(&node->hbc) < 0)
        return;
    if (!was_up)
        node->hb_up_since = rp__mono_ms();
    if (report(node) == 0)
        read_members(node);
    rp__asks_sweep(node, false);
}

void *rp__hb_main(void *arg)
{
    rp_cluster_node *node = arg;
    pthread_mutex_lock(&node->hb_lock);
    while (!node->hb_stop) {
        pthread_mutex_unlock(&node->hb_lock);
        rp__tick(node);
        /* Flush acknowledgements the fetch thread could not send. */
        pthread_mutex_lock(&node->hb_lock);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(node->heartbeat_ms % 1000) * 1000000L;
        ts.tv_sec += node->heartbeat_ms / 1000 + ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        if (!node->hb_stop)
            pthread_cond_timedwait(&node->hb_cond, &node->hb_lock, &ts);
    }
    pthread_mutex_unlock(&node->hb_lock);
    return NULL;
}
