/* SPDX-License-Identifier: MIT */
/*
 * rp-bench-sojourn - sojourn time of an open-loop bimodal workload under
 * each routepool router, with and without work stealing, as ratios to a
 * central FIFO queue (issue 3).
 *
 * Workload: Poisson arrivals; 90% of the jobs cost 1 us of CPU and 10% cost
 * 100 us (mean 10.9 us, squared coefficient of variation 7.42), from a
 * calibrated spin loop.  The arrival rate is load * 2 / 10.9 us for two
 * routees.  Each job's sojourn runs from its *scheduled* arrival instant to
 * its completion, so a generator that falls behind is charged to the
 * scheduler under test, never hidden (no coordinated omission).
 *
 * Reference: one mutex + condvar FIFO shared by two worker threads, an
 * M/G/2 queue - the best tail any first-come-first-served dispatch can
 * give.  Per-routee FIFOs fed by round-robin or random are two M/G/1
 * queues instead (building-blocks.md, "Queueing anchors").
 *
 * Peer (when built with oneTBB, bench/peer_tbb.cpp): "tbb", a task_arena
 * of two worker threads (pinned like the routees) and oneTBB's own work
 * stealing.  A generator hands each arrival to the arena with
 * task_arena::enqueue(task_group::defer(job)) - oneTBB's way in from a
 * thread outside the arena; a worker that submits due arrivals (below)
 * task_group::run()s them into its own deque, where the other worker can
 * steal them.  Measured exactly like the others, reported as a ratio to
 * the central queue; its stolen count is not known (0), and its
 * "simulated" cell is the central queue's (no model of oneTBB's order).
 * Measured here: with the generators' SCHED_FIFO submit windows (below)
 * tbb runs see jobs interrupted for ~50 ms - oneTBB's enqueue takes spin
 * locks, a SCHED_FIFO generator spinning on one that a worker of its CPU
 * holds starves that worker until RT throttling (950 ms of every 1 s) lets
 * it run.  --tbb-submit other keeps the tbb generators at SCHED_OTHER while
 * they submit, to show oneTBB without that inversion (its tail stays long:
 * a worker runs its own deque newest-first).
 *
 * Method: for every load and repetition one workload is drawn from a fixed
 * seed and replayed through every scheduler (common random numbers, in an
 * order that rotates with the repetition).  The first --warmup jobs of a
 * run are not measured.  Each table cell is the median over repetitions of
 * a per-run statistic; ratios are medians of the per-run ratios to the
 * central queue of the same repetition.  Job records are preallocated: the
 * measured path allocates nothing.  A run during which other processes took
 * 5% or more of the machine is done again (the machine is shared).
 *
 * Arrivals: a SCHED_IDLE generator thread, helped by the routees while both
 * are busy (see "arrivals" below for why, and why that is exact).  Each
 * load also prints the same workload simulated with zero overhead, the
 * queueing-theory answer to read the measurements against.
 *
 * Public headers only (STYLE.md).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "common.h"
#include "routepool/routepool.h"
#ifdef RP_BENCH_HAVE_TBB
#include "peer_tbb.h"
#endif

#define ROUTEES 2u
#define SHORT_US 1.0
#define LONG_US 100.0
#define LONG_SHARE 0.10
#define MEAN_US (SHORT_US * (1 - LONG_SHARE) + LONG_US * LONG_SHARE) /* 10.9 */
#define MAX_LOADS 8
#define MAX_REPS 31
#define TARGET_LOAD 0.80
#define TARGET_P99_RATIO 1.15

/* ---- schedulers ---- */

enum variant { V_CENTRAL, V_RR, V_RR_STEAL, V_RANDOM, V_SM, V_SM_STEAL, V_TBB, V_COUNT };

static const struct {
    const char *key, *label;
} variants[V_COUNT] = {
    [V_CENTRAL] = {"central", "central queue (M/G/2)"},
    [V_RR] = {"rr", "round-robin"},
    [V_RR_STEAL] = {"rr-steal", "round-robin + steal"},
    [V_RANDOM] = {"random", "random"},
    [V_SM] = {"sm", "smallest-mailbox"},
    [V_SM_STEAL] = {"sm-steal", "smallest-mailbox + steal"},
    [V_TBB] = {"tbb", "oneTBB task_group (its stealing)"},
};

/* ---- per-run statistics ---- */

enum stat {
    S_MEAN, S_P50, S_P99, S_P999, /* sojourn, us */
    S_SVC,                        /* mean measured service (done - start), us */
    S_UTIL,                       /* sum of service / (routees * span) */
    S_LATE50, S_LATE99,           /* generator lateness, us */
    S_GENCPU,                     /* generator CPU time / generation wall time */
    S_STEAL,                      /* jobs stolen per 1000 jobs */
    S_HOOK,                       /* share of arrivals submitted by routees */
    S_STALL,                      /* in-job interruptions > 20 us, per mille of routee time */
    S_STALLMAX,                   /* longest in-job interruption, us */
    S_FOREIGN,                    /* share of the machine used by others */
    S_DISP, S_DISP99,             /* dispatch delay (see dispatch_stats()), us */
    NSTAT
};

static const char *const stat_keys[NSTAT] = {
    "mean_us", "p50_us", "p99_us", "p999_us", "service_us", "util",
    "gen_late_p50_us", "gen_late_p99_us", "gen_cpu", "stolen_per_1000",
    "hook_share", "stall_permille", "stall_max_us", "foreign_cpu",
    "dispatch_mean_us", "dispatch_p99_us"};

/* How the generator waits for an arrival less than spin_ns away. */
typedef enum gen_mode {
    GEN_IDLE, /* SCHED_IDLE thread per CPU, sched_yield loop; routees submit too */
    GEN_SPIN, /* normal thread, PAUSE loop; only the generator submits */
    GEN_YIELD /* normal thread, sched_yield loop; only the generator submits */
} gen_mode;

static const char *const gen_names[] = {"idle", "spin", "yield"};

typedef struct config {
    double loads[MAX_LOADS];
    int nloads;
    size_t jobs, warmup;
    int reps;
    uint64_t seed;
    int64_t spin_ns;  /* sleep only when the next arrival is further away */
    gen_mode gen;
    bool hooks;       /* routees submit due arrivals when a job ends */
    bool enabled[V_COUNT];
    const char *json;
    double max_foreign; /* redo a run when others used more of the machine */
    int retries;
    bool pin;           /* worker i (routee or central) pinned to CPU i */
    double max_stall_us; /* redo a run with a longer in-job interruption */
    int central_wake;   /* a central_wake */
    bool tbb_other;     /* --tbb-submit other: tbb's generators submit under SCHED_OTHER */
} config;

/* --idle-spin-us: the routepool pools' rp_pool_options.idle_spin_us. */
static unsigned g_idle_spin_us = RP_IDLE_SPIN_US_AUTO;

/* One job record, a cache line each: two routees write neighbouring
 * records at the same time. */
typedef struct job {
    _Alignas(64) int64_t start;
    int64_t done;
    uint64_t iters;
    uint64_t sink;
    int worker; /* index of the thread that ran it */
} job;

/* One drawn workload, replayed through every scheduler. */
typedef struct workload {
    size_t n;         /* warm-up + measured jobs */
    int64_t *offset;  /* scheduled arrival, ns after the run's t0 */
    uint8_t *is_long;
} workload;

/* Buffers shared by every run: allocated once, before anything is timed. */
typedef struct buffers {
    job *jobs;
    job **queue;      /* the central queue's ring (one slot per job) */
    int64_t *late;    /* generator lateness per job, ns */
    uint8_t *by_routee; /* 1: submitted by a routee's hook (feed_pump) */
    int64_t *idle_wait; /* dispatch delay of a job that found its worker idle, else 0 */
    int64_t *scratch; /* sojourn times, sorted for percentiles */
    size_t *ring[ROUTEES]; /* the simulation's per-routee queues of job indices */
    size_t *order;    /* job indices by (worker, start) */
} buffers;

static uint64_t iters_short, iters_long;
/* Per-run statistics of every cell. */
typedef double table[MAX_LOADS][V_COUNT][MAX_REPS][NSTAT];
static table results;
/* The same workloads simulated with zero overhead: S_MEAN..S_P999 only. */
static table simulated;
/* Runs done again because other processes took the machine. */
static int redone[MAX_LOADS][V_COUNT];

/*
 * The interruptions of every run (with --json): each job, warm-up
 * included, that took more than STALL_NS beyond its CPU cost, and by how
 * much.  rp-bench-sim --validate replays them as part of the job's cost:
 * the VM's stalls are an input of the queueing, like the arrivals.
 */
