/* SPDX-License-Identifier: MIT */
/*
 * tests/test_errors.c - error codes, their names and descriptions, and
 * every documented bad-input path: each returns the documented code, leaves
 * outputs NULL, and rp_errmsg() names the field or argument at fault.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

TestSuite(bad_input, .fini = rp_leak_check);
TestSuite(error_codes, .fini = rp_leak_check);

/*
 * Does msg name one of the '|'-separated fields?  A field must appear as a
 * whole identifier (so "key" does not match "key_len", and "n" does not
 * match every word with an n in it), and only in the detail after the
 * "function: " prefix (rp_pool_submit's message trivially contains "pool").
 */
static bool names_field(const char *msg, const char *fields)
{
    const char *colon = strstr(msg, ": ");
    const char *detail = colon ? colon + 2 : msg;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", fields);
    for (char *save = NULL, *f = strtok_r(buf, "|", &save); f;
         f = strtok_r(NULL, "|", &save)) {
        const size_t len = strlen(f);
        for (const char *at = strstr(detail, f); at; at = strstr(at + 1, f)) {
            const char before = at == detail ? ' ' : at[-1];
            const char after = at[len];
            if (!isalnum((unsigned char)before) && before != '_' &&
                !isalnum((unsigned char)after) && after != '_')
                return true;
        }
    }
    return false;
}

/* Assert rc == want and that rp_errmsg() names the field. */
#define assert_fails_naming(rc, want, field)                                  \
    do {                                                                      \
        const int rc_ = (rc);                                                 \
        cr_assert_eq(rc_, (want), "%s: got %d (%s), want %d (%s)", #rc, rc_,  \
                     rp_err_name(rc_), (int)(want), rp_err_name(want));       \
        cr_assert(names_field(rp_errmsg(), (field)),                          \
                  "%s: rp_errmsg() \"%s\" does not name \"%s\"", #rc,        \
                  rp_errmsg(), (field));                                      \
    } while (0)

static void noop_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
}

static int bad_custom(void *user, rp_route_state *state,
                      rp_routee *const *routees, size_t n, size_t *out)
{
    (void)user;
    (void)state;
    (void)routees;
    (void)n;
    (void)out;
    return 0;
}

/* ---- codes ---- */

Test(error_codes, names_and_descriptions_match_the_list, .timeout = 10)
{
    int count = 0;
#define CHECK_CODE(name, value, desc)                                         \
    cr_assert_eq(RP_##name, (value));                                         \
    cr_assert_str_eq(rp_err_name(value), "RP_" #name);                        \
    cr_assert_str_eq(rp_strerror(value), desc);                               \
    count++;
    RP_ERROR_LIST(CHECK_CODE)
#undef CHECK_CODE
    cr_assert_eq(count, 21, "the list has %d codes", count);
}

Test(error_codes, rp_error_set_returns_the_code_and_sets_the_thread_message, .timeout = 10)
{
    cr_assert_eq(rp_error_set(RP_EUNAVAILABLE, "rp_cluster_x: opts.%s is %d", "field", 7),
                 RP_EUNAVAILABLE);
    cr_assert_str_eq(rp_errmsg(), "rp_cluster_x: opts.field is 7");
    char longer[400];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    cr_assert_eq(rp_error_set(RP_EINVAL, "%s", longer), RP_EINVAL);
    cr_assert_eq(strlen(rp_errmsg()), 255, "truncated, never overflowing");
}

Test(error_codes, every_code_is_distinct_and_negative_except_ok, .timeout = 10)
{
    const int codes[] = {
#define LIST_CODE(name, value, desc) value,
        RP_ERROR_LIST(LIST_CODE)
#undef LIST_CODE
    };
    const size_t n = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < n; i++) {
        cr_assert(i == 0 ? codes[i] == 0 : codes[i] < 0);
        for (size_t j = i + 1; j < n; j++)
            cr_assert_neq(codes[i], codes[j]);
        for (size_t j = i + 1; j < n; j++)
            cr_assert_str_neq(rp_err_name(codes[i]), rp_err_name(codes[j]));
    }
}

Test(error_codes, unknown_codes_have_fallback_strings, .timeout = 10)
{
    const int unknown[] = {1, 42, -99, -1000, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        cr_assert_str_eq(rp_strerror(unknown[i]), "unknown error",
                         "code %d", unknown[i]);
        cr_assert_str_eq(rp_err_name(unknown[i]), "RP_E?", "code %d",
                         unknown[i]);
    }
}

Test(error_codes, errmsg_is_empty_before_any_failure, .timeout = 10)
{
    /* Each Criterion test runs in a fresh process: nothing failed yet. */
    cr_assert_str_eq(rp_errmsg(), "");
}

static void *fail_in_thread(void *arg)
{
    (void)arg;
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = RP_ROUTEES_MAX + 1;
    rp_pool *p = NULL;
    (void)rp_pool_create(&p, &o);
    return NULL;
}

Test(error_codes, errmsg_is_per_thread, .timeout = 10)
{
    rp_pool *p = NULL;
    assert_fails_naming(rp_pool_create(NULL, NULL), RP_EINVAL, "out");
    char mine[256];
    snprintf(mine, sizeof mine, "%s", rp_errmsg());

    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, fail_in_thread, NULL), 0);
    pthread_join(t, NULL);
    cr_assert_str_eq(rp_errmsg(), mine, "another thread's failure changed "
                     "this thread's message");
    cr_assert_null(p);
}

