/* SPDX-License-Identifier: MIT */
/*
 * lane.c - a Michael-Scott queue (ck_fifo_mpmc) whose nodes are the job
 * records.
 *
 * Records as nodes.  In a Michael-Scott queue the head always points at a
 * stub: a dequeue moves the head to the first real node, takes that node's
 * value, and the node becomes the new stub while the old stub comes back
 * as garbage.  So the node of the job taken is not free yet (it is the
 * stub), and the garbage is the *previous* job's record.  A lane therefore
 * hands jobs out by value: rp__lane_pop_mc() copies the job out of the
 * first node *before* its head CAS (as ck's own dequeue reads the value
 * before committing) and frees the garbage record after it.  The copy may
 * read a record a concurrent dequeuer has already recycled; then the head
 * moved, the generation-tagged CAS fails and the copy is thrown away.  If
 * the CAS succeeds, the head did not move during the copy, so the node was
 * still queued and its job intact.  One record per job, no separate queue
 * node, no per-job reference count.
 *
 * Memory reclamation.  Besides the copy, the garbage record may still be
 * read by other threads (a slow dequeuer's head snapshot, a slow
 * enqueuer's tail snapshot).  Instead of epochs or hazard pointers we use
 * the reclamation of the original Michael-Scott paper: records are
 * type-stable.  Each lane owns its records (a freelist of its own, slabs
 * freed only when the pool is destroyed), so a stale pointer always points
 * at a record of the same lane:
 *   - a stale dequeuer reads a reused record's next or job, but its head
 *     CAS carries the head generation and fails;
 *   - a stale enqueuer whose tail node was recycled fails its link CAS:
 *     every life of a record starts its next at a generation of its own
 *     ("Lives", below; until the fifteenth session it linked after the
 *     recycled node, and a thief could then pass the tail).
 * Records still never migrate between lanes: the stale reads above are
 * safe because a stale pointer always points at a record of this lane.
 *
 * Magazines.  A freelist is a linked stack: taking a record reads the link
 * the freeing thread wrote into it, a cache miss per record that no
 * prefetch can hide (the next address is in the missing line).  So the
 * owner, which frees almost every record of its lanes, puts them into a
 * magazine instead - an array of RP__LANE_MAG pointers - and hands the
 * full magazine to producers with one CAS.  Producers take records from
 * the array: the addresses are known ahead, so the record lines are
 * prefetched, and nothing is written into a free record.  A producer
 * thread with an index (producer.h: the first RP__PRODUCERS alive) keeps
 * its magazine in lane->own[index], which no other thread touches: no
 * atomic per record.  Others share lane->taking, exchanged out and back in
 * by each get: whoever holds it owns it, no ABA (two locked instructions
 * per job: 6-7 ns of a 70-90 ns tell here).  Empty magazines go back to
 * the owner.  The owner hands a magazine over when it is full or when it
 * goes idle (rp__lane_flush), and magazines are made with the records
 * (make_mags), never on demand: when none is empty the owner frees into
 * the freelist, so partial magazines cannot multiply.  Thieves free the
 * records of a steal into the magazine in lane->returned (exchanged out
 * and back in, like taking; producers take it when no full magazine
 * waits).  Evicting producers, and everyone when no empty magazine is
 * left, use the lane's freelist, which producers fall back to last.
 *
 * Prefetching.  A consumer follows next links, so it can start a record's
 * cache miss only once the record before it arrived.  A chain
 * (rp__lane_push_n) knows its records ahead: each carries in fifo.value
 * (a record is its own value) the one RP__LANE_AHEAD places on, which a
 * consumer prefetches when it takes the record.  The read is racy (the
 * record may be recycled meanwhile), but records are type-stable, and a
 * prefetch of a wrong address costs nothing.
 *
 * Two lines, one used.  A record's first line holds the queue link and
 * what every job needs (function, argument, sequence, flags); the second
 * holds a reply and a sample's stamp and is written and read only for a
 * job marked RP__JOB_COLD (an ask, a scatter member, a sampled job).  A
 * tell therefore moves one line from producer to consumer and back, not
 * two (prefetch_rec() fetches the first only).
 *
 * Bulks.  Batch jobs differ only in argument and sequence, so a chain
 * (rp__lane_push_n with bulk) packs consecutive ones of one function into
 * a record: the first job on the first line, up to RP__LANE_BULK - 1 more
 * arguments on the second (more[]), the count and which jobs are sampled
 * in the flags (RP__BULK_*), a sampled job's stamp, shared by the bulk's
 * sampled jobs, in the last slot.  A consumer copies a bulk out whole
 * (jobs_in, copy_bulk): a record is never split, so every array jobs are
 * taken into holds a bulk.  A job with a reply, a deadline or a trace
 * cannot be described by a bulk and gets a record of its own.
 *
 * Growing.  A tell costs a record: at a far placement (~200 ns a line
 * transfer) the consumer on the other CPU takes each record's line with a
 * miss, and the producer's next write to a recycled record and its link
 * CAS each take a line back.  So a producer thread's tells to one lane
 * (rp__lane_push_mp with grow: a mailbox's stealable lane, unbounded) fill
 * its last record as a bulk does, while nobody has taken that record yet:
 * up to RP__LANE_BULK jobs, the others' arguments on the second line.  The
 * record's state lives in the generation of its next pointer, which ck
 * CASes as one 16-byte word with the pointer: bits 0-2 count ck's link
 * (+1, once a life), bit 3 is the seal, bits 4-7 the jobs, bits 8-15 the
 * producer index + 1 that may add to it (0: a record that does not grow),
 * bits 16-19 a sampled job, and bits 20 and up count the record's lives
 * ("Lives", below).  A tell joins (try_grow) when the lane's
 * tail has no successor, carries this thread's index, is not sealed or
 * full, and the tell continues it (the same function, the next sequence
 * number of the mailbox, so the jobs come out in the order a record of
 * their own each would give them): it claims the next slot for its
 * argument (a CAS from a hole: "Late slot stores", below), then CASes the
 * generation's job count up (an 8-byte CAS of the generation alone:
 * grow_claim).  Only the record's producer adds to it, and
 * no other thread pushes a record with its tag, so a CAS that succeeds
 * found the same life of the record it read.  A consumer that takes a
 * growing record with no successor seals it first (grown_jobs: a CAS
 * setting bit 3), and then reads the count: an addition either came before
 * the seal and is taken, or fails and starts a record of its own - never
 * added to a record already taken (which stays the queue's stub, and whose
 * later jobs would never run).  A linked record cannot grow (a link raises
 * the generation the CAS expects), so its count is final without a seal.
 * What a tell costs when its record grows: two CASes on lines the producer
 * holds, no record, no tail CAS, no new line for the consumer; when the
 * consumer is caught up it seals every record it takes, an RMW where it
 * read before.  Only plain tells grow (no reply, deadline or trace: they
 * need the record's second line), and never in a bounded mailbox's lanes
 * (an evicting producer pops one job at a time).  A tell sampled for the
 * metrics grows too: its stamp takes the record's last slot (as a bulk's
 * does) and the generation names the sampled job, one a record.  A
 * consumer that keeps up would seal every record with a job or two: a
 * routee in a stream lets a young record grow before it takes it
 * (worker.c, let_young_grow; rp__lane_young), and a thief passes over its
 * own young record for ready work of its last victim (worker.c,
 * pass_young).  A thief takes records whole, so a steal of half a short
 * queue may take a whole grown record, and gives back what it took beyond
 * its share (steal.c, rp__mailbox_requeue).  Measured: design.md, "Growing
 * records"; perf-history.md, "2026-12-06, fourth session" and "fifth
 * session".
 *
 * The tail line.  A Michael-Scott dequeue reads the tail to tell an empty
 * queue from one whose tail lags, and a producer's next push must then
 * take that line back: one transfer per job between the CPUs even when
 * the consumer works far behind the tail.  The owner keeps the tail it
 * read last (seen_tail) when the head it left behind (at seen_gen) is
 * strictly before it.  While the head's generation is still seen_gen
 * nobody else dequeued, so that node is still queued and after the head,
 * the real tail is at or after it, and the head is not the tail: the
 * owner walks up to seen_tail without reading the tail line.  A thief
 * does not read it either when every record it takes has a successor
 * linked at the tail in its current life (ends_before_tail): the push
 * that linked it found the tail at that record (ck links only after the
 * tail), and the tail only moves forward, so the head the thief leaves is
 * not past it.  A chain (a batch, or the tells a thief gives back) links
 * its records to each other before one CAS links it, and the tail lags
 * behind the chain until it swings, so a chain's links give no such
 * proof: a run that gets to such a record, or to the lane's last, reads
 * the tail then and goes on as before.
 * Evicting producers always read it.  (Measured on 2 vCPUs, a submitter
 * beside one routee and the other stealing its jobs: tells 0.96x near,
 * 0.91x far; perf-history.md, "2026-12-06, third session".)
 * Trimming.  Type stability is what makes the stale reads above safe, so
 * a record's slab may go back to the allocator only when no thread can
 * reach any of its records, not even through a stale pointer.  Every
 * stale pointer into a lane is held by an operation in progress on it -
 * a push (its tail snapshot, a freelist pop's head), a pop or steal (its
 * head snapshot and the links walked from it), a peek - and every
 * operation starts from the lane's live state: the head, the tail, the
 * freelist, the magazines.  rp__lane_trim(), run by the idle owner, first
 * takes every free record out of that state (the magazine it fills, the
 * full, returned and shared magazines, the empty ones, the freelist):
 * from then on no operation that starts can reach them (a detached record
 * is in no queue, so no live link leads to it, and it is handed to no
 * producer).  Then it asks its caller whether every operation that was in
 * progress is over (worker.c, trim_quiescent(): the mailbox's depth is 0,
 * read released-first, so every producer that reserved has linked its
 * job and touches no record any more; no producer is evicting; every
 * other routee is asleep or slept since).  Only then are the slabs all of
 * whose records were taken freed (rp__freelist_trim), down to the
 * reserve, with the magazines beyond what the remaining records need;
 * everything else goes back.  The magazine a live producer thread holds
 * in own[] is not touched (its holder uses it without atomics): up to
 * RP__LANE_MAG records per such thread stay, and their slabs with them;
 * those of exited threads are taken (the trim claims their free producer
 * indexes meanwhile, producer.c), and a thread's exit makes a trim due
 * again, run in the routee's next idle period (an idle routee is not
 * woken for it: a pool that stays idle keeps those records).  Nothing of this is on a job's path:
 * a trim costs the owner a pass over its free records, once per idle
 * period after a growth.
 */
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "lane.h"

