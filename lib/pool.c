/* SPDX-License-Identifier: MIT */
/*
 * pool.c - the pool: one OS thread per routee, its life cycle, and the
 * worker loop.
 *
 * Worker loop: take the oldest job of the routee's mailbox and run it; when
 * there is none, announce the intent to sleep (rp__event_prepare), look
 * once more, and sleep on the routee's futex.  Producers signal after every
 * enqueue, which costs a fence and a load unless the routee sleeps.
 *
 * Accounting for rp_pool_wait_idle(): accepted = sum of mailbox enqueued
 * counters; finished = sum of run + retired (handed back from a queue).
 * finished <= accepted at every instant, so reading every finished counter
 * before every accepted counter and finding equal sums proves the pool was
 * idle at some instant in between.
 *
 * Stealing.  A routee whose own queue is empty takes up to half the depth
 * (at most RP__STEAL_MAX) of the oldest stealable jobs of the deepest other
 * routee, runs the first and keeps the rest in a private batch that counts
 * in its own depth.  Pinned jobs live in the other lane and are never
 * touched.  Wake-ups: a routee about to sleep sets its bit in idle_bits and
 * then looks at every stealable lane once more; a producer that queued a
 * stealable job behind a busy routee checks idle_bits after its fence and,
 * unless a search is on (a thief woken, or being woken: wake_thief), claims
 * one bit and wakes that routee (Dekker on idle_bits / lanes: one of the
 * two sees the other).  At most one thief is woken per search; a thief
 * that finds more backlog after its steal wakes the next one, so wake-ups
 * grow with the work, not with the number of jobs (no thundering herd).
 *
 * Routee threads.  Each starts with opts.stack_size and, with a CPU set,
 * on its CPU (thread attributes: a CPU refused fails rp_pool_create()),
 * names itself, pins itself for pin_cpus, runs on_thread_start, the loop,
 * then on_thread_stop, all with no lock held.  The hooks cost nothing per
 * job: they run once per thread, outside the loop.
 *
 * Lock order: pool->life and pool->sg_lock are leaves, never held together
 * and never nested with another lock: pool->life guards shutdown's states
 * (closing, joining, joined) and is released before user code runs and
 * before the join; pool->sg_lock guards the list of scatter-gather
 * routers, copied under it and stopped after it.  No library lock is held
 * while a job or a callback runs.
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

#include "pool.h"
#include "probes.h"
#include "scatter.h"

struct rp_job_ctx {
    rp_pool *pool;
    rp_routee *routee;
    rp__reply reply; /* the job's reference, dropped after it returns */
    bool replied;
};

/* The routee whose thread this is, for the "not from a routee" checks. */
static _Thread_local rp_routee *current_routee;
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

void rp__pool_handback(void *p, void *arg, int reason)
{
    rp_pool *pool = p;

    if (pool->on_undelivered)
        pool->on_undelivered(arg, reason, pool->undelivered_user);
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

/* Pin to the (i % count)-th CPU this process may run on. */
static void pin_cpu(unsigned i)
{
    cpu_set_t allowed, one;
    int count, seen = 0;

    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return;
    count = CPU_COUNT(&allowed);
    if (count <= 0)
        return;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed) || seen++ != (int)(i % (unsigned)count))
            continue;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
        return;
    }
}

/* "rp-<name>-<i>", shortening the name so the index survives the kernel's
 * 15-byte limit. */
static void name_thread(const rp_pool *pool, int i)
{
    char idx[12], name[16];
    size_t room, len = strlen(pool->name);

    snprintf(idx, sizeof idx, "%d", i);
    room = 15 - 3 - 1 - strlen(idx);
    if (len > room)
        len = room;
    memcpy(name, "rp-", 3);
    memcpy(name + 3, pool->name, len);
    name[3 + len] = '-';
    memcpy(name + 4 + len, idx, strlen(idx) + 1);
    pthread_setname_np(pthread_self(), name);
}

static void notify_idle(rp_pool *pool)
{
    /* After the fence in rp__event_prepare: pairs with the increment of
     * idle_waiters in rp_pool_wait_idle(). */
    if (atomic_load_explicit(&pool->idle_waiters, memory_order_seq_cst))
        rp__event_broadcast(&pool->idle_ev);
}

/* Owner-only counters: a load and a store, no locked instruction.  The
 * store is a release (free on x86): readers such as wait_idle() acquire. */
static void owner_add(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_store_explicit(counter,
                          atomic_load_explicit(counter, memory_order_relaxed) + n,
                          memory_order_release);
}

