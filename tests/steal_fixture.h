/* SPDX-License-Identifier: MIT */
/*
 * tests/steal_fixture.h - the jobs and the router of the tests that
 * block a routee of a two-routee pool and watch what the other one takes
 * (test_thief, test_rescue): a gate job, a counting job under two names,
 * and a strategy that sends every submit to routee 0.
 */
#ifndef RP_TEST_STEAL_FIXTURE_H
#define RP_TEST_STEAL_FIXTURE_H

#include <stdatomic.h>

#include "common.h"

/* Jobs count_job ran, and those of them that ran on routee 1. */
static atomic_int ran, ran_on_1;

static inline void gate_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    gate_pass(arg);
}

static inline void count_job(rp_job_ctx *ctx, void *arg)
{
    (void)arg;
    if (rp_job_routee(ctx) == 1)
        atomic_fetch_add(&ran_on_1, 1);
    atomic_fetch_add(&ran, 1);
}

/* count_job under another name: tells of alternating functions never
 * share a record (lib/lane.c, "Growing"), so a steal's size is counted
 * in jobs, as the policy states it. */
static inline void count_job_too(rp_job_ctx *ctx, void *arg)
{
    count_job(ctx, arg);
}

static inline int to_zero(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                          size_t *out)
{
    (void)user, (void)st, (void)routees, (void)n;
    out[0] = 0;
    return 1;
}

#endif /* RP_TEST_STEAL_FIXTURE_H */
