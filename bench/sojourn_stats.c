/* SPDX-License-Identifier: MIT */
/*
 * bench/sojourn_stats.c - rp-bench-sojourn's statistics: per run (sojourn percentiles
 * from the scheduled arrival, service, stalls, generator lateness, dispatch
 * delay), over runs (medians of a cell, medians of the per-run ratios to the
 * central queue of the same repetition, the queueing models' means), and
 * the per-run event lists --json writes (interrupted jobs, late submits,
 * late wake-ups; each list bounded, marked truncated when full).
 */
#include <stdlib.h>
#include <string.h>

#include "sojourn.h"

/* ---- one run ---- */

/* Lateness percentiles of the generator over the measured jobs. */
static void late_stats(double *st, const workload *w, const buffers *b, size_t warm)
{
    size_t m = w->n - warm;

    memcpy(b->scratch, b->late + warm, m * sizeof *b->scratch);
    bench_sort_i64(b->scratch, m);
    st[S_LATE50] = (double)bench_pct_sorted(b->scratch, m, 0.50) / 1e3;
    st[S_LATE99] = (double)bench_pct_sorted(b->scratch, m, 0.99) / 1e3;
}

static const job *order_jobs; /* qsort context of by_worker_start() */

static int by_worker_start(const void *a, const void *b)
{
    const job *x = &order_jobs[*(const size_t *)a], *y = &order_jobs[*(const size_t *)b];

    if (x->worker != y->worker)
        return x->worker < y->worker ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

/*
 * The handover's median split by whether the worker submitted arrivals in
 * the gap (its hook, at the previous job's end): S_HAND0, S_HAND1.  subs:
 * the submit times of each worker's hook submits, sorted; h[0], h[1]: the
 * handovers without and with one.
 */
typedef struct hand_split {
    int64_t *subs[ROUTEES];
    size_t nsubs[ROUTEES];
    int64_t *h[2];
    size_t n[2];
} hand_split;

static bool split_init(hand_split *hs, const workload *w, const buffers *b, int64_t t0)
{
    size_t cap = w->n ? w->n : 1;
    bool ok = true;

    memset(hs, 0, sizeof *hs);
    for (int k = 0; k < (int)ROUTEES; k++)
        ok = (hs->subs[k] = malloc(cap * sizeof *hs->subs[k])) != NULL && ok;
    for (int x = 0; x < 2; x++)
        ok = (hs->h[x] = malloc(cap * sizeof *hs->h[x])) != NULL && ok;
    if (!ok)
        return false;
    for (size_t i = 0; i < w->n; i++) {
        int k = b->by_routee[i] - 1;
        if (k >= 0 && k < (int)ROUTEES)
            hs->subs[k][hs->nsubs[k]++] = t0 + w->offset[i] + b->late[i];
    }
    for (int k = 0; k < (int)ROUTEES; k++)
        bench_sort_i64(hs->subs[k], hs->nsubs[k]);
    return true;
}

/* A handover on worker k from lo (the previous job's end) to hi (the
 * start): into h[1] when k submitted anything in [lo, hi], else h[0]. */
static void split_note(hand_split *hs, int k, int64_t lo, int64_t hi)
{
    const int64_t *v = hs->subs[k];
    size_t a = 0, b = hs->nsubs[k];
    int made;

    while (a < b) { /* the first submit at or after lo */
        size_t mid = a + (b - a) / 2;
        if (v[mid] < lo)
            a = mid + 1;
        else
            b = mid;
    }
    made = a < hs->nsubs[k] && v[a] <= hi;
    hs->h[made][hs->n[made]++] = hi - lo;
}

static void split_finish(hand_split *hs, bool ok, double *st)
{
    for (int x = 0; x < 2; x++) {
        st[x ? S_HAND1 : S_HAND0] = 0;
        if (ok && hs->n[x]) {
            bench_sort_i64(hs->h[x], hs->n[x]);
            st[x ? S_HAND1 : S_HAND0] = (double)bench_pct_sorted(hs->h[x], hs->n[x], 0.50);
        }
        free(hs->h[x]);
    }
    for (int k = 0; k < (int)ROUTEES; k++)
        free(hs->subs[k]);
}

/*
 * Dispatch delay of a job: its start minus the later of its submission and
 * the end of the previous job on the same worker - the time it could have
 * been running but was not.  For a job that finds its worker asleep this is
 * the wake-up; for a queued one, the hand-over; for a stolen one, the time
 * until a thief found it.
 */
static void dispatch_stats(double *st, const workload *w, const buffers *b, int64_t t0,
                           size_t warm)
{
    int64_t prev_done[ROUTEES];
    size_t m = 0, handed = 0;
    double sum = 0, hand = 0;
    hand_split hs;
    bool split_ok = split_init(&hs, w, b, t0);

    for (size_t i = 0; i < w->n; i++)
        b->order[i] = i;
    order_jobs = b->jobs;
    qsort(b->order, w->n, sizeof *b->order, by_worker_start);
    for (size_t k = 0; k < ROUTEES; k++)
        prev_done[k] = INT64_MIN;
    for (size_t k = 0; k < w->n; k++) {
        size_t i = b->order[k];
        const job *j = &b->jobs[i];
        int64_t submit = t0 + w->offset[i] + b->late[i], ready;
        if (j->worker < 0 || j->worker >= (int)ROUTEES)
            continue;
        ready = submit > prev_done[j->worker] ? submit : prev_done[j->worker];
        b->idle_wait[i] = submit > prev_done[j->worker] ? j->start - submit : 0;
        if (i >= warm && submit <= prev_done[j->worker]) {
            hand += (double)(j->start - prev_done[j->worker]);
            handed++;
            if (split_ok)
                split_note(&hs, j->worker, prev_done[j->worker], j->start);
        }
        prev_done[j->worker] = j->done;
        if (i >= warm)
            sum += (double)(b->scratch[m++] = j->start - ready);
    }
    st[S_HAND] = handed ? hand / (double)handed / 1e3 : 0;
    split_finish(&hs, split_ok, st);
    bench_sort_i64(b->scratch, m);
    st[S_DISP] = m ? sum / (double)m / 1e3 : 0;
    st[S_DISP99] = (double)bench_pct_sorted(b->scratch, m, 0.99) / 1e3;
}

/* Events of the idle-while-waiting sweep, (time - t0) * 4 + kind: kinds in
 * this order so that at one instant a job is submitted before it starts. */
enum { EV_SUBMIT, EV_START, EV_DONE };

/*
 * The share of the workers' time, from the first measured arrival on, in
 * which a worker was idle while a submitted job had not started: the
 * capacity a scheduler loses to wake-ups, hand-overs and work it cannot
 * see behind a busy worker (a central queue loses only the first two).
 * Near saturation each point of it moves the tail by several percent:
 * docs/performance.md, "What the tail at 0.8-0.9 is made of".
 */
static void idle_with_work(double *st, const workload *w, const buffers *b, int64_t t0,
                           size_t warm)
{
    int64_t from = w->offset[warm], prev = from, end = from;
    size_t k = 0;
    long waiting = 0, busy = 0;
    double lost = 0;

    for (size_t i = 0; i < w->n; i++) {
        const job *j = &b->jobs[i];
        if (j->worker < 0)
            continue; /* never ran (a run that failed): not counted */
        b->events[k++] = (w->offset[i] + b->late[i]) * 4 + EV_SUBMIT;
        b->events[k++] = (j->start - t0) * 4 + EV_START;
        b->events[k++] = (j->done - t0) * 4 + EV_DONE;
    }
    bench_sort_i64(b->events, k);
    for (size_t e = 0; e < k; e++) {
        int64_t t = b->events[e] >> 2;
        long idle = (long)ROUTEES - busy;
        if (t > prev && t > from) {
            int64_t dt = t - (prev > from ? prev : from);
            lost += (double)(waiting < idle ? waiting : idle) * (double)dt;
        }
        prev = t;
        end = t > end ? t : end;
        switch (b->events[e] & 3) {
        case EV_SUBMIT: waiting++; break;
        case EV_START: waiting--, busy++; break;
        default: busy--; break;
        }
    }
    st[S_IDLEW] = end > from ? lost / ((double)ROUTEES * (double)(end - from)) : 0;
}

/* --time-submits: mean and p90 of the submits routees made (in a job). */
static void routee_submits(double *st, const workload *w, const buffers *b, size_t warm)
{
    size_t m = 0;
    double sum = 0;

    for (size_t i = warm; i < w->n; i++)
        if (b->by_routee[i])
            sum += (double)(b->scratch[m++] = b->submit_ns[i]);
    bench_sort_i64(b->scratch, m);
    st[S_SUBR] = m ? sum / (double)m : 0;
    st[S_SUBR90] = m ? (double)bench_pct_sorted(b->scratch, m, 0.90) : 0;
}

void run_stats(double *st, const config *cfg, const workload *w,
                      const buffers *b, int64_t t0)
{
    size_t warm = cfg->warmup, m = w->n - warm;
    double sum = 0, svc = 0, stall = 0;
    int64_t last_done = 0, stall_max = 0;

    for (size_t i = warm; i < w->n; i++) {
        const job *j = &b->jobs[i];
        int64_t soj = j->done - (t0 + w->offset[i]);
        /* A job that took 20 us more than its CPU cost was interrupted. */
        int64_t extra = j->done - j->start - (int64_t)((w->is_long[i] ? LONG_US : SHORT_US) * 1e3);
        b->scratch[i - warm] = soj;
        sum += (double)soj;
        svc += (double)(j->done - j->start);
        stall += extra > STALL_NS ? (double)extra : 0;
        stall_max = extra > stall_max ? extra : stall_max;
        last_done = j->done > last_done ? j->done : last_done;
    }
    st[S_STALL] = 1000 * stall / (ROUTEES * (double)(last_done - (t0 + w->offset[warm])));
    st[S_STALLMAX] = (double)stall_max / 1e3;
    st[S_MEAN] = sum / (double)m / 1e3;
    st[S_SVC] = svc / (double)m / 1e3;
    st[S_UTIL] = svc / (ROUTEES * (double)(last_done - (t0 + w->offset[warm])));
    bench_sort_i64(b->scratch, m);
    st[S_P50] = (double)bench_pct_sorted(b->scratch, m, 0.50) / 1e3;
    st[S_P99] = (double)bench_pct_sorted(b->scratch, m, 0.99) / 1e3;
    st[S_P999] = (double)bench_pct_sorted(b->scratch, m, 0.999) / 1e3;
    late_stats(st, w, b, warm);
    dispatch_stats(st, w, b, t0, warm);
    idle_with_work(st, w, b, t0, warm);
    st[S_SUBR] = st[S_SUBR90] = 0;
    if (cfg->time_submits)
        routee_submits(st, w, b, warm);
}

/* ---- over runs ---- */

double median_of(table t, int li, enum variant v, int reps, enum stat s)
{
    double x[MAX_REPS];

    for (int r = 0; r < reps; r++)
        x[r] = t[li][v][r][s];
    return bench_median(x, (size_t)reps);
}

double median_stat(int li, enum variant v, int reps, enum stat s)
{
    return median_of(results, li, v, reps, s);
}

/* Median (and range) of the per-run ratios to the central queue. */
double ratio_of(table t, int li, enum variant v, int reps, enum stat s,
                       double *lo, double *hi)
{
    double x[MAX_REPS], med;

    for (int r = 0; r < reps; r++)
        x[r] = t[li][v][r][s] / t[li][V_CENTRAL][r][s];
    med = bench_median(x, (size_t)reps); /* sorts x */

    if (lo)
        *lo = x[0];
    if (hi)
        *hi = x[reps - 1];
    return med;
}

double ratio_stat(int li, enum variant v, int reps, enum stat s, double *lo, double *hi)
{
    return ratio_of(results, li, v, reps, s, lo, hi);
}

/* Mean sojourn anchors, in us: M/G/1 per routee (Pollaczek-Khinchine, exact
 * for random routing) and M/G/2 central (Lee-Longton approximation). */
void model_means(double load, double *mg1, double *mg2)
{
    double es = MEAN_US;
    double es2 = (1 - LONG_SHARE) * SHORT_US * SHORT_US + LONG_SHARE * LONG_US * LONG_US;
    double c2 = es2 / (es * es) - 1;
    double pwait = 2 * load * load / (1 + load); /* Erlang C, k = 2 */

    *mg1 = load * es2 / (2 * es * (1 - load)) + es;
    *mg2 = (1 + c2) / 2 * pwait * es / (2 * (1 - load)) + es;
}

/* ---- event lists ---- */

/* Append (job at, ns) to l; false when l is full (then it is truncated). */
static bool list_add(stall_list *l, size_t at, int64_t ns)
{
    if (l->n == l->max) {
        l->truncated = true;
        return false;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        uint32_t *idx = realloc(l->job, cap * sizeof *idx);
        float *ex = idx ? realloc(l->extra_us, cap * sizeof *ex) : NULL;

        if (idx)
            l->job = idx;
        if (!ex) {
            fprintf(stderr, "rp-bench-sojourn: out of memory\n");
            exit(1);
        }
        l->extra_us = ex;
        l->cap = cap;
    }
    l->job[l->n] = (uint32_t)at;
    l->extra_us[l->n++] = (float)((double)ns / 1e3);
    return true;
}

/* The run's interruptions into *l (replacing what it held). */
void record_stalls(stall_list *l, const workload *w, const buffers *b)
{
    *l = (stall_list){.job = l->job, .extra_us = l->extra_us, .cap = l->cap,
                      .max = STALL_MAX_EVENTS};
    for (size_t i = 0; i < w->n; i++) {
        const job *j = &b->jobs[i];
        int64_t extra = j->done - j->start - (int64_t)((w->is_long[i] ? LONG_US : SHORT_US) * 1e3);
        if (extra > STALL_NS && !list_add(l, i, extra))
            break;
    }
}

/* The run's late wake-ups into *l. */
void record_wakes(stall_list *l, const workload *w, const buffers *b)
{
    *l = (stall_list){.job = l->job, .extra_us = l->extra_us, .cap = l->cap,
                      .max = WAKE_MAX_EVENTS};
    for (size_t i = 0; i < w->n; i++)
        if (b->idle_wait[i] > WAKE_NS && !list_add(l, i, b->idle_wait[i]))
            break;
}

/* The run's late generator submissions into *l, the mean of the
 * generators' others into *base. */
void record_lates(stall_list *l, double *base, const workload *w, const buffers *b)
{
    double sum = 0;
    size_t n = 0;

    *l = (stall_list){.job = l->job, .extra_us = l->extra_us, .cap = l->cap,
                      .max = LATE_MAX_EVENTS};
    for (size_t i = 0; i < w->n; i++) {
        if (b->by_routee[i])
            continue;
        if (b->late[i] <= LATE_NS || !list_add(l, i, b->late[i])) {
            sum += (double)(b->late[i] > 0 ? b->late[i] : 0);
            n++;
        }
    }
    *base = n ? sum / (double)n / 1e3 : 0;
}
