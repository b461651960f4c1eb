/* SPDX-License-Identifier: MIT */
/*
 * fetch.c - a member's fetch thread, its jobs, handlers, acknowledgements.
 *
 * Bounded prefetch: the fetch thread asks XREADGROUP for exactly the free
 * slots (max_inflight minus the entries fetched and not finished), so the
 * backlog stays in Redis where a survivor can claim it.  With no free
 * slot it sleeps on the node's condition variable until a job finishes.
 * Finished entries are acknowledged in batches: one XACK and one XDEL for
 * every id collected, pipelined with a later XREADGROUP (one round
 * trip; the read right after a dispatch holds them back, see
 * ACK_HOLD_MAX), written in RESP directly (resp.h).  A read blocks 100 ms on an
 * empty inbox only when nothing is in flight; while jobs run it blocks
 * briefly (1 ms, doubling while reads come back empty: see BLOCK_IDLE_MS),
 * so the last entries of a burst are acknowledged about when they ran,
 * not one 100 ms read later, and the acknowledgements of jobs that finish
 * while entries keep coming still ride the reads.  Ids whose
 * acknowledgement could not be sent (Redis down) stay on the list and go
 * with the next batch.
 *
 * A job runs only if the node is not leaving when a routee reaches it;
 * otherwise it goes to the handback list and rp_cluster_leave() moves it
 * to a live member, unrun.  An entry that cannot be decoded is
 * acknowledged (so it never comes back), counted as malformed and logged
 * without its bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "entry.h"
#include "fetch.h"
#include "impl.h"
#include "inbox.h"
#include "node.h"
#include "recover.h"
#include "resp.h"
#include "send.h"
#include "util.h"

/* ---- handlers ---- */

int rp_cluster_handle(rp_cluster_node *node, const char *name,
                      rp_cluster_handler_fn fn, void *user)
{
    if (!node || !name || !fn || !node->pool)
        return rp_error_set(RP_EINVAL, "rp_cluster_handle: %s",
                            !node ? "node is NULL" : !name ? "name is NULL"
                            : !fn ? "fn is NULL" : "node is client-only");
    if (!rp__valid_name(name, strlen(name), RP_CLUSTER_HANDLER_MAX))
        return rp_error_set(RP_EINVAL, "rp_cluster_handle: name must be 1..%u printable bytes",
                            RP_CLUSTER_HANDLER_MAX);
    pthread_rwlock_wrlock(&node->hlock);
    for (size_t i = 0; i < node->nhandlers; i++) {
        if (strcmp(node->handlers[i].name, name) == 0) {
            node->handlers[i].fn = fn;
            node->handlers[i].user = user;
            pthread_rwlock_unlock(&node->hlock);
            return 0;
        }
    }
    handler_entry *h = realloc(node->handlers, (node->nhandlers + 1) * sizeof *h);
    char *copy = strdup(name);
    if (!h || !copy) {
        if (h)
            node->handlers = h;
        free(copy);
        pthread_rwlock_unlock(&node->hlock);
        return rp_error_set(RP_ENOMEM, "rp_cluster_handle: out of memory");
    }
    node->handlers = h;
    h[node->nhandlers++] = (handler_entry){copy, fn, user};
    pthread_rwlock_unlock(&node->hlock);
    return 0;
}

static bool find_handler(rp_cluster_node *node, const char *name, handler_entry *out)
{
    bool ok = false;
    pthread_rwlock_rdlock(&node->hlock);
    for (size_t i = 0; i < node->nhandlers && !ok; i++)
        if (strcmp(node->handlers[i].name, name) == 0) {
            *out = node->handlers[i];
            ok = true;
        }
    pthread_rwlock_unlock(&node->hlock);
    return ok;
}

/* ---- job records ---- */

void rp__job_free(rp_cluster_job *j)
{
    if (!j)
        return;
    free(j->sid);
    free(j);
}

