/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The protection holes of issue 21, one regression test each, on the
 * loopback device (127.0.0.1):
 *  - registration checks the memory (EFAULT: unmapped, or read-only where
 *    write access is asked); an MR whose memory the application unmaps,
 *    maps over or discards (munmap, MAP_FIXED, MADV_DONTNEED, glibc's free
 *    of an mmapped chunk) NAKs remote access and fails local access, and
 *    nothing reaches what is mapped there afterwards. These run in forked
 *    children, so that a crash is a failure with a name;
 *  - a UD WQE keeps its destination when its AH is destroyed and another
 *    created before it leaves;
 *  - a forged NAK or ACK whose PSN is outside what is outstanding is
 *    ignored and counted, a real ACK still completes the work;
 *  - an RC request from another source address is dropped and counted;
 *  - a READ longer than 2^31 is NAKed as an invalid request;
 *  - a READ response longer than the path MTU is a bad response;
 *  - ibv_rereg_mr checks the new translation as ibv_reg_mr does.
 * Forged frames go in through dpib_inject(); what dpib answers is read off
 * its own capture (DPIB_CAPTURE, set here).
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "roce_frame.h"

#define PEER_QPN	0x99	/* no such QP: dpib's answers loop back, dropped */
#define SQ_PSN		1000
#define RQ_PSN		2000
#define PG		4096
#define WAIT		5.0

static const struct pair_opts rc = {
	.buflen = 64 * 1024,
	.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ,
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ,
	.sq_sig_all = 1, .max_wr = 16, .max_sge = 2, .max_inline = 0,
	.max_rd_atomic = 4, .min_rnr_timer = 1, .rnr_retry = 7,
	.timeout = 20, .retry_cnt = 7,
};

static char capture[64];

/* A QP of the pair connected to the fictitious peer on 127.0.0.1. */
static void
connect_to_peer(struct pair *p, int i, enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	CHECK(ibv_modify_qp(p->qp[i], &a, IBV_QP_STATE) == 0, "reset");
	qp_connect(p->qp[i], PEER_QPN, &rc, mtu, RQ_PSN, SQ_PSN);
}

static void
post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
     uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;

	CHECK(ibv_post_send(qp, &wr, &bad) == 0, "post_send");
}

static enum ibv_wc_status
wait_status(struct ibv_cq *cq, uint64_t wr_id)
{
	struct ibv_wc wc;

	CHECK(poll_one(cq, &wc, WAIT), "no completion for %" PRIu64, wr_id);
	CHECK(wc.wr_id == wr_id, "completion %" PRIu64 ", wanted %" PRIu64,
	      wc.wr_id, wr_id);
	return wc.status;
}

static void
expect_nothing(struct ibv_cq *cq, double secs)
{
	struct ibv_wc wc;

	CHECK(!poll_one(cq, &wc, secs), "unexpected completion %" PRIu64
	      " status %s", wc.wr_id, ibv_wc_status_str(wc.status));
}

/* Both QPs of the pair (back from Error) connected to each other. */
static void
reconnect(struct pair *p)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;
	int i;

	for (i = 0; i < 2; i++) {
		CHECK(ibv_modify_qp(p->qp[i], &a, IBV_QP_STATE) == 0, "reset");
		while (ibv_poll_cq(p->cq[i], 1, &wc) == 1)
			;
	}
	pair_connect(p, &rc);
}

static struct pair w;		/* the device, opened once after the children */

/* ---- registration: EFAULT for memory that is not there ---- */

