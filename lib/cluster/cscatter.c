/* SPDX-License-Identifier: MIT */
/*
 * cscatter.c - scatter-gather-first-completed over cluster nodes, with the
 * contract of the local scatter router (seed 004, routepool/scatter.h).
 *
 * A scatter asks every live node through the router's core group router
 * (rp_router_broadcast: one foreign-routee send per node, in node order)
 * with the scatter's timeout on each ask, and answers a promise
 * (rp_future_create) with the first reply; the losers' replies complete
 * their own futures and are dropped.  When every member has failed the
 * promise fails with one aggregate error (rp_future_fail_aggregate)
 * carrying each member's code and message as the remote node sent them:
 * "none of N routees replied within Tms" when all of them timed out, "all
 * N routees failed" otherwise; "no routees left to scatter to" when no node
 * was live; "stopped while the scatter was still open" when the router was
 * destroyed first.
 *
 * Invariants: a scatter resolves exactly once (done, under the scatter
 * lock); it stays on its router's open list until then, so the router
 * pointer is valid for whoever resolves it under the lock; the outcome is
 * counted before the promise completes, so a stats snapshot taken after a
 * wait includes it.  The promise completes, and futures are released,
 * outside the lock: completion runs user callbacks.  One process-wide lock
 * serves every cluster scatter: a scatter takes it a few times in its life,
 * never on a hot path, and it outlives every router.
 *
 * Below routers.c, above croute.c: a scatter routes through croute.c, and
 * routers.c calls in (its send callback asks each member, its destroy
 * stops the open scatters); nothing here calls routers.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "croute.h"
#include "cscatter.h"

static pthread_mutex_t scatter_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct member {
    struct rp__cscatter *sc;
    size_t index;
    rp_future *f;          /* the member's ask (our reference), or NULL */
    int code;              /* failed members */
    char *message;
} member;

typedef struct rp__cscatter {
    int refs;                      /* under scatter_lock */
    rp_cluster_router *r;          /* valid while linked (not done) */
    struct rp__cscatter *prev, *next;
    char name[RP_ROUTER_NAME_MAX + 1];
    double timeout_ms;
    rp_future *promise;            /* the completer's reference */
    size_t n, asked, failed;
    bool sending, done;
    int64_t start_ns;
    member *m;
} rp__cscatter;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Under scatter_lock. */
static void unlink_open(rp__cscatter *sc)
{
    if (sc->prev)
        sc->prev->next = sc->next;
    else
        sc->r->open = sc->next;
    if (sc->next)
        sc->next->prev = sc->prev;
    sc->prev = sc->next = NULL;
}

/* Resolve: mark done, leave the open list, count the outcome.  Under
 * scatter_lock; the caller then completes the promise. */
static void resolve_locked(rp__cscatter *sc, int outcome)
{
    rp__cscatter_stats *st = &sc->r->sg;
    int64_t lat = now_ns() - sc->start_ns;
    double sec = (double)lat / 1e9;
    int b = 0;

    sc->done = true;
    unlink_open(sc);
    sc->r = NULL;
    atomic_fetch_add_explicit(&st->resolved[outcome], 1, memory_order_relaxed);
    while (b < RP_SCATTER_LATENCY_BUCKETS && sec > rp_scatter_latency_bounds[b])
        b++;
    atomic_fetch_add_explicit(&st->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->latency_sum_ns, (uint64_t)lat, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->latency_count, 1, memory_order_relaxed);
}

/* All members failed: the outcome, by whether every one timed out. */
static int failed_outcome(const rp__cscatter *sc)
{
    for (size_t i = 0; i < sc->asked; i++)
        if (sc->m[i].code != RP_ETIMEDOUT)
            return RP_SCATTER_ALL_FAILED;
    return sc->asked ? RP_SCATTER_TIMEOUT : RP_SCATTER_ALL_FAILED;
}

static void release(rp__cscatter *sc)
{
    bool last;

    pthread_mutex_lock(&scatter_lock);
    last = --sc->refs == 0;
    pthread_mutex_unlock(&scatter_lock);
    if (!last)
        return;
    for (size_t i = 0; i < sc->n; i++)
        free(sc->m[i].message);
    free(sc->m);
    free(sc);
}

/* After resolve_locked() and the unlock: fail the promise with every
 * member's error, in scatter order. */
