/* SPDX-License-Identifier: MIT */
/*
 * tools/cluster_demo.c - rp-cluster demo: a whole cluster on one machine,
 * end to end, in one command (README "Cluster quick start").
 *
 * It starts a throwaway redis-server on a free loopback port (a foreground
 * child, killed by its pid at the end; nothing persisted), three rp-node
 * processes (found beside rp-cluster) with the built-in @demo handlers, and
 * joins as a client-only node.  Then one phase per cluster router:
 * broadcast, round-robin, random, consistent hashing, smallest-mailbox,
 * least-used; each sends a mixed workload of "work" jobs (90 % spin 1 us,
 * 10 % 200 us, fixed seed) as batched tells, keyed tells or broadcasts, and
 * a few asks.  Halfway, right after the random phase is submitted and while
 * node-3 still holds a backlog, node-3 is killed with SIGKILL; the
 * survivors claim its entries once its report is older than dead_after_ms
 * (1000 ms here), and the later phases route around it.
 *
 * Accounting: every payload is "<phase>/<cost>/<seq>" with a demo-wide
 * sequence number, and every job the nodes run appends one line to a shared
 * log (one O_APPEND write, before the job's entry is acknowledged).  So
 * after the run every seq sent must be in the log: the demo prints per node
 * and phase what ran, the duplicates (jobs that ran twice because node-3
 * died after running them but before acknowledging), and "nothing lost"
 * only when every job ran.  Broadcast copies are counted per (seq, node).
 */
#include "cluster_demo.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis.h>

#include "routepool/cluster.h"
#include "routepool/routepool.h"

#define NODES 3
#define PHASES 6
#define KILLED 2             /* node-3 */
#define KILLED_AFTER_PHASE 2         /* right after phase 3 of 6 (random) is submitted */

static const struct {
    const char *tag, *title;
    rp_cluster_router_kind kind;
} PHASE[PHASES] = {
    {"bc", "broadcast", RP_CLUSTER_ROUTER_BROADCAST},
    {"rr", "round-robin", RP_CLUSTER_ROUTER_ROUND_ROBIN},
    {"rnd", "random", RP_CLUSTER_ROUTER_RANDOM},
    {"ch", "consistent-hash", RP_CLUSTER_ROUTER_CONSISTENT_HASH},
    {"sm", "smallest-mailbox", RP_CLUSTER_ROUTER_SMALLEST_MAILBOX},
    {"lu", "least-used", RP_CLUSTER_ROUTER_LEAST_USED},
};

typedef struct demo {
    bool quick;
    char dir[64], log[96], addr[32], node_bin[PATH_MAX];
    pid_t redis_pid, node_pid[NODES];
    bool node_alive[NODES];
    rp_cluster_node *client;
    unsigned seq;                       /* next payload sequence number */
    unsigned first_seq[PHASES + 1];     /* phase p sent seqs [first[p], first[p+1]) */
    unsigned bc_copies;                 /* broadcast copies stored */
    unsigned asks_ok[NODES + 1];        /* answered asks by node (last: unknown) */
    uint64_t rng;
} demo;

static const char PREFIX[] = "demo";