Test(error_codes, version_matches_header, .timeout = 10)
{
    cr_assert_str_eq(rp_version(), RP_VERSION_STRING);
}

/* ---- rp_pool_create ---- */

Test(bad_input, pool_create_null_out, .timeout = 10)
{
    assert_fails_naming(rp_pool_create(NULL, NULL), RP_EINVAL, "out");
}

Test(bad_input, pool_create_too_many_routees, .timeout = 10)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = RP_ROUTEES_MAX + 1;
    rp_pool *p = (rp_pool *)&o; /* must be overwritten with NULL */
    assert_fails_naming(rp_pool_create(&p, &o), RP_EINVAL, "routees");
    cr_assert_null(p);
}

Test(bad_input, pool_create_capacity_too_large, .timeout = 10)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 1;
    o.mailbox_capacity = RP_MAILBOX_CAPACITY_MAX + 1;
    rp_pool *p = (rp_pool *)&o;
    assert_fails_naming(rp_pool_create(&p, &o), RP_EINVAL, "mailbox_capacity");
    cr_assert_null(p);
}

Test(bad_input, pool_create_unknown_overflow_policy, .timeout = 10)
{
    const int bad[] = {-1, RP_OVERFLOW_DROP_HEAD + 1, 99};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rp_pool_options o;
        rp_pool_options_init(&o);
        o.routees = 1;
        o.mailbox_capacity = 4;
        o.overflow = bad[i];
        rp_pool *p = (rp_pool *)&o;
        assert_fails_naming(rp_pool_create(&p, &o), RP_EINVAL, "overflow");
        cr_assert_null(p);
    }
}

Test(bad_input, pool_create_bad_name, .timeout = 10)
{
    char longname[RP_POOL_NAME_MAX + 2];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    const char *bad[] = {"", longname};
    for (size_t i = 0; i < 2; i++) {
        rp_pool_options o;
        rp_pool_options_init(&o);
        o.routees = 1;
        o.name = bad[i];
        rp_pool *p = (rp_pool *)&o;
        assert_fails_naming(rp_pool_create(&p, &o), RP_EINVAL, "name");
        cr_assert_null(p);
    }
}

Test(bad_input, pool_name_of_max_length_is_accepted, .timeout = 10)
{
    char name[RP_POOL_NAME_MAX + 1];
    memset(name, 'm', RP_POOL_NAME_MAX);
    name[RP_POOL_NAME_MAX] = '\0';
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 12;
    o.name = name;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_pool_submit(p, noop_job, NULL), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    rp_pool_destroy(p);
}

Test(bad_input, pool_create_weights_count_mismatch, .timeout = 10)
{
    const unsigned w[3] = {1, 2, 3};
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 4;
    o.strategy = rp_strategy_weighted(w, 3);
    rp_pool *p = (rp_pool *)&o;
    assert_fails_naming(rp_pool_create(&p, &o), RP_EINVAL,
                        "weights|nweights");
    cr_assert_null(p);
}

