/*
 * wait.h - sleeping and waking: a futex event count.  Private.
 *
 * The sleeper announces itself before its last look for work, so a waker
 * that publishes work and then checks for sleepers cannot miss it:
 *
 *     sleeper                          waker
 *     v = rp__event_prepare(ev)        publish work (queue push)
 *     if (work visible) don't sleep    rp__event_signal(ev)  (fence, check)
 *     rp__event_wait(ev, v, deadline)
 *
 * Either the waker sees the sleeper's flag (and wakes it, changing the
 * word so a wait that has not started yet returns at once), or the
 * sleeper's look finds the work.  Wakers that find no sleeper pay one
 * fence and one load: no read-modify-write on the hot path.
 */
#ifndef RP_WAIT_H
#define RP_WAIT_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "internal.h"

/* Bit 0: a sleeper is (about to be) waiting.  Bits 1..31: wake count. */
typedef struct rp__event {
    RP_ALIGNED _Atomic uint32_t word;
    char pad[RP_CACHELINE - sizeof(uint32_t)];
} rp__event;

void rp__event_init(rp__event *ev);
/* Sleeper: set the waiting flag; returns the value to pass to wait. */
uint32_t rp__event_prepare(rp__event *ev);
/* Sleeper: sleep until signalled, the word changed, or the absolute
 * CLOCK_MONOTONIC deadline passed (NULL: no deadline).  May return
 * spuriously; callers re-check. */
void rp__event_wait(rp__event *ev, uint32_t v, const struct timespec *deadline);
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

/* Absolute CLOCK_MONOTONIC deadline timeout_ms from now. */
void rp__deadline(struct timespec *out, int timeout_ms);
/* True when the deadline has passed. */
int rp__deadline_passed(const struct timespec *deadline);

#endif /* RP_WAIT_H */
