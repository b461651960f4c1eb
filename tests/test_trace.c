/* SPDX-License-Identifier: MIT */
/*
 * tests/test_trace.c - traces of real pool runs (lib/trace.c), read back
 * with rp-profile's strict JSON parser (tools/profile_json.c: valid JSON,
 * valid UTF-8) and checked event by event.
 *
 * What a trace promises (routepool/trace.h, docs/profiling.md):
 *   - the duration events on every thread nest (the Trace Event Format's
 *     rule; Perfetto drops slices that overlap without nesting): job
 *     slices are the only duration events, markers are instants;
 *   - user text (the pool's name) is escaped into valid JSON and UTF-8;
 *   - at stop, each routee's exact counts since the start;
 *   - every thread that submitted a traced job is named;
 *   - under RP_TRACE, the k-th later pool writes x.k.json (the extension
 *     kept).
 * Each test writes its trace under a directory of its own in /tmp and
 * removes it.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "profile_json.h"

TestSuite(trace, .fini = rp_leak_check);
TestSuite(trace_env, .fini = rp_leak_check);

/* ---- reading a trace ---- */

typedef struct trace_doc {
    pj_parser ps;
    char *text;
    const pj_value *events; /* the traceEvents array */
} trace_doc;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    cr_assert_gt(n, 0, "%s is empty", path);
    rewind(f);
    buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void doc_read(trace_doc *d, const char *path)
{
    size_t len;
    pj_value *root;

    d->text = slurp(path, &len);
    pj_init(&d->ps, d->text, len);
    cr_assert_eq(pj_parse_document(&d->ps, &root), 0, "%s is not valid JSON: %s", path,
                 d->ps.err);
    d->events = pj_get(root, "traceEvents");
    cr_assert(d->events && d->events->type == PJ_ARRAY, "%s has no traceEvents array", path);
}

static void doc_free(trace_doc *d)
{
    pj_free(&d->ps);
    free(d->text);
}

static double num(const pj_value *obj, const char *key)
{
    const pj_value *v = pj_get(obj, key);
    cr_assert(v && v->type == PJ_NUMBER, "no number \"%s\"", key);
    return v->u.num;
}

static bool is(const pj_value *ev, const char *ph, const char *name)
{
    return pj_is_string(pj_get(ev, "ph"), ph) && (!name || pj_is_string(pj_get(ev, "name"), name));
}

/* How many events have phase ph (and name, when not NULL). */
static size_t count(const trace_doc *d, const char *ph, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < d->events->len; i++)
        n += is(d->events->u.items[i], ph, name);
    return n;
}

/* ---- nesting ---- */

typedef struct span {
    double ts, end;
    int tid;
} span;

static int by_tid_start(const void *pa, const void *pb)
{
    const span *a = pa, *b = pb;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->end > b->end ? -1 : a->end < b->end; /* the outer one first */
}

/* Every thread's "X" (and "B"/"E") events nest: sorted by start, each one
 * starts after the enclosing ones it is inside and ends before them.
 * Timestamps are microseconds with 3 decimals: 0.5 ns of slack. */
static size_t check_nesting(const trace_doc *d, size_t *threads)
{
    const double eps = 0.0005;
    span *s = calloc(d->events->len + 1, sizeof *s), *stack[64];
    size_t n = 0, depth = 0;

    cr_assert_not_null(s);
    for (size_t i = 0; i < d->events->len; i++) {
        const pj_value *ev = d->events->u.items[i];
        cr_assert_not(is(ev, "B", NULL) || is(ev, "E", NULL), "B/E events: the writer has none");
        if (!is(ev, "X", NULL))
            continue;
        s[n].ts = num(ev, "ts");
        s[n].end = s[n].ts + num(ev, "dur");
        s[n].tid = (int)num(ev, "tid");
        n++;
    }
    qsort(s, n, sizeof *s, by_tid_start);
    *threads = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || s[i].tid != s[i - 1].tid) {
            depth = 0;
            (*threads)++;
        }
        while (depth && stack[depth - 1]->end <= s[i].ts + eps)
            depth--;
        cr_assert(depth == 0 || s[i].end <= stack[depth - 1]->end + eps,
                  "thread %d: slice [%.3f, %.3f] overlaps [%.3f, %.3f] without nesting",
                  s[i].tid, s[i].ts, s[i].end, stack[depth - 1]->ts, stack[depth - 1]->end);
        cr_assert_lt(depth, 64);
        stack[depth++] = &s[i];
    }
    free(s);
    return n;
}

