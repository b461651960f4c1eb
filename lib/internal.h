/* SPDX-License-Identifier: MIT */
/*
 * internal.h - helpers shared by every file of the library: error detail,
 * cache-line layout, ThreadSanitizer annotations, logging.  Private.
 */
#ifndef RP_INTERNAL_H
#define RP_INTERNAL_H

#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>

#include "routepool/routepool.h"

#define RP_CACHELINE 64
/* Put a field on a cache line of its own (with RP_PAD after the last one). */
#define RP_ALIGNED alignas(RP_CACHELINE)

#define RP_LIKELY(x) __builtin_expect(!!(x), 1)
#define RP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/*
 * Prefetch a cache line we are about to write.  __builtin_prefetch(p, 1)
 * emits PREFETCHW only when the compiler targets it (-mprfchw; the
 * x86-64 baseline does not), else a read prefetch, which fetches the line
 * shared: the store then still waits for the other core's copy to be
 * invalidated.  So on x86-64 we emit PREFETCHW ourselves when CPUID says
 * the CPU has it (rp__have_prefetchw, set once at load time in alloc.c).
 */
#if defined(__x86_64__)
extern _Bool rp__have_prefetchw;
static inline void rp__prefetch_w(const void *p)
{
    if (RP_LIKELY(rp__have_prefetchw))
        __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
    else
        __builtin_prefetch(p, 1);
}
#else
static inline void rp__prefetch_w(const void *p)
{
    __builtin_prefetch(p, 1);
}
#endif

/*
 * ConcurrencyKit's atomics are inline assembly on x86-64, invisible to
 * ThreadSanitizer.  Where a ck structure hands memory from one thread to
 * another (a job through a lane, a node through a freelist) we tell TSan
 * about the hand-off explicitly: release on the address before publishing
 * it, acquire after taking it.  The plain stores and loads that ck's own
 * algorithms make on their nodes (the racy-by-design reads of a Treiber pop
 * or a Michael-Scott enqueue on type-stable memory) are hidden from TSan
 * with an ignore region around each ck call: their correctness is argued in
 * alloc.h and lane.c, not checked.  Our own records stay fully checked.
 * No code in other builds.
 */
#if defined(__SANITIZE_THREAD__)
#define RP_TSAN 1
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define rp__tsan_acquire(p) __tsan_acquire((void *)(p))
#define rp__tsan_release(p) __tsan_release((void *)(p))
#define rp__tsan_ignore_begin() __tsan_ignore_thread_begin()
#define rp__tsan_ignore_end() __tsan_ignore_thread_end()
#else
#define rp__tsan_acquire(p) ((void)(p))
#define rp__tsan_release(p) ((void)(p))
#define rp__tsan_ignore_begin() ((void)0)
#define rp__tsan_ignore_end() ((void)0)
#endif

/* Record the detail of an error for rp_errmsg() and return code. */
int rp__fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Write one log line through fn, or to stderr (warnings and errors) when fn
 * is NULL. */
void rp__log(rp_log_fn fn, void *user, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Copy a name into dst (cap bytes), checking 1..cap-1 bytes. */
int rp__copy_name(char *dst, size_t cap, const char *src, const char *def,
                  const char *func, const char *field);

#endif /* RP_INTERNAL_H */
