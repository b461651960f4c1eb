/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/test_ask.c - asks across nodes (issue 19's test 8): reply
 * bytes intact at 0 B, 1 B and 1 MiB, the payload cap at submit, unknown
 * handlers, handler failures carried across the wire, late replies
 * discarded, the round-trip histogram, and asks that expired before they
 * ran (counted, not run).
 */
#include "common_cluster.h"

static h_node node_a;

static void setup_with_node(void)
{
    cluster_setup();
    cr_assert_eq(h_node_start(&node_a, &redis, prefix, "a", NULL), 0);
}

static void teardown_node(void)
{
    h_node_term(&node_a);
    h_node_cleanup(&node_a);
    cluster_teardown();
}

TestSuite(ask, .init = setup_with_node, .fini = teardown_node, .timeout = 60);

static rp_future *ask_ok(rp_cluster_node *c, const char *h, const void *p, size_t len)
{
    rp_future *f;
    cr_assert_eq(rp_cluster_ask_node(c, "a", h, p, len, 10000, &f), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_future_wait(f, 20000), 0);
    return f;
}

Test(ask, ask__reply_bytes_round_trip_intact_at_0_1_and_1mib)
{
    rp_cluster_node *c = client();
    size_t sizes[] = {0, 1, (size_t)1 << 20};
    unsigned char *buf = malloc(sizes[2]);
    for (size_t i = 0; i < sizes[2]; i++)
        buf[i] = (unsigned char)(i * 2654435761u >> 13); /* every byte value, NULs too */
    for (int k = 0; k < 3; k++) {
        rp_future *f = ask_ok(c, "echo", sizes[k] ? buf : NULL, sizes[k]);
        cr_assert_eq(rp_future_status(f), RP_FUTURE_FULFILLED, "size %zu", sizes[k]);
        size_t len = 99;
        const unsigned char *got = rp_cluster_reply_bytes(f, &len);
        cr_assert_not_null(got);
        cr_assert_eq(len, sizes[k]);
        cr_assert(len == 0 || memcmp(got, buf, len) == 0, "size %zu: bytes differ", sizes[k]);
        rp_future_release(f);
    }
    free(buf);
    rp_cluster_stats s;
    rp_cluster_node_stats(c, &s);
    cr_assert_eq(s.replies_received, 3);
    cr_assert_eq(s.rtt_count, 3);
    uint64_t sum = 0;
    for (int i = 0; i < RP_CLUSTER_RTT_BUCKETS; i++)
        sum += s.rtt_buckets[i];
    cr_assert_eq(sum, 3);
    rp_cluster_leave(c);
}

Test(ask, ask__payload_over_the_cap_is_refused_at_submit)
{
    rp_cluster_options o;
    rp_cluster_node *c;
    client_opts(&o, "capped");
    o.max_payload = 1000;
    cr_assert_eq(rp_cluster_join(&c, NULL, &o), 0, "%s", rp_errmsg());
    char buf[1001] = {0};
    rp_future *f = (rp_future *)1;
    cr_assert_eq(rp_cluster_ask_node(c, "a", "echo", buf, 1001, 1000, &f), RP_EINVAL);
    cr_assert_null(f);
    cr_assert(strstr(rp_errmsg(), "max_payload"), "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_tell_node(c, "a", "echo", buf, 1001, NULL, 0), RP_EINVAL);
    f = ask_ok(c, "echo", buf, 1000);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FULFILLED);
    rp_future_release(f);
    rp_cluster_stats s;
    rp_cluster_node_stats(c, &s);
    cr_assert_eq(s.added, 1, "nothing was sent for the refused ones");
    rp_cluster_leave(c);
}

Test(ask, ask__default_cap_is_one_mib)
{
    rp_cluster_node *c = client();
    size_t n = RP_CLUSTER_PAYLOAD_DEFAULT + 1;
    char *buf = calloc(1, n);
    rp_future *f;
    cr_assert_eq(rp_cluster_ask_node(c, "a", "echo", buf, n, 1000, &f), RP_EINVAL);
    free(buf);
    rp_cluster_leave(c);
}

Test(ask, ask__unknown_handler_fails_enohandler)
{
    rp_cluster_node *c = client();
    rp_future *f = ask_ok(c, "nosuch", "x", 1);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FAILED);
    cr_assert_eq(rp_future_error(f)->code, RP_ENOHANDLER);
    rp_future_release(f);
    rp_cluster_leave(c);
}

Test(ask, ask__handler_failure_carries_its_code_and_message)
{
    rp_cluster_node *c = client();
    rp_future *f = ask_ok(c, "fail", NULL, 0);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FAILED);
    cr_assert_eq(rp_future_error(f)->code, -77);
    cr_assert_str_eq(rp_future_error(f)->message, "failed on purpose");
    rp_future_release(f);
    f = ask_ok(c, "noreply", NULL, 0);
    cr_assert_eq(rp_future_error(f)->code, RP_ENOREPLY);
    rp_future_release(f);
    rp_cluster_leave(c);
}

static bool one_discarded(void *arg)
{
    rp_cluster_stats s;
    rp_cluster_node_stats(arg, &s);
    return s.replies_discarded >= 1;
}

