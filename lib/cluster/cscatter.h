/* SPDX-License-Identifier: MIT */
/*
 * cscatter.h - the cluster scatter's members and open list (cscatter.c),
 * for routers.c: its send callback asks each member, its destroy stops the
 * scatters still open.  Private.
 */
#ifndef RP_CLUSTER_CSCATTER_H
#define RP_CLUSTER_CSCATTER_H

#include "routers.h"

/** Ask node target as scatter member (called by the send callback in
 *  scatter order).  Returns 0 (a failed send becomes a failed member). */
int rp__cscatter_send(struct rp__cscatter *sc, rp_cluster_node *node, const char *target,
                      const rp__cluster_msg *m);
/** Fail every open scatter of r with "stopped while the scatter was still
 *  open" (rp_cluster_router_destroy()). */
void rp__cscatter_stop_all(rp_cluster_router *r);

#endif /* RP_CLUSTER_CSCATTER_H */