static void
reg_checks_memory(void)
{
	struct pair *p = &w;
	uint8_t *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *ro = mmap(NULL, 2 * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
	uint8_t *none = mmap(NULL, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
	struct ibv_mr *mr;

	CHECK(m != MAP_FAILED && ro != MAP_FAILED && none != MAP_FAILED, "mmap");
	CHECK(munmap(m + PG, PG) == 0, "hole");
	errno = 0;
	CHECK(ibv_reg_mr(p->pd, m, 3 * PG, IBV_ACCESS_LOCAL_WRITE) == NULL &&
	      errno == EFAULT, "range with a hole: errno %d", errno);
	errno = 0;
	CHECK(ibv_reg_mr(p->pd, m + PG, PG, 0) == NULL && errno == EFAULT,
	      "unmapped page: errno %d", errno);
	errno = 0;
	CHECK(ibv_reg_mr(p->pd, none, PG, IBV_ACCESS_REMOTE_READ) == NULL &&
	      errno == EFAULT, "PROT_NONE: errno %d", errno);
	errno = 0;
	CHECK(ibv_reg_mr(p->pd, ro, 2 * PG, IBV_ACCESS_LOCAL_WRITE) == NULL &&
	      errno == EFAULT, "read-only with LOCAL_WRITE: errno %d", errno);
	errno = 0;
	CHECK(ibv_reg_mr(p->pd, ro, 2 * PG, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE) == NULL && errno == EFAULT,
	      "read-only with REMOTE_WRITE: errno %d", errno);
	mr = ibv_reg_mr(p->pd, ro, 2 * PG, IBV_ACCESS_REMOTE_READ);
	CHECK(mr != NULL, "read-only, read rights: errno %d", errno);
	/* ibv_rereg_mr: the same checks for the new translation or rights. */
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE) == IBV_REREG_MR_ERR_CMD &&
	      errno == EFAULT, "rereg: write rights on read-only memory: %d",
	      errno);
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, m + PG,
			   PG, 0) == IBV_REREG_MR_ERR_CMD && errno == EFAULT,
	      "rereg to an unmapped page: %d", errno);
	errno = 0;
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			   (void *)(uintptr_t)0xfffffffffffff000ull, 0x2000,
			   0) == IBV_REREG_MR_ERR_CMD && errno == EINVAL,
	      "rereg: address + length wraps: %d", errno);
	CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, m, PG,
			   0) == 0, "rereg to a mapped page");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	munmap(m, PG);
	munmap(m + 2 * PG, PG);
	munmap(ro, 2 * PG);
	munmap(none, PG);
}

/* ---- memory that changes under a registration, in a child ---- */

enum change {
	CHANGE_MUNMAP,		/* munmap, then a new mapping at the address */
	CHANGE_DONTNEED,	/* madvise(MADV_DONTNEED) */
	CHANGE_MAP_FIXED,	/* mmap(MAP_FIXED) over it */
	CHANGE_FREE,		/* glibc free() of an mmapped malloc chunk */
};

/*
 * Register a target, WRITE into it (it works), change the memory under it,
 * then WRITE again: the write is NAKed (remote access error), and no byte
 * of what is mapped there afterwards changes; a SEND from the dead MR
 * fails locally (protection error).
 */
static void
changed_memory_child(int how)
{
	size_t len = 1 << 20;
	struct pair p;
	struct ibv_mr *mr;
	uint8_t *t, *again;
	size_t i;

	if (how == CHANGE_FREE) {
		t = malloc(len);	/* above the mmap threshold */
		CHECK(t != NULL, "malloc");
	} else {
		t = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(t != MAP_FAILED, "mmap");
	}
	memset(t, 0, len);
	pair_open(&p, &rc);
	pair_connect(&p, &rc);
	mr = ibv_reg_mr(p.pd, t, len, rc.mr_access);
	CHECK(mr != NULL, "reg_mr: errno %d", errno);
	fill_pattern(p.buf, PG, 1);
	post(p.qp[0], IBV_WR_RDMA_WRITE, 1, p.buf, PG, p.mr->lkey,
	     (uintptr_t)t, mr->rkey);
	CHECK(wait_status(p.cq[0], 1) == IBV_WC_SUCCESS, "first WRITE");
	CHECK(memcmp(t, p.buf, PG) == 0, "first WRITE's data");

	switch (how) {
	case CHANGE_MUNMAP:
		CHECK(munmap(t, len) == 0, "munmap");
		break;
	case CHANGE_DONTNEED:
		CHECK(madvise(t, len, MADV_DONTNEED) == 0, "madvise");
		break;
	case CHANGE_MAP_FIXED:
		break;
	case CHANGE_FREE:
		free(t);
		break;
	}
	/* What is there now: a fresh mapping at the same address (malloc's
	 * chunk starts inside a page: map from the page).
	 */
	if (how != CHANGE_DONTNEED) {
		uint8_t *base = (uint8_t *)((uintptr_t)t & ~(uintptr_t)(PG - 1));
		size_t maplen = len + PG;

		again = mmap(base, maplen, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS |
			     (how == CHANGE_MAP_FIXED ? MAP_FIXED : 0), -1, 0);
		CHECK(again != MAP_FAILED, "mmap again");
		if (again != base) {
			/* The kernel put it elsewhere: make it the address. */
			CHECK(mmap(base, maplen, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				   0) == base, "mmap fixed");
			munmap(again, maplen);
		}
	}
	CHECK(t[0] == 0, "the new mapping is not fresh");

	fill_pattern(p.buf, PG, 2);
	post(p.qp[0], IBV_WR_RDMA_WRITE, 2, p.buf, PG, p.mr->lkey,
	     (uintptr_t)t, mr->rkey);
	CHECK(wait_status(p.cq[0], 2) == IBV_WC_REM_ACCESS_ERR,
	      "WRITE through the old rkey was not refused");
	for (i = 0; i < len; i++)
		CHECK(t[i] == 0, "byte %zu of the new mapping changed", i);

	/* Local access through the dead MR: a protection error. */
	reconnect(&p);
	post(p.qp[0], IBV_WR_SEND, 3, t, PG, mr->lkey, 0, 0);
	CHECK(wait_status(p.cq[0], 3) == IBV_WC_LOC_PROT_ERR,
	      "SEND from the dead MR");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg of a dead MR");
	pair_close(&p);
}

