/* SPDX-License-Identifier: MIT */
/*
 * lane.h - one FIFO of jobs: many producers, many consumers, unbounded,
 * lock-free (a ck_fifo_mpmc whose nodes are the job records themselves).
 * A mailbox has two: pinned and stealable.  Private.
 */
#ifndef RP_LANE_H
#define RP_LANE_H

#include <ck_fifo.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "reply.h"
#include "producer.h"

/* Owner checks.  Functions named *_owner (and rp__lane_flush,
 * rp__mailbox_flush, rp__mailbox_drain) may be called by a lane's one
 * owner thread only.  Debug and sanitizer builds check it: the first
 * owner-only call on a lane records the calling thread (pthread_self), and
 * an owner-only call from any other thread aborts with a message.  Release
 * builds (NDEBUG, no sanitizer) compile the check and its field out. */
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RP__OWNER_CHECKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RP__OWNER_CHECKS 1
#endif
#endif

#define RP__JOB_PINNED 1u
#define RP__JOB_SAMPLED 2u /* feeds the queue-wait histogram */
#define RP__JOB_BATCH 4u   /* queued by rp__mailbox_push_batch_mp */
#define RP__JOB_COLD 8u    /* in a record: its second line (reply, stamp) is set */
#define RP__JOB_BULK 16u   /* in a record: it carries a bulk of batch jobs (below) */
#define RP__JOB_GROWS 32u  /* in a record: tells its producer may add (lane.c, "Growing") */

/* Most batch jobs one record carries (a bulk: one function, consecutive
 * sequence numbers, the arguments in the record's two lines; lane.c,
 * "Bulks").  Every array a lane copies jobs out into holds at least this
 * many: a record is always taken whole. */
#define RP__LANE_BULK 8u
/* A bulk record's job count, in the flags' top byte; which of its jobs
 * are sampled (RP__JOB_SAMPLED, bit i for job i), in bits 8..15.  A bulk
 * with a sampled job carries their shared stamp in its last argument slot,
 * so it holds at most RP__LANE_BULK - 1 jobs. */
#define RP__BULK_SHIFT 24
#define RP__BULK_COUNT(flags) ((flags) >> RP__BULK_SHIFT)
#define RP__BULK_SAMPLE_SHIFT 8
#define RP__BULK_SAMPLES(flags) (((flags) >> RP__BULK_SAMPLE_SHIFT) & 0xffu)
/* Everything a bulk adds to its first job's flags. */
#define RP__BULK_FLAGS (RP__JOB_BULK | 0xffu << RP__BULK_SHIFT | 0xffu << RP__BULK_SAMPLE_SHIFT)

/* A job, by value: what a producer pushes and a consumer gets back. */
typedef struct rp__job {
    _Atomic uint64_t seq; /* enqueue order within the home mailbox */
    rp_job_fn fn;
    void *arg;
    uint32_t flags;
    int32_t submit_tid; /* traced jobs: the submitting thread, else 0 */
    rp__reply reply; /* where the answer goes; holds a reference */
    int64_t enq_ns;  /* enqueue time of a sampled job, else 0 */
} rp__job;

/* A lane's record: the queue node and the job it carries, on two cache
 * lines (63 of them fill a slab of jemalloc's 8 KiB class).  What every
 * job needs is on the first line; the second holds a reply and a sample's
 * stamp, written and read only for a job flagged RP__JOB_COLD (an ask, a
 * sampled job), so a tell moves one line from producer to consumer, not
 * two; or a bulk's arguments.  The free-list link is there too: a free
 * record carries no job. */
typedef struct rp__lane_rec {
    /* 16-aligned: ck uses cmpxchg16b on next.  fifo.value is not the job
     * (a record is its own value): it is the chain's prefetch hint, the
     * record RP__LANE_AHEAD places later (rp__lane_push_n), or NULL; read
     * racily (see lane.c, "Prefetching"). */
    ck_fifo_mpmc_entry_t fifo;
    rp_job_fn fn;
    void *arg;
    _Atomic uint64_t seq;
    uint32_t flags;
    int32_t submit_tid;
    /* Second line: the free-list link, then a cold job's reply and stamp
     * (RP__JOB_COLD), or a bulk's other arguments (RP__JOB_BULK; never
     * cold). */
    alignas(64) ck_stack_entry_t free;
    union {
        struct {
            rp__reply reply;
            int64_t enq_ns;
        };
        void *more[RP__LANE_BULK - 1];
        /* A bulk with sampled jobs, or a growing record with a sampled
         * tell (lane.c, "Growing"): their stamp in the last slot. */
        struct {
            void *more_unused_[RP__LANE_BULK - 2];
            int64_t stamp;
        };
    };
} rp__lane_rec;
#define RP__LANE_AHEAD 4u

