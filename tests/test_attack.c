/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * dpib attacked as a peer would attack it (issue 21): crafted RoCEv2
 * frames through dpib_inject() against the checks that guard memory, each
 * case asserting the exact answer (NAK syndrome, read off dpib's capture)
 * or drop counter, and that no byte changed that the frame could not
 * legitimately reach.
 *
 * Memory: one mapping, every region between PROT_NONE guard pages, a
 * shadow copy of all of it compared after every case:
 *   [g][RW: remote write/read/atomic][g][RO: remote read][g][WO: remote
 *   write][g][LOC: local only][g][X: another PD, all rights][g]
 * The target is an RC QP connected to a peer QP (0x99) on 127.0.0.1 that
 * does not exist: its answers loop back and are dropped; each case starts
 * on a fresh connection (a NAK puts the QP in Error).
 *
 * API misuse runs in forked children first (a signal is a failure).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "roce_frame.h"

#define PG		4096
#define REG		(16 * PG)	/* each region */
#define PEER_QPN	0x99
#define RQ_PSN		100
#define MTU		1024

enum { R_RW, R_RO, R_WO, R_LOC, R_X, NREG };

static const int reg_access[NREG] = {
	[R_RW] = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		 IBV_ACCESS_MW_BIND,
	[R_RO] = IBV_ACCESS_REMOTE_READ,
	[R_WO] = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	[R_LOC] = IBV_ACCESS_LOCAL_WRITE,
	[R_X] = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
};

static const struct pair_opts rc = {
	.buflen = 64 * 1024,
	.mr_access = IBV_ACCESS_LOCAL_WRITE,
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	.sq_sig_all = 1, .max_wr = 16, .max_sge = 2, .max_inline = 0,
	.max_rd_atomic = 4, .min_rnr_timer = 1, .rnr_retry = 7,
	.timeout = 20, .retry_cnt = 7,
};

static struct pair w;
static struct ibv_pd *pd_x;
static struct ibv_mr *mr[NREG];
static uint8_t *arena, *shadow;
static size_t arena_len;
static char capture[64];
static uint32_t tqpn;		/* the target QP */

static uint8_t *
region(int r)
{
	return arena + PG + (size_t)r * (REG + PG);
}

/* Map the regions between guard pages; the shadow mirrors the arena. */
static void
arena_map(void)
{
	int r;

	arena_len = PG + NREG * (size_t)(REG + PG);
	arena = mmap(NULL, arena_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	CHECK(arena != MAP_FAILED, "mmap");
	for (r = 0; r < NREG; r++) {
		CHECK(mprotect(region(r), REG, PROT_READ | PROT_WRITE) == 0,
		      "mprotect");
		fill_pattern(region(r), REG, 40 + r);
	}
	shadow = malloc(arena_len);
	CHECK(shadow != NULL, "shadow");
	for (r = 0; r < NREG; r++)
		memcpy(shadow + (region(r) - arena), region(r), REG);
}

/* No byte of any region differs from the shadow. */
static void
expect_untouched(const char *what)
{
	int r;

	for (r = 0; r < NREG; r++) {
		const uint8_t *a = region(r), *s = shadow + (a - arena);
		size_t i;

		if (memcmp(a, s, REG) == 0)
			continue;
		for (i = 0; a[i] == s[i]; i++)
			;
		CHECK(0, "%s: region %d byte %zu changed", what, r, i);
	}
}

/* The target QP on a new connection to the peer, at RQ_PSN. */
static void
fresh(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;

	CHECK(ibv_modify_qp(w.qp[1], &a, IBV_QP_STATE) == 0, "reset");
	while (ibv_poll_cq(w.cq[1], 1, &wc) == 1)
		;
	qp_connect(w.qp[1], PEER_QPN, &rc, IBV_MTU_1024, RQ_PSN, 1);
}

/* Send @f to the target; the syndrome of the one answer it must draw. */
static int
attack(const uint8_t *f, uint32_t n)
{
	int before, after, syn;

	ack_frames(capture, PEER_QPN, &before);
	inject_sync(&w, f, n);
	syn = ack_frames(capture, PEER_QPN, &after);
	CHECK(after == before + 1, "%d answers, want 1", after - before);
	return syn;
}

static uint32_t
req(uint8_t *f, uint8_t op, const void *ext, uint32_t extlen,
    const void *pay, uint32_t paylen)
{
	return frame(f, htonl(INADDR_LOOPBACK), op, tqpn, RQ_PSN, ext, extlen,
		     pay, paylen);
}

/* One RDMA WRITE ONLY of @len bytes to (@va, @rkey): dpib's answer. */
static int
write_only(uint64_t va, uint32_t rkey, uint32_t len)
{
	uint8_t f[2048], ext[16], pay[1024];

	fresh();
	memset(pay, 0xee, sizeof(pay));
	reth(ext, va, rkey, len);
	return attack(f, req(f, IB_RC_WRITE_ONLY, ext, 16, pay, len));
}

static int
read_req(uint64_t va, uint32_t rkey, uint32_t len)
{
	uint8_t f[256], ext[16];

	fresh();
	reth(ext, va, rkey, len);
	return attack(f, req(f, IB_RC_READ_REQUEST, ext, 16, NULL, 0));
}

static int
fetch_add(uint64_t va, uint32_t rkey)
{
	uint8_t f[256], ext[28];
	uint64_t v = rte_cpu_to_be_64(va), add = rte_cpu_to_be_64(1), cmp = 0;
	uint32_t k = htonl(rkey);

	fresh();
	memcpy(ext, &v, 8);
	memcpy(ext + 8, &k, 4);
	memcpy(ext + 12, &add, 8);
	memcpy(ext + 20, &cmp, 8);
	return attack(f, req(f, IB_RC_FETCH_ADD, ext, 28, NULL, 0));
}

#define NAK_INVALID	0x61
#define NAK_ACCESS	0x62

static void
expect_nak(int got, int want, const char *what)
{
	CHECK(got == want, "%s: answered %#x, want %#x", what, got, want);
	expect_untouched(what);
}

/* ---- keys ---- */

static void
rkey_of_another_pd(void)
{
	expect_nak(write_only((uintptr_t)region(R_X), mr[R_X]->rkey, 64),
		   NAK_ACCESS, "WRITE with another PD's rkey");
	expect_nak(read_req((uintptr_t)region(R_X), mr[R_X]->rkey, 64),
		   NAK_ACCESS, "READ with another PD's rkey");
}

static void
rkey_stale_and_garbage(void)
{
	struct ibv_mr *m = ibv_reg_mr(w.pd, region(R_RW), PG,
				      reg_access[R_RW]);
	uint32_t stale;

	CHECK(m != NULL, "reg");
	stale = m->rkey;
	CHECK(ibv_dereg_mr(m) == 0, "dereg");
	expect_nak(write_only((uintptr_t)region(R_RW), stale, 64), NAK_ACCESS,
		   "WRITE with a deregistered rkey");
	expect_nak(write_only((uintptr_t)region(R_RW), 0xdeadbe00, 64),
		   NAK_ACCESS, "WRITE with a garbage rkey");
	expect_nak(write_only((uintptr_t)region(R_RW), mr[R_RW]->rkey + 1, 64),
		   NAK_ACCESS, "WRITE with the right index, wrong generation");
}

/* ---- rights ---- */

static void
rights_enforced(void)
{
	expect_nak(write_only((uintptr_t)region(R_RO), mr[R_RO]->rkey, 64),
		   NAK_ACCESS, "WRITE into a read-only region");
	expect_nak(read_req((uintptr_t)region(R_WO), mr[R_WO]->rkey, 64),
		   NAK_ACCESS, "READ from a write-only region");
	expect_nak(fetch_add((uintptr_t)region(R_WO), mr[R_WO]->rkey),
		   NAK_ACCESS, "atomic without REMOTE_ATOMIC");
	expect_nak(write_only((uintptr_t)region(R_LOC), mr[R_LOC]->rkey, 64),
		   NAK_ACCESS, "WRITE into a local-only region");
	expect_nak(read_req((uintptr_t)region(R_LOC), mr[R_LOC]->rkey, 64),
		   NAK_ACCESS, "READ from a local-only region");
}

/* ---- bounds ---- */

static void
bounds_enforced(void)
{
	uint64_t lo = (uintptr_t)region(R_RW), hi = lo + REG;
	uint32_t k = mr[R_RW]->rkey;
	uint8_t f[2048], ext[16], pay[1024];

	expect_nak(write_only(lo - 1, k, 8), NAK_ACCESS, "one byte before");
	expect_nak(write_only(hi - 4, k, 8), NAK_ACCESS, "past the end");
	expect_nak(write_only(0xfffffffffffffff0ull, k, 32), NAK_ACCESS,
		   "va + len wraps around");
	expect_nak(read_req(hi - 64, k, 128), NAK_ACCESS, "READ past the end");
	/* A WRITE FIRST in bounds whose RETH length runs past the end. */
	fresh();
	memset(pay, 0xee, sizeof(pay));
	reth(ext, hi - MTU, k, 2 * MTU);
	expect_nak(attack(f, req(f, IB_RC_WRITE_FIRST, ext, 16, pay, MTU)),
		   NAK_ACCESS, "WRITE FIRST with a total past the end");
	expect_nak(fetch_add(hi, k), NAK_ACCESS, "atomic at the end");
}

/* ---- atomics and lengths ---- */

static void
atomics_and_lengths(void)
{
	uint64_t lo = (uintptr_t)region(R_RW);
	uint32_t k = mr[R_RW]->rkey;
	uint8_t f[4096], ext[16], pay[2048];

	expect_nak(fetch_add(lo + 4, k), NAK_INVALID, "misaligned atomic");
	/* FIRST with less than the path MTU. */
	fresh();
	memset(pay, 0xee, sizeof(pay));
	reth(ext, lo, k, 2 * MTU);
	expect_nak(attack(f, req(f, IB_RC_WRITE_FIRST, ext, 16, pay, 512)),
		   NAK_INVALID, "WRITE FIRST shorter than the MTU");
	/* ONLY with more payload than its RETH says. */
	fresh();
	reth(ext, lo, k, 32);
	expect_nak(attack(f, req(f, IB_RC_WRITE_ONLY, ext, 16, pay, 64)),
		   NAK_INVALID, "WRITE ONLY longer than its RETH");
	/* A packet longer than the path MTU. */
	fresh();
	reth(ext, lo, k, MTU + 64);
	expect_nak(attack(f, req(f, IB_RC_WRITE_ONLY, ext, 16, pay, MTU + 64)),
		   NAK_INVALID, "WRITE ONLY longer than the path MTU");
}

/* A SEND longer than the receive buffer: LOC_LEN_ERR, NAK invalid. */
static void
send_longer_than_receive(void)
{
	struct ibv_sge sge = { (uintptr_t)region(R_RW), 64, mr[R_RW]->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	uint8_t f[512], pay[128];
	struct ibv_wc wc;

	fresh();
	CHECK(ibv_post_recv(w.qp[1], &rwr, &bad) == 0, "post_recv");
	memset(pay, 0xee, sizeof(pay));
	CHECK(attack(f, req(f, IB_RC_SEND_ONLY, NULL, 0, pay, 128)) ==
	      NAK_INVALID, "SEND longer than the receive: not NAK invalid");
	CHECK(poll_one(w.cq[1], &wc, WAIT) && wc.wr_id == 7 &&
	      wc.status == IBV_WC_LOC_LEN_ERR, "receive: %s",
	      ibv_wc_status_str(wc.status));
	/* The first 64 bytes may have landed: the receive buffer is the
	 * application's to lose; nothing beyond it may change.
	 */
	memcpy(shadow + (region(R_RW) - arena), region(R_RW), 64);
	expect_untouched("SEND longer than the receive");
}

/* ---- memory windows ---- */

static void
windows_enforced(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(w.pd, IBV_MW_TYPE_1);
	uint64_t lo = (uintptr_t)region(R_RW);
	struct ibv_mw_bind b = {
		.wr_id = 1, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr[R_RW], .addr = lo + PG, .length = PG,
			       .mw_access_flags = IBV_ACCESS_REMOTE_READ },
	};
	struct ibv_wc wc;
	uint32_t old;

	CHECK(mw != NULL, "alloc_mw");
	/* Binding runs on a QP in RTS: the pair's other QP. */
	qp_connect(w.qp[0], PEER_QPN, &rc, IBV_MTU_1024, 1, 1);
	CHECK(ibv_bind_mw(w.qp[0], mw, &b) == 0, "bind");
	CHECK(poll_one(w.cq[0], &wc, WAIT) && wc.status == IBV_WC_SUCCESS,
	      "bind completion");
	expect_nak(write_only(lo + PG, mw->rkey, 64), NAK_ACCESS,
		   "WRITE through a read-only window");
	expect_nak(read_req(lo + 2 * PG, mw->rkey, 64), NAK_ACCESS,
		   "READ beyond the window, inside its MR");
	old = mw->rkey;
	b.bind_info.mr = NULL;
	b.bind_info.addr = 0;
	b.bind_info.length = 0;
	CHECK(ibv_bind_mw(w.qp[0], mw, &b) == 0, "unbind");
	CHECK(poll_one(w.cq[0], &wc, WAIT) && wc.status == IBV_WC_SUCCESS,
	      "unbind completion");
	expect_nak(read_req(lo + PG, old, 64), NAK_ACCESS,
		   "READ through an unbound window's rkey");
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc_mw");
}

/* ---- headers: each is dropped and counted, nothing answered ---- */

static void
expect_dropped(uint8_t *f, uint32_t n, const char *counter_name)
{
	uint64_t c0 = counter(&w, counter_name);
	uint64_t naks = counter(&w, "nak_sent"), acks = counter(&w, "ack_sent");
	int before, after;

	ack_frames(capture, PEER_QPN, &before);
	inject_sync(&w, f, n);
	ack_frames(capture, PEER_QPN, &after);
	CHECK(counter(&w, counter_name) == c0 + 1, "%s did not count it",
	      counter_name);
	CHECK(counter(&w, "nak_sent") == naks &&
	      counter(&w, "ack_sent") == acks && after == before,
	      "answered a frame that %s drops", counter_name);
	expect_untouched(counter_name);
}

static void
headers_checked(void)
{
	uint64_t lo = (uintptr_t)region(R_RW);
	uint8_t f[512], ext[16], pay[64];
	uint32_t n, k = mr[R_RW]->rkey;
	struct ibv_qp *init_qp;
	struct ibv_qp_init_attr ia = {
		.send_cq = w.cq[1], .recv_cq = w.cq[1], .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = rc.qp_access };

	fresh();
	memset(pay, 0xee, sizeof(pay));
	reth(ext, lo, k, 64);
	n = req(f, IB_RC_WRITE_ONLY, ext, 16, pay, 64);
	f[n - 1] ^= 1;
	expect_dropped(f, n, "rx_drop_bad_icrc");
	n = req(f, IB_RC_WRITE_ONLY, ext, 16, pay, 64);
	expect_dropped(f, 14 + 20 + 8 + 6, "rx_drop_bad_length");	/* cut */
	n = req(f, IB_RC_WRITE_ONLY, ext, 16, pay, 64);
	f[14 + 2] = 0;			/* IP total length: 20 */
	f[14 + 3] = 20;
	expect_dropped(f, n, "rx_drop_bad_length");
	/* Fields under the ICRC: rebuilt with the field changed. */
	n = req(f, IB_RC_WRITE_ONLY, ext, 16, pay, 64);
	f[42 + 2] = 0x12;		/* P_Key 0x12ff */
	{
		uint8_t *ip = f + 14;
		uint32_t crc = rte_cpu_to_le_32(ib_icrc(ip, n - 14 - 4));

		memcpy(f + n - 4, &crc, 4);
	}
	{
		struct ibv_port_attr pa0, pa1;
		struct ibv_device_attr da;

		CHECK(ibv_query_port(w.ctx, 1, &pa0) == 0, "query_port");
		expect_dropped(f, n, "rx_drop_bad_pkey");
		CHECK(ibv_query_port(w.ctx, 1, &pa1) == 0, "query_port");
		CHECK(pa1.bad_pkey_cntr == pa0.bad_pkey_cntr + 1,
		      "bad_pkey_cntr %u -> %u", pa0.bad_pkey_cntr,
		      pa1.bad_pkey_cntr);
		CHECK(ibv_query_device(w.ctx, &da) == 0 &&
		      (da.device_cap_flags & IBV_DEVICE_BAD_PKEY_CNTR),
		      "IBV_DEVICE_BAD_PKEY_CNTR");
	}
	n = req(f, IB_RC_WRITE_ONLY, ext, 16, pay, 64);
	f[42 + 1] |= 1;			/* TVer 1 */
	{
		uint32_t crc = rte_cpu_to_le_32(ib_icrc(f + 14, n - 14 - 4));

		memcpy(f + n - 4, &crc, 4);
	}
	expect_dropped(f, n, "rx_drop_bad_version");
	n = req(f, 0x1e, NULL, 0, pay, 64);	/* reserved RC opcode */
	expect_dropped(f, n, "rx_drop_bad_opcode");
	n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_WRITE_ONLY, 0xabcde, RQ_PSN,
		  ext, 16, pay, 64);
	expect_dropped(f, n, "rx_drop_unknown_qpn");
	/* A QP in INIT takes nothing. */
	init_qp = ibv_create_qp(w.pd, &ia);
	CHECK(init_qp != NULL, "create_qp");
	CHECK(ibv_modify_qp(init_qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "INIT");
	n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_WRITE_ONLY,
		  init_qp->qp_num, 0, ext, 16, pay, 64);
	expect_dropped(f, n, "rx_drop_qp_state");
	CHECK(ibv_destroy_qp(init_qp) == 0, "destroy");
}

/* UD: a wrong Q_Key is dropped silently (C10-15). */
static void
ud_wrong_qkey(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = w.cq[1], .recv_cq = w.cq[1], .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qkey = 0x1111 };
	struct ibv_sge sge = { (uintptr_t)region(R_RW), 256, mr[R_RW]->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	struct ibv_qp *ud = ibv_create_qp(w.pd, &ia);
	uint8_t f[256], deth[8], pay[32];
	uint32_t qk = htonl(0x2222), src = htonl(0x77), n;
	struct ibv_wc wc;

	CHECK(ud != NULL, "UD QP");
	CHECK(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_QKEY) == 0, "INIT");
	a.qp_state = IBV_QPS_RTR;
	CHECK(ibv_modify_qp(ud, &a, IBV_QP_STATE) == 0, "RTR");
	CHECK(ibv_post_recv(ud, &rwr, &bad) == 0, "post_recv");
	memcpy(deth, &qk, 4);
	memcpy(deth + 4, &src, 4);
	memset(pay, 0xee, sizeof(pay));
	n = frame(f, htonl(INADDR_LOOPBACK), IB_UD_SEND_ONLY, ud->qp_num, 0,
		  deth, 8, pay, sizeof(pay));
	{
		struct ibv_port_attr pa0, pa1;

		CHECK(ibv_query_port(w.ctx, 1, &pa0) == 0, "query_port");
		expect_dropped(f, n, "rx_drop_bad_qkey");
		CHECK(ibv_query_port(w.ctx, 1, &pa1) == 0, "query_port");
		CHECK(pa1.qkey_viol_cntr == pa0.qkey_viol_cntr + 1,
		      "qkey_viol_cntr %u -> %u", pa0.qkey_viol_cntr,
		      pa1.qkey_viol_cntr);
	}
	CHECK(!poll_one(w.cq[1], &wc, 0.05), "a receive completed");
	CHECK(ibv_destroy_qp(ud) == 0, "destroy");
}

