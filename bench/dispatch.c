/* SPDX-License-Identifier: MIT */
/*
 * rp-bench-dispatch - what one routing decision costs, per strategy and
 * pool size, on a healthy and on a saturated pool.
 *
 * The pool is real: rp_pool_create() with N routees (one sleeping thread
 * each), N in 2, 8, 64, 256, 1024.
 *   healthy    every routee idle: depth 0, not busy (the threads sleep).
 *   saturated  every routee blocked in a gate job (busy) with one pinned
 *              job queued behind it (depth 1): smallest-mailbox scores
 *              every routee 2 and finds no empty one to stop at.
 *
 * What is timed:
 *   pick  rp_strategy_pick() - the very function rp_router_tell() calls -
 *         over the pool's own routees (rp_pool_routee()), so it reads the
 *         routees' real depth, busy and stopped flags.  One decision =
 *         one rp_route_state (message_index rising by one, as a router's
 *         counter does) and one pick; for consistent-hash also the XXH3 of
 *         an 8-byte key, which rp_router_tell_key() computes per job.
 *   tell  rp_router_tell() (rp_router_tell_key() for consistent-hash) on a
 *         router made with rp_router_create() over the saturated pool: the
 *         whole path - message index, pick, enqueue into a busy routee's
 *         mailbox (no wake-up: every routee is busy).  tell - pick is the
 *         delivery cost.  Before the tells are measured the mailboxes'
 *         freelists are grown past what they will queue (prewarm()), so a
 *         tell takes a recycled record as in the steady state.  Not timed
 *         on the healthy pool, where each tell would also wake a thread.
 * Time: CLOCK_MONOTONIC around a loop of D decisions, D sized so that a
 * loop takes about 2 ms (0.5 ms with --quick); median (min, max) over
 * --reps loops, strategies interleaved.
 *
 * Instructions: with --callgrind D the program times nothing and wraps
 * each cell's loop of D decisions in callgrind client requests
 * (CALLGRIND_ZERO_STATS before, CALLGRIND_DUMP_STATS_AT("<cell>") after),
 * five times per cell; bench/dispatch-callgrind.sh runs it under valgrind
 * and divides the median dumped Ir by D.
 *
 * Every job the benchmark queues is counted when it runs; a mismatch
 * after the gates open is a correctness failure (exit 1).
 *
 * Public headers only (STYLE.md).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common.h"
#include "routepool/routepool.h"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#else
#define HAVE_CALLGRIND 0
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s) ((void)(s))
#define RUNNING_ON_VALGRIND 0
#endif

#define BENCH "dispatch"
#define MAX_REPS 51
#define MAX_SIZES 8
#define NKEYS 1024 /* power of two */
#define NSTRAT 5

static const unsigned default_sizes[] = {2, 8, 64, 256, 1024};

enum { HEALTHY = 0, SATURATED = 1, NSTATES };
static const char *const state_names[NSTATES] = {"healthy", "saturated"};

typedef struct config {
    unsigned sizes[MAX_SIZES];
    int nsizes;
    int reps;
    int64_t target_ns;    /* length of one timed loop */
    uint64_t callgrind_d; /* > 0: callgrind mode, D decisions per cell */
} config;

/* One pool under test and the results for its size. */
typedef struct bench {
    unsigned n;
    rp_pool *pool;
    rp_routee **routees;
    size_t *out;
    unsigned *weights;
    uint64_t *weight_ends; /* running sums, as a router keeps them */
    uint64_t keys[NKEYS];
    bench_gate g; /* blocks every routee running gate_job() until opened */
    _Atomic uint64_t ran;   /* counted jobs that ran */
    uint64_t queued;        /* counted jobs queued */
    uint64_t next_index;    /* message index of the next pick */
    /* ns per decision, [state][strategy][rep]; tell: saturated only. */
    double pick_ns[NSTATES][NSTRAT][MAX_REPS];
    double tell_ns[NSTRAT][MAX_REPS];
} bench;

static const char *const strat_names[NSTRAT] = {
    "round-robin", "random", "smallest-mailbox", "consistent-hash", "weighted"};

