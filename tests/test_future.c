/* SPDX-License-Identifier: MIT */
/*
 * tests/test_future.c - promises (futures the caller completes:
 * rp_future_create, rp_future_fulfil, rp_future_fail,
 * rp_future_fail_aggregate) and owned reply values (rp_job_reply_owned,
 * rp_future_take_value, free_fn at the last release).
 *
 * Every owned value here is a malloc'd int freed through counted_free(),
 * which counts the future's frees; values that stay the replier's are
 * freed by the test or the job and counted apart, so each test accounts
 * for every value exactly once (ASan then proves nothing leaked and
 * nothing was freed twice).  Completion is observed through callbacks
 * and bounded waits on a condition, never through sleeps.  Nothing calls
 * cr_assert off the test thread.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "common.h"

TestSuite(promise, .fini = rp_leak_check);
TestSuite(owned, .fini = rp_leak_check);

/* ---- counted values ---- */

static atomic_int future_frees; /* values freed by a future's free_fn */
static atomic_int own_frees;    /* values freed by whoever kept them */

static void counted_free(void *v)
{
    atomic_fetch_add(&future_frees, 1);
    free(v);
}

static int *new_value(int v)
{
    int *p = malloc(sizeof *p);
    *p = v;
    return p;
}

static void free_own(void *v)
{
    atomic_fetch_add(&own_frees, 1);
    free(v);
}

/* ---- a completion counter tests can wait on ---- */

typedef struct done {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    int state; /* rp_future_status() seen by the last callback */
} done;

static void done_init(done *d)
{
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    d->n = 0;
    d->state = -1;
}

static void done_destroy(done *d)
{
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
}

static void on_done(rp_future *f, void *user)
{
    done *d = user;

    pthread_mutex_lock(&d->mu);
    d->n++;
    d->state = rp_future_status(f);
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* Wait until d->n >= n (bounded); returns d->n. */
static int done_wait(done *d, int n, int timeout_ms)
{
    const int64_t deadline = now_ms() + timeout_ms;
    int got;

    pthread_mutex_lock(&d->mu);
    while (d->n < n && now_ms() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&d->cv, &d->mu, &ts);
    }
    got = d->n;
    pthread_mutex_unlock(&d->mu);
    return got;
}

static rp_pool *new_pool(unsigned routees)
{
    rp_pool_options opts;
    rp_pool *p = NULL;

    rp_pool_options_init(&opts);
    opts.routees = routees;
    cr_assert_eq(rp_pool_create(&p, &opts), 0, "%s", rp_errmsg());
    return p;
}

/* ---- rp_future_create ---- */

Test(promise, create__rejects_null_out_null_pool_and_bad_timeout)
{
    rp_pool *p = new_pool(1);
    rp_future *f = (rp_future *)1;

    cr_expect_eq(rp_future_create(NULL, p, 100), RP_EINVAL);
    cr_expect(strstr(rp_errmsg(), "rp_future_create") && strstr(rp_errmsg(), "out"), "%s", rp_errmsg());
    cr_expect_eq(rp_future_create(&f, NULL, 100), RP_EINVAL);
    cr_expect_null(f);
    cr_expect(strstr(rp_errmsg(), "rp_future_create") && strstr(rp_errmsg(), "pool"), "%s", rp_errmsg());
    cr_expect_eq(rp_future_create(&f, p, -2), RP_EINVAL);
    cr_expect(strstr(rp_errmsg(), "timeout_ms"), "%s", rp_errmsg());
    rp_pool_destroy(p);
}

Test(promise, create__after_shutdown_returns_eshutdown)
{
    rp_pool *p = new_pool(2);
    rp_future *f = NULL;

    cr_assert_eq(rp_pool_shutdown(p, RP_SHUTDOWN_DRAIN), 0);
    cr_expect_eq(rp_future_create(&f, p, 100), RP_ESHUTDOWN);
    cr_expect_null(f);
    cr_expect(strstr(rp_errmsg(), "rp_future_create"), "%s", rp_errmsg());
    rp_pool_destroy(p);
}