#define STALL_NS 20000
#define STALL_MAX_EVENTS 50000
typedef struct stall_list {
    uint32_t *job;
    float *extra_us;
    size_t n, cap, max;
    bool truncated;
} stall_list;
static stall_list stalls[MAX_LOADS][V_COUNT][MAX_REPS];

/*
 * The generator's lateness in every run (with --json), the other input the
 * VM adds: each job, warm-up included, that a generator thread submitted
 * more than LATE_NS after its scheduled instant, and by how much; the mean
 * lateness of the generators' other submissions (late_base).  The sojourn
 * is measured from the scheduled instant, so a late submission is in it;
 * rp-bench-sim --validate submits those jobs as late as they were, and the
 * others late_base late.  A routee's hook submits only while every
 * routee is busy (the SCHED_IDLE generators get no CPU then), when the job
 * could not start anyway: that lateness is the simulated queueing's own
 * (at load 0.8, 40% of the jobs, 20 us on average), not replayed.
 */
#define LATE_NS 5000
#define LATE_MAX_EVENTS 200000
static stall_list lates[MAX_LOADS][V_COUNT][MAX_REPS];
static double late_base_us[MAX_LOADS][V_COUNT][MAX_REPS];

/*
 * Late wake-ups (with --json): each job that found the worker that ran it
 * idle and still waited more than WAKE_NS to start (dispatch_stats), and
 * how long - a routee woken late because the VM or the generator held its
 * CPU.  rp-bench-sim --validate uses it as that job's wake-up latency when
 * the job finds its simulated routee asleep too.
 */
#define WAKE_NS 20000
#define WAKE_MAX_EVENTS 50000
static stall_list wakes[MAX_LOADS][V_COUNT][MAX_REPS];

/* ---- the job ---- */

static void feed_from_routee(int64_t now);

/* Which worker thread this is (routee index, or central worker index). */
static _Thread_local int tl_worker;

/* The job's CPU work alone (also used to check the calibration). */
static void spin_job(job *j)
{
    j->start = bench_now_ns();
    j->sink = bench_spin(j->iters, (uint64_t)j->start);
    j->done = bench_now_ns();
}

/* A job as the schedulers run it: its work, then the arrivals now due. */
static void run_job(job *j)
{
    j->worker = tl_worker;
    spin_job(j);
    feed_from_routee(j->done);
}

static void rp_job(rp_job_ctx *ctx, void *arg)
{
    tl_worker = rp_job_routee(ctx);
    run_job(arg);
}

/* ---- the reference: one central FIFO, mutex-protected, two workers ----
 *
 * Workers sleep on a semaphore of their own and a submitter wakes exactly
 * one (WAKE_SEM).  Not pthread_cond_signal(): on this Debian 12 (glibc 2.36)
 * it loses wake-ups under this load - a worker stayed asleep for 10-20 ms
 * while the queue held hundreds of jobs, the mean sojourn reached tens of
 * milliseconds at load 0.8 - consistent with glibc bug 25847.  --central-wake
 * signal / broadcast keep the condvar variants to show it.
 */

typedef enum central_wake { WAKE_SEM, WAKE_SIGNAL, WAKE_BROADCAST } central_wake;

static const char *const wake_names[] = {"sem", "signal", "broadcast"};
static const char *const tbb_submit_names[] = {"fifo", "other"};

typedef struct central {
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    sem_t sem[ROUTEES];          /* WAKE_SEM: one per worker */
    unsigned asleep[ROUTEES];    /* WAKE_SEM: workers waiting for a post */
    unsigned nasleep;
    job **q;
    size_t head, tail; /* q[head..tail) waits; tail counts submitted jobs */
    size_t done;
    unsigned sleepers, started;  /* sleepers: condvar modes */
    central_wake wake;
    bool stopping, waiting, pin;
    pthread_t th[ROUTEES];
} central;

/* Sleep until a submitter (or the stop) wakes us; mu held on entry and exit. */
static void central_sleep(central *c, int me)
{
    if (c->wake != WAKE_SEM) {
        c->sleepers++;
        pthread_cond_wait(&c->work, &c->mu);
        c->sleepers--;
        return;
    }
    c->asleep[c->nasleep++] = (unsigned)me;
    pthread_mutex_unlock(&c->mu);
    while (sem_wait(&c->sem[me]) != 0) /* EINTR */
        ;
    pthread_mutex_lock(&c->mu);
}

static void *central_worker(void *p)
{
    central *c = p;

    pthread_mutex_lock(&c->mu);
    tl_worker = (int)c->started++;
    if (c->pin) /* as rp_pool_options.pin_cpus: worker i on CPU i */
        bench_pin_self(bench_nth_cpu(tl_worker));
    for (;;) {
        job *j;
        while (c->head == c->tail && !c->stopping)
            central_sleep(c, tl_worker);
        if (c->head == c->tail)
            break; /* stopping and drained */
        j = c->q[c->head++];
        pthread_mutex_unlock(&c->mu);
        run_job(j);
        pthread_mutex_lock(&c->mu);
        if (++c->done == c->tail && c->waiting)
            pthread_cond_broadcast(&c->idle);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static int central_start(central *c, job **ring, bool pin, central_wake wake)
{
    memset(c, 0, sizeof *c);
    c->pin = pin;
    c->wake = wake;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->work, NULL);
    pthread_cond_init(&c->idle, NULL);
    for (unsigned i = 0; i < ROUTEES; i++)
        sem_init(&c->sem[i], 0, 0);
    c->q = ring;
    for (unsigned i = 0; i < ROUTEES; i++)
        if (pthread_create(&c->th[i], NULL, central_worker, c) != 0)
            return -1;
    return 0;
}

static void central_submit(central *c, job *j)
{
    int who = -1; /* worker to post, ROUTEES for the condvar, -1 nobody */

    pthread_mutex_lock(&c->mu);
    c->q[c->tail++] = j;
    if (c->wake == WAKE_SEM && c->nasleep)
        who = (int)c->asleep[--c->nasleep];
    else if (c->wake != WAKE_SEM && c->sleepers)
        who = ROUTEES;
    pthread_mutex_unlock(&c->mu);
    /* Wake after the unlock: the woken worker must not find the mutex held
     * by a submitter its own wake-up preempted (a SCHED_IDLE generator). */
    if (who == ROUTEES && c->wake == WAKE_BROADCAST)
        pthread_cond_broadcast(&c->work);
    else if (who == ROUTEES)
        pthread_cond_signal(&c->work);
    else if (who >= 0)
        sem_post(&c->sem[who]);
}

static void central_wait_idle(central *c)
{
    pthread_mutex_lock(&c->mu);
    c->waiting = true;
    while (c->done != c->tail)
        pthread_cond_wait(&c->idle, &c->mu);
    c->waiting = false;
    pthread_mutex_unlock(&c->mu);
}

static void central_stop(central *c)
{
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_broadcast(&c->work);
    while (c->nasleep)
        sem_post(&c->sem[c->asleep[--c->nasleep]]);
    pthread_mutex_unlock(&c->mu);
    for (unsigned i = 0; i < ROUTEES; i++)
        pthread_join(c->th[i], NULL);
    for (unsigned i = 0; i < ROUTEES; i++)
        sem_destroy(&c->sem[i]);
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->idle);
    pthread_mutex_destroy(&c->mu);
}

/* ---- one scheduler under test: the central queue, a routepool pool or
 * oneTBB ---- */

typedef struct sched {
    enum variant v;
    rp_pool *pool;
    central cq;
#ifdef RP_BENCH_HAVE_TBB
    peer_tbb *tbb;
#endif
} sched;

#ifdef RP_BENCH_HAVE_TBB
static void tbb_job(void *arg)
{
    tl_worker = peer_tbb_thread_index(); /* worker slots 0..ROUTEES-1: no reserved slot */
    run_job(arg);
}

/* A two-worker arena, worker i pinned to CPU i as the routees (--no-pin: not). */
static void tbb_start(sched *s, bool pin)
{
    int cpus[ROUTEES];

    for (unsigned i = 0; i < ROUTEES; i++)
        cpus[i] = bench_nth_cpu((int)i);
    if (peer_tbb_create(&s->tbb, (int)ROUTEES, 0, pin ? cpus : NULL) != 0) {
        fprintf(stderr, "rp-bench-sojourn: cannot create the oneTBB arena\n");
        exit(1);
    }
}
#endif

