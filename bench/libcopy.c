/* SPDX-License-Identifier: MIT */
/*
 * bench/libcopy.c - loading builds of the library side by side
 * (libcopy.h).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcopy.h"

#if __ELF_NATIVE_CLASS == 64
#define R_SYM ELF64_R_SYM
#define ST_TYPE ELF64_ST_TYPE
#else
#define R_SYM ELF32_R_SYM
#define ST_TYPE ELF32_ST_TYPE
#endif

char *bench_lib_file(const char *path)
{
    struct stat st;
    char *out;

    if (stat(path, &st) != 0)
        return NULL;
    if (!S_ISDIR(st.st_mode))
        return strdup(path);
    if (asprintf(&out, "%s/libroutepool.so", path) < 0) {
        errno = ENOMEM;
        return NULL;
    }
    return out;
}

bool bench_lib_same_file(const char *a, const char *b)
{
    struct stat sa, sb;

    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

char *bench_lib_copy(const char *file)
{
    char tmpl[] = "/tmp/rp-lib-copy-XXXXXX.so", buf[65536];
    int in = open(file, O_RDONLY), out = mkstemps(tmpl, 3), err = 0;
    ssize_t k;

    if (in < 0 || out < 0)
        err = errno;
    while (!err && (k = read(in, buf, sizeof buf)) != 0)
        if (k < 0 || write(out, buf, (size_t)k) != k)
            err = errno ? errno : EIO;
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0 && !err)
        err = errno;
    if (err) {
        if (out >= 0)
            unlink(tmpl);
        errno = err;
        return NULL;
    }
    return strdup(tmpl);
}

/* A dynamic-section address: glibc rewrites most of them to absolute
 * addresses where the section is writable (x86-64), not everywhere. */
static const void *dyn_ptr(const struct link_map *lm, ElfW(Addr) p)
{
    return (const void *)(p < lm->l_addr ? p + lm->l_addr : p);
}

/* The first rp_* function named by n relocations at rel, or NULL. */
static const char *own_import(const ElfW(Rela) *rel, size_t n, const ElfW(Sym) *sym,
                              const char *str)
{
    for (size_t i = 0; i < n; i++) {
        const ElfW(Sym) *s = &sym[R_SYM(rel[i].r_info)];
        const char *name = str + s->st_name;
        if (R_SYM(rel[i].r_info) != 0 && ST_TYPE(s->st_info) == STT_FUNC &&
            strncmp(name, "rp_", 3) == 0)
            return name;
    }
    return NULL;
}

const char *bench_lib_imports_own(void *dl)
{
    struct link_map *lm;
    const ElfW(Sym) *sym = NULL;
    const char *str = NULL, *hit;
    const ElfW(Rela) *plt = NULL, *rela = NULL;
    size_t pltsz = 0, relasz = 0;

    if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) != 0)
        return "(no link map)";
    for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: sym = dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_STRTAB: str = dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_JMPREL: plt = dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: pltsz = d->d_un.d_val / sizeof(ElfW(Rela)); break;
        case DT_RELA: rela = dyn_ptr(lm, d->d_un.d_ptr); break;
        case DT_RELASZ: relasz = d->d_un.d_val / sizeof(ElfW(Rela)); break;
        default: break;
        }
    }
    if (!sym || !str)
        return "(no dynamic symbol table)";
    if (plt && (hit = own_import(plt, pltsz, sym, str)))
        return hit;
    return rela ? own_import(rela, relasz, sym, str) : NULL;
}
