/* SPDX-License-Identifier: MIT */
/*
 * tests/common.h - helpers shared by the Criterion tests.
 *
 * gate:   a mutex + condvar that jobs block on until the test opens it, so a
 *         test can hold routees busy and build exact queue depths.  It also
 *         counts the jobs that reached it, so a test can wait until a gate
 *         job is really running (a running job is not counted in depth).
 * tlog:   a mutex-protected record of which job ran where and in what order,
 *         and of which job was handed back with which reason.
 * probe:  the arg of every job in these tests: a tag, an optional gate, and
 *         counters the job and the on_undelivered callback bump, so each
 *         test can account for every job it submitted.
 * logcap: captures the log lines a pool or router emits.
 *
 * Everything is header-only (static inline) so each test binary is a single
 * file.  Nothing here calls cr_assert: the helpers run on routee threads,
 * where a failing assert would longjmp across threads.
 */
#ifndef RP_TESTS_COMMON_H
#define RP_TESTS_COMMON_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "routepool/routepool.h"

/* ---- time ---- */

static inline int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Poll *v until it reaches at least n or timeout_ms passes. */
static inline bool wait_atomic_ge(atomic_int *v, int n, int timeout_ms)
{
    const int64_t deadline = now_ms() + timeout_ms;
    while (atomic_load_explicit(v, memory_order_acquire) < n) {
        if (now_ms() > deadline)
            return false;
        sleep_ms(1);
    }
    return true;
}

/* ---- gate ---- */

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
    int entered; /* jobs that reached the gate, open or not */
} gate;

static inline void gate_init(gate *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->open = false;
    g->entered = 0;
}

