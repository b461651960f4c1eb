/* SPDX-License-Identifier: MIT */
/*
 * tools/tune_args.c - rp-tune's command line.
 *
 * Every value is checked here, before anything runs: numbers must be whole
 * and finite and in range (no NaN, no negatives), distributions and routers
 * must be known, lists have no empty item, the .so and its symbol must
 * load.  A bad value exits with status 2 and a message that names the
 * option (cli.c).  The output files are opened here too, so a path that
 * cannot be written fails (status 1, as a failed write would) before
 * anything is measured; `-` is standard output, and then the report goes
 * to standard error.  Cross-checks (--load with --rate, --job-arg without
 * --job, two outputs on stdout) come after the loop, when every option is
 * known.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "tune.h"

#define DEFAULT_COST "bimodal:1,100,0.1"
#define DEFAULT_DURATION_S 2.0
#define DEFAULT_SEED 1u
#define DURATION_MAX_S 3600.0
#define RATE_MAX 1e8
#define CLIENTS_MAX 100000u
#define DEFAULT_REPEAT 1u
#define MAX_LOAD_MAX 1e6

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
        "                         smallest-mailbox+steal), 0 < F <= 2; a percent\n"
        "                         works too (80%% = 0.8)\n"
        "      --rate R           open loop at R jobs/s, 0 < R <= 1e8\n"
        "\n"
        "Sweep:\n"
        "  -n, --routees LIST     pool sizes: 1..8, 1,2,4,8 or a mix, each 1..%u\n"
        "                         (default 1..2 x online CPUs, thinned out above 8);\n"
        "                         -s, --sizes is the old spelling\n"
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
        "                         the median of each number and its spread (1..%u,\n"
        "                         default %u); 3 or 5 on a noisy or shared machine\n"
        "      --max-load L       recommend nothing when the 1-minute load average at\n"
        "                         start is above L (default: the online CPUs)\n"
        "\n"
        "Output (FILE - is standard output; the table then goes to standard error):\n"
        "      --csv FILE         one row per size and router\n"
        "      --json FILE        the run's settings, every cell and the recommendation\n"
        "      --plot FILE.svg    throughput and p99 against pool size, one line per\n"
        "                         router (SVG: the name must end in .svg)\n"
        "  -q, --quiet            print only the recommendation (no header, table or\n"
        "                         progress bar; without it the progress bar shows\n"
        "                         only on a terminal)\n"
        "  -h, --help             print this help and exit\n"
        "  -V, --version          print the version and the library's and exit\n"
        "\n"
        "Nothing is recommended from measurements that do not hold: a cell with\n"
        "fewer than %u sojourns (too few for a p99; p50 needs %u, p99.9 %u, and a\n"
        "percentile without them shows as -), a pool that got under %.0f%% of the\n"
        "CPU its built-in jobs asked for (starved), or any cell when the load\n"
        "average at start is above --max-load.  Ctrl-C or SIGTERM stops the sweep\n"
        "and prints (and writes) the cells measured so far; the recommendation then\n"
        "says it came from a partial sweep.\n"
        "\n"
        "Exit status:\n"
        "  0    the sweep ran (also when nothing could be recommended: the output\n"
        "       says why)\n"
        "  1    a routepool call or the plugin's init failed, or an output file could\n"
        "       not be opened or written\n"
        "  2    bad command line (the message names the option)\n"
        "  130  interrupted by Ctrl-C (SIGINT), 143 by SIGTERM; the partial results\n"
        "       were printed\n",
        TUNE_PARETO_CAP, CLIENTS_MAX, RP_ROUTEES_MAX, DURATION_MAX_S, DEFAULT_DURATION_S,
        DEFAULT_SEED, TUNE_REPEAT_MAX, DEFAULT_REPEAT, tune_min_samples(0.99),
        tune_min_samples(0.5), tune_min_samples(0.999), 100 * TUNE_STARVED);
}

/* ---- --routees (--sizes) ---- */

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

