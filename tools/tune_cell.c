/* SPDX-License-Identifier: MIT */
/*
 * tools/tune_cell.c - one rp-tune cell: a fresh pool of one size with one
 * router, driven for a warm-up and then a measured window.
 *
 * Closed loop: a fixed number of clients each have one job in flight; a job
 * that finishes before the window ends submits its client's next job from
 * the routee it ran on (jobs may submit, pool.h).  Nothing else runs, so
 * this is the pool's highest throughput with that many jobs in flight.
 *
 * Open loop: Poisson arrivals drawn up front (one seed: every cell sees the
 * same arrivals and costs).  Each job's sojourn is measured from its
 * *scheduled* arrival, so a submitter that falls behind is charged to the
 * cell, never hidden.  Arrivals are submitted by whoever is on a CPU when
 * they fall due: generator threads at SCHED_IDLE, which run only on a CPU
 * no routee wants (so they do not take CPU from the pool they measure), and
 * every routee as it finishes a job.  One generator per CPU (up to
 * GENERATORS_MAX), each pinned: a single one, preempted by the routee it
 * just woke, waits on that CPU while another idles (docs/performance.md
 * measured 10% of such arrivals over 60 us late).  Each arrival is claimed
 * once by a compare-and-swap on `next`.  A routee submits at most
 * PUMP_ROUTEE_MAX arrivals after each job: under overload an uncapped
 * routee would spend its time submitting the backlog instead of running
 * it, and the table would measure the generator, not the pool.  What is
 * left unclaimed when the window is over and the drain limit passes is
 * claimed at once by the driving thread and charged like an aborted job
 * (unfinished, its wait so far in the percentiles).
 *
 * Accounting is per routee and single-writer: only routee i's thread writes
 * acc[i] (relaxed load + store, no read-modify-write), the driving thread
 * reads it after the pool is destroyed.  Sojourns go into a log-linear
 * histogram (64 sub-buckets per power of two: ~1.6% resolution), so a cell
 * of millions of jobs needs a few kilobytes per routee.  A job counts in
 * the throughput when it completes inside the window and in the sojourn
 * percentiles when it *arrived* inside the window, wherever it completes;
 * that way a slow job at the window's end is not dropped from the tail.
 *
 * One cell runs at a time: the jobs find it through `live`.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "tune.h"

#define HIST_SUB_BITS 6
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_MAX_EXP 44 /* 2^44 ns is almost five hours: the top bucket holds the rest */
#define HIST_BUCKETS ((HIST_MAX_EXP - HIST_SUB_BITS + 2) * HIST_SUB)
#define SAMPLE_NS 1000000       /* depth sampling period */
#define TICK_NS 100000000       /* progress callback period */
#define ARRIVALS_MAX ((size_t)1 << 24)
#define START_DELAY_NS 2000000  /* open loop: routees up and asleep, as in service */
#define PUMP_ROUTEE_MAX 2       /* arrivals a routee submits after each job */
#define PUMP_GENERATOR_MAX 64   /* per call of a generator, which calls again at once */
#define CLAIM_POLL_NS 1000000   /* after the window: how often to look for unclaimed arrivals */
#ifndef GENERATORS_MAX
#define GENERATORS_MAX 4        /* open loop: one arrival generator per CPU, up to this */
#endif

typedef struct hist {
    atomic_uint_fast64_t b[HIST_BUCKETS];
} hist;

/* One routee's accounting, written only by that routee's thread. */
typedef struct routee_acc {
    _Alignas(64) atomic_uint_fast64_t done; /* jobs completed in the window */
    hist soj;                               /* sojourn of jobs that arrived in the window */
} routee_acc;

/* A closed-loop client: one job in flight at a time, reused for the next. */
typedef struct client {
    _Alignas(64) int64_t submitted;
    uint64_t stream, n; /* the k-th job's random value is mix64(stream + k) */
} client;

typedef struct cell cell;

