/* SPDX-License-Identifier: MIT */
/*
 * util.c - clocks, bounded number parsing and name checks for the cluster
 * library.  The parsers take a length, never rely on a NUL: values come
 * from Redis replies, which are binary.
 */
#include <errno.h>
#include <time.h>

#include "util.h"

int64_t rp__mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rp__mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

bool rp__parse_i64(const char *s, size_t len, int64_t lo, int64_t hi, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (!s || len == 0 || len > 20)
        return false;
    if (s[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i == len || len - i > 19)
        return false;
    uint64_t v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0'); /* 19 digits cannot overflow */
    }
    if (v > (uint64_t)INT64_MAX)
        return false;
    int64_t r = neg ? -(int64_t)v : (int64_t)v;
    if (r < lo || r > hi)
        return false;
    *out = r;
    return true;
}

bool rp__valid_id(const char *s, size_t len, size_t max, bool colon)
{
    if (!s || len == 0 || len > max)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' ||
                  (colon && c == ':');
        if (!ok)
            return false;
    }
    return true;
}

bool rp__valid_name(const char *s, size_t len, size_t max)
{
    if (!s || len == 0 || len > max)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

void rp__sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
