/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/test_crash.c - kill -9 loses nothing (issue 19's test 5):
 * a node holding 10,000 queued jobs is killed; the survivors claim its
 * fetched entries and move its unread ones; every job completes, and the
 * duplicates are counted and bounded by what the dead node had fetched.
 */
#include "common_cluster.h"

TestSuite(crash, .init = cluster_setup, .fini = cluster_teardown, .timeout = 150);

enum { N = 10000 };

typedef struct all_arg {
    h_node *nodes;
    int nn;
    int *counts;
} all_arg;

static bool every_job_ran(void *arg)
{
    all_arg *a = arg;
    tally(a->nodes, a->nn, N, a->counts, NULL);
    for (int i = 0; i < N; i++)
        if (a->counts[i] == 0)
            return false;
    return true;
}

static long long pending_of(redisContext *r, const char *id)
{
    redisReply *x = h_cmd(r, "XPENDING %s:inbox:%s rp", prefix, id);
    long long n = x && x->type == REDIS_REPLY_ARRAY && x->elements >= 1 &&
                  x->element[0]->type == REDIS_REPLY_INTEGER ? x->element[0]->integer : -1;
    if (x)
        freeReplyObject(x);
    return n;
}

Test(crash, kill9__every_queued_job_completes_on_the_survivors)
{
    h_node n[3];
    const char *victim[] = {"--heartbeat", "100", "--dead-after", "1000", "--inflight", "16",
                            "--sleep-us", "2000", NULL};
    const char *survivor[] = {"--heartbeat", "100", "--dead-after", "1000", NULL};
    cr_assert_eq(h_node_start(&n[0], &redis, prefix, "victim", victim), 0);
    cr_assert_eq(h_node_start(&n[1], &redis, prefix, "s1", survivor), 0);
    cr_assert_eq(h_node_start(&n[2], &redis, prefix, "s2", survivor), 0);
    rp_cluster_node *c = client();
    for (int i = 0; i < N; i++)
        tell(c, "victim", "record", i);
    lines_arg some = {&n[0], 1, 100};
    cr_assert(h_wait(enough_lines, &some, 30000));
    h_node_kill9(&n[0]);
    redisContext *r = h_redis_connect(&redis);
    /* What it had fetched and not acknowledged: the only entries that may
     * run twice.  Read at once: recovery starts dead_after_ms later. */
    long long fetched = pending_of(r, "victim");
    cr_assert(fetched >= 0 && fetched <= 32, "pending %lld", fetched);
    int *counts = calloc(N, sizeof *counts);
    all_arg a = {n, 3, counts};
    cr_assert(h_wait(every_job_ran, &a, 90000), "every job completes");
    long dup_lines;
    long total = tally(n, 3, N, counts, &dup_lines);
    long twice = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(counts[i] >= 1 && counts[i] <= 2, "job %d ran %d times", i, counts[i]);
        twice += counts[i] - 1;
    }
    cr_assert_eq(total, N + twice);
    cr_assert(twice <= fetched, "%ld duplicates > %lld fetched", twice, fetched);
    /* The survivors counted exactly the re-deliveries they ran. */
    long long dups = node_stat(c, "s1", "duplicates") + node_stat(c, "s2", "duplicates");
    cr_assert_eq(dups, dup_lines);
    cr_assert(dup_lines >= twice);
    long long claimed = node_stat(c, "s1", "claimed") + node_stat(c, "s2", "claimed");
    cr_assert(claimed >= N - h_count_lines(n[0].out), "claimed %lld", claimed);
    /* The dead node is gone from the deployment. */
    cr_assert_eq(h_int(r, "SISMEMBER %s:nodes victim", prefix), 0);
    cr_assert_eq(h_int(r, "EXISTS %s:inbox:victim", prefix), 0);
    free(counts);
    redisFree(r);
    rp_cluster_leave(c);
    for (int i = 1; i < 3; i++)
        cr_assert_eq(h_node_term(&n[i]), 0);
    for (int i = 0; i < 3; i++)
        h_node_cleanup(&n[i]);
}

typedef struct ran_arg {
    const char *path;
    const char *line;
} ran_arg;

static bool ran(void *arg)
{
    ran_arg *a = arg;
    char *b = h_read_file(a->path, NULL);
    bool hit = b && strstr(b, a->line);
    free(b);
    return hit;
}

/* A member that holds its lease is alive, whatever a survivor's view of
 * the reports says: node x below has a lease, a membership entry and an
 * inbox with one unread job, but no report - what a survivor sees when it
 * read the reports just before x joined (or read them and the member set,
 * two commands, around x's first report).  Node a, a survivor past its
 * grace, must leave x's job alone while the lease lives, and recover it
 * once the lease is gone. */
Test(crash, recovery__leaves_a_member_that_holds_its_lease_alone)
{
    const char *const args[] = {"--heartbeat", "50", "--dead-after", "500", NULL};
    h_node a;
    redisContext *r = h_redis_connect(&redis);

    freeReplyObject(h_cmd(r, "SET %s:node:x token PX 60000", prefix));
    freeReplyObject(h_cmd(r, "XGROUP CREATE %s:inbox:x rp $ MKSTREAM", prefix));
    freeReplyObject(h_cmd(r, "XADD %s:inbox:x * id x:1 h record p 4242 o x", prefix));
    freeReplyObject(h_cmd(r, "SADD %s:nodes x", prefix));
    cr_assert_eq(h_node_start(&a, &redis, prefix, "a", args), 0);
    ran_arg ra = {a.out, "4242 "};
    /* a's grace (500 ms) and then 30 ticks in which it sees x unreported. */
    cr_assert_not(h_wait(ran, &ra, 2000), "a moved and ran the job of a live member");
    cr_assert_eq(h_int(r, "XLEN %s:inbox:x", prefix), 1);
    cr_assert_eq(h_int(r, "SISMEMBER %s:nodes x", prefix), 1, "a live member was removed");
    freeReplyObject(h_cmd(r, "DEL %s:node:x", prefix)); /* x dies */
    cr_assert(h_wait(ran, &ra, 10000), "the dead member's job was never recovered");
    redisFree(r);
    cr_assert_eq(h_node_term(&a), 0);
    h_node_cleanup(&a);
}
