/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Completer (IBA 9.7.5.1 requester side of acknowledgements): retires send
 * WQEs in posting order as ACKs, READ responses and atomic ACKs arrive,
 * places READ and atomic results, reacts to NAKs and runs the retransmit
 * timer. The first failing WQE completes with its status, the QP goes to
 * Error and the rest flush (C10-91 ... C10-93).
 */
#include <string.h>
#include <rte_cycles.h>

#include "ib_hca.h"

static enum ibv_wc_opcode
wc_opcode(uint32_t wr_opcode)
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
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * The completer moved past WQEs that ended at @last_psn: their slots go
 * back to the poster, the requester follows if it had gone back before
 * them, and the per-message state and the transport timer start over for
 * the next WQE. Once per retired WQE, or once for a run of them
 * (comp_retire).
 */
static inline __attribute__((always_inline)) void
comp_advance(struct ib_qp *qp, uint32_t last_psn)
{
	ib_queue_consume(&qp->sq, qp->comp.wqe_idx);
	ib_req_follow(qp, last_psn);
	qp->comp.read_off = 0;
	qp->comp.read_gap = 0;
	qp->comp.cur.idx = qp->comp.cur.off = 0;
	qp->comp.retry_left = qp->attr.retry_cnt;
	if (!ib_sent_any(qp))
		qp->comp.deadline = 0;
	else if (qp->timeout_tsc)
		qp->comp.deadline = ib_qp_now(qp) + qp->timeout_tsc;
}

/*
 * Retire the WQE at the head of the SQ with @status. The slot is handed
 * back before the completion is visible: a program that posts again as
 * soon as it sees the completion must find the room.
 */
static void
comp_wqe(struct ib_qp *qp, enum ibv_wc_status status)
{
	struct ib_send_wqe *w = sq_wqe(qp, qp->comp.wqe_idx);
	struct ib_swqe_state *st = &qp->swqe[qp->comp.wqe_idx & qp->sq.mask];
	int report = status != IBV_WC_SUCCESS || (w->flags & IBV_SEND_SIGNALED);
	struct ibv_wc wc = {
		.wr_id = w->wr_id,
		.status = status,
		.opcode = wc_opcode(w->opcode),
		.byte_len = w->length,
		.qp_num = qp->ibv.qp_num,
	};

	ib_req_release_credit(qp, w, st);
	if (status == IBV_WC_SUCCESS)
		qp->comp.acked_psn = st->last_psn;
	qp->comp.wqe_idx++;
	comp_advance(qp, st->last_psn);
	if (report && ib_cq_push(qp->scq, &wc, 0) == 0 &&
	    qp->ibv.qp_type == IBV_QPT_UC && ib_engine_inline)
		__atomic_store_n(&qp->scq->uc_sent, qp->scq->q.prod,
				 __ATOMIC_RELAXED);	/* ib_cq_linger */
}

/*
 * C10-91: the failing WQE completes with @status, the rest flush; an RC QP
 * goes to Error, UC and UD only their send queue to SQE (IBA 10.3.1.6).
 * The new state is visible before the completion: a program that polls
 * the error and then queries the QP (ibv_query_qp) must find it, as it
 * does on rxe and mlx5, not the state before (test_mw saw RTS now and
 * then with an inline loop completing the bind).
 */
static void
comp_error(struct ib_qp *qp, enum ibv_wc_status status)
{
	int was;

	if (qp->ibv.qp_type == IBV_QPT_RC) {
		was = ib_qp_mark_error(qp);
		comp_wqe(qp, status);
		ib_qp_flush_error(qp, was);
	} else {
		ib_qp_mark_sqe(qp);
		comp_wqe(qp, status);
		ib_qp_flush_sq(qp);
	}
}

/*
 * The head READ or atomic lost its response from the one expected on (a
 * later response or ACK arrived): ask for it again now rather than at the
 * transport timer, once per loss - every later packet of the same burst
 * says the same thing, and rewinding for each resent the whole window
 * again and again.
 */
