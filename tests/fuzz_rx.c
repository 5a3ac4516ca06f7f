/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * libFuzzer target over the receive path (ib_rx, responder, completer).
 * After every frame and every input it checks that
 *  - nothing crashed, hung (libFuzzer's -timeout) or upset ASan or UBSan;
 *  - no byte changed that no packet may write (guards, MR slack, MR_RO,
 *    MR_X below);
 *  - every completion is for a WR the harness posted to that QP and is the
 *    oldest one outstanding (posting order, once); a frame that receive
 *    validation dropped completes nothing; a delivered frame completes WRs
 *    of the QP it reached only, and only as its opcode allows (receives by
 *    a SEND's end or an immediate, sends by responses, UD only with the
 *    QP's Q_Key); a RECV's byte_len fits the buffer posted, and on UD is
 *    the 40-byte GRH plus the payload;
 *  - QP 1 (the GSI) completes a receive only for a whole CM MAD: a UD SEND
 *    with the GSI Q_Key 0x80010000 (though the harness gives it another)
 *    and a payload of 256 bytes or more starting 01 07 (base version 1,
 *    class CM); anything else reaching it completes nothing and bumps the
 *    counter that says why, and a CM MAD with a receive posted completes
 *    exactly one;
 *  - in Error every WR still posted flushes; a QP no frame reached keeps
 *    its state; no mbuf is lost.
 *
 * The device runs in inline engine mode without the engine loop (fuzz_rx.sh
 * sets takeover_us = never), so dpib_inject() processes a frame on this
 * thread and every input is deterministic. Each input starts from
 * the same world: QPs of every type in states that take packets (QP 1, the
 * GSI, among them), their receives posted, one RC requester with sends
 * outstanding toward a peer that does not exist (so forged ACKs, NAKs and
 * READ/atomic responses reach its completer). After the input every QP a
 * frame reached is moved to Error, flushed and brought back Reset -> Init
 * -> RTR -> RTS with its WRs posted again. The harness reads driver state
 * (ib_hca.h) for two things only: the PSN a target expects, to steer
 * frames, and the mbuf count.
 *
 * Input: a sequence of records, each [mode][len hi][len lo][len bytes];
 * the last record takes what is left when len runs past the end.
 *   mode bits 0-1  0 raw Ethernet frame
 *                  1 BTH + rest; Ethernet/IPv4/UDP to 127.0.0.1:4791 built
 *                    around it (or IPv6, bit 6), lengths and ICRC computed
 *                  2 as 1, and the BTH steered: destination QPN of target
 *                    (bits 2-4), TVer 0, P_Key 0xffff
 *                  3 as 2, and the BTH PSN's low byte is a signed delta to
 *                    the PSN the target expects next (responder ePSN, or
 *                    the completer's next response PSN for response opcodes)
 *   mode bits 2-4  target: index into qps[]; 7 is QP 1, the GSI, or with
 *                  bit 5 QPN 0xffffff (multicast): the GSI joins no group
 *                  and QPN 0xffffff to a unicast address is but an unknown
 *                  QPN, still there through mode 1
 *   mode bit 5     destination is the multicast group the UD QP joined
 *                  (239.1.2.3, or ff0e::1 with bit 6); frames to other
 *                  groups (raw, mode 0) are dropped, counted
 *   mode bit 6     IPv6 (2001:db8::1, the device's ip6) instead of IPv4
 *   mode bit 7     no frame: recycle the target QP now (Error, flush,
 *                  Reset, up again, WRs posted again; 7 is the GSI), so
 *                  that one input can hold a QP's whole life (the bytes
 *                  are ignored)
 *
 * Memory the driver may reach is laid out in one mapping, each region
 * between guard pages filled with a canary and ASan-poisoned:
 *   [g][MR_W window: remote write/read/atomic][g][MR_R receives: local write
 *   only][g][MR_RO: remote read only][g][MR_X: another PD][g][wc][g][frame][g]
 * MR_R bytes outside posted SGEs are canary too (and poisoned); MR_RO and
 * MR_X must never change. A violation is a memory-safety bug: abort().
 * A type 1 memory window with remote read only is bound over part of MR_RO
 * (its rkey is in the seeds): no request through it may write either.
 *
 * Environment: DPIB_FUZZ_SEED_DIR=dir writes seed inputs (the frames of the
 * rxe vector captures under $DPIB_SHARED, and synthetic conversations with
 * each QP) into dir and exits; DPIB_FUZZ_VERBOSE traces every frame and
 * completion (to see what a crasher does); DPIB_FUZZ_COUNTERS prints the
 * device counters at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rte_ip.h>
#include <rte_mempool.h>
#include <rte_udp.h>

#include "dpib.h"
#include "ib_hca.h"
#include "pcap.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif
#ifdef FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n)	ASAN_POISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n)	do { (void)(p); (void)(n); } while (0)
#endif

#include "fuzz_rx.h"

#define SRQ_QI		NQP	/* wr_id owner index of SRQ receives */
#define MCAST_QPN	0xffffffu

/* The target field is 3 bits: every value names a QP. */
_Static_assert(NQP == 8, "mode bits 2-4 index qps[]");

/* One posted WR the harness waits to see completed, in posting order. */
struct posted {
	uint64_t wr_id;
	uint32_t len;		/* bytes its SGEs cover */
	int opcode;		/* send: enum ibv_wr_opcode */
};

struct fifo {
	struct posted e[64];
	uint32_t head, tail;
};

struct fq {
	const char *name;
	enum ibv_qp_type type;
	enum ibv_qp_state state;	/* canonical */
	uint32_t rq_psn, sq_psn, dest_qpn;
	uint32_t qkey;			/* UD: the Q_Key it must check */
	int access;
	uint32_t nrecv;			/* receives kept posted (0: SRQ) */
	uint32_t slot0;			/* first MR_R slot of its receives */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct fifo rq, sq;
	uint64_t seq;
	int touched;			/* a frame reached it this input */
};

#define RC_ACCESS	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)

/*
 * PSNs sit near the 24-bit wrap so that short conversations cross it. The
 * RC pair answers each other; every other QP sends to a QPN nobody has.
 */
static struct fq qps[NQP] = {
	[Q_RC_A] = { .name = "rc_a", .type = IBV_QPT_RC,
		     .state = IBV_QPS_RTS, .rq_psn = 0xfffff0, .sq_psn = 0x10,
		     .access = RC_ACCESS, .nrecv = 8, .slot0 = 0 },
	[Q_RC_B] = { .name = "rc_b", .type = IBV_QPT_RC,
		     .state = IBV_QPS_RTS, .rq_psn = 0x300, .sq_psn = 0xfffff0,
		     .access = RC_ACCESS, .nrecv = 4, .slot0 = 8 },
	[Q_RC_REQ] = { .name = "rc_req", .type = IBV_QPT_RC,
		       .state = IBV_QPS_RTS, .rq_psn = 0x500, .sq_psn = REQ_PSN,
		       .dest_qpn = NO_QPN, .access = IBV_ACCESS_REMOTE_WRITE,
		       .nrecv = 2, .slot0 = 12 },
	[Q_UC] = { .name = "uc", .type = IBV_QPT_UC, .state = IBV_QPS_RTS,
		   .rq_psn = 0xfffffe, .sq_psn = 0x40, .dest_qpn = NO_QPN + 1,
		   .access = IBV_ACCESS_REMOTE_WRITE, .nrecv = 4, .slot0 = 14 },
	[Q_UD] = { .name = "ud", .type = IBV_QPT_UD, .state = IBV_QPS_RTS,
		   .sq_psn = 0x50, .qkey = QKEY, .nrecv = 4, .slot0 = 18 },
	[Q_RC_SRQ] = { .name = "rc_srq", .type = IBV_QPT_RC,
		       .state = IBV_QPS_RTS, .rq_psn = 0x100, .sq_psn = 0x60,
		       .dest_qpn = NO_QPN + 2, .access = RC_ACCESS },
	[Q_RC_RTR] = { .name = "rc_rtr", .type = IBV_QPT_RC,
		       .state = IBV_QPS_RTR, .rq_psn = 0x200,
		       .dest_qpn = NO_QPN + 3, .access = IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_READ, .nrecv = 2, .slot0 = 22 },
	[Q_GSI] = { .name = "gsi", .type = IBV_QPT_UD, .state = IBV_QPS_RTS,
		    .sq_psn = 0x70, .qkey = GSI_QKEY, .nrecv = 4, .slot0 = 24 },
};

/* MR_R slots: the QPs' receives above, then these. */
#define SRQ_SLOT0	28
#define SRQ_N		8
#define REQ_SLOT0	32	/* RC_REQ's local buffers: 8 slots */

/* The sends RC_REQ keeps outstanding: one of each kind the completer knows. */
static const struct {
	int opcode;
	uint32_t len;
} req_sends[] = {
	{ IBV_WR_SEND, 64 },			/* PSN S */
	{ IBV_WR_RDMA_WRITE, 64 },		/* S + 1 */
	{ IBV_WR_RDMA_READ, 2048 },		/* S + 2, S + 3 */
	{ IBV_WR_ATOMIC_CMP_AND_SWP, 8 },	/* S + 4 */
	{ IBV_WR_ATOMIC_FETCH_AND_ADD, 8 },	/* S + 5 */
	{ IBV_WR_SEND, 3000 },			/* S + 6 .. S + 8 */
	{ IBV_WR_SEND_WITH_IMM, 0 },		/* S + 9 */
};

static struct {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd, *pd_x;
	struct ibv_mr *mr_w, *mr_r, *mr_ro, *mr_x;
	struct ibv_mw *mw_ro;		/* remote read, over MR_RO's 2nd page */
	struct ibv_srq *srq;
	struct fifo srq_fifo;
	uint64_t srq_seq;
	struct ib_dev *dev;
	uint8_t *arena;
	size_t arena_len;
	uint8_t *w, *r, *ro, *x, *guard[7];
	struct ibv_wc *wc;
	uint8_t *frame;
	/* MR_R bytes a posted SGE may cover; the rest stays canary. */
	uint8_t r_ok[R_LEN];
	struct {
		uint32_t off, len;	/* at most a page each */
	} slack[4 * R_SLOTS + R_LEN / PAGE];
	unsigned int nslack;
	/* references for find_changed's word compares */
	uint8_t canary[PAGE] __rte_aligned(8);
	uint8_t w_init[W_LEN] __rte_aligned(8);
	uint8_t ro_init[RO_LEN] __rte_aligned(8);
	uint32_t mcast_ip, dev_ip;
	uint8_t mcast_ip6[16], dev_ip6[16];
	unsigned int in_use_base;
	/* counter indexes: a frame that bumps one of these was not delivered */
	int ndrop;
	int drop_idx[IB_CNT_NUM];
	int ncnt;
	const char *const *cnt_names;
	int verbose;			/* DPIB_FUZZ_VERBOSE: trace frames */
	/* statistics for the report at exit */
	uint64_t inputs, frames, delivered, completions, resets;
} F;

/*
 * A frame that bumps one of these was not delivered to a QP's responder or
 * completer: every rx_drop_ counter but those counted after delivery, and
 * the neighbour protocols' receive counters.
 */
static const char *const drop_prefixes[] = { "rx_drop_", "arp_rx", "nd_rx" };
static const char *const delivered_drops[] = {
	"rx_drop_stale_response", "rx_drop_bad_qkey",
	"rx_drop_ud_no_receive_wqe", "rx_drop_gsi_bad_mad",
	"rx_drop_gsi_unknown_class",
};

/* ---- guarded memory ---- */

static void
arena_map(void)
{
	const size_t sizes[] = { W_LEN, R_LEN, RO_LEN, X_LEN, PAGE, FRAME_MAX };
	uint8_t *wc, **where[] = { &F.w, &F.r, &F.ro, &F.x, &wc, &F.frame };
	size_t off = PAGE;
	unsigned int i;

	F.arena_len = PAGE;
	for (i = 0; i < RTE_DIM(sizes); i++)
		F.arena_len += sizes[i] + PAGE;
	F.arena = mmap(NULL, F.arena_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SETUP(F.arena != MAP_FAILED, "mmap arena");
	memset(F.arena, CANARY, F.arena_len);
	F.guard[0] = F.arena;
	for (i = 0; i < RTE_DIM(sizes); i++) {
		*where[i] = F.arena + off;
		off += sizes[i];
		F.guard[i + 1] = F.arena + off;
		off += PAGE;
	}
	/* The completion array ends at a guard: a poll writing one entry too
	 * many hits it.
	 */
	F.wc = (struct ibv_wc *)(wc + PAGE - WC_N * sizeof(struct ibv_wc));
	memset(F.canary, CANARY, PAGE);
	for (i = 0; i < RO_LEN; i++)
		F.ro_init[i] = RO_BYTE(i);
	memcpy(F.ro, F.ro_init, RO_LEN);
	memcpy(F.x, F.ro_init, X_LEN);
	for (i = 0; i < W_LEN; i++)
		F.w_init[i] = W_BYTE(i);
	memcpy(F.w, F.w_init, W_LEN);
}

/*
 * Poison what no correct code path reads or writes: guards, MR_X and the
 * MR_R bytes outside posted SGEs, which are also listed for arena_check.
 */
static void
arena_poison(void)
{
	unsigned int i, start;

	for (i = 0; i < RTE_DIM(F.guard); i++)
		POISON(F.guard[i], PAGE);
	POISON(F.x, X_LEN);
	for (i = 0; i < R_LEN; i = start) {
		for (start = i; start < R_LEN && !F.r_ok[start]; start++)
			;
		if (start > i) {
			POISON(F.r + i, start - i);
			for (; i < start; i += PAGE) {
				SETUP(F.nslack < RTE_DIM(F.slack), "slack list");
				F.slack[F.nslack].off = i;
				F.slack[F.nslack++].len = RTE_MIN(PAGE, start - i);
			}
		}
		for (; start < R_LEN && F.r_ok[start]; start++)
			;
	}
}

/*
 * Where @p differs from @ref, or -1. It reads poisoned memory on purpose and
 * runs after every input, so neither ASan nor the coverage instrumentation
 * (which would take canary compares for program states) looks at it.
 */
__attribute__((no_sanitize("address", "coverage")))
static long
find_changed(const uint8_t *p, const uint8_t *ref, size_t n)
{
	size_t i;

	for (i = 0; i + 8 <= n; i += 8)
		if (*(const uint64_t *)(p + i) != *(const uint64_t *)(ref + i))
			break;
	for (; i < n; i++)
		if (p[i] != ref[i])
			return (long)i;
	return -1;
}

static void
arena_check(void)
{
	long at;
	unsigned int i;

	for (i = 0; i < RTE_DIM(F.guard); i++) {
		at = find_changed(F.guard[i], F.canary, PAGE);
		if (at >= 0)
			FAIL("guard page %u written at byte %ld", i, at);
	}
	for (i = 0; i < F.nslack; i++) {
		at = find_changed(F.r + F.slack[i].off, F.canary,
				  F.slack[i].len);
		if (at >= 0) {
			at += F.slack[i].off;
			FAIL("MR_R written outside any posted SGE: slot %ld "
			     "offset %ld", at / PAGE, at % PAGE);
		}
	}
	at = find_changed(F.ro, F.ro_init, RO_LEN);
	if (at >= 0)
		FAIL("remote-read-only MR_RO changed at byte %ld", at);
	at = find_changed(F.x, F.ro_init, X_LEN);
	if (at >= 0)
		FAIL("MR_X of another PD changed at byte %ld", at);
}

/*
 * The SGE layout of MR_R slot @slot: a 4 KiB page with two SGEs and canary
 * before, between and after them. Even slots take a full message (1024 +
 * 2048 bytes, or 40 + 3000 for UD), odd slots only 64 bytes, so that long
 * SENDs meet both room and a length error.
 */
static uint32_t
slot_sges(uint32_t slot, int ud, struct ibv_sge sge[2])
{
	uint64_t base = R_IOVA + (uint64_t)slot * PAGE;
	uint32_t l0 = ud ? 40 : 1024, l1 = ud ? 3000 : 2048;

	if (slot & 1) {
		l0 = ud ? 40 : 32;
		l1 = ud ? 64 : 32;
	}
	sge[0].addr = base + 64;
	sge[0].length = l0;
	sge[0].lkey = F.mr_r->lkey;
	sge[1].addr = base + 64 + RTE_ALIGN_CEIL(l0, 64) + 64;
	sge[1].length = l1;
	sge[1].lkey = F.mr_r->lkey;
	return 2;
}

static void
mark_ok(const struct ibv_sge *sge, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		memset(F.r_ok + (sge[i].addr - R_IOVA), 1,
		       sge[i].length);
}

/* ---- work requests ---- */

static void
fifo_push(struct fifo *f, uint64_t wr_id, uint32_t len, int opcode)
{
	struct posted *p = &f->e[f->tail++ % RTE_DIM(f->e)];

	if (f->tail - f->head > RTE_DIM(f->e))
		FAIL("harness: too many WRs outstanding");
	p->wr_id = wr_id;
	p->len = len;
	p->opcode = opcode;
}

static uint32_t
fifo_count(const struct fifo *f)
{
	return f->tail - f->head;
}

static void
post_recv(int qi, uint32_t slot)
{
	struct fq *q = &qps[qi];
	struct ibv_sge sge[2];
	struct ibv_recv_wr wr = { .sg_list = sge }, *bad;

	wr.num_sge = slot_sges(slot, q->type == IBV_QPT_UD, sge);
	wr.wr_id = WRID(qi, 0, q->seq++);
	SETUP(ibv_post_recv(q->qp, &wr, &bad) == 0, "post_recv %s", q->name);
	fifo_push(&q->rq, wr.wr_id, sge[0].length + sge[1].length, 0);
}

static void
post_srq(uint32_t slot)
{
	struct ibv_sge sge[2];
	struct ibv_recv_wr wr = { .sg_list = sge }, *bad;

	wr.num_sge = slot_sges(slot, 0, sge);
	wr.wr_id = WRID(SRQ_QI, 0, F.srq_seq++);
	SETUP(ibv_post_srq_recv(F.srq, &wr, &bad) == 0, "post_srq_recv");
	fifo_push(&F.srq_fifo, wr.wr_id, sge[0].length + sge[1].length, 0);
}

/* The SRQ is never reset: keep it full with WQEs that differ only in
 * wr_id, so which one a SEND takes does not change what happens.
 */
static void
srq_fill(void)
{
	while (fifo_count(&F.srq_fifo) < SRQ_N)
		post_srq(SRQ_SLOT0);
}

static void
req_sge(uint32_t i, struct ibv_sge *sge)
{
	sge->addr = R_IOVA + (uint64_t)(REQ_SLOT0 + i) * PAGE + 64;
	sge->length = req_sends[i].len;
	sge->lkey = F.mr_r->lkey;
}

static void
post_req_sends(void)
{
	struct fq *q = &qps[Q_RC_REQ];
	struct ibv_send_wr wr[RTE_DIM(req_sends)], *bad;
	struct ibv_sge sge[RTE_DIM(req_sends)];
	uint32_t i;

	memset(wr, 0, sizeof(wr));
	for (i = 0; i < RTE_DIM(req_sends); i++) {
		req_sge(i, &sge[i]);
		wr[i].wr_id = WRID(Q_RC_REQ, 1, q->seq++);
		wr[i].opcode = req_sends[i].opcode;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = sge[i].length ? 1 : 0;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].imm_data = htonl(0x1234);
		wr[i].next = i + 1 < RTE_DIM(req_sends) ? &wr[i + 1] : NULL;
		if (req_sends[i].opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    req_sends[i].opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr[i].wr.atomic.remote_addr = 0x7000;
			wr[i].wr.atomic.rkey = 0x4242;
			wr[i].wr.atomic.compare_add = 1;
			wr[i].wr.atomic.swap = 2;
		} else {
			wr[i].wr.rdma.remote_addr = 0x7000;
			wr[i].wr.rdma.rkey = 0x4242;
		}
		fifo_push(&q->sq, wr[i].wr_id, sge[i].length, wr[i].opcode);
	}
	SETUP(ibv_post_send(q->qp, wr, &bad) == 0, "post_send rc_req");
}

static void
post_all(int qi)
{
	struct fq *q = &qps[qi];
	uint32_t i;

	for (i = 0; i < q->nrecv; i++)
		post_recv(qi, q->slot0 + i);
	if (qi == Q_RC_REQ)
		post_req_sends();
}

/* ---- QP states ---- */

static int
modify(struct fq *q, enum ibv_qp_state to)
{
	struct ibv_qp_attr a = { .qp_state = to };
	int mask = IBV_QP_STATE;

	switch (to) {
	case IBV_QPS_INIT:
		a.port_num = 1;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (q->type == IBV_QPT_UD) {
			/* QP 1 too: it must keep the GSI's (q->qkey). */
			a.qkey = QKEY;
			mask |= IBV_QP_QKEY;
		} else {
			a.qp_access_flags = q->access;
			mask |= IBV_QP_ACCESS_FLAGS;
		}
		break;
	case IBV_QPS_RTR:
		if (q->type == IBV_QPT_UD)
			break;
		a.path_mtu = IBV_MTU_1024;	/* as in the rxe captures */
		a.dest_qp_num = q->dest_qpn;
		a.rq_psn = q->rq_psn;
		/* RoCE: a GRH to the device's own GID 0 (IPv4-mapped). */
		a.ah_attr.port_num = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.hop_limit = 64;
		if (ibv_query_gid(q->qp->context, 1, 0, &a.ah_attr.grh.dgid))
			abort();
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (q->type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		break;
	case IBV_QPS_RTS:
		a.sq_psn = q->sq_psn;
		mask |= IBV_QP_SQ_PSN;
		if (q->type == IBV_QPT_RC) {
			/* No local ACK timeout: outstanding sends wait for the
			 * fuzzer's responses, whatever the time.
			 */
			a.timeout = 0;
			a.retry_cnt = 2;
			a.rnr_retry = 2;
			a.max_rd_atomic = 4;
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		break;
	default:
		break;
	}
	return ibv_modify_qp(q->qp, &a, mask);
}

static enum ibv_qp_state
qp_state(struct fq *q)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(q->qp, &a, IBV_QP_STATE, &ia) != 0)
		FAIL("query_qp %s", q->name);
	return a.qp_state;
}

static void
bring_up(struct fq *q)
{
	SETUP(modify(q, IBV_QPS_INIT) == 0, "%s to INIT", q->name);
	SETUP(modify(q, IBV_QPS_RTR) == 0, "%s to RTR", q->name);
	if (q->state == IBV_QPS_RTS)
		SETUP(modify(q, IBV_QPS_RTS) == 0, "%s to RTS", q->name);
}

/* ---- completions ---- */

static const char *
wc_op_name(int op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "?";
	}
}

static int
wc_opcode_of(int wr_opcode)
{
	switch (wr_opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * What may complete while the engine runs: after a frame, only WRs of the
 * QP it was delivered to, and only as that packet allows; while the harness
 * recycles QPs (cause NULL), only flushes.
 */
struct cause {
	int qi;			/* QP the frame reached, -1: dropped */
	uint32_t mask;		/* its opcode's ib_opcode mask */
	int qkey_ok;		/* UD: its DETH carries the QP's Q_Key */
	const uint8_t *payload;	/* UD: what follows its headers */
	uint32_t paylen;
};

/* QP 1 takes whole MADs of the CM class only (IBA 13.4.2, 13.5.3.2). */
static int
cm_mad(const struct cause *c)
{
	return c->qkey_ok && c->paylen >= MAD_LEN && c->payload[0] == 1 &&
	       c->payload[1] == MAD_CLASS_CM;
}

static void
wc_cause_check(struct fq *q, const struct ibv_wc *wc, int send,
	       const struct cause *c)
{
	const char *why = NULL;

	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		if (c != NULL && qp_state(q) != IBV_QPS_ERR)
			why = "a flush while the QP is not in Error";
	} else if (c == NULL) {
		why = "a completion other than a flush while recycling";
	} else if (q->type == IBV_QPT_UD && !c->qkey_ok) {
		why = "a UD completion for a packet with a wrong Q_Key (C10-15)";
	} else if (q == &qps[Q_GSI] && !cm_mad(c)) {
		why = "a QP 1 completion for a packet that is no whole CM MAD";
	} else if (send) {
		if (!(c->mask & IB_M_RESP))
			why = "a send completion caused by a request packet";
	} else if (wc->status == IBV_WC_SUCCESS) {
		if (!(c->mask & IB_M_COMP))
			why = "a receive completion caused by a packet that "
			      "ends no SEND and carries no immediate";
	} else if (!(c->mask & (IB_M_SEND | IB_M_WRITE))) {
		why = "a receive error caused by neither SEND nor WRITE";
	}
	if (why != NULL)
		FAIL("%s: wr_id %#lx %s: %s", q->name, (unsigned long)wc->wr_id,
		     ibv_wc_status_str(wc->status), why);
}

/*
 * Is @wc a completion the harness can have caused? Its wr_id must be the
 * oldest outstanding WR of the queue it names (completions come in posting
 * order, C10-8), on the QP the CQ belongs to, and @c must account for it.
 */
static void
wc_check(int qi, const struct ibv_wc *wc, const struct cause *c)
{
	struct fq *q = &qps[qi];
	unsigned int owner = (wc->wr_id >> 48) & 0xff;
	int send = (wc->wr_id >> 47) & 1;
	struct fifo *f;
	struct posted *p;

	if ((wc->wr_id >> 56) != WRID_MAGIC ||
	    (owner != (unsigned int)qi &&
	     !(owner == SRQ_QI && qi == Q_RC_SRQ && !send)))
		FAIL("%s: completion for a WR never posted to it: wr_id %#lx "
		     "status %s", q->name, (unsigned long)wc->wr_id,
		     ibv_wc_status_str(wc->status));
	if (wc->qp_num != q->qp->qp_num)
		FAIL("%s: completion names QP %#x", q->name, wc->qp_num);
	if ((unsigned int)wc->status > IBV_WC_TM_RNDV_INCOMPLETE)
		FAIL("%s: completion status %u", q->name, wc->status);
	f = send ? &q->sq : owner == SRQ_QI ? &F.srq_fifo : &q->rq;
	if (fifo_count(f) == 0)
		FAIL("%s: completion of wr_id %#lx with nothing outstanding "
		     "(completed twice?)", q->name, (unsigned long)wc->wr_id);
	p = &f->e[f->head % RTE_DIM(f->e)];
	if (p->wr_id != wc->wr_id)
		FAIL("%s: completion of wr_id %#lx out of order, oldest is %#lx",
		     q->name, (unsigned long)wc->wr_id, (unsigned long)p->wr_id);
	f->head++;
	F.completions++;
	if (F.verbose)
		fprintf(stderr, "fuzz_rx:   %s: %s wr_id %#lx %s %s len %u\n",
			q->name, send ? "send" : "recv",
			(unsigned long)wc->wr_id, wc_op_name(wc->opcode),
			ibv_wc_status_str(wc->status), wc->byte_len);
	wc_cause_check(q, wc, send, c);
	if (wc->status != IBV_WC_SUCCESS)
		return;
	if (send) {
		if ((int)wc->opcode != wc_opcode_of(p->opcode))
			FAIL("%s: send WR completed as %s", q->name,
			     wc_op_name(wc->opcode));
		return;
	}
	if (wc->opcode == IBV_WC_RECV) {
		if (wc->byte_len > p->len)
			FAIL("%s: RECV of %u bytes into a %u-byte buffer",
			     q->name, wc->byte_len, p->len);
		if (q->type == IBV_QPT_UD && wc->byte_len != 40 + c->paylen)
			FAIL("%s: UD RECV of %u bytes for a %u-byte payload "
			     "(40 + payload: the GRH comes first)", q->name,
			     wc->byte_len, c->paylen);
	} else if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		if (q->type == IBV_QPT_UD || !(wc->wc_flags & IBV_WC_WITH_IMM))
			FAIL("%s: RECV_RDMA_WITH_IMM without immediate", q->name);
	} else {
		FAIL("%s: receive WR completed as %s", q->name,
		     wc_op_name(wc->opcode));
	}
}

/* Poll every CQ once (each poll is one engine pass); completions seen. */
static int
poll_round(const struct cause *c)
{
	int qi, n, i, got = 0;

	for (qi = 0; qi < NQP; qi++) {
		n = ibv_poll_cq(qps[qi].cq, (int)WC_N, F.wc);
		if (n < 0)
			FAIL("poll_cq %s: %d", qps[qi].name, n);
		if (n > 0 && c != NULL && c->qi != qi)
			FAIL("%s: %d completion(s) (first wr_id %#lx %s) after "
			     "a frame %s", qps[qi].name, n,
			     (unsigned long)F.wc[0].wr_id,
			     ibv_wc_status_str(F.wc[0].status),
			     c->qi < 0 ? "that receive validation dropped" :
			     "delivered to another QP");
		for (i = 0; i < n; i++)
			wc_check(qi, &F.wc[i], c);
		got += n;
	}
	return got;
}

/* Run the engine until two rounds in a row complete nothing. */
static int
drain(const struct cause *c)
{
	int idle = 0, got = 0, n;

	while (idle < 2) {
		n = poll_round(c);
		got += n;
		idle = n ? 0 : idle + 1;
	}
	return got;
}

static void
drain_async(void)
{
	struct ibv_async_event ev;
	int qi;

	while (ibv_get_async_event(F.ctx, &ev) == 0) {
		if (ev.event_type == IBV_EVENT_QP_FATAL ||
		    ev.event_type == IBV_EVENT_QP_REQ_ERR ||
		    ev.event_type == IBV_EVENT_QP_ACCESS_ERR ||
		    ev.event_type == IBV_EVENT_COMM_EST ||
		    ev.event_type == IBV_EVENT_SQ_DRAINED ||
		    ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED) {
			for (qi = 0; qi < NQP; qi++)
				if (ev.element.qp == qps[qi].qp)
					break;
			if (qi == NQP)
				FAIL("async event %s for an unknown QP",
				     ibv_event_type_str(ev.event_type));
		}
		ibv_ack_async_event(&ev);
	}
}

/*
 * Error, flush, Reset, and up again: every WR still posted must complete
 * (flushed) before Reset drops the rest (IBA 10.3.1.4, C10-27).
 */
static void
recycle(int qi)
{
	struct fq *q = &qps[qi];

	if (F.verbose)
		fprintf(stderr, "fuzz_rx: recycle %s\n", q->name);
	if (qp_state(q) != IBV_QPS_ERR &&
	    modify(q, IBV_QPS_ERR) != 0)
		FAIL("%s: to Error refused", q->name);
	drain(NULL);
	if (fifo_count(&q->rq) || fifo_count(&q->sq))
		FAIL("%s in Error: %u receive and %u send WR(s) never completed",
		     q->name, fifo_count(&q->rq), fifo_count(&q->sq));
	if (modify(q, IBV_QPS_RESET) != 0)
		FAIL("%s: to Reset refused", q->name);
	bring_up(q);
	post_all(qi);
	F.resets++;
}

/* ---- frames ---- */

static void
counters(uint64_t *v)
{
	if (dpib_counters(F.ctx, NULL, v, F.ncnt) < 0)
		FAIL("dpib_counters");
}

static int
target_qi(uint32_t qpn)
{
	int qi;

	for (qi = 0; qi < NQP; qi++)
		if (qps[qi].qp->qp_num == qpn)
			return qi;
	return -1;
}

/* The PSN the target's responder or completer takes next. */
static uint32_t
expected_psn(int qi, uint8_t opcode)
{
	struct ib_qp *qp = to_qp(qps[qi].qp);

	if (!(ib_opcode[opcode].mask & IB_M_RESP))
		return qp->resp.epsn;
	if (!ib_sent_any(qp))
		return qp->req.psn;
	return (qp->swqe[qp->comp.wqe_idx & qp->sq.mask].first_psn +
		qp->comp.read_off / qp->path.mtu) & IB_PSN_MASK;
}

/* Ethernet and IPv4 or IPv6 (mode bit 6) in front of UDP of @udplen. */
static uint32_t
frame_l3(uint8_t m, uint32_t udplen)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)F.frame;
	uint8_t *l3 = F.frame + ETH_LEN;

	/* Only the headers: the BTH already sits behind an IPv4 header. */
	memset(F.frame, 0, ETH_LEN + ((m & 0x40) ? IP6_LEN : IP_LEN));
	eth->dst_addr.addr_bytes[0] = 0x02;	/* the loopback port's MAC */
	eth->src_addr.addr_bytes[0] = 0x02;
	eth->src_addr.addr_bytes[5] = 0x01;
	if (m & 0x40) {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)l3;

		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
		ip6->vtc_flow = rte_cpu_to_be_32(6u << 28);
		ip6->payload_len = rte_cpu_to_be_16(udplen);
		ip6->proto = IPPROTO_UDP;
		ip6->hop_limits = 64;
		memcpy(&ip6->src_addr, F.dev_ip6, 16);
		memcpy(&ip6->dst_addr, (m & M_MCAST) ? F.mcast_ip6 :
		       F.dev_ip6, 16);
		return IP6_LEN;
	} else {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->total_length = rte_cpu_to_be_16(IP_LEN + udplen);
		ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_UDP;
		ip->src_addr = F.dev_ip;
		ip->dst_addr = (m & M_MCAST) ? F.mcast_ip : F.dev_ip;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		return IP_LEN;
	}
}