/* The queue wait of a sampled job, into the runner's histogram. */
static void observe_wait(rp_routee *r, int64_t enq_ns)
{
    int64_t wait = rp__now_ns() - enq_ns;
    double sec = (double)(wait > 0 ? wait : 0) / 1e9;
    int b = 0;

    while (b < RP_WAIT_BUCKETS - 1 && sec > rp_metrics_wait_bounds[b])
        b++;
    owner_add(&r->wait_hist[b], 1);
    owner_add(&r->wait_sum_ns, (uint64_t)(wait > 0 ? wait : 0));
    owner_add(&r->wait_count, 1);
}

/*
 * An ask whose deadline passed, or a scatter copy whose scatter another
 * routee already won, is not run: nobody would read its answer.  Its arg
 * goes back through on_undelivered (RP_EEXPIRED / RP_ECANCELLED).
 */
static bool skip_job(rp_routee *r, rp__reply *reply, void *arg)
{
    int why = rp__reply_skip(reply, rp__now_ns());

    if (why == 0)
        return false;
    rp__pool_handback(r->pool, arg, why);
    if (why == RP_ECANCELLED) {
        rp__scatter_count_cancelled(reply->scatter);
        rp__reply_release(reply);
    } else {
        rp__reply_fail(reply, RP_ETIMEDOUT, r->index);
    }
    rp__mailbox_count_skipped(&r->mb, why);
    return true;
}

static void run_job(rp_routee *r, rp__job *job)
{
    rp_job_ctx ctx = {r->pool, r, job->reply, false};
    rp_job_fn fn = job->fn;
    void *arg = job->arg;

    int64_t enq_ns = job->enq_ns;
    int32_t submit_tid = job->submit_tid;
    bool sampled = job->flags & RP__JOB_SAMPLED;

    if (sampled)
        observe_wait(r, enq_ns);
    if (!rp__reply_none(&ctx.reply) && skip_job(r, &ctx.reply, arg))
        return;
    RP_PROBE3(job__start, r->pool->name, r->index, arg);
    if (RP_UNLIKELY(submit_tid != 0) && r->pool->rings) {
        rp__trace_event ev = {rp__now_ns(), 0, enq_ns, RP__EV_SLICE, submit_tid, 1};
        fn(&ctx, arg);
        ev.t1 = rp__now_ns();
        rp__trace_push(r->pool->rings[r->index], &ev);
    } else {
        fn(&ctx, arg);
    }
    RP_PROBE3(job__end, r->pool->name, r->index, arg);
    /* A job that returns without answering fails its ask at once. */
    if (!ctx.replied)
        rp__reply_fail(&ctx.reply, RP_ENOREPLY, r->index);
    else
        rp__reply_release(&ctx.reply);
    owner_add(&r->run, 1);
}

/* A reply or failure that came after its ask completed: rc for the caller
 * of func, with rp_errmsg() saying why (error.h: every failing call sets it). */
static int too_late(int rc, const char *func)
{
    return rp__fail(rc, "%s: the ask had already completed (%s); the value stays the job's", func,
                    rc == RP_ETIMEDOUT ? "it timed out"
                                       : "another routee won the scatter, or it stopped");
}

/* The ask's own future after a refused completion: timed out or not. */
static int refused(const rp_job_ctx *ctx, const char *func)
{
    return too_late(rp_future_status(ctx->reply.future) == RP_FUTURE_FAILED ? RP_ETIMEDOUT
                                                                             : RP_ECANCELLED,
                    func);
}

static int job_reply(rp_job_ctx *ctx, void *value, rp_value_free_fn free_fn, const char *func)
{
    int rc;

    if (!ctx || rp__reply_none(&ctx->reply) || ctx->replied)
        return rp__fail(RP_EINVAL, "%s: %s", func, !ctx ? "ctx is NULL"
                        : ctx->replied ? "the job already replied" : "the job was not asked");
    ctx->replied = true;
    if (ctx->reply.scatter) {
        rc = rp__scatter_reply_owned(ctx->reply.scatter, ctx->reply.member, value, free_fn,
                                     ctx->routee->index);
        return rc < 0 ? too_late(rc, func) : 0;
    }
    if (rp__future_fulfil_owned(ctx->reply.future, value, free_fn, ctx->routee->index))
        return 0;
    return refused(ctx, func);
}

int rp_job_reply(rp_job_ctx *ctx, void *value)
{
    return job_reply(ctx, value, NULL, "rp_job_reply");
}

int rp_job_reply_owned(rp_job_ctx *ctx, void *value, rp_value_free_fn free_fn)
{
    return job_reply(ctx, value, free_fn, "rp_job_reply_owned");
}

int rp_job_fail(rp_job_ctx *ctx, int code, const char *message)
{
    int rc;

    if (!ctx || rp__reply_none(&ctx->reply) || ctx->replied)
        return rp__fail(RP_EINVAL, "rp_job_fail: %s", !ctx ? "ctx is NULL"
                        : ctx->replied ? "the job already replied" : "the job was not asked");
    ctx->replied = true;
    if (!message)
        message = rp_strerror(code);
    if (ctx->reply.scatter) {
        rc = rp__scatter_member_fail(ctx->reply.scatter, ctx->reply.member, code,
                                     ctx->routee->index, message);
        return rc < 0 ? too_late(rc, "rp_job_fail") : 0;
    }
    if (rp__future_fail(ctx->reply.future, code, ctx->routee->index, "%s", message))
        return 0;
    return refused(ctx, "rp_job_fail");
}

