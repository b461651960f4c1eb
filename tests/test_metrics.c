/* SPDX-License-Identifier: MIT */
/*
 * tests/test_metrics.c - the pool's metrics: the snapshot, the Prometheus
 * text exposition, and how both follow the jobs.
 *
 * The exposition is read back through a strict checker of the text format
 * (version 0.0.4) written here: every line a # HELP, a # TYPE or a sample
 * with valid names, escaped label values and a parseable number; every
 * family with exactly one HELP and one TYPE before its samples, which are
 * contiguous; counters named *_total; histogram buckets cumulative, ending
 * in le="+Inf", with _count equal to the +Inf bucket and a _sum, for every
 * label set.  The checker also parses: the tests then compare the text to
 * the snapshot and to the jobs they ran, exactly.
 *
 * Timing notes.  rp_pool_wait_idle() returns once every job ran, but a
 * routee clears its busy flag (and adds its busy period to busy seconds)
 * only after it found no next job, a moment later: tests that read the
 * busy gauge or busy seconds first wait for every routee to read busy 0
 * (settle()).  A scatter's outcome is counted after its future completes;
 * outcomes resolved inside a job are counted before the job ends (so
 * wait_idle covers them), outcomes resolved on the timer thread are
 * polled for.
 *
 * check_metrics_text.sh runs exposition/is_written_for_external_checkers
 * with RP_METRICS_PROM_OUT and RP_METRICS_PAGE_OUT set and feeds both
 * files to python3-prometheus-client's parser (check_metrics_text.py) and,
 * where installed, to promtool.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

#include "common.h"


TestSuite(checker, .fini = rp_leak_check);
TestSuite(exposition, .fini = rp_leak_check);
TestSuite(counters, .fini = rp_leak_check);
TestSuite(histograms, .fini = rp_leak_check);
TestSuite(scatter, .fini = rp_leak_check);
TestSuite(concurrency, .fini = rp_leak_check);

/* ======================================================================
 * A strict Prometheus text-format (0.0.4) checker and parser.
 * ====================================================================== */

#define PROM_NAME_MAX 128
#define PROM_VALUE_MAX 256
#define PROM_LABELS_MAX 8
#define PROM_GROUPS_MAX 256

typedef struct prom_label {
    char name[PROM_NAME_MAX];
    char value[PROM_VALUE_MAX]; /* unescaped */
} prom_label;

typedef struct prom_sample {
    char name[PROM_NAME_MAX];
    int family; /* index in prom_doc.fams */
    int nlabels;
    prom_label labels[PROM_LABELS_MAX];
    double value;
    int line;
} prom_sample;

typedef struct prom_family {
    char name[PROM_NAME_MAX];
    char type[16];
    char help[512]; /* unescaped */
    int help_line, type_line; /* 0: absent */
    int nsamples;
} prom_family;

typedef struct prom_doc {
    prom_sample *s;
    size_t n, cap;
    prom_family *fams;
    size_t nfams, capfams;
    int current; /* the family whose block is open, -1 before the first */
    char err[640];
} prom_doc;

static void prom_free(prom_doc *d)
{
    free(d->s);
    free(d->fams);
    memset(d, 0, sizeof *d);
}

static bool prom_fail(prom_doc *d, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!d->err[0])
        snprintf(d->err, sizeof d->err, "line %d: %s", line, msg);
    return false;
}

