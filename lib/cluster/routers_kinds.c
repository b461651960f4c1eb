/* SPDX-License-Identifier: MIT */
/*
 * routers_kinds.c - the WEIGHTED and CUSTOM cluster router kinds.
 *
 * WEIGHTED is the core's weighted strategy (rp_strategy_weighted) over the
 * snapshot's foreign routees: each snapshot gets one weight per live node,
 * looked up by id in the router's sorted copy of opts.weights, the default
 * weight for an id not listed.  So the weights follow membership without a
 * lock: a node that joins gets its weight in the next snapshot, a node
 * that goes takes its weight with it.  A snapshot whose nodes all weigh 0
 * cannot be given to the core (it refuses all-zero weights), so it routes
 * with a strategy that chooses nothing and says why.
 *
 * CUSTOM wraps the user's rp_cluster_pick_fn in a custom strategy: the
 * wrapper lists the live (not stopped) nodes' ids, calls the user with the
 * job the calling thread is routing (rp__creq_current(): the request, and
 * cur, its index in a batch) and maps the answer back to a routee index.
 * An answer out of range is recorded in the request (RP_EINVAL, or
 * RP_ENOROUTEE for a refusal) and no node is chosen, so nothing is sent.
 * No lock is held around the call: the snapshot is reference-counted, not
 * locked, while a call routes through it.
 */
#include <stdlib.h>
#include <string.h>

#include "croute.h"
#include "routers_kinds.h"
#include "util.h"

/* Ids listed on the stack for a custom pick; more go to the heap. */
enum { PICK_STACK = 32 };

static int cmp_weight(const void *a, const void *b)
{
    return strcmp(((const rp__cweight *)a)->id, ((const rp__cweight *)b)->id);
}

static int check_weights(const rp_cluster_router_options *o, const char *f)
{
    unsigned any = o->default_weight;

    if (o->nweights && !o->weights)
        return rp_error_set(RP_EINVAL, "%s: opts.weights is NULL with opts.nweights %zu", f,
                            o->nweights);
    if (o->nweights > RP_ROUTEES_MAX)
        return rp_error_set(RP_EINVAL, "%s: opts.nweights must be 0..%u (got %zu)", f,
                            RP_ROUTEES_MAX, o->nweights);
    if (o->default_weight > RP_WEIGHT_MAX)
        return rp_error_set(RP_EINVAL, "%s: opts.default_weight must be 0..%u (got %u)", f,
                            RP_WEIGHT_MAX, o->default_weight);
    for (size_t i = 0; i < o->nweights; i++) {
        const rp_cluster_weight *w = &o->weights[i];
        if (!w->node_id || !rp__valid_id(w->node_id, strlen(w->node_id), RP_CLUSTER_ID_MAX, true))
            return rp_error_set(RP_EINVAL, "%s: opts.weights[%zu].node_id is %s", f, i,
                                w->node_id ? "not a node id (1..128 bytes of [A-Za-z0-9_.:-])"
                                           : "NULL");
        if (w->weight > RP_WEIGHT_MAX)
            return rp_error_set(RP_EINVAL, "%s: opts.weights[%zu].weight must be 0..%u (got %u)",
                                f, i, RP_WEIGHT_MAX, w->weight);
        any |= w->weight;
    }
    if (!any)
        return rp_error_set(RP_EINVAL, "%s: opts.weights and opts.default_weight are all 0: "
                            "no node could ever be chosen", f);
    return 0;
}

int rp__ckind_check(const rp_cluster_router_options *o, const char *f)
{
    bool weighted = o->kind == RP_CLUSTER_ROUTER_WEIGHTED;
    int rc;

    if (!weighted && (o->weights || o->nweights))
        return rp_error_set(RP_EINVAL, "%s: opts.weights is set but opts.kind is not "
                            "RP_CLUSTER_ROUTER_WEIGHTED", f);
    if (weighted && (rc = check_weights(o, f)) < 0)
        return rc;
    if (o->kind == RP_CLUSTER_ROUTER_CUSTOM && !o->pick)
        return rp_error_set(RP_EINVAL, "%s: opts.pick is NULL (RP_CLUSTER_ROUTER_CUSTOM needs "
                            "a pick callback)", f);
    if (o->kind != RP_CLUSTER_ROUTER_CUSTOM && o->pick)
        return rp_error_set(RP_EINVAL, "%s: opts.pick is set but opts.kind is not "
                            "RP_CLUSTER_ROUTER_CUSTOM", f);
    return 0;
}

