/* SPDX-License-Identifier: MIT */
/*
 * steal.c - work stealing between the routees of a pool: the idle bits,
 * the thief search, the choice of a victim and the steal itself.
 *
 * A routee whose own queue is empty takes up to half the depth (at most
 * RP__STEAL_MAX, or RP__STEAL_FAST_MAX while its own jobs come at a fast
 * pace: rp__steal_pace_fast) of the oldest stealable jobs of the deepest other
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
 */
#include <limits.h>
#include <sched.h>
#include <stdint.h>

#include "clock.h"
#include "pool_record.h"
#include "probes.h"
#include "steal.h"
#include "trace_ring.h"

static uint64_t idle_bit(const rp_routee *r)
{
    return 1ull << (r->index % 64);
}

void rp__steal_set_idle(rp_pool *pool, const rp_routee *r)
{
    atomic_fetch_or_explicit(&pool->idle_bits[r->index / 64], idle_bit(r),
                             memory_order_seq_cst);
}

/* Clear our own bit.  False when a waker cleared it first: then that
 * waker woke us to search. */
bool rp__steal_clear_idle(rp_pool *pool, const rp_routee *r)
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

void rp__steal_queued(rp_pool *pool, rp_routee *target)
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
void rp__steal_stop_searching(rp_pool *pool, bool *searching)
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
void rp__steal_set_running(rp_routee *r, bool *running, bool now)
{
    if (*running == now)
        return;
    *running = now;
    if (now) {
        int cpu = sched_getcpu();

        if (cpu != atomic_load_explicit(&r->cpu, memory_order_relaxed))
            atomic_store_explicit(&r->cpu, cpu, memory_order_relaxed);
    }
    atomic_store_explicit(&r->running, now, memory_order_seq_cst);
    if (now && r->pool->steal && rp__mailbox_has_stealable(&r->mb) && any_idle(r->pool))
        wake_thief(r->pool);
}

/* Whether v announced a sleep (its idle bit, set before its last look)
 * and has not cleared it: awake again, or claimed as a thief by a waker,
 * clears it.  A hint, like every look here. */
static bool asleep(const rp_routee *v)
{
    return (atomic_load_explicit(&v->pool->idle_bits[v->index / 64], memory_order_relaxed) &
            idle_bit(v)) != 0;
}

/*
 * Whether a thief may take v's stealable work: only work that waits - v
 * is running a job, or holds more than the one job it is about to take,
 * or (sleeper) it sleeps.  A routee between jobs with one queued job will
 * run it itself; stealing that job would only move it away from the
 * routee the router chose (and make an idle pool stop behaving like its
 * router).  A routee asleep with one queued job runs it only after its
 * wake-up, tens of microseconds in a VM, where a central queue's free
 * worker would take it at once.  So sleeper is the thief's low load
 * (rp__steal_low_load) in its searches for a victim (pick_victim,
 * rp__steal_again): those of a routee whose own work ran out - mostly
 * just after a job, or woken with other work in sight - which takes the
 * job and goes on (design.md, "Stealing": "A sleeper's job").  At higher
 * loads the sleeper would be sent its next job soon, and each such steal
 * costs it a futile wake-up and another sleep (measured: 0.8's tail
 * worse).  The last look before a sleep (rp__steal_any: what keeps an
 * idle routee awake) and the hand-on after a steal pass false, so an
 * idle pool still runs each job where its router sent it.
 */
static bool worth_stealing(rp_routee *v, int cpu, bool sleeper)
{
    if (!rp__mailbox_has_stealable(&v->mb))
        return false;
    if (atomic_load_explicit(&v->running, memory_order_seq_cst))
        return true;
    if (cpu >= 0 && atomic_load_explicit(&v->cpu, memory_order_relaxed) == cpu)
        return false; /* the same-CPU rule */
    return rp__mailbox_depth(&v->mb) > 1 || (sleeper && asleep(v));
}

