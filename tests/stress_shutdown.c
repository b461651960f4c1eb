/* SPDX-License-Identifier: MIT */
/*
 * stress_shutdown.c - shutdown racing submits, a second shutdown, and
 * callbacks that shut down or destroy the pool, as a plain program (TSan
 * runs it; issue 15 items 3, 6 and 7).
 *
 * Each of RP_STRESS_ROUNDS / 500 rounds (default 2000) makes a pool of 2
 * routees, sometimes stops routee 1, starts 2 submitters that submit until
 * refused, and shuts the pool down from the main thread and from a third
 * thread at once, while an open scatter's future callback (run by the
 * shutdown) shuts the pool down too and tries to destroy it, and an ask's
 * deadline callback (on the timer thread) tries to destroy it as well.
 * Invariants, checked exactly: every submit returns 0 or RP_ESHUTDOWN; a
 * submit that began after a shutdown returned is refused; every accepted
 * job ran or was handed back exactly once; both destroys were refused.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "routepool/routepool.h"

#define SUBMITTERS 2
#define MAX_JOBS 4000

typedef struct round_state {
    rp_pool *pool;
    atomic_bool shut_returned; /* a shutdown call has returned */
    atomic_int ran, handed_back, refused_destroys, bad;
    atomic_int accepted[SUBMITTERS];
} round_state;

static void job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_fetch_add_explicit(&((round_state *)arg)->ran, 1, memory_order_relaxed);
}

/* The asks' jobs wait until their callbacks are registered (so a future
 * cannot complete first and run its callback at registration, in the main
 * thread), then work 2 ms. */
static pthread_mutex_t arm_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t arm_cv = PTHREAD_COND_INITIALIZER;
static bool armed;
static pthread_t main_thread;
static atomic_long timer_callbacks; /* deadline callbacks: the timer thread */

static void set_armed(bool v)
{
    pthread_mutex_lock(&arm_mu);
    armed = v;
    pthread_cond_broadcast(&arm_cv);
    pthread_mutex_unlock(&arm_mu);
}

static void wait_armed(void)
{
    struct timespec deadline;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&arm_mu);
    while (!armed && pthread_cond_timedwait(&arm_cv, &arm_mu, &deadline) == 0) {
    }
    pthread_mutex_unlock(&arm_mu);
}

static void slow_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    wait_armed();
    usleep(2000);
}

/* Outlives its ask's 3 ms deadline: the timer thread fails the ask. */
static void slower_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    wait_armed();
    usleep(6000);
}

static void undelivered(void *arg, int reason, void *user)
{
    (void)reason, (void)user;
    if (arg)
        atomic_fetch_add_explicit(&((round_state *)arg)->handed_back, 1, memory_order_relaxed);
}

static void count_refusal(int level, const char *msg, void *user)
{
    (void)msg;
    if (level == RP_LOG_ERROR)
        atomic_fetch_add(&((round_state *)user)->refused_destroys, 1);
}

typedef struct submitter {
    round_state *st;
    int id;
} submitter;

static void *submit_until_refused(void *p)
{
    submitter *s = p;
    round_state *st = s->st;

    for (int i = 0; i < MAX_JOBS; i++) {
        bool after = atomic_load(&st->shut_returned);
        int rc = rp_pool_submit(st->pool, job, st);
        if (rc == 0 && !after) {
            atomic_fetch_add(&st->accepted[s->id], 1);
        } else if (rc != RP_ESHUTDOWN) {
            fprintf(stderr, "submit returned %s (%s)\n", rp_err_name(rc), rp_errmsg());
            atomic_fetch_add(&st->bad, 1);
            if (rc == 0)
                atomic_fetch_add(&st->accepted[s->id], 1);
        }
        if (rc == RP_ESHUTDOWN && after)
            break;
    }
    return NULL;
}

static void *shut_down(void *p)
{
    round_state *st = p;
    if (rp_pool_shutdown(st->pool, RP_SHUTDOWN_DRAIN) != 0)
        atomic_fetch_add(&st->bad, 1);
    atomic_store(&st->shut_returned, true);
    return NULL;
}

/* Run by the shutdown (the scatter fails "stopped"): shut down, destroy. */
static void nested_teardown(rp_future *f, void *user)
{
    round_state *st = user;
    (void)f;
    int rc = rp_pool_shutdown(st->pool, RP_SHUTDOWN_DRAIN);
    /* RP_EBUSY: the scatter failed on a routee before the shutdown. */
    if (rc != 0 && rc != RP_EBUSY)
        atomic_fetch_add(&st->bad, 1);
    rp_pool_destroy(st->pool); /* refused */
}

