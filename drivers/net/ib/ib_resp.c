/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Responder (IBA 9.7.4 responder side, 9.7.5.2 acknowledgements): checks
 * each request packet for sequence, opcode order, resources and access,
 * executes it (places SEND data, WRITE data, answers READ and atomics),
 * completes receive WQEs and acknowledges.
 */
#include <errno.h>
#include <string.h>
#include <rte_memcpy.h>

#include "ib_hca.h"

enum resp_state {
	RESP_CHECK_PSN,
	RESP_CHECK_OP_SEQ,
	RESP_CHECK_RESOURCE,
	RESP_CHECK_RKEY,
	RESP_EXECUTE,
	RESP_COMPLETE,
	RESP_ACKNOWLEDGE,
	RESP_DUPLICATE,
	RESP_ERR_PSN_SEQ,	/* C9-98: NAK sequence error, once */
	RESP_ERR_RNR,		/* 9.7.5.2.8: no receive WQE */
	RESP_ERR_INVALID_REQ,	/* class B: NAK invalid request */
	RESP_ERR_REM_ACCESS,	/* class C: NAK remote access error */
	RESP_ERR_REM_OP,	/* class C: NAK remote operational error */
	RESP_ERR_LENGTH,	/* local length error, NAK invalid request */
	RESP_ERR_INVALIDATE,	/* SEND with Invalidate of a bad rkey */
	RESP_DONE,
};

static const char *const resp_state_name[] = {
	[RESP_CHECK_PSN] = "CHECK_PSN",
	[RESP_CHECK_OP_SEQ] = "CHECK_OP_SEQ",
	[RESP_CHECK_RESOURCE] = "CHECK_RESOURCE",
	[RESP_CHECK_RKEY] = "CHECK_RKEY",
	[RESP_EXECUTE] = "EXECUTE",
	[RESP_COMPLETE] = "COMPLETE",
	[RESP_ACKNOWLEDGE] = "ACKNOWLEDGE",
	[RESP_DUPLICATE] = "DUPLICATE",
	[RESP_ERR_PSN_SEQ] = "ERR_PSN_SEQ",
	[RESP_ERR_RNR] = "ERR_RNR",
	[RESP_ERR_INVALID_REQ] = "ERR_INVALID_REQ",
	[RESP_ERR_REM_ACCESS] = "ERR_REM_ACCESS",
	[RESP_ERR_REM_OP] = "ERR_REM_OP",
	[RESP_ERR_LENGTH] = "ERR_LENGTH",
	[RESP_ERR_INVALIDATE] = "ERR_INVALIDATE",
	[RESP_DONE] = "DONE",
};

/* The request packet being handled. */
/*
 * An ACK or NAK that cannot leave yet, because the requester's MAC is
 * still being resolved or the transmit queue is full, is owed, not
 * dropped: it leaves first thing once the MAC is known or there is room
 * (ib_resp_run), so that the request is answered at once rather than
 * after the requester's transport timer.
 * Acknowledgements are cumulative: only the latest is kept.
 */
static void
ack_owe(struct ib_qp *qp, uint8_t syndrome, uint32_t psn)
{
	qp->resp.ack_owed = 1;
	qp->resp.owed_syndrome = syndrome;
	qp->resp.owed_psn = psn;
	ib_engine_activate(qp);
}

static void
send_ack(struct ib_qp *qp, uint8_t syndrome, uint32_t psn)
{
	uint8_t *bth, *pay;
	struct rte_mbuf *m;

	/* A port that takes nothing while the queue is full: the ACK waits
	 * for a later pass rather than being dropped (the requester would
	 * wait for its transport timer).
	 */
	if (unlikely(ib_tx_room(qp->dev) < 1)) {
		ib_tx_flush(qp->dev);
		if (ib_tx_room(qp->dev) < 1) {
			ack_owe(qp, syndrome, psn);
			return;
		}
	}
	m = ib_pkt_alloc(qp, IB_RC_ACKNOWLEDGE, 0, &bth, &pay);
	if (m == NULL) {
		if (!qp->path.hdr.resolved)
			ack_owe(qp, syndrome, psn);
		return;		/* no mbuf: the requester's timer recovers */
	}
	qp->resp.ack_owed = 0;	/* this one covers it */
	ib_pkt_bth(bth, IB_RC_ACKNOWLEDGE, 0, qp->path.dest_qpn, 0, psn);
	aeth_set((rte_be32_t *)(bth + IB_BTH_LEN), syndrome, qp->resp.msn);
	ib_tx(qp->dev, m);
	if ((syndrome & AETH_TYPE_MASK) == AETH_ACK)
		ib_count(qp->dev, IB_CNT_ACK_SENT);
	else if ((syndrome & AETH_TYPE_MASK) == AETH_RNR_NAK)
		ib_count(qp->dev, IB_CNT_RNR_NAK_SENT);
	else
		ib_count(qp->dev, IB_CNT_NAK_SENT);
}

/* Send the ACK a QP holds back, so that what follows stays in order. */
static void
ack_flush(struct ib_qp *qp)
{
	if (qp->resp.ack_pending) {
		qp->resp.ack_pending = 0;
		qp->resp.ack_held = 0;
		qp->sh->tx_ack_end |= qp->resp.ack_end;
		qp->resp.ack_end = 0;
		send_ack(qp, AETH_ACK | AETH_CREDIT_INVALID, qp->resp.ack_psn);
	}
}

