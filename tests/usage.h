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
#include <rte_malloc.h>

#include "check.h"

static inline int
fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	CHECK(d != NULL, "/proc/self/fd: errno %d", errno);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
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
