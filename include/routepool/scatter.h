/* SPDX-License-Identifier: MIT */
/*
 * routepool/scatter.h - scatter-gather-first-completed and tail-chopping
 * routers: ask every live routee, answer with the first reply.
 *
 * This is the hedged-request pattern: N routees do the whole job and the
 * caller gets the fastest answer.  It lowers the tail, it does not raise
 * throughput; use it for idempotent reads.
 *
 * Reply targets: rp_router_ask() (a future) or rp_router_tell_reply() (a
 * callback).  A bare rp_router_tell() has no reply target: nothing is
 * scattered, a warning is logged, the no-reply-target outcome is counted,
 * arg is handed back (on_undelivered, RP_ENOREPLY) and the call returns 0.
 *
 * Failure is always one aggregate error (RP_EAGGREGATE) whose message
 * starts with the router's name:
 *   "<name>: none of N routees replied within Tms"   every member timed out
 *   "<name>: all N routees failed"                    otherwise
 *   "<name>: no routees left to scatter to"           no live routee (no members)
 *   "<name>: stopped while the scatter was still open" router or pool stopped (no members)
 * Members are in scatter order, one per routee asked.
 *
 * Copies share arg.  A copy that never runs (a cancelled loser, an expired
 * copy, one a full mailbox refused) is handed back on its own through the
 * pool's on_undelivered, so arg may come back several times.
 */
#ifndef ROUTEPOOL_SCATTER_H
#define ROUTEPOOL_SCATTER_H

#include <stdbool.h>
#include <stdint.h>

#include "routepool/future.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Default scatter timeout, ms: just under RP_ASK_TIMEOUT_MS, so the
 *  caller is still listening when the aggregate error arrives. */
#define RP_SCATTER_TIMEOUT_MS 4500.0

/** Largest timeout_ms and interval_ms accepted, ms: 24 hours. */
#define RP_SCATTER_MS_MAX 86400000.0

typedef struct rp_scatter_gather_options {
    /** Deadline of one whole scatter, ms: positive, at most
     *  RP_SCATTER_MS_MAX.  Default RP_SCATTER_TIMEOUT_MS.  Keep the
     *  caller's ask timeout above it. */
    double timeout_ms;
    /** Skip losing copies still queued when the scatter resolves, and
     *  raise rp_job_cancelled() in running ones.  Default true.  With
     *  false, losers run to completion and their replies are dropped. */
    bool cancel_losers;
    /** 0: send to every live routee at once (scatter-gather).  > 0:
     *  tail-chopping - send to one routee (rotating start), and to the
     *  next each interval_ms without a reply (or at once when a copy
     *  fails), until one replies or timeout_ms passes.  0 to
     *  RP_SCATTER_MS_MAX. */
    double interval_ms;
} rp_scatter_gather_options;

/** Fill opts with the defaults above. */
void rp_scatter_gather_options_init(rp_scatter_gather_options *opts);

/**
 * Create a scatter-gather router over a pool's routees.
 * @param out      receives the router (caller-owned; rp_router_destroy(),
 *                 which fails every open scatter with "stopped ...").
 * @param pool     the pool (borrowed; outlives the router).
 * @param sg       scatter options (NULL: defaults); invalid values give
 *                 RP_EINVAL and rp_errmsg() names the field.
 * @param opts     router options (name, log, on_undelivered); strategy is
 *                 ignored.  NULL: defaults.
 * @return 0, RP_EINVAL, RP_ENOMEM.
 */
int rp_router_create_scatter_gather(rp_router **out, rp_pool *pool,
                                    const rp_scatter_gather_options *sg,
                                    const rp_router_options *opts);

/** Outcomes of a scatter, the label of the resolved counter. */
typedef enum rp_scatter_outcome {
    RP_SCATTER_FIRST = 0,
    RP_SCATTER_TIMEOUT,
    RP_SCATTER_ALL_FAILED,
    RP_SCATTER_STOPPED,
    RP_SCATTER_NO_REPLY_TARGET,
    RP_SCATTER_OUTCOMES
} rp_scatter_outcome;

/** Upper bounds (seconds) of the latency histogram buckets; +Inf last. */
#define RP_SCATTER_LATENCY_BUCKETS 12
extern const double rp_scatter_latency_bounds[RP_SCATTER_LATENCY_BUCKETS];

/** Counters of one scatter-gather router. */
typedef struct rp_scatter_stats {
    /** router_scatter_gather_resolved_total{outcome}. */
    uint64_t resolved[RP_SCATTER_OUTCOMES];
    /** router_scatter_gather_latency_seconds: scatter to answer, every
     *  outcome but no-reply-target.  Non-cumulative bucket counts; the
     *  last bucket is +Inf. */
    uint64_t latency_buckets[RP_SCATTER_LATENCY_BUCKETS + 1];
    uint64_t latency_count;
    double latency_sum_seconds;
    /** Losing copies skipped at dequeue (never run). */
    uint64_t cancelled;
} rp_scatter_stats;

/** Name of an outcome: "first", "timeout", "all-failed", "stopped",
 *  "no-reply-target". */
const char *rp_scatter_outcome_name(int outcome);

/**
 * Read a scatter-gather router's counters.
 * @return 0, or RP_EINVAL (NULL, or not a scatter-gather router).
 */
int rp_router_scatter_stats(const rp_router *router, rp_scatter_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_SCATTER_H */
