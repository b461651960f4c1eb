/* SPDX-License-Identifier: MIT */
/*
 * routepool/pool.h - a pool of routees: one OS thread per routee, each with a
 * lock-free mailbox.
 *
 * Ownership of a job's arg: arg belongs to the caller.  When a submit
 * returns 0 the pool has accepted the job and will do exactly one of two
 * things with it: run fn(ctx, arg), or hand arg back through the pool's
 * on_undelivered callback with a reason (dropped, evicted, stopped, shut
 * down, no routee).  When a submit returns a negative code the job was not
 * accepted, on_undelivered is not called, and arg is still the caller's.
 * Nothing disappears silently.
 *
 * Every function here is thread-safe unless its comment says otherwise.
 * A pool must not be destroyed while other threads still call into it, and
 * routers must be destroyed before the pools they route to.
 */
#ifndef ROUTEPOOL_POOL_H
#define ROUTEPOOL_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "routepool/error.h"
#include "routepool/strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rp_pool rp_pool;
typedef struct rp_router rp_router;

/** What a job sees while it runs.  Borrowed; valid only during the call. */
typedef struct rp_job_ctx rp_job_ctx;

/** A job: runs on one routee thread with the arg given at submit. */
typedef void (*rp_job_fn)(rp_job_ctx *ctx, void *arg);

/**
 * Hands back a job that will not run.  Called exactly once per such job,
 * from whichever thread decided its fate (a submitter for drop-new and
 * evictions, a routee thread for stops and shutdown).
 *
 * @param arg     the job's arg; ownership returns to the caller.
 * @param reason  RP_EDROPPED, RP_EEVICTED, RP_ESTOPPED, RP_ESHUTDOWN,
 *                RP_ENOROUTEE, RP_EINVAL (a custom strategy's bad choice),
 *                RP_ESEND (a foreign routee refused it), or - for one copy
 *                of a fan-out that a mailbox refused - RP_EFULL or
 *                RP_ENOMEM.
 * @param user    the pointer set next to the callback.
 * Must be thread-safe.  It may submit new jobs, but must not destroy the pool.
 */
typedef void (*rp_undelivered_fn)(void *arg, int reason, void *user);

/** Log levels. */
typedef enum rp_log_level {
    RP_LOG_DEBUG = 0,
    RP_LOG_INFO,
    RP_LOG_WARN,
    RP_LOG_ERROR
} rp_log_level;

/**
 * Receives routepool's log lines (e.g. a warning when a group router has no
 * routees).  msg is borrowed for the call.  Must be thread-safe.
 * When no callback is set, warnings and errors go to stderr.
 */
typedef void (*rp_log_fn)(int level, const char *msg, void *user);

/** What a bounded mailbox does with a job that does not fit. */
typedef enum rp_overflow {
    /** Submit returns RP_EFULL; nothing is enqueued.  Default. */
    RP_OVERFLOW_REJECT = 0,
    /** The new job is handed back with RP_EDROPPED; submit returns 0. */
    RP_OVERFLOW_DROP_NEW,
    /** The oldest queued job is handed back with RP_EEVICTED and the new
     *  one enqueued; submit returns 0. */
    RP_OVERFLOW_DROP_HEAD
} rp_overflow;

/** How rp_pool_shutdown() treats queued jobs. */
typedef enum rp_shutdown_mode {
    /** Run everything queued, then stop. */
    RP_SHUTDOWN_DRAIN = 0,
    /** Finish the running jobs; hand queued ones back with RP_ESHUTDOWN. */
    RP_SHUTDOWN_ABORT
} rp_shutdown_mode;

/** Largest bounded mailbox capacity. */
#define RP_MAILBOX_CAPACITY_MAX ((size_t)1 << 30)

/** Longest pool name, in bytes. */
#define RP_POOL_NAME_MAX 63u

/** Default of rp_pool_options.idle_spin_us: spin RP_IDLE_SPIN_US_SPARE
 *  microseconds when the machine has more online CPUs than the pool has
 *  routees, else not at all. */
