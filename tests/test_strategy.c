/* SPDX-License-Identifier: MIT */
/*
 * tests/test_strategy.c - strategies as pure functions: rp_strategy_pick()
 * over foreign routees (whose depth the test sets) or over an idle pool's
 * routees (whose stopped flag the test sets).  No job runs here except
 * where noted, so every expected answer is exact.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common.h"

TestSuite(broadcast, .fini = rp_leak_check);
TestSuite(consistent_hash, .fini = rp_leak_check);
TestSuite(custom, .fini = rp_leak_check);
TestSuite(random, .fini = rp_leak_check);
TestSuite(round_robin, .fini = rp_leak_check);
TestSuite(smallest_mailbox, .fini = rp_leak_check);
TestSuite(strategy_names, .fini = rp_leak_check);
TestSuite(weighted, .fini = rp_leak_check);

#define NF 8

/* Foreign routees with settable depths; no threads behind them. */
typedef struct fset {
    fake_foreign f[NF];
    rp_routee *r[NF];
    size_t n;
} fset;

static void fset_init(fset *s, size_t n, bool with_depth)
{
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        s->f[i] = (fake_foreign){.id = (int)i};
        atomic_init(&s->f[i].sent, 0);
        cr_assert_eq(rp_routee_foreign_create(&s->r[i], fake_foreign_send,
                                              with_depth ? fake_foreign_depth
                                                         : NULL,
                                              &s->f[i]), 0);
    }
}

static void fset_destroy(fset *s)
{
    for (size_t i = 0; i < s->n; i++)
        rp_routee_foreign_destroy(s->r[i]);
}

/* Pick one routee for an unkeyed job with the given message index. */
static int pick1(const rp_strategy *s, rp_routee *const *r, size_t n,
                 uint64_t index)
{
    rp_route_state st = {.message_index = index};
    size_t out[NF + 1];
    const int k = rp_strategy_pick(s, &st, r, n, out);
    cr_assert_eq(k, 1, "index %llu: pick returned %d, want 1 choice",
                 (unsigned long long)index, k);
    cr_assert_lt(out[0], n);
    return (int)out[0];
}

static int pick_key(const rp_strategy *s, rp_routee *const *r, size_t n,
                    const void *key, size_t len, uint64_t index)
{
    rp_route_state st = {.message_index = index, .key = key, .key_len = len,
                         .key_hash = XXH3_64bits(key, len)};
    size_t out[NF + 1];
    const int k = rp_strategy_pick(s, &st, r, n, out);
    cr_assert_eq(k, 1, "keyed pick returned %d, want 1 choice", k);
    cr_assert(st.pinned, "keyed jobs are pinned");
    cr_assert_lt(out[0], n);
    return (int)out[0];
}

/* An idle pool, used only for its routees' stopped flags. */
static rp_pool *idle_pool(unsigned n, rp_routee **r)
{
    rp_pool *p = NULL;
    cr_assert_eq(make_pool(&p, "strat", n, 0, 0, rp_strategy_round_robin()),
                 0);
    for (unsigned i = 0; i < n; i++)
        r[i] = rp_pool_routee(p, i);
    return p;
}

/* ---- round-robin ---- */

Test(round_robin, three_routees_nine_jobs_three_each, .timeout = 10)
{
    fset s;
    fset_init(&s, 3, false);
    const rp_strategy rr = rp_strategy_round_robin();
    cr_assert_eq(rr.kind, RP_STRATEGY_ROUND_ROBIN);
    int count[3] = {0};
    for (uint64_t i = 0; i < 9; i++) {
        const int k = pick1(&rr, s.r, 3, i);
        cr_assert_eq(k, (int)(i % 3), "job %llu went to %d",
                     (unsigned long long)i, k);
        count[k]++;
    }
    for (int i = 0; i < 3; i++)
        cr_assert_eq(count[i], 3, "routee %d got %d", i, count[i]);
    fset_destroy(&s);
}

Test(round_robin, stopped_routee_is_skipped_by_the_next_live_one,
     .timeout = 10)
{
    rp_routee *r[3];
    rp_pool *p = idle_pool(3, r);
    const rp_strategy rr = rp_strategy_round_robin();
    cr_assert_eq(rp_routee_stop(r[1]), 0);
    cr_assert_eq(pick1(&rr, r, 3, 0), 0);
    cr_assert_eq(pick1(&rr, r, 3, 1), 2, "index 1 moves to the next live");
    cr_assert_eq(pick1(&rr, r, 3, 2), 2);
    cr_assert_eq(pick1(&rr, r, 3, 3), 0);
    rp_pool_destroy(p);
}