Test(ask, ask__a_late_reply_is_discarded)
{
    rp_cluster_node *c = client();
    rp_future *f;
    /* The handler sleeps 2.5 s; the ask gives up after 1 s.  (The node
     * does not start an ask whose deadline has passed, so the deadline must
     * outlast the pickup even on a loaded machine.) */
    cr_assert_eq(rp_cluster_ask_node(c, "a", "slow", "2500", 4, 1000, &f), 0);
    cr_assert_eq(rp_future_wait(f, 10000), 0);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FAILED);
    cr_assert_eq(rp_future_error(f)->code, RP_ETIMEDOUT);
    cr_assert(h_wait(one_discarded, c, 10000), "the late reply arrives and is discarded");
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FAILED, "it changed nothing");
    rp_cluster_stats s;
    rp_cluster_node_stats(c, &s);
    cr_assert_eq(s.replies_discarded, 1);
    cr_assert_eq(s.replies_received, 0);
    rp_future_release(f);
    /* A later ask still works. */
    f = ask_ok(c, "echo", "y", 1);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FULFILLED);
    rp_future_release(f);
    rp_cluster_leave(c);
}

Test(ask, ask__a_reply_with_an_unknown_correlation_id_is_discarded)
{
    rp_cluster_node *c = client();
    redisContext *r = h_redis_connect(&redis);
    /* A well-formed record for an ask nobody made, and garbage. */
    unsigned char rec[28] = {'R', 'P', 'R', '1', 0x39, 0x30};
    redisReply *x = h_cmd(r, "RPUSH %s:reply:client %b", prefix, rec, sizeof rec);
    freeReplyObject(x);
    x = h_cmd(r, "RPUSH %s:reply:client %b", prefix, "garbage", (size_t)7);
    freeReplyObject(x);
    cr_assert(h_wait(one_discarded, c, 5000));
    rp_future *f = ask_ok(c, "echo", "z", 1);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FULFILLED);
    rp_future_release(f);
    rp_cluster_stats s;
    rp_cluster_node_stats(c, &s);
    cr_assert_eq(s.malformed, 1);
    redisFree(r);
    rp_cluster_leave(c);
}

Test(ask, metrics__prometheus_text_has_the_node_label)
{
    rp_cluster_node *c = client();
    rp_future *f = ask_ok(c, "echo", "m", 1);
    rp_future_release(f);
    char *text = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&text, &len);
    cr_assert_eq(rp_cluster_write_prometheus(c, mf), 0);
    fclose(mf);
    cr_assert(strstr(text, "routepool_cluster_added_total{node=\"client\"} 1\n"), "%s", text);
    cr_assert(strstr(text, "routepool_cluster_reply_rtt_seconds_count{node=\"client\"} 1\n"));
    cr_assert(strstr(text, "# TYPE routepool_cluster_reconnects_total counter\n"));
    cr_assert(strstr(text, "routepool_cluster_report_age_seconds{node=\"client\"}"));
    free(text);
    rp_cluster_leave(c);
}

Test(ask, leave__fails_the_asks_still_pending_with_eshutdown)
{
    rp_cluster_node *c = client();
    rp_future *f;
    cr_assert_eq(rp_cluster_ask_node(c, "a", "slow", "1000", 4, 10000, &f), 0);
    rp_cluster_leave(c);
    cr_assert_eq(rp_future_wait(f, 0), 0, "completed by the leave");
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FAILED);
    cr_assert_eq(rp_future_error(f)->code, RP_ESHUTDOWN);
    rp_future_release(f);
}

/* An ask whose deadline passed before a routee took it is not run: the
 * node counts it as expired and sends no reply.  Node "one" has a single
 * routee, busy 800 ms with a slow ask; three asks with 200 ms deadlines
 * wait behind it (one fetched, two still in the inbox), so all three are
 * past their deadline when they reach the routee: expired is exactly 3,
 * and the only replies are the slow ask's and a later ask's. */
Test(ask, expired__asks_past_their_deadline_are_counted_and_not_run)
{
    const char *const one[] = {"--routees", "1", NULL};
    h_node n;
    rp_cluster_node *c = client();
    rp_future *slow, *late[3];

    cr_assert_eq(h_node_start(&n, &redis, prefix, "one", one), 0);
    cr_assert_eq(rp_cluster_ask_node(c, "one", "slow", "800", 3, 10000, &slow), 0, "%s",
                 rp_errmsg());
    for (int i = 0; i < 3; i++)
        cr_assert_eq(rp_cluster_ask_node(c, "one", "echo", "e", 1, 200, &late[i]), 0, "%s",
                     rp_errmsg());
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(rp_future_wait(late[i], 10000), 0);
        cr_assert_eq(rp_future_status(late[i]), RP_FUTURE_FAILED);
        cr_assert_eq(rp_future_error(late[i])->code, RP_ETIMEDOUT);
        rp_future_release(late[i]);
    }
    cr_assert_eq(rp_future_wait(slow, 10000), 0);
    cr_assert_eq(rp_future_status(slow), RP_FUTURE_FULFILLED);
    rp_future_release(slow);
    rp_future *f;
    cr_assert_eq(rp_cluster_ask_node(c, "one", "echo", "x", 1, 10000, &f), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_future_wait(f, 20000), 0);
    cr_assert_eq(rp_future_status(f), RP_FUTURE_FULFILLED, "after the expired ones");
    rp_future_release(f);
    cr_assert_eq(node_stat(c, "one", "expired"), 3);
    /* slow, the last echo and the first stats ask (this one's reply text is
     * made before it is sent): 3. */
    cr_assert_eq(node_stat(c, "one", "replies_sent"), 3, "an expired ask was answered");
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&n), 0);
    h_node_cleanup(&n);
}
