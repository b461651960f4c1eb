/* SPDX-License-Identifier: MIT */
/*
 * rp-bench-sim - a discrete-event simulator of routepool (issue 7): predicts
 * the sojourn time (mean, p50, p99, p99.9) of an open-loop workload under
 * each router, with and without work stealing, at 2..1024 routees, and sets
 * it against an M/G/k central queue simulated on the same arrivals.
 *
 * What it runs: the library's own rp_strategy_pick() (public header, linked
 * against routepool) over foreign routees whose depth callback reads the
 * simulated routee, and lib/worker.c's worker loop and lib/steal.c's
 * stealing and thief wake-up replayed step by step (bench/sim_engine.c says
 * how).  No threads.
 * Each routee has a CPU of its own (no time-sharing between routees).
 *
 * Workload: Poisson arrivals at load * k / 10.9 us; job cost bimodal (90%
 * 1 us, 10% 100 us: rp-bench-sojourn's mix), exponential or uniform, each
 * with mean 10.9 us.  The same arrivals and costs for every router of a
 * cell (common random numbers), from --seed: the output is deterministic.
 *
 * Overheads (defaults measured on the 2-vCPU AMD EPYC VM of
 * docs/simulator.md; every one is an option):
 *   --wake-ns 21000 + exponential --wake-tail-ns 2400: FUTEX_WAKE to a
 *      routee asleep on an idle CPU running; rp-bench-sojourn's probe
 *      (bench_wake_latency()) measured 22.7 us p50, 31.9 us p99, and a
 *      shifted exponential with these parameters has that p50 and p99.
 *   --dispatch-ns 100: routee CPU per job outside the job (pop, run
 *      wrapper, busy flag, job record); rp-bench-tiny runs the whole pool,
 *      submitter included, at 85-100 ns per job since the third session
 *      (200-230 before; docs/performance.md).
 *   --steal-ns 500: a steal (victim scan, lane steal); an estimate, not
 *      measured on its own.
 *   --spin-ns 0: the pool sleeps as soon as it finds no work.
 *   --slowdown 1.0: job cost multiplier.
 * --validate models rp-bench-sojourn's own conditions instead (the bench
 * profile, sim_model_bench_profile()): its SCHED_IDLE generator keeps the
 * CPUs awake, so a wake-up is a preemption, ~2-5 us, and its routees submit
 * the arrivals, which costs them ~200 ns per job (450 before the third
 * session's mailbox, 250 before the fifth's).  Those two values were
 * fitted on one rp-bench-sojourn run (its dispatch delays at load 0.5 and
 * its sojourn at 0.8; the dispatch refitted on run C, dc192ea, and on run
 * W1, e974d91) and validated on others
 * (docs/simulator.md).
 *
 * Output: a markdown table per k on stdout, progress on stderr, and one
 * bench_csv_row() per cell and statistic (bench "sim") for bench/run.
 * Public headers only (STYLE.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "routepool/routepool.h"
#include "sim.h"

#define MAX_KS 12
#define MAX_LOADS 12

typedef struct config {
    unsigned ks[MAX_KS];
    int nks;
    double loads[MAX_LOADS];
    int nloads;
    bool enabled[SR_COUNT];
    sim_cost cost;
    uint64_t jobs;        /* measured jobs per cell at small k */
    uint64_t per_routee;  /* ...raised to this many per routee at large k */
    uint64_t max_jobs;    /* ...but never above this */
    uint64_t scan_budget; /* routers that scan all k routees per job or steal:
                           * jobs * k stays under this */
    uint64_t seed;
    sim_model model;
    const char *validate;
    bool strict; /* --strict: a --validate cell that fails is exit status 1 */
    sim_replay replay; /* --stalls, --late on|off: what --validate replays */
    bool quick;
    bool slowdown_given;
} config;

