/* SPDX-License-Identifier: MIT */
/*
 * test_depth.c - the cluster smallest-mailbox (seed 001's cluster variant)
 * on the depth cache with an injected clock, through foreign routees and
 * rp_strategy_pick() exactly as a cluster router routes (issue 19, test 3);
 * the creation-time validation of refresh_ms and staleness_ms; the parser of
 * the TIME + HGETALL replies fed untrusted input.  No Redis needed.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "depth.h"
#include "routepool/routepool.h"
#include "assert_no_leaks.h"

/* The injected clock: tests move it by hand. */
static int64_t fake_now;

static int64_t fake_clock(void *user)
{
    (void)user;
    return fake_now;
}

typedef struct node_ref {
    rp__depth_cache *cache;
    const char *id;
} node_ref;

static int send_nothing(rp_job_fn fn, void *arg, void *user)
{
    (void)fn, (void)arg, (void)user;
    return 0;
}

/* What a cluster router's foreign routee answers: the cached depth. */
static int64_t cached_depth(void *user)
{
    const node_ref *ref = user;
    return rp__depth_cache_get(ref->cache, ref->id);
}

static rp__depth_cache cache;
static node_ref refs[3];
static rp_routee *routees[3];
static const char *const ids[3] = {"node-1", "node-2", "node-3"};

static void setup_nodes(int staleness_ms)
{
    fake_now = 0;
    rp__depth_cache_init(&cache, staleness_ms, fake_clock, NULL);
    for (int i = 0; i < 3; i++) {
        refs[i] = (node_ref){&cache, ids[i]};
        cr_assert_eq(rp_routee_foreign_create(&routees[i], send_nothing, cached_depth, &refs[i]), 0);
    }
}

static void teardown_nodes(void)
{
    for (int i = 0; i < 3; i++)
        rp_routee_foreign_destroy(routees[i]);
    rp__depth_cache_fini(&cache);
    ASSERT_NO_LEAKS();
}

static void setup_default(void)
{
    setup_nodes(RP__DEPTH_STALENESS_DEFAULT_MS);
}

static rp__depth_entry report(const char *id, int64_t depth, int64_t server_ms)
{
    rp__depth_entry e;

    memset(&e, 0, sizeof e);
    strcpy(e.id, id);
    e.depth = depth;
    e.server_ms = server_ms;
    return e;
}

/* The node index the cluster smallest-mailbox picks for message index mi. */
static int pick(uint64_t mi)
{
    rp_strategy s = rp_strategy_custom(rp__depth_strategy, NULL);
    rp_route_state st = {0};
    size_t out[3];

    st.message_index = mi;
    cr_assert_eq(rp_strategy_pick(&s, &st, routees, 3, out), 1);
    return (int)out[0];
}

TestSuite(smallest_mailbox, .init = setup_default, .fini = teardown_nodes);

Test(smallest_mailbox, depths_7_2_9_pick_node_2_for_three_successive_jobs)
{
    rp__depth_entry e[3] = {report("node-1", 7, 1000), report("node-2", 2, 1000),
                            report("node-3", 9, 1000)};

    cr_assert_eq(rp__depth_cache_apply(&cache, e, 3, 1000), 0);
    for (uint64_t mi = 0; mi < 3; mi++)
        cr_assert_eq(pick(mi), 1, "job %llu went to node %d", (unsigned long long)mi, pick(mi) + 1);
}

Test(smallest_mailbox, cold_cache_rotates_1_2_3_1)
{
    cr_assert_eq(rp_routee_depth(routees[0]), RP_ENODEPTH);
    cr_assert_eq(pick(0), 0);
    cr_assert_eq(pick(1), 1);
    cr_assert_eq(pick(2), 2);
    cr_assert_eq(pick(3), 0);
}

Test(smallest_mailbox, empty_refresh_rotates_round_robin)
{
    cr_assert_eq(rp__depth_cache_apply(&cache, NULL, 0, 5000), 0);
    for (uint64_t mi = 0; mi < 6; mi++)
        cr_assert_eq(pick(mi), (int)(mi % 3));
}

Test(smallest_mailbox, only_reported_node_is_chosen_over_unreported_ones)
{
    rp__depth_entry e = report("node-3", 40, 1000);

    cr_assert_eq(rp__depth_cache_apply(&cache, &e, 1, 1000), 0);
    /* The unreported nodes would score 0 in the local rule; here they are
     * skipped, so the busy reported node takes every job. */
    for (uint64_t mi = 0; mi < 6; mi++)
        cr_assert_eq(pick(mi), 2);
}

