/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/jobs_plugin.c - the handler plugin test_tools.sh loads into
 * rp-node (routepool/plugin.h), which is also an rp-tune --job plugin: one
 * .so serving both hosts, as the ABI promises.
 *
 * Cluster handlers (rp_plugin_register):
 *   echo   reply with the payload unchanged
 *   fail   fail with code -77 and the message "failed on purpose: <payload>"
 *   sleep  sleep the payload's milliseconds (0..10000), reply "slept"
 *   crash  payload "boom": the process dies at once (_exit(86) while the
 *          entry is fetched and unacknowledged: the poison-entry case);
 *          "abort": abort(); anything else: reply "ok"
 *   count  count the job (per node) and reply the count so far
 *
 * rp-tune job (docs/tuning.md): jp_spin, with jp_spin_init / jp_spin_fini.
 *
 * With --plugin-arg log=PATH every cluster job appends
 * "<handler> <job id> <deliveries>\n" to PATH with one O_APPEND write
 * before it replies, and rp_plugin_unload appends "unload".  So the test
 * counts what ran from outside the process, also after kill -9.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "routepool/cluster.h"
#include "routepool/plugin.h"

/* The exported ABI (prototypes for -Wmissing-prototypes). */
int rp_plugin_register(rp_plugin_registry *reg);
void rp_plugin_unload(const char *arg);
void *jp_spin_init(const char *arg);
void jp_spin(rp_job_ctx *ctx, void *arg);
void jp_spin_fini(void *state);

static int log_fd = -1;
static atomic_uint_fast64_t counted;

static void log_line(const char *line)
{
    size_t n = strlen(line);

    if (log_fd >= 0 && write(log_fd, line, n) != (ssize_t)n)
        fprintf(stderr, "jobs_plugin: log write: %s\n", strerror(errno));
}

static void log_job(rp_cluster_job *job)
{
    char line[320];

    snprintf(line, sizeof line, "%s %s %u\n", rp_cluster_job_handler(job),
             rp_cluster_job_id(job), rp_cluster_job_deliveries(job));
    log_line(line);
}

/* The payload as a C string when it is exactly s. */
static bool payload_is(rp_cluster_job *job, const char *s)
{
    size_t len;
    const char *p = rp_cluster_job_payload(job, &len);

    return p && len == strlen(s) && !memcmp(p, s, len);
}

static void h_echo(rp_cluster_job *job, void *user)
{
    size_t len;
    const void *p = rp_cluster_job_payload(job, &len);

    (void)user;
    log_job(job);
    if (rp_cluster_job_is_ask(job))
        rp_cluster_job_reply(job, p, len);
}

static void h_fail(rp_cluster_job *job, void *user)
{
    size_t len;
    const char *p = rp_cluster_job_payload(job, &len);
    char msg[200];

    (void)user;
    log_job(job);
    snprintf(msg, sizeof msg, "failed on purpose: %.*s", (int)(len > 100 ? 100 : len), p);
    rp_cluster_job_fail(job, -77, msg);
}

static void h_sleep(rp_cluster_job *job, void *user)
{
    size_t len;
    const char *p = rp_cluster_job_payload(job, &len);
    long ms = len && len < 6 ? strtol(p, NULL, 10) : 0;
    struct timespec ts;

    (void)user;
    ms = ms < 0 ? 0 : ms > 10000 ? 10000 : ms;
    ts.tv_sec = ms / 1000, ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    log_job(job);
    if (rp_cluster_job_is_ask(job))
        rp_cluster_job_reply(job, "slept", 5);
}

static void h_crash(rp_cluster_job *job, void *user)
{
    (void)user;
    if (payload_is(job, "boom"))
        _exit(86);
    if (payload_is(job, "abort"))
        abort();
    log_job(job);
    if (rp_cluster_job_is_ask(job))
        rp_cluster_job_reply(job, "ok", 2);
}

static void h_count(rp_cluster_job *job, void *user)
{
    char buf[24];

    (void)user;
    uint64_t n = atomic_fetch_add_explicit(&counted, 1, memory_order_relaxed) + 1;
    log_job(job);
    int len = snprintf(buf, sizeof buf, "%llu", (unsigned long long)n);
    if (rp_cluster_job_is_ask(job))
        rp_cluster_job_reply(job, buf, (size_t)len);
}

int rp_plugin_register(rp_plugin_registry *reg)
{
    static const struct {
        const char *name;
        void (*fn)(rp_cluster_job *, void *);
    } table[] = {{"echo", h_echo}, {"fail", h_fail}, {"sleep", h_sleep},
                 {"crash", h_crash}, {"count", h_count}};

    if (reg->abi_version < 1 || reg->size < sizeof *reg)
        return RP_EINVAL;
    if (reg->arg && !strncmp(reg->arg, "log=", 4) &&
        (log_fd = open(reg->arg + 4, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
        return RP_EINVAL;
    if (reg->arg && !strcmp(reg->arg, "refuse"))
        return RP_EINVAL;                 /* the host must exit 1 and not unload */
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        int rc = reg->handle(reg, table[i].name, table[i].fn, NULL);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void rp_plugin_unload(const char *arg)
{
    (void)arg;
    log_line("unload\n");
    if (log_fd >= 0)
        close(log_fd);
    log_fd = -1;
}

/* ---- the rp-tune side ---- */

typedef struct jp_state {
    unsigned spin;
} jp_state;

void *jp_spin_init(const char *arg)
{
    jp_state *s = malloc(sizeof *s);

    if (s)
        s->spin = arg ? (unsigned)strtoul(arg, NULL, 10) : 100;
    return s;
}

void jp_spin(rp_job_ctx *ctx, void *arg)
{
    const jp_state *s = arg;
    volatile uint64_t x = 1;

    (void)ctx;
    for (unsigned i = 0; i < s->spin; i++)
        x = x * 6364136223846793005ull + 1;
}

void jp_spin_fini(void *state)
{
    free(state);
}
