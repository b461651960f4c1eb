/* SPDX-License-Identifier: MIT */
/*
 * tools/profile_report.c - the text and JSON reports of rp-profile.
 *
 * Both say the same things in the same order: the trace, one row per
 * routee, the imbalance over time (all samples, then only the samples with
 * queued jobs, because idle stretches count as perfectly even and would
 * otherwise dilute the average), the worst windows and the hot routee.
 * Times are the trace's own timestamps, so a window found here is at the
 * same place on Perfetto's timeline.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "profile_json.h"
#include "profile_report.h"
#include "routepool/routepool.h"

/* ---- text ---- */

static void text_header(FILE *f, const pr_input *in)
{
    const pt_trace *t = in->trace;
    const pt_report *r = in->report;

    fprintf(f, "rp-profile: %s\n", in->path);
    fprintf(f, "pool \"%s\": %u routees, %zu samples", t->pool ? t->pool : "?", r->n, r->samples);
    if (t->interval_us > 0)
        fprintf(f, " every %.0f us", t->interval_us);
    fprintf(f, " over %.1f ms (%.1f .. %.1f ms)", r->duration_us / 1e3, r->t0_us / 1e3,
            r->t1_us / 1e3);
    if (t->has_meta)
        fprintf(f, ", %" PRIu64 " events lost", t->lost_events);
    fprintf(f, "\n%" PRIu64 " sampled job slices, %" PRIu64 " steal events\n", t->slices,
            t->steal_events);
    if (t->lost_events > 0 && r->n && r->routee[0].jobs_exact)
        fprintf(f, "note: the trace lost %" PRIu64 " slice/steal events (full rings): the "
                   "sampled estimates are undercounted, the exact counts are not\n",
                t->lost_events);
    else if (t->lost_events > 0)
        fprintf(f, "note: the trace lost %" PRIu64 " slice/steal events (full rings): job "
                   "shares and steals are undercounted\n", t->lost_events);
}

void pr_format_us(char *out, size_t cap, double us)
{
    if (us >= 10000.0)
        snprintf(out, cap, "%.1f ms", us / 1000.0);
    else
        snprintf(out, cap, "%.1f us", us);
}

static void text_routees(FILE *f, const pr_input *in)
{
    const pt_report *r = in->report;
    const bool slices = in->trace->slices > 0;
    const bool exact = r->n && r->routee[0].jobs_exact;

    fprintf(f, "\n%-7s %10s %9s %6s %15s %10s %11s %7s %11s\n", "routee", "mean depth",
            "max depth", "busy", exact ? "jobs run" : "jobs run*", "mean job*", "mean wait*",
            "stole", "stolen from");
    for (unsigned i = 0; i < r->n; i++) {
        const pt_routee_stats *s = &r->routee[i];
        char name[16], busy[16] = "-", jobs[32] = "-", job_us[24] = "-", wait_us[24] = "-";
        snprintf(name, sizeof name, "r%u%s", i, r->hot == (int)i ? " hot" : "");
        if (in->trace->busy_points)
            snprintf(busy, sizeof busy, "%.1f%%", s->utilisation * 100);
        if (exact || slices)
            snprintf(jobs, sizeof jobs, "%" PRIu64 " %5.1f%%", s->jobs_run, s->job_share * 100);
        if (s->ev.slices) {
            pr_format_us(job_us, sizeof job_us, s->mean_job_us);
            pr_format_us(wait_us, sizeof wait_us, s->mean_wait_us);
        }
        fprintf(f, "%-7s %10.1f %9.0f %6s %15s %10s %11s %7" PRIu64 " %11" PRIu64 "\n", name,
                s->mean_depth, s->max_depth, busy, jobs, job_us, wait_us, s->ev.stole,
                s->ev.stolen_from);
    }
    if (exact)
        fprintf(f, "jobs run, stole, stolen from: exact counts over the trace\n");
    if (slices)
        fprintf(f, "* from the sampled job slices (one job in N per mailbox): estimates\n");
    else
        fprintf(f, "* no job slices in the trace (traced with job_sample 0)\n");
}

static void text_row(FILE *f, const char *label, double all, double loaded, size_t nloaded)
{
    if (nloaded)
        fprintf(f, "  %-14s %22.2f %22.2f\n", label, all, loaded);
    else
        fprintf(f, "  %-14s %22.2f %22s\n", label, all, "-");
}