static void
response_lost(struct ib_qp *qp, struct ib_swqe_state *st)
{
	uint32_t expect = (st->first_psn + ib_mtus(qp, qp->comp.read_off)) &
			  IB_PSN_MASK;

	if (qp->comp.read_gap == expect + 1)
		return;
	qp->comp.read_gap = expect + 1;
	ib_count(qp->dev, IB_CNT_READ_GAP_RETRY);
	ib_cc_loss(qp, 0);	/* lost on the way back: congestion */
	ib_req_rewind(qp, st->first_psn);
}

/*
 * Retire every sent WQE up to PSN @psn (an ACK covers all before it,
 * IBA 9.7.5.1.1); READ and atomics need their responses. comp.acked_psn
 * only advances over what was retired, or into a partly acknowledged
 * message, so that a retransmission starts at the first unacknowledged PSN.
 */
/* WRITE, SEND and their variants: retired on an ACK, no credit held. */
#define COMP_PLAIN_OPS	(1u << IBV_WR_RDMA_WRITE | 1u << IBV_WR_RDMA_WRITE_WITH_IMM | \
			 1u << IBV_WR_SEND | 1u << IBV_WR_SEND_WITH_IMM | \
			 1u << IBV_WR_SEND_WITH_INV)

/*
 * Is the head WQE one an ACK up to @psn retires with nothing to report: a
 * plain one, whole on the wire and covered, successful, unsignaled, and
 * (UC) with no frame of its still held by the port.
 */
static inline int
comp_silent(const struct ib_qp *qp, const struct ib_swqe_state *st,
	    const struct ib_send_wqe *w, uint32_t psn)
{
	return !(w->flags & IBV_SEND_SIGNALED) && w->opcode < 32 &&
	       (COMP_PLAIN_OPS >> w->opcode & 1) &&
	       st->status == IBV_WC_SUCCESS &&
	       psn_diff(st->last_psn, psn) <= 0 &&
	       ib_sent_whole(qp, qp->comp.wqe_idx) &&
	       (qp->ibv.qp_type == IBV_QPT_RC ||
		!__atomic_load_n(&st->zc, __ATOMIC_ACQUIRE));
}

static void
comp_retire(struct ib_qp *qp, uint32_t psn)
{
	uint32_t quiet = 0, quiet_psn = 0;

	while (ib_sent_any(qp)) {
		struct ib_swqe_state *st =
			&qp->swqe[qp->comp.wqe_idx & qp->sq.mask];
		struct ib_send_wqe *w = sq_wqe(qp, qp->comp.wqe_idx);
		int done;

		/* A stream's WQEs are mostly unsignaled and an ACK covers
		 * many: those retire in a run, and what comp_wqe does
		 * after each is done once for the run, before anything
		 * else happens here (-70 instructions a 64 B WRITE,
		 * callgrind).
		 */
		if (comp_silent(qp, st, w, psn)) {
			quiet_psn = st->last_psn;
			qp->comp.wqe_idx++;
			quiet++;
			continue;
		}
		if (quiet != 0) {
			qp->comp.acked_psn = quiet_psn;
			comp_advance(qp, quiet_psn);
			quiet = 0;
			continue;	/* the state moved: look again */
		}
		done = ib_sent_whole(qp, qp->comp.wqe_idx);
		if (done && st->status != IBV_WC_SUCCESS) {
			comp_error(qp, st->status);
			return;
		}
		if (psn_diff(st->first_psn, psn) > 0)
			return;
		if (ib_wr_gets_data(w->opcode)) {
			/* Its responses come before any ACK past them: an
			 * ACK beyond means they were lost (IBA 9.7.5.1.2).
			 */
			if (done && psn_diff(psn, st->last_psn) > 0)
				response_lost(qp, st);
			return;
		}
		if (!done || psn_diff(st->last_psn, psn) > 0) {
			qp->comp.acked_psn = psn;	/* partly acknowledged */
			return;
		}
		/*
		 * UC completes on send: its buffers are the application's
		 * again only once the port let go of every frame that
		 * points into them. An RC ACK proves the data arrived; a
		 * frame the port still holds after it is at most a resent
		 * duplicate, which the responder discards whatever it
		 * carries (as with a hardware HCA).
		 */
		if (unlikely(qp->ibv.qp_type != IBV_QPT_RC &&
			     __atomic_load_n(&st->zc, __ATOMIC_ACQUIRE))) {
			qp->comp.acked_psn = psn;
			qp->comp.zc_wait = 1;
			return;
		}
		comp_wqe(qp, IBV_WC_SUCCESS);
	}
	if (quiet != 0) {
		qp->comp.acked_psn = quiet_psn;
		comp_advance(qp, quiet_psn);
	}
}