Test(promise, create__after_shutdown_returns_eshutdown_with_every_routee_stopped_before)
{
    rp_pool *p = new_pool(2);
    rp_future *f = NULL;

    for (size_t i = 0; i < 2; i++)
        cr_assert_eq(rp_routee_stop(rp_pool_routee(p, i)), 0);
    cr_assert_eq(rp_pool_shutdown(p, RP_SHUTDOWN_DRAIN), 0);
    cr_expect_eq(rp_future_create(&f, p, 100), RP_ESHUTDOWN);
    cr_expect_null(f);
    rp_pool_destroy(p);
}

Test(promise, create__is_pending_with_the_default_and_without_a_deadline)
{
    rp_pool *p = new_pool(1);
    rp_future *f0, *fn;

    cr_assert_eq(rp_future_create(&f0, p, 0), 0);
    cr_assert_eq(rp_future_create(&fn, p, -1), 0);
    cr_expect_eq(rp_future_status(f0), RP_FUTURE_PENDING);
    cr_expect_eq(rp_future_wait(fn, 0), RP_ETIMEDOUT);
    cr_expect_eq(rp_future_status(fn), RP_FUTURE_PENDING);
    cr_expect_eq(rp_future_fulfil(f0, -1, NULL, NULL), 0);
    cr_expect_eq(rp_future_fulfil(fn, -1, NULL, NULL), 0);
    for (int i = 0; i < 2; i++) {
        rp_future_release(f0);
        rp_future_release(fn);
    }
    rp_pool_destroy(p);
}

/* ---- completion ---- */

Test(promise, fulfil__completes_once_with_value_and_routee)
{
    rp_pool *p = new_pool(1);
    rp_future *f;
    done d;
    int v = 7;

    done_init(&d);
    cr_assert_eq(rp_future_create(&f, p, 10000), 0);
    cr_assert_eq(rp_future_on_complete(f, on_done, &d), 0);
    cr_expect_eq(rp_future_fulfil(f, 3, &v, NULL), 0);
    cr_expect_eq(rp_future_wait(f, -1), 0);
    cr_expect_eq(rp_future_status(f), RP_FUTURE_FULFILLED);
    cr_expect_eq(rp_future_value(f), &v);
    cr_expect_eq(rp_future_routee(f), 3);
    cr_expect_null(rp_future_error(f));
    cr_expect_eq(done_wait(&d, 1, 5000), 1);
    rp_future_release(f); /* completer */
    rp_future_release(f); /* waiter */
    rp_pool_destroy(p);
    cr_expect_eq(d.n, 1);
    done_destroy(&d);
}

Test(promise, fulfil__after_completion_returns_ecancelled_and_keeps_the_value)
{
    rp_pool *p = new_pool(1);
    rp_future *f;
    int *late = new_value(2);

    cr_assert_eq(rp_future_create(&f, p, 10000), 0);
    cr_assert_eq(rp_future_fulfil(f, -1, new_value(1), counted_free), 0);
    cr_expect_eq(rp_future_fulfil(f, -1, late, counted_free), RP_ECANCELLED);
    cr_expect(strstr(rp_errmsg(), "rp_future_fulfil"), "%s", rp_errmsg());
    cr_expect_eq(rp_future_fail(f, -1, 5, "no"), RP_ECANCELLED);
    cr_expect_eq(rp_future_fail_aggregate(f, "no", NULL, 0), RP_ECANCELLED);
    cr_expect_eq(*(int *)rp_future_value(f), 1);
    free_own(late);
    rp_future_release(f);
    rp_future_release(f);
    cr_expect_eq(atomic_load(&future_frees), 1);
    cr_expect_eq(atomic_load(&own_frees), 1);
    rp_pool_destroy(p);
}