static char *dup_bytes(rp__bytes b, size_t *len)
{
    char *p = malloc(b.len + 1);
    if (p) {
        if (b.len)
            memcpy(p, b.p, b.len);
        p[b.len] = '\0';
    }
    if (len)
        *len = b.len;
    return p;
}

/* Copy b NUL-terminated to *at (advancing it); NULL when b is absent. */
static char *pack(char **at, rp__bytes b, size_t *len)
{
    *len = b.len;
    if (!b.p)
        return NULL;
    char *p = *at;
    if (b.len)
        memcpy(p, b.p, b.len);
    p[b.len] = '\0';
    *at += b.len + 1;
    return p;
}

/* One allocation holds the record and its fields' copies (the reply they
 * came from is freed at once); the stream id is its own, since the
 * acknowledgement list takes it over when the job is done. */
static rp_cluster_job *job_from(rp_cluster_node *node, const rp__entry *e)
{
    size_t n = sizeof(rp_cluster_job) + e->id.len + e->h.len + e->p.len + e->k.len +
               e->r.len + e->o.len + e->hist.len + 7;
    rp_cluster_job *j = calloc(1, n);
    if (!j)
        return NULL;
    char *at = (char *)(j + 1);
    j->node = node;
    j->id = pack(&at, e->id, &j->id_len);
    j->h = pack(&at, e->h, &j->h_len);
    j->p = pack(&at, e->p, &j->p_len);
    j->k = pack(&at, e->k, &j->k_len);
    j->r = pack(&at, e->r, &j->r_len);
    j->o = pack(&at, e->o, &j->o_len);
    j->hist = pack(&at, e->hist, &j->hist_len);
    j->corr = e->corr;
    j->deadline_ms = e->deadline_ms;
    j->deliveries = (unsigned)e->prev_deliveries + 1;
    if (!(j->sid = dup_bytes(e->sid, NULL))) {
        free(j);
        return NULL;
    }
    return j;
}

/* ---- acknowledgements ---- */

/* Under node->lock. */
static void push_ack_locked(rp_cluster_node *node, char *sid)
{
    if (node->nacks == node->cap_acks) {
        size_t cap = node->cap_acks ? node->cap_acks * 2 : 64;
        char **a = realloc(node->acks, cap * sizeof *a);
        if (!a) {
            /* Unacknowledged, the entry stays pending: a later recovery
             * delivers it again (a duplicate, never a loss). */
            free(sid);
            return;
        }
        node->acks = a;
        node->cap_acks = cap;
    }
    if (node->nacks == 0)
        node->acks_since_ms = rp__mono_ms();
    node->acks[node->nacks++] = sid;
}

/* Add stream id sid (malloc'd; the list takes it) to the acknowledgements
 * to send.  Out of memory, sid is freed and the entry stays pending (a
 * later recovery delivers it again). */
static void push_ack(rp_cluster_node *node, char *sid)
{
    pthread_mutex_lock(&node->lock);
    push_ack_locked(node, sid);
    pthread_mutex_unlock(&node->lock);
}

/* Under node->lock: takes the list; returns its length. */
static size_t take_acks_locked(rp_cluster_node *node, char ***ids)
{
    size_t n = node->nacks;
    *ids = node->acks;
    node->acks = NULL;
    node->nacks = node->cap_acks = 0;
    return n;
}

/* Write XACK and XDEL for ids[0..n) (XACK key group id..., XDEL key id...). */
static void put_acks(rp_cluster_node *node, rp__resp *b, char **ids, size_t n)
{
    rp__resp_cmd(b, n + 3);
    rp__resp_arg(b, "XACK", 4);
    rp__resp_str(b, node->k_inbox);
    rp__resp_arg(b, "rp", 2);
    for (size_t i = 0; i < n; i++)
        rp__resp_str(b, ids[i]);
    rp__resp_cmd(b, n + 2);
    rp__resp_arg(b, "XDEL", 4);
    rp__resp_str(b, node->k_inbox);
    for (size_t i = 0; i < n; i++)
        rp__resp_str(b, ids[i]);
}

