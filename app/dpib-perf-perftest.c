/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * dpib-perf's perftest mode (issue 17):
 *
 *   dpib-perf write_bw|read_bw|send_bw|atomic_bw|
 *             write_lat|read_lat|send_lat|atomic_lat [options] [SERVER]
 *
 * perftest's options and columns. Two processes: the server (no SERVER)
 * listens on TCP port -p, the client connects to it; the socket carries
 * only the exchange of QPNs, PSN, GID, rkey and buffer address, a barrier
 * per message size and the client's results, the data goes over the dpib
 * device. Without SERVER on a loopback device (net_ring, the default
 * embedded dpib0), both sides run in this process, one thread driving
 * both: a requester QP and a responder QP joined through GID 0.
 *
 * Between two processes both first measure the raw DPDK packet path between
 * the same two ports (pktpath.h; before the first QP, which starts dpib's
 * engine on the port), and print it after the rows with the ratio: the
 * latency against a raw ping-pong of frames as long as the test's first
 * packet, the bandwidth's packet rate against raw frames as long as the
 * last size's packets (--no-raw skips it).
 *
 * Bandwidth: the requester keeps -t WRs outstanding on each of -q QPs, one
 * in cq_mod signaled. Latency: write_lat and send_lat are ping-pongs (each
 * side WRITEs to the other and polls the last byte, or SENDs and waits for
 * the receive), reported as half the round trip; read_lat and atomic_lat
 * time one operation's round trip on the requester.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dpib.h"
#include "dpib-perf-perftest.h"
#include "pktpath.h"

#define PT_MAX_QPS	64
#define PT_MAX_SIZE	(1u << 23)	/* -a's largest, as perftest */
#define PT_RX_DEPTH	512
#define PT_GRH		40		/* UD receives: the GRH first */
#define PT_QKEY		0x11111111
#define PT_INLINE	64
#define PT_MAGIC	0x64706962u	/* "dpib" */
#define PT_DEF_PORT	18515

enum pt_verb { PT_WRITE, PT_READ, PT_SEND, PT_ATOMIC };

static const struct {
	const char *name;
	enum pt_verb verb;
	int lat;
	const char *title;
} pt_tests[] = {
	{ "write_bw", PT_WRITE, 0, "RDMA_Write BW Test" },
	{ "read_bw", PT_READ, 0, "RDMA_Read BW Test" },
	{ "send_bw", PT_SEND, 0, "Send BW Test" },
	{ "atomic_bw", PT_ATOMIC, 0, "Atomic FETCH_AND_ADD BW Test" },
	{ "write_lat", PT_WRITE, 1, "RDMA_Write Latency Test" },
	{ "read_lat", PT_READ, 1, "RDMA_Read Latency Test" },
	{ "send_lat", PT_SEND, 1, "Send Latency Test" },
	{ "atomic_lat", PT_ATOMIC, 1, "Atomic FETCH_AND_ADD Latency Test" },
};

struct pt_cfg {
	int test;			/* index in pt_tests */
	enum pt_verb verb;
	int lat;
	enum ibv_qp_type conn;
	uint32_t size, iters, qps, tx_depth, cq_mod;
	double duration;		/* -D seconds; 0: -n iterations */
	int all, gbits, no_raw;
	uint16_t port;
	const char *dev, *server, *json, *plot;
};

/* One side: a device context, its QPs and one buffer for all of them. */
struct pt_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[PT_MAX_QPS];
	struct ibv_ah *ah[PT_MAX_QPS];	/* UD: to the peer's QP */
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t len;
	uint32_t region;		/* bytes per QP in each half */
	uint32_t psn;
	union ibv_gid gid;
};

/* What the sides tell each other, in network byte order. */
struct pt_wire {
	uint32_t magic, test, conn, qps, region, psn, rkey;
	uint32_t qpn[PT_MAX_QPS];
	uint64_t addr;
	uint8_t gid[16];
};

/* One row: what the client measured at one size. */
struct pt_res {
	uint32_t bytes;
	uint64_t iters;
	double peak, avg, rate;				/* B/s, B/s, msg/s */
	double min, max, med, mean, sd, p99, p999;	/* usec */
};

/* The raw packet path's run (the client's figures), if there was one. */
struct pt_raw {
	int done;
	struct pkt_params prm;
	struct pkt_result r;
};

/* Where the peer's buffer is, and whom to talk to: a copy of its wire. */
struct pt_peer {
	uint32_t qpn[PT_MAX_QPS];
	uint32_t rkey, region, psn;
	uint64_t addr;
	union ibv_gid gid;
};

static char pt_dev_label[64];
static uint32_t pt_mtu;

static void
pt_die(const char *what, int err)
{
	fprintf(stderr, "dpib-perf: %s: %s\n", what, strerror(err));
	exit(1);
}

static double
pt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int
pt_is_test(const char *name)
{
	size_t i;

	for (i = 0; i < RTE_DIM(pt_tests); i++)
		if (strcmp(name, pt_tests[i].name) == 0)
			return 1;
	return 0;
}

/* --- The TCP exchange ---------------------------------------------- */

static void
xfer(int fd, void *p, size_t n, int out)
{
	uint8_t *c = p;

	while (n > 0) {
		ssize_t k = out ? send(fd, c, n, MSG_NOSIGNAL) : recv(fd, c, n, 0);

		if (k <= 0)
			pt_die("the TCP exchange", k == 0 ? ECONNRESET : errno);
		c += k;
		n -= (size_t)k;
	}
}

static int
tcp_listen(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	int one = 1, s = socket(AF_INET, SOCK_STREAM, 0), fd;

	if (s < 0)
		pt_die("socket", errno);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(s, 1) != 0)
		pt_die("bind/listen on the TCP port", errno);
	printf("\n************************************\n"
	       "* Waiting for client to connect... *\n"
	       "************************************\n");
	fflush(stdout);
	fd = accept(s, NULL, NULL);
	if (fd < 0)
		pt_die("accept", errno);
	close(s);
	return fd;
}

