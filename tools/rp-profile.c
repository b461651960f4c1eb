/* SPDX-License-Identifier: MIT */
/*
 * rp-profile - read a routepool trace and report how balanced the pool was.
 *
 * A trace (rp_trace_start() or RP_TRACE=path, routepool/trace.h) holds
 * every routee's queued depth and busy flag at a fixed interval, sampled
 * job slices and steals, in Chrome Trace Event JSON.  rp-profile parses it
 * with its own strict JSON parser (profile_json.c: no dependency), measures
 * it (profile_stats.c) and prints a text report, or JSON (--json), and can
 * write a self-contained HTML or SVG report (profile_svg.c).
 *
 * Uses the public headers only, like every tool (STYLE.md).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jemalloc/jemalloc.h>

#include "profile_report.h"
#include "profile_trace.h"
#include "routepool/routepool.h"

/* Exit codes, listed in --help. */
enum {
    EXIT_TRACE = 1,  /* the trace cannot be read or parsed, or has no samples */
    EXIT_USAGE = 2,  /* bad command line */
    EXIT_OUTPUT = 3  /* a report could not be written */
};

#define WORST_MAX 1000u
#define WINDOW_MS_MIN 0.05
#define WINDOW_MS_MAX 3600000.0

typedef struct cli {
    const char *trace;
    const char *html, *svg;
    bool json;
    pt_options opts;
} cli;

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: rp-profile [--json] [--html FILE] [--svg FILE] [--window MS] [--worst N] TRACE\n"
        "\n"
        "Read a routepool trace (written by rp_trace_start() or by any program run with\n"
        "RP_TRACE=path; '-' reads standard input) and report how evenly the pool's\n"
        "routees shared the work:\n"
        "  per routee: mean (time-weighted) and max queued depth, utilisation (busy\n"
        "    fraction), jobs run and their share, jobs stolen and stolen from (exact\n"
        "    counts the trace ends with; older traces: estimates from the sampled job\n"
        "    slices), mean run and wait times (from the sampled slices: estimates;\n"
        "    shown in ms from 10 ms);\n"
        "  over time: per sample max/mean depth, coefficient of variation and Jain's\n"
        "    fairness index (sum x)^2/(n sum x^2) over the routees' depths, averaged\n"
        "    over all samples and over the samples with queued jobs;\n"
        "  the worst windows (highest max/mean of the routees' mean depths);\n"
        "  the hot routee: the deepest on average, when at least %.0fx the next deepest\n"
        "    and at least %.1f jobs deep.\n"
        "\n"
        "Options:\n"
        "      --json        print the report as JSON instead of text\n"
        "      --html FILE   also write a self-contained HTML report (heatmap of routee x\n"
        "                    time coloured by depth, a line per routee, the tables)\n"
        "      --svg FILE    also write the charts and a summary as one SVG image\n"
        "                    (FILE '-' for --html or --svg: that report goes to standard\n"
        "                    output instead of the text report; one of them at a time,\n"
        "                    and not with --json)\n"
        "      --window MS   width of the windows ranked as worst, %g..%.0f ms (default %g)\n"
        "      --worst N     how many worst windows to list, 0..%u (default %zu)\n"
        "  -h, --help        print this help and exit\n"
        "  -V, --version     print the version and exit\n"
        "\n"
        "Exit status:\n"
        "  0  report written\n"
        "  1  the trace cannot be read or parsed (the message names the line and\n"
        "     column), or it has no depth samples\n"
        "  2  bad command line (the message names the option)\n"
        "  3  a report could not be written (--html or --svg file, standard output)\n",
        PT_HOT_FACTOR, PT_HOT_MIN_DEPTH, WINDOW_MS_MIN, WINDOW_MS_MAX, 10.0, WORST_MAX,
        (size_t)5);
}

static const char *jemalloc_version(void)
{
    const char *v = NULL;
    size_t len = sizeof v;
    return mallctl("version", &v, &len, NULL, 0) == 0 && v ? v : "?";
}

/* ---- command line ---- */