static bool is_alpha_(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Length of the metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or label name
 * ([a-zA-Z_][a-zA-Z0-9_]*) at p; 0 when there is none. */
static size_t scan_name(const char *p, const char *end, bool metric)
{
    size_t n = 0;

    if (p >= end || !(is_alpha_(*p) || (metric && *p == ':')))
        return 0;
    while (p + n < end && (is_alpha_(p[n]) || is_digit(p[n]) || (metric && p[n] == ':')))
        n++;
    return n;
}

/* A sample value or an le bound: a decimal float, +Inf, -Inf or NaN. */
static bool parse_float(const char *p, size_t len, double *out)
{
    char buf[64];
    size_t i = 0, nd = 0, nf = 0;

    if (len == 4 && (memcmp(p, "+Inf", 4) == 0 || memcmp(p, "-Inf", 4) == 0)) {
        *out = p[0] == '+' ? INFINITY : -INFINITY;
        return true;
    }
    if (len == 3 && memcmp(p, "NaN", 3) == 0) {
        *out = NAN;
        return true;
    }
    if (i < len && (p[i] == '+' || p[i] == '-'))
        i++;
    while (i < len && is_digit(p[i]))
        i++, nd++;
    if (i < len && p[i] == '.') {
        i++;
        while (i < len && is_digit(p[i]))
            i++, nf++;
    }
    if (nd + nf == 0)
        return false;
    if (i < len && (p[i] == 'e' || p[i] == 'E')) {
        size_t ne = 0;
        i++;
        if (i < len && (p[i] == '+' || p[i] == '-'))
            i++;
        while (i < len && is_digit(p[i]))
            i++, ne++;
        if (ne == 0)
            return false;
    }
    if (i != len || len >= sizeof buf)
        return false;
    memcpy(buf, p, len);
    buf[len] = '\0';
    *out = strtod(buf, NULL);
    return true;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int find_family(const prom_doc *d, const char *name)
{
    for (size_t i = 0; i < d->nfams; i++)
        if (strcmp(d->fams[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* The family a HELP or TYPE line names: the open one, or a new one.  A
 * family seen before whose block has ended is an error (its lines would
 * not be contiguous). */
static int open_family(prom_doc *d, int line, const char *name)
{
    int f = find_family(d, name);

    if (f >= 0 && f != d->current) {
        prom_fail(d, line, "family %s appears again after other families", name);
        return -1;
    }
    if (f < 0) {
        if (d->nfams == d->capfams) {
            size_t cap = d->capfams ? d->capfams * 2 : 32;
            prom_family *grown = realloc(d->fams, cap * sizeof *grown);
            if (!grown) {
                prom_fail(d, line, "out of memory");
                return -1;
            }
            d->fams = grown;
            d->capfams = cap;
        }
        f = (int)d->nfams++;
        memset(&d->fams[f], 0, sizeof d->fams[f]);
        snprintf(d->fams[f].name, sizeof d->fams[f].name, "%s", name);
    }
    d->current = f;
    return f;
}

/* HELP text: any UTF-8, with backslash and line feed escaped as \\ and \n
 * (and no other escape). */
static bool unescape_help(prom_doc *d, int line, const char *p, const char *end, char *out,
                          size_t cap)
{
    size_t n = 0;

    if (p == end)
        return prom_fail(d, line, "empty HELP text");
    for (; p < end; p++) {
        char c = *p;
        if (c == '\\') {
            if (p + 1 == end || (p[1] != '\\' && p[1] != 'n'))
                return prom_fail(d, line, "invalid escape in HELP text");
            c = p[1] == 'n' ? '\n' : '\\';
            p++;
        }
        if (n + 1 >= cap)
            return prom_fail(d, line, "HELP text too long");
        out[n++] = c;
    }
    out[n] = '\0';
    return true;
}

static bool parse_comment(prom_doc *d, int line, const char *p, const char *end)
{
    static const char *const types[] = {"counter", "gauge", "histogram", "summary", "untyped"};
    bool help = (size_t)(end - p) > 7 && memcmp(p, "# HELP ", 7) == 0;
    bool type = (size_t)(end - p) > 7 && memcmp(p, "# TYPE ", 7) == 0;
    char name[PROM_NAME_MAX];
    size_t n;
    int f;

    if (!help && !type)
        return prom_fail(d, line, "a comment that is neither '# HELP ' nor '# TYPE '");
    p += 7;
    if (!(n = scan_name(p, end, true)) || n >= sizeof name)
        return prom_fail(d, line, "invalid metric name in %s", help ? "HELP" : "TYPE");
    if (p + n == end || p[n] != ' ')
        return prom_fail(d, line, "expected one space after the metric name");
    memcpy(name, p, n);
    name[n] = '\0';
    p += n + 1;
    if ((f = open_family(d, line, name)) < 0)
        return false;
    prom_family *fam = &d->fams[f];
    if (fam->nsamples > 0)
        return prom_fail(d, line, "%s of %s after its samples", help ? "HELP" : "TYPE", name);
    if (help) {
        if (fam->help_line)
            return prom_fail(d, line, "second HELP for %s", name);
        fam->help_line = line;
        return unescape_help(d, line, p, end, fam->help, sizeof fam->help);
    }
    if (fam->type_line)
        return prom_fail(d, line, "second TYPE for %s", name);
    fam->type_line = line;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if ((size_t)(end - p) == strlen(types[i]) && memcmp(p, types[i], (size_t)(end - p)) == 0) {
            snprintf(fam->type, sizeof fam->type, "%s", types[i]);
            return true;
        }
    }
    return prom_fail(d, line, "unknown TYPE '%.*s'", (int)(end - p), p);
}

/* A label value between quotes: \\, \" and \n are the only escapes. */
static const char *parse_label_value(prom_doc *d, int line, const char *p, const char *end,
                                     char *out, size_t cap)
{
    size_t n = 0;

    for (; p < end && *p != '"'; p++) {
        char c = *p;
        if (c == '\\') {
            if (p + 1 == end || (p[1] != '\\' && p[1] != '"' && p[1] != 'n')) {
                prom_fail(d, line, "invalid escape in a label value");
                return NULL;
            }
            c = p[1] == 'n' ? '\n' : p[1];
            p++;
        }
        if (n + 1 >= cap) {
            prom_fail(d, line, "label value too long");
            return NULL;
        }
        out[n++] = c;
    }
    if (p == end) {
        prom_fail(d, line, "unterminated label value");
        return NULL;
    }
    out[n] = '\0';
    return p + 1;
}

/* {name="value",...}: at least one label, no trailing comma, no
 * duplicates, no reserved (__) names. */
static const char *parse_labels(prom_doc *d, int line, const char *p, const char *end,
                                prom_sample *s)
{
    p++; /* '{' */
    for (;;) {
        size_t n = scan_name(p, end, false);
        prom_label *l;

        if (!n || n >= PROM_NAME_MAX) {
            prom_fail(d, line, "invalid label name");
            return NULL;
        }
        if (s->nlabels == PROM_LABELS_MAX) {
            prom_fail(d, line, "too many labels");
            return NULL;
        }
        l = &s->labels[s->nlabels++];
        memcpy(l->name, p, n);
        l->name[n] = '\0';
        if (n >= 2 && p[0] == '_' && p[1] == '_') {
            prom_fail(d, line, "reserved label name %s", l->name);
            return NULL;
        }
        for (int i = 0; i < s->nlabels - 1; i++) {
            if (strcmp(s->labels[i].name, l->name) == 0) {
                prom_fail(d, line, "duplicate label %s", l->name);
                return NULL;
            }
        }
        p += n;
        if (end - p < 2 || p[0] != '=' || p[1] != '"') {
            prom_fail(d, line, "expected =\" after label %s", l->name);
            return NULL;
        }
        if (!(p = parse_label_value(d, line, p + 2, end, l->value, sizeof l->value)))
            return NULL;
        if (p < end && *p == '}')
            return p + 1;
        if (p == end || *p != ',' || p + 1 == end || p[1] == '}') {
            prom_fail(d, line, "expected , and another label, or }");
            return NULL;
        }
        p++;
    }
}

static const char *label_of(const prom_sample *s, const char *name)
{
    for (int i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}

/* The same series: same name, same label set (in any order). */
static bool same_series(const prom_sample *a, const prom_sample *b)
{
    if (strcmp(a->name, b->name) != 0 || a->nlabels != b->nlabels)
        return false;
    for (int i = 0; i < a->nlabels; i++) {
        const char *v = label_of(b, a->labels[i].name);
        if (!v || strcmp(v, a->labels[i].value) != 0)
            return false;
    }
    return true;
}

/* Whether a sample name belongs to the family, given its type. */
static bool name_fits(const prom_family *f, const char *name, bool *bucket)
{
    char buf[PROM_NAME_MAX + 16];
    bool hist = strcmp(f->type, "histogram") == 0, summ = strcmp(f->type, "summary") == 0;

    *bucket = false;
    if (!hist && strcmp(name, f->name) == 0)
        return true;
    if (!hist && !summ)
        return false;
    snprintf(buf, sizeof buf, "%s_sum", f->name);
    if (strcmp(name, buf) == 0)
        return true;
    snprintf(buf, sizeof buf, "%s_count", f->name);
    if (strcmp(name, buf) == 0)
        return true;
    snprintf(buf, sizeof buf, "%s_bucket", f->name);
    *bucket = hist && strcmp(name, buf) == 0;
    return *bucket;
}

static bool add_sample(prom_doc *d, int line, prom_sample *s)
{
    const prom_family *f;
    bool bucket;

    if (d->current < 0)
        return prom_fail(d, line, "sample %s before any HELP and TYPE", s->name);
    f = &d->fams[d->current];
    if (!name_fits(f, s->name, &bucket))
        return prom_fail(d, line, "sample %s outside its family's block (open family: %s %s)",
                         s->name, f->type[0] ? f->type : "(no TYPE)", f->name);
    if (!f->help_line || !f->type_line)
        return prom_fail(d, line, "sample %s before its family's %s", s->name,
                         f->help_line ? "TYPE" : "HELP");
    if (bucket != (label_of(s, "le") != NULL))
        return prom_fail(d, line, bucket ? "bucket without le" : "le outside a histogram bucket");
    if ((label_of(s, "quantile") != NULL) !=
        (strcmp(f->type, "summary") == 0 && strcmp(s->name, f->name) == 0))
        return prom_fail(d, line, "quantile label misplaced");
    for (size_t i = d->n; i-- > 0 && d->s[i].family == d->current;)
        if (same_series(&d->s[i], s))
            return prom_fail(d, line, "duplicate series %s", s->name);
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        prom_sample *grown = realloc(d->s, cap * sizeof *grown);
        if (!grown)
            return prom_fail(d, line, "out of memory");
        d->s = grown;
        d->cap = cap;
    }
    s->family = d->current;
    s->line = line;
    d->s[d->n++] = *s;
    d->fams[d->current].nsamples++;
    return true;
}

/* name{labels} value - one space, no timestamp (routepool writes none). */
static bool parse_sample(prom_doc *d, int line, const char *p, const char *end)
{
    prom_sample s;
    size_t n = scan_name(p, end, true);
    const char *sp;

    memset(&s, 0, sizeof s);
    if (!n || n >= sizeof s.name)
        return prom_fail(d, line, "invalid metric name");
    memcpy(s.name, p, n);
    s.name[n] = '\0';
    p += n;
    if (p < end && *p == '{' && !(p = parse_labels(d, line, p, end, &s)))
        return false;
    if (p == end || *p != ' ')
        return prom_fail(d, line, "expected one space before the value");
    p++;
    for (sp = p; sp < end && *sp != ' '; sp++) {
    }
    if (sp != end)
        return prom_fail(d, line, "text after the value (a timestamp or a second space)");
    if (!parse_float(p, (size_t)(end - p), &s.value))
        return prom_fail(d, line, "value '%.*s' is not a float", (int)(end - p), p);
    return add_sample(d, line, &s);
}

/* One histogram label set: its buckets in order, its _sum and _count. */
typedef struct hgroup {
    const prom_sample *first;
    double last_le, last_count, inf_count, count;
    int nbuckets, nsum, ncount;
    bool inf;
} hgroup;

/* Same labels apart from le. */
static bool same_group(const prom_sample *a, const prom_sample *b)
{
    int na = 0, nb = 0;

    for (int i = 0; i < a->nlabels; i++) {
        const char *v;
        if (strcmp(a->labels[i].name, "le") == 0)
            continue;
        na++;
        if (!(v = label_of(b, a->labels[i].name)) || strcmp(v, a->labels[i].value) != 0)
            return false;
    }
    for (int i = 0; i < b->nlabels; i++)
        nb += strcmp(b->labels[i].name, "le") != 0;
    return na == nb;
}

static bool integral(double v)
{
    return isfinite(v) && v >= 0 && v == floor(v);
}

static bool hist_bucket(prom_doc *d, hgroup *g, const prom_sample *s)
{
    double le;
    const char *les = label_of(s, "le");

    if (!parse_float(les, strlen(les), &le) || isnan(le))
        return prom_fail(d, s->line, "le=\"%s\" is not a bound", les);
    if (g->inf)
        return prom_fail(d, s->line, "bucket after le=\"+Inf\"");
    if (g->nbuckets && !(le > g->last_le))
        return prom_fail(d, s->line, "le=\"%s\" not above the previous bound", les);
    if (!integral(s->value))
        return prom_fail(d, s->line, "bucket count %g is not a count", s->value);
    if (g->nbuckets && s->value < g->last_count)
        return prom_fail(d, s->line, "buckets not cumulative: %g after %g", s->value,
                         g->last_count);
    g->nbuckets++;
    g->last_le = le;
    g->last_count = s->value;
    if (isinf(le) && le > 0) {
        g->inf = true;
        g->inf_count = s->value;
    }
    return true;
}

static bool check_histogram(prom_doc *d, int fam)
{
    const prom_family *f = &d->fams[fam];
    hgroup *gs = calloc(PROM_GROUPS_MAX, sizeof *gs);
    int ng = 0;
    bool ok = gs != NULL;

    for (size_t i = 0; ok && i < d->n; i++) {
        const prom_sample *s = &d->s[i];
        hgroup *g = NULL;
        if (s->family != fam)
            continue;
        for (int k = 0; k < ng && !g; k++)
            if (same_group(gs[k].first, s))
                g = &gs[k];
        if (!g && ng == PROM_GROUPS_MAX)
            ok = prom_fail(d, s->line, "too many label sets in %s", f->name);
        if (!ok)
            break;
        if (!g) {
            g = &gs[ng++];
            g->first = s;
        }
        if (has_suffix(s->name, "_bucket"))
            ok = hist_bucket(d, g, s);
        else if (has_suffix(s->name, "_sum"))
            g->nsum++;
        else if (!integral(s->value))
            ok = prom_fail(d, s->line, "%s = %g is not a count", s->name, s->value);
        else
            g->ncount++, g->count = s->value;
    }
    for (int k = 0; ok && k < ng; k++) {
        const hgroup *g = &gs[k];
        int line = g->first->line;
        if (!g->inf)
            ok = prom_fail(d, line, "%s: a label set without le=\"+Inf\"", f->name);
        else if (g->nsum != 1 || g->ncount != 1)
            ok = prom_fail(d, line, "%s: a label set with %d _sum and %d _count", f->name,
                           g->nsum, g->ncount);
        else if (g->count != g->inf_count)
            ok = prom_fail(d, line, "%s: _count %g != +Inf bucket %g", f->name, g->count,
                           g->inf_count);
    }
    free(gs);
    return ok && gs != NULL;
}

/* Rules on whole families, once every line is read. */
static bool check_families(prom_doc *d)
{
    for (size_t i = 0; i < d->nfams; i++) {
        const prom_family *f = &d->fams[i];
        int line = f->help_line ? f->help_line : f->type_line;
        if (!f->help_line || !f->type_line)
            return prom_fail(d, line, "%s has no %s", f->name, f->help_line ? "TYPE" : "HELP");
        if (f->nsamples == 0)
            return prom_fail(d, line, "%s has no samples", f->name);
        if (strncmp(f->name, "routepool_", 10) != 0 &&
            strncmp(f->name, "router_scatter_gather_", 22) != 0)
            return prom_fail(d, line, "%s: neither routepool_ nor router_scatter_gather_", f->name);
        if (strcmp(f->type, "counter") == 0 && !has_suffix(f->name, "_total"))
            return prom_fail(d, line, "counter %s does not end in _total", f->name);
        if (strcmp(f->type, "counter") != 0 && has_suffix(f->name, "_total"))
            return prom_fail(d, line, "%s %s ends in _total", f->type, f->name);
        if (strcmp(f->type, "histogram") == 0 && !check_histogram(d, (int)i))
            return false;
    }
    for (size_t i = 0; i < d->n; i++) {
        const prom_sample *s = &d->s[i];
        if (strcmp(d->fams[s->family].type, "counter") == 0 && !(s->value >= 0))
            return prom_fail(d, s->line, "counter %s = %g", s->name, s->value);
    }
    return true;
}

/* Whether text[0..len) is valid UTF-8 (no overlong forms, surrogates or
 * code points above U+10FFFF): the format is UTF-8 text.  *bad gets the
 * offset of the first invalid byte. */
static bool utf8_valid(const unsigned char *p, size_t len, size_t *bad)
{
    for (size_t i = 0; i < len;) {
        unsigned c = p[i], cp;
        size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        *bad = i;
        if (n == 0 || i + n > len)
            return false;
        cp = n == 1 ? c : c & (0x3fu >> (n - 1));
        for (size_t k = 1; k < n; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n;
    }
    return true;
}

/* Check and parse text (len bytes).  false: d->err says where and why. */
static bool prom_parse(prom_doc *d, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    int line = 0;

    memset(d, 0, sizeof *d);
    d->current = -1;
    if (len == 0)
        return prom_fail(d, 0, "empty exposition");
    if (text[len - 1] != '\n')
        return prom_fail(d, 0, "the last line does not end in a newline");
    if (memchr(text, '\0', len))
        return prom_fail(d, 0, "a NUL byte in the text");
    size_t bad;
    if (!utf8_valid((const unsigned char *)text, len, &bad))
        return prom_fail(d, 0, "not valid UTF-8 at byte %zu", bad);
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        bool ok;
        line++;
        if (eol == p)
            return prom_fail(d, line, "blank line");
        if (memchr(p, '\r', (size_t)(eol - p)))
            return prom_fail(d, line, "carriage return");
        ok = *p == '#' ? parse_comment(d, line, p, eol) : parse_sample(d, line, p, eol);
        if (!ok)
            return false;
        p = eol + 1;
    }
    return check_families(d);
}

/* Sum of the samples named name whose labels include every (label, value)
 * pair of the NULL-terminated list; *matches gets how many there were. */
static double prom_vsum(const prom_doc *d, int *matches, const char *name, va_list ap)
{
    double sum = 0;

    *matches = 0;
    for (size_t i = 0; i < d->n; i++) {
        const prom_sample *s = &d->s[i];
        bool ok = strcmp(s->name, name) == 0;
        va_list aq;
        va_copy(aq, ap);
        for (const char *l; ok && (l = va_arg(aq, const char *)) != NULL;) {
            const char *want = va_arg(aq, const char *), *have = label_of(s, l);
            ok = have && strcmp(have, want) == 0;
        }
        va_end(aq);
        if (ok) {
            (*matches)++;
            sum += s->value;
        }
    }
    return sum;
}

static double prom_sum(const prom_doc *d, const char *name, ...)
{
    va_list ap;
    int matches;
    double v;

    va_start(ap, name);
    v = prom_vsum(d, &matches, name, ap);
    va_end(ap);
    cr_assert_gt(matches, 0, "no sample %s with those labels", name);
    return v;
}

/* The value of the one sample named name with those labels. */
static double prom_get(const prom_doc *d, const char *name, ...)
{
    va_list ap;
    int matches;
    double v;

    va_start(ap, name);
    v = prom_vsum(d, &matches, name, ap);
    va_end(ap);
    cr_assert_eq(matches, 1, "%d samples %s with those labels, expected 1", matches, name);
    return v;
}

/* Exactly-representable counts: compare as integers. */
static uint64_t prom_u64(double v)
{
    cr_assert(integral(v), "%g is not a count", v);
    return (uint64_t)v;
}

/* ======================================================================
 * Helpers
 * ====================================================================== */

static char *format_text(rp_pool *p, size_t *len)
{
    char *text = NULL;
    size_t n = 0;

    cr_assert_eq(rp_metrics_format_prometheus(p, &text, &n), 0, "%s", rp_errmsg());
    cr_assert_not_null(text);
    cr_assert_eq(strlen(text), n, "len is the string's length");
    if (len)
        *len = n;
    return text;
}

/* The pool's exposition, checked and parsed; every sample carries
 * pool="<name>". */
static void fetch(rp_pool *p, const char *pool_name, prom_doc *d)
{
    size_t len;
    char *text = format_text(p, &len);
    bool ok = prom_parse(d, text, len);

    if (!ok)
        fprintf(stderr, "---- rejected exposition ----\n%s----\n", text);
    free(text);
    cr_assert(ok, "strict checker: %s", d->err);
    for (size_t i = 0; i < d->n; i++) {
        const char *v = label_of(&d->s[i], "pool");
        cr_assert(v && strcmp(v, pool_name) == 0, "line %d: %s has pool=\"%s\"", d->s[i].line,
                  d->s[i].name, v ? v : "(none)");
    }
}

static void snap(rp_pool *p, rp_metrics *m)
{
    cr_assert_eq(rp_metrics_snapshot(p, m), 0, "%s", rp_errmsg());
    cr_assert_eq(m->routees, rp_pool_size(p));
}

/* wait_idle, then wait until every routee left its busy period (see the
 * timing notes at the top). */
static void settle(rp_pool *p)
{
    const int64_t deadline = now_ms() + 5000;

    cr_assert_eq(rp_pool_wait_idle(p, 10000), 0, "pool idle");
    for (;;) {
        bool busy = false;
        for (size_t i = 0; i < rp_pool_size(p); i++)
            busy = busy || rp_routee_busy(rp_pool_routee(p, i));
        if (!busy)
            break;
        cr_assert(now_ms() < deadline, "a routee still reads busy 5 s after wait_idle");
        sleep_ms(1);
    }
    /* Routees may spin briefly (idle_spin_us, up to 50 us by default) before they
     * sleep and count the sleep: wait until the sleep counters hold still
     * for 20 ms, far longer than a spin. */
    for (uint64_t last = UINT64_MAX;;) {
        uint64_t sum = 0;
        for (size_t i = 0; i < rp_pool_size(p); i++) {
            rp_routee_stats st;
            cr_assert_eq(rp_routee_stats_get(rp_pool_routee(p, i), &st), 0);
            sum += st.sleeps;
        }
        if (sum == last)
            return;
        cr_assert(now_ms() < deadline, "routees still going to sleep 5 s after wait_idle");
        last = sum;
        sleep_ms(20);
    }
}

static const char *idx(char buf[static 24], size_t i)
{
    snprintf(buf, 24, "%zu", i);
    return buf;
}

static uint64_t ceil16(uint64_t n)
{
    return (n + RP_METRICS_SAMPLE - 1) / RP_METRICS_SAMPLE;
}

static uint64_t sum_field(const rp_metrics *m, size_t offset)
{
    uint64_t s = 0;
    for (size_t i = 0; i < m->routees; i++)
        s += *(const uint64_t *)((const char *)&m->routee[i] + offset);
    return s;
}

#define SUM(m, field) sum_field((m), offsetof(rp_routee_metrics, field))

static int reason_slot(int code)
{
    for (int k = 0; k < RP_METRICS_REASONS; k++)
        if (rp_metrics_reason_codes[k] == code)
            return k;
    cr_assert_fail("reason %d has no slot", code);
    return -1;
}

/* The series of one histogram for one label set, in order: cumulative
 * buckets must match the snapshot's per-bucket counts and bounds. */
static void expect_histogram(const prom_doc *d, const char *name, const char *routee,
                             const double *bounds, const uint64_t *buckets, int nb, double sum,
                             uint64_t count, double sum_tolerance)
{
    char bname[PROM_NAME_MAX + 8], sname[PROM_NAME_MAX + 8], cname[PROM_NAME_MAX + 8];
    uint64_t cum = 0;
    int b = 0;

    snprintf(bname, sizeof bname, "%s_bucket", name);
    snprintf(sname, sizeof sname, "%s_sum", name);
    snprintf(cname, sizeof cname, "%s_count", name);
    for (size_t i = 0; i < d->n; i++) {
        const prom_sample *s = &d->s[i];
        const char *r = label_of(s, "routee");
        double le;
        if (strcmp(s->name, bname) != 0 || (routee ? !r || strcmp(r, routee) != 0 : r != NULL))
            continue;
        cr_assert_lt(b, nb, "%s: more than %d buckets", name, nb);
        cum += buckets[b];
        cr_assert(parse_float(label_of(s, "le"), strlen(label_of(s, "le")), &le));
        if (b < nb - 1)
            cr_assert_float_eq(le, bounds[b], 1e-12 * fabs(bounds[b]), "%s bound %d", name, b);
        else
            cr_assert(isinf(le) && le > 0, "%s: last bound is +Inf", name);
        cr_assert_eq(prom_u64(s->value), cum, "%s routee %s bucket %d", name,
                     routee ? routee : "-", b);
        b++;
    }
    cr_assert_eq(b, nb, "%s: %d buckets, expected %d", name, b, nb);
    cr_assert_eq(cum, count, "%s: bucket total %" PRIu64 " != snapshot count %" PRIu64, name,
                 cum, count);
    if (routee) {
        cr_assert_eq(prom_u64(prom_get(d, cname, "routee", routee, NULL)), count);
        cr_assert_float_eq(prom_get(d, sname, "routee", routee, NULL), sum,
                           sum_tolerance + 1e-8 * fabs(sum), "%s_sum", name);
    } else {
        cr_assert_eq(prom_u64(prom_get(d, cname, NULL)), count);
        cr_assert_float_eq(prom_get(d, sname, NULL), sum, sum_tolerance + 1e-8 * fabs(sum));
    }
}

/* Every value of the snapshot, as the text shows it. */
static void expect_text_matches(const prom_doc *d, const rp_metrics *m)
{
    char r[24];

    cr_assert_eq(prom_u64(prom_get(d, "routepool_pool_routees", NULL)), m->routees);
    cr_assert_eq(prom_u64(prom_get(d, "routepool_pool_submitted_total", NULL)), m->submitted);
    cr_assert_eq(prom_u64(prom_get(d, "routepool_pool_memory_bytes", NULL)), m->memory_bytes);
    for (size_t i = 0; i < m->routees; i++) {
        const rp_routee_metrics *rm = &m->routee[i];
        idx(r, i);
#define EXPECT_SCALAR(field, type, name, help)                                              \
        cr_assert_eq(prom_u64(prom_get(d, name, "routee", r, NULL)), rm->field,              \
                     "%s routee %s", name, r);
        RP_ROUTEE_METRICS(EXPECT_SCALAR)
#undef EXPECT_SCALAR
        cr_assert_float_eq(prom_get(d, "routepool_routee_busy_seconds_total", "routee", r, NULL),
                           rm->busy_seconds, 1.5e-9);
        for (int k = 0; k < RP_METRICS_REASONS; k++) {
            const char *why = rp_metrics_reason_labels[k];
            int code = rp_metrics_reason_codes[k];
            cr_assert_eq(prom_u64(prom_get(d, "routepool_routee_handed_back_total", "routee", r,
                                           "reason", why, NULL)),
                         rm->handed_back[k], "handed back %s", why);
            if (code == RP_EDROPPED || code == RP_EEVICTED)
                cr_assert_eq(prom_u64(prom_get(d, "routepool_routee_dropped_total", "routee", r,
                                               "reason", why, NULL)),
                             rm->handed_back[k], "dropped %s", why);
        }
        expect_histogram(d, RP_METRICS_QUEUED_AT_ENQUEUE, r, rp_metrics_depth_bounds,
                         rm->depth_buckets, RP_DEPTH_BUCKETS, (double)rm->depth_sum,
                         rm->depth_count, 0.5);
        expect_histogram(d, "routepool_routee_queue_wait_seconds", r, rp_metrics_wait_bounds,
                         rm->wait_buckets, RP_WAIT_BUCKETS, rm->wait_sum_seconds, rm->wait_count,
                         1e-9);
    }
    cr_assert_eq(prom_sum(d, "routepool_routee_dropped_total", NULL),
                 prom_sum(d, "routepool_routee_handed_back_total", "reason", "drop-new", NULL) +
                     prom_sum(d, "routepool_routee_handed_back_total", "reason", "drop-head",
                              NULL),
                 "dropped holds exactly the two overflow reasons");
    for (int o = 0; o < RP_SCATTER_OUTCOMES; o++)
        cr_assert_eq(prom_u64(prom_get(d, "router_scatter_gather_resolved_total", "outcome",
                                       rp_scatter_outcome_name(o), NULL)),
                     m->scatter.resolved[o], "outcome %s", rp_scatter_outcome_name(o));
    expect_histogram(d, "router_scatter_gather_latency_seconds", NULL, rp_scatter_latency_bounds,
                     m->scatter.latency_buckets, RP_SCATTER_LATENCY_BUCKETS + 1,
                     m->scatter.latency_sum_seconds, m->scatter.latency_count, 1e-9);
}

/* A pool with defaults apart from these. */
static rp_pool *pool_new(const char *name, unsigned routees, bool steal, bool metrics)
{
    rp_pool_options o;
    rp_pool *p = NULL;

    rp_pool_options_init(&o);
    o.name = name;
    o.routees = routees;
    o.steal = steal;
    o.metrics = metrics;
    o.on_undelivered = probe_undelivered;
    cr_assert_eq(rp_pool_create(&p, &o), 0, "%s", rp_errmsg());
    return p;
}

static void noop_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
}

static atomic_int counted;

static void count_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_fetch_add_explicit(&counted, 1, memory_order_relaxed);
}

static tlog LOG;
static gate G;

static void setup(void)
{
    tlog_init(&LOG);
    gate_init(&G);
    atomic_init(&counted, 0);
}

/* ======================================================================
 * The checker itself: it accepts the format and rejects each violation.
 * ====================================================================== */

static const char GOOD[] =
    "# HELP routepool_x_total Help with \\\\ and \\n escapes.\n"
    "# TYPE routepool_x_total counter\n"
    "routepool_x_total{pool=\"a\\\"b\\\\c\\nd\",routee=\"0\"} 3\n"
    "routepool_x_total{pool=\"p\",routee=\"1\"} 1.5e3\n"
    "# TYPE routepool_g gauge\n"
    "# HELP routepool_g A gauge.\n"
    "routepool_g -2.5\n"
    "routepool_g{a=\"\"} NaN\n"
    "# HELP routepool_h A histogram.\n"
    "# TYPE routepool_h histogram\n"
    "routepool_h_bucket{r=\"0\",le=\"1e-06\"} 0\n"
    "routepool_h_bucket{r=\"0\",le=\"0.5\"} 2\n"
    "routepool_h_bucket{r=\"0\",le=\"+Inf\"} 2\n"
    "routepool_h_sum{r=\"0\"} 0.25\n"
    "routepool_h_count{r=\"0\"} 2\n"
    "routepool_h_bucket{r=\"1\",le=\"+Inf\"} 0\n"
    "routepool_h_sum{r=\"1\"} 0\n"
    "routepool_h_count{r=\"1\"} 0\n"
    "# HELP router_scatter_gather_y_total Y.\n"
    "# TYPE router_scatter_gather_y_total counter\n"
    "router_scatter_gather_y_total +Inf\n";

Test(checker, accepts_a_well_formed_exposition_and_parses_it)
{
    prom_doc d;

    cr_assert(prom_parse(&d, GOOD, strlen(GOOD)), "%s", d.err);
    cr_assert_eq(d.nfams, 4);
    cr_assert_eq(d.n, 13);
    cr_assert_str_eq(d.fams[0].help, "Help with \\ and \n escapes.");
    cr_assert_str_eq(label_of(&d.s[0], "pool"), "a\"b\\c\nd");
    cr_assert_eq(prom_get(&d, "routepool_x_total", "routee", "1", NULL), 1500.0);
    cr_assert(isnan(prom_get(&d, "routepool_g", "a", "", NULL)));
    cr_assert_eq(prom_sum(&d, "routepool_h_count", NULL), 2.0);
    cr_assert(isinf(prom_get(&d, "router_scatter_gather_y_total", NULL)));
    prom_free(&d);
}

/* Each case: GOOD with one substitution (from -> to) that breaks one rule. */
static const struct bad_case {
    const char *rule, *from, *to;
} BAD[] = {
    {"blank line", "routepool_g -2.5\n", "routepool_g -2.5\n\n"},
    {"free comment", "# TYPE routepool_g gauge\n", "# TYPE routepool_g gauge\n# hello\n"},
    {"bad metric name", "routepool_g -2.5", "routepool-g -2.5"},
    {"metric name starting with a digit", "routepool_g -2.5", "9routepool_g -2.5"},
    {"bad label name", "{a=\"\"}", "{a:b=\"\"}"},
    {"reserved label name", "{a=\"\"}", "{__a=\"\"}"},
    {"duplicate label", "{a=\"\"}", "{a=\"\",a=\"x\"}"},
    {"trailing comma", "{a=\"\"}", "{a=\"\",}"},
    {"empty braces", "routepool_g -2.5", "routepool_g{} -2.5"},
    {"unquoted label value", "{a=\"\"}", "{a=x}"},
    {"unescaped quote", "pool=\"a\\\"b", "pool=\"a\"b"},
    {"bad escape in label value", "\\\\c", "\\tc"},
    {"unterminated label value", "{a=\"\"} NaN", "{a=\"} NaN"},
    {"bad escape in help", "Help with", "Help \\t with"},
    {"empty help", "# HELP routepool_g A gauge.", "# HELP routepool_g "},
    {"unknown type", "routepool_g gauge", "routepool_g gaug"},
    {"bad float", "-2.5", "-2.5x"},
    {"empty value", "routepool_g -2.5", "routepool_g "},
    {"lower-case inf", "+Inf\n", "+inf\n"},
    {"two spaces", "routepool_g -2.5", "routepool_g  -2.5"},
    {"timestamp", "routepool_g -2.5", "routepool_g -2.5 1700000000"},
    {"second HELP", "# HELP routepool_g A gauge.\n", "# HELP routepool_g A gauge.\n# HELP routepool_g B.\n"},
    {"second TYPE", "# TYPE routepool_g gauge\n", "# TYPE routepool_g gauge\n# TYPE routepool_g gauge\n"},
    {"missing TYPE", "# TYPE routepool_g gauge\n", ""},
    {"missing HELP", "# HELP routepool_g A gauge.\n", ""},
    {"TYPE again after samples", "routepool_g{a=\"\"} NaN\n", "routepool_g{a=\"\"} NaN\n# TYPE routepool_g gauge\n"},
    {"samples not contiguous", "router_scatter_gather_y_total +Inf\n",
     "router_scatter_gather_y_total +Inf\nroutepool_g{b=\"1\"} 1\n"},
    {"family declared twice", "router_scatter_gather_y_total +Inf\n",
     "router_scatter_gather_y_total +Inf\n# HELP routepool_g again.\n"},
    {"duplicate series", "routepool_g -2.5\n", "routepool_g -2.5\nroutepool_g 1\n"},
    {"counter without _total", "routepool_x_total", "routepool_x"},
    {"gauge ending in _total", "routepool_g", "routepool_g_total"},
    {"foreign prefix", "router_scatter_gather_y_total", "other_y_total"},
    {"negative counter", "1.5e3\n", "-1\n"},
    {"buckets not cumulative", "le=\"0.5\"} 2\n", "le=\"0.5\"} 0\nroutepool_h_bucket{r=\"0\",le=\"0.7\"} 3\n"},
    {"bounds not increasing", "le=\"1e-06\"", "le=\"0.6\""},
    {"no +Inf bucket", "routepool_h_bucket{r=\"0\",le=\"+Inf\"} 2\n", ""},
    {"bucket after +Inf", "routepool_h_sum{r=\"0\"}", "routepool_h_bucket{r=\"0\",le=\"9\"} 2\nroutepool_h_sum{r=\"0\"}"},
    {"_count differs from +Inf", "routepool_h_count{r=\"0\"} 2", "routepool_h_count{r=\"0\"} 3"},
    {"no _sum", "routepool_h_sum{r=\"1\"} 0\n", ""},
    {"no _count", "routepool_h_count{r=\"1\"} 0\n", ""},
    {"bucket without le", "{r=\"1\",le=\"+Inf\"}", "{r=\"1\"}"},
    {"bad le", "le=\"0.5\"", "le=\"half\""},
    {"fractional bucket", "le=\"0.5\"} 2\n", "le=\"0.5\"} 1.5\n"},
    {"le outside a bucket", "routepool_g -2.5", "routepool_g{le=\"1\"} -2.5"},
    {"bare histogram sample", "routepool_h_sum{r=\"1\"} 0\n", "routepool_h_sum{r=\"1\"} 0\nroutepool_h 1\n"},
    {"carriage return", "routepool_g -2.5\n", "routepool_g -2.5\r\n"},
    {"a byte that is not UTF-8", "pool=\"p\"", "pool=\"p\xff\""},
    {"an overlong UTF-8 form", "pool=\"p\"", "pool=\"p\xc0\xaf\""},
    {"a UTF-8 surrogate", "pool=\"p\"", "pool=\"p\xed\xa0\x80\""},
};

/* text with every occurrence of from replaced by to (malloc'd). */
static char *substitute(const char *text, const char *from, const char *to)
{
    size_t nfrom = strlen(from), nto = strlen(to), hits = 0;
    char *out, *o;

    for (const char *at = text; (at = strstr(at, from)) != NULL; at += nfrom)
        hits++;
    cr_assert_gt(hits, 0, "'%s' is not in GOOD", from);
    out = o = malloc(strlen(text) + hits * nto + 1);
    cr_assert_not_null(out);
    for (const char *at; (at = strstr(text, from)) != NULL; text = at + nfrom) {
        memcpy(o, text, (size_t)(at - text));
        o += at - text;
        memcpy(o, to, nto);
        o += nto;
    }
    strcpy(o, text);
    return out;
}

Test(checker, rejects_each_broken_rule)
{
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char *text = substitute(GOOD, BAD[i].from, BAD[i].to);
        prom_doc d;
        bool ok = prom_parse(&d, text, strlen(text));
        cr_expect_not(ok, "the checker accepted a text with: %s", BAD[i].rule);
        if (!ok)
            cr_log_info("%-36s -> %s", BAD[i].rule, d.err);
        prom_free(&d);
        free(text);
    }
    {
        prom_doc d;
        const char *no_newline = "# HELP routepool_g A.\n# TYPE routepool_g gauge\nroutepool_g 1";
        cr_expect_not(prom_parse(&d, no_newline, strlen(no_newline)), "last line without \\n");
        prom_free(&d);
        cr_expect_not(prom_parse(&d, "", 0), "empty text");
        prom_free(&d);
    }
}

/* ======================================================================
 * The exposition
 * ====================================================================== */

static const struct {
    const char *name, *type;
} FAMILIES[] = {
    {"routepool_pool_routees", "gauge"},
    {"routepool_pool_submitted_total", "counter"},
    {"routepool_pool_memory_bytes", "gauge"},
#define FAMILY_ROW(field, type, name, help) {name, type == RP_METRIC_GAUGE ? "gauge" : "counter"},
    RP_ROUTEE_METRICS(FAMILY_ROW)
#undef FAMILY_ROW
    {"routepool_routee_busy_seconds_total", "counter"},
    {"routepool_routee_dropped_total", "counter"},
    {"routepool_routee_handed_back_total", "counter"},
    {RP_METRICS_QUEUED_AT_ENQUEUE, "histogram"},
    {"routepool_routee_queue_wait_seconds", "histogram"},
    {"router_scatter_gather_resolved_total", "counter"},
    {"router_scatter_gather_latency_seconds", "histogram"},
};

Test(exposition, has_every_family_once_with_its_type_and_label_sets, .init = setup)
{
    rp_pool *p = pool_new("fam", 3, true, true);
    prom_doc d;
    char r[24];

    for (int i = 0; i < 100; i++)
        cr_assert_eq(rp_pool_submit(p, noop_job, NULL), 0);
    settle(p);
    fetch(p, "fam", &d);
    cr_assert_eq(d.nfams, sizeof FAMILIES / sizeof FAMILIES[0], "%zu families", d.nfams);
    for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++) {
        int f = find_family(&d, FAMILIES[i].name);
        cr_assert_geq(f, 0, "family %s missing", FAMILIES[i].name);
        cr_assert_str_eq(d.fams[f].type, FAMILIES[i].type, "TYPE of %s", FAMILIES[i].name);
    }
    /* Label sets: one series per routee; every reason / outcome. */
    for (size_t i = 0; i < 3; i++) {
        idx(r, i);
        for (int k = 0; k < RP_METRICS_REASONS; k++)
            prom_get(&d, "routepool_routee_handed_back_total", "routee", r, "reason",
                     rp_metrics_reason_labels[k], NULL);
        prom_get(&d, "routepool_routee_dropped_total", "routee", r, "reason", "drop-new", NULL);
        prom_get(&d, "routepool_routee_dropped_total", "routee", r, "reason", "drop-head", NULL);
    }
    cr_assert_eq(d.fams[find_family(&d, "routepool_routee_dropped_total")].nsamples, 3 * 2);
    cr_assert_eq(d.fams[find_family(&d, "routepool_routee_handed_back_total")].nsamples,
                 3 * RP_METRICS_REASONS);
    cr_assert_eq(d.fams[find_family(&d, RP_METRICS_QUEUED_AT_ENQUEUE)].nsamples,
                 3 * (RP_DEPTH_BUCKETS + 2));
    cr_assert_eq(d.fams[find_family(&d, "routepool_routee_queue_wait_seconds")].nsamples,
                 3 * (RP_WAIT_BUCKETS + 2));
    cr_assert_eq(d.fams[find_family(&d, "router_scatter_gather_resolved_total")].nsamples,
                 RP_SCATTER_OUTCOMES);
    for (int o = 0; o < RP_SCATTER_OUTCOMES; o++)
        prom_get(&d, "router_scatter_gather_resolved_total", "outcome",
                 rp_scatter_outcome_name(o), NULL);
    prom_free(&d);
    rp_pool_destroy(p);
}

Test(exposition, format_buffer_equals_what_write_prometheus_writes_to_a_file, .init = setup)
{
    rp_pool *p = pool_new("same", 2, true, true);
    size_t len, got;
    char *text, *file;
    FILE *f = tmpfile();

    cr_assert_not_null(f);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(rp_pool_submit(p, noop_job, NULL), 0);
    settle(p);
    text = format_text(p, &len);
    cr_assert_eq(rp_metrics_write_prometheus(p, f), 0, "%s", rp_errmsg());
    cr_assert_eq(fflush(f), 0);
    cr_assert_eq((long)len, ftell(f), "file and buffer have the same length");
    rewind(f);
    file = malloc(len + 1);
    cr_assert_not_null(file);
    got = fread(file, 1, len + 1, f);
    cr_assert_eq(got, len);
    cr_assert(memcmp(file, text, len) == 0, "file and buffer have the same bytes");
    free(file);
    free(text);
    fclose(f);
    rp_pool_destroy(p);
}

Test(exposition, pool_name_with_quote_backslash_and_newline_is_escaped, .init = setup)
{
    static const char name[] = "q\"b\\s\nx";
    rp_pool *p = pool_new(name, 2, true, true);
    char *text;
    prom_doc d;

    cr_assert_eq(rp_pool_submit(p, noop_job, NULL), 0);
    settle(p);
    text = format_text(p, NULL);
    cr_assert_not_null(strstr(text, "{pool=\"q\\\"b\\\\s\\nx\""), "escaped as q\\\"b\\\\s\\nx");
    cr_assert_null(strstr(text, "s\nx"), "no raw newline from the name");
    free(text);
    fetch(p, name, &d); /* every sample's pool label decodes to the name */
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_pool_routees", NULL)), 2);
    prom_free(&d);
    rp_pool_destroy(p);
}

Test(exposition, pool_name_that_is_not_utf8_is_written_as_valid_utf8, .init = setup)
{
    /* A stray continuation byte, a truncated sequence, a tab, then valid
     * two- and three-byte characters. */
    static const char name[] = "a\xff" "b\xc3" "c\td\xc3\xa9\xe2\x82\xac";
    rp_pool *p = pool_new(name, 2, true, true);
    char *text;
    size_t len, bad;
    prom_doc d;

    text = format_text(p, &len);
    cr_assert(utf8_valid((const unsigned char *)text, len, &bad), "invalid UTF-8 at byte %zu",
              bad);
    cr_assert_not_null(strstr(text, "{pool=\"a\\\\xFFb\\\\xC3c\\\\x09d\xc3\xa9\xe2\x82\xac\""),
                       "invalid bytes and the tab as the text \\xNN, UTF-8 kept");
    free(text);
    fetch(p, "a\\xFFb\\xC3c\\x09d\xc3\xa9\xe2\x82\xac", &d);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_pool_routees", NULL)), 2);
    prom_free(&d);
    rp_pool_destroy(p);
}

/* The page of several pools: checked, parsed, and every sample labelled by
 * one of the pools. */
static void fetch_page(rp_pool *const *pools, size_t n, rp_metrics_writer_fn extra, void *user,
                       prom_doc *d)
{
    char *text = NULL;
    size_t len = 0;
    bool ok;

    cr_assert_eq(rp_metrics_format_page(&text, &len, pools, n, extra, user), 0, "%s",
                 rp_errmsg());
    cr_assert_eq(strlen(text), len);
    ok = prom_parse(d, text, len);
    if (!ok)
        fprintf(stderr, "---- rejected page ----\n%s----\n", text);
    free(text);
    cr_assert(ok, "strict checker: %s", d->err);
}

/* The samples of one pool, as a document of their own. */
static void pool_part(const prom_doc *page, const char *pool, prom_doc *out)
{
    memset(out, 0, sizeof *out);
    out->fams = page->fams;
    out->nfams = page->nfams;
    out->s = calloc(page->n ? page->n : 1, sizeof *out->s);
    cr_assert_not_null(out->s);
    for (size_t i = 0; i < page->n; i++) {
        const char *v = label_of(&page->s[i], "pool");
        if (v && strcmp(v, pool) == 0)
            out->s[out->n++] = page->s[i];
    }
}

Test(exposition, two_pools_share_one_page_with_each_family_declared_once, .init = setup)
{
    rp_pool *pools[2] = {pool_new("ingest", 2, true, true), pool_new("render", 3, true, true)};
    rp_metrics m[2];
    prom_doc d, part;

    for (int i = 0; i < 500; i++)
        cr_assert_eq(rp_pool_submit(pools[i % 2], noop_job, NULL), 0);
    settle(pools[0]);
    settle(pools[1]);
    fetch_page(pools, 2, NULL, NULL, &d);
    cr_assert_eq(d.nfams, sizeof FAMILIES / sizeof FAMILIES[0], "each family once: %zu", d.nfams);
    for (size_t i = 0; i < d.n; i++) {
        const char *v = label_of(&d.s[i], "pool");
        cr_assert(v && (strcmp(v, "ingest") == 0 || strcmp(v, "render") == 0),
                  "line %d: pool=\"%s\"", d.s[i].line, v ? v : "(none)");
    }
    for (int k = 0; k < 2; k++) {
        snap(pools[k], &m[k]);
        pool_part(&d, k ? "render" : "ingest", &part);
        expect_text_matches(&part, &m[k]);
        free(part.s);
        rp_metrics_release(&m[k]);
    }
    cr_assert_eq(prom_u64(prom_sum(&d, "routepool_routee_jobs_run_total", NULL)), 500);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_pool_routees", "pool", "render", NULL)), 3);
    prom_free(&d);
    rp_pool_destroy(pools[0]);
    rp_pool_destroy(pools[1]);
}

/* A family of the program's own, as a cluster node's will be added. */
static int extra_family(FILE *f, void *user)
{
    int *calls = user;

    (*calls)++;
    fputs("# HELP routepool_node_up 1 while the node is serving.\n"
          "# TYPE routepool_node_up gauge\n"
          "routepool_node_up{node=\"n1\"} 1\n", f);
    return 0;
}

static int failing_family(FILE *f, void *user)
{
    (void)f;
    (void)user;
    return RP_ESYS;
}

Test(exposition, page_extra_writer_adds_its_families_after_the_pools, .init = setup)
{
    rp_pool *pools[1] = {pool_new("one", 1, true, true)};
    int calls = 0;
    prom_doc d;
    char *text = NULL;

    fetch_page(pools, 1, extra_family, &calls, &d);
    cr_assert_eq(calls, 1);
    cr_assert_eq(d.nfams, sizeof FAMILIES / sizeof FAMILIES[0] + 1);
    cr_assert_eq(find_family(&d, "routepool_node_up"), (int)d.nfams - 1, "written last");
    cr_assert_eq(prom_get(&d, "routepool_node_up", "node", "n1", NULL), 1.0);
    prom_free(&d);
    fetch_page(NULL, 0, extra_family, &calls, &d); /* no pool: the extra families only */
    cr_assert_eq(d.nfams, 1);
    prom_free(&d);
    cr_assert_eq(rp_metrics_format_page(&text, NULL, pools, 1, failing_family, NULL), RP_ESYS);
    cr_assert_null(text);
    cr_assert_not_null(strstr(rp_errmsg(), "rp_metrics_format_page: the extra writer failed"),
                       "%s", rp_errmsg());
    rp_pool_destroy(pools[0]);
}

Test(exposition, page_refuses_null_entries_and_pools_sharing_a_name, .init = setup)
{
    rp_pool *a = pool_new("same", 1, true, true), *b = pool_new("same", 1, true, true);
    rp_pool *pools[3] = {a, NULL, b};
    char *text = (char *)1;

    cr_assert_eq(rp_metrics_write_page(stdout, pools, 2, NULL, NULL), RP_EINVAL);
    cr_assert_str_eq(rp_errmsg(), "rp_metrics_write_page: pools[1] is NULL");
    pools[1] = b;
    cr_assert_eq(rp_metrics_format_page(&text, NULL, pools, 2, NULL, NULL), RP_EINVAL);
    cr_assert_null(text);
    cr_assert_str_eq(rp_errmsg(),
                     "rp_metrics_format_page: pools[0] and pools[1] are both named same");
    cr_assert_eq(rp_metrics_write_page(NULL, pools, 1, NULL, NULL), RP_EINVAL);
    cr_assert_str_eq(rp_errmsg(), "rp_metrics_write_page: f is NULL");
    cr_assert_eq(rp_metrics_write_page(stdout, NULL, 1, NULL, NULL), RP_EINVAL);
    cr_assert_str_eq(rp_errmsg(), "rp_metrics_write_page: pools is NULL");
    cr_assert_eq(rp_metrics_format_page(NULL, NULL, pools, 1, NULL, NULL), RP_EINVAL);
    rp_pool_destroy(a);
    rp_pool_destroy(b);
}

Test(exposition, sampled_histograms_say_count_is_not_a_job_count, .init = setup)
{
    rp_pool *p = pool_new("help", 1, true, true);
    prom_doc d;

    fetch(p, "help", &d);
    cr_assert_not_null(strstr(d.fams[find_family(&d, RP_METRICS_QUEUED_AT_ENQUEUE)].help,
                              "_count counts observed enqueues, not jobs"));
    cr_assert_not_null(strstr(d.fams[find_family(&d, "routepool_routee_queue_wait_seconds")].help,
                              "_count counts observed jobs, not jobs run"));
    cr_assert_not_null(strstr(d.fams[find_family(&d, "routepool_routee_steals_total")].help,
                              "Jobs this routee stole from other routees"));
    cr_assert_lt(find_family(&d, "routepool_routee_stolen_total"), 0, "the old name is gone");
    prom_free(&d);
    rp_pool_destroy(p);
}

Test(exposition, snapshot_agrees_with_the_text_value_for_value, .init = setup)
{
    enum { TELLS = 40, SUBMITS = 3000 };
    static probe pr[TELLS + SUBMITS];
    rp_pool_options o;
    rp_pool *p = NULL;
    rp_metrics m;
    prom_doc d;
    int fates = 0;

    /* Some of everything: runs, steals, drops, busy time, samples. */
    rp_pool_options_init(&o);
    o.name = "agree";
    o.routees = 2;
    o.mailbox_capacity = 8;
    o.overflow = RP_OVERFLOW_DROP_NEW;
    o.on_undelivered = probe_undelivered;
    cr_assert_eq(rp_pool_create(&p, &o), 0);
    probe_init_n(pr, TELLS + SUBMITS, NULL, 0, NULL);
    probe_init(&pr[0], NULL, 0, &G);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &pr[0]), 0);
    cr_assert(gate_wait_entered(&G, 1, 5000));
    for (int i = 1; i < TELLS; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &pr[i]), 0);
    gate_open(&G);
    for (int i = TELLS; i < TELLS + SUBMITS; i++)
        cr_assert_eq(rp_pool_submit(p, probe_job, &pr[i]), 0);
    settle(p);
    snap(p, &m);
    fetch(p, "agree", &d);
    expect_text_matches(&d, &m);
    for (int i = 0; i < TELLS + SUBMITS; i++) {
        cr_assert_eq(probe_runs(&pr[i]) + probe_undel(&pr[i]), 1, "job %d: one fate", i);
        fates += probe_undel(&pr[i]);
    }
    cr_assert_geq(m.routee[0].handed_back[reason_slot(RP_EDROPPED)], 31,
                  "40 tells: 1 running, 8 queued, 31 dropped");
    cr_assert_eq(SUM(&m, run), TELLS + SUBMITS - (uint64_t)fates);
    cr_assert_eq(m.routee[0].handed_back[reason_slot(RP_EDROPPED)] +
                     m.routee[1].handed_back[reason_slot(RP_EDROPPED)],
                 (uint64_t)fates);
    cr_assert_eq(m.submitted, TELLS + SUBMITS);
    prom_free(&d);
    rp_metrics_release(&m);
    rp_pool_destroy(p);
}

