/* SPDX-License-Identifier: MIT */
/*
 * rp-demo - push one mixed-cost workload through every routepool router.
 *
 * The workload is fixed by a seed: 90% of the jobs spin the CPU for about
 * 1 us, 10% for about 100 us (mean ~10.9 us, the bimodal mix of
 * docs/choosing-a-router.md).  Each router gets a fresh pool of N routees and
 * the same jobs, submitted by one thread at a paced rate (--load: a fraction
 * of what the routees' CPUs can do, as in rp-tune) or as fast as possible
 * (--load 0).  While
 * submitting, the demo samples rp_routee_depth() to record the deepest
 * mailbox of each routee.  Every job records how long it waited in its
 * mailbox and counts itself on the routee that ran it, so the demo can prove
 * that nothing was lost, run twice or handed back.
 *
 * The command line speaks rp-tune's language (cli.c): --routees for the
 * pool size, --load as a fraction (or a percent written 80%), --version.
 *
 * Uses the public headers only, like every tool (STYLE.md).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#include "cli.h"
#include "routepool/routepool.h"

/* Exit codes, listed in --help. */
enum {
    EXIT_RUNTIME = 1,    /* a routepool call failed */
    EXIT_USAGE = 2,      /* bad command line */
    EXIT_ACCOUNTING = 3  /* a job went missing, ran twice or came back */
};

#define DEFAULT_ROUTEES 4u
#define DEFAULT_JOBS 20000u
#define DEFAULT_SEED 1u
#define DEFAULT_LOAD 0.8
#define LOAD_MAX 2.0
#define JOBS_MAX 10000000u
#define LIGHT_US 1u
#define HEAVY_US 100u
#define HEAVY_PERMILLE 100u /* 10% heavy jobs */
#define NKEYS 256u          /* key space of the consistent-hash run */
#define SAMPLE_MAX 16u      /* routees whose depth is read per submit */
#define COLUMNS 8u          /* routees per printed row */

typedef struct demo_run demo_run;

/* One job.  Built once; submit_ns is rewritten before each submit.  Copies
 * of a broadcast share it and only read it. */
typedef struct demo_job {
    uint64_t spin_iters;
    uint64_t submit_ns;
    uint32_t key;
    demo_run *run;
} demo_job;

/* Per-routee counters, one cache line each.  Only the routee's own thread
 * writes ran and the wait fields (a job runs on the routee that reports it),
 * only the submitting thread writes max_depth. */
typedef struct routee_slot {
    _Alignas(64) atomic_uint_fast64_t ran;
    atomic_uint_fast64_t wait_sum_ns, wait_max_ns;
    int64_t max_depth;
    uint64_t stole; /* rp_routee_stats.stole, read before the pool goes */
} routee_slot;

/* State of one router's run.  Plain fields are set before the pool is
 * created, so the routee threads see them (thread creation orders them). */
struct demo_run {
    size_t nroutees;
    routee_slot *slots;
    rp_routee **routees;            /* borrowed from the pool */
    bool keyed;                     /* consistent hashing: check stickiness */
    atomic_int *key_owner;          /* NKEYS entries, -1: not run yet */
    atomic_uint_fast64_t key_moves; /* keyed jobs run away from their key's routee */
    atomic_uint_fast64_t undelivered;
    atomic_uint_fast64_t stray;     /* jobs that reported no valid routee */
};

typedef struct demo_cfg {
    size_t routees;
    size_t jobs;
    uint64_t seed;
    double load;       /* fraction of capacity; 0: as fast as possible */
    bool steal;        /* rp_pool_options.steal */
    size_t cpus;       /* CPUs the routees can use: min(routees, online) */
    double mean_us;    /* mean job cost of the generated workload */
} demo_cfg;

/* What one router achieved, for the summary. */
typedef struct demo_result {
    const char *name;
    double wall_ms, wait_mean_us, wait_max_us;
    uint64_t min_ran, max_ran, total_ran, expected;
    int64_t deepest;
    uint64_t stolen, undelivered, key_moves, stray;
} demo_result;

