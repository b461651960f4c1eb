/* SPDX-License-Identifier: MIT */
/*
 * rp-bench-memory - what a pool costs in memory and in idle CPU.
 *
 * 1. Bytes per queued job: one routee blocked in a gate job, N empty jobs
 *    (10,000,000; --quick 1,000,000) submitted into its unbounded mailbox.
 *    Reported per job: the process's RSS delta (/proc/self/statm) and the
 *    delta of the pool's private-arena bytes (rp_metrics.memory_bytes).
 *    Then the gate opens, every job runs (the count is checked exactly),
 *    and both are read again after the drain, 0.25, 0.5 and 1 s after the
 *    pool went idle, and after rp_pool_destroy(): does an idle pool give
 *    the memory of its high-water backlog back (issue 18, target 5: RSS
 *    within 10 % of its pre-burst level within 1 s of going idle; the
 *    routee trims its lanes after rp_pool_options.trim_idle_ms)?
 * 2. Allocations per job in steady state (target 0): after a warm-up round
 *    in batches of 2 * BATCH (so the mailbox freelists reach a high-water
 *    mark the measured round never passes), jobs are submitted in batches
 *    of BATCH (rp_pool_wait_idle() between batches) and jemalloc's
 *    allocation counters are read before and after: the sum over all arenas (MALLCTL_ARENAS_ALL) of small and
 *    large nmalloc, after an "epoch" refresh.  That counts every allocation
 *    of every thread of the process - the library's private arena, its plain
 *    malloc calls (which reach jemalloc: the benchmark links it first) and
 *    the benchmark's own (none inside the window).  The thread caches are
 *    turned off (malloc_conf "tcache:false" below), because an allocation
 *    served from a thread cache is not counted in nmalloc until the cache
 *    is flushed; a self-check allocates a known number of blocks and must
 *    count exactly that many.  Cases: rp_pool_submit (round-robin, 2
 *    routees), rp_router_tell_key (consistent-hash, 2 routees),
 *    rp_router_ask + rp_future_wait + rp_future_release (2 routees), and
 *    rp_pool_submit on 64- and 128-routee pools (a router over more than 64
 *    routees takes another path, see docs/bench-dispatch-memory.md).  The
 *    growth of the pool's private arena over the round is shown next to the
 *    count, to tell freelist growth from per-job allocations.
 * 3. Idle CPU: a 64-routee pool, left 0.5 s to settle, then process CPU time
 *    (CLOCK_PROCESS_CPUTIME_ID) and context switches (getrusage, minus the
 *    main thread's own) over 2 s (--quick 1 s) of idleness.
 *
 * Public headers only (STYLE.md).
 */
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common.h"
#include "routepool/routepool.h"

/* Read by jemalloc at its initialisation: no thread caches, so that every
 * allocation is counted in the arenas' nmalloc when it happens (see 2.). */
const char *malloc_conf = "tcache:false";

#define BENCH "memory"
#define BATCH 10000

typedef struct config {
    uint64_t queued;   /* jobs behind the gate */
    uint64_t steady;   /* jobs per steady-state round */
    int idle_ms;
    bool do_queued, do_allocs, do_idle;
} config;

static int failures;

static void die_rp(const char *call)
{
    fprintf(stderr, "rp-bench-memory: %s: %s\n", call, rp_errmsg());
    exit(1);
}

static void gate_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    bench_gate_pass(arg);
}

static void count_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    /* Read after rp_pool_wait_idle(), which orders the jobs before it. */
    atomic_fetch_add_explicit((_Atomic uint64_t *)arg, 1, memory_order_relaxed);
}

static void reply_job(rp_job_ctx *ctx, void *arg)
{
    count_job(ctx, arg);
    (void)rp_job_reply(ctx, arg);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    nanosleep(&ts, NULL);
}

