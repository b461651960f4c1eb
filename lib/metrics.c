/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - snapshots and the Prometheus text exposition.
 *
 * Every family is defined once: the per-routee scalars in
 * RP_ROUTEE_METRICS (routepool/metrics.h), which generates the snapshot
 * fields, the reads below and the exposition; the labelled counters, the
 * histograms and the pool-level families in the tables of this file.
 * Nothing here takes a lock on a job path: reads are relaxed loads of
 * per-routee counters ("finished" counters before "accepted" ones, see the
 * header).  Only the pool's list of scatter-gather routers is read under
 * its mutex.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "pool_record.h"
#include "routee_record.h"
#include "scatter.h"
#include "trace.h"

const double rp_metrics_depth_bounds[RP_DEPTH_BUCKETS - 1] = {
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};

const double rp_metrics_wait_bounds[RP_WAIT_BUCKETS - 1] = {
    1e-6,  2.5e-6, 5e-6,  1e-5,  2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
    5e-3,  1e-2,   2.5e-2, 5e-2, 0.1,    0.25, 0.5,  1,      2.5,  5,    10};

#define RP__REASON_CODE(code, label) code,
#define RP__REASON_LABEL(code, label) label,
const int rp_metrics_reason_codes[RP_METRICS_REASONS] = {RP_HANDBACK_REASONS(RP__REASON_CODE)};
const char *const rp_metrics_reason_labels[RP_METRICS_REASONS] = {
    RP_HANDBACK_REASONS(RP__REASON_LABEL)};

static uint64_t load(const _Atomic uint64_t *v)
{
    return atomic_load_explicit((_Atomic uint64_t *)v, memory_order_relaxed);
}

/* Busy time including the running period, read under the routee's
 * seqlock (written in worker.c set_busy()). */
static double busy_seconds(const rp_routee *cr)
{
    rp_routee *r = (rp_routee *)cr;
    uint32_t s1, s2;
    uint64_t ns;
    int64_t since, now;

    do {
        s1 = atomic_load_explicit(&r->busy_seq, memory_order_acquire);
        ns = atomic_load_explicit(&r->busy_ns, memory_order_acquire);
        since = atomic_load_explicit(&r->busy_since, memory_order_acquire);
        now = rp__now_ns(); /* inside the section: see set_busy() */
        s2 = atomic_load_explicit(&r->busy_seq, memory_order_seq_cst);
    } while ((s1 & 1) || s1 != s2);
    if (since && now > since)
        ns += (uint64_t)(now - since);
    return (double)ns / 1e9;
}

/* The counters that grow when a job finishes (run, handed back, moved). */
static void read_finished(const rp_routee *r, rp_routee_metrics *m)
{
    const rp__mailbox *mb = &r->mb;

    m->run = atomic_load_explicit((_Atomic uint64_t *)&r->run, memory_order_acquire);
    for (int i = 0; i < RP_METRICS_REASONS; i++)
        m->handed_back[i] = load(&mb->by_reason[i]);
    m->rerouted = load(&r->rerouted);
    m->stole = load(&r->stole);
    m->sleeps = load(&r->sleeps);
    m->stolen_from = load(&mb->stolen_from);
}

/* Everything else; after read_finished() of every routee (see header). */
static void read_accepted(const rp_routee *r, rp_routee_metrics *m)
{
    const rp__mailbox *mb = &r->mb;

    m->rejected = load(&mb->rejected);
    m->enqueued = rp__mailbox_enqueued(mb);
    m->depth = (uint64_t)rp__mailbox_depth(mb);
    m->busy = (uint64_t)atomic_load_explicit((_Atomic int *)&r->busy, memory_order_relaxed);
    m->busy_seconds = busy_seconds(r);
    /* The count is the buckets' total (enqueues add to a bucket and the
     * sum, not to a count of their own). */
    m->depth_count = 0;
    for (int b = 0; b < RP_DEPTH_BUCKETS; b++)
        m->depth_count += m->depth_buckets[b] = load(&mb->depth_hist[b]);
    m->depth_sum = load(&mb->depth_sum);
    for (int b = 0; b < RP_WAIT_BUCKETS; b++)
        m->wait_buckets[b] = load(&r->wait_hist[b]);
    m->wait_sum_seconds = (double)load(&r->wait_sum_ns) / 1e9;
    m->wait_count = load(&r->wait_count);
}

