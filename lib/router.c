/* SPDX-License-Identifier: MIT */
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
 *
 * After rp_pool_shutdown() every submit returns RP_ESHUTDOWN and accepts
 * nothing, also when some routee was stopped before (its mailbox says
 * RP_ESTOPPED, not RP_ESHUTDOWN).  The pool's shut flag is read only where
 * a delivery already failed or nothing is left to deliver to, and once per
 * batch or scatter: never on a tell's way to a live mailbox.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "future.h"
#include "pool_record.h"
#include "probes.h"
#include "routee.h"
#include "router.h"
#include "scatter.h"
#include "steal.h"
#include "strategy.h"

/* Routers with at most this many routees route with no allocation. */
#define STACK_CHOICES 64

struct rp_router {
    char name[RP_ROUTER_NAME_MAX + 1];
    rp_strategy strategy;
    unsigned *weights; /* owned copy for RP_STRATEGY_WEIGHTED */
    uint64_t *weight_ends; /* and its running sums (binary search) */
    rp_routee **routees;
    size_t n;
    rp_pool *pool; /* NULL for group routers */
    bool is_default;
    struct rp__sg *sg; /* scatter-gather routers only */
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
    if (!(rt->weight_ends = malloc(sizeof *rt->weight_ends * rt->n)))
        return rp__fail(RP_ENOMEM, "%s: out of memory", func);
    for (size_t i = 0; i < rt->n; i++)
        rt->weight_ends[i] = (i ? rt->weight_ends[i - 1] : 0) + rt->weights[i];
    w.weight_ends = rt->weight_ends;
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
    if (rt->sg) {
        /* Stop open scatters first, so "stopped" is counted before the
         * pool folds this router's counts into its own. */
        rp__sg_stop_open(rt->sg);
        rp__sg_unregister(rt->pool->sgs, rt->sg);
        rp__sg_close(rt->sg);
    }
    free(rt->weights);
    free(rt->weight_ends);
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

/* Whether the pool behind rt - or, for a group router, routee r's pool -
 * was shut down.  Only on failure paths. */
static bool shut_down(const rp_router *rt, const rp_routee *r)
{
    return rp__pool_shut(rt->pool ? rt->pool : r ? r->pool : NULL);
}

/* A job no routee took: the router's callback, else the pool's.  Fails
 * the job's reply (and drops its reference) when it has one. */
static void handback(rp_router *rt, const rp_routee *r, void *arg, int reason,
                     rp__reply *reply)
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
        rp__routee_handback(pool, arg, reason);
    if (reply)
        rp__reply_fail(reply, reason, r ? r->index : -1);
}

/* The message of a routed submit that failed with rc, naming func, the
 * function the user called.  Out of line: the routing functions return
 * bare codes and only the entry points name themselves, on failure. */
static __attribute__((cold, noinline)) int named_fail(int rc, const rp_router *rt,
                                                     const char *func)
{
    return rp__fail(rc, "%s: router %s: %s", func, rt->name, rp_strerror(rc));
}

/* deliver_one()'s failure: every routee refused.  Closed by the shutdown
 * (though one stopped earlier): RP_ESHUTDOWN, not accepted.  Stopped, or
 * a foreign send refused: handed back, 0.  Otherwise rc, not accepted. */
static __attribute__((cold, noinline)) int deliver_failed(rp_router *rt, rp_routee *r,
                                                         void *arg, rp__reply *reply, int rc)
{
    if (rc == RP_ESTOPPED && shut_down(rt, r))
        return RP_ESHUTDOWN;
    if (rc == RP_ESTOPPED || rc == RP_ESEND) {
        handback(rt, r, arg, rc, reply);
        return 0;
    }
    return rc;
}

/* One target.  Re-pick when the routee stopped after the pick.  0: the
 * job (and reply's reference) went to a routee or was handed back;
 * negative: not accepted, the caller keeps both. */
