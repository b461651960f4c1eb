/* SPDX-License-Identifier: MIT */
/*
 * depth.h - the cluster routers' cache of depth reports (seed 001's
 * cluster variant of smallest-mailbox).  Private.
 *
 * Every node reports its pool's depth into the hash "<prefix>:depth"
 * (field = node id, value "depth:server_ms", stamped with Redis server
 * time).  A router reads all reports in one round trip per tick (TIME +
 * HGETALL, pipelined) into this cache, and routes synchronously from it.
 *
 * Staleness is judged in server time, so client clocks never matter: at
 * each refresh the cache keeps the server time TIME returned and the local
 * (injectable) monotonic clock's reading, and estimates the server time of
 * a later routing decision as server_at_refresh + (local_now -
 * local_at_refresh).  A report is stale when staleness_ms > 0 and its age
 * in that estimate exceeds staleness_ms; 0 means never stale.
 *
 * The cache is a pure module apart from its lock: no thread, no I/O except
 * rp__depth_refresh(), and a clock the tests can drive.
 */
#ifndef RP_CLUSTER_DEPTH_H
#define RP_CLUSTER_DEPTH_H

#include <hiredis.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "node.h"
#include "routepool/cluster.h"

/** Defaults of rp_cluster_router_options.refresh_ms / staleness_ms. */
#define RP__DEPTH_REFRESH_DEFAULT_MS 200
#define RP__DEPTH_STALENESS_DEFAULT_MS 1000
/** Most reports read per refresh (more fields are ignored). */
#define RP__DEPTH_MAX_ENTRIES 4096u

/** One node's report. */
typedef struct rp__depth_entry {
    char id[RP_CLUSTER_ID_MAX + 1];
    int64_t depth;     /* >= 0 */
    int64_t server_ms; /* server time of the report */
} rp__depth_entry;

/** A local monotonic clock in ms (rp_cluster_router_options.clock). */
typedef int64_t (*rp__clock_fn)(void *user);

typedef struct rp__depth_cache {
    pthread_mutex_t mu;        /* guards everything below */
    rp__depth_entry *e;        /* sorted by id, n entries */
    size_t n;
    bool warm;                 /* a refresh has been applied */
    int64_t server_at_refresh; /* TIME at the last refresh, ms */
    int64_t local_at_refresh;  /* clock() at the last refresh */
    int staleness_ms;          /* 0: never stale */
    rp__clock_fn clock;
    void *clock_user;
    uint64_t malformed;        /* report fields skipped as malformed */
} rp__depth_cache;

/**
 * Check a refresh interval and a staleness bound as rp_cluster_router_create
 * does: refresh_ms >= 1, staleness_ms >= 0, and a nonzero staleness below
 * the refresh interval is rejected (every report would be stale between
 * two ticks).  Messages name func and the fields (opts.refresh_ms,
 * opts.staleness_ms) and say when a value is the default.
 * @return 0 or RP_EINVAL.
 */
int rp__depth_validate(int refresh_ms, int staleness_ms, const char *func);

/** Initialise an empty (cold) cache.  clock NULL: CLOCK_MONOTONIC. */
void rp__depth_cache_init(rp__depth_cache *c, int staleness_ms, rp__clock_fn clock,
                          void *clock_user);
void rp__depth_cache_fini(rp__depth_cache *c);

/** Replace the cache's content with n reports read at server time
 *  server_now_ms (copied and sorted; duplicates keep the last).  The cache
 *  is warm afterwards, even when n is 0.  0 or RP_ENOMEM. */
int rp__depth_cache_apply(rp__depth_cache *c, const rp__depth_entry *entries, size_t n,
                          int64_t server_now_ms);

/** The cached depth of node id: >= 0, or -1 when the node has no report
 *  (cold cache, not reported) or its report is stale.  Thread-safe. */
int64_t rp__depth_cache_get(rp__depth_cache *c, const char *id);

/**
 * The nodes live at the last refresh: those whose report was at most
 * max_age_ms old by the server time of that refresh (not the clock: a
 * node's membership does not age between refreshes).  Sorted by id.
 * @param out  receives a malloc'd array (free()); NULL when *n is 0.
 * @return 0 or RP_ENOMEM.
 */
int rp__depth_cache_live(rp__depth_cache *c, int64_t max_age_ms, rp__depth_entry **out,
                         size_t *n);

/** The server time now as the cache estimates it (-1 while cold). */
int64_t rp__depth_cache_server_now(rp__depth_cache *c);

/**
 * Seed 001's scan over n readings: the start rotates with message_index
 * (start = message_index % n), the strictly smallest depth wins, the scan
 * stops at a depth of 0; a negative reading (no report, stale, stopped) is
 * skipped.  @return the index chosen, or -1 when no reading is usable (the
 * caller then falls back to round-robin).  Pure.
 */
int rp__depth_scan(const int64_t *depths, size_t n, uint64_t message_index);

/**
 * The cluster smallest-mailbox as an rp_strategy_fn (rp_strategy_custom(
 * rp__depth_strategy, NULL)): reads each routee with rp_routee_depth() -
 * a foreign routee's depth callback answers -1 for an unreported or stale
 * node, which rp_routee_depth() turns into RP_ENODEPTH - and runs
 * rp__depth_scan() with every negative reading and every stopped routee
 * skipped.  No usable reading: round-robin over the live routees (all
 * stopped: routees[start], which hands the job back).  user is unused.
 */
int rp__depth_strategy(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                       size_t *out);

/**
 * Parse the replies of TIME and HGETALL <prefix>:depth (untrusted: every
 * type, length and number is checked).  Malformed fields are skipped and
 * counted in *malformed; at most RP__DEPTH_MAX_ENTRIES are kept.
 * @param out  receives a malloc'd array of *n entries (free()); NULL when
 *             *n is 0.
 * @return 0, RP_EINVAL (TIME or HGETALL reply unusable), RP_ENOMEM.
 */
int rp__depth_parse(const redisReply *time_reply, const redisReply *hash_reply,
                    rp__depth_entry **out, size_t *n, int64_t *server_now_ms,
                    uint64_t *malformed);

/** One refresh: TIME + HGETALL key pipelined on conn, parsed, applied.
 *  @return 0, RP_EUNAVAILABLE (conn->err says why), RP_EINVAL, RP_ENOMEM.
 *  Not thread-safe on conn (the caller owns it). */
int rp__depth_refresh(rp__depth_cache *c, rp__conn *conn, const char *key);

#endif /* RP_CLUSTER_DEPTH_H */