/*
 * Keep holding the pending ACK past this burst? Only while the requester
 * streams: its AckReq packets came in consecutive passes, and this pass
 * brought one. The ACK then leaves in the first pass that brings the QP
 * nothing, or once it covers IB_ACK_COALESCE of them: a stream of small
 * WRITEs that each arrive alone (a peer sending as fast as it polls) costs
 * both sides one ACK per packet otherwise. A ping-pong's requests never
 * come in consecutive passes, so its ACKs leave at once.
 */
static int
ack_hold(const struct ib_qp *qp)
{
	return qp->resp.ack_stream && qp->resp.ack_pass == qp->sh->pass_id &&
	       qp->resp.ack_held < IB_ACK_COALESCE;
}

/*
 * The QP leaves the engine (destroyed): an ACK it still holds leaves now,
 * not with a pass that will no longer see the QP - a peer whose last
 * request it covers would otherwise time out and fail (a program that
 * destroys its QP right after its last receive completes: ibv_rc_pingpong).
 */
void
ib_resp_ack_now(struct ib_qp *qp)
{
	if (qp->resp.ack_pending && qp->resp.rd_head == qp->resp.rd_tail) {
		ack_flush(qp);
		ib_tx_flush(qp->dev);
	}
}

/* ib_req_run: the held ACK leaves now, behind the requests queued. */
void
ib_resp_ack_behind(struct ib_qp *qp)
{
	if (qp->resp.rd_head == qp->resp.rd_tail)
		ack_flush(qp);
}

void
ib_send_ack(struct ib_qp *qp, uint8_t syndrome, uint32_t psn)
{
	ack_flush(qp);
	qp->sh->tx_ack_end = 1;
	send_ack(qp, syndrome, psn);
}

/*
 * An ACK covers every request up to its PSN (IBA 9.7.5.1.1), so one
 * per QP per receive burst is enough; the last PSN that asked is answered.
 * @end: one of them is a message's last packet (or may be: a duplicate),
 * so the ACK completes a request at the peer (tx_settle holds those).
 */
static void
ack_coalesce(struct ib_qp *qp, uint32_t psn, int end)
{
	struct ib_shard *sh = qp->sh;

	qp->resp.ack_end |= end;
	if (qp->resp.ack_pass + 1 == sh->pass_id)
		qp->resp.ack_stream = 1;
	else if (qp->resp.ack_pass != sh->pass_id)
		qp->resp.ack_stream = 0;
	qp->resp.ack_pass = sh->pass_id;
	qp->resp.ack_held++;
	qp->resp.ack_psn = psn;
	if (!qp->resp.ack_pending) {
		qp->resp.ack_pending = 1;
		sh->ack_qps[sh->nack++] = qp;
	}
}

void
ib_resp_flush_acks(struct ib_dev *dev)
{
	struct ib_shard *sh = ib_sh(dev);
	uint32_t i;

	/* A QP still owing READ or atomic responses sends its ACK after them
	 * (ib_resp_run): responses leave in PSN order.
	 */
	for (i = 0; i < sh->nack; i++) {
		struct ib_qp *qp = sh->ack_qps[i];

		if (qp->resp.rd_head != qp->resp.rd_tail)
			continue;
		if (ack_hold(qp))
			ib_engine_activate(qp);	/* its next pass decides */
		else
			ack_flush(qp);
	}
	sh->nack = 0;
}

static enum resp_state
check_psn(struct ib_qp *qp, struct ib_pkt *p)
{
	int32_t d = psn_diff(p->psn, qp->resp.epsn);

	if (d < 0) {
		ib_count(qp->dev, IB_CNT_RX_DUP);
		return RESP_DUPLICATE;
	}
	if (d > 0) {
		ib_count(qp->dev, IB_CNT_RX_OUT_OF_SEQ);
		return qp->resp.nak_seq_sent ? RESP_DONE : RESP_ERR_PSN_SEQ;
	}
	qp->resp.nak_seq_sent = 0;
	return RESP_CHECK_OP_SEQ;
}

/* C9-95ff: a MIDDLE or LAST must continue the open SEND or WRITE. */
static enum resp_state
check_op_seq(struct ib_qp *qp, struct ib_pkt *p)
{
	uint32_t open = qp->resp.last_op_mask;
	uint32_t kind = p->mask & (IB_M_SEND | IB_M_WRITE);

	if (open) {
		if (!(p->mask & (IB_M_MIDDLE | IB_M_LAST)) ||
		    (p->mask & IB_M_FIRST) || kind != open)
			return RESP_ERR_INVALID_REQ;
	} else if (!(p->mask & IB_M_FIRST)) {
		return RESP_ERR_INVALID_REQ;
	}
	if ((p->mask & (IB_M_FIRST | IB_M_MIDDLE)) && !(p->mask & IB_M_LAST) &&
	    p->paylen != qp->path.mtu)
		return RESP_ERR_INVALID_REQ;	/* C9-42: full MTU */
	if (p->paylen > qp->path.mtu)
		return RESP_ERR_INVALID_REQ;
	return RESP_CHECK_RESOURCE;
}

