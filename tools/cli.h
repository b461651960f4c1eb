/* SPDX-License-Identifier: MIT */
/*
 * tools/cli.h - what routepool's command-line tools share: the messages
 * for a bad command line, number and list parsing, output files where `-`
 * is standard output, --version, a JSON string writer and medians.
 *
 * One spelling everywhere: every message starts with the tool's name
 * (cli_init()), names the option at fault and ends with "Try 'TOOL
 * --help'."; every number is checked whole (no trailing text, no NaN, no
 * infinity, in range); a list is comma-separated and an empty item is an
 * error, not skipped.  Each tool parses with getopt_long(opterr = 0) and
 * hands '?' and ':' to cli_bad_option(), which tells an unknown option
 * from an ambiguous one and from a flag given a value (--quiet=1).
 *
 * The tools are single-threaded while they parse; nothing here is
 * thread-safe (cli_init() sets a global).  Tools use the public routepool
 * headers only (STYLE.md).
 */
#ifndef RP_TOOLS_CLI_H
#define RP_TOOLS_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/** Name the messages start with ("rp-tune"); call before anything else.
 *  prog must outlive every other call (a string literal). */
void cli_init(const char *prog);
/** The name given to cli_init(). */
const char *cli_prog(void);

/** Print "PROG: <message>\nTry 'PROG --help'.\n" to stderr; returns false
 *  so a parser can `return cli_usage_error(...)`. */
bool cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Explain getopt_long's '?' or ':' (c) for the argument just parsed:
 *  a missing value, a value given to a flag that takes none, an
 *  ambiguous abbreviation (listing the candidates) or an unknown option.
 *  longopts is the table given to getopt_long. */
void cli_bad_option(int c, char *const argv[], const struct option *longopts);

/** "PROG (routepool) VERSION\nlibroutepool rp_version()\n" on stdout. */
void cli_print_version(void);

/** A decimal whole number in [min, max]: digits only (no sign, spaces,
 *  hex).  False after a message naming opt. */
bool cli_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out);

/** A finite number with lo < v <= hi (lo_open) or lo <= v <= hi.  False
 *  after a message naming opt. */
bool cli_parse_double(const char *opt, const char *s, double lo, bool lo_open, double hi,
                      double *out);

/** A fraction, as for cli_parse_double, where "80%" also means 0.8: the
 *  tools' --load.  The message for a value above hi that would fit as a
 *  percent ("--load 80") says to write 0.8 or 80%. */
bool cli_parse_fraction(const char *opt, const char *s, double lo, bool lo_open, double hi,
                        double *out);

/** Called once per item of a list, in order; false (after a message) stops. */
typedef bool (*cli_item_fn)(void *user, char *item, const char *list);

/** Split a comma-separated list (at most 511 bytes) and call fn on each
 *  item.  An empty list or an empty item ("1,,2", "1,", ",1") is an error
 *  naming opt.  False after a message. */
bool cli_parse_list(const char *opt, const char *list, cli_item_fn fn, void *user);

/** An output file given as an option's value; `-` is standard output. */
typedef struct cli_output {
    const char *opt;   /* "--csv": for messages */
    const char *path;  /* as given; "-" for standard output */
    FILE *f;           /* NULL until opened */
    bool is_stdout;
} cli_output;

/** Open (truncate) path for writing, or take stdout for "-".  A second
 *  call for the same option replaces the first.  False after a message
 *  naming opt and the reason (the caller exits with its runtime code). */
bool cli_output_open(cli_output *o, const char *opt, const char *path);

/** Flush and close (stdout is only flushed).  False after a message
 *  naming the option and the path when anything written was lost. */
bool cli_output_close(cli_output *o);

/** True when str is well-formed UTF-8 (JSON and XML need it). */
bool cli_utf8_valid(const char *str);

/** A JSON string literal; in text that is not UTF-8 each non-ASCII byte
 *  becomes '?', control characters become \u00XX. */
void cli_json_str(FILE *f, const char *s);

/** Median of n > 0 values; sorts v in place. */
double cli_median(double *v, size_t n);

#endif /* RP_TOOLS_CLI_H */
