/* SPDX-License-Identifier: MIT */
/*
 * bench/cluster.c - rp-bench-cluster: routepool cluster nodes end to end on
 * one Redis, against BullMQ and the Redis Streams floor measured in the
 * same bench/run (issue 19; docs/cluster.md, "Performance").
 *
 * Two measurements, each with 2 and with 3 nodes:
 *
 *  - throughput: --jobs tiny jobs (a no-op handler, 16-byte payload) from
 *    one client-only node through a round-robin cluster router with
 *    rp_cluster_tell_batch (--batch entries per pipelined round trip), run
 *    by the nodes, acknowledged; jobs/s from the first submit until every
 *    inbox is empty (entries are deleted when acknowledged, so an empty
 *    inbox means every job ran and was acknowledged).  --runs repeats, the
 *    median is reported.
 *  - ask: --asks sequential asks to an echo handler (16 bytes out and back),
 *    each waited for before the next; p50 and p99 of the round trip.
 *
 * Each node is this program re-executed with --serve (a separate process
 * with its own pool of --routees routees and --max-inflight prefetch, as a
 * real rp-node), so the nodes, the producer and Redis share the machine's
 * CPUs exactly as a one-machine deployment would.  A node prints "ready"
 * once it fetches, and on stdin EOF leaves gracefully and prints its
 * counters; the parent checks that the nodes acknowledged every job
 * exactly once (no duplicate, nothing malformed).
 *
 * Where the time goes: Redis's CPU per job (INFO CPU before/after) and
 * Redis commands per job by kind (INFO commandstats before/after):
 * XADD, XREADGROUP (a node's fetch round trip, which carries the previous
 * batch's XACK + XDEL pipelined), EVALSHA (scripts: heartbeats, moves),
 * the polls of the parent (XLEN) left out.
 *
 * The peers: --peers FILE is the key=value file that bench/run had
 * rp-bench-streams-floor and the BullMQ script write in this same run; the
 * ratios and the verdicts against issue 19's targets (throughput >= 10x
 * BullMQ and >= 60 % of the floor at COUNT 1024; ask p50 <= 0.25x
 * BullMQ's) are printed from them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster_redis.h"
#include "common.h"
#include "routepool/cluster.h"
#include "routepool/routepool.h"

#define MAX_NODES 3

typedef struct cfg {
    const char *redis, *peers;
    uint64_t jobs, asks, batch, routees, inflight;
    long long idle_spin_us;   /* the nodes' pools' idle_spin_us; -1: the pool's default */
    int runs;
    bool quick;
} cfg;

/* ---- the node (--serve) ---- */

static void h_noop(rp_cluster_job *job, void *user)
{
    (void)job, (void)user;
}

static void h_echo(rp_cluster_job *job, void *user)
{
    size_t len;
    const void *p = rp_cluster_job_payload(job, &len);

    (void)user;
    rp_cluster_job_reply(job, p, len);
}

