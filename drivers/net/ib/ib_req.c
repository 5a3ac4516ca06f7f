/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Requester (IBA 9.7.3 / 9.7.4 requester side): turns send WQEs into
 * request packets, one path MTU at a time, assigning PSNs. Packets are not
 * kept after transmission: a retransmission rebuilds them from the WQE,
 * which stays in the SQ until the completer retires it.
 */
#include <errno.h>
#include <string.h>
#include <rte_cycles.h>
#include <rte_memcpy.h>

#include "ib_hca.h"

enum req_state {
	REQ_NEXT_WQE,		/* look at the WQE at req.wqe_idx */
	REQ_CHECK_LOCAL,	/* first packet: validate the local buffers */
	REQ_SEND_PACKET,	/* build and queue one packet */
	REQ_WQE_SENT,		/* every packet of the WQE is out */
	REQ_LOCAL_DONE,		/* a bind or local invalidate was executed */
	REQ_ERR_LOCAL_PROT,	/* C10-86: local protection error */
	REQ_ERR_LOCAL_LEN,	/* UD message longer than the path MTU */
	REQ_STOP,		/* out of budget, room or credit */
};

static const char *const req_state_name[] = {
	[REQ_NEXT_WQE] = "NEXT_WQE",
	[REQ_CHECK_LOCAL] = "CHECK_LOCAL",
	[REQ_SEND_PACKET] = "SEND_PACKET",
	[REQ_WQE_SENT] = "WQE_SENT",
	[REQ_LOCAL_DONE] = "LOCAL_DONE",
	[REQ_ERR_LOCAL_PROT] = "ERR_LOCAL_PROT",
	[REQ_ERR_LOCAL_LEN] = "ERR_LOCAL_LEN",
	[REQ_STOP] = "STOP",
};

/* Executed by the requester itself: nothing goes on the wire. */
static int
wr_is_local(uint32_t opcode)
{
	return opcode == IBV_WR_BIND_MW || opcode == IBV_WR_LOCAL_INV;
}

static uint32_t
wqe_npkts(const struct ib_qp *qp, const struct ib_send_wqe *w)
{
	if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || w->length == 0 ||
	    qp->ibv.qp_type == IBV_QPT_UD)
		return 1;
	return ib_mtus(qp, w->length + qp->path.mtu - 1);
}

/*
 * A local operation, run when the requester reaches it in SQ order: the
 * WQE completes with the returned status once those before it have.
 */
static enum ibv_wc_status
exec_local(struct ib_qp *qp, const struct ib_send_wqe *w)
{
	if (w->opcode == IBV_WR_BIND_MW)
		return ib_mw_bind_exec(qp, w);
	return ib_mw_invalidate(qp, w->rkey, 0) == 0 ? IBV_WC_SUCCESS :
	       IBV_WC_LOC_QP_OP_ERR;
}

/* BTH opcode of the packet at @first/@last of a SEND or WRITE message. */
static uint8_t
req_opcode(const struct ib_send_wqe *w, int first, int last)
{
	static const uint8_t send[2][2] = {
		{ IB_RC_SEND_MIDDLE, IB_RC_SEND_LAST },
		{ IB_RC_SEND_FIRST, IB_RC_SEND_ONLY } };
	static const uint8_t write[2][2] = {
		{ IB_RC_WRITE_MIDDLE, IB_RC_WRITE_LAST },
		{ IB_RC_WRITE_FIRST, IB_RC_WRITE_ONLY } };

	switch (w->opcode) {
	case IBV_WR_SEND:
		return send[first][last];
	case IBV_WR_SEND_WITH_IMM:
		if (last)
			return first ? IB_RC_SEND_ONLY_IMM : IB_RC_SEND_LAST_IMM;
		return send[first][last];
	case IBV_WR_SEND_WITH_INV:
		if (last)
			return first ? IB_RC_SEND_ONLY_INV : IB_RC_SEND_LAST_INV;
		return send[first][last];
	case IBV_WR_ATOMIC_WRITE:
		return IB_RC_ATOMIC_WRITE;
	case IBV_WR_RDMA_WRITE:
		return write[first][last];
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (last)
			return first ? IB_RC_WRITE_ONLY_IMM : IB_RC_WRITE_LAST_IMM;
		return write[first][last];
	case IBV_WR_RDMA_READ:
		return IB_RC_READ_REQUEST;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IB_RC_COMPARE_SWAP;
	default:
		return IB_RC_FETCH_ADD;
	}
}

