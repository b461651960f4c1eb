/* SPDX-License-Identifier: MIT */
/*
 * join.c - rp_cluster_join(), rp_cluster_start(), rp_cluster_leave().
 *
 * Join: validate, connect, take the id's lease (SET NX: a live node with
 * the id makes it RP_EEXIST), create the inbox's consumer group, report
 * once (which makes a member visible), hand back entries a previous
 * process with this id had fetched, then start the threads.  A member
 * fetches only after rp_cluster_start(), so no entry finds its handler
 * missing because registration was still under way.
 *
 * Leave, in order: stop fetching (the fetch thread exits), mark the node
 * leaving (jobs that reach a routee from now on do not run: they are
 * handed back), wait until nothing is in flight, move the handed-back and
 * the unread entries to live members, remove the report and lease, and
 * - when the inbox is empty - the membership and the inbox.  With no
 * other live member the entries stay in the inbox and the node stays in
 * the member set: the next node to join recovers them.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "fetch.h"
#include "heartbeat.h"
#include "impl.h"
#include "inbox.h"
#include "node.h"
#include "recover.h"
#include "send.h"
#include "util.h"

static void stop_threads(rp_cluster_node *node);

static void make_token(char *tok, size_t cap)
{
    unsigned char b[16] = {0};
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, b, sizeof b) != (ssize_t)sizeof b) {
        uint64_t x = (uint64_t)rp__mono_us() ^ ((uint64_t)getpid() << 32);
        memcpy(b, &x, sizeof x);
    }
    if (fd >= 0)
        close(fd);
    for (size_t i = 0; i < sizeof b && 2 * i + 2 < cap; i++)
        snprintf(tok + 2 * i, 3, "%02x", b[i]);
}

static void node_free(rp_cluster_node *node)
{
    rp__conn_close(&node->sendc);
    rp__conn_close(&node->fetchc);
    rp__conn_close(&node->hbc);
    rp__conn_close(&node->replyc);
    for (size_t i = 0; i < node->nhandlers; i++)
        free(node->handlers[i].name);
    free(node->handlers);
    for (size_t i = 0; i < node->nacks; i++)
        free(node->acks[i]);
    free(node->acks);
    for (size_t i = 0; i < node->live.n; i++)
        free(node->live.ids[i]);
    free(node->live.ids);
    free(node->k_inbox);
    free(node->k_depth);
    free(node->k_lease);
    free(node->k_nodes);
    free(node->k_reply);
    free(node->k_dead);
    free(node->prefix);
    rp__settings_free(&node->set);
    rp_router_destroy(node->keyed); /* routers go before their pools */
    if (node->own_pool)
        rp_pool_destroy(node->own_pool);
    pthread_rwlock_destroy(&node->hlock);
    pthread_mutex_destroy(&node->send_lock);
    pthread_mutex_destroy(&node->lock);
    pthread_cond_destroy(&node->cond);
    pthread_mutex_destroy(&node->hb_lock);
    pthread_cond_destroy(&node->hb_cond);
    pthread_mutex_destroy(&node->lst_lock);
    pthread_cond_destroy(&node->lst_cond);
    pthread_mutex_destroy(&node->ask_lock);
    free(node);
}

static void init_sync(rp_cluster_node *node)
{
    pthread_rwlock_init(&node->hlock, NULL);
    pthread_mutex_init(&node->send_lock, NULL);
    pthread_mutex_init(&node->lock, NULL);
    pthread_cond_init(&node->cond, NULL);
    pthread_mutex_init(&node->hb_lock, NULL);
    pthread_cond_init(&node->hb_cond, NULL);
    pthread_mutex_init(&node->lst_lock, NULL);
    pthread_cond_init(&node->lst_cond, NULL);
    pthread_mutex_init(&node->ask_lock, NULL);
    rp__conn_init(&node->sendc, &node->set, &node->c.reconnects);
    rp__conn_init(&node->fetchc, &node->set, &node->c.reconnects);
    rp__conn_init(&node->hbc, &node->set, &node->c.reconnects);
    rp__conn_init(&node->replyc, &node->set, &node->c.reconnects);
    rp__init_scripts(node);
    atomic_init(&node->last_report_mono, -1);
}