Test(round_robin, no_routees_means_no_choice, .timeout = 10)
{
    const rp_strategy rr = rp_strategy_round_robin();
    rp_route_state st = {.message_index = 5};
    size_t out[1];
    cr_assert_eq(rp_strategy_pick(&rr, &st, NULL, 0, out), 0);
}

/* ---- random ---- */

Test(random, fixed_seed_covers_all_routees, .timeout = 10)
{
    fset s;
    fset_init(&s, 4, false);
    const rp_strategy rnd = rp_strategy_random(42);
    cr_assert_eq(rnd.kind, RP_STRATEGY_RANDOM);
    cr_assert_eq(rnd.seed, 42u);
    int count[4] = {0};
    for (uint64_t i = 0; i < 400; i++)
        count[pick1(&rnd, s.r, 4, i)]++;
    /* Binomial(400, 1/4): mean 100, sd 8.7.  50 is almost 6 sd away; the
     * seed is fixed, so this is deterministic once it passes. */
    for (int i = 0; i < 4; i++)
        cr_assert_geq(count[i], 50, "routee %d chosen %d/400 times", i,
                      count[i]);
    fset_destroy(&s);
}

Test(random, same_seed_reproduces_the_same_sequence, .timeout = 10)
{
    fset s;
    fset_init(&s, 4, false);
    const rp_strategy a = rp_strategy_random(7);
    const rp_strategy b = rp_strategy_random(7);
    const rp_strategy c = rp_strategy_random(8);
    int seq_a[200], differ = 0;
    for (uint64_t i = 0; i < 200; i++)
        seq_a[i] = pick1(&a, s.r, 4, i);
    for (uint64_t i = 0; i < 200; i++) {
        cr_assert_eq(pick1(&b, s.r, 4, i), seq_a[i], "index %llu",
                     (unsigned long long)i);
        cr_assert_eq(pick1(&a, s.r, 4, i), seq_a[i], "repeat, index %llu",
                     (unsigned long long)i);
        differ += pick1(&c, s.r, 4, i) != seq_a[i];
    }
    /* Another seed agreeing on all 200 choices: probability 4^-200. */
    cr_assert_gt(differ, 0, "seeds 7 and 8 gave the same 200 choices");
    fset_destroy(&s);
}

Test(random, stopped_routee_is_never_chosen, .timeout = 10)
{
    rp_routee *r[4];
    rp_pool *p = idle_pool(4, r);
    const rp_strategy rnd = rp_strategy_random(99);
    cr_assert_eq(rp_routee_stop(r[2]), 0);
    int count[4] = {0};
    for (uint64_t i = 0; i < 400; i++)
        count[pick1(&rnd, r, 4, i)]++;
    cr_assert_eq(count[2], 0);
    cr_assert_eq(count[0] + count[1] + count[3], 400);
    cr_assert(count[0] > 0 && count[1] > 0 && count[3] > 0);
    rp_pool_destroy(p);
}

/* ---- broadcast ---- */

Test(broadcast, pick_returns_every_live_routee_pinned, .timeout = 10)
{
    rp_routee *r[4];
    rp_pool *p = idle_pool(4, r);
    const rp_strategy b = rp_strategy_broadcast();
    cr_assert_eq(b.kind, RP_STRATEGY_BROADCAST);
    rp_route_state st = {.message_index = 3};
    size_t out[4];
    cr_assert_eq(rp_strategy_pick(&b, &st, r, 4, out), 4);
    bool seen[4] = {false};
    for (int i = 0; i < 4; i++) {
        cr_assert_lt(out[i], 4u);
        cr_assert_not(seen[out[i]], "routee %zu listed twice", out[i]);
        seen[out[i]] = true;
    }
    cr_assert(st.pinned, "broadcast copies are pinned");

    cr_assert_eq(rp_routee_stop(r[2]), 0);
    st = (rp_route_state){.message_index = 4};
    cr_assert_eq(rp_strategy_pick(&b, &st, r, 4, out), 3);
    for (int i = 0; i < 3; i++)
        cr_assert_neq(out[i], 2u, "stopped routee listed");
    rp_pool_destroy(p);
}

/* ---- smallest mailbox (pure, foreign depths) ---- */