bool rp_job_cancelled(const rp_job_ctx *ctx)
{
    return ctx && ctx->reply.scatter && rp__scatter_cancelled(ctx->reply.scatter);
}


static uint64_t idle_bit(const rp_routee *r)
{
    return 1ull << (r->index % 64);
}

static void set_idle(rp_pool *pool, const rp_routee *r)
{
    atomic_fetch_or_explicit(&pool->idle_bits[r->index / 64], idle_bit(r),
                             memory_order_seq_cst);
}

/* Clear our own bit.  False when a waker cleared it first: then that
 * waker woke us to search. */
static bool clear_idle(rp_pool *pool, const rp_routee *r)
{
    uint64_t old = atomic_fetch_and_explicit(&pool->idle_bits[r->index / 64],
                                             ~idle_bit(r), memory_order_seq_cst);
    return (old & idle_bit(r)) != 0;
}

/* Claim one idle routee's bit and signal it.  False when none is idle. */
static bool signal_one_idle(rp_pool *pool)
{
    for (unsigned w = 0; w < (pool->n + 63) / 64; w++) {
        uint64_t bits = atomic_load_explicit(&pool->idle_bits[w], memory_order_seq_cst);
        while (bits) {
            uint64_t bit = bits & -bits;
            uint64_t old = atomic_fetch_and_explicit(&pool->idle_bits[w], ~bit,
                                                     memory_order_seq_cst);
            if (old & bit) {
                rp__event_signal(&pool->routees[w * 64 + __builtin_ctzll(bit)].mb.ev);
                return true;
            }
            bits = old & ~bit;
        }
    }
    return false;
}

/*
 * Wake one sleeping routee to steal, unless a search is on.  The search
 * word (pool->searching) is stamped with the clock when a waker takes it,
 * and marked RP__SEARCH_WOKEN after the waker's signal; the woken thief
 * ends the search (stop_searching).  A waker descheduled between taking
 * the search and signalling would otherwise keep every other producer from
 * waking a thief for as long as it is off the CPU: a search older than
 * RP__EV_HELP_NS and not yet woken is taken over.  The clock is read only
 * when this call may wake someone (the signal costs far more) or finds a
 * search that is not yet woken (a short window).  Taken over, the stalled
 * waker still wakes its thief when it runs again: one thief too many, never
 * one too few; its final CAS fails and leaves the word to the new search.
 */
static void wake_thief(rp_pool *pool)
{
    int64_t s = atomic_load_explicit(&pool->searching, memory_order_seq_cst);
    int64_t now, mine;

    if (s & RP__SEARCH_WOKEN)
        return;
    now = rp__now_ns();
    if (s && now - (s >> 1) < RP__EV_HELP_NS)
        return;
    mine = now << 1;
    if (!atomic_compare_exchange_strong_explicit(&pool->searching, &s, mine,
                                                 memory_order_seq_cst, memory_order_relaxed))
        return;
    if (signal_one_idle(pool))
        atomic_compare_exchange_strong_explicit(&pool->searching, &mine, mine | RP__SEARCH_WOKEN,
                                                memory_order_seq_cst, memory_order_relaxed);
    else
        atomic_compare_exchange_strong_explicit(&pool->searching, &mine, 0,
                                                memory_order_seq_cst, memory_order_relaxed);
}

static bool any_idle(rp_pool *pool)
{
    for (unsigned w = 0; w < (pool->n + 63) / 64; w++)
        if (atomic_load_explicit(&pool->idle_bits[w], memory_order_seq_cst))
            return true;
    return false;
}

void rp__pool_stealable_queued(rp_pool *pool, rp_routee *target)
{
    if (!pool->steal)
        return;
    /* Idle bits first: in a busy pool nobody is idle and the line stays
     * shared, while running and depth change with every job.  Any order
     * of these loads is fine: all of them come after the push, and a
     * thief sets its idle bit before it looks at the lanes (Dekker). */
    if (!any_idle(pool))
        return;
    if (!atomic_load_explicit(&target->running, memory_order_seq_cst) &&
        rp__mailbox_depth(&target->mb) <= 1)
        return; /* the target itself is about to run it */
    wake_thief(pool);
}

/* A woken thief ends the search.  Only after a takeover can two thieves
 * hold one: then the first to stop ends the other's too, and a later
 * producer wakes one more thief than needed, no fewer. */
static void stop_searching(rp_pool *pool, bool *searching)
{
    if (*searching)
        atomic_store_explicit(&pool->searching, 0, memory_order_seq_cst);
    *searching = false;
}

