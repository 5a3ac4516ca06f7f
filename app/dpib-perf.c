/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * dpib-perf: perftest-style benchmarks on one dpib device (two RC QPs
 * looped back through the device's port), each measured beside the raw
 * DPDK packet path of the same port type in the same run:
 *
 *   write_rate  RDMA WRITE message rate        vs raw frames/s of that size
 *   send_lat    SEND ping-pong, half round trip vs raw one-way frame latency
 *   write_bw    RDMA WRITE bandwidth            vs raw MTU frames, same bytes
 *   aw_rate     ATOMIC WRITE (IBA 1.5) rate     vs raw 8-byte frames/s
 *   mw_rate     RDMA WRITE rate through a type 1 memory window, vs the same
 *               raw frames as write_rate (the cost of the window checks)
 *   qp_scale    RDMA WRITE message rate with 2 .. 16K QPs, every requester
 *               with WRs outstanding, vs the rate with one pair (-Q)
 *   engines     RDMA WRITE message rate with 1 .. N engines (-E), each
 *               driven inline by an application thread of its own with
 *               its own CQ and pair, vs one engine (each count in a
 *               process of its own: engines are set at start-up)
 *
 * Each figure is the median of several repetitions; in each, the raw path
 * and dpib run back to back on the same lcore (the engine lends it to the
 * raw path's worker), and dpib/raw is the median of those pairs' ratios.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dpib.h"
#include "dpib-perf-perftest.h"

#define RAW_PORT	"net_ring_raw"	/* short: the PMD names its rings after it */
#define RAW_HDR		(14 + 20 + 8 + 12 + 16)	/* Eth IP UDP BTH RETH */
#define BURST		32
#define MAX_OUTSTANDING	512

struct opts {
	uint32_t iters;
	uint32_t reps;
	uint32_t rate_size;
	uint32_t lat_size;
	uint32_t bw_size;
	uint32_t outstanding;
};

struct bench {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	uint8_t *buf;
	size_t len;
	struct ibv_mr *mr;
	struct ibv_mw *mw;	/* over the target half of buf, remote write */
	uint32_t mtu;
	/* Raw path. */
	uint16_t raw_a, raw_b;
	struct rte_mempool *raw_pool;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
die(const char *what, int err)
{
	fprintf(stderr, "dpib-perf: %s: %s\n", what, strerror(err));
	exit(1);
}

/*
 * A comma-separated list of numbers in [lo, hi] (-S, -E, -Q), at most
 * @max of them, into @out; returns how many. Anything else ends the run.
 */
static uint32_t
parse_list(const char *opt, const char *list, uint32_t lo, uint32_t hi,
	   uint32_t *out, uint32_t max)
{
	const char *p = list;
	uint32_t n = 0;
	char *end;

	while (*p != '\0') {
		unsigned long v = strtoul(p, &end, 0);

		if (end == p || v < lo || v > hi || n == max ||
		    (*end != ',' && *end != '\0')) {
			fprintf(stderr, "dpib-perf: %s %s: up to %u numbers "
				"%u .. %u, comma-separated\n", opt, list, max,
				lo, hi);
			exit(1);
		}
		out[n++] = (uint32_t)v;
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

static void
qp_up(struct bench *b, struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	int err;

	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err)
		die("modify to INIT", err);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	/* RoCE addresses by GID: the device itself, GID 0. */
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.hop_limit = 64;
	err = ibv_query_gid(qp->context, 1, 0, &a.ah_attr.grh.dgid);
	if (err)
		die("ibv_query_gid", err);
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (err)
		die("modify to RTR", err);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (err)
		die("modify to RTS", err);
}

/*
 * -d: the device by name (perftest's option); the first one without it.
 * The pairs loop through the device itself: a loopback device.
 */
static const char *dev_name;
static char dev_label[64] = "dpib0";
static int dev_icrc = 1;	/* dpib_icrc() of the device */

/* Device, PD and MR; no QP yet, so no engine. */
static void
bench_open(struct bench *b)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	int i = 0;

	if (list == NULL || list[0] == NULL)
		die("no dpib device", errno ? errno : ENODEV);
	while (dev_name != NULL && list[i] != NULL &&
	       strcmp(ibv_get_device_name(list[i]), dev_name) != 0)
		i++;
	if (list[i] == NULL)
		die(dev_name, ENODEV);
	snprintf(dev_label, sizeof(dev_label), "%s",
		 ibv_get_device_name(list[i]));
	b->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (b->ctx == NULL || ibv_query_port(b->ctx, 1, &pa) != 0)
		die("open device", errno);
	b->mtu = 128u << pa.active_mtu;
	dev_icrc = dpib_icrc(b->ctx);
	b->pd = ibv_alloc_pd(b->ctx);
	if (b->pd == NULL)
		die("alloc_pd", ENOMEM);
	b->mr = ibv_reg_mr(b->pd, b->buf, b->len, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_MW_BIND);
	if (b->mr == NULL)
		die("reg_mr", errno);
}

/* The QPs, whose creation starts the engine lcore. */
static void
bench_qps(struct bench *b)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = MAX_OUTSTANDING,
				 .max_recv_wr = MAX_OUTSTANDING,
				 .max_send_sge = 1, .max_recv_sge = 1,
				 .max_inline_data = 64 },
		};

		b->cq[i] = ibv_create_cq(b->ctx, 2 * MAX_OUTSTANDING, NULL,
					 NULL, 0);
		if (b->cq[i] == NULL)
			die("create_cq", errno);
		ia.send_cq = ia.recv_cq = b->cq[i];
		b->qp[i] = ibv_create_qp(b->pd, &ia);
		if (b->qp[i] == NULL)
			die("create_qp", errno);
	}
	qp_up(b, b->qp[0], b->qp[1]->qp_num);
	qp_up(b, b->qp[1], b->qp[0]->qp_num);
}

/* A type 1 window over the target half of the buffer, bound on qp[1]. */
static void
bench_window(struct bench *b)
{
	struct ibv_mw_bind bind = {
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = b->mr,
			       .addr = (uintptr_t)b->buf + b->len / 2,
			       .length = b->len / 2,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE },
	};
	struct ibv_wc wc;
	int err;

	b->mw = ibv_alloc_mw(b->pd, IBV_MW_TYPE_1);
	if (b->mw == NULL)
		die("alloc_mw", errno);
	err = ibv_bind_mw(b->qp[1], b->mw, &bind);
	if (err)
		die("bind_mw", err);
	/* The latency test's last SEND completions may come first. */
	do {
		while (ibv_poll_cq(b->cq[1], 1, &wc) == 0)
			;
		if (wc.status != IBV_WC_SUCCESS)
			die("bind_mw completion", EIO);
	} while (wc.opcode != IBV_WC_BIND_MW);
}

/*
 * Where message @i of @size bytes starts in each half of the buffer: 64
 * places, multiples of @size (ATOMIC WRITE's stay aligned). The raw path
 * copies its frames from and to the same places, so that both move the
 * same bytes through the same caches (a 64 KiB stream walks 4 MiB each
 * way).
 */
static uint64_t
msg_off(const struct bench *b, uint32_t size, uint32_t i)
{
	return (i % 64) * (uint64_t)size % (b->len / 2 - size);
}

/* One WRITE-like WR (@op) of @size bytes to the target half, by @rkey. */
static void
post_write(struct bench *b, enum ibv_wr_opcode op, uint32_t rkey,
	   uint32_t size, uint64_t off, int signaled)
{
	struct ibv_sge sge = { (uintptr_t)b->buf + off, size, b->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
		.wr.rdma = { (uintptr_t)b->buf + b->len / 2 + off, rkey },
	}, *bad;
	int err = ibv_post_send(b->qp[0], &wr, &bad);

	if (err)
		die("post_send", err);
}

/*
 * Keep @outstanding WRs of @op (RDMA WRITE or ATOMIC WRITE) in flight, one
 * in 16 signaled (as perftest does with --cq-mod), and return messages per
 * second.
 */
