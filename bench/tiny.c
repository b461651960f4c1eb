/* SPDX-License-Identifier: MIT */
/*
 * rp-bench-tiny - cost of tiny jobs: S submitting threads (1, then 2) hand
 * N empty jobs to 2 workers; ns per job from the first submit until every
 * job has run.
 *
 * Systems, each measured in the same process, repetitions interleaved so
 * that the machine's noise falls on all of them alike:
 *   routepool: the pool's round-robin router with stealing off and on (the
 *     defaults), and routers made with rp_router_create() on a pool:
 *     random, smallest-mailbox, smallest-mailbox + steal;
 *   routepool batch submit (rp_pool_submit_batch, 64 jobs a call);
 *   oneTBB (libtbb-dev): each submitter joins a task_arena of 2 workers
 *     (plus one reserved slot per submitter), task_group::run()s its jobs
 *     and task_group::wait()s - oneTBB's idiom, the reference of the ratio
 *     column and of issue 7's target; MARKED: the submitter runs jobs
 *     itself while it waits (on this machine almost all of them; the share
 *     is printed), so it is largely not a handoff.  And, as a true handoff
 *     to the 2 workers, "tbb-enqueue": submitters outside the arena,
 *     task_arena::enqueue(task_group::defer(job)) (bench/peer_tbb.cpp);
 *   OpenMP tasks (libgomp): `omp task` in a region of S + 2 threads; MARKED:
 *     libgomp runs a task undeferred in the creating thread once more than
 *     64 x threads are pending, which flatters it; the share of jobs that
 *     ran on a submitter is printed (bench/peer_omp.c);
 *   a mutex + condvar pool: one shared array ring, 2 workers, a signal only
 *     when a worker waits - the competent textbook baseline (peer_mutex.c);
 *   C-Thread-Pool (cthreadpool-dev: one mutex-protected queue, a malloc per
 *     job; peer_thpool.c) and libuv's threadpool (uv_queue_work;
 *     UV_THREADPOOL_SIZE=2; the loop thread runs the after-work callbacks;
 *     one submitter only: uv_queue_work belongs to the loop's thread;
 *     peer_uv.c), when found;
 *   the FLOOR (peer_floor.c): raw handoffs to consumers that spin, with
 *     nothing around them - ck_fifo_mpmc from S producers to S consumers
 *     (1 -> 1, then 2 -> 2: as many threads as the pools have), and ck_ring
 *     SPSC, one ring per producer/consumer pair.  Its consumers are woken
 *     before the clock starts; the pools' workers start asleep.
 * Each system gets one untimed warm-up round, then --reps timed rounds, the
 * order rotated every round.  The table shows the median ns per job, the
 * submit-only share, and ratios to oneTBB and to the ck_fifo_mpmc floor
 * (medians of the per-round ratios: rounds of one repetition ran
 * back to back).  Then the targets of issue 7, met or not, and issue 18's
 * targets 1-3 (stealing's tax, the default against each C peer, batches
 * against 25 ns or the ck_ring floor) with the placement they ran on: the
 * ping-pong before the first mode and after each mode, and the load
 * average; under a target not met, the floors of the same run.
 *
 * A job writes one byte of its own cache-line record, so the benchmark can
 * check that every job ran exactly once without a shared counter (which
 * would measure cache-line contention instead of the pool).  A round
 * during which other processes used 5% or more of the machine is done
 * again (at most 3 times).  Every printed number is also a CSV row
 * (bench_csv_row; bench/run sets RP_BENCH_CSV).
 *
 * Public headers only (STYLE.md).
 */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "peer_floor.h"
#include "peer_mutex.h"
#include "routepool/routepool.h"

#ifdef RP_BENCH_HAVE_THPOOL
#include "peer_thpool.h"
#endif
#ifdef RP_BENCH_HAVE_LIBUV
#include "peer_uv.h"
#endif
#ifdef RP_BENCH_HAVE_TBB
#include "peer_tbb.h"
#endif
#ifdef RP_BENCH_HAVE_OMP
#include "peer_omp.h"
#endif

#define WORKERS 2
#define MAX_SUB 2
#define MAX_REPS 51
#define MAX_FOREIGN 0.05 /* share of the machine others may use during a round */
#define RETRIES 3
#define QUIET_BUDGET_S 60 /* most time spent waiting for calm in a run (--quick: 10) */
#define BATCH 64         /* jobs per rp_pool_submit_batch() call */
/* Issue 7's targets for routepool. */
#define TARGET_VS_TBB 0.75
#define TARGET_VS_FLOOR 1.30
/* Issue 18's targets 1-3 (print_targets18). */
#define T18_TAX 1.15       /* 1. default <= 1.15x the same pool, steal off */
#define T18_VS_PEER_1 0.75 /* 2. default <= 0.75x each C peer, 1 submitter */
#define T18_VS_PEER_2 1.00 /*    and <= 1.0x with 2 submitters */
#define T18_BATCH_NS 25.0  /* 3. batches <= 25 ns/job, or <= 1.0x the ck_ring floor */

#define LAYOUT_LEN 24 /* "SR|SR"-like labels (layout_label) */
#define WHERE_EVERY 509 /* routepool jobs: one in this many notes its CPU (odd: round-robin alternates) */

/* One job's record: its own cache line. */
typedef struct rec {
    _Alignas(64) unsigned char ran;
} rec;

typedef struct peer peer;

/*
 * A system under test: start once per mode (S submitters), run rounds,
 * stop.  A round is either the system's own round() or, when that is NULL,
 * the generic one: prepare() (untimed, optional), then S threads submit()
 * a slice each, then wait().
 */
struct peer {
    const char *key, *name;
    const char *mark;   /* caveat marker shown after the name, or NULL */
    int max_sub;        /* most submitters the system supports */
    int (*start)(peer *s, int nsub);
    int (*prepare)(peer *s, size_t n, int nsub);
    void (*submit)(peer *s, int who, rec *recs, size_t n);
    void (*wait)(peer *s);
    void (*round)(peer *s, rec *recs, size_t n, int nsub, int64_t *submit_ns);
    void (*stop)(peer *s);
    void *impl, *aux;
    double extra;       /* OpenMP, oneTBB: share of the last round's jobs run by submitters */
    double ns_per_job[MAX_REPS], submit_per_job[MAX_REPS], extra_per_round[MAX_REPS];
    int redone;         /* rounds done again because others took the machine */
    char layout[MAX_REPS][LAYOUT_LEN]; /* routepool: each round's thread layout */
    bool skip;          /* not in --only */
    bool off;           /* not in this mode (too many submitters) */
};

