/* SPDX-License-Identifier: MIT */
/*
 * routee.h - delivery to one routee, local or foreign, and hand-backs
 * (routee.c).  Private.
 */
#ifndef RP_ROUTEE_H
#define RP_ROUTEE_H

#include <stdbool.h>

#include "reply.h"
#include "routee_record.h"

/* Hand a job that will not run back through pool's on_undelivered
 * callback (counted by the caller). */
void rp__routee_handback(rp_pool *pool, void *arg, int reason);
/* A local routee's mailbox hand-back (rp__handback_fn, owner: the
 * routee): the arg back as rp__routee_handback(), then the job's reply
 * (may be NULL) failed with reason. */
void rp__routee_mailbox_handback(void *routee, void *arg, int reason, rp__reply *reply);

/* Deliver to one routee.  0: accepted (the job owns reply's reference).
 * Negative: not accepted (RP_EFULL, RP_ESTOPPED, RP_ESHUTDOWN, RP_ENOMEM,
 * RP_ESEND); the caller keeps the reference.  reply may be NULL. */
int rp__routee_deliver_reply(rp_routee *r, rp_job_fn fn, void *arg, bool pinned,
                             rp__reply *reply);
int rp__routee_deliver(rp_routee *r, rp_job_fn fn, void *arg, bool pinned);

#endif /* RP_ROUTEE_H */
