/* SPDX-License-Identifier: MIT */
/*
 * recover.c - moving a dead node's entries to live members, handing
 * entries back, and the dead-letter stream.
 *
 * A dead node's inbox holds two kinds of entries.  Pending ones (fetched,
 * perhaps running when it died) are claimed with XAUTOCLAIM; XPENDING
 * first gives their delivery counts, which are added to the count the
 * entry carries in its n field (a moved entry starts a fresh pending
 * list, so the count must travel with it).  Unread ones are read through
 * the dead node's group under our own consumer name and moved with their
 * count unchanged: they never ran.  Each move is one script (send.c,
 * rp__move_checked): acknowledge at the source - only if still pending,
 * so two survivors never both move it - delete, add to the live member.
 * A crash can neither lose nor duplicate a move.
 *
 * Poison: an entry whose count reaches max_deliveries goes to
 * "<prefix>:dead" with its fields, its count and its history (the nodes
 * that died holding it) instead of to a member.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "entry.h"
#include "impl.h"
#include "node.h"
#include "recover.h"
#include "send.h"

enum { BATCH = 200 };

static void cmd_free(rp__conn *k, int argc, const char **av)
{
    redisReply *r = rp__conn_cmd(k, argc, av, NULL);
    if (r)
        freeReplyObject(r);
}

static void ack_del(rp__conn *k, const char *inbox, const char *sid)
{
    const char *a[] = {"XACK", inbox, "rp", sid};
    const char *d[] = {"XDEL", inbox, sid};
    cmd_free(k, 4, a);
    cmd_free(k, 3, d);
}

/* hist + "," + id, bounded (older history is dropped first). */
static void history(char *out, size_t cap, rp__bytes old, const char *id)
{
    size_t idl = strlen(id), keep = old.p ? old.len : 0;
    if (keep + idl + 2 > cap)
        keep = cap > idl + 2 ? cap - idl - 2 : 0;
    const char *from = old.p ? old.p + (old.len - keep) : "";
    snprintf(out, cap, "%.*s%s%s", (int)keep, from, keep ? "," : "", id);
}

static rp__script *move_script_for(rp_cluster_node *node, rp__conn *k)
{
    return k == &node->fetchc ? &node->fetch_move_script : &node->hb_move_script;
}

/* e's fields plus n (when not "0") and hist (when not empty). */
static int fields_of(const rp__entry *e, const char *n, const char *hist,
                     const char **av, size_t *al, char bufs[2][24])
{
    int np = rp__entry_fields(e, av, al, bufs);
    if (n[0] != '0') {
        av[2 * np] = "n", al[2 * np] = 1;
        av[2 * np + 1] = n, al[2 * np + 1] = strlen(n);
        np++;
    }
    if (hist[0]) {
        av[2 * np] = "hist", al[2 * np] = 4;
        av[2 * np + 1] = hist, al[2 * np + 1] = strlen(hist);
        np++;
    }
    return np;
}

/* Move pending entry sid of inbox to the dead-letter stream. */
static int to_dead(rp_cluster_node *node, rp__conn *k, const rp__entry *e, const char *n,
                   const char *hist, const char *inbox, const char *sid)
{
    const char *av[32];
    size_t al[32];
    char bufs[2][24];
    int np = fields_of(e, n, hist, av, al, bufs);
    int rc = rp__move_checked(node, k, move_script_for(node, k), NULL, inbox, sid, av, al, np);
    if (rc == 0)
        BUMP(node, dead_lettered);
    return rc;
}

/* Move pending entry sid of inbox to a live member (not exclude); a member
 * that vanished meanwhile is skipped.  As rp__move_checked(). */
static int to_member(rp_cluster_node *node, rp__conn *k, const rp__entry *e, const char *n,
                     const char *hist, const char *exclude, const char *inbox,
                     const char *sid)
{
    const char *av[32];
    size_t al[32];
    char bufs[2][24], target[RP_CLUSTER_ID_MAX + 1];
    int np = fields_of(e, n, hist, av, al, bufs);
    int rc = RP_ENOROUTEE;
    for (int tries = 0; tries < 4 && rc == RP_ENOROUTEE; tries++) {
        if (!rp__pick_member(node, exclude, target, sizeof target))
            break;
        rc = rp__move_checked(node, k, move_script_for(node, k), target, inbox, sid, av, al,
                              np);
    }
    if (rc == 0)
        BUMP(node, added);
    return rc;
}

/* Move one raw entry of inbox; extra: deliveries to add (pending ones). */
static int move_entry(rp_cluster_node *node, rp__conn *k, const char *inbox,
                      const redisReply *raw, long long extra, const char *dead,
                      const char *exclude)
{
    rp__entry e;
    const char *why;
    int rc = rp__entry_decode(raw, RP_CLUSTER_PAYLOAD_MAX, &e, &why);
    if (rc == RP__ENTRY_NOID)
        return 0;
    char sid[48];
    snprintf(sid, sizeof sid, "%.*s", (int)e.sid.len, e.sid.p);
    if (rc != RP__ENTRY_OK) {
        if (rc == RP__ENTRY_MALFORMED)
            BUMP(node, malformed);
        ack_del(k, inbox, sid);
        return 0;
    }
    char n[24], hist[RP__HISTORY_MAX];
    long long deliveries = e.prev_deliveries + extra;
    snprintf(n, sizeof n, "%lld", deliveries);
    if (extra > 0)
        history(hist, sizeof hist, e.hist, dead);
    else
        snprintf(hist, sizeof hist, "%.*s", (int)e.hist.len, e.hist.p ? e.hist.p : "");
    if (deliveries >= (long long)node->max_deliveries)
        rc = to_dead(node, k, &e, n, hist, inbox, sid);
    else
        rc = to_member(node, k, &e, n, hist, exclude, inbox, sid);
    if (rc < 0)
        return rc;
    if (rc == 0 && strcmp(dead, node->id) != 0)
        BUMP(node, claimed);
    return 1;
}