static inline void gate_destroy(gate *g)
{
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

/* Called by a job: announce arrival, then block until the gate opens. */
static inline void gate_pass(gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->entered++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static inline void gate_open(gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Wait until at least n jobs reached the gate; false after timeout_ms. */
static inline bool gate_wait_entered(gate *g, int n, int timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g->mu);
    int rc = 0;
    while (g->entered < n && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    const bool ok = g->entered >= n;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

static inline int gate_entered(gate *g)
{
    pthread_mutex_lock(&g->mu);
    const int n = g->entered;
    pthread_mutex_unlock(&g->mu);
    return n;
}

/* ---- tlog: who ran where, who came back why ---- */

#define TLOG_MAX 8192

typedef struct tlog {
    pthread_mutex_t mu;
    int nrun;
    int run_tag[TLOG_MAX];
    int run_routee[TLOG_MAX];
    int nundel;
    int undel_tag[TLOG_MAX];
    int undel_reason[TLOG_MAX];
} tlog;

static inline void tlog_init(tlog *l)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
}

static inline void tlog_run(tlog *l, int tag, int routee)
{
    pthread_mutex_lock(&l->mu);
    if (l->nrun < TLOG_MAX) {
        l->run_tag[l->nrun] = tag;
        l->run_routee[l->nrun] = routee;
    }
    l->nrun++;
    pthread_mutex_unlock(&l->mu);
}

static inline void tlog_undel(tlog *l, int tag, int reason)
{
    pthread_mutex_lock(&l->mu);
    if (l->nundel < TLOG_MAX) {
        l->undel_tag[l->nundel] = tag;
        l->undel_reason[l->nundel] = reason;
    }
    l->nundel++;
    pthread_mutex_unlock(&l->mu);
}

static inline int tlog_nrun(tlog *l)
{
    pthread_mutex_lock(&l->mu);
    const int n = l->nrun;
    pthread_mutex_unlock(&l->mu);
    return n;
}

static inline int tlog_nundel(tlog *l)
{
    pthread_mutex_lock(&l->mu);
    const int n = l->nundel;
    pthread_mutex_unlock(&l->mu);
    return n;
}

/* ---- probe: the arg of every test job ---- */

typedef struct probe {
    tlog *log;            /* may be NULL */
    int tag;
    gate *gate;           /* NULL: the job does not block */
    atomic_int runs;      /* times the job ran */
    atomic_int routee;    /* rp_job_routee() of the last run, -1 if none */
    atomic_int undelivered; /* times handed back */
    atomic_int reason;    /* last reason handed back with, 0 if none */
    atomic_int foreign;   /* id of the foreign routee that got it, -1 */
    _Atomic(rp_pool *) pool; /* rp_job_pool() of the last run */
} probe;

static inline void probe_init(probe *p, tlog *log, int tag, gate *g)
{
    p->log = log;
    p->tag = tag;
    p->gate = g;
    atomic_init(&p->runs, 0);
    atomic_init(&p->routee, -1);
    atomic_init(&p->undelivered, 0);
    atomic_init(&p->reason, 0);
    atomic_init(&p->foreign, -1);
    atomic_init(&p->pool, NULL);
}

static inline void probe_init_n(probe *ps, size_t n, tlog *log, int tag0,
                                gate *g)
{
    for (size_t i = 0; i < n; i++)
        probe_init(&ps[i], log, tag0 + (int)i, g);
}

/* The job: record where it ran, then pass the gate if it has one. */
static inline void probe_job(rp_job_ctx *ctx, void *arg)
{
    probe *p = arg;
    const int r = rp_job_routee(ctx);
    atomic_store_explicit(&p->routee, r, memory_order_relaxed);
    atomic_store_explicit(&p->pool, rp_job_pool(ctx), memory_order_relaxed);
    if (p->log)
        tlog_run(p->log, p->tag, r);
    if (p->gate)
        gate_pass(p->gate);
    /* Last, with release: a test that sees runs >= 1 sees the fields above. */
    atomic_fetch_add_explicit(&p->runs, 1, memory_order_release);
}

/* on_undelivered for pools and routers whose jobs are all probes. */
static inline void probe_undelivered(void *arg, int reason, void *user)
{
    (void)user;
    probe *p = arg;
    atomic_store_explicit(&p->reason, reason, memory_order_relaxed);
    if (p->log)
        tlog_undel(p->log, p->tag, reason);
    atomic_fetch_add_explicit(&p->undelivered, 1, memory_order_release);
}

static inline int probe_runs(probe *p)
{
    return atomic_load_explicit(&p->runs, memory_order_acquire);
}

static inline int probe_undel(probe *p)
{
    return atomic_load_explicit(&p->undelivered, memory_order_acquire);
}

static inline int probe_routee(probe *p)
{
    return atomic_load_explicit(&p->routee, memory_order_relaxed);
}

/* ---- foreign routees that just count what they are sent ---- */

typedef struct fake_foreign {
    int id;
    atomic_int sent;  /* jobs accepted */
    bool refuse;      /* send returns RP_ESEND */
    int64_t depth;    /* returned by fake_foreign_depth */
} fake_foreign;

/* Accepts the job without running it: the test owns every probe, so the
 * foreign side only records that it received it. */
static inline int fake_foreign_send(rp_job_fn fn, void *arg, void *user)
{
    (void)fn;
    fake_foreign *f = user;
    if (f->refuse)
        return RP_ESEND;
    probe *p = arg;
    atomic_store_explicit(&p->foreign, f->id, memory_order_relaxed);
    atomic_fetch_add_explicit(&f->sent, 1, memory_order_relaxed);
    return 0;
}

static inline int64_t fake_foreign_depth(void *user)
{
    return ((fake_foreign *)user)->depth;
}

/* ---- log capture ---- */

typedef struct logcap {
    pthread_mutex_t mu;
    int n;
    int count[4]; /* by level */
    char last_warn[256];
} logcap;

static inline void logcap_init(logcap *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
}

static inline void logcap_fn(int level, const char *msg, void *user)
{
    logcap *c = user;
    pthread_mutex_lock(&c->mu);
    c->n++;
    if (level >= 0 && level < 4)
        c->count[level]++;
    if (level == RP_LOG_WARN && msg)
        snprintf(c->last_warn, sizeof c->last_warn, "%s", msg);
    pthread_mutex_unlock(&c->mu);
}

static inline int logcap_count(logcap *c, int level)
{
    pthread_mutex_lock(&c->mu);
    const int n = c->count[level];
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---- pools ---- */

/* A pool whose undelivered jobs go to probe_undelivered. */
static inline int make_pool(rp_pool **out, const char *name, unsigned routees,
                            size_t capacity, int overflow, rp_strategy strategy)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = name;
    o.routees = routees;
    o.mailbox_capacity = capacity;
    o.overflow = overflow;
    o.strategy = strategy;
    o.on_undelivered = probe_undelivered;
    return rp_pool_create(out, &o);
}

/* Wait until every routee of the pool has gone to sleep once and is not
 * busy: the start-up of every routee is over, so tests that count sleeps
 * or read depths start from a quiet pool.  False after timeout_ms. */
static inline bool wait_all_asleep(rp_pool *pool, int timeout_ms)
{
    const size_t n = rp_pool_size(pool);
    for (int t = 0; t < timeout_ms; t++) {
        size_t asleep = 0;
        for (size_t i = 0; i < n; i++) {
            rp_routee_stats st;
            if (rp_routee_stats_get(rp_pool_routee(pool, i), &st) == 0 && st.sleeps > 0 &&
                !rp_routee_busy(rp_pool_routee(pool, i)))
                asleep++;
        }
        if (asleep == n)
            return true;
        sleep_ms(1);
    }
    return false;
}

/* Tell one gate job to every routee of the pool and wait until all of them
 * are running it.  Returns false if they did not all start within 5 s. */
static inline bool block_all_routees(rp_pool *pool, probe *gate_probes,
                                     tlog *log, gate *g)
{
    const size_t n = rp_pool_size(pool);
    for (size_t i = 0; i < n; i++) {
        probe_init(&gate_probes[i], log, -1 - (int)i, g);
        if (rp_routee_tell(rp_pool_routee(pool, i), probe_job,
                           &gate_probes[i]) != 0)
            return false;
    }
    return gate_wait_entered(g, (int)n, 5000);
}

/* ---- leak check for Criterion tests under ASan ----
 *
 * LeakSanitizer reports leaks when a Criterion test process exits, but the
 * test still passes.  Each test file sets rp_leak_check as the .fini of its
 * suites: under ASan (RP_TEST_ASAN) it runs a leak check after the test body
 * and aborts on a leak, which Criterion reports as a crash in teardown and
 * turns into a failing exit status.  (An assert in .fini is only logged.)
 */
#ifdef CRITERION_H_
#ifdef RP_TEST_ASAN
#include <sanitizer/lsan_interface.h>
#include <stdlib.h>
static inline void rp_leak_check(void)
{
    if (__lsan_do_recoverable_leak_check() != 0) {
        fprintf(stderr, "rp_leak_check: the test leaked memory\n");
        abort();
    }
}
#else
static inline void rp_leak_check(void)
{
}
#endif
#endif

#endif /* RP_TESTS_COMMON_H */