static int deliver_one(rp_router *rt, rp_route_state *st, size_t idx,
                       rp_job_fn fn, void *arg, size_t *out, rp__reply *reply)
{
    int rc = 0;

    for (size_t attempt = 0; attempt <= rt->n; attempt++) {
        rc = rp__routee_deliver_reply(rt->routees[idx], fn, arg, st->pinned, reply);
        if (rc != RP_ESTOPPED && rc != RP_ESHUTDOWN)
            break;
        if (rp_strategy_pick(&rt->strategy, st, rt->routees, rt->n, out) != 1 ||
            rp__routee_stopped(rt->routees[out[0]]))
            break; /* every routee is stopped */
        idx = out[0];
    }
    if (RP_LIKELY(rc == 0))
        return 0;
    return deliver_failed(rt, rt->routees[idx], arg, reply, rc);
}

/* Several targets: each copy is pinned; a copy that fails comes back.  An
 * ask fanned out is answered by the first copy to complete. */
static int fan_out(rp_router *rt, const size_t *idx, int cnt, rp_job_fn fn, void *arg,
                   rp__reply *reply)
{
    for (int k = 0; k < cnt; k++) {
        rp_routee *r = rt->routees[idx[k]];
        rp__reply c = rp__reply_copy(reply);
        int rc = rp__routee_deliver_reply(r, fn, arg, true, reply ? &c : NULL);
        if (rc < 0)
            handback(rt, r, arg, rc, reply ? &c : NULL);
    }
    if (reply)
        rp__reply_release(reply);
    return 0;
}

/* Whether a pick may choose more routees than fit the stack array: only
 * fan-out strategies write more than out[0] (strategy.c), so a tell to a
 * large pool allocates nothing. */
static bool needs_heap_choices(const rp_router *rt)
{
    return rt->n > STACK_CHOICES && (rt->strategy.kind == RP_STRATEGY_CUSTOM ||
                                     rt->strategy.kind == RP_STRATEGY_BROADCAST);
}

/* A pick that chose no routee: refused after a shutdown, else handed
 * back with RP_ENOROUTEE. */
static __attribute__((cold, noinline)) int no_routee(rp_router *rt, void *arg, rp__reply *reply)
{
    if (shut_down(rt, NULL))
        return RP_ESHUTDOWN;
    handback(rt, NULL, arg, RP_ENOROUTEE, reply);
    return 0;
}

/* The calling routee's index in rt, when rt is its pool's router and
 * the caller is one of the pool's routees. */
static bool self_start(const rp_router *rt, uint64_t *index)
{
    const rp_routee *self = rp__current_routee;

    if (!self || !rt->pool || self->pool != rt->pool || (size_t)self->index >= rt->n ||
        rt->routees[self->index] != self)
        return false;
    *index = (uint64_t)self->index;
    return true;
}

/* Pick and deliver.  0, or a bare negative code (the entry point names
 * itself in the message, named_fail). */
static int route(rp_router *rt, rp_job_fn fn, void *arg, const void *key, size_t key_len,
                 rp__reply *reply)
{
    size_t local[STACK_CHOICES], *out = local;
    rp_route_state st = {0};
    int cnt, rc = 0;

    /* Smallest-mailbox from one of the router's own routees: the scan
     * starts at that routee, so a tie goes to it (its tell takes the
     * owner ring, mailbox.c), and takes no turn of the shared index. */
    if (rt->strategy.kind != RP_STRATEGY_SMALLEST_MAILBOX || !self_start(rt, &st.message_index))
        st.message_index = atomic_fetch_add_explicit(&rt->message_index, 1, memory_order_relaxed);
    if (key) {
        st.key = key;
        st.key_len = key_len;
        st.key_hash = XXH3_64bits(key, key_len);
        st.pinned = true;
    }
    if (needs_heap_choices(rt) && !(out = malloc(sizeof *out * rt->n)))
        return RP_ENOMEM;
    RP_PROBE3(submit, rt->name, st.message_index, key != NULL);
    cnt = rp_strategy_pick(&rt->strategy, &st, rt->routees, rt->n, out);
    RP_PROBE4(route, rt->name, (int)rt->strategy.kind, cnt > 0 ? (long)out[0] : -1L, cnt);
    if (cnt < 0)
        handback(rt, NULL, arg, RP_EINVAL, reply);
    else if (cnt == 0)
        rc = no_routee(rt, arg, reply);
    else if (cnt == 1)
        rc = deliver_one(rt, &st, out[0], fn, arg, out, reply);
    else
        rc = fan_out(rt, out, cnt, fn, arg, reply);
    if (out != local)
        free(out);
    return rc;
}

