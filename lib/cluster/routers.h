/* SPDX-License-Identifier: MIT */
/*
 * routers.h - the cluster router's state, shared by the routers' files
 * (routers.c, croute.c, routers_kinds.c, cscatter.c, routers_api.c).
 * Private.  Types only: each file's functions are declared in its own
 * header (croute.h, routers_kinds.h, cscatter.h), and routers.c defines
 * public functions only.
 *
 * A router holds a reference-counted snapshot of the live nodes: the node
 * ids (sorted), one foreign routee per node and a core group router over
 * them.  A call takes a reference for its whole duration (snap_get/put
 * under r->mu), so a membership change that swaps the snapshot never frees
 * routees a concurrent call is using: the old snapshot goes when its last
 * user drops it.
 *
 * Lock order: refresh_mu (one refresh at a time: the refresh connection and
 * the least-used sync), then r->mu (the current snapshot pointer and the
 * reference counts), then the depth cache's lock.  The scatter lock
 * (cscatter.c) is taken alone.  No lock is held while a future completes
 * or a callback of the user runs.
 */
#ifndef RP_CLUSTER_ROUTERS_H
#define RP_CLUSTER_ROUTERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "depth.h"
#include "node.h"
#include "rendezvous.h"
#include "routepool/router.h"
#include "routepool/scatter.h"

typedef struct rp_cluster_router rp_cluster_router;
struct rp__cscatter;

/** One live node as the router's foreign routee sees it. */
typedef struct rp__cnode {
    char id[RP_CLUSTER_ID_MAX + 1];
    rp_cluster_router *r;
    rp_routee *routee;      /* its foreign routee (stopped once it is gone) */
} rp__cnode;

/** The live nodes at one refresh. */
typedef struct rp__csnap {
    int refs;               /* under r->mu; the router holds one */
    size_t n;
    rp__cnode *nodes;       /* sorted by id */
    const char **ids;       /* ids[i] = nodes[i].id (for rendezvous) */
    rp_routee **routees;    /* one foreign routee per node */
    unsigned *weights;      /* WEIGHTED: weights[i] of nodes[i]; else NULL */
    rp_router *router;      /* group router over routees; NULL when n is 0 */
    rp__rendezvous rv;
} rp__csnap;

/** Counters of the router's scatters (rp_scatter_stats' layout). */
typedef struct rp__cscatter_stats {
    _Atomic uint64_t resolved[RP_SCATTER_OUTCOMES];
    _Atomic uint64_t buckets[RP_SCATTER_LATENCY_BUCKETS + 1];
    _Atomic uint64_t latency_count, latency_sum_ns;
} rp__cscatter_stats;

/** A WEIGHTED router's weight of one node id (sorted by id). */
typedef struct rp__cweight {
    char id[RP_CLUSTER_ID_MAX + 1];
    unsigned weight;
} rp__cweight;

struct rp_cluster_router {
    char name[RP_ROUTER_NAME_MAX + 1];
    rp_cluster_node *node;
    rp_cluster_router_kind kind;
    uint64_t seed;
    int refresh_ms;
    int member_timeout_ms;
    double scatter_timeout_ms;
    rp__cweight *weights;       /* WEIGHTED: opts.weights, sorted by id */
    size_t nweights;
    unsigned default_weight;
    rp_cluster_pick_fn pick;    /* CUSTOM */
    void *pick_user;
    char depth_key[RP_CLUSTER_PREFIX_MAX + 8];

    pthread_mutex_t refresh_mu; /* one refresh at a time (conn, lu sync) */
    rp__conn conn;              /* the refresh connection (conn.c) */
    rp__depth_cache cache;
    rp_least_used *lu;          /* LEAST_USED only */
    bool lu_sync;

    pthread_mutex_t mu;         /* cur, refcounts, stop */
    pthread_cond_t cv;          /* wakes the refresh thread to stop */
    rp__csnap *cur;
    bool stop;
    bool thread_started;
    pthread_t thread;

    struct rp__cscatter *open;  /* open scatters (under the scatter lock) */
    rp__cscatter_stats sg;
};

/** A job's route through the core router: what the foreign routee's send
 *  callback does with it.  Lives on the caller's stack for the call. */
enum { RP__COP_TELL, RP__COP_ASK, RP__COP_BATCH, RP__COP_SCATTER };

typedef struct rp__creq {
    int op;
    const char *fn;              /* the public function, for messages */
    const rp__cluster_msg *msgs; /* one (tell, ask, scatter) or n (batch) */
    int timeout_ms;              /* ask */
    rp_future *future;           /* ask: the future made */
    int rc;                      /* first failure (0: none) */
    bool departed;               /* the last send found its node gone */
    bool retry;                  /* route again: the chosen node was gone */
    bool resnap;                 /* route again on the current snapshot */
    size_t sent;                 /* copies stored (tell, broadcast) */
    size_t cur;                  /* the index in msgs of the job routed now */
    const char **targets;        /* batch: targets[k] for batch_msgs[k] */
    rp__cluster_msg *batch_msgs;
    size_t k, cap;               /* batch entries so far, room */
    struct rp__cscatter *sc;     /* scatter */
} rp__creq;

/** The arg of one routed job: its request and its index in a batch. */
typedef struct rp__cjob {
    rp__creq *req;
    size_t i;
} rp__cjob;

#endif /* RP_CLUSTER_ROUTERS_H */
