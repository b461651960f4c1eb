/* SPDX-License-Identifier: MIT */
/*
 * routepool/routepool.h - umbrella header: include this one.
 *
 * routepool runs CPU-bound jobs on a fixed pool of worker threads
 * ("routees"), one OS thread each, with a lock-free mailbox per routee.
 * Jobs reach routees through routers (round-robin, random, broadcast,
 * smallest-mailbox, consistent hashing, weighted, custom).
 */
#ifndef ROUTEPOOL_ROUTEPOOL_H
#define ROUTEPOOL_ROUTEPOOL_H

#define RP_VERSION_MAJOR 0
#define RP_VERSION_MINOR 1
#define RP_VERSION_PATCH 0
#define RP_VERSION_STRING "0.1.0"

#include "routepool/error.h"
#include "routepool/strategy.h"
#include "routepool/pool.h"
#include "routepool/router.h"
#include "routepool/future.h"
#include "routepool/scatter.h"
#include "routepool/metrics.h"
#include "routepool/trace.h"
/* The cluster library's header is installed only when libroutepool-cluster
 * is built; link routepool-cluster to use it. */
#if defined(__has_include)
#if __has_include("routepool/cluster.h")
#include "routepool/cluster.h"
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** The library's version string, e.g. "0.1.0" (may differ from the header
 *  a program was compiled with). */
const char *rp_version(void);

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_ROUTEPOOL_H */
