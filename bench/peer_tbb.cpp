/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_tbb.cpp - oneTBB behind the C API of peer_tbb.h.
 *
 * Nothing throws across the C boundary: every entry point catches.  The
 * jobs are lambdas capturing (fn, arg); oneTBB allocates each task from
 * its own small-object pools.
 *
 * in_arena marks the threads currently running one of this arena's jobs:
 * peer_tbb_run() from such a thread spawns into its own deque (oneTBB's
 * work stealing); from any other thread it enqueues into the arena.
 */
#include "peer_tbb.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/task_scheduler_observer.h>
#include <oneapi/tbb/version.h>

#include <pthread.h>
#include <sched.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <vector>

// Pins a worker entering the arena to the CPU of its worker slot.  Worker
// slots follow the reserved ones: slot index - masters is the worker index.
class pinner : public tbb::task_scheduler_observer {
public:
    pinner(tbb::task_arena &a, int masters, std::vector<int> cpus)
        : tbb::task_scheduler_observer(a), masters_(masters), cpus_(std::move(cpus)) {}
    void on_scheduler_entry(bool worker) override
    {
        int i = tbb::this_task_arena::current_thread_index() - masters_;
        cpu_set_t set;

        if (!worker || i < 0 || i >= (int)cpus_.size() || cpus_[(size_t)i] < 0)
            return;
        CPU_ZERO(&set);
        CPU_SET(cpus_[(size_t)i], &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }

private:
    int masters_;
    std::vector<int> cpus_;
};

struct peer_tbb {
    // oneTBB's global pool has hardware_concurrency - 1 workers (it counts
    // on the main thread to take the last CPU): 1 on 2 vCPUs, and an arena
    // of 2 workers would get 1.  This raises the pool to `workers` for as
    // long as the peer lives; declared first, it outlives the arena.
    tbb::global_control workers_allowed;
    tbb::task_arena arena;
    tbb::task_group group; // peer_tbb_run()'s jobs
    std::unique_ptr<pinner> pin;
    peer_tbb(int workers, int masters)
        : workers_allowed(tbb::global_control::max_allowed_parallelism, (size_t)workers + 1),
          arena(workers + masters, (unsigned)masters) {}
};

static thread_local const peer_tbb *in_arena;
static thread_local size_t ran_on_thread; // peer_tbb_batch() jobs run by this thread

static int64_t now_ns()
{
    timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

extern "C" int peer_tbb_create(peer_tbb **out, int workers, int masters, const int *cpus)
{
    try {
        peer_tbb *t = new peer_tbb(workers, masters);
        t->arena.initialize(); // start-up cost outside the measurement
        if (cpus) {
            t->pin.reset(new pinner(t->arena, masters, std::vector<int>(cpus, cpus + workers)));
            t->pin->observe(true);
        }
        *out = t;
        return 0;
    } catch (...) {
        return -1;
    }
}

extern "C" void peer_tbb_batch(peer_tbb *t, void (*fn)(void *rec), char *base, size_t stride,
                               size_t n, int64_t *submit_ns, size_t *ran_here)
{
    size_t before = ran_on_thread;

    t->arena.execute([&] {
        tbb::task_group tg;
        int64_t t0 = now_ns();
        for (size_t i = 0; i < n; i++) {
            void *rec = base + i * stride;
            tg.run([fn, rec] {
                fn(rec);
                ran_on_thread++; // this thread's own counter: no sharing
            });
        }
        *submit_ns = now_ns() - t0;
        tg.wait();
    });
    *ran_here = ran_on_thread - before;
}

extern "C" int peer_tbb_run(peer_tbb *t, void (*fn)(void *arg), void *arg)
{
    try {
        auto job = [t, fn, arg] {
            const peer_tbb *outer = in_arena;
            in_arena = t;
            fn(arg);
            in_arena = outer;
        };
        if (in_arena == t)
            t->group.run(job);
        else
            t->arena.enqueue(t->group.defer(job));
        return 0;
    } catch (...) {
        return -1;
    }
}

extern "C" void peer_tbb_wait(peer_tbb *t)
{
    try {
        t->group.wait();
    } catch (...) {
        std::fprintf(stderr, "peer_tbb_wait: oneTBB threw\n");
    }
}

extern "C" int peer_tbb_thread_index(void)
{
    int i = tbb::this_task_arena::current_thread_index();

    return i == tbb::task_arena::not_initialized ? -1 : i;
}

extern "C" const char *peer_tbb_version(void)
{
    static char buf[64];

    std::snprintf(buf, sizeof buf, "oneTBB %s (runtime interface %d)", TBB_VERSION_STRING,
                  TBB_runtime_interface_version());
    return buf;
}

extern "C" void peer_tbb_destroy(peer_tbb *t)
{
    if (t && t->pin)
        t->pin->observe(false);
    delete t;
}