static void die_rp(const char *what, int rc)
{
    fprintf(stderr, "rp-bench-sojourn: %s: %s (%s)\n", what, rp_strerror(rc), rp_errmsg());
    exit(1);
}

static void sched_start(sched *s, const config *cfg, enum variant v, job **ring, uint64_t seed)
{
    bool pin = cfg->pin;

    rp_pool_options o;
    int rc;

    s->v = v;
    s->pool = NULL;
    if (v == V_CENTRAL) {
        if (central_start(&s->cq, ring, pin, (central_wake)cfg->central_wake) != 0) {
            fprintf(stderr, "rp-bench-sojourn: pthread_create failed\n");
            exit(1);
        }
        return;
    }
#ifdef RP_BENCH_HAVE_TBB
    if (v == V_TBB) {
        tbb_start(s, pin);
        return;
    }
#endif
    rp_pool_options_init(&o);
    o.idle_spin_us = g_idle_spin_us;
    o.name = "soj";
    o.routees = ROUTEES;
    o.steal = v == V_RR_STEAL || v == V_SM_STEAL;
    o.pin_cpus = pin;
    o.strategy = v == V_RANDOM ? rp_strategy_random(seed)
                 : (v == V_SM || v == V_SM_STEAL) ? rp_strategy_smallest_mailbox()
                                                  : rp_strategy_round_robin();
    if ((rc = rp_pool_create(&s->pool, &o)) < 0)
        die_rp("rp_pool_create", rc);
}

static void sched_submit(sched *s, job *j)
{
    int rc;

    if (s->v == V_CENTRAL) {
        central_submit(&s->cq, j);
        return;
    }
#ifdef RP_BENCH_HAVE_TBB
    if (s->v == V_TBB) {
        if (peer_tbb_run(s->tbb, tbb_job, j) != 0) {
            fprintf(stderr, "rp-bench-sojourn: oneTBB could not take a job\n");
            exit(1);
        }
        return;
    }
#endif
    if ((rc = rp_pool_submit(s->pool, rp_job, j)) < 0)
        die_rp("rp_pool_submit", rc);
}

/* Wait for every job, then stop; returns the number of stolen jobs. */
static uint64_t sched_finish(sched *s)
{
    uint64_t stole = 0;
    int rc;

    if (s->v == V_CENTRAL) {
        central_wait_idle(&s->cq);
        central_stop(&s->cq);
        return 0;
    }
#ifdef RP_BENCH_HAVE_TBB
    if (s->v == V_TBB) { /* the waiter runs no job: it waits outside the arena */
        peer_tbb_wait(s->tbb);
        peer_tbb_destroy(s->tbb);
        return 0;
    }
#endif
    if ((rc = rp_pool_wait_idle(s->pool, -1)) < 0)
        die_rp("rp_pool_wait_idle", rc);
    for (size_t i = 0; i < rp_pool_size(s->pool); i++) {
        rp_routee_stats st;
        if (rp_routee_stats_get(rp_pool_routee(s->pool, i), &st) == 0)
            stole += st.stole;
    }
    rp_pool_destroy(s->pool);
    return stole;
}

/* ---- workload ---- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1]. */
static double unit(uint64_t *x)
{
    return ((double)(splitmix64(x) >> 11) + 1.0) * 0x1.0p-53;
}

static void workload_draw(workload *w, double load, uint64_t seed)
{
    double rate_per_ns = load * ROUTEES / (MEAN_US * 1e3), t = 0;
    uint64_t x = seed;

    for (size_t i = 0; i < w->n; i++) {
        t += -log(unit(&x)) / rate_per_ns;
        w->offset[i] = (int64_t)t;
        w->is_long[i] = unit(&x) <= LONG_SHARE;
    }
}

/* ---- arrivals: the generator thread, helped by the routees ----
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

typedef struct feeder {
    _Alignas(64) _Atomic size_t next; /* first arrival not yet claimed */
    _Atomic size_t by_routee;         /* arrivals submitted by routees */
    bool hooks;
    sched *s;
    const workload *w;
    const buffers *b;
    int64_t t0;
} feeder;

static feeder feed;

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
        feed.b->by_routee[i] = routee;
        sched_submit(feed.s, &feed.b->jobs[i]);
        mine++;
        i = atomic_load_explicit(&feed.next, memory_order_acquire);
    }
    if (routee && mine)
        atomic_fetch_add_explicit(&feed.by_routee, mine, memory_order_relaxed);
}

static void feed_from_routee(int64_t now)
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
static int64_t generate_all(const config *cfg)
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

/* ---- one run: one scheduler, one workload ---- */

/* Lateness percentiles of the generator over the measured jobs. */
static void late_stats(double *st, const workload *w, const buffers *b, size_t warm)
{
    size_t m = w->n - warm;

    memcpy(b->scratch, b->late + warm, m * sizeof *b->scratch);
    bench_sort_i64(b->scratch, m);
    st[S_LATE50] = (double)bench_pct_sorted(b->scratch, m, 0.50) / 1e3;
    st[S_LATE99] = (double)bench_pct_sorted(b->scratch, m, 0.99) / 1e3;
}

static const job *order_jobs; /* qsort context of by_worker_start() */

