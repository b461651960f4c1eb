/* SPDX-License-Identifier: MIT */
/*
 * error.c - error strings, the thread-local error detail, logging.
 *
 * The code/description table is generated from RP_ERROR_LIST so the enum,
 * rp_strerror() and rp_err_name() cannot drift apart.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

static _Thread_local char last_error[256];

const char *rp_strerror(int code)
{
    switch (code) {
#define RP__ERR_STR(name, value, desc) case (value): return desc;
        RP_ERROR_LIST(RP__ERR_STR)
#undef RP__ERR_STR
    default:
        return "unknown error";
    }
}

const char *rp_err_name(int code)
{
    switch (code) {
#define RP__ERR_NAME(name, value, desc) case (value): return "RP_" #name;
        RP_ERROR_LIST(RP__ERR_NAME)
#undef RP__ERR_NAME
    default:
        return "RP_E?";
    }
}

const char *rp_errmsg(void)
{
    return last_error;
}

const char *rp_version(void)
{
    return RP_VERSION_STRING;
}

int rp__fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

int rp_error_set(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

void rp__log(rp_log_fn fn, void *user, int level, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warning", "error"};
    char line[512];
    va_list ap;

    if (!fn && level < RP_LOG_WARN)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (fn) {
        fn(level, line, user);
        return;
    }
    fprintf(stderr, "routepool: %s: %s\n",
            names[level >= 0 && level <= RP_LOG_ERROR ? level : RP_LOG_ERROR], line);
}

int rp__copy_name(char *dst, size_t cap, const char *src, const char *def,
                  const char *func, const char *field)
{
    size_t len;

    if (!src)
        src = def;
    len = strlen(src);
    if (len == 0 || len >= cap)
        return rp__fail(RP_EINVAL, "%s: %s must be 1..%zu bytes (got %zu)",
                        func, field, cap - 1, len);
    memcpy(dst, src, len + 1);
    return 0;
}