/*
 * Running flag, stored on change only.  Becoming running with stealable
 * jobs still queued behind us wakes a sleeping thief: a producer that
 * queued one while we were between taking a job and running it saw us not
 * running and woke nobody (Dekker: we store running and then load
 * idle_bits; a thief sets its idle bit and then reads running).
 */
static void set_running(rp_routee *r, bool *running, bool now)
{
    if (*running == now)
        return;
    *running = now;
    atomic_store_explicit(&r->running, now, memory_order_seq_cst);
    if (now && r->pool->steal && rp__mailbox_has_stealable(&r->mb) && any_idle(r->pool))
        wake_thief(r->pool);
}

/*
 * Whether a thief may take v's stealable work: only work that waits - v
 * is running a job, or holds more than the one job it is about to take.
 * An idle routee with one queued job has been signalled and will run it
 * itself; stealing that job would only move it away from the routee the
 * router chose (and make an idle pool stop behaving like its router).
 */
static bool worth_stealing(rp_routee *v)
{
    return rp__mailbox_has_stealable(&v->mb) &&
           (atomic_load_explicit(&v->running, memory_order_seq_cst) ||
            rp__mailbox_depth(&v->mb) > 1);
}

/* The deepest other routee with work worth stealing, or NULL. */
static rp_routee *pick_victim(rp_routee *r, int64_t *depth)
{
    rp_pool *pool = r->pool;
    rp_routee *victim = NULL;

    *depth = 0;
    for (unsigned k = 1; k < pool->n; k++) {
        rp_routee *v = &pool->routees[((unsigned)r->index + k) % pool->n];
        int64_t d;

        if (!worth_stealing(v))
            continue;
        d = rp__mailbox_depth(&v->mb);
        if (d > *depth || !victim) {
            victim = v;
            *depth = d;
        }
    }
    return victim;
}

/* Steal a batch; run the first, keep the rest (counted in our depth).
 * *searching: whether this routee was woken to steal (pool->searching
 * counts it); cleared here, before handing the search on, or wake_thief()
 * would see the search still running and wake nobody. */
static bool steal(rp_routee *r, bool *searching, rp__job *out)
{
    int64_t depth;
    rp_routee *victim = pick_victim(r, &depth);
    unsigned want, got;

    if (!victim)
        return false;
    want = depth / 2 < 1 ? 1 : depth / 2 > RP__STEAL_MAX ? RP__STEAL_MAX : (unsigned)(depth / 2);
    /* Into the stolen batch (empty: next_job() only steals then). */
    if (!(got = rp__mailbox_steal(&victim->mb, r->stolen, want)))
        return false;
    owner_add(&r->stole, got);
    RP_PROBE4(steal, r->pool->name, r->index, victim->index, got);
    if (RP_UNLIKELY(atomic_load_explicit(&r->pool->trace_sample, memory_order_acquire)) &&
        atomic_load_explicit(&r->pool->trace_steals, memory_order_relaxed) && r->pool->rings) {
        rp__trace_event ev = {rp__now_ns(), 0, 0, RP__EV_STEAL, victim->index, got};
        rp__trace_push(r->pool->rings[r->index], &ev);
    }
    *out = r->stolen[0];
    if (got > 1)
        rp__mailbox_reserve(&r->mb, got - 1);
    r->stolen_next = 1;
    r->stolen_count = got;
    /* More work waits behind the victim: hand the search on. */
    stop_searching(r->pool, searching);
    if (worth_stealing(victim) && any_idle(r->pool))
        wake_thief(r->pool);
    return true;
}

static bool take_stolen(rp_routee *r, rp__job *out)
{
    if (r->stolen_next == r->stolen_count)
        return false;
    rp__mailbox_release_owner(&r->mb, 1);
    *out = r->stolen[r->stolen_next++];
    return true;
}

/* Our own oldest job, and the rest of its batch run (up to the stolen
 * batch's size: they wait there, still counted in our depth). */
static bool take_own(rp_routee *r, rp__job *out)
{
    unsigned got = rp__mailbox_pop_owner_run(&r->mb, r->stolen, RP__STEAL_MAX);

    if (!got)
        return false;
    *out = r->stolen[0];
    r->stolen_next = 1;
    r->stolen_count = got;
    return true;
}

/* The next job to run into *out: a stolen (or batch-run) one we hold, our
 * own oldest, or a steal.  False when there is none. */
static bool next_job(rp_routee *r, bool *searching, rp__job *out)
{
    return take_stolen(r, out) || take_own(r, out) ||
           (r->pool->steal && steal(r, searching, out));
}