static rp_pool *make_pool(unsigned routees, const char *name, rp_strategy s)
{
    rp_pool_options o;
    rp_pool *pool;

    rp_pool_options_init(&o);
    o.name = name;
    o.routees = routees;
    o.strategy = s;
    if (rp_pool_create(&pool, &o) < 0)
        die_rp("rp_pool_create");
    return pool;
}

/* ---- memory readings ---- */

static double rss_bytes(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%ld %ld", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

static double arena_bytes(rp_pool *pool)
{
    rp_metrics m;
    double v;

    if (rp_metrics_snapshot(pool, &m) < 0)
        die_rp("rp_metrics_snapshot");
    v = (double)m.memory_bytes;
    rp_metrics_release(&m);
    return v;
}

/* Allocations so far, over every arena: small + large nmalloc.  -1 when
 * jemalloc keeps no statistics. */
static int64_t nmalloc_total(void)
{
    static const char *const names[] = {
        "stats.arenas.4096.small.nmalloc", "stats.arenas.4096.large.nmalloc"};
    uint64_t epoch = 1, v, sum = 0;
    size_t sz = sizeof epoch;

    _Static_assert(MALLCTL_ARENAS_ALL == 4096, "the names above use MALLCTL_ARENAS_ALL");
    if (mallctl("epoch", &epoch, &sz, &epoch, sz) != 0)
        return -1;
    for (size_t i = 0; i < 2; i++) {
        sz = sizeof v;
        if (mallctl(names[i], &v, &sz, NULL, 0) != 0)
            return -1;
        sum += v;
    }
    return (int64_t)sum;
}

/* ---- 1. bytes per queued job ---- */

static void row(const char *cas, const char *metric, const char *unit, double v)
{
    bench_csv_row(BENCH, cas, metric, unit, v, v, v, 1);
}

#define IDLE_READS 3
static const int idle_read_ms[IDLE_READS] = {250, 500, 1000};

/* rss/arena: [0] before, [1] queued, [2] drained, [3..5] idle reads, [6]
 * destroyed (RSS only). */
static void queued_report(uint64_t n, const double *rss, const double *arena, double submit_ns)
{
    const double dn = (double)n;
    bool met = rss[2 + IDLE_READS] <= 1.10 * rss[0];

    printf("\n## 1. Memory per queued job (%llu empty jobs behind a gate, 1 routee, unbounded)\n\n",
           (unsigned long long)n);
    printf("| reading | RSS MiB | arena MiB | RSS bytes/job | arena bytes/job |\n|---|---:|---:|---:|---:|\n");
    printf("| before (gate job running) | %.1f | %.1f | | |\n", rss[0] / 1048576, arena[0] / 1048576);
    printf("| %llu jobs queued (the peak) | %.1f | %.1f | %.1f | %.1f |\n", (unsigned long long)n,
           rss[1] / 1048576, arena[1] / 1048576, (rss[1] - rss[0]) / dn, (arena[1] - arena[0]) / dn);
    printf("| after the drain (all ran) | %.1f | %.1f | %.1f | %.1f |\n", rss[2] / 1048576,
           arena[2] / 1048576, (rss[2] - rss[0]) / dn, (arena[2] - arena[0]) / dn);
    for (int i = 0; i < IDLE_READS; i++)
        printf("| %.2f s idle | %.1f | %.1f | %.1f | %.1f |\n", idle_read_ms[i] / 1000.0,
               rss[3 + i] / 1048576, arena[3 + i] / 1048576, (rss[3 + i] - rss[0]) / dn,
               (arena[3 + i] - arena[0]) / dn);
    printf("| after rp_pool_destroy | %.1f | - | %.1f | - |\n", rss[3 + IDLE_READS] / 1048576,
           (rss[3 + IDLE_READS] - rss[0]) / dn);
    printf("\nsubmit: %.1f ns/job into the blocked routee's mailbox.\n", submit_ns);
    /* A verdict, not a failure: numbers never fail a run (bench/README.md). */
    printf("Target 5 (RSS within 10%% of pre-burst within 1 s of going idle, stated for a "
           "1,000,000-job burst; this one: %.0f jobs): %s "
           "(%.1f MiB after 1 s against %.1f MiB before: %+.1f%%; the peak was %.1f MiB)\n",
           dn, met ? "MET" : "NOT MET", rss[2 + IDLE_READS] / 1048576, rss[0] / 1048576,
           100.0 * (rss[2 + IDLE_READS] - rss[0]) / rss[0], rss[1] / 1048576);
    row("queued job RSS delta", "bytes/job", "bytes", (rss[1] - rss[0]) / dn);
    row("queued job arena delta", "bytes/job", "bytes", (arena[1] - arena[0]) / dn);
    row("after drain RSS delta", "bytes/job", "bytes", (rss[2] - rss[0]) / dn);
    row("after drain arena delta", "bytes/job", "bytes", (arena[2] - arena[0]) / dn);
    row("1 s idle RSS over pre-burst", "percent", "%", 100.0 * (rss[2 + IDLE_READS] - rss[0]) / rss[0]);
    row("after destroy RSS delta", "bytes/job", "bytes", (rss[3 + IDLE_READS] - rss[0]) / dn);
    row("submit into blocked routee", "ns/job", "ns", submit_ns);
}

/* The idle reads: RSS and arena at idle_read_ms after t_idle (ns). */
static void idle_reads(rp_pool *pool, int64_t t_idle, double *rss, double *arena)
{
    for (int i = 0; i < IDLE_READS; i++) {
        int64_t left = t_idle + (int64_t)idle_read_ms[i] * 1000000 - bench_now_ns();

        if (left > 0)
            sleep_ms((int)(left / 1000000));
        rss[i] = rss_bytes();
        arena[i] = arena_bytes(pool);
    }
}

static void bench_queued(uint64_t n)
{
    bench_gate g;
    _Atomic uint64_t ran = 0;
    rp_pool *pool = make_pool(1, "memq", rp_strategy_round_robin());
    double rss[4 + IDLE_READS], arena[3 + IDLE_READS];
    int64_t t0;

    bench_gate_init(&g);
    if (rp_pool_submit(pool, gate_job, &g) < 0)
        die_rp("rp_pool_submit");
    while (!rp_routee_busy(rp_pool_routee(pool, 0)))
        sleep_ms(1);
    rss[0] = rss_bytes();
    arena[0] = arena_bytes(pool);
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++)
        if (rp_pool_submit(pool, count_job, (void *)&ran) < 0)
            die_rp("rp_pool_submit");
    t0 = bench_now_ns() - t0;
    rss[1] = rss_bytes();
    arena[1] = arena_bytes(pool);
    bench_gate_open(&g);
    if (rp_pool_wait_idle(pool, -1) < 0)
        die_rp("rp_pool_wait_idle");
    if (atomic_load_explicit(&ran, memory_order_relaxed) != n) {
        fprintf(stderr, "rp-bench-memory: %llu jobs queued, %llu ran\n", (unsigned long long)n,
                (unsigned long long)atomic_load_explicit(&ran, memory_order_relaxed));
        exit(1);
    }
    rss[2] = rss_bytes();
    arena[2] = arena_bytes(pool);
    idle_reads(pool, bench_now_ns(), &rss[3], &arena[3]);
    rp_pool_destroy(pool);
    bench_gate_destroy(&g);
    rss[3 + IDLE_READS] = rss_bytes();
    printf("# %llu of %llu queued jobs ran (exact)\n", (unsigned long long)n,
           (unsigned long long)n);
    queued_report(n, rss, arena, (double)t0 / (double)n);
}

