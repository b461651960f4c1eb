/* SPDX-License-Identifier: MIT */
/*
 * tools/profile_svg.c - rp-profile's HTML and SVG reports.
 *
 * Self-contained: inline SVG and CSS, no script, no fonts or images
 * fetched, so the file opens the same offline, in a mail attachment or in
 * a CI artefact viewer.  Two charts, drawn from the report's column series
 * (at most a few hundred columns whatever the trace length):
 *   heatmap  one row per routee, one column per time slice, coloured by
 *            that routee's mean queued depth in the slice (0 is grey; a
 *            sequential yellow-to-red scale up to the deepest cell);
 *            neighbouring cells of one colour are merged into one rect;
 *   lines    mean queued depth over time, one line per routee (the 16
 *            deepest when there are more than 32), the hot one thicker.
 * Hovering a cell or a line shows its routee and value (SVG <title>).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile_report.h"

#define LEFT 56          /* routee labels / y axis */
#define PLOT_W 940
#define RIGHT 24
#define WIDTH (LEFT + PLOT_W + RIGHT)
#define AXIS_H 30        /* time axis under a chart */
#define LEGEND_H 34
#define LINES_H 260
#define LEVELS 64        /* colour steps of the heatmap */
#define LINES_ALL 32     /* draw every routee up to this many */
#define LINES_TOP 16     /* else the deepest this many */

static const char *const CATEGORY[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                       "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define NCATEGORY (sizeof CATEGORY / sizeof CATEGORY[0])

/* ---- helpers ---- */

static void html_str(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A step of 1, 2 or 5 x 10^k that cuts span into at most max_ticks. */
static double nice_step(double span, int max_ticks)
{
    const double raw = span / max_ticks, mag = pow(10, floor(log10(raw)));
    static const double m[] = {1, 2, 5, 10};

    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (m[i] * mag >= raw)
            return m[i] * mag;
    return 10 * mag;
}

/* v rounded up to a whole number of nice_step(v, 5). */
static double nice_ceil(double v)
{
    const double step = nice_step(v, 5);
    return ceil(v / step - 1e-9) * step;
}

static double x_of(const pt_report *r, double ts)
{
    return LEFT + (ts - r->t0_us) / r->duration_us * PLOT_W;
}

/* Yellow-orange-red (ColorBrewer YlOrRd) at level 1..LEVELS; grey at 0. */
static void level_colour(char out[8], int level)
{
    static const unsigned char stops[][3] = {
        {255, 255, 204}, {254, 217, 118}, {253, 141, 60}, {227, 26, 28}, {128, 0, 38}};
    const double pos = (double)(level - 1) / (LEVELS - 1) * 4.0;
    const int k = pos >= 4.0 ? 3 : (int)pos;
    const double u = pos - k;
    unsigned char c[3];

    if (level <= 0) {
        snprintf(out, 8, "#eeeeee");
        return;
    }
    for (int j = 0; j < 3; j++)
        c[j] = (unsigned char)lround(stops[k][j] + (stops[k + 1][j] - stops[k][j]) * u);
    snprintf(out, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
}

static int level_of(double v, double max)
{
    if (v <= 0 || max <= 0)
        return 0;
    const int l = (int)ceil(v / max * LEVELS);
    return l < 1 ? 1 : l > LEVELS ? LEVELS : l;
}

/* Ticks and labels of the time axis at y (ms on the trace's timeline). */
static void time_axis(FILE *f, const pt_report *r, int y)
{
    const double step = nice_step(r->duration_us / 1e3, 10) * 1e3;

    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", LEFT, y,
            LEFT + PLOT_W, y);
    for (double t = ceil(r->t0_us / step) * step; t <= r->t1_us + 1e-6; t += step) {
        const double x = x_of(r, t);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#888\"/>"
                   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                x, y, x, y + 4, x, y + 16, t / 1e3);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">ms</text>\n", LEFT + PLOT_W,
            y + 28);
}

/* ---- heatmap ---- */

static int row_height(const pt_report *r)
{
    const int h = 320 / (int)r->n;
    return h < 2 ? 2 : h > 28 ? 28 : h;
}

static int heatmap_height(const pt_report *r)
{
    return 8 + (int)r->n * row_height(r) + AXIS_H + LEGEND_H;
}

/* One row: runs of equal colour as single rects. */
static void heat_row(FILE *f, const pt_report *r, unsigned i, int y, int h)
{
    size_t b = 0;
    char colour[8];

    while (b < r->buckets) {
        const int level = level_of(r->bucket_depth[b * r->n + i], r->bucket_depth_max);
        size_t e = b + 1;
        double peak = r->bucket_depth[b * r->n + i];
        while (e < r->buckets &&
               level_of(r->bucket_depth[e * r->n + i], r->bucket_depth_max) == level)
            peak = fmax(peak, r->bucket_depth[e++ * r->n + i]);
        level_colour(colour, level);
        const double x0 = x_of(r, r->bucket_start_us[b]), x1 = x_of(r, r->bucket_start_us[e]);
        fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\">"
                   "<title>r%u, %.1f-%.1f ms: depth up to %.1f</title></rect>\n",
                x0, y, x1 - x0 + 0.3, h, colour, i, r->bucket_start_us[b] / 1e3,
                r->bucket_start_us[e] / 1e3, peak);
        b = e;
    }
}