static double
dpib_write_op(struct bench *b, enum ibv_wr_opcode op, uint32_t rkey,
	      uint32_t size, uint32_t iters, uint32_t outstanding)
{
	const uint32_t mod = 16;
	uint32_t posted = 0, done = 0;
	struct ibv_wc wc[16];
	double t0;

	outstanding = outstanding / mod * mod;
	t0 = now_s();
	while (done < iters) {
		while (posted < iters && posted - done < outstanding) {
			post_write(b, op, rkey, size, msg_off(b, size, posted),
				   posted % mod == mod - 1 || posted == iters - 1);
			posted++;
		}
		int n = ibv_poll_cq(b->cq[0], 16, wc), i;

		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				die("WRITE completion", EIO);
			done = RTE_MIN(posted, (done / mod + 1) * mod);
		}
	}
	return iters / (now_s() - t0);
}

static double
dpib_write(struct bench *b, uint32_t size, uint32_t iters, uint32_t outstanding)
{
	return dpib_write_op(b, IBV_WR_RDMA_WRITE, b->mr->rkey, size, iters,
			     outstanding);
}

static void
post_recv(struct bench *b, int qpi, uint32_t size)
{
	struct ibv_sge sge = { (uintptr_t)b->buf + qpi * 8192, size, b->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(b->qp[qpi], &wr, &bad) != 0)
		die("post_recv", EIO);
}

static void
post_send(struct bench *b, int qpi, uint32_t size)
{
	struct ibv_sge sge = { (uintptr_t)b->buf + 65536 + qpi * 8192, size,
			       b->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED |
			(size <= 64 ? IBV_SEND_INLINE : 0),
	}, *bad;

	if (ibv_post_send(b->qp[qpi], &wr, &bad) != 0)
		die("post_send", EIO);
}

/* Wait for the receive on @qpi, reaping its own send completions too. */
static void
wait_recv(struct bench *b, int qpi)
{
	struct ibv_wc wc;

	for (;;) {
		if (ibv_poll_cq(b->cq[qpi], 1, &wc) == 1) {
			if (wc.status != IBV_WC_SUCCESS)
				die("SEND completion", EIO);
			if (wc.opcode == IBV_WC_RECV)
				return;
		}
	}
}

/* SEND ping-pong between the two QPs; per-iteration half round trips (us). */
static void
dpib_send_lat(struct bench *b, uint32_t size, uint32_t iters, double *lat)
{
	uint32_t i;

	post_recv(b, 0, size);
	post_recv(b, 1, size);
	for (i = 0; i < iters; i++) {
		uint64_t t0 = rte_rdtsc();

		post_send(b, 0, size);
		wait_recv(b, 1);
		post_recv(b, 1, size);
		post_send(b, 1, size);
		wait_recv(b, 0);
		post_recv(b, 0, size);
		lat[i] = (rte_rdtsc() - t0) * 1e6 / rte_get_tsc_hz() / 2;
	}
}

/*
 * The raw path, in dpib's topology: this thread and a worker on the engine
 * lcore, joined by two ports of the same type (A: here -> worker, B: back).
 * The worker copies each payload out, as the responder does.
 */
enum raw_mode { RAW_SINK, RAW_ECHO, RAW_STOP };

/*
 * The worker puts each frame's payload where the matching dpib message's
 * bytes go: the frames come in the order sent, so it walks the sender's
 * table of offsets (@off, @cycle entries; NULL: at the start of the
 * target half) rather than reading one from the frame, whose load the
 * copy would wait for (a third of the 64 B rate).
 */
struct raw_worker {
	struct bench *b;
	const uint64_t *volatile off;
	uint32_t cycle, k;
	uint32_t size;
	volatile int mode;
	volatile uint64_t received;
	volatile int running;	/* on the engine's lcore now */
	volatile int err;	/* dpib_engine_lend's */
	pthread_t lender;
};

static uint16_t
raw_port_open(struct bench *b, const char *name)
{
	struct rte_eth_conf conf = { 0 };
	uint16_t port;
	int err;

	err = rte_vdev_init(name, NULL);
	if (err == 0)
		err = rte_eth_dev_get_port_by_name(name, &port);
	if (err != 0)
		die("raw port", -err);
	if (rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup(port, 0, 1024, SOCKET_ID_ANY, NULL,
				   b->raw_pool) != 0 ||
	    rte_eth_tx_queue_setup(port, 0, 1024, SOCKET_ID_ANY, NULL) != 0 ||
	    rte_eth_dev_start(port) != 0)
		die("raw port setup", EIO);
	return port;
}

static void
raw_open(struct bench *b)
{
	b->raw_pool = rte_pktmbuf_pool_create("raw_pool", 8192, 256, 0,
					      4096 + 256 + RTE_PKTMBUF_HEADROOM,
					      SOCKET_ID_ANY);
	if (b->raw_pool == NULL)
		die("raw pool", ENOMEM);
	b->raw_a = raw_port_open(b, RAW_PORT "_a");
	b->raw_b = raw_port_open(b, RAW_PORT "_b");
}

static void
raw_worker_main(void *arg)
{
	struct raw_worker *w = arg;
	struct bench *b = w->b;
	struct rte_mbuf *rx[BURST];
	const uint64_t *off;
	uint16_t n, i, sent;
	uint32_t k;

	while (w->mode != RAW_STOP) {
		n = rte_eth_rx_burst(b->raw_a, 0, rx, BURST);
		/* Read after the frames (the ring's acquire), written only
		 * with frames: between runs the sender owns off and k.
		 */
		off = n != 0 ? w->off : NULL;
		k = off != NULL ? w->k : 0;
		for (i = 0; i < n; i++) {
			rte_memcpy(b->buf + b->len / 2 + (off ? off[k] : 0),
				   rte_pktmbuf_mtod_offset(rx[i], uint8_t *,
							   RAW_HDR), w->size);
			if (off != NULL && ++k == w->cycle)
				k = 0;
		}
		if (off != NULL)
			w->k = k;
		if (w->mode == RAW_ECHO) {
			for (sent = 0; sent < n; )
				sent += rte_eth_tx_burst(b->raw_b, 0, rx + sent,
							 n - sent);
		} else {
			rte_pktmbuf_free_bulk(rx, n);
		}
		w->received += n;
	}
}

/*
 * The worker runs on the engine's own lcore, lent by the engine between
 * two of its passes (dpib_engine_lend), from raw_begin to raw_end: the
 * raw path and dpib take turns on the same CPUs within each repetition,
 * so that a change of the machine's speed (a VM's vCPUs slow down and
 * speed up by 2x within seconds here) hits both sides of a ratio alike.
 */
static void
raw_lent(void *arg)
{
	struct raw_worker *w = arg;

	w->running = 1;
	raw_worker_main(w);
	w->running = 0;
}

static void *
raw_lender(void *arg)
{
	struct raw_worker *w = arg;

	w->err = dpib_engine_lend(w->b->ctx, raw_lent, w);
	return NULL;
}

static void
raw_begin(struct raw_worker *w, enum raw_mode mode)
{
	uint64_t deadline = rte_rdtsc() + 10 * rte_get_tsc_hz();

	w->mode = mode;
	w->running = 0;
	w->err = 0;
	if (pthread_create(&w->lender, NULL, raw_lender, w) != 0)
		die("raw worker thread", EAGAIN);
	while (!w->running) {
		if (w->err != 0)
			die("dpib_engine_lend", w->err);
		if (rte_rdtsc() > deadline)
			die("raw worker: the engine did not lend its lcore",
			    ETIMEDOUT);
		rte_pause();
	}
}

static void
raw_end(struct raw_worker *w)
{
	w->mode = RAW_STOP;
	pthread_join(w->lender, NULL);
}

