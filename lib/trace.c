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
 *   job slice     "X" on the routee's thread track (tid = its kernel tid);
 *                 the only duration events of the trace, so the events on
 *                 every thread nest (a routee runs one job at a time, and
 *                 no other thread gets a slice): Perfetto drops slices
 *                 that overlap without nesting
 *   submit        "i" instant on the submitting thread at enqueue, and a
 *                 flow "s" there to "f" (bp "e") at the slice's start
 *   steal         "i" instant on the thief, "stolen" instant on the
 *                 victim, and a flow from the victim to the thief
 *   thread names  "M" thread_name for every routee ("routee <i>") and for
 *                 every thread that submitted a traced job (its kernel
 *                 name, from /proc/self/task/<tid>/comm)
 *   totals        at stop, one "M" event "routee_totals" per routee with
 *                 its exact counts since the trace started (jobs run,
 *                 jobs it stole, jobs stolen from it, jobs enqueued), and
 *                 the "routepool" metadata
 * A flow's start binds to the slice enclosing it: a submit or a steal made
 * while a traced job slice runs on that thread gets its arrow; one made
 * outside any slice keeps its instant (viewers drop the arrow's tail).
 * Timestamps are microseconds since the trace started.
 *
 * Text: pool and thread names are user bytes.  rp__text_write() escapes
 * them for JSON and for Prometheus label values alike: valid UTF-8 passes
 * through, each byte that is not valid UTF-8 (and each control character
 * other than newline in Prometheus) becomes the four characters \xNN.
 *
 * Lock order: env_lock -> pool->trace_lock (clock.c's names_lock is a
 * leaf, taken under either or none).  env_finish_all() (atexit)
 * stops each registered pool's trace under env_lock; rp_trace_start() and
 * rp_trace_stop() take trace_lock alone; rp__trace_from_env() and
 * rp__trace_pool_destroy() take one after releasing the other, never both.
 * The sampler takes no lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "pool_record.h"
#include "routee_record.h"
#include "trace.h"

/* A routee's exact counters, read at the start and at the stop of a trace:
 * the trace reports the difference. */
typedef struct rp__trace_totals {
    uint64_t run, stole, stolen_from, enqueued;
} rp__trace_totals;

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
    int32_t *submitters; /* threads whose submit was written (named) */
    size_t nsubmitters;
    rp__trace_totals *base; /* each routee's counters at the start */
};

static _Atomic unsigned env_pools;

/* Submitting threads named per trace: as many as clock.c remembers. */
#define RP__TRACE_NAMED_MAX RP__TID_NAMES_MAX

/* Pools tracing because of RP_TRACE: their traces are finished at exit
 * too, since programs that cannot be changed often exit without
 * destroying their pools (an unterminated trace would be unreadable). */
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static rp_pool **env_list;
static size_t env_n, env_cap;
static bool env_atexit;

void rp_trace_options_init(rp_trace_options *opts)
{
    if (!opts)
        return;
    opts->interval_us = 1000;
    opts->job_sample = 64;
    opts->steals = true;
}

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80): 2..4, or
 * 0 (overlong, surrogate, above U+10FFFF, truncated by the NUL). */
static size_t utf8_len(const unsigned char *p)
{
    size_t n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    unsigned cp;

    if (n == 0 || p[0] > 0xf4)
        return 0;
    cp = p[0] & (0x3fu >> (n - 1));
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

void rp__text_write(FILE *f, const char *str, int style)
{
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        size_t n = *p >= 0x80 ? utf8_len(p) : 1;
        if (n == 0) {
            fprintf(f, "\\\\x%02X", *p);
        } else if (n > 1) {
            fwrite(p, 1, n, f);
            p += n - 1;
        } else if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
        } else if (*p == '\n') {
            fputs("\\n", f);
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(f, style == RP__TEXT_JSON ? "\\u%04x" : "\\\\x%02X", *p);
        } else {
            fputc(*p, f);
        }
    }
}