static int by_worker_start(const void *a, const void *b)
{
    const job *x = &order_jobs[*(const size_t *)a], *y = &order_jobs[*(const size_t *)b];

    if (x->worker != y->worker)
        return x->worker < y->worker ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

/*
 * Dispatch delay of a job: its start minus the later of its submission and
 * the end of the previous job on the same worker - the time it could have
 * been running but was not.  For a job that finds its worker asleep this is
 * the wake-up; for a queued one, the hand-over; for a stolen one, the time
 * until a thief found it.
 */
static void dispatch_stats(double *st, const workload *w, const buffers *b, int64_t t0,
                           size_t warm)
{
    int64_t prev_done[ROUTEES];
    size_t m = 0;
    double sum = 0;

    for (size_t i = 0; i < w->n; i++)
        b->order[i] = i;
    order_jobs = b->jobs;
    qsort(b->order, w->n, sizeof *b->order, by_worker_start);
    for (size_t k = 0; k < ROUTEES; k++)
        prev_done[k] = INT64_MIN;
    for (size_t k = 0; k < w->n; k++) {
        size_t i = b->order[k];
        const job *j = &b->jobs[i];
        int64_t submit = t0 + w->offset[i] + b->late[i], ready;
        if (j->worker < 0 || j->worker >= (int)ROUTEES)
            continue;
        ready = submit > prev_done[j->worker] ? submit : prev_done[j->worker];
        b->idle_wait[i] = submit > prev_done[j->worker] ? j->start - submit : 0;
        prev_done[j->worker] = j->done;
        if (i >= warm)
            sum += (double)(b->scratch[m++] = j->start - ready);
    }
    bench_sort_i64(b->scratch, m);
    st[S_DISP] = m ? sum / (double)m / 1e3 : 0;
    st[S_DISP99] = (double)bench_pct_sorted(b->scratch, m, 0.99) / 1e3;
}

static void run_stats(double *st, const config *cfg, const workload *w,
                      const buffers *b, int64_t t0)
{
    size_t warm = cfg->warmup, m = w->n - warm;
    double sum = 0, svc = 0, stall = 0;
    int64_t last_done = 0, stall_max = 0;

    for (size_t i = warm; i < w->n; i++) {
        const job *j = &b->jobs[i];
        int64_t soj = j->done - (t0 + w->offset[i]);
        /* A job that took 20 us more than its CPU cost was interrupted. */
        int64_t extra = j->done - j->start - (int64_t)((w->is_long[i] ? LONG_US : SHORT_US) * 1e3);
        b->scratch[i - warm] = soj;
        sum += (double)soj;
        svc += (double)(j->done - j->start);
        stall += extra > STALL_NS ? (double)extra : 0;
        stall_max = extra > stall_max ? extra : stall_max;
        last_done = j->done > last_done ? j->done : last_done;
    }
    st[S_STALL] = 1000 * stall / (ROUTEES * (double)(last_done - (t0 + w->offset[warm])));
    st[S_STALLMAX] = (double)stall_max / 1e3;
    st[S_MEAN] = sum / (double)m / 1e3;
    st[S_SVC] = svc / (double)m / 1e3;
    st[S_UTIL] = svc / (ROUTEES * (double)(last_done - (t0 + w->offset[warm])));
    bench_sort_i64(b->scratch, m);
    st[S_P50] = (double)bench_pct_sorted(b->scratch, m, 0.50) / 1e3;
    st[S_P99] = (double)bench_pct_sorted(b->scratch, m, 0.99) / 1e3;
    st[S_P999] = (double)bench_pct_sorted(b->scratch, m, 0.999) / 1e3;
    late_stats(st, w, b, warm);
    dispatch_stats(st, w, b, t0, warm);
}

static void run_one(double *st, const config *cfg, enum variant v,
                    const workload *w, const buffers *b, uint64_t seed)
{
    sched s;
    int64_t t0, cpu, gen_end;

    sched_start(&s, cfg, v, b->queue, seed);
    for (size_t i = 0; i < w->n; i++) {
        b->jobs[i].iters = w->is_long[i] ? iters_long : iters_short;
        b->jobs[i].start = b->jobs[i].done = 0;
        b->jobs[i].worker = -1;
    }
    /* Start in 2 ms: the routees are up and asleep, as in service. */
    t0 = bench_now_ns() + 2000000;
    feed = (feeder){.hooks = cfg->hooks, .s = &s, .w = w, .b = b, .t0 = t0};
    atomic_init(&feed.next, 0);
    atomic_init(&feed.by_routee, 0);
    cpu = generate_all(cfg);
    gen_end = bench_now_ns();
    st[S_STEAL] = (double)sched_finish(&s) * 1000.0 / (double)w->n;
    run_stats(st, cfg, w, b, t0);
    st[S_GENCPU] = (double)cpu / (double)(gen_end - t0);
    st[S_HOOK] = (double)atomic_load(&feed.by_routee) / (double)w->n;
    feed.hooks = false;
}

/* ---- the same workload, simulated with zero overhead ----
 *
 * An exact discrete-event replay of the arrivals and nominal job sizes
 * (1 us, 100 us) through ideal schedulers: no dispatch cost, no wake-up
 * latency, no generator.  It shows what queueing alone predicts for this
 * very workload, so the measured tables can be read against it.  The
 * routepool policies are modelled as lib/ implements them:
 *  - smallest-mailbox scores a routee by its queued jobs plus one while it
 *    runs, scanning from message_index % 2;
 *  - stealing: a routee whose own queue and stolen batch are empty takes
 *    half the other's depth (1..RP__STEAL_MAX = 8) of its oldest queued
 *    jobs when that routee is busy or holds more than one job, runs the
 *    first and keeps the rest in a private batch; a job queued behind a
 *    busy routee wakes an idle one to steal it at once.
 */

#define SIM_STEAL_MAX 8

typedef struct simw {
    size_t *q, qh, qt;         /* FIFO of job indices */
    size_t batch[SIM_STEAL_MAX];
    unsigned bh, bn;           /* private stolen batch: batch[bh..bn) */
    bool busy;
    int64_t until;             /* completion of the running job */
} simw;

typedef struct sim {
    simw w[ROUTEES];
    const workload *wl;
    int64_t *sojourn;          /* per job, ns */
    bool steal;
} sim;

static int64_t sim_size(const workload *wl, size_t j)
{
    return (int64_t)((wl->is_long[j] ? LONG_US : SHORT_US) * 1e3);
}

static int64_t sim_depth(const simw *x)
{
    return (int64_t)(x->qt - x->qh) + (int64_t)(x->bn - x->bh);
}

static void sim_run(sim *m, simw *x, size_t j, int64_t t)
{
    x->busy = true;
    x->until = t + sim_size(m->wl, j);
    m->sojourn[j] = x->until - m->wl->offset[j];
}

/* Routee k looks for its next job at time t (lib/pool.c: next_job()). */
static void sim_next(sim *m, size_t k, int64_t t)
{
    simw *x = &m->w[k], *v = &m->w[(k + 1) % ROUTEES];
    int64_t d = sim_depth(v);
    unsigned want;

    x->busy = false;
    if (x->bh < x->bn) {
        sim_run(m, x, x->batch[x->bh++], t);
    } else if (x->qh < x->qt) {
        sim_run(m, x, x->q[x->qh++], t);
    } else if (m->steal && v->qh < v->qt && (v->busy || d > 1)) {
        want = d / 2 < 1 ? 1 : d / 2 > SIM_STEAL_MAX ? SIM_STEAL_MAX : (unsigned)(d / 2);
        x->bh = x->bn = 0;
        while (x->bn < want && v->qh < v->qt)
            x->batch[x->bn++] = v->q[v->qh++];
        sim_run(m, x, x->batch[x->bh++], t);
    }
}

/* Complete every job that ends by time t, earliest first. */
static void sim_advance(sim *m, int64_t t)
{
    for (;;) {
        size_t k = ROUTEES;
        for (size_t c = 0; c < ROUTEES; c++)
            if (m->w[c].busy && m->w[c].until <= t && (k == ROUTEES || m->w[c].until < m->w[k].until))
                k = c;
        if (k == ROUTEES)
            return;
        sim_next(m, k, m->w[k].until);
    }
}

static size_t sim_route(const sim *m, enum variant v, size_t i, uint64_t *rng)
{
    size_t best = i % ROUTEES;

    if (v == V_RANDOM)
        return (size_t)(splitmix64(rng) % ROUTEES);
    if (v != V_SM && v != V_SM_STEAL)
        return best; /* round-robin */
    for (size_t k = 1; k < ROUTEES; k++) {
        size_t c = (i + k) % ROUTEES;
        if (sim_depth(&m->w[c]) + m->w[c].busy < sim_depth(&m->w[best]) + m->w[best].busy)
            best = c;
    }
    return best;
}

/* Per-routee FIFOs under a routepool policy; sojourn per job into out. */
static void sim_pool(int64_t *out, enum variant v, const workload *wl, const buffers *b,
                     uint64_t seed)
{
    sim m = {.wl = wl, .sojourn = out, .steal = v == V_RR_STEAL || v == V_SM_STEAL};

    for (size_t k = 0; k < ROUTEES; k++)
        m.w[k].q = b->ring[k];
    for (size_t i = 0; i < wl->n; i++) {
        size_t c;
        sim_advance(&m, wl->offset[i]);
        c = sim_route(&m, v, i, &seed);
        m.w[c].q[m.w[c].qt++] = i;
        if (!m.w[c].busy)
            sim_next(&m, c, wl->offset[i]);
        else if (m.steal && !m.w[(c + 1) % ROUTEES].busy) /* wake a thief */
            sim_next(&m, (c + 1) % ROUTEES, wl->offset[i]);
    }
    sim_advance(&m, INT64_MAX);
}

/* One central FIFO: the worker that frees first takes the head. */
static void sim_central(int64_t *out, const workload *wl)
{
    int64_t free_at[ROUTEES] = {0};

    for (size_t i = 0; i < wl->n; i++) {
        size_t k = 0;
        for (size_t c = 1; c < ROUTEES; c++)
            k = free_at[c] < free_at[k] ? c : k;
        free_at[k] = (free_at[k] > wl->offset[i] ? free_at[k] : wl->offset[i]) + sim_size(wl, i);
        out[i] = free_at[k] - wl->offset[i];
    }
}

static void simulate(double *st, enum variant v, const workload *w, const buffers *b,
                     size_t warm, uint64_t seed)
{
    size_t m = w->n - warm;
    double sum = 0;

    if (v == V_CENTRAL || v == V_TBB) /* tbb: no model; the work-conserving ideal */
        sim_central(b->late, w); /* late[] is free between runs */
    else
        sim_pool(b->late, v, w, b, seed);
    for (size_t i = warm; i < w->n; i++) {
        b->scratch[i - warm] = b->late[i];
        sum += (double)b->late[i];
    }
    bench_sort_i64(b->scratch, m);
    st[S_MEAN] = sum / (double)m / 1e3;
    st[S_P50] = (double)bench_pct_sorted(b->scratch, m, 0.50) / 1e3;
    st[S_P99] = (double)bench_pct_sorted(b->scratch, m, 0.99) / 1e3;
    st[S_P999] = (double)bench_pct_sorted(b->scratch, m, 0.999) / 1e3;
}

/* ---- aggregation ---- */

static double median_of(table t, int li, enum variant v, int reps, enum stat s)
{
    double x[MAX_REPS];

    for (int r = 0; r < reps; r++)
        x[r] = t[li][v][r][s];
    return bench_median(x, (size_t)reps);
}

static double median_stat(int li, enum variant v, int reps, enum stat s)
{
    return median_of(results, li, v, reps, s);
}

/* Median (and range) of the per-run ratios to the central queue. */
static double ratio_of(table t, int li, enum variant v, int reps, enum stat s,
                       double *lo, double *hi)
{
    double x[MAX_REPS], med;

    for (int r = 0; r < reps; r++)
        x[r] = t[li][v][r][s] / t[li][V_CENTRAL][r][s];
    med = bench_median(x, (size_t)reps); /* sorts x */

    if (lo)
        *lo = x[0];
    if (hi)
        *hi = x[reps - 1];
    return med;
}

static double ratio_stat(int li, enum variant v, int reps, enum stat s, double *lo, double *hi)
{
    return ratio_of(results, li, v, reps, s, lo, hi);
}

/* Mean sojourn anchors, in us: M/G/1 per routee (Pollaczek-Khinchine, exact
 * for random routing) and M/G/2 central (Lee-Longton approximation). */
static void model_means(double load, double *mg1, double *mg2)
{
    double es = MEAN_US;
    double es2 = (1 - LONG_SHARE) * SHORT_US * SHORT_US + LONG_SHARE * LONG_US * LONG_US;
    double c2 = es2 / (es * es) - 1;
    double pwait = 2 * load * load / (1 + load); /* Erlang C, k = 2 */

    *mg1 = load * es2 / (2 * es * (1 - load)) + es;
    *mg2 = (1 + c2) / 2 * pwait * es / (2 * (1 - load)) + es;
}

/* ---- output ---- */

static void print_ratio_table(int li, const config *cfg)
{
    printf("| scheduler | mean | p50 | p99 | p99.9 | p99 ratio, min-max over runs |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    printf("| %s, absolute | %.1f us | %.1f us | %.1f us | %.1f us | |\n",
           variants[V_CENTRAL].label, median_stat(li, V_CENTRAL, cfg->reps, S_MEAN),
           median_stat(li, V_CENTRAL, cfg->reps, S_P50),
           median_stat(li, V_CENTRAL, cfg->reps, S_P99),
           median_stat(li, V_CENTRAL, cfg->reps, S_P999));
    for (int v = V_CENTRAL + 1; v < V_COUNT; v++) {
        double lo, hi, p99;
        if (!cfg->enabled[v])
            continue;
        p99 = ratio_stat(li, v, cfg->reps, S_P99, &lo, &hi);
        printf("| %s | %.2fx | %.2fx | %.2fx | %.2fx | %.2f-%.2f |\n", variants[v].label,
               ratio_stat(li, v, cfg->reps, S_MEAN, NULL, NULL),
               ratio_stat(li, v, cfg->reps, S_P50, NULL, NULL), p99,
               ratio_stat(li, v, cfg->reps, S_P999, NULL, NULL), lo, hi);
    }
}

static void print_detail_table(int li, const config *cfg)
{
    printf("\n| scheduler | mean us | p50 us | p99 us | p99.9 us | service us | util "
           "| dispatch mean/p99 us | stalls permille / max us | late p50/p99 us | gen CPU "
           "| by routees | stolen/1k | others' CPU | runs redone |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int v = 0; v < V_COUNT; v++) {
        double m[NSTAT];
        if (!cfg->enabled[v])
            continue;
        for (int s = 0; s < NSTAT; s++)
            m[s] = median_stat(li, v, cfg->reps, s);
        printf("| %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f / %.1f | %.1f / %.0f "
               "| %.1f / %.1f | %.0f%% | %.0f%% | %.1f | %.1f%% | %d |\n", variants[v].label,
               m[S_MEAN], m[S_P50], m[S_P99], m[S_P999], m[S_SVC], m[S_UTIL], m[S_DISP],
               m[S_DISP99], m[S_STALL], m[S_STALLMAX], m[S_LATE50], m[S_LATE99],
               100 * m[S_GENCPU], 100 * m[S_HOOK], m[S_STEAL], 100 * m[S_FOREIGN],
               redone[li][v]);
    }
}

static void print_sim_table(int li, const config *cfg)
{
    static const enum variant sims[] = {V_CENTRAL, V_RR, V_RR_STEAL, V_RANDOM, V_SM, V_SM_STEAL};

    printf("\nSame arrivals and job sizes simulated with zero overhead (no dispatch cost, "
           "no wake-up latency):\n\n");
    printf("| ideal scheduler | mean us | p50 us | p99 us | p99.9 us | mean ratio | p99 ratio "
           "| p99.9 ratio |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < sizeof sims / sizeof sims[0]; k++) {
        enum variant v = sims[k];
        printf("| %s | %.1f | %.1f | %.1f | %.1f | %.2fx | %.2fx | %.2fx |\n", variants[v].label,
               median_of(simulated, li, v, cfg->reps, S_MEAN),
               median_of(simulated, li, v, cfg->reps, S_P50),
               median_of(simulated, li, v, cfg->reps, S_P99),
               median_of(simulated, li, v, cfg->reps, S_P999),
               ratio_of(simulated, li, v, cfg->reps, S_MEAN, NULL, NULL),
               ratio_of(simulated, li, v, cfg->reps, S_P99, NULL, NULL),
               ratio_of(simulated, li, v, cfg->reps, S_P999, NULL, NULL));
    }
}

/* bench_csv_row()s of one load: per scheduler ("<key>@<load>") the sojourn
 * statistics in us and their ratios to the central queue (median, min and
 * max over the runs). */
static void csv_load(int li, const config *cfg)
{
    static const char *const names[] = {"mean", "p50", "p99", "p99.9"};

    for (int v = 0; v < V_COUNT; v++) {
        char cas[64], metric[64];
        if (!cfg->enabled[v])
            continue;
        snprintf(cas, sizeof cas, "%s@%.2f", variants[v].key, cfg->loads[li]);
        for (int st = S_MEAN; st <= S_P999; st++) {
            double x[MAX_REPS], lo, hi, med;
            for (int r = 0; r < cfg->reps; r++)
                x[r] = results[li][v][r][st];
            bench_csv_samples("sojourn", cas, names[st], "us", x, (size_t)cfg->reps);
            if (v == V_CENTRAL)
                continue;
            med = ratio_stat(li, (enum variant)v, cfg->reps, (enum stat)st, &lo, &hi);
            snprintf(metric, sizeof metric, "%s ratio to central", names[st]);
            bench_csv_row("sojourn", cas, metric, "x", med, lo, hi, cfg->reps);
        }
    }
}

static void print_load(int li, const config *cfg)
{
    double load = cfg->loads[li], mg1, mg2;

    model_means(load, &mg1, &mg2);
    printf("\n### load %.2f: %.1fk arrivals/s, %d runs x %zu jobs (+%zu warm-up) per scheduler\n\n",
           load, load * ROUTEES / MEAN_US * 1e3, cfg->reps, cfg->jobs, cfg->warmup);
    printf("Model mean sojourn: central M/G/2 ~%.1f us (Lee-Longton), "
           "per-routee M/G/1 %.1f us (Pollaczek-Khinchine; random routing).\n\n", mg2, mg1);
    print_ratio_table(li, cfg);
    print_detail_table(li, cfg);
    print_sim_table(li, cfg);
    csv_load(li, cfg);
    fflush(stdout);
}

static void print_verdict(const config *cfg)
{
    for (int li = 0; li < cfg->nloads; li++) {
        double lo, hi, r;
        if (fabs(cfg->loads[li] - TARGET_LOAD) > 1e-9 || !cfg->enabled[V_SM_STEAL])
            continue;
        r = ratio_stat(li, V_SM_STEAL, cfg->reps, S_P99, &lo, &hi);
        printf("\nTarget: smallest-mailbox + steal p99 <= %.2fx the central queue at load %.2f: "
               "%.2fx (runs %.2f-%.2f; ratio of the medians %.2fx) -> %s", TARGET_P99_RATIO,
               TARGET_LOAD, r, lo, hi,
               median_stat(li, V_SM_STEAL, cfg->reps, S_P99) /
                   median_stat(li, V_CENTRAL, cfg->reps, S_P99),
               r <= TARGET_P99_RATIO ? "MET" : "NOT MET");
        if (r > TARGET_P99_RATIO)
            printf(" (%.0f%% above the target)", 100 * (r / TARGET_P99_RATIO - 1));
        {
            char cas[64], metric[64];
            snprintf(cas, sizeof cas, "target: %s@%.2f", variants[V_SM_STEAL].key, cfg->loads[li]);
            snprintf(metric, sizeof metric, "p99 ratio to central (target <= %.2f)", TARGET_P99_RATIO);
            bench_csv_row("sojourn", cas, metric, "x", r, lo, hi, cfg->reps);
        }
        printf("\n        the same policy with zero overhead (simulated): %.2fx\n",
               ratio_of(simulated, li, V_SM_STEAL, cfg->reps, S_P99, NULL, NULL));
    }
}

/* , "<key>_truncated": ..., "<key>": [[job, us], ...] */
static void write_list(FILE *f, const char *key, const stall_list *l)
{
    fprintf(f, ", \"%s_truncated\": %s, \"%s\": [", key, l->truncated ? "true" : "false", key);
    for (size_t i = 0; i < l->n; i++)
        fprintf(f, "%s[%u, %.1f]", i ? ", " : "", l->job[i], (double)l->extra_us[i]);
    fputs("]", f);
}

static void json_cell(FILE *f, int li, enum variant v, const config *cfg)
{
    fprintf(f, "    {\"load\": %.3f, \"scheduler\": \"%s\", \"runs_redone\": %d, \"median\": {",
            cfg->loads[li], variants[v].key, redone[li][v]);
    for (int s = 0; s < NSTAT; s++)
        fprintf(f, "%s\"%s\": %.4g", s ? ", " : "", stat_keys[s], median_stat(li, v, cfg->reps, s));
    fprintf(f, "},\n     \"ratio_to_central\": {");
    for (int s = S_MEAN; s <= S_P999; s++)
        fprintf(f, "%s\"%s\": %.4f", s ? ", " : "", stat_keys[s],
                ratio_stat(li, v, cfg->reps, s, NULL, NULL));
    fprintf(f, "},\n     \"simulated_median\": ");
    for (int s = S_MEAN; s <= S_P999; s++)
        fprintf(f, "%s\"%s\": %.4g%s", s ? ", " : "{", stat_keys[s],
                median_of(simulated, li, v, cfg->reps, s), s == S_P999 ? "}" : "");
    fprintf(f, ",\n     \"runs\": [");
    for (int r = 0; r < cfg->reps; r++) {
        fprintf(f, "%s{", r ? ", " : "");
        const stall_list *l = &stalls[li][v][r];
        for (int s = 0; s < NSTAT; s++)
            fprintf(f, "%s\"%s\": %.4g", s ? ", " : "", stat_keys[s], results[li][v][r][s]);
        /* Last in the object: the [job index, us] lists. */
        write_list(f, "stalls", l);
        fprintf(f, ", \"late_base_us\": %.3f", late_base_us[li][v][r]);
        write_list(f, "late", &lates[li][v][r]);
        write_list(f, "wakes", &wakes[li][v][r]);
        fputs("}", f);
    }
    fprintf(f, "]}");
}

static void write_json(const config *cfg, const bench_machine *mach,
                       const bench_calib *cal, const bench_pingpong_result *pp)
{
    FILE *f = fopen(cfg->json, "w");
    bool first = true;

    if (!f) {
        fprintf(stderr, "rp-bench-sojourn: cannot write %s: %s\n", cfg->json, strerror(errno));
        return;
    }
    fprintf(f, "{\n  \"benchmark\": \"sojourn\",\n");
    bench_machine_json(f, mach, "  ");
    fprintf(f, "  \"iters_per_us\": %.2f,\n  \"pingpong_one_way_ns\": %.1f,\n", cal->iters_per_us,
            pp->one_way_ns);
    fprintf(f, "  \"jobs\": %zu, \"warmup\": %zu, \"reps\": %d, \"seed\": %llu,\n", cfg->jobs,
            cfg->warmup, cfg->reps, (unsigned long long)cfg->seed);
    fprintf(f, "  \"tbb_submit_policy\": \"%s\",\n", cfg->tbb_other ? "other" : "fifo");
    fprintf(f, "  \"generator\": \"%s\", \"hooks\": %s, \"spin_us\": %lld,\n  \"cells\": [\n",
            gen_names[cfg->gen], cfg->hooks ? "true" : "false", (long long)(cfg->spin_ns / 1000));
    for (int li = 0; li < cfg->nloads; li++)
        for (int v = 0; v < V_COUNT; v++) {
            if (!cfg->enabled[v])
                continue;
            fputs(first ? "" : ",\n", f);
            json_cell(f, li, v, cfg);
            first = false;
        }
    fprintf(f, "\n  ]\n}\n");
    fclose(f);
}

/* ---- setup ---- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rp-bench-sojourn [options]\n"
        "  Sojourn time (scheduled arrival -> completion) of an open-loop Poisson\n"
        "  workload, 90%% 1 us / 10%% 100 us CPU jobs, on 2 routees, per router,\n"
        "  as ratios to one central FIFO queue with 2 workers (M/G/2).\n"
        "  --loads L,L,...   offered loads, fractions or percents (default 0.5,0.8,0.9)\n"
        "  --jobs N          measured jobs per run (default 150000)\n"
        "  --warmup N        unmeasured jobs at the start of each run (default jobs/10)\n"
        "  --reps N          runs per scheduler and load, 1..%d (default 9)\n"
        "  --quick           50000 jobs, 3 runs (~30 s)\n"
        "  --seed N          workload seed (default 1)\n"
        "  --variants LIST   comma list of rr,rr-steal,random,sm,sm-steal,tbb (central\n"
        "                    always runs; default all built in; tbb: oneTBB 2-worker\n"
        "                    task_arena, when built with libtbb-dev)\n"
        "  --gen MODE        how arrivals are submitted (default idle):\n"
        "                    idle:  a SCHED_IDLE generator per CPU, sched_yield loop,\n"
        "                           and routees submit the due arrivals when a job ends\n"
        "                    spin:  normal-priority generator, PAUSE loop, alone\n"
        "                    yield: normal-priority generator, sched_yield loop, alone\n"
        "  --no-hooks        with --gen idle: routees do not submit arrivals\n"
        "  --max-foreign PCT redo a run when other processes used more than PCT%% of\n"
        "                    the machine during it (default 5; 100 disables)\n"
        "  --max-stall-ms N  redo a run in which a job was interrupted N ms or more\n"
        "                    (the VM froze; default 10)\n"
        "  --retries N       at most N redos per run (default 3)\n"
        "  --no-pin          do not pin worker i (routee or central) to CPU i\n"
        "  --tbb-submit P    policy of a --gen idle generator while it submits to tbb:\n"
        "                    fifo (default, as for every scheduler) or other (SCHED_OTHER:\n"
        "                    oneTBB's enqueue takes spin locks, and a SCHED_FIFO thread\n"
        "                    spinning on one held by a worker of its CPU starves it until\n"
        "                    RT throttling, ~50 ms; see the top of bench/sojourn.c)\n"
        "  --central-wake W  how the central queue wakes a worker: sem (default, a\n"
        "                    semaphore per worker), signal or broadcast (condvar)\n"
        "  --spin-us N       sleep when the next arrival is further away (default 50)\n"
        "  --idle-spin-us N  the pools' rp_pool_options.idle_spin_us, 0..%u (default:\n"
        "                    the pool's automatic choice, 0 on 2 CPUs for 2 routees)\n"
        "  --json FILE       also write the results as JSON, with each run's\n"
        "                    interrupted jobs, late submissions and late wake-ups\n"
        "                    (what rp-bench-sim --validate replays)\n"
        "  --help            this text\n"
        "Exit status: 0 ok, 1 runtime failure, 2 bad command line.\n", MAX_REPS,
        (unsigned)RP_IDLE_SPIN_US_MAX);
}

static void parse_loads(config *cfg, const char *s)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof buf, "%s", s);
    cfg->nloads = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        double l = strtod(t, &end);
        if (l > 1.0)
            l /= 100.0; /* given in percent */
        if (*end != '\0' || !(l > 0.0 && l < 1.0) || cfg->nloads == MAX_LOADS) {
            fprintf(stderr, "--loads: expected up to %d loads in (0,1) or (1,100) percent (got '%s')\n",
                    MAX_LOADS, s);
            exit(2);
        }
        cfg->loads[cfg->nloads++] = l;
    }
    if (cfg->nloads == 0) {
        fprintf(stderr, "--loads: empty list\n");
        exit(2);
    }
}

