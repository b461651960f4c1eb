/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_tbb.h - oneTBB as a peer of the routepool benchmarks, behind
 * a small C API (bench/peer_tbb.cpp is the only C++ in the project).
 *
 * A peer_tbb owns one tbb::task_arena with `workers` worker threads and
 * `masters` slots reserved for external threads, one tbb::task_group for
 * the single-job API, and a tbb::global_control that lets oneTBB's global
 * pool have `workers` workers (by default it has one fewer than there are
 * CPUs: one on 2 vCPUs).  Several may coexist; their arenas share that pool
 * (workers go where there is work).  Two ways to use it:
 *
 *  - peer_tbb_batch(): the usual oneTBB idiom.  The calling thread joins
 *    the arena (a reserved slot), task_group::run()s n jobs - they go to
 *    its own deque, where the workers steal them - and task_group::wait()s,
 *    running leftover jobs itself meanwhile.  Used by rp-bench-tiny, each
 *    submitter with its own task_group.
 *  - peer_tbb_run() + peer_tbb_wait(): single jobs from any thread, for the
 *    open-loop rp-bench-sojourn.  Inside one of the arena's jobs (a worker
 *    submitting a follow-up) it is task_group::run() into the worker's own
 *    deque; from a thread outside the arena (a generator) it is
 *    task_arena::enqueue(task_group::defer(job)), oneTBB's way to hand a
 *    job to an arena without joining it.  peer_tbb_wait() waits on the
 *    task_group from outside the arena, so the waiter runs no job.
 *
 * Thread-safety: peer_tbb_batch() and peer_tbb_run() from any thread
 * (peer_tbb_batch() from at most `masters` threads at a time);
 * peer_tbb_wait() from one thread, with no peer_tbb_run() racing it from
 * outside the arena; destroy when idle.
 */
#ifndef RP_BENCH_PEER_TBB_H
#define RP_BENCH_PEER_TBB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct peer_tbb peer_tbb;

/**
 * Create the arena: `workers` worker threads plus `masters` reserved slots
 * (so max_concurrency = workers + masters).
 * @param cpus  NULL, or `workers` CPU numbers: a worker that takes worker
 *              slot i of the arena is pinned to cpus[i] (a
 *              task_scheduler_observer, on every entry: oneTBB workers come
 *              and go between arenas); a negative entry leaves it unpinned.
 * @return 0, or -1.
 */
int peer_tbb_create(peer_tbb **out, int workers, int masters, const int *cpus);

/**
 * Join the arena, run n jobs fn(base + i * stride) with task_group::run()
 * and wait for them (see above).
 * @param submit_ns  receives the time spent in the run() loop.
 * @param ran_here   receives how many of the n jobs ran on the calling
 *                   thread (while it waited, or another caller's jobs).
 */
void peer_tbb_batch(peer_tbb *t, void (*fn)(void *rec), char *base, size_t stride, size_t n,
                    int64_t *submit_ns, size_t *ran_here);

/** Submit one job fn(arg) to the arena (see above).  @return 0, or -1 when
 *  oneTBB threw (out of memory). */
int peer_tbb_run(peer_tbb *t, void (*fn)(void *arg), void *arg);

/** Wait until every job of peer_tbb_run() has run. */
void peer_tbb_wait(peer_tbb *t);

/** Index of the calling thread in the arena (0..workers+masters-1), or -1
 *  outside it. */
int peer_tbb_thread_index(void);

/** TBB_runtime_interface_version() and the header's TBB_VERSION_STRING. */
const char *peer_tbb_version(void);

/** Free.  Accepts NULL. */
void peer_tbb_destroy(peer_tbb *t);

#ifdef __cplusplus
}
#endif

#endif /* RP_BENCH_PEER_TBB_H */
