/* SPDX-License-Identifier: MIT */
/*
 * tests/test_pool.c - the pool itself: thread names, job context, pinned
 * tells, stopping routees, shutdown (drain and abort), wait_idle, calls
 * made from inside a job, and per-routee counters.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <sched.h>
#include <stdlib.h>

#include "common.h"

TestSuite(pool, .fini = rp_leak_check);
TestSuite(shutdown, .fini = rp_leak_check);

static tlog LOG;

static void setup(void)
{
    tlog_init(&LOG);
}

static rp_routee_stats stats_of(rp_pool *p, size_t i)
{
    rp_routee_stats st;
    cr_assert_eq(rp_routee_stats_get(rp_pool_routee(p, i), &st), 0);
    return st;
}

/* ---- thread names ---- */

typedef struct name_arg {
    atomic_int checked;
    atomic_int mismatches;
} name_arg;

static void name_job(rp_job_ctx *ctx, void *arg)
{
    name_arg *a = arg;
    char got[16] = "", want[32];
    pthread_getname_np(pthread_self(), got, sizeof got);
    snprintf(want, sizeof want, "rp-tn-%d", rp_job_routee(ctx));
    if (strcmp(got, want) != 0)
        atomic_fetch_add(&a->mismatches, 1);
    atomic_fetch_add(&a->checked, 1);
}

Test(pool, thread_names_are_rp_name_index, .init = setup, .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "tn", 3, 0, 0, rp_strategy_round_robin()), 0);
    name_arg a;
    atomic_init(&a.checked, 0);
    atomic_init(&a.mismatches, 0);
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, i), name_job, &a), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(atomic_load(&a.checked), 3);
    cr_assert_eq(atomic_load(&a.mismatches), 0,
                 "a routee's pthread name is not rp-tn-<index>");

    /* And from outside: exactly one thread per name in /proc. */
    int seen[3] = {0}, other_rp = 0, timers = 0;
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
        if (strncmp(comm, "rp-", 3) != 0)
            continue;
        int idx = -1;
        if (strcmp(comm, "rp-tn-t") == 0)
            timers++; /* the pool's timer thread (asks, scatters) */
        else if (sscanf(comm, "rp-tn-%d", &idx) == 1 && idx >= 0 && idx < 3)
            seen[idx]++;
        else
            other_rp++;
    }
    closedir(d);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(seen[i], 1, "%d threads named rp-tn-%d", seen[i], i);
    cr_assert_eq(other_rp, 0, "unexpected rp- threads");
    cr_assert_eq(timers, 1, "%d timer threads named rp-tn-t", timers);
    rp_pool_destroy(p);
}

/* ---- job context ---- */

Test(pool, job_routee_matches_the_routee_told, .init = setup, .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "ctx", 4, 0, 0, rp_strategy_round_robin()), 0);
    cr_assert_eq(rp_pool_size(p), 4u);
    probe pr[4][5];
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(rp_routee_index(rp_pool_routee(p, i)), (int)i);
        probe_init_n(pr[i], 5, &LOG, (int)(10 * i), NULL);
        for (int k = 0; k < 5; k++)
            cr_assert_eq(rp_routee_tell(rp_pool_routee(p, i), probe_job,
                                        &pr[i][k]), 0);
    }
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    for (size_t i = 0; i < 4; i++) {
        for (int k = 0; k < 5; k++) {
            cr_assert_eq(probe_runs(&pr[i][k]), 1);
            cr_assert_eq(probe_routee(&pr[i][k]), (int)i,
                         "told routee %zu, ran on %d", i,
                         probe_routee(&pr[i][k]));
            cr_assert_eq(atomic_load(&pr[i][k].pool), p);
        }
        const rp_routee_stats st = stats_of(p, i);
        cr_assert_eq(st.enqueued, 5u);
        cr_assert_eq(st.run, 5u);
    }
    cr_assert_eq(tlog_nrun(&LOG), 20);
    rp_pool_destroy(p);
}

Test(pool, pinned_tells_run_in_order, .init = setup, .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "ord", 2, 0, 0, rp_strategy_round_robin()), 0);
    enum { N = 500 };
    static probe pr[N];
    probe_init_n(pr, N, &LOG, 0, NULL);
    for (int i = 0; i < N; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 1), probe_job, &pr[i]),
                     0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(tlog_nrun(&LOG), N);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(LOG.run_tag[i], i, "position %d ran job %d", i,
                     LOG.run_tag[i]);
        cr_assert_eq(LOG.run_routee[i], 1);
    }
    rp_pool_destroy(p);
}

