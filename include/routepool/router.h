/* SPDX-License-Identifier: MIT */
/*
 * routepool/router.h - routers: a strategy applied to a list of routees.
 *
 * A pool router routes over its pool's routees; a group router routes over
 * a list given at creation, which may mix routees of several pools and
 * foreign routees.  Each router keeps one piece of state, the message index,
 * which rises by one per routed job (an atomic counter: many submitters may
 * route concurrently).
 *
 * Routers must be destroyed before the pools and foreign routees they route
 * to.  All functions are thread-safe except rp_router_destroy(), which must
 * not race with calls on the same router.
 */
#ifndef ROUTEPOOL_ROUTER_H
#define ROUTEPOOL_ROUTER_H

#include "routepool/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest router name, in bytes. */
#define RP_ROUTER_NAME_MAX 63u

/** Router options.  Initialise with rp_router_options_init(). */
typedef struct rp_router_options {
    /** Name used in log lines.  Copied.  Default "router". */
    const char *name;
    /** The strategy.  Default rp_strategy_round_robin(). */
    rp_strategy strategy;
    /** Receives jobs the router discards before any routee takes them (no
     *  routee chosen, a custom strategy's bad choice, a foreign routee that
     *  refuses, a fan-out copy a mailbox refused).  Default NULL: the
     *  callback of the pool of the routee involved is used (for a job no
     *  routee was chosen for: the router's pool; a group router without a
     *  pool only counts it, see rp_router_undelivered()). */
    rp_undelivered_fn on_undelivered;
    void *undelivered_user;
    /** Log callback.  Default NULL: the pool's (pool router) or stderr. */
    rp_log_fn log;
    void *log_user;
} rp_router_options;

/** Fill opts with the documented defaults (opts not NULL). */
void rp_router_options_init(rp_router_options *opts);

/**
 * Create a router over every routee of a pool.
 *
 * @param out   receives the router (caller-owned; rp_router_destroy()).
 * @param pool  the pool (borrowed; must outlive the router).
 * @param opts  options (borrowed for the call; NULL: defaults).
 * @return 0, RP_EINVAL (NULL out or pool, bad strategy: rp_errmsg() names
 *         it), RP_ENOMEM.
 */
int rp_router_create(rp_router **out, rp_pool *pool,
                     const rp_router_options *opts);

/**
 * Create a group router over a list of routees.
 *
 * @param out      receives the router (caller-owned).
 * @param routees  n routees (the array is copied; the routees are borrowed
 *                 and must outlive the router).  May be NULL when n is 0:
 *                 an empty group hands every job back with RP_ENOROUTEE
 *                 and logs a warning.
 * @param n        0..RP_ROUTEES_MAX.
 * @param opts     options (NULL: defaults).
 * @return 0, RP_EINVAL (NULL out, NULL routee in the list, n too large,
 *         bad strategy), RP_ENOMEM.
 */
int rp_router_create_group(rp_router **out, rp_routee *const *routees,
                           size_t n, const rp_router_options *opts);

/**
 * Route one unkeyed job.  Stealable unless the strategy pins it.
 * @return 0 when accepted (it runs, or is handed back exactly once:
 *         RP_ENOROUTEE when the strategy chose no routee, RP_ESTOPPED when
 *         every routee is stopped, RP_EINVAL for a custom strategy's bad
 *         choice, plus the mailbox reasons), or
 *   RP_EINVAL     NULL router or fn; consistent-hash router (needs a key);
 *   RP_EFULL      the chosen bounded mailbox rejected it;
 *   RP_ESHUTDOWN  rp_pool_shutdown() was called on the router's pool (for
 *                 a group router: on the pool of the routee it reached
 *                 last), also when some routee was stopped before; nothing
 *                 is accepted or handed back;
 *   RP_ENOMEM.
 * With a fan-out strategy (broadcast or custom) the call returns 0 once
 * the strategy chose its routees: every copy then runs or is handed back
 * with its own reason.
 */
int rp_router_tell(rp_router *router, rp_job_fn fn, void *arg);

