/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/fetch.h - the fetch side (fetch.c): the fetch thread, the
 * fetched jobs' records and the acknowledgements list.  Private.
 */
#ifndef RP_CLUSTER_FETCH_H
#define RP_CLUSTER_FETCH_H

#include "node.h"

/* The fetch thread (arg: the node): reads the inbox while there are free
 * slots, flushes its acknowledgements when it stops. */
void *rp__fetch_main(void *arg);
/* Free a fetched job's record (NULL: nothing). */
void rp__job_free(rp_cluster_job *j);
/* Flush the acknowledgements collected so far on conn k (which the caller
 * owns); ids that could not be sent go back on the list. */
void rp__flush_acks(rp_cluster_node *node, rp__conn *k);

#endif /* RP_CLUSTER_FETCH_H */