/*
 * Every SGE of the WQE must lie in an MR of the QP's PD (C10-86). An SGE of
 * length 0 is zero bytes and touches no memory: it is skipped, as mlx5 and
 * rxe do (some HCAs once read 0 as 2^31; the verbs of today's do not).
 */
static int
check_local(struct ib_qp *qp, const struct ib_send_wqe *w, const uint8_t **src)
{
	unsigned int access = ib_wr_gets_data(w->opcode) ?
			      IBV_ACCESS_LOCAL_WRITE : 0;
	struct ib_mr *mr = NULL;
	uint32_t i;

	for (i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];

		if (s->length == 0)
			continue;
		mr = ib_mr_lookup(qp->dev, s->lkey);
		if (ib_mr_check(mr, qp->ibv.pd, s->addr, s->length,
				access) != 0)
			return -EACCES;
	}
	/* One SGE: where its bytes are, for the first packet (send_packet). */
	*src = w->num_sge == 1 && mr != NULL ?
	       mr->addr + (w->sge[0].addr - mr->iova) : NULL;
	return 0;
}

/*
 * A UD SEND (IBA 9.8.4): one packet to the AH with a DETH. The Q_Key of the
 * WR is used unless its high bit is set, then the QP's (ibv_post_send(3)).
 */
static int
send_ud(struct ib_qp *qp, struct ib_send_wqe *w, const uint8_t *src)
{
	uint8_t op = w->opcode == IBV_WR_SEND_WITH_IMM ? IB_UD_SEND_ONLY_IMM :
						       IB_UD_SEND_ONLY;
	const struct ib_opcode_info *info = &ib_opcode[op];
	uint32_t qkey = w->ud.qkey;
	struct ib_deth *deth;
	uint8_t *bth, *pay;
	struct rte_mbuf *m;
	int ret;

	if (w->length > qp->path.mtu)
		return -EMSGSIZE;
	/* A host ARP/ND gave up on: the datagram is lost as on any
	 * unreliable link and the WQE completes, rather than holding every
	 * later one behind it (the CM's retries on QP 1, UD traffic to other
	 * hosts). While it is being resolved the WQE waits.
	 */
	ret = ib_hdr_resolve(qp->dev, sq_wqe_av(qp, w));
	if (ret == -EHOSTUNREACH || ret == -EINVAL) {
		ib_count(qp->dev, IB_CNT_TX_DROP_UNREACHABLE);
		qp->req.psn = (qp->req.psn + 1) & IB_PSN_MASK;
		return 1;
	}
	m = ib_pkt_alloc_av(qp, sq_wqe_av(qp, w), op, w->length, &bth, &pay);
	if (m == NULL)
		return -ENOBUFS;
	ib_pkt_bth(bth, op, !!(w->flags & IBV_SEND_SOLICITED), w->ud.qpn, 0,
		   qp->req.psn);
	deth = (void *)(bth + info->offset[IB_HDR_DETH]);
	deth->qkey = rte_cpu_to_be_32(qkey & 0x80000000u ? qp->attr.qkey : qkey);
	deth->sqp = rte_cpu_to_be_32(qp->ibv.qp_num & IB_QPN_MASK);
	if (info->mask & IB_M_IMMDT)
		memcpy(bth + info->offset[IB_HDR_IMMDT], &w->imm, 4);
	if (w->flags & IBV_SEND_INLINE)
		rte_memcpy(pay, w->inline_data, w->length);
	else if (src != NULL)
		rte_memcpy(pay, src, w->length);
	else if (ib_sge_copy(qp->dev, qp->ibv.pd, w->sge, w->num_sge,
			     &qp->req.cur, pay, w->length, 0) != 0) {
		rte_pktmbuf_free(m);
		return -EACCES;
	}
	ib_tx(qp->dev, m);
	qp->req.psn = (qp->req.psn + 1) & IB_PSN_MASK;
	return 1;
}