typedef struct two_choices {
    uint64_t seed;
} two_choices;

/* ---- small helpers ---- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until_ns(uint64_t deadline)
{
    const struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
                                .tv_nsec = (long)(deadline % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* splitmix64: a seeded, stateless-per-step generator and mixer. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* CPU work: a dependent multiply chain the compiler cannot fold. */
static uint64_t spin(uint64_t iters)
{
    uint64_t x = iters | 1u;
    for (uint64_t i = 0; i < iters; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    return x;
}

/* Iterations of spin() per microsecond on this machine (best of 5). */
static uint64_t calibrate_spin(void)
{
    const uint64_t iters = (uint64_t)1 << 20;
    volatile uint64_t sink = 0;
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        const uint64_t t0 = now_ns();
        sink = spin(iters);
        const uint64_t dt = now_ns() - t0;
        best = dt < best ? dt : best;
    }
    (void)sink;
    const double per_us = (double)iters * 1e3 / (double)(best ? best : 1);
    return per_us < 1.0 ? 1u : (uint64_t)per_us;
}

static void report_rp(const char *what, int rc)
{
    const char *detail = rp_errmsg();
    fprintf(stderr, "rp-demo: %s failed: %s (%s)%s%s\n", what, rp_strerror(rc),
            rp_err_name(rc), detail[0] ? ": " : "", detail);
}

/* ---- the job and the callbacks ---- */

static void record_wait(routee_slot *slot, uint64_t wait_ns)
{
    atomic_fetch_add_explicit(&slot->wait_sum_ns, wait_ns, memory_order_relaxed);
    /* Single writer (this routee's thread): no compare-exchange needed. */
    if (wait_ns > atomic_load_explicit(&slot->wait_max_ns, memory_order_relaxed))
        atomic_store_explicit(&slot->wait_max_ns, wait_ns, memory_order_relaxed);
}

static void demo_job_fn(rp_job_ctx *ctx, void *arg)
{
    const demo_job *job = arg;
    demo_run *run = job->run;
    const uint64_t start = now_ns();
    volatile uint64_t sink = spin(job->spin_iters);
    (void)sink;

    const int r = rp_job_routee(ctx);
    if (r < 0 || (size_t)r >= run->nroutees) {
        atomic_fetch_add_explicit(&run->stray, 1, memory_order_relaxed);
        return;
    }
    record_wait(&run->slots[r], start > job->submit_ns ? start - job->submit_ns : 0);
    atomic_fetch_add_explicit(&run->slots[r].ran, 1, memory_order_relaxed);
    if (run->keyed) {
        int owner = -1;
        if (!atomic_compare_exchange_strong_explicit(&run->key_owner[job->key], &owner, r,
                                                     memory_order_relaxed, memory_order_relaxed)
            && owner != r)
            atomic_fetch_add_explicit(&run->key_moves, 1, memory_order_relaxed);
    }
}

static void count_undelivered(void *arg, int reason, void *user)
{
    demo_run *run = user;
    (void)arg;
    (void)reason;
    atomic_fetch_add_explicit(&run->undelivered, 1, memory_order_relaxed);
}

/* Load of a routee as the custom strategy sees it: queued jobs plus the one
 * running; a stopped routee is never the lighter choice. */
static int64_t routee_load(const rp_routee *r)
{
    if (rp_routee_stopped(r))
        return INT64_MAX;
    int64_t depth = rp_routee_depth(r);
    if (depth < 0)
        depth = 0; /* unreadable (foreign): assume empty, as smallest-mailbox does */
    return depth + (rp_routee_busy(r) ? 1 : 0);
}

/* Custom strategy "two-choices": two routees drawn from (seed, message
 * index), the lighter one wins (Mitzenmacher's power of two choices: two
 * depth reads instead of N).  Stateless, hence thread-safe. */
