/* SPDX-License-Identifier: MIT */
/*
 * least_used.h - opening a least-used set on a connection the caller
 * configured (the cluster router's least-used kind uses its node's Redis
 * settings).  Private; the public API is in routepool/cluster.h.
 */
#ifndef RP_CLUSTER_LEAST_USED_H
#define RP_CLUSTER_LEAST_USED_H

#include "node.h"
#include "routepool/cluster.h"

/** As rp_least_used_create(), connecting with settings s (borrowed: they
 *  must outlive the set - a router's node's); messages name func.  0,
 *  RP_EINVAL, RP_EUNAVAILABLE, RP_ENOMEM. */
int rp__least_used_open(rp_least_used **out, const rp__cluster_settings *s, const char *key,
                        rp_least_used_readd readd, const char *func);

/** As rp_least_used_add(), but a member new to the set (no removal record)
 *  starts at the set's current minimum (0 when empty) instead of a start
 *  count: how a least-used router adds a node that became live, so it
 *  takes its even share at once instead of every allocation until it has
 *  caught up (seed 002's warning).  A re-added member follows readd. */
int rp__least_used_add_at_min(rp_least_used *lu, const char *member, const char *func);

#endif /* RP_CLUSTER_LEAST_USED_H */
