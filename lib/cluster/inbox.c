/* SPDX-License-Identifier: MIT */
/*
 * inbox.c - the consumer group on a member's inbox.
 *
 * Every member reads its inbox (a stream) through one consumer group,
 * "rp", read from the stream's start ("0"), so entries added before the
 * group existed are delivered too.  rp_cluster_join() creates it (join.c);
 * the fetch thread creates it again when a read finds it gone (NOGROUP:
 * the inbox was deleted, fetch.c).  Creating it is idempotent: BUSYGROUP
 * means it is there.  Below both of them, so join.c (which starts the
 * fetch thread) and fetch.c call in one direction only.
 */
#include <string.h>

#include "conn.h"
#include "impl.h"
#include "inbox.h"
#include "node.h"

int rp__ensure_group(rp_cluster_node *node, rp__conn *k)
{
    const char *av[] = {"XGROUP", "CREATE", node->k_inbox, "rp", "0", "MKSTREAM"};
    redisReply *r = rp__conn_cmd(k, 6, av, NULL);
    if (!r)
        return RP_EUNAVAILABLE;
    int rc = 0;
    if (r->type == REDIS_REPLY_ERROR && (!r->str || strncmp(r->str, "BUSYGROUP", 9) != 0)) {
        rp__node_logf(node, RP_LOG_ERROR, "XGROUP CREATE: %.200s", r->str ? r->str : "?");
        rc = RP_EUNAVAILABLE;
    }
    freeReplyObject(r);
    return rc;
}
