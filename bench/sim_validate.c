/* SPDX-License-Identifier: MIT */
/*
 * bench/sim_validate.c - rp-bench-sim --validate FILE: the simulator beside
 * the real pool, as measured by rp-bench-sojourn --json FILE (2 routees).
 *
 * The comparison replays the benchmark's protocol, not a steady state: for
 * every load and repetition it simulates the very workload the benchmark
 * drew (same seed formula, same generator: workload_draw() in
 * sojourn_workload.c), with the same measured and warm-up job counts and the same random-routing
 * seed, and takes the median over repetitions of each per-run statistic, as
 * the benchmark does.  At loads near 1 a 50,000-job run never reaches a
 * steady state; comparing a steady-state prediction with it would test the
 * run length, not the model.
 *
 * Inputs taken from the file: jobs, warmup, reps, seed, the loads, and the
 * job cost actually measured (median over schedulers of "service_us" at
 * that load, over the nominal 10.9 us: the slowdown; --slowdown overrides).
 * Everything else is the bench profile (sim_model_bench_profile()), fitted
 * once on a different run's dispatch delays (docs/simulator.md), never on
 * the file being validated.
 *
 * A file with pairs - rp-bench-sojourn --lib-b's <variant>-b twins, and
 * central-again, the central queue run twice - gets a table of them run by
 * run, B over A (sojourn_libs.c): raw, and adjusted for what the VM did to
 * each run, (real B / replay B) / (real A / replay A).  Every run's p99 and
 * p99.9 follow the interruptions it happened to get (1-8 ms of them in a
 * run here; two runs of one build differ by 0.2-5x); the replay of a run
 * feeds the model that run's own interruptions, lateness and late
 * wake-ups, so the adjusted ratio keeps what the model does not explain:
 * what B's build does differently.  Both sides are replayed with A's
 * per-job cost (its measured handover), so a change of that cost stays in
 * the ratio too.  Measured in the fifteenth session (perf-history.md): over
 * 27 null pairs per cell the adjusted ratio's spread (interquartile range
 * of the log) was 2-7x smaller than the raw one's for the p99 and 2-5x
 * for the p99.9.  Several files (--validate A,B,...) pool their pairs.
 *
 * The JSON is read with strstr/strtod: only the keys sojourn_output.c
 * writes, in the order it writes them.  A file that does not look like that is
 * reported (exit 1), never a crash.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "sim.h"

#define V_MAX_CELLS 64
#define V_MAX_RUNS 31
#define V_MAX_LOADS 8
#define TOLERANCE 0.20

/* What real_cell.looks counts: stolen, looks, stale looks, rescues, age
 * takes. */
#define NLOOKS 5

typedef struct real_cell {
    double load;
    sim_router router;
    char key[32]; /* the file's scheduler key */
    /* The cell this one runs again (a -b twin on another build, or the
     * central queue's second run), its index; -1 for the others. */
    int base;
    double mean, p99, service, disp_mean, disp_p99;
    /* The measured handover (rp-bench-sojourn's handover_mean_us: a job's
     * start after the previous job's end on its worker, when it was
     * queued), us; -1 in files from before the tenth session. */
    double handover;
    double ideal_mean, ideal_p99;   /* the benchmark's zero-overhead simulation */
    /* Per 1000 jobs, medians over the runs: stolen, the rescue's looks,
     * those that only watched, rescues, age takes, measured (NaN
     * in files from before the sixteenth session) and replayed. */
    double looks[NLOOKS], sim_looks[NLOOKS];
    double run_p99[V_MAX_RUNS], run_mean[V_MAX_RUNS], run_p999[V_MAX_RUNS];
    /* The replay of each run (simulate_cell). */
    double sim_run[V_MAX_RUNS][3]; /* mean, p99, p99.9 */
    /* The run's measured interruptions ("stalls"), replayed as extra job
     * cost; and their share of the measured jobs' mean service time, us. */
    sim_extra *run_stalls[V_MAX_RUNS];
    size_t run_nstalls[V_MAX_RUNS];
    double run_stall_us[V_MAX_RUNS];
    /* The run's late submissions ("late"), and the others' mean lateness. */
    sim_extra *run_late[V_MAX_RUNS];
    size_t run_nlate[V_MAX_RUNS];
    double run_late_base_us[V_MAX_RUNS];
    /* The run's late wake-ups of idle routees ("wakes"). */
    sim_extra *run_wakes[V_MAX_RUNS];
    size_t run_nwakes[V_MAX_RUNS];
    int nruns;
} real_cell;