/* Build one frame: header bytes plus @size payload bytes from @off. */
static struct rte_mbuf *
raw_frame(struct bench *b, uint32_t size, uint64_t off)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(b->raw_pool);
	uint8_t *p;

	if (m == NULL)
		return NULL;
	p = (uint8_t *)rte_pktmbuf_append(m, RAW_HDR + size + 4);
	if (p == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memset(p, 0, RAW_HDR);
	rte_memcpy(p + RAW_HDR, b->buf + off, size);
	return m;
}

/*
 * Frames per second of @size payload from here to the worker: the frames
 * of messages of @msg bytes (@size each, the last one too), from and to
 * the places dpib_write_op's messages take (msg_off).
 */
static double
raw_rate(struct bench *b, struct raw_worker *w, uint32_t size, uint32_t frames,
	 uint32_t msg)
{
	struct rte_mbuf *tx[BURST];
	uint64_t base = w->received, *off;
	uint32_t sent = 0, i, n, k, per = RTE_MAX(msg / size, 1u);
	uint32_t cycle = 64 * per;
	double t0;

	/* The offsets of a cycle of 64 messages' frames, worked out here:
	 * divisions per frame would cost the sender more than its frame.
	 */
	off = malloc(cycle * sizeof(*off));
	if (off == NULL)
		die("raw offsets", ENOMEM);
	for (k = 0; k < cycle; k++)
		off[k] = msg_off(b, msg, k / per) + (uint64_t)(k % per) * size;
	w->size = size;
	w->cycle = cycle;
	w->k = 0;
	w->off = off;	/* the ring's enqueue orders these before the frames */
	t0 = now_s();
	while (sent < frames) {
		n = RTE_MIN((uint32_t)BURST, frames - sent);
		for (i = 0, k = sent % cycle; i < n; i++) {
			tx[i] = raw_frame(b, size, off[k]);
			if (tx[i] == NULL)
				break;
			if (++k == cycle)
				k = 0;
		}
		n = i;
		i = rte_eth_tx_burst(b->raw_a, 0, tx, n);
		sent += i;
		rte_pktmbuf_free_bulk(tx + i, n - i);
	}
	while (w->received - base < frames)
		rte_pause();
	t0 = now_s() - t0;
	w->off = NULL;	/* the worker took the last frame */
	free(off);
	return frames / t0;
}

/* One frame to the worker and back, per iteration: half of it (us). */
static void
raw_lat(struct bench *b, struct raw_worker *w, uint32_t size, uint32_t iters,
	double *lat)
{
	struct rte_mbuf *m;
	uint32_t i;

	w->size = size;
	for (i = 0; i < iters; i++) {
		uint64_t t0 = rte_rdtsc();

		m = raw_frame(b, size, 0);
		while (rte_eth_tx_burst(b->raw_a, 0, &m, 1) == 0)
			;
		while (rte_eth_rx_burst(b->raw_b, 0, &m, 1) == 0)
			;
		rte_pktmbuf_free(m);
		lat[i] = (rte_rdtsc() - t0) * 1e6 / rte_get_tsc_hz() / 2;
	}
}

struct results {
	double cyc_rx, cyc_tx;			/* engine TSC per message */
	double rate, raw_rate;			/* messages/s */
	double aw_rate, raw_rate8, mw_rate, raw_mw;	/* messages/s */
	double lat, lat99, raw_lat, raw_lat99;	/* us */
	double lat999, raw_lat999;		/* us */
	double bw, raw_bw;			/* messages/s */
	/* dpib/raw: medians of each repetition's own ratio */
	double rate_ratio, aw_ratio, mw_ratio, lat_ratio, bw_ratio;
};

/* The SEND latency again with an inline engine (a child's, -1: not run). */
static double inl_lat = -1, inl_lat99, inl_lat999;	/* us */

static void
print_header(const char *title, const struct opts *o)
{
	printf("\n---------------------------------------------------------------------------------------\n");
	printf("                    %s\n", title);
	printf(" Device         : %s (loopback, net_ring port)\n", dev_label);
	printf(" ICRC           : %s\n", dev_icrc ? "on (sealed and checked, "
	       "as on a wire)" : "off (the frames stay in memory; "
	       "DPIB_ICRC=on computes it)");
	printf(" Transport type : IB over RoCEv2 (UDP 4791), RC\n");
	printf(" Repetitions    : %u (medians reported; dpib/raw: the median "
	       "of each repetition's ratio, the two measured back to back)\n",
	       o->reps);
	printf(" Raw DPDK path  : net_ring ports, this thread -> worker on the engine lcore\n");
	printf("---------------------------------------------------------------------------------------\n");
}

static void
print_rate(const char *title, const struct opts *o, uint32_t size,
	   uint32_t iters, double d, double r, double ratio)
{
	print_header(title, o);
	printf(" #bytes  #iterations  MsgRate[Mpps]  BW average[Gb/sec]  raw DPDK[Mpps]  raw BW[Gb/sec]  dpib/raw\n");
	printf(" %-7u %-12u %-14.3f %-19.3f %-15.3f %-15.3f %.2f\n", size, iters,
	       d / 1e6, d * size * 8 / 1e9, r / 1e6, r * size * 8 / 1e9, ratio);
}

static void
print_lat(const struct opts *o, uint32_t iters, const struct results *res)
{
	print_header("Send Latency Test (half round trip)", o);
	printf(" #bytes  #iterations  t_median[usec]  t_99%%[usec]  t_99.9%%[usec]  raw DPDK median[usec]  raw 99%%[usec]  raw 99.9%%[usec]  dpib/raw\n");
	printf(" %-7u %-12u %-15.3f %-12.3f %-14.3f %-22.3f %-14.3f %-16.3f %.2f\n",
	       o->lat_size, iters, res->lat, res->lat99, res->lat999,
	       res->raw_lat, res->raw_lat99, res->raw_lat999, res->lat_ratio);
	printf(" (engine lcore: this thread posts and polls, the engine on its "
	       "own CPU carries each message)\n");
	if (inl_lat < 0)
		return;
	printf(" %-7u %-12u %-15.3f %-12.3f %-14.3f %-22.3f %-14.3f %-16.3f %.2f\n",
	       o->lat_size, iters, inl_lat, inl_lat99, inl_lat999,
	       res->raw_lat, res->raw_lat99, res->raw_lat999,
	       inl_lat / res->raw_lat);
	printf(" (inline engine, in a child process: the posting and polling "
	       "thread runs the engine's passes itself; measured before the "
	       "rest, its dpib/raw is against the raw median above)\n");
}

/* Median, 99th and 99.9th percentiles of @n samples (sorts them). */
static void
lat_stats(double *v, uint32_t n, double *med, double *p99, double *p999)
{
	*med = median(v, n);	/* sorts v */
	*p99 = v[(uint32_t)(n * 0.99)];
	*p999 = v[(uint32_t)(n * 0.999)];
}

/*
 * -S: the WRITE rate and bandwidth as the message grows, beside the raw
 * path carrying the same bytes (frames of up to the path MTU, one message
 * being ceil(size / MTU) of them). Filled by measure.
 */
#define MAX_SIZES	16
static uint32_t sweep_size[MAX_SIZES], nsweep;
static double sweep_rate[MAX_SIZES], sweep_raw[MAX_SIZES];
static double sweep_ratio[MAX_SIZES];	/* dpib/raw, as measure's */
static double sweep_cyc[MAX_SIZES];	/* engine TSC cycles per byte */
static int sweep_zc[MAX_SIZES];		/* frames went zero-copy */

static uint32_t
sweep_iters(const struct opts *o, uint32_t size)
{
	return RTE_MAX(o->iters / RTE_MAX(size / 1024, 1u), 2000u) / 16 * 16;
}

/* A device counter by name (0 when absent). */
static uint64_t
counter(struct bench *b, const char *name)
{
	const char *const *names;
	uint64_t v[256];
	int n = dpib_counters(b->ctx, &names, v, 256), i;

	for (i = 0; i < n && i < 256; i++)
		if (strcmp(names[i], name) == 0)
			return v[i];
	return 0;
}

