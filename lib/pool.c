/* SPDX-License-Identifier: MIT */
/*
 * pool.c - the pool: options, creation, submission, waiting for idle,
 * shutdown and destruction.  The routee threads run worker.c's loop;
 * stealing is steal.c.
 *
 * Accounting for rp_pool_wait_idle(): accepted = sum of mailbox enqueued
 * counters (the lanes' and the owner ring's: rp__mailbox_enqueued);
 * finished = sum of run + retired (handed back from a queue).
 * finished <= accepted at every instant, so reading every finished counter
 * before every accepted counter and finding equal sums proves the pool was
 * idle at some instant in between.
 *
 * Lock order: pool->life is a leaf, never nested with another lock: it
 * guards shutdown's states (closing, joining, joined) and is released
 * before user code runs and before the join (the scatter registry's lock,
 * scatter.c, is another leaf).  No library lock is held while a job or a
 * callback runs.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "clock.h"
#include "future.h"
#include "pool_record.h"
#include "routee.h"
#include "router.h"
#include "scatter.h"
#include "trace.h"
#include "worker.h"

/* The pool whose rp_pool_shutdown() or rp_pool_destroy() this thread is
 * running (and so whose callbacks it may be running): destroy refuses it. */
static _Thread_local rp_pool *closing_pool;

void rp_pool_options_init(rp_pool_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->name = "pool";
    opts->overflow = RP_OVERFLOW_REJECT;
    opts->steal = true;
    opts->idle_spin_us = RP_IDLE_SPIN_US_AUTO;
    opts->metrics = true;
    opts->strategy = rp_strategy_round_robin();
    opts->record_reserve = RP_RECORD_RESERVE_DEFAULT;
    opts->trim_idle_ms = RP_TRIM_IDLE_MS_DEFAULT;
}

/* The smallest stack pthread accepts.  glibc 2.34 and later define
 * PTHREAD_STACK_MIN as this sysconf() call. */
static size_t stack_min(void)
{
    long v = sysconf(_SC_THREAD_STACK_MIN);

    return v > 0 ? (size_t)v : (size_t)PTHREAD_STACK_MIN;
}

static size_t page_size(void)
{
    long v = sysconf(_SC_PAGESIZE);

    return v > 0 ? (size_t)v : 4096;
}

/* opts.stack_size: 0, or at least stack_min() and roundable to pages.
 * Rounded up rather than refused: pthread may refuse a size that is not
 * a multiple of the page size, and the caller asked for at least this. */
static int check_stack(size_t size)
{
    if (size == 0)
        return 0;
    if (size < stack_min())
        return rp__fail(RP_EINVAL, "rp_pool_create: opts.stack_size must be 0 (the default) or "
                        "at least PTHREAD_STACK_MIN, %zu bytes (got %zu)", stack_min(), size);
    if (size > SIZE_MAX - (page_size() - 1))
        return rp__fail(RP_EINVAL, "rp_pool_create: opts.stack_size %zu cannot be rounded up "
                        "to the page size", size);
    return 0;
}

static size_t round_to_pages(size_t size)
{
    size_t page = page_size();

    return (size + page - 1) / page * page;
}

/* "0-3,6": the CPUs of set, for a message (truncated to fit len). */
static void format_cpus(const cpu_set_t *set, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && used < len; c++) {
        int end = c, w;

        if (!CPU_ISSET(c, set))
            continue;
        while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, set))
            end++;
        if (end > c)
            w = snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", c, end);
        else
            w = snprintf(buf + used, len - used, "%s%d", used ? "," : "", c);
        used += w > 0 ? (size_t)w : 0;
        c = end;
    }
}

/* opts.cpus: every entry a CPU this thread may run on (the routee threads
 * inherit its affinity), cpus and ncpus both set or both not. */
