/* SPDX-License-Identifier: MIT */
/*
 * tools/tune.h - the parts of rp-tune, and what they share.
 *
 * rp-tune measures one workload on routepool pools of several sizes and
 * routers ("cells") and recommends one.  The files split it by concept:
 *
 *   rp-tune.c       main: the sweep over cells, Ctrl-C, the progress bar
 *   tune_args.c     the command line (getopt_long) and --help
 *   tune_work.c     the job: built-in cost distributions on a calibrated
 *                   spin loop, or a user's job loaded from a .so (dlopen)
 *   tune_cell.c     one cell: a fresh pool, closed- or open-loop driving,
 *                   sojourn histograms, depth sampling, CPU time, steals
 *   tune_report.c   the table, the recommendation, --csv and --json
 *   tune_plot.c     --plot: the SVG
 *   cli.c           what the tools share: option, number and list
 *                   parsing, output files (- is stdout), JSON strings
 *
 * Like every tool it uses the public routepool headers only (STYLE.md).
 */
#ifndef RP_TOOLS_TUNE_H
#define RP_TOOLS_TUNE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "routepool/routepool.h"

/* Exit codes, listed in --help. */
enum {
    TUNE_EXIT_RUNTIME = 1,       /* a routepool call, the plugin or an output file failed */
    TUNE_EXIT_USAGE = 2,         /* bad command line */
    TUNE_EXIT_INTERRUPTED = 130, /* SIGINT (Ctrl-C): the partial results were printed */
    TUNE_EXIT_TERMINATED = 143   /* SIGTERM: the same */
};

#define TUNE_SIZES_MAX 64u
#define TUNE_ROUTERS_MAX 8u
#define TUNE_SPEC_MAX 128u   /* longest --cost text kept for display */
#define TUNE_REPEAT_MAX 25u

/* ---- what makes a measurement valid (docs/tuning.md, "When rp-tune
 * recommends nothing") ---- */

/** Sojourn samples a percentile q needs before it is shown or used: ten
 *  beyond it (p50 20, p99 1,000, p99.9 10,000), so it is not one job's
 *  luck.  A cell without enough for p99 is never recommended. */
#define TUNE_TAIL_SAMPLES 10.0
unsigned tune_min_samples(double q);
/** A cell whose pool got less than this share of the CPU time its
 *  built-in jobs asked for was starved (the machine was busy with other
 *  work, or the jobs never ran): it is never recommended. */
#define TUNE_STARVED 0.25

/* ---- the job ---- */

/** Built-in job cost distributions (--cost), parameters in microseconds. */
typedef enum tune_cost_kind {
    COST_FIXED,    /* uniform:US       every job costs a */
    COST_RANGE,    /* uniform:LO,HI    uniform in [a, b] */
    COST_EXP,      /* exp:US           exponential, mean a */
    COST_BIMODAL,  /* bimodal:A,B,P    b with probability p, a otherwise */
    COST_PARETO    /* pareto:US,ALPHA  Pareto, minimum a, shape p, capped */
} tune_cost_kind;

typedef struct tune_cost {
    tune_cost_kind kind;
    double a, b, p;
    char spec[TUNE_SPEC_MAX];
} tune_cost;

/** Draws are capped at this many times the Pareto minimum. */
#define TUNE_PARETO_CAP 10000.0

/** The plugin ABI (docs/tuning.md): SYMBOL, and optional SYMBOL_init and
 *  SYMBOL_fini. */
typedef void *(*tune_init_fn)(const char *arg);
typedef void (*tune_fini_fn)(void *state);

typedef struct tune_plugin {
    void *handle;        /* dlopen() handle */
    rp_job_fn fn;
    tune_init_fn init;   /* NULL when the .so has no SYMBOL_init */
    tune_fini_fn fini;   /* NULL when the .so has no SYMBOL_fini */
    void *state;         /* what every job gets as arg */
    bool initialised;
} tune_plugin;

/** What one job does: spin for a drawn cost, or call the user's job. */
typedef struct tune_work {
    bool plugin;
    tune_cost cost;
    double iters_per_us;   /* spin loop calibration (built-in costs) */
    tune_plugin plug;
    const char *job_spec;  /* --job text, for display */
    const char *job_arg;   /* --job-arg, NULL when not given */
} tune_work;