Test(bad_input, pool_create_all_zero_weights, .timeout = 10)
{
    const unsigned w[2] = {0, 0};
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 2;
    o.strategy = rp_strategy_weighted(w, 2);
    rp_pool *p = (rp_pool *)&o;
    assert_fails_naming(rp_pool_create(&p, &o), RP_EINVAL,
                        "weights|nweights");
    cr_assert_null(p);
}

Test(bad_input, pool_create_weight_too_large, .timeout = 10)
{
    const unsigned w[2] = {1, RP_WEIGHT_MAX + 1};
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 2;
    o.strategy = rp_strategy_weighted(w, 2);
    rp_pool *p = (rp_pool *)&o;
    assert_fails_naming(rp_pool_create(&p, &o), RP_EINVAL,
                        "weights|nweights");
    cr_assert_null(p);
}

Test(bad_input, pool_create_null_custom_fn, .timeout = 10)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 2;
    o.strategy = rp_strategy_custom(NULL, NULL);
    rp_pool *p = (rp_pool *)&o;
    assert_fails_naming(rp_pool_create(&p, &o), RP_EINVAL, "custom");
    cr_assert_null(p);
}

Test(bad_input, pool_create_idle_spin_too_long, .timeout = 10)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 1;
    o.idle_spin_us = RP_IDLE_SPIN_US_MAX + 1;
    rp_pool *p = (rp_pool *)&o;
    assert_fails_naming(rp_pool_create(&p, &o), RP_EINVAL, "idle_spin_us");
    cr_assert_null(p);
    o.idle_spin_us = RP_IDLE_SPIN_US_MAX;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    rp_pool_destroy(p);
    o.idle_spin_us = RP_IDLE_SPIN_US_AUTO;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    rp_pool_destroy(p);
}

Test(bad_input, pool_defaults_and_zero_routees_mean_online_cpus,
     .timeout = 10)
{
    rp_pool_options o;
    memset(&o, 0xab, sizeof o);
    rp_pool_options_init(&o);
    cr_assert_str_eq(o.name, "pool");
    cr_assert_eq(o.routees, 0u);
    cr_assert_eq(o.mailbox_capacity, 0u);
    cr_assert_eq(o.overflow, RP_OVERFLOW_REJECT);
    cr_assert_eq(o.pin_cpus, false);
    cr_assert_eq(o.steal, true);
    cr_assert_eq(o.idle_spin_us, RP_IDLE_SPIN_US_AUTO);
    cr_assert_eq(o.strategy.kind, RP_STRATEGY_ROUND_ROBIN);
    cr_assert_null(o.on_undelivered);
    cr_assert_null(o.log);

    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0);
    cr_assert_eq(rp_pool_size(p), (size_t)sysconf(_SC_NPROCESSORS_ONLN));
    rp_pool_destroy(p);

    p = NULL;
    cr_assert_eq(rp_pool_create(&p, NULL), 0, "NULL options mean defaults");
    cr_assert_eq(rp_pool_size(p), (size_t)sysconf(_SC_NPROCESSORS_ONLN));
    rp_pool_destroy(p);
}

Test(bad_input, pool_create_max_capacity_is_accepted, .timeout = 10)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 1;
    o.mailbox_capacity = RP_MAILBOX_CAPACITY_MAX;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    rp_pool_destroy(p);
}

/* ---- pool calls ---- */

Test(bad_input, pool_calls_reject_null_pool_and_fn, .timeout = 10)
{
    assert_fails_naming(rp_pool_submit(NULL, noop_job, NULL), RP_EINVAL,
                        "pool");
    assert_fails_naming(rp_pool_wait_idle(NULL, 0), RP_EINVAL, "pool");
    assert_fails_naming(rp_pool_shutdown(NULL, RP_SHUTDOWN_DRAIN), RP_EINVAL,
                        "pool");
    cr_assert_null(rp_pool_router(NULL));
    cr_assert_eq(rp_pool_size(NULL), 0u);
    cr_assert_null(rp_pool_routee(NULL, 0));
    rp_pool_destroy(NULL); /* accepted */

    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "bad", 2, 0, 0, rp_strategy_round_robin()), 0);
    assert_fails_naming(rp_pool_submit(p, NULL, NULL), RP_EINVAL, "fn");
    assert_fails_naming(rp_pool_wait_idle(p, -2), RP_EINVAL, "timeout_ms");
    assert_fails_naming(rp_pool_shutdown(p, 7), RP_EINVAL, "mode");
    cr_assert_null(rp_pool_routee(p, 2));
    cr_assert_null(rp_pool_routee(p, (size_t)-1));
    cr_assert_not_null(rp_pool_routee(p, 1));
    rp_pool_destroy(p);
}

