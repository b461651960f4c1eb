/*
 * rp-bench-tiny - throughput of tiny jobs: one thread submits N empty jobs
 * to 2 workers; time from the first submit until every job has run.
 *
 * Systems, each measured in the same process, repetitions interleaved so
 * that the machine's noise falls on all of them alike:
 *   routepool round-robin, steal off / steal on (the pool's defaults),
 *   C-Thread-Pool (Debian cthreadpool-dev: one mutex-protected queue, a
 *     malloc per job), compiled in when bench/CMakeLists.txt found it,
 *   libuv's threadpool (uv_queue_work; UV_THREADPOOL_SIZE=2, set before its
 *     first use; the loop thread runs the after-work callbacks), when found.
 * Each system gets one untimed warm-up round, then --reps timed rounds; the
 * table shows the median ns per job (and the submit-only share) and the
 * ratio to routepool round-robin with stealing (the default pool).
 *
 * A job writes one byte of its own cache-line record, so the benchmark can
 * check that every job ran exactly once without a shared counter (which
 * would measure cache-line contention instead of the pool).
 *
 * Public headers only (STYLE.md).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "routepool/routepool.h"

#ifdef RP_BENCH_HAVE_THPOOL
#include <thpool.h>
#endif
#ifdef RP_BENCH_HAVE_LIBUV
#include <uv.h>
#endif

#define WORKERS 2
#define MAX_REPS 51
#define MAX_FOREIGN 0.05 /* share of the machine others may use during a round */
#define RETRIES 3

/* One job's record: its own cache line. */
typedef struct rec {
    _Alignas(64) unsigned char ran;
} rec;

typedef struct peer peer;

/* A system under test: start once, run rounds, stop. */
struct peer {
    const char *key, *name;
    int (*start)(peer *s);
    /* Submit n jobs on recs; *submit_ns gets the submit loop's time. */
    void (*round)(peer *s, rec *recs, size_t n, int64_t *submit_ns);
    void (*stop)(peer *s);
    void *impl;
    double ns_per_job[MAX_REPS], submit_per_job[MAX_REPS];
    int redone; /* rounds done again because others took the machine */
    bool skip;  /* not in --only */
};

static void die(const char *what)
{
    fprintf(stderr, "rp-bench-tiny: %s\n", what);
    exit(1);
}

static void mark(void *arg)
{
    ((rec *)arg)->ran++;
}

/* ---- routepool ---- */

static void rp_fn(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    mark(arg);
}

static int rp_start(peer *s, bool steal)
{
    rp_pool_options o;
    rp_pool *pool;

    rp_pool_options_init(&o);
    o.name = "tiny";
    o.routees = WORKERS;
    o.steal = steal;
    o.strategy = rp_strategy_round_robin();
    if (rp_pool_create(&pool, &o) < 0) {
        fprintf(stderr, "rp-bench-tiny: rp_pool_create: %s\n", rp_errmsg());
        return -1;
    }
    s->impl = pool;
    return 0;
}

static int rp_start_nosteal(peer *s)
{
    return rp_start(s, false);
}

static int rp_start_steal(peer *s)
{
    return rp_start(s, true);
}

static void rp_round(peer *s, rec *recs, size_t n, int64_t *submit_ns)
{
    int64_t t0 = bench_now_ns();

    for (size_t i = 0; i < n; i++)
        if (rp_pool_submit(s->impl, rp_fn, &recs[i]) < 0)
            die("rp_pool_submit failed");
    *submit_ns = bench_now_ns() - t0;
    if (rp_pool_wait_idle(s->impl, -1) < 0)
        die("rp_pool_wait_idle failed");
}

static void rp_stop(peer *s)
{
    rp_pool_destroy(s->impl);
}

/* ---- C-Thread-Pool ---- */

#ifdef RP_BENCH_HAVE_THPOOL
static int thp_start(peer *s)
{
    s->impl = thpool_init(WORKERS);
    return s->impl ? 0 : -1;
}

static void thp_round(peer *s, rec *recs, size_t n, int64_t *submit_ns)
{
    int64_t t0 = bench_now_ns();

    for (size_t i = 0; i < n; i++)
        if (thpool_add_work(s->impl, mark, &recs[i]) != 0)
            die("thpool_add_work failed");
    *submit_ns = bench_now_ns() - t0;
    thpool_wait(s->impl);
}

static void thp_stop(peer *s)
{
    thpool_destroy(s->impl);
}
#endif

/* ---- libuv threadpool ---- */

#ifdef RP_BENCH_HAVE_LIBUV
typedef struct uvjob {
    uv_work_t req;
    rec *r;
} uvjob;

