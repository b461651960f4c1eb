/* SPDX-License-Identifier: MIT */
/*
 * tune_plugin.c - a job for rp-tune: the plugin ABI of docs/tuning.md
 * ("Tuning your own job"), built as libexample_tune_plugin.so.
 *
 *   rp-tune --job ./libexample_tune_plugin.so:checksum --job-arg 65536
 *
 * rp-tune dlopen()s the file and looks up three symbols: checksum (the job,
 * an rp_job_fn), checksum_init (optional: called once, before the first
 * job, with the --job-arg string; what it returns is every job's arg; NULL
 * stops rp-tune with exit status 1) and checksum_fini (optional: called
 * once, after the last job, with init's result).  The jobs run on every
 * routee at once, so they only read the shared table; the one thing they
 * write, the count of jobs run, is atomic.  fini prints that count to
 * standard error, which examples/CMakeLists.txt's test checks.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <routepool/routepool.h>

/* The exported ABI (prototypes for -Wmissing-prototypes). */
void *checksum_init(const char *arg);
void checksum(rp_job_ctx *ctx, void *arg);
void checksum_fini(void *arg);

typedef struct table {
    size_t len;
    unsigned char *bytes;
    atomic_uint_fast64_t jobs; /* relaxed: only the total is read, in fini */
} table;

void *checksum_init(const char *arg)
{
    table *t = calloc(1, sizeof *t);

    if (!t)
        return NULL;
    t->len = arg ? strtoul(arg, NULL, 10) : 4096;
    if (!(t->bytes = malloc(t->len ? t->len : 1))) {
        free(t);
        return NULL;
    }
    for (size_t i = 0; i < t->len; i++)
        t->bytes[i] = (unsigned char)(i * 31u);
    atomic_init(&t->jobs, 0);
    return t;
}

/* The job: FNV-1a over the shared, read-only table. */
void checksum(rp_job_ctx *ctx, void *arg)
{
    table *t = arg;
    uint64_t h = 1469598103934665603u;

    (void)ctx;
    for (size_t i = 0; i < t->len; i++)
        h = (h ^ t->bytes[i]) * 1099511628211u;
    volatile uint64_t sink = h; /* keep the work */
    (void)sink;
    atomic_fetch_add_explicit(&t->jobs, 1, memory_order_relaxed);
}

void checksum_fini(void *arg)
{
    table *t = arg;

    fprintf(stderr, "checksum plugin: %llu jobs of %zu bytes ran\n",
            (unsigned long long)atomic_load_explicit(&t->jobs, memory_order_relaxed), t->len);
    free(t->bytes);
    free(t);
}