/* A power of two near a quarter of @cwnd, 1 .. IB_ACKREQ_EVERY. */
static inline uint32_t
ackreq_every(uint32_t cwnd)
{
	uint32_t q = cwnd / 4;

	if (q >= IB_ACKREQ_EVERY)
		return IB_ACKREQ_EVERY;
	return q < 2 ? 1 : rte_align32prevpow2(q);
}

/*
 * Build and queue the packet at req.offset of WQE @w. @src: the bytes of a
 * one-SGE WQE that check_local checked just now, or NULL. A message that
 * fits one packet is copied from there; the SGE is not looked up and
 * checked a second time (a tenth of a 64 B WRITE's requester cycles).
 */
static int
send_packet(struct ib_qp *qp, struct ib_send_wqe *w, const uint8_t *src)
{
	const struct ib_opcode_info *info;
	int first = qp->req.offset == 0;
	int uc = qp->ibv.qp_type == IBV_QPT_UC;
	uint32_t chunk = 0, mask;
	int last = 1, ackreq;
	uint8_t *bth, *pay, op, *zc = NULL;
	struct ib_sge_cursor cur = qp->req.cur;
	struct rte_mbuf *m;
	rte_iova_t iova;

	if (qp->ibv.qp_type == IBV_QPT_UD)
		return send_ud(qp, w, src);
	if (!ib_wr_gets_data(w->opcode)) {
		chunk = RTE_MIN(qp->path.mtu, w->length - qp->req.offset);
		last = qp->req.offset + chunk == w->length;
	}
	op = req_opcode(w, first, last) | (uc ? 0x20 : 0);
	info = &ib_opcode[op];
	mask = info->mask;
	/* Large payloads go from the MR itself where the port takes it. */
	if (ib_zc_wanted(qp->dev, chunk) && !(w->flags & IBV_SEND_INLINE) &&
	    (qp->ibv.qp_type == IBV_QPT_RC || qp->dev->tx_reclaims))
		zc = ib_sge_ref(qp->dev, qp->ibv.pd, w->sge, w->num_sge,
				&qp->req.cur, chunk, &iova);
	m = zc != NULL ? ib_pkt_alloc_zc(qp, op, zc, iova, chunk,
		&qp->swqe[qp->req.wqe_idx & qp->sq.mask].zc,
		qp->dev->tx_gathers, &bth) :
		ib_pkt_alloc(qp, op, chunk, &bth, &pay);
	if (m == NULL) {
		qp->req.cur = cur;
		return -ENOBUFS;
	}
	/*
	 * AckReq on a message's last packet, and also where the congestion
	 * window closes and four times a window (at most every
	 * IB_ACKREQ_EVERY packets), so that ACKs keep coming while a long
	 * message is still being sent: the window reopens before it runs
	 * dry, and a lost packet is followed by others that draw a NAK
	 * rather than by silence until the transport timer. UC has no
	 * acknowledgements: AckReq stays clear (C9-18).
	 */
	ackreq = !uc && (last ||
		 psn_diff(qp->req.psn, ib_comp_acked(qp)) >=
		 (int32_t)qp->cc.cwnd ||
		 (qp->req.psn & (ackreq_every(qp->cc.cwnd) - 1)) == 0);
	ib_pkt_bth(bth, op, last && (w->flags & IBV_SEND_SOLICITED),
		   qp->path.dest_qpn, ackreq, qp->req.psn);
	if (mask & IB_M_RETH)
		reth_set((struct ib_reth *)(bth + info->offset[IB_HDR_RETH]),
			 w->rdma.va, w->rkey, w->length);
	if (mask & IB_M_IMMDT)
		memcpy(bth + info->offset[IB_HDR_IMMDT], &w->imm, 4);
	if (mask & IB_M_IETH)
		*(rte_be32_t *)(bth + info->offset[IB_HDR_IETH]) =
			rte_cpu_to_be_32(w->rkey);
	if (mask & IB_M_ATMETH) {
		struct ib_atmeth *a = (void *)(bth + info->offset[IB_HDR_ATMETH]);

		a->va = rte_cpu_to_be_64(w->rdma.va);
		a->rkey = rte_cpu_to_be_32(w->rkey);
		if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			a->swap_add = rte_cpu_to_be_64(w->rdma.swap);
			a->compare = rte_cpu_to_be_64(w->rdma.compare_add);
		} else {
			a->swap_add = rte_cpu_to_be_64(w->rdma.compare_add);
			a->compare = 0;
		}
	}
	if (chunk && zc == NULL) {
		if (w->flags & IBV_SEND_INLINE) {
			rte_memcpy(pay, w->inline_data + qp->req.offset, chunk);
		} else if (src != NULL && chunk == w->length) {
			rte_memcpy(pay, src, chunk);
			qp->req.cur.off = chunk;
		} else if (ib_sge_copy(qp->dev, qp->ibv.pd, w->sge, w->num_sge,
				     &qp->req.cur, pay, chunk, 0) != 0) {
			rte_pktmbuf_free(m);
			return -EACCES;
		}
	}
	ib_tx(qp->dev, m);
	qp->req.offset += chunk;
	qp->req.psn = (qp->req.psn + (ib_wr_is_read_atomic(w->opcode) ?
				      wqe_npkts(qp, w) : 1)) & IB_PSN_MASK;
	if (psn_diff(qp->req.psn, qp->req.max_psn) > 0)
		qp->req.max_psn = qp->req.psn;
	return last;
}

