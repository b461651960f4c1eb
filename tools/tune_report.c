/* SPDX-License-Identifier: MIT */
/*
 * tools/tune_report.c - what rp-tune prints and writes: the header, the
 * table, the recommendation, --csv and --json.  (--plot: tune_plot.c.)
 *
 * The recommendation rule (docs/tuning.md): among the cells that kept up
 * with their arrivals and meet the --p99 target if one was given, take the
 * best throughput; recommend the smallest pool size with a cell within 5%
 * of it, and at that size the router with the lowest p99 among those
 * cells.  Sizes first because a smaller pool costs fewer threads for the
 * same work; p99 next because within 5% throughput the tail is what tells
 * routers apart.  In the open loop every cell that kept up completed the
 * offered rate (at least 95% of the window's arrivals): what one completed
 * beyond another is backlog at the window's edges, not capacity, so there
 * "within 5% of the best" means "kept up".
 *
 * Only cells whose measurement holds take part (tune.h): enough sojourns
 * for a p99 (TUNE_TAIL_SAMPLES beyond it), a pool that got at least
 * TUNE_STARVED of the CPU its built-in jobs asked for, and a load average
 * at the start no higher than --max-load.  A percentile without enough
 * samples is shown as '-' (JSON null, CSV empty), never as a number; what
 * was left out is said in warnings (stderr) and in the sentence, which
 * also says when it comes from an interrupted, partial sweep.
 */
#include <math.h>
#include <string.h>

#include "tune.h"

#define WITHIN 0.95 /* "within 5% of the best throughput" */

void tune_fmt_us(char *buf, size_t len, double us)
{
    if (us < 1)
        snprintf(buf, len, "%.0f ns", us * 1e3);
    else if (us < 100)
        snprintf(buf, len, "%.1f us", us);
    else if (us < 1e3)
        snprintf(buf, len, "%.0f us", us);
    else if (us < 1e4)
        snprintf(buf, len, "%.2f ms", us / 1e3);
    else if (us < 1e6)
        snprintf(buf, len, "%.1f ms", us / 1e3);
    else
        snprintf(buf, len, "%.2f s", us / 1e6);
}

void tune_fmt_count(char *buf, size_t len, double v)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", v > 0 ? v : 0);
    const size_t n = strlen(digits);
    size_t o = 0;
    for (size_t i = 0; i < n && o + 2 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
}

/* ---- what holds ---- */

unsigned tune_min_samples(double q)
{
    return (unsigned)lround(TUNE_TAIL_SAMPLES / (1 - q));
}

bool tune_pct_valid(const tune_result *r, double q)
{
    return r->samples >= tune_min_samples(q);
}

bool tune_starved(const tune_result *r)
{
    return r->cpu_demand > 0 && r->cpu < TUNE_STARVED * r->cpu_demand;
}

/* A cell the recommendation may use: enough samples for its p99, a pool
 * that got the CPU, and arrivals kept up with. */
static bool usable(const tune_result *r)
{
    return tune_pct_valid(r, 0.99) && !tune_starved(r);
}

static bool busy_at_start(const tune_meta *m)
{
    return m->loadavg > m->cfg->max_load;
}

/* ---- recommendation ---- */

static bool meets(const tune_result *r, double target_us)
{
    return usable(r) && !r->overloaded && (target_us <= 0 || r->p99_us <= target_us);
}

/* Best throughput among the cells that meet the target; -1 if none. */
static int best_of(const tune_result *res, size_t n, double target_us)
{
    int best = -1;
    for (size_t i = 0; i < n; i++)
        if (meets(&res[i], target_us) && (best < 0 || res[i].throughput > res[best].throughput))
            best = (int)i;
    return best;
}

/* Smallest size within 5% of best (open loop: that kept up), then the
 * lowest p99 at that size. */
