/* SPDX-License-Identifier: MIT */
/*
 * tools/profile_json.c - a small strict JSON parser (RFC 8259).
 *
 * Recursive descent over a byte buffer that is not NUL-terminated: every
 * read checks ps->end.  Values are carved from an arena of chunks, so
 * freeing a parsed event is one pj_reset().  Strings are scanned twice:
 * once to find the closing quote (their raw length bounds the decoded
 * length, since no escape decodes to more bytes than it takes), then
 * decoded and validated into a buffer of that size.
 */
#include "profile_json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE ((size_t)64 * 1024)
#define NUMBER_MAX 64 /* longest number literal copied to the stack */

struct pj_chunk {
    pj_chunk *next;
    size_t cap, used;
    max_align_t data[];
};

/* A list built while parsing an array or object, turned into an array at
 * the closing bracket. */
typedef struct node {
    struct node *next;
    pj_member m; /* arrays use m.value only */
} node;

static int parse_value(pj_parser *ps, pj_value **out);

/* ---- arena ---- */

static void *arena_alloc(pj_parser *ps, size_t size)
{
    const size_t align = sizeof(max_align_t);
    pj_chunk *c = ps->chunks;

    size = (size + align - 1) / align * align;
    if (!c || c->cap - c->used < size) {
        const size_t cap = size > CHUNK_SIZE ? size : CHUNK_SIZE;
        if (!(c = malloc(sizeof *c + cap))) {
            pj_fail(ps, "out of memory");
            return NULL;
        }
        c->cap = cap;
        c->used = 0;
        c->next = ps->chunks;
        ps->chunks = c;
    }
    void *p = (unsigned char *)c->data + c->used;
    c->used += size;
    return p;
}

void pj_init(pj_parser *ps, const char *text, size_t len)
{
    ps->text = ps->p = text;
    ps->end = text + len;
    ps->depth = 0;
    ps->chunks = NULL;
    ps->err[0] = '\0';
}

void pj_free(pj_parser *ps)
{
    while (ps->chunks) {
        pj_chunk *next = ps->chunks->next;
        free(ps->chunks);
        ps->chunks = next;
    }
}

void pj_reset(pj_parser *ps)
{
    pj_chunk *keep = ps->chunks;

    if (!keep)
        return;
    /* Keep the newest chunk for the next value; free the rest. */
    ps->chunks = keep->next;
    pj_free(ps);
    keep->next = NULL;
    keep->used = 0;
    ps->chunks = keep;
}

/* ---- positions and errors ---- */

int pj_fail(pj_parser *ps, const char *fmt, ...)
{
    unsigned line = 1, col = 1;
    char msg[160];
    va_list ap;

    if (ps->err[0])
        return -1; /* keep the first error */
    for (const char *q = ps->text; q < ps->p && q < ps->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)*q & 0xC0) != 0x80) {
            col++; /* columns count characters, not UTF-8 continuation bytes */
        }
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(ps->err, sizeof ps->err, "line %u, column %u: %s", line, col, msg);
    return -1;
}