/* rp__event_signal_after_rmw() (wait.h) counts on the tail CAS of a push
 * being a locked instruction, which ck makes it unless built for one CPU. */
#if defined(CK_MD_UMP)
#error "routepool needs ConcurrencyKit built for SMP (ck_pr without lock prefixes)"
#endif

/* The ck_fifo_mpmc layout dequeue_run() and enqueue_chain() were written
 * against (ck 0.7.1, CMakeLists.txt checks the version; docs/design.md,
 * "ConcurrencyKit pin", says what to re-check when ck changes): a
 * generation-tagged pointer is {pointer, generation} in 16 bytes, CASed
 * as one; an entry is {value, next}; head and tail sit a cache line apart. */
_Static_assert(offsetof(struct ck_fifo_mpmc_pointer, pointer) == 0, "ck: pointer first");
_Static_assert(offsetof(struct ck_fifo_mpmc_pointer, generation) == sizeof(void *),
               "ck: generation after the pointer");
_Static_assert(sizeof(struct ck_fifo_mpmc_pointer) == 16, "ck: a tagged pointer is 16 bytes");
_Static_assert(_Generic(((struct ck_fifo_mpmc_pointer *)0)->generation, char *: 1, default: 0),
               "ck: the generation is a char * (rp__lane.seen_gen)");
_Static_assert(offsetof(ck_fifo_mpmc_entry_t, value) == 0, "ck: an entry's value first");
_Static_assert(offsetof(ck_fifo_mpmc_entry_t, next) == 16, "ck: an entry's next at 16");
_Static_assert(sizeof(ck_fifo_mpmc_entry_t) == 32, "ck: an entry is 32 bytes");
_Static_assert(offsetof(ck_fifo_mpmc_t, head) == 0, "ck: the head first");
_Static_assert(offsetof(ck_fifo_mpmc_t, tail) == CK_MD_CACHELINE, "ck: the tail a line after");

/* Records per slab: 63 records of 128 bytes (two lines: the second starts
 * at the free-list link) plus the 64-byte slab header fill jemalloc's 8 KiB size class
 * exactly; 64 would spill into the 10 KiB class (rp-bench-memory). */
#define RECS_PER_SLAB 63
_Static_assert(sizeof(rp__lane_rec) == 2 * RP_CACHELINE, "a record is two cache lines");

static rp__lane_rec *rec_of(ck_fifo_mpmc_entry_t *e)
{
    return (rp__lane_rec *)((char *)e - offsetof(rp__lane_rec, fifo));
}

/* A record's first line, the one every job uses: one we will read, one
 * we will write.  The second line is fetched when a cold job needs it. */
static void prefetch_rec(const rp__lane_rec *rec)
{
    __builtin_prefetch(rec);
}

/* A record we will fill, its first line; and the second when it will
 * grow (its maker writes holes there before the push: "Late slot
 * stores"). */
static void prefetch_rec_w(const rp__lane_rec *rec, bool grows)
{
    rp__prefetch_w(rec);
    if (grows)
        rp__prefetch_w((const char *)rec + RP_CACHELINE);
}

static rp__lane_mag *mag_pop(ck_stack_t *stack)
{
    ck_stack_entry_t *e;

    rp__tsan_ignore_begin();
    e = ck_stack_pop_mpmc(stack);
    rp__tsan_ignore_end();
    if (!e)
        return NULL;
    rp__tsan_acquire(e); /* pairs with mag_push: the array's contents */
    return (rp__lane_mag *)((char *)e - offsetof(rp__lane_mag, link));
}

static void mag_push(ck_stack_t *stack, rp__lane_mag *m)
{
    rp__tsan_release(&m->link);
    rp__tsan_ignore_begin();
    ck_stack_push_mpmc(stack, &m->link);
    rp__tsan_ignore_end();
}

/*
 * Make magazines as records are made: one per RP__LANE_MAG records, and
 * three more (the owner's, the thieves', and a second producer's partial
 * one), so no magazine is allocated in a steady state (rp-bench-memory
 * counts allocations) and every free record fits in one with up to two
 * producers.  More producers park more partial magazines (lane->own);
 * then the owner may find no empty one and free into the freelist, which
 * is slower, never wrong.  With one per
 * 2 * RP__LANE_MAG (5 bytes per record instead of 10) the owner freed half
 * of them into the freelist, and with two producers on a lane, the one
 * that found `taking` out spent 10 % of its time taking records from the
 * freelist (a dependent miss each): 2-submitter batches 50 -> 37 ns/job
 * (11 alternating pairs).  Called after the freelist may have grown;
 * thread-safe.  Out of memory: fewer.
 */
static void make_mags(rp__lane *lane)
{
    size_t want = atomic_load_explicit(&lane->recs.records, memory_order_relaxed) / RP__LANE_MAG + 3;
    size_t have = atomic_load_explicit(&lane->mags, memory_order_relaxed);

    while (have < want) {
        rp__lane_mag *m;

        if (!atomic_compare_exchange_weak_explicit(&lane->mags, &have, have + 1,
                                                   memory_order_relaxed, memory_order_relaxed))
            continue;
        if (!(m = rp__arena_alloc(lane->arena, sizeof *m, RP_CACHELINE))) {
            atomic_fetch_sub_explicit(&lane->mags, 1, memory_order_relaxed);
            return;
        }
        rp__tsan_release(&m->all); /* its fields, for a trim's free_doomed() */
        rp__tsan_ignore_begin();
        ck_stack_push_upmc(&lane->all, &m->all);
        rp__tsan_ignore_end();
        mag_push(&lane->empty, m);
        have++;
    }
}

int rp__lane_init(rp__lane *lane, const rp__arena *arena)
{
    rp__lane_rec *stub;

    RP__OWNER_INIT(lane);
    rp__freelist_init(&lane->recs, arena, sizeof(rp__lane_rec), RP_CACHELINE,
                      offsetof(rp__lane_rec, free), RECS_PER_SLAB);
    lane->arena = arena;
    ck_stack_init(&lane->full);
    ck_stack_init(&lane->empty);
    ck_stack_init(&lane->all);
    for (int p = 0; p < RP__PRODUCERS; p++)
        lane->own[p] = NULL;
    atomic_init(&lane->taking, NULL);
    atomic_init(&lane->returned, NULL);
    lane->filling = NULL;
    lane->seen_tail = NULL;
    lane->seen_gen = NULL;
    lane->trimmed_at = 0;
    lane->trimmed_exits = 0;
    atomic_init(&lane->mags, 0);
    stub = rp__freelist_get(&lane->recs);
    if (!stub)
        return RP_ENOMEM;
    make_mags(lane);
    atomic_store_explicit(&stub->seq, UINT64_MAX, memory_order_relaxed);
    ck_fifo_mpmc_init(&lane->fifo, &stub->fifo);
    return 0;
}

