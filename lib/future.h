/* SPDX-License-Identifier: MIT */
/*
 * future.h - futures and reply targets, private side.  Private.
 */
#ifndef RP_FUTURE_INTERNAL_H
#define RP_FUTURE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

typedef struct rp__scatter rp__scatter;

/*
 * Where a job's answer goes: nowhere (a tell), a future (an ask), or one
 * member of a scatter.  The job record holds one reference on the future
 * or the scatter until the job has run or been handed back.
 */
typedef struct rp__reply {
    rp_future *future;
    rp__scatter *scatter;
    uint32_t member;
    int64_t deadline_ns; /* 0: none */
} rp__reply;

static inline bool rp__reply_none(const rp__reply *r)
{
    return !r || (!r->future && !r->scatter);
}

/* Where a pool's futures are recycled (future.c, "Recycling"). */
typedef struct rp__future_heap rp__future_heap;
/* *out: a heap with the caller's reference.  0 or RP_ENOMEM. */
int rp__future_heap_create(rp__future_heap **out);
/* Drop the caller's reference (the pool's, at destroy); the futures still
 * out keep the heap alive.  Accepts NULL. */
void rp__future_heap_release(rp__future_heap *h);

/* A new pending future with one reference, from heap (NULL: malloc).
 * 0 or RP_ENOMEM. */
int rp__future_new(rp__future_heap *heap, rp_future **out);
/* Complete; false when it was already complete (nothing changes). */
bool rp__future_fulfil(rp_future *f, void *value, int routee);
/* As rp__future_fulfil(); free_fn (may be NULL) frees the value at the
 * last release unless rp_future_take_value() took it.  When this returns
 * false the value stays the caller's. */
bool rp__future_fulfil_owned(rp_future *f, void *value, rp_value_free_fn free_fn,
                             int routee);
bool rp__future_fail(rp_future *f, int code, int routee, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fail with an aggregate: takes members (an array of n, messages malloc'd)
 * whatever happens. */
bool rp__future_fail_aggregate(rp_future *f, char *message, rp_error *members,
                               size_t n);
bool rp__future_pending(const rp_future *f);

struct rp__timer;
/* Fail f with RP_ETIMEDOUT at deadline_ns unless it completes first (then
 * the timer entry is removed at once).  No-op when already armed. */
void rp__future_arm(rp_future *f, struct rp__timer *timer, int64_t deadline_ns);

/* The job will not run: fail its reply with code and drop the job's
 * reference.  routee: where it was, or -1. */
void rp__reply_fail(rp__reply *r, int code, int routee);
/* Drop the job's reference without completing anything. */
void rp__reply_release(rp__reply *r);
/* Whether a job with this reply should be skipped at dequeue: its deadline
 * passed (RP_EEXPIRED), or its scatter resolved and losers are cancelled
 * (RP_ECANCELLED).  0: run it. */
int rp__reply_skip(const rp__reply *r, int64_t now_ns);

#endif /* RP_FUTURE_INTERNAL_H */