static int check_cpus(const rp_pool_options *o)
{
    cpu_set_t allowed;
    char list[64];

    if (o->ncpus && !o->cpus)
        return rp__fail(RP_EINVAL, "rp_pool_create: opts.cpus is NULL but opts.ncpus is %zu",
                        o->ncpus);
    if (o->cpus && !o->ncpus)
        return rp__fail(RP_EINVAL, "rp_pool_create: opts.cpus is set but opts.ncpus is 0");
    if (o->ncpus > RP_ROUTEES_MAX)
        return rp__fail(RP_EINVAL, "rp_pool_create: opts.ncpus must be 0..%u (got %zu)",
                        RP_ROUTEES_MAX, o->ncpus);
    if (!o->ncpus)
        return 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return rp__fail(RP_ESYS, "rp_pool_create: opts.cpus: sched_getaffinity: %s",
                        strerror(errno));
    for (size_t k = 0; k < o->ncpus; k++) {
        int cpu = o->cpus[k];

        if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed))
            continue;
        format_cpus(&allowed, list, sizeof list);
        return rp__fail(RP_EINVAL, "rp_pool_create: opts.cpus[%zu] is CPU %d, which this "
                        "process may not use (sched_getaffinity allows %s)", k, cpu, list);
    }
    return 0;
}

static int validate(const rp_pool_options *o, unsigned *routees)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);

    *routees = o->routees ? o->routees : (unsigned)(online > 0 ? online : 1);
    if (*routees > RP_ROUTEES_MAX)
        return rp__fail(RP_EINVAL, "rp_pool_create: opts.routees must be 1..%u or 0 for online CPUs (got %u)",
                        RP_ROUTEES_MAX, o->routees);
    if (o->mailbox_capacity > RP_MAILBOX_CAPACITY_MAX)
        return rp__fail(RP_EINVAL, "rp_pool_create: opts.mailbox_capacity must be 0..%zu (got %zu)",
                        (size_t)RP_MAILBOX_CAPACITY_MAX, o->mailbox_capacity);
    if (o->overflow < RP_OVERFLOW_REJECT || o->overflow > RP_OVERFLOW_DROP_HEAD)
        return rp__fail(RP_EINVAL, "rp_pool_create: opts.overflow is not an rp_overflow (got %d)",
                        o->overflow);
    if (o->idle_spin_us > RP_IDLE_SPIN_US_MAX && o->idle_spin_us != RP_IDLE_SPIN_US_AUTO)
        return rp__fail(RP_EINVAL, "rp_pool_create: opts.idle_spin_us must be 0..%u or "
                        "RP_IDLE_SPIN_US_AUTO (got %u)", RP_IDLE_SPIN_US_MAX, o->idle_spin_us);
    if (check_stack(o->stack_size) < 0 || check_cpus(o) < 0)
        return RP_EINVAL;
    if (o->record_reserve > RP_RECORD_RESERVE_MAX || o->trim_idle_ms > RP_TRIM_IDLE_MS_MAX)
        return rp__fail(RP_EINVAL, "rp_pool_create: opts.%s must be 0..%zu (got %zu)",
                        o->record_reserve > RP_RECORD_RESERVE_MAX ? "record_reserve" : "trim_idle_ms",
                        o->record_reserve > RP_RECORD_RESERVE_MAX ? (size_t)RP_RECORD_RESERVE_MAX
                                                                  : (size_t)RP_TRIM_IDLE_MS_MAX,
                        o->record_reserve > RP_RECORD_RESERVE_MAX ? o->record_reserve
                                                                  : (size_t)o->trim_idle_ms);
    return 0;
}

/* The spin window for idle_spin_us: RP_IDLE_SPIN_US_AUTO spins only when
 * a spinner can have a CPU of its own. */
static unsigned spin_us(unsigned idle_spin_us, unsigned routees)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);

    if (idle_spin_us != RP_IDLE_SPIN_US_AUTO)
        return idle_spin_us;
    return online > (long)routees ? RP_IDLE_SPIN_US_SPARE : 0;
}

