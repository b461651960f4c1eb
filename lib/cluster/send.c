/* SPDX-License-Identifier: MIT */
/*
 * send.c - tells, asks and replies over Redis.
 *
 * Sends go through one connection per node (send_lock) as XADD NOMKSTREAM:
 * a member's inbox exists from its join (XGROUP CREATE MKSTREAM) until the
 * cleanup of a drained dead node or a leave deletes it in one script, and
 * an XADD to a stream that does not exist stores nothing and answers nil
 * (RP_ENOROUTEE), so a send can never create an inbox nobody reads.  That
 * costs Redis no more than a plain XADD (a script per send cost 2.7 us of
 * Redis CPU per job more, docs/cluster.md).  A batch pipelines its XADDs
 * (one round trip), written in RESP into one buffer (resp.h).  A transport failure is RP_EUNAVAILABLE at once: the connection
 * reconnects on a later call, after its backoff, so a caller is never
 * held up by a Redis that is down.
 *
 * Asks: each gets a correlation id from the node's counter and a promise
 * (rp_future_create(): the waiter's reference goes to the caller, the
 * completer's stays in the pending table).  The handler's node RPUSHes a
 * reply record to "<prefix>:reply:<asker>" (with a PEXPIRE so a departed
 * asker's list does not stay); the asker's reply thread BLPOPs it, looks
 * the id up and completes the future.  An id not in the table (the ask
 * timed out and was swept, or the reply is a duplicate) is discarded.
 * The heartbeat sweeps completed (timed-out) asks from the table.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "entry.h"
#include "impl.h"
#include "node.h"
#include "resp.h"
#include "send.h"
#include "util.h"

/* KEYS: target stream, nodes, source inbox.  ARGV: target id ("" for the
 * dead-letter stream: no membership check: a member's inbox exists), source stream id, then
 * field/value pairs.  Moves one pending entry atomically: nothing when it
 * is no longer pending (another survivor moved it: returns 0), else XADD
 * to the target, XACK and XDEL at the source.  A crash can neither lose
 * nor duplicate a move. */
const char rp__move_lua[] =
    "if ARGV[1] ~= '' and redis.call('EXISTS', KEYS[1]) == 0 then\n"
    "  return redis.error_reply('NONODE not a member of the deployment')\n"
    "end\n"
    "if redis.call('XACK', KEYS[3], 'rp', ARGV[2]) == 0 then return 0 end\n"
    "redis.call('XDEL', KEYS[3], ARGV[2])\n"
    "return redis.call('XADD', KEYS[1], '*', unpack(ARGV, 3))\n";

/* The value of a fulfilled cluster ask. */
typedef struct reply_value {
    size_t len;
    char data[];
} reply_value;

const void *rp_cluster_reply_bytes(const rp_future *f, size_t *len)
{
    const reply_value *v = f && rp_future_status(f) == RP_FUTURE_FULFILLED
                               ? rp_future_value(f) : NULL;
    if (len)
        *len = v ? v->len : 0;
    return v ? v->data : NULL;
}

/* ---- XADD through the membership check ---- */

static int classify(rp_cluster_node *node, const redisReply *r)
{
    if (!r)
        return RP_EUNAVAILABLE;
    if (r->type == REDIS_REPLY_STRING)
        return 0;
    if (r->type == REDIS_REPLY_NIL) /* NOMKSTREAM: no such inbox */
        return RP_ENOROUTEE;
    if (r->type == REDIS_REPLY_ERROR && r->str && strstr(r->str, "NONODE"))
        return RP_ENOROUTEE;
    rp__node_logf(node, RP_LOG_WARN, "XADD refused: %.200s",
                  r->type == REDIS_REPLY_ERROR && r->str ? r->str : "unexpected reply");
    return RP_EUNAVAILABLE;
}