typedef struct generator_arg {
    cell *c;
    int cpu; /* pin to this CPU; -1: do not pin */
    /* Its own CPU time in the window (it ends when the last arrival is
     * claimed, just before t_end): idle time it used, not the pool's.
     * Written by the generator, read after the join. */
    int64_t cpu_begin, cpu_end;
} generator_arg;

struct cell {
    const tune_work *work;
    rp_pool *pool;
    size_t n;
    routee_acc *acc;
    bool open;
    /* Written before the first submit, read-only after (submission orders
     * them before every job). */
    int64_t t0, t_start, t_end;
    uint64_t seed;
    /* Closed loop: no client submits again once a job ends after this
     * (t_end, or earlier after Ctrl-C). */
    atomic_int_fast64_t stop_at;
    client *clients;
    /* Open loop: arrival offsets from t0, and the first one not claimed. */
    int64_t *arrivals;
    size_t narrivals, window_arrivals;
    _Alignas(64) atomic_size_t next;
    atomic_bool stopping;
    /* Jobs handed back by an abort, and their sojourn so far (a lower bound). */
    atomic_int_fast64_t abort_at;
    atomic_uint_fast64_t unfinished, submit_errors;
    atomic_int last_error;
    hist lost;
    /* Open loop: the generator threads. */
    pthread_t gen[GENERATORS_MAX];
    generator_arg gen_arg[GENERATORS_MAX];
    unsigned ngen;
};

