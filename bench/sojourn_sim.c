/* SPDX-License-Identifier: MIT */
/*
 * bench/sojourn_sim.c - rp-bench-sojourn's zero-overhead simulation.
 *
 * An exact discrete-event replay of the arrivals and nominal job sizes
 * (1 us, 100 us) through ideal schedulers: no dispatch cost, no wake-up
 * latency, no generator.  It shows what queueing alone predicts for this
 * very workload, so the measured tables can be read against it.  The
 * routepool policies are modelled as lib/ implements them:
 *  - smallest-mailbox scores a routee by its queued jobs plus one while it
 *    runs, scanning from message_index % 2;
 *  - stealing follows the pool's policy as rp-bench-sim's engine does, the
 *    same functions (sim_policy.h): a routee whose own queue and stolen
 *    batch are empty takes half the other's depth (1..8) of its oldest
 *    queued jobs when that routee is busy or holds more than one job, runs
 *    the first and keeps the rest in a private batch; a job queued behind a
 *    busy routee wakes the idle one to steal it at once (searching takes no
 *    time here, so no thief is ever still searching); a routee with work
 *    of its own rescues the other's queue when it looks between jobs
 *    (sim_rescue_steals(): rp__steal_rescue()), or takes its oldest job
 *    when that job is older than its own by SIM_OLDER_NS (the age look,
 *    sim_older_steals(); not under smallest-mailbox, as in the pool).
 */
#include "sim_policy.h"
#include "sojourn.h"

typedef struct simw {
    size_t *q, qh, qt;         /* FIFO of job indices */
    size_t batch[BENCH_STEAL_MAX];
    unsigned bh, bn;           /* private stolen batch: batch[bh..bn) */
    bool busy;
    int64_t until;             /* completion of the running job */
    uint64_t done;             /* jobs finished */
    int64_t watch_t;           /* the rescue: when it last looked, the */
    uint64_t watch_done;       /* other's jobs finished then and whether */
    bool watch_had;            /* it had jobs queued */
} simw;

typedef struct sim {
    simw w[ROUTEES];
    const workload *wl;
    int64_t *sojourn;          /* per job, ns */
    bool steal;
    bool older; /* the age look: not under smallest-mailbox (pool->older) */
} sim;

static int64_t sim_size(const workload *wl, size_t j)
{
    return (int64_t)((wl->is_long[j] ? LONG_US : SHORT_US) * 1e3);
}

static int64_t sim_depth(const simw *x)
{
    return (int64_t)(x->qt - x->qh) + (int64_t)(x->bn - x->bh);
}

/* What the pool's policy reads of routee i (sim_policy.h). */
static sim_view sim_view_of(const void *m, unsigned i)
{
    const simw *x = &((const sim *)m)->w[i];

    /* Never asleep with a job: without wake-up latency a routee handed a
     * job while idle starts it at once. */
    return (sim_view){.queued = (int64_t)(x->qt - x->qh), .depth = sim_depth(x), .busy = x->busy};
}

static void sim_run(sim *m, simw *x, size_t j, int64_t t)
{
    x->busy = true;
    x->until = t + sim_size(m->wl, j);
    m->sojourn[j] = x->until - m->wl->offset[j];
}

/* Take want of v's oldest jobs into x's batch and run the first. */
static void sim_steal(sim *m, simw *x, simw *v, unsigned want, int64_t t)
{
    x->bh = x->bn = 0;
    while (x->bn < want)
        x->batch[x->bn++] = v->q[v->qh++];
    sim_run(m, x, x->batch[x->bh++], t);
}

/* The rescue (rp__steal_rescue()), at 2 routees: routee k, with jobs of
 * its own, looks at the other one every SIM_RESCUE_NS; at a look that
 * rescues nothing, the age look (sim_older_steals()). */
static bool sim_rescue(sim *m, size_t k, int64_t t)
{
    simw *x = &m->w[k], *v = &m->w[1 - k];
    int64_t since = t - x->watch_t;
    bool has = v->qt > v->qh;

    if (since < SIM_RESCUE_NS)
        return false;
    x->watch_t = t;
    if (sim_rescue_steals(since, SIM_RESCUE_NS, x->watch_had, has, v->done == x->watch_done)) {
        x->watch_had = false;
        sim_steal(m, x, v, sim_steal_count(sim_view_of(m, (unsigned)(1 - k)), false), t);
        return true;
    }
    if (sim_older_steals(since, SIM_RESCUE_NS, v->done - x->watch_done, v->busy, has,
                         has ? m->wl->offset[v->q[v->qh]] : 0, m->wl->offset[x->q[x->qh]],
                         m->older ? SIM_OLDER_NS : 0)) {
        sim_steal(m, x, v, 1, t);
        /* Still watched, from here: what it has left, if it stays stuck,
         * is the rescue's at the next look. */
        x->watch_done = v->done;
        x->watch_had = v->qt > v->qh;
        return true;
    }
    x->watch_done = v->done;
    x->watch_had = has;
    return false;
}

