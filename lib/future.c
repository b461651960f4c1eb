/*
 * future.c - futures: one completion, many waiters, callbacks exactly once.
 *
 * State lives under a per-future mutex; waiters sleep on its condition
 * variable (no polling).  Completion moves PENDING to FULFILLED or FAILED
 * once, takes the callback list out under the lock and runs the callbacks
 * after unlocking, so a callback may call back into the future.  The state
 * is also kept in an atomic so rp_future_status() and the dequeue-time
 * checks read it without the lock.
 *
 * References: whoever made the future holds one; every job, timer entry
 * and callback registration that needs the future alive holds its own.
 *
 * Lock order: f->mu is a leaf.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "future.h"
#include "scatter.h"
#include "timer.h"
#include "wait.h"

typedef struct callback {
    rp_future_cb cb;
    void *user;
    struct callback *next;
} callback;

struct rp_future {
    _Atomic int refs;
    _Atomic int state;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void *value;
    int routee;
    rp_error err;
    char *message;      /* owned; err.message points here */
    rp_error *members;  /* owned, with owned messages */
    callback *callbacks;
    /* The deadline's timer entry (NULL: none, or it fired or was
     * cancelled).  timer under mu; timer_pos under the timer's lock. */
    struct rp__timer *timer;
    size_t timer_pos;
};

int rp__future_new(rp_future **out)
{
    rp_future *f = calloc(1, sizeof *f);
    pthread_condattr_t ca;

    if (!f)
        return RP_ENOMEM;
    atomic_init(&f->refs, 1);
    atomic_init(&f->state, RP_FUTURE_PENDING);
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cv, &ca);
    pthread_condattr_destroy(&ca);
    f->routee = -1;
    f->timer_pos = RP__TIMER_NONE;
    *out = f;
    return 0;
}

static void on_deadline(void *ctx, bool fired)
{
    rp_future *f = ctx;

    pthread_mutex_lock(&f->mu);
    f->timer = NULL;
    pthread_mutex_unlock(&f->mu);
    if (fired)
        rp__future_fail(f, RP_ETIMEDOUT, -1, "ask timed out");
    rp_future_release(f);
}

void rp__future_arm(rp_future *f, struct rp__timer *timer, int64_t deadline_ns)
{
    pthread_mutex_lock(&f->mu);
    if (atomic_load_explicit(&f->state, memory_order_relaxed) != RP_FUTURE_PENDING ||
        f->timer) {
        pthread_mutex_unlock(&f->mu);
        return;
    }
    f->timer = timer;
    pthread_mutex_unlock(&f->mu);
    /* The entry's reference; the entry goes when f completes (cancel). */
    if (rp__timer_add(timer, deadline_ns, on_deadline, rp_future_retain(f), &f->timer_pos) < 0) {
        pthread_mutex_lock(&f->mu);
        f->timer = NULL;
        pthread_mutex_unlock(&f->mu);
        rp_future_release(f);
    }
}

/* After completion: drop the deadline entry now rather than at the
 * deadline, so a completed future is not held for the rest of it. */
static void disarm(rp_future *f, struct rp__timer *timer)
{
    if (timer)
        rp__timer_cancel(timer, &f->timer_pos);
}

rp_future *rp_future_retain(rp_future *f)
{
    if (f)
        atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
    return f;
}

static void free_members(rp_error *members, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free((char *)members[i].message);
    free(members);
}