Test(promise, fulfil__rejects_a_null_future_and_a_bad_routee)
{
    rp_pool *p = new_pool(1);
    rp_future *f;

    cr_expect_eq(rp_future_fulfil(NULL, -1, NULL, NULL), RP_EINVAL);
    cr_expect(strstr(rp_errmsg(), "rp_future_fulfil"), "%s", rp_errmsg());
    cr_expect_eq(rp_future_fail(NULL, -1, 1, NULL), RP_EINVAL);
    cr_expect(strstr(rp_errmsg(), "rp_future_fail"), "%s", rp_errmsg());
    cr_expect_eq(rp_future_fail_aggregate(NULL, NULL, NULL, 0), RP_EINVAL);
    cr_expect(strstr(rp_errmsg(), "rp_future_fail_aggregate"), "%s", rp_errmsg());
    cr_assert_eq(rp_future_create(&f, p, 10000), 0);
    cr_expect_eq(rp_future_fulfil(f, -2, NULL, NULL), RP_EINVAL);
    cr_expect(strstr(rp_errmsg(), "routee"), "%s", rp_errmsg());
    cr_expect_eq(rp_future_status(f), RP_FUTURE_PENDING);
    cr_expect_eq(rp_future_fail(f, 1, 42, NULL), 0);
    rp_future_release(f);
    rp_future_release(f);
    rp_pool_destroy(p);
}

Test(promise, fail__records_code_message_and_routee)
{
    rp_pool *p = new_pool(1);
    rp_future *f, *g;
    char msg[] = "remote says no";

    cr_assert_eq(rp_future_create(&f, p, 10000), 0);
    cr_assert_eq(rp_future_create(&g, p, 10000), 0);
    cr_expect_eq(rp_future_fail(f, 2, 1234, msg), 0);
    msg[0] = 'X'; /* copied */
    cr_expect_eq(rp_future_status(f), RP_FUTURE_FAILED);
    cr_expect_eq(rp_future_error(f)->code, 1234);
    cr_expect_str_eq(rp_future_error(f)->message, "remote says no");
    cr_expect_eq(rp_future_error(f)->routee, 2);
    cr_expect_null(rp_future_value(f));
    cr_expect_eq(rp_future_fulfil(f, -1, msg, NULL), RP_ECANCELLED);
    cr_expect_eq(rp_future_fail(g, -1, RP_ENOREPLY, NULL), 0);
    cr_expect_str_eq(rp_future_error(g)->message, rp_strerror(RP_ENOREPLY));
    for (int i = 0; i < 2; i++) {
        rp_future_release(f);
        rp_future_release(g);
    }
    rp_pool_destroy(p);
}

Test(promise, fail_aggregate__deep_copies_the_message_and_members)
{
    rp_pool *p = new_pool(1);
    rp_future *f;
    rp_error *inner = calloc(1, sizeof *inner);
    rp_error *m = calloc(2, sizeof *m);
    char *text = strdup("node b timed out");
    char *msg = strdup("none of 2 nodes replied");
    const rp_error *e;

    inner[0] = (rp_error){RP_ETIMEDOUT, strdup("deep"), 4, NULL, 0};
    m[0] = (rp_error){RP_ESTOPPED, NULL, 0, NULL, 0};
    m[1] = (rp_error){RP_ETIMEDOUT, text, 1, inner, 1};
    cr_assert_eq(rp_future_create(&f, p, 10000), 0);
    cr_expect_eq(rp_future_fail_aggregate(f, msg, m, 2), 0);
    /* Everything was copied: the caller's memory may go at once. */
    free((char *)inner[0].message);
    free(inner);
    free(text);
    free(m);
    free(msg);
    e = rp_future_error(f);
    cr_assert_not_null(e);
    cr_expect_eq(e->code, RP_EAGGREGATE);
    cr_expect_eq(e->routee, -1);
    cr_expect_str_eq(e->message, "none of 2 nodes replied");
    cr_assert_eq(e->nmembers, 2);
    cr_expect_eq(e->members[0].code, RP_ESTOPPED);
    cr_expect_str_eq(e->members[0].message, rp_strerror(RP_ESTOPPED));
    cr_expect_str_eq(e->members[1].message, "node b timed out");
    cr_expect_eq(e->members[1].routee, 1);
    cr_assert_eq(e->members[1].nmembers, 1);
    cr_expect_str_eq(e->members[1].members[0].message, "deep");
    cr_expect_eq(e->members[1].members[0].routee, 4);
    rp_future_release(f);
    rp_future_release(f);
    rp_pool_destroy(p);
}