/** Parse --cost SPEC; false (and a message naming --cost) when invalid. */
bool tune_cost_parse(tune_cost *out, const char *spec);
/** Mean cost in microseconds (of the capped distribution for Pareto). */
double tune_cost_mean_us(const tune_cost *c);
/** One cost in microseconds from a uniform draw u in (0, 1]. */
double tune_cost_draw_us(const tune_cost *c, double u);
/** Spin iterations per microsecond on this machine (best of several). */
double tune_spin_calibrate(void);
/** Burn the CPU for iters iterations; returns a value to sink. */
uint64_t tune_spin(uint64_t iters);
/** Load --job FILE:SYMBOL; false (and a message naming --job) on failure. */
bool tune_plugin_load(tune_plugin *p, const char *spec);
/** Call SYMBOL_init once; false (and a message) when it returns NULL. */
bool tune_plugin_init(tune_plugin *p, const char *arg);
/** Call SYMBOL_fini once if init ran, then dlclose. */
void tune_plugin_unload(tune_plugin *p);
/** Run one job: ctx from routepool, rng the job's own random stream. */
void tune_work_run(const tune_work *w, rp_job_ctx *ctx, uint64_t rng);

/** splitmix64: seeded mixer; streams are derived with it (no shared state). */
uint64_t tune_mix64(uint64_t x);
/** A uniform double in (0, 1] from 64 random bits. */
double tune_unit(uint64_t bits);

/* ---- the sweep ---- */

/** One router of the sweep: a strategy and whether the pool steals. */
typedef struct tune_router {
    rp_strategy_kind kind;  /* round-robin, random or smallest-mailbox */
    bool steal;
    char name[40];          /* "smallest-mailbox+steal" */
} tune_router;

typedef struct tune_cfg {
    unsigned sizes[TUNE_SIZES_MAX];
    size_t nsizes;
    tune_router routers[TUNE_ROUTERS_MAX];
    size_t nrouters;
    double duration_s;  /* measured seconds per cell */
    double warmup_s;    /* seconds before measuring; < 0: duration / 10 */
    double load;        /* open loop at this fraction of capacity; 0: closed loop */
    double rate;        /* open loop at this many jobs/s; 0: from load */
    unsigned clients;   /* closed loop: jobs in flight; 0: 4 x largest size */
    double p99_ms;      /* target; 0: none */
    unsigned repeat;    /* rounds over every cell; each number is their median */
    uint64_t seed;
    double max_load;    /* recommend nothing when the load average at start is above it */
    bool quiet;
    cli_output csv, json, plot; /* opened while parsing, so a bad path fails early */
    FILE *out;          /* the header, table and recommendation: stdout, or stderr
                         * when an output file is standard output */
    tune_work work;
    unsigned cpus;      /* online CPUs */
} tune_cfg;

/** Parse argv into cfg.  Returns -1 to go on, or an exit code (0 after
 *  --help/--version, TUNE_EXIT_USAGE after a message). */
int tune_args_parse(tune_cfg *cfg, int argc, char *argv[]);
/** Close the output files parse opened and unload the plugin. */
void tune_args_release(tune_cfg *cfg);
/** Router by name ("rr", "smallest-mailbox+steal", ...); false if unknown. */
bool tune_router_parse(tune_router *out, const char *name);

/** What one cell measured. */
typedef struct tune_result {
    unsigned size;
    tune_router router;
    double throughput;   /* jobs/s completed in the measured window */
    double p50_us, p99_us, p999_us, mean_us;  /* sojourn */
    uint64_t samples;    /* sojourns behind the percentiles (arrived in the window) */
    double cpu;          /* process CPU time / (wall x online CPUs) */
    double cpu_demand;   /* what the built-in jobs asked for, same unit; < 0: unknown */
    double thr_spread, p99_spread; /* --repeat: (max - min) / median over the rounds */
    double imbalance;    /* mean max / mean mean sampled depth; < 0: none queued */
    uint64_t jobs;       /* completed in the window */
    uint64_t arrivals;   /* open loop: arrivals in the window */
    uint64_t stolen;     /* rp_routee_stats.stole, summed, in the window */
    uint64_t unfinished; /* open loop: still queued when the drain gave up */
    bool overloaded;     /* open loop: the pool could not keep up */
} tune_result;

