/*
 * wait.c - futex event counts: how idle routees sleep without spinning and
 * how nobody misses a wake-up.  See wait.h for the protocol.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

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
}

uint32_t rp__event_prepare(rp__event *ev)
{
    uint32_t v = atomic_fetch_or_explicit(&ev->word, 1, memory_order_seq_cst) | 1;

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

/* After the fence: wake the sleeper if one announced itself. */
static void wake_sleeper(rp__event *ev)
{
    uint32_t old = atomic_load_explicit(&ev->word, memory_order_relaxed);

    while (old & 1) {
        /* old|1 + 1: clears the flag and bumps the count in one step, so a
         * sleeper that has not reached FUTEX_WAIT yet sees a new value. */
        if (atomic_compare_exchange_weak_explicit(&ev->word, &old, old + 1,
                                                  memory_order_seq_cst,
                                                  memory_order_relaxed)) {
            futex(&ev->word, FUTEX_WAKE_BITSET, INT_MAX, NULL);
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
    atomic_fetch_add_explicit(&ev->word, 2, memory_order_seq_cst);
    futex(&ev->word, FUTEX_WAKE_BITSET, INT_MAX, NULL);
}

void rp__deadline(struct timespec *out, int timeout_ms)
{
    clock_gettime(CLOCK_MONOTONIC, out);
    out->tv_sec += timeout_ms / 1000;
    out->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (out->tv_nsec >= 1000000000L) {
        out->tv_sec++;
        out->tv_nsec -= 1000000000L;
    }
}

int rp__deadline_passed(const struct timespec *deadline)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > deadline->tv_sec ||
           (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}