static int init_routees(rp_pool *pool, const rp_pool_options *o)
{
    int rc;

    pool->routees = rp__arena_alloc(&pool->arena, sizeof(rp_routee) * pool->n,
                                    RP_CACHELINE);
    if (!pool->routees)
        return RP_ENOMEM;
    for (unsigned i = 0; i < pool->n; i++) {
        rp_routee *r = &pool->routees[i];
        char id[96];

        r->kind = RP__ROUTEE_LOCAL;
        r->index = (int)i;
        r->pool = pool;
        snprintf(id, sizeof id, "%s/%u", pool->name, i);
        r->ident = XXH3_64bits(id, strlen(id));
        atomic_init(&r->busy, 0);
        atomic_init(&r->running, 0);
        atomic_init(&r->cpu, -1);
        atomic_init(&r->run, 0);
        atomic_init(&r->stole, 0);
        atomic_init(&r->sleeps, 0);
        atomic_init(&r->sleep_gen, 0);
        atomic_init(&r->rerouted, 0);
        atomic_init(&r->rescues, 0);
        atomic_init(&r->olders, 0);
        atomic_init(&r->looks, 0);
        atomic_init(&r->stale_looks, 0);
        atomic_init(&r->mark_n, 0); /* no marks yet: nothing to date */
        r->watch_left = r->watch_every = 1;
        r->spin_ns = pool->spin_ns;
        rc = rp__mailbox_init(&r->mb, &pool->arena, o->mailbox_capacity,
                              o->overflow, rp__routee_mailbox_handback, r, (int)i);
        if (rc < 0)
            return rc;
        r->mb.metrics = o->metrics;
        r->mb.trace_sample = &pool->trace_sample;
    }
    return 0;
}

/* Routee i's thread attributes: opts.stack_size, and its CPU from
 * opts.cpus, set before the thread runs (a failure fails pthread_create,
 * not silently later).  0 or an errno value; attr is destroyed on error. */
static int thread_attr(const rp_pool *pool, unsigned i, pthread_attr_t *attr)
{
    cpu_set_t one;
    int err;

    if ((err = pthread_attr_init(attr)) != 0)
        return err;
    if (pool->stack_size && (err = pthread_attr_setstacksize(attr, pool->stack_size)) != 0)
        goto fail;
    if (pool->ncpus) {
        CPU_ZERO(&one);
        CPU_SET(pool->cpus[i % pool->ncpus], &one);
        if ((err = pthread_attr_setaffinity_np(attr, sizeof one, &one)) != 0)
            goto fail;
    }
    return 0;
fail:
    pthread_attr_destroy(attr);
    return err;
}

/* A routee thread that did not start: the message names the thread
 * options in play, the likely causes. */
static int thread_failed(const rp_pool *pool, unsigned i, int err)
{
    char stack[48] = "", cpu[32] = "";

    if (pool->stack_size)
        snprintf(stack, sizeof stack, " (opts.stack_size %zu bytes)", pool->stack_size);
    if (pool->ncpus)
        snprintf(cpu, sizeof cpu, " (opts.cpus: CPU %d)", pool->cpus[i % pool->ncpus]);
    return rp__fail(RP_ESYS, "rp_pool_create: pthread_create for routee %u: %s%s%s", i,
                    strerror(err), stack, cpu);
}

static int start_threads(rp_pool *pool)
{
    char name[16];
    int rc;

    snprintf(name, sizeof name, "rp-%.8s-t", pool->name);
    if ((rc = rp__timer_start(&pool->timer, name)) < 0)
        return rc;
    for (unsigned i = 0; i < pool->n; i++) {
        rp_routee *r = &pool->routees[i];
        pthread_attr_t attr;
        int err = thread_attr(pool, i, &attr);

        if (err == 0) {
            err = pthread_create(&r->thread, &attr, rp__worker_main, r);
            pthread_attr_destroy(&attr);
        }
        if (err != 0)
            return thread_failed(pool, i, err);
        r->started = true;
    }
    return 0;
}