/* ---- stopping one routee ---- */

Test(pool, stopped_routee_hands_queued_jobs_back_with_estopped,
     .init = setup, .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "stp", 2, 0, 0, rp_strategy_round_robin()), 0);
    gate g;
    gate_init(&g);
    probe hold;
    probe_init(&hold, &LOG, 100, &g);
    rp_routee *r0 = rp_pool_routee(p, 0);
    cr_assert_eq(rp_routee_tell(r0, probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000));
    cr_assert(rp_routee_busy(r0));
    probe q[5];
    probe_init_n(q, 5, &LOG, 0, NULL);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(rp_routee_tell(r0, probe_job, &q[i]), 0);

    cr_assert_eq(rp_routee_stop(r0), 0, "stop returns without waiting");
    cr_assert(rp_routee_stopped(r0));
    cr_assert_not(rp_routee_stopped(rp_pool_routee(p, 1)));
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);

    cr_assert_eq(probe_runs(&hold), 1, "the running job finishes");
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(probe_runs(&q[i]), 0, "queued job %d ran", i);
        cr_assert_eq(probe_undel(&q[i]), 1);
        cr_assert_eq(atomic_load(&q[i].reason), RP_ESTOPPED, "job %d: %s", i,
                     rp_err_name(atomic_load(&q[i].reason)));
    }
    const rp_routee_stats st = stats_of(p, 0);
    cr_assert_eq(st.enqueued, 6u);
    cr_assert_eq(st.run, 1u);
    cr_assert_eq(st.undelivered, 5u);
    cr_assert_eq(st.dropped, 0u);

    /* The pool keeps working on the live routee. */
    probe after[4];
    probe_init_n(after, 4, &LOG, 200, NULL);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(rp_pool_submit(p, probe_job, &after[i]), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(probe_runs(&after[i]), 1);
        cr_assert_eq(probe_routee(&after[i]), 1);
    }
    rp_pool_destroy(p);
    gate_destroy(&g);
}

/* ---- shutdown ---- */

typedef struct opener {
    rp_pool *pool;
    gate *gate;
    bool saw_stopped;
} opener;

/* Opens the gate once shutdown has visibly begun (every routee stopped), so
 * the queued jobs are still queued when the shutdown mode is applied.  If
 * the flags only flip later, it opens after 1 s: shutdown has long been
 * called by then. */
static void *open_after_stop(void *arg)
{
    opener *o = arg;
    const int64_t deadline = now_ms() + 1000;
    const size_t n = rp_pool_size(o->pool);
    for (;;) {
        size_t stopped = 0;
        for (size_t i = 0; i < n; i++)
            stopped += rp_routee_stopped(rp_pool_routee(o->pool, i));
        if (stopped == n) {
            o->saw_stopped = true;
            break;
        }
        if (now_ms() > deadline)
            break;
        sleep_ms(1);
    }
    sleep_ms(20);
    gate_open(o->gate);
    return NULL;
}

static void shutdown_with_queue(int mode, probe *holds, probe (*q)[50],
                                opener *op)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "sd", 2, 0, 0, rp_strategy_round_robin()), 0);
    static gate g;
    gate_init(&g);
    cr_assert(block_all_routees(p, holds, &LOG, &g));
    for (size_t i = 0; i < 2; i++) {
        probe_init_n(q[i], 50, &LOG, (int)(100 * i), NULL);
        for (int k = 0; k < 50; k++)
            cr_assert_eq(rp_routee_tell(rp_pool_routee(p, i), probe_job,
                                        &q[i][k]), 0);
        cr_assert_eq(rp_routee_depth(rp_pool_routee(p, i)), 50);
    }
    *op = (opener){.pool = p, .gate = &g};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, open_after_stop, op), 0);
    const int rc = rp_pool_shutdown(p, mode);
    pthread_join(t, NULL);
    cr_assert_eq(rc, 0);
    probe late;
    probe_init(&late, &LOG, 999, NULL);
    cr_assert_eq(rp_pool_submit(p, probe_job, &late), RP_ESHUTDOWN);
    const int trc = rp_routee_tell(rp_pool_routee(p, 0), probe_job, &late);
    cr_assert_eq(trc, RP_ESHUTDOWN, "tell after shutdown: %s", rp_err_name(trc));
    cr_assert_eq(rp_pool_wait_idle(p, 1000), 0);
    cr_assert_eq(rp_pool_shutdown(p, mode), 0, "second shutdown is a no-op");
    rp_pool_destroy(p);
    gate_destroy(&g);
    cr_assert_eq(probe_runs(&late) + probe_undel(&late), 0);
}

