/* SPDX-License-Identifier: MIT */
/*
 * worker.h - a routee's thread: the worker loop and the rp_job_* calls
 * (worker.c).  Private.
 */
#ifndef RP_WORKER_H
#define RP_WORKER_H

#include <stdbool.h>

#include "internal.h"

/* A yield that came back within this many ns found no other thread that
 * wanted the CPU (worker.c, yield_for_work; a bare sched_yield() takes
 * ~0.7 us on the development VM; a yield that ran another thread takes
 * that thread's time slice or its run up to its own yield). */
#define RP__YIELD_ALONE_NS 3000

/* A routee thread's start routine: p is its rp_routee (started by
 * rp_pool_create with pthread_create).  Returns NULL once the routee's
 * mailbox closed and it drained or handed back what it held. */
void *rp__worker_main(void *p);

/* Whether the calling thread is a routee thread of pool (what a job may
 * not call on its own pool is refused from there). */
bool rp__worker_of(const rp_pool *pool);

#endif /* RP_WORKER_H */