static void finish_failed(rp__cscatter *sc, int outcome)
{
    rp_error *errs = calloc(sc->asked ? sc->asked : 1, sizeof *errs);
    char msg[256];

    if (outcome == RP_SCATTER_TIMEOUT)
        snprintf(msg, sizeof msg, "%s: none of %zu routees replied within %gms", sc->name,
                 sc->asked, sc->timeout_ms);
    else
        snprintf(msg, sizeof msg, "%s: all %zu routees failed", sc->name, sc->asked);
    for (size_t i = 0; errs && i < sc->asked; i++)
        errs[i] = (rp_error){sc->m[i].code, sc->m[i].message ? sc->m[i].message : "", (int)i,
                             NULL, 0};
    if (!errs || rp_future_fail_aggregate(sc->promise, msg, errs, sc->asked) == RP_ENOMEM)
        rp_future_fail(sc->promise, -1, RP_ENOMEM, msg); /* members lost, the outcome kept */
    free(errs);
    rp_future_release(sc->promise);
}

static void finish_empty(rp__cscatter *sc, const char *what)
{
    char msg[256];

    snprintf(msg, sizeof msg, "%s: %s", sc->name, what);
    rp_future_fail_aggregate(sc->promise, msg, NULL, 0);
    rp_future_release(sc->promise);
}

/* Record member m's failure.  Under scatter_lock.  True when the scatter
 * resolved now (every member failed and every member was sent). */
static bool member_failed_locked(member *m, int code, const char *message)
{
    rp__cscatter *sc = m->sc;

    m->code = code;
    m->message = strdup(message ? message : "");
    sc->failed++;
    if (sc->done || sc->sending || sc->failed < sc->asked)
        return false;
    resolve_locked(sc, failed_outcome(sc));
    return true;
}

static void member_done(rp_future *f, void *user)
{
    member *m = user;
    rp__cscatter *sc = m->sc;
    const rp_error *err = rp_future_error(f);
    bool won = false, all_failed = false;
    int outcome = RP_SCATTER_FIRST;

    pthread_mutex_lock(&scatter_lock);
    if (!sc->done && rp_future_status(f) == RP_FUTURE_FULFILLED) {
        resolve_locked(sc, RP_SCATTER_FIRST);
        won = true;
    } else if (!sc->done) {
        all_failed = member_failed_locked(m, err ? err->code : RP_ENOREPLY,
                                          err ? err->message : "no reply");
        if (all_failed)
            outcome = failed_outcome(sc);
    }
    pthread_mutex_unlock(&scatter_lock);
    if (won) {
        rp_future_fulfil(sc->promise, (int)m->index, rp_future_take_value(f), free);
        rp_future_release(sc->promise);
    } else if (all_failed) {
        finish_failed(sc, outcome);
    }
    m->f = NULL;
    rp_future_release(f);
    release(sc);
}

int rp__cscatter_send(rp__cscatter *sc, rp_cluster_node *node, const char *target,
                      const rp__cluster_msg *m)
{
    member *mb;
    rp_future *f = NULL;
    int rc;

    pthread_mutex_lock(&scatter_lock);
    mb = sc->asked < sc->n ? &sc->m[sc->asked++] : NULL;
    pthread_mutex_unlock(&scatter_lock);
    if (!mb)
        return RP_EINVAL; /* more live routees than the snapshot: cannot happen */
    rc = rp__cluster_send_ask(node, "rp_cluster_scatter", target, m,
                              (int)ceil(sc->timeout_ms), &f);
    pthread_mutex_lock(&scatter_lock);
    if (rc < 0)
        member_failed_locked(mb, rc, rp_errmsg()); /* sending: cannot resolve yet */
    else
        sc->refs++, mb->f = f;
    pthread_mutex_unlock(&scatter_lock);
    if (rc == 0 && rp_future_on_complete(f, member_done, mb) < 0)
        member_done(f, mb); /* out of memory: count it as completed now */
    return 0;
}

static int scatter_new(rp__cscatter **out, rp_cluster_router *r, size_t n)
{
    rp__cscatter *sc = calloc(1, sizeof *sc);

    if (!sc || !(sc->m = calloc(n ? n : 1, sizeof *sc->m))) {
        free(sc);
        return rp_error_set(RP_ENOMEM, "rp_cluster_scatter: out of memory");
    }
    sc->refs = 1;
    sc->r = r;
    strcpy(sc->name, r->name);
    sc->timeout_ms = r->scatter_timeout_ms;
    sc->n = n;
    sc->sending = true;
    sc->start_ns = now_ns();
    for (size_t i = 0; i < n; i++)
        sc->m[i] = (member){sc, i, NULL, 0, NULL};
    *out = sc;
    return 0;
}

