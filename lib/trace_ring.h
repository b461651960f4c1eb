/* SPDX-License-Identifier: MIT */
/*
 * trace_ring.h - one routee's trace ring: the routee appends job slices
 * and steals, trace.c's sampler drains them.  Private.
 *
 * Single producer (the routee: head), single consumer (the sampler:
 * tail), acquire/release; a full ring drops the event and counts it, so
 * tracing never blocks or allocates on a job path.  Header only: it calls
 * nothing of the library.
 */
#ifndef RP_TRACE_RING_H
#define RP_TRACE_RING_H

#include <stdatomic.h>
#include <stdint.h>

#define RP__TRACE_RING 1024u

enum { RP__EV_SLICE = 1, RP__EV_STEAL = 2 };

typedef struct rp__trace_event {
    int64_t t0, t1;   /* slice: start, end; steal: time, 0 */
    int64_t enq_ns;   /* slice: submit time (flow start) */
    int32_t kind;
    int32_t other;    /* slice: submitting thread id; steal: victim index */
    uint32_t count;   /* steal: jobs taken */
} rp__trace_event;

/* One routee's ring: the routee writes (head), the sampler reads (tail). */
typedef struct rp__trace_ring {
    _Atomic uint32_t head;
    char pad1[60];
    _Atomic uint32_t tail;
    char pad2[60];
    _Atomic uint64_t lost; /* owner-only writes */
    rp__trace_event ev[RP__TRACE_RING];
} rp__trace_ring;

/* Routee side: append an event, or count it lost when the ring is full.
 * Only the ring's routee calls it. */
static inline void rp__trace_push(rp__trace_ring *ring, const rp__trace_event *ev)
{
    uint32_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&ring->tail, memory_order_acquire);

    if (head - tail >= RP__TRACE_RING) {
        atomic_store_explicit(&ring->lost,
                              atomic_load_explicit(&ring->lost, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        return;
    }
    ring->ev[head % RP__TRACE_RING] = *ev;
    /* Publish the event (pairs with the acquire in drain(), trace.c). */
    atomic_store_explicit(&ring->head, head + 1, memory_order_release);
}

#endif /* RP_TRACE_RING_H */
