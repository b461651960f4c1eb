/* SPDX-License-Identifier: MIT */
/*
 * tools/tune_plot.c - --plot FILE.svg: throughput and p99 sojourn against
 * pool size, one line per router, in one self-contained SVG file (no
 * scripts, no external fonts or styles) that a browser shows as is.
 *
 * Two panels side by side share the x axis (pool size; log2 when the sizes
 * span 16x or more).  Throughput is linear from 0; p99 is log10 when it
 * spans more than 20x, which it does as soon as one size falls behind.
 * Hollow markers are cells that fell behind their arrivals; a black ring
 * marks the recommended cell; a p99 without enough samples is not drawn.  Every marker has a tooltip (<title>).
 */
#include <math.h>
#include <string.h>

#include "tune.h"

#define SVG_W 980
#define SVG_H 490
#define PANEL_W 380
#define PANEL_H 270
#define PANEL_TOP 95
#define PANEL_LEFT0 80
#define PANEL_GAP 110
#define LEGEND_TOP 425

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"};

/* ---- text ---- */

/* Escaped XML text.  Control characters (which XML 1.0 forbids even as
 * references) and, in a string that is not UTF-8, every non-ASCII byte
 * become '?'. */
static void xml_text(FILE *f, const char *s)
{
    const bool utf8 = cli_utf8_valid(s);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '&')
            fputs("&amp;", f);
        else if (*p == '<')
            fputs("&lt;", f);
        else if (*p == '>')
            fputs("&gt;", f);
        else if (*p == '"')
            fputs("&quot;", f);
        else if (*p < 0x20 || (*p >= 0x80 && !utf8))
            fputc('?', f);
        else
            fputc(*p, f);
    }
}

/* An axis label: the shortest form in the largest unit below it. */
static void axis_time(FILE *f, double us)
{
    if (us >= 1e6)
        fprintf(f, "%g s", us / 1e6);
    else if (us >= 1e3)
        fprintf(f, "%g ms", us / 1e3);
    else if (us >= 1)
        fprintf(f, "%g &#181;s", us);
    else
        fprintf(f, "%g ns", us * 1e3);
}

/* "us" in a formatted time becomes the micro sign. */
static void xml_time(FILE *f, double us)
{
    char buf[32];
    tune_fmt_us(buf, sizeof buf, us);
    char *u = strstr(buf, "us");
    if (u) {
        *u = '\0';
        fprintf(f, "%s&#181;s", buf);
    } else {
        fputs(buf, f);
    }
}

static void fmt_rate(char *buf, size_t len, double v)
{
    if (v >= 1e6)
        snprintf(buf, len, "%gM", v / 1e6);
    else if (v >= 1e3)
        snprintf(buf, len, "%gk", v / 1e3);
    else
        snprintf(buf, len, "%g", v);
}

/* ---- scales ---- */

typedef struct scale {
    double lo, hi;     /* data domain (log10/log2 of it when log) */
    bool log;
    int log_base;      /* 2 or 10 */
    double px0, px1;   /* pixel range */
} scale;

static double to_px(const scale *s, double v)
{
    double x = v;
    if (s->log)
        x = s->log_base == 2 ? log2(v > 0 ? v : 1e-12) : log10(v > 0 ? v : 1e-12);
    const double t = s->hi > s->lo ? (x - s->lo) / (s->hi - s->lo) : 0.5;
    return s->px0 + t * (s->px1 - s->px0);
}

/* A "nice" step (1, 2 or 5 x 10^k) for about `ticks` intervals over span. */
static double nice_step(double span, int ticks)
{
    const double raw = span / ticks, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

/* ---- panels ---- */

typedef double (*metric_fn)(const tune_result *r);

static double metric_throughput(const tune_result *r)
{
    return r->throughput;
}

/* NaN - not plotted - when too few samples hold the p99 (tune.h). */
static double metric_p99(const tune_result *r)
{
    return tune_pct_valid(r, 0.99) ? r->p99_us : NAN;
}

static void axis_line(FILE *f, double x1, double y1, double x2, double y2)
{
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x1, y1,
            x2, y2);
}

static void grid_line(FILE *f, const scale *xs, double y)
{
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", xs->px0,
            y, xs->px1, y);
}

static void y_tick_label(FILE *f, double x, double y, double v, bool time)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">", x - 6, y + 4);
    if (v == 0) {
        fputc('0', f);
    } else if (time) {
        axis_time(f, v);
    } else {
        char buf[32];
        fmt_rate(buf, sizeof buf, v);
        fputs(buf, f);
    }
    fputs("</text>\n", f);
}

