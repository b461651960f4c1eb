/* SPDX-License-Identifier: MIT */
/*
 * tools/cli.c - the command-line helpers routepool's tools share (cli.h).
 *
 * Everything that reads the command line treats it as untrusted: numbers
 * are parsed whole and range-checked, lists are bounded (512 bytes) and an
 * empty item is refused rather than skipped, and every message names the
 * option at fault.  Output files are opened while parsing, so a path that
 * cannot be written fails before any measurement, and `-` means standard
 * output for every one of them.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "routepool/routepool.h"

#define LIST_MAX 512u

static const char *prog = "routepool";

void cli_init(const char *name)
{
    prog = name;
}

const char *cli_prog(void)
{
    return prog;
}

bool cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help'.\n", prog);
    return false;
}

void cli_print_version(void)
{
    printf("%s (routepool) %s\nlibroutepool %s\n", prog, RP_VERSION_STRING, rp_version());
}

/* ---- getopt_long's errors ---- */

/* The long options whose name starts with the len bytes of name: exact
 * is set to the one that matches exactly; returns how many match. */
static int long_matches(const struct option *longopts, const char *name, size_t len,
                        const struct option **exact, char *list, size_t list_len)
{
    int n = 0;
    size_t used = 0;
    *exact = NULL;
    list[0] = '\0';
    for (const struct option *o = longopts; o->name; o++) {
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (strlen(o->name) == len)
            *exact = o;
        n++;
        const int w = snprintf(list + used, list_len - used, "%s--%s", n > 1 ? ", " : "", o->name);
        if (w > 0 && used + (size_t)w < list_len)
            used += (size_t)w;
    }
    return n;
}

/* A long option's error: arg is "--name" or "--name=value". */
static void bad_long(int c, const char *arg, const struct option *longopts)
{
    const char *name = arg + 2, *eq = strchr(name, '=');
    const size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct option *exact;
    char cands[256];
    const int n = long_matches(longopts, name, len, &exact, cands, sizeof cands);
    const struct option *o = exact;
    if (!o && n == 1) /* an abbreviation of one option */
        for (o = longopts; strncmp(o->name, name, len) != 0; o++)
            ;
    if (c == ':' && o)
        cli_usage_error("option '--%s' needs a value", o->name);
    else if (o && eq && o->has_arg == no_argument)
        cli_usage_error("option '--%s' takes no value, got '%s'", o->name, arg);
    else if (n > 1)
        cli_usage_error("option '--%.*s' is ambiguous: %s", (int)len, name, cands);
    else
        cli_usage_error("unknown option '--%.*s'", (int)len, name);
}

/* Whether getopt's error is about a long option: the argument it just
 * passed starts with "--" and names an option with that value, or one
 * that does not exist (optopt 0).  Inside a cluster of short options
 * ("-qx") that argument is an earlier one, which this tells apart. */
static bool is_long_error(const char *arg, const struct option *longopts)
{
    if (!arg || strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
        return false;
    if (optopt == 0)
        return true;
    const char *name = arg + 2, *eq = strchr(name, '=');
    const size_t len = eq ? (size_t)(eq - name) : strlen(name);
    for (const struct option *o = longopts; o->name; o++)
        if (strncmp(o->name, name, len) == 0 && o->flag == NULL && o->val == optopt)
            return true;
    return false;
}

void cli_bad_option(int c, char *const argv[], const struct option *longopts)
{
    const char *arg = optind > 0 ? argv[optind - 1] : NULL;
    if (is_long_error(arg, longopts))
        bad_long(c, arg, longopts);
    else if (c == ':')
        cli_usage_error("option '-%c' needs a value", optopt);
    else if (optopt > 0x20 && optopt < 0x7f)
        cli_usage_error("unknown option '-%c'", optopt);
    else
        cli_usage_error("unknown option '%s'", arg ? arg : "?");
}

/* ---- numbers ---- */

bool cli_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    bool digits = s[0] != '\0';
    for (const char *p = s; *p; p++)
        digits = digits && *p >= '0' && *p <= '9';
    errno = 0;
    const unsigned long long v = digits ? strtoull(s, NULL, 10) : 0;
    if (!digits || errno == ERANGE || v < min || v > max)
        return cli_usage_error("%s: expected a whole number in %" PRIu64 "..%" PRIu64
                               ", got '%s'", opt, min, max, s);
    *out = (uint64_t)v;
    return true;
}

