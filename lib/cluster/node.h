/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/node.h - the node's transport, for the rest of the cluster
 * library (routers, least-used, scatter).  Private: never installed.
 *
 * What a router needs from a node:
 *  - to send a tell or an ask to a named member's inbox (single, or a
 *    pipelined batch: one round trip for many entries);
 *  - the node's pool (NULL for a client-only node) and id;
 *  - the node's connection settings, to open a connection of its own
 *    (a hiredis context is not thread-safe: never share the node's; the
 *    connections themselves are conn.h's);
 *  - membership and depth: the heartbeat thread reads every member's
 *    report once per tick and passes it to registered listeners;
 *  - how an ask's reply completes an rp_future: rp__cluster_send_ask()
 *    makes the future and the node's reply thread completes it (the value
 *    is the reply bytes, read with rp_cluster_reply_bytes(); failures carry
 *    the remote code and message; RP_ETIMEDOUT by the pool's timer).
 *
 * The node's own files (impl.h) also use node.c's helpers, at the end:
 * options, ids, logging, keys, the server clock, picking a member.
 *
 * Every function here is thread-safe unless it says otherwise.
 */
#ifndef RP_CLUSTER_NODE_H
#define RP_CLUSTER_NODE_H

#include <hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "routepool/cluster.h"

/* ---- sending ---- */

/** One job to send.  Every pointer is borrowed for the call. */
typedef struct rp__cluster_msg {
    const char *handler;   /* NUL-terminated handler name */
    const void *payload;   /* may be NULL when len is 0 */
    size_t len;
    const void *key;       /* optional (NULL, key_len 0) */
    size_t key_len;
} rp__cluster_msg;

/** XADD one tell to member target's inbox.  Returns 0, RP_EINVAL
 *  (rp_errmsg() names fn, the public function the caller used),
 *  RP_EUNAVAILABLE, RP_ENOMEM. */
int rp__cluster_send_tell(rp_cluster_node *node, const char *fn,
                          const char *target, const rp__cluster_msg *m);

/** Pipelined: n tells, targets[i] gets msgs[i], one round trip.  Stops at
 *  the first invalid message (nothing sent).  Returns 0 when Redis stored
 *  all n; on RP_EUNAVAILABLE *sent (may be NULL) says how many replies
 *  confirmed a store before the connection broke (the rest may or may not
 *  have been stored: at-least-once on the sender's retry). */
int rp__cluster_send_batch(rp_cluster_node *node, const char *fn,
                           const char *const *targets,
                           const rp__cluster_msg *msgs, size_t n, size_t *sent);

/** XADD one ask; *out receives the future (one reference, the caller's).
 *  timeout_ms > 0 or 0 for RP_ASK_TIMEOUT_MS. */
int rp__cluster_send_ask(rp_cluster_node *node, const char *fn,
                         const char *target, const rp__cluster_msg *m,
                         int timeout_ms, rp_future **out);

/* ---- the node ---- */

/** The node's pool (borrowed; NULL for a client-only node).  For a
 *  client-only node asks use a small internal pool for their timers:
 *  rp__cluster_node_timer_pool() gives the pool futures come from. */
rp_pool *rp__cluster_node_pool(const rp_cluster_node *node);
rp_pool *rp__cluster_node_timer_pool(const rp_cluster_node *node);
/** Prefix and id (borrowed, valid for the node's life). */
const char *rp__cluster_node_prefix(const rp_cluster_node *node);
/** Node's log callback: level as rp_log_level, msg used as a plain string. */
void rp__cluster_log(const rp_cluster_node *node, int level, const char *msg);
/** The node's connection settings (borrowed, conn.h). */
const rp__cluster_settings *rp__cluster_node_settings(const rp_cluster_node *node);

/* ---- membership and depth ---- */

/** One member's report, as read at a tick. */
typedef struct rp__cluster_member {
    const char *id;        /* borrowed for the listener call */
    int64_t depth;         /* reported depth */
    int64_t report_ms;     /* server time of the report */
} rp__cluster_member;

/** Called on the heartbeat thread after each successful read of the
 *  reports (no library lock held): members (n of them, any order), the
 *  server time now_ms of the read.  Must not block for long nor call
 *  rp__cluster_on_members() / rp_cluster_leave(). */
typedef void (*rp__cluster_members_fn)(const rp__cluster_member *members,
                                       size_t n, int64_t now_ms, void *user);

/** Register a listener (at most 8 per node).  Returns a handle >= 0 or
 *  RP_EINVAL / RP_ENOMEM. */
int rp__cluster_on_members(rp_cluster_node *node, rp__cluster_members_fn fn,
                           void *user);
/** Unregister; when it returns the listener is not running and will not
 *  run again (must not be called from the listener itself). */
void rp__cluster_off_members(rp_cluster_node *node, int handle);

/* ---- node.c's helpers, for the node's own files ---- */

/** Validate rp_cluster_join()'s options: 0 or RP_EINVAL (rp_errmsg()
 *  names the field). */
int rp__check_options(const rp_cluster_options *o);
/** The default node id, "<hostname>:<pid>" (the hostname's bytes outside
 *  [A-Za-z0-9_.-] become '-'), into id (cap bytes). */
void rp__default_id(char *id, size_t cap);
/** rp__cluster_log() with a printf format (the line is cut at 511 bytes). */
void rp__node_logf(const rp_cluster_node *node, int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/** "<prefix>:<kind>:<id>" ("<prefix>:<kind>" when id is NULL), malloc'd;
 *  NULL when out of memory. */
char *rp__key(const rp_cluster_node *node, const char *kind, const char *id);
/** Redis server time in ms, from the monotonic clock and the last offset
 *  the heartbeat measured. */
int64_t rp__server_now_ms(const rp_cluster_node *node);
/** A live member other than exclude (NULL: any), rotating; copies into buf.
 *  Returns false when there is none. */
bool rp__pick_member(rp_cluster_node *node, const char *exclude, char *buf,
                     size_t cap);

#endif /* RP_CLUSTER_NODE_H */
