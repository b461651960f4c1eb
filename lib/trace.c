/* SPDX-License-Identifier: MIT */
/*
 * trace.c - backlog-balance traces in Chrome Trace Event JSON.
 *
 * A sampler thread wakes every interval (clock_nanosleep, absolute
 * CLOCK_MONOTONIC), writes a depth and a busy counter event per routee, and
 * drains each routee's ring of job slices and steals into the file.  The
 * rings are single-producer (the routee) single-consumer (the sampler)
 * with acquire/release head and tail; a full ring drops the event and
 * counts it, so tracing never blocks or allocates on a job path.  Rings
 * live until the pool is destroyed, so stopping a trace never frees memory
 * a routee may still be writing.
 *
 * Event mapping (Perfetto / chrome://tracing):
 *   depth, busy   "C" counter events named "depth r<i>", "busy r<i>"
 *   job slice     "X" on the routee's thread track (tid = its kernel tid)
 *   submit flow   "s" on the submitting thread at enqueue, "f" (bp "e")
 *                 at the slice start
 *   steal         "i" instant on the thief, with a flow from the victim
 * Timestamps are microseconds since the trace started.
 *
 * Lock order: pool->trace_lock only (start/stop); the sampler takes none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

struct rp__tracer {
    rp_pool *pool;
    FILE *f;
    int64_t t0_ns;
    unsigned interval_us;
    _Atomic bool stop;
    pthread_t thread;
    uint64_t flow_id;
    uint64_t samples;
    bool first;
    uint8_t *named; /* thread_name written for routee i */
};

static _Thread_local int32_t cached_tid;
static _Atomic unsigned env_pools;

/* Pools tracing because of RP_TRACE: their traces are finished at exit
 * too, since programs that cannot be changed often exit without
 * destroying their pools (an unterminated trace would be unreadable). */
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static rp_pool **env_list;
static size_t env_n, env_cap;
static bool env_atexit;

int32_t rp__tid(void)
{
    if (!cached_tid)
        cached_tid = (int32_t)syscall(SYS_gettid);
    return cached_tid;
}

void rp_trace_options_init(rp_trace_options *opts)
{
    if (!opts)
        return;
    opts->interval_us = 1000;
    opts->job_sample = 64;
    opts->steals = true;
}

