/* SPDX-License-Identifier: MIT */
/*
 * bench/sojourn.h - what the parts of rp-bench-sojourn share (private to
 * the benchmark; the concept of the whole is at the top of sojourn.c).
 *
 * The parts, one concept a file:
 *   sojourn.c           the driver: preamble, one run, loads, main
 *   sojourn_central.c   the reference scheduler: one central FIFO, 2 workers
 *   sojourn_sched.c     the scheduler adapter: central queue, pool or oneTBB
 *   sojourn_workload.c  the job, the drawn workload, the buffers
 *   sojourn_arrivals.c  the arrival generator, helped by the routees
 *   sojourn_stats.c     per-run statistics, aggregation over runs, the
 *                       per-run event lists (stalls, late submits, wakes)
 *   sojourn_sim.c       the same workload simulated with zero overhead
 *   sojourn_output.c    the tables, CSV rows, the verdict and the JSON
 *   sojourn_cli.c       the command line
 * Every run's state is in the globals below; the measured path allocates
 * nothing (the buffers are allocated once, before anything is timed).
 */
#ifndef RP_BENCH_SOJOURN_H
#define RP_BENCH_SOJOURN_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "routepool/routepool.h"
#ifdef RP_BENCH_HAVE_TBB
#include "peer_tbb.h"
#endif

#define ROUTEES 2u
#define SHORT_US 1.0
#define LONG_US 100.0
#define LONG_SHARE 0.10
#define MEAN_US (SHORT_US * (1 - LONG_SHARE) + LONG_US * LONG_SHARE) /* 10.9 */
#define MAX_LOADS 8
#define MAX_REPS 31
/* Issue 18's target 4: p99 and p99.9 at most this many times the central
 * queue's, at every load (0.5, 0.8 and 0.9 by default). */
#define TARGET_SM_STEAL 1.15 /* smallest-mailbox + steal */
#define TARGET_RR_STEAL 1.30 /* round-robin + steal, the default */

/* ---- schedulers ---- */

/* The pool variants V_RR..V_SM_STEAL run on library A; with --lib-b each
 * also has a twin on library B (V_RR_B..V_SM_STEAL_B, in the same order),
 * run on the same workload in the same repetition (sojourn_libs.c).
 * V_NULL is the central queue run a second time: its ratio to the first
 * is what the VM alone does to a ratio (the verdict prints it). */
enum variant {
    V_CENTRAL, V_RR, V_RR_STEAL, V_RANDOM, V_SM, V_SM_STEAL, V_TBB, V_NULL,
    V_RR_B, V_RR_STEAL_B, V_RANDOM_B, V_SM_B, V_SM_STEAL_B, V_COUNT
};
#define V_POOLS (V_SM_STEAL - V_RR + 1)

/* Library B's twin of a pool variant, and the other way round. */
static inline bool variant_is_b(enum variant v)
{
    return v >= V_RR_B;
}
static inline enum variant variant_base(enum variant v)
{
    return variant_is_b(v) ? (enum variant)(v - V_RR_B + V_RR) : v;
}
static inline enum variant variant_twin(enum variant v)
{
    return (enum variant)(v - V_RR + V_RR_B);
}

typedef struct variant_name {
    const char *key, *label;
} variant_name;
extern const variant_name variants[V_COUNT];

/* ---- per-run statistics ---- */

