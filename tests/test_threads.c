/* SPDX-License-Identifier: MIT */
/*
 * tests/test_threads.c - the routee threads' options: the start and stop
 * hooks, the stack size and the CPU set.
 *
 * The hooks record, per routee, how often they ran, on which thread, and
 * their place in one global sequence that the jobs also draw from: a
 * start hook must come before the routee's first job and a stop hook after
 * its last, on the thread that ran the jobs (pthread_self() recorded inside
 * a job), exactly once, however the pool ends (drain, abort, destroy
 * without a shutdown, one routee stopped).  What the hooks record is read
 * after rp_pool_shutdown() or rp_pool_destroy() returned: those join the
 * routee threads, so the reads need no more synchronisation than that.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>

#include "common.h"

TestSuite(threads, .fini = rp_leak_check);
TestSuite(threads_bad_input, .fini = rp_leak_check);

#define NR 4 /* routees of the hook tests */

/* What the hooks and jobs saw, per routee. */
typedef struct trace {
    atomic_int seq; /* the global order of hooks and jobs */
    atomic_int starts[NR], stops[NR], bad_index;
    int start_seq[NR], stop_seq[NR], first_job[NR], last_job[NR];
    pthread_t start_thr[NR], stop_thr[NR], job_thr[NR];
    atomic_int jobs[NR], wrong_thread; /* jobs not on the start hook's thread */
    gate *hold;   /* start hooks wait here when not NULL */
    rp_pool *pool; /* the pool the hooks must be given (set after create) */
    atomic_int wrong_pool;
} trace;

static void trace_init(trace *t, gate *hold)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < NR; i++)
        t->first_job[i] = t->last_job[i] = -1;
    t->hold = hold;
}

static void on_start(rp_pool *pool, int routee, void *user)
{
    trace *t = user;
    (void)pool;
    if (routee < 0 || routee >= NR) {
        atomic_fetch_add(&t->bad_index, 1);
        return;
    }
    t->start_thr[routee] = pthread_self();
    t->start_seq[routee] = atomic_fetch_add(&t->seq, 1);
    atomic_fetch_add(&t->starts[routee], 1);
    if (t->hold)
        gate_pass(t->hold); /* jobs are queued before this hook returns */
}

static void on_stop(rp_pool *pool, int routee, void *user)
{
    trace *t = user;
    if (routee < 0 || routee >= NR) {
        atomic_fetch_add(&t->bad_index, 1);
        return;
    }
    if (pool != t->pool)
        atomic_fetch_add(&t->wrong_pool, 1);
    t->stop_thr[routee] = pthread_self();
    t->stop_seq[routee] = atomic_fetch_add(&t->seq, 1);
    atomic_fetch_add(&t->stops[routee], 1);
}

static void trace_job(rp_job_ctx *ctx, void *arg)
{
    trace *t = arg;
    const int r = rp_job_routee(ctx);
    const int s = atomic_fetch_add(&t->seq, 1);
    if (t->first_job[r] < 0)
        t->first_job[r] = s;
    t->last_job[r] = s;
    t->job_thr[r] = pthread_self();
    if (!pthread_equal(pthread_self(), t->start_thr[r]))
        atomic_fetch_add(&t->wrong_thread, 1);
    atomic_fetch_add(&t->jobs[r], 1);
}

static rp_pool *hook_pool(trace *t, const char *name)
{
    rp_pool_options o;
    rp_pool *p = NULL;
    rp_pool_options_init(&o);
    o.name = name;
    o.routees = NR;
    o.on_undelivered = probe_undelivered;
    o.on_thread_start = on_start;
    o.on_thread_stop = on_stop;
    o.thread_user = t;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    t->pool = p;
    return p;
}

/* Tell jobs_each trace jobs to every routee while the start hooks wait on
 * the gate, then let the hooks return. */
static void queue_then_start(rp_pool *p, trace *t, gate *g, int jobs_each)
{
    cr_assert(gate_wait_entered(g, NR, 5000), "every start hook runs");
    for (int i = 0; i < NR; i++)
        for (int k = 0; k < jobs_each; k++)
            cr_assert_eq(rp_routee_tell(rp_pool_routee(p, (size_t)i), trace_job, t), 0);
    gate_open(g);
}

/* Once the pool's threads are joined: each hook ran once per routee, on
 * its thread, the start hook before the first job and the stop hook after
 * the last.  jobs_each: the jobs each routee ran. */
