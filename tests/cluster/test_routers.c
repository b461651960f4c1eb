/* SPDX-License-Identifier: MIT */
/*
 * test_routers.c - cluster routers on a real redis-server (issue 19, tests
 * 1, 2, 7 and the router-level parts of 3 and 4).
 *
 * Two kinds of nodes: real node processes (tests/cluster/test_node.c, whose
 * "record" handler appends each payload to a file), for what must run end
 * to end; and "fake" nodes - a depth report and a membership entry written
 * straight into Redis - whose inboxes the test reads back with XRANGE, for
 * exact routing decisions (which node got which job) without processes.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "routers_fixture.h"

TestSuite(routers, .init = setup, .fini = teardown, .timeout = 120);

Test(routers, round_robin_over_fake_nodes_sends_job_i_to_node_i_mod_3)
{
    rp_cluster_router *r;
    char got[512], payload[16];

    fake_node("f1", 0, 0);
    fake_node("f2", 0, 0);
    fake_node("f3", 0, 0);
    r = make_router(RP_CLUSTER_ROUTER_ROUND_ROBIN, 0);
    cr_assert_eq(rp_cluster_router_size(r), 3);
    cr_assert(rp_cluster_router_has(r, "f2"));
    for (int i = 0; i < 9; i++) {
        snprintf(payload, sizeof payload, "%d", i);
        cr_assert_eq(rp_cluster_tell(r, "record", payload, strlen(payload)), 0, "%s", rp_errmsg());
    }
    inbox_payloads("f1", got, sizeof got);
    cr_assert_str_eq(got, "0,3,6,");
    inbox_payloads("f2", got, sizeof got);
    cr_assert_str_eq(got, "1,4,7,");
    inbox_payloads("f3", got, sizeof got);
    cr_assert_str_eq(got, "2,5,8,");
    rp_cluster_router_destroy(r);
}

Test(routers, tell_batch_routes_as_tells_would_in_one_call)
{
    rp_cluster_router *r;
    const void *p[30];
    size_t lens[30], sent = 0;
    char bufs[30][8], got[512];

    fake_node("f1", 0, 0);
    fake_node("f2", 0, 0);
    fake_node("f3", 0, 0);
    r = make_router(RP_CLUSTER_ROUTER_ROUND_ROBIN, 0);
    for (int i = 0; i < 30; i++) {
        lens[i] = (size_t)snprintf(bufs[i], sizeof bufs[i], "%d", i);
        p[i] = bufs[i];
    }
    cr_assert_eq(rp_cluster_tell_batch(r, "record", p, lens, 30, &sent), 0, "%s", rp_errmsg());
    cr_assert_eq(sent, 30);
    cr_assert_eq(inbox_len("f1"), 10);
    cr_assert_eq(inbox_len("f2"), 10);
    cr_assert_eq(inbox_len("f3"), 10);
    inbox_payloads("f2", got, sizeof got);
    cr_assert_str_eq(got, "1,4,7,10,13,16,19,22,25,28,");
    rp_cluster_router_destroy(r);
}

/* The node sequence a random router with seed picks for 24 jobs. */
static void random_sequence(uint64_t seed, const char *tag, char *seq)
{
    rp_cluster_router *r = make_router(RP_CLUSTER_ROUTER_RANDOM, seed);
    char payload[32], got[3][1024];
    const char *ids[3] = {"f1", "f2", "f3"};

    for (int i = 0; i < 24; i++) {
        snprintf(payload, sizeof payload, "%s%d", tag, i);
        cr_assert_eq(rp_cluster_tell(r, "record", payload, strlen(payload)), 0, "%s", rp_errmsg());
    }
    for (int k = 0; k < 3; k++)
        inbox_payloads(ids[k], got[k], sizeof got[k]);
    for (int i = 0; i < 24; i++) {
        snprintf(payload, sizeof payload, ",%s%d,", tag, i);
        seq[i] = '?';
        for (int k = 0; k < 3; k++) {
            char hay[1100];
            snprintf(hay, sizeof hay, ",%s", got[k]);
            if (strstr(hay, payload))
                seq[i] = (char)('1' + k);
        }
    }
    seq[24] = '\0';
    rp_cluster_router_destroy(r);
}

