/* SPDX-License-Identifier: MIT */
/*
 * test_trim.c - an idle pool gives a burst's job records back (issue 18,
 * target 5; lib/lane.c, "Trimming").
 *
 * The records a routee's lanes hold are counted by rp_routee_stats.records.
 * After a burst queued behind a gate has run and the routee has slept
 * trim_idle_ms, they come down to the reserve (rp_pool_options.
 * record_reserve per lane, plus what whole slabs round it up to); a
 * steady state below the reserve then carves no record (the count stays);
 * and jobs submitted while routees trim - trims racing submits, batches
 * and steals - each run exactly once.  The timed waits are bounded polls
 * with generous deadlines, never a sleep standing in for a condition.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "routepool/routepool.h"

/* A lane keeps its reserve, rounded up to whole slabs: at most one slab
 * (1,023 records at most) above it, and the slab the queue's stub sits in
 * (another 1,023); the other lane keeps its first slab (63). */
#define RESERVE 256
#define BOUND (RESERVE + 2 * 1023 + 63 + RESERVE)

static void count_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_fetch_add_explicit((atomic_int *)arg, 1, memory_order_relaxed);
}

/* count_job under another name: a burst alternates the two, so its
 * tells never share a record (lib/lane.c, "Growing") and n jobs take
 * n records, the high-water mark these tests trim. */
static void count_job_too(rp_job_ctx *ctx, void *arg)
{
    count_job(ctx, arg);
}

static rp_pool *trim_pool(unsigned routees, unsigned trim_ms)
{
    rp_pool_options o;
    rp_pool *pool;

    rp_pool_options_init(&o);
    o.name = "trim";
    o.routees = routees;
    o.record_reserve = RESERVE;
    o.trim_idle_ms = trim_ms;
    cr_assert_eq(rp_pool_create(&pool, &o), 0, "%s", rp_errmsg());
    return pool;
}

static uint64_t records(rp_pool *pool)
{
    uint64_t sum = 0;

    for (unsigned i = 0; i < rp_pool_size(pool); i++) {
        rp_routee_stats s;
        cr_assert_eq(rp_routee_stats_get(rp_pool_routee(pool, i), &s), 0);
        sum += s.records;
    }
    return sum;
}

/* The pool's private-arena bytes (0 without jemalloc). */
static uint64_t arena_bytes(rp_pool *pool)
{
    rp_metrics m;
    uint64_t v;

    cr_assert_eq(rp_metrics_snapshot(pool, &m), 0);
    v = m.memory_bytes;
    rp_metrics_release(&m);
    return v;
}

/* Poll until records <= bound (generous deadline); the last count. */
static uint64_t wait_records_at_most(rp_pool *pool, uint64_t bound, int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;
    uint64_t n;

    while ((n = records(pool)) > bound && now_ms() < end)
        sleep_ms(5);
    return n;
}

/* n jobs queued behind a gate on routee 0, then run. */
static void burst(rp_pool *pool, int n, atomic_int *ran)
{
    tlog log;
    probe p;
    gate g;

    tlog_init(&log);
    gate_init(&g);
    probe_init(&p, &log, 0, &g);
    cr_assert_eq(rp_pool_submit(pool, probe_job, &p), 0);
    cr_assert(gate_wait_entered(&g, 1, 10000));
    for (int i = 0; i < n; i++)
        cr_assert_eq(rp_pool_submit(pool, i % 2 ? count_job_too : count_job, ran), 0, "%s",
                     rp_errmsg());
    cr_assert_gt(records(pool), (uint64_t)n, "the burst's records are counted");
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(pool, 30000), 0);
    cr_assert_eq(atomic_load(ran), n);
    gate_destroy(&g);
}

Test(trim, idle_pool_trims_a_bursts_records_down_to_the_reserve)
{
    rp_pool *pool = trim_pool(1, 20);
    atomic_int ran = 0;
    uint64_t left;

    burst(pool, 200000, &ran);
    left = wait_records_at_most(pool, BOUND, 10000);
    cr_assert_leq(left, (uint64_t)BOUND, "records after idle: %llu (bound %d)",
                  (unsigned long long)left, BOUND);
    cr_assert_geq(left, (uint64_t)RESERVE, "the reserve stays: %llu", (unsigned long long)left);
    rp_pool_destroy(pool);
}

Test(trim, trim_idle_ms_0_keeps_the_high_water_mark)
{
    rp_pool *pool = trim_pool(1, 0);
    atomic_int ran = 0;

    burst(pool, 20000, &ran);
    cr_assert(wait_all_asleep(pool, 10000));
    cr_assert_gt(records(pool), 20000u);
    rp_pool_destroy(pool);
}

