/* SPDX-License-Identifier: MIT */
/*
 * tools/profile_json.h - a small strict JSON parser (RFC 8259) for
 * rp-profile.
 *
 * Strict: one value per document, no trailing commas, no comments, no
 * NaN/Infinity, no leading zeros, strings must be valid UTF-8 without raw
 * control characters, \u escapes must pair their surrogates, numbers must
 * fit a double, nesting stops at PJ_DEPTH_MAX.  Errors name the line and
 * column.
 *
 * Values live in the parser's arena: pj_reset() frees every value parsed so
 * far at once, so a reader can walk a large array element by element in
 * bounded memory (pj_next_element()), which is how rp-profile reads traces
 * of millions of events.  Not thread-safe: one parser per thread.
 */
#ifndef RP_PROFILE_JSON_H
#define RP_PROFILE_JSON_H

#include <stdbool.h>
#include <stddef.h>

#define PJ_DEPTH_MAX 256

typedef enum pj_type {
    PJ_NULL = 0,
    PJ_FALSE,
    PJ_TRUE,
    PJ_NUMBER,
    PJ_STRING,
    PJ_ARRAY,
    PJ_OBJECT
} pj_type;

typedef struct pj_value pj_value;

typedef struct pj_member {
    const char *key; /* decoded, NUL-terminated (may hold \u0000: use key_len) */
    size_t key_len;
    pj_value *value;
} pj_member;

struct pj_value {
    pj_type type;
    size_t len; /* string: bytes; array: items; object: members */
    union {
        double num;
        const char *str;     /* decoded UTF-8, NUL-terminated */
        pj_value **items;
        pj_member *members;  /* in document order; duplicates kept */
    } u;
};

typedef struct pj_chunk pj_chunk;

typedef struct pj_parser {
    const char *text, *p, *end;
    unsigned depth;
    pj_chunk *chunks;
    char err[200];
} pj_parser;

/** Start parsing text[0..len) (borrowed: must outlive the parser). */
void pj_init(pj_parser *ps, const char *text, size_t len);

/** Free the arena (every value parsed). */
void pj_free(pj_parser *ps);

/** Free every value parsed so far; parsing continues where it was. */
void pj_reset(pj_parser *ps);

/** Parse one whole document: a value and nothing after it but white space.
 *  @return 0, or -1 with ps->err set. */
int pj_parse_document(pj_parser *ps, pj_value **out);

/** Parse the next value at the current position. @return 0 or -1. */
int pj_parse_value(pj_parser *ps, pj_value **out);

/** Parse a string at the current position (after white space).
 *  @return 0 or -1. */
int pj_parse_string(pj_parser *ps, const char **out, size_t *len);

/** Skip white space and consume c. @return 0, or -1 (err names c). */
int pj_expect(pj_parser *ps, char c);

/** The next character after white space (not consumed), or -1 at the end. */
int pj_peek(pj_parser *ps);

/**
 * Walk an array or object one element at a time.  Call with *first = true
 * right after the opening bracket was consumed; it consumes the separator
 * before each element, or the closing bracket.
 * @param close  ']' or '}'.
 * @return 1 when an element follows (then parse it), 0 when the closing
 *         bracket was consumed, -1 on a syntax error.
 */
int pj_next_element(pj_parser *ps, char close, bool *first);

/** Check that only white space remains. @return 0 or -1. */
int pj_expect_end(pj_parser *ps);

/** Record an error at the current position (printf-style). @return -1. */
int pj_fail(pj_parser *ps, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Length of the valid UTF-8 sequence starting at q (its lead byte >= 0x80):
 *  2..4, or 0 when it is not valid (overlong, surrogate, above U+10FFFF,
 *  truncated at end). */
size_t pj_utf8_len(const unsigned char *q, const unsigned char *end);

/** The first member of obj named key, or NULL (also when obj is no object). */
const pj_value *pj_get(const pj_value *obj, const char *key);

/** True when v is a string equal to s. */
bool pj_is_string(const pj_value *v, const char *s);

#endif /* RP_PROFILE_JSON_H */