typedef struct real_file {
    uint64_t jobs, warmup, seed;
    int reps;
    double loads[V_MAX_LOADS];
    int nloads;
    real_cell cells[V_MAX_CELLS];
    int ncells;
} real_file;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f) {
        fprintf(stderr, "rp-bench-sim: cannot read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && n < (64l << 20) &&
        fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = '\0';
        }
    }
    fclose(f);
    if (!buf)
        fprintf(stderr, "rp-bench-sim: %s: empty, too large or unreadable\n", path);
    return buf;
}

/* The number after "key": in s (before end, if end is not NULL). */
static bool num_after(const char *s, const char *end, const char *key, double *out)
{
    char pat[64];
    const char *p;
    char *stop;

    snprintf(pat, sizeof pat, "\"%s\":", key);
    if (!(p = strstr(s, pat)) || (end && p >= end))
        return false;
    *out = strtod(p + strlen(pat), &stop);
    return stop != p + strlen(pat) && isfinite(*out);
}

/* The router of a scheduler key; *again: the key names a cell that runs
 * another one again (<key>-b, central-again), whose key goes to *of. */
static int router_of(const char *key, bool *again, char *of, size_t oflen)
{
    static const char *const keys[] = {"central", "rr", "rr-steal", "random", "sm", "sm-steal"};
    static const sim_router rs[] = {SR_CENTRAL, SR_RR, SR_RR_STEAL, SR_RANDOM, SR_SM, SR_SM_STEAL};
    size_t len = strlen(key);

    *again = false;
    if (!strcmp(key, "central-again"))
        *again = true, len = strlen("central");
    else if (len > 2 && !strcmp(key + len - 2, "-b"))
        *again = true, len -= 2;
    snprintf(of, oflen, "%.*s", (int)len, key);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(of, keys[i]))
            return (int)rs[i];
    return -1;
}

/*
 * A run's [[job, us], ...] list under key (between p and end) into
 * *list (*n entries), sorted by job as written; absent (older files): none.
 * *measured_us: the sum over jobs from warmup on.
 */
static bool parse_pairs(const char *key, sim_extra **list, size_t *n, double *measured_us,
                        const char *p, const char *end, uint64_t warmup)
{
    char pat[48];
    const char *q;
    size_t cap = 0;

    snprintf(pat, sizeof pat, "\"%s\": [", key);
    q = strstr(p, pat);
    *list = NULL;
    *n = 0;
    *measured_us = 0;
    if (!q || q >= end)
        return true;
    q += strlen(pat);
    while (q < end && *q == '[') {
        char *stop;
        double job = strtod(q + 1, &stop), us;

        if (stop == q + 1 || *stop != ',')
            return false;
        us = strtod(stop + 1, &stop);
        if (*stop != ']' || !isfinite(job) || job < 0 || !isfinite(us) || us < 0 ||
            (*n && (uint64_t)job <= (*list)[*n - 1].job))
            return false;
        if (*n == cap) {
            sim_extra *grown = realloc(*list, (cap = cap ? 2 * cap : 256) * sizeof *grown);
            if (!grown)
                return false;
            *list = grown;
        }
        (*list)[(*n)++] = (sim_extra){(uint64_t)job, (int64_t)(us * 1e3)};
        if ((uint64_t)job >= warmup)
            *measured_us += us;
        q = stop + 1;
        if (*q == ',')
            q += 2;
    }
    return *q == ']';
}

/* A run's "stalls", "late" and "wakes" lists into c's run r.  warmup,
 * jobs: for run_stall_us, the stalls' share of a measured job. */
static bool parse_lists(real_cell *c, int r, const char *p, const char *end, uint64_t warmup,
                        uint64_t jobs)
{
    double stall_us, late_us, wake_us;

    c->run_late_base_us[r] = 0;
    if (!parse_pairs("stalls", &c->run_stalls[r], &c->run_nstalls[r], &stall_us, p, end,
                     warmup) ||
        !parse_pairs("late", &c->run_late[r], &c->run_nlate[r], &late_us, p, end, warmup) ||
        !parse_pairs("wakes", &c->run_wakes[r], &c->run_nwakes[r], &wake_us, p, end, warmup))
        return false;
    c->run_stall_us[r] = jobs ? stall_us / (double)jobs : 0;
    if (c->run_late[r] && !num_after(p, end, "late_base_us", &c->run_late_base_us[r]))
        return false;
    return true;
}

