/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_TEST_USAGE_H
#define DPIB_TEST_USAGE_H

/*
 * What a process holds, for tests that destroy objects in bulk and check
 * that nothing is left behind: open descriptors and DPDK heap bytes (with
 * malloc's mallinfo2 and dpib_mbufs_in_use beside them).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <rte_malloc.h>

#include "check.h"

/*
 * Not counted: an inline loop's descriptors of CPUs' idle times
 * (/sys/.../cpuN/cpuidle/stateK/time), which it opens once per CPU the
 * first time it looks whether another CPU is idler (ib_place), only under
 * load and then at any moment: churn_inline beside a CPU hog, 21 -> 23.
 */
static inline int
fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], target[256];
	ssize_t len;
	int n = 0;

	CHECK(d != NULL, "/proc/self/fd: errno %d", errno);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = '\0';
			if (strncmp(target, "/sys/devices/system/cpu/", 24) == 0 &&
			    strstr(target, "/cpuidle/") != NULL)
				continue;
		}
		n++;
	}
	closedir(d);
	return n;
}

static inline size_t
dpdk_heap(void)
{
	struct rte_malloc_socket_stats st;
	size_t n = 0;
	int s;

	for (s = 0; s < RTE_MAX_NUMA_NODES; s++)
		if (rte_malloc_get_socket_stats(s, &st) == 0)
			n += st.heap_allocsz_bytes;
	return n;
}

#endif /* DPIB_TEST_USAGE_H */