/* A tell on a scatter-gather router has no reply target. */
static int no_reply_target(rp_router *rt, void *arg, const char *func)
{
    if (shut_down(rt, NULL))
        return rp__fail(RP_ESHUTDOWN, "%s: router %s: the pool is shut down", func, rt->name);
    rp__sg_no_reply_target(rt->sg);
    if (rt->on_undelivered)
        rt->on_undelivered(arg, RP_ENOREPLY, rt->undelivered_user);
    else
        rp__routee_handback(rt->pool, arg, RP_ENOREPLY);
    return 0;
}

/* rp_router_tell() for func, the function the user called.  Static (and
 * so inlined into both entry points): a call to the global rp__ symbol
 * would go through the PLT. */
static int tell(rp_router *rt, rp_job_fn fn, void *arg, const char *func)
{
    int rc;

    if (!rt || !fn)
        return rp__fail(RP_EINVAL, "%s: %s is NULL", func, rt ? "fn" : "router");
    if (rt->sg)
        return no_reply_target(rt, arg, func);
    if (rt->strategy.kind == RP_STRATEGY_CONSISTENT_HASH)
        return rp__fail(RP_EINVAL, "%s: router %s: consistent hashing needs a key: use "
                        "rp_router_tell_key", func, rt->name);
    if (RP_UNLIKELY((rc = route(rt, fn, arg, NULL, 0, NULL)) < 0))
        return named_fail(rc, rt, func);
    return 0;
}

int rp_router_tell(rp_router *rt, rp_job_fn fn, void *arg)
{
    return tell(rt, fn, arg, "rp_router_tell");
}

int rp__router_tell(rp_router *rt, rp_job_fn fn, void *arg, const char *func)
{
    return tell(rt, fn, arg, func);
}

int rp_router_tell_key(rp_router *rt, const void *key, size_t key_len,
                       rp_job_fn fn, void *arg)
{
    int rc;

    if (!rt || !fn || !key || key_len == 0)
        return rp__fail(RP_EINVAL, "rp_router_tell_key: %s",
                        !rt ? "router is NULL" : !fn ? "fn is NULL"
                        : !key ? "key is NULL" : "key_len is 0");
    if (rt->sg)
        return no_reply_target(rt, arg, "rp_router_tell_key");
    if (RP_UNLIKELY((rc = route(rt, fn, arg, key, key_len, NULL)) < 0))
        return named_fail(rc, rt, "rp_router_tell_key");
    return 0;
}

/*
 * Batches.  Jobs are picked one by one, exactly as rp_router_tell() would
 * (consecutive message indexes), BATCH_CHUNK at a time; each chunk's jobs
 * for one local routee then go into its mailbox with one reservation, one
 * sequence range and one wake-up (rp__mailbox_push_batch_mp).  Strategies
 * that read the depths (smallest-mailbox, custom) see every earlier job of
 * the batch queued: their chunks hold one job.
 */
#define BATCH_CHUNK 64

/* One job the batch path could not queue in bulk: the single-job path,
 * which re-picks past a stopped routee and applies the overflow policy.
 * A job still refused is handed back.  0, or the refusal's code. */
static int batch_single(rp_router *rt, uint64_t index, size_t idx, rp_job_fn fn, void *arg,
                        size_t *out)
{
    rp_route_state st = {0};
    int rc;

    st.message_index = index;
    if ((rc = deliver_one(rt, &st, idx, fn, arg, out, NULL)) < 0)
        handback(rt, rt->routees[idx], arg, rc, NULL);
    return rc;
}