/* Each in a child with its own dpib: a crash is a failure with a name. */
static void
in_child(enum change how)
{
	check_in_child(changed_memory_child, how, "changed memory");
}

static void
munmap_kills_mr(void)
{
	in_child(CHANGE_MUNMAP);
}

static void
madv_dontneed_kills_mr(void)
{
	in_child(CHANGE_DONTNEED);
}

static void
map_fixed_kills_mr(void)
{
	in_child(CHANGE_MAP_FIXED);
}

static void
free_of_mmapped_chunk_kills_mr(void)
{
	in_child(CHANGE_FREE);
}

/* ---- the wire: forged responses, foreign sources, lengths ---- */

/*
 * A SEND to the fictitious peer is outstanding at SQ_PSN. A NAK 1,000 PSNs
 * before it, a NAK of the PSN already acknowledged and an ACK 5,000 PSNs
 * past anything sent are ignored and counted; then the real ACK completes
 * the SEND.
 */
static void
forged_acks_ignored(void)
{
	uint8_t f[256], ext[4];
	uint64_t bad0 = counter(&w, "rx_drop_response_psn_invalid");
	uint64_t stale0 = counter(&w, "rx_drop_stale_response");
	uint64_t lost0 = counter(&w, "rx_drop_unknown_qpn");
	uint32_t qpn = w.qp[0]->qp_num, n;

	connect_to_peer(&w, 0, w.mtu);
	post(w.qp[0], IBV_WR_SEND, 10, w.buf, 64, w.mr->lkey, 0, 0);
	/* Sent: it comes back on the loopback port to a QPN nobody has. */
	wait_counter(&w, "rx_drop_unknown_qpn", lost0);
	aeth(ext, 0x62, 0);		/* NAK remote access error */
	n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_ACKNOWLEDGE, qpn,
		  SQ_PSN - 1000, ext, 4, NULL, 0);
	inject_sync(&w, f, n);
	n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_ACKNOWLEDGE, qpn,
		  SQ_PSN - 1, ext, 4, NULL, 0);
	inject_sync(&w, f, n);
	aeth(ext, 0x1f, 1);		/* ACK */
	n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_ACKNOWLEDGE, qpn,
		  SQ_PSN + 5000, ext, 4, NULL, 0);
	inject_sync(&w, f, n);
	expect_nothing(w.cq[0], 0.1);
	CHECK(counter(&w, "rx_drop_stale_response") - stale0 == 2,
	      "NAKs of acknowledged PSNs counted stale: %" PRIu64,
	      counter(&w, "rx_drop_stale_response") - stale0);
	CHECK(counter(&w, "rx_drop_response_psn_invalid") - bad0 == 1,
	      "the ACK of a PSN never sent counted invalid: %" PRIu64,
	      counter(&w, "rx_drop_response_psn_invalid") - bad0);
	n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_ACKNOWLEDGE, qpn, SQ_PSN,
		  ext, 4, NULL, 0);
	inject_sync(&w, f, n);
	CHECK(wait_status(w.cq[0], 10) == IBV_WC_SUCCESS, "the real ACK");
}