/*
 * One repetition's pair: the raw path and dpib back to back, raw first in
 * even repetitions and dpib first in odd ones (a drift within a pair then
 * cancels over the run). RAW runs with the worker on the engine's lcore.
 */
#define PAIR(i, w, mode, RAW, DPIB)					\
	do {								\
		if ((i) % 2 == 0) {					\
			raw_begin(w, mode); RAW; raw_end(w);		\
			DPIB;						\
		} else {						\
			DPIB;						\
			raw_begin(w, mode); RAW; raw_end(w);		\
		}							\
	} while (0)

/* The median of @n ratios @a[i] / @b[i] (before @a and @b are sorted). */
static double
median_ratio(const double *a, const double *b, uint32_t n)
{
	double r[64];
	uint32_t i;

	for (i = 0; i < n; i++)
		r[i] = a[i] / b[i];
	return median(r, n);
}

/*
 * Every figure of the tables, dpib's engine and the raw path's worker
 * taking turns on the engine's lcore within each repetition; each dpib/raw
 * is the median of the repetitions' own ratios.
 */
static void
measure(struct bench *b, const struct opts *o, uint32_t bw_iters,
	uint32_t lat_iters, struct results *res)
{
	struct raw_worker w = { .b = b };
	double v[64], r[64], m[64], p[64], q[64], rm[64], rp[64], rq[64];
	double *lat = calloc(lat_iters, sizeof(double));
	uint32_t i, k, pkts = (o->bw_size + b->mtu - 1) / b->mtu;
	uint64_t rx0, tx0, cyc_rx = 0, cyc_tx = 0;

	if (lat == NULL)
		die("alloc", ENOMEM);
	bench_qps(b);	/* the engine starts: its lcore is lent from now on */
	for (i = 0; i < o->reps; i++)
		PAIR(i, &w, RAW_SINK,
		     r[i] = raw_rate(b, &w, o->rate_size, o->iters,
				     o->rate_size),
		     rx0 = counter(b, "engine_cycles_receive");
		     tx0 = counter(b, "engine_cycles_send");
		     v[i] = dpib_write(b, o->rate_size, o->iters,
				       o->outstanding);
		     cyc_rx += counter(b, "engine_cycles_receive") - rx0;
		     cyc_tx += counter(b, "engine_cycles_send") - tx0);
	/* The engine's own TSC (counted by the engine in its passes). */
	res->cyc_rx = (double)cyc_rx / ((double)o->iters * o->reps);
	res->cyc_tx = (double)cyc_tx / ((double)o->iters * o->reps);
	res->rate_ratio = median_ratio(v, r, o->reps);
	res->rate = median(v, o->reps);
	res->raw_rate = median(r, o->reps);
	for (i = 0; i < o->reps; i++)
		PAIR(i, &w, RAW_SINK,
		     r[i] = raw_rate(b, &w, RTE_MIN(o->bw_size, b->mtu),
				     bw_iters * pkts, o->bw_size) / pkts,
		     v[i] = dpib_write(b, o->bw_size, bw_iters, 32));
	res->bw_ratio = median_ratio(v, r, o->reps);
	res->bw = median(v, o->reps);
	res->raw_bw = median(r, o->reps);
	for (i = 0; i < o->reps; i++) {
		PAIR(i, &w, RAW_ECHO,
		     raw_lat(b, &w, o->lat_size, lat_iters, lat);
		     lat_stats(lat, lat_iters, &rm[i], &rp[i], &rq[i]),
		     dpib_send_lat(b, o->lat_size, lat_iters, lat);
		     lat_stats(lat, lat_iters, &m[i], &p[i], &q[i]));
	}
	res->lat_ratio = median_ratio(m, rm, o->reps);
	res->lat = median(m, o->reps);
	res->lat99 = median(p, o->reps);
	res->lat999 = median(q, o->reps);
	res->raw_lat = median(rm, o->reps);
	res->raw_lat99 = median(rp, o->reps);
	res->raw_lat999 = median(rq, o->reps);
	/* ATOMIC WRITE holds a READ/atomic credit: max_rd_atomic (16) in
	 * flight, whatever -o says. Beside raw 8-byte frames.
	 */
	for (i = 0; i < o->reps; i++)
		PAIR(i, &w, RAW_SINK,
		     r[i] = raw_rate(b, &w, 8, o->iters, 8),
		     v[i] = dpib_write_op(b, IBV_WR_ATOMIC_WRITE, b->mr->rkey,
					  8, o->iters, o->outstanding));
	res->aw_ratio = median_ratio(v, r, o->reps);
	res->aw_rate = median(v, o->reps);
	res->raw_rate8 = median(r, o->reps);
	bench_window(b);
	for (i = 0; i < o->reps; i++)
		PAIR(i, &w, RAW_SINK,
		     r[i] = raw_rate(b, &w, o->rate_size, o->iters,
				     o->rate_size),
		     v[i] = dpib_write_op(b, IBV_WR_RDMA_WRITE, b->mw->rkey,
					  o->rate_size, o->iters,
					  o->outstanding));
	res->mw_ratio = median_ratio(v, r, o->reps);
	res->mw_rate = median(v, o->reps);
	res->raw_mw = median(r, o->reps);
	for (k = 0; k < nsweep; k++) {
		uint32_t size = sweep_size[k], per = (size + b->mtu - 1) / b->mtu;
		uint32_t iters = sweep_iters(o, size);
		uint64_t cyc = 0, c0, z0 = counter(b, "tx_zero_copy_packets");

		for (i = 0; i < o->reps; i++)
			PAIR(i, &w, RAW_SINK,
			     r[i] = raw_rate(b, &w, RTE_MIN(size, b->mtu),
					     iters * per, size) / per,
			     c0 = counter(b, "engine_cycles_receive") +
				  counter(b, "engine_cycles_send");
			     v[i] = dpib_write(b, size, iters, size > 4096 ?
					       32 : o->outstanding);
			     cyc += counter(b, "engine_cycles_receive") +
				    counter(b, "engine_cycles_send") - c0);
		sweep_ratio[k] = median_ratio(v, r, o->reps);
		sweep_rate[k] = median(v, o->reps);
		sweep_raw[k] = median(r, o->reps);
		/* Both sides of the loopback: requester and responder. */
		sweep_cyc[k] = (double)cyc / ((double)size * iters * o->reps);
		sweep_zc[k] = counter(b, "tx_zero_copy_packets") != z0;
	}
	free(lat);
}

static void
print_sweep(const struct opts *o)
{
	uint32_t k;

	if (nsweep == 0)
		return;
	print_header("RDMA_Write rate and bandwidth as the message grows", o);
	printf(" #bytes   MsgRate[Mpps]  BW[Gb/sec]  raw DPDK[Mpps]  raw BW[Gb/sec]  dpib/raw  cyc/B  zero-copy\n");
	for (k = 0; k < nsweep; k++)
		printf(" %-8u %-14.3f %-11.3f %-15.3f %-15.3f %-9.2f %-6.3f %s\n",
		       sweep_size[k], sweep_rate[k] / 1e6,
		       sweep_rate[k] * sweep_size[k] * 8 / 1e9,
		       sweep_raw[k] / 1e6, sweep_raw[k] * sweep_size[k] * 8 / 1e9,
		       sweep_ratio[k], sweep_cyc[k],
		       sweep_zc[k] ? "yes" : "no");
	fflush(stdout);
}

/*
 * The rate as QPs grow (-Q): @nqp QPs in pairs looped back through the
 * device, every requester with QS_DEPTH WRITEs outstanding, one CQ for all
 * of them; the WRs go round the requesters. Hardware HCAs lose rate once
 * their QP context cache overflows; this says whether dpib does.
 */
#define QS_DEPTH	2

static void
qs_post(struct bench *b, struct ibv_qp *qp, uint64_t pair, uint32_t size)
{
	struct ibv_sge sge = { (uintptr_t)b->buf + (pair % 64) * 64, size,
			       b->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = pair, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { (uintptr_t)b->buf + b->len / 2 + (pair % 64) * 64,
			     b->mr->rkey },
	}, *bad;

	if (ibv_post_send(qp, &wr, &bad) != 0)
		die("QP scale: post_send", EIO);
}

