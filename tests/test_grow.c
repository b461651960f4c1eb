/* SPDX-License-Identifier: MIT */
/*
 * tests/test_grow.c - growing records (lib/lane.c, "Growing"): a tell
 * pushed with grow joins the lane's last record when its own producer
 * thread pushed that record, nobody took it yet, and the tell continues
 * it (same function, the next sequence number), up to RP__LANE_BULK jobs;
 * a record a consumer took is sealed, so a tell that comes after it is
 * never added to it and lost; a tell that does not continue the record
 * (another thread's record after it, another function, a gap, a reply, a
 * deadline, grow off) starts a record of its own; a sampled tell joins
 * with its stamp in the record's last slot, one sample a record.  Concurrent:
 * every job comes out exactly once, each producer's in order.  Linked
 * with the static library: lanes are private.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>

#include "common.h"
#include "lane_fixture.h"

TestSuite(grow, .fini = rp_leak_check);

static void fn_a(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
}

static void fn_b(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
}

/* Tell i: argument i + 1, sequence i. */
static rp__job tell(uint64_t i)
{
    rp__job t = {.fn = fn_a, .arg = (void *)(uintptr_t)(i + 1)};

    atomic_store(&t.seq, i);
    return t;
}

static void push(rp__lane *lane, rp__job t, bool grow)
{
    cr_assert_eq(rp__lane_push_mp(lane, &t, grow), 0);
}

static void push_tells(rp__lane *lane, uint64_t from, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        push(lane, tell(from + i), true);
}

/* A steal of up to 1 job takes one whole record: it gives exactly want
 * jobs, the tells from..from+want, unflagged. */
static void assert_record(rp__lane *lane, unsigned want, uint64_t from)
{
    rp__job out[RP__LANE_BULK];
    unsigned got = rp__lane_steal(lane, out, 1);

    cr_assert_eq(got, want, "the record from tell %llu holds %u jobs, not %u",
                 (unsigned long long)from, got, want);
    for (unsigned i = 0; i < got; i++) {
        cr_assert_eq(atomic_load(&out[i].seq), from + i, "job %u of the record", i);
        cr_assert_eq((uintptr_t)out[i].arg, from + i + 1, "job %u: argument", i);
        cr_assert_eq(out[i].flags, 0, "job %u: flags %#x", i, out[i].flags);
        cr_assert_eq(out[i].fn, fn_a);
    }
}

/* The next records hold sizes[0..n) jobs, the tells from, from + 1, ...
 * in order; a last size 0: the lane is empty then. */
static void assert_records(rp__lane *lane, uint64_t from, const unsigned *sizes, size_t n)
{
    for (size_t i = 0; i < n; from += sizes[i++])
        assert_record(lane, sizes[i], from);
}

Test(grow, a_producers_tells_share_its_last_record_up_to_a_bulk)
{
    rp__lane lane;

    lane_up(&lane);
    push_tells(&lane, 0, 2 * RP__LANE_BULK + 3);
    assert_records(&lane, 0, (const unsigned[]){RP__LANE_BULK, RP__LANE_BULK, 3, 0}, 4);
    lane_down(&lane);
}

/* The record a take leaves as the queue's stub is still the lane's tail:
 * its seal keeps the next tell out of it (there it would never be taken). */
Test(grow, a_taken_record_is_sealed_and_the_next_tell_starts_its_own)
{
    rp__lane lane;
    rp__job out[RP__LANE_BULK];

    lane_up(&lane);
    push_tells(&lane, 0, 3);
    assert_record(&lane, 3, 0);
    push_tells(&lane, 3, 2);
    assert_record(&lane, 2, 3);
    /* The owner's takes seal as well. */
    push_tells(&lane, 5, 1);
    cr_assert_eq(rp__lane_pop_owner_run(&lane, out, 1), 1);
    cr_assert_eq(atomic_load(&out[0].seq), 5);
    push_tells(&lane, 6, 4);
    cr_assert_eq(rp__lane_pop_owner_run(&lane, out, 1), 4);
    for (unsigned i = 0; i < 4; i++)
        cr_assert_eq(atomic_load(&out[i].seq), 6 + i);
    cr_assert_eq(rp__lane_pop_owner_run(&lane, out, 1), 0);
    rp__lane_flush(&lane);
    lane_down(&lane);
}

/* A steal that looks at a record without taking it (it does not fit)
 * seals it too: the next tell starts a record, and nothing is lost. */
