/* SPDX-License-Identifier: MIT */
/*
 * depth.c - the cache of depth reports: validation, refresh (one TIME +
 * HGETALL round trip), lookup with the staleness bound, seed 001's scan.
 *
 * Invariants: e[] is sorted by id with no duplicates, so a lookup is a
 * binary search; warm is false only before the first applied refresh (a
 * cold cache answers "no report" for every node).  The lock is held only
 * around copies and lookups, never around I/O or user code.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "depth.h"
#include "routepool/pool.h"
#include "routepool/strategy.h"

int rp__depth_validate(int refresh_ms, int staleness_ms, const char *func)
{
    const char *sdef = staleness_ms == RP__DEPTH_STALENESS_DEFAULT_MS ? ", the default" : "";
    const char *rdef = refresh_ms == RP__DEPTH_REFRESH_DEFAULT_MS ? ", the default" : "";

    if (refresh_ms < 1)
        return rp_error_set(RP_EINVAL, "%s: opts.refresh_ms must be >= 1 (got %d)", func,
                            refresh_ms);
    if (staleness_ms < 0)
        return rp_error_set(RP_EINVAL, "%s: opts.staleness_ms must be >= 0, 0 for never stale (got %d)",
                            func, staleness_ms);
    if (staleness_ms > 0 && staleness_ms < refresh_ms)
        return rp_error_set(RP_EINVAL, "%s: opts.staleness_ms (%d%s) must be 0 or >= opts.refresh_ms (%d%s): every report would go stale between two refreshes",
                            func, staleness_ms, sdef, refresh_ms, rdef);
    return 0;
}

static int64_t monotonic_ms(void *user)
{
    struct timespec ts;

    (void)user;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rp__depth_cache_init(rp__depth_cache *c, int staleness_ms, rp__clock_fn clock,
                          void *clock_user)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->staleness_ms = staleness_ms;
    c->clock = clock ? clock : monotonic_ms;
    c->clock_user = clock ? clock_user : NULL;
}

void rp__depth_cache_fini(rp__depth_cache *c)
{
    free(c->e);
    c->e = NULL;
    pthread_mutex_destroy(&c->mu);
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const rp__depth_entry *)a)->id, ((const rp__depth_entry *)b)->id);
}

/* Sort and drop duplicate ids (the later one wins); returns the new n. */
static size_t sort_unique(rp__depth_entry *e, size_t n)
{
    size_t w = 0;

    /* A stable order among duplicates is not needed: HGETALL never returns
     * one field twice; the dedup only keeps the invariant for any input. */
    if (n == 0)
        return 0; /* qsort(NULL, 0) is undefined */
    qsort(e, n, sizeof *e, cmp_entry);
    for (size_t i = 0; i < n; i++) {
        if (w > 0 && !strcmp(e[w - 1].id, e[i].id))
            e[w - 1] = e[i];
        else
            e[w++] = e[i];
    }
    return w;
}

int rp__depth_cache_apply(rp__depth_cache *c, const rp__depth_entry *entries, size_t n,
                          int64_t server_now_ms)
{
    rp__depth_entry *copy = NULL, *old;
    int64_t local = c->clock(c->clock_user);

    if (n && !(copy = malloc(n * sizeof *copy)))
        return RP_ENOMEM;
    if (n)
        memcpy(copy, entries, n * sizeof *copy);
    n = sort_unique(copy, n);
    pthread_mutex_lock(&c->mu);
    old = c->e;
    c->e = copy;
    c->n = n;
    c->warm = true;
    c->server_at_refresh = server_now_ms;
    c->local_at_refresh = local;
    pthread_mutex_unlock(&c->mu);
    free(old);
    return 0;
}

/* Caller holds c->mu. */
static int64_t server_now_locked(const rp__depth_cache *c, int64_t local_now)
{
    return c->warm ? c->server_at_refresh + (local_now - c->local_at_refresh) : -1;
}

