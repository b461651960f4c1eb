/* SPDX-License-Identifier: MIT */
/*
 * tests/test_producer.c - the per-thread producer indexes (lib/producer.h):
 * each live thread that asks gets an index no other live thread holds, the
 * first RP__PRODUCERS threads alive at once get one and the next gets -1,
 * and an exiting thread gives its index back for the next thread to take.
 * Linked with the static library: the indexes are private.  Criterion
 * runs each test in a fresh process, so no index is taken at the start.
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include "common.h"
#include "producer.h"

TestSuite(producer, .fini = rp_leak_check);

typedef struct taker {
    pthread_t th;
    int index;
    pthread_barrier_t *hold; /* wait here before exiting, when set */
} taker;

static void *take(void *p)
{
    taker *t = p;

    t->index = rp__producer_index();
    /* Asking again returns the same index. */
    if (rp__producer_index() != t->index)
        t->index = -100;
    if (t->hold)
        pthread_barrier_wait(t->hold);
    return NULL;
}

static int index_of_new_thread(void)
{
    taker t = {.hold = NULL};

    cr_assert_eq(pthread_create(&t.th, NULL, take, &t), 0);
    cr_assert_eq(pthread_join(t.th, NULL), 0);
    return t.index;
}

Test(producer, an_exiting_thread_gives_its_index_back)
{
    const int first = index_of_new_thread();

    cr_assert_eq(first, 0, "the first thread got %d", first);
    for (int i = 0; i < 3 * RP__PRODUCERS; i++)
        cr_assert_eq(index_of_new_thread(), first, "thread %d did not get the index back", i);
}

Test(producer, live_threads_hold_distinct_indexes_and_the_one_too_many_gets_none)
{
    pthread_barrier_t hold;
    taker t[RP__PRODUCERS + 1];
    bool seen[RP__PRODUCERS] = {false};

    cr_assert_eq(pthread_barrier_init(&hold, NULL, RP__PRODUCERS + 2), 0);
    for (int i = 0; i <= RP__PRODUCERS; i++) {
        t[i] = (taker){.hold = &hold};
        cr_assert_eq(pthread_create(&t[i].th, NULL, take, &t[i]), 0);
    }
    /* Every thread has its index once it reaches the barrier. */
    pthread_barrier_wait(&hold);
    for (int i = 0; i <= RP__PRODUCERS; i++)
        cr_assert_eq(pthread_join(t[i].th, NULL), 0);
    int none = 0;
    for (int i = 0; i <= RP__PRODUCERS; i++) {
        if (t[i].index == -1) {
            none++;
            continue;
        }
        cr_assert(t[i].index >= 0 && t[i].index < RP__PRODUCERS, "index %d", t[i].index);
        cr_assert(!seen[t[i].index], "index %d held twice", t[i].index);
        seen[t[i].index] = true;
    }
    cr_assert_eq(none, 1, "%d threads of %d got no index", none, RP__PRODUCERS + 1);
    /* All of them exited: the indexes are free again. */
    cr_assert_eq(index_of_new_thread(), 0);
    pthread_barrier_destroy(&hold);
}

/* A submit from another thread-specific-data destructor after ours ran
 * must not use the index it gave back: it gets -1 from then on. */
static pthread_key_t late_key;
static int late_index = -100;

static void late_destructor(void *p)
{
    (void)p;
    late_index = rp__producer_index();
}

static void *take_then_exit(void *p)
{
    (void)p;
    rp__producer_index();
    pthread_setspecific(late_key, (void *)1);
    return NULL;
}

Test(producer, a_destructor_after_the_give_back_gets_no_index)
{
    pthread_t th;

    /* Our key first (made at this thread's first ask), so its destructor
     * runs first: glibc runs destructors in key order. */
    cr_assert_eq(rp__producer_index(), 0);
    cr_assert_eq(pthread_key_create(&late_key, late_destructor), 0);
    cr_assert_eq(pthread_create(&th, NULL, take_then_exit, NULL), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);
    cr_assert_eq(late_index, -1, "the late destructor got %d", late_index);
    pthread_key_delete(late_key);
}
