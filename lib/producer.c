/* SPDX-License-Identifier: MIT */
/*
 * producer.c - per-thread producer indexes (see producer.h).
 *
 * The taken indexes are bits of one word.  A thread claims the lowest
 * clear bit with a CAS (acquire: it sees everything the index's previous
 * holder did under it) and registers a destructor that clears the bit when
 * the thread exits (release).  The destructor also sets the thread's index
 * to -1 first, so a submit from another thread-specific-data destructor
 * that runs after ours uses the shared path instead of an index that a new
 * thread may already hold.  A lane's trim claims every free index for a
 * moment (rp__producer_claim_idle) to take the magazines exited threads
 * left under them: while it holds them no thread can.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "producer.h"

_Static_assert(RP__PRODUCERS <= 32, "the taken indexes are bits of a 32-bit word");

_Thread_local int rp__producer_tls __attribute__((tls_model("initial-exec"))) = -2;

static _Atomic uint32_t taken;
static _Atomic unsigned long exits;
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool key_made;

static void give_back(void *value)
{
    int i = (int)(intptr_t)value - 1;

    rp__producer_tls = -1;
    atomic_fetch_and_explicit(&taken, ~(1u << i), memory_order_release);
    atomic_fetch_add_explicit(&exits, 1, memory_order_relaxed);
}

unsigned long rp__producer_exits(void)
{
    return atomic_load_explicit(&exits, memory_order_relaxed);
}

static void make_key(void)
{
    key_made = pthread_key_create(&key, give_back) == 0;
}

/* The library is unloaded: no destructor of ours may run any more (the
 * indexes of threads still alive are simply not given back). */
__attribute__((destructor)) static void unload(void)
{
    if (key_made)
        pthread_key_delete(key);
}

int rp__producer_index_slow(void)
{
    const uint32_t all = RP__PRODUCERS == 32 ? UINT32_MAX : (1u << RP__PRODUCERS) - 1;
    uint32_t t;

    pthread_once(&key_once, make_key);
    rp__producer_tls = -1;
    if (!key_made)
        return -1;
    t = atomic_load_explicit(&taken, memory_order_relaxed);
    while ((t & all) != all) {
        int i = __builtin_ctz(~t);

        if (!atomic_compare_exchange_weak_explicit(&taken, &t, t | (1u << i),
                                                   memory_order_acquire, memory_order_relaxed))
            continue;
        if (pthread_setspecific(key, (void *)(intptr_t)(i + 1)) != 0) {
            atomic_fetch_and_explicit(&taken, ~(1u << i), memory_order_release);
            return -1;
        }
        return rp__producer_tls = i;
    }
    return -1;
}

uint32_t rp__producer_claim_idle(void)
{
    const uint32_t all = RP__PRODUCERS == 32 ? UINT32_MAX : (1u << RP__PRODUCERS) - 1;
    uint32_t t = atomic_load_explicit(&taken, memory_order_relaxed);

    while ((t & all) != all) {
        /* Acquire: what the indexes' last holders did under them. */
        if (atomic_compare_exchange_weak_explicit(&taken, &t, t | all, memory_order_acquire,
                                                  memory_order_relaxed))
            return ~t & all;
    }
    return 0;
}

void rp__producer_unclaim(uint32_t claimed)
{
    atomic_fetch_and_explicit(&taken, ~claimed, memory_order_release);
}