typedef struct uvsys {
    uv_loop_t loop;
    uvjob *jobs;
    size_t cap;
} uvsys;

static void uv_work(uv_work_t *req)
{
    mark(((uvjob *)req)->r);
}

static void uv_after(uv_work_t *req, int status)
{
    (void)req;
    if (status != 0)
        die("uv_queue_work job cancelled");
}

static int uvs_start(peer *s)
{
    uvsys *u = calloc(1, sizeof *u);

    if (!u || uv_loop_init(&u->loop) != 0)
        return -1;
    s->impl = u;
    return 0;
}

static void uvs_round(peer *s, rec *recs, size_t n, int64_t *submit_ns)
{
    uvsys *u = s->impl;
    int64_t t0;

    if (u->cap < n) { /* before the clock starts: not part of the measure */
        free(u->jobs);
        if (!(u->jobs = calloc(n, sizeof *u->jobs)))
            die("out of memory");
        u->cap = n;
    }
    t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++) {
        u->jobs[i].r = &recs[i];
        if (uv_queue_work(&u->loop, &u->jobs[i].req, uv_work, uv_after) != 0)
            die("uv_queue_work failed");
    }
    *submit_ns = bench_now_ns() - t0;
    uv_run(&u->loop, UV_RUN_DEFAULT); /* returns when every after-work ran */
}

static void uvs_stop(peer *s)
{
    uvsys *u = s->impl;

    uv_loop_close(&u->loop);
    free(u->jobs);
    free(u);
}
#endif

/* ---- driver ---- */

static peer peers[] = {
    {.key = "rp-steal", .name = "routepool round-robin, steal on (default)", .start = rp_start_steal,
     .round = rp_round, .stop = rp_stop},
    {.key = "rp", .name = "routepool round-robin, steal off", .start = rp_start_nosteal,
     .round = rp_round, .stop = rp_stop},
#ifdef RP_BENCH_HAVE_THPOOL
    {.key = "thpool", .name = "C-Thread-Pool (cthreadpool-dev)", .start = thp_start, .round = thp_round,
     .stop = thp_stop},
#endif
#ifdef RP_BENCH_HAVE_LIBUV
    {.key = "libuv", .name = "libuv threadpool (uv_queue_work)", .start = uvs_start, .round = uvs_round,
     .stop = uvs_stop},
#endif
};
#define NPEERS (sizeof peers / sizeof peers[0])

/* One round; false when a job ran other than exactly once. */
static bool one_round(peer *s, rec *recs, size_t n, int rep)
{
    int64_t t0, submit_ns;

    for (size_t i = 0; i < n; i++)
        recs[i].ran = 0;
    t0 = bench_now_ns();
    s->round(s, recs, n, &submit_ns);
    t0 = bench_now_ns() - t0;
    if (rep >= 0) {
        s->ns_per_job[rep] = (double)t0 / (double)n;
        s->submit_per_job[rep] = (double)submit_ns / (double)n;
    }
    for (size_t i = 0; i < n; i++)
        if (recs[i].ran != 1)
            return false;
    return true;
}

/* A timed round, done again (at most RETRIES times, after waiting for calm)
 * when other processes used MAX_FOREIGN or more of the machine meanwhile. */
static void guarded_round(peer *s, rec *recs, size_t n, int rep)
{
    for (int tries = 0;; tries++) {
        bench_cpu_snap before, after;
        double foreign;
        bench_cpu_snap_take(&before);
        if (!one_round(s, recs, n, rep))
            die("a job was lost or ran twice");
        bench_cpu_snap_take(&after);
        foreign = bench_foreign_share(&before, &after);
        if (foreign < MAX_FOREIGN || tries == RETRIES)
            return;
        s->redone++;
        bench_wait_quiet(MAX_FOREIGN, 30000);
    }
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rp-bench-tiny [options]\n"
        "  Throughput of empty jobs submitted by one thread to 2 workers: routepool\n"
        "  vs C-Thread-Pool and libuv's threadpool (when built in), ns per job.\n"
        "  --jobs N      jobs per round (default 200000)\n"
        "  --reps N      timed rounds per system, 1..%d (default 11)\n"
        "  --quick       5 rounds\n"
        "  --only LIST   comma list of rp-steal,rp,thpool,libuv (default: all built in)\n"
        "  --help        this text\n"
        "Exit status: 0 ok, 1 failure (a job lost or run twice), 2 bad command line.\n",
        MAX_REPS);
}

