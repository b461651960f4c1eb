/* SPDX-License-Identifier: MIT */
/*
 * routee.c - what every routee offers, local or foreign: delivery, depth,
 * busy, stop, counters.
 *
 * A local routee delivers into its mailbox; a foreign routee delivers
 * through the user's send callback and may or may not report a depth.
 * Stopping a local routee closes its mailbox: from that instant routers
 * skip it (rp__routee_stopped) and pushes back out (see mailbox.c), and the
 * routee thread hands queued jobs back with RP_ESTOPPED and exits.
 */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "future.h"
#include "pool_record.h"
#include "routee.h"
#include "steal.h"

/* Identities of foreign routees: distinct within the process. */
static _Atomic uint64_t foreign_serial;

void rp__routee_handback(rp_pool *pool, void *arg, int reason)
{
    if (pool->on_undelivered)
        pool->on_undelivered(arg, reason, pool->undelivered_user);
}

void rp__routee_mailbox_handback(void *routee, void *arg, int reason, rp__reply *reply)
{
    rp_routee *r = routee;

    rp__routee_handback(r->pool, arg, reason);
    if (reply)
        rp__reply_fail(reply, reason, r->index);
}

/* The routee whose thread this is (routee_record.h): set by its thread
 * (worker.c), read here and by the routers. */
_Thread_local rp_routee *rp__current_routee __attribute__((tls_model("initial-exec")));

/* A local routee's push: the lanes, and the wake-up check a stealable
 * push owes. */
static int push(rp_routee *r, rp_job_fn fn, void *arg, bool pinned, rp__reply *reply)
{
    int rc = rp__mailbox_push_mp(&r->mb, fn, arg, pinned, reply);

    if (rc == 0 && !pinned)
        rp__steal_queued(r->pool, r);
    return rc;
}

/*
 * A push from the routee's own thread.  A plain tell from a job goes into
 * the owner ring (mailbox.c, "The owner ring"); between jobs (a hook) the
 * thread streams its tells into the lanes' growing records (lane.c,
 * "Growing"), as any producer.  Out of line: every other thread's push
 * pays one compare for it, not this function's frame (a tell from
 * outside measured 1.03-1.06x with the test inline: rp-bench-lib-ab,
 * 40 near pairs each way).
 */
static __attribute__((noinline)) int push_from_owner(rp_routee *r, rp_job_fn fn, void *arg,
                                                     bool pinned, rp__reply *reply)
{
    /* Only a plain tell from inside a job; 1: the ring would not take it
     * (full, bounded mailbox, tracing). */
    if (!pinned && !reply && atomic_load_explicit(&r->running, memory_order_relaxed)) {
        int rc = rp__mailbox_push_own(&r->mb, fn, arg);

        if (rc == 0)
            rp__steal_queued(r->pool, r);
        if (rc <= 0)
            return rc;
    }
    return push(r, fn, arg, pinned, reply);
}

int rp__routee_deliver_reply(rp_routee *r, rp_job_fn fn, void *arg, bool pinned,
                             rp__reply *reply)
{
    if (r->kind == RP__ROUTEE_FOREIGN) {
        if (rp__routee_stopped(r))
            return RP_ESTOPPED;
        if (r->send(fn, arg, r->user) != 0)
            return RP_ESEND;
        /* Foreign code cannot answer an ask: fail it now, not at the
         * deadline. */
        if (reply)
            rp__reply_fail(reply, RP_ENOREPLY, -1);
        return 0;
    }
    if (RP_UNLIKELY(r == rp__current_routee))
        return push_from_owner(r, fn, arg, pinned, reply);
    return push(r, fn, arg, pinned, reply);
}

int rp__routee_deliver(rp_routee *r, rp_job_fn fn, void *arg, bool pinned)
{
    return rp__routee_deliver_reply(r, fn, arg, pinned, NULL);
}

int rp_routee_tell(rp_routee *r, rp_job_fn fn, void *arg)
{
    int rc;

    if (!r || !fn)
        return rp__fail(RP_EINVAL, "rp_routee_tell: %s is NULL", r ? "fn" : "routee");
    rc = rp__routee_deliver(r, fn, arg, true);
    if (rc == RP_ESTOPPED && rp__pool_shut(r->pool))
        rc = RP_ESHUTDOWN; /* stopped before the shutdown */
    if (rc < 0)
        return rp__fail(rc, "rp_routee_tell: routee %d: %s", r->index, rp_strerror(rc));
    return 0;
}

int64_t rp_routee_depth(const rp_routee *r)
{
    int64_t d;

    if (!r)
        return rp__fail(RP_EINVAL, "rp_routee_depth: routee is NULL");
    if (r->kind == RP__ROUTEE_LOCAL)
        return rp__mailbox_depth(&r->mb);
    d = r->depth_fn ? r->depth_fn(r->user) : -1;
    if (d < 0)
        return rp__fail(RP_ENODEPTH, "rp_routee_depth: the foreign routee's depth %s",
                        r->depth_fn ? "callback failed" : "cannot be read (no depth callback)");
    return d;
}

bool rp_routee_busy(const rp_routee *r)
{
    return r && r->kind == RP__ROUTEE_LOCAL &&
           atomic_load_explicit(&r->busy, memory_order_relaxed);
}

