/* SPDX-License-Identifier: MIT */
/*
 * rp-bench-sojourn - sojourn time of an open-loop bimodal workload under
 * each routepool router, with and without work stealing, as ratios to a
 * central FIFO queue (issue 3).
 *
 * Workload: Poisson arrivals; 90% of the jobs cost 1 us of CPU and 10% cost
 * 100 us (mean 10.9 us, squared coefficient of variation 7.42), from a
 * calibrated spin loop.  The arrival rate is load * 2 / 10.9 us for two
 * routees.  Each job's sojourn runs from its *scheduled* arrival instant to
 * its completion, so a generator that falls behind is charged to the
 * scheduler under test, never hidden (no coordinated omission).  The end
 * is issue 18's target 4 per load, with the placement (ping-pong at the
 * start and the end, load average) it was measured on.
 *
 * Reference: one mutex + condvar FIFO shared by two worker threads, an
 * M/G/2 queue - the best tail any first-come-first-served dispatch can
 * give.  Per-routee FIFOs fed by round-robin or random are two M/G/1
 * queues instead (building-blocks.md, "Queueing anchors").
 *
 * Peer (when built with oneTBB, bench/peer_tbb.cpp): "tbb", a task_arena
 * of two worker threads (pinned like the routees) and oneTBB's own work
 * stealing.  A generator hands each arrival to the arena with
 * task_arena::enqueue(task_group::defer(job)) - oneTBB's way in from a
 * thread outside the arena; a worker that submits due arrivals (below)
 * task_group::run()s them into its own deque, where the other worker can
 * steal them.  Measured exactly like the others, reported as a ratio to
 * the central queue; its stolen count is not known (0), and its
 * "simulated" cell is the central queue's (no model of oneTBB's order).
 * Measured here: with the generators' SCHED_FIFO submit windows (below)
 * tbb runs see jobs interrupted for ~50 ms - oneTBB's enqueue takes spin
 * locks, a SCHED_FIFO generator spinning on one that a worker of its CPU
 * holds starves that worker until RT throttling (950 ms of every 1 s) lets
 * it run.  --tbb-submit other keeps the tbb generators at SCHED_OTHER while
 * they submit, to show oneTBB without that inversion (its tail stays long:
 * a worker runs its own deque newest-first).
 *
 * Method: for every load and repetition one workload is drawn from a fixed
 * seed and replayed through every scheduler (common random numbers, in an
 * order that rotates with the repetition).  The first --warmup jobs of a
 * run are not measured.  Each table cell is the median over repetitions of
 * a per-run statistic; ratios are medians of the per-run ratios to the
 * central queue of the same repetition.  Job records are preallocated: the
 * measured path allocates nothing.  A run during which other processes took
 * 5% or more of the machine is done again (the machine is shared).
 *
 * Arrivals: a SCHED_IDLE generator thread, helped by the routees while both
 * are busy (see "arrivals" below for why, and why that is exact).  Each
 * load also prints the same workload simulated with zero overhead, the
 * queueing-theory answer to read the measurements against.
 *
 * The parts are listed in sojourn.h, one concept a file; this one is the
 * driver.  Public headers only (STYLE.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "sojourn.h"

const variant_name variants[V_COUNT] = {
    [V_CENTRAL] = {"central", "central queue (M/G/2)"},
    [V_RR] = {"rr", "round-robin"},
    [V_RR_STEAL] = {"rr-steal", "round-robin + steal"},
    [V_RANDOM] = {"random", "random"},
    [V_SM] = {"sm", "smallest-mailbox"},
    [V_SM_STEAL] = {"sm-steal", "smallest-mailbox + steal"},
    [V_TBB] = {"tbb", "oneTBB task_group (its stealing)"},
    [V_NULL] = {"central-again", "central queue, again (the null)"},
    [V_RR_B] = {"rr-b", "round-robin [B]"},
    [V_RR_STEAL_B] = {"rr-steal-b", "round-robin + steal [B]"},
    [V_RANDOM_B] = {"random-b", "random [B]"},
    [V_SM_B] = {"sm-b", "smallest-mailbox [B]"},
    [V_SM_STEAL_B] = {"sm-steal-b", "smallest-mailbox + steal [B]"},
};
const char *const gen_names[3] = {"idle", "spin", "yield"};
unsigned g_idle_spin_us = RP_IDLE_SPIN_US_AUTO;
table results;
table simulated;
int redone[MAX_LOADS][V_COUNT];
stall_list stalls[MAX_LOADS][V_COUNT][MAX_REPS];
stall_list lates[MAX_LOADS][V_COUNT][MAX_REPS];
double late_base_us[MAX_LOADS][V_COUNT][MAX_REPS];
stall_list wakes[MAX_LOADS][V_COUNT][MAX_REPS];

static uint64_t iters_short, iters_long;

static void print_wake_latency(bench_wake_result *wr)
{
    if (bench_wake_latency(wr, 1000, 200) == 0)
        printf("# wake-up:     %.1f us p50, %.1f us p99: FUTEX_WAKE to a thread asleep on the "
               "other CPU running (%d samples, 200 us apart)\n", wr->p50_us, wr->p99_us,
               wr->samples);
    else
        wr->samples = 0;
}

static void preamble(const config *cfg, bench_machine *m, bench_calib *cal,
                     bench_placement *place, bench_wake_result *wake)
{
    bench_machine_get(m);
    printf("# rp-bench-sojourn (routepool %s)\n", rp_version());
    bench_machine_print(stdout, m);
    libs_print(cfg);
    bench_placement_take(place, 7);
    if (place->pp.one_way_ns > 0)
        bench_pingpong_print(stdout, &place->pp, 7);
    print_wake_latency(wake);
    bench_calibrate(cal, 300, 21);
    iters_short = (uint64_t)(cal->iters_per_us * SHORT_US + 0.5);
    iters_long = (uint64_t)(cal->iters_per_us * LONG_US + 0.5);
    printf("# spin loop:   %.1f iterations/us (fastest of %d trials; median %.1f)\n",
           cal->iters_per_us, cal->trials, cal->median_per_us);
    printf("# job check:   1 us job takes %.2f us, 100 us job takes %.1f us (medians, "
           "incl. two clock reads)\n", measure_job_us(iters_short, 500),
           measure_job_us(iters_long, 200));
    printf("# generator:   --gen %s: %s, %s for arrivals < %lld us away, sleeps "
           "otherwise (timer slack 1 ns); routees submit due arrivals: %s\n",
           gen_names[cfg->gen],
           cfg->gen == GEN_IDLE ? "one thread pinned per CPU, SCHED_IDLE (SCHED_FIFO while submitting)"
                                 : "one SCHED_OTHER thread",
           cfg->gen == GEN_SPIN ? "PAUSE loop" : "sched_yield loop",
           (long long)(cfg->spin_ns / 1000), cfg->hooks ? "yes" : "no");
    printf("# routees:     %u, %s, idle spin %s; stats are medians of %d runs; ratios are "
           "medians of per-run ratios to the central queue\n", ROUTEES,
           cfg->pin ? "worker i pinned to CPU i (pin_cpus)" : "not pinned",
           g_idle_spin_us == RP_IDLE_SPIN_US_AUTO ? "automatic" : "as --idle-spin-us", cfg->reps);
#ifdef RP_BENCH_HAVE_TBB
    printf("# tbb:         %s, task_arena of %u workers%s; arrivals: task_arena::enqueue("
           "task_group::defer) from a generator (submitting under SCHED_%s), task_group::run "
           "from a worker\n", peer_tbb_version(), ROUTEES,
           cfg->pin ? " pinned like the routees" : "", cfg->tbb_other ? "OTHER" : "FIFO");
#else
    printf("# tbb:         not built in (apt-get install libtbb-dev, reconfigure)\n");
#endif
    printf("# central:     mutex-protected FIFO, workers woken by %s\n",
           cfg->central_wake == WAKE_SEM ? "a semaphore each (see --help)"
           : cfg->central_wake == WAKE_SIGNAL ? "pthread_cond_signal" : "pthread_cond_broadcast");
    printf("# noise guard: a run is done again (at most %d times) when other processes used "
           ">= %.0f%% of the machine during it or a job was interrupted >= %.0f ms\n",
           cfg->retries, 100 * cfg->max_foreign, cfg->max_stall_us / 1e3);
    fflush(stdout);
}

/* ---- one run: one scheduler, one workload ---- */