static void give_back_acks(rp_cluster_node *node, char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        push_ack(node, ids[i]);
    free(ids);
}

static void free_ids(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* Read the two replies of a pipelined XACK + XDEL; false when the
 * connection broke (the ids then go back on the list). */
static bool ack_replies(rp_cluster_node *node, rp__conn *k)
{
    redisReply *a = rp__conn_get_reply(k);
    redisReply *d = a ? rp__conn_get_reply(k) : NULL;
    if (a && a->type == REDIS_REPLY_INTEGER)
        BUMPN(node, acked, (uint64_t)a->integer);
    bool ok = a && d;
    if (a)
        freeReplyObject(a);
    if (d)
        freeReplyObject(d);
    return ok;
}

/* One round trip: XACK + XDEL of ids on k; false when they could not be
 * sent (the buffer is queued whole or not at all) or answered. */
static bool send_acks(rp_cluster_node *node, rp__conn *k, char **ids, size_t n)
{
    rp__resp b;
    rp__resp_init(&b);
    put_acks(node, &b, ids, n);
    int rc = rp__resp_send(k, &b);
    rp__resp_free(&b);
    return rc == 0 && ack_replies(node, k);
}

void rp__flush_acks(rp_cluster_node *node, rp__conn *k)
{
    char **ids;
    pthread_mutex_lock(&node->lock);
    size_t n = take_acks_locked(node, &ids);
    pthread_mutex_unlock(&node->lock);
    if (n == 0) {
        free(ids);
        return;
    }
    if (!send_acks(node, k, ids, n))
        give_back_acks(node, ids, n);
    else
        free_ids(ids, n);
}

/* ---- running a job ---- */

/* Free slots the fetch thread waits for once the node is full. */
static unsigned refill_of(const rp_cluster_node *node)
{
    return node->max_inflight / 4 ? node->max_inflight / 4 : 1;
}

/* ---- the live list: every fetched entry not finished nor handed back is
 * on it, so re-reading our own pending list (after a reconnect) can tell
 * the entries we hold from those whose delivery never reached us.  All
 * under node->lock. ---- */

static void live_link(rp_cluster_node *node, rp_cluster_job *j)
{
    j->lprev = NULL;
    j->lnext = node->live_jobs;
    if (node->live_jobs)
        node->live_jobs->lprev = j;
    node->live_jobs = j;
}

static void live_unlink(rp_cluster_node *node, rp_cluster_job *j)
{
    if (j->lprev)
        j->lprev->lnext = j->lnext;
    else
        node->live_jobs = j->lnext;
    if (j->lnext)
        j->lnext->lprev = j->lprev;
}

/* Under node->lock: true when sid is an entry this node holds. */
static bool holds(const rp_cluster_node *node, const char *sid, size_t len)
{
    for (const rp_cluster_job *j = node->live_jobs; j; j = j->lnext)
        if (strlen(j->sid) == len && memcmp(j->sid, sid, len) == 0)
            return true;
    for (const rp_cluster_job *j = node->handback; j; j = j->next)
        if (strlen(j->sid) == len && memcmp(j->sid, sid, len) == 0)
            return true;
    for (size_t i = 0; i < node->nacks; i++)
        if (strlen(node->acks[i]) == len && memcmp(node->acks[i], sid, len) == 0)
            return true;
    return false;
}

/* The record goes as the acknowledgement takes its place: at no moment is
 * a held entry on neither list. */
static void finish(rp_cluster_node *node, rp_cluster_job *j, bool ack)
{
    pthread_mutex_lock(&node->lock);
    live_unlink(node, j);
    if (ack) {
        push_ack_locked(node, j->sid);
        j->sid = NULL;
    }
    node->inflight--;
    /* Wake the fetch thread only when it can act (a refill's worth is
     * free, see wait_slots()) and a leave when nothing is in flight: a
     * wake-up per job would cost a futex call and a context switch each. */
    if (node->inflight == 0 || node->inflight + refill_of(node) == node->max_inflight)
        pthread_cond_broadcast(&node->cond);
    pthread_mutex_unlock(&node->lock);
    rp__job_free(j);
}

static void answer(rp_cluster_job *j, int code, const char *msg)
{
    if (j->r && !j->answered) {
        j->answered = true;
        rp__send_reply(j->node, j->r, j->r_len, j->corr, code, -1, msg, NULL, 0);
    }
}

static void run_job(rp_job_ctx *ctx, void *arg)
{
    rp_cluster_job *j = arg;
    rp_cluster_node *node = j->node;
    handler_entry h;
    if (atomic_load_explicit(&node->leaving, memory_order_acquire)) {
        pthread_mutex_lock(&node->lock);
        live_unlink(node, j);
        j->next = node->handback;
        node->handback = j;
        node->inflight--;
        pthread_cond_broadcast(&node->cond);
        pthread_mutex_unlock(&node->lock);
        return;
    }
    j->ctx = ctx;
    if (j->deliveries > 1)
        BUMP(node, duplicates);
    if (j->r && j->deadline_ms && rp__server_now_ms(node) > j->deadline_ms) {
        BUMP(node, expired);
    } else if (!find_handler(node, j->h, &h)) {
        BUMP(node, no_handler);
        rp__node_logf(node, RP_LOG_WARN, "job %s: no handler \"%s\"", j->id, j->h);
        answer(j, RP_ENOHANDLER, "no handler registered under that name");
    } else {
        h.fn(j, h.user);
        if (j->failed)
            BUMP(node, failed);
        answer(j, RP_ENOREPLY, "handler returned without replying to its ask");
    }
    finish(node, j, true);
}

/* ---- fetching ---- */

static void malformed(rp_cluster_node *node, const rp__entry *e, const char *why)
{
    BUMP(node, malformed);
    rp__node_logf(node, RP_LOG_WARN, "malformed entry %.*s in %s: %s",
                  (int)(e->sid.p ? e->sid.len : 1), e->sid.p ? e->sid.p : "?",
                  node->k_inbox, why);
}

static void ack_sid(rp_cluster_node *node, rp__bytes sid)
{
    char *s = dup_bytes(sid, NULL);
    if (s)
        push_ack(node, s);
}

static void dispatch(rp_cluster_node *node, const redisReply *raw)
{
    rp__entry e;
    const char *why;
    int rc = rp__entry_decode(raw, node->max_payload, &e, &why);
    BUMP(node, fetched);
    if (rc == RP__ENTRY_NOID) {
        malformed(node, &e, why);
        return;
    }
    if (rc != RP__ENTRY_OK) {
        if (rc == RP__ENTRY_MALFORMED)
            malformed(node, &e, why);
        ack_sid(node, e.sid);
        return;
    }
    rp_cluster_job *j = job_from(node, &e);
    if (!j)
        return; /* stays pending: delivered again after a recovery */
    pthread_mutex_lock(&node->lock);
    live_link(node, j);
    node->inflight++;
    pthread_mutex_unlock(&node->lock);
    size_t klen = 0;
    const void *key = rp_cluster_job_key(j, &klen);
    /* A key's entries run on one routee in inbox order (impl.h, keyed). */
    int src = key && klen ? rp_router_tell_key(node->keyed, key, klen, run_job, j)
                          : rp_pool_submit(node->pool, run_job, j);
    if (src < 0) {
        /* The pool refused (full, shut down): hand it back for others. */
        pthread_mutex_lock(&node->lock);
        live_unlink(node, j);
        j->next = node->handback;
        node->handback = j;
        node->inflight--;
        pthread_mutex_unlock(&node->lock);
    }
}

/* Wait for free slots (or stop); returns the free slots, 0 to stop.  Once
 * full it waits for a quarter of max_inflight to free up, so a busy node
 * fetches (and acknowledges) in batches instead of one entry per job. */
static unsigned wait_slots(rp_cluster_node *node)
{
    unsigned free_slots = 0, refill = refill_of(node);
    pthread_mutex_lock(&node->lock);
    while (!node->stopping) {
        if (node->started && node->inflight + refill <= node->max_inflight && !node->handback) {
            free_slots = node->max_inflight - node->inflight;
            break;
        }
        if (node->handback && node->started) {
            /* Refused by the pool: requeue them unrun, then continue. */
            rp_cluster_job *j = node->handback;
            node->handback = NULL;
            pthread_mutex_unlock(&node->lock);
            while (j) {
                rp_cluster_job *next = j->next;
                rp__requeue_job(node, &node->fetchc, j);
                rp__job_free(j);
                j = next;
            }
            pthread_mutex_lock(&node->lock);
            continue;
        }
        pthread_cond_wait(&node->cond, &node->lock);
    }
    pthread_mutex_unlock(&node->lock);
    return free_slots;
}

static bool is_nogroup(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR && r->str && strncmp(r->str, "NOGROUP", 7) == 0;
}

static void handle_read(rp_cluster_node *node, redisReply *r)
{
    const redisReply *entries;
    if (is_nogroup(r)) {
        /* The inbox was deleted (FLUSHALL, a restart without persistence):
         * make the group again; entries already there are read from 0. */
        rp__node_logf(node, RP_LOG_WARN, "NOGROUP on %s: re-creating the group", node->k_inbox);
        rp__ensure_group(node, &node->fetchc);
        return;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        rp__node_logf(node, RP_LOG_WARN, "XREADGROUP: %.200s", r->str ? r->str : "?");
        rp__sleep_ms(100);
        return;
    }
    if (rp__read_entries(r, &entries) < 0) {
        BUMP(node, malformed);
        rp__node_logf(node, RP_LOG_WARN, "XREADGROUP reply of an unexpected shape");
        return;
    }
    for (size_t i = 0; entries && i < entries->elements; i++)
        dispatch(node, entries->element[i]);
}

/* One page of our own pending list from after id from (ids and fields):
 * dispatch what we do not hold.  Returns the entries read, or -1; *last
 * receives the page's last id. */
static int reread_page(rp_cluster_node *node, const char *from, char *last, size_t cap)
{
    const char *av[] = {"XREADGROUP", "GROUP", "rp", node->id, "COUNT", "500",
                        "STREAMS", node->k_inbox, from};
    redisReply *r = rp__conn_cmd(&node->fetchc, 9, av, NULL);
    const redisReply *entries = NULL;
    int n = -1;
    if (r && rp__read_entries(r, &entries) == 0) {
        n = entries ? (int)entries->elements : 0;
        for (int i = 0; i < n; i++) {
            const redisReply *e = entries->element[i];
            if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !e->element[0] ||
                e->element[0]->type != REDIS_REPLY_STRING || e->element[0]->len >= cap)
                continue;
            snprintf(last, cap, "%s", e->element[0]->str);
            pthread_mutex_lock(&node->lock);
            bool held = holds(node, e->element[0]->str, e->element[0]->len);
            pthread_mutex_unlock(&node->lock);
            if (!held)
                dispatch(node, e);
        }
    }
    if (r)
        freeReplyObject(r);
    return n;
}