Test(routers, random_with_a_seed_is_reproducible)
{
    char a[25], b[25], other[25];

    fake_node("f1", 0, 0);
    fake_node("f2", 0, 0);
    fake_node("f3", 0, 0);
    random_sequence(42, "a", a);
    random_sequence(42, "b", b);
    random_sequence(7, "c", other);
    cr_assert_str_eq(a, b, "same seed, same nodes");
    cr_assert_str_neq(a, other, "another seed, another sequence");
    cr_assert(strchr(a, '1') && strchr(a, '2') && strchr(a, '3'), "%s", a);
    cr_assert_null(strchr(a, '?'));
}

Test(routers, broadcast_kind_and_wrapper_reach_each_live_node_once)
{
    rp_cluster_router *bc, *rr;
    size_t sent = 0;

    fake_node("f1", 0, 0);
    fake_node("f2", 0, 0);
    fake_node("f3", 0, 0);
    bc = make_router(RP_CLUSTER_ROUTER_BROADCAST, 0);
    rr = make_router(RP_CLUSTER_ROUTER_ROUND_ROBIN, 0);
    cr_assert_eq(rp_cluster_tell(bc, "record", "all", 3), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_broadcast(rr, "record", "wrap", 4, &sent), 0, "%s", rp_errmsg());
    cr_assert_eq(sent, 3);
    cr_assert_eq(inbox_len("f1"), 2);
    cr_assert_eq(inbox_len("f2"), 2);
    cr_assert_eq(inbox_len("f3"), 2);
    rp_cluster_router_destroy(bc);
    rp_cluster_router_destroy(rr);
}