/*
 * What the target sent @PEER_QPN in the capture, from frame @skip on:
 * READ response packets, and those of them after the first NAK; that
 * NAK's syndrome and PSN (-1: none). Returns the frames seen.
 */
struct answers {
	int responses, late, nak_syn;
	uint32_t nak_psn;
};

static int
answers_since(int skip, struct answers *a)
{
	struct pcap_file pf;
	const uint8_t *d;
	uint32_t len;
	int n = 0;

	memset(a, 0, sizeof(*a));
	a->nak_syn = -1;
	CHECK(pcap_open(&pf, capture) == 0, "open %s", capture);
	while (pcap_next(&pf, &d, &len) == 1) {
		const uint8_t *bth = d + 14 + 20 + 8;

		if (len < 14 + 20 + 8 + 12 + 4 || d[12] != 0x08 || d[13] != 0 ||
		    (uint32_t)(bth[5] << 16 | bth[6] << 8 | bth[7]) != PEER_QPN ||
		    n++ < skip)
			continue;
		if (bth[0] >= IB_RC_READ_RESPONSE_FIRST &&
		    bth[0] <= IB_RC_READ_RESPONSE_ONLY) {
			a->responses++;
			a->late += a->nak_syn >= 0;
		} else if (bth[0] == IB_RC_ACKNOWLEDGE && (bth[12] & 0x60) ==
			   0x60 && a->nak_syn < 0) {
			a->nak_syn = bth[12];
			a->nak_psn = (uint32_t)(bth[9] << 16 | bth[10] << 8 |
						bth[11]);
		}
	}
	pcap_close(&pf);
	return n;
}