static void msleep(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- processes ---- */

static int free_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* fork + exec argv with stdout to out_fd (-1: /dev/null), stderr to err_path.
 * The child gets SIGTERM when rp-cluster dies (PR_SET_PDEATHSIG), so a demo
 * that crashes or is killed leaves no redis-server or rp-node behind. */
static pid_t spawn(char *const argv[], int out_fd, const char *err_path)
{
    pid_t parent = getpid(), pid = fork();

    if (pid != 0)
        return pid;
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
        _exit(127);                     /* the parent is already gone */
    int null = open("/dev/null", O_RDWR);
    int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(null, STDIN_FILENO);
    dup2(out_fd >= 0 ? out_fd : null, STDOUT_FILENO);
    dup2(err >= 0 ? err : null, STDERR_FILENO);
    execvp(argv[0], argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static bool start_redis(demo *d)
{
    int port = free_port();
    char port_s[16], err[128];

    snprintf(port_s, sizeof port_s, "%d", port);
    snprintf(d->addr, sizeof d->addr, "127.0.0.1:%d", port);
    snprintf(err, sizeof err, "%s/redis.log", d->dir);
    char *argv[] = {"redis-server", "--port", port_s, "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", NULL};
    if (port < 0 || (d->redis_pid = spawn(argv, -1, err)) < 0)
        return false;
    for (int i = 0; i < 200; i++) {   /* up to 10 s for PING */
        struct timeval tv = {0, 200000};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
        redisReply *r = c && !c->err ? redisCommand(c, "PING") : NULL;
        bool up = r && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        redisFree(c);
        if (up)
            return true;
        if (waitpid(d->redis_pid, NULL, WNOHANG) == d->redis_pid) {
            d->redis_pid = 0;
            fprintf(stderr, "rp-cluster demo: redis-server exited (is it installed? see %s)\n", err);
            return false;
        }
        msleep(50);
    }
    fprintf(stderr, "rp-cluster demo: redis-server did not answer PING\n");
    return false;
}

/* rp-node beside this executable (build tree: build/tools/, installed: bin/). */
static bool find_node_bin(demo *d)
{
    char self[PATH_MAX - 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    char *slash = NULL;

    if (n > 0) {
        self[n] = '\0';
        slash = strrchr(self, '/');
    }
    if (!slash) {
        fprintf(stderr, "rp-cluster demo: cannot find my own executable\n");
        return false;
    }
    *slash = '\0';
    snprintf(d->node_bin, sizeof d->node_bin, "%s/rp-node", self);
    if (access(d->node_bin, X_OK) != 0) {
        fprintf(stderr, "rp-cluster demo: %s not found (rp-node is built with rp-cluster)\n",
                d->node_bin);
        return false;
    }
    return true;
}

/* Start node-(k+1) and wait for its "ready" line. */
static bool start_node(demo *d, int k)
{
    char id[24], err[128], plugin_arg[128], line[512];
    int fds[2];

    snprintf(id, sizeof id, "node-%d", k + 1);
    snprintf(err, sizeof err, "%s/%s.err", d->dir, id);
    snprintf(plugin_arg, sizeof plugin_arg, "log=%s", d->log);
    char *argv[] = {d->node_bin, "--redis", d->addr, "--prefix", (char *)PREFIX, "--plugin", "@demo",
                    "--plugin-arg", plugin_arg, "--id", id, "--routees", "2",
                    "--heartbeat-ms", "100", "--dead-after-ms", "1000", NULL};
    if (pipe(fds) < 0)
        return false;
    d->node_pid[k] = spawn(argv, fds[1], err);
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    bool ok = d->node_pid[k] > 0 && f && fgets(line, sizeof line, f) && !strncmp(line, "ready ", 6);
    if (f)
        fclose(f);                   /* the node's later stdout goes nowhere: it prints nothing */
    else
        close(fds[0]);
    d->node_alive[k] = ok;
    if (!ok)
        fprintf(stderr, "rp-cluster demo: %s did not start (see %s)\n", id, err);
    return ok;
}

/* Stop a node: SIGTERM (graceful leave) or SIGKILL; reap it. */
static void stop_node(demo *d, int k, int sig)
{
    if (d->node_pid[k] <= 0)
        return;
    kill(d->node_pid[k], sig);
    waitpid(d->node_pid[k], NULL, 0);
    d->node_pid[k] = 0;
    d->node_alive[k] = false;
}

static void stop_all(demo *d)
{
    rp_cluster_leave(d->client);
    d->client = NULL;
    for (int k = 0; k < NODES; k++)
        stop_node(d, k, SIGTERM);
    if (d->redis_pid > 0) {
        kill(d->redis_pid, SIGTERM);
        waitpid(d->redis_pid, NULL, 0);
        d->redis_pid = 0;
    }
}

/* ---- the workload ---- */

/* "<tag>/<cost>/<seq>": 10 % of the jobs spin 200 us, the rest 1 us. */
static int make_payload(demo *d, int phase, char *buf, size_t cap)
{
    d->rng = d->rng * 6364136223846793005ull + 1442695040888963407ull;
    unsigned cost = (d->rng >> 33) % 10 == 0 ? 200 : 1;
    return snprintf(buf, cap, "%s/%u/%u", PHASE[phase].tag, cost, d->seq++);
}

static bool make_router(demo *d, int phase, rp_cluster_router **r)
{
    rp_cluster_router_options o;

    rp_cluster_router_options_init(&o);
    o.kind = PHASE[phase].kind;
    o.name = PHASE[phase].title;
    o.seed = 42;
    o.member_timeout_ms = 1000;   /* the nodes' --dead-after-ms */
    int rc = rp_cluster_router_create(r, d->client, &o);
    size_t alive = 0;
    for (int k = 0; k < NODES; k++)
        alive += d->node_alive[k];
    for (int i = 0; rc == 0 && i < 250 && rp_cluster_router_size(*r) < alive; i++) {
        msleep(20);
        rp_cluster_router_refresh(*r);
    }
    if (rc < 0)
        fprintf(stderr, "rp-cluster demo: %s router: %s: %s\n", PHASE[phase].title,
                rp_err_name(rc), rp_errmsg());
    return rc == 0;
}

static bool report(const char *what, int rc)
{
    if (rc < 0)
        fprintf(stderr, "rp-cluster demo: %s: %s: %s\n", what, rp_err_name(rc), rp_errmsg());
    return rc == 0;
}

static bool send_broadcasts(demo *d, rp_cluster_router *r, int phase, int n)
{
    char p[64];

    for (int i = 0; i < n; i++) {
        size_t sent = 0;
        int len = make_payload(d, phase, p, sizeof p);
        if (!report("rp_cluster_broadcast", rp_cluster_broadcast(r, "work", p, (size_t)len, &sent)))
            return false;
        d->bc_copies += (unsigned)sent;
    }
    return true;
}

static bool send_keyed(demo *d, rp_cluster_router *r, int phase, int n)
{
    char p[64], key[16];

    for (int i = 0; i < n; i++) {
        int len = make_payload(d, phase, p, sizeof p);
        int klen = snprintf(key, sizeof key, "key-%d", i % 16);
        if (!report("rp_cluster_tell_key",
                    rp_cluster_tell_key(r, key, (size_t)klen, "work", p, (size_t)len)))
            return false;
    }
    return true;
}

/* n tells in pipelined batches of 50. */
static bool send_batches(demo *d, rp_cluster_router *r, int phase, int n)
{
    char buf[50][64];
    const void *payloads[50];
    size_t lens[50];

    for (int done = 0; done < n;) {
        int k = n - done < 50 ? n - done : 50;
        for (int i = 0; i < k; i++) {
            lens[i] = (size_t)make_payload(d, phase, buf[i], sizeof buf[i]);
            payloads[i] = buf[i];
        }
        /* A node that left since the router's last refresh refuses its
         * part of a batch (RP_ENOROUTEE; which part is not said): refresh
         * and send the whole batch again.  Jobs stored twice run twice,
         * which the accounting shows as such: at-least-once. */
        int rc = rp_cluster_tell_batch(r, "work", payloads, lens, (size_t)k, NULL);
        for (int tries = 0; rc == RP_ENOROUTEE && tries < 5; tries++) {
            rp_cluster_router_refresh(r);
            rc = rp_cluster_tell_batch(r, "work", payloads, lens, (size_t)k, NULL);
        }
        if (!report("rp_cluster_tell_batch", rc))
            return false;
        done += k;
    }
    return true;
}

/* n sequential asks; the reply names the node that ran it. */
static bool send_asks(demo *d, rp_cluster_router *r, int phase, int n)
{
    char p[64];

    for (int i = 0; i < n; i++) {
        rp_future *f = NULL;
        size_t len;
        int plen = make_payload(d, phase, p, sizeof p);
        if (!report("rp_cluster_ask", rp_cluster_ask(r, "work", p, (size_t)plen, 10000, &f)))
            return false;
        rp_future_wait(f, -1);
        const char *who = rp_cluster_reply_bytes(f, &len);
        int k = who && len == 6 && !strncmp(who, "node-", 5) ? who[5] - '1' : NODES;
        d->asks_ok[k >= 0 && k < NODES ? k : NODES] += who != NULL;
        if (!who)
            fprintf(stderr, "rp-cluster demo: an ask failed: %s\n", rp_future_error(f)->message);
        rp_future_release(f);
        if (!who)
            return false;
    }
    return true;
}

static bool run_phase(demo *d, int phase)
{
    rp_cluster_router *r = NULL;
    int jobs = d->quick ? 300 : 3000, asks = d->quick ? 5 : 25;
    bool ok;

    d->first_seq[phase] = d->seq;
    if (!make_router(d, phase, &r))
        return false;
    if (PHASE[phase].kind == RP_CLUSTER_ROUTER_BROADCAST)
        ok = send_broadcasts(d, r, phase, d->quick ? 10 : 50);
    else if (PHASE[phase].kind == RP_CLUSTER_ROUTER_CONSISTENT_HASH)
        ok = send_keyed(d, r, phase, jobs);
    else
        ok = send_batches(d, r, phase, jobs) && send_asks(d, r, phase, asks);
    rp_cluster_router_destroy(r);
    d->first_seq[phase + 1] = d->seq;
    printf("  %-17s sent %u %s\n", PHASE[phase].title, d->seq - d->first_seq[phase],
           PHASE[phase].kind == RP_CLUSTER_ROUTER_BROADCAST ? "broadcasts (one copy to each live node)"
           : PHASE[phase].kind == RP_CLUSTER_ROUTER_CONSISTENT_HASH ? "keyed tells (16 keys)"
                                                                     : "jobs: batched tells + asks");
    fflush(stdout);
    return ok;
}

/* ---- accounting ---- */

typedef struct tally {
    unsigned char (*runs)[NODES];   /* runs[seq][node], saturating at 255 */
    unsigned lines[NODES][PHASES];
} tally;

static int phase_of(const demo *d, unsigned seq)
{
    for (int p = 0; p < PHASES; p++)
        if (seq >= d->first_seq[p] && seq < d->first_seq[p + 1])
            return p;
    return -1;
}

/* Re-read the log into t. */
static void read_log(const demo *d, tally *t)
{
    FILE *f = fopen(d->log, "r");
    char line[512], node[32], handler[80], job[300], word[80];
    unsigned dl;

    memset(t->runs, 0, (size_t)d->seq * sizeof *t->runs);
    memset(t->lines, 0, sizeof t->lines);
    while (f && fgets(line, sizeof line, f)) {
        char tag[8];
        unsigned cost, seq;
        int k;
        if (sscanf(line, "ran %31s %79s %299s %u %79s", node, handler, job, &dl, word) != 5 ||
            sscanf(node, "node-%d", &k) != 1 || k < 1 || k > NODES ||
            sscanf(word, "%7[a-z]/%u/%u", tag, &cost, &seq) != 3 || seq >= d->seq)
            continue;
        int p = phase_of(d, seq);
        if (t->runs[seq][k - 1] < 255)
            t->runs[seq][k - 1]++;
        if (p >= 0)
            t->lines[k - 1][p]++;
    }
    if (f)
        fclose(f);
}

typedef struct outcome {
    unsigned expected, ran, duplicates;
} outcome;

static outcome count(const demo *d, const tally *t)
{
    outcome o = {d->bc_copies + (d->seq - d->first_seq[1]), 0, 0};

    for (unsigned s = 0; s < d->seq; s++) {
        bool bc = s < d->first_seq[1];
        unsigned total = 0, nodes = 0;
        for (int k = 0; k < NODES; k++) {
            total += t->runs[s][k];
            nodes += t->runs[s][k] > 0;
        }
        if (bc) {                     /* a copy per node: ran = nodes reached */
            o.ran += nodes;
            o.duplicates += total - nodes;
        } else {
            o.ran += total > 0;
            o.duplicates += total > 1 ? total - 1 : 0;
        }
    }
    return o;
}

/* Poll the log until every job ran (deadline 60 s). */
static outcome wait_all(const demo *d, tally *t)
{
    outcome o = {0};

    for (int i = 0; i < 600; i++) {
        read_log(d, t);
        o = count(d, t);
        if (o.ran >= o.expected)
            break;
        msleep(100);
    }
    return o;
}

static void print_table(const demo *d, const tally *t, outcome o)
{
    printf("\n  jobs run (log lines) per node and cluster router:\n  %-26s", "node");
    for (int p = 0; p < PHASES; p++)
        printf(" %*s", (int)strlen(PHASE[p].title) > 6 ? (int)strlen(PHASE[p].title) : 6,
               PHASE[p].title);
    printf(" %7s %5s\n", "total", "asks");
    for (int k = 0; k < NODES; k++) {
        unsigned sum = 0;
        char name[40];
        snprintf(name, sizeof name, "node-%d%s", k + 1, k == KILLED ? " (killed with -9)" : "");
        printf("  %-26s", name);
        for (int p = 0; p < PHASES; p++) {
            printf(" %*u", (int)strlen(PHASE[p].title) > 6 ? (int)strlen(PHASE[p].title) : 6,
                   t->lines[k][p]);
            sum += t->lines[k][p];
        }
        printf(" %7u %5u\n", sum, d->asks_ok[k]);
    }
    printf("\n  jobs sent: %u (broadcast copies counted once per node); ran: %u; "
           "ran twice: %u (at-least-once: node-3 died after running them, before\n"
           "  acknowledging them)\n",
           o.expected, o.ran, o.duplicates);
    if (o.ran >= o.expected)
        printf("  every job ran: nothing lost.\n");
    else
        printf("  LOST: %u job(s) never ran (logs kept in %s)\n", o.expected - o.ran, d->dir);
}

static bool join_client(demo *d)
{
    rp_cluster_options co;

    rp_cluster_options_init(&co);
    co.redis = d->addr;
    co.prefix = PREFIX;
    co.node_id = "demo-client";
    return report("rp_cluster_join", rp_cluster_join(&d->client, NULL, &co));
}

static bool setup(demo *d)
{
    snprintf(d->dir, sizeof d->dir, "/tmp/rp-cluster-demo-XXXXXX");
    if (!mkdtemp(d->dir)) {
        fprintf(stderr, "rp-cluster demo: mkdtemp: %s\n", strerror(errno));
        return false;
    }
    snprintf(d->log, sizeof d->log, "%s/jobs.log", d->dir);
    if (!find_node_bin(d) || !start_redis(d))
        return false;
    for (int k = 0; k < NODES; k++)
        if (!start_node(d, k))
            return false;
    if (!join_client(d))
        return false;
    printf("rp-cluster demo: redis-server on %s (pid %ld, nothing persisted), prefix %s;\n"
           "  nodes node-1..3 (rp-node --plugin @demo, 2 routees each, pids %ld %ld %ld)\n",
           d->addr, (long)d->redis_pid, PREFIX, (long)d->node_pid[0], (long)d->node_pid[1],
           (long)d->node_pid[2]);
    printf("workload: \"work\" jobs, 90%% spin 1 us, 10%% 200 us (fixed seed), through each router:\n");
    return true;
}

static void remove_dir(const demo *d)
{
    char path[160];
    const char *files[] = {"jobs.log", "redis.log", "node-1.err", "node-2.err", "node-3.err"};

    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", d->dir, files[i]);
        unlink(path);
    }
    rmdir(d->dir);
}

int cluster_demo_run(bool quick, const char *argv0)
{
    demo d = {.quick = quick, .rng = 42};
    tally t = {0};
    bool ok;

    (void)argv0;
    signal(SIGPIPE, SIG_IGN);
    ok = setup(&d);
    for (int p = 0; ok && p < PHASES; p++) {
        ok = run_phase(&d, p);
        if (ok && p == KILLED_AFTER_PHASE) {
            stop_node(&d, KILLED, SIGKILL);
            printf("  -> node-3 killed with SIGKILL (kill -9) halfway, its backlog still queued\n");
        }
    }
    outcome o = {0};
    if (ok && !(t.runs = calloc(d.seq ? d.seq : 1, sizeof *t.runs)))
        ok = false;
    if (ok) {
        printf("waiting for every job (the survivors claim node-3's entries after 1000 ms)...\n");
        fflush(stdout);
        o = wait_all(&d, &t);
        print_table(&d, &t, o);
        ok = o.ran >= o.expected;
    }
    stop_all(&d);
    free(t.runs);
    if (ok)
        remove_dir(&d);
    else if (d.dir[0])
        fprintf(stderr, "rp-cluster demo: failed; logs in %s\n", d.dir);
    return ok ? 0 : 1;
}