static void heat_legend(FILE *f, const pt_report *r, int y)
{
    char colour[8];

    fputs("<defs><linearGradient id=\"heat\">", f);
    for (int l = 1; l <= LEVELS; l += 9) {
        level_colour(colour, l);
        fprintf(f, "<stop offset=\"%.3f\" stop-color=\"%s\"/>", (double)(l - 1) / (LEVELS - 1),
                colour);
    }
    level_colour(colour, LEVELS);
    fprintf(f, "<stop offset=\"1\" stop-color=\"%s\"/></linearGradient></defs>\n", colour);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"12\" fill=\"#eeeeee\"/>"
               "<text x=\"%d\" y=\"%d\">0</text>\n", LEFT, y, LEFT + 18, y + 10);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"240\" height=\"12\" fill=\"url(#heat)\"/>"
               "<text x=\"%d\" y=\"%d\">&gt;0</text><text x=\"%d\" y=\"%d\">%.1f queued jobs "
               "(mean per column)</text>\n",
            LEFT + 40, y, LEFT + 40, y + 24, LEFT + 284, y + 10, r->bucket_depth_max);
}

static void write_heatmap(FILE *f, const pr_input *in, int x, int y)
{
    const pt_report *r = in->report;
    const int h = row_height(r), rows = (int)r->n * h;
    const unsigned label_every = h >= 10 ? 1 : (unsigned)(10 + h - 1) / (unsigned)h;

    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" x=\"%d\" y=\"%d\" "
               "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
               "font-size=\"11\">\n", x, y, WIDTH, heatmap_height(r), WIDTH, heatmap_height(r));
    for (unsigned i = 0; i < r->n; i++) {
        const int ry = 8 + (int)i * h;
        heat_row(f, r, i, ry, h);
        if (i % label_every == 0)
            fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\""
                       "%s>r%u</text>\n", LEFT - 6, ry + h / 2.0,
                    r->hot == (int)i ? " font-weight=\"bold\" fill=\"#b00\"" : "", i);
    }
    time_axis(f, r, 8 + rows);
    heat_legend(f, r, 8 + rows + AXIS_H);
    fputs("</svg>\n", f);
}

/* ---- lines ---- */

/* The routees drawn as lines, deepest last so they are on top. */
static unsigned pick_lines(const pt_report *r, unsigned *idx)
{
    unsigned n = r->n;

    for (unsigned i = 0; i < n; i++)
        idx[i] = i;
    if (n <= LINES_ALL)
        return n;
    /* Selection of the LINES_TOP deepest (n is at most a few thousand). */
    for (unsigned k = 0; k < LINES_TOP; k++)
        for (unsigned j = k + 1; j < n; j++)
            if (r->routee[idx[j]].mean_depth > r->routee[idx[k]].mean_depth) {
                const unsigned t = idx[k];
                idx[k] = idx[j];
                idx[j] = t;
            }
    return LINES_TOP;
}

