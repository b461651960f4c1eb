/* SPDX-License-Identifier: MIT */
/*
 * resp.c - Redis commands written in RESP into one buffer (resp.h).
 *
 * The buffer doubles as it fills (starting at 4 KiB), so a pipeline of n
 * commands costs O(log n) allocations; a failed allocation marks it and
 * every later write is a no-op.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "resp.h"

void rp__resp_init(rp__resp *b)
{
    memset(b, 0, sizeof *b);
}

void rp__resp_free(rp__resp *b)
{
    free(b->buf);
    rp__resp_init(b);
}

static bool reserve(rp__resp *b, size_t more)
{
    if (b->oom)
        return false;
    if (b->len + more <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *p = realloc(b->buf, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->buf = p;
    b->cap = cap;
    return true;
}

size_t rp__u64_digits(char *out, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* "<mark><n>\r\n" */
static void header(rp__resp *b, char mark, size_t n)
{
    if (!reserve(b, 24))
        return;
    b->buf[b->len++] = mark;
    b->len += rp__u64_digits(b->buf + b->len, n);
    b->buf[b->len++] = '\r';
    b->buf[b->len++] = '\n';
}

void rp__resp_cmd(rp__resp *b, size_t argc)
{
    header(b, '*', argc);
}

void rp__resp_arg(rp__resp *b, const void *p, size_t len)
{
    header(b, '$', len);
    if (!reserve(b, len + 2))
        return;
    if (len)
        memcpy(b->buf + b->len, p, len);
    b->len += len;
    b->buf[b->len++] = '\r';
    b->buf[b->len++] = '\n';
}

void rp__resp_str(rp__resp *b, const char *s)
{
    rp__resp_arg(b, s, strlen(s));
}

int rp__resp_send(rp__conn *k, const rp__resp *b)
{
    if (b->oom)
        return RP_ENOMEM;
    if (rp__conn_ensure(k) < 0)
        return RP_EUNAVAILABLE;
    if (b->len && redisAppendFormattedCommand(k->c, b->buf, b->len) != REDIS_OK)
        return RP_ENOMEM;
    return 0;
}