static void parse_variants(config *cfg, const char *s)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof buf, "%s", s);
    memset(cfg->enabled, 0, sizeof cfg->enabled);
    cfg->enabled[V_CENTRAL] = true;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int v = 0;
        while (v < V_COUNT && strcmp(t, variants[v].key) != 0)
            v++;
        if (v == V_COUNT) {
            fprintf(stderr, "--variants: unknown '%s' (rr, rr-steal, random, sm, sm-steal, tbb)\n", t);
            exit(2);
        }
#ifndef RP_BENCH_HAVE_TBB
        if (v == V_TBB) {
            fprintf(stderr, "--variants: tbb is not built in (apt-get install libtbb-dev, reconfigure)\n");
            exit(2);
        }
#endif
        cfg->enabled[v] = true;
    }
}

static int parse_name(const char *opt, const char *v, const char *const *names, int n)
{
    for (int k = 0; k < n; k++)
        if (!strcmp(v, names[k]))
            return k;
    fprintf(stderr, "%s: unknown value '%s' (see --help)\n", opt, v);
    exit(2);
}

static void parse_gen(config *cfg, const char *g)
{
    cfg->gen = (gen_mode)parse_name("--gen", g, gen_names, 3);
    cfg->hooks = cfg->gen == GEN_IDLE;
}

