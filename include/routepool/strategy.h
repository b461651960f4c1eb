/* SPDX-License-Identifier: MIT */
/*
 * routepool/strategy.h - routing strategies as pure functions.
 *
 * A strategy looks at the routee list and the routing state of one job
 * ({message_index, key}) and writes the indices of the routees that should
 * receive it: 0 choices discards the job (it is handed back with
 * RP_ENOROUTEE), 1 routes it, several fan it out.  Strategies hold no
 * threads and no mutable state: given the same routees (and the same depth
 * readings) and the same state they return the same answer, so they can be
 * tested, and simulated, without a pool.
 *
 * A strategy is described by an rp_strategy value built by one of the
 * rp_strategy_* constructors below and evaluated by rp_strategy_pick().
 * Routers copy the description at creation.
 */
#ifndef ROUTEPOOL_STRATEGY_H
#define ROUTEPOOL_STRATEGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A routee: a worker thread of a pool, or a foreign routee.  Opaque. */
typedef struct rp_routee rp_routee;

/** Largest number of routees in a pool or a group router. */
#define RP_ROUTEES_MAX 4096u

/** Largest weight of one routee in a weighted strategy. */
#define RP_WEIGHT_MAX 1000000u

/** The routing state of one job, as a strategy sees it. */
typedef struct rp_route_state {
    /** In: rises by one per job routed by the router (unique per job). */
    uint64_t message_index;
    /** In: the job's key, or NULL for an unkeyed job (borrowed). */
    const void *key;
    /** In: length of key in bytes. */
    size_t key_len;
    /** In: 64-bit xxHash (XXH3) of the key; 0 when key is NULL. */
    uint64_t key_hash;
    /** Out: a strategy sets this to pin the job to the routee(s) it chose.
     *  Keyed jobs and broadcast copies are always pinned. */
    bool pinned;
} rp_route_state;

/**
 * A user-written strategy.
 *
 * @param user     the pointer given to rp_strategy_custom().
 * @param state    routing state of this job; the function may set
 *                 state->pinned.
 * @param routees  the router's routees (borrowed; n entries).
 * @param n        number of routees, 0..RP_ROUTEES_MAX.
 * @param out      room for n routee indices.
 * @return the number of indices written to out (0..n), or a negative
 *         number to refuse the job.  An index >= n, a count > n or a
 *         negative return dead-letters the job with RP_EINVAL; it never
 *         crashes the router.
 *
 * Called concurrently from every thread that routes through the router:
 * it must be thread-safe.
 */
typedef int (*rp_strategy_fn)(void *user, rp_route_state *state,
                              rp_routee *const *routees, size_t n,
                              size_t *out);

/** Which built-in strategy an rp_strategy describes. */
typedef enum rp_strategy_kind {
    RP_STRATEGY_ROUND_ROBIN = 0,
    RP_STRATEGY_RANDOM,
    RP_STRATEGY_BROADCAST,
    RP_STRATEGY_SMALLEST_MAILBOX,
    RP_STRATEGY_CONSISTENT_HASH,
    RP_STRATEGY_WEIGHTED,
    RP_STRATEGY_CUSTOM
} rp_strategy_kind;

/**
 * Description of a strategy.  A plain value: copy it freely.  Build it with
 * a constructor below rather than by hand; the fields are public so a
 * debugger and a test can read them.
 */
typedef struct rp_strategy {
    rp_strategy_kind kind;
    /** RP_STRATEGY_RANDOM, RP_STRATEGY_CONSISTENT_HASH: the seed. */
    uint64_t seed;
    /** RP_STRATEGY_WEIGHTED: one weight per routee (borrowed; the router
     *  copies it at creation).  NULL for every other kind. */
    const unsigned *weights;
    /** RP_STRATEGY_WEIGHTED: number of weights. */
    size_t nweights;
    /** RP_STRATEGY_WEIGHTED: sum of the weights, and a stride coprime to it
     *  that interleaves the slots (computed by rp_strategy_weighted()). */
    uint64_t weight_total, weight_stride;
    /** RP_STRATEGY_WEIGHTED, optional: weight_ends[i] = weights[0] + ... +
     *  weights[i] (nweights entries, borrowed).  With it a pick is a binary
     *  search, O(log n); without it (NULL, as rp_strategy_weighted() leaves
     *  it) a walk over the weights, O(n).  Routers fill their own copy. */
    const uint64_t *weight_ends;
    /** RP_STRATEGY_CUSTOM: the function and its user pointer. */
    rp_strategy_fn custom;
    void *custom_user;
} rp_strategy;

