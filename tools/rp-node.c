/* SPDX-License-Identifier: MIT */
/*
 * tools/rp-node.c - rp-node: one routepool cluster node whose handlers
 * come from a plugin (routepool/plugin.h; docs/cluster.md).
 *
 *   rp-node --redis HOST:PORT|PATH --prefix P --plugin ./libjobs.so
 *           [--routees N] [--metrics-port N] [--id ID] [--user U --password-file F]
 *
 * Order of start-up: block SIGINT/SIGTERM (every thread created later
 * inherits the mask, so only the main thread's sigwait() sees them), make
 * the pool, join, let the plugin register its handlers, serve /metrics,
 * start fetching, print one "ready" line on stdout.  On the first
 * SIGTERM/SIGINT the node leaves gracefully (jobs that run finish,
 * unstarted ones go back to Redis for the others); a second one ends the
 * process at once (the signals are unblocked and set to their default
 * before leaving).
 *
 * Exit status: 0 after a graceful leave, 1 when a runtime step failed
 * (Redis unreachable, id taken, plugin refused), 2 for a bad command line.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_args.h"
#include "cluster_metrics.h"
#include "cluster_plugin.h"
#include "routepool/cluster.h"
#include "routepool/routepool.h"

typedef struct node_cfg {
    rp_cluster_options co;
    const char *plugin, *plugin_arg, *metrics_bind, *password_file;
    int routees, metrics_port;       /* metrics_port -1: no endpoint */
    char password[512];
} node_cfg;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rp-node --plugin FILE [options]\n"
        "Run a routepool cluster node whose handlers come from FILE (a .so exporting\n"
        "rp_plugin_register, see routepool/plugin.h; @demo: the built-in work/echo\n"
        "handlers).  SIGTERM or SIGINT: leave gracefully (a second one: exit now).\n"
        "\n"
        "  -r, --redis ADDR         Redis: HOST:PORT, HOST, or a unix socket path\n"
        "                           (default 127.0.0.1:6379)\n"
        "  -P, --prefix P           key prefix of the deployment (default rp)\n"
        "  -p, --plugin FILE        the handler plugin (required; write ./ for a file\n"
        "                           in the current directory)\n"
        "      --plugin-arg STR     string handed to the plugin (registry->arg)\n"
        "  -n, --routees N          pool size (default: online CPUs)\n"
        "  -i, --id ID              node id (default HOST:PID)\n"
        "  -u, --user U             Redis ACL user\n"
        "      --password-file F    Redis password: the first line of F\n"
        "  -m, --metrics-port N     serve Prometheus /metrics on port N (0: any free port)\n"
        "      --metrics-bind ADDR  address for /metrics (default 127.0.0.1)\n"
        "      --heartbeat-ms N     depth-report interval (default 200)\n"
        "      --dead-after-ms N    a node silent this long is dead (default 3000)\n"
        "      --max-deliveries N   deliveries before dead-lettering (default 5)\n"
        "      --max-inflight N     prefetch bound (default 2 x routees)\n"
        "      --max-payload BYTES  payload cap (default 1 MiB)\n"
        "  -h, --help               this text\n"
        "  -V, --version            version\n"
        "\n"
        "On start it prints one line on stdout:\n"
        "  ready id=ID prefix=P handlers=a,b,... metrics=PORT\n"
        "Exit status: 0 left gracefully, 1 runtime failure, 2 bad command line.\n");
}

enum { OPT_PLUGIN_ARG = 256, OPT_PASSWORD_FILE, OPT_METRICS_BIND, OPT_HEARTBEAT,
       OPT_DEAD_AFTER, OPT_MAX_DELIVERIES, OPT_MAX_INFLIGHT, OPT_MAX_PAYLOAD };