static int copy_opts(rp_cluster_node *node, const rp_cluster_options *o)
{
    node->heartbeat_ms = o->heartbeat_ms;
    node->dead_after_ms = o->dead_after_ms;
    node->max_deliveries = o->max_deliveries;
    node->max_payload = o->max_payload;
    node->max_inflight = o->max_inflight ? o->max_inflight
                         : node->pool ? 2 * (unsigned)rp_pool_size(node->pool) : 0;
    node->log = o->log;
    node->log_user = o->log_user;
    node->set.connect_timeout_ms = o->connect_timeout_ms;
    node->set.command_timeout_ms = o->command_timeout_ms;
    if (o->node_id)
        snprintf(node->id, sizeof node->id, "%s", o->node_id);
    else
        rp__default_id(node->id, sizeof node->id);
    make_token(node->token, sizeof node->token);
    int rc = rp__settings_parse_addr(&node->set, o->redis, "rp_cluster_join", "opts.");
    if (rc < 0)
        return rc;
    node->prefix = strdup(o->prefix);
    node->set.user = o->user ? strdup(o->user) : NULL;
    node->set.password = o->password ? strdup(o->password) : NULL;
    if (!node->prefix || (o->user && !node->set.user) || (o->password && !node->set.password))
        return RP_ENOMEM;
    node->k_inbox = rp__key(node, "inbox", node->id);
    node->k_depth = rp__key(node, "depth", NULL);
    node->k_lease = rp__key(node, "node", node->id);
    node->k_nodes = rp__key(node, "nodes", NULL);
    node->k_reply = rp__key(node, "reply", node->id);
    node->k_dead = rp__key(node, "dead", NULL);
    if (!node->k_inbox || !node->k_depth || !node->k_lease || !node->k_nodes ||
        !node->k_reply || !node->k_dead)
        return RP_ENOMEM;
    return 0;
}

/* SET lease token NX PX: nil when a live node holds the id. */
static int take_lease(rp_cluster_node *node)
{
    char px[24];
    snprintf(px, sizeof px, "%d", node->dead_after_ms);
    const char *av[] = {"SET", node->k_lease, node->token, "NX", "PX", px};
    redisReply *r = rp__conn_cmd(&node->hbc, 6, av, NULL);
    if (!r)
        return rp_error_set(RP_EUNAVAILABLE, "rp_cluster_join: opts.redis: %s",
                            node->hbc.err);
    int rc = 0;
    if (r->type == REDIS_REPLY_NIL)
        rc = rp_error_set(RP_EEXIST, "rp_cluster_join: opts.node_id \"%s\" is a live node",
                          node->id);
    else if (r->type == REDIS_REPLY_ERROR)
        rc = rp_error_set(RP_EUNAVAILABLE, "rp_cluster_join: SET of the lease: %.200s",
                          r->str ? r->str : "error");
    freeReplyObject(r);
    return rc;
}

static int start_threads(rp_cluster_node *node)
{
    if (pthread_create(&node->hb_thr, NULL, rp__hb_main, node) != 0)
        return RP_ESYS;
    node->hb_running = true;
    if (pthread_create(&node->reply_thr, NULL, rp__reply_main, node) != 0)
        return RP_ESYS;
    node->reply_running = true;
    if (node->pool) {
        if (pthread_create(&node->fetch_thr, NULL, rp__fetch_main, node) != 0)
            return RP_ESYS;
        node->fetch_running = true;
    }
    return 0;
}

/* Connect, lease, group, first report, own leftovers. */
static int connect_node(rp_cluster_node *node)
{
    if (rp__conn_ensure(&node->hbc) < 0)
        return rp_error_set(RP_EUNAVAILABLE, "rp_cluster_join: opts.redis: %s", node->hbc.err);
    int rc = take_lease(node);
    if (rc < 0)
        return rc;
    if (node->pool && rp__ensure_group(node, &node->hbc) < 0)
        return rp_error_set(RP_EUNAVAILABLE, "rp_cluster_join: cannot create the inbox group");
    node->hb_up_since = rp__mono_ms();
    rp__tick(node);
    if (atomic_load(&node->last_report_mono) < 0)
        return rp_error_set(RP_EUNAVAILABLE, "rp_cluster_join: the first depth report failed");
    /* Job ids stay unique when a process rejoins with the same id: its
     * sequence starts at the join's server time x 1024. */
    atomic_store(&node->seq, (uint64_t)rp__server_now_ms(node) << 10);
    /* Entries a previous process with this id fetched and never finished:
     * it is dead (its lease had expired), so they count as delivered. */
    if (node->pool)
        while (rp__recover(node, &node->hbc, node->id, NULL, 2000, false) == 2000) {
        }
    return 0;
}

/* The router keyed entries run through (see impl.h, keyed). */
static int keyed_router(rp_cluster_node *node)
{
    rp_router_options ro;
    rp_router_options_init(&ro);
    ro.name = "cluster-keyed";
    ro.strategy = rp_strategy_consistent_hash(0);
    int rc = rp_router_create(&node->keyed, node->pool, &ro);
    return rc < 0 ? rp_error_set(rc, "rp_cluster_join: keyed router: %s", rp_errmsg()) : 0;
}

int rp_cluster_join(rp_cluster_node **out, rp_pool *pool, const rp_cluster_options *opts)
{
    rp_cluster_options defaults;
    if (!out)
        return rp_error_set(RP_EINVAL, "rp_cluster_join: out is NULL");
    *out = NULL;
    if (!opts) {
        rp_cluster_options_init(&defaults);
        opts = &defaults;
    }
    int rc = rp__check_options(opts);
    if (rc < 0)
        return rc;
    rp__ignore_sigpipe();
    rp_cluster_node *node = calloc(1, sizeof *node);
    if (!node)
        return rp_error_set(RP_ENOMEM, "rp_cluster_join: out of memory");
    node->pool = pool;
    init_sync(node);
    if ((rc = copy_opts(node, opts)) < 0) {
        if (rc == RP_ENOMEM)
            rp_error_set(rc, "rp_cluster_join: out of memory");
        goto fail;
    }
    if (!pool) {
        rp_pool_options po;
        rp_pool_options_init(&po);
        po.routees = 1;
        po.name = "cluster";
        if ((rc = rp_pool_create(&node->own_pool, &po)) < 0)
            goto fail;
    }
    if (pool && (rc = keyed_router(node)) < 0)
        goto fail;
    if ((rc = connect_node(node)) < 0 || (rc = start_threads(node)) < 0)
        goto fail;
    *out = node;
    return 0;
fail:
    if (rc == RP_ESYS)
        rp_error_set(rc, "rp_cluster_join: cannot start a thread");
    stop_threads(node);
    node_free(node);
    return rc;
}