enum stat {
    S_MEAN, S_P50, S_P99, S_P999, /* sojourn, us */
    S_SVC,                        /* mean measured service (done - start), us */
    S_UTIL,                       /* sum of service / (routees * span) */
    S_LATE50, S_LATE99,           /* generator lateness, us */
    S_GENCPU,                     /* generator CPU time / generation wall time */
    S_STEAL,                      /* jobs stolen per 1000 jobs */
    S_HOOK,                       /* share of arrivals submitted by routees */
    S_STALL,                      /* in-job interruptions > 20 us, per mille of routee time */
    S_STALLMAX,                   /* longest in-job interruption, us */
    S_FOREIGN,                    /* share of the machine used by others */
    S_DISP, S_DISP99,             /* dispatch delay (see dispatch_stats()), us */
    S_HAND,                       /* handover: next start - previous end on a worker, us,
                                   * when the next job was already submitted */
    S_IDLEW,                      /* share of worker time idle while a job waited */
    S_SUBR, S_SUBR90,             /* a routee's submit (in a job), mean and p90 ns;
                                   * --time-submits only, else 0 */
    S_HAND0, S_HAND1,             /* handover p50, ns: gaps in which the worker
                                   * submitted nothing / at least one arrival */
    S_LOOKS, S_STALE,             /* the rescue's looks per 1000 jobs, and those
                                   * that only watched (rp_routee_stats) */
    S_RESCUE, S_AGE,              /* rescues and age takes per 1000 jobs */
    NSTAT
};

/* How the generator waits for an arrival less than spin_ns away. */
typedef enum gen_mode {
    GEN_IDLE, /* SCHED_IDLE thread per CPU, sched_yield loop; routees submit too */
    GEN_SPIN, /* normal thread, PAUSE loop; only the generator submits */
    GEN_YIELD /* normal thread, sched_yield loop; only the generator submits */
} gen_mode;

extern const char *const gen_names[3];

typedef enum central_wake { WAKE_SEM, WAKE_SIGNAL, WAKE_BROADCAST } central_wake;


typedef struct config {
    double loads[MAX_LOADS];
    int nloads;
    size_t jobs, warmup;
    int reps;
    uint64_t seed;
    int64_t spin_ns;  /* sleep only when the next arrival is further away */
    gen_mode gen;
    bool hooks;       /* routees submit due arrivals when a job ends */
    bool enabled[V_COUNT];
    const char *json;
    double max_foreign; /* redo a run when others used more of the machine */
    int retries;
    bool pin;           /* worker i (routee or central) pinned to CPU i */
    bool time_submits;  /* time every submit (two clock reads each) */
    const char *dump_dir; /* write each run's jobs as CSV here, or NULL */
    double max_stall_us; /* redo a run with a longer in-job interruption */
    int central_wake;   /* a central_wake */
    bool tbb_other;     /* --tbb-submit other: tbb's generators submit under SCHED_OTHER */
    const char *lib_a, *lib_b; /* --lib-a / --lib-b (file or build directory), or NULL */
    bool no_null;       /* --no-null: the central queue runs once a repetition */
} config;

/* --idle-spin-us: the routepool pools' rp_pool_options.idle_spin_us. */
extern unsigned g_idle_spin_us;

/* One job record, a cache line each: two routees write neighbouring
 * records at the same time. */
typedef struct job {
    _Alignas(64) int64_t start;
    int64_t done;
    uint64_t iters;
    uint64_t sink;
    int worker; /* index of the thread that ran it */
} job;

/* One drawn workload, replayed through every scheduler. */
typedef struct workload {
    size_t n;         /* warm-up + measured jobs */
    int64_t *offset;  /* scheduled arrival, ns after the run's t0 */
    uint8_t *is_long;
} workload;

/* Buffers shared by every run: allocated once, before anything is timed. */
typedef struct buffers {
    job *jobs;
    job **queue;      /* the central queue's ring (one slot per job) */
    int64_t *late;    /* generator lateness per job, ns */
    uint8_t *by_routee; /* submitted by routee k's hook (feed_pump): k + 1; else 0 */
    int64_t *idle_wait; /* dispatch delay of a job that found its worker idle, else 0 */
    int64_t *scratch; /* sojourn times, sorted for percentiles */
    size_t *ring[ROUTEES]; /* the simulation's per-routee queues of job indices */
    size_t *order;    /* job indices by (worker, start) */
    int64_t *events;  /* 3 per job: the idle-while-waiting sweep (dispatch_stats()) */
    int64_t *submit_ns; /* with --time-submits: each job's submit call, ns */
} buffers;

