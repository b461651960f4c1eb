/* SPDX-License-Identifier: MIT */
/*
 * entry.c - the one decoder of everything the cluster reads from Redis.
 *
 * Redis content is untrusted: anyone with write access to the deployment's
 * keys can put anything in an inbox.  So every element's type is checked
 * before its str or element array is touched, every count and length is
 * bounded before use, numbers are parsed with explicit bounds, and a
 * field that appears twice makes the entry malformed rather than letting
 * the last one win silently.  Unknown fields are ignored (a newer sender
 * may add some).  Nothing here allocates: results borrow from the reply.
 */
#include <stdlib.h>
#include <string.h>

#include "entry.h"
#include "routepool/cluster.h"
#include "util.h"

static bool is_str(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
           (r->str || r->len == 0) && r->len <= (size_t)RP_CLUSTER_PAYLOAD_MAX * 2;
}

/* Stream ids are "<ms>-<seq>": digits and one '-', at most 41 bytes. */
static bool valid_sid(const redisReply *r)
{
    if (!is_str(r) || r->len < 3 || r->len > 41)
        return false;
    int dashes = 0;
    for (size_t i = 0; i < r->len; i++) {
        char ch = r->str[i];
        if (ch == '-')
            dashes++;
        else if (ch < '0' || ch > '9')
            return false;
    }
    return dashes == 1 && r->str[0] != '-' && r->str[r->len - 1] != '-';
}

typedef struct field_spec {
    const char *name;
    size_t off;   /* offset of the rp__bytes in rp__entry */
} field_spec;

static const field_spec specs[] = {
    {"id", offsetof(rp__entry, id)},   {"h", offsetof(rp__entry, h)},
    {"p", offsetof(rp__entry, p)},     {"k", offsetof(rp__entry, k)},
    {"r", offsetof(rp__entry, r)},     {"o", offsetof(rp__entry, o)},
    {"hist", offsetof(rp__entry, hist)},
};

/* Store one field; false on a duplicate. */
static bool put_field(rp__entry *e, const redisReply *k, const redisReply *v,
                      rp__bytes *c, rp__bytes *t, rp__bytes *n)
{
    rp__bytes *slot = NULL;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0] && !slot; i++)
        if (k->len == strlen(specs[i].name) && memcmp(k->str, specs[i].name, k->len) == 0)
            slot = (rp__bytes *)((char *)e + specs[i].off);
    if (!slot && k->len == 1 && k->str[0] == 'c')
        slot = c;
    if (!slot && k->len == 1 && k->str[0] == 't')
        slot = t;
    if (!slot && k->len == 1 && k->str[0] == 'n')
        slot = n;
    if (!slot)
        return true; /* unknown field: ignored */
    if (slot->p)
        return false;
    slot->p = v->len ? v->str : "";
    slot->len = v->len;
    return true;
}

/* Field-level checks once every field is in. */
static const char *check_fields(rp__entry *e, size_t max_payload, rp__bytes c,
                                rp__bytes t, rp__bytes n)
{
    if (!e->id.p || !rp__valid_id(e->id.p, e->id.len, RP_CLUSTER_ID_MAX + 24, true))
        return "missing or invalid field id";
    if (!e->h.p || !rp__valid_name(e->h.p, e->h.len, RP_CLUSTER_HANDLER_MAX))
        return "missing or invalid field h";
    if (!e->p.p)
        return "missing field p";
    if (e->p.len > max_payload)
        return "payload over max_payload";
    if (e->k.p && e->k.len > RP__KEY_MAX)
        return "key too long";
    if (e->o.p && !rp__valid_id(e->o.p, e->o.len, RP_CLUSTER_ID_MAX, true))
        return "invalid field o";
    if (e->hist.p && e->hist.len > RP__HISTORY_MAX)
        return "history too long";
    int64_t v;
    if (n.p) {
        if (!rp__parse_i64(n.p, n.len, 0, 1000000, &v))
            return "invalid field n";
        e->prev_deliveries = v;
    }
    if (t.p) {
        if (!rp__parse_i64(t.p, t.len, 0, INT64_MAX / 2, &v))
            return "invalid field t";
        e->deadline_ms = v;
    }
    if (!e->r.p != !c.p)
        return "fields r and c must come together";
    if (e->r.p) {
        if (!rp__valid_id(e->r.p, e->r.len, RP_CLUSTER_ID_MAX, true))
            return "invalid field r";
        if (!rp__parse_i64(c.p, c.len, 0, INT64_MAX, &v))
            return "invalid field c";
        e->corr = (uint64_t)v;
        e->is_ask = true;
    }
    return NULL;
}