void rp_future_release(rp_future *f)
{
    if (!f || atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* Pending callbacks hold references, so none can be left here. */
    free(f->message);
    free_members(f->members, f->err.nmembers);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
}

/* Under f->mu, state PENDING: set the outcome; returns the callbacks. */
static callback *complete_locked(rp_future *f, int state)
{
    callback *cbs = f->callbacks;

    f->callbacks = NULL;
    atomic_store_explicit(&f->state, state, memory_order_release);
    pthread_cond_broadcast(&f->cv);
    return cbs;
}

static void run_callbacks(rp_future *f, callback *cbs, struct rp__timer *timer)
{
    disarm(f, timer);
    while (cbs) {
        callback *next = cbs->next;
        cbs->cb(f, cbs->user);
        free(cbs);
        rp_future_release(f); /* the registration's reference */
        cbs = next;
    }
}

bool rp__future_fulfil(rp_future *f, void *value, int routee)
{
    struct rp__timer *timer;
    callback *cbs;

    pthread_mutex_lock(&f->mu);
    if (atomic_load_explicit(&f->state, memory_order_relaxed) != RP_FUTURE_PENDING) {
        pthread_mutex_unlock(&f->mu);
        return false;
    }
    f->value = value;
    f->routee = routee;
    cbs = complete_locked(f, RP_FUTURE_FULFILLED);
    timer = f->timer;
    pthread_mutex_unlock(&f->mu);
    run_callbacks(f, cbs, timer);
    return true;
}

static bool fail_with(rp_future *f, int code, int routee, char *message,
                      rp_error *members, size_t n)
{
    struct rp__timer *timer;
    callback *cbs;

    pthread_mutex_lock(&f->mu);
    if (atomic_load_explicit(&f->state, memory_order_relaxed) != RP_FUTURE_PENDING) {
        pthread_mutex_unlock(&f->mu);
        free(message);
        free_members(members, n);
        return false;
    }
    f->message = message;
    f->members = members;
    f->err = (rp_error){code, message ? message : rp_strerror(code), routee,
                        members, n};
    cbs = complete_locked(f, RP_FUTURE_FAILED);
    timer = f->timer;
    pthread_mutex_unlock(&f->mu);
    run_callbacks(f, cbs, timer);
    return true;
}

bool rp__future_fail(rp_future *f, int code, int routee, const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return fail_with(f, code, routee, strdup(buf), NULL, 0);
}

bool rp__future_fail_aggregate(rp_future *f, char *message, rp_error *members, size_t n)
{
    return fail_with(f, RP_EAGGREGATE, -1, message, members, n);
}

bool rp__future_pending(const rp_future *f)
{
    return atomic_load_explicit(&((rp_future *)f)->state, memory_order_acquire) ==
           RP_FUTURE_PENDING;
}

int rp_future_wait(rp_future *f, int timeout_ms)
{
    struct timespec deadline;
    int rc = 0;

    if (!f || timeout_ms < -1)
        return rp__fail(RP_EINVAL, "rp_future_wait: %s", f ? "timeout_ms must be >= -1" : "future is NULL");
    if (timeout_ms >= 0)
        rp__deadline(&deadline, timeout_ms);
    pthread_mutex_lock(&f->mu);
    while (atomic_load_explicit(&f->state, memory_order_relaxed) == RP_FUTURE_PENDING) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&f->cv, &f->mu);
        } else if (pthread_cond_timedwait(&f->cv, &f->mu, &deadline) != 0 &&
                   rp__deadline_passed(&deadline)) {
            rc = RP_ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

int rp_future_on_complete(rp_future *f, rp_future_cb cb, void *user)
{
    callback *c;

    if (!f || !cb)
        return rp__fail(RP_EINVAL, "rp_future_on_complete: %s is NULL", f ? "cb" : "future");
    if (!(c = malloc(sizeof *c)))
        return rp__fail(RP_ENOMEM, "rp_future_on_complete: out of memory");
    c->cb = cb;
    c->user = user;
    pthread_mutex_lock(&f->mu);
    if (atomic_load_explicit(&f->state, memory_order_relaxed) == RP_FUTURE_PENDING) {
        rp_future_retain(f);
        c->next = f->callbacks;
        f->callbacks = c;
        pthread_mutex_unlock(&f->mu);
        return 0;
    }
    pthread_mutex_unlock(&f->mu);
    free(c);
    cb(f, user);
    return 0;
}

rp_future_state rp_future_status(const rp_future *f)
{
    if (!f)
        return RP_FUTURE_FAILED;
    return atomic_load_explicit(&((rp_future *)f)->state, memory_order_acquire);
}

void *rp_future_value(const rp_future *f)
{
    return rp_future_status(f) == RP_FUTURE_FULFILLED ? f->value : NULL;
}

int rp_future_routee(const rp_future *f)
{
    return rp_future_status(f) == RP_FUTURE_FULFILLED ? f->routee : -1;
}

const rp_error *rp_future_error(const rp_future *f)
{
    return f && rp_future_status(f) == RP_FUTURE_FAILED ? &f->err : NULL;
}

void rp__reply_fail(rp__reply *r, int code, int routee)
{
    if (r->future) {
        rp__future_fail(r->future, code, routee, "%s", rp_strerror(code));
        rp_future_release(r->future);
    } else if (r->scatter) {
        rp__scatter_member_fail(r->scatter, r->member, code, routee, NULL);
        rp__scatter_release(r->scatter);
    }
    r->future = NULL;
    r->scatter = NULL;
}

void rp__reply_release(rp__reply *r)
{
    if (r->future)
        rp_future_release(r->future);
    else if (r->scatter)
        rp__scatter_release(r->scatter);
    r->future = NULL;
    r->scatter = NULL;
}

int rp__reply_skip(const rp__reply *r, int64_t now_ns)
{
    if (r->scatter && rp__scatter_cancelled(r->scatter))
        return RP_ECANCELLED;
    if (r->future && !rp__future_pending(r->future))
        return RP_EEXPIRED;
    if (r->deadline_ns && now_ns >= r->deadline_ns)
        return RP_EEXPIRED;
    return 0;
}