/* Per-run statistics of every cell. */
typedef double table[MAX_LOADS][V_COUNT][MAX_REPS][NSTAT];
extern table results;
/* The same workloads simulated with zero overhead: S_MEAN..S_P999 only. */
extern table simulated;
/* Runs done again because other processes took the machine. */
extern int redone[MAX_LOADS][V_COUNT];

/*
 * The interruptions of every run (with --json): each job, warm-up
 * included, that took more than STALL_NS beyond its CPU cost, and by how
 * much.  rp-bench-sim --validate replays them as part of the job's cost:
 * the VM's stalls are an input of the queueing, like the arrivals.
 */
#define STALL_NS 20000
#define STALL_MAX_EVENTS 50000
typedef struct stall_list {
    uint32_t *job;
    float *extra_us;
    size_t n, cap, max;
    bool truncated;
} stall_list;
extern stall_list stalls[MAX_LOADS][V_COUNT][MAX_REPS];

/*
 * The generator's lateness in every run (with --json), the other input the
 * VM adds: each job, warm-up included, that a generator thread submitted
 * more than LATE_NS after its scheduled instant, and by how much; the mean
 * lateness of the generators' other submissions (late_base).  The sojourn
 * is measured from the scheduled instant, so a late submission is in it;
 * rp-bench-sim --validate submits those jobs as late as they were, and the
 * others late_base late.  A routee's hook submits only while every
 * routee is busy (the SCHED_IDLE generators get no CPU then), when the job
 * could not start anyway: that lateness is the simulated queueing's own
 * (at load 0.8, 40% of the jobs, 20 us on average), not replayed.
 */
#define LATE_NS 5000
#define LATE_MAX_EVENTS 200000
extern stall_list lates[MAX_LOADS][V_COUNT][MAX_REPS];
extern double late_base_us[MAX_LOADS][V_COUNT][MAX_REPS];

/*
 * Late wake-ups (with --json): each job that found the worker that ran it
 * idle and still waited more than WAKE_NS to start (dispatch_stats), and
 * how long - a routee woken late because the VM or the generator held its
 * CPU.  rp-bench-sim --validate uses it as that job's wake-up latency when
 * the job finds its simulated routee asleep too.
 */
#define WAKE_NS 20000
#define WAKE_MAX_EVENTS 50000
extern stall_list wakes[MAX_LOADS][V_COUNT][MAX_REPS];

/* ---- the job and the workload (sojourn_workload.c) ---- */

/* Which worker thread this is (routee index, or central worker index). */
extern _Thread_local int tl_worker;
void spin_job(job *j);
void run_job(job *j);
void workload_draw(workload *w, double load, uint64_t seed);
void alloc_buffers(buffers *b, workload *w, size_t n);
double measure_job_us(uint64_t iters, int count);

/* ---- the reference scheduler (sojourn_central.c) ---- */

typedef struct central {
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    sem_t sem[ROUTEES];          /* WAKE_SEM: one per worker */
    unsigned asleep[ROUTEES];    /* WAKE_SEM: workers waiting for a post */
    unsigned nasleep;
    job **q;
    size_t head, tail; /* q[head..tail) waits; tail counts submitted jobs */
    size_t done;
    unsigned sleepers, started;  /* sleepers: condvar modes */
    central_wake wake;
    bool stopping, waiting, pin;
    pthread_t th[ROUTEES];
} central;

int central_start(central *c, job **ring, bool pin, central_wake wake);
void central_submit(central *c, job *j);
void central_wait_idle(central *c);
void central_stop(central *c);

/* ---- the libraries under test (sojourn_libs.c) ---- */

/* The public functions the pool variants call, from one copy of the
 * library: the linked one, or with --lib-b a dlopen()ed copy per side. */
