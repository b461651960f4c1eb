/* SPDX-License-Identifier: MIT */
/*
 * scatter.c - scatter-gather-first-completed and tail-chopping.
 *
 * A scatter asks every live routee (or, tail-chopping, one more routee per
 * interval) and resolves exactly once: the first reply wins; otherwise,
 * when every member failed or the deadline passed, one aggregate error
 * whose members are in scatter order; "stopped" when the router or the
 * pool stops with the scatter open.  Resolution is decided under the
 * scatter's mutex (the resolved flag); everything that completes futures,
 * sends copies or counts runs after the unlock.
 *
 * Nothing blocks the submitter or a routee: copies are ordinary pinned jobs
 * whose reply names (scatter, member); the deadline and the tail-chopping
 * interval are entries on the pool's timer thread.
 *
 * Lifetimes: the router's rp__sg (options, counters, open list) is shared
 * by reference with every scatter, and every queued copy and timer entry
 * holds a reference on its scatter, so a copy still queued after the
 * router is destroyed finds everything it touches alive.
 *
 * Lock order: sg->mu before s->mu; stop_open collects the open scatters
 * under sg->mu and resolves them after releasing it.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "pool_record.h"
#include "probes.h"
#include "routee.h"
#include "scatter.h"
#include "timer.h"

const double rp_scatter_latency_bounds[RP_SCATTER_LATENCY_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5};

struct rp__sg {
    _Atomic int refs;
    char name[RP_ROUTER_NAME_MAX + 1];
    double timeout_ms, interval_ms;
    bool cancel_losers;
    rp_pool *pool;
    rp_log_fn log;
    void *log_user;
    pthread_mutex_t mu; /* open list, closed */
    rp__scatter *open;
    bool closed;
    _Atomic uint64_t resolved[RP_SCATTER_OUTCOMES];
    _Atomic uint64_t buckets[RP_SCATTER_LATENCY_BUCKETS + 1];
    _Atomic uint64_t latency_count, latency_sum_ns, cancelled;
};

struct rp__scatter {
    _Atomic int refs;
    rp__sg *sg;
    pthread_mutex_t mu;
    rp_future *result; /* the scatter's reference, until resolution */
    rp_job_fn fn;
    void *arg;
    size_t n, sent, nfailed;
    rp_routee **routees; /* scatter order */
    rp_error *members;   /* n, filled as members fail */
    bool *done;          /* n: member replied or failed */
    bool resolved;
    int outcome;         /* how it resolved (an rp_scatter_outcome) */
    bool ask_first;      /* deadline_ns is the caller's ask deadline */
    size_t deadline_pos, interval_pos; /* timer entries (cancelled at resolution) */
    _Atomic bool resolved_flag;
    /* deadline_ns: the earlier of the scatter's timeout and the caller's
     * ask deadline (ask_first). */
    int64_t start_ns, deadline_ns;
    rp__scatter *prev, *next; /* in sg->open */
    bool linked;
};

void rp_scatter_gather_options_init(rp_scatter_gather_options *opts)
{
    if (!opts)
        return;
    opts->timeout_ms = RP_SCATTER_TIMEOUT_MS;
    opts->cancel_losers = false; /* seed 004: losers run to completion */
    opts->interval_ms = 0;
}

const char *rp_scatter_outcome_name(int outcome)
{
    static const char *const names[] = {"first", "timeout", "all-failed", "stopped",
                                        "no-reply-target"};
    return outcome >= 0 && outcome < RP_SCATTER_OUTCOMES ? names[outcome] : "unknown";
}

