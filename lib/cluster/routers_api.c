/* SPDX-License-Identifier: MIT */
/*
 * routers_api.c - the calls of a cluster router: tell, tell_key,
 * tell_batch, ask, broadcast.
 *
 * Each call holds a reference on the router's current snapshot for its
 * duration (routers.h), builds its request on the stack and routes it
 * through the snapshot's core router (rp__croute).  Arguments are checked
 * here, before anything is routed, so a least-used router never counts an
 * allocation for a job that was refused for its arguments; payload size
 * and handler name are checked again by the transport against the node's
 * own limits.
 */
#include <stdlib.h>
#include <string.h>

#include "croute.h"

static int check_call(const rp_cluster_router *r, const char *handler, const void *payload,
                      size_t len, const char *fn)
{
    if (!r)
        return rp_error_set(RP_EINVAL, "%s: router is NULL", fn);
    if (!handler || !*handler)
        return rp_error_set(RP_EINVAL, "%s: handler is %s", fn, handler ? "empty" : "NULL");
    if (!payload && len)
        return rp_error_set(RP_EINVAL, "%s: payload is NULL with len %zu", fn, len);
    return 0;
}

/* One job to one node (or, fanout, to each live node).  A least-used pick
 * that names a node only a newer snapshot has (it joined while this call
 * held the older one) routes again on the current snapshot. */
static int route_one(rp_cluster_router *r, rp__creq *req, bool fanout)
{
    rp__cjob job = {req, 0};
    int rc;

    for (int attempt = 0;; attempt++) {
        rp__csnap *s = rp__csnap_get(r);
        rc = rp__croute(r, s, &job, fanout);
        rp__csnap_put(r, s);
        if (!req->resnap || attempt >= 2)
            break;
        req->resnap = false;
    }
    if (req->resnap)
        return rp_error_set(RP_ENOROUTEE, "%s: router %s: the least-used set keeps naming nodes that are not live",
                            req->fn, r->name);
    return rc;
}

int rp_cluster_tell(rp_cluster_router *r, const char *handler, const void *payload,
                    size_t len)
{
    rp__cluster_msg m = {handler, payload, len, NULL, 0};
    rp__creq req = {.op = RP__COP_TELL, .fn = "rp_cluster_tell", .msgs = &m};
    int rc;

    if ((rc = check_call(r, handler, payload, len, req.fn)) < 0)
        return rc;
    if (r->kind == RP_CLUSTER_ROUTER_CONSISTENT_HASH)
        return rp_error_set(RP_EINVAL, "rp_cluster_tell: router %s hashes keys: use rp_cluster_tell_key",
                            r->name);
    return route_one(r, &req, false);
}

int rp_cluster_tell_key(rp_cluster_router *r, const void *key, size_t key_len,
                        const char *handler, const void *payload, size_t len)
{
    rp__cluster_msg m = {handler, payload, len, key, key_len};
    rp__creq req = {.op = RP__COP_TELL, .fn = "rp_cluster_tell_key", .msgs = &m};
    int rc;

    if ((rc = check_call(r, handler, payload, len, req.fn)) < 0)
        return rc;
    if (!key || key_len == 0)
        return rp_error_set(RP_EINVAL, "rp_cluster_tell_key: %s", key ? "key_len is 0" : "key is NULL");
    return route_one(r, &req, false);
}

int rp_cluster_ask(rp_cluster_router *r, const char *handler, const void *payload,
                   size_t len, int timeout_ms, rp_future **out)
{
    rp__cluster_msg m = {handler, payload, len, NULL, 0};
    rp__creq req = {.op = RP__COP_ASK, .fn = "rp_cluster_ask", .msgs = &m,
                    .timeout_ms = timeout_ms};
    int rc;

    if (!out)
        return rp_error_set(RP_EINVAL, "rp_cluster_ask: out is NULL");
    *out = NULL;
    if ((rc = check_call(r, handler, payload, len, req.fn)) < 0)
        return rc;
    if (timeout_ms < 0)
        return rp_error_set(RP_EINVAL, "rp_cluster_ask: timeout_ms must be > 0, or 0 for the default (got %d)",
                            timeout_ms);
    if (r->kind == RP_CLUSTER_ROUTER_BROADCAST || r->kind == RP_CLUSTER_ROUTER_CONSISTENT_HASH)
        return rp_error_set(RP_EINVAL, "rp_cluster_ask: router %s is %s: ask needs one node chosen without a key (use rp_cluster_scatter or another kind)",
                            r->name, r->kind == RP_CLUSTER_ROUTER_BROADCAST ? "a broadcast router"
                                                                           : "consistent-hash");
    rc = route_one(r, &req, false);
    if (rc < 0) {
        rp_future_release(req.future); /* never set on failure; defensive */
        return rc;
    }
    *out = req.future;
    return 0;
}