static void y_ticks(FILE *f, const scale *xs, const scale *ys, bool time)
{
    if (ys->log) {
        for (double e = ceil(ys->lo); e <= floor(ys->hi) + 1e-9; e += 1) {
            const double y = to_px(ys, pow(10, e));
            grid_line(f, xs, y);
            y_tick_label(f, xs->px0, y, pow(10, e), time);
        }
        return;
    }
    const double step = nice_step(ys->hi - ys->lo, 5);
    for (double v = 0; v <= ys->hi + step * 1e-9; v += step) {
        grid_line(f, xs, to_px(ys, v));
        y_tick_label(f, xs->px0, to_px(ys, v), v, time);
    }
}

static void x_ticks(FILE *f, const scale *xs, const scale *ys, const tune_cfg *cfg)
{
    double last = -1e9;
    for (size_t i = 0; i < cfg->nsizes; i++) {
        const double x = to_px(xs, cfg->sizes[i]);
        if (x - last < 22)
            continue; /* keep labels apart */
        last = x;
        axis_line(f, x, ys->px0, x, ys->px0 + 4);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%u"
                   "</text>\n", x, ys->px0 + 17, cfg->sizes[i]);
    }
}

/* The y scale of one metric over the cells. */
static scale y_scale(const tune_result *res, size_t n, metric_fn metric, bool allow_log)
{
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < n; i++) {
        const double v = metric(&res[i]);
        lo = v > 0 && v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    scale s = {.px0 = PANEL_TOP + PANEL_H, .px1 = PANEL_TOP};
    if (hi <= 0)
        hi = 1;
    if (allow_log && isfinite(lo) && hi / lo > 20) {
        s = (scale){.lo = floor(log10(lo)), .hi = ceil(log10(hi)), .log = true, .log_base = 10,
                    .px0 = s.px0, .px1 = s.px1};
        return s;
    }
    const double step = nice_step(hi, 5);
    s.lo = 0;
    s.hi = ceil(hi / step) * step;
    return s;
}

static scale x_scale(const tune_cfg *cfg, double left)
{
    const double lo = cfg->sizes[0], hi = cfg->sizes[cfg->nsizes - 1];
    scale s = {.px0 = left + 15, .px1 = left + PANEL_W - 15};
    if (hi / lo >= 16) {
        s.log = true;
        s.log_base = 2;
        s.lo = log2(lo);
        s.hi = log2(hi);
    } else {
        s.lo = hi > lo ? lo : lo - 1;
        s.hi = hi > lo ? hi : hi + 1;
    }
    return s;
}

static void marker(FILE *f, const tune_result *r, double x, double y, const char *color, bool time,
                   double v)
{
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" stroke=\"%s\" stroke-width=\"1.5\" "
               "fill=\"%s\"><title>%u routee%s, %s: ", x, y, color, r->overloaded ? "#fff" : color,
            r->size, r->size == 1 ? "" : "s", r->router.name);
    if (time) {
        xml_time(f, v);
        fputs(" p99", f);
    } else {
        fprintf(f, "%.0f jobs/s", v);
    }
    fputs("</title></circle>\n", f);
}

/* One router's line and markers in one panel. */
static void series(FILE *f, const tune_result *res, size_t n, const char *router, const char *color,
                   const scale *xs, const scale *ys, metric_fn metric, bool time)
{
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
    for (size_t i = 0; i < n; i++)
        if (strcmp(res[i].router.name, router) == 0 && isfinite(metric(&res[i])))
            fprintf(f, "%.1f,%.1f ", to_px(xs, res[i].size), to_px(ys, metric(&res[i])));
    fputs("\"/>\n", f);
    for (size_t i = 0; i < n; i++)
        if (strcmp(res[i].router.name, router) == 0 && isfinite(metric(&res[i])))
            marker(f, &res[i], to_px(xs, res[i].size), to_px(ys, metric(&res[i])), color, time,
                   metric(&res[i]));
}

/* The --p99 target, dashed, when it falls inside the axis. */
static void target_line(FILE *f, double target_us, const scale *xs, const scale *ys)
{
    if (target_us <= 0)
        return;
    const double y = to_px(ys, target_us);
    if (y > ys->px0 || y < ys->px1)
        return;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
               "stroke-dasharray=\"5,4\"/>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
               "font-size=\"11\">--p99 target</text>\n", xs->px0, y, xs->px1, y, xs->px1, y - 4);
}