static rp_strategy make_strategy(const bench *b, int k)
{
    switch (k) {
    case 0: return rp_strategy_round_robin();
    case 1: return rp_strategy_random(42);
    case 2: return rp_strategy_smallest_mailbox();
    case 3: return rp_strategy_consistent_hash(42);
    default: {
        /* As a router does: the running sums make the pick a binary search. */
        rp_strategy w = rp_strategy_weighted(b->weights, b->n);
        w.weight_ends = b->weight_ends;
        return w;
    }
    }
}

static void die(const char *what)
{
    fprintf(stderr, "rp-bench-dispatch: %s\n", what);
    exit(1);
}

static void die_rp(const char *call)
{
    fprintf(stderr, "rp-bench-dispatch: %s: %s\n", call, rp_errmsg());
    exit(1);
}

/* ---- jobs ---- */

static void gate_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    bench_gate_pass(arg);
}

static void count_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    /* Pairs with the acquire load after rp_pool_wait_idle() (which itself
     * orders the jobs before its return). */
    atomic_fetch_add_explicit((_Atomic uint64_t *)arg, 1, memory_order_release);
}

/* ---- pool states ---- */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

    nanosleep(&ts, NULL);
}

/* Wait until every routee is idle (healthy) or busy with depth >= 1. */
static void wait_state(const bench *b, int state)
{
    for (int tries = 0; tries < 60000; tries++) {
        unsigned ok = 0;
        for (unsigned i = 0; i < b->n; i++) {
            bool busy = rp_routee_busy(b->routees[i]);
            int64_t depth = rp_routee_depth(b->routees[i]);
            ok += state == HEALTHY ? (!busy && depth == 0) : (busy && depth >= 1);
        }
        if (ok == b->n)
            return;
        sleep_ms(1);
    }
    die(state == HEALTHY ? "the pool did not go idle" : "the pool did not saturate");
}

static void saturate(bench *b)
{
    bench_gate_close(&b->g);
    for (unsigned i = 0; i < b->n; i++) {
        if (rp_routee_tell(b->routees[i], gate_job, &b->g) < 0 ||
            rp_routee_tell(b->routees[i], count_job, &b->ran) < 0)
            die_rp("rp_routee_tell");
        b->queued++;
    }
    wait_state(b, SATURATED);
    /* A routee is busy from the moment it takes the gate job, some
     * instructions before it blocks on the gate.  Let every one get there:
     * under callgrind, a thread still running into the first measured cell
     * made its count vary (by up to 20%, on a loaded machine). */
    sleep_ms(100);
}

/* Open the gate, let everything run, check that every counted job ran. */
static void drain(bench *b)
{
    uint64_t ran;

    bench_gate_open(&b->g);
    if (rp_pool_wait_idle(b->pool, 60000) < 0)
        die_rp("rp_pool_wait_idle");
    ran = atomic_load_explicit(&b->ran, memory_order_acquire);
    if (ran != b->queued) {
        fprintf(stderr, "rp-bench-dispatch: %u routees: %llu jobs queued, %llu ran\n", b->n,
                (unsigned long long)b->queued, (unsigned long long)ran);
        exit(1);
    }
}

static void bench_open(bench *b, unsigned n)
{
    rp_pool_options o;

    memset(b, 0, sizeof *b);
    b->n = n;
    bench_gate_init(&b->g);
    rp_pool_options_init(&o);
    o.name = "disp";
    o.routees = n;
    if (rp_pool_create(&b->pool, &o) < 0)
        die_rp("rp_pool_create");
    b->routees = malloc(n * sizeof *b->routees);
    b->out = malloc(n * sizeof *b->out);
    b->weights = malloc(n * sizeof *b->weights);
    b->weight_ends = malloc(n * sizeof *b->weight_ends);
    if (!b->routees || !b->out || !b->weights || !b->weight_ends)
        die("out of memory");
    for (unsigned i = 0; i < n; i++) {
        b->routees[i] = rp_pool_routee(b->pool, i);
        b->weights[i] = 1 + i % 4;
        b->weight_ends[i] = (i ? b->weight_ends[i - 1] : 0) + b->weights[i];
    }
    for (unsigned i = 0; i < NKEYS; i++)
        b->keys[i] = 0x9E3779B97F4A7C15ull * (i + 1);
    wait_state(b, HEALTHY);
}

