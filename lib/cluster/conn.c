/* SPDX-License-Identifier: MIT */
/*
 * conn.c - one Redis connection that survives Redis restarts.
 *
 * hiredis 0.14 contexts die on any transport error (a NULL reply); we then
 * free the context and reconnect on the next use, never sooner than the
 * backoff (50 ms doubling to 1 s, so a Redis back after an outage is found
 * within a second).  A fresh context gets the command timeout, AUTH (with
 * the ACL user when set) and a PING before it counts as up: redisReconnect
 * would lose the timeout and the AUTH, and right after a server kill -9 a
 * connect can succeed against a listener that is going away, which the
 * PING catches.  Callers serialise all use of one rp__conn.
 *
 * Every connection of the cluster library is one of these: the node's
 * (fetch, send, heartbeat, reply), a cluster router's refresh connection
 * and a least-used set's.  The settings it connects with (address, ACL
 * user, password, timeouts) are parsed here too, once for all of them.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "routepool/error.h"
#include "util.h"

enum { BACKOFF_MIN_MS = 50, BACKOFF_MAX_MS = 1000 };

/* Longest host (or socket path), user and password accepted. */
enum { STR_MAX = 255 };

void rp__ignore_sigpipe(void)
{
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL &&
        !(sa.sa_flags & SA_SIGINFO)) {
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_IGN;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPIPE, &sa, NULL);
    }
}

/* "host:port", "[v6]:port", "host" (port 6379), "/path", "unix:/path". */
int rp__settings_parse_addr(rp__cluster_settings *s, const char *a, const char *func,
                            const char *pre)
{
    if (!a || !*a)
        return rp_error_set(RP_EINVAL, "%s: %sredis must be host:port or a socket path", func,
                            pre);
    if (a[0] == '/' || strncmp(a, "unix:", 5) == 0) {
        const char *path = a[0] == '/' ? a : a + 5;
        if (path[0] != '/' || strlen(path) > STR_MAX)
            return rp_error_set(RP_EINVAL, "%s: %sredis has an empty or over-long socket path",
                                func, pre);
        s->unix_path = strdup(path);
        return s->unix_path ? 0 : RP_ENOMEM;
    }
    const char *colon = strrchr(a, ':');
    int64_t port = 6379;
    size_t hl = colon ? (size_t)(colon - a) : strlen(a);
    if (colon && !rp__parse_i64(colon + 1, strlen(colon + 1), 1, 65535, &port))
        return rp_error_set(RP_EINVAL, "%s: %sredis has an invalid port (1..65535)", func, pre);
    if (hl >= 2 && a[0] == '[' && a[hl - 1] == ']') /* [::1]:6379 */
        a++, hl -= 2;
    if (hl == 0 || hl > STR_MAX)
        return rp_error_set(RP_EINVAL, "%s: %sredis has an empty or over-long host", func, pre);
    s->host = strndup(a, hl);
    s->port = (int)port;
    return s->host ? 0 : RP_ENOMEM;
}

static int copy_secret(char **dst, const char *src, const char *func, const char *pre,
                       const char *field)
{
    if (!src || !*src)
        return 0;
    if (strlen(src) > STR_MAX)
        return rp_error_set(RP_EINVAL, "%s: %s%s is longer than %d bytes", func, pre, field,
                            STR_MAX);
    *dst = strdup(src);
    return *dst ? 0 : RP_ENOMEM;
}

int rp__settings_init(rp__cluster_settings *s, const char *addr, const char *user,
                      const char *password, int connect_timeout_ms, int command_timeout_ms,
                      const char *func, const char *pre)
{
    int rc;

    memset(s, 0, sizeof *s);
    if (connect_timeout_ms <= 0)
        return rp_error_set(RP_EINVAL, "%s: %sconnect_timeout_ms must be > 0 (got %d)", func,
                            pre, connect_timeout_ms);
    if (command_timeout_ms <= 0)
        return rp_error_set(RP_EINVAL, "%s: %scommand_timeout_ms must be > 0 (got %d)", func,
                            pre, command_timeout_ms);
    s->connect_timeout_ms = connect_timeout_ms;
    s->command_timeout_ms = command_timeout_ms;
    if ((rc = rp__settings_parse_addr(s, addr, func, pre)) < 0 ||
        (rc = copy_secret(&s->user, user, func, pre, "user")) < 0 ||
        (rc = copy_secret(&s->password, password, func, pre, "password")) < 0) {
        rp__settings_free(s);
        return rc == RP_ENOMEM ? rp_error_set(rc, "%s: out of memory", func) : rc;
    }
    return 0;
}

void rp__settings_free(rp__cluster_settings *s)
{
    free(s->host);
    free(s->unix_path);
    free(s->user);
    free(s->password);
    memset(s, 0, sizeof *s);
}

void rp__conn_init(rp__conn *k, const rp__cluster_settings *s,
                   _Atomic uint64_t *reconnects)
{
    memset(k, 0, sizeof *k);
    k->s = s;
    k->backoff_ms = BACKOFF_MIN_MS;
    k->reconnects = reconnects;
}

