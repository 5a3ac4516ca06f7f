/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * test_random: random but valid attributes, as programs other than ours
 * choose them. Each case (a seed) draws a QP pair on the loopback device -
 * RC, UC or UD (a Q_Key and an AH), the target's receives from its RQ or
 * an SRQ, capabilities within the device's limits, path MTU, PSNs near
 * anything, timeout, retry counts, RNR timer, READ/atomic depths, access
 * flags - checks that ibv_query_qp reports what was set (and at least the
 * capabilities asked for), then runs batches of random work that those
 * attributes allow: SEND, SEND with immediate, WRITE, WRITE with
 * immediate, READ, FETCH_ADD, CMP_SWP; lengths from 0 to 20000 bytes
 * gathered from and scattered into 1 to max_sge pieces with gaps between
 * them, inline where it fits, signaled or not, posted with ibv_post_send
 * or (one case in three) ibv_wr_*, completions polled from plain or
 * extended CQs; now and then the receives
 * posted late (RNR), the requester drained (SQD) with its batch posted,
 * attributes changed in RTS between batches; one RC case in four ends in
 * a WR the target must refuse (past an MR's end, without the right, a key
 * of no MR): REM_ACCESS_ERR, both QPs in Error, nothing written. Every
 * byte is checked where
 * it must land, the gaps and guards around it where it must not, every
 * completion's status, opcode, length and immediate, the atomics against a
 * model. A failure names its seed: DPIB_RANDOM_SEED=N reruns that case;
 * DPIB_RANDOM_CASES=N runs seeds 1 to N (default CASES). Under
 * DPIB_FAULTS (meson's random_faults) the cases are RC with a finite
 * timeout and retry count 7: every byte must still land exactly once.
 * With the argument "memif" the two ends are two devices joined by memif
 * in this process (random_memif): the frames cross a real PMD. Then what the
 * draws found, as a fixed case: ce_traffic_class_sent_ect (and test_paced).
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>

#include <rte_common.h>

#include "memif_pair.h"

#define CASES		48
#define BUF_LEN		(8u << 20)
#define HALF		(BUF_LEN / 2)	/* A's half, then B's */
#define MAX_BATCH	64
#define MAX_PIECES	8
#define MAX_LEN		20000
#define GUARD		0xa5
#define GAP_MAX		48

static struct ibv_device **list;
static struct ibv_context *ctx;
/* Each end's device, PD and MR of the buffer: A (qp[0], the first half) and
 * B (qp[1], the second); the loopback device's own for both, or with the
 * argument "memif" two devices joined by memif in this process.
 */
static struct ibv_context *ctx_of[2];
static struct ibv_pd *pd_of[2];
static struct ibv_mr *mr_of[2];
static struct ibv_pd *pd;
static uint8_t *buf;
static struct ibv_mr *mr;
static struct ibv_device_attr dev;
static enum ibv_mtu port_mtu;

static uint64_t rng;
/* Under DPIB_FAULTS (loss, duplication, reordering): RC only, whose
 * go-back-N recovers, with a finite timeout and every retry.
 */
static int lossy;

static uint64_t
rnd64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Uniform in [lo, hi]. */
static uint32_t
rnd(uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)(rnd64() % ((uint64_t)hi - lo + 1));
}

static void
fill_random(uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)rnd64();
}

/* Pieces of @len bytes with a gap after each, from *@off of the half at
 * @base (0: A's, HALF: B's).
 */
struct sg {
	int n;
	struct ibv_sge s[MAX_PIECES];
	uint64_t start, end;	/* the span, gaps included */
};

static void
sg_make(struct sg *g, uint64_t base, uint64_t *off, uint32_t len,
	int max_pieces)
{
	uint32_t left = len;
	int i, n = len == 0 ? (int)rnd(0, 1) :
		   (int)rnd(1, RTE_MIN((uint32_t)max_pieces, len));

	g->n = n;
	*off += rnd(0, 7);	/* any alignment */
	g->start = base + *off;
	for (i = 0; i < n; i++) {
		uint32_t l = i == n - 1 ? left : rnd(1, left - (n - 1 - i));

		g->s[i].addr = (uintptr_t)buf + base + *off;
		g->s[i].length = l;
		g->s[i].lkey = mr_of[base != 0]->lkey;
		left -= l;
		*off += l + rnd(0, GAP_MAX);
	}
	*off += 1;
	g->end = base + *off;
}

/* The pieces' bytes, in order, equal @want; the gaps kept the guard. */
static void
sg_check(const struct sg *g, const uint8_t *want, uint32_t len,
	 const char *what)
{
	uint64_t at = g->start, got = 0;
	int i;

	for (i = 0; i < g->n; i++) {
		uint64_t o = g->s[i].addr - (uintptr_t)buf;

		for (; at < o; at++)
			CHECK(buf[at] == GUARD, "%s: byte %" PRIu64 " before "
			      "piece %d written", what, at - g->start, i);
		CHECK(g->s[i].length == 0 ||
		      memcmp(buf + o, want + got, g->s[i].length) == 0,
		      "%s: piece %d of %d (%u bytes) differs", what, i, g->n,
		      g->s[i].length);
		got += g->s[i].length;
		at = o + g->s[i].length;
	}
	for (; at < g->end; at++)
		CHECK(buf[at] == GUARD, "%s: gap byte %" PRIu64 " written",
		      what, at - g->start);
	CHECK(got == len || (len == 0 && got == 0), "%s: %" PRIu64 " of %u",
	      what, got, len);
}

/* The bytes between and after the pieces kept the guard. */
static void
sg_gaps_clean(const struct sg *g, const char *what)
{
	uint64_t at = g->start;
	int i;

	for (i = 0; i < g->n; i++) {
		uint64_t o = g->s[i].addr - (uintptr_t)buf;

		for (; at < o; at++)
			CHECK(buf[at] == GUARD, "%s: gap byte before piece %d "
			      "written", what, i);
		at = o + g->s[i].length;
	}
	for (; at < g->end; at++)
		CHECK(buf[at] == GUARD, "%s: byte after the last piece "
		      "written", what);
}

/* The data the pieces hold now, concatenated. */
static void
sg_gather(const struct sg *g, uint8_t *out)
{
	int i;

	for (i = 0; i < g->n; i++) {
		memcpy(out, (void *)(uintptr_t)g->s[i].addr, g->s[i].length);
		out += g->s[i].length;
	}
}

/* The reverse: @data spread over the pieces, in order. */
static void
sg_scatter(const struct sg *g, const uint8_t *data)
{
	int i;

	for (i = 0; i < g->n; i++) {
		memcpy((void *)(uintptr_t)g->s[i].addr, data, g->s[i].length);
		data += g->s[i].length;
	}
}

/* An atomic's 8-byte result, aligned, from *@off of A's half, a guard
 * after it.
 */
static void
sg_atomic_result(struct sg *g, uint64_t *off)
{
	*off = RTE_ALIGN_CEIL(*off, 8);
	g->n = 1;
	g->start = *off;
	g->s[0].addr = (uintptr_t)buf + *off;
	g->s[0].length = 8;
	g->s[0].lkey = mr_of[0]->lkey;
	*off += 8;
	g->end = *off;
	*off += 8;
}

struct op {
	enum ibv_wr_opcode opcode;
	uint32_t len;
	struct sg local;	/* gathered (SEND, WRITE) or scattered (READ) */
	struct sg recv;		/* the receive it consumes, if any */
	int recv_idx;		/* -1: none */
	uint64_t remote;	/* WRITE/READ/atomic: offset in B's half */
	uint8_t *data;		/* what must land */
	int signaled, inl;
	uint32_t imm;
	uint64_t add, cmp, swap, old;	/* atomics: the model */
	uint32_t rkey;			/* 0: B's MR's */
};

