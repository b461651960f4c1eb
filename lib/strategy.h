/* SPDX-License-Identifier: MIT */
/*
 * strategy.h - strategy internals the routers use (strategy.c).  Private.
 */
#ifndef RP_STRATEGY_INTERNAL_H
#define RP_STRATEGY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* Round-robin picks for the message indices base .. base + k - 1 into
 * targets[0..k): what rp_strategy_pick() would return for each, with one
 * division instead of k (strategy.c).  n >= 1. */
void rp__strategy_round_robin_run(rp_routee *const *routees, size_t n, uint64_t base,
                                  size_t k, size_t *targets);

#endif /* RP_STRATEGY_INTERNAL_H */
