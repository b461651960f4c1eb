/* SPDX-License-Identifier: MIT */
/*
 * stress_steal.c - stealing under load, as a plain program (TSan runs it;
 * Criterion cannot run under TSan).
 *
 * 4 submitters x N jobs (default 1,000,000 each; RP_STRESS_JOBS overrides),
 * half stealable (smallest-mailbox), half keyed (consistent hashing over 16
 * keys per submitter), with random costs.  Checks: every job runs exactly
 * once; per (submitter, key) jobs run in submission order; stolen-from
 * totals equal stole totals; run totals equal the jobs submitted.
 * Submitters 2 and 3 send their stealable jobs in batches of up to 37
 * (rp_router_tell_batch through a round-robin router and the pool's
 * smallest-mailbox default router), so batches race single tells.
 * Exit status 0 on success, 1 with a message on the first failed check.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "routepool/routepool.h"

#define SUBMITTERS 4
#define KEYS 16

typedef struct job {
    uint32_t submitter, key, seq, cost;
    bool keyed;
    atomic_int runs;
} job;

static long per_submitter;
static job *jobs;
static rp_pool *pool;
static rp_router *hash_router, *rr_router;
static _Atomic uint32_t next_seq[SUBMITTERS][KEYS]; /* next expected seq */
static atomic_long order_errors;

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void spin_ns(uint32_t ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < (long)ns);
}

static void run(rp_job_ctx *ctx, void *arg)
{
    job *j = arg;
    (void)ctx;
    if (j->cost)
        spin_ns(j->cost);
    if (j->keyed) {
        /* Only the key's routee runs it, one at a time: a relaxed
         * read-compare-write is enough to see order. */
        uint32_t want = atomic_load_explicit(&next_seq[j->submitter][j->key], memory_order_relaxed);
        if (j->seq != want)
            atomic_fetch_add(&order_errors, 1);
        atomic_store_explicit(&next_seq[j->submitter][j->key], j->seq + 1, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&j->runs, 1, memory_order_relaxed);
}

static void *submit(void *p)
{
    uint32_t me = (uint32_t)(intptr_t)p;
    uint32_t seq[KEYS] = {0};
    uint64_t rng = 0x9E3779B97F4A7C15ull * (me + 1);
    void *batch[37];
    size_t nbatch = 0;
    rp_router *batch_router = me == 2 ? rr_router : me == 3 ? rp_pool_router(pool) : NULL;

    for (long i = 0; i < per_submitter; i++) {
        job *j = &jobs[me * per_submitter + i];
        uint64_t r = xorshift(&rng);
        uint32_t keybuf[2];
        int rc;

        j->submitter = me;
        j->keyed = r & 1;
        j->key = (uint32_t)(r >> 8) % KEYS;
        /* Mostly free, sometimes 1-20 us: enough to build backlogs. */
        j->cost = (r >> 20) % 64 == 0 ? 1000 + (uint32_t)(r >> 32) % 19000 : 0;
        if (j->keyed) {
            j->seq = seq[j->key]++;
            keybuf[0] = me;
            keybuf[1] = j->key;
            rc = rp_router_tell_key(hash_router, keybuf, sizeof keybuf, run, j);
        } else if (batch_router) {
            batch[nbatch++] = j;
            rc = 0;
            if (nbatch >= 1 + (r >> 40) % 37) { /* at most 37 */
                rc = rp_router_tell_batch(batch_router, run, batch, nbatch);
                nbatch = 0;
            }
        } else {
            rc = rp_pool_submit(pool, run, j);
        }
        if (rc != 0) {
            fprintf(stderr, "submit failed: %s (%s)\n", rp_err_name(rc), rp_errmsg());
            exit(1);
        }
    }
    if (nbatch && rp_router_tell_batch(batch_router, run, batch, nbatch) != 0) {
        fprintf(stderr, "batch failed: %s\n", rp_errmsg());
        exit(1);
    }
    return NULL;
}

int main(void)
{
    const char *env = getenv("RP_STRESS_JOBS");
    rp_pool_options o;
    rp_router_options ro;
    pthread_t t[SUBMITTERS];
    uint64_t stole = 0, stolen_from = 0, ran = 0;
    long total, bad = 0;

    per_submitter = env ? atol(env) : 1000000;
    total = per_submitter * SUBMITTERS;
    jobs = calloc((size_t)total, sizeof *jobs);
    rp_pool_options_init(&o);
    o.routees = 4;
    o.name = "stress";
    o.strategy = rp_strategy_smallest_mailbox();
    rp_router_options_init(&ro);
    ro.strategy = rp_strategy_consistent_hash(1);
    if (!jobs || rp_pool_create(&pool, &o) != 0 || rp_router_create(&hash_router, pool, &ro) != 0) {
        fprintf(stderr, "setup failed: %s\n", rp_errmsg());
        return 1;
    }
    ro.strategy = rp_strategy_round_robin();
    if (rp_router_create(&rr_router, pool, &ro) != 0) {
        fprintf(stderr, "setup failed: %s\n", rp_errmsg());
        return 1;
    }
    for (int i = 0; i < SUBMITTERS; i++)
        pthread_create(&t[i], NULL, submit, (void *)(intptr_t)i);
    for (int i = 0; i < SUBMITTERS; i++)
        pthread_join(t[i], NULL);
    if (rp_pool_wait_idle(pool, 120000) != 0) {
        fprintf(stderr, "pool did not go idle\n");
        return 1;
    }
    for (long i = 0; i < total; i++)
        bad += atomic_load(&jobs[i].runs) != 1;
    for (size_t r = 0; r < rp_pool_size(pool); r++) {
        rp_routee_stats st;
        rp_routee_stats_get(rp_pool_routee(pool, r), &st);
        stole += st.stole;
        stolen_from += st.stolen_from;
        ran += st.run;
        printf("routee %zu: run %llu stole %llu stolen-from %llu\n", r,
               (unsigned long long)st.run, (unsigned long long)st.stole,
               (unsigned long long)st.stolen_from);
    }
    printf("jobs %ld, not run exactly once %ld, keyed order errors %ld, stole %llu = stolen-from %llu, run %llu\n",
           total, bad, atomic_load(&order_errors), (unsigned long long)stole,
           (unsigned long long)stolen_from, (unsigned long long)ran);
    rp_router_destroy(hash_router);
    rp_router_destroy(rr_router);
    rp_pool_destroy(pool);
    free(jobs);
    if (bad || atomic_load(&order_errors) || stole != stolen_from || ran != (uint64_t)total) {
        fprintf(stderr, "FAILED\n");
        return 1;
    }
    printf("1 passed, 0 failed\n");
    return 0;
}