/*
 * More READs than max_dest_rd_atomic at the largest value the device
 * allows (max_qp_rd_atom, which perftest asks for): the first one beyond
 * draws NAK Invalid Request (9.4.4: no responder resources), and it leaves
 * behind every response owed to the READs before it (9.7.5.1: PSN order),
 * which all leave in full, and nothing after it. The response queue is
 * full then; the NAK had no slot in it and was sent at once, ahead of them.
 * The READs are injected 400 beyond the limit: each costs the responder 64
 * packets and the injection a few hundred ns, so the queue fills even if
 * this thread loses its CPU for a while (what it missed meanwhile drains).
 */
static void
nak_behind_full_queue(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_device_attr da;
	struct pair_opts o = rc;
	uint8_t f[256], ext[16];
	struct answers ans;
	struct ibv_wc wc;
	uint32_t i, k, psn = RQ_PSN, pkts = REG / MTU;
	double end;
	int skip;

	CHECK(ibv_query_device(w.ctx, &da) == 0, "query_device");
	o.max_rd_atomic = (uint8_t)da.max_qp_rd_atom;
	CHECK(ibv_modify_qp(w.qp[1], &a, IBV_QP_STATE) == 0, "reset");
	qp_connect(w.qp[1], PEER_QPN, &o, IBV_MTU_1024, RQ_PSN, 1);
	marker_sync(&w);
	skip = answers_since(0, &ans);
	reth(ext, (uintptr_t)region(R_RW), mr[R_RW]->rkey, REG);
	for (i = 0; i < (uint32_t)da.max_qp_rd_atom + 400; i++, psn += pkts)
		CHECK(dpib_inject(w.ctx, f, frame(f, htonl(INADDR_LOOPBACK),
			IB_RC_READ_REQUEST, tqpn, psn, ext, 16, NULL, 0)) == 0,
		      "inject READ %u", i);
	end = check_now() + WAIT;
	do {
		CHECK(ibv_poll_cq(w.cq[1], 1, &wc) >= 0, "poll");
		answers_since(skip, &ans);
	} while ((ans.nak_syn < 0 ||
		  ans.responses < (int)((ans.nak_psn - RQ_PSN) / pkts * pkts)) &&
		 check_now() < end);
	marker_sync(&w);
	marker_sync(&w);
	answers_since(skip, &ans);
	CHECK(ans.nak_syn == NAK_INVALID, "answered %#x, want NAK invalid "
	      "request", ans.nak_syn);
	k = (ans.nak_psn - RQ_PSN) / pkts;
	CHECK(ans.nak_psn == RQ_PSN + k * pkts &&
	      k >= (uint32_t)da.max_qp_rd_atom,
	      "NAK at PSN %u: READ %u", ans.nak_psn, k);
	CHECK(ans.responses == (int)(k * pkts) && ans.late == 0,
	      "%d response packets, %d after the NAK; want the %u of the %u "
	      "READs before it, none after", ans.responses, ans.late,
	      k * pkts, k);
	CHECK(counter(&w, "nak_sent") > 0, "counted");
	expect_untouched("READs beyond the responder's resources");
}