static void check_hooks(trace *t, int jobs_each)
{
    cr_assert_eq(atomic_load(&t->bad_index), 0);
    cr_assert_eq(atomic_load(&t->wrong_pool), 0, "the hooks get the pool");
    cr_assert_eq(atomic_load(&t->wrong_thread), 0, "jobs run on the start hook's thread");
    for (int i = 0; i < NR; i++) {
        cr_assert_eq(atomic_load(&t->starts[i]), 1, "routee %d: %d starts", i,
                     atomic_load(&t->starts[i]));
        cr_assert_eq(atomic_load(&t->stops[i]), 1, "routee %d: %d stops", i,
                     atomic_load(&t->stops[i]));
        cr_assert(pthread_equal(t->start_thr[i], t->stop_thr[i]), "routee %d", i);
        cr_assert_lt(t->start_seq[i], t->stop_seq[i]);
        cr_assert_eq(atomic_load(&t->jobs[i]), jobs_each, "routee %d", i);
        if (jobs_each == 0)
            continue;
        cr_assert(pthread_equal(t->job_thr[i], t->start_thr[i]), "routee %d", i);
        cr_assert_lt(t->start_seq[i], t->first_job[i], "routee %d: start before the first job", i);
        cr_assert_lt(t->last_job[i], t->stop_seq[i], "routee %d: stop after the last job", i);
    }
}

Test(threads, options_init_leaves_hooks_stack_and_cpu_set_unset, .timeout = 10)
{
    rp_pool_options o;
    memset(&o, 0xab, sizeof o);
    rp_pool_options_init(&o);
    cr_assert_null(o.on_thread_start);
    cr_assert_null(o.on_thread_stop);
    cr_assert_null(o.thread_user);
    cr_assert_eq(o.stack_size, 0u);
    cr_assert_null(o.cpus);
    cr_assert_eq(o.ncpus, 0u);
}

Test(threads, hooks_run_once_per_routee_around_its_jobs_on_drain_shutdown, .timeout = 20)
{
    static trace t;
    static gate g;
    gate_init(&g);
    trace_init(&t, &g);
    rp_pool *p = hook_pool(&t, "hk");
    queue_then_start(p, &t, &g, 25);
    cr_assert_eq(rp_pool_shutdown(p, RP_SHUTDOWN_DRAIN), 0);
    check_hooks(&t, 25); /* before destroy: shutdown waited for the stop hooks */
    rp_pool_destroy(p);
    check_hooks(&t, 25); /* destroy after shutdown runs no hook again */
    gate_destroy(&g);
}

Test(threads, hooks_run_once_per_routee_on_destroy_without_shutdown, .timeout = 20)
{
    static trace t;
    static gate g;
    gate_init(&g);
    trace_init(&t, &g);
    rp_pool *p = hook_pool(&t, "hd");
    queue_then_start(p, &t, &g, 10);
    rp_pool_destroy(p);
    check_hooks(&t, 10);
    gate_destroy(&g);
}

Test(threads, hooks_run_once_even_when_the_pool_is_destroyed_before_any_start, .timeout = 20)
{
    static trace t;
    trace_init(&t, NULL);
    rp_pool *p = hook_pool(&t, "h0");
    rp_pool_destroy(p); /* at once: some threads may not have started yet */
    check_hooks(&t, 0);
}

/* The abort test's jobs: the first on each routee blocks on a gate. */
typedef struct abort_arg {
    trace *t;
    gate *g;
} abort_arg;

static void blocking_job(rp_job_ctx *ctx, void *arg)
{
    abort_arg *a = arg;
    trace_job(ctx, a->t);
    gate_pass(a->g);
}

typedef struct shutdown_call {
    rp_pool *pool;
    int mode, rc;
} shutdown_call;

static void *call_shutdown(void *arg)
{
    shutdown_call *c = arg;
    c->rc = rp_pool_shutdown(c->pool, c->mode);
    return NULL;
}

