/* SPDX-License-Identifier: MIT */
/*
 * tests/test_gather.c - a routee that finds no work and has no CPU to
 * spare for spinning yields once; when the yield comes back at once (no
 * other thread wanted its CPU) it lets work gather before it looks again
 * (lib/worker.c, gather_alone; design.md, "Letting work gather").  When
 * another thread wants the CPU the yield runs that thread, and the routee
 * does not wait when it gets the CPU back.  Linked with the static
 * library: the count of gathering waits is private.
 *
 * The routees are pinned to one CPU with rp_pool_options.cpus and the test
 * thread to another, so what shares the routees' CPU is known.  Runs
 * alone (RUN_SERIAL): a busy neighbour on that CPU would make the "alone"
 * case see company.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>

#include "common.h"
#include "pool_record.h"
#include "routee_record.h"

TestSuite(gather, .fini = rp_leak_check);

#define JOBS 40

static atomic_int ran;
static atomic_bool spin_stop;

static void count_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_fetch_add(&ran, 1);
}

/* The n-th CPU this process may use, or -1. */
static int nth_cpu(int n)
{
    cpu_set_t set;
    int seen = 0;

    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &set) && seen++ == n)
            return cpu;
    return -1;
}

static void pin_self(int cpu)
{
    cpu_set_t one;

    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
}

/* A thread that always wants its CPU: it never blocks or yields. */
static void *spinner(void *p)
{
    pin_self(*(int *)p);
    while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
        ;
    return NULL;
}

static uint64_t gathers_of(rp_pool *p)
{
    uint64_t n = 0;

    for (unsigned i = 0; i < p->n; i++)
        n += atomic_load(&p->routees[i].gathers);
    return n;
}

/* Two routees on CPU `on`, the automatic idle policy (2 routees on 2
 * CPUs: no spin, a yield), JOBS jobs one at a time from the test thread
 * on the other CPU, each run before the next is sent.  Returns the
 * gathering waits the routees made. */
static uint64_t gathers_for_single_jobs(int on, int test_cpu)
{
    rp_pool_options o;
    rp_pool *p = NULL;
    int cpus[2] = {on, on};
    uint64_t before;

    rp_pool_options_init(&o);
    o.routees = 2;
    o.cpus = cpus;
    o.ncpus = 2;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    pin_self(test_cpu); /* after the create: it checks the caller's CPUs */
    cr_assert(p->idle_yield, "the automatic policy must yield here (2 routees, %ld CPUs)",
              sysconf(_SC_NPROCESSORS_ONLN));
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    atomic_store(&ran, 0);
    before = gathers_of(p);
    for (int i = 0; i < JOBS; i++) {
        cr_assert_eq(rp_pool_submit(p, count_job, NULL), 0);
        cr_assert_eq(rp_pool_wait_idle(p, 10000), 0);
        sleep_ms(1); /* the routee finishes its idle transition */
    }
    cr_assert_eq(atomic_load(&ran), JOBS, "every job runs exactly once");
    before = gathers_of(p) - before;
    rp_pool_destroy(p);
    return before;
}

Test(gather, routee_alone_on_its_cpu_lets_work_gather_after_its_yield, .timeout = 60)
{
    int a = nth_cpu(0), b = nth_cpu(1);
    uint64_t n;

    if (b < 0)
        cr_skip_test("needs two CPUs this process may use");
    n = gathers_for_single_jobs(a, b);
    /* One idle transition per job, each with its CPU free: a quick yield
     * and a wait.  Half is the margin for a neighbour on the CPU. */
    cr_assert_geq(n, JOBS / 2, "%llu gathering waits after %d jobs, each run on an "
                  "otherwise idle CPU", (unsigned long long)n, JOBS);
}

Test(gather, routee_whose_yield_runs_a_busy_thread_mostly_does_not_wait, .timeout = 60)
{
    int a = nth_cpu(0), b = nth_cpu(1);
    pthread_t th;
    uint64_t n;

    if (b < 0)
        cr_skip_test("needs two CPUs this process may use");
    atomic_store(&spin_stop, false);
    cr_assert_eq(pthread_create(&th, NULL, spinner, &a), 0);
    n = gathers_for_single_jobs(a, b);
    atomic_store(&spin_stop, true);
    pthread_join(th, NULL);
    /* A yield hands the CPU to the spinner for its time slice, unless the
     * scheduler finds the spinner has had more than its share (EEVDF
     * picks only eligible tasks): then the yield comes back at once and
     * the routee waits in the time that is its own anyway.  Measured here:
     * 9-14 waits in 40 (alone: 37-40). */
    cr_assert_leq(n, JOBS / 2, "%llu gathering waits in %d idle transitions with a busy "
                  "thread on the routees' CPU", (unsigned long long)n, JOBS);
}