static struct timeval tv_of(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

static void set_err(rp__conn *k, const char *what, const char *detail)
{
    snprintf(k->err, sizeof k->err, "%s: %s", what, detail ? detail : "?");
}

/* AUTH (when a password is set; argv form: the secrets never pass through
 * a format string) then PING; 0 or -1 with k->err set. */
static int handshake(rp__conn *k)
{
    const rp__cluster_settings *s = k->s;
    redisReply *r;
    if (s->password) {
        const char *av[3] = {"AUTH", s->user ? s->user : s->password, s->password};
        r = redisCommandArgv(k->c, s->user ? 3 : 2, av, NULL);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            set_err(k, "AUTH refused", r ? r->str : k->c->errstr);
            if (r)
                freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
    }
    r = redisCommandArgv(k->c, 1, (const char *[]){"PING"}, NULL);
    if (!r || r->type != REDIS_REPLY_STATUS) {
        set_err(k, "PING failed", r && r->type == REDIS_REPLY_ERROR ? r->str
                                  : k->c->errstr);
        if (r)
            freeReplyObject(r);
        return -1;
    }
    freeReplyObject(r);
    return 0;
}

static redisContext *dial(const rp__cluster_settings *s)
{
    struct timeval tv = tv_of(s->connect_timeout_ms);
    if (s->unix_path)
        return redisConnectUnixWithTimeout(s->unix_path, tv);
    return redisConnectWithTimeout(s->host, s->port, tv);
}

int rp__conn_ensure(rp__conn *k)
{
    if (k->c)
        return 0;
    int64_t now = rp__mono_ms();
    if (now < k->retry_at_ms)
        return RP_EUNAVAILABLE;
    k->c = dial(k->s);
    if (!k->c || k->c->err) {
        set_err(k, "connect", k->c ? k->c->errstr : "out of memory");
        goto fail;
    }
    if (redisSetTimeout(k->c, tv_of(k->s->command_timeout_ms)) != REDIS_OK) {
        set_err(k, "timeout", k->c->errstr);
        goto fail;
    }
    if (handshake(k) < 0)
        goto fail;
    if (k->ever_up && k->reconnects)
        atomic_fetch_add_explicit(k->reconnects, 1, memory_order_relaxed);
    k->ever_up = true;
    k->backoff_ms = BACKOFF_MIN_MS;
    return 0;
fail:
    if (k->c)
        redisFree(k->c);
    k->c = NULL;
    k->retry_at_ms = now + k->backoff_ms;
    k->backoff_ms = k->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : k->backoff_ms * 2;
    return RP_EUNAVAILABLE;
}

void rp__conn_drop(rp__conn *k)
{
    if (k->c) {
        if (k->c->err)
            set_err(k, "connection lost", k->c->errstr);
        redisFree(k->c);
        k->c = NULL;
        /* Retry at once the first time: a killed connection (CLIENT KILL)
         * on a live server should cost one round trip, not a backoff. */
        k->retry_at_ms = 0;
    }
}

void rp__conn_close(rp__conn *k)
{
    if (k->c)
        redisFree(k->c);
    k->c = NULL;
}

redisReply *rp__conn_cmd(rp__conn *k, int argc, const char **argv,
                         const size_t *lens)
{
    if (rp__conn_ensure(k) < 0)
        return NULL;
    redisReply *r = redisCommandArgv(k->c, argc, argv, lens);
    if (!r)
        rp__conn_drop(k);
    return r;
}

int rp__conn_append(rp__conn *k, int argc, const char **argv, const size_t *lens)
{
    if (rp__conn_ensure(k) < 0)
        return RP_EUNAVAILABLE;
    if (redisAppendCommandArgv(k->c, argc, argv, lens) != REDIS_OK)
        return RP_ENOMEM;
    return 0;
}

redisReply *rp__conn_get_reply(rp__conn *k)
{
    void *r = NULL;
    if (!k->c)
        return NULL;
    if (redisGetReply(k->c, &r) != REDIS_OK || !r) {
        rp__conn_drop(k);
        return NULL;
    }
    return r;
}

static bool is_noscript(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && r->str && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* SCRIPT LOAD: remember the sha (the reply is untrusted: 40 hex bytes). */
static void load_script(rp__conn *k, rp__script *sc)
{
    const char *argv[] = {"SCRIPT", "LOAD", sc->body};
    size_t lens[] = {6, 4, strlen(sc->body)};
    redisReply *r = rp__conn_cmd(k, 3, argv, lens);
    if (r && r->type == REDIS_REPLY_STRING && r->len == 40) {
        memcpy(sc->sha, r->str, 40);
        sc->sha[40] = '\0';
    }
    if (r)
        freeReplyObject(r);
}

int rp__script_load(rp__conn *k, rp__script *sc)
{
    if (!sc->sha[0])
        load_script(k, sc);
    return sc->sha[0] ? 0 : RP_EUNAVAILABLE;
}

redisReply *rp__conn_eval(rp__conn *k, rp__script *sc, int nkeys, int argc,
                          const char **argv, const size_t *lens)
{
    enum { MAXARG = 40 };
    const char *av[MAXARG + 3];
    size_t al[MAXARG + 3];
    char nk[16];
    if (argc > MAXARG)
        return NULL;
    if (!sc->sha[0])
        load_script(k, sc);
    int nkl = snprintf(nk, sizeof nk, "%d", nkeys);
    bool sha = sc->sha[0] != '\0';
    av[0] = sha ? "EVALSHA" : "EVAL";
    al[0] = strlen(av[0]);
    av[1] = sha ? sc->sha : sc->body;
    al[1] = strlen(av[1]);
    av[2] = nk;
    al[2] = (size_t)nkl;
    memcpy(av + 3, argv, sizeof *argv * (size_t)argc);
    for (int i = 0; i < argc; i++)
        al[3 + i] = lens ? lens[i] : strlen(argv[i]);
    redisReply *r = rp__conn_cmd(k, argc + 3, av, al);
    if (r && sha && is_noscript(r)) {
        /* The script cache was emptied (restart, failover, SCRIPT FLUSH). */
        freeReplyObject(r);
        sc->sha[0] = '\0';
        av[0] = "EVAL";
        al[0] = 4;
        av[1] = sc->body;
        al[1] = strlen(sc->body);
        r = rp__conn_cmd(k, argc + 3, av, al);
    }
    return r;
}
