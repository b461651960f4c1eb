/* SPDX-License-Identifier: MIT */
/*
 * clock.h - time and thread identity (clock.c).  Private.
 */
#ifndef RP_CLOCK_H
#define RP_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Now, CLOCK_MONOTONIC, in nanoseconds. */
int64_t rp__now_ns(void);

/* Absolute CLOCK_MONOTONIC deadline timeout_ms from now. */
void rp__deadline(struct timespec *out, int timeout_ms);
/* True when the deadline has passed. */
int rp__deadline_passed(const struct timespec *deadline);

/* How many thread names rp__tid() remembers (the oldest go first). */
#define RP__TID_NAMES_MAX 4096u

/* The calling thread's kernel id (cached).  The first call on a thread
 * records the thread's name, for rp__tid_name(). */
int32_t rp__tid(void);
/* The name tid had when it first called rp__tid() into out; false if
 * unknown.  Thread-safe. */
bool rp__tid_name(int32_t tid, char out[16]);

#endif /* RP_CLOCK_H */
