/* SPDX-License-Identifier: MIT */
/*
 * bench/sim_engine.c - the event loop of rp-bench-sim: k simulated routees,
 * Poisson arrivals, routing by the library's own rp_strategy_pick(), and
 * lib/worker.c's worker loop and lib/steal.c's stealing policy replayed step by step.
 *
 * Each simulated routee is a foreign routee (rp_routee_foreign_create())
 * whose depth callback returns its queued jobs plus one while it runs: the
 * smallest-mailbox score a pool routee has (lib/routee.c).  Its send
 * callback is never called: the simulator delivers the job itself to the
 * index the strategy picked.
 *
 * Worker loop (lib/worker.c routee_main): a routee that finishes a job, wakes
 * up or is woken to steal takes, in this order, its stolen batch, with
 * jobs of its own every rescue_ns the rescue or the age look (rescue()),
 * its own queue, or a steal; if nothing is found it polls for spin_ns (the pool's
 * idle_spin_us: 50 us in the default model, which gives every routee a
 * CPU of its own, as the pool's automatic choice does) and then sleeps.  A sleeping routee that is signalled runs
 * wake latency later.  Stealing: the victim is the deepest other routee
 * that is busy or holds more than one job and has a stealable job, first in
 * scan order from the thief's index + 1; the thief takes half its depth
 * (1..RP__STEAL_MAX = 8), oldest first, runs the first and keeps the rest
 * in a private batch that counts in its depth.  Thief wake-ups follow
 * wake_thief(): a job queued behind a busy routee (or behind another job)
 * claims the lowest sleeping routee's idle bit unless a claimed thief is
 * still searching (the pool's `searching` counter); a thief that leaves
 * backlog stops counting as searching and hands the search on.  These
 * decisions are sim_policy.h's, which sojourn_sim.c shares.
 *
 * Invariants: every routee has at most one valid pending event (its seq is
 * the routee's evseq; a spin end cancelled by new work stays in the heap,
 * stale, until popped), plus one pending arrival; a job is in exactly one
 * queue or batch, or running; sojourn is recorded when the job starts (its
 * end is known then).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "routepool/routepool.h"
#include "sim.h"
#include "sim_policy.h"


const char *const sim_router_key[SR_COUNT] = {
    "central", "rr", "rr-steal", "random", "random-steal", "sm", "sm-steal", "ch"};
const char *const sim_router_label[SR_COUNT] = {
    "central queue (M/G/k)", "round-robin", "round-robin + steal", "random",
    "random + steal", "smallest-mailbox", "smallest-mailbox + steal",
    "consistent-hash (random keys)"};

/* Random numbers: bench_splitmix64() and bench_unit() (common.h), one
 * stream per purpose. */

/* ---- log-linear histogram: 1/256 relative resolution, bounded memory ---- */

#define H_SUB 256
#define H_ROWS 40
typedef struct hist {
    uint64_t n[H_ROWS * H_SUB];
    uint64_t count;
    double sum;
} hist;

static size_t h_index(int64_t v)
{
    uint64_t u = v > 0 ? (uint64_t)v : 0;
    int e, row;

    if (u < H_SUB)
        return (size_t)u;
    e = 63 - __builtin_clzll(u); /* u in [2^e, 2^(e+1)), e >= 8 */
    row = e - 7;
    if (row >= H_ROWS)
        return H_ROWS * H_SUB - 1;
    return (size_t)row * H_SUB + (size_t)(u >> (e - 8)) - H_SUB;
}

/* The smallest value that maps to bucket i (inverse of h_index). */
static double h_value(size_t i)
{
    size_t row = i / H_SUB, sub = i % H_SUB;

    if (row == 0)
        return (double)sub;
    return (double)((uint64_t)(H_SUB + sub) << (row - 1));
}

static void h_add(hist *h, int64_t v)
{
    h->n[h_index(v)]++;
    h->count++;
    h->sum += (double)v;
}

/* Nearest-rank percentile, in ns (the bucket's midpoint). */
static double h_pct(const hist *h, double p)
{
    uint64_t rank = (uint64_t)ceil(p * (double)h->count), seen = 0;

    if (rank == 0)
        rank = 1;
    for (size_t i = 0; i < H_ROWS * H_SUB; i++) {
        seen += h->n[i];
        if (seen >= rank) {
            double lo = h_value(i), hi = i + 1 < H_ROWS * H_SUB ? h_value(i + 1) : lo;
            return (lo + hi) / 2;
        }
    }
    return 0;
}

/* ---- simulated routees ---- */

