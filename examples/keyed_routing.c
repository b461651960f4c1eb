/* SPDX-License-Identifier: MIT */
/*
 * keyed_routing.c - keyed routing with a consistent-hash router: every job
 * with the same key runs on the same routee, one at a time and in the order
 * it was told, so per-key state needs no lock.
 *
 * Ten "accounts" get 100 deposits each, told with rp_router_tell_key() and
 * the account's name as the key.  Each deposit adds to its account's
 * balance without a lock and remembers which routee ran it: that is safe
 * only because one routee runs all of an account's jobs (keyed jobs are
 * pinned: never stolen).  After rp_pool_wait_idle() main checks every
 * balance and that each account stayed on one routee.
 *
 *   build/examples/keyed_routing     prints each account's routee and
 *                                    balance, then "keyed: every account
 *                                    stayed on one routee, 1000 deposits"
 */
#include <stdio.h>
#include <string.h>

#include <routepool/routepool.h>

#define ACCOUNTS 10
#define DEPOSITS 100

typedef struct account {
    char name[16];
    long balance;   /* written only by the account's routee */
    int routee;     /* the routee of the first deposit */
    int moved;      /* deposits that ran on another routee: must stay 0 */
} account;

static void deposit(rp_job_ctx *ctx, void *arg)
{
    account *a = arg;
    const int r = rp_job_routee(ctx);

    if (a->routee < 0)
        a->routee = r;
    else if (a->routee != r)
        a->moved++;
    a->balance += 10;
}

static int tell_all(rp_router *router, account *acc)
{
    for (int d = 0; d < DEPOSITS; d++)
        for (int i = 0; i < ACCOUNTS; i++)
            if (rp_router_tell_key(router, acc[i].name, strlen(acc[i].name), deposit,
                                   &acc[i]) < 0) {
                fprintf(stderr, "keyed: rp_router_tell_key: %s\n", rp_errmsg());
                return -1;
            }
    return 0;
}

static int report(const account *acc)
{
    int ok = 1;

    for (int i = 0; i < ACCOUNTS; i++) {
        printf("%-10s -> routee %d, balance %ld\n", acc[i].name, acc[i].routee, acc[i].balance);
        ok &= acc[i].moved == 0 && acc[i].balance == 10L * DEPOSITS;
    }
    if (ok)
        printf("keyed: every account stayed on one routee, %d deposits\n", ACCOUNTS * DEPOSITS);
    return ok ? 0 : 1;
}

int main(void)
{
    rp_pool_options opts;
    rp_router_options ropts;
    rp_pool *pool;
    rp_router *router;
    account acc[ACCOUNTS];
    int rc;

    rp_pool_options_init(&opts);
    opts.name = "keyed";
    opts.routees = 4;
    if (rp_pool_create(&pool, &opts) < 0) {
        fprintf(stderr, "keyed: rp_pool_create: %s\n", rp_errmsg());
        return 1;
    }
    rp_router_options_init(&ropts);
    ropts.strategy = rp_strategy_consistent_hash(42); /* the seed fixes the key -> routee map */
    if (rp_router_create(&router, pool, &ropts) < 0) {
        fprintf(stderr, "keyed: rp_router_create: %s\n", rp_errmsg());
        rp_pool_destroy(pool);
        return 1;
    }
    for (int i = 0; i < ACCOUNTS; i++) {
        acc[i] = (account){.routee = -1};
        snprintf(acc[i].name, sizeof acc[i].name, "account-%d", i);
    }
    rc = tell_all(router, acc);
    if (rp_pool_wait_idle(pool, 10000) < 0)
        rc = -1;
    rp_router_destroy(router);
    rp_pool_destroy(pool);
    return rc < 0 ? 1 : report(acc);
}