static void select_peers(const char *list)
{
    for (size_t k = 0; k < NPEERS; k++) {
        const char *p = strstr(list, peers[k].key);
        size_t len = strlen(peers[k].key);
        /* A whole item of the comma list, not a prefix ("rp" in "rp-steal"). */
        while (p && ((p != list && p[-1] != ',') || (p[len] != '\0' && p[len] != ',')))
            p = strstr(p + 1, peers[k].key);
        peers[k].skip = p == NULL;
    }
}

static void parse_args(int argc, char **argv, size_t *jobs, int *reps)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--quick")) {
            *reps = 5;
        } else if (!strcmp(a, "--only") && i + 1 < argc) {
            select_peers(argv[++i]);
        } else if ((!strcmp(a, "--jobs") || !strcmp(a, "--reps")) && i + 1 < argc) {
            uint64_t v = bench_parse_u64(a, argv[++i], 1, !strcmp(a, "--jobs") ? 10000000 : MAX_REPS);
            if (!strcmp(a, "--jobs"))
                *jobs = (size_t)v;
            else
                *reps = (int)v;
        } else {
            fprintf(stderr, "unknown option or missing value '%s' (see --help)\n", a);
            exit(2);
        }
    }
}

static void print_table(int reps, size_t jobs)
{
    double base, v[MAX_REPS];

    for (int r = 0; r < reps; r++)
        v[r] = peers[0].ns_per_job[r];
    base = peers[0].skip ? 0 : bench_median(v, (size_t)reps);
    printf("\n%zu empty jobs per round from 1 thread to %d workers; medians of %d rounds\n\n",
           jobs, WORKERS, reps);
    printf("| system | ns/job | min-max ns/job | submit ns/job | ratio to routepool default "
           "| rounds redone |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < NPEERS; k++) {
        double med, sub;
        if (peers[k].skip)
            continue;
        for (int r = 0; r < reps; r++)
            v[r] = peers[k].submit_per_job[r];
        sub = bench_median(v, (size_t)reps);
        for (int r = 0; r < reps; r++)
            v[r] = peers[k].ns_per_job[r];
        med = bench_median(v, (size_t)reps); /* sorts v */
        printf("| %s | %.0f | %.0f-%.0f | %.0f | %.2fx | %d |\n", peers[k].name, med, v[0],
               v[reps - 1], sub, base > 0 ? med / base : 0, peers[k].redone);
    }
}

static void preamble(void)
{
    bench_machine m;
    bench_pingpong_result pp;

    bench_machine_get(&m);
    printf("# rp-bench-tiny (routepool %s)\n", rp_version());
    bench_machine_print(stdout, &m);
    if (bench_pingpong(&pp, 200000, 5) == 0)
        printf("# ping-pong:   %.1f ns one way, cache line between CPU %d and CPU %d "
               "(median of 5; min %.1f, max %.1f)\n", pp.one_way_ns, pp.cpu_a, pp.cpu_b,
               pp.min_ns, pp.max_ns);
#ifndef RP_BENCH_HAVE_THPOOL
    printf("# C-Thread-Pool: not built in (apt-get install cthreadpool-dev, reconfigure)\n");
#endif
#ifndef RP_BENCH_HAVE_LIBUV
    printf("# libuv: not built in (apt-get install libuv1-dev, reconfigure)\n");
#else
    printf("# libuv %s, UV_THREADPOOL_SIZE=%d\n", uv_version_string(), WORKERS);
#endif
    fflush(stdout);
}

int main(int argc, char **argv)
{
    size_t jobs = 200000;
    int reps = 11;
    rec *recs;

    parse_args(argc, argv, &jobs, &reps);
    /* libuv reads it once, when its threadpool starts (first uv_queue_work). */
    setenv("UV_THREADPOOL_SIZE", "2", 1);
    if (!(recs = aligned_alloc(64, jobs * sizeof *recs)))
        die("out of memory");
    memset(recs, 0, jobs * sizeof *recs);
    preamble();
    for (size_t k = 0; k < NPEERS; k++) {
        if (peers[k].skip)
            continue;
        if (peers[k].start(&peers[k]) != 0)
            die("could not start a system");
        if (!one_round(&peers[k], recs, jobs / 10 ? jobs / 10 : 1, -1)) /* warm-up */
            die("warm-up: a job was lost or ran twice");
    }
    for (int r = 0; r < reps; r++)
        for (size_t k = 0; k < NPEERS; k++)
            if (!peers[(k + (size_t)r) % NPEERS].skip) /* rotated order */
                guarded_round(&peers[(k + (size_t)r) % NPEERS], recs, jobs, r);
    for (size_t k = 0; k < NPEERS; k++)
        if (!peers[k].skip)
            peers[k].stop(&peers[k]);
    print_table(reps, jobs);
    free(recs);
    return 0;
}
