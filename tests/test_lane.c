/* SPDX-License-Identifier: MIT */
/*
 * tests/test_lane.c - a lane's bulks (lib/lane.c, "Bulks"): consecutive
 * batch jobs of one function share a queue record, up to RP__LANE_BULK a
 * record; they come out in order, whole, each with its own argument and
 * sequence number (and a sampled job its stamp), and a job a bulk cannot
 * describe (a reply, a deadline, a stamp without the sample flag, another
 * function, a gap in the sequence, not a batch job) starts a record of
 * its own.  Linked with the static library: lanes are private.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "common.h"
#include "lane_fixture.h"

TestSuite(lane, .fini = rp_leak_check);

static void fn_a(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
}

static void fn_b(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
}

/* Batch job i: argument i + 1 (never NULL), sequence base + i. */
static void batch_jobs(rp__job *jobs, size_t n, uint64_t base)
{
    for (size_t i = 0; i < n; i++) {
        jobs[i] = (rp__job){.fn = fn_a, .arg = (void *)(uintptr_t)(i + 1), .flags = RP__JOB_BATCH};
        atomic_store(&jobs[i].seq, base + i);
    }
}

/* out[0..n) are jobs first..first+n of batch_jobs(base), unflagged. */
static void assert_jobs(const rp__job *out, unsigned n, size_t first, uint64_t base)
{
    for (unsigned i = 0; i < n; i++) {
        cr_assert_eq(out[i].fn, fn_a, "job %zu: another function", first + i);
        cr_assert_eq((uintptr_t)out[i].arg, first + i + 1, "job %zu: argument %zu", first + i,
                     (size_t)(uintptr_t)out[i].arg);
        cr_assert_eq(atomic_load(&out[i].seq), base + first + i, "job %zu: sequence", first + i);
        cr_assert_eq(out[i].flags, RP__JOB_BATCH, "job %zu: flags %#x", first + i, out[i].flags);
        cr_assert_null(out[i].reply.ops);
        cr_assert_eq(out[i].enq_ns, 0);
        cr_assert_eq(out[i].submit_tid, 0);
    }
}

/* A lane take: rp__lane_pop_owner_run or rp__lane_steal. */
typedef unsigned (*take_fn)(rp__lane *lane, rp__job *out, unsigned max);

/* take(lane, max) gives exactly want jobs, jobs first..first+want of
 * batch_jobs(base); want 0: the lane is empty. */
static void assert_take(take_fn take, rp__lane *lane, unsigned max, unsigned want, size_t first,
                        uint64_t base)
{
    rp__job out[16 + RP__LANE_BULK - 1]; /* a take of max <= 16 */
    unsigned got;

    cr_assert_leq(max, 16);
    got = take(lane, out, max);
    cr_assert_eq(got, want, "asked for %u from job %zu: got %u, not %u", max, first, got, want);
    assert_jobs(out, got, first, base);
}

Test(lane, a_batch_chain_comes_out_in_order_a_bulk_per_owner_take)
{
    rp__lane lane;
    rp__job jobs[64], out[RP__LANE_BULK];
    size_t taken = 0;
    unsigned takes = 0, got;

    lane_up(&lane);
    batch_jobs(jobs, 64, 100);
    cr_assert_eq(rp__lane_push_n(&lane, jobs, 64, true), 64);
    /* max 1: one record, whole - so each take is one bulk of 8. */
    while ((got = rp__lane_pop_owner_run(&lane, out, 1)) != 0) {
        cr_assert_eq(got, RP__LANE_BULK, "take %u: %u jobs", takes, got);
        assert_jobs(out, got, taken, 100);
        taken += got;
        takes++;
    }
    cr_assert_eq(taken, 64);
    cr_assert_eq(takes, 64 / RP__LANE_BULK);
    lane_down(&lane);
}

