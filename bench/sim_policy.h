/* SPDX-License-Identifier: MIT */
/*
 * bench/sim_policy.h - the pool's wake and steal policy (lib/worker.c, lib/steal.c),
 * written once for both simulators: rp-bench-sim's engine (sim_engine.c:
 * overheads, spinning and sleeping routees, any k) and rp-bench-sojourn's
 * zero-overhead replay (sojourn_sim.c: 2 routees, no latency).  Each keeps
 * its own routees and clock and asks these functions what the pool decides:
 *
 *  - a routee looks for its next job in its stolen batch, then (with jobs
 *    of its own, every SIM_RESCUE_NS) the rescue of a routee that made no
 *    progress (sim_rescue_steals(): rp__steal_rescue()) or else the age
 *    look's one older job (sim_older_steals()), its own queue,
 *    then by stealing (lib/worker.c next_job(); the callers do this in
 *    their own queues' terms);
 *  - a victim is worth stealing from when it has a queued job and is busy
 *    or holds more than one, or, for a thief that just ended a job at a
 *    low load, sleeps (sim_worth_stealing(): worth_stealing(); the
 *    simulator sets asleep for such looks only, bench_low_load() deciding
 *    the load as lib/steal.h does); the search is handed on after a steal
 *    for the first two only (sim_waits());
 *  - the victim is the deepest other routee worth stealing from, the first
 *    in scan order from the thief's index + 1 on a tie (sim_pick_victim());
 *  - the thief takes half its depth, 1..BENCH_STEAL_MAX (bench_steal_want(),
 *    common.h: RP__STEAL_MAX of lib/routee.h), at most what it has queued
 *    (sim_steal_count());
 *  - a push calls for a thief unless its routee is idle with that job alone
 *    (sim_push_wants_thief(): rp__pool_stealable_queued()), and the thief
 *    woken is the lowest idle routee, unless a thief is already searching
 *    (sim_thief_to_wake(): wake_thief()).
 *
 * A routee is seen through a sim_view, which its simulator fills.
 */
#ifndef RP_BENCH_SIM_POLICY_H
#define RP_BENCH_SIM_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"

/** What the policy reads of a routee. */
typedef struct sim_view {
    int64_t queued; /* jobs in its queue: what a thief can take */
    int64_t depth;  /* queued plus its private stolen batch: what a thief reads */
    bool busy;      /* running a job (the "+1" of its smallest-mailbox score) */
    bool asleep;    /* announced a sleep and not awake again (its idle bit),
                       seen by a thief that just ended a job at a low load */
} sim_view;

/** The simulator's view of routee i. */
typedef sim_view (*sim_view_fn)(const void *sim, unsigned i);

/** worth_stealing(v, cpu, false): v's stealable job waits behind a running
 *  job or another job (what the hand-on after a steal wakes a thief for). */
static inline bool sim_waits(sim_view v)
{
    return v.queued > 0 && (v.busy || v.depth > 1);
}

/** worth_stealing(v, cpu, true): v's stealable job waits, or v sleeps and
 *  runs its one job only after its wake-up. */
static inline bool sim_worth_stealing(sim_view v)
{
    return sim_waits(v) || (v.queued > 0 && v.asleep);
}

/** True when routee v should replace the victim kept so far (best < 0:
 *  none yet, best_depth its depth): worth stealing from and deeper. */
static inline bool sim_better_victim(sim_view v, int best, int64_t best_depth)
{
    return sim_worth_stealing(v) && (best < 0 || v.depth > best_depth);
}

/** The pool's victim scan: the deepest of the k - 1 other routees worth
 *  stealing from, in order from me + 1; -1 when none (*depth: its depth). */
static inline int sim_pick_victim(const void *sim, sim_view_fn view, unsigned k, unsigned me,
                                  int64_t *depth)
{
    int victim = -1;

    *depth = 0;
    for (unsigned d = 1; d < k; d++) {
        unsigned i = (me + d) % k;
        sim_view v = view(sim, i);
        if (sim_better_victim(v, victim, *depth)) {
            victim = (int)i;
            *depth = v.depth;
        }
    }
    return victim;
}

/** How many jobs a thief takes from victim v (one: the --steal-batch one
 *  what-if): half its depth, 1..BENCH_STEAL_MAX, at most its queued jobs. */
static inline unsigned sim_steal_count(sim_view v, bool one)
{
    unsigned want = one ? 1 : bench_steal_want(v.depth);

    return (int64_t)want < v.queued ? want : (unsigned)v.queued;
}

/** rp__pool_stealable_queued(): after a push, does routee c's backlog call
 *  for a thief?  Not when c is idle and holds that job alone: c runs it. */
static inline bool sim_push_wants_thief(sim_view c)
{
    return c.busy || c.depth > 1;
}

/** RP__RESCUE_NS of lib/steal.h: how often a routee with work of its own
 *  looks at another (rp__steal_rescue()). */
#define SIM_RESCUE_NS 10000

/** rp__steal_rescue(): a look `since` ns after the previous one steals
 *  from the routee watched when it had stealable work then (had), has now
 *  (has) and finished no job since (stuck); a look more than 4 rescue_ns
 *  after the previous one only watches. */
static inline bool sim_rescue_steals(int64_t since, int64_t rescue_ns, bool had, bool has,
                                     bool stuck)
{
    return since <= 4 * rescue_ns && had && has && stuck;
}

/** RP__OLDER_NS and RP__OLDER_PACE of lib/steal.h: the age look. */
#define SIM_OLDER_NS 150000
#define SIM_OLDER_PACE 16

/** The age look (rp__steal_rescue(), at a look that rescued nothing):
 *  take one job of the routee watched when it runs (busy) with a queued
 *  job (has), finished at most SIM_OLDER_PACE jobs per rescue_ns in the
 *  `since` ns since the last look (ran), and its oldest job arrived
 *  older_ns or more before the looker's own oldest (0: the look is off).
 *  Unlike the rescue, a look long after the last one may take it: the
 *  jobs' ages do not depend on when we looked last (the pool dates them
 *  by marks, within RP__MARK_NS; the model knows their arrival). */
static inline bool sim_older_steals(int64_t since, int64_t rescue_ns, uint64_t ran, bool busy,
                                    bool has, int64_t v_oldest, int64_t own_oldest,
                                    int64_t older_ns)
{
    return older_ns > 0 && busy && has &&
           (int64_t)ran * rescue_ns <= since * SIM_OLDER_PACE && own_oldest - v_oldest >= older_ns;
}

/** wake_thief(): the routee to wake, the lowest set bit of idle (one bit
 *  per routee, k of them), or -1 when none is idle or a thief is still
 *  searching (searching != 0). */
static inline int sim_thief_to_wake(const uint64_t *idle, unsigned k, int searching)
{
    if (searching != 0)
        return -1;
    for (unsigned w = 0; w < (k + 63) / 64; w++)
        if (idle[w])
            return (int)(w * 64 + (unsigned)__builtin_ctzll(idle[w]));
    return -1;
}

#endif /* RP_BENCH_SIM_POLICY_H */