static int lines_legend_rows(const pt_report *r)
{
    const unsigned drawn = r->n <= LINES_ALL ? r->n : LINES_TOP;
    return (int)(drawn + 11) / 12;
}

static int lines_height(const pt_report *r)
{
    return 10 + LINES_H + AXIS_H + 8 + 18 * lines_legend_rows(r);
}

static void y_axis(FILE *f, double ymax, int top)
{
    const double step = nice_step(ymax, 5);

    for (double v = 0; v <= ymax + 1e-9; v += step) {
        const double y = top + LINES_H - v / ymax * LINES_H;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\">"
                   "%g</text>\n", LEFT, y, LEFT + PLOT_W, y, LEFT - 6, y, v);
    }
    fprintf(f, "<text x=\"12\" y=\"%d\" transform=\"rotate(-90 12 %d)\" text-anchor=\"middle\">"
               "queued jobs</text>\n", top + LINES_H / 2, top + LINES_H / 2);
}

static void line_of(FILE *f, const pt_report *r, unsigned i, const char *colour, double ymax,
                    int top)
{
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" "
               "stroke-linejoin=\"round\" points=\"", colour, r->hot == (int)i ? "2.5" : "1.3");
    for (size_t b = 0; b < r->buckets; b++) {
        const double mid = (r->bucket_start_us[b] + r->bucket_start_us[b + 1]) / 2;
        const double v = r->bucket_depth[b * r->n + i];
        fprintf(f, "%s%.1f,%.1f", b ? " " : "", x_of(r, mid), top + LINES_H - v / ymax * LINES_H);
    }
    fprintf(f, "\"><title>r%u: mean depth %.1f</title></polyline>\n", i,
            r->routee[i].mean_depth);
}

static void lines_legend(FILE *f, const pt_report *r, const unsigned *idx, unsigned drawn, int y)
{
    for (unsigned k = 0; k < drawn; k++) {
        const unsigned i = idx[k];
        const int lx = LEFT + (int)(k % 12) * 78, ly = y + (int)(k / 12) * 18;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/>"
                   "<text x=\"%d\" y=\"%d\"%s>r%u%s</text>\n", lx, ly + 4,
                CATEGORY[i % NCATEGORY], lx + 18, ly + 9,
                r->hot == (int)i ? " font-weight=\"bold\" fill=\"#b00\"" : "", i,
                r->hot == (int)i ? " (hot)" : "");
    }
}

static void write_lines(FILE *f, const pr_input *in, int x, int y)
{
    const pt_report *r = in->report;
    unsigned *idx = malloc(r->n * sizeof *idx);
    const double ymax = nice_ceil(fmax(r->bucket_depth_max, 1.0));
    const int top = 10;

    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" x=\"%d\" y=\"%d\" "
               "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
               "font-size=\"11\">\n", x, y, WIDTH, lines_height(r), WIDTH, lines_height(r));
    y_axis(f, ymax, top);
    time_axis(f, r, top + LINES_H);
    if (idx) {
        const unsigned drawn = pick_lines(r, idx);
        for (unsigned k = drawn; k-- > 0;)
            line_of(f, r, idx[k], CATEGORY[idx[k] % NCATEGORY], ymax, top);
        lines_legend(f, r, idx, drawn, top + LINES_H + AXIS_H + 6);
    }
    fputs("</svg>\n", f);
    free(idx);
}

/* ---- HTML ---- */

static const char CSS[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px 32px;"
    "color:#222;max-width:1100px}\n"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}\n"
    ".meta{color:#555;margin:0 0 12px}\n"
    ".banner{padding:8px 12px;border-radius:4px;background:#eef4ea;border:1px solid #b9d3ad}\n"
    ".banner.hot{background:#fdecea;border-color:#e9a79f}\n"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums}\n"
    "th,td{padding:3px 10px;text-align:right;border-bottom:1px solid #e3e3e3}\n"
    "th{background:#f4f4f4;font-weight:600}td:first-child,th:first-child{text-align:left}\n"
    "tr.hot td{background:#fdecea;font-weight:600}\n"
    ".note{color:#666;font-size:13px;max-width:900px}\n"
    "svg.chart{display:block}\n";