Test(bad_input, routee_calls_reject_null, .timeout = 10)
{
    assert_fails_naming(rp_routee_tell(NULL, noop_job, NULL), RP_EINVAL,
                        "r|routee");
    cr_assert_eq(rp_routee_depth(NULL), RP_EINVAL);
    cr_assert_eq(rp_routee_busy(NULL), false);
    cr_assert_eq(rp_routee_stop(NULL), RP_EINVAL);
    cr_assert_eq(rp_routee_index(NULL), -1);
    rp_routee_stats st;
    cr_assert_eq(rp_routee_stats_get(NULL, &st), RP_EINVAL);

    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "bad", 1, 0, 0, rp_strategy_round_robin()), 0);
    cr_assert_eq(rp_routee_stats_get(rp_pool_routee(p, 0), NULL), RP_EINVAL);
    assert_fails_naming(rp_routee_tell(rp_pool_routee(p, 0), NULL, NULL),
                        RP_EINVAL, "fn");
    rp_pool_destroy(p);
}

Test(bad_input, foreign_create_rejects_null_out_and_send, .timeout = 10)
{
    rp_routee *r = (rp_routee *)&r;
    assert_fails_naming(rp_routee_foreign_create(&r, NULL, NULL, NULL),
                        RP_EINVAL, "send");
    cr_assert_null(r);
    assert_fails_naming(rp_routee_foreign_create(NULL, fake_foreign_send,
                                                 NULL, NULL),
                        RP_EINVAL, "out");
    rp_routee_foreign_destroy(NULL); /* accepted */
}

Test(bad_input, foreign_routee_without_depth_reports_enodepth, .timeout = 10)
{
    fake_foreign f = {.id = 0};
    rp_routee *r = NULL;
    cr_assert_eq(rp_routee_foreign_create(&r, fake_foreign_send, NULL, &f), 0);
    cr_assert_eq(rp_routee_depth(r), RP_ENODEPTH);
    cr_assert_eq(rp_routee_index(r), -1);
    cr_assert_eq(rp_routee_busy(r), false);

    fake_foreign g = {.id = 1, .depth = 7};
    rp_routee *r2 = NULL;
    cr_assert_eq(rp_routee_foreign_create(&r2, fake_foreign_send,
                                          fake_foreign_depth, &g), 0);
    cr_assert_eq(rp_routee_depth(r2), 7);
    rp_routee_foreign_destroy(r2);
    rp_routee_foreign_destroy(r);
}

Test(bad_input, foreign_destroy_ignores_a_pool_routee, .timeout = 10)
{
    logcap lc;
    logcap_init(&lc);
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.routees = 1;
    o.log = logcap_fn;
    o.log_user = &lc;
    rp_pool *p = NULL;
    cr_assert_eq(rp_pool_create(&p, &o), 0);
    rp_routee_foreign_destroy(rp_pool_routee(p, 0)); /* ignored, logged */
    probe pr;
    probe_init(&pr, NULL, 0, NULL);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &pr), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(probe_runs(&pr), 1, "the routee survived");
    rp_pool_destroy(p);
}

Test(bad_input, submit_after_shutdown_returns_eshutdown, .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "down", 2, 0, 0, rp_strategy_round_robin()), 0);
    cr_assert_eq(rp_pool_shutdown(p, RP_SHUTDOWN_DRAIN), 0);
    cr_assert_eq(rp_pool_shutdown(p, RP_SHUTDOWN_ABORT), 0,
                 "a second shutdown is a no-op");

    probe pr;
    probe_init(&pr, NULL, 0, NULL);
    cr_assert_eq(rp_pool_submit(p, probe_job, &pr), RP_ESHUTDOWN);
    cr_assert_eq(rp_router_tell(rp_pool_router(p), probe_job, &pr),
                 RP_ESHUTDOWN);
    cr_assert_eq(rp_pool_wait_idle(p, 1000), 0);
    cr_assert_eq(probe_runs(&pr), 0);
    cr_assert_eq(probe_undel(&pr), 0, "a refused job is not handed back");
    cr_assert(rp_routee_stopped(rp_pool_routee(p, 0)));
    cr_assert(rp_routee_stopped(rp_pool_routee(p, 1)));
    rp_pool_destroy(p);
}