/* ---- workloads ---- */

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/rp-test-trace.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

/* Remove the test's directory and what it holds. */
static void remove_dir(void)
{
    DIR *dp = opendir(dir);
    struct dirent *e;
    char path[512];

    if (!dp)
        return;
    while ((e = readdir(dp)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(dp);
    rmdir(dir);
}

static void trace_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static void spin_us(int us)
{
    const int64_t end = now_ms() * 1000 + us;
    struct timespec ts;
    do
        clock_gettime(CLOCK_MONOTONIC, &ts);
    while ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 < end);
}

static atomic_int ran;

static void short_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    spin_us((int)(intptr_t)arg);
    atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

/* Submits a short job from inside a job: a submit on a routee's thread,
 * inside its job slice. */
static void parent_job(rp_job_ctx *ctx, void *arg)
{
    spin_us(3);
    cr_assert_eq(rp_pool_submit(rp_job_pool(ctx), short_job, arg), 0);
    spin_us(3);
    atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

typedef struct submitter {
    rp_pool *pool;
    int jobs;
    const char *name;
} submitter;

static void *submitter_main(void *p)
{
    submitter *s = p;

    pthread_setname_np(pthread_self(), s->name);
    for (int i = 0; i < s->jobs; i++) {
        rp_job_fn fn = i % 10 == 0 ? parent_job : short_job;
        /* Bursts of tiny jobs (submits far closer than 1 us apart) and
         * some long ones that build queues to steal from. */
        intptr_t us = i % 97 == 0 ? 2000 : i % 3;
        if (rp_pool_submit(s->pool, fn, (void *)us) != 0)
            return (void *)1;
    }
    return NULL;
}

static rp_pool *traced_pool(const char *name, unsigned routees)
{
    rp_pool_options o;
    rp_pool *p = NULL;

    rp_pool_options_init(&o);
    o.name = name;
    o.routees = routees;
    o.steal = true;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    return p;
}

static void start(rp_pool *p, const char *path)
{
    rp_trace_options to;

    rp_trace_options_init(&to);
    to.interval_us = 100;
    to.job_sample = 1;
    to.steals = true;
    cr_assert_eq(rp_trace_start(p, path, &to), 0, "%s", rp_errmsg());
}

/* Two named submitter threads and the test's own; returns the jobs sent
 * (each parent job sends one more from inside). */
static int run_mixed(rp_pool *p, int per_thread)
{
    submitter s[2] = {{p, per_thread, "rp-test-sub-a"}, {p, per_thread, "rp-test-sub-b"}};
    pthread_t th[2];
    void *rc;

    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, submitter_main, &s[i]), 0);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pthread_join(th[i], &rc), 0);
        cr_assert_null(rc, "a submit failed");
    }
    cr_assert_eq(rp_pool_wait_idle(p, 30000), 0, "pool idle");
    return 2 * per_thread + 2 * ((per_thread + 9) / 10);
}

/* ---- tests ---- */

Test(trace, duration_events_nest_on_every_thread_of_a_real_pool_run, .init = make_dir,
     .fini = remove_dir)
{
    rp_pool *p = traced_pool("nest", 4);
    char path[512];
    trace_doc d;
    size_t threads, slices;
    int jobs;

    trace_path(path, sizeof path, "nest.json");
    atomic_store(&ran, 0);
    start(p, path);
    jobs = run_mixed(p, 4000);
    cr_assert_eq(rp_trace_stop(p), 0, "%s", rp_errmsg());
    cr_assert_eq(atomic_load(&ran), jobs);
    rp_pool_destroy(p);
    doc_read(&d, path);
    slices = check_nesting(&d, &threads);
    cr_log_info("%zu slices on %zu threads, %zu submit and %zu steal instants", slices, threads,
                count(&d, "i", "submit"), count(&d, "i", "steal"));
    cr_assert_gt(slices, 0);
    cr_assert_geq(threads, 2, "slices on several routees");
    cr_assert_gt(count(&d, "i", "submit"), 0, "submits are instants");
    cr_assert_eq(count(&d, "X", "submit") + count(&d, "X", "steal") + count(&d, "X", "stolen"), 0,
                 "no marker is a duration event");
    doc_free(&d);
}