static int choose(const tune_result *res, size_t n, double target_us, int best, bool open)
{
    const double floor = WITHIN * res[best].throughput;
    int pick = -1;
    for (size_t i = 0; i < n; i++) {
        const tune_result *r = &res[i];
        if (!meets(r, target_us) || (!open && r->throughput < floor))
            continue;
        if (pick < 0 || r->size < res[pick].size ||
            (r->size == res[pick].size && r->p99_us < res[pick].p99_us))
            pick = (int)i;
    }
    return pick;
}

/* The lowest p99 among the usable cells; -1 if none. */
static int lowest_p99(const tune_result *res, size_t n)
{
    int low = -1;
    for (size_t i = 0; i < n; i++)
        if (usable(&res[i]) && (low < 0 || res[i].p99_us < res[low].p99_us))
            low = (int)i;
    return low;
}

static void say_pick(tune_pick *out, const tune_result *res, int best, double target_ms,
                     double offered)
{
    const tune_result *p = &res[out->index], *b = &res[best];
    char thr[32], p99[32], target[64] = "";
    tune_fmt_count(thr, sizeof thr, offered > 0 ? offered : b->throughput);
    tune_fmt_us(p99, sizeof p99, p->p99_us);
    if (target_ms > 0)
        snprintf(target, sizeof target, " %s --p99 %g ms", offered > 0 ? "within" :
                 "among the cells that meet", target_ms);
    if (offered > 0) {
        snprintf(out->sentence, sizeof out->sentence,
                 "Recommendation: %u routee%s with %s: the smallest pool that kept up with the "
                 "offered %s jobs/s%s, and the lowest p99 sojourn at that size (%s).", p->size,
                 p->size == 1 ? "" : "s", p->router.name, thr, target, p99);
        return;
    }
    snprintf(out->sentence, sizeof out->sentence,
             "Recommendation: %u routee%s with %s: the smallest pool within 5%% of the best "
             "throughput%s (%s jobs/s, %u routee%s with %s), and the lowest p99 sojourn at that "
             "size (%s).", p->size, p->size == 1 ? "" : "s", p->router.name, target, thr, b->size,
             b->size == 1 ? "" : "s", b->router.name, p99);
}

static void say_none_meets(tune_pick *out, const tune_result *res, size_t n, double target_ms,
                           bool open)
{
    const int low = lowest_p99(res, n), best = best_of(res, n, 0);
    char p99[32], fallback[256] = "";
    tune_fmt_us(p99, sizeof p99, res[low].p99_us);
    out->index = best < 0 ? -1 : choose(res, n, 0, best, open);
    if (out->index >= 0)
        snprintf(fallback, sizeof fallback, "; without the target the pick is %u routee%s with %s",
                 res[out->index].size, res[out->index].size == 1 ? "" : "s",
                 res[out->index].router.name);
    snprintf(out->sentence, sizeof out->sentence,
             "No pool size meets --p99 %g ms: the lowest p99 sojourn measured was %s "
             "(%u routee%s with %s)%s.", target_ms, p99, res[low].size,
             res[low].size == 1 ? "" : "s", res[low].router.name, fallback);
}

/* Nothing can be recommended: say why, from the most general reason. */
static void say_invalid(tune_pick *out, const tune_meta *m)
{
    char q[32];
    if (busy_at_start(m)) {
        snprintf(out->sentence, sizeof out->sentence,
                 "No recommendation: the load average was %.2f at the start, above --max-load "
                 "%g, so every cell measured a machine already busy with other work; run again "
                 "when it is quieter (or raise --max-load to accept it).", m->loadavg,
                 m->cfg->max_load);
        return;
    }
    char thin[128] = "", starved[128] = "";
    tune_fmt_count(q, sizeof q, tune_min_samples(0.99));
    if (out->thin)
        snprintf(thin, sizeof thin, "; %zu completed fewer than %s sojourns, too few for a p99 "
                 "(lengthen --duration)", out->thin, q);
    if (out->starved)
        snprintf(starved, sizeof starved, "; %zu %s starved of CPU (the machine was busy with "
                 "other work)", out->starved, out->starved == 1 ? "was" : "were");
    snprintf(out->sentence, sizeof out->sentence,
             "No recommendation: no cell's measurement holds%s%s.", thin, starved);
}