struct qcase {
	uint32_t seed;
	enum ibv_qp_type type;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_qp_cap cap[2];	/* what was asked */
	struct ibv_qp_cap got[2];	/* what query_qp reports */
	int sig_all;
	int access;			/* B's (and A's) remote access */
	uint8_t rd_atomic, dest_rd_atomic;
	enum ibv_mtu mtu;
	struct ibv_ah *ah;		/* UD: to qp[1] */
	uint32_t qkey;
	struct ibv_srq *srq;		/* qp[1]'s receives, or NULL */
	uint32_t rq_wr, rq_sge;		/* qp[1]'s RQ or SRQ: its limits */
	struct ibv_qp_ex *qpx;		/* qp[0] posts with ibv_wr_*, or NULL */
	struct ibv_cq_ex *cqx[2];	/* polled with ibv_start_poll, or NULL */
	int poison;			/* the last batch ends in a bad WR */
	struct ibv_mr *bad_mr;		/* B's: what the bad WR aims at */
	uint8_t rnr_retry;		/* qp[0]'s */
	uint8_t rnr_timer;		/* qp[1]'s */
	uint8_t timeout, retry;		/* qp[0]'s */
};

static int
mtu_bytes(enum ibv_mtu m)
{
	return 128 << m;
}

static void
case_open(struct qcase *c)
{
	int i;

	switch (lossy ? 0 : rnd(0, 4)) {
	case 3:
		c->type = IBV_QPT_UC;
		break;
	case 4:
		c->type = IBV_QPT_UD;
		break;
	default:
		c->type = IBV_QPT_RC;
	}
	c->sig_all = rnd(0, 1);
	c->mtu = (enum ibv_mtu)rnd(IBV_MTU_256, port_mtu);
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr ia = { .qp_type = c->type,
					       .sq_sig_all = c->sig_all };
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		c->cap[i].max_send_wr = rnd(1, 256);
		c->cap[i].max_recv_wr = rnd(1, 256);
		c->cap[i].max_send_sge = rnd(1, RTE_MIN(dev.max_sge,
							MAX_PIECES));
		c->cap[i].max_recv_sge = rnd(1, RTE_MIN(dev.max_sge,
							MAX_PIECES));
		c->cap[i].max_inline_data = rnd(0, 3) == 0 ? 0 : rnd(1, 256);
		if (i == 1 && rnd(0, 3) == 0) {
			/* The target's receives from an SRQ. */
			struct ibv_srq_init_attr sa = { .attr = {
				.max_wr = rnd(1, RTE_MIN(dev.max_srq_wr, 256)),
				.max_sge = rnd(1, RTE_MIN(dev.max_srq_sge,
							  MAX_PIECES)) } };
			struct ibv_srq_attr q;

			c->srq = ibv_create_srq(pd_of[1], &sa);
			CHECK(c->srq != NULL, "seed %u: create_srq (%u, %u) "
			      "errno %d", c->seed, sa.attr.max_wr,
			      sa.attr.max_sge, errno);
			CHECK(ibv_query_srq(c->srq, &q) == 0 &&
			      q.max_wr >= sa.attr.max_wr &&
			      q.max_sge >= sa.attr.max_sge, "seed %u: "
			      "query_srq below what was asked", c->seed);
			ia.srq = c->srq;
			c->cap[1].max_recv_wr = c->cap[1].max_recv_sge = 0;
			c->rq_wr = sa.attr.max_wr;
			c->rq_sge = sa.attr.max_sge;
		} else if (i == 1) {
			c->rq_wr = c->cap[1].max_recv_wr;
			c->rq_sge = c->cap[1].max_recv_sge;
		}
		/* Room for every completion a batch may have in flight; an
		 * extended CQ one time in three.
		 */
		if (rnd(0, 2) == 0) {
			struct ibv_cq_init_attr_ex ca = {
				.cqe = c->cap[i].max_send_wr + (i == 1 ?
					c->rq_wr : c->cap[i].max_recv_wr) + 8,
				.wc_flags = IBV_WC_EX_WITH_BYTE_LEN |
					    IBV_WC_EX_WITH_IMM |
					    IBV_WC_EX_WITH_QP_NUM |
					    IBV_WC_EX_WITH_SRC_QP,
			};

			c->cqx[i] = ibv_create_cq_ex(ctx_of[i], &ca);
			CHECK(c->cqx[i] != NULL, "seed %u: create_cq_ex errno "
			      "%d", c->seed, errno);
			c->cq[i] = ibv_cq_ex_to_cq(c->cqx[i]);
		} else {
			c->cq[i] = ibv_create_cq(ctx_of[i],
						 c->cap[i].max_send_wr +
						 (i == 1 ? c->rq_wr :
						  c->cap[i].max_recv_wr) + 8,
						 NULL, NULL, 0);
		}
		CHECK(c->cq[i] != NULL, "seed %u: create_cq errno %d", c->seed,
		      errno);
		ia.send_cq = ia.recv_cq = c->cq[i];
		ia.cap = c->cap[i];
		if (i == 0 && rnd(0, 2) == 0) {
			/* The requester posts through ibv_wr_* (its own
			 * code path), every opcode its type has.
			 */
			struct ibv_qp_init_attr_ex ix = {
				.qp_type = ia.qp_type, .sq_sig_all = ia.sq_sig_all,
				.send_cq = ia.send_cq, .recv_cq = ia.recv_cq,
				.cap = ia.cap, .pd = pd_of[0],
				.comp_mask = IBV_QP_INIT_ATTR_PD |
					     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
				.send_ops_flags = IBV_QP_EX_WITH_SEND |
					IBV_QP_EX_WITH_SEND_WITH_IMM,
			};

			if (c->type != IBV_QPT_UD)
				ix.send_ops_flags |= IBV_QP_EX_WITH_RDMA_WRITE |
					IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
			if (c->type == IBV_QPT_RC)
				ix.send_ops_flags |= IBV_QP_EX_WITH_RDMA_READ |
					IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
					IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
			c->qp[0] = ibv_create_qp_ex(ctx_of[0], &ix);
			if (c->qp[0] != NULL) {
				c->qpx = ibv_qp_to_qp_ex(c->qp[0]);
				CHECK(c->qpx != NULL, "ibv_qp_to_qp_ex");
			}
		} else {
			c->qp[i] = ibv_create_qp(pd_of[i], &ia);
		}
		CHECK(c->qp[i] != NULL, "seed %u: create_qp (wr %u/%u sge "
		      "%u/%u inline %u) errno %d", c->seed,
		      c->cap[i].max_send_wr, c->cap[i].max_recv_wr,
		      c->cap[i].max_send_sge, c->cap[i].max_recv_sge,
		      c->cap[i].max_inline_data, errno);
		CHECK(ibv_query_qp(c->qp[i], &qa, IBV_QP_CAP, &qi) == 0,
		      "query_qp");
		c->got[i] = qi.cap;
		CHECK(qi.cap.max_send_wr >= c->cap[i].max_send_wr &&
		      qi.cap.max_recv_wr >= c->cap[i].max_recv_wr &&
		      qi.cap.max_send_sge >= c->cap[i].max_send_sge &&
		      qi.cap.max_recv_sge >= c->cap[i].max_recv_sge &&
		      qi.cap.max_inline_data >= c->cap[i].max_inline_data,
		      "seed %u: query_qp cap below what was asked", c->seed);
	}
}

/* An AV toward end @to's device (its GID 0). */
static void
ah_to(struct ibv_ah_attr *ah, int to)
{
	ah_self(ctx_of[!to], ah);
	CHECK(ibv_query_gid(ctx_of[to], 1, 0, &ah->grh.dgid) == 0, "GID 0");
}

