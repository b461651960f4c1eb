/* SPDX-License-Identifier: MIT */
/*
 * tests/cluster/test_malformed.c - untrusted input (issue 19's test 11):
 * malformed entries written straight into a node's inbox are acknowledged
 * and counted and the node keeps running; the entry decoder and the reply
 * record decoder each take 10^6 seeded random inputs (structured RESP
 * through hiredis's own reader, mutated records) without a fault - CI runs
 * this under ASan+UBSan.  Links the static library to reach entry.h.
 */
#include "common_cluster.h"
#include "entry.h"

/* ---- malformed entries through a real node ---- */

TestSuite(malformed, .init = cluster_setup, .fini = cluster_teardown, .timeout = 120);

static bool inbox_empty(void *id)
{
    redisContext *r = h_redis_connect(&redis);
    long long n = h_int(r, "XLEN %s:inbox:%s", prefix, (const char *)id);
    redisFree(r);
    return n == 0;
}

static void xadd(redisContext *r, int argc, const char **argv, const size_t *lens)
{
    redisReply *x = redisCommandArgv(r, argc, argv, lens);
    cr_assert(x && x->type == REDIS_REPLY_STRING, "XADD: %s", x && x->str ? x->str : "?");
    freeReplyObject(x);
}

/* XADD <inbox> * then nf pairs given as C strings (binary ones separately). */
static void xadd_s(redisContext *r, const char *inbox, int nf, const char *const *kv)
{
    const char *argv[32] = {"XADD", inbox, "*"};
    size_t lens[32] = {4, strlen(inbox), 1};
    for (int i = 0; i < 2 * nf; i++) {
        argv[3 + i] = kv[i];
        lens[3 + i] = strlen(kv[i]);
    }
    xadd(r, 3 + 2 * nf, argv, lens);
}

