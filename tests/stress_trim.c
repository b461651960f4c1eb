/* SPDX-License-Identifier: MIT */
/*
 * stress_trim.c - idle routees trimming their lanes while jobs arrive, as
 * a plain program (TSan runs it; Criterion cannot run under TSan; it does
 * not link jemalloc, so the pool uses the C allocator).
 *
 * Two pools of 2 routees trim after 1 ms of idleness down to a 64-record
 * reserve (lib/lane.c, "Trimming"): an unbounded one with stealing, fed
 * singles and batches, and a bounded drop-head one (capacity 256), whose
 * evicting submitters dequeue without a reservation.  3 submitters send
 * RP_STRESS_JOBS / 10 jobs each in bursts with idle gaps of 0-3 ms, so
 * trims race submits, steals and evictions.  Checks: every job of the
 * unbounded pool runs exactly once; every job of the drop-head pool runs
 * or is evicted, exactly once; then, the submitters exited and each
 * routee given one job (a thread's exit makes a trim due in the next idle
 * period), each pool's records come down to the bound the reserve allows
 * (test_trim.c).  Prints the process's
 * RSS before the first burst, at its peak and after the trim (the C
 * allocator's figure: malloc_trim).  Exit status 0 on success, 1 with a
 * message on the first failed check.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"
#include "routepool/routepool.h"

#define SUBMITTERS 3
#define RESERVE 64
#define BOUND (2 * (RESERVE + 2 * 1023 + 63))

static long per_submitter;
static atomic_int *runs_a, *runs_b; /* per job: runs (+ evictions for b) */
static rp_pool *pool_a, *pool_b;
static atomic_long refused;

static void run_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_fetch_add_explicit((atomic_int *)arg, 1, memory_order_relaxed);
}

static void undelivered(void *arg, int reason, void *user)
{
    (void)user;
    if (reason == RP_EEVICTED)
        atomic_fetch_add_explicit((atomic_int *)arg, 1, memory_order_relaxed);
    else
        atomic_fetch_add(&refused, 1);
}

static rp_pool *make(const char *name, unsigned routees, size_t capacity)
{
    rp_pool_options o;
    rp_pool *pool;

    rp_pool_options_init(&o);
    o.name = name;
    o.routees = routees;
    o.mailbox_capacity = capacity;
    o.overflow = capacity ? RP_OVERFLOW_DROP_HEAD : RP_OVERFLOW_REJECT;
    o.on_undelivered = undelivered;
    o.record_reserve = RESERVE;
    o.trim_idle_ms = 1;
    if (rp_pool_create(&pool, &o) < 0) {
        fprintf(stderr, "stress_trim: rp_pool_create: %s\n", rp_errmsg());
        exit(1);
    }
    return pool;
}

/* One burst of n jobs from base: singles and batches of 64 into a, singles into b. */
static void burst(long first, long n)
{
    void *args[64];

    for (long i = first; i < first + n;) {
        long k = first + n - i < 64 ? first + n - i : 64;
        if ((i / 64) % 2) {
            for (long j = 0; j < k; j++)
                args[j] = &runs_a[i + j];
            if (rp_pool_submit_batch(pool_a, run_job, args, (size_t)k) != 0)
                atomic_fetch_add(&refused, 1);
        } else {
            for (long j = 0; j < k; j++)
                if (rp_pool_submit(pool_a, run_job, &runs_a[i + j]) != 0)
                    atomic_fetch_add(&refused, 1);
        }
        for (long j = 0; j < k; j++)
            if (rp_pool_submit(pool_b, run_job, &runs_b[i + j]) != 0)
                atomic_fetch_add(&refused, 1);
        i += k;
    }
}

static void *submitter(void *p)
{
    long id = (long)(intptr_t)p, base = id * per_submitter, done = 0;
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);

    while (done < per_submitter) {
        long n;

        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        n = 500 + (long)(s % 4000);
        if (n > per_submitter - done)
            n = per_submitter - done;
        burst(base + done, n);
        done += n;
        sleep_ms((int)(s % 4)); /* an idle gap: the routees trim */
    }
    return NULL;
}

static uint64_t records(rp_pool *pool)
{
    uint64_t sum = 0;

    for (unsigned i = 0; i < rp_pool_size(pool); i++) {
        rp_routee_stats st;
        if (rp_routee_stats_get(rp_pool_routee(pool, i), &st) == 0)
            sum += st.records;
    }
    return sum;
}