static const char *opt_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s needs a value (see --help)\n", argv[*i]);
        exit(2);
    }
    return argv[++*i];
}

static void parse_one(config *cfg, int argc, char **argv, int *i, bool *warm_set)
{
    const char *a = argv[*i];

    if (!strcmp(a, "--quick"))
        return; /* handled first */
    if (!strcmp(a, "--loads"))
        parse_loads(cfg, opt_value(argc, argv, i));
    else if (!strcmp(a, "--jobs"))
        cfg->jobs = bench_parse_u64(a, opt_value(argc, argv, i), 1000, 50000000);
    else if (!strcmp(a, "--warmup"))
        cfg->warmup = bench_parse_u64(a, opt_value(argc, argv, i), 0, 50000000), *warm_set = true;
    else if (!strcmp(a, "--reps"))
        cfg->reps = (int)bench_parse_u64(a, opt_value(argc, argv, i), 1, MAX_REPS);
    else if (!strcmp(a, "--seed"))
        cfg->seed = bench_parse_u64(a, opt_value(argc, argv, i), 0, UINT64_MAX);
    else if (!strcmp(a, "--variants"))
        parse_variants(cfg, opt_value(argc, argv, i));
    else if (!strcmp(a, "--spin-us"))
        cfg->spin_ns = (int64_t)bench_parse_u64(a, opt_value(argc, argv, i), 0, 1000000) * 1000;
    else if (!strcmp(a, "--json"))
        cfg->json = opt_value(argc, argv, i);
    else if (!strcmp(a, "--max-foreign"))
        cfg->max_foreign = (double)bench_parse_u64(a, opt_value(argc, argv, i), 1, 100) / 100.0;
    else if (!strcmp(a, "--max-stall-ms"))
        cfg->max_stall_us = 1000.0 * (double)bench_parse_u64(a, opt_value(argc, argv, i), 1, 100000);
    else if (!strcmp(a, "--retries"))
        cfg->retries = (int)bench_parse_u64(a, opt_value(argc, argv, i), 0, 100);
    else if (!strcmp(a, "--central-wake"))
        cfg->central_wake = parse_name(a, opt_value(argc, argv, i), wake_names, 3);
    else if (!strcmp(a, "--tbb-submit"))
        cfg->tbb_other = parse_name(a, opt_value(argc, argv, i), tbb_submit_names, 2) == 1;
    else if (!strcmp(a, "--no-pin"))
        cfg->pin = false;
    else if (!strcmp(a, "--idle-spin-us"))
        g_idle_spin_us = (unsigned)bench_parse_u64(a, opt_value(argc, argv, i), 0, RP_IDLE_SPIN_US_MAX);
    else if (!strcmp(a, "--no-hooks"))
        cfg->hooks = false;
    else if (!strcmp(a, "--gen"))
        parse_gen(cfg, opt_value(argc, argv, i));
    else {
        fprintf(stderr, "unknown option '%s' (see --help)\n", a);
        exit(2);
    }
}