void rp__lane_destroy(rp__lane *lane)
{
    ck_stack_entry_t *e = ck_stack_batch_pop_upmc(&lane->all);

    while (e) {
        rp__lane_mag *m = (rp__lane_mag *)((char *)e - offsetof(rp__lane_mag, all));
        e = e->next;
        rp__arena_free(lane->arena, m, sizeof *m, RP_CACHELINE);
    }
    rp__freelist_destroy(&lane->recs);
}

/* Producers: put back the magazine they took records from. */
static void mag_return(rp__lane *lane, rp__lane_mag *m)
{
    rp__lane_mag *old;

    if (m->n == 0) {
        mag_push(&lane->empty, m);
        return;
    }
    old = atomic_exchange_explicit(&lane->taking, m, memory_order_acq_rel);
    if (old) /* another producer put one back meanwhile */
        mag_push(&lane->full, old);
}

/* Up to n records from the magazine *m into out, and then from full
 * ones; *m is left holding the rest (or NULL).  shared: *m came from
 * lane->taking, so a lane->taking magazine is no fallback.  grows: as
 * get_recs().  Returns how many. */
static size_t take_from_mags(rp__lane *lane, rp__lane_mag **mp, rp__lane_rec **out, size_t n,
                             bool shared, bool grows)
{
    rp__lane_mag *m = *mp;
    size_t got = 0;

    while (got < n) {
        if (!m || m->n == 0) {
            if (m)
                mag_push(&lane->empty, m);
            /* A thieves' partial magazine when no full one waits; an
             * indexed producer also takes the shared one. */
            if (!(m = mag_pop(&lane->full)) &&
                !(m = atomic_exchange_explicit(&lane->returned, NULL, memory_order_acq_rel)) &&
                (shared ||
                 !(m = atomic_exchange_explicit(&lane->taking, NULL, memory_order_acq_rel))))
                break;
        }
        out[got] = m->recs[--m->n];
        rp__tsan_acquire(out[got]); /* pairs with the owner's release */
        prefetch_rec_w(out[got], grows);
        got++;
    }
    /* The next get's record: its lines are on their way. */
    if (m && m->n)
        prefetch_rec_w(m->recs[m->n - 1], grows);
    *mp = m;
    return got;
}

/* Up to n free records into out: from magazines first, then from the
 * freelist (which grows).  grows: for a record that will grow (both of
 * its lines are prefetched, and the next get's too).  Returns how many
 * (fewer: out of memory). */
static size_t get_recs(rp__lane *lane, rp__lane_rec **out, size_t n, bool grows)
{
    int p = rp__producer_index();
    size_t got;

    if (RP_LIKELY(p >= 0)) {
        rp__lane_mag **own = &lane->own[p];

        got = take_from_mags(lane, own, out, n, false, grows);
        /* An empty one back to the owner now, not at our next get. */
        if (*own && (*own)->n == 0) {
            mag_push(&lane->empty, *own);
            *own = NULL;
        }
    } else {
        rp__lane_mag *m = atomic_exchange_explicit(&lane->taking, NULL, memory_order_acq_rel);

        got = take_from_mags(lane, &m, out, n, true, grows);
        if (m)
            mag_return(lane, m);
    }
    if (got < n) {
        size_t before = atomic_load_explicit(&lane->recs.records, memory_order_relaxed);

        while (got < n && (out[got] = rp__freelist_get(&lane->recs)) != NULL)
            got++;
        if (atomic_load_explicit(&lane->recs.records, memory_order_relaxed) != before)
            make_mags(lane);
    }
    return got;
}

/* Whether a job needs its record's second line. */
static bool is_cold(const rp__job *job)
{
    return job->reply.ops || job->reply.deadline_ns || job->enq_ns;
}

static void fill(rp__lane_rec *rec, const rp__job *job)
{
    uint32_t flags = job->flags & ~RP__JOB_COLD;

    if (RP_UNLIKELY(is_cold(job))) {
        flags |= RP__JOB_COLD;
        rec->reply = job->reply;
        rec->enq_ns = job->enq_ns;
    }
    rec->fn = job->fn;
    rec->arg = job->arg;
    rec->flags = flags;
    rec->submit_tid = job->submit_tid;
    atomic_store_explicit(&rec->seq, atomic_load_explicit(&job->seq, memory_order_relaxed),
                          memory_order_relaxed);
    /* The record's fields were written by this thread; the consumer that
     * pops it acquires them (pairs with rp__tsan_acquire in pop). */
    rp__tsan_release(rec);
}

/* A generation-tagged pointer of ck's queue, read as ck reads it: the
 * generation first, then (after a load fence) the pointer. */
static struct ck_fifo_mpmc_pointer load_tagged(struct ck_fifo_mpmc_pointer *p)
{
    struct ck_fifo_mpmc_pointer v;

    v.generation = ck_pr_load_ptr(&p->generation);
    ck_pr_fence_load();
    v.pointer = ck_pr_load_ptr(&p->pointer);
    return v;
}

static void enqueue_chain(ck_fifo_mpmc_t *fifo, ck_fifo_mpmc_entry_t *first,
                          ck_fifo_mpmc_entry_t *last);

/* A growing record's next generation ("Growing", at the top): bits 0-2
 * count ck's link (+1, once a life), then the seal, the jobs, the
 * producer index + 1 that may add to it, and the sampled job's index + 1
 * (0: none; its stamp is in the record's last slot, so such a record
 * holds one job less). */
#define GROW_LINKS ((uintptr_t)7)
#define GROW_SEALED ((uintptr_t)8)
#define GROW_ONE ((uintptr_t)16)
#define GROW_JOBS(g) ((unsigned)((g) >> 4) & 0xfu)
#define GROW_MAKER(g) ((uintptr_t)((g) >> 8) & 0xffu)
#define GROW_TAG(maker) ((uintptr_t)(maker) << 8 | GROW_ONE)
#define GROW_SAMPLE(g) ((unsigned)((g) >> 16) & 0xfu)
#define GROW_SAMPLE_AT(i) ((uintptr_t)(i) << 16)
_Static_assert(RP__LANE_BULK < 16 && RP__PRODUCERS < 255, "a growing record's tag");

/*
 * Lives.  Bits 20 and up of every record's next generation count its
 * lives: each push starts the record's next at (NULL, its previous life's
 * count + 1), where ck's enqueue starts every life at (NULL, 0).  A push
 * links after the tail it read with a CAS of that tail's next, expecting
 * (NULL, the generation it read); a producer descheduled between the read
 * and the CAS (a VM stall, a SCHED_FIFO thread on its CPU) may find the
 * record recycled and pushed again meanwhile - and with every life
 * starting at the same generation its CAS succeeded, linking its job
 * after a record that was not the lane's tail at all, possibly not yet in
 * the lane.  The job still landed in the lane ("stale enqueuer", at the
 * top), but "the push that linked a record's successor found the tail
 * at that record" no longer held, and a thief's run that trusts it
 * (ends_before_tail) could take that record while the tail still lagged
 * before it: the head passed the tail, the tail's record was freed, and
 * its next push linked it after itself - a loop every push and pop then
 * spun in (seen in rp-bench-sojourn, fifteenth session: both generators
 * and a routee in enqueue_chain, the tail's generation rising by millions a
 * second on a record whose next was itself).  With the count, a CAS of
 * an earlier life fails, as the generations of Michael and Scott's counted
 * pointers never come back.  (44 bits: wraps after 10^13 lives of one
 * record.)
 */
#define GROW_LIFE ((uintptr_t)1 << 20)
_Static_assert(GROW_SAMPLE_AT(15) < GROW_LIFE, "a record's life count above its growth bits");

/* Start a new life of rec, which is ours (taken from a freelist or
 * magazine, not yet pushed): its next becomes (next, the next life's
 * count with the growth bits given). */
static void new_life(rp__lane_rec *rec, ck_fifo_mpmc_entry_t *next, uintptr_t growth)
{
    uintptr_t g = (uintptr_t)ck_pr_load_ptr(&rec->fifo.next.generation);
    uintptr_t life = (g & ~(GROW_LIFE - 1)) + GROW_LIFE;

    /* The generation first: no moment shows a NULL next with a generation
     * a stale CAS could hold (either order is safe, this one plainly so). */
    ck_pr_store_ptr(&rec->fifo.next.generation, (void *)(life + growth));
    ck_pr_fence_store();
    ck_pr_store_ptr(&rec->fifo.next.pointer, next);
}

