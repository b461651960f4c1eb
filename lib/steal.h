/* SPDX-License-Identifier: MIT */
/*
 * steal.h - work stealing between a pool's routees: idle bits, the thief
 * search, victim choice and the steal (steal.c).  Private.
 *
 * Every function but rp__steal_queued() runs on the routee thread r (the
 * owner of its stolen batch); rp__steal_queued() runs on any producer.
 */
#ifndef RP_STEAL_H
#define RP_STEAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "routee_record.h"

/* pool->searching: the search's waker has signalled its thief.  A search
 * without it that began RP__EV_HELP_NS ago or more belongs to a waker
 * descheduled before its signal, and the next waker takes it over. */
#define RP__SEARCH_WOKEN 1

/* A producer queued a stealable job on target (after its fence): wake a
 * sleeping routee to steal it if target is busy and nobody is looking. */
void rp__steal_queued(rp_pool *pool, rp_routee *target);

/* The routee is about to sleep: its bit in the pool's idle bits. */
void rp__steal_set_idle(rp_pool *pool, const rp_routee *r);
/* Clear our own bit.  False when a waker cleared it first: then that
 * waker woke us to search. */
bool rp__steal_clear_idle(rp_pool *pool, const rp_routee *r);
/* End the search *searching says this routee holds (then clears it). */
void rp__steal_stop_searching(rp_pool *pool, bool *searching);
/* Set r's running flag to now (stored on change only, in *running); a
 * routee that starts running with stealable jobs queued behind it wakes a
 * thief. */
void rp__steal_set_running(rp_routee *r, bool *running, bool now);
/* Steal a batch from the deepest other routee into r's stolen batch
 * (empty): the first job into *out, the rest kept (counted in r's depth).
 * False when there was nothing worth stealing. */
bool rp__steal_batch(rp_routee *r, bool *searching, rp__job *out);
/* rp__steal_batch() from r->last_victim, when its stealable work is
 * ready: more than a young record (lane.c, "Growing").  Forgets the
 * victim when it has none. */
bool rp__steal_again(rp_routee *r, bool *searching, rp__job *out);
/* The rescue: how often a routee with work of its own looks at another,
 * and how many takes may pass between two reads of its clock. */
#define RP__RESCUE_NS 10000
#define RP__RESCUE_TAKES_MAX 256u
/* Called every r->watch_left takes of a routee that steals: reads the
 * clock (and makes a mark when one is due) and, RP__RESCUE_NS after its
 * last look, looks at the routee it watches.  When that routee had
 * stealable work at the last look, still has, and finished no job since
 * (a long job, its CPU taken, a late wake-up), steals from it as
 * rp__steal_batch() would, the first job into *out; else, when the age
 * look finds its oldest job older than ours (RP__OLDER_NS), takes that
 * one job into *out; otherwise watches the next routee.  Resets
 * r->watch_left. */
bool rp__steal_rescue(rp_routee *r, bool *searching, rp__job *out);
/* The age look (steal.c): at a look that rescues nothing, a routee takes
 * one job of the routee it watches when that routee is running, ran at
 * most RP__OLDER_PACE jobs per RP__RESCUE_NS since the last look (its
 * jobs are not tiny), and its oldest job was queued RP__OLDER_NS or more
 * before the looker's own oldest, as the two routees' marks date them. */
#define RP__OLDER_NS 150000
#define RP__OLDER_PACE 16u
/* A routee's marks come at most this often (routee_record.h, RP__MARKS of
 * them): they date a job within RP__MARK_NS, up to RP__MARKS of them back
 * (1.6 ms of work or more). */
#define RP__MARK_NS 50000
/* A mark: rp__now_ns() in microseconds and a count of accepted jobs, the
 * low 32 bits of each, in one word (comparisons of both wrap: an age of
 * 35 minutes or more, or 2^31 jobs queued, is misread, which at worst
 * moves one job). */
