/* SPDX-License-Identifier: MIT */
/*
 * trace.h - the trace sampler and text escaping, private side (trace.c).
 * The rings routees write are trace_ring.h.
 */
#ifndef RP_TRACE_INTERNAL_H
#define RP_TRACE_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "trace_ring.h"

/* Write user text (a pool or thread name) escaped for a JSON string body
 * (RP__TEXT_JSON) or a Prometheus label value (RP__TEXT_PROM): valid UTF-8
 * passes, " \\ and newline are backslash-escaped, every byte that is not
 * valid UTF-8 is written as the text \\xNN (so the value reads "\xNN"),
 * other control characters as the escape \u00NN in JSON and as the text \\xNN in
 * Prometheus.  The output is always valid UTF-8. */
enum { RP__TEXT_JSON = 0, RP__TEXT_PROM = 1 };
void rp__text_write(FILE *f, const char *str, int style);

struct rp_pool;
/* Pool teardown: stop a running trace, free the rings. */
void rp__trace_pool_destroy(struct rp_pool *pool);
/* Pool creation: start tracing when RP_TRACE is set. */
void rp__trace_from_env(struct rp_pool *pool);

#endif /* RP_TRACE_INTERNAL_H */