/* The runs array of one cell: per-run mean and p99, and stalls. */
static bool parse_runs(real_cell *c, const char *runs, const char *end, uint64_t warmup,
                       uint64_t jobs)
{
    const char *p = runs;

    c->nruns = 0;
    while (c->nruns < V_MAX_RUNS && (p = strstr(p, "{\"mean_us\":")) && p < end) {
        const char *next = strchr(p + 1, '}');
        if (!next || !num_after(p, next, "mean_us", &c->run_mean[c->nruns]) ||
            !num_after(p, next, "p99_us", &c->run_p99[c->nruns]))
            break;
        if (!num_after(p, next, "p999_us", &c->run_p999[c->nruns]))
            c->run_p999[c->nruns] = NAN;
        if (!parse_lists(c, c->nruns, p, next, warmup, jobs))
            return false;
        c->nruns++;
        p = next;
    }
    return true;
}

/* One cell, s at its {"load": and end at the next one (or the end).
 * *skip: a scheduler the simulator does not model (the oneTBB peer). */
static bool parse_cell(real_cell *c, const char *s, const char *end, bool *skip,
                       uint64_t warmup, uint64_t jobs)
{
    const char *med = strstr(s, "\"median\":"), *sim = strstr(s, "\"simulated_median\":");
    const char *runs = strstr(s, "\"runs\":"), *sched = strstr(s, "\"scheduler\":");
    char key[32], of[32];
    bool again;
    int r;

    *skip = false;
    if (!med || !sim || !runs || !sched || runs > end || !num_after(s, end, "load", &c->load) ||
        sscanf(sched, "\"scheduler\": \"%31[^\"]\"", key) != 1)
        return false;
    if ((r = router_of(key, &again, of, sizeof of)) < 0) {
        *skip = !strcmp(key, "tbb");
        return *skip;
    }
    c->router = (sim_router)r;
    snprintf(c->key, sizeof c->key, "%s", key);
    c->base = again ? -2 : -1; /* -2: parse_file() finds it */
    if (!num_after(med, sim, "mean_us", &c->mean) || !num_after(med, sim, "p99_us", &c->p99) ||
        !num_after(med, sim, "service_us", &c->service) ||
        !num_after(med, sim, "dispatch_mean_us", &c->disp_mean) ||
        !num_after(med, sim, "dispatch_p99_us", &c->disp_p99) ||
        !num_after(sim, runs, "mean_us", &c->ideal_mean) ||
        !num_after(sim, runs, "p99_us", &c->ideal_p99))
        return false;
    static const char *const look_keys[NLOOKS] = {"stolen_per_1000", "looks_per_1000",
                                             "stale_looks_per_1000", "rescues_per_1000",
                                             "age_takes_per_1000"};
    for (int k = 0; k < NLOOKS; k++)
        if (!num_after(med, sim, look_keys[k], &c->looks[k]) || c->looks[k] < 0)
            c->looks[k] = NAN;
    if (!num_after(med, sim, "handover_mean_us", &c->handover) || !(c->handover >= 0) ||
        c->handover > 1000)
        c->handover = -1; /* an older file, or not a number we can use */
    if (!parse_runs(c, runs, end, warmup, jobs))
        return false;
    return c->nruns > 0 && c->load > 0 && c->load < 1;
}

static void add_load(real_file *f, double load)
{
    for (int i = 0; i < f->nloads; i++)
        if (fabs(f->loads[i] - load) < 1e-9)
            return;
    if (f->nloads < V_MAX_LOADS)
        f->loads[f->nloads++] = load;
}

