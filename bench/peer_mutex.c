/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_mutex.c - one mutex-protected FIFO shared by the workers (see
 * peer_mutex.h).
 *
 * Lock order: one lock, mu.  The ring q[head..tail) (indices masked by
 * cap - 1, cap a power of two) holds the queued jobs; it doubles under mu
 * when full, so submit never blocks on a full queue.  `waiting` counts
 * workers blocked on `work`: a submitter signals only when it is non-zero,
 * so a busy pool pays no condvar call per job.  `pending` counts jobs
 * submitted and not yet finished; the worker that brings it to zero
 * broadcasts `idle` when someone waits there.
 */
#include "peer_mutex.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#define MAXW 8

typedef struct slot {
    void (*fn)(void *arg);
    void *arg;
} slot;

struct peer_mutex {
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    slot *q;
    size_t cap, head, tail; /* head, tail: free-running counters */
    size_t pending;
    int waiting, idle_waiters, nworkers;
    bool stopping;
    pthread_t th[MAXW];
};

static void *worker(void *p)
{
    peer_mutex *m = p;

    pthread_mutex_lock(&m->mu);
    for (;;) {
        slot s;
        while (m->head == m->tail && !m->stopping) {
            m->waiting++;
            pthread_cond_wait(&m->work, &m->mu);
            m->waiting--;
        }
        if (m->head == m->tail)
            break; /* stopping and drained */
        s = m->q[m->head++ & (m->cap - 1)];
        pthread_mutex_unlock(&m->mu);
        s.fn(s.arg);
        pthread_mutex_lock(&m->mu);
        if (--m->pending == 0 && m->idle_waiters)
            pthread_cond_broadcast(&m->idle);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

int peer_mutex_create(peer_mutex **out, int workers)
{
    peer_mutex *m;

    if (workers < 1 || workers > MAXW || !(m = calloc(1, sizeof *m)))
        return -1;
    m->cap = 1024;
    if (!(m->q = malloc(m->cap * sizeof *m->q))) {
        free(m);
        return -1;
    }
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->work, NULL);
    pthread_cond_init(&m->idle, NULL);
    for (m->nworkers = 0; m->nworkers < workers; m->nworkers++)
        if (pthread_create(&m->th[m->nworkers], NULL, worker, m) != 0)
            return -1;
    *out = m;
    return 0;
}

/* Double the ring, unwrapping it; mu held. */
static int grow(peer_mutex *m)
{
    size_t n = m->tail - m->head;
    slot *q = malloc(2 * m->cap * sizeof *q);

    if (!q)
        return -1;
    for (size_t i = 0; i < n; i++)
        q[i] = m->q[(m->head + i) & (m->cap - 1)];
    free(m->q);
    m->q = q;
    m->cap *= 2;
    m->head = 0;
    m->tail = n;
    return 0;
}

int peer_mutex_submit(peer_mutex *m, void (*fn)(void *arg), void *arg)
{
    bool wake;

    pthread_mutex_lock(&m->mu);
    if (m->tail - m->head == m->cap && grow(m) != 0) {
        pthread_mutex_unlock(&m->mu);
        return -1;
    }
    m->q[m->tail++ & (m->cap - 1)] = (slot){fn, arg};
    m->pending++;
    wake = m->waiting > 0;
    pthread_mutex_unlock(&m->mu);
    /* Signal after the unlock: the woken worker does not block on mu at once. */
    if (wake)
        pthread_cond_signal(&m->work);
    return 0;
}

void peer_mutex_wait(peer_mutex *m)
{
    pthread_mutex_lock(&m->mu);
    m->idle_waiters++;
    while (m->pending)
        pthread_cond_wait(&m->idle, &m->mu);
    m->idle_waiters--;
    pthread_mutex_unlock(&m->mu);
}

void peer_mutex_destroy(peer_mutex *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->stopping = true;
    pthread_cond_broadcast(&m->work);
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < m->nworkers; i++)
        pthread_join(m->th[i], NULL);
    pthread_cond_destroy(&m->work);
    pthread_cond_destroy(&m->idle);
    pthread_mutex_destroy(&m->mu);
    free(m->q);
    free(m);
}
