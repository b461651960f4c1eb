/* SPDX-License-Identifier: MIT */
/*
 * tools/cluster_metrics.h - rp-node's Prometheus endpoint: GET /metrics
 * over HTTP (libmicrohttpd), the pool's families (rp_metrics_write_prometheus)
 * followed by the node's cluster families (rp_cluster_write_prometheus).
 *
 * One libmicrohttpd thread answers requests; each scrape builds the text
 * afresh from snapshots (both writers are thread-safe), so a scrape never
 * blocks a job.  Anything but GET /metrics gets 404 (405 for another
 * method on /metrics).
 */
#ifndef RP_TOOLS_CLUSTER_METRICS_H
#define RP_TOOLS_CLUSTER_METRICS_H

#include <stddef.h>

#include "routepool/cluster.h"
#include "routepool/routepool.h"   /* metrics.h alone misses router.h */

typedef struct cluster_metrics cluster_metrics;

/**
 * Serve /metrics on bind_addr (an IPv4 address) and port (0: any free
 * port; read it with cluster_metrics_port()).  pool and node are borrowed
 * and must outlive the server.
 * @return the server, or NULL with a message in err (err_len bytes).
 */
cluster_metrics *cluster_metrics_start(const char *bind_addr, int port, rp_pool *pool,
                                       rp_cluster_node *node, char *err, size_t err_len);

/** The port the server listens on. */
int cluster_metrics_port(const cluster_metrics *m);

/** Stop answering and free.  Accepts NULL. */
void cluster_metrics_stop(cluster_metrics *m);

/**
 * The text a scrape returns: the pool's families, then the node's.
 * @return a malloc'd NUL-terminated string (free() it) with *len its
 *         length, or NULL when out of memory or a writer failed.
 */
char *cluster_metrics_text(rp_pool *pool, rp_cluster_node *node, size_t *len);

#endif /* RP_TOOLS_CLUSTER_METRICS_H */