/*
 * An RC packet went out: the transport timer runs from the first packet
 * on the wire (@first: nothing was outstanding before it), and the
 * congestion window learns of it.
 */
static inline void
req_timer_start(struct ib_qp *qp, int first)
{
	if (first)
		qp->comp.deadline = 0;
	ib_comp_arm(qp);
	if (unlikely(!qp->cc.armed))
		ib_cc_sent(qp);
}

/* The WQE at req.wqe_idx is done with: the next one, the high mark. */
static inline void
req_wqe_done(struct ib_qp *qp)
{
	qp->req.wqe_idx++;
	if ((int32_t)(qp->req.wqe_idx - qp->req.hw_idx) > 0)
		qp->req.hw_idx = qp->req.wqe_idx;
}

/* The ONLY opcode of a one-packet WRITE or SEND, by WR opcode (0: none). */
static const uint8_t one_op[IBV_WR_SEND_WITH_IMM + 1] = {
	[IBV_WR_RDMA_WRITE] = IB_RC_WRITE_ONLY,
	[IBV_WR_RDMA_WRITE_WITH_IMM] = IB_RC_WRITE_ONLY_IMM,
	[IBV_WR_SEND] = IB_RC_SEND_ONLY,
	[IBV_WR_SEND_WITH_IMM] = IB_RC_SEND_ONLY_IMM,
};

/*
 * The requester's common case in one go: a WRITE or SEND of 1 to MTU
 * bytes, inline or from one SGE, on an RC or UC QP, checked, sent and
 * done with as REQ_CHECK_LOCAL, send_packet and REQ_WQE_SENT would (keep
 * them in step). Returns the next state, or REQ_CHECK_LOCAL for a WQE
 * that is not such a one (the general path takes it). It spares a 64 B
 * WRITE the state machine's turns and the general path's tests for
 * multi-packet, zero-copy, READ and atomic work: the requester's 642
 * instructions a message became 578 (callgrind, dpib-perf --engine-child
 * 1, inline). flatten: called from two places now, ib_pkt_alloc was no
 * longer inlined (34 instructions of call a SEND).
 */
static enum req_state __attribute__((flatten))
req_one_packet(struct ib_qp *qp, struct ib_send_wqe *w,
	       struct ib_swqe_state *st, int *budget)
{
	int uc = qp->ibv.qp_type == IBV_QPT_UC, first;
	uint32_t len = w->length, psn = qp->req.psn;
	const struct ib_opcode_info *info;
	const uint8_t *src = NULL;
	uint8_t op, *bth, *pay;
	struct rte_mbuf *m;