/* ---- 2. allocations per job ---- */

typedef struct acase {
    const char *name;
    unsigned routees;
    int kind; /* 0 submit, 1 tell_key (consistent-hash), 2 ask */
} acase;

static const acase acases[] = {
    {"rp_pool_submit (round-robin), 2 routees", 2, 0},
    {"rp_router_tell_key (consistent-hash), 2 routees", 2, 1},
    {"rp_router_ask + wait + release, 2 routees", 2, 2},
    {"rp_pool_submit (round-robin), 64 routees", 64, 0},
    {"rp_pool_submit (round-robin), 128 routees", 128, 0},
};

/* count_job under another name (see batch()). */
static void count_job_too(rp_job_ctx *ctx, void *arg)
{
    count_job(ctx, arg);
}

/* One batch of b jobs of a case, then wait for all of them.  apart (the
 * pool's routee count, or 0): round-robin submits alternate two functions
 * per routee, so no two tells share a queue record (one thread's tells of
 * one function to a routee fill a record while it waits: lib/lane.c,
 * "Growing"), and the backlog takes a record per job, the most it can. */
static void batch(rp_pool *pool, rp_router *rt, int kind, size_t b, _Atomic uint64_t *ran,
                  rp_future **fut, unsigned apart)
{
    for (size_t i = 0; i < b; i++) {
        uint64_t key = i;
        rp_job_fn fn = apart && (i / apart) % 2 ? count_job_too : count_job;
        int rc = kind == 0   ? rp_pool_submit(pool, fn, (void *)ran)
                 : kind == 1 ? rp_router_tell_key(rt, &key, sizeof key, count_job, (void *)ran)
                             : rp_router_ask(rt, reply_job, (void *)ran, 0, &fut[i]);
        if (rc < 0)
            die_rp("submit");
    }
    for (size_t i = 0; kind == 2 && i < b; i++) {
        if (rp_future_wait(fut[i], -1) < 0 || rp_future_status(fut[i]) != RP_FUTURE_FULFILLED) {
            fprintf(stderr, "rp-bench-memory: an ask failed\n");
            exit(1);
        }
        rp_future_release(fut[i]);
    }
    if (rp_pool_wait_idle(pool, -1) < 0)
        die_rp("rp_pool_wait_idle");
}

