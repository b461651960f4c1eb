/* SPDX-License-Identifier: MIT */
/*
 * routers.c - cluster routers: a core group router over foreign routees,
 * one per live node, rebuilt when membership changes.
 *
 * Routing goes through the core (croute.c): the core calls the chosen
 * node's foreign send callback, node_send() here, synchronously in the
 * calling thread; it does the transport (rp__cluster_send_* of node.h, or
 * a scatter member's ask, cscatter.c) and records the outcome in the
 * request.  A job the core hands back (no node chosen, a refused send)
 * reaches on_undelivered, which records its reason; nothing of the user's
 * is owned by the core at any point.
 *
 * Strategies: round-robin, random, broadcast and weighted are the core's
 * (weighted with one weight per node of the snapshot, routers_kinds.c);
 * smallest-mailbox (depth.c), consistent hashing (rendezvous.c),
 * least-used and the user's pick (routers_kinds.c) are custom strategies
 * over the same routees.  A custom strategy that fails for a reason of its
 * own (least-used: Redis down; a bad answer of the user's pick) stores it
 * in the request of the calling thread (rp__creq_current()) and chooses no
 * node.
 *
 * Membership: the refresh thread (or rp_cluster_router_refresh()) reads
 * the reports; when the set of live ids differs from the snapshot's, a new
 * snapshot is built outside every lock and swapped in under r->mu.
 *
 * The top of the routers' files: it uses croute.c, routers_kinds.c and
 * cscatter.c (destroy stops the open scatters), none of which calls back
 * into this file; the routees' callbacks reach it through pointers only.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "croute.h"
#include "cscatter.h"
#include "least_used.h"
#include "routers_kinds.h"

/* ---- the foreign routees' callbacks ---- */

static int64_t node_depth(void *user)
{
    const rp__cnode *cn = user;
    return rp__depth_cache_get(&cn->r->cache, cn->id);
}

static int batch_add(rp__creq *req, const char *target, const rp__cluster_msg *m)
{
    if (req->k >= req->cap)
        return RP_ENOMEM; /* cannot happen: cap covers a fan-out of every job */
    req->targets[req->k] = target;
    req->batch_msgs[req->k++] = *m;
    return 0;
}

static int node_send(rp_job_fn fn, void *arg, void *user)
{
    const rp__cjob *job = arg;
    rp__creq *req = job->req;
    rp__cnode *cn = user;
    rp_cluster_node *node = cn->r->node;
    int rc;

    (void)fn;
    switch (req->op) {
    case RP__COP_TELL:
        rc = rp__cluster_send_tell(node, req->fn, cn->id, &req->msgs[0]);
        break;
    case RP__COP_ASK:
        rc = req->future ? RP_EINVAL
                         : rp__cluster_send_ask(node, req->fn, cn->id, &req->msgs[0],
                                                req->timeout_ms, &req->future);
        break;
    case RP__COP_BATCH:
        rc = batch_add(req, cn->id, &req->msgs[job->i]);
        break;
    default:
        rc = rp__cscatter_send(req->sc, node, cn->id, &req->msgs[0]);
        break;
    }
    if (rc == RP_ENOROUTEE) {
        /* The node left since the last refresh (its inbox is gone, so the
         * transport refused the add): skip it in this snapshot - the next
         * refresh rebuilds one, see update_members() - and let the call
         * route again (undelivered() sees the flag). */
        rp_routee_stop(cn->routee);
        req->departed = true;
        return rc;
    }
    if (rc < 0)
        rp__creq_fail(req, rc);
    else
        req->sent++;
    return rc;
}

static void undelivered(void *arg, int reason, void *user)
{
    rp__cjob *job = arg;
    rp__creq *req = job->req;

    (void)user;
    if (req->resnap)
        return; /* not a failure: routed again (routers_api.c) */
    if (req->departed) {
        /* Not a failure: a single-target call routes again among the
         * nodes left; a broadcast copy for a node that left is not owed. */
        req->departed = false;
        req->retry = true;
        return;
    }
    rp__creq_fail(req, reason);
}