static int two_choices_pick(void *user, rp_route_state *state, rp_routee *const *routees,
                            size_t n, size_t *out)
{
    const two_choices *tc = user;
    if (n == 0)
        return 0;
    const uint64_t h = mix64(tc->seed ^ state->message_index);
    const size_t a = (size_t)(h % n);
    size_t b = a;
    if (n > 1) {
        b = (size_t)((h >> 32) % (n - 1));
        if (b >= a)
            b++;
    }
    out[0] = routee_load(routees[b]) < routee_load(routees[a]) ? b : a;
    return 1;
}

/* ---- command line ---- */

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: rp-demo [--routees N] [--jobs N] [--seed S] [--load F] [--no-steal]\n"
        "\n"
        "Push a mixed-cost workload (%u%% of jobs spin ~%u us, %u%% spin ~%u us; which\n"
        "is which follows from the seed) through each routepool router, each on a\n"
        "fresh pool of N routees.  Per router it prints, for every routee, the jobs\n"
        "it ran, the deepest mailbox seen while submitting (rp_routee_depth) and the\n"
        "mean and longest time jobs waited in its mailbox and the jobs it stole from\n"
        "other routees, and the wall time from the first submit until the pool is\n"
        "idle.\n"
        "\n"
        "Routers: round-robin (rp_pool_submit), random, broadcast (every routee runs\n"
        "every job), smallest-mailbox, consistent-hash (%u keys, rp_router_tell_key),\n"
        "weighted (routee i has weight i+1) and a custom strategy, two-choices (two\n"
        "routees drawn at random, the one with less queued work wins).\n"
        "\n"
        "Options (spelled as in rp-tune):\n"
        "  -n, --routees N   routees (threads) per pool, 1..%u (default %u)\n"
        "      --jobs N      jobs per router, 1..%u (default %u)\n"
        "      --seed S      seed of the workload and of the random routers,\n"
        "                    0..18446744073709551615 (default %u)\n"
        "  -l, --load F      submit at F x what the routees' CPUs can run\n"
        "                    (min(N, online CPUs) of them), 0 <= F <= %g (default %g);\n"
        "                    a percent works too (80%% = 0.8); 0 submits as fast as\n"
        "                    possible\n"
        "      --no-steal    turn work stealing off (rp_pool_options.steal), to see\n"
        "                    what each router does on its own\n"
        "  -h, --help        print this help and exit\n"
        "  -V, --version     print the version and the library's and exit\n"
        "\n"
        "Exit status:\n"
        "  0  every job ran exactly once (broadcast: once per routee)\n"
        "  1  a routepool call failed (the message names the call and the reason)\n"
        "  2  bad command line (the message names the option)\n"
        "  3  a job went missing, ran twice, ran on no routee, was handed back, or a\n"
        "     consistent-hash key ran on two routees\n",
        (1000u - HEAVY_PERMILLE) / 10u, LIGHT_US, HEAVY_PERMILLE / 10u, HEAVY_US, NKEYS,
        RP_ROUTEES_MAX, DEFAULT_ROUTEES, JOBS_MAX, DEFAULT_JOBS, DEFAULT_SEED, LOAD_MAX,
        DEFAULT_LOAD);
}

enum { OPT_JOBS = 256, OPT_SEED, OPT_NO_STEAL };

static const struct option longopts[] = {
    {"routees", required_argument, NULL, 'n'}, {"jobs", required_argument, NULL, OPT_JOBS},
    {"seed", required_argument, NULL, OPT_SEED}, {"load", required_argument, NULL, 'l'},
    {"no-steal", no_argument, NULL, OPT_NO_STEAL}, {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},        {NULL, 0, NULL, 0}};

/* One option with a value; false after a message naming it. */
static bool parse_value(int c, const char *v, demo_cfg *cfg)
{
    uint64_t u;
    switch (c) {
    case 'l': return cli_parse_fraction("--load", v, 0, false, LOAD_MAX, &cfg->load);
    case OPT_SEED: return cli_parse_u64("--seed", v, 0, UINT64_MAX, &cfg->seed);
    case 'n':
        if (!cli_parse_u64("--routees", v, 1, RP_ROUTEES_MAX, &u))
            return false;
        cfg->routees = (size_t)u;
        return true;
    default:
        if (!cli_parse_u64("--jobs", v, 1, JOBS_MAX, &u))
            return false;
        cfg->jobs = (size_t)u;
        return true;
    }
}