/* XADD <inbox> NOMKSTREAM * pairs... */
static int build_argv(const char *inbox, const char **fields, const size_t *lens, int nf,
                      const char **av, size_t *al)
{
    av[0] = "XADD", al[0] = 4;
    av[1] = inbox, al[1] = strlen(inbox);
    av[2] = "NOMKSTREAM", al[2] = 10;
    av[3] = "*", al[3] = 1;
    memcpy(av + 4, fields, sizeof *fields * (size_t)(2 * nf));
    memcpy(al + 4, lens, sizeof *lens * (size_t)(2 * nf));
    return 4 + 2 * nf;
}

int rp__xadd_checked(rp_cluster_node *node, rp__conn *k, const char *target,
                     const char **fields, const size_t *lens, int nf)
{
    const char *av[32];
    size_t al[32];
    if (nf > 14)
        return RP_EINVAL;
    char *inbox = rp__key(node, "inbox", target);
    if (!inbox)
        return RP_ENOMEM;
    int argc = build_argv(inbox, fields, lens, nf, av, al);
    redisReply *r = rp__conn_cmd(k, argc, av, al);
    int rc = classify(node, r);
    if (r)
        freeReplyObject(r);
    free(inbox);
    if (rc == 0)
        BUMP(node, added);
    return rc;
}

int rp__move_checked(rp_cluster_node *node, rp__conn *k, rp__script *sc,
                     const char *target, const char *src_inbox, const char *sid,
                     const char **fields, const size_t *lens, int nf)
{
    const char *av[40];
    size_t al[40];
    if (nf > 14)
        return RP_EINVAL;
    char *dst = target ? rp__key(node, "inbox", target) : strdup(node->k_dead);
    if (!dst)
        return RP_ENOMEM;
    av[0] = dst, al[0] = strlen(dst);
    av[1] = node->k_nodes, al[1] = strlen(node->k_nodes);
    av[2] = src_inbox, al[2] = strlen(src_inbox);
    av[3] = target ? target : "", al[3] = target ? strlen(target) : 0;
    av[4] = sid, al[4] = strlen(sid);
    memcpy(av + 5, fields, sizeof *fields * (size_t)(2 * nf));
    memcpy(al + 5, lens, sizeof *lens * (size_t)(2 * nf));
    redisReply *r = rp__conn_eval(k, sc, 3, 5 + 2 * nf, av, al);
    int rc = r && r->type == REDIS_REPLY_INTEGER ? 1 : classify(node, r);
    if (r)
        freeReplyObject(r);
    free(dst);
    return rc;
}

/* ---- messages ---- */

typedef struct wire {
    const char *f[24];
    size_t l[24];
    int n;              /* pairs */
    char id[RP_CLUSTER_ID_MAX + 24];
    char corr[24], deadline[24];
} wire;

static void pair(wire *w, const char *name, const void *v, size_t len)
{
    w->f[2 * w->n] = name;
    w->l[2 * w->n] = strlen(name);
    w->f[2 * w->n + 1] = v ? v : "";
    w->l[2 * w->n + 1] = len;
    w->n++;
}

/* "<node id>:<seq>" into out (room for RP_CLUSTER_ID_MAX + 24); its length. */
static size_t next_job_id(rp_cluster_node *node, char *out)
{
    uint64_t seq = atomic_fetch_add_explicit(&node->seq, 1, memory_order_relaxed) + 1;
    size_t n = strlen(node->id);
    memcpy(out, node->id, n);
    out[n++] = ':';
    n += rp__u64_digits(out + n, seq);
    out[n] = '\0';
    return n;
}

/* The fields of a message: id, h, p and k when keyed.  The origin node is
 * the id's prefix: no field of its own (an "o" on an entry, as older
 * senders wrote, is still accepted). */
static void build_wire(rp_cluster_node *node, const rp__cluster_msg *m, wire *w)
{
    w->n = 0;
    size_t idl = next_job_id(node, w->id);
    pair(w, "id", w->id, idl);
    pair(w, "h", m->handler, strlen(m->handler));
    pair(w, "p", m->payload, m->len);
    if (m->key)
        pair(w, "k", m->key, m->key_len);
}