/* Build a RoCEv2 frame around @bth (BTH + rest) as mode @m asks. */
static uint32_t
frame_build(uint8_t m, const uint8_t *bth, uint32_t len)
{
	uint32_t l3len = (m & 0x40) ? IP6_LEN : IP_LEN;
	uint8_t *l3 = F.frame + ETH_LEN, *b = l3 + l3len + UDP_LEN;
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(l3 + l3len);
	uint32_t room = FRAME_MAX - ETH_LEN - l3len - UDP_LEN - IB_ICRC_LEN;
	uint32_t udplen, crc, blen = RTE_MAX(len, (uint32_t)IB_BTH_LEN);
	unsigned int kind = m & 3, t = (m >> 2) & 7;
	int mcast = t == Q_GSI && (m & M_MCAST);

	if (blen > room)
		blen = len = room;
	memset(b, 0, IB_BTH_LEN);
	memcpy(b, bth, len);
	if (kind >= 2) {
		uint32_t qpn = mcast ? MCAST_QPN : qps[t].qp->qp_num;
		uint32_t w;

		b[1] &= 0xf0;			/* TVer 0 */
		b[2] = b[3] = 0xff;		/* default P_Key */
		memcpy(&w, b + 4, 4);
		w = (w & htonl(0xff000000u)) | htonl(qpn);
		memcpy(b + 4, &w, 4);
		if (kind == 3 && !mcast) {
			int8_t d = (int8_t)b[11];
			uint32_t psn = (expected_psn(t, b[0]) + d) & IB_PSN_MASK;

			b[9] = psn >> 16;
			b[10] = psn >> 8;
			b[11] = psn;
		}
	}
	udplen = UDP_LEN + blen + IB_ICRC_LEN;
	frame_l3(m, udplen);
	memset(udp, 0, UDP_LEN);
	udp->src_port = rte_cpu_to_be_16(0xc011);
	udp->dst_port = rte_cpu_to_be_16(IB_UDP_PORT);
	udp->dgram_len = rte_cpu_to_be_16(udplen);
	crc = rte_cpu_to_le_32(ib_icrc(l3, l3len + udplen - IB_ICRC_LEN));
	memcpy(b + blen, &crc, 4);
	return ETH_LEN + l3len + udplen;
}