Test(threads, stop_hook_runs_after_the_running_job_on_abort_shutdown, .timeout = 20)
{
    static trace t;
    static gate g;
    static probe queued[NR][20];
    gate_init(&g);
    trace_init(&t, NULL);
    rp_pool *p = hook_pool(&t, "ha");
    abort_arg a = {&t, &g};
    for (int i = 0; i < NR; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, (size_t)i), blocking_job, &a), 0);
    cr_assert(gate_wait_entered(&g, NR, 5000));
    for (int i = 0; i < NR; i++) {
        probe_init_n(queued[i], 20, NULL, 0, NULL);
        for (int k = 0; k < 20; k++)
            cr_assert_eq(rp_routee_tell(rp_pool_routee(p, (size_t)i), probe_job, &queued[i][k]), 0);
    }
    shutdown_call c = {p, RP_SHUTDOWN_ABORT, -1};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, call_shutdown, &c), 0);
    /* The shutdown has closed every mailbox (abort mode set first): now
     * the running jobs may finish. */
    const int64_t deadline = now_ms() + 5000;
    while (!rp_routee_stopped(rp_pool_routee(p, NR - 1)) && now_ms() < deadline)
        sleep_ms(1);
    gate_open(&g);
    pthread_join(th, NULL);
    cr_assert_eq(c.rc, 0);
    check_hooks(&t, 1);
    for (int i = 0; i < NR; i++)
        for (int k = 0; k < 20; k++) {
            cr_assert_eq(probe_runs(&queued[i][k]), 0);
            cr_assert_eq(probe_undel(&queued[i][k]), 1);
            cr_assert_eq(atomic_load(&queued[i][k].reason), RP_ESHUTDOWN);
        }
    rp_pool_destroy(p);
    check_hooks(&t, 1);
    gate_destroy(&g);
}

Test(threads, stop_hook_runs_when_one_routee_is_stopped, .timeout = 20)
{
    static trace t;
    static gate g;
    gate_init(&g);
    trace_init(&t, &g);
    rp_pool *p = hook_pool(&t, "hs");
    queue_then_start(p, &t, &g, 5);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(rp_routee_stop(rp_pool_routee(p, 2)), 0);
    cr_assert(wait_atomic_ge(&t.stops[2], 1, 5000), "the stopped routee's stop hook runs");
    for (int i = 0; i < NR; i++)
        if (i != 2)
            cr_assert_eq(atomic_load(&t.stops[i]), 0, "routee %d still runs", i);
    rp_pool_destroy(p);
    check_hooks(&t, 5);
    gate_destroy(&g);
}

/* ---- calling the pool from a hook ---- */

typedef struct inside {
    atomic_int self_runs;   /* jobs the start hooks told their own routee */
    atomic_int routed_runs; /* jobs the start hooks submitted */
    atomic_int self_wrong;  /* self-told jobs not on the hook's thread */
    pthread_t thr[NR];
    atomic_int started[NR];
    atomic_int start_fail;  /* a call in a start hook returned the wrong code */
    atomic_int stop_fail;   /* same, in a stop hook */
    atomic_int stops;
    atomic_int stop_accepted; /* submits from stop hooks that were accepted */
} inside;

static void self_job(rp_job_ctx *ctx, void *arg)
{
    inside *in = arg;
    const int r = rp_job_routee(ctx);
    if (!atomic_load(&in->started[r]) || !pthread_equal(pthread_self(), in->thr[r]))
        atomic_fetch_add(&in->self_wrong, 1);
    atomic_fetch_add(&in->self_runs, 1);
}

static void routed_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_fetch_add(&((inside *)arg)->routed_runs, 1);
}

static void calls_start(rp_pool *pool, int routee, void *user)
{
    inside *in = user;
    in->thr[routee] = pthread_self();
    bool ok = rp_pool_size(pool) == NR &&
              rp_routee_index(rp_pool_routee(pool, (size_t)routee)) == routee &&
              rp_routee_tell(rp_pool_routee(pool, (size_t)routee), self_job, in) == 0 &&
              rp_pool_submit(pool, routed_job, in) == 0 &&
              rp_pool_wait_idle(pool, 1000) == RP_EBUSY &&
              rp_pool_shutdown(pool, RP_SHUTDOWN_DRAIN) == RP_EBUSY;
    rp_pool_destroy(pool); /* refused: logs an error */
    if (!ok)
        atomic_fetch_add(&in->start_fail, 1);
    atomic_store(&in->started[routee], 1); /* last: self_job checks it */
}