Test(promise, fail_aggregate__without_members_and_with_bad_members)
{
    rp_pool *p = new_pool(1);
    rp_future *f;
    rp_error chain[10];

    /* A chain nested 10 deep: refused, the future is unchanged. */
    for (int i = 0; i < 10; i++)
        chain[i] = (rp_error){1, "x", -1, i < 9 ? &chain[i + 1] : NULL, i < 9 ? 1 : 0};
    cr_assert_eq(rp_future_create(&f, p, 10000), 0);
    cr_expect_eq(rp_future_fail_aggregate(f, "m", NULL, 3), RP_EINVAL);
    cr_expect(strstr(rp_errmsg(), "members"), "%s", rp_errmsg());
    cr_expect_eq(rp_future_fail_aggregate(f, "m", chain, 1), RP_EINVAL);
    cr_expect(strstr(rp_errmsg(), "nested"), "%s", rp_errmsg());
    cr_expect_eq(rp_future_status(f), RP_FUTURE_PENDING);
    cr_expect_eq(rp_future_fail_aggregate(f, NULL, NULL, 0), 0);
    cr_expect_eq(rp_future_error(f)->code, RP_EAGGREGATE);
    cr_expect_eq(rp_future_error(f)->nmembers, 0);
    cr_expect_null(rp_future_error(f)->members);
    cr_expect_str_eq(rp_future_error(f)->message, rp_strerror(RP_EAGGREGATE));
    rp_future_release(f);
    rp_future_release(f);
    rp_pool_destroy(p);
}

/* ---- the deadline ---- */

Test(promise, deadline__fails_with_etimedout_when_nobody_waits)
{
    rp_pool *p = new_pool(1);
    rp_future *f;
    done d;
    int *late = new_value(9);

    done_init(&d);
    cr_assert_eq(rp_future_create(&f, p, 20), 0);
    cr_assert_eq(rp_future_on_complete(f, on_done, &d), 0);
    /* Nobody calls rp_future_wait(): the pool's timer thread fails it. */
    cr_assert_eq(done_wait(&d, 1, 10000), 1);
    cr_expect_eq(d.state, RP_FUTURE_FAILED);
    cr_expect_eq(rp_future_error(f)->code, RP_ETIMEDOUT);
    cr_expect_eq(rp_future_fulfil(f, 0, late, counted_free), RP_ETIMEDOUT);
    cr_expect(strstr(rp_errmsg(), "rp_future_fulfil") && strstr(rp_errmsg(), "timed out"),
              "%s", rp_errmsg());
    free_own(late); /* the value stayed ours */
    rp_future_release(f);
    rp_future_release(f);
    rp_pool_destroy(p);
    cr_expect_eq(atomic_load(&future_frees), 0);
    cr_expect_eq(atomic_load(&own_frees), 1);
    done_destroy(&d);
}

typedef struct racer {
    rp_future *f;
    int64_t at_ms;
    int rc;
    int *value;
} racer;

static void *race_fulfil(void *p)
{
    racer *r = p;

    while (now_ms() < r->at_ms)
        sleep_ms(1);
    r->rc = rp_future_fulfil(r->f, 0, r->value, counted_free);
    if (r->rc < 0)
        free_own(r->value);
    rp_future_release(r->f); /* the completer's reference */
    return NULL;
}

