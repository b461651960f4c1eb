/* SPDX-License-Identifier: MIT */
/*
 * bench/streams_floor.c - rp-bench-streams-floor: the Redis Streams floor of
 * rp-bench-cluster (issue 19).
 *
 * What a cluster of routepool nodes cannot beat on one Redis: one producer
 * thread pipelining XADD (at most --inflight commands outstanding) into one
 * stream, and one consumer thread reading it with its consumer group,
 * XREADGROUP COUNT B, acknowledging each batch with one XACK and one XDEL
 * (pipelined together: one round trip per batch).  No jobs run; nothing is
 * decoded beyond the entry ids.  entries/s is measured from the first XADD
 * to the acknowledgement of the last entry, for B = 64 and B = 1024.
 *
 * Each entry carries the fields of a cluster tell (id, h, p; an id as long
 * as rp-bench-cluster's producer's, a 16-byte payload), so the floor moves
 * the same bytes per job as the cluster does and the comparison is of the
 * transport.  Every run uses a
 * fresh stream key (deleted afterwards), and a run counts as measured only
 * when every entry was read and acknowledged exactly once.
 *
 * Output: a table on stdout, CSV rows for bench/run (RP_BENCH_CSV), and
 * with --kv FILE the medians for rp-bench-cluster as floor_b<B>_<name>:
 * per_s, redis_us (Redis CPU per entry), producer_us and consumer_us (the
 * two threads' CPU per entry), in_bytes and out_bytes (Redis's network
 * bytes per entry) and fill (entries per XREADGROUP), for B = 64, 1024.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_redis.h"
#include "common.h"

typedef struct floor_cfg {
    const char *addr;
    uint64_t entries, inflight;
    int runs;
    const char *kv;
} floor_cfg;

typedef struct floor_run {
    const floor_cfg *cfg;
    char key[96];
    unsigned batch;
    uint64_t acked;       /* consumer: entries acknowledged */
    uint64_t batches;     /* consumer: XREADGROUP round trips that returned entries */
    int64_t t_end;        /* consumer: when the last entry was acknowledged */
    int64_t cons_cpu_ns;  /* consumer: its thread's CPU time */
    bool failed;          /* consumer: a reply was missing or wrong */
    atomic_bool stop;     /* producer -> consumer: the producer failed, give up */
} floor_run;

static const char GROUP[] = "rp";

/* The consumer: read, then XACK + XDEL the batch's ids in one round trip. */
static bool ack_batch(redisContext *c, floor_run *r, const redisReply *entries)
{
    size_t n = entries->elements;
    const char **argv = malloc((n + 3) * sizeof *argv);
    size_t *lens = malloc((n + 3) * sizeof *lens);
    bool ok = argv && lens;

    for (size_t i = 0; ok && i < n; i++) {
        const redisReply *e = entries->element[i];
        ok = e->type == REDIS_REPLY_ARRAY && e->elements == 2 &&
             e->element[0]->type == REDIS_REPLY_STRING;
        if (ok) {
            argv[i + 3] = e->element[0]->str;
            lens[i + 3] = e->element[0]->len;
        }
    }
    if (ok) {
        argv[0] = "XACK", argv[1] = r->key, argv[2] = GROUP;
        lens[0] = 4, lens[1] = strlen(r->key), lens[2] = sizeof GROUP - 1;
        redisAppendCommandArgv(c, (int)(n + 3), argv, lens);
        argv[1] = "XDEL", lens[1] = 4;
        argv[2] = r->key, lens[2] = strlen(r->key);
        redisAppendCommandArgv(c, (int)(n + 2), argv + 1, lens + 1);
        for (int k = 0; k < 2 && ok; k++) {
            redisReply *rep = NULL;
            ok = redisGetReply(c, (void **)&rep) == REDIS_OK && rep->type == REDIS_REPLY_INTEGER &&
                 (uint64_t)rep->integer == n;
            freeReplyObject(rep);
        }
    }
    free(argv);
    free(lens);
    return ok;
}

