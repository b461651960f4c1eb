/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/join.h - joining and leaving (join.c), the cluster's
 * composition root: rp_cluster_join(), rp_cluster_start() and
 * rp_cluster_leave() are public (routepool/cluster.h).  Private.
 */
#ifndef RP_CLUSTER_JOIN_H
#define RP_CLUSTER_JOIN_H

#include "routepool/cluster.h"

/* Stop the node's fetch, heartbeat and reply threads (those running) and
 * join them: join's failure path and leave.  Idempotent. */
void rp__stop_threads(rp_cluster_node *node);

#endif /* RP_CLUSTER_JOIN_H */
