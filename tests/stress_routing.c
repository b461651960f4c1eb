/* SPDX-License-Identifier: MIT */
/*
 * tests/stress_routing.c - every strategy under concurrent submitters, with
 * every job accounted for.
 *
 *   stress_routing [jobs [submitters]]
 *
 * jobs defaults to $RP_STRESS_JOBS, else 1,000,000 (at least 10,000, and
 * rounded down to a multiple of 20 x submitters so the weighted and
 * round-robin checks cover whole cycles and every submitter sends the same
 * number); submitters defaults to 4 (at most 24).  The pool has 4
 * routees.  For each scenario the program prints exact counts and checks:
 *
 *   submitted = accepted + refused          (refused: RP_EFULL, bounded only)
 *   expected deliveries = run + handed back (per scenario)
 *
 * where expected deliveries is accepted jobs (x4 for broadcast, the custom
 * strategy's own count of copies for custom), and that the library's
 * per-routee counters agree with the program's.  Scenario-specific checks:
 *
 *   round-robin      every routee was routed exactly jobs/4 (enqueued);
 *   weighted 1:2:3:4 every routee was routed exactly jobs*w/10 (enqueued);
 *   broadcast        every routee ran exactly one copy of each broadcast;
 *   consistent-hash  each key ran on one routee, in submission order;
 *   custom           bad choices came back RP_EINVAL, counted by the router;
 *   smallest-mailbox routed in balance: see BALANCE below;
 *   thread-churn     round-robin from 8 waves of 24 short-lived submitters
 *                    (more than the 16 producer indexes): exact split;
 *   bounded          drops happened (the routees are held on a gate while
 *                    the mailboxes fill) and still every job is accounted.
 *
 * A plain main() rather than Criterion so it can run under ThreadSanitizer.
 * Returns 0 when every check passes, 1 otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define ROUTEES 4
#define KEYS_PER_THREAD 64
#define MAX_THREADS 24
/* thread churn: waves of submitting threads, more alive at once than
 * there are producer indexes (16, lib/producer.h), each exiting after its
 * share, so later threads inherit the indexes (and the magazines the
 * lanes keep under them) and the rest share the lanes' magazine. */
#define CHURN_THREADS 24
#define CHURN_WAVES 8
#define BOUNDED_CAPACITY 64
#define MIN_JOBS 10000

/*
 * BALANCE: with smallest-mailbox, the jobs the router gave each routee (its
 * enqueued count) must show neither a starved routee nor a flooded one.
 * Not the run counts: the pool steals (its default), so which routee runs a
 * job follows which thread the kernel runs, not the router.  On 2 vCPUs with
 * 4 routees and 4 submitters the kernel alone can give one thread a fraction
 * of another's CPU over the ~100 ms a scenario lasts, and a routee that gets
 * more CPU rightly gets more jobs (its queue stays shallower): one run in a
 * few dozen here routed one routee 2.0x the mean while the other three
 * shared the rest evenly (0.67x each).  So the checks are:
 *
 *   starved  a routee routed under mean / BALANCE_DIV;
 *   flooded  a routee routed over mean * BALANCE_MUL *and* another routee
 *            under mean / BALANCE_LOW_DIV: the router took the jobs from
 *            someone, where a favoured routee's gain is spread over the
 *            rest, which the router keeps even among themselves.
 *
 * What this can and cannot catch (mutation-checked): smallest-mailbox
 * picking the *deepest* routee failed 7 of 12 runs, each with a starved
 * routee (0.00-0.25x); the other 5 looked like the kernel's skew (up to
 * 1.9x / 0.4x), which is also why the older bound (any routee over 2x)
 * caught no more of them.  Ties always broken towards routee 0 passed every
 * run (a tie needs empty queues, rare with 4 submitters).  The picks
 * themselves are pinned on fixed depths by test_strategy and test_router;
 * this check is the coarse one under load, and must not fail on a kernel.
 */