static void *consumer(void *p)
{
    floor_run *r = p;
    redisContext *c = cr_connect(r->cfg->addr, 5000);
    char count[24];

    int64_t cpu0 = bench_thread_cpu_ns();
    snprintf(count, sizeof count, "%u", r->batch);
    const char *argv[] = {"XREADGROUP", "GROUP", GROUP, "c", "COUNT", count, "BLOCK", "1000",
                          "STREAMS", r->key, ">"};
    while (c && !r->failed && r->acked < r->cfg->entries &&
           !atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        redisReply *rep = redisCommandArgv(c, 11, argv, NULL);
        if (!rep || rep->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "XREADGROUP: %s\n", rep ? rep->str : c->errstr);
            r->failed = true;
        } else if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
                   rep->element[0]->type == REDIS_REPLY_ARRAY && rep->element[0]->elements == 2 &&
                   rep->element[0]->element[1]->type == REDIS_REPLY_ARRAY) {
            const redisReply *entries = rep->element[0]->element[1];
            r->failed = !ack_batch(c, r, entries);
            r->acked += entries->elements;
            r->batches++;
        }
        freeReplyObject(rep);
    }
    r->failed |= !c;
    r->t_end = bench_now_ns();
    r->cons_cpu_ns = bench_thread_cpu_ns() - cpu0;
    redisFree(c);
    return NULL;
}

/* The producer: keep at most inflight XADDs outstanding. */
static bool produce(redisContext *c, const floor_run *r)
{
    const uint64_t n = r->cfg->entries, window = r->cfg->inflight;
    char id[48];
    const char payload[16] = "0123456789abcdef";
    uint64_t sent = 0, replied = 0;

    while (replied < n) {
        while (sent < n && sent - replied < window) {
            /* "bench-producer:<join ms x 1024 + n>" is as long */
            int idlen = snprintf(id, sizeof id, "floor-producer:%" PRIu64,
                                 UINT64_C(1800000000000000) + sent);
            const char *argv[] = {"XADD", r->key, "*", "id", id, "h", "noop", "p", payload};
            size_t lens[] = {4, strlen(r->key), 1, 2, (size_t)idlen, 1, 4, 1, sizeof payload};
            redisAppendCommandArgv(c, 9, argv, lens);
            sent++;
        }
        redisReply *rep = NULL;
        if (redisGetReply(c, (void **)&rep) != REDIS_OK || rep->type != REDIS_REPLY_STRING) {
            fprintf(stderr, "XADD: %s\n", rep ? rep->str : c->errstr);
            freeReplyObject(rep);
            return false;
        }
        freeReplyObject(rep);
        replied++;
    }
    return true;
}

typedef struct floor_result {
    double per_s, redis_us, batch_fill;
    double prod_us, cons_us;     /* the two threads' CPU per entry */
    double in_bytes, out_bytes;  /* Redis's network bytes per entry */
} floor_result;

static bool one_run(const floor_cfg *cfg, unsigned batch, int run, floor_result *out)
{
    floor_run r = {.cfg = cfg, .batch = batch};
    atomic_init(&r.stop, false);
    redisContext *c = cr_connect(cfg->addr, 5000);
    pthread_t th;

    snprintf(r.key, sizeof r.key, "rpfloor:%ld:%u:%d", (long)getpid(), batch, run);
    if (!c || !cr_command_ok(c, "XGROUP CREATE", 6,
                             (const char *[]){"XGROUP", "CREATE", r.key, GROUP, "$", "MKSTREAM"})) {
        redisFree(c);
        return false;
    }
    double cpu0 = cr_redis_cpu_s(c), in0 = 0, out0 = 0, in1 = 0, out1 = 0;
    cr_redis_net_bytes(c, &in0, &out0);
    int64_t t0 = bench_now_ns(), prod0 = bench_thread_cpu_ns();
    if (pthread_create(&th, NULL, consumer, &r) != 0) {
        redisFree(c);
        return false;
    }
    bool produced = produce(c, &r);
    int64_t prod_ns = bench_thread_cpu_ns() - prod0;
    if (!produced)
        atomic_store_explicit(&r.stop, true, memory_order_relaxed);
    pthread_join(th, NULL);
    r.failed |= !produced;
    double cpu1 = cr_redis_cpu_s(c);
    cr_redis_net_bytes(c, &in1, &out1);
    cr_command_ok(c, "DEL", 2, (const char *[]){"DEL", r.key});
    redisFree(c);
    if (r.failed || r.acked != cfg->entries) {
        fprintf(stderr, "floor run failed: %" PRIu64 " of %" PRIu64 " acknowledged\n", r.acked,
                cfg->entries);
        return false;
    }
    out->per_s = (double)cfg->entries * 1e9 / (double)(r.t_end - t0);
    out->redis_us = (cpu1 - cpu0) * 1e6 / (double)cfg->entries;
    out->batch_fill = (double)cfg->entries / (double)r.batches;
    out->prod_us = (double)prod_ns / 1e3 / (double)cfg->entries;
    out->cons_us = (double)r.cons_cpu_ns / 1e3 / (double)cfg->entries;
    out->in_bytes = (in1 - in0) / (double)cfg->entries;
    out->out_bytes = (out1 - out0) / (double)cfg->entries;
    return true;
}

