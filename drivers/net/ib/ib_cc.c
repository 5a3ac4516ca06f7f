/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Congestion window of an RC requester, in packets (PSNs) in flight.
 *
 * Go-back-N resends everything after a loss. Into a receiver or a switch
 * port that absorbs less than the sender emits, a full-speed rewind of a
 * whole window is mostly lost again, and the QP ends in RETRY_EXC_ERR on a
 * link that works. So the requester sends no more than cwnd PSNs past the
 * last one acknowledged: slow start (one more per packet acknowledged)
 * until ssthresh, then one more per window acknowledged (additive
 * increase); a sequence NAK halves the window, a transport timeout halves
 * ssthresh and starts again from the floor. The wire is unchanged (IBA
 * go-back-N): only how much is in flight changes. A READ counts the
 * response packets it asks for, so a burst of READ responses is bounded
 * too.
 */
#include "ib_hca.h"

/* A new connection starts at cwnd IB_CWND_INIT, slow start unbounded. */
void
ib_cc_init(struct ib_qp *qp)
{
	if (qp->ibv.qp_type != IBV_QPT_RC) {
		qp->cc.cwnd = IB_CWND_OFF;	/* nothing acknowledges */
		return;
	}
	qp->cc.cwnd = IB_CWND_INIT;
	qp->cc.ssthresh = IB_CWND_MAX;
	qp->cc.cwnd_acc = 0;
}

/* @n more PSNs were acknowledged. */
void
ib_cc_ack(struct ib_qp *qp, uint32_t n)
{
	struct ib_cc *r = &qp->cc;

	if (r->cwnd >= IB_CWND_MAX)
		return;
	if (r->cwnd < r->ssthresh) {
		r->cwnd = RTE_MIN(r->cwnd + n, (uint32_t)IB_CWND_MAX);
		return;
	}
	r->cwnd_acc += n;
	while (r->cwnd_acc >= r->cwnd && r->cwnd < IB_CWND_MAX) {
		r->cwnd_acc -= r->cwnd;
		r->cwnd++;
	}
}

/*
 * A loss: a sequence NAK (the peer saw a gap; what came after the gap may
 * be arriving) halves the window; a timeout (nothing came back for a
 * whole timer) goes back to the floor.
 */
void
ib_cc_loss(struct ib_qp *qp, int timeout)
{
	struct ib_cc *r = &qp->cc;
	uint32_t in_flight = (uint32_t)RTE_MAX(psn_diff(qp->req.max_psn,
					qp->comp.acked_psn) - 1, 0);
	uint32_t half = RTE_MAX(RTE_MIN(r->cwnd, in_flight) / 2,
				(uint32_t)IB_CWND_MIN);

	if (r->cwnd == IB_CWND_OFF)
		return;
	r->ssthresh = half;
	r->cwnd = timeout ? IB_CWND_MIN : half;
	r->cwnd_acc = 0;
	ib_count(qp->dev, timeout ? IB_CNT_CWND_TIMEOUT : IB_CNT_CWND_CUT);
}