/* READ responses and atomic ACKs nobody asked for write nothing. */
static void
forged_responses_stale(void)
{
	uint8_t f[2048], ext[12], pay[1024];
	uint64_t orig = 0;
	uint32_t n;

	fresh();
	memset(pay, 0xee, sizeof(pay));
	aeth(ext, 0x1f, 1);
	n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_READ_RESPONSE_ONLY, tqpn, 1,
		  ext, 4, pay, 512);
	expect_dropped(f, n, "rx_drop_stale_response");
	memcpy(ext + 4, &orig, 8);
	n = frame(f, htonl(INADDR_LOOPBACK), IB_RC_ATOMIC_ACKNOWLEDGE, tqpn, 1,
		  ext, 12, NULL, 0);
	expect_dropped(f, n, "rx_drop_stale_response");
}

/*
 * CNPs (RoCEv2 A17.9.3) slow a QP down, so only its peer may send one:
 * from any other address it is dropped and nothing is cut; a CNP cut
 * short is a bad length; the peer's is taken (one cut) and never answered.
 * Last: it leaves the target QP paced.
 */
static void
forged_cnp(void)
{
	uint8_t f[256], zero[16] = { 0 };
	uint64_t cuts = counter(&w, "dcqcn_rate_cut");
	uint64_t rcvd = counter(&w, "cnp_received");
	uint64_t naks, acks;
	uint32_t n;

	fresh();
	n = frame(f, inet_addr("192.0.2.66"), IB_CNP, tqpn, 0, zero, 16,
		  NULL, 0);
	expect_dropped(f, n, "rx_drop_path_mismatch");
	n = frame(f, htonl(INADDR_LOOPBACK), IB_CNP, tqpn, 0, zero, 8, NULL, 0);
	expect_dropped(f, n, "rx_drop_bad_length");
	CHECK(counter(&w, "dcqcn_rate_cut") == cuts &&
	      counter(&w, "cnp_received") == rcvd, "a forged CNP was taken");
	naks = counter(&w, "nak_sent");
	acks = counter(&w, "ack_sent");
	n = frame(f, htonl(INADDR_LOOPBACK), IB_CNP, tqpn, 0, zero, 16,
		  NULL, 0);
	inject_sync(&w, f, n);
	CHECK(counter(&w, "cnp_received") == rcvd + 1 &&
	      counter(&w, "dcqcn_rate_cut") == cuts + 1,
	      "the peer's CNP: %" PRIu64 " received, %" PRIu64 " cuts",
	      counter(&w, "cnp_received") - rcvd,
	      counter(&w, "dcqcn_rate_cut") - cuts);
	CHECK(counter(&w, "nak_sent") == naks && counter(&w, "ack_sent") == acks,
	      "a CNP was answered");
	expect_untouched("CNP");
}

