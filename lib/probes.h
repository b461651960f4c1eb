/* SPDX-License-Identifier: MIT */
/*
 * probes.h - USDT static probes (provider "routepool").  Private.
 *
 * Built on <sys/sdt.h> (Debian: systemtap-sdt-dev) when it is there, and
 * compiled out otherwise (or with -DRP_NO_USDT).  A probe site is a nop
 * until a tracer (perf, bpftrace, systemtap) attaches to it: zero cost when
 * not traced beyond placing the arguments.  docs/profiling.md lists them.
 */
#ifndef RP_PROBES_H
#define RP_PROBES_H

#if !defined(RP_NO_USDT) && defined(__has_include)
#if __has_include(<sys/sdt.h>)
#include <sys/sdt.h>
#define RP_HAVE_USDT 1
#endif
#endif

#ifdef RP_HAVE_USDT
#define RP_PROBE2(name, a, b) DTRACE_PROBE2(routepool, name, a, b)
#define RP_PROBE3(name, a, b, c) DTRACE_PROBE3(routepool, name, a, b, c)
#define RP_PROBE4(name, a, b, c, d) DTRACE_PROBE4(routepool, name, a, b, c, d)
#else
#define RP_PROBE2(name, a, b) ((void)0)
#define RP_PROBE3(name, a, b, c) ((void)0)
#define RP_PROBE4(name, a, b, c, d) ((void)0)
#endif

#endif /* RP_PROBES_H */
