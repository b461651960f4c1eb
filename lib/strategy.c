/* SPDX-License-Identifier: MIT */
/*
 * strategy.c - the routing strategies: pure functions of (routees, state).
 *
 * Nothing here writes shared state, sleeps or allocates; a strategy reads
 * routee depth, busy and stopped flags and writes indices.  A failing pick
 * also sets the calling thread's rp_errmsg(), in pick_failed(): out of
 * line, so the picks routers make per job compile as they would without
 * it.  Routers call
 * rp_strategy_pick(); so can tests and simulators, without threads.
 *
 * Stopped routees: every strategy skips them ("routers skip it from that
 * moment").  When every routee is stopped the single-target strategies
 * still name one (the one the rotation would have named), so the job is
 * handed back with RP_ESTOPPED by the delivery - observable, never silent.
 */
#include <xxhash.h>

#include "routee_record.h"
#include "strategy.h"

rp_strategy rp_strategy_round_robin(void)
{
    return (rp_strategy){.kind = RP_STRATEGY_ROUND_ROBIN};
}

rp_strategy rp_strategy_random(uint64_t seed)
{
    return (rp_strategy){.kind = RP_STRATEGY_RANDOM, .seed = seed};
}

rp_strategy rp_strategy_broadcast(void)
{
    return (rp_strategy){.kind = RP_STRATEGY_BROADCAST};
}

rp_strategy rp_strategy_smallest_mailbox(void)
{
    return (rp_strategy){.kind = RP_STRATEGY_SMALLEST_MAILBOX};
}