static void router_log(int level, const char *msg, void *user)
{
    const rp_cluster_router *r = user;
    rp__cluster_log(r->node, level, msg);
}

/* ---- least-used as a custom strategy ---- */

static int cmp_node(const void *key, const void *elem)
{
    return strcmp(key, ((const rp__cnode *)elem)->id);
}

static bool snap_has(const rp__csnap *s, const char *id);

/* Whether the router's current snapshot is newer than s and has node id
 * (the set may name a node that joined after the caller took s). */
static bool newer_snap_has(rp_cluster_router *r, const rp__csnap *s, const char *id)
{
    bool hit;

    pthread_mutex_lock(&r->mu); /* r->cur cannot be freed while we hold it */
    hit = r->cur != s && snap_has(r->cur, id);
    pthread_mutex_unlock(&r->mu);
    return hit;
}

static int least_used_pick(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                           size_t *out)
{
    const rp__csnap *s = user;
    rp__creq *req = rp__creq_current();
    char member[RP_LEAST_USED_MEMBER_MAX + 1];
    const rp__cnode *hit;
    int rc;

    (void)st, (void)routees;
    if (n == 0 || n != s->n)
        return 0;
    if ((rc = rp_least_used_acquire(s->nodes[0].r->lu, member, sizeof member)) < 0) {
        if (req)
            rp__creq_fail(req, rc);
        return 0; /* no node: nothing is sent */
    }
    if (!(hit = bsearch(member, s->nodes, n, sizeof *s->nodes, cmp_node))) {
        if (req && req->op != RP__COP_BATCH && newer_snap_has(s->nodes[0].r, s, member)) {
            req->resnap = true; /* the caller routes again on the newer list */
            return 0;
        }
        rc = rp_error_set(RP_ENOROUTEE, "%s: the least-used set chose \"%s\", which is not a live node",
                          req ? req->fn : "least-used", member);
        if (req)
            rp__creq_fail(req, rc);
        return 0;
    }
    out[0] = (size_t)(hit - s->nodes);
    return 1;
}

/* ---- snapshots ---- */

static rp_strategy kind_strategy(rp_cluster_router *r, rp__csnap *s)
{
    switch (r->kind) {
    case RP_CLUSTER_ROUTER_RANDOM:
        return rp_strategy_random(r->seed);
    case RP_CLUSTER_ROUTER_BROADCAST:
        return rp_strategy_broadcast();
    case RP_CLUSTER_ROUTER_SMALLEST_MAILBOX:
        return rp_strategy_custom(rp__depth_strategy, NULL);
    case RP_CLUSTER_ROUTER_CONSISTENT_HASH:
        return rp_strategy_custom(rp__rendezvous_strategy, &s->rv);
    case RP_CLUSTER_ROUTER_LEAST_USED:
        return rp_strategy_custom(least_used_pick, s);
    case RP_CLUSTER_ROUTER_WEIGHTED:
    case RP_CLUSTER_ROUTER_CUSTOM:
        return rp__ckind_strategy(r, s);
    default:
        return rp_strategy_round_robin();
    }
}

/* A snapshot over the n live nodes e[] (sorted by id). */
static int snap_build(rp_cluster_router *r, const rp__depth_entry *e, size_t n, rp__csnap **out)
{
    rp_router_options ro;
    rp__csnap *s;
    int rc = RP_ENOMEM;

    if (!(s = calloc(1, sizeof *s)))
        return RP_ENOMEM;
    s->refs = 1;
    if (n && (!(s->nodes = calloc(n, sizeof *s->nodes)) || !(s->ids = calloc(n, sizeof *s->ids)) ||
              !(s->routees = calloc(n, sizeof *s->routees))))
        goto fail;
    for (; s->n < n; s->n++) {
        rp__cnode *cn = &s->nodes[s->n];
        strcpy(cn->id, e[s->n].id);
        cn->r = r;
        s->ids[s->n] = cn->id;
        if ((rc = rp_routee_foreign_create(&s->routees[s->n], node_send, node_depth, cn)) < 0)
            goto fail;
        cn->routee = s->routees[s->n];
    }
    s->rv = (rp__rendezvous){s->ids, n, r->seed};
    if ((rc = rp__ckind_snap(r, s)) < 0)
        goto fail;
    rp_router_options_init(&ro);
    ro.name = r->name;
    ro.strategy = kind_strategy(r, s);
    ro.on_undelivered = undelivered;
    ro.log = router_log;
    ro.log_user = r;
    if (n && (rc = rp_router_create_group(&s->router, s->routees, n, &ro)) < 0)
        goto fail;
    *out = s;
    return 0;
fail:
    rp__csnap_free(s);
    return rc;
}