static const char *const cost_names[] = {"bimodal", "exp", "uniform"};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rp-bench-sim [options]\n"
        "  Discrete-event simulation of routepool's routers (rp_strategy_pick, no\n"
        "  threads) and of lib/steal.c's stealing, against an M/G/k central queue.\n"
        "  Prints mean/p50/p99/p99.9 sojourn (arrival -> completion) per k, load and\n"
        "  router, and the p99 ratio to the central queue.\n"
        "  --k LIST          routee counts, 1..%u (default 2,8,32,128,1024)\n"
        "  --loads LIST      offered loads in (0,1) or percents (default 0.5,0.8,0.9,0.95)\n"
        "  --routers LIST    rr,rr-steal,random,random-steal,sm,sm-steal,ch (central\n"
        "                    always runs; default all)\n"
        "  --cost KIND       bimodal (90%% 1 us / 10%% 100 us, default), exp or uniform;\n"
        "                    every kind has mean 10.9 us\n"
        "  --jobs N          measured jobs per cell (default 1000000; --quick 150000),\n"
        "                    raised to --per-routee N per routee (default 8000; --quick\n"
        "                    1500) up to --max-jobs N (default 8000000; --quick 1500000);\n"
        "                    routers that read every routee per job or steal (sm, ch,\n"
        "                    *-steal) get at most --scan-budget N / k (default 5e8;\n"
        "                    --quick 1e8).  10%% more jobs are simulated first as\n"
        "                    warm-up, not measured.  The drift column is the change of\n"
        "                    the mean sojourn between the halves of the measured jobs;\n"
        "                    '~' marks a cell over 10%%: not settled, read it with care\n"
        "  --quick           the smaller counts above (under 20 s)\n"
        "  --seed N          arrivals, costs, keys, random routing (default 1)\n"
        "  --dispatch-ns N   routee CPU per job outside the job (default 100: about\n"
        "                    rp-bench-tiny's 85-100 ns/job for the whole pool)\n"
        "  --wake-ns N       wake-up latency of a routee asleep on an idle CPU\n"
        "                    (default 21000)\n"
        "  --wake-tail-ns N  plus an exponential extra of this mean (default 2400);\n"
        "                    together: rp-bench-sojourn's FUTEX_WAKE probe on this VM,\n"
        "                    22.7 us p50, 31.9 us p99\n"
        "  --spin-ns N       an idle routee polls this long before sleeping and takes\n"
        "                    work without a wake-up meanwhile; at most max(1, k/2)\n"
        "                    spin at once (default 50000: the pool's automatic choice\n"
        "                    when CPUs are to spare, as the model assumes: one CPU\n"
        "                    per routee)\n"
        "  --steal-batch half|one  what a thief takes: half the victim's depth, 1..8\n"
        "                    (default, as the pool) or one job (a what-if)\n"
        "  --victim deepest|two  how a thief picks its victim: the deepest routee\n"
        "                    worth stealing from, a scan of all (default, as the pool)\n"
        "                    or the deeper of two random ones (a what-if)\n"
        "  --rescue-ns N     with stealing, a routee with work of its own looks at one\n"
        "                    other routee every N ns and steals from it when it had\n"
        "                    jobs queued at the last look, still has, and finished none\n"
        "                    since (default 10000, as the pool; 0: never, the pool\n"
        "                    before the rescue)\n"
        "  --rescue-order any|older  what the rescue asks of the stuck routee's work:\n"
        "                    nothing more (default, as the pool) or that its oldest\n"
        "                    job arrived before our own oldest (a what-if)\n"
        "  --older-ns N      with the rescue: at a look that rescues nothing, take one\n"
        "                    job of the routee watched when it runs jobs that are not\n"
        "                    tiny and its oldest job arrived N ns or more before our\n"
        "                    own oldest (the age look; default 150000, as the pool;\n"
        "                    0: never, the pool before it)\n"
        "  --steal-ns N      time a thief spends on a steal (default 500; an estimate:\n"
        "                    a scan of the routees' cache lines and a lane CAS)\n"
        "  --slowdown X      job cost multiplier, 0.5..3 (default 1.0)\n"
        "  --central-overhead 0|1  the central queue's idle workers pay the wake-up\n"
        "                    too (default 0: the reference is the ideal M/G/k)\n"
        "  --central-dispatch-ns N  with --central-overhead 1: its per-job cost\n"
        "                    (default 0)\n"
        "  --validate FILE   compare with rp-bench-sojourn --json FILE at k=2: replay\n"
        "                    its workloads run by run with the bench profile (dispatch\n"
        "                    200 ns, wake-up 1700 ns + exp(3300 ns), the central\n"
        "                    queue's workers pay the wake-up but no dispatch, slowdown\n"
        "                    = the file's measured service time / 10.9 us, and with\n"
        "                    --handover each scheduler's measured per-job cost; options\n"
        "                    given override it) and print sim vs real mean\n"
        "                    and p99 with PASS/FAIL against 20%%, the medians over\n"
        "                    runs compared, and beside them the median over runs\n"
        "                    of each run's sim/real (paired; --strict ignores it).\n"
        "                    A file with cells run again (rp-bench-sojourn --lib-b's\n"
        "                    <variant>-b, central-again) also gets their pairs run by\n"
        "                    run, raw and adjusted for each run's interruptions (see\n"
        "                    bench/sim_validate.c); FILE,FILE,... validates each and\n"
        "                    pools their pairs\n"
        "  --stalls on|off   with --validate: add each job's measured interruption\n"
        "                    (the file's \"stalls\": excess over 20 us) to its cost,\n"
        "                    and take it off the slowdown (default on; files from\n"
        "                    before 2026-11-30 have none)\n"
        "  --late on|off     with --validate: submit each job as late as the\n"
        "                    benchmark's generator did (the file's \"late\": over\n"
        "                    5 us; the rest at their mean), the sojourn still\n"
        "                    counted from the arrival instant (default on; files\n"
        "                    from before the fifth session have none)\n"
        "  --wakes on|off    with --validate: a job that waited more than 20 us for\n"
        "                    its idle routee to wake (the file's \"wakes\") waits at\n"
        "                    least as long when its simulated routee (or central\n"
        "                    worker) sleeps too (default on; newer files only)\n"
        "  --handover on|off with --validate: charge each scheduler, per job, the\n"
        "                    handover the file measured for it (\"handover_mean_us\":\n"
        "                    a queued job's start after its worker's previous job)\n"
        "                    instead of the profile's dispatch, the central queue\n"
        "                    too (default on; files from the tenth session of issue\n"
        "                    18 on; --dispatch-ns or --central-dispatch-ns turn it off)\n"
        "  --strict          with --validate: exit 1 if any cell FAILs (bench/run\n"
        "                    does not set it: noisy measurements must not fail CI)\n"
        "  --help            this text\n"
        "Exit status: 0 ok, 1 runtime failure (or, with --strict, a --validate cell\n"
        "failed), 2 bad command line or a --validate file that cannot be read as\n"
        "sojourn JSON.\n", RP_ROUTEES_MAX);
}