static int parse_file(real_file *f, const char *text, const char *path)
{
    double jobs, warm, reps, seed;
    const char *p = strstr(text, "\"cells\":");

    memset(f, 0, sizeof *f);
    /* write_json() ends the cells array and the object so: a file without
     * it was cut short, and its last cell would be read in part. */
    if (p && !strstr(p, "\n  ]\n}")) {
        fprintf(stderr, "rp-bench-sim: %s is cut short (no end of \"cells\")\n", path);
        return -1;
    }
    if (!strstr(text, "\"benchmark\": \"sojourn\"") || !p ||
        !num_after(text, p, "jobs", &jobs) || !num_after(text, p, "warmup", &warm) ||
        !num_after(text, p, "reps", &reps) || !num_after(text, p, "seed", &seed) ||
        !strstr(text, "\"seed\":") ||
        jobs < 1 || jobs > 1e8 || warm < 0 || warm > 1e8 || reps < 1 || reps > V_MAX_RUNS ||
        seed < 0 || seed > 1.8e19) {
        fprintf(stderr, "rp-bench-sim: %s is not rp-bench-sojourn --json output\n", path);
        return -1;
    }
    f->jobs = (uint64_t)jobs, f->warmup = (uint64_t)warm, f->reps = (int)reps;
    f->seed = strtoull(strstr(text, "\"seed\":") + 7, NULL, 10); /* exact above 2^53 */
    while ((p = strstr(p, "{\"load\":")) && f->ncells < V_MAX_CELLS) {
        const char *next = strstr(p + 1, "{\"load\":");
        const char *end = next ? next : p + strlen(p);
        bool skip;
        if (!parse_cell(&f->cells[f->ncells], p, end, &skip, f->warmup, f->jobs)) {
            fprintf(stderr, "rp-bench-sim: %s: cannot read cell %d\n", path, f->ncells + 1);
            return -1;
        }
        if (!skip)
            add_load(f, f->cells[f->ncells++].load);
        p = end;
    }
    if (f->ncells == 0) {
        fprintf(stderr, "rp-bench-sim: %s: no cells\n", path);
        return -1;
    }
    for (int i = 0; i < f->ncells; i++) {
        real_cell *c = &f->cells[i];
        char of[32];
        bool again;
        if (c->base != -2)
            continue;
        router_of(c->key, &again, of, sizeof of);
        for (int j = 0; j < f->ncells && c->base < 0; j++)
            if (f->cells[j].base == -1 && fabs(f->cells[j].load - c->load) < 1e-9 &&
                !strcmp(f->cells[j].key, of) && f->cells[j].nruns == c->nruns)
                c->base = j;
        if (c->base < 0) {
            fprintf(stderr, "rp-bench-sim: %s: %s at load %.2f runs again a cell the file does "
                    "not have (%s with as many runs)\n", path, c->key, c->load, of);
            return -1;
        }
    }
    return 0;
}

/* Job cost multiplier at one load: the median measured service time over
 * the schedulers, over the nominal mean.  stalls: the interruptions are
 * replayed job by job, so their share comes off the service time. */
static double slowdown_at(const real_file *f, double load, bool stalls)
{
    double v[V_MAX_CELLS];
    size_t n = 0;

    for (int i = 0; i < f->ncells; i++) {
        const real_cell *c = &f->cells[i];
        double svc = c->service;

        if (fabs(c->load - load) > 1e-9 || svc <= 0 || c->base >= 0)
            continue;
        if (stalls) {
            double share[V_MAX_RUNS]; /* bench_median sorts: a copy */
            memcpy(share, c->run_stall_us, sizeof share[0] * (size_t)c->nruns);
            svc -= bench_median(share, (size_t)c->nruns);
        }
        v[n++] = svc * 1e3 / SIM_MEAN_NS;
    }
    return n ? bench_median(v, n) : 1.0;
}

/* What a run replays: how many events of each list, and the mean
 * lateness of the other submissions. */
enum run_figure { F_STALLS, F_LATE, F_WAKES, F_LATE_BASE };

static double run_figure(const real_cell *c, int r, enum run_figure k)
{
    switch (k) {
    case F_LATE:
        return (double)c->run_nlate[r];
    case F_WAKES:
        return (double)c->run_nwakes[r];
    case F_LATE_BASE:
        return c->run_late_base_us[r];
    default:
        return (double)c->run_nstalls[r];
    }
}

/* One figure, median over every run of the file. */
static double median_over_runs(const real_file *f, enum run_figure k)
{
    static double v[V_MAX_CELLS * V_MAX_RUNS];
    size_t n = 0;

    for (int i = 0; i < f->ncells; i++)
        for (int r = 0; r < f->cells[i].nruns; r++)
            v[n++] = run_figure(&f->cells[i], r, k);
    return n ? bench_median(v, n) : 0;
}

/* What one cell's simulation gives: medians over the reps, as the
 * benchmark reports them, and the paired figures: the median over runs of
 * each run's simulation over that run's measurement (the replay feeds run
 * r's own interruptions, lateness and wake-ups to its simulation, so the
 * pair shares the machine's state; the two medians need not). */
typedef struct sim_figures {
    double mean, p99, disp;
    double paired_mean, paired_p99;
} sim_figures;