static rec *g_recs;     /* every round's records (the array the slices index) */
static int64_t g_quiet_budget_ns = (int64_t)QUIET_BUDGET_S * 1000000000;
static int64_t g_quiet_waited_ns;
static void **g_ptrs;   /* g_ptrs[i] = &g_recs[i], the batch API's argument array */

static void die(const char *what)
{
    fprintf(stderr, "rp-bench-tiny: %s\n", what);
    exit(1);
}

static void mark(void *arg)
{
    ((rec *)arg)->ran++;
}

/* ---- the submitter crew: the main thread is submitter 0 ----
 *
 * Helpers sleep on a semaphore between rounds; their wake-up (one futex
 * wake, tens of us) falls inside the timed round, a fraction of a
 * nanosecond per job at the default 200000 jobs, alike for every system.
 */

typedef struct crew {
    void (*fn)(void *ctx, int who);
    void *ctx;
    int64_t end[MAX_SUB];      /* when each submitter finished submitting */
    int cpu[MAX_SUB];          /* the CPU it finished on */
    sem_t go[MAX_SUB], done;
    pthread_t th[MAX_SUB];
    int n;                     /* helper threads started */
    bool stop;
} crew;

static crew g_crew;

static void *crew_helper(void *p)
{
    int who = (int)(intptr_t)p;

    for (;;) {
        while (sem_wait(&g_crew.go[who]) != 0) /* EINTR */
            ;
        if (g_crew.stop)
            return NULL;
        g_crew.fn(g_crew.ctx, who);
        sem_post(&g_crew.done);
    }
}

static void crew_start(int nsub)
{
    sem_init(&g_crew.done, 0, 0);
    for (int k = 1; k < nsub; k++) {
        sem_init(&g_crew.go[k], 0, 0);
        if (pthread_create(&g_crew.th[k], NULL, crew_helper, (void *)(intptr_t)k) != 0)
            die("cannot start a submitter thread");
        g_crew.n = k;
    }
}

static void crew_stop(void)
{
    g_crew.stop = true;
    for (int k = 1; k <= g_crew.n; k++)
        sem_post(&g_crew.go[k]);
    for (int k = 1; k <= g_crew.n; k++) {
        pthread_join(g_crew.th[k], NULL);
        sem_destroy(&g_crew.go[k]);
    }
    sem_destroy(&g_crew.done);
    g_crew = (crew){0};
}

/* Run fn(ctx, who) on submitters 0..nsub-1 at once; return when all did.
 * The posts and waits order the helpers' writes before our reads. */
static void crew_run(int nsub, void (*fn)(void *ctx, int who), void *ctx)
{
    g_crew.fn = fn;
    g_crew.ctx = ctx;
    for (int k = 1; k < nsub; k++)
        sem_post(&g_crew.go[k]);
    fn(ctx, 0);
    for (int k = 1; k < nsub; k++)
        while (sem_wait(&g_crew.done) != 0)
            ;
}

/* Submitter who's share of n records: [lo, hi). */
static void slice_of(size_t n, int nsub, int who, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)who / (size_t)nsub;
    *hi = n * (size_t)(who + 1) / (size_t)nsub;
}

typedef struct round_ctx {
    peer *s;
    rec *recs;
    size_t n;
    int nsub;
} round_ctx;

static void generic_slice(void *p, int who)
{
    const round_ctx *c = p;
    size_t lo, hi;

    slice_of(c->n, c->nsub, who, &lo, &hi);
    c->s->submit(c->s, who, c->recs + lo, hi - lo);
    g_crew.end[who] = bench_now_ns();
    g_crew.cpu[who] = sched_getcpu();
}

static int64_t last_end(int nsub)
{
    int64_t end = g_crew.end[0];

    for (int k = 1; k < nsub && k < MAX_SUB; k++)
        end = g_crew.end[k] > end ? g_crew.end[k] : end;
    return end;
}

static void generic_round(peer *s, rec *recs, size_t n, int nsub, int64_t *submit_ns)
{
    round_ctx c = {.s = s, .recs = recs, .n = n, .nsub = nsub};
    int64_t t0 = bench_now_ns();

    crew_run(nsub, generic_slice, &c);
    *submit_ns = last_end(nsub) - t0;
    s->wait(s);
}

/* ---- routepool ---- */

/*
 * The thread layout of a round: which CPU each routee ran on (one job in
 * WHERE_EVERY notes it in its routee's tally; the routee alone writes its
 * line, read after the round's wait) and where each submitter finished.
 * Stealing's cost depends on it (docs/performance.md): on two CPUs the
 * submitter shares one with a routee ("SR|R"), or the routees share one
 * ("S|RR").
 */
static bench_cpu_tally g_where[WORKERS];

static void rp_fn(rp_job_ctx *ctx, void *arg)
{
    mark(arg);
    if (__builtin_expect(((rec *)arg - g_recs) % WHERE_EVERY == 0, 0)) {
        int r = rp_job_routee(ctx);

        if (r >= 0 && r < WORKERS)
            bench_cpu_note(&g_where[r]);
    }
}

/* The round's layout label (bench_layout_label): the submitters where
 * they finished, each routee on the CPU it ran most of its noted jobs on. */
static void layout_label(int nsub, char *out, size_t len)
{
    int cpu[MAX_SUB + WORKERS];

    for (int t = 0; t < nsub + WORKERS; t++)
        cpu[t] = t < nsub ? g_crew.cpu[t] : bench_cpu_most(&g_where[t - nsub]);
    bench_layout_label(cpu, nsub, WORKERS, out, len);
}

/* A pool of WORKERS routees; with a strategy other than round-robin, also
 * a router made with rp_router_create() (aux), which submit() then uses. */
/* --idle-spin-us: the routepool pools' rp_pool_options.idle_spin_us. */
static unsigned g_idle_spin_us = RP_IDLE_SPIN_US_AUTO;

static int rp_start_with(peer *s, bool steal, bool pin, const rp_strategy *router)
{
    rp_pool_options o;
    rp_router_options ro;
    rp_pool *pool;
    rp_router *r = NULL;

    rp_pool_options_init(&o);
    o.idle_spin_us = g_idle_spin_us;
    o.name = "tiny";
    o.routees = WORKERS;
    o.steal = steal;
    o.pin_cpus = pin;
    o.strategy = rp_strategy_round_robin();
    if (rp_pool_create(&pool, &o) < 0) {
        fprintf(stderr, "rp-bench-tiny: rp_pool_create: %s\n", rp_errmsg());
        return -1;
    }
    rp_router_options_init(&ro);
    if (router)
        ro.strategy = *router;
    if (router && rp_router_create(&r, pool, &ro) < 0) {
        fprintf(stderr, "rp-bench-tiny: rp_router_create: %s\n", rp_errmsg());
        rp_pool_destroy(pool);
        return -1;
    }
    s->impl = pool;
    s->aux = r;
    return 0;
}

