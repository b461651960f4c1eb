/* SPDX-License-Identifier: MIT */
/*
 * bench/sojourn_arrivals.c - rp-bench-sojourn's arrival generator.
 *
 * Arrivals: the generator thread, helped by the routees.
 *
 * On two vCPUs the generator is a third thread.  Arrivals come every 6.8 us
 * at load 0.8, too often to sleep between them (a timer wake-up costs ~20 us
 * of CPU on this kind of VM), and a thread that spins for them takes a CPU
 * share from the routees: measured, it inflates the 10.9 us mean job to
 * ~15 us and overloads the pool (docs/performance.md).  So, by default
 * (GEN_IDLE):
 *
 *  - one generator thread per CPU, pinned, under SCHED_IDLE: each uses only
 *    a CPU no routee wants, a waking routee preempts it at once, and the
 *    kernel counts its CPU as idle when it places that routee.  One thread
 *    per CPU because a single one, once preempted, waits on that CPU's run
 *    queue while the other CPU idles (the kernel skips newidle balancing
 *    when CPUs idle as briefly as here): measured, 10% of the arrivals
 *    that found a routee idle were submitted more than 60 us late;
 *  - when both routees are busy it gets (almost) no CPU, so each routee,
 *    when it finishes a job, submits the arrivals that are due.  That does
 *    not change the schedule: while both routees are busy no job can start,
 *    no routee can steal, and the depth and busy flags a router reads do
 *    not change except through these very arrivals, submitted in order -
 *    the first routee to finish sees what it would have seen.
 *
 * Whoever submits claims one arrival at a time with a CAS on `next` and
 * goes on while arrivals are due: each is submitted once, all that are due
 * go in one batch, and each records its lateness (submit - scheduled),
 * which stays inside the measured sojourn.  Not a lock: the SCHED_IDLE
 * generator is preempted by the very routee its submit wakes, and a lock
 * held across that preemption stalled every routee's submissions for
 * milliseconds (measured).  Claim order is submit order except when two
 * claimers race within a few nanoseconds.
 */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sojourn.h"

feeder feed;

/* Submit every arrival due at `now`, racing other submitters for each. */
static void feed_pump(int64_t now, bool routee)
{
    const workload *w = feed.w;
    size_t i = atomic_load_explicit(&feed.next, memory_order_acquire), mine = 0;

    while (i < w->n && feed.t0 + w->offset[i] <= now) {
        /* Claim i; on failure i is reloaded and the loop checks it again. */
        if (!atomic_compare_exchange_weak_explicit(&feed.next, &i, i + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        feed.b->late[i] = now - (feed.t0 + w->offset[i]);
        feed.b->by_routee[i] = routee ? (uint8_t)(tl_worker + 1) : 0;
        int64_t t = feed.time_submits ? bench_now_ns() : 0;
        sched_submit(feed.s, &feed.b->jobs[i]);
        if (feed.time_submits)
            feed.b->submit_ns[i] = bench_now_ns() - t;
        mine++;
        i = atomic_load_explicit(&feed.next, memory_order_acquire);
    }
    if (routee && mine)
        atomic_fetch_add_explicit(&feed.by_routee, mine, memory_order_relaxed);
}

void feed_from_routee(int64_t now)
{
    if (feed.hooks)
        feed_pump(now, true);
}

static void sleep_until(int64_t t)
{
    struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Wait on the CPU for an arrival less than spin_ns away. */
static void wait_short(int64_t due, gen_mode mode)
{
    while (bench_now_ns() < due) {
        if (mode == GEN_SPIN)
            bench_relax();
        else
            sched_yield(); /* give the CPU to a routee that shares it */
    }
}

/*
 * A GEN_IDLE generator waits under SCHED_IDLE and submits under SCHED_FIFO.
 * A submit may owe a wake-up after the point where it took the duty from
 * everyone else: routepool clears the sleeper bit before FUTEX_WAKE, the
 * central queue takes a worker off its list before sem_post.  A SCHED_IDLE
 * thread preempted inside that window (by a routee woken onto its CPU, or
 * by the mutex hand-over itself) may not run again for a long time, and the
 * sleeper waits with it: measured, a central worker slept 191 ms with
 * thousands of jobs queued.  SCHED_FIFO makes each batch of submits run to
 * its end; then the routees on this CPU run.
 */
static void set_policy(int policy)
{
    struct sched_param p = {.sched_priority = policy == SCHED_FIFO ? 1 : 0};
    static _Atomic bool warned;
    int err = pthread_setschedparam(pthread_self(), policy, &p);

    if (err && !atomic_exchange(&warned, true))
        fprintf(stderr, "rp-bench-sojourn: cannot set SCHED_%s: %s\n",
                policy == SCHED_FIFO ? "FIFO" : "IDLE", strerror(err));
}

typedef struct gen_thread {
    const config *cfg;
    int cpu;        /* pinned to it, or -1 */
    int64_t cpu_ns; /* the thread's CPU time */
    pthread_t th;
} gen_thread;

/*
 * A generator thread: submit every job at (or, when late, right after) its
 * scheduled instant t0 + offset, racing the other submitters.  Sleep when
 * the next arrival is more than spin_ns away, waking spin_ns early (a sleep
 * wakes ~25 us late here); otherwise wait on the CPU.
 */
static void *generate(void *p)
{
    gen_thread *g = p;
    const config *cfg = g->cfg;
    const workload *w = feed.w;
    size_t i;

    bench_pin_self(g->cpu);
    if (cfg->gen == GEN_IDLE)
        set_policy(SCHED_IDLE);
    while ((i = atomic_load_explicit(&feed.next, memory_order_acquire)) < w->n) {
        int64_t now = bench_now_ns(), due = feed.t0 + w->offset[i];
        if (due <= now && cfg->gen == GEN_IDLE) {
            set_policy(cfg->tbb_other && feed.s->v == V_TBB ? SCHED_OTHER : SCHED_FIFO);
            feed_pump(now, false);
            set_policy(SCHED_IDLE);
        } else if (due <= now)
            feed_pump(now, false);
        else if (due - now > cfg->spin_ns)
            sleep_until(due - cfg->spin_ns);
        else
            wait_short(due, cfg->gen);
    }
    g->cpu_ns = bench_thread_cpu_ns();
    return NULL;
}

/* Run the generator threads until every job is submitted; their CPU time.
 * GEN_IDLE: one per CPU (up to one per routee), pinned; else one, unpinned. */
int64_t generate_all(const config *cfg)
{
    gen_thread g[ROUTEES];
    int n = cfg->gen == GEN_IDLE ? (int)ROUTEES : 1;
    int64_t cpu = 0;

    for (int k = 0; k < n; k++) {
        g[k] = (gen_thread){.cfg = cfg, .cpu = cfg->gen == GEN_IDLE ? bench_nth_cpu(k) : -1};
        if (k > 0 && g[k].cpu < 0)
            n = k; /* fewer CPUs than routees */
        else if (pthread_create(&g[k].th, NULL, generate, &g[k]) != 0) {
            fprintf(stderr, "rp-bench-sojourn: cannot start the generator\n");
            exit(1);
        }
    }
    for (int k = 0; k < n; k++) {
        pthread_join(g[k].th, NULL);
        cpu += g[k].cpu_ns;
    }
    return cpu;
}