Test(grow, a_record_a_steal_looked_at_but_left_takes_no_more_tells)
{
    rp__lane lane;
    rp__job t = tell(2), out[RP__LANE_BULK];

    lane_up(&lane);
    push_tells(&lane, 0, 2);
    t.fn = fn_b; /* a record of its own */
    push(&lane, t, true);
    push_tells(&lane, 3, 4);
    /* A steal of up to 4: the first record (2 jobs), the second (1); the
     * third (4) does not fit and stays queued, sealed. */
    cr_assert_eq(rp__lane_steal(&lane, out, 4), 3);
    cr_assert_eq(out[2].fn, fn_b);
    push_tells(&lane, 7, 1);
    assert_records(&lane, 3, (const unsigned[]){4, 1, 0}, 3);
    lane_down(&lane);
}

/* rp__lane_young: the jobs of the lane's only record while it can grow
 * (not sealed, not full, nothing after it), else 0. */
Test(grow, a_lane_is_young_while_its_only_record_can_still_grow)
{
    rp__lane lane;
    rp__job t = tell(20), out[RP__LANE_BULK];

    lane_up(&lane);
    cr_assert_eq(rp__lane_young(&lane), 0, "an empty lane");
    push_tells(&lane, 0, 1);
    cr_assert_eq(rp__lane_young(&lane), 1, "one tell");
    push_tells(&lane, 1, RP__LANE_BULK - 2);
    cr_assert_eq(rp__lane_young(&lane), RP__LANE_BULK - 1, "one short of a bulk");
    push_tells(&lane, RP__LANE_BULK - 1, 1);
    cr_assert_not(rp__lane_young(&lane), "a full record");
    push_tells(&lane, RP__LANE_BULK, 1);
    cr_assert_not(rp__lane_young(&lane), "a record linked after the first");
    cr_assert_eq(rp__lane_steal(&lane, out, 1), RP__LANE_BULK);
    cr_assert_eq(rp__lane_young(&lane), 1, "the second, alone now");
    cr_assert_eq(rp__lane_steal(&lane, out, 1), 1);
    cr_assert_not(rp__lane_young(&lane), "taken (sealed)");
    push(&lane, t, false);
    cr_assert_not(rp__lane_young(&lane), "a record that does not grow");
    cr_assert_eq(rp__lane_steal(&lane, out, 1), 1);
    lane_down(&lane);
}

static void *push_one(void *p)
{
    rp__lane *lane = p;
    rp__job t = tell(2);

    return (void *)(intptr_t)rp__lane_push_mp(lane, &t, true);
}

/* Only the producer that pushed a record adds to it, and only while it is
 * the lane's last: another thread's push after it ends it. */
Test(grow, another_threads_push_ends_the_record)
{
    rp__lane lane;
    pthread_t other;
    void *rc;

    lane_up(&lane);
    push_tells(&lane, 0, 2);
    cr_assert_eq(pthread_create(&other, NULL, push_one, &lane), 0);
    cr_assert_eq(pthread_join(other, &rc), 0);
    cr_assert_eq((intptr_t)rc, 0);
    push_tells(&lane, 3, 2);
    assert_records(&lane, 0, (const unsigned[]){2, 1, 2, 0}, 4);
    lane_down(&lane);
}

Test(grow, a_tell_that_does_not_continue_the_record_starts_its_own)
{
    rp__lane lane;
    rp__job t;
    rp__reply reply = {.deadline_ns = 5};
    rp__job out[RP__LANE_BULK];
    static const unsigned want[] = {2, 1, 2, 1, 1, 2, 1};

    lane_up(&lane);
    push_tells(&lane, 0, 2);           /* [0 1] */
    t = tell(2), t.fn = fn_b;          /* another function: [2] */
    push(&lane, t, true);
    t = tell(4);                       /* a gap (3 missing): [4 5] */
    push(&lane, t, true);
    push_tells(&lane, 5, 1);
    t = tell(6), t.reply = reply;      /* a deadline: [6] */
    push(&lane, t, true);
    push(&lane, tell(8), false);       /* grow off (and a gap): [8] */
    push_tells(&lane, 9, 2);           /* [9 10] */
    t = tell(11), t.flags = RP__JOB_BATCH; /* a batch job alone: [11] */
    push(&lane, t, true);
    for (size_t r = 0; r < sizeof want / sizeof want[0]; r++)
        cr_assert_eq(rp__lane_steal(&lane, out, 1), want[r], "record %zu", r);
    cr_assert_eq(rp__lane_steal(&lane, out, 1), 0);
    lane_down(&lane);
}