static void skip_ws(pj_parser *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

int pj_peek(pj_parser *ps)
{
    skip_ws(ps);
    return ps->p < ps->end ? (unsigned char)*ps->p : -1;
}

static int fail_unexpected(pj_parser *ps, const char *wanted)
{
    if (ps->p >= ps->end)
        return pj_fail(ps, "unexpected end of input, expected %s", wanted);
    const unsigned char c = (unsigned char)*ps->p;
    if (c >= 0x20 && c < 0x7F)
        return pj_fail(ps, "unexpected '%c', expected %s", c, wanted);
    return pj_fail(ps, "unexpected byte 0x%02X, expected %s", c, wanted);
}

int pj_expect(pj_parser *ps, char c)
{
    const char wanted[4] = {'\'', c, '\'', '\0'};

    if (pj_peek(ps) != (unsigned char)c)
        return fail_unexpected(ps, wanted);
    ps->p++;
    return 0;
}

int pj_expect_end(pj_parser *ps)
{
    if (pj_peek(ps) != -1)
        return fail_unexpected(ps, "the end of input");
    return 0;
}

int pj_next_element(pj_parser *ps, char close, bool *first)
{
    const int c = pj_peek(ps);
    const char wanted[] = {'\'', ',', '\'', ' ', 'o', 'r', ' ', '\'', close, '\'', '\0'};

    if (c == (unsigned char)close) {
        ps->p++;
        return 0;
    }
    if (*first) {
        *first = false;
        return c == -1 ? fail_unexpected(ps, "a value") : 1;
    }
    if (c != ',')
        return fail_unexpected(ps, wanted);
    ps->p++;
    if (pj_peek(ps) == (unsigned char)close)
        return pj_fail(ps, "trailing comma before '%c'", close);
    return 1;
}

/* ---- strings ---- */

static int hex4(pj_parser *ps, const char *q, unsigned *out)
{
    unsigned v = 0;

    if (ps->end - q < 4)
        return pj_fail(ps, "truncated \\u escape");
    for (int i = 0; i < 4; i++) {
        const char c = q[i];
        const unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                           : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                           : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                                  : 16u;
        if (d == 16u)
            return pj_fail(ps, "bad hex digit in \\u escape");
        v = v * 16u + d;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A \uXXXX escape at ps->p (after the backslash and 'u'), with its low
 * surrogate when it is a high one.  Advances ps->p; appends to *o. */
static int unicode_escape(pj_parser *ps, char **o)
{
    unsigned cp = 0, lo = 0;

    if (hex4(ps, ps->p, &cp) < 0)
        return -1;
    ps->p += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return pj_fail(ps, "lone low surrogate \\u%04X", cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
            return pj_fail(ps, "high surrogate \\u%04X without its low half", cp);
        if (hex4(ps, ps->p + 2, &lo) < 0)
            return -1;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return pj_fail(ps, "high surrogate \\u%04X followed by \\u%04X", cp, lo);
        ps->p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    *o += put_utf8(*o, cp);
    return 0;
}

static int escape(pj_parser *ps, char **o)
{
    static const char from[] = "\"\\/bfnrt";
    static const char to[] = "\"\\/\b\f\n\r\t";
    const char c = *ps->p++; /* the caller checked one byte follows */
    const char *hit = c ? strchr(from, c) : NULL;

    if (c == 'u')
        return unicode_escape(ps, o);
    if (!hit)
        return pj_fail(ps, "bad escape '\\%c'", c >= 0x20 && c < 0x7F ? c : '?');
    *(*o)++ = to[hit - from];
    return 0;
}

size_t pj_utf8_len(const unsigned char *q, const unsigned char *end)
{
    const unsigned char b = q[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;

    if (b >= 0xC2 && b <= 0xDF)
        n = 2;
    else if (b >= 0xE0 && b <= 0xEF)
        n = 3;
    else if (b >= 0xF0 && b <= 0xF4)
        n = 4;
    else
        return 0;
    if (b == 0xE0)
        lo = 0xA0; /* overlong */
    else if (b == 0xED)
        hi = 0x9F; /* surrogates */
    else if (b == 0xF0)
        lo = 0x90; /* overlong */
    else if (b == 0xF4)
        hi = 0x8F; /* above U+10FFFF */
    if ((size_t)(end - q) < n || q[1] < lo || q[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((q[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* Decode the string body at ps->p up to its closing quote into o. */
static int decode_string(pj_parser *ps, char *o, size_t *len)
{
    char *const start = o;

    while (*ps->p != '"') {
        const unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20)
            return pj_fail(ps, "raw control character 0x%02X in a string", c);
        if (c == '\\') {
            ps->p++;
            if (escape(ps, &o) < 0)
                return -1;
            continue;
        }
        const size_t n = c < 0x80 ? 1 : pj_utf8_len((const unsigned char *)ps->p,
                                                    (const unsigned char *)ps->end);
        if (n == 0)
            return pj_fail(ps, "invalid UTF-8 in a string");
        memcpy(o, ps->p, n);
        o += n;
        ps->p += n;
    }
    ps->p++; /* the closing quote */
    *o = '\0';
    *len = (size_t)(o - start);
    return 0;
}

int pj_parse_string(pj_parser *ps, const char **out, size_t *len)
{
    const char *q;
    char *buf;

    if (pj_expect(ps, '"') < 0)
        return -1;
    /* Find the closing quote: it bounds the decoded length. */
    for (q = ps->p; q < ps->end && *q != '"'; q++)
        if (*q == '\\' && ++q == ps->end)
            break;
    if (q >= ps->end)
        return pj_fail(ps, "unterminated string");
    if (!(buf = arena_alloc(ps, (size_t)(q - ps->p) + 1)))
        return -1;
    if (decode_string(ps, buf, len) < 0)
        return -1;
    *out = buf;
    return 0;
}

/* ---- numbers and literals ---- */

static const char *digits(const char *q, const char *end)
{
    while (q < end && *q >= '0' && *q <= '9')
        q++;
    return q;
}

/* End of the number literal at ps->p per the RFC 8259 grammar, or NULL. */
static const char *scan_number(pj_parser *ps)
{
    const char *q = ps->p, *e = ps->end, *d;

    if (q < e && *q == '-')
        q++;
    if (q < e && *q == '0')
        q++;
    else if ((d = digits(q, e)) > q)
        q = d;
    else
        return NULL;
    if (q < e && *q == '.') {
        if ((d = digits(q + 1, e)) == q + 1)
            return NULL;
        q = d;
    }
    if (q < e && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < e && (*q == '+' || *q == '-'))
            q++;
        if ((d = digits(q, e)) == q)
            return NULL;
        q = d;
    }
    return q;
}

static int parse_number(pj_parser *ps, double *out)
{
    const char *end = scan_number(ps);
    char small[NUMBER_MAX], *buf = small;

    if (!end)
        return pj_fail(ps, "malformed number");
    if (end < ps->end && ((*end >= '0' && *end <= '9') || *end == '.'))
        return pj_fail(ps, "malformed number (leading zero?)");
    const size_t n = (size_t)(end - ps->p);
    if (n >= sizeof small && !(buf = arena_alloc(ps, n + 1)))
        return -1;
    memcpy(buf, ps->p, n);
    buf[n] = '\0';
    errno = 0;
    *out = strtod(buf, NULL);
    if (!isfinite(*out) || (errno == ERANGE && fabs(*out) > 1.0))
        return pj_fail(ps, "number %s does not fit a double", n < 40 ? buf : "");
    ps->p = end;
    return 0;
}

static int parse_literal(pj_parser *ps, pj_value *v)
{
    static const struct {
        const char *word;
        pj_type type;
    } lits[] = {{"true", PJ_TRUE}, {"false", PJ_FALSE}, {"null", PJ_NULL}};

    for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++) {
        const size_t n = strlen(lits[i].word);
        if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, lits[i].word, n) == 0) {
            ps->p += n;
            v->type = lits[i].type;
            return 0;
        }
    }
    return fail_unexpected(ps, "a value");
}

/* ---- arrays and objects ---- */

/* Turn a list of n nodes into v's items or members. */
static int collect(pj_parser *ps, pj_value *v, node *head, size_t n, bool object)
{
    v->len = n;
    if (object) {
        pj_member *m = arena_alloc(ps, (n ? n : 1) * sizeof *m);
        if (!m)
            return -1;
        for (size_t i = 0; i < n; i++, head = head->next)
            m[i] = head->m;
        v->u.members = m;
    } else {
        pj_value **items = arena_alloc(ps, (n ? n : 1) * sizeof *items);
        if (!items)
            return -1;
        for (size_t i = 0; i < n; i++, head = head->next)
            items[i] = head->m.value;
        v->u.items = items;
    }
    return 0;
}

static int parse_member(pj_parser *ps, node *nd, bool object)
{
    if (object) {
        if (pj_peek(ps) != '"')
            return fail_unexpected(ps, "a string (object key)");
        if (pj_parse_string(ps, &nd->m.key, &nd->m.key_len) < 0 || pj_expect(ps, ':') < 0)
            return -1;
    }
    return parse_value(ps, &nd->m.value);
}

static int parse_container(pj_parser *ps, pj_value *v, bool object)
{
    const char close = object ? '}' : ']';
    node *head = NULL, **tail = &head;
    size_t n = 0;
    bool first = true;
    int more;

    if (++ps->depth > PJ_DEPTH_MAX)
        return pj_fail(ps, "nested deeper than %d", PJ_DEPTH_MAX);
    ps->p++; /* the opening bracket */
    v->type = object ? PJ_OBJECT : PJ_ARRAY;
    while ((more = pj_next_element(ps, close, &first)) == 1) {
        node *nd = arena_alloc(ps, sizeof *nd);
        if (!nd || parse_member(ps, nd, object) < 0)
            return -1;
        nd->next = NULL;
        *tail = nd;
        tail = &nd->next;
        n++;
    }
    if (more < 0)
        return -1;
    ps->depth--;
    return collect(ps, v, head, n, object);
}

static int parse_value(pj_parser *ps, pj_value **out)
{
    pj_value *v = arena_alloc(ps, sizeof *v);
    const int c = pj_peek(ps);

    if (!v)
        return -1;
    memset(v, 0, sizeof *v);
    *out = v;
    if (c == '{' || c == '[')
        return parse_container(ps, v, c == '{');
    if (c == '"') {
        v->type = PJ_STRING;
        return pj_parse_string(ps, &v->u.str, &v->len);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = PJ_NUMBER;
        return parse_number(ps, &v->u.num);
    }
    return parse_literal(ps, v);
}

int pj_parse_value(pj_parser *ps, pj_value **out)
{
    return parse_value(ps, out);
}

int pj_parse_document(pj_parser *ps, pj_value **out)
{
    if (pj_peek(ps) == -1)
        return pj_fail(ps, "empty document");
    if (parse_value(ps, out) < 0)
        return -1;
    return pj_expect_end(ps);
}

/* ---- lookups ---- */

const pj_value *pj_get(const pj_value *obj, const char *key)
{
    const size_t n = strlen(key);

    if (!obj || obj->type != PJ_OBJECT)
        return NULL;
    for (size_t i = 0; i < obj->len; i++) {
        const pj_member *m = &obj->u.members[i];
        if (m->key_len == n && memcmp(m->key, key, n) == 0)
            return m->value;
    }
    return NULL;
}

bool pj_is_string(const pj_value *v, const char *s)
{
    return v && v->type == PJ_STRING && v->len == strlen(s) && memcmp(v->u.str, s, v->len) == 0;
}
