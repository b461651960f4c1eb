/* SPDX-License-Identifier: MIT */
/*
 * scatter.h - scatter-gather internals.  Private.
 */
#ifndef RP_SCATTER_INTERNAL_H
#define RP_SCATTER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "future.h"

typedef struct rp__sg rp__sg;
typedef struct rp__scatter rp__scatter;

/* A reply into one copy of a scatter (reply.h): its target is the
 * rp__scatter, its member the copy's index. */
extern const rp__reply_ops rp__scatter_reply_ops;

/* The router's scatter state (options, counters, open scatters), shared
 * by reference with every scatter so copies outlive nothing they use. */
int rp__sg_new(rp__sg **out, const rp_scatter_gather_options *opts,
               const char *name, rp_pool *pool, rp_log_fn log, void *log_user);
/* Fail every open scatter ("stopped ...") and drop the router's reference. */
void rp__sg_close(rp__sg *sg);
/* Fail every open scatter ("stopped ..."); the router stays usable. */
void rp__sg_stop_open(rp__sg *sg);
void rp__sg_release(rp__sg *sg);
void rp__sg_stats(const rp__sg *sg, rp_scatter_stats *out);
/* A bare tell: counted, logged, arg handed back by the caller. */
void rp__sg_no_reply_target(rp__sg *sg);

/* Scatter one ask over routees (n may be 0).  out gets one reference on
 * the caller's future.  ask_deadline_ns: the caller's own ask deadline (0:
 * none); when it comes before the scatter's, the scatter ends there, the
 * caller's future failing with RP_ETIMEDOUT.  The scatter is the only
 * completer of the future: do not arm it. */
int rp__sg_ask(rp__sg *sg, rp_routee *const *routees, size_t n,
               uint64_t message_index, rp_job_fn fn, void *arg,
               int64_t ask_deadline_ns, rp_future **out);

/* From the job side (future.c, worker.c).  0 when the reply won; after
 * resolution RP_ETIMEDOUT (the scatter or the caller's ask timed out) or
 * RP_ECANCELLED (another routee won, or it stopped); the value then stays
 * the job's. */
int rp__scatter_reply(rp__scatter *s, uint32_t member, void *value, int routee);
/* As rp__scatter_reply(); the winning value is owned by the caller's
 * future with free_fn (NULL: not owned).  A losing value stays the job's. */
int rp__scatter_reply_owned(rp__scatter *s, uint32_t member, void *value,
                            rp_value_free_fn free_fn, int routee);
/* 0 when the failure was recorded; RP_ETIMEDOUT / RP_ECANCELLED when the
 * scatter had already resolved (as rp__scatter_reply), RP_ECANCELLED when
 * the member had answered. */
int rp__scatter_member_fail(rp__scatter *s, uint32_t member, int code,
                            int routee, const char *message);
void rp__sg_retain(rp__sg *sg);
bool rp__scatter_cancelled(const rp__scatter *s);
void rp__scatter_count_cancelled(rp__scatter *s);
void rp__scatter_release(rp__scatter *s);

/* The scatter-gather routers over one pool (pool->sgs). */
typedef struct rp__sg_registry rp__sg_registry;

/* An empty registry into *out: 0 or RP_ENOMEM (rp_errmsg() not set). */
int rp__sg_registry_create(rp__sg_registry **out);
/* Frees it (its routers are gone by then).  Accepts NULL. */
void rp__sg_registry_destroy(rp__sg_registry *reg);
/* A scatter-gather router registers at creation: 0 or RP_ENOMEM. */
int rp__sg_register(rp__sg_registry *reg, rp__sg *sg);
/* At its destruction; its counts stay in the registry's totals. */
void rp__sg_unregister(rp__sg_registry *reg, rp__sg *sg);
/* Shutdown: every open scatter of every router fails at once ("stopped
 * ..."); completion callbacks run here, with no lock held.  Out of memory
 * for the copy of the list: they fail at their deadlines. */
void rp__sg_stop_all(rp__sg_registry *reg);
/* *sum += the counts of every router, destroyed ones included. */
void rp__sg_registry_stats(rp__sg_registry *reg, rp_scatter_stats *sum);

#endif /* RP_SCATTER_INTERNAL_H */
