/* SPDX-License-Identifier: MIT */
/*
 * tools/tune_args.c - rp-tune's command line.
 *
 * Every value is checked here, before anything runs: numbers must be whole
 * and finite and in range (no NaN, no negatives), distributions and routers
 * must be known, the .so and its symbol must load and the output files must
 * open.  A bad value exits with status 2 and a message that names the
 * option.  Cross-checks (--load with --rate, --job-arg without --job) come
 * after the loop, when every option is known.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune.h"

#define DEFAULT_COST "bimodal:1,100,0.1"
#define DEFAULT_DURATION_S 2.0
#define DEFAULT_SEED 1u
#define DURATION_MAX_S 3600.0
#define RATE_MAX 1e8
#define CLIENTS_MAX 100000u
#define DEFAULT_REPEAT 1u

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: rp-tune [OPTION]...\n"
        "\n"
        "Run a workload on routepool pools of several sizes and routers, print per\n"
        "size and router the throughput, the p50/p99/p99.9 sojourn time (from arrival\n"
        "to completion), the CPU utilisation, the imbalance between mailboxes and the\n"
        "jobs stolen, and recommend a pool size and router.\n"
        "\n"
        "Workload (one of):\n"
        "  -c, --cost DIST        built-in jobs that spin the CPU for a drawn time\n"
        "                         (default " DEFAULT_COST "):\n"
        "                           uniform:US       every job costs US microseconds\n"
        "                           uniform:LO,HI    uniformly between LO and HI us\n"
        "                           exp:US           exponential, mean US\n"
        "                           bimodal:A,B,P    B us with probability P, else A us\n"
        "                           pareto:US,ALPHA  Pareto: minimum US, shape ALPHA > 1\n"
        "                                            (draws capped at %.0f x US)\n"
        "  -j, --job FILE:SYMBOL  your own job from a shared object (dlopen; write ./ for\n"
        "                         a file in this directory):\n"
        "                           void  SYMBOL(rp_job_ctx *ctx, void *arg);\n"
        "                           void *SYMBOL_init(const char *job_arg);  optional\n"
        "                           void  SYMBOL_fini(void *state);          optional\n"
        "                         init and fini run once; every job gets init's result\n"
        "                         (or the --job-arg string without init); see\n"
        "                         docs/tuning.md\n"
        "      --job-arg STRING   the string given to SYMBOL_init\n"
        "\n"
        "Driving (default: closed loop, the highest throughput):\n"
        "      --clients N        closed loop: N jobs in flight, each finished job\n"
        "                         submits the next (default 4 x the largest size),\n"
        "                         1..%u\n"
        "  -l, --load F           open loop: Poisson arrivals at F x the capacity\n"
        "                         measured first (closed loop, largest size,\n"
        "                         smallest-mailbox+steal), 0 < F <= 2\n"
        "      --rate R           open loop at R jobs/s, 0 < R <= 1e8\n"
        "\n"
        "Sweep:\n"
        "  -s, --sizes LIST       pool sizes: 1..8, 1,2,4,8 or a mix, each 1..%u\n"
        "                         (default 1..2 x online CPUs, thinned out above 8)\n"
        "  -r, --routers LIST     routers, comma-separated: round-robin (rr), random,\n"
        "                         smallest-mailbox (sm), each with work stealing off, or\n"
        "                         with +steal (on); default: round-robin,random,\n"
        "                         smallest-mailbox,smallest-mailbox+steal\n"
        "  -d, --duration S       measured seconds per cell, 0 < S <= %.0f (default %.0f)\n"
        "      --warmup S         seconds run before measuring (default duration / 10)\n"
        "      --seed S           seed of the costs, arrivals and random router\n"
        "                         (default %u)\n"
        "      --p99 MS           recommend only cells whose p99 sojourn is at most MS ms\n"
        "      --repeat N         run the whole sweep N times, interleaved, and report\n"
        "                         the median of each number (1..%u, default %u); 3 or\n"
        "                         5 on a noisy or shared machine\n"
        "\n"
        "Output:\n"
        "      --csv FILE         one row per size and router\n"
        "      --json FILE        the run's settings, every cell and the recommendation\n"
        "      --plot FILE.svg    throughput and p99 against pool size, one line per\n"
        "                         router\n"
        "  -q, --quiet            print only the recommendation (no header, table or\n"
        "                         progress bar; without it the progress bar shows\n"
        "                         only on a terminal)\n"
        "  -h, --help             print this help and exit\n"
        "  -V, --version          print the version and exit\n"
        "\n"
        "Ctrl-C stops the sweep and prints (and writes) the cells measured so far.\n"
        "\n"
        "Exit status:\n"
        "  0    the sweep ran (also when no cell meets --p99: the output says so)\n"
        "  1    a routepool call, the plugin's init or writing an output file failed\n"
        "  2    bad command line (the message names the option)\n"
        "  130  interrupted by Ctrl-C; the partial results were printed\n",
        TUNE_PARETO_CAP, CLIENTS_MAX, RP_ROUTEES_MAX, DURATION_MAX_S, DEFAULT_DURATION_S,
        DEFAULT_SEED, TUNE_REPEAT_MAX, DEFAULT_REPEAT);
}

static bool usage_error(const char *fmt, const char *opt, const char *value)
{
    fprintf(stderr, "rp-tune: ");
    fprintf(stderr, fmt, opt, value);
    fprintf(stderr, "\nTry 'rp-tune --help'.\n");
    return false;
}

/* A decimal whole number in [min, max]: digits only, no sign, no spaces. */
static bool parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    bool digits = s[0] != '\0';
    for (const char *p = s; *p; p++)
        digits = digits && *p >= '0' && *p <= '9';
    errno = 0;
    const unsigned long long v = digits ? strtoull(s, NULL, 10) : 0;
    if (!digits || errno == ERANGE || v < min || v > max) {
        char range[64];
        snprintf(range, sizeof range, "%" PRIu64 "..%" PRIu64, min, max);
        fprintf(stderr, "rp-tune: %s: expected a whole number in %s, got '%s'\n"
                        "Try 'rp-tune --help'.\n", opt, range, s);
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

/* A finite number with lo < v <= hi (lo_open) or lo <= v <= hi. */
static bool parse_double(const char *opt, const char *s, double lo, bool lo_open, double hi,
                         double *out)
{
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    const bool ok = end != s && *end == '\0' && errno != ERANGE && isfinite(v) &&
                    (lo_open ? v > lo : v >= lo) && v <= hi;
    if (!ok) {
        fprintf(stderr, "rp-tune: %s: expected a number %s %g and at most %g, got '%s'\n"
                        "Try 'rp-tune --help'.\n", opt, lo_open ? "above" : "from", lo, hi, s);
        return false;
    }
    *out = v;
    return true;
}

/* ---- --sizes ---- */

static int cmp_unsigned(const void *a, const void *b)
{
    const unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

/* Sort the sizes and drop repeats. */
static void sort_sizes(tune_cfg *cfg)
{
    qsort(cfg->sizes, cfg->nsizes, sizeof cfg->sizes[0], cmp_unsigned);
    size_t n = 0;
    for (size_t i = 0; i < cfg->nsizes; i++)
        if (n == 0 || cfg->sizes[n - 1] != cfg->sizes[i])
            cfg->sizes[n++] = cfg->sizes[i];
    cfg->nsizes = n;
}

static bool add_size_range(tune_cfg *cfg, uint64_t lo, uint64_t hi, const char *list)
{
    for (uint64_t s = lo; s <= hi; s++) {
        if (cfg->nsizes == TUNE_SIZES_MAX) {
            fprintf(stderr, "rp-tune: --sizes: more than %u sizes in '%s'\n"
                            "Try 'rp-tune --help'.\n", TUNE_SIZES_MAX, list);
            return false;
        }
        cfg->sizes[cfg->nsizes++] = (unsigned)s;
    }
    return true;
}

/* One item of the list: N or A..B. */
static bool parse_size_item(tune_cfg *cfg, char *item, const char *list)
{
    char *dots = strstr(item, "..");
    uint64_t lo, hi;
    if (dots)
        *dots = '\0';
    if (!parse_u64("--sizes", item, 1, RP_ROUTEES_MAX, &lo))
        return false;
    hi = lo;
    if (dots && !parse_u64("--sizes", dots + 2, 1, RP_ROUTEES_MAX, &hi))
        return false;
    if (hi < lo)
        return usage_error("%s: a range must go upwards, got '%s'", "--sizes", list);
    return add_size_range(cfg, lo, hi, list);
}

static bool parse_sizes(tune_cfg *cfg, const char *list)
{
    char buf[512];
    if (strlen(list) >= sizeof buf || list[0] == '\0')
        return usage_error("%s: expected a list such as 1..4 or 1,2,4,8, got '%s'", "--sizes",
                           list);
    snprintf(buf, sizeof buf, "%s", list);
    cfg->nsizes = 0;
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save))
        if (!parse_size_item(cfg, item, list))
            return false;
    sort_sizes(cfg);
    return cfg->nsizes > 0 || usage_error("%s: no size in '%s'", "--sizes", list);
}

