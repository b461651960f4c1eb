/* SPDX-License-Identifier: MIT */
/*
 * bench/sim.h - the discrete-event simulator behind rp-bench-sim (issue 7),
 * shared by bench/sim.c (engine, table, main) and bench/sim_validate.c
 * (--validate: simulator against rp-bench-sojourn's measurements).
 *
 * Times are integer nanoseconds of simulated time.  Nothing here runs a
 * thread: the routers' choices come from rp_strategy_pick() over foreign
 * routees whose depth callback reads the simulated routee.
 */
#ifndef RP_BENCH_SIM_H
#define RP_BENCH_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nominal job mix of rp-bench-sojourn: 90% 1 us, 10% 100 us (mean 10.9 us). */
#define SIM_SHORT_NS 1000
#define SIM_LONG_NS 100000
#define SIM_LONG_SHARE 0.10
#define SIM_MEAN_NS 10900.0

/** What the simulator routes with. */
typedef enum sim_router {
    SR_CENTRAL,  /* the reference: one FCFS queue, k servers (M/G/k) */
    SR_RR,
    SR_RR_STEAL,
    SR_RANDOM,
    SR_RANDOM_STEAL,
    SR_SM,
    SR_SM_STEAL,
    SR_CH,       /* consistent hash, random keys; keyed jobs are pinned */
    SR_COUNT
} sim_router;

/** Job cost distributions, each with mean SIM_MEAN_NS. */
typedef enum sim_cost { SC_BIMODAL, SC_EXP, SC_UNIFORM } sim_cost;

/** The overhead model; every field in nanoseconds unless it says otherwise. */
typedef struct sim_model {
    int64_t dispatch_ns;   /* routee CPU per job outside the job itself */
    int64_t wake_ns;       /* a sleeping routee runs this long after it is signalled... */
    int64_t wake_tail_ns;  /* ...plus an exponential extra of this mean */
    int64_t spin_ns;       /* an idle routee polls this long before sleeping (pool:
                            * idle_spin_us, 50 us; at most max(1, k/2) at once) */
    int64_t steal_ns;      /* a thief spends this before running a stolen job */
    double slowdown;       /* job cost multiplier (1: the nominal cost) */
    bool central_overhead; /* the central queue's idle workers pay the wake-up too */
    int64_t central_dispatch_ns; /* ...and its workers this much per job */
    bool steal_one;        /* what-if: a thief takes one job, not half the depth */
    bool victim_two;       /* what-if: a thief probes two random routees and
                            * takes from the deeper, instead of scanning all */
    int64_t rescue_ns;     /* with stealing: a routee with work of its own looks
                            * at one other routee every rescue_ns and steals from
                            * it when it had jobs queued at the last look, still
                            * has, and finished none since (0: never; the pool:
                            * SIM_RESCUE_NS) */
    bool rescue_older;     /* what-if: the rescue steals only when the watched
                            * routee's oldest job arrived before the looker's own
                            * oldest (FIFO across the two; the pool: any) */
    int64_t older_ns;      /* with the rescue: its age look takes one job of the
                            * routee watched when that job arrived older_ns or
                            * more before the looker's oldest (0: never; the
                            * pool: SIM_OLDER_NS) */
} sim_model;

/** One cell: k routees, one load, one router. */
/** A measured interruption: job (index in arrival order, warm-up
 *  included) took ns more than its cost (rp-bench-sojourn's "stalls"). */
typedef struct sim_extra {
    uint64_t job;
    int64_t ns;
} sim_extra;

typedef struct sim_cell {
    unsigned k;
    double load;
    sim_router router;
    sim_cost cost;
    uint64_t jobs, warmup;  /* measured jobs, unmeasured jobs before them */
    uint64_t seed;          /* arrivals and costs: the same for every router */
    bool exact_seed;        /* seed is the generator's state as such, as in
                             * rp-bench-sojourn's workload_draw() (k = 2, bimodal:
                             * the very arrivals and costs of its run) */
    const sim_extra *extra; /* added to those jobs' costs, by job; NULL: none */
    size_t nextra;
    /* Measured generator lateness (rp-bench-sojourn's "late"): those jobs
     * are submitted ns after their arrival instant, every other one
     * late_base_ns after; the sojourn still counts from the arrival
     * instant.  Submissions stay in arrival order. */
    const sim_extra *late;  /* by job; NULL: none */
    size_t nlate;
    int64_t late_base_ns;
    /* Measured late wake-ups (rp-bench-sojourn's "wakes"): when one of
     * these jobs finds its routee (or every central worker) asleep, the
     * wake-up takes at least ns. */
    const sim_extra *wakes; /* by job; NULL: none */
    size_t nwakes;
} sim_cell;

/** What a cell measured (sojourn in us, nearest-rank percentiles). */
typedef struct sim_result {
    double mean, p50, p99, p999;
    double disp_mean, disp_p99;  /* dispatch delay, as rp-bench-sojourn defines it */
    double stolen_per_1000;
    /* The rescue's looks, those only watching, rescues and age takes,
     * per 1000 jobs (rp_routee_stats' looks, stale_looks, rescues and
     * age_takes). */
    double looks_per_1000, stale_per_1000, rescues_per_1000, age_takes_per_1000;
    double drift;                /* mean of the 2nd half of the measured jobs over the 1st, - 1 */
    double seconds;              /* wall time of the simulation */
} sim_result;

extern const char *const sim_router_key[SR_COUNT];
extern const char *const sim_router_label[SR_COUNT];

/** The defaults documented in --help (calibrated on this machine). */
void sim_model_defaults(sim_model *m);

/** The model of rp-bench-sojourn's own conditions, for --validate (its
 *  SCHED_IDLE generator keeps an idle routee's CPU awake: a wake-up is a
 *  preemption, not an idle-CPU exit; docs/simulator.md). */
void sim_model_bench_profile(sim_model *m);

/** Run one cell.  0, or -1 when out of memory (message printed). */
int sim_run_cell(sim_result *out, const sim_cell *c, const sim_model *m);

/** What --validate replays of the file's measurements, when it has them. */
typedef struct sim_replay {
    bool stalls; /* the interruptions, as extra job cost */
    bool late;   /* the generator's lateness, as later submissions */
    bool wakes;  /* late wake-ups of idle routees, as those jobs' wake-ups */
    bool handover; /* each scheduler's measured handover as its per-job cost
                    * (dispatch_ns, central_dispatch_ns), cell by cell */
} sim_replay;

/** --validate FILE: 0 every cell passes, 1 a cell fails (or out of
 *  memory), 2 the file cannot be read as rp-bench-sojourn JSON. */
int sim_validate(const char *path, const sim_model *m, bool slowdown_given, bool strict,
                 sim_replay replay);
/** After several sim_validate() calls: the pairs of their files pooled
 *  (cells run again, as --lib-b's twins; printed when two or more files
 *  had pairs). */
void sim_validate_pooled(void);

#endif /* RP_BENCH_SIM_H */
