/* SPDX-License-Identifier: MIT */
/*
 * tests/stress_future.c - promises under contention (also what TSan runs:
 * Criterion cannot).
 *
 * Each round makes a promise with a 1 ms deadline and races two completer
 * threads (rp_future_fulfil with an owned value, rp_future_fail) against
 * the pool's timer thread, while a waiter waits and two takers race
 * rp_future_take_value() (in two rounds of three; in the third they
 * only read it).  Exactly one completion wins per future; every
 * value is freed exactly once - by the future (not taken), by the taker
 * that got it, or by its completer when refused.  Every thread releases
 * its own reference, in whatever order the scheduler picks.  Returns
 * non-zero on any miscount.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

static atomic_long future_frees, own_frees, taken_frees, wins, refused, takes;

static void counted_free(void *v)
{
    atomic_fetch_add_explicit(&future_frees, 1, memory_order_relaxed);
    free(v);
}

typedef struct round {
    rp_future *f;
    bool take; /* else the takers only read the value: the future frees it */
    pthread_barrier_t go; /* the four threads and main start together */
} round;

static void wait_go(round *r)
{
    pthread_barrier_wait(&r->go);
}

static void *fulfiller(void *p)
{
    round *r = p;
    int *v = malloc(sizeof *v);

    *v = 1;
    wait_go(r);
    if (rp_future_fulfil(r->f, 0, v, counted_free) == 0) {
        atomic_fetch_add(&wins, 1);
    } else {
        atomic_fetch_add(&refused, 1);
        atomic_fetch_add(&own_frees, 1);
        free(v);
    }
    rp_future_release(r->f);
    return NULL;
}

static void *failer(void *p)
{
    round *r = p;

    wait_go(r);
    if (rp_future_fail(r->f, 1, 77, "failer") == 0)
        atomic_fetch_add(&wins, 1);
    else
        atomic_fetch_add(&refused, 1);
    rp_future_release(r->f);
    return NULL;
}

static void *taker(void *p)
{
    round *r = p;
    void *v;

    wait_go(r);
    rp_future_wait(r->f, -1);
    if (!r->take) {
        (void)rp_future_value(r->f);
    } else if ((v = rp_future_take_value(r->f))) {
        atomic_fetch_add(&takes, 1);
        atomic_fetch_add(&taken_frees, 1);
        free(v);
    }
    rp_future_release(r->f);
    return NULL;
}

int main(void)
{
    const char *env = getenv("RP_STRESS_ROUNDS");
    long rounds = env ? atol(env) / 100 : 10000;
    long timeouts = 0;
    rp_pool_options o;
    rp_pool *p;
    int bad = 0;

    if (rounds < 100)
        rounds = 100;
    rp_pool_options_init(&o);
    o.routees = 1;
    if (rp_pool_create(&p, &o) != 0) {
        fprintf(stderr, "pool: %s\n", rp_errmsg());
        return 1;
    }
    for (long i = 0; i < rounds; i++) {
        round r;
        pthread_t t[4];

        pthread_barrier_init(&r.go, NULL, 5);
        r.take = i % 3 != 0;
        if (rp_future_create(&r.f, p, 1) != 0) {
            fprintf(stderr, "rp_future_create: %s\n", rp_errmsg());
            return 1;
        }
        /* Two references came with it; one more per extra thread. */
        rp_future_retain(r.f);
        rp_future_retain(r.f);
        rp_future_retain(r.f);
        pthread_create(&t[0], NULL, fulfiller, &r);
        pthread_create(&t[1], NULL, failer, &r);
        pthread_create(&t[2], NULL, taker, &r);
        pthread_create(&t[3], NULL, taker, &r);
        if (i % 2)
            sleep_ms(1); /* every other round, let the deadline compete */
        pthread_barrier_wait(&r.go);
        if (rp_future_wait(r.f, 10000) != 0) {
            fprintf(stderr, "round %ld: never completed\n", i);
            return 1;
        }
        if (rp_future_status(r.f) == RP_FUTURE_FAILED &&
            rp_future_error(r.f)->code == RP_ETIMEDOUT)
            timeouts++;
        rp_future_release(r.f); /* the waiter's */
        for (int k = 0; k < 4; k++)
            pthread_join(t[k], NULL);
        pthread_barrier_destroy(&r.go);
    }
    rp_pool_destroy(p);
    if (atomic_load(&wins) + timeouts != rounds || atomic_load(&wins) + atomic_load(&refused) != 2 * rounds)
        bad++;
    /* Every fulfiller's value: taken once, freed by the future, or refused. */
    if (atomic_load(&takes) + atomic_load(&future_frees) + atomic_load(&own_frees) != rounds)
        bad++;
    if (atomic_load(&taken_frees) != atomic_load(&takes))
        bad++;
    printf("rounds %ld: completer wins %ld, deadline wins %ld, refused %ld; values taken %ld, "
           "freed by the future %ld, by their completer %ld\n",
           rounds, atomic_load(&wins), timeouts, atomic_load(&refused), atomic_load(&takes),
           atomic_load(&future_frees), atomic_load(&own_frees));
    printf("%s\n", bad ? "FAILED" : "passed");
    return bad ? 1 : 0;
}