/* ---- routers ---- */

Test(bad_input, router_create_rejects_null_and_bad_strategy, .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "rbad", 3, 0, 0, rp_strategy_round_robin()), 0);
    rp_router *r = (rp_router *)&r;

    assert_fails_naming(rp_router_create(NULL, p, NULL), RP_EINVAL, "out");
    assert_fails_naming(rp_router_create(&r, NULL, NULL), RP_EINVAL, "pool");
    cr_assert_null(r);

    rp_router_options o;
    rp_router_options_init(&o);
    cr_assert_str_eq(o.name, "router");
    cr_assert_eq(o.strategy.kind, RP_STRATEGY_ROUND_ROBIN);
    cr_assert_null(o.on_undelivered);
    cr_assert_null(o.log);

    const unsigned w2[2] = {1, 1};
    o.strategy = rp_strategy_weighted(w2, 2); /* pool has 3 routees */
    r = (rp_router *)&r;
    assert_fails_naming(rp_router_create(&r, p, &o), RP_EINVAL,
                        "weights|nweights");
    cr_assert_null(r);

    o.strategy = rp_strategy_custom(NULL, NULL);
    assert_fails_naming(rp_router_create(&r, p, &o), RP_EINVAL, "custom");
    cr_assert_null(r);

    o.strategy = rp_strategy_custom(bad_custom, NULL);
    cr_assert_eq(rp_router_create(&r, p, &o), 0);
    cr_assert_eq(rp_router_size(r), 3u);
    rp_router_destroy(r);
    rp_router_destroy(NULL); /* accepted */
    rp_router_destroy(rp_pool_router(p)); /* ignored */
    cr_assert_eq(rp_pool_submit(p, noop_job, NULL), 0,
                 "destroying the default router must be ignored");
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    rp_pool_destroy(p);
}

Test(bad_input, group_router_rejects_null_routee_and_too_many, .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "gbad", 2, 0, 0, rp_strategy_round_robin()), 0);
    rp_routee *list[3] = {rp_pool_routee(p, 0), NULL, rp_pool_routee(p, 1)};
    rp_router *r = (rp_router *)&r;
    assert_fails_naming(rp_router_create_group(&r, list, 3, NULL), RP_EINVAL,
                        "routees");
    cr_assert_null(r);
    assert_fails_naming(rp_router_create_group(NULL, list, 1, NULL), RP_EINVAL,
                        "out");

    rp_routee **many = calloc(RP_ROUTEES_MAX + 1, sizeof *many);
    cr_assert_not_null(many);
    for (size_t i = 0; i <= RP_ROUTEES_MAX; i++)
        many[i] = rp_pool_routee(p, i % 2);
    r = (rp_router *)&r;
    assert_fails_naming(rp_router_create_group(&r, many, RP_ROUTEES_MAX + 1,
                                               NULL),
                        RP_EINVAL, "n");
    cr_assert_null(r);
    free(many);
    rp_pool_destroy(p);
}