Test(trim, steady_state_below_the_reserve_carves_no_record_after_a_trim)
{
    rp_pool *pool = trim_pool(1, 20);
    atomic_int ran = 0, ran2 = 0;
    uint64_t before, bytes;

    burst(pool, 100000, &ran);
    cr_assert_leq(wait_records_at_most(pool, BOUND, 10000), (uint64_t)BOUND);
    /* The trim may still be finishing: until two readings agree. */
    before = records(pool);
    bytes = arena_bytes(pool);
    for (int64_t end = now_ms() + 10000; now_ms() < end;) {
        sleep_ms(50);
        if (records(pool) == before && arena_bytes(pool) == bytes)
            break;
        before = records(pool);
        bytes = arena_bytes(pool);
    }
    /* Batches well inside the reserve, waited for one by one. */
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < RESERVE / 4; i++)
            cr_assert_eq(rp_pool_submit(pool, count_job, &ran2), 0);
        cr_assert_eq(rp_pool_wait_idle(pool, 30000), 0);
    }
    cr_assert_eq(atomic_load(&ran2), 200 * (RESERVE / 4));
    cr_assert_eq(records(pool), before, "records %llu -> %llu: the steady state allocated",
                 (unsigned long long)before, (unsigned long long)records(pool));
    cr_assert_leq(arena_bytes(pool), bytes, "the arena grew: %llu -> %llu bytes",
                 (unsigned long long)bytes, (unsigned long long)arena_bytes(pool));
    rp_pool_destroy(pool);
}

/* Submitters racing trims: trim_idle_ms 1 and short idle gaps, so routees
 * trim between (and during) bursts of singles and batches, and steal. */
#define RACERS 2
#define RACE_ROUNDS 60
#define RACE_JOBS 3000

typedef struct racer {
    rp_pool *pool;
    atomic_int *runs; /* one counter per job */
    int id;
    atomic_int *failed; /* submits refused (asserted by the test thread) */
} racer;

static void run_once_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_fetch_add_explicit((atomic_int *)arg, 1, memory_order_relaxed);
}

static void *race(void *p)
{
    racer *r = p;
    void *args[64];

    for (int round = 0; round < RACE_ROUNDS; round++) {
        atomic_int *base = r->runs + ((size_t)r->id * RACE_ROUNDS + (size_t)round) * RACE_JOBS;
        int i = 0;

        while (i < RACE_JOBS) {
            if ((i / 64) % 2 == 0) {
                if (rp_pool_submit(r->pool, run_once_job, &base[i]) != 0)
                    atomic_fetch_add(r->failed, 1);
                i++;
                continue;
            }
            int k = RACE_JOBS - i < 64 ? RACE_JOBS - i : 64;
            for (int j = 0; j < k; j++)
                args[j] = &base[i + j];
            if (rp_pool_submit_batch(r->pool, run_once_job, args, (size_t)k) != 0)
                atomic_fetch_add(r->failed, 1);
            i += k;
        }
        sleep_ms(1 + round % 4); /* an idle gap: the routees trim */
    }
    return NULL;
}

Test(trim, jobs_submitted_while_routees_trim_run_exactly_once)
{
    rp_pool *pool = trim_pool(2, 1);
    size_t n = (size_t)RACERS * RACE_ROUNDS * RACE_JOBS;
    atomic_int *runs = calloc(n, sizeof *runs);
    pthread_t th[RACERS];
    racer rs[RACERS];
    atomic_int failed = 0;

    cr_assert_not_null(runs);
    for (int i = 0; i < RACERS; i++) {
        rs[i] = (racer){pool, runs, i, &failed};
        cr_assert_eq(pthread_create(&th[i], NULL, race, &rs[i]), 0);
    }
    for (int i = 0; i < RACERS; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(atomic_load(&failed), 0, "a submit was refused");
    cr_assert_eq(rp_pool_wait_idle(pool, 30000), 0);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(atomic_load(&runs[i]), 1, "job %zu ran %d times", i, atomic_load(&runs[i]));
    rp_pool_destroy(pool);
    free(runs);
}

Test(trim, record_reserve_and_trim_idle_ms_are_bounded)
{
    rp_pool_options o;
    rp_pool *pool = NULL;

    rp_pool_options_init(&o);
    cr_assert_eq(o.record_reserve, RP_RECORD_RESERVE_DEFAULT);
    cr_assert_eq(o.trim_idle_ms, RP_TRIM_IDLE_MS_DEFAULT);
    o.record_reserve = RP_RECORD_RESERVE_MAX + 1;
    cr_assert_eq(rp_pool_create(&pool, &o), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "rp_pool_create") && strstr(rp_errmsg(), "record_reserve"),
              "%s", rp_errmsg());
    rp_pool_options_init(&o);
    o.trim_idle_ms = RP_TRIM_IDLE_MS_MAX + 1;
    cr_assert_eq(rp_pool_create(&pool, &o), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "trim_idle_ms"), "%s", rp_errmsg());
}