/* strtod over the whole of s, finite; *pct set when it ends in '%'. */
static bool read_double(const char *s, bool allow_pct, double *v, bool *pct)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    *pct = allow_pct && end != s && end[0] == '%' && end[1] == '\0';
    return end != s && (*end == '\0' || *pct) && errno != ERANGE && isfinite(*v);
}

static bool in_bounds(double v, double lo, bool lo_open, double hi)
{
    return (lo_open ? v > lo : v >= lo) && v <= hi;
}

bool cli_parse_double(const char *opt, const char *s, double lo, bool lo_open, double hi,
                      double *out)
{
    double v;
    bool pct;
    if (!read_double(s, false, &v, &pct) || !in_bounds(v, lo, lo_open, hi))
        return cli_usage_error("%s: expected a number %s %g and at most %g, got '%s'", opt,
                               lo_open ? "above" : "from", lo, hi, s);
    *out = v;
    return true;
}

bool cli_parse_fraction(const char *opt, const char *s, double lo, bool lo_open, double hi,
                        double *out)
{
    double v;
    bool pct;
    const bool ok = read_double(s, true, &v, &pct);
    if (ok && pct)
        v /= 100;
    if (ok && in_bounds(v, lo, lo_open, hi)) {
        *out = v;
        return true;
    }
    if (ok && !pct && in_bounds(v / 100, lo, lo_open, hi))
        return cli_usage_error("%s: expected a fraction %s %g and at most %g, got '%s' "
                               "(for %g%% write %g or %g%%)", opt, lo_open ? "above" : "from",
                               lo, hi, s, v, v / 100, v);
    return cli_usage_error("%s: expected a fraction %s %g and at most %g (or a percent such "
                           "as 80%%), got '%s'", opt, lo_open ? "above" : "from", lo, hi, s);
}

/* ---- lists ---- */

bool cli_parse_list(const char *opt, const char *list, cli_item_fn fn, void *user)
{
    char buf[LIST_MAX];
    const size_t len = strlen(list);
    if (len == 0)
        return cli_usage_error("%s: expected a comma-separated list, got ''", opt);
    if (len >= sizeof buf)
        return cli_usage_error("%s: the list is longer than %u bytes", opt, LIST_MAX - 1);
    memcpy(buf, list, len + 1);
    char *item = buf;
    for (;;) {
        char *comma = strchr(item, ',');
        if (comma)
            *comma = '\0';
        if (item[0] == '\0')
            return cli_usage_error("%s: empty item in '%s'", opt, list);
        if (!fn(user, item, list))
            return false;
        if (!comma)
            return true;
        item = comma + 1;
    }
}

/* ---- output files ---- */

bool cli_output_open(cli_output *o, const char *opt, const char *path)
{
    if (o->f && !o->is_stdout)
        fclose(o->f);
    *o = (cli_output){.opt = opt, .path = path, .is_stdout = strcmp(path, "-") == 0};
    if (o->is_stdout) {
        o->f = stdout;
        return true;
    }
    if (!(o->f = fopen(path, "w"))) {
        fprintf(stderr, "%s: %s: cannot write '%s': %s\n", prog, opt, path, strerror(errno));
        return false;
    }
    return true;
}

bool cli_output_close(cli_output *o)
{
    if (!o->f)
        return true;
    bool ok = fflush(o->f) == 0 && !ferror(o->f);
    const int err = errno;
    if (!o->is_stdout && fclose(o->f) != 0)
        ok = false;
    o->f = NULL;
    if (!ok)
        fprintf(stderr, "%s: %s: writing '%s' failed: %s\n", prog, o->opt,
                o->is_stdout ? "standard output" : o->path, strerror(err ? err : EIO));
    return ok;
}

/* ---- text ---- */

bool cli_utf8_valid(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        const int n = *s < 0x80 ? 0 : (*s & 0xe0) == 0xc0 ? 1 : (*s & 0xf0) == 0xe0 ? 2
                      : (*s & 0xf8) == 0xf0 ? 3 : -1;
        if (n < 0 || *s == 0xc0 || *s == 0xc1 || *s > 0xf4) /* overlong or beyond U+10FFFF */
            return false;
        s++;
        for (int i = 0; i < n; i++, s++)
            if ((*s & 0xc0) != 0x80)
                return false;
    }
    return true;
}

void cli_json_str(FILE *f, const char *s)
{
    const bool utf8 = cli_utf8_valid(s);
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p >= 0x80 && !utf8 ? '?' : *p, f);
    }
    fputc('"', f);
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
