/* SPDX-License-Identifier: MIT */
/*
 * reply.h - where a job's answer goes: nowhere (a tell), a future (an
 * ask, future.c) or one member of a scatter (scatter.c).  Private.
 *
 * A reply is a target and the target's const operations table, as
 * SQLite's sqlite3_mutex_methods: future.c and scatter.c each export one
 * table, and the job side (worker.c, the mailbox's hand-back, routers)
 * calls through it without knowing which kind it holds.  The job record
 * holds one reference on the target until the job has run or been handed
 * back.  This header calls nothing of the library.
 */
#ifndef RP_REPLY_H
#define RP_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

typedef struct rp__reply_ops {
    /* Answer with value; free_fn (may be NULL) frees it once the asker
     * owns it.  0 when the answer won; RP_ETIMEDOUT (the ask timed out)
     * or RP_ECANCELLED (another routee won, or it stopped) when the ask
     * had already completed: the value then stays the caller's. */
    int (*fulfil)(void *target, uint32_t member, void *value, rp_value_free_fn free_fn,
                  int routee);
    /* Fail with code; message NULL: the target's default text.  0, or as
     * fulfil when the ask had already completed. */
    int (*fail)(void *target, uint32_t member, int code, int routee, const char *message);
    /* One more reference on the target (a copy of the reply). */
    void (*retain)(void *target);
    /* Drop one reference. */
    void (*release)(void *target);
    /* At dequeue: whether the job should be skipped because nobody would
     * read its answer: RP_EEXPIRED (the future completed) or RP_ECANCELLED
     * (the scatter resolved and cancels its losers; counted cancelled
     * here).  0: run it.  Called once per job, by the routee that took it. */
    int (*skip)(void *target);
    /* rp_job_cancelled(): whether the job's answer is no longer wanted. */
    bool (*cancelled)(const void *target);
} rp__reply_ops;

typedef struct rp__reply {
    const rp__reply_ops *ops; /* NULL: no answer expected (a tell) */
    void *target;             /* the future or the scatter */
    uint32_t member;          /* a scatter's copy index */
    int64_t deadline_ns;      /* 0: none */
} rp__reply;

static inline bool rp__reply_none(const rp__reply *r)
{
    return !r || !r->ops;
}

/* The job will not run: fail its reply with code and drop the job's
 * reference.  routee: where it was, or -1. */
static inline void rp__reply_fail(rp__reply *r, int code, int routee)
{
    if (r->ops) {
        r->ops->fail(r->target, r->member, code, routee, NULL);
        r->ops->release(r->target);
    }
    r->ops = NULL;
    r->target = NULL;
}

/* Drop the job's reference without completing anything. */
static inline void rp__reply_release(rp__reply *r)
{
    if (r->ops)
        r->ops->release(r->target);
    r->ops = NULL;
    r->target = NULL;
}

/* A copy of r with its own reference (none for a tell or r NULL). */
static inline rp__reply rp__reply_copy(const rp__reply *r)
{
    rp__reply c = {0};

    if (r && r->ops) {
        c = *r;
        c.ops->retain(c.target);
    }
    return c;
}

/* Whether a job with this reply should be skipped at dequeue (see skip
 * above), or its deadline passed (RP_EEXPIRED).  0: run it. */
static inline int rp__reply_skip(const rp__reply *r, int64_t now_ns)
{
    int why = r->ops ? r->ops->skip(r->target) : 0;

    if (why)
        return why;
    if (r->deadline_ns && now_ns >= r->deadline_ns)
        return RP_EEXPIRED;
    return 0;
}

/* The job's answer, or its failure (message not NULL), keeping the job's
 * reference: 0, RP_ETIMEDOUT or RP_ECANCELLED as the ops above.  r holds
 * a target. */
static inline int rp__reply_fulfil(const rp__reply *r, void *value, rp_value_free_fn free_fn,
                                   int routee)
{
    return r->ops->fulfil(r->target, r->member, value, free_fn, routee);
}

static inline int rp__reply_answer_fail(const rp__reply *r, int code, int routee,
                                        const char *message)
{
    return r->ops->fail(r->target, r->member, code, routee, message);
}

static inline bool rp__reply_cancelled(const rp__reply *r)
{
    return r->ops && r->ops->cancelled(r->target);
}

#endif /* RP_REPLY_H */