/* A magazine: up to RP__LANE_MAG free records of one lane, as an array
 * (see lane.c, "Magazines"). */
#define RP__LANE_MAG 32u
typedef struct rp__lane_mag {
    ck_stack_entry_t link; /* in full or empty */
    ck_stack_entry_t all;  /* in all, until the lane is destroyed */
    unsigned n;
    bool doomed; /* a trim frees it (owner-only, during the trim) */
    rp__lane_rec *recs[RP__LANE_MAG];
} rp__lane_mag;

typedef struct rp__lane {
    ck_fifo_mpmc_t fifo; /* head and tail on separate cache lines */
    rp__freelist recs;   /* this lane's own records, never shared */
    const rp__arena *arena;
    /* Magazines: full ones for producers, empty ones for the owner. */
    alignas(64) ck_stack_t full __attribute__((aligned(16)));
    ck_stack_t empty __attribute__((aligned(16)));
    ck_stack_t all;
    /* The magazine each producer index (producer.h) takes records from:
     * only the index's holder touches its entry. */
    alignas(64) rp__lane_mag *own[RP__PRODUCERS];
    /* The magazine producers without an index take records from
     * (exchanged out and back in by each get). */
    alignas(64) _Atomic(rp__lane_mag *) taking;
    /* The magazine thieves return records in (exchanged the same way). */
    alignas(64) _Atomic(rp__lane_mag *) returned;
    /* Magazines made: one per RP__LANE_MAG records, and two more. */
    _Atomic size_t mags;
    /* The magazine the owner is filling (owner-only). */
    alignas(64) rp__lane_mag *filling;
    /* The owner's last look at the tail (owner-only; lane.c, "The tail
     * line"): a queued node strictly after the head the owner left at
     * generation seen_gen, or NULL. */
    ck_fifo_mpmc_entry_t *seen_tail;
    char *seen_gen; /* ck's generation type */
#ifdef RP__OWNER_CHECKS
    /* The owner thread (pthread_self) once it made an owner-only call,
     * else 0: see "Owner checks" above. */
    _Atomic uintptr_t owner;
#endif
    /* Records carved when the last trim completed, and the producer exits
     * counted before it (owner-only): a trim is due again only after the
     * lane grew past it, or a producer thread exited since, leaving its
     * magazine to take (rp__lane_trim_due). */
    size_t trimmed_at;
    unsigned long trimmed_exits;
} rp__lane;

/* Owner checks (see above): record the owner on the first owner-only
 * call, abort when another thread makes one.  Nothing in Release. */
#ifdef RP__OWNER_CHECKS
static inline void rp__lane_check_owner(rp__lane *lane, const char *fn)
{
    uintptr_t self = (uintptr_t)pthread_self(), seen = 0;

    if (atomic_compare_exchange_strong_explicit(&lane->owner, &seen, self, memory_order_relaxed,
                                                memory_order_relaxed) ||
        seen == self)
        return;
    fprintf(stderr, "routepool: %s called by a thread that does not own the lane\n", fn);
    abort();
}
#define RP__ASSERT_OWNER(lane) rp__lane_check_owner((lane), __func__)
#define RP__OWNER_INIT(lane) atomic_init(&(lane)->owner, 0)
#else
#define RP__ASSERT_OWNER(lane) ((void)0)
#define RP__OWNER_INIT(lane) ((void)0)
#endif

int rp__lane_init(rp__lane *lane, const rp__arena *arena);
void rp__lane_destroy(rp__lane *lane);
/* Append a copy of *job.  grow: the lane is one only the owner's runs
 * and thieves take from (never rp__lane_pop_mc() or rp__lane_pop_owner()),
 * so a tell may join the record its own producer pushed last while that
 * record is still the lane's last and untaken (lane.c, "Growing").  0, or
 * RP_ENOMEM when no record could be allocated. */
int rp__lane_push_mp(rp__lane *lane, const rp__job *job, bool grow);
/* A growing tell's two steps (lane.c, "Growing", "Late slot stores"),
 * exposed for test_grow, which puts other threads' pushes and takes
 * between them; rp__lane_push_mp() makes them itself.  Look: whether job
 * (growable, from a thread with a producer index) may join the lane's
 * last record, and where (*spot, written on true).  Claim: 1 when job
 * joined that record; 0 when its slot was written by a late claim (push
 * a record); -1 when the record changed since the look (look again). */