static int
tcp_connect(const char *host, uint16_t port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM }, *ai, *a;
	char serv[8];
	int fd = -1, tries;

	snprintf(serv, sizeof(serv), "%u", port);
	if (getaddrinfo(host, serv, &hints, &ai) != 0)
		pt_die(host, EHOSTUNREACH);
	/* The server may still be opening its device: retry for 30 s. */
	for (tries = 0; tries < 300 && fd < 0; tries++) {
		for (a = ai; a != NULL; a = a->ai_next) {
			fd = socket(a->ai_family, a->ai_socktype, 0);
			if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) == 0)
				break;
			if (fd >= 0)
				close(fd);
			fd = -1;
		}
		if (fd < 0)
			usleep(100000);
	}
	freeaddrinfo(ai);
	if (fd < 0)
		pt_die("connect to the server", ECONNREFUSED);
	return fd;
}

/* Both sides send, then read: a barrier carrying @len bytes each way. */
static void
exchange(int fd, const void *out, void *in, size_t len)
{
	xfer(fd, (void *)(uintptr_t)out, len, 1);
	xfer(fd, in, len, 0);
}

static void
barrier(int fd)
{
	uint8_t a = 1, b;

	if (fd >= 0)
		exchange(fd, &a, &b, 1);
}

/* Has the client sent its results (the end of a -D run)? */
static int
peer_done(int fd)
{
	uint8_t c;

	return fd >= 0 && recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

/* The results as text: the two hosts need not share a double layout. */
static void
res_send(int fd, const struct pt_res *r)
{
	char line[512] = { 0 };

	snprintf(line, sizeof(line), "%u %" PRIu64 " %.17g %.17g %.17g %.17g "
		 "%.17g %.17g %.17g %.17g %.17g %.17g", r->bytes, r->iters,
		 r->peak, r->avg, r->rate, r->min, r->max, r->med, r->mean,
		 r->sd, r->p99, r->p999);
	xfer(fd, line, sizeof(line), 1);
}

static void
res_recv(int fd, struct pt_res *r)
{
	char line[512];

	xfer(fd, line, sizeof(line), 0);
	line[sizeof(line) - 1] = '\0';
	if (sscanf(line, "%u %" SCNu64 " %lf %lf %lf %lf %lf %lf %lf %lf %lf "
		   "%lf", &r->bytes, &r->iters, &r->peak, &r->avg, &r->rate,
		   &r->min, &r->max, &r->med, &r->mean, &r->sd, &r->p99,
		   &r->p999) != 12)
		pt_die("the client's results", EPROTO);
}

/*
 * The server exits after the client has: the client's socket closes once
 * its process is gone, its link torn down. Both tearing a memif link down
 * at once race in memif's disconnect (lib/verbs/eal.c, memif_settle).
 */
static void
outlive(int fd)
{
	uint8_t c;

	while (recv(fd, &c, 1, 0) > 0)
		;
	close(fd);
	usleep(100000);
}

/* --- Device, QPs ---------------------------------------------------- */

static struct ibv_context *
pt_open(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	int i = 0;

	if (list == NULL || list[0] == NULL)
		pt_die("no dpib device", errno ? errno : ENODEV);
	while (name != NULL && list[i] != NULL &&
	       strcmp(ibv_get_device_name(list[i]), name) != 0)
		i++;
	if (list[i] == NULL)
		pt_die(name, ENODEV);
	snprintf(pt_dev_label, sizeof(pt_dev_label), "%s",
		 ibv_get_device_name(list[i]));
	ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (ctx == NULL)
		pt_die("open device", errno);
	return ctx;
}

/* A loopback device: its port is a net_ring looping frames back. */
static int
pt_loopback(struct ibv_context *ctx)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	uint16_t port;

	return dpib_port_id(ctx, &port) == 0 &&
	       rte_eth_dev_get_name_by_port(port, name) == 0 &&
	       strncmp(name, "net_ring", 8) == 0;
}

static uint32_t
rx_depth(const struct pt_cfg *c)
{
	return c->verb == PT_SEND ? PT_RX_DEPTH : 1;
}

static void
post_recv(struct pt_side *s, uint32_t q)
{
	struct ibv_sge sge = {
		(uintptr_t)s->buf + s->len / 2 + (uint64_t)q * s->region,
		s->region, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = q, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (ibv_post_recv(s->qp[q], &wr, &bad) != 0)
		pt_die("post_recv", EIO);
}

static void
side_create(struct pt_side *s, struct ibv_context *ctx,
	    const struct pt_cfg *c, uint32_t max_size)
{
	uint32_t q;

	s->ctx = ctx;
	s->region = RTE_ALIGN_CEIL(RTE_MAX(max_size, 64u) +
				   (c->conn == IBV_QPT_UD ? PT_GRH : 0), 64);
	s->len = 2 * (size_t)s->region * c->qps;
	s->buf = aligned_alloc(4096, RTE_ALIGN_CEIL(s->len, 4096));
	if (s->buf == NULL)
		pt_die("buffer", ENOMEM);
	memset(s->buf, 0, s->len);
	s->pd = ibv_alloc_pd(ctx);
	if (s->pd == NULL)
		pt_die("alloc_pd", ENOMEM);
	s->mr = ibv_reg_mr(s->pd, s->buf, s->len, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC);
	if (s->mr == NULL)
		pt_die("reg_mr", errno);
	s->cq = ibv_create_cq(ctx, (int)(c->qps * (c->tx_depth +
					 rx_depth(c)) + 64), NULL, NULL, 0);
	if (s->cq == NULL)
		pt_die("create_cq", errno);
	for (q = 0; q < c->qps; q++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = s->cq, .recv_cq = s->cq, .qp_type = c->conn,
			.cap = { .max_send_wr = c->tx_depth,
				 .max_recv_wr = rx_depth(c),
				 .max_send_sge = 1, .max_recv_sge = 1,
				 .max_inline_data = PT_INLINE },
		};

		s->qp[q] = ibv_create_qp(s->pd, &ia);
		if (s->qp[q] == NULL)
			pt_die("create_qp", errno);
	}
	s->psn = (uint32_t)(rte_rdtsc() ^ (uintptr_t)s) & 0xffffff;
	if (ibv_query_gid(ctx, 1, 0, &s->gid) != 0)
		pt_die("ibv_query_gid", EIO);
}

static void
wire_fill(const struct pt_side *s, const struct pt_cfg *c, struct pt_wire *w)
{
	uint32_t q;

	memset(w, 0, sizeof(*w));
	w->magic = htonl(PT_MAGIC);
	w->test = htonl((uint32_t)c->test);
	w->conn = htonl((uint32_t)c->conn);
	w->qps = htonl(c->qps);
	w->region = htonl(s->region);
	w->psn = htonl(s->psn);
	w->rkey = htonl(s->mr->rkey);
	for (q = 0; q < c->qps; q++)
		w->qpn[q] = htonl(s->qp[q]->qp_num);
	w->addr = rte_cpu_to_be_64((uintptr_t)s->buf);
	memcpy(w->gid, s->gid.raw, 16);
}