static int check_msg(const rp_cluster_node *node, const char *fn, const char *target,
                     const rp__cluster_msg *m)
{
    if (!node || !target || !m || !m->handler)
        return rp_error_set(RP_EINVAL, "%s: %s is NULL", fn,
                            !node ? "node" : !target ? "target" : "handler");
    if (!rp__valid_id(target, strlen(target), RP_CLUSTER_ID_MAX, true))
        return rp_error_set(RP_EINVAL, "%s: target is not a valid node id", fn);
    if (!rp__valid_name(m->handler, strlen(m->handler), RP_CLUSTER_HANDLER_MAX))
        return rp_error_set(RP_EINVAL, "%s: handler must be 1..%u printable bytes", fn,
                            RP_CLUSTER_HANDLER_MAX);
    if (m->len > node->max_payload)
        return rp_error_set(RP_EINVAL, "%s: len %zu is over max_payload %zu", fn, m->len,
                            node->max_payload);
    if (m->len && !m->payload)
        return rp_error_set(RP_EINVAL, "%s: payload is NULL with len %zu", fn, m->len);
    if (m->key_len > RP__KEY_MAX || (m->key_len && !m->key))
        return rp_error_set(RP_EINVAL, "%s: key must be 0..%u bytes", fn, RP__KEY_MAX);
    return 0;
}

static int report_send(const rp_cluster_node *node, const char *fn, const char *target, int rc)
{
    if (rc == RP_ENOROUTEE)
        return rp_error_set(rc, "%s: target \"%s\" is not a member", fn, target);
    if (rc == RP_EUNAVAILABLE)
        return rp_error_set(rc, "%s: Redis unavailable (%s)", fn, node->sendc.err);
    if (rc < 0)
        return rp_error_set(rc, "%s: %s", fn, rp_strerror(rc));
    return 0;
}

int rp__cluster_send_tell(rp_cluster_node *node, const char *fn,
                          const char *target, const rp__cluster_msg *m)
{
    int rc = check_msg(node, fn, target, m);
    if (rc < 0)
        return rc;
    wire w;
    build_wire(node, m, &w);
    pthread_mutex_lock(&node->send_lock);
    rc = rp__xadd_checked(node, &node->sendc, target, w.f, w.l, w.n);
    pthread_mutex_unlock(&node->send_lock);
    return report_send(node, fn, target, rc);
}

int rp_cluster_tell_node(rp_cluster_node *node, const char *target,
                         const char *handler, const void *payload, size_t len,
                         const void *key, size_t key_len)
{
    rp__cluster_msg m = {handler, payload, len, key, key_len};
    return rp__cluster_send_tell(node, "rp_cluster_tell_node", target, &m);
}

/* ---- pipelined batches ---- */

/* Write one message's XADD <P:inbox:target> NOMKSTREAM * id .. h .. p ..
 * [k ..] (check_msg() bounded target, handler and key already). */
static void put_xadd(rp_cluster_node *node, rp__resp *b, const char *target,
                     const rp__cluster_msg *m)
{
    char key[RP_CLUSTER_PREFIX_MAX + RP_CLUSTER_ID_MAX + 16], id[RP_CLUSTER_ID_MAX + 24];
    size_t pl = strlen(node->prefix), tl = strlen(target);
    memcpy(key, node->prefix, pl);
    memcpy(key + pl, ":inbox:", 7);
    memcpy(key + pl + 7, target, tl);
    size_t idl = next_job_id(node, id);
    rp__resp_cmd(b, m->key ? 12 : 10);
    rp__resp_arg(b, "XADD", 4);
    rp__resp_arg(b, key, pl + 7 + tl);
    rp__resp_arg(b, "NOMKSTREAM", 10);
    rp__resp_arg(b, "*", 1);
    rp__resp_arg(b, "id", 2);
    rp__resp_arg(b, id, idl);
    rp__resp_arg(b, "h", 1);
    rp__resp_str(b, m->handler);
    rp__resp_arg(b, "p", 1);
    rp__resp_arg(b, m->payload, m->len);
    if (m->key) {
        rp__resp_arg(b, "k", 1);
        rp__resp_arg(b, m->key, m->key_len);
    }
}

