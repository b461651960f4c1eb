/* SPDX-License-Identifier: MIT */
/*
 * tools/cluster_plugin.h - rp-node's side of the plugin ABI
 * (routepool/plugin.h): load a .so, let it register named handlers on a
 * node, unload it after the node left.
 *
 * "@demo" instead of a file names the handlers built into rp-node
 * (tools/cluster_demo_jobs.c, used by rp-cluster demo): they register
 * through the same registry, so the demo exercises the plugin path.
 */
#ifndef RP_TOOLS_CLUSTER_PLUGIN_H
#define RP_TOOLS_CLUSTER_PLUGIN_H

#include <stddef.h>

#include "routepool/cluster.h"
#include "routepool/plugin.h"

/** Most handlers one plugin may register (rp-node lists them). */
#define CLUSTER_PLUGIN_MAX_HANDLERS 64

typedef struct cluster_plugin {
    void *dl;                        /* dlopen handle; NULL for @demo */
    rp_plugin_unload_fn unload;      /* optional */
    rp_plugin_registry reg;
    char names[CLUSTER_PLUGIN_MAX_HANDLERS][RP_CLUSTER_HANDLER_MAX + 1];
    size_t n;                        /* handlers registered */
    int open;                        /* 1 while rp_plugin_register runs */
    char err[512];
} cluster_plugin;

/**
 * Load path ("@demo": the built-in handlers) and call its
 * rp_plugin_register with arg (borrowed: must outlive the plugin) on node.
 * @return 0; -1 with p->err set (dlopen or dlsym failed, register returned
 *         an error, or no handler was registered).  After a failed
 *         register the .so stays loaded (handlers it registered point into
 *         it): leave the node, then cluster_plugin_unload(), which then
 *         does not call rp_plugin_unload.
 */
int cluster_plugin_load(cluster_plugin *p, const char *path, const char *arg,
                        rp_cluster_node *node);

/** Call rp_plugin_unload (if any) and dlclose.  Only after the node left
 *  (or was never joined); safe after a failed load. */
void cluster_plugin_unload(cluster_plugin *p);

/** The built-in handlers' registration (tools/cluster_demo_jobs.c). */
int cluster_demo_jobs_register(rp_plugin_registry *reg);

#endif /* RP_TOOLS_CLUSTER_PLUGIN_H */