/* One run; its t0 (the jobs' times are from it). */
static int64_t run_one(double *st, const config *cfg, enum variant v,
                       const workload *w, const buffers *b, uint64_t seed)
{
    sched s;
    sched_counts counts;
    int64_t t0, cpu, gen_end;

    sched_start(&s, cfg, v, b->queue, seed);
    for (size_t i = 0; i < w->n; i++) {
        b->jobs[i].iters = w->is_long[i] ? iters_long : iters_short;
        b->jobs[i].start = b->jobs[i].done = 0;
        b->jobs[i].worker = -1;
    }
    /* Start in 2 ms: the routees are up and asleep, as in service. */
    t0 = bench_now_ns() + 2000000;
    feed = (feeder){.hooks = cfg->hooks, .time_submits = cfg->time_submits, .s = &s, .w = w,
                    .b = b, .t0 = t0};
    atomic_init(&feed.next, 0);
    atomic_init(&feed.by_routee, 0);
    cpu = generate_all(cfg);
    gen_end = bench_now_ns();
    counts = sched_finish(&s);
    st[S_STEAL] = bench_per_1000(counts.stole, w->n);
    st[S_LOOKS] = bench_per_1000(counts.looks, w->n);
    st[S_STALE] = bench_per_1000(counts.stale_looks, w->n);
    st[S_RESCUE] = bench_per_1000(counts.rescues, w->n);
    st[S_AGE] = bench_per_1000(counts.age_takes, w->n);
    run_stats(st, cfg, w, b, t0);
    st[S_GENCPU] = (double)cpu / (double)(gen_end - t0);
    st[S_HOOK] = (double)atomic_load(&feed.by_routee) / (double)w->n;
    feed.hooks = false;
    return t0;
}