/* Whether s routes to exactly the nodes e[]: the same ids, none of them
 * stopped (a node found gone by a send, whose id is live again - it came
 * back under the same id - needs a fresh routee). */
static bool same_ids(const rp__csnap *s, const rp__depth_entry *e, size_t n)
{
    if (s->n != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s->nodes[i].id, e[i].id) || rp_routee_stopped(s->routees[i]))
            return false;
    return true;
}

/* Whether id is among s's nodes (bsearch(NULL, 0) is undefined). */
static bool snap_has(const rp__csnap *s, const char *id)
{
    return s->n && bsearch(id, s->nodes, s->n, sizeof *s->nodes, cmp_node);
}

/* LEAST_USED with sync: retire the nodes that left (before the swap) and
 * allow the nodes that joined (after it), so the set never names a node
 * this router's current snapshot lacks.  Best effort: a failure is logged,
 * and the node is retried at the next membership change. */
static void lu_sync(rp_cluster_router *r, const rp__csnap *from, const rp__csnap *to, bool add)
{
    for (size_t i = 0; i < from->n; i++) {
        if (snap_has(to, from->nodes[i].id))
            continue;
        if ((add ? rp__least_used_add_at_min(r->lu, from->nodes[i].id, "least-used sync")
                 : rp_least_used_remove(r->lu, from->nodes[i].id)) < 0)
            rp__cluster_log(r->node, RP_LOG_WARN, rp_errmsg());
    }
}

/* Swap in a snapshot of the live nodes when they changed.  Caller holds
 * refresh_mu. */
static int update_members(rp_cluster_router *r)
{
    rp__depth_entry *e;
    rp__csnap *s, *old;
    size_t n;
    int rc;

    if ((rc = rp__depth_cache_live(&r->cache, r->member_timeout_ms, &e, &n)) < 0)
        return rc;
    old = rp__csnap_get(r);
    if (same_ids(old, e, n)) {
        rp__csnap_put(r, old);
        free(e);
        return 0;
    }
    rc = snap_build(r, e, n, &s);
    free(e);
    if (rc == 0) {
        bool sync = r->lu && r->lu_sync;
        if (sync)
            lu_sync(r, old, s, false); /* in old, not in s: remove */
        pthread_mutex_lock(&r->mu);
        r->cur = s;
        pthread_mutex_unlock(&r->mu);
        if (sync)
            lu_sync(r, s, old, true);  /* in s, not in old: add */
        rp__csnap_put(r, old); /* the router's reference */
    }
    rp__csnap_put(r, old);     /* ours */
    return rc;
}

static int refresh_locked(rp_cluster_router *r, const char *func)
{
    int rc = rp__depth_refresh(&r->cache, &r->conn, r->depth_key);

    if (rc == RP_EUNAVAILABLE)
        return rp_error_set(rc, "%s: redis unavailable: %s", func, r->conn.err);
    if (rc < 0)
        return rp_error_set(rc, "%s: the depth reports could not be read (%s)", func,
                            rp_strerror(rc));
    if ((rc = update_members(r)) < 0)
        return rp_error_set(rc, "%s: out of memory", func);
    return 0;
}