/* A WRITE from 10.9.9.9 to a QP whose peer is 127.0.0.1 is dropped. */
static void
foreign_source_dropped(void)
{
	uint8_t f[512], ext[16], data[64];
	uint64_t drop0 = counter(&w, "rx_drop_path_mismatch");
	uint64_t ack0 = counter(&w, "ack_sent");
	uint32_t n, qpn = w.qp[1]->qp_num;

	connect_to_peer(&w, 1, w.mtu);
	memset(w.buf + 8192, 0, 64);
	memset(data, 0xab, sizeof(data));
	reth(ext, (uintptr_t)w.buf + 8192, w.mr->rkey, 64);
	n = frame(f, inet_addr("10.9.9.9"), IB_RC_WRITE_ONLY, qpn, RQ_PSN,
		  ext, 16, data, 64);
	inject_sync(&w, f, n);
	CHECK(counter(&w, "rx_drop_path_mismatch") == drop0 + 1,
	      "not counted as from another path");
	CHECK(w.buf[8192] == 0 && w.buf[8192 + 63] == 0, "the WRITE executed");
	/* The same from the peer's address is executed and acknowledged. */
	n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_WRITE_ONLY, qpn, RQ_PSN,
		  ext, 16, data, 64);
	inject_sync(&w, f, n);
	CHECK(memcmp(w.buf + 8192, data, 64) == 0, "the peer's WRITE");
	wait_counter(&w, "ack_sent", ack0);	/* sent after the burst */
}

/* READ of 2^31 + 1 and 2^32 - 1 bytes: NAK invalid request (0x61). */
static void
read_over_2g_invalid(void)
{
	static const uint32_t lens[] = { 0x80000001u, 0xffffffffu };
	uint8_t f[256], ext[16];
	uint32_t n, i, qpn = w.qp[1]->qp_num;

	for (i = 0; i < DIM(lens); i++) {
		connect_to_peer(&w, 1, w.mtu);
		reth(ext, (uintptr_t)w.buf, w.mr->rkey, lens[i]);
		n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_READ_REQUEST, qpn,
			  RQ_PSN, ext, 16, NULL, 0);
		inject_sync(&w, f, n);
		CHECK(last_ack_syndrome(capture, PEER_QPN) == 0x61,
		      "READ of %#x bytes: answered %#x", lens[i],
		      last_ack_syndrome(capture, PEER_QPN));
	}
	/* 2^31 itself is a legal length: this MR is too short for it. */
	connect_to_peer(&w, 1, w.mtu);
	reth(ext, (uintptr_t)w.buf, w.mr->rkey, 0x80000000u);
	n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_READ_REQUEST, qpn, RQ_PSN,
		  ext, 16, NULL, 0);
	inject_sync(&w, f, n);
	CHECK(last_ack_syndrome(capture, PEER_QPN) == 0x62, "READ of 2^31 bytes: %#x",
	      last_ack_syndrome(capture, PEER_QPN));
}

/*
 * A 2,048-byte READ on a 1,024-byte path MTU: a READ RESPONSE ONLY that
 * carries all 2,048 bytes at once is a bad response, and none of it lands.
 */
static void
read_response_over_mtu(void)
{
	uint8_t f[4096], ext[4], data[2048];
	uint32_t n, qpn = w.qp[0]->qp_num;

	uint64_t lost0 = counter(&w, "rx_drop_unknown_qpn");

	connect_to_peer(&w, 0, IBV_MTU_1024);
	memset(w.buf + 16384, 0, sizeof(data));
	post(w.qp[0], IBV_WR_RDMA_READ, 20, w.buf + 16384, sizeof(data),
	     w.mr->lkey, 0x1000, 0x1234);
	wait_counter(&w, "rx_drop_unknown_qpn", lost0);
	memset(data, 0x5a, sizeof(data));
	aeth(ext, 0x1f, 1);
	n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_READ_RESPONSE_ONLY, qpn,
		  SQ_PSN, ext, 4, data, sizeof(data));
	inject_sync(&w, f, n);
	CHECK(wait_status(w.cq[0], 20) == IBV_WC_BAD_RESP_ERR,
	      "oversized READ response accepted");
	CHECK(w.buf[16384] == 0 && w.buf[16384 + 2047] == 0,
	      "oversized READ response placed");
}