/* Returns -1 to go on, or an exit code. */
static int parse_args(int argc, char *argv[], demo_cfg *cfg)
{
    int c;
    cli_init("rp-demo");
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":n:l:hV", longopts, NULL)) != -1) {
        if (c == 'h' || c == 'V') {
            if (c == 'h')
                usage(stdout);
            else
                cli_print_version();
            return EXIT_SUCCESS;
        }
        if (c == ':' || c == '?') {
            cli_bad_option(c, argv, longopts);
            return EXIT_USAGE;
        }
        if (c == OPT_NO_STEAL)
            cfg->steal = false;
        else if (!parse_value(c, optarg, cfg))
            return EXIT_USAGE;
    }
    if (optind < argc) {
        cli_usage_error("unexpected argument '%s'", argv[optind]);
        return EXIT_USAGE;
    }
    return -1;
}

/* ---- workload ---- */

/* Build the jobs; returns the microseconds of CPU work they hold. */
static uint64_t build_jobs(demo_job *jobs, const demo_cfg *cfg, demo_run *run, uint64_t iters_per_us)
{
    uint64_t state = cfg->seed, work_us = 0;
    for (size_t i = 0; i < cfg->jobs; i++) {
        state = mix64(state);
        const bool heavy = state % 1000u < HEAVY_PERMILLE;
        const unsigned us = heavy ? HEAVY_US : LIGHT_US;
        jobs[i].spin_iters = us * iters_per_us;
        jobs[i].key = (uint32_t)((state >> 32) % NKEYS);
        jobs[i].run = run;
        work_us += us;
    }
    return work_us;
}

/* Nanoseconds between submits for the configured load; 0 when unpaced.
 * A broadcast job costs one run per routee. */
static uint64_t submit_gap_ns(const demo_cfg *cfg, size_t copies)
{
    if (cfg->load <= 0)
        return 0;
    return (uint64_t)(cfg->mean_us * 1e3 * (double)copies / ((double)cfg->cpus * cfg->load));
}

/* ---- one router ---- */

enum { NROUTERS = 7 };
static const rp_strategy_kind ROUTER_KINDS[NROUTERS] = {
    RP_STRATEGY_ROUND_ROBIN,      RP_STRATEGY_RANDOM,          RP_STRATEGY_BROADCAST,
    RP_STRATEGY_SMALLEST_MAILBOX, RP_STRATEGY_CONSISTENT_HASH, RP_STRATEGY_WEIGHTED,
    RP_STRATEGY_CUSTOM};

static const char *router_label(rp_strategy_kind kind)
{
    return kind == RP_STRATEGY_CUSTOM ? "custom (two-choices)" : rp_strategy_name(kind);
}

static rp_strategy strategy_for(rp_strategy_kind kind, const demo_cfg *cfg,
                                const unsigned *weights, two_choices *tc)
{
    switch (kind) {
    case RP_STRATEGY_RANDOM: return rp_strategy_random(cfg->seed);
    case RP_STRATEGY_BROADCAST: return rp_strategy_broadcast();
    case RP_STRATEGY_SMALLEST_MAILBOX: return rp_strategy_smallest_mailbox();
    case RP_STRATEGY_CONSISTENT_HASH: return rp_strategy_consistent_hash(cfg->seed);
    case RP_STRATEGY_WEIGHTED: return rp_strategy_weighted(weights, cfg->routees);
    case RP_STRATEGY_CUSTOM: return rp_strategy_custom(two_choices_pick, tc);
    default: return rp_strategy_round_robin();
    }
}

