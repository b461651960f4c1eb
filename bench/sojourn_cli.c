/* SPDX-License-Identifier: MIT */
/*
 * bench/sojourn_cli.c - rp-bench-sojourn's command line: --help, the options into a
 * config (defaults first, --quick before the others, --no-hooks last), exit
 * status 2 on a bad one.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sojourn.h"

static const char *const wake_names[] = {"sem", "signal", "broadcast"};
static const char *const tbb_submit_names[] = {"fifo", "other"};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rp-bench-sojourn [options]\n"
        "  Sojourn time (scheduled arrival -> completion) of an open-loop Poisson\n"
        "  workload, 90%% 1 us / 10%% 100 us CPU jobs, on 2 routees, per router,\n"
        "  as ratios to one central FIFO queue with 2 workers (M/G/2).\n"
        "  --loads L,L,...   offered loads, fractions or percents (default 0.5,0.8,0.9)\n"
        "  --jobs N          measured jobs per run (default 150000)\n"
        "  --warmup N        unmeasured jobs at the start of each run (default jobs/10)\n"
        "  --reps N          runs per scheduler and load, 1..%d (default 9)\n"
        "  --quick           50000 jobs, 3 runs (~30 s)\n"
        "  --seed N          workload seed (default 1)\n"
        "  --variants LIST   comma list of rr,rr-steal,random,sm,sm-steal,tbb (central\n"
        "                    always runs; default all built in; tbb: oneTBB 2-worker\n"
        "                    task_arena, when built with libtbb-dev)\n"
        "  --gen MODE        how arrivals are submitted (default idle):\n"
        "                    idle:  a SCHED_IDLE generator per CPU, sched_yield loop,\n"
        "                           and routees submit the due arrivals when a job ends\n"
        "                    spin:  normal-priority generator, PAUSE loop, alone\n"
        "                    yield: normal-priority generator, sched_yield loop, alone\n"
        "  --no-hooks        with --gen idle: routees do not submit arrivals\n"
        "  --max-foreign PCT redo a run when other processes used more than PCT%% of\n"
        "                    the machine during it (default 5; 100 disables)\n"
        "  --max-stall-ms N  redo a run in which a job was interrupted N ms or more\n"
        "                    (the VM froze; default 10)\n"
        "  --retries N       at most N redos per run (default 3)\n"
        "  --no-pin          do not pin worker i (routee or central) to CPU i\n"
        "  --tbb-submit P    policy of a --gen idle generator while it submits to tbb:\n"
        "                    fifo (default, as for every scheduler) or other (SCHED_OTHER:\n"
        "                    oneTBB's enqueue takes spin locks, and a SCHED_FIFO thread\n"
        "                    spinning on one held by a worker of its CPU starves it until\n"
        "                    RT throttling, ~50 ms; see the top of bench/sojourn.c)\n"
        "  --central-wake W  how the central queue wakes a worker: sem (default, a\n"
        "                    semaphore per worker), signal or broadcast (condvar)\n"
        "  --spin-us N       sleep when the next arrival is further away (default 50)\n"
        "  --idle-spin-us N  the pools' rp_pool_options.idle_spin_us, 0..%u (default:\n"
        "                    the pool's automatic choice, 0 on 2 CPUs for 2 routees)\n"
        "  --json FILE       also write the results as JSON, with each run's\n"
        "                    interrupted jobs, late submissions and late wake-ups\n"
        "                    (what rp-bench-sim --validate replays)\n"
        "  --time-submits    time every submit (two clock reads each, which every\n"
        "                    scheduler pays) and report the submits routees make\n"
        "                    inside their jobs: mean and p90 ns per scheduler\n"
        "  --dump-jobs DIR   write every run's jobs to DIR/<load>-<scheduler>-<run>.csv\n"
        "                    (times in ns from the run's start; submit_ns with\n"
        "                    --time-submits); DIR must exist\n"
        "  --lib-b PATH      paired A/B of two builds in one file: every pool variant\n"
        "                    also runs on this build of the library (a libroutepool.so\n"
        "                    or its build directory) as <variant>-b, beside the variant\n"
        "                    in every repetition, and a B/A table gives the medians of\n"
        "                    the per-repetition ratios; the same build as A is a null\n"
        "                    comparison.  Both builds need -Bsymbolic-functions (every\n"
        "                    build since the fifteenth session; see bench/sojourn_libs.c)\n"
        "  --lib-a PATH      with --lib-b: build A (default: the linked library)\n"
        "  --no-null         run the central queue once a repetition, not twice (the\n"
        "                    second run, 'central-again', is the null: its ratio to\n"
        "                    the first is what the machine alone does to a ratio,\n"
        "                    printed beside every verdict)\n"
        "  --help            this text\n"
        "Exit status: 0 ok, 1 runtime failure, 2 bad command line.\n", MAX_REPS,
        (unsigned)RP_IDLE_SPIN_US_MAX);
}

static void parse_loads(config *cfg, const char *s)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof buf, "%s", s);
    cfg->nloads = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        double l = strtod(t, &end);
        if (l > 1.0)
            l /= 100.0; /* given in percent */
        if (*end != '\0' || !(l > 0.0 && l < 1.0) || cfg->nloads == MAX_LOADS) {
            fprintf(stderr, "--loads: expected up to %d loads in (0,1) or (1,100) percent (got '%s')\n",
                    MAX_LOADS, s);
            exit(2);
        }
        cfg->loads[cfg->nloads++] = l;
    }
    if (cfg->nloads == 0) {
        fprintf(stderr, "--loads: empty list\n");
        exit(2);
    }
}

