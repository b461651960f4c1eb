/* SPDX-License-Identifier: MIT */
/*
 * tools/profile_report.h - rp-profile's outputs: the text report, JSON for
 * machines, and a self-contained HTML or SVG report (inline SVG and CSS, no
 * script, nothing fetched) with a routee x time heatmap of queued depth and
 * a line per routee.
 */
#ifndef RP_PROFILE_REPORT_H
#define RP_PROFILE_REPORT_H

#include <stdio.h>

#include "profile_trace.h"

/** What every writer reports on. */
typedef struct pr_input {
    const char *path;      /* the trace file, as named on the command line */
    const pt_trace *trace;
    const pt_report *report;
} pr_input;

/** A duration for people: "%.1f us" below 10 ms, "%.1f ms" from 10 ms. */
void pr_format_us(char *out, size_t cap, double us);

/** The text report.  @return 0, or -1 on a write error. */
int pr_write_text(FILE *f, const pr_input *in);

/** The report as one JSON object.  @return 0 or -1. */
int pr_write_json(FILE *f, const pr_input *in);

/** A self-contained HTML page.  @return 0 or -1. */
int pr_write_html(FILE *f, const pr_input *in);

/** A standalone SVG image: title, heatmap, lines and a summary.  @return 0 or -1. */
int pr_write_svg(FILE *f, const pr_input *in);

#endif /* RP_PROFILE_REPORT_H */
