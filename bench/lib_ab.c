/* SPDX-License-Identifier: MIT */
/*
 * rp-bench-lib-ab - two builds of the library, interleaved in one process:
 * the A/B harness for changes to lib/ whose effect is smaller than the
 * noise between separate runs.
 *
 * On this kind of host separate benchmark runs of one build differ by
 * +-30 %, and the two vCPUs move between near (~30 ns a cache line),
 * middle (~70 ns) and far (~200 ns) placements without notice, often in
 * the middle of a run.  So both libraries are loaded here at once (dlopen,
 * RTLD_LOCAL: each copy binds to its own symbols and keeps its own
 * globals), every pair of rounds runs the same workload on A and on B back
 * to back (in the order AB, then BA, then AB...), and a cache-line
 * ping-pong before each pair says which placement the pair ran on.  The
 * summary groups the pairs by placement: a verdict holds on a placement
 * only where both sides saw it.
 *
 * The workload is rp-bench-tiny's: S submitters (1 or 2) hand N empty
 * jobs to a pool of 2 routees, ns per job from the first submit until
 * every job ran (rp_pool_wait_idle); every job marks its own cache-line
 * record, and a job lost or run twice fails the run.  Cases: tells with
 * the default pool (round-robin, stealing on), the same with stealing off
 * (their ratio is issue 18's stealing tax), batches of 64
 * (rp_pool_submit_batch), and the pool's router set to smallest-mailbox
 * with stealing.
 *
 * What else moves a round's cost, and how the harness keeps it alike for
 * both sides (docs/perf-history.md, "2026-12-06"): the thread layout -
 * which threads share a CPU - moves it up to 2x, and a pool's threads
 * keep theirs, so every pair gets new pools, made and warmed in the order
 * its timed rounds run (run_pairs); each round's layout is recorded (one
 * job in WHERE_EVERY notes its routee's CPU) and tabulated per side, or
 * pinned (--layout).  Rounds after an idle gap (--gap-ms), when the
 * routees sleep, cost more than rounds back to back.  Each round also
 * reports the routees' sleeps and steals (rp_routee_stats_get).
 *
 * The binary links neither copy: both come through dlsym, on the public
 * API only (the functions lib_load() looks up), so the two builds must
 * share the public structs' layout (rp_pool_options, rp_routee_stats).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "libcopy.h"
#include "routepool/routepool.h"

#define WORKERS 2
#define MAX_SUB 2
#define MAX_PAIRS 400
#define BATCH 64
#define PP_TRIALS 3
#define WHERE_EVERY 509 /* one job in this many notes its routee's CPU (odd: round-robin alternates) */
#define LABEL_LEN 16
#define PP_ROUNDS 5000 /* round trips a trial: ~0.3 (near) to 2 ms (far) */

/* One library copy: the public functions the workload calls. */
typedef struct lib {
    const char *path; /* as given */
    void *dl;
    const char *(*version)(void);
    const char *(*errmsg)(void);
    void (*options_init)(rp_pool_options *);
    int (*create)(rp_pool **, const rp_pool_options *);
    int (*submit)(rp_pool *, rp_job_fn, void *);
    int (*submit_batch)(rp_pool *, rp_job_fn, void *const *, size_t);
    int (*wait_idle)(rp_pool *, int64_t);
    void (*destroy)(rp_pool *);
    rp_strategy (*round_robin)(void);
    rp_strategy (*smallest)(void);
    rp_strategy (*custom)(rp_strategy_fn, void *);
    rp_routee *(*routee)(rp_pool *, size_t);
    int (*stats)(const rp_routee *, rp_routee_stats *);
    int (*job_routee)(const rp_job_ctx *);
} lib;

enum { C_TELL, C_NOSTEAL, C_BATCH, C_SM, C_CHAIN, C_SELF, NCASES };
static const char *const case_key[NCASES] = {"tell", "tell-nosteal", "batch", "sm-steal",
                                             "chain", "self"};
static const char *const case_name[NCASES] = {
    "tell, round-robin, steal on (default)", "tell, round-robin, steal off",
    "batch of 64, round-robin, steal on", "tell, smallest-mailbox, steal on",
    "jobs that tell the next job from inside a job (8 chains), round-robin, steal on",
    ("jobs that tell the next job to their own routee (8 chains; a custom strategy names the "
     "calling routee, unpinned), steal on")};

/* C_CHAIN, C_SELF: this many chains in flight; job i tells job i + CHAINS. */
#define CHAINS 8

/* A thread layout (--layout): the CPU of each submitter and routee, 0 or
 * 1 (the first two the process may use), -1 for a submitter left to the
 * scheduler (nsub 0: as many as --submitters says).  Without one, the
 * scheduler places every thread. */
typedef struct layout {
    const char *name;
    unsigned nsub;
    int sub[MAX_SUB], routee[WORKERS];
} layout;

static const layout layouts[] = {
    {"R|R", 0, {-1, -1}, {0, 1}}, /* rp_pool_options.pin_cpus's layout */
    {"S|RR", 1, {0, 0}, {1, 1}},
    {"SR|R", 1, {0, 0}, {0, 1}},
    {"SS|RR", 2, {0, 0}, {1, 1}},
    {"SR|SR", 2, {0, 1}, {0, 1}},
};