Test(smallest_mailbox, stale_report_is_skipped_once_the_clock_ages_it)
{
    rp__depth_entry e[2] = {report("node-1", 1, 0), report("node-2", 5, 900)};

    cr_assert_eq(rp__depth_cache_apply(&cache, e, 2, 1000), 0);
    cr_assert_eq(pick(0), 0, "both fresh: the shallower node-1");
    fake_now += 500; /* server now ~1500: node-1's report is 1500 ms old */
    cr_assert_eq(rp_routee_depth(routees[0]), RP_ENODEPTH);
    cr_assert_eq(rp_routee_depth(routees[1]), 5);
    for (uint64_t mi = 0; mi < 3; mi++)
        cr_assert_eq(pick(mi), 1);
    fake_now += 1000; /* both stale: round-robin */
    cr_assert_eq(pick(0), 0);
    cr_assert_eq(pick(1), 1);
    cr_assert_eq(pick(2), 2);
}

Test(smallest_mailbox, report_exactly_at_the_bound_is_still_fresh)
{
    rp__depth_entry e = report("node-2", 3, 0);

    cr_assert_eq(rp__depth_cache_apply(&cache, &e, 1, 1000), 0);
    cr_assert_eq(rp_routee_depth(routees[1]), 3);
    fake_now += 1;
    cr_assert_eq(rp_routee_depth(routees[1]), RP_ENODEPTH);
}

Test(smallest_mailbox, equal_depths_rotate_and_a_zero_stops_the_scan)
{
    rp__depth_entry e[3] = {report("node-1", 3, 1000), report("node-2", 3, 1000),
                            report("node-3", 3, 1000)};

    cr_assert_eq(rp__depth_cache_apply(&cache, e, 3, 1000), 0);
    for (uint64_t mi = 0; mi < 6; mi++)
        cr_assert_eq(pick(mi), (int)(mi % 3), "ties rotate (strict <)");
    e[0].depth = 0;
    e[2].depth = 0;
    cr_assert_eq(rp__depth_cache_apply(&cache, e, 3, 1000), 0);
    cr_assert_eq(pick(0), 0);
    cr_assert_eq(pick(1), 2, "from node-2 the scan stops at node-3's 0");
    cr_assert_eq(pick(2), 2);
}

Test(smallest_mailbox, stopped_node_is_skipped_even_with_the_smallest_report)
{
    rp__depth_entry e[3] = {report("node-1", 0, 1000), report("node-2", 4, 1000),
                            report("node-3", 6, 1000)};

    cr_assert_eq(rp__depth_cache_apply(&cache, e, 3, 1000), 0);
    cr_assert_eq(rp_routee_stop(routees[0]), 0);
    for (uint64_t mi = 0; mi < 3; mi++)
        cr_assert_eq(pick(mi), 1);
}

Test(smallest_mailbox, later_refresh_replaces_the_reports)
{
    rp__depth_entry e[3] = {report("node-1", 7, 1000), report("node-2", 2, 1000),
                            report("node-3", 9, 1000)};

    cr_assert_eq(rp__depth_cache_apply(&cache, e, 3, 1000), 0);
    cr_assert_eq(pick(0), 1);
    e[1].depth = 20;
    e[1].server_ms = 1200;
    cr_assert_eq(rp__depth_cache_apply(&cache, e, 3, 1200), 0);
    cr_assert_eq(pick(0), 0);
}

TestSuite(staleness_zero, .init = NULL);

Test(staleness_zero, report_never_expires)
{
    rp__depth_entry e[2] = {report("node-1", 1, 0), report("node-2", 5, 0)};

    setup_nodes(0);
    cr_assert_eq(rp__depth_cache_apply(&cache, e, 2, 0), 0);
    fake_now += (int64_t)1000 * 3600 * 24 * 365; /* a year later */
    cr_assert_eq(rp_routee_depth(routees[0]), 1);
    cr_assert_eq(pick(1), 0);
    teardown_nodes();
}

/* ---- validation at creation ---- */

static void expect_invalid(int refresh, int staleness, const char *needle)
{
    cr_assert_eq(rp__depth_validate(refresh, staleness, "rp_cluster_router_create"), RP_EINVAL,
                 "refresh %d staleness %d accepted", refresh, staleness);
    cr_assert(strstr(rp_errmsg(), needle), "message \"%s\" lacks \"%s\"", rp_errmsg(), needle);
    cr_assert(strstr(rp_errmsg(), "rp_cluster_router_create"), "%s", rp_errmsg());
}