/* UD: a Q_Key, an SQ PSN, and an AH to qp[1] with a random SL, traffic
 * class and hop limit; query_qp reports the state, Q_Key and PSN.
 */
static void
ud_connect(struct qcase *c, const uint32_t *psn)
{
	struct ibv_ah_attr aa = { 0 };
	int i;

	c->qkey = (uint32_t)rnd64() & 0x7fffffff;	/* not a controlled one */
	for (i = 0; i < 2; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .port_num = 1, .qkey = c->qkey }, q;
		struct ibv_qp_init_attr qi;

		CHECK(ibv_modify_qp(c->qp[i], &a, IBV_QP_STATE |
				    IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_QKEY) == 0, "seed %u: UD INIT",
		      c->seed);
		a.qp_state = IBV_QPS_RTR;
		CHECK(ibv_modify_qp(c->qp[i], &a, IBV_QP_STATE) == 0,
		      "seed %u: UD RTR", c->seed);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = psn[i];
		CHECK(ibv_modify_qp(c->qp[i], &a, IBV_QP_STATE |
				    IBV_QP_SQ_PSN) == 0, "seed %u: UD RTS",
		      c->seed);
		CHECK(ibv_query_qp(c->qp[i], &q, IBV_QP_STATE | IBV_QP_QKEY |
				   IBV_QP_SQ_PSN, &qi) == 0, "query_qp");
		CHECK(q.qp_state == IBV_QPS_RTS && q.qkey == c->qkey &&
		      q.sq_psn == psn[i], "seed %u: UD query_qp: state %d "
		      "qkey %#x sq_psn %#x", c->seed, q.qp_state, q.qkey,
		      q.sq_psn);
	}
	ah_to(&aa, 1);
	aa.sl = rnd(0, 7);
	aa.grh.traffic_class = rnd(0, 255);
	aa.grh.hop_limit = rnd(1, 255);
	c->ah = ibv_create_ah(pd_of[0], &aa);
	CHECK(c->ah != NULL, "seed %u: create_ah errno %d", c->seed, errno);
	c->mtu = port_mtu;	/* a UD message fits the port's MTU */
}

/* Reset -> RTS with random attributes; query_qp reports each. */
static void
case_connect(struct qcase *c)
{
	uint32_t psn[2] = { rnd(0, 0xffffff), rnd(0, 0xffffff) };
	int rc = c->type == IBV_QPT_RC, i;

	if (c->type == IBV_QPT_UD) {
		ud_connect(c, psn);
		return;
	}
	c->access = rnd(0, 1) ? IBV_ACCESS_REMOTE_WRITE : 0;
	if (rc) {
		c->access |= rnd(0, 1) ? IBV_ACCESS_REMOTE_READ : 0;
		c->access |= rnd(0, 1) ? IBV_ACCESS_REMOTE_ATOMIC : 0;
		/* The requester's depth within the target's resources, as
		 * RDMA-CM negotiates them: more is a NAK (IBA 9.4.4).
		 */
		c->dest_rd_atomic = rnd(0, 3) == 0 ? 0 :
				    rnd(1, RTE_MIN(dev.max_qp_rd_atom, 16));
		c->rd_atomic = rnd(0, 3) == 0 ? 0 :
			       rnd(1, RTE_MIN((uint32_t)
					      dev.max_qp_init_rd_atom,
					      RTE_MAX((uint32_t)
						      c->dest_rd_atomic, 1u)));
	}
	for (i = 0; i < 2; i++) {
		struct ibv_qp *qp = c->qp[i];
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .port_num = 1,
					 .qp_access_flags = c->access }, q;
		struct ibv_qp_init_attr qi;
		int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		/* Without faults nothing is lost, but a test machine under
		 * load may stall a process for milliseconds: at least 67 ms
		 * and one retry, so that a stall costs a resend, not the
		 * run.
		 */
		uint8_t timeout = lossy ? rnd(8, 14) :
				  rnd(0, 3) == 0 ? 0 : rnd(14, 31);
		uint8_t retry = lossy ? 7 : rnd(1, 7), rnr_retry = rnd(0, 7);
		uint8_t rnr_timer = rnd(1, 31);
		uint8_t sl = rnd(0, 7), tclass = rnd(0, 255);
		uint8_t hops = rnd(1, 255);

		if (i == 0) {
			c->rnr_retry = rnr_retry;
			c->timeout = timeout;
			c->retry = retry;
		} else {
			c->rnr_timer = rnr_timer;
		}
		CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0,
		      "seed %u: INIT", c->seed);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = c->mtu;
		a.dest_qp_num = c->qp[!i]->qp_num;
		a.rq_psn = psn[!i];
		ah_to(&a.ah_attr, !i);
		a.ah_attr.sl = sl;
		a.ah_attr.grh.traffic_class = tclass;
		a.ah_attr.grh.hop_limit = hops;
		if (rc) {
			a.max_dest_rd_atomic = c->dest_rd_atomic;
			a.min_rnr_timer = rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
		CHECK(ibv_modify_qp(qp, &a, mask) == 0, "seed %u: RTR",
		      c->seed);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = psn[i];
		mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (rc) {
			a.timeout = timeout;
			a.retry_cnt = retry;
			a.rnr_retry = rnr_retry;
			a.max_rd_atomic = c->rd_atomic;
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		CHECK(ibv_modify_qp(qp, &a, mask) == 0, "seed %u: RTS",
		      c->seed);

		CHECK(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_SQ_PSN |
				   IBV_QP_RQ_PSN | IBV_QP_ACCESS_FLAGS |
				   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER |
				   IBV_QP_MAX_QP_RD_ATOMIC |
				   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_AV,
				   &qi) == 0, "query_qp");
		CHECK(q.qp_state == IBV_QPS_RTS && q.path_mtu == c->mtu &&
		      q.dest_qp_num == c->qp[!i]->qp_num &&
		      q.sq_psn == psn[i] && q.rq_psn == psn[!i] &&
		      q.qp_access_flags == (unsigned int)c->access,
		      "seed %u: query_qp: state %d mtu %d dest %u sq_psn %#x "
		      "rq_psn %#x access %#x", c->seed, q.qp_state,
		      q.path_mtu, q.dest_qp_num, q.sq_psn, q.rq_psn,
		      q.qp_access_flags);
		if (rc)
			CHECK(q.timeout == timeout && q.retry_cnt == retry &&
			      q.rnr_retry == rnr_retry &&
			      q.min_rnr_timer == rnr_timer &&
			      q.max_rd_atomic == c->rd_atomic &&
			      q.max_dest_rd_atomic == c->dest_rd_atomic,
			      "seed %u: query_qp: timeout %u retry %u rnr "
			      "%u/%u rd_atomic %u/%u", c->seed, q.timeout,
			      q.retry_cnt, q.rnr_retry, q.min_rnr_timer,
			      q.max_rd_atomic, q.max_dest_rd_atomic);
		CHECK(q.ah_attr.sl == sl && q.ah_attr.is_global &&
		      q.ah_attr.grh.traffic_class == tclass &&
		      q.ah_attr.grh.hop_limit == hops,
		      "seed %u: query_qp: sl %u tclass %u hop limit %u, want "
		      "%u %u %u", c->seed, q.ah_attr.sl,
		      q.ah_attr.grh.traffic_class, q.ah_attr.grh.hop_limit,
		      sl, tclass, hops);
	}
}

static uint32_t
rnd_len(const struct qcase *c)
{
	if (c->type == IBV_QPT_UD)
		return rnd(0, 3) == 0 ? rnd(0, 16) :
		       rnd(0, (uint32_t)mtu_bytes(port_mtu));
	switch (rnd(0, 3)) {
	case 0:
		return rnd(0, 16);
	case 1:
		return rnd(17, 300);
	case 2:
		return rnd(301, 3 * mtu_bytes(c->mtu) + 100);
	default:
		return rnd(301, MAX_LEN);
	}
}

