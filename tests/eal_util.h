/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_EAL_UTIL_H
#define DPIB_EAL_UTIL_H

/*
 * EAL for the tests that drive the driver below the verbs (no dpib
 * library): no hugepages, no shared config, lcore 0 only, a file prefix of
 * this process; eal_down removes everything EAL left behind.
 */

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>

#include "check.h"

static char eal_runtime_dir[PATH_MAX];
static int eal_running;

/* @tag makes the file prefix: <tag><pid>. */
static inline void
eal_up(const char *prog, const char *tag)
{
	char prefix[64];
	char *argv[] = {
		(char *)prog, "--no-huge", "--no-shconf", "-m", "64",
		"--no-pci", prefix, "--log-level=lib.*:error", "-l", "0",
	};
	int ret;

	snprintf(prefix, sizeof(prefix), "--file-prefix=%s%d", tag, getpid());
	ret = rte_eal_init(RTE_DIM(argv), argv);
	CHECK(ret >= 0, "rte_eal_init: %d (rte_errno %d)", ret, rte_errno);
	snprintf(eal_runtime_dir, sizeof(eal_runtime_dir), "%s",
		 rte_eal_get_runtime_dir());
	eal_running = 1;
}

/* EAL leaves its runtime directory behind; a test must leave nothing. */
static inline void
eal_down(void)
{
	struct dirent *e;
	char *slash;
	DIR *d;

	if (!eal_running)
		return;
	eal_running = 0;
	rte_eal_cleanup();
	d = opendir(eal_runtime_dir);
	if (d != NULL) {
		while ((e = readdir(d)) != NULL) {
			char path[PATH_MAX + 256];

			if (strcmp(e->d_name, ".") == 0 ||
			    strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", eal_runtime_dir,
				 e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(eal_runtime_dir);
	/* Other processes may still use the parent; then it is not empty. */
	slash = strrchr(eal_runtime_dir, '/');
	if (slash != NULL && slash != eal_runtime_dir) {
		*slash = '\0';
		rmdir(eal_runtime_dir);
	}
}

#endif /* DPIB_EAL_UTIL_H */