Test(promise, deadline__racing_a_completer_exactly_one_wins)
{
    enum { ROUNDS = 200 };
    rp_pool *p = new_pool(1);
    int wins = 0, timeouts = 0;
    done d;

    done_init(&d);
    for (int i = 0; i < ROUNDS; i++) {
        racer r = {NULL, 0, 999, new_value(i)};
        pthread_t t;

        cr_assert_eq(rp_future_create(&r.f, p, 2), 0);
        cr_assert_eq(rp_future_on_complete(r.f, on_done, &d), 0);
        r.at_ms = now_ms() + 1 + i % 3;
        pthread_create(&t, NULL, race_fulfil, &r);
        cr_assert_eq(rp_future_wait(r.f, -1), 0);
        pthread_join(t, NULL);
        if (r.rc == 0) {
            wins++;
            cr_expect_eq(rp_future_status(r.f), RP_FUTURE_FULFILLED);
            cr_expect_eq(*(int *)rp_future_value(r.f), i);
        } else {
            timeouts++;
            cr_expect_eq(r.rc, RP_ETIMEDOUT);
            cr_expect_eq(rp_future_error(r.f)->code, RP_ETIMEDOUT);
        }
        rp_future_release(r.f); /* the waiter's */
    }
    cr_log_info("%d completers won, %d lost to the deadline", wins, timeouts);
    cr_expect_eq(wins + timeouts, ROUNDS);
    cr_expect_eq(done_wait(&d, ROUNDS, 5000), ROUNDS, "every callback ran once");
    cr_expect_eq(atomic_load(&future_frees), wins);
    cr_expect_eq(atomic_load(&own_frees), timeouts);
    rp_pool_destroy(p);
    done_destroy(&d);
}

Test(promise, destroy__fails_a_pending_future_with_eshutdown)
{
    rp_pool *p = new_pool(1);
    rp_future *f;

    cr_assert_eq(rp_future_create(&f, p, 60000), 0);
    rp_pool_destroy(p);
    cr_expect_eq(rp_future_wait(f, 0), 0);
    cr_expect_eq(rp_future_error(f)->code, RP_ESHUTDOWN);
    /* The future outlives its pool. */
    cr_expect_eq(rp_future_fulfil(f, -1, NULL, NULL), RP_ECANCELLED);
    rp_future_release(f);
    rp_future_release(f);
}

/* ---- references ---- */

static void *complete_later(void *p)
{
    racer *r = p;

    sleep_ms(5); /* let the waiter go first; not synchronisation */
    r->rc = rp_future_fulfil(r->f, 1, r->value, counted_free);
    rp_future_release(r->f);
    return NULL;
}

Test(promise, references__the_waiter_may_release_before_the_completer)
{
    rp_pool *p = new_pool(1);
    racer r = {NULL, 0, 999, new_value(5)};
    pthread_t t;

    cr_assert_eq(rp_future_create(&r.f, p, 10000), 0);
    pthread_create(&t, NULL, complete_later, &r);
    rp_future_release(r.f); /* the waiter gives up at once */
    pthread_join(t, NULL);
    cr_expect_eq(r.rc, 0);
    cr_expect_eq(atomic_load(&future_frees), 1, "the owned value went with the last release");
    rp_pool_destroy(p);
}

Test(promise, references__a_completer_thread_wakes_the_waiter)
{
    rp_pool *p = new_pool(1);
    racer r = {NULL, 0, 999, new_value(6)};
    pthread_t t;

    cr_assert_eq(rp_future_create(&r.f, p, 10000), 0);
    pthread_create(&t, NULL, complete_later, &r);
    cr_expect_eq(rp_future_wait(r.f, 10000), 0);
    cr_expect_eq(*(int *)rp_future_value(r.f), 6);
    cr_expect_eq(rp_future_routee(r.f), 1);
    pthread_join(t, NULL);
    cr_expect_eq(atomic_load(&future_frees), 0);
    rp_future_release(r.f);
    cr_expect_eq(atomic_load(&future_frees), 1);
    rp_pool_destroy(p);
}

/* ---- rp_future_take_value ---- */