static enum ibv_wr_opcode
rnd_opcode(const struct qcase *c)
{
	enum ibv_wr_opcode ok[8];
	int n = 0;

	ok[n++] = IBV_WR_SEND;
	ok[n++] = IBV_WR_SEND_WITH_IMM;
	if (c->type == IBV_QPT_UD)
		return ok[rnd(0, n - 1)];
	if (c->access & IBV_ACCESS_REMOTE_WRITE) {
		ok[n++] = IBV_WR_RDMA_WRITE;
		ok[n++] = IBV_WR_RDMA_WRITE_WITH_IMM;
	}
	if (c->rd_atomic != 0 && c->dest_rd_atomic != 0) {
		if (c->access & IBV_ACCESS_REMOTE_READ)
			ok[n++] = IBV_WR_RDMA_READ;
		if (c->access & IBV_ACCESS_REMOTE_ATOMIC) {
			ok[n++] = IBV_WR_ATOMIC_FETCH_AND_ADD;
			ok[n++] = IBV_WR_ATOMIC_CMP_AND_SWP;
		}
	}
	return ok[rnd(0, n - 1)];
}

static int
consumes_recv(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
	       op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static int
is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	       op == IBV_WR_ATOMIC_CMP_AND_SWP;
}

static enum ibv_wc_opcode
wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	default:
		return IBV_WC_SEND;
	}
}

/* The next completion of end @side's CQ (ibv_poll_cq, or the extended
 * CQ's start_poll/end_poll), within 10 s.
 */
static struct ibv_wc
next_wc(const struct qcase *c, int side, const char *what)
{
	struct ibv_cq_ex *x = c->cqx[side];
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_wc wc = { 0 };
	double end = check_now() + 10;
	int ret;

	if (x == NULL) {
		CHECK(poll_one(c->cq[side], &wc, 10), "seed %u: no %s "
		      "completion", c->seed, what);
		return wc;
	}
	while ((ret = ibv_start_poll(x, &pa)) == ENOENT)
		CHECK(check_now() < end, "seed %u: no %s completion "
		      "(extended CQ)", c->seed, what);
	CHECK(ret == 0, "seed %u: ibv_start_poll: %d", c->seed, ret);
	wc.wr_id = x->wr_id;
	wc.status = x->status;
	wc.opcode = ibv_wc_read_opcode(x);
	wc.byte_len = ibv_wc_read_byte_len(x);
	wc.wc_flags = ibv_wc_read_wc_flags(x);
	if (wc.wc_flags & IBV_WC_WITH_IMM)
		wc.imm_data = ibv_wc_read_imm_data(x);
	wc.qp_num = ibv_wc_read_qp_num(x);
	wc.src_qp = ibv_wc_read_src_qp(x);
	ibv_end_poll(x);
	return wc;
}

/* A port's event: it may come at any time (a memif link's PORT_ACTIVE
 * came from the port watch after the cases had begun, beside a CPU hog).
 */
static int
port_event(enum ibv_event_type t)
{
	return t == IBV_EVENT_PORT_ACTIVE || t == IBV_EVENT_PORT_ERR ||
	       t == IBV_EVENT_LID_CHANGE || t == IBV_EVENT_GID_CHANGE ||
	       t == IBV_EVENT_PKEY_CHANGE || t == IBV_EVENT_SM_CHANGE ||
	       t == IBV_EVENT_CLIENT_REREGISTER;
}

/*
 * The next asynchronous event of @c's device that is not a port's: @type
 * on @qp, within 10 s.
 */
static void
wait_event(struct ibv_context *c, enum ibv_event_type type,
	   struct ibv_qp *qp, uint32_t seed)
{
	struct pollfd pf = { .fd = c->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	double end = check_now() + 10;

	do {
		CHECK(poll(&pf, 1, 100) >= 0 && check_now() < end,
		      "seed %u: no %s", seed, ibv_event_type_str(type));
		if (!(pf.revents & POLLIN))
			continue;
		CHECK(ibv_get_async_event(c, &ev) == 0, "get_async_event");
		ibv_ack_async_event(&ev);
		if (!port_event(ev.event_type))
			break;
		printf("# seed %u: %s (port %d) while waiting for %s\n", seed,
		       ibv_event_type_str(ev.event_type), ev.element.port_num,
		       ibv_event_type_str(type));
	} while (1);
	CHECK(ev.event_type == type && ev.element.qp == qp, "seed %u: event "
	      "%s, want %s", seed, ibv_event_type_str(ev.event_type),
	      ibv_event_type_str(type));
}

/*
 * Between batches, RTS -> RTS with new random values of what may change
 * there (ibv_modify_qp(3)): the target's access flags (RC, UC) and RNR
 * timer (RC), both ends' Q_Key (UD); query_qp reports them.
 */
static void
remodify(struct qcase *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS }, q;
	struct ibv_qp_init_attr qi;
	int rc = c->type == IBV_QPT_RC, i;

	if (c->type == IBV_QPT_UD) {
		a.qkey = c->qkey = (uint32_t)rnd64() & 0x7fffffff;
		for (i = 0; i < 2; i++) {
			CHECK(ibv_modify_qp(c->qp[i], &a, IBV_QP_STATE |
					    IBV_QP_QKEY) == 0, "seed %u: RTS "
			      "-> RTS (Q_Key)", c->seed);
			CHECK(ibv_query_qp(c->qp[i], &q, IBV_QP_STATE |
					   IBV_QP_QKEY, &qi) == 0 &&
			      q.qp_state == IBV_QPS_RTS && q.qkey == c->qkey,
			      "seed %u: Q_Key %#x after RTS -> RTS", c->seed,
			      q.qkey);
		}
		return;
	}
	if (rc) {
		/* Not modifiable in RTS (the timeout, the retry counts): the
		 * whole call fails with EINVAL and changes nothing.
		 */
		static const int fixed[] = { IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT,
					     IBV_QP_RNR_RETRY, IBV_QP_SQ_PSN };

		a.timeout = 1;
		a.retry_cnt = a.rnr_retry = 1;
		a.qp_access_flags = 0;
		CHECK(ibv_modify_qp(c->qp[0], &a, IBV_QP_STATE |
				    IBV_QP_ACCESS_FLAGS |
				    fixed[rnd(0, 3)]) == EINVAL, "seed %u: RTS "
		      "-> RTS changing what it may not", c->seed);
		CHECK(ibv_query_qp(c->qp[0], &q, IBV_QP_STATE |
				   IBV_QP_RNR_RETRY, &qi) == 0 &&
		      q.qp_state == IBV_QPS_RTS &&
		      q.rnr_retry == c->rnr_retry, "seed %u: a refused "
		      "modify changed the QP", c->seed);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
	}
	c->access = rnd(0, 1) ? IBV_ACCESS_REMOTE_WRITE : 0;
	if (rc) {
		c->access |= rnd(0, 1) ? IBV_ACCESS_REMOTE_READ : 0;
		c->access |= rnd(0, 1) ? IBV_ACCESS_REMOTE_ATOMIC : 0;
		a.min_rnr_timer = c->rnr_timer = rnd(1, 31);
	}
	a.qp_access_flags = c->access;
	CHECK(ibv_modify_qp(c->qp[1], &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
			    (rc ? IBV_QP_MIN_RNR_TIMER : 0)) == 0,
	      "seed %u: RTS -> RTS (access, RNR timer)", c->seed);
	CHECK(ibv_query_qp(c->qp[1], &q, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
			   IBV_QP_MIN_RNR_TIMER, &qi) == 0 &&
	      q.qp_state == IBV_QPS_RTS &&
	      q.qp_access_flags == (unsigned int)c->access &&
	      (!rc || q.min_rnr_timer == c->rnr_timer), "seed %u: query "
	      "after RTS -> RTS: access %#x RNR timer %u", c->seed,
	      q.qp_access_flags, q.min_rnr_timer);
}

