/* SPDX-License-Identifier: MIT */
/*
 * test_profile.c - rp-profile's parts: the strict JSON parser, reading a
 * trace, and the balance statistics, on small hand-written traces whose
 * answers are known exactly.  test_profile.sh runs the tool itself on
 * traces of real workloads.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_json.h"
#include "profile_report.h"
#include "profile_trace.h"

#define EPS 1e-9

/* ---- helpers ---- */

/* Parse a whole document; returns 0 or -1 and leaves the parser to free. */
static int parse(pj_parser *ps, const char *text, pj_value **out)
{
    pj_init(ps, text, strlen(text));
    return pj_parse_document(ps, out);
}

/* A trace builder: events appended as text, closed with the metadata. */
typedef struct tb {
    char *buf;
    size_t len;
    FILE *f;
    bool first;
} tb;

static void tb_open(tb *b)
{
    b->buf = NULL;
    b->len = 0;
    b->f = open_memstream(&b->buf, &b->len);
    cr_assert_not_null(b->f);
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", b->f);
    b->first = true;
}

static void tb_event(tb *b, const char *fmt, ...)
{
    va_list ap;

    if (!b->first)
        fputs(",\n", b->f);
    b->first = false;
    va_start(ap, fmt);
    vfprintf(b->f, fmt, ap);
    va_end(ap);
}

/* One sample: a depth and a busy counter per routee at ts. */
static void tb_sample(tb *b, double ts, const double *depth, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        tb_event(b, "{\"name\":\"depth r%u\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":1,"
                    "\"args\":{\"depth\":%.0f}}", i, ts, depth[i]);
        tb_event(b, "{\"name\":\"busy r%u\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":1,"
                    "\"args\":{\"busy\":%d}}", i, ts, depth[i] > 0);
    }
}

static char *tb_close(tb *b, unsigned routees, unsigned interval_us)
{
    tb_event(b, "{\"name\":\"routepool\",\"ph\":\"M\",\"pid\":1,\"args\":{\"pool\":\"t\","
                "\"routees\":%u,\"interval_us\":%u,\"samples\":0,\"lost_events\":0}}",
             routees, interval_us);
    fputs("\n]}\n", b->f);
    fclose(b->f);
    return b->buf;
}

/* Read and analyse text, asserting both succeed. */
static void analyse(const char *text, pt_trace *t, pt_report *r, const pt_options *o)
{
    char err[256] = "";
    pt_options defaults;

    if (!o) {
        pt_options_init(&defaults);
        o = &defaults;
    }
    cr_assert_eq(pt_read(t, text, strlen(text), err, sizeof err), 0, "pt_read: %s", err);
    cr_assert_eq(pt_analyse(r, t, o, err, sizeof err), 0, "pt_analyse: %s", err);
}

/* A trace of m samples 1 ms apart, every one with the same depths. */
static char *steady_trace(const double *depth, unsigned n, unsigned m)
{
    tb b;

    tb_open(&b);
    for (unsigned k = 0; k < m; k++)
        tb_sample(&b, 1000.0 * k, depth, n);
    return tb_close(&b, n, 1000);
}

/* ---- JSON ---- */

Test(json, parses_every_kind_of_value_and_decodes_escapes)
{
    pj_parser ps;
    pj_value *v;
    const char *doc = " {\"a\":[1,-2.5e3,0,true,false,null,\"x\\u00e9\\ud83d\\ude00\\n\\/\"],"
                      "\"b\":{},\"c\":[]} ";

    cr_assert_eq(parse(&ps, doc, &v), 0, "%s", ps.err);
    const pj_value *a = pj_get(v, "a");
    cr_assert(a && a->type == PJ_ARRAY && a->len == 7);
    cr_assert_float_eq(a->u.items[0]->u.num, 1.0, EPS);
    cr_assert_float_eq(a->u.items[1]->u.num, -2500.0, EPS);
    cr_assert_eq(a->u.items[3]->type, PJ_TRUE);
    cr_assert_eq(a->u.items[4]->type, PJ_FALSE);
    cr_assert_eq(a->u.items[5]->type, PJ_NULL);
    cr_assert(pj_is_string(a->u.items[6], "x\xc3\xa9\xf0\x9f\x98\x80\n/"));
    cr_assert_eq(pj_get(v, "b")->type, PJ_OBJECT);
    cr_assert_eq(pj_get(v, "c")->len, 0);
    cr_assert_null(pj_get(v, "d"));
    pj_free(&ps);
}

