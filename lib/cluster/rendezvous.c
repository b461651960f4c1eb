/* SPDX-License-Identifier: MIT */
/*
 * rendezvous.c - rendezvous hashing over node ids (see rendezvous.h).
 *
 * One pass over the nodes per key: O(n) hashes of a short id, no ring to
 * build or rebuild when membership changes, and exactly the minimal
 * movement property the seed asks for.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "rendezvous.h"
#include "routepool/pool.h"

uint64_t rp__rendezvous_score(const char *id, size_t len, uint64_t key_hash, uint64_t seed)
{
    return XXH3_64bits_withSeed(id, len, key_hash ^ seed);
}

int rp__rendezvous_pick(const char *const *ids, size_t n, uint64_t key_hash, uint64_t seed,
                        const bool *skip)
{
    uint64_t best_score = 0;
    int best = -1;

    /* Pass 0 honours skip; pass 1 (everything skipped) names the owner
     * among all, as the core's consistent hashing does for stopped
     * routees. */
    for (int pass = 0; pass < 2 && best < 0; pass++) {
        for (size_t i = 0; i < n; i++) {
            uint64_t s;
            if (pass == 0 && skip && skip[i])
                continue;
            s = rp__rendezvous_score(ids[i], strlen(ids[i]), key_hash, seed);
            if (best < 0 || s > best_score ||
                (s == best_score && strcmp(ids[i], ids[best]) < 0)) {
                best = (int)i;
                best_score = s;
            }
        }
    }
    return best;
}

int rp__rendezvous_strategy(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                            size_t *out)
{
    const rp__rendezvous *rv = user;
    bool local[64], *skip = local;
    int best;

    if (!rv || !st->key || rv->n != n)
        return -1;
    if (n == 0)
        return 0;
    if (n > sizeof local / sizeof local[0] && !(skip = malloc(n * sizeof *skip)))
        return -1;
    for (size_t i = 0; i < n; i++)
        skip[i] = rp_routee_stopped(routees[i]);
    best = rp__rendezvous_pick(rv->ids, n, st->key_hash, rv->seed, skip);
    if (skip != local)
        free(skip);
    st->pinned = true;
    out[0] = (size_t)best;
    return 1;
}