static void parse_args(config *cfg, int argc, char **argv)
{
    bool warm_set = false;

    *cfg = (config){.loads = {0.5, 0.8, 0.9}, .nloads = 3, .jobs = 150000, .reps = 9,
                    .seed = 1, .spin_ns = 50000, .gen = GEN_IDLE, .hooks = true,
                    .max_foreign = 0.05, .retries = 3, .pin = true, .max_stall_us = 10000};
    for (int v = 0; v < V_COUNT; v++)
        cfg->enabled[v] = true;
#ifndef RP_BENCH_HAVE_TBB
    cfg->enabled[V_TBB] = false;
#endif
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(argv[i], "--quick"))
            cfg->jobs = 50000, cfg->reps = 3;
    }
    for (int i = 1; i < argc; i++)
        parse_one(cfg, argc, argv, &i, &warm_set);
    /* --no-hooks wins over the hooks --gen idle turns on, in any order. */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--no-hooks"))
            cfg->hooks = false;
    if (!warm_set)
        cfg->warmup = cfg->jobs / 10;
}

static void alloc_buffers(buffers *b, workload *w, size_t n)
{
    b->jobs = aligned_alloc(64, n * sizeof *b->jobs);
    b->queue = malloc(n * sizeof *b->queue);
    b->late = malloc(n * sizeof *b->late);
    b->by_routee = malloc(n);
    b->idle_wait = malloc(n * sizeof *b->idle_wait);
    b->scratch = malloc(n * sizeof *b->scratch);
    for (size_t k = 0; k < ROUTEES; k++)
        b->ring[k] = malloc(n * sizeof *b->ring[k]);
    b->order = malloc(n * sizeof *b->order);
    w->n = n;
    w->offset = malloc(n * sizeof *w->offset);
    w->is_long = malloc(n);
    if (!b->jobs || !b->queue || !b->late || !b->by_routee || !b->idle_wait || !b->scratch || !b->ring[0] || !b->ring[1] ||
        !b->order || !w->offset || !w->is_long) {
        fprintf(stderr, "rp-bench-sojourn: out of memory for %zu jobs\n", n);
        exit(1);
    }
    /* Touch every page now, not during the first timed run. */
    memset(b->jobs, 0, n * sizeof *b->jobs);
    memset(b->queue, 0, n * sizeof *b->queue);
    memset(b->late, 0, n * sizeof *b->late);
    memset(b->by_routee, 0, n);
    memset(b->idle_wait, 0, n * sizeof *b->idle_wait);
    memset(b->scratch, 0, n * sizeof *b->scratch);
}

/* Median measured duration of a job of `iters` iterations, in us. */
static double measure_job_us(uint64_t iters, int count)
{
    double d[512];
    job j = {.iters = iters};

    if (count > 512)
        count = 512;
    for (int i = 0; i < count; i++) {
        spin_job(&j);
        d[i] = (double)(j.done - j.start) / 1e3;
    }
    return bench_median(d, (size_t)count);
}

static void print_wake_latency(void)
{
    bench_wake_result wr;

    if (bench_wake_latency(&wr, 1000, 200) == 0)
        printf("# wake-up:     %.1f us p50, %.1f us p99: FUTEX_WAKE to a thread asleep on the "
               "other CPU running (%d samples, 200 us apart)\n", wr.p50_us, wr.p99_us, wr.samples);
}