Test(validation, refresh_below_1_ms_is_rejected_naming_refresh_ms)
{
    expect_invalid(0, 1000, "opts.refresh_ms must be >= 1 (got 0)");
    expect_invalid(-5, 0, "opts.refresh_ms must be >= 1 (got -5)");
}

Test(validation, negative_staleness_is_rejected_naming_staleness_ms)
{
    expect_invalid(200, -1, "opts.staleness_ms must be >= 0");
}

Test(validation, nonzero_staleness_below_the_default_refresh_is_rejected)
{
    expect_invalid(RP__DEPTH_REFRESH_DEFAULT_MS, 100,
                   "opts.staleness_ms (100) must be 0 or >= opts.refresh_ms (200, the default)");
}

Test(validation, refresh_above_the_default_staleness_is_rejected)
{
    expect_invalid(5000, RP__DEPTH_STALENESS_DEFAULT_MS,
                   "opts.staleness_ms (1000, the default) must be 0 or >= opts.refresh_ms (5000)");
}

Test(validation, accepted_combinations)
{
    cr_assert_eq(rp__depth_validate(200, 1000, "f"), 0, "the defaults");
    cr_assert_eq(rp__depth_validate(5000, 0, "f"), 0, "0: never stale, any refresh");
    cr_assert_eq(rp__depth_validate(300, 300, "f"), 0, "staleness equal to refresh");
    cr_assert_eq(rp__depth_validate(1, 1, "f"), 0, "the smallest values");
    cr_assert_eq(rp__depth_validate(200, 100000, "f"), 0);
}

/* ---- the parser, fed untrusted replies ---- */

static redisReply *str(const char *s)
{
    redisReply *r = calloc(1, sizeof *r);
    r->type = REDIS_REPLY_STRING;
    r->len = strlen(s);
    r->str = strdup(s);
    return r;
}

static redisReply *arr(size_t n, redisReply **el)
{
    redisReply *r = calloc(1, sizeof *r);
    r->type = REDIS_REPLY_ARRAY;
    r->elements = n;
    r->element = calloc(n ? n : 1, sizeof *el);
    if (n)
        memcpy(r->element, el, n * sizeof *el);
    return r;
}

Test(parse, malformed_fields_are_skipped_and_counted)
{
    char long_id[RP_CLUSTER_ID_MAX + 2];
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    redisReply *t = arr(2, (redisReply *[]){str("1700000000"), str("250000")});
    redisReply *h = arr(18, (redisReply *[]){
        str("good"), str("4:1700000000100"), str("nocolon"), str("5"),
        str("empty-depth"), str(":5"), str("negative"), str("-1:5"),
        str("huge"), str("99999999999999999999:1"), str(long_id), str("1:1"),
        str(""), str("1:1"), str("trailing"), str("1:2x"), str("zero"), str("0:0")});
    rp__depth_entry *e;
    size_t n;
    int64_t now;
    uint64_t bad = 0;

    cr_assert_eq(rp__depth_parse(t, h, &e, &n, &now, &bad), 0);
    cr_assert_eq(now, INT64_C(1700000000250));
    cr_assert_eq(n, 2);
    cr_assert_eq(bad, 7);
    cr_assert_str_eq(e[0].id, "good");
    cr_assert_eq(e[0].depth, 4);
    cr_assert_eq(e[0].server_ms, INT64_C(1700000000100));
    cr_assert_str_eq(e[1].id, "zero");
    free(e);
    freeReplyObject(t);
    freeReplyObject(h);
}

Test(parse, unusable_time_or_hash_reply_is_refused)
{
    redisReply *good_t = arr(2, (redisReply *[]){str("10"), str("0")});
    redisReply *bad_t = arr(2, (redisReply *[]){str("10"), str("1000000")});
    redisReply *odd_h = arr(1, (redisReply *[]){str("lonely")});
    redisReply *h = arr(0, NULL);
    rp__depth_entry *e;
    size_t n;
    int64_t now;
    uint64_t bad = 0;

    cr_assert_eq(rp__depth_parse(bad_t, h, &e, &n, &now, &bad), RP_EINVAL);
    cr_assert_eq(rp__depth_parse(good_t, odd_h, &e, &n, &now, &bad), RP_EINVAL);
    cr_assert_eq(rp__depth_parse(NULL, h, &e, &n, &now, &bad), RP_EINVAL);
    cr_assert_eq(rp__depth_parse(good_t, h, &e, &n, &now, &bad), 0);
    cr_assert_eq(n, 0);
    cr_assert_null(e);
    cr_assert_eq(now, 10000);
    freeReplyObject(good_t);
    freeReplyObject(bad_t);
    freeReplyObject(odd_h);
    freeReplyObject(h);
}
