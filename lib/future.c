/* SPDX-License-Identifier: MIT */
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
 * References: whoever made the future holds one (a promise made by
 * rp_future_create() starts with two, the waiter's and the completer's);
 * every job, timer entry and callback registration that needs the future
 * alive holds its own.
 *
 * Values: a plain value is the asker's once fulfilled.  An owned value
 * (free_fn set) is freed by the last release unless rp_future_take_value()
 * cleared it first; value is atomic because rp_future_value() reads it
 * without the lock.  A completion that loses (the future was already
 * complete) stores nothing, so the value stays the caller's.
 *
 * Recycling.  A pool's asks take their futures from the pool's future
 * heap, a type-stable freelist (alloc.h), and the last release puts them
 * back with their mutex and condition variable still initialized: an ask
 * in a steady state allocates nothing (rp-bench-memory), and the heap
 * holds the high-water mark of futures in flight, as the mailboxes hold
 * theirs of queued jobs.  A future may outlive its pool, so the heap's
 * slabs come from the C allocator (not the pool's arena, destroyed with
 * the pool) and the heap is reference-counted: the pool holds one
 * reference and every future taken from it one more; the last release
 * frees the slabs.  Futures without a heap (an ask that names no pool)
 * are malloc'd and freed.  Under AddressSanitizer a future in the heap's
 * freelist is poisoned (all but its link), so ASan still reports a use
 * after the last release.
 *
 * Lock order: f->mu is a leaf.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "future.h"
#include "pool_record.h"
#include "timer.h"
#include "wait.h"

typedef struct rp__callback callback;

struct rp__callback {
    rp_future_cb cb;
    void *user;
    callback *next;
};