/* Tell i, sampled at stamp. */
static rp__job sampled(uint64_t i, int64_t stamp)
{
    rp__job t = tell(i);

    t.flags = RP__JOB_SAMPLED;
    t.enq_ns = stamp;
    return t;
}

/* The next record holds n jobs from tell `from` on, the one at `at`
 * sampled at stamp (at < 0: none). */
static void assert_sampled_record(rp__lane *lane, unsigned n, uint64_t from, int at, int64_t stamp)
{
    rp__job out[RP__LANE_BULK];

    cr_assert_eq(rp__lane_steal(lane, out, 1), n, "the record from tell %llu",
                 (unsigned long long)from);
    for (unsigned i = 0; i < n; i++) {
        bool s = (int)i == at;

        cr_assert_eq(atomic_load(&out[i].seq), from + i, "job %u of the record", i);
        cr_assert_eq((uintptr_t)out[i].arg, from + i + 1, "job %u: argument", i);
        cr_assert_eq(out[i].flags, s ? RP__JOB_SAMPLED : 0, "job %u: flags %#x", i,
                     out[i].flags);
        cr_assert_eq(out[i].enq_ns, s ? stamp : 0, "job %u: stamp", i);
    }
}

/* A sampled tell joins the record (its stamp in the last slot, so the
 * record holds one job less) or begins one; a record takes one sample. */
Test(grow, a_sampled_tell_joins_the_record_with_its_stamp)
{
    rp__lane lane;

    lane_up(&lane);
    push_tells(&lane, 0, 3);
    push(&lane, sampled(3, 99), true); /* joins [0 1 2 3] */
    push_tells(&lane, 4, 4);           /* 4 5 6 join: full at 7; 7 begins [7] */
    push(&lane, sampled(8, 98), true); /* joins [7 8] */
    push(&lane, sampled(9, 97), true); /* a second sample begins [9] */
    push_tells(&lane, 10, 1);          /* joins [9 10] */
    assert_sampled_record(&lane, RP__LANE_BULK - 1, 0, 3, 99);
    assert_sampled_record(&lane, 2, 7, 1, 98);
    assert_sampled_record(&lane, 2, 9, 0, 97);
    cr_assert(rp__lane_empty(&lane));
    lane_down(&lane);
}

/*
 * Concurrent: producers push growing tells while the owner takes and a
 * thief steals - the owner's and the thief's takes seal the records the
 * producers are adding to.  Every job comes out exactly once, and each
 * consumer sees each producer's jobs in order.  Producer p's job i has
 * argument (p << 32 | i) + 1; with one producer the sequence numbers are
 * consecutive and records grow; with two they interleave (a shared
 * counter), and records grow while one producer's numbers run on.
 */
#define CONC_JOBS 200000u
#define CONC_PRODUCERS 2

typedef struct conc {
    rp__lane lane;
    int producers;
    _Atomic uint64_t next_seq;
    _Atomic unsigned char seen[CONC_PRODUCERS][CONC_JOBS];
    _Atomic uint64_t got;
    _Atomic bool order_ok;
    _Atomic int pushed_all;
} conc;

typedef struct producer {
    conc *c;
    int p;
} producer;

static void note(conc *c, const rp__job *out, unsigned n, uint64_t last[CONC_PRODUCERS])
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t a = (uint64_t)(uintptr_t)out[i].arg - 1, j = a & 0xffffffffu;
        int p = (int)(a >> 32);

        if (p >= c->producers || j >= CONC_JOBS || out[i].fn != fn_a || out[i].flags != 0 ||
            (last[p] != UINT64_MAX && j <= last[p])) {
            atomic_store(&c->order_ok, false);
            continue;
        }
        atomic_fetch_add(&c->seen[p][j], 1);
        last[p] = j;
    }
    atomic_fetch_add(&c->got, n);
}

static void *conc_thief(void *arg)
{
    conc *c = arg;
    rp__job out[RP__LANE_BULK + 4];
    uint64_t last[CONC_PRODUCERS] = {UINT64_MAX, UINT64_MAX};
    uint64_t all = (uint64_t)CONC_JOBS * (uint64_t)c->producers;

    while (atomic_load(&c->got) < all)
        note(c, out, rp__lane_steal(&c->lane, out, 4), last);
    return NULL;
}

