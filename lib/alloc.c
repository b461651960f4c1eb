/* SPDX-License-Identifier: MIT */
/*
 * alloc.c - a private jemalloc arena per pool (when the process has
 * jemalloc, else the C allocator), and type-stable freelists.
 *
 * The library is not linked with jemalloc (alloc.h says why and what each
 * mode does): it declares the three jemalloc calls it uses as weak
 * references and the MALLOCX_* flag encodings it passes, which are
 * jemalloc's stable ABI (jemalloc.h, unchanged since 4.0; 5.3 here).  An
 * older jemalloc refuses "arenas.create" (before 5.0 it was
 * "arenas.extend"), and the pool uses the fallback.
 *
 * Steady state allocates nothing: job records cycle through freelists
 * (and the lanes' magazines, lane.c).  A freelist grows by one slab
 * (per_slab records, one allocation) when it runs dry and keeps its
 * high-water mark until the pool is destroyed; see alloc.h for why records never return to the allocator
 * early.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#if defined(__x86_64__)
#include <cpuid.h>

_Bool rp__have_prefetchw;

/* CPUID 0x80000001, ECX bit 8: PREFETCHW (AMD's 3DNow! prefetch, Intel
 * since Broadwell).  Runs when the library is loaded. */
__attribute__((constructor)) static void detect_prefetchw(void)
{
    unsigned a, b, c, d;

    rp__have_prefetchw = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8));
}
#endif
#include "internal.h"

/* gcc says __SANITIZE_ADDRESS__, clang __has_feature(address_sanitizer). */
#if defined(__SANITIZE_ADDRESS__)
#define USE_LIBC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define USE_LIBC 1
#endif
#endif
#ifndef USE_LIBC
#define USE_LIBC 0
#endif

/* Bound by the dynamic linker when the program or LD_PRELOAD brought
 * jemalloc; NULL otherwise (never called then). */
extern void *mallocx(size_t size, int flags) __attribute__((weak));
extern void sdallocx(void *ptr, size_t size, int flags) __attribute__((weak));
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
                   size_t newlen) __attribute__((weak));

/* jemalloc.h's flag encodings (MALLOCX_ARENA, MALLOCX_TCACHE_NONE,
 * MALLOCX_LG_ALIGN, MALLOCX_ZERO). */
#define JE_ARENA(a) ((int)(((unsigned)(a) + 1u) << 20))
#define JE_TCACHE_NONE ((int)(1u << 8))
#define JE_ZERO ((int)0x40)

static int je_align(size_t align)
{
    return __builtin_ctzl(align); /* lg(align): align is a power of two */
}

static bool have_jemalloc(void)
{
    return mallocx && sdallocx && mallctl;
}

void rp__arena_create(rp__arena *a)
{
    size_t sz = sizeof a->index;

    a->private_arena = false;
    a->index = 0;
    if (!USE_LIBC && have_jemalloc() &&
        mallctl("arenas.create", &a->index, &sz, NULL, 0) == 0)
        a->private_arena = true;
}

void rp__arena_destroy(rp__arena *a)
{
    char name[64];

    if (!a->private_arena)
        return;
    snprintf(name, sizeof name, "arena.%u.destroy", a->index);
    (void)mallctl(name, NULL, NULL, NULL, 0);
    a->private_arena = false;
}

void *rp__arena_alloc(const rp__arena *a, size_t size, size_t align)
{
    void *p;

    if (a->private_arena)
        return mallocx(size, JE_ARENA(a->index) | JE_TCACHE_NONE | je_align(align) | JE_ZERO);
    size = (size + align - 1) / align * align;
    p = aligned_alloc(align, size);
    if (p)
        memset(p, 0, size);
    return p;
}

void rp__arena_free(const rp__arena *a, void *p, size_t size, size_t align)
{
    if (!p)
        return;
    if (a->private_arena)
        sdallocx(p, size, JE_TCACHE_NONE | je_align(align));
    else
        free(p);
}

/* The fallback reports 0: the C allocator keeps no per-pool statistics,
 * and metrics.h documents memory_bytes as the private arena's bytes. */
