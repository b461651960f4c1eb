/* SPDX-License-Identifier: MIT */
/*
 * least_used.c - atomic least-used allocation in a Redis sorted set (seed
 * 002): the member with the fewest recorded allocations is chosen and its
 * count raised by one, in one server-side script.
 *
 * The set's members are the allowed resources (nodes, proxies, ...), their
 * scores the cumulative number of allocations - not in-flight work: an
 * allocation whose use later fails still counts, and nothing is ever given
 * back.  ZRANGE returns the lowest score first and breaks ties by member
 * order, so equal counts are served in lexicographic order, and an exactly
 * even split follows from the atomicity alone (no two callers can see the
 * same minimum).
 *
 * Removal keeps the member's count in a side hash "<key>:removed", so a
 * re-added member can take it back (RP_LEAST_USED_READD_KEEP) or start at
 * the set's current minimum (RP_LEAST_USED_READD_MIN): the seed's question
 * answered by an option.
 *
 * Scripts are run with EVALSHA after SCRIPT LOAD; a NOSCRIPT error (script
 * cache emptied by a restart, failover or SCRIPT FLUSH) falls back to EVAL
 * (rp__conn_eval, conn.c).  One connection per set (an rp__conn: reconnect
 * with backoff, timeout, AUTH and PING after every reconnect), used under
 * the set's lock (a hiredis context is not thread-safe); no user code runs
 * under it.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "least_used.h"
#include "routepool/cluster.h"

/* The seed's script, verbatim: the set's key is the only key argument. */
static const char acquire_lua[] =
    "local chosen = redis.call('ZRANGE', KEYS[1], 0, 0)[1]\n"
    "if not chosen then\n"
    "    return nil\n"
    "end\n"
    "\n"
    "redis.call('ZINCRBY', KEYS[1], 1, chosen)\n"
    "return chosen\n";

/* KEYS: set, removed-hash.  ARGV: member, start count, "keep" | "min",
 * new-at-min ("1" | "0").  Already allowed: unchanged (0).  Else the score
 * is the start count; for a member with a removal record its old count
 * (keep) or the set's current minimum (min); with new-at-min, a member
 * without a record starts at the current minimum too.  An empty set keeps
 * the start count. */
static const char add_lua[] =
    "if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end\n"
    "local score = ARGV[2]\n"
    "local old = redis.call('HGET', KEYS[2], ARGV[1])\n"
    "if old and ARGV[3] == 'keep' then\n"
    "    score = old\n"
    "elseif old or ARGV[4] == '1' then\n"
    "    local low = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')\n"
    "    if low[2] then score = low[2] end\n"
    "end\n"
    "if old then redis.call('HDEL', KEYS[2], ARGV[1]) end\n"
    "redis.call('ZADD', KEYS[1], score, ARGV[1])\n"
    "return 1\n";

/* KEYS: set, removed-hash.  ARGV: member.  Records the count, removes. */
static const char remove_lua[] =
    "local s = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
    "if not s then return 0 end\n"
    "redis.call('HSET', KEYS[2], ARGV[1], s)\n"
    "redis.call('ZREM', KEYS[1], ARGV[1])\n"
    "return 1\n";

enum { S_ACQUIRE, S_ADD, S_REMOVE, S_COUNT };

/* Largest start count: scores are doubles, exact up to 2^53. */
#define START_MAX (UINT64_C(1) << 53)

struct rp_least_used {
    pthread_mutex_t mu;        /* guards conn and scripts */
    rp__conn conn;
    rp__cluster_settings own;  /* rp_least_used_create()'s settings (conn.s) */
    rp_least_used_readd readd;
    char key[RP_LEAST_USED_KEY_MAX + 1];
    char removed_key[RP_LEAST_USED_KEY_MAX + sizeof ":removed"];
    rp__script scripts[S_COUNT];
};

void rp_least_used_options_init(rp_least_used_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->redis = "127.0.0.1:6379";
    opts->connect_timeout_ms = 1000;
    opts->command_timeout_ms = 1000;
    opts->readd = RP_LEAST_USED_READD_MIN;
}

/* The script with keys and args (argv, lens: argc of them), EVALSHA
 * falling back to EVAL.  NULL when Redis is unavailable.  Caller holds
 * lu->mu and frees the reply. */
static redisReply *run_script(rp_least_used *lu, int which, int nkeys, int argc,
                              const char **argv, const size_t *lens)
{
    return rp__conn_eval(&lu->conn, &lu->scripts[which], nkeys, argc, argv, lens);
}

/* A reply that is NULL (connection lost) or an error: the call's code,
 * with the message naming func.  0 for any other reply. */