rp_strategy rp_strategy_consistent_hash(uint64_t seed)
{
    return (rp_strategy){.kind = RP_STRATEGY_CONSISTENT_HASH, .seed = seed};
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

rp_strategy rp_strategy_weighted(const unsigned *weights, size_t n)
{
    rp_strategy s = {.kind = RP_STRATEGY_WEIGHTED, .weights = weights, .nweights = n};
    uint64_t total = 0, stride;

    for (size_t i = 0; weights && i < n; i++) {
        if (weights[i] > RP_WEIGHT_MAX)
            return s; /* total 0: the router reports the bad weight */
        total += weights[i];
    }
    if (total == 0)
        return s;
    /* Visiting slot (m * stride) % total for m = 0, 1, ... permutes the
     * slots (stride is coprime to total), so a full cycle gives every
     * routee exactly its weight, and a stride near total/phi interleaves
     * the routees instead of running through one routee's slots at once. */
    stride = (uint64_t)((double)total * 0.6180339887498949) | 1;
    while (gcd(stride, total) != 1)
        stride++;
    s.weight_total = total;
    s.weight_stride = stride % total ? stride % total : 1;
    return s;
}

rp_strategy rp_strategy_custom(rp_strategy_fn fn, void *user)
{
    return (rp_strategy){.kind = RP_STRATEGY_CUSTOM, .custom = fn, .custom_user = user};
}

const char *rp_strategy_name(rp_strategy_kind kind)
{
    static const char *const names[] = {
        "round-robin", "random", "broadcast", "smallest-mailbox",
        "consistent-hash", "weighted", "custom"};

    if ((unsigned)kind >= sizeof names / sizeof names[0])
        return "unknown";
    return names[kind];
}

/* The first routee from start on (wrapping) that is not stopped; start
 * itself when all are. */
static size_t first_live(rp_routee *const *routees, size_t n, size_t start)
{
    size_t i = start;

    for (size_t k = 0; k < n; k++) {
        if (!rp__routee_stopped(routees[i]))
            return i;
        if (++i == n) /* start < n: no division */
            i = 0;
    }
    return start;
}

void rp__strategy_round_robin_run(rp_routee *const *routees, size_t n, uint64_t base,
                                  size_t k, size_t *targets)
{
    size_t i = (size_t)(base % n);

    for (size_t j = 0; j < k; j++) {
        targets[j] = first_live(routees, n, i);
        if (++i == n)
            i = 0;
    }
}

/* splitmix64's finaliser: a bijective 64-bit mix. */
static uint64_t mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Uniform in [0, n) from 64 random bits (Lemire's multiply-shift). */
static size_t reduce(uint64_t r, size_t n)
{
    return (size_t)(((unsigned __int128)r * n) >> 64);
}

static int pick_smallest(rp_route_state *st, rp_routee *const *routees,
                         size_t n, size_t *out)
{
    size_t start = st->message_index % n, best = start;
    int64_t best_score = -1;

    for (size_t k = 0; k < n; k++) {
        size_t i = (start + k) % n;
        int64_t score;

        if (rp__routee_stopped(routees[i]))
            continue;
        score = rp__routee_score(routees[i]);
        if (best_score < 0 || score < best_score) {
            best = i;
            best_score = score;
            if (score == 0)
                break; /* nothing beats an empty, idle routee */
        }
    }
    out[0] = best;
    return 1;
}

static int pick_hash(const rp_strategy *s, rp_route_state *st,
                     rp_routee *const *routees, size_t n, size_t *out)
{
    uint64_t best_score = 0;
    size_t best = n;

    if (!st->key)
        return RP_EINVAL;
    for (int pass = 0; pass < 2 && best == n; pass++) {
        for (size_t i = 0; i < n; i++) {
            uint64_t score;
            /* Pass 0 skips stopped routees; pass 1 (all stopped) names the
             * owner so the job is handed back as RP_ESTOPPED. */
            if (pass == 0 && rp__routee_stopped(routees[i]))
                continue;
            score = XXH3_64bits_withSeed(&routees[i]->ident, sizeof routees[i]->ident,
                                         st->key_hash ^ s->seed);
            if (best == n || score > best_score) {
                best = i;
                best_score = score;
            }
        }
    }
    st->pinned = true;
    out[0] = best;
    return 1;
}

static int pick_weighted(const rp_strategy *s, rp_route_state *st,
                         rp_routee *const *routees, size_t n, size_t *out)
{
    uint64_t slot;
    size_t i = 0;

    if (!s->weights || s->nweights != n || s->weight_total == 0)
        return RP_EINVAL;
    slot = (uint64_t)(((unsigned __int128)(st->message_index % s->weight_total) *
                       s->weight_stride) % s->weight_total);
    if (s->weight_ends) {
        /* The first routee whose range ends past the slot. */
        size_t lo = 0, hi = n - 1;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (s->weight_ends[mid] > slot)
                hi = mid;
            else
                lo = mid + 1;
        }
        i = lo;
    } else {
        while (slot >= s->weights[i]) {
            slot -= s->weights[i];
            i++;
        }
    }
    out[0] = first_live(routees, n, i);
    return 1;
}

static int pick_custom(const rp_strategy *s, rp_route_state *st,
                       rp_routee *const *routees, size_t n, size_t *out)
{
    int cnt;

    if (!s->custom)
        return RP_EINVAL;
    cnt = s->custom(s->custom_user, st, routees, n, out);
    if (cnt < 0 || (size_t)cnt > n)
        return RP_EINVAL;
    for (int k = 0; k < cnt; k++)
        if (out[k] >= n)
            return RP_EINVAL;
    return cnt;
}

static int pick_broadcast(rp_route_state *st, rp_routee *const *routees,
                          size_t n, size_t *out)
{
    int cnt = 0;

    for (size_t i = 0; i < n; i++)
        if (!rp__routee_stopped(routees[i]))
            out[cnt++] = i;
    st->pinned = true;
    return cnt;
}

/* Why a pick returned RP_EINVAL, into rp_errmsg().  A custom strategy is
 * not called again (user code, maybe not pure): its message says what a
 * valid choice is. */
static __attribute__((cold, noinline)) int pick_failed(const rp_strategy *s,
                                                      const rp_route_state *st,
                                                      rp_routee *const *routees, size_t n,
                                                      const size_t *out)
{
    const char *f = "rp_strategy_pick";

    if (!s || !st || (n && (!routees || !out)))
        return rp__fail(RP_EINVAL, "%s: %s is NULL", f,
                        !s ? "strategy" : !st ? "state" : !routees ? "routees" : "out");
    switch (s->kind) {
    case RP_STRATEGY_CUSTOM:
        if (!s->custom)
            return rp__fail(RP_EINVAL, "%s: strategy.custom is NULL", f);
        return rp__fail(RP_EINVAL, "%s: strategy.custom made an invalid choice (it must return "
                        "0..%zu and write indices < %zu)", f, n, n);
    case RP_STRATEGY_CONSISTENT_HASH:
        return rp__fail(RP_EINVAL, "%s: state.key is NULL (consistent hashing needs a key)", f);
    case RP_STRATEGY_WEIGHTED:
        return rp__fail(RP_EINVAL, "%s: strategy.weights must hold %zu weights, not all 0 "
                        "(got %zu)", f, n, s->weights ? s->nweights : 0);
    default:
        return rp__fail(RP_EINVAL, "%s: strategy.kind is not an rp_strategy_kind (got %d)", f,
                        (int)s->kind);
    }
}

static inline __attribute__((always_inline)) int pick(const rp_strategy *s, rp_route_state *st,
                                                      rp_routee *const *routees, size_t n,
                                                      size_t *out)
{
    if (!s || !st || (n && (!routees || !out)))
        return RP_EINVAL;
    if (s->kind == RP_STRATEGY_CUSTOM)
        return pick_custom(s, st, routees, n, out);
    if (n == 0)
        return 0;
    switch (s->kind) {
    case RP_STRATEGY_ROUND_ROBIN:
        out[0] = first_live(routees, n, st->message_index % n);
        return 1;
    case RP_STRATEGY_RANDOM:
        out[0] = first_live(routees, n, reduce(mix64(s->seed ^ mix64(st->message_index)), n));
        return 1;
    case RP_STRATEGY_BROADCAST:
        return pick_broadcast(st, routees, n, out);
    case RP_STRATEGY_SMALLEST_MAILBOX:
        return pick_smallest(st, routees, n, out);
    case RP_STRATEGY_CONSISTENT_HASH:
        return pick_hash(s, st, routees, n, out);
    case RP_STRATEGY_WEIGHTED:
        return pick_weighted(s, st, routees, n, out);
    default:
        return RP_EINVAL;
    }
}

int rp_strategy_pick(const rp_strategy *s, rp_route_state *st,
                     rp_routee *const *routees, size_t n, size_t *out)
{
    int cnt = pick(s, st, routees, n, out);

    return RP_LIKELY(cnt >= 0) ? cnt : pick_failed(s, st, routees, n, out);
}
