/* SPDX-License-Identifier: MIT */
/*
 * routepool/plugin.h - the plugin ABI: jobs and cluster handlers in a
 * shared object that a routepool tool loads with dlopen().
 *
 * Two hosts load plugins, and one .so may serve both:
 *
 *  - rp-tune --job FILE:SYMBOL (docs/tuning.md) looks up three symbols by
 *    name, unchanged since rp-tune's first release:
 *
 *        void  SYMBOL(rp_job_ctx *ctx, void *arg);   required: an rp_job_fn
 *        void *SYMBOL_init(const char *job_arg);     optional: rp_plugin_init_fn
 *        void  SYMBOL_fini(void *state);             optional: rp_plugin_fini_fn
 *
 *  - rp-node --plugin FILE (docs/cluster.md) looks up one symbol,
 *    rp_plugin_register (rp_plugin_register_fn), and calls it once, before
 *    the node fetches its first job, with a registry through which the
 *    plugin registers named cluster handlers.  Optionally it looks up
 *    rp_plugin_unload (rp_plugin_unload_fn) and calls it once, after the
 *    node has left (no handler runs any more).
 *
 * The registry is a struct of data and function pointers filled by the
 * host, so a plugin needs no symbol of the host's: it links nothing but
 * what its handlers call (libroutepool-cluster's job accessors, which the
 * host has loaded already).  The registry begins with its size and the
 * host's RP_PLUGIN_ABI_VERSION; fields are only ever appended, so a plugin
 * built against version N runs in a host of version >= N and can check
 * reg->abi_version before using a newer field.
 *
 * This header declares types only; it needs neither the cluster library
 * nor its header (rp_cluster_job and rp_cluster_node are declared here as
 * the same incomplete types routepool/cluster.h declares).  A plugin whose
 * handlers read their job includes <routepool/cluster.h> as well.
 *
 * Thread safety: rp_plugin_register and rp_plugin_unload run on the host's
 * main thread, never concurrently with a handler.  Handlers run on the
 * node's routees, many at once: what they share must be thread-safe.
 */
#ifndef ROUTEPOOL_PLUGIN_H
#define ROUTEPOOL_PLUGIN_H

#include <stddef.h>

#include "routepool/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes.  1: handle(), arg, node. */
#define RP_PLUGIN_ABI_VERSION 1u

/* ---- rp-tune --job (docs/tuning.md, "Tuning your own job") ---- */

/** SYMBOL_init: called once with --job-arg (NULL when absent); its result
 *  is every job's arg.  NULL means failure: rp-tune exits with status 1. */
typedef void *(*rp_plugin_init_fn)(const char *job_arg);
/** SYMBOL_fini: called once after the last job with init's result. */
typedef void (*rp_plugin_fini_fn)(void *state);
/* SYMBOL itself is an rp_job_fn (routepool/pool.h). */

/* ---- rp-node --plugin (docs/cluster.md, "Handlers in a plugin") ---- */

/** A cluster job (routepool/cluster.h declares the same type). */
typedef struct rp_cluster_job rp_cluster_job;
/** A cluster node (routepool/cluster.h declares the same type). */
typedef struct rp_cluster_node rp_cluster_node;

/** The registry a host passes to rp_plugin_register(). */
typedef struct rp_plugin_registry rp_plugin_registry;

struct rp_plugin_registry {
    /** sizeof(rp_plugin_registry) of the host. */
    size_t size;
    /** The host's RP_PLUGIN_ABI_VERSION. */
    unsigned abi_version;
    /** The host's --plugin-arg string, or NULL (borrowed: valid until
     *  rp_plugin_unload() returns). */
    const char *arg;
    /** The node the handlers will run on (borrowed: valid until
     *  rp_plugin_unload() is called; do not call rp_cluster_leave() on it).
     *  Handlers may send through it (rp_cluster_tell_node(), routers). */
    rp_cluster_node *node;
    /**
     * Register the handler fn for name, as rp_cluster_handle(): name is
     * copied (1..RP_CLUSTER_HANDLER_MAX bytes); user is passed to every
     * call of fn and stays the plugin's (free it in rp_plugin_unload()).
     * Registering a name twice replaces the first.  fn has the type
     * rp_cluster_handler_fn of routepool/cluster.h.
     * @return 0, or a negative RP_E* code (RP_EINVAL: bad name or NULL fn;
     *         RP_ENOMEM); the plugin should return it from
     *         rp_plugin_register().
     * Call it only during rp_plugin_register().
     */
    int (*handle)(rp_plugin_registry *reg, const char *name,
                  void (*fn)(rp_cluster_job *job, void *user), void *user);
    /** The host's; the plugin must not touch it. */
    void *host;
};

/**
 * The symbol rp-node looks up: register the plugin's handlers.
 * @return 0, or a negative RP_E* code: the host then runs nothing, does not
 *         call rp_plugin_unload(), and exits with status 1.  A plugin that
 *         registers no handler is refused by rp-node too.
 */
typedef int (*rp_plugin_register_fn)(rp_plugin_registry *reg);
/** Optional: called once after the node left, with the registry's arg. */
typedef void (*rp_plugin_unload_fn)(const char *arg);

/** The names the hosts look up. */
#define RP_PLUGIN_REGISTER_SYMBOL "rp_plugin_register"
#define RP_PLUGIN_UNLOAD_SYMBOL "rp_plugin_unload"

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_PLUGIN_H */