Test(lane, an_owner_run_ends_on_a_whole_bulk)
{
    rp__lane lane;
    rp__job jobs[20], out[8 + RP__LANE_BULK - 1];

    lane_up(&lane);
    batch_jobs(jobs, 20, 0);
    jobs[0].enq_ns = 1; /* sampled: a record of its own */
    cr_assert_eq(rp__lane_push_n(&lane, jobs, 20, true), 20);
    /* Asked for 8: the lone job, then the next bulk whole (9). */
    cr_assert_eq(rp__lane_pop_owner_run(&lane, out, 8), 1 + RP__LANE_BULK);
    cr_assert_eq(out[0].enq_ns, 1);
    out[0].enq_ns = 0;
    out[0].flags &= ~RP__JOB_COLD;
    assert_jobs(out, 1 + RP__LANE_BULK, 0, 0);
    /* The rest, bulks of 8 and 3: the first makes 8, the run stops. */
    assert_take(rp__lane_pop_owner_run, &lane, 8, 8, 9, 0);
    assert_take(rp__lane_pop_owner_run, &lane, 8, 3, 17, 0);
    assert_take(rp__lane_pop_owner_run, &lane, 8, 0, 20, 0);
    lane_down(&lane);
}

Test(lane, a_thief_takes_whole_bulks_and_leaves_one_that_does_not_fit)
{
    rp__lane lane;
    rp__job jobs[20];

    lane_up(&lane);
    batch_jobs(jobs, 20, 7);
    cr_assert_eq(rp__lane_push_n(&lane, jobs, 20, true), 20);
    /* Records of 8, 8 and 4.  Asked for 3: the first record, whole. */
    assert_take(rp__lane_steal, &lane, 3, 8, 0, 7);
    /* Asked for 10: the second record; the third would make 12. */
    assert_take(rp__lane_steal, &lane, 10, 8, 8, 7);
    assert_take(rp__lane_steal, &lane, 1, 4, 16, 7);
    assert_take(rp__lane_steal, &lane, 8, 0, 20, 7);
    lane_down(&lane);
}

/* How many jobs each record holds, by stealing one record at a time. */
static unsigned record_sizes(rp__lane *lane, unsigned *sizes, unsigned cap)
{
    rp__job out[RP__LANE_BULK];
    unsigned n = 0, got;

    while (n < cap && (got = rp__lane_steal(lane, out, 1)) != 0)
        sizes[n++] = got;
    return n;
}