static void panel(FILE *f, const tune_meta *m, const tune_result *res, size_t n,
                  const tune_pick *pick, int which)
{
    const double left = PANEL_LEFT0 + which * (PANEL_W + PANEL_GAP);
    const metric_fn metric = which == 0 ? metric_throughput : metric_p99;
    const scale xs = x_scale(m->cfg, left), ys = y_scale(res, n, metric, which == 1);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"14\" "
               "font-weight=\"bold\">%s</text>\n", left + PANEL_W / 2.0, PANEL_TOP - 12,
            which == 0 ? "throughput (jobs/s)" : "p99 sojourn time");
    y_ticks(f, &xs, &ys, which == 1);
    axis_line(f, xs.px0, ys.px0, xs.px1, ys.px0);
    axis_line(f, xs.px0, ys.px0, xs.px0, ys.px1);
    x_ticks(f, &xs, &ys, m->cfg);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">pool size "
               "(routees)%s</text>\n", left + PANEL_W / 2.0, ys.px0 + 36,
            xs.log ? ", log scale" : "");
    if (which == 1)
        target_line(f, m->cfg->p99_ms * 1e3, &xs, &ys);
    for (size_t r = 0; r < m->cfg->nrouters; r++)
        series(f, res, n, m->cfg->routers[r].name, palette[r % 8], &xs, &ys, metric, which == 1);
    if (pick->index >= 0) {
        const tune_result *p = &res[pick->index];
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"8\" fill=\"none\" stroke=\"#000\" "
                   "stroke-width=\"1.5\"><title>recommended</title></circle>\n",
                to_px(&xs, p->size), to_px(&ys, metric(p)));
    }
}

static void legend(FILE *f, const tune_meta *m, bool any_behind)
{
    double x = PANEL_LEFT0;
    for (size_t r = 0; r < m->cfg->nrouters; r++) {
        const char *name = m->cfg->routers[r].name;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" "
                   "stroke-width=\"2\"/>\n<circle cx=\"%.1f\" cy=\"%d\" r=\"3.5\" fill=\"%s\"/>\n"
                   "<text x=\"%.1f\" y=\"%d\" font-size=\"12\">%s</text>\n",
                x, LEGEND_TOP, x + 24, LEGEND_TOP, palette[r % 8], x + 12, LEGEND_TOP,
                palette[r % 8], x + 30, LEGEND_TOP + 4, name);
        x += 40 + 7.2 * (double)strlen(name);
    }
    fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"8\" fill=\"none\" stroke=\"#000\" "
               "stroke-width=\"1.5\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"12\">recommended%s"
               "</text>\n", PANEL_LEFT0 + 12, LEGEND_TOP + 30, PANEL_LEFT0 + 30, LEGEND_TOP + 34,
            any_behind ? "; hollow markers: the pool fell behind its arrivals" : "");
}

static void title(FILE *f, const tune_meta *m)
{
    char label[512];
    tune_workload_label(label, sizeof label, m->cfg);
    fputs("<text x=\"20\" y=\"26\" font-size=\"15\" font-weight=\"bold\">rp-tune: ", f);
    xml_text(f, label);
    fputs("</text>\n<text x=\"20\" y=\"46\" font-size=\"12\">", f);
    char rate[32];
    tune_fmt_count(rate, sizeof rate, m->rate);
    if (m->open)
        fprintf(f, "open loop, Poisson arrivals at %s jobs/s", rate);
    else
        fprintf(f, "closed loop, %u jobs in flight", m->clients);
    fprintf(f, "; %u online CPUs; %.2g s per cell", m->cfg->cpus, m->cfg->duration_s);
    if (m->rounds > 1)
        fprintf(f, ", median of %u rounds", m->rounds);
    if (m->cfg->p99_ms > 0)
        fprintf(f, "; --p99 %g ms", m->cfg->p99_ms);
    fprintf(f, "%s</text>\n", m->complete ? "" : " (interrupted: partial)");
}

bool tune_write_svg(FILE *f, const tune_meta *m, const tune_result *res, size_t n,
                    const tune_pick *pick)
{
    bool any_behind = false;
    for (size_t i = 0; i < n; i++)
        any_behind = any_behind || res[i].overloaded;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
            SVG_W, SVG_H, SVG_W, SVG_H);
    title(f, m);
    if (n > 0) {
        panel(f, m, res, n, pick, 0);
        panel(f, m, res, n, pick, 1);
    }
    legend(f, m, any_behind);
    fputs("</svg>\n", f);
    return fflush(f) == 0 && !ferror(f);
}