/* After (re)connecting: entries of our pending list that we do not hold
 * were delivered by an XREADGROUP whose reply was lost (Redis died between
 * running it and answering).  Nobody else would ever run them while this
 * node lives, so they are dispatched now.  Acknowledgements go first, so
 * a finished entry is on the ack list only if it finished since. */
static void reread_own(rp_cluster_node *node)
{
    char from[48] = "0";
    rp__flush_acks(node, &node->fetchc);
    while (reread_page(node, from, from, sizeof from) == 500) {
    }
}

/* How long a read may block, ms.  With nothing in flight, the idle wait
 * (nothing will need acknowledging before an entry arrives).  With jobs in
 * flight their acknowledgements wait for the next read, so that read
 * blocks only busy_ms: from BLOCK_BUSY_MIN_MS at the start of a burst,
 * doubled each time a read came back with nothing (the jobs are slow: a
 * slow job's acknowledgement may wait longer, and a node running them
 * reads about as often as they finish), up to the idle wait. */
enum { BLOCK_IDLE_MS = 100, BLOCK_BUSY_MIN_MS = 1 };

/* XREADGROUP GROUP rp <id> COUNT <slots> BLOCK <ms> STREAMS <inbox> > */
static void put_read(rp_cluster_node *node, rp__resp *b, unsigned slots, unsigned block_ms)
{
    char count[20], block[20];
    rp__resp_cmd(b, 11);
    rp__resp_arg(b, "XREADGROUP", 10);
    rp__resp_arg(b, "GROUP", 5);
    rp__resp_arg(b, "rp", 2);
    rp__resp_str(b, node->id);
    rp__resp_arg(b, "COUNT", 5);
    rp__resp_arg(b, count, rp__u64_digits(count, slots));
    rp__resp_arg(b, "BLOCK", 5);
    rp__resp_arg(b, block, rp__u64_digits(block, block_ms));
    rp__resp_arg(b, "STREAMS", 7);
    rp__resp_str(b, node->k_inbox);
    rp__resp_arg(b, ">", 1);
}