static void parse_variants(config *cfg, const char *s)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof buf, "%s", s);
    memset(cfg->enabled, 0, sizeof cfg->enabled);
    cfg->enabled[V_CENTRAL] = true;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int v = 0;
        while (v < V_NULL && strcmp(t, variants[v].key) != 0)
            v++;
        if (v == V_NULL) { /* (the null follows --no-null, the -b twins --lib-b) */
            fprintf(stderr, "--variants: unknown '%s' (rr, rr-steal, random, sm, sm-steal, tbb)\n", t);
            exit(2);
        }
#ifndef RP_BENCH_HAVE_TBB
        if (v == V_TBB) {
            fprintf(stderr, "--variants: tbb is not built in (apt-get install libtbb-dev, reconfigure)\n");
            exit(2);
        }
#endif
        cfg->enabled[v] = true;
    }
}

static int parse_name(const char *opt, const char *v, const char *const *names, int n)
{
    for (int k = 0; k < n; k++)
        if (!strcmp(v, names[k]))
            return k;
    fprintf(stderr, "%s: unknown value '%s' (see --help)\n", opt, v);
    exit(2);
}

static void parse_gen(config *cfg, const char *g)
{
    cfg->gen = (gen_mode)parse_name("--gen", g, gen_names, 3);
    cfg->hooks = cfg->gen == GEN_IDLE;
}

static const char *opt_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s needs a value (see --help)\n", argv[*i]);
        exit(2);
    }
    return argv[++*i];
}