/* After an interrupted sweep, the sentence says what it came from (a
 * sentence too long for the buffer is cut, never overrun). */
static void mark_partial(tune_pick *out, size_t n, const tune_meta *m)
{
    static const char lead[] = "Recommendation: ";
    char was[sizeof out->sentence], from[128];
    memcpy(was, out->sentence, sizeof was);
    const bool pick = strncmp(was, lead, sizeof lead - 1) == 0;
    char rounds[48] = "";
    if (m->cfg->repeat > 1)
        snprintf(rounds, sizeof rounds, ", %u of %u rounds", n < m->planned ? 0 : m->rounds,
                 m->cfg->repeat);
    const int k = snprintf(from, sizeof from, "%s a partial sweep (interrupted: %zu of %zu "
                           "cells%s): ", pick ? "Recommendation from" : "From", n, m->planned,
                           rounds);
    const size_t head = k > 0 && (size_t)k < sizeof from ? (size_t)k : 0;
    const char *rest = pick ? was + sizeof lead - 1 : was;
    const size_t len = strlen(rest), room = sizeof out->sentence - 1 - head;
    memcpy(out->sentence, from, head);
    memcpy(out->sentence + head, rest, len < room ? len : room);
    out->sentence[head + (len < room ? len : room)] = '\0';
    out->partial = true;
}

static void count_invalid(tune_pick *out, const tune_result *res, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out->thin += !tune_pct_valid(&res[i], 0.99);
        out->starved += tune_starved(&res[i]);
    }
}

static void recommend(tune_pick *out, const tune_result *res, size_t n, const tune_meta *m)
{
    const tune_cfg *cfg = m->cfg;
    const double target_us = cfg->p99_ms * 1e3;
    const int best = best_of(res, n, target_us);
    if (n == 0) {
        snprintf(out->sentence, sizeof out->sentence,
                 "No cell was measured, so there is no recommendation.");
    } else if (busy_at_start(m) || lowest_p99(res, n) < 0) {
        say_invalid(out, m);
    } else if (best >= 0) {
        out->index = choose(res, n, target_us, best, m->open);
        out->met_target = true;
        say_pick(out, res, best, cfg->p99_ms, m->open ? m->rate : 0);
    } else if (target_us > 0) {
        say_none_meets(out, res, n, cfg->p99_ms, m->open);
    } else {
        snprintf(out->sentence, sizeof out->sentence,
                 "No recommendation: every pool size fell behind its arrivals; lower --load or "
                 "--rate, or try larger --routees.");
    }
}

void tune_recommend(tune_pick *out, const tune_result *res, size_t n, const tune_meta *m)
{
    *out = (tune_pick){.index = -1, .met_target = false};
    count_invalid(out, res, n);
    recommend(out, res, n, m);
    if (!m->complete)
        mark_partial(out, n, m);
}

/* ---- header and table ---- */

void tune_workload_label(char *buf, size_t len, const tune_cfg *cfg)
{
    const tune_work *w = &cfg->work;
    char mean[32];
    if (w->plugin) {
        snprintf(buf, len, "job %s%s%s%s", w->job_spec, w->job_arg ? " (--job-arg '" : "",
                 w->job_arg ? w->job_arg : "", w->job_arg ? "')" : "");
        return;
    }
    tune_fmt_us(mean, sizeof mean, tune_cost_mean_us(&w->cost));
    snprintf(buf, len, "%s (CPU spin, mean %s)", w->cost.spec, mean);
}