/**
 * Round-robin: job i goes to routees[i % n].  A stopped routee is skipped
 * (the next live one in order takes the job).  Pure; thread-safe.
 */
rp_strategy rp_strategy_round_robin(void);

/**
 * Uniform random choice, derived from (seed, message_index) with no shared
 * generator state: thread-safe without a lock, and the same seed over the
 * same message indices reproduces the same choices.  Stopped routees are
 * skipped (the next live one in order takes the job).
 */
rp_strategy rp_strategy_random(uint64_t seed);

/** Broadcast: every live routee receives a pinned copy of the job. */
rp_strategy rp_strategy_broadcast(void);

/**
 * Smallest mailbox.  The scan starts at message_index % n and keeps the
 * routee with the strictly smallest score, stopping at the first score of
 * 0.  A job that submits through its own pool's router starts the scan at
 * its own routee instead (message_index is that routee's index, and the
 * router's shared index does not move): a tie goes to the submitting
 * routee, whose tell to itself is the cheapest there is (the job waits
 * for its teller's job to end, and stays stealable).  The score is the queued depth plus one while the routee is running a
 * job (counted from the moment it takes the job, so the score does not dip
 * between the take and the start; an idle routee looking for work scores
 * its depth only: on an idle pool every score is 0 and the strategy picks
 * exactly what round-robin picks).  A stopped routee is skipped; a routee whose depth cannot be read (a
 * foreign routee without a depth callback, or one whose callback fails)
 * scores 0.  When every routee is stopped the job goes to routees[start],
 * which hands it back with RP_ESTOPPED (observable, never silent).
 */
rp_strategy rp_strategy_smallest_mailbox(void);

/**
 * Consistent hashing by rendezvous (highest random weight): each live
 * routee scores XXH3(key_hash, routee identity) and the highest wins.  The
 * same key always reaches the same live routee; stopping a routee moves only
 * the keys it owned.  Jobs routed by key are pinned.  Unkeyed jobs are
 * refused by the router (RP_EINVAL): use rp_router_tell_key().
 */
rp_strategy rp_strategy_consistent_hash(uint64_t seed);

/**
 * Weighted round-robin: routee i receives weights[i] of every
 * sum(weights) consecutive jobs, interleaved rather than in runs.  Stopped
 * routees are skipped.
 *
 * @param weights  n weights, each 0..RP_WEIGHT_MAX, at least one non-zero
 *                 (borrowed until the strategy is given to a router, which
 *                 copies them).  The count must equal the router's routee
 *                 count; rp_router_create() checks (RP_EINVAL).
 * @param n        number of weights.
 * Invalid weights are reported by rp_router_create(), not here.
 */
rp_strategy rp_strategy_weighted(const unsigned *weights, size_t n);

/**
 * A user-written strategy; see rp_strategy_fn.
 * @param fn    the function (NULL is reported by rp_router_create()).
 * @param user  passed to fn unchanged; owned by the caller, who keeps it
 *              alive while any router uses the strategy.
 */
rp_strategy rp_strategy_custom(rp_strategy_fn fn, void *user);

/**
 * Evaluate a strategy for one job: the pure function routers call.
 *
 * @param s        the strategy.
 * @param state    routing state of the job (state->pinned may be set).
 * @param routees  n routees (borrowed).
 * @param out      room for n indices.
 * @return the number of indices written (0..n), or RP_EINVAL when s or
 *         state is NULL, routees or out is NULL with n > 0, s->kind is not
 *         an rp_strategy_kind, a custom strategy has no function or made an
 *         invalid choice, an unkeyed job reached a consistent-hash
 *         strategy, or the weights do not match n; rp_errmsg() then names
 *         rp_strategy_pick and the field.
 *
 * Reads routee depth, busy and stopped flags but changes nothing.
 * Thread-safe.
 */
int rp_strategy_pick(const rp_strategy *s, rp_route_state *state,
                     rp_routee *const *routees, size_t n, size_t *out);

/** Human-readable name of a strategy kind, e.g. "smallest-mailbox". */
const char *rp_strategy_name(rp_strategy_kind kind);

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_STRATEGY_H */