static void html_head(FILE *f, const pr_input *in)
{
    const pt_trace *t = in->trace;
    const pt_report *r = in->report;

    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>rp-profile: "
          "pool ", f);
    html_str(f, t->pool ? t->pool : "?");
    fprintf(f, "</title>\n<style>\n%s</style></head>\n<body>\n<h1>routepool balance: pool "
               "&quot;", CSS);
    html_str(f, t->pool ? t->pool : "?");
    fputs("&quot;</h1>\n<p class=\"meta\">", f);
    html_str(f, in->path);
    fprintf(f, " &middot; %u routees &middot; %zu samples", r->n, r->samples);
    if (t->interval_us > 0)
        fprintf(f, " every %.0f &micro;s", t->interval_us);
    fprintf(f, " over %.1f ms &middot; %" PRIu64 " sampled job slices &middot; %" PRIu64
               " steal events", r->duration_us / 1e3, t->slices, t->steal_events);
    if (t->has_meta)
        fprintf(f, " &middot; %" PRIu64 " events lost", t->lost_events);
    fputs("</p>\n", f);
}

static void html_hot(FILE *f, const pt_report *r)
{
    if (r->hot >= 0) {
        fprintf(f, "<p class=\"banner hot\"><b>Hot routee: r%d</b> &mdash; mean depth %.1f",
                r->hot, r->routee[r->hot].mean_depth);
        if (r->hot_ratio > 0)
            fprintf(f, ", %.1f&times; the next deepest (r%d, %.1f)", r->hot_ratio, r->runner_up,
                    r->routee[r->runner_up].mean_depth);
        fputs(".</p>\n", f);
    } else if (r->runner_up >= 0) {
        fprintf(f, "<p class=\"banner\">No hot routee: the deepest, r%d (mean depth %.1f), "
                   "against the next, r%d (%.1f); hot takes %.0f&times; the next and %.1f "
                   "jobs.</p>\n", r->deepest, r->routee[r->deepest].mean_depth, r->runner_up,
                r->routee[r->runner_up].mean_depth, PT_HOT_FACTOR, PT_HOT_MIN_DEPTH);
    }
}

static void html_routee_row(FILE *f, const pr_input *in, unsigned i, bool slices)
{
    const pt_report *r = in->report;
    const pt_routee_stats *s = &r->routee[i];

    fprintf(f, "<tr%s><td>r%u%s</td><td>%.1f</td><td>%.0f</td>",
            r->hot == (int)i ? " class=\"hot\"" : "", i, r->hot == (int)i ? " (hot)" : "",
            s->mean_depth, s->max_depth);
    if (in->trace->busy_points)
        fprintf(f, "<td>%.1f%%</td>", s->utilisation * 100);
    else
        fputs("<td>-</td>", f);
    if (slices || s->jobs_exact)
        fprintf(f, "<td>%" PRIu64 "</td><td>%.1f%%</td>", s->jobs_run, s->job_share * 100);
    else
        fputs("<td>-</td><td>-</td>", f);
    if (s->ev.slices) {
        char job[24], wait[24];
        pr_format_us(job, sizeof job, s->mean_job_us);
        pr_format_us(wait, sizeof wait, s->mean_wait_us);
        fprintf(f, "<td>%s</td><td>%s</td>", job, wait);
    } else {
        fputs("<td>-</td><td>-</td>", f);
    }
    fprintf(f, "<td>%" PRIu64 "</td><td>%" PRIu64 "</td></tr>\n", s->ev.stole, s->ev.stolen_from);
}

static void html_routees(FILE *f, const pr_input *in)
{
    const pt_report *r = in->report;
    const bool slices = in->trace->slices > 0;

    const bool exact = r->n && r->routee[0].jobs_exact;

    fprintf(f, "<h2>Per routee</h2>\n<table><tr><th>routee</th><th>mean depth</th>"
               "<th>max depth</th><th>busy</th><th>%s</th><th>share of jobs</th>"
               "<th>mean job</th><th>mean wait</th><th>stole</th><th>stolen from</th></tr>\n",
            exact ? "jobs run" : "job slices");
    for (unsigned i = 0; i < r->n; i++)
        html_routee_row(f, in, i, slices);
    fprintf(f, "</table>\n<p class=\"note\">Mean depth and busy are time-weighted over the "
               "samples. %s Job slices are sampled (one job in N per mailbox), so the mean job "
               "time and the mean wait are estimates. Steals count jobs.</p>\n",
            exact ? "Jobs run, their share and the steals are exact counts over the trace."
                  : "The trace has no exact counts: the share of jobs is estimated from the "
                    "sampled slices.");
}

