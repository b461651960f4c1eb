/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/util.h - small helpers of the node's own files: clocks,
 * defensive number parsing, id validation.  Private.
 */
#ifndef RP_CLUSTER_UTIL_H
#define RP_CLUSTER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** CLOCK_MONOTONIC in milliseconds / microseconds. */
int64_t rp__mono_ms(void);
int64_t rp__mono_us(void);

/** Parse exactly len bytes as a decimal integer in [lo, hi]: no sign other
 *  than a leading '-', no spaces, at most 19 digits.  Returns true and sets
 *  *out on success. */
bool rp__parse_i64(const char *s, size_t len, int64_t lo, int64_t hi, int64_t *out);

/** True when s (len bytes) is 1..max bytes of [A-Za-z0-9_.:-] (node and
 *  job ids) or, with colon false, of [A-Za-z0-9_.-] (key prefixes). */
bool rp__valid_id(const char *s, size_t len, size_t max, bool colon);

/** Handler names: 1..max bytes of printable ASCII (0x21..0x7e). */
bool rp__valid_name(const char *s, size_t len, size_t max);

/** Sleep ms milliseconds (retrying on EINTR). */
void rp__sleep_ms(int ms);

#endif /* RP_CLUSTER_UTIL_H */