static int rp_start_nosteal(peer *s, int nsub)
{
    (void)nsub;
    return rp_start_with(s, false, false, NULL);
}

static int rp_start_steal(peer *s, int nsub)
{
    (void)nsub;
    return rp_start_with(s, true, false, NULL);
}

/* The default pool with rp_pool_options.pin_cpus: routee i on CPU i, the
 * submitters left to the scheduler (docs/performance.md, "Pinning the
 * routees"). */
static int rp_start_pin(peer *s, int nsub)
{
    (void)nsub;
    return rp_start_with(s, true, true, NULL);
}

static int rp_start_random(peer *s, int nsub)
{
    rp_strategy st = rp_strategy_random(1);

    (void)nsub;
    return rp_start_with(s, false, false, &st);
}

static int rp_start_sm(peer *s, int nsub)
{
    rp_strategy st = rp_strategy_smallest_mailbox();

    (void)nsub;
    return rp_start_with(s, false, false, &st);
}

static int rp_start_sm_steal(peer *s, int nsub)
{
    rp_strategy st = rp_strategy_smallest_mailbox();

    (void)nsub;
    return rp_start_with(s, true, false, &st);
}

static void rp_submit(peer *s, int who, rec *recs, size_t n)
{
    (void)who;
    if (s->aux) {
        for (size_t i = 0; i < n; i++)
            if (rp_router_tell(s->aux, rp_fn, &recs[i]) < 0)
                die("rp_router_tell failed");
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (rp_pool_submit(s->impl, rp_fn, &recs[i]) < 0)
            die("rp_pool_submit failed");
}

static void rp_wait(peer *s)
{
    if (rp_pool_wait_idle(s->impl, -1) < 0)
        die("rp_pool_wait_idle failed");
}

static void rp_stop(peer *s)
{
    rp_router_destroy(s->aux);
    rp_pool_destroy(s->impl);
}

/* ---- routepool batch submit ----
 *
 * rp_pool_submit_batch() takes BATCH jobs a call.  The argument array
 * g_ptrs is built once, before anything is timed: a caller with a batch in
 * hand has one.
 */
static void rp_submit_batch(peer *s, int who, rec *recs, size_t n)
{
    void *const *args = (void *const *)&g_ptrs[recs - g_recs];

    (void)who;
    for (size_t i = 0; i < n; i += BATCH) {
        size_t k = n - i < BATCH ? n - i : BATCH;
        if (rp_pool_submit_batch(s->impl, rp_fn, args + i, k) < 0)
            die("rp_pool_submit_batch failed");
    }
}

/* ---- oneTBB ---- */

#ifdef RP_BENCH_HAVE_TBB
static size_t tbb_ran_here[MAX_SUB]; /* jobs each submitter ran itself, last round */

static int tbb_start(peer *s, int nsub)
{
    return peer_tbb_create((peer_tbb **)&s->impl, WORKERS, nsub, NULL);
}

static void tbb_slice(void *p, int who)
{
    const round_ctx *c = p;
    size_t lo, hi;
    int64_t t0 = bench_now_ns(), sub;

    slice_of(c->n, c->nsub, who, &lo, &hi);
    peer_tbb_batch(c->s->impl, mark, (char *)(c->recs + lo), sizeof(rec), hi - lo, &sub,
                   &tbb_ran_here[who]);
    g_crew.end[who] = t0 + sub;
}

static void tbb_round(peer *s, rec *recs, size_t n, int nsub, int64_t *submit_ns)
{
    round_ctx c = {.s = s, .recs = recs, .n = n, .nsub = nsub};
    int64_t t0 = bench_now_ns();
    size_t here = 0;

    crew_run(nsub, tbb_slice, &c);
    *submit_ns = last_end(nsub) - t0;
    for (int k = 0; k < nsub; k++)
        here += tbb_ran_here[k];
    s->extra = (double)here / (double)n;
}

static void tbb_stop(peer *s)
{
    peer_tbb_destroy(s->impl);
}

/* The handoff variant: submitters stay outside the arena and hand each job
 * over with task_arena::enqueue(task_group::defer(job)); the waiter waits
 * outside too, so only the 2 workers run jobs, as in the other pools. */
static int tbbq_start(peer *s, int nsub)
{
    (void)nsub;
    return peer_tbb_create((peer_tbb **)&s->impl, WORKERS, 0, NULL);
}

static void tbbq_submit(peer *s, int who, rec *recs, size_t n)
{
    (void)who;
    for (size_t i = 0; i < n; i++)
        if (peer_tbb_run(s->impl, mark, &recs[i]) != 0)
            die("peer_tbb_run failed");
}

static void tbbq_wait(peer *s)
{
    peer_tbb_wait(s->impl);
}

#define tbbq_stop tbb_stop
#endif

/* ---- OpenMP tasks ---- */

#ifdef RP_BENCH_HAVE_OMP
static int omp_start(peer *s, int nsub)
{
    (void)s, (void)nsub;
    return 0;
}

static void omp_round(peer *s, rec *recs, size_t n, int nsub, int64_t *submit_ns)
{
    size_t on_sub;

    peer_omp_round(mark, (char *)recs, sizeof(rec), n, nsub, WORKERS, submit_ns, &on_sub);
    s->extra = (double)on_sub / (double)n;
}

static void omp_stop(peer *s)
{
    (void)s;
}
#endif

/* ---- mutex + condvar baseline ---- */

static int mtx_start(peer *s, int nsub)
{
    (void)nsub;
    return peer_mutex_create((peer_mutex **)&s->impl, WORKERS);
}

static void mtx_submit(peer *s, int who, rec *recs, size_t n)
{
    (void)who;
    for (size_t i = 0; i < n; i++)
        if (peer_mutex_submit(s->impl, mark, &recs[i]) != 0)
            die("peer_mutex_submit: out of memory");
}

static void mtx_wait(peer *s)
{
    peer_mutex_wait(s->impl);
}

static void mtx_stop(peer *s)
{
    peer_mutex_destroy(s->impl);
}

/* ---- the floor: raw ck_fifo_mpmc and ck_ring SPSC ---- */

static int floor_start(peer *s, int nsub, peer_floor_kind kind)
{
    return peer_floor_create((peer_floor **)&s->impl, kind, nsub, nsub, mark);
}

static int fifo_start(peer *s, int nsub)
{
    return floor_start(s, nsub, PEER_FLOOR_FIFO);
}

static int ring_start(peer *s, int nsub)
{
    return floor_start(s, nsub, PEER_FLOOR_RING);
}

static int floor_prepare(peer *s, size_t n, int nsub)
{
    return peer_floor_begin(s->impl, n / (size_t)nsub + 1);
}

static void floor_submit(peer *s, int who, rec *recs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        peer_floor_push(s->impl, who, &recs[i]);
    peer_floor_end(s->impl, who);
}

static void floor_wait(peer *s)
{
    peer_floor_wait(s->impl);
}

static void floor_stop(peer *s)
{
    peer_floor_destroy(s->impl);
}

/* ---- C-Thread-Pool (peer_thpool.c) ---- */

#ifdef RP_BENCH_HAVE_THPOOL
static int thp_start(peer *s, int nsub)
{
    (void)nsub;
    s->impl = peer_thpool_create(WORKERS);
    return s->impl ? 0 : -1;
}

static void thp_submit(peer *s, int who, rec *recs, size_t n)
{
    (void)who;
    for (size_t i = 0; i < n; i++)
        if (peer_thpool_submit(s->impl, mark, &recs[i]) != 0)
            die("thpool_add_work failed");
}

static void thp_wait(peer *s)
{
    peer_thpool_wait(s->impl);
}

static void thp_stop(peer *s)
{
    peer_thpool_destroy(s->impl);
}
#endif

/* ---- libuv threadpool (peer_uv.c) ---- */

#ifdef RP_BENCH_HAVE_LIBUV
static int uvs_start(peer *s, int nsub)
{
    (void)nsub;
    s->impl = peer_uv_create();
    return s->impl ? 0 : -1;
}

/* Untimed: the requests' memory for n jobs. */
static int uvs_prepare(peer *s, size_t n, int nsub)
{
    (void)nsub;
    return peer_uv_prepare(s->impl, n);
}

static void uvs_round(peer *s, rec *recs, size_t n, int nsub, int64_t *submit_ns)
{
    (void)nsub; /* always 1: max_sub */
    peer_uv_round(s->impl, mark, (char *)recs, sizeof(rec), n, submit_ns);
}

static void uvs_stop(peer *s)
{
    peer_uv_destroy(s->impl);
}
#endif

/* ---- driver ---- */

#define GENERIC(p) .submit = p##_submit, .wait = p##_wait, .stop = p##_stop

static peer peers[] = {
    {.key = "rp-steal", .name = "routepool round-robin, steal on (default)", .max_sub = MAX_SUB,
     .start = rp_start_steal, GENERIC(rp)},
    {.key = "rp", .name = "routepool round-robin, steal off", .max_sub = MAX_SUB,
     .start = rp_start_nosteal, GENERIC(rp)},
    {.key = "rp-random", .name = "routepool random router, steal off", .max_sub = MAX_SUB,
     .start = rp_start_random, GENERIC(rp)},
    {.key = "rp-sm", .name = "routepool smallest-mailbox router, steal off", .max_sub = MAX_SUB,
     .start = rp_start_sm, GENERIC(rp)},
    {.key = "rp-sm-steal", .name = "routepool smallest-mailbox router, steal on",
     .max_sub = MAX_SUB, .start = rp_start_sm_steal, GENERIC(rp)},
    {.key = "rp-batch", .name = "routepool batch submit (64/call), round-robin, steal on",
     .max_sub = MAX_SUB, .start = rp_start_steal, .submit = rp_submit_batch, .wait = rp_wait,
     .stop = rp_stop},
    {.key = "rp-pin", .name = "routepool round-robin, steal on, routees pinned (pin_cpus)",
     .max_sub = MAX_SUB, .start = rp_start_pin, GENERIC(rp)},
    {.key = "rp-batch-pin", .name = "routepool batch submit (64/call), routees pinned (pin_cpus)",
     .max_sub = MAX_SUB, .start = rp_start_pin, .submit = rp_submit_batch, .wait = rp_wait,
     .stop = rp_stop},
#ifdef RP_BENCH_HAVE_TBB
    {.key = "tbb", .name = "oneTBB task_group::run in a task_arena", .mark = "(*)",
     .max_sub = MAX_SUB,
     .start = tbb_start, .round = tbb_round, .stop = tbb_stop},
    {.key = "tbb-enqueue", .name = "oneTBB task_arena::enqueue(task_group::defer), handoff",
     .max_sub = MAX_SUB, .start = tbbq_start, GENERIC(tbbq)},
#endif
#ifdef RP_BENCH_HAVE_OMP
    {.key = "omp", .name = "OpenMP tasks (libgomp)", .mark = "(!)", .max_sub = MAX_SUB,
     .start = omp_start, .round = omp_round, .stop = omp_stop},
#endif
    {.key = "mutex", .name = "mutex + condvar pool (baseline)", .max_sub = MAX_SUB,
     .start = mtx_start, GENERIC(mtx)},
#ifdef RP_BENCH_HAVE_THPOOL
    {.key = "thpool", .name = "C-Thread-Pool (cthreadpool-dev)", .max_sub = MAX_SUB,
     .start = thp_start, GENERIC(thp)},
#endif
#ifdef RP_BENCH_HAVE_LIBUV
    {.key = "libuv", .name = "libuv threadpool (uv_queue_work)", .max_sub = 1,
     .start = uvs_start, .prepare = uvs_prepare, .round = uvs_round, .stop = uvs_stop},
#endif
    {.key = "floor-fifo", .name = "FLOOR ck_fifo_mpmc, S producers -> S consumers",
     .max_sub = MAX_SUB, .start = fifo_start, .prepare = floor_prepare, GENERIC(floor)},
    {.key = "floor-ring", .name = "FLOOR ck_ring SPSC, one ring per producer/consumer pair",
     .max_sub = MAX_SUB, .start = ring_start, .prepare = floor_prepare, GENERIC(floor)},
};
#define NPEERS (sizeof peers / sizeof peers[0])

static bool active(const peer *s)
{
    return !s->skip && !s->off;
}

/* The peer with this key when it runs in this mode, or NULL. */
static peer *find(const char *key)
{
    for (size_t k = 0; k < NPEERS; k++)
        if (!strcmp(peers[k].key, key) && active(&peers[k]))
            return &peers[k];
    return NULL;
}

static bool is_routepool(const peer *s)
{
    return strncmp(s->key, "rp", 2) == 0;
}

/* One round; false when a job ran other than exactly once. */
static bool one_round(peer *s, rec *recs, size_t n, int nsub, int rep)
{
    int64_t t0, submit_ns;

    for (size_t i = 0; i < n; i++)
        recs[i].ran = 0;
    if (s->prepare && s->prepare(s, n, nsub) != 0)
        die("out of memory preparing a round");
    memset(g_where, 0, sizeof g_where);
    t0 = bench_now_ns();
    if (s->round)
        s->round(s, recs, n, nsub, &submit_ns);
    else
        generic_round(s, recs, n, nsub, &submit_ns);
    t0 = bench_now_ns() - t0;
    if (rep >= 0) {
        s->ns_per_job[rep] = (double)t0 / (double)n;
        s->submit_per_job[rep] = (double)submit_ns / (double)n;
        s->extra_per_round[rep] = s->extra;
        if (is_routepool(s))
            layout_label(nsub, s->layout[rep], sizeof s->layout[rep]);
    }
    for (size_t i = 0; i < n; i++)
        if (recs[i].ran != 1)
            return false;
    return true;
}

/* A timed round, done again (at most RETRIES times, after waiting for calm)
 * when other processes used MAX_FOREIGN or more of the machine meanwhile.
 * The waits for calm share one budget per run, so that a machine that stays
 * busy cannot stretch the run without bound: past it, rounds are redone at
 * once. */
static void guarded_round(peer *s, rec *recs, size_t n, int nsub, int rep)
{
    for (int tries = 0;; tries++) {
        bench_cpu_snap before, after;
        double foreign;
        bench_cpu_snap_take(&before);
        if (!one_round(s, recs, n, nsub, rep))
            die("a job was lost or ran twice");
        bench_cpu_snap_take(&after);
        foreign = bench_foreign_share(&before, &after);
        if (foreign < MAX_FOREIGN || tries == RETRIES)
            return;
        s->redone++;
        if (g_quiet_waited_ns < g_quiet_budget_ns) {
            int64_t left_ms = (g_quiet_budget_ns - g_quiet_waited_ns) / 1000000, t0 = bench_now_ns();
            bench_wait_quiet(MAX_FOREIGN, left_ms < 30000 ? (int)left_ms : 30000);
            g_quiet_waited_ns += bench_now_ns() - t0;
        }
    }
}

/* ---- results ---- */

typedef struct summary {
    double med, lo, hi;
} summary;

static summary summarize(const double *x, int reps)
{
    double v[MAX_REPS];
    summary s;

    memcpy(v, x, (size_t)reps * sizeof *v);
    s.med = bench_median(v, (size_t)reps); /* sorts v */
    s.lo = v[0];
    s.hi = v[reps - 1];
    return s;
}

/* Per-round ratios of s to base (same repetition), summarized; false when
 * base does not run in this mode. */
static bool ratio_to(summary *out, const peer *s, const peer *base, int reps)
{
    double v[MAX_REPS];

    if (!base)
        return false;
    for (int r = 0; r < reps; r++)
        v[r] = s->ns_per_job[r] / base->ns_per_job[r];
    *out = summarize(v, reps);
    return true;
}

static const char *subs_label(int nsub)
{
    return nsub == 1 ? "1 submitter" : "2 submitters";
}

/* "<name>, <k> submitter(s)": the CSV case of a system in a mode. */
static const char *csv_case(char *buf, size_t len, const char *name, int nsub)
{
    snprintf(buf, len, "%s, %s", name, subs_label(nsub));
    return buf;
}

static void csv_summary(const char *cas, const char *metric, const char *unit, summary s, int reps)
{
    bench_csv_row("tiny", cas, metric, unit, s.med, s.lo, s.hi, reps);
}

/* A ratio cell of the table (and its CSV row). */
static void ratio_cell(const peer *s, const peer *base, const char *cas, const char *metric,
                       int reps)
{
    summary q;

    if (!ratio_to(&q, s, base, reps)) {
        printf(" n/a |");
        return;
    }
    printf(" %.2fx |", q.med);
    csv_summary(cas, metric, "x", q, reps);
}

static void print_row(const peer *s, int nsub, int reps)
{
    char cas[160];
    summary ns = summarize(s->ns_per_job, reps), sub = summarize(s->submit_per_job, reps);

    csv_case(cas, sizeof cas, s->name, nsub);
    printf("| %s%s%s | %.0f | %.0f-%.0f | %.0f |", s->name, s->mark ? " " : "",
           s->mark ? s->mark : "", ns.med, ns.lo, ns.hi, sub.med);
    csv_summary(cas, "ns/job", "ns", ns, reps);
    csv_summary(cas, "submit ns/job", "ns", sub, reps);
    ratio_cell(s, find("tbb"), cas, "ratio to oneTBB", reps);
    ratio_cell(s, find("floor-fifo"), cas, "ratio to ck_fifo_mpmc floor", reps);
    printf(" %d |\n", s->redone);
    bench_csv_row("tiny", cas, "rounds redone", "rounds", s->redone, s->redone, s->redone, reps);
}

static void print_table(int nsub, int reps, size_t jobs)
{
    printf("\n### %s: %zu empty jobs per round to %d workers, medians of %d rounds\n\n",
           subs_label(nsub), jobs, WORKERS, reps);
    printf("| system | ns/job | min-max ns/job | submit ns/job | ratio to oneTBB "
           "| ratio to ck_fifo_mpmc floor | rounds redone |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < NPEERS; k++)
        if (active(&peers[k]))
            print_row(&peers[k], nsub, reps);
}

/* The distinct layouts of s's rounds, with their counts: "SR|R 3, S|RR 2". */
static void layouts_of(const peer *s, int reps, char *out, size_t len)
{
    size_t used = 0;

    out[0] = '\0';
    for (int r = 0; r < reps; r++) {
        int seen = 0, count = 0;
        for (int q = 0; q < reps; q++) {
            if (!strcmp(s->layout[q], s->layout[r])) {
                seen |= q < r;
                count++;
            }
        }
        if (!seen)
            used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%s %d",
                                     used ? ", " : "", s->layout[r], count);
    }
}

static void print_layouts(int reps)
{
    char buf[256];

    printf("\nThread layouts (the CPU of each thread over the round, grouped: S a submitter, R "
           "a routee; rounds per layout):\n");
    for (size_t k = 0; k < NPEERS; k++)
        if (active(&peers[k]) && is_routepool(&peers[k])) {
            layouts_of(&peers[k], reps, buf, sizeof buf);
            printf("- %s: %s\n", peers[k].name, buf);
        }
}

static void print_notes(int nsub, int reps)
{
    const peer *omp = find("omp"), *s;
    char cas[160];

    printf("\nRatios are medians of per-round ratios (the rounds of one repetition ran back to "
           "back).\n");
    if (omp) {
        summary sh = summarize(omp->extra_per_round, reps);
        printf("(!) OpenMP is flattered: libgomp runs a task undeferred in the creating thread "
               "once more than 64 x %d threads' tasks are pending, so part of the jobs cost no "
               "handoff and the submitters are throttled.  Jobs that ran on a submitting thread: "
               "%.1f%% (rounds %.1f-%.1f%%).\n", nsub + WORKERS, 100 * sh.med, 100 * sh.lo,
               100 * sh.hi);
        sh.med *= 100, sh.lo *= 100, sh.hi *= 100;
        csv_summary(csv_case(cas, sizeof cas, omp->name, nsub), "jobs run on submitters", "%",
                    sh, reps);
    }
    if ((s = find("tbb"))) {
        summary sh = summarize(s->extra_per_round, reps);
        printf("(*) oneTBB is flattered too: each submitter joins the arena (%d workers + %d "
               "reserved slot%s) and runs jobs itself while it waits, as oneTBB intends (up to "
               "%d threads run jobs, the other pools have %d).  Jobs that ran on a submitting "
               "thread, with no handoff: %.1f%% (rounds %.1f-%.1f%%).  The tbb-enqueue row is "
               "oneTBB as a handoff to its 2 workers.\n", WORKERS, nsub, nsub > 1 ? "s" : "",
               WORKERS + nsub, WORKERS, 100 * sh.med, 100 * sh.lo, 100 * sh.hi);
        sh.med *= 100, sh.lo *= 100, sh.hi *= 100;
        csv_summary(csv_case(cas, sizeof cas, s->name, nsub), "jobs run on submitters", "%",
                    sh, reps);
    }
    printf("FLOOR: %d producer%s -> %d spinning consumer%s (consumers woken before the clock "
           "starts, nothing but the queue between them).%s\n", nsub, nsub > 1 ? "s" : "", nsub,
           nsub > 1 ? "s" : "", nsub + nsub > WORKERS ?
           "  Here 4 threads share 2 vCPUs: a thread that finds its queue empty (consumer) "
           "or full (ring producer) 1024 times in a row yields, so this is the best raw "
           "handoff with this many threads, not a strict lower bound." : "");
#ifdef RP_BENCH_HAVE_LIBUV
    if (nsub > 1)
        printf("libuv: not in this mode (uv_queue_work may only be called on the loop's "
               "thread).\n");
#endif
}

/* ---- targets (issue 7) ---- */

/* The routepool single-job system with the lowest (median) ratio to base;
 * NULL when base does not run. */
static const peer *best_routepool(const peer *base, int reps)
{
    const peer *best = NULL;
    double best_q = 0;

    for (size_t k = 0; k < NPEERS; k++) {
        const peer *s = &peers[k];
        summary q;
        if (!active(s) || strncmp(s->key, "rp", 2) != 0 || !strcmp(s->key, "rp-batch") ||
            !ratio_to(&q, s, base, reps))
            continue;
        if (!best || q.med < best_q)
            best = s, best_q = q.med;
    }
    return best;
}

/* "- who (system) <= target x vs: ratio -> MET / NOT MET"; target 0: a
 * reference line with the ratio only.  Returns 1 met (or a reference), 0
 * not met, -1 not measured. */
static int target_line(const peer *s, const char *who, const peer *base, const char *vs,
                       double target, int nsub, int reps)
{
    char cas[200], metric[96];
    summary q;

    if (!s || !ratio_to(&q, s, base, reps)) {
        printf("- %s vs %s: not measured (%s not in this run)\n", who, vs, s ? vs : "routepool");
        return -1;
    }
    snprintf(cas, sizeof cas, "%s: %s, %s", target > 0 ? "target" : "reference", who,
             subs_label(nsub));
    if (target <= 0) {
        printf("- %s (%s) vs %s: %.2fx (rounds %.2f-%.2f)\n", who, s->name, vs, q.med, q.lo,
               q.hi);
        snprintf(metric, sizeof metric, "ratio to %s", vs);
        csv_summary(cas, metric, "x", q, reps);
        return 1;
    }
    printf("- %s (%s) <= %.2fx %s: %.2fx (rounds %.2f-%.2f) -> %s", who, s->name, target, vs,
           q.med, q.lo, q.hi, q.med <= target ? "MET" : "NOT MET");
    if (q.med > target)
        printf(" (%.0f%% above)", 100 * (q.med / target - 1));
    printf("\n");
    snprintf(metric, sizeof metric, "ratio to %s (target <= %.2f)", vs, target);
    csv_summary(cas, metric, "x", q, reps);
    return q.med <= target;
}

static void print_targets(int nsub, int reps)
{
    const peer *tbb = find("tbb"), *fifo = find("floor-fifo"); /* the targets' references */
    const peer *def = find("rp-steal");

    printf("\nTargets (issue 7), %s:\n", subs_label(nsub));
    target_line(def, "routepool default, single-job submit", tbb, "oneTBB", TARGET_VS_TBB, nsub, reps);
    target_line(best_routepool(tbb, reps), "best routepool single-job submit", tbb, "oneTBB",
                TARGET_VS_TBB, nsub, reps);
    if (find("tbb-enqueue")) /* not a target of issue 7: what the handoff costs in oneTBB */
        target_line(def, "not a target: routepool default", find("tbb-enqueue"),
                    "oneTBB enqueue handoff", 0, nsub, reps);
    target_line(def, "routepool default, single-job submit", fifo, "ck_fifo_mpmc floor",
                TARGET_VS_FLOOR, nsub, reps);
    target_line(best_routepool(fifo, reps), "best routepool single-job submit", fifo,
                "ck_fifo_mpmc floor", TARGET_VS_FLOOR, nsub, reps);
    printf("- routepool batch submit: see issue 18's target 3 below\n");
}

/* ---- targets (issue 18: stealing without a tax) ---- */

static bench_placement g_start_place; /* measured by preamble() */

/* The floors this run measured, under a target not met: what the raw
 * handoff costs on this placement, so a verdict is read against it. */
static void print_floors(int reps, const bench_placement *end)
{
    const peer *fifo = find("floor-fifo"), *ring = find("floor-ring");

    printf("  hardware floor in this run:");
    if (fifo)
        printf(" ck_fifo_mpmc %.1f ns/job,", summarize(fifo->ns_per_job, reps).med);
    if (ring)
        printf(" ck_ring SPSC %.1f ns/job,", summarize(ring->ns_per_job, reps).med);
    printf(" a cache line moves in %.0f ns (ping-pong, fastest trial)\n", end->pp.min_ns);
}

/* Target 3: batches <= T18_BATCH_NS ns/job, or, when the placement makes
 * the ck_ring SPSC floor itself slower than that, <= 1.0x the floor. */
static int batch_target(int nsub, int reps)
{
    const peer *batch = find("rp-batch"), *ring = find("floor-ring");
    char cas[96];
    summary ns, q = {0};
    double floor_ns = ring ? summarize(ring->ns_per_job, reps).med : 0;
    int met;

    if (!batch) {
        printf("- 3. batch submit: not measured (rp-batch not in this run)\n");
        return -1;
    }
    ns = summarize(batch->ns_per_job, reps);
    met = ns.med <= T18_BATCH_NS;
    if (!met && ring && floor_ns > T18_BATCH_NS && ratio_to(&q, batch, ring, reps))
        met = q.med <= 1.0;
    printf("- 3. batch submit (64/call) <= %.0f ns/job, or <= 1.00x the ck_ring SPSC floor "
           "when that is slower: %.1f ns/job (rounds %.1f-%.1f); floor %.1f ns/job", T18_BATCH_NS,
           ns.med, ns.lo, ns.hi, floor_ns);
    if (q.med > 0)
        printf(", %.2fx it", q.med);
    printf(" -> %s\n", met ? "MET" : "NOT MET");
    snprintf(cas, sizeof cas, "target 18.3: routepool batch submit, %s", subs_label(nsub));
    csv_summary(cas, "ns/job (target <= 25, or <= 1.0x the ck_ring floor)", "ns", ns, reps);
    return met;
}

/* Target 1's ratio split by the layout of the steal-on round: the tax
 * differs by layout (docs/performance.md), so the verdict says which ones
 * the run met. */
static void tax_by_layout(const peer *on, const peer *off, int reps)
{
    printf("  by layout of the steal-on round:");
    for (int r = 0; r < reps; r++) {
        double v[MAX_REPS];
        int n = 0, seen = 0;

        for (int q = 0; q < reps; q++)
            if (!strcmp(on->layout[q], on->layout[r])) {
                seen |= q < r;
                v[n++] = on->ns_per_job[q] / off->ns_per_job[q];
            }
        if (!seen)
            printf("%s %s %.2fx (%d round%s, %s)", r ? ";" : "", on->layout[r],
                   bench_median(v, (size_t)n), n, n > 1 ? "s" : "",
                   bench_median(v, (size_t)n) <= T18_TAX ? "met" : "not met");
    }
    printf("\n");
}

/* Tally one verdict: 1 met, 0 not met, -1 not measured. */
static void tally(int v, int count[3])
{
    count[v < 0 ? 2 : v ? 0 : 1]++;
}

/*
 * Issue 18's targets 1-3 (target 4 is rp-bench-sojourn's, 5 rp-bench-
 * memory's): same-run ratios, medians of the per-round ratios.  With the
 * placement at the start of the run and at the end of this mode, and the
 * floors when a target was not met.
 */
static void print_targets18(int nsub, int reps, const bench_placement *end)
{
    static const struct { const char *key, *vs; } cpeers[] = {
        {"libuv", "libuv"}, {"mutex", "the mutex pool"}, {"thpool", "C-Thread-Pool"},
        {"tbb", "oneTBB task_group"}};
    const peer *def = find("rp-steal");
    double vs_peer = nsub == 1 ? T18_VS_PEER_1 : T18_VS_PEER_2;
    int count[3] = {0};

    printf("\nTargets (issue 18), %s:\n", subs_label(nsub));
    tally(target_line(def, "1. stealing's tax", find("rp"), "steal off", T18_TAX, nsub, reps),
          count);
    if (def && find("rp"))
        tax_by_layout(def, find("rp"), reps);
    for (size_t k = 0; k < sizeof cpeers / sizeof cpeers[0]; k++)
        tally(target_line(def, "2. C peers", find(cpeers[k].key), cpeers[k].vs, vs_peer, nsub,
                          reps), count);
    tally(batch_target(nsub, reps), count);
    printf("  %d met, %d not met, %d not measured\n", count[0], count[1], count[2]);
    if (count[1])
        print_floors(reps, end);
    bench_placement_verdict(stdout, "tiny", "  ", &g_start_place, end);
    fflush(stdout);
}

/* ---- one mode: every system with nsub submitters ---- */

static void run_mode(int nsub, size_t jobs, int reps)
{
    bench_placement end;

    crew_start(nsub);
    for (size_t k = 0; k < NPEERS; k++) {
        peer *s = &peers[k];
        s->off = s->max_sub < nsub;
        s->redone = 0;
        if (!active(s))
            continue;
        if (s->start(s, nsub) != 0)
            die("could not start a system");
        if (!one_round(s, g_recs, jobs / 10 ? jobs / 10 : 1, nsub, -1)) /* warm-up */
            die("warm-up: a job was lost or ran twice");
    }
    for (int r = 0; r < reps; r++) {
        for (size_t k = 0; k < NPEERS; k++) {
            peer *s = &peers[(k + (size_t)r) % NPEERS]; /* rotated order */
            if (active(s))
                guarded_round(s, g_recs, jobs, nsub, r);
        }
        fprintf(stderr, "\r%s: round %d/%d", subs_label(nsub), r + 1, reps);
    }
    fprintf(stderr, "\r%-40s\r", "");
    for (size_t k = 0; k < NPEERS; k++)
        if (active(&peers[k]))
            peers[k].stop(&peers[k]);
    crew_stop();
    bench_placement_take(&end, 7);
    print_table(nsub, reps, jobs);
    print_layouts(reps);
    print_notes(nsub, reps);
    print_targets(nsub, reps);
    print_targets18(nsub, reps, &end);
}

/* ---- setup ---- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rp-bench-tiny [options]\n"
        "  Cost of empty jobs submitted by 1 and by 2 threads to 2 workers, ns per job:\n"
        "  routepool (routers, stealing) vs oneTBB, OpenMP tasks, a mutex pool,\n"
        "  C-Thread-Pool, libuv (when built in) and raw ck_fifo_mpmc / ck_ring floors.\n"
        "  --jobs N         jobs per round (default 200000)\n"
        "  --reps N         timed rounds per system and mode, 1..%d (default 11)\n"
        "  --quick          5 rounds of 100000 jobs (and at most 10 s of waiting for\n"
        "                   a quiet machine instead of 60)\n"
        "  --submitters S   1, 2 or both (default both)\n"
        "  --idle-spin-us N the routepool pools' rp_pool_options.idle_spin_us, 0..%u\n"
        "                   (default: the pool's automatic choice; 0: a routee sleeps\n"
        "                   as soon as it finds no work)\n"
        "  --only LIST      comma list of rp-steal,rp,rp-random,rp-sm,rp-sm-steal,rp-batch,\n"
        "                   rp-pin,rp-batch-pin,\n"
        "                   tbb,tbb-enqueue,omp,mutex,thpool,libuv,floor-fifo,floor-ring (all\n"
        "                   built in; the ratio columns need tbb and floor-fifo)\n"
        "  --help           this text\n"
        "Exit status: 0 ok, 1 failure (a job lost or run twice), 2 bad command line.\n",
        MAX_REPS, (unsigned)RP_IDLE_SPIN_US_MAX);
}

static void select_peers(const char *list)
{
    for (size_t k = 0; k < NPEERS; k++) {
        const char *p = strstr(list, peers[k].key);
        size_t len = strlen(peers[k].key);
        /* A whole item of the comma list, not a prefix ("rp" in "rp-steal"). */
        while (p && ((p != list && p[-1] != ',') || (p[len] != '\0' && p[len] != ',')))
            p = strstr(p + 1, peers[k].key);
        peers[k].skip = p == NULL;
    }
}