static cell *live;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Returns early on a signal: the caller looks at tune_interrupted. */
static void sleep_until(int64_t t)
{
    const struct timespec ts = {.tv_sec = (time_t)(t / 1000000000),
                                .tv_nsec = (long)(t % 1000000000)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static void report_rp(const char *what, int rc)
{
    const char *detail = rp_errmsg();
    fprintf(stderr, "rp-tune: %s failed: %s (%s)%s%s\n", what, rp_strerror(rc), rp_err_name(rc),
            detail[0] ? ": " : "", detail);
}

/* ---- histogram ---- */

static size_t hist_bucket(uint64_t v)
{
    if (v < HIST_SUB)
        return (size_t)v;
    const int e = 63 - __builtin_clzll(v); /* v >= 64, so e >= HIST_SUB_BITS */
    if (e > HIST_MAX_EXP)
        return HIST_BUCKETS - 1;
    const size_t sub = (size_t)(v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1);
    return (size_t)(e - HIST_SUB_BITS + 1) * HIST_SUB + sub;
}

/* The middle of bucket b, in nanoseconds. */
static double hist_value(size_t b)
{
    if (b < HIST_SUB)
        return (double)b;
    const int e = (int)(b / HIST_SUB) + HIST_SUB_BITS - 1;
    const double width = ldexp(1.0, e - HIST_SUB_BITS);
    return (double)(HIST_SUB + b % HIST_SUB) * width + width / 2;
}

/* Single writer: a relaxed load and store, no locked instruction. */
static void bump(atomic_uint_fast64_t *v)
{
    const uint64_t n = atomic_load_explicit(v, memory_order_relaxed);
    atomic_store_explicit(v, n + 1, memory_order_relaxed);
}

/* ---- the jobs ---- */

static void record(cell *c, int routee, int64_t arrival, int64_t done)
{
    if (routee < 0 || (size_t)routee >= c->n)
        return; /* cannot happen for a pool's own routees */
    routee_acc *a = &c->acc[routee];
    if (arrival >= c->t_start && arrival < c->t_end)
        bump(&a->soj.b[hist_bucket((uint64_t)(done > arrival ? done - arrival : 0))]);
    if (done >= c->t_start && done < c->t_end)
        bump(&a->done);
}

static void submit_failed(cell *c, int rc)
{
    atomic_fetch_add_explicit(&c->submit_errors, 1, memory_order_relaxed);
    atomic_store_explicit(&c->last_error, rc, memory_order_relaxed);
}

static void open_job(rp_job_ctx *ctx, void *arg);

/* Submit up to max arrivals due at `now` that nobody claimed yet. */
static void pump(cell *c, int64_t now, unsigned max)
{
    size_t i = atomic_load_explicit(&c->next, memory_order_relaxed);
    for (unsigned sent = 0; sent < max && i < c->narrivals && c->t0 + c->arrivals[i] <= now &&
                            !atomic_load_explicit(&c->stopping, memory_order_relaxed);) {
        /* The arrivals are immutable while the cell runs and submission
         * publishes the job: relaxed is enough to claim an index.  On
         * failure i is reloaded and checked again. */
        if (!atomic_compare_exchange_weak_explicit(&c->next, &i, i + 1, memory_order_relaxed,
                                                   memory_order_relaxed))
            continue;
        const int rc = rp_pool_submit(c->pool, open_job, &c->arrivals[i]);
        if (rc < 0)
            submit_failed(c, rc);
        sent++;
        i = atomic_load_explicit(&c->next, memory_order_relaxed);
    }
}

static void open_job(rp_job_ctx *ctx, void *arg)
{
    cell *c = live;
    const int64_t *at = arg;
    tune_work_run(c->work, ctx, c->seed + (uint64_t)(at - c->arrivals));
    const int64_t done = now_ns();
    record(c, rp_job_routee(ctx), c->t0 + *at, done);
    pump(c, done, PUMP_ROUTEE_MAX);
}

static void closed_job(rp_job_ctx *ctx, void *arg)
{
    cell *c = live;
    client *cl = arg;
    tune_work_run(c->work, ctx, tune_mix64(cl->stream + cl->n));
    const int64_t done = now_ns();
    record(c, rp_job_routee(ctx), cl->submitted, done);
    if (done >= atomic_load_explicit(&c->stop_at, memory_order_relaxed))
        return;
    cl->n++;
    cl->submitted = done;
    const int rc = rp_pool_submit(c->pool, closed_job, cl);
    if (rc < 0)
        submit_failed(c, rc);
}

/* An abort hands back what was still queued: count it, and keep its wait
 * so far as a lower bound of its sojourn.  Runs on any thread. */
static void open_undelivered(void *arg, int reason, void *user)
{
    cell *c = user;
    const int64_t arrival = c->t0 + *(const int64_t *)arg;
    (void)reason;
    atomic_fetch_add_explicit(&c->unfinished, 1, memory_order_relaxed);
    if (arrival >= c->t_start && arrival < c->t_end) {
        const int64_t at = atomic_load_explicit(&c->abort_at, memory_order_relaxed);
        const int64_t waited = at > arrival ? at - arrival : 0;
        atomic_fetch_add_explicit(&c->lost.b[hist_bucket((uint64_t)waited)], 1,
                                  memory_order_relaxed);
    }
}

static void closed_undelivered(void *arg, int reason, void *user)
{
    cell *c = user;
    (void)arg;
    (void)reason;
    atomic_fetch_add_explicit(&c->unfinished, 1, memory_order_relaxed);
}

/* ---- open loop: arrivals and their generator ---- */

static bool grow(int64_t **v, size_t *cap)
{
    int64_t *more = realloc(*v, *cap * 2 * sizeof *more);
    if (!more)
        return false;
    *v = more;
    *cap *= 2;
    return true;
}

/* Poisson arrivals at `rate` per second from 0 to warm-up + window. */
static int draw_arrivals(cell *c, double rate, double warm_s, double dur_s)
{
    const double span_ns = (warm_s + dur_s) * 1e9, warm_ns = warm_s * 1e9, mean_gap = 1e9 / rate;
    const double expect = rate * (warm_s + dur_s);
    if (expect > (double)ARRIVALS_MAX) {
        fprintf(stderr, "rp-tune: the open loop would need %.0f arrivals (%.0f jobs/s for %.2f s), "
                        "more than %zu: shorten --duration or lower --load/--rate\n",
                expect, rate, warm_s + dur_s, ARRIVALS_MAX);
        return TUNE_EXIT_RUNTIME;
    }
    size_t cap = (size_t)(expect * 1.1 + 6 * sqrt(expect) + 64), n = 0;
    uint64_t x = tune_mix64(c->seed ^ 0x5bd1e995u);
    bool ok = (c->arrivals = malloc(cap * sizeof *c->arrivals)) != NULL;
    for (double t = 0; ok;) {
        t += mean_gap * -log(tune_unit(tune_mix64(x++)));
        if (t >= span_ns)
            break;
        if (n == cap && !(ok = grow(&c->arrivals, &cap)))
            break;
        c->arrivals[n++] = (int64_t)t;
        c->window_arrivals += t >= warm_ns;
    }
    c->narrivals = n;
    if (!ok)
        fprintf(stderr, "rp-tune: out of memory for %zu arrivals\n", cap);
    return ok ? 0 : TUNE_EXIT_RUNTIME;
}

/* SCHED_IDLE: a generator uses only CPU time no routee wants.  Set in the
 * generator's own thread, after the routees exist (threads inherit the
 * policy of their creator).  Everything here is best effort: without it
 * the arrivals are only later, and the lateness counts in the sojourn. */
static void *generator(void *p)
{
    generator_arg *g = p;
    cell *c = g->c;
    const struct sched_param sp = {0};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL); /* wake within ~1 us of the due time */
    if (g->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(g->cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    for (;;) {
        const size_t i = atomic_load_explicit(&c->next, memory_order_relaxed);
        const int64_t now = now_ns();
        if (!g->cpu_begin && now >= c->t_start)
            g->cpu_begin = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
        if (i >= c->narrivals || atomic_load_explicit(&c->stopping, memory_order_relaxed))
            break;
        const int64_t due = c->t0 + c->arrivals[i];
        if (due > now)
            sleep_until(due < c->t_start || g->cpu_begin ? due : c->t_start);
        else
            pump(c, now, PUMP_GENERATOR_MAX);
    }
    g->cpu_end = g->cpu_begin ? cpu_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
    return NULL;
}

/* ---- the driving thread: measure the window ---- */

typedef struct snapshot {
    int64_t wall, cpu;
    uint64_t stole;
} snapshot;

typedef struct watch {
    snapshot begin, end;
    double max_sum, mean_sum; /* of the sampled depths */
} watch;

static void take_snapshot(const cell *c, snapshot *s)
{
    s->wall = now_ns();
    s->cpu = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    s->stole = 0;
    for (size_t i = 0; i < c->n; i++) {
        rp_routee_stats st;
        if (rp_routee_stats_get(rp_pool_routee(c->pool, i), &st) == 0)
            s->stole += st.stole;
    }
}

static void sample_depths(const cell *c, watch *w)
{
    int64_t max = 0, sum = 0;
    for (size_t i = 0; i < c->n; i++) {
        const int64_t d = rp_routee_depth(rp_pool_routee(c->pool, i));
        max = d > max ? d : max;
        sum += d > 0 ? d : 0;
    }
    w->max_sum += (double)max;
    w->mean_sum += (double)sum / (double)c->n;
}

/* Sleep through the warm-up, then sample until the window ends.  Returns
 * 0 or TUNE_EXIT_INTERRUPTED. */
static int watch_window(const cell *c, const tune_drive *d, watch *w)
{
    const double span = (double)(c->t_end - c->t0);
    int64_t next_sample = c->t_start, next_tick = c->t0;
    bool measuring = false;
    for (;;) {
        const int64_t now = now_ns();
        if (tune_interrupted)
            return TUNE_EXIT_INTERRUPTED;
        if (now >= c->t_end)
            break;
        if (!measuring && now >= c->t_start) {
            take_snapshot(c, &w->begin);
            measuring = true;
        }
        if (measuring && now >= next_sample) {
            sample_depths(c, w);
            next_sample = next_sample + SAMPLE_NS > now ? next_sample + SAMPLE_NS : now + SAMPLE_NS;
        }
        if (d->tick && now >= next_tick) {
            d->tick(d->tick_user, (double)(now - c->t0) / span);
            next_tick = now + TICK_NS;
        }
        sleep_until(next_sample < c->t_end ? next_sample : c->t_end);
    }
    take_snapshot(c, &w->end);
    return 0;
}

/* ---- a cell's life ---- */

static int make_pool(cell *c, unsigned size, const tune_router *r, uint64_t seed)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = "tune";
    o.routees = size;
    o.steal = r->steal;
    o.strategy = r->kind == RP_STRATEGY_RANDOM ? rp_strategy_random(seed)
                 : r->kind == RP_STRATEGY_SMALLEST_MAILBOX ? rp_strategy_smallest_mailbox()
                                                           : rp_strategy_round_robin();
    o.on_undelivered = c->open ? open_undelivered : closed_undelivered;
    o.undelivered_user = c;
    const int rc = rp_pool_create(&c->pool, &o);
    if (rc < 0) {
        report_rp("rp_pool_create", rc);
        return TUNE_EXIT_RUNTIME;
    }
    return 0;
}

static int start_closed(cell *c, const tune_drive *d)
{
    c->clients = aligned_alloc(_Alignof(client), d->clients * sizeof *c->clients);
    if (!c->clients) {
        fprintf(stderr, "rp-tune: out of memory for %u clients\n", d->clients);
        return TUNE_EXIT_RUNTIME;
    }
    c->t0 = now_ns();
    c->t_start = c->t0 + (int64_t)(d->warmup_s * 1e9);
    c->t_end = c->t_start + (int64_t)(d->duration_s * 1e9);
    atomic_init(&c->stop_at, c->t_end);
    for (unsigned i = 0; i < d->clients; i++) {
        c->clients[i] = (client){.submitted = now_ns(),
                                 .stream = tune_mix64(c->seed + i * 0x9e37u)};
        const int rc = rp_pool_submit(c->pool, closed_job, &c->clients[i]);
        if (rc < 0) {
            atomic_store_explicit(&c->stop_at, INT64_MIN, memory_order_relaxed);
            report_rp("rp_pool_submit", rc);
            return TUNE_EXIT_RUNTIME;
        }
    }
    return 0;
}

/* One generator per CPU the process may run on, up to GENERATORS_MAX,
 * pinned to the first of those CPUs. */
static int start_generators(cell *c)
{
    cpu_set_t allowed;
    int cpu = -1;
    const bool pin = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
    const unsigned want = pin ? (unsigned)CPU_COUNT(&allowed) : 1u;
    while (c->ngen < want && c->ngen < GENERATORS_MAX) {
        if (pin)
            while (!CPU_ISSET(++cpu, &allowed))
                ;
        c->gen_arg[c->ngen] = (generator_arg){.c = c, .cpu = pin ? cpu : -1};
        const int rc = pthread_create(&c->gen[c->ngen], NULL, generator, &c->gen_arg[c->ngen]);
        if (rc != 0) {
            fprintf(stderr, "rp-tune: cannot start an arrival generator: %s\n", strerror(rc));
            return TUNE_EXIT_RUNTIME;
        }
        c->ngen++;
    }
    return 0;
}

static int start_open(cell *c, const tune_drive *d)
{
    const int rc = draw_arrivals(c, d->rate, d->warmup_s, d->duration_s);
    if (rc != 0)
        return rc;
    c->t0 = now_ns() + START_DELAY_NS;
    c->t_start = c->t0 + (int64_t)(d->warmup_s * 1e9);
    c->t_end = c->t_start + (int64_t)(d->duration_s * 1e9);
    return start_generators(c);
}

/* Wait for the pool to drain, in slices so Ctrl-C is noticed.  Returns
 * true when it went idle; false on Ctrl-C, an error, or at `limit` (0:
 * no limit). */
static bool drain(cell *c, int64_t limit)
{
    for (;;) {
        const int rc = rp_pool_wait_idle(c->pool, 100);
        if (rc == 0)
            return true;
        if (rc != RP_ETIMEDOUT) {
            report_rp("rp_pool_wait_idle", rc);
            return false;
        }
        if (tune_interrupted || (limit && now_ns() > limit))
            return false;
    }
}

static void stop_feeding(cell *c)
{
    atomic_store_explicit(&c->stop_at, INT64_MIN, memory_order_relaxed);
    atomic_store_explicit(&c->stopping, true, memory_order_relaxed);
}

/* Open loop, after the window: wait (in slices, until `limit`) for the
 * generators and routees to claim every arrival; then claim what is left
 * at once - the exchange makes any later claim fail, so none is submitted
 * twice - and charge it like an aborted job. */
static void claim_rest(cell *c, int64_t limit)
{
    while (atomic_load_explicit(&c->next, memory_order_relaxed) < c->narrivals &&
           !tune_interrupted && now_ns() < limit)
        sleep_until(now_ns() + CLAIM_POLL_NS);
    const size_t first = atomic_exchange_explicit(&c->next, c->narrivals, memory_order_relaxed);
    const int64_t now = now_ns();
    for (size_t i = first; i < c->narrivals; i++) {
        const int64_t arrival = c->t0 + c->arrivals[i];
        atomic_fetch_add_explicit(&c->unfinished, 1, memory_order_relaxed);
        if (arrival >= c->t_start && arrival < c->t_end)
            atomic_fetch_add_explicit(
                &c->lost.b[hist_bucket((uint64_t)(now > arrival ? now - arrival : 0))], 1,
                memory_order_relaxed);
    }
}

/* After the window (or a failure to start): wait for what is left - or
 * abort it, when the open loop's backlog outlasts half a window or on
 * Ctrl-C - and destroy the pool.  (The closed loop's clients stop by
 * themselves at t_end.) */
static void finish(cell *c, const tune_drive *d, bool failed)
{
    if (tune_interrupted || failed)
        stop_feeding(c);
    const double limit_s = d->duration_s / 2 > 0.2 ? d->duration_s / 2 : 0.2;
    const int64_t limit = c->open ? now_ns() + (int64_t)(limit_s * 1e9) : 0;
    if (c->open && c->narrivals > 0)
        claim_rest(c, limit);
    for (unsigned i = 0; i < c->ngen; i++)
        pthread_join(c->gen[i], NULL); /* every arrival is claimed: none comes after an abort */
    if (!drain(c, limit)) {
        stop_feeding(c);
        atomic_store_explicit(&c->abort_at, now_ns(), memory_order_relaxed);
        rp_pool_shutdown(c->pool, RP_SHUTDOWN_ABORT);
    }
    rp_pool_destroy(c->pool); /* joins the routees: their accounting is final */
    c->pool = NULL;
}

/* ---- results ---- */

static double percentile(const uint64_t *counts, uint64_t total, double q)
{
    const uint64_t rank = (uint64_t)ceil(q * (double)total);
    uint64_t seen = 0;
    for (size_t b = 0; b < HIST_BUCKETS; b++)
        if ((seen += counts[b]) >= (rank ? rank : 1))
            return hist_value(b) / 1e3;
    return 0;
}

/* The CPU the built-in jobs asked for, as a share of the machine: a
 * closed loop always has jobs queued, so min(size, clients, CPUs) CPUs;
 * an open loop the offered rate x the mean cost, capped the same way.
 * Unknown (-1) for the user's job, which may wait rather than compute. */
static double cpu_demand(const cell *c, const tune_drive *d)
{
    if (c->work->plugin)
        return -1;
    double cpus = (double)(c->n < d->cpus ? c->n : d->cpus);
    const double want = c->open ? d->rate * tune_cost_mean_us(&c->work->cost) * 1e-6
                                : (double)d->clients;
    cpus = want < cpus ? want : cpus;
    return cpus / (double)d->cpus;
}

static void sojourn_stats(const cell *c, tune_result *out, uint64_t *counts)
{
    uint64_t total = 0;
    double sum = 0;
    for (size_t b = 0; b < HIST_BUCKETS; b++) {
        counts[b] = atomic_load_explicit(&c->lost.b[b], memory_order_relaxed);
        for (size_t i = 0; i < c->n; i++)
            counts[b] += atomic_load_explicit(&c->acc[i].soj.b[b], memory_order_relaxed);
        total += counts[b];
        sum += (double)counts[b] * hist_value(b);
    }
    out->samples = total;
    out->mean_us = total ? sum / (double)total / 1e3 : 0;
    out->p50_us = percentile(counts, total, 0.50);
    out->p99_us = percentile(counts, total, 0.99);
    out->p999_us = percentile(counts, total, 0.999);
}

static void results(const cell *c, const watch *w, const tune_drive *d, tune_result *out,
                    uint64_t *counts)
{
    out->jobs = 0;
    for (size_t i = 0; i < c->n; i++)
        out->jobs += atomic_load_explicit(&c->acc[i].done, memory_order_relaxed);
    out->throughput = (double)out->jobs / d->duration_s;
    sojourn_stats(c, out, counts);
    const double wall = (double)(w->end.wall - w->begin.wall);
    int64_t cpu = w->end.cpu - w->begin.cpu;
    for (unsigned i = 0; i < c->ngen; i++)
        cpu -= c->gen_arg[i].cpu_end - c->gen_arg[i].cpu_begin;
    out->cpu = wall > 0 && cpu > 0 ? (double)cpu / (wall * d->cpus) : 0;
    out->cpu_demand = cpu_demand(c, d);
    out->imbalance = w->mean_sum > 0 ? w->max_sum / w->mean_sum : -1;
    out->stolen = w->end.stole - w->begin.stole;
    out->arrivals = c->open ? c->window_arrivals : 0;
    out->unfinished = atomic_load_explicit(&c->unfinished, memory_order_relaxed);
    out->overloaded = c->open && (out->unfinished > 0 ||
                                  (double)out->jobs < 0.95 * (double)out->arrivals);
}

static bool alloc_cell(cell *c, size_t n)
{
    c->n = n;
    c->acc = aligned_alloc(_Alignof(routee_acc), n * sizeof *c->acc);
    if (!c->acc) {
        fprintf(stderr, "rp-tune: out of memory for %zu routees\n", n);
        return false;
    }
    /* All-zero bits are zero lock-free atomics on every target we build for. */
    memset(c->acc, 0, n * sizeof *c->acc);
    return true;
}

static int drive_cell(cell *c, const tune_drive *d, watch *w)
{
    int rc = c->open ? start_open(c, d) : start_closed(c, d);
    if (rc == 0)
        rc = watch_window(c, d, w);
    finish(c, d, rc != 0 && rc != TUNE_EXIT_INTERRUPTED);
    const uint64_t errors = atomic_load_explicit(&c->submit_errors, memory_order_relaxed);
    if (rc == 0 && errors > 0) {
        /* rp_errmsg() is per thread: the submitting thread's detail is gone. */
        const int last = atomic_load_explicit(&c->last_error, memory_order_relaxed);
        fprintf(stderr, "rp-tune: rp_pool_submit failed %llu times, last with %s (%s)\n",
                (unsigned long long)errors, rp_strerror(last), rp_err_name(last));
        rc = TUNE_EXIT_RUNTIME;
    }
    return rc;
}

int tune_cell_run(tune_result *out, const tune_work *work, unsigned size,
                  const tune_router *router, const tune_drive *d)
{
    static cell c; /* large (the histograms): not on the stack */
    uint64_t *counts = malloc(HIST_BUCKETS * sizeof *counts);
    memset(&c, 0, sizeof c);
    c.work = work;
    c.open = d->open;
    c.seed = d->seed;
    *out = (tune_result){.size = size, .router = *router};
    watch w = {0};
    int rc = TUNE_EXIT_RUNTIME;
    if (counts && alloc_cell(&c, size))
        rc = make_pool(&c, size, router, d->seed);
    if (rc == 0) {
        live = &c;
        rc = drive_cell(&c, d, &w);
        live = NULL;
    }
    if (rc == 0)
        results(&c, &w, d, out, counts);
    free(counts);
    free(c.acc);
    free(c.clients);
    free(c.arrivals);
    return rc;
}