static void json_str(FILE *f, const char *str)
{
    rp__text_write(f, str, RP__TEXT_JSON);
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

/* Threads that submitted traced jobs get a thread_name once per trace.
 * Bounded: past RP__TRACE_NAMED_MAX distinct threads the rest stay
 * unnamed. */
static bool is_routee_tid(const struct rp__tracer *t, int32_t tid)
{
    for (unsigned i = 0; i < t->pool->n; i++)
        if (atomic_load_explicit(&t->pool->routees[i].tid, memory_order_relaxed) == tid)
            return true;
    return false;
}

/* The thread's name: as recorded at its first traced submit, else its
 * kernel name now, else "" (it is gone). */
static void thread_name_of(int32_t tid, char *out, size_t cap)
{
    char path[64];
    FILE *f;

    out[0] = '\0';
    if (cap >= 16 && rp__tid_name(tid, out))
        return;
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    if (!(f = fopen(path, "r")))
        return;
    if (!fgets(out, (int)cap, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

static void name_submitter(struct rp__tracer *t, int32_t tid)
{
    char comm[32];

    for (size_t i = 0; i < t->nsubmitters; i++)
        if (t->submitters[i] == tid)
            return;
    if (t->nsubmitters == RP__TRACE_NAMED_MAX)
        return;
    t->submitters[t->nsubmitters++] = tid;
    if (is_routee_tid(t, tid))
        return; /* named "routee <i>" by name_threads() */
    thread_name_of(tid, comm, sizeof comm);
    sep(t);
    fprintf(t->f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                  "\"args\":{\"name\":\"",
            (int)getpid(), tid);
    if (comm[0])
        json_str(t->f, comm);
    else
        fprintf(t->f, "thread %d", (int)tid);
    fputs(" (submitter)\"}}", t->f);
}

/* A sampled job: its slice, and the submit instant with a flow into it. */
static void write_slice(struct rp__tracer *t, int routee, int32_t tid, const rp__trace_event *e)
{
    FILE *f = t->f;
    int pid = (int)getpid();

    sep(t);
    fprintf(f, "{\"name\":\"job\",\"cat\":\"job\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
               "\"pid\":%d,\"tid\":%d,\"args\":{\"routee\":%d,\"wait_us\":%.3f}}",
            us(t, e->t0), (double)(e->t1 - e->t0) / 1000.0, pid, tid, routee,
            e->enq_ns ? (double)(e->t0 - e->enq_ns) / 1000.0 : 0.0);
    if (!e->enq_ns || e->enq_ns < t->t0_ns || !e->other)
        return;
    name_submitter(t, e->other);
    t->flow_id++;
    sep(t);
    fprintf(f, "{\"name\":\"submit\",\"cat\":\"job\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,"
               "\"pid\":%d,\"tid\":%d,\"args\":{\"routee\":%d}}",
            us(t, e->enq_ns), pid, e->other, routee);
    sep(t);
    fprintf(f, "{\"name\":\"submit\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":%llu,\"ts\":%.3f,"
               "\"pid\":%d,\"tid\":%d}",
            (unsigned long long)t->flow_id, us(t, e->enq_ns), pid, e->other);
    sep(t);
    fprintf(f, "{\"name\":\"submit\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,"
               "\"ts\":%.3f,\"pid\":%d,\"tid\":%d}",
            (unsigned long long)t->flow_id, us(t, e->t0), pid, tid);
}

/* A steal: instants on the victim and the thief, a flow between them. */
static void write_steal(struct rp__tracer *t, int routee, int32_t tid, const rp__trace_event *e)
{
    FILE *f = t->f;
    int pid = (int)getpid();
    int vtid = atomic_load(&t->pool->routees[e->other].tid);
    double ts = us(t, e->t0);

    t->flow_id++;
    sep(t);
    fprintf(f, "{\"name\":\"stolen\",\"cat\":\"steal\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,"
               "\"pid\":%d,\"tid\":%d,\"args\":{\"thief\":%d,\"jobs\":%u}}",
            ts, pid, vtid, routee, e->count);
    sep(t);
    fprintf(f, "{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"s\",\"id\":%llu,\"ts\":%.3f,"
               "\"pid\":%d,\"tid\":%d}",
            (unsigned long long)t->flow_id, ts, pid, vtid);
    sep(t);
    fprintf(f, "{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,"
               "\"pid\":%d,\"tid\":%d,\"args\":{\"thief\":%d,\"victim\":%d,\"jobs\":%u}}",
            ts, pid, tid, routee, e->other, e->count);
    sep(t);
    fprintf(f, "{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,"
               "\"ts\":%.3f,\"pid\":%d,\"tid\":%d}",
            (unsigned long long)t->flow_id, ts, pid, tid);
}

static void write_event(struct rp__tracer *t, int routee, int32_t tid, const rp__trace_event *e)
{
    if (e->kind == RP__EV_SLICE)
        write_slice(t, routee, tid, e);
    else if (e->kind == RP__EV_STEAL)
        write_steal(t, routee, tid, e);
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

static void read_totals(const rp_routee *r, rp__trace_totals *out)
{
    out->run = atomic_load_explicit(&r->run, memory_order_relaxed);
    out->stole = atomic_load_explicit(&r->stole, memory_order_relaxed);
    out->stolen_from = atomic_load_explicit(&r->mb.stolen_from, memory_order_relaxed);
    out->enqueued = rp__mailbox_enqueued(&r->mb);
}

/* Every routee's exact counts over the trace (rp-profile's "jobs run"
 * share comes from these, not from the sampled slices). */
static void write_totals(struct rp__tracer *t)
{
    for (unsigned i = 0; i < t->pool->n; i++) {
        const rp_routee *r = &t->pool->routees[i];
        const rp__trace_totals *b = &t->base[i];
        rp__trace_totals now;
        read_totals(r, &now);
        sep(t);
        fprintf(t->f, "{\"name\":\"routee_totals\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                      "\"args\":{\"routee\":%u,\"jobs_run\":%llu,\"stole\":%llu,"
                      "\"stolen_from\":%llu,\"enqueued\":%llu}}",
                (int)getpid(), (int)atomic_load_explicit(&r->tid, memory_order_relaxed), i,
                (unsigned long long)(now.run - b->run), (unsigned long long)(now.stole - b->stole),
                (unsigned long long)(now.stolen_from - b->stolen_from),
                (unsigned long long)(now.enqueued - b->enqueued));
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

static void tracer_free(struct rp__tracer *t)
{
    if (!t)
        return;
    free(t->named);
    free(t->submitters);
    free(t->base);
    free(t);
}

static struct rp__tracer *tracer_new(rp_pool *pool)
{
    struct rp__tracer *t = calloc(1, sizeof *t);

    if (!t || !(t->named = calloc(pool->n, 1)) ||
        !(t->submitters = calloc(RP__TRACE_NAMED_MAX, sizeof *t->submitters)) ||
        !(t->base = calloc(pool->n, sizeof *t->base))) {
        tracer_free(t);
        return NULL;
    }
    return t;
}

static int start_locked(rp_pool *pool, const char *path, const rp_trace_options *o)
{
    struct rp__tracer *t;
    int rc;

    if (pool->tracer)
        return rp__fail(RP_EBUSY, "rp_trace_start: pool %s is already tracing", pool->name);
    if ((rc = alloc_rings(pool)) < 0)
        return rp__fail(rc, "rp_trace_start: out of memory");
    if (!(t = tracer_new(pool)))
        return rp__fail(RP_ENOMEM, "rp_trace_start: out of memory");
    if (!(t->f = fopen(path, "w"))) {
        rc = rp__fail(RP_ESYS, "rp_trace_start: cannot open %s: %s", path, strerror(errno));
        tracer_free(t);
        return rc;
    }
    t->pool = pool;
    t->interval_us = o->interval_us;
    t->t0_ns = rp__now_ns();
    atomic_init(&t->stop, false);
    /* Forget what a previous trace left behind. */
    for (unsigned i = 0; i < pool->n; i++) {
        atomic_store(&pool->rings[i]->tail, atomic_load(&pool->rings[i]->head));
        read_totals(&pool->routees[i], &t->base[i]);
    }
    write_header(t);
    atomic_store(&pool->trace_steals, o->steals);
    atomic_store_explicit(&pool->trace_sample, o->job_sample, memory_order_release);
    if ((rc = pthread_create(&t->thread, NULL, sampler_main, t)) != 0) {
        atomic_store(&pool->trace_sample, 0);
        fclose(t->f);
        tracer_free(t);
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
    write_totals(t);
    write_footer(t);
    if (ferror(t->f) | (fclose(t->f) != 0))
        rc = rp__fail(RP_ESYS, "rp_trace_stop: write error");
    tracer_free(t);
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

/* path with ".k" before the extension of its last component (x.json ->
 * x.1.json; "trace" -> trace.1; a leading dot, as in ".json", is a name,
 * not an extension).  false when it does not fit. */
static bool numbered_path(char *path, size_t cap, unsigned k)
{
    char *base = strrchr(path, '/'), *dot, ext[4096];
    size_t len = strlen(path);
    int n;

    base = base ? base + 1 : path;
    dot = strrchr(base, '.');
    if (!dot || dot == base)
        dot = path + len;
    snprintf(ext, sizeof ext, "%s", dot);
    n = snprintf(dot, cap - (size_t)(dot - path), ".%u%s", k, ext);
    return n > 0 && (size_t)n < cap - (size_t)(dot - path);
}

/* RP_TRACE with each "%p" replaced by the process id.  false when the
 * result does not fit. */
static bool expand_env_path(const char *env, char *path, size_t cap)
{
    size_t o = 0;

    for (const char *s = env; *s; s++) {
        if (o + 16 >= cap)
            return false;
        if (s[0] == '%' && s[1] == 'p') {
            o += (size_t)snprintf(path + o, cap - o, "%d", (int)getpid());
            s++;
        } else {
            path[o++] = *s;
        }
    }
    path[o] = '\0';
    return true;
}

void rp__trace_from_env(rp_pool *pool)
{
    const char *env = getenv("RP_TRACE");
    char path[4096];
    unsigned k;

    if (!env || !*env)
        return;
    k = atomic_fetch_add(&env_pools, 1);
    if (!expand_env_path(env, path, sizeof path - 16) ||
        (k > 0 && !numbered_path(path, sizeof path, k))) {
        rp__log(pool->log, pool->log_user, RP_LOG_WARN, "RP_TRACE: the path is too long");
        return;
    }
    if (rp_trace_start(pool, path, NULL) < 0) {
        rp__log(pool->log, pool->log_user, RP_LOG_WARN, "RP_TRACE: %s", rp_errmsg());
        return;
    }
    env_register(pool);
}
