/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_TEST_TELEMETRY_H
#define DPIB_TEST_TELEMETRY_H

/*
 * The process's own DPDK telemetry socket, as dpdk-telemetry.py reads it:
 * connect, ask, pick a number out of the JSON reply.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <rte_eal.h>

#include "check.h"

/* Connected, the greeting read. */
static inline int
tel_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char hello[1024];
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/dpdk_telemetry.v2",
		 rte_eal_get_runtime_dir());
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0,
	      "connect %s: errno %d", sa.sun_path, errno);
	CHECK(recv(fd, hello, sizeof(hello), 0) > 0, "no greeting");
	return fd;
}

/* One request; the JSON reply (valid until the next). */
static inline const char *
tel_query(int fd, const char *q)
{
	static char buf[65536];
	ssize_t n;

	CHECK(send(fd, q, strlen(q), 0) == (ssize_t)strlen(q), "send %s", q);
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	CHECK(n > 0, "no reply to %s", q);
	buf[n] = '\0';
	return buf;
}

/* The number after "@key": in @json, which must have it. */
static inline uint64_t
json_u64(const char *json, const char *key)
{
	char pat[96];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	CHECK(p != NULL, "no %s in %s", key, json);
	return strtoull(p + strlen(pat), NULL, 10);
}

#endif
