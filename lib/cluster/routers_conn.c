/* SPDX-License-Identifier: MIT */
/*
 * routers_conn.c - the Redis connection of a least-used set or a depth
 * refresher: lazy connect, timeouts, AUTH and PING on every (re)connect.
 *
 * Invariant: conn->c is either NULL or a context that answered PING after
 * its timeout and AUTH were applied.  Any NULL reply (a dead context) frees
 * it at once, so a later call starts from a fresh connect rather than from
 * a context in an unknown state.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"
#include "routers_conn.h"
#include "routepool/cluster.h"

static int copy_str(char *dst, const char *src, const char *func, const char *pre,
                    const char *field)
{
    size_t len = src ? strlen(src) : 0;

    if (len > RP__RCONN_STR_MAX)
        return rp_error_set(RP_EINVAL, "%s: %s%s is longer than %u bytes", func, pre, field,
                           RP__RCONN_STR_MAX);
    memcpy(dst, src ? src : "", len);
    dst[len] = '\0';
    return 0;
}

/* Split "host:port" / "[v6]:port"; a path starting with '/' is a socket. */
static int parse_address(rp__rconn *conn, const char *a, const char *func, const char *pre)
{
    const char *colon;
    char *end;
    long port;

    if (!a || !*a)
        return rp_error_set(RP_EINVAL, "%s: %sredis is empty", func, pre);
    if (!strncmp(a, "unix:", 5))
        a += 5;
    if (a[0] == '/') {
        conn->port = 0;
        return copy_str(conn->host, a, func, pre, "redis");
    }
    colon = strrchr(a, ':');
    if (!colon && strlen(a) <= RP__RCONN_STR_MAX) { /* "host": port 6379 */
        strcpy(conn->host, a);
        conn->port = 6379;
        return 0;
    }
    if (!colon || colon == a || colon[1] == '\0')
        return rp_error_set(RP_EINVAL, "%s: %sredis must be host:port or a socket path (got \"%.64s\")",
                           func, pre, a);
    port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 1 || port > 65535)
        return rp_error_set(RP_EINVAL, "%s: %sredis port must be 1..65535 (got \"%.16s\")", func,
                           pre, colon + 1);
    if ((size_t)(colon - a) > RP__RCONN_STR_MAX)
        return rp_error_set(RP_EINVAL, "%s: %sredis host is too long", func, pre);
    if (a[0] == '[' && colon[-1] == ']') /* [::1]:6379 */
        a++, colon--;
    memcpy(conn->host, a, (size_t)(colon - a));
    conn->host[colon - a] = '\0';
    conn->port = (int)port;
    return 0;
}

/* As rp_cluster_join(): a write to a Redis that died must not kill the
 * process (hiredis 0.14 does not use MSG_NOSIGNAL).  A disposition the
 * program chose is left alone. */
static void ignore_sigpipe(void)
{
    struct sigaction old, ign;

    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
        !(old.sa_flags & SA_SIGINFO))
        sigaction(SIGPIPE, &ign, NULL);
}

int rp__rconn_init_settings(rp__rconn *conn, const rp__cluster_settings *s)
{
    const char *host = s->unix_path ? s->unix_path : s->host;

    memset(conn, 0, sizeof *conn);
    if (!host || strlen(host) > RP__RCONN_STR_MAX ||
        (s->user && strlen(s->user) > RP__RCONN_STR_MAX) ||
        (s->password && strlen(s->password) > RP__RCONN_STR_MAX))
        return rp_error_set(RP_EINVAL, "node connection settings too long for a router connection");
    strcpy(conn->host, host);
    conn->port = s->unix_path ? 0 : s->port;
    strcpy(conn->user, s->user ? s->user : "");
    strcpy(conn->password, s->password ? s->password : "");
    conn->connect_timeout_ms = s->connect_timeout_ms;
    conn->command_timeout_ms = s->command_timeout_ms;
    ignore_sigpipe();
    return 0;
}