/* DPIB_FUZZ_VERBOSE: the target's state and what the counters saw. */
static void
frame_trace(const struct cause *c, const uint64_t *before)
{
	uint64_t now[IB_CNT_NUM];
	int i;

	counters(now);
	fprintf(stderr, "fuzz_rx:   %s now in state %d;", qps[c->qi].name,
		qp_state(&qps[c->qi]));
	for (i = 0; i < F.ncnt; i++)
		if (now[i] != before[i] && i != IB_CNT_RX_PKTS &&
		    i != IB_CNT_TX_PKTS)
			fprintf(stderr, " %s +%lu", F.cnt_names[i],
				(unsigned long)(now[i] - before[i]));
	fprintf(stderr, "\n");
}

/*
 * The BTH of the frame in F.frame (Ethernet, an optional 802.1Q tag, IPv4
 * or IPv6, UDP), or NULL; the full headers of its opcode are there too.
 */
static const uint8_t *
frame_bth(uint32_t len)
{
	const uint8_t *f = F.frame, *b;
	uint32_t off = 12;
	uint16_t type;

	if (len < off + 2)
		return NULL;
	type = (uint16_t)(f[off] << 8 | f[off + 1]);
	if (type == RTE_ETHER_TYPE_VLAN) {
		off += 4;
		if (len < off + 2)
			return NULL;
		type = (uint16_t)(f[off] << 8 | f[off + 1]);
	}
	off += 2;
	if (type == RTE_ETHER_TYPE_IPV4)
		off += IP_LEN + UDP_LEN;
	else if (type == RTE_ETHER_TYPE_IPV6)
		off += IP6_LEN + UDP_LEN;
	else
		return NULL;
	if (len < off + IB_BTH_LEN)
		return NULL;
	b = f + off;
	if (ib_opcode[b[0]].mask == 0 || len < off + ib_opcode[b[0]].length)
		return NULL;
	return b;
}

