/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_uv.c - libuv's threadpool behind peer_uv.h: one uv_work_t per
 * job, allocated before the round (peer_uv_prepare), its work callback
 * calling the job on a pool thread, its after-work callback on the loop's
 * thread only checking that the job was not cancelled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#include "common.h"
#include "peer_uv.h"

typedef struct uvjob {
    uv_work_t req;
    void (*fn)(void *rec);
    void *rec;
} uvjob;

struct peer_uv {
    uv_loop_t loop;
    uvjob *jobs;
    size_t cap;
};

static void die(const char *what)
{
    fprintf(stderr, "rp-bench-tiny: %s\n", what);
    exit(1);
}

static void uv_work(uv_work_t *req)
{
    uvjob *j = (uvjob *)req;

    j->fn(j->rec);
}

static void uv_after(uv_work_t *req, int status)
{
    (void)req;
    if (status != 0)
        die("uv_queue_work job cancelled");
}

peer_uv *peer_uv_create(void)
{
    peer_uv *u = calloc(1, sizeof *u);

    if (u && uv_loop_init(&u->loop) != 0) {
        free(u);
        return NULL;
    }
    return u;
}

int peer_uv_prepare(peer_uv *u, size_t n)
{
    if (u->cap < n) {
        free(u->jobs);
        if (!(u->jobs = calloc(n, sizeof *u->jobs))) {
            u->cap = 0;
            return -1;
        }
        u->cap = n;
    }
    return 0;
}

void peer_uv_round(peer_uv *u, void (*fn)(void *rec), char *base, size_t stride, size_t n,
                   int64_t *submit_ns)
{
    int64_t t0 = bench_now_ns();

    for (size_t i = 0; i < n; i++) {
        u->jobs[i].fn = fn;
        u->jobs[i].rec = base + i * stride;
        if (uv_queue_work(&u->loop, &u->jobs[i].req, uv_work, uv_after) != 0)
            die("uv_queue_work failed");
    }
    *submit_ns = bench_now_ns() - t0;
    uv_run(&u->loop, UV_RUN_DEFAULT); /* returns when every after-work ran */
}

void peer_uv_destroy(peer_uv *u)
{
    uv_loop_close(&u->loop);
    free(u->jobs);
    free(u);
}

const char *peer_uv_version(void)
{
    return uv_version_string();
}