int rp__rconn_init(rp__rconn *conn, const char *address, const char *user,
                   const char *password, int connect_timeout_ms, int command_timeout_ms,
                   const char *func, const char *pre)
{
    int rc;

    memset(conn, 0, sizeof *conn);
    if ((rc = parse_address(conn, address, func, pre)) < 0 ||
        (rc = copy_str(conn->user, user, func, pre, "user")) < 0 ||
        (rc = copy_str(conn->password, password, func, pre, "password")) < 0)
        return rc;
    if (connect_timeout_ms <= 0)
        return rp_error_set(RP_EINVAL, "%s: %sconnect_timeout_ms must be > 0 (got %d)", func, pre,
                           connect_timeout_ms);
    if (command_timeout_ms <= 0)
        return rp_error_set(RP_EINVAL, "%s: %scommand_timeout_ms must be > 0 (got %d)", func, pre,
                           command_timeout_ms);
    conn->connect_timeout_ms = connect_timeout_ms;
    conn->command_timeout_ms = command_timeout_ms;
    ignore_sigpipe();
    return 0;
}

static struct timeval tv_ms(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

/* AUTH (when configured) then PING on a fresh context; 0 or -1. */
static int handshake(rp__rconn *conn)
{
    const char *argv[3] = {"AUTH", conn->user, conn->password};
    redisReply *r;
    bool ok;

    if (conn->password[0]) {
        r = conn->user[0] ? redisCommandArgv(conn->c, 3, argv, NULL)
                          : redisCommandArgv(conn->c, 2, (const char *[]){"AUTH", conn->password},
                                             NULL);
        ok = r && r->type != REDIS_REPLY_ERROR;
        if (!ok)
            snprintf(conn->err, sizeof conn->err, "AUTH: %.120s", r ? r->str : conn->c->errstr);
        freeReplyObject(r);
        if (!ok)
            return -1;
    }
    r = redisCommandArgv(conn->c, 1, (const char *[]){"PING"}, NULL);
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        snprintf(conn->err, sizeof conn->err, "PING: %.120s",
                 r ? (r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply")
                   : conn->c->errstr);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

int rp__rconn_ensure(rp__rconn *conn)
{
    struct timeval ct = tv_ms(conn->connect_timeout_ms);

    if (conn->c)
        return 0;
    conn->c = conn->port ? redisConnectWithTimeout(conn->host, conn->port, ct)
                         : redisConnectUnixWithTimeout(conn->host, ct);
    if (!conn->c) {
        snprintf(conn->err, sizeof conn->err, "connect: out of memory");
        return RP_EUNAVAILABLE;
    }
    if (conn->c->err) {
        snprintf(conn->err, sizeof conn->err, "connect: %.120s", conn->c->errstr);
        rp__rconn_close(conn);
        return RP_EUNAVAILABLE;
    }
    if (redisSetTimeout(conn->c, tv_ms(conn->command_timeout_ms)) != REDIS_OK) {
        snprintf(conn->err, sizeof conn->err, "set timeout: %.120s", conn->c->errstr);
        rp__rconn_close(conn);
        return RP_EUNAVAILABLE;
    }
    if (handshake(conn) < 0) {
        rp__rconn_close(conn);
        return RP_EUNAVAILABLE;
    }
    conn->err[0] = '\0';
    return 0;
}

redisReply *rp__rconn_argv(rp__rconn *conn, int argc, const char **argv, const size_t *lens)
{
    redisReply *r;

    if (rp__rconn_ensure(conn) < 0)
        return NULL;
    r = redisCommandArgv(conn->c, argc, argv, lens);
    if (!r) {
        snprintf(conn->err, sizeof conn->err, "%.120s", conn->c->errstr);
        rp__rconn_close(conn);
    }
    return r;
}

void rp__rconn_close(rp__rconn *conn)
{
    if (conn->c)
        redisFree(conn->c);
    conn->c = NULL;
}