void tune_print_header(FILE *f, const tune_meta *m)
{
    const tune_cfg *cfg = m->cfg;
    char label[512], rate[32], cap[32];
    tune_workload_label(label, sizeof label, cfg);
    fprintf(f, "rp-tune %s (libroutepool %s): %u online CPU%s\n", RP_VERSION_STRING, rp_version(),
            cfg->cpus, cfg->cpus == 1 ? "" : "s");
    fprintf(f, "workload: %s\n", label);
    if (!cfg->work.plugin)
        fprintf(f, "          1 us of spin = %.0f loop iterations on this machine\n",
                cfg->work.iters_per_us);
    tune_fmt_count(rate, sizeof rate, m->rate);
    tune_fmt_count(cap, sizeof cap, m->capacity);
    if (!m->open)
        fprintf(f, "closed loop: %u jobs in flight, each finished job submits the next; "
                   "sojourn = submit to completion\n", m->clients);
    else if (m->capacity > 0)
        fprintf(f, "open loop: Poisson arrivals at %s jobs/s = %.2f x the measured capacity of %s "
                   "jobs/s\n           (closed loop, %u routees, smallest-mailbox+steal); "
                   "sojourn = scheduled arrival to completion\n", rate, cfg->load, cap,
                cfg->sizes[cfg->nsizes - 1]);
    else
        fprintf(f, "open loop: Poisson arrivals at %s jobs/s (--rate); sojourn = scheduled arrival "
                   "to completion\n", rate);
    fprintf(f, "cells: %zu size%s x %zu router%s, each a fresh pool: %.2g s warm-up, then %.2g s "
               "measured", cfg->nsizes, cfg->nsizes == 1 ? "" : "s", cfg->nrouters,
            cfg->nrouters == 1 ? "" : "s", m->warmup_s, cfg->duration_s);
    if (cfg->repeat > 1)
        fprintf(f, ";\n       %u rounds over every cell, each number the median of the rounds",
                cfg->repeat);
    if (m->loadavg >= 0)
        fprintf(f, "\nload average at start: %.2f (--max-load %g)%s", m->loadavg, cfg->max_load,
                busy_at_start(m) ? ": busy, nothing will be recommended" : "");
    fputs("\n\n", f);
}

/* A percentile, or "-" when too few samples hold it. */
static void fmt_pct(char *buf, size_t len, const tune_result *r, double q, double us)
{
    if (tune_pct_valid(r, q))
        tune_fmt_us(buf, len, us);
    else
        snprintf(buf, len, "-");
}

/* Why a row is not what it seems: too few jobs, starved, fell behind
 * (as many as apply, in that order). */
static void row_note(char *buf, size_t len, const tune_result *r)
{
    const char *notes[3];
    size_t n = 0, used = 0;
    if (!tune_pct_valid(r, 0.99))
        notes[n++] = "too few jobs";
    if (tune_starved(r))
        notes[n++] = "starved";
    if (r->overloaded)
        notes[n++] = "fell behind";
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "  ", notes[i]);
        if (w < 0 || used + (size_t)w >= len)
            break;
        used += (size_t)w;
    }
}

static void print_row(FILE *f, const tune_result *r, bool picked, bool spreads)
{
    char thr[32], p50[32], p99[32], p999[32], imb[16], spr[32] = "", note[48];
    tune_fmt_count(thr, sizeof thr, r->throughput);
    fmt_pct(p50, sizeof p50, r, 0.5, r->p50_us);
    fmt_pct(p99, sizeof p99, r, 0.99, r->p99_us);
    fmt_pct(p999, sizeof p999, r, 0.999, r->p999_us);
    if (r->imbalance < 0)
        snprintf(imb, sizeof imb, "-");
    else
        snprintf(imb, sizeof imb, "%.2f", r->imbalance);
    if (spreads)
        snprintf(spr, sizeof spr, " %5.0f%% %5.0f%%", 100 * r->thr_spread, 100 * r->p99_spread);
    const double stolen = r->jobs ? 100.0 * (double)r->stolen / (double)r->jobs : 0;
    row_note(note, sizeof note, r);
    fprintf(f, "%5u  %-23s %11s %10s %10s %10s %5.0f%% %9s %6.1f%%%s%s%s\n", r->size,
            r->router.name, thr, p50, p99, p999, 100 * r->cpu, imb, stolen, spr, note,
            picked ? "  <- recommended" : "");
}

