/* SPDX-License-Identifier: MIT */
/*
 * routepool/future.h - futures: the reply to an ask.
 *
 * An ask sends a job that answers with rp_job_reply() or fails with
 * rp_job_fail(); its future completes exactly once: fulfilled with a value
 * and the index of the routee that produced it, or failed with an rp_error.
 * A job that returns without replying fails its ask at once (RP_ENOREPLY);
 * a deadline passing fails it with RP_ETIMEDOUT even when nobody waits (the
 * pool's timer thread enforces deadlines), and an ask whose deadline passed
 * before its job started is not run at all.
 *
 * Reference counting: rp_router_ask() and rp_routee_ask() give the caller
 * one reference; the pool holds its own while the job is in flight.  Drop
 * yours with rp_future_release() once you are done with the value and the
 * error (both live as long as the future).  rp_future_create() makes a
 * future that the caller completes (a "promise") and gives two references,
 * one per side (see there).  Every function here is thread-safe.
 *
 * Values: by default a reply value is the asker's once the future is
 * fulfilled, and the future never frees it.  An owned value
 * (rp_job_reply_owned(), or rp_future_fulfil() with a free_fn) is freed by
 * the future at its last release unless someone took it with
 * rp_future_take_value() - also when the asker released the future before
 * the reply came.  A reply that comes too late (the future had already
 * completed) returns RP_ETIMEDOUT or RP_ECANCELLED and the value stays
 * the replier's.
 */
#ifndef ROUTEPOOL_FUTURE_H
#define ROUTEPOOL_FUTURE_H

#include <stddef.h>

#include "routepool/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rp_future rp_future;

/** Default ask timeout, in milliseconds. */
#define RP_ASK_TIMEOUT_MS 5000

/** Where a future stands. */
typedef enum rp_future_state {
    RP_FUTURE_PENDING = 0,
    RP_FUTURE_FULFILLED,
    RP_FUTURE_FAILED
} rp_future_state;

/** Why a future failed.  Owned by the future; valid while you hold it. */
typedef struct rp_error {
    /** RP_ETIMEDOUT, RP_ENOREPLY, RP_EAGGREGATE, a hand-back reason
     *  (RP_ESTOPPED, RP_ESHUTDOWN, RP_EDROPPED, ...), or the code a job
     *  passed to rp_job_fail(). */
    int code;
    /** Human-readable; never NULL. */
    const char *message;
    /** Routee the error came from, or -1. */
    int routee;
    /** RP_EAGGREGATE: nmembers member errors, one per routee asked, in
     *  scatter order (NULL when nmembers is 0); NULL for other codes. */
    const struct rp_error *members;
    size_t nmembers;
} rp_error;

/**
 * Wait for completion.
 * @param timeout_ms  -1 waits forever; 0 only checks.
 * @return 0 when complete (fulfilled or failed), RP_ETIMEDOUT when still
 *         pending, RP_EINVAL (NULL, timeout below -1).  Sleeps; no polling.
 */
int rp_future_wait(rp_future *f, int timeout_ms);

/** Completion callback: f is borrowed for the call (retain to keep it). */
typedef void (*rp_future_cb)(rp_future *f, void *user);

/**
 * Run cb exactly once when f completes: at once, in the calling thread, if
 * it already has; otherwise in the thread that completes it (a routee, the
 * timer thread, or a submitter).  The future stays alive until every
 * registered callback has run.  Callbacks must not block for long.
 * @return 0, RP_EINVAL (NULL f or cb), RP_ENOMEM.
 */
int rp_future_on_complete(rp_future *f, rp_future_cb cb, void *user);

/** RP_FUTURE_PENDING, _FULFILLED or _FAILED; RP_FUTURE_FAILED for NULL. */
rp_future_state rp_future_status(const rp_future *f);

/** The value given to rp_job_reply() (NULL while pending or failed, and
 *  once taken).  A plain value is the caller's once the future is
 *  fulfilled; an owned one stays the future's (valid while you hold a
 *  reference) unless you take it with rp_future_take_value(). */
void *rp_future_value(const rp_future *f);

/** Index of the routee that fulfilled the future, or -1. */
int rp_future_routee(const rp_future *f);

/** The failure, or NULL unless the future failed.  Owned by the future. */
const rp_error *rp_future_error(const rp_future *f);

/** Frees a reply value nobody took (see rp_job_reply_owned()).  Called
 *  once, at the future's last release, in whichever thread drops it; it
 *  must not call back into that future. */
typedef void (*rp_value_free_fn)(void *value);

/**
 * Take ownership of a fulfilled future's value: returns it, and the
 * future will not free it (an owned value) nor return it from
 * rp_future_value() any more.
 * @return the value; NULL when f is NULL, pending, failed, or the value
 *         was already taken (or was NULL).
 * Thread-safe: of several concurrent takers exactly one gets the value.
 */
void *rp_future_take_value(rp_future *f);

/** Take another reference.  Returns f. */
rp_future *rp_future_retain(rp_future *f);

/** Drop a reference; the last one frees the future (an ask's future goes
 *  back to its pool, which hands it out again to a later ask: do not touch
 *  f after your last release).  Accepts NULL.  Thread-safe. */
void rp_future_release(rp_future *f);

/**
 * Ask one job through a router: like rp_router_tell(), with a reply.
 * @param timeout_ms  > 0, or 0 for RP_ASK_TIMEOUT_MS.
 * @param out         receives the future (one reference, the caller's);
 *                    NULL on failure.
 * @return 0, or the codes of rp_router_tell() (then no future is made and
 *         arg stays the caller's).  On a scatter-gather router, see
 *         routepool/scatter.h.
 */