Test(exposition, bad_arguments_and_write_errors_are_reported, .init = setup)
{
    rp_pool *p = pool_new("args", 1, true, true);
    rp_metrics m;
    char *text = (char *)1;
    size_t len = 7;
    FILE *full;

    cr_assert_eq(rp_metrics_snapshot(NULL, &m), RP_EINVAL);
    cr_assert_eq(rp_metrics_snapshot(p, NULL), RP_EINVAL);
    rp_metrics_release(NULL);
    memset(&m, 0, sizeof m);
    rp_metrics_release(&m);
    cr_assert_eq(rp_metrics_write_prometheus(NULL, stdout), RP_EINVAL);
    cr_assert_eq(rp_metrics_write_prometheus(p, NULL), RP_EINVAL);
    cr_assert_eq(rp_metrics_format_prometheus(p, NULL, &len), RP_EINVAL);
    cr_assert_eq(rp_metrics_format_prometheus(NULL, &text, &len), RP_EINVAL);
    cr_assert_null(text, "out is NULL on failure");
    cr_assert_eq(rp_metrics_format_prometheus(p, &text, NULL), 0, "len may be NULL");
    free(text);
    /* A stream that fails every write. */
    full = fopen("/dev/full", "w");
    cr_assert_not_null(full);
    setvbuf(full, NULL, _IONBF, 0);
    cr_assert_eq(rp_metrics_write_prometheus(p, full), RP_ESYS);
    fclose(full);
    rp_pool_destroy(p);
}