static double
dpib_qp_scale(struct bench *b, uint32_t nqp, uint32_t size, uint32_t iters)
{
	uint32_t npair = nqp / 2, i, posted = 0, done = 0, warm;
	struct ibv_qp **qp = calloc(nqp, sizeof(*qp));
	struct ibv_wc wc[64];
	struct ibv_cq *cq;
	double t0, rate;
	int n, k;

	cq = ibv_create_cq(b->ctx, (int)RTE_MIN(npair * QS_DEPTH + 64, 65536u),
			   NULL, NULL, 0);
	if (qp == NULL || cq == NULL)
		die("QP scale: resources", ENOMEM);
	for (i = 0; i < nqp; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = QS_DEPTH, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.sq_sig_all = 1,
		};

		qp[i] = ibv_create_qp(b->pd, &ia);
		if (qp[i] == NULL)
			die("QP scale: create_qp", errno);
	}
	for (i = 0; i < npair; i++) {
		qp_up(b, qp[2 * i], qp[2 * i + 1]->qp_num);
		qp_up(b, qp[2 * i + 1], qp[2 * i]->qp_num);
	}
	/* Every requester gets QS_DEPTH WRITEs; each completion then brings
	 * its requester the next one, as a program would run it (no scan of
	 * the pairs for room). The clock starts once every requester has
	 * completed 32: the steady state, not the first touches of the QPs'
	 * state (at 16K QPs the first 10 or so WRITEs each run at half the
	 * steady rate).
	 */
	warm = npair * 32;
	iters += warm;
	t0 = 0;
	for (i = 0; i < npair; i++)
		for (k = 0; k < QS_DEPTH && posted < iters; k++, posted++)
			qs_post(b, qp[2 * i], i, size);
	while (done < iters) {
		n = ibv_poll_cq(cq, 64, wc);
		for (k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS)
				die("QP scale: completion", EIO);
			if (++done == warm)
				t0 = now_s();
			if (posted < iters) {
				qs_post(b, qp[2 * wc[k].wr_id], wc[k].wr_id,
					size);
				posted++;
			}
		}
	}
	done -= warm;
	rate = done / (now_s() - t0);
	for (i = 0; i < nqp; i++)
		if (ibv_destroy_qp(qp[i]) != 0)
			die("QP scale: destroy_qp", EBUSY);
	ibv_destroy_cq(cq);
	free(qp);
	return rate;
}

/* The QP scale's points, for --json and the plot. */
#define MAX_SCALE	32
static uint32_t scale_qps[MAX_SCALE];
static double scale_rate[MAX_SCALE], scale_ratio[MAX_SCALE];
static uint32_t nscale;

static void
qp_scale(struct bench *b, const struct opts *o, const char *list)
{
	uint32_t want[MAX_SCALE], n, i, j, r;
	static double v[MAX_SCALE][64];
	double ratio;

	n = parse_list("-Q", list, 2, 32768, want, MAX_SCALE);
	print_header("RDMA_Write Message Rate as QPs grow", o);
	printf(" (each repetition a round of every count, the order turned "
	       "by one each round; vs the first count: the median of the "
	       "rounds' own ratios)\n");
	printf(" #QPs    #bytes  outstanding/QP  MsgRate[Mpps]  vs %u QPs\n",
	       want[0] & ~1u);
	for (r = 0; r < o->reps; r++)
		for (i = 0; i < n; i++) {
			j = (i + r) % n;
			v[j][r] = dpib_qp_scale(b, want[j] & ~1u, o->rate_size,
						o->iters);
		}
	for (j = 0; j < n; j++) {
		ratio = median_ratio(v[j], v[0], o->reps);
		scale_qps[nscale] = want[j] & ~1u;
		scale_ratio[nscale] = ratio;
		scale_rate[nscale] = median(v[j], o->reps);
		printf(" %-7u %-7u %-15u %-14.3f %.2f\n", scale_qps[nscale],
		       o->rate_size, QS_DEPTH, scale_rate[nscale] / 1e6, ratio);
		nscale++;
	}
	fflush(stdout);
}

/* -E's points (engine_scale), for the table and --json. */
static double eng_rate[16], eng_ratio[16];
static double eng_loop_rate[16], eng_loop_ratio[16];	/* with the loops */
static uint32_t eng_count[16], neng;

/* --json FILE: every figure of the run, one object. */
static void
write_json(const char *path, const struct opts *o, const struct bench *b,
	   const struct results *r)
{
	FILE *f = fopen(path, "w");
	uint32_t i;

	if (f == NULL)
		die(path, errno);
	fprintf(f, "{\"tool\":\"dpib-perf\",\"device\":\"%s\",\"icrc\":%s,",
		dev_label, dev_icrc ? "true" : "false");
	fprintf(f, "\"port\":\"net_ring loopback\",\"repetitions\":%u,"
		"\"path_mtu\":%u,\"tsc_hz\":%" PRIu64 ",\n", o->reps, b->mtu,
		rte_get_tsc_hz());
	fprintf(f, " \"write_rate\":{\"bytes\":%u,\"mpps\":%.4f,"
		"\"raw_mpps\":%.4f,\"ratio\":%.4f,\"cycles_receive\":%.1f,"
		"\"cycles_send\":%.1f},\n", o->rate_size, r->rate / 1e6,
		r->raw_rate / 1e6, r->rate_ratio, r->cyc_rx, r->cyc_tx);
	fprintf(f, " \"send_lat\":{\"bytes\":%u,\"median_us\":%.4f,"
		"\"p99_us\":%.4f,\"p999_us\":%.4f,\"raw_median_us\":%.4f,"
		"\"raw_p99_us\":%.4f,\"raw_p999_us\":%.4f,\"ratio\":%.4f,"
		"\"inline_median_us\":%.4f,\"inline_p99_us\":%.4f,"
		"\"inline_p999_us\":%.4f},\n", o->lat_size,
		r->lat, r->lat99, r->lat999, r->raw_lat, r->raw_lat99,
		r->raw_lat999, r->lat_ratio, inl_lat, inl_lat99, inl_lat999);
	fprintf(f, " \"write_bw\":{\"bytes\":%u,\"gbps\":%.3f,"
		"\"raw_gbps\":%.3f,\"ratio\":%.4f},\n", o->bw_size,
		r->bw * o->bw_size * 8 / 1e9, r->raw_bw * o->bw_size * 8 / 1e9,
		r->bw_ratio);
	fprintf(f, " \"atomic_write_rate\":{\"mpps\":%.4f,"
		"\"raw_mpps\":%.4f,\"ratio\":%.4f},\n", r->aw_rate / 1e6,
		r->raw_rate8 / 1e6, r->aw_ratio);
	fprintf(f, " \"window_write_rate\":{\"mpps\":%.4f,"
		"\"raw_mpps\":%.4f,\"ratio\":%.4f},\n", r->mw_rate / 1e6,
		r->raw_mw / 1e6, r->mw_ratio);
	fprintf(f, " \"size_sweep\":[");
	for (i = 0; i < nsweep; i++)
		fprintf(f, "%s{\"bytes\":%u,\"mpps\":%.4f,\"raw_mpps\":%.4f,"
			"\"ratio\":%.4f,\"cycles_per_byte\":%.4f,"
			"\"zero_copy\":%s}",
			i ? "," : "", sweep_size[i], sweep_rate[i] / 1e6,
			sweep_raw[i] / 1e6, sweep_ratio[i], sweep_cyc[i],
			sweep_zc[i] ? "true" : "false");
	fprintf(f, "],\n");
	fprintf(f, " \"engine_scale\":[");
	for (i = 0; i < neng; i++)
		fprintf(f, "%s{\"engines\":%u,\"mpps\":%.4f,\"ratio\":%.4f,"
			"\"loops_mpps\":%.4f,\"loops_ratio\":%.4f}",
			i ? "," : "", eng_count[i], eng_rate[i] / 1e6,
			eng_ratio[i], eng_loop_rate[i] / 1e6,
			eng_loop_ratio[i]);
	fprintf(f, "],\n");
	fprintf(f, " \"qp_scale\":[");
	for (i = 0; i < nscale; i++)
		fprintf(f, "%s{\"qps\":%u,\"mpps\":%.4f,\"ratio\":%.4f}",
			i ? "," : "", scale_qps[i], scale_rate[i] / 1e6,
			scale_ratio[i]);
	fprintf(f, "]}\n");
	fclose(f);
}

