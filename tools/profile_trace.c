/* SPDX-License-Identifier: MIT */
/*
 * tools/profile_trace.c - read a routepool trace into points and per-routee
 * event counts.
 *
 * The trace is walked one event at a time: each element of traceEvents is
 * parsed into the parser's arena, reduced to what the report needs and
 * freed (pj_reset), so memory grows with the number of counter events
 * only, never with the whole document tree.  An event that names itself a
 * routepool event (a "depth r<i>" counter, a "job" slice with a routee, a
 * "steal" instant, the "routepool" metadata) must carry its fields with
 * sane values; anything else is ignored.
 */
#include "profile_trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_json.h"

typedef struct reader {
    pj_parser ps;
    pt_trace *t;
    size_t index; /* of the event being read */
} reader;

/* ---- fields ---- */

static int bad_event(reader *rd, const char *what)
{
    return pj_fail(&rd->ps, "event %zu: %s", rd->index, what);
}

/* A finite number field; absent is an error when required. */
static int get_number(reader *rd, const pj_value *obj, const char *key, double *out,
                      bool required)
{
    const pj_value *v = pj_get(obj, key);
    char msg[96];

    if (!v && !required)
        return 0;
    if (!v || v->type != PJ_NUMBER) {
        snprintf(msg, sizeof msg, "\"%s\" must be a number", key);
        return bad_event(rd, msg);
    }
    *out = v->u.num;
    return 0;
}

/* A whole number field in [0, max]. */
static int get_count(reader *rd, const pj_value *obj, const char *key, double max,
                     double *out)
{
    char msg[96];

    if (get_number(rd, obj, key, out, true) < 0)
        return -1;
    if (*out < 0 || *out > max || *out != floor(*out)) {
        snprintf(msg, sizeof msg, "\"%s\" must be a whole number 0..%.0f (got %g)", key, max,
                 *out);
        return bad_event(rd, msg);
    }
    return 0;
}

