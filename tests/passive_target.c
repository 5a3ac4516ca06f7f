/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * One-sided means one-sided (issue 23): two processes, one RC QP each,
 * joined over TCP for the exchange like perftest. Each test has one side
 * that makes no verbs call at all while the other needs it to answer:
 *
 *   ops      the server registers memory, connects and sleeps in poll() on
 *            its socket while the client runs N WRITEs, READs (checked
 *            against what it wrote), FETCH_ADDs and CMP_SWPs (old values
 *            checked) into it; then the server checks every byte against
 *            the same schedule and the guard area behind it. With
 *            PASSIVE_IDLE_MAX=P in its environment the server then
 *            sleeps 300 ms more, the QP idle, and its whole process must
 *            have used at most P % of a CPU meanwhile: the engine that
 *            served the stream went back to sleep.
 *   rnr      the client SENDs to a QP with no receive posted, then sleeps
 *            in poll(); the server posts the receive 200 ms later. The
 *            server's completion must arrive while the client sleeps: its
 *            engine retried after each RNR NAK by itself.
 *   timeout  the client (DPIB_FAULTS dropping its frames) WRITEs 64 x
 *            4 KiB, then sleeps in poll(); the server watches the bytes
 *            arrive. They must all arrive while the client sleeps: its
 *            transport timer resent what was lost.
 *
 *   idle     a measurement: the client sleeps IDLE_GAP_MS, then READs 8
 *            bytes from the server (asleep in poll()), N times (20), and
 *            prints the median and the longest time a READ took: how
 *            soon a target's engine that went to sleep answers the next
 *            request (its loop sleeping on the port's wake-up, or napping
 *            where the port has none).
 *   abandon  the client keeps 64 KiB READs outstanding and, after N
 *            (2000), leaves without a word (_exit); the server sleeps in
 *            poll() until its socket closes and must live on; over memif
 *            its engine must have been fenced before the link's shared
 *            memory was unmapped (engine_unmap_fences).
 *
 * Usage: passive_target ops|rnr|timeout|abandon|idle [N|-] [SERVER_IP]
 * (N: ops, 100000; with SERVER_IP it is the client, as in perftest)
 * The device is the configuration's first (DPIB_CONF); GID index 0.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "dpib.h"

#define TCP_PORT	19515
#define REGION		(1u << 20)	/* the server's MR */
#define BLK		64		/* WRITE/READ unit of the ops test */
#define NBLK		4096		/* blocks written: 256 KiB */
#define ATOM_OFF	(NBLK * BLK)	/* FETCH_ADD counter, CMP_SWP word */
#define GUARD_OFF	(ATOM_OFF + 16)	/* never written: must stay zero */
#define DEPTH		32		/* ops outstanding */
#define WAIT_MS		20000		/* the sleeping side's bound */
#define IDLE_GAP_MS	20		/* idle: the sleep before each READ */

struct dest {
	uint32_t qpn, psn, rkey, pad;
	uint64_t addr;
	uint8_t gid[16];
};

static struct {
	int server, sock;
	const char *test;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct dest me, peer;
	enum ibv_mtu mtu;
} T;

/* ---- TCP: connect, exchange, one-byte messages ---- */

static int
tcp_server(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(TCP_PORT) };
	int one = 1, l, s;

	l = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(l >= 0, "socket");
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	CHECK(bind(l, (struct sockaddr *)&a, sizeof(a)) == 0, "bind :%d",
	      TCP_PORT);
	CHECK(listen(l, 1) == 0, "listen");
	s = accept(l, NULL, NULL);
	CHECK(s >= 0, "accept");
	close(l);
	return s;
}

static int
tcp_client(const char *ip)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(TCP_PORT) };
	int s, i;

	CHECK(inet_pton(AF_INET, ip, &a.sin_addr) == 1, "address %s", ip);
	for (i = 0; i < 200; i++) {	/* the server may still be starting */
		s = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(s >= 0, "socket");
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
			return s;
		close(s);
		usleep(50000);
	}
	CHECK(0, "cannot connect to %s:%d", ip, TCP_PORT);
	return -1;
}

static void
xfer(void *out, void *in, size_t len)
{
	CHECK(write(T.sock, out, len) == (ssize_t)len, "send");
	CHECK(recv(T.sock, in, len, MSG_WAITALL) == (ssize_t)len, "receive");
}