/* XPENDING: delivery count of sid (1 when not listed). */
static long long count_of(const redisReply *p, const char *sid, size_t len)
{
    for (size_t i = 0; p && p->type == REDIS_REPLY_ARRAY && i < p->elements; i++) {
        const redisReply *x = p->element[i];
        if (x && x->type == REDIS_REPLY_ARRAY && x->elements == 4 && x->element[0] &&
            x->element[0]->type == REDIS_REPLY_STRING && x->element[0]->len == len &&
            memcmp(x->element[0]->str, sid, len) == 0 && x->element[3] &&
            x->element[3]->type == REDIS_REPLY_INTEGER && x->element[3]->integer > 0 &&
            x->element[3]->integer < 1000000)
            return x->element[3]->integer;
    }
    return 1;
}

static const char *sid_of(const redisReply *e, size_t *len)
{
    if (!e || e->type != REDIS_REPLY_ARRAY || e->elements < 1 || !e->element[0] ||
        e->element[0]->type != REDIS_REPLY_STRING)
        return NULL;
    *len = e->element[0]->len;
    return e->element[0]->str;
}

/* Claim and move up to BATCH pending entries.  Moved count or < 0. */
static int move_pending(rp_cluster_node *node, rp__conn *k, const char *inbox,
                        const char *dead, const char *exclude)
{
    const char *pav[] = {"XPENDING", inbox, "rp", "-", "+", "200"};
    redisReply *p = rp__conn_cmd(k, 6, pav, NULL);
    if (!p)
        return RP_EUNAVAILABLE;
    const char *cav[] = {"XAUTOCLAIM", inbox, "rp", node->id, "0", "0-0", "COUNT", "200"};
    redisReply *c = p->type == REDIS_REPLY_ARRAY && p->elements ? rp__conn_cmd(k, 8, cav, NULL)
                                                                 : NULL;
    const redisReply *entries = NULL;
    rp__bytes cursor;
    int moved = 0;
    if (c && rp__autoclaim_entries(c, &cursor, &entries) == 0) {
        for (size_t i = 0; i < entries->elements && moved >= 0; i++) {
            size_t sl = 0;
            const char *sid = sid_of(entries->element[i], &sl);
            int rc = move_entry(node, k, inbox, entries->element[i],
                                sid ? count_of(p, sid, sl) : 1, dead, exclude);
            moved = rc < 0 ? rc : moved + rc;
        }
    }
    freeReplyObject(p);
    if (c)
        freeReplyObject(c);
    return moved;
}

/* Read up to BATCH unread entries under our consumer name and move them. */
static int move_unread(rp_cluster_node *node, rp__conn *k, const char *inbox,
                       const char *dead, const char *exclude)
{
    char probe[RP_CLUSTER_ID_MAX + 1];
    if (!rp__pick_member(node, exclude, probe, sizeof probe))
        return 0; /* nobody to move to: leave them unread */
    const char *av[] = {"XREADGROUP", "GROUP", "rp", node->id, "COUNT", "200",
                        "STREAMS", inbox, ">"};
    redisReply *r = rp__conn_cmd(k, 9, av, NULL);
    if (!r)
        return RP_EUNAVAILABLE;
    const redisReply *entries = NULL;
    int moved = 0;
    if (rp__read_entries(r, &entries) == 0 && entries)
        for (size_t i = 0; i < entries->elements && moved >= 0; i++) {
            int rc = move_entry(node, k, inbox, entries->element[i], 0, dead, exclude);
            moved = rc < 0 ? rc : moved + rc;
        }
    freeReplyObject(r);
    return moved;
}

int rp__recover(rp_cluster_node *node, rp__conn *k, const char *dead_id,
                const char *exclude, int budget, bool unread)
{
    char *inbox = rp__key(node, "inbox", dead_id);
    if (!inbox)
        return RP_ENOMEM;
    int total = 0, rc = 1;
    while (total < budget && rc > 0) {
        rc = move_pending(node, k, inbox, dead_id, exclude);
        if (rc == 0 && unread)
            rc = move_unread(node, k, inbox, dead_id, exclude);
        if (rc > 0)
            total += rc;
    }
    free(inbox);
    return rc < 0 && total == 0 ? rc : total;
}

int rp__requeue_job(rp_cluster_node *node, rp__conn *k, rp_cluster_job *j)
{
    rp__entry e = {0};
    e.id = (rp__bytes){j->id, j->id_len};
    e.h = (rp__bytes){j->h, j->h_len};
    e.p = (rp__bytes){j->p, j->p_len};
    e.k = (rp__bytes){j->k, j->k_len};
    e.o = (rp__bytes){j->o, j->o_len};
    e.r = (rp__bytes){j->r, j->r_len};
    e.hist = (rp__bytes){j->hist, j->hist_len};
    e.corr = j->corr;
    e.deadline_ms = j->deadline_ms;
    e.is_ask = j->r != NULL;
    char n[24], hist[RP__HISTORY_MAX];
    snprintf(n, sizeof n, "%u", j->deliveries - 1);
    snprintf(hist, sizeof hist, "%.*s", (int)j->hist_len, j->hist ? j->hist : "");
    int rc = to_member(node, k, &e, n, hist, node->id, node->k_inbox, j->sid);
    if (rc == RP_ENOROUTEE) /* no other member: back into our own inbox */
        rc = to_member(node, k, &e, n, hist, NULL, node->k_inbox, j->sid);
    return rc < 0 ? rc : 0;
}