/**
 * Route n jobs fn(args[0]) ... fn(args[n-1]) as n rp_router_tell() calls
 * would - the same routees, stealable, in order per routee - at a lower
 * cost per job: the jobs a chunk of the batch sends to one routee enter
 * its mailbox with one reservation and one wake-up.  With smallest-mailbox
 * and custom strategies each job still sees the earlier ones queued (no
 * saving in the pick, some in the call).
 *
 * Runs: a routee that takes a job of a batch also takes the jobs that
 * follow it in the same batch, up to 8 in all, with one queue operation,
 * and runs them in order.  Those 7 wait inside the routee: they still
 * count in rp_routee_depth(), a stop or an abort hands them back like
 * queued jobs, but no other routee can steal them.  A long job in a
 * batch therefore delays at most the 7 jobs after it; send jobs whose
 * costs vary widely as tells, or in smaller batches.
 *
 * Unlike rp_router_tell(), a job that cannot be queued is not left with
 * the caller: it is handed to the on_undelivered callback (the router's,
 * else the pool's) with its reason, so every job of the batch either runs
 * or comes back exactly once.  A bounded mailbox applies its overflow
 * policy to the jobs that did not fit.
 *
 * @param args  n job arguments (the array is borrowed for the call; each
 *              arg is the caller's until its job runs or is handed back).
 *              May be NULL when n is 0.
 * @return 0 when every job was queued (or handed back by a drop policy, as
 *         a tell returns 0 for that), or the code of the first job handed
 *         back for a reason a tell would have returned (RP_EFULL,
 *         RP_ESHUTDOWN, RP_ENOMEM; rp_errmsg() says so); or RP_EINVAL
 *         (NULL router, fn, or args with n > 0; consistent-hash router,
 *         which needs a key per job) before anything was routed.
 * A scatter-gather router hands every job back (RP_ENOREPLY), as for a
 * tell; a broadcast router fans each one out.  After rp_pool_shutdown()
 * every job is handed back with RP_ESHUTDOWN and the call returns
 * RP_ESHUTDOWN.  Thread-safe.
 */
int rp_router_tell_batch(rp_router *router, rp_job_fn fn, void *const *args, size_t n);

/**
 * Route one keyed job.  Keyed jobs are pinned (never stolen).  With a
 * strategy that maps a key to one routee - consistent hashing, or a custom
 * strategy that does so - jobs with one key from one submitter run in
 * submission order on one routee, never concurrently.  Other strategies
 * ignore the key (round-robin spreads one key over every routee); the key
 * still reaches custom strategies in the routing state.
 * @param key      the key bytes (borrowed for the call; not NULL).
 * @param key_len  length of the key, >= 1.
 * @return as rp_router_tell().
 */
int rp_router_tell_key(rp_router *router, const void *key, size_t key_len,
                       rp_job_fn fn, void *arg);

/**
 * Send one job to every live routee, whatever the router's strategy (the
 * seeds' Broadcast wrapper).  Each copy is pinned and shares arg; a copy
 * that cannot be delivered (full, stopped meanwhile, refused) is handed
 * back on its own, so arg may come back several times.
 * @return 0 when at least one routee was live: every copy then runs or is
 *         handed back; RP_ENOROUTEE when no routee is live (nothing sent,
 *         nothing handed back, arg still the caller's); RP_ESHUTDOWN when
 *         that is because the pool was shut down (likewise nothing sent);
 *         RP_EINVAL for NULL arguments.
 */
int rp_router_broadcast(rp_router *router, rp_job_fn fn, void *arg);

/** Number of routees in the router; 0 for NULL. */
size_t rp_router_size(const rp_router *router);

/** Jobs this router discarded before any routee took them (no routee,
 *  bad custom choice, foreign send refused). */
uint64_t rp_router_undelivered(const rp_router *router);

/** Free a router.  Accepts NULL.  Ignores a pool's default router. */
void rp_router_destroy(rp_router *router);

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_ROUTER_H */