/* The thief's last look before it sleeps (after setting its idle bit). */
static bool any_stealable(rp_routee *r)
{
    rp_pool *pool = r->pool;

    for (unsigned k = 1; k < pool->n; k++)
        if (worth_stealing(&pool->routees[((unsigned)r->index + k) % pool->n]))
            return true;
    return false;
}

/* Whether a closed mailbox means: hand everything back and exit. */
static bool must_hand_back(rp_routee *r, int closed)
{
    return closed == RP_ESTOPPED ||
           (closed && atomic_load_explicit(&r->pool->abort, memory_order_acquire));
}

/* Move a stopped routee's stealable job to the live routee with the
 * smallest mailbox.  0 when it was accepted there. */
static int reroute(rp_routee *r, rp__job *job)
{
    rp_pool *pool = r->pool;
    rp_routee *best = NULL;
    int64_t best_score = 0;
    int rc;

    for (unsigned k = 1; k < pool->n; k++) {
        rp_routee *t = &pool->routees[((unsigned)r->index + k) % pool->n];
        int64_t score;

        if (rp__routee_stopped(t))
            continue;
        score = rp__routee_score(t);
        if (!best || score < best_score) {
            best = t;
            best_score = score;
        }
    }
    if (!best)
        return RP_ESTOPPED;
    if ((rc = rp__mailbox_push_mp(&best->mb, job->fn, job->arg, false, &job->reply)) == 0)
        rp__pool_stealable_queued(pool, best);
    return rc;
}

/* What happens to each job a closing routee still holds. */
static void dispose(void *ctx, rp__job *job)
{
    rp_routee *r = ctx;
    int reason = rp__mailbox_closed(&r->mb);

    if (reason == RP_ESTOPPED && r->pool->steal && !(job->flags & RP__JOB_PINNED) &&
        reroute(r, job) == 0) {
        atomic_fetch_add_explicit(&r->rerouted, 1, memory_order_relaxed);
        return;
    }
    rp__mailbox_hand_back(&r->mb, job, reason);
}

/* Stop or abort: empty the stolen batch and the mailbox. */
static void retire(rp_routee *r)
{
    rp__job job;

    while (take_stolen(r, &job)) {
        dispose(r, &job);
        atomic_fetch_add_explicit(&r->mb.retired, 1, memory_order_release);
    }
    rp__mailbox_drain(&r->mb, dispose, r);
}

/* A spin-wait hint: PAUSE on x86 (yields the core's pipeline to its
 * sibling hyperthread and saves power). */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* Whether a spinning routee should stop spinning: work arrived (its own,
 * or stealable elsewhere), or its mailbox closed. */
static bool spin_found(rp_routee *r, unsigned i)
{
    if (!rp__mailbox_empty(&r->mb) || rp__mailbox_closed(&r->mb))
        return true;
    /* Other routees' lanes: every 8th look, they are further away. */
    return r->pool->steal && (i & 7) == 0 && any_stealable(r);
}

/*
 * Look for work for up to the routee's spin window before sleeping (see
 * rp_pool_options.idle_spin_us).  True when there may be work.  Producers
 * see a spinning routee as awake: they pay no system call, and no thief
 * is woken for it (it is not in idle_bits); it finds stealable work by
 * itself.  The window adapts: halved after SPIN_FAILS_TO_SHRINK spins in
 * a row that found nothing (the end of a burst is one such spin, and must
 * not shrink it), down to 1/16; doubled after one that found work.  At
 * most max_spinners spin at once.
 */
#define SPIN_FAILS_TO_SHRINK 4

static bool spin_for_work(rp_routee *r)
{
    rp_pool *pool = r->pool;
    unsigned n = atomic_load_explicit(&pool->spinners, memory_order_relaxed);
    int64_t end;
    bool found = false;

    if (r->spin_ns <= 0)
        return false;
    do {
        if (n >= pool->max_spinners)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&pool->spinners, &n, n + 1,
                                                    memory_order_relaxed, memory_order_relaxed));
    /* wait_idle() must not wait out the spin.  An RMW, not a fence (TSan
     * models no fences): if a waiter's increment of idle_waiters comes
     * after this in its order, the waiter reads from us and sees our run
     * counter; if before, we see it and wake the waiter. */
    if (atomic_fetch_add_explicit(&pool->idle_waiters, 0, memory_order_seq_cst))
        rp__event_broadcast(&pool->idle_ev);
    end = rp__now_ns() + r->spin_ns;
    for (unsigned i = 1; !found; i++) {
        cpu_relax();
        if ((found = spin_found(r, i)))
            break;
        if ((i & 15) == 0 && rp__now_ns() >= end)
            break;
    }
    atomic_fetch_sub_explicit(&pool->spinners, 1, memory_order_relaxed);
    if (found) {
        r->spin_ns = r->spin_ns * 2 > pool->spin_ns ? pool->spin_ns : r->spin_ns * 2;
        r->spin_fails = 0;
    } else if (++r->spin_fails >= SPIN_FAILS_TO_SHRINK && r->spin_ns > pool->spin_ns / 16) {
        r->spin_ns /= 2;
        r->spin_fails = 0;
    }
    return found;
}