static void reset_run(demo_run *run, rp_strategy_kind kind)
{
    for (size_t i = 0; i < run->nroutees; i++) {
        atomic_store_explicit(&run->slots[i].ran, 0, memory_order_relaxed);
        atomic_store_explicit(&run->slots[i].wait_sum_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&run->slots[i].wait_max_ns, 0, memory_order_relaxed);
        run->slots[i].max_depth = 0;
        run->slots[i].stole = 0;
    }
    for (size_t k = 0; k < NKEYS; k++)
        atomic_store_explicit(&run->key_owner[k], -1, memory_order_relaxed);
    atomic_store_explicit(&run->key_moves, 0, memory_order_relaxed);
    atomic_store_explicit(&run->undelivered, 0, memory_order_relaxed);
    atomic_store_explicit(&run->stray, 0, memory_order_relaxed);
    run->keyed = kind == RP_STRATEGY_CONSISTENT_HASH;
}

/* Read the depth of up to SAMPLE_MAX routees, continuing where the last
 * sample stopped, and keep each routee's deepest reading. */
static void sample_depths(demo_run *run, size_t *cursor)
{
    const size_t n = run->nroutees < SAMPLE_MAX ? run->nroutees : SAMPLE_MAX;
    for (size_t k = 0; k < n; k++) {
        const size_t i = *cursor;
        *cursor = (i + 1) % run->nroutees;
        const int64_t depth = rp_routee_depth(run->routees[i]);
        if (depth > run->slots[i].max_depth)
            run->slots[i].max_depth = depth;
    }
}

static int submit_one(rp_pool *pool, rp_router *router, rp_strategy_kind kind, demo_job *job)
{
    job->submit_ns = now_ns();
    int rc;
    if (kind == RP_STRATEGY_ROUND_ROBIN) {
        if ((rc = rp_pool_submit(pool, demo_job_fn, job)) < 0)
            report_rp("rp_pool_submit", rc);
    } else if (kind == RP_STRATEGY_CONSISTENT_HASH) {
        if ((rc = rp_router_tell_key(router, &job->key, sizeof job->key, demo_job_fn, job)) < 0)
            report_rp("rp_router_tell_key", rc);
    } else if ((rc = rp_router_tell(router, demo_job_fn, job)) < 0) {
        report_rp("rp_router_tell", rc);
    }
    return rc;
}

/* Read how many jobs each routee stole, while the pool still exists. */
static int read_steals(demo_run *run)
{
    for (size_t i = 0; i < run->nroutees; i++) {
        rp_routee_stats st;
        const int rc = rp_routee_stats_get(run->routees[i], &st);
        if (rc < 0) {
            report_rp("rp_routee_stats_get", rc);
            return EXIT_RUNTIME;
        }
        run->slots[i].stole = st.stole;
    }
    return 0;
}

/* Submit every job on schedule (job i due gap*i after the first; late
 * jobs go at once, so the mean rate holds even though a sleep overshoots),
 * sampling depths after each, then wait for idle.  Returns 0 or an exit
 * code; *wall_ms gets the elapsed time. */
static int drive(rp_pool *pool, rp_router *router, rp_strategy_kind kind, demo_job *jobs,
                 const demo_cfg *cfg, demo_run *run, double *wall_ms)
{
    const uint64_t gap = submit_gap_ns(cfg, kind == RP_STRATEGY_BROADCAST ? cfg->routees : 1);
    size_t cursor = 0;
    const uint64_t t0 = now_ns();
    for (size_t i = 0; i < cfg->jobs; i++) {
        const uint64_t due = t0 + gap * i;
        if (gap != 0 && now_ns() < due)
            sleep_until_ns(due);
        if (submit_one(pool, router, kind, &jobs[i]) < 0)
            return EXIT_RUNTIME;
        sample_depths(run, &cursor);
    }
    int rc = rp_pool_wait_idle(pool, -1);
    *wall_ms = (double)(now_ns() - t0) / 1e6;
    if (rc < 0) {
        report_rp("rp_pool_wait_idle", rc);
        return EXIT_RUNTIME;
    }
    return read_steals(run);
}

static int make_pool(rp_pool **out, const demo_cfg *cfg, demo_run *run)
{
    rp_pool_options opts;
    rp_pool_options_init(&opts);
    opts.name = "demo";
    opts.routees = (unsigned)cfg->routees;
    opts.steal = cfg->steal;
    opts.on_undelivered = count_undelivered;
    opts.undelivered_user = run;
    const int rc = rp_pool_create(out, &opts);
    if (rc < 0) {
        report_rp("rp_pool_create", rc);
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < cfg->routees; i++)
        run->routees[i] = rp_pool_routee(*out, i);
    return 0;
}

