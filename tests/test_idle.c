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