int rp_metrics_snapshot(rp_pool *pool, rp_metrics *out)
{
    if (!pool || !out)
        return rp__fail(RP_EINVAL, "rp_metrics_snapshot: %s is NULL", pool ? "out" : "pool");
    memset(out, 0, sizeof *out);
    if (!(out->routee = calloc(pool->n, sizeof *out->routee)))
        return rp__fail(RP_ENOMEM, "rp_metrics_snapshot: out of memory");
    out->routees = pool->n;
    for (unsigned i = 0; i < pool->n; i++)
        read_finished(&pool->routees[i], &out->routee[i]);
    for (unsigned i = 0; i < pool->n; i++) {
        read_accepted(&pool->routees[i], &out->routee[i]);
        /* A re-routed job was enqueued twice (here and where it went). */
        out->submitted += out->routee[i].enqueued +
                          out->routee[i].handed_back[rp__reason_slot(RP_EDROPPED)] -
                          out->routee[i].rerouted;
    }
    out->memory_bytes = rp__arena_allocated(&pool->arena);
    rp__sg_registry_stats(pool->sgs, &out->scatter);
    return 0;
}

void rp_metrics_release(rp_metrics *m)
{
    if (!m)
        return;
    free(m->routee);
    m->routee = NULL;
}

/* ---- exposition ----
 *
 * A page is written family by family: each family's HELP and TYPE once,
 * then its samples for every pool in the order given, so one page holds
 * any number of pools (every sample carries pool="<name>").  Snapshots of
 * every pool are taken first; the extra writer runs last, with no lock
 * held. */

typedef struct page {
    FILE *f;
    rp_pool *const *pools;
    const rp_metrics *m; /* one snapshot per pool */
    size_t n;
} page;

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values: pool names are user text (see rp__text_write()). */
static void labels(FILE *f, const char *pool, long routee, const char *extra_name,
                   const char *extra)
{
    fputs("{pool=\"", f);
    rp__text_write(f, pool, RP__TEXT_PROM);
    fputc('"', f);
    if (routee >= 0)
        fprintf(f, ",routee=\"%ld\"", routee);
    if (extra_name)
        fprintf(f, ",%s=\"%s\"", extra_name, extra);
    fputc('}', f);
}

static void scalars(const page *pg)
{
    FILE *f = pg->f;

#define RP__WRITE_SCALAR(fld, typ, nm, hlp)                                           \
    family(f, nm, typ == RP_METRIC_GAUGE ? "gauge" : "counter", hlp);                 \
    for (size_t p = 0; p < pg->n; p++)                                                \
        for (size_t i = 0; i < pg->m[p].routees; i++) {                               \
            fputs(nm, f);                                                             \
            labels(f, pg->pools[p]->name, (long)i, NULL, NULL);                       \
            fprintf(f, " %llu\n", (unsigned long long)pg->m[p].routee[i].fld);       \
        }
    RP_ROUTEE_METRICS(RP__WRITE_SCALAR)
#undef RP__WRITE_SCALAR
    family(f, "routepool_routee_busy_seconds_total", "counter",
           "Seconds the routee spent running jobs.");
    for (size_t p = 0; p < pg->n; p++)
        for (size_t i = 0; i < pg->m[p].routees; i++) {
            fputs("routepool_routee_busy_seconds_total", f);
            labels(f, pg->pools[p]->name, (long)i, NULL, NULL);
            fprintf(f, " %.9f\n", pg->m[p].routee[i].busy_seconds);
        }
}

static void by_reason_of(const page *pg, size_t p, const char *name, bool drops_only)
{
    const rp_metrics *m = &pg->m[p];

    for (size_t i = 0; i < m->routees; i++) {
        for (int k = 0; k < RP_METRICS_REASONS; k++) {
            int code = rp_metrics_reason_codes[k];
            if (drops_only && code != RP_EDROPPED && code != RP_EEVICTED)
                continue;
            fputs(name, pg->f);
            labels(pg->f, pg->pools[p]->name, (long)i, "reason", rp_metrics_reason_labels[k]);
            fprintf(pg->f, " %llu\n", (unsigned long long)m->routee[i].handed_back[k]);
        }
    }
}

static void by_reason(const page *pg, bool drops_only)
{
    const char *name = drops_only ? "routepool_routee_dropped_total"
                                  : "routepool_routee_handed_back_total";

    family(pg->f, name, "counter",
           drops_only ? "Jobs the bounded mailbox dropped on overflow, by policy."
                      : "Jobs handed back to on_undelivered instead of running, by reason.");
    for (size_t p = 0; p < pg->n; p++)
        by_reason_of(pg, p, name, drops_only);
}

