/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/heartbeat.h - the heartbeat (heartbeat.c), for join.c: the
 * scripts, one tick, the heartbeat thread, a fresh read of the live list.
 * Private.
 */
#ifndef RP_CLUSTER_HEARTBEAT_H
#define RP_CLUSTER_HEARTBEAT_H

#include "routepool/cluster.h"

/* Set the bodies of the node's Lua scripts (report, cleanup, lock and the
 * two move scripts); nothing is sent. */
void rp__init_scripts(rp_cluster_node *node);
/* One tick on the heartbeat connection: the depth report and lease, the
 * members' reports (live list, listeners, recovery of dead nodes), the
 * sweep of settled asks.  On the heartbeat thread, or before it starts. */
void rp__tick(rp_cluster_node *node);
/* Re-read the reports into the live list now (leave: the last tick's view
 * may miss a node that joined since). */
void rp__refresh_live(rp_cluster_node *node);
/* The heartbeat thread (arg: the node): a tick every heartbeat_ms until
 * hb_stop. */
void *rp__hb_main(void *arg);

#endif /* RP_CLUSTER_HEARTBEAT_H */
