/* SPDX-License-Identifier: MIT */
/*
 * ask_scatter.c - asking for an answer: a future from rp_router_ask(), and
 * a scatter-gather router that asks every routee and keeps the first reply.
 *
 * Part 1, ask: a job squares a number and replies with rp_job_reply(); the
 * caller waits on the future (rp_future_wait sleeps, it does not poll),
 * reads rp_future_value() and releases the future.  The reply value here
 * points into the caller's own request, so nothing is allocated.
 *
 * Part 2, scatter-gather (the hedged request): every routee gets a copy of
 * the same "lookup"; routee 0 answers in about 1 ms, the others take up to
 * 200 ms but give up as soon as rp_job_cancelled() says another routee won.
 * Each copy replies with a value of its own (malloc); a copy that lost
 * (rp_job_reply() returns non-zero) frees its value, the caller frees the
 * winner's.  Copies share arg: the request lives until rp_pool_wait_idle()
 * says every copy is done.  The router's counters then show one scatter
 * resolved "first".
 *
 *   build/examples/ask_scatter     "ask: 7 squared is 49 (routee N)", then
 *                                  "scatter: first reply ... from routee N",
 *                                  "scatter: resolved first 1"
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <routepool/routepool.h>

typedef struct square_req {
    long in, out;
} square_req;

static void square(rp_job_ctx *ctx, void *arg)
{
    square_req *r = arg;
    r->out = r->in * r->in;
    rp_job_reply(ctx, r); /* the value is the caller's request itself */
}

static int ask_square(rp_pool *pool)
{
    square_req req = {.in = 7};
    rp_future *f;

    if (rp_router_ask(rp_pool_router(pool), square, &req, 0, &f) < 0) {
        fprintf(stderr, "ask: rp_router_ask: %s\n", rp_errmsg());
        return -1;
    }
    rp_future_wait(f, -1);
    if (rp_future_status(f) != RP_FUTURE_FULFILLED) {
        fprintf(stderr, "ask: failed: %s\n", rp_future_error(f)->message);
        rp_future_release(f);
        return -1;
    }
    square_req *r = rp_future_value(f);
    printf("ask: %ld squared is %ld (routee %d)\n", r->in, r->out, rp_future_routee(f));
    rp_future_release(f);
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One replica's lookup: busy for its latency unless cancelled. */
static void lookup(rp_job_ctx *ctx, void *arg)
{
    const int routee = rp_job_routee(ctx);
    const double until = now_ms() + (routee == 0 ? 1.0 : 200.0);
    char *answer;

    (void)arg;
    while (now_ms() < until)
        if (rp_job_cancelled(ctx))
            return; /* another replica answered first */
    if (!(answer = malloc(32)))
        return;
    snprintf(answer, 32, "answer of routee %d", routee);
    if (rp_job_reply(ctx, answer) != 0)
        free(answer); /* lost: the value stays ours */
}

static int scatter(rp_pool *pool)
{
    rp_router *sg;
    rp_future *f;
    rp_scatter_stats st;
    int rc = -1;

    if (rp_router_create_scatter_gather(&sg, pool, NULL, NULL) < 0) {
        fprintf(stderr, "scatter: rp_router_create_scatter_gather: %s\n", rp_errmsg());
        return -1;
    }
    if (rp_router_ask(sg, lookup, NULL, 0, &f) == 0) {
        rp_future_wait(f, -1);
        if (rp_future_status(f) == RP_FUTURE_FULFILLED) {
            char *answer = rp_future_value(f);
            printf("scatter: first reply \"%s\" from routee %d\n", answer, rp_future_routee(f));
            free(answer);
            rc = 0;
        } else {
            fprintf(stderr, "scatter: failed: %s\n", rp_future_error(f)->message);
        }
        rp_future_release(f);
    }
    rp_pool_wait_idle(pool, 10000); /* the losers are done with arg */
    if (rp_router_scatter_stats(sg, &st) == 0)
        printf("scatter: resolved first %llu, losers skipped before running %llu\n",
               (unsigned long long)st.resolved[RP_SCATTER_FIRST],
               (unsigned long long)st.cancelled);
    rp_router_destroy(sg);
    return rc;
}

int main(void)
{
    rp_pool_options opts;
    rp_pool *pool;
    int rc;

    rp_pool_options_init(&opts);
    opts.name = "ask";
    opts.routees = 3;
    if (rp_pool_create(&pool, &opts) < 0) {
        fprintf(stderr, "ask_scatter: rp_pool_create: %s\n", rp_errmsg());
        return 1;
    }
    rc = ask_square(pool);
    if (rc == 0)
        rc = scatter(pool);
    rp_pool_destroy(pool);
    return rc < 0 ? 1 : 0;
}