/*
 * A line plot in plain SVG (no library needed): @ns series of @n points
 * over the same x values, x on a log scale.
 */
void
svg_plot(const char *path, const struct plot *pl)
{
	static const char *const colour[2] = { "#1f77b4", "#d62728" };
	const double W = 640, H = 400, L = 70, R = 20, T = 40, B = 50;
	double ymax = 0, lx0, lx1;
	uint32_t i, k;
	FILE *f;

	f = fopen(path, "w");
	if (f == NULL)
		die(path, errno);
	for (k = 0; k < pl->ns; k++)
		for (i = 0; i < pl->n; i++)
			ymax = RTE_MAX(ymax, pl->y[k][i]);
	ymax = ymax > 0 ? ymax * 1.15 : 1;
	lx0 = log2(pl->x[0]);
	lx1 = log2(pl->x[pl->n - 1]);
	if (lx1 <= lx0)
		lx1 = lx0 + 1;
#define PX(q) (L + (log2(q) - lx0) / (lx1 - lx0) * (W - L - R))
#define PY(m) (H - B - (m) / ymax * (H - T - B))
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		"height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		W, H);
	fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"14\">%s</text>\n",
		L, pl->title);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" "
		"stroke=\"black\"/>\n<line x1=\"%.0f\" y1=\"%.0f\" "
		"x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, H - B,
		W - R, H - B, L, T, L, H - B);
	for (i = 0; i <= 4; i++)
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">"
			"%.2f</text>\n", L - 6, PY(ymax * i / 4) + 4,
			ymax * i / 4);
	fprintf(f, "<text x=\"14\" y=\"%.0f\" transform=\"rotate(-90 14 "
		"%.0f)\" text-anchor=\"middle\">%s</text>\n",
		(H - B + T) / 2, (H - B + T) / 2, pl->ylabel);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">"
		"%s (log scale)</text>\n", (W - R + L) / 2, H - 12, pl->xlabel);
	for (i = 0; i < pl->n; i++)
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">"
			"%u</text>\n", PX(pl->x[i]), H - B + 16, pl->x[i]);
	for (k = 0; k < pl->ns; k++) {
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"2\" points=\"", colour[k]);
		for (i = 0; i < pl->n; i++)
			fprintf(f, "%.1f,%.1f ", PX(pl->x[i]),
				PY(pl->y[k][i]));
		fprintf(f, "\"/>\n");
		for (i = 0; i < pl->n; i++)
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
				"fill=\"%s\"/>\n", PX(pl->x[i]),
				PY(pl->y[k][i]), colour[k]);
		if (pl->name[k] != NULL)
			fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">"
				"%s</text>\n", L + 10, T + 14 + 16.0 * k,
				colour[k], pl->name[k]);
	}
#undef PX
#undef PY
	fprintf(f, "</svg>\n");
	fclose(f);
}

/* --plot FILE.svg: the WRITE rate against the QP count. */
static void
write_plot(const char *path, const struct opts *o)
{
	double y[MAX_SCALE];
	char title[160];
	uint32_t i;

	if (nscale < 2)
		die("--plot needs -Q with two QP counts or more", EINVAL);
	for (i = 0; i < nscale; i++)
		y[i] = scale_rate[i] / 1e6;
	snprintf(title, sizeof(title), "dpib: %u B RDMA WRITE rate as QPs "
		 "grow (%d outstanding per requester, loopback, medians of "
		 "%u)", o->rate_size, QS_DEPTH, o->reps);
	svg_plot(path, &(struct plot){ .title = title, .xlabel = "QPs",
		 .ylabel = "M messages/s", .x = scale_qps, .n = nscale,
		 .ns = 1, .y = { y } });
}

/* --plot-sizes FILE.svg: WRITE bandwidth against the message size. */
static void
write_plot_sizes(const char *path, const struct opts *o)
{
	double y[2][MAX_SIZES];
	char title[160];
	uint32_t i;

	if (nsweep < 2)
		die("--plot-sizes needs -S with two sizes or more", EINVAL);
	for (i = 0; i < nsweep; i++) {
		y[0][i] = sweep_rate[i] * sweep_size[i] * 8 / 1e9;
		y[1][i] = sweep_raw[i] * sweep_size[i] * 8 / 1e9;
	}
	snprintf(title, sizeof(title), "dpib: RDMA WRITE bandwidth as the "
		 "message grows (loopback, medians of %u)", o->reps);
	svg_plot(path, &(struct plot){ .title = title,
		 .xlabel = "message bytes", .ylabel = "Gbit/s",
		 .x = sweep_size, .n = nsweep, .ns = 2, .y = { y[0], y[1] },
		 .name = { "dpib RDMA WRITE", "raw DPDK frames, same bytes" } });
}

/*
 * -E: the WRITE rate with 1 .. N engines. The engine count is fixed when a
 * process starts, so each count runs in a child (this program again, with
 * DPIB_ENGINES and inline mode): N threads, each pinned to a CPU of its
 * own where there are enough, each with its own CQ and RC pair (placement
 * by CQ puts each pair on an engine of its own), start together; the rate
 * is all their messages over the slowest thread's time. Each count runs
 * without the engines' loops (DPIB_TAKEOVER_US=never: an engine is then
 * its one thread on one CPU) and with them, as programs run it: a loop
 * naps while calls drive, but with posts deferring frames it wakes about
 * every millisecond or sooner (ENG_DEFER_STREAM_US), each time on a CPU
 * an application thread keeps busy (2 engines, 1000-3000 wake-ups a
 * second each). Interleaved child runs, 5 pairs (2026-11-28): 1 engine
 * 8.8-9.4 M msg/s without loops, 7.7-9.3 with; 2 engines 16.7-18.6
 * without, 14.2-16.2 with; 1.84-2.03x and 1.53-2.08x.
 */
struct eng_thread {
	struct bench *b;
	uint32_t id, size, iters, outstanding;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	double secs;
	pthread_barrier_t *go;
};

