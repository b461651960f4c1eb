/* SPDX-License-Identifier: MIT */
/*
 * tools/rp-cluster.c - rp-cluster: look at and talk to a routepool cluster
 * deployment from the command line (docs/cluster.md).
 *
 *   rp-cluster status                    nodes: state, report age, depth, inbox
 *   rp-cluster submit HANDLER            a tell; payload from --payload, a file or stdin
 *   rp-cluster ask HANDLER               an ask; the reply bytes on stdout
 *   rp-cluster dead list|retry ID|drop ID
 *   rp-cluster demo                      a throwaway Redis + three nodes, end to end
 *
 * submit and ask join as a client-only node (rp_cluster_join with no
 * pool: sends and receives replies, runs nothing, is not a member); status
 * reads the deployment's keys itself (cluster_conn.c) because the library
 * has no call that lists members.  Exit status: 0 done, 1 runtime failure
 * (Redis unreachable, no live node, the ask failed or timed out), 2 bad
 * command line.
 *
 * --router weighted takes its weights from --weights ID=W,...; they are
 * checked here, strictly, before anything is sent (a bad list is a bad
 * command line, exit 2, not the library's RP_EINVAL at router creation).
 * A custom router (RP_CLUSTER_ROUTER_CUSTOM) is a pick callback, i.e.
 * code: library only.  submit --count N sends N jobs through one router,
 * so the weighted (and round-robin) sequence shows; each process has a
 * router of its own, whose sequence starts again at its first node.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster_args.h"
#include "cluster_conn.h"
#include "cluster_demo.h"
#include "routepool/cluster.h"
#include "routepool/routepool.h"

typedef struct rc_cfg {
    rp_cluster_options co;
    const char *password_file, *node, *payload, *payload_file, *router, *key, *weights_arg;
    bool json, quick, count_given;
    int timeout_ms, stale_ms, dead_after_ms;
    long long max, count;
    rp_cluster_weight *weights;   /* --weights, parsed: nweights pairs */
    size_t nweights;
    char *weights_buf;            /* the ids of weights point into it */
    char password[512];
} rc_cfg;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rp-cluster [options] COMMAND [ARGS]\n"
        "Commands:\n"
        "  status                 every node: state (live/stale/dead), report age, lease,\n"
        "                         reported depth, inbox length, fetched-unacknowledged\n"
        "  submit HANDLER         send a tell (runs at least once; exit 0 once Redis stored it)\n"
        "  ask HANDLER            send an ask and print the reply bytes on stdout\n"
        "  dead list              the dead-letter stream (entries whose node kept dying)\n"
        "  dead retry DEAD_ID     re-queue a dead letter (to --node, or any live node)\n"
        "  dead drop DEAD_ID      delete a dead letter\n"
        "  demo                   start a throwaway redis-server and three rp-nodes, push a\n"
        "                         mixed workload through each cluster router, kill -9 one\n"
        "                         node halfway, show per node what ran and that none was lost\n"
        "Options:\n"
        "  -r, --redis ADDR       HOST:PORT, HOST or a unix socket path (default 127.0.0.1:6379)\n"
        "  -P, --prefix P         the deployment's key prefix (default rp)\n"
        "  -u, --user U           Redis ACL user;  --password-file F: password on F's first line\n"
        "  -n, --node ID          submit/ask/retry: this node (default: the live node with the\n"
        "                         smallest reported depth)\n"
        "      --router KIND      submit/ask through a cluster router instead: round-robin,\n"
        "                         random, broadcast (submit only), smallest-mailbox,\n"
        "                         consistent-hash (submit with --key), least-used,\n"
        "                         weighted (with --weights).  A custom router (a pick\n"
        "                         callback) needs code: library only (RP_CLUSTER_ROUTER_CUSTOM)\n"
        "      --weights LIST     weighted: LIST is ID=W,ID=W,... (node ids, distinct; weights\n"
        "                         1..1000000; a=3,b=1: a gets 3 of every 4 jobs); a live node\n"
        "                         not listed weighs 1\n"
        "      --key K            submit: the job's key (consistent-hash routes by it)\n"
        "      --count N          submit: send the job N times through one router or to one\n"
        "                         node (default 1); a router's sequence (round-robin,\n"
        "                         weighted) starts again in each rp-cluster process\n"
        "  -d, --payload STR      the payload (default: stdin, or empty when stdin is a terminal)\n"
        "  -f, --payload-file F   the payload from file F (- for stdin)\n"
        "  -t, --timeout-ms N     ask: give up after N ms (default 5000)\n"
        "      --stale-ms N       status: a report older than N ms is stale (default 1000)\n"
        "      --dead-after-ms N  status: older than N ms is dead (default 3000)\n"
        "      --max N            dead list: at most N entries (default 100)\n"
        "      --quick            demo: a shorter workload\n"
        "  -j, --json             machine-readable output\n"
        "  -h, --help             this text;  -V, --version: the version\n"
        "Exit status: 0 done, 1 runtime failure (Redis unreachable, no live node, the ask\n"
        "failed or timed out), 2 bad command line.\n");
}