/* What a list item's parser needs: the config and the option's spelling. */
typedef struct list_ctx {
    tune_cfg *cfg;
    const char *opt;
} list_ctx;

static bool add_size_range(list_ctx *lc, uint64_t lo, uint64_t hi, const char *list)
{
    tune_cfg *cfg = lc->cfg;
    for (uint64_t s = lo; s <= hi; s++) {
        if (cfg->nsizes == TUNE_SIZES_MAX)
            return cli_usage_error("%s: more than %u sizes in '%s'", lc->opt, TUNE_SIZES_MAX,
                                   list);
        cfg->sizes[cfg->nsizes++] = (unsigned)s;
    }
    return true;
}

/* One item of the list: N or A..B. */
static bool parse_size_item(void *user, char *item, const char *list)
{
    list_ctx *lc = user;
    char *dots = strstr(item, "..");
    uint64_t lo, hi;
    if (dots)
        *dots = '\0';
    if (!cli_parse_u64(lc->opt, item, 1, RP_ROUTEES_MAX, &lo))
        return false;
    hi = lo;
    if (dots && !cli_parse_u64(lc->opt, dots + 2, 1, RP_ROUTEES_MAX, &hi))
        return false;
    if (hi < lo)
        return cli_usage_error("%s: a range must go upwards, got '%s'", lc->opt, list);
    return add_size_range(lc, lo, hi, list);
}