int rp_routee_stop(rp_routee *r)
{
    if (!r)
        return rp__fail(RP_EINVAL, "rp_routee_stop: routee is NULL");
    if (r->kind == RP__ROUTEE_FOREIGN)
        atomic_store_explicit(&r->foreign_stopped, true, memory_order_seq_cst);
    else
        rp__mailbox_close(&r->mb, RP_ESTOPPED);
    return 0;
}

bool rp_routee_stopped(const rp_routee *r)
{
    return r && rp__routee_stopped(r);
}

int rp_routee_index(const rp_routee *r)
{
    return r ? r->index : -1;
}

int rp_routee_stats_get(const rp_routee *r, rp_routee_stats *out)
{
    if (!r || !out)
        return rp__fail(RP_EINVAL, "rp_routee_stats_get: %s is NULL", r ? "out" : "routee");
    out->enqueued = rp__mailbox_enqueued(&r->mb);
    out->run = atomic_load_explicit(&r->run, memory_order_relaxed);
    out->rejected = atomic_load_explicit(&r->mb.rejected, memory_order_relaxed);
    /* Derived: the two overflow reasons of the per-reason counters. */
    out->dropped =
        atomic_load_explicit(&r->mb.by_reason[rp__reason_slot(RP_EDROPPED)], memory_order_relaxed) +
        atomic_load_explicit(&r->mb.by_reason[rp__reason_slot(RP_EEVICTED)], memory_order_relaxed);
    out->undelivered = atomic_load_explicit(&r->mb.undelivered, memory_order_relaxed);
    out->stolen_from = atomic_load_explicit(&r->mb.stolen_from, memory_order_relaxed);
    out->stole = atomic_load_explicit(&r->stole, memory_order_relaxed);
    out->rerouted = atomic_load_explicit(&r->rerouted, memory_order_relaxed);
    out->expired = atomic_load_explicit(&r->mb.expired, memory_order_relaxed);
    out->sleeps = atomic_load_explicit(&r->sleeps, memory_order_relaxed);
    out->looks = atomic_load_explicit(&r->looks, memory_order_relaxed);
    out->stale_looks = atomic_load_explicit(&r->stale_looks, memory_order_relaxed);
    out->rescues = atomic_load_explicit(&r->rescues, memory_order_relaxed);
    out->age_takes = atomic_load_explicit(&r->olders, memory_order_relaxed);
    out->records = rp__lane_records(&r->mb.pinned) + rp__lane_records(&r->mb.stealable);
    return 0;
}

int rp_routee_foreign_create(rp_routee **out, rp_foreign_send_fn send,
                             rp_foreign_depth_fn depth, void *user)
{
    rp_routee *r;

    if (!out)
        return rp__fail(RP_EINVAL, "rp_routee_foreign_create: out is NULL");
    *out = NULL;
    if (!send)
        return rp__fail(RP_EINVAL, "rp_routee_foreign_create: send is NULL");
    if (!(r = aligned_alloc(RP_CACHELINE, (sizeof *r + RP_CACHELINE - 1) /
                                              RP_CACHELINE * RP_CACHELINE)))
        return rp__fail(RP_ENOMEM, "rp_routee_foreign_create: out of memory");
    memset(r, 0, sizeof *r);
    r->kind = RP__ROUTEE_FOREIGN;
    r->index = -1;
    r->send = send;
    r->depth_fn = depth;
    r->user = user;
    /* A large odd multiplier spreads consecutive serials over 64 bits. */
    r->ident = (atomic_fetch_add(&foreign_serial, 1) + 1) * 0x9E3779B97F4A7C15ull;
    atomic_init(&r->foreign_stopped, false);
    *out = r;
    return 0;
}

void rp_routee_foreign_destroy(rp_routee *r)
{
    if (!r)
        return;
    if (r->kind != RP__ROUTEE_FOREIGN) {
        rp__log(r->pool ? r->pool->log : NULL, r->pool ? r->pool->log_user : NULL,
                RP_LOG_ERROR, "rp_routee_foreign_destroy: routee %d belongs to a pool; ignored",
                r->index);
        return;
    }
    free(r);
}

int rp_routee_ask(rp_routee *r, rp_job_fn fn, void *arg, int timeout_ms, rp_future **out)
{
    rp__reply reply;
    int64_t deadline;
    int rc;

    if (!out)
        return rp__fail(RP_EINVAL, "rp_routee_ask: out is NULL");
    *out = NULL;
    if (!r || !fn)
        return rp__fail(RP_EINVAL, "rp_routee_ask: %s is NULL", r ? "fn" : "routee");
    if ((rc = rp__ask_timeout(timeout_ms, &deadline, "rp_routee_ask")) < 0 ||
        (rc = rp__ask_begin(r->pool ? r->pool->futures : NULL, r->pool ? &r->pool->timer : NULL,
                            deadline, &reply, out, "rp_routee_ask")) < 0)
        return rc;
    if ((rc = rp__routee_deliver_reply(r, fn, arg, true, &reply)) < 0) {
        if (rc == RP_ESTOPPED && rp__pool_shut(r->pool))
            rc = RP_ESHUTDOWN; /* stopped before the shutdown */
        rp__ask_abort(&reply, out);
        return rp__fail(rc, "rp_routee_ask: routee %d: %s", r->index, rp_strerror(rc));
    }
    return 0;
}