static void bench_close(bench *b)
{
    rp_pool_destroy(b->pool);
    bench_gate_destroy(&b->g);
    free(b->routees);
    free(b->out);
    free(b->weights);
    free(b->weight_ends);
}

/* ---- the decision loops ---- */

/* d picks, as rp_router_tell() makes them; returns a sink. */
static uint64_t pick_loop(bench *b, const rp_strategy *s, size_t d)
{
    uint64_t sink = 0;

    for (size_t i = 0; i < d; i++) {
        rp_route_state st = {.message_index = b->next_index++};
        int cnt = rp_strategy_pick(s, &st, b->routees, b->n, b->out);
        sink += b->out[0] + (uint64_t)cnt;
    }
    return sink;
}

/* d keyed picks, as rp_router_tell_key() makes them (key hash included). */
static uint64_t pick_loop_keyed(bench *b, const rp_strategy *s, size_t d)
{
    uint64_t sink = 0;

    for (size_t i = 0; i < d; i++) {
        const uint64_t *key = &b->keys[i & (NKEYS - 1)];
        rp_route_state st = {.message_index = b->next_index++, .key = key,
                             .key_len = sizeof *key, .pinned = true};
        int cnt;
        st.key_hash = XXH3_64bits(key, sizeof *key);
        cnt = rp_strategy_pick(s, &st, b->routees, b->n, b->out);
        sink += b->out[0] + (uint64_t)cnt;
    }
    return sink;
}

static uint64_t picks(bench *b, int k, size_t d)
{
    rp_strategy s = make_strategy(b, k);

    if (k == 3)
        return pick_loop_keyed(b, &s, d);
    return pick_loop(b, &s, d);
}

/* d tells through rt; each queues one counted job. */
static void tell_loop(bench *b, rp_router *rt, int k, size_t d)
{
    for (size_t i = 0; i < d; i++) {
        const uint64_t *key = &b->keys[i & (NKEYS - 1)];
        int rc = k == 3 ? rp_router_tell_key(rt, key, sizeof *key, count_job, &b->ran)
                        : rp_router_tell(rt, count_job, &b->ran);
        if (rc < 0)
            die_rp("rp_router_tell");
    }
    b->queued += d;
}

static rp_router *make_router(bench *b, int k)
{
    rp_router_options o;
    rp_router *rt;

    rp_router_options_init(&o);
    o.name = strat_names[k];
    o.strategy = make_strategy(b, k);
    if (rp_router_create(&rt, b->pool, &o) < 0)
        die_rp("rp_router_create");
    return rt;
}

/* Decisions per timed loop: about target_ns worth, from a trial loop. */
static size_t loop_len(bench *b, int k, rp_router *rt, int64_t target_ns)
{
    const size_t trial = 64;
    int64_t t0 = bench_now_ns(), dt;
    volatile uint64_t sink;

    if (rt)
        tell_loop(b, rt, k, trial);
    else
        sink = picks(b, k, trial);
    (void)sink;
    dt = bench_now_ns() - t0;
    if (dt < 1)
        dt = 1;
    return (size_t)(target_ns * (int64_t)trial / dt) < trial
               ? trial
               : (size_t)(target_ns * (int64_t)trial / dt);
}

/* ---- timed mode ---- */

static void time_picks(bench *b, const config *c, int state)
{
    size_t d[NSTRAT];
    volatile uint64_t sink = 0;

    for (int k = 0; k < NSTRAT; k++) {
        d[k] = loop_len(b, k, NULL, c->target_ns); /* doubles as warm-up */
        sink += picks(b, k, d[k]);
    }
    for (int r = 0; r < c->reps; r++)
        for (int j = 0; j < NSTRAT; j++) {
            int k = (j + r) % NSTRAT; /* rotated order */
            int64_t t0 = bench_now_ns();
            sink += picks(b, k, d[k]);
            b->pick_ns[state][k][r] = (double)(bench_now_ns() - t0) / (double)d[k];
        }
    (void)sink;
}

/*
 * Grow every mailbox's freelists past what the measured tells will queue
 * (twice each router's share), then drain and saturate again.  The measured
 * tells then take recycled records, as in the steady state, instead of
 * carving new slabs (zeroed: a memset per slab), which a saturated pool
 * does only while its backlog climbs to a new high.
 */
