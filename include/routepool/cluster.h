/* SPDX-License-Identifier: MIT */
/*
 * routepool/cluster.h - routepool pools on many machines, joined through
 * Redis (libroutepool-cluster; link routepool-cluster, which links
 * routepool and hiredis).
 *
 * A node is one process's membership in a deployment (a Redis server and a
 * key prefix).  A node with a pool runs cluster jobs: a handler name plus a
 * byte payload, registered with rp_cluster_handle() and run on the pool.
 * A node without a pool (client-only) sends tells and asks and receives
 * replies, but runs nothing and is not a member.
 *
 * Delivery is at-least-once.  Each node has an inbox stream in Redis; it
 * fetches only as many entries as it has free slots (bounded prefetch), so
 * backlog stays in Redis, and it acknowledges an entry after its job ran.
 * When a node dies (its depth report is older than dead_after_ms), a
 * survivor claims its fetched and unread entries and moves them to live
 * nodes: a job may then run twice (rp_cluster_job_deliveries() > 1; counted
 * as duplicates).  An entry delivered more than max_deliveries times goes to
 * the deployment's dead-letter stream instead of running again.
 *
 * SIGPIPE: hiredis 0.14 writes to sockets without MSG_NOSIGNAL, so a write
 * to a Redis that died would kill the process.  rp_cluster_join() therefore
 * sets SIGPIPE to SIG_IGN when its disposition is SIG_DFL (a handler or
 * SIG_IGN the program installed is left alone).
 *
 * Everything read from Redis is untrusted: entries are length-checked and
 * payloads capped; a malformed entry is acknowledged, counted and logged.
 *
 * Error codes: besides the core's, RP_EEXIST (a live node has the id),
 * RP_EUNAVAILABLE (Redis cannot be reached now; nothing was sent) and
 * RP_ENOHANDLER (no handler of that name on the node that got the job).
 * Every failing call sets rp_errmsg().
 */
#ifndef ROUTEPOOL_CLUSTER_H
#define ROUTEPOOL_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "routepool/error.h"
#include "routepool/future.h"
#include "routepool/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A node: one process's membership of a deployment. */
typedef struct rp_cluster_node rp_cluster_node;

/** A cluster job, as its handler sees it.  Borrowed; valid during the
 *  handler call only. */
typedef struct rp_cluster_job rp_cluster_job;

/** Longest node id, handler name and key prefix, in bytes. */
#define RP_CLUSTER_ID_MAX 128u
#define RP_CLUSTER_HANDLER_MAX 64u
#define RP_CLUSTER_PREFIX_MAX 64u
/** Default and largest payload cap (rp_cluster_options.max_payload). */
#define RP_CLUSTER_PAYLOAD_DEFAULT ((size_t)1 << 20)
#define RP_CLUSTER_PAYLOAD_MAX ((size_t)256 << 20)

/** Node options.  Initialise with rp_cluster_options_init(). */
typedef struct rp_cluster_options {
    /** Redis address: "host:port", "host" (port 6379), or a unix socket
     *  path ("/run/redis.sock" or "unix:/run/redis.sock").  Copied.
     *  Default "127.0.0.1:6379". */
    const char *redis;
    /** ACL user (NULL: "default" / no user) and password (NULL: no AUTH).
     *  Copied; re-sent after every reconnect. */
    const char *user;
    const char *password;
    /** Key prefix of the deployment: keys are "<prefix>:...".  Two
     *  deployments on one Redis never collide.  1..RP_CLUSTER_PREFIX_MAX
     *  bytes of [A-Za-z0-9_.-].  Default "rp". */
    const char *prefix;
    /** Node id: 1..RP_CLUSTER_ID_MAX bytes of [A-Za-z0-9_.:-].  NULL
     *  (default): "<hostname>:<pid>".  Joining with the id of a live node
     *  fails RP_EEXIST. */
    const char *node_id;
    /** Connect timeout and command timeout, in ms (both > 0; the command
     *  timeout must exceed the blocking reads' 100 ms).  Defaults 1000 and
     *  2000.  Re-applied after every reconnect. */
    int connect_timeout_ms;
    int command_timeout_ms;
    /** Depth-report (heartbeat) interval, ms, >= 1.  Default 200. */
    int heartbeat_ms;
    /** A node whose report is older than this (server time) is dead and
     *  its entries are moved to live nodes.  > heartbeat_ms.  Default
     *  3000. */
    int dead_after_ms;
    /** Deliveries after which an entry goes to the dead-letter stream
     *  instead of running again (1..1000).  Default 5.  Redis counts
     *  deliveries, not blame: every entry a node had fetched when it died
     *  is charged one, the innocent ones beside the poison too; a small
     *  max_inflight narrows that. */
    unsigned max_deliveries;
    /** Payload cap, in bytes, for sending and receiving
     *  (0..RP_CLUSTER_PAYLOAD_MAX).  Default RP_CLUSTER_PAYLOAD_DEFAULT. */
    size_t max_payload;
    /** Entries fetched and not yet finished at most (the prefetch bound):
     *  XREADGROUP asks for max_inflight minus what runs or waits in the
     *  pool.  0 (default): 2 x the pool's routees. */
    unsigned max_inflight;
    /** Log callback (warnings: malformed entries, reconnects).  Default
     *  NULL: stderr. */
    rp_log_fn log;
    void *log_user;
} rp_cluster_options;