static void
wire_read(const struct pt_wire *w, const struct pt_cfg *c, struct pt_peer *p)
{
	uint32_t q;

	if (ntohl(w->magic) != PT_MAGIC || ntohl(w->test) != (uint32_t)c->test ||
	    ntohl(w->conn) != (uint32_t)c->conn || ntohl(w->qps) != c->qps) {
		fprintf(stderr, "dpib-perf: the peer runs another test, "
			"connection type or QP count\n");
		exit(1);
	}
	for (q = 0; q < c->qps; q++)
		p->qpn[q] = ntohl(w->qpn[q]);
	p->rkey = ntohl(w->rkey);
	p->region = ntohl(w->region);
	p->psn = ntohl(w->psn);
	p->addr = rte_be_to_cpu_64(w->addr);
	memcpy(p->gid.raw, w->gid, 16);
}

static void
modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	int err = ibv_modify_qp(qp, a, mask);

	if (err)
		pt_die(what, err);
}

/* INIT, RTR, RTS for one QP towards the peer's QP @q. */
static void
qp_connect(struct pt_side *s, const struct pt_cfg *c, const struct pt_peer *p,
	   uint32_t q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_ah_attr ah = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = p->gid, .hop_limit = 64 },
	};
	struct ibv_qp *qp = s->qp[q];

	if (c->conn == IBV_QPT_UD) {
		a.qkey = PT_QKEY;
		modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		       IBV_QP_QKEY, "modify to INIT");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		modify(qp, &a, IBV_QP_STATE, "modify to RTR");
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = s->psn;
		modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "modify to RTS");
		s->ah[q] = ibv_create_ah(s->pd, &ah);
		if (s->ah[q] == NULL)
			pt_die("create_ah", errno);
		return;
	}
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		(c->conn == IBV_QPT_RC ? IBV_ACCESS_REMOTE_READ |
		 IBV_ACCESS_REMOTE_ATOMIC : 0);
	modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
	       IBV_QP_ACCESS_FLAGS, "modify to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_256 + __builtin_ctz(pt_mtu / 256);
	a.dest_qp_num = p->qpn[q];
	a.rq_psn = p->psn;
	a.ah_attr = ah;
	if (c->conn == IBV_QPT_RC) {
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = 1;
		modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
		       "modify to RTR");
	} else {
		modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, "modify to RTR");
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = s->psn;
	if (c->conn == IBV_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 16;
		modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
		       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		       IBV_QP_MAX_QP_RD_ATOMIC, "modify to RTS");
	} else {
		modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "modify to RTS");
	}
}

static void
side_connect(struct pt_side *s, const struct pt_cfg *c,
	     const struct pt_peer *p)
{
	uint32_t q, k;

	for (q = 0; q < c->qps; q++) {
		qp_connect(s, c, p, q);
		for (k = 0; k < rx_depth(c) && c->verb == PT_SEND; k++)
			post_recv(s, q);
	}
}

/* --- Posting ---------------------------------------------------------- */

/*
 * One WR of the test's verb on QP @q, from the first half of the local
 * buffer to (or, for READ, from) the second half of the peer's.
 */
static void
post_op(struct pt_side *s, const struct pt_cfg *c, const struct pt_peer *p,
	uint32_t q, uint32_t size, uint64_t wr_id, int signaled)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + (uint64_t)q * s->region,
			       size, s->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	}, *bad;
	uint64_t raddr = p->addr + (uint64_t)c->qps * p->region +
			 (uint64_t)q * p->region;
	int err;

	switch (c->verb) {
	case PT_WRITE:
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = p->rkey;
		break;
	case PT_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = p->rkey;
		break;
	case PT_ATOMIC:
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = p->rkey;
		wr.wr.atomic.compare_add = 1;
		break;
	case PT_SEND:
		wr.opcode = IBV_WR_SEND;
		if (c->conn == IBV_QPT_UD) {
			wr.wr.ud.ah = s->ah[q];
			wr.wr.ud.remote_qpn = p->qpn[q];
			wr.wr.ud.remote_qkey = PT_QKEY;
		}
		break;
	}
	if (size <= PT_INLINE && c->verb != PT_READ && c->verb != PT_ATOMIC)
		wr.send_flags |= IBV_SEND_INLINE;
	err = ibv_post_send(s->qp[q], &wr, &bad);
	if (err)
		pt_die("post_send", err);
}

static void
wc_check(const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "dpib-perf: completion with error: %s "
			"(opcode %d)\n", ibv_wc_status_str(wc->status),
			wc->opcode);
		exit(1);
	}
}

/* The responder of send tests: every receive taken is posted again. */
static int
service_recv(struct pt_side *s)
{
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(s->cq, 32, wc), i;

	for (i = 0; i < n; i++) {
		wc_check(&wc[i]);
		if (wc[i].opcode == IBV_WC_RECV)
			post_recv(s, (uint32_t)wc[i].wr_id);
	}
	return n;
}

/* --- Bandwidth -------------------------------------------------------- */

/* Completion points, for the peak: (time, messages done by then). */
struct pt_trace {
	double *t;
	uint64_t *n;
	size_t len, cap;
};

static void
trace_add(struct pt_trace *tr, double t, uint64_t n)
{
	if (tr->len == tr->cap) {
		tr->cap = tr->cap ? 2 * tr->cap : 4096;
		tr->t = realloc(tr->t, tr->cap * sizeof(*tr->t));
		tr->n = realloc(tr->n, tr->cap * sizeof(*tr->n));
		if (tr->t == NULL || tr->n == NULL)
			pt_die("trace", ENOMEM);
	}
	tr->t[tr->len] = t;
	tr->n[tr->len++] = n;
}

/* The best rate over any stretch of at least @win messages. */
static double
trace_peak(const struct pt_trace *tr, uint64_t win)
{
	double best = 0;
	size_t j = 0, k;

	for (k = 1; k < tr->len; k++) {
		while (j + 1 < k && tr->n[k] - tr->n[j + 1] >= win)
			j++;
		if (tr->n[k] - tr->n[j] >= win && tr->t[k] > tr->t[j])
			best = RTE_MAX(best, (tr->n[k] - tr->n[j]) /
				       (tr->t[k] - tr->t[j]));
	}
	return best;
}