Test(json, rejects_everything_rfc8259_forbids)
{
    static const char *const bad[] = {
        "", "   ", "[1,]", "{\"a\":1,}", "[,1]", "[01]", "[1.]", "[.5]", "[+1]", "[-]",
        "[1e]", "[NaN]", "[Infinity]", "[-Infinity]", "['a']", "{a:1}", "{\"a\" 1}", "[1 2]",
        "[\"\\x\"]", "[\"a\tb\"]", "[\"\\ud800\"]", "[\"\\udc00\"]", "[\"\\ud800\\u0041\"]",
        "[\"\\u12\"]", "[\"\xff\"]", "[\"\xc0\xaf\"]", "[\"\xed\xa0\x80\"]",
        "[\"\xf4\x90\x80\x80\"]", "[\"\xe2\x82\"]", "[1] [2]", "[1e999]", "[tru]", "[nul]",
        "//c\n[1]", "[1]//", "\"unterminated", "[1", "{\"a\":1", "{\"a\"}", "[\"\\",
    };

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pj_parser ps;
        pj_value *v;
        cr_expect_eq(parse(&ps, bad[i], &v), -1, "accepted bad document #%zu: %s", i, bad[i]);
        cr_expect_neq(ps.err[0], '\0', "no message for #%zu", i);
        pj_free(&ps);
    }
}

Test(json, nesting_is_bounded)
{
    char text[2 * PJ_DEPTH_MAX + 2];
    pj_parser ps;
    pj_value *v;

    memset(text, '[', PJ_DEPTH_MAX);
    memset(text + PJ_DEPTH_MAX, ']', PJ_DEPTH_MAX);
    pj_init(&ps, text, 2 * PJ_DEPTH_MAX);
    cr_expect_eq(pj_parse_document(&ps, &v), 0, "%s", ps.err);
    pj_free(&ps);
    memset(text, '[', PJ_DEPTH_MAX + 1);
    memset(text + PJ_DEPTH_MAX + 1, ']', PJ_DEPTH_MAX + 1);
    pj_init(&ps, text, 2 * PJ_DEPTH_MAX + 2);
    cr_expect_eq(pj_parse_document(&ps, &v), -1);
    cr_expect(strstr(ps.err, "nested deeper"), "%s", ps.err);
    pj_free(&ps);
}

Test(json, error_names_line_and_column)
{
    pj_parser ps;
    pj_value *v;

    cr_assert_eq(parse(&ps, "[1,\n  2,\n  ]", &v), -1);
    cr_expect(strstr(ps.err, "line 3, column 3"), "%s", ps.err);
    cr_expect(strstr(ps.err, "trailing comma"), "%s", ps.err);
    pj_free(&ps);
}

Test(json, text_need_not_be_nul_terminated)
{
    const char text[] = {'[', '1', '2', ']', '9'}; /* "[12]" then a stray byte */
    pj_parser ps;
    pj_value *v;

    pj_init(&ps, text, 4);
    cr_assert_eq(pj_parse_document(&ps, &v), 0, "%s", ps.err);
    cr_expect_float_eq(v->u.items[0]->u.num, 12.0, EPS);
    pj_free(&ps);
    pj_init(&ps, text, 2); /* "[1": truncated */
    cr_expect_eq(pj_parse_document(&ps, &v), -1);
    pj_free(&ps);
}

/* ---- imbalance of one sample ---- */

Test(imbalance, even_depths_are_perfectly_fair)
{
    const double x[] = {3, 3, 3, 3};
    const pt_imbalance imb = pt_imbalance_of(x, 4);

    cr_expect_float_eq(imb.max_over_mean, 1.0, EPS);
    cr_expect_float_eq(imb.cv, 0.0, EPS);
    cr_expect_float_eq(imb.jain, 1.0, EPS);
}