void rp__trace_push(rp__trace_ring *ring, const rp__trace_event *ev)
{
    uint32_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&ring->tail, memory_order_acquire);

    if (head - tail >= RP__TRACE_RING) {
        atomic_store_explicit(&ring->lost,
                              atomic_load_explicit(&ring->lost, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        return;
    }
    ring->ev[head % RP__TRACE_RING] = *ev;
    /* Publish the event (pairs with the acquire in drain()). */
    atomic_store_explicit(&ring->head, head + 1, memory_order_release);
}

/* A JSON string body: pool names are user text. */
static void json_str(FILE *f, const char *str)
{
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
}

static double us(const struct rp__tracer *t, int64_t ns)
{
    return (double)(ns - t->t0_ns) / 1000.0;
}

static void sep(struct rp__tracer *t)
{
    if (!t->first)
        fputs(",\n", t->f);
    t->first = false;
}

static void write_event(struct rp__tracer *t, int routee, int32_t tid, const rp__trace_event *e)
{
    FILE *f = t->f;
    int pid = (int)getpid();

    if (e->kind == RP__EV_SLICE) {
        sep(t);
        fprintf(f, "{\"name\":\"job\",\"cat\":\"job\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                   "\"pid\":%d,\"tid\":%d,\"args\":{\"routee\":%d,\"wait_us\":%.3f}}",
                us(t, e->t0), (double)(e->t1 - e->t0) / 1000.0, pid, tid, routee,
                e->enq_ns ? (double)(e->t0 - e->enq_ns) / 1000.0 : 0.0);
        if (e->enq_ns && e->enq_ns >= t->t0_ns && e->other) {
            /* Perfetto binds a flow start to the slice enclosing it: give
             * the submit a 1 us slice on the submitting thread. */
            t->flow_id++;
            sep(t);
            fprintf(f, "{\"name\":\"submit\",\"cat\":\"job\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":1,"
                       "\"pid\":%d,\"tid\":%d}",
                    us(t, e->enq_ns), pid, e->other);
            sep(t);
            fprintf(f, "{\"name\":\"submit\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":%llu,\"ts\":%.3f,"
                       "\"pid\":%d,\"tid\":%d}",
                    (unsigned long long)t->flow_id, us(t, e->enq_ns) + 0.5, pid, e->other);
            sep(t);
            fprintf(f, "{\"name\":\"submit\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,"
                       "\"ts\":%.3f,\"pid\":%d,\"tid\":%d}",
                    (unsigned long long)t->flow_id, us(t, e->t0), pid, tid);
        }
    } else if (e->kind == RP__EV_STEAL) {
        rp_routee *victim = &t->pool->routees[e->other];
        int vtid = atomic_load(&victim->tid);
        /* Short slices on both tracks enclose the flow's ends (Perfetto
         * drops a flow start that no slice encloses). */
        t->flow_id++;
        sep(t);
        fprintf(f, "{\"name\":\"stolen\",\"cat\":\"steal\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":1,"
                   "\"pid\":%d,\"tid\":%d,\"args\":{\"thief\":%d,\"jobs\":%u}}",
                us(t, e->t0) - 1, pid, vtid, routee, e->count);
        sep(t);
        fprintf(f, "{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"s\",\"id\":%llu,\"ts\":%.3f,"
                   "\"pid\":%d,\"tid\":%d}",
                (unsigned long long)t->flow_id, us(t, e->t0) - 0.5, pid, vtid);
        sep(t);
        fprintf(f, "{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":1,"
                   "\"pid\":%d,\"tid\":%d,\"args\":{\"thief\":%d,\"victim\":%d,\"jobs\":%u}}",
                us(t, e->t0), pid, tid, routee, e->other, e->count);
        sep(t);
        fprintf(f, "{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,"
                   "\"pid\":%d,\"tid\":%d,\"args\":{\"thief\":%d,\"victim\":%d,\"jobs\":%u}}",
                us(t, e->t0), pid, tid, routee, e->other, e->count);
        sep(t);
        fprintf(f, "{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,"
                   "\"ts\":%.3f,\"pid\":%d,\"tid\":%d}",
                (unsigned long long)t->flow_id, us(t, e->t0) + 0.5, pid, tid);
    }
}

static void drain(struct rp__tracer *t, unsigned i)
{
    rp__trace_ring *ring = t->pool->rings[i];
    uint32_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&ring->head, memory_order_acquire);

    for (; tail != head; tail++)
        write_event(t, (int)i, atomic_load(&t->pool->routees[i].tid), &ring->ev[tail % RP__TRACE_RING]);
    /* Hand the slots back (pairs with the acquire in rp__trace_push). */
    atomic_store_explicit(&ring->tail, tail, memory_order_release);
}

static void name_threads(struct rp__tracer *t);

static void sample(struct rp__tracer *t)
{
    int64_t now = rp__now_ns();
    int pid = (int)getpid();

    name_threads(t);
    for (unsigned i = 0; i < t->pool->n; i++) {
        rp_routee *r = &t->pool->routees[i];
        int64_t d = rp__mailbox_depth(&r->mb);
        sep(t);
        fprintf(t->f, "{\"name\":\"depth r%u\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%d,\"args\":{\"depth\":%lld}}",
                i, us(t, now), pid, (long long)(d > 0 ? d : 0));
        sep(t);
        fprintf(t->f, "{\"name\":\"busy r%u\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%d,\"args\":{\"busy\":%d}}",
                i, us(t, now), pid, atomic_load_explicit(&r->busy, memory_order_relaxed));
    }
    for (unsigned i = 0; i < t->pool->n; i++)
        drain(t, i);
    t->samples++;
}

static void *sampler_main(void *p)
{
    struct rp__tracer *t = p;
    struct timespec next;

    pthread_setname_np(pthread_self(), "rp-trace");
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!atomic_load_explicit(&t->stop, memory_order_acquire)) {
        sample(t);
        next.tv_nsec += (long)t->interval_us * 1000;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
        }
    }
    return NULL;
}