Test(lane, a_job_a_bulk_cannot_describe_starts_a_record_of_its_own)
{
    rp__lane lane;
    rp__job jobs[12];
    unsigned sizes[12];
    static const unsigned want[] = {2, 1, 1, 2, 1, 1, 3, 1};
    rp__reply reply = {.deadline_ns = 5};

    lane_up(&lane);
    batch_jobs(jobs, 12, 0);
    jobs[2].enq_ns = 9;                    /* cold: a sample's stamp */
    jobs[3].fn = fn_b;                     /* another function */
    atomic_store(&jobs[6].seq, 60);        /* a gap in the sequence */
    jobs[7].flags = 0;                     /* not a batch job */
    jobs[11].reply = reply;                /* cold: a deadline */
    cr_assert_eq(rp__lane_push_n(&lane, jobs, 12, true), 12);
    /* [0 1] [2] [3] [4 5] [6] [7] [8 9 10] [11] */
    cr_assert_eq(record_sizes(&lane, sizes, 12), sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert_eq(sizes[i], want[i], "record %zu holds %u jobs", i, sizes[i]);
    lane_down(&lane);
}

Test(lane, sampled_jobs_share_a_bulk_with_their_stamp_one_job_fewer)
{
    rp__lane lane;
    rp__job jobs[20], out[RP__LANE_BULK];
    static const unsigned want[] = {7, 3, 7, 3};
    int64_t stamp[20] = {[0] = 42, [5] = 42, [9] = 43, [10] = 44};
    size_t taken = 0;

    lane_up(&lane);
    batch_jobs(jobs, 20, 0);
    for (size_t i = 0; i < 20; i++)
        if (stamp[i]) {
            jobs[i].flags |= RP__JOB_SAMPLED;
            jobs[i].enq_ns = stamp[i];
        }
    cr_assert_eq(rp__lane_push_n(&lane, jobs, 20, true), 20);
    /* [0..6] (two samples, one stamp: 7 jobs), [7..9] (job 10's stamp
     * differs from job 9's), [10..16], [17..19]. */
    for (size_t r = 0; r < sizeof want / sizeof want[0]; r++) {
        unsigned got = rp__lane_pop_owner_run(&lane, out, 1);

        cr_assert_eq(got, want[r], "record %zu holds %u jobs", r, got);
        for (unsigned i = 0; i < got; i++, taken++) {
            cr_assert_eq(out[i].enq_ns, stamp[taken], "job %zu: stamp %lld", taken,
                         (long long)out[i].enq_ns);
            cr_assert_eq(!!(out[i].flags & RP__JOB_SAMPLED), !!stamp[taken], "job %zu: flags %#x",
                         taken, out[i].flags);
            out[i].flags &= ~RP__JOB_SAMPLED;
            out[i].enq_ns = 0;
        }
        assert_jobs(out, got, taken - got, 0);
    }
    cr_assert_eq(taken, 20);
    cr_assert_eq(rp__lane_pop_owner_run(&lane, out, 1), 0);
    lane_down(&lane);
}

/* Every job of the lane, a record at a time: *nrec records, their sizes
 * in sizes[], their jobs in out[] (room for 64). */
static size_t drain_records(rp__lane *lane, rp__job *out, unsigned *sizes, unsigned *nrec)
{
    size_t n = 0;
    unsigned got;

    *nrec = 0;
    while ((got = rp__lane_steal(lane, out + n, 1)) != 0) {
        cr_assert_leq(n + got, 64);
        sizes[(*nrec)++] = got;
        n += got;
    }
    return n;
}

/* rp__lane_push_args() must make the records rp__lane_push_n() makes of
 * the jobs a batch call builds (mailbox.c, push_jobs and push_args): the
 * same record sizes, the same jobs out, a sampled one with its flag and
 * stamp. */
static void assert_args_as_jobs(size_t n, uint64_t sampled)
{
    rp__lane lane;
    rp__job jobs[64], want[64], got[64];
    void *args[64];
    unsigned want_sizes[64], got_sizes[64], want_n, got_n;
    const int64_t stamp = 1234567;

    batch_jobs(jobs, n, 5000);
    for (size_t i = 0; i < n; i++) {
        args[i] = jobs[i].arg;
        if ((sampled >> i) & 1u) {
            jobs[i].flags |= RP__JOB_SAMPLED;
            jobs[i].enq_ns = stamp;
        }
    }
    lane_up(&lane);
    cr_assert_eq(rp__lane_push_n(&lane, jobs, n, true), n);
    cr_assert_eq(drain_records(&lane, want, want_sizes, &want_n), n);
    lane_down(&lane);

    lane_up(&lane);
    cr_assert_eq(rp__lane_push_args(&lane, fn_a, args, n, 5000, sampled, sampled ? stamp : 0), n);
    cr_assert_eq(drain_records(&lane, got, got_sizes, &got_n), n);
    lane_down(&lane);

    cr_assert_eq(got_n, want_n, "%zu jobs, samples %#llx: %u records, not %u", n,
                 (unsigned long long)sampled, got_n, want_n);
    for (unsigned r = 0; r < want_n; r++)
        cr_assert_eq(got_sizes[r], want_sizes[r], "%zu jobs, samples %#llx: record %u", n,
                     (unsigned long long)sampled, r);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(got[i].fn, want[i].fn);
        cr_assert_eq(got[i].arg, want[i].arg, "job %zu: argument", i);
        cr_assert_eq(atomic_load(&got[i].seq), atomic_load(&want[i].seq), "job %zu: sequence", i);
        cr_assert_eq(got[i].flags, want[i].flags, "job %zu: flags %#x, not %#x", i, got[i].flags,
                     want[i].flags);
        cr_assert_eq(got[i].enq_ns, want[i].enq_ns, "job %zu: stamp", i);
        cr_assert_eq(got[i].submit_tid, 0);
        cr_assert_null(got[i].reply.ops);
    }
}

Test(lane, a_batch_written_from_its_arguments_makes_the_records_its_jobs_would)
{
    static const size_t sizes[] = {1, 2, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64};
    uint64_t x = 88172645463325252u;

    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        uint64_t all = n == 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;

        assert_args_as_jobs(n, 0);
        assert_args_as_jobs(n, all);
        /* One in 16 (RP_METRICS_SAMPLE), from every offset. */
        for (unsigned off = 0; off < 16; off++) {
            uint64_t m = 0;

            for (size_t i = off; i < n; i += 16)
                m |= UINT64_C(1) << i;
            assert_args_as_jobs(n, m);
        }
        for (int k = 0; k < 20; k++) { /* xorshift: any mix */
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            assert_args_as_jobs(n, x & all);
        }
    }
}

/* rp__lane_pop_mc() is for lanes without bulks (bounded mailboxes push
 * none); meeting one is a library bug, and it aborts rather than write
 * past its one job or drop the others. */
