/* SPDX-License-Identifier: MIT */
/*
 * bench/cluster_redis.c - connection, INFO CPU and result files for the
 * cluster benchmarks (cluster_redis.h).  The address parser accepts what
 * rp-node's --redis accepts: HOST:PORT or a unix socket path; the port is
 * parsed strictly (digits only, 1..65535).  INFO replies and /proc files
 * are parsed by key; a missing key reads as 0.
 */
#include "cluster_redis.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static bool parse_port(const char *s, int *out)
{
    char *end;

    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > 65535)
        return false;
    *out = (int)v;
    return true;
}

redisContext *cr_connect(const char *addr, int timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c;

    if (strchr(addr, '/')) {
        c = redisConnectUnixWithTimeout(addr, tv);
    } else {
        const char *colon = strrchr(addr, ':');
        char host[256];
        int port;
        if (!colon || (size_t)(colon - addr) >= sizeof host || !parse_port(colon + 1, &port)) {
            fprintf(stderr, "bad Redis address '%s' (HOST:PORT or a socket path)\n", addr);
            return NULL;
        }
        memcpy(host, addr, (size_t)(colon - addr));
        host[colon - addr] = '\0';
        c = redisConnectWithTimeout(host, port, tv);
    }
    if (!c || c->err) {
        fprintf(stderr, "cannot connect to Redis at %s: %s\n", addr, c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

static double info_value(const char *text, const char *key)
{
    size_t klen = strlen(key);

    for (const char *line = text; line && *line; line = strchr(line, '\n')) {
        line += *line == '\n';
        if (!strncmp(line, key, klen) && line[klen] == ':')
            return strtod(line + klen + 1, NULL);
    }
    return 0;
}

double cr_redis_cpu_s(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO cpu");
    double sum = -1;

    if (r && r->type == REDIS_REPLY_STRING)
        sum = info_value(r->str, "used_cpu_sys") + info_value(r->str, "used_cpu_user");
    freeReplyObject(r);
    return sum;
}

bool cr_redis_net_bytes(redisContext *c, double *in, double *out)
{
    redisReply *r = redisCommand(c, "INFO stats");
    bool ok = r && r->type == REDIS_REPLY_STRING;

    if (ok) {
        *in = info_value(r->str, "total_net_input_bytes");
        *out = info_value(r->str, "total_net_output_bytes");
    }
    freeReplyObject(r);
    return ok;
}

bool cr_sched_read(int pid, cr_sched *out)
{
    char path[64];
    struct dirent *d;

    snprintf(path, sizeof path, "/proc/%d/task", pid ? pid : (int)getpid());
    DIR *dir = opendir(path);
    if (!dir)
        return false;
    *out = (cr_sched){0};
    while ((d = readdir(dir)) != NULL) {
        char file[96];
        unsigned long long cpu, wait, slices;
        if (d->d_name[0] == '.')
            continue;
        snprintf(file, sizeof file, "%s/%.16s/schedstat", path, d->d_name);
        FILE *f = fopen(file, "r");
        if (!f)
            continue; /* the thread exited meanwhile */
        if (fscanf(f, "%llu %llu %llu", &cpu, &wait, &slices) == 3)
            out->cpu_ns += (double)cpu, out->wait_ns += (double)wait, out->slices += (double)slices;
        fclose(f);
    }
    closedir(dir);
    return true;
}

bool cr_command_ok(redisContext *c, const char *what, int argc, const char **argv)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    bool ok = r && r->type != REDIS_REPLY_ERROR;

    if (!ok)
        fprintf(stderr, "%s failed: %s\n", what, r ? r->str : c->errstr);
    freeReplyObject(r);
    return ok;
}

void cr_kv_write(const char *path, const char *key, double value)
{
    FILE *f = path ? fopen(path, "a") : NULL;

    if (!f)
        return;
    fprintf(f, "%s=%.6g\n", key, value);
    fclose(f);
}

bool cr_kv_read(const char *path, const char *key, double *out)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[256];
    size_t klen = strlen(key);
    bool found = false;

    if (!f)
        return false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) || line[klen] != '=')
            continue;
        char *end;
        double v = strtod(line + klen + 1, &end);
        if (end != line + klen + 1 && (*end == '\n' || *end == '\0')) {
            *out = v;
            found = true;
        }
    }
    fclose(f);
    return found;
}