/* 1..2 x CPUs, every size up to 8; above that powers of two and 1.5 times
 * them (1 2 3 4 6 8 12 16 24 ...) plus the CPU count and the top, so the
 * sweep of a big machine stays short. */
static void default_sizes(tune_cfg *cfg)
{
    const unsigned top = cfg->cpus * 2 > RP_ROUTEES_MAX ? RP_ROUTEES_MAX : cfg->cpus * 2;
    cfg->nsizes = 0;
    for (unsigned p = 1; p <= top; p *= 2) {
        cfg->sizes[cfg->nsizes++] = p;
        if (p >= 2 && p + p / 2 <= top)
            cfg->sizes[cfg->nsizes++] = p + p / 2;
        for (unsigned s = p + 1; top <= 8 && s < 2 * p && s <= top; s++)
            cfg->sizes[cfg->nsizes++] = s;
    }
    cfg->sizes[cfg->nsizes++] = cfg->cpus;
    cfg->sizes[cfg->nsizes++] = top;
    sort_sizes(cfg);
}

/* ---- --routers ---- */

bool tune_router_parse(tune_router *out, const char *name)
{
    static const struct {
        const char *name, *alias;
        rp_strategy_kind kind;
    } kinds[] = {{"round-robin", "rr", RP_STRATEGY_ROUND_ROBIN},
                 {"random", "random", RP_STRATEGY_RANDOM},
                 {"smallest-mailbox", "sm", RP_STRATEGY_SMALLEST_MAILBOX}};
    const char *plus = strchr(name, '+');
    const size_t len = plus ? (size_t)(plus - name) : strlen(name);
    if (plus && strcmp(plus, "+steal") != 0)
        return false;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if ((strlen(kinds[i].name) == len && strncmp(name, kinds[i].name, len) == 0) ||
            (strlen(kinds[i].alias) == len && strncmp(name, kinds[i].alias, len) == 0)) {
            out->kind = kinds[i].kind;
            out->steal = plus != NULL;
            snprintf(out->name, sizeof out->name, "%s%s", kinds[i].name, plus ? "+steal" : "");
            return true;
        }
    }
    return false;
}