/* Read the n replies; the first failure's code is returned. */
static int read_batch(rp_cluster_node *node, size_t n, size_t *sent)
{
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *r = rp__conn_get_reply(&node->sendc);
        int rc = classify(node, r);
        if (r)
            freeReplyObject(r);
        if (rc == 0) {
            BUMP(node, added);
            (*sent)++;
        } else if (!first) {
            first = rc;
        }
        if (rc == RP_EUNAVAILABLE && !r)
            break;
    }
    return first;
}

int rp__cluster_send_batch(rp_cluster_node *node, const char *fn,
                           const char *const *targets,
                           const rp__cluster_msg *msgs, size_t n, size_t *sent)
{
    size_t dummy = 0;
    if (!sent)
        sent = &dummy;
    *sent = 0;
    if (!targets || (n && !msgs))
        return rp_error_set(RP_EINVAL, "%s: %s is NULL", fn, !targets ? "targets" : "msgs");
    for (size_t i = 0; i < n; i++) {
        int rc = check_msg(node, fn, targets[i], &msgs[i]);
        if (rc < 0)
            return rc;
    }
    /* The whole batch in one buffer, queued at once: a failure leaves
     * nothing half-written on the connection. */
    rp__resp b;
    rp__resp_init(&b);
    for (size_t i = 0; i < n; i++)
        put_xadd(node, &b, targets[i], &msgs[i]);
    pthread_mutex_lock(&node->send_lock);
    int rc = rp__resp_send(&node->sendc, &b);
    if (rc == 0)
        rc = read_batch(node, n, sent);
    pthread_mutex_unlock(&node->send_lock);
    rp__resp_free(&b);
    return report_send(node, fn, "(batch)", rc);
}

/* ---- asks ---- */

static void ask_put(rp_cluster_node *node, pending_ask *a)
{
    pthread_mutex_lock(&node->ask_lock);
    pending_ask **b = &node->asks[a->corr % ASK_BUCKETS];
    a->next = *b;
    *b = a;
    pthread_mutex_unlock(&node->ask_lock);
}

static pending_ask *ask_take(rp_cluster_node *node, uint64_t corr)
{
    pthread_mutex_lock(&node->ask_lock);
    pending_ask **p = &node->asks[corr % ASK_BUCKETS];
    while (*p && (*p)->corr != corr)
        p = &(*p)->next;
    pending_ask *a = *p;
    if (a)
        *p = a->next;
    pthread_mutex_unlock(&node->ask_lock);
    return a;
}

int rp__cluster_send_ask(rp_cluster_node *node, const char *fn,
                         const char *target, const rp__cluster_msg *m,
                         int timeout_ms, rp_future **out)
{
    if (out)
        *out = NULL;
    int rc = check_msg(node, fn, target, m);
    if (rc < 0)
        return rc;
    if (!out || timeout_ms < 0)
        return rp_error_set(RP_EINVAL, "%s: %s", fn, !out ? "out is NULL" : "timeout_ms < 0");
    if (timeout_ms == 0)
        timeout_ms = RP_ASK_TIMEOUT_MS;
    pending_ask *a = calloc(1, sizeof *a);
    if (!a)
        return rp_error_set(RP_ENOMEM, "%s: out of memory", fn);
    if ((rc = rp_future_create(&a->f, rp__cluster_node_timer_pool(node), timeout_ms)) < 0) {
        free(a);
        return rp_error_set(rc, "%s: cannot make the future (%s)", fn, rp_strerror(rc));
    }
    a->corr = atomic_fetch_add_explicit(&node->next_corr, 1, memory_order_relaxed) + 1;
    a->sent_us = rp__mono_us();
    wire w;
    build_wire(node, m, &w);
    snprintf(w.corr, sizeof w.corr, "%llu", (unsigned long long)a->corr);
    snprintf(w.deadline, sizeof w.deadline, "%lld",
             (long long)(rp__server_now_ms(node) + timeout_ms));
    pair(&w, "r", node->id, strlen(node->id));
    pair(&w, "c", w.corr, strlen(w.corr));
    pair(&w, "t", w.deadline, strlen(w.deadline));
    rp_future *f = a->f;
    ask_put(node, a);
    pthread_mutex_lock(&node->send_lock);
    rc = rp__xadd_checked(node, &node->sendc, target, w.f, w.l, w.n);
    pthread_mutex_unlock(&node->send_lock);
    if (rc < 0) {
        if ((a = ask_take(node, a->corr)) != NULL) {
            rp_future_release(a->f);
            free(a);
        }
        rp_future_release(f);
        return report_send(node, fn, target, rc);
    }
    *out = f;
    return 0;
}