/* n jobs in batches of bsz (at most 2 * BATCH); apart: see batch(). */
static void round_of(rp_pool *pool, rp_router *rt, int kind, uint64_t n, size_t bsz,
                     _Atomic uint64_t *ran, rp_future **fut, unsigned apart)
{
    for (uint64_t done = 0; done < n; done += bsz)
        batch(pool, rt, kind, n - done < bsz ? (size_t)(n - done) : bsz, ran, fut, apart);
}

/* What one case allocated in its measured round. */
typedef struct aresult {
    int64_t allocs;      /* jemalloc nmalloc delta, every thread */
    double arena_growth; /* growth of the pool's private arena, bytes */
} aresult;

/* One case in steady state: a warm-up round, then the measured round.
 * Exits 1 on a lost job. */
static aresult allocs_case(const acase *c, uint64_t n)
{
    rp_pool *pool = make_pool(c->routees, "mema", c->kind == 1 ? rp_strategy_consistent_hash(7)
                                                              : rp_strategy_round_robin());
    rp_router *rt = rp_pool_router(pool);
    rp_future **fut = calloc(2 * BATCH, sizeof *fut);
    _Atomic uint64_t ran = 0;
    aresult res;
    int64_t a0;
    double m0;

    if (!fut) {
        fprintf(stderr, "rp-bench-memory: out of memory\n");
        exit(1);
    }
    /* Warm-up in batches twice as large, each job in a record of its own
     * (apart): the freelists grow to a backlog the measured round
     * (batches of BATCH, however its tells share records) never exceeds,
     * so what it allocates is per job, not growth to a new high-water
     * mark. */
    round_of(pool, rt, c->kind, n, 2 * BATCH, &ran, fut, c->routees);
    m0 = arena_bytes(pool);
    a0 = nmalloc_total();
    round_of(pool, rt, c->kind, n, BATCH, &ran, fut, 0);
    res.allocs = nmalloc_total() - a0;
    res.arena_growth = arena_bytes(pool) - m0;
    rp_pool_destroy(pool);
    free(fut);
    if (atomic_load_explicit(&ran, memory_order_relaxed) != 2 * n) {
        fprintf(stderr, "rp-bench-memory: %s: %llu jobs, %llu ran\n", c->name,
                (unsigned long long)(2 * n),
                (unsigned long long)atomic_load_explicit(&ran, memory_order_relaxed));
        exit(1);
    }
    return res;
}