#define RP_IDLE_SPIN_US_AUTO ((unsigned)-1)
/** The spin window RP_IDLE_SPIN_US_AUTO chooses when CPUs are to spare. */
#define RP_IDLE_SPIN_US_SPARE 50
/** Kept for callers of the first version: the automatic default. */
#define RP_IDLE_SPIN_US_DEFAULT RP_IDLE_SPIN_US_AUTO
/** Largest rp_pool_options.idle_spin_us accepted. */
#define RP_IDLE_SPIN_US_MAX 10000

/**
 * A routee thread's start or stop hook (rp_pool_options.on_thread_start,
 * on_thread_stop), called on the routee's own thread with no library lock
 * held.
 *
 * The start hook runs once the thread is named ("rp-<name>-<i>") and
 * pinned (cpus, pin_cpus), before the routee takes its first job: it may
 * rename the thread (pthread_setname_np), set its priority or scheduling
 * policy, and initialise thread-locals the jobs use.  Threads start
 * without waiting for each other and rp_pool_create() does not wait for
 * the hooks: a hook may run before or after rp_pool_create() returns, and
 * the first jobs may already be queued.  Jobs queued on a routee whose
 * start hook has not returned wait for it (other routees may steal them
 * when more than one waits and the pool steals).
 *
 * The stop hook runs after the routee's last job and after its queued jobs
 * were run or handed back - on rp_pool_shutdown() (either mode),
 * rp_pool_destroy() without a shutdown, and rp_routee_stop() - and before
 * its thread exits, so rp_pool_shutdown() and rp_pool_destroy() return
 * after every stop hook returned.
 *
 * Both hooks run exactly once per routee thread that started, also when
 * rp_pool_create() fails after starting some threads (RP_ESYS): those run
 * both hooks before it returns.
 *
 * What a hook may call: what a job may call.  The pool is usable from the
 * start hook: rp_pool_submit(), rp_router_tell(), rp_routee_tell() to any
 * routee, its own included (the job is queued and runs after the hook
 * returns - a routee takes no job before its loop starts, so a hook must
 * not wait for a job or an ask queued on its own routee), rp_pool_size(),
 * rp_pool_routee(), the stats.  From either hook, as from a job,
 * rp_pool_wait_idle() and rp_pool_shutdown() of the same pool return
 * RP_EBUSY and rp_pool_destroy() of the same pool is refused (logged): a
 * hook must not wait for its own thread.  A stop hook run by a shutdown
 * may still submit to a routee whose mailbox the shutdown has not closed
 * yet: the job is accepted like any submitted during a shutdown (drain:
 * it runs; abort: it is handed back with RP_ESHUTDOWN); once every mailbox
 * is closed, submits return RP_ESHUTDOWN.
 *
 * @param pool    the pool (borrowed; valid until the stop hook returns).
 * @param routee  the routee's index, 0..rp_pool_size(pool) - 1.
 * @param user    rp_pool_options.thread_user.
 * Different routees run their hooks concurrently: must be thread-safe.
 */
typedef void (*rp_thread_fn)(rp_pool *pool, int routee, void *user);