int rp_cluster_ask_node(rp_cluster_node *node, const char *target,
                        const char *handler, const void *payload, size_t len,
                        int timeout_ms, rp_future **out)
{
    rp__cluster_msg m = {handler, payload, len, NULL, 0};
    return rp__cluster_send_ask(node, "rp_cluster_ask_node", target, &m, timeout_ms, out);
}

void rp__asks_sweep(rp_cluster_node *node, bool all)
{
    pending_ask *done = NULL;
    pthread_mutex_lock(&node->ask_lock);
    for (int i = 0; i < ASK_BUCKETS; i++) {
        pending_ask **p = &node->asks[i];
        while (*p) {
            pending_ask *a = *p;
            if (all || rp_future_status(a->f) != RP_FUTURE_PENDING) {
                *p = a->next;
                a->next = done;
                done = a;
            } else {
                p = &a->next;
            }
        }
    }
    pthread_mutex_unlock(&node->ask_lock);
    while (done) {
        pending_ask *next = done->next;
        if (all)
            rp_future_fail(done->f, -1, RP_ESHUTDOWN, "the asking node left the cluster");
        rp_future_release(done->f);
        free(done);
        done = next;
    }
}

/* ---- replies ---- */

int rp__send_reply(rp_cluster_node *node, const char *to, size_t to_len,
                   uint64_t corr, int code, int routee, const char *msg,
                   const void *data, size_t len)
{
    rp__reply rec = {corr, code, routee, {msg, msg ? strnlen(msg, 4096) : 0},
                     {data, len}};
    size_t n;
    char *buf = rp__reply_encode(&rec, &n);
    char *key = rp__key(node, "reply", to);
    int rc = RP_ENOMEM;
    (void)to_len;
    if (buf && key) {
        const char *push[] = {"RPUSH", key, buf};
        size_t pl[] = {5, strlen(key), n};
        const char *exp[] = {"PEXPIRE", key, "60000"};
        size_t el[] = {7, strlen(key), 5};
        pthread_mutex_lock(&node->send_lock);
        rc = rp__conn_append(&node->sendc, 3, push, pl);
        if (rc == 0)
            rc = rp__conn_append(&node->sendc, 3, exp, el);
        redisReply *a = rc == 0 ? rp__conn_get_reply(&node->sendc) : NULL;
        redisReply *b = a ? rp__conn_get_reply(&node->sendc) : NULL;
        rc = a && b && a->type == REDIS_REPLY_INTEGER ? 0 : RP_EUNAVAILABLE;
        pthread_mutex_unlock(&node->send_lock);
        if (a)
            freeReplyObject(a);
        if (b)
            freeReplyObject(b);
    }
    free(buf);
    free(key);
    if (rc == 0)
        BUMP(node, replies_sent);
    return rc < 0 ? rp_error_set(rc, "rp_cluster_job_reply: %s", rp_strerror(rc)) : 0;
}