static void *
eng_thread_main(void *arg)
{
	struct eng_thread *t = arg;
	const uint32_t mod = 16;
	uint64_t base = (uint64_t)t->id * 65536;
	uint32_t posted = 0, done = 0;
	struct ibv_wc wc[16];
	cpu_set_t set;
	double t0;

	if ((int)t->id < CPU_SETSIZE) {
		CPU_ZERO(&set);
		CPU_SET(t->id % (uint32_t)RTE_MAX(sysconf(_SC_NPROCESSORS_ONLN),
						   1L), &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	pthread_barrier_wait(t->go);
	t0 = now_s();
	while (done < t->iters) {
		while (posted < t->iters && posted - done < t->outstanding) {
			struct ibv_sge sge = { (uintptr_t)t->b->buf + base,
					       t->size, t->b->mr->lkey };
			struct ibv_send_wr wr = {
				.sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.send_flags = posted % mod == mod - 1 ||
					      posted == t->iters - 1 ?
					      IBV_SEND_SIGNALED : 0,
				.wr.rdma = { (uintptr_t)t->b->buf +
					     t->b->len / 2 + base,
					     t->b->mr->rkey },
			}, *bad;

			if (ibv_post_send(t->qp[0], &wr, &bad) != 0)
				die("engines: post_send", EIO);
			posted++;
		}
		int n = ibv_poll_cq(t->cq, 16, wc), i;

		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				die("engines: completion", EIO);
			done = RTE_MIN(posted, (done / mod + 1) * mod);
		}
	}
	t->secs = now_s() - t0;
	return NULL;
}

/* A child's start: dpib, the 4 MiB buffer and the device (-d). */
static void
child_bench(struct bench *b)
{
	int err = dpib_init();

	if (err)
		die("dpib_init", err);
	b->len = 4u << 20;
	b->buf = aligned_alloc(4096, b->len);
	if (b->buf == NULL)
		die("alloc", ENOMEM);
	memset(b->buf, 0x5a, b->len);
	bench_open(b);
}

/* The child of -E: @n engines, @n threads; prints "engines N MPPS". */
static int
engine_child(uint32_t n, const struct opts *o)
{
	struct eng_thread t[16];
	pthread_t th[16];
	pthread_barrier_t go;
	struct bench b = { 0 };
	double v[64], worst;
	uint32_t i, r;

	if (n < 1 || n > 16)
		die("-E: 1 .. 16 engines", EINVAL);
	child_bench(&b);
	for (i = 0; i < n; i++) {
		int k;

		t[i] = (struct eng_thread){ .b = &b, .id = i,
			.size = o->rate_size, .iters = o->iters / 16 * 16,
			.outstanding = o->outstanding / 16 * 16, .go = &go };
		t[i].cq = ibv_create_cq(b.ctx, 2 * MAX_OUTSTANDING, NULL, NULL,
					0);
		if (t[i].cq == NULL)
			die("engines: create_cq", errno);
		for (k = 0; k < 2; k++) {
			struct ibv_qp_init_attr ia = {
				.qp_type = IBV_QPT_RC, .send_cq = t[i].cq,
				.recv_cq = t[i].cq,
				.cap = { .max_send_wr = MAX_OUTSTANDING,
					 .max_recv_wr = 1, .max_send_sge = 1,
					 .max_recv_sge = 1 },
			};

			t[i].qp[k] = ibv_create_qp(b.pd, &ia);
			if (t[i].qp[k] == NULL)
				die("engines: create_qp", errno);
		}
		qp_up(&b, t[i].qp[0], t[i].qp[1]->qp_num);
		qp_up(&b, t[i].qp[1], t[i].qp[0]->qp_num);
		if (dpib_qp_engine(t[i].qp[0]) != dpib_qp_engine(t[i].qp[1]))
			die("engines: a pair across two engines", EINVAL);
	}
	for (r = 0; r < o->reps; r++) {
		pthread_barrier_init(&go, NULL, n);
		for (i = 0; i < n; i++)
			if (pthread_create(&th[i], NULL, eng_thread_main,
					   &t[i]) != 0)
				die("engines: thread", EAGAIN);
		worst = 0;
		for (i = 0; i < n; i++) {
			pthread_join(th[i], NULL);
			worst = RTE_MAX(worst, t[i].secs);
		}
		pthread_barrier_destroy(&go);
		v[r] = (double)n * t[0].iters / worst;
	}
	printf("engines %u %.6f\n", n, median(v, o->reps) / 1e6);
	return 0;
}

/*
 * The child of the inline latency row: the SEND ping-pong in inline mode,
 * which the engine mode of this process (fixed at start-up) cannot run;
 * prints "inline_lat MEDIAN P99 P99.9" (us, medians of the repetitions).
 */
static int
lat_child(const struct opts *o)
{
	uint32_t iters = RTE_MAX(o->iters / 10, 100u), i;
	double *lat = calloc(iters, sizeof(double)), m[64], p[64], q[64];
	struct bench b = { 0 };

	if (lat == NULL)
		die("alloc", ENOMEM);
	child_bench(&b);
	bench_qps(&b);
	for (i = 0; i < o->reps; i++) {
		dpib_send_lat(&b, o->lat_size, iters, lat);
		lat_stats(lat, iters, &m[i], &p[i], &q[i]);
	}
	printf("inline_lat %.6f %.6f %.6f\n", median(m, o->reps),
	       median(p, o->reps), median(q, o->reps));
	free(lat);
	return 0;
}

/* The parent of the inline latency row. */
static void
lat_inline(const char *self, const struct opts *o)
{
	char cmd[4096], line[256];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "DPIB_ENGINE_MODE=inline '%s' --lat-child "
		 "-n %u -r %u -l %u%s%s", self, o->iters, o->reps, o->lat_size,
		 dev_name != NULL ? " -d " : "", dev_name != NULL ? dev_name :
		 "");
	p = popen(cmd, "r");
	if (p == NULL)
		die("inline latency: popen", errno);
	while (fgets(line, sizeof(line), p) != NULL)
		if (sscanf(line, "inline_lat %lf %lf %lf", &inl_lat,
			   &inl_lat99, &inl_lat999) == 3)
			break;
	if (pclose(p) != 0 || inl_lat < 0)
		die("inline latency: the child failed", EIO);
}

/* The parent of -E: one child per engine count, then the table. */

static void
engine_scale(const char *self, const struct opts *o, const char *list)
{
	char cmd[4096], line[256];
	uint32_t want[16], n, i, j, r, got, loop;
	double mpps, v[2][16][64];
	FILE *p;

	n = parse_list("-E", list, 1, 8, want, 16);
	/* A round of children per repetition, each count once without the
	 * loops and once with them, the order turned by one each round:
	 * every count's run sits beside the first count's, whose rate the
	 * ratios divide by.
	 */
	for (r = 0; r < o->reps; r++) {
		for (i = 0; i < 2 * n; i++) {
			j = (i / 2 + r) % n;
			loop = i % 2;
			snprintf(cmd, sizeof(cmd), "DPIB_ENGINES=%u "
				 "DPIB_ENGINE_MODE=inline DPIB_PLACEMENT=cq "
				 "DPIB_TAKEOVER_US=%s "
				 "'%s' --engine-child %u -n %u -r 1 -s %u -o %u"
				 "%s%s", want[j], loop ? "" : "never", self,
				 want[j], o->iters,
				 o->rate_size, o->outstanding,
				 dev_name != NULL ? " -d " : "",
				 dev_name != NULL ? dev_name : "");
			p = popen(cmd, "r");
			if (p == NULL)
				die("-E: popen", errno);
			mpps = -1;
			while (fgets(line, sizeof(line), p) != NULL)
				if (sscanf(line, "engines %u %lf", &got,
					   &mpps) == 2)
					break;
			if (pclose(p) != 0 || mpps < 0)
				die("-E: the child failed", EIO);
			v[loop][j][r] = mpps * 1e6;
		}
	}
	for (j = 0; j < n; j++) {
		eng_count[neng] = want[j];
		eng_ratio[neng] = median_ratio(v[0][j], v[0][0], o->reps);
		eng_loop_ratio[neng] = median_ratio(v[1][j], v[1][0], o->reps);
		eng_loop_rate[neng] = median(v[1][j], o->reps);
		eng_rate[neng++] = median(v[0][j], o->reps);
	}
}

static void
print_engine_scale(const struct opts *o)
{
	uint32_t i;

	if (neng == 0)
		return;
	print_header("RDMA_Write Message Rate as engines grow", o);
	printf(" (inline mode: each engine one application thread on a CPU of "
	       "its own, its own CQ and pair; first without the engines' loops "
	       "(takeover_us = never), then with them, as programs run it)\n");
	printf(" #engines  #bytes  MsgRate[Mpps]  vs 1 engine  "
	       "with loops[Mpps]  vs 1 engine\n");
	for (i = 0; i < neng; i++)
		printf(" %-9u %-7u %-14.3f %-12.2f %-17.3f %.2f\n",
		       eng_count[i], o->rate_size, eng_rate[i] / 1e6,
		       eng_ratio[i], eng_loop_rate[i] / 1e6,
		       eng_loop_ratio[i]);
	fflush(stdout);
}