static void bad_option(int c, char *const argv[])
{
    const char *opt = argv[optind - 1];
    if (c == ':')
        fprintf(stderr, "rp-profile: option '%s' needs a value\n", opt);
    else if (optopt != 0)
        fprintf(stderr, "rp-profile: unknown option '-%c'\n", optopt);
    else
        fprintf(stderr, "rp-profile: unknown option '%s'\n", opt);
    fprintf(stderr, "Try 'rp-profile --help'.\n");
}

/* A decimal number in [min, max], all of s; complain otherwise. */
static bool parse_double(const char *opt, const char *s, double min, double max, double *out)
{
    char *end = NULL;

    errno = 0;
    const double v = s[0] && s[0] != ' ' ? strtod(s, &end) : NAN;
    if (!end || *end || errno == ERANGE || !(v >= min && v <= max)) {
        fprintf(stderr, "rp-profile: %s: expected a number in %.15g..%.15g, got '%s'\n"
                        "Try 'rp-profile --help'.\n", opt, min, max, s);
        return false;
    }
    *out = v;
    return true;
}

static int parse_value_option(int c, const char *arg, cli *o)
{
    double v;

    if (c == 'w') {
        if (!parse_double("--window", arg, WINDOW_MS_MIN, WINDOW_MS_MAX, &v))
            return EXIT_USAGE;
        o->opts.window_us = v * 1e3;
    } else {
        if (!parse_double("--worst", arg, 0, WORST_MAX, &v))
            return EXIT_USAGE;
        if (v != floor(v)) {
            fprintf(stderr, "rp-profile: --worst: expected a whole number, got '%s'\n"
                            "Try 'rp-profile --help'.\n", arg);
            return EXIT_USAGE;
        }
        o->opts.worst = (size_t)v;
    }
    return -1;
}

/* Returns -1 to go on, or an exit code. */
static int parse_options(int argc, char *argv[], cli *o)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},        {"html", required_argument, NULL, 'H'},
        {"svg", required_argument, NULL, 'S'},   {"window", required_argument, NULL, 'w'},
        {"worst", required_argument, NULL, 'k'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},     {NULL, 0, NULL, 0}};
    int c, rc;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return EXIT_SUCCESS;
        }
        if (c == 'V') {
            printf("rp-profile %s (routepool %s, jemalloc %s)\n", RP_VERSION_STRING,
                   rp_version(), jemalloc_version());
            return EXIT_SUCCESS;
        }
        if (c == ':' || c == '?') {
            bad_option(c, argv);
            return EXIT_USAGE;
        }
        if (c == 'j')
            o->json = true;
        else if (c == 'H' || c == 'S')
            *(c == 'H' ? &o->html : &o->svg) = optarg;
        else if ((rc = parse_value_option(c, optarg, o)) >= 0)
            return rc;
    }
    return -1;
}

static bool is_stdout(const char *path)
{
    return path && strcmp(path, "-") == 0;
}

/* '-' sends one report to standard output instead of the text report. */
static int check_stdout(const cli *o)
{
    if (is_stdout(o->html) && is_stdout(o->svg)) {
        fprintf(stderr, "rp-profile: --html - and --svg - both want standard output\n"
                        "Try 'rp-profile --help'.\n");
        return EXIT_USAGE;
    }
    if (o->json && (is_stdout(o->html) || is_stdout(o->svg))) {
        fprintf(stderr, "rp-profile: --json and --%s - both want standard output\n"
                        "Try 'rp-profile --help'.\n", is_stdout(o->html) ? "html" : "svg");
        return EXIT_USAGE;
    }
    return -1;
}

static int parse_args(int argc, char *argv[], cli *o)
{
    const int rc = parse_options(argc, argv, o);

    if (rc >= 0)
        return rc;
    if (optind >= argc) {
        fprintf(stderr, "rp-profile: no TRACE given\nTry 'rp-profile --help'.\n");
        return EXIT_USAGE;
    }
    if (optind + 1 < argc) {
        fprintf(stderr, "rp-profile: unexpected argument '%s' (one TRACE at a time)\n"
                        "Try 'rp-profile --help'.\n", argv[optind + 1]);
        return EXIT_USAGE;
    }
    o->trace = argv[optind];
    return check_stdout(o);
}