static enum resp_state
check_resource(struct ib_qp *qp, struct ib_pkt *p)
{
	if (p->mask & IB_M_RWQE) {
		if (!qp->resp.have_rwqe) {
			if (ib_resp_take_rwqe(qp) != 0)
				return RESP_ERR_RNR;
			qp->resp.recv_off = 0;
			qp->resp.cur.idx = qp->resp.cur.off = 0;
		}
	}
	if (p->mask & (IB_M_READ | IB_M_ATOMIC | IB_M_ATOMIC_WR)) {
		struct ib_resp *r = &qp->resp;
		uint32_t max = RTE_MIN((uint32_t)qp->attr.max_dest_rd_atomic,
				       (uint32_t)IB_MAX_READ_JOBS);

		/* Answers to duplicates are oldest (lowest PSNs) and not
		 * owed: a new request takes their place first.
		 */
		while (r->rd_head - r->rd_tail >= max &&
		       r->rd[r->rd_tail % IB_MAX_READ_JOBS].again)
			r->rd_tail++;
		if (r->rd_head - r->rd_tail >= max)
			return RESP_ERR_INVALID_REQ;	/* 9.4.4: no resources */
	}
	return RESP_CHECK_RKEY;
}

static enum resp_state
check_rkey(struct ib_qp *qp, struct ib_pkt *p)
{
	unsigned int access;
	uint64_t va, len;
	uint32_t rkey;

	if (p->mask & IB_M_RETH) {
		const struct ib_reth *r = pkt_reth(p);

		va = reth_va(r);
		rkey = reth_rkey(r);
		len = reth_len(r);
		access = (p->mask & IB_M_READ) ? IBV_ACCESS_REMOTE_READ :
						 IBV_ACCESS_REMOTE_WRITE;
		/* No message is longer than 2^31 bytes (IBA's maximum): a longer
		 * READ would also wrap the count of its response PSNs.
		 */
		if (len > IB_MAX_MSG_SZ)
			return RESP_ERR_INVALID_REQ;
		/* ATOMIC WRITE: 8 bytes at an 8-byte aligned address. */
		if ((p->mask & IB_M_ATOMIC_WR) &&
		    (len != 8 || p->paylen != 8 || (va & 7)))
			return RESP_ERR_INVALID_REQ;
	} else if (p->mask & IB_M_ATMETH) {
		const struct ib_atmeth *a = pkt_atmeth(p);

		va = rte_be_to_cpu_64(a->va);
		rkey = rte_be_to_cpu_32(a->rkey);
		len = 8;
		access = IBV_ACCESS_REMOTE_ATOMIC;
		if (va & 7)
			return RESP_ERR_INVALID_REQ;	/* IBA 9.4.5: 8-byte aligned */
	} else {
		return RESP_EXECUTE;
	}
	if ((p->mask & IB_M_WRITE) && len < p->paylen)
		return RESP_ERR_INVALID_REQ;
	if (!(qp->attr.qp_access_flags & access))
		return RESP_ERR_REM_ACCESS;
	/* 9.4.3: no key check for 0 bytes. */
	if (len != 0) {
		p->addr = ib_rkey_addr(qp, rkey, va, len, access);
		if (p->addr == NULL)
			return RESP_ERR_REM_ACCESS;
	}
	if (p->mask & IB_M_WRITE) {
		qp->resp.wkey = rkey;
		qp->resp.wva = va;
		qp->resp.wremain = len;
		qp->resp.wlen = len;
	} else if (p->mask & IB_M_READ) {
		qp->resp.rd_va = va;
		qp->resp.rd_rkey = rkey;
		qp->resp.rd_len = len;
	}
	return RESP_EXECUTE;
}

static enum resp_state
exec_send(struct ib_qp *qp, struct ib_pkt *p)
{
	struct ib_recv_wqe *rw = &qp->resp.rwqe.w;

	if (p->paylen > rw->length - qp->resp.recv_off)
		return RESP_ERR_LENGTH;
	if (p->paylen && ib_sge_copy(qp->dev, qp->ibv.pd, rw->sge, rw->num_sge,
				     &qp->resp.cur, p->payload, p->paylen,
				     1) != 0)
		return RESP_ERR_REM_OP;	/* local protection error */
	qp->resp.recv_off += p->paylen;
	return (p->mask & IB_M_LAST) ? RESP_COMPLETE : RESP_ACKNOWLEDGE;
}

static enum resp_state
exec_write(struct ib_qp *qp, struct ib_pkt *p)
{
	if (p->paylen > qp->resp.wremain)
		return RESP_ERR_INVALID_REQ;	/* longer than the RETH said */
	if ((p->mask & IB_M_LAST) && p->paylen != qp->resp.wremain)
		return RESP_ERR_INVALID_REQ;	/* shorter */
	if (p->paylen) {
		/* The packet with the RETH was checked just now; the MR or
		 * window may have changed since (deregistered, re-registered,
		 * invalidated) for the packets after it: check again.
		 */
		uint8_t *dst = (p->mask & IB_M_RETH) ? p->addr :
			ib_rkey_addr(qp, qp->resp.wkey, qp->resp.wva,
				     p->paylen, IBV_ACCESS_REMOTE_WRITE);

		if (dst == NULL)
			return RESP_ERR_REM_ACCESS;
		rte_memcpy(dst, p->payload, p->paylen);
	}
	qp->resp.wva += p->paylen;
	qp->resp.wremain -= p->paylen;
	if (!(p->mask & IB_M_LAST))
		return RESP_ACKNOWLEDGE;
	qp->resp.msn++;
	return (p->mask & IB_M_IMMDT) ? RESP_COMPLETE : RESP_ACKNOWLEDGE;
}