Test(promise, take_value__returns_the_value_once_and_the_future_keeps_no_claim)
{
    rp_pool *p = new_pool(1);
    rp_future *f, *pending, *failed;
    int *v = new_value(3);

    cr_assert_eq(rp_future_create(&f, p, 10000), 0);
    cr_assert_eq(rp_future_create(&pending, p, 10000), 0);
    cr_assert_eq(rp_future_create(&failed, p, 10000), 0);
    cr_expect_null(rp_future_take_value(NULL));
    cr_expect_null(rp_future_take_value(pending));
    cr_assert_eq(rp_future_fail(failed, -1, 1, NULL), 0);
    cr_expect_null(rp_future_take_value(failed));
    cr_assert_eq(rp_future_fulfil(f, -1, v, counted_free), 0);
    cr_expect_eq(rp_future_take_value(f), v);
    cr_expect_null(rp_future_take_value(f), "taken once");
    cr_expect_null(rp_future_value(f), "a taken value is not handed out again");
    cr_expect_eq(rp_future_status(f), RP_FUTURE_FULFILLED);
    rp_future_release(f);
    rp_future_release(f);
    cr_expect_eq(atomic_load(&future_frees), 0, "a taken value is never freed by the future");
    free_own(v);
    cr_expect_eq(rp_future_fulfil(pending, -1, NULL, NULL), 0);
    for (int i = 0; i < 2; i++) {
        rp_future_release(pending);
        rp_future_release(failed);
    }
    rp_pool_destroy(p);
}

/* ---- rp_job_reply_owned ---- */

typedef struct ojob {
    gate *g;              /* passed before replying, when set */
    atomic_int rc;
    int value;
    char msg[200];        /* rp_errmsg() when the reply failed */
} ojob;

static void owned_job(rp_job_ctx *ctx, void *p)
{
    ojob *o = p;
    int *v = new_value(o->value);
    int rc;

    if (o->g)
        gate_pass(o->g);
    rc = rp_job_reply_owned(ctx, v, counted_free);
    if (rc < 0) {
        free_own(v); /* too late: the value stayed ours */
        snprintf(o->msg, sizeof o->msg, "%s", rp_errmsg());
    }
    atomic_store(&o->rc, rc);
}

Test(owned, reply_owned__value_freed_at_the_last_release_when_never_taken)
{
    rp_pool *p = new_pool(1);
    ojob o = {NULL, 999, 11, ""};
    rp_future *f;

    cr_assert_eq(rp_routee_ask(rp_pool_routee(p, 0), owned_job, &o, 10000, &f), 0);
    cr_assert_eq(rp_future_wait(f, 10000), 0);
    cr_expect_eq(*(int *)rp_future_value(f), 11);
    cr_expect_eq(rp_pool_wait_idle(p, 10000), 0);
    cr_expect_eq(atomic_load(&o.rc), 0);
    cr_expect_eq(atomic_load(&future_frees), 0);
    rp_future_release(f);
    cr_expect_eq(atomic_load(&future_frees), 1);
    rp_pool_destroy(p);
}

Test(owned, reply_owned__taken_value_is_the_callers)
{
    rp_pool *p = new_pool(1);
    ojob o = {NULL, 999, 12, ""};
    rp_future *f;
    int *v;

    cr_assert_eq(rp_router_ask(rp_pool_router(p), owned_job, &o, 10000, &f), 0);
    cr_assert_eq(rp_future_wait(f, 10000), 0);
    v = rp_future_take_value(f);
    cr_assert_not_null(v);
    cr_expect_eq(*v, 12);
    rp_future_release(f);
    rp_pool_destroy(p);
    cr_expect_eq(atomic_load(&future_frees), 0);
    free(v);
}

Test(owned, reply_owned__freed_when_the_asker_released_before_the_reply)
{
    rp_pool *p = new_pool(1);
    gate g;
    ojob o = {&g, 999, 13, ""};
    rp_future *f;

    gate_init(&g);
    cr_assert_eq(rp_routee_ask(rp_pool_routee(p, 0), owned_job, &o, 10000, &f), 0);
    cr_assert(gate_wait_entered(&g, 1, 10000));
    rp_future_release(f); /* the asker is gone before the reply */
    gate_open(&g);
    cr_expect_eq(rp_pool_wait_idle(p, 10000), 0);
    cr_expect_eq(atomic_load(&o.rc), 0);
    cr_expect_eq(atomic_load(&future_frees), 1, "the job's release was the last one");
    rp_pool_destroy(p);
    gate_destroy(&g);
}

