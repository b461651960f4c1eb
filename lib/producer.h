/* SPDX-License-Identifier: MIT */
/*
 * producer.h - small per-thread producer indexes.  Private.
 *
 * A thread that submits jobs gets, at its first submit, an index of its
 * own in [0, RP__PRODUCERS): no other live thread holds it.  A lane keeps
 * one magazine of free records per index (lane.c, "Magazines"), which its
 * holder takes records from without an atomic exchange.  The index goes
 * back when the thread exits (a thread-specific-data destructor), and the
 * next thread to take it inherits whatever the lanes keep under it - the
 * records stay with their lane, none is lost.  Threads beyond the first
 * RP__PRODUCERS alive at once get -1 and use the lanes' shared magazine.
 */
#ifndef RP_PRODUCER_H
#define RP_PRODUCER_H

#define RP__PRODUCERS 16

/* This thread's index, -2 before its first rp__producer_index().  Initial
 * exec TLS: a plain %fs-relative load, no __tls_get_addr call per job. */
extern _Thread_local int rp__producer_tls __attribute__((tls_model("initial-exec")));

int rp__producer_index_slow(void);

/* Claim every index no thread holds (a lane's trim: lane.c, "Trimming"),
 * so none is taken until rp__producer_unclaim(); returns them as a bit
 * mask (bit i: index i), 0 when all are held.  Thread-safe. */
#include <stdint.h>
uint32_t rp__producer_claim_idle(void);
void rp__producer_unclaim(uint32_t claimed);

/* How many producer threads have exited (given their index back) since
 * the library was loaded: a trim that left live threads' magazines is
 * due again once this moved (lane.c, "Trimming").  Thread-safe. */
unsigned long rp__producer_exits(void);

/* This thread's producer index, or -1 when every index is taken. */
static inline int rp__producer_index(void)
{
    int i = rp__producer_tls;

    return i >= -1 ? i : rp__producer_index_slow();
}

#endif /* RP_PRODUCER_H */