static int parse_submitters(const char *v)
{
    if (!strcmp(v, "1") || !strcmp(v, "2"))
        return v[0] - '0';
    if (!strcmp(v, "both"))
        return 3; /* a mask: bit 0 one submitter, bit 1 two */
    fprintf(stderr, "--submitters: expected 1, 2 or both (got '%s')\n", v);
    exit(2);
}

static void parse_args(int argc, char **argv, size_t *jobs, int *reps, int *modes)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--quick")) {
            *reps = 5, *jobs = 100000;
            g_quiet_budget_ns = (int64_t)QUIET_BUDGET_S * 1000000000 / 6;
        } else if (!strcmp(a, "--only") && i + 1 < argc) {
            select_peers(argv[++i]);
        } else if (!strcmp(a, "--idle-spin-us") && i + 1 < argc) {
            g_idle_spin_us = (unsigned)bench_parse_u64(a, argv[++i], 0, RP_IDLE_SPIN_US_MAX);
        } else if (!strcmp(a, "--submitters") && i + 1 < argc) {
            *modes = parse_submitters(argv[++i]);
        } else if ((!strcmp(a, "--jobs") || !strcmp(a, "--reps")) && i + 1 < argc) {
            uint64_t v = bench_parse_u64(a, argv[++i], 1, !strcmp(a, "--jobs") ? 10000000 : MAX_REPS);
            if (!strcmp(a, "--jobs"))
                *jobs = (size_t)v;
            else
                *reps = (int)v;
        } else {
            fprintf(stderr, "unknown option or missing value '%s' (see --help)\n", a);
            exit(2);
        }
    }
}