typedef struct rec {
    _Alignas(64) unsigned char ran;
} rec;

/* --push-hist: what one submit (a tell) took, in these buckets (ns). */
#define HIST_BUCKETS 6
static const int64_t hist_upper[HIST_BUCKETS - 1] = {100, 200, 400, 1000, 10000};
static const char *const hist_label[HIST_BUCKETS] = {"< 100 ns", "100-200 ns", "200-400 ns",
                                                     "0.4-1 us", "1-10 us", ">= 10 us"};

/* What a round measured: its time, and what the routees did. */
typedef struct round_out {
    double ns, sleeps, stolen; /* per job, per 1,000 jobs, per 1,000 jobs */
    double hist[HIST_BUCKETS]; /* --push-hist: % of submitter 0's submits */
    char label[LABEL_LEN];     /* the thread layout */
} round_out;

/* The run's settings and results. */
static struct {
    size_t jobs;
    unsigned pairs, nsub;
    unsigned gap_ms; /* idle time before each timed round (--gap-ms) */
    const char *placement; /* run pairs only on this kind (--placement), or NULL */
    unsigned wait_s;       /* --placement: how long to wait for it, in all */
    unsigned skipped;      /* --placement: ping-pongs that found another kind */
    bool push_hist;  /* time every tell of submitter 0 (--push-hist) */
    uint64_t hist[HIST_BUCKETS]; /* the round's counts (submitter 0 only) */
    const layout *layout; /* NULL: the scheduler's */
    int cpu[2];           /* the layout's CPUs 0 and 1 */
    cpu_set_t cpus;       /* the CPUs the process may use (restored after a round) */
    bool want[NCASES];
    lib libs[2];
    rp_pool *pools[2][NCASES];
    rec *recs;
    void **ptrs;
    /* Per pair: the placement before it, and each timed round per
     * library and case. */
    double pp_ns[MAX_PAIRS];
    round_out res[MAX_PAIRS][2][NCASES];
    const lib *cur;       /* the library of the round running */
    rp_pool *chain_pool;  /* C_CHAIN, C_SELF: the pool of the round running */
    int sub_cpu[MAX_SUB]; /* where each submitter finished */
} g;

/* Where the routees ran: one job in WHERE_EVERY notes its routee's CPU in
 * that routee's tally (read after the round's wait, then cleared). */
static bench_cpu_tally where[WORKERS];

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "rp-bench-lib-ab: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static void mark(rp_job_ctx *ctx, void *arg)
{
    ((rec *)arg)->ran++;
    if (__builtin_expect(((rec *)arg - g.recs) % WHERE_EVERY == 0, 0)) {
        int r = g.cur->job_routee(ctx);

        if (r >= 0 && r < WORKERS)
            bench_cpu_note(&where[r]);
    }
}

/* C_CHAIN: mark, then tell the chain's next job (the in-job submit that
 * rp-bench-sojourn's routees make, with nothing else in the job). */
static void chain(rp_job_ctx *ctx, void *arg)
{
    size_t next = (size_t)((rec *)arg - g.recs) + CHAINS;

    mark(ctx, arg);
    if (next < g.jobs && g.cur->submit(g.chain_pool, chain, &g.recs[next]) < 0)
        die("rp_pool_submit in a job", g.cur->errmsg());
}

/* C_SELF: the routee whose job is submitting, else -1. */
static _Thread_local int tl_self = -1;

/* C_SELF's strategy: the calling routee (round-robin outside a job). */
static int to_self(void *user, rp_route_state *st, rp_routee *const *routees, size_t n,
                   size_t *out)
{
    (void)user, (void)routees;
    out[0] = tl_self >= 0 ? (size_t)tl_self % n : (size_t)(st->message_index % n);
    return 1;
}

/* C_SELF: mark, then tell the chain's next job to this job's routee (a
 * tell to itself: the owner ring, where the library has one). */
static void self_chain(rp_job_ctx *ctx, void *arg)
{
    size_t next = (size_t)((rec *)arg - g.recs) + CHAINS;

    mark(ctx, arg);
    tl_self = g.cur->job_routee(ctx);
    if (next < g.jobs && g.cur->submit(g.chain_pool, self_chain, &g.recs[next]) < 0)
        die("rp_pool_submit in a job", g.cur->errmsg());
    tl_self = -1;
}

/* ---- loading ---- */

