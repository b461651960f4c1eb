/* SPDX-License-Identifier: MIT */
/*
 * croute.c - a cluster router call's route through a snapshot: the
 * snapshot's reference count, the request of the calling thread, and the
 * routing through the snapshot's core router.
 *
 * Routing goes through the core (rp_router_tell, _tell_key, _tell_batch,
 * _broadcast and rp_strategy_pick inside them): the job's arg is an
 * rp__cjob on the caller's stack, fn a function that never runs.  The core
 * calls the chosen node's foreign send callback (routers.c) synchronously,
 * in the calling thread; the callback does the transport and records the
 * outcome in the request, so a cluster call returns the transport's code
 * (RP_EUNAVAILABLE, ...) rather than the core's hand-back.  While a call
 * routes, its request is the calling thread's (rp__creq_current()): a
 * custom strategy that fails for a reason of its own records it there.
 *
 * A snapshot is built by routers.c (it owns the callbacks the routees call)
 * and freed here, by whoever drops its last reference.  This file calls
 * no other file of the routers: routers.c, routers_kinds.c, cscatter.c and
 * routers_api.c all sit above it.  Its one lock is r->mu, held only to
 * read r->cur and count a reference (routers.h gives the lock order).
 */
#include <stdlib.h>

#include "croute.h"

/* The request of the call the calling thread is routing (custom
 * strategies run synchronously inside it). */
static _Thread_local rp__creq *tl_req;

static void never_run(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
}

void rp__creq_fail(rp__creq *req, int rc)
{
    if (req->rc == 0)
        req->rc = rc;
}

rp__creq *rp__creq_current(void)
{
    return tl_req;
}

/* ---- snapshots ---- */

void rp__csnap_free(rp__csnap *s)
{
    if (!s)
        return;
    rp_router_destroy(s->router);
    for (size_t i = 0; i < s->n; i++)
        rp_routee_foreign_destroy(s->routees ? s->routees[i] : NULL);
    free(s->routees);
    free(s->weights);
    free(s->ids);
    free(s->nodes);
    free(s);
}

rp__csnap *rp__csnap_get(rp_cluster_router *r)
{
    rp__csnap *s;

    pthread_mutex_lock(&r->mu);
    s = r->cur;
    s->refs++;
    pthread_mutex_unlock(&r->mu);
    return s;
}

void rp__csnap_put(rp_cluster_router *r, rp__csnap *s)
{
    bool last;

    pthread_mutex_lock(&r->mu);
    last = --s->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (last)
        rp__csnap_free(s);
}

/* ---- routing one call ---- */

int rp__croute(rp_cluster_router *r, rp__csnap *s, rp__cjob *job, bool fanout)
{
    rp__creq *req = job->req, *outer = tl_req;
    const rp__cluster_msg *m = &req->msgs[0];
    int rc;

    if (s->n == 0)
        return rp_error_set(RP_ENOROUTEE, "%s: router %s has no live node to route to", req->fn,
                            r->name);
    /* A node found gone is stopped in this snapshot, so each retry routes
     * among fewer nodes: at most n attempts. */
    for (size_t attempt = 0;; attempt++) {
        tl_req = req;
        if (fanout)
            rc = rp_router_broadcast(s->router, never_run, job);
        else if (m->key)
            rc = rp_router_tell_key(s->router, m->key, m->key_len, never_run, job);
        else
            rc = rp_router_tell(s->router, never_run, job);
        tl_req = outer; /* a custom pick may route through a router itself */
        if (!req->retry || fanout || attempt >= s->n)
            break;
        req->retry = false;
    }
    if (rc == RP_ENOROUTEE || req->rc == RP_ESTOPPED || (req->retry && !fanout && !req->rc) ||
        (fanout && rc == 0 && req->rc == 0 && req->sent == 0))
        return rp_error_set(RP_ENOROUTEE, "%s: router %s has no live node to route to", req->fn,
                            r->name);
    /* A hand-back's reason, or the transport's / the strategy's own code
     * (recorded first; its message is already set). */
    return rc < 0 ? rc : req->rc;
}

int rp__croute_batch(rp_cluster_router *r, rp__csnap *s, rp__creq *req, size_t n)
{
    rp__cjob *jobs = malloc(n * sizeof *jobs);
    void **args = malloc(n * sizeof *args);
    rp__creq *outer = tl_req;
    int rc = 0;

    if (!jobs || !args) {
        free(jobs);
        free(args);
        return rp_error_set(RP_ENOMEM, "%s: out of memory", req->fn);
    }
    for (size_t i = 0; i < n; i++) {
        jobs[i] = (rp__cjob){req, i};
        args[i] = &jobs[i];
    }
    tl_req = req;
    if (r->kind != RP_CLUSTER_ROUTER_CUSTOM) {
        rc = rp_router_tell_batch(s->router, never_run, (void *const *)args, n);
    } else {
        /* The user's pick sees each job (req->cur); a core strategy sees
         * only the routing state, so the jobs go through one by one, in
         * order (their entries are still sent in one round trip). */
        for (req->cur = 0; req->cur < n && rc >= 0; req->cur++)
            rc = rp_router_tell_batch(s->router, never_run, &args[req->cur], 1);
        req->cur = 0;
    }
    tl_req = outer;
    free(jobs);
    free(args);
    return rc < 0 ? rc : 0;
}