void
ib_comp_kick(struct ib_qp *qp)
{
	comp_retire(qp, qp->comp.acked_psn);
}

/* IBA table 45: the RNR NAK timer field in units of 10 microseconds. */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
	384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
	24576, 32768, 49152,
};

static void
comp_rnr(struct ib_qp *qp, uint8_t syndrome, uint32_t psn)
{
	uint64_t until;

	ib_count(qp->dev, IB_CNT_RNR_NAK_RCVD);
	if (qp->comp.rnr_left == 0) {
		comp_error(qp, IBV_WC_RNR_RETRY_EXC_ERR);
		return;
	}
	if (qp->attr.rnr_retry != 7)	/* 7 means retry forever */
		qp->comp.rnr_left--;
	until = rte_rdtsc() + rte_get_tsc_hz() / 100000 *
		rnr_timer_10us[syndrome & 0x1f];
	ib_req_wait(qp, until);
	/* The transport timer stands still while the requester waits, and
	 * runs again from the end of the wait: should nothing be resent
	 * then, it still fires.
	 */
	if (qp->timeout_tsc)
		qp->comp.deadline = until + qp->timeout_tsc;
	ib_req_rewind(qp, psn);
}

static void
comp_ack(struct ib_qp *qp, uint8_t syndrome, uint32_t psn)
{
	switch (syndrome & AETH_TYPE_MASK) {
	case AETH_ACK:
		comp_retire(qp, psn);
		return;
	case AETH_RNR_NAK:
		comp_retire(qp, psn - 1);
		if (ib_sent_any(qp))
			comp_rnr(qp, syndrome, psn);
		return;
	case AETH_NAK:
		break;
	default:
		return;		/* reserved syndromes are ignored */
	}
	ib_count(qp->dev, IB_CNT_NAK_RCVD);
	comp_retire(qp, psn - 1);
	if (!ib_sent_any(qp) && syndrome != AETH_NAK_PSN_SEQ)
		return;
	/*
	 * A fatal NAK for a later request while the head WQE, a READ or an
	 * atomic before it, still waits for its response: responses come in
	 * PSN order, so that response was lost on the way and the NAK is not
	 * the head's. Ask for it again, as for any lost response; the peer,
	 * in Error now, will not answer, and the timer then fails the head
	 * with RETRY_EXC_ERR. Failing the head with the NAK's status blamed
	 * the wrong WR (test_random behind a lossy port).
	 */
	if (syndrome != AETH_NAK_PSN_SEQ) {
		struct ib_swqe_state *st =
			&qp->swqe[qp->comp.wqe_idx & qp->sq.mask];

		if (psn_diff(st->last_psn, psn) < 0) {
			response_lost(qp, st);
			return;
		}
	}
	switch (syndrome) {
	case AETH_NAK_PSN_SEQ:
		if (unlikely(qp->dev->fault != NULL))
			ib_fault_nak_seq(qp->dev, qp->path.dest_qpn);
		ib_cc_loss(qp, 0);
		ib_req_rewind(qp, psn);
		break;
	case AETH_NAK_INVALID:
		comp_error(qp, IBV_WC_REM_INV_REQ_ERR);
		break;
	case AETH_NAK_REM_ACCESS:
		comp_error(qp, IBV_WC_REM_ACCESS_ERR);
		break;
	default:
		comp_error(qp, IBV_WC_REM_OP_ERR);
		break;
	}
}