/* The jobs a growing record may hold: one less with a sample's stamp. */
static unsigned grow_cap(uintptr_t g)
{
    return GROW_SAMPLE(g) ? RP__LANE_BULK - 1 : RP__LANE_BULK;
}

/*
 * Late slot stores.  A producer that passed try_grow's checks may be
 * descheduled before it writes its argument; meanwhile the record can be
 * sealed, taken, recycled through a magazine, pushed by another producer
 * thread and grown past the same slot.  A plain store would then
 * overwrite that producer's argument (its job lost, ours run twice: our
 * generation CAS fails and we push a record of our own).  So a slot is
 * claimed with a CAS from GROW_HOLE, a value no job can carry (the
 * address of a private object; a stamp is stored with its top bit set,
 * grow_stamp): the maker fills a growing record's slots with holes while
 * the record is still only its own (grow_holes, before the push), and
 * only a CAS from a hole writes a slot after that.  A late CAS finds
 * another life's argument and fails, or a hole and writes into a slot the
 * count does not cover (the record taken: nobody reads it; a later life:
 * its maker's own CAS on that slot fails, and its tell starts a record
 * of its own); either way our generation CAS fails.  Only the generation
 * says which slots hold jobs, as before.
 */
static const char grow_hole_ = 0;
#define GROW_HOLE ((void *)&grow_hole_)
#define GROW_STAMP_BIT ((uint64_t)1 << 63)
_Static_assert(sizeof(void *) == 8, "a growing record's slots hold a pointer or a stamp");

/* A sample's stamp as a growing record's last slot holds it: never a
 * hole (an address has no top bit; a stamp is a positive int64). */
static uint64_t grow_stamp(int64_t stamp)
{
    return (uint64_t)stamp | GROW_STAMP_BIT;
}

/* Fill a growing record's slots with holes, and the stamp's slot with its
 * stamp when it begins with a sampled tell (stamp nonzero): by the maker,
 * before the push, while the record is its own. */
static void grow_holes(rp__lane_rec *rec, int64_t stamp)
{
    unsigned n = stamp ? RP__LANE_BULK - 2 : RP__LANE_BULK - 1;

    for (unsigned i = 0; i < n; i++)
        ck_pr_store_ptr(&rec->more[i], GROW_HOLE);
    if (stamp)
        ck_pr_store_64((uint64_t *)&rec->stamp, grow_stamp(stamp));
}

/* Whether a tell may grow a record or begin one that grows: nothing but
 * its function, argument and sequence, and a sample's stamp. */
static bool growable(const rp__job *job)
{
    return !job->reply.ops && !job->reply.deadline_ns && !job->submit_tid &&
           (job->flags == RP__JOB_SAMPLED ? job->enq_ns != 0
                                          : job->flags == 0 && !job->enq_ns);
}

/* The jobs of a record whose next is `next` while more may join it (no
 * successor, not sealed, not full), else 0: a record of no producer
 * (no jobs counted in its generation) says 0 too. */
static unsigned open_jobs(struct ck_fifo_mpmc_pointer next)
{
    uintptr_t g = (uintptr_t)next.generation;
    unsigned c = GROW_JOBS(g);

    return next.pointer || (g & GROW_SEALED) || c >= grow_cap(g) ? 0 : c;
}

/* try_grow's look: whether job may join the lane's last record - maker
 * pushed it, it grows, is not sealed or full, and job continues it (same
 * function, the next sequence number).  A sampled job joins a record
 * without a sample that has room for it and its stamp.  On true, *spot
 * holds the record, its generation as read and its jobs. */
static bool grow_look(rp__lane *lane, const rp__job *job, uintptr_t maker,
                      rp__lane_grow_spot *spot)
{
    bool sampled = job->flags & RP__JOB_SAMPLED;
    struct ck_fifo_mpmc_pointer tail = load_tagged(&lane->fifo.tail);
    struct ck_fifo_mpmc_pointer next = load_tagged(&tail.pointer->next);
    uintptr_t g = (uintptr_t)next.generation;
    rp__lane_rec *last = rec_of(tail.pointer);
    unsigned c;

    if (GROW_MAKER(g) != maker || (c = open_jobs(next)) == 0 ||
        (sampled && (GROW_SAMPLE(g) || c + 1 >= RP__LANE_BULK)) || last->fn != job->fn ||
        atomic_load_explicit(&last->seq, memory_order_relaxed) + c !=
            atomic_load_explicit(&job->seq, memory_order_relaxed))
        return false;
    *spot = (rp__lane_grow_spot){.rec = last, .gen = g, .jobs = c};
    return true;
}

/* try_grow's claim: job into the slot after spot's jobs, then one CAS of
 * the generation of the record's next that counts it.  1: grown.  0: the
 * slot holds no hole (a late claim of an earlier life wrote there: "Late
 * slot stores"), start a record.  -1: the CAS failed (a consumer sealed
 * the record or a push linked after it), look again.  The CAS succeeds
 * only in the life spot was read in: only the maker (this thread) pushes
 * a record with its tag, so the generation cannot come back. */
static int grow_claim(const rp__lane_grow_spot *spot, const rp__job *job)
{
    rp__lane_rec *last = spot->rec;
    uintptr_t g = spot->gen;
    unsigned c = spot->jobs;
    bool sampled = job->flags & RP__JOB_SAMPLED;

    if (!ck_pr_cas_ptr(&last->more[c - 1], GROW_HOLE, job->arg) ||
        (sampled && !ck_pr_cas_64((uint64_t *)&last->stamp, (uint64_t)(uintptr_t)GROW_HOLE,
                                  grow_stamp(job->enq_ns))))
        return 0;
    /* The consumer that takes the job acquires rec (dequeue_run): the
     * producer's writes before this push happen before the job. */
    rp__tsan_release(last);
    ck_pr_fence_store_atomic();
    /* The generation alone, an 8-byte CAS (ck's 16-byte one cost tells
     * 6-8 % near): a link raises it too (ck's +1), and it never comes
     * back to g, so while it is g the pointer is still NULL. */
    return ck_pr_cas_ptr(&last->fifo.next.generation, (void *)g,
                         (void *)(g + GROW_ONE + (sampled ? GROW_SAMPLE_AT(c + 1) : 0)))
               ? 1
               : -1;
}

/* Add job to the lane's last record when it may (grow_look, grow_claim):
 * no record, no tail CAS.  Runs inside an ignore region. */
static bool try_grow(rp__lane *lane, const rp__job *job, uintptr_t maker)
{
    rp__lane_grow_spot spot;
    int r;

    do {
        if (!grow_look(lane, job, maker, &spot))
            return false;
    } while ((r = grow_claim(&spot, job)) < 0);
    return r == 1;
}

bool rp__lane_grow_look(rp__lane *lane, const rp__job *job, rp__lane_grow_spot *spot)
{
    int p = rp__producer_index();
    bool found;

    rp__tsan_ignore_begin();
    found = p >= 0 && growable(job) && grow_look(lane, job, (uintptr_t)p + 1, spot);
    rp__tsan_ignore_end();
    return found;
}

int rp__lane_grow_claim(const rp__lane_grow_spot *spot, const rp__job *job)
{
    int r;

    rp__tsan_ignore_begin();
    r = grow_claim(spot, job);
    rp__tsan_ignore_end();
    return r;
}

int rp__lane_push_mp(rp__lane *lane, const rp__job *job, bool grow)
{
    rp__lane_rec *rec;
    rp__job grows;
    int64_t stamp = 0;
    int p = -1;

    if (grow && growable(job) && (p = rp__producer_index()) >= 0) {
        bool grew;

        rp__tsan_ignore_begin();
        grew = try_grow(lane, job, (uintptr_t)p + 1);
        rp__tsan_ignore_end();
        if (grew)
            return 0;
        /* A record that grows: a sample's stamp goes in its last slot. */
        stamp = job->enq_ns;
        grows = *job;
        grows.flags = RP__JOB_GROWS;
        grows.enq_ns = 0;
        job = &grows;
    }
    if (get_recs(lane, &rec, 1, p >= 0) == 0)
        return RP_ENOMEM;
    fill(rec, job);
    rp__tsan_ignore_begin();
    if (p >= 0)
        grow_holes(rec, stamp);
    rec->fifo.value = NULL; /* no chain: no hint */
    new_life(rec, NULL,
             p >= 0 ? GROW_TAG((uintptr_t)p + 1) | (stamp ? GROW_SAMPLE_AT(1) : 0) : 0);
    enqueue_chain(&lane->fifo, &rec->fifo, &rec->fifo);
    rp__tsan_ignore_end();
    return 0;
}