static void text_imbalance(FILE *f, const pt_report *r)
{
    char all[32], loaded[40];

    snprintf(all, sizeof all, "all %zu samples", r->samples);
    snprintf(loaded, sizeof loaded, "%zu with queued jobs", r->loaded_samples);
    fprintf(f, "\nimbalance of queued depth across routees (time-weighted means)\n");
    fprintf(f, "  %-14s %22s %22s\n", "", all, loaded);
    text_row(f, "max/mean", r->all.max_over_mean, r->loaded.max_over_mean, r->loaded_samples);
    text_row(f, "CV", r->all.cv, r->loaded.cv, r->loaded_samples);
    text_row(f, "Jain's index", r->all.jain, r->loaded.jain, r->loaded_samples);
    fprintf(f, "  even: max/mean 1, CV 0, Jain 1; all queued jobs on one routee: max/mean %u, "
               "Jain %.2f\n", r->n, 1.0 / r->n);
}

static void text_worst(FILE *f, const pt_report *r)
{
    if (r->nworst == 0 && r->loaded_samples > 0)
        return; /* --worst 0 */
    fprintf(f, "\nworst %.4g ms windows (by max/mean of the routees' mean depths; %zu windows)\n",
            r->window_us / 1e3, r->nwindows);
    if (r->nworst == 0) {
        fprintf(f, "  none: no queued jobs in the whole trace\n");
        return;
    }
    fprintf(f, "  %9s %9s %9s %6s %6s %11s  %s\n", "from ms", "to ms", "max/mean", "CV", "Jain",
            "mean depth", "deepest (mean depth)");
    for (size_t k = 0; k < r->nworst; k++) {
        const pt_window *w = &r->worst[k];
        fprintf(f, "  %9.1f %9.1f %9.2f %6.2f %6.2f %11.1f  r%u (%.1f)\n", w->start_us / 1e3,
                w->end_us / 1e3, w->imb.max_over_mean, w->imb.cv, w->imb.jain, w->mean_depth,
                w->deepest, w->deepest_depth);
    }
}

static void text_hot(FILE *f, const pt_report *r)
{
    const pt_routee_stats *top = r->deepest >= 0 ? &r->routee[r->deepest] : NULL;
    const pt_routee_stats *next = r->runner_up >= 0 ? &r->routee[r->runner_up] : NULL;

    if (!top || !next) {
        fprintf(f, "\nhot routee: none (one routee)\n");
        return;
    }
    if (r->hot >= 0 && r->hot_ratio > 0)
        fprintf(f, "\nhot routee: r%d - mean depth %.1f, %.1fx the next deepest (r%d, %.1f)\n",
                r->hot, top->mean_depth, r->hot_ratio, r->runner_up, next->mean_depth);
    else if (r->hot >= 0)
        fprintf(f, "\nhot routee: r%d - mean depth %.1f, every other routee 0\n", r->hot,
                top->mean_depth);
    else
        fprintf(f, "\nhot routee: none - the deepest, r%d (mean depth %.1f), against the next "
                   "(r%d, %.1f); hot takes %.0fx the next and %.1f jobs\n", r->deepest,
                top->mean_depth, r->runner_up, next->mean_depth, PT_HOT_FACTOR,
                PT_HOT_MIN_DEPTH);
}

int pr_write_text(FILE *f, const pr_input *in)
{
    text_header(f, in);
    text_routees(f, in);
    text_imbalance(f, in->report);
    text_worst(f, in->report);
    text_hot(f, in->report);
    return ferror(f) ? -1 : 0;
}

/* ---- JSON ---- */

/* A JSON string.  s is UTF-8 when it came from the trace (the parser
 * checked it), but a path from the command line may be any bytes: invalid
 * sequences become U+FFFD so the output stays valid JSON. */
static void json_str(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    const unsigned char *const end = p + strlen((const char *)p);

    fputc('"', f);
    while (p < end) {
        const size_t n = *p < 0x80 ? 1 : pj_utf8_len(p, end);
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else if (n == 0)
            fputs("\\ufffd", f);
        else
            fwrite(p, 1, n, f);
        p += n ? n : 1;
    }
    fputc('"', f);
}

/* A number, or null when it is not finite (JSON has no NaN or Infinity). */
static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.10g", v);
    else
        fputs("null", f);
}

static void json_key_num(FILE *f, const char *key, double v, bool comma)
{
    fprintf(f, "\"%s\":", key);
    json_num(f, v);
    if (comma)
        fputc(',', f);
}

static void json_trace(FILE *f, const pr_input *in)
{
    const pt_trace *t = in->trace;
    const pt_report *r = in->report;

    fputs("\"trace\":{\"path\":", f);
    json_str(f, in->path);
    fputs(",\"pool\":", f);
    if (t->pool)
        json_str(f, t->pool);
    else
        fputs("null", f);
    fprintf(f, ",\"routees\":%u,", r->n);
    json_key_num(f, "interval_us", t->interval_us > 0 ? t->interval_us : NAN, true);
    fprintf(f, "\"samples\":%zu,\"loaded_samples\":%zu,", r->samples, r->loaded_samples);
    json_key_num(f, "start_us", r->t0_us, true);
    json_key_num(f, "end_us", r->t1_us, true);
    json_key_num(f, "duration_us", r->duration_us, true);
    fprintf(f, "\"events\":%" PRIu64 ",\"job_slices\":%" PRIu64 ",\"steal_events\":%" PRIu64
               ",\"lost_events\":", t->events, t->slices, t->steal_events);
    if (t->has_meta)
        fprintf(f, "%" PRIu64 "}", t->lost_events);
    else
        fputs("null}", f);
}

