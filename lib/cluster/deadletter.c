/* SPDX-License-Identifier: MIT */
/*
 * deadletter.c - the deployment's dead-letter stream "<prefix>:dead":
 * list, retry (re-queue with the delivery count reset), drop.
 *
 * Entries there are as untrusted as inbox entries and go through the same
 * decoder.  A retry adds the entry to a member's inbox (XADD NOMKSTREAM)
 * before deleting it from the dead-letter stream: a failure between the
 * two leaves it in both places, never in neither.  These calls use the
 * node's send connection (send_lock).
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "entry.h"
#include "impl.h"
#include "node.h"
#include "send.h"
#include "util.h"

static bool valid_stream_id(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    int64_t v;
    const char *dash = s ? memchr(s, '-', n) : NULL;
    return dash && n <= 41 && rp__parse_i64(s, (size_t)(dash - s), 0, INT64_MAX, &v) &&
           rp__parse_i64(dash + 1, n - (size_t)(dash - s) - 1, 0, INT64_MAX, &v);
}

static char *dup_b(rp__bytes b)
{
    char *p = malloc(b.len + 1);
    if (p) {
        if (b.len)
            memcpy(p, b.p, b.len);
        p[b.len] = '\0';
    }
    return p;
}

static int fill(rp_cluster_dead_entry *d, const rp__entry *e)
{
    d->dead_id = dup_b(e->sid);
    d->job_id = dup_b(e->id);
    d->handler = dup_b(e->h);
    d->payload = dup_b(e->p);
    d->payload_len = e->p.len;
    d->deliveries = (unsigned)e->prev_deliveries;
    d->history = dup_b(e->hist);
    return d->dead_id && d->job_id && d->handler && d->payload && d->history ? 0 : RP_ENOMEM;
}

void rp_cluster_dead_list_free(rp_cluster_dead_entry *list, size_t n)
{
    for (size_t i = 0; list && i < n; i++) {
        free(list[i].dead_id);
        free(list[i].job_id);
        free(list[i].handler);
        free(list[i].payload);
        free(list[i].history);
    }
    free(list);
}

/* XRANGE dead from to COUNT max under send_lock; caller frees. */
static redisReply *xrange(rp_cluster_node *node, const char *from, const char *to, size_t max)
{
    char count[24];
    snprintf(count, sizeof count, "%zu", max);
    const char *av[] = {"XRANGE", node->k_dead, from, to, "COUNT", count};
    pthread_mutex_lock(&node->send_lock);
    redisReply *r = rp__conn_cmd(&node->sendc, 6, av, NULL);
    pthread_mutex_unlock(&node->send_lock);
    return r;
}

static int collect(const redisReply *r, rp_cluster_dead_entry **out, size_t *n)
{
    rp_cluster_dead_entry *list = calloc(r->elements + 1, sizeof *list);
    if (!list)
        return RP_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < r->elements; i++) {
        rp__entry e;
        const char *why;
        if (rp__entry_decode(r->element[i], RP_CLUSTER_PAYLOAD_MAX, &e, &why) != RP__ENTRY_OK)
            continue; /* not ours to show: garbage in the stream */
        if (fill(&list[k++], &e) < 0) {
            rp_cluster_dead_list_free(list, k);
            return RP_ENOMEM;
        }
    }
    if (k == 0) {
        free(list);
        list = NULL;
    }
    *out = list;
    *n = k;
    return 0;
}

int rp_cluster_dead_list(rp_cluster_node *node, size_t max,
                         rp_cluster_dead_entry **out, size_t *n)
{
    if (!node || !out || !n || max == 0)
        return rp_error_set(RP_EINVAL, "rp_cluster_dead_list: %s",
                            !node ? "node is NULL" : !out || !n ? "out or n is NULL"
                            : "max is 0");
    *out = NULL;
    *n = 0;
    redisReply *r = xrange(node, "-", "+", max);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        return rp_error_set(RP_EUNAVAILABLE, "rp_cluster_dead_list: Redis unavailable (%s)",
                            node->sendc.err);
    }
    int rc = collect(r, out, n);
    freeReplyObject(r);
    return rc < 0 ? rp_error_set(rc, "rp_cluster_dead_list: out of memory") : 0;
}