/* The payload of the delivered UD packet at @bth into @c, by its UDP length. */
static void
ud_payload(const uint8_t *bth, struct cause *c)
{
	const uint8_t *udp = bth - UDP_LEN;
	uint32_t hlen = ib_opcode[bth[0]].length;
	uint32_t qkey;

	memcpy(&qkey, bth + ib_opcode[bth[0]].offset[IB_HDR_DETH], 4);
	c->qkey_ok = ntohl(qkey) == qps[c->qi].qkey;
	c->payload = bth + hlen;
	c->paylen = (uint32_t)(udp[4] << 8 | udp[5]) - UDP_LEN - hlen -
		    IB_ICRC_LEN - ((bth[1] >> 4) & 3);
}

/*
 * A UD SEND that reached QP 1, against what the GSI does with it: a CM MAD
 * completes the oldest of the @posted receives (the one completion already
 * checked); anything else completes nothing and is counted (IBA 13.5.3.2:
 * no agent, no answer).
 */
static void
gsi_check(const struct cause *c, uint32_t posted, int got,
	  const uint64_t *before, const uint64_t *after)
{
	int want = 0, cnt = -1;

	if (!(c->mask & IB_M_DETH))
		return;			/* a CNP: congestion control only */
	if (!c->qkey_ok)
		cnt = IB_CNT_RX_BAD_QKEY;
	else if (c->paylen < MAD_LEN || c->payload[0] != 1)
		cnt = IB_CNT_RX_BAD_MAD;
	else if (c->payload[1] != MAD_CLASS_CM)
		cnt = IB_CNT_RX_MAD_CLASS;
	else if (posted == 0)
		cnt = IB_CNT_RX_NO_RWQE;
	else
		want = 1;
	if (got != want)
		FAIL("gsi: %d completion(s) for a %u-byte payload %02x %02x "
		     "(Q_Key %s), %d expected", got, c->paylen,
		     c->paylen ? c->payload[0] : 0,
		     c->paylen > 1 ? c->payload[1] : 0,
		     c->qkey_ok ? "right" : "wrong", want);
	if (cnt >= 0 && after[cnt] != before[cnt] + 1)
		FAIL("gsi: a %u-byte payload %02x %02x not counted in %s",
		     c->paylen, c->paylen ? c->payload[0] : 0,
		     c->paylen > 1 ? c->payload[1] : 0, F.cnt_names[cnt]);
}