int rp_router_ask(rp_router *router, rp_job_fn fn, void *arg, int timeout_ms,
                  rp_future **out);

/** Ask one job of one routee (pinned).  As rp_router_ask(). */
int rp_routee_ask(rp_routee *routee, rp_job_fn fn, void *arg, int timeout_ms,
                  rp_future **out);

/**
 * Route a job and call reply(f, user) when its answer is in (or it
 * failed): an ask whose future the router holds for you.  On a
 * scatter-gather router this is the "tell with a reply target".
 * @return as rp_router_ask().
 */
int rp_router_tell_reply(rp_router *router, rp_job_fn fn, void *arg,
                         int timeout_ms, rp_future_cb reply, void *user);

/**
 * Inside a job: fulfil its ask with value.
 * @return 0 when value completed the ask (the asker now owns it);
 *   RP_EINVAL when the job was not asked (a tell) or already replied;
 *   RP_ETIMEDOUT / RP_ECANCELLED when the ask had already completed (timed
 *   out, or another routee won a scatter): value stays the job's to free.
 */
int rp_job_reply(rp_job_ctx *ctx, void *value);

/**
 * Inside a job: as rp_job_reply(), and the value is owned: when nobody
 * takes it with rp_future_take_value(), the future calls free_fn(value)
 * at its last release (also when the asker released the future before
 * the reply came, or released it without taking the value).
 * @param free_fn  the value's destructor; NULL: as rp_job_reply().
 * @return as rp_job_reply(): on RP_ETIMEDOUT / RP_ECANCELLED (the ask had
 *   already completed) the value stays the job's: free it yourself.
 */
int rp_job_reply_owned(rp_job_ctx *ctx, void *value, rp_value_free_fn free_fn);

/**
 * Inside a job: fail its ask at once with code (any int; routepool's own
 * codes are negative) and message (copied; may be NULL).
 * @return as rp_job_reply().
 */
int rp_job_fail(rp_job_ctx *ctx, int code, const char *message);

/** Inside a job: true once its scatter was won by another routee (and the
 *  router cancels losers), so a long job may stop early. */
bool rp_job_cancelled(const rp_job_ctx *ctx);

/*
 * Promises: futures completed by the caller, for work routepool does not
 * run itself (for example an ask answered over the network).  Complete
 * one with exactly one of rp_future_fulfil(), rp_future_fail() or
 * rp_future_fail_aggregate(); later calls, and the deadline, find it
 * complete and change nothing.  Waiting, callbacks, status, value and
 * error work as for an ask's future.
 */

/**
 * Create a pending future that the caller completes.
 * @param out        receives the future with TWO references: the
 *                   waiter's and the completer's.  Each side calls
 *                   rp_future_release() once when it is done with it (the
 *                   completer after its completion call, or when it gives
 *                   up; code that plays both parts releases twice).
 *                   NULL on failure.
 * @param pool       the pool whose timer thread enforces the deadline and
 *                   whose future heap provides the future (borrowed for
 *                   the call).  The future may outlive the pool; a future
 *                   still pending with a deadline when the pool is
 *                   destroyed fails with RP_ESHUTDOWN then.
 * @param timeout_ms > 0: the future fails with RP_ETIMEDOUT ("future timed
 *                   out") at the deadline, even when nobody waits; 0:
 *                   RP_ASK_TIMEOUT_MS; -1: no deadline.
 * @return 0; RP_EINVAL (out or pool NULL, timeout_ms below -1);
 *         RP_ENOMEM; RP_ESHUTDOWN (the pool was shut down).
 * Thread-safe.
 */
int rp_future_create(rp_future **out, rp_pool *pool, int timeout_ms);

/**
 * Fulfil a pending future with value, produced by routee index routee
 * (or -1: none).
 * @param free_fn  NULL: the value is the waiter's once fulfilled (as
 *                 rp_job_reply()); else the future calls free_fn(value)
 *                 at its last release unless rp_future_take_value() took
 *                 it (as rp_job_reply_owned()).
 * @return 0 when this call completed the future; RP_ETIMEDOUT when it had
 *         already timed out, RP_ECANCELLED when it had already completed
 *         otherwise (in both cases the value stays the caller's: free it
 *         yourself); RP_EINVAL (f NULL, routee below -1).
 * Thread-safe: of racing completers (and the deadline) exactly one wins.
 */
int rp_future_fulfil(rp_future *f, int routee, void *value, rp_value_free_fn free_fn);

/**
 * Fail a pending future with code (any int) and message (copied; NULL:
 * rp_strerror(code)), from routee index routee (or -1).
 * @return as rp_future_fulfil(), and RP_ENOMEM (nothing changed).
 */
int rp_future_fail(rp_future *f, int routee, int code, const char *message);

/**
 * Fail a pending future with an aggregate error (RP_EAGGREGATE, routee
 * -1): message copied (NULL: rp_strerror(RP_EAGGREGATE)), the n members
 * deep-copied (their messages, and their own members up to 8 levels
 * deep; a NULL member message becomes rp_strerror(code)).  n may be 0,
 * members NULL then.
 * @return as rp_future_fulfil(); RP_EINVAL also for members NULL with
 *         n > 0 or nesting deeper than 8; RP_ENOMEM (nothing changed).
 */
int rp_future_fail_aggregate(rp_future *f, const char *message,
                             const rp_error *members, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_FUTURE_H */