	if (w->opcode > IBV_WR_SEND_WITH_IMM || one_op[w->opcode] == 0 ||
	    (!uc && qp->ibv.qp_type != IBV_QPT_RC) || len == 0 ||
	    len > qp->path.mtu || ib_zc_wanted(qp->dev, len) ||
	    (!(w->flags & IBV_SEND_INLINE) && w->num_sge != 1))
		return REQ_CHECK_LOCAL;
	if (!(w->flags & IBV_SEND_INLINE)) {
		const struct ibv_sge *s = &w->sge[0];
		struct ib_mr *mr = ib_mr_lookup(qp->dev, s->lkey);

		if (ib_mr_check(mr, qp->ibv.pd, s->addr, s->length, 0) != 0) {
			st->npkts = 0;
			return REQ_ERR_LOCAL_PROT;
		}
		src = mr->addr + (s->addr - mr->iova);
	}
	st->status = IBV_WC_SUCCESS;
	st->first_psn = st->last_psn = psn;
	st->npkts = 1;
	qp->req.cur.idx = qp->req.cur.off = 0;
	first = !ib_sent_any(qp);
	op = one_op[w->opcode] | (uc ? 0x20 : 0);
	m = ib_pkt_alloc(qp, op, len, &bth, &pay);
	if (m == NULL)
		return REQ_STOP;	/* no mbuf, or the peer's MAC not known */
	info = &ib_opcode[op];
	/* One packet, the last: AckReq unless UC (C9-18). */
	ib_pkt_bth(bth, op, !!(w->flags & IBV_SEND_SOLICITED),
		   qp->path.dest_qpn, !uc, psn);
	if (info->mask & IB_M_RETH)
		reth_set((struct ib_reth *)(bth + info->offset[IB_HDR_RETH]),
			 w->rdma.va, w->rkey, len);
	if (info->mask & IB_M_IMMDT)
		memcpy(bth + info->offset[IB_HDR_IMMDT], &w->imm, 4);
	rte_memcpy(pay, src != NULL ? src : w->inline_data, len);
	qp->req.cur.off = src != NULL ? len : 0;
	ib_tx(qp->dev, m);
	qp->req.psn = (psn + 1) & IB_PSN_MASK;
	if (psn_diff(qp->req.psn, qp->req.max_psn) > 0)
		qp->req.max_psn = qp->req.psn;
	(*budget)--;
	if (!uc)
		req_timer_start(qp, first);
	req_wqe_done(qp);
	if (uc)
		ib_comp_sent(qp, psn);
	return REQ_NEXT_WQE;
}

static enum req_state
req_next_wqe(struct ib_qp *qp, uint32_t prod, int *budget)
{
	struct ib_send_wqe *w;

	if (qp->req.wqe_idx == prod || *budget == 0 ||
	    ib_tx_room_req(qp->dev) < 1)
		return REQ_STOP;
	if (!ib_cc_open(qp)) {
		ib_count(qp->dev, IB_CNT_CWND_LIMITED);
		return REQ_STOP;
	}
	if (!ib_pace_ok(qp))
		return REQ_STOP;	/* DCQCN: not due yet */
	w = sq_wqe(qp, qp->req.wqe_idx);
	if (qp->req.offset != 0)
		return REQ_SEND_PACKET;
	if (__atomic_load_n(&qp->attr.qp_state, __ATOMIC_RELAXED) != IBV_QPS_RTS)
		return REQ_STOP;	/* SQD: no new WQE starts */
	if (qp->req.wqe_idx != ib_comp_oldest(qp) &&
	    qp->swqe[(qp->req.wqe_idx - 1) & qp->sq.mask].status)
		return REQ_STOP;	/* an error stops the SQ (C10-91) */
	/* IBA 9.7.4.1.5 / 10.8.3.3: READ and atomic credits, and FENCE. */
	if (ib_wr_is_read_atomic(w->opcode) &&
	    qp->req.rd_atomic >= RTE_MAX(qp->attr.max_rd_atomic, 1))
		return REQ_STOP;
	if ((w->flags & IBV_SEND_FENCE) && qp->req.rd_atomic > 0)
		return REQ_STOP;
	return REQ_CHECK_LOCAL;
}