/* Inject one record; returns whether receive validation let it through. */
static int
frame_run(uint8_t m, const uint8_t *data, uint32_t len)
{
	uint64_t before[IB_CNT_NUM], after[IB_CNT_NUM];
	struct cause c = { .qi = -1 };
	uint32_t flen, qpn, gsi_posted = fifo_count(&qps[Q_GSI].rq);
	const uint8_t *bth;
	int i, got;

	if ((m & 3) == 0) {
		flen = RTE_MIN(len, (uint32_t)FRAME_MAX);
		memcpy(F.frame, data, flen);
	} else {
		flen = frame_build(m, data, len);
	}
	F.frames++;
	counters(before);
	if (dpib_inject(F.ctx, F.frame, flen) != 0)
		return 0;
	counters(after);
	if (after[IB_CNT_RX_PKTS] != before[IB_CNT_RX_PKTS] + 1)
		FAIL("one injected frame counted as %lu received",
		     (unsigned long)(after[IB_CNT_RX_PKTS] -
				     before[IB_CNT_RX_PKTS]));
	for (i = 0; i < F.ndrop; i++)
		if (after[F.drop_idx[i]] != before[F.drop_idx[i]])
			break;
	bth = frame_bth(flen);
	if (F.verbose)
		fprintf(stderr, "fuzz_rx: frame mode %#x, %u bytes, %s: %s\n", m,
			flen, bth != NULL && ib_opcode[bth[0]].name ?
			ib_opcode[bth[0]].name : "-",
			i < F.ndrop ? F.cnt_names[F.drop_idx[i]] : "delivered");
	if (i == F.ndrop) {
		if (bth == NULL)
			FAIL("a frame without a BTH was delivered");
		memcpy(&qpn, bth + 4, 4);
		qpn = ntohl(qpn) & IB_QPN_MASK;
		c.qi = qpn == MCAST_QPN ? Q_UD : target_qi(qpn);
		if (c.qi < 0)
			FAIL("frame to unknown QPN %#x delivered", qpn);
		c.mask = ib_opcode[bth[0]].mask;
		if (c.mask & IB_M_DETH)
			ud_payload(bth, &c);
		qps[c.qi].touched = 1;
		F.delivered++;
	}
	got = drain(&c);
	if (c.qi == Q_GSI)
		gsi_check(&c, gsi_posted, got, before, after);
	if (F.verbose && c.qi >= 0)
		frame_trace(&c, before);
	return c.qi >= 0;
}