static void *conc_producer(void *arg)
{
    producer *pr = arg;
    conc *c = pr->c;

    for (uint64_t i = 0; i < CONC_JOBS; i++) {
        rp__job t = {.fn = fn_a, .arg = (void *)(uintptr_t)(((uint64_t)pr->p << 32 | i) + 1)};

        atomic_store(&t.seq, atomic_fetch_add(&c->next_seq, 1));
        if (rp__lane_push_mp(&c->lane, &t, true) != 0)
            return NULL; /* out of memory: the test fails on the count */
    }
    atomic_fetch_add(&c->pushed_all, 1);
    return NULL;
}

static void producers_owner_and_thief(int producers)
{
    conc *c = calloc(1, sizeof *c);
    pthread_t prod[CONC_PRODUCERS], thief;
    producer pr[CONC_PRODUCERS];
    rp__job out[8 + RP__LANE_BULK - 1];
    uint64_t last[CONC_PRODUCERS] = {UINT64_MAX, UINT64_MAX};
    uint64_t all = (uint64_t)CONC_JOBS * (uint64_t)producers;

    cr_assert_not_null(c);
    c->producers = producers;
    atomic_store(&c->order_ok, true);
    lane_up(&c->lane);
    for (int p = 0; p < producers; p++) {
        pr[p] = (producer){c, p};
        cr_assert_eq(pthread_create(&prod[p], NULL, conc_producer, &pr[p]), 0);
    }
    cr_assert_eq(pthread_create(&thief, NULL, conc_thief, c), 0);
    while (atomic_load(&c->got) < all) {
        unsigned got = rp__lane_pop_owner_run(&c->lane, out, 8);

        note(c, out, got, last);
        if (!got)
            rp__lane_flush(&c->lane);
    }
    for (int p = 0; p < producers; p++)
        cr_assert_eq(pthread_join(prod[p], NULL), 0);
    cr_assert_eq(pthread_join(thief, NULL), 0);
    cr_assert_eq(atomic_load(&c->pushed_all), producers, "a producer could not push every job");
    cr_assert_eq(atomic_load(&c->got), all);
    cr_assert(atomic_load(&c->order_ok), "a consumer saw a job out of order or garbled");
    for (int p = 0; p < producers; p++)
        for (unsigned i = 0; i < CONC_JOBS; i++)
            cr_assert_eq(atomic_load(&c->seen[p][i]), 1, "producer %d's job %u came out %d times",
                         p, i, atomic_load(&c->seen[p][i]));
    cr_assert_eq(rp__lane_pop_owner_run(&c->lane, out, 8), 0);
    rp__lane_flush(&c->lane);
    lane_down(&c->lane);
    free(c);
}

Test(grow, an_owner_and_a_thief_take_every_growing_tell_exactly_once_in_order, .timeout = 60)
{
    producers_owner_and_thief(1);
}

Test(grow, two_producers_tells_come_out_exactly_once_each_in_its_order, .timeout = 60)
{
    producers_owner_and_thief(2);
}

/*
 * Late claims (lib/lane.c, "Late slot stores").  A producer between its
 * look and its claim can be descheduled while its record is taken,
 * recycled and pushed by another producer thread: the test puts exactly
 * that between rp__lane_grow_look() and rp__lane_grow_claim().  The late
 * claim must neither overwrite the other producer's job nor add itself
 * to a record it does not own.
 */
#define LATE_TRIES 64u

typedef struct late {
    rp__lane *lane;
    rp__lane_rec *rec;          /* the record the late claim looked at */
    unsigned before;            /* the other producer's jobs in rec at the claim: 1 or 2 */
    pthread_barrier_t claim;    /* the other producer waits there while the test claims */
    uint64_t sent[LATE_TRIES + 2]; /* the other producer's tells, in order (sequences) */
    unsigned nsent;
    bool landed;                /* one of its tells went into rec */
} late;

/* The other producer's tell: function fn_b, argument i + 1, sequence i. */
static rp__job tell_b(uint64_t i)
{
    rp__job t = {.fn = fn_b, .arg = (void *)(uintptr_t)(i + 1)};

    atomic_store(&t.seq, i);
    return t;
}

static bool late_push(late *l, uint64_t s)
{
    rp__job t = tell_b(s);

    if (rp__lane_push_mp(l->lane, &t, true) != 0)
        return false;
    l->sent[l->nsent++] = s;
    return true;
}

