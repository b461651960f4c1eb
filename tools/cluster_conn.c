/* SPDX-License-Identifier: MIT */
/*
 * tools/cluster_conn.c - rp-cluster status's view of Redis
 * (cluster_conn.h).
 *
 * Every reply is type-checked before use and every number parsed strictly:
 * the depth hash is written by nodes, but anything with the prefix's keys
 * can write it too; a field that does not parse shows as depth -1, age -1,
 * state "dead", never a crash.  All reads of one status go out in two
 * pipelined round trips (TIME + HGETALL + XLEN dead, then three commands per
 * node), so a status of a hundred nodes costs two round trips.
 */
#include "cluster_conn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define CS_MAX_NODES 100000

static bool parse_ll(const char *s, size_t len, long long *out)
{
    char buf[32], *end;

    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static redisContext *connect_addr(const char *addr, struct timeval tv)
{
    if (!strncmp(addr, "unix:", 5))
        return redisConnectUnixWithTimeout(addr + 5, tv);
    if (strchr(addr, '/'))
        return redisConnectUnixWithTimeout(addr, tv);
    const char *colon = strrchr(addr, ':');
    char host[256];
    long long port = 6379;
    size_t hl = colon ? (size_t)(colon - addr) : strlen(addr);
    if (hl == 0 || hl >= sizeof host ||
        (colon && (!parse_ll(colon + 1, strlen(colon + 1), &port) || port < 1 || port > 65535)))
        return NULL;
    memcpy(host, addr, hl);
    host[hl] = '\0';
    return redisConnectWithTimeout(host, (int)port, tv);
}

static bool auth(redisContext *c, const rp_cluster_options *co, char *err, size_t err_len)
{
    if (!co->password)
        return true;
    const char *argv[] = {"AUTH", co->user ? co->user : "default", co->password};
    redisReply *r = redisCommandArgv(c, 3, argv, NULL);
    bool ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        snprintf(err, err_len, "AUTH refused: %s", r ? r->str : c->errstr);
    freeReplyObject(r);
    return ok;
}

redisContext *cc_connect(const rp_cluster_options *co, char *err, size_t err_len)
{
    const char *addr = co->redis ? co->redis : "127.0.0.1:6379";
    int ms = co->command_timeout_ms > 0 ? co->command_timeout_ms : 2000;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    redisContext *c = connect_addr(addr, tv);

    if (!c || c->err) {
        snprintf(err, err_len, "cannot connect to Redis at %s: %s", addr,
                 c ? c->errstr : "bad address (HOST:PORT, HOST or a socket path)");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (!auth(c, co, err, err_len)) {
        redisFree(c);
        return NULL;
    }
    return c;
}

/* TIME's reply: [seconds, microseconds] as strings. */
static bool server_ms(const redisReply *r, long long *out)
{
    long long s, us;

    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING ||
        !parse_ll(r->element[0]->str, r->element[0]->len, &s) ||
        !parse_ll(r->element[1]->str, r->element[1]->len, &us))
        return false;
    *out = s * 1000 + us / 1000;
    return true;
}

/* One depth-hash field: id -> "depth:server_ms". */
static void parse_report(cs_node *n, const redisReply *id, const redisReply *v, long long now,
                         int stale_ms, int dead_after_ms)
{
    const char *colon = v->type == REDIS_REPLY_STRING ? memchr(v->str, ':', v->len) : NULL;
    long long d, at;

    snprintf(n->id, sizeof n->id, "%.*s", (int)(id->len < RP_CLUSTER_ID_MAX ? id->len : RP_CLUSTER_ID_MAX),
             id->str);
    n->depth = n->age_ms = -1;
    n->state = "dead";
    if (colon && parse_ll(v->str, (size_t)(colon - v->str), &d) &&
        parse_ll(colon + 1, v->len - (size_t)(colon - v->str) - 1, &at)) {
        n->depth = d;
        n->age_ms = now - at < 0 ? 0 : now - at;
        n->state = n->age_ms >= dead_after_ms ? "dead" : n->age_ms > stale_ms ? "stale" : "live";
    }
}

static int cmp_node(const void *a, const void *b)
{
    return strcmp(((const cs_node *)a)->id, ((const cs_node *)b)->id);
}

static redisReply *get(redisContext *c)
{
    redisReply *r = NULL;

    return redisGetReply(c, (void **)&r) == REDIS_OK ? r : NULL;
}

/* Members in "<prefix>:nodes" without a depth field (a node that died and
 * whose report the janitor removed, entries not yet recovered) are listed
 * too, as dead with depth and age -1. */
static int add_members(cs_status *out, const redisReply *m)
{
    size_t extra = 0;

    if (!m || m->type != REDIS_REPLY_ARRAY || m->elements > CS_MAX_NODES)
        return 0;
    cs_node *nodes = realloc(out->nodes, (out->n + m->elements + 1) * sizeof *nodes);
    if (!nodes)
        return -1;
    out->nodes = nodes;
    for (size_t i = 0; i < m->elements; i++) {
        const redisReply *id = m->element[i];
        if (id->type != REDIS_REPLY_STRING || id->len > RP_CLUSTER_ID_MAX)
            continue;
        bool known = false;
        for (size_t j = 0; j < out->n && !known; j++)
            known = strlen(nodes[j].id) == id->len && !memcmp(nodes[j].id, id->str, id->len);
        if (known)
            continue;
        cs_node *n = &nodes[out->n + extra++];
        memset(n, 0, sizeof *n);
        snprintf(n->id, sizeof n->id, "%.*s", (int)id->len, id->str);
        n->depth = n->age_ms = -1;
        n->state = "dead";
    }
    out->n += extra;
    return 0;
}

static void parse_depths(cs_status *out, const redisReply *h, int stale_ms, int dead_after_ms)
{
    for (size_t i = 0; i < out->n; i++) {
        const redisReply *id = h->element[2 * i], *v = h->element[2 * i + 1];
        out->nodes[i].state = "dead";
        out->nodes[i].depth = out->nodes[i].age_ms = -1;
        if (id->type == REDIS_REPLY_STRING)
            parse_report(&out->nodes[i], id, v, out->server_ms, stale_ms, dead_after_ms);
    }
}

/* Round trip 1: server time, the depth hash, the members, the dead-letter
 * count. */
static int read_reports(redisContext *c, const char *prefix, int stale_ms, int dead_after_ms,
                        cs_status *out, char *err, size_t err_len)
{
    char depth_key[RP_CLUSTER_PREFIX_MAX + 16], dead_key[RP_CLUSTER_PREFIX_MAX + 16],
        nodes_key[RP_CLUSTER_PREFIX_MAX + 16];
    snprintf(depth_key, sizeof depth_key, "%s:depth", prefix);
    snprintf(dead_key, sizeof dead_key, "%s:dead", prefix);
    snprintf(nodes_key, sizeof nodes_key, "%s:nodes", prefix);
    redisAppendCommandArgv(c, 1, (const char *[]){"TIME"}, NULL);
    redisAppendCommandArgv(c, 2, (const char *[]){"HGETALL", depth_key}, NULL);
    redisAppendCommandArgv(c, 2, (const char *[]){"SMEMBERS", nodes_key}, NULL);
    redisAppendCommandArgv(c, 2, (const char *[]){"XLEN", dead_key}, NULL);
    redisReply *t = get(c), *h = t ? get(c) : NULL, *m = h ? get(c) : NULL;
    redisReply *x = m ? get(c) : NULL;
    int rc = -1;

    if (!x || !server_ms(t, &out->server_ms) || h->type != REDIS_REPLY_ARRAY ||
        h->elements % 2 || h->elements / 2 > CS_MAX_NODES) {
        const redisReply *e = !x ? NULL : h->type == REDIS_REPLY_ERROR ? h
                                        : t->type == REDIS_REPLY_ERROR ? t : NULL;
        snprintf(err, err_len, "reading %s: %s", depth_key,
                 !x ? c->errstr : e ? e->str : "unexpected reply");
        goto out;
    }
    out->dead_letters = x->type == REDIS_REPLY_INTEGER ? x->integer : 0;
    out->n = h->elements / 2;
    if (!(out->nodes = calloc(out->n + 1, sizeof *out->nodes)))
        goto oom;
    parse_depths(out, h, stale_ms, dead_after_ms);
    if (add_members(out, m) < 0)
        goto oom;
    qsort(out->nodes, out->n, sizeof *out->nodes, cmp_node);
    rc = 0;
    goto out;
oom:
    snprintf(err, err_len, "out of memory");
out:
    freeReplyObject(t);
    freeReplyObject(h);
    freeReplyObject(m);
    freeReplyObject(x);
    return rc;
}

/* Round trip 2: lease, inbox length and pending count of every node. */
static int read_inboxes(redisContext *c, const char *prefix, cs_status *s, char *err,
                        size_t err_len)
{
    char key[RP_CLUSTER_PREFIX_MAX + RP_CLUSTER_ID_MAX + 16];

    for (size_t i = 0; i < s->n; i++) {
        snprintf(key, sizeof key, "%s:node:%s", prefix, s->nodes[i].id);
        redisAppendCommandArgv(c, 2, (const char *[]){"EXISTS", key}, NULL);
        snprintf(key, sizeof key, "%s:inbox:%s", prefix, s->nodes[i].id);
        redisAppendCommandArgv(c, 2, (const char *[]){"XLEN", key}, NULL);
        redisAppendCommandArgv(c, 3, (const char *[]){"XPENDING", key, "rp"}, NULL);
    }
    for (size_t i = 0; i < s->n; i++) {
        redisReply *e = get(c), *l = e ? get(c) : NULL, *p = l ? get(c) : NULL;
        if (!p) {
            snprintf(err, err_len, "reading the inboxes: %s", c->errstr);
            freeReplyObject(e);
            freeReplyObject(l);
            return -1;
        }
        s->nodes[i].lease = e->type == REDIS_REPLY_INTEGER && e->integer == 1;
        s->nodes[i].inbox = l->type == REDIS_REPLY_INTEGER ? l->integer : 0;
        s->nodes[i].pending = p->type == REDIS_REPLY_ARRAY && p->elements >= 1 &&
                                      p->element[0]->type == REDIS_REPLY_INTEGER
                                  ? p->element[0]->integer : 0;
        freeReplyObject(e);
        freeReplyObject(l);
        freeReplyObject(p);
    }
    return 0;
}

int cs_read(redisContext *c, const char *prefix, int stale_ms, int dead_after_ms,
            cs_status *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (read_reports(c, prefix, stale_ms, dead_after_ms, out, err, err_len) < 0 ||
        read_inboxes(c, prefix, out, err, err_len) < 0) {
        cs_free(out);
        return -1;
    }
    return 0;
}

void cs_free(cs_status *s)
{
    free(s->nodes);
    s->nodes = NULL;
    s->n = 0;
}

void cj_str(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void print_json(const cs_status *s, const char *prefix)
{
    printf("{\"prefix\":");
    cj_str(stdout, prefix, strlen(prefix));
    printf(",\"server_ms\":%lld,\"dead_letters\":%lld,\"nodes\":[", s->server_ms, s->dead_letters);
    for (size_t i = 0; i < s->n; i++) {
        const cs_node *n = &s->nodes[i];
        printf("%s{\"id\":", i ? "," : "");
        cj_str(stdout, n->id, strlen(n->id));
        printf(",\"depth\":%lld,\"report_age_ms\":%lld,\"state\":\"%s\",\"lease\":%s,"
               "\"inbox\":%lld,\"pending\":%lld}",
               n->depth, n->age_ms, n->state, n->lease ? "true" : "false", n->inbox, n->pending);
    }
    printf("]}\n");
}

void cs_print(const cs_status *s, const char *prefix, bool json)
{
    if (json) {
        print_json(s, prefix);
        return;
    }
    printf("deployment %s: %zu node(s), %lld dead letter(s)\n", prefix, s->n, s->dead_letters);
    if (!s->n)
        return;
    printf("%-32s %6s %10s %6s %6s %8s %8s\n", "node", "state", "report age", "lease", "depth",
           "inbox", "pending");
    for (size_t i = 0; i < s->n; i++) {
        const cs_node *n = &s->nodes[i];
        char age[24];
        if (n->age_ms < 0)
            snprintf(age, sizeof age, "?");
        else
            snprintf(age, sizeof age, "%lld ms", n->age_ms);
        printf("%-32s %6s %10s %6s %6lld %8lld %8lld\n", n->id, n->state, age,
               n->lease ? "yes" : "no", n->depth, n->inbox, n->pending);
    }
}