/* One histogram series: cumulative buckets ending in +Inf, _sum, _count. */
static void histogram(FILE *f, const char *name, const char *pool, long routee,
                      const double *bounds, const uint64_t *buckets, int nb, double sum)
{
    uint64_t cum = 0;
    char le[32];

    for (int b = 0; b < nb; b++) {
        cum += buckets[b];
        if (b < nb - 1)
            snprintf(le, sizeof le, "%g", bounds[b]);
        else
            snprintf(le, sizeof le, "+Inf");
        fprintf(f, "%s_bucket", name);
        labels(f, pool, routee, "le", le);
        fprintf(f, " %llu\n", (unsigned long long)cum);
    }
    fprintf(f, "%s_sum", name);
    labels(f, pool, routee, NULL, NULL);
    fprintf(f, " %.17g\n", sum);
    /* The +Inf bucket and _count must agree: both are the bucket total. */
    fprintf(f, "%s_count", name);
    labels(f, pool, routee, NULL, NULL);
    fprintf(f, " %llu\n", (unsigned long long)cum);
}

static void histograms(const page *pg)
{
    FILE *f = pg->f;

    family(f, RP_METRICS_QUEUED_AT_ENQUEUE, "histogram",
           "Jobs already queued on the routee when a job was enqueued. Sampled: one "
           "enqueue in 16 is observed, so _count counts observed enqueues, not jobs.");
    for (size_t p = 0; p < pg->n; p++)
        for (size_t i = 0; i < pg->m[p].routees; i++) {
            const rp_routee_metrics *rm = &pg->m[p].routee[i];
            histogram(f, RP_METRICS_QUEUED_AT_ENQUEUE, pg->pools[p]->name, (long)i,
                      rp_metrics_depth_bounds, rm->depth_buckets, RP_DEPTH_BUCKETS,
                      (double)rm->depth_sum);
        }
    family(f, "routepool_routee_queue_wait_seconds", "histogram",
           "Time from enqueue to start. Sampled: one job in 16 is observed, so _count "
           "counts observed jobs, not jobs run.");
    for (size_t p = 0; p < pg->n; p++)
        for (size_t i = 0; i < pg->m[p].routees; i++) {
            const rp_routee_metrics *rm = &pg->m[p].routee[i];
            histogram(f, "routepool_routee_queue_wait_seconds", pg->pools[p]->name, (long)i,
                      rp_metrics_wait_bounds, rm->wait_buckets, RP_WAIT_BUCKETS,
                      rm->wait_sum_seconds);
        }
}

/* A pool-level family: one sample per pool, the field at offset. */
static void pool_family(const page *pg, const char *name, const char *type, const char *help,
                        size_t offset)
{
    family(pg->f, name, type, help);
    for (size_t p = 0; p < pg->n; p++) {
        fputs(name, pg->f);
        labels(pg->f, pg->pools[p]->name, -1, NULL, NULL);
        fprintf(pg->f, " %llu\n",
                (unsigned long long)*(const uint64_t *)((const char *)&pg->m[p] + offset));
    }
}

static void pool_level(const page *pg)
{
    pool_family(pg, "routepool_pool_routees", "gauge", "Routees (threads) in the pool.",
                offsetof(rp_metrics, routees));
    pool_family(pg, "routepool_pool_submitted_total", "counter",
                "Jobs the pool's mailboxes accepted (queued, or dropped under drop-new).",
                offsetof(rp_metrics, submitted));
    pool_family(pg, "routepool_pool_memory_bytes", "gauge",
                "Bytes allocated in the pool's private jemalloc arena; 0 when the program runs without jemalloc.",
                offsetof(rp_metrics, memory_bytes));
}

static void scatter(const page *pg)
{
    FILE *f = pg->f;

    family(f, "router_scatter_gather_resolved_total", "counter",
           "Scatters resolved, by outcome.");
    for (size_t p = 0; p < pg->n; p++)
        for (int o = 0; o < RP_SCATTER_OUTCOMES; o++) {
            fputs("router_scatter_gather_resolved_total", f);
            labels(f, pg->pools[p]->name, -1, "outcome", rp_scatter_outcome_name(o));
            fprintf(f, " %llu\n", (unsigned long long)pg->m[p].scatter.resolved[o]);
        }
    family(f, "router_scatter_gather_latency_seconds", "histogram",
           "Time from scattering to answering the caller.");
    for (size_t p = 0; p < pg->n; p++)
        histogram(f, "router_scatter_gather_latency_seconds", pg->pools[p]->name, -1,
                  rp_scatter_latency_bounds, pg->m[p].scatter.latency_buckets,
                  RP_SCATTER_LATENCY_BUCKETS + 1, pg->m[p].scatter.latency_sum_seconds);
}

