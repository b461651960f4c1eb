/* SPDX-License-Identifier: MIT */
/*
 * tools/cluster_metrics.c - the /metrics endpoint (cluster_metrics.h).
 *
 * The daemon runs with its own polling thread (MHD_USE_INTERNAL_POLLING_
 * THREAD): rp-node's main thread stays free to wait for signals.  The text
 * is built in an open_memstream() buffer handed to libmicrohttpd, which
 * frees it (MHD_RESPMEM_MUST_FREE) after sending.
 */
#include "cluster_metrics.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MHD_VERSION < 0x00097002
typedef int MHD_RESULT;
#else
typedef enum MHD_Result MHD_RESULT;
#endif

struct cluster_metrics {
    struct MHD_Daemon *d;
    rp_pool *pool;
    rp_cluster_node *node;
    int port;
};

char *cluster_metrics_text(rp_pool *pool, rp_cluster_node *node, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);

    if (!f)
        return NULL;
    int rc = rp_metrics_write_prometheus(pool, f);
    if (rc == 0)
        rc = rp_cluster_write_prometheus(node, f);
    if (fclose(f) != 0 || rc < 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static MHD_RESULT respond(struct MHD_Connection *conn, unsigned status, const char *type,
                          char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);

    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_RESULT ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static MHD_RESULT on_request(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_len, void **req)
{
    static char not_found[] = "not found: try /metrics\n";
    static char not_allowed[] = "method not allowed\n";
    static char failed[] = "metrics unavailable\n";
    cluster_metrics *m = cls;

    (void)version, (void)upload, (void)upload_len, (void)req;
    if (strcmp(url, "/metrics"))
        return respond(conn, MHD_HTTP_NOT_FOUND, "text/plain", not_found, sizeof not_found - 1,
                       MHD_RESPMEM_PERSISTENT);
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return respond(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", not_allowed,
                       sizeof not_allowed - 1, MHD_RESPMEM_PERSISTENT);
    size_t len = 0;
    char *text = cluster_metrics_text(m->pool, m->node, &len);
    if (!text)
        return respond(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", failed,
                       sizeof failed - 1, MHD_RESPMEM_PERSISTENT);
    return respond(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len,
                   MHD_RESPMEM_MUST_FREE);
}

cluster_metrics *cluster_metrics_start(const char *bind_addr, int port, rp_pool *pool,
                                       rp_cluster_node *node, char *err, size_t err_len)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    cluster_metrics *m;

    if (inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1) {
        snprintf(err, err_len, "--metrics-bind %s: not an IPv4 address", bind_addr);
        return NULL;
    }
    if (!(m = calloc(1, sizeof *m))) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    m->pool = pool, m->node = node;
    m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port,
                            NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR, &sa,
                            MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (!m->d) {
        snprintf(err, err_len, "--metrics-port %d: cannot listen on %s:%d (in use?)", port,
                 bind_addr, port);
        free(m);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
    m->port = info ? info->port : port;
    return m;
}

int cluster_metrics_port(const cluster_metrics *m)
{
    return m->port;
}

void cluster_metrics_stop(cluster_metrics *m)
{
    if (!m)
        return;
    MHD_stop_daemon(m->d);
    free(m);
}