/* For check_metrics_text.sh: a pool that went through drops, steals,
 * hand-backs and scatters, its text checked here and written to
 * RP_METRICS_PROM_OUT; and a page of it and a second pool (a name with
 * quotes, a backslash, a newline and a byte that is not UTF-8) plus an
 * extra family, written to RP_METRICS_PAGE_OUT. */
static void reply_job(rp_job_ctx *ctx, void *arg)
{
    rp_job_reply(ctx, arg);
}

static void write_out(const char *path, const char *text, size_t len)
{
    FILE *out;

    if (!path)
        return;
    out = fopen(path, "w");
    cr_assert_not_null(out, "cannot write %s", path);
    cr_assert_eq(fwrite(text, 1, len, out), len);
    cr_assert_eq(fclose(out), 0);
}

Test(exposition, is_written_for_external_checkers, .init = setup)
{
    const char *path = getenv("RP_METRICS_PROM_OUT");
    rp_pool_options o;
    rp_pool *p = NULL;
    rp_router *sg = NULL;
    rp_future *f = NULL;
    probe pr[20];
    char *text;
    size_t len;
    prom_doc d;

    rp_pool_options_init(&o);
    o.name = "ext";
    o.routees = 2;
    o.mailbox_capacity = 4;
    o.overflow = RP_OVERFLOW_DROP_HEAD;
    o.on_undelivered = probe_undelivered;
    cr_assert_eq(rp_pool_create(&p, &o), 0);
    probe_init_n(pr, 20, &LOG, 0, NULL);
    probe_init(&pr[0], &LOG, 0, &G);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &pr[0]), 0);
    cr_assert(gate_wait_entered(&G, 1, 5000));
    for (int i = 1; i < 20; i++)
        cr_assert_eq(rp_pool_submit(p, probe_job, &pr[i]), 0);
    gate_open(&G);
    cr_assert_eq(rp_router_create_scatter_gather(&sg, p, NULL, NULL), 0);
    cr_assert_eq(rp_router_ask(sg, reply_job, &pr[0], 0, &f), 0);
    cr_assert_eq(rp_future_wait(f, 10000), 0);
    rp_future_release(f);
    settle(p);
    text = format_text(p, &len);
    cr_assert(prom_parse(&d, text, len), "strict checker: %s", d.err);
    prom_free(&d);
    write_out(path, text, len);
    free(text);
    {
        /* The page: this pool and one whose name needs every escape. */
        rp_pool *q = pool_new("ext \"2\"\\\n\xff\xc3\xa9", 2, true, true);
        rp_pool *pools[2] = {p, q};
        int calls = 0;
        cr_assert_eq(rp_pool_submit(q, noop_job, NULL), 0);
        settle(q);
        cr_assert_eq(rp_metrics_format_page(&text, &len, pools, 2, extra_family, &calls), 0);
        cr_assert(prom_parse(&d, text, len), "strict checker: %s", d.err);
        prom_free(&d);
        write_out(getenv("RP_METRICS_PAGE_OUT"), text, len);
        free(text);
        rp_pool_destroy(q);
    }
    rp_router_destroy(sg);
    rp_pool_destroy(p);
}

