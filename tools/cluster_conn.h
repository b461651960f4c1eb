/* SPDX-License-Identifier: MIT */
/*
 * tools/cluster_conn.h - rp-cluster's own Redis connection, for what the
 * library has no call for: reading the deployment's state for `status`
 * (the depth hash, leases, inbox lengths, pending counts, dead letters;
 * the key layout of docs/cluster.md).  Read-only: rp-cluster changes the
 * deployment only through libroutepool-cluster.
 */
#ifndef RP_TOOLS_CLUSTER_CONN_H
#define RP_TOOLS_CLUSTER_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis.h>

#include "routepool/cluster.h"

/**
 * Connect as co says (redis address, user, password, timeouts; the same
 * address forms as rp_cluster_options.redis) and AUTH.
 * @return the context (redisFree() it) or NULL with err set.
 */
redisContext *cc_connect(const rp_cluster_options *co, char *err, size_t err_len);

/** One node as status shows it. */
typedef struct cs_node {
    char id[RP_CLUSTER_ID_MAX + 1];
    long long depth;        /* reported depth, -1 when the report is unreadable */
    long long age_ms;       /* server now - report time, -1 when unreadable */
    const char *state;      /* "live", "stale", "dead" */
    bool lease;             /* "<prefix>:node:<id>" exists */
    long long inbox;        /* XLEN of its inbox */
    long long pending;      /* fetched and unacknowledged (XPENDING) */
} cs_node;

typedef struct cs_status {
    long long server_ms;
    cs_node *nodes;         /* sorted by id */
    size_t n;
    long long dead_letters; /* XLEN "<prefix>:dead" */
} cs_status;

/**
 * Read the deployment's state.  A report older than stale_ms is "stale",
 * older than dead_after_ms "dead".
 * @return 0, or -1 with err set.
 */
int cs_read(redisContext *c, const char *prefix, int stale_ms, int dead_after_ms,
            cs_status *out, char *err, size_t err_len);

void cs_free(cs_status *s);

/** Print s as a table or as one JSON object. */
void cs_print(const cs_status *s, const char *prefix, bool json);

/** Write s (len bytes) as a JSON string literal (bytes >= 0x80 and
 *  controls as \u00XX: valid JSON whatever the input). */
void cj_str(FILE *f, const char *s, size_t len);

#endif /* RP_TOOLS_CLUSTER_CONN_H */