Test(shutdown, drain_runs_everything_queued, .init = setup, .timeout = 20)
{
    probe holds[2], q[2][50];
    opener op;
    shutdown_with_queue(RP_SHUTDOWN_DRAIN, holds, q, &op);
    cr_assert_eq(tlog_nrun(&LOG), 102);
    cr_assert_eq(tlog_nundel(&LOG), 0);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 50; k++) {
            cr_assert_eq(probe_runs(&q[i][k]), 1);
            cr_assert_eq(probe_routee(&q[i][k]), i);
        }
}

Test(shutdown, abort_hands_queued_jobs_back_with_eshutdown, .init = setup,
     .timeout = 20)
{
    probe holds[2], q[2][50];
    opener op;
    shutdown_with_queue(RP_SHUTDOWN_ABORT, holds, q, &op);
    cr_assert_eq(tlog_nrun(&LOG), 2, "only the running jobs finish");
    cr_assert_eq(probe_runs(&holds[0]), 1);
    cr_assert_eq(probe_runs(&holds[1]), 1);
    cr_assert_eq(tlog_nundel(&LOG), 100);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 50; k++) {
            cr_assert_eq(probe_runs(&q[i][k]), 0);
            cr_assert_eq(probe_undel(&q[i][k]), 1);
            cr_assert_eq(atomic_load(&q[i][k].reason), RP_ESHUTDOWN,
                         "job %d/%d: %s", i, k,
                         rp_err_name(atomic_load(&q[i][k].reason)));
        }
}

static atomic_int destroyed_runs;

static void count_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_fetch_add_explicit(&destroyed_runs, 1, memory_order_relaxed);
}

Test(shutdown, destroy_without_shutdown_drains, .timeout = 20)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "dd", 3, 0, 0, rp_strategy_round_robin()), 0);
    atomic_init(&destroyed_runs, 0);
    for (int i = 0; i < 3000; i++)
        cr_assert_eq(rp_pool_submit(p, count_job, NULL), 0);
    rp_pool_destroy(p);
    cr_assert_eq(atomic_load(&destroyed_runs), 3000);
}

/* ---- wait_idle ---- */

Test(pool, wait_idle_times_out_while_a_job_runs, .init = setup,
     .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "wi", 2, 0, 0, rp_strategy_round_robin()), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 0), 0, "a new pool is idle");
    gate g;
    gate_init(&g);
    probe hold;
    probe_init(&hold, &LOG, 0, &g);
    cr_assert_eq(rp_pool_submit(p, probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000));
    const int64_t t0 = now_ms();
    cr_assert_eq(rp_pool_wait_idle(p, 100), RP_ETIMEDOUT);
    const int64_t waited = now_ms() - t0;
    cr_assert(waited >= 90 && waited < 2000, "waited %lld ms for 100",
              (long long)waited);
    cr_assert_eq(rp_pool_wait_idle(p, 0), RP_ETIMEDOUT);
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, -1), 0);
    cr_assert_eq(probe_runs(&hold), 1);
    rp_pool_destroy(p);
    gate_destroy(&g);
}

/* An on_undelivered that takes its time, as one that frees or logs may. */
static void slow_undelivered(void *arg, int reason, void *user)
{
    (void)user;
    sleep_ms(100);
    probe_undelivered(arg, reason, NULL);
}

