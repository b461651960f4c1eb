/* SPDX-License-Identifier: MIT */
/*
 * timer.h - one timer thread per pool: a min-heap of deadlines under a
 * mutex, a condition variable on CLOCK_MONOTONIC.  Private.
 *
 * Entries cannot be cancelled; their callbacks check whether the thing they
 * time is still open (futures complete, scatters resolve) and release the
 * reference the entry held.  At stop, pending entries are called with
 * fired = false so they release without acting.
 */
#ifndef RP_TIMER_H
#define RP_TIMER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef void (*rp__timer_fn)(void *ctx, bool fired);

typedef struct rp__timer_entry {
    int64_t deadline_ns;
    uint64_t seq; /* FIFO among equal deadlines */
    rp__timer_fn fn;
    void *ctx;
    size_t *pos; /* where the entry's heap index is kept, or NULL */
} rp__timer_entry;

/* *pos of an entry that is not (or no longer) in the heap. */
#define RP__TIMER_NONE ((size_t)-1)

typedef struct rp__timer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rp__timer_entry *heap;
    size_t n, cap;
    uint64_t seq;
    bool stop;
    bool started;
    pthread_t thread;
    char name[16];
} rp__timer;

/* Whether the calling thread is t's timer thread (running a callback). */
bool rp__timer_current(const rp__timer *t);

int rp__timer_start(rp__timer *t, const char *thread_name);
/* Join the thread; call every pending entry with fired = false. */
void rp__timer_stop(rp__timer *t);
/* 0, or RP_ENOMEM / RP_ESHUTDOWN (then fn is not called: the caller keeps
 * whatever ctx holds).  pos (may be NULL) must live as long as the entry
 * (inside ctx): the timer keeps the entry's heap index there, under its
 * lock, so the entry can be cancelled. */
int rp__timer_add(rp__timer *t, int64_t deadline_ns, rp__timer_fn fn, void *ctx,
                  size_t *pos);
/* Remove the entry whose index is kept at *pos, if it is still pending,
 * and call its fn with fired = false (outside the lock).  Resolved things
 * cancel their deadlines so nothing holds them until the deadline. */
void rp__timer_cancel(rp__timer *t, size_t *pos);

#endif /* RP_TIMER_H */
