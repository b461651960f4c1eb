/* SPDX-License-Identifier: MIT */
/*
 * clock.c - time and thread identity for the whole library: now on
 * CLOCK_MONOTONIC, absolute deadlines, and the calling thread's kernel id
 * with the name it had when it first asked (for traces).
 *
 * Lock order: names_lock is a leaf (held only to copy a thread name in or
 * out, under any other lock or none).
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

int64_t rp__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void rp__deadline(struct timespec *out, int timeout_ms)
{
    clock_gettime(CLOCK_MONOTONIC, out);
    out->tv_sec += timeout_ms / 1000;
    out->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (out->tv_nsec >= 1000000000L) {
        out->tv_sec++;
        out->tv_nsec -= 1000000000L;
    }
}

int rp__deadline_passed(const struct timespec *deadline)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > deadline->tv_sec ||
           (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

static _Thread_local int32_t cached_tid;

/* Thread names, recorded by each thread the first time it asks for its id
 * (a routee at start, a submitter at its first traced submit), so a trace
 * can name a submitter that has exited by the time the sampler writes its
 * events.  Fixed size: a tid seen again (the kernel reuses ids) replaces
 * its entry; past RP__TID_NAMES_MAX threads, the oldest slots are
 * reused. */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int32_t tid;
    char name[16];
} names[RP__TID_NAMES_MAX];
static unsigned names_next;

static void record_name(int32_t tid)
{
    char name[16] = "";
    unsigned slot;

    if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0)
        return;
    name[15] = '\0';
    pthread_mutex_lock(&names_lock);
    for (slot = 0; slot < RP__TID_NAMES_MAX && names[slot].tid != tid; slot++) {
    }
    if (slot == RP__TID_NAMES_MAX)
        slot = names_next++ % RP__TID_NAMES_MAX;
    names[slot].tid = tid;
    memcpy(names[slot].name, name, sizeof name);
    pthread_mutex_unlock(&names_lock);
}

bool rp__tid_name(int32_t tid, char out[16])
{
    bool found = false;

    pthread_mutex_lock(&names_lock);
    for (unsigned i = 0; i < RP__TID_NAMES_MAX && !found; i++)
        if (names[i].tid == tid) {
            memcpy(out, names[i].name, 16);
            found = true;
        }
    pthread_mutex_unlock(&names_lock);
    return found;
}

int32_t rp__tid(void)
{
    if (!cached_tid) {
        cached_tid = (int32_t)syscall(SYS_gettid);
        record_name(cached_tid);
    }
    return cached_tid;
}
