/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_uv.h - libuv's threadpool (uv_queue_work) as a peer of
 * rp-bench-tiny.
 *
 * One round queues n jobs on a private loop from the calling thread, then
 * runs the loop until every after-work callback ran (on this thread).  The
 * pool's size is UV_THREADPOOL_SIZE, read once by libuv when its threadpool
 * starts: set it before the first round.  uv_queue_work belongs to the
 * loop's thread, so one submitter only.  Built only when
 * bench/CMakeLists.txt finds libuv (RP_BENCH_HAVE_LIBUV).
 *
 * Thread-safety: one peer_uv from one thread.
 */
#ifndef RP_BENCH_PEER_UV_H
#define RP_BENCH_PEER_UV_H

#include <stddef.h>
#include <stdint.h>

typedef struct peer_uv peer_uv;

/** A loop.  @return it, or NULL (out of memory, uv_loop_init failed). */
peer_uv *peer_uv_create(void);

/** Untimed: memory for the requests of n jobs.  @return 0, or -1. */
int peer_uv_prepare(peer_uv *u, size_t n);

/**
 * Run n jobs fn(base + i * stride), i in 0..n-1 (peer_uv_prepare(u, n)
 * first), and return when all ran.  Exits the program with a message when
 * libuv refuses or cancels a job.
 * @param submit_ns  receives the time spent queueing them.
 */
void peer_uv_round(peer_uv *u, void (*fn)(void *rec), char *base, size_t stride, size_t n,
                   int64_t *submit_ns);

/** Close the loop and free. */
void peer_uv_destroy(peer_uv *u);

/** libuv's version string. */
const char *peer_uv_version(void);

#endif /* RP_BENCH_PEER_UV_H */
