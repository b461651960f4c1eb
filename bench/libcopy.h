/* SPDX-License-Identifier: MIT */
/*
 * bench/libcopy.h - loading builds of the library side by side in one
 * process, for the benchmarks that compare two of them rep by rep
 * (rp-bench-lib-ab, rp-bench-sojourn --lib-b).
 */
#ifndef RP_BENCH_LIBCOPY_H
#define RP_BENCH_LIBCOPY_H

#include <stdbool.h>

/* path itself, or path/libroutepool.so when it is a directory; malloc()ed.
 * NULL with errno set when path does not exist or on no memory. */
char *bench_lib_file(const char *path);

/* Whether the two files are one (same device and inode). */
bool bench_lib_same_file(const char *a, const char *b);

/* A private copy of file in /tmp (dlopen() returns the object it already
 * holds for a file loaded before, so a build against itself needs a second
 * file); malloc()ed path, the caller unlinks it once loaded.  NULL with
 * errno set on failure. */
char *bench_lib_copy(const char *file);

/*
 * Whether the loaded object dl calls its own public functions (rp_*)
 * directly, as the library linked with -Bsymbolic-functions does.  A copy
 * that does not reaches them through the PLT, which the dynamic linker
 * binds to the first definition in the process: with another copy linked
 * into the program, this one would run that one's code.  NULL when the
 * object keeps to itself; else the name of the first rp_* function it
 * imports (static storage, the object's own string table).
 */
const char *bench_lib_imports_own(void *dl);

#endif /* RP_BENCH_LIBCOPY_H */