/* Is the head WQE the READ/atomic that @psn answers, and in sequence? */
static struct ib_send_wqe *
comp_response_wqe(struct ib_qp *qp, uint32_t psn, int atomic)
{
	struct ib_swqe_state *st;
	struct ib_send_wqe *w;
	uint32_t expect;

	comp_retire(qp, psn - 1);
	if (!ib_sent_any(qp))
		return NULL;
	w = sq_wqe(qp, qp->comp.wqe_idx);
	st = &qp->swqe[qp->comp.wqe_idx & qp->sq.mask];
	if (atomic != (w->opcode != IBV_WR_RDMA_READ) || !ib_wr_gets_data(w->opcode))
		return NULL;
	expect = (st->first_psn + ib_mtus(qp, qp->comp.read_off)) & IB_PSN_MASK;
	if (psn == expect)
		return w;
	/*
	 * A later response of the same READ: the one expected was lost. Ask
	 * for the READ again now rather than at the transport timer (the
	 * responder answers a duplicate READ in full), once per gap.
	 */
	if (!atomic && psn_diff(psn, expect) > 0 &&
	    psn_diff(psn, st->last_psn) <= 0)
		response_lost(qp, st);
	return NULL;
}

static void
comp_read_resp(struct ib_qp *qp, const struct ib_pkt *p)
{
	struct ib_send_wqe *w = comp_response_wqe(qp, p->psn, 0);
	uint32_t paylen = p->paylen;

	if (w == NULL) {
		ib_count(qp->dev, IB_CNT_RX_STALE_RESP);
		return;
	}
	if ((p->mask & IB_M_FIRST) && qp->comp.read_off != 0) {
		qp->comp.read_off = 0;	/* the request was sent again */
		qp->comp.cur.idx = qp->comp.cur.off = 0;
	}
	/* Every response packet carries at most the path MTU, and all but
	 * the last exactly that.
	 */
	if (qp->comp.read_off + paylen > w->length || paylen > qp->path.mtu ||
	    (!(p->mask & IB_M_LAST) && paylen != qp->path.mtu)) {
		comp_error(qp, IBV_WC_BAD_RESP_ERR);
		return;
	}
	if (ib_sge_copy(qp->dev, qp->ibv.pd, w->sge, w->num_sge, &qp->comp.cur,
			p->payload, paylen, 1) != 0) {
		comp_error(qp, IBV_WC_LOC_PROT_ERR);
		return;
	}
	qp->comp.read_off += paylen;
	/* Forward progress (IBA 9.7.6.1.3): the retry count and the local
	 * ACK timer start over, and so does the early resend timer.
	 */
	qp->comp.retry_left = qp->attr.retry_cnt;
	if (qp->timeout_tsc)
		qp->comp.deadline = ib_qp_now(qp) + qp->timeout_tsc;
	ib_cc_progress(qp);
	if (!(p->mask & IB_M_LAST))
		return;
	if (qp->comp.read_off != w->length) {
		comp_error(qp, IBV_WC_BAD_RESP_ERR);
		return;
	}
	comp_wqe(qp, IBV_WC_SUCCESS);
	comp_retire(qp, p->psn);
}

static void
comp_atomic_ack(struct ib_qp *qp, const struct ib_pkt *p)
{
	struct ib_send_wqe *w = comp_response_wqe(qp, p->psn, 1);
	uint64_t orig;

	if (w == NULL) {
		ib_count(qp->dev, IB_CNT_RX_STALE_RESP);
		return;
	}
	orig = rte_be_to_cpu_64(pkt_atmack(p));
	if (ib_sge_copy(qp->dev, qp->ibv.pd, w->sge, w->num_sge, &qp->comp.cur,
			(uint8_t *)&orig, 8, 1) != 0) {
		comp_error(qp, IBV_WC_LOC_PROT_ERR);
		return;
	}
	comp_wqe(qp, IBV_WC_SUCCESS);
	comp_retire(qp, p->psn);
}