Test(imbalance, all_zero_counts_as_even)
{
    const double x[] = {0, 0, 0};
    const pt_imbalance imb = pt_imbalance_of(x, 3);

    cr_expect_float_eq(imb.max_over_mean, 1.0, EPS);
    cr_expect_float_eq(imb.cv, 0.0, EPS);
    cr_expect_float_eq(imb.jain, 1.0, EPS);
}

Test(imbalance, one_routee_holding_everything_gives_n_and_one_over_n)
{
    const double x[] = {8, 0, 0, 0};
    const pt_imbalance imb = pt_imbalance_of(x, 4);

    cr_expect_float_eq(imb.max_over_mean, 4.0, EPS);
    cr_expect_float_eq(imb.cv, sqrt(3.0), EPS);
    cr_expect_float_eq(imb.jain, 0.25, EPS);
}

Test(imbalance, two_to_one_split)
{
    const double x[] = {2, 1};
    const pt_imbalance imb = pt_imbalance_of(x, 2);

    cr_expect_float_eq(imb.max_over_mean, 4.0 / 3.0, EPS);
    cr_expect_float_eq(imb.cv, 1.0 / 3.0, EPS);
    cr_expect_float_eq(imb.jain, 9.0 / 10.0, EPS);
}

/* ---- traces ---- */