/*
 * The requester: -t WRs outstanding per QP, every cq_mod-th signaled;
 * wr_id carries the QP and the count its completion stands for. @rsp, in
 * loopback, is the responder to keep in receives meanwhile.
 */
static void
bw_client(struct pt_side *s, struct pt_side *rsp, const struct pt_cfg *c,
	  const struct pt_peer *p, uint32_t size, struct pt_res *r)
{
	uint64_t posted[PT_MAX_QPS] = { 0 }, done[PT_MAX_QPS] = { 0 };
	uint64_t limit[PT_MAX_QPS], total = 0, want;
	struct pt_trace tr = { 0 };
	struct ibv_wc wc[32];
	double t0, t1, end = 0;
	uint32_t q, finished = 0;

	int n, i;

	for (q = 0; q < c->qps; q++)
		limit[q] = c->duration > 0 ? UINT64_MAX : c->iters;
	t0 = t1 = pt_now();
	if (c->duration > 0)
		end = t0 + c->duration;
	trace_add(&tr, t0, 0);
	while (finished < c->qps) {
		if (end > 0 && pt_now() >= end) {
			/* Stop at the next signaled WR of each QP. */
			for (q = 0; q < c->qps; q++)
				limit[q] = RTE_MIN(limit[q],
					(RTE_MAX(posted[q], 1ull) + c->cq_mod -
					 1) / c->cq_mod * c->cq_mod);
			end = 0;
		}
		for (q = 0; q < c->qps; q++)
			while (posted[q] < limit[q] &&
			       posted[q] - done[q] < c->tx_depth) {
				uint64_t k = posted[q] + 1;

				post_op(s, c, p, q, size, q | (k << 8),
					k % c->cq_mod == 0 || k == limit[q]);
				posted[q] = k;
			}
		n = ibv_poll_cq(s->cq, 32, wc);
		if (n > 0)
			t1 = pt_now();
		for (i = 0; i < n; i++) {
			wc_check(&wc[i]);
			q = wc[i].wr_id & 0xff;
			total += (wc[i].wr_id >> 8) - done[q];
			done[q] = wc[i].wr_id >> 8;
		}
		if (n > 0)
			trace_add(&tr, t1, total);
		for (q = 0, finished = 0; q < c->qps; q++)
			finished += done[q] == limit[q];
		if (rsp != NULL && c->verb == PT_SEND)
			service_recv(rsp);
	}
	t1 = tr.t[tr.len - 1];
	want = RTE_MAX((uint64_t)c->tx_depth * c->qps, total / 100);
	r->bytes = size;
	r->iters = c->duration > 0 ? total : c->iters;
	r->rate = total / (t1 - t0);
	r->avg = r->rate * size;
	r->peak = RTE_MAX(trace_peak(&tr, RTE_MIN(want, total)) * size, r->avg);
	free(tr.t);
	free(tr.n);
}

/* The server of a bandwidth test: receives posted again, until the end. */
static void
bw_server(struct pt_side *s, const struct pt_cfg *c, int fd)
{
	uint32_t spin = 0;
	struct ibv_wc wc;

	for (;;) {
		if (c->verb == PT_SEND)
			service_recv(s);
		else if (ibv_poll_cq(s->cq, 1, &wc) > 0)
			wc_check(&wc);
		if ((++spin & 1023) == 0 && peer_done(fd))
			return;
	}
}

/* --- Latency ---------------------------------------------------------- */

static uint8_t
tag(uint64_t i)
{
	return (uint8_t)(i % 255 + 1);
}

/* Reap completions; returns the receives among them, posted again. */
static uint32_t
reap(struct pt_side *s)
{
	struct ibv_wc wc[16];
	uint32_t got = 0;
	int n = ibv_poll_cq(s->cq, 16, wc), i;

	for (i = 0; i < n; i++) {
		wc_check(&wc[i]);
		if (wc[i].opcode == IBV_WC_RECV) {
			got++;
			post_recv(s, 0);
		}
	}
	return got;
}

/* Ping: the WRITE carrying tag(i) in its last byte, or the SEND. */
static void
pp_post(struct pt_side *s, const struct pt_cfg *c, const struct pt_peer *p,
	uint32_t size, uint64_t i)
{
	if (c->verb == PT_WRITE)
		s->buf[size - 1] = tag(i);
	post_op(s, c, p, 0, size, i, 1);
}

/*
 * Pong: the peer's WRITE seen in the last byte, or its SEND received.
 * Returns 0 when the client ended a -D run instead (the server side).
 */
static int
pp_wait(struct pt_side *s, const struct pt_cfg *c, uint32_t size, uint64_t i,
	int fd, uint32_t *pending)
{
	volatile uint8_t *last = s->buf + s->len / 2 + size - 1;
	uint32_t spin = 0;

	for (;;) {
		*pending += reap(s);
		if (c->verb == PT_WRITE ? *last == tag(i) : *pending > 0)
			break;
		if ((++spin & 4095) == 0 && peer_done(fd))
			return 0;
	}
	if (c->verb == PT_SEND)
		(*pending)--;
	return 1;
}

