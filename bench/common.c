/* SPDX-License-Identifier: MIT */
/*
 * bench/common.c - see common.h.
 *
 * The compiler, the flags and the source directory come from
 * bench/CMakeLists.txt as RP_BENCH_COMPILER, RP_BENCH_CFLAGS and
 * RP_BENCH_SOURCE_DIR; the commit is read at run time, so a binary built
 * before a commit does not claim the new one.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common.h"

#ifndef RP_BENCH_COMPILER
#define RP_BENCH_COMPILER "unknown"
#endif
#ifndef RP_BENCH_CFLAGS
#define RP_BENCH_CFLAGS "unknown"
#endif
#ifndef RP_BENCH_SOURCE_DIR
#define RP_BENCH_SOURCE_DIR "."
#endif

void bench_calibrate(bench_calib *out, int warm_ms, int trials)
{
    const uint64_t iters = 2000000;
    double rate[64];
    uint64_t sink = 1;
    int64_t end = bench_now_ns() + (int64_t)warm_ms * 1000000;

    /* Warm the core (frequency, caches) before timing anything. */
    while (bench_now_ns() < end)
        sink = bench_spin(100000, sink);
    if (trials > 64)
        trials = 64;
    if (trials < 1)
        trials = 1;
    out->iters_per_us = 0;
    for (int t = 0; t < trials; t++) {
        int64_t t0 = bench_now_ns();
        sink = bench_spin(iters, sink);
        rate[t] = (double)iters / ((double)(bench_now_ns() - t0) / 1e3);
        if (rate[t] > out->iters_per_us)
            out->iters_per_us = rate[t];
    }
    out->median_per_us = bench_median(rate, (size_t)trials);
    out->trials = trials;
    if (sink == 42) /* keep the chain alive */
        fputs("", stderr);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

void bench_sort_i64(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
}

int64_t bench_pct_sorted(const int64_t *v, size_t n, double p)
{
    double rank = p * (double)n;
    size_t idx = (size_t)rank;

    if (n == 0)
        return 0;
    /* Nearest rank: the smallest value with at least p*n values <= it. */
    if ((double)idx < rank)
        idx++;
    return v[idx == 0 ? 0 : (idx > n ? n : idx) - 1];
}

/* ---- machine description ---- */

static void read_first_line(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");

    snprintf(out, len, "unknown");
    if (!p)
        return;
    if (fgets(out, (int)len, p))
        out[strcspn(out, "\n")] = '\0';
    else
        snprintf(out, len, "unknown");
    if (pclose(p) != 0 || out[0] == '\0')
        snprintf(out, len, "unknown");
}

static void cpu_model(char *out, size_t len)
{
    char line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");

    snprintf(out, len, "unknown");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon)
            continue;
        colon += 1 + strspn(colon + 1, " \t");
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, len, "%s", colon);
        break;
    }
    fclose(f);
}

static void commit_id(char *out, size_t len)
{
    char dirty[8];

    read_first_line("git -C '" RP_BENCH_SOURCE_DIR "' rev-parse --short HEAD 2>/dev/null",
                    out, len);
    if (strcmp(out, "unknown") == 0)
        return;
    /* Tracked files changed since the commit: say so. */
    read_first_line("git -C '" RP_BENCH_SOURCE_DIR "' status --porcelain --untracked-files=no"
                    " 2>/dev/null | head -c1 | wc -c", dirty, sizeof dirty);
    if (strcmp(dirty, "0") != 0 && strcmp(dirty, "unknown") != 0)
        strncat(out, "+dirty", len - strlen(out) - 1);
}