/* The counter must see exactly the allocations made between two reads. */
static bool counter_selfcheck(void)
{
    enum { K = 1000 };
    static void *p[K];
    int64_t a0 = nmalloc_total(), a1;

    for (int i = 0; i < K; i++)
        p[i] = malloc(48);
    a1 = nmalloc_total();
    for (int i = 0; i < K; i++)
        free(p[i]);
    printf("# allocation counter self-check: %d mallocs counted as %lld\n", K,
           (long long)(a1 - a0));
    return a1 - a0 == K;
}

static void bench_allocs(uint64_t n)
{
    if (nmalloc_total() < 0) {
        printf("\n## 2. Allocations per job: not measured (jemalloc has no statistics: "
               "mallctl stats.arenas.*.nmalloc failed)\n");
        return;
    }
    printf("\n## 2. Allocations per job in steady state (%llu jobs in batches of %d after a "
           "warm-up round in batches of twice that; jemalloc nmalloc, all arenas, all threads)\n\n",
           (unsigned long long)n, BATCH);
    if (!counter_selfcheck()) {
        fprintf(stderr, "rp-bench-memory: the allocation counter is not exact\n");
        failures++;
    }
    printf("\n| case | allocations/job | allocations in the round | private arena growth, bytes "
           "| target 0 |\n|---|---:|---:|---:|---|\n");
    for (size_t i = 0; i < sizeof acases / sizeof acases[0]; i++) {
        aresult r = allocs_case(&acases[i], n);
        double v = (double)r.allocs / (double)n;
        const char *verdict = r.allocs == 0 ? "met"
                              : v < 0.001        ? "NOT met: freelist slabs (backlog above the warm-up's high-water mark)"
                                                 : "NOT met: per-job allocation";
        printf("| %s | %.4f | %lld | %.0f | %s |\n", acases[i].name, v, (long long)r.allocs,
               r.arena_growth, verdict);
        row(acases[i].name, "allocs/job", "allocs", v);
        row(acases[i].name, "allocs in round", "allocs", (double)r.allocs);
        row(acases[i].name, "arena growth", "bytes", r.arena_growth);
        fflush(stdout);
    }
}

/* ---- 3. idle CPU ---- */

typedef struct idle_snap {
    int64_t wall, cpu;
    long csw_all, csw_main, vcsw_all;
} idle_snap;

static void idle_take(idle_snap *s)
{
    struct rusage all, me;
    struct timespec ts;

    getrusage(RUSAGE_SELF, &all);
    getrusage(RUSAGE_THREAD, &me);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    s->wall = bench_now_ns();
    s->cpu = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    s->vcsw_all = all.ru_nvcsw;
    s->csw_all = all.ru_nvcsw + all.ru_nivcsw;
    s->csw_main = me.ru_nvcsw + me.ru_nivcsw;
}

static void bench_idle(int ms)
{
    rp_pool *pool = make_pool(64, "idle", rp_strategy_round_robin());
    idle_snap a, b;
    double secs, pct, wakes, vwakes;

    sleep_ms(500);
    idle_take(&a);
    sleep_ms(ms);
    idle_take(&b);
    rp_pool_destroy(pool);
    secs = (double)(b.wall - a.wall) / 1e9;
    pct = 100.0 * (double)(b.cpu - a.cpu) / (double)(b.wall - a.wall);
    wakes = (double)((b.csw_all - a.csw_all) - (b.csw_main - a.csw_main)) / secs;
    vwakes = (double)(b.vcsw_all - a.vcsw_all) / secs;
    printf("\n## 3. Idle pool of 64 routees (settled 0.5 s, measured %.2f s)\n\n", secs);
    printf("| process CPU, %% of one CPU | context switches/s, routee+timer threads | "
           "voluntary switches/s, whole process | target |\n|---:|---:|---:|---|\n");
    printf("| %.3f | %.1f | %.1f | ~0%%: %s |\n", pct, wakes, vwakes,
           pct < 0.5 ? "met" : "NOT met");
    row("idle 64 routees", "cpu", "%", pct);
    row("idle 64 routees", "wake-ups/s", "1/s", wakes);
}