/*
 * ck_fifo_mpmc_enqueue() of a chain first ... last that is linked already:
 * the same loads, fences and CASes; only the last CAS forwards the tail to
 * the chain's end.  If another thread forwards it first, it goes one node
 * at a time along the chain's links, as it would over any lagging tail.
 * Runs inside an ignore region.
 */
static void enqueue_chain(ck_fifo_mpmc_t *fifo, ck_fifo_mpmc_entry_t *first,
                          ck_fifo_mpmc_entry_t *last)
{
    struct ck_fifo_mpmc_pointer tail, next, update;

    ck_pr_fence_store_atomic();
    for (;;) {
        tail = load_tagged(&fifo->tail);
        next = load_tagged(&tail.pointer->next);
        if (ck_pr_load_ptr(&fifo->tail.generation) != tail.generation)
            continue;
        if (next.pointer != NULL) {
            update.pointer = next.pointer;
            update.generation = tail.generation + 1;
            ck_pr_cas_ptr_2(&fifo->tail, &tail, &update);
        } else {
            update.pointer = first;
            update.generation = next.generation + 1;
            if (ck_pr_cas_ptr_2(&tail.pointer->next, &next, &update))
                break;
        }
    }
    ck_pr_fence_atomic();
    update.pointer = last;
    update.generation = tail.generation + 1;
    ck_pr_cas_ptr_2(&fifo->tail, &tail, &update);
}

/* Whether a job can be part of a bulk: a batch job with nothing but its
 * function, argument and sequence, and a sample's stamp (a bulk record has
 * no room for a reply or a traced job's submitter). */
static bool bulkable(const rp__job *job)
{
    return (job->flags & RP__JOB_BATCH) && !job->reply.ops && !job->reply.deadline_ns &&
           !job->submit_tid && !job->enq_ns == !(job->flags & RP__JOB_SAMPLED);
}

/* A sampled job's stamp, else 0. */
static int64_t stamp_of(const rp__job *job)
{
    return (job->flags & RP__JOB_SAMPLED) ? job->enq_ns : 0;
}

/* Whether job may join the bulk that begins at first (bulkable), n jobs
 * so far, whose sampled jobs carry stamp (0: none yet).  Jobs of a bulk
 * differ in argument, sequence and sampling only, and its sampled jobs
 * share one stamp (a batch call reads the clock once). */
static bool joins_bulk(const rp__job *first, size_t n, int64_t stamp, const rp__job *job)
{
    int64_t s = stamp_of(job);

    return bulkable(job) && job->fn == first->fn &&
           ((job->flags ^ first->flags) & ~RP__JOB_SAMPLED) == 0 &&
           atomic_load_explicit(&job->seq, memory_order_relaxed) ==
               atomic_load_explicit(&first->seq, memory_order_relaxed) + n &&
           (!stamp || !s || s == stamp) &&
           n + 1 <= (stamp || s ? RP__LANE_BULK - 1 : RP__LANE_BULK);
}

/* jobs[0..n) into one record: a plain record for one job, else a bulk. */
static void fill_bulk(rp__lane_rec *rec, const rp__job *jobs, size_t n)
{
    uint32_t samples = 0;
    int64_t stamp = 0;

    if (n == 1) {
        fill(rec, &jobs[0]);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].flags & RP__JOB_SAMPLED) {
            samples |= 1u << i;
            stamp = jobs[i].enq_ns;
        }
        if (i)
            rec->more[i - 1] = jobs[i].arg;
    }
    if (samples)
        rec->stamp = stamp;
    rec->fn = jobs[0].fn;
    rec->arg = jobs[0].arg;
    rec->flags = (jobs[0].flags & ~(RP__JOB_COLD | RP__JOB_SAMPLED)) | RP__JOB_BULK |
                 samples << RP__BULK_SAMPLE_SHIFT | (uint32_t)n << RP__BULK_SHIFT;
    rec->submit_tid = 0;
    atomic_store_explicit(&rec->seq, atomic_load_explicit(&jobs[0].seq, memory_order_relaxed),
                          memory_order_relaxed);
    rp__tsan_release(rec);
}

/* Link recs[0..n) into a chain, as ck_fifo_mpmc_enqueue() prepares one
 * entry, each with its prefetch hint, and append it with one CAS. */
static void link_chain(rp__lane *lane, rp__lane_rec *const *recs, size_t n)
{
    rp__tsan_ignore_begin();
    for (size_t i = 0; i < n; i++) {
        recs[i]->fifo.value = i + RP__LANE_AHEAD < n ? recs[i + RP__LANE_AHEAD] : NULL;
        new_life(recs[i], i + 1 < n ? &recs[i + 1]->fifo : NULL, 0);
    }
    enqueue_chain(&lane->fifo, &recs[0]->fifo, &recs[n - 1]->fifo);
    rp__tsan_ignore_end();
}

size_t rp__lane_push_n(rp__lane *lane, const rp__job *jobs, size_t n, bool bulk)
{
    rp__lane_rec *recs[RP__LANE_CHAIN_MAX];
    size_t first[RP__LANE_CHAIN_MAX + 1], got, nrec = 0, start = 0;
    int64_t stamp = 0; /* the current record's sampled jobs' */
    bool open = false; /* whether the current record may grow */

    if (n > RP__LANE_CHAIN_MAX)
        n = RP__LANE_CHAIN_MAX;
    /* The records' first jobs: jobs[first[i]..first[i+1]) go into record
     * i (one job each unless bulk); jobs[start] begins the current one. */
    for (size_t i = 0; i < n; i++) {
        if (open && joins_bulk(&jobs[start], i - start, stamp, &jobs[i])) {
            if (!stamp)
                stamp = stamp_of(&jobs[i]);
            continue;
        }
        first[nrec++] = start = i;
        stamp = stamp_of(&jobs[i]);
        open = bulk && bulkable(&jobs[i]);
    }
    first[nrec] = n;
    /* All records first, then the writes: a get's locked instruction
     * would wait for the previous record's stores (cache misses) to
     * drain. */
    if ((got = get_recs(lane, recs, nrec, false)) == 0)
        return 0;
    for (size_t i = 0; i < got; i++)
        fill_bulk(recs[i], &jobs[first[i]], first[i + 1] - first[i]);
    link_chain(lane, recs, got);
    return first[got];
}

/* Jobs args[0..n) of one function, sequence numbers seq, seq + 1, ...,
 * into one record: what new_job(), stamp() and fill_bulk() make of the
 * same jobs, without building them first.  samples: bit i when job i is
 * sampled, with stamp. */
static void fill_args(rp__lane_rec *rec, rp_job_fn fn, void *const *args, unsigned n,
                      uint64_t seq, uint32_t samples, int64_t stamp)
{
    if (n == 1) {
        rp__job job = {.fn = fn, .arg = args[0], .flags = RP__JOB_BATCH};

        if (samples) {
            job.flags |= RP__JOB_SAMPLED;
            job.enq_ns = stamp;
        }
        atomic_store_explicit(&job.seq, seq, memory_order_relaxed);
        fill(rec, &job);
        return;
    }
    for (unsigned i = 1; i < n; i++)
        rec->more[i - 1] = args[i];
    if (samples)
        rec->stamp = stamp;
    rec->fn = fn;
    rec->arg = args[0];
    rec->flags = RP__JOB_BATCH | RP__JOB_BULK | samples << RP__BULK_SAMPLE_SHIFT |
                 (uint32_t)n << RP__BULK_SHIFT;
    rec->submit_tid = 0;
    atomic_store_explicit(&rec->seq, seq, memory_order_relaxed);
    rp__tsan_release(rec);
}

size_t rp__lane_push_args(rp__lane *lane, rp_job_fn fn, void *const *args, size_t n,
                          uint64_t seq, uint64_t sampled, int64_t stamp)
{
    rp__lane_rec *recs[RP__LANE_CHAIN_MAX];
    size_t first[RP__LANE_CHAIN_MAX + 1], got, nrec = 0, start = 0;
    bool has = false; /* the current record holds a sampled job */

    if (n > RP__LANE_CHAIN_MAX)
        n = RP__LANE_CHAIN_MAX;
    /* joins_bulk()'s rule: up to RP__LANE_BULK jobs a record, one fewer
     * once a sampled job is in it (its stamp takes the last slot). */
    for (size_t i = 0; i < n; i++) {
        bool s = (sampled >> i) & 1u;

        if (i && i - start < (has || s ? RP__LANE_BULK - 1 : RP__LANE_BULK)) {
            has = has || s;
            continue;
        }
        first[nrec++] = start = i;
        has = s;
    }
    first[nrec] = n;
    /* All records first, then the writes (as rp__lane_push_n). */
    if ((got = get_recs(lane, recs, nrec, false)) == 0)
        return 0;
    for (size_t i = 0; i < got; i++) {
        size_t f = first[i], k = first[i + 1] - f;

        fill_args(recs[i], fn, args + f, (unsigned)k, seq + f,
                  (uint32_t)((sampled >> f) & ((1u << k) - 1)), stamp);
    }
    link_chain(lane, recs, got);
    return first[got];
}

