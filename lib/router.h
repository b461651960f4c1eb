/* SPDX-License-Identifier: MIT */
/*
 * router.h - router internals the pool needs (router.c).  Private.
 */
#ifndef RP_ROUTER_INTERNAL_H
#define RP_ROUTER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"

/* rp_router_tell() and rp_router_tell_batch() for func, the public
 * function the user called (named in rp_errmsg()). */
int rp__router_tell(rp_router *rt, rp_job_fn fn, void *arg, const char *func);
int rp__router_tell_batch(rp_router *rt, rp_job_fn fn, void *const *args, size_t n,
                          const char *func);

/* Router internals the pool needs for its default router. */
int rp__router_create_for_pool(rp_router **out, rp_pool *pool,
                               const rp_strategy *strategy, bool is_default);
void rp__router_free(rp_router *router);

#endif /* RP_ROUTER_INTERNAL_H */