/* ---- address handles ---- */

/* An ARP reply from 192.0.2.@host, once the engine has taken it in. */
static void
inject_arp_reply(struct pair *p, uint8_t host)
{
	uint8_t f[42] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0x02, 0, 0, 0, host, 1, 0x08, 0x06,
		0, 1, 0x08, 0, 6, 4, 0, 2,
		0x02, 0, 0, 0, host, 1, 192, 0, 2, host,	/* sender */
		0, 0, 0, 0, 0, 0, 192, 0, 2, host,
	};

	inject_sync(p, f, sizeof(f));
}

static struct ibv_ah *
ah_to(struct pair *p, const char *ip)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };

	a.grh.dgid.raw[10] = a.grh.dgid.raw[11] = 0xff;
	CHECK(inet_pton(AF_INET, ip, &a.grh.dgid.raw[12]) == 1, "address");
	a.grh.hop_limit = 64;
	return ibv_create_ah(p->pd, &a);
}

/*
 * The RoCE frames dpib sent to 192.0.2.@host (read off its capture), of
 * BTH opcode @op, or of any with -1.
 */
static int
frames_to(uint8_t host, int op)
{
	struct pcap_file pf;
	const uint8_t *d;
	uint32_t len;
	int n = 0;

	CHECK(pcap_open(&pf, capture) == 0, "open capture");
	while (pcap_next(&pf, &d, &len) == 1)
		if (len >= 14 + 20 + 8 + 12 && d[12] == 0x08 && d[13] == 0 &&
		    d[23] == 17 && d[30] == 192 && d[31] == 0 && d[32] == 2 &&
		    d[33] == host && (op < 0 || d[14 + 20 + 8] == op))
			n++;
	pcap_close(&pf);
	return n;
}

/*
 * A UD SEND waits for ARP; its AH is destroyed and another created (to
 * this device, where a receiver waits) before the reply comes. The SEND
 * still goes where it was posted to, and the receiver gets nothing.
 */
static void
ah_destroy_under_posted_work(void)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { (uintptr_t)w.buf + 32768, 256, w.mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 40, .sg_list = &sge, .num_sge = 1 };
	struct ibv_send_wr swr = { .wr_id = 41, .opcode = IBV_WR_SEND,
				   .num_sge = 1, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_sge ssge = { (uintptr_t)w.buf, 64, w.mr->lkey };
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr *sbad;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *s = NULL, *r = NULL;
	struct ibv_ah *ah1, *ah2;
	uint64_t arp0 = counter(&w, "arp_request_sent");
	int before = frames_to(98, -1), i;

	scq = ibv_create_cq(w.ctx, 8, NULL, NULL, 0);
	rcq = ibv_create_cq(w.ctx, 8, NULL, NULL, 0);
	CHECK(scq != NULL && rcq != NULL, "create_cq");
	for (i = 0; i < 2; i++) {
		struct ibv_qp *q;

		ia.send_cq = i ? rcq : scq;
		ia.recv_cq = i ? rcq : scq;
		q = ibv_create_qp(w.pd, &ia);
		CHECK(q != NULL, "create UD QP");
		ud_to_rts(q, 0x11111111);
		if (i)
			r = q;
		else
			s = q;
	}
	CHECK(ibv_post_recv(r, &rwr, &rbad) == 0, "post_recv");
	ah1 = ah_to(&w, "192.0.2.98");
	CHECK(ah1 != NULL, "AH to 192.0.2.98");
	swr.sg_list = &ssge;
	swr.wr.ud.ah = ah1;
	swr.wr.ud.remote_qpn = r->qp_num;
	swr.wr.ud.remote_qkey = 0x11111111;
	CHECK(ibv_post_send(s, &swr, &sbad) == 0, "post UD SEND");
	CHECK(ibv_destroy_ah(ah1) == 0, "destroy AH");
	ah2 = ah_to(&w, "127.0.0.1");
	CHECK(ah2 != NULL, "AH to this device");
	/* A reply nobody asked for is ignored: wait for the request. */
	wait_counter(&w, "arp_request_sent", arp0);
	inject_arp_reply(&w, 98);
	CHECK(wait_status(scq, 41) == IBV_WC_SUCCESS, "UD SEND");
	expect_nothing(rcq, 0.3);
	CHECK(frames_to(98, -1) == before + 1,
	      "the SEND did not go to 192.0.2.98");
	CHECK(ibv_destroy_qp(s) == 0 && ibv_destroy_qp(r) == 0 &&
	      ibv_destroy_ah(ah2) == 0 && ibv_destroy_cq(scq) == 0 &&
	      ibv_destroy_cq(rcq) == 0, "destroy");
}