Test(bad_input, router_tell_rejects_null_and_unkeyed_consistent_hash,
     .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "tbad", 2, 0, 0, rp_strategy_round_robin()), 0);
    assert_fails_naming(rp_router_tell(NULL, noop_job, NULL), RP_EINVAL,
                        "router");
    assert_fails_naming(rp_router_tell(rp_pool_router(p), NULL, NULL),
                        RP_EINVAL, "fn");
    assert_fails_naming(rp_router_broadcast(NULL, noop_job, NULL), RP_EINVAL,
                        "router");
    assert_fails_naming(rp_router_broadcast(rp_pool_router(p), NULL, NULL),
                        RP_EINVAL, "fn");
    assert_fails_naming(rp_router_tell_key(NULL, "k", 1, noop_job, NULL),
                        RP_EINVAL, "router");
    assert_fails_naming(rp_router_tell_key(rp_pool_router(p), NULL, 1,
                                           noop_job, NULL),
                        RP_EINVAL, "key");
    assert_fails_naming(rp_router_tell_key(rp_pool_router(p), "k", 0,
                                           noop_job, NULL),
                        RP_EINVAL, "key_len");
    cr_assert_eq(rp_router_size(NULL), 0u);
    cr_assert_eq(rp_router_undelivered(NULL), 0u);

    rp_router_options o;
    rp_router_options_init(&o);
    o.strategy = rp_strategy_consistent_hash(1);
    rp_router *r = NULL;
    cr_assert_eq(rp_router_create(&r, p, &o), 0);
    probe pr;
    probe_init(&pr, NULL, 0, NULL);
    cr_assert_eq(rp_router_tell(r, probe_job, &pr), RP_EINVAL);
    cr_assert_eq(rp_router_tell_key(r, "k", 1, probe_job, &pr), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(probe_runs(&pr), 1);
    cr_assert_eq(probe_undel(&pr), 0);
    rp_router_destroy(r);

    /* A pool whose default strategy is consistent hashing: submit refuses. */
    rp_pool *h = NULL;
    cr_assert_eq(make_pool(&h, "hash", 2, 0, 0,
                           rp_strategy_consistent_hash(3)), 0);
    assert_fails_naming(rp_pool_submit(h, noop_job, NULL), RP_EINVAL,
                        "strategy|key|consistent");
    rp_pool_destroy(h);
    rp_pool_destroy(p);
}

Test(bad_input, tell_to_stopped_routee_returns_estopped, .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "stp", 2, 0, 0, rp_strategy_round_robin()), 0);
    rp_routee *r0 = rp_pool_routee(p, 0);
    cr_assert_eq(rp_routee_stopped(r0), false);
    cr_assert_eq(rp_routee_stop(r0), 0);
    cr_assert_eq(rp_routee_stop(r0), 0, "stop is idempotent");
    cr_assert(rp_routee_stopped(r0));

    probe pr;
    probe_init(&pr, NULL, 0, NULL);
    cr_assert_eq(rp_routee_tell(r0, probe_job, &pr), RP_ESTOPPED);
    cr_assert_eq(rp_pool_wait_idle(p, 5000), 0);
    cr_assert_eq(probe_runs(&pr), 0);
    cr_assert_eq(probe_undel(&pr), 0, "a refused job is not handed back");
    rp_pool_destroy(p);
}

/* ---- issue 15 item 8: every failing call names the function called ---- */

/* Assert rc == want and that rp_errmsg() starts "func: " - set by this very
 * call: a stale message from another function is planted first. */
#define assert_fails_in(call, want, func)                                      \
    do {                                                                       \
        (void)rp_pool_create(NULL, NULL); /* "rp_pool_create: ..." */          \
        const int64_t rc_ = (call);                                            \
        cr_assert_eq(rc_, (int64_t)(want), "%s: got %lld (%s), want %s", #call, \
                     (long long)rc_, rp_err_name((int)rc_), rp_err_name(want)); \
        cr_assert_eq(strncmp(rp_errmsg(), func ": ", strlen(func ": ")), 0,    \
                     "%s: rp_errmsg() \"%s\" does not start \"%s: \"", #call,  \
                     rp_errmsg(), func);                                       \
    } while (0)

/* A custom strategy that returns *user choices, all naming index 5. */
static int returns_user(void *user, rp_route_state *state, rp_routee *const *routees,
                        size_t n, size_t *out)
{
    (void)state;
    (void)routees;
    for (size_t i = 0; i < n; i++)
        out[i] = 5;
    return *(int *)user;
}