int rp_cluster_broadcast(rp_cluster_router *r, const char *handler, const void *payload,
                         size_t len, size_t *sent)
{
    rp__cluster_msg m = {handler, payload, len, NULL, 0};
    rp__creq req = {.op = RP__COP_TELL, .fn = "rp_cluster_broadcast", .msgs = &m};
    int rc;

    if (sent)
        *sent = 0;
    if ((rc = check_call(r, handler, payload, len, req.fn)) < 0)
        return rc;
    rc = route_one(r, &req, true);
    if (sent)
        *sent = req.sent;
    if (rc < 0 && req.sent)
        rp_error_set(rc, "rp_cluster_broadcast: %zu copies stored before: %s", req.sent,
                     rp_strerror(rc));
    return rc;
}

static int check_batch(const rp_cluster_router *r, const char *handler,
                       const void *const *payloads, const size_t *lens, size_t n)
{
    const char *fn = "rp_cluster_tell_batch";
    int rc;

    if ((rc = check_call(r, handler, "", 0, fn)) < 0)
        return rc;
    if (n && (!payloads || !lens))
        return rp_error_set(RP_EINVAL, "%s: %s is NULL", fn, payloads ? "lens" : "payloads");
    for (size_t i = 0; i < n; i++)
        if (!payloads[i] && lens[i])
            return rp_error_set(RP_EINVAL, "%s: payloads[%zu] is NULL with lens[%zu] %zu", fn, i,
                                i, lens[i]);
    if (r->kind == RP_CLUSTER_ROUTER_CONSISTENT_HASH)
        return rp_error_set(RP_EINVAL, "%s: router %s hashes keys: use rp_cluster_tell_key", fn,
                            r->name);
    return 0;
}

/* Pick every job's node(s), then send them all in one pipelined batch. */
static int batch_send(rp_cluster_router *r, rp__csnap *s, rp__creq *req, size_t n, size_t *sent)
{
    int rc = rp__croute_batch(r, s, req, n);

    if (rc == 0 && req->k)
        rc = rp__cluster_send_batch(r->node, req->fn, req->targets, req->batch_msgs, req->k, sent);
    else if (rc == 0 && req->rc == 0)
        rc = RP_ENOROUTEE;
    if (rc == 0 && req->rc < 0)
        rc = req->rc; /* some jobs got no node (least-used); the rest were sent */
    return rc;
}

int rp_cluster_tell_batch(rp_cluster_router *r, const char *handler,
                          const void *const *payloads, const size_t *lens, size_t n,
                          size_t *sent)
{
    rp__creq req = {.op = RP__COP_BATCH, .fn = "rp_cluster_tell_batch"};
    rp__cluster_msg *msgs;
    rp__csnap *s;
    int rc;

    if (sent)
        *sent = 0;
    if ((rc = check_batch(r, handler, payloads, lens, n)) < 0 || n == 0)
        return rc;
    s = rp__csnap_get(r);
    if (s->n == 0) {
        rp__csnap_put(r, s);
        return rp_error_set(RP_ENOROUTEE, "%s: router %s has no live node to route to", req.fn,
                            r->name);
    }
    req.cap = r->kind == RP_CLUSTER_ROUTER_BROADCAST ? n * s->n : n;
    msgs = malloc(n * sizeof *msgs);
    req.targets = malloc(req.cap * sizeof *req.targets);
    req.batch_msgs = malloc(req.cap * sizeof *req.batch_msgs);
    if (!msgs || !req.targets || !req.batch_msgs) {
        rc = rp_error_set(RP_ENOMEM, "%s: out of memory", req.fn);
    } else {
        for (size_t i = 0; i < n; i++)
            msgs[i] = (rp__cluster_msg){handler, payloads[i], lens[i], NULL, 0};
        req.msgs = msgs;
        rc = batch_send(r, s, &req, n, sent);
    }
    free(msgs);
    free(req.targets);
    free(req.batch_msgs);
    rp__csnap_put(r, s);
    return rc;
}
