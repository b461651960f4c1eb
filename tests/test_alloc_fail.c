/* SPDX-License-Identifier: MIT */
/*
 * tests/test_alloc_fail.c - calls that run out of memory keep their
 * contract: a failed call has sent nothing and arg is still the caller's.
 *
 * The library is linked statically with malloc, calloc and realloc
 * wrapped (-Wl,--wrap, see CMakeLists.txt): on the test thread, while
 * armed, the n-th allocation fails.  A test sweeps n from 0 until a call
 * runs through without reaching its n-th allocation, so every allocation
 * the call makes fails once.  Allocations on routee and timer threads are
 * never failed.  Works under ASan too: the real allocators are the
 * sanitizer's interceptors.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "common.h"

TestSuite(alloc_fail, .fini = rp_leak_check);

/* ---- the wrapped allocators ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

static _Thread_local long countdown = -1; /* -1: off */
static _Thread_local int injected;

static bool inject(void)
{
    if (countdown < 0 || countdown-- > 0)
        return false;
    injected++;
    return true; /* countdown is -1 now: one failure per arming */
}

void *__wrap_malloc(size_t n)
{
    return inject() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return inject() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return inject() ? NULL : __real_realloc(p, n);
}

/* ---- the job and the reply ---- */

typedef struct counts {
    atomic_int runs, handed_back, replies;
} counts;

static void job(rp_job_ctx *ctx, void *arg)
{
    counts *c = arg;

    atomic_fetch_add(&c->runs, 1);
    rp_job_reply(ctx, c);
}

static void on_reply(rp_future *f, void *user)
{
    (void)f;
    atomic_fetch_add(&((counts *)user)->replies, 1);
}

static void handed_back(void *arg, int reason, void *user)
{
    (void)reason;
    (void)user;
    atomic_fetch_add(&((counts *)arg)->handed_back, 1);
}

static rp_pool *new_pool(unsigned routees)
{
    rp_pool_options o;
    rp_pool *p = NULL;

    rp_pool_options_init(&o);
    o.routees = routees;
    o.on_undelivered = handed_back;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    return p;
}

/*
 * Fail each allocation of rp_router_tell_reply() in turn.  A failed call
 * must not have sent the job (no run, no hand-back, no reply); a call
 * that returned 0 replies exactly once.
 */
static void sweep_tell_reply(rp_pool *p, rp_router *rt)
{
    int failed_calls = 0;

    for (long n = 0; n < 1000; n++) {
        counts c = {0};
        int rc;

        injected = 0;
        countdown = n;
        rc = rp_router_tell_reply(rt, job, &c, 10000, on_reply, &c);
        countdown = -1;
        cr_assert_eq(rp_pool_wait_idle(p, 10000), 0);
        if (rc < 0) {
            failed_calls++;
            cr_expect_eq(rc, RP_ENOMEM, "allocation %ld: %s", n, rp_err_name(rc));
            cr_expect_eq(atomic_load(&c.runs), 0, "allocation %ld failed after the job was sent", n);
            cr_expect_eq(atomic_load(&c.handed_back), 0, "allocation %ld: arg handed back", n);
            cr_expect_eq(atomic_load(&c.replies), 0, "allocation %ld: reply called", n);
            continue;
        }
        cr_expect(wait_atomic_ge(&c.replies, 1, 10000), "allocation %ld: no reply", n);
        cr_expect_eq(atomic_load(&c.replies), 1);
        if (!injected)
            break; /* every allocation of the call succeeded: swept */
    }
    cr_expect_gt(failed_calls, 0, "no allocation failure reached the caller");
}

/* Issue 15 item 11: registering the reply could fail after the job was
 * sent, returning RP_ENOMEM although the job ran with arg. */
Test(alloc_fail, tell_reply_out_of_memory_has_sent_nothing)
{
    rp_pool *p = new_pool(1);

    sweep_tell_reply(p, rp_pool_router(p));
    rp_pool_destroy(p);
}

Test(alloc_fail, scatter_tell_reply_out_of_memory_has_sent_nothing)
{
    rp_pool *p = new_pool(2);
    rp_router *rt = NULL;

    cr_assert_eq(rp_router_create_scatter_gather(&rt, p, NULL, NULL), 0, "%s", rp_errmsg());
    sweep_tell_reply(p, rt);
    rp_router_destroy(rt);
    rp_pool_destroy(p);
}

Test(alloc_fail, promise_create_out_of_memory_leaves_nothing)
{
    rp_pool *p = new_pool(1);

    for (long n = 0; n < 100; n++) {
        rp_future *f = (rp_future *)1;
        int rc;

        injected = 0;
        countdown = n;
        rc = rp_future_create(&f, p, 10000);
        countdown = -1;
        if (rc < 0) {
            cr_expect_eq(rc, RP_ENOMEM);
            cr_expect_null(f);
            continue;
        }
        cr_expect_eq(rp_future_fail(f, -1, 1, "x"), 0);
        rp_future_release(f);
        rp_future_release(f);
        if (!injected)
            break;
    }
    rp_pool_destroy(p);
}