/* Queue the jobs of one chunk that go to routee idx.  0 or a refusal. */
static int batch_flush(rp_router *rt, size_t idx, rp_job_fn fn, void *const *args,
                       const uint64_t *index, size_t k, size_t *out)
{
    rp_routee *r = rt->routees[idx];
    size_t done = 0;
    int rc = 0, first = 0;

    if (r->kind == RP__ROUTEE_LOCAL) {
        done = rp__mailbox_push_batch_mp(&r->mb, fn, args, k, &rc);
        if (done)
            rp__steal_queued(r->pool, r);
    }
    for (; done < k; done++)
        if ((rc = batch_single(rt, index[done], idx, fn, args[done], out)) < 0 && !first)
            first = rc;
    return first;
}

/* Pick and queue one chunk of n jobs starting at message index base. */
static int batch_chunk(rp_router *rt, rp_job_fn fn, void *const *args, size_t n,
                       uint64_t base, size_t *out)
{
    size_t target[BATCH_CHUNK];
    bool done[BATCH_CHUNK] = {false};
    bool rr = rt->strategy.kind == RP_STRATEGY_ROUND_ROBIN && rt->n > 0;
    int first = 0;

    if (rr) /* the same picks, without a division per job */
        rp__strategy_round_robin_run(rt->routees, rt->n, base, n, target);
    for (size_t j = 0; j < n; j++) {
        rp_route_state st = {0};
        int cnt;

        st.message_index = base + j;
        RP_PROBE3(submit, rt->name, st.message_index, 0);
        if (rr) {
            RP_PROBE4(route, rt->name, (int)rt->strategy.kind, (long)target[j], 1);
            continue;
        }
        cnt = rp_strategy_pick(&rt->strategy, &st, rt->routees, rt->n, out);
        RP_PROBE4(route, rt->name, (int)rt->strategy.kind, cnt > 0 ? (long)out[0] : -1L, cnt);
        if (cnt == 1) {
            target[j] = out[0];
            continue;
        }
        /* No routee, a bad custom choice, or a custom fan-out: as a tell. */
        done[j] = true;
        if (cnt > 1)
            fan_out(rt, out, cnt, fn, args[j], NULL);
        else
            handback(rt, NULL, args[j], cnt < 0 ? RP_EINVAL : RP_ENOROUTEE, NULL);
    }
    for (size_t j = 0; j < n; j++) {
        void *group[BATCH_CHUNK];
        uint64_t index[BATCH_CHUNK];
        size_t k = 0;
        int rc;

        if (done[j])
            continue;
        for (size_t i = j; i < n; i++) {
            if (done[i] || target[i] != target[j])
                continue;
            done[i] = true;
            group[k] = args[i];
            index[k++] = base + i;
        }
        if ((rc = batch_flush(rt, target[j], fn, group, index, k, out)) < 0 && !first)
            first = rc;
    }
    return first;
}

int rp__router_tell_batch(rp_router *rt, rp_job_fn fn, void *const *args, size_t n,
                          const char *func)
{
    size_t local[STACK_CHOICES], *out = local, chunk;
    int rc, first = 0;

    if (!rt || !fn || (!args && n))
        return rp__fail(RP_EINVAL, "%s: %s is NULL", func, !rt ? "router" : !fn ? "fn" : "args");
    if (rt->strategy.kind == RP_STRATEGY_CONSISTENT_HASH)
        return rp__fail(RP_EINVAL, "%s: router %s: consistent hashing needs a key: use "
                        "rp_router_tell_key", func, rt->name);
    if (rt->sg || rt->strategy.kind == RP_STRATEGY_BROADCAST) {
        /* Every job is handed back (no reply target) or fanned out; one a
         * tell refuses (after a shutdown) is handed back too, as a batch
         * does with every job it cannot queue. */
        for (size_t i = 0; i < n; i++) {
            if ((rc = tell(rt, fn, args[i], func)) < 0) {
                handback(rt, NULL, args[i], rc, NULL);
                if (!first)
                    first = rc;
            }
        }
        return first;
    }
    if (needs_heap_choices(rt) && !(out = malloc(sizeof *out * rt->n)))
        return rp__fail(RP_ENOMEM, "%s: router %s: out of memory", func, rt->name);
    chunk = rt->strategy.kind == RP_STRATEGY_SMALLEST_MAILBOX ||
            rt->strategy.kind == RP_STRATEGY_CUSTOM ? 1 : BATCH_CHUNK;
    for (size_t i = 0; i < n; i += chunk) {
        size_t k = n - i < chunk ? n - i : chunk;
        uint64_t base = atomic_fetch_add_explicit(&rt->message_index, k, memory_order_relaxed);

        if ((rc = batch_chunk(rt, fn, args + i, k, base, out)) < 0 && !first)
            first = rc;
    }
    if (out != local)
        free(out);
    if (first < 0)
        return rp__fail(first, "%s: router %s: some jobs were handed back (%s)",
                        func, rt->name, rp_strerror(first));
    return 0;
}

