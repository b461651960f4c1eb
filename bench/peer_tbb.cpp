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

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/version.h>

#include <cstdio>
#include <ctime>
#include <new>

struct peer_tbb {
    tbb::task_arena arena;
    tbb::task_group group; // peer_tbb_run()'s jobs
    peer_tbb(int workers, int masters) : arena(workers + masters, (unsigned)masters) {}
};

static thread_local const peer_tbb *in_arena;

static int64_t now_ns()
{
    timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

extern "C" int peer_tbb_create(peer_tbb **out, int workers, int masters)
{
    try {
        peer_tbb *t = new peer_tbb(workers, masters);
        t->arena.initialize(); // start-up cost outside the measurement
        *out = t;
        return 0;
    } catch (...) {
        return -1;
    }
}

extern "C" void peer_tbb_batch(peer_tbb *t, void (*fn)(void *rec), char *base, size_t stride,
                               size_t n, int64_t *submit_ns)
{
    t->arena.execute([&] {
        tbb::task_group tg;
        int64_t t0 = now_ns();
        for (size_t i = 0; i < n; i++) {
            void *rec = base + i * stride;
            tg.run([fn, rec] { fn(rec); });
        }
        *submit_ns = now_ns() - t0;
        tg.wait();
    });
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
    delete t;
}
