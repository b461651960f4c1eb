/* SPDX-License-Identifier: MIT */
/*
 * tests/test_idle.c - an idle pool sleeps: it costs (almost) no CPU.
 *
 * Runs alone (RUN_SERIAL in CMake): it measures this process's CPU time,
 * and other tests running next to it must not confuse a busy machine with a
 * busy pool.  The Criterion child process running the test holds only the
 * pool's threads and the test thread, so RUSAGE_SELF is the pool's cost.
 */
#include <criterion/criterion.h>
#include <sys/resource.h>

#include "common.h"

TestSuite(idle, .fini = rp_leak_check);

static int64_t cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
           ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static void nop_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
}

static void assert_idle_cost(rp_pool *p)
{
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    sleep_ms(100); /* let routees finish any spin-then-sleep phase */
    const int64_t before = cpu_us();
    sleep_ms(1000);
    const int64_t used = cpu_us() - before;
    cr_assert_lt(used, 10000, "idle pool of 4 used %lld us of CPU in 1 s "
                 "(limit 10000 us, 1%% of a core)", (long long)used);
}

Test(idle, pool_of_4_uses_under_1_percent_of_a_core, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "idle", 4, 0, 0, rp_strategy_round_robin()), 0);
    assert_idle_cost(p);
    rp_pool_destroy(p);
}

Test(idle, pool_of_4_after_work_uses_under_1_percent_of_a_core,
     .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "idle", 4, 0, 0, rp_strategy_round_robin()), 0);
    for (int i = 0; i < 10000; i++)
        cr_assert_eq(rp_pool_submit(p, nop_job, NULL), 0);
    assert_idle_cost(p);
    rp_pool_destroy(p);
}

static uint64_t sleeps_of(rp_pool *p)
{
    rp_routee_stats st;
    cr_assert_eq(rp_routee_stats_get(rp_pool_routee(p, 0), &st), 0);
    return st.sleeps;
}

/* 50 jobs 1 ms apart to one routee with the given spin window; how many
 * times it slept in between. */
static uint64_t sleeps_between_jobs(unsigned spin_us)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 1;
    o.idle_spin_us = spin_us;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_pool_submit(p, nop_job, NULL), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    sleep_ms(50); /* past any spin window: asleep now */
    uint64_t before = sleeps_of(p);
    for (int i = 0; i < 50; i++) {
        cr_assert_eq(rp_pool_submit(p, nop_job, NULL), 0);
        sleep_ms(1);
    }
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    /* The sleep after the last job, if it came already, is not "between". */
    uint64_t between = sleeps_of(p) - before;
    rp_routee_stats st;
    cr_assert_eq(rp_routee_stats_get(rp_pool_routee(p, 0), &st), 0);
    cr_assert_eq(st.run, 51);
    rp_pool_destroy(p);
    return between;
}

Test(idle, routee_spinning_10ms_does_not_sleep_between_jobs_1ms_apart, .timeout = 30)
{
    uint64_t n = sleeps_between_jobs(10000);
    /* Allow a few: a spinner preempted for longer than its window on a
     * loaded machine sleeps; the point is not one sleep per job. */
    cr_assert_leq(n, 6, "slept %llu times between 50 jobs", (unsigned long long)n);
}

Test(idle, routee_without_spin_sleeps_after_every_job, .timeout = 30)
{
    uint64_t n = sleeps_between_jobs(0);
    cr_assert_geq(n, 45, "slept only %llu times between 50 jobs 1 ms apart",
                  (unsigned long long)n);
}