static int reply_error(rp_least_used *lu, const redisReply *r, const char *func)
{
    if (!r)
        return rp_error_set(RP_EUNAVAILABLE, "%s: redis unavailable: %s", func, lu->conn.err);
    if (r->type == REDIS_REPLY_ERROR)
        return rp_error_set(RP_EINVAL, "%s: redis refused: %.160s", func, r->str);
    return 0;
}

static int copy_key(rp_least_used *lu, const char *key, const char *func)
{
    size_t len;

    if (!key || !*key)
        return rp_error_set(RP_EINVAL, "%s: key is %s", func, key ? "empty" : "NULL");
    if ((len = strlen(key)) > RP_LEAST_USED_KEY_MAX)
        return rp_error_set(RP_EINVAL, "%s: key is longer than %u bytes (got %zu)", func,
                            RP_LEAST_USED_KEY_MAX, len);
    memcpy(lu->key, key, len + 1);
    snprintf(lu->removed_key, sizeof lu->removed_key, "%s:removed", key);
    return 0;
}

static int check_options(const rp_least_used_options *o)
{
    if ((unsigned)o->readd > RP_LEAST_USED_READD_MIN)
        return rp_error_set(RP_EINVAL, "rp_least_used_create: opts.readd must be RP_LEAST_USED_READD_KEEP or _MIN (got %d)",
                           (int)o->readd);
    return 0;
}

static void lu_free(rp_least_used *lu)
{
    rp__conn_close(&lu->conn);
    rp__settings_free(&lu->own);
    free(lu);
}

/* Open lu (its settings in place: s, or lu->own when s is NULL): connect
 * and PING, so a wrong address or password fails here rather than at
 * first use.  Frees lu on failure. */
static int open_lu(rp_least_used **out, rp_least_used *lu, const rp__cluster_settings *s,
                   const char *key, rp_least_used_readd readd, const char *func)
{
    static const char *const bodies[S_COUNT] = {acquire_lua, add_lua, remove_lua};
    int rc;

    rp__conn_init(&lu->conn, s ? s : &lu->own, NULL);
    for (int i = 0; i < S_COUNT; i++)
        lu->scripts[i].body = bodies[i];
    lu->readd = readd;
    if ((rc = copy_key(lu, key, func)) < 0)
        goto fail;
    if ((rc = rp__conn_ensure(&lu->conn)) < 0) {
        rc = rp_error_set(rc, "%s: redis unavailable: %s", func, lu->conn.err);
        goto fail;
    }
    pthread_mutex_init(&lu->mu, NULL);
    *out = lu;
    return 0;
fail:
    lu_free(lu);
    return rc;
}

int rp__least_used_open(rp_least_used **out, const rp__cluster_settings *s, const char *key,
                        rp_least_used_readd readd, const char *func)
{
    rp_least_used *lu = calloc(1, sizeof *lu);

    *out = NULL;
    if (!lu)
        return rp_error_set(RP_ENOMEM, "%s: out of memory", func);
    return open_lu(out, lu, s, key, readd, func);
}

int rp_least_used_create(rp_least_used **out, const rp_least_used_options *opts,
                         const char *key)
{
    rp_least_used_options defaults;
    rp_least_used *lu;
    int rc;

    if (!out)
        return rp_error_set(RP_EINVAL, "rp_least_used_create: out is NULL");
    *out = NULL;
    if (!opts) {
        rp_least_used_options_init(&defaults);
        opts = &defaults;
    }
    if ((rc = check_options(opts)) < 0)
        return rc;
    if (!(lu = calloc(1, sizeof *lu)))
        return rp_error_set(RP_ENOMEM, "rp_least_used_create: out of memory");
    if ((rc = rp__settings_init(&lu->own, opts->redis, opts->user, opts->password,
                                opts->connect_timeout_ms, opts->command_timeout_ms,
                                "rp_least_used_create", "opts.")) < 0) {
        free(lu);
        return rc;
    }
    rp__ignore_sigpipe();
    return open_lu(out, lu, NULL, key, opts->readd, "rp_least_used_create");
}

/* Members: non-empty C strings of at most RP_LEAST_USED_MEMBER_MAX bytes. */
static int check_member(const char *member, const char *func)
{
    size_t len;

    if (!member || !*member)
        return rp_error_set(RP_EINVAL, "%s: member is %s", func, member ? "empty" : "NULL");
    if ((len = strlen(member)) > RP_LEAST_USED_MEMBER_MAX)
        return rp_error_set(RP_EINVAL, "%s: member is longer than %u bytes (got %zu)", func,
                           RP_LEAST_USED_MEMBER_MAX, len);
    return 0;
}

