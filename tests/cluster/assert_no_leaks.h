/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/assert_no_leaks.h - ASSERT_NO_LEAKS() for the cluster's
 * Criterion tests: LeakSanitizer does not fail a Criterion test by itself,
 * so under ASan (RP_TEST_ASAN) a test asks it and asserts no leak; in
 * other builds it does nothing.  Include after <criterion/criterion.h>.
 */
#ifndef RP_TESTS_ASSERT_NO_LEAKS_H
#define RP_TESTS_ASSERT_NO_LEAKS_H

#ifdef RP_TEST_ASAN
#include <sanitizer/lsan_interface.h>
#define ASSERT_NO_LEAKS() cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "leaks (see stderr)")
#else
#define ASSERT_NO_LEAKS() ((void)0)
#endif

#endif /* RP_TESTS_ASSERT_NO_LEAKS_H */