/* The entries a read reply carries (0 for nil, an error, a bad shape). */
static size_t entries_in(const redisReply *r)
{
    const redisReply *e;
    return r->type == REDIS_REPLY_ARRAY && rp__read_entries(r, &e) == 0 && e ? e->elements : 0;
}

/*
 * Acknowledgements held back from the read that follows a dispatch.  That
 * read goes out while the jobs just handed to the pool start; an XACK +
 * XDEL on it makes Redis answer them at once and wakes the fetch thread to
 * read the answers, both on the CPUs the routees and Redis need for the
 * jobs (an ask's reply queued behind them: 16-19 µs of a 175-250 µs round
 * trip, bench/ask-ab, docs/cluster.md "Performance").  So that read carries
 * them only once ACK_HOLD_MAX are waiting or the oldest waited
 * ACK_HOLD_MS; every other read (after an empty one, with nothing in
 * flight) carries all.  An entry is thus acknowledged at most ACK_HOLD_MS
 * plus one read after its job ran, and at most ACK_HOLD_MAX more ran
 * entries are delivered again after a crash (at-least-once, counted as
 * duplicates).
 */
enum { ACK_HOLD_MAX = 64, ACK_HOLD_MS = 5 };

/* Under node->lock: whether the acks wait for a later read. */
static bool hold_acks_locked(const rp_cluster_node *node, bool after_entries)
{
    return after_entries && node->inflight > 0 && node->nacks > 0 &&
           node->nacks < ACK_HOLD_MAX && rp__mono_ms() - node->acks_since_ms < ACK_HOLD_MS;
}