int rp_router_tell_batch(rp_router *rt, rp_job_fn fn, void *const *args, size_t n)
{
    return rp__router_tell_batch(rt, fn, args, n, "rp_router_tell_batch");
}

/* The pool whose timer enforces a group router's ask deadlines. */
static rp_pool *timer_pool(const rp_router *rt)
{
    if (rt->pool)
        return rt->pool;
    for (size_t i = 0; i < rt->n; i++)
        if (rt->routees[i]->pool)
            return rt->routees[i]->pool;
    return NULL;
}

static int scatter_ask(rp_router *rt, rp_job_fn fn, void *arg, int64_t deadline,
                       rp_future **out, const char *func)
{
    rp_routee *local[STACK_CHOICES], **live = local;
    uint64_t index = atomic_fetch_add_explicit(&rt->message_index, 1, memory_order_relaxed);
    size_t n = 0;
    int rc;

    if (shut_down(rt, NULL))
        return rp__fail(RP_ESHUTDOWN, "%s: router %s: the pool is shut down", func, rt->name);
    if (rt->n > STACK_CHOICES && !(live = malloc(sizeof *live * rt->n)))
        return rp__fail(RP_ENOMEM, "%s: router %s: out of memory", func, rt->name);
    for (size_t i = 0; i < rt->n; i++)
        if (!rp__routee_stopped(rt->routees[i]))
            live[n++] = rt->routees[i];
    if ((rc = rp__sg_ask(rt->sg, live, n, index, fn, arg, deadline, out)) < 0) {
        char why[200]; /* scatter.c's message, behind the caller's name */
        snprintf(why, sizeof why, "%s", rp_errmsg());
        rp__fail(rc, "%s: %s", func, why);
    }
    if (live != local)
        free(live);
    return rc;
}

/* rp_router_ask() for func, the function the user called. */
static int ask(rp_router *rt, rp_job_fn fn, void *arg, int timeout_ms, rp_future **out,
               const char *func)
{
    rp__reply reply;
    rp_pool *pool;
    int64_t deadline;
    int rc;

    *out = NULL;
    if (!rt || !fn)
        return rp__fail(RP_EINVAL, "%s: %s is NULL", func, rt ? "fn" : "router");
    if ((rc = rp__ask_timeout(timeout_ms, &deadline, func)) < 0)
        return rc;
    if (rt->sg) {
        /* The caller's own deadline applies too: with it below the
         * scatter's timeout the caller gets RP_ETIMEDOUT first, and the
         * scatter ends with it (the scatter enforces both). */
        return scatter_ask(rt, fn, arg, deadline, out, func);
    }
    if (rt->strategy.kind == RP_STRATEGY_CONSISTENT_HASH)
        return rp__fail(RP_EINVAL, "%s: router %s: consistent hashing needs a key", func,
                        rt->name);
    pool = timer_pool(rt);
    if ((rc = rp__ask_begin(pool ? pool->futures : NULL, pool ? &pool->timer : NULL, deadline,
                            &reply, out, func)) < 0)
        return rc;
    if ((rc = route(rt, fn, arg, NULL, 0, &reply)) < 0) {
        rp__ask_abort(&reply, out);
        return named_fail(rc, rt, func);
    }
    return 0;
}

