/* SPDX-License-Identifier: MIT */
/*
 * tools/cluster_demo.h - rp-cluster demo (tools/cluster_demo.c).
 */
#ifndef RP_TOOLS_CLUSTER_DEMO_H
#define RP_TOOLS_CLUSTER_DEMO_H

#include <stdbool.h>

/**
 * Run the demo: a throwaway redis-server on a free loopback port, three
 * rp-node processes (found next to argv0's executable) with the built-in
 * @demo handlers, a mixed workload through each cluster router, one node
 * killed with SIGKILL halfway, and a per-node account of what ran.
 * @return the exit status: 0 when every job ran, 1 otherwise.
 */
int cluster_demo_run(bool quick, const char *argv0);

#endif /* RP_TOOLS_CLUSTER_DEMO_H */