/* The deepest other routee with work worth stealing, or NULL. */
static rp_routee *pick_victim(rp_routee *r, int64_t *depth)
{
    rp_pool *pool = r->pool;
    rp_routee *victim = NULL;
    int cpu = sched_getcpu();

    *depth = 0;
    for (unsigned k = 1; k < pool->n; k++) {
        rp_routee *v = &pool->routees[((unsigned)r->index + k) % pool->n];
        int64_t d;

        if (!worth_stealing(v, cpu, r->low_load))
            continue;
        d = rp__mailbox_depth(&v->mb);
        if (d > *depth || !victim) {
            victim = v;
            *depth = d;
        }
    }
    return victim;
}

/* Steal a batch from victim (depth: its depth as read): half its depth,
 * at most `most`; run the first, keep the rest (counted in our depth),
 * and remember the victim.  busy: a steal by a routee with work of its
 * own (the rescue, the age look), whose own queue would wait behind
 * anything it put back on its lane (below).
 * *searching: whether this routee was woken to steal (pool->searching
 * counts it); cleared here, before handing the search on, or wake_thief()
 * would see the search still running and wake nobody. */
static bool steal_from(rp_routee *r, rp_routee *victim, int64_t depth, unsigned most,
                       bool busy, bool *searching, rp__job *out)
{
    unsigned want, got, requeued = 0;

    want = depth / 2 < 1 ? 1 : depth / 2 > most ? most : (unsigned)(depth / 2);
    /* More than RP__STEAL_MAX only on a fresh pace: a routee that ran
     * long jobs since its last clock read (its jobs changed, and its next
     * read may be up to watch_every takes away) takes RP__STEAL_MAX. */
    if (want > RP__STEAL_MAX && rp__now_ns() - r->watch_read > RP__STEAL_FRESH_NS) {
        r->fast = false;
        want = RP__STEAL_MAX;
    }
    /* Into the stolen batch (empty: next_job() only steals then). */
    if (!(got = rp__mailbox_steal(&victim->mb, r->stolen, want)))
        return false;
    rp__owner_add(&r->stole, got);
    r->last_victim = victim;
    if (victim == r->watch)
        r->watch_had = false; /* the work the rescue saw may be what we took */
    /* A whole record of tells brought more than our share (a grown one:
     * lane.c, "Growing"): an idle thief puts the rest on its own stealable
     * lane, where the victim, once free, takes it back, instead of waiting
     * behind us in the private batch (bulks of a batch stay whole: their
     * submitter asked for them together).  A busy thief keeps it all:
     * there the rest would queue behind the thief's own backlog, and it
     * is the victim's oldest work, the very jobs the rescue and the age
     * look take because they waited (measured: design.md, "A busy
     * thief's surplus"). */
    if (!busy && got > want && !(r->stolen[want].flags & RP__JOB_BATCH) &&
        (requeued = rp__mailbox_requeue(&r->mb, &r->stolen[want], got - want)) != 0)
        got -= requeued;
    RP_PROBE4(steal, r->pool->name, r->index, victim->index, got);
    if (RP_UNLIKELY(atomic_load_explicit(&r->pool->trace_sample, memory_order_acquire)) &&
        atomic_load_explicit(&r->pool->trace_steals, memory_order_relaxed) && r->pool->rings) {
        rp__trace_event ev = {rp__now_ns(), 0, 0, RP__EV_STEAL, victim->index, got};
        rp__trace_push(r->pool->rings[r->index], &ev);
    }
    *out = r->stolen[0];
    if (got > 1)
        rp__mailbox_reserve(&r->mb, got - 1);
    atomic_store_explicit(&r->held_stolen, got - 1, memory_order_relaxed);
    r->stolen_next = 1;
    r->stolen_count = got;
    /* More work waits behind the victim (or in our requeued share):
     * hand the search on. */
    rp__steal_stop_searching(r->pool, searching);
    if ((worth_stealing(victim, -1, false) || requeued) && any_idle(r->pool))
        wake_thief(r->pool);
    return true;
}

/* How many an idle thief's steal may take: RP__STEAL_FAST_MAX at a fast
 * pace (rp__steal_pace_fast), else RP__STEAL_MAX.  Whether that pace is
 * still fresh is asked in steal_from(), once the victim's depth says the
 * steal would take more than RP__STEAL_MAX: only such a steal pays the
 * clock read. */