Test(pool, wait_idle_returns_only_after_handed_back_jobs_reached_callback,
     .init = setup, .timeout = 20)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = "slowcb";
    o.routees = 2;
    o.on_undelivered = slow_undelivered;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0);
    gate g;
    gate_init(&g);
    probe hold, q[3];
    probe_init(&hold, &LOG, -1, &g);
    probe_init_n(q, 3, &LOG, 0, NULL);
    rp_routee *r0 = rp_pool_routee(p, 0);
    cr_assert_eq(rp_routee_tell(r0, probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(rp_routee_tell(r0, probe_job, &q[i]), 0);
    cr_assert_eq(rp_routee_stop(r0), 0);
    gate_open(&g);

    /* "Idle" means every accepted job has run or been handed back: the
     * moment wait_idle says so, all three must have reached the callback. */
    int rc;
    const int64_t deadline = now_ms() + 5000;
    while ((rc = rp_pool_wait_idle(p, 0)) == RP_ETIMEDOUT &&
           now_ms() < deadline) {
    }
    cr_assert_eq(rc, 0);
    int handed = 0;
    for (int i = 0; i < 3; i++)
        handed += probe_undel(&q[i]);
    cr_assert_eq(handed, 3, "wait_idle returned 0 when only %d of 3 stopped "
                 "jobs had been handed back", handed);
    rp_pool_destroy(p);
    gate_destroy(&g);
}

/* ---- calls from inside a job ---- */

typedef struct inside {
    atomic_int wait_rc, shutdown_rc, inner_runs, submit_rc;
    logcap *log;
} inside;

static void inner_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_fetch_add(&((inside *)arg)->inner_runs, 1);
}

static void outer_job(rp_job_ctx *ctx, void *arg)
{
    inside *in = arg;
    rp_pool *p = rp_job_pool(ctx);
    atomic_store(&in->wait_rc, rp_pool_wait_idle(p, 0));
    atomic_store(&in->shutdown_rc, rp_pool_shutdown(p, RP_SHUTDOWN_DRAIN));
    rp_pool_destroy(p); /* must do nothing but log an error */
    atomic_store(&in->submit_rc, rp_pool_submit(p, inner_job, in));
}

Test(pool, calls_from_a_routee_thread_are_refused_or_allowed,
     .init = setup, .timeout = 10)
{
    logcap lc;
    logcap_init(&lc);
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = "in";
    o.routees = 2;
    o.log = logcap_fn;
    o.log_user = &lc;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0);
    inside in = {.log = &lc};
    atomic_init(&in.wait_rc, 1);
    atomic_init(&in.shutdown_rc, 1);
    atomic_init(&in.inner_runs, 0);
    atomic_init(&in.submit_rc, 1);
    cr_assert_eq(rp_pool_submit(p, outer_job, &in), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(atomic_load(&in.wait_rc), RP_EBUSY);
    cr_assert_eq(atomic_load(&in.shutdown_rc), RP_EBUSY);
    cr_assert_eq(atomic_load(&in.submit_rc), 0, "submit from a job: %s",
                 rp_err_name(atomic_load(&in.submit_rc)));
    cr_assert_eq(atomic_load(&in.inner_runs), 1,
                 "wait_idle must cover a job submitted by a job");
    cr_assert_geq(logcap_count(&lc, RP_LOG_ERROR), 1,
                  "destroy from a routee thread logs an error");
    rp_pool_destroy(p);
}

/* ---- CPU pinning ---- */

typedef struct pin_arg {
    atomic_int ok, bad;
} pin_arg;

static void pin_job(rp_job_ctx *ctx, void *arg)
{
    pin_arg *a = arg;
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    const bool pinned =
        sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1 &&
        CPU_ISSET(rp_job_routee(ctx) % (int)online, &set);
    atomic_fetch_add(pinned ? &a->ok : &a->bad, 1);
}

Test(pool, pin_cpus_pins_routee_i_to_cpu_i_mod_online, .init = setup,
     .timeout = 10)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = "pin";
    o.routees = 3;
    o.pin_cpus = true;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    pin_arg a;
    atomic_init(&a.ok, 0);
    atomic_init(&a.bad, 0);
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, i), pin_job, &a), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(atomic_load(&a.ok), 3, "%d routees not pinned to CPU i %% "
                 "online", atomic_load(&a.bad));
    rp_pool_destroy(p);
}

/* ---- counters ---- */

Test(pool, stats_count_every_job_per_routee, .init = setup, .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "st", 2, 0, 0, rp_strategy_round_robin()), 0);
    static probe pr[2][50];
    for (size_t i = 0; i < 2; i++) {
        probe_init_n(pr[i], 50, &LOG, 0, NULL);
        for (int k = 0; k < 50; k++)
            cr_assert_eq(rp_routee_tell(rp_pool_routee(p, i), probe_job,
                                        &pr[i][k]), 0);
    }
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    for (size_t i = 0; i < 2; i++) {
        const rp_routee_stats st = stats_of(p, i);
        cr_assert_eq(st.enqueued, 50u);
        cr_assert_eq(st.run, 50u);
        cr_assert_eq(st.rejected, 0u);
        cr_assert_eq(st.dropped, 0u);
        cr_assert_eq(st.undelivered, 0u);
        cr_assert_eq(rp_routee_depth(rp_pool_routee(p, i)), 0);
    }
    cr_assert_eq(rp_router_undelivered(rp_pool_router(p)), 0u);
    rp_pool_destroy(p);
}