static int serve(const cfg *c, const char *prefix, const char *id)
{
    rp_pool_options po;
    rp_cluster_options co;
    rp_pool *pool = NULL;
    rp_cluster_node *node = NULL;
    rp_cluster_stats st;
    char buf[64];

    rp_pool_options_init(&po);
    po.routees = (unsigned)c->routees;
    if (c->idle_spin_us >= 0)
        po.idle_spin_us = (unsigned)c->idle_spin_us;
    rp_cluster_options_init(&co);
    co.redis = c->redis, co.prefix = prefix, co.node_id = id;
    co.max_inflight = (unsigned)c->inflight;
    int rc = rp_pool_create(&pool, &po);
    if (rc == 0)
        rc = rp_cluster_join(&node, pool, &co);
    if (rc == 0)
        rc = rp_cluster_handle(node, "noop", h_noop, NULL);
    if (rc == 0)
        rc = rp_cluster_handle(node, "echo", h_echo, NULL);
    if (rc == 0)
        rc = rp_cluster_start(node);
    if (rc < 0) {
        fprintf(stderr, "rp-bench-cluster node %s: %s: %s\n", id, rp_err_name(rc), rp_errmsg());
        rp_cluster_leave(node);
        rp_pool_destroy(pool);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    while (read(STDIN_FILENO, buf, sizeof buf) > 0)
        ;
    /* Acknowledgements go out with the next fetch: wait (bounded) until
     * every fetched entry was acknowledged before reading the counters. */
    const struct timespec tick = {0, 5000000};
    for (int i = 0; i < 1000; i++) {
        rp_cluster_node_stats(node, &st);
        if (st.inflight == 0 && st.acked + st.malformed >= st.fetched)
            break;
        nanosleep(&tick, NULL);
    }
    rp_cluster_leave(node);
    rp_pool_destroy(pool);
    printf("stats fetched=%" PRIu64 " acked=%" PRIu64 " duplicates=%" PRIu64 " malformed=%" PRIu64
           " claimed=%" PRIu64 "\n", st.fetched, st.acked, st.duplicates, st.malformed, st.claimed);
    return 0;
}

/* ---- node processes ---- */

typedef struct node_proc {
    pid_t pid;
    int in_fd;            /* the node's stdin: closed to make it leave */
    FILE *out;            /* the node's stdout: "ready", then "stats ..." */
    char id[32];
} node_proc;

static bool spawn_node(const cfg *c, const char *prefix, int k, node_proc *np)
{
    int in[2], out[2];
    char routees[24], inflight[24], spin[24];

    snprintf(np->id, sizeof np->id, "bench-node-%d", k);
    snprintf(routees, sizeof routees, "%" PRIu64, c->routees);
    snprintf(inflight, sizeof inflight, "%" PRIu64, c->inflight);
    snprintf(spin, sizeof spin, "%lld", c->idle_spin_us);
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
        return false;
    pid_t parent = getpid();
    if ((np->pid = fork()) == 0) {
        /* A node must not outlive a benchmark that crashed or was killed. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
            _exit(127);
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        execl("/proc/self/exe", "rp-bench-cluster", "--serve", prefix, np->id, "--redis", c->redis,
              "--routees", routees, "--max-inflight", inflight, "--idle-spin-us", spin,
              (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    np->in_fd = in[1];
    np->out = fdopen(out[0], "r");
    char line[64];
    if (np->pid < 0 || !np->out || !fgets(line, sizeof line, np->out) || strcmp(line, "ready\n")) {
        fprintf(stderr, "rp-bench-cluster: node %s did not start\n", np->id);
        return false;
    }
    return true;
}

typedef struct node_totals {
    uint64_t acked, duplicates, malformed, claimed;
} node_totals;

/* Close its stdin (it leaves), read its counters, reap it. */
static bool stop_node(node_proc *np, node_totals *t)
{
    char line[256];
    unsigned long long f = 0, a = 0, d = 0, m = 0, cl = 0;
    bool ok;
    int status = 0;

    close(np->in_fd);
    ok = np->out && fgets(line, sizeof line, np->out) &&
         sscanf(line, "stats fetched=%llu acked=%llu duplicates=%llu malformed=%llu claimed=%llu",
                &f, &a, &d, &m, &cl) == 5;
    if (np->out)
        fclose(np->out);
    waitpid(np->pid, &status, 0);
    t->acked += a, t->duplicates += d, t->malformed += m, t->claimed += cl;
    return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- Redis-side accounting ---- */

/* INFO commandstats: calls of the commands that carry the transport. */
#define CMD_LIST(X) X(xadd) X(xreadgroup) X(xack) X(xdel) X(evalsha) X(eval) X(sismember) \
    X(xlen) X(rpush) X(blpop) X(hgetall) X(time)
typedef struct cmdstats {
#define CMD_FIELD(name) double name;
    CMD_LIST(CMD_FIELD)
#undef CMD_FIELD
    double total;         /* total_commands_processed */
    double cpu_s;
    double net_in, net_out;   /* bytes Redis read and wrote (INFO stats) */
    cr_sched prod, nodes;     /* this process (the producer), the nodes' */
} cmdstats;

static double info_field(const char *text, const char *key)
{
    const char *p = strstr(text, key);

    return p ? strtod(p + strlen(key), NULL) : 0;
}

static void sched_add(cr_sched *to, const cr_sched *x)
{
    to->cpu_ns += x->cpu_ns, to->wait_ns += x->wait_ns, to->slices += x->slices;
}

static void sched_delta(cr_sched *d, const cr_sched *b, const cr_sched *a, double n)
{
    d->cpu_ns = (b->cpu_ns - a->cpu_ns) / n;
    d->wait_ns = (b->wait_ns - a->wait_ns) / n;
    d->slices = (b->slices - a->slices) / n;
}

/* Redis's counters, then the producer's and the nodes' scheduler totals. */
static bool read_cmdstats(redisContext *rc, const node_proc *np, int n, cmdstats *s)
{
    redisReply *r = redisCommand(rc, "INFO commandstats");
    redisReply *t = r ? redisCommand(rc, "INFO stats") : NULL;
    bool ok = r && t && r->type == REDIS_REPLY_STRING && t->type == REDIS_REPLY_STRING;

    if (ok) {
#define CMD_READ(name) s->name = info_field(r->str, "cmdstat_" #name ":calls=");
        CMD_LIST(CMD_READ)
#undef CMD_READ
        s->total = info_field(t->str, "total_commands_processed:");
        s->net_in = info_field(t->str, "total_net_input_bytes:");
        s->net_out = info_field(t->str, "total_net_output_bytes:");
        s->cpu_s = cr_redis_cpu_s(rc);
    }
    freeReplyObject(r);
    freeReplyObject(t);
    ok = ok && cr_sched_read(0, &s->prod);
    s->nodes = (cr_sched){0};
    for (int i = 0; ok && i < n; i++) {
        cr_sched one;
        ok = cr_sched_read((int)np[i].pid, &one);
        sched_add(&s->nodes, &one);
    }
    return ok;
}

/* The entries left in the inboxes (not yet acknowledged, as acknowledged
 * entries are deleted), or -1; 0: every job ran and was acknowledged. */
static long long inboxes_left(redisContext *rc, const char *prefix, const node_proc *np, int n)
{
    char key[128];
    long long left = 0;

    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s:inbox:%s", prefix, np[i].id);
        redisAppendCommandArgv(rc, 2, (const char *[]){"XLEN", key}, NULL);
    }
    for (int i = 0; i < n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(rc, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_INTEGER) {
            freeReplyObject(r);
            return -1;
        }
        left += r->integer;
        freeReplyObject(r);
    }
    return left;
}

static bool wait_empty(redisContext *rc, const char *prefix, const node_proc *np, int n,
                       int timeout_s)
{
    const struct timespec ms = {0, 1000000};
    int64_t deadline = bench_now_ns() + (int64_t)timeout_s * 1000000000;
    long long left;

    while ((left = inboxes_left(rc, prefix, np, n)) > 0 && bench_now_ns() < deadline)
        nanosleep(&ms, NULL);
    return left == 0;
}

/* ---- the producer ---- */

typedef struct producer {
    rp_cluster_node *node;        /* client-only */
    rp_cluster_router *router;    /* round-robin over the nodes */
    const node_proc *np;
    int n;
} producer;

static const char PAYLOAD[16] = "0123456789abcdef";

/* n tells to the no-op handler, in pipelined batches of c->batch. */
static bool send_jobs(const cfg *c, producer *p, uint64_t n)
{
    const void **payloads = malloc(c->batch * sizeof *payloads);
    size_t *lens = malloc(c->batch * sizeof *lens);
    bool ok = payloads && lens;

    for (uint64_t i = 0; ok && i < c->batch; i++)
        payloads[i] = PAYLOAD, lens[i] = sizeof PAYLOAD;
    for (uint64_t sent = 0; ok && sent < n;) {
        size_t k = (size_t)(n - sent < c->batch ? n - sent : c->batch);
        int rc = rp_cluster_tell_batch(p->router, "noop", payloads, lens, k, NULL);
        if (rc < 0) {
            fprintf(stderr, "rp_cluster_tell_batch: %s: %s\n", rp_err_name(rc), rp_errmsg());
            ok = false;
        }
        sent += k;
    }
    free(payloads);
    free(lens);
    return ok;
}

typedef struct tput_result {
    double jobs_per_s;
    double submit_per_s;  /* the producer's rate: first submit to the last batch stored */
    double backlog;       /* entries in the inboxes then */
    double drain_ms;      /* from then until every inbox was empty */
    cmdstats per_job;     /* deltas divided by the jobs */
} tput_result;

static bool tput_run(const cfg *c, producer *p, redisContext *rc, const char *prefix,
                     tput_result *out)
{
    cmdstats a, b;

    if (!read_cmdstats(rc, p->np, p->n, &a))
        return false;
    int64_t t0 = bench_now_ns();
    bool sent = send_jobs(c, p, c->jobs);
    int64_t t_sent = bench_now_ns();
    out->backlog = (double)inboxes_left(rc, prefix, p->np, p->n);
    if (!sent || !wait_empty(rc, prefix, p->np, p->n, 120)) {
        fprintf(stderr, "rp-bench-cluster: the jobs did not all complete\n");
        return false;
    }
    int64_t t1 = bench_now_ns();
    if (!read_cmdstats(rc, p->np, p->n, &b))
        return false;
    out->jobs_per_s = (double)c->jobs * 1e9 / (double)(t1 - t0);
    out->submit_per_s = (double)c->jobs * 1e9 / (double)(t_sent - t0);
    out->drain_ms = (double)(t1 - t_sent) / 1e6;
    double n = (double)c->jobs;
#define CMD_DELTA(name) out->per_job.name = (b.name - a.name) / n;
    CMD_LIST(CMD_DELTA)
#undef CMD_DELTA
    /* The polls (XLEN) and the two INFO calls are the benchmark's, not the
     * cluster's; their bytes (about 60 per poll) are left in. */
    out->per_job.total = (b.total - a.total - (b.xlen - a.xlen) - 2) / n;
    out->per_job.cpu_s = (b.cpu_s - a.cpu_s) / n;
    out->per_job.net_in = (b.net_in - a.net_in) / n;
    out->per_job.net_out = (b.net_out - a.net_out) / n;
    sched_delta(&out->per_job.prod, &b.prod, &a.prod, n);
    sched_delta(&out->per_job.nodes, &b.nodes, &a.nodes, n);
    return true;
}

/* Sequential asks to echo; p50/p99 in microseconds. */
static bool ask_run(const cfg *c, producer *p, double *p50, double *p99)
{
    uint64_t warm = c->asks / 10 + 10;
    int64_t *rtt = malloc(c->asks * sizeof *rtt);
    bool ok = rtt != NULL;

    for (uint64_t i = 0; ok && i < c->asks + warm; i++) {
        rp_future *f = NULL;
        size_t len = 0;
        int64_t t0 = bench_now_ns();
        int rc = rp_cluster_ask(p->router, "echo", PAYLOAD, sizeof PAYLOAD, 5000, &f);
        if (rc == 0)
            rp_future_wait(f, -1);
        const void *reply = rc == 0 ? rp_cluster_reply_bytes(f, &len) : NULL;
        int64_t t1 = bench_now_ns();
        ok = reply && len == sizeof PAYLOAD && !memcmp(reply, PAYLOAD, len);
        if (!ok)
            fprintf(stderr, "rp-bench-cluster: ask %" PRIu64 " failed: %s\n", i,
                    rc < 0 ? rp_errmsg() : rp_future_error(f) ? rp_future_error(f)->message : "bad reply");
        rp_future_release(f);
        if (ok && i >= warm)
            rtt[i - warm] = (t1 - t0) / 1000;
    }
    if (ok) {
        bench_sort_i64(rtt, c->asks);
        *p50 = (double)bench_pct_sorted(rtt, c->asks, 0.50);
        *p99 = (double)bench_pct_sorted(rtt, c->asks, 0.99);
    }
    free(rtt);
    return ok;
}

/* ---- one configuration: n nodes ---- */

typedef struct conf_result {
    int nodes;
    double tput[16];              /* per run */
    tput_result med;              /* per-job stats of the median run */
    double ask_p50, ask_p99;
} conf_result;

static bool wait_members(redisContext *rc, const char *prefix, int n)
{
    char key[96];
    const struct timespec tick = {0, 20000000};

    snprintf(key, sizeof key, "%s:depth", prefix);
    for (int i = 0; i < 500; i++) {
        redisReply *r = redisCommandArgv(rc, 2, (const char *[]){"HLEN", key}, NULL);
        bool all = r && r->type == REDIS_REPLY_INTEGER && r->integer == n;
        freeReplyObject(r);
        if (all)
            return true;
        nanosleep(&tick, NULL);
    }
    return false;
}

static bool make_producer(const cfg *c, const char *prefix, producer *p)
{
    rp_cluster_options co;
    rp_cluster_router_options ro;

    rp_cluster_options_init(&co);
    co.redis = c->redis, co.prefix = prefix, co.node_id = "bench-producer";
    int rc = rp_cluster_join(&p->node, NULL, &co);
    if (rc == 0) {
        rp_cluster_router_options_init(&ro);
        ro.kind = RP_CLUSTER_ROUTER_ROUND_ROBIN;
        rc = rp_cluster_router_create(&p->router, p->node, &ro);
    }
    /* Until the router's membership has every node (a bounded wait). */
    const struct timespec tick = {0, 20000000};
    for (int i = 0; rc == 0 && i < 500 && rp_cluster_router_size(p->router) < (size_t)p->n; i++) {
        nanosleep(&tick, NULL);
        rp_cluster_router_refresh(p->router);
    }
    if (rc == 0 && rp_cluster_router_size(p->router) != (size_t)p->n)
        rc = rp_error_set(RP_ENOROUTEE, "the router sees %zu of %d nodes",
                          rp_cluster_router_size(p->router), p->n);
    if (rc < 0)
        fprintf(stderr, "rp-bench-cluster producer: %s: %s\n", rp_err_name(rc), rp_errmsg());
    return rc == 0;
}

static int cmp_tput(const void *a, const void *b)
{
    const tput_result *x = a, *y = b;
    return (x->jobs_per_s > y->jobs_per_s) - (x->jobs_per_s < y->jobs_per_s);
}

static bool measure_conf(const cfg *c, redisContext *rc, const char *prefix, producer *p,
                         conf_result *res)
{
    tput_result runs[16];

    if (!send_jobs(c, p, c->jobs / 10 + 1000) || !wait_empty(rc, prefix, p->np, p->n, 60))
        return false;                                  /* warm-up */
    for (int r = 0; r < c->runs; r++) {
        if (!tput_run(c, p, rc, prefix, &runs[r]))
            return false;
        res->tput[r] = runs[r].jobs_per_s;
        printf("  %d nodes, run %d: %9.0f jobs/s  %5.2f us Redis CPU/job  %5.2f Redis commands/job\n",
               p->n, r + 1, runs[r].jobs_per_s, runs[r].per_job.cpu_s * 1e6, runs[r].per_job.total);
        fflush(stdout);
    }
    qsort(runs, (size_t)c->runs, sizeof runs[0], cmp_tput);
    res->med = runs[(c->runs - 1) / 2];
    return c->asks == 0 ||
           (ask_run(c, p, &res->ask_p50, &res->ask_p99) && wait_empty(rc, prefix, p->np, p->n, 60));
}

static bool run_conf(const cfg *c, redisContext *rc, int n, conf_result *res)
{
    char prefix[64];
    node_proc np[MAX_NODES];
    producer p = {.np = np, .n = 0};
    node_totals tot = {0};
    bool ok = true;

    snprintf(prefix, sizeof prefix, "rpbench%ld-%d", (long)getpid(), n);
    res->nodes = n;
    for (int i = 0; ok && i < n; i++)
        if ((ok = spawn_node(c, prefix, i, &np[i])))
            p.n++;
    ok = ok && wait_members(rc, prefix, n) && make_producer(c, prefix, &p);
    ok = ok && measure_conf(c, rc, prefix, &p, res);
    rp_cluster_router_destroy(p.router);
    rp_cluster_leave(p.node);
    for (int i = 0; i < p.n; i++)
        ok &= stop_node(&np[i], &tot);
    uint64_t expect = (c->jobs / 10 + 1000) + c->jobs * (uint64_t)c->runs +
                      (c->asks ? c->asks + c->asks / 10 + 10 : 0);
    if (ok && (tot.acked != expect || tot.duplicates || tot.malformed)) {
        fprintf(stderr, "rp-bench-cluster: %d nodes acknowledged %" PRIu64 " of %" PRIu64
                " (duplicates %" PRIu64 ", malformed %" PRIu64 ")\n", n, tot.acked, expect,
                tot.duplicates, tot.malformed);
        ok = false;
    }
    return ok;
}

/* The unit of an ask's cost: one sequential PING round trip to Redis. */
static bool ping_rtt(redisContext *rc, int n, double *p50)
{
    int64_t *v = malloc((size_t)n * sizeof *v);
    bool ok = v != NULL;

    for (int i = 0; ok && i < n; i++) {
        int64_t t0 = bench_now_ns();
        redisReply *r = redisCommand(rc, "PING");
        v[i] = (bench_now_ns() - t0) / 1000;
        ok = r && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
    }
    if (ok) {
        bench_sort_i64(v, (size_t)n);
        *p50 = (double)bench_pct_sorted(v, (size_t)n, 0.5);
    }
    free(v);
    return ok;
}

/* ---- report ---- */

static void csv_conf(const conf_result *r, int runs)
{
    char cas[64];
    double v[16];

    snprintf(cas, sizeof cas, "routepool cluster, %d nodes", r->nodes);
    memcpy(v, r->tput, sizeof v);
    bench_csv_samples("cluster", cas, "throughput", "jobs/s", v, (size_t)runs);
    bench_csv_row("cluster", cas, "redis-cpu", "us/job", r->med.per_job.cpu_s * 1e6,
                  r->med.per_job.cpu_s * 1e6, r->med.per_job.cpu_s * 1e6, 1);
    bench_csv_row("cluster", cas, "redis-commands", "per job", r->med.per_job.total,
                  r->med.per_job.total, r->med.per_job.total, 1);
    bench_csv_row("cluster", cas, "ask p50", "us", r->ask_p50, r->ask_p50, r->ask_p50, 1);
    bench_csv_row("cluster", cas, "ask p99", "us", r->ask_p99, r->ask_p99, r->ask_p99, 1);
}

static void print_table(const cfg *c, const conf_result *res, int n)
{
    printf("\n nodes     jobs/s  (min..max of %d)     ask p50   ask p99   Redis CPU/job"
           "  Redis cmds/job  round trips/job: producer  nodes\n", c->runs);
    for (int i = 0; i < n; i++) {
        const conf_result *r = &res[i];
        double v[16];
        memcpy(v, r->tput, sizeof v);
        double med = bench_median(v, (size_t)c->runs);
        const cmdstats *s = &r->med.per_job;
        printf(" %5d  %9.0f  (%.0f..%.0f)  %7.0f us  %6.0f us  %10.2f us  %14.2f  %24.4f  %6.4f\n",
               r->nodes, med, v[0], v[c->runs - 1], r->ask_p50, r->ask_p99, s->cpu_s * 1e6,
               s->total, 1.0 / (double)c->batch, s->xreadgroup);
        csv_conf(r, c->runs);
    }
}

/* One row of the breakdown: a value per configuration, then the floor's
 * (NAN: not measured, or no such thing for the floor). */
static void brow(const char *label, const char *fmt, const double *v, int n, double floor_v)
{
    char cell[32];

    printf(" %-34s", label);
    for (int i = 0; i <= n; i++) {
        double x = i < n ? v[i] : floor_v;
        if (x != x)
            snprintf(cell, sizeof cell, "-");
        else
            snprintf(cell, sizeof cell, fmt, x);
        printf(" %11s", cell);
    }
    printf("\n");
}

static double kv_or_nan(const char *peers, const char *key)
{
    double v;
    return cr_kv_read(peers, key, &v) ? v : NAN;
}

/* Where the time goes, per job, beside the floor's per entry (COUNT 1024). */
static void print_breakdown(const cfg *c, const conf_result *res, int n)
{
    double v[MAX_NODES], cpus = (double)sysconf(_SC_NPROCESSORS_ONLN);
    double f_redis = kv_or_nan(c->peers, "floor_b1024_redis_us");
    double f_prod = kv_or_nan(c->peers, "floor_b1024_producer_us");
    double f_cons = kv_or_nan(c->peers, "floor_b1024_consumer_us");
    double f_fill = kv_or_nan(c->peers, "floor_b1024_fill");
    const cmdstats *s[MAX_NODES];

    printf("\n Where the time goes, per job (the median run), beside the streams floor's per\n"
           " entry at COUNT 1024 (its producer thread / consumer thread in the producer / nodes\n"
           " rows); CPU from INFO CPU (Redis) and /proc/PID/task/TID/schedstat (the rest):\n");
    printf(" %-34s", "");
    for (int i = 0; i < n; i++)
        printf("     %d nodes", res[i].nodes);
    printf("       floor\n");
    for (int i = 0; i < n; i++)
        s[i] = &res[i].med.per_job;
#define ROW(label, fmt, expr, floor_v)                                                           \
    do {                                                                                       \
        for (int i = 0; i < n; i++)                                                            \
            v[i] = (expr);                                                                     \
        brow(label, fmt, v, n, floor_v);                                                       \
    } while (0)
    ROW("jobs/s", "%.0f", res[i].med.jobs_per_s, kv_or_nan(c->peers, "floor_b1024_per_s"));
    ROW("producer's submit rate, jobs/s", "%.0f", res[i].med.submit_per_s, NAN);
    ROW("  inbox backlog at the last submit", "%.0f", res[i].med.backlog, NAN);
    ROW("  then until all acknowledged, ms", "%.1f", res[i].med.drain_ms, NAN);
    ROW("Redis CPU, us", "%.2f", s[i]->cpu_s * 1e6, f_redis);
    ROW("producer CPU, us", "%.2f", s[i]->prod.cpu_ns / 1e3, f_prod);
    ROW("nodes' CPU, us", "%.2f", s[i]->nodes.cpu_ns / 1e3, f_cons);
    ROW("all CPU, us", "%.2f", s[i]->cpu_s * 1e6 + (s[i]->prod.cpu_ns + s[i]->nodes.cpu_ns) / 1e3,
        f_redis + f_prod + f_cons);
    char label[48];
    snprintf(label, sizeof label, "  bound on %.0f CPUs, jobs/s", cpus);
    ROW(label, "%.0f",
        cpus * 1e6 / (s[i]->cpu_s * 1e6 + (s[i]->prod.cpu_ns + s[i]->nodes.cpu_ns) / 1e3),
        cpus * 1e6 / (f_redis + f_prod + f_cons));
    ROW("clients runnable, not running, us", "%.2f", (s[i]->prod.wait_ns + s[i]->nodes.wait_ns) / 1e3,
        NAN);
    ROW("clients put on a CPU, per 100 jobs", "%.2f", (s[i]->prod.slices + s[i]->nodes.slices) * 100,
        NAN);
    ROW("Redis commands", "%.4f", s[i]->total, 1 + 3 / f_fill);
    ROW("  XADD", "%.4f", s[i]->xadd, 1.0);
    ROW("  XREADGROUP", "%.4f", s[i]->xreadgroup, 1 / f_fill);
    ROW("  XACK", "%.4f", s[i]->xack, 1 / f_fill);
    ROW("  XDEL", "%.4f", s[i]->xdel, 1 / f_fill);
    ROW("  EVALSHA+EVAL (heartbeat scripts)", "%.4f", s[i]->evalsha + s[i]->eval, 0.0);
    ROW("  HGETALL (routers' depth reads)", "%.4f", s[i]->hgetall, 0.0);
    ROW("bytes into Redis", "%.1f", s[i]->net_in, kv_or_nan(c->peers, "floor_b1024_in_bytes"));
    ROW("bytes out of Redis", "%.1f", s[i]->net_out, kv_or_nan(c->peers, "floor_b1024_out_bytes"));
    ROW("round trips: producer", "%.4f", 1.0 / (double)c->batch, NAN);
    ROW("round trips: nodes' fetches", "%.4f", s[i]->xreadgroup, 1 / f_fill);
#undef ROW
    printf(" (the producer pipelines rp_cluster_tell_batch of %" PRIu64 " per round trip; a node's\n"
           "  XREADGROUP carries the previous batch's XACK + XDEL in the same round trip; the\n"
           "  floor's producer keeps 256 XADDs in flight and writes them while replies come)\n",
           c->batch);
    for (int i = 0; i < n; i++) {
        char cas[64];
        snprintf(cas, sizeof cas, "routepool cluster, %d nodes", res[i].nodes);
        double cl = (s[i]->prod.cpu_ns + s[i]->nodes.cpu_ns) / 1e3;
        bench_csv_row("cluster", cas, "client-cpu", "us/job", cl, cl, cl, 1);
        bench_csv_row("cluster", cas, "redis-bytes-in", "B/job", s[i]->net_in, s[i]->net_in,
                      s[i]->net_in, 1);
    }
}

static const char *verdict(bool met)
{
    return met ? "MET" : "NOT MET";
}

/* Same-run ratios and issue 19's targets. */
static void print_ratios(const cfg *c, const conf_result *res, int n)
{
    double bull = 0, bull_p50 = 0, floor64 = 0, floor1024 = 0;
    bool have_bull = cr_kv_read(c->peers, "bullmq_jobs_per_s", &bull) &&
                     cr_kv_read(c->peers, "bullmq_ask_p50_us", &bull_p50) && bull > 0 && bull_p50 > 0;
    bool have_floor = cr_kv_read(c->peers, "floor_b1024_per_s", &floor1024) && floor1024 > 0;

    cr_kv_read(c->peers, "floor_b64_per_s", &floor64);
    printf("\npeers measured in this run: BullMQ %s; streams floor %s\n",
           have_bull ? "yes" : "no (not in --peers: ratios to it left out)",
           have_floor ? "yes" : "no (not in --peers: ratios to it left out)");
    if (have_bull) {
        printf("  BullMQ: %.0f jobs/s, ask p50 %.0f us\n", bull, bull_p50);
        /* The peer writes no CSV itself: its medians go into the summary here. */
        bench_csv_row("cluster-bullmq", "BullMQ", "throughput", "jobs/s", bull, bull, bull, 1);
        bench_csv_row("cluster-bullmq", "BullMQ", "ask p50", "us", bull_p50, bull_p50, bull_p50, 1);
    }
    if (have_floor)
        printf("  floor:  %.0f entries/s at COUNT 64, %.0f at COUNT 1024\n", floor64, floor1024);
    for (int i = 0; i < n; i++) {
        const conf_result *r = &res[i];
        double v[16];
        memcpy(v, r->tput, sizeof v);
        double med = bench_median(v, (size_t)c->runs);
        char cas[64];
        snprintf(cas, sizeof cas, "routepool cluster, %d nodes", r->nodes);
        if (have_bull) {
            printf("  %d nodes: throughput %.1fx BullMQ (target >= 10x: %s); ask p50 %.2fx BullMQ's"
                   " (target <= 0.25x: %s)\n", r->nodes, med / bull, verdict(med >= 10 * bull),
                   r->ask_p50 / bull_p50, verdict(r->ask_p50 <= 0.25 * bull_p50));
            bench_csv_row("cluster", cas, "x BullMQ throughput", "x", med / bull, med / bull, med / bull, 1);
            bench_csv_row("cluster", cas, "x BullMQ ask p50", "x", r->ask_p50 / bull_p50,
                          r->ask_p50 / bull_p50, r->ask_p50 / bull_p50, 1);
        }
        if (have_floor) {
            printf("  %d nodes: throughput %.0f%% of the floor at COUNT 1024 (target >= 60%%: %s)",
                   r->nodes, 100 * med / floor1024, verdict(med >= 0.6 * floor1024));
            if (floor64 > 0)
                printf(", %.0f%% of the floor at COUNT 64", 100 * med / floor64);
            printf("\n");
            bench_csv_row("cluster", cas, "x floor", "x", med / floor1024, med / floor1024,
                          med / floor1024, 1);
        }
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rp-bench-cluster --redis HOST:PORT|PATH [--peers FILE] [--quick]\n"
            "         [--jobs N] [--runs N] [--asks N] [--batch N] [--routees N] [--max-inflight N]\n"
            "         [--idle-spin-us N|-1]\n"
            "  routepool cluster nodes (2 and 3, separate processes) on one Redis: tiny-job\n"
            "  throughput through a round-robin cluster router and the sequential ask round\n"
            "  trip; with --peers (bench/run's key=value file of BullMQ and the streams floor)\n"
            "  same-run ratios and verdicts against issue 19's targets.\n"
            "  defaults: --jobs 200000 --runs 3 --asks 2000 --batch 256 --routees 1\n"
            "            --max-inflight 1024 --idle-spin-us -1 (the nodes' pools spin as\n"
            "            rp_pool_options' default decides) (--quick: 30000 jobs, 1 run, 500 asks)\n");
}

static int parse(cfg *c, int argc, char **argv, const char **serve_prefix, const char **serve_id)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--quick")) {
            c->quick = true, c->jobs = 30000, c->runs = 1, c->asks = 500;
            continue;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "--serve") && i + 1 < argc)
            *serve_prefix = v, *serve_id = argv[++i];
        else if (!strcmp(a, "--redis"))
            c->redis = v;
        else if (!strcmp(a, "--peers"))
            c->peers = v;
        else if (!strcmp(a, "--jobs"))
            c->jobs = bench_parse_u64(a, v, 1, 100000000);
        else if (!strcmp(a, "--runs"))
            c->runs = (int)bench_parse_u64(a, v, 1, 16);
        else if (!strcmp(a, "--asks"))
            c->asks = bench_parse_u64(a, v, 0, 1000000);
        else if (!strcmp(a, "--batch"))
            c->batch = bench_parse_u64(a, v, 1, 100000);
        else if (!strcmp(a, "--routees"))
            c->routees = bench_parse_u64(a, v, 1, 256);
        else if (!strcmp(a, "--max-inflight"))
            c->inflight = bench_parse_u64(a, v, 0, 100000);
        else if (!strcmp(a, "--idle-spin-us"))
            c->idle_spin_us = !strcmp(v, "-1") ? -1 : (long long)bench_parse_u64(a, v, 0, 10000);
        else {
            usage(stderr);
            return 2;
        }
    }
    if (!c->redis) {
        usage(stderr);
        return 2;
    }
    return -1;
}

