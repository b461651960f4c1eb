/*
 * lane.h - one FIFO of job records: many producers, many consumers,
 * unbounded, lock-free (ck_fifo_mpmc).  A mailbox has two: pinned and
 * stealable.  Private.
 */
#ifndef RP_LANE_H
#define RP_LANE_H

#include <ck_fifo.h>
#include <stdint.h>

#include "alloc.h"

typedef struct rp__lane_node {
    ck_fifo_mpmc_entry_t fifo; /* 16-aligned: ck uses cmpxchg16b on next */
    ck_stack_entry_t free;
} rp__lane_node;

typedef struct rp__lane {
    ck_fifo_mpmc_t fifo; /* head and tail on separate cache lines */
    rp__freelist nodes;  /* this lane's own nodes, never shared */
} rp__lane;

/* Record type the lane carries: anything whose first field is a uint64_t
 * sequence number readable with an atomic load (see rp__lane_peek_seq). */

int rp__lane_init(rp__lane *lane, const rp__arena *arena);
void rp__lane_destroy(rp__lane *lane);
/* Append rec.  0, or RP_ENOMEM when no node could be allocated. */
int rp__lane_push_mp(rp__lane *lane, void *rec);
/* Take the oldest record, or NULL when the lane is empty. */
void *rp__lane_pop_mc(rp__lane *lane);
/* Sequence number of the oldest record, UINT64_MAX when empty.  A hint:
 * a concurrent pop may take that record first. */
uint64_t rp__lane_peek_seq(rp__lane *lane);
/* True when the lane holds no record (a hint under concurrency). */
int rp__lane_empty(rp__lane *lane);

#endif /* RP_LANE_H */
