/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/impl.h - the node's state, shared by the node's own files
 * (node.c, join.c, inbox.c, fetch.c, send.c, heartbeat.c, recover.c,
 * deadletter.c, stats.c): the node and job records and the counters'
 * macros.  Private; the rest of the cluster library uses node.h.  It
 * declares no function: each file's functions are in its own header
 * (node.h, join.h, fetch.h, send.h, heartbeat.h, recover.h, inbox.h),
 * and a file includes the headers of the files it calls.
 *
 * Threads of a member node: the fetch thread (its own connection: reads
 * the inbox, acknowledges), the heartbeat thread (its own connection:
 * depth report, membership, dead-node recovery, ask sweep), the reply
 * thread (its own connection: BLPOP of the node's reply list), and the
 * callers and routees that send (one shared send connection under
 * send_lock).  A client-only node has no fetch thread.
 *
 * Lock order: lock before send_lock; ask_lock, hlock and lst_lock are
 * leaves (nothing is taken while holding them).  No user code (handlers)
 * and no future completion runs under any of them.
 */
#ifndef RP_CLUSTER_IMPL_H
#define RP_CLUSTER_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "node.h"

typedef struct handler_entry {
    char *name;
    rp_cluster_handler_fn fn;
    void *user;
} handler_entry;

/* A fetched entry on its way through the pool.  Owns copies of the
 * entry's fields (the reply they came from is freed at once). */
struct rp_cluster_job {
    rp_cluster_node *node;
    rp_job_ctx *ctx;
    char *sid;
    char *id, *h, *p, *k, *r, *o, *hist;
    size_t id_len, h_len, p_len, k_len, r_len, o_len, hist_len;
    uint64_t corr;
    int64_t deadline_ms;
    unsigned deliveries;
    bool answered;
    bool failed;
    struct rp_cluster_job *next;   /* handback list */
    struct rp_cluster_job *lprev, *lnext; /* the node's live list */
};

typedef struct pending_ask {
    uint64_t corr;
    rp_future *f;                  /* the completer's reference */
    int64_t sent_us;
    struct pending_ask *next;
} pending_ask;

#define ASK_BUCKETS 256
#define MAX_LISTENERS 8

typedef struct listener {
    rp__cluster_members_fn fn;
    void *user;
} listener;

/* A copy of the last membership read, for choosing targets. */
typedef struct members {
    char **ids;
    size_t n;
} members;

struct rp_cluster_node {
    rp__cluster_settings set;
    char *prefix;
    char id[RP_CLUSTER_ID_MAX + 1];
    char token[40];
    rp_pool *pool;
    rp_pool *own_pool;
    /* Keyed entries go through a consistent-hash router on the pool, so a
     * key's jobs run on one routee in inbox order (pinned, never stolen). */
    rp_router *keyed;
    int heartbeat_ms, dead_after_ms;
    unsigned max_deliveries, max_inflight;
    size_t max_payload;
    rp_log_fn log;
    void *log_user;
    char *k_inbox, *k_depth, *k_lease, *k_nodes, *k_reply, *k_dead;

    struct {
#define RP__CLUSTER_ATOMIC(name, help) _Atomic uint64_t name;
        RP_CLUSTER_COUNTER_LIST(RP__CLUSTER_ATOMIC)
#undef RP__CLUSTER_ATOMIC
    } c;
    _Atomic uint64_t rtt[RP_CLUSTER_RTT_BUCKETS];
    _Atomic uint64_t rtt_count, rtt_sum_us;
    _Atomic int64_t last_report_mono;      /* -1: never */
    _Atomic int64_t server_offset_ms;      /* server ms - monotonic ms */
    _Atomic uint64_t seq;                  /* job ids */
    _Atomic uint64_t next_corr;

    pthread_rwlock_t hlock;
    handler_entry *handlers;
    size_t nhandlers;

    pthread_mutex_t send_lock;
    rp__conn sendc;
    rp__script fetch_move_script, hb_move_script;

    /* fetch side: lock + cond guard everything down to handback */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned inflight;
    bool started, stopping;
    _Atomic bool leaving;
    char **acks;
    size_t nacks, cap_acks;
    int64_t acks_since_ms;         /* when acks[0] was pushed (mono ms) */
    rp_cluster_job *handback;
    rp_cluster_job *live_jobs;     /* fetched, in the pool (not handed back) */
    pthread_t fetch_thr;
    bool fetch_running;
    rp__conn fetchc;

    /* heartbeat */
    pthread_t hb_thr;
    bool hb_running;
    rp__conn hbc;
    rp__script report_script, cleanup_script, lock_script;
    pthread_mutex_t hb_lock;
    pthread_cond_t hb_cond;
    bool hb_stop;
    int64_t hb_up_since;                   /* grace before declaring deaths */
    members live;                          /* guarded by lst_lock */
    size_t rr;                             /* recovery target rotation */

    pthread_mutex_t lst_lock;
    listener listeners[MAX_LISTENERS];
    bool lst_busy;                         /* a tick is calling listeners */
    pthread_cond_t lst_cond;

    /* replies */
    pthread_t reply_thr;
    bool reply_running;
    _Atomic bool reply_stop;
    rp__conn replyc;
    pthread_mutex_t ask_lock;
    pending_ask *asks[ASK_BUCKETS];
};

#define BUMP(node, name) \
    atomic_fetch_add_explicit(&(node)->c.name, 1, memory_order_relaxed)
#define BUMPN(node, name, n) \
    atomic_fetch_add_explicit(&(node)->c.name, (n), memory_order_relaxed)

#endif /* RP_CLUSTER_IMPL_H */
