/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_TEST_MEMIF_PAIR_H
#define DPIB_TEST_MEMIF_PAIR_H

/*
 * Two devices in one process joined by a memif link (DESIGN.md, two hosts
 * on one machine): dpib0 (192.0.2.1, server) and dpib1 (192.0.2.2,
 * client), Ethernet MTU 1500. The configuration file and the socket are
 * named after @tag and the pid, and removed at exit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_util.h"

static char memif_conf_path[64], memif_sock_path[64];

static void
memif_pair_remove(void)
{
	unlink(memif_conf_path);
	unlink(memif_sock_path);
}

/* Write the pair's configuration, @extra lines in each device section,
 * and point DPIB_CONF at it.
 */
static inline void
memif_pair_config_with(const char *tag, const char *extra)
{
	FILE *f;

	snprintf(memif_conf_path, sizeof(memif_conf_path),
		 "/tmp/dpib-%s-%d.conf", tag, getpid());
	snprintf(memif_sock_path, sizeof(memif_sock_path),
		 "/tmp/dpib-%s-%d.sock", tag, getpid());
	f = fopen(memif_conf_path, "w");
	CHECK(f != NULL, "config file");
	fprintf(f, "[device dpib0]\nport = net_memif0,role=server,socket=%s,"
		"socket-abstract=no,id=0\nip = 192.0.2.1\nmtu = 1500\n%s"
		"[device dpib1]\nport = net_memif1,role=client,socket=%s,"
		"socket-abstract=no,id=0\nip = 192.0.2.2\nmtu = 1500\n%s",
		memif_sock_path, extra, memif_sock_path, extra);
	fclose(f);
	atexit(memif_pair_remove);
	setenv("DPIB_CONF", memif_conf_path, 1);
}

static inline void
memif_pair_config(const char *tag)
{
	memif_pair_config_with(tag, "");
}

/* Open @dev and wait (10 s at most) for its port: a memif link comes up
 * once both ends have met.
 */
static inline struct ibv_context *
open_when_active(struct ibv_device *dev)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_port_attr pa;
	double end = check_now() + 10;

	CHECK(ctx != NULL, "open %s", ibv_get_device_name(dev));
	do {
		CHECK(ibv_query_port(ctx, 1, &pa) == 0, "query_port");
	} while (pa.state != IBV_PORT_ACTIVE && check_now() < end);
	CHECK(pa.state == IBV_PORT_ACTIVE, "%s: port not active",
	      ibv_get_device_name(dev));
	return ctx;
}

/*
 * The memif regions this process maps (the rings and their buffers) whose
 * every page is resident: the device populated them once its link came
 * up (hca_port_linked), rather than fault each in at the frame that first
 * used its ring slot. Returns how many such mappings; -1 when one is not.
 */
static inline int
memif_regions_resident(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	long size = -1, rss;
	int in = 0, n = 0;

	CHECK(f != NULL, "smaps");
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strchr(line, '-') != NULL && strchr(line, ':') != NULL &&
		    line[0] != ' ' && strstr(line, "kB") == NULL) {
			in = strstr(line, "memif_region") != NULL;
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "Size: %ld kB", &size) == 1)
			continue;
		if (sscanf(line, "Rss: %ld kB", &rss) == 1) {
			if (rss != size) {
				fclose(f);
				return -1;
			}
			n++;
		}
	}
	fclose(f);
	return n;
}

#endif /* DPIB_TEST_MEMIF_PAIR_H */
