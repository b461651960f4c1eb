/* SPDX-License-Identifier: MIT */
/*
 * mailbox.c - reservation, overflow and hand-back for one routee's queue.
 *
 * depth counts jobs that hold a slot: reserved by a producer (perhaps not
 * yet visible in a lane) or queued.  A producer reserves before it
 * enqueues and the owner releases the slot after it dequeues, so depth is
 * never below the number of queued jobs and a bounded mailbox never holds
 * more than its capacity.  The bound lives entirely in this count; the
 * lanes themselves are unbounded.  depth is two monotonic counters,
 * reserved (producers) minus released (consumers), on separate cache
 * lines: a push and a pop no longer write the same line.
 *
 * Closing.  rp__mailbox_close() stores closed (seq_cst); a producer loads
 * closed after its reservation (seq_cst).  In the single total order either
 * the producer sees closed and backs out, or its reservation precedes the
 * close, and then the owner - who hands back or runs jobs until depth is 0
 * - waits for it.  No job enters a closed mailbox unseen.
 *
 * Every accepted job ends in exactly one place: run by the owner, or handed
 * back (dropped, evicted, stopped, shut down) through the handback callback,
 * and is counted there.
 *
 * The owner ring.  A job that tells its own routee (a round-robin turn
 * that comes back to it, a smallest-mailbox pick of itself) would pay a
 * lane push's locked instructions - the reservation and sequence on the
 * line every producer writes, the record's link and the tail - and the
 * owner the pop's.  Such a tell, when plain (no reply, not pinned, no
 * trace) and the mailbox unbounded, goes into a ring of RP__OWN_RING
 * entries per mailbox that the owner alone fills: the entry with plain
 * (relaxed) stores, its slot taken from released_owner
 * (rp__mailbox_reserve_owner), counted in enqueued_owner, then one
 * seq_cst store of own_tail, on a line the owner keeps (the Dekker store
 * against an idle thief's bit).  The ring stays stealable: a thief takes
 * from it when the stealable lane gives nothing, as the owner takes: read
 * the entries at own_head, then CAS own_head past them; a consumer whose
 * CAS fails may have read entries the owner was writing again, and
 * throws its copy away.  The owner writes an entry again only after the
 * CAS that took it (it reads own_head with acquire).  It takes its ring's
 * jobs in their place in FIFO order: an entry's seq is the lanes'
 * enqueued count when it was queued, and lane jobs with a smaller
 * sequence number go first (a hint, as every peek at the lanes).  A full
 * ring sends the tell to the lanes.  Measured: design.md, "The owner
 * ring".
 */
#include <sched.h>
#include <stddef.h>

#include "clock.h"
#include "mailbox.h"
#include "probes.h"

int rp__mailbox_init(rp__mailbox *mb, const rp__arena *arena, size_t capacity,
                     int overflow, rp__handback_fn handback, void *owner, int index)
{
    int rc;

    atomic_init(&mb->reserved, 0);
    atomic_init(&mb->released, 0);
    atomic_init(&mb->released_owner, 0);
    atomic_init(&mb->closed, 0);
    atomic_init(&mb->enqueued, 0);
    atomic_init(&mb->rejected, 0);
    atomic_init(&mb->undelivered, 0);
    atomic_init(&mb->retired, 0);
    atomic_init(&mb->stolen_from, 0);
    mb->capacity = capacity;
    mb->overflow = overflow;
    mb->handback = handback;
    mb->owner = owner;
    mb->index = index;
    mb->metrics = false;
    atomic_init(&mb->expired, 0);
    atomic_init(&mb->evicting, 0);
    atomic_init(&mb->own_head, 0);
    atomic_init(&mb->own_tail, 0);
    atomic_init(&mb->enqueued_owner, 0);
    for (unsigned i = 0; i < RP__OWN_RING; i++) {
        atomic_init(&mb->own[i].fn, NULL);
        atomic_init(&mb->own[i].arg, NULL);
        atomic_init(&mb->own[i].seq, 0);
        atomic_init(&mb->own[i].enq_ns, 0);
    }
    rp__event_init(&mb->ev);
    if ((rc = rp__lane_init(&mb->pinned, arena)) < 0)
        return rc;
    if ((rc = rp__lane_init(&mb->stealable, arena)) < 0) {
        rp__lane_destroy(&mb->pinned);
        return rc;
    }
    return 0;
}