/* The options of the routee threads (validated): hooks, stack size and
 * CPUs, the CPU set copied. */
static int copy_threads(rp_pool *pool, const rp_pool_options *o)
{
    if (o->ncpus) {
        if (!(pool->cpus = malloc(o->ncpus * sizeof *pool->cpus)))
            return rp__fail(RP_ENOMEM, "rp_pool_create: out of memory");
        memcpy(pool->cpus, o->cpus, o->ncpus * sizeof *pool->cpus);
        pool->ncpus = o->ncpus;
    }
    pool->pin_cpus = o->pin_cpus && !o->ncpus; /* a CPU set overrides */
    pool->stack_size = o->stack_size ? round_to_pages(o->stack_size) : 0;
    pool->on_thread_start = o->on_thread_start;
    pool->on_thread_stop = o->on_thread_stop;
    pool->thread_user = o->thread_user;
    return 0;
}

int rp_pool_create(rp_pool **out, const rp_pool_options *opts)
{
    rp_pool_options defaults;
    rp_pool *pool;
    unsigned n;
    int rc;

    if (!out)
        return rp__fail(RP_EINVAL, "rp_pool_create: out is NULL");
    *out = NULL;
    if (!opts) {
        rp_pool_options_init(&defaults);
        opts = &defaults;
    }
    if ((rc = validate(opts, &n)) < 0)
        return rc;
    if (!(pool = calloc(1, sizeof *pool)))
        return rp__fail(RP_ENOMEM, "rp_pool_create: out of memory");
    if ((rc = rp__copy_name(pool->name, sizeof pool->name, opts->name, "pool",
                            "rp_pool_create", "opts.name")) < 0 ||
        (rc = copy_threads(pool, opts)) < 0) {
        free(pool);
        return rc;
    }
    pool->n = n;
    pool->steal = opts->steal;
    pool->older = opts->steal && opts->strategy.kind != RP_STRATEGY_SMALLEST_MAILBOX;
    pool->spin_ns = (int64_t)spin_us(opts->idle_spin_us, n) * 1000;
    pool->idle_yield = opts->idle_spin_us == RP_IDLE_SPIN_US_AUTO && pool->spin_ns == 0;
    pool->trim_keep = opts->record_reserve;
    pool->trim_ns = (int64_t)opts->trim_idle_ms * 1000000;
    pool->max_spinners = n / 2 ? n / 2 : 1;
    atomic_init(&pool->spinners, 0);
    atomic_init(&pool->searching, 0);
    for (unsigned w = 0; w < RP_ROUTEES_MAX / 64; w++)
        atomic_init(&pool->idle_bits[w], 0);
    pool->on_undelivered = opts->on_undelivered;
    pool->undelivered_user = opts->undelivered_user;
    pool->log = opts->log;
    pool->log_user = opts->log_user;
    atomic_init(&pool->abort, 0);
    atomic_init(&pool->shut, false);
    atomic_init(&pool->idle_waiters, 0);
    rp__event_init(&pool->idle_ev);
    pthread_mutex_init(&pool->life, NULL);
    pthread_cond_init(&pool->life_cv, NULL);
    pthread_mutex_init(&pool->trace_lock, NULL);
    rp__arena_create(&pool->arena);
    if ((rc = rp__future_heap_create(&pool->futures)) < 0 ||
        (rc = rp__sg_registry_create(&pool->sgs)) < 0 ||
        (rc = init_routees(pool, opts)) < 0 ||
        (rc = rp__router_create_for_pool(&pool->router, pool, &opts->strategy, true)) < 0 ||
        (rc = start_threads(pool)) < 0) {
        if (rc == RP_ENOMEM)
            rp__fail(rc, "rp_pool_create: out of memory");
        rp_pool_destroy(pool);
        return rc;
    }
    rp__trace_from_env(pool);
    *out = pool;
    return 0;
}