Test(smallest_mailbox, picks_the_shallowest_scanning_from_index_mod_n,
     .timeout = 10)
{
    fset s;
    fset_init(&s, 4, true);
    const rp_strategy sm = rp_strategy_smallest_mailbox();
    cr_assert_eq(sm.kind, RP_STRATEGY_SMALLEST_MAILBOX);
    const int64_t depth[4] = {5, 2, 3, 1};
    for (int i = 0; i < 4; i++)
        s.f[i].depth = depth[i];
    /* No zero: the whole ring is scanned and the strict minimum wins. */
    for (uint64_t i = 0; i < 8; i++)
        cr_assert_eq(pick1(&sm, s.r, 4, i), 3, "index %llu",
                     (unsigned long long)i);
    /* Two zeros: the first zero from the start wins. */
    s.f[1].depth = 0;
    s.f[3].depth = 0;
    cr_assert_eq(pick1(&sm, s.r, 4, 0), 1);
    cr_assert_eq(pick1(&sm, s.r, 4, 1), 1);
    cr_assert_eq(pick1(&sm, s.r, 4, 2), 3);
    cr_assert_eq(pick1(&sm, s.r, 4, 3), 3);
    /* Equal non-zero minima: strict comparison keeps the first from start. */
    s.f[0].depth = 2;
    s.f[1].depth = 4;
    s.f[2].depth = 2;
    s.f[3].depth = 4;
    cr_assert_eq(pick1(&sm, s.r, 4, 0), 0);
    cr_assert_eq(pick1(&sm, s.r, 4, 1), 2);
    cr_assert_eq(pick1(&sm, s.r, 4, 2), 2);
    cr_assert_eq(pick1(&sm, s.r, 4, 3), 0);
    fset_destroy(&s);
}

Test(smallest_mailbox, equal_depths_rotate_like_round_robin, .timeout = 10)
{
    fset s;
    fset_init(&s, 5, true);
    const rp_strategy sm = rp_strategy_smallest_mailbox();
    for (int64_t d = 0; d <= 3; d += 3) {
        for (int i = 0; i < 5; i++)
            s.f[i].depth = d;
        for (uint64_t i = 0; i < 15; i++)
            cr_assert_eq(pick1(&sm, s.r, 5, i), (int)(i % 5),
                         "depth %lld index %llu", (long long)d,
                         (unsigned long long)i);
    }
    fset_destroy(&s);
}

Test(smallest_mailbox, unreadable_depth_scores_zero, .timeout = 10)
{
    fset s;
    fset_init(&s, 3, true);
    const rp_strategy sm = rp_strategy_smallest_mailbox();
    s.f[0].depth = 4;
    s.f[1].depth = -1; /* the callback fails */
    s.f[2].depth = 2;
    for (uint64_t i = 0; i < 2; i++)
        cr_assert_eq(pick1(&sm, s.r, 3, i), 1);
    /* index 2 starts at routee 2 (depth 2), wraps to 0 (4), then 1 (0). */
    cr_assert_eq(pick1(&sm, s.r, 3, 2), 1);
    fset_destroy(&s);

    /* A foreign routee without a depth callback scores 0 as well. */
    fake_foreign nodepth = {.id = 9};
    fset t;
    fset_init(&t, 2, true);
    t.f[0].depth = 1;
    t.f[1].depth = 1;
    rp_routee *r[3] = {t.r[0], t.r[1], NULL};
    cr_assert_eq(rp_routee_foreign_create(&r[2], fake_foreign_send, NULL,
                                          &nodepth), 0);
    for (uint64_t i = 0; i < 3; i++)
        cr_assert_eq(pick1(&sm, r, 3, i), 2, "index %llu",
                     (unsigned long long)i);
    rp_routee_foreign_destroy(r[2]);
    fset_destroy(&t);
}

Test(smallest_mailbox, all_stopped_falls_back_to_start_routee, .timeout = 10)
{
    rp_routee *r[3];
    rp_pool *p = idle_pool(3, r);
    const rp_strategy sm = rp_strategy_smallest_mailbox();
    cr_assert_eq(rp_routee_stop(r[0]), 0);
    cr_assert_eq(pick1(&sm, r, 3, 0), 1, "stopped routee 0 is skipped");
    cr_assert_eq(pick1(&sm, r, 3, 3), 1);
    cr_assert_eq(rp_routee_stop(r[1]), 0);
    cr_assert_eq(rp_routee_stop(r[2]), 0);
    for (uint64_t i = 0; i < 6; i++)
        cr_assert_eq(pick1(&sm, r, 3, i), (int)(i % 3),
                     "all stopped: index %llu goes to its start",
                     (unsigned long long)i);
    rp_pool_destroy(p);
}

