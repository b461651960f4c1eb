/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_floor.h - the floor of rp-bench-tiny: a raw lock-free handoff
 * with nothing around it, to read the schedulers' per-job cost against.
 *
 * Producers hand job records to consumer threads that spin on the queue
 * and call fn(record) for each.  No sleeping, no routing, no futures, no
 * metrics: what is left is the queue operation and the cache-line transfer
 * of the record and the queue's head/tail between two CPUs.
 *
 *   PEER_FLOOR_FIFO  one ck_fifo_mpmc (Michael-Scott, unbounded) shared by
 *                    every producer and consumer, nodes preallocated per
 *                    round (never freed while the queue is live: no safe
 *                    memory reclamation is needed, building-blocks.md);
 *   PEER_FLOOR_RING  one ck_ring SPSC per producer/consumer pair (4096
 *                    slots; a producer spins while its ring is full).
 *
 * A round: peer_floor_begin() (untimed: resets the queues, wakes the
 * consumers), each producer peer_floor_push()es its records then calls
 * peer_floor_end(), peer_floor_wait() returns when every record was
 * consumed.  Consumers sleep on a semaphore between rounds, so an idle
 * floor takes no CPU from the other systems of the benchmark.
 *
 * Thread-safety: push/end for producer p only from one thread at a time;
 * begin/wait/destroy from the thread that owns the floor, not during a
 * round's pushes.
 */
#ifndef RP_BENCH_PEER_FLOOR_H
#define RP_BENCH_PEER_FLOOR_H

#include <stddef.h>

typedef struct peer_floor peer_floor;

typedef enum peer_floor_kind { PEER_FLOOR_FIFO, PEER_FLOOR_RING } peer_floor_kind;

/**
 * Start the consumers.
 * @param out        receives the floor (caller-owned; peer_floor_destroy()).
 * @param kind       the queue.
 * @param producers  1..4.
 * @param consumers  1..4; PEER_FLOOR_RING needs consumers == producers.
 * @param fn         called by a consumer with each record.
 * @return 0, or -1 (bad arguments, out of memory, no thread).
 */
int peer_floor_create(peer_floor **out, peer_floor_kind kind, int producers, int consumers,
                      void (*fn)(void *rec));

/** Prepare a round of at most per_producer records per producer and wake
 *  the consumers.  @return 0, or -1 out of memory. */
int peer_floor_begin(peer_floor *f, size_t per_producer);

/** Producer p hands one record over (rec not NULL). */
void peer_floor_push(peer_floor *f, int p, void *rec);

/** Producer p is done for this round. */
void peer_floor_end(peer_floor *f, int p);

/** Wait until every record of the round was consumed. */
void peer_floor_wait(peer_floor *f);

/** Stop the consumers and free everything.  Accepts NULL. */
void peer_floor_destroy(peer_floor *f);

#endif /* RP_BENCH_PEER_FLOOR_H */