int rp_router_ask(rp_router *rt, rp_job_fn fn, void *arg, int timeout_ms, rp_future **out)
{
    if (!out)
        return rp__fail(RP_EINVAL, "rp_router_ask: out is NULL");
    return ask(rt, fn, arg, timeout_ms, out, "rp_router_ask");
}

int rp_router_tell_reply(rp_router *rt, rp_job_fn fn, void *arg, int timeout_ms,
                         rp_future_cb reply, void *user)
{
    rp__callback *c;
    rp_future *f;
    int rc;

    /* Checked here too, so that rp_errmsg() names this function. */
    if (!rt || !fn || !reply)
        return rp__fail(RP_EINVAL, "rp_router_tell_reply: %s is NULL",
                        !rt ? "router" : !fn ? "fn" : "reply");
    if (timeout_ms < 0)
        return rp__fail(RP_EINVAL, "rp_router_tell_reply: timeout_ms must be > 0, or 0 for the default (got %d)",
                        timeout_ms);
    /* Allocated before anything is sent: once the job is out, registering
     * the reply cannot fail, and a failed call leaves arg with the caller. */
    if (rp__callback_new(&c, reply, user) < 0)
        return rp__fail(RP_ENOMEM, "rp_router_tell_reply: out of memory");
    if ((rc = ask(rt, fn, arg, timeout_ms, &f, "rp_router_tell_reply")) < 0) {
        rp__callback_free(c);
        return rc;
    }
    rp__future_on_complete_with(f, c);
    rp_future_release(f);
    return 0;
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
            handback(rt, r, arg, rc, NULL);
    }
    if (live == 0 && shut_down(rt, rt->n ? rt->routees[0] : NULL))
        return rp__fail(RP_ESHUTDOWN, "rp_router_broadcast: router %s: the pool is shut down",
                        rt->name);
    if (live == 0)
        return rp__fail(RP_ENOROUTEE, "rp_router_broadcast: router %s: no live routee to "
                        "broadcast to", rt->name);
    return 0;
}

int rp_router_create_scatter_gather(rp_router **out, rp_pool *pool,
                                    const rp_scatter_gather_options *sg,
                                    const rp_router_options *opts)
{
    const char *func = "rp_router_create_scatter_gather";
    rp_scatter_gather_options sg_defaults;
    rp_router_options ro;
    int rc;

    if (!out)
        return rp__fail(RP_EINVAL, "%s: out is NULL", func);
    *out = NULL;
    if (!pool)
        return rp__fail(RP_EINVAL, "%s: pool is NULL", func);
    if (!sg) {
        rp_scatter_gather_options_init(&sg_defaults);
        sg = &sg_defaults;
    }
    if (opts)
        ro = *opts;
    else
        rp_router_options_init(&ro);
    ro.strategy = rp_strategy_broadcast();
    if ((rc = pool_router(out, pool, &ro, false, func)) < 0)
        return rc;
    if ((rc = rp__sg_new(&(*out)->sg, sg, (*out)->name, pool, (*out)->log, (*out)->log_user)) < 0 ||
        (rc = rp__sg_register(pool->sgs, (*out)->sg)) < 0) {
        if ((*out)->sg) {
            rp__sg_release((*out)->sg);
            (*out)->sg = NULL;
        }
        rp__router_free(*out);
        *out = NULL;
        return rc == RP_ENOMEM ? rp__fail(rc, "%s: out of memory", func) : rc;
    }
    return 0;
}

int rp_router_scatter_stats(const rp_router *rt, rp_scatter_stats *out)
{
    if (!rt || !out || !rt->sg)
        return rp__fail(RP_EINVAL, "rp_router_scatter_stats: %s",
                        !rt ? "router is NULL" : !out ? "out is NULL"
                                                      : "not a scatter-gather router");
    rp__sg_stats(rt->sg, out);
    return 0;
}