/* ---- setup ---- */

static void
counters_init(void)
{
	unsigned int i;
	int j;

	F.ncnt = dpib_counters(F.ctx, &F.cnt_names, NULL, 0);
	SETUP(F.ncnt == IB_CNT_NUM, "counters: %d", F.ncnt);
	for (j = 0; j < F.ncnt; j++) {
		int drop = 0;

		for (i = 0; i < RTE_DIM(drop_prefixes); i++)
			if (strncmp(F.cnt_names[j], drop_prefixes[i],
				    strlen(drop_prefixes[i])) == 0)
				drop = 1;
		for (i = 0; i < RTE_DIM(delivered_drops); i++)
			if (strcmp(F.cnt_names[j], delivered_drops[i]) == 0)
				drop = 0;
		if (drop)
			F.drop_idx[F.ndrop++] = j;
	}
	SETUP(F.ndrop >= 10, "drop counters: %d", F.ndrop);
}

static void
report(void)
{
	uint64_t v[IB_CNT_NUM];
	int i;

	fprintf(stderr, "fuzz_rx: %lu inputs, %lu frames, %lu delivered, "
		"%lu completions checked, %lu QP recycles\n",
		(unsigned long)F.inputs, (unsigned long)F.frames,
		(unsigned long)F.delivered, (unsigned long)F.completions,
		(unsigned long)F.resets);
	if (getenv("DPIB_FUZZ_COUNTERS") == NULL)
		return;
	counters(v);
	for (i = 0; i < F.ncnt; i++)
		if (v[i])
			fprintf(stderr, "  %-28s %lu\n", F.cnt_names[i],
				(unsigned long)v[i]);
}

