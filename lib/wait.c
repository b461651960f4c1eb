/* SPDX-License-Identifier: MIT */
/*
 * wait.c - futex event counts: how idle routees sleep without spinning and
 * how nobody misses a wake-up.  See wait.h for the protocol.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "wait.h"

static long futex(_Atomic uint32_t *addr, int op, uint32_t val,
                  const struct timespec *ts)
{
    /* FUTEX_WAIT_BITSET takes an absolute deadline; the bitset must not be
     * 0 (EINVAL, which would turn every sleep into a busy loop). */
    return syscall(SYS_futex, (uint32_t *)addr, op | FUTEX_PRIVATE_FLAG, val,
                   ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

void rp__event_init(rp__event *ev)
{
    atomic_init(&ev->word, 0);
    atomic_init(&ev->claimed_ns, 0);
}

uint32_t rp__event_prepare(rp__event *ev)
{
    uint32_t old = atomic_load_explicit(&ev->word, memory_order_relaxed), v;

    /* A fresh announcement: no claim or wake of an earlier one carries
     * over (a late claimer's CAS on the old value fails). */
    do {
        v = ((old & ~(RP__EV_CLAIM | RP__EV_WOKEN)) | RP__EV_SLEEPER) + RP__EV_ONE;
    } while (!atomic_compare_exchange_weak_explicit(&ev->word, &old, v, memory_order_seq_cst,
                                                    memory_order_relaxed));
    /* The sleeper's next look for work must not move above the flag
     * (pairs with the fence in rp__event_signal). */
    atomic_thread_fence(memory_order_seq_cst);
    return v;
}

void rp__event_wait(rp__event *ev, uint32_t v, const struct timespec *deadline)
{
    long rc = futex(&ev->word, FUTEX_WAIT_BITSET, v, deadline);

    (void)rc; /* EAGAIN (word changed), EINTR, ETIMEDOUT: caller re-checks */
}

void rp__event_done(rp__event *ev)
{
    /* Only the sleeper clears its flag: a waker that claims the wake-up
     * leaves it set, so later wakers can tell a claim from no sleeper. */
    atomic_fetch_and_explicit(&ev->word, ~(RP__EV_SLEEPER | RP__EV_CLAIM | RP__EV_WOKEN),
                              memory_order_relaxed);
}

static void wake(rp__event *ev)
{
    futex(&ev->word, FUTEX_WAKE_BITSET, INT_MAX, NULL);
}

/* After the fence: wake the sleeper if one announced itself and nobody
 * claimed the wake-up; help a claim that looks stuck (wait.h). */
static void wake_sleeper(rp__event *ev)
{
    uint32_t old = atomic_load_explicit(&ev->word, memory_order_relaxed);

    while (old & RP__EV_SLEEPER) {
        if (old & RP__EV_CLAIM) {
            if (!(old & RP__EV_WOKEN) &&
                rp__now_ns() - atomic_load_explicit(&ev->claimed_ns, memory_order_relaxed) >
                    RP__EV_HELP_NS)
                wake(ev); /* the claimer is off the CPU: do its system call */
            return;
        }
        if (atomic_compare_exchange_weak_explicit(&ev->word, &old, old | RP__EV_CLAIM,
                                                  memory_order_seq_cst, memory_order_relaxed)) {
            uint32_t claimed = old | RP__EV_CLAIM;

            atomic_store_explicit(&ev->claimed_ns, rp__now_ns(), memory_order_relaxed);
            wake(ev);
            /* Done, unless the sleeper moved on meanwhile (then the CAS
             * fails and nothing of ours is left in the word). */
            atomic_compare_exchange_strong_explicit(&ev->word, &claimed, claimed | RP__EV_WOKEN,
                                                    memory_order_relaxed, memory_order_relaxed);
            return;
        }
    }
}

void rp__event_signal(rp__event *ev)
{
    /* Order the publication of work before the check for a sleeper
     * (pairs with the fence in rp__event_prepare). */
    atomic_thread_fence(memory_order_seq_cst);
    wake_sleeper(ev);
}

void rp__event_signal_after_rmw(rp__event *ev)
{
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__SANITIZE_THREAD__)
    /* The caller's locked instruction was the fence (wait.h); only keep
     * the compiler from moving the load above it. */
    atomic_signal_fence(memory_order_seq_cst);
#else
    atomic_thread_fence(memory_order_seq_cst);
#endif
    wake_sleeper(ev);
}

void rp__event_broadcast(rp__event *ev)
{
    atomic_fetch_add_explicit(&ev->word, RP__EV_ONE, memory_order_seq_cst);
    wake(ev);
}