/*
 * Without a spin window chosen automatically (no CPU to spare): give the
 * CPU away once before sleeping.  A submitter that shares this CPU runs
 * now and may queue the next job, which this routee then takes without a
 * futex sleep and wake-up (the wake-up costs the submitter a system call
 * and, in a VM, an interprocessor interrupt).  Alone on its CPU the yield
 * returns at once.  One yield per idle transition: no busy-waiting.
 * Measured on 2 vCPUs, 1 submitter, 2 routees, empty jobs: 130 -> 74
 * ns/job with stealing off, 135 -> 105 with it on (docs/performance.md).
 */
static bool yield_for_work(rp_routee *r)
{
    if (!r->pool->idle_yield)
        return false;
    sched_yield();
    return spin_found(r, 0);
}

/*
 * Whether every lane operation on r's lanes that began before the trim
 * detached its free records is over (lane.c, "Trimming"): the depth read
 * released-first is 0 (every producer that reserved has linked its job,
 * after which it touches no record), no producer evicts, and every other
 * routee sleeps (odd sleep_gen: between its last look and its wake-up it
 * touches no lane but, trimming, its own).  The RMW orders the detach
 * before these loads (TSan models no fences).
 */
static bool trim_quiescent(void *p)
{
    rp_routee *r = p;
    rp_pool *pool = r->pool;

    if (atomic_fetch_add_explicit(&r->mb.evicting, 0, memory_order_seq_cst) != 0 ||
        rp__mailbox_depth(&r->mb) != 0)
        return false;
    for (unsigned i = 0; i < pool->n; i++)
        if (&pool->routees[i] != r &&
            !(atomic_load_explicit(&pool->routees[i].sleep_gen, memory_order_seq_cst) & 1))
            return false;
    return true;
}

static bool trim_due(const rp_routee *r)
{
    return r->pool->trim_ns > 0 && (rp__lane_trim_due(&r->mb.pinned, r->pool->trim_keep) ||
                                    rp__lane_trim_due(&r->mb.stealable, r->pool->trim_keep));
}

/* Trim the lanes that are due; the memory back to the system when any
 * slab went. */
static void trim_lanes(rp_routee *r)
{
    rp__lane *lanes[2] = {&r->mb.pinned, &r->mb.stealable};
    bool freed = false;

    for (int i = 0; i < 2; i++)
        if (rp__lane_trim_due(lanes[i], r->pool->trim_keep) &&
            rp__lane_trim(lanes[i], r->pool->trim_keep, trim_quiescent, r) > 0)
            freed = true;
    if (freed)
        rp__arena_release(&r->pool->arena);
}

/*
 * The futex sleep, with sleep_gen odd throughout.  When a lane grew since
 * its last trim the first sleep has a deadline (trim_idle_ms); still idle
 * then, the routee trims (lane.c, "Trimming") and sleeps on, without a
 * deadline once nothing is due.  A trim that found another routee awake
 * is tried again a deadline later.
 */
static void sleep_and_trim(rp_routee *r, uint32_t v)
{
    /* RMWs (full barriers): a trimmer that reads the odd value before our
     * wake-up is ordered before every lane load we make after it. */
    atomic_fetch_add_explicit(&r->sleep_gen, 1, memory_order_seq_cst);
    for (;;) {
        struct timespec dl;
        int64_t end;

        if (!trim_due(r)) {
            rp__event_wait(&r->mb.ev, v, NULL);
            break;
        }
        end = rp__now_ns() + r->pool->trim_ns;
        dl.tv_sec = (time_t)(end / 1000000000);
        dl.tv_nsec = (long)(end % 1000000000);
        rp__event_wait(&r->mb.ev, v, &dl);
        if (rp__now_ns() < end || !rp__mailbox_empty(&r->mb) || rp__mailbox_closed(&r->mb))
            break; /* woken (or spuriously): look for work */
        trim_lanes(r);
    }
    atomic_fetch_add_explicit(&r->sleep_gen, 1, memory_order_seq_cst);
}

/* Sleep until there may be work, or a reason to exit. */
static void idle_sleep(rp_routee *r, bool *searching)
{
    rp_pool *pool = r->pool;
    uint32_t v;
    int closed;

    if (pool->steal)
        set_idle(pool, r);
    v = rp__event_prepare(&r->mb.ev);
    closed = rp__mailbox_closed(&r->mb);
    if (rp__mailbox_empty(&r->mb) && !must_hand_back(r, closed) &&
        !(closed && rp__mailbox_depth(&r->mb) == 0) &&
        !(pool->steal && any_stealable(r))) {
        notify_idle(pool);
        owner_add(&r->sleeps, 1);
        sleep_and_trim(r, v);
    }
    rp__event_done(&r->mb.ev);
    if (pool->steal && !clear_idle(pool, r))
        *searching = true;
}

