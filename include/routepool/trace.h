/* SPDX-License-Identifier: MIT */
/*
 * routepool/trace.h - backlog-balance profiling: a trace of every
 * routee's depth and busy state over time, viewable in Perfetto
 * (ui.perfetto.dev) and chrome://tracing, and read by rp-profile.
 *
 * A sampler thread records each routee's queued depth and busy flag every
 * interval, plus (optionally) one job slice in job_sample with a submit
 * instant on the submitting thread and a flow arrow from it to the slice,
 * and steal instants on the thief and the victim with a flow arrow from
 * victim to thief.  Output is Chrome Trace Event JSON.  Job slices are the
 * trace's only duration events, so the events on every thread nest, as the
 * format requires (Perfetto drops slices that overlap without nesting).
 * A flow's tail binds to the slice enclosing it: a submit or a steal made
 * outside any traced job slice keeps its instant and loses its arrow.
 * Memory is bounded: each routee has a fixed ring for slices and steals
 * that the sampler drains into the file at every tick (events that find
 * the ring full are counted as lost and reported in the trace's metadata).
 *
 * Also in the trace: a thread_name for every routee ("routee <i>") and for
 * every thread that submitted a traced job ("<its name> (submitter)", the
 * name it had at its first traced submit); at stop, a "routee_totals"
 * metadata event per routee with its exact counts over the trace (jobs
 * run, jobs it stole, jobs stolen from it, jobs enqueued), which
 * rp-profile uses instead of the sampled slices.  The pool's name is user
 * bytes: it is JSON-escaped, and each byte that is not valid UTF-8 is
 * written as the text \xNN, so the file is always valid JSON and UTF-8.
 *
 * Programs that cannot be changed: set RP_TRACE=path in the environment;
 * every pool created then traces to path, the second pool of the process
 * to path with ".1" before its extension (x.json, x.1.json, x.2.json...;
 * a path without an extension gets the suffix: trace, trace.1), "%p" in
 * path becoming the process id, until it is destroyed or until the
 * process exits (an atexit handler finishes the traces of pools the
 * program never destroyed).
 */
#ifndef ROUTEPOOL_TRACE_H
#define ROUTEPOOL_TRACE_H

#include <stdbool.h>

#include "routepool/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rp_trace_options {
    /** Sampling interval of depth and busy, microseconds: 50..1000000.
     *  Default 1000 (1 ms). */
    unsigned interval_us;
    /** Record one job slice (and its submit flow) per job_sample jobs a
     *  mailbox accepts (the slice lands on whichever routee runs the job,
     *  the thief for a stolen one); 0 records none.  Default 64. */
    unsigned job_sample;
    /** Record steals.  Default true. */
    bool steals;
} rp_trace_options;

/** Fill opts with the defaults. */
void rp_trace_options_init(rp_trace_options *opts);

/**
 * Start tracing a pool into the file at path (created or truncated).
 * @param opts  NULL: defaults.
 * @return 0, RP_EINVAL (NULL pool or path, bad option: rp_errmsg() names
 *         it), RP_EBUSY (the pool is already tracing), RP_ESYS (the file
 *         cannot be opened, or the sampler thread cannot start), RP_ENOMEM.
 * Thread-safe.
 */
int rp_trace_start(rp_pool *pool, const char *path, const rp_trace_options *opts);

/**
 * Stop tracing: the sampler drains the rings, closes the JSON and the file.
 * rp_pool_destroy() stops a running trace itself.
 * @return 0, RP_EINVAL (NULL, or not tracing), RP_ESYS (write error).
 * Thread-safe.
 */
int rp_trace_stop(rp_pool *pool);

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_TRACE_H */