#define BALANCE_DIV 4
#define BALANCE_MUL 2
#define BALANCE_LOW_DIV 2

typedef struct padded {
    _Alignas(64) atomic_ullong v;
} padded;

/* One scenario's counters; the jobs and callbacks reach it through S. */
typedef struct scenario {
    const char *name;
    padded run[ROUTEES];
    atomic_ullong undel[16]; /* indexed by -reason */
    atomic_ullong bad_routee;
    /* consistent hash: per key, the owner and the next expected seq */
    atomic_int owner[MAX_THREADS * KEYS_PER_THREAD];
    atomic_uint next_seq[MAX_THREADS * KEYS_PER_THREAD];
    atomic_ullong order_errors, owner_errors;
    /* custom: copies the strategy asked for, and its bad choices */
    atomic_ullong custom_copies, custom_bad, custom_calls;
} scenario;

static scenario *S;
static int failures;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            failures++;                                                       \
            printf("  FAIL %s:%d: ", __FILE__, __LINE__);                     \
            printf(__VA_ARGS__);                                              \
            printf("\n");                                                     \
        }                                                                     \
    } while (0)

static void count_job(rp_job_ctx *ctx, void *arg)
{
    (void)arg;
    const int r = rp_job_routee(ctx);
    if (r < 0 || r >= ROUTEES) {
        atomic_fetch_add_explicit(&S->bad_routee, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&S->run[r].v, 1, memory_order_relaxed);
}

static void on_undelivered(void *arg, int reason, void *user)
{
    (void)arg;
    scenario *s = user;
    const int idx = reason < 0 && reason > -16 ? -reason : 0;
    atomic_fetch_add_explicit(&s->undel[idx], 1, memory_order_relaxed);
}

/* Keyed job: arg encodes (key id << 32 | seq). */
static void keyed_job(rp_job_ctx *ctx, void *arg)
{
    const uint64_t v = (uint64_t)(uintptr_t)arg;
    const unsigned key = (unsigned)(v >> 32), seq = (unsigned)v;
    const int r = rp_job_routee(ctx);
    int expect = -1;
    if (!atomic_compare_exchange_strong_explicit(&S->owner[key], &expect, r,
                                                 memory_order_relaxed,
                                                 memory_order_relaxed) &&
        expect != r)
        atomic_fetch_add_explicit(&S->owner_errors, 1, memory_order_relaxed);
    const unsigned prev = atomic_exchange_explicit(&S->next_seq[key], seq + 1,
                                                   memory_order_relaxed);
    if (prev != seq)
        atomic_fetch_add_explicit(&S->order_errors, 1, memory_order_relaxed);
    count_job(ctx, arg);
}

/* Custom strategy: mostly one routee, every 10th job fanned out to two,
 * every 1000th an out-of-range choice (dead-lettered RP_EINVAL). */
static int custom_pick(void *user, rp_route_state *state,
                       rp_routee *const *routees, size_t n, size_t *out)
{
    (void)routees;
    scenario *s = user;
    const uint64_t m = state->message_index;
    atomic_fetch_add_explicit(&s->custom_calls, 1, memory_order_relaxed);
    if (m % 1000 == 999) {
        atomic_fetch_add_explicit(&s->custom_bad, 1, memory_order_relaxed);
        out[0] = n;
        return 1;
    }
    if (m % 10 == 0 && n >= 2) {
        out[0] = m % n;
        out[1] = (m + 1) % n;
        atomic_fetch_add_explicit(&s->custom_copies, 2, memory_order_relaxed);
        return 2;
    }
    out[0] = (m * 7) % n;
    atomic_fetch_add_explicit(&s->custom_copies, 1, memory_order_relaxed);
    return 1;
}

enum mode { TELL, TELL_KEY, BROADCAST_MIX };

typedef struct submitter {
    pthread_t thread;
    rp_router *router;
    enum mode mode;
    int id;
    uint64_t n;
    unsigned tell_copies; /* copies one accepted tell makes */
    uint64_t accepted, refused, errors;
    uint64_t copies; /* copies the accepted jobs make */
    uint64_t broadcasts; /* accepted rp_router_broadcast() calls */
    int first_error;
    atomic_ullong *progress; /* shared count of submits made */
} submitter;

static void *submit_loop(void *arg)
{
    submitter *t = arg;
    char key[32];
    for (uint64_t i = 0; i < t->n; i++) {
        unsigned copies = t->tell_copies;
        int rc;
        if (t->mode == TELL_KEY) {
            const unsigned k = (unsigned)(i % KEYS_PER_THREAD);
            const unsigned id = (unsigned)t->id * KEYS_PER_THREAD + k;
            const uint64_t seq = i / KEYS_PER_THREAD;
            const int len = snprintf(key, sizeof key, "t%d-k%u", t->id, k);
            rc = rp_router_tell_key(t->router, key, (size_t)len, keyed_job,
                                    (void *)(uintptr_t)((uint64_t)id << 32 |
                                                        seq));
        } else if (t->mode == BROADCAST_MIX && i % 2) {
            rc = rp_router_broadcast(t->router, count_job, NULL);
            copies = ROUTEES;
        } else {
            rc = rp_router_tell(t->router, count_job, NULL);
        }
        if (rc == 0) {
            t->accepted++;
            t->copies += copies;
            t->broadcasts += copies == ROUTEES && t->mode == BROADCAST_MIX;
        } else if (rc == RP_EFULL) {
            t->refused++;
        } else {
            if (!t->errors)
                t->first_error = rc;
            t->errors++;
        }
        if (t->progress)
            atomic_fetch_add_explicit(t->progress, 1, memory_order_relaxed);
    }
    return NULL;
}

typedef struct totals {
    uint64_t submitted, accepted, refused, errors, copies, broadcasts;
    uint64_t run, undelivered;
    uint64_t per_run[ROUTEES];
    rp_routee_stats stats[ROUTEES];
    rp_routee_stats sum;
} totals;

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static rp_pool *new_pool(scenario *s, size_t capacity, int overflow)
{
    rp_pool_options o;
    rp_pool_options_init(&o);
    o.name = "stress";
    o.routees = ROUTEES;
    o.mailbox_capacity = capacity;
    o.overflow = overflow;
    o.on_undelivered = on_undelivered;
    o.undelivered_user = s;
    rp_pool *p = NULL;
    const int rc = rp_pool_create(&p, &o);
    if (rc != 0) {
        printf("rp_pool_create: %s (%s)\n", rp_err_name(rc), rp_errmsg());
        exit(2);
    }
    return p;
}

static rp_router *new_router(rp_pool *p, rp_strategy strategy)
{
    rp_router_options o;
    rp_router_options_init(&o);
    o.strategy = strategy;
    rp_router *r = NULL;
    const int rc = rp_router_create(&r, p, &o);
    if (rc != 0) {
        printf("rp_router_create: %s (%s)\n", rp_err_name(rc), rp_errmsg());
        exit(2);
    }
    return r;
}

static scenario *new_scenario(const char *name)
{
    scenario *s = calloc(1, sizeof *s);
    if (!s) {
        printf("out of memory\n");
        exit(2);
    }
    s->name = name;
    for (size_t i = 0; i < MAX_THREADS * KEYS_PER_THREAD; i++)
        atomic_init(&s->owner[i], -1);
    S = s;
    return s;
}

/* Run the submitters, wait for the pool to go idle, gather the counts. */
static void run_submitters(rp_router *r, enum mode mode, unsigned copies,
                           uint64_t jobs, int threads,
                           atomic_ullong *progress, totals *t)
{
    submitter sub[MAX_THREADS];
    memset(t, 0, sizeof *t);
    for (int i = 0; i < threads; i++) {
        sub[i] = (submitter){.router = r, .mode = mode, .id = i,
                             .n = jobs / (uint64_t)threads,
                             .tell_copies = copies, .progress = progress};
        if (pthread_create(&sub[i].thread, NULL, submit_loop, &sub[i]) != 0) {
            printf("pthread_create failed\n");
            exit(2);
        }
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(sub[i].thread, NULL);
        t->submitted += sub[i].n;
        t->accepted += sub[i].accepted;
        t->copies += sub[i].copies;
        t->broadcasts += sub[i].broadcasts;
        t->refused += sub[i].refused;
        t->errors += sub[i].errors;
        CHECK(sub[i].errors == 0, "submitter %d: %" PRIu64 " errors, first %s",
              i, sub[i].errors, rp_err_name(sub[i].first_error));
    }
}

static void gather(rp_pool *p, totals *t)
{
    const int rc = rp_pool_wait_idle(p, 120000);
    CHECK(rc == 0, "wait_idle: %s", rp_err_name(rc));
    for (int i = 0; i < ROUTEES; i++) {
        t->per_run[i] = atomic_load(&S->run[i].v);
        t->run += t->per_run[i];
        rp_routee_stats_get(rp_pool_routee(p, (size_t)i), &t->stats[i]);
        t->sum.enqueued += t->stats[i].enqueued;
        t->sum.run += t->stats[i].run;
        t->sum.rejected += t->stats[i].rejected;
        t->sum.dropped += t->stats[i].dropped;
        t->sum.undelivered += t->stats[i].undelivered;
    }
    for (int i = 0; i < 16; i++)
        t->undelivered += atomic_load(&S->undel[i]);
    CHECK(atomic_load(&S->bad_routee) == 0, "rp_job_routee out of range");
}

static void print_totals(const char *name, const totals *t, int64_t us)
{
    printf("%-22s submitted=%" PRIu64 " accepted=%" PRIu64 " refused=%" PRIu64
           " run=%" PRIu64 " handed_back=%" PRIu64 " (%.0f ms)\n",
           name, t->submitted, t->accepted, t->refused, t->run,
           t->undelivered, (double)us / 1000.0);
    printf("%-22s per routee run:", "");
    for (int i = 0; i < ROUTEES; i++)
        printf(" %" PRIu64, t->per_run[i]);
    printf("  enqueued:");
    for (int i = 0; i < ROUTEES; i++)
        printf(" %" PRIu64, t->stats[i].enqueued);
    printf("\n");
    if (t->undelivered) {
        printf("%-22s handed back by reason:", "");
        for (int i = 1; i < 16; i++)
            if (atomic_load(&S->undel[i]))
                printf(" %s=%llu", rp_err_name(-i),
                       (unsigned long long)atomic_load(&S->undel[i]));
        printf("\n");
    }
}

/* Checks every scenario shares. */
static void check_accounting(const totals *t, uint64_t expected_deliveries,
                             uint64_t extra_runs)
{
    CHECK(t->submitted == t->accepted + t->refused + t->errors,
          "submitted %" PRIu64 " != accepted + refused", t->submitted);
    CHECK(t->run + t->undelivered == expected_deliveries,
          "run %" PRIu64 " + handed back %" PRIu64 " != expected %" PRIu64,
          t->run, t->undelivered, expected_deliveries);
    CHECK(t->sum.run == t->run + extra_runs,
          "routee stats say %" PRIu64 " runs, jobs counted %" PRIu64,
          t->sum.run, t->run + extra_runs);
    CHECK(t->sum.rejected == t->refused,
          "routee stats say %" PRIu64 " rejected, submitters saw %" PRIu64,
          t->sum.rejected, t->refused);
}

/* Half broadcasts (one pinned copy per routee), half round-robin tells.
 * Whether a broadcast advances the message index is not specified, so only
 * the broadcast copies are checked per routee. */
static void check_broadcast_mix(const totals *t, int threads)
{
    const uint64_t per = t->submitted / (uint64_t)threads;
    const uint64_t want = (uint64_t)threads * (per / 2);
    CHECK(t->broadcasts == want, "broadcasts %" PRIu64 ", want %" PRIu64,
          t->broadcasts, want);
    for (int i = 0; i < ROUTEES; i++)
        CHECK(t->stats[i].enqueued >= t->broadcasts,
              "routee %d got %" PRIu64 " jobs for %" PRIu64 " broadcasts", i,
              t->stats[i].enqueued, t->broadcasts);
}

/* Routee i was routed exactly weight[i] of every sum(weights) jobs. */
static void check_split(const totals *t, const unsigned *weights)
{
    uint64_t sum = 0;
    for (int i = 0; i < ROUTEES; i++)
        sum += weights[i];
    for (int i = 0; i < ROUTEES; i++) {
        const uint64_t want = t->submitted / sum * weights[i];
        CHECK(t->stats[i].enqueued == want,
              "routee %d routed %" PRIu64 ", want %" PRIu64, i,
              t->stats[i].enqueued, want);
    }
}

static void check_broadcast(const totals *t)
{
    for (int i = 0; i < ROUTEES; i++)
        CHECK(t->per_run[i] == t->accepted,
              "routee %d ran %" PRIu64 " copies of %" PRIu64 " broadcasts",
              i, t->per_run[i], t->accepted);
}

static void check_keyed(const scenario *s, const totals *t, int threads)
{
    CHECK(atomic_load(&s->order_errors) == 0,
          "%llu keyed jobs ran out of order",
          (unsigned long long)atomic_load(&s->order_errors));
    CHECK(atomic_load(&s->owner_errors) == 0,
          "%llu keyed jobs ran on another routee than their key's first",
          (unsigned long long)atomic_load(&s->owner_errors));
    /* Submitter k / 64 sent key k % 64 for every i with i % 64 == k % 64. */
    const uint64_t per = t->submitted / (uint64_t)threads;
    for (int k = 0; k < threads * KEYS_PER_THREAD; k++) {
        const uint64_t want =
            per / KEYS_PER_THREAD +
            ((uint64_t)(k % KEYS_PER_THREAD) < per % KEYS_PER_THREAD);
        CHECK(atomic_load(&s->next_seq[k]) == want,
              "key %d: %u jobs ran, want %" PRIu64, k,
              atomic_load(&s->next_seq[k]), want);
    }
}

static void check_custom(const scenario *s, const totals *t, rp_router *r)
{
    const uint64_t bad = atomic_load(&s->custom_bad);
    CHECK(atomic_load(&s->custom_calls) == t->submitted,
          "custom strategy called %llu times for %" PRIu64 " jobs",
          (unsigned long long)atomic_load(&s->custom_calls), t->submitted);
    /* Indices are consecutive; wherever they start, 1 in 1000 is bad. */
    CHECK(bad + 1 >= t->submitted / 1000 && bad <= t->submitted / 1000 + 1,
          "bad choices %" PRIu64 " for %" PRIu64 " jobs", bad, t->submitted);
    CHECK(t->undelivered == bad, "handed back %" PRIu64 ", bad choices %"
          PRIu64, t->undelivered, bad);
    CHECK(atomic_load(&s->undel[-RP_EINVAL]) == bad,
          "RP_EINVAL hand-backs %llu != bad choices %" PRIu64,
          (unsigned long long)atomic_load(&s->undel[-RP_EINVAL]), bad);
    CHECK(rp_router_undelivered(r) == bad,
          "router counted %" PRIu64 " discards, want %" PRIu64,
          rp_router_undelivered(r), bad);
}

static void check_balance(const totals *t)
{
    const uint64_t mean = t->sum.enqueued / ROUTEES;
    uint64_t low = UINT64_MAX;

    for (int i = 0; i < ROUTEES; i++)
        if (t->stats[i].enqueued < low)
            low = t->stats[i].enqueued;
    for (int i = 0; i < ROUTEES; i++) {
        const uint64_t got = t->stats[i].enqueued;
        CHECK(got >= mean / BALANCE_DIV,
              "routee %d was routed %" PRIu64 " jobs, mean %" PRIu64
              ": starved (under mean/%d)",
              i, got, mean, BALANCE_DIV);
        CHECK(got <= mean * BALANCE_MUL || low >= mean / BALANCE_LOW_DIV,
              "routee %d was routed %" PRIu64 " jobs, mean %" PRIu64
              ", while another got %" PRIu64 ": flooded (over mean*%d with "
              "one under mean/%d)",
              i, got, mean, low, BALANCE_MUL, BALANCE_LOW_DIV);
    }
}

/* One unbounded pool, one router with the strategy, every job accounted. */
static void scenario_plain(const char *name, rp_strategy strategy,
                           enum mode mode, uint64_t jobs, int threads)
{
    static const unsigned even[ROUTEES] = {1, 1, 1, 1};
    scenario *s = new_scenario(name);
    if (strategy.kind == RP_STRATEGY_CUSTOM)
        strategy.custom_user = s;
    rp_pool *p = new_pool(s, 0, 0);
    rp_router *r = new_router(p, strategy);
    totals t;
    const int64_t t0 = now_us();
    const unsigned copies =
        strategy.kind == RP_STRATEGY_BROADCAST ? ROUTEES : 1;
    run_submitters(r, mode, copies, jobs, threads, NULL, &t);
    gather(p, &t);
    print_totals(name, &t, now_us() - t0);

    const bool custom = strategy.kind == RP_STRATEGY_CUSTOM;
    check_accounting(&t, custom ? atomic_load(&s->custom_copies) +
                                      atomic_load(&s->custom_bad)
                                : t.copies, 0);
    CHECK(t.accepted == t.submitted, "accepted %" PRIu64 " of %" PRIu64,
          t.accepted, t.submitted);
    if (!custom)
        CHECK(t.undelivered == 0, "handed back %" PRIu64, t.undelivered);
    if (mode == BROADCAST_MIX)
        check_broadcast_mix(&t, threads);
    else if (strategy.kind == RP_STRATEGY_ROUND_ROBIN)
        check_split(&t, even);
    else if (strategy.kind == RP_STRATEGY_WEIGHTED)
        check_split(&t, strategy.weights);
    else if (strategy.kind == RP_STRATEGY_BROADCAST)
        check_broadcast(&t);
    else if (strategy.kind == RP_STRATEGY_CONSISTENT_HASH)
        check_keyed(s, &t, threads);
    else if (custom)
        check_custom(s, &t, r);
    else if (strategy.kind == RP_STRATEGY_SMALLEST_MAILBOX)
        check_balance(&t);
    rp_router_destroy(r);
    rp_pool_destroy(p);
    free(s);
}

/* Round-robin from CHURN_WAVES waves of CHURN_THREADS short-lived
 * submitters: every job accounted, the split exact. */
static void scenario_churn(uint64_t jobs)
{
    static const unsigned even[ROUTEES] = {1, 1, 1, 1};
    const uint64_t unit = (uint64_t)CHURN_THREADS * ROUTEES;
    const uint64_t per_wave = jobs / CHURN_WAVES / unit * unit;
    scenario *s = new_scenario("thread-churn");
    rp_pool *p = new_pool(s, 0, 0);
    rp_router *r = new_router(p, rp_strategy_round_robin());
    totals t, wave;
    const int64_t t0 = now_us();

    memset(&t, 0, sizeof t);
    for (int w = 0; w < CHURN_WAVES; w++) {
        run_submitters(r, TELL, 1, per_wave, CHURN_THREADS, NULL, &wave);
        t.submitted += wave.submitted;
        t.accepted += wave.accepted;
        t.refused += wave.refused;
        t.errors += wave.errors;
        t.copies += wave.copies;
    }
    gather(p, &t);
    print_totals("thread-churn", &t, now_us() - t0);
    check_accounting(&t, t.copies, 0);
    CHECK(t.submitted == per_wave * CHURN_WAVES, "submitted %" PRIu64 " of %" PRIu64,
          t.submitted, per_wave * CHURN_WAVES);
    CHECK(t.accepted == t.submitted, "accepted %" PRIu64 " of %" PRIu64, t.accepted,
          t.submitted);
    CHECK(t.undelivered == 0, "handed back %" PRIu64, t.undelivered);
    check_split(&t, even);
    rp_router_destroy(r);
    rp_pool_destroy(p);
    free(s);
}

typedef struct opener_arg {
    atomic_ullong *progress;
    uint64_t threshold;
    gate *g;
} opener_arg;

static void *open_when_full(void *arg)
{
    opener_arg *o = arg;
    const int64_t deadline = now_ms() + 60000;
    while (atomic_load_explicit(o->progress, memory_order_relaxed) <
               o->threshold &&
           now_ms() < deadline)
        sleep_ms(1);
    gate_open(o->g);
    return NULL;
}

/* Every drop went through on_undelivered with the policy's reason, and the
 * routee counters agree with what the callback and the submitters saw. */
static void check_bounded(const scenario *s, const totals *t, int overflow)
{
    const uint64_t dropped = atomic_load(&s->undel[-RP_EDROPPED]);
    const uint64_t evicted = atomic_load(&s->undel[-RP_EEVICTED]);
    CHECK(t->undelivered == dropped + evicted,
          "handed back for other reasons: %" PRIu64,
          t->undelivered - dropped - evicted);
    CHECK(t->sum.dropped == dropped + evicted,
          "routee stats say %" PRIu64 " dropped, callback saw %" PRIu64,
          t->sum.dropped, dropped + evicted);
    CHECK(t->sum.undelivered == t->undelivered,
          "routee stats say %" PRIu64 " undelivered, callback saw %" PRIu64,
          t->sum.undelivered, t->undelivered);
    switch (overflow) {
    case RP_OVERFLOW_REJECT:
        CHECK(t->refused > 0, "no submit was refused");
        CHECK(t->undelivered == 0, "reject handed back %" PRIu64,
              t->undelivered);
        break;
    case RP_OVERFLOW_DROP_NEW:
        CHECK(dropped > 0 && evicted == 0,
              "drop-new: dropped %" PRIu64 " evicted %" PRIu64, dropped,
              evicted);
        CHECK(t->refused == 0, "drop-new refused %" PRIu64, t->refused);
        break;
    case RP_OVERFLOW_DROP_HEAD:
        CHECK(evicted > 0 && dropped == 0,
              "drop-head: dropped %" PRIu64 " evicted %" PRIu64, dropped,
              evicted);
        CHECK(t->refused == 0, "drop-head refused %" PRIu64, t->refused);
        break;
    default:
        break;
    }
}

/* Bounded mailboxes (capacity 64, smallest-mailbox router): the routees are
 * held on a gate until the submitters have made enough submits to overflow
 * every mailbox several times, so drops are certain. */
static void scenario_bounded(const char *name, int overflow, uint64_t jobs,
                             int threads)
{
    scenario *s = new_scenario(name);
    rp_pool *p = new_pool(s, BOUNDED_CAPACITY, overflow);
    rp_router *r = new_router(p, rp_strategy_smallest_mailbox());
    gate g;
    gate_init(&g);
    probe holds[ROUTEES];
    if (!block_all_routees(p, holds, NULL, &g)) {
        printf("gate jobs did not start\n");
        exit(2);
    }
    atomic_ullong progress;
    atomic_init(&progress, 0);
    uint64_t threshold = 4 * BOUNDED_CAPACITY * ROUTEES;
    if (threshold > jobs / 2)
        threshold = jobs / 2;
    opener_arg oa = {.progress = &progress, .threshold = threshold, .g = &g};
    pthread_t opener;
    pthread_create(&opener, NULL, open_when_full, &oa);

    totals t;
    const int64_t t0 = now_us();
    run_submitters(r, TELL, 1, jobs, threads, &progress, &t);
    pthread_join(opener, NULL);
    gather(p, &t);
    print_totals(name, &t, now_us() - t0);

    int held_runs = 0;
    for (int i = 0; i < ROUTEES; i++)
        held_runs += probe_runs(&holds[i]);
    CHECK(held_runs == ROUTEES, "gate jobs ran %d times", held_runs);
    check_accounting(&t, t.copies, ROUTEES);

    check_bounded(s, &t, overflow);
    rp_router_destroy(r);
    rp_pool_destroy(p);
    gate_destroy(&g);
    free(s);
}

static uint64_t parse_count(const char *s, uint64_t fallback)
{
    if (!s || !*s)
        return fallback;
    char *end = NULL;
    const unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || v == 0) {
        printf("bad count \"%s\"\n", s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    uint64_t jobs = parse_count(getenv("RP_STRESS_JOBS"), 1000000);
    if (argc > 1)
        jobs = parse_count(argv[1], jobs);
    int threads = (int)parse_count(argc > 2 ? argv[2] : NULL, 4);
    if (argc > 3) {
        printf("usage: stress_routing [jobs [submitters]]\n");
        return 2;
    }
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    /* Whole weighted cycles (10 jobs), whole round-robin cycles (4) and
     * equal shares per submitter; enough jobs to overflow the bounded
     * mailboxes while their routees are held. */
    const uint64_t unit = 20 * (uint64_t)threads;
    if (jobs < MIN_JOBS)
        jobs = MIN_JOBS;
    jobs = jobs / unit * unit;
    printf("stress_routing: %" PRIu64 " jobs per strategy, %d submitters, "
           "%d routees\n", jobs, threads, ROUTEES);

    const unsigned weights[ROUTEES] = {1, 2, 3, 4};
    const int64_t t0 = now_us();
    scenario_plain("round-robin", rp_strategy_round_robin(), TELL, jobs,
                   threads);
    scenario_plain("random", rp_strategy_random(12345), TELL, jobs, threads);
    scenario_plain("smallest-mailbox", rp_strategy_smallest_mailbox(), TELL,
                   jobs, threads);
    scenario_plain("consistent-hash", rp_strategy_consistent_hash(99),
                   TELL_KEY, jobs, threads);
    scenario_plain("weighted", rp_strategy_weighted(weights, ROUTEES), TELL,
                   jobs, threads);
    /* Broadcast: a quarter of the jobs, each fanned out to 4 routees. */
    scenario_plain("broadcast", rp_strategy_broadcast(), TELL, jobs / 4,
                   threads);
    scenario_plain("broadcast-call", rp_strategy_round_robin(), BROADCAST_MIX,
                   jobs / 4, threads);
    scenario_plain("custom", rp_strategy_custom(custom_pick, NULL), TELL,
                   jobs, threads);
    scenario_churn(jobs);
    scenario_bounded("bounded-reject", RP_OVERFLOW_REJECT, jobs, threads);
    scenario_bounded("bounded-drop-new", RP_OVERFLOW_DROP_NEW, jobs, threads);
    scenario_bounded("bounded-drop-head", RP_OVERFLOW_DROP_HEAD, jobs,
                     threads);
    printf("stress_routing: %s, %d failed checks (%.1f s)\n",
           failures ? "FAILED" : "ok", failures,
           (double)(now_us() - t0) / 1e6);
    return failures ? 1 : 0;
}