Test(lane, a_single_job_pop_that_meets_a_bulk_aborts_rather_than_lose_jobs, .signal = SIGABRT)
{
    rp__lane lane;
    rp__job jobs[4], out;

    lane_up(&lane);
    batch_jobs(jobs, 4, 0);
    cr_assert_eq(rp__lane_push_n(&lane, jobs, 4, true), 4);
    rp__lane_pop_mc(&lane, &out);
    lane_down(&lane);
}

Test(lane, a_single_job_pop_takes_plain_records_one_at_a_time)
{
    rp__lane lane;
    rp__job jobs[4], out;

    lane_up(&lane);
    batch_jobs(jobs, 4, 0);
    cr_assert_eq(rp__lane_push_n(&lane, jobs, 4, false), 4);
    for (size_t i = 0; i < 4; i++) {
        cr_assert(rp__lane_pop_mc(&lane, &out));
        assert_jobs(&out, 1, i, 0);
    }
    cr_assert_not(rp__lane_pop_mc(&lane, &out));
    lane_down(&lane);
}

Test(lane, without_bulk_every_job_has_its_record)
{
    rp__lane lane;
    rp__job jobs[16];
    unsigned sizes[16];

    lane_up(&lane);
    batch_jobs(jobs, 16, 0);
    cr_assert_eq(rp__lane_push_n(&lane, jobs, 16, false), 16);
    cr_assert_eq(record_sizes(&lane, sizes, 16), 16);
    for (unsigned i = 0; i < 16; i++)
        cr_assert_eq(sizes[i], 1);
    lane_down(&lane);
}

/* Tell i: argument i + 1, sequence i, pushed alone. */
static rp__job tell_job(uint64_t i)
{
    rp__job tell = {.fn = fn_a, .arg = (void *)(uintptr_t)(i + 1)};

    atomic_store(&tell.seq, i);
    return tell;
}

static void push_tells(rp__lane *lane, uint64_t from, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        rp__job tell = tell_job(from + i);

        cr_assert_eq(rp__lane_push_mp(lane, &tell, false), 0);
    }
}

/* take(lane, 8) gives the tells (or batch jobs) from..from+want. */
static void assert_steal_seqs(rp__lane *lane, unsigned want, uint64_t from)
{
    rp__job out[8 + RP__LANE_BULK - 1];
    unsigned got = rp__lane_steal(lane, out, 8);

    cr_assert_eq(got, want, "a steal of up to 8 from job %llu took %u, not %u",
                 (unsigned long long)from, got, want);
    for (unsigned i = 0; i < got; i++)
        cr_assert_eq(atomic_load(&out[i].seq), from + i, "job %u of the steal", i);
}

/* Put the lane's tail back on the record after its n-th queued one (n 0:
 * the stub), as a push leaves it between linking and swinging the tail. */
static void lag_tail(rp__lane *lane, unsigned n)
{
    ck_fifo_mpmc_entry_t *e = lane->fifo.head.pointer;

    for (unsigned i = 0; i < n; i++)
        e = e->next.pointer;
    lane->fifo.tail.pointer = e;
}

/* "The tail line" (lane.c): a thief's run of tells reads no tail while
 * each has a successor, and reads it at the last: with the tail not yet
 * swung to the last tell, the run stops before it; the next steal swings
 * the tail and takes it. */
Test(lane, a_thief_run_of_tells_stops_at_a_tail_that_lags)
{
    rp__lane lane;

    lane_up(&lane);
    push_tells(&lane, 0, 5);
    lag_tail(&lane, 4);
    assert_steal_seqs(&lane, 4, 0);
    assert_steal_seqs(&lane, 1, 4);
    assert_steal_seqs(&lane, 0, 5);
    lane_down(&lane);
}

/* A batch links its records with one CAS, and until the tail swings it
 * lags behind the whole chain: a thief's run that read no tail must not
 * take a chain record on the strength of its successor (the head would
 * pass the tail), so it reads the tail there and stops. */
Test(lane, a_thief_run_of_tells_never_passes_a_tail_that_lags_behind_a_chain)
{
    rp__lane lane;
    rp__job jobs[2];

    lane_up(&lane);
    push_tells(&lane, 0, 3);
    batch_jobs(jobs, 2, 3);
    cr_assert_eq(rp__lane_push_n(&lane, jobs, 2, false), 2);
    lag_tail(&lane, 3); /* at the last tell: the chain's swing not yet done */
    assert_steal_seqs(&lane, 3, 0);
    /* A Michael-Scott take forwards a lagging tail one node at a time. */
    assert_steal_seqs(&lane, 1, 3);
    assert_steal_seqs(&lane, 1, 4);
    assert_steal_seqs(&lane, 0, 5);
    lane_down(&lane);
}

