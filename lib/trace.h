/* SPDX-License-Identifier: MIT */
/*
 * trace.h - per-routee trace rings and the sampler, private side.
 */
#ifndef RP_TRACE_INTERNAL_H
#define RP_TRACE_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

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

/* Routee side: append an event, or count it lost when the ring is full. */
void rp__trace_push(rp__trace_ring *ring, const rp__trace_event *ev);

/* Write user text (a pool or thread name) escaped for a JSON string body
 * (RP__TEXT_JSON) or a Prometheus label value (RP__TEXT_PROM): valid UTF-8
 * passes, " \\ and newline are backslash-escaped, every byte that is not
 * valid UTF-8 is written as the text \\xNN (so the value reads "\xNN"),
 * other control characters as the escape \u00NN in JSON and as the text \\xNN in
 * Prometheus.  The output is always valid UTF-8. */
enum { RP__TEXT_JSON = 0, RP__TEXT_PROM = 1 };
void rp__text_write(FILE *f, const char *str, int style);

struct rp_pool;
/* Pool teardown: stop a running trace, free the rings. */
void rp__trace_pool_destroy(struct rp_pool *pool);
/* Pool creation: start tracing when RP_TRACE is set. */
void rp__trace_from_env(struct rp_pool *pool);

#endif /* RP_TRACE_INTERNAL_H */
