/*
 * router.c - routers: the message index, the strategy call, delivery, and
 * the hand-back of jobs no routee took.
 *
 * A router's only mutable state is its message index (one relaxed
 * fetch_add per job: unique per job, rising, safe under many submitters)
 * and a counter of the jobs it discarded.  Everything else is fixed at
 * creation, so routing takes no lock.
 *
 * A job picked for a routee that stops between the pick and the delivery
 * is picked again (the strategy now skips that routee); only when every
 * routee is stopped is it handed back with RP_ESTOPPED.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "pool.h"
#include "routee.h"

/* Routers with at most this many routees route with no allocation. */
#define STACK_CHOICES 64

struct rp_router {
    char name[RP_ROUTER_NAME_MAX + 1];
    rp_strategy strategy;
    unsigned *weights; /* owned copy for RP_STRATEGY_WEIGHTED */
    rp_routee **routees;
    size_t n;
    rp_pool *pool; /* NULL for group routers */
    bool is_default;
    rp_undelivered_fn on_undelivered;
    void *undelivered_user;
    rp_log_fn log;
    void *log_user;
    RP_ALIGNED _Atomic uint64_t message_index;
    RP_ALIGNED _Atomic uint64_t undelivered;
};

void rp_router_options_init(rp_router_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->name = "router";
    opts->strategy = rp_strategy_round_robin();
}

/* Check a strategy against the routee count; copy what it borrows. */
static int adopt_strategy(rp_router *rt, const rp_strategy *s, const char *func)
{
    rp_strategy w;

    rt->strategy = *s;
    if ((unsigned)s->kind > RP_STRATEGY_CUSTOM)
        return rp__fail(RP_EINVAL, "%s: strategy.kind is not an rp_strategy_kind (got %d)",
                        func, (int)s->kind);
    if (s->kind == RP_STRATEGY_CUSTOM && !s->custom)
        return rp__fail(RP_EINVAL, "%s: strategy.custom is NULL", func);
    if (s->kind != RP_STRATEGY_WEIGHTED)
        return 0;
    if (!s->weights || s->nweights != rt->n)
        return rp__fail(RP_EINVAL, "%s: strategy.weights must hold one weight per routee (%zu weights for %zu routees)",
                        func, s->weights ? s->nweights : 0, rt->n);
    for (size_t i = 0; i < s->nweights; i++)
        if (s->weights[i] > RP_WEIGHT_MAX)
            return rp__fail(RP_EINVAL, "%s: strategy.weights[%zu] must be 0..%u (got %u)",
                            func, i, RP_WEIGHT_MAX, s->weights[i]);
    if (!(rt->weights = malloc(sizeof *rt->weights * (rt->n ? rt->n : 1))))
        return rp__fail(RP_ENOMEM, "%s: out of memory", func);
    memcpy(rt->weights, s->weights, sizeof *rt->weights * rt->n);
    w = rp_strategy_weighted(rt->weights, rt->n);
    if (w.weight_total == 0)
        return rp__fail(RP_EINVAL, "%s: strategy.weights must not all be 0", func);
    rt->strategy = w;
    return 0;
}

static int router_new(rp_router **out, rp_routee *const *routees, size_t n,
                      const rp_router_options *opts, const char *func)
{
    rp_router_options defaults;
    rp_router *rt;
    int rc;

    if (!opts) {
        rp_router_options_init(&defaults);
        opts = &defaults;
    }
    if (!(rt = aligned_alloc(RP_CACHELINE, (sizeof *rt + RP_CACHELINE - 1) /
                                               RP_CACHELINE * RP_CACHELINE)))
        return rp__fail(RP_ENOMEM, "%s: out of memory", func);
    memset(rt, 0, sizeof *rt);
    atomic_init(&rt->message_index, 0);
    atomic_init(&rt->undelivered, 0);
    rt->n = n;
    rt->on_undelivered = opts->on_undelivered;
    rt->undelivered_user = opts->undelivered_user;
    rt->log = opts->log;
    rt->log_user = opts->log_user;
    if (n && !(rt->routees = malloc(sizeof *rt->routees * n))) {
        free(rt);
        return rp__fail(RP_ENOMEM, "%s: out of memory", func);
    }
    for (size_t i = 0; i < n; i++)
        rt->routees[i] = routees[i];
    if ((rc = rp__copy_name(rt->name, sizeof rt->name, opts->name, "router", func,
                            "opts.name")) < 0 ||
        (rc = adopt_strategy(rt, &opts->strategy, func)) < 0) {
        rp__router_free(rt);
        return rc;
    }
    *out = rt;
    return 0;
}

