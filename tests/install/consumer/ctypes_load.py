# SPDX-License-Identifier: MIT
"""ctypes_load.py - load the installed libroutepool with Python's ctypes.

    python3 ctypes_load.py LIBRARY_PATH        exit 0 on success

The way a Python program uses a C library: ctypes.CDLL() the installed
libroutepool.so.0.1 with no environment setting (tests/install/run.sh unsets
LD_PRELOAD and GLIBC_TUNABLES), check rp_version(), create a pool with the
default options, submit 1000 jobs whose function is a Python callback (run
on the routee threads; ctypes takes the GIL), wait for idle, check that every
job ran, destroy.  Before issue 17 the load itself failed ("libjemalloc.so.2:
cannot allocate memory in static TLS block").
"""
import ctypes
import sys
import threading


def main() -> int:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} LIBRARY_PATH", file=sys.stderr)
        return 2
    lib = ctypes.CDLL(sys.argv[1])
    lib.rp_version.restype = ctypes.c_char_p
    lib.rp_pool_create.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    job_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
    lib.rp_pool_submit.argtypes = [ctypes.c_void_p, job_fn, ctypes.c_void_p]
    lib.rp_pool_wait_idle.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rp_pool_destroy.argtypes = [ctypes.c_void_p]

    ran = 0
    lock = threading.Lock()

    def job(ctx, arg):
        nonlocal ran
        with lock:
            ran += 1

    cb = job_fn(job)  # kept alive until the pool is destroyed
    pool = ctypes.c_void_p()
    rc = lib.rp_pool_create(ctypes.byref(pool), None)
    if rc != 0:
        print(f"ctypes: rp_pool_create returned {rc}", file=sys.stderr)
        return 1
    for i in range(1000):
        rc = lib.rp_pool_submit(pool, cb, None)
        if rc != 0:
            print(f"ctypes: rp_pool_submit returned {rc} at job {i}", file=sys.stderr)
            return 1
    rc = lib.rp_pool_wait_idle(pool, 30000)
    lib.rp_pool_destroy(pool)
    if rc != 0 or ran != 1000:
        print(f"ctypes: wait_idle {rc}, {ran} of 1000 jobs ran", file=sys.stderr)
        return 1
    print(f"ctypes: routepool {lib.rp_version().decode()} loaded, 1000 of 1000 jobs ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