typedef struct rp_api {
    const char *file; /* the copy's file, NULL for the linked library */
    const char *(*version)(void);
    const char *(*strerror_)(int);
    const char *(*errmsg)(void);
    void (*options_init)(rp_pool_options *);
    int (*create)(rp_pool **, const rp_pool_options *);
    int (*submit)(rp_pool *, rp_job_fn, void *);
    int (*wait_idle)(rp_pool *, int);
    void (*destroy)(rp_pool *);
    size_t (*size)(const rp_pool *);
    rp_routee *(*routee)(rp_pool *, size_t);
    int (*stats)(const rp_routee *, rp_routee_stats *);
    int (*job_routee)(const rp_job_ctx *);
    rp_strategy (*round_robin)(void);
    rp_strategy (*random)(uint64_t);
    rp_strategy (*smallest)(void);
} rp_api;

/* [0]: library A (the variants' own), [1]: library B (the twins). */
extern rp_api libs[2];
/* Fill libs[] from cfg->lib_a / cfg->lib_b; exits 2 on a library that
 * cannot be loaded or would not keep to its own code. */
void libs_load(const config *cfg);
void libs_print(const config *cfg);
void libs_unload(void);

/* ---- the scheduler under test (sojourn_sched.c) ---- */

typedef struct sched {
    enum variant v;
    const rp_api *api; /* the pool variants' library */
    rp_job_fn job_fn;  /* its job function */
    rp_pool *pool;
    central cq;
#ifdef RP_BENCH_HAVE_TBB
    peer_tbb *tbb;
#endif
} sched;

void sched_start(sched *s, const config *cfg, enum variant v, job **ring, uint64_t seed);
void sched_submit(sched *s, job *j);
/* What a pool's routees counted over a run (rp_routee_stats, summed); 0
 * for the central queue and oneTBB. */
typedef struct sched_counts {
    uint64_t stole, looks, stale_looks, rescues, age_takes;
} sched_counts;

/* Wait for every job, then stop; returns what the routees counted. */
sched_counts sched_finish(sched *s);

/* ---- arrivals (sojourn_arrivals.c) ---- */

typedef struct feeder {
    _Alignas(64) _Atomic size_t next; /* first arrival not yet claimed */
    _Atomic size_t by_routee;         /* arrivals submitted by routees */
    bool hooks;
    bool time_submits; /* time each submit into b->submit_ns */
    sched *s;
    const workload *w;
    const buffers *b;
    int64_t t0;
} feeder;

extern feeder feed;
void feed_from_routee(int64_t now);
int64_t generate_all(const config *cfg);

/* ---- statistics (sojourn_stats.c) ---- */

void run_stats(double *st, const config *cfg, const workload *w, const buffers *b, int64_t t0);
double median_of(table t, int li, enum variant v, int reps, enum stat s);
double median_stat(int li, enum variant v, int reps, enum stat s);
double ratio_of(table t, int li, enum variant v, int reps, enum stat s, double *lo, double *hi);
double ratio_stat(int li, enum variant v, int reps, enum stat s, double *lo, double *hi);
void model_means(double load, double *mg1, double *mg2);
void record_stalls(stall_list *l, const workload *w, const buffers *b);
void record_wakes(stall_list *l, const workload *w, const buffers *b);
void record_lates(stall_list *l, double *base, const workload *w, const buffers *b);

/* ---- the zero-overhead simulation (sojourn_sim.c) ---- */

void simulate(double *st, enum variant v, const workload *w, const buffers *b, size_t warm,
              uint64_t seed);

/* ---- output (sojourn_output.c) ---- */

void print_load(int li, const config *cfg);
void print_verdict(const config *cfg, const bench_placement *start, const bench_placement *end,
                   const bench_wake_result *wake);
void write_json(const config *cfg, const bench_machine *mach, const bench_calib *cal,
                const bench_pingpong_result *pp);

/* ---- command line (sojourn_cli.c) ---- */

void parse_args(config *cfg, int argc, char **argv);

#endif /* RP_BENCH_SOJOURN_H */