/* ======================================================================
 * Counters
 * ====================================================================== */

Test(counters, jobs_run_enqueued_and_submitted_equal_the_jobs_submitted, .init = setup)
{
    enum { N = 10007 };
    rp_pool *p = pool_new("count", 3, true, true);
    rp_metrics m;
    prom_doc d;

    for (int i = 0; i < N; i++)
        cr_assert_eq(rp_pool_submit(p, count_job, NULL), 0);
    cr_assert_eq(rp_pool_wait_idle(p, 10000), 0);
    fetch(p, "count", &d);
    cr_assert_eq(atomic_load(&counted), N);
    cr_assert_eq(prom_u64(prom_sum(&d, "routepool_routee_jobs_run_total", NULL)), N);
    cr_assert_eq(prom_u64(prom_sum(&d, "routepool_routee_enqueued_total", NULL)), N);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_pool_submitted_total", NULL)), N);
    cr_assert_eq(prom_u64(prom_sum(&d, "routepool_routee_steals_total", NULL)),
                 prom_u64(prom_sum(&d, "routepool_routee_stolen_from_total", NULL)));
    cr_assert_eq(prom_sum(&d, "routepool_routee_handed_back_total", NULL), 0);
    cr_assert_eq(prom_sum(&d, "routepool_routee_rejected_total", NULL), 0);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_pool_routees", NULL)), 3);
    /* Round-robin: 3336, 3336, 3335 enqueued. */
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_routee_enqueued_total", "routee", "0", NULL)), 3336);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_routee_enqueued_total", "routee", "2", NULL)), 3335);
    snap(p, &m);
    cr_assert_eq(SUM(&m, run), N);
    cr_assert_eq(SUM(&m, enqueued), N);
    cr_assert_eq(m.submitted, N);
    rp_metrics_release(&m);
    prom_free(&d);
    rp_pool_destroy(p);
}

Test(counters, depth_and_busy_gauges_follow_a_held_routee_and_read_zero_when_idle, .init = setup)
{
    rp_pool *p = pool_new("gauge", 2, true, true);
    probe hold, pr[5];
    prom_doc d;

    probe_init(&hold, &LOG, -1, &G);
    probe_init_n(pr, 5, &LOG, 0, NULL);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 1), probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&G, 1, 5000));
    for (int i = 0; i < 5; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 1), probe_job, &pr[i]), 0);
    fetch(p, "gauge", &d);
    cr_assert_eq(prom_get(&d, "routepool_routee_queued_jobs", "routee", "1", NULL), 5);
    cr_assert_eq(prom_get(&d, "routepool_routee_busy", "routee", "1", NULL), 1);
    cr_assert_eq(prom_get(&d, "routepool_routee_queued_jobs", "routee", "0", NULL), 0);
    cr_assert_eq(prom_get(&d, "routepool_routee_busy", "routee", "0", NULL), 0);
    prom_free(&d);
    gate_open(&G);
    settle(p);
    fetch(p, "gauge", &d);
    cr_assert_eq(prom_sum(&d, "routepool_routee_queued_jobs", NULL), 0);
    cr_assert_eq(prom_sum(&d, "routepool_routee_busy", NULL), 0);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_routee_jobs_run_total", "routee", "1", NULL)), 6);
    prom_free(&d);
    rp_pool_destroy(p);
}

/* Burns ~15 ms of its thread's CPU; adds its wall time to its routee's. */
static _Atomic int64_t wall_ns[2];

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void burn_job(rp_job_ctx *ctx, void *arg)
{
    int64_t t0 = mono_ns(), c0 = cpu_ns();
    volatile uint64_t x __attribute__((unused)) = 0; /* a sink: clang 14 -Wunused-but-set-variable */

    (void)arg;
    while (cpu_ns() - c0 < 15000000)
        for (int i = 0; i < 1000; i++)
            x += (uint64_t)i;
    (void)x; /* a use: clang's -Wunused-but-set-variable otherwise */
    atomic_fetch_add(&wall_ns[rp_job_routee(ctx)], mono_ns() - t0);
}