/* ---- consistent hashing ---- */

static void key_of(char *buf, size_t len, int i)
{
    snprintf(buf, len, "key-%d", i);
}

Test(consistent_hash, same_key_same_routee_and_even_spread, .timeout = 20)
{
    rp_routee *r[4];
    rp_pool *p = idle_pool(4, r);
    const rp_strategy ch = rp_strategy_consistent_hash(1234);
    cr_assert_eq(ch.kind, RP_STRATEGY_CONSISTENT_HASH);
    cr_assert_eq(ch.seed, 1234u);
    int count[4] = {0};
    char key[32];
    for (int i = 0; i < 4000; i++) {
        key_of(key, sizeof key, i);
        const int owner = pick_key(&ch, r, 4, key, strlen(key), (uint64_t)i);
        /* The message index must not matter for a keyed job. */
        cr_assert_eq(pick_key(&ch, r, 4, key, strlen(key), 777777), owner);
        count[owner]++;
    }
    for (int i = 0; i < 4; i++)
        cr_assert(count[i] >= 800 && count[i] <= 1200,
                  "routee %d owns %d of 4000 keys (want 800..1200)", i,
                  count[i]);
    rp_pool_destroy(p);
}

Test(consistent_hash, stopping_a_routee_moves_only_its_keys, .timeout = 20)
{
    rp_routee *r[4];
    rp_pool *p = idle_pool(4, r);
    const rp_strategy ch = rp_strategy_consistent_hash(5);
    int owner[4000];
    char key[32];
    for (int i = 0; i < 4000; i++) {
        key_of(key, sizeof key, i);
        owner[i] = pick_key(&ch, r, 4, key, strlen(key), 0);
    }
    cr_assert_eq(rp_routee_stop(r[1]), 0);
    int moved = 0;
    for (int i = 0; i < 4000; i++) {
        key_of(key, sizeof key, i);
        const int now = pick_key(&ch, r, 4, key, strlen(key), 0);
        cr_assert_neq(now, 1, "key %d still on the stopped routee", i);
        if (owner[i] != 1)
            cr_assert_eq(now, owner[i], "key %d moved from %d to %d though "
                         "its owner is live", i, owner[i], now);
        else
            moved++;
    }
    cr_assert_gt(moved, 0);
    rp_pool_destroy(p);
}

Test(consistent_hash, unkeyed_job_is_refused, .timeout = 10)
{
    fset s;
    fset_init(&s, 2, false);
    const rp_strategy ch = rp_strategy_consistent_hash(0);
    rp_route_state st = {.message_index = 1};
    size_t out[2];
    cr_assert_eq(rp_strategy_pick(&ch, &st, s.r, 2, out), RP_EINVAL);
    fset_destroy(&s);
}

Test(consistent_hash, different_seeds_give_different_owners, .timeout = 20)
{
    fset s;
    fset_init(&s, 4, false);
    const rp_strategy a = rp_strategy_consistent_hash(1);
    const rp_strategy b = rp_strategy_consistent_hash(2);
    int differ = 0;
    char key[32];
    for (int i = 0; i < 400; i++) {
        key_of(key, sizeof key, i);
        differ += pick_key(&a, s.r, 4, key, strlen(key), 0) !=
                  pick_key(&b, s.r, 4, key, strlen(key), 0);
    }
    cr_assert_gt(differ, 100, "only %d of 400 owners changed with the seed",
                 differ);
    fset_destroy(&s);
}

/* ---- weighted ---- */

static unsigned gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        const uint64_t t = a % b;
        a = b;
        b = t;
    }
    return (unsigned)a;
}

