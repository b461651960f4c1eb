/* SPDX-License-Identifier: MIT */
/*
 * bench/common.h - helpers shared by the routepool benchmarks.
 *
 * Clock, CPU relax, a calibrated spin loop (real CPU work, no clock reads
 * while it runs), order statistics, the machine description every results
 * file starts with (CPU, nproc, kernel, compiler, flags, commit), and the
 * cache-line ping-pong that shows how far apart the host placed our vCPUs
 * (docs/performance.md explains why it is printed before every run).
 *
 * The benchmarks use only the public routepool headers (STYLE.md); nothing
 * here includes them.
 */
#ifndef RP_BENCH_COMMON_H
#define RP_BENCH_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/** CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/** CPU time of the calling thread in nanoseconds. */
static inline int64_t bench_thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/** A spin-wait hint (PAUSE on x86). */
static inline void bench_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/**
 * Burn CPU for iters iterations of a dependent multiply-add chain.  The
 * empty asm makes x opaque to the optimiser, so the loop can be neither
 * removed nor folded into a closed form; no clock is read inside.
 * @return a value derived from x, to be stored somewhere (a sink).
 */
static inline uint64_t bench_spin(uint64_t iters, uint64_t x)
{
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ __volatile__("" : "+r"(x));
    }
    return x;
}

/** splitmix64: the next value of the stream whose state is *x (one
 *  stream per purpose; fixed seeds make every run of a benchmark draw the
 *  same numbers). */
static inline uint64_t bench_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/** Uniform in (0, 1], from bench_splitmix64(x). */
static inline double bench_unit(uint64_t *x)
{
    return ((double)(bench_splitmix64(x) >> 11) + 1.0) * 0x1.0p-53;
}

/* n per 1,000 of jobs (0 without jobs): the benchmarks' steal, sleep and
 * look counts. */
static inline double bench_per_1000(uint64_t n, uint64_t jobs)
{
    return jobs ? 1000.0 * (double)n / (double)jobs : 0;
}

/** The pool's steal size, as lib/ implements it and both simulators
 *  (sojourn's zero-overhead replay, rp-bench-sim) model it: a thief takes
 *  half the victim's depth, at least 1 and at most BENCH_STEAL_MAX
 *  (RP__STEAL_MAX in lib/routee_record.h; benchmarks see public headers
 *  only).  The pool's RP__STEAL_FAST_MAX (32, for a thief whose own jobs
 *  run 32 in 5 us or faster) is not modelled: the simulated jobs never
 *  come that fast. */
#define BENCH_STEAL_MAX 8u
/* lib/steal.h's low load (RP__LOAD_WINDOW_NS, rp__steal_low_load): a
 * window of at least 1 ms in which the routee slept over 30 % of the time
 * lets its looks after a job take a sleeping routee's one job. */
#define BENCH_LOAD_WINDOW_NS 1000000
#define BENCH_LOW_LOAD_SLEEP_PCT 30
static inline bool bench_low_load(int64_t slept_ns, int64_t span_ns)
{
    return span_ns > 0 && slept_ns > 0 && slept_ns * 100 > span_ns * BENCH_LOW_LOAD_SLEEP_PCT;
}
static inline unsigned bench_steal_want(int64_t depth)
{
    return depth / 2 < 1 ? 1 : depth / 2 > BENCH_STEAL_MAX ? BENCH_STEAL_MAX : (unsigned)(depth / 2);
}

/** Result of bench_calibrate(). */
typedef struct bench_calib {
    double iters_per_us;   /**< from the fastest trial: the uncontended rate */
    double median_per_us;  /**< median trial, to show the machine's noise */
    int trials;
} bench_calib;

/** Calibrate bench_spin(): warm the core for warm_ms, then time trials. */
void bench_calibrate(bench_calib *out, int warm_ms, int trials);

/** Median of n doubles (sorts v in place); 0 for n == 0. */
double bench_median(double *v, size_t n);

/** Sort n int64 values ascending. */
void bench_sort_i64(int64_t *v, size_t n);