/** Fill opts with the defaults above.  opts must not be NULL. */
void rp_cluster_options_init(rp_cluster_options *opts);

/**
 * Join a deployment.
 *
 * Connects (three connections for a member: fetch, send, heartbeat; plus
 * one for replies), takes the liveness lease of the id, reports depth and
 * starts the heartbeat.  A member does not fetch until rp_cluster_start(),
 * so handlers can be registered first.
 *
 * @param out   receives the node (caller-owned; release with
 *              rp_cluster_leave()); NULL on failure.
 * @param pool  the pool that runs the node's jobs (borrowed: it must
 *              outlive the node; use an unbounded or RP_OVERFLOW_REJECT
 *              pool), or NULL for a client-only node.
 * @param opts  options (borrowed for the call; NULL: defaults).
 * @return 0, or RP_EINVAL (a field is invalid; rp_errmsg() names it),
 *         RP_EEXIST (a live node has this id), RP_EUNAVAILABLE (Redis
 *         cannot be reached, or refused AUTH), RP_ENOMEM, RP_ESYS (thread).
 * Thread-safe.
 */
int rp_cluster_join(rp_cluster_node **out, rp_pool *pool,
                    const rp_cluster_options *opts);

/**
 * Start fetching this member's inbox.  Idempotent.
 * @return 0, or RP_EINVAL (NULL node, or a client-only node).
 * Thread-safe.
 */
int rp_cluster_start(rp_cluster_node *node);

/**
 * Leave gracefully and free the node: stop fetching, let the jobs that run
 * finish, hand fetched jobs that did not start (and the unread inbox) to
 * live members, leave the membership, close the connections.  With no
 * other live member the entries stay in the inbox and the id in the member
 * set, and the next node to join recovers them.  Pending asks made through
 * the node fail with RP_ESHUTDOWN (their futures stay valid until the
 * callers release them).  Waits for running jobs.  Accepts NULL.  Must not
 * be called from one of the node's jobs, nor while other threads still use
 * the node; the pool must still be running.
 */
void rp_cluster_leave(rp_cluster_node *node);

/** The node's id (borrowed, valid until rp_cluster_leave()). */
const char *rp_cluster_node_id(const rp_cluster_node *node);

/** A handler: runs one job on a routee of the node's pool.  It may reply
 *  (rp_cluster_job_reply()) or fail (rp_cluster_job_fail()); an ask whose
 *  handler does neither fails with RP_ENOREPLY. */
typedef void (*rp_cluster_handler_fn)(rp_cluster_job *job, void *user);

/**
 * Register (or replace) the handler for name.
 * @param name  1..RP_CLUSTER_HANDLER_MAX bytes, copied.
 * @param fn    the handler (not NULL); user is passed to it (caller-owned).
 * @return 0, RP_EINVAL (NULL node/name/fn, bad name, client-only node),
 *         RP_ENOMEM.
 * Thread-safe; a job already running keeps the handler it started with.
 */
int rp_cluster_handle(rp_cluster_node *node, const char *name,
                      rp_cluster_handler_fn fn, void *user);

/* ---- inside a handler (job is borrowed for the call) ---- */

/** The payload (borrowed; NUL-terminated for convenience, not counted
 *  in *len) and its length (len may be NULL). */
const void *rp_cluster_job_payload(const rp_cluster_job *job, size_t *len);
/** The job id, unique per submit: "<origin node>:<seq>", the sequence
 *  starting at the sending node's join time (server ms x 1024), so a node
 *  that rejoins under the same id does not reuse ids (borrowed). */
const char *rp_cluster_job_id(const rp_cluster_job *job);
/** The handler name the job was sent to (borrowed). */
const char *rp_cluster_job_handler(const rp_cluster_job *job);
/** The key the job was sent with and its length, or NULL (borrowed). */
const void *rp_cluster_job_key(const rp_cluster_job *job, size_t *len);
/** How many times the entry has been delivered, this time included: 1
 *  normally, more after a node died while holding it. */
unsigned rp_cluster_job_deliveries(const rp_cluster_job *job);
/** True when the job may have run before (deliveries > 1). */
bool rp_cluster_job_duplicate(const rp_cluster_job *job);
/** True for an ask (a reply is expected). */
bool rp_cluster_job_is_ask(const rp_cluster_job *job);
/** The core job context of the routee running it (borrowed). */
rp_job_ctx *rp_cluster_job_ctx(rp_cluster_job *job);

/**
 * Reply to an ask with len bytes (copied; data may be NULL when len is 0).
 * @return 0, RP_EINVAL (not an ask, already answered, len over the node's
 *         max_payload), RP_EUNAVAILABLE (Redis down: the reply is lost, the
 *         asker times out), RP_ENOMEM.
 */
int rp_cluster_job_reply(rp_cluster_job *job, const void *data, size_t len);

/**
 * Fail the job with code (any negative int) and message (copied, may be
 * NULL).  An ask's future fails with them; a tell is acknowledged and
 * counted as failed, not retried.
 * @return 0, RP_EINVAL (already answered), RP_EUNAVAILABLE.
 */
