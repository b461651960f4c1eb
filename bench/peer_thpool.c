/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_thpool.c - C-Thread-Pool behind peer_thpool.h.  The pool is
 * the library's own threadpool handle; peer_thpool is only its name here,
 * so no call adds anything to what thpool does (the comparison is with
 * C-Thread-Pool as shipped).
 */
#include <thpool.h>

#include "peer_thpool.h"

peer_thpool *peer_thpool_create(int workers)
{
    return (peer_thpool *)thpool_init(workers);
}

int peer_thpool_submit(peer_thpool *p, void (*fn)(void *arg), void *arg)
{
    return thpool_add_work((threadpool)p, fn, arg) == 0 ? 0 : -1;
}

void peer_thpool_wait(peer_thpool *p)
{
    thpool_wait((threadpool)p);
}

void peer_thpool_destroy(peer_thpool *p)
{
    thpool_destroy((threadpool)p);
}
