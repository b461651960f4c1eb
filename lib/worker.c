/* SPDX-License-Identifier: MIT */
/*
 * worker.c - a routee's thread: the worker loop, idle spinning and
 * sleeping, running a job, and the rp_job_* calls a job makes.
 *
 * Worker loop: take the oldest job of the routee's mailbox and run it; when
 * there is none, announce the intent to sleep (rp__event_prepare), look
 * once more, and sleep on the routee's futex.  Producers signal after every
 * enqueue, which costs a fence and a load unless the routee sleeps.  A
 * routee with nothing of its own steals (steal.c).
 *
 * Routee threads.  Each starts with opts.stack_size and, with a CPU set,
 * on its CPU (thread attributes, pool.c: a CPU refused fails
 * rp_pool_create()), names itself, pins itself for pin_cpus, runs
 * on_thread_start, the loop, then on_thread_stop, all with no lock held.
 * The hooks cost nothing per job: they run once per thread, outside the
 * loop.
 *
 * No library lock is held while a job or a callback runs.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "future.h"
#include "pool_record.h"
#include "probes.h"
#include "routee.h"
#include "steal.h"
#include "trace_ring.h"
#include "worker.h"

struct rp_job_ctx {
    rp_pool *pool;
    rp_routee *routee;
    rp__reply reply; /* the job's reference, dropped after it returns */
    bool replied;
};

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


/* The queue wait of a sampled job, into the runner's histogram. */
static void observe_wait(rp_routee *r, int64_t enq_ns)
{
    int64_t wait = rp__now_ns() - enq_ns;
    double sec = (double)(wait > 0 ? wait : 0) / 1e9;
    int b = 0;

    while (b < RP_WAIT_BUCKETS - 1 && sec > rp_metrics_wait_bounds[b])
        b++;
    rp__owner_add(&r->wait_hist[b], 1);
    rp__owner_add(&r->wait_sum_ns, (uint64_t)(wait > 0 ? wait : 0));
    rp__owner_add(&r->wait_count, 1);
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
    rp__routee_handback(r->pool, arg, why);
    if (why == RP_ECANCELLED)
        rp__reply_release(reply); /* counted cancelled by the skip */
    else
        rp__reply_fail(reply, RP_ETIMEDOUT, r->index);
    rp__mailbox_count_skipped(&r->mb, why);
    return true;
}

static void run_job(rp_routee *r, const rp__job *job)
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
    rp__owner_add(&r->run, 1);
}

/* A reply or failure that came after its ask completed: rc for the caller
 * of func, with rp_errmsg() saying why (error.h: every failing call sets it). */
static int too_late(int rc, const char *func)
{
    return rp__fail(rc, "%s: the ask had already completed (%s); the value stays the job's", func,
                    rc == RP_ETIMEDOUT ? "it timed out"
                                       : "another routee won the scatter, or it stopped");
}

static int job_reply(rp_job_ctx *ctx, void *value, rp_value_free_fn free_fn, const char *func)
{
    int rc;

    if (!ctx || rp__reply_none(&ctx->reply) || ctx->replied)
        return rp__fail(RP_EINVAL, "%s: %s", func, !ctx ? "ctx is NULL"
                        : ctx->replied ? "the job already replied" : "the job was not asked");
    ctx->replied = true;
    rc = rp__reply_fulfil(&ctx->reply, value, free_fn, ctx->routee->index);
    return rc < 0 ? too_late(rc, func) : 0;
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
    rc = rp__reply_answer_fail(&ctx->reply, code, ctx->routee->index, message);
    return rc < 0 ? too_late(rc, "rp_job_fail") : 0;
}