/* ---- API misuse, each in a child of its own ---- */

static void
misuse_child(int which)
{
	struct pair p;
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .num_sge = 1 }, *bad;
	struct ibv_sge sge[40];
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };
	struct ibv_wc wc;

	pair_open(&p, &rc);
	memset(sge, 0, sizeof(sge));
	sge[0].addr = (uintptr_t)p.buf;
	sge[0].length = 64;
	sge[0].lkey = p.mr->lkey;
	wr.sg_list = sge;
	switch (which) {
	case 0:		/* post on a QP in RESET */
		CHECK(ibv_post_send(p.qp[0], &wr, &bad) == EINVAL, "RESET");
		break;
	case 1:		/* more SGEs than the QP has */
		pair_connect(&p, &rc);
		wr.num_sge = 40;
		CHECK(ibv_post_send(p.qp[0], &wr, &bad) == EINVAL, "SGEs");
		break;
	case 2:		/* a bad lkey: a local protection error */
		pair_connect(&p, &rc);
		sge[0].lkey = 0xdeadbe00;
		wr.send_flags = IBV_SEND_SIGNALED;
		CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
		CHECK(poll_one(p.cq[0], &wc, WAIT) &&
		      wc.status == IBV_WC_LOC_PROT_ERR, "status %s",
		      ibv_wc_status_str(wc.status));
		break;
	case 3:		/* NULL address, non-zero length */
		errno = 0;
		CHECK(ibv_reg_mr(p.pd, NULL, 4096, 0) == NULL &&
		      errno == EINVAL, "reg_mr NULL: errno %d", errno);
		break;
	case 4:		/* RESET -> RTS skips states */
		CHECK(ibv_modify_qp(p.qp[0], &a, IBV_QP_STATE) == EINVAL,
		      "RESET -> RTS");
		break;
	case 5:		/* an SGE over 2^31 bytes */
		pair_connect(&p, &rc);
		sge[0].length = 0x80000001u;
		CHECK(ibv_post_send(p.qp[0], &wr, &bad) == EINVAL,
		      "SGE over 2^31");
		break;
	}
	pair_close(&p);
}