static int make_router(rp_router **out, rp_pool *pool, rp_strategy strategy)
{
    rp_router_options opts;
    rp_router_options_init(&opts);
    opts.name = "demo";
    opts.strategy = strategy;
    const int rc = rp_router_create(out, pool, &opts);
    if (rc < 0) {
        report_rp("rp_router_create", rc);
        return EXIT_RUNTIME;
    }
    return 0;
}

static uint64_t load_relaxed(atomic_uint_fast64_t *v)
{
    return (uint64_t)atomic_load_explicit(v, memory_order_relaxed);
}

static void collect(demo_run *run, rp_strategy_kind kind, const demo_cfg *cfg, demo_result *res)
{
    uint64_t wait_sum = 0, wait_max = 0;
    res->name = router_label(kind);
    res->min_ran = UINT64_MAX;
    res->max_ran = res->total_ran = 0;
    res->deepest = 0;
    res->stolen = 0;
    for (size_t i = 0; i < run->nroutees; i++) {
        routee_slot *s = &run->slots[i];
        const uint64_t ran = load_relaxed(&s->ran), wmax = load_relaxed(&s->wait_max_ns);
        res->min_ran = ran < res->min_ran ? ran : res->min_ran;
        res->max_ran = ran > res->max_ran ? ran : res->max_ran;
        res->total_ran += ran;
        res->deepest = s->max_depth > res->deepest ? s->max_depth : res->deepest;
        res->stolen += s->stole;
        wait_sum += load_relaxed(&s->wait_sum_ns);
        wait_max = wmax > wait_max ? wmax : wait_max;
    }
    res->wait_mean_us = res->total_ran ? (double)wait_sum / (double)res->total_ran / 1e3 : 0;
    res->wait_max_us = (double)wait_max / 1e3;
    res->expected = (uint64_t)cfg->jobs * (kind == RP_STRATEGY_BROADCAST ? cfg->routees : 1u);
    res->undelivered = load_relaxed(&run->undelivered);
    res->key_moves = load_relaxed(&run->key_moves);
    res->stray = load_relaxed(&run->stray);
}

/* Run one router on a fresh pool.  Returns 0 or an exit code. */
static int run_router(rp_strategy_kind kind, const demo_cfg *cfg, demo_job *jobs, demo_run *run,
                      const unsigned *weights, two_choices *tc, demo_result *res)
{
    rp_pool *pool = NULL;
    rp_router *router = NULL;
    reset_run(run, kind);
    int rc = make_pool(&pool, cfg, run);
    if (rc == 0 && kind != RP_STRATEGY_ROUND_ROBIN)
        rc = make_router(&router, pool, strategy_for(kind, cfg, weights, tc));
    if (rc == 0)
        rc = drive(pool, router, kind, jobs, cfg, run, &res->wall_ms);
    rp_router_destroy(router); /* routers go before their pool */
    rp_pool_destroy(pool);     /* drains anything left after a failure */
    if (rc == 0)
        collect(run, kind, cfg, res);
    return rc;
}

/* ---- output ---- */

static void print_row_u64(const char *label, demo_run *run, size_t base, size_t end,
                          atomic_uint_fast64_t *(*field)(routee_slot *), double scale)
{
    printf("  %-13s", label);
    for (size_t i = base; i < end; i++)
        printf(" %9.0f", (double)load_relaxed(field(&run->slots[i])) * scale);
    printf("\n");
}

static atomic_uint_fast64_t *field_ran(routee_slot *s) { return &s->ran; }
static atomic_uint_fast64_t *field_wait_max(routee_slot *s) { return &s->wait_max_ns; }