static void prewarm(bench *b, rp_router *const *rt, const size_t *total)
{
    for (int k = 0; k < NSTRAT; k++)
        tell_loop(b, rt[k], k, 2 * total[k]);
    drain(b);
    saturate(b);
}

static void time_tells(bench *b, const config *c)
{
    rp_router *rt[NSTRAT];
    size_t d[NSTRAT], total[NSTRAT];

    for (int k = 0; k < NSTRAT; k++) {
        rt[k] = make_router(b, k);
        d[k] = loop_len(b, k, rt[k], c->target_ns);
        total[k] = d[k] * (size_t)(c->reps + 1);
    }
    prewarm(b, rt, total);
    for (int k = 0; k < NSTRAT; k++)
        tell_loop(b, rt[k], k, d[k]); /* warm-up */
    for (int r = 0; r < c->reps; r++)
        for (int j = 0; j < NSTRAT; j++) {
            int k = (j + r) % NSTRAT;
            int64_t t0 = bench_now_ns();
            tell_loop(b, rt[k], k, d[k]);
            b->tell_ns[k][r] = (double)(bench_now_ns() - t0) / (double)d[k];
        }
    for (int k = 0; k < NSTRAT; k++)
        rp_router_destroy(rt[k]);
}

/* ---- callgrind mode ---- */

/*
 * Each cell is counted CG_REPS times (the script takes the median).  With
 * the machine loaded, a count now and then came out one chunk of about
 * 15,600 Ir too high or too low (always the same quantum: callgrind
 * attributing a block of costs across a thread switch, we believe); the
 * median of five throws such outliers away.
 */
#define CG_REPS 5

static void cg_cell(const char *what, int k, int state, unsigned n, uint64_t d, int rep)
{
    char name[128];

    snprintf(name, sizeof name, "%s|%s|%s|%u|%llu|%d", what, strat_names[k], state_names[state],
             n, (unsigned long long)d, rep);
    CALLGRIND_DUMP_STATS_AT(name);
}

static void cg_picks(bench *b, uint64_t d, int state)
{
    volatile uint64_t sink = 0;

    for (int k = 0; k < NSTRAT; k++) {
        sink += picks(b, k, 64); /* warm-up, not counted */
        for (int rep = 0; rep < CG_REPS; rep++) {
            CALLGRIND_ZERO_STATS;
            sink += picks(b, k, (size_t)d);
            cg_cell("pick", k, state, b->n, d, rep);
        }
    }
    (void)sink;
}

static void cg_tells(bench *b, uint64_t d)
{
    rp_router *rt[NSTRAT];
    size_t total[NSTRAT];

    CALLGRIND_STOP_INSTRUMENTATION;
    for (int k = 0; k < NSTRAT; k++) {
        rt[k] = make_router(b, k);
        total[k] = CG_REPS * (size_t)d + 64;
    }
    prewarm(b, rt, total);
    CALLGRIND_START_INSTRUMENTATION;
    for (int k = 0; k < NSTRAT; k++) {
        tell_loop(b, rt[k], k, 64); /* warm-up, not counted */
        for (int rep = 0; rep < CG_REPS; rep++) {
            CALLGRIND_ZERO_STATS;
            tell_loop(b, rt[k], k, (size_t)d);
            cg_cell("tell", k, SATURATED, b->n, d, rep);
        }
    }
    for (int k = 0; k < NSTRAT; k++)
        rp_router_destroy(rt[k]);
}

/* One pool size: healthy, then saturated. */
static void run_size(bench *b, const config *c)
{
    if (c->callgrind_d) {
        CALLGRIND_START_INSTRUMENTATION;
        cg_picks(b, c->callgrind_d, HEALTHY);
        CALLGRIND_STOP_INSTRUMENTATION;
        saturate(b);
        CALLGRIND_START_INSTRUMENTATION;
        cg_picks(b, c->callgrind_d, SATURATED);
        cg_tells(b, c->callgrind_d);
        CALLGRIND_STOP_INSTRUMENTATION;
    } else {
        time_picks(b, c, HEALTHY);
        saturate(b);
        time_picks(b, c, SATURATED);
        time_tells(b, c);
    }
    drain(b);
}

