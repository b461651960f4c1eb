/* SPDX-License-Identifier: MIT */
/*
 * jemalloc_stats.c - a program linked with jemalloc (ahead of libroutepool,
 * as README says) gets the library's jemalloc mode: each pool allocates from
 * a private jemalloc arena and rp_metrics.memory_bytes is that arena's
 * statistics (lib/alloc.h).
 *
 *   jemalloc_stats          exit 0 on success, 1 with a message otherwise
 *
 * The proof reads jemalloc itself: creating the pool adds exactly one arena
 * (arenas.narenas), and memory_bytes equals that arena's
 * stats.arenas.<i>.small.allocated + large.allocated read here through
 * mallctl, nonzero, and growing by at least 64 bytes per queued job while a
 * gate job holds the only routee.  tests/install/run.sh builds it against
 * the shared and the static library: both must behave the same.
 */
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <routepool/routepool.h>

#define QUEUED 20000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_entered;

/* Holds the only routee until the gate opens, so that while the jobs are
 * queued and measured only this thread allocates. */
static void gate_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    pthread_mutex_lock(&mu);
    gate_entered = 1;
    pthread_cond_broadcast(&cv);
    while (!gate_open)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static void noop_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
}

/* The arena's bytes as jemalloc reports them (epoch refreshed first). */
static uint64_t jemalloc_arena_bytes(unsigned arena)
{
    char name[96];
    uint64_t epoch = 1;
    size_t small = 0, large = 0, sz = sizeof(size_t);

    mallctl("epoch", NULL, NULL, &epoch, sizeof epoch);
    snprintf(name, sizeof name, "stats.arenas.%u.small.allocated", arena);
    if (mallctl(name, &small, &sz, NULL, 0) != 0)
        return UINT64_MAX;
    snprintf(name, sizeof name, "stats.arenas.%u.large.allocated", arena);
    if (mallctl(name, &large, &sz, NULL, 0) != 0)
        return UINT64_MAX;
    return (uint64_t)small + large;
}

static unsigned narenas(void)
{
    unsigned n = 0;
    size_t sz = sizeof n;
    return mallctl("arenas.narenas", &n, &sz, NULL, 0) == 0 ? n : 0;
}

/* memory_bytes must be the arena's bytes, read from jemalloc. */
static int check_bytes(rp_pool *pool, unsigned arena, const char *when, uint64_t *out)
{
    rp_metrics m;
    uint64_t je;

    if (rp_metrics_snapshot(pool, &m) != 0) {
        fprintf(stderr, "jemalloc consumer: rp_metrics_snapshot: %s\n", rp_errmsg());
        return 1;
    }
    je = jemalloc_arena_bytes(arena);
    *out = m.memory_bytes;
    rp_metrics_release(&m);
    printf("jemalloc consumer: %s: memory_bytes %llu, jemalloc arena %u: %llu\n", when,
           (unsigned long long)*out, arena, (unsigned long long)je);
    if (*out == 0 || *out != je) {
        fprintf(stderr, "jemalloc consumer: %s: memory_bytes is not the arena's bytes\n", when);
        return 1;
    }
    return 0;
}

static int queue_and_check(rp_pool *pool, unsigned arena)
{
    uint64_t before, after;

    if (check_bytes(pool, arena, "idle", &before))
        return 1;
    if (rp_pool_submit(pool, gate_job, NULL) != 0)
        return 1;
    pthread_mutex_lock(&mu);
    while (!gate_entered)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < QUEUED; i++)
        if (rp_pool_submit(pool, noop_job, NULL) != 0)
            return 1;
    if (check_bytes(pool, arena, "20000 jobs queued", &after))
        return 1;
    pthread_mutex_lock(&mu);
    gate_open = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    /* At least a record's share: one thread's tells to one routee share
     * records of 128 bytes, 8 jobs each (lib/lane.c, "Growing"). */
    if (after < before + (uint64_t)QUEUED * 16) {
        fprintf(stderr, "jemalloc consumer: 20000 queued jobs grew the arena by %llu bytes only\n",
                (unsigned long long)(after - before));
        return 1;
    }
    return rp_pool_wait_idle(pool, 30000) != 0;
}

int main(void)
{
    rp_pool_options o;
    rp_pool *pool = NULL;
    unsigned n0 = narenas(), n1;
    int status;

    if (n0 == 0) {
        fprintf(stderr, "jemalloc consumer: mallctl(arenas.narenas) failed: not jemalloc?\n");
        return 1;
    }
    rp_pool_options_init(&o);
    o.routees = 1;
    if (rp_pool_create(&pool, &o) != 0) {
        fprintf(stderr, "jemalloc consumer: rp_pool_create: %s\n", rp_errmsg());
        return 1;
    }
    if ((n1 = narenas()) != n0 + 1) {
        fprintf(stderr, "jemalloc consumer: the pool made %u arenas, expected 1\n", n1 - n0);
        rp_pool_destroy(pool);
        return 1;
    }
    status = queue_and_check(pool, n0);
    rp_pool_destroy(pool);
    if (status == 0)
        printf("jemalloc consumer: ok, the pool's memory_bytes are jemalloc arena %u's\n", n0);
    return status;
}
