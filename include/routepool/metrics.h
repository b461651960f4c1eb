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
 * path, so their _count is a count of observations, not of jobs (their
 * HELP says so); every counter is exact.
 *
 * One page for a program: rp_metrics_write_page() writes any number of
 * pools as one valid exposition (each family's HELP and TYPE once, every
 * sample labelled pool="<name>"), then calls an extra writer for families
 * that are not a pool's (a cluster node's, the program's own).
 * docs/profiling.md ("Metrics") lists every family.
 *
 * Pool names are user bytes: in label values \, " and newline are
 * escaped as the format requires, and every byte that is not valid UTF-8,
 * and every other control character, is written as the text \xNN (so a
 * name "a<0xff>" reads pool="a\\xFF", the value a\xFF): the page is
 * always valid UTF-8.
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
    X(stole, RP_METRIC_COUNTER, "routepool_routee_steals_total",                    \
      "Jobs this routee stole from other routees' queues (it ran them).")           \
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

/** The depth histogram's family name: jobs already queued when a job was
 *  enqueued, in the unit of the routepool_routee_queued_jobs gauge. */
#define RP_METRICS_QUEUED_AT_ENQUEUE "routepool_routee_queued_jobs_at_enqueue"

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
    /** routepool_routee_queued_jobs_at_enqueue (sampled: one enqueue in
     *  RP_METRICS_SAMPLE; depth_count counts observations). */
    uint64_t depth_buckets[RP_DEPTH_BUCKETS];
    uint64_t depth_count, depth_sum;
    /** routepool_routee_queue_wait_seconds: enqueue to start (sampled:
     *  one job in RP_METRICS_SAMPLE; wait_count counts observations). */
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
 * A whole page for one pool: to publish several pools (or more families)
 * on one page use rp_metrics_write_page(); writing two pools' texts one
 * after the other repeats HELP and TYPE, which parsers reject.
 * @param pool  borrowed.  @param f  borrowed; written, not flushed.
 * @return 0, RP_EINVAL (NULL), RP_ENOMEM, RP_ESYS (write error).
 * Thread-safe (as rp_metrics_snapshot()).
 */
int rp_metrics_write_prometheus(rp_pool *pool, FILE *f);

/**
 * The same text in a buffer.
 * @param out  receives a NUL-terminated malloc'd string (free() it); NULL
 *             on failure.
 * @param len  receives its length (may be NULL).
 * @return as rp_metrics_write_prometheus().
 */
int rp_metrics_format_prometheus(rp_pool *pool, char **out, size_t *len);

/**
 * Writes more families onto a page after the pools' (see
 * rp_metrics_write_page()): each family it writes must have a name of its
 * own (not one routepool writes), with one # HELP and one # TYPE line
 * before its samples.  This is where a cluster node's families go.
 * @param f     the page's stream (borrowed for the call).
 * @param user  as given to rp_metrics_write_page().
 * @return 0, or a negative RP_E* code, which the page call returns.
 */
typedef int (*rp_metrics_writer_fn)(FILE *f, void *user);

/**
 * Write one page for several pools: every family once (HELP and TYPE
 * once), with the samples of pools[0], pools[1], ... in that order, each
 * labelled pool="<its name>"; then extra(f, user), when extra is not
 * NULL.  Every pool is snapshotted before anything is written, and extra
 * runs with no library lock held.
 * @param f       borrowed; written, not flushed.
 * @param pools   npools pools (borrowed for the call; the array too); each
 *                pool at most once, and no two with the same name (their
 *                series would collide).  npools may be 0 (then only extra
 *                writes, and pools may be NULL).
 * @param extra   NULL, or more families (rp_metrics_writer_fn).
 * @return 0, RP_EINVAL (f NULL, pools NULL with npools > 0, a NULL entry,
 *         two pools with one name: rp_errmsg() names the entries),
 *         RP_ENOMEM, RP_ESYS (write error), or what extra returned when
 *         it failed.
 * Thread-safe (as rp_metrics_snapshot()).
 *
 *     rp_pool *pools[] = {ingest, render};
 *     rp_metrics_write_page(out, pools, 2, NULL, NULL);
 */
int rp_metrics_write_page(FILE *f, rp_pool *const *pools, size_t npools,
                          rp_metrics_writer_fn extra, void *user);

/**
 * The same page in a buffer.
 * @param out  receives a NUL-terminated malloc'd string (free() it); NULL
 *             on failure.
 * @param len  receives its length (may be NULL).
 * @return as rp_metrics_write_page() (RP_EINVAL also when out is NULL).
 */
int rp_metrics_format_page(char **out, size_t *len, rp_pool *const *pools, size_t npools,
                           rp_metrics_writer_fn extra, void *user);

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_METRICS_H */