int rp_cluster_job_fail(rp_cluster_job *job, int code, const char *message);

/* ---- sending straight to one node (routers: see below) ---- */

/**
 * Tell node target (a member's id) to run handler with payload.
 * @param key  optional key carried with the job (NULL, key_len 0).
 * @return 0 once Redis stored the entry (it will run at least once, or end
 *         in the dead-letter stream), or RP_EINVAL (NULL/bad argument,
 *         payload over max_payload), RP_ENOROUTEE (target is not a member:
 *         nothing was stored), RP_EUNAVAILABLE (Redis unreachable: nothing
 *         was stored), RP_ENOMEM.  While Redis is down calls fail fast: at
 *         once during the reconnect backoff (50 ms doubling to 1 s), within
 *         connect_timeout_ms when a reconnect is due.
 * Thread-safe (sends share one pipelined connection).
 */
int rp_cluster_tell_node(rp_cluster_node *node, const char *target,
                         const char *handler, const void *payload, size_t len,
                         const void *key, size_t key_len);

/**
 * Ask node target: as rp_cluster_tell_node() with a reply.
 * @param timeout_ms  > 0, 0 for RP_ASK_TIMEOUT_MS.
 * @param out  receives the future (one reference, the caller's).  Fulfilled:
 *             the value is the reply, read it with rp_cluster_reply_bytes()
 *             (owned by the future).  Failed: the handler's code and message,
 *             RP_ENOHANDLER, RP_ENOREPLY, RP_ETIMEDOUT, RP_ESHUTDOWN.
 * @return as rp_cluster_tell_node(); no future on failure.
 * Thread-safe.
 */
int rp_cluster_ask_node(rp_cluster_node *node, const char *target,
                        const char *handler, const void *payload, size_t len,
                        int timeout_ms, rp_future **out);

/**
 * The reply bytes of a fulfilled cluster ask's future (borrowed: valid while
 * the caller holds f; NUL-terminated, not counted in *len).
 * @return the bytes, or NULL when f is NULL, pending or failed.
 */
const void *rp_cluster_reply_bytes(const rp_future *f, size_t *len);

/* ---- node metrics ---- */

/* X(name, help): monotonic counters of one node. */
#define RP_CLUSTER_COUNTER_LIST(X)                                            \
    X(added, "entries this node added to inboxes")                           \
    X(fetched, "entries this node fetched from its inbox")                   \
    X(acked, "entries this node acknowledged")                               \
    X(claimed, "entries this node claimed from dead nodes")                  \
    X(duplicates, "jobs run that had been delivered before")                 \
    X(malformed, "malformed entries acknowledged and dropped")               \
    X(reconnects, "reconnections to Redis")                                  \
    X(failed, "jobs whose handler failed (tells are not retried)")           \
    X(no_handler, "jobs for a handler this node does not have")              \
    X(dead_lettered, "entries moved to the dead-letter stream")              \
    X(replies_sent, "replies sent to asking nodes")                          \
    X(replies_received, "replies that completed an ask")                     \
    X(replies_discarded, "late or duplicate replies discarded")              \
    X(handed_back, "fetched entries handed back unstarted at leave")         \
    X(expired, "asks not run because their deadline had passed")

/** Reply round-trip histogram: bucket i counts asks answered within
 *  2^i microseconds (the last bucket is unbounded). */
#define RP_CLUSTER_RTT_BUCKETS 24

/** A node's counters at one moment (each exact; the set not atomic). */
typedef struct rp_cluster_stats {
#define RP__CLUSTER_FIELD(name, help) uint64_t name;
    RP_CLUSTER_COUNTER_LIST(RP__CLUSTER_FIELD)
#undef RP__CLUSTER_FIELD
    /** Age of this node's last successful depth report, ms (-1: never). */
    int64_t report_age_ms;
    /** Entries fetched and not finished now. */
    uint64_t inflight;
    uint64_t rtt_buckets[RP_CLUSTER_RTT_BUCKETS];
    uint64_t rtt_count;
    /** Sum of the round trips, in microseconds. */
    uint64_t rtt_sum_us;
} rp_cluster_stats;

/** Read the node's counters.  @return 0, RP_EINVAL (NULL).  Thread-safe. */
int rp_cluster_node_stats(const rp_cluster_node *node, rp_cluster_stats *out);

/**
 * Write the node's metrics as Prometheus text (families
 * routepool_cluster_*, each sample labelled node="<id>").
 * @return 0, RP_EINVAL (NULL), RP_ESYS (write failed).  Thread-safe.
 */
int rp_cluster_write_prometheus(const rp_cluster_node *node, FILE *f);

/* ---- the dead-letter stream ("<prefix>:dead") ---- */

/** One dead-lettered entry (owned by the list it came in). */
typedef struct rp_cluster_dead_entry {
    char *dead_id;      /**< the entry's id in the dead-letter stream */
    char *job_id;       /**< the job's id */
    char *handler;
    void *payload;      /**< NUL-terminated, not counted in payload_len */
    size_t payload_len;
    unsigned deliveries;
    char *history;      /**< the nodes it was delivered to, oldest first,
                             comma-separated */
} rp_cluster_dead_entry;

