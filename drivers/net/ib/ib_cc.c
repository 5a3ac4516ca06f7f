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
 *
 * Early resend. The transport timer (qp_attr.timeout, 67 ms at the usual
 * 14) is what IBA counts retries by, and on a lossy link a lost NAK, a
 * lost first resend after a NAK (the peer then ignores everything until
 * it comes) or the lost tail of a burst leave the requester waiting for
 * it, idle, many thousand round trips long. As HCAs with adaptive
 * retransmission do, the requester also keeps an estimate of the round
 * trip (one sample at a time, smoothed like TCP's) and goes back to the
 * oldest unacknowledged PSN when nothing was acknowledged for
 * srtt + 4 rttvar (at least IB_RTO_MIN_US), backing off exponentially.
 * These early resends do not use up retry_cnt: only the transport timer
 * does. They start once the path has lost a packet (a NAK, a timeout, a
 * lost READ response): on a clean path a descheduled engine or peer would
 * only make them spurious. A responder takes a resent request as a
 * duplicate (acknowledged again, READs answered again, atomics never
 * executed twice).
 */
#include <rte_cycles.h>

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
	qp->cc.probe_tsc = 0;
	qp->cc.srtt = qp->cc.rttvar = 0;
	qp->cc.early = 0;
	qp->cc.backoff = 0;
	qp->cc.lossy = 0;
	qp->cc.armed = 0;
	qp->cc.recover_set = 0;
	qp->cc.rto_min = rte_get_tsc_hz() / 1000000 * IB_RTO_MIN_US;
}

/* The early resend timeout: srtt + 4 rttvar, backed off, 0 for none. */
static uint64_t
rto(const struct ib_qp *qp)
{
	uint64_t t = RTE_MAX(qp->cc.srtt + 4 * qp->cc.rttvar, qp->cc.rto_min);

	if (qp->cc.srtt == 0 || !qp->cc.lossy)
		return 0;		/* no sample yet, or no loss seen */
	t <<= RTE_MIN(qp->cc.backoff, 16u);
	/* Not worth it when it would not come before the real timer. */
	return qp->timeout_tsc == 0 || t < qp->timeout_tsc / 2 ? t : 0;
}

/*
 * A packet left (called while !armed): start an RTT sample if none runs,
 * arm the early timer if it applies. Then nothing is left to do per
 * packet until a sample ends, the timer changes, or a loss is seen (each
 * clears armed).
 */
void
ib_cc_sent(struct ib_qp *qp)
{
	uint64_t now = ib_qp_now(qp), t;

	if (qp->cc.probe_tsc == 0) {
		qp->cc.probe_psn = qp->req.psn;
		qp->cc.probe_tsc = now;
	}
	if (qp->cc.early == 0 && (t = rto(qp)) != 0)
		qp->cc.early = now + t;
	qp->cc.armed = 1;
}

/* The sample's PSN was acknowledged: fold it into srtt and rttvar. */
static void
rtt_sample(struct ib_qp *qp, uint64_t now)
{
	struct ib_cc *c = &qp->cc;
	uint64_t m = now - c->probe_tsc;
	uint64_t d = m > c->srtt ? m - c->srtt : c->srtt - m;

	if (c->srtt == 0) {
		c->srtt = m;
		c->rttvar = m / 2;
	} else {
		c->rttvar = (3 * c->rttvar + d) / 4;
		c->srtt = (7 * c->srtt + m) / 8;
	}
	c->probe_tsc = 0;
	c->armed = 0;
	if (qp->sh != NULL)
		qp->sh->rtt_hint = c->srtt;
}

/* Progress: the early timer starts over, without back-off. */
static void
early_restart(struct ib_qp *qp, uint64_t now)
{
	struct ib_cc *c = &qp->cc;
	uint64_t t;

	c->backoff = 0;
	c->early = ib_sent_any(qp) && (t = rto(qp)) != 0 ? now + t : 0;
	if (c->early == 0)
		c->armed = 0;
}

/* @n more PSNs were acknowledged. */
void
ib_cc_ack(struct ib_qp *qp, uint32_t n)
{
	struct ib_cc *r = &qp->cc;
	uint64_t now = ib_qp_now(qp);

	if (r->probe_tsc != 0 &&
	    psn_diff(ib_comp_acked(qp), r->probe_psn) >= 0)
		rtt_sample(qp, now);
	early_restart(qp, now);
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
					ib_comp_acked(qp)) - 1, 0);
	uint32_t half = RTE_MAX(RTE_MIN(r->cwnd, in_flight) / 2,
				(uint32_t)IB_CWND_MIN);

	if (r->cwnd == IB_CWND_OFF)
		return;
	r->lossy = 1;
	r->probe_tsc = 0;	/* a resent PSN would time the wrong packet */
	r->armed = 0;
	/*
	 * One cut per loss episode: losses of what was already in flight
	 * when the window was cut (until that is acknowledged) say nothing
	 * new about the path. A timeout always cuts.
	 */
	if (!timeout && r->recover_set &&
	    psn_diff(ib_comp_acked(qp), r->recover) < 0)
		return;
	r->recover = qp->req.max_psn;
	r->recover_set = 1;
	r->ssthresh = half;
	r->cwnd = timeout ? IB_CWND_MIN : half;
	r->cwnd_acc = 0;
	ib_count(qp->dev, timeout ? IB_CNT_CWND_TIMEOUT : IB_CNT_CWND_CUT);
}

/*
 * Engine, per pass: nothing acknowledged for the early timeout? Go back
 * to the oldest unacknowledged PSN, as the transport timer would.
 */
void
ib_cc_early(struct ib_qp *qp, uint64_t now)
{
	struct ib_cc *c = &qp->cc;
	uint64_t t;

	if (c->early == 0 || now < c->early)
		return;
	c->early = 0;
	c->armed = 0;
	if (!ib_sent_any(qp) || qp->req.wait_until != 0)
		return;
	ib_count(qp->dev, IB_CNT_EARLY_RESEND);
	ib_cc_loss(qp, 0);
	c->backoff++;
	if ((t = rto(qp)) != 0)
		c->early = now + t;
	ib_comp_go_back(qp);
}

/* Responses arrive (READ data, which acknowledges nothing until the end). */
void
ib_cc_progress(struct ib_qp *qp)
{
	if (qp->cc.early != 0)
		early_restart(qp, ib_qp_now(qp));
}