/* SQD (IBA 10.3.1.5): once nothing is in flight, say so, once. */
static void
req_drain(struct ib_qp *qp)
{
	if (qp->sq_drained || qp->req.offset != 0 ||
	    ib_comp_oldest(qp) != qp->req.wqe_idx)
		return;
	qp->sq_drained = 1;
	ib_async_event(qp->async, IBV_EVENT_SQ_DRAINED, qp);
}

/*
 * The next REQ_PREFETCH WQEs, those already posted: with an engine lcore
 * their lines come from the poster's CPU, and a requester that reached
 * them cold waited for each in turn. One packet's CRC used to hide part of
 * that wait; sealed in rounds at the flush (ib_icrc_seal), it no longer
 * did (64 B WRITEs on the loopback device: -6 %). With the prefetch the
 * two together: 7.7 -> 8.6 M msg/s (dpib-perf, interleaved runs).
 */
#define REQ_PREFETCH	2

static inline void
req_prefetch_next(struct ib_qp *qp, uint32_t prod)
{
	uint32_t ahead = prod - qp->req.wqe_idx, k;
	const uint8_t *n;

	for (k = 1; k <= REQ_PREFETCH && k < ahead; k++) {
		n = (const uint8_t *)sq_wqe(qp, qp->req.wqe_idx + k);
		rte_prefetch0(n);
		rte_prefetch0(n + RTE_CACHE_LINE_SIZE);
	}
}