static void write_header(struct rp__tracer *t)
{
    int pid = (int)getpid();

    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", t->f);
    t->first = true;
    sep(t);
    fprintf(t->f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"routepool ",
            pid);
    json_str(t->f, t->pool->name);
    fputs("\"}}", t->f);
}

/* Name each routee's thread track once its thread has reported its id. */
static void name_threads(struct rp__tracer *t)
{
    for (unsigned i = 0; i < t->pool->n; i++) {
        int32_t tid = atomic_load_explicit(&t->pool->routees[i].tid, memory_order_acquire);
        if (t->named[i] || !tid)
            continue;
        sep(t);
        fprintf(t->f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                      "\"args\":{\"name\":\"routee %u\"}}",
                (int)getpid(), tid, i);
        t->named[i] = 1;
    }
}

static void write_footer(struct rp__tracer *t)
{
    uint64_t lost = 0;

    for (unsigned i = 0; i < t->pool->n; i++)
        lost += atomic_load_explicit(&t->pool->rings[i]->lost, memory_order_relaxed);
    sep(t);
    fprintf(t->f, "{\"name\":\"routepool\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"pool\":\"",
            (int)getpid());
    json_str(t->f, t->pool->name);
    fprintf(t->f, "\",\"routees\":%u,\"interval_us\":%u,\"samples\":%llu,\"lost_events\":%llu}}",
            t->pool->n, t->interval_us, (unsigned long long)t->samples, (unsigned long long)lost);
    fputs("\n]}\n", t->f);
}

static int alloc_rings(rp_pool *pool)
{
    if (pool->rings)
        return 0;
    if (!(pool->rings = calloc(pool->n, sizeof *pool->rings)))
        return RP_ENOMEM;
    for (unsigned i = 0; i < pool->n; i++)
        if (!(pool->rings[i] = aligned_alloc(64, (sizeof(rp__trace_ring) + 63) / 64 * 64)))
            return RP_ENOMEM;
        else
            memset(pool->rings[i], 0, sizeof(rp__trace_ring));
    return 0;
}

static int validate(const rp_trace_options *o)
{
    if (o->interval_us < 50 || o->interval_us > 1000000)
        return rp__fail(RP_EINVAL, "rp_trace_start: opts.interval_us must be 50..1000000 (got %u)",
                        o->interval_us);
    return 0;
}

static int start_locked(rp_pool *pool, const char *path, const rp_trace_options *o)
{
    struct rp__tracer *t;
    int rc;

    if (pool->tracer)
        return rp__fail(RP_EBUSY, "rp_trace_start: pool %s is already tracing", pool->name);
    if ((rc = alloc_rings(pool)) < 0)
        return rp__fail(rc, "rp_trace_start: out of memory");
    if (!(t = calloc(1, sizeof *t)) || !(t->named = calloc(pool->n, 1))) {
        free(t);
        return rp__fail(RP_ENOMEM, "rp_trace_start: out of memory");
    }
    if (!(t->f = fopen(path, "w"))) {
        rc = rp__fail(RP_ESYS, "rp_trace_start: cannot open %s: %s", path, strerror(errno));
        free(t->named);
        free(t);
        return rc;
    }
    t->pool = pool;
    t->interval_us = o->interval_us;
    t->t0_ns = rp__now_ns();
    atomic_init(&t->stop, false);
    /* Forget what a previous trace left behind. */
    for (unsigned i = 0; i < pool->n; i++)
        atomic_store(&pool->rings[i]->tail, atomic_load(&pool->rings[i]->head));
    write_header(t);
    atomic_store(&pool->trace_steals, o->steals);
    atomic_store_explicit(&pool->trace_sample, o->job_sample, memory_order_release);
    if ((rc = pthread_create(&t->thread, NULL, sampler_main, t)) != 0) {
        atomic_store(&pool->trace_sample, 0);
        fclose(t->f);
        free(t->named);
        free(t);
        return rp__fail(RP_ESYS, "rp_trace_start: sampler thread: %s", strerror(rc));
    }
    pool->tracer = t;
    return 0;
}