static void json_routee(FILE *f, const pt_trace *t, const pt_report *r, unsigned i)
{
    const pt_routee_stats *s = &r->routee[i];

    fprintf(f, "{\"routee\":%u,", i);
    json_key_num(f, "mean_depth", s->mean_depth, true);
    json_key_num(f, "max_depth", s->max_depth, true);
    json_key_num(f, "utilisation", t->busy_points ? s->utilisation : NAN, true);
    fprintf(f, "\"job_slices\":%" PRIu64 ",", s->ev.slices);
    fprintf(f, "\"jobs_run\":%" PRIu64 ",\"jobs_exact\":%s,", s->jobs_run,
            s->jobs_exact ? "true" : "false");
    json_key_num(f, "job_share", s->job_share, true);
    json_key_num(f, "mean_job_us", s->mean_job_us, true);
    json_key_num(f, "mean_wait_us", s->mean_wait_us, true);
    fprintf(f, "\"stole\":%" PRIu64 ",\"stolen_from\":%" PRIu64 "}", s->ev.stole,
            s->ev.stolen_from);
}

static void json_imbalance(FILE *f, const pt_imbalance *imb, bool comma)
{
    json_key_num(f, "max_over_mean_mean", imb->max_over_mean, true);
    json_key_num(f, "cv_mean", imb->cv, true);
    json_key_num(f, "jain_mean", imb->jain, comma);
}

static void json_window(FILE *f, const pt_window *w)
{
    fputc('{', f);
    json_key_num(f, "start_us", w->start_us, true);
    json_key_num(f, "end_us", w->end_us, true);
    json_key_num(f, "max_over_mean", w->imb.max_over_mean, true);
    json_key_num(f, "cv", w->imb.cv, true);
    json_key_num(f, "jain", w->imb.jain, true);
    json_key_num(f, "mean_depth", w->mean_depth, true);
    fprintf(f, "\"deepest_routee\":%u,", w->deepest);
    json_key_num(f, "deepest_mean_depth", w->deepest_depth, true);
    fprintf(f, "\"samples\":%zu}", w->samples);
}

static void json_optional_index(FILE *f, const char *key, int v)
{
    if (v >= 0)
        fprintf(f, "\"%s\":%d,", key, v);
    else
        fprintf(f, "\"%s\":null,", key);
}

static void json_hot(FILE *f, const pt_report *r)
{
    json_optional_index(f, "hot_routee", r->hot);
    json_optional_index(f, "deepest_routee", r->deepest);
    json_optional_index(f, "runner_up_routee", r->runner_up);
    json_key_num(f, "hot_ratio", r->hot_ratio > 0 ? r->hot_ratio : NAN, true);
    fputs("\"hot_rule\":{", f);
    json_key_num(f, "factor", PT_HOT_FACTOR, true);
    json_key_num(f, "min_mean_depth", PT_HOT_MIN_DEPTH, false);
    fputs("},", f);
}

int pr_write_json(FILE *f, const pr_input *in)
{
    const pt_report *r = in->report;

    fputs("{\"tool\":\"rp-profile\",\"version\":", f);
    json_str(f, rp_version());
    fputs(",\n", f);
    json_trace(f, in);
    fputs(",\n\"routees\":[", f);
    for (unsigned i = 0; i < r->n; i++) {
        fputs(i ? ",\n  " : "\n  ", f);
        json_routee(f, in->trace, r, i);
    }
    fputs("],\n", f);
    json_imbalance(f, &r->all, true);
    fprintf(f, "\n\"loaded\":{\"samples\":%zu,", r->loaded_samples);
    if (r->loaded_samples)
        json_imbalance(f, &r->loaded, false);
    else
        fputs("\"max_over_mean_mean\":null,\"cv_mean\":null,\"jain_mean\":null", f);
    fputs("},\n", f);
    json_hot(f, r);
    fputc('\n', f);
    json_key_num(f, "window_us", r->window_us, true);
    fprintf(f, "\"windows\":%zu,\n\"worst_intervals\":[", r->nwindows);
    for (size_t k = 0; k < r->nworst; k++) {
        fputs(k ? ",\n  " : "\n  ", f);
        json_window(f, &r->worst[k]);
    }
    fputs("]}\n", f);
    return ferror(f) ? -1 : 0;
}
