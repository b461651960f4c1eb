/* SPDX-License-Identifier: MIT */
/*
 * rp-tune - choose a pool size and a router for a workload, by measuring it.
 *
 * rp-tune runs one workload - built-in CPU costs from a distribution, or the
 * user's own job loaded from a shared object - on a fresh routepool pool for
 * every pool size and router of the sweep (a "cell"), prints a table of
 * throughput, sojourn percentiles, CPU utilisation, mailbox imbalance and
 * jobs stolen, and recommends the smallest pool within 5% of the best
 * throughput (meeting an optional p99 target), with the reason - but only
 * from cells whose numbers hold (enough samples, a pool that got the CPU,
 * a machine not already busy at start: tune.h).
 *
 * This file is the sweep: settings, the optional capacity run of the open
 * loop, the cells in order, the progress bar, SIGINT/SIGTERM and the
 * outputs.  The parts are listed in tune.h; docs/tuning.md is the user's
 * guide.
 *
 * Uses the public headers only, like every tool (STYLE.md).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tune.h"

#define CAPACITY_MAX_S 1.0 /* the open loop's capacity run lasts at most this */
#define CELL_OVERHEAD_S 0.05 /* pool start and drain, for the time estimate */

volatile sig_atomic_t tune_interrupted;

/* The first SIGINT (Ctrl-C) or SIGTERM (a cancelled CI job, timeout(1))
 * finishes the sweep early (partial table); SA_RESETHAND restores the
 * default action, so a second one of the same signal ends the process at
 * once. */
static void on_signal(int sig)
{
    tune_interrupted = sig;
}

static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* The 1-minute load average; RP_TUNE_LOADAVG replaces it (for tests: a
 * busy machine on demand).  < 0 when unknown. */
static double load_average(void)
{
    const char *fake = getenv("RP_TUNE_LOADAVG");
    if (fake) {
        char *end;
        errno = 0;
        const double v = strtod(fake, &end);
        if (end != fake && *end == '\0' && errno == 0 && isfinite(v) && v >= 0)
            return v;
        fprintf(stderr, "rp-tune: ignoring RP_TUNE_LOADAVG='%s': not a load average\n", fake);
    }
    double avg[1];
    return getloadavg(avg, 1) == 1 ? avg[0] : -1;
}

/* ---- progress bar: stderr, only when it is a terminal ---- */

typedef struct progress {
    bool on;
    size_t done, total;   /* cells, the capacity run included */
    double cell_s;        /* estimated seconds per cell */
    char what[64];        /* the cell under way */
} progress;

static void progress_tick(void *user, double frac)
{
    progress *p = user;
    enum { WIDTH = 28 };
    frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
    const double done = (double)p->done + frac;
    const int fill = (int)(WIDTH * done / (double)p->total);
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = '\0';
    fprintf(stderr, "\r[%s] %zu/%zu %s, about %.0f s left\033[K", bar, p->done + 1, p->total,
            p->what, ((double)p->total - done) * p->cell_s);
    fflush(stderr);
}

static void progress_clear(const progress *p)
{
    if (p->on)
        fprintf(stderr, "\r\033[K");
}

/* ---- the sweep ---- */

typedef struct sweep {
    tune_cfg *cfg;
    tune_meta meta;
    tune_drive drive;
    progress prog;
    tune_result *runs;  /* every run: round r, cell k at [r * planned + k] */
    tune_result *res;   /* per cell, the median over the rounds */
    size_t n;           /* cells in res */
} sweep;

static int run_one(sweep *s, unsigned size, const tune_router *r, const tune_drive *d,
                   tune_result *out, const char *tag)
{
    snprintf(s->prog.what, sizeof s->prog.what, "%s%u routee%s, %s", tag, size,
             size == 1 ? "" : "s", r->name);
    const int rc = tune_cell_run(out, &s->cfg->work, size, r, d);
    s->prog.done++;
    return rc;
}

/* (max - min) / median of v[0..n) (sorted), 0 when the median is 0. */
static double spread(const double *v, size_t n, double median)
{
    return median > 0 ? (v[n - 1] - v[0]) / median : 0;
}

/* Each number of one cell is the median of its runs, taken on its own (as
 * bench/ does); the cell fell behind when most of its runs did.  The
 * spread of throughput and p99 says how far the rounds disagreed. */