int rp__sg_new(rp__sg **out, const rp_scatter_gather_options *opts, const char *name,
               rp_pool *pool, rp_log_fn log, void *log_user)
{
    rp__sg *sg;

    /* Bounded so that start_ns + ms * 1e6 stays far inside int64_t. */
    if (!isfinite(opts->timeout_ms) || opts->timeout_ms <= 0 ||
        opts->timeout_ms > RP_SCATTER_MS_MAX)
        return rp__fail(RP_EINVAL, "rp_router_create_scatter_gather: sg.timeout_ms must be positive and at most %.0f (24 h) (got %g)",
                        RP_SCATTER_MS_MAX, opts->timeout_ms);
    if (!isfinite(opts->interval_ms) || opts->interval_ms < 0 ||
        opts->interval_ms > RP_SCATTER_MS_MAX)
        return rp__fail(RP_EINVAL, "rp_router_create_scatter_gather: sg.interval_ms must be >= 0 and at most %.0f (24 h) (got %g)",
                        RP_SCATTER_MS_MAX, opts->interval_ms);
    if (!(sg = calloc(1, sizeof *sg)))
        return rp__fail(RP_ENOMEM, "rp_router_create_scatter_gather: out of memory");
    atomic_init(&sg->refs, 1);
    snprintf(sg->name, sizeof sg->name, "%s", name);
    sg->timeout_ms = opts->timeout_ms;
    sg->interval_ms = opts->interval_ms;
    sg->cancel_losers = opts->cancel_losers;
    sg->pool = pool;
    sg->log = log;
    sg->log_user = log_user;
    pthread_mutex_init(&sg->mu, NULL);
    *out = sg;
    return 0;
}

void rp__sg_retain(rp__sg *sg)
{
    atomic_fetch_add_explicit(&sg->refs, 1, memory_order_relaxed);
}

void rp__sg_release(rp__sg *sg)
{
    if (!sg || atomic_fetch_sub_explicit(&sg->refs, 1, memory_order_acq_rel) != 1)
        return;
    pthread_mutex_destroy(&sg->mu);
    free(sg);
}

void rp__sg_stats(const rp__sg *sg, rp_scatter_stats *out)
{
    rp__sg *s = (rp__sg *)sg;

    for (int i = 0; i < RP_SCATTER_OUTCOMES; i++)
        out->resolved[i] = atomic_load_explicit(&s->resolved[i], memory_order_relaxed);
    for (int i = 0; i <= RP_SCATTER_LATENCY_BUCKETS; i++)
        out->latency_buckets[i] = atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
    out->latency_count = atomic_load_explicit(&s->latency_count, memory_order_relaxed);
    out->latency_sum_seconds =
        (double)atomic_load_explicit(&s->latency_sum_ns, memory_order_relaxed) / 1e9;
    out->cancelled = atomic_load_explicit(&s->cancelled, memory_order_relaxed);
}

static void count(rp__sg *sg, int outcome, int64_t latency_ns)
{
    double sec = (double)latency_ns / 1e9;
    int b = 0;

    atomic_fetch_add_explicit(&sg->resolved[outcome], 1, memory_order_relaxed);
    RP_PROBE3(scatter__resolve, sg->name, outcome, latency_ns);
    if (outcome == RP_SCATTER_NO_REPLY_TARGET)
        return;
    while (b < RP_SCATTER_LATENCY_BUCKETS && sec > rp_scatter_latency_bounds[b])
        b++;
    atomic_fetch_add_explicit(&sg->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sg->latency_sum_ns, (uint64_t)latency_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&sg->latency_count, 1, memory_order_relaxed);
}

void rp__sg_no_reply_target(rp__sg *sg)
{
    count(sg, RP_SCATTER_NO_REPLY_TARGET, 0);
    /* The seed's words, "no reply target": one warning per bare tell. */
    rp__log(sg->log, sg->log_user, RP_LOG_WARN,
            "%s: no reply target: a bare tell scatters nothing, arg handed back with RP_ENOREPLY "
            "(use rp_router_ask or rp_router_tell_reply)",
            sg->name);
}

