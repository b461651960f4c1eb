/* SPDX-License-Identifier: MIT */
/*
 * routee_record.h - the routee record shared by the pool, the worker
 * loop, stealing, the routers and the strategies, with the inline reads
 * they all make (stopped, score).  Private; data only: routee.c's
 * functions are in routee.h.
 */
#ifndef RP_ROUTEE_RECORD_H
#define RP_ROUTEE_RECORD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "mailbox.h"

enum { RP__ROUTEE_LOCAL = 1, RP__ROUTEE_FOREIGN = 2 };

/* Most jobs one steal asks for (half the victim's depth, at least one). */
#define RP__STEAL_MAX 8u
/* ...and an idle thief at a fast pace, whose 32 jobs take a few
 * microseconds (design.md, "The fast pace"). */
#define RP__STEAL_FAST_MAX 32u
/* Marks a routee keeps (a power of two): see the mark fields below. */
#define RP__MARKS 32u
/* What the stolen batch holds: a steal's jobs, or the owner's batch run,
 * which ends on a whole bulk (rp__mailbox_pop_owner_run). */
#define RP__HELD_MAX (RP__STEAL_FAST_MAX + RP__LANE_BULK - 1)

struct rp_routee {
    int kind;
    int index;      /* in its pool; -1 for foreign routees */
    uint64_t ident; /* identity for rendezvous hashing */
    rp_pool *pool;  /* NULL for foreign routees */
    /* Foreign routees only. */
    rp_foreign_send_fn send;
    rp_foreign_depth_fn depth_fn;
    void *user;
    _Atomic bool foreign_stopped;
    /* Written by the owner around every job; read by routers. */
    RP_ALIGNED _Atomic int busy;
    /* Set once the routee has taken a job and runs it (busy is set just
     * before the take, once a job is in sight, for the smallest-mailbox
     * score; never by a look that finds nothing): what thieves read, so a
     * job the routee is about to take is not stolen from under it. */
    _Atomic int running;
    /* The CPU the routee last started running on (a hint, -1 before its
     * first job), stored on change at the start of each busy period: a
     * thief on that CPU leaves the jobs of a routee that is not running to
     * it (steal.c, worth_stealing). */
    _Atomic int cpu;
    /* Counters the owner bumps per job, on a line of their own: the line
     * above is read by producers and routers, and a write per job there
     * would move it between the CPUs on every tell. */
    RP_ALIGNED _Atomic uint64_t run; /* owner-only writes */
    /* Other routees' jobs held in the stolen batch since the last steal
     * (its size less the one run at once), until the routee's next clock
     * read (rp__steal_rescue, which runs only once the batch is done):
     * they count in its depth but were never accepted here, and the age look leaves them out of its numbering
     * (steal.c, "The age look").  Owner-only writes. */
    _Atomic unsigned held_stolen;
    _Atomic uint64_t stole; /* owner-only writes */
    _Atomic uint64_t sleeps; /* owner-only writes */
    /* Times the routee, alone on its CPU after a yield, let work gather
     * before it looked again (worker.c, gather_alone).  Owner-only writes;
     * read by tests. */
    _Atomic uint64_t gathers;
    /* Steals of the rescue (steal.c, rp__steal_rescue).  Owner-only
     * writes; read by tests. */
    _Atomic uint64_t rescues;
    /* Steals of the age look (steal.c, "The age look").  Owner-only
     * writes; read by tests. */
    _Atomic uint64_t olders;
    /* Looks of the rescue at another routee (steal.c, rp__steal_rescue),
     * and those of them that came more than 4 RP__RESCUE_NS after the
     * last and only watched.  Owner-only writes. */
    _Atomic uint64_t looks;
    _Atomic uint64_t stale_looks;
    /* Odd while the routee sleeps (or trims its own lanes while asleep),
     * even while it may touch other routees' lanes: a trim's proof that
     * no thief is inside its lanes (lane.c, "Trimming").  Owner-only
     * writes, twice per sleep. */
    _Atomic uint32_t sleep_gen;
    _Atomic uint64_t rerouted;
    /* Metrics, owner-only writes (relaxed load + store). */
    /* busy_ns and busy_since under a seqlock (busy_seq odd while the owner
     * writes), so a snapshot adds the running period exactly once. */
    _Atomic uint32_t busy_seq;
    _Atomic int64_t busy_since; /* 0 while idle */
    _Atomic uint64_t busy_ns;
    _Atomic uint64_t wait_hist[RP_WAIT_BUCKETS];
    _Atomic uint64_t wait_count, wait_sum_ns;
    _Atomic int32_t tid; /* kernel thread id, set by the routee at start */
    pthread_t thread;
    bool started;
    /* The last batch this routee stole; [stolen_next, stolen_count) have
     * not run yet (owner-only).  They count in its depth, so routers see
     * them. */
    rp__job stolen[RP__HELD_MAX];
    unsigned stolen_next, stolen_count;
    int64_t spin_ns; /* owner-only: this routee's adaptive spin window */
    unsigned spin_fails; /* owner-only: fruitless spins in a row */
    /* Owner-only: its last yield came back at once and found work - a
     * producer streams jobs faster than it runs them (worker.c,
     * yield_for_work). */
    bool streaming;
    /* Owner-only: the job count of the young record of its own that the
     * routee last passed over for a steal (worker.c, pass_young), else 0,
     * and the routee it last stole from while its work was ready (NULL:
     * none, or it had none ready when last looked at). */
    unsigned passed_young;
    struct rp_routee *last_victim;
    /* Owner-only: the rescue's watch (steal.c, rp__steal_rescue).  The
     * routee watched, its run count and whether it had stealable work at
     * the last look (watch_at); the clock is read once per watch_every
     * takes (watch_left to go), a count fitted to this routee's pace. */
    struct rp_routee *watch;
    uint64_t watch_run;
    int64_t watch_at, watch_read;
    unsigned watch_left, watch_every;
    bool watch_had;
    /* Owner-only: its own run count at the last clock read, and whether
     * its jobs came at a fast pace between the last two reads (steal.c,
     * rp__steal_pace_fast): its steals may then take RP__STEAL_FAST_MAX. */
    uint64_t pace_run;
    bool fast;
    /* Owner-only: the load window (steal.h, RP__LOAD_WINDOW_NS): its
     * start, the time slept in it, and whether the last one was a low
     * load (a thief may then take a sleeper's one job). */
    int64_t load_t0, load_slept;
    bool low_load;
    /* Marks (steal.c, "The age look"): at its clock reads, every
     * RP__MARK_NS at most, the routee notes when its mailbox had accepted
     * how many jobs (rp__mark: both in one word, so a reader never sees
     * half a mark), and others date its oldest job by them.  mark_n counts
     * the marks written, the newest at mark[(mark_n - 1) % RP__MARKS].
     * Owner-only writes; mark_at is the newest mark's time (ns). */
    RP_ALIGNED _Atomic uint64_t mark[RP__MARKS];
    _Atomic uint32_t mark_n;
    int64_t mark_at;
    rp__mailbox mb;
};