/** Pool options.  Initialise with rp_pool_options_init(), then set fields. */
typedef struct rp_pool_options {
    /** Pool name, used in thread names "rp-<name>-<i>" (the kernel keeps
     *  15 bytes of a thread name) and in log lines.  Copied.  Default
     *  "pool"; 1..RP_POOL_NAME_MAX bytes. */
    const char *name;
    /** Number of routees (threads): 1..RP_ROUTEES_MAX, or 0 for the number
     *  of online CPUs.  Default 0. */
    unsigned routees;
    /** 0: unbounded mailboxes (default).  Otherwise each routee queues at
     *  most this many jobs, 1..RP_MAILBOX_CAPACITY_MAX. */
    size_t mailbox_capacity;
    /** Overflow policy of bounded mailboxes (an rp_overflow).  Default
     *  RP_OVERFLOW_REJECT.  Ignored when unbounded. */
    int overflow;
    /** Pin routee i to the (i % n)-th of the n CPUs the process may run on
     *  (sched_getaffinity).  Default false.  Ignored when cpus is given. */
    bool pin_cpus;
    /** A CPU set for pinning: routee i runs on CPU cpus[i % ncpus] only
     *  (whatever pin_cpus says), from its first instruction - before
     *  on_thread_start.  Each entry must be a CPU the calling thread may
     *  run on (sched_getaffinity; the routee threads inherit it);
     *  repeats are allowed ({1, 1}: two routees on CPU 1).  ncpus is
     *  0..RP_ROUTEES_MAX; entries beyond the routee count are checked
     *  but unused.  The array is copied: it may be freed once
     *  rp_pool_create() returns.  Default NULL and 0: no CPU set (then
     *  pin_cpus decides).  cpus NULL with ncpus > 0, or cpus set with
     *  ncpus 0, is refused. */
    const int *cpus;
    size_t ncpus;
    /** Work stealing: a routee whose own queue is empty takes the oldest
     *  stealable jobs of the deepest routee before it sleeps, and a
     *  sleeping routee is woken when stealable work waits behind a busy
     *  one; a routee busy with work of its own also takes the stealable
     *  jobs of a routee that finished nothing for 10 us while they waited
     *  (a long job, its thread preempted; docs/stealing.md, "A stuck
     *  routee's queue").  Pinned jobs (keyed, broadcast copies,
     *  rp_routee_tell, pinned by a custom strategy) are never stolen.
     *  Default true. */
    bool steal;
    /** How long, in microseconds, a routee that ran out of work keeps
     *  looking for more (its own mailbox, and stealable work when steal is
     *  on) before it sleeps on its futex.  Waking a sleeping thread costs
     *  the producer a system call and the job tens of microseconds; a short
     *  spin lets a routee pick up the next job of a steady stream for
     *  neither.  The window adapts per routee: it halves after 4 spins in
     *  a row that found nothing (down to 1/16) and doubles after one that
     *  found work, and at most half the routees (at least one) spin at a time,
     *  so an idle pool sleeps and a loaded machine keeps its CPUs.
     *  Spinning pays only when a spinner has a CPU to itself: a spinning
     *  routee takes the CPU from the threads that submit (measured on 2
     *  vCPUs with 2 routees: p50 sojourn 2.6-3.4x worse at 50% load,
     *  docs/performance.md).  0 disables spinning.  Default
     *  RP_IDLE_SPIN_US_AUTO: RP_IDLE_SPIN_US_SPARE when online CPUs
     *  outnumber the routees; else no spinning, but a routee yields its
     *  CPU once (sched_yield) before it sleeps, so a submitter sharing
     *  the CPU can queue the next job first (empty jobs from 1 submitter
     *  to 2 routees on 2 vCPUs: 130 -> 74 ns/job).  When that yield
     *  came back at once (no other thread wanted the CPU) and found a
     *  job, a producer is streaming jobs faster than the routee runs
     *  them: at its next idle transition the routee waits 2 us before it
     *  looks again, so the producer queues jobs without waiting for the
     *  cache lines the routee reads (docs/design.md, "Letting work
     *  gather"); a job that comes then waits up to 2 us longer.  An
     *  explicit value, 0 included, never yields.  At most
     *  RP_IDLE_SPIN_US_MAX. */
    unsigned idle_spin_us;
    /** Keep metrics beyond the counters always kept: busy time and the
     *  sampled depth and queue-wait histograms (routepool/metrics.h).
     *  Default true; costs a clock read per busy period and per sampled
     *  job. */
    bool metrics;
    /** Strategy of the pool's default router, used by rp_pool_submit().
     *  Default rp_strategy_round_robin(). */
    rp_strategy strategy;
    /** Receives jobs that will not run.  Default NULL: such jobs are
     *  counted and their arg is not touched (the caller may leak it). */
    rp_undelivered_fn on_undelivered;
    void *undelivered_user;
    /** Log callback and its user pointer.  Default NULL: stderr. */
    rp_log_fn log;
    void *log_user;
    /** Runs on each routee thread before it takes any job (see
     *  rp_thread_fn), once per thread.  Default NULL. */
    rp_thread_fn on_thread_start;
    /** Runs on each routee thread after its last job, before the thread
     *  exits (see rp_thread_fn), once per thread that ran
     *  on_thread_start.  Default NULL. */
    rp_thread_fn on_thread_stop;
    /** Passed to both hooks; caller-owned, must stay valid until
     *  rp_pool_destroy() returns.  Default NULL. */
    void *thread_user;
    /** Stack size of each routee thread, in bytes.  0 (default): the
     *  system default (pthread's, from RLIMIT_STACK: often 8 MiB).
     *  Otherwise at least PTHREAD_STACK_MIN (sysconf(_SC_THREAD_STACK_MIN),
     *  16 KiB on x86-64 glibc) and rounded up to a multiple of the page
     *  size; larger values are passed to pthread as they are, and a size
     *  the system cannot give fails rp_pool_create() with RP_ESYS.  The
     *  pool's timer thread keeps the default. */
    size_t stack_size;

    /* Memory given back by an idle pool (docs/design.md, "Job records"). */
    /** Job records each lane keeps when it trims (a routee has two lanes;
     *  a record is 128 bytes, carved 63 to an 8 KiB slab): the working set
     *  that allocates nothing once reached.  A lane that grew beyond it
     *  (a burst) gives the slabs of its free records back to the
     *  allocator once its routee has slept trim_idle_ms, down to this
     *  reserve (rounded up to whole slabs; records that producers' own
     *  magazines hold stay too).  Default RP_RECORD_RESERVE_DEFAULT (256:
     *  32 KiB per lane).  At most RP_RECORD_RESERVE_MAX. */
    size_t record_reserve;
    /** Milliseconds a routee sleeps idle before its lanes trim (above).
     *  Default RP_TRIM_IDLE_MS_DEFAULT (200); 0 never trims (the pool
     *  keeps its high-water mark until rp_pool_destroy()).  At most
     *  RP_TRIM_IDLE_MS_MAX.  A trim costs the routee one extra wake-up
     *  per idle period after a growth, and none on a job's path. */
    unsigned trim_idle_ms;
} rp_pool_options;

