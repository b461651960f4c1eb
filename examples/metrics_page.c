/* SPDX-License-Identifier: MIT */
/*
 * metrics_page.c - a pool's metrics as a Prometheus text page.
 *
 * Runs 1000 jobs on a pool named "web" (4 of every 10 keyed, so they are
 * pinned), waits until it is idle and writes its metrics in the Prometheus
 * text exposition format to standard output with
 * rp_metrics_write_prometheus(): what a program's HTTP handler for
 * /metrics would send (with Content-Type "text/plain; version=0.0.4").
 * rp_metrics_snapshot() gives the same numbers as a struct, for a program
 * that would rather read them.
 *
 *   build/examples/metrics_page     the page, with
 *                                   routepool_pool_submitted_total{pool="web"} 1000
 */
#include <stdio.h>

#include <routepool/routepool.h>

static void work(rp_job_ctx *ctx, void *arg)
{
    volatile unsigned sink = 0;

    (void)ctx, (void)arg;
    for (unsigned i = 0; i < 1000; i++)
        sink += i;
    (void)sink; /* read once: the loop is the work */
}

static int submit(rp_pool *pool)
{
    for (int i = 0; i < 1000; i++) {
        int rc = i % 10 < 4 ? rp_router_tell_key(rp_pool_router(pool), &i, sizeof i, work, NULL)
                            : rp_pool_submit(pool, work, NULL);
        if (rc < 0) {
            fprintf(stderr, "metrics_page: submit: %s\n", rp_errmsg());
            return -1;
        }
    }
    return rp_pool_wait_idle(pool, 10000);
}

int main(void)
{
    rp_pool_options opts;
    rp_pool *pool;
    rp_metrics m;
    int rc;

    rp_pool_options_init(&opts);
    opts.name = "web";
    opts.routees = 2;
    opts.metrics = true; /* the default: busy time and the sampled histograms too */
    if (rp_pool_create(&pool, &opts) < 0) {
        fprintf(stderr, "metrics_page: rp_pool_create: %s\n", rp_errmsg());
        return 1;
    }
    rc = submit(pool);
    if (rc == 0 && (rc = rp_metrics_write_prometheus(pool, stdout)) < 0)
        fprintf(stderr, "metrics_page: rp_metrics_write_prometheus: %s\n", rp_errmsg());
    if (rc == 0 && (rc = rp_metrics_snapshot(pool, &m)) == 0) {
        fprintf(stderr, "metrics_page: snapshot: %llu submitted, %llu routees\n",
                (unsigned long long)m.submitted, (unsigned long long)m.routees);
        rp_metrics_release(&m);
    }
    rp_pool_destroy(pool);
    return rc < 0 ? 1 : 0;
}
