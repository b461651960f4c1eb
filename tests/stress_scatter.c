/* SPDX-License-Identifier: MIT */
/*
 * stress_scatter.c - asks and scatters under load, as a plain program
 * (TSan runs it; Criterion cannot run under TSan).
 *
 * 4 submitters x N operations (RP_STRESS_JOBS, default 20,000 each) over
 * one 4-routee pool, mixing: scatter asks (losers cancelled, losers kept,
 * tail-chopping), rp_router_tell_reply, plain rp_router_ask on a
 * round-robin router, rp_routee_ask with 1-2 ms timeouts (some expire in
 * the queue), and a few bare tells on a scatter router (no reply target).
 * Jobs reply, fail or return without replying at random, sometimes after a
 * short spin; some poll rp_job_cancelled().  Submitters release their
 * future at once: only the completion callback sees the answer.
 *
 * Checks, after everything is destroyed:
 *   - every future completed exactly once (on_complete count), with an
 *     outcome its kind allows (value = the item, or a known error code);
 *   - every copy ran or was handed back exactly once: per item, runs +
 *     handed back = copies sent (4 for a scatter over 4 live routees, 1 for
 *     a plain ask, 1..4 for tail-chopping), and over the pool, the
 *     mailboxes' enqueued total = runs + hand-backs of every item;
 *   - the routees' run total = the items' run total;
 *   - each scatter router resolved exactly its asks, and its histogram
 *     counts add up;
 *   - sg-keep (losers not cancelled) is destroyed right after a last burst
 *     of asks, with copies still queued and running: its open scatters
 *     fail "stopped" while routees finish their copies;
 *   - rp_job_reply / rp_job_fail returned only codes the contract allows;
 *   - one warning per bare tell, and no other log line.
 * Leaks are ASan's job (the stress runs in the ASan build too).
 * Exit status 0 and "1 passed, 0 failed" on success.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "routepool/routepool.h"

#define SUBMITTERS 4
#define ROUTEES 4
#define FAIL_CODE 7
#define TAIL 64 /* last sg-keep asks, in flight when sg-keep is destroyed */

enum kind {
    K_SG_CANCEL,  /* rp_router_ask, cancel_losers on */
    K_SG_KEEP,    /* rp_router_ask, cancel_losers off */
    K_SG_CHOP,    /* rp_router_ask, tail-chopping */
    K_TELL_REPLY, /* rp_router_tell_reply, cancel_losers on */
    K_RR_ASK,     /* rp_router_ask, round-robin */
    K_ROUTEE_ASK, /* rp_routee_ask, 1-2 ms timeout */
    K_BARE_TELL,  /* rp_router_tell on a scatter router */
    K_KINDS
};

static const char *const kind_names[K_KINDS] = {
    "sg-cancel", "sg-keep", "sg-chop", "tell-reply", "rr-ask", "routee-ask", "bare-tell"};

typedef struct item {
    uint32_t id;
    uint8_t kind;
    bool tail; /* one of the last sg-keep asks */
    atomic_int runs;
    atomic_int undel;
    atomic_int completes;
    atomic_int fulfilled;
} item;