static void
usage(void)
{
	printf("usage: dpib-perf [-d DEVICE] [-n ITERS] [-r REPS] [-s RATE_SIZE]\n"
	       "                 [-b BW_SIZE] [-l LAT_SIZE] [-o OUTSTANDING] [-c]\n"
	       "                 [-S SIZE,...] [-E N,N,...] [-Q QPS,QPS,...]\n"
	       "                 [--json FILE] [--plot FILE] [--plot-sizes FILE]\n"
	       "  -d  the device, a loopback one (default: the first device)\n"
	       "  -o, -t  WRs outstanding in the rate tests (perftest's -t)\n"
	       "  -c  print the device counters that moved, after the run\n"
	       "  -S  also the RDMA WRITE rate and bandwidth at these message\n"
	       "      sizes, beside the raw path, e.g. -S 8,64,512,4096,65536\n"
	       "  -E  also the RDMA WRITE rate with these many engines, e.g.\n"
	       "      -E 1,2 (inline mode, one thread per engine, without\n"
	       "      and with the engines' loops)\n"
	       "  -Q  also the RDMA WRITE rate with these many QPs (pairs, %d\n"
	       "      WRITEs outstanding on each requester), e.g.\n"
	       "      -Q 2,16,256,1024,4096,16384\n"
	       "  --json FILE   every figure, as one JSON object\n"
	       "  --plot FILE   an SVG plot of the -Q rates\n"
	       "  --plot-sizes FILE  an SVG plot of the -S bandwidths\n",
	       QS_DEPTH);
}

/* The device counters that are not zero (-c): what the run cost. */
static void
print_counters(struct bench *b)
{
	const char *const *names;
	uint64_t v[256];
	int n = dpib_counters(b->ctx, &names, v, 256), i;

	printf(" Device counters (non-zero):\n");
	for (i = 0; i < n && i < 256; i++)
		if (v[i] != 0)
			printf("   %-32s %" PRIu64 "\n", names[i], v[i]);
}

int
main(int argc, char **argv)
{
	struct opts o = {
		.iters = 200000, .reps = 5, .rate_size = 64, .lat_size = 8,
		.bw_size = 65536, .outstanding = 128,
	};
	struct bench b = { 0 };
	struct results res;
	uint32_t bw_iters, lat_iters;
	cpu_set_t set;
	int c, err, counters = 0;
	const char *scale = NULL, *engines = NULL;
	long child = 0;

	static const struct option lo[] = {
		{ "engine-child", required_argument, NULL, 'C' },
		{ "lat-child", no_argument, NULL, 'L' },
		{ "plot-sizes", required_argument, NULL, 'Z' },
		{ "json", required_argument, NULL, 'J' },
		{ "plot", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *json = NULL, *plot = NULL, *plot_sizes = NULL;

	if (argc > 1 && pt_is_test(argv[1]))
		return pt_main(argc, argv);
	while ((c = getopt_long(argc, argv, "n:r:s:b:l:o:t:d:cQ:E:S:h", lo,
				NULL)) != -1) {
		switch (c) {
		case 'n': o.iters = strtoul(optarg, NULL, 0); break;
		case 'r': o.reps = strtoul(optarg, NULL, 0); break;
		case 's': o.rate_size = strtoul(optarg, NULL, 0); break;
		case 'b': o.bw_size = strtoul(optarg, NULL, 0); break;
		case 'l': o.lat_size = strtoul(optarg, NULL, 0); break;
		case 'o':
		case 't': o.outstanding = strtoul(optarg, NULL, 0); break;
		case 'd': dev_name = optarg; break;
		case 'c': counters = 1; break;
		case 'Q':
		case 'E': {
			uint32_t tmp[MAX_SCALE];

			/* Checked now, run later. */
			parse_list(c == 'Q' ? "-Q" : "-E", optarg, c == 'Q' ?
				   2 : 1, c == 'Q' ? 32768 : 8, tmp,
				   c == 'Q' ? MAX_SCALE : 16);
			if (c == 'Q')
				scale = optarg;
			else
				engines = optarg;
			break;
		}
		case 'S':
			nsweep = parse_list("-S", optarg, 1, 1u << 20,
					    sweep_size, MAX_SIZES);
			break;
		case 'Z': plot_sizes = optarg; break;
		case 'C': child = strtol(optarg, NULL, 0); break;
		case 'L': child = -1; break;
		case 'J': json = optarg; break;
		case 'P': plot = optarg; break;
		default: usage(); return c == 'h' ? 0 : 1;
		}
	}
	if (o.reps < 1 || o.reps > 64 || o.iters < 160 ||
	    o.outstanding < 16 || o.outstanding > MAX_OUTSTANDING ||
	    o.lat_size > 4096 || o.rate_size == 0 || o.rate_size > 4096 ||
	    o.bw_size == 0 || o.bw_size > 1 << 20) {
		usage();
		return 1;
	}
	o.iters = o.iters / 16 * 16;
	if (child > 0)
		return engine_child((uint32_t)child, &o);
	if (child < 0)
		return lat_child(&o);
	/* Before this process brings DPDK up: the children must not
	 * inherit it.
	 */
	if (engines != NULL)
		engine_scale(argv[0], &o, engines);
	lat_inline(argv[0], &o);
	bw_iters = RTE_MAX(o.iters / 50 / 16 * 16, 160u);
	lat_iters = RTE_MAX(o.iters / 10, 100u);
	/* Benchmarks poll; the library's default engine back-off would
	 * measure wake-ups instead.
	 */
	setenv("DPIB_ENGINE_MODE", "poll", 0);
	err = dpib_init();
	if (err)
		die("dpib_init", err);
	if (rte_lcore_count() < 2)
		die("dpib-perf needs the engine lcore", EINVAL);
	/* Keep this thread off the engine's CPU. */
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	b.len = 4u << 20;
	b.buf = aligned_alloc(4096, b.len);
	if (b.buf == NULL)
		die("alloc", ENOMEM);
	memset(b.buf, 0x5a, b.len);
	bench_open(&b);
	raw_open(&b);
	printf("dpib-perf: %u iterations x %u repetitions, %u outstanding, "
	       "path MTU %u, TSC %.2f GHz\n", o.iters, o.reps, o.outstanding,
	       b.mtu, rte_get_tsc_hz() / 1e9);
	measure(&b, &o, bw_iters, lat_iters, &res);
	print_rate("RDMA_Write Message Rate Test", &o, o.rate_size, o.iters,
		   res.rate, res.raw_rate, res.rate_ratio);
	printf(" Engine cycles per message (TSC): receive %.0f (the "
	       "responder's WRITE, the completer's ACK), send %.0f (the "
	       "requester's packet, the transmit)\n", res.cyc_rx, res.cyc_tx);
	print_lat(&o, lat_iters, &res);
	print_rate("RDMA_Write BW Test", &o, o.bw_size, bw_iters, res.bw,
		   res.raw_bw, res.bw_ratio);
	print_rate("ATOMIC_WRITE Message Rate Test (IBA 1.5)", &o, 8, o.iters,
		   res.aw_rate, res.raw_rate8, res.aw_ratio);
	print_rate("RDMA_Write Message Rate through a Memory Window", &o,
		   o.rate_size, o.iters, res.mw_rate, res.raw_mw, res.mw_ratio);
	printf(" (through the MR's own rkey above: %.3f Mpps; window/MR %.2f)\n",
	       res.rate / 1e6, res.mw_rate / res.rate);
	print_sweep(&o);
	if (scale != NULL)
		qp_scale(&b, &o, scale);
	print_engine_scale(&o);
	if (json != NULL)
		write_json(json, &o, &b, &res);
	if (plot != NULL) {
		write_plot(plot, &o);
		printf(" Plot: %s\n", plot);
	}
	if (plot_sizes != NULL) {
		write_plot_sizes(plot_sizes, &o);
		printf(" Plot: %s\n", plot_sizes);
	}
	printf("\n");
	if (counters)
		print_counters(&b);
	return 0;
}
