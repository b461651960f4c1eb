/* SPDX-License-Identifier: MIT */
/*
 * future.h - futures, private side.  Private.
 */
#ifndef RP_FUTURE_INTERNAL_H
#define RP_FUTURE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "reply.h"

/* A reply into a future (reply.h): its target is an rp_future *. */
extern const rp__reply_ops rp__future_reply_ops;

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
/* As rp__future_fulfil_owned(); won(ctx) runs under f->mu once this call
 * has won, before anyone can see the value (library code only: it must
 * not block or take locks). */
bool rp__future_fulfil_hook(rp_future *f, void *value, rp_value_free_fn free_fn, int routee,
                            void (*won)(void *ctx), void *ctx);
bool rp__future_fail(rp_future *f, int code, int routee, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fail with an aggregate: takes members (an array of n, messages malloc'd)
 * whatever happens. */
bool rp__future_fail_aggregate(rp_future *f, char *message, rp_error *members,
                               size_t n);
bool rp__future_pending(const rp_future *f);

/* A completion callback's registration, allocated apart so that a caller
 * can allocate it before it sends anything (rp_router_tell_reply). */
typedef struct rp__callback rp__callback;
/* 0 or RP_ENOMEM (rp_errmsg() not set). */
int rp__callback_new(rp__callback **out, rp_future_cb cb, void *user);
/* Free one never registered.  Accepts NULL. */
void rp__callback_free(rp__callback *c);
/* rp_future_on_complete() with c (taken), which cannot fail. */
void rp__future_on_complete_with(rp_future *f, rp__callback *c);

struct rp__timer;
/* Fail f with RP_ETIMEDOUT at deadline_ns unless it completes first (then
 * the timer entry is removed at once).  No-op when already armed. */
void rp__future_arm(rp_future *f, struct rp__timer *timer, int64_t deadline_ns);

/* Asks: validate timeout_ms (0: RP_ASK_TIMEOUT_MS) and compute the
 * absolute deadline.  0 or RP_EINVAL (rp_errmsg() names func). */
int rp__ask_timeout(int timeout_ms, int64_t *deadline_ns, const char *func);
/* Make the future of an ask, from heap (NULL: malloc): *out gets the
 * caller's reference, reply the job's; timer (when not NULL) holds a
 * third until the future completes or deadline_ns fails it.  0 or
 * RP_ENOMEM. */
int rp__ask_begin(rp__future_heap *heap, struct rp__timer *timer, int64_t deadline_ns,
                  rp__reply *reply, rp_future **out, const char *func);
/* The ask's job was not accepted: undo rp__ask_begin(). */
void rp__ask_abort(rp__reply *reply, rp_future **out);

#endif /* RP_FUTURE_INTERNAL_H */