/** Whether percentile q of r rests on enough samples to show. */
bool tune_pct_valid(const tune_result *r, double q);
/** Whether the cell got under TUNE_STARVED of the CPU its jobs asked for. */
bool tune_starved(const tune_result *r);

/** How a cell is driven. */
typedef struct tune_drive {
    bool open;          /* open loop (Poisson arrivals) or closed loop */
    double rate;        /* open: arrivals per second */
    unsigned clients;   /* closed: jobs in flight */
    double warmup_s, duration_s;
    uint64_t seed;
    unsigned cpus;      /* online CPUs, for the utilisation */
    /* Called now and then from the driving thread with the fraction of the
     * cell done; may be NULL. */
    void (*tick)(void *user, double frac);
    void *tick_user;
} tune_drive;

/** Set by the SIGINT and SIGTERM handler to the signal; the cell under
 *  way stops soon after. */
extern volatile sig_atomic_t tune_interrupted;

/** Run one cell.  Returns 0, TUNE_EXIT_RUNTIME after a message, or
 *  TUNE_EXIT_INTERRUPTED after SIGINT or SIGTERM (the result is then
 *  incomplete). */
int tune_cell_run(tune_result *out, const tune_work *work, unsigned size,
                  const tune_router *router, const tune_drive *drive);

/* ---- reports ---- */

/** The recommended cell and the sentence saying why. */
typedef struct tune_pick {
    int index;          /* into the results; -1 when there is none */
    bool met_target;    /* false when a --p99 target was given and no cell meets it */
    bool partial;       /* from an interrupted sweep */
    size_t thin, starved; /* cells left out: too few samples, starved */
    char sentence[768];
} tune_pick;

/** Context every report prints or embeds. */
typedef struct tune_meta {
    const tune_cfg *cfg;
    bool open;
    double capacity;    /* open loop: measured jobs/s (0 with --rate) */
    double rate;        /* open loop: offered jobs/s */
    unsigned clients;   /* closed loop */
    double warmup_s;
    size_t planned;     /* cells planned; fewer results when interrupted */
    unsigned rounds;    /* rounds the results are medians of (fewer when interrupted) */
    bool complete;      /* every round of every cell ran */
    double loadavg;     /* 1-minute load average at start; < 0: unknown */
} tune_meta;

void tune_recommend(tune_pick *out, const tune_result *res, size_t n, const tune_meta *m);
/** Describe the workload in a few words ("bimodal:1,100,0.1 (mean 10.9 us)"). */
void tune_workload_label(char *buf, size_t len, const tune_cfg *cfg);
void tune_print_header(FILE *f, const tune_meta *m);
void tune_print_table(FILE *f, const tune_result *res, size_t n, const tune_pick *pick,
                      const tune_meta *m);
/** The warnings about what was left out of the recommendation, if any
 *  (rp-tune prints them on stderr), and a wide --repeat spread. */
void tune_print_warnings(FILE *f, const tune_result *res, size_t n, const tune_meta *m);
/** Write --csv / --json / --plot; false after a message on a write error. */
bool tune_write_csv(FILE *f, const tune_result *res, size_t n, const tune_meta *m);
bool tune_write_json(FILE *f, const tune_meta *m, const tune_result *res, size_t n,
                     const tune_pick *pick);
bool tune_write_svg(FILE *f, const tune_meta *m, const tune_result *res, size_t n,
                    const tune_pick *pick);

/** Format a count with thousands separators: 1234567.8 -> "1,234,568". */
void tune_fmt_count(char *buf, size_t len, double v);
/** Format a duration given in microseconds: "850 ns", "12.3 us", "4.56 ms". */
void tune_fmt_us(char *buf, size_t len, double us);

#endif /* RP_TOOLS_TUNE_H */
