/* SPDX-License-Identifier: MIT */
/*
 * bench/sojourn_libs.c - the libraries rp-bench-sojourn's pool variants
 * run on: the linked one, or with --lib-b two builds paired in one file.
 *
 * Why paired: a change to the tail at loads 0.8-0.9 is a few percent,
 * while two files of the same build differ by more than that (the VM's
 * stalls and placement move between files: a null comparison of one build
 * against itself spread 0.996-1.28x in the fourteenth session,
 * perf-history.md).  Inside one file every repetition replays one drawn
 * workload through every scheduler back to back, so the per-repetition
 * ratio B/A of a variant and its twin sees the same arrivals and nearly
 * the same machine.  The B/A table (sojourn_output.c) reports those ratios.
 *
 * How: both builds are dlopen()ed (RTLD_LOCAL), the same way on both sides
 * so neither is favoured (dynamic TLS, the same malloc); A defaults to the
 * library this program is linked with, a file given twice is loaded from
 * a private copy (the null comparison: --lib-b the same build).  The linked
 * library stays in the process's global scope, so a copy must call its own
 * public functions directly, not through the PLT, or they would bind to
 * the linked one: the library links with -Bsymbolic-functions for that,
 * and a build from before (the thirteenth session's and older) is refused
 * with the flag to rebuild it with (bench_lib_imports_own).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcopy.h"
#include "sojourn.h"

rp_api libs[2];
static void *handles[2];
static char *files[2];

/* The functions of rp_api, by name. */
static const struct {
    const char *name;
    size_t off;
} api_syms[] = {
    {"rp_version", offsetof(rp_api, version)},
    {"rp_strerror", offsetof(rp_api, strerror_)},
    {"rp_errmsg", offsetof(rp_api, errmsg)},
    {"rp_pool_options_init", offsetof(rp_api, options_init)},
    {"rp_pool_create", offsetof(rp_api, create)},
    {"rp_pool_submit", offsetof(rp_api, submit)},
    {"rp_pool_wait_idle", offsetof(rp_api, wait_idle)},
    {"rp_pool_destroy", offsetof(rp_api, destroy)},
    {"rp_pool_size", offsetof(rp_api, size)},
    {"rp_pool_routee", offsetof(rp_api, routee)},
    {"rp_routee_stats_get", offsetof(rp_api, stats)},
    {"rp_job_routee", offsetof(rp_api, job_routee)},
    {"rp_strategy_round_robin", offsetof(rp_api, round_robin)},
    {"rp_strategy_random", offsetof(rp_api, random)},
    {"rp_strategy_smallest_mailbox", offsetof(rp_api, smallest)},
};

/* a's functions from dl (RTLD_DEFAULT: the linked library, the first
 * definition in the process; the dlopen()ed copies are RTLD_LOCAL). */
static void fill(rp_api *a, void *dl, const char *file)
{
    for (size_t i = 0; i < sizeof api_syms / sizeof api_syms[0]; i++) {
        void *p = dlsym(dl, api_syms[i].name);
        if (!p) {
            fprintf(stderr, "rp-bench-sojourn: %s has no %s\n", file, api_syms[i].name);
            exit(2);
        }
        memcpy((char *)a + api_syms[i].off, &p, sizeof p);
    }
    a->file = dl == RTLD_DEFAULT ? NULL : file;
}

/* Load file (its private copy when copy) as side k. */
static void load(int k, const char *file, bool copy)
{
    char *path = copy ? bench_lib_copy(file) : strdup(file);
    const char *own;
    void *dl;
    rp_api *a = &libs[k];

    if (!path) {
        fprintf(stderr, "rp-bench-sojourn: cannot copy %s: %s\n", file, strerror(errno));
        exit(2);
    }
    dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (copy)
        unlink(path);
    free(path);
    if (!dl) {
        fprintf(stderr, "rp-bench-sojourn: cannot load library %c: %s\n", 'A' + k, dlerror());
        exit(2);
    }
    if ((own = bench_lib_imports_own(dl))) {
        fprintf(stderr, "rp-bench-sojourn: %s calls its own %s through the PLT, which would "
                "bind to the linked library: rebuild it with -Bsymbolic-functions (cmake "
                "-DCMAKE_SHARED_LINKER_FLAGS=-Wl,-Bsymbolic-functions; builds since the "
                "fifteenth session have it)\n", file, own);
        exit(2);
    }
    handles[k] = dl;
    fill(a, dl, file);
}

/* The file of the library this program is linked with. */
static char *linked_file(void)
{
    Dl_info info;

    if (!dladdr((void *)rp_version, &info) || !info.dli_fname) {
        fprintf(stderr, "rp-bench-sojourn: cannot find the linked library's file; give --lib-a\n");
        exit(2);
    }
    return strdup(info.dli_fname);
}

static char *file_of(const char *opt, const char *path)
{
    char *f = bench_lib_file(path);

    if (!f) {
        fprintf(stderr, "rp-bench-sojourn: %s %s: %s\n", opt, path, strerror(errno));
        exit(2);
    }
    if (access(f, R_OK) != 0) {
        fprintf(stderr, "rp-bench-sojourn: %s %s: %s: %s\n", opt, path, f, strerror(errno));
        exit(2);
    }
    return f;
}

void libs_load(const config *cfg)
{
    char *self;

    fill(&libs[0], RTLD_DEFAULT, "the linked library");
    libs[1] = libs[0];
    if (!cfg->lib_b)
        return;
    self = linked_file();
    files[0] = cfg->lib_a ? file_of("--lib-a", cfg->lib_a) : strdup(self);
    files[1] = file_of("--lib-b", cfg->lib_b);
    /* A file the process holds already (the linked one, or A's for B) is
     * loaded from a private copy. */
    load(0, files[0], bench_lib_same_file(files[0], self));
    load(1, files[1], bench_lib_same_file(files[1], self) ||
                          bench_lib_same_file(files[1], files[0]));
    free(self);
}

void libs_print(const config *cfg)
{
    if (!cfg->lib_b) {
        printf("# library:     routepool %s, linked\n", libs[0].version());
        return;
    }
    for (int k = 0; k < 2; k++)
        printf("# library %c:   %s (routepool %s), dlopen()ed%s\n", 'A' + k, libs[k].file,
               libs[k].version(), k ? "; each pool variant also runs on it, as <variant>-b, "
               "right after or before A in the same repetition" : "");
}

void libs_unload(void)
{
    for (int k = 0; k < 2; k++) {
        if (handles[k])
            dlclose(handles[k]);
        free(files[k]);
        handles[k] = NULL, files[k] = NULL;
    }
}