static void preamble(void)
{
    bench_machine m;
    const bench_pingpong_result *pp = &g_start_place.pp;

    bench_machine_get(&m);
    if (g_idle_spin_us == RP_IDLE_SPIN_US_AUTO)
        printf("# rp-bench-tiny (routepool %s), routepool idle spin: automatic (%s)\n",
               rp_version(), sysconf(_SC_NPROCESSORS_ONLN) > 2
                                 ? "50 us: CPUs to spare"
                                 : "none: no CPU to spare; a routee yields once before sleeping");
    else
        printf("# rp-bench-tiny (routepool %s), routepool idle spin %u us\n", rp_version(),
               g_idle_spin_us);
    bench_machine_print(stdout, &m);
    bench_placement_take(&g_start_place, 7);
    if (pp->one_way_ns > 0) {
        bench_pingpong_print(stdout, pp, 7);
        bench_csv_row("tiny", "machine", "ping-pong one way", "ns", pp->one_way_ns, pp->min_ns,
                      pp->max_ns, 7);
    }
#ifdef RP_BENCH_HAVE_TBB
    printf("# %s\n", peer_tbb_version());
#else
    printf("# oneTBB: not built in (apt-get install libtbb-dev, reconfigure)\n");
#endif
#ifdef RP_BENCH_HAVE_OMP
    printf("# OpenMP %d (libgomp)\n", peer_omp_version());
#else
    printf("# OpenMP: not built in (no -fopenmp compiler found at configure time)\n");
#endif
#ifndef RP_BENCH_HAVE_THPOOL
    printf("# C-Thread-Pool: not built in (apt-get install cthreadpool-dev, reconfigure)\n");
#endif
#ifndef RP_BENCH_HAVE_LIBUV
    printf("# libuv: not built in (apt-get install libuv1-dev, reconfigure)\n");
#else
    printf("# libuv %s, UV_THREADPOOL_SIZE=%d\n", peer_uv_version(), WORKERS);
#endif
    fflush(stdout);
}

