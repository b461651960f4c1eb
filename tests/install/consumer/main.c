/* SPDX-License-Identifier: MIT */
/*
 * consumer - a program built against an *installed* routepool, the way a user
 * would build one (tests/install/run.sh builds it with pkg-config and with
 * find_package(routepool), shared and static).  It creates a pool, submits
 * jobs through the default router and a keyed router, waits for idle and
 * checks that every job ran exactly once.  Exit 0 on success, 1 otherwise.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <routepool/routepool.h>

#define NJOBS 1000
#define NROUTEES 2

static atomic_uint ran[NROUTEES];
static atomic_uint undelivered;

static void count_job(rp_job_ctx *ctx, void *arg)
{
    (void)arg;
    const int r = rp_job_routee(ctx);
    if (r >= 0 && r < NROUTEES)
        atomic_fetch_add(&ran[r], 1);
}

static void count_undelivered(void *arg, int reason, void *user)
{
    (void)arg;
    (void)reason;
    (void)user;
    atomic_fetch_add(&undelivered, 1);
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "consumer: %s: %s (%s) %s\n", what, rp_strerror(rc), rp_err_name(rc),
            rp_errmsg());
    return 1;
}

static int submit_all(rp_pool *pool, rp_router *keyed)
{
    int rc;
    for (int i = 0; i < NJOBS; i++) {
        if ((rc = rp_pool_submit(pool, count_job, NULL)) < 0)
            return fail("rp_pool_submit", rc);
        if ((rc = rp_router_tell_key(keyed, &i, sizeof i, count_job, NULL)) < 0)
            return fail("rp_router_tell_key", rc);
    }
    if ((rc = rp_pool_wait_idle(pool, 30000)) < 0)
        return fail("rp_pool_wait_idle", rc);
    return 0;
}

int main(void)
{
    if (strcmp(rp_version(), RP_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: library %s, headers %s\n", rp_version(), RP_VERSION_STRING);
        return 1;
    }
    rp_pool_options opts;
    rp_pool_options_init(&opts);
    opts.routees = NROUTEES;
    opts.on_undelivered = count_undelivered;
    rp_pool *pool = NULL;
    int rc = rp_pool_create(&pool, &opts);
    if (rc < 0)
        return fail("rp_pool_create", rc);

    rp_router_options ropts;
    rp_router_options_init(&ropts);
    ropts.strategy = rp_strategy_consistent_hash(7);
    rp_router *keyed = NULL;
    if ((rc = rp_router_create(&keyed, pool, &ropts)) < 0) {
        rp_pool_destroy(pool);
        return fail("rp_router_create", rc);
    }
    int status = submit_all(pool, keyed);
    rp_router_destroy(keyed);
    rp_pool_destroy(pool);

    const unsigned total = atomic_load(&ran[0]) + atomic_load(&ran[1]);
    if (status == 0 && (total != 2 * NJOBS || atomic_load(&undelivered) != 0)) {
        fprintf(stderr, "consumer: %u of %d jobs ran, %u handed back\n", total, 2 * NJOBS,
                atomic_load(&undelivered));
        status = 1;
    }
    if (status == 0)
        printf("consumer: ok, routepool %s ran %u jobs (%u + %u)\n", rp_version(), total,
               atomic_load(&ran[0]), atomic_load(&ran[1]));
    return status;
}