static rp__scatter *scatter_retain(rp__scatter *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void rp__scatter_release(rp__scatter *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (s->members) {
        for (size_t i = 0; i < s->n; i++)
            free((char *)s->members[i].message);
        free(s->members);
    }
    rp_future_release(s->result);
    free(s->routees);
    free(s->done);
    pthread_mutex_destroy(&s->mu);
    rp__sg_release(s->sg);
    free(s);
}

bool rp__scatter_cancelled(const rp__scatter *s)
{
    return s->sg->cancel_losers &&
           atomic_load_explicit(&((rp__scatter *)s)->resolved_flag, memory_order_acquire);
}

void rp__scatter_count_cancelled(rp__scatter *s)
{
    atomic_fetch_add_explicit(&s->sg->cancelled, 1, memory_order_relaxed);
}

static void unlink_open(rp__scatter *s)
{
    rp__sg *sg = s->sg;

    pthread_mutex_lock(&sg->mu);
    if (s->linked) {
        if (s->prev)
            s->prev->next = s->next;
        else
            sg->open = s->next;
        if (s->next)
            s->next->prev = s->prev;
        s->linked = false;
        rp__scatter_release(s); /* the open list's reference */
    }
    pthread_mutex_unlock(&sg->mu);
}

/* After resolution: drop the timer entries now, not at the deadline, so a
 * resolved scatter is freed as soon as its copies are done. */
static void cancel_timers(rp__scatter *s)
{
    rp__timer_cancel(&s->sg->pool->timer, &s->deadline_pos);
    rp__timer_cancel(&s->sg->pool->timer, &s->interval_pos);
}

/* Under s->mu: mark resolved and take the caller's future out. */
static rp_future *resolve_locked(rp__scatter *s, int outcome)
{
    rp_future *f = s->result;

    s->resolved = true;
    s->outcome = outcome;
    s->result = NULL;
    atomic_store_explicit(&s->resolved_flag, true, memory_order_release);
    return f;
}

/* Members are the routees asked: all of them, or (tail-chopping) those
 * sent before the scatter resolved. */
static char *aggregate_message(const rp__scatter *s, size_t asked, int *outcome)
{
    bool all_timeouts = asked > 0;
    char buf[256];

    for (size_t i = 0; i < asked; i++)
        if (s->members[i].code != RP_ETIMEDOUT)
            all_timeouts = false;
    *outcome = all_timeouts ? RP_SCATTER_TIMEOUT : RP_SCATTER_ALL_FAILED;
    if (all_timeouts)
        snprintf(buf, sizeof buf, "%s: none of %zu routees replied within %gms",
                 s->sg->name, asked, s->sg->timeout_ms);
    else
        snprintf(buf, sizeof buf, "%s: all %zu routees failed", s->sg->name, asked);
    return strdup(buf);
}

/* After resolve_locked() and the unlock: fail f with the first `asked`
 * members (the rest, never sent, have no message). */
static void finish_failed(rp__scatter *s, rp_future *f, size_t asked)
{
    int outcome;
    char *msg = aggregate_message(s, asked, &outcome);
    rp_error *members = s->members;

    s->members = NULL;
    /* Counted before the caller can see the answer: a snapshot taken
     * after rp_future_wait() includes it. */
    count(s->sg, outcome, rp__now_ns() - s->start_ns);
    rp__future_fail_aggregate(f, msg, members, asked);
    for (size_t i = asked; i < s->n; i++)
        free((char *)members[i].message);
    rp_future_release(f);
    cancel_timers(s);
    unlink_open(s);
}

/* Resolve an open scatter with an empty member list and a message. */
static void fail_empty(rp__scatter *s, int outcome, const char *what)
{
    char buf[256];
    rp_future *f;

    pthread_mutex_lock(&s->mu);
    if (s->resolved) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    f = resolve_locked(s, outcome);
    pthread_mutex_unlock(&s->mu);
    snprintf(buf, sizeof buf, "%s: %s", s->sg->name, what);
    count(s->sg, outcome, rp__now_ns() - s->start_ns);
    rp__future_fail_aggregate(f, strdup(buf), NULL, 0);
    rp_future_release(f);
    cancel_timers(s);
    unlink_open(s);
}

/* The caller's ask deadline passed first: end the scatter with the
 * caller's own RP_ETIMEDOUT (not an aggregate), counted as a timeout. */
static void ask_timed_out(rp__scatter *s)
{
    rp_future *f;

    pthread_mutex_lock(&s->mu);
    if (s->resolved) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    f = resolve_locked(s, RP_SCATTER_TIMEOUT);
    pthread_mutex_unlock(&s->mu);
    count(s->sg, RP_SCATTER_TIMEOUT, rp__now_ns() - s->start_ns);
    rp__future_fail(f, RP_ETIMEDOUT, -1, "ask timed out");
    rp_future_release(f);
    cancel_timers(s);
    unlink_open(s);
}

/* Under s->mu, resolved: what a late reply or failure is told. */
static int late_code(const rp__scatter *s)
{
    return s->outcome == RP_SCATTER_TIMEOUT ? RP_ETIMEDOUT : RP_ECANCELLED;
}

static void send_member_if(rp__scatter *s, size_t i, bool even_if_resolved);

/* Tail-chopping's next copy: never sent once the scatter resolved. */
static void send_member(rp__scatter *s, size_t i)
{
    send_member_if(s, i, false);
}

int rp__scatter_member_fail(rp__scatter *s, uint32_t member, int code, int routee,
                            const char *message)
{
    char buf[256];
    rp_future *f = NULL;
    size_t next = s->n, asked = 0;

    if (!message) {
        snprintf(buf, sizeof buf, "routee %d: %s", routee, rp_strerror(code));
        message = buf;
    }
    pthread_mutex_lock(&s->mu);
    if (s->resolved || s->done[member]) {
        int rc = s->resolved ? late_code(s) : RP_ECANCELLED;
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    s->done[member] = true;
    s->members[member] = (rp_error){code, strdup(message), routee, NULL, 0};
    if (++s->nfailed == s->n) {
        f = resolve_locked(s, RP_SCATTER_ALL_FAILED);
        asked = s->sent;
    } else if (s->sent < s->n) {
        next = s->sent++; /* tail-chopping: move on at once */
    }
    pthread_mutex_unlock(&s->mu);
    if (f)
        finish_failed(s, f, asked);
    else if (next < s->n)
        send_member(s, next);
    return 0;
}

int rp__scatter_reply(rp__scatter *s, uint32_t member, void *value, int routee)
{
    return rp__scatter_reply_owned(s, member, value, NULL, routee);
}

/* Under the future's lock, once the reply has won: counted before the
 * caller can see the answer, so a snapshot taken after rp_future_wait()
 * includes it. */
static void count_first(void *ctx)
{
    rp__scatter *s = ctx;

    count(s->sg, RP_SCATTER_FIRST, rp__now_ns() - s->start_ns);
}

int rp__scatter_reply_owned(rp__scatter *s, uint32_t member, void *value,
                            rp_value_free_fn free_fn, int routee)
{
    rp_future *f;
    int rc = 0;

    pthread_mutex_lock(&s->mu);
    if (s->resolved || s->done[member]) {
        rc = s->resolved ? late_code(s) : RP_ECANCELLED;
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    s->done[member] = true;
    f = resolve_locked(s, RP_SCATTER_FIRST);
    pthread_mutex_unlock(&s->mu);
    if (!rp__future_fulfil_hook(f, value, free_fn, routee, count_first, s)) {
        /* The scatter is the future's only completer, so this is a
         * deadline armed on it from outside: the reply is refused and the
         * value stays the job's; the scatter ended as a timeout. */
        const rp_error *e = rp_future_error(f);

        rc = e && e->code == RP_ETIMEDOUT ? RP_ETIMEDOUT : RP_ECANCELLED;
        count(s->sg, RP_SCATTER_TIMEOUT, rp__now_ns() - s->start_ns);
    }
    rp_future_release(f);
    cancel_timers(s);
    unlink_open(s);
    return rc;
}

/* The reply operations of a scatter's copies (reply.h): the target is
 * the rp__scatter, member the copy's index. */
static int reply_fulfil(void *target, uint32_t member, void *value, rp_value_free_fn free_fn,
                        int routee)
{
    return rp__scatter_reply_owned(target, member, value, free_fn, routee);
}

static int reply_fail(void *target, uint32_t member, int code, int routee, const char *message)
{
    return rp__scatter_member_fail(target, member, code, routee, message);
}

static void reply_retain(void *target)
{
    scatter_retain(target);
}

static void reply_release(void *target)
{
    rp__scatter_release(target);
}

/* A copy whose scatter another routee won is skipped, and counted. */
static int reply_skip(void *target)
{
    if (!rp__scatter_cancelled(target))
        return 0;
    rp__scatter_count_cancelled(target);
    return RP_ECANCELLED;
}

static bool reply_cancelled(const void *target)
{
    return rp__scatter_cancelled(target);
}

const rp__reply_ops rp__scatter_reply_ops = {
    reply_fulfil, reply_fail, reply_retain, reply_release, reply_skip, reply_cancelled,
};

/* Timer: the scatter's deadline. */
static void on_deadline(void *ctx, bool fired)
{
    rp__scatter *s = ctx;
    rp_future *f = NULL;
    size_t asked = 0;
    char buf[128];

    if (fired && s->ask_first) {
        ask_timed_out(s);
    } else if (fired) {
        pthread_mutex_lock(&s->mu);
        if (!s->resolved) {
            snprintf(buf, sizeof buf, "no reply within %gms", s->sg->timeout_ms);
            for (size_t i = 0; i < s->sent; i++)
                if (!s->done[i])
                    s->members[i] = (rp_error){RP_ETIMEDOUT, strdup(buf),
                                               rp_routee_index(s->routees[i]), NULL, 0};
            f = resolve_locked(s, RP_SCATTER_TIMEOUT);
            asked = s->sent;
        }
        pthread_mutex_unlock(&s->mu);
        if (f)
            finish_failed(s, f, asked);
    } else {
        fail_empty(s, RP_SCATTER_STOPPED, "stopped while the scatter was still open");
    }
    rp__scatter_release(s);
}

/* Timer: tail-chopping, send the next copy when no reply came. */
static void on_interval(void *ctx, bool fired)
{
    rp__scatter *s = ctx;
    size_t next = s->n;

    if (fired) {
        pthread_mutex_lock(&s->mu);
        if (!s->resolved && s->sent < s->n)
            next = s->sent++;
        pthread_mutex_unlock(&s->mu);
    }
    if (next < s->n) {
        int64_t at = rp__now_ns() + (int64_t)(s->sg->interval_ms * 1e6);
        send_member(s, next);
        if (next + 1 < s->n && at < s->deadline_ns &&
            rp__timer_add(&s->sg->pool->timer, at, on_interval, scatter_retain(s),
                          &s->interval_pos) < 0)
            rp__scatter_release(s);
    }
    rp__scatter_release(s);
}

/* Send copy i.  The scatter's first fan-out sends every copy (a copy
 * that finds the scatter resolved is skipped at dequeue and counted as
 * cancelled); tail-chopping never sends a copy once it resolved. */
static void send_member_if(rp__scatter *s, size_t i, bool even_if_resolved)
{
    rp__reply reply = {&rp__scatter_reply_ops, NULL, (uint32_t)i, s->deadline_ns};
    rp_routee *r = s->routees[i];
    bool resolved;
    int rc;

    pthread_mutex_lock(&s->mu);
    resolved = s->resolved;
    pthread_mutex_unlock(&s->mu);
    if (resolved && !even_if_resolved)
        return;
    reply.target = scatter_retain(s);
    rc = rp__routee_deliver_reply(r, s->fn, s->arg, true, &reply);

    if (rc < 0) {
        /* Not accepted: the copy's arg comes back on its own. */
        rp__routee_handback(s->sg->pool, s->arg, rc);
        rp__scatter_member_fail(s, (uint32_t)i, rc, rp_routee_index(r), NULL);
        rp__scatter_release(s);
    }
}

static int scatter_new(rp__scatter **out, rp__sg *sg, rp_routee *const *routees, size_t n,
                       size_t start, rp_job_fn fn, void *arg, int64_t ask_deadline_ns)
{
    rp__scatter *s = calloc(1, sizeof *s);

    *out = NULL;
    if (!s || (n && (!(s->routees = malloc(n * sizeof *s->routees)) ||
                     !(s->members = calloc(n, sizeof *s->members)) ||
                     !(s->done = calloc(n, sizeof *s->done))))) {
        if (s) {
            free(s->routees);
            free(s->members);
            free(s);
        }
        return rp__fail(RP_ENOMEM, "%s: out of memory", sg->name);
    }
    atomic_init(&s->refs, 1);
    atomic_init(&s->resolved_flag, false);
    pthread_mutex_init(&s->mu, NULL);
    rp__sg_retain(sg);
    s->sg = sg;
    s->fn = fn;
    s->arg = arg;
    s->n = n;
    for (size_t i = 0; i < n; i++)
        s->routees[i] = routees[(start + i) % n];
    s->deadline_pos = s->interval_pos = RP__TIMER_NONE;
    s->start_ns = rp__now_ns();
    s->deadline_ns = s->start_ns + (int64_t)(sg->timeout_ms * 1e6);
    if (ask_deadline_ns && ask_deadline_ns < s->deadline_ns) {
        s->deadline_ns = ask_deadline_ns;
        s->ask_first = true;
    }
    *out = s;
    return 0;
}

/* Put s on the open list (taking a reference); false when the router is
 * closed. */
static bool link_open(rp__scatter *s)
{
    rp__sg *sg = s->sg;
    bool ok;

    pthread_mutex_lock(&sg->mu);
    ok = !sg->closed;
    if (ok) {
        s->next = sg->open;
        s->prev = NULL;
        if (sg->open)
            sg->open->prev = s;
        sg->open = scatter_retain(s);
        s->linked = true;
    }
    pthread_mutex_unlock(&sg->mu);
    return ok;
}

int rp__sg_ask(rp__sg *sg, rp_routee *const *routees, size_t n, uint64_t message_index,
               rp_job_fn fn, void *arg, int64_t ask_deadline_ns, rp_future **out)
{
    rp__scatter *s = NULL;
    rp_future *f;
    int rc;
    bool chop = sg->interval_ms > 0;

    if ((rc = rp__future_new(sg->pool->futures, &f)) < 0)
        return rp__fail(rc, "%s: out of memory", sg->name);
    if ((rc = scatter_new(&s, sg, routees, n, chop && n ? message_index % n : 0, fn, arg,
                          ask_deadline_ns)) < 0) {
        rp_future_release(f);
        return rc;
    }
    s->result = rp_future_retain(f);
    /* The copies are counted before the deadline is armed: a deadline that
     * fires at once (timeout_ms 0.01) times out every copy asked, rather
     * than finding none. */
    s->sent = chop && n ? 1 : n;
    *out = f;
    if (!link_open(s)) {
        fail_empty(s, RP_SCATTER_STOPPED, "stopped while the scatter was still open");
    } else if (n == 0) {
        fail_empty(s, RP_SCATTER_ALL_FAILED, "no routees left to scatter to");
    } else if (rp__timer_add(&sg->pool->timer, s->deadline_ns, on_deadline, scatter_retain(s),
                             &s->deadline_pos) < 0) {
        rp__scatter_release(s);
        fail_empty(s, RP_SCATTER_STOPPED, "stopped while the scatter was still open");
    } else {
        for (size_t i = 0; i < (chop ? 1 : n); i++)
            send_member_if(s, i, true);
        if (chop && n > 1) {
            int64_t at = s->start_ns + (int64_t)(sg->interval_ms * 1e6);
            if (at < s->deadline_ns &&
                rp__timer_add(&sg->pool->timer, at, on_interval, scatter_retain(s),
                              &s->interval_pos) < 0)
                rp__scatter_release(s);
        }
    }
    rp__scatter_release(s);
    return 0;
}

void rp__sg_stop_open(rp__sg *sg)
{
    rp__scatter **open = NULL;
    size_t n = 0, cap = 0;

    /* Collect (with references) under the lock; resolve after it, since
     * resolving takes s->mu and then sg->mu to unlink. */
    pthread_mutex_lock(&sg->mu);
    for (rp__scatter *s = sg->open; s; s = s->next) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            rp__scatter **grown = realloc(open, ncap * sizeof *open);
            if (!grown)
                break; /* the rest resolve at their deadlines */
            open = grown;
            cap = ncap;
        }
        open[n++] = scatter_retain(s);
    }
    pthread_mutex_unlock(&sg->mu);
    for (size_t i = 0; i < n; i++) {
        fail_empty(open[i], RP_SCATTER_STOPPED, "stopped while the scatter was still open");
        rp__scatter_release(open[i]);
    }
    free(open);
}

void rp__sg_close(rp__sg *sg)
{
    if (!sg)
        return;
    pthread_mutex_lock(&sg->mu);
    sg->closed = true;
    pthread_mutex_unlock(&sg->mu);
    rp__sg_stop_open(sg);
    rp__sg_release(sg);
}

/*
 * The registry: the scatter-gather routers over one pool, so a shutdown
 * fails their open scatters at once ("stopped ..."), not after their
 * timeouts, and the pool's metrics add up their counts.  reg->lock is a
 * leaf: the list is copied under it (with references) and stopped after.
 */
struct rp__sg_registry {
    pthread_mutex_t lock; /* a leaf */
    rp__sg **sgs;
    size_t n, cap;
    rp_scatter_stats retired; /* counts of destroyed scatter routers */
};

int rp__sg_registry_create(rp__sg_registry **out)
{
    rp__sg_registry *reg = calloc(1, sizeof *reg);

    if (!(*out = reg))
        return RP_ENOMEM;
    pthread_mutex_init(&reg->lock, NULL);
    return 0;
}

void rp__sg_registry_destroy(rp__sg_registry *reg)
{
    if (!reg)
        return;
    free(reg->sgs);
    pthread_mutex_destroy(&reg->lock);
    free(reg);
}

/* sum += s. */
static void stats_add(rp_scatter_stats *sum, const rp_scatter_stats *s)
{
    for (int i = 0; i < RP_SCATTER_OUTCOMES; i++)
        sum->resolved[i] += s->resolved[i];
    for (int i = 0; i <= RP_SCATTER_LATENCY_BUCKETS; i++)
        sum->latency_buckets[i] += s->latency_buckets[i];
    sum->latency_count += s->latency_count;
    sum->latency_sum_seconds += s->latency_sum_seconds;
    sum->cancelled += s->cancelled;
}

int rp__sg_register(rp__sg_registry *reg, rp__sg *sg)
{
    int rc = 0;

    pthread_mutex_lock(&reg->lock);
    if (reg->n == reg->cap) {
        size_t cap = reg->cap ? reg->cap * 2 : 4;
        rp__sg **grown = realloc(reg->sgs, cap * sizeof *grown);
        if (grown) {
            reg->sgs = grown;
            reg->cap = cap;
        } else {
            rc = RP_ENOMEM;
        }
    }
    if (rc == 0)
        reg->sgs[reg->n++] = sg;
    pthread_mutex_unlock(&reg->lock);
    return rc;
}

void rp__sg_unregister(rp__sg_registry *reg, rp__sg *sg)
{
    rp_scatter_stats final;

    pthread_mutex_lock(&reg->lock);
    for (size_t i = 0; i < reg->n; i++) {
        if (reg->sgs[i] == sg) {
            reg->sgs[i] = reg->sgs[--reg->n];
            /* Keep its counts: a counter must not go down when a router
             * goes away. */
            rp__sg_stats(sg, &final);
            stats_add(&reg->retired, &final);
            break;
        }
    }
    pthread_mutex_unlock(&reg->lock);
}

void rp__sg_stop_all(rp__sg_registry *reg)
{
    rp__sg **copy = NULL;
    size_t n;

    /* Copy with references, then stop outside the lock: stopping runs
     * completion callbacks, which may create or destroy routers. */
    pthread_mutex_lock(&reg->lock);
    n = reg->n;
    if (n && (copy = malloc(n * sizeof *copy)))
        for (size_t i = 0; i < n; i++)
            rp__sg_retain(copy[i] = reg->sgs[i]);
    pthread_mutex_unlock(&reg->lock);
    if (!copy)
        return; /* out of memory: open scatters fail at their deadlines */
    for (size_t i = 0; i < n; i++) {
        rp__sg_stop_open(copy[i]);
        rp__sg_release(copy[i]);
    }
    free(copy);
}

void rp__sg_registry_stats(rp__sg_registry *reg, rp_scatter_stats *sum)
{
    pthread_mutex_lock(&reg->lock);
    stats_add(sum, &reg->retired);
    for (size_t i = 0; i < reg->n; i++) {
        rp_scatter_stats s;
        rp__sg_stats(reg->sgs[i], &s);
        stats_add(sum, &s);
    }
    pthread_mutex_unlock(&reg->lock);
}