static void print_routees(demo_run *run)
{
    for (size_t base = 0; base < run->nroutees; base += COLUMNS) {
        const size_t end = base + COLUMNS < run->nroutees ? base + COLUMNS : run->nroutees;
        printf("  %-13s", "routee");
        for (size_t i = base; i < end; i++)
            printf(" %9zu", i);
        printf("\n");
        print_row_u64("jobs ran", run, base, end, field_ran, 1.0);
        printf("  %-13s", "max depth");
        for (size_t i = base; i < end; i++)
            printf(" %9" PRId64, run->slots[i].max_depth);
        printf("\n  %-13s", "mean wait us");
        for (size_t i = base; i < end; i++) {
            const uint64_t ran = load_relaxed(&run->slots[i].ran);
            const uint64_t sum = load_relaxed(&run->slots[i].wait_sum_ns);
            printf(" %9.1f", ran ? (double)sum / (double)ran / 1e3 : 0.0);
        }
        printf("\n");
        print_row_u64("max wait us", run, base, end, field_wait_max, 1e-3);
        printf("  %-13s", "stole");
        for (size_t i = base; i < end; i++)
            printf(" %9" PRIu64, run->slots[i].stole);
        printf("\n");
    }
}

static void print_router(demo_run *run, const demo_result *res)
{
    printf("\n%s: %.1f ms wall, %" PRIu64 " of %" PRIu64 " jobs ran", res->name, res->wall_ms,
           res->total_ran, res->expected);
    if (res->undelivered)
        printf(", %" PRIu64 " handed back", res->undelivered);
    if (run->keyed)
        printf(", %u keys, %" PRIu64 " jobs off their key's routee", NKEYS, res->key_moves);
    printf("\n");
    print_routees(run);
}

static void print_summary(const demo_result *res, size_t n)
{
    printf("\nsummary\n  %-21s %9s %20s %9s %10s %10s %8s\n", "router", "wall ms",
           "jobs/routee min..max", "max depth", "mean wait", "max wait", "stolen");
    for (size_t i = 0; i < n; i++) {
        char range[48];
        snprintf(range, sizeof range, "%" PRIu64 "..%" PRIu64, res[i].min_ran, res[i].max_ran);
        printf("  %-21s %9.1f %20s %9" PRId64 " %7.1f us %7.0f us %8" PRIu64 "\n",
               res[i].name, res[i].wall_ms, range, res[i].deepest, res[i].wait_mean_us,
               res[i].wait_max_us, res[i].stolen);
    }
}

/* True when every job of the run is accounted for. */
static bool accounted(const demo_result *res)
{
    const bool ok = res->total_ran == res->expected && res->undelivered == 0 &&
                    res->key_moves == 0 && res->stray == 0;
    if (!ok)
        fprintf(stderr,
                "rp-demo: %s: %" PRIu64 " of %" PRIu64 " jobs ran, %" PRIu64 " handed back, %"
                PRIu64 " on no routee, %" PRIu64 " off their key's routee\n",
                res->name, res->total_ran, res->expected, res->undelivered, res->stray,
                res->key_moves);
    return ok;
}

static const char *jemalloc_version(void)
{
    const char *v = NULL;
    size_t len = sizeof v;
    return mallctl("version", &v, &len, NULL, 0) == 0 && v ? v : "?";
}

static void print_header(const demo_cfg *cfg, uint64_t work_us, uint64_t iters_per_us)
{
    printf("rp-demo: routepool %s, jemalloc %s\n", rp_version(), jemalloc_version());
    printf("workload: %zu jobs, seed %" PRIu64 ": %u%% ~%u us, %u%% ~%u us of CPU spin "
           "(mean %.1f us, %.1f ms in all; %" PRIu64 " spin iterations/us)\n",
           cfg->jobs, cfg->seed, (1000u - HEAVY_PERMILLE) / 10u, LIGHT_US, HEAVY_PERMILLE / 10u,
           HEAVY_US, cfg->mean_us, (double)work_us / 1e3, iters_per_us);
    printf("pool: %zu routees on %zu CPU(s), unbounded mailboxes, work stealing %s, "
           "a fresh pool per router\n", cfg->routees, cfg->cpus, cfg->steal ? "on" : "off");
    if (cfg->load == 0)
        printf("submitting: as fast as one thread can (--load 0)\n");
    else
        printf("submitting: at load %g (%g%% of the routees' CPUs), one job every %.2f us "
               "(broadcast: every %.2f us)\n", cfg->load, 100 * cfg->load,
               (double)submit_gap_ns(cfg, 1) / 1e3,
               (double)submit_gap_ns(cfg, cfg->routees) / 1e3);
}