int rp_cluster_start(rp_cluster_node *node)
{
    if (!node || !node->pool)
        return rp_error_set(RP_EINVAL, "rp_cluster_start: node is %s",
                            node ? "client-only" : "NULL");
    pthread_mutex_lock(&node->lock);
    node->started = true;
    pthread_cond_broadcast(&node->cond);
    pthread_mutex_unlock(&node->lock);
    return 0;
}

/* Stop the fetch thread (it flushes its acknowledgements and exits) and
 * join it.  Idempotent. */
static void stop_fetch(rp_cluster_node *node)
{
    pthread_mutex_lock(&node->lock);
    node->stopping = true;
    pthread_cond_broadcast(&node->cond);
    pthread_mutex_unlock(&node->lock);
    if (node->fetch_running)
        pthread_join(node->fetch_thr, NULL);
    node->fetch_running = false;
}

/* Stop the heartbeat thread and join it: it reports no more.  Idempotent. */
static void stop_heartbeat(rp_cluster_node *node)
{
    pthread_mutex_lock(&node->hb_lock);
    node->hb_stop = true;
    pthread_cond_broadcast(&node->hb_cond);
    pthread_mutex_unlock(&node->hb_lock);
    if (node->hb_running)
        pthread_join(node->hb_thr, NULL);
    node->hb_running = false;
}

/* Stop the node's fetch, heartbeat and reply threads (those running) and
 * join them: join's failure path and leave.  Idempotent. */
static void stop_threads(rp_cluster_node *node)
{
    stop_fetch(node);
    stop_heartbeat(node);
    atomic_store(&node->reply_stop, true);
    if (node->reply_running)
        pthread_join(node->reply_thr, NULL);
    node->reply_running = false;
}

static void wait_idle(rp_cluster_node *node)
{
    pthread_mutex_lock(&node->lock);
    while (node->inflight > 0)
        pthread_cond_wait(&node->cond, &node->lock);
    pthread_mutex_unlock(&node->lock);
}

/* Jobs fetched that never started go to live members (or back into our
 * own inbox when there is none), then the unread inbox follows them. */
static void hand_back(rp_cluster_node *node)
{
    pthread_mutex_lock(&node->lock);
    rp_cluster_job *j = node->handback;
    node->handback = NULL;
    pthread_mutex_unlock(&node->lock);
    while (j) {
        rp_cluster_job *next = j->next;
        if (rp__requeue_job(node, &node->hbc, j) == 0)
            BUMP(node, handed_back);
        rp__job_free(j);
        j = next;
    }
    rp__flush_acks(node, &node->hbc);
    while (rp__recover(node, &node->hbc, node->id, node->id, 2000, true) == 2000) {
    }
}

/* Lease and report go; membership and inbox too once the inbox is empty
 * (the cleanup script checks both atomically). */
static void leave_membership(rp_cluster_node *node)
{
    const char *del[] = {"DEL", node->k_lease};
    const char *hdel[] = {"HDEL", node->k_depth, node->id};
    size_t dl[] = {3, strlen(node->k_lease)};
    size_t hl[] = {4, strlen(node->k_depth), strlen(node->id)};
    redisReply *r = rp__conn_cmd(&node->hbc, 2, del, dl);
    if (r)
        freeReplyObject(r);
    if (!node->pool)
        return;
    char *lock = rp__key(node, "recover", node->id);
    const char *cav[] = {node->k_inbox, node->k_depth, node->k_nodes, node->k_lease,
                         lock ? lock : node->k_lease, node->id};
    r = rp__conn_eval(&node->hbc, &node->cleanup_script, 5, 6, cav, NULL);
    if (r)
        freeReplyObject(r);
    free(lock);
    r = rp__conn_cmd(&node->hbc, 3, hdel, hl);
    if (r)
        freeReplyObject(r);
}

void rp_cluster_leave(rp_cluster_node *node)
{
    if (!node)
        return;
    atomic_store(&node->leaving, true);
    stop_fetch(node);
    wait_idle(node);
    /* The heartbeat stops so it does not report again; its connection and
     * last membership read are ours from here on. */
    stop_heartbeat(node);
    if (node->pool) {
        rp__refresh_live(node);
        hand_back(node);
    }
    leave_membership(node);
    stop_threads(node);
    rp__asks_sweep(node, true);
    node_free(node);
}