/* The benchmark's protocol: reps runs of its workloads, medians. */
static int simulate_cell(sim_figures *out, const real_file *f, int li, real_cell *rc,
                         const sim_model *m, sim_replay replay)
{
    double means[V_MAX_RUNS], p99s[V_MAX_RUNS], disps[V_MAX_RUNS];
    double rmean[V_MAX_RUNS], rp99[V_MAX_RUNS];
    double looks[NLOOKS][V_MAX_RUNS];
    size_t npaired = 0;

    for (int rep = 0; rep < f->reps; rep++) {
        sim_cell c = {.k = 2, .load = f->loads[li], .router = rc->router, .cost = SC_BIMODAL,
                      .jobs = f->jobs, .warmup = f->warmup, .exact_seed = true,
                      .seed = f->seed * 1000003u + (uint64_t)li * 1009u + (uint64_t)rep};
        if (replay.stalls && rep < rc->nruns) {
            c.extra = rc->run_stalls[rep];
            c.nextra = rc->run_nstalls[rep];
        }
        if (replay.late && rep < rc->nruns) {
            c.late = rc->run_late[rep];
            c.nlate = rc->run_nlate[rep];
            c.late_base_ns = (int64_t)(rc->run_late_base_us[rep] * 1e3);
        }
        if (replay.wakes && rep < rc->nruns) {
            c.wakes = rc->run_wakes[rep];
            c.nwakes = rc->run_nwakes[rep];
        }
        sim_result res;
        if (sim_run_cell(&res, &c, m) < 0)
            return -1;
        means[rep] = res.mean;
        p99s[rep] = res.p99;
        if (rep < V_MAX_RUNS) {
            rc->sim_run[rep][0] = res.mean;
            rc->sim_run[rep][1] = res.p99;
            rc->sim_run[rep][2] = res.p999;
        }
        disps[rep] = res.disp_mean;
        looks[0][rep] = res.stolen_per_1000;
        looks[1][rep] = res.looks_per_1000;
        looks[2][rep] = res.stale_per_1000;
        looks[3][rep] = res.rescues_per_1000;
        looks[4][rep] = res.age_takes_per_1000;
        if (rep < rc->nruns && rc->run_mean[rep] > 0 && rc->run_p99[rep] > 0) {
            rmean[npaired] = res.mean / rc->run_mean[rep];
            rp99[npaired++] = res.p99 / rc->run_p99[rep];
        }
    }
    out->mean = bench_median(means, (size_t)f->reps);
    out->p99 = bench_median(p99s, (size_t)f->reps);
    out->disp = bench_median(disps, (size_t)f->reps);
    for (int k = 0; k < NLOOKS; k++)
        rc->sim_looks[k] = bench_median(looks[k], (size_t)f->reps);
    out->paired_mean = npaired ? bench_median(rmean, npaired) : NAN;
    out->paired_p99 = npaired ? bench_median(rp99, npaired) : NAN;
    return 0;
}

static const char *verdict(double ratio, int *fails)
{
    bool ok = fabs(ratio - 1) <= TOLERANCE;

    *fails += !ok;
    return ok ? "PASS" : "FAIL";
}

/* fails[0..1]: the medians' verdicts; fails[2..3]: the paired ones. */
enum { FAIL_MEAN, FAIL_P99, FAIL_PAIRED_MEAN, FAIL_PAIRED_P99, NFAILS };

/* One row; returns -1 when the simulation ran out of memory. */
static int validate_cell(const real_file *f, real_cell *c, int li, const sim_model *base,
                         bool slowdown_given, sim_replay replay, int *fails)
{
    sim_model m = *base;
    sim_figures s;
    double lo = c->run_p99[0], hi = c->run_p99[0];
    /* A cell run again is replayed with its first cell's per-job cost. */
    double handover = c->base >= 0 ? f->cells[c->base].handover : c->handover;

    if (!slowdown_given)
        m.slowdown = slowdown_at(f, c->load, replay.stalls);
    if (replay.handover && handover >= 0) {
        if (c->router == SR_CENTRAL)
            m.central_dispatch_ns = (int64_t)(handover * 1e3 + 0.5);
        else
            m.dispatch_ns = (int64_t)(handover * 1e3 + 0.5);
    }
    if (simulate_cell(&s, f, li, c, &m, replay) < 0)
        return -1;
    for (int i = 1; i < c->nruns; i++) {
        lo = c->run_p99[i] < lo ? c->run_p99[i] : lo;
        hi = c->run_p99[i] > hi ? c->run_p99[i] : hi;
    }
    printf("| %.2f | %s | %.1f | %.1f | %.2f | %s | %.1f | %.1f | %.0f-%.0f%s | %.2f | %s "
           "| %.1f | %.1f / %.1f | %.2f %s / %.2f %s |\n", c->load, c->key,
           s.mean, c->mean, s.mean / c->mean, verdict(s.mean / c->mean, &fails[FAIL_MEAN]), s.p99,
           c->p99, lo, hi, hi > (1 + TOLERANCE) * lo ? " noisy" : "", s.p99 / c->p99,
           verdict(s.p99 / c->p99, &fails[FAIL_P99]), c->ideal_p99, s.disp, c->disp_mean,
           s.paired_mean, verdict(s.paired_mean, &fails[FAIL_PAIRED_MEAN]), s.paired_p99,
           verdict(s.paired_p99, &fails[FAIL_PAIRED_P99]));
    fflush(stdout);
    return 0;
}