struct rp_future {
    ck_stack_entry_t link; /* the heap's freelist link: first (see POISON) */
    rp__future_heap *heap; /* where it goes back, or NULL: free() */
    bool ready;            /* mu and cv initialized (a heap record keeps them) */
    _Atomic int refs;
    _Atomic int state;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* Atomic: rp_future_value() reads it without the lock while
     * rp_future_take_value() clears it under the lock. */
    _Atomic(void *) value;
    /* The value's destructor, run at the last release (NULL: not owned,
     * or taken).  Set under mu at fulfilment, read by the last release. */
    rp_value_free_fn free_fn;
    bool promise; /* made by rp_future_create() */
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

struct rp__future_heap {
    rp__freelist recs;
    rp__arena libc;       /* the C allocator: the slabs outlive the pool */
    _Atomic long refs;    /* the pool's, and one per future taken */
};

/* A free future: nothing but its freelist link may be touched. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(f) ASAN_POISON_MEMORY_REGION(&(f)->heap, sizeof *(f) - offsetof(rp_future, heap))
#define UNPOISON(f) ASAN_UNPOISON_MEMORY_REGION(&(f)->heap, sizeof *(f) - offsetof(rp_future, heap))
#else
#define POISON(f) ((void)(f))
#define UNPOISON(f) ((void)(f))
#endif

/* Futures per slab: 31 of 256 bytes (a future rounded up to whole cache
 * lines, so two threads' futures never share one) and the 64-byte slab
 * header fill 8 KiB. */
#define FUTURES_PER_SLAB 31

int rp__future_heap_create(rp__future_heap **out)
{
    rp__future_heap *h;

    *out = NULL;
    if (!(h = calloc(1, sizeof *h)))
        return RP_ENOMEM;
    h->libc = (rp__arena){.private_arena = false};
    rp__freelist_init(&h->recs, &h->libc, sizeof(rp_future), RP_CACHELINE,
                      offsetof(rp_future, link), FUTURES_PER_SLAB);
    atomic_init(&h->refs, 1);
    *out = h;
    return 0;
}

void rp__future_heap_release(rp__future_heap *h)
{
    if (!h || atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* Every future is back: no thread can touch a record any more.  The
     * records' mutexes and condition variables have no waiters; glibc's
     * need no destroy call before their memory goes. */
    rp__freelist_destroy(&h->recs);
    free(h);
}

int rp__future_new(rp__future_heap *heap, rp_future **out)
{
    rp_future *f;

    if (heap) {
        if (!(f = rp__freelist_get(&heap->recs)))
            return RP_ENOMEM;
        UNPOISON(f);
        atomic_fetch_add_explicit(&heap->refs, 1, memory_order_relaxed);
    } else if (!(f = calloc(1, sizeof *f))) {
        return RP_ENOMEM;
    }
    if (!f->ready) { /* new memory, zeroed */
        pthread_condattr_t ca;

        pthread_mutex_init(&f->mu, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&f->cv, &ca);
        pthread_condattr_destroy(&ca);
        f->ready = true;
    }
    /* A recycled record comes back as its last release left it. */
    f->heap = heap;
    atomic_init(&f->refs, 1);
    atomic_init(&f->state, RP_FUTURE_PENDING);
    atomic_init(&f->value, NULL);
    f->free_fn = NULL;
    f->promise = false;
    f->routee = -1;
    f->err = (rp_error){0};
    f->message = NULL;
    f->members = NULL;
    f->callbacks = NULL;
    f->timer = NULL;
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
        rp__future_fail(f, RP_ETIMEDOUT, -1, "%s", f->promise ? "future timed out" : "ask timed out");
    else if (f->promise)
        /* Not a cancel (that comes after completion): the pool's timer
         * stopped, nothing will enforce the deadline any more. */
        rp__future_fail(f, RP_ESHUTDOWN, -1, "pool destroyed before the deadline");
    rp_future_release(f);
}

/* 0 (armed, or nothing to arm), or the timer's RP_ENOMEM / RP_ESHUTDOWN. */
static int arm(rp_future *f, struct rp__timer *timer, int64_t deadline_ns)
{
    int rc;

    pthread_mutex_lock(&f->mu);
    if (atomic_load_explicit(&f->state, memory_order_relaxed) != RP_FUTURE_PENDING ||
        f->timer) {
        pthread_mutex_unlock(&f->mu);
        return 0;
    }
    f->timer = timer;
    pthread_mutex_unlock(&f->mu);
    /* The entry's reference; the entry goes when f completes (cancel). */
    if ((rc = rp__timer_add(timer, deadline_ns, on_deadline, rp_future_retain(f), &f->timer_pos)) < 0) {
        pthread_mutex_lock(&f->mu);
        f->timer = NULL;
        pthread_mutex_unlock(&f->mu);
        rp_future_release(f);
    }
    return rc;
}

void rp__future_arm(rp_future *f, struct rp__timer *timer, int64_t deadline_ns)
{
    (void)arm(f, timer, deadline_ns);
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

/* Members own their messages and (rp_future_fail_aggregate() copies)
 * their own members. */
static void free_members(rp_error *members, size_t n)
{
    for (size_t i = 0; members && i < n; i++) {
        free((char *)members[i].message);
        free_members((rp_error *)members[i].members, members[i].nmembers);
    }
    free(members);
}

void rp_future_release(rp_future *f)
{
    void *value;

    if (!f || atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* Pending callbacks hold references, so none can be left here.  The
     * last reference: nobody else can take the value now. */
    value = atomic_load_explicit(&f->value, memory_order_relaxed);
    if (f->free_fn && value)
        f->free_fn(value);
    free(f->message);
    free_members(f->members, f->err.nmembers);
    if (f->heap) {
        rp__future_heap *h = f->heap;

        POISON(f);
        rp__freelist_put(&h->recs, f);
        rp__future_heap_release(h);
        return;
    }
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
    return rp__future_fulfil_owned(f, value, NULL, routee);
}

bool rp__future_fulfil_owned(rp_future *f, void *value, rp_value_free_fn free_fn, int routee)
{
    return rp__future_fulfil_hook(f, value, free_fn, routee, NULL, NULL);
}

bool rp__future_fulfil_hook(rp_future *f, void *value, rp_value_free_fn free_fn, int routee,
                            void (*won)(void *ctx), void *ctx)
{
    struct rp__timer *timer;
    callback *cbs;

    pthread_mutex_lock(&f->mu);
    if (atomic_load_explicit(&f->state, memory_order_relaxed) != RP_FUTURE_PENDING) {
        pthread_mutex_unlock(&f->mu);
        return false;
    }
    if (won)
        won(ctx);
    /* Relaxed: published by the state's release store in complete_locked(). */
    atomic_store_explicit(&f->value, value, memory_order_relaxed);
    f->free_fn = free_fn;
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
    if (rc < 0)
        return rp__fail(rc, "rp_future_wait: still pending after %d ms", timeout_ms);
    return 0;
}

int rp__callback_new(rp__callback **out, rp_future_cb cb, void *user)
{
    if (!(*out = malloc(sizeof **out)))
        return RP_ENOMEM;
    (*out)->cb = cb;
    (*out)->user = user;
    (*out)->next = NULL;
    return 0;
}

void rp__callback_free(rp__callback *c)
{
    free(c);
}

int rp_future_on_complete(rp_future *f, rp_future_cb cb, void *user)
{
    callback *c;

    if (!f || !cb)
        return rp__fail(RP_EINVAL, "rp_future_on_complete: %s is NULL", f ? "cb" : "future");
    if (rp__callback_new(&c, cb, user) < 0)
        return rp__fail(RP_ENOMEM, "rp_future_on_complete: out of memory");
    rp__future_on_complete_with(f, c);
    return 0;
}

void rp__future_on_complete_with(rp_future *f, rp__callback *c)
{
    pthread_mutex_lock(&f->mu);
    if (atomic_load_explicit(&f->state, memory_order_relaxed) == RP_FUTURE_PENDING) {
        rp_future_retain(f);
        c->next = f->callbacks;
        f->callbacks = c;
        pthread_mutex_unlock(&f->mu);
        return;
    }
    pthread_mutex_unlock(&f->mu);
    c->cb(f, c->user);
    free(c);
}

rp_future_state rp_future_status(const rp_future *f)
{
    if (!f)
        return RP_FUTURE_FAILED;
    return atomic_load_explicit(&((rp_future *)f)->state, memory_order_acquire);
}

void *rp_future_value(const rp_future *f)
{
    /* Relaxed after the acquire in rp_future_status(), which pairs with
     * the state's release store at fulfilment. */
    return rp_future_status(f) == RP_FUTURE_FULFILLED
               ? atomic_load_explicit(&((rp_future *)f)->value, memory_order_relaxed)
               : NULL;
}

int rp_future_routee(const rp_future *f)
{
    return rp_future_status(f) == RP_FUTURE_FULFILLED ? f->routee : -1;
}

const rp_error *rp_future_error(const rp_future *f)
{
    return f && rp_future_status(f) == RP_FUTURE_FAILED ? &f->err : NULL;
}

/*
 * Promises: futures the caller completes.  rp_future_create() hands out
 * two references (the waiter's and the completer's) so neither side's
 * release can free the future under the other; the deadline entry holds
 * its own.  Completion goes through the same paths as an ask's.
 */

int rp_future_create(rp_future **out, rp_pool *pool, int timeout_ms)
{
    const char *func = "rp_future_create";
    rp_future *f;
    int rc;

    if (!out)
        return rp__fail(RP_EINVAL, "%s: out is NULL", func);
    *out = NULL;
    if (!pool)
        return rp__fail(RP_EINVAL, "%s: pool is NULL", func);
    if (timeout_ms < -1)
        return rp__fail(RP_EINVAL, "%s: timeout_ms must be > 0, 0 (the default) or -1 (none) (got %d)",
                        func, timeout_ms);
    if (rp__pool_shut(pool)) /* also when every routee was stopped before */
        return rp__fail(RP_ESHUTDOWN, "%s: pool %s is shut down", func, pool->name);
    if ((rc = rp__future_new(pool->futures, &f)) < 0)
        return rp__fail(rc, "%s: out of memory", func);
    f->promise = true;
    rp_future_retain(f); /* the completer's; the waiter's came with it */
    if (timeout_ms != -1) {
        int64_t ms = timeout_ms ? timeout_ms : RP_ASK_TIMEOUT_MS;

        if ((rc = arm(f, &pool->timer, rp__now_ns() + ms * 1000000)) < 0) {
            rp_future_release(f);
            rp_future_release(f);
            return rp__fail(rc, "%s: %s", func, rc == RP_ENOMEM ? "out of memory"
                                                : "the pool's timer has stopped");
        }
    }
    *out = f;
    return 0;
}

/* After a completion call found f complete: why, for the completer. */
static int already_complete(const rp_future *f, const char *func)
{
    const rp_error *e = rp_future_error(f);

    if (e && e->code == RP_ETIMEDOUT)
        return rp__fail(RP_ETIMEDOUT, "%s: the future had already timed out", func);
    return rp__fail(RP_ECANCELLED, "%s: the future had already completed", func);
}

int rp_future_fulfil(rp_future *f, int routee, void *value, rp_value_free_fn free_fn)
{
    if (!f || routee < -1)
        return rp__fail(RP_EINVAL, "rp_future_fulfil: %s", f ? "routee must be >= -1" : "future is NULL");
    if (rp__future_fulfil_owned(f, value, free_fn, routee))
        return 0;
    return already_complete(f, "rp_future_fulfil");
}

int rp_future_fail(rp_future *f, int routee, int code, const char *message)
{
    char *copy = NULL;

    if (!f || routee < -1)
        return rp__fail(RP_EINVAL, "rp_future_fail: %s", f ? "routee must be >= -1" : "future is NULL");
    if (!(copy = strdup(message ? message : rp_strerror(code))))
        return rp__fail(RP_ENOMEM, "rp_future_fail: out of memory");
    if (fail_with(f, code, routee, copy, NULL, 0))
        return 0;
    return already_complete(f, "rp_future_fail");
}

/* Members deeper than this are refused: the input may come off a wire. */
#define AGGREGATE_DEPTH_MAX 8

/* A deep copy of n members into *out (NULL when n is 0).  0, RP_ENOMEM,
 * RP_EINVAL (nesting too deep, members NULL with n > 0). */
static int copy_members(rp_error **out, const rp_error *members, size_t n, int depth)
{
    rp_error *m;
    int rc;

    *out = NULL;
    if (n == 0)
        return 0;
    if (!members || depth > AGGREGATE_DEPTH_MAX)
        return RP_EINVAL;
    if (n > SIZE_MAX / sizeof *m || !(m = calloc(n, sizeof *m)))
        return RP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const rp_error *src = &members[i];
        rp_error *sub;

        m[i] = (rp_error){src->code, strdup(src->message ? src->message : rp_strerror(src->code)),
                          src->routee, NULL, 0};
        rc = m[i].message ? copy_members(&sub, src->members, src->nmembers, depth + 1)
                          : RP_ENOMEM;
        if (rc < 0) {
            free_members(m, i + 1);
            return rc;
        }
        m[i].members = sub;
        m[i].nmembers = sub ? src->nmembers : 0;
    }
    *out = m;
    return 0;
}

int rp_future_fail_aggregate(rp_future *f, const char *message, const rp_error *members,
                             size_t n)
{
    const char *func = "rp_future_fail_aggregate";
    rp_error *copy;
    char *msg;
    int rc;

    if (!f)
        return rp__fail(RP_EINVAL, "%s: future is NULL", func);
    if ((rc = copy_members(&copy, members, n, 1)) < 0)
        return rp__fail(rc, "%s: %s", func, rc == RP_ENOMEM ? "out of memory"
                        : !members ? "members is NULL with n > 0"
                        : "members nested deeper than 8 levels");
    if (!(msg = strdup(message ? message : rp_strerror(RP_EAGGREGATE)))) {
        free_members(copy, n);
        return rp__fail(RP_ENOMEM, "%s: out of memory", func);
    }
    if (fail_with(f, RP_EAGGREGATE, -1, msg, copy, n))
        return 0;
    return already_complete(f, func);
}

void *rp_future_take_value(rp_future *f)
{
    void *value = NULL;

    if (!f)
        return NULL;
    pthread_mutex_lock(&f->mu);
    if (atomic_load_explicit(&f->state, memory_order_relaxed) == RP_FUTURE_FULFILLED) {
        value = atomic_exchange_explicit(&f->value, NULL, memory_order_relaxed);
        f->free_fn = NULL;
    }
    pthread_mutex_unlock(&f->mu);
    return value;
}

/*
 * Asks: a future for a job's answer, armed on a timer for its deadline.
 */

int rp__ask_timeout(int timeout_ms, int64_t *deadline_ns, const char *func)
{
    if (timeout_ms < 0)
        return rp__fail(RP_EINVAL, "%s: timeout_ms must be > 0, or 0 for the default (got %d)",
                        func, timeout_ms);
    *deadline_ns = rp__now_ns() + (int64_t)(timeout_ms ? timeout_ms : RP_ASK_TIMEOUT_MS) * 1000000;
    return 0;
}

int rp__ask_begin(rp__future_heap *heap, struct rp__timer *timer, int64_t deadline_ns,
                  rp__reply *reply, rp_future **out, const char *func)
{
    rp_future *f;
    int rc;

    if ((rc = rp__future_new(heap, &f)) < 0)
        return rp__fail(rc, "%s: out of memory", func);
    /* References: the caller's (out), the job's (reply), the timer's
     * (taken by rp__future_arm, dropped when f completes). */
    *reply = (rp__reply){&rp__future_reply_ops, rp_future_retain(f), 0, deadline_ns};
    if (timer)
        rp__future_arm(f, timer, deadline_ns);
    *out = f;
    return 0;
}

void rp__ask_abort(rp__reply *reply, rp_future **out)
{
    /* Not accepted: no job will answer.  Fail it for the timer's sake and
     * drop both the job's and the caller's references. */
    rp__future_fail(reply->target, RP_ESHUTDOWN, -1, "not accepted");
    rp_future_release(reply->target);
    rp_future_release(*out);
    *out = NULL;
}

/* A completion refused: the ask had timed out (failed) or another
 * completer won. */
static int refusal(const rp_future *f)
{
    return rp_future_status(f) == RP_FUTURE_FAILED ? RP_ETIMEDOUT : RP_ECANCELLED;
}

static int reply_fulfil(void *target, uint32_t member, void *value, rp_value_free_fn free_fn,
                        int routee)
{
    (void)member;
    return rp__future_fulfil_owned(target, value, free_fn, routee) ? 0 : refusal(target);
}

static int reply_fail(void *target, uint32_t member, int code, int routee, const char *message)
{
    (void)member;
    if (rp__future_fail(target, code, routee, "%s", message ? message : rp_strerror(code)))
        return 0;
    return refusal(target);
}

static void reply_retain(void *target)
{
    rp_future_retain(target);
}

static void reply_release(void *target)
{
    rp_future_release(target);
}

/* A job whose future already completed (its ask timed out) is skipped. */
static int reply_skip(void *target)
{
    return rp__future_pending(target) ? 0 : RP_EEXPIRED;
}

static bool reply_cancelled(const void *target)
{
    (void)target;
    return false;
}

const rp__reply_ops rp__future_reply_ops = {
    reply_fulfil, reply_fail, reply_retain, reply_release, reply_skip, reply_cancelled,
};