static void bad(const char *opt, const char *v, const char *want)
{
    fprintf(stderr, "rp-bench-sim: %s: expected %s (got '%s')\n", opt, want, v ? v : "");
    exit(2);
}

static double parse_double(const char *opt, const char *s, double lo, double hi)
{
    char *end;
    double v;

    if (!s || !*s)
        bad(opt, s, "a number");
    v = strtod(s, &end);
    if (*end != '\0' || !(v >= lo && v <= hi)) {
        char want[64];
        snprintf(want, sizeof want, "a number %g..%g", lo, hi);
        bad(opt, s, want);
    }
    return v;
}

static void parse_loads(config *cfg, const char *s)
{
    char buf[256], *save = NULL;

    if (strlen(s) >= sizeof buf)
        bad("--loads", s, "a shorter list");
    snprintf(buf, sizeof buf, "%s", s);
    cfg->nloads = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        double l = parse_double("--loads", t, 0.001, 99.9);
        if (l >= 1.0)
            l /= 100.0; /* percent */
        if (!(l > 0 && l < 1) || cfg->nloads == MAX_LOADS)
            bad("--loads", s, "up to 12 loads in (0,1) or percents");
        cfg->loads[cfg->nloads++] = l;
    }
    if (cfg->nloads == 0)
        bad("--loads", s, "a non-empty list");
}

static void parse_ks(config *cfg, const char *s)
{
    char buf[256], *save = NULL;

    if (strlen(s) >= sizeof buf)
        bad("--k", s, "a shorter list");
    snprintf(buf, sizeof buf, "%s", s);
    cfg->nks = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (cfg->nks == MAX_KS)
            bad("--k", s, "at most 12 routee counts");
        cfg->ks[cfg->nks++] = (unsigned)bench_parse_u64("--k", t, 1, RP_ROUTEES_MAX);
    }
    if (cfg->nks == 0)
        bad("--k", s, "a non-empty list");
}