/* The requester's own round trip, one operation at a time. */
static double
op_once(struct pt_side *s, const struct pt_cfg *c, const struct pt_peer *p,
	uint32_t size, uint64_t i)
{
	uint64_t t0 = rte_rdtsc();
	struct ibv_wc wc;
	int n;

	post_op(s, c, p, 0, size, i, 1);
	while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0)
		;
	if (n < 0)
		pt_die("poll_cq", EIO);
	wc_check(&wc);
	return (rte_rdtsc() - t0) * 1e6 / rte_get_tsc_hz();
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
lat_stats(double *v, uint64_t n, struct pt_res *r)
{
	double sum = 0, sq = 0;
	uint64_t i;

	qsort(v, n, sizeof(*v), cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	r->mean = sum / n;
	for (i = 0; i < n; i++)
		sq += (v[i] - r->mean) * (v[i] - r->mean);
	r->sd = sqrt(sq / n);
	r->min = v[0];
	r->max = v[n - 1];
	r->med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	r->p99 = v[RTE_MIN((uint64_t)(n * 0.99), n - 1)];
	r->p999 = v[RTE_MIN((uint64_t)(n * 0.999), n - 1)];
	r->iters = n;
}

/*
 * One latency run at @size. @cli and @srv are the local sides (both in
 * loopback, one of them between two processes). Ping-pong tests take
 * half of each round trip, as perftest does.
 */
static void
lat_run(struct pt_side *cli, struct pt_side *srv, const struct pt_cfg *c,
	const struct pt_peer *to_srv, const struct pt_peer *to_cli,
	uint32_t size, int fd, struct pt_res *r)
{
	int pingpong = c->verb == PT_WRITE || c->verb == PT_SEND;
	uint64_t i, cap = c->duration > 0 ? 1u << 20 : c->iters;
	uint32_t cpend = 0, spend = 0;
	double *lat = NULL, end = c->duration > 0 ? pt_now() + c->duration : 0;

	if (cli != NULL && (lat = malloc(cap * sizeof(*lat))) == NULL)
		pt_die("samples", ENOMEM);
	if (srv != NULL && !pingpong && cli == NULL) {
		bw_server(srv, c, fd);	/* READ, atomics: nothing to do */
		return;
	}
	for (i = 0; c->duration > 0 || i < c->iters; i++) {
		uint64_t t0 = rte_rdtsc();

		if (cli != NULL && ((end > 0 && pt_now() >= end) || i == cap))
			break;
		if (!pingpong) {
			lat[i] = op_once(cli, c, to_srv, size, i);
			continue;
		}
		if (cli != NULL)
			pp_post(cli, c, to_srv, size, i);
		if (srv != NULL) {
			if (!pp_wait(srv, c, size, i, cli ? -1 : fd, &spend))
				return;
			pp_post(srv, c, to_cli, size, i);
		}
		if (cli != NULL) {
			pp_wait(cli, c, size, i, -1, &cpend);
			lat[i] = (rte_rdtsc() - t0) * 1e6 / rte_get_tsc_hz() / 2;
		}
	}
	if (cli == NULL) {
		/* The server: drain until the client's results come. */
		while (!peer_done(fd))
			reap(srv);
		return;
	}
	/* Let the last replies' send completions arrive. */
	if (srv != NULL)
		reap(srv);
	r->bytes = size;
	lat_stats(lat, i, r);
	free(lat);
}

/* --- Output ----------------------------------------------------------- */

static const char *
conn_name(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : "UD";
}

static void
print_dashes(void)
{
	printf("%.87s\n", "------------------------------------------------"
	       "---------------------------------------");
}

static void
print_addr(const char *who, const struct pt_side *s, const struct pt_peer *p,
	   uint32_t q)
{
	char g[64];

	inet_ntop(AF_INET6, p ? p->gid.raw : s->gid.raw, g, sizeof(g));
	printf(" %s address: LID 0000 QPN %#06x PSN %#08x RKey %#08x VAddr "
	       "%#016" PRIx64 "\n", who, p ? p->qpn[q] : s->qp[q]->qp_num,
	       p ? p->psn : s->psn, p ? p->rkey : s->mr->rkey,
	       p ? p->addr : (uint64_t)(uintptr_t)s->buf);
	printf(" GID: %s\n", g);
}

static void
print_header(const struct pt_cfg *c, const char *where, int tcp,
	     const struct pt_side *s, const struct pt_peer *p)
{
	uint32_t q;

	printf("\n");
	print_dashes();
	printf("                    %s\n", pt_tests[c->test].title);
	printf(" Dual-port       : OFF\t\tDevice         : %s\n", pt_dev_label);
	printf(" Number of qps   : %u\t\tTransport type : IB\n", c->qps);
	printf(" Connection type : %s\t\tUsing SRQ      : OFF\n",
	       conn_name(c->conn));
	printf(" Mode            : %s\n", where);
	if (!c->lat || c->verb == PT_READ || c->verb == PT_ATOMIC)
		printf(" TX depth        : %u\n", c->tx_depth);
	if (!c->lat)
		printf(" CQ Moderation   : %u\n", c->cq_mod);
	if (c->verb == PT_SEND)
		printf(" RX depth        : %u\n", PT_RX_DEPTH);
	printf(" Mtu             : %u[B]\n", pt_mtu);
	printf(" Link type       : Ethernet\n");
	printf(" GID index       : 0\n");
	printf(" Max inline data : %u[B]\n", PT_INLINE);
	printf(" rdma_cm QPs\t : OFF\n");
	printf(" Data ex. method : %s\n", tcp ? "Ethernet" : "none (one process)");
	print_dashes();
	for (q = 0; q < c->qps && s != NULL; q++) {
		print_addr("local", s, NULL, q);
		if (p != NULL)
			print_addr("remote", NULL, p, q);
	}
	print_dashes();
	if (c->lat)
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  "
		       "t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
		       "99%% percentile[usec]   99.9%% percentile[usec] \n");
	else
		printf(" #bytes     #iterations    BW peak[%s]    "
		       "BW average[%s]   MsgRate[Mpps]\n",
		       c->gbits ? "Gb/sec" : "MB/sec",
		       c->gbits ? "Gb/sec" : "MB/sec");
	fflush(stdout);
}

/* perftest's units: MB = 2^20 bytes, Gb = 10^9 bits. */
static double
bw_unit(const struct pt_cfg *c, double bytes_per_s)
{
	return c->gbits ? bytes_per_s * 8 / 1e9 : bytes_per_s / 1048576.0;
}

static void
print_row(const struct pt_cfg *c, const struct pt_res *r)
{
	if (c->lat)
		printf(" %-7u %-10" PRIu64 " %-7.2f        %-7.2f      %-7.2f"
		       "     \t       %-7.2f     \t%-7.2f\t\t%-7.2f  \t\t"
		       "%-7.2f\n", r->bytes, r->iters, r->min, r->max, r->med,
		       r->mean, r->sd, r->p99, r->p999);
	else
		printf(" %-10u %-10" PRIu64 "       %-.2f            %-.2f"
		       "\t\t   %-.6f\n", r->bytes, r->iters, bw_unit(c, r->peak),
		       bw_unit(c, r->avg), r->rate / 1e6);
	fflush(stdout);
}

static double raw_ratio(const struct pt_cfg *c, const struct pt_res *first,
			const struct pt_res *last, const struct pt_raw *raw);