/**
 * List up to max dead-lettered entries, oldest first.
 * @param out  receives an array of *n entries (caller-owned; free with
 *             rp_cluster_dead_list_free()); NULL when *n is 0.
 * @return 0, RP_EINVAL, RP_EUNAVAILABLE, RP_ENOMEM.  Thread-safe.
 */
int rp_cluster_dead_list(rp_cluster_node *node, size_t max,
                         rp_cluster_dead_entry **out, size_t *n);

/** Free a list from rp_cluster_dead_list().  Accepts NULL. */
void rp_cluster_dead_list_free(rp_cluster_dead_entry *list, size_t n);

/**
 * Re-queue a dead-lettered entry (deliveries reset) to node target's inbox,
 * or to a live member when target is NULL, and remove it from the
 * dead-letter stream.
 * @return 0, RP_EINVAL (no such entry), RP_ENOROUTEE (target NULL and no
 *         live member), RP_EUNAVAILABLE, RP_ENOMEM.  Thread-safe.
 */
int rp_cluster_dead_retry(rp_cluster_node *node, const char *dead_id,
                          const char *target);

/**
 * Delete a dead-lettered entry.
 * @return 0, RP_EINVAL (no such entry), RP_EUNAVAILABLE.  Thread-safe.
 */
int rp_cluster_dead_drop(rp_cluster_node *node, const char *dead_id);

/* ---- cluster routers (routers.c) ---- */

/* The routers' section needs RP_ROUTER_NAME_MAX and rp_scatter_stats.  (C
 * headers with their own guards and linkage blocks: safe to include here.) */
#include "routepool/router.h"
#include "routepool/scatter.h"

/*
 * Least-used allocation (seed 002): a Redis sorted set whose members are
 * the allowed resources (node ids, proxies, licences...) and whose scores
 * count allocations.  rp_least_used_acquire() runs the seed's script -
 * ZRANGE key 0 0, then ZINCRBY key 1 on the member found, atomically in one
 * Lua script with the set's key as its only key argument - so concurrent
 * callers in any number of processes never see the same minimum: N
 * acquisitions over M equal members give exactly N/M each.
 *
 * The score is the CUMULATIVE NUMBER OF ALLOCATIONS, not in-flight work,
 * latency or success: an allocation whose use later fails still counts,
 * nothing is ever given back, and the same member can be chosen again and
 * again (nothing is reserved exclusively).  A reply lost after the script
 * ran leaves an increment nobody saw.  A least-outstanding policy needs
 * leases with completion and expiry; do not read this counter as one.
 * Ties go to the lexicographically smallest member (ZRANGE order), not at
 * random.
 *
 * Scripts run with EVALSHA after SCRIPT LOAD; after a NOSCRIPT error (a
 * restart, failover or SCRIPT FLUSH emptied the script cache) the call
 * falls back to EVAL, so flushing scripts changes no outcome.
 *
 * Removal records the member's count in the hash "<key>:removed"; what a
 * re-added member starts from is the option readd (the seed's warning:
 * restarting a returning member at zero would concentrate allocations on
 * it while it catches up).
 */

/** Longest member and longest sorted-set key, in bytes. */
#define RP_LEAST_USED_MEMBER_MAX 255u
#define RP_LEAST_USED_KEY_MAX 511u

/** A least-used set handle (one connection to Redis).  Opaque. */
typedef struct rp_least_used rp_least_used;

/** What a member added again after rp_least_used_remove() starts from. */
typedef enum rp_least_used_readd {
    /** Its count from when it was removed: its history is kept, and it is
     *  favoured only as far as it fell behind while it was away. */
    RP_LEAST_USED_READD_KEEP = 0,
    /** The set's current minimum (its start_count when the set is empty):
     *  it rejoins level with the least-used member and takes its even
     *  share at once, with no catching-up burst.  The default. */
    RP_LEAST_USED_READD_MIN
} rp_least_used_readd;

/** Least-used options.  Initialise with rp_least_used_options_init(). */
typedef struct rp_least_used_options {
    /** Redis address: "host:port", "host", or a unix socket path ("/..."
     *  or "unix:/...").  Copied.  Default "127.0.0.1:6379". */
    const char *redis;
    /** ACL user and password (NULL: none).  Copied; re-sent after every
     *  reconnect. */
    const char *user;
    const char *password;
    /** Connect and command timeouts, ms, > 0.  Defaults 1000 and 1000. */
    int connect_timeout_ms;
    int command_timeout_ms;
    /** Re-added members.  Default RP_LEAST_USED_READD_MIN. */
    rp_least_used_readd readd;
} rp_least_used_options;

/** Fill opts with the defaults above (opts not NULL). */
void rp_least_used_options_init(rp_least_used_options *opts);

/**
 * Open a least-used set.  Connects (and checks with PING); creates nothing
 * in Redis until the first add.
 * @param out   receives the handle (caller-owned; rp_least_used_destroy()).
 * @param opts  options (borrowed for the call; NULL: defaults).
 * @param key   the sorted set's key, 1..RP_LEAST_USED_KEY_MAX bytes
 *              (copied); the side hash "<key>:removed" is used too.
 * @return 0, RP_EINVAL (a field, rp_errmsg() names it), RP_EUNAVAILABLE
 *         (Redis unreachable or AUTH refused), RP_ENOMEM.
 * Thread-safe.  Ignores SIGPIPE as rp_cluster_join() does.
 */
