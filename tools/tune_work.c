/* SPDX-License-Identifier: MIT */
/*
 * tools/tune_work.c - what one rp-tune job does.
 *
 * Built-in workloads burn the CPU in a calibrated spin loop for a cost drawn
 * from a distribution (--cost).  Every draw comes from the job's own 64-bit
 * random value, derived from the seed and the job's number with splitmix64,
 * so no generator state is shared between threads and one seed reproduces
 * the same costs.
 *
 * A user's job comes from a shared object (--job FILE:SYMBOL), through the
 * plugin ABI documented in docs/tuning.md:
 *
 *     void  SYMBOL(rp_job_ctx *ctx, void *arg);      required: the job
 *     void *SYMBOL_init(const char *arg);            optional: once, first
 *     void  SYMBOL_fini(void *state);                optional: once, last
 *
 * Each job gets SYMBOL_init's result as arg, or the --job-arg string (NULL
 * when absent) when there is no SYMBOL_init.  Jobs run concurrently on every
 * routee, so SYMBOL must be thread-safe.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tune.h"

/* ---- random numbers ---- */

uint64_t tune_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

double tune_unit(uint64_t bits)
{
    return ((double)(bits >> 11) + 1.0) * 0x1.0p-53;
}

/* ---- the spin loop ---- */

uint64_t tune_spin(uint64_t iters)
{
    uint64_t x = iters | 1u;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        /* Opaque to the optimiser: the loop can be neither removed nor
         * folded into a closed form. */
        __asm__ __volatile__("" : "+r"(x));
    }
    return x;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The fastest of several trials is the uncontended rate: on a shared
 * machine a slower trial measures the neighbours, not the loop. */
double tune_spin_calibrate(void)
{
    const uint64_t iters = (uint64_t)1 << 20;
    volatile uint64_t sink = tune_spin(iters); /* warm the core up */
    int64_t best = INT64_MAX;
    for (int i = 0; i < 7; i++) {
        const int64_t t0 = mono_ns();
        sink = tune_spin(iters);
        const int64_t dt = mono_ns() - t0;
        best = dt < best ? dt : best;
    }
    (void)sink;
    const double per_us = (double)iters * 1e3 / (double)(best > 0 ? best : 1);
    return per_us < 1.0 ? 1.0 : per_us;
}

/* ---- cost distributions ---- */

#define COST_US_MAX 1e6 /* one second: a job longer than that is not "tuning" */

/* Parse n comma-separated finite numbers; false if the text is anything else. */
static bool parse_numbers(const char *s, double *v, int n)
{
    for (int i = 0; i < n; i++) {
        char *end;
        errno = 0;
        v[i] = strtod(s, &end);
        if (end == s || errno == ERANGE || !isfinite(v[i]))
            return false;
        if (i + 1 < n && *end != ',')
            return false;
        s = end + (i + 1 < n);
    }
    return *s == '\0';
}

static bool cost_fail(const char *spec, const char *why)
{
    fprintf(stderr, "rp-tune: --cost: %s, got '%s'\nTry 'rp-tune --help'.\n", why, spec);
    return false;
}

static bool in_range(double v, double lo, double hi)
{
    return v >= lo && v <= hi;
}

/* The parameters after "NAME:" of a distribution. */
static bool cost_params(tune_cost *c, const char *name, const char *args, const char *spec)
{
    double v[3];
    if (strcmp(name, "uniform") == 0 && parse_numbers(args, v, 1) &&
        in_range(v[0], 0, COST_US_MAX)) {
        *c = (tune_cost){.kind = COST_FIXED, .a = v[0]};
    } else if (strcmp(name, "uniform") == 0 && parse_numbers(args, v, 2) &&
               in_range(v[0], 0, COST_US_MAX) && in_range(v[1], v[0], COST_US_MAX)) {
        *c = (tune_cost){.kind = COST_RANGE, .a = v[0], .b = v[1]};
    } else if (strcmp(name, "uniform") == 0) {
        return cost_fail(spec, "uniform:US or uniform:LO,HI needs microseconds in 0..1e6 "
                               "(LO <= HI)");
    } else if (strcmp(name, "exp") == 0) {
        if (!parse_numbers(args, v, 1) || !in_range(v[0], 0, COST_US_MAX))
            return cost_fail(spec, "exp:US needs a mean in microseconds, 0..1e6");
        *c = (tune_cost){.kind = COST_EXP, .a = v[0]};
    } else if (strcmp(name, "bimodal") == 0) {
        if (!parse_numbers(args, v, 3) || !in_range(v[0], 0, COST_US_MAX) ||
            !in_range(v[1], 0, COST_US_MAX) || !in_range(v[2], 0, 1))
            return cost_fail(spec, "bimodal:A,B,P needs A and B in microseconds (0..1e6) "
                                   "and a probability P of B in 0..1");
        *c = (tune_cost){.kind = COST_BIMODAL, .a = v[0], .b = v[1], .p = v[2]};
    } else if (strcmp(name, "pareto") == 0) {
        if (!parse_numbers(args, v, 2) || !(v[0] > 0) || v[0] > COST_US_MAX / TUNE_PARETO_CAP ||
            !(v[1] > 1) || v[1] > 100)
            return cost_fail(spec, "pareto:US,ALPHA needs a minimum US in microseconds "
                                   "(above 0, at most 100) and a shape ALPHA above 1, at most 100");
        *c = (tune_cost){.kind = COST_PARETO, .a = v[0], .p = v[1]};
    } else {
        return cost_fail(spec, "unknown distribution (uniform, exp, bimodal, pareto)");
    }
    return true;
}