typedef struct sjob {
    int64_t due;  /* arrival instant: the sojourn counts from here */
    int64_t arr;  /* submission: due, or later when the cell replays lateness */
    int64_t cost; /* CPU it needs, slowdown applied */
    int64_t wake; /* replayed: its wake-up of an idle routee takes at least this */
    uint64_t id;  /* arrival number: the first c->warmup are not measured */
} sjob;

/* A routee's mailbox: a growable ring of jobs, oldest at head. */
typedef struct fifo {
    sjob *v;
    size_t cap, head, n;
} fifo;

enum rstate { ST_RUN, ST_WAKE, ST_SLEEP, ST_SPIN };

typedef struct sroutee {
    fifo q;
    sjob batch[BENCH_STEAL_MAX]; /* stolen, not yet run: batch[bh..bn) */
    unsigned bh, bn;
    int state;
    bool busy;             /* the score's "+1 while running" */
    bool searching;        /* counted in sim.searching (steal.c) */
    uint64_t evseq;        /* seq of its one valid pending event */
    int64_t prev_done;     /* end of its previous job (dispatch delay) */
    uint64_t done;         /* jobs finished */
    int64_t watch_t;       /* rescue(): when it last looked */
    unsigned watch;        /* rescue(): the routee it watches, its */
    uint64_t watch_done;   /* jobs finished then, and whether it */
    bool watch_had;        /* had jobs queued */
    int64_t sleep_t;       /* when it last went to sleep */
    int64_t load_t0;       /* its load window (lib/steal.h): start, */
    int64_t slept;         /* time asleep in it, and whether the last */
    bool low_load;         /* closed one was a low load */
} sroutee;

typedef struct ev {
    int64_t t;
    uint64_t seq;  /* insertion order: ties go first-in first-out */
    int who;       /* routee index, or -1 for the next arrival */
} ev;

/* The next arrival of the cell's workload: the same sequence for every
 * router (common random numbers). */
typedef struct gen {
    uint64_t rng;
    double rate_per_ns;
    double t;
    sim_cost cost;
    double slowdown;
    uint64_t n;
    const sim_extra *extra; /* sim_cell's, consumed in job order */
    size_t nextra, xi;
    const sim_extra *late;  /* likewise */
    size_t nlate, li;
    const sim_extra *wakes; /* likewise */
    size_t nwakes, wi;
    int64_t late_base, last_arr;
} gen;

typedef struct sim {
    const sim_cell *c;
    const sim_model *m;
    unsigned k;
    sroutee *r;
    rp_routee **fr;      /* the foreign routees the strategy reads */
    size_t *pick;        /* rp_strategy_pick()'s out, k entries */
    rp_strategy strat;
    bool steal;
    int64_t older_ns;    /* the age look's margin: m->older_ns, 0 under smallest-mailbox */
    bool busy_look;      /* the look under way ended a job at a low load:
                            worth_stealing()'s sleeper */
    uint64_t *idle_bits; /* steal.c idle_bits: sleeping routees (steal only) */
    unsigned nidle, nspin;
    int searching;
    size_t queued;       /* jobs in all fifos: 0 means nothing to steal */
    ev *heap;
    size_t hn, hcap;
    uint64_t seq;
    uint64_t rng_wake, rng_key, rng_victim;
    gen g;
    sjob pending;        /* the next arrival (its event is in the heap) */
    hist soj, disp;
    double half_sum[2];  /* sojourn sums of the two halves of the measured jobs */
    uint64_t half_n[2];
    uint64_t stolen;
    uint64_t looks, stale_looks, rescues, age_takes; /* rescue(), as rp_routee_stats */
    bool oom;
} sim;

static int64_t depth_of(const sroutee *x)
{
    return (int64_t)x->q.n + (int64_t)(x->bn - x->bh);
}

/* What the pool's policy reads of routee i (sim_policy.h). */
static sim_view view_of(const void *sim_, unsigned i)
{
    const struct sim *s = sim_;
    const sroutee *x = &s->r[i];

    return (sim_view){.queued = (int64_t)x->q.n,
                      .depth = depth_of(x),
                      .busy = x->busy,
                      .asleep = s->steal && s->busy_look &&
                                (s->idle_bits[i / 64] >> (i % 64) & 1)};
}

/* The foreign routee's depth callback: the pool routee's score. */
static int64_t score_cb(void *user)
{
    const sroutee *x = user;

    return depth_of(x) + x->busy;
}

static int send_cb(rp_job_fn fn, void *arg, void *user)
{
    (void)fn, (void)arg, (void)user;
    return RP_ESEND; /* never called: the simulator delivers */
}

