/* SPDX-License-Identifier: MIT */
/*
 * mailbox.h - a routee's mailbox: two lanes (pinned, stealable), the owner
 * ring (a job's tells to its own routee), the depth counter, the bound and
 * its overflow policy, the job records.  Private.
 */
#ifndef RP_MAILBOX_H
#define RP_MAILBOX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"
#include "reply.h"
#include "internal.h"
#include "lane.h"
#include "wait.h"

typedef struct rp__mailbox rp__mailbox;

/* The owner ring's entries (a power of two), and one entry: a plain
 * stealable tell; a sampled one carries its enqueue time.  Atomics
 * (relaxed): a consumer that lost the race for an entry may read it while
 * the owner writes it again, and throws the copy away (mailbox.c). */
#define RP__OWN_RING 16u
typedef struct rp__own_job {
    _Atomic(rp_job_fn) fn;
    _Atomic(void *) arg;
    _Atomic uint64_t seq;   /* enqueued when it was queued: its place among the lanes' jobs */
    _Atomic int64_t enq_ns; /* a sampled job's enqueue time, else 0 */
} rp__own_job;

/* Hands a job that will not run back to its owner (a routee): its arg,
 * and its reply (NULL for none), which the callback fails with reason. */
typedef void (*rp__handback_fn)(void *owner, void *arg, int reason, rp__reply *reply);

struct rp__mailbox {
    /* depth = reserved - released (rp__mailbox_depth), kept as two
     * counters so producers and consumers do not write one line per job.
     * Producers reserve first (and bump enqueued, on the same line). */
    RP_ALIGNED _Atomic int64_t reserved;
    /* Bumped by every accepted push into a lane: the enqueued count (the
     * owner ring counts its own, enqueued_owner), and the order between
     * the two lanes and the ring. */
    _Atomic uint64_t enqueued;
    /* Slots given back: by thieves and evicting producers (a locked add)
     * and by the owner (released_owner, its own counter: a plain store,
     * so a job costs the owner no locked instruction here). */
    RP_ALIGNED _Atomic int64_t released;
    _Atomic int64_t released_owner;
    /* Read on every push, written once or twice in a lifetime. */
    RP_ALIGNED _Atomic int closed; /* 0, RP_ESTOPPED or RP_ESHUTDOWN */
    size_t capacity;               /* 0: unbounded */
    int overflow;
    rp__handback_fn handback;
    void *owner;
    int index; /* the owning routee's index, for errors */
    /* Rare-path counters, relaxed. */
    RP_ALIGNED _Atomic uint64_t rejected;
    _Atomic uint64_t undelivered;
    _Atomic uint64_t retired; /* left the queue without running here */
    _Atomic uint64_t stolen_from; /* taken by other routees */
    _Atomic uint64_t expired;     /* asks not run: deadline passed first */
    _Atomic uint64_t by_reason[RP_METRICS_REASONS]; /* hand-backs */
    /* Producers inside a drop-head eviction (they dequeue without a
     * reservation): a trim waits for 0 (lane.c, "Trimming"). */
    _Atomic int evicting;
    /* Sampled at enqueue (one in RP_METRICS_SAMPLE): few writers. */
    bool metrics;
    const _Atomic unsigned *trace_sample; /* the pool's; 0: not tracing */
    RP_ALIGNED _Atomic uint64_t depth_hist[RP_DEPTH_BUCKETS];
    _Atomic uint64_t depth_sum; /* the count is the buckets' total */
    rp__lane pinned;
    rp__lane stealable;
    rp__event ev; /* the owner sleeps here */
    /* The owner ring (mailbox.c, "The owner ring"): plain tells the owner
     * queued to itself from inside a job.  [own_head, own_tail) are
     * queued; the owner alone writes own_tail and the entries, the owner
     * and thieves take from own_head by CAS.  enqueued_owner counts the
     * jobs queued here (owner-only writes): accepted jobs are enqueued +
     * enqueued_owner (rp__mailbox_enqueued). */
    RP_ALIGNED _Atomic uint64_t own_head;
    _Atomic uint64_t own_tail;
    _Atomic uint64_t enqueued_owner;
    rp__own_job own[RP__OWN_RING];
};

int rp__mailbox_init(rp__mailbox *mb, const rp__arena *arena, size_t capacity,
                     int overflow, rp__handback_fn handback, void *owner, int index);
