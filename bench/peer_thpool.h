/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_thpool.h - C-Thread-Pool (Debian cthreadpool-dev, whose
 * thpool.c is compiled into the benchmark) as a peer of rp-bench-tiny:
 * worker threads sharing one mutex-protected queue, a malloc per job.
 *
 * A thin wrapper, so the benchmark itself does not include <thpool.h>:
 * built only when bench/CMakeLists.txt finds the package
 * (RP_BENCH_HAVE_THPOOL).
 *
 * Thread-safety: peer_thpool_submit() from any number of threads;
 * peer_thpool_wait() from one thread at a time; destroy when idle.
 */
#ifndef RP_BENCH_PEER_THPOOL_H
#define RP_BENCH_PEER_THPOOL_H

typedef struct peer_thpool peer_thpool;

/** Start `workers` threads.  @return the pool, or NULL (no memory, no thread). */
peer_thpool *peer_thpool_create(int workers);

/** Queue fn(arg).  @return 0, or -1 (thpool_add_work failed: out of memory). */
int peer_thpool_submit(peer_thpool *p, void (*fn)(void *arg), void *arg);

/** Wait until every queued job has run. */
void peer_thpool_wait(peer_thpool *p);

/** Stop the workers and free the pool. */
void peer_thpool_destroy(peer_thpool *p);

#endif /* RP_BENCH_PEER_THPOOL_H */
