/* SPDX-License-Identifier: MIT */
/*
 * alloc.h - the pool's memory: a private jemalloc arena (when the process
 * has jemalloc) or the C allocator, and type-stable freelists of
 * fixed-size records carved from slabs.  Private.
 */
#ifndef RP_ALLOC_H
#define RP_ALLOC_H

#include <ck_stack.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "internal.h"

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
 * The pool's own allocator: a private jemalloc arena when the process has
 * jemalloc, else the C allocator.  The library never links jemalloc (a
 * scheduler library must not choose its host's malloc, and jemalloc's
 * initial-exec TLS would make dlopen() of the library fail); it reaches
 * jemalloc's mallocx/sdallocx/mallctl through weak references, which the
 * dynamic linker binds when the program (or LD_PRELOAD) brought jemalloc,
 * and leaves NULL otherwise.  The static library behaves the same: the
 * references bind when the program links jemalloc.
 *
 *   jemalloc mode  arenas.create gave a private arena: records come from
 *                  mallocx(MALLOCX_ARENA | MALLOCX_TCACHE_NONE), and
 *                  rp__arena_allocated() reports the arena's exact bytes
 *                  (stats.arenas.<i>.small+large.allocated) whoever owns
 *                  malloc.
 *   fallback       no jemalloc in the process, jemalloc refused a new
 *                  arena, or AddressSanitizer (so ASan sees every
 *                  allocation): aligned_alloc/free, and
 *                  rp__arena_allocated() reports 0 (no statistics).
 *
 * The mode is chosen once, in rp__arena_create(), and kept until
 * rp__arena_destroy(): every block goes back to the allocator it came from.
 */
typedef struct rp__arena {
    unsigned index;     /* jemalloc arena index, when private_arena */
    bool private_arena; /* jemalloc mode */
} rp__arena;

/* Choose the mode (above) and, in jemalloc mode, create the arena.  Cannot
 * fail: when jemalloc is absent or refuses, the arena is the C allocator.
 * Thread-safe (on distinct arenas). */
void rp__arena_create(rp__arena *a);
/* Destroy a private arena (every block must have been freed); no-op in
 * the fallback.  Leaves *a in the fallback mode. */
void rp__arena_destroy(rp__arena *a);
/* Zeroed, aligned memory (align: a power of two); NULL when out of memory.
 * Thread-safe. */
void *rp__arena_alloc(const rp__arena *a, size_t size, size_t align);
/* Free what rp__arena_alloc(a, size, align) returned; p may be NULL. */
void rp__arena_free(const rp__arena *a, void *p, size_t size, size_t align);
/* Give the memory freed back to the system now: jemalloc mode purges the
 * private arena's dirty pages (mallctl "arena.<i>.purge"); the fallback
 * calls glibc's malloc_trim(0), which returns the free pages inside the
 * heap too (glibc keeps freed blocks otherwise), except under ASan or
 * TSan, whose own malloc it does not drive.  Slow (system
 * calls): for rare paths such as a lane's trim.  Thread-safe. */
void rp__arena_release(const rp__arena *a);
/* Bytes the private arena has handed out and not taken back, from
 * jemalloc's statistics; 0 in the fallback.  Thread-safe. */
size_t rp__arena_allocated(const rp__arena *a);

/*
 * A freelist of records of one size.  Records are carved from slabs and go
 * back to the freelist, never to the allocator, until the freelist is
 * destroyed: memory is type-stable.  That is what makes the lock-free
 * structures built on it safe without epoch reclamation: a thread that
 * still holds a stale pointer to a record reads a record (perhaps reused),
 * never unmapped or foreign memory, and the generation counters of the
 * ck_stack/ck_fifo CAS reject the stale view.  Each record embeds a
 * ck_stack_entry_t at link_off.
 */
typedef struct rp__freelist {
    /* pop_mpmc / push_mpmc: generation-tagged, so cmpxchg16b: 16-aligned. */
    ck_stack_t free __attribute__((aligned(16)));
    ck_stack_t slabs; /* pushed by growth; taken apart only by a trim */
    const rp__arena *arena;
    size_t size;      /* record size, a multiple of align */
    size_t align;
    size_t link_off;
    unsigned per_slab;
    _Atomic size_t records; /* carved so far (slabs * per_slab) */
} rp__freelist;

void rp__freelist_init(rp__freelist *fl, const rp__arena *arena, size_t size,
                       size_t align, size_t link_off, unsigned per_slab);
/* A record (contents as last left, zero when fresh); NULL: out of memory.
 * Thread-safe. */
void *rp__freelist_get(rp__freelist *fl);
/* A free record, or NULL when none is free (never grows).  Thread-safe. */
void *rp__freelist_pop(rp__freelist *fl);
/* Return a record.  Thread-safe. */
void rp__freelist_put(rp__freelist *fl, void *rec);
/* Records carved and not freed (the slabs' total).  A hint. */
size_t rp__freelist_records(const rp__freelist *fl);
/*
 * Trim: free the slabs every record of which is in recs[0..n), while the
 * freelist keeps at least keep records; the other records of recs go back
 * to the freelist.  The caller guarantees that no thread can reach any
 * record of recs any more, not even through a stale pointer (lane.c,
 * "Trimming"): this is the only exception to type stability.  Runs
 * concurrently with gets, puts and growth; one trim at a time.  Returns
 * the records freed (0 also when a temporary array could not be made).
 */
size_t rp__freelist_trim(rp__freelist *fl, void **recs, size_t n, size_t keep);
/* Free every slab.  No other thread may use the freelist any more. */
void rp__freelist_destroy(rp__freelist *fl);

#endif /* RP_ALLOC_H */