static long per_submitter;
static atomic_int tail_hold = 1; /* tail jobs wait until sg-keep is gone */
static item *items;
static rp_pool *pool;
static rp_router *sg_cancel, *sg_keep, *sg_chop, *rr;
static atomic_long bad_outcome, bad_reply_rc, bad_undel_reason, submit_errors;
static atomic_long warnings, other_logs, stopped;
static atomic_long kind_count[K_KINDS], kind_fulfilled[K_KINDS];

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void spin_ns(long ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static bool is_scatter(int kind)
{
    return kind == K_SG_CANCEL || kind == K_SG_KEEP || kind == K_SG_CHOP ||
           kind == K_TELL_REPLY;
}

/* The job: behaviour drawn from (item, routee, run). */
static void job(rp_job_ctx *ctx, void *arg)
{
    item *it = arg;
    const int r = rp_job_routee(ctx);
    const uint64_t h = mix(((uint64_t)it->id << 8) ^ (uint64_t)r ^
                           ((uint64_t)atomic_load_explicit(&it->runs, memory_order_relaxed) << 40));
    const unsigned what = (unsigned)(h % 100);
    int rc = 0;

    /* Tail copies hold their routee until sg-keep is destroyed, so those
     * scatters are still open then (5 s at most, whatever happens). */
    for (int i = 0; it->tail && atomic_load(&tail_hold) && i < 5000; i++)
        spin_ns(1000000);

    if ((h >> 8) % 16 == 0) {
        /* A longer job that gives up when it lost. */
        for (int i = 0; i < 20 && !rp_job_cancelled(ctx); i++)
            spin_ns(2000);
    } else if ((h >> 8) % 4 == 0) {
        spin_ns((long)((h >> 16) % 5000));
    }
    if (what < 55)
        rc = rp_job_reply(ctx, it);
    else if (what < 75)
        rc = rp_job_fail(ctx, FAIL_CODE, (h >> 24) & 1 ? "stress failure" : NULL);
    /* else: return without replying */
    if (rc != 0) {
        /* Scatter losers are refused with RP_ECANCELLED, replies after
         * the scatter (or the caller's ask) timed out with RP_ETIMEDOUT;
         * plain asks that timed out meanwhile with RP_ETIMEDOUT. */
        const bool ok = rc == RP_ETIMEDOUT || (is_scatter(it->kind) && rc == RP_ECANCELLED);
        if (!ok) {
            atomic_fetch_add(&bad_reply_rc, 1);
            fprintf(stderr, "item %u (%s): reply returned %s\n", it->id,
                    kind_names[it->kind], rp_err_name(rc));
        }
    }
    atomic_fetch_add_explicit(&it->runs, 1, memory_order_relaxed);
}

static void undelivered(void *arg, int reason, void *user)
{
    (void)user;
    item *it = arg;
    bool ok;

    switch (it->kind) {
    case K_BARE_TELL:
        ok = reason == RP_ENOREPLY;
        break;
    case K_ROUTEE_ASK:
    case K_RR_ASK:
        ok = reason == RP_EEXPIRED;
        break;
    default: /* scatter copies: cancelled losers, expired copies */
        ok = reason == RP_ECANCELLED || reason == RP_EEXPIRED;
        break;
    }
    if (!ok) {
        atomic_fetch_add(&bad_undel_reason, 1);
        fprintf(stderr, "item %u (%s): handed back with %s\n", it->id,
                kind_names[it->kind], rp_err_name(reason));
    }
    atomic_fetch_add_explicit(&it->undel, 1, memory_order_relaxed);
}

static bool outcome_ok(const item *it, rp_future *f)
{
    const rp_error *e = rp_future_error(f);

    switch (rp_future_status(f)) {
    case RP_FUTURE_FULFILLED: {
        const int r = rp_future_routee(f);
        return rp_future_value(f) == it && r >= 0 && r < ROUTEES && !e;
    }
    case RP_FUTURE_FAILED:
        if (!e || !e->message || rp_future_value(f) || rp_future_routee(f) != -1)
            return false;
        if (is_scatter(it->kind)) {
            if (e->code != RP_EAGGREGATE)
                return false;
            if (it->kind == K_SG_KEEP && e->nmembers == 0 && !e->members &&
                strstr(e->message, "stopped while the scatter was still open")) {
                atomic_fetch_add(&stopped, 1);
                return true;
            }
            if (it->kind == K_SG_CHOP)
                return e->nmembers >= 1 && e->nmembers <= ROUTEES;
            return e->nmembers == ROUTEES;
        }
        return e->code == RP_ETIMEDOUT || e->code == RP_ENOREPLY || e->code == FAIL_CODE;
    default:
        return false;
    }
}

static void completed(rp_future *f, void *user)
{
    item *it = user;

    if (!outcome_ok(it, f)) {
        const rp_error *e = rp_future_error(f);
        atomic_fetch_add(&bad_outcome, 1);
        fprintf(stderr, "item %u (%s): bad outcome: state %d, %s \"%s\"\n", it->id,
                kind_names[it->kind], (int)rp_future_status(f),
                e ? rp_err_name(e->code) : "-", e ? e->message : "");
    }
    if (rp_future_status(f) == RP_FUTURE_FULFILLED)
        atomic_fetch_add_explicit(&it->fulfilled, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&it->completes, 1, memory_order_release);
}

static int pick_kind(uint64_t r)
{
    const unsigned p = (unsigned)(r % 1000);

    if (p < 5)
        return K_BARE_TELL;
    if (p < 205)
        return K_SG_CANCEL;
    if (p < 355)
        return K_SG_KEEP;
    if (p < 455)
        return K_SG_CHOP;
    if (p < 555)
        return K_TELL_REPLY;
    if (p < 780)
        return K_RR_ASK;
    return K_ROUTEE_ASK;
}

static int submit_one(item *it, uint64_t r)
{
    rp_future *f = NULL;
    int rc;

    switch (it->kind) {
    case K_SG_CANCEL:
        rc = rp_router_ask(sg_cancel, job, it, 0, &f);
        break;
    case K_SG_KEEP:
        rc = rp_router_ask(sg_keep, job, it, 0, &f);
        break;
    case K_SG_CHOP:
        rc = rp_router_ask(sg_chop, job, it, 0, &f);
        break;
    case K_TELL_REPLY:
        return rp_router_tell_reply(sg_cancel, job, it, 0, completed, it);
    case K_RR_ASK:
        rc = rp_router_ask(rr, job, it, 200, &f);
        break;
    case K_ROUTEE_ASK:
        rc = rp_routee_ask(rp_pool_routee(pool, (size_t)((r >> 20) % ROUTEES)), job, it,
                           1 + (int)((r >> 30) % 2), &f);
        break;
    default:
        return rp_router_tell(sg_cancel, job, it);
    }
    if (rc != 0)
        return rc;
    rc = rp_future_on_complete(f, completed, it);
    /* Sometimes wait, mostly not: the pool keeps the future alive. */
    if ((r >> 40) % 64 == 0)
        rp_future_wait(f, -1);
    rp_future_release(f);
    return rc;
}

static void *submit(void *p)
{
    const long me = (long)(intptr_t)p;
    uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(me + 1);

    for (long i = 0; i < per_submitter; i++) {
        item *it = &items[me * per_submitter + i];
        const uint64_t r = xorshift(&rng);
        int rc;

        it->id = (uint32_t)(me * per_submitter + i);
        it->kind = (uint8_t)pick_kind(r);
        atomic_fetch_add(&kind_count[it->kind], 1);
        if ((rc = submit_one(it, r)) != 0) {
            atomic_fetch_add(&submit_errors, 1);
            fprintf(stderr, "submit failed: %s (%s)\n", rp_err_name(rc), rp_errmsg());
        }
    }
    return NULL;
}

/* The routers' log: one warning per bare tell, nothing else. */
static void count_log(int level, const char *msg, void *user)
{
    (void)user;
    if (level == RP_LOG_WARN && strstr(msg, "no reply target"))
        atomic_fetch_add(&warnings, 1);
    else
        atomic_fetch_add(&other_logs, 1);
}

static int make_sg(rp_router **out, const char *name, bool cancel, double interval_ms)
{
    rp_scatter_gather_options sg;
    rp_router_options ro;

    rp_scatter_gather_options_init(&sg);
    sg.timeout_ms = 40; /* short: some scatters time out under load */
    sg.cancel_losers = cancel;
    sg.interval_ms = interval_ms;
    rp_router_options_init(&ro);
    ro.name = name;
    ro.log = count_log;
    return rp_router_create_scatter_gather(out, pool, &sg, &ro);
}

static long total_completes(long total)
{
    long n = 0;
    for (long i = 0; i < total; i++)
        n += atomic_load_explicit(&items[i].completes, memory_order_acquire);
    return n;
}

static bool check_sg(rp_router *rt, const char *name, uint64_t asks, uint64_t tells)
{
    rp_scatter_stats st;
    uint64_t resolved = 0, buckets = 0;

    if (rp_router_scatter_stats(rt, &st) != 0)
        return false;
    for (int i = 0; i < RP_SCATTER_OUTCOMES; i++)
        resolved += st.resolved[i];
    for (int b = 0; b <= RP_SCATTER_LATENCY_BUCKETS; b++)
        buckets += st.latency_buckets[b];
    printf("%s: first %llu timeout %llu all-failed %llu stopped %llu no-reply-target %llu, "
           "cancelled %llu, mean latency %.3f ms\n",
           name, (unsigned long long)st.resolved[0], (unsigned long long)st.resolved[1],
           (unsigned long long)st.resolved[2], (unsigned long long)st.resolved[3],
           (unsigned long long)st.resolved[4], (unsigned long long)st.cancelled,
           st.latency_count ? st.latency_sum_seconds * 1e3 / (double)st.latency_count : 0.0);
    if (resolved != asks + tells || st.resolved[RP_SCATTER_NO_REPLY_TARGET] != tells ||
        buckets != st.latency_count || st.latency_count != asks) {
        fprintf(stderr, "%s: resolved %llu for %llu asks + %llu tells, buckets %llu, latency_count %llu\n",
                name, (unsigned long long)resolved, (unsigned long long)asks,
                (unsigned long long)tells, (unsigned long long)buckets,
                (unsigned long long)st.latency_count);
        return false;
    }
    return true;
}

int main(void)
{
    const char *env = getenv("RP_STRESS_JOBS");
    rp_pool_options o;
    pthread_t t[SUBMITTERS];
    uint64_t enqueued = 0, routee_runs = 0, expired = 0;
    long total, bad_count = 0, bad_copies = 0, item_runs = 0, item_undel = 0, failed = 0;
    bool ok = true;

    per_submitter = env ? atol(env) : 20000;
    if (per_submitter <= 0)
        per_submitter = 20000;
    total = per_submitter * SUBMITTERS + TAIL;
    items = calloc((size_t)total, sizeof *items);
    rp_pool_options_init(&o);
    o.routees = ROUTEES;
    o.name = "sstress";
    o.on_undelivered = undelivered;
    if (!items || rp_pool_create(&pool, &o) != 0 || make_sg(&sg_cancel, "sg-cancel", true, 0) != 0 ||
        make_sg(&sg_keep, "sg-keep", false, 0) != 0 || make_sg(&sg_chop, "sg-chop", true, 2) != 0 ||
        rp_router_create(&rr, pool, NULL) != 0) {
        fprintf(stderr, "setup failed: %s\n", rp_errmsg());
        return 1;
    }
    for (int i = 0; i < SUBMITTERS; i++)
        pthread_create(&t[i], NULL, submit, (void *)(intptr_t)i);
    for (int i = 0; i < SUBMITTERS; i++)
        pthread_join(t[i], NULL);
    /* Nobody else calls sg-keep any more: a last burst of asks, then stop
     * it with those scatters in flight. */
    for (long i = total - TAIL; i < total; i++) {
        items[i].id = (uint32_t)i;
        items[i].kind = K_SG_KEEP;
        items[i].tail = true;
        atomic_fetch_add(&kind_count[K_SG_KEEP], 1);
        if (submit_one(&items[i], 1ull << 40) != 0) /* do not wait */
            atomic_fetch_add(&submit_errors, 1);
    }
    rp_router_destroy(sg_keep);
    sg_keep = NULL;
    atomic_store(&tail_hold, 0);
    if (rp_pool_wait_idle(pool, 300000) != 0) {
        fprintf(stderr, "pool did not go idle\n");
        return 1;
    }
    /* Every future completes by its deadline at the latest (<= 200 ms). */
    const long expect_completes = total - atomic_load(&kind_count[K_BARE_TELL]);
    for (int i = 0; i < 1000 && total_completes(total) < expect_completes; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }

    ok &= check_sg(sg_cancel, "sg-cancel",
                   (uint64_t)(atomic_load(&kind_count[K_SG_CANCEL]) +
                              atomic_load(&kind_count[K_TELL_REPLY])),
                   (uint64_t)atomic_load(&kind_count[K_BARE_TELL]));
    ok &= check_sg(sg_chop, "sg-chop", (uint64_t)atomic_load(&kind_count[K_SG_CHOP]), 0);
    for (size_t r = 0; r < ROUTEES; r++) {
        rp_routee_stats st;
        rp_routee_stats_get(rp_pool_routee(pool, r), &st);
        enqueued += st.enqueued;
        routee_runs += st.run;
        expired += st.expired;
    }
    /* Destroy everything: nothing may complete twice or leak. */
    rp_router_destroy(sg_cancel);
    rp_router_destroy(sg_chop);
    rp_router_destroy(rr);
    rp_pool_destroy(pool);

    for (long i = 0; i < total; i++) {
        item *it = &items[i];
        const int runs = atomic_load(&it->runs), undel = atomic_load(&it->undel);
        const int copies = runs + undel, completes = atomic_load(&it->completes);
        bool copies_ok;

        item_runs += runs;
        if (it->kind != K_BARE_TELL)
            item_undel += undel;
        switch (it->kind) {
        case K_BARE_TELL:
            copies_ok = runs == 0 && undel == 1;
            break;
        case K_SG_CHOP:
            copies_ok = copies >= 1 && copies <= ROUTEES;
            break;
        case K_RR_ASK:
        case K_ROUTEE_ASK:
            copies_ok = copies == 1;
            break;
        default:
            copies_ok = copies == ROUTEES;
            break;
        }
        if (!copies_ok && bad_copies++ < 10)
            fprintf(stderr, "item %ld (%s): %d runs + %d handed back\n", i,
                    kind_names[it->kind], runs, undel);
        if (completes != (it->kind == K_BARE_TELL ? 0 : 1) && bad_count++ < 10)
            fprintf(stderr, "item %ld (%s): completed %d times\n", i, kind_names[it->kind],
                    completes);
        if (it->kind != K_BARE_TELL && completes == 1) {
            if (atomic_load(&it->fulfilled))
                atomic_fetch_add(&kind_fulfilled[it->kind], 1);
            else
                failed++;
        }
    }
    for (int k = 0; k < K_KINDS; k++)
        printf("%-10s %8ld ops, %8ld fulfilled\n", kind_names[k], atomic_load(&kind_count[k]),
               atomic_load(&kind_fulfilled[k]));
    printf("items %ld: failed %ld; copies enqueued %llu = runs %ld + handed back %ld; "
           "routee runs %llu, expired %llu\n",
           total, failed, (unsigned long long)enqueued, item_runs, item_undel,
           (unsigned long long)routee_runs, (unsigned long long)expired);
    printf("sg-keep: %ld scatters stopped by rp_router_destroy\n", atomic_load(&stopped));
    printf("log: %ld no-reply-target warnings, %ld other lines\n", atomic_load(&warnings),
           atomic_load(&other_logs));
    printf("bad: completes %ld, copies %ld, outcomes %ld, reply rc %ld, hand-back reasons %ld, "
           "submit errors %ld\n",
           bad_count, bad_copies, atomic_load(&bad_outcome), atomic_load(&bad_reply_rc),
           atomic_load(&bad_undel_reason), atomic_load(&submit_errors));
    ok &= bad_count == 0 && bad_copies == 0 && atomic_load(&bad_outcome) == 0 &&
          atomic_load(&bad_reply_rc) == 0 && atomic_load(&bad_undel_reason) == 0 &&
          atomic_load(&submit_errors) == 0 && enqueued == (uint64_t)(item_runs + item_undel) &&
          routee_runs == (uint64_t)item_runs &&
          atomic_load(&warnings) == atomic_load(&kind_count[K_BARE_TELL]) &&
          atomic_load(&other_logs) == 0;
    free(items);
    if (!ok) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    printf("1 passed, 0 failed\n");
    return 0;
}