Test(routers, smallest_mailbox_routes_by_cached_reports)
{
    rp_cluster_router *r;

    fake_node("f1", 7, 0);
    fake_node("f2", 2, 0);
    fake_node("f3", 9, 0);
    r = make_router(RP_CLUSTER_ROUTER_SMALLEST_MAILBOX, 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(rp_cluster_tell(r, "record", "x", 1), 0, "%s", rp_errmsg());
    cr_assert_eq(inbox_len("f2"), 3, "depths 7/2/9: node 2 for three successive jobs");
    cr_assert_eq(inbox_len("f1") + inbox_len("f3"), 0);
    /* f1 now reports 0, but 1500 ms ago: a member still (under 3000 ms),
     * stale for the 1000 ms bound, so skipped despite its 0. */
    fake_node("f1", 0, 1500);
    cr_assert_eq(rp_cluster_router_refresh(r), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_router_size(r), 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(rp_cluster_tell(r, "record", "y", 1), 0, "%s", rp_errmsg());
    cr_assert_eq(inbox_len("f1"), 0, "the stale report was used");
    cr_assert_eq(inbox_len("f2"), 6);
    rp_cluster_router_destroy(r);
}

static void expect_create_invalid(int refresh, int staleness, const char *needle)
{
    rp_cluster_router_options o;
    rp_cluster_router *r = (rp_cluster_router *)1;

    rp_cluster_router_options_init(&o);
    o.kind = RP_CLUSTER_ROUTER_SMALLEST_MAILBOX;
    o.refresh_ms = refresh;
    o.staleness_ms = staleness;
    cr_assert_eq(rp_cluster_router_create(&r, client, &o), RP_EINVAL);
    cr_assert_null(r);
    cr_assert(strstr(rp_errmsg(), needle), "\"%s\" lacks \"%s\"", rp_errmsg(), needle);
}

Test(routers, create_validates_refresh_and_staleness_naming_the_fields)
{
    rp_cluster_router_options o;
    rp_cluster_router *r;

    expect_create_invalid(0, 1000, "rp_cluster_router_create: opts.refresh_ms must be >= 1 (got 0)");
    expect_create_invalid(200, -1, "opts.staleness_ms must be >= 0");
    expect_create_invalid(200, 150, "opts.staleness_ms (150) must be 0 or >= opts.refresh_ms (200, the default)");
    expect_create_invalid(2000, 1000, "opts.staleness_ms (1000, the default) must be 0 or >= opts.refresh_ms (2000)");
    rp_cluster_router_options_init(&o);
    o.refresh_ms = 2000;
    o.staleness_ms = 0;
    cr_assert_eq(rp_cluster_router_create(&r, client, &o), 0, "staleness 0 with any refresh: %s",
                 rp_errmsg());
    rp_cluster_router_destroy(r);
    rp_cluster_router_options_init(&o);
    o.kind = (rp_cluster_router_kind)99;
    cr_assert_eq(rp_cluster_router_create(&r, client, &o), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "opts.kind"), "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_router_create(&r, NULL, NULL), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "node"), "%s", rp_errmsg());
}

Test(routers, least_used_router_spreads_by_allocations_and_empty_set_sends_nothing)
{
    rp_cluster_router_options o;
    rp_cluster_router *r, *empty;

    fake_node("f1", 0, 0);
    fake_node("f2", 0, 0);
    fake_node("f3", 0, 0);
    rp_cluster_router_options_init(&o);
    o.kind = RP_CLUSTER_ROUTER_LEAST_USED;
    o.least_used_name = "nodes";
    cr_assert_eq(rp_cluster_router_create(&r, client, &o), 0, "%s", rp_errmsg());
    for (int i = 0; i < 9; i++)
        cr_assert_eq(rp_cluster_tell(r, "record", "z", 1), 0, "%s", rp_errmsg());
    cr_assert_eq(inbox_len("f1"), 3);
    cr_assert_eq(inbox_len("f2"), 3);
    cr_assert_eq(inbox_len("f3"), 3);
    cr_assert_eq(h_int(c, "ZCARD %s:lu:nodes", prefix), 3);
    /* A node that joins starts level with the others (3), not at 0: it
     * takes its share at once instead of the next 9 jobs. */
    fake_node("f4", 0, 0);
    cr_assert_eq(rp_cluster_router_refresh(r), 0, "%s", rp_errmsg());
    {
        redisReply *sc = h_cmd(c, "ZSCORE %s:lu:nodes f4", prefix);
        cr_assert(sc && sc->type == REDIS_REPLY_STRING && !strcmp(sc->str, "3"), "f4 starts at %s",
                  sc && sc->str ? sc->str : "?");
        freeReplyObject(sc);
    }
    for (int i = 0; i < 4; i++)
        cr_assert_eq(rp_cluster_tell(r, "record", "z", 1), 0, "%s", rp_errmsg());
    cr_assert_eq(inbox_len("f1"), 4);
    cr_assert_eq(inbox_len("f4"), 1);
    o.least_used_name = "nobody";
    o.least_used_sync = false; /* the set stays empty */
    cr_assert_eq(rp_cluster_router_create(&empty, client, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_tell(empty, "record", "none", 4), RP_ENOROUTEE);
    cr_assert_eq(inbox_len("f1") + inbox_len("f2") + inbox_len("f3") + inbox_len("f4"), 13,
                 "nothing was sent");
    cr_assert_eq(h_int(c, "EXISTS %s:lu:nobody", prefix), 0);
    rp_cluster_router_destroy(empty);
    rp_cluster_router_destroy(r);
}

Test(routers, calls_check_their_arguments)
{
    rp_cluster_router *ch, *rr;
    rp_future *f = (rp_future *)1;

    fake_node("f1", 0, 0);
    ch = make_router(RP_CLUSTER_ROUTER_CONSISTENT_HASH, 0);
    rr = make_router(RP_CLUSTER_ROUTER_ROUND_ROBIN, 0);
    cr_assert_eq(rp_cluster_tell(ch, "record", "x", 1), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "rp_cluster_tell_key"), "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_tell(rr, NULL, "x", 1), RP_EINVAL);
    cr_assert_eq(rp_cluster_tell(rr, "record", NULL, 3), RP_EINVAL);
    cr_assert_eq(rp_cluster_tell_key(rr, NULL, 0, "record", "x", 1), RP_EINVAL);
    cr_assert_eq(rp_cluster_ask(ch, "echo", "x", 1, 0, &f), RP_EINVAL);
    cr_assert_null(f);
    cr_assert_eq(rp_cluster_tell(NULL, "record", "x", 1), RP_EINVAL);
    cr_assert_eq(inbox_len("f1"), 0);
    rp_cluster_router_destroy(ch);
    rp_cluster_router_destroy(rr);
}

Test(routers, no_live_node_is_enoroutee)
{
    rp_cluster_router *r = make_router(RP_CLUSTER_ROUTER_ROUND_ROBIN, 0);
    size_t sent = 9;

    cr_assert_eq(rp_cluster_router_size(r), 0);
    cr_assert_eq(rp_cluster_tell(r, "record", "x", 1), RP_ENOROUTEE);
    cr_assert(strstr(rp_errmsg(), "no live node"), "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_broadcast(r, "record", "x", 1, &sent), RP_ENOROUTEE);
    cr_assert_eq(sent, 0);
    rp_cluster_router_destroy(r);
}

Test(routers, a_node_gone_since_the_refresh_is_skipped_at_once_and_back_after_it_returns)
{
    rp_cluster_router *r;

    fake_node("f1", 0, 0);
    fake_node("f2", 0, 0);
    r = make_router(RP_CLUSTER_ROUTER_ROUND_ROBIN, 0);
    cr_assert_eq(rp_cluster_router_size(r), 2);
    /* f1 is gone (membership and inbox); the router has not refreshed yet. */
    freeReplyObject(h_cmd(c, "SREM %s:nodes f1", prefix));
    freeReplyObject(h_cmd(c, "DEL %s:inbox:f1", prefix));
    for (int i = 0; i < 4; i++)
        cr_assert_eq(rp_cluster_tell(r, "record", "x", 1), 0, "%s", rp_errmsg());
    cr_assert_eq(inbox_len("f1"), 0);
    cr_assert_eq(inbox_len("f2"), 4);
    /* f1 comes back under the same id: the next refresh routes to it. */
    fake_node("f1", 0, 0);
    cr_assert_eq(rp_cluster_router_refresh(r), 0, "%s", rp_errmsg());
    for (int i = 0; i < 4; i++)
        cr_assert_eq(rp_cluster_tell(r, "record", "x", 1), 0, "%s", rp_errmsg());
    cr_assert_eq(inbox_len("f1"), 2);
    cr_assert_eq(inbox_len("f2"), 6);
    rp_cluster_router_destroy(r);
}

typedef struct has_node {
    rp_cluster_router *r;
    const char *id;
    bool want;
} has_node;

static bool node_seen(void *arg)
{
    has_node *w = arg;
    return rp_cluster_router_has(w->r, w->id) == w->want;
}

Test(routers, the_refresh_thread_follows_membership_without_explicit_refreshes)
{
    rp_cluster_router_options o;
    rp_cluster_router *r;
    has_node w;

    rp_cluster_router_options_init(&o);
    o.refresh_ms = 20;
    cr_assert_eq(rp_cluster_router_create(&r, client, &o), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_router_size(r), 0);
    fake_node("late", 0, 0);
    w = (has_node){r, "late", true};
    cr_assert(h_wait(node_seen, &w, 10000), "the refresh thread never saw the new node");
    freeReplyObject(h_cmd(c, "HDEL %s:depth late", prefix));
    w.want = false;
    cr_assert(h_wait(node_seen, &w, 10000), "the refresh thread never saw the node go");
    rp_cluster_router_destroy(r);
}

/* ---- membership changes while tells run (ASan: no use-after-free) ---- */

typedef struct teller {
    rp_cluster_router *r;
    _Atomic bool stop;
    long ok, failed;
} teller;

static void *tell_loop(void *arg)
{
    teller *t = arg;

    while (!atomic_load(&t->stop)) {
        if (rp_cluster_tell(t->r, "record", "t", 1) == 0)
            t->ok++;
        else
            t->failed++;
    }
    return NULL;
}

Test(routers, membership_changes_rebuild_safely_under_concurrent_tells)
{
    rp_cluster_router *r;
    teller t = {0};
    pthread_t th[2];
    teller t2 = {0};

    fake_node("f1", 0, 0);
    fake_node("f2", 0, 0);
    r = make_router(RP_CLUSTER_ROUTER_ROUND_ROBIN, 0);
    t.r = t2.r = r;
    pthread_create(&th[0], NULL, tell_loop, &t);
    pthread_create(&th[1], NULL, tell_loop, &t2);
    for (int i = 0; i < 40; i++) {
        if (i % 2)
            fake_node("f3", 0, 0);
        else
            freeReplyObject(h_cmd(c, "HDEL %s:depth f3", prefix)); /* still a member: sends work */
        cr_assert_eq(rp_cluster_router_refresh(r), 0, "%s", rp_errmsg());
        cr_assert_eq(rp_cluster_router_size(r), i % 2 ? 3u : 2u);
    }
    atomic_store(&t.stop, true);
    atomic_store(&t2.stop, true);
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    cr_assert_eq(t.failed + t2.failed, 0);
    cr_assert_gt(t.ok + t2.ok, 0);
    cr_assert_eq(inbox_len("f1") + inbox_len("f2") + inbox_len("f3"), t.ok + t2.ok,
                 "every accepted tell is in exactly one inbox");
    rp_cluster_router_destroy(r);
}


Test(routers, three_nodes_round_robin_30_jobs_run_8_to_12_each)
{
    rp_cluster_router *r;
    char payload[16];

    start_nodes(3);
    r = make_router(RP_CLUSTER_ROUTER_ROUND_ROBIN, 0);
    wait_size(r, 3);
    for (int i = 0; i < 30; i++) {
        snprintf(payload, sizeof payload, "job-%d", i);
        cr_assert_eq(rp_cluster_tell(r, "record", payload, strlen(payload)), 0, "%s", rp_errmsg());
    }
    wait_lines(3, 30);
    h_sleep_ms(100); /* a job beyond 30 would show up now: none may */
    cr_assert_eq(total_lines(3), 30);
    for (int i = 0; i < 3; i++) {
        long n = h_count_lines(nodes[i].out);
        cr_assert(n >= 8 && n <= 12, "%s ran %ld of 30", nodes[i].id, n);
    }
    rp_cluster_router_destroy(r);
}

/* For key k, the node whose file holds "<tag><k> " and how many lines
 * have that prefix on that node; -1 when on several nodes. */
static int owner_of(char **files, int n, const char *needle)
{
    int owner = -1;

    for (int i = 0; i < n; i++)
        if (files[i] && strstr(files[i], needle)) {
            if (owner >= 0)
                return -2;
            owner = i;
        }
    return owner;
}

static void read_files(char **files, int n)
{
    for (int i = 0; i < n; i++)
        files[i] = h_read_file(nodes[i].out, NULL);
}

static void free_files(char **files, int n)
{
    for (int i = 0; i < n; i++)
        free(files[i]);
}

Test(routers, consistent_hash_puts_a_keys_jobs_in_one_inbox_in_order)
{
    const char *ids[3] = {"f1", "f2", "f3"};
    rp_cluster_router *r;
    char payload[32], got[3][512];
    int owners = 0;

    fake_node("f1", 0, 0);
    fake_node("f2", 0, 0);
    fake_node("f3", 0, 0);
    r = make_router(RP_CLUSTER_ROUTER_CONSISTENT_HASH, 0);
    for (int seq = 0; seq < 5; seq++) {
        snprintf(payload, sizeof payload, "u42#%d", seq);
        cr_assert_eq(rp_cluster_tell_key(r, "user-42", 7, "record", payload, strlen(payload)), 0,
                     "%s", rp_errmsg());
    }
    for (int k = 0; k < 3; k++) {
        inbox_payloads(ids[k], got[k], sizeof got[k]);
        if (got[k][0]) {
            owners++;
            cr_assert_str_eq(got[k], "u42#0,u42#1,u42#2,u42#3,u42#4,");
        }
    }
    cr_assert_eq(owners, 1);
    rp_cluster_router_destroy(r);
}

/* End to end: 2 keys x per_key jobs through a consistent-hash router to 3
 * nodes of `routees` routees each; each key's jobs run on one node, in
 * order.  With one routee this checks the order the router and the
 * transport keep (one inbox, FIFO, one runner); with several it also checks
 * the node's dispatch, which hands keyed entries to its pool by key
 * (rp_router_tell_key), so two routees never run one key's jobs at once. */
static void keys_in_order(const char *routees, int per_key)
{
    const char *const args[] = {"--routees", routees, NULL};
    rp_cluster_router *r;
    char payload[32], *files[3];

    start_nodes_with(3, args);
    r = make_router(RP_CLUSTER_ROUTER_CONSISTENT_HASH, 0);
    wait_size(r, 3);
    for (int seq = 0; seq < per_key; seq++)
        for (int k = 0; k < 2; k++) {
            const char *key = k ? "user-42" : "user-7";
            snprintf(payload, sizeof payload, "%s#%d", key, seq);
            cr_assert_eq(rp_cluster_tell_key(r, key, strlen(key), "record", payload, strlen(payload)),
                         0, "%s", rp_errmsg());
        }
    wait_lines(3, 2 * per_key);
    read_files(files, 3);
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "user-42" : "user-7";
        char needle[32];
        int owner;
        const char *p;
        snprintf(needle, sizeof needle, "%s#", key);
        owner = owner_of(files, 3, needle);
        cr_assert_geq(owner, 0, "%s's jobs ran on %s", key, owner == -2 ? "several nodes" : "none");
        p = files[owner];
        for (int seq = 0; seq < per_key; seq++) {
            snprintf(needle, sizeof needle, "%s#%d ", key, seq);
            cr_assert_not_null(p = strstr(p, needle), "%s out of order on %s", needle,
                               nodes[owner].id);
        }
    }
    free_files(files, 3);
    rp_cluster_router_destroy(r);
}

Test(routers, consistent_hash_keeps_each_key_on_one_node_in_order)
{
    keys_in_order("1", 5);
}

Test(routers, consistent_hash_keeps_key_order_on_nodes_with_several_routees)
{
    keys_in_order("4", 200);
}

/* Send "<round>:<k>" for 4000 keys; return each key's node (index). */
static void route_4000(rp_cluster_router *r, char round, int n, signed char *owner)
{
    char payload[32], key[16], *files[4];
    long before = total_lines(n);

    for (int k = 0; k < 4000; k++) {
        int kl = snprintf(key, sizeof key, "k%d", k);
        int pl = snprintf(payload, sizeof payload, "%c:%d", round, k);
        cr_assert_eq(rp_cluster_tell_key(r, key, (size_t)kl, "record", payload, (size_t)pl), 0,
                     "%s", rp_errmsg());
    }
    wait_lines(n, before + 4000);
    read_files(files, n);
    for (int k = 0; k < 4000; k++) {
        char needle[32];
        snprintf(needle, sizeof needle, "\n%c:%d ", round, k);
        owner[k] = -1;
        for (int i = 0; i < n; i++) {
            /* Match at a line start: search "\n..." and the file's start. */
            size_t nl = strlen(needle + 1);
            if (files[i] && (strstr(files[i], needle) || !strncmp(files[i], needle + 1, nl)))
                owner[k] = (signed char)i;
        }
    }
    free_files(files, n);
}

Test(routers, consistent_hash_4000_keys_balance_and_a_leaving_node_moves_only_its_keys)
{
    static signed char before[4000], after[4000];
    rp_cluster_router *r;
    int count[4] = {0}, moved = 0, orphaned = 0;

    start_nodes(4);
    r = make_router(RP_CLUSTER_ROUTER_CONSISTENT_HASH, 0);
    wait_size(r, 4);
    route_4000(r, 'a', 4, before);
    for (int k = 0; k < 4000; k++) {
        cr_assert_geq(before[k], 0, "key %d ran nowhere", k);
        count[before[k]]++;
    }
    for (int i = 0; i < 4; i++)
        cr_assert(count[i] >= 800 && count[i] <= 1200, "%s got %d of 4000 keys", nodes[i].id,
                  count[i]);
    cr_assert_eq(h_node_term(&nodes[3]), 0, "graceful leave of node-4");
    nodes[3].pid = 0;
    wait_size(r, 3);
    route_4000(r, 'b', 3, after);
    for (int k = 0; k < 4000; k++) {
        cr_assert(after[k] >= 0 && after[k] < 3, "key %d ran nowhere after the leave", k);
        if (before[k] == 3)
            orphaned++;
        else if (after[k] != before[k])
            moved++;
    }
    cr_assert_eq(moved, 0, "%d keys of staying nodes moved", moved);
    cr_assert_eq(orphaned, count[3]);
    rp_cluster_router_destroy(r);
}

Test(routers, graceful_leave_later_jobs_go_to_the_others_and_broadcast_reaches_each_once)
{
    rp_cluster_router *r;
    long left_before;
    size_t sent = 0;
    char *files[3];

    start_nodes(3);
    r = make_router(RP_CLUSTER_ROUTER_ROUND_ROBIN, 0);
    wait_size(r, 3);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(rp_cluster_tell(r, "record", "before", 6), 0, "%s", rp_errmsg());
    wait_lines(3, 6);
    cr_assert_eq(h_node_term(&nodes[2]), 0, "graceful leave of node-3");
    nodes[2].pid = 0;
    left_before = h_count_lines(nodes[2].out);
    wait_size(r, 2);
    cr_assert_not(rp_cluster_router_has(r, "node-3"));
    for (int i = 0; i < 20; i++)
        cr_assert_eq(rp_cluster_tell(r, "record", "after", 5), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_cluster_broadcast(r, "record", "bcast", 5, &sent), 0, "%s", rp_errmsg());
    cr_assert_eq(sent, 2);
    wait_lines(3, 6 + 20 + 2);
    h_sleep_ms(100);
    cr_assert_eq(h_count_lines(nodes[2].out), left_before, "the node that left ran later jobs");
    read_files(files, 3);
    for (int i = 0; i < 2; i++) {
        const char *p = strstr(files[i], "bcast ");
        cr_assert_not_null(p, "%s missed the broadcast", nodes[i].id);
        cr_assert_null(strstr(p + 1, "bcast "), "%s got the broadcast twice", nodes[i].id);
    }
    cr_assert_null(strstr(files[2], "bcast"));
    free_files(files, 3);
    rp_cluster_router_destroy(r);
}