static void
req_run(struct ib_qp *qp)
{
	enum req_state state = REQ_NEXT_WQE;
	int budget = IB_REQ_BUDGET;
	struct ib_swqe_state *st = NULL;
	struct ib_send_wqe *w = NULL;
	const uint8_t *src = NULL;
	uint32_t prod;
	int ret, first;

	int qps = __atomic_load_n(&qp->attr.qp_state, __ATOMIC_ACQUIRE);

	if (unlikely(qp->comp.zc_wait)) {
		qp->comp.zc_wait = 0;
		ib_comp_kick(qp);
		if (qp->comp.zc_wait)
			ib_tx_reclaim(qp->dev);
	}
	if (qps == IBV_QPS_SQD)
		req_drain(qp);
	if (qps != IBV_QPS_RTS && (qps != IBV_QPS_SQD || qp->req.offset == 0))
		return;
	if (qp->req.wait_until && ib_qp_now(qp) < qp->req.wait_until)
		return;
	qp->req.wait_until = 0;
	prod = __atomic_load_n(&qp->sq.prod, __ATOMIC_ACQUIRE);

	while (1) {
		IB_DP_LOG(DEBUG, "qp %u %s", qp->ibv.qp_num,
			  req_state_name[state]);
		switch (state) {
		case REQ_NEXT_WQE:
			state = req_next_wqe(qp, prod, &budget);
			if (state != REQ_STOP) {
				w = sq_wqe(qp, qp->req.wqe_idx);
				st = &qp->swqe[qp->req.wqe_idx & qp->sq.mask];
				req_prefetch_next(qp, prod);
				if (state == REQ_CHECK_LOCAL)
					state = req_one_packet(qp, w, st,
							       &budget);
			}
			break;
		case REQ_CHECK_LOCAL:
			if (wr_is_local(w->opcode)) {
				/* Once: a go-back-N rewind walks over it again. */
				if (!ib_sent_whole(qp, qp->req.wqe_idx))
					st->status = exec_local(qp, w);
				st->npkts = 0;
				st->first_psn = (qp->req.psn - 1) & IB_PSN_MASK;
				st->last_psn = st->first_psn;
				state = REQ_LOCAL_DONE;
				break;
			}
			src = NULL;
			if (!(w->flags & IBV_SEND_INLINE) &&
			    check_local(qp, w, &src) != 0) {
				st->npkts = 0;
				state = REQ_ERR_LOCAL_PROT;
				break;
			}
			st->status = IBV_WC_SUCCESS;
			st->first_psn = qp->req.psn;
			st->npkts = wqe_npkts(qp, w);
			st->last_psn = (st->first_psn + st->npkts - 1) &
				       IB_PSN_MASK;
			qp->req.cur.idx = qp->req.cur.off = 0;
			if (ib_wr_is_read_atomic(w->opcode))
				qp->req.rd_atomic++;
			state = REQ_SEND_PACKET;
			break;
		case REQ_SEND_PACKET:
			first = !ib_sent_any(qp);
			ret = send_packet(qp, w, src);
			src = NULL;	/* checked for the first packet only */
			budget--;
			/* The timer runs from the first packet on the wire: a
			 * message stopped halfway (window, budget) may never
			 * reach REQ_WQE_SENT if what was sent is lost. With
			 * nothing outstanding before it, from this packet: a
			 * wait for ARP armed it too, and a QP that then idled
			 * (the program set up for 200 ms: perftest) must not
			 * time its first packet out at once.
			 */
			if (ret >= 0 && qp->ibv.qp_type == IBV_QPT_RC)
				req_timer_start(qp, first);
			if (ret == -EMSGSIZE) {
				state = REQ_ERR_LOCAL_LEN;
			} else if (ret == -EACCES) {
				state = REQ_ERR_LOCAL_PROT;
			} else if (ret < 0) {
				/* No mbuf, or the peer's MAC not known yet: the
				 * WQE starts again at CHECK_LOCAL, which takes
				 * its READ/atomic credit again. (Keeping it
				 * leaked a credit a pass: READs to a peer still
				 * in ARP never went out once it answered.)
				 */
				if (qp->req.offset == 0 &&
				    ib_wr_is_read_atomic(w->opcode))
					qp->req.rd_atomic--;
				state = REQ_STOP;
			} else if (ret == 1) {
				state = REQ_WQE_SENT;
			} else if (budget == 0 || ib_tx_room_req(qp->dev) < 1 ||
				   !ib_cc_open(qp) || !ib_pace_ok(qp)) {
				state = REQ_STOP;
			}
			break;
		case REQ_WQE_SENT:
			req_wqe_done(qp);
			qp->req.offset = 0;
			/* Unacknowledged services complete on send (RC's
			 * timer started with the first packet).
			 */
			if (qp->ibv.qp_type != IBV_QPT_RC)
				ib_comp_sent(qp, st->last_psn);
			state = REQ_NEXT_WQE;
			break;
		case REQ_LOCAL_DONE:
			req_wqe_done(qp);
			if (qp->ibv.qp_type != IBV_QPT_RC)
				ib_comp_sent(qp, st->last_psn);
			else
				ib_comp_kick(qp);
			state = st->status ? REQ_STOP : REQ_NEXT_WQE;
			break;
		case REQ_ERR_LOCAL_LEN:
			st->status = IBV_WC_LOC_LEN_ERR;
			qp->req.wqe_idx++;
			qp->req.offset = 0;
			ib_comp_kick(qp);
			return;
		case REQ_ERR_LOCAL_PROT:
			/* Nothing more of it goes on the wire; it completes in
			 * error once the WQEs before it have completed.
			 */
			if (qp->req.offset == 0 && ib_wr_is_read_atomic(w->opcode) &&
			    st->npkts != 0)
				qp->req.rd_atomic--;
			st->status = IBV_WC_LOC_PROT_ERR;
			qp->req.wqe_idx++;
			qp->req.offset = 0;
			ib_comp_kick(qp);
			return;
		case REQ_STOP:
			/* Waiting for ARP counts against the transport timer
			 * like an unanswered request (IBA 9.7.6.1.3).
			 */
			if (!qp->path.hdr.resolved &&
			    qp->ibv.qp_type != IBV_QPT_UD)
				ib_comp_arm(qp);
			return;
		}
	}
}

/*
 * The requester's work. A QP that had nothing on the wire and now sends
 * is likely answering what its peer just sent (a ping-pong, a latency
 * test): an ACK its responder side still holds for that (ack_hold keeps
 * one while the peer's AckReq packets come in consecutive passes, as the
 * mid-message ones of a long WRITE do) leaves right behind the answer's
 * packets. The peer, polling for the completion that ACK gives, then
 * takes the answer in that same call; sent later, on its own, it let the
 * peer's poll return first, and the peer's loop had to take the answer
 * in (ib_write_lat -s 65536 over veth).
 */