int main(int argc, char **argv)
{
    cfg c = {.jobs = 200000, .runs = 3, .asks = 2000, .batch = 256, .routees = 1, .inflight = 1024,
             .idle_spin_us = -1};
    const char *serve_prefix = NULL, *serve_id = NULL;
    int rc = parse(&c, argc, argv, &serve_prefix, &serve_id);
    conf_result res[2] = {{0}};
    bench_machine m;

    if (rc >= 0)
        return rc;
    if (serve_prefix)
        return serve(&c, serve_prefix, serve_id);
    signal(SIGPIPE, SIG_IGN);
    bench_machine_get(&m);
    bench_machine_print(stdout, &m);
    printf("rp-bench-cluster: %" PRIu64 " no-op jobs (16-byte payload) per run, %d run(s), batches of %"
           PRIu64 " (rp_cluster_tell_batch, round-robin), nodes of %" PRIu64 " routee(s) with"
           " max_inflight %" PRIu64 "; %" PRIu64 " sequential asks (echo, 16 B); Redis at %s\n",
           c.jobs, c.runs, c.batch, c.routees, c.inflight, c.asks, c.redis);
    redisContext *rc_ = cr_connect(c.redis, 5000);
    if (!rc_)
        return 1;
    /* Where the run ran: the verdicts below are read against it (the
     * ask's wake-ups cost what the placement and the load make them). */
    bench_placement start, end;
    bench_placement_take(&start, 3);
    bool ok = true;
    for (int i = 0; ok && i < 2; i++)
        ok = run_conf(&c, rc_, i + 2, &res[i]);
    double ping = 0;
    ok = ok && ping_rtt(rc_, 2000, &ping);
    redisFree(rc_);
    if (!ok)
        return 1;
    print_table(&c, res, 2);
    print_breakdown(&c, res, 2);
    printf(" one sequential Redis round trip (PING) from here: p50 %.0f us; an ask is a send,\n"
           " the node's wake-up from XREADGROUP BLOCK, the routee, the reply's RPUSH and the asker's\n"
           " wake-up from BLPOP\n", ping);
    bench_csv_row("cluster", "redis PING", "p50", "us", ping, ping, ping, 1);
    print_ratios(&c, res, 2);
    bench_placement_take(&end, 3);
    bench_placement_verdict(stdout, "cluster", "  ", &start, &end);
    return 0;
}