static void
write_json(const struct pt_cfg *c, const struct pt_res *r, uint32_t n,
	   int loopback, const struct pt_raw *raw)
{
	FILE *f = fopen(c->json, "w");
	const struct pt_res *first = r;
	uint32_t i;

	if (f == NULL)
		pt_die(c->json, errno);
	fprintf(f, "{\"tool\":\"dpib-perf\",\"test\":\"%s\",\"device\":\"%s\","
		"\"mode\":\"%s\",\"connection\":\"%s\",\"qps\":%u,"
		"\"tx_depth\":%u,\"cq_mod\":%u,\"mtu\":%u,\"results\":[",
		pt_tests[c->test].name, pt_dev_label,
		loopback ? "loopback" : c->server ? "client" : "server",
		conn_name(c->conn), c->qps, c->tx_depth, c->cq_mod, pt_mtu);
	for (i = 0; i < n; i++, r++) {
		fprintf(f, "%s\n {\"bytes\":%u,\"iterations\":%" PRIu64,
			i ? "," : "", r->bytes, r->iters);
		if (c->lat)
			fprintf(f, ",\"t_min_us\":%.3f,\"t_max_us\":%.3f,"
				"\"t_typical_us\":%.3f,\"p50_us\":%.3f,"
				"\"t_avg_us\":%.3f,\"t_stdev_us\":%.3f,"
				"\"p99_us\":%.3f,\"p99_9_us\":%.3f}", r->min,
				r->max, r->med, r->med, r->mean, r->sd, r->p99,
				r->p999);
		else
			fprintf(f, ",\"bw_peak_MBps\":%.3f,\"bw_avg_MBps\":%.3f,"
				"\"bw_peak_Gbps\":%.3f,\"bw_avg_Gbps\":%.3f,"
				"\"msg_rate_Mpps\":%.6f}", r->peak / 1048576.0,
				r->avg / 1048576.0, r->peak * 8 / 1e9,
				r->avg * 8 / 1e9, r->rate / 1e6);
	}
	fprintf(f, "\n]");
	if (raw->done && c->lat)
		fprintf(f, ",\n\"raw\":{\"frame_bytes\":%u,\"iterations\":%u,"
			"\"min_us\":%.3f,\"typical_us\":%.3f,\"p99_us\":%.3f,"
			"\"dpib_over_raw\":%.3f}", raw->prm.size,
			raw->prm.iters, raw->r.min_us, raw->r.typical_us,
			raw->r.p99_us, raw_ratio(c, first, first + n - 1, raw));
	else if (raw->done)
		fprintf(f, ",\n\"raw\":{\"frame_bytes\":%u,\"seconds\":%u,"
			"\"mpps\":%.4f,\"gbps\":%.3f,\"loss\":%.6f,"
			"\"dpib_over_raw\":%.3f}", raw->prm.size,
			raw->prm.secs, raw->r.mpps, raw->r.gbps, raw->r.loss,
			raw_ratio(c, first, first + n - 1, raw));
	fprintf(f, "}\n");
	fclose(f);
}

/* --- Options ---------------------------------------------------------- */

static void
pt_usage(FILE *f)
{
	fprintf(f,
	"usage: dpib-perf TEST [options] [SERVER_ADDR]\n"
	"  TEST: write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat\n"
	"        atomic_lat (perftest's ib_<TEST>)\n"
	"  Without SERVER_ADDR on a loopback device (the default dpib0): both\n"
	"  sides in this process; on any other device: the server, waiting for\n"
	"  the client on TCP port -p. With SERVER_ADDR: the client.\n"
	"  -d, --ib-dev=DEV       the device (default: the first)\n"
	"  -s, --size=BYTES       message size (default 65536 bw, 2 lat;\n"
	"                         atomics: 8)\n"
	"  -n, --iters=N          iterations (default 5000 bw, 1000 lat)\n"
	"  -D, --duration=SECS    run for SECS seconds instead of -n\n"
	"  -q, --qp=N             QPs (default 1, at most %d; bw tests)\n"
	"  -t, --tx-depth=N       WRs outstanding per QP (default 128 bw, 1 lat)\n"
	"  -Q, --cq-mod=N         one WR in N signaled (default 100, bw)\n"
	"  -a, --all              all sizes 2 .. 2^23 (up to the device's\n"
	"                         max_msg_sz; UD: the MTU)\n"
	"  -F, --CPU-freq         accepted; there is no frequency warning\n"
	"  -c, --connection=TYPE  RC (default), UC (write, send) or UD (send)\n"
	"  -p, --port=PORT        TCP port of the exchange (default %d)\n"
	"      --report_gbits     bandwidth in Gb/sec (10^9 bits), not MB/sec\n"
	"      --json FILE        the rows as JSON (latency: p50 too)\n"
	"      --plot FILE        with -a: an SVG of the rows against the size\n"
	"      --no-raw           two processes: skip the raw packet path\n"
	"                         (measured by default before the test)\n"
	"  -h, --help             this text\n", PT_MAX_QPS, PT_DEF_PORT);
}

static uint32_t
num(const char *opt, const char *s, uint32_t lo, uint32_t hi)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (end == s || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "dpib-perf: %s %s: a number %u .. %u\n", opt, s,
			lo, hi);
		exit(1);
	}
	return (uint32_t)v;
}