int rp__entry_decode(const redisReply *r, size_t max_payload, rp__entry *out,
                     const char **why)
{
    memset(out, 0, sizeof *out);
    *why = "entry is not a 2-element array";
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !r->element)
        return RP__ENTRY_NOID;
    if (!valid_sid(r->element[0])) {
        *why = "invalid stream id";
        return RP__ENTRY_NOID;
    }
    out->sid.p = r->element[0]->str;
    out->sid.len = r->element[0]->len;
    const redisReply *f = r->element[1];
    if (f && f->type == REDIS_REPLY_NIL)
        return RP__ENTRY_DELETED;
    *why = "fields are not an even array of strings";
    if (!f || f->type != REDIS_REPLY_ARRAY || f->elements % 2 || f->elements > 64 ||
        (f->elements && !f->element))
        return RP__ENTRY_MALFORMED;
    rp__bytes c = {0}, t = {0}, n = {0};
    for (size_t i = 0; i < f->elements; i += 2) {
        if (!is_str(f->element[i]) || !is_str(f->element[i + 1]))
            return RP__ENTRY_MALFORMED;
        if (!put_field(out, f->element[i], f->element[i + 1], &c, &t, &n)) {
            *why = "duplicate field";
            return RP__ENTRY_MALFORMED;
        }
    }
    if ((*why = check_fields(out, max_payload, c, t, n)) != NULL)
        return RP__ENTRY_MALFORMED;
    return RP__ENTRY_OK;
}

int rp__read_entries(const redisReply *r, const redisReply **out)
{
    *out = NULL;
    if (!r || r->type == REDIS_REPLY_NIL)
        return 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 || !r->element)
        return -1;
    const redisReply *s = r->element[0];
    if (!s || s->type != REDIS_REPLY_ARRAY || s->elements != 2 || !s->element)
        return -1;
    const redisReply *e = s->element[1];
    if (!e || e->type != REDIS_REPLY_ARRAY || (e->elements && !e->element))
        return -1;
    *out = e;
    return 0;
}

int rp__autoclaim_entries(const redisReply *r, rp__bytes *cursor,
                          const redisReply **entries)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2 || !r->element)
        return -1;
    if (!valid_sid(r->element[0]))
        return -1;
    const redisReply *e = r->element[1];
    if (!e || e->type != REDIS_REPLY_ARRAY || (e->elements && !e->element))
        return -1;
    cursor->p = r->element[0]->str;
    cursor->len = r->element[0]->len;
    *entries = e;
    return 0;
}

/* ---- reply records: "RPR1" u64 corr, i32 code, i32 routee, u32 msg_len,
 *      u32 payload_len, msg, payload; little-endian, exact length ---- */

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

char *rp__reply_encode(const rp__reply *r, size_t *len)
{
    size_t n = RP__REPLY_HEADER + r->msg.len + r->payload.len;
    unsigned char *b = malloc(n);
    if (!b)
        return NULL;
    memcpy(b, "RPR1", 4);
    put32(b + 4, (uint32_t)r->corr);
    put32(b + 8, (uint32_t)(r->corr >> 32));
    put32(b + 12, (uint32_t)r->code);
    put32(b + 16, (uint32_t)r->routee);
    put32(b + 20, (uint32_t)r->msg.len);
    put32(b + 24, (uint32_t)r->payload.len);
    if (r->msg.len)
        memcpy(b + RP__REPLY_HEADER, r->msg.p, r->msg.len);
    if (r->payload.len)
        memcpy(b + RP__REPLY_HEADER + r->msg.len, r->payload.p, r->payload.len);
    *len = n;
    return (char *)b;
}

int rp__reply_decode(const void *buf, size_t len, size_t max_payload,
                     rp__reply *out, const char **why)
{
    const unsigned char *b = buf;
    memset(out, 0, sizeof *out);
    *why = "reply record too short or bad magic";
    if (!b || len < RP__REPLY_HEADER || memcmp(b, "RPR1", 4) != 0)
        return -1;
    out->corr = (uint64_t)get32(b + 4) | (uint64_t)get32(b + 8) << 32;
    out->code = (int32_t)get32(b + 12);
    out->routee = (int32_t)get32(b + 16);
    uint32_t ml = get32(b + 20), pl = get32(b + 24);
    *why = "reply record lengths out of bounds";
    if (ml > 4096 || pl > max_payload)
        return -1;
    if ((size_t)ml + pl != len - RP__REPLY_HEADER)
        return -1;
    out->msg.p = (const char *)b + RP__REPLY_HEADER;
    out->msg.len = ml;
    out->payload.p = (const char *)b + RP__REPLY_HEADER + ml;
    out->payload.len = pl;
    if (out->code > 0) {
        *why = "reply record has a positive failure code";
        return -1;
    }
    return 0;
}