static void cell_median(tune_result *out, const tune_result *runs, size_t stride, size_t n)
{
    double v[TUNE_REPEAT_MAX];
    size_t behind = 0;
    *out = runs[0];
#define MEDIAN_OF(field, type)                       \
    do {                                             \
        for (size_t r_ = 0; r_ < n; r_++)            \
            v[r_] = (double)runs[r_ * stride].field; \
        out->field = (type)cli_median(v, n);         \
    } while (0)
    MEDIAN_OF(throughput, double);
    out->thr_spread = spread(v, n, out->throughput);
    MEDIAN_OF(p99_us, double);
    out->p99_spread = spread(v, n, out->p99_us);
    MEDIAN_OF(p50_us, double);
    MEDIAN_OF(p999_us, double);
    MEDIAN_OF(mean_us, double);
    MEDIAN_OF(cpu, double);
    MEDIAN_OF(cpu_demand, double);
    MEDIAN_OF(samples, uint64_t);
    MEDIAN_OF(imbalance, double);
    MEDIAN_OF(jobs, uint64_t);
    MEDIAN_OF(arrivals, uint64_t);
    MEDIAN_OF(stolen, uint64_t);
    MEDIAN_OF(unfinished, uint64_t);
#undef MEDIAN_OF
    for (size_t r = 0; r < n; r++)
        behind += runs[r * stride].overloaded;
    out->overloaded = 2 * behind > n;
}

/* Open loop with --load: measure what the largest pool can do, closed
 * loop, with the router that wastes the least (the median of --repeat
 * runs), and offer a share of it. */
static int measure_capacity(sweep *s)
{
    tune_router best;
    tune_router_parse(&best, "smallest-mailbox+steal");
    const unsigned size = s->cfg->sizes[s->cfg->nsizes - 1];
    tune_drive d = s->drive;
    d.open = false;
    d.clients = 4 * size;
    d.duration_s = s->cfg->duration_s < CAPACITY_MAX_S ? s->cfg->duration_s : CAPACITY_MAX_S;
    double thr[TUNE_REPEAT_MAX];
    for (unsigned i = 0; i < s->cfg->repeat; i++) {
        tune_result r;
        const int rc = run_one(s, size, &best, &d, &r, "capacity: ");
        if (rc != 0)
            return rc;
        thr[i] = r.throughput;
    }
    const double capacity = cli_median(thr, s->cfg->repeat);
    if (capacity <= 0) {
        fprintf(stderr, "rp-tune: the capacity run completed no job in %.2g s: "
                        "lengthen --duration or give --rate\n", d.duration_s);
        return TUNE_EXIT_RUNTIME;
    }
    s->meta.capacity = capacity;
    s->meta.rate = s->drive.rate = s->cfg->load * capacity;
    return 0;
}

static void setup(sweep *s, tune_cfg *cfg)
{
    const unsigned largest = cfg->sizes[cfg->nsizes - 1];
    const bool open = cfg->load > 0 || cfg->rate > 0;
    const double warm = cfg->warmup_s >= 0 ? cfg->warmup_s : cfg->duration_s / 10;
    s->cfg = cfg;
    s->drive = (tune_drive){.open = open, .rate = cfg->rate,
                            .clients = cfg->clients ? cfg->clients : 4 * largest,
                            .warmup_s = warm, .duration_s = cfg->duration_s, .seed = cfg->seed,
                            .cpus = cfg->cpus, .tick = progress_tick, .tick_user = &s->prog};
    s->meta = (tune_meta){.cfg = cfg, .open = open, .rate = cfg->rate,
                          .clients = s->drive.clients, .warmup_s = warm,
                          .planned = cfg->nsizes * cfg->nrouters, .loadavg = load_average()};
    s->prog = (progress){.on = !cfg->quiet && isatty(STDERR_FILENO),
                         .total = (s->meta.planned + (cfg->load > 0)) * cfg->repeat,
                         .cell_s = warm + cfg->duration_s + CELL_OVERHEAD_S};
    if (!s->prog.on)
        s->drive.tick = NULL;
}

