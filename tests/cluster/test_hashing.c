/* SPDX-License-Identifier: MIT */
/*
 * test_hashing.c - rendezvous hashing over node ids (issue 19, test 2, the
 * parts that need no Redis): balance of 4000 keys over 4 nodes, only a
 * departed node's keys move, only a new node's keys move, the same answer
 * whatever the order of the nodes, and the strategy over foreign routees as
 * the cluster router uses it.  The end-to-end part (jobs of a key on one
 * node, in order) is in test_routers.c.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "rendezvous.h"
#include "routepool/routepool.h"
#include "assert_no_leaks.h"

#define KEYS 4000

static void check_leaks(void)
{
    ASSERT_NO_LEAKS();
}

TestSuite(rendezvous, .fini = check_leaks);

static const char *const ids4[4] = {"alpha:101", "bravo:202", "charlie:303", "delta:404"};

static uint64_t key_hash(int k)
{
    char key[32];
    int len = snprintf(key, sizeof key, "user-%d", k);
    return XXH3_64bits(key, (size_t)len);
}

Test(rendezvous, keys_spread_800_to_1200_over_4_nodes)
{
    int count[4] = {0};

    for (int k = 0; k < KEYS; k++)
        count[rp__rendezvous_pick(ids4, 4, key_hash(k), 0, NULL)]++;
    for (int i = 0; i < 4; i++)
        cr_assert(count[i] >= 800 && count[i] <= 1200, "%s owns %d of %d keys", ids4[i],
                  count[i], KEYS);
}

Test(rendezvous, a_departed_node_moves_only_its_own_keys)
{
    const char *const ids3[3] = {"alpha:101", "charlie:303", "delta:404"}; /* bravo left */
    int moved = 0, owned = 0;

    for (int k = 0; k < KEYS; k++) {
        const char *before = ids4[rp__rendezvous_pick(ids4, 4, key_hash(k), 0, NULL)];
        const char *after = ids3[rp__rendezvous_pick(ids3, 3, key_hash(k), 0, NULL)];
        if (!strcmp(before, "bravo:202")) {
            owned++;
            continue; /* must move: its owner is gone */
        }
        if (strcmp(before, after))
            moved++;
    }
    cr_assert_eq(moved, 0, "%d keys of surviving nodes moved", moved);
    cr_assert_gt(owned, 0);
}

Test(rendezvous, a_joining_node_takes_keys_only_for_itself)
{
    const char *const ids5[5] = {"alpha:101", "bravo:202", "charlie:303", "delta:404", "echo:505"};
    int taken = 0;

    for (int k = 0; k < KEYS; k++) {
        const char *before = ids4[rp__rendezvous_pick(ids4, 4, key_hash(k), 0, NULL)];
        const char *after = ids5[rp__rendezvous_pick(ids5, 5, key_hash(k), 0, NULL)];
        if (!strcmp(after, "echo:505"))
            taken++;
        else
            cr_assert_str_eq(before, after, "key %d moved between old nodes", k);
    }
    cr_assert(taken >= 600 && taken <= 1000, "the new node took %d keys", taken);
}

Test(rendezvous, the_owner_does_not_depend_on_node_order)
{
    const char *const shuffled[4] = {"delta:404", "alpha:101", "charlie:303", "bravo:202"};

    for (int k = 0; k < 500; k++)
        cr_assert_str_eq(ids4[rp__rendezvous_pick(ids4, 4, key_hash(k), 7, NULL)],
                         shuffled[rp__rendezvous_pick(shuffled, 4, key_hash(k), 7, NULL)]);
}

Test(rendezvous, a_different_seed_gives_a_different_mapping)
{
    int differ = 0;

    for (int k = 0; k < 400; k++)
        differ += rp__rendezvous_pick(ids4, 4, key_hash(k), 0, NULL) !=
                  rp__rendezvous_pick(ids4, 4, key_hash(k), 99, NULL);
    cr_assert_gt(differ, 100);
}

static int send_nothing(rp_job_fn fn, void *arg, void *user)
{
    (void)fn, (void)arg, (void)user;
    return 0;
}

Test(rendezvous, strategy_over_foreign_routees_skips_a_stopped_node_and_pins)
{
    rp_routee *r[4];
    rp__rendezvous rv = {ids4, 4, 0};
    rp_strategy s = rp_strategy_custom(rp__rendezvous_strategy, &rv);
    int owner_before[200];

    for (int i = 0; i < 4; i++)
        cr_assert_eq(rp_routee_foreign_create(&r[i], send_nothing, NULL, NULL), 0);
    for (int k = 0; k < 200; k++) {
        rp_route_state st = {.message_index = (uint64_t)k, .key = "k", .key_len = 1,
                             .key_hash = key_hash(k)};
        size_t out[4];
        cr_assert_eq(rp_strategy_pick(&s, &st, r, 4, out), 1);
        cr_assert(st.pinned);
        owner_before[k] = (int)out[0];
        cr_assert_eq(owner_before[k], rp__rendezvous_pick(ids4, 4, key_hash(k), 0, NULL));
    }
    rp_routee_stop(r[2]);
    for (int k = 0; k < 200; k++) {
        rp_route_state st = {.key = "k", .key_len = 1, .key_hash = key_hash(k)};
        size_t out[4];
        cr_assert_eq(rp_strategy_pick(&s, &st, r, 4, out), 1);
        if (owner_before[k] != 2)
            cr_assert_eq((int)out[0], owner_before[k]);
        else
            cr_assert_neq((int)out[0], 2);
    }
    for (int i = 0; i < 4; i++)
        rp_routee_foreign_destroy(r[i]);
}

Test(rendezvous, strategy_refuses_an_unkeyed_job)
{
    rp_routee *r;
    rp__rendezvous rv = {ids4, 1, 0};
    rp_strategy s = rp_strategy_custom(rp__rendezvous_strategy, &rv);
    rp_route_state st = {0};
    size_t out[1];

    cr_assert_eq(rp_routee_foreign_create(&r, send_nothing, NULL, NULL), 0);
    cr_assert_eq(rp_strategy_pick(&s, &st, &r, 1, out), RP_EINVAL);
    rp_routee_foreign_destroy(r);
}