/*
 * The same with a chain of tells: what a thief that stole a grown record
 * puts back on its own lane (rp__mailbox_requeue: rp__lane_push_n of
 * tells, not marked RP__JOB_BATCH).  Its records are linked to each
 * other before the chain is, so a successor proves nothing about the
 * tail: a thief that trusted the first one (it did: its flags said "a
 * tell") took it from an empty stub that was still the tail, the head
 * passed the tail, and the stub, freed and pushed again, was linked after
 * itself (rp-bench-sojourn hung again, sixteenth session, with both
 * generators in enqueue_chain).  On an empty lane, the tail not yet
 * swung: the thief forwards it one record at a time and takes the chain.
 */
Test(lane, a_thief_never_passes_a_tail_that_lags_behind_a_chain_of_tells)
{
    rp__lane lane;
    rp__job jobs[3];
    ck_fifo_mpmc_entry_t *stub;

    lane_up(&lane);
    for (unsigned i = 0; i < 3; i++)
        jobs[i] = tell_job(i);
    cr_assert_eq(rp__lane_push_n(&lane, jobs, 3, false), 3);
    lag_tail(&lane, 0); /* at the stub: the chain linked, the tail not swung */
    stub = lane.fifo.head.pointer;
    assert_steal_seqs(&lane, 1, 0);
    cr_assert_neq(lane.fifo.tail.pointer, stub,
                  "the head passed the tail: the stub it left is still the tail");
    assert_steal_seqs(&lane, 1, 1);
    assert_steal_seqs(&lane, 1, 2);
    assert_steal_seqs(&lane, 0, 3);
    lane_down(&lane);
}

/*
 * "Lives" (lane.c): a producer descheduled between reading the tail and
 * its link CAS holds the tail record's next as (NULL, generation).  Once
 * that record was taken, recycled and pushed again - the tail once more,
 * its next NULL once more - the stale CAS must fail: with every life
 * starting at one generation it succeeded, linked a job after a record
 * that need not be the tail, and a thief trusting "a successor was linked
 * at the tail" then let the head pass the tail; the tail's record, freed
 * and pushed again, was linked after itself (rp-bench-sojourn hung, both
 * generators spinning in enqueue_chain).  Tells with and without growth.
 */
static void stale_link_fails(bool grow)
{
    rp__lane lane;
    ck_fifo_mpmc_entry_t *rec, other;
    struct ck_fifo_mpmc_pointer stale, update;
    uint64_t seq = 0;
    bool again = false;

    lane_up(&lane);
    {
        rp__job tell = tell_job(seq++);
        cr_assert_eq(rp__lane_push_mp(&lane, &tell, grow), 0);
    }
    rec = lane.fifo.tail.pointer; /* the stale producer's read */
    stale.pointer = rec->next.pointer;
    stale.generation = rec->next.generation;
    cr_assert_null(stale.pointer);
    /* Take and push until rec is the lane's tail again, in a later life. */
    for (unsigned i = 0; i < 100000 && !again; i++) {
        /* Sequence numbers 2 apart: no tell joins the record before it,
         * so the tail is rec only when a push made a new life of it. */
        rp__job out[8 + RP__LANE_BULK - 1], tell = tell_job(seq += 2);
        cr_assert_eq(rp__lane_push_mp(&lane, &tell, grow), 0);
        again = lane.fifo.tail.pointer == rec;
        if (!again)
            cr_assert_geq(rp__lane_steal(&lane, out, 8), 1);
    }
    cr_assert(again, "the record came back as the tail within 100000 pushes");
    cr_assert_null(rec->next.pointer);
    update.pointer = &other;
    update.generation = (char *)stale.generation + 1;
    cr_assert_not(ck_pr_cas_ptr_2(&rec->next, &stale, &update),
                  "a link CAS of the record's earlier life succeeded on a later one");
    lane_down(&lane);
}

Test(lane, a_stale_link_to_an_earlier_life_of_the_tail_record_fails)
{
    stale_link_fails(false);
}