static unsigned steal_most(const rp_routee *r)
{
    return r->fast ? RP__STEAL_FAST_MAX : RP__STEAL_MAX;
}

bool rp__steal_batch(rp_routee *r, bool *searching, rp__job *out)
{
    int64_t depth;
    rp_routee *victim = pick_victim(r, &depth);

    return victim && steal_from(r, victim, depth, steal_most(r), false, searching, out);
}

/* Ready: more than a young record (lane.c, "Growing"), which its
 * producer is still filling. */
bool rp__steal_again(rp_routee *r, bool *searching, rp__job *out)
{
    rp_routee *v = r->last_victim;

    if (!v)
        return false;
    if (!worth_stealing(v, sched_getcpu(), r->low_load) || rp__mailbox_young(&v->mb) ||
        !steal_from(r, v, rp__mailbox_depth(&v->mb), steal_most(r), false, searching, out)) {
        r->last_victim = NULL;
        return false;
    }
    return true;
}

/*
 * The rescue: a routee busy with work of its own never steals as a thief
 * does, so a routee stuck in a long job, or whose CPU was taken, or whose
 * wake-up is late, would keep its queue to itself until it runs again,
 * while a central queue would hand those jobs to the free worker.  So a
 * routee with work of its own looks at one other routee every
 * RP__RESCUE_NS: when that routee had stealable work at the last look,
 * still has, and finished no job since, the work queued then has waited
 * at least RP__RESCUE_NS behind a routee making no progress, and is
 * stolen (the oldest first, half the depth, as any steal, but all of a
 * whole record it brings: steal_from's busy).  One routee's
 * lines per look, never a scan: a pool of n routees watches each in turn.
 * A look more than 4 RP__RESCUE_NS after the last (this routee slept or
 * ran a long job) only watches: the work seen then may be gone and what
 * is queued now new; so does the first look after any steal of ours from
 * the routee watched (steal_from).
 *
 * The clock is read once per watch_every takes, a count fitted to the
 * routee's pace so that the reads come about RP__RESCUE_NS / 2 apart:
 * once per job of 100 us, once per RP__RESCUE_TAKES_MAX takes of tiny
 * ones (a decrement per take; for empty jobs a clock read every ~10 us).
 * Chosen and measured with rp-bench-sim --rescue-ns: design.md, "The
 * rescue".
 */
static unsigned watch_pace(unsigned takes, int64_t elapsed)
{
    int64_t n;

    if (elapsed <= 0)
        return RP__RESCUE_TAKES_MAX;
    n = (int64_t)takes * (RP__RESCUE_NS / 2) / elapsed;
    return n < 1 ? 1 : n > RP__RESCUE_TAKES_MAX ? RP__RESCUE_TAKES_MAX : (unsigned)n;
}

/* The routee watched after r->watch (after r itself at first), never r. */
static rp_routee *next_watched(rp_routee *r)
{
    rp_pool *pool = r->pool;
    unsigned i = ((unsigned)(r->watch ? r->watch->index : r->index) + 1) % pool->n;

    if (i == (unsigned)r->index)
        i = (i + 1) % pool->n;
    return &pool->routees[i];
}