static void print_legend(FILE *f, const tune_result *res, size_t n, const tune_meta *m)
{
    bool behind = false, thin = false, starved = false;
    for (size_t i = 0; i < n; i++) {
        behind = behind || res[i].overloaded;
        thin = thin || !tune_pct_valid(&res[i], 0.999);
        starved = starved || tune_starved(&res[i]);
    }
    fprintf(f, "\np50/p99/p99.9: sojourn percentiles; CPU: the pool's CPU time / (wall time x "
               "online CPUs);\nimbalance: deepest mailbox / mean mailbox, sampled every ms (1.00 = even, "
               "size = all on one);\nstolen: share of the jobs that work stealing moved to another "
               "routee.\n");
    if (m->rounds > 1)
        fprintf(f, "+-jobs/s, +-p99: spread over the %u rounds, (max - min) / median.\n",
                m->rounds);
    if (thin)
        fprintf(f, "-: too few sojourns for that percentile (p50 needs %u, p99 %u, p99.9 %u); "
                   "too few jobs:\nunder %u, so no p99 and never recommended.\n",
                tune_min_samples(0.5), tune_min_samples(0.99), tune_min_samples(0.999),
                tune_min_samples(0.99));
    if (starved)
        fprintf(f, "starved: the pool got under %.0f%% of the CPU its jobs asked for (the machine "
                   "was busy\nwith other work): never recommended.\n", 100 * TUNE_STARVED);
    if (behind)
        fprintf(f, "fell behind: the pool completed under 95%% of the window's arrivals, or jobs "
                   "were still queued\nhalf a window after it (aborted; their wait so far counts "
                   "in the percentiles).\n");
}

void tune_print_table(FILE *f, const tune_result *res, size_t n, const tune_pick *pick,
                      const tune_meta *m)
{
    const bool spreads = m->rounds > 1;
    fprintf(f, "%5s  %-23s %11s %10s %10s %10s %6s %9s %7s%s\n", "size", "router", "jobs/s", "p50",
            "p99", "p99.9", "CPU", "imbalance", "stolen", spreads ? " +-jobs/s  +-p99" : "");
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && res[i].size != res[i - 1].size)
            fputc('\n', f);
        print_row(f, &res[i], pick && (int)i == pick->index, spreads);
    }
    print_legend(f, res, n, m);
}

/* Rounds disagreeing by more than this are worth a warning. */
#define SPREAD_WARN 0.10

void tune_print_warnings(FILE *f, const tune_result *res, size_t n, const tune_meta *m)
{
    size_t thin = 0, starved = 0, wide = 0;
    for (size_t i = 0; i < n; i++) {
        thin += !tune_pct_valid(&res[i], 0.99);
        starved += tune_starved(&res[i]);
        wide += m->rounds > 1 && usable(&res[i]) &&
                (res[i].thr_spread > SPREAD_WARN || res[i].p99_spread > SPREAD_WARN);
    }
    if (busy_at_start(m))
        fprintf(f, "warning: the load average at the start was %.2f, above --max-load %g: the "
                   "machine was\nbusy, so nothing is recommended.\n", m->loadavg,
                m->cfg->max_load);
    if (thin)
        fprintf(f, "warning: %zu of %zu cells completed fewer than %u sojourns, too few for a p99; "
                   "they are\nnot recommended (lengthen --duration).\n", thin, n,
                tune_min_samples(0.99));
    if (starved)
        fprintf(f, "warning: %zu of %zu cells were starved of CPU (under %.0f%% of what their jobs "
                   "asked for);\nthey are not recommended (the machine is busy: run again when it "
                   "is quieter).\n", starved, n, 100 * TUNE_STARVED);
    if (wide)
        fprintf(f, "warning: in %zu cells the rounds disagreed by more than %.0f%% on jobs/s or "
                   "p99 (the +- columns):\ntreat differences between cells smaller than that as "
                   "noise.\n", wide, 100 * SPREAD_WARN);
    if (busy_at_start(m) || thin || starved || wide)
        fputc('\n', f);
}

/* ---- CSV ---- */