/** Nearest-rank percentile (p in 0..1) of n sorted values; 0 for n == 0. */
int64_t bench_pct_sorted(const int64_t *v, size_t n, double p);

/** What the results say about where they were measured. */
typedef struct bench_machine {
    char cpu[128];       /**< "model name" from /proc/cpuinfo */
    long nproc;          /**< online CPUs */
    char kernel[96];     /**< uname -r */
    char clocksource[32];
    char compiler[96];
    char flags[512];     /**< C flags the benchmark was built with */
    char commit[64];     /**< git rev-parse --short HEAD, or "unknown" */
    char date[32];       /**< UTC, ISO 8601 */
    double loadavg1;     /**< 1-minute load average at start */
} bench_machine;

/** Fill m (never fails: unknown fields read "unknown"). */
void bench_machine_get(bench_machine *m);

/** Print m as "# key: value" lines. */
void bench_machine_print(FILE *f, const bench_machine *m);

/** Write m as JSON object members (no braces), each line prefixed by indent. */
void bench_machine_json(FILE *f, const bench_machine *m, const char *indent);

/** Write s as a JSON string literal. */
void bench_json_str(FILE *f, const char *s);

/** The n-th (0-based) CPU this process may run on, or -1. */
int bench_nth_cpu(int n);

/** Pin the calling thread to one CPU (cpu < 0: do nothing). */
void bench_pin_self(int cpu);

/** Result of bench_pingpong(). */
typedef struct bench_pingpong_result {
    double one_way_ns;   /**< median over trials */
    double min_ns, max_ns;
    int cpu_a, cpu_b;    /**< CPUs the two threads were pinned to (-1: not pinned) */
} bench_pingpong_result;

/**
 * One-way cache-line transfer latency between two threads pinned to two
 * different CPUs: rounds round trips per trial, trials trials.
 * @return 0, or -1 when the threads could not be started.
 */
int bench_pingpong(bench_pingpong_result *out, int rounds, int trials);

/** "near", "middle" or "far": the placement a one-way ping-pong of
 *  one_way_ns says the host gave the two vCPUs (near < 50 ns, the two share
 *  a core or a cache; far >= 130 ns, ~200 ns seen; in between ~70 ns).
 *  "unknown" for a value <= 0 (not measured).  Callers pass the fastest
 *  trial: on a loaded machine a trial whose thread lost its CPU reads
 *  10-1000x slower, and the median with it. */
const char *bench_placement_kind(double one_way_ns);

/** Print pp as the "# ping-pong: ..." line (median of trials trials), with
 *  its placement kind. */
void bench_pingpong_print(FILE *f, const bench_pingpong_result *pp, int trials);

/** Where a stretch of a run ran: the ping-pong and the load average. */
typedef struct bench_placement {
    bench_pingpong_result pp; /**< one_way_ns <= 0: could not be measured */
    double loadavg1;          /**< 1-minute load average; -1 unknown */
} bench_placement;

/** Measure the placement now: bench_pingpong() (100000 round trips,
 *  trials trials) and the 1-minute load average. */
void bench_placement_take(bench_placement *out, int trials);

/** The 1-minute load average from /proc/loadavg, or -1. */
double bench_loadavg1(void);

/** One line for a verdict: "placement: ping-pong A ns (kind) at the start,
 *  B ns (kind) at the end; load average a -> b (2 vCPUs)", prefixed by
 *  prefix; end may be NULL (one measurement).  Also CSV rows under bench. */
void bench_placement_verdict(FILE *f, const char *bench, const char *prefix,
                             const bench_placement *start, const bench_placement *end);

/** Result of bench_wake_latency(). */
typedef struct bench_wake_result {
    double p50_us, p99_us;
    int samples;
} bench_wake_result;

/**
 * Wake-up latency of a thread asleep in FUTEX_WAIT on one CPU, woken by a
 * thread on the other CPU: FUTEX_WAKE -> the sleeper runs.  The waker waits
 * gap_us between wake-ups (spinning, so its own CPU stays awake), long
 * enough for the sleeper's CPU to go idle, as a routee's does between jobs.
 * @return 0, or -1 when the thread could not be started.
 */