/* One round: every cell once, in order.  *done counts the cells run. */
static int run_round(sweep *s, unsigned round, size_t *done)
{
    const tune_cfg *cfg = s->cfg;
    tune_result *out = s->runs + (size_t)round * s->meta.planned;
    char tag[32] = "";
    if (cfg->repeat > 1)
        snprintf(tag, sizeof tag, "round %u/%u: ", round + 1, cfg->repeat);
    for (*done = 0; *done < s->meta.planned; ++*done) {
        const size_t i = *done / cfg->nrouters, j = *done % cfg->nrouters;
        const int rc = run_one(s, cfg->sizes[i], &cfg->routers[j], &s->drive, &out[*done], tag);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Every round; stops at the first failure or at Ctrl-C.  Then each cell's
 * result is the median over the complete rounds - or, when the first
 * round was cut short, that round's cells. */
static int run_cells(sweep *s)
{
    int rc = 0;
    size_t done = 0;
    unsigned rounds = 0;
    while (rounds < s->cfg->repeat && (rc = run_round(s, rounds, &done)) == 0)
        rounds++;
    s->meta.rounds = rounds ? rounds : 1;
    s->meta.complete = rounds == s->cfg->repeat;
    s->n = rounds ? s->meta.planned : done;
    for (size_t k = 0; k < s->n; k++)
        cell_median(&s->res[k], &s->runs[k], s->meta.planned, s->meta.rounds);
    return rc;
}

/* Write and close every output file; false when one failed (the message
 * names it).  Every file is tried, whatever the others did. */
static bool write_outputs(sweep *s, const tune_pick *pick)
{
    tune_cfg *cfg = s->cfg;
    bool ok = true;
    if (cfg->csv.f)
        tune_write_csv(cfg->csv.f, s->res, s->n, &s->meta);
    ok = cli_output_close(&cfg->csv) && ok;
    if (cfg->json.f)
        tune_write_json(cfg->json.f, &s->meta, s->res, s->n, pick);
    ok = cli_output_close(&cfg->json) && ok;
    if (cfg->plot.f)
        tune_write_svg(cfg->plot.f, &s->meta, s->res, s->n, pick);
    ok = cli_output_close(&cfg->plot) && ok;
    return ok;
}

/* The table (unless --quiet), the warnings, the recommendation and the
 * files.  Exit status 130 after SIGINT, 143 after SIGTERM. */
static int report(sweep *s, bool interrupted)
{
    FILE *out = s->cfg->out;
    tune_pick pick;
    tune_recommend(&pick, s->res, s->n, &s->meta);
    if (interrupted)
        fprintf(out, "interrupted by %s: %zu of %zu cells measured, %u of %u rounds\n\n",
                tune_interrupted == SIGTERM ? "SIGTERM" : "SIGINT", s->n, s->meta.planned,
                s->n ? s->meta.rounds : 0, s->cfg->repeat);
    if (!s->cfg->quiet && s->n > 0) {
        tune_print_table(out, s->res, s->n, &pick, &s->meta);
        fputc('\n', out);
    }
    fflush(out);
    tune_print_warnings(stderr, s->res, s->n, &s->meta);
    fprintf(out, "%s\n", pick.sentence);
    fflush(out);
    if (!write_outputs(s, &pick))
        return TUNE_EXIT_RUNTIME;
    if (!interrupted)
        return EXIT_SUCCESS;
    return tune_interrupted == SIGTERM ? TUNE_EXIT_TERMINATED : TUNE_EXIT_INTERRUPTED;
}

static int run(tune_cfg *cfg)
{
    sweep s = {0};
    setup(&s, cfg);
    s.res = calloc(s.meta.planned, sizeof *s.res);
    s.runs = calloc(s.meta.planned * cfg->repeat, sizeof *s.runs);
    if (!s.res || !s.runs) {
        fprintf(stderr, "rp-tune: out of memory\n");
        free(s.res);
        free(s.runs);
        return TUNE_EXIT_RUNTIME;
    }
    int rc = 0;
    if (!cfg->work.plugin)
        cfg->work.iters_per_us = tune_spin_calibrate();
    else if (!tune_plugin_init(&cfg->work.plug, cfg->work.job_arg))
        rc = TUNE_EXIT_RUNTIME;
    if (rc == 0 && cfg->load > 0)
        rc = measure_capacity(&s);
    if (rc == 0 && !cfg->quiet) {
        tune_print_header(cfg->out, &s.meta);
        fflush(cfg->out);
    }
    if (rc == 0)
        rc = run_cells(&s);
    progress_clear(&s.prog);
    if (rc == 0 || rc == TUNE_EXIT_INTERRUPTED)
        rc = report(&s, rc == TUNE_EXIT_INTERRUPTED);
    free(s.res);
    free(s.runs);
    return rc;
}

int main(int argc, char *argv[])
{
    tune_cfg cfg;
    int rc = tune_args_parse(&cfg, argc, argv);
    if (rc < 0) {
        install_handlers();
        rc = run(&cfg);
    }
    tune_args_release(&cfg); /* calls the plugin's fini, once, after the last job */
    return rc;
}
