/* SPDX-License-Identifier: MIT */
/*
 * tools/profile_stats.c - the balance report of a trace: per-routee means,
 * imbalance per sample and per window, the hot routee, and the series the
 * charts draw.
 *
 * One sweep over the counter points in time order keeps every routee's
 * current depth and busy flag; at each distinct timestamp the state is one
 * sample, weighted by the time until the next sample.  Everything is
 * accumulated during that sweep (O(samples x routees) time, O(routees x
 * chart columns) memory), so no samples x routees matrix is ever built.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_trace.h"

typedef struct sweep {
    const pt_trace *t;
    const pt_options *o;
    pt_report *r;
    unsigned n;
    double *depth, *busy;         /* current values, n each */
    double *sum_depth, *sum_busy; /* time-weighted sums, n each */
    double total_w, loaded_w;
    pt_imbalance all, loaded;     /* time-weighted sums */
    double *win;                  /* the open window's weighted depths, n */
    double win_w;
    size_t win_idx, win_samples;
    pt_window *windows;
    size_t nwindows, capwindows;
    double *bucket_w;             /* weight per chart column */
} sweep;

void pt_options_init(pt_options *o)
{
    o->window_us = 10000.0;
    o->worst = 5;
    o->buckets = 600;
}

pt_imbalance pt_imbalance_of(const double *x, unsigned n)
{
    pt_imbalance imb = {1.0, 0.0, 1.0};
    double sum = 0, max = 0, sq = 0, dev = 0;

    for (unsigned i = 0; i < n; i++) {
        sum += x[i];
        sq += x[i] * x[i];
        max = x[i] > max ? x[i] : max;
    }
    if (n == 0 || sum <= 0)
        return imb; /* nothing queued anywhere: perfectly even */
    const double mean = sum / n;
    for (unsigned i = 0; i < n; i++)
        dev += (x[i] - mean) * (x[i] - mean);
    imb.max_over_mean = max / mean;
    imb.cv = sqrt(dev / n) / mean;
    imb.jain = sum * sum / ((double)n * sq);
    return imb;
}

/* ---- points in time order ---- */

static int by_time(const void *a, const void *b)
{
    const pt_point *p = a, *q = b;

    if (p->ts != q->ts)
        return p->ts < q->ts ? -1 : 1;
    return p->seq < q->seq ? -1 : p->seq > q->seq;
}

/* The points sorted by time: t's own array when it already is, else a
 * sorted copy in *copy (the caller frees it). */
static const pt_point *sorted_points(const pt_trace *t, pt_point **copy)
{
    *copy = NULL;
    for (size_t i = 1; i < t->npoints; i++) {
        if (by_time(&t->points[i - 1], &t->points[i]) <= 0)
            continue;
        if (!(*copy = malloc(t->npoints * sizeof **copy)))
            return NULL;
        memcpy(*copy, t->points, t->npoints * sizeof **copy);
        qsort(*copy, t->npoints, sizeof **copy, by_time);
        return *copy;
    }
    return t->points;
}

