/* SPDX-License-Identifier: MIT */
/*
 * node.c - a node's identity, options and membership bookkeeping.
 *
 * Liveness: "<prefix>:node:<id>" is a lease (SET NX PX dead_after_ms with a
 * random token) refreshed on every tick by the report script, which also
 * writes "<depth>:<server ms>" into "<prefix>:depth" and adds the id to
 * "<prefix>:nodes" (every member that may still own entries).  Joining
 * with the id of a live node fails RP_EEXIST because the lease exists.
 *
 * This file: options, addresses, logging, keys, membership listeners and
 * getters.  join.c joins and leaves, heartbeat.c ticks.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "impl.h"
#include "node.h"
#include "util.h"

void rp_cluster_options_init(rp_cluster_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->redis = "127.0.0.1:6379";
    opts->prefix = "rp";
    opts->connect_timeout_ms = 1000;
    opts->command_timeout_ms = 2000;
    opts->heartbeat_ms = 200;
    opts->dead_after_ms = 3000;
    opts->max_deliveries = 5;
    opts->max_payload = RP_CLUSTER_PAYLOAD_DEFAULT;
}

void rp__node_logf(const rp_cluster_node *node, int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rp__cluster_log(node, level, line);
}

void rp__cluster_log(const rp_cluster_node *node, int level, const char *msg)
{
    if (node && node->log) {
        node->log(level, msg, node->log_user);
        return;
    }
    if (level >= RP_LOG_WARN)
        fprintf(stderr, "routepool-cluster [%s]: %s\n", node ? node->id : "?", msg);
}

char *rp__key(const rp_cluster_node *node, const char *kind, const char *id)
{
    size_t n = strlen(node->prefix) + strlen(kind) + (id ? strlen(id) : 0) + 3;
    char *k = malloc(n);
    if (!k)
        return NULL;
    if (id)
        snprintf(k, n, "%s:%s:%s", node->prefix, kind, id);
    else
        snprintf(k, n, "%s:%s", node->prefix, kind);
    return k;
}

int64_t rp__server_now_ms(const rp_cluster_node *node)
{
    return rp__mono_ms() +
           atomic_load_explicit(&node->server_offset_ms, memory_order_relaxed);
}

/* ---- options ---- */

static int bad(const char *field, const char *why)
{
    return rp_error_set(RP_EINVAL, "rp_cluster_join: opts.%s %s", field, why);
}

static int check_numbers(const rp_cluster_options *o)
{
    if (o->connect_timeout_ms <= 0)
        return bad("connect_timeout_ms", "must be > 0");
    if (o->command_timeout_ms <= 100)
        return bad("command_timeout_ms", "must be > 100 (blocking reads wait 100 ms)");
    if (o->heartbeat_ms < 1)
        return bad("heartbeat_ms", "must be >= 1");
    if (o->dead_after_ms <= o->heartbeat_ms)
        return bad("dead_after_ms", "must be > heartbeat_ms");
    if (o->max_deliveries < 1 || o->max_deliveries > 1000)
        return bad("max_deliveries", "must be 1..1000");
    if (o->max_payload > RP_CLUSTER_PAYLOAD_MAX)
        return bad("max_payload", "must be at most RP_CLUSTER_PAYLOAD_MAX");
    if (o->max_inflight > 100000)
        return bad("max_inflight", "must be at most 100000");
    return 0;
}

static int check_strings(const rp_cluster_options *o)
{
    if (!o->redis || !o->redis[0])
        return bad("redis", "must be host:port or a socket path");
    if (!o->prefix || !rp__valid_id(o->prefix, strlen(o->prefix), RP_CLUSTER_PREFIX_MAX, false))
        return bad("prefix", "must be 1..64 bytes of [A-Za-z0-9_.-]");
    if (o->node_id && !rp__valid_id(o->node_id, strlen(o->node_id), RP_CLUSTER_ID_MAX, true))
        return bad("node_id", "must be 1..128 bytes of [A-Za-z0-9_.:-]");
    if (o->user && (!o->password || !rp__valid_name(o->user, strlen(o->user), 256)))
        return bad("user", "needs a password and 1..256 printable bytes");
    return 0;
}

int rp__check_options(const rp_cluster_options *o)
{
    int rc = check_numbers(o);
    return rc < 0 ? rc : check_strings(o);
}

void rp__default_id(char *id, size_t cap)
{
    char host[64] = "host";
    if (gethostname(host, sizeof host - 1) != 0)
        strcpy(host, "host");
    host[sizeof host - 1] = '\0';
    for (char *p = host; *p; p++)
        if (!rp__valid_id(p, 1, 1, false))
            *p = '-';
    snprintf(id, cap, "%s:%ld", host, (long)getpid());
}

/* ---- membership listeners ---- */

int rp__cluster_on_members(rp_cluster_node *node, rp__cluster_members_fn fn,
                           void *user)
{
    if (!node || !fn)
        return RP_EINVAL;
    pthread_mutex_lock(&node->lst_lock);
    for (int i = 0; i < MAX_LISTENERS; i++) {
        if (!node->listeners[i].fn) {
            node->listeners[i].fn = fn;
            node->listeners[i].user = user;
            pthread_mutex_unlock(&node->lst_lock);
            return i;
        }
    }
    pthread_mutex_unlock(&node->lst_lock);
    return RP_ENOMEM;
}

void rp__cluster_off_members(rp_cluster_node *node, int handle)
{
    if (!node || handle < 0 || handle >= MAX_LISTENERS)
        return;
    pthread_mutex_lock(&node->lst_lock);
    while (node->lst_busy)
        pthread_cond_wait(&node->lst_cond, &node->lst_lock);
    node->listeners[handle].fn = NULL;
    pthread_mutex_unlock(&node->lst_lock);
}

bool rp__pick_member(rp_cluster_node *node, const char *exclude, char *buf,
                     size_t cap)
{
    bool ok = false;
    pthread_mutex_lock(&node->lst_lock);
    for (size_t i = 0; i < node->live.n && !ok; i++) {
        const char *id = node->live.ids[(node->rr + i) % node->live.n];
        if (exclude && strcmp(id, exclude) == 0)
            continue;
        snprintf(buf, cap, "%s", id);
        node->rr = (node->rr + i + 1) % node->live.n;
        ok = true;
    }
    pthread_mutex_unlock(&node->lst_lock);
    return ok;
}

/* ---- getters ---- */

const char *rp_cluster_node_id(const rp_cluster_node *node)
{
    return node ? node->id : NULL;
}

rp_pool *rp__cluster_node_pool(const rp_cluster_node *node)
{
    return node ? node->pool : NULL;
}

rp_pool *rp__cluster_node_timer_pool(const rp_cluster_node *node)
{
    return node ? (node->pool ? node->pool : node->own_pool) : NULL;
}

const char *rp__cluster_node_prefix(const rp_cluster_node *node)
{
    return node ? node->prefix : NULL;
}

const rp__cluster_settings *rp__cluster_node_settings(const rp_cluster_node *node)
{
    return node ? &node->set : NULL;
}