Test(counters, busy_seconds_cover_the_time_cpu_burning_jobs_ran, .init = setup)
{
    int64_t t0 = mono_ns(), elapsed;
    rp_pool *p = pool_new("burn", 2, false, true);
    rp_metrics m;
    prom_doc d;

    atomic_init(&wall_ns[0], 0);
    atomic_init(&wall_ns[1], 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, (size_t)i % 2), burn_job, NULL), 0);
    settle(p);
    elapsed = mono_ns() - t0;
    snap(p, &m);
    for (size_t i = 0; i < 2; i++) {
        double jobs = (double)atomic_load(&wall_ns[i]) / 1e9;
        cr_assert_geq(jobs, 0.030, "two 15 ms CPU burns");
        cr_assert_geq(m.routee[i].busy_seconds, jobs - 1e-9,
                      "routee %zu: busy %.6f s < its jobs' %.6f s", i, m.routee[i].busy_seconds, jobs);
        cr_assert_leq(m.routee[i].busy_seconds, (double)elapsed / 1e9, "no more than the test took");
    }
    fetch(p, "burn", &d);
    expect_text_matches(&d, &m);
    cr_assert_gt(prom_get(&d, "routepool_routee_busy_seconds_total", "routee", "0", NULL), 0.030);
    prom_free(&d);
    rp_metrics_release(&m);
    rp_pool_destroy(p);
}

/*
 * BUG (reported): busy seconds grow only when a busy period ends, so during
 * a long job the counter stays flat and rate() shows an idle routee.
 */
Test(counters, busy_seconds_include_the_period_still_running, .init = setup)
{
    rp_pool *p = pool_new("long", 1, false, true);
    probe hold;
    rp_metrics m;

    probe_init(&hold, &LOG, -1, &G);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&G, 1, 5000));
    sleep_ms(100);
    snap(p, &m);
    gate_open(&G);
    cr_assert_eq(m.routee[0].busy, 1);
    cr_assert_geq(m.routee[0].busy_seconds, 0.100, "100 ms into a job: %.3f s busy",
                  m.routee[0].busy_seconds);
    rp_metrics_release(&m);
    settle(p);
    rp_pool_destroy(p);
}

Test(counters, metrics_off_keeps_exact_counters_and_empty_timings, .init = setup)
{
    rp_pool *p = pool_new("off", 2, true, false);
    rp_metrics m;
    prom_doc d;

    atomic_init(&wall_ns[0], 0);
    atomic_init(&wall_ns[1], 0);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, (size_t)i), burn_job, NULL), 0);
    for (int i = 0; i < 999; i++)
        cr_assert_eq(rp_pool_submit(p, noop_job, NULL), 0);
    settle(p);
    snap(p, &m);
    cr_assert_eq(SUM(&m, run), 1001);
    cr_assert_eq(SUM(&m, enqueued), 1001);
    cr_assert_eq(m.submitted, 1001);
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(m.routee[i].busy_seconds, 0.0);
        cr_assert_eq(m.routee[i].depth_count, 0);
        cr_assert_eq(m.routee[i].depth_sum, 0);
        cr_assert_eq(m.routee[i].wait_count, 0);
        for (int b = 0; b < RP_DEPTH_BUCKETS; b++)
            cr_assert_eq(m.routee[i].depth_buckets[b], 0);
        for (int b = 0; b < RP_WAIT_BUCKETS; b++)
            cr_assert_eq(m.routee[i].wait_buckets[b], 0);
    }
    fetch(p, "off", &d);
    expect_text_matches(&d, &m);
    prom_free(&d);
    rp_metrics_release(&m);
    rp_pool_destroy(p);
}

/* One routee held by a gate job, capacity 4, then 10 submits. */
static rp_pool *overflow_pool(const char *name, int policy, probe *hold, probe *pr)
{
    rp_pool_options o;
    rp_pool *p = NULL;

    rp_pool_options_init(&o);
    o.name = name;
    o.routees = 1;
    o.mailbox_capacity = 4;
    o.overflow = policy;
    o.on_undelivered = probe_undelivered;
    cr_assert_eq(rp_pool_create(&p, &o), 0);
    probe_init(hold, &LOG, -1, &G);
    probe_init_n(pr, 10, &LOG, 0, NULL);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, hold), 0);
    cr_assert(gate_wait_entered(&G, 1, 5000));
    for (int i = 0; i < 10; i++)
        cr_assert_eq(rp_pool_submit(p, probe_job, &pr[i]), policy == RP_OVERFLOW_REJECT && i >= 4 ? RP_EFULL : 0);
    return p;
}

static void expect_overflow_counts(const prom_doc *d, uint64_t enq, uint64_t run, uint64_t drop_new,
                                   uint64_t drop_head, uint64_t rejected, uint64_t submitted)
{
    cr_assert_eq(prom_u64(prom_get(d, "routepool_routee_enqueued_total", NULL)), enq);
    cr_assert_eq(prom_u64(prom_get(d, "routepool_routee_jobs_run_total", NULL)), run);
    cr_assert_eq(prom_u64(prom_get(d, "routepool_routee_dropped_total", "reason", "drop-new", NULL)), drop_new);
    cr_assert_eq(prom_u64(prom_get(d, "routepool_routee_dropped_total", "reason", "drop-head", NULL)), drop_head);
    cr_assert_eq(prom_u64(prom_get(d, "routepool_routee_handed_back_total", "reason", "drop-new", NULL)), drop_new);
    cr_assert_eq(prom_u64(prom_get(d, "routepool_routee_handed_back_total", "reason", "drop-head", NULL)), drop_head);
    cr_assert_eq(prom_u64(prom_sum(d, "routepool_routee_handed_back_total", NULL)), drop_new + drop_head);
    cr_assert_eq(prom_u64(prom_get(d, "routepool_routee_rejected_total", NULL)), rejected);
    cr_assert_eq(prom_u64(prom_get(d, "routepool_pool_submitted_total", NULL)), submitted);
}

Test(counters, drop_new_drops_are_counted_by_reason_exactly, .init = setup)
{
    probe hold, pr[10];
    rp_pool *p = overflow_pool("dn", RP_OVERFLOW_DROP_NEW, &hold, pr);
    prom_doc d;

    fetch(p, "dn", &d);
    /* Held job + 4 queued; the last 6 dropped (and never enqueued). */
    expect_overflow_counts(&d, 5, 0, 6, 0, 0, 11);
    cr_assert_eq(prom_get(&d, "routepool_routee_queued_jobs", NULL), 4);
    prom_free(&d);
    gate_open(&G);
    settle(p);
    fetch(p, "dn", &d);
    expect_overflow_counts(&d, 5, 5, 6, 0, 0, 11);
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(probe_runs(&pr[i]), i < 4 ? 1 : 0, "job %d", i);
        cr_assert_eq(probe_undel(&pr[i]), i < 4 ? 0 : 1, "job %d", i);
    }
    prom_free(&d);
    rp_pool_destroy(p);
}

Test(counters, drop_head_evictions_are_counted_by_reason_exactly, .init = setup)
{
    probe hold, pr[10];
    rp_pool *p = overflow_pool("dh", RP_OVERFLOW_DROP_HEAD, &hold, pr);
    prom_doc d;

    gate_open(&G);
    settle(p);
    fetch(p, "dh", &d);
    /* All 11 enqueued; jobs 0..5 evicted by 4..9; held + 6..9 ran. */
    expect_overflow_counts(&d, 11, 5, 0, 6, 0, 11);
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(probe_runs(&pr[i]), i < 6 ? 0 : 1, "job %d", i);
        cr_assert_eq(atomic_load(&pr[i].reason), i < 6 ? RP_EEVICTED : 0, "job %d", i);
    }
    prom_free(&d);
    rp_pool_destroy(p);
}

Test(counters, rejections_are_counted_and_not_submitted, .init = setup)
{
    probe hold, pr[10];
    rp_pool *p = overflow_pool("rej", RP_OVERFLOW_REJECT, &hold, pr);
    prom_doc d;

    gate_open(&G);
    settle(p);
    fetch(p, "rej", &d);
    expect_overflow_counts(&d, 5, 5, 0, 0, 6, 5);
    prom_free(&d);
    rp_pool_destroy(p);
}

Test(counters, stopped_routee_hands_back_its_queued_pinned_jobs_as_stopped, .init = setup)
{
    rp_pool *p = pool_new("stop", 2, true, true);
    probe hold, pr[7];
    prom_doc d;

    probe_init(&hold, &LOG, -1, &G);
    probe_init_n(pr, 7, &LOG, 0, NULL);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&G, 1, 5000));
    for (int i = 0; i < 7; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &pr[i]), 0);
    cr_assert_eq(rp_routee_stop(rp_pool_routee(p, 0)), 0);
    gate_open(&G);
    settle(p);
    fetch(p, "stop", &d);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_routee_handed_back_total", "routee", "0", "reason", "stopped", NULL)), 7);
    cr_assert_eq(prom_u64(prom_sum(&d, "routepool_routee_handed_back_total", NULL)), 7);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_routee_jobs_run_total", "routee", "0", NULL)), 1);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_routee_enqueued_total", "routee", "0", NULL)), 8);
    cr_assert_eq(prom_sum(&d, "routepool_routee_dropped_total", NULL), 0);
    cr_assert_eq(prom_sum(&d, "routepool_routee_steals_total", NULL), 0, "pinned jobs are never stolen");
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_pool_submitted_total", NULL)), 8);
    for (int i = 0; i < 7; i++)
        cr_assert_eq(atomic_load(&pr[i].reason), RP_ESTOPPED);
    prom_free(&d);
    rp_pool_destroy(p);
}

static void *shutdown_abort(void *arg)
{
    rp_pool_shutdown(arg, RP_SHUTDOWN_ABORT);
    return NULL;
}

Test(counters, abort_shutdown_hands_back_queued_jobs_as_shutdown, .init = setup)
{
    rp_pool *p = pool_new("abort", 1, true, true);
    probe hold, pr[5];
    pthread_t t;
    const int64_t deadline = now_ms() + 5000;
    prom_doc d;

    probe_init(&hold, &LOG, -1, &G);
    probe_init_n(pr, 5, &LOG, 0, NULL);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&G, 1, 5000));
    for (int i = 0; i < 5; i++)
        cr_assert_eq(rp_pool_submit(p, probe_job, &pr[i]), 0);
    cr_assert_eq(pthread_create(&t, NULL, shutdown_abort, p), 0);
    while (!rp_routee_stopped(rp_pool_routee(p, 0)) && now_ms() < deadline)
        sleep_ms(1);
    gate_open(&G); /* the held job finishes; shutdown joins */
    pthread_join(t, NULL);
    fetch(p, "abort", &d);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_routee_handed_back_total", "reason", "shutdown", NULL)), 5);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_routee_jobs_run_total", NULL)), 1);
    cr_assert_eq(prom_get(&d, "routepool_routee_queued_jobs", NULL), 0);
    cr_assert_eq(prom_get(&d, "routepool_routee_busy", NULL), 0);
    prom_free(&d);
    rp_pool_destroy(p);
}

Test(counters, stolen_totals_equal_stolen_from_totals_exactly, .init = setup)
{
    enum { N = 200 };
    rp_pool *p = pool_new("steal", 2, true, true);
    probe hold, pr[N];
    const int64_t deadline = now_ms() + 10000;
    prom_doc d;
    int ran = 0;

    probe_init(&hold, &LOG, -1, &G);
    probe_init_n(pr, N, NULL, 0, NULL);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&G, 1, 5000));
    /* Round-robin: 100 behind the held routee 0, which routee 1 must steal. */
    for (int i = 0; i < N; i++)
        cr_assert_eq(rp_pool_submit(p, probe_job, &pr[i]), 0);
    while (ran < N && now_ms() < deadline) {
        ran = 0;
        for (int i = 0; i < N; i++)
            ran += probe_runs(&pr[i]);
        sleep_ms(1);
    }
    cr_assert_eq(ran, N, "every job ran while routee 0 was held");
    fetch(p, "steal", &d);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_routee_steals_total", "routee", "1", NULL)), N / 2);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_routee_stolen_from_total", "routee", "0", NULL)), N / 2);
    cr_assert_eq(prom_get(&d, "routepool_routee_steals_total", "routee", "0", NULL), 0);
    cr_assert_eq(prom_get(&d, "routepool_routee_stolen_from_total", "routee", "1", NULL), 0);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_routee_jobs_run_total", "routee", "1", NULL)), N);
    prom_free(&d);
    gate_open(&G);
    settle(p);
    fetch(p, "steal", &d);
    cr_assert_eq(prom_u64(prom_sum(&d, "routepool_routee_jobs_run_total", NULL)), N + 1);
    cr_assert_eq(prom_u64(prom_get(&d, "routepool_pool_submitted_total", NULL)), N + 1);
    prom_free(&d);
    rp_pool_destroy(p);
}

Test(counters, memory_bytes_reports_the_pools_arena, .init = setup)
{
    rp_pool *p = pool_new("mem", 1, true, true);
    probe hold;
    rp_metrics m1, m2;

    snap(p, &m1);
    probe_init(&hold, &LOG, -1, &G);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&G, 1, 5000));
    for (int i = 0; i < 20000; i++)
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), noop_job, NULL), 0);
    snap(p, &m2);
    gate_open(&G);
    settle(p);
#ifdef RP_TEST_ASAN
    /* Sanitized builds use the C allocator: no arena to report. */
    cr_assert_eq(m1.memory_bytes, 0);
    cr_assert_eq(m2.memory_bytes, 0);
#else
    cr_assert_gt(m1.memory_bytes, 0, "the routee records live in the arena");
    cr_assert_gt(m2.memory_bytes, m1.memory_bytes + 20000 * 64,
                 "20000 queued job records: %" PRIu64 " -> %" PRIu64, m1.memory_bytes,
                 m2.memory_bytes);
#endif
    rp_metrics_release(&m1);
    rp_metrics_release(&m2);
    rp_pool_destroy(p);
}

/* ======================================================================
 * Histograms
 * ====================================================================== */