int64_t rp__depth_cache_server_now(rp__depth_cache *c)
{
    int64_t local = c->clock(c->clock_user), now;

    pthread_mutex_lock(&c->mu);
    now = server_now_locked(c, local);
    pthread_mutex_unlock(&c->mu);
    return now;
}

int64_t rp__depth_cache_get(rp__depth_cache *c, const char *id)
{
    int64_t local = c->clock(c->clock_user), depth = -1;
    rp__depth_entry key, *hit;

    if (strlen(id) > RP_CLUSTER_ID_MAX)
        return -1;
    strcpy(key.id, id);
    pthread_mutex_lock(&c->mu);
    hit = c->n ? bsearch(&key, c->e, c->n, sizeof *c->e, cmp_entry) : NULL;
    if (hit && (c->staleness_ms == 0 ||
                server_now_locked(c, local) - hit->server_ms <= c->staleness_ms))
        depth = hit->depth;
    pthread_mutex_unlock(&c->mu);
    return depth;
}

int rp__depth_cache_live(rp__depth_cache *c, int64_t max_age_ms, rp__depth_entry **out,
                         size_t *n)
{
    rp__depth_entry *e = NULL;
    size_t k = 0;

    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&c->mu);
    if (c->n && !(e = malloc(c->n * sizeof *e))) {
        pthread_mutex_unlock(&c->mu);
        return RP_ENOMEM;
    }
    for (size_t i = 0; i < c->n; i++)
        if (c->server_at_refresh - c->e[i].server_ms <= max_age_ms)
            e[k++] = c->e[i];
    pthread_mutex_unlock(&c->mu);
    if (k == 0)
        free(e);
    else
        *out = e;
    *n = k;
    return 0;
}

int rp__depth_scan(const int64_t *depths, size_t n, uint64_t message_index)
{
    size_t start;
    int best = -1;

    if (n == 0)
        return -1;
    start = (size_t)(message_index % n);
    for (size_t off = 0; off < n; off++) {
        size_t i = (start + off) % n;
        if (depths[i] < 0)
            continue; /* unreported, stale or stopped: never chosen */
        if (best < 0 || depths[i] < depths[best])
            best = (int)i;
        if (depths[i] == 0)
            break; /* nothing beats an empty node */
    }
    return best;
}

/* Round-robin over the live routees from start (all stopped: start). */
static size_t first_live(rp_routee *const *routees, size_t n, size_t start)
{
    for (size_t off = 0; off < n; off++)
        if (!rp_routee_stopped(routees[(start + off) % n]))
            return (start + off) % n;
    return start;
}

int rp__depth_strategy(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                       size_t *out)
{
    int64_t local[64], *d = local;
    int best;

    (void)user;
    if (n == 0)
        return 0;
    if (n > sizeof local / sizeof local[0] && !(d = malloc(n * sizeof *d)))
        return -1; /* the router hands the job back (RP_EINVAL) */
    for (size_t i = 0; i < n; i++) {
        d[i] = rp_routee_stopped(routees[i]) ? -1 : rp_routee_depth(routees[i]);
        if (d[i] < 0)
            d[i] = -1;
    }
    best = rp__depth_scan(d, n, st->message_index);
    out[0] = best >= 0 ? (size_t)best : first_live(routees, n, (size_t)(st->message_index % n));
    if (d != local)
        free(d);
    return 1;
}