int rp_trace_start(rp_pool *pool, const char *path, const rp_trace_options *opts)
{
    rp_trace_options defaults;
    int rc;

    if (!pool || !path)
        return rp__fail(RP_EINVAL, "rp_trace_start: %s is NULL", pool ? "path" : "pool");
    if (!opts) {
        rp_trace_options_init(&defaults);
        opts = &defaults;
    }
    if ((rc = validate(opts)) < 0)
        return rc;
    pthread_mutex_lock(&pool->trace_lock);
    rc = start_locked(pool, path, opts);
    pthread_mutex_unlock(&pool->trace_lock);
    return rc;
}

static int stop_locked(rp_pool *pool)
{
    struct rp__tracer *t = pool->tracer;
    int rc = 0;

    if (!t)
        return rp__fail(RP_EINVAL, "rp_trace_stop: pool %s is not tracing", pool->name);
    atomic_store_explicit(&pool->trace_sample, 0, memory_order_release);
    atomic_store_explicit(&t->stop, true, memory_order_release);
    pthread_join(t->thread, NULL);
    sample(t); /* the last state, and whatever the rings still hold */
    write_footer(t);
    if (ferror(t->f) | (fclose(t->f) != 0))
        rc = rp__fail(RP_ESYS, "rp_trace_stop: write error");
    free(t->named);
    free(t);
    pool->tracer = NULL;
    return rc;
}

int rp_trace_stop(rp_pool *pool)
{
    int rc;

    if (!pool)
        return rp__fail(RP_EINVAL, "rp_trace_stop: pool is NULL");
    pthread_mutex_lock(&pool->trace_lock);
    rc = stop_locked(pool);
    pthread_mutex_unlock(&pool->trace_lock);
    return rc;
}

static void env_finish_all(void)
{
    pthread_mutex_lock(&env_lock);
    for (size_t i = 0; i < env_n; i++) {
        rp_pool *pool = env_list[i];
        pthread_mutex_lock(&pool->trace_lock);
        if (pool->tracer)
            stop_locked(pool);
        pthread_mutex_unlock(&pool->trace_lock);
    }
    env_n = 0;
    pthread_mutex_unlock(&env_lock);
}

static void env_register(rp_pool *pool)
{
    pthread_mutex_lock(&env_lock);
    if (env_n == env_cap) {
        size_t cap = env_cap ? env_cap * 2 : 4;
        rp_pool **grown = realloc(env_list, cap * sizeof *grown);
        if (grown) {
            env_list = grown;
            env_cap = cap;
        }
    }
    if (env_n < env_cap)
        env_list[env_n++] = pool;
    if (!env_atexit)
        env_atexit = atexit(env_finish_all) == 0;
    pthread_mutex_unlock(&env_lock);
}

static void env_unregister(rp_pool *pool)
{
    pthread_mutex_lock(&env_lock);
    for (size_t i = 0; i < env_n; i++)
        if (env_list[i] == pool)
            env_list[i] = env_list[--env_n];
    pthread_mutex_unlock(&env_lock);
}

void rp__trace_pool_destroy(rp_pool *pool)
{
    env_unregister(pool);
    if (pool->tracer)
        rp_trace_stop(pool);
    if (pool->rings) {
        for (unsigned i = 0; i < pool->n; i++)
            free(pool->rings[i]);
        free(pool->rings);
        pool->rings = NULL;
    }
}

void rp__trace_from_env(rp_pool *pool)
{
    const char *env = getenv("RP_TRACE");
    char path[4096];
    size_t o = 0;
    unsigned k;

    if (!env || !*env)
        return;
    for (const char *s = env; *s && o + 16 < sizeof path; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            o += (size_t)snprintf(path + o, sizeof path - o, "%d", (int)getpid());
            s++;
        } else {
            path[o++] = *s;
        }
    }
    path[o] = '\0';
    k = atomic_fetch_add(&env_pools, 1);
    if (k > 0)
        snprintf(path + o, sizeof path - o, ".%u", k);
    if (rp_trace_start(pool, path, NULL) < 0) {
        rp__log(pool->log, pool->log_user, RP_LOG_WARN, "RP_TRACE: %s", rp_errmsg());
        return;
    }
    env_register(pool);
}