#define RP_RECORD_RESERVE_DEFAULT 256u
#define RP_RECORD_RESERVE_MAX ((size_t)1 << 24)
#define RP_TRIM_IDLE_MS_DEFAULT 200u
#define RP_TRIM_IDLE_MS_MAX 60000u

/**
 * Fill opts with the documented defaults.
 * @param opts  options to initialise (caller-owned, not NULL).
 */
void rp_pool_options_init(rp_pool_options *opts);

/**
 * Create a pool and start its routee threads.
 *
 * @param out   receives the pool; the caller owns it and releases it with
 *              rp_pool_destroy().  Set to NULL on failure.
 * @param opts  options (borrowed for the call; NULL means defaults).
 * @return 0, or
 *   RP_EINVAL   out is NULL or a field is invalid (rp_errmsg() names it):
 *               routees > RP_ROUTEES_MAX, capacity too large, unknown
 *               overflow policy, bad name, bad strategy (weights that do not
 *               match the routee count, NULL custom function), stack_size
 *               below PTHREAD_STACK_MIN, cpus/ncpus inconsistent or naming a
 *               CPU the process may not use (rp_errmsg() names the entry
 *               and the CPU);
 *   RP_ENOMEM   allocation failed;
 *   RP_ESYS     a thread could not be started (e.g. a stack_size the
 *               system cannot give), or sched_getaffinity failed while
 *               checking cpus.
 * Thread-safe.
 */
int rp_pool_create(rp_pool **out, const rp_pool_options *opts);

/**
 * Submit a job through the pool's default router.
 *
 * @param pool  the pool.
 * @param fn    the job function (not NULL).
 * @param arg   the job's argument; see the ownership note at the top.
 * @return 0 when accepted (it will run, or be handed back exactly once), or
 *   RP_EINVAL     pool or fn is NULL, or the default strategy is consistent
 *                 hashing (use rp_router_tell_key());
 *   RP_EFULL      bounded mailbox full under RP_OVERFLOW_REJECT;
 *   RP_ESHUTDOWN  rp_pool_shutdown() was called (also when some routee was
 *                 stopped before it): not accepted, nothing handed back;
 *   RP_ENOMEM     no memory for the job record.
 * Thread-safe; may be called from inside a job.
 */
int rp_pool_submit(rp_pool *pool, rp_job_fn fn, void *arg);

/**
 * Submit n jobs through the pool's default router:
 * rp_router_tell_batch(rp_pool_router(pool), fn, args, n).  Cheaper per job
 * than n rp_pool_submit() calls; a job that cannot be queued is handed to
 * on_undelivered rather than left with the caller.
 * @return as rp_router_tell_batch(); RP_EINVAL for a NULL pool.
 * Thread-safe.
 */
int rp_pool_submit_batch(rp_pool *pool, rp_job_fn fn, void *const *args, size_t n);