/* Routee k looks for its next job at time t (lib/worker.c: next_job()). */
static void sim_next(sim *m, size_t k, int64_t t)
{
    simw *x = &m->w[k], *v;
    int64_t d;
    int vi;

    if (x->busy)
        x->done++;
    x->busy = false;
    if (x->bh < x->bn) {
        sim_run(m, x, x->batch[x->bh++], t);
    } else if (m->steal && ROUTEES == 2 && x->qh < x->qt && sim_rescue(m, k, t)) {
        /* running the rescued job */
    } else if (x->qh < x->qt) {
        sim_run(m, x, x->q[x->qh++], t);
    } else if (m->steal && (vi = sim_pick_victim(m, sim_view_of, ROUTEES, (unsigned)k, &d)) >= 0) {
        v = &m->w[vi];
        x->watch_had = false; /* as steal_from(): the rescue saw this work */
        sim_steal(m, x, v, sim_steal_count(sim_view_of(m, (unsigned)vi), false), t);
    }
}

/* A job was queued on routee c at t: the pool's thief wake-up. */
static void sim_thief(sim *m, size_t c, int64_t t)
{
    uint64_t idle = 0;
    int i;

    if (!m->steal || !sim_push_wants_thief(sim_view_of(m, (unsigned)c)))
        return;
    for (size_t k = 0; k < ROUTEES; k++)
        idle |= (uint64_t)!m->w[k].busy << k;
    if ((i = sim_thief_to_wake(&idle, ROUTEES, 0)) >= 0)
        sim_next(m, (size_t)i, t);
}

/* Complete every job that ends by time t, earliest first. */
static void sim_advance(sim *m, int64_t t)
{
    for (;;) {
        size_t k = ROUTEES;
        for (size_t c = 0; c < ROUTEES; c++)
            if (m->w[c].busy && m->w[c].until <= t && (k == ROUTEES || m->w[c].until < m->w[k].until))
                k = c;
        if (k == ROUTEES)
            return;
        sim_next(m, k, m->w[k].until);
    }
}

static size_t sim_route(const sim *m, enum variant v, size_t i, uint64_t *rng)
{
    size_t best = i % ROUTEES;

    if (v == V_RANDOM)
        return (size_t)(bench_splitmix64(rng) % ROUTEES);
    if (v != V_SM && v != V_SM_STEAL)
        return best; /* round-robin */
    for (size_t k = 1; k < ROUTEES; k++) {
        size_t c = (i + k) % ROUTEES;
        if (sim_depth(&m->w[c]) + m->w[c].busy < sim_depth(&m->w[best]) + m->w[best].busy)
            best = c;
    }
    return best;
}

/* Per-routee FIFOs under a routepool policy; sojourn per job into out. */
static void sim_pool(int64_t *out, enum variant v, const workload *wl, const buffers *b,
                     uint64_t seed)
{
    sim m = {.wl = wl, .sojourn = out, .steal = v == V_RR_STEAL || v == V_SM_STEAL,
             .older = v == V_RR_STEAL};

    for (size_t k = 0; k < ROUTEES; k++)
        m.w[k].q = b->ring[k];
    for (size_t i = 0; i < wl->n; i++) {
        size_t c;
        sim_advance(&m, wl->offset[i]);
        c = sim_route(&m, v, i, &seed);
        m.w[c].q[m.w[c].qt++] = i;
        if (!m.w[c].busy)
            sim_next(&m, c, wl->offset[i]); /* c runs it: no thief (sim_thief()) */
        else
            sim_thief(&m, c, wl->offset[i]);
    }
    sim_advance(&m, INT64_MAX);
}

/* One central FIFO: the worker that frees first takes the head. */
static void sim_central(int64_t *out, const workload *wl)
{
    int64_t free_at[ROUTEES] = {0};

    for (size_t i = 0; i < wl->n; i++) {
        size_t k = 0;
        for (size_t c = 1; c < ROUTEES; c++)
            k = free_at[c] < free_at[k] ? c : k;
        free_at[k] = (free_at[k] > wl->offset[i] ? free_at[k] : wl->offset[i]) + sim_size(wl, i);
        out[i] = free_at[k] - wl->offset[i];
    }
}

void simulate(double *st, enum variant v, const workload *w, const buffers *b,
                     size_t warm, uint64_t seed)
{
    size_t m = w->n - warm;
    double sum = 0;

    if (v == V_CENTRAL || v == V_NULL || v == V_TBB) /* tbb: no model; the work-conserving ideal */
        sim_central(b->late, w); /* late[] is free between runs */
    else
        sim_pool(b->late, v, w, b, seed);
    for (size_t i = warm; i < w->n; i++) {
        b->scratch[i - warm] = b->late[i];
        sum += (double)b->late[i];
    }
    bench_sort_i64(b->scratch, m);
    st[S_MEAN] = sum / (double)m / 1e3;
    st[S_P50] = (double)bench_pct_sorted(b->scratch, m, 0.50) / 1e3;
    st[S_P99] = (double)bench_pct_sorted(b->scratch, m, 0.99) / 1e3;
    st[S_P999] = (double)bench_pct_sorted(b->scratch, m, 0.999) / 1e3;
}