/*
 * A WR the target must refuse (REM_ACCESS_ERR, the QP then in Error) and
 * write nothing of: a range past the end of B's small MR, an MR without
 * the right, or a key that names none.
 */
#define BAD_OFF	(3u << 20)	/* B's small MR, in B's half */

static const char *const bad_what[] = {
	"past the MR's end", "without the access right", "a key of no MR",
};

static void
poison_op(struct qcase *c, struct op *o, uint64_t *aoff)
{
	int rdat = c->rd_atomic != 0 && c->dest_rd_atomic != 0;
	uint32_t kind = (uint32_t)c->poison - 1;

	memset(o, 0, sizeof(*o));
	o->recv_idx = -1;
	o->signaled = 1;
	o->opcode = rdat ? (enum ibv_wr_opcode)(rnd(0, 2) == 0 ?
			   IBV_WR_RDMA_WRITE : rnd(0, 1) ? IBV_WR_RDMA_READ :
			   IBV_WR_ATOMIC_FETCH_AND_ADD) : IBV_WR_RDMA_WRITE;
	o->len = is_atomic(o->opcode) ? 8 : rnd(1, 8192);
	o->data = malloc(o->len);
	CHECK(o->data != NULL, "malloc");
	fill_random(o->data, o->len);
	if (is_atomic(o->opcode)) {
		sg_atomic_result(&o->local, aoff);
		o->add = 1;
	} else {
		sg_make(&o->local, 0, aoff, o->len, c->cap[0].max_send_sge);
		if (o->opcode == IBV_WR_RDMA_WRITE)
			sg_scatter(&o->local, o->data);
	}
	o->rkey = c->bad_mr->rkey;
	if (kind == 0)		/* crosses the end (an atomic: just past) */
		o->remote = BAD_OFF + 4096 - (is_atomic(o->opcode) ? 0 :
					      rnd(0, RTE_MIN(o->len, 4096u) - 1));
	else			/* inside, 8-byte aligned */
		o->remote = BAD_OFF + 8 * rnd(0, (4096 - RTE_MIN(o->len,
						  4096u)) / 8);
	if (kind == 2)
		o->rkey ^= 0x80;	/* the MR's index, another key */
}

/* The batch through ibv_wr_*: one ibv_wr_start ... ibv_wr_complete. */
static void
post_ex(struct qcase *c, struct op *ops, uint32_t k)
{
	struct ibv_qp_ex *x = c->qpx;
	uint32_t i;
	int j;

	ibv_wr_start(x);
	for (i = 0; i < k; i++) {
		struct op *o = &ops[i];
		uint64_t ra = (uintptr_t)buf + HALF + o->remote;
		uint32_t rkey = o->rkey ? o->rkey : mr_of[1]->rkey;

		x->wr_id = i;
		x->wr_flags = (o->signaled ? IBV_SEND_SIGNALED : 0) |
			      (o->inl ? IBV_SEND_INLINE : 0);
		switch (o->opcode) {
		case IBV_WR_SEND:
			ibv_wr_send(x);
			break;
		case IBV_WR_SEND_WITH_IMM:
			ibv_wr_send_imm(x, htonl(o->imm));
			break;
		case IBV_WR_RDMA_WRITE:
			ibv_wr_rdma_write(x, rkey, ra);
			break;
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			ibv_wr_rdma_write_imm(x, rkey, ra, htonl(o->imm));
			break;
		case IBV_WR_RDMA_READ:
			ibv_wr_rdma_read(x, rkey, ra);
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			ibv_wr_atomic_fetch_add(x, rkey, ra, o->add);
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
			ibv_wr_atomic_cmp_swp(x, rkey, ra, o->cmp, o->swap);
			break;
		default:
			CHECK(0, "opcode %d", o->opcode);
		}
		if (c->type == IBV_QPT_UD)
			ibv_wr_set_ud_addr(x, c->ah, c->qp[1]->qp_num, c->qkey);
		if (o->inl) {
			struct ibv_data_buf d[MAX_PIECES];

			for (j = 0; j < o->local.n; j++) {
				d[j].addr = (void *)(uintptr_t)o->local.s[j].addr;
				d[j].length = o->local.s[j].length;
			}
			ibv_wr_set_inline_data_list(x, o->local.n, d);
		} else {
			ibv_wr_set_sge_list(x, o->local.n, o->local.s);
		}
	}
	CHECK(ibv_wr_complete(x) == 0, "seed %u: ibv_wr_complete of %u WRs",
	      c->seed, k);
}

