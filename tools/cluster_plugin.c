/* SPDX-License-Identifier: MIT */
/*
 * tools/cluster_plugin.c - loading a handler plugin (cluster_plugin.h).
 *
 * The registry's handle() forwards to rp_cluster_handle() and records the
 * name; it refuses calls made outside rp_plugin_register() (the registry
 * is documented as valid only then), so a plugin that keeps the pointer
 * and registers from a handler gets RP_EINVAL instead of racing the node.
 */
#include "cluster_plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int reg_handle(rp_plugin_registry *reg, const char *name,
                      void (*fn)(rp_cluster_job *job, void *user), void *user)
{
    cluster_plugin *p = reg ? reg->host : NULL;

    if (!p || !p->open || p->n >= CLUSTER_PLUGIN_MAX_HANDLERS)
        return RP_EINVAL;
    int rc = rp_cluster_handle(reg->node, name, fn, user);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->names[i], name))
            return 0;               /* replaced: listed once */
    snprintf(p->names[p->n++], sizeof p->names[0], "%s", name);
    return 0;
}

/* dlsym() returns an object pointer; POSIX guarantees it converts to a
 * function pointer, ISO C does not: copy the bits (as tools/tune_work.c). */
static void *find_fn(void *dl, const char *name, void *fnp, size_t fnsize)
{
    void *sym = dlsym(dl, name);

    if (sym)
        memcpy(fnp, &sym, fnsize);
    return sym;
}

static int open_dl(cluster_plugin *p, const char *path, rp_plugin_register_fn *reg_fn)
{
    if (!(p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        snprintf(p->err, sizeof p->err, "--plugin %s: %s%s", path, dlerror(),
                 strchr(path, '/') ? "" : " (write ./ for a file in the current directory)");
        return -1;
    }
    if (!find_fn(p->dl, RP_PLUGIN_REGISTER_SYMBOL, reg_fn, sizeof *reg_fn)) {
        snprintf(p->err, sizeof p->err, "--plugin %s: no symbol %s (routepool/plugin.h)", path,
                 RP_PLUGIN_REGISTER_SYMBOL);
        dlclose(p->dl);
        p->dl = NULL;
        return -1;
    }
    find_fn(p->dl, RP_PLUGIN_UNLOAD_SYMBOL, &p->unload, sizeof p->unload);
    return 0;
}

int cluster_plugin_load(cluster_plugin *p, const char *path, const char *arg,
                        rp_cluster_node *node)
{
    rp_plugin_register_fn reg_fn = cluster_demo_jobs_register;

    memset(p, 0, sizeof *p);
    if (strcmp(path, "@demo") && open_dl(p, path, &reg_fn) < 0)
        return -1;
    p->reg = (rp_plugin_registry){.size = sizeof p->reg, .abi_version = RP_PLUGIN_ABI_VERSION,
                                  .arg = arg, .node = node, .handle = reg_handle, .host = p};
    p->open = 1;
    int rc = reg_fn(&p->reg);
    p->open = 0;
    if (rc < 0 || p->n == 0) {
        if (rc < 0)
            snprintf(p->err, sizeof p->err, "--plugin %s: %s returned %s (%s)", path,
                     RP_PLUGIN_REGISTER_SYMBOL, rp_err_name(rc), rp_errmsg());
        else
            snprintf(p->err, sizeof p->err, "--plugin %s: registered no handler", path);
        p->unload = NULL;          /* the ABI: no unload after a failed register */
        return -1;
    }
    return 0;
}

void cluster_plugin_unload(cluster_plugin *p)
{
    if (p->unload)
        p->unload(p->reg.arg);
    if (p->dl)
        dlclose(p->dl);
    p->dl = NULL;
    p->unload = NULL;
}