/* ---- report ---- */

/* Least-squares slope of y over x (k points). */
static double slope(const double *x, const double *y, int k)
{
    double mx = 0, my = 0, sxy = 0, sxx = 0;

    for (int i = 0; i < k; i++) {
        mx += x[i] / k;
        my += y[i] / k;
    }
    for (int i = 0; i < k; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
    }
    return sxx > 0 ? sxy / sxx : 0;
}

/* Median of a cell's reps (copies; v is not sorted), CSV row as a side effect. */
static double cell(const char *what, int k, const char *state, unsigned n, const double *v,
                   int reps)
{
    double tmp[MAX_REPS];
    char cas[128];

    memcpy(tmp, v, (size_t)reps * sizeof *tmp);
    snprintf(cas, sizeof cas, "%s %s %s %u routees", what, strat_names[k], state, n);
    bench_csv_samples(BENCH, cas, "ns/decision", "ns", tmp, (size_t)reps);
    return bench_median(tmp, (size_t)reps);
}

static void print_table(const char *title, const config *c, bench *const *bs, int state,
                        bool tell)
{
    double x[MAX_SIZES], y[MAX_SIZES];

    printf("\n%s\n\n| strategy |", title);
    for (int s = 0; s < c->nsizes; s++)
        printf(" %u |", c->sizes[s]);
    printf(" slope ns/routee |\n|---|");
    for (int s = 0; s <= c->nsizes; s++)
        printf("---:|");
    printf("\n");
    for (int k = 0; k < NSTRAT; k++) {
        printf("| %s |", strat_names[k]);
        for (int s = 0; s < c->nsizes; s++) {
            const double *v = tell ? bs[s]->tell_ns[k] : bs[s]->pick_ns[state][k];
            x[s] = c->sizes[s];
            y[s] = cell(tell ? "tell" : "pick", k, state_names[state], c->sizes[s], v, c->reps);
            printf(" %.1f |", y[s]);
        }
        printf(" %.3f |\n", slope(x, y, c->nsizes));
        if (c->nsizes >= 2) {
            char cas[128];
            snprintf(cas, sizeof cas, "%s %s %s slope", tell ? "tell" : "pick", strat_names[k],
                     state_names[state]);
            bench_csv_row(BENCH, cas, "ns/routee", "ns", slope(x, y, c->nsizes),
                          slope(x, y, c->nsizes), slope(x, y, c->nsizes), 1);
        }
    }
}

static void print_verdict(const config *c, bench *const *bs)
{
    for (int s = 0; s < c->nsizes; s++) {
        double rr, sm, v[MAX_REPS];
        if (c->sizes[s] != 64)
            continue;
        memcpy(v, bs[s]->pick_ns[HEALTHY][0], (size_t)c->reps * sizeof *v);
        rr = bench_median(v, (size_t)c->reps);
        memcpy(v, bs[s]->pick_ns[HEALTHY][2], (size_t)c->reps * sizeof *v);
        sm = bench_median(v, (size_t)c->reps);
        printf("\nTarget (time): smallest-mailbox / round-robin, healthy 64 routees = %.2fx "
               "(target <= 1.5x, judged on instructions by bench/dispatch-callgrind.sh; "
               "in ns: %s)\n", sm / rr, sm / rr <= 1.5 ? "met" : "NOT met");
        bench_csv_row(BENCH, "pick smallest-mailbox/round-robin healthy 64 routees", "ratio",
                      "x", sm / rr, sm / rr, sm / rr, 1);
    }
}