/* One batch: drawn, posted, completed, checked. */
static void
batch(struct qcase *c, int nb)
{
	static struct op ops[MAX_BATCH];
	uint32_t max_wr = RTE_MIN(c->cap[0].max_send_wr, (uint32_t)MAX_BATCH);
	uint32_t k = rnd(1, max_wr), i, nrecv = 0, nsig = 0;
	uint32_t badi = UINT32_MAX;	/* the poisoned WR's index */
	int failed = 0;		/* a WR before it failed (faults) */
	uint64_t aoff = 0, boff = 0;
	struct ibv_send_wr *bad;
	struct ibv_recv_wr *rbad;
	uint8_t *tmp = malloc(MAX_LEN + 128);
	int uc = c->type == IBV_QPT_UC;
	uint32_t grh = c->type == IBV_QPT_UD ? 40 : 0;	/* a UD receive's */
	int late;

	CHECK(tmp != NULL, "malloc");
	memset(buf, GUARD, BUF_LEN);
	if (c->poison)
		k--;		/* room for the bad WR */
	for (i = 0; i < k; i++) {
		struct op *o = &ops[i];

		memset(o, 0, sizeof(*o));
		o->opcode = rnd_opcode(c);
		/* UC: the batch ends in an op the target completes, so that
		 * its completion says everything before it landed.
		 */
		if (uc && i == k - 1 && !consumes_recv(o->opcode))
			o->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		if (consumes_recv(o->opcode) &&
		    nrecv == c->rq_wr) {
			k = i;	/* the RQ is full: the batch ends here */
			break;
		}
		o->len = is_atomic(o->opcode) ? 8 : rnd_len(c);
		if (uc && o->len > 4096)	/* UC: no loss to recover */
			o->len = rnd(0, 4096);
		o->imm = (uint32_t)rnd64();
		o->recv_idx = -1;
		o->data = malloc(o->len + 1);
		CHECK(o->data != NULL, "malloc");
		fill_random(o->data, o->len);
		if (is_atomic(o->opcode)) {
			uint64_t cur = rnd64();

			boff = RTE_ALIGN_CEIL(boff, 8);
			o->remote = boff;
			memcpy(buf + HALF + boff, &cur, 8);
			boff += 16 + 8 * rnd(0, 4);	/* a guard after */
			o->old = cur;
			o->add = rnd64();
			o->cmp = rnd(0, 1) ? cur : rnd64();
			o->swap = rnd64();
			sg_atomic_result(&o->local, &aoff);
		} else if (o->opcode == IBV_WR_RDMA_READ) {
			boff += rnd(0, 7);
			o->remote = boff;
			memcpy(buf + HALF + boff, o->data, o->len);
			boff += o->len + 1;
			sg_make(&o->local, 0, &aoff, o->len,
				c->cap[0].max_send_sge);
		} else {
			sg_make(&o->local, 0, &aoff, o->len,
				c->cap[0].max_send_sge);
			sg_scatter(&o->local, o->data);	/* the source */
			if (o->opcode == IBV_WR_RDMA_WRITE ||
			    o->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
				boff += rnd(0, 7);
				o->remote = boff;
				boff += o->len + 1;
			}
			o->inl = o->len <= c->got[0].max_inline_data &&
				 rnd(0, 1);
		}
		if (consumes_recv(o->opcode)) {
			/* A SEND's room, a little more than it needs; a
			 * WRITE with immediate's receive may have none.
			 */
			uint32_t room = o->opcode == IBV_WR_RDMA_WRITE_WITH_IMM
					? 0 : grh + o->len + rnd(0, 64);

			sg_make(&o->recv, HALF, &boff, room, c->rq_sge);
			o->recv_idx = (int)nrecv++;
		}
		o->signaled = c->sig_all || rnd(0, 1);
		CHECK(aoff < HALF && boff < HALF, "batch too big");
	}
	/* UC: the batch (cut short by a full RQ) ends in an op the target
	 * completes, whose completion says that all before it landed.
	 */
	while (uc && k > 0 && !consumes_recv(ops[k - 1].opcode))
		free(ops[--k].data);
	if (c->poison)
		poison_op(c, &ops[k], &aoff), badi = k++;
	if (k == 0) {
		free(tmp);
		return;
	}
	ops[k - 1].signaled = 1;	/* the batch's end */
	for (i = 0; i < k; i++)
		nsig += ops[i].signaled;
	/* Receives first (UC and UD drop a SEND without one); RC, which
	 * waits for them (RNR NAKs, retried forever at rnr_retry 7), now
	 * and then after its SENDs, up to 2 ms later.
	 */
	late = c->type == IBV_QPT_RC && c->rnr_retry == 7 &&
	       c->rnr_timer <= 14 && rnd(0, 3) == 0 && !c->poison;
	for (i = 0; i < k && !late; i++) {
		struct op *o = &ops[i];
		struct ibv_recv_wr r = { .wr_id = i, .sg_list = o->recv.s,
					 .num_sge = o->recv.n };

		if (o->recv_idx < 0)
			continue;
		CHECK((c->srq != NULL ? ibv_post_srq_recv(c->srq, &r, &rbad) :
		       ibv_post_recv(c->qp[1], &r, &rbad)) == 0,
		      "seed %u: post_recv (%d pieces)", c->seed, o->recv.n);
	}
	if (c->qpx != NULL)
		post_ex(c, ops, k);
	for (i = 0; i < k && c->qpx == NULL; i++) {
		struct op *o = &ops[i];
		struct ibv_send_wr w = {
			.wr_id = i, .sg_list = o->local.s,
			.num_sge = o->local.n, .opcode = o->opcode,
			.send_flags = (o->signaled ? IBV_SEND_SIGNALED : 0) |
				      (o->inl ? IBV_SEND_INLINE : 0),
			.imm_data = htonl(o->imm),
		};
		int ret;

		if (is_atomic(o->opcode)) {
			w.wr.atomic.remote_addr = (uintptr_t)buf + HALF +
						  o->remote;
			w.wr.atomic.rkey = o->rkey ? o->rkey : mr_of[1]->rkey;
			w.wr.atomic.compare_add =
				o->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ?
				o->add : o->cmp;
			w.wr.atomic.swap = o->swap;
		} else if (c->type == IBV_QPT_UD) {
			w.wr.ud.ah = c->ah;
			w.wr.ud.remote_qpn = c->qp[1]->qp_num;
			w.wr.ud.remote_qkey = c->qkey;
		} else {
			w.wr.rdma.remote_addr = (uintptr_t)buf + HALF +
						o->remote;
			w.wr.rdma.rkey = o->rkey ? o->rkey : mr_of[1]->rkey;
		}
		ret = ibv_post_send(c->qp[0], &w, &bad);
		CHECK(ret == 0, "seed %u batch %d: post_send %u (opcode %d, "
		      "%u bytes, %d pieces, inline %d): %d", c->seed, nb, i,
		      o->opcode, o->len, o->local.n, o->inl, ret);
	}
	/* Now and then the requester is told to drain (SQD) with its batch
	 * posted: what it had begun finishes, SQ_DRAINED comes, the rest
	 * waits for SQD -> RTS.
	 */
	if (!late && !c->poison && rnd(0, 5) == 0) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD,
					 .en_sqd_async_notify = 1 }, q;
		struct ibv_qp_init_attr qi;

		CHECK(ibv_modify_qp(c->qp[0], &a, IBV_QP_STATE |
				    IBV_QP_EN_SQD_ASYNC_NOTIFY) == 0,
		      "seed %u: RTS -> SQD", c->seed);
		wait_event(ctx_of[0], IBV_EVENT_SQ_DRAINED, c->qp[0], c->seed);
		CHECK(ibv_query_qp(c->qp[0], &q, IBV_QP_STATE, &qi) == 0 &&
		      q.qp_state == IBV_QPS_SQD, "seed %u: state %d in SQD",
		      c->seed, q.qp_state);
		usleep(rnd(0, 1000));
		a.qp_state = IBV_QPS_RTS;
		CHECK(ibv_modify_qp(c->qp[0], &a, IBV_QP_STATE) == 0,
		      "seed %u: SQD -> RTS", c->seed);
	}
	if (late) {
		usleep(rnd(0, 2000));
		for (i = 0; i < k; i++) {
			struct op *o = &ops[i];
			struct ibv_recv_wr r = { .wr_id = i,
						 .sg_list = o->recv.s,
						 .num_sge = o->recv.n };

			if (o->recv_idx < 0)
				continue;
			CHECK((c->srq != NULL ?
			       ibv_post_srq_recv(c->srq, &r, &rbad) :
			       ibv_post_recv(c->qp[1], &r, &rbad)) == 0,
			      "seed %u: late post_recv", c->seed);
		}
	}
	/* The send completions, in order; the receives, in order. Behind
	 * faults a batch with a bad WR may end otherwise: the NAK lost, the
	 * peer in Error answers nothing more, the timer fails the oldest WR
	 * not acknowledged (RETRY_EXC_ERR) and flushes the rest, signaled
	 * or not - up to the bad WR's completion.
	 */
	if (lossy && c->poison) {
		for (;;) {
			struct ibv_wc wc = next_wc(c, 0, "send");

			CHECK(wc.wr_id < k, "wr_id %" PRIu64, wc.wr_id);
			if (wc.status == IBV_WC_SUCCESS)
				CHECK(!failed && wc.wr_id != badi,
				      "seed %u: wr %" PRIu64 " successful %s",
				      c->seed, wc.wr_id, failed ?
				      "after an error" : "(the bad WR)");
			else if (wc.status == IBV_WC_WR_FLUSH_ERR)
				CHECK(failed, "seed %u: a flush before any "
				      "error", c->seed);
			else
				CHECK(!failed && (wc.status ==
				      IBV_WC_RETRY_EXC_ERR || (wc.wr_id == badi &&
				      wc.status == IBV_WC_REM_ACCESS_ERR)),
				      "seed %u: wr %" PRIu64 " (bad %u): %s",
				      c->seed, wc.wr_id, badi,
				      ibv_wc_status_str(wc.status));
			failed |= wc.status != IBV_WC_SUCCESS &&
				  wc.wr_id != badi;
			if (wc.wr_id == badi)
				break;
		}
		nsig = 0;	/* all taken */
	}
	{
		uint32_t want = 0;

		for (i = 0; i < nsig; i++) {
			struct ibv_wc wc = next_wc(c, 0, "send");

			/* Behind faults the NAK may be lost, and a peer in
			 * Error answers nothing more: the timer ends it.
			 */
			if (wc.wr_id == badi) {
				CHECK(wc.status == IBV_WC_REM_ACCESS_ERR ||
				      (lossy &&
				       wc.status == IBV_WC_RETRY_EXC_ERR),
				      "seed %u: the bad WR (%s) completed %s",
				      c->seed, bad_what[c->poison - 1],
				      ibv_wc_status_str(wc.status));
				want++;
				continue;
			}
			CHECK(wc.status == IBV_WC_SUCCESS, "seed %u batch %d: "
			      "wr %" PRIu64 " %s (opcode %d, %u bytes, %d "
			      "pieces, inline %d; %s, MTU %d, access %#x, "
			      "READ/atomic depth %u, target's %u; timeout %u, "
			      "retry %u)", c->seed, nb,
			      wc.wr_id, ibv_wc_status_str(wc.status),
			      ops[wc.wr_id].opcode, ops[wc.wr_id].len,
			      ops[wc.wr_id].local.n, ops[wc.wr_id].inl,
			      c->type == IBV_QPT_RC ? "RC" : "UC",
			      mtu_bytes(c->mtu), c->access, c->rd_atomic,
			      c->dest_rd_atomic, c->timeout, c->retry);
			while (!ops[want].signaled)
				want++;
			CHECK(wc.wr_id == want && wc.opcode ==
			      wc_opcode(ops[want].opcode),
			      "seed %u: send completion wr %" PRIu64 " opcode "
			      "%d, want %u opcode %d", c->seed, wc.wr_id,
			      wc.opcode, want, wc_opcode(ops[want].opcode));
			want++;
		}
	}
	for (i = 0; i < k; i++) {
		struct op *o = &ops[i];
		struct ibv_wc wc;

		if (o->recv_idx < 0)
			continue;
		wc = next_wc(c, 1, "receive");
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == i,
		      "seed %u batch %d: receive wr %" PRIu64 " %s, want %u",
		      c->seed, nb, wc.wr_id, ibv_wc_status_str(wc.status), i);
		CHECK(wc.byte_len == grh + o->len, "seed %u: receive of wr "
		      "%u: byte_len %u, want %u", c->seed, i, wc.byte_len,
		      grh + o->len);
		CHECK(wc.qp_num == c->qp[1]->qp_num, "qp_num");
		CHECK(!grh || (wc.src_qp == c->qp[0]->qp_num &&
			       (wc.wc_flags & IBV_WC_GRH)),
		      "seed %u: UD receive: src_qp %u (want %u), flags %#x",
		      c->seed, wc.src_qp, c->qp[0]->qp_num, wc.wc_flags);
		if (o->opcode == IBV_WR_SEND) {
			CHECK(wc.opcode == IBV_WC_RECV &&
			      !(wc.wc_flags & IBV_WC_WITH_IMM),
			      "seed %u: SEND received as opcode %d flags %#x",
			      c->seed, wc.opcode, wc.wc_flags);
		} else {
			CHECK(wc.opcode == (o->opcode == IBV_WR_SEND_WITH_IMM ?
					    IBV_WC_RECV :
					    IBV_WC_RECV_RDMA_WITH_IMM) &&
			      (wc.wc_flags & IBV_WC_WITH_IMM) &&
			      ntohl(wc.imm_data) == o->imm,
			      "seed %u: opcode %d flags %#x imm %#x, want "
			      "%#x", c->seed, wc.opcode, wc.wc_flags,
			      ntohl(wc.imm_data), o->imm);
		}
	}
	/* Every byte where it belongs, and nowhere else. */
	for (i = 0; i < k; i++) {
		struct op *o = &ops[i];
		char what[64];

		snprintf(what, sizeof(what), "seed %u batch %d wr %u op %d",
			 c->seed, nb, i, o->opcode);
		if (i == badi) {
			/* Nothing landed: not in the target, not (READ)
			 * in the local pieces.
			 */
			uint64_t x;

			for (x = BAD_OFF; x < BAD_OFF + 4096 + MAX_LEN; x++)
				CHECK(buf[HALF + x] == GUARD, "%s: the bad WR "
				      "(%s) wrote the target at %" PRIu64,
				      what, bad_what[c->poison - 1],
				      x - BAD_OFF);
			if (o->opcode == IBV_WR_RDMA_READ ||
			    is_atomic(o->opcode))
				for (x = o->local.start; x < o->local.end; x++)
					CHECK(buf[x] == GUARD, "%s: the bad WR "
					      "(%s) wrote its local buffer",
					      what, bad_what[c->poison - 1]);
			continue;
		}
		switch (o->opcode) {
		case IBV_WR_SEND:
		case IBV_WR_SEND_WITH_IMM: {
			const struct sg *landed = &o->recv;
			uint32_t at = 0, end = grh + o->len, x;
			int j;

			/* The receive's pieces hold the GRH area (UD), the
			 * message, then whatever room is left keeps the
			 * guard.
			 */
			for (j = 0; j < landed->n; j++) {
				sg_gather(&(struct sg){ .n = 1,
					  .s = { landed->s[j] } }, tmp);
				for (x = 0; x < landed->s[j].length; x++, at++)
					CHECK(at < grh || (at < end ?
					      tmp[x] == o->data[at - grh] :
					      tmp[x] == GUARD), "%s: byte %u "
					      "of the receive (piece %d) %s",
					      what, at, j, at < end ? "differs" :
					      "past the message written");
			}
			sg_gaps_clean(landed, what);
			break;
		}
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			CHECK(memcmp(buf + HALF + o->remote, o->data, o->len)
			      == 0, "%s: WRITE of %u bytes differs", what,
			      o->len);
			CHECK(buf[HALF + o->remote + o->len] == GUARD,
			      "%s: byte past the WRITE", what);
			if (o->remote > 0)
				CHECK(buf[HALF + o->remote - 1] == GUARD,
				      "%s: byte before the WRITE", what);
			if (o->recv.n > 0)	/* took no data */
				sg_gaps_clean(&o->recv, what);
			break;
		case IBV_WR_RDMA_READ:
			if (!failed)	/* else its response may be lost */
				sg_check(&o->local, o->data, o->len, what);
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
		case IBV_WR_ATOMIC_CMP_AND_SWP: {
			uint64_t now, ret, want;

			memcpy(&now, buf + HALF + o->remote, 8);
			memcpy(&ret, buf + o->local.start, 8);
			want = o->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ?
			       o->old + o->add :
			       (o->old == o->cmp ? o->swap : o->old);
			CHECK(failed || ret == o->old, "%s: returned %#" PRIx64
			      ", was %#" PRIx64, what, ret, o->old);
			CHECK(now == want, "%s: target %#" PRIx64 ", want %#"
			      PRIx64, what, now, want);
			break;
		}
		default:
			break;
		}
	}
	for (i = 0; i < k; i++)
		free(ops[i].data);
	free(tmp);
}