void bench_machine_get(bench_machine *m)
{
    struct utsname u;
    time_t now = time(NULL);
    FILE *f;

    memset(m, 0, sizeof *m);
    cpu_model(m->cpu, sizeof m->cpu);
    m->nproc = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(m->kernel, sizeof m->kernel, "%s", uname(&u) == 0 ? u.release : "unknown");
    snprintf(m->clocksource, sizeof m->clocksource, "unknown");
    if ((f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r"))) {
        if (fgets(m->clocksource, sizeof m->clocksource, f))
            m->clocksource[strcspn(m->clocksource, "\n")] = '\0';
        fclose(f);
    }
    snprintf(m->compiler, sizeof m->compiler, "%s", RP_BENCH_COMPILER);
    snprintf(m->flags, sizeof m->flags, "%s", RP_BENCH_CFLAGS);
    commit_id(m->commit, sizeof m->commit);
    strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    m->loadavg1 = bench_loadavg1();
}

double bench_loadavg1(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double v = -1;

    if (!f)
        return -1;
    if (fscanf(f, "%lf", &v) != 1)
        v = -1;
    fclose(f);
    return v;
}

void bench_machine_print(FILE *f, const bench_machine *m)
{
    fprintf(f, "# date:        %s\n", m->date);
    fprintf(f, "# commit:      %s\n", m->commit);
    fprintf(f, "# cpu:         %s\n", m->cpu);
    fprintf(f, "# nproc:       %ld\n", m->nproc);
    fprintf(f, "# kernel:      %s (clocksource %s)\n", m->kernel, m->clocksource);
    fprintf(f, "# loadavg:     %.2f (1 min, at start)\n", m->loadavg1);
    fprintf(f, "# compiler:    %s\n", m->compiler);
    fprintf(f, "# flags:       %s\n", m->flags);
}

void bench_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_member(FILE *f, const char *indent, const char *key, const char *val)
{
    fprintf(f, "%s\"%s\": ", indent, key);
    bench_json_str(f, val);
    fputs(",\n", f);
}

void bench_machine_json(FILE *f, const bench_machine *m, const char *indent)
{
    json_member(f, indent, "date", m->date);
    json_member(f, indent, "commit", m->commit);
    json_member(f, indent, "cpu", m->cpu);
    fprintf(f, "%s\"nproc\": %ld,\n", indent, m->nproc);
    json_member(f, indent, "kernel", m->kernel);
    json_member(f, indent, "clocksource", m->clocksource);
    fprintf(f, "%s\"loadavg1\": %.2f,\n", indent, m->loadavg1);
    json_member(f, indent, "compiler", m->compiler);
    json_member(f, indent, "flags", m->flags);
}

/* ---- foreign CPU load ---- */

void bench_cpu_snap_take(bench_cpu_snap *out)
{
    unsigned long long v[10] = {0};
    struct timespec ts;
    FILE *f = fopen("/proc/stat", "r");

    out->busy_s = -1;
    if (f) {
        /* cpu user nice system idle iowait irq softirq steal guest guest_nice */
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
            out->busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) /
                          (double)sysconf(_SC_CLK_TCK);
        fclose(f);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    out->self_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    out->wall_ns = bench_now_ns();
}

double bench_foreign_share(const bench_cpu_snap *a, const bench_cpu_snap *b)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    double wall = (double)(b->wall_ns - a->wall_ns) / 1e9, foreign;

    if (a->busy_s < 0 || b->busy_s < 0 || wall <= 0 || ncpu < 1)
        return 0;
    foreign = (b->busy_s - a->busy_s) - (double)(b->self_ns - a->self_ns) / 1e9;
    return foreign <= 0 ? 0 : foreign / (wall * (double)ncpu);
}

double bench_wait_quiet(double max_share, int timeout_ms)
{
    int64_t end = bench_now_ns() + (int64_t)timeout_ms * 1000000;
    double share;

    do {
        bench_cpu_snap a, b;
        struct timespec d = {0, 250000000};
        bench_cpu_snap_take(&a);
        nanosleep(&d, NULL);
        bench_cpu_snap_take(&b);
        share = bench_foreign_share(&a, &b);
    } while (share >= max_share && bench_now_ns() < end);
    return share;
}

