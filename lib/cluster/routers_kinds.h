/* SPDX-License-Identifier: MIT */
/*
 * routers_kinds.h - the WEIGHTED and CUSTOM cluster router kinds
 * (routers_kinds.c), for routers.c.  Private.
 */
#ifndef RP_CLUSTER_ROUTERS_KINDS_H
#define RP_CLUSTER_ROUTERS_KINDS_H

#include "routers.h"

/** Check the kinds' options (weights, default_weight, pick), naming func
 *  and the field.  0 or RP_EINVAL. */
int rp__ckind_check(const rp_cluster_router_options *o, const char *func);
/** Copy the weights (sorted by id; a repeated id is RP_EINVAL naming both
 *  entries) and the pick into r.  0, RP_EINVAL, RP_ENOMEM. */
int rp__ckind_init(rp_cluster_router *r, const rp_cluster_router_options *o, const char *func);
/** WEIGHTED: fill s->weights for s's nodes.  0 or RP_ENOMEM (else 0). */
int rp__ckind_snap(const rp_cluster_router *r, rp__csnap *s);
/** The strategy of a WEIGHTED or CUSTOM snapshot (s->weights filled). */
rp_strategy rp__ckind_strategy(const rp_cluster_router *r, rp__csnap *s);

#endif /* RP_CLUSTER_ROUTERS_KINDS_H */