Test(histograms, depth_is_sampled_at_every_16th_enqueue_of_each_routee, .init = setup)
{
    static const int tells[3][2] = {{1, 15}, {32, 1}, {33, 0}}; /* two rounds */
    rp_pool *p = pool_new("sample", 3, false, true);
    rp_metrics m;
    prom_doc d;

    for (int round = 0; round < 2; round++) {
        for (size_t r = 0; r < 3; r++)
            for (int i = 0; i < tells[r][round]; i++)
                cr_assert_eq(rp_routee_tell(rp_pool_routee(p, r), noop_job, NULL), 0);
        settle(p);
        snap(p, &m);
        for (size_t r = 0; r < 3; r++) {
            const rp_routee_metrics *rm = &m.routee[r];
            uint64_t buckets = 0;
            for (int b = 0; b < RP_DEPTH_BUCKETS; b++)
                buckets += rm->depth_buckets[b];
            cr_assert_eq(rm->depth_count, ceil16(rm->enqueued),
                         "round %d routee %zu: %" PRIu64 " samples of %" PRIu64 " enqueues", round, r,
                         rm->depth_count, rm->enqueued);
            cr_assert_eq(buckets, rm->depth_count);
            cr_assert_eq(rm->wait_count, rm->depth_count, "no stealing: each sample runs at home");
        }
        rp_metrics_release(&m);
    }
    snap(p, &m);
    cr_assert_eq(m.routee[0].depth_count, 1); /* 16 enqueues: seq 0 */
    cr_assert_eq(m.routee[1].depth_count, 3); /* 33: seq 0, 16, 32 */
    cr_assert_eq(m.routee[2].depth_count, 3); /* 33 */
    fetch(p, "sample", &d);
    expect_text_matches(&d, &m);
    prom_free(&d);
    rp_metrics_release(&m);
    /* Round-robin submits: 1000 over 3 routees -> 334, 333, 333. */
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(rp_pool_submit(p, noop_job, NULL), 0);
    settle(p);
    snap(p, &m);
    for (size_t r = 0; r < 3; r++)
        cr_assert_eq(m.routee[r].depth_count, ceil16(m.routee[r].enqueued), "routee %zu", r);
    cr_assert_eq(SUM(&m, wait_count), SUM(&m, depth_count));
    rp_metrics_release(&m);
    rp_pool_destroy(p);
}

/* A batch's jobs are sampled as single tells are: each sampled job adds
 * the depth it found (one depth read per call, lib/mailbox.c). */
Test(histograms, a_batch_adds_the_depth_each_sampled_job_found, .init = setup)
{
    rp_pool *p = pool_new("batchdepth", 1, false, true);
    void *args[64] = {NULL};
    probe hold;
    rp_metrics m;

    probe_init(&hold, NULL, 0, &G);
    /* Sequence 0: sampled, found nothing queued. */
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &hold), 0);
    cr_assert(gate_wait_entered(&G, 1, 5000));
    /* Sequences 1..64 behind the running gate job: job j found j queued
     * ahead of it; sampled are sequences 16, 32, 48, 64 (j = 15, 31, 47, 63). */
    cr_assert_eq(rp_pool_submit_batch(p, noop_job, args, 64), 0);
    gate_open(&G);
    settle(p);
    snap(p, &m);
    cr_assert_eq(m.routee[0].enqueued, 65);
    cr_assert_eq(m.routee[0].depth_count, 5, "%" PRIu64 " samples", m.routee[0].depth_count);
    cr_assert_eq(m.routee[0].depth_sum, 15 + 31 + 47 + 63, "depth sum %" PRIu64,
                 m.routee[0].depth_sum);
    cr_assert_eq(m.routee[0].wait_count, 5);
    rp_metrics_release(&m);
    rp_pool_destroy(p);
}

Test(histograms, queue_wait_of_held_jobs_is_observed_in_the_right_bucket, .init = setup)
{
    rp_pool *p = pool_new("wait", 1, false, true);
    probe hold;
    rp_metrics m;
    prom_doc d;

    probe_init(&hold, &LOG, -1, &G);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &hold), 0); /* seq 0 */
    cr_assert(gate_wait_entered(&G, 1, 5000));
    for (int i = 1; i < 17; i++) /* seq 16 is sampled and waits >= 60 ms */
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), noop_job, NULL), 0);
    sleep_ms(60);
    gate_open(&G);
    settle(p);
    snap(p, &m);
    cr_assert_eq(m.routee[0].wait_count, 2);
    cr_assert_geq(m.routee[0].wait_sum_seconds, 0.060);
    /* The held job's wait is tiny; the queued one's in (0.05, 0.1] or above. */
    {
        uint64_t above_50ms = 0;
        for (int b = 0; b < RP_WAIT_BUCKETS; b++)
            if (b == RP_WAIT_BUCKETS - 1 || rp_metrics_wait_bounds[b] > 0.05)
                above_50ms += m.routee[0].wait_buckets[b];
        cr_assert_eq(above_50ms, 1);
    }
    fetch(p, "wait", &d);
    expect_text_matches(&d, &m);
    cr_assert_eq(prom_get(&d, "routepool_routee_queue_wait_seconds_bucket", "le", "0.05", NULL), 1);
    cr_assert_eq(prom_get(&d, "routepool_routee_queue_wait_seconds_bucket", "le", "+Inf", NULL), 2);
    prom_free(&d);
    rp_metrics_release(&m);
    rp_pool_destroy(p);
}

/*
 * BUG (reported): the depth histogram records the depth including the job
 * being enqueued (1 for an empty queue), while its help says "Queued depth
 * a job found on enqueue".  Enable once the library and this test agree.
 */
Test(histograms, depth_sample_is_the_queued_depth_the_job_found, .init = setup)
{
    rp_pool *p = pool_new("found", 1, false, true);
    probe hold;
    rp_metrics m;

    probe_init(&hold, &LOG, -1, &G);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), probe_job, &hold), 0); /* seq 0: found 0 */
    cr_assert(gate_wait_entered(&G, 1, 5000));
    for (int i = 1; i < 32; i++) /* seq 16 found seq 1..15 queued */
        cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), noop_job, NULL), 0);
    gate_open(&G);
    settle(p);
    snap(p, &m);
    cr_assert_eq(m.routee[0].depth_count, 2);
    cr_assert_eq(m.routee[0].depth_sum, 0 + 15);
    cr_assert_eq(m.routee[0].depth_buckets[0], 1, "le=1: the empty queue");
    cr_assert_eq(m.routee[0].depth_buckets[4], 1, "le=20: 15");
    rp_metrics_release(&m);
    rp_pool_destroy(p);
}

/*
 * BUG (reported): while a trace runs, every trace-sampled job also feeds the
 * queue-wait histogram (it is keyed on the job's enqueue timestamp, which
 * tracing sets too), even with opts.metrics = false.
 */
Test(histograms, tracing_does_not_feed_the_wait_histogram, .init = setup)
{
    rp_pool *p = pool_new("trwait", 1, false, false);
    rp_trace_options t;
    char path[] = "/tmp/rp-test-metrics-XXXXXX";
    int fd = mkstemp(path);
    rp_metrics m;

    cr_assert_geq(fd, 0);
    close(fd);
    rp_trace_options_init(&t);
    t.job_sample = 1;
    cr_assert_eq(rp_trace_start(p, path, &t), 0, "%s", rp_errmsg());
    for (int i = 0; i < 100; i++)
        cr_assert_eq(rp_pool_submit(p, noop_job, NULL), 0);
    settle(p);
    cr_assert_eq(rp_trace_stop(p), 0);
    unlink(path);
    snap(p, &m);
    cr_assert_eq(m.routee[0].wait_count, 0, "metrics off: no wait samples (got %" PRIu64 ")",
                 m.routee[0].wait_count);
    rp_metrics_release(&m);
    rp_pool_destroy(p);
}

/* ======================================================================
 * Scatter-gather families
 * ====================================================================== */

static void fail_job(rp_job_ctx *ctx, void *arg)
{
    (void)arg;
    rp_job_fail(ctx, -100, "no");
}

static atomic_int slow_started;

static void slow_job(rp_job_ctx *ctx, void *arg)
{
    (void)ctx;
    atomic_fetch_add(&slow_started, 1);
    sleep_ms((int)(intptr_t)arg);
}

/* Undelivered copies (cancelled losers, the bare tell's arg) by reason. */
static atomic_int undelivered_by[32];

static void count_undelivered(void *arg, int reason, void *user)
{
    (void)arg;
    (void)user;
    if (reason < 0 && reason > -32)
        atomic_fetch_add(&undelivered_by[-reason], 1);
}

static rp_pool *scatter_pool(const char *name)
{
    rp_pool_options o;
    rp_pool *p = NULL;

    for (int i = 0; i < 32; i++)
        atomic_init(&undelivered_by[i], 0);
    atomic_init(&slow_started, 0);
    rp_pool_options_init(&o);
    o.name = name;
    o.routees = 3;
    o.on_undelivered = count_undelivered;
    cr_assert_eq(rp_pool_create(&p, &o), 0);
    return p;
}

static void ask_and_wait(rp_router *sg, rp_job_fn fn, void *arg, rp_future_state want)
{
    rp_future *f = NULL;

    cr_assert_eq(rp_router_ask(sg, fn, arg, 10000, &f), 0, "%s", rp_errmsg());
    cr_assert_eq(rp_future_wait(f, 10000), 0);
    cr_assert_eq(rp_future_status(f), want);
    rp_future_release(f);
}

/* Outcomes resolved on the timer thread are counted after the future
 * completes: poll (see the timing notes). */
static void wait_resolved(rp_pool *p, int outcome, uint64_t n)
{
    const int64_t deadline = now_ms() + 5000;
    rp_metrics m;

    for (;;) {
        snap(p, &m);
        uint64_t got = m.scatter.resolved[outcome];
        rp_metrics_release(&m);
        if (got >= n)
            return;
        cr_assert(now_ms() < deadline, "outcome %s: %" PRIu64 " of %" PRIu64,
                  rp_scatter_outcome_name(outcome), got, n);
        sleep_ms(1);
    }
}

Test(scatter, outcomes_and_latencies_are_counted_exactly_over_every_router, .init = setup)
{
    rp_pool *p = scatter_pool("sg");
    rp_router *sg = NULL, *quick = NULL;
    rp_scatter_gather_options so;
    rp_router_options ro;
    logcap lc;
    rp_future *f = NULL;
    rp_metrics m;
    prom_doc d;
    int value = 42;

    logcap_init(&lc);
    rp_router_options_init(&ro);
    ro.name = "sg";
    ro.log = logcap_fn;
    ro.log_user = &lc;
    cr_assert_eq(rp_router_create_scatter_gather(&sg, p, NULL, &ro), 0);
    rp_scatter_gather_options_init(&so);
    so.timeout_ms = 30;
    cr_assert_eq(rp_router_create_scatter_gather(&quick, p, &so, NULL), 0);
    for (int i = 0; i < 5; i++)
        ask_and_wait(sg, reply_job, &value, RP_FUTURE_FULFILLED);
    for (int i = 0; i < 3; i++)
        ask_and_wait(sg, fail_job, NULL, RP_FUTURE_FAILED);
    cr_assert_eq(rp_router_tell(sg, noop_job, &value), 0, "a bare tell: counted, not scattered");
    cr_assert_eq(atomic_load(&undelivered_by[-RP_ENOREPLY]), 1);
    cr_assert_eq(logcap_count(&lc, RP_LOG_WARN), 1, "the bare tell is logged");
    /* Every copy sleeps past the 30 ms deadline without replying. */
    ask_and_wait(quick, slow_job, (void *)(intptr_t)120, RP_FUTURE_FAILED);
    settle(p);
    wait_resolved(p, RP_SCATTER_TIMEOUT, 1);
    snap(p, &m);
    cr_assert_eq(m.scatter.resolved[RP_SCATTER_FIRST], 5);
    cr_assert_eq(m.scatter.resolved[RP_SCATTER_ALL_FAILED], 3);
    cr_assert_eq(m.scatter.resolved[RP_SCATTER_NO_REPLY_TARGET], 1);
    cr_assert_eq(m.scatter.resolved[RP_SCATTER_TIMEOUT], 1);
    cr_assert_eq(m.scatter.resolved[RP_SCATTER_STOPPED], 0);
    cr_assert_eq(m.scatter.latency_count, 9, "every outcome but no-reply-target");
    cr_assert_geq(m.scatter.latency_sum_seconds, 0.030, "the timeout alone took 30 ms");
    fetch(p, "sg", &d);
    expect_text_matches(&d, &m);
    cr_assert_eq(prom_get(&d, "router_scatter_gather_resolved_total", "outcome", "first", NULL), 5);
    cr_assert_eq(prom_get(&d, "router_scatter_gather_resolved_total", "outcome", "all-failed", NULL), 3);
    cr_assert_eq(prom_get(&d, "router_scatter_gather_resolved_total", "outcome", "timeout", NULL), 1);
    cr_assert_eq(prom_get(&d, "router_scatter_gather_resolved_total", "outcome", "no-reply-target", NULL), 1);
    cr_assert_eq(prom_get(&d, "router_scatter_gather_latency_seconds_count", NULL), 9);
    cr_assert_eq(prom_get(&d, "router_scatter_gather_latency_seconds_bucket", "le", "+Inf", NULL), 9);
    /* Each scatter sends one copy per routee. */
    cr_assert_eq(prom_u64(prom_sum(&d, "routepool_routee_enqueued_total", NULL)), 9 * 3);
    prom_free(&d);
    rp_metrics_release(&m);

    /* A scatter still open when the pool shuts down: stopped. */
    cr_assert_eq(rp_router_ask(sg, slow_job, (void *)(intptr_t)500, 10000, &f), 0);
    cr_assert(wait_atomic_ge(&slow_started, 3 + 3, 5000), "the three copies run");
    cr_assert_eq(rp_pool_shutdown(p, RP_SHUTDOWN_ABORT), 0);
    cr_assert_eq(rp_future_wait(f, 0), 0, "failed by the shutdown");
    cr_assert_eq(rp_future_error(f)->code, RP_EAGGREGATE);
    rp_future_release(f);
    fetch(p, "sg", &d);
    cr_assert_eq(prom_get(&d, "router_scatter_gather_resolved_total", "outcome", "stopped", NULL), 1);
    cr_assert_eq(prom_get(&d, "router_scatter_gather_latency_seconds_count", NULL), 10);
    prom_free(&d);
    rp_router_destroy(quick);
    rp_router_destroy(sg);
    rp_pool_destroy(p);
}