/* What the fetch loop carries from one read to the next. */
typedef struct fetch_state {
    unsigned busy_ms;   /* the busy block time, see BLOCK_IDLE_MS */
    bool after_entries; /* the previous read brought entries: see ACK_HOLD_MAX */
} fetch_state;

/* One round trip: XACK + XDEL of what finished so far (unless held, see
 * ACK_HOLD_MAX), then XREADGROUP. */
static void fetch_once(rp_cluster_node *node, unsigned slots, fetch_state *st)
{
    bool was_up = node->fetchc.c != NULL;
    if (rp__conn_ensure(&node->fetchc) < 0) {
        rp__sleep_ms(50);
        return;
    }
    if (!was_up)
        reread_own(node);
    char **ids = NULL;
    size_t n = 0;
    pthread_mutex_lock(&node->lock);
    if (!hold_acks_locked(node, st->after_entries))
        n = take_acks_locked(node, &ids);
    bool busy = node->inflight > 0;
    pthread_mutex_unlock(&node->lock);
    if (!busy)
        st->busy_ms = BLOCK_BUSY_MIN_MS; /* the next jobs start a burst */
    rp__resp b;
    rp__resp_init(&b);
    if (n)
        put_acks(node, &b, ids, n);
    put_read(node, &b, slots, busy ? st->busy_ms : BLOCK_IDLE_MS);
    int rc = rp__resp_send(&node->fetchc, &b);
    rp__resp_free(&b);
    bool ok = rc == 0 && (!n || ack_replies(node, &node->fetchc));
    if (n && !ok)
        give_back_acks(node, ids, n);
    else if (n)
        free_ids(ids, n);
    redisReply *r = ok ? rp__conn_get_reply(&node->fetchc) : NULL;
    if (!r) {
        rp__conn_drop(&node->fetchc);
        rp__sleep_ms(50);
        return;
    }
    size_t got = entries_in(r);
    if (busy && !n && got == 0)
        st->busy_ms = st->busy_ms * 2 < BLOCK_IDLE_MS ? st->busy_ms * 2 : BLOCK_IDLE_MS;
    st->after_entries = got > 0;
    handle_read(node, r);
    freeReplyObject(r);
}

