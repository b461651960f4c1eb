/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/conn.h - connections to Redis (conn.c): the settings copied
 * from a node's or a router's options, one hiredis context with reconnect,
 * backoff, AUTH and timeouts re-applied (rp__conn), and Lua scripts run
 * with EVALSHA falling back to EVAL (rp__script).  A connection is used by
 * one thread at a time (hiredis contexts are not thread-safe); the
 * settings are read-only once made.  Private: never installed.
 */
#ifndef RP_CLUSTER_CONN_H
#define RP_CLUSTER_CONN_H

#include <hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif /* RP_CLUSTER_CONN_H */
