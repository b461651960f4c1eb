/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/harness.h - what the cluster tests share: a real
 * redis-server on 127.0.0.1 and a free port, node processes, waiting.
 *
 * Redis: `redis-server --port P --bind 127.0.0.1 --save '' --appendonly no`
 * (or, for restart tests, appendonly yes with fsync always in a private
 * directory) started in the foreground as our child (fork/exec, pid kept),
 * ready once PING answers; killed by pid.  redis-server is looked up in
 * PATH; when it is missing the start fails and so does the test: the
 * cluster tests never skip silently.
 *
 * Nodes: tests/cluster/test_node.c run as separate processes (pid kept),
 * so a test can kill -9 one.  A node prints "ready" on stdout once it has
 * joined and started; h_node_start() waits for that line.
 *
 * Waiting: h_wait() polls a condition every 10 ms up to a deadline.  The
 * conditions are in other processes or in Redis, where nothing can be
 * waited on; the deadlines are generous and never what a test measures.
 */
#ifndef RP_TESTS_CLUSTER_HARNESS_H
#define RP_TESTS_CLUSTER_HARNESS_H

#include <hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct h_redis {
    pid_t pid;           /* 0 when not running */
    int port;
    bool aof;            /* appendonly yes, appendfsync always, in dir */
    char dir[128];       /* its working directory (removed at stop) */
    char addr[32];       /* "127.0.0.1:<port>" */
    char user[32];       /* ACL user ("" when the default user is open) */
    char pass[32];
} h_redis;

/** Start a server on a free port.  Returns 0 or -1 (message on stderr). */
int h_redis_start(h_redis *r, bool aof);
/**
 * As h_redis_start(), with an ACL file (kept in r->dir, so a restart has
 * the same users): the default user off, user with password pass and every
 * permission (user NULL: no ACL file).  h_redis_connect() then sends AUTH,
 * and h_node_start() passes --user and --password to the node.
 */
int h_redis_start_acl(h_redis *r, bool aof, const char *user, const char *pass);
/** kill -9 the server and reap it (the directory stays: restartable). */
void h_redis_kill(h_redis *r);
/** Start it again on the same port and directory.  0 or -1. */
int h_redis_restart(h_redis *r);
/** Kill, reap, remove its directory.  Safe to call twice. */
void h_redis_stop(h_redis *r);
/** A new connection to it (caller frees), or NULL. */
redisContext *h_redis_connect(const h_redis *r);

/** A key prefix unique to this test process and call. */
void h_prefix(char *buf, size_t cap);

typedef struct h_node {
    pid_t pid;
    char id[64];
    char out[256];       /* the file its "record" handler appends to */
    int status;          /* wait status once reaped */
} h_node;

/**
 * Start a node: test_node --redis <addr> --prefix <prefix> --id <id>
 * --out <file> plus the NULL-terminated extra arguments.  Waits up to 20 s
 * for its "ready" line.  Returns 0 or -1.
 */
int h_node_start(h_node *n, const h_redis *r, const char *prefix, const char *id,
                 const char *const *extra);
/** kill -9 and reap. */
void h_node_kill9(h_node *n);
/** SIGTERM (graceful leave) and reap; returns the exit code, -1 if killed. */
int h_node_term(h_node *n);
/** Remove the node's output file. */
void h_node_cleanup(h_node *n);

/** Poll cond(arg) every 10 ms until true or timeout_ms passed. */
bool h_wait(bool (*cond)(void *arg), void *arg, int timeout_ms);

/** Lines of a file (0 when missing). */
long h_count_lines(const char *path);
/** Read a whole file (caller frees), NULL when missing. */
char *h_read_file(const char *path, size_t *len);

/** Milliseconds on CLOCK_MONOTONIC. */
long long h_now_ms(void);
void h_sleep_ms(int ms);

/** Run a Redis command (printf form with constant format; caller frees). */
redisReply *h_cmd(redisContext *c, const char *fmt, ...);
/** Integer reply of a command, or -1. */
long long h_int(redisContext *c, const char *fmt, ...);
/** Calls of Redis command cmd (lower case, e.g. "xack") so far, from INFO
 *  commandstats; 0 when it never ran or the reply has no such line. */
long h_calls_of(redisContext *c, const char *cmd);

#endif /* RP_TESTS_CLUSTER_HARNESS_H */