Test(weighted, exact_proportions_over_any_full_cycle, .timeout = 10)
{
    fset s;
    fset_init(&s, 4, false);
    const unsigned w[4] = {1, 2, 3, 4};
    const rp_strategy ws = rp_strategy_weighted(w, 4);
    cr_assert_eq(ws.kind, RP_STRATEGY_WEIGHTED);
    cr_assert_eq(ws.nweights, 4u);
    cr_assert_eq(ws.weight_total, 10u);
    cr_assert_eq(gcd_u64(ws.weight_stride, ws.weight_total), 1u,
                 "stride %llu is not coprime to 10",
                 (unsigned long long)ws.weight_stride);
    const uint64_t starts[] = {0, 3, 7, 1000003, UINT64_C(1) << 40};
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        int count[4] = {0};
        for (uint64_t i = 0; i < 10; i++)
            count[pick1(&ws, s.r, 4, starts[k] + i)]++;
        for (int i = 0; i < 4; i++)
            cr_assert_eq(count[i], (int)w[i],
                         "cycle from %llu: routee %d got %d, weight %u",
                         (unsigned long long)starts[k], i, count[i], w[i]);
    }
    fset_destroy(&s);
}

Test(weighted, running_sums_pick_exactly_what_the_walk_picks, .timeout = 10)
{
    /* Zero weights at the ends and in the middle, and a heavy routee. */
    const unsigned w[7] = {0, 3, 0, 0, 5, 1, 0};
    uint64_t ends[7], sum = 0;
    fset s;
    fset_init(&s, 7, false);
    for (int i = 0; i < 7; i++)
        ends[i] = sum += w[i];
    const rp_strategy walk = rp_strategy_weighted(w, 7);
    rp_strategy search = walk;
    cr_assert_null(walk.weight_ends, "rp_strategy_weighted() leaves the sums to routers");
    search.weight_ends = ends;
    for (uint64_t i = 0; i < 3 * walk.weight_total; i++) {
        const size_t a = pick1(&walk, s.r, 7, i), b = pick1(&search, s.r, 7, i);
        cr_assert_eq(a, b, "message %llu: walk picked %zu, search %zu", (unsigned long long)i,
                     a, b);
        cr_assert_neq(w[b], 0u, "message %llu went to zero-weight routee %zu",
                      (unsigned long long)i, b);
    }
    fset_destroy(&s);
}

Test(weighted, zero_weight_never_chosen_and_slots_interleave, .timeout = 10)
{
    fset s;
    fset_init(&s, 3, false);
    const unsigned w[3] = {0, 5, 5};
    const rp_strategy ws = rp_strategy_weighted(w, 3);
    int count[3] = {0}, run = 0, longest = 0, prev = -1;
    for (uint64_t i = 0; i < 100; i++) {
        const int k = pick1(&ws, s.r, 3, i);
        count[k]++;
        run = k == prev ? run + 1 : 1;
        longest = run > longest ? run : longest;
        prev = k;
    }
    cr_assert_eq(count[0], 0);
    cr_assert_eq(count[1], 50);
    cr_assert_eq(count[2], 50);
    cr_assert_lt(longest, 5, "weights 5:5 came in runs of %d, not "
                 "interleaved", longest);
    fset_destroy(&s);
}

Test(weighted, count_mismatch_is_refused, .timeout = 10)
{
    fset s;
    fset_init(&s, 3, false);
    const unsigned w[2] = {1, 1};
    const rp_strategy ws = rp_strategy_weighted(w, 2);
    rp_route_state st = {.message_index = 0};
    size_t out[3];
    cr_assert_eq(rp_strategy_pick(&ws, &st, s.r, 3, out), RP_EINVAL);
    fset_destroy(&s);
}

Test(weighted, stopped_routee_is_skipped, .timeout = 10)
{
    rp_routee *r[3];
    rp_pool *p = idle_pool(3, r);
    const unsigned w[3] = {1, 1, 2};
    const rp_strategy ws = rp_strategy_weighted(w, 3);
    cr_assert_eq(rp_routee_stop(r[2]), 0);
    for (uint64_t i = 0; i < 40; i++)
        cr_assert_neq(pick1(&ws, r, 3, i), 2);
    rp_pool_destroy(p);
}

/* ---- custom ---- */

typedef struct custom_ctl {
    int ret;          /* value to return */
    size_t idx[2];    /* indices to write */
    bool pin;
    atomic_int calls;
} custom_ctl;

static int custom_fn(void *user, rp_route_state *state,
                     rp_routee *const *routees, size_t n, size_t *out)
{
    (void)routees;
    (void)n;
    custom_ctl *c = user;
    atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
    for (int i = 0; i < c->ret && i < 2; i++)
        out[i] = c->idx[i];
    if (c->pin)
        state->pinned = true;
    return c->ret;
}

