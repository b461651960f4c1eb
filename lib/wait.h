/* SPDX-License-Identifier: MIT */
/*
 * wait.h - sleeping and waking: a futex event count.  Private.
 *
 * The sleeper announces itself before its last look for work, so a waker
 * that publishes work and then checks for sleepers cannot miss it:
 *
 *     sleeper                          waker
 *     v = rp__event_prepare(ev)        publish work (queue push)
 *     if (work visible) don't sleep    rp__event_signal(ev)  (fence, check)
 *     else rp__event_wait(ev, v, dl)
 *     rp__event_done(ev)
 *
 * Either the waker sees the sleeper's flag (and wakes it, changing the
 * word so a wait that has not started yet returns at once), or the
 * sleeper's look finds the work.  Wakers that find no sleeper pay one
 * fence and one load: no read-modify-write on the hot path.
 *
 * One waker claims each wake-up (RP__EV_CLAIM) and the others leave it to
 * it.  A claimer descheduled between its claim and its FUTEX_WAKE would
 * hold the sleeper asleep for as long as it is off the CPU (a latency
 * hazard when threads outnumber CPUs), so the claimer marks the wake done
 * (RP__EV_WOKEN) after the system call, and a waker that finds a claim
 * older than RP__EV_HELP_NS and not yet done issues the FUTEX_WAKE itself.
 * The sleeper clears all three bits when it is awake again
 * (rp__event_done), so a busy routee's wakers see a clear word.
 */
#ifndef RP_WAIT_H
#define RP_WAIT_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "internal.h"

/* The word: a sleeper announced itself; a waker claimed the wake-up; the
 * claimer's FUTEX_WAKE was made; the rest counts announcements (and
 * broadcasts), so every announcement is a new value. */
#define RP__EV_SLEEPER 1u
#define RP__EV_CLAIM 2u
#define RP__EV_WOKEN 4u
#define RP__EV_ONE 8u
/* A claim older than this, not marked woken, is helped (ns). */
#define RP__EV_HELP_NS 100000

typedef struct rp__event {
    RP_ALIGNED _Atomic uint32_t word;
    _Atomic int64_t claimed_ns; /* when the current claim was made */
} rp__event; /* a cache line of its own (RP_ALIGNED rounds the size up) */
_Static_assert(sizeof(rp__event) == RP_CACHELINE, "an event is one cache line");

void rp__event_init(rp__event *ev);
/* Sleeper: announce the intent to sleep; returns the value to pass to
 * wait.  Always followed by rp__event_done(), slept or not. */
uint32_t rp__event_prepare(rp__event *ev);
/* Sleeper: sleep until signalled, the word changed, or the absolute
 * CLOCK_MONOTONIC deadline passed (NULL: no deadline).  May return
 * spuriously; callers re-check. */
void rp__event_wait(rp__event *ev, uint32_t v, const struct timespec *deadline);
/* Sleeper, awake again (or not sleeping after all): withdraw the
 * announcement and any claim on it. */
void rp__event_done(rp__event *ev);
/* Waker: after publishing work, wake the sleeper if one announced itself.
 * Contains the full fence that pairs with prepare. */
void rp__event_signal(rp__event *ev);
/* The same, for a waker whose last write publishing the work was a
 * locked read-modify-write - the tail CAS of a queue push.  On x86 a
 * locked instruction is a full barrier (no later load passes it), so the
 * fence is already there and this skips it: one serializing instruction
 * less per tell.  Elsewhere, and under ThreadSanitizer, it is
 * rp__event_signal(). */
void rp__event_signal_after_rmw(rp__event *ev);
/* Waker, for events with many sleepers (wait_idle): bump and wake all. */
void rp__event_broadcast(rp__event *ev);

#endif /* RP_WAIT_H */
