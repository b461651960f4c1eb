/* SPDX-License-Identifier: MIT */
/*
 * pool_record.h - the pool record, shared by the files that make up a
 * pool (pool.c creates and destroys it).  Private.
 *
 * Data only, and pointers to the parts that have a file of their own
 * (routees, scatter registry, futures, trace rings): it includes nothing
 * above the clock, timer, wait and alloc floors, so any file may read it
 * without depending on pool.c.
 */
#ifndef RP_POOL_RECORD_H
#define RP_POOL_RECORD_H

#include <pthread.h>
#include <stdatomic.h>

#include "alloc.h"
#include "internal.h"
#include "timer.h"
#include "wait.h"

struct rp__future_heap;
struct rp__sg_registry;
struct rp__trace_ring;
struct rp__tracer;

struct rp_pool {
    char name[RP_POOL_NAME_MAX + 1];
    unsigned n;
    rp_routee *routees; /* n records, each on its own cache lines */
    rp__arena arena;
    bool pin_cpus;
    /* Routee i runs on cpus[i % ncpus] (a copy of opts.cpus, freed at
     * destroy); NULL and 0 without a CPU set. */
    int *cpus;
    size_t ncpus;
    size_t stack_size; /* 0: pthread's default; else rounded to pages */
    /* Run once on each routee thread around its loop (rp__worker_main). */
    rp_thread_fn on_thread_start, on_thread_stop;
    void *thread_user;
    rp_undelivered_fn on_undelivered;
    void *undelivered_user;
    rp_log_fn log;
    void *log_user;
    bool steal;
    /* The age look (steal.c): stealing is on and the default router does
     * not balance depths itself (not smallest-mailbox). */
    bool older;
    rp_router *router; /* the default router */
    _Atomic int abort;  /* shutdown mode is RP_SHUTDOWN_ABORT */
    /* rp_pool_shutdown() was called: set before the mailboxes close, never
     * cleared.  Read by the submit paths only once a delivery failed (or
     * once per batch or scatter), never per job. */
    _Atomic bool shut;
    /* Shutdown's states, under life: closing once the mailboxes are
     * closed, joining while one caller joins the routees, joined after.
     * life is never held while user code runs (callbacks, jobs) nor while
     * joining; later callers wait on life_cv for the joiner. */
    pthread_mutex_t life;
    pthread_cond_t life_cv;
    bool closing, joining, joined;
    /* rp_pool_wait_idle(): waiters announce themselves, idle routees
     * broadcast. */
    RP_ALIGNED _Atomic uint32_t idle_waiters;
    rp__event idle_ev;
    /* Stealing: routees woken to steal that are still looking, and one
     * bit per sleeping routee.  See steal.c. */
    rp__timer timer; /* ask deadlines, scatter timers */
    struct rp__future_heap *futures; /* asks' futures (NULL: not recycled) */
    /* Scatter-gather routers over this pool, failed "stopped" at shutdown. */
    struct rp__sg_registry *sgs; /* scatter.c */
    /* Tracing: rings are allocated at the first rp_trace_start() and kept
     * until the pool is destroyed, so a routee never writes freed memory.
     * trace_sample is 0 when not tracing, else one job in trace_sample is
     * recorded (read by producers and routees, relaxed). */
    RP_ALIGNED _Atomic unsigned trace_sample;
    _Atomic bool trace_steals;
    struct rp__trace_ring **rings;
    struct rp__tracer *tracer;
    pthread_mutex_t trace_lock;
    /* Idle spinning (spin_for_work in worker.c): the window in ns, and how
     * many routees spin now, at most max_spinners. */
    int64_t spin_ns;
    unsigned max_spinners;
    /* No spin window but RP_IDLE_SPIN_US_AUTO: yield once before sleeping
     * (yield_for_work in worker.c). */
    bool idle_yield;
    size_t trim_keep; /* opts.record_reserve */
    int64_t trim_ns;  /* opts.trim_idle_ms; 0: never trim */
    RP_ALIGNED _Atomic unsigned spinners;
    /* The thief search (wake_thief in steal.c): 0 when none, else
     * (start_ns << 1) | RP__SEARCH_WOKEN once its waker signalled. */
    RP_ALIGNED _Atomic int64_t searching;
    RP_ALIGNED _Atomic uint64_t idle_bits[RP_ROUTEES_MAX / 64];
};

/* Whether rp_pool_shutdown() was called on pool (NULL: false).  For the
 * failure paths of submits, which then return RP_ESHUTDOWN. */
static inline bool rp__pool_shut(const rp_pool *pool)
{
    return pool && atomic_load_explicit(&pool->shut, memory_order_acquire);
}

#endif /* RP_POOL_RECORD_H */