/* ---- command line ---- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rp-bench-dispatch [options]\n"
        "  Cost of one routing decision (round-robin, random, smallest-mailbox,\n"
        "  consistent-hash, weighted) on a real pool of N routees, healthy (all idle)\n"
        "  and saturated (all busy, one job queued each): rp_strategy_pick() over the\n"
        "  pool's routees, and rp_router_tell() on the saturated pool, in ns/decision.\n"
        "  --sizes LIST     comma list of pool sizes, 1..%u, at most %d (default 2,8,64,256,1024)\n"
        "  --reps N         timed loops per cell, 1..%d (default 15)\n"
        "  --quick          5 loops of ~0.5 ms per cell instead of ~2 ms\n"
        "  --callgrind D    time nothing: run D decisions per cell between callgrind\n"
        "                   client requests (for bench/dispatch-callgrind.sh, under\n"
        "                   valgrind --tool=callgrind --instr-atstart=no)\n"
        "  --help           this text\n"
        "Exit status: 0 ok, 1 failure (a queued job lost or run twice), 2 bad command line.\n",
        RP_ROUTEES_MAX, MAX_SIZES, MAX_REPS);
}

static void parse_sizes(config *c, const char *list)
{
    char buf[256], *save = NULL;

    if (strlen(list) >= sizeof buf) {
        fprintf(stderr, "--sizes: list too long\n");
        exit(2);
    }
    strcpy(buf, list);
    c->nsizes = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (c->nsizes == MAX_SIZES) {
            fprintf(stderr, "--sizes: at most %d sizes\n", MAX_SIZES);
            exit(2);
        }
        c->sizes[c->nsizes++] = (unsigned)bench_parse_u64("--sizes", t, 1, RP_ROUTEES_MAX);
    }
    if (c->nsizes == 0) {
        fprintf(stderr, "--sizes: empty list\n");
        exit(2);
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
            c->reps = 5;
            c->target_ns = 500000;
        } else if (!strcmp(a, "--sizes") && i + 1 < argc) {
            parse_sizes(c, argv[++i]);
        } else if (!strcmp(a, "--reps") && i + 1 < argc) {
            c->reps = (int)bench_parse_u64(a, argv[++i], 1, MAX_REPS);
        } else if (!strcmp(a, "--callgrind") && i + 1 < argc) {
            c->callgrind_d = bench_parse_u64(a, argv[++i], 1, 100000000);
        } else {
            fprintf(stderr, "unknown option or missing value '%s' (see --help)\n", a);
            exit(2);
        }
    }
    if (c->callgrind_d && !HAVE_CALLGRIND) {
        fprintf(stderr, "--callgrind: built without <valgrind/callgrind.h>\n");
        exit(2);
    }
}

static void preamble(const config *c)
{
    bench_machine m;
    bench_pingpong_result pp;

    bench_machine_get(&m);
    printf("# rp-bench-dispatch (routepool %s)\n", rp_version());
    bench_machine_print(stdout, &m);
    if (bench_pingpong(&pp, 200000, 5) == 0)
        bench_pingpong_print(stdout, &pp, 5);
    printf("# timed: pick = rp_strategy_pick() over the real pool's routees (consistent-hash\n"
           "#   includes XXH3 of an 8-byte key); tell = rp_router_tell()/_tell_key() on the\n"
           "#   saturated pool (pick + enqueue, no wake-up).  ns per decision, median of %d\n"
           "#   loops of ~%.1f ms, strategies interleaved.  healthy = every routee idle with\n"
           "#   depth 0; saturated = every routee busy in a gate job, one job queued behind.\n",
           c->reps, (double)c->target_ns / 1e6);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    config c = {.reps = 15, .target_ns = 2000000};
    bench *bs[MAX_SIZES];

    memcpy(c.sizes, default_sizes, sizeof default_sizes);
    c.nsizes = (int)(sizeof default_sizes / sizeof default_sizes[0]);
    parse_args(argc, argv, &c);
    if (!c.callgrind_d)
        preamble(&c);
    for (int s = 0; s < c.nsizes; s++) {
        if (!(bs[s] = malloc(sizeof *bs[s])))
            die("out of memory");
        bench_open(bs[s], c.sizes[s]);
        run_size(bs[s], &c);
        bench_close(bs[s]);
        if (!c.callgrind_d) {
            printf("# %u routees done\n", c.sizes[s]);
            fflush(stdout);
        }
    }
    if (!c.callgrind_d) {
        print_table("pick, healthy pool: ns per decision (median)", &c, bs, HEALTHY, false);
        print_table("pick, saturated pool: ns per decision (median)", &c, bs, SATURATED, false);
        print_table("tell (pick + enqueue), saturated pool: ns per job (median)", &c, bs,
                    SATURATED, true);
        print_verdict(&c, bs);
    }
    for (int s = 0; s < c.nsizes; s++)
        free(bs[s]);
    return 0;
}