static void calls_stop(rp_pool *pool, int routee, void *user)
{
    inside *in = user;
    (void)routee;
    /* The shutdown closes the mailboxes one by one: a routee not closed
     * yet may still accept the job, which then runs (drain). */
    const int rc = rp_pool_submit(pool, routed_job, in);
    if (rc == 0)
        atomic_fetch_add(&in->stop_accepted, 1);
    if ((rc != 0 && rc != RP_ESHUTDOWN) || rp_pool_shutdown(pool, RP_SHUTDOWN_DRAIN) != RP_EBUSY)
        atomic_fetch_add(&in->stop_fail, 1);
    rp_pool_destroy(pool); /* refused: logs an error */
    atomic_fetch_add(&in->stops, 1);
}

Test(threads, pool_is_usable_from_the_start_hook_and_self_told_jobs_run_after_it,
     .timeout = 20)
{
    static inside in;
    static logcap lc;
    memset(&in, 0, sizeof in);
    logcap_init(&lc);
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = "hc";
    o.routees = NR;
    o.on_thread_start = calls_start;
    o.on_thread_stop = calls_stop;
    o.thread_user = &in;
    o.log = logcap_fn;
    o.log_user = &lc;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    cr_assert(wait_atomic_ge(&in.self_runs, NR, 5000));
    cr_assert(wait_atomic_ge(&in.routed_runs, NR, 5000));
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(atomic_load(&in.start_fail), 0, "size, routee, tell, submit work; "
                 "wait_idle and shutdown return RP_EBUSY");
    cr_assert_eq(atomic_load(&in.self_wrong), 0,
                 "a job told to its own routee runs after the hook, on its thread");
    cr_assert_eq(logcap_count(&lc, RP_LOG_ERROR), NR, "destroy from a start hook is refused");
    rp_pool_destroy(p);
    cr_assert_eq(atomic_load(&in.stops), NR);
    cr_assert_eq(atomic_load(&in.stop_fail), 0,
                 "from the stop hook: submit 0 or RP_ESHUTDOWN, shutdown RP_EBUSY");
    cr_assert_eq(logcap_count(&lc, RP_LOG_ERROR), 2 * NR, "destroy from a stop hook is refused");
    cr_assert_eq(atomic_load(&in.self_runs), NR);
    cr_assert_eq(atomic_load(&in.routed_runs), NR + atomic_load(&in.stop_accepted),
                 "every job accepted from a stop hook ran (drain)");
}

/* ---- naming the thread from the start hook ---- */

static void rename_start(rp_pool *pool, int routee, void *user)
{
    char name[16];
    (void)pool;
    (void)user;
    snprintf(name, sizeof name, "worker-%d", routee);
    pthread_setname_np(pthread_self(), name);
}

static void name_job(rp_job_ctx *ctx, void *arg)
{
    char got[16] = "", want[16];
    pthread_getname_np(pthread_self(), got, sizeof got);
    snprintf(want, sizeof want, "worker-%d", rp_job_routee(ctx));
    atomic_fetch_add((atomic_int *)arg, strcmp(got, want) == 0 ? 1 : 1000);
}

Test(threads, start_hook_names_the_thread_after_the_pool_did, .timeout = 10)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 2;
    o.on_thread_start = rename_start;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    atomic_int named = 0;
    for (size_t i = 0; i < 2; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, i), name_job, &named), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    rp_pool_destroy(p);
    cr_assert_eq(atomic_load(&named), 2, "jobs see the name the start hook gave");
}

/* ---- stack size ---- */

typedef struct stack_arg {
    atomic_size_t size; /* pthread_getattr_np's stack size inside the job */
    atomic_int runs;
} stack_arg;

static void stack_job(rp_job_ctx *ctx, void *arg)
{
    stack_arg *a = arg;
    pthread_attr_t attr;
    size_t size = 0;
    (void)ctx;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstacksize(&attr, &size);
        pthread_attr_destroy(&attr);
    }
    atomic_store(&a->size, size);
    atomic_fetch_add(&a->runs, 1);
}

static size_t job_stack_size(size_t stack_size)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = "stk";
    o.routees = 1;
    o.stack_size = stack_size;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    stack_arg a;
    atomic_init(&a.size, 0);
    atomic_init(&a.runs, 0);
    cr_assert_eq(rp_pool_submit(p, stack_job, &a), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    rp_pool_destroy(p);
    cr_assert_eq(atomic_load(&a.runs), 1);
    return atomic_load(&a.size);
}

static void *report_stack(void *arg)
{
    stack_arg *a = arg;
    stack_job(NULL, a);
    return NULL;
}