static double rss_mib(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%ld %ld", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

static int check_runs(const char *what, atomic_int *runs, long n)
{
    for (long i = 0; i < n; i++)
        if (atomic_load(&runs[i]) != 1) {
            fprintf(stderr, "stress_trim: %s job %ld counted %d times\n", what, i,
                    atomic_load(&runs[i]));
            return 1;
        }
    return 0;
}

/* The submitters have exited; a routee that trimmed while one was alive
 * left that thread's magazine (and the slabs its records pin) in place.
 * A thread's exit makes a trim due again in the routee's next idle
 * period: one job to each routee starts one. */
static void wake_routees(rp_pool *pool)
{
    static atomic_int woke;

    for (unsigned i = 0; i < rp_pool_size(pool); i++)
        if (rp_routee_tell(rp_pool_routee(pool, i), run_job, &woke) != 0)
            atomic_fetch_add(&refused, 1);
    rp_pool_wait_idle(pool, -1);
}

/* Idle: records down to the bound within a generous deadline. */
static int check_trimmed(const char *what, rp_pool *pool)
{
    int64_t end = now_ms() + 20000;

    while (records(pool) > BOUND && now_ms() < end)
        sleep_ms(5);
    if (records(pool) > BOUND) {
        fprintf(stderr, "stress_trim: %s keeps %llu records idle (bound %d)\n", what,
                (unsigned long long)records(pool), BOUND);
        return 1;
    }
    return 0;
}

/* A burst of 1,000,000 jobs (RP_STRESS_JOBS when fewer) behind a blocked routee, then idle: the RSS
 * the C allocator gives back. */
static void rss_burst(void)
{
    gate g;
    tlog log;
    probe p;
    atomic_int ran = 0;
    long n = per_submitter * 10 >= 1000000 ? 1000000 : per_submitter * 10;
    rp_pool *pool = make("trim-rss", 1, 0);
    double before, peak, after;

    tlog_init(&log);
    gate_init(&g);
    probe_init(&p, &log, 0, &g);
    rp_pool_submit(pool, probe_job, &p);
    gate_wait_entered(&g, 1, 10000);
    before = rss_mib();
    for (long i = 0; i < n; i++)
        rp_pool_submit(pool, run_job, &ran);
    peak = rss_mib();
    gate_open(&g);
    rp_pool_wait_idle(pool, -1);
    sleep_ms(1000); /* a measurement at 1 s idle, as rp-bench-memory's */
    after = rss_mib();
    printf("stress_trim: C allocator, %ld queued jobs: RSS %.1f MiB before, %.1f at the peak, "
           "%.1f idle (%+.1f%%)\n", n, before, peak, after, 100.0 * (after - before) / before);
    rp_pool_destroy(pool);
    gate_destroy(&g);
}

int main(void)
{
    const char *env = getenv("RP_STRESS_JOBS");
    pthread_t th[SUBMITTERS];
    long n;
    int bad = 0;

    per_submitter = (env ? atol(env) : 1000000) / 10;
    if (per_submitter < 1000)
        per_submitter = 1000;
    n = per_submitter * SUBMITTERS;
    runs_a = calloc((size_t)n, sizeof *runs_a);
    runs_b = calloc((size_t)n, sizeof *runs_b);
    if (!runs_a || !runs_b)
        return fprintf(stderr, "stress_trim: out of memory\n"), 1;
    pool_a = make("trim-a", 2, 0);
    pool_b = make("trim-b", 2, 256);
    for (long i = 0; i < SUBMITTERS; i++)
        pthread_create(&th[i], NULL, submitter, (void *)(intptr_t)i);
    for (int i = 0; i < SUBMITTERS; i++)
        pthread_join(th[i], NULL);
    rp_pool_wait_idle(pool_a, -1);
    rp_pool_wait_idle(pool_b, -1);
    wake_routees(pool_a);
    wake_routees(pool_b);
    if (atomic_load(&refused))
        return fprintf(stderr, "stress_trim: %ld submits refused\n", atomic_load(&refused)), 1;
    bad |= check_runs("unbounded", runs_a, n) || check_runs("drop-head", runs_b, n);
    bad |= check_trimmed("unbounded pool", pool_a) || check_trimmed("drop-head pool", pool_b);
    rp_pool_destroy(pool_a);
    rp_pool_destroy(pool_b);
    free(runs_a);
    free(runs_b);
    if (!bad)
        rss_burst();
    if (!bad)
        printf("stress_trim: %ld jobs x 2 pools, each counted exactly once\n", n);
    return bad;
}