int rp_least_used_create(rp_least_used **out, const rp_least_used_options *opts,
                         const char *key);

/**
 * Allow member, starting at start_count allocations (the agreed start
 * count; <= 2^53).  A member already allowed is left unchanged.  A member
 * removed earlier starts as opts.readd says, not at start_count.
 * @param member  1..RP_LEAST_USED_MEMBER_MAX bytes (borrowed).
 * @return 0, RP_EINVAL (bad argument, or Redis refused the command, e.g.
 *         NOPERM or WRONGTYPE: rp_errmsg() quotes it), RP_EUNAVAILABLE.
 * Thread-safe (calls on one handle are serialised).
 */
int rp_least_used_add(rp_least_used *lu, const char *member, uint64_t start_count);

/**
 * Stop allocating member; its count is kept in "<key>:removed" for a later
 * add.  Removing a member that is not allowed does nothing.
 * @return as rp_least_used_add().  Thread-safe.
 */
int rp_least_used_remove(rp_least_used *lu, const char *member);

/**
 * Allocate the member with the fewest allocations and count the allocation,
 * atomically (the seed's script).
 * @param member  receives the member, NUL-terminated (caller's buffer).
 * @param cap     its size: at least RP_LEAST_USED_MEMBER_MAX + 1 (checked
 *                before anything is sent).
 * @return 0, RP_ENOROUTEE (the set is empty: nothing was allocated and the
 *         key was not created), RP_EINVAL (bad argument; or Redis refused,
 *         or answered with a member that is not a valid member - its count
 *         was raised), RP_EUNAVAILABLE (Redis unreachable; whether the
 *         script ran is unknown).  The set's connection reconnects as a
 *         node's do: while Redis is down calls fail at once during the
 *         backoff (50 ms doubling to 1 s), and every reconnect re-applies
 *         the timeout and AUTH and PINGs before use.
 * Thread-safe.
 */
int rp_least_used_acquire(rp_least_used *lu, char *member, size_t cap);

/** Close the handle.  The set stays in Redis.  Accepts NULL.  Must not
 *  race with other calls on lu. */
void rp_least_used_destroy(rp_least_used *lu);

/*
 * Cluster routers.  A cluster router chooses a NODE for each job; the
 * node's own pool router then chooses a routee.  It is a core group router
 * (rp_router_create_group) over foreign routees, one per live node, whose
 * send callback adds the job to that node's inbox and whose depth callback
 * reads the node's cached depth report, so rp_strategy_pick() routes nodes
 * with the core's strategies unchanged (round-robin, random, broadcast,
 * weighted); smallest-mailbox, consistent hashing, least-used and the
 * user's pick (CUSTOM) are custom strategies (rp_strategy_custom) over the
 * same routees.
 *
 * Membership and depth.  Each router reads every node's report ("<prefix>
 * :depth": depth and server time) in one round trip (TIME + HGETALL,
 * pipelined) every refresh_ms, on a thread of its own with a connection of
 * its own, into a cache it routes from synchronously.  The live nodes are
 * those whose report is at most member_timeout_ms old (server time); when
 * that set changes, the router builds a new routee list and a new group
 * router and swaps it in; calls already routing keep the old list (it is
 * reference-counted) until they return, so concurrent tells never touch
 * freed routees.  A job is routed to a node that was live at the last
 * refresh: a node that left since may still receive jobs for up to one
 * refresh interval; a send that finds its node gone (the transport checks
 * membership atomically with the add) stops that node's routee and routes
 * the job again among the others, so such a job is not lost nor refused.
 * The new routee list comes with a new message index: round-robin and
 * random restart their sequence (from the first node by id) after each
 * membership change.
 *
 * Unreported and stale nodes in smallest-mailbox.  The core's
 * smallest-mailbox scores a foreign routee whose depth cannot be read as 0
 * (seed 001's local rule: an unreadable ref is assumed empty).  The cluster
 * rule is the opposite: a node whose report is missing, or older than
 * staleness_ms, is skipped.  The foreign routee expresses this through its
 * depth callback, which returns -1 for such a node (rp_routee_depth() then
 * gives RP_ENODEPTH), and the cluster smallest-mailbox strategy treats a
 * negative reading as "do not route here", like a stopped routee.  When no
 * node has a usable report (cold or empty cache, all stale), it falls back
 * to round-robin.  The scan is the local one: rotating start, strict <,
 * stop at 0.  Depths can be one refresh old: a node may be chosen just as
 * it filled up; the next refresh corrects it.
 *
 * Weighted and custom.  WEIGHTED gives each snapshot of live nodes the
 * core's weighted strategy, with one weight per live node: the node's
 * entry in opts.weights, else opts.default_weight (so a node that joins
 * later weighs the default until a router created with its id in the list
 * sees it).  The share is exact per router: with one sender and stable
 * membership, node i gets exactly weight(i) of every W = sum-of-weights
 * consecutive jobs, so N jobs (N a multiple of W) give exactly
 * N * weight(i) / W each; otherwise each node is within weight(i) of its
 * share.  Several senders share the router's message index, so the counts
 * over all of them stay exact.  A dead node is not in the snapshot (it
 * goes at the first refresh after its report is member_timeout_ms old);
 * until then a send that finds it gone stops its routee and its slots go to
 * the next live node by id, so the ratio among the others is bent only
 * until that refresh.  When every live node weighs 0 the call fails with
 * RP_ENOROUTEE and nothing is sent.  CUSTOM hands the choice to the
 * user's rp_cluster_pick_fn over the live nodes' ids (see there).
 */