/* ---- main ---- */

typedef struct demo_mem {
    demo_job *jobs;
    routee_slot *slots;
    rp_routee **routees;
    atomic_int *key_owner;
    unsigned *weights;
} demo_mem;

static bool alloc_mem(demo_mem *m, const demo_cfg *cfg)
{
    m->jobs = calloc(cfg->jobs, sizeof *m->jobs);
    m->slots = aligned_alloc(_Alignof(routee_slot), cfg->routees * sizeof *m->slots);
    m->routees = calloc(cfg->routees, sizeof *m->routees);
    m->key_owner = calloc(NKEYS, sizeof *m->key_owner);
    m->weights = calloc(cfg->routees, sizeof *m->weights);
    if (!m->jobs || !m->slots || !m->routees || !m->key_owner || !m->weights) {
        fprintf(stderr, "rp-demo: out of memory for %zu jobs and %zu routees\n", cfg->jobs,
                cfg->routees);
        return false;
    }
    for (size_t i = 0; i < cfg->routees; i++) {
        atomic_init(&m->slots[i].ran, 0);
        atomic_init(&m->slots[i].wait_sum_ns, 0);
        atomic_init(&m->slots[i].wait_max_ns, 0);
        m->weights[i] = (unsigned)i + 1u;
    }
    for (size_t k = 0; k < NKEYS; k++)
        atomic_init(&m->key_owner[k], -1);
    return true;
}

static void free_mem(demo_mem *m)
{
    free(m->jobs);
    free(m->slots);
    free(m->routees);
    free(m->key_owner);
    free(m->weights);
}

static int run_all(demo_cfg *cfg, demo_mem *m)
{
    demo_run run = {.nroutees = cfg->routees, .slots = m->slots, .routees = m->routees,
                    .key_owner = m->key_owner};
    atomic_init(&run.key_moves, 0);
    atomic_init(&run.undelivered, 0);
    atomic_init(&run.stray, 0);
    two_choices tc = {.seed = cfg->seed};
    const uint64_t iters_per_us = calibrate_spin();
    const uint64_t work_us = build_jobs(m->jobs, cfg, &run, iters_per_us);
    cfg->mean_us = (double)work_us / (double)cfg->jobs;
    print_header(cfg, work_us, iters_per_us);

    demo_result res[NROUTERS];
    bool all_ok = true;
    for (size_t i = 0; i < NROUTERS; i++) {
        const int rc = run_router(ROUTER_KINDS[i], cfg, m->jobs, &run, m->weights, &tc, &res[i]);
        if (rc != 0)
            return rc;
        print_router(&run, &res[i]);
        all_ok = accounted(&res[i]) && all_ok;
    }
    print_summary(res, NROUTERS);
    fflush(stdout);
    return all_ok ? EXIT_SUCCESS : EXIT_ACCOUNTING;
}

int main(int argc, char *argv[])
{
    demo_cfg cfg = {.routees = DEFAULT_ROUTEES, .jobs = DEFAULT_JOBS, .seed = DEFAULT_SEED,
                    .load = DEFAULT_LOAD, .steal = true};
    const int parsed = parse_args(argc, argv, &cfg);
    if (parsed >= 0)
        return parsed;
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    cfg.cpus = online < 1 ? 1 : (size_t)online;
    cfg.cpus = cfg.cpus < cfg.routees ? cfg.cpus : cfg.routees;

    demo_mem mem = {0};
    int rc = EXIT_RUNTIME;
    if (alloc_mem(&mem, &cfg))
        rc = run_all(&cfg, &mem);
    free_mem(&mem);
    return rc;
}