static void parse_routers(config *cfg, const char *s)
{
    char buf[256], *save = NULL;

    if (strlen(s) >= sizeof buf)
        bad("--routers", s, "a shorter list");
    snprintf(buf, sizeof buf, "%s", s);
    memset(cfg->enabled, 0, sizeof cfg->enabled);
    cfg->enabled[SR_CENTRAL] = true;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int r = 0;
        while (r < SR_COUNT && strcmp(t, sim_router_key[r]) != 0)
            r++;
        if (r == SR_COUNT)
            bad("--routers", t, "rr, rr-steal, random, random-steal, sm, sm-steal, ch");
        cfg->enabled[r] = true;
    }
}

static const char *value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc)
        bad(argv[*i], NULL, "a value (see --help)");
    return argv[++*i];
}

/* False when a is not a model option; v is its value (NULL: missing). */
static bool parse_model_opt(sim_model *m, const char *a, const char *v)
{
    if (!strcmp(a, "--dispatch-ns"))
        m->dispatch_ns = (int64_t)bench_parse_u64(a, v, 0, 10000000);
    else if (!strcmp(a, "--wake-ns"))
        m->wake_ns = (int64_t)bench_parse_u64(a, v, 0, 100000000);
    else if (!strcmp(a, "--wake-tail-ns"))
        m->wake_tail_ns = (int64_t)bench_parse_u64(a, v, 0, 100000000);
    else if (!strcmp(a, "--spin-ns"))
        m->spin_ns = (int64_t)bench_parse_u64(a, v, 0, 100000000);
    else if (!strcmp(a, "--steal-batch")) {
        if (!v || (strcmp(v, "half") && strcmp(v, "one")))
            bad(a, v, "half or one");
        m->steal_one = !strcmp(v, "one");
    } else if (!strcmp(a, "--victim")) {
        if (!v || (strcmp(v, "deepest") && strcmp(v, "two")))
            bad(a, v, "deepest or two");
        m->victim_two = !strcmp(v, "two");
    } else if (!strcmp(a, "--rescue-order")) {
        if (!v || (strcmp(v, "any") && strcmp(v, "older")))
            bad(a, v, "any or older");
        m->rescue_older = !strcmp(v, "older");
    } else if (!strcmp(a, "--older-ns"))
        m->older_ns = (int64_t)bench_parse_u64(a, v, 0, 100000000);
    else if (!strcmp(a, "--rescue-ns"))
        m->rescue_ns = (int64_t)bench_parse_u64(a, v, 0, 100000000);

    else if (!strcmp(a, "--steal-ns"))
        m->steal_ns = (int64_t)bench_parse_u64(a, v, 0, 10000000);
    else if (!strcmp(a, "--central-dispatch-ns"))
        m->central_dispatch_ns = (int64_t)bench_parse_u64(a, v, 0, 10000000);
    else if (!strcmp(a, "--central-overhead"))
        m->central_overhead = bench_parse_u64(a, v, 0, 1) != 0;
    else if (!strcmp(a, "--slowdown"))
        m->slowdown = parse_double(a, v, 0.5, 3.0);
    else
        return false;
    return true;
}

