/* SPDX-License-Identifier: MIT */
/*
 * tests/lane_fixture.h - a lane on an arena of its own, for the tests
 * that drive the private lane API (test_lane, test_owner).  One lane at a
 * time per test (the arena is the file's).
 */
#ifndef RP_TEST_LANE_FIXTURE_H
#define RP_TEST_LANE_FIXTURE_H

#include <criterion/criterion.h>

#include "lane.h"

static rp__arena lane_arena;

static inline void lane_up(rp__lane *lane)
{
    rp__arena_create(&lane_arena);
    cr_assert_eq(rp__lane_init(lane, &lane_arena), 0);
}

static inline void lane_down(rp__lane *lane)
{
    rp__lane_destroy(lane);
    rp__arena_destroy(&lane_arena);
}

#endif
