/* SPDX-License-Identifier: MIT */
/*
 * dlopen.c - load the installed libroutepool.so.0.1 at run time, the way
 * a plugin host does, and run jobs through it: create a pool, submit 1000
 * jobs, wait for them, check every one ran, destroy.
 *
 *   dlopen LIBRARY_PATH      exit 0 on success, 1 with a message otherwise
 *
 * Built without routepool's link-time symbols (everything goes through
 * dlsym()) and without jemalloc, and run with no environment setting
 * (tests/install/run.sh): the library must load anywhere (README "Loading
 * the library with dlopen()").  With no jemalloc in the process the pool
 * uses the C allocator, and its metrics report memory_bytes 0 (lib/alloc.h);
 * the consumer checks that too.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <routepool/routepool.h>

static atomic_int ran;

static void count_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    atomic_fetch_add(&ran, 1);
}

#define LOOKUP(h, var, name)                                                 \
    do {                                                                     \
        *(void **)&(var) = dlsym((h), (name));                               \
        if (!(var)) {                                                        \
            fprintf(stderr, "dlopen consumer: no symbol %s\n", (name));      \
            return 1;                                                        \
        }                                                                    \
    } while (0)

int main(int argc, char **argv)
{
    void (*options_init)(rp_pool_options *);
    int (*create)(rp_pool **, const rp_pool_options *);
    int (*submit)(rp_pool *, rp_job_fn, void *);
    int (*wait_idle)(rp_pool *, int);
    void (*destroy)(rp_pool *);
    int (*snapshot)(rp_pool *, rp_metrics *);
    void (*release)(rp_metrics *);
    rp_metrics m;
    rp_pool_options o;
    rp_pool *pool;
    void *h;

    if (argc != 2) {
        fprintf(stderr, "usage: %s LIBRARY_PATH\n", argv[0]);
        return 2;
    }
    if (!(h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "dlopen consumer: %s\n", dlerror());
        return 1;
    }
    LOOKUP(h, options_init, "rp_pool_options_init");
    LOOKUP(h, create, "rp_pool_create");
    LOOKUP(h, submit, "rp_pool_submit");
    LOOKUP(h, wait_idle, "rp_pool_wait_idle");
    LOOKUP(h, destroy, "rp_pool_destroy");
    LOOKUP(h, snapshot, "rp_metrics_snapshot");
    LOOKUP(h, release, "rp_metrics_release");
    if (dlsym(RTLD_DEFAULT, "mallctl")) {
        fprintf(stderr, "dlopen consumer: jemalloc is in the process; this test needs none\n");
        return 1;
    }
    options_init(&o);
    o.routees = 2;
    if (create(&pool, &o) != 0) {
        fprintf(stderr, "dlopen consumer: rp_pool_create failed\n");
        return 1;
    }
    for (int i = 0; i < 1000; i++)
        if (submit(pool, count_job, NULL) != 0) {
            fprintf(stderr, "dlopen consumer: rp_pool_submit failed at job %d\n", i);
            return 1;
        }
    if (wait_idle(pool, 10000) != 0 || atomic_load(&ran) != 1000) {
        fprintf(stderr, "dlopen consumer: %d of 1000 jobs ran\n", atomic_load(&ran));
        return 1;
    }
    if (snapshot(pool, &m) != 0 || m.memory_bytes != 0) {
        fprintf(stderr, "dlopen consumer: without jemalloc memory_bytes must be 0, is %llu\n",
                (unsigned long long)m.memory_bytes);
        return 1;
    }
    release(&m);
    destroy(pool);
    dlclose(h);
    printf("dlopen consumer: 1000 of 1000 jobs ran; no jemalloc, C allocator, memory_bytes 0\n");
    return 0;
}
