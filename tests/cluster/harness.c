/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/harness.c - see harness.h.  Child processes are started
 * with fork + execvp and reaped with waitpid, so every pid is ours and no
 * shell is involved.  Nothing here uses Criterion: the harness reports
 * failures by return value and a line on stderr, and the tests assert.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#ifndef RP_TEST_NODE_PATH
#error "RP_TEST_NODE_PATH must name the test_node binary"
#endif

long long h_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void h_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

bool h_wait(bool (*cond)(void *arg), void *arg, int timeout_ms)
{
    long long end = h_now_ms() + timeout_ms;
    for (;;) {
        if (cond(arg))
            return true;
        if (h_now_ms() > end)
            return false;
        h_sleep_ms(10);
    }
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

redisContext *h_redis_connect(const h_redis *r)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    if (c && c->err) {
        redisFree(c);
        return NULL;
    }
    if (c)
        redisSetTimeout(c, tv);
    if (c && r->user[0]) {
        redisReply *a = redisCommand(c, "AUTH %s %s", r->user, r->pass);
        bool ok = a && a->type == REDIS_REPLY_STATUS;
        if (a)
            freeReplyObject(a);
        if (!ok) {
            redisFree(c);
            return NULL;
        }
    }
    return c;
}

static bool redis_ready(void *arg)
{
    redisContext *c = h_redis_connect(arg);
    if (!c)
        return false;
    redisReply *rep = redisCommand(c, "PING");
    bool ok = rep && rep->type == REDIS_REPLY_STATUS;
    if (rep)
        freeReplyObject(rep);
    redisFree(c);
    return ok;
}

static int spawn_redis(h_redis *r)
{
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a crashed test leaves no server */
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, 1);
            close(devnull);
        }
        if (chdir(r->dir) != 0)
            _exit(126);
        const char *argv[20] = {"redis-server", "--port", port, "--bind", "127.0.0.1",
                                "--save", "", "--dir", r->dir, "--appendonly"};
        int argc = 10;
        argv[argc++] = r->aof ? "yes" : "no";
        if (r->aof) {
            argv[argc++] = "--appendfsync";
            argv[argc++] = "always";
        }
        if (r->user[0]) { /* the ACL file in r->dir: the same users after a restart */
            argv[argc++] = "--aclfile";
            argv[argc++] = "users.acl";
        }
        argv[argc] = NULL;
        execvp("redis-server", (char *const *)argv);
        fprintf(stderr, "harness: cannot run redis-server: %s (is it in PATH?)\n",
                strerror(errno));
        _exit(127);
    }
    r->pid = pid;
    if (!h_wait(redis_ready, r, 10000)) {
        fprintf(stderr, "harness: redis-server on port %d did not answer PING\n", r->port);
        h_redis_kill(r);
        return -1;
    }
    return 0;
}

/* users.acl in r->dir: the default user off, r->user with r->pass and
 * every permission. */
static int write_acl(const h_redis *r)
{
    char path[160];
    snprintf(path, sizeof path, "%s/users.acl", r->dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "user default off\nuser %s on >%s ~* &* +@all\n", r->user, r->pass);
    return fclose(f) == 0 ? 0 : -1;
}

