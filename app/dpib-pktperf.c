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
 * starts with the first QP, so this program owns the port's queue 0.
 * Frames are broadcast (no address resolution), EtherType 0x88b5 (local
 * experimental), tagged with a magic; anything else the port brings (ARP)
 * is dropped. Like perftest, the server is started first and the client is
 * given its IPv4 address; a TCP connection carries the parameters and the
 * server's counts.
 *
 *   -t lat   ping-pong: the server echoes each frame; half round trip
 *            (min, typical = median, p99, max) over -n iterations
 *   -t rate  the client sends -s byte frames for -D seconds as fast as the
 *            port takes them; the server counts what arrives: frames/s
 *            and Gbit/s received, and the loss
 *
 * Usage: dpib-pktperf [-t lat|rate] [-s SIZE] [-n ITERS] [-D SECONDS]
 *                     [-p TCPPORT] [--json] [SERVER_IPV4]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dpib.h"

#define ETHERTYPE	0x88b5
#define MAGIC		0x64706962u	/* "dpib" */
#define BURST		32
#define WARMUP		100
#define RESEND_MS	100
#define WAIT_S		10
#define MAX_FRAME	4352	/* what dpib's own mbufs hold */

enum kind { PING = 1, PONG = 2 };

struct hdr {
	struct rte_ether_hdr eth;
	uint32_t magic, kind, seq;
};

/* What the client tells the server, and what the server answers. */
struct params {
	uint32_t test, size, iters, secs;
};

struct counts {
	uint64_t frames, bytes, rx_tsc;	/* first to last arrival */
	uint64_t hz;
};

static struct {
	int server, json, sock;
	const char *test;
	struct params p;
	uint16_t port;
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
} G;

static void
die(const char *what, int err)
{
	fprintf(stderr, "dpib-pktperf: %s%s%s\n", what, err ? ": " : "",
		err ? strerror(err) : "");
	exit(1);
}

/* ---- control connection ---- */

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
tcp_send(const void *p, size_t len)
{
	if (write(G.sock, p, len) != (ssize_t)len)
		die("control connection", errno);
}

static void
tcp_recv(void *p, size_t len)
{
	struct pollfd pf = { .fd = G.sock, .events = POLLIN };

	if (poll(&pf, 1, (WAIT_S + (int)G.p.secs) * 1000) != 1 ||
	    recv(G.sock, p, len, MSG_WAITALL) != (ssize_t)len)
		die("control connection: no answer", ETIMEDOUT);
}

/* ---- frames ---- */

