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
 * (per_slab records, one allocation) when it runs dry.  Records are
 * type-stable (alloc.h); the one exception is rp__freelist_trim(), which
 * frees whole slabs whose every record its caller has proved unreachable
 * (lane.c, "Trimming"), so an idle pool gives a burst's memory back.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

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
/* ASan and TSan replace malloc: glibc's own allocator is then never set
 * up, and a malloc_trim() from a thread made that thread's exit abort
 * ("a->attached_threads > 0", test_idle under ASan). */
#if USE_LIBC || defined(__SANITIZE_THREAD__)
#define SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SANITIZER_MALLOC 1
#endif
#endif
#ifndef SANITIZER_MALLOC
#define SANITIZER_MALLOC 0
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

void rp__arena_release(const rp__arena *a)
{
    char name[64];

    if (a->private_arena) {
        snprintf(name, sizeof name, "arena.%u.purge", a->index);
        (void)mallctl(name, NULL, NULL, NULL, 0);
        return;
    }
#if defined(__GLIBC__)
    /* Measured (stress_trim, C allocator): without it glibc kept every
     * freed slab resident.  Not under a sanitizer's malloc (above). */
    if (!SANITIZER_MALLOC)
        (void)malloc_trim(0);
#endif
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
    size_t nrecs;
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

/*
 * Slab sizes grow with the freelist: the first ones hold per_slab records
 * (for a lane: 63 of 128 bytes and the header in jemalloc's 8 KiB class),
 * later ones about an eighth of the records carved so far, in powers of
 * two of that class, up to 16 times it (128 KiB for a lane).  Fewer, larger
 * slabs for a burst: jemalloc keeps metadata for every extent it ever
 * made (measured: 16,000 8 KiB slabs for 1 M records left 2 MiB of it
 * resident after they were freed; rp-bench-memory), and a trim frees
 * whole slabs.  At most 1/8 more records than the lane needed.
 */
#define SLAB_GROWTH_MAX 16u

static size_t slab_bytes(const rp__freelist *fl, size_t *nrecs)
{
    size_t hdr = slab_header(fl), min = hdr + fl->size * fl->per_slab, unit = 1;
    size_t want = atomic_load_explicit(&fl->records, memory_order_relaxed) / 8 * fl->size;
    size_t bytes;

    while (unit < min)
        unit <<= 1; /* the smallest power of two that holds per_slab */
    bytes = unit;
    while (bytes * 2 <= want && bytes < unit * SLAB_GROWTH_MAX)
        bytes *= 2;
    if (bytes == unit) {
        *nrecs = fl->per_slab;
        return min;
    }
    *nrecs = (bytes - hdr) / fl->size;
    return bytes;
}

/* Allocate a slab, keep its first record for the caller, free the rest. */
static void *grow(rp__freelist *fl)
{
    size_t hdr = slab_header(fl), nrecs;
    size_t bytes = slab_bytes(fl, &nrecs);
    slab *s = rp__arena_alloc(fl->arena, bytes, fl->align);
    char *first;

    if (!s)
        return NULL;
    s->bytes = bytes;
    s->nrecs = nrecs;
    rp__tsan_release(s); /* the header, for a trim (take_slabs) */
    atomic_fetch_add_explicit(&fl->records, nrecs, memory_order_relaxed);
    rp__tsan_ignore_begin();
    ck_stack_push_upmc(&fl->slabs, &s->link);
    rp__tsan_ignore_end();
    first = (char *)s + hdr;
    for (size_t i = 1; i < nrecs; i++)
        rp__freelist_put(fl, first + i * fl->size);
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

void *rp__freelist_pop(rp__freelist *fl)
{
    ck_stack_entry_t *e;

    rp__tsan_ignore_begin();
    e = ck_stack_pop_mpmc(&fl->free);
    rp__tsan_ignore_end();
    if (!e)
        return NULL;
    rp__tsan_acquire(e);
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

size_t rp__freelist_records(const rp__freelist *fl)
{
    return atomic_load_explicit(&((rp__freelist *)fl)->records, memory_order_relaxed);
}

/* Heapsort by address, in place: qsort() may malloc() a buffer the size
 * of the array in the process's own heap, which a trim must not leave
 * behind. */
static void sift(slab **v, size_t root, size_t n)
{
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && (uintptr_t)v[child] < (uintptr_t)v[child + 1])
            child++;
        if ((uintptr_t)v[root] >= (uintptr_t)v[child])
            return;
        slab *t = v[root];
        v[root] = v[child];
        v[child] = t;
    }
}

static void sort_slabs(slab **v, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(v, i, n);
    for (size_t end = n; end-- > 1;) {
        slab *t = v[0];
        v[0] = v[end];
        v[end] = t;
        sift(v, 0, end);
    }
}

/* The slabs, taken off fl->slabs into a sorted array made in the arena
 * (its bytes in *bytes); NULL (the list left as it was) when the array
 * cannot be made. */
static slab **take_slabs(rp__freelist *fl, size_t *count, size_t *bytes)
{
    ck_stack_entry_t *head, *e;
    slab **v;
    size_t n = 0;

    rp__tsan_ignore_begin();
    head = ck_stack_batch_pop_upmc(&fl->slabs);
    rp__tsan_ignore_end();
    for (e = head; e; e = e->next)
        n++;
    *bytes = (n ? n : 1) * (sizeof *v + sizeof(uintptr_t) + sizeof(size_t));
    if (!(v = rp__arena_alloc(fl->arena, *bytes, RP_CACHELINE))) {
        for (e = head; e;) {
            ck_stack_entry_t *next = e->next;
            rp__tsan_ignore_begin();
            ck_stack_push_upmc(&fl->slabs, e);
            rp__tsan_ignore_end();
            e = next;
        }
        return NULL;
    }
    n = 0;
    for (e = head; e; e = e->next) {
        rp__tsan_acquire(e); /* pairs with grow()'s release */
        v[n++] = (slab *)e;
    }
    sort_slabs(v, n);
    *count = n;
    return v;
}

/* The index in the sorted v[0..n) of the slab holding rec (n: none);
 * end[k]: where slab k's records end (read before any slab is freed).
 * *hint: the last answer, tried first (records freed one after another
 * mostly share a slab: 10 M records took 3 passes of binary search, over
 * a second). */
static size_t slab_of(slab *const *v, const uintptr_t *end, size_t n, const void *rec,
                      size_t *hint)
{
    size_t lo = 0, hi = n;
    uintptr_t r = (uintptr_t)rec;

    if (*hint < n && r >= (uintptr_t)v[*hint] && r < end[*hint])
        return *hint;

    while (lo < hi) { /* the last slab starting at or before rec */
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)v[mid] <= r)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || r >= end[lo - 1])
        return n;
    return *hint = lo - 1;
}