/** A cluster router.  Opaque. */
typedef struct rp_cluster_router rp_cluster_router;

/** How a cluster router chooses nodes. */
typedef enum rp_cluster_router_kind {
    /** Job i to live node i % n (nodes sorted by id). */
    RP_CLUSTER_ROUTER_ROUND_ROBIN = 0,
    /** Uniform, from (seed, message index): reproducible with a seed. */
    RP_CLUSTER_ROUTER_RANDOM,
    /** Every live node gets a copy of every job. */
    RP_CLUSTER_ROUTER_BROADCAST,
    /** Seed 001's cluster variant: the smallest cached depth (see above). */
    RP_CLUSTER_ROUTER_SMALLEST_MAILBOX,
    /** Rendezvous hashing of the key over node ids: a key stays on one
     *  node while it lives; a node leaving moves only its own keys.  Needs
     *  rp_cluster_tell_key(). */
    RP_CLUSTER_ROUTER_CONSISTENT_HASH,
    /** The node with the fewest allocations in the least-used set
     *  "<prefix>:lu:<least_used_name>" (rp_least_used_acquire()). */
    RP_CLUSTER_ROUTER_LEAST_USED,
    /** Weighted round-robin (the core's rp_strategy_weighted() over the
     *  live nodes): node i gets weight(i) of every sum-of-weights
     *  consecutive jobs, interleaved.  Weights per node id from
     *  opts.weights; a node not listed there - also one that joins later -
     *  weighs opts.default_weight.  See "Weighted and custom" above. */
    RP_CLUSTER_ROUTER_WEIGHTED,
    /** The user's pick callback (opts.pick) chooses one of the live nodes
     *  for each job, seeing the job's handler, payload and key.  See
     *  rp_cluster_pick_fn. */
    RP_CLUSTER_ROUTER_CUSTOM
} rp_cluster_router_kind;

/** One node's weight for RP_CLUSTER_ROUTER_WEIGHTED. */
typedef struct rp_cluster_weight {
    /** A node id (1..RP_CLUSTER_ID_MAX bytes of [A-Za-z0-9_.:-]); need not
     *  be live, or ever join. */
    const char *node_id;
    /** 0..RP_WEIGHT_MAX; 0: the node is never chosen. */
    unsigned weight;
} rp_cluster_weight;

/** What a custom pick sees of one job.  Every pointer is borrowed for the
 *  pick call only. */
typedef struct rp_cluster_pick_job {
    /** The handler name (NUL-terminated). */
    const char *handler;
    /** The payload and its length (payload may be NULL when len is 0). */
    const void *payload;
    size_t len;
    /** The key (rp_cluster_tell_key) and its length, or NULL and 0. */
    const void *key;
    size_t key_len;
    /** Rises by one per job routed by the router's current node list (it
     *  restarts at 0 when membership changes, as for round-robin). */
    uint64_t message_index;
} rp_cluster_pick_job;

/**
 * A custom cluster router's choice of node (RP_CLUSTER_ROUTER_CUSTOM).
 *
 * @param job    the job being routed (borrowed for the call).
 * @param nodes  the ids of the live nodes, sorted, n of them (n >= 1;
 *               borrowed for the call).  A node found gone since the last
 *               refresh is not among them.
 * @param n      number of nodes.
 * @param user   opts.pick_user.
 * @return the index in nodes[] of the node that gets the job (0..n-1).  A
 *         negative return refuses the job: the call fails with
 *         RP_ENOROUTEE and nothing is sent.  A return >= n is a bug in the
 *         callback: the call fails with RP_EINVAL ("... the pick callback
 *         returned 5, not a node index 0..1") and nothing is sent; it never
 *         crashes the router.
 *
 * Called synchronously in the thread that calls rp_cluster_tell(),
 * _tell_key(), _tell_batch() (once per job, in order) or rp_cluster_ask(),
 * concurrently from every such thread, with no library lock held: it must
 * be thread-safe.  It may be called again for the same job when the node it
 * chose turned out to have left (the job is then routed among the others).
 * It may call any routepool function, including routing through this or
 * another router, but must not destroy this router.  Broadcasts and
 * scatters (rp_cluster_broadcast(), rp_cluster_scatter()) reach every live
 * node and do not call it.
 */
typedef int (*rp_cluster_pick_fn)(const rp_cluster_pick_job *job, const char *const *nodes,
                                  size_t n, void *user);

/** A local monotonic clock in milliseconds, for the staleness bound. */
typedef int64_t (*rp_cluster_clock_fn)(void *user);