void rp__mailbox_destroy(rp__mailbox *mb)
{
    rp__lane_destroy(&mb->pinned);
    rp__lane_destroy(&mb->stealable);
}

static bool try_reserve(rp__mailbox *mb)
{
    int64_t d;

    if (mb->capacity == 0) {
        rp__mailbox_reserve(mb, 1);
        return true;
    }
    /* A CAS on reserved against a released read before it: released only
     * grows, so the check can only overestimate the depth. */
    d = atomic_load_explicit(&mb->reserved, memory_order_relaxed);
    do {
        if (d - rp__mailbox_released(mb) >= (int64_t)mb->capacity)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(
        &mb->reserved, &d, d + 1, memory_order_seq_cst, memory_order_relaxed));
    return true;
}

/* Give n slots back.  The owner may be waiting for depth to reach 0. */
static void unreserve(rp__mailbox *mb, int64_t n)
{
    rp__mailbox_release(mb, n);
    rp__event_signal(&mb->ev);
}

static void handback(rp__mailbox *mb, void *arg, int reason, bool was_queued,
                     rp__reply *reply)
{
    int slot = rp__reason_slot(reason);

    if (reason == RP_EDROPPED || reason == RP_EEVICTED)
        RP_PROBE3(drop, mb->index, reason, arg);
    RP_PROBE3(handback, mb->index, reason, arg);
    mb->handback(mb->owner, arg, reason, reply);
    if (slot >= 0)
        atomic_fetch_add_explicit(&mb->by_reason[slot], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&mb->undelivered, 1, memory_order_relaxed);
    /* Counted finished only after the callback returned, so wait_idle()
     * never returns while a hand-back is still in progress (release:
     * pairs with the loads in was_idle()). */
    if (was_queued)
        atomic_fetch_add_explicit(&mb->retired, 1, memory_order_release);
}

/* Whether the pinned lane holds the older of the two lanes' first jobs
 * (a hint: see rp__lane_peek_seq). */
static bool pinned_first(rp__mailbox *mb)
{
    return rp__lane_peek_seq(&mb->pinned) <= rp__lane_peek_seq(&mb->stealable);
}

/* The oldest queued job of either lane into *out, without touching
 * depth; false when both are empty.  Any thread (an evicting producer). */
static bool pop_oldest(rp__mailbox *mb, rp__job *out)
{
    bool pinned = pinned_first(mb);
    rp__lane *first = pinned ? &mb->pinned : &mb->stealable;
    rp__lane *second = pinned ? &mb->stealable : &mb->pinned;

    return rp__lane_pop_mc(first, out) || rp__lane_pop_mc(second, out);
}

int rp__reason_slot(int reason)
{
    for (int i = 0; i < RP_METRICS_REASONS; i++)
        if (rp_metrics_reason_codes[i] == reason)
            return i;
    return -1;
}

/* The clock, read at most once per push: a batch's jobs are queued
 * together. */
static int64_t push_time(int64_t *now)
{
    if (!*now)
        *now = rp__now_ns();
    return *now;
}

/* One enqueue in RP_METRICS_SAMPLE: the depth it found, and a timestamp
 * for the queue-wait histogram (read by whoever runs the job).  The
 * histogram's count is the sum of its buckets (metrics.c): two locked
 * adds, not three. */