Test(owned, reply_owned__late_reply_returns_etimedout_and_the_value_stays_the_jobs)
{
    rp_pool *p = new_pool(1);
    gate g;
    ojob o = {&g, 999, 14, ""};
    rp_future *f;

    /* The job holds at the gate until its ask has timed out, then replies. */
    gate_init(&g);
    cr_assert_eq(rp_routee_ask(rp_pool_routee(p, 0), owned_job, &o, 30, &f), 0);
    cr_assert(gate_wait_entered(&g, 1, 10000));
    cr_assert_eq(rp_future_wait(f, 10000), 0);
    cr_expect_eq(rp_future_error(f)->code, RP_ETIMEDOUT);
    gate_open(&g);
    cr_expect_eq(rp_pool_wait_idle(p, 10000), 0);
    cr_expect_eq(atomic_load(&o.rc), RP_ETIMEDOUT);
    /* error.h: every failing call sets rp_errmsg(), naming itself. */
    cr_expect(strstr(o.msg, "rp_job_reply_owned") && strstr(o.msg, "timed out"), "%s", o.msg);
    rp_future_release(f);
    rp_pool_destroy(p);
    cr_expect_eq(atomic_load(&future_frees), 0);
    cr_expect_eq(atomic_load(&own_frees), 1);
    gate_destroy(&g);
}

Test(owned, reply_owned__in_a_tell_returns_einval)
{
    rp_pool *p = new_pool(1);
    ojob o = {NULL, 999, 15, ""};

    cr_assert_eq(rp_pool_submit(p, owned_job, &o), 0);
    cr_expect_eq(rp_pool_wait_idle(p, 10000), 0);
    cr_expect_eq(atomic_load(&o.rc), RP_EINVAL);
    cr_expect_eq(atomic_load(&own_frees), 1);
    rp_pool_destroy(p);
}

/* Issue 15 item 8: rp_future_wait() returning RP_ETIMEDOUT left rp_errmsg()
 * as the previous failure had set it. */
Test(promise, wait__timing_out_sets_rp_errmsg)
{
    rp_pool *p = new_pool(1);
    rp_future *f;

    cr_assert_eq(rp_future_create(&f, p, -1), 0);
    cr_expect_eq(rp_future_wait(NULL, 0), RP_EINVAL);
    cr_expect_eq(rp_future_wait(f, 0), RP_ETIMEDOUT);
    cr_expect(strstr(rp_errmsg(), "rp_future_wait") && strstr(rp_errmsg(), "still pending after 0 ms"),
              "rp_errmsg() \"%s\"", rp_errmsg());
    cr_expect_eq(rp_future_wait(f, 10), RP_ETIMEDOUT);
    cr_expect(strstr(rp_errmsg(), "still pending after 10 ms"), "rp_errmsg() \"%s\"", rp_errmsg());
    cr_expect_eq(rp_future_fulfil(f, -1, NULL, NULL), 0);
    rp_future_release(f);
    rp_future_release(f);
    rp_pool_destroy(p);
}

/* A scatter of owned replies: the winner's value goes with the future, each
 * loser's reply is refused (RP_ECANCELLED, losers run by default) and the
 * loser frees its own value: three values, each freed exactly once. */
Test(owned, reply_owned__scatter_winner_freed_by_the_future_losers_keep_theirs)
{
    rp_pool *p = new_pool(3);
    rp_router *rt = NULL;
    ojob o = {NULL, 999, 16, ""};
    rp_future *f;

    cr_assert_eq(rp_router_create_scatter_gather(&rt, p, NULL, NULL), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_router_ask(rt, owned_job, &o, 0, &f), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_future_wait(f, 10000), 0);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FULFILLED);
    cr_expect_eq(*(int *)rp_future_value(f), 16);
    cr_assert_eq(rp_pool_wait_idle(p, 10000), 0);
    cr_expect_eq(atomic_load(&own_frees), 2, "each loser kept and freed its value");
    cr_expect_eq(atomic_load(&future_frees), 0);
    rp_future_release(f);
    cr_expect_eq(atomic_load(&future_frees), 1);
    rp_router_destroy(rt);
    rp_pool_destroy(p);
}
