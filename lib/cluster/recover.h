/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/recover.h - moving a node's entries to live members
 * (recover.c): a dead or leaving node's, and handed-back jobs.  Private.
 */
#ifndef RP_CLUSTER_RECOVER_H
#define RP_CLUSTER_RECOVER_H

#include <stdbool.h>

#include "node.h"

/* Move dead (or leaving) node dead_id's pending and unread entries to live
 * members (excluding exclude), at most budget entries.  Returns the number
 * moved, or RP_EUNAVAILABLE. */
int rp__recover(rp_cluster_node *node, rp__conn *k, const char *dead_id,
                const char *exclude, int budget, bool count_pending);
/* Re-add one handed-back job (not run) to a live member and ack it. */
int rp__requeue_job(rp_cluster_node *node, rp__conn *k, rp_cluster_job *j);

#endif /* RP_CLUSTER_RECOVER_H */