Test(profile, steady_even_trace_reports_jain_one_and_no_hot_routee)
{
    const double d[] = {5, 5, 5, 5};
    char *text = steady_trace(d, 4, 20);
    pt_trace t;
    pt_report r;

    analyse(text, &t, &r, NULL);
    cr_expect_eq(r.n, 4);
    cr_expect_eq(r.samples, 20);
    cr_expect_eq(r.loaded_samples, 20);
    cr_expect_float_eq(r.all.jain, 1.0, EPS);
    cr_expect_float_eq(r.all.cv, 0.0, EPS);
    cr_expect_float_eq(r.routee[2].mean_depth, 5.0, EPS);
    cr_expect_float_eq(r.routee[2].utilisation, 1.0, EPS);
    cr_expect_float_eq(r.duration_us, 20000.0, EPS);
    cr_expect_eq(r.hot, -1);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(profile, one_deep_routee_is_named_hot_with_jain_one_over_n)
{
    const double d[] = {0, 0, 8, 0};
    char *text = steady_trace(d, 4, 20);
    pt_trace t;
    pt_report r;

    analyse(text, &t, &r, NULL);
    cr_expect_eq(r.hot, 2);
    cr_expect_float_eq(r.all.jain, 0.25, EPS);
    cr_expect_float_eq(r.all.max_over_mean, 4.0, EPS);
    cr_expect_float_eq(r.routee[2].max_depth, 8.0, EPS);
    cr_expect_float_eq(r.routee[0].utilisation, 0.0, EPS);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(profile, idle_trace_is_even_and_has_no_worst_window)
{
    const double d[] = {0, 0};
    char *text = steady_trace(d, 2, 30);
    pt_trace t;
    pt_report r;

    analyse(text, &t, &r, NULL);
    cr_expect_eq(r.loaded_samples, 0);
    cr_expect_float_eq(r.all.jain, 1.0, EPS);
    cr_expect_float_eq(r.loaded.jain, 0.0, EPS);
    cr_expect_eq(r.nworst, 0);
    cr_expect_eq(r.hot, -1);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(profile, means_are_weighted_by_time_until_the_next_sample)
{
    tb b;
    const double a[] = {10, 0}, z[] = {0, 0};
    pt_trace t;
    pt_report r;

    tb_open(&b);
    tb_sample(&b, 0, a, 2);    /* holds for 1000 us */
    tb_sample(&b, 1000, z, 2); /* a late tick: holds for 3000 us */
    tb_sample(&b, 4000, z, 2); /* the last: holds for the interval, 1000 us */
    char *text = tb_close(&b, 2, 1000);
    analyse(text, &t, &r, NULL);
    cr_expect_float_eq(r.duration_us, 5000.0, EPS);
    cr_expect_float_eq(r.routee[0].mean_depth, 2.0, EPS);
    cr_expect_float_eq(r.routee[0].utilisation, 0.2, EPS);
    /* max/mean 2 for 1/5 of the time, 1 (all zero) for the rest. */
    cr_expect_float_eq(r.all.max_over_mean, 1.2, EPS);
    cr_expect_float_eq(r.loaded.max_over_mean, 2.0, EPS);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(profile, counters_hold_their_value_until_the_next_one_even_out_of_order)
{
    tb b;
    pt_trace t;
    pt_report r;

    tb_open(&b);
    /* r1 only changes at 2000; r0 reports once, at 0; written out of order. */
    tb_event(&b, "{\"name\":\"depth r1\",\"ph\":\"C\",\"ts\":2000,\"args\":{\"depth\":6}}");
    tb_event(&b, "{\"name\":\"depth r0\",\"ph\":\"C\",\"ts\":0,\"args\":{\"depth\":6}}");
    tb_event(&b, "{\"name\":\"depth r1\",\"ph\":\"C\",\"ts\":0,\"args\":{\"depth\":0}}");
    char *text = tb_close(&b, 2, 1000);
    analyse(text, &t, &r, NULL);
    cr_expect_eq(r.samples, 2);
    /* 0..2000: [6,0]; 2000..3000: [6,6]. */
    cr_expect_float_eq(r.routee[0].mean_depth, 6.0, EPS);
    cr_expect_float_eq(r.routee[1].mean_depth, 2.0, EPS);
    cr_expect_float_eq(r.all.jain, (2000 * 0.5 + 1000 * 1.0) / 3000, EPS);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(profile, slices_and_steals_are_counted_per_routee)
{
    tb b;
    const double d[] = {1, 1, 1};
    pt_trace t;
    pt_report r;

    tb_open(&b);
    tb_sample(&b, 0, d, 3);
    tb_event(&b, "{\"name\":\"job\",\"cat\":\"job\",\"ph\":\"X\",\"ts\":1,\"dur\":10,\"pid\":1,"
                 "\"tid\":7,\"args\":{\"routee\":1,\"wait_us\":4}}");
    tb_event(&b, "{\"name\":\"job\",\"cat\":\"job\",\"ph\":\"X\",\"ts\":2,\"dur\":30,\"pid\":1,"
                 "\"tid\":7,\"args\":{\"routee\":1,\"wait_us\":8}}");
    tb_event(&b, "{\"name\":\"job\",\"cat\":\"job\",\"ph\":\"X\",\"ts\":3,\"dur\":5,\"pid\":1,"
                 "\"tid\":8,\"args\":{\"routee\":2,\"wait_us\":0}}");
    tb_event(&b, "{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"s\",\"id\":1,\"ts\":4}");
    tb_event(&b, "{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"i\",\"s\":\"t\",\"ts\":4,"
                 "\"args\":{\"thief\":0,\"victim\":2,\"jobs\":3}}");
    tb_event(&b, "{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"i\",\"s\":\"t\",\"ts\":5,"
                 "\"args\":{\"thief\":0,\"victim\":1,\"jobs\":1}}");
    char *text = tb_close(&b, 3, 1000);
    analyse(text, &t, &r, NULL);
    cr_expect_eq(t.slices, 3);
    cr_expect_eq(r.routee[1].ev.slices, 2);
    cr_expect_float_eq(r.routee[1].job_share, 2.0 / 3.0, EPS);
    cr_expect_float_eq(r.routee[1].mean_job_us, 20.0, EPS);
    cr_expect_float_eq(r.routee[1].mean_wait_us, 6.0, EPS);
    cr_expect_eq(r.routee[0].ev.stole, 4);
    cr_expect_eq(r.routee[2].ev.stolen_from, 3);
    cr_expect_eq(r.routee[1].ev.stolen_from, 1);
    cr_expect_eq(t.steal_events, 2);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(profile, hot_takes_twice_the_next_deepest_and_half_a_job)
{
    static const struct {
        double d[3];
        int hot;
    } cases[] = {
        {{3, 2, 0}, -1}, {{5, 2, 0}, 0}, {{0, 0, 1}, 2}, {{4, 4, 0}, -1}, {{0, 0, 0}, -1},
    };

    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *text = steady_trace(cases[c].d, 3, 10);
        pt_trace t;
        pt_report r;
        analyse(text, &t, &r, NULL);
        cr_expect_eq(r.hot, cases[c].hot, "case %zu: hot %d, expected %d", c, r.hot,
                     cases[c].hot);
        pt_report_release(&r);
        pt_release(&t);
        free(text);
    }
}

Test(profile, a_routee_under_half_a_job_deep_is_not_hot)
{
    const double on[] = {0, 0, 1}, off[] = {0, 0, 0};
    tb b;
    pt_trace t;
    pt_report r;

    tb_open(&b);
    for (unsigned k = 0; k < 10; k++)
        tb_sample(&b, 1000.0 * k, k < 4 ? on : off, 3);
    char *text = tb_close(&b, 3, 1000);
    analyse(text, &t, &r, NULL);
    cr_expect_float_eq(r.routee[2].mean_depth, 0.4, EPS);
    cr_expect_eq(r.deepest, 2);
    cr_expect_eq(r.hot, -1);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(profile, worst_windows_rank_imbalance_then_load_and_skip_trivial_ones)
{
    static const double even[] = {4, 4, 4, 4}, one[] = {8, 0, 0, 0}, two[] = {6, 2, 0, 0},
                        blip[] = {1, 0, 0, 0}, zero[] = {0, 0, 0, 0};
    const double *phases[] = {even, one, two, zero};
    tb b;
    pt_trace t;
    pt_report r;

    tb_open(&b);
    for (unsigned k = 0; k < 40; k++)
        tb_sample(&b, 1000.0 * k, k == 35 ? blip : phases[k / 10], 4);
    char *text = tb_close(&b, 4, 1000);
    analyse(text, &t, &r, NULL);
    cr_expect_eq(r.nwindows, 4);
    cr_assert_eq(r.nworst, 3, "the window with one blip of depth 1 is not a candidate");
    cr_expect_float_eq(r.worst[0].start_us, 10000.0, EPS);
    cr_expect_float_eq(r.worst[0].imb.max_over_mean, 4.0, EPS);
    cr_expect_eq(r.worst[0].deepest, 0);
    cr_expect_float_eq(r.worst[1].start_us, 20000.0, EPS);
    cr_expect_float_eq(r.worst[1].imb.max_over_mean, 3.0, EPS);
    cr_expect_float_eq(r.worst[2].start_us, 0.0, EPS);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(profile, bare_array_of_events_is_a_trace_too)
{
    const char *text = "[{\"name\":\"depth r0\",\"ph\":\"C\",\"ts\":0,\"args\":{\"depth\":2}},"
                       "{\"name\":\"depth r1\",\"ph\":\"C\",\"ts\":0,\"args\":{\"depth\":2}}]";
    pt_trace t;
    pt_report r;

    analyse(text, &t, &r, NULL);
    cr_expect_eq(r.n, 2);
    cr_expect_eq(r.samples, 1);
    cr_expect_float_eq(r.all.jain, 1.0, EPS);
    cr_expect_null(t.pool);
    pt_report_release(&r);
    pt_release(&t);
}

Test(profile, foreign_events_are_ignored)
{
    const char *text =
        "{\"traceEvents\":[{\"name\":\"depth r0\",\"ph\":\"C\",\"ts\":0,\"args\":{\"depth\":1}},"
        "{\"name\":\"depth rx\",\"ph\":\"C\",\"ts\":0,\"args\":{\"depth\":-5}},"
        "{\"name\":\"depth r01\",\"ph\":\"C\",\"ts\":0,\"args\":{}},"
        "{\"name\":\"queue\",\"ph\":\"C\",\"ts\":0,\"args\":{\"depth\":9}},"
        "{\"name\":\"job\",\"ph\":\"X\",\"ts\":0,\"dur\":1,\"args\":{}},"
        "{\"name\":\"work\",\"ph\":\"B\",\"ts\":0},{\"name\":\"work\",\"ph\":\"E\",\"ts\":1}],"
        "\"otherData\":{\"x\":[1,2]}}";
    pt_trace t;
    pt_report r;

    analyse(text, &t, &r, NULL);
    cr_expect_eq(r.n, 1);
    cr_expect_eq(t.npoints, 1);
    cr_expect_eq(t.slices, 0);
    pt_report_release(&r);
    pt_release(&t);
}

Test(profile, malformed_routepool_events_are_errors)
{
    static const char *const bad[] = {
        "{\"traceEvents\":[{\"name\":\"depth r0\",\"ph\":\"C\",\"ts\":0,\"args\":{\"depth\":-1}}]}",
        "{\"traceEvents\":[{\"name\":\"depth r0\",\"ph\":\"C\",\"ts\":0}]}",
        "{\"traceEvents\":[{\"name\":\"depth r0\",\"ph\":\"C\",\"args\":{\"depth\":1}}]}",
        "{\"traceEvents\":[{\"name\":\"busy r0\",\"ph\":\"C\",\"ts\":0,\"args\":{\"busy\":2}}]}",
        ("{\"traceEvents\":[{\"name\":\"job\",\"ph\":\"X\",\"ts\":0,\"dur\":1,"
         "\"args\":{\"routee\":4096}}]}"),
        "{\"traceEvents\":[{\"name\":\"job\",\"ph\":\"X\",\"ts\":0,\"args\":{\"routee\":1}}]}",
        "{\"traceEvents\":[{\"name\":\"steal\",\"ph\":\"i\",\"ts\":0,\"args\":{\"thief\":1}}]}",
        "{\"traceEvents\":[{\"name\":\"routepool\",\"ph\":\"M\",\"args\":{\"routees\":4}}]}",
        "{\"traceEvents\":[{\"ts\":0}]}",
        "{\"traceEvents\":[1]}",
        "{\"traceEvents\":{}}",
        "{\"events\":[]}",
        "42",
    };

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pt_trace t;
        char err[256] = "";
        cr_expect_eq(pt_read(&t, bad[i], strlen(bad[i]), err, sizeof err), -1,
                     "accepted bad trace #%zu", i);
        cr_expect_neq(err[0], '\0', "no message for #%zu", i);
    }
}

Test(profile, trace_without_depth_counters_has_no_samples)
{
    const char *text = "{\"traceEvents\":[{\"name\":\"busy r0\",\"ph\":\"C\",\"ts\":0,"
                       "\"args\":{\"busy\":1}}]}";
    pt_trace t;
    pt_report r;
    pt_options o;
    char err[256] = "";

    pt_options_init(&o);
    cr_assert_eq(pt_read(&t, text, strlen(text), err, sizeof err), 0, "%s", err);
    cr_expect_eq(pt_analyse(&r, &t, &o, err, sizeof err), -1);
    cr_expect(strstr(err, "no depth samples"), "%s", err);
    pt_release(&t);
}

/* ---- outputs ---- */

/* Run a writer into memory. */
static char *capture(int (*writer)(FILE *, const pr_input *), const pr_input *in)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    cr_assert_not_null(f);
    cr_assert_eq(writer(f, in), 0);
    fclose(f);
    return buf;
}

Test(report, json_output_is_strict_json_with_the_hot_routee)
{
    const double d[] = {0, 9, 0, 0};
    char *text = steady_trace(d, 4, 30);
    pt_trace t;
    pt_report r;
    pj_parser ps;
    pj_value *v;

    analyse(text, &t, &r, NULL);
    const pr_input in = {"a \"quoted\"\\path\n", &t, &r};
    char *json = capture(pr_write_json, &in);
    cr_assert_eq(parse(&ps, json, &v), 0, "%s\n%s", ps.err, json);
    cr_expect_float_eq(pj_get(v, "hot_routee")->u.num, 1.0, EPS);
    cr_expect_float_eq(pj_get(v, "jain_mean")->u.num, 0.25, EPS);
    cr_expect_eq(pj_get(v, "routees")->len, 4);
    cr_expect_eq(pj_get(v, "worst_intervals")->type, PJ_ARRAY);
    cr_expect(pj_is_string(pj_get(pj_get(v, "trace"), "path"), "a \"quoted\"\\path\n"));
    pj_free(&ps);
    free(json);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(report, html_and_svg_are_self_contained_and_escape_names)
{
    const char *text =
        "{\"traceEvents\":[{\"name\":\"depth r0\",\"ph\":\"C\",\"ts\":0,\"args\":{\"depth\":3}},"
        "{\"name\":\"routepool\",\"ph\":\"M\",\"args\":{\"pool\":\"<b>&\",\"routees\":2,"
        "\"interval_us\":1000,\"samples\":1,\"lost_events\":0}}]}";
    pt_trace t;
    pt_report r;

    analyse(text, &t, &r, NULL);
    const pr_input in = {"x<y.json", &t, &r};
    char *html = capture(pr_write_html, &in), *svg = capture(pr_write_svg, &in);
    cr_expect(strstr(html, "<svg"));
    cr_expect(strstr(html, "&lt;b&gt;&amp;"));
    cr_expect_null(strstr(html, "<b>&"));
    cr_expect_null(strstr(html, "<script"));
    cr_expect_null(strstr(html, "https://"));
    cr_expect_null(strstr(html, "src="));
    cr_expect_null(strstr(html, "<link"));
    cr_expect(strncmp(svg, "<?xml", 5) == 0);
    cr_expect(strstr(svg, "&lt;b&gt;&amp;"));
    free(html);
    free(svg);
    pt_report_release(&r);
    pt_release(&t);
}

/* ---- exact counts, durations, SVG text (issue 17, "Reports people look at") ---- */

/* Samples on 2 routees, slices saying 3:1, and exact totals saying 19:81. */
static char *totals_trace(bool totals)
{
    tb b;
    const double d[] = {1, 1};

    tb_open(&b);
    tb_sample(&b, 0, d, 2);
    for (int k = 0; k < 4; k++)
        tb_event(&b, "{\"name\":\"job\",\"ph\":\"X\",\"ts\":%d,\"dur\":1,\"pid\":1,\"tid\":%d,"
                     "\"args\":{\"routee\":%d,\"wait_us\":179696.5}}", 10 * k, 7 + (k == 3),
                 k == 3);
    tb_event(&b, "{\"name\":\"steal\",\"ph\":\"i\",\"s\":\"t\",\"ts\":5,"
                 "\"args\":{\"thief\":1,\"victim\":0,\"jobs\":2}}");
    if (totals) {
        tb_event(&b, "{\"name\":\"routee_totals\",\"ph\":\"M\",\"pid\":1,\"tid\":7,\"args\":"
                     "{\"routee\":0,\"jobs_run\":19,\"stole\":0,\"stolen_from\":5,\"enqueued\":24}}");
        tb_event(&b, "{\"name\":\"routee_totals\",\"ph\":\"M\",\"pid\":1,\"tid\":8,\"args\":"
                     "{\"routee\":1,\"jobs_run\":81,\"stole\":5,\"stolen_from\":0,\"enqueued\":76}}");
    }
    return tb_close(&b, 2, 1000);
}

Test(report, jobs_run_share_comes_from_the_exact_totals_not_the_sampled_slices)
{
    char *text = totals_trace(true), *report;
    pt_trace t;
    pt_report r;

    analyse(text, &t, &r, NULL);
    cr_expect(r.routee[0].jobs_exact);
    cr_expect_eq(r.routee[0].jobs_run, 19);
    cr_expect_eq(r.routee[1].jobs_run, 81);
    cr_expect_float_eq(r.routee[0].job_share, 0.19, EPS, "not the slices' 0.75");
    cr_expect_eq(r.routee[1].ev.stole, 5, "steals from the totals, not the one instant's 2");
    cr_expect_eq(r.routee[0].ev.stolen_from, 5);
    cr_expect_eq(r.routee[0].ev.slices, 3, "the slices are still read");
    const pr_input in = {"t.json", &t, &r};
    report = capture(pr_write_text, &in);
    cr_expect(strstr(report, "19  19.0%"), "%s", report);
    cr_expect(strstr(report, "exact counts"), "%s", report);
    free(report);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(report, without_totals_the_share_is_the_sampled_estimate)
{
    char *text = totals_trace(false);
    pt_trace t;
    pt_report r;

    analyse(text, &t, &r, NULL);
    cr_expect_not(r.routee[0].jobs_exact);
    cr_expect_eq(r.routee[0].jobs_run, 3);
    cr_expect_float_eq(r.routee[0].job_share, 0.75, EPS);
    cr_expect_eq(r.routee[1].ev.stole, 2);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(profile, a_second_routee_totals_for_one_routee_is_an_error)
{
    const char *text =
        "[{\"name\":\"routee_totals\",\"ph\":\"M\",\"args\":{\"routee\":0,\"jobs_run\":1,"
        "\"stole\":0,\"stolen_from\":0}},"
        "{\"name\":\"routee_totals\",\"ph\":\"M\",\"args\":{\"routee\":0,\"jobs_run\":1,"
        "\"stole\":0,\"stolen_from\":0}}]";
    const char *negative =
        "[{\"name\":\"routee_totals\",\"ph\":\"M\",\"args\":{\"routee\":0,\"jobs_run\":-1,"
        "\"stole\":0,\"stolen_from\":0}}]";
    char err[256];
    pt_trace t;

    cr_expect_eq(pt_read(&t, text, strlen(text), err, sizeof err), -1);
    cr_expect(strstr(err, "second"), "%s", err);
    cr_expect_eq(pt_read(&t, negative, strlen(negative), err, sizeof err), -1);
    cr_expect(strstr(err, "jobs_run"), "%s", err);
}

Test(report, waits_from_10_ms_are_shown_in_ms)
{
    char *text = totals_trace(true), *report, *html, *svg;
    char buf[32];
    pt_trace t;
    pt_report r;

    pr_format_us(buf, sizeof buf, 9999.94);
    cr_expect_str_eq(buf, "9999.9 us");
    pr_format_us(buf, sizeof buf, 10000);
    cr_expect_str_eq(buf, "10.0 ms");
    analyse(text, &t, &r, NULL);
    const pr_input in = {"t.json", &t, &r};
    report = capture(pr_write_text, &in);
    html = capture(pr_write_html, &in);
    svg = capture(pr_write_svg, &in);
    cr_expect(strstr(report, "179.7 ms"), "%s", report);
    cr_expect(strstr(html, "179.7 ms"));
    cr_expect(strstr(svg, "179.7 ms"));
    cr_expect_null(strstr(report, "179696.5"));
    cr_expect_null(strstr(html, "179696.5"));
    free(report);
    free(html);
    free(svg);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}

Test(report, svg_table_rows_keep_their_spaces_where_css_is_ignored)
{
    char *text = totals_trace(true), *svg;
    pt_trace t;
    pt_report r;
    size_t pre = 0, preserved = 0;

    analyse(text, &t, &r, NULL);
    const pr_input in = {"t.json", &t, &r};
    svg = capture(pr_write_svg, &in);
    for (const char *p = svg; (p = strstr(p, "<text")) != NULL; p++) {
        const char *end = strchr(p, '>');
        size_t len = (size_t)(end - p);
        bool ws = memmem(p, len, "white-space:pre", 15) != NULL;
        pre += ws;
        preserved += ws && memmem(p, len, "xml:space=\"preserve\"", 20) != NULL;
    }
    cr_expect_eq(pre, 3, "the header and two rows");
    cr_expect_eq(preserved, pre, "every padded row says xml:space=\"preserve\"");
    free(svg);
    pt_report_release(&r);
    pt_release(&t);
    free(text);
}