/* --dump-jobs: one run's jobs as CSV, times in ns from t0 (the run's
 * start): scheduled arrival, submission, start, end; the worker that ran
 * it, whether it was long, the routee that submitted it (-1: a generator
 * thread), and with --time-submits how long its submit call took.  Exits
 * on an I/O error. */
static void dump_jobs(const config *cfg, int li, enum variant v, int rep, const workload *w,
                      const buffers *b, int64_t t0)
{
    char path[4096];
    FILE *f;
    int n = snprintf(path, sizeof path, "%s/%.2f-%s-%d.csv", cfg->dump_dir, cfg->loads[li],
                     variants[v].key, rep);

    if (n < 0 || (size_t)n >= sizeof path || !(f = fopen(path, "w"))) {
        fprintf(stderr, "rp-bench-sojourn: --dump-jobs: cannot write %s: %s\n", path,
                n < 0 || (size_t)n >= sizeof path ? "path too long" : strerror(errno));
        exit(1);
    }
    fprintf(f, "job,scheduled_ns,submitted_ns,start_ns,done_ns,worker,long,submitter,submit_ns\n");
    for (size_t i = 0; i < w->n; i++) {
        const job *j = &b->jobs[i];
        fprintf(f, "%zu,%lld,%lld,%lld,%lld,%d,%d,%d,%lld\n", i, (long long)w->offset[i],
                (long long)(w->offset[i] + b->late[i]), (long long)(j->start - t0),
                (long long)(j->done - t0), j->worker, w->is_long[i], b->by_routee[i] - 1,
                cfg->time_submits ? (long long)b->submit_ns[i] : 0LL);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "rp-bench-sojourn: --dump-jobs: cannot write %s: %s\n", path,
                strerror(errno));
        exit(1);
    }
}

/* run_one(), done again (up to cfg->retries times, after waiting for the
 * machine to calm down) when other processes took more than
 * cfg->max_foreign of the machine during the run, or a job was interrupted
 * for cfg->max_stall_us or more (the VM was frozen: measured up to 55 ms,
 * both vCPUs at once).  The kept run's t0. */
static int64_t run_guarded(double *st, const config *cfg, enum variant v, const workload *w,
                           const buffers *b, uint64_t seed, int *redo_count)
{
    for (int tries = 0;; tries++) {
        bench_cpu_snap before, after;
        int64_t t0;
        bench_cpu_snap_take(&before);
        t0 = run_one(st, cfg, v, w, b, seed);
        bench_cpu_snap_take(&after);
        st[S_FOREIGN] = bench_foreign_share(&before, &after);
        if ((st[S_FOREIGN] < cfg->max_foreign && st[S_STALLMAX] < cfg->max_stall_us) ||
            tries == cfg->retries)
            return t0;
        ++*redo_count;
        fprintf(stderr, "\n%s: others used %.0f%% of the machine, longest stall %.1f ms; "
                "waiting, then again\n", variants[v].label, 100 * st[S_FOREIGN],
                st[S_STALLMAX] / 1e3);
        bench_wait_quiet(cfg->max_foreign, 30000);
    }
}

