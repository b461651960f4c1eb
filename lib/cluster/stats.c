/* SPDX-License-Identifier: MIT */
/*
 * stats.c - a node's metrics: the snapshot and the Prometheus text.
 *
 * The counters are defined once (RP_CLUSTER_COUNTER_LIST in
 * routepool/cluster.h) and bumped with relaxed atomics where they happen;
 * the snapshot reads each one relaxed (each exact, the set not one atomic
 * moment, as the core's routee counters).  The text writer emits the
 * families routepool_cluster_<name>_total, the report age gauge, the
 * in-flight gauge and the reply round-trip histogram (seconds), every
 * sample labelled node="<id>" (ids are [A-Za-z0-9_.:-]: no escaping
 * needed).
 */
#include <string.h>

#include "impl.h"
#include "util.h"

int rp_cluster_node_stats(const rp_cluster_node *node, rp_cluster_stats *out)
{
    if (!node || !out)
        return rp_error_set(RP_EINVAL, "rp_cluster_node_stats: %s is NULL",
                            !node ? "node" : "out");
    rp_cluster_node *n = (rp_cluster_node *)node; /* the lock is not const */
    memset(out, 0, sizeof *out);
#define RP__CLUSTER_READ(name, help) \
    out->name = atomic_load_explicit(&n->c.name, memory_order_relaxed);
    RP_CLUSTER_COUNTER_LIST(RP__CLUSTER_READ)
#undef RP__CLUSTER_READ
    int64_t last = atomic_load_explicit(&n->last_report_mono, memory_order_relaxed);
    out->report_age_ms = last < 0 ? -1 : rp__mono_ms() - last;
    pthread_mutex_lock(&n->lock);
    out->inflight = n->inflight;
    pthread_mutex_unlock(&n->lock);
    for (int i = 0; i < RP_CLUSTER_RTT_BUCKETS; i++)
        out->rtt_buckets[i] = atomic_load_explicit(&n->rtt[i], memory_order_relaxed);
    out->rtt_count = atomic_load_explicit(&n->rtt_count, memory_order_relaxed);
    out->rtt_sum_us = atomic_load_explicit(&n->rtt_sum_us, memory_order_relaxed);
    return 0;
}

static int write_hist(const rp_cluster_stats *s, const char *id, FILE *f)
{
    uint64_t cum = 0;
    fprintf(f, "# HELP routepool_cluster_reply_rtt_seconds Round trip of cluster asks, "
               "send to reply.\n# TYPE routepool_cluster_reply_rtt_seconds histogram\n");
    for (int i = 0; i < RP_CLUSTER_RTT_BUCKETS - 1; i++) {
        cum += s->rtt_buckets[i];
        fprintf(f, "routepool_cluster_reply_rtt_seconds_bucket{node=\"%s\",le=\"%.6f\"} %llu\n",
                id, (double)((uint64_t)1 << i) / 1e6, (unsigned long long)cum);
    }
    fprintf(f, "routepool_cluster_reply_rtt_seconds_bucket{node=\"%s\",le=\"+Inf\"} %llu\n",
            id, (unsigned long long)s->rtt_count);
    fprintf(f, "routepool_cluster_reply_rtt_seconds_sum{node=\"%s\"} %.6f\n", id,
            (double)s->rtt_sum_us / 1e6);
    return fprintf(f, "routepool_cluster_reply_rtt_seconds_count{node=\"%s\"} %llu\n", id,
                   (unsigned long long)s->rtt_count);
}

int rp_cluster_write_prometheus(const rp_cluster_node *node, FILE *f)
{
    rp_cluster_stats s;
    if (!f)
        return rp_error_set(RP_EINVAL, "rp_cluster_write_prometheus: f is NULL");
    if (rp_cluster_node_stats(node, &s) < 0)
        return rp_error_set(RP_EINVAL, "rp_cluster_write_prometheus: node is NULL");
    const char *id = node->id;
#define RP__CLUSTER_PROM(name, help)                                                    \
    fprintf(f, "# HELP routepool_cluster_" #name "_total " help ".\n"                   \
               "# TYPE routepool_cluster_" #name "_total counter\n"                     \
               "routepool_cluster_" #name "_total{node=\"%s\"} %llu\n",                 \
            id, (unsigned long long)s.name);
    RP_CLUSTER_COUNTER_LIST(RP__CLUSTER_PROM)
#undef RP__CLUSTER_PROM
    fprintf(f, "# HELP routepool_cluster_report_age_seconds Age of this node's last "
               "depth report (-1: never).\n# TYPE routepool_cluster_report_age_seconds gauge\n"
               "routepool_cluster_report_age_seconds{node=\"%s\"} %.3f\n",
            id, s.report_age_ms < 0 ? -1.0 : (double)s.report_age_ms / 1e3);
    fprintf(f, "# HELP routepool_cluster_inflight Entries fetched and not finished.\n"
               "# TYPE routepool_cluster_inflight gauge\n"
               "routepool_cluster_inflight{node=\"%s\"} %llu\n",
            id, (unsigned long long)s.inflight);
    if (write_hist(&s, id, f) < 0 || ferror(f))
        return rp_error_set(RP_ESYS, "rp_cluster_write_prometheus: write failed");
    return 0;
}
