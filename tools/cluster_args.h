/* SPDX-License-Identifier: MIT */
/*
 * tools/cluster_args.h - command-line helpers shared by rp-node and
 * rp-cluster: strict integer parsing, the password file, and reading a
 * bounded payload from a file or stdin.  Each prints its own message
 * ("<tool>: <option> ...") on failure, so callers only pick the exit code.
 */
#ifndef RP_TOOLS_CLUSTER_ARGS_H
#define RP_TOOLS_CLUSTER_ARGS_H

#include <stdbool.h>
#include <stddef.h>

/** Parse v as a decimal integer in min..max (nothing else allowed). */
bool ca_parse_int(const char *tool, const char *opt, const char *v, long long min,
                  long long max, long long *out);

/**
 * Read the first line of path (without its newline) into buf.  Refuses an
 * empty first line and one that does not fit.
 */
bool ca_read_password(const char *tool, const char *path, char *buf, size_t len);

/**
 * Read all of path ("-": stdin) into a malloc'd buffer of *len bytes
 * (NUL-terminated, not counted), at most max bytes: more is refused.
 * @return the buffer (free() it) or NULL after a message.
 */
void *ca_read_payload(const char *tool, const char *path, size_t max, size_t *len);

#endif /* RP_TOOLS_CLUSTER_ARGS_H */