/* Distinct timestamps of the points (the samples), into *out. */
static size_t sample_times(const pt_point *p, size_t np, double **out)
{
    size_t m = 0;

    if (!(*out = malloc((np ? np : 1) * sizeof **out)))
        return 0;
    for (size_t i = 0; i < np; i++)
        if (m == 0 || p[i].ts != (*out)[m - 1])
            (*out)[m++] = p[i].ts;
    return m;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What the last sample counts for: the trace's interval, else the median
 * gap between samples, else 1 us. */
static double last_weight(const pt_trace *t, const double *ts, size_t m)
{
    double *gaps, w;

    if (t->interval_us > 0)
        return t->interval_us;
    if (m < 2 || !(gaps = malloc((m - 1) * sizeof *gaps)))
        return 1.0;
    for (size_t i = 0; i + 1 < m; i++)
        gaps[i] = ts[i + 1] - ts[i];
    qsort(gaps, m - 1, sizeof *gaps, cmp_double);
    w = gaps[(m - 1) / 2];
    free(gaps);
    return w > 0 ? w : 1.0;
}

/* ---- windows ---- */

static int close_window(sweep *s)
{
    const unsigned n = s->n;
    pt_window w = {0};

    if (s->win_samples == 0)
        return 0;
    if (s->nwindows == s->capwindows) {
        const size_t cap = s->capwindows ? s->capwindows * 2 : 64;
        pt_window *nw = realloc(s->windows, cap * sizeof *nw);
        if (!nw)
            return -1;
        s->windows = nw;
        s->capwindows = cap;
    }
    for (unsigned i = 0; i < n; i++) {
        s->win[i] /= s->win_w;
        w.mean_depth += s->win[i] / n;
        if (s->win[i] > w.deepest_depth) {
            w.deepest_depth = s->win[i];
            w.deepest = i;
        }
    }
    w.imb = pt_imbalance_of(s->win, n);
    w.start_us = s->r->t0_us + (double)s->win_idx * s->o->window_us;
    w.end_us = fmin(w.start_us + s->o->window_us, s->r->t1_us);
    w.samples = s->win_samples;
    s->windows[s->nwindows++] = w;
    memset(s->win, 0, n * sizeof *s->win);
    s->win_w = 0;
    s->win_samples = 0;
    return 0;
}

static int add_to_window(sweep *s, double ts, double w)
{
    const size_t idx = (size_t)((ts - s->r->t0_us) / s->o->window_us);

    if (idx != s->win_idx && close_window(s) < 0)
        return -1;
    s->win_idx = idx;
    for (unsigned i = 0; i < s->n; i++)
        s->win[i] += s->depth[i] * w;
    s->win_w += w;
    s->win_samples++;
    return 0;
}

/* ---- samples ---- */

static void add_imbalance(pt_imbalance *sum, const pt_imbalance *x, double w)
{
    sum->max_over_mean += x->max_over_mean * w;
    sum->cv += x->cv * w;
    sum->jain += x->jain * w;
}

static void add_to_bucket(sweep *s, double ts, double w)
{
    pt_report *r = s->r;
    size_t b = (size_t)((ts - r->t0_us) / r->duration_us * (double)r->buckets);

    b = b < r->buckets ? b : r->buckets - 1;
    for (unsigned i = 0; i < s->n; i++)
        r->bucket_depth[b * s->n + i] += s->depth[i] * w;
    s->bucket_w[b] += w;
}

/* The current state is one sample at ts, standing for w microseconds. */
static int emit(sweep *s, double ts, double w)
{
    pt_report *r = s->r;
    const pt_imbalance imb = pt_imbalance_of(s->depth, s->n);
    bool loaded = false;

    for (unsigned i = 0; i < s->n; i++) {
        s->sum_depth[i] += s->depth[i] * w;
        s->sum_busy[i] += s->busy[i] * w;
        if (s->depth[i] > r->routee[i].max_depth)
            r->routee[i].max_depth = s->depth[i];
        loaded = loaded || s->depth[i] > 0;
    }
    s->total_w += w;
    add_imbalance(&s->all, &imb, w);
    if (loaded) {
        add_imbalance(&s->loaded, &imb, w);
        s->loaded_w += w;
        r->loaded_samples++;
    }
    r->samples++;
    add_to_bucket(s, ts, w);
    return add_to_window(s, ts, w);
}

static int run_sweep(sweep *s, const pt_point *p, size_t np, const double *ts, size_t m)
{
    size_t k = 0;

    for (size_t j = 0; j < m; j++) {
        for (; k < np && p[k].ts == ts[j]; k++)
            (p[k].kind == PT_DEPTH ? s->depth : s->busy)[p[k].routee] = p[k].value;
        const double w = j + 1 < m ? ts[j + 1] - ts[j] : s->r->last_weight_us;
        if (emit(s, ts[j], w) < 0)
            return -1;
    }
    return close_window(s);
}

/* ---- results ---- */

static void finish_routees(sweep *s)
{
    const pt_trace *t = s->t;
    pt_report *r = s->r;

    /* Exact counts when every routee has its totals, else the estimates. */
    const bool exact = t->totals > 0 && t->totals == s->n;
    uint64_t all_run = 0;

    for (unsigned i = 0; exact && i < s->n; i++)
        all_run += t->ev[i].jobs_run;
    for (unsigned i = 0; i < s->n; i++) {
        pt_routee_stats *st = &r->routee[i];
        st->ev = t->ev[i];
        st->mean_depth = s->sum_depth[i] / s->total_w;
        st->utilisation = s->sum_busy[i] / s->total_w;
        st->jobs_exact = exact;
        if (exact) {
            st->jobs_run = st->ev.jobs_run;
            st->job_share = all_run ? (double)st->jobs_run / (double)all_run : 0.0;
            st->ev.stole = st->ev.total_stole;
            st->ev.stolen_from = st->ev.total_stolen_from;
        } else {
            st->jobs_run = st->ev.slices;
            st->job_share = t->slices ? (double)st->ev.slices / (double)t->slices : 0.0;
        }
        st->mean_wait_us = st->ev.slices ? st->ev.wait_us / (double)st->ev.slices : 0.0;
        st->mean_job_us = st->ev.slices ? st->ev.slice_us / (double)st->ev.slices : 0.0;
    }
    r->all = (pt_imbalance){s->all.max_over_mean / s->total_w, s->all.cv / s->total_w,
                            s->all.jain / s->total_w};
    if (s->loaded_w > 0)
        r->loaded = (pt_imbalance){s->loaded.max_over_mean / s->loaded_w,
                                   s->loaded.cv / s->loaded_w, s->loaded.jain / s->loaded_w};
}

static void find_hot(pt_report *r)
{
    r->hot = r->deepest = r->runner_up = -1;
    r->hot_ratio = 0;
    for (unsigned i = 0; i < r->n; i++) {
        const double d = r->routee[i].mean_depth;
        if (r->deepest < 0 || d > r->routee[r->deepest].mean_depth) {
            r->runner_up = r->deepest;
            r->deepest = (int)i;
        } else if (r->runner_up < 0 || d > r->routee[r->runner_up].mean_depth) {
            r->runner_up = (int)i;
        }
    }
    if (r->runner_up < 0)
        return; /* one routee: nothing to be hot against */
    const double top = r->routee[r->deepest].mean_depth;
    const double next = r->routee[r->runner_up].mean_depth;
    if (next > 0)
        r->hot_ratio = top / next;
    if (top >= PT_HOT_MIN_DEPTH && (next == 0 || top >= PT_HOT_FACTOR * next))
        r->hot = r->deepest;
}

/* Worse first: higher max/mean (equal within rounding), then more queued
 * work, then earlier. */
static int by_badness(const void *a, const void *b)
{
    const pt_window *x = a, *y = b;
    const double dx = x->imb.max_over_mean, dy = y->imb.max_over_mean;

    if (fabs(dx - dy) > 1e-9 * fmax(dx, dy))
        return dx > dy ? -1 : 1;
    if (x->mean_depth != y->mean_depth)
        return x->mean_depth > y->mean_depth ? -1 : 1;
    return x->start_us < y->start_us ? -1 : x->start_us > y->start_us;
}

/* The worst windows among those with a routee at least one job deep on
 * average (else among those with any queued work): a window where one job
 * waited a moment is not where the pool was imbalanced. */
static int find_worst(sweep *s)
{
    pt_report *r = s->r;
    size_t nc = 0;
    double floor_depth = 1.0;

    r->nwindows = s->nwindows;
    for (size_t i = 0; i < s->nwindows; i++)
        nc += s->windows[i].deepest_depth >= floor_depth;
    if (nc == 0) {
        floor_depth = 1e-12;
        for (size_t i = 0; i < s->nwindows; i++)
            nc += s->windows[i].deepest_depth >= floor_depth;
    }
    if (nc == 0)
        return 0;
    if (!(r->worst = malloc(nc * sizeof *r->worst)))
        return -1;
    nc = 0;
    for (size_t i = 0; i < s->nwindows; i++)
        if (s->windows[i].deepest_depth >= floor_depth)
            r->worst[nc++] = s->windows[i];
    qsort(r->worst, nc, sizeof *r->worst, by_badness);
    r->nworst = nc < s->o->worst ? nc : s->o->worst;
    return 0;
}

/* Column means; a column no sample fell in repeats the one before. */
static void finish_buckets(sweep *s)
{
    pt_report *r = s->r;
    const unsigned n = s->n;

    for (size_t b = 0; b < r->buckets; b++) {
        double *row = &r->bucket_depth[b * n];
        r->bucket_start_us[b] = r->t0_us + r->duration_us * (double)b / (double)r->buckets;
        for (unsigned i = 0; i < n; i++) {
            if (s->bucket_w[b] > 0)
                row[i] /= s->bucket_w[b];
            else if (b > 0)
                row[i] = r->bucket_depth[(b - 1) * n + i];
            r->bucket_depth_max = fmax(r->bucket_depth_max, row[i]);
        }
    }
    r->bucket_start_us[r->buckets] = r->t1_us;
}

/* ---- entry ---- */

static int setup(sweep *s, const pt_options *o, const double *ts, size_t m)
{
    pt_report *r = s->r;
    const unsigned n = s->n;

    r->n = n;
    r->window_us = o->window_us;
    r->last_weight_us = last_weight(s->t, ts, m);
    r->t0_us = ts[0];
    r->t1_us = ts[m - 1] + r->last_weight_us;
    r->duration_us = r->t1_us - r->t0_us;
    r->buckets = o->buckets < m ? o->buckets : m;
    if ((size_t)n * r->buckets > ((size_t)1 << 23))
        r->buckets = ((size_t)1 << 23) / n;
    r->routee = calloc(n, sizeof *r->routee);
    r->bucket_start_us = calloc(r->buckets + 1, sizeof *r->bucket_start_us);
    r->bucket_depth = calloc((size_t)n * r->buckets, sizeof *r->bucket_depth);
    s->bucket_w = calloc(r->buckets, sizeof *s->bucket_w);
    s->depth = calloc((size_t)n * 6, sizeof *s->depth);
    if (!r->routee || !r->bucket_start_us || !r->bucket_depth || !s->bucket_w || !s->depth)
        return -1;
    s->busy = s->depth + n;
    s->sum_depth = s->busy + n;
    s->sum_busy = s->sum_depth + n;
    s->win = s->sum_busy + n;
    return 0;
}

static size_t count_depth_points(const pt_trace *t)
{
    size_t c = 0;

    for (size_t i = 0; i < t->npoints; i++)
        c += t->points[i].kind == PT_DEPTH;
    return c;
}

int pt_analyse(pt_report *out, const pt_trace *t, const pt_options *o, char *err, size_t errcap)
{
    sweep s = {.t = t, .o = o, .r = out, .n = t->n};
    pt_point *copy = NULL;
    const pt_point *p = NULL;
    double *ts = NULL;
    size_t m = 0;
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (count_depth_points(t) == 0) {
        snprintf(err, errcap, "no depth samples (no \"depth r<i>\" counter events)");
        return -1;
    }
    if ((p = sorted_points(t, &copy)) && (m = sample_times(p, t->npoints, &ts)) > 0 &&
        setup(&s, o, ts, m) == 0 && run_sweep(&s, p, t->npoints, ts, m) == 0 &&
        find_worst(&s) == 0) {
        finish_routees(&s);
        find_hot(out);
        finish_buckets(&s);
        rc = 0;
    }
    if (rc < 0) {
        snprintf(err, errcap, "out of memory");
        pt_report_release(out);
    }
    free(copy);
    free(ts);
    free(s.depth);
    free(s.windows);
    free(s.bucket_w);
    return rc;
}

void pt_report_release(pt_report *r)
{
    free(r->routee);
    free(r->worst);
    free(r->bucket_start_us);
    free(r->bucket_depth);
    memset(r, 0, sizeof *r);
}