/* How many jobs a record carries: a racy read before the commit (see the
 * top of the file), so a recycled record's garbage is bounded here. */
static unsigned jobs_in(uint32_t flags)
{
    unsigned n;

    if (!(flags & RP__JOB_BULK))
        return 1;
    n = RP__BULK_COUNT(flags);
    return n < 2 ? 2 : n > RP__LANE_BULK ? RP__LANE_BULK : n;
}

/* The jobs of a bulk record into out[0..n): the first is already there
 * (copy_out), the others differ in argument, sequence and sampling. */
static void copy_bulk(rp__job *out, const rp__lane_rec *rec, unsigned n)
{
    uint64_t seq = atomic_load_explicit(&out[0].seq, memory_order_relaxed);
    uint32_t samples = RP__BULK_SAMPLES(out[0].flags);
    uint32_t flags = out[0].flags & ~RP__BULK_FLAGS;
    int64_t stamp = samples ? rec->stamp : 0;

    for (unsigned i = 0; i < n; i++) {
        bool sampled = samples & (1u << i);

        if (i) {
            out[i] = (rp__job){.fn = out[0].fn, .arg = rec->more[i - 1]};
            atomic_store_explicit(&out[i].seq, seq + i, memory_order_relaxed);
        }
        out[i].flags = sampled ? flags | RP__JOB_SAMPLED : flags;
        out[i].enq_ns = sampled ? stamp : 0;
    }
}

/* The job a record carries, by value (a racy read before the commit; see
 * the top of the file): the second line only when the job is cold.  A
 * bulk's first job only (see copy_bulk). */
static void copy_out(rp__job *out, const rp__lane_rec *rec)
{
    out->fn = rec->fn;
    out->arg = rec->arg;
    out->flags = rec->flags;
    out->submit_tid = rec->submit_tid;
    atomic_store_explicit(&out->seq, atomic_load_explicit(&rec->seq, memory_order_relaxed),
                          memory_order_relaxed);
    if (RP_UNLIKELY(out->flags & RP__JOB_COLD)) {
        out->reply = rec->reply;
        out->enq_ns = rec->enq_ns;
    } else {
        out->reply = (rp__reply){0};
        out->enq_ns = 0;
    }
}

/* A growing record's jobs, final from here on: sealed by us when nothing
 * follows it and nobody sealed it yet, else as its link or seal left
 * it; *sample: the sampled job's index + 1, or 0.  The generation read
 * again after the pointer tells a consistent pair (every change raises
 * it).  Bounded: a record grows at most RP__LANE_BULK - 1 times.  Inside
 * dequeue_run's ignore region. */
static unsigned grown_jobs(rp__lane_rec *rec, unsigned *sample)
{
    struct ck_fifo_mpmc_pointer next, sealed;
    uintptr_t g;
    unsigned c;

    for (;;) {
        next = load_tagged(&rec->fifo.next);
        ck_pr_fence_load();
        if (ck_pr_load_ptr(&rec->fifo.next.generation) != next.generation)
            continue;
        g = (uintptr_t)next.generation;
        if (next.pointer || (g & GROW_SEALED))
            break;
        sealed.pointer = NULL;
        sealed.generation = (char *)(g | GROW_SEALED);
        if (ck_pr_cas_ptr_2(&rec->fifo.next, &next, &sealed))
            break;
    }
    /* The arguments after the count that covers them. */
    ck_pr_fence_atomic_load();
    ck_pr_fence_load();
    c = GROW_JOBS(g);
    c = c < 1 ? 1 : c > grow_cap(g) ? grow_cap(g) : c;
    *sample = GROW_SAMPLE(g) <= c ? GROW_SAMPLE(g) : 0;
    return c;
}

/* The jobs of a growing record into out[0..n): the first is already there
 * (copy_out), the others differ in argument and sequence; the one at
 * sample - 1 (none when sample is 0) is sampled, with the record's stamp. */
static void copy_grown(rp__job *out, const rp__lane_rec *rec, unsigned n, unsigned sample)
{
    uint64_t seq = atomic_load_explicit(&out[0].seq, memory_order_relaxed);

    out[0].flags &= ~RP__JOB_GROWS;
    for (unsigned i = 1; i < n; i++) {
        out[i] = (rp__job){.fn = out[0].fn, .arg = ck_pr_load_ptr(&rec->more[i - 1]),
                           .flags = out[0].flags};
        atomic_store_explicit(&out[i].seq, seq + i, memory_order_relaxed);
    }
    if (sample) {
        out[sample - 1].flags |= RP__JOB_SAMPLED;
        out[sample - 1].enq_ns =
            (int64_t)(ck_pr_load_64((const uint64_t *)&rec->stamp) & ~GROW_STAMP_BIT);
    }
}

/* How many jobs rec carries (flags: its flags, read racily), sealing it
 * when it grows; *sample as grown_jobs() says (0 for other records). */
static unsigned jobs_of(rp__lane_rec *rec, uint32_t flags, unsigned *sample)
{
    *sample = 0;
    return (flags & RP__JOB_GROWS) ? grown_jobs(rec, sample) : jobs_in(flags);
}

/* A record's other jobs after copy_out() put its first in out[0]. */
static void copy_rest(rp__job *out, const rp__lane_rec *rec, unsigned n, unsigned sample)
{
    if (out[0].flags & RP__JOB_GROWS)
        copy_grown(out, rec, n, sample);
    else if (n > 1)
        copy_bulk(out, rec, n);
}

/* The chain's prefetch hint a record carries (fifo.value), or NULL. */
static rp__lane_rec *ahead_of(rp__lane_rec *rec)
{
    return ck_pr_load_ptr(&rec->fifo.value);
}

/*
 * Whether a thief may end its run at rec without reading the tail ("The
 * tail line", at the top): a record follows rec, linked by a push at the
 * tail in rec's current life - ck's link CAS counts it in bits 0-2 of
 * rec's next generation (GROW_LINKS), which a new life clears.  The push
 * that linked it found the tail at rec (ck links only after the tail),
 * and the tail only moves forward, so a head moved to rec is not past the
 * tail.  A chain (rp__lane_push_n: a batch, or the tells a thief gives
 * back, rp__mailbox_requeue) links its records to each other before it
 * links the chain, with no count: until the tail swings the tail lags
 * behind the whole chain, so those links prove nothing.  (Until the
 * sixteenth session this asked "not RP__JOB_BATCH" instead, and a
 * requeued chain of tells let a thief's head pass the tail: test_lane,
 * "a thief never passes a tail that lags behind a chain of tells".)
 * Racy reads, like the copy's: kept only if the head CAS succeeds (no
 * dequeue meanwhile, so rec was in this life throughout).
 */
static bool ends_before_tail(rp__lane_rec *rec)
{
    struct ck_fifo_mpmc_pointer next = load_tagged(&rec->fifo.next);

    return ((uintptr_t)next.generation & GROW_LINKS) != 0 && next.pointer != NULL;
}

/* Whether the job after prev may join prev's run (owner runs). */
static bool continues_run(const rp__job *prev, const rp__job *next)
{
    return (prev->flags & next->flags & RP__JOB_BATCH) &&
           atomic_load_explicit(&next->seq, memory_order_relaxed) ==
               atomic_load_explicit(&prev->seq, memory_order_relaxed) + 1;
}

/*
 * ck_fifo_mpmc_dequeue() with the jobs copied out before the commit (see
 * the top of the file), extended to take a run of up to max jobs with one
 * head CAS: the same loads, fences and CASes on ck's structure.
 *
 * Runs.  After the first node, the walk follows next links - while the
 * jobs continue a batch run (continues_run) for the owner, else while
 * fewer than max jobs were taken - but never past the tail read before the
 * walk: a head moved beyond the tail would leave the tail on a freed
 * record, and as the tail only moves forward, stopping at the snapshot is
 * safe.  A thief whose first record ends_before_tail() reads the tail
 * only if its run gets to a record that does not (a batch's, or the
 * lane's last).  Records are taken whole: the first always (out holds a
 * bulk), a later one only when out still has room for all its jobs (k +
 * its jobs <= cap).  If the head CAS succeeds the head did not move during the
 * walk, so every node walked was still queued, its links and job intact.
 * The old stub and every node of the run but the last become garbage
 * (garbage[0..*nrecs)); the last is the new stub.  Returns k, the jobs
 * taken, 0 when the lane is empty.
 */
