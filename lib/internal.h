/* SPDX-License-Identifier: MIT */
/*
 * internal.h - helpers shared by every file of the library: cache-line
 * layout, branch hints, ThreadSanitizer annotations, and error.h (error
 * detail, logging).  Private.
 */
#ifndef RP_INTERNAL_H
#define RP_INTERNAL_H

#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>

#include "error.h"
#include "routepool/routepool.h"

#define RP_CACHELINE 64
/* Put a field on a cache line of its own (with RP_PAD after the last one). */
#define RP_ALIGNED alignas(RP_CACHELINE)

#define RP_LIKELY(x) __builtin_expect(!!(x), 1)
#define RP_UNLIKELY(x) __builtin_expect(!!(x), 0)

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

#endif /* RP_INTERNAL_H */
