/* SPDX-License-Identifier: MIT */
/*
 * tests/test_wait.c - the futex event count (lib/wait.h): a signal wakes
 * an announced sleeper; one waker claims each wake-up and the others leave
 * it alone; a claim whose waker stalled before its FUTEX_WAKE is helped
 * by the next signal; a sleeper that is done leaves a clear word.  Linked
 * with the static library: the event is private.
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include "common.h"
#include "clock.h"
#include "wait.h"

TestSuite(wait, .fini = rp_leak_check);

typedef struct sleeper {
    rp__event *ev;
    pthread_t th;
    atomic_int announced;
    _Atomic int64_t woke_ns;
} sleeper;

/* Announce, sleep (5 s at most), record when it woke, withdraw. */
static void *sleep_once(void *p)
{
    sleeper *s = p;
    struct timespec dl;
    uint32_t v = rp__event_prepare(s->ev);

    rp__deadline(&dl, 5000);
    atomic_store(&s->announced, 1);
    rp__event_wait(s->ev, v, &dl);
    atomic_store(&s->woke_ns, rp__now_ns());
    rp__event_done(s->ev);
    return NULL;
}

static void start_sleeper(sleeper *s, rp__event *ev)
{
    *s = (sleeper){.ev = ev};
    cr_assert_eq(pthread_create(&s->th, NULL, sleep_once, s), 0);
    cr_assert(wait_atomic_ge(&s->announced, 1, 5000));
    sleep_ms(20); /* inside FUTEX_WAIT by now */
}

/* ms from t0 until the sleeper woke (joined first). */
static double woke_after_ms(sleeper *s, int64_t t0)
{
    cr_assert_eq(pthread_join(s->th, NULL), 0);
    return (double)(atomic_load(&s->woke_ns) - t0) / 1e6;
}

/* What wake_sleeper() does up to its FUTEX_WAKE: claim the announced
 * wake-up, as made at claimed_ns. */
static void claim_without_waking(rp__event *ev, int64_t claimed_ns)
{
    uint32_t w = atomic_load(&ev->word);

    cr_assert(w & RP__EV_SLEEPER);
    cr_assert(atomic_compare_exchange_strong(&ev->word, &w, w | RP__EV_CLAIM));
    atomic_store(&ev->claimed_ns, claimed_ns);
}

Test(wait, a_signal_wakes_the_sleeper_and_claims_the_wake_up)
{
    rp__event ev;
    sleeper s;

    rp__event_init(&ev);
    start_sleeper(&s, &ev);
    const int64_t t0 = rp__now_ns();
    rp__event_signal(&ev);
    const double ms = woke_after_ms(&s, t0);
    cr_assert_lt(ms, 1000.0, "woke after %.1f ms", ms);
    cr_assert_eq(atomic_load(&ev.word) & (RP__EV_SLEEPER | RP__EV_CLAIM | RP__EV_WOKEN), 0,
                 "the woken sleeper withdrew: word %#x", atomic_load(&ev.word));
}

Test(wait, a_stalled_claim_is_helped_by_the_next_signal)
{
    rp__event ev;
    sleeper s;

    rp__event_init(&ev);
    start_sleeper(&s, &ev);
    /* A waker claimed the wake-up 1 ms ago and was descheduled before
     * its FUTEX_WAKE. */
    claim_without_waking(&ev, rp__now_ns() - 1000000);
    const int64_t t0 = rp__now_ns();
    rp__event_signal(&ev); /* another producer's push */
    const double ms = woke_after_ms(&s, t0);
    cr_assert_lt(ms, 1000.0, "a stalled claim held the sleeper %.1f ms", ms);
}

Test(wait, a_fresh_claim_is_left_to_its_waker)
{
    rp__event ev;
    sleeper s;

    rp__event_init(&ev);
    start_sleeper(&s, &ev);
    /* Claimed just now: its waker is about to make the system call, so
     * another signal must not make a second one. */
    claim_without_waking(&ev, rp__now_ns() + 60 * 1000000000LL); /* never stale here */
    rp__event_signal(&ev);
    sleep_ms(100);
    cr_assert_eq(atomic_load(&s.woke_ns), 0, "a second waker woke the sleeper");
    /* The claimer's system call. */
    rp__event_broadcast(&ev);
    const double ms = woke_after_ms(&s, rp__now_ns());
    cr_assert_lt(ms, 1000.0);
}

Test(wait, a_sleeper_that_found_work_leaves_no_announcement)
{
    rp__event ev;

    rp__event_init(&ev);
    const uint32_t v = rp__event_prepare(&ev);
    cr_assert(v & RP__EV_SLEEPER);
    rp__event_done(&ev);
    cr_assert_eq(atomic_load(&ev.word) & (RP__EV_SLEEPER | RP__EV_CLAIM | RP__EV_WOKEN), 0);
    /* A signal now finds nobody: the word stays as it is. */
    const uint32_t before = atomic_load(&ev.word);
    rp__event_signal(&ev);
    cr_assert_eq(atomic_load(&ev.word), before);
    /* Each announcement is a new value (a late claim's CAS fails). */
    cr_assert_neq(rp__event_prepare(&ev), v);
    rp__event_done(&ev);
}