Test(pool, busy_reflects_a_running_job, .init = setup, .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "bz", 1, 0, 0, rp_strategy_round_robin()), 0);
    rp_routee *r = rp_pool_routee(p, 0);
    cr_assert_not(rp_routee_busy(r));
    gate g;
    gate_init(&g);
    probe hold;
    probe_init(&hold, &LOG, 0, &g);
    cr_assert_eq(rp_routee_tell(r, probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000));
    cr_assert(rp_routee_busy(r));
    cr_assert_eq(rp_routee_depth(r), 0, "the running job is not queued");
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    const int64_t deadline = now_ms() + 1000;
    while (rp_routee_busy(r) && now_ms() < deadline)
        sleep_ms(1);
    cr_assert_not(rp_routee_busy(r));
    rp_pool_destroy(p);
    gate_destroy(&g);
}

/* ---- issue 15 item 2: busy means "running a job" ---- */

/* Every routee of p has slept once (its start and first look are over). */
static bool all_slept(rp_pool *p)
{
    for (size_t i = 0; i < rp_pool_size(p); i++)
        if (stats_of(p, i).sleeps == 0)
            return false;
    return true;
}

Test(pool, busy_is_never_true_on_1000_fresh_pools_that_never_ran_a_job,
     .timeout = 120)
{
    int busy_pools = 0;

    for (int k = 0; k < 1000; k++) {
        rp_pool *p = NULL;
        bool seen = false;
        cr_assert_eq(make_pool(&p, "fresh", 2, 0, 0, rp_strategy_round_robin()), 0);
        /* Watch from creation through every routee's first sleep: the
         * window in which a routee used to count itself busy. */
        const int64_t deadline = now_ms() + 5000;
        bool slept = false;
        while (!slept && now_ms() < deadline) {
            slept = all_slept(p);
            for (size_t i = 0; i < 2; i++)
                seen |= rp_routee_busy(rp_pool_routee(p, i));
        }
        cr_assert(slept, "pool %d: a routee never went to sleep", k);
        busy_pools += seen;
        rp_pool_destroy(p);
    }
    cr_assert_eq(busy_pools, 0, "%d of 1000 idle pools showed a busy routee", busy_pools);
}

/* ---- issue 15 item 3: after shutdown, every submit path says so ---- */

static atomic_int late_replies;

static void late_reply_cb(rp_future *f, void *user)
{
    (void)f;
    (void)user;
    atomic_fetch_add(&late_replies, 1);
}

static rp_router *router_with(rp_pool *p, rp_strategy s)
{
    rp_router_options o;
    rp_router_options_init(&o);
    o.strategy = s;
    o.on_undelivered = probe_undelivered;
    rp_router *rt = NULL;
    cr_assert_eq(rp_router_create(&rt, p, &o), 0, "%s", rp_errmsg());
    return rt;
}

/* Every way of submitting, once, with one probe; each must refuse it.
 * Batches hand each job they cannot queue back (router.h): bp's three
 * probes come back once per batch call. */