int rp_cluster_router_refresh(rp_cluster_router *r)
{
    int rc;

    if (!r)
        return rp_error_set(RP_EINVAL, "rp_cluster_router_refresh: r is NULL");
    pthread_mutex_lock(&r->refresh_mu);
    rc = refresh_locked(r, "rp_cluster_router_refresh");
    pthread_mutex_unlock(&r->refresh_mu);
    return rc;
}

/* Every refresh_ms until destroy; sleeps on a condition (no polling). */
static void *refresh_main(void *arg)
{
    rp_cluster_router *r = arg;
    struct timespec at;

    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        pthread_mutex_unlock(&r->mu);
        pthread_mutex_lock(&r->refresh_mu);
        (void)refresh_locked(r, "cluster router refresh"); /* next tick retries */
        pthread_mutex_unlock(&r->refresh_mu);
        clock_gettime(CLOCK_MONOTONIC, &at);
        at.tv_sec += r->refresh_ms / 1000;
        at.tv_nsec += (long)(r->refresh_ms % 1000) * 1000000L;
        if (at.tv_nsec >= 1000000000L)
            at.tv_sec++, at.tv_nsec -= 1000000000L;
        pthread_mutex_lock(&r->mu);
        while (!r->stop && pthread_cond_timedwait(&r->cv, &r->mu, &at) == 0)
            ;
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- create / destroy ---- */

void rp_cluster_router_options_init(rp_cluster_router_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->kind = RP_CLUSTER_ROUTER_ROUND_ROBIN;
    opts->name = "cluster";
    opts->refresh_ms = RP__DEPTH_REFRESH_DEFAULT_MS;
    opts->staleness_ms = RP__DEPTH_STALENESS_DEFAULT_MS;
    opts->member_timeout_ms = 3000;
    opts->least_used_sync = true;
    opts->least_used_readd = RP_LEAST_USED_READD_MIN;
    opts->scatter_timeout_ms = RP_SCATTER_TIMEOUT_MS;
    opts->default_weight = 1;
}

#define F "rp_cluster_router_create"
#define LU_NAME_MAX 64u

static int check_opts(const rp_cluster_router_options *o)
{
    size_t len;
    int rc;

    if ((unsigned)o->kind > RP_CLUSTER_ROUTER_CUSTOM)
        return rp_error_set(RP_EINVAL, F ": opts.kind is not an rp_cluster_router_kind (got %d)",
                            (int)o->kind);
    if (!o->name || !(len = strlen(o->name)) || len > RP_ROUTER_NAME_MAX)
        return rp_error_set(RP_EINVAL, F ": opts.name must be 1..%u bytes", RP_ROUTER_NAME_MAX);
    if ((rc = rp__depth_validate(o->refresh_ms, o->staleness_ms, F)) < 0)
        return rc;
    if (o->member_timeout_ms < o->refresh_ms)
        return rp_error_set(RP_EINVAL, F ": opts.member_timeout_ms (%d) must be >= opts.refresh_ms (%d)",
                            o->member_timeout_ms, o->refresh_ms);
    if (!(o->scatter_timeout_ms > 0) || !isfinite(o->scatter_timeout_ms) ||
        o->scatter_timeout_ms > (double)INT32_MAX)
        return rp_error_set(RP_EINVAL, F ": opts.scatter_timeout_ms must be positive and finite, at most %d (got %g)",
                            INT32_MAX, o->scatter_timeout_ms);
    if ((unsigned)o->least_used_readd > RP_LEAST_USED_READD_MIN)
        return rp_error_set(RP_EINVAL, F ": opts.least_used_readd is not an rp_least_used_readd (got %d)",
                            (int)o->least_used_readd);
    if (o->least_used_name && (!*o->least_used_name || strlen(o->least_used_name) > LU_NAME_MAX))
        return rp_error_set(RP_EINVAL, F ": opts.least_used_name must be 1..%u bytes", LU_NAME_MAX);
    return rp__ckind_check(o, F);
}

static int open_least_used(rp_cluster_router *r, const rp_cluster_router_options *o)
{
    char key[RP_CLUSTER_PREFIX_MAX + LU_NAME_MAX + 8];

    snprintf(key, sizeof key, "%s:lu:%s", rp__cluster_node_prefix(r->node),
             o->least_used_name ? o->least_used_name : o->name);
    r->lu_sync = o->least_used_sync;
    return rp__least_used_open(&r->lu, rp__cluster_node_settings(r->node), key,
                               o->least_used_readd, F);
}

static int router_init(rp_cluster_router *r, rp_cluster_node *node,
                       const rp_cluster_router_options *o)
{
    pthread_condattr_t ca;
    int rc;

    strcpy(r->name, o->name);
    r->node = node;
    r->kind = o->kind;
    r->seed = o->seed;
    r->refresh_ms = o->refresh_ms;
    r->member_timeout_ms = o->member_timeout_ms;
    r->scatter_timeout_ms = o->scatter_timeout_ms;
    snprintf(r->depth_key, sizeof r->depth_key, "%s:depth", rp__cluster_node_prefix(node));
    rp__depth_cache_init(&r->cache, o->staleness_ms, o->clock, o->clock_user);
    pthread_mutex_init(&r->refresh_mu, NULL);
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* The node's address, credentials and timeouts (the node outlives the
     * router), on a connection of the router's own. */
    rp__conn_init(&r->conn, rp__cluster_node_settings(node), NULL);
    if ((rc = rp__ckind_init(r, o, F)) < 0)
        return rc;
    if ((rc = snap_build(r, NULL, 0, &r->cur)) < 0)
        return rp_error_set(rc, F ": out of memory");
    if (o->kind == RP_CLUSTER_ROUTER_LEAST_USED && (rc = open_least_used(r, o)) < 0)
        return rc;
    return 0;
}