static void parse_one(config *cfg, int argc, char **argv, int *i, bool *warm_set)
{
    const char *a = argv[*i];

    if (!strcmp(a, "--quick"))
        return; /* handled first */
    if (!strcmp(a, "--loads"))
        parse_loads(cfg, opt_value(argc, argv, i));
    else if (!strcmp(a, "--jobs"))
        cfg->jobs = bench_parse_u64(a, opt_value(argc, argv, i), 1000, 50000000);
    else if (!strcmp(a, "--warmup"))
        cfg->warmup = bench_parse_u64(a, opt_value(argc, argv, i), 0, 50000000), *warm_set = true;
    else if (!strcmp(a, "--reps"))
        cfg->reps = (int)bench_parse_u64(a, opt_value(argc, argv, i), 1, MAX_REPS);
    else if (!strcmp(a, "--seed"))
        cfg->seed = bench_parse_u64(a, opt_value(argc, argv, i), 0, UINT64_MAX);
    else if (!strcmp(a, "--variants"))
        parse_variants(cfg, opt_value(argc, argv, i));
    else if (!strcmp(a, "--spin-us"))
        cfg->spin_ns = (int64_t)bench_parse_u64(a, opt_value(argc, argv, i), 0, 1000000) * 1000;
    else if (!strcmp(a, "--json"))
        cfg->json = opt_value(argc, argv, i);
    else if (!strcmp(a, "--max-foreign"))
        cfg->max_foreign = (double)bench_parse_u64(a, opt_value(argc, argv, i), 1, 100) / 100.0;
    else if (!strcmp(a, "--max-stall-ms"))
        cfg->max_stall_us = 1000.0 * (double)bench_parse_u64(a, opt_value(argc, argv, i), 1, 100000);
    else if (!strcmp(a, "--retries"))
        cfg->retries = (int)bench_parse_u64(a, opt_value(argc, argv, i), 0, 100);
    else if (!strcmp(a, "--central-wake"))
        cfg->central_wake = parse_name(a, opt_value(argc, argv, i), wake_names, 3);
    else if (!strcmp(a, "--tbb-submit"))
        cfg->tbb_other = parse_name(a, opt_value(argc, argv, i), tbb_submit_names, 2) == 1;
    else if (!strcmp(a, "--no-pin"))
        cfg->pin = false;
    else if (!strcmp(a, "--time-submits"))
        cfg->time_submits = true;
    else if (!strcmp(a, "--dump-jobs"))
        cfg->dump_dir = opt_value(argc, argv, i);
    else if (!strcmp(a, "--idle-spin-us"))
        g_idle_spin_us = (unsigned)bench_parse_u64(a, opt_value(argc, argv, i), 0, RP_IDLE_SPIN_US_MAX);
    else if (!strcmp(a, "--no-hooks"))
        cfg->hooks = false;
    else if (!strcmp(a, "--gen"))
        parse_gen(cfg, opt_value(argc, argv, i));
    else if (!strcmp(a, "--lib-a"))
        cfg->lib_a = opt_value(argc, argv, i);
    else if (!strcmp(a, "--lib-b"))
        cfg->lib_b = opt_value(argc, argv, i);
    else if (!strcmp(a, "--no-null"))
        cfg->no_null = true;
    else {
        fprintf(stderr, "unknown option '%s' (see --help)\n", a);
        exit(2);
    }
}

void parse_args(config *cfg, int argc, char **argv)
{
    bool warm_set = false;

    *cfg = (config){.loads = {0.5, 0.8, 0.9}, .nloads = 3, .jobs = 150000, .reps = 9,
                    .seed = 1, .spin_ns = 50000, .gen = GEN_IDLE, .hooks = true,
                    .max_foreign = 0.05, .retries = 3, .pin = true, .max_stall_us = 10000};
    for (int v = 0; v < V_COUNT; v++)
        cfg->enabled[v] = true;
#ifndef RP_BENCH_HAVE_TBB
    cfg->enabled[V_TBB] = false;
#endif
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(argv[i], "--quick"))
            cfg->jobs = 50000, cfg->reps = 3;
    }
    for (int i = 1; i < argc; i++)
        parse_one(cfg, argc, argv, &i, &warm_set);
    /* --no-hooks wins over the hooks --gen idle turns on, in any order. */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--no-hooks"))
            cfg->hooks = false;
    if (!warm_set)
        cfg->warmup = cfg->jobs / 10;
    if (cfg->lib_a && !cfg->lib_b) {
        fprintf(stderr, "--lib-a: needs --lib-b (see --help)\n");
        exit(2);
    }
    for (enum variant v = V_RR; v <= V_SM_STEAL; v++)
        cfg->enabled[variant_twin(v)] = cfg->lib_b && cfg->enabled[v];
    cfg->enabled[V_NULL] = !cfg->no_null;
    if (cfg->dump_dir) { /* checked now, not after the first run */
        DIR *d = opendir(cfg->dump_dir); /* (enum stat hides struct stat here) */
        if (d)
            closedir(d);
        if (!d || access(cfg->dump_dir, W_OK | X_OK) != 0) {
            fprintf(stderr, "--dump-jobs: %s is not a directory this process can write to\n",
                    cfg->dump_dir);
            exit(2);
        }
    }
}