static struct rte_mbuf *
frame(uint32_t kind, uint32_t seq)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(G.pool);
	struct hdr *h;

	if (m == NULL)
		return NULL;
	h = (struct hdr *)rte_pktmbuf_append(m, G.p.size);
	if (h == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memset(&h->eth.dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
	rte_ether_addr_copy(&G.mac, &h->eth.src_addr);
	h->eth.ether_type = rte_cpu_to_be_16(ETHERTYPE);
	h->magic = MAGIC;
	h->kind = kind;
	h->seq = seq;
	return m;
}

/* Ours, of @kind: its header; else NULL (and the caller frees it). */
static struct hdr *
ours(struct rte_mbuf *m, uint32_t kind)
{
	struct hdr *h = rte_pktmbuf_mtod(m, struct hdr *);

	if (rte_pktmbuf_data_len(m) < sizeof(*h) ||
	    h->eth.ether_type != rte_cpu_to_be_16(ETHERTYPE) ||
	    h->magic != MAGIC || h->kind != kind)
		return NULL;
	return h;
}

static void
send_one(struct rte_mbuf *m)
{
	uint64_t end = rte_rdtsc() + rte_get_tsc_hz();

	while (rte_eth_tx_burst(G.port, 0, &m, 1) == 0)
		if (rte_rdtsc() > end)
			die("the port takes no frame", EIO);
}

/* ---- lat ---- */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
lat_server(void)
{
	struct rte_mbuf *rx[BURST];
	uint32_t echoed = 0, total = G.p.iters + WARMUP;
	uint64_t idle = rte_rdtsc(), hz = rte_get_tsc_hz();
	uint16_t n, i;

	while (echoed < total) {
		n = rte_eth_rx_burst(G.port, 0, rx, BURST);
		for (i = 0; i < n; i++) {
			struct hdr *h = ours(rx[i], PING);

			if (h == NULL) {
				rte_pktmbuf_free(rx[i]);
				continue;
			}
			h->kind = PONG;
			rte_ether_addr_copy(&G.mac, &h->eth.src_addr);
			send_one(rx[i]);
			echoed++;
			idle = rte_rdtsc();
		}
		if (rte_rdtsc() - idle > WAIT_S * hz)
			die("no frame from the client", ETIMEDOUT);
	}
}

static void
lat_client(void)
{
	uint32_t total = G.p.iters + WARMUP, seq, resends = 0;
	uint64_t *t = calloc(G.p.iters, sizeof(*t));
	uint64_t hz = rte_get_tsc_hz(), t0, deadline, end;
	struct rte_mbuf *rx[BURST];
	double us = 1e6 / (double)hz / 2;
	uint16_t n, i;
	int got;

	if (t == NULL)
		die("memory", ENOMEM);
	end = rte_rdtsc() + (WAIT_S + G.p.iters / 1000) * hz;
	for (seq = 0; seq < total; seq++) {
		struct rte_mbuf *m = frame(PING, seq);

		if (m == NULL)
			die("mbuf", ENOBUFS);
		t0 = rte_rdtsc();
		send_one(m);
		deadline = t0 + hz / 1000 * RESEND_MS;
		for (got = 0; !got;) {
			n = rte_eth_rx_burst(G.port, 0, rx, BURST);
			for (i = 0; i < n; i++) {
				struct hdr *h = ours(rx[i], PONG);

				got |= h != NULL && h->seq == seq;
				rte_pktmbuf_free(rx[i]);
			}
			if (!got && rte_rdtsc() > deadline) {
				if (rte_rdtsc() > end)
					die("no answer from the server",
					    ETIMEDOUT);
				resends++;
				m = frame(PING, seq);
				send_one(m);
				deadline = rte_rdtsc() + hz / 1000 * RESEND_MS;
			}
		}
		if (seq >= WARMUP)
			t[seq - WARMUP] = rte_rdtsc() - t0;
	}
	qsort(t, G.p.iters, sizeof(*t), cmp_u64);
	if (G.json)
		printf("{\"test\":\"lat\",\"size\":%u,\"iterations\":%u,"
		       "\"min_us\":%.3f,\"typical_us\":%.3f,\"p99_us\":%.3f,"
		       "\"max_us\":%.3f,\"resends\":%u}\n", G.p.size,
		       G.p.iters, t[0] * us, t[G.p.iters / 2] * us,
		       t[G.p.iters * 99 / 100] * us, t[G.p.iters - 1] * us,
		       resends);
	else
		printf("raw ping-pong, %u B frames, %u iterations: half round "
		       "trip min %.2f typical %.2f p99 %.2f max %.2f us%s\n",
		       G.p.size, G.p.iters, t[0] * us, t[G.p.iters / 2] * us,
		       t[G.p.iters * 99 / 100] * us, t[G.p.iters - 1] * us,
		       resends ? " (with resends)" : "");
	free(t);
}

/* ---- rate ---- */

static void
rate_server(void)
{
	struct counts c = { .hz = rte_get_tsc_hz() };
	uint64_t first = 0, last = 0, idle, stop, check = 0;
	struct rte_mbuf *rx[BURST];
	struct pollfd pf = { .fd = G.sock, .events = POLLIN };
	uint16_t n, i;

	idle = rte_rdtsc();
	stop = 0;
	for (;;) {
		n = rte_eth_rx_burst(G.port, 0, rx, BURST);
		for (i = 0; i < n; i++) {
			if (ours(rx[i], PING) != NULL) {
				last = rte_rdtsc();
				if (first == 0)
					first = last;
				c.frames++;
				c.bytes += rte_pktmbuf_pkt_len(rx[i]);
			}
			rte_pktmbuf_free(rx[i]);
		}
		if (n > 0)
			idle = rte_rdtsc();
		/* The client says when it stopped sending (looked for
		 * every millisecond: a system call).
		 */
		if (stop == 0 && rte_rdtsc() > check) {
			check = rte_rdtsc() + c.hz / 1000;
			if (poll(&pf, 1, 0) == 1) {
				uint32_t done;

				tcp_recv(&done, sizeof(done));
				stop = rte_rdtsc();
			}
		}
		if (stop && rte_rdtsc() - stop > c.hz / 10)
			break;	/* 100 ms for what was still in flight */
		if (rte_rdtsc() - idle > (WAIT_S + G.p.secs) * c.hz)
			die("no frame from the client", ETIMEDOUT);
	}
	c.rx_tsc = last - first;
	tcp_send(&c, sizeof(c));
}

static void
rate_client(void)
{
	struct rte_mbuf *tx[BURST];
	uint64_t hz = rte_get_tsc_hz(), end, sent = 0;
	struct counts c;
	uint32_t done = 1, n = 0, k;
	double secs, mpps;

	end = rte_rdtsc() + G.p.secs * hz;
	while (rte_rdtsc() < end) {
		while (n < BURST) {
			tx[n] = frame(PING, (uint32_t)sent + n);
			if (tx[n] == NULL)
				break;
			n++;
		}
		k = rte_eth_tx_burst(G.port, 0, tx, (uint16_t)n);
		sent += k;
		memmove(tx, tx + k, (n - k) * sizeof(tx[0]));
		n -= k;
	}
	rte_pktmbuf_free_bulk(tx, n);
	tcp_send(&done, sizeof(done));
	tcp_recv(&c, sizeof(c));
	secs = c.rx_tsc ? (double)c.rx_tsc / (double)c.hz : 0;
	mpps = secs > 0 ? c.frames / secs / 1e6 : 0;
	if (G.json)
		printf("{\"test\":\"rate\",\"size\":%u,\"seconds\":%u,"
		       "\"sent\":%lu,\"received\":%lu,\"mpps\":%.4f,"
		       "\"gbps\":%.3f,\"loss\":%.6f}\n", G.p.size, G.p.secs,
		       (unsigned long)sent, (unsigned long)c.frames, mpps,
		       secs > 0 ? c.bytes * 8 / secs / 1e9 : 0,
		       sent ? 1 - (double)c.frames / sent : 0);
	else
		printf("raw frames, %u B, %u s: sent %lu, received %lu "
		       "(%.2f %% lost): %.3f M frames/s, %.2f Gbit/s\n",
		       G.p.size, G.p.secs, (unsigned long)sent,
		       (unsigned long)c.frames,
		       sent ? 100.0 * (1 - (double)c.frames / sent) : 0, mpps,
		       secs > 0 ? c.bytes * 8 / secs / 1e9 : 0);
}

/* ---- set-up ---- */

static void
open_port(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;

	if (list == NULL || list[0] == NULL)
		die("no dpib device (DPIB_CONF)", ENODEV);
	ctx = ibv_open_device(list[0]);
	if (ctx == NULL || dpib_port_id(ctx, &G.port) != 0)
		die("open the device", errno);
	if (rte_eth_macaddr_get(G.port, &G.mac) != 0)
		die("port address", EIO);
	G.pool = rte_pktmbuf_pool_create("pktperf", 8191, 256, 0,
					 MAX_FRAME + RTE_PKTMBUF_HEADROOM,
					 (int)rte_socket_id());
	if (G.pool == NULL)
		die("mbuf pool", ENOMEM);
	ibv_free_device_list(list);
}

static void
usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-t lat|rate] [-s SIZE] [-n ITERS] "
		"[-D SECONDS] [-p TCPPORT] [--json] [SERVER_IPV4]\n", prog);
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' }, { NULL, 0, NULL, 0 } };
	uint16_t tport = 18517;
	int c;

	G.p = (struct params){ .test = 0, .size = 64, .iters = 10000,
			       .secs = 2 };
	while ((c = getopt_long(argc, argv, "t:s:n:D:p:", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			if (strcmp(optarg, "lat") == 0)
				G.p.test = 0;
			else if (strcmp(optarg, "rate") == 0)
				G.p.test = 1;
			else
				usage(argv[0]);
			break;
		case 's':
			G.p.size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			G.p.iters = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'D':
			G.p.secs = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			tport = (uint16_t)strtoul(optarg, NULL, 0);
			break;
		case 'j':
			G.json = 1;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (G.p.size < sizeof(struct hdr) || G.p.size > MAX_FRAME ||
	    G.p.iters == 0 || G.p.secs == 0 || optind + 1 < argc)
		usage(argv[0]);
	G.server = optind == argc;
	open_port();
	G.sock = tcp_open(G.server ? NULL : argv[optind], tport);
	/* The client's parameters win, as in perftest. */
	if (G.server)
		tcp_recv(&G.p, sizeof(G.p));
	else
		tcp_send(&G.p, sizeof(G.p));
	if (G.p.test == 0)
		G.server ? lat_server() : lat_client();
	else
		G.server ? rate_server() : rate_client();
	close(G.sock);
	return 0;
}