static bool parse_routers(tune_cfg *cfg, const char *list)
{
    char buf[512];
    if (strlen(list) >= sizeof buf || list[0] == '\0')
        return usage_error("%s: expected a list such as rr,sm+steal, got '%s'", "--routers", list);
    snprintf(buf, sizeof buf, "%s", list);
    cfg->nrouters = 0;
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        tune_router r;
        if (!tune_router_parse(&r, item))
            return usage_error("%s: unknown router '%s' (round-robin, random, "
                               "smallest-mailbox, each with or without +steal)", "--routers", item);
        for (size_t i = 0; i < cfg->nrouters; i++)
            if (strcmp(cfg->routers[i].name, r.name) == 0)
                return usage_error("%s: '%s' is listed twice", "--routers", r.name);
        cfg->routers[cfg->nrouters++] = r; /* 6 distinct routers fit */
    }
    return cfg->nrouters > 0 || usage_error("%s: no router in '%s'", "--routers", list);
}

static void default_routers(tune_cfg *cfg)
{
    static const char *const names[] = {"round-robin", "random", "smallest-mailbox",
                                        "smallest-mailbox+steal"};
    cfg->nrouters = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        tune_router_parse(&cfg->routers[cfg->nrouters++], names[i]);
}

/* ---- getopt_long ---- */

