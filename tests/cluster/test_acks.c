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