static double stolen_share(const tune_result *r)
{
    return r->jobs ? (double)r->stolen / (double)r->jobs : 0;
}

/* A percentile column: empty when too few samples hold it. */
static void csv_pct(FILE *f, const tune_result *r, double q, double us)
{
    if (tune_pct_valid(r, q))
        fprintf(f, ",%.3f", us);
    else
        fputc(',', f);
}

bool tune_write_csv(FILE *f, const tune_result *res, size_t n, const tune_meta *m)
{
    fprintf(f, "size,router,steal,throughput_jobs_s,p50_us,p99_us,p999_us,mean_us,cpu_util,"
               "imbalance,jobs,stolen,stolen_share,arrivals,unfinished,overloaded,samples,"
               "cpu_demand,starved,throughput_spread,p99_spread\n");
    for (size_t i = 0; i < n; i++) {
        const tune_result *r = &res[i];
        char imb[32] = "", demand[32] = "", thr_spr[32] = "", p99_spr[32] = "";
        if (r->imbalance >= 0)
            snprintf(imb, sizeof imb, "%.4f", r->imbalance);
        if (r->cpu_demand >= 0)
            snprintf(demand, sizeof demand, "%.4f", r->cpu_demand);
        if (m->rounds > 1) {
            snprintf(thr_spr, sizeof thr_spr, "%.4f", r->thr_spread);
            snprintf(p99_spr, sizeof p99_spr, "%.4f", r->p99_spread);
        }
        fprintf(f, "%u,%s,%d,%.1f", r->size, r->router.name, r->router.steal, r->throughput);
        csv_pct(f, r, 0.5, r->p50_us);
        csv_pct(f, r, 0.99, r->p99_us);
        csv_pct(f, r, 0.999, r->p999_us);
        fprintf(f, ",%.3f,%.4f,%s,%llu,%llu,%.4f,%llu,%llu,%d,%llu,%s,%d,%s,%s\n", r->mean_us,
                r->cpu, imb, (unsigned long long)r->jobs, (unsigned long long)r->stolen,
                stolen_share(r), (unsigned long long)r->arrivals,
                (unsigned long long)r->unfinished, r->overloaded, (unsigned long long)r->samples,
                demand, tune_starved(r), thr_spr, p99_spr);
    }
    return fflush(f) == 0 && !ferror(f);
}

/* ---- JSON ---- */

/* A number, or null when it is not one JSON can hold. */
static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.10g", v);
    else
        fputs("null", f);
}

static void json_key_num(FILE *f, const char *key, double v, bool present)
{
    fprintf(f, "  \"%s\": ", key);
    if (present)
        json_num(f, v);
    else
        fputs("null", f);
    fputs(",\n", f);
}

static void json_cell(FILE *f, const tune_result *r, bool spreads)
{
    fprintf(f, "    {\"size\": %u, \"router\": ", r->size);
    cli_json_str(f, r->router.name);
    fprintf(f, ", \"steal\": %s, \"throughput_jobs_s\": ", r->router.steal ? "true" : "false");
    json_num(f, r->throughput);
    const double v[] = {tune_pct_valid(r, 0.5) ? r->p50_us : NAN,
                        tune_pct_valid(r, 0.99) ? r->p99_us : NAN,
                        tune_pct_valid(r, 0.999) ? r->p999_us : NAN, r->mean_us, r->cpu,
                        r->cpu_demand >= 0 ? r->cpu_demand : NAN,
                        spreads ? r->thr_spread : NAN, spreads ? r->p99_spread : NAN};
    const char *k[] = {"p50_us", "p99_us", "p999_us", "mean_us", "cpu_util", "cpu_demand",
                       "throughput_spread", "p99_spread"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        fprintf(f, ", \"%s\": ", k[i]);
        json_num(f, v[i]);
    }
    fprintf(f, ", \"samples\": %llu, \"starved\": %s", (unsigned long long)r->samples,
            tune_starved(r) ? "true" : "false");
    fputs(", \"imbalance\": ", f);
    json_num(f, r->imbalance >= 0 ? r->imbalance : NAN);
    fprintf(f, ", \"jobs\": %llu, \"stolen\": %llu, \"stolen_share\": ",
            (unsigned long long)r->jobs, (unsigned long long)r->stolen);
    json_num(f, stolen_share(r));
    fprintf(f, ", \"arrivals\": %llu, \"unfinished\": %llu, \"overloaded\": %s}",
            (unsigned long long)r->arrivals, (unsigned long long)r->unfinished,
            r->overloaded ? "true" : "false");
}