static void
say(char c)
{
	CHECK(write(T.sock, &c, 1) == 1, "send '%c'", c);
}

/*
 * Sleep in poll() on the socket, no verbs call, at most @ms: the byte the
 * peer sent, or 0 when none came in time.
 */
static char
sleep_for_byte(int ms)
{
	struct pollfd p = { .fd = T.sock, .events = POLLIN };
	char c = 0;

	if (poll(&p, 1, ms) == 1 && recv(T.sock, &c, 1, 0) != 1)
		c = 0;
	return c;
}

/* ---- verbs set-up ---- */

static void
open_all(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr port;
	union ibv_gid gid;
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2 * DEPTH, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};

	CHECK(list != NULL && list[0] != NULL, "no device");
	T.ctx = ibv_open_device(list[0]);
	CHECK(T.ctx != NULL, "open %s", ibv_get_device_name(list[0]));
	ibv_free_device_list(list);
	CHECK(ibv_query_port(T.ctx, 1, &port) == 0 &&
	      port.state == IBV_PORT_ACTIVE, "port 1 not active");
	T.mtu = port.active_mtu;
	CHECK(ibv_query_gid(T.ctx, 1, 0, &gid) == 0, "GID 0");
	T.pd = ibv_alloc_pd(T.ctx);
	T.cq = ibv_create_cq(T.ctx, 4 * DEPTH, NULL, NULL, 0);
	CHECK(T.pd != NULL && T.cq != NULL, "PD, CQ");
	qa.send_cq = qa.recv_cq = T.cq;
	T.qp = ibv_create_qp(T.pd, &qa);
	CHECK(T.qp != NULL, "QP");
	CHECK(posix_memalign((void **)&T.buf, 4096, REGION) == 0, "memory");
	memset(T.buf, 0, REGION);
	T.mr = ibv_reg_mr(T.pd, T.buf, REGION, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(T.mr != NULL, "MR");
	T.me.qpn = T.qp->qp_num;
	T.me.psn = T.server ? 0x1000 : 0x2000;
	T.me.rkey = T.mr->rkey;
	T.me.addr = (uintptr_t)T.buf;
	memcpy(T.me.gid, gid.raw, 16);
}