static void
api_misuse_in_children(void)
{
	int which;

	for (which = 0; which < 6; which++)
		check_in_child(misuse_child, which, "API misuse");
}

int
main(void)
{
	int r;

	RUN(api_misuse_in_children);	/* before this process opens dpib */
	snprintf(capture, sizeof(capture), "/tmp/dpib-attack-%d.pcap",
		 (int)getpid());
	setenv("DPIB_CAPTURE", capture, 1);
	arena_map();
	pair_open(&w, &rc);
	pd_x = ibv_alloc_pd(w.ctx);
	CHECK(pd_x != NULL, "second PD");
	for (r = 0; r < NREG; r++) {
		mr[r] = ibv_reg_mr(r == R_X ? pd_x : w.pd, region(r), REG,
				   reg_access[r]);
		CHECK(mr[r] != NULL, "reg region %d: errno %d", r, errno);
	}
	tqpn = w.qp[1]->qp_num;
	RUN(rkey_of_another_pd);
	RUN(rkey_stale_and_garbage);
	RUN(rights_enforced);
	RUN(bounds_enforced);
	RUN(atomics_and_lengths);
	RUN(send_longer_than_receive);
	RUN(windows_enforced);
	RUN(headers_checked);
	RUN(ud_wrong_qkey);
	RUN(nak_behind_full_queue);
	RUN(forged_responses_stale);
	RUN(forged_cnp);
	for (r = 0; r < NREG; r++)
		CHECK(ibv_dereg_mr(mr[r]) == 0, "dereg");
	CHECK(ibv_dealloc_pd(pd_x) == 0, "dealloc");
	pair_close(&w);
	unlink(capture);
	CHECK_DONE();
}