int rp_cluster_router_create(rp_cluster_router **out, rp_cluster_node *node,
                             const rp_cluster_router_options *opts)
{
    rp_cluster_router_options defaults;
    rp_cluster_router *r;
    int rc;

    if (!out)
        return rp_error_set(RP_EINVAL, F ": out is NULL");
    *out = NULL;
    if (!node)
        return rp_error_set(RP_EINVAL, F ": node is NULL");
    if (!opts) {
        rp_cluster_router_options_init(&defaults);
        opts = &defaults;
    }
    if ((rc = check_opts(opts)) < 0)
        return rc;
    if (!(r = calloc(1, sizeof *r)))
        return rp_error_set(RP_ENOMEM, F ": out of memory");
    if ((rc = router_init(r, node, opts)) < 0 || (rc = rp_cluster_router_refresh(r)) < 0)
        goto fail;
    if (pthread_create(&r->thread, NULL, refresh_main, r) != 0) {
        rc = rp_error_set(RP_ESYS, F ": cannot start the refresh thread");
        goto fail;
    }
    r->thread_started = true;
    *out = r;
    return 0;
fail:
    rp_cluster_router_destroy(r);
    return rc;
}
#undef F

void rp_cluster_router_destroy(rp_cluster_router *r)
{
    if (!r)
        return;
    if (r->thread_started) {
        pthread_mutex_lock(&r->mu);
        r->stop = true;
        pthread_cond_signal(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
    }
    rp__cscatter_stop_all(r);
    if (r->cur)
        rp__csnap_put(r, r->cur);
    rp_least_used_destroy(r->lu);
    free(r->weights);
    rp__conn_close(&r->conn);
    rp__depth_cache_fini(&r->cache);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->refresh_mu);
    free(r);
}

size_t rp_cluster_router_size(rp_cluster_router *r)
{
    rp__csnap *s;
    size_t n;

    if (!r)
        return 0;
    s = rp__csnap_get(r);
    n = s->n;
    rp__csnap_put(r, s);
    return n;
}

bool rp_cluster_router_has(rp_cluster_router *r, const char *id)
{
    rp__csnap *s;
    bool hit;

    if (!r || !id)
        return false;
    s = rp__csnap_get(r);
    hit = snap_has(s, id);
    rp__csnap_put(r, s);
    return hit;
}