Test(threads, stack_size_is_rounded_up_to_pages_and_seen_by_jobs, .timeout = 20)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    /* Under 2 MiB: glibc reuses a cached stack up to 4x the size asked,
     * and a default one (8 MiB) must not be reused here. */
    const size_t asked = ((size_t)1 << 20) + 100;
    const size_t want = (asked + page - 1) / page * page;
    /* The smaller first: a cached 512 KiB stack is too small to be
     * reused for the second pool. */
    size_t got = job_stack_size((size_t)1 << 19);
    cr_assert_eq(got, (size_t)1 << 19, "a page multiple is kept: got %zu", got);
    got = job_stack_size(asked);
    cr_assert_eq(got, want, "stack of %zu bytes, want %zu", got, want);
}

Test(threads, stack_size_zero_is_the_system_default, .timeout = 20)
{
    stack_arg plain;
    pthread_t th;
    atomic_init(&plain.size, 0);
    atomic_init(&plain.runs, 0);
    cr_assert_eq(pthread_create(&th, NULL, report_stack, &plain), 0);
    pthread_join(th, NULL);
    const size_t got = job_stack_size(0);
    cr_assert_eq(got, atomic_load(&plain.size), "default stack %zu, a plain thread's %zu", got,
                 atomic_load(&plain.size));
}

/* ---- CPU set ---- */

typedef struct cpu_arg {
    atomic_int on_cpu1, elsewhere, wide_mask, runs;
} cpu_arg;

/* The thread may run on CPU 1 only, and runs there. */
static bool only_on_cpu1(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    return pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0 &&
           CPU_COUNT(&set) == 1 && CPU_ISSET(1, &set) && sched_getcpu() == 1;
}

static void cpu_job(rp_job_ctx *ctx, void *arg)
{
    cpu_arg *a = arg;
    cpu_set_t set;
    (void)ctx;
    CPU_ZERO(&set);
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0 || CPU_COUNT(&set) != 1 ||
        !CPU_ISSET(1, &set))
        atomic_fetch_add(&a->wide_mask, 1);
    atomic_fetch_add(sched_getcpu() == 1 ? &a->on_cpu1 : &a->elsewhere, 1);
    atomic_fetch_add(&a->runs, 1);
}

static void cpu_start(rp_pool *pool, int routee, void *user)
{
    (void)pool;
    (void)routee;
    if (!only_on_cpu1())
        atomic_fetch_add(&((cpu_arg *)user)->wide_mask, 1);
}

static bool may_use_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_ISSET(cpu, &set);
}

Test(threads, cpu_set_pins_every_routee_to_its_cpu, .timeout = 20)
{
    if (!may_use_cpu(1))
        cr_skip_test("CPU 1 is not available to this process");
    cpu_arg a;
    atomic_init(&a.on_cpu1, 0);
    atomic_init(&a.elsewhere, 0);
    atomic_init(&a.wide_mask, 0);
    atomic_init(&a.runs, 0);
    int *cpus = malloc(sizeof *cpus);
    cr_assert_not_null(cpus);
    cpus[0] = 1;
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = "cpu";
    o.routees = 2;
    o.pin_cpus = true; /* a CPU set wins over pin_cpus */
    o.cpus = cpus;
    o.ncpus = 1;
    o.on_thread_start = cpu_start;
    o.thread_user = &a;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    free(cpus); /* copied at create */
    for (int k = 0; k < 200; k++)
        cr_assert_eq(rp_pool_submit(p, cpu_job, &a), 0);
    for (size_t i = 0; i < 2; i++)
        for (int k = 0; k < 50; k++)
            cr_assert_eq(rp_routee_tell(rp_pool_routee(p, i), cpu_job, &a), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 10000), 0);
    rp_pool_destroy(p);
    cr_assert_eq(atomic_load(&a.runs), 300);
    cr_assert_eq(atomic_load(&a.wide_mask), 0, "every routee may run on CPU 1 only");
    cr_assert_eq(atomic_load(&a.on_cpu1), 300, "%d jobs ran elsewhere",
                 atomic_load(&a.elsewhere));
}

/* ---- validation ---- */

static void refused(const rp_pool_options *o, int code, const char *needle)
{
    rp_pool *p = (rp_pool *)&p; /* not NULL: a failed create sets NULL */
    const int rc = rp_pool_create(&p, o);
    cr_assert_eq(rc, code, "got %s (%s)", rp_err_name(rc), rp_errmsg());
    cr_assert_null(p);
    cr_assert(strstr(rp_errmsg(), needle) != NULL, "message '%s' lacks '%s'", rp_errmsg(),
              needle);
    cr_assert(strstr(rp_errmsg(), "rp_pool_create") != NULL, "%s", rp_errmsg());
}