/* Busy flag and busy time.  The clock is read per busy period, not per
 * job: a routee that runs job after job pays nothing.  busy_since and
 * busy_ns change under the busy_seq seqlock (read in metrics.c). */
static void set_busy(rp_routee *r, bool *busy, bool now)
{
    uint32_t seq;
    int64_t t;

    if (*busy == now)
        return;
    /* Store only on change: routers read this line on every route. */
    atomic_store_explicit(&r->busy, now, memory_order_relaxed);
    *busy = now;
    if (!r->mb.metrics)
        return;
    /* Seqlock without fences (TSan models no fences): the data stores are
     * releases, so a reader whose acquire loads see new data also sees
     * the odd sequence and retries.  The clock is read after the sequence
     * went odd: a reader that saw it even took its own clock earlier, so
     * busy time never goes backwards. */
    seq = atomic_load_explicit(&r->busy_seq, memory_order_relaxed);
    atomic_store_explicit(&r->busy_seq, seq + 1, memory_order_seq_cst);
    t = rp__now_ns();
    if (now) {
        atomic_store_explicit(&r->busy_since, t, memory_order_release);
    } else {
        uint64_t ns = atomic_load_explicit(&r->busy_ns, memory_order_relaxed);
        ns += (uint64_t)(t - atomic_load_explicit(&r->busy_since, memory_order_relaxed));
        atomic_store_explicit(&r->busy_ns, ns, memory_order_release);
        atomic_store_explicit(&r->busy_since, 0, memory_order_release);
    }
    atomic_store_explicit(&r->busy_seq, seq + 2, memory_order_release);
}


/* Whether the next look may find a job: one we hold, one of our own
 * queued, or one worth stealing.  Asked only on the way from idle to
 * busy (a routee running job after job does not ask): a job that arrives
 * just after a "no" is found by idle_sleep(), which looks again after
 * announcing its sleep. */
static bool work_in_sight(rp_routee *r)
{
    return r->stolen_next != r->stolen_count || !rp__mailbox_empty(&r->mb) ||
           (r->pool->steal && any_stealable(r));
}

/* Run jobs until the mailbox closed and the routee drained or handed
 * back what it held. */
static void routee_loop(rp_routee *r)
{
    bool busy = false, running = false, searching = false;

    for (;;) {
        int closed = rp__mailbox_closed(&r->mb);
        rp__job job;

        if (must_hand_back(r, closed)) {
            retire(r);
            break;
        }
        /* Busy before the take: the score depth + busy must not dip to 0
         * between taking a job and starting it.  But only with a job in
         * sight: busy means "running a job", and a routee that looks and
         * finds nothing (after its start, after a wake-up) is idle. */
        if (busy || work_in_sight(r)) {
            set_busy(r, &busy, true);
            if (next_job(r, &searching, &job)) {
                stop_searching(r->pool, &searching);
                set_running(r, &running, true);
                run_job(r, &job);
                continue;
            }
        }
        set_running(r, &running, false);
        set_busy(r, &busy, false);
        stop_searching(r->pool, &searching);
        rp__mailbox_flush(&r->mb);
        if (closed && rp__mailbox_depth(&r->mb) == 0)
            break; /* drained */
        if (!spin_for_work(r) && !yield_for_work(r))
            idle_sleep(r, &searching);
    }
    stop_searching(r->pool, &searching);
    set_running(r, &running, false);
    set_busy(r, &busy, false);
    /* Orders the stores above before notify_idle()'s read of idle_waiters,
     * as a fence would: an RMW on idle_waiters itself, so a waiter whose
     * increment comes later synchronizes with it and sees this routee not
     * busy.  Once per thread; gcc refuses atomic_thread_fence here under
     * -fsanitize=thread (-Wtsan), once routee_loop is inlined. */
    atomic_fetch_add_explicit(&r->pool->idle_waiters, 0, memory_order_seq_cst);
    notify_idle(r->pool);
    /* It touches no lane any more: odd for good, so trims need not wait
     * for it (trim_quiescent). */
    atomic_fetch_add_explicit(&r->sleep_gen, 1, memory_order_seq_cst);
}

/*
 * A routee thread.  The hooks run around the loop with no lock held, and
 * with current_routee set, so that what a job may not call (wait_idle,
 * shutdown, destroy of this pool) is refused from a hook too.  The stop
 * hook runs after notify_idle(): wait_idle() does not wait for it, the
 * join in shutdown does.  An explicit CPU set was applied by
 * pthread_create (thread_attr()).
 */