static bool fifo_push(fifo *f, sjob j)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        sjob *v = malloc(cap * sizeof *v);
        if (!v)
            return false;
        for (size_t i = 0; i < f->n; i++)
            v[i] = f->v[(f->head + i) % f->cap];
        free(f->v);
        f->v = v, f->cap = cap, f->head = 0;
    }
    f->v[(f->head + f->n) % f->cap] = j;
    f->n++;
    return true;
}

static sjob fifo_pop(fifo *f)
{
    sjob j = f->v[f->head];

    f->head = (f->head + 1) % f->cap;
    f->n--;
    return j;
}

/* ---- the event heap (min on (t, seq)) ---- */

static bool ev_less(const ev *a, const ev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(sim *s, int64_t t, int who)
{
    size_t i;

    if (s->hn == s->hcap) {
        size_t cap = s->hcap ? s->hcap * 2 : 64;
        ev *h = realloc(s->heap, cap * sizeof *h);
        if (!h) {
            s->oom = true;
            return;
        }
        s->heap = h, s->hcap = cap;
    }
    i = s->hn++;
    s->heap[i] = (ev){t, ++s->seq, who};
    if (who >= 0)
        s->r[who].evseq = s->seq;
    while (i > 0 && ev_less(&s->heap[i], &s->heap[(i - 1) / 2])) {
        ev tmp = s->heap[i];
        s->heap[i] = s->heap[(i - 1) / 2];
        s->heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

static ev heap_pop(sim *s)
{
    ev top = s->heap[0];
    size_t i = 0;

    s->heap[0] = s->heap[--s->hn];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->hn && ev_less(&s->heap[l], &s->heap[m]))
            m = l;
        if (r < s->hn && ev_less(&s->heap[r], &s->heap[m]))
            m = r;
        if (m == i)
            break;
        ev tmp = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = tmp;
        i = m;
    }
    return top;
}

/* ---- workload ---- */

static int64_t draw_cost(sim_cost kind, double slowdown, uint64_t *x)
{
    double c;

    switch (kind) {
    case SC_EXP:
        c = -log(bench_unit(x)) * SIM_MEAN_NS;
        break;
    case SC_UNIFORM:
        c = bench_unit(x) * 2 * SIM_MEAN_NS;
        break;
    default:
        c = bench_unit(x) <= SIM_LONG_SHARE ? SIM_LONG_NS : SIM_SHORT_NS;
        break;
    }
    return (int64_t)(c * slowdown + 0.5);
}

static int64_t wake_latency(sim *s)
{
    const sim_model *m = s->m;
    double tail = m->wake_tail_ns > 0 ? -log(bench_unit(&s->rng_wake)) * (double)m->wake_tail_ns : 0;

    return m->wake_ns + (int64_t)tail;
}

static void gen_init(gen *g, const sim_cell *c, const sim_model *m)
{
    g->rng = c->exact_seed ? c->seed
                           : c->seed * 0x9E3779B97F4A7C15ull + c->k * 1000003ull +
                                 (uint64_t)(c->load * 1e6);
    g->rate_per_ns = c->load * c->k / SIM_MEAN_NS;
    g->t = 0;
    g->cost = c->cost;
    g->slowdown = m->slowdown;
    g->n = 0;
    g->extra = c->extra;
    g->nextra = c->extra ? c->nextra : 0;
    g->xi = 0;
    g->late = c->late;
    g->nlate = c->late ? c->nlate : 0;
    g->li = 0;
    g->late_base = c->late_base_ns;
    g->last_arr = 0;
    g->wakes = c->wakes;
    g->nwakes = c->wakes ? c->nwakes : 0;
    g->wi = 0;
}

static sjob gen_next(gen *g)
{
    sjob j;

    g->t += -log(bench_unit(&g->rng)) / g->rate_per_ns;
    j.due = (int64_t)g->t;
    j.cost = draw_cost(g->cost, g->slowdown, &g->rng);
    j.id = g->n++;
    while (g->xi < g->nextra && g->extra[g->xi].job < j.id)
        g->xi++;
    if (g->xi < g->nextra && g->extra[g->xi].job == j.id)
        j.cost += g->extra[g->xi++].ns;
    while (g->wi < g->nwakes && g->wakes[g->wi].job < j.id)
        g->wi++;
    j.wake = g->wi < g->nwakes && g->wakes[g->wi].job == j.id ? g->wakes[g->wi++].ns : 0;
    while (g->li < g->nlate && g->late[g->li].job < j.id)
        g->li++;
    j.arr = j.due + (g->li < g->nlate && g->late[g->li].job == j.id ? g->late[g->li++].ns
                                                                     : g->late_base);
    /* A job submitted late holds back the ones after it (one submitter
     * at a time, in order). */
    if (j.arr < g->last_arr)
        j.arr = g->last_arr;
    g->last_arr = j.arr;
    return j;
}

/* ---- steal.c's wake-up protocol ---- */

static void set_idle(sim *s, unsigned i)
{
    s->idle_bits[i / 64] |= 1ull << (i % 64);
    s->nidle++;
}

/* False when a waker cleared the bit first (then we count as searching). */
static bool clear_idle(sim *s, unsigned i)
{
    uint64_t bit = 1ull << (i % 64);

    if (!(s->idle_bits[i / 64] & bit))
        return false;
    s->idle_bits[i / 64] &= ~bit;
    s->nidle--;
    return true;
}

/* Wake routee i; at_least: a replayed late wake-up (sim_cell.wakes). */
static void signal_routee_late(sim *s, unsigned i, int64_t t, int64_t at_least)
{
    int64_t lat;

    if (s->r[i].state != ST_SLEEP)
        return; /* awake, or already woken */
    s->r[i].state = ST_WAKE;
    lat = wake_latency(s);
    heap_push(s, t + (lat > at_least ? lat : at_least), (int)i);
}

static void signal_routee(sim *s, unsigned i, int64_t t)
{
    signal_routee_late(s, i, t, 0);
}

/* wake_thief(): claim the lowest idle bit unless a thief is searching
 * (sim_thief_to_wake()); the thief counts as searching from now. */
static void wake_thief(sim *s, int64_t t)
{
    int i = s->nidle ? sim_thief_to_wake(s->idle_bits, s->k, s->searching) : -1;

    if (i < 0)
        return;
    s->searching = 1;
    clear_idle(s, (unsigned)i);
    signal_routee(s, (unsigned)i, t);
}

static void stop_searching(sim *s, sroutee *x)
{
    if (x->searching)
        s->searching--;
    x->searching = false;
}

/* The pool's victim (sim_pick_victim()), or with --victim two the deeper of
 * two random other routees worth stealing from (a what-if: two probes). */
static int pick_victim(sim *s, unsigned me, int64_t *depth)
{
    int victim = -1;

    *depth = 0;
    if (!s->queued)
        return -1; /* nothing queued anywhere */
    if (!s->m->victim_two || s->k <= 2)
        return sim_pick_victim(s, view_of, s->k, me, depth);
    for (int probe = 0; probe < 2; probe++) {
        unsigned i = (me + 1 + (unsigned)(bench_splitmix64(&s->rng_victim) % (s->k - 1))) % s->k;
        sim_view v = view_of(s, i);
        if (sim_better_victim(v, victim, *depth)) {
            victim = (int)i;
            *depth = v.depth;
        }
    }
    return victim;
}

/* steal_from() (lib/steal.c): take sim_steal_count() jobs of routee vi
 * (one: one job, the age look's), the first into *out, the rest into our
 * batch, and hand the search on. */
static void steal_from(sim *s, unsigned me, unsigned vi, sjob *out, int64_t t, bool one)
{
    sroutee *x = &s->r[me], *v = &s->r[vi];
    unsigned got = sim_steal_count(view_of(s, vi), one || s->m->steal_one);

    if (vi == x->watch)
        x->watch_had = false; /* the work the rescue saw may be this */
    *out = fifo_pop(&v->q);
    x->bh = 0;
    x->bn = got - 1;
    for (unsigned i = 0; i + 1 < got; i++)
        x->batch[i] = fifo_pop(&v->q);
    s->queued -= got;
    s->stolen += got;
    stop_searching(s, x); /* before the hand-off, as worker.c does */
    if (sim_waits(view_of(s, vi)))
        wake_thief(s, t);
}

/* steal(): from the victim pick_victim() chose, run the first. */
static bool steal(sim *s, unsigned me, sjob *out, int64_t t)
{
    int64_t depth;
    int vi = pick_victim(s, me, &depth);

    if (vi < 0)
        return false;
    steal_from(s, me, (unsigned)vi, out, t, false);
    return true;
}

/* rescue() (lib/steal.c rp__steal_rescue()): with jobs of its own, a
 * routee looks at one other routee every rescue_ns.  When that routee had
 * stealable work at the last look, still has, and finished no job since
 * (a long job, its CPU taken, or a late wake-up), it steals from it as an
 * idle thief would; else, when the age look finds that routee's oldest
 * job older_ns older than its own, takes that one job (sim_older_steals());
 * otherwise it watches the next routee.  A look more than 4 rescue_ns
 * after the last one (the routee slept) only watches. */
static bool rescue(sim *s, unsigned me, sjob *out, int64_t t)
{
    sroutee *x = &s->r[me], *v;
    int64_t since = t - x->watch_t;

    if (s->k < 2 || since < s->m->rescue_ns)
        return false;
    x->watch_t = t;
    s->looks++;
    s->stale_looks += since > 4 * s->m->rescue_ns;
    if (x->watch == me)
        x->watch = (me + 1) % s->k;
    v = &s->r[x->watch];
    if (sim_rescue_steals(since, s->m->rescue_ns, x->watch_had, v->q.n > 0,
                          v->done == x->watch_done) &&
        (!s->m->rescue_older || v->q.v[v->q.head].arr < x->q.v[x->q.head].arr)) {
        steal_from(s, me, x->watch, out, t, false);
        s->rescues++;
        return true;
    }
    if (sim_older_steals(since, s->m->rescue_ns, v->done - x->watch_done, v->busy, v->q.n > 0,
                         v->q.n ? v->q.v[v->q.head].arr : 0, x->q.v[x->q.head].arr,
                         s->older_ns)) {
        steal_from(s, me, x->watch, out, t, true);
        s->age_takes++;
        /* Still watched, from here: what it has left, if it stays stuck,
         * is the rescue's at the next look. */
        x->watch_done = v->done;
        x->watch_had = v->q.n > 0;
        return true;
    }
    if (s->k > 2 && (x->watch = (x->watch + 1) % s->k) == me)
        x->watch = (x->watch + 1) % s->k;
    v = &s->r[x->watch];
    x->watch_done = v->done;
    x->watch_had = v->q.n > 0;
    return false;
}

/* next_job(): stolen batch, own queue, then a steal. */
static bool next_job(sim *s, unsigned me, sjob *out, bool *stolen, int64_t t)
{
    sroutee *x = &s->r[me];

    *stolen = false;
    if (x->bh < x->bn) {
        *out = x->batch[x->bh++];
        return true;
    }
    if (s->steal && s->m->rescue_ns && x->q.n && (*stolen = rescue(s, me, out, t)))
        return true;
    if (x->q.n) {
        *out = fifo_pop(&x->q);
        s->queued--;
        return true;
    }
    return s->steal && (*stolen = steal(s, me, out, t));
}

static void record(sim *s, uint64_t id, int64_t soj, int64_t disp)
{
    int half = id - s->c->warmup >= s->c->jobs / 2;

    h_add(&s->soj, soj);
    h_add(&s->disp, disp);
    s->half_sum[half] += (double)soj;
    s->half_n[half]++;
}

/* Start a job on routee me at t: the routee's CPU is taken by the steal,
 * the dispatch overhead and the job; sojourn is known now. */
static void start_job(sim *s, unsigned me, sjob j, bool stolen, int64_t t)
{
    sroutee *x = &s->r[me];
    int64_t start = t + (stolen ? s->m->steal_ns : 0) + s->m->dispatch_ns;
    int64_t end = start + j.cost;
    int64_t ready = j.arr > x->prev_done ? j.arr : x->prev_done;

    /* Measured jobs are those that arrived after the warm-up arrivals. */
    if (j.id >= s->c->warmup)
        record(s, j.id, end - j.due, start - ready);
    x->prev_done = end;
    x->state = ST_RUN;
    x->busy = true;
    heap_push(s, end, (int)me);
}

static void go_idle(sim *s, unsigned me, int64_t t, bool may_spin)
{
    sroutee *x = &s->r[me];

    /* At most max(1, k/2) routees spin at once, as in the pool. */
    if (may_spin && s->m->spin_ns > 0 && s->nspin < (s->k / 2 ? s->k / 2 : 1)) {
        x->state = ST_SPIN;
        s->nspin++;
        heap_push(s, t + s->m->spin_ns, (int)me);
        return;
    }
    x->state = ST_SLEEP;
    x->sleep_t = t;
    if (s->steal)
        set_idle(s, me);
}

/* rp__steal_load_window(): close x's load window when it is due.  The
 * pool closes it at its clock reads (every ~5 us of work) and at each
 * sleep's end; the simulator at each job's end and each wake-up. */
static void load_window(sroutee *x, int64_t t)
{
    int64_t span = t - x->load_t0;

    if (span < BENCH_LOAD_WINDOW_NS)
        return;
    x->low_load = bench_low_load(x->slept, span);
    x->load_t0 = t;
    x->slept = 0;
}

/* routee_main()'s loop body: busy before the pop, idle when nothing.
 * after_job: the routee just ended a job (a busy period goes on), so its
 * steals may take a sleeper's one job (lib/steal.c, worth_stealing). */
static void look(sim *s, unsigned me, int64_t t, bool may_spin, bool after_job)
{
    sroutee *x = &s->r[me];
    bool stolen, found;
    sjob j;

    x->busy = true;
    if (after_job)
        load_window(x, t);
    s->busy_look = after_job && x->low_load;
    found = next_job(s, me, &j, &stolen, t);
    s->busy_look = false;
    if (found) {
        stop_searching(s, x);
        start_job(s, me, j, stolen, t);
        return;
    }
    x->busy = false;
    stop_searching(s, x);
    go_idle(s, me, t, may_spin);
}

/* A spinning routee (spin_ns > 0) notices work at once: no wake-up. */
static void take_spinner(sim *s, unsigned i, int64_t t)
{
    s->nspin--;
    s->r[i].evseq = 0; /* its spin-end event is now stale */
    look(s, i, t, true, false);
}

/* rp__pool_stealable_queued() after a push to routee c. */
static void stealable_queued(sim *s, unsigned c, int64_t t)
{
    if (!sim_push_wants_thief(view_of(s, c)))
        return; /* c itself is about to run it */
    for (unsigned i = 0; s->nspin && i < s->k; i++) {
        if (s->r[i].state == ST_SPIN) {
            take_spinner(s, i, t);
            return;
        }
    }
    if (s->nidle)
        wake_thief(s, t);
}

static void deliver(sim *s, unsigned c, sjob j, int64_t t)
{
    sroutee *x = &s->r[c];

    if (!fifo_push(&x->q, j)) {
        s->oom = true;
        return;
    }
    s->queued++;
    if (x->state == ST_SLEEP)
        signal_routee_late(s, c, t, j.wake);
    if (s->steal)
        stealable_queued(s, c, t);
    if (x->state == ST_SPIN)
        take_spinner(s, c, t);
}

/* Route arrival number i with the library's strategy. */
static int route(sim *s, uint64_t i)
{
    uint64_t key = bench_splitmix64(&s->rng_key);
    rp_route_state st = {.message_index = i};
    int n;

    if (s->strat.kind == RP_STRATEGY_CONSISTENT_HASH) {
        st.key = &key;
        st.key_len = sizeof key;
        st.key_hash = bench_splitmix64(&key); /* any well-mixed 64-bit hash of the key */
    }
    n = rp_strategy_pick(&s->strat, &st, s->fr, s->k, s->pick);
    if (n != 1 || s->pick[0] >= s->k)
        return -1;
    return (int)s->pick[0];
}

/* ---- routees shared by every cell: foreign routees created once, so a
 * routee's identity (consistent hashing) does not depend on cell order ---- */

static sroutee *slots;
static rp_routee **foreign;
static unsigned nslots;

static int ensure_slots(unsigned k)
{
    if (k <= nslots)
        return 0;
    if (!slots) {
        slots = calloc(RP_ROUTEES_MAX, sizeof *slots);
        foreign = calloc(RP_ROUTEES_MAX, sizeof *foreign);
        if (!slots || !foreign)
            return -1;
    }
    for (; nslots < k; nslots++)
        if (rp_routee_foreign_create(&foreign[nslots], send_cb, score_cb, &slots[nslots]) < 0)
            return -1;
    return 0;
}

static rp_strategy strategy_of(sim_router r, uint64_t seed)
{
    switch (r) {
    case SR_RANDOM:
    case SR_RANDOM_STEAL:
        return rp_strategy_random(seed);
    case SR_SM:
    case SR_SM_STEAL:
        return rp_strategy_smallest_mailbox();
    case SR_CH:
        return rp_strategy_consistent_hash(seed);
    default:
        return rp_strategy_round_robin();
    }
}

static int sim_setup(sim *s, const sim_cell *c, const sim_model *m)
{
    memset(s, 0, sizeof *s);
    s->c = c, s->m = m, s->k = c->k;
    if (ensure_slots(c->k) < 0)
        return -1;
    for (unsigned i = 0; i < c->k; i++) {
        free(slots[i].q.v);
        memset(&slots[i], 0, sizeof slots[i]);
        slots[i].state = ST_SLEEP; /* asleep before the first arrival, as in service */
        slots[i].prev_done = INT64_MIN / 2;
        slots[i].load_t0 = INT64_MIN / 4; /* the first window is not low, as in the pool */
    }
    s->r = slots, s->fr = foreign;
    s->pick = malloc(c->k * sizeof *s->pick);
    s->idle_bits = calloc((c->k + 63) / 64, sizeof *s->idle_bits);
    if (!s->pick || !s->idle_bits)
        return -1;
    s->strat = strategy_of(c->router, c->seed);
    s->steal = c->router == SR_RR_STEAL || c->router == SR_RANDOM_STEAL ||
               c->router == SR_SM_STEAL;
    /* The pool's age look is off under smallest-mailbox (pool->older). */
    s->older_ns = c->router == SR_SM_STEAL ? 0 : m->older_ns;
    for (unsigned i = 0; s->steal && i < c->k; i++)
        set_idle(s, i);
    s->rng_wake = c->seed ^ 0x5157A7E5ull;
    s->rng_key = c->seed ^ 0xC0FFEEull;
    s->rng_victim = c->seed ^ 0x71C7ull;
    gen_init(&s->g, c, m);
    return 0;
}

static void on_arrival(sim *s, int64_t t)
{
    sjob j = s->pending;
    int c = route(s, j.id);

    if (c < 0) {
        fprintf(stderr, "rp-bench-sim: %s refused job %llu\n", sim_router_key[s->c->router],
                (unsigned long long)j.id);
        s->oom = true; /* stop: a strategy that refuses cannot be simulated */
        return;
    }
    deliver(s, (unsigned)c, j, t);
    if (j.id + 1 < s->c->warmup + s->c->jobs) {
        s->pending = gen_next(&s->g);
        heap_push(s, s->pending.arr, -1);
    }
}

static void on_routee(sim *s, ev e)
{
    sroutee *x = &s->r[e.who];

    if (e.seq != x->evseq)
        return; /* cancelled spin end */
    if (x->state == ST_WAKE) {
        x->state = ST_RUN;
        x->slept += e.t - x->sleep_t;
        load_window(x, e.t);
        if (s->steal && !clear_idle(s, (unsigned)e.who))
            x->searching = true; /* a waker claimed us: steal.c counted us */
        look(s, (unsigned)e.who, e.t, true, false);
    } else if (x->state == ST_SPIN) {
        s->nspin--;
        look(s, (unsigned)e.who, e.t, false, false); /* the last look, then sleep */
    } else {
        x->done++;
        look(s, (unsigned)e.who, e.t, true, true); /* a job ended */
    }
}

static void fill_result(sim_result *out, const sim *s, uint64_t jobs)
{
    out->mean = s->soj.count ? s->soj.sum / (double)s->soj.count / 1e3 : 0;
    out->p50 = h_pct(&s->soj, 0.50) / 1e3;
    out->p99 = h_pct(&s->soj, 0.99) / 1e3;
    out->p999 = h_pct(&s->soj, 0.999) / 1e3;
    out->disp_mean = s->disp.count ? s->disp.sum / (double)s->disp.count / 1e3 : 0;
    out->disp_p99 = h_pct(&s->disp, 0.99) / 1e3;
    out->stolen_per_1000 = bench_per_1000(s->stolen, jobs);
    out->looks_per_1000 = bench_per_1000(s->looks, jobs);
    out->stale_per_1000 = bench_per_1000(s->stale_looks, jobs);
    out->rescues_per_1000 = bench_per_1000(s->rescues, jobs);
    out->age_takes_per_1000 = bench_per_1000(s->age_takes, jobs);
    if (s->half_n[0] && s->half_n[1] && s->half_sum[0] > 0)
        out->drift = (s->half_sum[1] / (double)s->half_n[1]) /
                     (s->half_sum[0] / (double)s->half_n[0]) - 1;
}

static int run_pool(sim_result *out, const sim_cell *c, const sim_model *m)
{
    static sim s; /* two histograms: too big for the stack */
    int rc = 0;

    if (sim_setup(&s, c, m) < 0) {
        rc = -1;
        goto done;
    }
    s.pending = gen_next(&s.g);
    heap_push(&s, s.pending.arr, -1);
    while (s.hn && !s.oom) {
        ev e = heap_pop(&s);
        if (e.who < 0)
            on_arrival(&s, e.t);
        else
            on_routee(&s, e);
    }
    rc = s.oom ? -1 : 0;
    fill_result(out, &s, c->warmup + c->jobs);
done:
    free(s.pick), free(s.idle_bits), free(s.heap);
    return rc;
}

/* ---- the reference: one FCFS queue, k servers ----
 *
 * Each job goes to the server that frees first (a min-heap of free
 * instants), which is exactly FCFS M/G/k.  With central_overhead the
 * servers pay the dispatch cost per job and a server that was idle when the
 * job arrived starts it a wake-up later (central_dispatch_ns is the
 * servers' own per-job cost); another server that frees during
 * that wake-up does not take the job from it (an approximation, used only
 * by --validate to set the measured central queue beside a model of it). */

static void free_push(int64_t *h, size_t *n, int64_t v)
{
    size_t i = (*n)++;

    h[i] = v;
    while (i > 0 && h[i] < h[(i - 1) / 2]) {
        int64_t tmp = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

static int64_t free_pop(int64_t *h, size_t *n)
{
    int64_t top = h[0];
    size_t i = 0;

    h[0] = h[--*n];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && h[l] < h[m])
            m = l;
        if (r < *n && h[r] < h[m])
            m = r;
        if (m == i)
            break;
        int64_t tmp = h[i];
        h[i] = h[m];
        h[m] = tmp;
        i = m;
    }
    return top;
}

static int run_central(sim_result *out, const sim_cell *c, const sim_model *m)
{
    static sim s; /* only its histograms, generator and wake stream */
    int64_t *freeat = malloc(c->k * sizeof *freeat);
    size_t n = 0;

    if (!freeat)
        return -1;
    memset(&s, 0, sizeof s);
    s.c = c, s.m = m;
    s.rng_wake = c->seed ^ 0x5157A7E5ull;
    gen_init(&s.g, c, m);
    for (unsigned i = 0; i < c->k; i++)
        free_push(freeat, &n, INT64_MIN / 2);
    for (uint64_t i = 0; i < c->warmup + c->jobs; i++) {
        sjob j = gen_next(&s.g);
        int64_t f = free_pop(freeat, &n), start = f > j.arr ? f : j.arr;
        if (m->central_overhead) {
            int64_t lat = f < j.arr ? wake_latency(&s) : 0;
            start += m->central_dispatch_ns + (f < j.arr && j.wake > lat ? j.wake : lat);
        }
        free_push(freeat, &n, start + j.cost);
        if (j.id >= c->warmup)
            record(&s, j.id, start + j.cost - j.due, start - (f > j.arr ? f : j.arr));
    }
    fill_result(out, &s, 0);
    free(freeat);
    return 0;
}

void sim_model_defaults(sim_model *m)
{
    *m = (sim_model){.dispatch_ns = 100, .wake_ns = 21000, .wake_tail_ns = 2400,
                     .spin_ns = 50000, .steal_ns = 500, .slowdown = 1.0,
                     .central_overhead = false, .rescue_ns = SIM_RESCUE_NS,
                     .older_ns = SIM_OLDER_NS};
}

void sim_model_bench_profile(sim_model *m)
{
    /* Fitted to one rp-bench-sojourn run (docs/simulator.md) with spin 0:
     * the fitted wake-up stands for whatever a job waits for an idle
     * routee there, spinning included.  dispatch_ns was 450 until the
     * third session's mailbox made a submit ~130 ns cheaper (the routees
     * submit the arrivals); refitted to 250 on run C (dc192ea: 450 left
     * load 0.9 1.3-1.55x too slow, 200-300 fit all 18 means) and checked
     * on the next full run; refitted to 200 on sojourn run W1 (e974d91,
     * after the fifth session's producer indexes and unfenced wake-up
     * check made a tell 15-20 ns cheaper: 200-225 fit all 36 cells, 250
     * left load 0.9 up to 1.2x high) and checked on W2, G and W3. */
    *m = (sim_model){.dispatch_ns = 200, .wake_ns = 1700, .wake_tail_ns = 3300,
                     .spin_ns = 0, .steal_ns = 500, .slowdown = 1.0,
                     .central_overhead = true, .central_dispatch_ns = 0,
                     .rescue_ns = SIM_RESCUE_NS, .older_ns = SIM_OLDER_NS};
}

int sim_run_cell(sim_result *out, const sim_cell *c, const sim_model *m)
{
    int64_t t0 = bench_now_ns();
    int rc;

    memset(out, 0, sizeof *out);
    rc = c->router == SR_CENTRAL ? run_central(out, c, m) : run_pool(out, c, m);
    if (rc < 0)
        fprintf(stderr, "rp-bench-sim: out of memory (k=%u, %llu jobs)\n", c->k,
                (unsigned long long)(c->warmup + c->jobs));
    out->seconds = (double)(bench_now_ns() - t0) / 1e9;
    return rc;
}