static const struct option LONGOPTS[] = {
    {"redis", required_argument, NULL, 'r'},     {"prefix", required_argument, NULL, 'P'},
    {"plugin", required_argument, NULL, 'p'},    {"plugin-arg", required_argument, NULL, OPT_PLUGIN_ARG},
    {"routees", required_argument, NULL, 'n'},   {"id", required_argument, NULL, 'i'},
    {"user", required_argument, NULL, 'u'},      {"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
    {"metrics-port", required_argument, NULL, 'm'},
    {"metrics-bind", required_argument, NULL, OPT_METRICS_BIND},
    {"heartbeat-ms", required_argument, NULL, OPT_HEARTBEAT},
    {"dead-after-ms", required_argument, NULL, OPT_DEAD_AFTER},
    {"max-deliveries", required_argument, NULL, OPT_MAX_DELIVERIES},
    {"max-inflight", required_argument, NULL, OPT_MAX_INFLIGHT},
    {"max-payload", required_argument, NULL, OPT_MAX_PAYLOAD},
    {"help", no_argument, NULL, 'h'},            {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

/* Parse an integer option into *out (an int); false after a message. */
static bool int_opt(const char *opt, const char *v, long long min, long long max, int *out)
{
    long long n;

    if (!ca_parse_int("rp-node", opt, v, min, max, &n))
        return false;
    *out = (int)n;
    return true;
}

/* One option into cfg; false (message printed) when its value is bad. */
static bool apply_opt(node_cfg *cfg, int c, const char *v)
{
    int n;

    switch (c) {
    case 'r': cfg->co.redis = v; return true;
    case 'P': cfg->co.prefix = v; return true;
    case 'p': cfg->plugin = v; return true;
    case OPT_PLUGIN_ARG: cfg->plugin_arg = v; return true;
    case 'i': cfg->co.node_id = v; return true;
    case 'u': cfg->co.user = v; return true;
    case OPT_PASSWORD_FILE: cfg->password_file = v; return true;
    case OPT_METRICS_BIND: cfg->metrics_bind = v; return true;
    case 'n': return int_opt("--routees", v, 1, 4096, &cfg->routees);
    case 'm': return int_opt("--metrics-port", v, 0, 65535, &cfg->metrics_port);
    case OPT_HEARTBEAT: return int_opt("--heartbeat-ms", v, 1, 60000, &cfg->co.heartbeat_ms);
    case OPT_DEAD_AFTER: return int_opt("--dead-after-ms", v, 2, 3600000, &cfg->co.dead_after_ms);
    case OPT_MAX_DELIVERIES:
        if (!int_opt("--max-deliveries", v, 1, 1000, &n))
            return false;
        cfg->co.max_deliveries = (unsigned)n;
        return true;
    case OPT_MAX_INFLIGHT:
        if (!int_opt("--max-inflight", v, 0, 100000, &n))
            return false;
        cfg->co.max_inflight = (unsigned)n;
        return true;
    case OPT_MAX_PAYLOAD:
        if (!int_opt("--max-payload", v, 0, (long long)RP_CLUSTER_PAYLOAD_MAX, &n))
            return false;
        cfg->co.max_payload = (size_t)n;
        return true;
    }
    return false;
}

/* @return -1 to continue, else the exit status. */
static int parse_args(node_cfg *cfg, int argc, char **argv)
{
    int c;

    rp_cluster_options_init(&cfg->co);
    cfg->routees = (int)sysconf(_SC_NPROCESSORS_ONLN);
    cfg->routees = cfg->routees > 0 ? cfg->routees : 1;
    cfg->metrics_port = -1;
    cfg->metrics_bind = "127.0.0.1";
    while ((c = getopt_long(argc, argv, "r:P:p:n:i:u:m:hV", LONGOPTS, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 0;
        } else if (c == 'V') {
            printf("rp-node %s (libroutepool %s)\n", RP_VERSION_STRING, rp_version());
            return 0;
        } else if (c == '?' || !apply_opt(cfg, c, optarg)) {
            fprintf(stderr, "rp-node: try --help\n");
            return 2;
        }
    }
    if (optind < argc || !cfg->plugin) {
        fprintf(stderr, "rp-node: %s (try --help)\n",
                optind < argc ? "unexpected argument" : "--plugin FILE is required");
        return 2;
    }
    if (cfg->password_file) {
        if (!ca_read_password("rp-node", cfg->password_file, cfg->password, sizeof cfg->password))
            return 2;
        cfg->co.password = cfg->password;
    }
    return -1;
}

/* Block the two signals in every thread; the main thread sigwait()s. */
static void block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);   /* hiredis 0.14 writes without MSG_NOSIGNAL */
}

static void print_ready(const rp_cluster_node *node, const node_cfg *cfg,
                        const cluster_plugin *pl, const cluster_metrics *m)
{
    printf("ready id=%s prefix=%s handlers=", rp_cluster_node_id(node), cfg->co.prefix);
    for (size_t i = 0; i < pl->n; i++)
        printf("%s%s", i ? "," : "", pl->names[i]);
    printf(" metrics=%d\n", m ? cluster_metrics_port(m) : -1);
    fflush(stdout);
}

/* Wait for SIGINT/SIGTERM; afterwards a second one ends the process. */
static void wait_for_signal(const sigset_t *set)
{
    int sig = 0;

    while (sigwait(set, &sig) != 0)
        ;
    fprintf(stderr, "rp-node: %s: leaving (again to exit at once)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, set, NULL);
}

static int run(node_cfg *cfg, const sigset_t *set)
{
    rp_pool_options po;
    rp_pool *pool = NULL;
    rp_cluster_node *node = NULL;
    cluster_plugin pl = {0};
    cluster_metrics *m = NULL;
    char err[512] = "";
    int rc;

    rp_pool_options_init(&po);
    po.routees = (unsigned)cfg->routees;
    if ((rc = rp_pool_create(&pool, &po)) < 0 || (rc = rp_cluster_join(&node, pool, &cfg->co)) < 0) {
        fprintf(stderr, "rp-node: %s: %s\n", rp_err_name(rc), rp_errmsg());
        goto out;
    }
    if (cluster_plugin_load(&pl, cfg->plugin, cfg->plugin_arg, node) < 0) {
        fprintf(stderr, "rp-node: %s\n", pl.err);
        rc = -1;
        goto out;
    }
    if (cfg->metrics_port >= 0 &&
        !(m = cluster_metrics_start(cfg->metrics_bind, cfg->metrics_port, pool, node, err, sizeof err))) {
        fprintf(stderr, "rp-node: %s\n", err);
        rc = -1;
        goto out;
    }
    if ((rc = rp_cluster_start(node)) < 0) {
        fprintf(stderr, "rp-node: %s: %s\n", rp_err_name(rc), rp_errmsg());
        goto out;
    }
    print_ready(node, cfg, &pl, m);
    wait_for_signal(set);
out:
    cluster_metrics_stop(m);
    rp_cluster_leave(node);
    cluster_plugin_unload(&pl);   /* after the leave: no handler runs any more */
    rp_pool_destroy(pool);
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    node_cfg cfg = {0};
    sigset_t set;
    int rc = parse_args(&cfg, argc, argv);

    if (rc >= 0)
        return rc;
    block_signals(&set);
    rc = run(&cfg, &set);
    memset(cfg.password, 0, sizeof cfg.password);
    return rc;
}