Test(bad_input, strategy_pick_sets_errmsg_in_every_einval_case, .timeout = 10)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "pick", 2, 0, 0, rp_strategy_round_robin()), 0);
    rp_routee *r[2] = {rp_pool_routee(p, 0), rp_pool_routee(p, 1)};
    rp_route_state st = {0};
    size_t out[2];
    const rp_strategy rr = rp_strategy_round_robin();
    const unsigned w[3] = {1, 1, 1};
    const rp_strategy weighted = rp_strategy_weighted(w, 3);
    const rp_strategy hash = rp_strategy_consistent_hash(1);
    const rp_strategy nofn = rp_strategy_custom(NULL, NULL);
    int minus = -1, many = 3, one = 1;
    const rp_strategy neg = rp_strategy_custom(returns_user, &minus);
    const rp_strategy toomany = rp_strategy_custom(returns_user, &many);
    const rp_strategy badidx = rp_strategy_custom(returns_user, &one);
    rp_strategy badkind = rr;
    badkind.kind = (rp_strategy_kind)42;

    assert_fails_in(rp_strategy_pick(NULL, &st, r, 2, out), RP_EINVAL, "rp_strategy_pick");
    assert_fails_in(rp_strategy_pick(&rr, NULL, r, 2, out), RP_EINVAL, "rp_strategy_pick");
    assert_fails_in(rp_strategy_pick(&rr, &st, NULL, 2, out), RP_EINVAL, "rp_strategy_pick");
    assert_fails_in(rp_strategy_pick(&rr, &st, r, 2, NULL), RP_EINVAL, "rp_strategy_pick");
    assert_fails_in(rp_strategy_pick(&badkind, &st, r, 2, out), RP_EINVAL, "rp_strategy_pick");
    assert_fails_in(rp_strategy_pick(&weighted, &st, r, 2, out), RP_EINVAL, "rp_strategy_pick");
    assert_fails_in(rp_strategy_pick(&hash, &st, r, 2, out), RP_EINVAL, "rp_strategy_pick");
    assert_fails_in(rp_strategy_pick(&nofn, &st, r, 2, out), RP_EINVAL, "rp_strategy_pick");
    assert_fails_in(rp_strategy_pick(&neg, &st, r, 2, out), RP_EINVAL, "rp_strategy_pick");
    assert_fails_in(rp_strategy_pick(&toomany, &st, r, 2, out), RP_EINVAL, "rp_strategy_pick");
    assert_fails_in(rp_strategy_pick(&badidx, &st, r, 2, out), RP_EINVAL, "rp_strategy_pick");
    cr_assert(names_field(rp_errmsg(), "custom"), "%s", rp_errmsg());
    rp_pool_destroy(p);
}

Test(bad_input, routee_depth_sets_errmsg_for_einval_and_enodepth, .timeout = 10)
{
    fake_foreign f = {.id = 0}, g = {.id = 1, .depth = -1};
    rp_routee *nodepth = NULL, *failing = NULL;
    cr_assert_eq(rp_routee_foreign_create(&nodepth, fake_foreign_send, NULL, &f), 0);
    cr_assert_eq(rp_routee_foreign_create(&failing, fake_foreign_send, fake_foreign_depth, &g),
                 0);
    assert_fails_in(rp_routee_depth(NULL), RP_EINVAL, "rp_routee_depth");
    cr_assert(names_field(rp_errmsg(), "routee"), "%s", rp_errmsg());
    assert_fails_in(rp_routee_depth(nodepth), RP_ENODEPTH, "rp_routee_depth");
    assert_fails_in(rp_routee_depth(failing), RP_ENODEPTH, "rp_routee_depth");
    rp_routee_foreign_destroy(failing);
    rp_routee_foreign_destroy(nodepth);
}

static void no_reply(rp_future *f, void *user)
{
    (void)f;
    (void)user;
}

/* Forwarding calls: each message names the function the user called, not
 * the one it forwards to. */