static void
case_close(struct qcase *c)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct ibv_qp_attr q;
		struct ibv_qp_init_attr qi;

		/* After a bad WR both ends are in Error (IBA 9.9.3.1). */
		CHECK(ibv_query_qp(c->qp[i], &q, IBV_QP_STATE, &qi) == 0 &&
		      q.qp_state == (c->poison ? IBV_QPS_ERR : IBV_QPS_RTS),
		      "seed %u: QP %d in state %d", c->seed, i, q.qp_state);
		CHECK(ibv_destroy_qp(c->qp[i]) == 0, "destroy_qp");
		CHECK(ibv_destroy_cq(c->cq[i]) == 0, "destroy_cq");
	}
	if (c->ah != NULL)
		CHECK(ibv_destroy_ah(c->ah) == 0, "destroy_ah");
	if (c->srq != NULL)
		CHECK(ibv_destroy_srq(c->srq) == 0, "destroy_srq");
	if (c->bad_mr != NULL)
		CHECK(ibv_dereg_mr(c->bad_mr) == 0, "dereg_mr");
}

static void
run_case(uint32_t seed)
{
	struct qcase c = { .seed = seed };
	int b, nb;

	rng = 0x9e3779b97f4a7c15ull * (seed + 1);
	case_open(&c);
	case_connect(&c);
	nb = rnd(1, 6);
	for (b = 0; b < nb; b++) {
		if (b > 0 && rnd(0, 2) == 0)
			remodify(&c);
		/* RC's last batch ends in a bad WR, one case in four. */
		if (b == nb - 1 && c.type == IBV_QPT_RC && rnd(0, 3) == 0) {
			c.poison = (int)rnd(1, 3);
			c.bad_mr = ibv_reg_mr(pd_of[1], buf + HALF + BAD_OFF,
					      4096, c.poison == 2 ?
					      IBV_ACCESS_LOCAL_WRITE :
					      IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_REMOTE_READ |
					      IBV_ACCESS_REMOTE_ATOMIC);
			CHECK(c.bad_mr != NULL, "reg_mr errno %d", errno);
		}
		batch(&c, b);
	}
	case_close(&c);
}