static inline uint64_t rp__mark(int64_t now_ns, uint64_t accepted)
{
    return (uint64_t)(uint32_t)(now_ns / 1000) << 32 | (uint32_t)accepted;
}
/* Dating job number `head` (the head-th job a mailbox accepted, from 0)
 * by n marks (the ring of RP__MARKS in routee_record.h, the newest at
 * index n - 1).  Queued by: the time (us) of the oldest mark that counts
 * the job; false when not even the newest does (the job came after it).
 * Marks a concurrent owner overwrites while this reads are newer than the
 * ones they replace, and only the oldest time counting the job is kept:
 * a torn read dates the job later, never earlier.  Pure: tested on its
 * own. */
bool rp__mark_queued_by(const _Atomic uint64_t *marks, uint32_t n, uint32_t head,
                        uint32_t *t_us);
/* Queued after: the time (us) of the newest mark that does not count the
 * job yet; false when every mark kept counts it.  For the owner's own
 * marks (no concurrent writer).  Pure: tested on its own. */
bool rp__mark_queued_after(const _Atomic uint64_t *marks, uint32_t n, uint32_t head,
                           uint32_t *t_us);
/* A fast pace: RP__STEAL_FAST_MAX jobs in at most this long. */
#define RP__STEAL_FAST_NS 5000
/* A steal of more than RP__STEAL_MAX trusts a pace read at most this long
 * ago (the reads come ~RP__RESCUE_NS / 2 apart). */
#define RP__STEAL_FRESH_NS (2 * RP__STEAL_FAST_NS)
/* The pace that lets a steal take up to RP__STEAL_FAST_MAX jobs: jobs run
 * in elapsed_ns (between two of a routee's clock reads, idle time
 * included) come at least RP__STEAL_FAST_MAX per RP__STEAL_FAST_NS, so
 * such a steal holds a few microseconds of work at most (design.md, "The
 * fast pace").  Pure: tested on its own. */
static inline bool rp__steal_pace_fast(uint64_t jobs, int64_t elapsed_ns)
{
    return elapsed_ns > 0 && jobs >= RP__STEAL_FAST_MAX &&
           (uint64_t)elapsed_ns * RP__STEAL_FAST_MAX <= jobs * RP__STEAL_FAST_NS;
}
/* Low load (a sleeper's job, steal.c worth_stealing): over a window of
 * at least RP__LOAD_WINDOW_NS the routee slept more than
 * RP__LOW_LOAD_SLEEP_PCT percent of the time.  Its clock reads (the
 * rescue's, ~RP__RESCUE_NS / 2 apart while it works, and each sleep's
 * end) close the window, so a round without sleeps ends a low load within
 * a window.  rp-bench-sojourn's routees slept 20-50 % of most windows at
 * load 0.5, under 20 % at 0.8, under 10 % at 0.9 (design.md, "A sleeper's
 * job"). */
#define RP__LOAD_WINDOW_NS 1000000
#define RP__LOW_LOAD_SLEEP_PCT 30
/* Whether slept_ns of span_ns (a closed window) is a low load.  Pure:
 * tested on its own. */
static inline bool rp__steal_low_load(int64_t slept_ns, int64_t span_ns)
{
    return span_ns > 0 && slept_ns > 0 && slept_ns * 100 > span_ns * RP__LOW_LOAD_SLEEP_PCT;
}
/* Add slept (ns the routee just slept, or 0) to r's load window, then
 * close the window when it is due (now: a fresh clock read). */
void rp__steal_load_window(rp_routee *r, int64_t now, int64_t slept);
/* The next job of r's stolen (or batch-run) batch, where it waits in
 * r->stolen (its depth slot given back); NULL when the batch is done.
 * Owner only: the pointer holds until the owner's next take. */
static inline rp__job *rp__steal_next_held(rp_routee *r)
{
    if (r->stolen_next == r->stolen_count)
        return NULL;
    rp__mailbox_release_owner(&r->mb, 1);
    return &r->stolen[r->stolen_next++];
}
/* rp__steal_next_held(), copied into *out; false when the batch is done. */
bool rp__steal_take(rp_routee *r, rp__job *out);
/* Whether another routee holds work worth stealing (the thief's last look
 * before it sleeps, after setting its idle bit). */
bool rp__steal_any(rp_routee *r);

#endif /* RP_STEAL_H */