void
ib_req_run(struct ib_qp *qp)
{
	uint32_t psn = qp->req.psn;
	int idle;

	/* Everything posted is on the wire, in RTS, with nothing to settle:
	 * req_run would find nothing to do (most calls of a ping-pong's
	 * passes, which it cost 40 instructions each to find so).
	 */
	if (qp->req.wqe_idx == __atomic_load_n(&qp->sq.prod, __ATOMIC_ACQUIRE) &&
	    !qp->comp.zc_wait &&
	    (qp->path.hdr.resolved || qp->ibv.qp_type == IBV_QPT_UD) &&
	    __atomic_load_n(&qp->attr.qp_state, __ATOMIC_ACQUIRE) == IBV_QPS_RTS)
		return;
	idle = qp->req.wqe_idx == qp->comp.wqe_idx;
	req_run(qp);
	if (idle && qp->resp.ack_pending && qp->req.psn != psn)
		ib_resp_ack_behind(qp);
}

/*
 * Go back to @psn (go-back-N, IBA 9.7.4.1.2): find the sent WQE that owns
 * it and resume there. READ and atomic requests are re-sent whole.
 */
/* READ/atomic credits in use: those sent and not yet retired. */
void
ib_req_recount(struct ib_qp *qp)
{
	uint32_t idx;

	qp->req.rd_atomic = 0;
	for (idx = ib_comp_oldest(qp); idx != qp->req.wqe_idx; idx++)
		if (ib_wr_is_read_atomic(sq_wqe(qp, idx)->opcode) &&
		    qp->swqe[idx & qp->sq.mask].npkts != 0)
			qp->req.rd_atomic++;
}

void
ib_req_rewind(struct ib_qp *qp, uint32_t psn)
{
	uint32_t end = ib_sent_end(qp);
	struct ib_swqe_state *st;
	struct ib_send_wqe *w;
	uint32_t idx, offset = 0;

	for (idx = ib_comp_oldest(qp); idx != end; idx++) {
		st = &qp->swqe[idx & qp->sq.mask];
		if (psn_diff(psn, st->last_psn) <= 0)
			break;
	}
	if (idx == end)
		return;
	st = &qp->swqe[idx & qp->sq.mask];
	w = sq_wqe(qp, idx);
	if (ib_wr_is_read_atomic(w->opcode) || psn_diff(psn, st->first_psn) <= 0)
		psn = st->first_psn;
	else
		offset = psn_diff(psn, st->first_psn) * qp->path.mtu;
	qp->req.wqe_idx = idx;
	qp->req.offset = offset;
	qp->req.psn = psn;
	qp->req.cur.idx = qp->req.cur.off = 0;
	if (offset != 0 && !(w->flags & IBV_SEND_INLINE))
		ib_sge_seek(w->sge, w->num_sge, &qp->req.cur, offset);
	/* The re-sent WQE's own READ credit is taken again at CHECK_LOCAL. */
	ib_req_recount(qp);
}

/*
 * The completer retired @w: its READ/atomic credit goes back, if the
 * requester holds one for it now (it does not after going back before it).
 */
void
ib_req_release_credit(struct ib_qp *qp, const struct ib_send_wqe *w,
		      const struct ib_swqe_state *st)
{
	if (ib_wr_is_read_atomic(w->opcode) && st->npkts != 0 &&
	    qp->req.rd_atomic &&
	    (int32_t)(qp->req.wqe_idx - ib_comp_oldest(qp)) > 0)
		qp->req.rd_atomic--;
}

/*
 * The completer moved past the requester, which had gone back before what
 * was retired (the original responses came after all): resume behind it,
 * at the PSN after @last_psn.
 */
void
ib_req_follow(struct ib_qp *qp, uint32_t last_psn)
{
	if ((int32_t)(ib_comp_oldest(qp) - qp->req.wqe_idx) <= 0)
		return;
	qp->req.wqe_idx = ib_comp_oldest(qp);
	qp->req.offset = 0;
	qp->req.psn = (last_psn + 1) & IB_PSN_MASK;
	ib_req_recount(qp);
}

/* An RNR NAK: nothing is sent before @until (TSC). */
void
ib_req_wait(struct ib_qp *qp, uint64_t until)
{
	qp->req.wait_until = until;
}