/**
 * The pool's default router (the one rp_pool_submit() uses).
 * @return a borrowed router, valid until the pool is destroyed; NULL if
 *         pool is NULL.  Do not pass it to rp_router_destroy().
 */
rp_router *rp_pool_router(rp_pool *pool);

/**
 * Wait until every job accepted so far has run or been handed back.
 *
 * @param timeout_ms  how long to wait; -1 waits forever.
 * @return 0 when the pool was idle, RP_ETIMEDOUT, RP_EINVAL (NULL pool or
 *         timeout below -1), or RP_EBUSY when called from one of the pool's
 *         own routee threads (it would wait for itself).
 * Sleeps (no polling).  Thread-safe.
 */
int rp_pool_wait_idle(rp_pool *pool, int timeout_ms);

/**
 * Stop accepting jobs and stop the routees.  Later submits return
 * RP_ESHUTDOWN.  With RP_SHUTDOWN_DRAIN every queued job runs first; with
 * RP_SHUTDOWN_ABORT running jobs finish and queued ones are handed back
 * with RP_ESHUTDOWN.  Returns once every routee thread has exited.
 * Calling it again is a no-op returning 0 (once the routee threads exited).
 * Open scatters fail at once ("stopped ..."): their futures' callbacks run
 * in this call, with no library lock held, and may call rp_pool_shutdown()
 * on the same pool (it returns 0 once the routees exited) but not destroy
 * it (rp_pool_destroy() refuses, see there).
 *
 * @return 0, RP_EINVAL (NULL pool or unknown mode), or RP_EBUSY when called
 *         from one of the pool's own routee threads.
 * Thread-safe.
 */
int rp_pool_shutdown(rp_pool *pool, int mode);

/**
 * Shut the pool down (RP_SHUTDOWN_DRAIN if not done yet), join every
 * thread and free everything.  Accepts NULL.  Must not be called while
 * another thread uses the pool.  Refused - it does nothing but log an
 * error (RP_LOG_ERROR), and the pool stays whole and usable - when called
 * from a thread the pool itself runs or waits on:
 *   - a routee thread of the pool (a job, or a callback a job ran);
 *   - the pool's timer thread (a future callback run by an ask deadline or
 *     a scatter timer: future.h says callbacks may run there);
 *   - a callback that rp_pool_shutdown() or rp_pool_destroy() of the same
 *     pool runs (an open scatter's future failing "stopped").
 * Destroy the pool from another thread after such a callback signalled it.
 */
void rp_pool_destroy(rp_pool *pool);

/** Number of routees in the pool; 0 for NULL.  Thread-safe. */
size_t rp_pool_size(const rp_pool *pool);

/**
 * Routee i of the pool.
 * @return a borrowed routee, valid until the pool is destroyed; NULL if
 *         pool is NULL or i is out of range.
 */
rp_routee *rp_pool_routee(rp_pool *pool, size_t i);

/**
 * Pinned submission straight to one routee: it runs there or is handed
 * back, never elsewhere.  Works for foreign routees too (their send
 * callback is called).
 * @return as rp_pool_submit(), plus RP_ESTOPPED when the routee is stopped
 *         (not accepted; arg stays the caller's).  Once the pool is shut
 *         down: RP_ESHUTDOWN, also for a routee stopped before.
 */
int rp_routee_tell(rp_routee *r, rp_job_fn fn, void *arg);

/**
 * Jobs queued on the routee (not counting the one running).
 * @return the depth (>= 0), RP_EINVAL for NULL, or RP_ENODEPTH for a
 *         foreign routee whose depth cannot be read (no depth callback, or
 *         it returned a negative value); rp_errmsg() names the cause.
 */
int64_t rp_routee_depth(const rp_routee *r);

/**
 * True while the routee is running a job, counted from the moment it takes
 * the job from a queue (so a job in flight is never invisible).  A routee
 * that is idle, starting, or waking up to find nothing is not busy.  False
 * for NULL and foreign routees.
 */
bool rp_routee_busy(const rp_routee *r);