/* Reset -> Init -> RTR -> RTS toward the peer. */
static void
connect_qp(uint8_t timeout, uint8_t min_rnr_timer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	CHECK(ibv_modify_qp(T.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = T.mtu;
	a.dest_qp_num = T.peer.qpn;
	a.rq_psn = T.peer.psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, T.peer.gid, 16);
	CHECK(ibv_modify_qp(T.qp, &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER) == 0, "RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = T.me.psn;
	a.max_rd_atomic = 16;
	CHECK(ibv_modify_qp(T.qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0,
	      "RTS");
}

/* Poll @n completions, each successful, within @ms. */
static void
complete(int n, int ms)
{
	struct ibv_wc wc[16];
	double end = check_now() + ms / 1000.0;
	int got = 0, k, i;

	while (got < n) {
		CHECK(check_now() < end, "%d of %d completions in %d ms", got,
		      n, ms);
		k = ibv_poll_cq(T.cq, 16, wc);
		CHECK(k >= 0, "poll_cq");
		for (i = 0; i < k; i++)
			CHECK(wc[i].status == IBV_WC_SUCCESS, "wr %lu: %s",
			      (unsigned long)wc[i].wr_id,
			      ibv_wc_status_str(wc[i].status));
		got += k;
	}
}

/* A device counter by name (dpib_counters). */
static uint64_t
counter(const char *name)
{
	const char *const *names;
	uint64_t v[256];
	int n, i;

	n = dpib_counters(T.ctx, &names, v, 256);
	for (i = 0; i < n && i < 256; i++)
		if (strcmp(names[i], name) == 0)
			return v[i];
	CHECK(0, "no counter %s", name);
	return 0;
}

static void
counters_print(void)
{
	const char *const *names;
	uint64_t v[256];
	int n, i;

	n = dpib_counters(T.ctx, &names, v, 256);
	for (i = 0; i < n && i < 256; i++)
		if (v[i] != 0)
			fprintf(stderr, "  %s %lu\n", names[i],
				(unsigned long)v[i]);
}

/* ---- ops: the schedule both sides know ---- */

enum { OP_WRITE, OP_READ, OP_FADD, OP_CSWAP };

static int
op_kind(uint32_t i)
{
	static const int kinds[8] = { OP_WRITE, OP_WRITE, OP_READ, OP_FADD,
				      OP_WRITE, OP_READ, OP_CSWAP, OP_WRITE };

	return kinds[i % 8];
}

static uint32_t
op_block(uint32_t i)
{
	return (i * 2654435761u) % NBLK;
}

static void
op_fill(uint32_t i, uint8_t *p)
{
	uint64_t v = i * 0x9e3779b97f4a7c15ull + 1;
	int w;

	for (w = 0; w < BLK / 8; w++, v = v * 6364136223846793005ull + 1)
		memcpy(p + 8 * w, &v, 8);
}

/* The server's region after ops 0..n-1, into @img; counter and word. */
static void
ops_image(uint32_t n, uint8_t *img, uint64_t *fadd, uint64_t *cswap)
{
	uint32_t i;

	memset(img, 0, ATOM_OFF);
	*fadd = *cswap = 0;
	for (i = 0; i < n; i++)
		switch (op_kind(i)) {
		case OP_WRITE:
			op_fill(i, img + (size_t)op_block(i) * BLK);
			break;
		case OP_FADD:
			*fadd += 1;
			break;
		case OP_CSWAP:
			*cswap = i;
			break;
		}
}

/* What the client expects back in slot memory when op @i completes. */
struct expect {
	uint32_t i;
	int kind;
	uint64_t old;		/* atomics */
	uint8_t blk[BLK];	/* READ */
};

static void
ops_client(uint32_t n)
{
	static struct expect ex[DEPTH];
	uint8_t *img = calloc(1, ATOM_OFF), *slots = T.buf;
	uint64_t fadd = 0, cswap = 0;
	uint32_t posted = 0, done = 0, i;
	struct ibv_wc wc[DEPTH];
	double start, end;
	int k, j;

	CHECK(img != NULL, "memory");
	start = check_now();
	end = start + 120;
	while (done < n) {
		while (posted < n && posted - done < DEPTH) {
			struct ibv_send_wr wr = { 0 }, *bad;
			struct ibv_sge sge;
			struct expect *e = &ex[posted % DEPTH];
			uint8_t *slot = slots + (posted % DEPTH) * BLK;
			uint64_t raddr = T.peer.addr +
					 (uint64_t)op_block(posted) * BLK;

			i = posted;
			e->i = i;
			e->kind = op_kind(i);
			sge.addr = (uintptr_t)slot;
			sge.length = BLK;
			sge.lkey = T.mr->lkey;
			wr.wr_id = i;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			switch (e->kind) {
			case OP_WRITE:
				op_fill(i, slot);
				op_fill(i, img + (size_t)op_block(i) * BLK);
				wr.opcode = IBV_WR_RDMA_WRITE;
				break;
			case OP_READ:
				memset(slot, 0xee, BLK);
				memcpy(e->blk, img + (size_t)op_block(i) * BLK,
				       BLK);
				wr.opcode = IBV_WR_RDMA_READ;
				break;
			case OP_FADD:
				sge.length = 8;
				raddr = T.peer.addr + ATOM_OFF;
				e->old = fadd++;
				wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
				wr.wr.atomic.compare_add = 1;
				break;
			case OP_CSWAP:
				sge.length = 8;
				raddr = T.peer.addr + ATOM_OFF + 8;
				e->old = cswap;
				wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
				wr.wr.atomic.compare_add = cswap;
				wr.wr.atomic.swap = i;
				cswap = i;
				break;
			}
			if (e->kind == OP_FADD || e->kind == OP_CSWAP) {
				wr.wr.atomic.remote_addr = raddr;
				wr.wr.atomic.rkey = T.peer.rkey;
			} else {
				wr.wr.rdma.remote_addr = raddr;
				wr.wr.rdma.rkey = T.peer.rkey;
			}
			CHECK(ibv_post_send(T.qp, &wr, &bad) == 0, "post %u", i);
			posted++;
		}
		k = ibv_poll_cq(T.cq, DEPTH, wc);
		CHECK(k >= 0, "poll_cq");
		for (j = 0; j < k; j++) {
			struct expect *e = &ex[wc[j].wr_id % DEPTH];
			uint8_t *slot = slots + (wc[j].wr_id % DEPTH) * BLK;
			uint64_t old;

			CHECK(wc[j].status == IBV_WC_SUCCESS, "op %lu: %s",
			      (unsigned long)wc[j].wr_id,
			      ibv_wc_status_str(wc[j].status));
			CHECK(wc[j].wr_id == done, "op %lu completed, %u due",
			      (unsigned long)wc[j].wr_id, done);
			memcpy(&old, slot, 8);
			if (e->kind == OP_READ)
				CHECK(memcmp(slot, e->blk, BLK) == 0,
				      "READ %u: not what was written", e->i);
			else if (e->kind == OP_FADD || e->kind == OP_CSWAP)
				CHECK(old == e->old, "atomic %u returned %lu, "
				      "expected %lu", e->i,
				      (unsigned long)old, (unsigned long)e->old);
			done++;
		}
		CHECK(check_now() < end, "%u of %u ops in 120 s", done, n);
	}
	printf("  %u ops into a sleeping target in %.3f s\n", n,
	       check_now() - start);
	free(img);
}

/* CPU seconds of the whole process so far (every thread). */
static double
cpu_used(void)
{
	struct rusage u;

	CHECK(getrusage(RUSAGE_SELF, &u) == 0, "getrusage");
	return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
	       (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static void
idle_check(void)
{
	const char *max = getenv("PASSIVE_IDLE_MAX");
	double c0, t0, pct;

	if (max == NULL)
		return;
	c0 = cpu_used();
	t0 = check_now();
	usleep(300000);
	pct = 100 * (cpu_used() - c0) / (check_now() - t0);
	CHECK(pct <= strtod(max, NULL),
	      "%.1f %% of a CPU while idle after the stream (at most %s)",
	      pct, max);
	printf("  idle after the stream: %.1f %% of a CPU\n", pct);
}

static void
ops_server(uint32_t n)
{
	uint8_t *img = calloc(1, ATOM_OFF);
	uint64_t fadd, cswap, v;
	uint32_t i;
	char c;

	CHECK(img != NULL, "memory");
	/* No verbs call from here until the client says it is done. */
	c = sleep_for_byte(120000);
	CHECK(c == 'D', "client finished ('%c')", c ? c : '-');
	ops_image(n, img, &fadd, &cswap);
	for (i = 0; i < NBLK; i++)
		CHECK(memcmp(T.buf + (size_t)i * BLK, img + (size_t)i * BLK,
			     BLK) == 0, "block %u differs", i);
	memcpy(&v, T.buf + ATOM_OFF, 8);
	CHECK(v == fadd, "FETCH_ADD counter %lu, expected %lu",
	      (unsigned long)v, (unsigned long)fadd);
	memcpy(&v, T.buf + ATOM_OFF + 8, 8);
	CHECK(v == cswap, "CMP_SWP word %lu, expected %lu", (unsigned long)v,
	      (unsigned long)cswap);
	for (i = GUARD_OFF; i < REGION; i++)
		CHECK(T.buf[i] == 0, "byte %u outside what was written", i);
	printf("  %u ops: every byte as scheduled, the rest untouched\n", n);
	free(img);
	idle_check();
}

/* ---- abandon: the peer leaves mid-stream ---- */

#define AB_LEN		(64 * 1024)	/* each READ */
#define AB_SLOTS	(REGION / AB_LEN)

static void
abandon_post(uint32_t i)
{
	size_t off = (size_t)(i % AB_SLOTS) * AB_LEN;
	struct ibv_sge sge = { (uintptr_t)T.buf + off, AB_LEN, T.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ }, *bad;

	wr.wr.rdma.remote_addr = T.peer.addr + off;
	wr.wr.rdma.rkey = T.peer.rkey;
	CHECK(ibv_post_send(T.qp, &wr, &bad) == 0, "post READ %u", i);
}

/*
 * The client keeps DEPTH READs of 64 KiB outstanding (the server's
 * engine sends the responses) and, after @n completed, leaves with a
 * window still outstanding, without a word or a clean-up (_exit), as a
 * killed or crashed peer does.
 */
static void
abandon_client(uint32_t n)
{
	uint32_t posted, done = 0;
	struct ibv_wc wc[16];
	double end = check_now() + WAIT_MS / 1000.0;
	int k, i;

	for (posted = 0; posted < DEPTH; posted++)
		abandon_post(posted);
	while (done < n) {
		CHECK(check_now() < end, "%u of %u READs in %d ms", done, n,
		      WAIT_MS);
		k = ibv_poll_cq(T.cq, 16, wc);
		CHECK(k >= 0, "poll_cq");
		for (i = 0; i < k; i++) {
			CHECK(wc[i].status == IBV_WC_SUCCESS, "READ %lu: %s",
			      (unsigned long)wc[i].wr_id,
			      ibv_wc_status_str(wc[i].status));
			done++;
			abandon_post(posted++);
		}
	}
	printf("  left after %u READs of %u B, %d outstanding\n", done,
	       AB_LEN, DEPTH);
	printf("ok - client abandon\n");
	fflush(stdout);
	_exit(0);
}

/*
 * The server sleeps in poll() until its socket closes: the client is
 * gone. Over memif, DPDK 22.11's PMD then unmaps the link's shared
 * regions on EAL's interrupt thread while this process's engine may be
 * inside a burst on them (a perftest server died so, SIGSEGV in
 * eth_memif_tx): the engine must have passed a quiescent point before
 * the unmap (counter engine_unmap_fences), and the process lives on.
 */
static void
abandon_server(void)
{
	struct pollfd p = { .fd = T.sock, .events = POLLIN };
	double end;
	char c;

	CHECK(poll(&p, 1, WAIT_MS) == 1 && recv(T.sock, &c, 1, 0) == 0,
	      "the client's socket did not close within %d ms", WAIT_MS);
	end = check_now() + 5;
	while (counter("engine_unmap_fences") == 0) {
		CHECK(check_now() < end, "no unmap fenced 5 s after the "
		      "client left (counter engine_unmap_fences)");
		usleep(1000);
	}
	printf("  the client left mid-stream: %lu response packets sent, "
	       "the link's unmap fenced %lu time(s)\n",
	       (unsigned long)counter("tx_packets"),
	       (unsigned long)counter("engine_unmap_fences"));
}

/* ---- rnr, timeout: the requester sleeps ---- */

static void
rnr_client(void)
{
	struct ibv_sge sge = { (uintptr_t)T.buf, 64, T.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;
	double t0 = check_now();
	char c;

	memset(T.buf, 0x5a, 64);
	CHECK(ibv_post_send(T.qp, &wr, &bad) == 0, "post SEND");
	c = sleep_for_byte(WAIT_MS);
	CHECK(c == 'R', "the SEND did not arrive while this side slept "
	      "(RNR retries need its engine)");
	printf("  delivered after RNR NAKs %.3f s after the post, the "
	       "requester asleep\n", check_now() - t0);
	complete(1, 5000);
}

static void
rnr_server(void)
{
	struct ibv_sge sge = { (uintptr_t)T.buf, 64, T.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	usleep(200000);		/* the client's SEND meets no receive */
	CHECK(ibv_post_recv(T.qp, &wr, &bad) == 0, "post RECV");
	complete(1, WAIT_MS);
	CHECK(T.buf[0] == 0x5a && T.buf[63] == 0x5a, "payload");
	say('R');
}

#define TO_WRITES	64
#define TO_LEN		4096

static void
timeout_client(void)
{
	double t0 = check_now();
	int i;
	char c;

	for (i = 0; i < TO_WRITES * TO_LEN; i++)
		T.buf[i] = (uint8_t)(i * 7 + 1) | 1;
	for (i = 0; i < TO_WRITES; i++) {
		struct ibv_sge sge = { (uintptr_t)T.buf + i * TO_LEN, TO_LEN,
				       T.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE }, *bad;

		wr.wr.rdma.remote_addr = T.peer.addr + (uint64_t)i * TO_LEN;
		wr.wr.rdma.rkey = T.peer.rkey;
		CHECK(ibv_post_send(T.qp, &wr, &bad) == 0, "post WRITE %d", i);
	}
	c = sleep_for_byte(WAIT_MS);
	CHECK(c == 'T', "the WRITEs did not all arrive while this side "
	      "slept (resends need its engine)");
	complete(TO_WRITES, 5000);
	/* A resend of the go-back-N kind can come from the poster's own
	 * passes; the timer's cannot (1 ms after the post, while asleep).
	 */
	if (counter("retransmit_timeout") == 0)
		counters_print();
	CHECK(counter("retransmit_timeout") > 0, "no transport timeout: the "
	      "faults (DPIB_FAULTS) lost nothing the timer had to resend");
	printf("  %d x %d B in %.3f s through %lu timer resends, the "
	       "requester asleep\n", TO_WRITES, TO_LEN, check_now() - t0,
	       (unsigned long)counter("retransmit_timeout"));
}

static void
timeout_server(void)
{
	double end = check_now() + WAIT_MS / 1000.0;
	int i;

	/* No verbs call: watch the memory (ib_write_lat does the same). */
	for (;;) {
		for (i = 0; i < TO_WRITES * TO_LEN; i++)
			if (((volatile uint8_t *)T.buf)[i] !=
			    ((uint8_t)(i * 7 + 1) | 1))
				break;
		if (i == TO_WRITES * TO_LEN)
			break;
		CHECK(check_now() < end, "byte %d of %d never arrived", i,
		      TO_WRITES * TO_LEN);
		usleep(200);
	}
	say('T');
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
idle_client(uint32_t n)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)T.buf, .length = 8, .lkey = T.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = T.peer.addr, .rkey = T.peer.rkey },
	}, *bad;
	double *t = calloc(n, sizeof(*t)), t0;
	uint32_t i;

	CHECK(t != NULL && n > 0, "%u rounds", n);
	for (i = 0; i < n; i++) {
		CHECK(usleep(IDLE_GAP_MS * 1000) == 0, "usleep");
		t0 = check_now();
		CHECK(ibv_post_send(T.qp, &wr, &bad) == 0, "post READ");
		complete(1, WAIT_MS);
		t[i] = (check_now() - t0) * 1e6;
	}
	qsort(t, n, sizeof(*t), cmp_double);
	printf("idle: READ after %d ms idle: median %.1f us, max %.1f us "
	       "(%u rounds)\n", IDLE_GAP_MS, t[n / 2], t[n - 1], n);
	free(t);
}

int
main(int argc, char **argv)
{
	uint32_t n;
	uint8_t timeout = 14, rnr_timer = 12;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: %s ops|rnr|timeout|abandon|idle [N|-] "
			"[SERVER_IP]\n",
			argv[0]);
		return 2;
	}
	/* Like perftest: the client is the side given the server's address. */
	T.test = argv[1];
	n = argc > 2 && strcmp(argv[2], "-") != 0 ?
	    (uint32_t)strtoul(argv[2], NULL, 0) :
	    strcmp(T.test, "abandon") == 0 ? 2000 :
	    strcmp(T.test, "idle") == 0 ? 20 : 100000;
	T.server = argc < 4;
	check_current = T.test;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(T.test, "timeout") == 0)
		timeout = 8;		/* 1 ms: resends come soon */
	open_all();
	T.sock = T.server ? tcp_server() : tcp_client(argv[3]);
	xfer(&T.me, &T.peer, sizeof(T.me));
	connect_qp(timeout, rnr_timer);
	/* Both in RTS before the first request. */
	say('S');
	CHECK(sleep_for_byte(10000) == 'S', "peer ready");
	if (strcmp(T.test, "ops") == 0) {
		if (T.server) {
			ops_server(n);
		} else {
			ops_client(n);
			say('D');
		}
	} else if (strcmp(T.test, "abandon") == 0) {
		if (!T.server)
			abandon_client(n);	/* does not return */
		abandon_server();
		printf("ok - server abandon\n");
		return 0;		/* no one left to part with */
	} else if (strcmp(T.test, "rnr") == 0) {
		T.server ? rnr_server() : rnr_client();
	} else if (strcmp(T.test, "timeout") == 0) {
		T.server ? timeout_server() : timeout_client();
	} else if (strcmp(T.test, "idle") == 0) {
		if (T.server)
			CHECK(sleep_for_byte(WAIT_MS + (int)n * IDLE_GAP_MS) ==
			      'D', "the client's READs");
		else
			idle_client(n), say('D');
	} else {
		CHECK(0, "unknown test %s", T.test);
	}
	/* The peer may still need this side's ACKs: part in step. */
	say('E');
	CHECK(sleep_for_byte(10000) == 'E', "peer finished");
	printf("ok - %s %s\n", T.server ? "server" : "client", T.test);
	return 0;
}