static struct ibv_mr *
reg(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, int access)
{
	struct ibv_mr *mr = ibv_reg_mr_iova(pd, addr, len, iova, access);

	SETUP(mr != NULL, "reg_mr %#lx", (unsigned long)iova);
	return mr;
}

static void
create_qps(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 2 } };
	int qi;

	F.srq = ibv_create_srq(F.pd, &sa);
	SETUP(F.srq != NULL, "create_srq");
	for (qi = 0; qi < NQP; qi++) {
		struct fq *q = &qps[qi];
		struct ibv_qp_init_attr ia = {
			.qp_type = q->type,
			.sq_sig_all = 1,
			.srq = qi == Q_RC_SRQ ? F.srq : NULL,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16,
				 .max_send_sge = 2, .max_recv_sge = 2 },
		};

		q->cq = ibv_create_cq(F.ctx, 128, NULL, NULL, 0);
		SETUP(q->cq != NULL, "create_cq");
		ia.send_cq = ia.recv_cq = q->cq;
		q->qp = qi == Q_GSI ? dpib_create_gsi_qp(F.pd, &ia) :
			ibv_create_qp(F.pd, &ia);
		SETUP(q->qp != NULL, "create_qp %s", q->name);
	}
	SETUP(qps[Q_GSI].qp->qp_num == 1, "gsi is QP %u",
	      qps[Q_GSI].qp->qp_num);
	/* The pair points at each other; the others at nobody. */
	qps[Q_RC_A].dest_qpn = qps[Q_RC_B].qp->qp_num;
	qps[Q_RC_B].dest_qpn = qps[Q_RC_A].qp->qp_num;
}