Test(bad_input, forwarded_failures_name_the_function_the_user_called, .timeout = 20)
{
    rp_pool *p = NULL, *ch = NULL;
    cr_assert_eq(make_pool(&p, "fwd", 2, 0, 0, rp_strategy_round_robin()), 0);
    cr_assert_eq(make_pool(&ch, "fwdch", 2, 0, 0, rp_strategy_consistent_hash(1)), 0);
    rp_router *rt = rp_pool_router(p), *sg = NULL;
    cr_assert_eq(rp_router_create_scatter_gather(&sg, p, NULL, NULL), 0, "%s", rp_errmsg());
    probe pr[2];
    probe_init_n(pr, 2, NULL, 0, NULL);
    void *args[2] = {&pr[0], &pr[1]};
    rp_future *f = NULL;

    /* Bad arguments. */
    assert_fails_in(rp_pool_submit(p, NULL, NULL), RP_EINVAL, "rp_pool_submit");
    cr_assert(names_field(rp_errmsg(), "fn"), "%s", rp_errmsg());
    assert_fails_in(rp_pool_submit(ch, noop_job, NULL), RP_EINVAL, "rp_pool_submit");
    assert_fails_in(rp_pool_submit_batch(p, NULL, args, 2), RP_EINVAL, "rp_pool_submit_batch");
    assert_fails_in(rp_pool_submit_batch(ch, noop_job, args, 2), RP_EINVAL,
                    "rp_pool_submit_batch");
    assert_fails_in(rp_router_tell_reply(rt, NULL, NULL, 0, no_reply, NULL), RP_EINVAL,
                    "rp_router_tell_reply");
    assert_fails_in(rp_router_tell_reply(rt, noop_job, NULL, -1, no_reply, NULL), RP_EINVAL,
                    "rp_router_tell_reply");
    assert_fails_in(rp_router_tell_reply(rp_pool_router(ch), noop_job, NULL, 0, no_reply, NULL),
                    RP_EINVAL, "rp_router_tell_reply");
    assert_fails_in(rp_router_ask(rp_pool_router(ch), noop_job, NULL, 0, &f), RP_EINVAL,
                    "rp_router_ask");
    assert_fails_in(rp_router_tell(rp_pool_router(ch), noop_job, NULL), RP_EINVAL,
                    "rp_router_tell");

    /* Refusals after shutdown, on every path (routee 1 stopped before). */
    cr_assert_eq(rp_routee_stop(rp_pool_routee(p, 1)), 0);
    cr_assert_eq(rp_pool_shutdown(p, RP_SHUTDOWN_DRAIN), 0);
    assert_fails_in(rp_pool_submit(p, noop_job, NULL), RP_ESHUTDOWN, "rp_pool_submit");
    assert_fails_in(rp_pool_submit(p, noop_job, NULL), RP_ESHUTDOWN, "rp_pool_submit");
    assert_fails_in(rp_pool_submit_batch(p, noop_job, args, 2), RP_ESHUTDOWN,
                    "rp_pool_submit_batch");
    assert_fails_in(rp_router_tell(rt, noop_job, NULL), RP_ESHUTDOWN, "rp_router_tell");
    assert_fails_in(rp_router_tell_key(rt, "k", 1, noop_job, NULL), RP_ESHUTDOWN,
                    "rp_router_tell_key");
    assert_fails_in(rp_router_tell_batch(rt, noop_job, args, 2), RP_ESHUTDOWN,
                    "rp_router_tell_batch");
    assert_fails_in(rp_router_ask(rt, noop_job, NULL, 0, &f), RP_ESHUTDOWN, "rp_router_ask");
    assert_fails_in(rp_router_tell_reply(rt, noop_job, NULL, 0, no_reply, NULL), RP_ESHUTDOWN,
                    "rp_router_tell_reply");
    assert_fails_in(rp_router_broadcast(rt, noop_job, NULL), RP_ESHUTDOWN,
                    "rp_router_broadcast");
    assert_fails_in(rp_router_ask(sg, noop_job, NULL, 0, &f), RP_ESHUTDOWN, "rp_router_ask");
    assert_fails_in(rp_router_tell_reply(sg, noop_job, NULL, 0, no_reply, NULL), RP_ESHUTDOWN,
                    "rp_router_tell_reply");
    assert_fails_in(rp_router_tell(sg, noop_job, NULL), RP_ESHUTDOWN, "rp_router_tell");
    assert_fails_in(rp_routee_tell(rp_pool_routee(p, 1), noop_job, NULL), RP_ESHUTDOWN,
                    "rp_routee_tell");
    assert_fails_in(rp_routee_ask(rp_pool_routee(p, 1), noop_job, NULL, 0, &f), RP_ESHUTDOWN,
                    "rp_routee_ask");
    cr_assert_null(f);
    rp_router_destroy(sg);
    rp_pool_destroy(ch);
    rp_pool_destroy(p);
}
