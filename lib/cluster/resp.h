/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/resp.h - commands written straight in Redis's wire format
 * (RESP) into one growing buffer, for the transport's hot pipelines: a
 * batch's XADDs, a fetch's XACK + XDEL.  hiredis's argv formatter costs a
 * format-string parse per argument (sdscatfmt) and a buffer per command;
 * this writes each argument with two memcpys.  Private.
 *
 * Every argument is length-prefixed (binary-safe: payloads are never
 * scanned).  Out of memory is sticky: the buffer is then marked and
 * rp__resp_send() refuses it, so a half-built pipeline is never sent.
 */
#ifndef RP_CLUSTER_RESP_H
#define RP_CLUSTER_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "node.h"

typedef struct rp__resp {
    char *buf;
    size_t len, cap;
    bool oom;
} rp__resp;

/** An empty buffer (no allocation until the first write). */
void rp__resp_init(rp__resp *b);
/** Free the buffer (the struct may be reused after rp__resp_init). */
void rp__resp_free(rp__resp *b);
/** Start a command of argc arguments ("*argc\r\n"). */
void rp__resp_cmd(rp__resp *b, size_t argc);
/** One argument: "$len\r\n", the len bytes of p, "\r\n". */
void rp__resp_arg(rp__resp *b, const void *p, size_t len);
/** One NUL-terminated argument. */
void rp__resp_str(rp__resp *b, const char *s);
/** The decimal digits of v into out (room for 20); returns their count. */
size_t rp__u64_digits(char *out, uint64_t v);
/**
 * Queue the buffer's commands on k (connecting first if needed); their
 * replies are read with rp__conn_get_reply(), one per command.
 * @return 0, RP_EUNAVAILABLE (Redis unreachable), RP_ENOMEM (the buffer
 *         or the connection's output buffer ran out of memory).
 */
int rp__resp_send(rp__conn *k, const rp__resp *b);

#endif /* RP_CLUSTER_RESP_H */