bool rp_job_cancelled(const rp_job_ctx *ctx)
{
    return ctx && rp__reply_cancelled(&ctx->reply);
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
        rp__steal_queued(pool, best);
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

    while (rp__steal_take(r, &job)) {
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
    return r->pool->steal && (i & 7) == 0 && rp__steal_any(r);
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
 * How long a routee alone on its CPU lets work gather before it looks
 * again (design.md, "Letting work gather").  A consumer that is caught
 * up with its producer on another CPU takes each job as soon as it is
 * linked: every push then finds the tail record, the depth counter and
 * the next free record on the consumer's CPU and waits for their lines to
 * come back, one round trip per job (~30-200 ns here by placement).  A
 * consumer that waits a little finds many jobs and takes them in runs,
 * touching none of the producer's lines meanwhile, so the producer's
 * pushes stay on its own CPU.  Blind (PAUSE and the clock only): polling
 * a lane would pull back the very lines the wait keeps away.
 */
#define GATHER_NS 2000

/* Let work gather: the CPU is ours alone, so the wait takes it from no
 * other thread. */
static void gather_alone(rp_routee *r, int64_t from)
{
    int64_t end = from + GATHER_NS;

    for (unsigned i = 1;; i++) {
        cpu_relax();
        if ((i & 15) == 0 && rp__now_ns() >= end)
            break;
    }
    rp__owner_add(&r->gathers, 1);
}

/*
 * Let a young record grow before taking it: a routee alone on its CPU in
 * a stream (r->streaming: its last yield came back at once and found
 * work) that finds nothing but one young record - the lane's last, still
 * growing (lane.c, "Growing") - waits GATHER_NS first, blind, as at an
 * idle transition (gather_alone), while the producer fills the record on
 * lines this routee does not touch; then it takes the record, whatever
 * it holds.  Taken at once, the record would be sealed with a job or two,
 * and each of the producer's next tells would start a record (a line
 * transfer each).  A record that did not change during the wait ends the
 * stream (no more waits until a yield finds one again), so jobs that
 * come now and then pay at most one wait each time a stream seems to
 * start.  Stays busy and running meanwhile: no idle transition.
 * young: the record's jobs before the wait; returns them after it.
 * Measured: design.md, "Letting a young record grow".
 */
static unsigned let_young_grow(rp_routee *r, unsigned young)
{
    unsigned now;

    gather_alone(r, rp__now_ns());
    if ((now = rp__mailbox_young(&r->mb)) == young)
        r->streaming = false;
    return now;
}

/*
 * Pass over a young record of our own for a steal: when all our mailbox
 * holds is a record its producer is still filling (lane.c, "Growing") and
 * the routee we last stole from has work ready, that work has waited
 * longer (queued behind a running job, or its routee preempted), while
 * taking our record now would seal it with a job or two, so that each of
 * the producer's next tells would start a record of its own: a line
 * transfer each when the producer runs on another CPU.  Only the last
 * victim is looked at (one routee's lines, not a scan), and only while
 * it had work ready.  A record that did not grow since we last passed it
 * over is taken: it waits at most one steal while it stands still, and
 * at most RP__LANE_BULK while it grows (then it is full, not young).
 * young: the jobs of our young record, or 0.
 */
static bool pass_young(rp_routee *r, unsigned young, bool *searching, rp__job *out)
{
    if (young && young != r->passed_young && rp__steal_again(r, searching, out)) {
        r->passed_young = young;
        return true;
    }
    r->passed_young = 0;
    return false;
}

/* The next job to run: a stolen (or batch-run) one we hold, run where it
 * is in r->stolen (the owner alone writes that array, and only between
 * jobs; run_job() reads the job before it calls it), else our own oldest
 * or a steal, copied into *spare.  NULL when there is none. */
static rp__job *next_job(rp_routee *r, bool *searching, rp__job *spare)
{
    rp__job *held = rp__steal_next_held(r);
    unsigned young;

    if (held)
        return held;
    /* Looked at once, and only by a routee that may wait or pass. */
    young = r->streaming || r->last_victim ? rp__mailbox_young(&r->mb) : 0;
    if (young && r->streaming)
        young = let_young_grow(r, young);
    if (pass_young(r, young, searching, spare))
        return spare;
    /* Every watch_left takes: the rescue of a routee that makes no
     * progress (steal.c, rp__steal_rescue), before our own. */
    if (r->pool->steal && --r->watch_left == 0 && rp__steal_rescue(r, searching, spare))
        return spare;
    return take_own(r, spare) || (r->pool->steal && rp__steal_batch(r, searching, spare)) ? spare
                                                                                          : NULL;
}

/*
 * Without a spin window chosen automatically (no CPU to spare): give the
 * CPU away once before sleeping.  A submitter that shares this CPU runs
 * now and may queue the next job, which this routee then takes without a
 * futex sleep and wake-up (the wake-up costs the submitter a system call
 * and, in a VM, an interprocessor interrupt).  Measured on 2 vCPUs, 1
 * submitter, 2 routees, empty jobs: 130 -> 74 ns/job with stealing off,
 * 135 -> 105 with it on (docs/performance.md).  Alone on its CPU the
 * yield returns at once; when the previous one did too and found work (a
 * producer streams jobs faster than this routee runs them), the routee
 * lets work gather for GATHER_NS before it looks: nothing else wanted the
 * CPU, and the producer pushes meanwhile without meeting this routee on
 * its lines.  One yield and at most one gathering wait per idle
 * transition: no busy-waiting, an idle pool sleeps.
 */
static bool yield_for_work(rp_routee *r)
{
    int64_t t0, t1;
    bool alone, found;

    if (!r->pool->idle_yield)
        return false;
    t0 = rp__now_ns();
    sched_yield();
    t1 = rp__now_ns();
    alone = t1 - t0 < RP__YIELD_ALONE_NS;
    if (alone && r->streaming)
        gather_alone(r, t1);
    found = spin_found(r, 0);
    r->streaming = alone && found;
    return found;
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
    int64_t t0;

    if (pool->steal)
        rp__steal_set_idle(pool, r);
    v = rp__event_prepare(&r->mb.ev);
    closed = rp__mailbox_closed(&r->mb);
    if (rp__mailbox_empty(&r->mb) && !must_hand_back(r, closed) &&
        !(closed && rp__mailbox_depth(&r->mb) == 0) &&
        !(pool->steal && rp__steal_any(r))) {
        notify_idle(pool);
        rp__owner_add(&r->sleeps, 1);
        r->fast = false; /* a sleep ends the pace: its first steals take RP__STEAL_MAX */
        t0 = pool->steal ? rp__now_ns() : 0;
        sleep_and_trim(r, v);
        if (pool->steal) {
            int64_t t1 = rp__now_ns();

            rp__steal_load_window(r, t1, t1 - t0); /* the sleep in the load window */
        }
    }
    rp__event_done(&r->mb.ev);
    if (pool->steal && !rp__steal_clear_idle(pool, r))
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
           (r->pool->steal && rp__steal_any(r));
}

/* Run jobs until the mailbox closed and the routee drained or handed
 * back what it held. */
static void routee_loop(rp_routee *r)
{
    bool busy = false, running = false, searching = false;

    for (;;) {
        int closed = rp__mailbox_closed(&r->mb);
        rp__job job, *next;

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
            if ((next = next_job(r, &searching, &job)) != NULL) {
                /* Both change at the first job after a pause only: no
                 * call into steal.c per job.  (The same checks as inline
                 * wrappers in steal.h, for every caller, measured 4-5 %
                 * slower on batches with the routees sharing a CPU:
                 * rp-bench-lib-ab, 40 pairs each way, the code laid out
                 * differently.) */
                if (RP_UNLIKELY(searching))
                    rp__steal_stop_searching(r->pool, &searching);
                if (RP_UNLIKELY(!running))
                    rp__steal_set_running(r, &running, true);
                run_job(r, next);
                continue;
            }
        }
        rp__steal_set_running(r, &running, false);
        set_busy(r, &busy, false);
        rp__steal_stop_searching(r->pool, &searching);
        rp__mailbox_flush(&r->mb);
        if (closed && rp__mailbox_depth(&r->mb) == 0)
            break; /* drained */
        if (!spin_for_work(r) && !yield_for_work(r))
            idle_sleep(r, &searching);
    }
    rp__steal_stop_searching(r->pool, &searching);
    rp__steal_set_running(r, &running, false);
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
 * with rp__current_routee set, so that what a job may not call (wait_idle,
 * shutdown, destroy of this pool) is refused from a hook too.  The stop
 * hook runs after notify_idle(): wait_idle() does not wait for it, the
 * join in shutdown does.  An explicit CPU set was applied by
 * pthread_create (thread_attr()).
 */
void *rp__worker_main(void *p)
{
    rp_routee *r = p;
    rp_pool *pool = r->pool;

    rp__current_routee = r;
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
int rp_job_routee(const rp_job_ctx *ctx)
{
    return ctx ? ctx->routee->index : -1;
}

rp_pool *rp_job_pool(const rp_job_ctx *ctx)
{
    return ctx ? ctx->pool : NULL;
}

bool rp__worker_of(const rp_pool *pool)
{
    return rp__current_routee && rp__current_routee->pool == pool;
}