/*
 * An answer for @psn will leave after the ACK held back for an earlier
 * PSN would have: that ACK is dropped. The answer acknowledges everything
 * before it (IBA 9.7.5.1.1), and the ACK sent after it broke PSN order.
 */
static void
ack_covered(struct ib_qp *qp, uint32_t psn)
{
	if (qp->resp.ack_pending && psn_diff(psn, qp->resp.ack_psn) > 0) {
		qp->resp.ack_pending = 0;
		qp->resp.ack_held = 0;
	}
}

/*
 * Queue a response job (READ data, an atomic's original value, an ATOMIC
 * WRITE's ACK) for the request at @psn, answered with the MSN as it is now.
 */
static struct ib_read_job *
job_push(struct ib_qp *qp, uint32_t psn)
{
	struct ib_read_job *j = &qp->resp.rd[qp->resp.rd_head++ %
					     IB_MAX_READ_JOBS];

	ack_covered(qp, psn);
	memset(j, 0, sizeof(*j));
	j->psn = psn;
	j->msn = qp->resp.msn;
	ib_engine_activate(qp);
	return j;
}

static enum resp_state
exec_atomic(struct ib_qp *qp, struct ib_pkt *p)
{
	const struct ib_atmeth *a = pkt_atmeth(p);
	uint64_t *addr = (uint64_t *)p->addr;	/* checked by check_rkey */
	uint64_t orig, swap_add = rte_be_to_cpu_64(a->swap_add);
	uint8_t op = p->opcode;
	struct ib_atomic_replay *r;
	struct ib_read_job *j;

	if (op == IB_RC_COMPARE_SWAP) {
		orig = rte_be_to_cpu_64(a->compare);
		__atomic_compare_exchange_n(addr, &orig, swap_add, 0,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(addr, swap_add, __ATOMIC_SEQ_CST);
	}
	qp->resp.msn++;
	r = &qp->resp.replay[qp->resp.replay_next++ % IB_MAX_READ_JOBS];
	r->psn = p->psn;
	r->orig = orig;
	r->valid = 1;
	j = job_push(qp, p->psn);
	j->kind = IB_JOB_ATOMIC_ACK;
	j->orig = orig;
	return RESP_DONE;
}

/*
 * ATOMIC WRITE (IBA 1.5): the 8 payload bytes land in one aligned store,
 * so a reader sees all of the old value or all of the new. The ACK queues
 * behind earlier READ responses; a duplicate is acknowledged again without
 * writing (resp_duplicate).
 */
static enum resp_state
exec_atomic_write(struct ib_qp *qp, struct ib_pkt *p)
{
	uint64_t *addr = (uint64_t *)p->addr;	/* checked by check_rkey */
	uint64_t v;

	memcpy(&v, p->payload, 8);
	__atomic_store_n(addr, v, __ATOMIC_RELEASE);
	qp->resp.msn++;
	job_push(qp, p->psn)->kind = IB_JOB_ACK;
	return RESP_DONE;
}

static enum resp_state
execute(struct ib_qp *qp, struct ib_pkt *p)
{
	if (p->mask & IB_M_SEND)
		return exec_send(qp, p);
	if (p->mask & IB_M_WRITE)
		return exec_write(qp, p);
	if (p->mask & IB_M_ATOMIC_WR)
		return exec_atomic_write(qp, p);
	if (p->mask & IB_M_READ) {
		uint64_t n = qp->resp.rd_len;
		struct ib_read_job *j;

		qp->resp.msn++;
		j = job_push(qp, p->psn);
		j->va = qp->resp.rd_va;
		j->rkey = qp->resp.rd_rkey;
		j->length = n;
		/* The responses use one PSN each (C9-75). */
		qp->resp.epsn = (qp->resp.epsn +
				 (n ? ib_mtus(qp, n + qp->path.mtu - 1) : 1) -
				 1) & IB_PSN_MASK;
		return RESP_DONE;
	}
	return exec_atomic(qp, p);
}

static void
complete_recv(struct ib_qp *qp, struct ib_pkt *p, enum ibv_wc_status status)
{
	struct ib_recv_wqe *rw = &qp->resp.rwqe.w;
	struct ibv_wc wc = {
		.wr_id = rw->wr_id,
		.status = status,
		.opcode = (p->mask & IB_M_WRITE) ? IBV_WC_RECV_RDMA_WITH_IMM :
						   IBV_WC_RECV,
		.byte_len = (p->mask & IB_M_WRITE) ? qp->resp.wlen :
						     qp->resp.recv_off,
		.qp_num = qp->ibv.qp_num,
		.src_qp = qp->attr.dest_qp_num,
	};

	if (p->mask & IB_M_IMMDT) {
		wc.imm_data = pkt_immdt(p);
		wc.wc_flags |= IBV_WC_WITH_IMM;
	} else if (p->mask & IB_M_IETH) {
		wc.invalidated_rkey = pkt_ieth_rkey(p);
		if (status == IBV_WC_SUCCESS)
			wc.wc_flags |= IBV_WC_WITH_INV;
	}
	ib_cq_push(qp->rcq, &wc, pkt_se(p));
	qp->resp.have_rwqe = 0;
}

/*
 * Class B/C errors: NAK, then the QP goes to Error (IBA 9.9.3.1). UC has
 * no NAK: the message is dropped and the QP carries on.
 */
static void
resp_fatal(struct ib_qp *qp, struct ib_pkt *p, uint8_t syndrome)
{
	if (qp->ibv.qp_type == IBV_QPT_UC) {
		qp->resp.drop_msg = 1;
		qp->resp.last_op_mask = 0;
		return;
	}
	/*
	 * Responses leave in PSN order (IBA 9.7.5.1): READ responses and
	 * atomic ACKs still queued answer requests before this one, so the
	 * NAK goes behind them. Sent at once, it overtook them and the QP's
	 * flush dropped them: the requester saw the NAK with an earlier
	 * atomic unanswered and failed that one instead (test_random). The
	 * QP is in Error from now on (nothing more is taken in). The NAK
	 * waits beside the job ring, not in it: a full ring (as many
	 * requests outstanding as max_dest_rd_atomic allows, the usual way
	 * to exceed it) has no slot for it. It acknowledges an ACK held for
	 * an earlier PSN, as a response job does (job_push).
	 */
	if (qp->resp.rd_head != qp->resp.rd_tail) {
		qp->resp.nak_queued = 1;
		qp->resp.nak_syndrome = syndrome;
		qp->resp.nak_psn = p->psn;
		ack_covered(qp, p->psn);
		ib_engine_activate(qp);
		ib_qp_to_error(qp);
		return;
	}
	ib_send_ack(qp, syndrome, p->psn);
	ib_qp_to_error(qp);
}

/*
 * A duplicate READ or atomic at PSN P means the requester went back to P
 * and sends everything after it again (go-back-N): the queued responses
 * from P on will be asked for again and are dropped; those before P are
 * still owed. The queue holds ascending PSNs, so it is cut from the end.
 * (Dropping them all lost the answer to an earlier duplicate READ of the
 * same resent burst, every time: the requester ran out of retries.)
 */
static void
jobs_restart(struct ib_qp *qp, uint32_t psn)
{
	struct ib_resp *r = &qp->resp;

	while (r->rd_head != r->rd_tail &&
	       psn_diff(r->rd[(r->rd_head - 1) % IB_MAX_READ_JOBS].psn, psn) >= 0)
		r->rd_head--;
	if (r->rd_head - r->rd_tail >= IB_MAX_READ_JOBS)
		r->rd_tail++;		/* the oldest: asked for again later */
}

/* A duplicate (C9-104): re-ACK it; a READ is answered again. */
static void
resp_duplicate(struct ib_qp *qp, struct ib_pkt *p)
{
	if (p->mask & IB_M_READ) {
		const struct ib_reth *r = pkt_reth(p);
		struct ib_read_job *j;

		if (reth_len(r) > IB_MAX_MSG_SZ)
			return;
		if (reth_len(r) && ib_rkey_addr(qp, reth_rkey(r), reth_va(r),
						reth_len(r),
						IBV_ACCESS_REMOTE_READ) == NULL)
			return;
		jobs_restart(qp, p->psn);
		j = job_push(qp, p->psn);
		j->again = 1;
		j->va = reth_va(r);
		j->rkey = reth_rkey(r);
		j->length = reth_len(r);
		return;
	}
	if (p->mask & IB_M_ATOMIC) {
		struct ib_atomic_replay *r = NULL;
		struct ib_read_job *j;
		uint32_t i;

		/* Answer with the saved result, or not at all: an atomic is
		 * never executed twice.
		 */
		for (i = 0; i < IB_MAX_READ_JOBS; i++)
			if (qp->resp.replay[i].valid &&
			    qp->resp.replay[i].psn == p->psn)
				r = &qp->resp.replay[i];
		if (r == NULL)
			return;
		jobs_restart(qp, p->psn);
		j = job_push(qp, p->psn);
		j->again = 1;
		j->kind = IB_JOB_ATOMIC_ACK;
		j->orig = r->orig;
		return;
	}
	if (p->mask & IB_M_ATOMIC_WR) {
		struct ib_read_job *j;

		/* Executed once already: only the ACK is sent again. */
		jobs_restart(qp, p->psn);
		j = job_push(qp, p->psn);
		j->again = 1;
		j->kind = IB_JOB_ACK;
		return;
	}
	/* C9-104: acknowledge, but one ACK per burst for a run of them. */
	ack_coalesce(qp, (qp->resp.epsn - 1) & IB_PSN_MASK, 1);
}

/*
 * Take the next receive WQE from the QP's RQ or its SRQ into the responder
 * (the ring slot is free at once: an SRQ serves other QPs meanwhile).
 */
int
ib_resp_take_rwqe(struct ib_qp *qp)
{
	struct ib_recv_wqe *w;

	if (qp->srq != NULL) {
		if (ib_srq_take(qp->srq, &qp->resp.rwqe) != 0)
			return -ENOENT;
	} else {
		if (ib_queue_count(&qp->rq) == 0)
			return -ENOENT;
		w = rq_wqe(qp, qp->rq.cons);
		memcpy(&qp->resp.rwqe, w,
		       sizeof(*w) + w->num_sge * sizeof(struct ibv_sge));
		ib_queue_consume(&qp->rq, qp->rq.cons + 1);
	}
	qp->resp.have_rwqe = 1;
	return 0;
}

/*
 * QP 1 takes whole MADs (IBA 13.4.2: base version 1, 256 bytes on RoCE)
 * of the classes it has an agent for - the CM's alone, run by dpib's
 * librdmacm over this QP. Anything else is counted and dropped here, as
 * a MAD layer with no agent for it would (13.5.3.2 leaves the answer to
 * unsupported classes optional; rxe and mlx5 stay silent too).
 */
static int
gsi_mad_ok(struct ib_dev *dev, const struct ib_pkt *p)
{
	if (p->paylen < IB_MAD_LEN || p->payload[0] != 1) {
		ib_count(dev, IB_CNT_RX_BAD_MAD);
		return 0;
	}
	if (p->payload[1] != IB_MAD_CLASS_CM) {
		ib_count(dev, IB_CNT_RX_MAD_CLASS);
		return 0;
	}
	return 1;
}

/*
 * UD receive (IBA 9.8.5, verbs): Q_Key check, then the first 40 bytes of
 * the buffer take the GRH - over IPv6 the IPv6 header, over IPv4 the IPv4
 * header placed in its last 20 bytes (RoCEv2 A17.4.5.2) - and the payload
 * follows. The completion's sl says which (A17.4.5.1 wants the CQE to tell
 * IPv4 from IPv6), coded as mlx5 reports it: bit 3 for a UDP (RoCEv2)
 * frame, then 2 for IPv4 or 1 for IPv6. UCX's UD transport reads it to
 * find the destination address in the GRH area.
 */
static void
resp_ud(struct ib_qp *qp, struct ib_pkt *p)
{
	const struct ib_deth *deth = pkt_deth(p);
	uint8_t grh[40] = { 0 };
	struct ibv_wc wc = {
		.opcode = IBV_WC_RECV, .qp_num = qp->ibv.qp_num,
		.src_qp = rte_be_to_cpu_32(deth->sqp) & IB_QPN_MASK,
		.wc_flags = IBV_WC_GRH, .byte_len = 40 + p->paylen,
	};
	struct ib_recv_wqe *rw = &qp->resp.rwqe.w;

	if (rte_be_to_cpu_32(deth->qkey) != qp->attr.qkey) {
		ib_count(qp->dev, IB_CNT_RX_BAD_QKEY);	/* C10-15: silently */
		return;
	}
	if (qp->ibv.qp_num == IB_QPN_GSI && !gsi_mad_ok(qp->dev, p))
		return;
	if (ib_resp_take_rwqe(qp) != 0) {
		ib_count(qp->dev, IB_CNT_RX_NO_RWQE);	/* UD: dropped */
		return;
	}
	if ((p->ip[0] >> 4) == 6) {
		memcpy(grh, p->ip, 40);
		wc.sl = IB_WC_SL_ROCE_V2 | IB_WC_SL_IPV6;
	} else {
		memcpy(grh + 20, p->ip, 20);
		wc.sl = IB_WC_SL_ROCE_V2 | IB_WC_SL_IPV4;
	}
	qp->resp.cur.idx = qp->resp.cur.off = 0;
	wc.wr_id = rw->wr_id;
	if (40 + p->paylen > rw->length)
		wc.status = IBV_WC_LOC_LEN_ERR;
	else if (ib_sge_copy(qp->dev, qp->ibv.pd, rw->sge, rw->num_sge,
			     &qp->resp.cur, grh, 40, 1) != 0 ||
		 ib_sge_copy(qp->dev, qp->ibv.pd, rw->sge, rw->num_sge,
			     &qp->resp.cur, p->payload, p->paylen, 1) != 0)
		wc.status = IBV_WC_LOC_PROT_ERR;
	if (p->info->mask & IB_M_IMMDT) {
		wc.imm_data = pkt_immdt(p);
		wc.wc_flags |= IBV_WC_WITH_IMM;
	}
	qp->resp.have_rwqe = 0;
	ib_cq_push(qp->rcq, &wc, pkt_se(p));
}

/*
 * UC (IBA 9.8.2 - 9.8.3): no acknowledgements; a lost packet drops the
 * rest of its message, and the receive WQE stays for the next one.
 */
static int
uc_drop(struct ib_qp *qp, struct ib_pkt *p)
{
	if (p->psn != qp->resp.epsn) {
		ib_count(qp->dev, IB_CNT_RX_OUT_OF_SEQ);
		qp->resp.drop_msg = 1;
	}
	qp->resp.epsn = (p->psn + 1) & IB_PSN_MASK;
	if (p->mask & IB_M_FIRST) {
		qp->resp.drop_msg = 0;
		qp->resp.last_op_mask = 0;
		qp->resp.recv_off = 0;
		qp->resp.cur.idx = qp->resp.cur.off = 0;
	}
	return qp->resp.drop_msg;
}

void
ib_resp_rx(struct ib_qp *qp, struct ib_pkt *p)
{
	enum resp_state state = RESP_CHECK_PSN;
	int uc = qp->ibv.qp_type == IBV_QPT_UC;

	if (qp->ibv.qp_type == IBV_QPT_UD) {
		resp_ud(qp, p);
		return;
	}
	/* The first packet in RTR establishes the connection (verbs). */
	if (!qp->resp.comm_est && qp->attr.qp_state == IBV_QPS_RTR) {
		qp->resp.comm_est = 1;
		ib_async_event(qp->async, IBV_EVENT_COMM_EST, qp);
	}
	if (uc) {
		if (uc_drop(qp, p))
			return;
		/* The end of a WRITE, which no receive completion reports:
		 * what a poll of the send CQ waits for (ib_cq.c, cq_linger).
		 */
		if (ib_engine_inline && (p->opcode == IB_UC_WRITE_LAST ||
					 p->opcode == IB_UC_WRITE_ONLY)) {
			__atomic_store_n(&qp->scq->uc_rx_tsc, ib_qp_now(qp),
					 __ATOMIC_RELAXED);
			__atomic_store_n(&qp->scq->uc_rx, qp->scq->uc_rx + 1,
					 __ATOMIC_RELEASE);
		}
		qp->resp.epsn = p->psn;	/* the checks below expect it */
	}

	while (1) {
		IB_DP_LOG(DEBUG, "qp %u psn %u %s", qp->ibv.qp_num, p->psn,
			  resp_state_name[state]);
		switch (state) {
		case RESP_CHECK_PSN:
			state = check_psn(qp, p);
			break;
		case RESP_CHECK_OP_SEQ:
			state = check_op_seq(qp, p);
			break;
		case RESP_CHECK_RESOURCE:
			state = check_resource(qp, p);
			break;
		case RESP_CHECK_RKEY:
			state = check_rkey(qp, p);
			break;
		case RESP_EXECUTE:
			state = execute(qp, p);
			qp->resp.last_op_mask = (p->mask & IB_M_LAST) ? 0 :
				p->mask & (IB_M_SEND | IB_M_WRITE);
			if (state == RESP_ACKNOWLEDGE || state == RESP_COMPLETE ||
			    state == RESP_DONE)
				qp->resp.epsn = (qp->resp.epsn + 1) & IB_PSN_MASK;
			break;
		case RESP_COMPLETE:
			if ((p->mask & IB_M_IETH) && ib_mw_invalidate(qp,
			    pkt_ieth_rkey(p), 1) != 0) {
				state = RESP_ERR_INVALIDATE;
				break;
			}
			if (p->mask & IB_M_SEND)
				qp->resp.msn++;
			complete_recv(qp, p, IBV_WC_SUCCESS);
			state = RESP_ACKNOWLEDGE;
			break;
		case RESP_ACKNOWLEDGE:
			if (!uc && pkt_ackreq(p))
				ack_coalesce(qp, p->psn,
					     !!(p->mask & IB_M_LAST));
			return;
		case RESP_DUPLICATE:
			resp_duplicate(qp, p);
			return;
		case RESP_ERR_PSN_SEQ:
			qp->resp.nak_seq_sent = 1;
			ib_send_ack(qp, AETH_NAK_PSN_SEQ, qp->resp.epsn);
			return;
		case RESP_ERR_RNR:
			if (uc) {
				resp_fatal(qp, p, 0);	/* no WQE: dropped */
				return;
			}
			ib_send_ack(qp, AETH_RNR_NAK |
				    (qp->attr.min_rnr_timer & 0x1f), p->psn);
			return;
		case RESP_ERR_INVALID_REQ:
			resp_fatal(qp, p, AETH_NAK_INVALID);
			return;
		case RESP_ERR_REM_ACCESS:
			resp_fatal(qp, p, AETH_NAK_REM_ACCESS);
			return;
		case RESP_ERR_LENGTH:
			complete_recv(qp, p, IBV_WC_LOC_LEN_ERR);
			resp_fatal(qp, p, AETH_NAK_INVALID);
			return;
		case RESP_ERR_INVALIDATE:
			/* Class J: the data is placed, the rkey named is not a
			 * window this QP may invalidate.
			 */
			complete_recv(qp, p, IBV_WC_REM_INV_REQ_ERR);
			resp_fatal(qp, p, AETH_NAK_INVALID);
			return;
		case RESP_ERR_REM_OP:
			complete_recv(qp, p, IBV_WC_LOC_PROT_ERR);
			resp_fatal(qp, p, AETH_NAK_REM_OP);
			return;
		case RESP_DONE:
			return;
		}
	}
}

/* An atomic's response: ATOMIC ACKNOWLEDGE with the original value. */
static int
send_atomic_ack(struct ib_qp *qp, const struct ib_read_job *j)
{
	const struct ib_opcode_info *info = &ib_opcode[IB_RC_ATOMIC_ACKNOWLEDGE];
	rte_be64_t orig_be = rte_cpu_to_be_64(j->orig);
	uint8_t *bth, *pay;
	struct rte_mbuf *m;

	m = ib_pkt_alloc(qp, IB_RC_ATOMIC_ACKNOWLEDGE, 0, &bth, &pay);
	if (m == NULL)
		return -ENOBUFS;
	ib_pkt_bth(bth, IB_RC_ATOMIC_ACKNOWLEDGE, 0, qp->path.dest_qpn, 0,
		   j->psn);
	aeth_set((rte_be32_t *)(bth + info->offset[IB_HDR_AETH]),
		 AETH_ACK | AETH_CREDIT_INVALID, j->msn);
	memcpy(bth + info->offset[IB_HDR_ATMACK], &orig_be, 8);
	ib_tx(qp->dev, m);
	return 0;
}

/* The ACK of an ATOMIC WRITE, in its place among the responses. */
static int
send_job_ack(struct ib_qp *qp, const struct ib_read_job *j)
{
	uint8_t *bth, *pay;
	struct rte_mbuf *m;

	m = ib_pkt_alloc(qp, IB_RC_ACKNOWLEDGE, 0, &bth, &pay);
	if (m == NULL)
		return -ENOBUFS;
	ib_pkt_bth(bth, IB_RC_ACKNOWLEDGE, 0, qp->path.dest_qpn, 0, j->psn);
	aeth_set((rte_be32_t *)(bth + IB_BTH_LEN),
		 AETH_ACK | AETH_CREDIT_INVALID, j->msn);
	ib_tx(qp->dev, m);
	ib_count(qp->dev, IB_CNT_ACK_SENT);
	return 0;
}

/* One READ response packet of job @j (IBA 9.7.4.1.6); 1 if it was the last. */
static int
send_read_resp(struct ib_qp *qp, struct ib_read_job *j)
{
	uint32_t chunk = RTE_MIN(qp->path.mtu, j->length - j->offset);
	int first = j->offset == 0;
	int last = j->offset + chunk == j->length;
	uint8_t *bth, *pay, *src = NULL, op;
	struct ib_mr *mr = NULL;
	struct rte_mbuf *m;
	rte_iova_t iova;

	op = first && last ? IB_RC_READ_RESPONSE_ONLY :
	     first ? IB_RC_READ_RESPONSE_FIRST :
	     last ? IB_RC_READ_RESPONSE_LAST : IB_RC_READ_RESPONSE_MIDDLE;
	if (chunk) {
		/* The MR or window may have gone since the request was
		 * checked.
		 */
		src = ib_rkey_addr_mr(qp, j->rkey, j->va, j->length,
				      IBV_ACCESS_REMOTE_READ, &mr);
		if (src == NULL)
			return -EACCES;
	}
	/* Large responses go from the MR itself (ib_tx.c). */
	if (ib_zc_wanted(qp->dev, chunk) &&
	    ib_mr_iova(qp->dev, mr, src + j->offset, chunk, &iova) == 0)
		m = ib_pkt_alloc_zc(qp, op, src + j->offset, iova, chunk,
				    &mr->zc, 0, &bth);
	else
		m = ib_pkt_alloc(qp, op, chunk, &bth, &pay);
	if (m == NULL)
		return -ENOBUFS;
	ib_pkt_bth(bth, op, 0, qp->path.dest_qpn, 0, j->psn);
	if (ib_opcode[op].mask & IB_M_AETH)
		aeth_set((rte_be32_t *)(bth + IB_BTH_LEN),
			 AETH_ACK | AETH_CREDIT_INVALID, j->msn);
	if (chunk && m->next == NULL)
		rte_memcpy(pay, src + j->offset, chunk);
	ib_tx(qp->dev, m);
	j->offset += chunk;
	j->psn = (j->psn + 1) & IB_PSN_MASK;
	return last;
}

/* An owed ACK once the requester's MAC is known; 0 while it is not. */
static int
ack_owed_flush(struct ib_qp *qp)
{
	int ret = ib_hdr_resolve(qp->dev, &qp->path.hdr);

	if (ret == -EAGAIN)
		return 0;		/* still resolving: keep it */
	qp->resp.ack_owed = 0;
	if (ret == 0)
		send_ack(qp, qp->resp.owed_syndrome, qp->resp.owed_psn);
	return 1;			/* sent, or the address failed */
}

/* Send the queued READ and atomic responses, then any held-back ACK. */
void
ib_resp_run(struct ib_qp *qp)
{
	int budget = IB_REQ_BUDGET;

	/* An owed ACK answers a PSN before every queued response. */
	if (unlikely(qp->resp.ack_owed) && !ack_owed_flush(qp))
		return;

	while (qp->resp.rd_tail != qp->resp.rd_head && budget-- > 0 &&
	       ib_tx_room(qp->dev) > 0) {
		struct ib_read_job *j = &qp->resp.rd[qp->resp.rd_tail %
						     IB_MAX_READ_JOBS];
		int ret;

		/* ACKs are cumulative (IBA 9.7.5.1.1): of a run of ATOMIC
		 * WRITE ACKs only the last is sent.
		 */
		if (j->kind == IB_JOB_ACK &&
		    qp->resp.rd_head - qp->resp.rd_tail > 1 &&
		    qp->resp.rd[(qp->resp.rd_tail + 1) %
				IB_MAX_READ_JOBS].kind == IB_JOB_ACK) {
			qp->resp.rd_tail++;
			continue;
		}
		if (j->kind == IB_JOB_READ) {
			if (!ib_pace_ok(qp))
				return;		/* DCQCN: not due yet */
			ret = send_read_resp(qp, j);
		} else if (j->kind == IB_JOB_ATOMIC_ACK) {
			ret = send_atomic_ack(qp, j) ?: 1;
		} else {
			ret = send_job_ack(qp, j) ?: 1;
		}

		if (ret == -EACCES) {
			/* The QP fails here: nothing after this NAK. */
			qp->resp.rd_tail = qp->resp.rd_head;
			qp->resp.nak_queued = 0;
			ib_send_ack(qp, AETH_NAK_REM_ACCESS, j->psn);
			ib_qp_to_error(qp);
			return;
		}
		if (ret < 0)
			return;		/* no mbuf or no MAC yet: next pass */
		if (ret == 1)
			qp->resp.rd_tail++;
	}
	if (qp->resp.rd_tail != qp->resp.rd_head)
		return;
	if (unlikely(qp->resp.nak_queued)) {
		/* The owed responses are out: the fatal NAK last. */
		qp->resp.nak_queued = 0;
		ib_send_ack(qp, qp->resp.nak_syndrome, qp->resp.nak_psn);
	} else if (!ack_hold(qp)) {
		ack_flush(qp);
	}
}
