/* SPDX-License-Identifier: MIT */
/*
 * tools/profile_trace.h - reading a routepool trace (Chrome Trace Event
 * JSON, lib/trace.c) and measuring how balanced the pool was.
 *
 * pt_read() keeps what the balance report needs and drops the rest:
 *   "C" counters "depth r<i>" {"depth":N} and "busy r<i>" {"busy":0|1}
 *       -> points (ts, routee, value), the time series of every routee;
 *   "X" slices named "job" {"routee":i,"wait_us":W} -> per-routee counts
 *       and sums (slices are sampled: one job in N per mailbox);
 *   "i" instants named "steal" {"thief","victim","jobs"} -> per-routee
 *       jobs stolen and stolen from;
 *   "M" metadata named "routepool" {pool,routees,interval_us,samples,
 *       lost_events} -> the header of the report;
 *   "M" metadata named "routee_totals" {routee,jobs_run,stole,stolen_from}
 *       (written at trace stop) -> each routee's exact counts, which
 *       replace the sampled estimates: the "jobs run" share comes from
 *       them, and stole / stolen from too (steal instants can be lost to a
 *       full ring; the totals cannot).  Traces without them (older, or cut
 *       short) keep the estimates, and the report says which it shows.
 * Flows, thread names and anything else are read (the JSON must be valid)
 * and ignored.
 *
 * pt_analyse() turns the points into samples: every distinct timestamp of a
 * counter is one sample, at which each routee has the value of its latest
 * counter (counters are step functions, as Perfetto draws them).  Each
 * sample counts for the time until the next one (the last: the trace's
 * interval), so means are time-weighted and a late sampler tick does not
 * skew them.  Per sample, over the routees' depths x1..xn:
 *   max/mean  max(x) / mean(x), 1 when every depth is 0;
 *   CV        population standard deviation / mean, 0 when every depth is 0;
 *   Jain      (sum x)^2 / (n * sum x^2), 1 when every depth is 0.
 */
#ifndef RP_PROFILE_TRACE_H
#define RP_PROFILE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Highest routee count a trace may name (RP_ROUTEES_MAX). */
#define PT_ROUTEES_MAX 4096u

enum { PT_DEPTH = 0, PT_BUSY = 1 };

/** One counter event. */
typedef struct pt_point {
    double ts;       /* microseconds */
    double value;
    uint32_t routee;
    uint32_t kind;   /* PT_DEPTH or PT_BUSY */
    size_t seq;      /* order in the file: keeps the sort stable */
} pt_point;

/** What the events other than counters say about one routee. */
typedef struct pt_routee_events {
    uint64_t slices;       /* sampled "X" job slices run here */
    double slice_us;       /* their durations, summed */
    double wait_us;        /* their queue waits, summed */
    uint64_t stole;        /* jobs this routee stole */
    uint64_t stolen_from;  /* jobs other routees stole from it */
    bool has_totals;       /* a routee_totals event was read for it */
    uint64_t jobs_run;     /* from routee_totals: exact */
    uint64_t total_stole, total_stolen_from; /* from routee_totals: exact */
} pt_routee_events;

/** A trace as read.  pt_release() frees it. */
typedef struct pt_trace {
    char *pool;            /* metadata; NULL when absent */
    bool has_meta;
    unsigned meta_routees;
    double interval_us;    /* metadata; 0 when absent */
    uint64_t meta_samples, lost_events;
    unsigned n;            /* routees: max(metadata, highest index seen + 1) */
    pt_point *points;
    size_t npoints, cap;
    pt_routee_events *ev;  /* n entries */
    uint64_t events, slices, steal_events;
    uint64_t busy_points;  /* "busy r<i>" counters: 0 means utilisation is unknown */
    unsigned totals;       /* routees with a routee_totals event */
} pt_trace;

/**
 * Read a trace: a JSON object with a "traceEvents" array, or a bare array
 * of events.
 * @param text  the file's bytes (borrowed for the call).
 * @param err   receives a message naming the line and column on failure.
 * @return 0, or -1 (malformed JSON, or a routepool event without the fields
 *         it must have).
 */
int pt_read(pt_trace *out, const char *text, size_t len, char *err, size_t errcap);

/** Free a trace.  Accepts a zeroed one. */
void pt_release(pt_trace *t);

/** Imbalance of a set of depths. */
typedef struct pt_imbalance {
    double max_over_mean, cv, jain;
} pt_imbalance;

/** Imbalance of n depths (see the top of this file). */
pt_imbalance pt_imbalance_of(const double *x, unsigned n);

/** One routee's part of the report. */
typedef struct pt_routee_stats {
    double mean_depth;     /* time-weighted over the samples */
    double max_depth;
    double utilisation;    /* time-weighted mean of busy, 0..1 */
    bool jobs_exact;       /* jobs_run and job_share are exact (routee_totals) */
    uint64_t jobs_run;     /* exact, or the sampled slices when not exact */
    double job_share;      /* of all jobs run (exact), or of all sampled slices;
                              0..1; 0 without either */
    double mean_wait_us;   /* of its sampled slices; 0 without */
    double mean_job_us;
    pt_routee_events ev;
} pt_routee_stats;

/** A window of the trace, with the imbalance of its per-routee mean depths. */
typedef struct pt_window {
    double start_us, end_us;
    pt_imbalance imb;
    double mean_depth;     /* mean over routees of their mean depth */
    unsigned deepest;
    double deepest_depth;  /* the deepest routee's mean depth */
    size_t samples;
} pt_window;

typedef struct pt_options {
    double window_us;      /* width of the windows ranked; > 0 */
    size_t worst;          /* how many windows to report */
    size_t buckets;        /* time columns of the chart series, >= 1 */
} pt_options;

/** Defaults: 10 ms windows, 5 worst, 600 columns. */
void pt_options_init(pt_options *o);

/** A hot routee: mean depth at least this many times the next deepest. */
#define PT_HOT_FACTOR 2.0
/** ...and at least this many jobs queued on average. */
#define PT_HOT_MIN_DEPTH 0.5

/** The balance report.  pt_report_release() frees it. */
typedef struct pt_report {
    unsigned n;
    size_t samples, loaded_samples;   /* loaded: some routee had queued jobs */
    double t0_us, t1_us, duration_us; /* first sample .. end of the last */
    double last_weight_us;            /* what the last sample counted for */
    pt_routee_stats *routee;
    pt_imbalance all;                 /* time-weighted means over all samples */
    pt_imbalance loaded;              /* ... over loaded samples (all 0 if none) */
    int hot;                          /* hot routee, or -1 */
    int deepest, runner_up;           /* highest and second-highest mean depth, or -1 */
    double hot_ratio;                 /* deepest / runner_up mean depth; 0 if undefined */
    double window_us;
    size_t nwindows;
    pt_window *worst;                 /* nworst windows, worst first */
    size_t nworst;
    size_t buckets;                   /* chart series: columns over time */
    double *bucket_start_us;          /* buckets + 1 edges */
    double *bucket_depth;             /* buckets x n: routee i in column b at [b*n+i] */
    double bucket_depth_max;
} pt_report;

/**
 * Measure a trace.
 * @return 0, or -1 when it has no depth samples (err says so) or memory
 *         runs out.
 */
int pt_analyse(pt_report *out, const pt_trace *t, const pt_options *o, char *err, size_t errcap);

/** Free a report.  Accepts a zeroed one. */
void pt_report_release(pt_report *r);

#endif /* RP_PROFILE_TRACE_H */