static int get_routee(reader *rd, const pj_value *obj, const char *key, uint32_t *out)
{
    double v;

    if (get_count(rd, obj, key, PT_ROUTEES_MAX - 1, &v) < 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* Make room for routee i in the per-routee arrays. */
static int see_routee(reader *rd, uint32_t i)
{
    pt_trace *t = rd->t;
    pt_routee_events *ev;

    if (i < t->n)
        return 0;
    if (!(ev = realloc(t->ev, (size_t)(i + 1) * sizeof *ev)))
        return pj_fail(&rd->ps, "out of memory");
    memset(ev + t->n, 0, (size_t)(i + 1 - t->n) * sizeof *ev);
    t->ev = ev;
    t->n = i + 1;
    return 0;
}

/* "<prefix>r<digits>" -> the routee index; false when name is not one. */
static bool counter_routee(const pj_value *name, const char *prefix, uint32_t *out)
{
    const size_t plen = strlen(prefix);
    uint32_t v = 0;

    if (!name || name->type != PJ_STRING || name->len <= plen || name->len > plen + 4 ||
        memcmp(name->u.str, prefix, plen) != 0)
        return false;
    for (size_t i = plen; i < name->len; i++) {
        const char c = name->u.str[i];
        if (c < '0' || c > '9' || (i == plen && c == '0' && name->len > plen + 1))
            return false;
        v = v * 10u + (uint32_t)(c - '0');
    }
    if (v >= PT_ROUTEES_MAX)
        return false;
    *out = v;
    return true;
}

/* ---- events ---- */

static int add_point(reader *rd, double ts, uint32_t routee, uint32_t kind, double value)
{
    pt_trace *t = rd->t;

    if (t->npoints == t->cap) {
        const size_t cap = t->cap ? t->cap * 2 : 4096;
        pt_point *p = realloc(t->points, cap * sizeof *p);
        if (!p)
            return pj_fail(&rd->ps, "out of memory");
        t->points = p;
        t->cap = cap;
    }
    t->points[t->npoints] = (pt_point){ts, value, routee, kind, t->npoints};
    t->npoints++;
    return see_routee(rd, routee);
}

static int on_counter(reader *rd, const pj_value *ev, const pj_value *name)
{
    const pj_value *args = pj_get(ev, "args");
    uint32_t routee;
    double ts = 0, v = 0;

    if (counter_routee(name, "depth r", &routee)) {
        if (get_number(rd, ev, "ts", &ts, true) < 0 ||
            get_count(rd, args, "depth", 1e15, &v) < 0)
            return -1;
        return add_point(rd, ts, routee, PT_DEPTH, v);
    }
    if (counter_routee(name, "busy r", &routee)) {
        if (get_number(rd, ev, "ts", &ts, true) < 0 || get_count(rd, args, "busy", 1, &v) < 0)
            return -1;
        rd->t->busy_points++;
        return add_point(rd, ts, routee, PT_BUSY, v);
    }
    return 0; /* someone else's counter */
}

static int on_slice(reader *rd, const pj_value *ev)
{
    const pj_value *args = pj_get(ev, "args");
    double dur = 0, wait = 0;
    uint32_t routee;

    if (!pj_get(args, "routee"))
        return 0; /* not a routepool job slice */
    if (get_routee(rd, args, "routee", &routee) < 0 ||
        get_number(rd, ev, "dur", &dur, true) < 0 ||
        get_number(rd, args, "wait_us", &wait, false) < 0 || see_routee(rd, routee) < 0)
        return -1;
    if (dur < 0 || wait < 0)
        return bad_event(rd, "negative \"dur\" or \"wait_us\"");
    rd->t->ev[routee].slices++;
    rd->t->ev[routee].slice_us += dur;
    rd->t->ev[routee].wait_us += wait;
    rd->t->slices++;
    return 0;
}

static int on_steal(reader *rd, const pj_value *ev)
{
    const pj_value *args = pj_get(ev, "args");
    uint32_t thief, victim;
    double jobs = 0;

    if (!pj_get(args, "thief"))
        return 0;
    if (get_routee(rd, args, "thief", &thief) < 0 || get_routee(rd, args, "victim", &victim) < 0 ||
        get_count(rd, args, "jobs", 1e15, &jobs) < 0 || see_routee(rd, thief) < 0 ||
        see_routee(rd, victim) < 0)
        return -1;
    rd->t->ev[thief].stole += (uint64_t)jobs;
    rd->t->ev[victim].stolen_from += (uint64_t)jobs;
    rd->t->steal_events++;
    return 0;
}

/* A routee's exact counts over the trace (lib/trace.c, at stop). */
static int on_totals(reader *rd, const pj_value *ev)
{
    const pj_value *args = pj_get(ev, "args");
    double run = 0, stole = 0, stolen_from = 0;
    uint32_t routee;
    pt_routee_events *e;

    if (get_routee(rd, args, "routee", &routee) < 0 ||
        get_count(rd, args, "jobs_run", 1e15, &run) < 0 ||
        get_count(rd, args, "stole", 1e15, &stole) < 0 ||
        get_count(rd, args, "stolen_from", 1e15, &stolen_from) < 0 || see_routee(rd, routee) < 0)
        return -1;
    e = &rd->t->ev[routee];
    if (e->has_totals)
        return bad_event(rd, "a second \"routee_totals\" for one routee");
    e->has_totals = true;
    e->jobs_run = (uint64_t)run;
    e->total_stole = (uint64_t)stole;
    e->total_stolen_from = (uint64_t)stolen_from;
    rd->t->totals++;
    return 0;
}

static int on_metadata(reader *rd, const pj_value *ev)
{
    const pj_value *args = pj_get(ev, "args"), *pool = pj_get(args, "pool");
    pt_trace *t = rd->t;
    double routees = 0, interval = 0, samples = 0, lost = 0;

    if (get_count(rd, args, "routees", PT_ROUTEES_MAX, &routees) < 0 ||
        get_count(rd, args, "interval_us", 1e9, &interval) < 0 ||
        get_count(rd, args, "samples", 1e15, &samples) < 0 ||
        get_count(rd, args, "lost_events", 1e15, &lost) < 0)
        return -1;
    if (pool && pool->type == PJ_STRING) {
        free(t->pool);
        if (!(t->pool = malloc(pool->len + 1)))
            return pj_fail(&rd->ps, "out of memory");
        memcpy(t->pool, pool->u.str, pool->len + 1);
    }
    t->has_meta = true;
    t->meta_routees = (unsigned)routees;
    t->interval_us = interval;
    t->meta_samples = (uint64_t)samples;
    t->lost_events = (uint64_t)lost;
    return routees > 0 ? see_routee(rd, (uint32_t)routees - 1) : 0;
}

static int on_event(reader *rd, const pj_value *ev)
{
    const pj_value *ph = pj_get(ev, "ph"), *name = pj_get(ev, "name");

    if (ev->type != PJ_OBJECT)
        return bad_event(rd, "not an object");
    if (!ph || ph->type != PJ_STRING)
        return bad_event(rd, "no \"ph\" string");
    rd->t->events++;
    if (pj_is_string(ph, "C"))
        return on_counter(rd, ev, name);
    if (pj_is_string(ph, "X") && pj_is_string(name, "job"))
        return on_slice(rd, ev);
    if ((pj_is_string(ph, "i") || pj_is_string(ph, "I")) && pj_is_string(name, "steal"))
        return on_steal(rd, ev);
    if (pj_is_string(ph, "M") && pj_is_string(name, "routepool"))
        return on_metadata(rd, ev);
    if (pj_is_string(ph, "M") && pj_is_string(name, "routee_totals"))
        return on_totals(rd, ev);
    return 0;
}

/* ---- the document ---- */

static int read_events(reader *rd)
{
    bool first = true;
    int more;

    if (pj_expect(&rd->ps, '[') < 0)
        return -1;
    while ((more = pj_next_element(&rd->ps, ']', &first)) == 1) {
        pj_value *ev;
        if (pj_parse_value(&rd->ps, &ev) < 0 || on_event(rd, ev) < 0)
            return -1;
        pj_reset(&rd->ps);
        rd->index++;
    }
    return more;
}

/* The JSON Object Format: {"traceEvents": [...], other keys...}. */
static int read_object(reader *rd)
{
    bool first = true, seen = false;
    int more;

    rd->ps.p++; /* '{' */
    while ((more = pj_next_element(&rd->ps, '}', &first)) == 1) {
        const char *key;
        size_t len;
        pj_value *ignored;
        if (pj_parse_string(&rd->ps, &key, &len) < 0 || pj_expect(&rd->ps, ':') < 0)
            return -1;
        if (len == 11 && memcmp(key, "traceEvents", 11) == 0 && !seen) {
            seen = true;
            if (read_events(rd) < 0)
                return -1;
        } else if (pj_parse_value(&rd->ps, &ignored) < 0) {
            return -1;
        }
        pj_reset(&rd->ps);
    }
    if (more == 0 && !seen)
        return pj_fail(&rd->ps, "no \"traceEvents\" array in the trace object");
    return more;
}

int pt_read(pt_trace *out, const char *text, size_t len, char *err, size_t errcap)
{
    reader rd = {.t = out};
    int rc, c;

    memset(out, 0, sizeof *out);
    pj_init(&rd.ps, text, len);
    c = pj_peek(&rd.ps);
    if (c == '{')
        rc = read_object(&rd);
    else if (c == '[')
        rc = read_events(&rd);
    else if (c == -1)
        rc = pj_fail(&rd.ps, "empty trace");
    else
        rc = pj_fail(&rd.ps, "a trace is a JSON object with \"traceEvents\" or an array of events");
    if (rc >= 0)
        rc = pj_expect_end(&rd.ps);
    if (rc < 0) {
        snprintf(err, errcap, "%s", rd.ps.err);
        pt_release(out);
    }
    pj_free(&rd.ps);
    return rc < 0 ? -1 : 0;
}

void pt_release(pt_trace *t)
{
    free(t->pool);
    free(t->points);
    free(t->ev);
    memset(t, 0, sizeof *t);
}
