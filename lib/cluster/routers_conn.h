/* SPDX-License-Identifier: MIT */
/*
 * routers_conn.h - one Redis connection owned by one router-side object
 * (a least-used set, a depth-cache refresher).  Private.
 *
 * A hiredis context is not thread-safe, so each object that talks to Redis
 * has its own and serialises its use (the owner's lock).  The connection is
 * made lazily and re-made after any I/O error: hiredis 0.14 forgets the
 * command timeout and AUTH on reconnect, so every (re)connect applies the
 * timeout, sends AUTH when configured and checks with PING before the
 * connection is used (the PING catches a listener mid-teardown).
 */
#ifndef RP_CLUSTER_ROUTERS_CONN_H
#define RP_CLUSTER_ROUTERS_CONN_H

#include <hiredis.h>
#include <stdbool.h>
#include <stddef.h>

/** Longest Redis address, user or password accepted, in bytes. */
#define RP__RCONN_STR_MAX 255u

typedef struct rp__rconn {
    redisContext *c;          /* NULL until connected, and after an I/O error */
    char host[RP__RCONN_STR_MAX + 1]; /* host, or a unix socket path */
    int port;                 /* 0: host is a unix socket path */
    char user[RP__RCONN_STR_MAX + 1];
    char password[RP__RCONN_STR_MAX + 1];
    int connect_timeout_ms;
    int command_timeout_ms;
    char err[160];            /* the last connection error, for messages */
} rp__rconn;

/**
 * Fill conn from an address ("host:port", "[v6]:port" or a unix socket path
 * starting with '/'), optional ACL user and password (NULL or "" for none)
 * and timeouts (> 0).  Connects nothing.  Returns 0 or RP_EINVAL naming the
 * field (func.field) in rp_errmsg().
 */
int rp__rconn_init(rp__rconn *conn, const char *address, const char *user,
                   const char *password, int connect_timeout_ms, int command_timeout_ms,
                   const char *func, const char *field_prefix);

struct rp__cluster_settings;

/** Fill conn from a node's settings (lib/cluster/node.h), so a router
 *  talks to the node's Redis with the node's credentials and timeouts on a
 *  connection of its own.  0 or RP_EINVAL. */
int rp__rconn_init_settings(rp__rconn *conn, const struct rp__cluster_settings *s);

/** Connect when not connected.  0, or RP_EUNAVAILABLE (conn->err says why). */
int rp__rconn_ensure(rp__rconn *conn);

/** Send one command (argv form: data never passes through a format string)
 *  and read its reply.  NULL when the connection failed (it is then closed;
 *  the next call reconnects).  The caller frees the reply. */
redisReply *rp__rconn_argv(rp__rconn *conn, int argc, const char **argv, const size_t *lens);

/** Close the connection (if open); conn can be used again. */
void rp__rconn_close(rp__rconn *conn);

#endif /* RP_CLUSTER_ROUTERS_CONN_H */
