/* SPDX-License-Identifier: MIT */
/*
 * timer.c - the pool's timer thread: ask deadlines and scatter timers.
 *
 * One thread and one heap per pool, not a thread per ask.  The thread
 * sleeps on a condition variable until the earliest deadline (or forever
 * when the heap is empty: an idle pool's timer uses no CPU), pops every due
 * entry and runs its callback with the lock released.
 *
 * Lock order: t->mu is a leaf; callbacks run without it.
 *
 * A callback may not destroy the pool that owns the timer (its thread
 * would join itself and then return into freed memory): rp_pool_destroy()
 * asks rp__timer_current() and refuses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "internal.h"
#include "timer.h"

/* The timer whose thread this is, NULL on every other thread. */
static _Thread_local const rp__timer *current_timer;

bool rp__timer_current(const rp__timer *t)
{
    return current_timer == t;
}

static bool before(const rp__timer_entry *a, const rp__timer_entry *b)
{
    return a->deadline_ns < b->deadline_ns ||
           (a->deadline_ns == b->deadline_ns && a->seq < b->seq);
}

/* Put e at index i and record the index where its owner keeps it. */
static void place(rp__timer_entry *h, size_t i, rp__timer_entry e)
{
    h[i] = e;
    if (e.pos)
        *e.pos = i;
}

static void swap(rp__timer_entry *h, size_t a, size_t b)
{
    rp__timer_entry tmp = h[a];
    place(h, a, h[b]);
    place(h, b, tmp);
}

static void sift_up(rp__timer_entry *h, size_t i)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&h[i], &h[parent]))
            return;
        swap(h, i, parent);
        i = parent;
    }
}

static void sift_down(rp__timer_entry *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && before(&h[l], &h[m]))
            m = l;
        if (r < n && before(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        swap(h, i, m);
        i = m;
    }
}

/* Take the entry at index i out of the heap. */
static rp__timer_entry remove_at(rp__timer *t, size_t i)
{
    rp__timer_entry e = t->heap[i];

    if (e.pos)
        *e.pos = RP__TIMER_NONE;
    if (i != --t->n) {
        place(t->heap, i, t->heap[t->n]);
        sift_down(t->heap, t->n, i);
        sift_up(t->heap, i);
    }
    return e;
}

static rp__timer_entry pop_min(rp__timer *t)
{
    return remove_at(t, 0);
}

static void *timer_main(void *p)
{
    rp__timer *t = p;

    current_timer = t;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        struct timespec ts;
        rp__timer_entry e;

        if (t->n == 0) {
            pthread_cond_wait(&t->cv, &t->mu);
            continue;
        }
        if (t->heap[0].deadline_ns > rp__now_ns()) {
            ts.tv_sec = t->heap[0].deadline_ns / 1000000000;
            ts.tv_nsec = t->heap[0].deadline_ns % 1000000000;
            pthread_cond_timedwait(&t->cv, &t->mu, &ts);
            continue;
        }
        e = pop_min(t);
        pthread_mutex_unlock(&t->mu);
        e.fn(e.ctx, true);
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int rp__timer_start(rp__timer *t, const char *thread_name)
{
    pthread_condattr_t ca;
    int err;

    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", thread_name);
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    if ((err = pthread_create(&t->thread, NULL, timer_main, t)) != 0)
        return rp__fail(RP_ESYS, "timer thread: %s", strerror(err));
    /* Named by its creator, so the name is there when the pool is
     * (a thread naming itself may not have run yet). */
    pthread_setname_np(t->thread, t->name);
    t->started = true;
    return 0;
}

void rp__timer_stop(rp__timer *t)
{
    if (t->started) {
        pthread_mutex_lock(&t->mu);
        t->stop = true;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->thread, NULL);
        t->started = false;
    }
    /* No thread left: the heap is ours. */
    while (t->n > 0) {
        rp__timer_entry e = pop_min(t);
        e.fn(e.ctx, false);
    }
    free(t->heap);
    t->heap = NULL;
    t->cap = 0;
}

int rp__timer_add(rp__timer *t, int64_t deadline_ns, rp__timer_fn fn, void *ctx,
                  size_t *pos)
{
    int rc = 0;

    pthread_mutex_lock(&t->mu);
    if (t->stop || !t->started) {
        rc = RP_ESHUTDOWN;
    } else if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        rp__timer_entry *h = realloc(t->heap, cap * sizeof *h);
        if (!h)
            rc = RP_ENOMEM;
        else {
            t->heap = h;
            t->cap = cap;
        }
    }
    if (rc == 0) {
        place(t->heap, t->n, (rp__timer_entry){deadline_ns, t->seq++, fn, ctx, pos});
        sift_up(t->heap, t->n++);
        /* Wake the thread only when the earliest deadline changed. */
        if (t->heap[0].fn == fn && t->heap[0].ctx == ctx && t->heap[0].deadline_ns == deadline_ns)
            pthread_cond_signal(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

void rp__timer_cancel(rp__timer *t, size_t *pos)
{
    rp__timer_entry e = {0};

    if (!t->started)
        return;
    pthread_mutex_lock(&t->mu);
    if (*pos != RP__TIMER_NONE && *pos < t->n && t->heap[*pos].pos == pos)
        e = remove_at(t, *pos);
    pthread_mutex_unlock(&t->mu);
    if (e.fn)
        e.fn(e.ctx, false);
}