static unsigned dequeue_run(rp__lane *lane, rp__job *out, unsigned max, unsigned cap,
                            bool owner, rp__lane_rec **garbage, unsigned *nrecs)
{
    ck_fifo_mpmc_t *fifo = &lane->fifo;
    struct ck_fifo_mpmc_pointer head, tail, next, update;
    rp__lane_rec *rec, *ahead;
    unsigned k, r, sample;
    bool blind; /* a thief that did not read the tail */

    rp__tsan_ignore_begin();
    for (;;) {
        head = load_tagged(&fifo->head);
        blind = false;
        if (owner && lane->seen_tail && head.generation == lane->seen_gen) {
            /* "The tail line": strictly after this head; the generation
             * is only used when the head is the tail, never here. */
            tail.pointer = lane->seen_tail;
            tail.generation = NULL;
            next = load_tagged(&head.pointer->next);
        } else if (!owner && (next = load_tagged(&head.pointer->next)).pointer != NULL &&
                   ends_before_tail(rec_of(next.pointer))) {
            blind = true;
            tail.pointer = NULL;
            tail.generation = NULL;
        } else {
            /* ck's order: the tail, then the head's next. */
            tail = load_tagged(&fifo->tail);
            next = load_tagged(&head.pointer->next);
        }

        update.pointer = next.pointer;
        if (!blind && head.pointer == tail.pointer) {
            /* The head always points at a stub: nothing follows it, the
             * lane is empty; else the tail lags: forward it. */
            if (next.pointer == NULL) {
                rp__tsan_ignore_end();
                return 0;
            }
            update.generation = tail.generation + 1;
            ck_pr_cas_ptr_2(&fifo->tail, &tail, &update);
            continue;
        }
        /* The head snapshot may have been reused: do not follow NULL. */
        if (next.pointer == NULL)
            continue;
        /* Copy before the commit; kept only if the head did not move. */
        garbage[0] = rec_of(head.pointer);
        rec = rec_of(next.pointer);
        ck_pr_fence_load();
        copy_out(&out[0], rec);
        /* The first record is taken whole, whatever max says. */
        k = jobs_of(rec, out[0].flags, &sample);
        copy_rest(out, rec, k, sample);
        ahead = ahead_of(rec);
        for (r = 1; k < max && &rec->fifo != tail.pointer; r++) {
            ck_fifo_mpmc_entry_t *n = ck_pr_load_ptr(&rec->fifo.next.pointer);
            rp__lane_rec *nrec;
            unsigned c;

            /* Not a batch job: stop before touching the next record (for
             * a tell that would be a cache miss for nothing). */
            if (!n || (owner && !(out[k - 1].flags & RP__JOB_BATCH)))
                break;
            nrec = rec_of(n);
            ck_pr_fence_load();
            /* A batch record or the lane's last: only the tail says
             * whether the run may take it; from here on as with the tail
             * read first (a later snapshot is as safe a bound). */
            if (blind && !ends_before_tail(nrec)) {
                blind = false;
                tail = load_tagged(&fifo->tail);
                if (&rec->fifo == tail.pointer)
                    break;
            }
            /* Whole records only: one that does not fit stays queued. */
            if (k + (c = jobs_of(nrec, ck_pr_load_32(&nrec->flags), &sample)) > cap)
                break;
            copy_out(&out[k], nrec);
            copy_rest(&out[k], nrec, c, sample);
            if (owner && !continues_run(&out[k - 1], &out[k]))
                break;
            /* Later records of the chain: their lines on their way (both:
             * a bulk's arguments fill the second). */
            if (ahead) {
                __builtin_prefetch(ahead);
                __builtin_prefetch((const char *)ahead + RP_CACHELINE);
            }
            ahead = ahead_of(nrec);
            garbage[r] = rec;
            rec = nrec;
            k += c;
        }
        ck_pr_fence_load_atomic();
        update.pointer = &rec->fifo;
        update.generation = head.generation + 1;
        if (ck_pr_cas_ptr_2(&fifo->head, &head, &update))
            break;
    }
    if (owner) {
        /* The walk stopped at the tail it used or before: a new head
         * short of it leaves that tail strictly ahead ("The tail line"). */
        lane->seen_gen = update.generation;
        lane->seen_tail = update.pointer != tail.pointer ? tail.pointer : NULL;
    }
    /* The next dequeue copies the job after the run: start its miss now
     * (rec is the stub now; type-stable, so the read is safe), and in a
     * chain the one RP__LANE_AHEAD places on ("Prefetching", at the top). */
    next.pointer = ck_pr_load_ptr(&rec->fifo.next.pointer);
    if (next.pointer)
        prefetch_rec(rec_of(next.pointer));
    if (ahead)
        prefetch_rec(ahead);
    rp__tsan_ignore_end();
    /* Pairs with the release in push: the producers' writes of the jobs
     * copied (the run's records: garbage[1..k) and the new stub) happen
     * before our use of the copies.  The old stub's writes (push, the
     * dequeue that copied it out and ours are ordered through ck's head
     * CAS, which TSan does not see) happen before the record is reused. */
    rp__tsan_acquire(rec);
    for (unsigned i = 0; i < r; i++)
        rp__tsan_acquire(garbage[i]);
    *nrecs = r;
    return k;
}

bool rp__lane_pop_mc(rp__lane *lane, rp__job *out)
{
    rp__job got[RP__LANE_BULK]; /* a record is taken whole */
    rp__lane_rec *garbage;
    unsigned nrecs, k;

    if (!(k = dequeue_run(lane, got, 1, 1, false, &garbage, &nrecs)))
        return false;
    rp__freelist_put(&lane->recs, garbage);
    /* No bulk here (see lane.h): its other jobs would have nowhere to go.
     * A library bug, never a silent loss. */
    if (RP_UNLIKELY(k != 1)) {
        fprintf(stderr, "routepool: rp__lane_pop_mc met a bulk of %u jobs\n", k);
        abort();
    }
    *out = got[0];
    return true;
}

/* A freed record into the magazine *m (taking an empty one when *m is
 * NULL); a magazine that fills goes to the producers.  False when no
 * magazine was left (the record is not placed). */
static bool mag_add(rp__lane *lane, rp__lane_mag **m, rp__lane_rec *rec)
{
    if (!*m && !(*m = mag_pop(&lane->empty)))
        return false;
    rp__tsan_release(rec); /* pairs with the getter's acquire */
    (*m)->recs[(*m)->n++] = rec;
    if ((*m)->n == RP__LANE_MAG) {
        mag_push(&lane->full, *m);
        *m = NULL;
    }
    return true;
}

/* A thief: hand the records of one steal to producers (see the top). */
static void give_back(rp__lane *lane, rp__lane_rec **recs, unsigned k)
{
    rp__lane_mag *m = atomic_exchange_explicit(&lane->returned, NULL, memory_order_acq_rel);
    unsigned i = 0;

    while (i < k && mag_add(lane, &m, recs[i]))
        i++;
    for (; i < k; i++) /* no magazine left */
        rp__freelist_put(&lane->recs, recs[i]);
    if (m && (m = atomic_exchange_explicit(&lane->returned, m, memory_order_acq_rel)) != NULL)
        mag_push(&lane->full, m); /* another thief put one back meanwhile */
}

/* The owner: a freed record into the magazine it fills. */
static void owner_free(rp__lane *lane, rp__lane_rec *garbage)
{
    if (!mag_add(lane, &lane->filling, garbage))
        rp__freelist_put(&lane->recs, garbage); /* no magazine */
}

/* Up to max jobs (whole records, at most cap in out) with one head CAS:
 * the owner takes a batch run and keeps the records it frees; a thief
 * takes the oldest jobs whatever they are and gives their records back. */
static unsigned take(rp__lane *lane, rp__job *out, unsigned max, unsigned cap, bool owner)
{
    rp__lane_rec *garbage[RP__LANE_MAG];
    unsigned got, nrecs;

    if (max > RP__LANE_MAG)
        max = RP__LANE_MAG;
    if (max == 0 || (got = dequeue_run(lane, out, max, cap, owner, garbage, &nrecs)) == 0)
        return 0;
    if (!owner) {
        give_back(lane, garbage, nrecs);
        return got;
    }
    for (unsigned i = 0; i < nrecs; i++)
        owner_free(lane, garbage[i]);
    return got;
}

