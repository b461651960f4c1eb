/* SPDX-License-Identifier: MIT */
/*
 * rendezvous.h - consistent hashing of keys over node ids (rendezvous, or
 * highest random weight), for the cluster's consistent-hash router.
 * Private.
 *
 * Each node scores XXH3_64bits_withSeed(node id, key hash ^ seed) and the
 * highest score owns the key.  The score depends only on the key and the
 * node's own id - not on the other nodes, their order, or the process - so
 * every router of a deployment (same seed) maps a key to the same node, a
 * node joining takes only the keys it now wins, and a node leaving gives
 * away only the keys it owned (each to its runner-up).  The key hash is
 * the core's (rp_route_state.key_hash = XXH3_64bits(key)), as the local
 * consistent-hash strategy uses.
 */
#ifndef RP_CLUSTER_RENDEZVOUS_H
#define RP_CLUSTER_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "routepool/strategy.h"

/** The score of node id (len bytes) for a key hash.  Pure. */
uint64_t rp__rendezvous_score(const char *id, size_t len, uint64_t key_hash, uint64_t seed);

/**
 * The owner of a key among n ids: the highest score, ties (never seen in
 * practice) to the smaller id; entries with skip[i] true are passed over
 * unless every entry is skipped (skip may be NULL).  @return the index, or
 * -1 when n is 0.  Pure.
 */
int rp__rendezvous_pick(const char *const *ids, size_t n, uint64_t key_hash, uint64_t seed,
                        const bool *skip);

/** What rp__rendezvous_strategy() needs: the node id of each routee. */
typedef struct rp__rendezvous {
    const char *const *ids; /* ids[i] is the node of routees[i] */
    size_t n;
    uint64_t seed;
} rp__rendezvous;

/**
 * Rendezvous as an rp_strategy_fn (user: an rp__rendezvous describing the
 * same routee list): the owner among the live routees (all stopped: the
 * owner among all, which hands the job back with RP_ESTOPPED).  Pins the
 * job.  An unkeyed job or a list that does not match user is refused
 * (negative: the router hands the job back with RP_EINVAL).
 */
int rp__rendezvous_strategy(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                            size_t *out);

#endif /* RP_CLUSTER_RENDEZVOUS_H */