Test(lane, a_stale_link_to_an_earlier_life_of_a_growing_tail_record_fails)
{
    stale_link_fails(true);
}

/*
 * Concurrent: a producer pushes bulks while the owner takes runs and a
 * thief steals; every job comes out exactly once, and each consumer sees
 * its jobs in sequence order.
 */
#define CONC_JOBS 200000u

typedef struct conc {
    rp__lane lane;
    bool mixed; /* tells pushed alone between the chains */
    _Atomic unsigned char seen[CONC_JOBS];
    _Atomic uint64_t got;
    bool order_ok[2];
    bool pushed_all;
} conc;

static void note(conc *c, const rp__job *out, unsigned n, uint64_t *last, int who)
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t s = atomic_load(&out[i].seq);

        if (s >= CONC_JOBS || (uintptr_t)out[i].arg != s + 1 || (*last != UINT64_MAX && s <= *last))
            c->order_ok[who] = false;
        if (s < CONC_JOBS)
            atomic_fetch_add(&c->seen[s], 1);
        *last = s;
    }
    atomic_fetch_add(&c->got, n);
}

static void *conc_thief(void *p)
{
    conc *c = p;
    rp__job out[RP__LANE_BULK + 4];
    uint64_t last = UINT64_MAX;

    while (atomic_load(&c->got) < CONC_JOBS)
        note(c, out, rp__lane_steal(&c->lane, out, 4), &last, 1);
    return NULL;
}

static void *conc_producer(void *p)
{
    conc *c = p;
    rp__job jobs[RP__LANE_CHAIN_MAX];

    for (uint64_t base = 0; base < CONC_JOBS;) {
        size_t n = CONC_JOBS - base < 37 ? CONC_JOBS - base : 37; /* bulks of 8, 8, 8, 8, 5 */

        batch_jobs(jobs, n, base);
        for (size_t i = 0; i < n; i++)
            jobs[i].arg = (void *)(uintptr_t)(base + i + 1);
        if (rp__lane_push_n(&c->lane, jobs, n, true) != n)
            return NULL; /* out of memory: the test fails on the count */
        base += n;
        /* Tells: a thief may end a run on one without reading the tail,
         * never on a chain's record. */
        for (int t = 0; c->mixed && t < 5 && base < CONC_JOBS; t++, base++) {
            rp__job tell = tell_job(base);

            if (rp__lane_push_mp(&c->lane, &tell, false) != 0)
                return NULL;
        }
    }
    c->pushed_all = true;
    return NULL;
}

static void owner_and_thief(bool mixed)
{
    conc *c = calloc(1, sizeof *c);
    pthread_t prod, thief;
    rp__job out[8 + RP__LANE_BULK - 1];
    uint64_t last = UINT64_MAX;

    cr_assert_not_null(c);
    c->order_ok[0] = c->order_ok[1] = true;
    c->mixed = mixed;
    lane_up(&c->lane);
    cr_assert_eq(pthread_create(&prod, NULL, conc_producer, c), 0);
    cr_assert_eq(pthread_create(&thief, NULL, conc_thief, c), 0);
    while (atomic_load(&c->got) < CONC_JOBS) {
        unsigned got = rp__lane_pop_owner_run(&c->lane, out, 8);

        note(c, out, got, &last, 0);
        if (!got)
            rp__lane_flush(&c->lane);
    }
    cr_assert_eq(pthread_join(prod, NULL), 0);
    cr_assert_eq(pthread_join(thief, NULL), 0);
    cr_assert(c->pushed_all, "the producer could not push every job");
    cr_assert_eq(atomic_load(&c->got), CONC_JOBS);
    cr_assert(c->order_ok[0], "the owner saw a job out of order");
    cr_assert(c->order_ok[1], "the thief saw a job out of order");
    for (unsigned i = 0; i < CONC_JOBS; i++)
        cr_assert_eq(atomic_load(&c->seen[i]), 1, "job %u came out %d times", i,
                     atomic_load(&c->seen[i]));
    rp__lane_flush(&c->lane);
    lane_down(&c->lane);
    free(c);
}

Test(lane, an_owner_and_a_thief_take_every_bulk_job_exactly_once_in_order, .timeout = 60)
{
    owner_and_thief(false);
}

Test(lane, an_owner_and_a_thief_take_every_job_of_chains_and_tells_exactly_once_in_order,
     .timeout = 60)
{
    owner_and_thief(true);
}