static void count_start(rp_pool *pool, int routee, void *user)
{
    (void)pool;
    (void)routee;
    atomic_fetch_add((atomic_int *)user, 1);
}

static void base_options(rp_pool_options *o, atomic_int *started)
{
    rp_pool_options_init(o);
    o->routees = 2;
    o->on_thread_start = count_start;
    o->on_thread_stop = count_start;
    o->thread_user = started;
}

Test(threads_bad_input, stack_size_below_pthread_stack_min_is_refused, .timeout = 10)
{
    atomic_int started = 0;
    rp_pool_options o;
    base_options(&o, &started);
    o.stack_size = (size_t)sysconf(_SC_THREAD_STACK_MIN) - 1;
    refused(&o, RP_EINVAL, "opts.stack_size");
    o.stack_size = 1;
    refused(&o, RP_EINVAL, "opts.stack_size");
    o.stack_size = SIZE_MAX; /* cannot be rounded up to the page size */
    refused(&o, RP_EINVAL, "opts.stack_size");
    cr_assert_eq(atomic_load(&started), 0, "no thread started, no hook ran");
}

Test(threads_bad_input, stack_size_at_pthread_stack_min_is_accepted, .timeout = 10)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 1;
    /* Page-rounded and at least PTHREAD_STACK_MIN: the routee starts and
     * sleeps (the job is not run: a sanitizer's frames may need more). */
    o.stack_size = (size_t)sysconf(_SC_THREAD_STACK_MIN);
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    rp_pool_destroy(p);
}

Test(threads_bad_input, stack_size_the_system_cannot_give_fails_with_esys, .timeout = 10)
{
    atomic_int started = 0;
    rp_pool_options o;
    base_options(&o, &started);
    o.stack_size = (size_t)1 << 46; /* 64 TiB: more than memory and swap */
    refused(&o, RP_ESYS, "opts.stack_size");
    cr_assert_eq(atomic_load(&started), 0);
}

Test(threads_bad_input, cpus_and_ncpus_must_agree, .timeout = 10)
{
    atomic_int started = 0;
    const int cpus[1] = {0};
    rp_pool_options o;
    base_options(&o, &started);
    o.ncpus = 1;
    refused(&o, RP_EINVAL, "opts.cpus is NULL");
    o.cpus = cpus;
    o.ncpus = 0;
    refused(&o, RP_EINVAL, "opts.ncpus is 0");
    o.ncpus = RP_ROUTEES_MAX + 1u;
    refused(&o, RP_EINVAL, "opts.ncpus must be");
    cr_assert_eq(atomic_load(&started), 0);
}

Test(threads_bad_input, cpus_outside_the_process_affinity_are_refused_by_index, .timeout = 10)
{
    atomic_int started = 0;
    int cpus[3] = {0, -1, 0};
    char want[64];
    rp_pool_options o;
    base_options(&o, &started);
    cr_assert(may_use_cpu(0) || may_use_cpu(1));
    cpus[0] = cpus[2] = may_use_cpu(0) ? 0 : 1;
    o.cpus = cpus;
    o.ncpus = 3;
    refused(&o, RP_EINVAL, "opts.cpus[1] is CPU -1");
    cpus[1] = CPU_SETSIZE;
    snprintf(want, sizeof want, "opts.cpus[1] is CPU %d", CPU_SETSIZE);
    refused(&o, RP_EINVAL, want);
    /* The first CPU this process may not use (e.g. CPU 2 on 2 CPUs). */
    int absent = 0;
    while (absent < CPU_SETSIZE && may_use_cpu(absent))
        absent++;
    cr_assert_lt(absent, CPU_SETSIZE);
    cpus[1] = cpus[0];
    cpus[2] = absent;
    snprintf(want, sizeof want, "opts.cpus[2] is CPU %d", absent);
    refused(&o, RP_EINVAL, want);
    refused(&o, RP_EINVAL, "sched_getaffinity allows");
    cr_assert_eq(atomic_load(&started), 0);
    /* Repeats of an allowed CPU are fine. */
    cpus[2] = cpus[0];
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    rp_pool_destroy(p);
    cr_assert_eq(atomic_load(&started), 4, "2 start and 2 stop hooks");
}