Test(malformed, malformed_entries__are_acked_counted_and_the_node_keeps_running)
{
    h_node n;
    cr_assert_eq(h_node_start(&n, &redis, prefix, "a", NULL), 0);
    redisContext *r = h_redis_connect(&redis);
    char inbox[128];
    snprintf(inbox, sizeof inbox, "%s:inbox:a", prefix);
    static const char *const bad[][8] = {
        {"id", "c:1", "p", "x"},                        /* no handler */
        {"id", "c:2", "h", "record"},                   /* no payload */
        {"h", "record", "p", "x"},                      /* no id */
        {"id", "c:3", "h", "record", "p", "x"},         /* dup below */
        {"id", "c:4", "h", "rec ord", "p", "x"},        /* bad handler */
        {"id", "c 5", "h", "record", "p", "x"},         /* bad id */
        {"id", "c:6", "h", "record", "p", "x", "r"},    /* r without c */
        {"id", "c:7", "h", "record", "p", "x", "n"},    /* bad n */
        {"id", "c:8", "h", "record", "p", "x", "t"},    /* bad t */
    };
    static const int nfs[] = {2, 2, 2, 4, 3, 3, 4, 4, 4};
    static const char *const extra[][2] = {
        {NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {"p", "y"}, {NULL, NULL}, {NULL, NULL},
        {"r", "client"}, {"n", "-1"}, {"t", "soon"}};
    for (int i = 0; i < 9; i++) {
        const char *kv[10];
        memcpy(kv, bad[i], sizeof(char *) * 8);
        int nf = nfs[i];
        if (extra[i][0]) {
            kv[2 * (nf - 1)] = extra[i][0];
            kv[2 * (nf - 1) + 1] = extra[i][1];
        }
        xadd_s(r, inbox, nf, kv);
    }
    /* A payload over the 1 MiB cap, binary garbage, an over-long key. */
    size_t big = RP_CLUSTER_PAYLOAD_DEFAULT + 10;
    char *huge = malloc(big);
    memset(huge, 0xAB, big);
    const char *hv[] = {"XADD", inbox, "*", "id", "c:9", "h", "record", "p", huge};
    size_t hl[] = {4, strlen(inbox), 1, 2, 3, 1, 6, 1, big};
    xadd(r, 9, hv, hl);
    const char garbage[] = {0, (char)0xff, 'h', 0, '\n', (char)0x80};
    const char *gv[] = {"XADD", inbox, "*", garbage, garbage, "h", garbage};
    size_t gl[] = {4, strlen(inbox), 1, sizeof garbage, sizeof garbage, 1, sizeof garbage};
    xadd(r, 7, gv, gl);
    const char *kv2[] = {"XADD", inbox, "*", "id", "c:10", "h", "record", "p", "x", "k", huge};
    size_t kl[] = {4, strlen(inbox), 1, 2, 4, 1, 6, 1, 1, 1, 5000};
    xadd(r, 11, kv2, kl);
    free(huge);
    /* And one good job after all of it. */
    const char *good[] = {"id", "c:11", "h", "record", "p", "4242"};
    xadd_s(r, inbox, 3, good);
    cr_assert(h_wait(inbox_empty, "a", 20000), "every entry acknowledged and deleted");
    char *out = h_read_file(n.out, NULL);
    cr_assert(out && strcmp(out, "4242 1\n") == 0, "only the good job ran: %s", out ? out : "");
    free(out);
    rp_cluster_node *c = client();
    cr_assert_eq(node_stat(c, "a", "malformed"), 12);
    rp_cluster_leave(c);
    redisFree(r);
    cr_assert_eq(h_node_term(&n), 0, "still running, leaves cleanly");
    h_node_cleanup(&n);
}

/* ---- fuzzing the decoders (no Redis needed) ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const void *s, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void puts_(buf *b, const char *s)
{
    put(b, s, strlen(s));
}

static const char *const names[] = {"id", "h", "p", "k", "r", "c", "t", "o", "n", "hist", "x", ""};
static const char *const values[] = {"c:1", "record", "", "12", "-1", "99999999999999999999",
                                     "a b", "0-1", "client", "1-", "\xff\x00", "9"};

/* A bulk string of the first n bytes of s (at most all of it). */
static void bulk(buf *b, const char *s, size_t n)
{
    char hdr[32];
    if (n > strlen(s))
        n = strlen(s);
    /* Sometimes a lying length: hiredis waits for more or rejects it. */
    size_t said = rnd() % 50 == 0 ? n + rnd() % 3 : n;
    snprintf(hdr, sizeof hdr, "$%zu\r\n", said);
    puts_(b, hdr);
    put(b, s, n);
    puts_(b, "\r\n");
}

static void gen(buf *b, int depth);

static void gen_entry(buf *b, int depth)
{
    int nf = (int)(rnd() % 7);
    char hdr[32];
    puts_(b, "*2\r\n");
    if (rnd() % 8 == 0)
        gen(b, depth + 1);
    else
        bulk(b, rnd() % 2 ? "1-0" : "123456-7", rnd() % 3 ? 8 : 2);
    if (rnd() % 10 == 0) {
        puts_(b, "*-1\r\n");
        return;
    }
    snprintf(hdr, sizeof hdr, "*%d\r\n", 2 * nf + (rnd() % 10 == 0));
    puts_(b, hdr);
    for (int i = 0; i < 2 * nf + 1; i++) {
        const char *s = i % 2 ? values[rnd() % 12] : names[rnd() % 12];
        if (rnd() % 12 == 0)
            gen(b, depth + 1);
        else
            bulk(b, s, rnd() % 10 == 0 ? 2 : strlen(s));
    }
}

static void gen(buf *b, int depth)
{
    char hdr[48];
    switch (depth > 4 ? 1 + rnd() % 3 : rnd() % 6) {
    case 0: {
        int n = (int)(rnd() % 4) - (rnd() % 10 == 0);
        snprintf(hdr, sizeof hdr, "*%d\r\n", n);
        puts_(b, hdr);
        for (int i = 0; i < n; i++)
            gen(b, depth + 1);
        break;
    }
    case 1:
        bulk(b, values[rnd() % 12], 3);
        break;
    case 2:
        snprintf(hdr, sizeof hdr, ":%lld\r\n", (long long)(rnd() % 100) - 50);
        puts_(b, hdr);
        break;
    case 3:
        puts_(b, rnd() % 2 ? "+OK\r\n" : "-ERR x\r\n");
        break;
    default:
        gen_entry(b, depth);
        break;
    }
}

/* Exercise every decoder entry point on a parsed reply. */
static void decode_all(const redisReply *r)
{
    rp__entry e;
    const char *why;
    const redisReply *entries;
    rp__bytes cursor;
    int rc = rp__entry_decode(r, RP_CLUSTER_PAYLOAD_DEFAULT, &e, &why);
    if (rc == RP__ENTRY_OK) {
        cr_assert(e.id.p && e.h.p && e.p.p);
        cr_assert(e.p.len <= RP_CLUSTER_PAYLOAD_DEFAULT);
    }
    if (rp__read_entries(r, &entries) == 0 && entries)
        for (size_t i = 0; i < entries->elements; i++)
            rp__entry_decode(entries->element[i], 64, &e, &why);
    if (rp__autoclaim_entries(r, &cursor, &entries) == 0)
        for (size_t i = 0; i < entries->elements; i++)
            rp__entry_decode(entries->element[i], 64, &e, &why);
    if (r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements && i < 4; i++)
            rp__entry_decode(r->element[i], 64, &e, &why);
}

static long fuzz_entries(long iterations)
{
    buf b = {0};
    long parsed = 0;
    redisReader *rd = redisReaderCreate();
    for (long it = 0; it < iterations; it++) {
        b.len = 0;
        /* Wrap as an XREADGROUP reply half of the time. */
        if (rnd() % 2) {
            puts_(&b, "*1\r\n*2\r\n$5\r\ninbox\r\n*2\r\n");
            gen_entry(&b, 1);
            gen(&b, 2);
        } else {
            gen(&b, 0);
        }
        if (rnd() % 20 == 0 && b.len) /* a flipped byte */
            b.p[rnd() % b.len] ^= (char)(1u << (rnd() % 8));
        void *reply = NULL;
        if (redisReaderFeed(rd, b.p, b.len) != REDIS_OK ||
            redisReaderGetReply(rd, &reply) != REDIS_OK || !reply) {
            redisReaderFree(rd); /* an error or an incomplete reply: start afresh */
            rd = redisReaderCreate();
            continue;
        }
        parsed++;
        decode_all(reply);
        freeReplyObject(reply);
        /* Anything left (a second reply) is dropped with the reader. */
        redisReaderFree(rd);
        rd = redisReaderCreate();
    }
    redisReaderFree(rd);
    free(b.p);
    return parsed;
}

Test(malformed, fuzz__entry_decoder_takes_a_million_random_replies)
{
    rng_state = 0x9e3779b97f4a7c15ull;
    long parsed = fuzz_entries(1000000);
    cr_assert(parsed > 500000, "most inputs must parse as RESP to reach the decoder (%ld)",
              parsed);
}

Test(malformed, fuzz__reply_record_decoder_takes_a_million_random_records)
{
    rng_state = 0x2545f4914f6cdd1dull;
    unsigned char b[96];
    long ok = 0;
    for (long it = 0; it < 1000000; it++) {
        rp__reply in = {rnd(), -(int32_t)(rnd() % 30), (int32_t)(rnd() % 8),
                        {"message", rnd() % 8}, {"payloadbytes", rnd() % 13}};
        size_t n;
        char *enc = rp__reply_encode(&in, &n);
        cr_assert(enc && n <= sizeof b);
        memcpy(b, enc, n);
        free(enc);
        int mode = (int)(rnd() % 4);
        if (mode == 1)
            b[rnd() % n] = (unsigned char)rnd();
        else if (mode == 2)
            n = rnd() % (n + 1);
        else if (mode == 3)
            for (size_t i = 0; i < n; i++)
                b[i] = (unsigned char)rnd();
        /* Decode from an exact-size heap copy so ASan sees any overread. */
        unsigned char *copy = malloc(n ? n : 1);
        memcpy(copy, b, n);
        rp__reply out;
        const char *why;
        if (rp__reply_decode(copy, n, 64, &out, &why) == 0) {
            ok++;
            cr_assert(out.msg.len + out.payload.len + RP__REPLY_HEADER == n);
            if (mode == 0) {
                cr_assert_eq(out.corr, in.corr);
                cr_assert_eq(out.payload.len, in.payload.len);
                cr_assert(memcmp(out.payload.p, in.payload.p, in.payload.len) == 0);
            }
        }
        free(copy);
    }
    cr_assert(ok > 200000, "%ld", ok);
}