/* Send to every live node of s, then allow the all-failed resolution. */
static void scatter_run(rp_cluster_router *r, rp__csnap *s, rp__cscatter *sc,
                        const rp__cluster_msg *m)
{
    rp__creq req = {.op = RP__COP_SCATTER, .fn = "rp_cluster_scatter", .msgs = m, .sc = sc};
    rp__cjob job = {&req, 0};
    bool nobody = false;
    int outcome = -1;

    if (s->n)
        (void)rp__croute(r, s, &job, true); /* failures are members */
    pthread_mutex_lock(&scatter_lock);
    sc->sending = false;
    if (!sc->done && sc->asked == 0) {
        /* As the local scatter: counted as all-failed, with no members. */
        resolve_locked(sc, RP_SCATTER_ALL_FAILED);
        nobody = true;
    } else if (!sc->done && sc->failed == sc->asked) {
        outcome = failed_outcome(sc);
        resolve_locked(sc, outcome);
    }
    pthread_mutex_unlock(&scatter_lock);
    if (nobody)
        finish_empty(sc, "no routees left to scatter to");
    else if (outcome >= 0)
        finish_failed(sc, outcome);
}

int rp_cluster_scatter(rp_cluster_router *r, const char *handler, const void *payload,
                       size_t len, rp_future **out)
{
    rp__cluster_msg m = {handler, payload, len, NULL, 0};
    rp_future *f;
    rp__cscatter *sc = NULL;
    rp__csnap *s;
    int rc;

    if (!out)
        return rp_error_set(RP_EINVAL, "rp_cluster_scatter: out is NULL");
    *out = NULL;
    if (!r || !handler || !*handler || (!payload && len))
        return rp_error_set(RP_EINVAL, "rp_cluster_scatter: %s",
                            !r ? "router is NULL" : !handler || !*handler ? "handler is NULL or empty"
                                                                          : "payload is NULL with len > 0");
    if ((rc = rp_future_create(&f, rp__cluster_node_timer_pool(r->node), -1)) < 0)
        return rp_error_set(rc, "rp_cluster_scatter: %s", rp_errmsg());
    s = rp__csnap_get(r);
    if ((rc = scatter_new(&sc, r, s->n)) < 0) {
        rp__csnap_put(r, s);
        rp_future_release(f);
        rp_future_release(f);
        return rc;
    }
    sc->promise = f; /* the completer's reference; the waiter's is *out */
    *out = f;
    pthread_mutex_lock(&scatter_lock);
    sc->next = r->open;
    if (r->open)
        r->open->prev = sc;
    r->open = sc;
    pthread_mutex_unlock(&scatter_lock);
    scatter_run(r, s, sc, &m);
    rp__csnap_put(r, s);
    release(sc);
    return 0;
}

void rp__cscatter_stop_all(rp_cluster_router *r)
{
    rp__cscatter *stopped = NULL, *sc;

    pthread_mutex_lock(&scatter_lock);
    while ((sc = r->open)) {
        sc->refs++;
        resolve_locked(sc, RP_SCATTER_STOPPED);
        sc->next = stopped; /* reuse the link: sc is off the open list */
        stopped = sc;
    }
    pthread_mutex_unlock(&scatter_lock);
    while ((sc = stopped)) {
        stopped = sc->next;
        sc->next = NULL;
        finish_empty(sc, "stopped while the scatter was still open");
        release(sc);
    }
}

int rp_cluster_router_scatter_stats(rp_cluster_router *r, rp_scatter_stats *out)
{
    if (!r || !out)
        return rp_error_set(RP_EINVAL, "rp_cluster_router_scatter_stats: %s is NULL",
                            r ? "out" : "router");
    memset(out, 0, sizeof *out);
    for (int i = 0; i < RP_SCATTER_OUTCOMES; i++)
        out->resolved[i] = atomic_load_explicit(&r->sg.resolved[i], memory_order_relaxed);
    for (int i = 0; i <= RP_SCATTER_LATENCY_BUCKETS; i++)
        out->latency_buckets[i] = atomic_load_explicit(&r->sg.buckets[i], memory_order_relaxed);
    out->latency_count = atomic_load_explicit(&r->sg.latency_count, memory_order_relaxed);
    out->latency_sum_seconds =
        (double)atomic_load_explicit(&r->sg.latency_sum_ns, memory_order_relaxed) / 1e9;
    return 0;
}
