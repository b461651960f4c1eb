/* SPDX-License-Identifier: MIT */
/*
 * test_least_used.c - the least-used allocation of seed 002 on a real
 * redis-server (issue 19, test 4): two processes x 10,000 acquisitions
 * over 4 members split exactly 5,000 each, also with SCRIPT FLUSH looping
 * during the run; an empty set answers RP_ENOROUTEE and creates nothing;
 * start counts, tie order, both re-add policies, validation, and Redis
 * refusing the command.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "routepool/cluster.h"
#include "routepool/routepool.h"
#include "assert_no_leaks.h"

static h_redis redis;
static char key[96];
static redisContext *c;

static void setup(void)
{
    char prefix[64];

    cr_assert_eq(h_redis_start(&redis, false), 0, "redis-server must start (in PATH?)");
    h_prefix(prefix, sizeof prefix);
    snprintf(key, sizeof key, "%s:lu:proxies", prefix);
    cr_assert_not_null(c = h_redis_connect(&redis));
}

static void teardown(void)
{
    if (c)
        redisFree(c);
    c = NULL;
    h_redis_stop(&redis);
    ASSERT_NO_LEAKS();
}

TestSuite(least_used, .init = setup, .fini = teardown, .timeout = 120);

static rp_least_used *open_set(rp_least_used_readd readd)
{
    rp_least_used_options o;
    rp_least_used *lu;

    rp_least_used_options_init(&o);
    o.redis = redis.addr;
    o.readd = readd;
    cr_assert_eq(rp_least_used_create(&lu, &o, key), 0, "%s", rp_errmsg());
    return lu;
}

static const char *const members[4] = {"proxy-a", "proxy-b", "proxy-c", "proxy-d"};

/* One process's share: n acquisitions, the tally per member written to fd
 * as 4 longs (the 5th: failures).  Runs in a forked child; exits. */
static void acquire_child(int fd, int n)
{
    long tally[5] = {0};
    rp_least_used *lu = NULL;
    rp_least_used_options o;
    char m[RP_LEAST_USED_MEMBER_MAX + 1];

    rp_least_used_options_init(&o);
    o.redis = redis.addr;
    if (rp_least_used_create(&lu, &o, key) < 0)
        _exit(3);
    for (int i = 0; i < n; i++) {
        int k = 0;
        if (rp_least_used_acquire(lu, m, sizeof m) < 0) {
            tally[4]++;
            continue;
        }
        while (k < 4 && strcmp(m, members[k]))
            k++;
        tally[k < 4 ? k : 4]++;
    }
    rp_least_used_destroy(lu);
    _exit(write(fd, tally, sizeof tally) == (ssize_t)sizeof tally ? 0 : 4);
}

/* Flush the script cache in a loop until killed. */
static void flush_child(void)
{
    redisContext *fc = h_redis_connect(&redis);

    for (;;) {
        redisReply *r = fc ? redisCommand(fc, "SCRIPT FLUSH") : NULL;
        if (!r)
            _exit(5);
        freeReplyObject(r);
        h_sleep_ms(1);
    }
}

static void run_two_processes(bool flush_scripts)
{
    rp_least_used *lu = open_set(RP_LEAST_USED_READD_MIN);
    long total[5] = {0};
    pid_t kids[2], flusher = 0;
    int fds[2];

    for (int k = 0; k < 4; k++)
        cr_assert_eq(rp_least_used_add(lu, members[k], 0), 0, "%s", rp_errmsg());
    cr_assert_eq(pipe(fds), 0);
    if (flush_scripts && (flusher = fork()) == 0)
        flush_child();
    for (int p = 0; p < 2; p++)
        if ((kids[p] = fork()) == 0)
            acquire_child(fds[1], 10000);
    for (int p = 0; p < 2; p++) {
        long tally[5];
        int st;
        cr_assert_eq(read(fds[0], tally, sizeof tally), (ssize_t)sizeof tally);
        for (int k = 0; k < 5; k++)
            total[k] += tally[k];
        cr_assert_eq(waitpid(kids[p], &st, 0), kids[p]);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status %d", p, st);
    }
    if (flusher) {
        kill(flusher, SIGKILL);
        waitpid(flusher, NULL, 0);
    }
    cr_assert_eq(total[4], 0, "%ld acquisitions failed or named an unknown member", total[4]);
    for (int k = 0; k < 4; k++) {
        redisReply *r = h_cmd(c, "ZSCORE %s %s", key, members[k]);
        cr_assert_eq(total[k], 5000, "%s got %ld of 20000", members[k], total[k]);
        cr_assert(r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, "5000"),
                  "%s's score is %s", members[k], r && r->str ? r->str : "?");
        freeReplyObject(r);
    }
    close(fds[0]);
    close(fds[1]);
    rp_least_used_destroy(lu);
}