static void record_rtt(rp_cluster_node *node, int64_t us)
{
    int b = 0;
    while (b < RP_CLUSTER_RTT_BUCKETS - 1 && ((int64_t)1 << b) < us)
        b++;
    atomic_fetch_add_explicit(&node->rtt[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&node->rtt_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&node->rtt_sum_us, (uint64_t)(us > 0 ? us : 0),
                              memory_order_relaxed);
}

/* Count the reply before completing the future, so a waiter that wakes
 * reads stats that include it; a reply that loses the race with the
 * deadline is moved from received to discarded (its round trip stays in
 * the histogram: it did arrive). */
static void complete(rp_cluster_node *node, pending_ask *a, const rp__reply *rec)
{
    int rc;
    BUMP(node, replies_received);
    record_rtt(node, rp__mono_us() - a->sent_us);
    if (rec->code == 0) {
        reply_value *v = malloc(sizeof *v + rec->payload.len + 1);
        if (!v) {
            rc = rp_future_fail(a->f, rec->routee, RP_ENOMEM, "no memory for the reply");
        } else {
            v->len = rec->payload.len;
            if (v->len)
                memcpy(v->data, rec->payload.p, v->len);
            v->data[v->len] = '\0';
            rc = rp_future_fulfil(a->f, rec->routee, v, free);
            if (rc != 0)
                free(v);
        }
    } else {
        char msg[4097];
        memcpy(msg, rec->msg.p, rec->msg.len);
        msg[rec->msg.len] = '\0';
        rc = rp_future_fail(a->f, rec->routee, rec->code, msg);
    }
    if (rc != 0) {
        atomic_fetch_sub_explicit(&node->c.replies_received, 1, memory_order_relaxed);
        BUMP(node, replies_discarded);
    }
    rp_future_release(a->f);
    free(a);
}

static void on_reply(rp_cluster_node *node, const redisReply *r)
{
    rp__reply rec;
    const char *why;
    if (r->type == REDIS_REPLY_NIL)
        return;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !r->element ||
        !r->element[1] || r->element[1]->type != REDIS_REPLY_STRING) {
        BUMP(node, malformed);
        return;
    }
    const redisReply *v = r->element[1];
    if (rp__reply_decode(v->str, v->len, node->max_payload, &rec, &why) < 0) {
        BUMP(node, malformed);
        rp__node_logf(node, RP_LOG_WARN, "malformed reply record: %s", why);
        return;
    }
    pending_ask *a = ask_take(node, rec.corr);
    if (!a) {
        BUMP(node, replies_discarded);
        return;
    }
    complete(node, a, &rec);
}

void *rp__reply_main(void *arg)
{
    rp_cluster_node *node = arg;
    const char *av[] = {"BLPOP", node->k_reply, "0.2"};
    size_t al[] = {5, strlen(node->k_reply), 3};
    while (!atomic_load(&node->reply_stop)) {
        if (rp__conn_ensure(&node->replyc) < 0) {
            rp__sleep_ms(50);
            continue;
        }
        redisReply *r = rp__conn_cmd(&node->replyc, 3, av, al);
        if (!r)
            continue;
        on_reply(node, r);
        freeReplyObject(r);
    }
    return NULL;
}

int rp__entry_fields(const rp__entry *e, const char **av, size_t *al, char bufs[2][24])
{
    wire w;
    w.n = 0;
    pair(&w, "id", e->id.p, e->id.len);
    pair(&w, "h", e->h.p, e->h.len);
    pair(&w, "p", e->p.p, e->p.len);
    if (e->k.p)
        pair(&w, "k", e->k.p, e->k.len);
    if (e->o.p)
        pair(&w, "o", e->o.p, e->o.len);
    if (e->is_ask) {
        snprintf(bufs[0], 24, "%llu", (unsigned long long)e->corr);
        pair(&w, "r", e->r.p, e->r.len);
        pair(&w, "c", bufs[0], strlen(bufs[0]));
        if (e->deadline_ms) {
            snprintf(bufs[1], 24, "%lld", (long long)e->deadline_ms);
            pair(&w, "t", bufs[1], strlen(bufs[1]));
        }
    }
    memcpy(av, w.f, sizeof *av * (size_t)(2 * w.n));
    memcpy(al, w.l, sizeof *al * (size_t)(2 * w.n));
    return w.n;
}
