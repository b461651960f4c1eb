/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_mutex.h - the textbook baseline of rp-bench-tiny: worker
 * threads sharing one mutex-protected FIFO (a growable array ring), a
 * condition variable signalled only when a worker waits on it.
 *
 * Meant as a fair, competent lock-based pool, not a straw man: no malloc
 * per job (records go into the ring by value), one lock/unlock per submit
 * and per job taken, no wake-up when every worker is awake.
 *
 * Thread-safety: peer_mutex_submit() from any number of threads;
 * peer_mutex_wait() from one thread at a time; destroy when idle.
 */
#ifndef RP_BENCH_PEER_MUTEX_H
#define RP_BENCH_PEER_MUTEX_H

typedef struct peer_mutex peer_mutex;

/** Start `workers` threads (1..8) that call fn(arg) for each submitted arg.
 *  @return 0, or -1 (bad argument, out of memory, no thread). */
int peer_mutex_create(peer_mutex **out, int workers);

/** Queue one job.  @return 0, or -1 out of memory (the ring could not grow). */
int peer_mutex_submit(peer_mutex *m, void (*fn)(void *arg), void *arg);

/** Wait until every submitted job has run. */
void peer_mutex_wait(peer_mutex *m);

/** Stop the workers (after the queued jobs ran) and free.  Accepts NULL. */
void peer_mutex_destroy(peer_mutex *m);

#endif /* RP_BENCH_PEER_MUTEX_H */