int rp_pool_submit(rp_pool *pool, rp_job_fn fn, void *arg)
{
    if (!pool)
        return rp__fail(RP_EINVAL, "rp_pool_submit: pool is NULL");
    return rp__router_tell(pool->router, fn, arg, "rp_pool_submit");
}

int rp_pool_submit_batch(rp_pool *pool, rp_job_fn fn, void *const *args, size_t n)
{
    if (!pool)
        return rp__fail(RP_EINVAL, "rp_pool_submit_batch: pool is NULL");
    return rp__router_tell_batch(pool->router, fn, args, n, "rp_pool_submit_batch");
}

rp_router *rp_pool_router(rp_pool *pool)
{
    return pool ? pool->router : NULL;
}

/* True when the pool was idle at some instant during the call. */
static bool was_idle(rp_pool *pool)
{
    uint64_t finished = 0, accepted = 0;

    for (unsigned i = 0; i < pool->n; i++) {
        rp_routee *r = &pool->routees[i];
        finished += atomic_load_explicit(&r->run, memory_order_seq_cst) +
                    atomic_load_explicit(&r->mb.retired, memory_order_seq_cst);
    }
    for (unsigned i = 0; i < pool->n; i++)
        accepted += rp__mailbox_enqueued(&pool->routees[i].mb);
    return finished == accepted;
}

int rp_pool_wait_idle(rp_pool *pool, int timeout_ms)
{
    struct timespec deadline;
    int rc = 0;

    if (!pool)
        return rp__fail(RP_EINVAL, "rp_pool_wait_idle: pool is NULL");
    if (timeout_ms < -1)
        return rp__fail(RP_EINVAL, "rp_pool_wait_idle: timeout_ms must be >= -1 (got %d)", timeout_ms);
    if (rp__worker_of(pool))
        return rp__fail(RP_EBUSY, "rp_pool_wait_idle: called from a routee of this pool");
    if (timeout_ms >= 0)
        rp__deadline(&deadline, timeout_ms);
    atomic_fetch_add_explicit(&pool->idle_waiters, 1, memory_order_seq_cst);
    for (;;) {
        uint32_t v = atomic_load_explicit(&pool->idle_ev.word, memory_order_seq_cst);

        if (was_idle(pool))
            break;
        if (timeout_ms >= 0 && rp__deadline_passed(&deadline)) {
            rc = rp__fail(RP_ETIMEDOUT, "rp_pool_wait_idle: not idle after %d ms", timeout_ms);
            break;
        }
        rp__event_wait(&pool->idle_ev, v, timeout_ms >= 0 ? &deadline : NULL);
    }
    atomic_fetch_sub_explicit(&pool->idle_waiters, 1, memory_order_seq_cst);
    return rc;
}

static void join_all(rp_pool *pool)
{
    for (unsigned i = 0; i < pool->n; i++) {
        rp_routee *r = &pool->routees[i];
        if (r->started)
            pthread_join(r->thread, NULL);
        r->started = false;
    }
}

/* Close every mailbox, once.  True for the caller that closed them. */
static bool close_once(rp_pool *pool, int mode)
{
    bool first;

    pthread_mutex_lock(&pool->life);
    if ((first = !pool->closing)) {
        pool->closing = true;
        /* abort before close: a routee that sees the close must see the
         * mode; shut before close: a submit refused by a closed mailbox
         * sees it and returns RP_ESHUTDOWN (pairs with rp__pool_shut()). */
        atomic_store_explicit(&pool->abort, mode == RP_SHUTDOWN_ABORT, memory_order_seq_cst);
        atomic_store_explicit(&pool->shut, true, memory_order_seq_cst);
        for (unsigned i = 0; i < pool->n; i++)
            rp__mailbox_close(&pool->routees[i].mb, RP_ESHUTDOWN);
    }
    pthread_mutex_unlock(&pool->life);
    return first;
}