/** Cluster router options.  Initialise with rp_cluster_router_options_init(). */
typedef struct rp_cluster_router_options {
    /** Default RP_CLUSTER_ROUTER_ROUND_ROBIN. */
    rp_cluster_router_kind kind;
    /** Name, in log lines and aggregate error messages; copied,
     *  1..RP_ROUTER_NAME_MAX bytes.  Default "cluster". */
    const char *name;
    /** RANDOM and CONSISTENT_HASH: the seed (every router of a deployment
     *  must use the same for consistent hashing).  Default 0. */
    uint64_t seed;
    /** Refresh interval of reports and membership, ms, >= 1.  Default 200. */
    int refresh_ms;
    /** SMALLEST_MAILBOX: a report older than this (server time) is skipped;
     *  0: never stale.  >= 0; a nonzero value below refresh_ms is rejected.
     *  Default 1000. */
    int staleness_ms;
    /** A node whose report is older than this is not routed to at all
     *  (normally the nodes' dead_after_ms).  >= refresh_ms.  Default 3000. */
    int member_timeout_ms;
    /** Clock used to age reports between refreshes (tests inject one).
     *  NULL (default): CLOCK_MONOTONIC. */
    rp_cluster_clock_fn clock;
    void *clock_user;
    /** LEAST_USED: the set's name (key "<prefix>:lu:<name>"), copied,
     *  1..64 bytes.  Default: the router's name. */
    const char *least_used_name;
    /** LEAST_USED: when true (default) the router adds each node that
     *  becomes live - at the set's current minimum (0 in an empty set), so
     *  a node joining a running deployment takes its even share at once
     *  rather than every allocation until it has caught up; a node that
     *  was removed before comes back as least_used_readd says - and
     *  removes each node that leaves; false leaves the set to you.  A pick
     *  that names a node this call's routee list lacks but the router's
     *  newer one has (it joined meanwhile) is routed again on the newer. */
    bool least_used_sync;
    rp_least_used_readd least_used_readd;
    /** rp_cluster_scatter(): deadline of one scatter, ms, positive and
     *  finite.  Default RP_SCATTER_TIMEOUT_MS. */
    double scatter_timeout_ms;
    /** WEIGHTED: nweights (node id, weight) pairs, copied at creation
     *  (0..RP_ROUTEES_MAX of them, ids distinct).  Only with WEIGHTED.
     *  Default NULL, 0. */
    const rp_cluster_weight *weights;
    size_t nweights;
    /** WEIGHTED: the weight of a live node that is not in weights (one that
     *  joins later included), 0..RP_WEIGHT_MAX.  Default 1. */
    unsigned default_weight;
    /** CUSTOM: the pick callback (required with CUSTOM, refused with any
     *  other kind) and its user pointer (caller-owned; must outlive the
     *  router).  Default NULL. */
    rp_cluster_pick_fn pick;
    void *pick_user;
} rp_cluster_router_options;

/** Fill opts with the defaults above (opts not NULL). */
void rp_cluster_router_options_init(rp_cluster_router_options *opts);

/**
 * Create a cluster router on node (a member or a client-only node) and read
 * the reports once, so it routes at once.
 * @param out   receives the router (caller-owned; rp_cluster_router_destroy()).
 * @param node  the node whose transport it sends through (borrowed: destroy
 *              the router before rp_cluster_leave()).
 * @param opts  options (borrowed for the call; NULL: defaults).
 * @return 0, RP_EINVAL (a field; rp_errmsg() names it, e.g.
 *         "rp_cluster_router_create: opts.refresh_ms must be >= 1 (got 0)",
 *         "... opts.weights[2].weight must be 0..1000000 (got 1000001)",
 *         "... opts.weights names node \"a\" twice", "... opts.pick is NULL
 *         ..."),
 *         RP_EUNAVAILABLE (Redis unreachable, or the least-used set could
 *         not be opened), RP_ENOMEM, RP_ESYS (thread).
 * Thread-safe.
 */
int rp_cluster_router_create(rp_cluster_router **out, rp_cluster_node *node,
                             const rp_cluster_router_options *opts);

/**
 * Read the reports and membership now (one round trip), as the refresh
 * thread does every refresh_ms.
 * @return 0, RP_EINVAL (NULL), RP_EUNAVAILABLE, RP_ENOMEM.  Thread-safe.
 */
int rp_cluster_router_refresh(rp_cluster_router *r);

/** Number of live nodes the router routes to now; 0 for NULL.  Thread-safe. */
size_t rp_cluster_router_size(rp_cluster_router *r);

/** Whether node id is among the router's live nodes now (false for NULL r
 *  or id; id is borrowed for the call).  Thread-safe. */
bool rp_cluster_router_has(rp_cluster_router *r, const char *id);

/**
 * Route one job (handler name + payload bytes, copied into the entry) to
 * the node the strategy picks; a BROADCAST router sends it to every live
 * node.
 * @return 0 once the chosen inbox(es) stored it; RP_ENOROUTEE (no live
 *         node; least-used: the set is empty or named a node that is not
 *         live; weighted: every live node weighs 0; custom: the pick
 *         refused the job - nothing was sent), RP_EINVAL (NULL/bad
 *         argument, a custom pick's answer out of range, payload
 *         over the node's max_payload, a CONSISTENT_HASH router: use
 *         rp_cluster_tell_key()), RP_EUNAVAILABLE (Redis unreachable:
 *         nothing stored; broadcast: some copies may have been), RP_ENOMEM.
 * Thread-safe.
 */
