/* SPDX-License-Identifier: MIT */
/*
 * lib/cluster/entry.h - decoding what Redis hands back: inbox entries,
 * stream read replies, and the binary reply records of asks.  Every reader
 * of the cluster library decodes through here (one place to get right, and
 * the fuzz target of tests/cluster/test_malformed.c).  Private.
 *
 * Decoded values borrow from the redisReply (or buffer) they came from.
 */
#ifndef RP_CLUSTER_ENTRY_H
#define RP_CLUSTER_ENTRY_H

#include <hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rp__bytes {
    const char *p;   /* NULL when absent */
    size_t len;
} rp__bytes;

/** Longest delivery history ("node,node,...") carried with an entry. */
#define RP__HISTORY_MAX 2048u
/** Longest key carried with an entry. */
#define RP__KEY_MAX 4096u

/** An inbox entry.  Fields: id, h, p, k, r, c, t, o, n (previous
 *  deliveries, set when a survivor moved it), hist. */
typedef struct rp__entry {
    rp__bytes sid;       /* stream id (always set when decode got that far) */
    rp__bytes id, h, p, k, r, o, hist;
    uint64_t corr;       /* c: asks only */
    int64_t deadline_ms; /* t: server ms, 0 when absent */
    int64_t prev_deliveries; /* n */
    bool is_ask;         /* r and c present */
} rp__entry;

enum {
    RP__ENTRY_OK = 0,
    RP__ENTRY_DELETED = 1,   /* the id of an entry deleted since (nil fields) */
    RP__ENTRY_MALFORMED = -1,/* sid usable: acknowledge it */
    RP__ENTRY_NOID = -2      /* not even a usable stream id */
};

/**
 * Decode one stream entry ([id, [field, value, ...]]).
 * @param why  receives a static reason on failure.
 * @return an RP__ENTRY_* code.
 */
int rp__entry_decode(const redisReply *e, size_t max_payload, rp__entry *out,
                     const char **why);

/**
 * The entries array of an XREADGROUP reply for one stream
 * ([[name, [entry...]]]).  A nil reply (BLOCK timed out) gives *out NULL.
 * @return 0, or -1 when the shape is wrong.
 */
int rp__read_entries(const redisReply *r, const redisReply **out);

/**
 * XAUTOCLAIM's reply ([cursor, [entry...], [deleted id...]]).
 * @return 0 with *cursor (borrowed) and *entries set, or -1.
 */
int rp__autoclaim_entries(const redisReply *r, rp__bytes *cursor,
                          const redisReply **entries);

/** A reply record: one element of "<prefix>:reply:<node>". */
typedef struct rp__reply {
    uint64_t corr;
    int32_t code;        /* 0: fulfilled; else the failure's code */
    int32_t routee;
    rp__bytes msg;       /* failure message (may be empty) */
    rp__bytes payload;   /* reply bytes */
} rp__reply;

/** Header size of a reply record. */
#define RP__REPLY_HEADER 28u

/** Encode: returns a malloc'd record of *len bytes, or NULL (no memory). */
char *rp__reply_encode(const rp__reply *r, size_t *len);

/** Decode len bytes; payload and msg must fit max_payload / 4096 bytes.
 *  @return 0, or -1 (malformed; *why set). */
int rp__reply_decode(const void *buf, size_t len, size_t max_payload,
                     rp__reply *out, const char **why);

#endif /* RP_CLUSTER_ENTRY_H */