bool tune_cost_parse(tune_cost *out, const char *spec)
{
    const char *colon = strchr(spec, ':');
    char name[16];
    const size_t len = colon ? (size_t)(colon - spec) : 0;
    if (!colon || len == 0 || len >= sizeof name)
        return cost_fail(spec, "expected NAME:PARAMETERS, e.g. exp:50");
    memcpy(name, spec, len);
    name[len] = '\0';
    tune_cost c;
    if (!cost_params(&c, name, colon + 1, spec))
        return false;
    snprintf(c.spec, sizeof c.spec, "%s", spec);
    *out = c;
    return true;
}

double tune_cost_mean_us(const tune_cost *c)
{
    switch (c->kind) {
    case COST_FIXED: return c->a;
    case COST_RANGE: return (c->a + c->b) / 2;
    case COST_EXP: return c->a;
    case COST_BIMODAL: return c->a * (1 - c->p) + c->b * c->p;
    default: {
        /* Pareto capped at a * CAP (the mass above the cap sits at the cap):
         * E = a + integral from a to a*CAP of (a/x)^alpha dx. */
        const double al = c->p;
        return c->a + c->a / (al - 1) * (1 - pow(TUNE_PARETO_CAP, 1 - al));
    }
    }
}

double tune_cost_draw_us(const tune_cost *c, double u)
{
    switch (c->kind) {
    case COST_FIXED: return c->a;
    case COST_RANGE: return c->a + (c->b - c->a) * (1 - u);
    case COST_EXP: return -c->a * log(u);
    case COST_BIMODAL: return u <= c->p ? c->b : c->a;
    default: {
        const double x = c->a * pow(u, -1 / c->p); /* inverse of the tail (a/x)^alpha */
        return x < c->a * TUNE_PARETO_CAP ? x : c->a * TUNE_PARETO_CAP;
    }
    }
}

void tune_work_run(const tune_work *w, rp_job_ctx *ctx, uint64_t rng)
{
    if (w->plugin) {
        w->plug.fn(ctx, w->plug.state);
        return;
    }
    const double us = tune_cost_draw_us(&w->cost, tune_unit(tune_mix64(rng)));
    volatile uint64_t sink = tune_spin((uint64_t)(us * w->iters_per_us + 0.5));
    (void)sink;
}

/* ---- plugins ---- */

/* dlsym() returns an object pointer; POSIX guarantees it converts to a
 * function pointer, ISO C does not, hence the copy through memcpy. */
static void *lookup(void *handle, const char *name, size_t fn_size, void *fn_out)
{
    void *sym = dlsym(handle, name);
    if (sym)
        memcpy(fn_out, &sym, fn_size);
    return sym;
}

static bool plugin_fail(tune_plugin *p, const char *spec, const char *what, const char *detail)
{
    fprintf(stderr, "rp-tune: --job: %s '%s'%s%s\nTry 'rp-tune --help'.\n", what, spec,
            detail ? ": " : "", detail ? detail : "");
    if (p->handle)
        dlclose(p->handle);
    p->handle = NULL;
    return false;
}

bool tune_plugin_load(tune_plugin *p, const char *spec)
{
    *p = (tune_plugin){0};
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || colon[1] == '\0')
        return plugin_fail(p, spec, "expected FILE.so:SYMBOL, got", NULL);
    const size_t len = (size_t)(colon - spec);
    char path[4096], sym[256];
    if (len >= sizeof path || strlen(colon + 1) + sizeof "_init" > sizeof sym)
        return plugin_fail(p, spec, "too long:", NULL);
    memcpy(path, spec, len);
    path[len] = '\0';
    /* RTLD_NOW: a missing symbol inside the plugin fails here, not in a job. */
    if (!(p->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        char why[1024];
        snprintf(why, sizeof why, "%s%s", dlerror(),
                 strchr(path, '/') ? "" : " (dlopen searches the library path for a name without "
                                          "a slash: write ./ for a file in this directory)");
        return plugin_fail(p, path, "cannot load", why);
    }
    snprintf(sym, sizeof sym, "%s", colon + 1);
    if (!lookup(p->handle, sym, sizeof p->fn, &p->fn))
        return plugin_fail(p, spec, "no job symbol", dlerror());
    char name[sizeof sym + 8];
    snprintf(name, sizeof name, "%s_init", sym);
    lookup(p->handle, name, sizeof p->init, &p->init);
    snprintf(name, sizeof name, "%s_fini", sym);
    lookup(p->handle, name, sizeof p->fini, &p->fini);
    return true;
}

bool tune_plugin_init(tune_plugin *p, const char *arg)
{
    if (!p->init) {
        p->state = (void *)(uintptr_t)arg; /* the jobs only read it */
        return true;
    }
    p->state = p->init(arg);
    if (!p->state) {
        fprintf(stderr, "rp-tune: --job: the plugin's init function returned NULL "
                        "(it failed); nothing was run\n");
        return false;
    }
    p->initialised = true;
    return true;
}

void tune_plugin_unload(tune_plugin *p)
{
    if (p->initialised && p->fini)
        p->fini(p->state);
    p->initialised = false;
    if (p->handle)
        dlclose(p->handle);
    p->handle = NULL;
}