int rp_cluster_tell(rp_cluster_router *r, const char *handler, const void *payload,
                    size_t len);

/**
 * Route one keyed job.  With CONSISTENT_HASH the key picks the node
 * (rendezvous over node ids), so a key's jobs from one sender reach one
 * node in order, and its pool runs them in order (the key travels with the
 * job: the node routes it by key).  Other kinds route as rp_cluster_tell()
 * and carry the key.
 * @param key  key_len >= 1 bytes (borrowed for the call).
 * @return as rp_cluster_tell().
 */
int rp_cluster_tell_key(rp_cluster_router *r, const void *key, size_t key_len,
                        const char *handler, const void *payload, size_t len);

/**
 * Route n jobs of one handler, payloads[i] of lens[i] bytes, as n
 * rp_cluster_tell() calls would pick them, and add them all in one
 * pipelined round trip.
 * @param sent  receives how many entries Redis confirmed (may be NULL); on
 *              RP_EUNAVAILABLE the rest may or may not have been stored.
 * @return 0 when all n were stored, else as rp_cluster_tell(): a bad
 *         argument or payload is found before anything is sent; on a
 *         LEAST_USED router a job whose pick fails is not sent while the
 *         others are (the pick's code is returned); RP_ENOROUTEE when a
 *         chosen node left after the last refresh - its entries were
 *         refused, the others stored (*sent counts them).  Thread-safe.
 */
int rp_cluster_tell_batch(rp_cluster_router *r, const char *handler,
                          const void *const *payloads, const size_t *lens, size_t n,
                          size_t *sent);

/**
 * Ask one job of the node the strategy picks.
 * @param timeout_ms  > 0, or 0 for RP_ASK_TIMEOUT_MS.
 * @param out  receives the future (one reference, the caller's): fulfilled
 *             with the reply bytes (rp_cluster_reply_bytes(), owned by the
 *             future), or failed with the handler's code and message,
 *             RP_ENOHANDLER, RP_ENOREPLY, RP_ETIMEDOUT, RP_ESHUTDOWN.
 * @return as rp_cluster_tell() (no future on failure); RP_EINVAL on a
 *         BROADCAST router (use rp_cluster_scatter()).  Thread-safe.
 */
int rp_cluster_ask(rp_cluster_router *r, const char *handler, const void *payload,
                   size_t len, int timeout_ms, rp_future **out);

/**
 * Send one job to every live node once, whatever the router's kind (the
 * seeds' Broadcast wrapper).
 * @param sent  receives how many nodes' inboxes stored a copy (may be NULL).
 * @return 0 when every live node's inbox stored its copy; RP_ENOROUTEE (no
 *         live node); otherwise the first failure's code (rp_errmsg() says
 *         how many copies were stored).  Thread-safe.
 */
int rp_cluster_broadcast(rp_cluster_router *r, const char *handler, const void *payload,
                         size_t len, size_t *sent);

/**
 * Scatter-gather-first-completed over nodes (seed 004's contract): ask
 * every live node, each with the router's scatter_timeout_ms; the first
 * reply fulfils the future (value and rp_future_routee(): the index of the
 * winning node in scatter order, nodes sorted by id).  Losers are not
 * cancelled; their replies are discarded.  Failure is one RP_EAGGREGATE
 * error whose message starts with the router's name:
 *   "<name>: none of N routees replied within Tms"  every member timed out
 *                                                   (N RP_ETIMEDOUT members)
 *   "<name>: all N routees failed"                  otherwise (each member's
 *                       code and message as the remote handler gave them)
 *   "<name>: no routees left to scatter to"         no live node (no members)
 *   "<name>: stopped while the scatter was still open"  the router was
 *                       destroyed first (no members)
 * Members are in scatter order.  Outcomes and the scatter-to-answer latency
 * are counted (rp_cluster_router_scatter_stats()).
 * @param out  receives the future (one reference, the caller's).
 * @return 0 (the future says the rest, also for "no routees left"),
 *         RP_EINVAL (NULL/bad argument), RP_ENOMEM, RP_ESHUTDOWN.
 * Thread-safe.
 */
int rp_cluster_scatter(rp_cluster_router *r, const char *handler, const void *payload,
                       size_t len, rp_future **out);

/**
 * The router's scatter counters (router_scatter_gather_resolved_total by
 * outcome, the latency histogram), as rp_router_scatter_stats() for a
 * local scatter router.  no-reply-target is never counted (a cluster
 * scatter always has its future).  @return 0, RP_EINVAL.  Thread-safe.
 */
int rp_cluster_router_scatter_stats(rp_cluster_router *r, rp_scatter_stats *out);

/** Stop the refresh thread, fail open scatters ("stopped ..."), free the
 *  router.  Accepts NULL.  Must not race with other calls on r. */
void rp_cluster_router_destroy(rp_cluster_router *r);

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_CLUSTER_H */