Test(least_used, two_processes_10000_each_split_exactly_5000_over_4_members)
{
    run_two_processes(false);
}


Test(least_used, script_flush_looping_during_the_run_changes_nothing)
{
    run_two_processes(true);
    /* The flusher really emptied the cache under the acquirers: they fell
     * back to EVAL (each fallback re-caches the script). */
    cr_assert_gt(h_calls_of(c, "eval"), 0, "no EVAL fallback happened: the flush test tested nothing");
    cr_assert_gt(h_calls_of(c, "evalsha"), 0);
}

Test(least_used, empty_set_gives_enoroutee_and_creates_nothing)
{
    rp_least_used *lu = open_set(RP_LEAST_USED_READD_MIN);
    char m[RP_LEAST_USED_MEMBER_MAX + 1] = "x";

    cr_assert_eq(rp_least_used_acquire(lu, m, sizeof m), RP_ENOROUTEE);
    cr_assert_str_eq(m, "");
    cr_assert(strstr(rp_errmsg(), "rp_least_used_acquire"), "%s", rp_errmsg());
    cr_assert_eq(h_int(c, "EXISTS %s", key), 0, "the empty-set answer must not create the key");
    cr_assert_eq(rp_least_used_add(lu, "only", 0), 0);
    cr_assert_eq(rp_least_used_remove(lu, "only"), 0);
    cr_assert_eq(rp_least_used_acquire(lu, m, sizeof m), RP_ENOROUTEE);
    rp_least_used_destroy(lu);
}

Test(least_used, ties_go_in_member_order_and_start_counts_are_respected)
{
    rp_least_used *lu = open_set(RP_LEAST_USED_READD_MIN);
    char m[RP_LEAST_USED_MEMBER_MAX + 1];
    const char *expect[] = {"b", "c", "b", "c", "a", "b", "c"};

    cr_assert_eq(rp_least_used_add(lu, "c", 0), 0);
    cr_assert_eq(rp_least_used_add(lu, "a", 2), 0);
    cr_assert_eq(rp_least_used_add(lu, "b", 0), 0);
    cr_assert_eq(rp_least_used_add(lu, "b", 50), 0, "already allowed: unchanged");
    for (size_t i = 0; i < sizeof expect / sizeof *expect; i++) {
        cr_assert_eq(rp_least_used_acquire(lu, m, sizeof m), 0, "%s", rp_errmsg());
        cr_assert_str_eq(m, expect[i], "acquisition %zu", i);
    }
    rp_least_used_destroy(lu);
}

static void acquire_n(rp_least_used *lu, int n)
{
    char m[RP_LEAST_USED_MEMBER_MAX + 1];

    for (int i = 0; i < n; i++)
        cr_assert_eq(rp_least_used_acquire(lu, m, sizeof m), 0, "%s", rp_errmsg());
}

static long long score(const char *member)
{
    redisReply *r = h_cmd(c, "ZSCORE %s %s", key, member);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

    freeReplyObject(r);
    return v;
}

Test(least_used, readd_keep_restores_the_old_count)
{
    rp_least_used *lu = open_set(RP_LEAST_USED_READD_KEEP);

    cr_assert_eq(rp_least_used_add(lu, "a", 0), 0);
    cr_assert_eq(rp_least_used_add(lu, "b", 0), 0);
    acquire_n(lu, 4); /* a 2, b 2 */
    cr_assert_eq(rp_least_used_remove(lu, "b"), 0);
    cr_assert_eq(score("b"), -1);
    acquire_n(lu, 6); /* a 8 */
    cr_assert_eq(rp_least_used_add(lu, "b", 0), 0, "%s", rp_errmsg());
    cr_assert_eq(score("b"), 2, "kept its count from before the removal");
    cr_assert_eq(score("a"), 8);
    rp_least_used_destroy(lu);
}