/*
 * Does a response at @psn answer something this QP sent? An acknowledgement
 * lies between the last PSN acknowledged (a repeated ACK of it is harmless)
 * and the last PSN ever sent; a NAK names a PSN not acknowledged yet. The
 * rest is ignored (IBA 9.7.5.1.x) and counted: older PSNs as stale (late
 * duplicates are normal on a lossy link), PSNs never sent as invalid. So an
 * off-path host that does not know where the PSNs are can neither complete
 * nor fail work, and no response completes what was never sent.
 */
static int
resp_psn_ok(struct ib_qp *qp, uint32_t psn, int nak)
{
	int32_t lo = psn_diff(psn, qp->comp.acked_psn);

	if (nak ? lo <= 0 : lo < 0) {
		ib_count(qp->dev, IB_CNT_RX_STALE_RESP);
		return 0;
	}
	if (psn_diff(psn, ib_req_max_psn(qp)) >= 0) {
		ib_count(qp->dev, IB_CNT_RX_RESP_BAD_PSN);
		return 0;
	}
	return 1;
}

static void
comp_rx(struct ib_qp *qp, const struct ib_pkt *p)
{
	uint32_t psn = p->psn;
	uint8_t syndrome = 0;

	if (!ib_sent_any(qp)) {
		ib_count(qp->dev, IB_CNT_RX_STALE_RESP);
		return;
	}
	if (p->mask & IB_M_AETH)
		syndrome = pkt_aeth_syndrome(p);
	if (!resp_psn_ok(qp, psn, (syndrome & AETH_TYPE_MASK) != AETH_ACK))
		return;
	if (p->mask & IB_M_AETH) {
		if ((syndrome & AETH_TYPE_MASK) != AETH_ACK) {
			comp_ack(qp, syndrome, psn);
			return;
		}
	}
	if (p->mask & IB_M_READ)
		comp_read_resp(qp, p);
	else if (p->mask & IB_M_ATOMIC)
		comp_atomic_ack(qp, p);
	else
		comp_ack(qp, syndrome, psn);
}

/*
 * Forward progress (IBA 9.7.6.1.3): an acknowledgement of anything not
 * acknowledged before restarts the transport timer and the retry count,
 * also where it covers only part of a message. Restarted only when a WQE
 * completed, a message that took longer than the timeout to get through
 * a busy link timed out mid-message again and again though its ACKs kept
 * coming, was sent again from there each time, and failed with
 * RETRY_EXC_ERR once it had done so retry_cnt times (perftest
 * ib_write_bw -s 1048576 -q 64 over veth at IB MTU 1024: 64 QPs sharing
 * the link, 0.3 s a message, 22511 expiries in 30 s). A deadline set
 * later (an RNR wait's end, a pacer's next slot) stands.
 */
static void
comp_progress(struct ib_qp *qp)
{
	uint64_t d;

	qp->comp.retry_left = qp->attr.retry_cnt;
	if (qp->comp.deadline == 0 || qp->timeout_tsc == 0)
		return;		/* nothing outstanding, or no timer */
	d = ib_qp_now(qp) + qp->timeout_tsc;
	if (d > qp->comp.deadline)
		qp->comp.deadline = d;
}

/* A response; what it acknowledged opens the congestion window. */
void
ib_comp_rx(struct ib_qp *qp, const struct ib_pkt *p)
{
	uint32_t acked = qp->comp.acked_psn;
	int32_t n;

	comp_rx(qp, p);
	n = psn_diff(qp->comp.acked_psn, acked);
	if (n > 0) {
		ib_cc_ack(qp, (uint32_t)n);
		comp_progress(qp);
	}
}