/*
 * The age look.  The rescue serves a routee that makes no progress; a
 * routee that runs long jobs one after another with a backlog behind them
 * makes progress, and the others, busy with their own younger jobs, never
 * take its older ones, where a central queue's free worker would take the
 * oldest job whoever queued it.  In rp-bench-sojourn at load 0.8 the other
 * routee spent more than half of a p99.9 job's wait on younger jobs (the
 * central queue none).  So a look that rescues nothing dates the watched
 * routee's oldest job and our own, and takes that one job when it is
 * older by RP__OLDER_NS (design.md, "Stealing": "The age look").
 *
 * Jobs carry no time: a tell would pay a clock read.  Each routee marks
 * instead, at its clock reads every RP__MARK_NS at most, how many jobs its
 * mailbox had accepted (routee_record.h), and a mailbox's oldest job is
 * its accepted count minus its depth, as numbered from 0 (FIFO), less the
 * other routees' jobs a thief holds (held_stolen): the pinned lane, the
 * owner ring and a record a thief put back on its own lane make it a
 * close guess, and a wrong one moves one job.  A routee that ran more than
 * RP__OLDER_PACE jobs per RP__RESCUE_NS since the last look runs small
 * ones, and ages between such routees never reach RP__OLDER_NS: no look,
 * so tiny jobs pay none of these lines.
 *
 * Not in a pool whose default router is smallest-mailbox: the job taken
 * leaves the older routee's mailbox the smaller, and the router sends it
 * the next job, behind the old ones.  The simulator finds nothing to gain
 * there, and paired runs with the look were worse, if no more than a null
 * pair's spread (design.md): the gate keeps that router as measured.
 */
static void mark(rp_routee *r, int64_t now)
{
    uint32_t n;

    if (now - r->mark_at < RP__MARK_NS)
        return;
    r->mark_at = now;
    n = atomic_load_explicit(&r->mark_n, memory_order_relaxed);
    atomic_store_explicit(&r->mark[n % RP__MARKS], rp__mark(now, rp__mailbox_enqueued(&r->mb)),
                          memory_order_relaxed);
    atomic_store_explicit(&r->mark_n, n + 1, memory_order_release);
}

/* The mark i steps older than the newest of n. */
static uint64_t mark_back(const _Atomic uint64_t *marks, uint32_t n, uint32_t i)
{
    return atomic_load_explicit(&marks[(n - 1 - i) % RP__MARKS], memory_order_relaxed);
}

static bool counts(uint64_t mark, uint32_t head)
{
    return (int32_t)((uint32_t)mark - head) > 0;
}

/* A mark's time, us. */
static uint32_t mark_us(uint64_t mark)
{
    return (uint32_t)(mark >> 32);
}

bool rp__mark_queued_by(const _Atomic uint64_t *marks, uint32_t n, uint32_t head, uint32_t *t_us)
{
    uint32_t kept = n < RP__MARKS ? n : RP__MARKS;
    uint64_t m;

    if (!kept || !counts(m = mark_back(marks, n, 0), head))
        return false;
    *t_us = mark_us(m);
    for (uint32_t i = 1; i < kept && counts(m = mark_back(marks, n, i), head); i++)
        if ((int32_t)(mark_us(m) - *t_us) < 0)
            *t_us = mark_us(m);
    return true;
}

bool rp__mark_queued_after(const _Atomic uint64_t *marks, uint32_t n, uint32_t head,
                           uint32_t *t_us)
{
    uint32_t kept = n < RP__MARKS ? n : RP__MARKS;

    for (uint32_t i = 0; i < kept; i++) {
        uint64_t m = mark_back(marks, n, i);

        if (!counts(m, head)) {
            *t_us = mark_us(m);
            return true;
        }
    }
    return false;
}

/* The number of v's oldest job: accepted minus queued (own: its held
 * batch is empty at a look; another's: less held_stolen).  Of v's the depth
 * is read first (a push between the reads dates the job later), of our
 * own the count (dates it earlier): either way the look errs towards
 * leaving the job where it is. */
static uint32_t oldest_of(const rp_routee *v, bool own)
{
    uint64_t accepted;
    int64_t depth;

    if (own) {
        accepted = rp__mailbox_enqueued(&v->mb);
        depth = rp__mailbox_depth(&v->mb);
    } else {
        depth = rp__mailbox_depth(&v->mb) -
                atomic_load_explicit(&v->held_stolen, memory_order_relaxed);
        accepted = rp__mailbox_enqueued(&v->mb);
    }
    return (uint32_t)(accepted - (uint64_t)depth);
}

/* Whether v's oldest job was queued RP__OLDER_NS or more before ours; ran:
 * the jobs v finished in the `since` ns since the last look. */