static void
parse(struct pt_cfg *c, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'D' },
		{ "qp", required_argument, NULL, 'q' },
		{ "tx-depth", required_argument, NULL, 't' },
		{ "cq-mod", required_argument, NULL, 'Q' },
		{ "all", no_argument, NULL, 'a' },
		{ "CPU-freq", no_argument, NULL, 'F' },
		{ "connection", required_argument, NULL, 'c' },
		{ "port", required_argument, NULL, 'p' },
		{ "report_gbits", no_argument, NULL, 'G' },
		{ "json", required_argument, NULL, 'J' },
		{ "no-raw", no_argument, NULL, 'R' },
		{ "plot", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o, size_set = 0, depth_set = 0;

	while ((o = getopt_long(argc, argv, "d:s:n:D:q:t:Q:aFc:p:h", lo,
				NULL)) != -1) {
		switch (o) {
		case 'd': c->dev = optarg; break;
		case 's': c->size = num("-s", optarg, 1, 1u << 30);
			  size_set = 1; break;
		case 'n': c->iters = num("-n", optarg, 5, 1u << 30); break;
		case 'D': c->duration = num("-D", optarg, 1, 3600); break;
		case 'q': c->qps = num("-q", optarg, 1, PT_MAX_QPS); break;
		case 't': c->tx_depth = num("-t", optarg, 1, 8192);
			  depth_set = 1; break;
		case 'Q': c->cq_mod = num("-Q", optarg, 1, 8192); break;
		case 'a': c->all = 1; break;
		case 'F': break;
		case 'c':
			if (strcmp(optarg, "RC") == 0)
				c->conn = IBV_QPT_RC;
			else if (strcmp(optarg, "UC") == 0)
				c->conn = IBV_QPT_UC;
			else if (strcmp(optarg, "UD") == 0)
				c->conn = IBV_QPT_UD;
			else
				goto bad;
			break;
		case 'p': c->port = (uint16_t)num("-p", optarg, 1, 65535);
			  break;
		case 'G': c->gbits = 1; break;
		case 'J': c->json = optarg; break;
		case 'R': c->no_raw = 1; break;
		case 'P': c->plot = optarg; break;
		case 'h': pt_usage(stdout); exit(0);
		default: goto bad;
		}
	}
	if (optind < argc)
		c->server = argv[optind++];
	if (optind < argc)
		goto bad;
	/* As perftest: UC has no READ or atomics, UD only SENDs. */
	if ((c->conn == IBV_QPT_UC && (c->verb == PT_READ ||
				       c->verb == PT_ATOMIC)) ||
	    (c->conn == IBV_QPT_UD && c->verb != PT_SEND)) {
		fprintf(stderr, "dpib-perf: %s does not run over %s\n",
			pt_tests[c->test].name, conn_name(c->conn));
		exit(1);
	}
	if (c->lat && c->qps > 1) {
		fprintf(stderr, "dpib-perf: latency tests run one QP (as "
			"perftest)\n");
		exit(1);
	}
	if (!size_set)
		c->size = c->lat ? 2 : 65536;
	if (c->verb == PT_ATOMIC)
		c->size = 8;
	if (!depth_set)
		c->tx_depth = c->lat ? 1 : 128;
	if (c->lat && c->verb != PT_READ && c->verb != PT_ATOMIC)
		c->tx_depth = RTE_MAX(c->tx_depth, 16u);
	if (c->iters == 0)
		c->iters = c->lat ? 1000 : 5000;
	if (!c->lat)
		c->tx_depth = RTE_MIN(c->tx_depth, c->iters);
	c->cq_mod = RTE_MIN(c->cq_mod, c->tx_depth);
	if (c->plot != NULL && (!c->all || c->verb == PT_ATOMIC)) {
		fprintf(stderr, "dpib-perf: --plot draws -a's sizes (atomics "
			"have one)\n");
		exit(1);
	}
	return;
bad:
	pt_usage(stderr);
	exit(1);
}

/* The sizes to run: -s, or -a's powers of two up to what fits. */
static uint32_t
sizes(const struct pt_cfg *c, uint32_t max_msg, uint32_t *out)
{
	uint32_t n = 0, s, cap = RTE_MIN(max_msg, PT_MAX_SIZE);

	if (c->conn == IBV_QPT_UD)
		cap = RTE_MIN(cap, pt_mtu);
	if (!c->all || c->verb == PT_ATOMIC) {
		if (c->size > cap) {
			fprintf(stderr, "dpib-perf: -s %u: at most %u here\n",
				c->size, cap);
			exit(1);
		}
		out[0] = c->size;
		return 1;
	}
	for (s = 2; s <= cap; s *= 2)
		out[n++] = s;
	return n;
}

/* --plot FILE: bandwidth (Gb/s) or typical latency (usec) by size. */
static void
write_plot(const struct pt_cfg *c, const struct pt_res *r, const uint32_t *sz,
	   uint32_t n, int loopback)
{
	double y[32];
	char title[200];
	uint32_t i;

	for (i = 0; i < n; i++)
		y[i] = c->lat ? r[i].med : r[i].avg * 8 / 1e9;
	snprintf(title, sizeof(title), "dpib-perf %s, %s, %s on %s%s",
		 pt_tests[c->test].name, conn_name(c->conn),
		 loopback ? "one process" : "two processes", pt_dev_label,
		 c->lat ? " (typical)" : "");
	svg_plot(c->plot, &(struct plot){ .title = title,
		 .xlabel = "message bytes",
		 .ylabel = c->lat ? "usec" : "Gbit/s (average)", .x = sz,
		 .n = n, .ns = 1, .y = { y } });
}

/* --- The raw packet path (two processes) ------------------------------- */

/* A RoCEv2 packet's headers beyond its payload: Ethernet, IPv4, UDP, BTH,
 * RETH and ICRC (a WRITE's first packet).
 */
#define PT_FRAME_HDRS	(14 + 20 + 8 + 12 + 16 + 4)

/* The frame as long as the packet of a @size message that the comparison
 * is about (a packet carries at most the MTU).
 */
static uint32_t
raw_frame(uint32_t size)
{
	uint32_t f = RTE_MIN(size, pt_mtu) + PT_FRAME_HDRS;

	return RTE_MAX(RTE_MIN(f, (uint32_t)PKT_MAX_FRAME),
		       (uint32_t)PKT_MIN_FRAME);
}

/* Both sides, on the exchange's socket, before any QP. */
static void
raw_run(const struct pt_cfg *c, struct ibv_context *ctx, int fd,
	const uint32_t *sz, uint32_t ns, struct pt_raw *raw)
{
	struct pkt_path path;

	pkt_path_open(&path, ctx, "pt_raw");
	path.sock = fd;
	if (c->server == NULL) {	/* the server side */
		pkt_path_server(&path);
		return;
	}
	raw->prm = (struct pkt_params){
		.test = c->lat ? PKT_LAT : PKT_RATE,
		.size = raw_frame(c->lat ? sz[0] : sz[ns - 1]),
		.iters = c->duration ? 10000 : RTE_MIN(c->iters, 10000u),
		.secs = 1,
	};
	pkt_path_client(&path, &raw->prm, &raw->r);
	raw->done = 1;
}

