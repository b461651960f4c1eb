/* SPDX-License-Identifier: MIT */
/*
 * stress_wakeup.c - lost wake-up hunt, as a plain program (TSan runs it).
 *
 * ROUNDS rounds (default 1,000,000; RP_STRESS_ROUNDS overrides) of: submit
 * one job to an idle pool of 2 stealing routees, wait for it, sometimes
 * pause a random few microseconds so the routees are caught at every point
 * of going to sleep.  A round that does not finish within 10 s is a lost
 * wake-up: the program fails.
 */
#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "routepool/routepool.h"

static sem_t done;

static void job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    sem_post(&done);
}

int main(void)
{
    const char *env = getenv("RP_STRESS_ROUNDS");
    long rounds = env ? atol(env) : 1000000;
    uint64_t rng = 88172645463325252ull;
    rp_pool_options o;
    rp_pool *pool;

    sem_init(&done, 0, 0);
    rp_pool_options_init(&o);
    o.routees = 2;
    o.name = "wake";
    o.strategy = rp_strategy_smallest_mailbox();
    if (rp_pool_create(&pool, &o) != 0)
        return 1;
    for (long i = 0; i < rounds; i++) {
        struct timespec deadline;

        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        if (rp_pool_submit(pool, job, NULL) != 0)
            return 1;
        if (rng % 4 == 0)
            usleep((useconds_t)(rng >> 32) % 50);
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 10;
        while (sem_timedwait(&done, &deadline) != 0) {
            if (errno != EINTR) {
                fprintf(stderr, "round %ld: the job did not run within 10 s (lost wake-up)\n", i);
                return 1;
            }
        }
    }
    rp_pool_destroy(pool);
    printf("%ld rounds, no lost wake-up\n1 passed, 0 failed\n", rounds);
    return 0;
}
