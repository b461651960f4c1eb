/* SPDX-License-Identifier: MIT */
/*
 * alloc.h - the pool's memory: a private jemalloc arena, and type-stable
 * freelists of fixed-size records carved from slabs.  Private.
 */
#ifndef RP_ALLOC_H
#define RP_ALLOC_H

#include <ck_stack.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* A jemalloc arena of the pool's own, so its statistics are exact whoever
 * owns malloc.  Falls back to the C allocator when jemalloc refuses (and
 * under AddressSanitizer, so ASan sees every allocation). */
typedef struct rp__arena {
    unsigned index;
    bool private_arena;
} rp__arena;

int rp__arena_create(rp__arena *a);
void rp__arena_destroy(rp__arena *a);
/* Zeroed, aligned memory; NULL when out of memory. */
void *rp__arena_alloc(const rp__arena *a, size_t size, size_t align);
void rp__arena_free(const rp__arena *a, void *p, size_t size, size_t align);
/* Bytes the arena has handed out and not taken back (0 when not jemalloc). */
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
    ck_stack_t slabs; /* push-only until destroy */
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
/* Return a record.  Thread-safe. */
void rp__freelist_put(rp__freelist *fl, void *rec);
/* Free every slab.  No other thread may use the freelist any more. */
void rp__freelist_destroy(rp__freelist *fl);

#endif /* RP_ALLOC_H */