void rp__mailbox_destroy(rp__mailbox *mb);

/* Many producers.  0: accepted (queued, or handed back under drop-new),
 * and the job owns reply's reference from now on; RP_EFULL, RP_ESTOPPED,
 * RP_ESHUTDOWN, RP_ENOMEM: not accepted, the caller keeps it.  reply may
 * be NULL (a tell). */
int rp__mailbox_push_mp(rp__mailbox *mb, rp_job_fn fn, void *arg, bool pinned,
                        const rp__reply *reply);

/* The owner, from inside a job on its own thread: queue the plain
 * stealable tell fn(arg) in the owner ring (mailbox.c, "The owner ring").
 * 0: queued; the caller owes the wake-up check a stealable push makes
 * (rp__steal_queued).  RP_ESTOPPED, RP_ESHUTDOWN: closed, not accepted.
 * 1: the ring cannot take it (full, a bounded mailbox, tracing on): push
 * it to a lane instead. */
int rp__mailbox_push_own(rp__mailbox *mb, rp_job_fn fn, void *arg);

/* Push args[0..k) as k stealable jobs of fn, in order, with one
 * reservation, one sequence range and one wake-up.  Returns how many were
 * queued: always a prefix of args.  *rc is 0 when all k were, else why the
 * rest were not: the closed code (RP_ESTOPPED, RP_ESHUTDOWN), RP_EFULL (a
 * bounded mailbox had room for fewer; its overflow policy was not
 * applied) or RP_ENOMEM.  The caller still owns the jobs not queued. */
size_t rp__mailbox_push_batch_mp(rp__mailbox *mb, rp_job_fn fn, void *const *args, size_t k,
                                 int *rc);

/* Index of a hand-back reason in rp_metrics_reason_codes, or -1. */
int rp__reason_slot(int reason);

/* A job taken from the queue that will not run (expired, cancelled):
 * counts it as retired; the caller handles its arg and reply. */
void rp__mailbox_count_skipped(rp__mailbox *mb, int reason);

/* Owner: the oldest queued job into out[0], and after it, when it is a
 * batch job, more of the same batch run (rp__lane_pop_owner_run), taken
 * with one CAS: about max, whole bulks, so up to max + RP__LANE_BULK - 1
 * (out holds that many).  Only out[0]'s slot is released: the others
 * still count in depth, and the caller releases each slot as it takes the
 * job (the routee keeps them with its stolen batch).  0 when both lanes
 * are empty. */
unsigned rp__mailbox_pop_owner_run(rp__mailbox *mb, rp__job *out, unsigned max);

/* Owner, going idle: hand its lanes' partial magazines to producers. */
void rp__mailbox_flush(rp__mailbox *mb);

/* What the owner does with each job left in a closed mailbox. */
typedef void (*rp__dispose_fn)(void *ctx, rp__job *job);

/* Owner, after rp__mailbox_close(): take every queued job, waiting for
 * in-flight producers, until depth reaches 0, and pass each to dispose.
 * Each counts as retired. */
void rp__mailbox_drain(rp__mailbox *mb, rp__dispose_fn dispose, void *ctx);

/* Hand a job that left the queue back with reason. */
void rp__mailbox_hand_back(rp__mailbox *mb, const rp__job *job, int reason);

/* Thief: take up to max of the oldest stealable jobs (never pinned ones)
 * into out[0..), releasing their slots; from the owner ring when the
 * stealable lane gave none.  Returns how many. */
unsigned rp__mailbox_steal(rp__mailbox *mb, rp__job *out, unsigned max);
/* The owner, after a steal: queue jobs[0..n) - what a whole record
 * brought beyond the thief's share - on its own stealable lane, where
 * other thieves may take them back, in slots of its own (reserved here,
 * for any capacity: the jobs were accepted already).  They keep their
 * sequence numbers and flags.  Returns how many were queued: fewer only
 * when records ran out (the rest stay the caller's). */
unsigned rp__mailbox_requeue(rp__mailbox *mb, const rp__job *jobs, unsigned n);

/* Whether the owner ring holds jobs.  seq_cst: a thief sets its idle bit
 * and then looks (Dekker with the owner's push, which stores own_tail and
 * then reads the idle bits). */