/* Run on the timer thread (or, rarely, a routee or the shutdown):
 * destroy, refused.  Run at registration in the main thread (the deadline
 * passed first), destroy would be allowed: it only counts as refused. */
static void timer_destroy(rp_future *f, void *user)
{
    round_state *st = user;

    if (pthread_equal(pthread_self(), main_thread)) {
        atomic_fetch_add(&st->refused_destroys, 1);
        return;
    }
    if (rp_future_error(f) && rp_future_error(f)->code == RP_ETIMEDOUT)
        atomic_fetch_add(&timer_callbacks, 1);
    rp_pool_destroy(st->pool);
}

static rp_pool *make_pool(round_state *st)
{
    rp_pool_options o;
    rp_pool *pool = NULL;

    rp_pool_options_init(&o);
    o.name = "sdstress";
    o.routees = 2;
    o.on_undelivered = undelivered;
    o.log = count_refusal;
    o.log_user = st;
    return rp_pool_create(&pool, &o) == 0 ? pool : NULL;
}

/* An open scatter and an ask whose deadline fires, each with a callback
 * that tries to tear the pool down. */
static int arm_callbacks(round_state *st, rp_router *sg, rp_future **fs)
{
    if (rp_router_ask(sg, slow_job, NULL, 0, &fs[0]) != 0 ||
        rp_future_on_complete(fs[0], nested_teardown, st) != 0 ||
        rp_router_ask(rp_pool_router(st->pool), slower_job, NULL, 3, &fs[1]) != 0 ||
        rp_future_on_complete(fs[1], timer_destroy, st) != 0)
        return -1;
    set_armed(true);
    return 0;
}

static int one_round(uint64_t rng)
{
    round_state st = {0};
    pthread_t subs[SUBMITTERS], second;
    submitter args[SUBMITTERS];
    rp_router *sg = NULL;
    rp_future *fs[2] = {NULL, NULL};
    int accepted = 0;

    set_armed(false);
    if (!(st.pool = make_pool(&st)) ||
        rp_router_create_scatter_gather(&sg, st.pool, NULL, NULL) != 0 ||
        arm_callbacks(&st, sg, fs) != 0)
        return -1;
    if (rng & 1)
        rp_routee_stop(rp_pool_routee(st.pool, 1));
    for (int i = 0; i < SUBMITTERS; i++) {
        args[i] = (submitter){&st, i};
        pthread_create(&subs[i], NULL, submit_until_refused, &args[i]);
    }
    usleep((useconds_t)((rng >> 8) % 300));
    pthread_create(&second, NULL, shut_down, &st);
    shut_down(&st);
    pthread_join(second, NULL);
    for (int i = 0; i < SUBMITTERS; i++) {
        pthread_join(subs[i], NULL);
        accepted += atomic_load(&st.accepted[i]);
    }
    /* The ask's deadline may come after the shutdown: wait for it. */
    if (rp_future_wait(fs[1], 10000) != 0)
        atomic_fetch_add(&st.bad, 1);
    rp_future_release(fs[0]);
    rp_future_release(fs[1]);
    rp_router_destroy(sg);
    rp_pool_destroy(st.pool);
    if (atomic_load(&st.ran) + atomic_load(&st.handed_back) != accepted) {
        fprintf(stderr, "accepted %d, ran %d, handed back %d\n", accepted,
                atomic_load(&st.ran), atomic_load(&st.handed_back));
        return -1;
    }
    if (atomic_load(&st.refused_destroys) != 2) {
        fprintf(stderr, "%d destroys refused, want 2\n", atomic_load(&st.refused_destroys));
        return -1;
    }
    return atomic_load(&st.bad) ? -1 : 0;
}

int main(void)
{
    const char *env = getenv("RP_STRESS_ROUNDS");
    long rounds = (env ? atol(env) : 1000000) / 500;
    uint64_t rng = 88172645463325252ull;

    main_thread = pthread_self();
    for (long i = 0; i < rounds; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        if (one_round(rng) != 0) {
            fprintf(stderr, "stress_shutdown: round %ld failed\n", i);
            return 1;
        }
    }
    printf("stress_shutdown: %ld rounds ok (%ld destroys tried on the timer thread)\n", rounds,
           atomic_load(&timer_callbacks));
    return 0;
}