static void expect_all_refused(rp_pool *p, rp_router *const rts[3], probe *pr, probe *bp)
{
    rp_router *rr = rts[0], *bc = rts[1], *sg = rts[2];
    void *args[3] = {&bp[0], &bp[1], &bp[2]};
    rp_future *f = (rp_future *)1;
    struct { const char *what; int rc; } got[] = {
        {"rp_pool_submit", rp_pool_submit(p, probe_job, pr)},
        {"rp_pool_submit_batch", rp_pool_submit_batch(p, probe_job, args, 3)},
        {"rp_router_tell", rp_router_tell(rr, probe_job, pr)},
        {"rp_router_tell_key", rp_router_tell_key(rr, "k", 1, probe_job, pr)},
        {"rp_router_tell_batch", rp_router_tell_batch(rr, probe_job, args, 3)},
        {"rp_router_ask", rp_router_ask(rr, probe_job, pr, 1000, &f)},
        {"rp_router_tell_reply",
         rp_router_tell_reply(rr, probe_job, pr, 1000, late_reply_cb, NULL)},
        {"rp_router_broadcast", rp_router_broadcast(rr, probe_job, pr)},
        {"rp_router_tell (broadcast router)", rp_router_tell(bc, probe_job, pr)},
        {"rp_router_ask (broadcast router)", rp_router_ask(bc, probe_job, pr, 1000, &f)},
        {"rp_router_tell_batch (broadcast router)", rp_router_tell_batch(bc, probe_job, args, 3)},
        {"rp_router_ask (scatter-gather)", rp_router_ask(sg, probe_job, pr, 1000, &f)},
        {"rp_router_tell (scatter-gather)", rp_router_tell(sg, probe_job, pr)},
        {"rp_routee_tell (live before)", rp_routee_tell(rp_pool_routee(p, 0), probe_job, pr)},
        {"rp_routee_tell (stopped before)", rp_routee_tell(rp_pool_routee(p, 1), probe_job, pr)},
        {"rp_routee_ask (stopped before)",
         rp_routee_ask(rp_pool_routee(p, 1), probe_job, pr, 1000, &f)},
    };
    for (size_t i = 0; i < sizeof got / sizeof got[0]; i++)
        cr_assert_eq(got[i].rc, RP_ESHUTDOWN, "%s after shutdown: %s (%s)", got[i].what,
                     rp_err_name(got[i].rc), rp_errmsg());
    cr_assert_null(f, "a refused ask leaves no future");
}

Test(shutdown, every_submit_path_returns_eshutdown_even_with_a_routee_stopped_before,
     .init = setup, .timeout = 30)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "sdall", 2, 0, 0, rp_strategy_round_robin()), 0);
    rp_router *rts[3] = {router_with(p, rp_strategy_round_robin()),
                         router_with(p, rp_strategy_broadcast()), NULL};
    cr_assert_eq(rp_router_create_scatter_gather(&rts[2], p, NULL, NULL), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_routee_stop(rp_pool_routee(p, 1)), 0);
    cr_assert_eq(rp_pool_shutdown(p, RP_SHUTDOWN_DRAIN), 0);
    atomic_init(&late_replies, 0);
    /* Rounds: the round-robin index lands on the stopped routee every
     * other job, which used to return 0 and hand the job back. */
    probe pr[50], bp[50][3];
    probe_init_n(pr, 50, &LOG, 0, NULL);
    for (int k = 0; k < 50; k++) {
        probe_init_n(bp[k], 3, &LOG, 100 + 3 * k, NULL);
        expect_all_refused(p, rts, &pr[k], bp[k]);
    }
    for (int k = 0; k < 50; k++) {
        cr_assert_eq(probe_runs(&pr[k]), 0);
        cr_assert_eq(probe_undel(&pr[k]), 0, "job %d was accepted and handed back (%s)", k,
                     rp_err_name(atomic_load(&pr[k].reason)));
        for (int j = 0; j < 3; j++) {
            cr_assert_eq(probe_runs(&bp[k][j]), 0);
            cr_assert_eq(probe_undel(&bp[k][j]), 3, "one hand-back per batch call");
            cr_assert_eq(atomic_load(&bp[k][j].reason), RP_ESHUTDOWN, "%s",
                         rp_err_name(atomic_load(&bp[k][j].reason)));
        }
    }
    cr_assert_eq(atomic_load(&late_replies), 0, "no reply callback for a refused job");
    for (int i = 0; i < 3; i++)
        rp_router_destroy(rts[i]);
    rp_pool_destroy(p);
}

/* ---- issue 15 items 6 and 7: callbacks that shut down or destroy ---- */

typedef struct teardown_cb {
    rp_pool *pool;
    gate *gate;
    atomic_int calls;
    atomic_int shutdown_rc;
    atomic_bool on_test_thread;
    pthread_t test_thread;
} teardown_cb;

static void teardown_cb_init(teardown_cb *t, rp_pool *p, gate *g)
{
    t->pool = p;
    t->gate = g;
    atomic_init(&t->calls, 0);
    atomic_init(&t->shutdown_rc, 1);
    atomic_init(&t->on_test_thread, false);
    t->test_thread = pthread_self();
}

static rp_pool *logged_pool(const char *name, unsigned routees, logcap *lc)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = name;
    o.routees = routees;
    o.on_undelivered = probe_undelivered;
    o.log = logcap_fn;
    o.log_user = lc;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    return p;
}

/* Let the blocked job go, shut the pool down from inside the shutdown
 * that runs us, then try to destroy it. */
