/* SPDX-License-Identifier: MIT */
/*
 * error.h - the error detail behind rp_errmsg(), logging, and checked
 * names (error.c).  Private.
 */
#ifndef RP_ERROR_INTERNAL_H
#define RP_ERROR_INTERNAL_H

#include <stddef.h>

#include "routepool/routepool.h"

/* Record the detail of an error for rp_errmsg() and return code. */
int rp__fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Write one log line through fn, or to stderr (warnings and errors) when fn
 * is NULL. */
void rp__log(rp_log_fn fn, void *user, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Copy a name into dst (cap bytes), checking 1..cap-1 bytes. */
int rp__copy_name(char *dst, size_t cap, const char *src, const char *def,
                  const char *func, const char *field);

#endif /* RP_ERROR_INTERNAL_H */