/* The pools with stealing: what their routees counted against what the
 * replays of the same runs count (a lower count of rescues measured than
 * replayed says the pool's looks see less than the model's). */
static void print_looks(const real_file *f)
{
    int n = 0;

    for (int i = 0; i < f->ncells; i++) {
        const real_cell *c = &f->cells[i];
        if ((c->router != SR_RR_STEAL && c->router != SR_SM_STEAL) || !isfinite(c->looks[1]))
            continue;
        if (!n++)
            printf("\nPer 1000 jobs, measured / replayed (medians over the runs): stolen, "
                   "the rescue's looks, of them those that only watched (more than 4 "
                   "RP__RESCUE_NS after the last), rescues, age takes:\n\n"
                   "| load | router | stolen | looks | watching only | rescues | age takes |\n"
                   "|---:|---|---:|---:|---:|---:|---:|\n");
        printf("| %.2f | %s |", c->load, c->key);
        for (int k = 0; k < NLOOKS; k++)
            printf(" %.1f / %.1f |", c->looks[k], c->sim_looks[k]);
        printf("\n");
    }
}

/* ---- pairs: a cell run again against the cell it repeats ---- */

#define V_MAX_PAIRS 4096
enum { PQ_P99, PQ_P999, PQ_N };

/* The pairs of one (load, key) over every file of the --validate list. */
typedef struct pair_pool {
    double load;
    char key[32];
    size_t n;
    double raw[PQ_N][V_MAX_PAIRS], adj[PQ_N][V_MAX_PAIRS];
} pair_pool;

static pair_pool pair_pools[V_MAX_CELLS];
static int n_pair_pools, pair_files;

static pair_pool *pool_for(double load, const char *key)
{
    for (int i = 0; i < n_pair_pools; i++)
        if (fabs(pair_pools[i].load - load) < 1e-9 && !strcmp(pair_pools[i].key, key))
            return &pair_pools[i];
    if (n_pair_pools == V_MAX_CELLS)
        return NULL;
    pair_pools[n_pair_pools] = (pair_pool){.load = load};
    snprintf(pair_pools[n_pair_pools].key, sizeof pair_pools[n_pair_pools].key, "%s", key);
    return &pair_pools[n_pair_pools++];
}

/* Append cell b's runs against its base a's to q (from q->n on). */
static void add_pairs(pair_pool *q, const real_cell *b, const real_cell *a)
{
    for (int r = 0; r < b->nruns && q->n < V_MAX_PAIRS; r++) {
        const double ra[PQ_N] = {a->run_p99[r], a->run_p999[r]};
        const double rb[PQ_N] = {b->run_p99[r], b->run_p999[r]};
        bool ok = true;
        for (int k = 0; k < PQ_N; k++)
            ok = ok && ra[k] > 0 && rb[k] > 0 && a->sim_run[r][1 + k] > 0 &&
                 b->sim_run[r][1 + k] > 0; /* (false for NaN: older files have no p99.9) */
        if (!ok)
            continue;
        for (int k = 0; k < PQ_N; k++) {
            q->raw[k][q->n] = rb[k] / ra[k];
            q->adj[k][q->n] = (rb[k] / b->sim_run[r][1 + k]) / (ra[k] / a->sim_run[r][1 + k]);
        }
        q->n++;
    }
}

