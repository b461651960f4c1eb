/* SPDX-License-Identifier: MIT */
/*
 * routepool/metrics.h - a pool's metrics: snapshot struct and Prometheus
 * text exposition, both generated from one list of definitions.
 *
 * Writers bump relaxed per-routee counters on cache lines of their own;
 * readers take snapshots.  A snapshot reads every counter once, the
 * "finished" counters (run, handed back) of every routee before the
 * "accepted" ones (enqueued) of any, so pool-wide
 * sum(run) + sum(handed back) <= submitted + sum(rerouted) holds in every
 * snapshot, whatever runs concurrently.  Safe and cheap while the pool runs
 * (no lock taken on any job path).
 *
 * Sampling: the depth histogram and the queue-wait histogram observe one
 * enqueue in RP_METRICS_SAMPLE (per routee), to keep clocks off the hot
 * path; every counter is exact.
 */
#ifndef ROUTEPOOL_METRICS_H
#define ROUTEPOOL_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "routepool/scatter.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One enqueue in this many feeds the depth and wait histograms. */
#define RP_METRICS_SAMPLE 16

/*
 * Per-routee scalar metrics: X(field, type, prometheus name, help).
 * type is RP_METRIC_GAUGE or RP_METRIC_COUNTER.  Each becomes a uint64_t
 * field of rp_routee_metrics and one Prometheus family with the labels
 * pool and routee.
 */
#define RP_ROUTEE_METRICS(X)                                                        \
    X(depth, RP_METRIC_GAUGE, "routepool_routee_queued_jobs",                       \
      "Jobs queued on the routee, not counting the one it runs.")                   \
    X(busy, RP_METRIC_GAUGE, "routepool_routee_busy",                               \
      "1 while the routee runs a job, else 0.")                                     \
    X(enqueued, RP_METRIC_COUNTER, "routepool_routee_enqueued_total",               \
      "Jobs accepted into the routee's mailbox.")                                   \
    X(run, RP_METRIC_COUNTER, "routepool_routee_jobs_run_total",                    \
      "Jobs the routee ran, its own and stolen ones.")                              \
    X(stolen_from, RP_METRIC_COUNTER, "routepool_routee_stolen_from_total",         \
      "Jobs other routees stole from this routee's queue.")                         \
    X(stole, RP_METRIC_COUNTER, "routepool_routee_stolen_total",                    \
      "Jobs this routee stole from other routees.")                                 \
    X(rejected, RP_METRIC_COUNTER, "routepool_routee_rejected_total",               \
      "Submits refused because the bounded mailbox was full (RP_EFULL).")           \
    X(rerouted, RP_METRIC_COUNTER, "routepool_routee_rerouted_total",               \
      "Stealable jobs moved to live routees when this routee stopped.")             \
    X(sleeps, RP_METRIC_COUNTER, "routepool_routee_sleeps_total",                   \
      "Times the routee found no work, even after its idle spin, and slept.")

enum { RP_METRIC_GAUGE = 0, RP_METRIC_COUNTER = 1, RP_METRIC_HISTOGRAM = 2 };

/*
 * Reasons a job is handed back, as Prometheus label values:
 * X(code, label).  routepool_routee_handed_back_total{reason} counts
 * every one; routepool_routee_dropped_total{reason} the two overflow ones.
 */
#define RP_HANDBACK_REASONS(X)                                                      \
    X(RP_EDROPPED, "drop-new")                                                      \
    X(RP_EEVICTED, "drop-head")                                                     \
    X(RP_ESTOPPED, "stopped")                                                       \
    X(RP_ESHUTDOWN, "shutdown")                                                     \
    X(RP_EEXPIRED, "expired")                                                       \
    X(RP_ECANCELLED, "cancelled")

#define RP__COUNT_REASON(code, label) +1
/** Number of hand-back reasons. */
#define RP_METRICS_REASONS (0 RP_HANDBACK_REASONS(RP__COUNT_REASON))

/** Depth histogram: upper bounds 1, 2, 5, ... 10000, then +Inf. */
#define RP_DEPTH_BUCKETS 14
/** Queue-wait histogram: upper bounds in seconds, 1 us ... 10 s, then +Inf. */
#define RP_WAIT_BUCKETS 23

extern const double rp_metrics_depth_bounds[RP_DEPTH_BUCKETS - 1];
extern const double rp_metrics_wait_bounds[RP_WAIT_BUCKETS - 1];
extern const int rp_metrics_reason_codes[RP_METRICS_REASONS];
extern const char *const rp_metrics_reason_labels[RP_METRICS_REASONS];

/** One routee's metrics.  Histogram buckets are NOT cumulative here (the
 *  Prometheus writer accumulates them); the last bucket is +Inf. */
typedef struct rp_routee_metrics {
#define RP__METRIC_FIELD(field, type, name, help) uint64_t field;
    RP_ROUTEE_METRICS(RP__METRIC_FIELD)
#undef RP__METRIC_FIELD
    /** routepool_routee_busy_seconds_total: time spent running jobs,
     *  including the job running at the snapshot. */
    double busy_seconds;
    /** Hand-backs by reason, indexed like rp_metrics_reason_codes. */
    uint64_t handed_back[RP_METRICS_REASONS];
    /** routepool_routee_depth_at_enqueue (sampled). */
    uint64_t depth_buckets[RP_DEPTH_BUCKETS];
    uint64_t depth_count, depth_sum;
    /** routepool_routee_queue_wait_seconds: enqueue to start (sampled). */
    uint64_t wait_buckets[RP_WAIT_BUCKETS];
    uint64_t wait_count;
    double wait_sum_seconds;
} rp_routee_metrics;

/** A pool's metrics. */
typedef struct rp_metrics {
    /** routepool_pool_routees. */
    uint64_t routees;
    /** routepool_pool_submitted_total: jobs the pool accepted (queued, or
     *  handed back under drop-new); a job re-routed at a stop counts once. */
    uint64_t submitted;
    /** routepool_pool_memory_bytes: bytes the pool's private jemalloc arena
     *  has allocated (0 when the arena is not jemalloc's). */
    uint64_t memory_bytes;
    /** The scatter-gather families, summed over the pool's scatter-gather
     *  routers (the seed's families carry no router label). */
    rp_scatter_stats scatter;
    /** routees entries, owned by the snapshot: rp_metrics_release(). */
    rp_routee_metrics *routee;
} rp_metrics;

/**
 * Take a snapshot.
 * @param pool  the pool (borrowed).
 * @param out   filled; release with rp_metrics_release().
 * @return 0, RP_EINVAL (NULL), RP_ENOMEM.
 * Thread-safe; takes no lock on any job path.
 */
int rp_metrics_snapshot(rp_pool *pool, rp_metrics *out);

/** Free what a snapshot allocated.  Accepts NULL and zeroed structs. */
void rp_metrics_release(rp_metrics *m);

/**
 * Write the pool's metrics in the Prometheus text exposition format
 * (version 0.0.4): for every family a # HELP and a # TYPE line, then its
 * samples with the labels pool and routee (and reason, outcome, le).
 * @return 0, RP_EINVAL (NULL), RP_ENOMEM, RP_ESYS (write error).
 */
int rp_metrics_write_prometheus(rp_pool *pool, FILE *f);

/**
 * The same text in a buffer.
 * @param out  receives a NUL-terminated malloc'd string (free() it).
 * @param len  receives its length (may be NULL).
 * @return as rp_metrics_write_prometheus().
 */
int rp_metrics_format_prometheus(rp_pool *pool, char **out, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_METRICS_H */