/*
 * BUG (reported): a scatter's outcome is counted after its future
 * completes, so a caller that waited on the future can take a snapshot
 * that does not count it yet (3 or 4 asks in 20,000 here).
 */
Test(scatter, outcome_is_counted_by_the_time_the_future_completes, .init = setup,
     .timeout = 60)
{
    enum { ASKS = 20000 };
    rp_pool *p = scatter_pool("sglag");
    rp_router *sg = NULL;
    rp_metrics m;
    int value = 1, lagging = 0;

    cr_assert_eq(rp_router_create_scatter_gather(&sg, p, NULL, NULL), 0);
    for (int i = 0; i < ASKS; i++) {
        rp_future *f = NULL;
        cr_assert_eq(rp_router_ask(sg, reply_job, &value, 10000, &f), 0);
        cr_assert_eq(rp_future_wait(f, 10000), 0);
        snap(p, &m);
        lagging += m.scatter.resolved[RP_SCATTER_FIRST] != (uint64_t)i + 1;
        rp_metrics_release(&m);
        rp_future_release(f);
        cr_assert_eq(rp_pool_wait_idle(p, 10000), 0);
    }
    rp_router_destroy(sg);
    rp_pool_destroy(p);
    cr_assert_eq(lagging, 0, "%d of %d completed asks not counted yet", lagging, ASKS);
}

/*
 * BUG (reported): the pool's scatter families sum over the live
 * scatter-gather routers only, so destroying one router takes its counts
 * out of counters that must never go down.
 */
Test(scatter, counts_survive_the_router_being_destroyed, .init = setup)
{
    rp_pool *p = scatter_pool("sgd");
    rp_router *sg = NULL;
    rp_metrics m;
    int value = 1;

    cr_assert_eq(rp_router_create_scatter_gather(&sg, p, NULL, NULL), 0);
    ask_and_wait(sg, reply_job, &value, RP_FUTURE_FULFILLED);
    ask_and_wait(sg, reply_job, &value, RP_FUTURE_FULFILLED);
    settle(p);
    rp_router_destroy(sg);
    snap(p, &m);
    cr_assert_eq(m.scatter.resolved[RP_SCATTER_FIRST], 2);
    cr_assert_eq(m.scatter.latency_count, 2);
    rp_metrics_release(&m);
    rp_pool_destroy(p);
}

/*
 * BUG (reported): a stopped routee's stealable jobs are re-routed with a
 * second push, so routepool_pool_submitted_total (the sum of enqueued)
 * counts them twice.
 */
static void hold_on_own_gate(rp_job_ctx *ctx, void *arg)
{
    gate *gates = arg;
    gate_pass(&gates[rp_job_routee(ctx)]);
}

Test(counters, rerouted_jobs_are_submitted_once, .init = setup)
{
    rp_pool *p = pool_new("rr", 2, true, true);
    gate gates[2];
    rp_routee_stats st;
    const int64_t deadline = now_ms() + 5000;
    rp_metrics m;

    gate_init(&gates[0]);
    gate_init(&gates[1]);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 0), hold_on_own_gate, gates), 0);
    cr_assert_eq(rp_routee_tell(rp_pool_routee(p, 1), hold_on_own_gate, gates), 0);
    cr_assert(gate_wait_entered(&gates[0], 1, 5000) && gate_wait_entered(&gates[1], 1, 5000));
    for (int i = 0; i < 10; i++)
        cr_assert_eq(rp_pool_submit(p, noop_job, NULL), 0);
    cr_assert_eq(rp_routee_stop(rp_pool_routee(p, 0)), 0);
    gate_open(&gates[0]);
    do {
        sleep_ms(1);
        cr_assert_eq(rp_routee_stats_get(rp_pool_routee(p, 0), &st), 0);
    } while (st.rerouted < 5 && now_ms() < deadline);
    cr_assert_eq(st.rerouted, 5);
    gate_open(&gates[1]);
    settle(p);
    snap(p, &m);
    cr_assert_eq(SUM(&m, run), 12);
    cr_assert_eq(m.submitted, 12, "12 jobs submitted, %" PRIu64 " counted", m.submitted);
    rp_metrics_release(&m);
    rp_pool_destroy(p);
    gate_destroy(&gates[0]);
    gate_destroy(&gates[1]);
}

/* ======================================================================
 * Snapshots while the pool runs
 * ====================================================================== */

#define SUBMITTERS 4
#define JOBS_PER_SUBMITTER 50000

typedef struct watcher {
    rp_pool *pool;
    bool pool_wide; /* also check sum(run) <= submitted */
    atomic_bool stop;
    int snapshots, texts;
    int failures;
    char first_failure[512];
} watcher;

static void watch_fail(watcher *w, const char *fmt, ...)
{
    va_list ap;

    if (w->failures++ == 0) {
        va_start(ap, fmt);
        vsnprintf(w->first_failure, sizeof w->first_failure, fmt, ap);
        va_end(ap);
    }
}

/* What must hold in any snapshot, and between two in a row.  Within one
 * routee (the header's promise): what left its queue or ran there never
 * exceeds what entered it or was stolen by it. */
static void watch_check(watcher *w, const rp_metrics *m, const rp_metrics *prev)
{
    const int dn = reason_slot(RP_EDROPPED);
    uint64_t run = 0;

    for (size_t i = 0; i < m->routees; i++) {
        const rp_routee_metrics *r = &m->routee[i], *q = prev ? &prev->routee[i] : NULL;
        uint64_t left = r->run + r->stolen_from;
        for (int k = 0; k < RP_METRICS_REASONS; k++)
            left += k == dn ? 0 : r->handed_back[k];
        if (left > r->enqueued + r->stole)
            watch_fail(w, "routee %zu: run %" PRIu64 " + stolen_from %" PRIu64
                          " > enqueued %" PRIu64 " + stole %" PRIu64,
                       i, r->run, r->stolen_from, r->enqueued, r->stole);
        if (q && (r->enqueued < q->enqueued || r->run < q->run || r->stole < q->stole ||
                  r->stolen_from < q->stolen_from || r->depth_count < q->depth_count ||
                  r->wait_count < q->wait_count || r->busy_seconds < q->busy_seconds))
            watch_fail(w, "routee %zu: a counter went down between two snapshots", i);
        if (r->busy > 1)
            watch_fail(w, "routee %zu: busy = %" PRIu64, i, r->busy);
        run += r->run;
    }
    if (w->pool_wide && run > m->submitted)
        watch_fail(w, "sum of run %" PRIu64 " > submitted %" PRIu64, run, m->submitted);
    if (prev && m->submitted < prev->submitted)
        watch_fail(w, "submitted went down");
}

static void *watch(void *arg)
{
    watcher *w = arg;
    rp_metrics prev, cur;
    bool have_prev = false;

    while (!atomic_load_explicit(&w->stop, memory_order_acquire)) {
        if (rp_metrics_snapshot(w->pool, &cur) != 0) {
            watch_fail(w, "rp_metrics_snapshot failed: %s", rp_errmsg());
            break;
        }
        watch_check(w, &cur, have_prev ? &prev : NULL);
        if (have_prev)
            rp_metrics_release(&prev);
        prev = cur;
        have_prev = true;
        if (++w->snapshots % 8 == 0 && !w->pool_wide) {
            char *text = NULL;
            size_t len = 0;
            prom_doc d;
            memset(&d, 0, sizeof d);
            if (rp_metrics_format_prometheus(w->pool, &text, &len) != 0)
                watch_fail(w, "format failed: %s", rp_errmsg());
            else if (!prom_parse(&d, text, len))
                watch_fail(w, "text taken while running: %s", d.err);
            prom_free(&d);
            free(text);
            w->texts++;
        }
    }
    if (have_prev)
        rp_metrics_release(&prev);
    return NULL;
}

static void *submitter(void *arg)
{
    rp_pool *p = arg;
    int refused = 0;

    for (int i = 0; i < JOBS_PER_SUBMITTER; i++)
        refused += rp_pool_submit(p, count_job, NULL) != 0;
    return (void *)(intptr_t)refused;
}

Test(concurrency, snapshots_while_4_submitters_run_200k_jobs_then_exact_totals, .init = setup,
     .timeout = 120)
{
    const uint64_t n = (uint64_t)SUBMITTERS * JOBS_PER_SUBMITTER;
    rp_pool *p = pool_new("busy", 4, true, true);
    pthread_t subs[SUBMITTERS], wt;
    watcher w;
    rp_metrics m;
    prom_doc d;

    memset(&w, 0, sizeof w);
    w.pool = p;
    atomic_init(&w.stop, false);
    cr_assert_eq(pthread_create(&wt, NULL, watch, &w), 0);
    for (int i = 0; i < SUBMITTERS; i++)
        cr_assert_eq(pthread_create(&subs[i], NULL, submitter, p), 0);
    for (int i = 0; i < SUBMITTERS; i++) {
        void *refused;
        pthread_join(subs[i], &refused);
        cr_assert_eq((intptr_t)refused, 0, "every submit accepted");
    }
    cr_assert_eq(rp_pool_wait_idle(p, 60000), 0);
    atomic_store_explicit(&w.stop, true, memory_order_release);
    pthread_join(wt, NULL);
    cr_assert_eq(w.failures, 0, "%d failures; first: %s", w.failures, w.first_failure);
    cr_assert_geq(w.snapshots, 8, "the watcher took %d snapshots", w.snapshots);

    settle(p);
    cr_assert_eq((uint64_t)atomic_load(&counted), n);
    snap(p, &m);
    cr_assert_eq(SUM(&m, run), n);
    cr_assert_eq(SUM(&m, enqueued), n);
    cr_assert_eq(m.submitted, n);
    cr_assert_eq(SUM(&m, stole), SUM(&m, stolen_from));
    cr_assert_eq(SUM(&m, depth), 0);
    cr_assert_eq(SUM(&m, busy), 0);
    for (size_t i = 0; i < m.routees; i++) {
        cr_assert_eq(m.routee[i].depth_count, ceil16(m.routee[i].enqueued), "routee %zu", i);
        for (int k = 0; k < RP_METRICS_REASONS; k++)
            cr_assert_eq(m.routee[i].handed_back[k], 0);
    }
    cr_assert_eq(SUM(&m, wait_count), SUM(&m, depth_count), "every sampled job ran once");
    fetch(p, "busy", &d);
    expect_text_matches(&d, &m);
    prom_free(&d);
    rp_metrics_release(&m);
    cr_log_info("watcher: %d snapshots, %d texts checked while running", w.snapshots, w.texts);
    rp_pool_destroy(p);
}

/*
 * BUG (reported): the snapshot reads routee after routee, each "finished
 * before accepted", but not the pool as a whole: a job enqueued on routee 0
 * after its enqueued count was read, stolen and run by routee 1 before
 * routee 1's run count is read, shows up as run but not as submitted.
 * Rare (about 1 snapshot in 50,000 here), so this snapshots for 4 s (and
 * catches it in most runs, not all).
 */
static atomic_bool stream_stop;

static void *stream(void *arg)
{
    while (!atomic_load_explicit(&stream_stop, memory_order_relaxed))
        (void)rp_pool_submit(arg, noop_job, NULL); /* RP_EFULL is fine */
    return NULL;
}

Test(concurrency, snapshot_never_shows_more_jobs_run_than_submitted, .init = setup,
     .timeout = 60)
{
    rp_pool_options o;
    rp_pool *p = NULL;
    pthread_t sub, wt;
    watcher w;
    const int64_t end = now_ms() + 4000;

    rp_pool_options_init(&o);
    o.name = "wide";
    o.routees = 2;
    o.mailbox_capacity = 64;
    cr_assert_eq(rp_pool_create(&p, &o), 0);
    memset(&w, 0, sizeof w);
    w.pool = p;
    w.pool_wide = true;
    atomic_init(&w.stop, false);
    atomic_init(&stream_stop, false);
    cr_assert_eq(pthread_create(&sub, NULL, stream, p), 0);
    cr_assert_eq(pthread_create(&wt, NULL, watch, &w), 0);
    while (now_ms() < end)
        sleep_ms(10);
    atomic_store(&w.stop, true);
    pthread_join(wt, NULL);
    atomic_store(&stream_stop, true);
    pthread_join(sub, NULL);
    cr_assert_eq(w.failures, 0, "%d of %d snapshots; first: %s", w.failures, w.snapshots,
                 w.first_failure);
    rp_pool_destroy(p);
}
