/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/send.h - sending for the node's own files (send.c): checked
 * XADDs and moves, replies to asks, the reply thread, the pending asks.
 * The routers' entry points (rp__cluster_send_tell/batch/ask) are in
 * node.h.  Private.
 */
#ifndef RP_CLUSTER_SEND_H
#define RP_CLUSTER_SEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "entry.h"
#include "node.h"

/* XADD NOMKSTREAM to target's inbox on k: fields/lens hold nf field-value
 * pairs' bytes (2*nf items).  Returns 0, RP_ENOROUTEE (target has no inbox:
 * not a member), RP_EUNAVAILABLE, RP_ENOMEM. */
int rp__xadd_checked(rp_cluster_node *node, rp__conn *k, const char *target,
                     const char **fields, const size_t *lens, int nf);
/* Answer ask corr of node to (NUL-terminated; to_len is not used): RPUSH
 * the encoded reply (code, routee, msg, data/len) to its reply list, with
 * a 60 s expiry, on the send connection (takes send_lock).  0,
 * RP_EUNAVAILABLE, RP_ENOMEM (rp_errmsg() names rp_cluster_job_reply). */
int rp__send_reply(rp_cluster_node *node, const char *to, size_t to_len,
                   uint64_t corr, int code, int routee, const char *msg,
                   const void *data, size_t len);
/* The reply thread (arg: the node): BLPOP of the node's reply list,
 * completing pending asks, until reply_stop. */
void *rp__reply_main(void *arg);
/* Drop the pending asks whose futures are settled (all: every one, failing
 * the unsettled with RP_ESHUTDOWN). */
void rp__asks_sweep(rp_cluster_node *node, bool all);
/* Collect an entry's fields (all but n and hist) as argv pairs into av/al
 * (room for 16 items; bufs hold the numbers); the caller adds n and hist.
 * Returns the number of pairs. */
int rp__entry_fields(const rp__entry *e, const char **av, size_t *al, char bufs[2][24]);
/* The move script's body (rp__move_checked runs it). */
extern const char rp__move_lua[];
/* Move pending entry sid of src_inbox to target's inbox (NULL: to the
 * dead-letter stream) in one script: 0 moved, 1 not pending any more
 * (someone else moved it), RP_ENOROUTEE, RP_EUNAVAILABLE, RP_ENOMEM. */
int rp__move_checked(rp_cluster_node *node, rp__conn *k, rp__script *sc,
                     const char *target, const char *src_inbox, const char *sid,
                     const char **fields, const size_t *lens, int nf);

#endif /* RP_CLUSTER_SEND_H */