static void sample_depth(rp__mailbox *mb, int64_t found)
{
    int b = 0;

    while (b < RP_DEPTH_BUCKETS - 1 && (double)found > rp_metrics_depth_bounds[b])
        b++;
    atomic_fetch_add_explicit(&mb->depth_hist[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&mb->depth_sum, (uint64_t)(found > 0 ? found : 0), memory_order_relaxed);
}

static void sample_enqueue(rp__mailbox *mb, rp__job *job, int64_t found, int64_t now_ns)
{
    sample_depth(mb, found);
    job->enq_ns = now_ns;
    job->flags |= RP__JOB_SAMPLED;
}

/* Stamp a job with its sequence number and the sampling/tracing marks.
 * found: the jobs queued ahead of it, or -1 to read the depth (which
 * already counts this job's own slot: what it found is one less). */
static void stamp(rp__mailbox *mb, rp__job *job, uint64_t seq, int64_t found, int64_t *now)
{
    atomic_store_explicit(&job->seq, seq, memory_order_relaxed);
    job->enq_ns = 0;
    job->submit_tid = 0;
    if (mb->metrics && seq % RP_METRICS_SAMPLE == 0)
        sample_enqueue(mb, job, found >= 0 ? found : rp__mailbox_depth(mb) - 1, push_time(now));
    if (RP_UNLIKELY(mb->trace_sample != NULL)) {
        unsigned every = atomic_load_explicit(mb->trace_sample, memory_order_acquire);
        if (every && seq % every == 0) {
            job->submit_tid = rp__tid();
            if (!job->enq_ns)
                job->enq_ns = push_time(now);
        }
    }
}

/* Enqueue a job that holds a slot.  On failure the slot is given back. */
static int enqueue(rp__mailbox *mb, rp__job *job)
{
    rp__lane *lane = (job->flags & RP__JOB_PINNED) ? &mb->pinned : &mb->stealable;
    int64_t now = 0;

    stamp(mb, job, atomic_fetch_add_explicit(&mb->enqueued, 1, memory_order_relaxed), -1, &now);
    if (RP_UNLIKELY(rp__lane_push_mp(lane, job, lane == &mb->stealable && mb->capacity == 0) < 0)) {
        /* Not counted as enqueued: take the count back. */
        atomic_fetch_sub_explicit(&mb->enqueued, 1, memory_order_relaxed);
        unreserve(mb, 1);
        return RP_ENOMEM;
    }
    /* The push ended with the lane's tail CAS. */
    rp__event_signal_after_rmw(&mb->ev);
    return 0;
}

/* After the reservation: see "Closing" at the top. */
static int enqueue_reserved(rp__mailbox *mb, rp__job *job)
{
    int closed = rp__mailbox_closed(mb);

    if (closed) {
        unreserve(mb, 1);
        return closed;
    }
    return enqueue(mb, job);
}

/*
 * Drop-head: evict the oldest queued job and give its slot to the new one.
 * The lanes can be momentarily empty while depth says full (producers
 * between reserve and enqueue, the owner between pop and release): then
 * retry the reservation and yield to let them finish.
 */
static int evict_and_enqueue(rp__mailbox *mb, rp__job *job)
{
    for (;;) {
        rp__job victim;
        int closed;

        bool popped;

        /* Seen by a trim (lane.c, "Trimming"): this dequeue holds no slot. */
        atomic_fetch_add_explicit(&mb->evicting, 1, memory_order_seq_cst);
        popped = pop_oldest(mb, &victim);
        atomic_fetch_sub_explicit(&mb->evicting, 1, memory_order_release);
        if (!popped) {
            if (try_reserve(mb))
                break;
            sched_yield();
            continue;
        }
        closed = rp__mailbox_closed(mb);
        handback(mb, victim.arg, closed ? closed : RP_EEVICTED, true, &victim.reply);
        if (closed) {
            unreserve(mb, 1);
            return closed;
        }
        return enqueue(mb, job);
    }
    /* A slot came free: from here on this is an ordinary push. */
    return enqueue_reserved(mb, job);
}

static int overflow(rp__mailbox *mb, rp__job *job)
{
    switch (mb->overflow) {
    case RP_OVERFLOW_DROP_NEW:
        handback(mb, job->arg, RP_EDROPPED, false, &job->reply);
        return 0;
    case RP_OVERFLOW_DROP_HEAD:
        return evict_and_enqueue(mb, job);
    default:
        atomic_fetch_add_explicit(&mb->rejected, 1, memory_order_relaxed);
        return RP_EFULL;
    }
}

/* The job fn(arg) (stamped later, by enqueue). */
static rp__job new_job(rp_job_fn fn, void *arg, bool pinned, const rp__reply *reply)
{
    return (rp__job){.fn = fn,
                     .arg = arg,
                     .flags = pinned ? RP__JOB_PINNED : 0,
                     .reply = reply ? *reply : (rp__reply){0}};
}

int rp__mailbox_push_mp(rp__mailbox *mb, rp_job_fn fn, void *arg, bool pinned,
                        const rp__reply *reply)
{
    rp__job job = new_job(fn, arg, pinned, reply);
    int closed;

    if ((closed = rp__mailbox_closed(mb)) != 0)
        return closed;
    if (!try_reserve(mb))
        return overflow(mb, &job);
    return enqueue_reserved(mb, &job);
}

int rp__mailbox_push_own(rp__mailbox *mb, rp_job_fn fn, void *arg)
{
    uint64_t t = atomic_load_explicit(&mb->own_tail, memory_order_relaxed), n;
    rp__own_job *e = &mb->own[t & (RP__OWN_RING - 1)];
    int64_t enq_ns = 0;
    int closed;

    /* Acquire: whoever took the entry t - RP__OWN_RING read it before
     * its CAS, so it is ours to write again. */
    if (mb->capacity != 0 ||
        t - atomic_load_explicit(&mb->own_head, memory_order_acquire) >= RP__OWN_RING ||
        (RP_UNLIKELY(mb->trace_sample != NULL) &&
         atomic_load_explicit(mb->trace_sample, memory_order_acquire)))
        return 1;
    if ((closed = rp__mailbox_closed(mb)) != 0)
        return closed;
    n = atomic_load_explicit(&mb->enqueued_owner, memory_order_relaxed) + 1;
    /* Sampled as often as the lanes' jobs: one in RP_METRICS_SAMPLE. */
    if (mb->metrics && n % RP_METRICS_SAMPLE == 0) {
        enq_ns = rp__now_ns();
        sample_depth(mb, rp__mailbox_depth(mb));
    }
    atomic_store_explicit(&e->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&e->arg, arg, memory_order_relaxed);
    atomic_store_explicit(&e->seq, atomic_load_explicit(&mb->enqueued, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&e->enq_ns, enq_ns, memory_order_relaxed);
    rp__mailbox_reserve_owner(mb, 1);
    atomic_store_explicit(&mb->enqueued_owner, n, memory_order_release);
    atomic_store_explicit(&mb->own_tail, t + 1, memory_order_seq_cst);
    return 0;
}

/* Up to max of the owner ring's jobs, oldest first, into out[0..): the
 * owner's take or a thief's.  Returns how many. */
static unsigned take_ring(rp__mailbox *mb, rp__job *out, unsigned max)
{
    uint64_t h = atomic_load_explicit(&mb->own_head, memory_order_acquire);

    for (;;) {
        /* Acquire: the entries before own_tail are written. */
        uint64_t t = atomic_load_explicit(&mb->own_tail, memory_order_acquire);
        unsigned k = t - h < max ? (unsigned)(t - h) : max;

        if (k == 0)
            return 0;
        for (unsigned i = 0; i < k; i++) {
            const rp__own_job *e = &mb->own[(h + i) & (RP__OWN_RING - 1)];
            int64_t enq_ns = atomic_load_explicit(&e->enq_ns, memory_order_relaxed);

            out[i] = (rp__job){.fn = atomic_load_explicit(&e->fn, memory_order_relaxed),
                               .arg = atomic_load_explicit(&e->arg, memory_order_relaxed),
                               .flags = enq_ns ? RP__JOB_SAMPLED : 0,
                               .enq_ns = enq_ns};
            atomic_store_explicit(&out[i].seq,
                                  atomic_load_explicit(&e->seq, memory_order_relaxed),
                                  memory_order_relaxed);
        }
        /* Release: our reads of the entries come before the owner's next
         * writes to them.  A failure reloads h: another took them. */
        if (atomic_compare_exchange_weak_explicit(&mb->own_head, &h, h + k, memory_order_acq_rel,
                                                  memory_order_acquire))
            return k;
    }
}

/* Whether the owner ring's first job comes before every job queued in
 * the lanes (owner only). */
static bool ring_first(rp__mailbox *mb)
{
    uint64_t h = atomic_load_explicit(&mb->own_head, memory_order_relaxed);
    uint64_t seq = atomic_load_explicit(&mb->own[h & (RP__OWN_RING - 1)].seq, memory_order_relaxed);
    uint64_t p = rp__lane_peek_seq(&mb->pinned), st = rp__lane_peek_seq(&mb->stealable);

    return seq <= (p < st ? p : st);
}

/* Reserve up to k slots at once; how many were granted. */
static size_t reserve_up_to(rp__mailbox *mb, size_t k)
{
    int64_t d, take;

    if (mb->capacity == 0) {
        rp__mailbox_reserve(mb, (int64_t)k);
        return k;
    }
    d = atomic_load_explicit(&mb->reserved, memory_order_relaxed);
    do {
        take = (int64_t)mb->capacity - (d - rp__mailbox_released(mb));
        if (take <= 0)
            return 0;
        if (take > (int64_t)k)
            take = (int64_t)k;
    } while (!atomic_compare_exchange_weak_explicit(
        &mb->reserved, &d, d + take, memory_order_seq_cst, memory_order_relaxed));
    return (size_t)take;
}

/* Whether a job of ours may be traced now (rp_pool_trace_start()). */
static bool tracing(const rp__mailbox *mb)
{
    return RP_UNLIKELY(mb->trace_sample != NULL) &&
           atomic_load_explicit(mb->trace_sample, memory_order_acquire) != 0;
}

/* A chain of m batch jobs, args[0..m), sequence numbers seq, seq + 1, ...,
 * the first of which found `found` jobs queued: built as jobs first (a
 * bounded mailbox's records, one a job; jobs that may be traced). */
static size_t push_jobs(rp__mailbox *mb, rp_job_fn fn, void *const *args, size_t m, uint64_t seq,
                        int64_t found, int64_t *now)
{
    rp__job jobs[RP__LANE_CHAIN_MAX];

    for (size_t j = 0; j < m; j++) {
        jobs[j] = new_job(fn, args[j], false, NULL);
        jobs[j].flags |= RP__JOB_BATCH;
        stamp(mb, &jobs[j], seq + j, found + (int64_t)j, now);
    }
    return rp__lane_push_n(&mb->stealable, jobs, m, mb->capacity == 0);
}

/* push_jobs() for the common case, an unbounded mailbox with nobody
 * tracing: the same records and samples, written straight from args
 * (rp__lane_push_args), with no job built first. */
static size_t push_args(rp__mailbox *mb, rp_job_fn fn, void *const *args, size_t m, uint64_t seq,
                        int64_t found, int64_t *now)
{
    uint64_t sampled = 0;

    if (mb->metrics) {
        /* The jobs whose sequence number stamp() samples. */
        for (size_t j = (RP_METRICS_SAMPLE - seq % RP_METRICS_SAMPLE) % RP_METRICS_SAMPLE; j < m;
             j += RP_METRICS_SAMPLE) {
            sample_depth(mb, found + (int64_t)j);
            sampled |= UINT64_C(1) << j;
        }
    }
    return rp__lane_push_args(&mb->stealable, fn, args, m, seq, sampled,
                              sampled ? push_time(now) : 0);
}

size_t rp__mailbox_push_batch_mp(rp__mailbox *mb, rp_job_fn fn, void *const *args, size_t k,
                                 int *rc)
{
    size_t granted, i;
    uint64_t seq;
    int64_t before = 0, now = 0;
    int closed;

    *rc = 0;
    if ((closed = rp__mailbox_closed(mb)) != 0) {
        *rc = closed;
        return 0;
    }
    if ((granted = reserve_up_to(mb, k)) == 0) {
        *rc = RP_EFULL;
        return 0;
    }
    /* After the reservation: see "Closing" at the top. */
    if ((closed = rp__mailbox_closed(mb)) != 0) {
        unreserve(mb, (int64_t)granted);
        *rc = closed;
        return 0;
    }
    /* One sequence range for the whole run: jobs take base, base+1, ...
     * Job j of the run found the depth before it plus j (for the metrics'
     * sample: one depth read and one clock read per call). */
    seq = atomic_fetch_add_explicit(&mb->enqueued, granted, memory_order_relaxed);
    if (mb->metrics && (before = rp__mailbox_depth(mb) - (int64_t)granted) < 0)
        before = 0;
    for (i = 0; i < granted;) {
        size_t m = granted - i < RP__LANE_CHAIN_MAX ? granted - i : RP__LANE_CHAIN_MAX, put;

        /* One link into the lane per chain. */
        if (RP_LIKELY(mb->capacity == 0 && !tracing(mb)))
            put = push_args(mb, fn, args + i, m, seq + i, before + (int64_t)i, &now);
        else
            put = push_jobs(mb, fn, args + i, m, seq + i, before + (int64_t)i, &now);
        i += put;
        if (RP_LIKELY(put == m))
            continue;
        /* Out of memory: the rest were never queued (unreserve signals). */
        atomic_fetch_sub_explicit(&mb->enqueued, granted - i, memory_order_relaxed);
        unreserve(mb, (int64_t)(granted - i));
        *rc = RP_ENOMEM;
        return i;
    }
    if (granted < k)
        *rc = RP_EFULL;
    /* The last chain's push ended with the lane's tail CAS. */
    rp__event_signal_after_rmw(&mb->ev);
    return i;
}

unsigned rp__mailbox_pop_owner_run(rp__mailbox *mb, rp__job *out, unsigned max)
{
    RP__ASSERT_OWNER(&mb->stealable);
    unsigned got;

    /* The owner's own lines (a thief's CAS aside). */
    bool ring = atomic_load_explicit(&mb->own_tail, memory_order_relaxed) !=
                atomic_load_explicit(&mb->own_head, memory_order_relaxed);

    /* The owner ring's job in its place; runs are batch jobs, and batches
     * are stealable. */
    if (ring && ring_first(mb) && take_ring(mb, out, 1))
        got = 1;
    else if (pinned_first(mb) && rp__lane_pop_owner(&mb->pinned, out))
        got = 1;
    else if ((got = rp__lane_pop_owner_run(&mb->stealable, out, max)) == 0 &&
             (rp__lane_pop_owner(&mb->pinned, out) || (ring && take_ring(mb, out, 1))))
        got = 1;
    if (got)
        rp__mailbox_release_owner(mb, 1);
    return got;
}

void rp__mailbox_flush(rp__mailbox *mb)
{
    RP__ASSERT_OWNER(&mb->stealable);
    rp__lane_flush(&mb->pinned);
    rp__lane_flush(&mb->stealable);
}

void rp__mailbox_hand_back(rp__mailbox *mb, const rp__job *job, int reason)
{
    rp__reply reply = job->reply;

    handback(mb, job->arg, reason, false, &reply);
}

void rp__mailbox_drain(rp__mailbox *mb, rp__dispose_fn dispose, void *ctx)
{
    RP__ASSERT_OWNER(&mb->stealable);
    for (;;) {
        rp__job jobs[RP__LANE_BULK];
        unsigned got;
        uint32_t v;

        if ((got = rp__mailbox_pop_owner_run(mb, jobs, 1)) != 0) {
            /* One bulk comes whole: the slots of all but the first are
             * still ours to release. */
            rp__mailbox_release_owner(mb, got - 1);
            /* Retired after dispose: a job re-routed elsewhere must be
             * accepted there before it stops counting here (wait_idle). */
            for (unsigned i = 0; i < got; i++) {
                dispose(ctx, &jobs[i]);
                atomic_fetch_add_explicit(&mb->retired, 1, memory_order_release);
            }
            continue;
        }
        if (rp__mailbox_depth(mb) == 0)
            return;
        /* A producer reserved before the close and has not enqueued yet,
         * or a thief popped and has not released the slot: sleep until it
         * does (both signal). */
        v = rp__event_prepare(&mb->ev);
        if (rp__mailbox_empty(mb) && rp__mailbox_depth(mb) != 0)
            rp__event_wait(&mb->ev, v, NULL);
        rp__event_done(&mb->ev);
    }
}

unsigned rp__mailbox_steal(rp__mailbox *mb, rp__job *out, unsigned max)
{
    unsigned got;

    got = rp__lane_steal(&mb->stealable, out, max);
    if (got == 0 && (got = take_ring(mb, out, max)) == 0)
        return 0;
    atomic_fetch_add_explicit(&mb->stolen_from, got, memory_order_relaxed);
    rp__mailbox_release(mb, got);
    /* A closing owner may be waiting for depth to reach 0. */
    rp__event_signal(&mb->ev);
    return got;
}

unsigned rp__mailbox_requeue(rp__mailbox *mb, const rp__job *jobs, unsigned n)
{
    size_t put;

    RP__ASSERT_OWNER(&mb->stealable);
    rp__mailbox_reserve(mb, n);
    put = rp__lane_push_n(&mb->stealable, jobs, n, false);
    if (put < n)
        rp__mailbox_release(mb, (int64_t)(n - put));
    return (unsigned)put;
}

void rp__mailbox_count_skipped(rp__mailbox *mb, int reason)
{
    int slot = rp__reason_slot(reason);

    if (slot >= 0)
        atomic_fetch_add_explicit(&mb->by_reason[slot], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&mb->undelivered, 1, memory_order_relaxed);
    if (reason == RP_EEXPIRED)
        atomic_fetch_add_explicit(&mb->expired, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&mb->retired, 1, memory_order_release);
}

bool rp__mailbox_close(rp__mailbox *mb, int reason)
{
    int expected = 0;
    bool closed = atomic_compare_exchange_strong_explicit(
        &mb->closed, &expected, reason, memory_order_seq_cst,
        memory_order_seq_cst);

    rp__event_signal(&mb->ev);
    return closed;
}