static int pool_router(rp_router **out, rp_pool *pool, const rp_router_options *opts,
                       bool is_default, const char *func)
{
    rp_routee **list = malloc(sizeof *list * pool->n);
    int rc;

    if (!list)
        return rp__fail(RP_ENOMEM, "%s: out of memory", func);
    for (unsigned i = 0; i < pool->n; i++)
        list[i] = &pool->routees[i];
    rc = router_new(out, list, pool->n, opts, func);
    free(list);
    if (rc < 0)
        return rc;
    (*out)->pool = pool;
    (*out)->is_default = is_default;
    if (!(*out)->log) {
        (*out)->log = pool->log;
        (*out)->log_user = pool->log_user;
    }
    return 0;
}

int rp__router_create_for_pool(rp_router **out, rp_pool *pool,
                               const rp_strategy *strategy, bool is_default)
{
    rp_router_options opts;

    rp_router_options_init(&opts);
    opts.name = pool->name;
    opts.strategy = *strategy;
    return pool_router(out, pool, &opts, is_default, "rp_pool_create");
}

int rp_router_create(rp_router **out, rp_pool *pool, const rp_router_options *opts)
{
    if (!out)
        return rp__fail(RP_EINVAL, "rp_router_create: out is NULL");
    *out = NULL;
    if (!pool)
        return rp__fail(RP_EINVAL, "rp_router_create: pool is NULL");
    return pool_router(out, pool, opts, false, "rp_router_create");
}

int rp_router_create_group(rp_router **out, rp_routee *const *routees, size_t n,
                           const rp_router_options *opts)
{
    if (!out)
        return rp__fail(RP_EINVAL, "rp_router_create_group: out is NULL");
    *out = NULL;
    if (n > RP_ROUTEES_MAX)
        return rp__fail(RP_EINVAL, "rp_router_create_group: n must be 0..%u (got %zu)",
                        RP_ROUTEES_MAX, n);
    if (n && !routees)
        return rp__fail(RP_EINVAL, "rp_router_create_group: routees is NULL");
    for (size_t i = 0; i < n; i++)
        if (!routees[i])
            return rp__fail(RP_EINVAL, "rp_router_create_group: routees[%zu] is NULL", i);
    return router_new(out, routees, n, opts, "rp_router_create_group");
}

void rp__router_free(rp_router *rt)
{
    if (!rt)
        return;
    free(rt->weights);
    free(rt->routees);
    free(rt);
}

void rp_router_destroy(rp_router *rt)
{
    if (rt && !rt->is_default)
        rp__router_free(rt);
}

size_t rp_router_size(const rp_router *rt)
{
    return rt ? rt->n : 0;
}

uint64_t rp_router_undelivered(const rp_router *rt)
{
    return rt ? atomic_load_explicit(&rt->undelivered, memory_order_relaxed) : 0;
}

/* A job no routee took: the router's callback, else the pool's. */
static void handback(rp_router *rt, const rp_routee *r, void *arg, int reason)
{
    uint64_t count = atomic_fetch_add_explicit(&rt->undelivered, 1,
                                               memory_order_relaxed) + 1;
    rp_pool *pool = r && r->pool ? r->pool : rt->pool;

    /* Logarithmic rate limit: the 1st, 2nd, 4th, 8th... discard. */
    if ((count & (count - 1)) == 0)
        rp__log(rt->log, rt->log_user, RP_LOG_WARN,
                "router %s: job handed back (%s); %llu so far", rt->name,
                rp_err_name(reason), (unsigned long long)count);
    if (rt->on_undelivered)
        rt->on_undelivered(arg, reason, rt->undelivered_user);
    else if (pool)
        rp__pool_handback(pool, arg, reason);
}

