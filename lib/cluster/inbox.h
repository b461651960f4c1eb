/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/inbox.h - the inbox's consumer group (inbox.c), for the node's
 * files: join creates it, the fetch thread re-creates it after NOGROUP.
 * Private.
 */
#ifndef RP_CLUSTER_INBOX_H
#define RP_CLUSTER_INBOX_H

#include "node.h"

/* Create the consumer group "rp" of node's inbox on conn k (which the
 * caller owns), making the stream when it is missing; a group that exists
 * already (BUSYGROUP) is success.  Returns 0 or RP_EUNAVAILABLE (Redis
 * down, or refused: logged). */
int rp__ensure_group(rp_cluster_node *node, rp__conn *k);

#endif /* RP_CLUSTER_INBOX_H */
