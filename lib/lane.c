/*
 * lane.c - a Michael-Scott queue (ck_fifo_mpmc) of job records.
 *
 * Memory reclamation.  A dequeue hands back the old stub node as garbage
 * while other threads may still read it (a slow dequeuer's head snapshot, a
 * slow enqueuer's tail snapshot).  Instead of epochs or hazard pointers we
 * use the reclamation of the original Michael-Scott paper: nodes are
 * type-stable.  Each lane owns its nodes (a freelist of its own, slabs
 * freed only when the pool is destroyed), so a stale pointer always points
 * at a node of the same lane:
 *   - a stale dequeuer reads a reused node's next/value, but its head CAS
 *     carries the head generation and fails;
 *   - a stale enqueuer whose tail node was recycled links its entry after
 *     that node, which is the tail of, or about to be appended to, the
 *     same lane: the entry still lands in this lane.
 * The second point is why nodes must never migrate between lanes: a node
 * reused in another lane would carry a stale enqueuer's job there.
 * ck's dequeue is written for this ("head snapshot may have been re-used").
 *
 * Nodes are separate from job records because the garbage node of a
 * dequeue is not the node of the job it returns.
 */
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "lane.h"

/* Nodes per slab: 63 nodes of 48 bytes plus the header stay within
 * jemalloc's 3 KiB size class (64 would take the 3.5 KiB one). */
#define NODES_PER_SLAB 63

int rp__lane_init(rp__lane *lane, const rp__arena *arena)
{
    rp__lane_node *stub;

    rp__freelist_init(&lane->nodes, arena, sizeof(rp__lane_node), 16,
                      offsetof(rp__lane_node, free), NODES_PER_SLAB);
    stub = rp__freelist_get(&lane->nodes);
    if (!stub)
        return RP_ENOMEM;
    ck_fifo_mpmc_init(&lane->fifo, &stub->fifo);
    return 0;
}

void rp__lane_destroy(rp__lane *lane)
{
    rp__freelist_destroy(&lane->nodes);
}

int rp__lane_push_mp(rp__lane *lane, void *rec)
{
    rp__lane_node *node = rp__freelist_get(&lane->nodes);

    if (!node)
        return RP_ENOMEM;
    /* The record's fields were written by this thread; the consumer that
     * pops it acquires them (pairs with rp__tsan_acquire in pop). */
    rp__tsan_release(rec);
    rp__tsan_ignore_begin();
    ck_fifo_mpmc_enqueue(&lane->fifo, &node->fifo, rec);
    rp__tsan_ignore_end();
    return 0;
}

void *rp__lane_pop_mc(rp__lane *lane)
{
    ck_fifo_mpmc_entry_t *garbage;
    void *rec;
    bool got;

    rp__tsan_ignore_begin();
    got = ck_fifo_mpmc_dequeue(&lane->fifo, &rec, &garbage);
    rp__tsan_ignore_end();
    if (!got)
        return NULL;
    rp__tsan_acquire(rec);
    rp__freelist_put(&lane->nodes,
                     (char *)garbage - offsetof(rp__lane_node, fifo));
    return rec;
}

uint64_t rp__lane_peek_seq(rp__lane *lane)
{
    /* Nodes and records are type-stable, so these racy reads touch valid
     * memory; the value is only a hint, like any peek at a shared queue. */
    ck_fifo_mpmc_entry_t *head = ck_pr_load_ptr(&lane->fifo.head.pointer);
    ck_fifo_mpmc_entry_t *first = ck_pr_load_ptr(&head->next.pointer);
    _Atomic uint64_t *seq;

    if (!first)
        return UINT64_MAX;
    seq = ck_pr_load_ptr(&first->value);
    if (!seq)
        return UINT64_MAX;
    /* The record was published by rp__lane_push_mp (release); a stale,
     * recycled record is only ever read through its atomic seq. */
    rp__tsan_acquire(seq);
    return atomic_load_explicit(seq, memory_order_relaxed);
}

int rp__lane_empty(rp__lane *lane)
{
    ck_fifo_mpmc_entry_t *head = ck_pr_load_ptr(&lane->fifo.head.pointer);

    return ck_pr_load_ptr(&head->next.pointer) == NULL;
}