static void preamble(const config *cfg, bench_machine *m, bench_calib *cal,
                     bench_pingpong_result *pp)
{
    bench_machine_get(m);
    printf("# rp-bench-sojourn (routepool %s)\n", rp_version());
    bench_machine_print(stdout, m);
    if (bench_pingpong(pp, 200000, 5) == 0)
        printf("# ping-pong:   %.1f ns one way, cache line between CPU %d and CPU %d "
               "(median of 5; min %.1f, max %.1f)\n", pp->one_way_ns, pp->cpu_a, pp->cpu_b,
               pp->min_ns, pp->max_ns);
    print_wake_latency();
    bench_calibrate(cal, 300, 21);
    iters_short = (uint64_t)(cal->iters_per_us * SHORT_US + 0.5);
    iters_long = (uint64_t)(cal->iters_per_us * LONG_US + 0.5);
    printf("# spin loop:   %.1f iterations/us (fastest of %d trials; median %.1f)\n",
           cal->iters_per_us, cal->trials, cal->median_per_us);
    printf("# job check:   1 us job takes %.2f us, 100 us job takes %.1f us (medians, "
           "incl. two clock reads)\n", measure_job_us(iters_short, 500),
           measure_job_us(iters_long, 200));
    printf("# generator:   --gen %s: %s, %s for arrivals < %lld us away, sleeps "
           "otherwise (timer slack 1 ns); routees submit due arrivals: %s\n",
           gen_names[cfg->gen],
           cfg->gen == GEN_IDLE ? "one thread pinned per CPU, SCHED_IDLE (SCHED_FIFO while submitting)"
                                 : "one SCHED_OTHER thread",
           cfg->gen == GEN_SPIN ? "PAUSE loop" : "sched_yield loop",
           (long long)(cfg->spin_ns / 1000), cfg->hooks ? "yes" : "no");
    printf("# routees:     %u, %s, idle spin %s; stats are medians of %d runs; ratios are "
           "medians of per-run ratios to the central queue\n", ROUTEES,
           cfg->pin ? "worker i pinned to CPU i (pin_cpus)" : "not pinned",
           g_idle_spin_us == RP_IDLE_SPIN_US_AUTO ? "automatic" : "as --idle-spin-us", cfg->reps);
#ifdef RP_BENCH_HAVE_TBB
    printf("# tbb:         %s, task_arena of %u workers%s; arrivals: task_arena::enqueue("
           "task_group::defer) from a generator (submitting under SCHED_%s), task_group::run "
           "from a worker\n", peer_tbb_version(), ROUTEES,
           cfg->pin ? " pinned like the routees" : "", cfg->tbb_other ? "OTHER" : "FIFO");
#else
    printf("# tbb:         not built in (apt-get install libtbb-dev, reconfigure)\n");
#endif
    printf("# central:     mutex-protected FIFO, workers woken by %s\n",
           cfg->central_wake == WAKE_SEM ? "a semaphore each (see --help)"
           : cfg->central_wake == WAKE_SIGNAL ? "pthread_cond_signal" : "pthread_cond_broadcast");
    printf("# noise guard: a run is done again (at most %d times) when other processes used "
           ">= %.0f%% of the machine during it or a job was interrupted >= %.0f ms\n",
           cfg->retries, 100 * cfg->max_foreign, cfg->max_stall_us / 1e3);
    fflush(stdout);
}

/* run_one(), done again (up to cfg->retries times, after waiting for the
 * machine to calm down) when other processes took more than
 * cfg->max_foreign of the machine during the run, or a job was interrupted
 * for cfg->max_stall_us or more (the VM was frozen: measured up to 55 ms,
 * both vCPUs at once). */
static void run_guarded(double *st, const config *cfg, enum variant v, const workload *w,
                        const buffers *b, uint64_t seed, int *redo_count)
{
    for (int tries = 0;; tries++) {
        bench_cpu_snap before, after;
        bench_cpu_snap_take(&before);
        run_one(st, cfg, v, w, b, seed);
        bench_cpu_snap_take(&after);
        st[S_FOREIGN] = bench_foreign_share(&before, &after);
        if ((st[S_FOREIGN] < cfg->max_foreign && st[S_STALLMAX] < cfg->max_stall_us) ||
            tries == cfg->retries)
            return;
        ++*redo_count;
        fprintf(stderr, "\n%s: others used %.0f%% of the machine, longest stall %.1f ms; "
                "waiting, then again\n", variants[v].label, 100 * st[S_FOREIGN],
                st[S_STALLMAX] / 1e3);
        bench_wait_quiet(cfg->max_foreign, 30000);
    }
}

/* Append (job at, ns) to l; false when l is full (then it is truncated). */
static bool list_add(stall_list *l, size_t at, int64_t ns)
{
    if (l->n == l->max) {
        l->truncated = true;
        return false;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        uint32_t *idx = realloc(l->job, cap * sizeof *idx);
        float *ex = idx ? realloc(l->extra_us, cap * sizeof *ex) : NULL;

        if (idx)
            l->job = idx;
        if (!ex) {
            fprintf(stderr, "rp-bench-sojourn: out of memory\n");
            exit(1);
        }
        l->extra_us = ex;
        l->cap = cap;
    }
    l->job[l->n] = (uint32_t)at;
    l->extra_us[l->n++] = (float)((double)ns / 1e3);
    return true;
}

/* The run's interruptions into *l (replacing what it held). */
static void record_stalls(stall_list *l, const workload *w, const buffers *b)
{
    *l = (stall_list){.job = l->job, .extra_us = l->extra_us, .cap = l->cap,
                      .max = STALL_MAX_EVENTS};
    for (size_t i = 0; i < w->n; i++) {
        const job *j = &b->jobs[i];
        int64_t extra = j->done - j->start - (int64_t)((w->is_long[i] ? LONG_US : SHORT_US) * 1e3);
        if (extra > STALL_NS && !list_add(l, i, extra))
            break;
    }
}

/* The run's late wake-ups into *l. */
static void record_wakes(stall_list *l, const workload *w, const buffers *b)
{
    *l = (stall_list){.job = l->job, .extra_us = l->extra_us, .cap = l->cap,
                      .max = WAKE_MAX_EVENTS};
    for (size_t i = 0; i < w->n; i++)
        if (b->idle_wait[i] > WAKE_NS && !list_add(l, i, b->idle_wait[i]))
            break;
}

/* The run's late generator submissions into *l, the mean of the
 * generators' others into *base. */
static void record_lates(stall_list *l, double *base, const workload *w, const buffers *b)
{
    double sum = 0;
    size_t n = 0;

    *l = (stall_list){.job = l->job, .extra_us = l->extra_us, .cap = l->cap,
                      .max = LATE_MAX_EVENTS};
    for (size_t i = 0; i < w->n; i++) {
        if (b->by_routee[i])
            continue;
        if (b->late[i] <= LATE_NS || !list_add(l, i, b->late[i])) {
            sum += (double)(b->late[i] > 0 ? b->late[i] : 0);
            n++;
        }
    }
    *base = n ? sum / (double)n / 1e3 : 0;
}

static void run_load(int li, const config *cfg, workload *w, const buffers *b)
{
    for (int r = 0; r < cfg->reps; r++) {
        uint64_t seed = cfg->seed * 1000003u + (uint64_t)li * 1009u + (uint64_t)r;
        workload_draw(w, cfg->loads[li], seed);
        for (enum variant v = V_CENTRAL; v < V_COUNT; v++)
            simulate(simulated[li][v][r], v, w, b, cfg->warmup, seed);
        /* Rotate the order so no scheduler always runs first. */
        for (int k = 0; k < V_COUNT; k++) {
            enum variant v = (enum variant)((k + r) % V_COUNT);
            if (!cfg->enabled[v])
                continue;
            run_guarded(results[li][v][r], cfg, v, w, b, seed, &redone[li][v]);
            if (cfg->json) {
                record_stalls(&stalls[li][v][r], w, b);
                record_lates(&lates[li][v][r], &late_base_us[li][v][r], w, b);
                record_wakes(&wakes[li][v][r], w, b);
            }
            fprintf(stderr, "\rload %.2f run %d/%d %-26s p99 %8.1f us", cfg->loads[li], r + 1,
                    cfg->reps, variants[v].label, results[li][v][r][S_P99]);
        }
    }
    fprintf(stderr, "\r%-72s\r", "");
}

int main(int argc, char **argv)
{
    config cfg;
    bench_machine mach;
    bench_calib cal;
    bench_pingpong_result pp = {0};
    workload w;
    buffers b;
    int64_t t0 = bench_now_ns();

    parse_args(&cfg, argc, argv);
    /* The generator sleeps with absolute deadlines; the default 50 us slack
     * would make every sleep late by that much. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    alloc_buffers(&b, &w, cfg.jobs + cfg.warmup);
    preamble(&cfg, &mach, &cal, &pp);
    for (int li = 0; li < cfg.nloads; li++) {
        run_load(li, &cfg, &w, &b);
        print_load(li, &cfg);
    }
    print_verdict(&cfg);
    printf("\n# total time %.0f s\n", (double)(bench_now_ns() - t0) / 1e9);
    if (cfg.json)
        write_json(&cfg, &mach, &cal, &pp);
    free(b.jobs), free(b.queue), free(b.late), free(b.by_routee), free(b.idle_wait), free(b.scratch);
    for (size_t k = 0; k < ROUTEES; k++)
        free(b.ring[k]);
    free(b.order);
    free(w.offset), free(w.is_long);
    for (int li = 0; li < MAX_LOADS; li++)
        for (int v = 0; v < V_COUNT; v++)
            for (int r = 0; r < MAX_REPS; r++) {
                free(stalls[li][v][r].job), free(stalls[li][v][r].extra_us);
                free(lates[li][v][r].job), free(lates[li][v][r].extra_us);
                free(wakes[li][v][r].job), free(wakes[li][v][r].extra_us);
            }
    return 0;
}
