/* SPDX-License-Identifier: MIT */
/*
 * tests/tune_plugin.c - job plugins that test_tune.sh loads into rp-tune
 * with --job (the plugin ABI of docs/tuning.md).
 *
 *   tp_job       with tp_job_init and tp_job_fini.  init parses its
 *                argument ("spin=N": N loop iterations per job), fini logs
 *                how many jobs ran and how many saw a bad ctx or arg.
 *   tp_bare      no init, no fini: each job must get the --job-arg string
 *                itself; the first job logs it.
 *   tp_nullinit  an init that fails (returns NULL): rp-tune must stop with
 *                exit status 1 and never call tp_nullinit_fini.
 *
 * Every call appends one line to the file named by $TUNE_PLUGIN_LOG, so the
 * test can count init and fini calls from outside the process.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "routepool/routepool.h"

/* The exported ABI (prototypes for -Wmissing-prototypes). */
void *tp_job_init(const char *arg);
void tp_job(rp_job_ctx *ctx, void *arg);
void tp_job_fini(void *state);
void tp_bare(rp_job_ctx *ctx, void *arg);
void *tp_nullinit_init(const char *arg);
void tp_nullinit(rp_job_ctx *ctx, void *arg);
void tp_nullinit_fini(void *state);

typedef struct tp_state {
    uint32_t magic;
    unsigned spin;
    atomic_uint_fast64_t runs, bad;
} tp_state;

#define TP_MAGIC 0x7475u

static void tp_log(const char *fmt, ...)
{
    const char *path = getenv("TUNE_PLUGIN_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

void *tp_job_init(const char *arg)
{
    tp_log("init %s", arg ? arg : "(null)");
    tp_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->magic = TP_MAGIC;
    if (arg && strncmp(arg, "spin=", 5) == 0)
        s->spin = (unsigned)strtoul(arg + 5, NULL, 10);
    atomic_init(&s->runs, 0);
    atomic_init(&s->bad, 0);
    return s;
}

void tp_job(rp_job_ctx *ctx, void *arg)
{
    tp_state *s = arg;
    if (!s || s->magic != TP_MAGIC)
        return; /* cannot count it anywhere: fini will show too few runs */
    volatile unsigned sink __attribute__((unused)) = 0; /* clang 14: set, never read */
    for (unsigned i = 0; i < s->spin; i++)
        sink += i;
    (void)sink; /* a use: clang 14's -Wunused-but-set-variable counts only writes here */
    if (!ctx || rp_job_routee(ctx) < 0 || rp_job_pool(ctx) == NULL)
        atomic_fetch_add_explicit(&s->bad, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->runs, 1, memory_order_relaxed);
}

void tp_job_fini(void *state)
{
    tp_state *s = state;
    tp_log("fini runs=%llu bad=%llu",
           (unsigned long long)atomic_load_explicit(&s->runs, memory_order_relaxed),
           (unsigned long long)atomic_load_explicit(&s->bad, memory_order_relaxed));
    free(s);
}

static atomic_int bare_logged;

void tp_bare(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    if (atomic_exchange_explicit(&bare_logged, 1, memory_order_relaxed) == 0)
        tp_log("bare %s", arg ? (const char *)arg : "(null)");
}

void *tp_nullinit_init(const char *arg)
{
    tp_log("nullinit init %s", arg ? arg : "(null)");
    return NULL;
}

void tp_nullinit(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    tp_log("nullinit job");
}

void tp_nullinit_fini(void *state)
{
    (void)state;
    tp_log("nullinit fini");
}