static void
mark_all_ok(void)
{
	struct ibv_sge sge[2];
	uint32_t i, n;
	int qi;

	for (qi = 0; qi < NQP; qi++)
		for (i = 0; i < qps[qi].nrecv; i++) {
			n = slot_sges(qps[qi].slot0 + i,
				      qps[qi].type == IBV_QPT_UD, sge);
			mark_ok(sge, n);
		}
	mark_ok(sge, slot_sges(SRQ_SLOT0, 0, sge));
	for (i = 0; i < RTE_DIM(req_sends); i++) {
		req_sge(i, &sge[0]);
		mark_ok(sge, 1);
	}
}

/*
 * The window over MR_RO, bound on rc_b before any WR of the harness: its
 * completion is taken here. Type 1, so no frame can invalidate it and
 * every input meets it the same.
 */
static void
bind_window(void)
{
	struct ibv_mw_bind b = {
		.wr_id = 1, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = F.mr_ro, .addr = RO_IOVA + PAGE,
			       .length = 2 * PAGE,
			       .mw_access_flags = IBV_ACCESS_REMOTE_READ },
	};
	struct ibv_wc wc;
	int i;

	F.mw_ro = ibv_alloc_mw(F.pd, IBV_MW_TYPE_1);
	SETUP(F.mw_ro != NULL, "alloc_mw");
	SETUP(ibv_bind_mw(qps[Q_RC_B].qp, F.mw_ro, &b) == 0, "bind_mw");
	for (i = 0; i < 1000 && ibv_poll_cq(qps[Q_RC_B].cq, 1, &wc) == 0; i++)
		;
	SETUP(i < 1000 && wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_BIND_MW, "bind_mw completion");
}

static void
setup(void)
{
	union ibv_gid gid = { .raw = { [10] = 0xff, [11] = 0xff } };
	int qi, flags;

	/* Before the first verbs call: no engine lcore, every input runs
	 * synchronously on this thread.
	 */
	setenv("DPIB_ENGINE_MODE", "inline", 1);
	F.verbose = getenv("DPIB_FUZZ_VERBOSE") != NULL;
	arena_map();
	inet_pton(AF_INET, MCAST_IP, &F.mcast_ip);
	inet_pton(AF_INET, DEV_IP, &F.dev_ip);
	inet_pton(AF_INET6, MCAST_IP6, F.mcast_ip6);
	inet_pton(AF_INET6, DEV_IP6, F.dev_ip6);
	F.list = ibv_get_device_list(NULL);
	SETUP(F.list != NULL && F.list[0] != NULL, "no device");
	F.ctx = ibv_open_device(F.list[0]);
	SETUP(F.ctx != NULL, "open_device");
	flags = fcntl(F.ctx->async_fd, F_GETFL);
	SETUP(fcntl(F.ctx->async_fd, F_SETFL, flags | O_NONBLOCK) == 0,
	      "async_fd O_NONBLOCK");
	counters_init();
	F.pd = ibv_alloc_pd(F.ctx);
	F.pd_x = ibv_alloc_pd(F.ctx);
	SETUP(F.pd != NULL && F.pd_x != NULL, "alloc_pd");
	F.mr_w = reg(F.pd, F.w, W_LEN, W_IOVA, IBV_ACCESS_LOCAL_WRITE |
		     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC);
	F.mr_r = reg(F.pd, F.r, R_LEN, R_IOVA, IBV_ACCESS_LOCAL_WRITE);
	F.mr_ro = reg(F.pd, F.ro, RO_LEN, RO_IOVA, IBV_ACCESS_REMOTE_READ |
		      IBV_ACCESS_MW_BIND);
	F.mr_x = reg(F.pd_x, F.x, X_LEN, X_IOVA, IBV_ACCESS_LOCAL_WRITE |
		     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC);
	create_qps();
	for (qi = 0; qi < NQP; qi++) {
		bring_up(&qps[qi]);
		post_all(qi);
	}
	bind_window();
	srq_fill();
	memcpy(gid.raw + 12, &F.mcast_ip, 4);
	SETUP(ibv_attach_mcast(qps[Q_UD].qp, &gid, 0) == 0, "attach_mcast");
	memcpy(gid.raw, F.mcast_ip6, 16);
	SETUP(ibv_attach_mcast(qps[Q_UD].qp, &gid, 0) == 0, "attach_mcast6");
	F.dev = to_qp(qps[Q_RC_A].qp)->dev;
	mark_all_ok();
	arena_poison();
	drain(NULL);
	drain_async();
	F.in_use_base = hca_mbufs_in_use(F.dev);
	/* After dpib's own exit handler is registered, so this runs first. */
	atexit(report);
}

/* ---- libFuzzer entry points ---- */

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("DPIB_FUZZ_SEED_DIR");

	(void)argc;
	(void)argv;
	setup();
	if (dir != NULL && *dir != '\0') {
		fuzz_seeds_write(dir, F.mr_w->rkey, F.mr_ro->rkey,
				 F.mw_ro->rkey);
		exit(0);
	}
	return 0;
}

/*
 * After an input: each QP a frame reached is recycled through Error (which
 * checks that every WR it held completes exactly once), the others must be
 * untouched, no memory outside what packets may write has changed and no
 * mbuf is lost.
 */
static void
input_end(void)
{
	unsigned int in_use;
	int qi, i;

	for (qi = 0; qi < NQP; qi++) {
		if (qps[qi].touched)
			recycle(qi);
		else if (qp_state(&qps[qi]) != qps[qi].state)
			FAIL("%s changed state to %d though no frame reached it",
			     qps[qi].name, qp_state(&qps[qi]));
		qps[qi].touched = 0;
	}
	srq_fill();
	drain(NULL);
	drain_async();
	arena_check();
	memcpy(F.w, F.w_init, W_LEN);
	in_use = hca_mbufs_in_use(F.dev);
	for (i = 0; i < 64 && in_use != F.in_use_base; i++) {
		ibv_poll_cq(qps[0].cq, 0, F.wc);
		in_use = hca_mbufs_in_use(F.dev);
	}
	if (in_use != F.in_use_base)
		FAIL("%d mbuf(s) lost (in use %u, %u before)",
		     (int)(in_use - F.in_use_base), in_use, F.in_use_base);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t pos = 0;
	int nrec = 0;

	if (F.ctx == NULL)
		setup();
	F.inputs++;
	while (pos + 3 <= size && nrec++ < MAX_RECORDS) {
		uint8_t m = data[pos];
		size_t len = (size_t)data[pos + 1] << 8 | data[pos + 2];

		pos += 3;
		len = RTE_MIN(len, size - pos);
		if (!(m & 0x80))
			frame_run(m, data + pos, (uint32_t)len);
		else
			recycle((m >> 2) & 7);
		pos += len;
	}
	input_end();
	return 0;
}