Test(trace, steals_are_instants_on_thief_and_victim_that_nest_with_job_slices, .init = make_dir,
     .fini = remove_dir)
{
    enum { N = 200 };
    rp_pool *p = traced_pool("steal", 2);
    rp_routee *r0 = rp_pool_routee(p, 0);
    char path[512];
    trace_doc d;
    size_t threads;
    gate g;
    probe hold;

    /* Hold routee 0 with jobs queued behind it: routee 1 steals them, while
     * routee 0's held job slice is open. */
    gate_init(&g);
    probe_init(&hold, NULL, 0, &g);
    trace_path(path, sizeof path, "steal.json");
    atomic_store(&ran, 0);
    start(p, path);
    cr_assert_eq(rp_routee_tell(r0, probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&g, 1, 5000));
    for (int i = 0; i < N; i++)
        cr_assert_eq(rp_pool_submit(p, short_job, (void *)(intptr_t)5), 0);
    cr_assert(wait_atomic_ge(&ran, N, 10000), "routee 1 ran every job, stealing half");
    gate_open(&g);
    cr_assert_eq(rp_pool_wait_idle(p, 10000), 0);
    cr_assert_eq(rp_trace_stop(p), 0, "%s", rp_errmsg());
    rp_pool_destroy(p);
    gate_destroy(&g);
    doc_read(&d, path);
    check_nesting(&d, &threads);
    cr_assert_gt(count(&d, "i", "steal"), 0, "steal instants on the thief");
    cr_assert_eq(count(&d, "i", "stolen"), count(&d, "i", "steal"), "one on the victim each");
    cr_assert_eq(count(&d, "s", "steal"), count(&d, "i", "steal"), "a flow per steal");
    doc_free(&d);
}

Test(trace, pool_name_that_is_not_utf8_is_escaped_into_valid_json, .init = make_dir,
     .fini = remove_dir)
{
    static const char name[] = "n\xff" "a\xc3" "m\"e\\\x01\xc3\xa9";
    rp_pool *p = traced_pool(name, 1);
    char path[512];
    trace_doc d;
    bool seen_process = false, seen_meta = false;

    trace_path(path, sizeof path, "utf8.json");
    start(p, path);
    cr_assert_eq(rp_pool_submit(p, short_job, NULL), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 10000), 0);
    cr_assert_eq(rp_trace_stop(p), 0, "%s", rp_errmsg());
    rp_pool_destroy(p);
    doc_read(&d, path); /* the parser refuses invalid UTF-8 */
    for (size_t i = 0; i < d.events->len; i++) {
        const pj_value *ev = d.events->u.items[i], *args = pj_get(ev, "args");
        if (is(ev, "M", "process_name")) {
            cr_assert(pj_is_string(pj_get(args, "name"),
                                   "routepool n\\xFFa\\xC3m\"e\\\x01\xc3\xa9"),
                      "process_name: %s", pj_get(args, "name")->u.str);
            seen_process = true;
        }
        if (is(ev, "M", "routepool")) {
            cr_assert(pj_is_string(pj_get(args, "pool"), "n\\xFFa\\xC3m\"e\\\x01\xc3\xa9"));
            seen_meta = true;
        }
    }
    cr_assert(seen_process && seen_meta);
    doc_free(&d);
}

