/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/test_node.c - a cluster node for the tests, run as its own
 * process (so a test can kill -9 it).
 *
 *   test_node --redis ADDR --prefix P --id ID --out FILE [--routees N]
 *             [--user U --password P] [--inflight N] [--heartbeat MS] [--dead-after MS]
 *             [--max-deliveries N] [--max-payload N] [--sleep-us N]
 *             [--crash-on PAYLOAD]
 *
 * Handlers:
 *   record  appends "<payload> <deliveries>\n" to FILE (one write(2) with
 *           O_APPEND: a line is whole or absent, even after kill -9), after
 *           sleeping --sleep-us
 *   crash   as record, but kills its own process (SIGKILL) first when the
 *           payload equals --crash-on
 *   echo    replies with the payload
 *   fail    fails with code -77, message "failed on purpose"
 *   noreply returns without replying
 *   slow    sleeps <payload> ms, then replies "late"
 *   stats   replies "fetched=.. acked=.. duplicates=.. claimed=..
 *           malformed=.. failed=.. no_handler=.. dead_lettered=..
 *           reconnects=.. expired=.. replies_sent=.."
 * Prints "ready" once joined and started; SIGTERM leaves gracefully and
 * exits 0.  Exit 2: bad arguments; 3: join failed.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "routepool/cluster.h"
#include "routepool/routepool.h"

static int out_fd = -1;
static long sleep_us;
static const char *crash_on;

static void nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (us > 0 && nanosleep(&ts, &ts) != 0) {
    }
}

static void record(rp_cluster_job *job, void *user)
{
    (void)user;
    size_t len;
    const char *p = rp_cluster_job_payload(job, &len);
    char line[512];
    if (sleep_us)
        nap_us(sleep_us);
    int n = snprintf(line, sizeof line, "%.*s %u\n", (int)(len > 400 ? 400 : len), p,
                     rp_cluster_job_deliveries(job));
    if (n > 0 && write(out_fd, line, (size_t)n) != n)
        fprintf(stderr, "test_node: short write\n");
}

static void crash(rp_cluster_job *job, void *user)
{
    size_t len;
    const char *p = rp_cluster_job_payload(job, &len);
    if (crash_on && len == strlen(crash_on) && memcmp(p, crash_on, len) == 0)
        kill(getpid(), SIGKILL);
    record(job, user);
}

static void echo(rp_cluster_job *job, void *user)
{
    (void)user;
    size_t len;
    const void *p = rp_cluster_job_payload(job, &len);
    rp_cluster_job_reply(job, p, len);
}

static void fail(rp_cluster_job *job, void *user)
{
    (void)user;
    rp_cluster_job_fail(job, -77, "failed on purpose");
}

static void noreply(rp_cluster_job *job, void *user)
{
    (void)job;
    (void)user;
}

static void slow(rp_cluster_job *job, void *user)
{
    (void)user;
    const char *p = rp_cluster_job_payload(job, NULL);
    nap_us(atol(p) * 1000L);
    rp_cluster_job_reply(job, "late", 4);
}

static void stats(rp_cluster_job *job, void *user)
{
    rp_cluster_stats s;
    char buf[512];
    rp_cluster_node_stats(user, &s);
    int n = snprintf(buf, sizeof buf,
                     "fetched=%llu acked=%llu duplicates=%llu claimed=%llu malformed=%llu "
                     "failed=%llu no_handler=%llu dead_lettered=%llu reconnects=%llu "
                     "expired=%llu replies_sent=%llu",
                     (unsigned long long)s.fetched, (unsigned long long)s.acked,
                     (unsigned long long)s.duplicates, (unsigned long long)s.claimed,
                     (unsigned long long)s.malformed, (unsigned long long)s.failed,
                     (unsigned long long)s.no_handler, (unsigned long long)s.dead_lettered,
                     (unsigned long long)s.reconnects, (unsigned long long)s.expired,
                     (unsigned long long)s.replies_sent);
    rp_cluster_job_reply(job, buf, (size_t)n);
}

static int parse(int argc, char **argv, rp_cluster_options *o, unsigned *routees,
                 const char **out)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--redis")) o->redis = v;
        else if (!strcmp(k, "--prefix")) o->prefix = v;
        else if (!strcmp(k, "--id")) o->node_id = v;
        else if (!strcmp(k, "--user")) o->user = v;
        else if (!strcmp(k, "--password")) o->password = v;
        else if (!strcmp(k, "--out")) *out = v;
        else if (!strcmp(k, "--routees")) *routees = (unsigned)atoi(v);
        else if (!strcmp(k, "--inflight")) o->max_inflight = (unsigned)atoi(v);
        else if (!strcmp(k, "--heartbeat")) o->heartbeat_ms = atoi(v);
        else if (!strcmp(k, "--dead-after")) o->dead_after_ms = atoi(v);
        else if (!strcmp(k, "--max-deliveries")) o->max_deliveries = (unsigned)atoi(v);
        else if (!strcmp(k, "--max-payload")) o->max_payload = (size_t)atol(v);
        else if (!strcmp(k, "--sleep-us")) sleep_us = atol(v);
        else if (!strcmp(k, "--crash-on")) crash_on = v;
        else return -1;
    }
    return *out ? 0 : -1;
}

static int register_all(rp_cluster_node *node)
{
    static const struct { const char *name; rp_cluster_handler_fn fn; } hs[] = {
        {"record", record}, {"crash", crash}, {"echo", echo}, {"fail", fail},
        {"noreply", noreply}, {"slow", slow}, {"stats", stats}};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
        if (rp_cluster_handle(node, hs[i].name, hs[i].fn, node) < 0)
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    rp_cluster_options o;
    rp_pool_options po;
    unsigned routees = 2;
    const char *out = NULL;
    rp_cluster_options_init(&o);
    if (parse(argc, argv, &o, &routees, &out) < 0) {
        fprintf(stderr, "test_node: bad arguments\n");
        return 2;
    }
    out_fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread inherits it */
    rp_pool_options_init(&po);
    po.routees = routees;
    rp_pool *pool;
    rp_cluster_node *node;
    if (out_fd < 0 || rp_pool_create(&pool, &po) < 0)
        return 3;
    if (rp_cluster_join(&node, pool, &o) < 0) {
        fprintf(stderr, "test_node: join: %s\n", rp_errmsg());
        rp_pool_destroy(pool);
        return 3;
    }
    if (register_all(node) < 0 || rp_cluster_start(node) < 0)
        return 3;
    printf("ready %s\n", rp_cluster_node_id(node));
    fflush(stdout);
    int sig;
    sigwait(&set, &sig);
    rp_cluster_leave(node);
    rp_pool_destroy(pool);
    close(out_fd);
    return 0;
}