Test(least_used, readd_min_starts_at_the_current_minimum)
{
    rp_least_used *lu = open_set(RP_LEAST_USED_READD_MIN);

    cr_assert_eq(rp_least_used_add(lu, "a", 0), 0);
    cr_assert_eq(rp_least_used_add(lu, "b", 0), 0);
    cr_assert_eq(rp_least_used_add(lu, "c", 0), 0);
    acquire_n(lu, 3); /* 1 each */
    cr_assert_eq(rp_least_used_remove(lu, "c"), 0);
    acquire_n(lu, 10); /* a 6, b 6 */
    cr_assert_eq(rp_least_used_add(lu, "c", 0), 0);
    cr_assert_eq(score("c"), 6, "rejoins level with the least-used member, not at 1");
    rp_least_used_destroy(lu);
}

Test(least_used, arguments_are_checked_before_anything_is_sent)
{
    rp_least_used *lu = open_set(RP_LEAST_USED_READD_MIN), *none = (rp_least_used *)1;
    rp_least_used_options o;
    char m[RP_LEAST_USED_MEMBER_MAX + 1], big[RP_LEAST_USED_MEMBER_MAX + 2];

    memset(big, 'm', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cr_assert_eq(rp_least_used_add(lu, "a", 0), 0);
    cr_assert_eq(rp_least_used_acquire(lu, m, 16), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "cap"), "%s", rp_errmsg());
    cr_assert_eq(score("a"), 0, "a refused acquire allocated nothing");
    cr_assert_eq(rp_least_used_add(lu, big, 0), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "member"), "%s", rp_errmsg());
    cr_assert_eq(rp_least_used_add(lu, "", 0), RP_EINVAL);
    cr_assert_eq(rp_least_used_add(lu, "x", (UINT64_C(1) << 53) + 1), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "start_count"), "%s", rp_errmsg());
    cr_assert_eq(rp_least_used_add(NULL, "x", 0), RP_EINVAL);
    rp_least_used_options_init(&o);
    o.redis = redis.addr;
    cr_assert_eq(rp_least_used_create(&none, &o, ""), RP_EINVAL);
    cr_assert_null(none);
    cr_assert(strstr(rp_errmsg(), "key"), "%s", rp_errmsg());
    o.redis = "127.0.0.1:notaport";
    cr_assert_eq(rp_least_used_create(&none, &o, key), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "opts.redis"), "%s", rp_errmsg());
    o.redis = redis.addr;
    o.readd = (rp_least_used_readd)7;
    cr_assert_eq(rp_least_used_create(&none, &o, key), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "opts.readd"), "%s", rp_errmsg());
    rp_least_used_destroy(lu);
}

Test(least_used, unreachable_redis_is_eunavailable)
{
    rp_least_used_options o;
    rp_least_used *lu;
    char addr[32];

    rp_least_used_options_init(&o);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", redis.port);
    h_redis_kill(&redis);
    o.redis = addr;
    o.connect_timeout_ms = 200;
    cr_assert_eq(rp_least_used_create(&lu, &o, key), RP_EUNAVAILABLE);
    cr_assert(strstr(rp_errmsg(), "rp_least_used_create"), "%s", rp_errmsg());
}

Test(least_used, redis_refusing_the_script_is_reported_with_its_error)
{
    rp_least_used *lu = open_set(RP_LEAST_USED_READD_MIN);
    char m[RP_LEAST_USED_MEMBER_MAX + 1];
    redisReply *r = h_cmd(c, "SET %s not-a-set", key);

    freeReplyObject(r);
    cr_assert_eq(rp_least_used_acquire(lu, m, sizeof m), RP_EINVAL);
    cr_assert(strstr(rp_errmsg(), "WRONGTYPE"), "%s", rp_errmsg());
    rp_least_used_destroy(lu);
}