/* ---- input ---- */

/* Read all of f into a malloc'd buffer.  0, or -1 with errno set. */
static int read_all(FILE *f, char **out, size_t *len)
{
    size_t cap = (size_t)1 << 16, n = 0, got;
    char *buf = malloc(cap), *grown;

    if (!buf)
        return -1;
    for (;;) {
        if (n == cap) {
            if (!(grown = realloc(buf, cap * 2))) {
                free(buf);
                return -1;
            }
            buf = grown;
            cap *= 2;
        }
        if ((got = fread(buf + n, 1, cap - n, f)) == 0)
            break;
        n += got;
    }
    if (ferror(f)) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* The whole file (or standard input for "-") in *out.  0, or -1 with a
 * message printed. */
static int slurp(const char *path, char **out, size_t *len)
{
    const bool std_in = strcmp(path, "-") == 0;
    FILE *f = std_in ? stdin : fopen(path, "rb");
    int rc;

    if (!f) {
        fprintf(stderr, "rp-profile: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    errno = 0;
    if ((rc = read_all(f, out, len)) < 0)
        fprintf(stderr, "rp-profile: cannot read %s: %s\n", path,
                errno ? strerror(errno) : "read error");
    if (!std_in)
        fclose(f);
    return rc;
}

static int load(const cli *o, pt_trace *t, pt_report *r)
{
    char *text = NULL, err[256];
    size_t len = 0;
    int rc;

    if (slurp(o->trace, &text, &len) < 0)
        return -1;
    rc = pt_read(t, text, len, err, sizeof err);
    free(text);
    if (rc < 0) {
        fprintf(stderr, "rp-profile: %s: not a valid trace: %s\n", o->trace, err);
        return -1;
    }
    if (pt_analyse(r, t, &o->opts, err, sizeof err) < 0) {
        fprintf(stderr, "rp-profile: %s: %s\n", o->trace, err);
        pt_release(t);
        return -1;
    }
    return 0;
}

/* ---- output ---- */

static int write_stdout(int (*writer)(FILE *, const pr_input *), const pr_input *in)
{
    int rc = writer(stdout, in);

    if (fflush(stdout) != 0 || ferror(stdout) || rc < 0) {
        fprintf(stderr, "rp-profile: cannot write the report to standard output\n");
        return -1;
    }
    return 0;
}

static int write_file(const char *path, int (*writer)(FILE *, const pr_input *),
                      const pr_input *in)
{
    FILE *f;
    int rc;

    if (is_stdout(path))
        return write_stdout(writer, in);
    if (!(f = fopen(path, "w"))) {
        fprintf(stderr, "rp-profile: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    rc = writer(f, in);
    if (fclose(f) != 0)
        rc = -1;
    if (rc < 0)
        fprintf(stderr, "rp-profile: cannot write %s\n", path);
    return rc;
}

static int write_reports(const cli *o, const pr_input *in)
{
    if (!is_stdout(o->html) && !is_stdout(o->svg) &&
        write_stdout(o->json ? pr_write_json : pr_write_text, in) < 0)
        return EXIT_OUTPUT;
    if (o->html && write_file(o->html, pr_write_html, in) < 0)
        return EXIT_OUTPUT;
    if (o->svg && write_file(o->svg, pr_write_svg, in) < 0)
        return EXIT_OUTPUT;
    return EXIT_SUCCESS;
}

int main(int argc, char *argv[])
{
    cli o = {0};
    pt_trace t;
    pt_report r;
    int rc;

    pt_options_init(&o.opts);
    if ((rc = parse_args(argc, argv, &o)) >= 0)
        return rc;
    if (load(&o, &t, &r) < 0)
        return EXIT_TRACE;
    const pr_input in = {o.trace, &t, &r};
    rc = write_reports(&o, &in);
    pt_report_release(&r);
    pt_release(&t);
    return rc;
}