/* ---- command line ---- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rp-bench-memory [options]\n"
        "  Memory and idle cost of a pool: bytes per queued job (RSS and the pool's\n"
        "  private arena), allocations per job in steady state (jemalloc counters),\n"
        "  idle CPU and wake-ups of a 64-routee pool.\n"
        "  --jobs N      jobs queued behind the gate, 1..100000000 (default 10000000)\n"
        "  --steady N    jobs per steady-state round, 1..100000000 (default 1000000)\n"
        "  --idle-ms N   idle window, 100..60000 ms (default 2000)\n"
        "  --quick       --jobs 1000000 --steady 200000 --idle-ms 1000\n"
        "  --only LIST   comma list of queued,allocs,idle (default: all)\n"
        "  --help        this text\n"
        "Exit status: 0 ok, 1 failure (a job lost or run twice, a failed ask, an\n"
        "inexact allocation counter), 2 bad command line.\n");
}

static void parse_only(config *c, const char *list)
{
    char buf[128], *save = NULL;

    if (strlen(list) >= sizeof buf) {
        fprintf(stderr, "--only: list too long\n");
        exit(2);
    }
    strcpy(buf, list);
    c->do_queued = c->do_allocs = c->do_idle = false;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "queued"))
            c->do_queued = true;
        else if (!strcmp(t, "allocs"))
            c->do_allocs = true;
        else if (!strcmp(t, "idle"))
            c->do_idle = true;
        else {
            fprintf(stderr, "--only: unknown part '%s' (queued, allocs, idle)\n", t);
            exit(2);
        }
    }
}

static void parse_args(int argc, char **argv, config *c)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--quick")) {
            c->queued = 1000000;
            c->steady = 200000;
            c->idle_ms = 1000;
        } else if (!strcmp(a, "--jobs") && i + 1 < argc) {
            c->queued = bench_parse_u64(a, argv[++i], 1, 100000000);
        } else if (!strcmp(a, "--steady") && i + 1 < argc) {
            c->steady = bench_parse_u64(a, argv[++i], 1, 100000000);
        } else if (!strcmp(a, "--idle-ms") && i + 1 < argc) {
            c->idle_ms = (int)bench_parse_u64(a, argv[++i], 100, 60000);
        } else if (!strcmp(a, "--only") && i + 1 < argc) {
            parse_only(c, argv[++i]);
        } else {
            fprintf(stderr, "unknown option or missing value '%s' (see --help)\n", a);
            exit(2);
        }
    }
}

int main(int argc, char **argv)
{
    config c = {.queued = 10000000, .steady = 1000000, .idle_ms = 2000,
                .do_queued = true, .do_allocs = true, .do_idle = true};
    bench_machine m;

    parse_args(argc, argv, &c);
    bench_machine_get(&m);
    printf("# rp-bench-memory (routepool %s)\n", rp_version());
    bench_machine_print(stdout, &m);
    printf("# jemalloc %s, malloc_conf \"%s\"\n", JEMALLOC_VERSION, malloc_conf);
    fflush(stdout);
    if (c.do_idle) /* first: the idle pool should not inherit a big heap */
        bench_idle(c.idle_ms);
    if (c.do_allocs)
        bench_allocs(c.steady);
    if (c.do_queued)
        bench_queued(c.queued);
    return failures ? 1 : 0;
}
