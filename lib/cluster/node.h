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
 *    (a hiredis context is not thread-safe: never share the node's);
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

/* ---- connections (lib/cluster/conn.c) ---- */

/** Connection settings, copied from the options (strings owned by it). */
typedef struct rp__cluster_settings {
    char *host;            /* NULL for a unix socket */
    int port;
    char *unix_path;       /* NULL for TCP */
    char *user;            /* NULL: no ACL user */
    char *password;        /* NULL: no AUTH */
    int connect_timeout_ms;
    int command_timeout_ms;
} rp__cluster_settings;

/** The node's settings (borrowed). */
const rp__cluster_settings *rp__cluster_node_settings(const rp_cluster_node *node);

/** Parse a Redis address ("host:port", "[v6]:port", "host" for port 6379,
 *  "/path" or "unix:/path") into s->host/port or s->unix_path (malloc'd).
 *  Messages name func and "<pre>redis".  0, RP_EINVAL, RP_ENOMEM. */
int rp__settings_parse_addr(rp__cluster_settings *s, const char *addr, const char *func,
                            const char *pre);
/** Fill s (zeroed first) from an address, an optional ACL user and password
 *  (NULL or "": none; at most 255 bytes each) and timeouts (> 0); strings
 *  are copied.  Messages name func and the field ("<pre>redis", ...).
 *  0, RP_EINVAL, RP_ENOMEM (nothing to free on failure). */
int rp__settings_init(rp__cluster_settings *s, const char *addr, const char *user,
                      const char *password, int connect_timeout_ms, int command_timeout_ms,
                      const char *func, const char *pre);
/** Free s's strings and zero it.  Accepts a zeroed s. */
void rp__settings_free(rp__cluster_settings *s);

/** Set SIGPIPE to SIG_IGN when its disposition is SIG_DFL (hiredis 0.14
 *  writes without MSG_NOSIGNAL; a program's own choice is left alone). */
void rp__ignore_sigpipe(void);

/**
 * One Redis connection with reconnect: not thread-safe (one owner thread,
 * or a lock around every use).  When a command fails at the transport the
 * context is dropped and the next use reconnects, no sooner than the
 * backoff allows (50 ms doubling to 1 s); a reconnect re-applies the
 * command timeout, AUTH, and PINGs before the connection counts as up.
 */
typedef struct rp__conn {
    redisContext *c;
    const rp__cluster_settings *s;
    int64_t retry_at_ms;   /* monotonic: no connect attempt before this */
    int backoff_ms;
    bool ever_up;
    _Atomic uint64_t *reconnects;  /* bumped on each reconnect (may be NULL) */
    char err[160];         /* last transport error */
} rp__conn;

void rp__conn_init(rp__conn *k, const rp__cluster_settings *s,
                   _Atomic uint64_t *reconnects);
/** Connect if needed: 0 when up, RP_EUNAVAILABLE (backoff or failure). */
int rp__conn_ensure(rp__conn *k);
/** Run one command (argv form, binary-safe).  lens: each argument's
 *  length, or NULL when every argument is a NUL-terminated string (hiredis
 *  then takes strlen of each).  Returns the reply (caller frees with
 *  freeReplyObject) or NULL when Redis is unavailable (the context is
 *  dropped; k->err says why).  An error reply is returned as a reply of
 *  type REDIS_REPLY_ERROR. */
redisReply *rp__conn_cmd(rp__conn *k, int argc, const char **argv,
                         const size_t *lens);
/** Pipelining: append n commands (lens NULL as for rp__conn_cmd) then
 *  read their n replies.  On NULL from
 *  get_reply the connection is dropped and the remaining replies lost. */
int rp__conn_append(rp__conn *k, int argc, const char **argv, const size_t *lens);
redisReply *rp__conn_get_reply(rp__conn *k);
/** Drop the context (after a protocol error).  The next use reconnects. */
void rp__conn_drop(rp__conn *k);
void rp__conn_close(rp__conn *k);

/** A Lua script run with EVALSHA, falling back to EVAL on NOSCRIPT. */
typedef struct rp__script {
    const char *body;
    char sha[41];          /* "" until SCRIPT LOAD answered */
} rp__script;

/** SCRIPT LOAD unless the sha is known: 0 when known after the call,
 *  RP_EUNAVAILABLE. */
int rp__script_load(rp__conn *k, rp__script *sc);

/** EVALSHA (or EVAL on NOSCRIPT / unknown sha) script with nkeys keys then
 *  args: argv holds keys then args, lens their lengths (NULL: all are
 *  NUL-terminated strings).  Returns as rp__conn_cmd(). */
redisReply *rp__conn_eval(rp__conn *k, rp__script *sc, int nkeys, int argc,
                          const char **argv, const size_t *lens);

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
