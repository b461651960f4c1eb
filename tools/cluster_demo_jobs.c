/* SPDX-License-Identifier: MIT */
/*
 * tools/cluster_demo_jobs.c - the handlers built into rp-node
 * (--plugin @demo), for rp-cluster demo and for trying a cluster without
 * writing a plugin.  They register through the plugin registry like any
 * plugin (routepool/plugin.h).
 *
 *   work  spin for a number of microseconds: the payload's decimal number,
 *         or its second field when it reads "TAG/US/..." (0..100000;
 *         anything else: 0); an ask gets the node id as its reply.
 *   echo  reply with the payload, unchanged (a tell just runs).
 *
 * With --plugin-arg log=PATH every job appends one line to PATH,
 * "ran <node> <handler> <job id> <deliveries> <payload>" (the payload's
 * first 64 bytes, '?' for anything but [A-Za-z0-9/._-]), with one write() on an
 * O_APPEND descriptor: lines from concurrent routees (and from several
 * nodes sharing the file) never interleave, and a line is in the file
 * before the job returns, so before its entry is acknowledged — a node
 * killed with kill -9 may lose no line of a job that Redis thinks is done.
 * That is what lets rp-cluster demo prove that nothing was lost.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster_plugin.h"

static struct {
    int log_fd;               /* -1: no log */
    const char *node_id;      /* borrowed from the node */
} demo = {-1, ""};

/* The payload as a loggable word: untrusted bytes never reach the log. */
static void payload_word(rp_cluster_job *job, char *out, size_t cap)
{
    size_t len, n = 0;
    const char *p = rp_cluster_job_payload(job, &len);

    for (size_t i = 0; i < len && n + 1 < cap && i < 64; i++) {
        char ch = p[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '/' || ch == '.' || ch == '_' || ch == '-';
        out[n++] = ok ? ch : '?';
    }
    if (n == 0 && cap > 1)
        out[n++] = '-';
    out[n] = '\0';
}

static void log_job(rp_cluster_job *job)
{
    char line[512], word[72];

    if (demo.log_fd < 0)
        return;
    payload_word(job, word, sizeof word);
    int n = snprintf(line, sizeof line, "ran %s %s %s %u %s\n", demo.node_id,
                     rp_cluster_job_handler(job), rp_cluster_job_id(job),
                     rp_cluster_job_deliveries(job), word);
    if (n > 0 && (size_t)n < sizeof line && write(demo.log_fd, line, (size_t)n) != n)
        fprintf(stderr, "rp-node @demo: log write failed: %s\n", strerror(errno));
}

static long payload_us(rp_cluster_job *job)
{
    size_t len;
    const char *p = rp_cluster_job_payload(job, &len);
    const char *slash = p ? memchr(p, '/', len) : NULL;
    char *end;

    if (slash) {                       /* "TAG/US/...": the second field */
        len -= (size_t)(slash + 1 - p);
        p = slash + 1;
        const char *next = memchr(p, '/', len);
        len = next ? (size_t)(next - p) : len;
    }
    if (!p || len == 0 || len > 6 || p[0] < '0' || p[0] > '9')
        return 0;
    long us = strtol(p, &end, 10);
    return end == p + len && us >= 0 && us <= 100000 ? us : 0;
}

static void spin_us(long us)
{
    struct timespec t0, t;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static void demo_work(rp_cluster_job *job, void *user)
{
    (void)user;
    spin_us(payload_us(job));
    log_job(job);
    if (rp_cluster_job_is_ask(job))
        rp_cluster_job_reply(job, demo.node_id, strlen(demo.node_id));
}

static void demo_echo(rp_cluster_job *job, void *user)
{
    size_t len;
    const void *p = rp_cluster_job_payload(job, &len);

    (void)user;
    log_job(job);
    if (rp_cluster_job_is_ask(job))
        rp_cluster_job_reply(job, p, len);
}

int cluster_demo_jobs_register(rp_plugin_registry *reg)
{
    int rc;

    demo.node_id = rp_cluster_node_id(reg->node);
    if (reg->arg && !strncmp(reg->arg, "log=", 4)) {
        demo.log_fd = open(reg->arg + 4, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (demo.log_fd < 0)
            return rp_error_set(RP_EINVAL, "@demo: cannot open log '%s': %s", reg->arg + 4,
                                 strerror(errno));
    } else if (reg->arg) {
        return rp_error_set(RP_EINVAL, "@demo: --plugin-arg must be log=PATH");
    }
    if ((rc = reg->handle(reg, "work", demo_work, NULL)) < 0 ||
        (rc = reg->handle(reg, "echo", demo_echo, NULL)) < 0)
        return rc;
    return 0;
}