static int add_member(rp_least_used *lu, const char *member, uint64_t start_count,
                      bool new_at_min, const char *func)
{
    const char *argv[6];
    size_t lens[6];
    char start[24];
    redisReply *r;
    int rc;

    if (!lu)
        return rp_error_set(RP_EINVAL, "%s: lu is NULL", func);
    if ((rc = check_member(member, func)) < 0)
        return rc;
    if (start_count > START_MAX)
        return rp_error_set(RP_EINVAL, "%s: start_count must be <= 2^53 (got %" PRIu64 ")", func,
                            start_count);
    snprintf(start, sizeof start, "%" PRIu64, start_count);
    argv[0] = lu->key, lens[0] = strlen(lu->key);
    argv[1] = lu->removed_key, lens[1] = strlen(lu->removed_key);
    argv[2] = member, lens[2] = strlen(member);
    argv[3] = start, lens[3] = strlen(start);
    argv[4] = lu->readd == RP_LEAST_USED_READD_KEEP ? "keep" : "min", lens[4] = strlen(argv[4]);
    argv[5] = new_at_min ? "1" : "0", lens[5] = 1;
    pthread_mutex_lock(&lu->mu);
    r = run_script(lu, S_ADD, 2, 6, argv, lens);
    rc = reply_error(lu, r, func);
    pthread_mutex_unlock(&lu->mu);
    freeReplyObject(r);
    return rc;
}

int rp_least_used_add(rp_least_used *lu, const char *member, uint64_t start_count)
{
    return add_member(lu, member, start_count, false, "rp_least_used_add");
}

int rp__least_used_add_at_min(rp_least_used *lu, const char *member, const char *func)
{
    return add_member(lu, member, 0, true, func);
}

int rp_least_used_remove(rp_least_used *lu, const char *member)
{
    const char *argv[3];
    size_t lens[3];
    redisReply *r;
    int rc;

    if (!lu)
        return rp_error_set(RP_EINVAL, "rp_least_used_remove: lu is NULL");
    if ((rc = check_member(member, "rp_least_used_remove")) < 0)
        return rc;
    argv[0] = lu->key, lens[0] = strlen(lu->key);
    argv[1] = lu->removed_key, lens[1] = strlen(lu->removed_key);
    argv[2] = member, lens[2] = strlen(member);
    pthread_mutex_lock(&lu->mu);
    r = run_script(lu, S_REMOVE, 2, 3, argv, lens);
    rc = reply_error(lu, r, "rp_least_used_remove");
    pthread_mutex_unlock(&lu->mu);
    freeReplyObject(r);
    return rc;
}

/* The acquire script's answer, checked as untrusted input. */
static int take_member(const redisReply *r, char *member, const char *func)
{
    if (r->type == REDIS_REPLY_NIL)
        return rp_error_set(RP_ENOROUTEE, "%s: the set is empty: no member to allocate", func);
    if (r->type != REDIS_REPLY_STRING)
        return rp_error_set(RP_EINVAL, "%s: redis answered type %d, not a member", func, r->type);
    if (r->len == 0 || r->len > RP_LEAST_USED_MEMBER_MAX || memchr(r->str, '\0', r->len))
        return rp_error_set(RP_EINVAL, "%s: member in redis is empty, longer than %u bytes or holds a NUL (its count was raised)",
                           func, RP_LEAST_USED_MEMBER_MAX);
    memcpy(member, r->str, r->len);
    member[r->len] = '\0';
    return 0;
}

int rp_least_used_acquire(rp_least_used *lu, char *member, size_t cap)
{
    const char *argv[1];
    size_t lens[1];
    redisReply *r;
    int rc;

    if (!lu || !member)
        return rp_error_set(RP_EINVAL, "rp_least_used_acquire: %s is NULL", lu ? "member" : "lu");
    if (cap < RP_LEAST_USED_MEMBER_MAX + 1)
        return rp_error_set(RP_EINVAL, "rp_least_used_acquire: cap must be >= RP_LEAST_USED_MEMBER_MAX + 1 (got %zu)",
                           cap);
    member[0] = '\0';
    argv[0] = lu->key, lens[0] = strlen(lu->key);
    pthread_mutex_lock(&lu->mu);
    r = run_script(lu, S_ACQUIRE, 1, 1, argv, lens);
    if ((rc = reply_error(lu, r, "rp_least_used_acquire")) == 0)
        rc = take_member(r, member, "rp_least_used_acquire");
    pthread_mutex_unlock(&lu->mu);
    freeReplyObject(r);
    return rc;
}

void rp_least_used_destroy(rp_least_used *lu)
{
    if (!lu)
        return;
    pthread_mutex_destroy(&lu->mu);
    lu_free(lu);
}