Test(trace, routee_totals_at_stop_count_every_job_exactly, .init = make_dir, .fini = remove_dir)
{
    rp_pool *p = traced_pool("totals", 3);
    char path[512];
    trace_doc d;
    uint64_t run = 0, stole = 0, stolen_from = 0, enqueued = 0;
    size_t seen = 0;
    int jobs;

    /* Jobs before the trace do not count in it. */
    for (int i = 0; i < 100; i++)
        cr_assert_eq(rp_pool_submit(p, short_job, NULL), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 10000), 0);
    trace_path(path, sizeof path, "totals.json");
    atomic_store(&ran, 0);
    start(p, path);
    jobs = run_mixed(p, 1500);
    cr_assert_eq(rp_trace_stop(p), 0, "%s", rp_errmsg());
    doc_read(&d, path);
    for (size_t i = 0; i < d.events->len; i++) {
        const pj_value *ev = d.events->u.items[i], *args = pj_get(ev, "args");
        rp_routee_stats st;
        if (!is(ev, "M", "routee_totals"))
            continue;
        cr_assert_eq(num(args, "routee"), (double)seen, "in routee order");
        cr_assert_eq(rp_routee_stats_get(rp_pool_routee(p, seen), &st), 0);
        cr_assert_eq((int)num(ev, "tid") > 0, true, "on the routee's thread track");
        run += (uint64_t)num(args, "jobs_run");
        stole += (uint64_t)num(args, "stole");
        stolen_from += (uint64_t)num(args, "stolen_from");
        enqueued += (uint64_t)num(args, "enqueued");
        seen++;
    }
    cr_assert_eq(seen, 3, "one routee_totals per routee");
    cr_assert_eq(run, (uint64_t)jobs, "jobs run during the trace: %" PRIu64, run);
    cr_assert_eq(enqueued, (uint64_t)jobs);
    cr_assert_eq(stole, stolen_from, "every steal has a victim");
    doc_free(&d);
    rp_pool_destroy(p);
}

Test(trace, submitting_threads_are_named_in_the_trace, .init = make_dir, .fini = remove_dir)
{
    rp_pool *p = traced_pool("names", 2);
    char path[512];
    trace_doc d;
    int named_a = 0, named_b = 0, routees = 0;

    trace_path(path, sizeof path, "names.json");
    start(p, path);
    run_mixed(p, 200);
    cr_assert_eq(rp_trace_stop(p), 0, "%s", rp_errmsg());
    rp_pool_destroy(p);
    doc_read(&d, path);
    for (size_t i = 0; i < d.events->len; i++) {
        const pj_value *ev = d.events->u.items[i], *nm;
        if (!is(ev, "M", "thread_name"))
            continue;
        nm = pj_get(pj_get(ev, "args"), "name");
        cr_assert(nm && nm->type == PJ_STRING);
        named_a += strcmp(nm->u.str, "rp-test-sub-a (submitter)") == 0;
        named_b += strcmp(nm->u.str, "rp-test-sub-b (submitter)") == 0;
        routees += strncmp(nm->u.str, "routee ", 7) == 0;
    }
    cr_assert_eq(named_a, 1, "the first submitter is named once");
    cr_assert_eq(named_b, 1, "the second submitter is named once");
    cr_assert_eq(routees, 2, "each routee is named once (not again as a submitter)");
    doc_free(&d);
}

/* ---- RP_TRACE ---- */

static bool exists(const char *name)
{
    char path[512];
    struct stat st;

    trace_path(path, sizeof path, name);
    return stat(path, &st) == 0 && st.st_size > 0;
}

static void pools_under_env(const char *env_name, int n)
{
    char env[512];
    rp_pool *p[4];

    cr_assert_leq(n, 4);
    trace_path(env, sizeof env, env_name);
    cr_assert_eq(setenv("RP_TRACE", env, 1), 0);
    for (int i = 0; i < n; i++)
        p[i] = traced_pool("env", 1);
    for (int i = 0; i < n; i++)
        rp_pool_destroy(p[i]);
    unsetenv("RP_TRACE");
}

Test(trace_env, later_pools_number_their_files_before_the_extension, .init = make_dir,
     .fini = remove_dir)
{
    pools_under_env("x.json", 3);
    cr_assert(exists("x.json"));
    cr_assert(exists("x.1.json"), "the second pool writes x.1.json");
    cr_assert(exists("x.2.json"));
    cr_assert_not(exists("x.json.1"));
    pools_under_env("plain", 2); /* no extension: a suffix */
    cr_assert(exists("plain.3"), "the fourth pool of the process");
    pools_under_env(".hidden", 1); /* a leading dot starts the name */
    cr_assert(exists(".hidden.5"));
}