/* path itself, or path/libroutepool.so when it is a directory. */
static char *lib_file(const char *path)
{
    char *f = bench_lib_file(path);

    if (!f) {
        fprintf(stderr, "rp-bench-lib-ab: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    return f;
}

static void *sym(lib *l, const char *name)
{
    void *p = dlsym(l->dl, name);

    if (!p)
        die("a public function is missing from the library", name);
    return p;
}

static void lib_load(lib *l, const char *file, bool unlink_after)
{
    l->dl = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!l->dl)
        die("dlopen failed", dlerror());
    if (unlink_after)
        unlink(file);
    *(void **)&l->version = sym(l, "rp_version");
    *(void **)&l->errmsg = sym(l, "rp_errmsg");
    *(void **)&l->options_init = sym(l, "rp_pool_options_init");
    *(void **)&l->create = sym(l, "rp_pool_create");
    *(void **)&l->submit = sym(l, "rp_pool_submit");
    *(void **)&l->submit_batch = sym(l, "rp_pool_submit_batch");
    *(void **)&l->wait_idle = sym(l, "rp_pool_wait_idle");
    *(void **)&l->destroy = sym(l, "rp_pool_destroy");
    *(void **)&l->round_robin = sym(l, "rp_strategy_round_robin");
    *(void **)&l->smallest = sym(l, "rp_strategy_smallest_mailbox");
    *(void **)&l->custom = sym(l, "rp_strategy_custom");
    *(void **)&l->routee = sym(l, "rp_pool_routee");
    *(void **)&l->stats = sym(l, "rp_routee_stats_get");
    *(void **)&l->job_routee = sym(l, "rp_job_routee");
}

static void load_both(const char *a, const char *b)
{
    char *fa = lib_file(a), *fb = lib_file(b);
    bool same = bench_lib_same_file(fa, fb);

    g.libs[0].path = a;
    g.libs[1].path = b;
    lib_load(&g.libs[0], fa, false);
    if (same) {
        char *copy = bench_lib_copy(fb); /* dlopen() would return A again */
        if (!copy)
            die("cannot copy the library", fb);
        lib_load(&g.libs[1], copy, true);
        free(copy);
    } else {
        lib_load(&g.libs[1], fb, false);
    }
    if (g.libs[0].dl == g.libs[1].dl)
        die("both paths loaded one object", NULL);
    free(fa);
    free(fb);
}

/* ---- pools and rounds ---- */

static rp_pool *pool_for(lib *l, int c)
{
    rp_pool_options o;
    rp_pool *pool;
    int cpus[WORKERS]; /* o.cpus points here until create copies it */

    l->options_init(&o);
    o.name = "ab";
    o.routees = WORKERS;
    o.steal = c != C_NOSTEAL;
    o.strategy = c == C_SM     ? l->smallest()
                 : c == C_SELF ? l->custom(to_self, NULL)
                               : l->round_robin();
    if (g.layout) {
        for (int r = 0; r < WORKERS; r++)
            cpus[r] = g.cpu[g.layout->routee[r]];
        o.cpus = cpus;
        o.ncpus = WORKERS;
    }
    if (l->create(&pool, &o) < 0)
        die("rp_pool_create", l->errmsg());
    return pool;
}

typedef struct slice {
    lib *l;
    rp_pool *pool;
    int c;
    unsigned who;
    size_t lo, hi;
    pthread_t th;
} slice;

static void *submit_slice(void *p)
{
    const slice *s = p;

    if (g.layout && g.layout->sub[s->who] >= 0)
        bench_pin_self(g.cpu[g.layout->sub[s->who]]);
    if (s->c == C_CHAIN || s->c == C_SELF) {
        /* The chains' first jobs, split between the submitters. */
        for (size_t i = CHAINS * s->who / g.nsub; i < CHAINS * (s->who + 1) / g.nsub; i++)
            if (i < g.jobs &&
                s->l->submit(s->pool, s->c == C_SELF ? self_chain : chain, &g.recs[i]) < 0)
                die("rp_pool_submit", s->l->errmsg());
    } else if (s->c == C_BATCH) {
        for (size_t i = s->lo; i < s->hi; i += BATCH) {
            size_t k = s->hi - i < BATCH ? s->hi - i : BATCH;
            if (s->l->submit_batch(s->pool, mark, g.ptrs + i, k) < 0)
                die("rp_pool_submit_batch", s->l->errmsg());
        }
    } else if (g.push_hist && s->who == 0) {
        /* The clock around every submit: its own cost (~20 ns a read)
         * is in both sides' rounds alike. */
        int64_t t0 = bench_now_ns(), t1;

        for (size_t i = s->lo; i < s->hi; i++, t0 = t1) {
            int b = 0;

            if (s->l->submit(s->pool, mark, &g.recs[i]) < 0)
                die("rp_pool_submit", s->l->errmsg());
            t1 = bench_now_ns();
            while (b < HIST_BUCKETS - 1 && t1 - t0 >= hist_upper[b])
                b++;
            g.hist[b]++;
        }
    } else {
        for (size_t i = s->lo; i < s->hi; i++)
            if (s->l->submit(s->pool, mark, &g.recs[i]) < 0)
                die("rp_pool_submit", s->l->errmsg());
    }
    g.sub_cpu[s->who] = sched_getcpu(); /* where it finished (the layout) */
    return NULL;
}

/* Every job ran exactly once: checked and reset for the next round. */
static void check_ran(const lib *l, int c)
{
    for (size_t i = 0; i < g.jobs; i++) {
        if (g.recs[i].ran != 1) {
            fprintf(stderr, "rp-bench-lib-ab: %s, %s: job %zu ran %u times\n", l->path,
                    case_key[c], i, g.recs[i].ran);
            exit(1);
        }
        g.recs[i].ran = 0;
    }
}

/* The sum of the routees' sleeps and steals so far. */
static void counters(const lib *l, rp_pool *pool, uint64_t *sleeps, uint64_t *stole)
{
    *sleeps = *stole = 0;
    for (size_t i = 0; i < WORKERS; i++) {
        rp_routee_stats st;

        if (l->stats(l->routee(pool, i), &st) < 0)
            die("rp_routee_stats_get", l->errmsg());
        *sleeps += st.sleeps;
        *stole += st.stole;
    }
}

/* With --layout, a routee that ran its noted jobs anywhere but on its
 * CPU means the pinning did not take, and every figure of the run would
 * describe another layout (it once did: the CPU array went out of scope
 * before rp_pool_create read it).  -1: it ran none of the noted jobs. */
static void check_pinned(int r, int ran_on)
{
    char msg[96];
    int want;

    if (!g.layout || ran_on < 0)
        return;
    if (ran_on == (want = g.cpu[g.layout->routee[r]]))
        return;
    snprintf(msg, sizeof msg, "routee %d ran on CPU %d, pinned to CPU %d", r, ran_on, want);
    die("--layout: the pinning did not take", msg);
}

/* One timed round: ns per job.  A second submitter is a thread created
 * inside the timed span (tens of microseconds against the milliseconds of
 * a round, alike for A and B). */
static round_out run_round(int side, int c, unsigned gap_ms)
{
    lib *l = &g.libs[side];
    slice s[MAX_SUB];
    int64_t t0, t1;
    uint64_t sleeps0, stole0, sleeps1, stole1;
    round_out out;
    int cpu[MAX_SUB + WORKERS];

    if (gap_ms) {
        struct timespec gap = {gap_ms / 1000, (long)(gap_ms % 1000) * 1000000};
        while (nanosleep(&gap, &gap) != 0)
            ;
    }
    for (unsigned k = 0; k < g.nsub; k++)
        s[k] = (slice){.l = l, .pool = g.pools[side][c], .c = c, .who = k,
                       .lo = g.jobs * k / g.nsub, .hi = g.jobs * (k + 1) / g.nsub};
    counters(l, g.pools[side][c], &sleeps0, &stole0);
    memset(g.hist, 0, sizeof g.hist);
    g.cur = l;
    g.chain_pool = g.pools[side][c];
    t0 = bench_now_ns();
    for (unsigned k = 1; k < g.nsub; k++)
        if (pthread_create(&s[k].th, NULL, submit_slice, &s[k]) != 0)
            die("cannot start a submitter thread", NULL);
    submit_slice(&s[0]);
    for (unsigned k = 1; k < g.nsub; k++)
        pthread_join(s[k].th, NULL);
    if (l->wait_idle(g.pools[side][c], -1) < 0)
        die("rp_pool_wait_idle", l->errmsg());
    t1 = bench_now_ns();
    /* The main thread is submitter 0: give it every CPU back, or the
     * ping-pong (which pins to the first two it may use) finds one. */
    if (g.layout)
        pthread_setaffinity_np(pthread_self(), sizeof g.cpus, &g.cpus);
    check_ran(l, c);
    counters(l, g.pools[side][c], &sleeps1, &stole1);
    out = (round_out){.ns = (double)(t1 - t0) / (double)g.jobs,
                      .sleeps = bench_per_1000(sleeps1 - sleeps0, g.jobs),
                      .stolen = bench_per_1000(stole1 - stole0, g.jobs)};
    {
        uint64_t sum = 0;

        for (int b = 0; b < HIST_BUCKETS; b++)
            sum += g.hist[b];
        for (int b = 0; b < HIST_BUCKETS; b++)
            out.hist[b] = sum ? 100.0 * (double)g.hist[b] / (double)sum : 0;
    }
    for (unsigned k = 0; k < g.nsub; k++)
        cpu[k] = g.sub_cpu[k];
    for (int r = 0; r < WORKERS; r++) {
        cpu[g.nsub + (unsigned)r] = bench_cpu_most(&where[r]);
        memset(&where[r], 0, sizeof where[r]);
        check_pinned(r, cpu[g.nsub + (unsigned)r]);
    }
    bench_layout_label(cpu, (int)g.nsub, WORKERS, out.label, sizeof out.label);
    return out;
}

/* New pools for case c on both sides, each made and warmed by one
 * untimed round (its threads started, its lanes grown to the round's
 * working set) in the order the timed rounds will run, so that one round
 * runs between each side's warm-up and its timed round.  (Warmed A first
 * whatever the order, B's timed round in a BA pair came right after its
 * warm-up and A's two rounds after its own: the same build on both sides
 * measured B 8 % faster.) */
static void pools_up(int c, int first)
{
    g.pools[first][c] = pool_for(&g.libs[first], c);
    g.pools[1 - first][c] = pool_for(&g.libs[1 - first], c);
    run_round(first, c, 0);
    run_round(1 - first, c, 0);
}

static void pools_down(int c)
{
    for (int side = 0; side < 2; side++) {
        g.libs[side].destroy(g.pools[side][c]);
        g.pools[side][c] = NULL;
    }
}

/* --placement: measure the placement until it is g.placement, sleeping
 * PLACEMENT_POLL_S between looks; false when *waited reaches g.wait_s
 * first.  Nothing runs meanwhile: no pool is up between pairs. */
#define PLACEMENT_POLL_S 5u
static bool placement_wanted(double *pp_ns, unsigned *waited)
{
    for (;;) {
        bench_pingpong_result pp;

        *pp_ns = bench_pingpong(&pp, PP_ROUNDS, PP_TRIALS) == 0 ? pp.min_ns : -1;
        if (!g.placement || !strcmp(bench_placement_kind(*pp_ns), g.placement))
            return true;
        g.skipped++;
        if (*waited >= g.wait_s)
            return false;
        sleep(PLACEMENT_POLL_S);
        *waited += PLACEMENT_POLL_S;
    }
}

/*
 * Every pair runs on pools of its own.  A pool's threads keep the CPUs the
 * scheduler gave them for as long as they run, and on 2 vCPUs with 3 or 4
 * threads that layout (which threads share a CPU) moves a round's cost by
 * up to 2x: pools kept for a whole run gave one side a layout the other
 * did not have for every pair of the run (the same build on both sides:
 * batches 1.09x apart over 40 pairs).  New threads each pair draw their
 * layout anew, alike for both sides.
 */
static void run_pairs(void)
{
    unsigned waited = 0;

    for (unsigned p = 0; p < g.pairs; p++) {
        if (!placement_wanted(&g.pp_ns[p], &waited)) {
            fprintf(stderr, "\r%40s\r", "");
            printf("# --placement %s: stopped after %u of %u pairs, %u s without that "
                   "placement in all\n", g.placement, p, g.pairs, waited);
            g.pairs = p;
            return;
        }
        for (int c = 0; c < NCASES; c++) {
            if (!g.want[c])
                continue;
            pools_up(c, (int)(p % 2));
            for (int k = 0; k < 2; k++) {
                int side = (int)((p + (unsigned)k) % 2); /* AB, BA, AB... */
                g.res[p][side][c] = run_round(side, c, g.gap_ms);
            }
            pools_down(c);
        }
        fprintf(stderr, "\rpair %u/%u", p + 1, g.pairs);
    }
    fprintf(stderr, "\r%40s\r", "");
}

/* ---- output ---- */

static void print_pairs(void)
{
    printf("| pair | ping-pong ns | placement |");
    for (int c = 0; c < NCASES; c++)
        if (g.want[c])
            printf(" %s A | B | B/A |", case_key[c]);
    printf("\n|---:|---:|---|");
    for (int c = 0; c < NCASES; c++)
        if (g.want[c])
            printf("---:|---:|---:|");
    printf("\n");
    for (unsigned p = 0; p < g.pairs; p++) {
        printf("| %u | %.0f | %s |", p + 1, g.pp_ns[p], bench_placement_kind(g.pp_ns[p]));
        for (int c = 0; c < NCASES; c++)
            if (g.want[c])
                printf(" %.1f | %.1f | %.2f |", g.res[p][0][c].ns, g.res[p][1][c].ns,
                       g.res[p][1][c].ns / g.res[p][0][c].ns);
        printf("\n");
    }
}

/* Whether pair p ran on a placement of kind (NULL: any). */
static bool pair_on(unsigned p, const char *kind)
{
    return !kind || strcmp(bench_placement_kind(g.pp_ns[p]), kind) == 0;
}

/* A side's stealing tax in pair p: its tell / its steal-off tell. */
static double tax_of(unsigned p, int side)
{
    return g.res[p][side][C_TELL].ns / g.res[p][side][C_NOSTEAL].ns;
}

/* Medians over the pairs of one placement kind (NULL: all pairs) of
 * A, B and B/A for case c, or of the tax (c's tell / tell-nosteal) when
 * tax is set.  False when no pair qualifies. */
static bool medians(const char *kind, int c, bool tax, double out[3], int *n)
{
    static double va[MAX_PAIRS], vb[MAX_PAIRS], vr[MAX_PAIRS];
    size_t k = 0;

    for (unsigned p = 0; p < g.pairs; p++) {
        double a, b;

        if (!pair_on(p, kind))
            continue;
        a = tax ? tax_of(p, 0) : g.res[p][0][c].ns;
        b = tax ? tax_of(p, 1) : g.res[p][1][c].ns;
        va[k] = a;
        vb[k] = b;
        vr[k++] = b / a;
    }
    *n = (int)k;
    if (!k)
        return false;
    out[0] = bench_median(va, k);
    out[1] = bench_median(vb, k);
    out[2] = bench_median(vr, k);
    return true;
}

/* The median over the pairs of one placement kind (NULL: all) of a
 * side's per-1,000 figure of case c: stolen, else sleeps. */
static double median_of(const char *kind, int side, int c, bool stolen)
{
    static double tmp[MAX_PAIRS];
    size_t k = 0;

    for (unsigned p = 0; p < g.pairs; p++)
        if (pair_on(p, kind))
            tmp[k++] = stolen ? g.res[p][side][c].stolen : g.res[p][side][c].sleeps;
    return k ? bench_median(tmp, k) : 0;
}

static void summary_row(const char *kind, const char *what, int c, bool tax)
{
    double m[3];
    int n;
    char cas[160];

    if (!medians(kind, c, tax, m, &n))
        return;
    printf("| %s | %s | %d | %.*f | %.*f | %.2fx |", kind ? kind : "all", what, n,
           tax ? 2 : 1, m[0], tax ? 2 : 1, m[1], m[2]);
    if (tax)
        printf(" | | | |\n");
    else
        printf(" %.2f | %.2f | %.1f | %.1f |\n", median_of(kind, 0, c, false),
               median_of(kind, 1, c, false), median_of(kind, 0, c, true),
               median_of(kind, 1, c, true));
    snprintf(cas, sizeof cas, "%s, %u submitter%s, %s", what, g.nsub, g.nsub > 1 ? "s" : "",
             kind ? kind : "all");
    bench_csv_row("lib-ab", cas, "B/A", "x", m[2], m[2], m[2], n);
}

static void print_summary(void)
{
    static const char *const kinds[] = {"near", "middle", "far", NULL};

    printf("\n| placement | case | pairs | A | B | B/A (median of pairs) | sleeps/1k A | B "
           "| stolen/1k A | B |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < 4; i++) {
        for (int c = 0; c < NCASES; c++)
            if (g.want[c])
                summary_row(kinds[i], case_key[c], c, false);
        if (g.want[C_TELL] && g.want[C_NOSTEAL])
            summary_row(kinds[i], "tax (tell / tell-nosteal)", C_TELL, true);
    }
    printf("\nA, B: ns per job (tax: a ratio), medians over the pairs of that placement; "
           "B/A: the median of the pairs' ratios (< 1: B is faster); sleeps/1k, stolen/1k:\n"
           "the routees' futex sleeps and stolen jobs per 1,000 jobs of a round (medians).\n"
           "A placement with few pairs says little: read its B/A against the spread "
           "of the pairs above.\n");
}

/* The rounds of case c on side whose layout is label: their ns and
 * stolen/1k into ns[] and st[]; how many. */
static size_t rounds_in(int c, int side, const char *label, double *ns, double *st)
{
    size_t k = 0;

    for (unsigned p = 0; p < g.pairs; p++)
        if (!strcmp(g.res[p][side][c].label, label)) {
            ns[k] = g.res[p][side][c].ns;
            st[k++] = g.res[p][side][c].stolen;
        }
    return k;
}

/* Whether round (p, side) of case c is the first with its layout. */
static bool first_with_label(int c, unsigned p, int side)
{
    for (unsigned q = 0; q <= p; q++)
        for (int t = 0; t < 2 && (q < p || t < side); t++)
            if (!strcmp(g.res[q][t][c].label, g.res[p][side][c].label))
                return false;
    return true;
}

/* --push-hist: per placement and case (tells only), the median over the
 * pairs of each bucket's share of submitter 0's submits, A then B. */
static void print_push_hist(void)
{
    static const char *const kinds[] = {"near", "middle", "far"};
    static double tmp[MAX_PAIRS];

    printf("\n| placement | case | side | pairs |");
    for (int b = 0; b < HIST_BUCKETS; b++)
        printf(" %s |", hist_label[b]);
    printf("\n|---|---|---|---:|");
    for (int b = 0; b < HIST_BUCKETS; b++)
        printf("---:|");
    printf("\n");
    for (int i = 0; i < 3; i++) {
        size_t k = 0;

        for (unsigned p = 0; p < g.pairs; p++)
            k += pair_on(p, kinds[i]);
        if (!k)
            continue;
        for (int c = 0; c < NCASES; c++) {
            /* No tells of submitter 0 to time. */
            if (!g.want[c] || c == C_BATCH || c == C_CHAIN || c == C_SELF)
                continue;
            for (int side = 0; side < 2; side++) {
                printf("| %s | %s | %c | %zu |", kinds[i], case_key[c], 'A' + side, k);
                for (int b = 0; b < HIST_BUCKETS; b++) {
                    size_t n = 0;

                    for (unsigned p = 0; p < g.pairs; p++)
                        if (pair_on(p, kinds[i]))
                            tmp[n++] = g.res[p][side][c].hist[b];
                    printf(" %.1f |", bench_median(tmp, n));
                }
                printf("\n");
            }
        }
    }
    printf("\nWhat one rp_pool_submit() of submitter 0 took (%% of its submits; "
           "medians over the pairs): a push that waits for a cache line another CPU "
           "holds takes about one ping-pong, or two.\n");
}

/* Per case and thread layout, each side's rounds: how many, median ns and
 * stolen/1k.  The scheduler draws the layouts, but what the threads do
 * (sleeping, stealing) moves its draws: compare how often each side got
 * a layout as well as what a round cost in it. */
static void print_layouts(void)
{
    static double ns[MAX_PAIRS], st[MAX_PAIRS];

    printf("\n| case | layout | A rounds | A ns/job | A stolen/1k | B rounds | B ns/job "
           "| B stolen/1k |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (int c = 0; c < NCASES; c++) {
        if (!g.want[c])
            continue;
        for (unsigned p = 0; p < g.pairs; p++)
            for (int side = 0; side < 2; side++) {
                const char *label = g.res[p][side][c].label;

                if (!first_with_label(c, p, side))
                    continue;
                printf("| %s | ", case_key[c]);
                for (const char *ch = label; *ch; ch++) { /* markdown: "|" escaped */
                    if (*ch == '|')
                        putchar('\\');
                    putchar(*ch);
                }
                printf(" |");
                for (int t = 0; t < 2; t++) {
                    size_t k = rounds_in(c, t, label, ns, st);

                    if (k)
                        printf(" %zu | %.1f | %.1f |", k, bench_median(ns, k),
                               bench_median(st, k));
                    else
                        printf(" 0 | | |");
                }
                printf("\n");
            }
    }
    printf("\nLayouts: the threads grouped by the CPU they ran on (S a submitter, R a "
           "routee, ? a routee that ran none of the noted jobs; one job in %d notes its "
           "routee's CPU, a submitter where it finished); ns/job and stolen/1k are "
           "medians.\n", WHERE_EVERY);
}

/* ---- command line ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rp-bench-lib-ab [options] A B\n"
            "  A, B: two builds of libroutepool (a libroutepool.so file, or the build\n"
            "  directory holding it; the same one twice measures the harness's own\n"
            "  noise).  Both are loaded into this process; each pair of rounds runs\n"
            "  the same empty-job workload on A and on B back to back (AB, then BA),\n"
            "  after a cache-line ping-pong that names the pair's placement, on new\n"
            "  pools.  The summary gives per placement the medians, the B/A ratio,\n"
            "  each side's stealing tax, sleeps and steals; then per thread layout\n"
            "  (which threads shared a CPU) each side's rounds and their cost.\n"
            "  --cases LIST    comma list of tell,tell-nosteal,batch,sm-steal,chain,self\n"
            "                  (default tell,tell-nosteal,batch; chain: every job but\n"
            "                  the first %d tells the next from inside a job; self: the\n"
            "                  same, each to its own routee)\n"
            "  --submitters S  1 or 2 (default 1)\n"
            "  --layout L      pin the threads: S|RR (the submitter on one CPU, both\n"
            "                  routees on the other), SR|R (the submitter beside\n"
            "                  routee 0), SS|RR or SR|SR (2 submitters), R|R (routee\n"
            "                  i on CPU i, as rp_pool_options.pin_cpus; submitters\n"
            "                  free).  Default: the scheduler's, drawn anew every\n"
            "                  pair (new pools)\n"
            "  --jobs N        jobs per round (default 100000)\n"
            "  --pairs N       pairs of rounds, 1..%d (default 30)\n"
            "  --gap-ms N      sleep N ms before each round, 0..10000 (default 0): the\n"
            "                  pool's routees fall asleep, and past trim_idle_ms (200)\n"
            "                  its lanes trim, as between rp-bench-tiny's rounds\n"
            "  --push-hist     time every tell of submitter 0 and print, per placement,\n"
            "                  how long its submits took (a histogram): where pushes\n"
            "                  wait for lines another CPU holds\n"
            "  --placement K   run a pair only on a placement of kind K (near, middle\n"
            "                  or far, by the ping-pong before it): else measure\n"
            "                  again every %u s, up to --wait-s in all, then stop\n"
            "                  with the pairs done (a placement is the scarce thing:\n"
            "                  this VM flips between them every few minutes)\n"
            "  --wait-s N      --placement's budget, 0..86400 s (default 1200)\n"
            "  --quick         4 pairs of 20000 jobs (a smoke run)\n"
            "  --version, --help\n"
            "Exit status: 0 ok, 1 failure (a job lost or run twice, a library that\n"
            "cannot be loaded, a --layout routee that ran off its CPU), 2 bad\n"
            "command line.\n",
            CHAINS, MAX_PAIRS, PLACEMENT_POLL_S);
}

static void parse_cases(const char *s)
{
    char *dup = strdup(s), *save = NULL;

    memset(g.want, 0, sizeof g.want);
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int c = 0;

        while (c < NCASES && strcmp(t, case_key[c]) != 0)
            c++;
        if (c == NCASES) {
            fprintf(stderr, "--cases: unknown case '%s' (tell, tell-nosteal, batch, sm-steal, chain, self)\n",
                    t);
            exit(2);
        }
        g.want[c] = true;
    }
    free(dup);
    bool any = false;
    for (int c = 0; c < NCASES; c++)
        any |= g.want[c];
    if (!any) {
        fprintf(stderr, "--cases: no case given\n");
        exit(2);
    }
}

static const layout *layout_named(const char *name)
{
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (!strcmp(name, layouts[i].name))
            return &layouts[i];
    fprintf(stderr, "--layout: unknown layout '%s' (S|RR, SR|R, SS|RR, SR|SR, R|R)\n", name);
    exit(2);
}

static const char *need_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: missing value\n", argv[*i]);
        exit(2);
    }
    return argv[++*i];
}

static void parse_args(int argc, char **argv, const char *paths[2])
{
    int npaths = 0;
    bool nsub_given = false;

    g.jobs = 100000;
    g.pairs = 30;
    g.wait_s = 1200;
    g.nsub = 1;
    g.want[C_TELL] = g.want[C_NOSTEAL] = g.want[C_BATCH] = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (!strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            printf("rp-bench-lib-ab (routepool %s)\n", RP_VERSION_STRING);
            exit(0);
        } else if (!strcmp(a, "--quick")) {
            g.jobs = 20000;
            g.pairs = 4;
        } else if (!strcmp(a, "--cases")) {
            parse_cases(need_value(argc, argv, &i));
        } else if (!strcmp(a, "--submitters")) {
            g.nsub = (unsigned)bench_parse_u64(a, need_value(argc, argv, &i), 1, MAX_SUB);
            nsub_given = true;
        } else if (!strcmp(a, "--jobs")) {
            g.jobs = (size_t)bench_parse_u64(a, need_value(argc, argv, &i), 1000, 10000000);
        } else if (!strcmp(a, "--layout")) {
            g.layout = layout_named(need_value(argc, argv, &i));
        } else if (!strcmp(a, "--push-hist")) {
            g.push_hist = true;
        } else if (!strcmp(a, "--gap-ms")) {
            g.gap_ms = (unsigned)bench_parse_u64(a, need_value(argc, argv, &i), 0, 10000);
        } else if (!strcmp(a, "--placement")) {
            g.placement = need_value(argc, argv, &i);
            if (strcmp(g.placement, "near") && strcmp(g.placement, "middle") &&
                strcmp(g.placement, "far")) {
                fprintf(stderr, "rp-bench-lib-ab: --placement must be near, middle or far, "
                                "not '%s'\n", g.placement);
                exit(2);
            }
        } else if (!strcmp(a, "--wait-s")) {
            g.wait_s = (unsigned)bench_parse_u64(a, need_value(argc, argv, &i), 0, 86400);
        } else if (!strcmp(a, "--pairs")) {
            g.pairs = (unsigned)bench_parse_u64(a, need_value(argc, argv, &i), 1, MAX_PAIRS);
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "rp-bench-lib-ab: unknown option '%s' (--help lists them)\n", a);
            exit(2);
        } else if (npaths == 2) {
            fprintf(stderr, "rp-bench-lib-ab: more than two libraries given\n");
            exit(2);
        } else {
            paths[npaths++] = a;
        }
    }
    if (npaths != 2) {
        usage(stderr);
        exit(2);
    }
    if (g.layout && g.layout->nsub && nsub_given && g.nsub != g.layout->nsub) {
        fprintf(stderr, "--layout %s has %u submitter%s, not %u\n", g.layout->name,
                g.layout->nsub, g.layout->nsub > 1 ? "s" : "", g.nsub);
        exit(2);
    }
    if (g.layout) {
        if (g.layout->nsub)
            g.nsub = g.layout->nsub;
        sched_getaffinity(0, sizeof g.cpus, &g.cpus);
        g.cpu[0] = bench_nth_cpu(0);
        g.cpu[1] = bench_nth_cpu(1);
        if (g.cpu[1] < 0) {
            fprintf(stderr, "--layout needs two CPUs this process may run on\n");
            exit(2);
        }
    }
}

int main(int argc, char **argv)
{
    const char *paths[2];
    bench_placement start, end;

    parse_args(argc, argv, paths);
    load_both(paths[0], paths[1]);
    if (!(g.recs = aligned_alloc(64, g.jobs * sizeof *g.recs)) ||
        !(g.ptrs = malloc(g.jobs * sizeof *g.ptrs)))
        die("out of memory", NULL);
    memset(g.recs, 0, g.jobs * sizeof *g.recs);
    for (size_t i = 0; i < g.jobs; i++)
        g.ptrs[i] = &g.recs[i];
    printf("# rp-bench-lib-ab: %zu empty jobs a round, %u submitter%s, 2 routees, %u pairs, "
           "%u ms idle before each round, layout %s\n", g.jobs, g.nsub, g.nsub > 1 ? "s" : "",
           g.pairs, g.gap_ms, g.layout ? g.layout->name : "free");
    for (int side = 0; side < 2; side++)
        printf("# %c: %s (routepool %s)\n", 'A' + side, g.libs[side].path,
               g.libs[side].version());
    for (int c = 0; c < NCASES; c++)
        if (g.want[c])
            printf("# case %s: %s\n", case_key[c], case_name[c]);
    bench_placement_take(&start, 5);
    run_pairs();
    bench_placement_take(&end, 5);
    if (g.placement)
        printf("# --placement %s: %u pairs ran; %u looks found another placement\n",
               g.placement, g.pairs, g.skipped);
    if (g.pairs == 0) {
        bench_placement_verdict(stdout, "lib-ab", "", &start, &end);
        free(g.ptrs);
        free(g.recs);
        return 0;
    }
    print_pairs();
    print_summary();
    if (g.push_hist)
        print_push_hist();
    print_layouts();
    bench_placement_verdict(stdout, "lib-ab", "", &start, &end);
    free(g.ptrs);
    free(g.recs);
    return 0;
}