static void shutdown_then_destroy_cb(rp_future *f, void *user)
{
    teardown_cb *t = user;
    (void)f;
    atomic_store(&t->on_test_thread, pthread_equal(pthread_self(), t->test_thread) != 0);
    gate_open(t->gate);
    atomic_store(&t->shutdown_rc, rp_pool_shutdown(t->pool, RP_SHUTDOWN_DRAIN));
    rp_pool_destroy(t->pool); /* refused: the outer shutdown still runs */
    atomic_fetch_add(&t->calls, 1);
}

Test(shutdown, a_future_callback_run_by_shutdown_may_shut_down_and_destroy_the_pool,
     .init = setup, .timeout = 30)
{
    logcap lc;
    logcap_init(&lc);
    rp_pool *p = logged_pool("cbsd", 2, &lc);
    rp_router *sg = NULL;
    cr_assert_eq(rp_router_create_scatter_gather(&sg, p, NULL, NULL), 0, "%s", rp_errmsg());
    gate g;
    gate_init(&g);
    probe pr;
    probe_init(&pr, &LOG, 0, &g);
    teardown_cb t;
    teardown_cb_init(&t, p, &g);
    rp_future *f = NULL;
    /* The scatter stays open: both copies wait on the gate. */
    cr_assert_eq(rp_router_ask(sg, probe_job, &pr, 0, &f), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_future_on_complete(f, shutdown_then_destroy_cb, &t), 0);
    cr_assert(gate_wait_entered(&g, 2, 5000));
    /* Used to deadlock: the callback ran under pool->life. */
    cr_assert_eq(rp_pool_shutdown(p, RP_SHUTDOWN_DRAIN), 0);
    cr_assert_eq(atomic_load(&t.calls), 1);
    cr_assert(atomic_load(&t.on_test_thread), "rp__sg_stop_all runs callbacks in the caller");
    cr_assert_eq(atomic_load(&t.shutdown_rc), 0, "the nested shutdown joins and returns 0");
    cr_assert_eq(logcap_count(&lc, RP_LOG_ERROR), 1, "the nested destroy is refused, logged");
    cr_assert_eq(probe_runs(&pr), 2, "both copies ran (drain)");
    for (size_t i = 0; i < 2; i++)
        cr_assert(rp_routee_stopped(rp_pool_routee(p, i)));
    rp_future_release(f);
    rp_router_destroy(sg);
    rp_pool_destroy(p);
    gate_destroy(&g);
}

/* On the timer thread (the ask's deadline): let the job go and try to
 * destroy the pool. */
static void destroy_on_timer_cb(rp_future *f, void *user)
{
    teardown_cb *t = user;
    (void)f;
    atomic_store(&t->on_test_thread, pthread_equal(pthread_self(), t->test_thread) != 0);
    gate_open(t->gate);
    rp_pool_destroy(t->pool); /* refused on the timer thread */
    atomic_fetch_add_explicit(&t->calls, 1, memory_order_release);
}

Test(pool, destroy_from_a_future_callback_on_the_timer_thread_is_refused_and_logged,
     .init = setup, .timeout = 30)
{
    logcap lc;
    logcap_init(&lc);
    rp_pool *p = logged_pool("cbtm", 1, &lc);
    gate g;
    gate_init(&g);
    probe pr;
    probe_init(&pr, &LOG, 0, &g);
    teardown_cb t;
    teardown_cb_init(&t, p, &g);
    rp_future *f = NULL;
    cr_assert_eq(rp_router_ask(rp_pool_router(p), probe_job, &pr, 50, &f), 0, "%s",
                 rp_errmsg());
    cr_assert_eq(rp_future_on_complete(f, destroy_on_timer_cb, &t), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000));
    /* The deadline fails the ask on the timer thread, which runs t. */
    cr_assert(wait_atomic_ge(&t.calls, 1, 10000), "the callback did not run");
    cr_assert_not(atomic_load(&t.on_test_thread));
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FAILED);
    cr_assert_eq(logcap_count(&lc, RP_LOG_ERROR), 1, "the refusal is logged");
    /* The pool is still whole: it runs a job and shuts down normally. */
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    probe after;
    probe_init(&after, &LOG, 1, NULL);
    cr_assert_eq(rp_pool_submit(p, probe_job, &after), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(probe_runs(&after), 1);
    rp_future_release(f);
    rp_pool_destroy(p);
    gate_destroy(&g);
}