/* The routee whose thread this is, NULL on other threads (defined in
 * routee.c, set by worker.c before the start hook): for the "not from a
 * routee" checks, the owner ring (routee.c) and smallest-mailbox's own
 * start (router.c). */
extern _Thread_local rp_routee *rp__current_routee __attribute__((tls_model("initial-exec")));

static inline bool rp__routee_stopped(const rp_routee *r)
{
    if (r->kind == RP__ROUTEE_FOREIGN)
        return atomic_load_explicit(&r->foreign_stopped, memory_order_acquire);
    return atomic_load_explicit(&r->mb.closed, memory_order_acquire) != 0;
}

/* Owner-only counters: a load and a store, no locked instruction.  The
 * store is a release (free on x86): readers such as wait_idle() acquire. */
static inline void rp__owner_add(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_store_explicit(counter,
                          atomic_load_explicit(counter, memory_order_relaxed) + n,
                          memory_order_release);
}

/* Smallest-mailbox score: queued depth plus one while running a job;
 * 0 for a depth nobody can read.  Inline: every smallest-mailbox pick
 * reads it for each routee. */
static inline int64_t rp__routee_score(const rp_routee *r)
{
    if (r->kind == RP__ROUTEE_FOREIGN) {
        int64_t d = r->depth_fn ? r->depth_fn(r->user) : -1;
        return d > 0 ? d : 0; /* unreadable counts as empty */
    }
    return rp__mailbox_depth(&r->mb) + atomic_load_explicit(&r->busy, memory_order_relaxed);
}

#endif /* RP_ROUTEE_RECORD_H */