static void *routee_main(void *p)
{
    rp_routee *r = p;
    rp_pool *pool = r->pool;

    current_routee = r;
    atomic_store_explicit(&r->tid, rp__tid(), memory_order_release);
    name_thread(pool, r->index);
    if (pool->pin_cpus)
        pin_cpu((unsigned)r->index);
    if (pool->on_thread_start)
        pool->on_thread_start(pool, r->index, pool->thread_user);
    routee_loop(r);
    if (pool->on_thread_stop)
        pool->on_thread_stop(pool, r->index, pool->thread_user);
    return NULL;
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
        atomic_init(&r->run, 0);
        atomic_init(&r->stole, 0);
        atomic_init(&r->sleeps, 0);
        atomic_init(&r->sleep_gen, 0);
        atomic_init(&r->rerouted, 0);
        r->spin_ns = pool->spin_ns;
        rc = rp__mailbox_init(&r->mb, &pool->arena, o->mailbox_capacity,
                              o->overflow, rp__pool_handback, pool, (int)i);
        if (rc < 0)
            return rc;
        r->mb.metrics = o->metrics;
        r->mb.trace_sample = &pool->trace_sample;
    }
    return 0;
}

int rp__pool_add_sg(rp_pool *pool, struct rp__sg *sg)
{
    int rc = 0;

    pthread_mutex_lock(&pool->sg_lock);
    if (pool->nsgs == pool->capsgs) {
        size_t cap = pool->capsgs ? pool->capsgs * 2 : 4;
        struct rp__sg **grown = realloc(pool->sgs, cap * sizeof *grown);
        if (grown) {
            pool->sgs = grown;
            pool->capsgs = cap;
        } else {
            rc = RP_ENOMEM;
        }
    }
    if (rc == 0)
        pool->sgs[pool->nsgs++] = sg;
    pthread_mutex_unlock(&pool->sg_lock);
    return rc;
}

void rp__pool_remove_sg(rp_pool *pool, struct rp__sg *sg)
{
    rp_scatter_stats final;

    pthread_mutex_lock(&pool->sg_lock);
    for (size_t i = 0; i < pool->nsgs; i++) {
        if (pool->sgs[i] == sg) {
            pool->sgs[i] = pool->sgs[--pool->nsgs];
            /* Keep its counts: a counter must not go down when a router
             * goes away. */
            rp__sg_stats(sg, &final);
            rp__scatter_stats_add(&pool->sg_retired, &final);
            break;
        }
    }
    pthread_mutex_unlock(&pool->sg_lock);
}

/* Shutdown: every open scatter fails at once ("stopped ..."), not after
 * its timeout. */
static void stop_scatters(rp_pool *pool)
{
    struct rp__sg **copy = NULL;
    size_t n;

    /* Copy with references, then stop outside the lock: stopping runs
     * completion callbacks, which may create or destroy routers. */
    pthread_mutex_lock(&pool->sg_lock);
    n = pool->nsgs;
    if (n && (copy = malloc(n * sizeof *copy)))
        for (size_t i = 0; i < n; i++)
            rp__sg_retain(copy[i] = pool->sgs[i]);
    pthread_mutex_unlock(&pool->sg_lock);
    if (!copy)
        return; /* out of memory: open scatters fail at their deadlines */
    for (size_t i = 0; i < n; i++) {
        rp__sg_stop_open(copy[i]);
        rp__sg_release(copy[i]);
    }
    free(copy);
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
            err = pthread_create(&r->thread, &attr, routee_main, r);
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
    pthread_mutex_init(&pool->sg_lock, NULL);
    pthread_mutex_init(&pool->trace_lock, NULL);
    rp__arena_create(&pool->arena);
    if ((rc = rp__future_heap_create(&pool->futures)) < 0 ||
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
        accepted += atomic_load_explicit(&pool->routees[i].mb.enqueued,
                                         memory_order_seq_cst);
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
    if (current_routee && current_routee->pool == pool)
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
    if (current_routee && current_routee->pool == pool)
        return rp__fail(RP_EBUSY, "rp_pool_shutdown: called from a routee of this pool");
    if (close_once(pool, mode)) {
        /* Futures' callbacks run here, with no lock held: one may shut the
         * pool down too (it joins), or try to destroy it (refused). */
        rp_pool *outer = closing_pool;
        closing_pool = pool;
        stop_scatters(pool);
        closing_pool = outer;
    }
    join_once(pool);
    return 0;
}

/* Whether this thread may destroy pool now; logs why not. */
static bool may_destroy(rp_pool *pool)
{
    const char *why = NULL;

    if (current_routee && current_routee->pool == pool)
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
    free(pool->sgs);
    free(pool->cpus);
    pthread_mutex_destroy(&pool->sg_lock);
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

int rp_job_routee(const rp_job_ctx *ctx)
{
    return ctx ? ctx->routee->index : -1;
}

rp_pool *rp_job_pool(const rp_job_ctx *ctx)
{
    return ctx ? ctx->pool : NULL;
}