static bool parse_sizes(tune_cfg *cfg, const char *opt, const char *list)
{
    list_ctx lc = {.cfg = cfg, .opt = opt};
    cfg->nsizes = 0;
    if (!cli_parse_list(opt, list, parse_size_item, &lc))
        return false;
    sort_sizes(cfg);
    return true;
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

static bool parse_router_item(void *user, char *item, const char *list)
{
    tune_cfg *cfg = ((list_ctx *)user)->cfg;
    tune_router r;
    (void)list;
    if (!tune_router_parse(&r, item))
        return cli_usage_error("%s: unknown router '%s' (round-robin, random, "
                               "smallest-mailbox, each with or without +steal)", "--routers", item);
    for (size_t i = 0; i < cfg->nrouters; i++)
        if (strcmp(cfg->routers[i].name, r.name) == 0)
            return cli_usage_error("%s: '%s' is listed twice", "--routers", r.name);
    cfg->routers[cfg->nrouters++] = r; /* 6 distinct routers fit */
    return true;
}

static bool parse_routers(tune_cfg *cfg, const char *list)
{
    list_ctx lc = {.cfg = cfg, .opt = "--routers"};
    cfg->nrouters = 0;
    return cli_parse_list("--routers", list, parse_router_item, &lc);
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
    OPT_REPEAT, OPT_MAX_LOAD, OPT_CSV, OPT_JSON, OPT_PLOT
};

/* --sizes is the old spelling of --routees (rp-demo's name for it). */
static const struct option longopts[] = {
    {"cost", required_argument, NULL, 'c'},     {"job", required_argument, NULL, 'j'},
    {"job-arg", required_argument, NULL, OPT_JOB_ARG},
    {"clients", required_argument, NULL, OPT_CLIENTS},
    {"load", required_argument, NULL, 'l'},     {"rate", required_argument, NULL, OPT_RATE},
    {"routees", required_argument, NULL, 'n'},  {"sizes", required_argument, NULL, 's'},
    {"routers", required_argument, NULL, 'r'},
    {"duration", required_argument, NULL, 'd'}, {"warmup", required_argument, NULL, OPT_WARMUP},
    {"seed", required_argument, NULL, OPT_SEED}, {"p99", required_argument, NULL, OPT_P99},
    {"repeat", required_argument, NULL, OPT_REPEAT},
    {"max-load", required_argument, NULL, OPT_MAX_LOAD},
    {"csv", required_argument, NULL, OPT_CSV},  {"json", required_argument, NULL, OPT_JSON},
    {"plot", required_argument, NULL, OPT_PLOT}, {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},           {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

/* True when name ends in ".svg" (any case). */
static bool svg_name(const char *name)
{
    const size_t n = strlen(name);
    return n > 4 && strcasecmp(name + n - 4, ".svg") == 0;
}

/* An output option: checked now, opened when the whole command line is
 * known to be good (a bad option later must not truncate a file). */
static bool parse_output(tune_cfg *cfg, int c, const char *v)
{
    cli_output *o = c == OPT_CSV ? &cfg->csv : c == OPT_JSON ? &cfg->json : &cfg->plot;
    const char *opt = c == OPT_CSV ? "--csv" : c == OPT_JSON ? "--json" : "--plot";
    if (c == OPT_PLOT && strcmp(v, "-") != 0 && !svg_name(v))
        return cli_usage_error("--plot: the plot is SVG: name the file FILE.svg (or - for "
                               "standard output), got '%s'", v);
    *o = (cli_output){.opt = opt, .path = v, .is_stdout = strcmp(v, "-") == 0};
    return true;
}

/* Open the output files.  One that cannot be opened is a runtime failure
 * (1), as writing it later would be. */
static int open_outputs(tune_cfg *cfg)
{
    cli_output *files[] = {&cfg->csv, &cfg->json, &cfg->plot};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (files[i]->path && !cli_output_open(files[i], files[i]->opt, files[i]->path))
            return TUNE_EXIT_RUNTIME;
    return -1;
}

/* Options with a number: where it goes and its range. */
static bool parse_number_option(tune_cfg *cfg, int c, const char *v)
{
    uint64_t u;
    switch (c) {
    case 'l': return cli_parse_fraction("--load", v, 0, true, 2, &cfg->load);
    case OPT_RATE: return cli_parse_double("--rate", v, 0, true, RATE_MAX, &cfg->rate);
    case 'd': return cli_parse_double("--duration", v, 0, true, DURATION_MAX_S, &cfg->duration_s);
    case OPT_WARMUP:
        return cli_parse_double("--warmup", v, 0, false, DURATION_MAX_S, &cfg->warmup_s);
    case OPT_P99: return cli_parse_double("--p99", v, 0, true, 1e6, &cfg->p99_ms);
    case OPT_MAX_LOAD:
        return cli_parse_double("--max-load", v, 0, false, MAX_LOAD_MAX, &cfg->max_load);
    case OPT_SEED: return cli_parse_u64("--seed", v, 0, UINT64_MAX, &cfg->seed);
    case OPT_REPEAT:
        if (!cli_parse_u64("--repeat", v, 1, TUNE_REPEAT_MAX, &u))
            return false;
        cfg->repeat = (unsigned)u;
        return true;
    default:
        if (!cli_parse_u64("--clients", v, 1, CLIENTS_MAX, &u))
            return false;
        cfg->clients = (unsigned)u;
        return true;
    }
}

/* One option with a value, spelled opt; 0, or the exit code after a message. */
static int parse_one(tune_cfg *cfg, int c, const char *opt, const char *v, bool *have_cost)
{
    bool ok;
    switch (c) {
    case 'c': *have_cost = true; ok = tune_cost_parse(&cfg->work.cost, v); break;
    case 'j':
        tune_plugin_unload(&cfg->work.plug);
        cfg->work.plugin = true;
        cfg->work.job_spec = v;
        ok = tune_plugin_load(&cfg->work.plug, v);
        break;
    case OPT_JOB_ARG: cfg->work.job_arg = v; ok = true; break;
    case 'n': case 's': ok = parse_sizes(cfg, opt, v); break;
    case 'r': ok = parse_routers(cfg, v); break;
    case OPT_CSV: case OPT_JSON: case OPT_PLOT: ok = parse_output(cfg, c, v); break;
    default: ok = parse_number_option(cfg, c, v); break;
    }
    return ok ? 0 : TUNE_EXIT_USAGE;
}

/* Options that exclude or need each other. */
static bool cross_check(const tune_cfg *cfg, bool have_cost)
{
    const int to_stdout = cfg->csv.is_stdout + cfg->json.is_stdout + cfg->plot.is_stdout;
    if (have_cost && cfg->work.plugin)
        return cli_usage_error("%s and %s exclude each other: the job is either built in or "
                               "yours", "--cost", "--job");
    if (cfg->work.job_arg && !cfg->work.plugin)
        return cli_usage_error("%s needs %s", "--job-arg", "--job");
    if (cfg->load > 0 && cfg->rate > 0)
        return cli_usage_error("%s and %s exclude each other: give the open loop's rate once",
                               "--load", "--rate");
    if (cfg->clients && (cfg->load > 0 || cfg->rate > 0))
        return cli_usage_error("%s is for the closed loop; %s", "--clients",
                               "--load and --rate drive an open loop");
    if (to_stdout > 1)
        return cli_usage_error("%s: only one of --csv, --json and --plot can be - (standard "
                               "output)", cfg->csv.is_stdout ? "--csv" : "--json");
    return true;
}

static void set_defaults(tune_cfg *cfg)
{
    *cfg = (tune_cfg){.duration_s = DEFAULT_DURATION_S, .warmup_s = -1, .seed = DEFAULT_SEED,
                      .repeat = DEFAULT_REPEAT, .max_load = -1, .out = stdout};
    tune_cost_parse(&cfg->work.cost, DEFAULT_COST);
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->cpus = online < 1 ? 1u : online > (long)RP_ROUTEES_MAX ? RP_ROUTEES_MAX : (unsigned)online;
}

/* The option getopt_long just returned, as the user spelled it. */
static const char *spelling(char *buf, size_t len, int c, int longindex)
{
    if (longindex >= 0)
        snprintf(buf, len, "--%s", longopts[longindex].name);
    else
        snprintf(buf, len, "-%c", c);
    return buf;
}

/* After the loop: leftovers, cross-checks and defaults.  -1 to go on. */
static int finish_parse(tune_cfg *cfg, int argc, char *argv[], bool have_cost)
{
    if (optind < argc) {
        cli_usage_error("unexpected argument '%s'", argv[optind]);
        return TUNE_EXIT_USAGE;
    }
    if (!cross_check(cfg, have_cost))
        return TUNE_EXIT_USAGE;
    if (cfg->nsizes == 0)
        default_sizes(cfg);
    if (cfg->nrouters == 0)
        default_routers(cfg);
    if (cfg->max_load < 0)
        cfg->max_load = cfg->cpus;
    /* The files get standard output: the report goes to stderr. */
    if (cfg->csv.is_stdout || cfg->json.is_stdout || cfg->plot.is_stdout)
        cfg->out = stderr;
    return open_outputs(cfg);
}

int tune_args_parse(tune_cfg *cfg, int argc, char *argv[])
{
    bool have_cost = false;
    int c, longindex = -1;
    char opt[40];
    set_defaults(cfg);
    cli_init("rp-tune");
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:j:l:n:s:r:d:qhV", longopts, &longindex)) != -1) {
        if (c == 'h' || c == 'V') {
            if (c == 'h')
                usage(stdout);
            else
                cli_print_version();
            return EXIT_SUCCESS;
        }
        if (c == ':' || c == '?') {
            cli_bad_option(c, argv, longopts);
            return TUNE_EXIT_USAGE;
        }
        const int rc = c == 'q' ? 0 : parse_one(cfg, c, spelling(opt, sizeof opt, c, longindex),
                                                optarg, &have_cost);
        if (rc != 0)
            return rc;
        cfg->quiet = cfg->quiet || c == 'q';
        longindex = -1;
    }
    return finish_parse(cfg, argc, argv, have_cost);
}

void tune_args_release(tune_cfg *cfg)
{
    cli_output *files[] = {&cfg->csv, &cfg->json, &cfg->plot};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (files[i]->f && !files[i]->is_stdout)
            fclose(files[i]->f);
    tune_plugin_unload(&cfg->work.plug);
}