/* One target.  Re-pick when the routee stopped after the pick. */
static int deliver_one(rp_router *rt, rp_route_state *st, size_t idx,
                       rp_job_fn fn, void *arg, size_t *out)
{
    int rc = 0;

    for (size_t attempt = 0; attempt <= rt->n; attempt++) {
        rc = rp__routee_deliver(rt->routees[idx], fn, arg, st->pinned);
        if (rc != RP_ESTOPPED && rc != RP_ESHUTDOWN)
            break;
        if (rp_strategy_pick(&rt->strategy, st, rt->routees, rt->n, out) != 1 ||
            rp__routee_stopped(rt->routees[out[0]]))
            break; /* every routee is stopped */
        idx = out[0];
    }
    if (rc == RP_ESTOPPED || rc == RP_ESEND) {
        handback(rt, rt->routees[idx], arg, rc);
        return 0;
    }
    if (rc < 0)
        return rp__fail(rc, "router %s: %s", rt->name, rp_strerror(rc));
    return 0;
}

/* Several targets: each copy is pinned; a copy that fails comes back. */
static int fan_out(rp_router *rt, const size_t *idx, int cnt, rp_job_fn fn, void *arg)
{
    for (int k = 0; k < cnt; k++) {
        rp_routee *r = rt->routees[idx[k]];
        int rc = rp__routee_deliver(r, fn, arg, true);
        if (rc < 0)
            handback(rt, r, arg, rc);
    }
    return 0;
}

static int route(rp_router *rt, rp_job_fn fn, void *arg, const void *key, size_t key_len)
{
    size_t local[STACK_CHOICES], *out = local;
    rp_route_state st = {0};
    int cnt, rc;

    st.message_index = atomic_fetch_add_explicit(&rt->message_index, 1, memory_order_relaxed);
    if (key) {
        st.key = key;
        st.key_len = key_len;
        st.key_hash = XXH3_64bits(key, key_len);
        st.pinned = true;
    }
    if (rt->n > STACK_CHOICES && !(out = malloc(sizeof *out * rt->n)))
        return rp__fail(RP_ENOMEM, "router %s: out of memory", rt->name);
    cnt = rp_strategy_pick(&rt->strategy, &st, rt->routees, rt->n, out);
    if (cnt < 0)
        handback(rt, NULL, arg, RP_EINVAL);
    else if (cnt == 0)
        handback(rt, NULL, arg, RP_ENOROUTEE);
    rc = cnt == 1   ? deliver_one(rt, &st, out[0], fn, arg, out)
         : cnt > 1 ? fan_out(rt, out, cnt, fn, arg)
                   : 0;
    if (out != local)
        free(out);
    return rc;
}

int rp_router_tell(rp_router *rt, rp_job_fn fn, void *arg)
{
    if (!rt || !fn)
        return rp__fail(RP_EINVAL, "rp_router_tell: %s is NULL", rt ? "fn" : "router");
    if (rt->strategy.kind == RP_STRATEGY_CONSISTENT_HASH)
        return rp__fail(RP_EINVAL, "router %s: consistent hashing needs a key: use rp_router_tell_key",
                        rt->name);
    return route(rt, fn, arg, NULL, 0);
}

int rp_router_tell_key(rp_router *rt, const void *key, size_t key_len,
                       rp_job_fn fn, void *arg)
{
    if (!rt || !fn || !key || key_len == 0)
        return rp__fail(RP_EINVAL, "rp_router_tell_key: %s",
                        !rt ? "router is NULL" : !fn ? "fn is NULL"
                        : !key ? "key is NULL" : "key_len is 0");
    return route(rt, fn, arg, key, key_len);
}

int rp_router_broadcast(rp_router *rt, rp_job_fn fn, void *arg)
{
    size_t live = 0;

    if (!rt || !fn)
        return rp__fail(RP_EINVAL, "rp_router_broadcast: %s is NULL", rt ? "fn" : "router");
    for (size_t i = 0; i < rt->n; i++) {
        rp_routee *r = rt->routees[i];
        int rc;

        if (rp__routee_stopped(r))
            continue;
        live++;
        if ((rc = rp__routee_deliver(r, fn, arg, true)) < 0)
            handback(rt, r, arg, rc);
    }
    if (live == 0)
        return rp__fail(RP_ENOROUTEE, "router %s: no live routee to broadcast to", rt->name);
    return 0;
}