/* One test by name (argv[1]), or all of them. */
static const char *only;
#define TRY(fn) do { \
	if (only == NULL || strcmp(only, #fn) == 0) \
		RUN(fn); \
} while (0)

/*
 * Issue 14: a responder connected to a peer off the link (192.0.2.97)
 * asks for its MAC when it goes to RTR, and the ACK of the peer's first
 * request, due before the ARP reply came, is held and leaves with it
 * rather than being dropped.
 */
static void
first_ack_waits_for_neighbour(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp *qp = w.qp[1];
	uint64_t arp0 = counter(&w, "arp_request_sent");
	uint64_t ack0 = counter(&w, "ack_sent");
	uint8_t f[256], data[32];
	int before = frames_to(97, IB_RC_ACKNOWLEDGE);
	uint32_t n;

	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "reset");
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = rc.qp_access;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = w.mtu;
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = RQ_PSN;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
	a.ah_attr.grh.dgid.raw[12] = 192;
	a.ah_attr.grh.dgid.raw[14] = 2;
	a.ah_attr.grh.dgid.raw[15] = 97;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER) == 0, "RTR");
	/* Asked for at RTR, before anything is sent on the path. */
	wait_counter(&w, "arp_request_sent", arp0);
	memset(data, 0x3c, sizeof(data));
	{
		struct ibv_sge sge = { (uintptr_t)w.buf + 40960, 64,
				       w.mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 50, .sg_list = &sge,
					   .num_sge = 1 }, *bad;

		CHECK(ibv_post_recv(qp, &rwr, &bad) == 0, "post_recv");
	}
	n = frame(f, inet_addr("192.0.2.97"), IB_RC_SEND_ONLY, qp->qp_num,
		  RQ_PSN, NULL, 0, data, sizeof(data));
	inject_sync(&w, f, n);
	CHECK(wait_status(w.cq[1], 50) == IBV_WC_SUCCESS, "the SEND");
	CHECK(counter(&w, "ack_sent") == ack0 &&
	      frames_to(97, IB_RC_ACKNOWLEDGE) == before,
	      "an ACK left without a MAC");
	inject_arp_reply(&w, 97);
	wait_counter(&w, "ack_sent", ack0);
	{
		/* An inline poll may hold a queued ACK a few µs (for the
		 * program's next post): keep driving until it leaves.
		 */
		double end = check_now() + WAIT;
		struct ibv_wc wc;

		while (frames_to(97, IB_RC_ACKNOWLEDGE) != before + 1 &&
		       check_now() < end)
			CHECK(ibv_poll_cq(w.cq[1], 0, &wc) == 0, "poll");
	}
	CHECK(frames_to(97, IB_RC_ACKNOWLEDGE) == before + 1,
	      "the held ACK did not go to the peer");
}

int
main(int argc, char **argv)
{
	only = argc > 1 ? argv[1] : NULL;
	snprintf(capture, sizeof(capture), "/tmp/dpib-protect-%d.pcap",
		 (int)getpid());
	/* The children open devices of their own: fork before this one. */
	TRY(munmap_kills_mr);
	TRY(madv_dontneed_kills_mr);
	TRY(map_fixed_kills_mr);
	TRY(free_of_mmapped_chunk_kills_mr);
	setenv("DPIB_CAPTURE", capture, 1);
	pair_open(&w, &rc);
	TRY(reg_checks_memory);
	TRY(forged_acks_ignored);
	TRY(foreign_source_dropped);
	TRY(read_over_2g_invalid);
	TRY(read_response_over_mtu);
	TRY(ah_destroy_under_posted_work);
	TRY(first_ack_waits_for_neighbour);
	pair_close(&w);
	unlink(capture);
	CHECK_DONE();
}
