/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/test_poison.c - poison entries (issue 19's test 10): a job
 * that kills every node that runs it ends in the dead-letter stream after
 * max_deliveries, with its history, while every other job completes; the
 * dead-letter API lists, re-queues and drops it.
 */
#include <signal.h>
#include <sys/wait.h>

#include "common_cluster.h"

TestSuite(poison, .init = cluster_setup, .fini = cluster_teardown, .timeout = 120);

enum { N = 200 };

typedef struct dead_arg {
    rp_cluster_node *c;
    size_t want;
} dead_arg;

static bool dead_count(void *arg)
{
    dead_arg *a = arg;
    rp_cluster_dead_entry *list;
    size_t n = 0;
    if (rp_cluster_dead_list(a->c, 10, &list, &n) < 0)
        return false;
    rp_cluster_dead_list_free(list, n);
    return n == a->want;
}

static bool all_but_poison(void *arg)
{
    lines_arg *la = arg;
    int counts[N];
    tally(la->nodes, la->n, N, counts, NULL);
    for (int i = 0; i < N; i++)
        if (counts[i] == 0)
            return false;
    return true;
}

static bool has_poison_line(void *arg)
{
    char *b = h_read_file(((h_node *)arg)->out, NULL);
    bool ok = b && strstr(b, "poison ");
    free(b);
    return ok;
}

Test(poison, poison__dead_lettered_after_max_deliveries_and_retry_requeues_it)
{
    h_node n[3];
    /* One job at a time per node: Redis counts deliveries, not blame, so
     * every entry a node held when it died is charged one; with one in
     * flight the poison is the only one. */
    const char *args[] = {"--heartbeat", "100", "--dead-after", "600", "--max-deliveries", "2",
                          "--crash-on", "poison", "--routees", "1", "--inflight", "1", NULL};
    const char *ids[] = {"p1", "p2", "p3"};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(h_node_start(&n[i], &redis, prefix, ids[i], args), 0);
    rp_cluster_node *c = client();
    for (int i = 0; i < N; i++) {
        tell(c, "p1", "crash", i);
        if (i == N / 2)
            cr_assert_eq(rp_cluster_tell_node(c, "p1", "crash", "poison", 6, NULL, 0), 0);
    }
    dead_arg da = {c, 1};
    bool got = h_wait(dead_count, &da, 60000);
    cr_assert(got, "the poison entry is dead-lettered");
    lines_arg la = {n, 3, 0};
    cr_assert(h_wait(all_but_poison, &la, 60000), "every other job completed");
    /* Two nodes died running it (max_deliveries 2), the third lives. */
    int alive = 0;
    for (int i = 0; i < 3; i++)
        alive += kill(n[i].pid, 0) == 0 && waitpid(n[i].pid, NULL, WNOHANG) == 0;
    cr_assert_eq(alive, 1);
    rp_cluster_dead_entry *list;
    size_t cnt;
    cr_assert_eq(rp_cluster_dead_list(c, 10, &list, &cnt), 0);
    cr_assert_eq(cnt, 1);
    cr_assert_str_eq(list[0].handler, "crash");
    cr_assert_eq(list[0].payload_len, 6);
    cr_assert_str_eq(list[0].payload, "poison");
    cr_assert_eq(list[0].deliveries, 2);
    cr_assert(strchr(list[0].history, ','), "history names both nodes: %s", list[0].history);
    char dead_id[64];
    snprintf(dead_id, sizeof dead_id, "%s", list[0].dead_id);
    rp_cluster_dead_list_free(list, cnt);
    /* Retry to a node that survives the payload: it runs there. */
    h_node fixed;
    const char *safe[] = {"--crash-on", "nothing", NULL};
    cr_assert_eq(h_node_start(&fixed, &redis, prefix, "fixed", safe), 0);
    cr_assert_eq(rp_cluster_dead_retry(c, dead_id, "fixed"), 0, "%s", rp_errmsg());
    cr_assert(h_wait(has_poison_line, &fixed, 20000), "the re-queued entry ran");
    da.want = 0;
    cr_assert(dead_count(&da), "gone from the dead-letter stream");
    cr_assert_eq(rp_cluster_dead_retry(c, dead_id, "fixed"), RP_EINVAL);
    cr_assert_eq(rp_cluster_dead_drop(c, dead_id), RP_EINVAL);
    cr_assert_eq(rp_cluster_dead_drop(c, "not-an-id"), RP_EINVAL);
    rp_cluster_leave(c);
    cr_assert_eq(h_node_term(&fixed), 0);
    h_node_cleanup(&fixed);
    for (int i = 0; i < 3; i++) {
        h_node_kill9(&n[i]);
        h_node_cleanup(&n[i]);
    }
}

Test(poison, dead_drop__deletes_an_entry)
{
    rp_cluster_node *c = client();
    redisContext *r = h_redis_connect(&redis);
    redisReply *x = h_cmd(r, "XADD %s:dead * id client:1 h record p abc n 5 hist x,y", prefix);
    cr_assert(x && x->type == REDIS_REPLY_STRING);
    char id[64];
    snprintf(id, sizeof id, "%s", x->str);
    freeReplyObject(x);
    dead_arg da = {c, 1};
    cr_assert(dead_count(&da));
    cr_assert_eq(rp_cluster_dead_drop(c, id), 0, "%s", rp_errmsg());
    da.want = 0;
    cr_assert(dead_count(&da));
    /* With no target and no live member, a retry has nowhere to go. */
    x = h_cmd(r, "XADD %s:dead * id client:2 h record p abc n 5", prefix);
    snprintf(id, sizeof id, "%s", x->str);
    freeReplyObject(x);
    cr_assert_eq(rp_cluster_dead_retry(c, id, NULL), RP_ENOROUTEE);
    redisFree(r);
    rp_cluster_leave(c);
}