/* dpib's figure beside the raw one; 0 when there is none. */
static double
raw_ratio(const struct pt_cfg *c, const struct pt_res *first,
	  const struct pt_res *last, const struct pt_raw *raw)
{
	double pkts;

	if (!raw->done)
		return 0;
	if (c->lat) {
		/* read_lat and atomic_lat time a round trip, as perftest. */
		double half = c->verb == PT_READ || c->verb == PT_ATOMIC ?
			      first->med / 2 : first->med;

		return raw->r.typical_us > 0 ? half / raw->r.typical_us : 0;
	}
	pkts = last->rate * ((last->bytes + pt_mtu - 1) / pt_mtu);
	return raw->r.mpps > 0 ? pkts / 1e6 / raw->r.mpps : 0;
}

static void
print_raw(const struct pt_cfg *c, const struct pt_res *first,
	  const struct pt_res *last, const struct pt_raw *raw)
{
	if (!raw->done)
		return;
	printf(" Raw DPDK path between the same two ports, this run "
	       "(dpib-pktperf's):\n");
	if (c->lat)
		printf("  %u B frames ping-pong: half round trip min %.2f "
		       "typical %.2f p99 %.2f usec; dpib/raw %.2f (%u B, "
		       "typical%s)\n", raw->prm.size, raw->r.min_us,
		       raw->r.typical_us, raw->r.p99_us,
		       raw_ratio(c, first, last, raw), first->bytes,
		       c->verb == PT_READ || c->verb == PT_ATOMIC ?
		       ", half of its round trip" : "");
	else
		printf("  %u B frames one way: %.3f M frames/s, %.2f Gb/sec "
		       "(%.2f %% lost); dpib/raw %.2f (%u B messages: "
		       "%.3f M packets/s)\n", raw->prm.size, raw->r.mpps,
		       raw->r.gbps, 100 * raw->r.loss,
		       raw_ratio(c, first, last, raw), last->bytes,
		       last->rate * ((last->bytes + pt_mtu - 1) / pt_mtu) /
		       1e6);
	print_dashes();
	fflush(stdout);
}

/* --- The run ---------------------------------------------------------- */

int
pt_main(int argc, char **argv)
{
	struct pt_cfg c = { .conn = IBV_QPT_RC, .qps = 1, .cq_mod = 100,
			    .port = PT_DEF_PORT };
	struct pt_side a = { 0 }, b = { 0 };
	struct pt_side *cli = NULL, *srv = NULL, *me;
	struct pt_peer to_a = { 0 }, to_b = { 0 };
	struct pt_wire w, pw;
	struct ibv_port_attr pa;
	struct pt_res res[32] = { 0 };
	struct pt_raw raw = { 0 };
	uint32_t sz[32], ns, k;
	const char *conf = getenv("DPIB_CONF");
	int loopback, fd = -1, err, peer_no_raw;
	size_t i;

	for (i = 0; i < RTE_DIM(pt_tests); i++)
		if (strcmp(argv[1], pt_tests[i].name) == 0)
			c.test = (int)i;
	c.verb = pt_tests[c.test].verb;
	c.lat = pt_tests[c.test].lat;
	optind = 2;
	parse(&c, argc, argv);
	/* The embedded loopback device: poll, as the loopback benchmark. */
	if (conf == NULL || *conf == '\0')
		setenv("DPIB_ENGINE_MODE", "poll", 0);
	err = dpib_init();
	if (err)
		pt_die("dpib_init", err);
	a.ctx = pt_open(c.dev);
	if (ibv_query_port(a.ctx, 1, &pa) != 0)
		pt_die("query_port", EIO);
	pt_mtu = 128u << pa.active_mtu;
	loopback = c.server == NULL && pt_loopback(a.ctx);
	ns = sizes(&c, pa.max_msg_sz, sz);
	if (!loopback) {
		fd = c.server ? tcp_connect(c.server, c.port) :
				tcp_listen(c.port);
		/* Both or neither: the client says. */
		exchange(fd, &c.no_raw, &peer_no_raw, sizeof(peer_no_raw));
		if (c.server == NULL)
			c.no_raw = peer_no_raw;
		if (!c.no_raw)
			raw_run(&c, a.ctx, fd, sz, ns, &raw);
	}
	side_create(&a, a.ctx, &c, sz[ns - 1]);
	if (loopback) {
		cpu_set_t set;

		/* Keep this thread off the engine's CPU, as the loopback
		 * benchmark does.
		 */
		CPU_ZERO(&set);
		CPU_SET(0, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
		side_create(&b, a.ctx, &c, sz[ns - 1]);
		wire_fill(&a, &c, &w);
		wire_read(&w, &c, &to_a);
		wire_fill(&b, &c, &w);
		wire_read(&w, &c, &to_b);
		side_connect(&a, &c, &to_b);
		side_connect(&b, &c, &to_a);
		cli = &a;
		srv = &b;
	} else {
		wire_fill(&a, &c, &w);
		exchange(fd, &w, &pw, sizeof(w));
		if (c.server) {
			cli = &a;
			wire_read(&pw, &c, &to_b);
		} else {
			srv = &a;
			wire_read(&pw, &c, &to_a);
		}
		side_connect(&a, &c, c.server ? &to_b : &to_a);
		barrier(fd);	/* both sides' QPs ready */
	}
	me = cli ? cli : srv;
	print_header(&c, loopback ? "loopback, both sides in this process" :
		     cli ? "client" : "server (rows measured by the client)",
		     fd >= 0, me, cli ? &to_b : &to_a);
	for (k = 0; k < ns; k++) {
		if (c.verb == PT_WRITE && c.lat) {
			memset(a.buf, 0, a.len);
			if (loopback)
				memset(b.buf, 0, b.len);
		}
		barrier(fd);
		if (c.lat)
			lat_run(cli, srv, &c, &to_b, &to_a, sz[k], fd, &res[k]);
		else if (cli != NULL)
			bw_client(cli, srv, &c, &to_b, sz[k], &res[k]);
		else
			bw_server(srv, &c, fd);
		if (fd >= 0 && cli != NULL)
			res_send(fd, &res[k]);
		else if (fd >= 0)
			res_recv(fd, &res[k]);
		print_row(&c, &res[k]);
	}
	print_dashes();
	print_raw(&c, &res[0], &res[ns - 1], &raw);
	fflush(stdout);
	barrier(fd);	/* the final sync: no QP goes before both are done */
	if (c.json != NULL)
		write_json(&c, res, ns, loopback, &raw);
	if (c.plot != NULL)
		write_plot(&c, res, sz, ns, loopback);
	if (fd >= 0 && cli == NULL)
		outlive(fd);
	return 0;
}