static void json_workload(FILE *f, const tune_cfg *cfg)
{
    fputs("  \"workload\": {", f);
    if (cfg->work.plugin) {
        fputs("\"job\": ", f);
        cli_json_str(f, cfg->work.job_spec);
        fputs(", \"job_arg\": ", f);
        if (cfg->work.job_arg)
            cli_json_str(f, cfg->work.job_arg);
        else
            fputs("null", f);
    } else {
        fputs("\"cost\": ", f);
        cli_json_str(f, cfg->work.cost.spec);
        fputs(", \"mean_us\": ", f);
        json_num(f, tune_cost_mean_us(&cfg->work.cost));
        fputs(", \"spin_iters_per_us\": ", f);
        json_num(f, cfg->work.iters_per_us);
    }
    fputs("},\n", f);
}

static void json_pick(FILE *f, const tune_result *res, const tune_pick *pick)
{
    fputs("  \"recommendation\": {\"size\": ", f);
    if (pick->index >= 0) {
        fprintf(f, "%u, \"router\": ", res[pick->index].size);
        cli_json_str(f, res[pick->index].router.name);
    } else {
        fputs("null, \"router\": null", f);
    }
    fprintf(f, ", \"met_target\": %s, \"partial\": %s, \"sentence\": ",
            pick->met_target ? "true" : "false", pick->partial ? "true" : "false");
    cli_json_str(f, pick->sentence);
    fputs("}\n", f);
}

bool tune_write_json(FILE *f, const tune_meta *m, const tune_result *res, size_t n,
                     const tune_pick *pick)
{
    const tune_cfg *cfg = m->cfg;
    fprintf(f, "{\n  \"tool\": \"rp-tune\",\n  \"version\": \"%s\",\n  \"libroutepool\": ",
            RP_VERSION_STRING);
    cli_json_str(f, rp_version());
    fprintf(f, ",\n  \"cpus\": %u,\n", cfg->cpus);
    json_workload(f, cfg);
    fprintf(f, "  \"mode\": \"%s\",\n", m->open ? "open" : "closed");
    json_key_num(f, "clients", m->clients, !m->open);
    json_key_num(f, "load", cfg->load, m->open && cfg->load > 0);
    json_key_num(f, "capacity_jobs_s", m->capacity, m->open && m->capacity > 0);
    json_key_num(f, "rate_jobs_s", m->rate, m->open);
    json_key_num(f, "duration_s", cfg->duration_s, true);
    json_key_num(f, "warmup_s", m->warmup_s, true);
    fprintf(f, "  \"seed\": %llu,\n  \"repeat\": %u,\n  \"rounds\": %u,\n",
            (unsigned long long)cfg->seed, cfg->repeat, n ? m->rounds : 0);
    json_key_num(f, "p99_target_ms", cfg->p99_ms, cfg->p99_ms > 0);
    json_key_num(f, "load_average", m->loadavg, m->loadavg >= 0);
    json_key_num(f, "max_load", cfg->max_load, true);
    fprintf(f, "  \"busy\": %s,\n", busy_at_start(m) ? "true" : "false");
    fprintf(f, "  \"cells_planned\": %zu,\n  \"complete\": %s,\n  \"cells\": [\n", m->planned,
            m->complete ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        json_cell(f, &res[i], n && m->rounds > 1);
        fputs(i + 1 < n ? ",\n" : "\n", f);
    }
    fputs("  ],\n", f);
    json_pick(f, res, pick);
    fputs("}\n", f);
    return fflush(f) == 0 && !ferror(f);
}