static inline bool rp__mailbox_ring_queued(rp__mailbox *mb)
{
    return atomic_load_explicit(&mb->own_tail, memory_order_seq_cst) !=
           atomic_load_explicit(&mb->own_head, memory_order_seq_cst);
}

static inline bool rp__mailbox_has_stealable(rp__mailbox *mb)
{
    return !rp__lane_empty(&mb->stealable) || rp__mailbox_ring_queued(mb);
}

/* Jobs accepted so far: the lanes' (enqueued) and the owner ring's. */
static inline uint64_t rp__mailbox_enqueued(const rp__mailbox *mb)
{
    rp__mailbox *m = (rp__mailbox *)mb;

    return atomic_load_explicit(&m->enqueued, memory_order_seq_cst) +
           atomic_load_explicit(&m->enqueued_owner, memory_order_seq_cst);
}

/* Refuse further pushes with reason (first reason wins) and wake the
 * owner.  Returns true when this call closed it. */
bool rp__mailbox_close(rp__mailbox *mb, int reason);

static inline int rp__mailbox_closed(rp__mailbox *mb)
{
    return atomic_load_explicit(&mb->closed, memory_order_seq_cst);
}

/* Slots given back so far, by anyone.  Only grows, except by the owner's
 * own reservations for its ring (rp__mailbox_reserve_owner), which
 * bounded mailboxes never make: try_reserve() counts on the growth. */
static inline int64_t rp__mailbox_released(rp__mailbox *mb)
{
    return atomic_load_explicit(&mb->released, memory_order_seq_cst) +
           atomic_load_explicit(&mb->released_owner, memory_order_seq_cst);
}

/* Jobs holding a slot.  The released counts are read first: every
 * release follows its reservation, so the difference is never negative. */
static inline int64_t rp__mailbox_depth(const rp__mailbox *mb)
{
    rp__mailbox *m = (rp__mailbox *)mb;
    int64_t released = rp__mailbox_released(m);

    return atomic_load_explicit(&m->reserved, memory_order_seq_cst) - released;
}

/* Take n slots (no bound check: see try_reserve in mailbox.c). */
static inline void rp__mailbox_reserve(rp__mailbox *mb, int64_t n)
{
    atomic_fetch_add_explicit(&mb->reserved, n, memory_order_seq_cst);
}

/* Give n slots back (without a signal). */
static inline void rp__mailbox_release(rp__mailbox *mb, int64_t n)
{
    atomic_fetch_add_explicit(&mb->released, n, memory_order_seq_cst);
}

/* The same, by the mailbox's owner thread only: a load and a release
 * store.  Only the owner waits for its depth to fall (drain), and it sees
 * its own stores; other readers take depth as a hint, and a late view of
 * this store only overestimates it. */
static inline void rp__mailbox_release_owner(rp__mailbox *mb, int64_t n)
{
    RP__ASSERT_OWNER(&mb->stealable);
    atomic_store_explicit(&mb->released_owner,
                          atomic_load_explicit(&mb->released_owner, memory_order_relaxed) + n,
                          memory_order_release);
}

/* The owner takes n slots for jobs of its ring: released_owner goes down
 * (a plain store, as rp__mailbox_release_owner).  Depth readers load the
 * released counts first; a thief that stole such a job released it after
 * this store, which it acquired with own_tail, so no reader sees the
 * release without this reservation: depth is never negative. */
static inline void rp__mailbox_reserve_owner(rp__mailbox *mb, int64_t n)
{
    RP__ASSERT_OWNER(&mb->stealable);
    atomic_store_explicit(&mb->released_owner,
                          atomic_load_explicit(&mb->released_owner, memory_order_relaxed) - n,
                          memory_order_release);
}

static inline bool rp__mailbox_empty(rp__mailbox *mb)
{
    return rp__lane_empty(&mb->pinned) && rp__lane_empty(&mb->stealable) &&
           !rp__mailbox_ring_queued(mb);
}

/* When all the mailbox holds is one record of tells still growing, its
 * jobs (rp__lane_young), else 0.  A hint. */
static inline unsigned rp__mailbox_young(rp__mailbox *mb)
{
    return rp__lane_empty(&mb->pinned) && !rp__mailbox_ring_queued(mb)
               ? rp__lane_young(&mb->stealable)
               : 0;
}

#endif /* RP_MAILBOX_H */