int rp__ckind_init(rp_cluster_router *r, const rp_cluster_router_options *o, const char *f)
{
    r->default_weight = o->default_weight;
    r->pick = o->pick;
    r->pick_user = o->pick_user;
    if (o->kind != RP_CLUSTER_ROUTER_WEIGHTED || o->nweights == 0)
        return 0;
    if (!(r->weights = calloc(o->nweights, sizeof *r->weights)))
        return rp_error_set(RP_ENOMEM, "%s: out of memory", f);
    for (size_t i = 0; i < o->nweights; i++) {
        strcpy(r->weights[i].id, o->weights[i].node_id); /* length checked */
        r->weights[i].weight = o->weights[i].weight;
    }
    r->nweights = o->nweights;
    qsort(r->weights, r->nweights, sizeof *r->weights, cmp_weight);
    for (size_t i = 1; i < r->nweights; i++)
        if (!strcmp(r->weights[i - 1].id, r->weights[i].id))
            return rp_error_set(RP_EINVAL, "%s: opts.weights names node \"%s\" twice", f,
                                r->weights[i].id);
    return 0;
}

static int cmp_id_weight(const void *key, const void *elem)
{
    return strcmp(key, ((const rp__cweight *)elem)->id);
}

static unsigned weight_of(const rp_cluster_router *r, const char *id)
{
    const rp__cweight *w = r->nweights ? bsearch(id, r->weights, r->nweights, sizeof *r->weights,
                                                 cmp_id_weight)
                                       : NULL;
    return w ? w->weight : r->default_weight;
}

int rp__ckind_snap(const rp_cluster_router *r, rp__csnap *s)
{
    if (r->kind != RP_CLUSTER_ROUTER_WEIGHTED || s->n == 0)
        return 0;
    if (!(s->weights = malloc(s->n * sizeof *s->weights)))
        return RP_ENOMEM;
    for (size_t i = 0; i < s->n; i++)
        s->weights[i] = weight_of(r, s->nodes[i].id);
    return 0;
}

/* A WEIGHTED snapshot whose live nodes all weigh 0: no node, and why. */
static int pick_none(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                     size_t *out)
{
    const rp_cluster_router *r = user;
    rp__creq *req = rp__creq_current();

    (void)st, (void)routees, (void)n, (void)out;
    if (req)
        rp__creq_fail(req, rp_error_set(RP_ENOROUTEE, "%s: router %s: every live node has "
                                        "weight 0", req->fn, r->name));
    return 0;
}

/* The user's answer, checked; the chosen routee index or -1 (recorded). */
static long user_pick(const rp_cluster_router *r, rp__creq *req, const rp_route_state *st,
                      const char *const *ids, const size_t *map, size_t live)
{
    const rp__cluster_msg *m = &req->msgs[req->cur];
    rp_cluster_pick_job job = {m->handler, m->payload, m->len, m->key, m->key_len,
                               st->message_index};
    int got = r->pick(&job, ids, live, r->pick_user);

    if (got >= 0 && (size_t)got < live)
        return (long)map[got];
    if (got < 0)
        rp__creq_fail(req, rp_error_set(RP_ENOROUTEE, "%s: router %s: the pick callback refused "
                                        "the job (returned %d)", req->fn, r->name, got));
    else
        rp__creq_fail(req, rp_error_set(RP_EINVAL, "%s: router %s: the pick callback returned "
                                        "%d, not a node index 0..%zu", req->fn, r->name, got,
                                        live - 1));
    return -1;
}

/* CUSTOM: the user's pick over the live nodes of snapshot user. */
static int pick_custom(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                       size_t *out)
{
    const rp__csnap *s = user;
    const rp_cluster_router *r = n ? s->nodes[0].r : NULL;
    rp__creq *req = rp__creq_current();
    const char *ids_local[PICK_STACK], **ids = ids_local;
    size_t map_local[PICK_STACK], *map = map_local, live = 0;
    long got = -1;

    if (!req || !r || n != s->n)
        return 0; /* not routed by this library: choose nothing */
    if (n > PICK_STACK && (!(ids = malloc(n * sizeof *ids)) || !(map = malloc(n * sizeof *map)))) {
        rp__creq_fail(req, rp_error_set(RP_ENOMEM, "%s: out of memory", req->fn));
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (!rp_routee_stopped(routees[i])) {
            ids[live] = s->nodes[i].id;
            map[live++] = i;
        }
    if (live)
        got = user_pick(r, req, st, ids, map, live);
out:
    if (ids != ids_local)
        free(ids);
    if (map != map_local)
        free(map);
    if (got < 0)
        return 0;
    out[0] = (size_t)got;
    return 1;
}

rp_strategy rp__ckind_strategy(const rp_cluster_router *r, rp__csnap *s)
{
    uint64_t total = 0;

    if (r->kind == RP_CLUSTER_ROUTER_CUSTOM)
        return rp_strategy_custom(pick_custom, s);
    for (size_t i = 0; i < s->n; i++)
        total += s->weights[i];
    if (total == 0) /* cast: the strategy only reads r */
        return rp_strategy_custom(pick_none, (void *)r);
    return rp_strategy_weighted(s->weights, s->n);
}
