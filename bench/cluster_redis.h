/* SPDX-License-Identifier: MIT */
/*
 * bench/cluster_redis.h - what the cluster benchmarks share: a hiredis
 * connection from an address string, Redis's own CPU time (INFO CPU), and
 * the "key=value" result files through which bench/run hands one peer's
 * numbers (BullMQ, the streams floor) to rp-bench-cluster for same-run
 * ratios.
 *
 * Replies are checked for type before use, as everything read from a
 * server is (docs/cluster.md, "Bad input"); a connection error is reported
 * on stderr with the address, never silently retried: a benchmark that
 * lost its server has no number to give.
 */
#ifndef RP_BENCH_CLUSTER_REDIS_H
#define RP_BENCH_CLUSTER_REDIS_H

#include <stdbool.h>
#include <stdio.h>

#include <hiredis.h>

/**
 * Connect to addr: "HOST:PORT", or a unix socket path (anything with a
 * '/'), with connect and command timeouts of timeout_ms.
 * @return the context (free with redisFree()), or NULL with a message on
 *         stderr.
 */
redisContext *cr_connect(const char *addr, int timeout_ms);

/** Redis's used_cpu_sys + used_cpu_user in seconds, or -1 on error. */
double cr_redis_cpu_s(redisContext *c);

/** Redis's total_net_input_bytes and total_net_output_bytes (INFO stats).
 *  @return false when the reply is missing or of the wrong type. */
bool cr_redis_net_bytes(redisContext *c, double *in, double *out);

/** What the scheduler recorded for every thread of a process, summed over
 *  /proc/PID/task/TID/schedstat: time on a CPU, time runnable but waiting
 *  for one, and the times it was put on a CPU (wake-ups and preemptions
 *  resumed).  Threads that exited are not counted. */
typedef struct cr_sched {
    double cpu_ns, wait_ns, slices;
} cr_sched;

/** Read pid's totals (0 = this process) into out; false when /proc has no
 *  such process. */
bool cr_sched_read(int pid, cr_sched *out);

/** Run a command that must not fail (argv form); false with a message on
 *  stderr naming what when the reply is missing or an error. */
bool cr_command_ok(redisContext *c, const char *what, int argc, const char **argv);

/** Append "key=value\n" to the file at path (NULL: nothing). */
void cr_kv_write(const char *path, const char *key, double value);

/**
 * Read key's value from a "key=value" file.
 * @return true when found and numeric; false otherwise (out untouched).
 */
bool cr_kv_read(const char *path, const char *key, double *out);

#endif /* RP_BENCH_CLUSTER_REDIS_H */