/*
 * A timer fired (the transport timer, or an early resend): everything
 * from the oldest unacknowledged PSN is asked for again, lost READ
 * responses included.
 */
void
ib_comp_go_back(struct ib_qp *qp)
{
	qp->comp.read_gap = 0;
	ib_req_rewind(qp, (qp->comp.acked_psn + 1) & IB_PSN_MASK);
}

/*
 * Local ACK timeout (IBA 9.7.6.1.3): resend from the oldest unacked PSN.
 * The timer runs whenever something sent is unacknowledged: a path that
 * left it idle with work outstanding would wait for a peer that may never
 * speak again (a responder that NAKed once ignores what is out of
 * sequence), so an idle timer with work outstanding is armed here.
 */
void
ib_comp_timer(struct ib_qp *qp, uint64_t now)
{
	if (qp->cc.early != 0)
		ib_cc_early(qp, now);
	if (unlikely(qp->comp.deadline == 0) && qp->timeout_tsc &&
	    ib_sent_any(qp) && qp->ibv.qp_type == IBV_QPT_RC) {
		qp->comp.deadline = now + qp->timeout_tsc;
		ib_count(qp->dev, IB_CNT_TIMER_REARMED);
	}
	if (qp->comp.deadline == 0 || now < qp->comp.deadline)
		return;
	if (!ib_sent_any(qp) &&
	    (qp->path.hdr.resolved || qp->comp.wqe_idx ==
	     __atomic_load_n(&qp->sq.prod, __ATOMIC_ACQUIRE))) {
		qp->comp.deadline = 0;
		return;
	}
	ib_count(qp->dev, IB_CNT_RETRANSMIT);
	if (qp->comp.retry_left == 0) {
		comp_error(qp, IBV_WC_RETRY_EXC_ERR);
		return;
	}
	qp->comp.retry_left--;
	qp->comp.deadline = now + qp->timeout_tsc;
	ib_cc_loss(qp, 1);
	ib_comp_go_back(qp);
}

/*
 * Can the QP make progress now, without a frame or a timer: WRs not sent
 * yet, responses or an ACK owed, a drain or a flush? A QP that is busy but
 * not runnable only waits (ib_engine.c's waiting list).
 */
int
ib_qp_runnable(const struct ib_qp *qp)
{
	int state = __atomic_load_n(&qp->attr.qp_state, __ATOMIC_ACQUIRE);
	uint32_t prod = __atomic_load_n(&qp->sq.prod, __ATOMIC_ACQUIRE);

	if (qp->resp.rd_head != qp->resp.rd_tail || qp->resp.ack_owed ||
	    qp->resp.ack_pending || qp->resp.nak_queued || qp->comp.zc_wait)
		return 1;
	switch (state) {
	case IBV_QPS_RTS:
		return ib_req_next(qp) != prod;
	case IBV_QPS_SQD:
		return !qp->sq_drained;
	case IBV_QPS_SQE:
	case IBV_QPS_ERR:
		return qp->comp.wqe_idx != prod;	/* to be flushed */
	default:
		return 0;
	}
}

/* Has the QP anything for the engine to do: now, or when ACKs come? */
int
ib_qp_busy(const struct ib_qp *qp)
{
	return ib_sent_any(qp) || ib_qp_runnable(qp);
}

/* The requester sent a packet: the transport timer runs, if it did not. */
void
ib_comp_arm(struct ib_qp *qp)
{
	if (qp->comp.deadline == 0 && qp->timeout_tsc)
		qp->comp.deadline = ib_qp_now(qp) + qp->timeout_tsc;
}

/*
 * UC and UD complete on send: what the requester sent up to @last_psn
 * counts as acknowledged, and the completer looks at it.
 */
void
ib_comp_sent(struct ib_qp *qp, uint32_t last_psn)
{
	qp->comp.acked_psn = last_psn;
	ib_comp_kick(qp);
}