size_t rp__arena_allocated(const rp__arena *a)
{
    char name[96];
    uint64_t epoch = 1;
    size_t small = 0, large = 0, sz;

    if (!a->private_arena)
        return 0;
    (void)mallctl("epoch", NULL, NULL, &epoch, sizeof epoch);
    sz = sizeof(size_t);
    snprintf(name, sizeof name, "stats.arenas.%u.small.allocated", a->index);
    if (mallctl(name, &small, &sz, NULL, 0) != 0)
        small = 0;
    snprintf(name, sizeof name, "stats.arenas.%u.large.allocated", a->index);
    if (mallctl(name, &large, &sz, NULL, 0) != 0)
        large = 0;
    return small + large;
}

/* A slab starts with this header, padded to the record alignment. */
typedef struct slab {
    ck_stack_entry_t link;
    size_t bytes;
} slab;

static size_t slab_header(const rp__freelist *fl)
{
    return (sizeof(slab) + fl->align - 1) / fl->align * fl->align;
}

void rp__freelist_init(rp__freelist *fl, const rp__arena *arena, size_t size,
                       size_t align, size_t link_off, unsigned per_slab)
{
    ck_stack_init(&fl->free);
    ck_stack_init(&fl->slabs);
    fl->arena = arena;
    fl->align = align;
    fl->size = (size + align - 1) / align * align;
    fl->link_off = link_off;
    fl->per_slab = per_slab;
    atomic_init(&fl->records, 0);
}

static ck_stack_entry_t *link_of(const rp__freelist *fl, void *rec)
{
    return (ck_stack_entry_t *)((char *)rec + fl->link_off);
}

static void *rec_of(const rp__freelist *fl, ck_stack_entry_t *e)
{
    return (char *)e - fl->link_off;
}

/* Allocate a slab, keep its first record for the caller, free the rest. */
static void *grow(rp__freelist *fl)
{
    size_t hdr = slab_header(fl);
    size_t bytes = hdr + fl->size * fl->per_slab;
    slab *s = rp__arena_alloc(fl->arena, bytes, fl->align);
    char *first;

    if (!s)
        return NULL;
    s->bytes = bytes;
    atomic_fetch_add_explicit(&fl->records, fl->per_slab, memory_order_relaxed);
    rp__tsan_ignore_begin();
    ck_stack_push_upmc(&fl->slabs, &s->link);
    rp__tsan_ignore_end();
    first = (char *)s + hdr;
    for (unsigned i = 1; i < fl->per_slab; i++)
        rp__freelist_put(fl, first + (size_t)i * fl->size);
    return first;
}

/*
 * The next get will read the new head's link and write the record: ask
 * for its lines now (with intent to write), so that miss overlaps the
 * caller's work instead of stalling the next get.  A hint: the head may
 * change meanwhile, and the memory is type-stable, so it is always
 * mapped.
 */
static void prefetch_next(const rp__freelist *fl)
{
    ck_stack_entry_t *nx = ck_pr_load_ptr(&fl->free.head);

    if (nx) {
        const char *rec = rec_of(fl, nx);
        for (size_t off = 0; off < fl->size; off += RP_CACHELINE)
            rp__prefetch_w(rec + off);
    }
}

void *rp__freelist_get(rp__freelist *fl)
{
    ck_stack_entry_t *e;

    rp__tsan_ignore_begin();
    e = ck_stack_pop_mpmc(&fl->free);
    rp__tsan_ignore_end();
    if (!e)
        return grow(fl);
    /* Pairs with the release in rp__freelist_put(): the record's last user
     * is done with it before we write it. */
    rp__tsan_acquire(e);
    prefetch_next(fl);
    return rec_of(fl, e);
}

void rp__freelist_put(rp__freelist *fl, void *rec)
{
    ck_stack_entry_t *e = link_of(fl, rec);

    rp__tsan_release(e);
    rp__tsan_ignore_begin();
    ck_stack_push_mpmc(&fl->free, e);
    rp__tsan_ignore_end();
}

void rp__freelist_destroy(rp__freelist *fl)
{
    ck_stack_entry_t *e = ck_stack_batch_pop_upmc(&fl->slabs);

    while (e) {
        slab *s = (slab *)e;
        e = e->next;
        rp__arena_free(fl->arena, s, s->bytes, fl->align);
    }
    ck_stack_init(&fl->free);
}