/* A non-negative decimal integer of exactly len bytes, <= max. */
static int parse_u63(const char *s, size_t len, int64_t max, int64_t *out)
{
    int64_t v = 0;

    if (len == 0 || len > 19)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (v > (max - (s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* TIME: [seconds, microseconds] as strings. */
static int parse_time(const redisReply *r, int64_t *ms)
{
    int64_t sec, usec;

    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING ||
        parse_u63(r->element[0]->str, r->element[0]->len, INT64_MAX / 2000, &sec) < 0 ||
        parse_u63(r->element[1]->str, r->element[1]->len, 999999, &usec) < 0)
        return -1;
    *ms = sec * 1000 + usec / 1000;
    return 0;
}

/* One field/value pair: id of 1..RP_CLUSTER_ID_MAX bytes without NUL,
 * value "depth:server_ms". */
static int parse_pair(const redisReply *f, const redisReply *v, rp__depth_entry *e)
{
    const char *colon;

    if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING || f->len == 0 ||
        f->len > RP_CLUSTER_ID_MAX || memchr(f->str, '\0', f->len))
        return -1;
    if (!(colon = memchr(v->str, ':', v->len)) ||
        parse_u63(v->str, (size_t)(colon - v->str), INT64_MAX, &e->depth) < 0 ||
        parse_u63(colon + 1, v->len - (size_t)(colon - v->str) - 1, INT64_MAX / 2,
                  &e->server_ms) < 0)
        return -1;
    memcpy(e->id, f->str, f->len);
    e->id[f->len] = '\0';
    return 0;
}

int rp__depth_parse(const redisReply *time_reply, const redisReply *hash_reply,
                    rp__depth_entry **out, size_t *n, int64_t *server_now_ms,
                    uint64_t *malformed)
{
    size_t pairs, cnt = 0;
    rp__depth_entry *e;

    *out = NULL;
    *n = 0;
    if (parse_time(time_reply, server_now_ms) < 0 || !hash_reply ||
        hash_reply->type != REDIS_REPLY_ARRAY || hash_reply->elements % 2)
        return RP_EINVAL;
    pairs = hash_reply->elements / 2;
    if (pairs > RP__DEPTH_MAX_ENTRIES) {
        *malformed += pairs - RP__DEPTH_MAX_ENTRIES;
        pairs = RP__DEPTH_MAX_ENTRIES;
    }
    if (pairs == 0)
        return 0;
    if (!(e = malloc(pairs * sizeof *e)))
        return RP_ENOMEM;
    for (size_t i = 0; i < pairs; i++) {
        if (parse_pair(hash_reply->element[2 * i], hash_reply->element[2 * i + 1], &e[cnt]) == 0)
            cnt++;
        else
            ++*malformed;
    }
    *out = e;
    *n = cnt;
    return 0;
}

/* Send TIME and HGETALL key in one write; read both replies. */
static int round_trip(rp__conn *conn, const char *key, redisReply **t, redisReply **h)
{
    const char *hv[2] = {"HGETALL", key};
    const size_t hl[2] = {7, strlen(key)};

    *t = *h = NULL;
    if (rp__conn_append(conn, 1, (const char *[]){"TIME"}, (const size_t[]){4}) < 0 ||
        rp__conn_append(conn, 2, hv, hl) < 0 || !(*t = rp__conn_get_reply(conn)) ||
        !(*h = rp__conn_get_reply(conn))) {
        /* A failed append leaves a half-written pipeline: start afresh. */
        rp__conn_drop(conn);
        freeReplyObject(*t);
        *t = NULL;
        return RP_EUNAVAILABLE;
    }
    return 0;
}

int rp__depth_refresh(rp__depth_cache *c, rp__conn *conn, const char *key)
{
    redisReply *t, *h;
    rp__depth_entry *e = NULL;
    size_t n = 0;
    int64_t now = 0;
    uint64_t bad = 0;
    int rc;

    if ((rc = round_trip(conn, key, &t, &h)) < 0)
        return rc;
    rc = rp__depth_parse(t, h, &e, &n, &now, &bad);
    freeReplyObject(t);
    freeReplyObject(h);
    if (rc == 0)
        rc = rp__depth_cache_apply(c, e, n, now);
    pthread_mutex_lock(&c->mu);
    c->malformed += bad;
    pthread_mutex_unlock(&c->mu);
    free(e);
    return rc;
}