unsigned rp__lane_steal(rp__lane *lane, rp__job *out, unsigned max)
{
    return take(lane, out, max, max, false);
}

bool rp__lane_pop_owner(rp__lane *lane, rp__job *out)
{
    RP__ASSERT_OWNER(lane);
    return take(lane, out, 1, 1, true) == 1;
}

unsigned rp__lane_pop_owner_run(rp__lane *lane, rp__job *out, unsigned max)
{
    RP__ASSERT_OWNER(lane);
    return take(lane, out, max, max + RP__LANE_BULK - 1, true);
}

void rp__lane_flush(rp__lane *lane)
{
    RP__ASSERT_OWNER(lane);
    if (!lane->filling || lane->filling->n == 0)
        return;
    mag_push(&lane->full, lane->filling);
    lane->filling = NULL;
}

uint64_t rp__lane_peek_seq(rp__lane *lane)
{
    /* Records are type-stable, so these racy reads touch valid memory;
     * the value is only a hint, like any peek at a shared queue. */
    ck_fifo_mpmc_entry_t *head = ck_pr_load_ptr(&lane->fifo.head.pointer);
    ck_fifo_mpmc_entry_t *first = ck_pr_load_ptr(&head->next.pointer);
    rp__lane_rec *rec;

    if (!first)
        return UINT64_MAX;
    rec = rec_of(first);
    /* The record was published by rp__lane_push_mp (release); a stale,
     * recycled record is only ever read through its atomic seq. */
    rp__tsan_acquire(rec);
    return atomic_load_explicit(&rec->seq, memory_order_relaxed);
}

int rp__lane_empty(rp__lane *lane)
{
    ck_fifo_mpmc_entry_t *head = ck_pr_load_ptr(&lane->fifo.head.pointer);

    return ck_pr_load_ptr(&head->next.pointer) == NULL;
}

unsigned rp__lane_young(rp__lane *lane)
{
    /* Racy reads of type-stable records, like rp__lane_empty's. */
    ck_fifo_mpmc_entry_t *head = ck_pr_load_ptr(&lane->fifo.head.pointer);
    ck_fifo_mpmc_entry_t *first = ck_pr_load_ptr(&head->next.pointer);

    if (!first || !(ck_pr_load_32(&rec_of(first)->flags) & RP__JOB_GROWS))
        return 0;
    return open_jobs(load_tagged(&first->next));
}

/* ---- Trimming (see the top) ---- */

/* What a trim took out of reach: free records and magazines. */
typedef struct detached {
    void **recs;
    size_t n, cap;
    rp__lane_mag **mags;
    size_t nmags, capmags;
} detached;

/* A magazine's records into d (those beyond d's room back to the
 * freelist), and the magazine itself (back to empty when d is full). */
static void hold_mag(rp__lane *lane, detached *d, rp__lane_mag *m)
{
    for (unsigned i = 0; i < m->n; i++) {
        rp__tsan_acquire(m->recs[i]); /* pairs with mag_add's release */
        if (d->n < d->cap)
            d->recs[d->n++] = m->recs[i];
        else
            rp__freelist_put(&lane->recs, m->recs[i]);
    }
    m->n = 0;
    m->doomed = false;
    if (d->nmags < d->capmags)
        d->mags[d->nmags++] = m;
    else
        mag_push(&lane->empty, m);
}

/* The magazines of the producer indexes no thread holds (their threads
 * exited): claimed for the moment, so no thread takes the index meanwhile. */
static void detach_idle_own(rp__lane *lane, detached *d)
{
    uint32_t idle = rp__producer_claim_idle();

    for (int p = 0; p < RP__PRODUCERS; p++) {
        if ((idle & (1u << p)) && lane->own[p]) {
            hold_mag(lane, d, lane->own[p]);
            lane->own[p] = NULL;
        }
    }
    rp__producer_unclaim(idle);
}

/* Take every free record and magazine out of the lane's live state (all
 * but the magazines live producer threads hold in own[]). */
static void detach(rp__lane *lane, detached *d)
{
    rp__lane_mag *m;
    void *rec;

    if (lane->filling) {
        hold_mag(lane, d, lane->filling);
        lane->filling = NULL;
    }
    if ((m = atomic_exchange_explicit(&lane->taking, NULL, memory_order_acq_rel)))
        hold_mag(lane, d, m);
    if ((m = atomic_exchange_explicit(&lane->returned, NULL, memory_order_acq_rel)))
        hold_mag(lane, d, m);
    while ((m = mag_pop(&lane->full)) != NULL)
        hold_mag(lane, d, m);
    while ((m = mag_pop(&lane->empty)) != NULL)
        hold_mag(lane, d, m);
    while (d->n < d->cap && (rec = rp__freelist_pop(&lane->recs)) != NULL)
        d->recs[d->n++] = rec;
    detach_idle_own(lane, d);
}

/* Free the doomed magazines: off the all list, then to the allocator. */
static void free_doomed(rp__lane *lane)
{
    ck_stack_entry_t *e;

    rp__tsan_ignore_begin();
    e = ck_stack_batch_pop_upmc(&lane->all);
    rp__tsan_ignore_end();
    while (e) {
        rp__lane_mag *m = (rp__lane_mag *)((char *)e - offsetof(rp__lane_mag, all));
        rp__tsan_acquire(e); /* pairs with make_mags' release */
        e = e->next;
        if (m->doomed) {
            rp__arena_free(lane->arena, m, sizeof *m, RP_CACHELINE);
            continue;
        }
        rp__tsan_ignore_begin();
        ck_stack_push_upmc(&lane->all, &m->all);
        rp__tsan_ignore_end();
    }
}

/* After the slabs: doom the held magazines the remaining records do not
 * need (make_mags' count), return the others. */
static void settle_mags(rp__lane *lane, detached *d, bool quiescent)
{
    size_t want = rp__freelist_records(&lane->recs) / RP__LANE_MAG + 3;
    size_t doomed = 0;

    for (size_t i = 0; i < d->nmags; i++) {
        size_t have = atomic_load_explicit(&lane->mags, memory_order_relaxed);

        if (quiescent && have > want) {
            d->mags[i]->doomed = true;
            atomic_fetch_sub_explicit(&lane->mags, 1, memory_order_relaxed);
            doomed++;
            continue;
        }
        mag_push(&lane->empty, d->mags[i]);
    }
    if (doomed)
        free_doomed(lane);
}

size_t rp__lane_records(const rp__lane *lane)
{
    return rp__freelist_records(&lane->recs);
}

bool rp__lane_trim_due(const rp__lane *lane, size_t keep)
{
    size_t have = rp__freelist_records(&lane->recs);

    return have > keep + RECS_PER_SLAB &&
           (have != lane->trimmed_at || rp__producer_exits() != lane->trimmed_exits);
}

long rp__lane_trim(rp__lane *lane, size_t keep, bool (*quiescent)(void *), void *ctx)
{
    detached d = {0};
    size_t records = rp__freelist_records(&lane->recs);
    unsigned long exits = rp__producer_exits(); /* before the detach claims */
    long freed = -1;

    d.cap = records + 4 * RECS_PER_SLAB;
    d.capmags = atomic_load_explicit(&lane->mags, memory_order_relaxed) + 8;
    /* In the pool's arena, which the trim's caller purges (a malloc()
     * would leave these pages in the process's heap). */
    d.recs = rp__arena_alloc(lane->arena, d.cap * sizeof *d.recs, RP_CACHELINE);
    d.mags = rp__arena_alloc(lane->arena, d.capmags * sizeof *d.mags, RP_CACHELINE);
    if (!d.recs || !d.mags) {
        rp__arena_free(lane->arena, d.recs, d.cap * sizeof *d.recs, RP_CACHELINE);
        rp__arena_free(lane->arena, d.mags, d.capmags * sizeof *d.mags, RP_CACHELINE);
        return -1;
    }
    detach(lane, &d);
    if (quiescent(ctx)) {
        freed = (long)rp__freelist_trim(&lane->recs, d.recs, d.n, keep);
        lane->trimmed_at = rp__freelist_records(&lane->recs);
        lane->trimmed_exits = exits;
    } else {
        for (size_t i = 0; i < d.n; i++)
            rp__freelist_put(&lane->recs, d.recs[i]);
    }
    settle_mags(lane, &d, freed >= 0);
    rp__arena_free(lane->arena, d.recs, d.cap * sizeof *d.recs, RP_CACHELINE);
    rp__arena_free(lane->arena, d.mags, d.capmags * sizeof *d.mags, RP_CACHELINE);
    return freed;
}