Test(custom, user_choice_is_returned_and_may_pin, .timeout = 10)
{
    fset s;
    fset_init(&s, 3, false);
    custom_ctl c = {.ret = 2, .idx = {2, 0}, .pin = true};
    atomic_init(&c.calls, 0);
    const rp_strategy cs = rp_strategy_custom(custom_fn, &c);
    cr_assert_eq(cs.kind, RP_STRATEGY_CUSTOM);
    cr_assert_eq(cs.custom_user, &c);
    rp_route_state st = {.message_index = 0};
    size_t out[3];
    cr_assert_eq(rp_strategy_pick(&cs, &st, s.r, 3, out), 2);
    cr_assert_eq(out[0], 2u);
    cr_assert_eq(out[1], 0u);
    cr_assert(st.pinned);
    c.ret = 0;
    cr_assert_eq(rp_strategy_pick(&cs, &st, s.r, 3, out), 0,
                 "zero choices discards the job");
    cr_assert_eq(atomic_load(&c.calls), 2);
    fset_destroy(&s);
}

Test(custom, invalid_choices_are_refused_with_einval, .timeout = 10)
{
    fset s;
    fset_init(&s, 3, false);
    custom_ctl c = {.ret = 1, .idx = {3, 0}};
    atomic_init(&c.calls, 0);
    const rp_strategy cs = rp_strategy_custom(custom_fn, &c);
    rp_route_state st = {.message_index = 0};
    size_t out[3];
    cr_assert_eq(rp_strategy_pick(&cs, &st, s.r, 3, out), RP_EINVAL,
                 "index == n");
    c.idx[0] = (size_t)-1;
    cr_assert_eq(rp_strategy_pick(&cs, &st, s.r, 3, out), RP_EINVAL,
                 "index SIZE_MAX");
    c.ret = -5;
    cr_assert_eq(rp_strategy_pick(&cs, &st, s.r, 3, out), RP_EINVAL,
                 "negative return");
    c.ret = 4;
    c.idx[0] = 0;
    c.idx[1] = 1;
    cr_assert_eq(rp_strategy_pick(&cs, &st, s.r, 3, out), RP_EINVAL,
                 "count > n");
    fset_destroy(&s);
}

/* ---- names ---- */

Test(strategy_names, every_kind_has_a_distinct_name, .timeout = 10)
{
    const rp_strategy_kind kinds[] = {
        RP_STRATEGY_ROUND_ROBIN, RP_STRATEGY_RANDOM,
        RP_STRATEGY_BROADCAST, RP_STRATEGY_SMALLEST_MAILBOX,
        RP_STRATEGY_CONSISTENT_HASH, RP_STRATEGY_WEIGHTED,
        RP_STRATEGY_CUSTOM};
    const size_t n = sizeof kinds / sizeof kinds[0];
    cr_assert_str_eq(rp_strategy_name(RP_STRATEGY_SMALLEST_MAILBOX),
                     "smallest-mailbox");
    for (size_t i = 0; i < n; i++) {
        cr_assert_not_null(rp_strategy_name(kinds[i]));
        cr_assert_gt(strlen(rp_strategy_name(kinds[i])), 0u);
        for (size_t j = i + 1; j < n; j++)
            cr_assert_str_neq(rp_strategy_name(kinds[i]),
                              rp_strategy_name(kinds[j]));
    }
}

/* ---- issue 15 item 2: an idle routee is not busy ---- */

Test(smallest_mailbox, pick_at_index_0_chooses_routee_0_on_1000_fresh_pools,
     .timeout = 120)
{
    const rp_strategy sm = rp_strategy_smallest_mailbox();
    int missed = 0;

    for (int k = 0; k < 1000; k++) {
        rp_routee *r[2];
        rp_pool *p = idle_pool(2, r);
        bool miss = false;
        /* Pick from creation until every routee slept once (its first
         * look for work is over): routee 0 is empty and idle throughout. */
        const int64_t deadline = now_ms() + 5000;
        for (;;) {
            rp_routee_stats st0, st1;
            cr_assert_eq(rp_routee_stats_get(r[0], &st0), 0);
            cr_assert_eq(rp_routee_stats_get(r[1], &st1), 0);
            miss |= pick1(&sm, r, 2, 0) != 0;
            if ((st0.sleeps && st1.sleeps) || now_ms() > deadline)
                break;
        }
        missed += miss;
        rp_pool_destroy(p);
    }
    cr_assert_eq(missed, 0, "in %d of 1000 idle pools a pick at index 0 missed routee 0",
                 missed);
}