/* The p-quantile of v[0..n) (sorted in place). */
static double quantile(double *v, size_t n, double p)
{
    bench_median(v, n); /* sorts */
    return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

static void print_pair_row(const pair_pool *q)
{
    double v[V_MAX_PAIRS];
    printf("| %.2f | %s | %zu |", q->load, q->key, q->n);
    for (int k = 0; k < PQ_N; k++) {
        size_t lower = 0;
        memcpy(v, q->raw[k], q->n * sizeof v[0]);
        printf(" %.3fx |", bench_median(v, q->n));
        memcpy(v, q->adj[k], q->n * sizeof v[0]);
        for (size_t i = 0; i < q->n; i++)
            lower += v[i] < 1;
        printf(" **%.3fx** (%.2f-%.2f), %zu lower |", quantile(v, q->n, 0.5),
               quantile(v, q->n, 0.25), quantile(v, q->n, 0.75), lower);
    }
    printf("\n");
}

static void print_pair_head(const char *what)
{
    printf("\n%s: each run of a cell run again (a -b twin, on another build; "
           "central-again, the central queue's second run: the null) over the same "
           "repetition's run of the cell it repeats.  raw: real over real; adjusted: "
           "(real / replay) over (real / replay), each run's replay fed its own "
           "interruptions, lateness and late wake-ups and the first cell's per-job cost.  "
           "Medians of the runs' ratios; adjusted also its middle half (25-75 %%) and how "
           "many runs were lower.\n\n", what);
    printf("| load | cell | runs | p99 raw | p99 adjusted | p99.9 raw | p99.9 adjusted |\n"
           "|---:|---|---:|---:|---|---:|---|\n");
}

/* This file's pairs (printed) into the pools. */
static void file_pairs(const real_file *f)
{
    bool any = false;

    for (int i = 0; i < f->ncells; i++) {
        const real_cell *c = &f->cells[i];
        static pair_pool one; /* 128 KiB: not on the stack */
        pair_pool *q;
        if (c->base < 0)
            continue;
        one.load = c->load;
        one.n = 0;
        if (!any)
            print_pair_head("Pairs in this file");
        any = true;
        snprintf(one.key, sizeof one.key, "%s", c->key);
        add_pairs(&one, c, &f->cells[c->base]);
        if (one.n)
            print_pair_row(&one);
        if ((q = pool_for(c->load, c->key)))
            add_pairs(q, c, &f->cells[c->base]);
    }
    pair_files += any;
}

void sim_validate_pooled(void)
{
    char what[80];

    if (pair_files < 2)
        return;
    snprintf(what, sizeof what, "Pairs of the %d files pooled", pair_files);
    print_pair_head(what);
    for (int i = 0; i < n_pair_pools; i++)
        if (pair_pools[i].n)
            print_pair_row(&pair_pools[i]);
}

static void free_lists(real_file *f)
{
    for (int i = 0; i < V_MAX_CELLS; i++)
        for (int r = 0; r < V_MAX_RUNS; r++) {
            free(f->cells[i].run_stalls[r]);
            free(f->cells[i].run_late[r]);
            free(f->cells[i].run_wakes[r]);
            f->cells[i].run_stalls[r] = NULL;
            f->cells[i].run_late[r] = NULL;
            f->cells[i].run_wakes[r] = NULL;
        }
}

int sim_validate(const char *path, const sim_model *m, bool slowdown_given, bool strict,
                 sim_replay replay)
{
    char *text = slurp(path);
    static real_file f;
    int fails[NFAILS] = {0}, rc = 0;

    if (!text || parse_file(&f, text, path) < 0) {
        free_lists(&f);
        free(text);
        return 2; /* bad input, as a bad command line */
    }
    bool had_stalls = strstr(text, "\"stalls\":") != NULL, had_late = strstr(text, "\"late\":") != NULL;
    bool had_wakes = strstr(text, "\"wakes\":") != NULL;
    bool had_handover = false;

    for (int i = 0; i < f.ncells; i++)
        had_handover |= f.cells[i].handover >= 0;
    /* Files from before these lists were written have none. */
    replay.stalls = replay.stalls && had_stalls;
    replay.late = replay.late && had_late;
    replay.wakes = replay.wakes && had_wakes;
    replay.handover = replay.handover && had_handover;
    printf("# rp-bench-sim --validate %s: %d cells, k=2, %llu jobs (+%llu warm-up) x %d runs, "
           "seed %llu, replayed run by run\n", path, f.ncells, (unsigned long long)f.jobs,
           (unsigned long long)f.warmup, f.reps, (unsigned long long)f.seed);
    printf("# model: dispatch %lld ns, wake-up %lld ns + exp(%lld ns), spin %lld ns, steal %lld ns;"
           " central queue: wake-up %s, dispatch %lld ns\n", (long long)m->dispatch_ns,
           (long long)m->wake_ns, (long long)m->wake_tail_ns, (long long)m->spin_ns,
           (long long)m->steal_ns, m->central_overhead ? "yes" : "no",
           (long long)(m->central_overhead ? m->central_dispatch_ns : 0));
    if (replay.stalls)
        printf("# interruptions: replayed, each job's measured excess over 20 us added to its cost "
               "(median %.0f jobs per run)\n", median_over_runs(&f, F_STALLS));
    else
        printf("# interruptions: not replayed (%s)\n", had_stalls ? "--stalls off" : "the file has none");
    if (replay.late)
        printf("# lateness: replayed, jobs submitted more than 5 us late as late as measured "
               "(median %.0f jobs per run), the others at their mean (median %.2f us)\n",
               median_over_runs(&f, F_LATE), median_over_runs(&f, F_LATE_BASE));
    else
        printf("# lateness: not replayed (%s)\n", had_late ? "--late off" : "the file has none");
    if (replay.wakes)
        printf("# late wake-ups: replayed, a job that waited more than 20 us for its idle routee "
               "waits at least that long when its simulated routee sleeps (median %.0f jobs per "
               "run)\n", median_over_runs(&f, F_WAKES));
    else
        printf("# late wake-ups: not replayed (%s)\n", had_wakes ? "--wakes off" : "the file has none");
    if (replay.handover) {
        printf("# per-job cost: replayed, each scheduler's measured handover (a queued job's start "
               "after its worker's previous job) replaces the dispatch above, %s\n",
               m->central_overhead ? "the central queue's too"
                                   : "not the central queue's (--central-overhead 0: ideal)");
        for (int li = 0; li < f.nloads; li++) {
            printf("#   load %.2f, ns:", f.loads[li]);
            for (int i = 0, n = 0; i < f.ncells; i++) {
                const real_cell *c = &f.cells[i];
                if (fabs(c->load - f.loads[li]) > 1e-9)
                    continue;
                printf("%s %s ", n++ ? "," : "", c->key);
                if (c->handover >= 0)
                    printf("%.0f", c->handover * 1e3);
                else /* unreadable in this cell: the profile's */
                    printf("%lld (the profile's; none readable)",
                           (long long)(c->router == SR_CENTRAL ? m->central_dispatch_ns
                                                               : m->dispatch_ns));
            }
            printf("\n");
        }
    } else
        printf("# per-job cost: the profile's (%s)\n",
               had_handover ? "--handover off, or a --dispatch-ns / --central-dispatch-ns given"
                            : "the file has no handovers");
    for (int li = 0; li < f.nloads; li++)
        printf("# load %.2f: slowdown %.3f (%s)\n", f.loads[li],
               slowdown_given ? m->slowdown : slowdown_at(&f, f.loads[li], replay.stalls),
               slowdown_given ? "--slowdown"
               : replay.stalls ? "measured service time without the replayed interruptions / 10.9 us"
                        : "measured service time / 10.9 us");
    printf("\n| load | router | sim mean us | real mean us | sim/real | mean +-20%% | sim p99 us "
           "| real p99 us | real p99 over runs | sim/real | p99 +-20%% | zero-overhead p99 "
           "| dispatch mean us, sim / real | paired sim/real, mean / p99 |\n"
           "|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---|\n");
    for (int i = 0; i < f.ncells && rc == 0; i++) {
        int li = 0;
        while (li < f.nloads && fabs(f.loads[li] - f.cells[i].load) > 1e-9)
            li++;
        fprintf(stderr, "\rvalidating %d/%d", i + 1, f.ncells);
        rc = validate_cell(&f, &f.cells[i], li, m, slowdown_given, replay, fails);
    }
    fprintf(stderr, "\r%-30s\r", "");
    printf("\n# %d of %d means and %d of %d p99s within 20%% of the measurement\n",
           f.ncells - fails[FAIL_MEAN], f.ncells, f.ncells - fails[FAIL_P99], f.ncells);
    printf("# paired, run by run (median of each run's sim/real): %d of %d means and %d of %d "
           "p99s within 20%%\n", f.ncells - fails[FAIL_PAIRED_MEAN], f.ncells,
           f.ncells - fails[FAIL_PAIRED_P99], f.ncells);
    if (rc == 0)
        print_looks(&f);
    if (rc == 0)
        file_pairs(&f);
    free_lists(&f);
    free(text);
    if (rc < 0)
        return 1;
    return strict && (fails[FAIL_MEAN] || fails[FAIL_P99]) ? 1 : 0;
}