int main(int argc, char **argv)
{
    size_t jobs = 200000;
    int reps = 11, modes = 3;
    int64_t t0 = bench_now_ns();

    parse_args(argc, argv, &jobs, &reps, &modes);
    /* libuv reads it once, when its threadpool starts (first uv_queue_work). */
    setenv("UV_THREADPOOL_SIZE", "2", 1);
    if (!(g_recs = aligned_alloc(64, jobs * sizeof *g_recs)))
        die("out of memory");
    memset(g_recs, 0, jobs * sizeof *g_recs);
    if (!(g_ptrs = malloc(jobs * sizeof *g_ptrs)))
        die("out of memory");
    for (size_t i = 0; i < jobs; i++)
        g_ptrs[i] = &g_recs[i];
    preamble();
    for (int nsub = 1; nsub <= MAX_SUB; nsub++)
        if (modes & (1 << (nsub - 1)))
            run_mode(nsub, jobs, reps);
    printf("\n# waited %.1f s for a quiet machine (budget %.0f s); total time %.0f s\n",
           (double)g_quiet_waited_ns / 1e9, (double)g_quiet_budget_ns / 1e9,
           (double)(bench_now_ns() - t0) / 1e9);
    bench_csv_row("tiny", "machine", "waited for quiet", "s", (double)g_quiet_waited_ns / 1e9,
                  (double)g_quiet_waited_ns / 1e9, (double)g_quiet_waited_ns / 1e9, 1);
    bench_csv_row("tiny", "machine", "total time", "s", (double)(bench_now_ns() - t0) / 1e9,
                  (double)(bench_now_ns() - t0) / 1e9, (double)(bench_now_ns() - t0) / 1e9, 1);
    free(g_recs);
    free(g_ptrs);
    return 0;
}
