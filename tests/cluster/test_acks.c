/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/test_acks.c - when a node acknowledges.  Entries are
 * acknowledged (XACK) and deleted (XDEL) after their job ran; the fetch
 * thread carries the acknowledgements with its next XREADGROUP, which
 * blocks up to 100 ms on an empty inbox, so the last entries of a burst
 * used to wait that long: still pending, still in the inbox (its length is
 * part of the depth report), and a benchmark's "acknowledged" 100 ms late.
 * A read now blocks only briefly while jobs are in flight (fetch.c).
 */
#include <stdlib.h>

#include "common_cluster.h"

TestSuite(acks, .init = cluster_setup, .fini = cluster_teardown, .timeout = 90);

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Milliseconds from now until node id's inbox is empty (at most 5 s). */
static long long ms_until_empty(redisContext *c, const char *id)
{
    long long t0 = h_now_ms();
    while (h_int(c, "XLEN %s:inbox:%s", prefix, id) > 0 && h_now_ms() - t0 < 5000)
        h_sleep_ms(1);
    return h_now_ms() - t0;
}

Test(acks, burst__last_entries_are_acknowledged_when_they_ran_not_a_blocked_read_later)
{
    h_node n;
    cr_assert_eq(h_node_start(&n, &redis, prefix, "a", NULL), 0);
    rp_cluster_node *c = client();
    redisContext *rc = h_redis_connect(&redis);
    enum { ROUNDS = 5, N = 100 };
    long long delay[ROUNDS];
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < N; i++)
            tell(c, "a", "record", round * N + i);
        lines_arg la = {&n, 1, (long)(round + 1) * N};
        cr_assert(h_wait(enough_lines, &la, 30000), "round %d: %ld ran", round,
                  h_count_lines(n.out));
        delay[round] = ms_until_empty(rc, "a");
        h_sleep_ms(150); /* the fetch thread is back in a fresh blocking read */
    }
    qsort(delay, ROUNDS, sizeof delay[0], cmp_ll);
    /* Before: every round ~100 ms (the blocking read's timeout); now the
     * acknowledgement follows the job.  50 ms leaves room for a loaded
     * machine. */
    cr_assert_lt(delay[ROUNDS / 2], 50, "median %lld ms from ran to acknowledged (%lld..%lld)",
                 delay[ROUNDS / 2], delay[0], delay[ROUNDS - 1]);
    cr_assert_eq(node_stat(c, "a", "acked"), ROUNDS * N);
    redisFree(rc);
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&n), 0);
    h_node_cleanup(&n);
}


/* Sequential asks: the read that follows each ask's dispatch used to carry
 * the previous ask's XACK + XDEL (one of each per ask, on the next ask's
 * way); now acknowledgements wait for 64 of them or 5 ms (fetch.c,
 * ACK_HOLD_MAX), and every entry is still acknowledged soon after the
 * last job ran. */
Test(acks, sequential_asks__acknowledgements_batch_and_still_follow_the_jobs)
{
    h_node n;
    cr_assert_eq(h_node_start(&n, &redis, prefix, "a", NULL), 0);
    rp_cluster_node *c = client();
    redisContext *rc = h_redis_connect(&redis);
    enum { N = 300 };
    rp_future *f;
    /* One ask first, so the node is up and reading before counting. */
    cr_assert_eq(rp_cluster_ask_node(c, "a", "echo", "x", 1, 10000, &f), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_future_wait(f, 20000), 0);
    rp_future_release(f);
    cr_assert_lt(ms_until_empty(rc, "a"), 5000);
    long xack0 = h_calls_of(rc, "xack");
    long long t0 = h_now_ms();
    for (int i = 0; i < N; i++) {
        cr_assert_eq(rp_cluster_ask_node(c, "a", "echo", "x", 1, 10000, &f), 0, "%s", rp_errmsg());
        cr_assert_eq(rp_future_wait(f, 20000), 0);
        cr_assert_eq(rp_future_status(f), RP_FUTURE_FULFILLED);
        rp_future_release(f);
    }
    long long elapsed = h_now_ms() - t0;
    long long drain = ms_until_empty(rc, "a");
    long xacks = h_calls_of(rc, "xack") - xack0;
    /* One XACK per 5 ms of asking or per 64 entries, plus the reads that
     * followed empty ones; one per ask (N) before. */
    long bound = 4 + (long)(elapsed / 5) + N / 64;
    cr_assert_lt(bound, N, "the asks were too slow (%lld ms) for the bound to tell", elapsed);
    cr_assert_leq(xacks, bound, "%ld XACKs for %d sequential asks in %lld ms", xacks, N, elapsed);
    cr_assert_lt(drain, 50, "%lld ms from the last reply until the inbox was empty", drain);
    cr_assert_eq(node_stat(c, "a", "acked"), N + 1);
    redisFree(rc);
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&n), 0);
    h_node_cleanup(&n);
}