/* One scheduler's run of repetition r, with what --dump-jobs and --json
 * keep of it. */
static void run_cell(int li, int r, enum variant v, const config *cfg, const workload *w,
                     const buffers *b, uint64_t seed)
{
    int64_t t0 = run_guarded(results[li][v][r], cfg, v, w, b, seed, &redone[li][v]);

    if (cfg->dump_dir)
        dump_jobs(cfg, li, v, r, w, b, t0);
    if (cfg->json) {
        record_stalls(&stalls[li][v][r], w, b);
        record_lates(&lates[li][v][r], &late_base_us[li][v][r], w, b);
        record_wakes(&wakes[li][v][r], w, b);
    }
    fprintf(stderr, "\rload %.2f run %d/%d %-30s p99 %8.1f us", cfg->loads[li], r + 1,
            cfg->reps, variants[v].label, results[li][v][r][S_P99]);
}

static void run_load(int li, const config *cfg, workload *w, const buffers *b)
{
    const int nbase = V_NULL + 1; /* the variants before the -b twins */

    for (int r = 0; r < cfg->reps; r++) {
        uint64_t seed = cfg->seed * 1000003u + (uint64_t)li * 1009u + (uint64_t)r;
        workload_draw(w, cfg->loads[li], seed);
        for (enum variant v = V_CENTRAL; v < nbase; v++)
            simulate(simulated[li][v][r], v, w, b, cfg->warmup, seed);
        for (enum variant v = V_RR_B; v < V_COUNT; v++) /* the same policy */
            memcpy(simulated[li][v][r], simulated[li][variant_base(v)][r],
                   sizeof simulated[li][v][r]);
        /* Rotate the order so no scheduler always runs first.  A -b twin
         * runs right beside its variant, after it in even repetitions and
         * before it in odd ones (sojourn_libs.c). */
        for (int k = 0; k < nbase; k++) {
            enum variant v = (enum variant)((k + r) % nbase), pair[2] = {v, V_COUNT};
            if (v >= V_RR && v <= V_SM_STEAL && cfg->enabled[variant_twin(v)]) {
                pair[r % 2] = v;
                pair[1 - r % 2] = variant_twin(v);
            }
            for (int i = 0; i < 2; i++)
                if (pair[i] != V_COUNT && cfg->enabled[pair[i]])
                    run_cell(li, r, pair[i], cfg, w, b, seed);
        }
    }
    fprintf(stderr, "\r%-76s\r", "");
}

int main(int argc, char **argv)
{
    config cfg;
    bench_machine mach;
    bench_calib cal;
    bench_placement start, end;
    bench_wake_result wake;
    workload w;
    buffers b;
    int64_t t0 = bench_now_ns();

    parse_args(&cfg, argc, argv);
    libs_load(&cfg);
    /* The generator sleeps with absolute deadlines; the default 50 us slack
     * would make every sleep late by that much. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    alloc_buffers(&b, &w, cfg.jobs + cfg.warmup);
    preamble(&cfg, &mach, &cal, &start, &wake);
    for (int li = 0; li < cfg.nloads; li++) {
        run_load(li, &cfg, &w, &b);
        print_load(li, &cfg);
    }
    bench_placement_take(&end, 7);
    print_verdict(&cfg, &start, &end, &wake);
    printf("\n# total time %.0f s\n", (double)(bench_now_ns() - t0) / 1e9);
    if (cfg.json)
        write_json(&cfg, &mach, &cal, &start.pp);
    free(b.jobs), free(b.queue), free(b.late), free(b.by_routee), free(b.idle_wait), free(b.scratch);
    free(b.events), free(b.submit_ns);
    for (size_t k = 0; k < ROUTEES; k++)
        free(b.ring[k]);
    free(b.order);
    free(w.offset), free(w.is_long);
    libs_unload();
    for (int li = 0; li < MAX_LOADS; li++)
        for (int v = 0; v < V_COUNT; v++)
            for (int r = 0; r < MAX_REPS; r++) {
                free(stalls[li][v][r].job), free(stalls[li][v][r].extra_us);
                free(lates[li][v][r].job), free(lates[li][v][r].extra_us);
                free(wakes[li][v][r].job), free(wakes[li][v][r].extra_us);
            }
    return 0;
}