/* One row: label, all samples, loaded samples ("-" when none), even, worst. */
static void html_imbalance_row(FILE *f, const pt_report *r, const char *label, double all,
                               double loaded, const char *even, double worst)
{
    fprintf(f, "<tr><td>%s</td><td>%.2f</td>", label, all);
    if (r->loaded_samples)
        fprintf(f, "<td>%.2f</td>", loaded);
    else
        fputs("<td>-</td>", f);
    fprintf(f, "<td>%s</td><td>%.2f</td></tr>\n", even, worst);
}

static void html_imbalance(FILE *f, const pt_report *r)
{
    fprintf(f, "<h2>Imbalance over time</h2>\n<table><tr><th></th><th>all %zu samples</th>"
               "<th>%zu with queued jobs</th><th>even</th><th>one routee holds all</th></tr>\n",
            r->samples, r->loaded_samples);
    html_imbalance_row(f, r, "max/mean depth", r->all.max_over_mean, r->loaded.max_over_mean,
                       "1", (double)r->n);
    html_imbalance_row(f, r, "coefficient of variation", r->all.cv, r->loaded.cv, "0",
                       sqrt((double)r->n - 1));
    html_imbalance_row(f, r, "Jain&apos;s fairness index", r->all.jain, r->loaded.jain, "1",
                       1.0 / r->n);
    fputs("</table>\n", f);
    fputs("<p class=\"note\">Per sample, over the routees' queued depths: max/mean, the "
          "standard deviation over the mean (CV), and Jain's index (&Sigma;x)&sup2;/(n&middot;"
          "&Sigma;x&sup2;). A sample with nothing queued counts as even; the second column "
          "leaves those out.</p>\n", f);
}

static void html_worst(FILE *f, const pt_report *r)
{
    if (r->nworst == 0 && r->loaded_samples > 0)
        return; /* --worst 0 */
    fprintf(f, "<h2>Worst %.4g ms windows</h2>\n", r->window_us / 1e3);
    if (r->nworst == 0) {
        fputs("<p>None: nothing was queued in the whole trace.</p>\n", f);
        return;
    }
    fputs("<table><tr><th>from ms</th><th>to ms</th><th>max/mean</th><th>CV</th><th>Jain</th>"
          "<th>mean depth</th><th>deepest</th><th>its mean depth</th></tr>\n", f);
    for (size_t k = 0; k < r->nworst; k++) {
        const pt_window *w = &r->worst[k];
        fprintf(f, "<tr><td>%.1f</td><td>%.1f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>"
                   "<td>%.1f</td><td>r%u</td><td>%.1f</td></tr>\n", w->start_us / 1e3,
                w->end_us / 1e3, w->imb.max_over_mean, w->imb.cv, w->imb.jain, w->mean_depth,
                w->deepest, w->deepest_depth);
    }
    fputs("</table>\n<p class=\"note\">Windows ranked by max/mean of the routees' mean depths "
          "in the window, among windows where some routee averaged at least one queued job; "
          "times are the trace's, as Perfetto shows them.</p>\n", f);
}

int pr_write_html(FILE *f, const pr_input *in)
{
    const pt_report *r = in->report;

    html_head(f, in);
    html_hot(f, r);
    fputs("<h2>Queued depth, routee &times; time</h2>\n", f);
    write_heatmap(f, in, 0, 0);
    fputs("<h2>Queued depth over time</h2>\n", f);
    write_lines(f, in, 0, 0);
    if (r->n > LINES_ALL)
        fprintf(f, "<p class=\"note\">The %u deepest of %u routees.</p>\n", LINES_TOP, r->n);
    html_routees(f, in);
    html_imbalance(f, r);
    html_worst(f, r);
    fputs("<p class=\"note\">Made by rp-profile from a routepool trace. The trace itself opens "
          "in Perfetto (ui.perfetto.dev) and chrome://tracing.</p>\n</body></html>\n", f);
    return ferror(f) ? -1 : 0;
}