/* The medians of one batch size, printed and into the kv file as
 * floor_b<B>_<name>. */
static void kv_median(const floor_cfg *cfg, unsigned batch, const char *name, double *v)
{
    char key[64];

    snprintf(key, sizeof key, "floor_b%u_%s", batch, name);
    cr_kv_write(cfg->kv, key, bench_median(v, (size_t)cfg->runs));
}

static bool measure(const floor_cfg *cfg, unsigned batch)
{
    double per_s[16], redis_us[16], fill[16], prod[16], cons[16], in[16], out[16];
    char cas[64];
    floor_result res;

    for (int i = 0; i < cfg->runs; i++) {
        if (!one_run(cfg, batch, i, &res))
            return false;
        per_s[i] = res.per_s, redis_us[i] = res.redis_us, fill[i] = res.batch_fill;
        prod[i] = res.prod_us, cons[i] = res.cons_us, in[i] = res.in_bytes, out[i] = res.out_bytes;
        printf("  COUNT %4u  run %d: %9.0f entries/s  %5.2f us Redis CPU/entry  %6.1f entries/read"
               "  producer %4.2f us, consumer %4.2f us CPU/entry  %5.1f B in, %5.1f B out/entry\n",
               batch, i + 1, res.per_s, res.redis_us, res.batch_fill, res.prod_us, res.cons_us,
               res.in_bytes, res.out_bytes);
    }
    snprintf(cas, sizeof cas, "streams floor, XREADGROUP COUNT %u", batch);
    printf("  COUNT %4u  median: %9.0f entries/s  %5.2f us Redis CPU/entry  %6.1f entries/read\n",
           batch, bench_median(per_s, (size_t)cfg->runs), bench_median(redis_us, (size_t)cfg->runs),
           bench_median(fill, (size_t)cfg->runs));
    bench_csv_samples("cluster-floor", cas, "throughput", "entries/s", per_s, (size_t)cfg->runs);
    bench_csv_samples("cluster-floor", cas, "redis-cpu", "us/entry", redis_us, (size_t)cfg->runs);
    bench_csv_samples("cluster-floor", cas, "client-cpu", "us/entry", cons, (size_t)cfg->runs);
    kv_median(cfg, batch, "per_s", per_s);
    kv_median(cfg, batch, "redis_us", redis_us);
    kv_median(cfg, batch, "producer_us", prod);
    kv_median(cfg, batch, "consumer_us", cons);
    kv_median(cfg, batch, "in_bytes", in);
    kv_median(cfg, batch, "out_bytes", out);
    kv_median(cfg, batch, "fill", fill);
    return true;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rp-bench-streams-floor --redis HOST:PORT|PATH [--entries N] [--inflight N]\n"
            "                              [--runs N] [--kv FILE] [--quick]\n"
            "  The Redis Streams floor: one producer pipelining XADD, one consumer\n"
            "  XREADGROUP COUNT 64 and 1024 + one XACK + XDEL per batch, no jobs.\n"
            "  defaults: --entries 200000 --inflight 256 --runs 3 (--quick: 50000, 1 run)\n");
}

int main(int argc, char **argv)
{
    floor_cfg cfg = {.entries = 200000, .inflight = 256, .runs = 3};

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quick")) {
            cfg.entries = 50000, cfg.runs = 1;
            continue;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "--redis"))
            cfg.addr = v;
        else if (!strcmp(a, "--entries"))
            cfg.entries = bench_parse_u64(a, v, 1, 100000000);
        else if (!strcmp(a, "--inflight"))
            cfg.inflight = bench_parse_u64(a, v, 1, 1000000);
        else if (!strcmp(a, "--runs"))
            cfg.runs = (int)bench_parse_u64(a, v, 1, 16);
        else if (!strcmp(a, "--kv"))
            cfg.kv = v;
        else {
            usage(stderr);
            return 2;
        }
    }
    if (!cfg.addr) {
        usage(stderr);
        return 2;
    }
    printf("streams floor: %" PRIu64 " entries of 3 fields (a cluster tell's: id, h, p), %" PRIu64
           " XADDs in flight, %d run(s) per batch size; Redis at %s\n",
           cfg.entries, cfg.inflight, cfg.runs, cfg.addr);
    return measure(&cfg, 64) && measure(&cfg, 1024) ? 0 : 1;
}