static int xdel_dead(rp_cluster_node *node, const char *dead_id, long long *deleted)
{
    const char *av[] = {"XDEL", node->k_dead, dead_id};
    pthread_mutex_lock(&node->send_lock);
    redisReply *r = rp__conn_cmd(&node->sendc, 3, av, NULL);
    pthread_mutex_unlock(&node->send_lock);
    int rc = r && r->type == REDIS_REPLY_INTEGER ? 0 : RP_EUNAVAILABLE;
    if (rc == 0)
        *deleted = r->integer;
    if (r)
        freeReplyObject(r);
    return rc;
}

int rp_cluster_dead_drop(rp_cluster_node *node, const char *dead_id)
{
    if (!node || !valid_stream_id(dead_id))
        return rp_error_set(RP_EINVAL, "rp_cluster_dead_drop: %s",
                            !node ? "node is NULL" : "dead_id is not a stream id");
    long long deleted = 0;
    if (xdel_dead(node, dead_id, &deleted) < 0)
        return rp_error_set(RP_EUNAVAILABLE, "rp_cluster_dead_drop: Redis unavailable (%s)",
                            node->sendc.err);
    if (deleted != 1)
        return rp_error_set(RP_EINVAL, "rp_cluster_dead_drop: dead_id %s is not in %s",
                            dead_id, node->k_dead);
    return 0;
}

/* Re-add e (deliveries reset, history kept) to target. */
static int requeue(rp_cluster_node *node, const rp__entry *e, const char *target)
{
    const char *av[24];
    size_t al[24];
    char bufs[2][24];
    int np = rp__entry_fields(e, av, al, bufs);
    if (e->hist.p) {
        av[2 * np] = "hist", al[2 * np] = 4;
        av[2 * np + 1] = e->hist.p, al[2 * np + 1] = e->hist.len;
        np++;
    }
    pthread_mutex_lock(&node->send_lock);
    int rc = rp__xadd_checked(node, &node->sendc, target, av, al, np);
    pthread_mutex_unlock(&node->send_lock);
    return rc;
}

static int retry_fail(int rc, const char *what, const rp_cluster_node *node)
{
    return rp_error_set(rc, "rp_cluster_dead_retry: %s%s", what,
                        rc == RP_EUNAVAILABLE ? node->sendc.err : "");
}

int rp_cluster_dead_retry(rp_cluster_node *node, const char *dead_id, const char *target)
{
    char pick[RP_CLUSTER_ID_MAX + 1];
    if (!node || !valid_stream_id(dead_id))
        return rp_error_set(RP_EINVAL, "rp_cluster_dead_retry: %s",
                            !node ? "node is NULL" : "dead_id is not a stream id");
    if (target && !rp__valid_id(target, strlen(target), RP_CLUSTER_ID_MAX, true))
        return rp_error_set(RP_EINVAL, "rp_cluster_dead_retry: target is not a node id");
    if (!target && !rp__pick_member(node, NULL, pick, sizeof pick))
        return rp_error_set(RP_ENOROUTEE, "rp_cluster_dead_retry: no live member");
    redisReply *r = xrange(node, dead_id, dead_id, 1);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        return retry_fail(RP_EUNAVAILABLE, "Redis unavailable: ", node);
    }
    rp__entry e;
    const char *why;
    int rc = r->elements == 1 ? rp__entry_decode(r->element[0], RP_CLUSTER_PAYLOAD_MAX, &e, &why)
                              : RP__ENTRY_NOID;
    if (rc == RP__ENTRY_OK)
        rc = requeue(node, &e, target ? target : pick);
    else
        rc = RP_EINVAL;
    freeReplyObject(r);
    long long deleted;
    if (rc == 0 && (rc = xdel_dead(node, dead_id, &deleted)) == 0)
        return 0;
    return retry_fail(rc, rc == RP_EINVAL ? "dead_id is not a valid dead-lettered entry"
                          : rc == RP_ENOROUTEE ? "target is not a member"
                          : "Redis unavailable: ", node);
}