/* ---- cache-line ping-pong ---- */

typedef struct pingpong {
    _Alignas(64) _Atomic uint64_t line;
    int rounds;
    int cpu;
} pingpong;

int bench_nth_cpu(int n)
{
    cpu_set_t set;
    int seen = 0;

    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &set) && seen++ == n)
            return cpu;
    return -1;
}

void bench_pin_self(int cpu)
{
    cpu_set_t one;

    if (cpu < 0)
        return;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

/* The responder: waits for odd values and answers with the next even one. */
static void *pong(void *p)
{
    pingpong *pp = p;

    bench_pin_self(pp->cpu);
    for (uint64_t want = 1; want < 2 * (uint64_t)pp->rounds; want += 2) {
        while (atomic_load_explicit(&pp->line, memory_order_acquire) != want)
            bench_relax();
        atomic_store_explicit(&pp->line, want + 1, memory_order_release);
    }
    return NULL;
}

/* One trial: ns per one-way transfer, or -1. */
static double pingpong_trial(int rounds, int cpu_a, int cpu_b)
{
    pingpong pp = {.rounds = rounds, .cpu = cpu_b};
    pthread_t t;
    int64_t t0;

    atomic_init(&pp.line, 0);
    if (pthread_create(&t, NULL, pong, &pp) != 0)
        return -1;
    bench_pin_self(cpu_a);
    t0 = bench_now_ns();
    for (uint64_t v = 0; v < 2 * (uint64_t)rounds; v += 2) {
        atomic_store_explicit(&pp.line, v + 1, memory_order_release);
        while (atomic_load_explicit(&pp.line, memory_order_acquire) != v + 2)
            bench_relax();
    }
    t0 = bench_now_ns() - t0;
    pthread_join(t, NULL);
    return (double)t0 / (2.0 * rounds);
}

int bench_pingpong(bench_pingpong_result *out, int rounds, int trials)
{
    double v[32];
    cpu_set_t saved;
    bool have_saved = sched_getaffinity(0, sizeof saved, &saved) == 0;

    out->cpu_a = bench_nth_cpu(0);
    out->cpu_b = bench_nth_cpu(1);
    if (out->cpu_b < 0)
        out->cpu_a = -1; /* one CPU: measure unpinned (it will be slow) */
    if (trials > 32)
        trials = 32;
    for (int i = 0; i < trials; i++)
        if ((v[i] = pingpong_trial(rounds, out->cpu_a, out->cpu_b)) < 0)
            return -1;
    /* Give the calling thread its whole affinity back. */
    if (have_saved)
        pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    out->one_way_ns = bench_median(v, (size_t)trials);
    out->min_ns = v[0];
    out->max_ns = v[trials - 1];
    return 0;
}

const char *bench_placement_kind(double one_way_ns)
{
    if (one_way_ns <= 0)
        return "unknown";
    return one_way_ns < 50 ? "near" : one_way_ns < 130 ? "middle" : "far";
}

void bench_pingpong_print(FILE *f, const bench_pingpong_result *pp, int trials)
{
    fprintf(f, "# ping-pong:   %.1f ns one way, cache line between CPU %d and CPU %d (median of "
            "%d; min %.1f, max %.1f): %s placement (by the min)\n", pp->one_way_ns, pp->cpu_a,
            pp->cpu_b, trials, pp->min_ns, pp->max_ns, bench_placement_kind(pp->min_ns));
}

void bench_placement_take(bench_placement *out, int trials)
{
    if (bench_pingpong(&out->pp, 100000, trials) != 0)
        out->pp = (bench_pingpong_result){.one_way_ns = -1, .cpu_a = -1, .cpu_b = -1};
    out->loadavg1 = bench_loadavg1();
}

void bench_placement_verdict(FILE *f, const char *bench, const char *prefix,
                             const bench_placement *start, const bench_placement *end)
{
    const bench_placement *last = end ? end : start;

    fprintf(f, "%splacement: ping-pong %.0f ns one way, fastest trial (%s; median %.0f)", prefix,
            start->pp.min_ns, bench_placement_kind(start->pp.min_ns), start->pp.one_way_ns);
    if (end)
        fprintf(f, " at the start, %.0f ns (%s; median %.0f) at the end", end->pp.min_ns,
                bench_placement_kind(end->pp.min_ns), end->pp.one_way_ns);
    fprintf(f, "; load average %.2f", start->loadavg1);
    if (end)
        fprintf(f, " -> %.2f", end->loadavg1);
    fprintf(f, " (%ld online CPUs)\n", sysconf(_SC_NPROCESSORS_ONLN));
    bench_csv_row(bench, "placement", "ping-pong one way, at the verdict (median of trials)",
                  "ns", last->pp.one_way_ns, last->pp.min_ns, last->pp.max_ns, 1);
    bench_csv_row(bench, "placement", "load average, at the verdict", "load", last->loadavg1,
                  last->loadavg1, last->loadavg1, 1);
}

/* ---- futex wake-up latency ---- */

#define WAKE_STOP UINT32_MAX

typedef struct wake_probe {
    _Alignas(64) _Atomic uint32_t word;  /* bumped by the waker */
    _Alignas(64) _Atomic int64_t woke;   /* set by the sleeper when it runs */
    int cpu;
} wake_probe;

static void *wake_sleeper(void *p)
{
    wake_probe *wp = p;
    uint32_t seen = 0;

    bench_pin_self(wp->cpu);
    for (;;) {
        while (atomic_load_explicit(&wp->word, memory_order_acquire) == seen)
            syscall(SYS_futex, &wp->word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
        seen = atomic_load_explicit(&wp->word, memory_order_acquire);
        if (seen == WAKE_STOP)
            return NULL;
        atomic_store_explicit(&wp->woke, bench_now_ns(), memory_order_release);
    }
}

/* One wake-up: ns from FUTEX_WAKE to the sleeper running. */
static double wake_once(wake_probe *wp, int gap_us)
{
    int64_t t = bench_now_ns() + (int64_t)gap_us * 1000;

    while (bench_now_ns() < t)
        bench_relax();
    atomic_store_explicit(&wp->woke, 0, memory_order_relaxed);
    t = bench_now_ns();
    atomic_fetch_add_explicit(&wp->word, 1, memory_order_release);
    syscall(SYS_futex, &wp->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    while (atomic_load_explicit(&wp->woke, memory_order_acquire) == 0)
        bench_relax();
    return (double)(atomic_load_explicit(&wp->woke, memory_order_relaxed) - t);
}

int bench_wake_latency(bench_wake_result *out, int samples, int gap_us)
{
    static double v[4096];
    wake_probe wp = {.cpu = bench_nth_cpu(1)};
    cpu_set_t saved;
    bool have_saved = sched_getaffinity(0, sizeof saved, &saved) == 0;
    pthread_t t;

    atomic_init(&wp.word, 0);
    atomic_init(&wp.woke, 0);
    samples = samples < 1 ? 1 : samples > 4096 ? 4096 : samples;
    if (pthread_create(&t, NULL, wake_sleeper, &wp) != 0)
        return -1;
    bench_pin_self(bench_nth_cpu(0));
    for (int i = 0; i < samples; i++)
        v[i] = wake_once(&wp, gap_us);
    atomic_store_explicit(&wp.word, WAKE_STOP, memory_order_release);
    syscall(SYS_futex, &wp.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    pthread_join(t, NULL);
    if (have_saved)
        pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    qsort(v, (size_t)samples, sizeof v[0], cmp_double);
    out->p50_us = v[samples / 2] / 1e3;
    out->p99_us = v[(samples * 99) / 100] / 1e3;
    out->samples = samples;
    return 0;
}

void bench_cpu_note(bench_cpu_tally *t)
{
    int c = sched_getcpu();

    t->n[c >= 0 && c < BENCH_CPU_SLOTS ? c : BENCH_CPU_SLOTS]++;
}

int bench_cpu_most(const bench_cpu_tally *t)
{
    int best = -1;
    unsigned most = 0;

    for (int c = 0; c < BENCH_CPU_SLOTS; c++)
        if (t->n[c] > most)
            most = t->n[c], best = c;
    return best;
}

void bench_layout_label(const int *cpu, int nsub, int nroutees, char *out, size_t len)
{
    enum { MAXT = 8 };
    char groups[MAXT][MAXT + 1];
    int cpus[MAXT], ng = 0, n = nsub + nroutees > MAXT ? MAXT : nsub + nroutees;
    size_t used = 0;

    for (int t = 0; t < n; t++) {
        int c = cpu[t], g;
        char who = t < nsub ? 'S' : c < 0 ? '?' : 'R';

        for (g = 0; g < ng && !(c >= 0 && cpus[g] == c); g++)
            ;
        if (g == ng) {
            cpus[ng] = c;
            groups[ng++][0] = '\0';
        }
        size_t at = strlen(groups[g]);
        groups[g][at] = who;
        groups[g][at + 1] = '\0';
    }
    for (int i = 0; i < ng; i++) /* descending: "SR" before "R" */
        for (int j = i + 1; j < ng; j++)
            if (strcmp(groups[j], groups[i]) > 0) {
                char t[sizeof groups[0]];
                memcpy(t, groups[i], sizeof t);
                memcpy(groups[i], groups[j], sizeof t);
                memcpy(groups[j], t, sizeof t);
            }
    if (len)
        out[0] = '\0';
    for (int i = 0; i < ng; i++)
        used += (size_t)snprintf(out + used, used < len ? len - used : 0, "%s%s", i ? "|" : "",
                                 groups[i]);
}

uint64_t bench_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    char *end;
    unsigned long long v;

    if (!s || !*s || *s == '-') {
        fprintf(stderr, "%s: missing or negative value\n", opt);
        exit(2);
    }
    v = strtoull(s, &end, 10);
    if (*end != '\0' || v < min || v > max) {
        fprintf(stderr, "%s: expected an integer %llu..%llu (got '%s')\n", opt,
                (unsigned long long)min, (unsigned long long)max, s);
        exit(2);
    }
    return (uint64_t)v;
}

static void csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('"', f);
}

void bench_csv_row(const char *bench, const char *cas, const char *metric, const char *unit,
                   double median, double min, double max, int reps)
{
    const char *path = getenv("RP_BENCH_CSV");
    FILE *f;

    if (!path || !*path)
        return;
    if (!(f = fopen(path, "a"))) {
        perror(path);
        return;
    }
    fseek(f, 0, SEEK_END); /* "a" leaves the position implementation-defined */
    if (ftell(f) == 0)
        fputs("bench,case,metric,unit,median,min,max,reps\n", f);
    csv_str(f, bench);
    fputc(',', f);
    csv_str(f, cas);
    fputc(',', f);
    csv_str(f, metric);
    fputc(',', f);
    csv_str(f, unit);
    fprintf(f, ",%.6g,%.6g,%.6g,%d\n", median, min, max, reps);
    fclose(f);
}

void bench_csv_samples(const char *bench, const char *cas, const char *metric, const char *unit,
                       double *v, size_t n)
{
    double med = bench_median(v, n); /* sorts v */

    bench_csv_row(bench, cas, metric, unit, med, n ? v[0] : 0, n ? v[n - 1] : 0, (int)n);
}

void bench_gate_init(bench_gate *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->open = false;
}

void bench_gate_destroy(bench_gate *g)
{
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

void bench_gate_close(bench_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = false;
    pthread_mutex_unlock(&g->mu);
}

void bench_gate_open(bench_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

void bench_gate_pass(bench_gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}
