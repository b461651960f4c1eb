/* SPDX-License-Identifier: MIT */
/*
 * bench/sojourn_central.c - rp-bench-sojourn's reference scheduler: one mutex-protected
 * FIFO shared by the two worker threads (an M/G/2 queue, the best tail any
 * first-come-first-served dispatch gives).  Invariant: q[head..tail) waits,
 * tail counts the submitted jobs, done the finished ones; mu guards all.
 */
#include <pthread.h>
#include <semaphore.h>
#include <string.h>

#include "sojourn.h"

/*
 * Workers sleep on a semaphore of their own and a submitter wakes exactly
 * one (WAKE_SEM).  Not pthread_cond_signal(): on this Debian 12 (glibc 2.36)
 * it loses wake-ups under this load - a worker stayed asleep for 10-20 ms
 * while the queue held hundreds of jobs, the mean sojourn reached tens of
 * milliseconds at load 0.8 - consistent with glibc bug 25847.  --central-wake
 * signal / broadcast keep the condvar variants to show it.
 */

/* Sleep until a submitter (or the stop) wakes us; mu held on entry and exit. */
static void central_sleep(central *c, int me)
{
    if (c->wake != WAKE_SEM) {
        c->sleepers++;
        pthread_cond_wait(&c->work, &c->mu);
        c->sleepers--;
        return;
    }
    c->asleep[c->nasleep++] = (unsigned)me;
    pthread_mutex_unlock(&c->mu);
    while (sem_wait(&c->sem[me]) != 0) /* EINTR */
        ;
    pthread_mutex_lock(&c->mu);
}

static void *central_worker(void *p)
{
    central *c = p;

    pthread_mutex_lock(&c->mu);
    tl_worker = (int)c->started++;
    if (c->pin) /* as rp_pool_options.pin_cpus: worker i on CPU i */
        bench_pin_self(bench_nth_cpu(tl_worker));
    for (;;) {
        job *j;
        while (c->head == c->tail && !c->stopping)
            central_sleep(c, tl_worker);
        if (c->head == c->tail)
            break; /* stopping and drained */
        j = c->q[c->head++];
        pthread_mutex_unlock(&c->mu);
        run_job(j);
        pthread_mutex_lock(&c->mu);
        if (++c->done == c->tail && c->waiting)
            pthread_cond_broadcast(&c->idle);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int central_start(central *c, job **ring, bool pin, central_wake wake)
{
    memset(c, 0, sizeof *c);
    c->pin = pin;
    c->wake = wake;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->work, NULL);
    pthread_cond_init(&c->idle, NULL);
    for (unsigned i = 0; i < ROUTEES; i++)
        sem_init(&c->sem[i], 0, 0);
    c->q = ring;
    for (unsigned i = 0; i < ROUTEES; i++)
        if (pthread_create(&c->th[i], NULL, central_worker, c) != 0)
            return -1;
    return 0;
}

void central_submit(central *c, job *j)
{
    int who = -1; /* worker to post, ROUTEES for the condvar, -1 nobody */

    pthread_mutex_lock(&c->mu);
    c->q[c->tail++] = j;
    if (c->wake == WAKE_SEM && c->nasleep)
        who = (int)c->asleep[--c->nasleep];
    else if (c->wake != WAKE_SEM && c->sleepers)
        who = ROUTEES;
    pthread_mutex_unlock(&c->mu);
    /* Wake after the unlock: the woken worker must not find the mutex held
     * by a submitter its own wake-up preempted (a SCHED_IDLE generator). */
    if (who == ROUTEES && c->wake == WAKE_BROADCAST)
        pthread_cond_broadcast(&c->work);
    else if (who == ROUTEES)
        pthread_cond_signal(&c->work);
    else if (who >= 0)
        sem_post(&c->sem[who]);
}

void central_wait_idle(central *c)
{
    pthread_mutex_lock(&c->mu);
    c->waiting = true;
    while (c->done != c->tail)
        pthread_cond_wait(&c->idle, &c->mu);
    c->waiting = false;
    pthread_mutex_unlock(&c->mu);
}

void central_stop(central *c)
{
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_broadcast(&c->work);
    while (c->nasleep)
        sem_post(&c->sem[c->asleep[--c->nasleep]]);
    pthread_mutex_unlock(&c->mu);
    for (unsigned i = 0; i < ROUTEES; i++)
        pthread_join(c->th[i], NULL);
    for (unsigned i = 0; i < ROUTEES; i++)
        sem_destroy(&c->sem[i]);
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->idle);
    pthread_mutex_destroy(&c->mu);
}