/**
 * Stop one routee: it finishes its current job and its thread exits.
 * Routers skip it from the moment this is called.  Its stealable queued
 * jobs are re-routed to the live routee with the smallest mailbox (when
 * the pool steals); its pinned jobs, and every job when no routee is live
 * or stealing is off, are handed back with RP_ESTOPPED.  Idempotent.
 * Returns without waiting for the running job.
 * @return 0, or RP_EINVAL for NULL.
 */
int rp_routee_stop(rp_routee *r);

/** True once rp_routee_stop() was called or the pool shut down. */
bool rp_routee_stopped(const rp_routee *r);

/** Index of the routee in its pool; -1 for NULL and foreign routees. */
int rp_routee_index(const rp_routee *r);

/** Per-routee counters.  All are totals since the pool started. */
typedef struct rp_routee_stats {
    uint64_t enqueued;    /**< jobs accepted into the mailbox */
    uint64_t run;         /**< jobs run by this routee */
    uint64_t rejected;    /**< submits refused with RP_EFULL */
    uint64_t dropped;     /**< handed back RP_EDROPPED or RP_EEVICTED */
    uint64_t undelivered; /**< every job handed back from this routee, any reason */
    uint64_t stolen_from; /**< jobs other routees stole from this one */
    uint64_t stole;       /**< jobs this routee stole from others */
    uint64_t rerouted;    /**< stealable jobs moved to live routees when this one stopped */
    uint64_t expired;     /**< asks not run because their deadline passed first */
    uint64_t sleeps;      /**< times it found no work, even after its idle
                               spin, and slept (each sleep costs a wake-up) */
    uint64_t records;     /**< job records its two lanes hold now (not a
                               total): queued, free and in magazines; an
                               idle routee trims them to twice
                               rp_pool_options.record_reserve, in slabs */
    /* With stealing on, a routee busy with work of its own looks at one
     * other routee's queue every ~10 us (docs/design.md, "The rescue"):
     * these count what those looks did.  0 with stealing off. */
    uint64_t looks;       /**< looks at another routee's queue */
    uint64_t stale_looks; /**< of them, looks so long after the previous
                               one (a long job or a sleep between) that
                               they could only watch */
    uint64_t rescues;     /**< looks that stole work queued behind a
                               routee that finished no job since the look
                               before (each moves up to half its queue;
                               the jobs count in stole) */
    uint64_t age_takes;   /**< looks that took the watched routee's oldest
                               job for being older than ours by the age
                               look's margin (design.md, "The age look";
                               the job counts in stole) */
} rp_routee_stats;

/**
 * Read a routee's counters (relaxed reads: each counter is exact, the set
 * is not one atomic snapshot while jobs are moving).
 * @return 0, or RP_EINVAL for NULL arguments.
 */
int rp_routee_stats_get(const rp_routee *r, rp_routee_stats *out);

/**
 * Sends a job to a foreign routee.  Return 0 when the foreign side accepted
 * it (it now owns arg and must eventually call fn or dispose of arg), or a
 * negative code to refuse: the router then hands the job back with
 * RP_ESEND.  Must be thread-safe.  ctx is NULL when fn is called by
 * foreign code unless that code supplies its own.
 */
typedef int (*rp_foreign_send_fn)(rp_job_fn fn, void *arg, void *user);

/**
 * Reports a foreign routee's queued depth: >= 0, or negative when it
 * cannot be read (smallest-mailbox then scores the routee 0).
 */
typedef int64_t (*rp_foreign_depth_fn)(void *user);

/**
 * Create a foreign routee: a routee outside any pool, reached through a
 * send callback, for group routers.
 *
 * @param out    receives the routee; release with rp_routee_foreign_destroy()
 *               after every router using it is destroyed.
 * @param send   send callback (not NULL).
 * @param depth  depth callback, or NULL when the depth cannot be read.
 * @param user   passed to both callbacks; caller-owned.
 * @return 0, RP_EINVAL (NULL out or send), RP_ENOMEM.
 */
int rp_routee_foreign_create(rp_routee **out, rp_foreign_send_fn send,
                             rp_foreign_depth_fn depth, void *user);

/** Free a foreign routee.  Accepts NULL; ignores pool routees (logs). */
void rp_routee_foreign_destroy(rp_routee *r);

/** Index of the routee running the job. */
int rp_job_routee(const rp_job_ctx *ctx);

/** The pool running the job (borrowed). */
rp_pool *rp_job_pool(const rp_job_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_POOL_H */
