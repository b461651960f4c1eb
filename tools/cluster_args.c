/* SPDX-License-Identifier: MIT */
/*
 * tools/cluster_args.c - command-line helpers (cluster_args.h).  Input
 * from files and stdin is bounded before it is stored: a payload larger
 * than the cap is refused after reading cap + 1 bytes, never buffered
 * whole.
 */
#include "cluster_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ca_parse_int(const char *tool, const char *opt, const char *v, long long min,
                  long long max, long long *out)
{
    char *end;

    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n < min || n > max) {
        fprintf(stderr, "%s: %s wants an integer in %lld..%lld (got '%s')\n", tool, opt, min, max,
                v);
        return false;
    }
    *out = n;
    return true;
}

bool ca_read_password(const char *tool, const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");

    if (!f) {
        fprintf(stderr, "%s: --password-file %s: %s\n", tool, path, strerror(errno));
        return false;
    }
    bool ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    size_t n = ok ? strcspn(buf, "\r\n") : 0;
    if (!ok || n == 0 || (buf[n] == '\0' && n == len - 1)) {
        fprintf(stderr, "%s: --password-file %s: the first line must hold the password "
                "(1..%zu bytes)\n", tool, path, len - 2);
        memset(buf, 0, len);
        return false;
    }
    buf[n] = '\0';
    return true;
}

void *ca_read_payload(const char *tool, const char *path, size_t max, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);

    if (!f || !buf) {
        fprintf(stderr, "%s: %s: %s\n", tool, path, f ? "out of memory" : strerror(errno));
        goto fail;
    }
    for (;;) {
        if (n == cap) {
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            if (ncap == cap)
                break;   /* max + 1 bytes read: over the cap, refused below */
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                fprintf(stderr, "%s: %s: out of memory\n", tool, path);
                goto fail;
            }
            buf = nb, cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f) || n > max) {
        fprintf(stderr, "%s: payload %s: %s\n", tool, path,
                ferror(f) ? strerror(errno) : "larger than the payload cap");
        goto fail;
    }
    if (f != stdin)
        fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
fail:
    if (f && f != stdin)
        fclose(f);
    free(buf);
    return NULL;
}