/* Tells that never continue each other (sequences two apart) until one
 * is pushed in rec, then l->before - 1 more that grow it; after the
 * test's claim, one that would continue it.  No assertions here (the
 * test thread checks what it left). */
static void *late_producer(void *arg)
{
    late *l = arg;
    uint64_t s = 1000;

    for (unsigned k = 0; k < LATE_TRIES && !l->landed; k++, s += 2)
        l->landed = late_push(l, s) &&
                    ck_pr_load_ptr(&l->lane->fifo.tail.pointer) == &l->rec->fifo;
    s -= 2;
    for (unsigned k = 1; l->landed && k < l->before; k++)
        late_push(l, ++s);
    pthread_barrier_wait(&l->claim);
    pthread_barrier_wait(&l->claim);
    if (l->landed)
        late_push(l, ++s);
    return NULL;
}

/* Every job left in the lane, in order: the other producer's tells, each
 * once with its own argument, then the test's tell 1. */
static void assert_late_drain(rp__lane *lane, const late *l)
{
    rp__job out[8];
    unsigned got, next = 0, mine = 0;

    while ((got = rp__lane_steal(lane, out, 8)) > 0) {
        for (unsigned i = 0; i < got; i++) {
            uint64_t s = atomic_load(&out[i].seq);

            if (out[i].fn == fn_a) {
                cr_assert_eq(s, 1, "the test's tell %llu came out", (unsigned long long)s);
                cr_assert_eq((uintptr_t)out[i].arg, 2);
                cr_assert_eq(next, l->nsent, "the test's tell came out before the other's");
                mine++;
                continue;
            }
            cr_assert_lt(next, l->nsent, "a tell of the other producer came out twice");
            cr_assert_eq(s, l->sent[next], "the other producer's tell %u: sequence %llu, not %llu",
                         next, (unsigned long long)s, (unsigned long long)l->sent[next]);
            cr_assert_eq((uintptr_t)out[i].arg, s + 1,
                         "the other producer's tell %llu carries another argument",
                         (unsigned long long)s);
            next++;
        }
    }
    cr_assert_eq(next, l->nsent, "the other producer's tells lost: %u of %u came out", next,
                 l->nsent);
    cr_assert_eq(mine, 1, "the test's tell came out %u times", mine);
}

static void late_claim(unsigned before)
{
    rp__lane lane;
    rp__lane_grow_spot spot;
    rp__job t = tell(1), out[RP__LANE_BULK];
    late l = {.lane = &lane, .before = before};
    pthread_t other;
    int r;

    lane_up(&lane);
    push(&lane, tell(0), true);
    cr_assert(rp__lane_grow_look(&lane, &t, &spot), "tell 1 may join tell 0's record");
    cr_assert_eq(spot.jobs, 1);
    l.rec = spot.rec;
    /* The record is taken; a take of the next leaves it no longer the
     * queue's stub, and it goes back to the producers. */
    cr_assert_eq(rp__lane_steal(&lane, out, 1), 1);
    push(&lane, tell(100), false);
    cr_assert_eq(rp__lane_steal(&lane, out, 1), 1);
    cr_assert_eq(atomic_load(&out[0].seq), 100);
    cr_assert_eq(pthread_barrier_init(&l.claim, NULL, 2), 0);
    cr_assert_eq(pthread_create(&other, NULL, late_producer, &l), 0);
    pthread_barrier_wait(&l.claim);
    r = rp__lane_grow_claim(&spot, &t);
    pthread_barrier_wait(&l.claim);
    cr_assert_eq(pthread_join(other, NULL), 0);
    pthread_barrier_destroy(&l.claim);
    cr_assert(l.landed, "the record did not reach the other producer in %u tells", LATE_TRIES);
    cr_assert_neq(r, 1, "a late claim joined a record of another producer");
    push(&lane, t, true);
    assert_late_drain(&lane, &l);
    lane_down(&lane);
}

/* The slot the late claim would write holds the other producer's job. */
Test(grow, a_late_claim_leaves_the_job_a_later_life_of_the_record_holds)
{
    late_claim(2);
}

/* The slot is still a hole: the late claim writes there, and the other
 * producer's next tell starts a record of its own instead of counting a
 * slot that is not its job's. */
Test(grow, a_late_claim_into_a_hole_is_never_counted_as_a_job)
{
    late_claim(1);
}
