/* SPDX-License-Identifier: MIT */
/*
 * croute.h - a call's route through a snapshot (croute.c): the snapshot's
 * references, the calling thread's request, routing through the core
 * router.  Private; the lowest of the routers' files (routers.h has the
 * types).
 */
#ifndef RP_CLUSTER_CROUTE_H
#define RP_CLUSTER_CROUTE_H

#include "routers.h"

/** Take / drop a reference on the current snapshot; the last drop frees
 *  it.  Thread-safe (under r->mu). */
rp__csnap *rp__csnap_get(rp_cluster_router *r);
void rp__csnap_put(rp_cluster_router *r, rp__csnap *s);
/** Free s (NULL: nothing) and its routees and core router: for the last
 *  reference, or a snapshot nobody else ever saw. */
void rp__csnap_free(rp__csnap *s);

/** Route job through s's core router: broadcast when fanout, keyed when
 *  key is set.  Returns the call's code (the request's first failure). */
int rp__croute(rp_cluster_router *r, rp__csnap *s, rp__cjob *job, bool fanout);

/** Pick a node for each of req->msgs[0..n-1] through s's core router
 *  (rp_router_tell_batch), collecting (target, msg) pairs into
 *  req->targets / req->batch_msgs; sends nothing.  0, RP_ENOMEM. */
int rp__croute_batch(rp_cluster_router *r, rp__csnap *s, rp__creq *req, size_t n);

/** Record rc as req's failure unless one is recorded already. */
void rp__creq_fail(rp__creq *req, int rc);
/** The request the calling thread is routing now (custom strategies run
 *  synchronously inside rp__croute / rp__croute_batch), or NULL. */
rp__creq *rp__creq_current(void);

#endif /* RP_CLUSTER_CROUTE_H */