static bool older_waits(rp_routee *r, rp_routee *v, uint64_t ran, int64_t since)
{
    uint32_t by, after;

    if (!r->pool->older || ran * RP__RESCUE_NS > (uint64_t)since * RP__OLDER_PACE ||
        !atomic_load_explicit(&v->running, memory_order_seq_cst) ||
        !rp__mailbox_has_stealable(&v->mb))
        return false;
    return rp__mark_queued_by(v->mark, atomic_load_explicit(&v->mark_n, memory_order_acquire),
                              oldest_of(v, false), &by) &&
           rp__mark_queued_after(r->mark, atomic_load_explicit(&r->mark_n, memory_order_relaxed),
                                 oldest_of(r, true), &after) &&
           (int32_t)(after - by) >= RP__OLDER_NS / 1000;
}

bool rp__steal_rescue(rp_routee *r, bool *searching, rp__job *out)
{
    uint64_t run, vrun;
    int64_t now, since;
    bool stale;
    rp_routee *v = r->watch;

    if (r->pool->n < 2) {
        r->watch_left = UINT_MAX; /* nobody to watch: no clock reads */
        return false;
    }
    now = rp__now_ns();
    since = now - r->watch_at;
    run = atomic_load_explicit(&r->run, memory_order_relaxed);
    r->fast = rp__steal_pace_fast(run - r->pace_run, now - r->watch_read);
    r->pace_run = run;
    r->watch_left = r->watch_every = watch_pace(r->watch_every, now - r->watch_read);
    r->watch_read = now;
    rp__steal_load_window(r, now, 0);
    mark(r, now);
    /* next_job() looks only once the stolen batch is done. */
    if (atomic_load_explicit(&r->held_stolen, memory_order_relaxed))
        atomic_store_explicit(&r->held_stolen, 0, memory_order_relaxed);
    if (since < RP__RESCUE_NS)
        return false;
    r->watch_at = now;
    /* Long after the last look: only watches (see the top). */
    stale = since > 4 * RP__RESCUE_NS;
    rp__owner_add(&r->looks, 1);
    if (stale)
        rp__owner_add(&r->stale_looks, 1);
    if (v) {
        vrun = atomic_load_explicit(&v->run, memory_order_relaxed);
        if (!stale && r->watch_had && vrun == r->watch_run &&
            rp__mailbox_has_stealable(&v->mb) &&
            steal_from(r, v, rp__mailbox_depth(&v->mb), RP__STEAL_MAX, true, searching, out)) {
            rp__owner_add(&r->rescues, 1);
            return true;
        }
        if (older_waits(r, v, vrun - r->watch_run, since) &&
            steal_from(r, v, 1, 1, true, searching, out)) {
            /* Still watched, from here: what it has left, should it make
             * no progress until the next look, is the rescue's then. */
            r->watch_run = vrun;
            r->watch_had = rp__mailbox_has_stealable(&v->mb);
            rp__owner_add(&r->olders, 1);
            return true;
        }
    }
    v = r->watch = next_watched(r);
    r->watch_run = atomic_load_explicit(&v->run, memory_order_relaxed);
    r->watch_had = rp__mailbox_has_stealable(&v->mb);
    return false;
}

bool rp__steal_take(rp_routee *r, rp__job *out)
{
    const rp__job *held = rp__steal_next_held(r);

    if (!held)
        return false;
    *out = *held;
    return true;
}

/* The thief's last look before it sleeps (after setting its idle bit). */
bool rp__steal_any(rp_routee *r)
{
    rp_pool *pool = r->pool;
    int cpu = sched_getcpu();

    for (unsigned k = 1; k < pool->n; k++)
        if (worth_stealing(&pool->routees[((unsigned)r->index + k) % pool->n], cpu, false))
            return true;
    return false;
}

void rp__steal_load_window(rp_routee *r, int64_t now, int64_t slept)
{
    int64_t span = now - r->load_t0;

    r->load_slept += slept;
    if (span < RP__LOAD_WINDOW_NS)
        return;
    r->low_load = rp__steal_low_load(r->load_slept, span);
    r->load_t0 = now;
    r->load_slept = 0;
}