void *rp__fetch_main(void *arg)
{
    rp_cluster_node *node = arg;
    fetch_state st = {BLOCK_BUSY_MIN_MS, false};
    unsigned slots;
    while ((slots = wait_slots(node)) > 0)
        fetch_once(node, slots, &st);
    if (rp__conn_ensure(&node->fetchc) == 0)
        rp__flush_acks(node, &node->fetchc);
    return NULL;
}

/* ---- the handler's view ---- */

const void *rp_cluster_job_payload(const rp_cluster_job *job, size_t *len)
{
    if (len)
        *len = job ? job->p_len : 0;
    return job ? job->p : NULL;
}

const char *rp_cluster_job_id(const rp_cluster_job *job)
{
    return job ? job->id : NULL;
}

const char *rp_cluster_job_handler(const rp_cluster_job *job)
{
    return job ? job->h : NULL;
}

const void *rp_cluster_job_key(const rp_cluster_job *job, size_t *len)
{
    if (len)
        *len = job && job->k ? job->k_len : 0;
    return job ? job->k : NULL;
}

unsigned rp_cluster_job_deliveries(const rp_cluster_job *job)
{
    return job ? job->deliveries : 0;
}

bool rp_cluster_job_duplicate(const rp_cluster_job *job)
{
    return job && job->deliveries > 1;
}

bool rp_cluster_job_is_ask(const rp_cluster_job *job)
{
    return job && job->r != NULL;
}

rp_job_ctx *rp_cluster_job_ctx(rp_cluster_job *job)
{
    return job ? job->ctx : NULL;
}

int rp_cluster_job_reply(rp_cluster_job *job, const void *data, size_t len)
{
    if (!job || !job->r || job->answered || (len && !data) || len > job->node->max_payload)
        return rp_error_set(RP_EINVAL, "rp_cluster_job_reply: %s",
                            !job ? "job is NULL" : !job->r ? "the job is a tell, not an ask"
                            : job->answered ? "the ask was already answered"
                            : len && !data ? "data is NULL" : "len is over max_payload");
    job->answered = true;
    return rp__send_reply(job->node, job->r, job->r_len, job->corr, 0,
                          job->ctx ? rp_job_routee(job->ctx) : -1, NULL, data, len);
}

int rp_cluster_job_fail(rp_cluster_job *job, int code, const char *message)
{
    if (!job || job->answered || job->failed)
        return rp_error_set(RP_EINVAL, "rp_cluster_job_fail: %s",
                            !job ? "job is NULL" : "the job was already answered");
    job->failed = true;
    if (!job->r)
        return 0;
    job->answered = true;
    return rp__send_reply(job->node, job->r, job->r_len, job->corr, code >= 0 ? RP_EINVAL : code,
                          job->ctx ? rp_job_routee(job->ctx) : -1, message, NULL, 0);
}
