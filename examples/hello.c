/* SPDX-License-Identifier: MIT */
/*
 * hello.c - the smallest routepool program: a pool of 4 routees, 8 jobs
 * submitted through the pool's default router (round-robin), a wait until
 * the pool is idle, and the pool destroyed.
 *
 * Each job writes which routee ran it into its own slot of an array (its
 * arg), so the jobs share nothing and need no lock; main prints the array
 * only after rp_pool_wait_idle() returned, when every job has finished.
 *
 *   build/examples/hello      prints one line per job, then
 *                             "hello: 8 of 8 jobs ran"
 */
#include <stdio.h>

#include <routepool/routepool.h>

#define JOBS 8

typedef struct greeting {
    int job;
    int routee; /* written by the job */
} greeting;

static void hello(rp_job_ctx *ctx, void *arg)
{
    greeting *g = arg;
    g->routee = rp_job_routee(ctx);
}

int main(void)
{
    rp_pool_options opts;
    rp_pool *pool;
    greeting g[JOBS];
    int rc, ran = 0;

    rp_pool_options_init(&opts);
    opts.name = "hello";
    opts.routees = 4;
    if ((rc = rp_pool_create(&pool, &opts)) < 0) {
        fprintf(stderr, "hello: rp_pool_create: %s\n", rp_errmsg());
        return 1;
    }
    for (int i = 0; i < JOBS; i++) {
        g[i] = (greeting){.job = i, .routee = -1};
        if ((rc = rp_pool_submit(pool, hello, &g[i])) < 0) {
            fprintf(stderr, "hello: rp_pool_submit: %s\n", rp_errmsg());
            rp_pool_destroy(pool);
            return 1;
        }
    }
    rc = rp_pool_wait_idle(pool, 10000); /* every job has run (or 10 s passed) */
    rp_pool_destroy(pool);
    if (rc < 0) {
        fprintf(stderr, "hello: rp_pool_wait_idle: %s\n", rp_strerror(rc));
        return 1;
    }
    for (int i = 0; i < JOBS; i++) {
        printf("hello from routee %d (job %d)\n", g[i].routee, g[i].job);
        ran += g[i].routee >= 0;
    }
    printf("hello: %d of %d jobs ran\n", ran, JOBS);
    return ran == JOBS ? 0 : 1;
}