int bench_wake_latency(bench_wake_result *out, int samples, int gap_us);

/**
 * CPU time used on the whole machine and by this process, to tell how much
 * of a run's CPU went to other processes, the kernel or the hypervisor
 * (steal): on a shared 2-vCPU VM a neighbour's compile can take half the
 * machine in the middle of a run.
 */
typedef struct bench_cpu_snap {
    int64_t wall_ns;
    int64_t self_ns;   /* CLOCK_PROCESS_CPUTIME_ID */
    double busy_s;     /* /proc/stat: all CPUs, everything but idle and iowait */
} bench_cpu_snap;

void bench_cpu_snap_take(bench_cpu_snap *out);

/** Share (0..1) of all online CPUs' time between a and b that went to
 *  anything but this process; 0 when /proc/stat cannot be read. */
double bench_foreign_share(const bench_cpu_snap *a, const bench_cpu_snap *b);

/**
 * Wait, up to timeout_ms, for a 250 ms window in which others use less than
 * max_share of the machine.
 * @return the last window's foreign share.
 */
double bench_wait_quiet(double max_share, int timeout_ms);

/**
 * Machine-readable results for bench/run.  When the environment variable
 * RP_BENCH_CSV names a file, each call appends one row to it (the header
 * first when the file is empty):
 *
 *     bench,case,metric,unit,median,min,max,reps
 *
 * bench is the program ("tiny"), case what was measured ("routepool
 * round-robin, 1 submitter"), metric the quantity ("ns/job", "p99"), unit
 * its unit ("ns", "us", "x", "bytes", "instr").  Commas and quotes in the
 * strings are written CSV-quoted.  bench/run turns the file into the
 * markdown summary.  Without RP_BENCH_CSV nothing is written.
 */
void bench_csv_row(const char *bench, const char *cas, const char *metric, const char *unit,
                   double median, double min, double max, int reps);

/** bench_csv_row() of n samples (sorted in place): median, min, max. */
void bench_csv_samples(const char *bench, const char *cas, const char *metric, const char *unit,
                       double *v, size_t n);

/** A gate that blocks the jobs passing it until it opens (the benchmarks
 *  hold routees busy with it).  Closed after bench_gate_init(). */
typedef struct bench_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
} bench_gate;

void bench_gate_init(bench_gate *g);
void bench_gate_destroy(bench_gate *g);
/** Close it again (jobs that pass from now on block). */
void bench_gate_close(bench_gate *g);
void bench_gate_open(bench_gate *g);
/** Block until g opens (call it from a job). */
void bench_gate_pass(bench_gate *g);

/** CPUs a bench_cpu_tally tells apart; others are counted together. */
#define BENCH_CPU_SLOTS 64

/** Where one thread ran: how often it was seen on each CPU.  One tally per
 *  thread, written by that thread only, on a cache line of its own. */
typedef struct bench_cpu_tally {
    _Alignas(64) unsigned n[BENCH_CPU_SLOTS + 1]; /**< [BENCH_CPU_SLOTS]: CPUs beyond */
} bench_cpu_tally;

/** Note the CPU the calling thread runs on (sched_getcpu()) in t. */
void bench_cpu_note(bench_cpu_tally *t);

/** The CPU t saw most often, or -1 when nothing was noted there. */
int bench_cpu_most(const bench_cpu_tally *t);

/**
 * A thread layout's label: the threads grouped by CPU, "S" a submitter, "R"
 * a routee, "?" a routee whose CPU is unknown (its cpu < 0); the groups in
 * descending order, joined by "|": "SR|R", "S|RR", "SRR", "SR|SR".
 * cpu[0..nsub) are the submitters' CPUs, cpu[nsub..nsub+nroutees) the
 * routees'; at most 8 threads.  Writes at most len bytes (NUL included).
 */
void bench_layout_label(const int *cpu, int nsub, int nroutees, char *out, size_t len);

/** Parse a non-negative integer option value; exits with status 2 on error. */
uint64_t bench_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max);

#endif /* RP_BENCH_COMMON_H */