/* Each pool once and by a name of its own: two pools with one name would
 * write the same series twice. */
static int check_pools(const char *func, rp_pool *const *pools, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!pools[i])
            return rp__fail(RP_EINVAL, "%s: pools[%zu] is NULL", func, i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(pools[i]->name, pools[j]->name) == 0)
                return rp__fail(RP_EINVAL, "%s: pools[%zu] and pools[%zu] are both named %s",
                                func, j, i, pools[i]->name);
    }
    return 0;
}

static int snapshot_all(const char *func, rp_pool *const *pools, size_t n, rp_metrics **out)
{
    rp_metrics *m = calloc(n ? n : 1, sizeof *m);
    int rc = 0;

    if (!m)
        return rp__fail(RP_ENOMEM, "%s: out of memory", func);
    for (size_t i = 0; i < n && rc == 0; i++)
        if ((rc = rp_metrics_snapshot(pools[i], &m[i])) < 0)
            rp__fail(rc, "%s: out of memory", func);
    if (rc < 0) {
        for (size_t i = 0; i < n; i++)
            rp_metrics_release(&m[i]);
        free(m);
        return rc;
    }
    *out = m;
    return 0;
}

static int write_page(const char *func, FILE *f, rp_pool *const *pools, size_t n,
                      rp_metrics_writer_fn extra, void *user)
{
    rp_metrics *m = NULL;
    int rc;

    if (!f || (!pools && n))
        return rp__fail(RP_EINVAL, "%s: %s is NULL", func, f ? "pools" : "f");
    if ((rc = check_pools(func, pools, n)) < 0 || (rc = snapshot_all(func, pools, n, &m)) < 0)
        return rc;
    if (n) {
        const page pg = {f, pools, m, n};
        pool_level(&pg);
        scalars(&pg);
        by_reason(&pg, true);
        by_reason(&pg, false);
        histograms(&pg);
        scatter(&pg);
    }
    for (size_t i = 0; i < n; i++)
        rp_metrics_release(&m[i]);
    free(m);
    if (extra && (rc = extra(f, user)) < 0)
        return rp__fail(rc, "%s: the extra writer failed (%s)", func, rp_err_name(rc));
    if (ferror(f))
        return rp__fail(RP_ESYS, "%s: write error", func);
    return 0;
}

int rp_metrics_write_page(FILE *f, rp_pool *const *pools, size_t npools,
                          rp_metrics_writer_fn extra, void *user)
{
    return write_page("rp_metrics_write_page", f, pools, npools, extra, user);
}

int rp_metrics_write_prometheus(rp_pool *pool, FILE *f)
{
    if (!pool)
        return rp__fail(RP_EINVAL, "rp_metrics_write_prometheus: pool is NULL");
    return write_page("rp_metrics_write_prometheus", f, &pool, 1, NULL, NULL);
}

/* The text a writer puts on a stream, in a malloc'd buffer. */
static int format(const char *func, char **out, size_t *len, rp_pool *const *pools, size_t n,
                  rp_metrics_writer_fn extra, void *user)
{
    size_t size = 0;
    FILE *f;
    int rc;

    if (!out)
        return rp__fail(RP_EINVAL, "%s: out is NULL", func);
    *out = NULL;
    if (!(f = open_memstream(out, &size)))
        return rp__fail(RP_ENOMEM, "%s: out of memory", func);
    rc = write_page(func, f, pools, n, extra, user);
    if (fclose(f) != 0 && rc == 0)
        rc = rp__fail(RP_ENOMEM, "%s: out of memory", func);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        return rc;
    }
    if (len)
        *len = size;
    return 0;
}

int rp_metrics_format_page(char **out, size_t *len, rp_pool *const *pools, size_t npools,
                           rp_metrics_writer_fn extra, void *user)
{
    return format("rp_metrics_format_page", out, len, pools, npools, extra, user);
}

int rp_metrics_format_prometheus(rp_pool *pool, char **out, size_t *len)
{
    if (!out)
        return rp__fail(RP_EINVAL, "rp_metrics_format_prometheus: out is NULL");
    if (!pool) {
        *out = NULL;
        return rp__fail(RP_EINVAL, "rp_metrics_format_prometheus: pool is NULL");
    }
    return format("rp_metrics_format_prometheus", out, len, &pool, 1, NULL, NULL);
}