static void parse_one(config *cfg, int argc, char **argv, int *i)
{
    const char *a = argv[*i];

    if (!strcmp(a, "--quick"))
        return; /* handled first */
    if (!strcmp(a, "--k"))
        parse_ks(cfg, value(argc, argv, i));
    else if (!strcmp(a, "--loads"))
        parse_loads(cfg, value(argc, argv, i));
    else if (!strcmp(a, "--routers"))
        parse_routers(cfg, value(argc, argv, i));
    else if (!strcmp(a, "--jobs"))
        cfg->jobs = bench_parse_u64(a, value(argc, argv, i), 1000, 100000000);
    else if (!strcmp(a, "--per-routee"))
        cfg->per_routee = bench_parse_u64(a, value(argc, argv, i), 0, 1000000);
    else if (!strcmp(a, "--max-jobs"))
        cfg->max_jobs = bench_parse_u64(a, value(argc, argv, i), 1000, 100000000);
    else if (!strcmp(a, "--scan-budget"))
        cfg->scan_budget = bench_parse_u64(a, value(argc, argv, i), 1000000, 100000000000ull);
    else if (!strcmp(a, "--seed"))
        cfg->seed = bench_parse_u64(a, value(argc, argv, i), 0, UINT64_MAX);
    else if (!strcmp(a, "--validate"))
        cfg->validate = value(argc, argv, i);
    else if (!strcmp(a, "--strict"))
        cfg->strict = true;
    else if (!strcmp(a, "--stalls") || !strcmp(a, "--late") || !strcmp(a, "--wakes") ||
             !strcmp(a, "--handover")) {
        const char *v = value(argc, argv, i);
        if (strcmp(v, "on") && strcmp(v, "off"))
            bad(a, v, "on or off");
        *(!strcmp(a, "--late")       ? &cfg->replay.late
          : !strcmp(a, "--wakes")    ? &cfg->replay.wakes
          : !strcmp(a, "--handover") ? &cfg->replay.handover
                                     : &cfg->replay.stalls) = !strcmp(v, "on");
    }
    else if (!strcmp(a, "--cost")) {
        const char *v = value(argc, argv, i);
        int c = 0;
        while (c < 3 && strcmp(v, cost_names[c]) != 0)
            c++;
        if (c == 3)
            bad(a, v, "bimodal, exp or uniform");
        cfg->cost = (sim_cost)c;
    } else if (parse_model_opt(&cfg->model, a, *i + 1 < argc ? argv[*i + 1] : NULL))
        ++*i;
    else
        bad("unknown option", a, "an option --help lists");
}

static void parse_args(config *cfg, int argc, char **argv)
{
    *cfg = (config){.ks = {2, 8, 32, 128, 1024}, .nks = 5,
                    .loads = {0.5, 0.8, 0.9, 0.95}, .nloads = 4, .cost = SC_BIMODAL,
                    .jobs = 1000000, .per_routee = 8000, .max_jobs = 8000000,
                    .scan_budget = 500000000, .seed = 1,
                    .replay = {.stalls = true, .late = true, .wakes = true, .handover = true}};
    sim_model_defaults(&cfg->model);
    for (int r = 0; r < SR_COUNT; r++)
        cfg->enabled[r] = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(argv[i], "--quick")) {
            cfg->quick = true;
            cfg->jobs = 150000, cfg->per_routee = 1500, cfg->max_jobs = 1500000;
            cfg->scan_budget = 100000000;
        }
    }
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--validate"))
            sim_model_bench_profile(&cfg->model);
        if (!strcmp(argv[i], "--slowdown"))
            cfg->slowdown_given = true;
    }
    for (int i = 1; i < argc; i++)
        parse_one(cfg, argc, argv, &i);
    /* A per-job cost given on the command line wins over the measured
     * handovers, for every cell (options given override the profile). */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--dispatch-ns") || !strcmp(argv[i], "--central-dispatch-ns"))
            cfg->replay.handover = false;
}

/*
 * Measured jobs of a cell.  Routing and stealing cost O(1) per job for
 * central, rr and random, which get --per-routee jobs per routee (a
 * per-routee queue at load 0.95 needs thousands of jobs to forget its empty
 * start); smallest-mailbox and consistent hashing read all k routees per
 * job and stealing scans them per idle routee, so those get at most
 * scan_budget / k (they pool the load and settle fast, except
 * consistent-hash, which behaves like random: the drift column tells).
 */
static uint64_t jobs_for(const config *cfg, unsigned k, sim_router r)
{
    uint64_t n = cfg->jobs, want = cfg->per_routee * k;
    bool scans = r != SR_CENTRAL && r != SR_RR && r != SR_RANDOM;

    if (want > n)
        n = want < cfg->max_jobs ? want : cfg->max_jobs;
    if (n < cfg->jobs)
        n = cfg->jobs;
    if (scans && n > cfg->scan_budget / k)
        n = cfg->scan_budget / k > 10000 ? cfg->scan_budget / k : 10000;
    return n;
}

static void csv_cell(const sim_cell *c, const sim_result *r, double ratio)
{
    char cas[128];

    snprintf(cas, sizeof cas, "k=%u load=%.2f %s", c->k, c->load, sim_router_key[c->router]);
    bench_csv_row("sim", cas, "mean", "us", r->mean, r->mean, r->mean, 1);
    bench_csv_row("sim", cas, "p50", "us", r->p50, r->p50, r->p50, 1);
    bench_csv_row("sim", cas, "p99", "us", r->p99, r->p99, r->p99, 1);
    bench_csv_row("sim", cas, "p99.9", "us", r->p999, r->p999, r->p999, 1);
    if (c->router != SR_CENTRAL)
        bench_csv_row("sim", cas, "p99 ratio to central", "x", ratio, ratio, ratio, 1);
}

