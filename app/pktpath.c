/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The raw packet path between two processes (pktpath.h): ping-pong
 * latency and one-way frame rate over the port of a dpib device.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dpib.h"
#include "pktpath.h"

#define ETHERTYPE	0x88b5
#define MAGIC		0x64706962u	/* "dpib" */
#define BURST		32
#define WARMUP		100
#define RESEND_MS	100
#define WAIT_S		10

enum kind { PING = 1, PONG = 2, EXTRA = 3 };

struct hdr {
	struct rte_ether_hdr eth;
	uint32_t magic, kind, seq;
};

struct counts {
	uint64_t frames, bytes, rx_tsc;	/* first to last arrival */
	uint64_t hz;
};

static void
die(const char *what, int err)
{
	fprintf(stderr, "raw packet path: %s%s%s\n", what, err ? ": " : "",
		err ? strerror(err) : "");
	exit(1);
}

/* ---- control connection ---- */

static void
tcp_send(const struct pkt_path *p, const void *buf, size_t len)
{
	if (write(p->sock, buf, len) != (ssize_t)len)
		die("control connection", errno);
}

static void
tcp_recv(const struct pkt_path *p, void *buf, size_t len, uint32_t secs)
{
	struct pollfd pf = { .fd = p->sock, .events = POLLIN };

	if (poll(&pf, 1, (WAIT_S + (int)secs) * 1000) != 1 ||
	    recv(p->sock, buf, len, MSG_WAITALL) != (ssize_t)len)
		die("control connection: no answer", ETIMEDOUT);
}

/* ---- frames ---- */

static struct rte_mbuf *
frame(const struct pkt_path *p, uint32_t size, uint32_t kind, uint32_t seq)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
	struct hdr *h;

	if (m == NULL)
		return NULL;
	h = (struct hdr *)rte_pktmbuf_append(m, size);
	if (h == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memset(&h->eth.dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
	rte_ether_addr_copy(&p->mac, &h->eth.src_addr);
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

/* @m, and with @extra an ACK-sized frame behind it in the same burst. */
static void
send_one(const struct pkt_path *p, struct rte_mbuf *m, int extra)
{
	uint64_t end = rte_rdtsc() + rte_get_tsc_hz();
	struct rte_mbuf *v[2] = { m, NULL };
	uint16_t n = 1, sent = 0;

	if (extra) {
		v[1] = frame(p, PKT_ACK_FRAME, EXTRA, 0);
		if (v[1] == NULL)
			die("mbuf", ENOBUFS);
		n = 2;
	}
	while (sent < n) {
		sent += rte_eth_tx_burst(p->port, 0, v + sent, n - sent);
		if (sent < n && rte_rdtsc() > end)
			die("the port takes no frame", EIO);
	}
}

/* ---- lat ---- */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * An ACK-sized frame arrived: with -f 2 a side answers only once the one
 * sent behind the ping (or echo) is in too, as an RC side needs both the
 * answer and the ACK of its own request before it goes on.
 */
static int
extra(struct rte_mbuf *m)
{
	return ours(m, EXTRA) != NULL;
}

static void
lat_server(const struct pkt_path *p, const struct pkt_params *prm)
{
	struct rte_mbuf *rx[BURST], *ping = NULL;
	uint32_t echoed = 0, total = prm->iters + WARMUP;
	uint64_t idle = rte_rdtsc(), hz = rte_get_tsc_hz();
	uint64_t pings = 0, extras = 0;
	uint16_t n, i;

	while (echoed < total) {
		n = rte_eth_rx_burst(p->port, 0, rx, BURST);
		for (i = 0; i < n; i++) {
			if (ours(rx[i], PING) == NULL) {
				extras += extra(rx[i]);
				rte_pktmbuf_free(rx[i]);
				continue;
			}
			if (ping != NULL)	/* a resend of it */
				rte_pktmbuf_free(ping);
			ping = rx[i];
			pings++;
		}
		if (ping != NULL && (prm->frames < 2 || extras >= pings)) {
			struct hdr *h = rte_pktmbuf_mtod(ping, struct hdr *);

			h->kind = PONG;
			rte_ether_addr_copy(&p->mac, &h->eth.src_addr);
			send_one(p, ping, prm->frames > 1);
			ping = NULL;
			echoed++;
			idle = rte_rdtsc();
		}
		if (rte_rdtsc() - idle > WAIT_S * hz)
			die("no frame from the client", ETIMEDOUT);
	}
}

static void
lat_client(const struct pkt_path *p, const struct pkt_params *prm,
	   struct pkt_result *r)
{
	uint32_t total = prm->iters + WARMUP, seq;
	uint64_t *t = calloc(prm->iters, sizeof(*t));
	uint64_t hz = rte_get_tsc_hz(), t0, deadline, end;
	struct rte_mbuf *rx[BURST];
	double us = 1e6 / (double)hz / 2;
	uint64_t pongs = 0, extras = 0;
	uint16_t n, i;
	int got, pong;

	if (t == NULL)
		die("memory", ENOMEM);
	end = rte_rdtsc() + (WAIT_S + prm->iters / 1000) * hz;
	for (seq = 0; seq < total; seq++) {
		struct rte_mbuf *m = frame(p, prm->size, PING, seq);

		if (m == NULL)
			die("mbuf", ENOBUFS);
		t0 = rte_rdtsc();
		send_one(p, m, prm->frames > 1);
		deadline = t0 + hz / 1000 * RESEND_MS;
		for (got = 0, pong = 0; !got;) {
			n = rte_eth_rx_burst(p->port, 0, rx, BURST);
			for (i = 0; i < n; i++) {
				struct hdr *h = ours(rx[i], PONG);

				if (h != NULL && h->seq == seq) {
					pong = 1;
					pongs++;
				}
				extras += h == NULL && extra(rx[i]);
				rte_pktmbuf_free(rx[i]);
			}
			/* With -f 2, the echo's ACK-sized frame too. */
			got = pong && (prm->frames < 2 || extras >= pongs);
			if (!got && rte_rdtsc() > deadline) {
				if (rte_rdtsc() > end)
					die("no answer from the server",
					    ETIMEDOUT);
				r->resends++;
				m = frame(p, prm->size, PING, seq);
				if (m == NULL)
					die("mbuf", ENOBUFS);
				send_one(p, m, prm->frames > 1);
				deadline = rte_rdtsc() + hz / 1000 * RESEND_MS;
			}
		}
		if (seq >= WARMUP)
			t[seq - WARMUP] = rte_rdtsc() - t0;
	}
	qsort(t, prm->iters, sizeof(*t), cmp_u64);
	r->min_us = t[0] * us;
	r->typical_us = t[prm->iters / 2] * us;
	r->p99_us = t[prm->iters * 99 / 100] * us;
	r->max_us = t[prm->iters - 1] * us;
	free(t);
}

/* ---- rate ---- */

static void
rate_server(const struct pkt_path *p, const struct pkt_params *prm)
{
	struct counts c = { .hz = rte_get_tsc_hz() };
	uint64_t first = 0, last = 0, idle, stop, check = 0;
	struct rte_mbuf *rx[BURST];
	struct pollfd pf = { .fd = p->sock, .events = POLLIN };
	uint16_t n, i;

	idle = rte_rdtsc();
	stop = 0;
	for (;;) {
		n = rte_eth_rx_burst(p->port, 0, rx, BURST);
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

				tcp_recv(p, &done, sizeof(done), prm->secs);
				stop = rte_rdtsc();
			}
		}
		if (stop && rte_rdtsc() - stop > c.hz / 10)
			break;	/* 100 ms for what was still in flight */
		if (rte_rdtsc() - idle > (WAIT_S + prm->secs) * c.hz)
			die("no frame from the client", ETIMEDOUT);
	}
	c.rx_tsc = last - first;
	tcp_send(p, &c, sizeof(c));
}

