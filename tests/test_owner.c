/* SPDX-License-Identifier: MIT */
/*
 * tests/test_owner.c - the owner-only contract of lanes and mailboxes
 * (lib/lane.h, "Owner checks"): in debug and sanitizer builds the first
 * owner-only call on a lane records the calling thread, further calls from
 * that thread and any thief's calls go through, and an owner-only call
 * from another thread aborts (SIGABRT).  Release builds compile the check
 * out, so there the death tests are skipped.  Linked with the static
 * library: lanes and mailboxes are private.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "common.h"
#include "lane_fixture.h"
#include "mailbox.h"

TestSuite(owner, .fini = rp_leak_check);

static void noop(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
}

/* A thief on another thread: steals are anyone's. */
static void *steal_one(void *p)
{
    rp__job out[2];

    return (void *)(uintptr_t)rp__lane_steal(p, out, 2);
}

Test(owner, the_owner_and_thieves_use_a_lane_without_abort)
{
    rp__lane lane;
    rp__job job = {.fn = noop}, out[2 + RP__LANE_BULK - 1];
    pthread_t th;
    void *stolen;

    lane_up(&lane);
    cr_assert_eq(rp__lane_push_mp(&lane, &job, false), 0);
    cr_assert_eq(rp__lane_push_mp(&lane, &job, false), 0);
    cr_assert(rp__lane_pop_owner(&lane, &out[0]));
    cr_assert_eq(rp__lane_pop_owner_run(&lane, out, 2), 1);
    rp__lane_flush(&lane);
    cr_assert_eq(rp__lane_push_mp(&lane, &job, false), 0);
    cr_assert_eq(pthread_create(&th, NULL, steal_one, &lane), 0);
    cr_assert_eq(pthread_join(th, &stolen), 0);
    cr_assert_eq((uintptr_t)stolen, 1);
    cr_assert_not(rp__lane_pop_owner(&lane, &out[0]));
    lane_down(&lane);
}

#ifdef RP__OWNER_CHECKS
/* The thread that becomes the lane's owner: one owner-only call. */
static void *own(void *p)
{
    rp__job job;

    rp__lane_pop_owner(p, &job);
    return NULL;
}

static void owned_by_another_thread(rp__lane *lane)
{
    pthread_t th;

    cr_assert_eq(pthread_create(&th, NULL, own, lane), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);
}

Test(owner, a_pop_owner_from_another_thread_aborts, .signal = SIGABRT)
{
    rp__lane lane;
    rp__job job;

    lane_up(&lane);
    owned_by_another_thread(&lane);
    rp__lane_pop_owner(&lane, &job);
    lane_down(&lane);
}

Test(owner, a_pop_owner_run_from_another_thread_aborts, .signal = SIGABRT)
{
    rp__lane lane;
    rp__job out[4];

    lane_up(&lane);
    owned_by_another_thread(&lane);
    rp__lane_pop_owner_run(&lane, out, 4);
    lane_down(&lane);
}

Test(owner, a_lane_flush_from_another_thread_aborts, .signal = SIGABRT)
{
    rp__lane lane;

    lane_up(&lane);
    owned_by_another_thread(&lane);
    rp__lane_flush(&lane);
    lane_down(&lane);
}

static void *own_mailbox(void *p)
{
    rp__job jobs[RP__LANE_BULK];

    rp__mailbox_pop_owner_run(p, jobs, 1);
    return NULL;
}

static void handback(void *owner, void *arg, int reason, rp__reply *reply)
{
    (void)owner, (void)arg, (void)reason, (void)reply;
}

Test(owner, a_mailbox_release_owner_from_another_thread_aborts, .signal = SIGABRT)
{
    rp__mailbox mb;
    pthread_t th;

    rp__arena_create(&lane_arena);
    cr_assert_eq(rp__mailbox_init(&mb, &lane_arena, 0, RP_OVERFLOW_REJECT, handback, NULL, 0), 0);
    cr_assert_eq(pthread_create(&th, NULL, own_mailbox, &mb), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);
    rp__mailbox_release_owner(&mb, 0);
    rp__mailbox_destroy(&mb);
    rp__arena_destroy(&lane_arena);
}
#else
Test(owner, wrong_thread_calls_are_not_checked_in_release_builds)
{
    cr_skip_test("owner checks are compiled out (NDEBUG, no sanitizer)");
}
#endif
