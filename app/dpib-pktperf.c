/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * dpib-pktperf: the raw DPDK packet path between two processes, over the
 * same port a dpib device uses: the baseline dpib's two-process figures are
 * compared with (perftest over dpib against frames over the same ports).
 *
 * It opens the configuration's first device through verbs, which brings up
 * EAL and the port exactly as dpib does, and creates no QP: dpib's engine
 * starts with the first QP, so this program owns the port's queue 0 (the
 * frames: pktpath.h). Like perftest, the server is started first and the
 * client is given its IPv4 address; a TCP connection carries the
 * parameters and the server's counts.
 *
 *   -t lat   ping-pong: the server echoes each frame; half round trip
 *            (min, typical = median, p99, max) over -n iterations;
 *            -f 2 sends an ACK-sized frame in the same burst as each
 *            ping and echo: the floor of an RC ping-pong (pktpath.h)
 *   -t rate  the client sends -s byte frames for -D seconds as fast as the
 *            port takes them; the server counts what arrives: frames/s
 *            and Gbit/s received, and the loss
 *
 * Usage: dpib-pktperf [-t lat|rate] [-s SIZE] [-n ITERS] [-f 1|2]
 *                     [-D SECONDS] [-p TCPPORT] [--json] [SERVER_IPV4]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "pktpath.h"

static void
die(const char *what, int err)
{
	fprintf(stderr, "dpib-pktperf: %s%s%s\n", what, err ? ": " : "",
		err ? strerror(err) : "");
	exit(1);
}

static int
tcp_open(const char *ip, uint16_t tport)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(tport) };
	int one = 1, s, l, i;

	if (ip == NULL) {
		l = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 ||
		    listen(l, 1) != 0)
			die("listen", errno);
		s = accept(l, NULL, NULL);
		close(l);
		if (s < 0)
			die("accept", errno);
		return s;
	}
	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		die("server address", EINVAL);
	for (i = 0; i < 100; i++) {	/* 10 s for the server to listen */
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
			return s;
		close(s);
		usleep(100000);
	}
	die("cannot reach the server", ETIMEDOUT);
	return -1;
}

static void
print(const struct pkt_params *p, const struct pkt_result *r, int json)
{
	if (p->test == PKT_LAT && json)
		printf("{\"test\":\"lat\",\"size\":%u,\"iterations\":%u,"
		       "\"frames\":%u,\"min_us\":%.3f,\"typical_us\":%.3f,"
		       "\"p99_us\":%.3f,\"max_us\":%.3f,\"resends\":%u}\n",
		       p->size, p->iters, p->frames, r->min_us, r->typical_us,
		       r->p99_us, r->max_us, r->resends);
	else if (p->test == PKT_LAT)
		printf("raw ping-pong, %u B frames%s, %u iterations: half "
		       "round trip min %.2f typical %.2f p99 %.2f max %.2f us%s"
		       "\n", p->size, p->frames > 1 ?
		       " and an ACK-sized one each way" : "", p->iters,
		       r->min_us, r->typical_us, r->p99_us, r->max_us,
		       r->resends ? " (with resends)" : "");
	else if (json)
		printf("{\"test\":\"rate\",\"size\":%u,\"seconds\":%u,"
		       "\"sent\":%lu,\"received\":%lu,\"mpps\":%.4f,"
		       "\"gbps\":%.3f,\"loss\":%.6f}\n", p->size, p->secs,
		       (unsigned long)r->sent, (unsigned long)r->received,
		       r->mpps, r->gbps, r->loss);
	else
		printf("raw frames, %u B, %u s: sent %lu, received %lu "
		       "(%.2f %% lost): %.3f M frames/s, %.2f Gbit/s\n",
		       p->size, p->secs, (unsigned long)r->sent,
		       (unsigned long)r->received, 100.0 * r->loss, r->mpps,
		       r->gbps);
}

static void
usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-t lat|rate] [-s SIZE] [-n ITERS] "
		"[-f 1|2] [-D SECONDS] [-p TCPPORT] [--json] [SERVER_IPV4]\n",
		prog);
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' }, { NULL, 0, NULL, 0 } };
	struct pkt_params prm = { .test = PKT_LAT, .size = 64, .iters = 10000,
				  .secs = 2, .frames = 1 };
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct pkt_result r;
	struct pkt_path path;
	uint16_t tport = 18517;
	int c, json = 0, server;

	while ((c = getopt_long(argc, argv, "t:s:n:f:D:p:", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			if (strcmp(optarg, "lat") == 0)
				prm.test = PKT_LAT;
			else if (strcmp(optarg, "rate") == 0)
				prm.test = PKT_RATE;
			else
				usage(argv[0]);
			break;
		case 's':
			prm.size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			prm.iters = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'f':
			prm.frames = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'D':
			prm.secs = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			tport = (uint16_t)strtoul(optarg, NULL, 0);
			break;
		case 'j':
			json = 1;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (prm.size < PKT_MIN_FRAME || prm.size > PKT_MAX_FRAME || prm.iters == 0 ||
	    prm.secs == 0 || prm.frames < 1 || prm.frames > 2 ||
	    optind + 1 < argc)
		usage(argv[0]);
	server = optind == argc;
	list = ibv_get_device_list(NULL);
	if (list == NULL || list[0] == NULL)
		die("no dpib device (DPIB_CONF)", ENODEV);
	ctx = ibv_open_device(list[0]);
	if (ctx == NULL)
		die("open the device", errno);
	ibv_free_device_list(list);
	pkt_path_open(&path, ctx, "pktperf");
	path.sock = tcp_open(server ? NULL : argv[optind], tport);
	if (server) {
		pkt_path_server(&path);
	} else {
		pkt_path_client(&path, &prm, &r);
		print(&prm, &r, json);
	}
	close(path.sock);
	return 0;
}