enum {
    OPT_JOB_ARG = 256, OPT_CLIENTS, OPT_RATE, OPT_WARMUP, OPT_SEED, OPT_P99,
    OPT_REPEAT, OPT_CSV, OPT_JSON, OPT_PLOT
};

static const struct option longopts[] = {
    {"cost", required_argument, NULL, 'c'},     {"job", required_argument, NULL, 'j'},
    {"job-arg", required_argument, NULL, OPT_JOB_ARG},
    {"clients", required_argument, NULL, OPT_CLIENTS},
    {"load", required_argument, NULL, 'l'},     {"rate", required_argument, NULL, OPT_RATE},
    {"sizes", required_argument, NULL, 's'},    {"routers", required_argument, NULL, 'r'},
    {"duration", required_argument, NULL, 'd'}, {"warmup", required_argument, NULL, OPT_WARMUP},
    {"seed", required_argument, NULL, OPT_SEED}, {"p99", required_argument, NULL, OPT_P99},
    {"repeat", required_argument, NULL, OPT_REPEAT},
    {"csv", required_argument, NULL, OPT_CSV},  {"json", required_argument, NULL, OPT_JSON},
    {"plot", required_argument, NULL, OPT_PLOT}, {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},           {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

static void bad_option(int c, char *const argv[])
{
    const char *opt = argv[optind - 1];
    if (c == ':')
        fprintf(stderr, "rp-tune: option '%s' needs a value\n", opt);
    else if (optopt != 0)
        fprintf(stderr, "rp-tune: unknown option '-%c'\n", optopt);
    else
        fprintf(stderr, "rp-tune: unknown option '%s'\n", opt);
    fprintf(stderr, "Try 'rp-tune --help'.\n");
}

static bool open_output(FILE **f, const char **path, const char *opt, const char *value)
{
    if (*f)
        fclose(*f);
    *path = value;
    if (!(*f = fopen(value, "w"))) {
        fprintf(stderr, "rp-tune: %s: cannot write '%s': %s\nTry 'rp-tune --help'.\n", opt, value,
                strerror(errno));
        return false;
    }
    return true;
}

/* Options with a number: where it goes and its range. */
static bool parse_number_option(tune_cfg *cfg, int c, const char *v)
{
    uint64_t u;
    switch (c) {
    case 'l': return parse_double("--load", v, 0, true, 2, &cfg->load);
    case OPT_RATE: return parse_double("--rate", v, 0, true, RATE_MAX, &cfg->rate);
    case 'd': return parse_double("--duration", v, 0, true, DURATION_MAX_S, &cfg->duration_s);
    case OPT_WARMUP: return parse_double("--warmup", v, 0, false, DURATION_MAX_S, &cfg->warmup_s);
    case OPT_P99: return parse_double("--p99", v, 0, true, 1e6, &cfg->p99_ms);
    case OPT_SEED: return parse_u64("--seed", v, 0, UINT64_MAX, &cfg->seed);
    case OPT_REPEAT:
        if (!parse_u64("--repeat", v, 1, TUNE_REPEAT_MAX, &u))
            return false;
        cfg->repeat = (unsigned)u;
        return true;
    default:
        if (!parse_u64("--clients", v, 1, CLIENTS_MAX, &u))
            return false;
        cfg->clients = (unsigned)u;
        return true;
    }
}

/* One option with a value; false after a message. */
static bool parse_one(tune_cfg *cfg, int c, const char *v, bool *have_cost)
{
    switch (c) {
    case 'c': *have_cost = true; return tune_cost_parse(&cfg->work.cost, v);
    case 'j':
        tune_plugin_unload(&cfg->work.plug);
        cfg->work.plugin = true;
        cfg->work.job_spec = v;
        return tune_plugin_load(&cfg->work.plug, v);
    case OPT_JOB_ARG: cfg->work.job_arg = v; return true;
    case 's': return parse_sizes(cfg, v);
    case 'r': return parse_routers(cfg, v);
    case OPT_CSV: return open_output(&cfg->csv, &cfg->csv_path, "--csv", v);
    case OPT_JSON: return open_output(&cfg->json, &cfg->json_path, "--json", v);
    case OPT_PLOT: return open_output(&cfg->plot, &cfg->plot_path, "--plot", v);
    default: return parse_number_option(cfg, c, v);
    }
}

/* Options that exclude or need each other. */
static bool cross_check(const tune_cfg *cfg, bool have_cost)
{
    if (have_cost && cfg->work.plugin)
        return usage_error("%s and %s exclude each other: the job is either built in or yours",
                           "--cost", "--job");
    if (cfg->work.job_arg && !cfg->work.plugin)
        return usage_error("%s needs %s", "--job-arg", "--job");
    if (cfg->load > 0 && cfg->rate > 0)
        return usage_error("%s and %s exclude each other: give the open loop's rate once",
                           "--load", "--rate");
    if (cfg->clients && (cfg->load > 0 || cfg->rate > 0))
        return usage_error("%s is for the closed loop; %s", "--clients",
                           "--load and --rate drive an open loop");
    return true;
}

static void set_defaults(tune_cfg *cfg)
{
    *cfg = (tune_cfg){.duration_s = DEFAULT_DURATION_S, .warmup_s = -1, .seed = DEFAULT_SEED,
                      .repeat = DEFAULT_REPEAT};
    tune_cost_parse(&cfg->work.cost, DEFAULT_COST);
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->cpus = online < 1 ? 1u : online > (long)RP_ROUTEES_MAX ? RP_ROUTEES_MAX : (unsigned)online;
}

int tune_args_parse(tune_cfg *cfg, int argc, char *argv[])
{
    bool have_cost = false;
    int c;
    set_defaults(cfg);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:j:l:s:r:d:qhV", longopts, NULL)) != -1) {
        if (c == 'h' || c == 'V') {
            if (c == 'h')
                usage(stdout);
            else
                printf("rp-tune (routepool) %s\nlibroutepool %s\n", RP_VERSION_STRING,
                       rp_version());
            return EXIT_SUCCESS;
        }
        if (c == ':' || c == '?') {
            bad_option(c, argv);
            return TUNE_EXIT_USAGE;
        }
        if (c == 'q')
            cfg->quiet = true;
        else if (!parse_one(cfg, c, optarg, &have_cost))
            return TUNE_EXIT_USAGE;
    }
    if (optind < argc) {
        fprintf(stderr, "rp-tune: unexpected argument '%s'\nTry 'rp-tune --help'.\n", argv[optind]);
        return TUNE_EXIT_USAGE;
    }
    if (!cross_check(cfg, have_cost))
        return TUNE_EXIT_USAGE;
    if (cfg->nsizes == 0)
        default_sizes(cfg);
    if (cfg->nrouters == 0)
        default_routers(cfg);
    return -1;
}

void tune_args_release(tune_cfg *cfg)
{
    FILE **files[] = {&cfg->csv, &cfg->json, &cfg->plot};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (*files[i])
            fclose(*files[i]);
        *files[i] = NULL;
    }
    tune_plugin_unload(&cfg->work.plug);
}