/* Free the slabs all of whose records were counted, down to keep records
 * (their counts become SIZE_MAX); push the others back on fl->slabs. */
static size_t free_full_slabs(rp__freelist *fl, slab **v, size_t *count, size_t n, size_t keep)
{
    size_t freed = 0;

    for (size_t k = 0; k < n; k++) {
        size_t have = atomic_load_explicit(&fl->records, memory_order_relaxed);
        size_t nrecs = v[k]->nrecs;

        if (count[k] == nrecs && have >= keep + nrecs) {
            atomic_fetch_sub_explicit(&fl->records, nrecs, memory_order_relaxed);
            rp__arena_free(fl->arena, v[k], v[k]->bytes, fl->align);
            count[k] = SIZE_MAX;
            freed += nrecs;
            continue;
        }
        rp__tsan_ignore_begin();
        ck_stack_push_upmc(&fl->slabs, &v[k]->link);
        rp__tsan_ignore_end();
    }
    return freed;
}

size_t rp__freelist_trim(rp__freelist *fl, void **recs, size_t n, size_t keep)
{
    size_t count = 0, bytes = 0, freed = 0, hint = 0;
    slab **v = take_slabs(fl, &count, &bytes);
    uintptr_t *end = v ? (uintptr_t *)(v + (count ? count : 1)) : NULL;
    size_t *in = v ? (size_t *)(end + (count ? count : 1)) : NULL;

    if (v) {
        for (size_t k = 0; k < count; k++)
            end[k] = (uintptr_t)v[k] + slab_header(fl) + fl->size * v[k]->nrecs;
        /* Count each slab's records (the arena zeroed the counts). */
        for (size_t j = 0; j < n; j++) {
            size_t k = slab_of(v, end, count, recs[j], &hint);
            if (k < count)
                in[k]++;
        }
        freed = free_full_slabs(fl, v, in, count, keep);
    }
    /* The records of the slabs kept back on the freelist (slab_of()
     * compares addresses only: it never reads a freed slab). */
    for (size_t j = 0; j < n; j++) {
        size_t k = v ? slab_of(v, end, count, recs[j], &hint) : count;
        if (!v || k == count || in[k] != SIZE_MAX)
            rp__freelist_put(fl, recs[j]);
    }
    if (v)
        rp__arena_free(fl->arena, v, bytes, RP_CACHELINE);
    return freed;
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

