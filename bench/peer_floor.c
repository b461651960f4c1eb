/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_floor.c - raw ck_fifo_mpmc and ck_ring SPSC handoffs, the
 * floor rp-bench-tiny reads every scheduler against (see peer_floor.h).
 *
 * Invariants: a queue is reset only in peer_floor_begin(), while every
 * consumer sleeps on its start semaphore, so no thread holds a pointer
 * into the previous round's nodes; a consumer stops consuming for the
 * round when it takes the sentinel (the floor's own address), which comes
 * after every record in queue order: on the shared FIFO the last producer
 * to end enqueues one sentinel per consumer after all producers enqueued
 * their records, on a ring its producer enqueues it last.
 */
#include "peer_floor.h"

#include <ck_fifo.h>
#include <ck_ring.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common.h"

#define MAXT 4
#define RING_SIZE 4096u   /* power of two; holds RING_SIZE - 1 records */
#define SPINS_BEFORE_YIELD 1024 /* only matters when threads outnumber CPUs */

typedef struct consumer_arg {
    struct peer_floor *f;
    int id;
} consumer_arg;

/* One producer's state: its FIFO nodes, or its ring. */
typedef struct prod {
    _Alignas(64) ck_fifo_mpmc_entry_t *nodes;
    size_t cap, used;
    _Alignas(64) struct ck_ring ring;
    struct ck_ring_buffer *buf;
} prod;

struct peer_floor {
    _Alignas(64) ck_fifo_mpmc_t fifo;
    _Alignas(64) ck_fifo_mpmc_entry_t stub;
    _Alignas(64) _Atomic int ended; /* producers done this round */
    peer_floor_kind kind;
    int producers, consumers;
    void (*fn)(void *rec);
    bool stop;                      /* read after a start post: no atomics needed */
    prod prods[MAXT];
    sem_t start[MAXT], done;
    pthread_t th[MAXT];
    consumer_arg args[MAXT];
};

static bool take(peer_floor *f, int id, void **out)
{
    ck_fifo_mpmc_entry_t *garbage;

    if (f->kind == PEER_FLOOR_RING)
        return ck_ring_dequeue_spsc(&f->prods[id].ring, f->prods[id].buf, out);
    return ck_fifo_mpmc_dequeue(&f->fifo, out, &garbage);
}

/* Consume until the sentinel; spin on an empty queue, yielding now and then
 * so a producer that shares our CPU can run. */
static void consume_round(peer_floor *f, int id)
{
    int misses = 0;

    for (;;) {
        void *rec;
        if (!take(f, id, &rec)) {
            if (++misses < SPINS_BEFORE_YIELD) {
                bench_relax();
            } else {
                misses = 0;
                sched_yield();
            }
            continue;
        }
        misses = 0;
        if (rec == (void *)f)
            return;
        f->fn(rec);
    }
}

static void *consumer(void *p)
{
    const consumer_arg *a = p;
    peer_floor *f = a->f;

    for (;;) {
        while (sem_wait(&f->start[a->id]) != 0) /* EINTR */
            ;
        if (f->stop)
            return NULL;
        consume_round(f, a->id);
        sem_post(&f->done);
    }
}

int peer_floor_create(peer_floor **out, peer_floor_kind kind, int producers, int consumers,
                      void (*fn)(void *rec))
{
    peer_floor *f;

    if (producers < 1 || producers > MAXT || consumers < 1 || consumers > MAXT ||
        (kind == PEER_FLOOR_RING && producers != consumers))
        return -1;
    if (!(f = aligned_alloc(64, sizeof *f)))
        return -1;
    *f = (peer_floor){.kind = kind, .producers = producers, .consumers = consumers, .fn = fn};
    sem_init(&f->done, 0, 0);
    for (int c = 0; c < consumers; c++) {
        f->args[c] = (consumer_arg){.f = f, .id = c};
        sem_init(&f->start[c], 0, 0);
        if (pthread_create(&f->th[c], NULL, consumer, &f->args[c]) != 0)
            return -1;
    }
    *out = f;
    return 0;
}

static int reserve(prod *p, peer_floor_kind kind, size_t n)
{
    if (kind == PEER_FLOOR_RING) {
        if (!p->buf && !(p->buf = aligned_alloc(64, RING_SIZE * sizeof *p->buf)))
            return -1;
        ck_ring_init(&p->ring, RING_SIZE);
        return 0;
    }
    if (p->cap < n) {
        /* aligned_alloc() wants a multiple of the alignment (nodes are 32 bytes). */
        size_t bytes = (n * sizeof *p->nodes + 63) & ~(size_t)63;
        free(p->nodes);
        if (!(p->nodes = aligned_alloc(64, bytes)))
            return -1;
        p->cap = n;
    }
    p->used = 0;
    return 0;
}

int peer_floor_begin(peer_floor *f, size_t per_producer)
{
    for (int p = 0; p < f->producers; p++)
        if (reserve(&f->prods[p], f->kind, per_producer + (size_t)f->consumers) != 0)
            return -1;
    ck_fifo_mpmc_init(&f->fifo, &f->stub);
    atomic_store_explicit(&f->ended, 0, memory_order_relaxed);
    /* The posts publish the reset queues to the consumers (sem_post/sem_wait
     * order memory like a mutex). */
    for (int c = 0; c < f->consumers; c++)
        sem_post(&f->start[c]);
    return 0;
}

static void put(peer_floor *f, int p, void *rec)
{
    prod *pr = &f->prods[p];

    if (f->kind == PEER_FLOOR_RING) {
        int misses = 0;
        /* Full: the consumer is behind (or descheduled: yield to it). */
        while (!ck_ring_enqueue_spsc(&pr->ring, pr->buf, rec)) {
            if (++misses < SPINS_BEFORE_YIELD) {
                bench_relax();
            } else {
                misses = 0;
                sched_yield();
            }
        }
        return;
    }
    ck_fifo_mpmc_enqueue(&f->fifo, &pr->nodes[pr->used++], rec);
}

void peer_floor_push(peer_floor *f, int p, void *rec)
{
    put(f, p, rec);
}

void peer_floor_end(peer_floor *f, int p)
{
    if (f->kind == PEER_FLOOR_RING) {
        put(f, p, f);
        return;
    }
    /* acq_rel: the last producer's sentinels follow every producer's records. */
    if (atomic_fetch_add_explicit(&f->ended, 1, memory_order_acq_rel) + 1 == f->producers)
        for (int c = 0; c < f->consumers; c++)
            put(f, p, f);
}

void peer_floor_wait(peer_floor *f)
{
    for (int c = 0; c < f->consumers; c++)
        while (sem_wait(&f->done) != 0)
            ;
}

void peer_floor_destroy(peer_floor *f)
{
    if (!f)
        return;
    f->stop = true;
    for (int c = 0; c < f->consumers; c++)
        sem_post(&f->start[c]);
    for (int c = 0; c < f->consumers; c++) {
        pthread_join(f->th[c], NULL);
        sem_destroy(&f->start[c]);
    }
    sem_destroy(&f->done);
    for (int p = 0; p < f->producers; p++) {
        free(f->prods[p].nodes);
        free(f->prods[p].buf);
    }
    free(f);
}