static void
rate_client(const struct pkt_path *p, const struct pkt_params *prm,
	    struct pkt_result *r)
{
	struct rte_mbuf *tx[BURST];
	uint64_t hz = rte_get_tsc_hz(), end, sent = 0;
	struct counts c;
	uint32_t done = 1, n = 0, k;
	double secs;

	end = rte_rdtsc() + prm->secs * hz;
	while (rte_rdtsc() < end) {
		while (n < BURST) {
			tx[n] = frame(p, prm->size, PING, (uint32_t)sent + n);
			if (tx[n] == NULL)
				break;
			n++;
		}
		k = rte_eth_tx_burst(p->port, 0, tx, (uint16_t)n);
		sent += k;
		memmove(tx, tx + k, (n - k) * sizeof(tx[0]));
		n -= k;
	}
	rte_pktmbuf_free_bulk(tx, n);
	tcp_send(p, &done, sizeof(done));
	tcp_recv(p, &c, sizeof(c), prm->secs);
	secs = c.rx_tsc ? (double)c.rx_tsc / (double)c.hz : 0;
	r->sent = sent;
	r->received = c.frames;
	r->mpps = secs > 0 ? c.frames / secs / 1e6 : 0;
	r->gbps = secs > 0 ? c.bytes * 8 / secs / 1e9 : 0;
	r->loss = sent ? 1 - (double)c.frames / sent : 0;
}

/* ---- set-up ---- */

void
pkt_path_open(struct pkt_path *p, struct ibv_context *ctx,
	      const char *pool_name)
{
	if (dpib_port_id(ctx, &p->port) != 0)
		die("the device's port", errno ? errno : ENODEV);
	if (rte_eth_macaddr_get(p->port, &p->mac) != 0)
		die("port address", EIO);
	p->pool = rte_pktmbuf_pool_create(pool_name, 8191, 256, 0,
					  PKT_MAX_FRAME + RTE_PKTMBUF_HEADROOM,
					  (int)rte_socket_id());
	if (p->pool == NULL)
		die("mbuf pool", ENOMEM);
}

void
pkt_path_server(struct pkt_path *p)
{
	struct pkt_params prm;

	tcp_recv(p, &prm, sizeof(prm), 0);
	if (prm.size < sizeof(struct hdr) || prm.size > PKT_MAX_FRAME ||
	    prm.iters == 0 || prm.secs == 0 || prm.frames > 2)
		die("the client's parameters", EINVAL);
	if (prm.test == PKT_LAT)
		lat_server(p, &prm);
	else
		rate_server(p, &prm);
}

void
pkt_path_client(struct pkt_path *p, const struct pkt_params *prm,
		struct pkt_result *r)
{
	memset(r, 0, sizeof(*r));
	if (prm->size < sizeof(struct hdr) || prm->size > PKT_MAX_FRAME)
		die("frame size", EINVAL);
	if (prm->frames > 2)
		die("frames each way", EINVAL);
	tcp_send(p, prm, sizeof(*prm));
	if (prm->test == PKT_LAT)
		lat_client(p, prm, r);
	else
		rate_client(p, prm, r);
}