static void
random_cases(void)
{
	const char *one = getenv("DPIB_RANDOM_SEED");
	const char *n = getenv("DPIB_RANDOM_CASES");
	uint32_t s, cases = n != NULL ? (uint32_t)strtoul(n, NULL, 0) : CASES;

	if (one != NULL) {
		run_case((uint32_t)strtoul(one, NULL, 0));
		return;
	}
	for (s = 1; s <= cases; s++)
		run_case(s);
	printf("# %u cases; RNR NAKs received %" PRIu64 ", retransmit timeouts "
	       "%" PRIu64 "\n", cases, dev_counter(ctx_of[0], "rnr_nak_received"),
	       dev_counter(ctx_of[0], "retransmit_timeout"));
}

/*
 * An RC pair whose AV carries traffic class @tclass, path MTU @mtu,
 * transport timeout @timeout and retry count 0; @n SENDs of @len bytes
 * from qp[0] to qp[1], all completed successfully within @secs.
 */
static void
sends_complete(uint8_t tclass, enum ibv_mtu mtu, uint8_t timeout,
	       uint32_t n, uint32_t len, double secs)
{
	const struct pair_opts o = { .min_rnr_timer = 1, .rnr_retry = 7,
				     .timeout = timeout,
				     .traffic_class = tclass };
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	uint32_t i, j, got;
	int k;

	for (k = 0; k < 2; k++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
			.cap = { .max_send_wr = n, .max_recv_wr = n,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		cq[k] = ibv_create_cq(ctx, 2 * n, NULL, NULL, 0);
		CHECK(cq[k] != NULL, "create_cq");
		ia.send_cq = ia.recv_cq = cq[k];
		qp[k] = ibv_create_qp(pd, &ia);
		CHECK(qp[k] != NULL, "create_qp");
	}
	for (k = 0; k < 2; k++)
		qp_connect(qp[k], qp[!k]->qp_num, &o, mtu, 0, 0);
	for (i = 0; i < n; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + HALF + (uint64_t)i * len,
				       len, mr->lkey };
		struct ibv_recv_wr r = { .wr_id = i, .sg_list = &sge,
					 .num_sge = 1 }, *rbad;

		CHECK(ibv_post_recv(qp[1], &r, &rbad) == 0, "post_recv");
	}
	for (i = 0; i < n; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + (uint64_t)i * len, len,
				       mr->lkey };
		struct ibv_send_wr w = { .wr_id = i, .sg_list = &sge,
					 .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		CHECK(ibv_post_send(qp[0], &w, &bad) == 0, "post_send");
	}
	for (k = 0; k < 2; k++)
		for (got = 0; got < n; got++) {
			struct ibv_wc wc;

			CHECK(poll_one(cq[!k], &wc, secs), "%u of %u %s "
			      "completions", got, n, k ? "send" : "receive");
			CHECK(wc.status == IBV_WC_SUCCESS, "wr %" PRIu64 ": %s",
			      wc.wr_id, ibv_wc_status_str(wc.status));
		}
	for (i = 0; i < n * len; i += 4096)
		for (j = i; j < RTE_MIN(i + 64, n * len); j++)
			CHECK(buf[HALF + j] == buf[j], "byte %u", j);
	for (k = 0; k < 2; k++) {
		CHECK(ibv_destroy_qp(qp[k]) == 0, "destroy_qp");
		CHECK(ibv_destroy_cq(cq[k]) == 0, "destroy_cq");
	}
}

/*
 * A traffic class whose ECN bits say CE (an application's choice, such as
 * test_random draws) goes out ECT(0): a sender never originates CE, and
 * sent marked, the target answered every frame with a CNP and the QP
 * paced itself down to the floor rate.
 */
static void
ce_traffic_class_sent_ect(void)
{
	uint64_t marked = dev_counter(ctx, "ecn_marked_received");
	uint64_t cnps = dev_counter(ctx, "cnp_sent");

	fill_random(buf, HALF);
	sends_complete(0x07, IBV_MTU_1024, 14, 32, 3000, 10);
	CHECK(dev_counter(ctx, "ecn_marked_received") == marked &&
	      dev_counter(ctx, "cnp_sent") == cnps, "%" PRIu64 " frames "
	      "arrived CE, %" PRIu64 " CNPs sent",
	      dev_counter(ctx, "ecn_marked_received") - marked,
	      dev_counter(ctx, "cnp_sent") - cnps);
}

int
main(int argc, char **argv)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	int two = argc > 1 && strcmp(argv[1], "memif") == 0, i;
	struct ibv_port_attr pa;

	if (two) {
		memif_pair_config("random");
		list = ibv_get_device_list(NULL);
		CHECK(list != NULL && list[0] != NULL && list[1] != NULL,
		      "two devices");
		buf = aligned_alloc(4096, BUF_LEN);
		CHECK(buf != NULL, "buffer");
		for (i = 0; i < 2; i++) {
			ctx_of[i] = open_when_active(list[i]);
			pd_of[i] = ibv_alloc_pd(ctx_of[i]);
			CHECK(pd_of[i] != NULL, "alloc_pd");
			mr_of[i] = ibv_reg_mr(pd_of[i], buf, BUF_LEN, access);
			CHECK(mr_of[i] != NULL, "reg_mr errno %d", errno);
		}
		/* The client's regions, as it and the server map them. */
		i = memif_regions_resident();
		CHECK(i >= 2, "memif regions not populated (%d mappings whole)",
		      i);
		ctx = ctx_of[0];
	} else {
		ctx = open_first(&list, &pd, &buf, BUF_LEN, access, &mr);
		ctx_of[0] = ctx_of[1] = ctx;
		pd_of[0] = pd_of[1] = pd;
		mr_of[0] = mr_of[1] = mr;
	}
	CHECK(ibv_query_device(ctx, &dev) == 0, "query_device");
	lossy = getenv("DPIB_FAULTS") != NULL && *getenv("DPIB_FAULTS") != 0;
	CHECK(ibv_query_port(ctx, 1, &pa) == 0, "query_port");
	port_mtu = pa.active_mtu;
	RUN(random_cases);
	if (!lossy && !two)	/* counts frames that faults may drop */
		RUN(ce_traffic_class_sent_ect);
	for (i = 0; i < 1 + two; i++)
		CHECK(ibv_dereg_mr(mr_of[i]) == 0 &&
		      ibv_dealloc_pd(pd_of[i]) == 0 &&
		      ibv_close_device(ctx_of[i]) == 0, "close");
	ibv_free_device_list(list);
	free(buf);
	CHECK_DONE();
}