static void print_row(const sim_cell *c, const sim_result *r, const sim_result *central)
{
    double ratio = central->p99 > 0 ? r->p99 / central->p99 : 0;

    printf("| %.2f | %s | %.1f | %.1f | %.1f | %.1f | %.2fx | %.1f | %.2fM | %+.0f%%%s |\n",
           c->load, sim_router_label[c->router], r->mean, r->p50, r->p99, r->p999, ratio,
           r->stolen_per_1000, (double)c->jobs / 1e6, 100 * r->drift,
           fabs(r->drift) > 0.10 ? " ~" : "");
    csv_cell(c, r, ratio);
}

/* Every router at one (k, load); the central queue first, for the ratios. */
static int run_load(const config *cfg, unsigned k, double load, double *secs)
{
    sim_result central, r;

    for (int ro = 0; ro < SR_COUNT; ro++) {
        sim_cell c = {.k = k, .load = load, .router = (sim_router)ro, .cost = cfg->cost,
                      .jobs = jobs_for(cfg, k, (sim_router)ro), .seed = cfg->seed};
        if (!cfg->enabled[ro])
            continue;
        c.warmup = c.jobs / 10;
        fprintf(stderr, "\rk=%-4u load %.2f %-30s", k, load, sim_router_label[ro]);
        if (sim_run_cell(ro == SR_CENTRAL ? &central : &r, &c, &cfg->model) < 0)
            return -1;
        *secs += (ro == SR_CENTRAL ? central : r).seconds;
        print_row(&c, ro == SR_CENTRAL ? &central : &r, &central);
        fflush(stdout);
    }
    return 0;
}

static void print_header(const config *cfg)
{
    const sim_model *m = &cfg->model;
    bench_machine mach;

    bench_machine_get(&mach);
    printf("# rp-bench-sim (routepool %s): simulated, not measured\n", rp_version());
    bench_machine_print(stdout, &mach);
    printf("# workload:  Poisson arrivals, cost %s (mean 10.9 us), seed %llu\n",
           cost_names[cfg->cost], (unsigned long long)cfg->seed);
    printf("# model:     dispatch %lld ns/job, wake-up %lld ns + exp(%lld ns), spin %lld ns, "
           "steal %lld ns, slowdown %.3f; one CPU per routee\n",
           (long long)m->dispatch_ns, (long long)m->wake_ns, (long long)m->wake_tail_ns,
           (long long)m->spin_ns, (long long)m->steal_ns, m->slowdown);
    printf("# reference: central queue = one FCFS queue, k servers, zero overhead (M/G/k)\n");
}

static int run_table(const config *cfg)
{
    double secs = 0;
    int64_t t0 = bench_now_ns();

    print_header(cfg);
    for (int ki = 0; ki < cfg->nks; ki++) {
        unsigned k = cfg->ks[ki];
        printf("\n### k = %u routees\n\n", k);
        printf("| load | router | mean us | p50 us | p99 us | p99.9 us | p99 / central "
               "| stolen/1k | jobs | drift |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (int li = 0; li < cfg->nloads; li++)
            if (run_load(cfg, k, cfg->loads[li], &secs) < 0)
                return 1;
    }
    fprintf(stderr, "\r%-60s\r", "");
    printf("\n# simulated in %.1f s (wall %.1f s)\n", secs,
           (double)(bench_now_ns() - t0) / 1e9);
    return 0;
}

int main(int argc, char **argv)
{
    config cfg;

    parse_args(&cfg, argc, argv);
    if (cfg.validate) { /* FILE[,FILE...]: each validated, their pairs pooled */
        char *list = strdup(cfg.validate), *save = NULL;
        int rc = 0;
        if (!list)
            return 1;
        for (char *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            int r = sim_validate(p, &cfg.model, cfg.slowdown_given, cfg.strict, cfg.replay);
            rc = r > rc ? r : rc;
            if (r == 2)
                break; /* a file that cannot be read: as a bad command line */
            printf("\n");
        }
        if (rc != 2)
            sim_validate_pooled();
        free(list);
        return rc;
    }
    return run_table(&cfg);
}