/* ---- standalone SVG ---- */

/* The per-routee table as monospaced text rows (the first 64 routees).
 * xml:space="preserve" keeps the padding in renderers that ignore CSS
 * white-space (librsvg, Inkscape). */
static void svg_summary(FILE *f, const pr_input *in, int y)
{
    const pt_report *r = in->report;
    const bool exact = r->n && r->routee[0].jobs_exact;

    fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\" font-family=\"monospace\" "
               "xml:space=\"preserve\" style=\"white-space:pre\">%-8s %12s %11s %7s %16s %11s "
               "%7s %13s</text>\n",
            LEFT, y, "routee", "mean depth", "max depth", "busy",
            exact ? "jobs run" : "jobs run*", "mean wait*", "stole", "stolen from");
    for (unsigned i = 0; i < r->n && i < 64; i++) {
        const pt_routee_stats *s = &r->routee[i];
        char busy[16] = "-", jobs[40] = "-", wait[24] = "-";
        if (in->trace->busy_points)
            snprintf(busy, sizeof busy, "%.1f%%", s->utilisation * 100);
        if (exact || in->trace->slices)
            snprintf(jobs, sizeof jobs, "%" PRIu64 " %5.1f%%", s->jobs_run, s->job_share * 100);
        if (s->ev.slices)
            pr_format_us(wait, sizeof wait, s->mean_wait_us);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-family=\"monospace\" xml:space=\"preserve\" "
                   "style=\"white-space:pre\"%s>r%-7u %12.1f %11.0f %7s %16s %11s %7" PRIu64
                   " %13" PRIu64 "</text>\n", LEFT, y + 16 * (int)(i + 1),
                r->hot == (int)i ? " fill=\"#b00\" font-weight=\"bold\"" : "", i,
                s->mean_depth, s->max_depth, busy, jobs, wait, s->ev.stole, s->ev.stolen_from);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-family=\"monospace\" font-size=\"11\">%s</text>\n",
            LEFT, y + 16 * (int)((r->n < 64 ? r->n : 64) + 1),
            exact ? "jobs run, stole, stolen from: exact; * from sampled job slices"
                  : "* from sampled job slices (estimates)");
}

static int svg_summary_height(const pt_report *r)
{
    return 16 * (int)((r->n < 64 ? r->n : 64) + 2) + 8;
}

int pr_write_svg(FILE *f, const pr_input *in)
{
    const pt_report *r = in->report;
    const int heat_y = 78, lines_y = heat_y + heatmap_height(r) + 10;
    const int sum_y = lines_y + lines_height(r) + 20;
    const int height = sum_y + svg_summary_height(r);

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            WIDTH, height, WIDTH, height);
    fprintf(f, "<text x=\"%d\" y=\"24\" font-size=\"18\" font-weight=\"bold\">routepool balance: "
               "pool &quot;", LEFT);
    html_str(f, in->trace->pool ? in->trace->pool : "?");
    fprintf(f, "&quot; (%u routees, %.1f ms)</text>\n<text x=\"%d\" y=\"44\">Jain %.2f, CV %.2f, "
               "max/mean %.2f over all samples; %.2f, %.2f, %.2f with queued jobs</text>\n",
            r->n, r->duration_us / 1e3, LEFT, r->all.jain, r->all.cv, r->all.max_over_mean,
            r->loaded.jain, r->loaded.cv, r->loaded.max_over_mean);
    if (r->hot >= 0)
        fprintf(f, "<text x=\"%d\" y=\"62\" fill=\"#b00\" font-weight=\"bold\">hot routee: r%d "
                   "(mean depth %.1f)</text>\n", LEFT, r->hot, r->routee[r->hot].mean_depth);
    else
        fprintf(f, "<text x=\"%d\" y=\"62\">no hot routee</text>\n", LEFT);
    write_heatmap(f, in, 0, heat_y);
    write_lines(f, in, 0, lines_y);
    svg_summary(f, in, sum_y);
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}