typedef struct rp__lane_grow_spot {
    rp__lane_rec *rec;
    uintptr_t gen; /* its next's generation, as the look read it */
    unsigned jobs;
} rp__lane_grow_spot;
bool rp__lane_grow_look(rp__lane *lane, const rp__job *job, rp__lane_grow_spot *spot);
int rp__lane_grow_claim(const rp__lane_grow_spot *spot, const rp__job *job);
/* Append copies of jobs[0..n), in order, with one link of the queue (the
 * records are chained first).  bulk: consecutive batch jobs of one
 * function with no reply, deadline or trace share records, up to
 * RP__LANE_BULK a record (lane.c, "Bulks"); only for a lane nobody pops
 * with rp__lane_pop_mc().
 * Returns how many: fewer than n only when records ran out (then the
 * first ones).  n at most RP__LANE_CHAIN_MAX. */
#define RP__LANE_CHAIN_MAX 64u
size_t rp__lane_push_n(rp__lane *lane, const rp__job *jobs, size_t n, bool bulk);
/* rp__lane_push_n(jobs, n, true) of the batch jobs a batch call makes of
 * args[0..n) (function fn, sequence numbers seq, seq + 1, ..., none
 * traced), without building them first: the same records.  sampled: bit
 * i when job i is sampled for the metrics, all with the enqueue stamp
 * stamp (nonzero then).  Returns as rp__lane_push_n(); n at most
 * RP__LANE_CHAIN_MAX. */
size_t rp__lane_push_args(rp__lane *lane, rp_job_fn fn, void *const *args, size_t n,
                          uint64_t seq, uint64_t sampled, int64_t stamp);
/* Take the oldest job into *out; false when the lane is empty.  Never on a
 * lane that holds bulks (an evicting producer: bounded mailboxes, which
 * push none). */
bool rp__lane_pop_mc(rp__lane *lane, rp__job *out);
/* A thief: take the oldest jobs into out[0..) with one head CAS (a run,
 * see lane.c), whole records only: up to max, or the first record's jobs
 * when it alone holds more (at most RP__LANE_BULK; out holds that many).
 * Their records go back to producers in a magazine.  Returns how many. */
unsigned rp__lane_steal(rp__lane *lane, rp__job *out, unsigned max);
/* The same for the lane's one owner thread, one job: the record it frees
 * goes into the magazine it fills, handed to producers RP__LANE_MAG at a
 * time.  Never on a lane that holds bulks (the pinned lane holds none). */
bool rp__lane_pop_owner(rp__lane *lane, rp__job *out);
/* The owner: the oldest job into out[0] and, when it is a batch job
 * (RP__JOB_BATCH), the batch jobs that follow it with consecutive
 * sequence numbers, with one head CAS (see lane.c, "Runs"): records
 * while fewer than max jobs were taken, each whole, so up to
 * max + RP__LANE_BULK - 1 jobs (out holds that many).  Returns how many;
 * 0 when the lane is empty. */
unsigned rp__lane_pop_owner_run(rp__lane *lane, rp__job *out, unsigned max);
/* Owner, going idle: hand over the magazine it fills, however full, so
 * its records do not wait for its next busy period. */
void rp__lane_flush(rp__lane *lane);

/* Owner: whether the lane holds more than keep records and grew since
 * its last trim. */
bool rp__lane_trim_due(const rp__lane *lane, size_t keep);
/* Owner, idle: give the slabs of the lane's free records back to the
 * allocator, keeping at least keep records (lane.c, "Trimming").  Takes
 * every free record and magazine out of reach, then asks quiescent(ctx)
 * whether every lane operation that began before is over; only then are
 * slabs and surplus magazines freed, else all goes back.  Returns the
 * records freed, or -1 when quiescent() said no. */
long rp__lane_trim(rp__lane *lane, size_t keep, bool (*quiescent)(void *), void *ctx);
/* Records the lane has carved and not freed. */
size_t rp__lane_records(const rp__lane *lane);

/* Sequence number of the oldest job, UINT64_MAX when empty.  A hint: a
 * concurrent pop may take that job first. */
uint64_t rp__lane_peek_seq(rp__lane *lane);
/* True when the lane holds no job (a hint under concurrency). */
int rp__lane_empty(rp__lane *lane);
/* The jobs of the lane's only record while it can still grow (lane.c,
 * "Growing": not sealed, not full, nothing after it), else 0.  A hint
 * under concurrency. */
unsigned rp__lane_young(rp__lane *lane);

#endif /* RP_LANE_H */