enum {
    OPT_PASSWORD_FILE = 256, OPT_STALE, OPT_DEAD_AFTER, OPT_MAX, OPT_QUICK, OPT_ROUTER, OPT_KEY,
    OPT_WEIGHTS, OPT_COUNT
};

static const struct option LONGOPTS[] = {
    {"redis", required_argument, NULL, 'r'},      {"prefix", required_argument, NULL, 'P'},
    {"user", required_argument, NULL, 'u'},       {"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
    {"node", required_argument, NULL, 'n'},       {"payload", required_argument, NULL, 'd'},
    {"payload-file", required_argument, NULL, 'f'}, {"timeout-ms", required_argument, NULL, 't'},
    {"stale-ms", required_argument, NULL, OPT_STALE},
    {"dead-after-ms", required_argument, NULL, OPT_DEAD_AFTER},
    {"max", required_argument, NULL, OPT_MAX},    {"quick", no_argument, NULL, OPT_QUICK},
    {"router", required_argument, NULL, OPT_ROUTER}, {"key", required_argument, NULL, OPT_KEY},
    {"weights", required_argument, NULL, OPT_WEIGHTS},
    {"count", required_argument, NULL, OPT_COUNT},
    {"json", no_argument, NULL, 'j'},             {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},          {NULL, 0, NULL, 0}};

static const struct {
    const char *name;
    rp_cluster_router_kind kind;
} KINDS[] = {{"round-robin", RP_CLUSTER_ROUTER_ROUND_ROBIN},
             {"random", RP_CLUSTER_ROUTER_RANDOM},
             {"broadcast", RP_CLUSTER_ROUTER_BROADCAST},
             {"smallest-mailbox", RP_CLUSTER_ROUTER_SMALLEST_MAILBOX},
             {"consistent-hash", RP_CLUSTER_ROUTER_CONSISTENT_HASH},
             {"least-used", RP_CLUSTER_ROUTER_LEAST_USED},
             {"weighted", RP_CLUSTER_ROUTER_WEIGHTED}};

static bool int_opt(const char *opt, const char *v, long long min, long long max, int *out)
{
    long long n;

    if (!ca_parse_int("rp-cluster", opt, v, min, max, &n))
        return false;
    *out = (int)n;
    return true;
}

static bool apply_opt(rc_cfg *cfg, int c, const char *v)
{
    switch (c) {
    case 'r': cfg->co.redis = v; return true;
    case 'P': cfg->co.prefix = v; return true;
    case 'u': cfg->co.user = v; return true;
    case OPT_PASSWORD_FILE: cfg->password_file = v; return true;
    case 'n': cfg->node = v; return true;
    case 'd': cfg->payload = v; return true;
    case 'f': cfg->payload_file = v; return true;
    case 't': return int_opt("--timeout-ms", v, 1, 3600000, &cfg->timeout_ms);
    case OPT_STALE: return int_opt("--stale-ms", v, 0, 3600000, &cfg->stale_ms);
    case OPT_DEAD_AFTER: return int_opt("--dead-after-ms", v, 1, 3600000, &cfg->dead_after_ms);
    case OPT_MAX: return ca_parse_int("rp-cluster", "--max", v, 1, 100000, &cfg->max);
    case OPT_QUICK: cfg->quick = true; return true;
    case OPT_ROUTER: cfg->router = v; return true;
    case OPT_KEY: cfg->key = v; return true;
    case OPT_WEIGHTS: cfg->weights_arg = v; return true;
    case OPT_COUNT:
        cfg->count_given = true;
        return ca_parse_int("rp-cluster", "--count", v, 1, 1000000, &cfg->count);
    case 'j': cfg->json = true; return true;
    }
    return false;
}

/* The usage text and the messages below spell these limits out. */
_Static_assert(RP_WEIGHT_MAX == 1000000u && RP_CLUSTER_ID_MAX == 128u,
               "rp-cluster's --weights text names 1..1000000 and 128 bytes");

static bool bad_weight(const char *pair, const char *why)
{
    fprintf(stderr, "rp-cluster: --weights: '%s': %s\n", pair, why);
    return false;
}

/* One ID=W of --weights (pair is one comma-separated item, NUL-terminated):
 * ID as node ids are (1..RP_CLUSTER_ID_MAX bytes of [A-Za-z0-9_.:-], so
 * neither '=' nor ',' can be part of one), W decimal digits only (no sign,
 * no spaces), 1..RP_WEIGHT_MAX.  On success the '=' becomes the id's NUL.
 * False after a message. */
static bool parse_weight(char *pair, rp_cluster_weight *w)
{
    static const char ID_CHARS[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-";
    char *eq = strchr(pair, '=');
    size_t id_len = eq ? (size_t)(eq - pair) : 0, digits = eq ? strspn(eq + 1, "0123456789") : 0;
    unsigned long n = 0;

    if (!eq)
        return bad_weight(pair, "no '='; want ID=WEIGHT");
    if (id_len == 0 || id_len > RP_CLUSTER_ID_MAX || strspn(pair, ID_CHARS) != id_len)
        return bad_weight(pair, "the node id must be 1..128 bytes of [A-Za-z0-9_.:-]");
    if (digits == 0 || eq[1 + digits] != '\0')
        return bad_weight(pair, "the weight must be a decimal integer 1..1000000");
    for (size_t i = 0; i < digits && n <= RP_WEIGHT_MAX; i++)
        n = n * 10 + (unsigned long)(eq[1 + i] - '0');   /* stops before it can wrap */
    if (n == 0 || n > RP_WEIGHT_MAX)
        return bad_weight(pair, "the weight must be 1..1000000");
    *eq = '\0';
    w->node_id = pair;
    w->weight = (unsigned)n;
    return true;
}

/* --weights ID=W,... into cfg->weights (ids distinct, at most
 * RP_ROUTEES_MAX pairs).  @return -1 to go on, else the exit status. */
static int parse_weights(rc_cfg *cfg)
{
    size_t n = 1;

    for (const char *p = cfg->weights_arg; *p; p++)
        n += *p == ',';
    if (n > RP_ROUTEES_MAX) {
        fprintf(stderr, "rp-cluster: --weights: %zu pairs, at most %u\n", n, RP_ROUTEES_MAX);
        return 2;
    }
    cfg->weights_buf = strdup(cfg->weights_arg);
    cfg->weights = calloc(n, sizeof *cfg->weights);
    if (!cfg->weights_buf || !cfg->weights) {
        fprintf(stderr, "rp-cluster: out of memory\n");
        return 1;
    }
    char *item = cfg->weights_buf;
    for (size_t i = 0; i < n; i++) {
        char *comma = strchr(item, ',');
        if (comma)
            *comma = '\0';
        if (!*item) {
            fprintf(stderr, "rp-cluster: --weights '%s': item %zu is empty; want ID=W,ID=W,...\n",
                    cfg->weights_arg, i + 1);
            return 2;
        }
        if (!parse_weight(item, &cfg->weights[i]))
            return 2;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(cfg->weights[j].node_id, item)) {
                fprintf(stderr, "rp-cluster: --weights: node '%s' is listed twice\n", item);
                return 2;
            }
        item = comma ? comma + 1 : item;
    }
    cfg->nweights = n;
    return -1;
}

/* --router KIND, and the options that go with a kind.  @return -1 to go
 * on, else the exit status. */
static int check_router(rc_cfg *cfg)
{
    bool known = !cfg->router, weighted = cfg->router && !strcmp(cfg->router, "weighted");

    for (size_t i = 0; !known && i < sizeof KINDS / sizeof KINDS[0]; i++)
        known = !strcmp(cfg->router, KINDS[i].name);
    const char *why = cfg->router && cfg->node ? "--node and --router exclude each other"
        : cfg->router && !strcmp(cfg->router, "custom")
        ? "--router custom: a custom router's pick is a callback, i.e. code: use the library "
          "(RP_CLUSTER_ROUTER_CUSTOM, opts.pick)"
        : !known ? "--router: round-robin, random, broadcast, smallest-mailbox, consistent-hash, "
                   "least-used or weighted"
        : weighted && !cfg->weights_arg ? "--router weighted needs --weights ID=W,ID=W,..."
        : !weighted && cfg->weights_arg ? "--weights goes with --router weighted only"
        : NULL;
    if (why) {
        fprintf(stderr, "rp-cluster: %s\n", why);
        return 2;
    }
    return weighted ? parse_weights(cfg) : -1;
}

/* @return -1 to go on, else the exit status. */
static int parse_args(rc_cfg *cfg, int argc, char **argv)
{
    int c;

    rp_cluster_options_init(&cfg->co);
    cfg->timeout_ms = 5000, cfg->stale_ms = 1000, cfg->dead_after_ms = 3000, cfg->max = 100;
    cfg->count = 1;
    while ((c = getopt_long(argc, argv, "r:P:u:n:d:f:t:jhV", LONGOPTS, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 0;
        } else if (c == 'V') {
            printf("rp-cluster %s (libroutepool %s)\n", RP_VERSION_STRING, rp_version());
            return 0;
        } else if (c == '?' || !apply_opt(cfg, c, optarg)) {
            fprintf(stderr, "rp-cluster: try --help\n");
            return 2;
        }
    }
    int rc = check_router(cfg);
    if (rc >= 0)
        return rc;
    if (cfg->payload && cfg->payload_file) {
        fprintf(stderr, "rp-cluster: --payload and --payload-file exclude each other\n");
        return 2;
    }
    if (cfg->password_file) {
        if (!ca_read_password("rp-cluster", cfg->password_file, cfg->password, sizeof cfg->password))
            return 2;
        cfg->co.password = cfg->password;
    }
    if (!cfg->co.prefix)
        cfg->co.prefix = "rp";
    return -1;
}

static int cmd_status(const rc_cfg *cfg)
{
    char err[512];
    cs_status s;
    redisContext *c = cc_connect(&cfg->co, err, sizeof err);

    if (!c || cs_read(c, cfg->co.prefix, cfg->stale_ms, cfg->dead_after_ms, &s, err, sizeof err) < 0) {
        fprintf(stderr, "rp-cluster status: %s\n", err);
        redisFree(c);
        return 1;
    }
    cs_print(&s, cfg->co.prefix, cfg->json);
    cs_free(&s);
    redisFree(c);
    return 0;
}

/* The target of submit/ask/retry: --node, or the live node with the
 * smallest reported depth (ties: the first id).  NULL after a message. */
static const char *pick_node(const rc_cfg *cfg, char *buf, size_t len)
{
    char err[512];
    cs_status s;
    redisContext *c;

    if (cfg->node)
        return cfg->node;
    if (!(c = cc_connect(&cfg->co, err, sizeof err)) ||
        cs_read(c, cfg->co.prefix, cfg->stale_ms, cfg->dead_after_ms, &s, err, sizeof err) < 0) {
        fprintf(stderr, "rp-cluster: %s\n", err);
        redisFree(c);
        return NULL;
    }
    redisFree(c);
    const cs_node *best = NULL;
    for (size_t i = 0; i < s.n; i++)
        if (!strcmp(s.nodes[i].state, "live") && (!best || s.nodes[i].depth < best->depth))
            best = &s.nodes[i];
    if (best)
        snprintf(buf, len, "%s", best->id);
    else
        fprintf(stderr, "rp-cluster: no live node in deployment %s\n", cfg->co.prefix);
    cs_free(&s);
    return best ? buf : NULL;
}

/* The payload: --payload, --payload-file, else stdin unless a terminal. */
static char *get_payload(const rc_cfg *cfg, size_t *len)
{
    if (cfg->payload) {
        *len = strlen(cfg->payload);
        return strdup(cfg->payload);
    }
    if (!cfg->payload_file && isatty(STDIN_FILENO)) {
        *len = 0;
        return strdup("");
    }
    return ca_read_payload("rp-cluster", cfg->payload_file ? cfg->payload_file : "-",
                           cfg->co.max_payload, len);
}

static int join_client(const rc_cfg *cfg, rp_cluster_node **node)
{
    int rc = rp_cluster_join(node, NULL, &cfg->co);

    if (rc < 0)
        fprintf(stderr, "rp-cluster: %s: %s\n", rp_err_name(rc), rp_errmsg());
    return rc;
}

static int print_reply(const rc_cfg *cfg, const char *target, rp_future *f, int64_t rtt_us)
{
    const rp_error *e = rp_future_error(f);
    size_t len = 0;
    const char *bytes = rp_cluster_reply_bytes(f, &len);

    if (e || !bytes) {
        fprintf(stderr, "rp-cluster ask: %s (%d) from %s: %s\n", e ? rp_err_name(e->code) : "RP_E?",
                e ? e->code : 0, target, e ? e->message : "no reply");
        if (cfg->json) {
            printf("{\"node\":");
            cj_str(stdout, target, strlen(target));
            printf(",\"ok\":false,\"code\":%d,\"error\":\"%s\",\"message\":", e ? e->code : 0,
                   e ? rp_err_name(e->code) : "RP_E?");
            cj_str(stdout, e ? e->message : "", e ? strlen(e->message) : 0);
            printf("}\n");
        }
        return 1;
    }
    if (!cfg->json) {
        fwrite(bytes, 1, len, stdout);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    printf("{\"node\":");
    cj_str(stdout, target, strlen(target));
    printf(",\"ok\":true,\"rtt_us\":%lld,\"reply\":", (long long)rtt_us);
    cj_str(stdout, bytes, len);
    printf("}\n");
    return 0;
}

static int64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A router of cfg->router's kind that sees at least one live node (a
 * bounded wait of up to 2 s for its first reports). */
static int make_router(const rc_cfg *cfg, rp_cluster_node *node, rp_cluster_router **r)
{
    rp_cluster_router_options o;
    const struct timespec tick = {0, 20000000};

    rp_cluster_router_options_init(&o);
    o.name = "rp-cluster";
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (!strcmp(cfg->router, KINDS[i].name))
            o.kind = KINDS[i].kind;
    if (o.kind == RP_CLUSTER_ROUTER_WEIGHTED)
        o.weights = cfg->weights, o.nweights = cfg->nweights;
    int rc = rp_cluster_router_create(r, node, &o);
    for (int i = 0; rc == 0 && i < 100 && rp_cluster_router_size(*r) == 0; i++) {
        nanosleep(&tick, NULL);
        rp_cluster_router_refresh(*r);
    }
    return rc;
}

/* One tell or ask: to target, or through r when target is NULL. */
static int send_one(const rc_cfg *cfg, rp_cluster_node *node, rp_cluster_router *r,
                    const char *target, bool ask, const char *handler, const char *payload,
                    size_t len, rp_future **f)
{
    size_t klen = cfg->key ? strlen(cfg->key) : 0;

    if (target && ask)
        return rp_cluster_ask_node(node, target, handler, payload, len, cfg->timeout_ms, f);
    if (target)
        return rp_cluster_tell_node(node, target, handler, payload, len, cfg->key, klen);
    if (ask)
        return rp_cluster_ask(r, handler, payload, len, cfg->timeout_ms, f);
    return cfg->key ? rp_cluster_tell_key(r, cfg->key, klen, handler, payload, len)
                    : rp_cluster_tell(r, handler, payload, len);
}

static void print_submitted(const rc_cfg *cfg, const char *via, const char *handler, size_t len)
{
    const char *to = cfg->router ? "via" : "to";

    if (!cfg->json && cfg->count == 1) {
        printf("submitted %s (%zu bytes) %s %s\n", handler, len, to, via);
        return;
    } else if (!cfg->json) {
        printf("submitted %lld x %s (%zu bytes each) %s %s\n", cfg->count, handler, len, to, via);
        return;
    }
    printf("{\"%s\":", cfg->router ? "router" : "node");
    cj_str(stdout, via, strlen(via));
    printf(",\"handler\":");
    cj_str(stdout, handler, strlen(handler));
    printf(",\"bytes\":%zu,\"count\":%lld}\n", len, cfg->count);
}

/* submit or ask HANDLER: to --node, through --router, or to the live node
 * with the smallest reported depth. */
static int cmd_send(const rc_cfg *cfg, bool ask, const char *handler)
{
    char buf[RP_CLUSTER_ID_MAX + 1];
    size_t len;
    char *payload = get_payload(cfg, &len);
    const char *target = !payload || cfg->router ? NULL : pick_node(cfg, buf, sizeof buf);
    rp_cluster_node *node = NULL;
    rp_cluster_router *r = NULL;
    rp_future *f = NULL;
    int rc = 1, err = 0;
    long long sent = 0;   /* ask: count is 1 */

    if (!payload || (!target && !cfg->router) || join_client(cfg, &node) < 0)
        goto out;
    int64_t t0 = now_us();
    if (cfg->router && (err = make_router(cfg, node, &r)) < 0)
        goto fail;
    while (sent < cfg->count &&
           (err = send_one(cfg, node, r, target, ask, handler, payload, len, &f)) == 0)
        sent++;
    if (err < 0)
        goto fail;
    if (!ask) {
        print_submitted(cfg, target ? target : cfg->router, handler, len);
        rc = 0;
        goto out;
    }
    rp_future_wait(f, -1);   /* the future has the deadline */
    rc = print_reply(cfg, target ? target : cfg->router, f, now_us() - t0);
    goto out;
fail:
    fprintf(stderr, "rp-cluster %s: %s: %s", ask ? "ask" : "submit", rp_err_name(err), rp_errmsg());
    if (cfg->count > 1)
        fprintf(stderr, " (%lld of %lld jobs stored before it)", sent, cfg->count);
    fputc('\n', stderr);
out:
    rp_future_release(f);
    rp_cluster_router_destroy(r);
    rp_cluster_leave(node);
    free(payload);
    return rc;
}

static void print_dead(const rc_cfg *cfg, const rp_cluster_dead_entry *d, size_t n)
{
    if (!cfg->json) {
        printf("%zu dead letter(s) in %s:dead\n", n, cfg->co.prefix);
        for (size_t i = 0; i < n; i++)
            printf("%s  job %s  handler %s  %zu bytes  %u deliveries  via %s\n", d[i].dead_id,
                   d[i].job_id, d[i].handler, d[i].payload_len, d[i].deliveries,
                   d[i].history ? d[i].history : "");
        return;
    }
    printf("[");
    for (size_t i = 0; i < n; i++) {
        printf("%s{\"dead_id\":", i ? "," : "");
        cj_str(stdout, d[i].dead_id, strlen(d[i].dead_id));
        printf(",\"job_id\":");
        cj_str(stdout, d[i].job_id, strlen(d[i].job_id));
        printf(",\"handler\":");
        cj_str(stdout, d[i].handler, strlen(d[i].handler));
        printf(",\"deliveries\":%u,\"history\":", d[i].deliveries);
        cj_str(stdout, d[i].history ? d[i].history : "", d[i].history ? strlen(d[i].history) : 0);
        printf(",\"payload\":");
        cj_str(stdout, d[i].payload, d[i].payload_len);
        printf("}");
    }
    printf("]\n");
}

/* dead list | retry ID | drop ID */
static int cmd_dead(const rc_cfg *cfg, int argc, char **argv)
{
    rp_cluster_node *node = NULL;
    rp_cluster_dead_entry *d = NULL;
    size_t n = 0;
    int rc = 0;
    bool list = argc == 1 && !strcmp(argv[0], "list");

    if (!list && !(argc == 2 && (!strcmp(argv[0], "retry") || !strcmp(argv[0], "drop")))) {
        fprintf(stderr, "rp-cluster: dead list | dead retry DEAD_ID | dead drop DEAD_ID\n");
        return 2;
    }
    if (join_client(cfg, &node) < 0)
        return 1;
    if (list && (rc = rp_cluster_dead_list(node, (size_t)cfg->max, &d, &n)) == 0)
        print_dead(cfg, d, n);
    else if (!list && !strcmp(argv[0], "retry"))
        rc = rp_cluster_dead_retry(node, argv[1], cfg->node);
    else if (!list)
        rc = rp_cluster_dead_drop(node, argv[1]);
    if (rc < 0)
        fprintf(stderr, "rp-cluster dead %s: %s: %s\n", argv[0], rp_err_name(rc), rp_errmsg());
    else if (!list && !cfg->json)
        printf("%s %s\n", !strcmp(argv[0], "retry") ? "re-queued" : "dropped", argv[1]);
    else if (!list)
        printf("{\"%s\":\"ok\"}\n", argv[0]);
    rp_cluster_dead_list_free(d, n);
    rp_cluster_leave(node);
    return rc < 0 ? 1 : 0;
}

/* The command after the options: args[0..nargs-1]; self is argv[0]. */
static int run(const rc_cfg *cfg, int nargs, char **args, const char *self)
{
    const char *cmd = nargs > 0 ? args[0] : "";

    if (cfg->count_given && strcmp(cmd, "submit") != 0) {
        fprintf(stderr, "rp-cluster: --count goes with submit only\n");
        return 2;
    }
    if (!strcmp(cmd, "status") && nargs == 1)
        return cmd_status(cfg);
    if ((!strcmp(cmd, "submit") || !strcmp(cmd, "ask")) && nargs == 2)
        return cmd_send(cfg, !strcmp(cmd, "ask"), args[1]);
    if (!strcmp(cmd, "dead"))
        return cmd_dead(cfg, nargs - 1, args + 1);
    if (!strcmp(cmd, "demo") && nargs == 1)
        return cluster_demo_run(cfg->quick, self);
    fprintf(stderr, "rp-cluster: %s (try --help)\n",
            nargs == 0 ? "a command is required" : "unknown command or wrong arguments");
    return 2;
}

int main(int argc, char **argv)
{
    rc_cfg cfg = {0};
    int rc = parse_args(&cfg, argc, argv);

    if (rc < 0)
        rc = run(&cfg, argc - optind, argv + optind, argv[0]);
    memset(cfg.password, 0, sizeof cfg.password);
    free(cfg.weights);
    free(cfg.weights_buf);
    return rc;
}