/* Join the routees, once; every caller returns after they exited.  The
 * joiner joins without life, so a caller that arrives meanwhile waits on
 * life_cv instead of on the lock. */
static void join_once(rp_pool *pool)
{
    pthread_mutex_lock(&pool->life);
    while (pool->joining && !pool->joined)
        pthread_cond_wait(&pool->life_cv, &pool->life);
    if (!pool->joined) {
        pool->joining = true;
        pthread_mutex_unlock(&pool->life);
        join_all(pool);
        pthread_mutex_lock(&pool->life);
        pool->joined = true;
        pthread_cond_broadcast(&pool->life_cv);
    }
    pthread_mutex_unlock(&pool->life);
}

int rp_pool_shutdown(rp_pool *pool, int mode)
{
    if (!pool)
        return rp__fail(RP_EINVAL, "rp_pool_shutdown: pool is NULL");
    if (mode != RP_SHUTDOWN_DRAIN && mode != RP_SHUTDOWN_ABORT)
        return rp__fail(RP_EINVAL, "rp_pool_shutdown: mode is not an rp_shutdown_mode (got %d)", mode);
    if (rp__worker_of(pool))
        return rp__fail(RP_EBUSY, "rp_pool_shutdown: called from a routee of this pool");
    if (close_once(pool, mode)) {
        /* Futures' callbacks run here, with no lock held: one may shut the
         * pool down too (it joins), or try to destroy it (refused). */
        rp_pool *outer = closing_pool;
        closing_pool = pool;
        rp__sg_stop_all(pool->sgs);
        closing_pool = outer;
    }
    join_once(pool);
    return 0;
}

/* Whether this thread may destroy pool now; logs why not. */
static bool may_destroy(rp_pool *pool)
{
    const char *why = NULL;

    if (rp__worker_of(pool))
        why = "from a routee of pool";
    else if (rp__timer_current(&pool->timer))
        why = "from the timer thread of pool";
    else if (closing_pool == pool)
        why = "from a callback that rp_pool_shutdown() or rp_pool_destroy() runs for pool";
    if (why)
        rp__log(pool->log, pool->log_user, RP_LOG_ERROR, "rp_pool_destroy: called %s %s; ignored",
                why, pool->name);
    return why == NULL;
}

void rp_pool_destroy(rp_pool *pool)
{
    rp_pool *outer = closing_pool;

    if (!pool || !may_destroy(pool))
        return;
    closing_pool = pool;
    if (pool->routees) {
        rp__trace_pool_destroy(pool);
        rp_pool_shutdown(pool, RP_SHUTDOWN_DRAIN);
        /* Before the mailboxes go: a timer callback may still deliver. */
        rp__timer_stop(&pool->timer);
        for (unsigned i = 0; i < pool->n; i++)
            rp__mailbox_destroy(&pool->routees[i].mb);
        rp__arena_free(&pool->arena, pool->routees, sizeof(rp_routee) * pool->n,
                       RP_CACHELINE);
    }
    rp__router_free(pool->router);
    rp__timer_stop(&pool->timer); /* no-op when already stopped */
    rp__sg_registry_destroy(pool->sgs);
    free(pool->cpus);
    pthread_mutex_destroy(&pool->trace_lock);
    rp__arena_destroy(&pool->arena);
    rp__future_heap_release(pool->futures); /* futures still out keep it */
    pthread_mutex_destroy(&pool->life);
    pthread_cond_destroy(&pool->life_cv);
    free(pool);
    closing_pool = outer;
}

size_t rp_pool_size(const rp_pool *pool)
{
    return pool ? pool->n : 0;
}

rp_routee *rp_pool_routee(rp_pool *pool, size_t i)
{
    if (!pool || i >= pool->n)
        return NULL;
    return &pool->routees[i];
}