int h_redis_start_acl(h_redis *r, bool aof, const char *user, const char *pass)
{
    memset(r, 0, sizeof *r);
    r->aof = aof;
    snprintf(r->dir, sizeof r->dir, "/tmp/rp-cluster-test-XXXXXX");
    if (!mkdtemp(r->dir)) {
        fprintf(stderr, "harness: mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    if (user) {
        snprintf(r->user, sizeof r->user, "%s", user);
        snprintf(r->pass, sizeof r->pass, "%s", pass);
        if (write_acl(r) < 0) {
            fprintf(stderr, "harness: cannot write the ACL file in %s\n", r->dir);
            return -1;
        }
    }
    r->port = free_port();
    snprintf(r->addr, sizeof r->addr, "127.0.0.1:%d", r->port);
    return r->port > 0 ? spawn_redis(r) : -1;
}

int h_redis_start(h_redis *r, bool aof)
{
    return h_redis_start_acl(r, aof, NULL, NULL);
}

int h_redis_restart(h_redis *r)
{
    return spawn_redis(r);
}

void h_redis_kill(h_redis *r)
{
    if (r->pid > 0) {
        kill(r->pid, SIGKILL);
        while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    r->pid = 0;
}

/* Node pids still running, so h_redis_stop() can kill what a failed
 * assertion left behind (their stdout/stderr would keep the test's
 * output pipe open). */
static pid_t live[64];

static void track(pid_t pid)
{
    for (int i = 0; i < 64; i++)
        if (!live[i]) {
            live[i] = pid;
            return;
        }
}

static void untrack(pid_t pid)
{
    for (int i = 0; i < 64; i++)
        if (live[i] == pid)
            live[i] = 0;
}

static void kill_tracked(void)
{
    for (int i = 0; i < 64; i++)
        if (live[i]) {
            kill(live[i], SIGKILL);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
}

void h_redis_stop(h_redis *r)
{
    kill_tracked();
    h_redis_kill(r);
    if (!r->dir[0])
        return;
    /* Our mkdtemp directory: redis wrote appendonlydir/ into it at most. */
    pid_t pid = fork();
    if (pid == 0) {
        execlp("rm", "rm", "-rf", "--", r->dir, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
    r->dir[0] = '\0';
}

void h_prefix(char *buf, size_t cap)
{
    static unsigned n;
    snprintf(buf, cap, "t%ld_%u", (long)getpid(), ++n);
}

/* Read from fd until a line starting with "ready" or the deadline. */
static int wait_ready(int fd, int timeout_ms)
{
    char buf[256];
    size_t used = 0;
    long long end = h_now_ms() + timeout_ms;
    while (h_now_ms() < end && used < sizeof buf - 1) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t got = read(fd, buf + used, sizeof buf - 1 - used);
        if (got <= 0)
            return -1;
        used += (size_t)got;
        buf[used] = '\0';
        if (strstr(buf, "ready"))
            return 0;
    }
    return -1;
}

static void exec_node(int wfd, const h_redis *r, const char *prefix, h_node *n,
                      const char *const *extra)
{
    const char *argv[64] = {RP_TEST_NODE_PATH, "--redis", r->addr, "--prefix", prefix,
                            "--id", n->id, "--out", n->out};
    int argc = 9;
    if (r->user[0]) { /* the server's ACL user: nothing works without AUTH */
        argv[argc++] = "--user";
        argv[argc++] = r->user;
        argv[argc++] = "--password";
        argv[argc++] = r->pass;
    }
    for (int i = 0; extra && extra[i] && argc < 62; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    dup2(wfd, 1);
    close(wfd);
    execv(RP_TEST_NODE_PATH, (char *const *)argv);
    fprintf(stderr, "harness: cannot run %s: %s\n", RP_TEST_NODE_PATH, strerror(errno));
    _exit(127);
}

int h_node_start(h_node *n, const h_redis *r, const char *prefix, const char *id,
                 const char *const *extra)
{
    int fds[2];
    memset(n, 0, sizeof *n);
    snprintf(n->id, sizeof n->id, "%s", id);
    snprintf(n->out, sizeof n->out, "%s/%s.%s.out", r->dir, prefix, id);
    unlink(n->out);
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(fds[0]);
        exec_node(fds[1], r, prefix, n, extra);
    }
    close(fds[1]);
    n->pid = pid;
    track(pid);
    int rc = wait_ready(fds[0], 20000);
    close(fds[0]);
    if (rc < 0) {
        fprintf(stderr, "harness: node %s did not get ready\n", id);
        h_node_kill9(n);
    }
    return rc;
}

void h_node_kill9(h_node *n)
{
    untrack(n->pid);
    if (n->pid > 0) {
        kill(n->pid, SIGKILL);
        while (waitpid(n->pid, &n->status, 0) < 0 && errno == EINTR) {
        }
    }
    n->pid = 0;
}

int h_node_term(h_node *n)
{
    if (n->pid <= 0)
        return -1;
    untrack(n->pid);
    kill(n->pid, SIGTERM);
    while (waitpid(n->pid, &n->status, 0) < 0 && errno == EINTR) {
    }
    n->pid = 0;
    return WIFEXITED(n->status) ? WEXITSTATUS(n->status) : -1;
}

void h_node_cleanup(h_node *n)
{
    unlink(n->out);
}

char *h_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + used, 1, cap - used - 1, f)) > 0) {
        used += got;
        if (cap - used < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[used] = '\0';
    if (len)
        *len = used;
    return buf;
}

long h_count_lines(const char *path)
{
    char *b = h_read_file(path, NULL);
    long n = 0;
    for (char *p = b; p && *p; p++)
        n += *p == '\n';
    free(b);
    return n;
}

redisReply *h_cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    return r;
}

long long h_int(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    return v;
}

long h_calls_of(redisContext *c, const char *cmd)
{
    redisReply *r = h_cmd(c, "INFO commandstats");
    char needle[64];
    const char *p;
    long n = 0;

    snprintf(needle, sizeof needle, "cmdstat_%s:calls=", cmd);
    if (r && r->type == REDIS_REPLY_STRING && (p = strstr(r->str, needle)))
        n = atol(p + strlen(needle));
    if (r)
        freeReplyObject(r);
    return n;
}
