/* SPDX-License-Identifier: MIT */
/*
 * dlopen.c - load the installed libroutepool.so.0.1 at run time, the way
 * Python's ctypes or a plugin host does, and run jobs through it: create a
 * pool, submit 1000 jobs, wait for them, check every one ran, destroy.
 *
 *   dlopen LIBRARY_PATH      exit 0 on success, 1 with a message otherwise
 *
 * Built without routepool's headers' link-time symbols: everything goes
 * through dlsym().  README "Loading the library with dlopen()" says what
 * the process needs for the load to succeed (tests/install/run.sh runs
 * this with each of the documented start-up settings).
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
    destroy(pool);
    dlclose(h);
    printf("dlopen consumer: 1000 of 1000 jobs ran\n");
    return 0;
}
