/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Queue pairs: creation, the state machine of IBA 10.3.1 driven by the
 * attribute-mask table below, query and destruction. Every change of
 * transport state runs on the engine lcore (ib_engine_exec), which owns it.
 */
#include <errno.h>
#include <string.h>
#include <rte_malloc.h>
#include <rte_cycles.h>

#include "ib_hca.h"

enum { QPT_RC, QPT_UC, QPT_UD, QPT_NUM };

struct qp_transition {
	uint8_t valid;
	uint32_t req[QPT_NUM];
	uint32_t opt[QPT_NUM];
};

#define RTS_OPT_RC (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | \
		    IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER)
#define RTS_OPT_UC (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | \
		    IBV_QP_PATH_MIG_STATE)
#define RTS_OPT_UD (IBV_QP_CUR_STATE | IBV_QP_QKEY)

/*
 * Required and optional attributes of each transition: the verbs QP state
 * document's table 1 (IBA table 91 as Linux implements it). IBV_QP_STATE is
 * always allowed. Any state may go to Reset or Error with no attribute.
 */
static const struct qp_transition qp_table[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_INIT] = { 1,
			.req = {
				[QPT_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS,
				[QPT_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS,
				[QPT_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_INIT] = { 1,
			.opt = {
				[QPT_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS,
				[QPT_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS,
				[QPT_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_QKEY,
			},
		},
		[IBV_QPS_RTR] = { 1,
			.req = {
				[QPT_RC] = IBV_QP_AV | IBV_QP_PATH_MTU |
					   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					   IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER,
				[QPT_UC] = IBV_QP_AV | IBV_QP_PATH_MTU |
					   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
			},
			.opt = {
				[QPT_RC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					   IBV_QP_PKEY_INDEX,
				[QPT_UC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					   IBV_QP_PKEY_INDEX,
				[QPT_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RTS] = { 1,
			.req = {
				[QPT_RC] = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					   IBV_QP_MAX_QP_RD_ATOMIC,
				[QPT_UC] = IBV_QP_SQ_PSN,
				[QPT_UD] = IBV_QP_SQ_PSN,
			},
			.opt = {
				[QPT_RC] = RTS_OPT_RC,
				[QPT_UC] = RTS_OPT_UC,
				[QPT_UD] = RTS_OPT_UD,
			},
		},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RTS] = { 1,
			.opt = {
				[QPT_RC] = RTS_OPT_RC,
				[QPT_UC] = RTS_OPT_UC,
				[QPT_UD] = RTS_OPT_UD,
			},
		},
		[IBV_QPS_SQD] = { 1,
			.opt = {
				[QPT_RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[QPT_UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[QPT_UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
			},
		},
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RTS] = { 1,
			.opt = {
				[QPT_RC] = RTS_OPT_RC,
				[QPT_UC] = RTS_OPT_UC,
				[QPT_UD] = RTS_OPT_UD,
			},
		},
		[IBV_QPS_SQD] = { 1,
			.opt = {
				[QPT_RC] = IBV_QP_PKEY_INDEX | IBV_QP_AV |
					   IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					   IBV_QP_PATH_MIG_STATE | IBV_QP_PORT |
					   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					   IBV_QP_RNR_RETRY |
					   IBV_QP_MAX_QP_RD_ATOMIC |
					   IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER,
				[QPT_UC] = IBV_QP_PKEY_INDEX | IBV_QP_AV |
					   IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					   IBV_QP_PATH_MIG_STATE,
				[QPT_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RTS] = { 1,
			.opt = {
				[QPT_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
				[QPT_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			},
		},
	},
};

static int
qpt_index(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:
		return QPT_RC;
	case IBV_QPT_UC:
		return QPT_UC;
	case IBV_QPT_UD:
		return QPT_UD;
	default:
		return -1;
	}
}

/* Is @mask a legal attribute set for cur -> next on this QP type? */
int
ib_qp_mask_ok(enum ibv_qp_type type, enum ibv_qp_state cur,
	      enum ibv_qp_state next, int mask)
{
	const struct qp_transition *t;
	int qpt = qpt_index(type);

	if (qpt < 0 || cur > IBV_QPS_ERR || next > IBV_QPS_ERR)
		return 0;
	mask &= ~IBV_QP_STATE;
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return mask == 0 || mask == IBV_QP_CUR_STATE;
	t = &qp_table[cur][next];
	if (!t->valid)
		return 0;
	if ((mask & t->req[qpt]) != t->req[qpt])
		return 0;
	return (mask & ~(t->req[qpt] | t->opt[qpt])) == 0;
}

static uint32_t
mtu_bytes(enum ibv_mtu mtu)
{
	return 128u << mtu;
}

/*
 * A QP with the next free number, or with number @qpn when it is not 0:
 * only QP 1 (the GSI, a UD QP with its well-known Q_Key; EBUSY when it
 * exists) is made that way.
 */
int
ib_qp_create(struct ib_dev *dev, struct ibv_pd *pd,
	     struct ibv_qp_init_attr *init, uint32_t qpn, struct ib_qp **out)
{
	struct ibv_qp_cap *cap = &init->cap;
	uint32_t sstride, rstride, i;
	struct ib_qp *qp;
	int err;

	if (qpn != 0 && (qpn != IB_QPN_GSI || init->qp_type != IBV_QPT_UD))
		return EINVAL;
	if (qpt_index(init->qp_type) < 0)
		return EOPNOTSUPP;	/* XRC, raw packet, driver QPs */
	if (init->send_cq == NULL || init->recv_cq == NULL)
		return EINVAL;
	if (cap->max_send_wr > IB_MAX_QP_WR || cap->max_recv_wr > IB_MAX_QP_WR ||
	    cap->max_send_sge > IB_MAX_SGE || cap->max_recv_sge > IB_MAX_SGE ||
	    cap->max_inline_data > IB_MAX_INLINE)
		return EINVAL;

	qp = rte_zmalloc("ib_qp", sizeof(*qp), RTE_CACHE_LINE_SIZE);
	if (qp == NULL)
		return ENOMEM;
	qp->max_send_sge = RTE_MAX(cap->max_send_sge, 1u);
	qp->max_recv_sge = RTE_MAX(cap->max_recv_sge, 1u);
	sstride = RTE_ALIGN_CEIL(sizeof(struct ib_send_wqe) +
		RTE_MAX(qp->max_send_sge * sizeof(struct ibv_sge),
			(size_t)cap->max_inline_data), 64);
	qp->max_inline = sstride - sizeof(struct ib_send_wqe);
	if (init->qp_type == IBV_QPT_UD) {
		qp->av_off = sstride;
		sstride = RTE_ALIGN_CEIL(sstride + sizeof(struct ib_encap), 64);
	}
	rstride = RTE_ALIGN_CEIL(sizeof(struct ib_recv_wqe) +
		qp->max_recv_sge * sizeof(struct ibv_sge), 64);
	err = ENOMEM;
	if (ib_queue_init(&qp->sq, RTE_MAX(cap->max_send_wr, 1u), sstride,
			  SOCKET_ID_ANY) != 0)
		goto free_qp;
	if (ib_queue_init(&qp->rq, RTE_MAX(cap->max_recv_wr, 1u), rstride,
			  SOCKET_ID_ANY) != 0)
		goto free_sq;
	qp->swqe = rte_zmalloc("ib_swqe", qp->sq.size * sizeof(*qp->swqe), 0);
	if (qp->swqe == NULL)
		goto free_rq;

	qp->dev = dev;
	qp->scq = to_cq(init->send_cq);
	qp->rcq = to_cq(init->recv_cq);
	qp->srq = init->srq != NULL ? to_srq(init->srq) : NULL;
	qp->path.mtu = mtu_bytes(dev->active_mtu);
	qp->sq_sig_all = init->sq_sig_all;
	rte_spinlock_init(&qp->sq_lock);
	rte_spinlock_init(&qp->rq_lock);
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.path_mtu = dev->active_mtu;
	qp->cap.max_send_wr = qp->sq.size;
	qp->cap.max_recv_wr = qp->rq.size;
	qp->cap.max_send_sge = qp->max_send_sge;
	qp->cap.max_recv_sge = qp->max_recv_sge;
	qp->cap.max_inline_data = qp->max_inline;
	*cap = qp->cap;

	/* The engines run from the device's first QP on. */
	err = ib_engine_attach(dev);
	if (err)
		goto free_swqe;
	err = ENOMEM;
	rte_spinlock_lock(&dev->ctl_lock);
	if (qpn == IB_QPN_GSI) {
		if (dev->qp_tbl[qpn] != NULL) {
			rte_spinlock_unlock(&dev->ctl_lock);
			err = EBUSY;
			goto free_swqe;
		}
		qp->attr.qkey = IB_GSI_QKEY;
	} else {
		for (i = 0; i < IB_MAX_QP - IB_QPN_BASE; i++) {
			qpn = IB_QPN_BASE +
			      (dev->next_qpn + i) % (IB_MAX_QP - IB_QPN_BASE);
			if (dev->qp_tbl[qpn] == NULL)
				break;
		}
		if (i == IB_MAX_QP - IB_QPN_BASE) {
			rte_spinlock_unlock(&dev->ctl_lock);
			goto free_swqe;
		}
		dev->next_qpn = qpn - IB_QPN_BASE + 1;
	}
	qp->ibv.qp_num = qpn;
	qp->udp_sport = ib_udp_sport(qpn);
	ib_engine_place(qp);
	__atomic_store_n(&dev->qp_tbl[qpn], qp, __ATOMIC_RELEASE);
	dev->nqp++;
	rte_spinlock_unlock(&dev->ctl_lock);
	*out = qp;
	return 0;

free_swqe:
	rte_free(qp->swqe);
free_rq:
	ib_queue_free(&qp->rq);
free_sq:
	ib_queue_free(&qp->sq);
free_qp:
	rte_free(qp);
	return err;
}

static void
complete_flush(struct ib_cq *cq, struct ib_qp *qp, uint64_t wr_id, int recv)
{
	struct ibv_wc wc = {
		.wr_id = wr_id,
		.status = IBV_WC_WR_FLUSH_ERR,
		.opcode = recv ? IBV_WC_RECV : IBV_WC_SEND,
		.qp_num = qp->ibv.qp_num,
	};

	ib_cq_push(cq, &wc, 0);
}

/*
 * Error state (IBA 10.3.1.4, C10-27): every WR still in the SQ and RQ
 * completes with IBV_WC_WR_FLUSH_ERR, whether signaled or not. Engine only;
 * called again whenever WRs are posted while in Error.
 */
void
ib_qp_flush(struct ib_qp *qp)
{
	uint32_t prod;

	prod = __atomic_load_n(&qp->sq.prod, __ATOMIC_ACQUIRE);
	while (qp->comp.wqe_idx != prod) {
		complete_flush(qp->scq, qp, sq_wqe(qp, qp->comp.wqe_idx)->wr_id, 0);
		qp->comp.wqe_idx++;
	}
	qp->req.wqe_idx = qp->req.hw_idx = prod;
	qp->req.offset = 0;
	qp->req.rd_atomic = 0;
	ib_queue_consume(&qp->sq, prod);

	if (qp->resp.have_rwqe)
		complete_flush(qp->rcq, qp, qp->resp.rwqe.w.wr_id, 1);
	qp->resp.have_rwqe = 0;
	/* Responses owed before a queued fatal NAK still leave, in PSN
	 * order, then the NAK (ib_resp.c's resp_fatal).
	 */
	if (!qp->resp.nak_queued)
		qp->resp.rd_head = qp->resp.rd_tail = 0;
	qp->comp.deadline = 0;
	if (qp->srq != NULL)
		return;		/* the SRQ's WQEs belong to the other QPs too */
	prod = __atomic_load_n(&qp->rq.prod, __ATOMIC_ACQUIRE);
	while (qp->rq.cons != prod) {
		complete_flush(qp->rcq, qp, rq_wqe(qp, qp->rq.cons)->wr_id, 1);
		ib_queue_consume(&qp->rq, qp->rq.cons + 1);
	}
}

/* Send side only: what UC and UD send errors lead to (IBA 10.3.1.6). */
void
ib_qp_flush_sq(struct ib_qp *qp)
{
	uint32_t prod = __atomic_load_n(&qp->sq.prod, __ATOMIC_ACQUIRE);

	while (qp->comp.wqe_idx != prod) {
		complete_flush(qp->scq, qp, sq_wqe(qp, qp->comp.wqe_idx)->wr_id, 0);
		qp->comp.wqe_idx++;
	}
	qp->req.wqe_idx = qp->req.hw_idx = prod;
	qp->req.offset = 0;
	ib_queue_consume(&qp->sq, prod);
}

/* As ib_qp_mark_error / ib_qp_flush_error, for the send queue only. */
void
ib_qp_mark_sqe(struct ib_qp *qp)
{
	__atomic_store_n(&qp->attr.qp_state, IBV_QPS_SQE, __ATOMIC_RELEASE);
}

void
ib_qp_to_sqe(struct ib_qp *qp)
{
	ib_qp_mark_sqe(qp);
	ib_qp_flush_sq(qp);
}

/*
 * Error, in two steps for a completion error (ib_comp.c): the state, which
 * ibv_query_qp reads, before the failing WQE's completion, as hardware
 * does it (a program that polls the error and then queries the QP finds
 * it in Error), then the flush after it. @was: the state before.
 */
int
ib_qp_mark_error(struct ib_qp *qp)
{
	int was = qp->attr.qp_state;

	__atomic_store_n(&qp->attr.qp_state, IBV_QPS_ERR, __ATOMIC_RELEASE);
	return was;
}

void
ib_qp_flush_error(struct ib_qp *qp, int was)
{
	ib_qp_flush(qp);
	/* C11-5.2.2: an SRQ-attached QP reports its last WQE. */
	if (qp->srq != NULL && was != IBV_QPS_ERR)
		ib_async_event(qp->async, IBV_EVENT_QP_LAST_WQE_REACHED, qp);
}

void
ib_qp_to_error(struct ib_qp *qp)
{
	ib_qp_flush_error(qp, ib_qp_mark_error(qp));
}

/* Reset (IBA 10.3.1.1): WRs are dropped without completions. */
static void
qp_reset(struct ib_qp *qp)
{
	uint32_t prod;

	prod = __atomic_load_n(&qp->sq.prod, __ATOMIC_ACQUIRE);
	ib_queue_consume(&qp->sq, prod);
	prod = __atomic_load_n(&qp->rq.prod, __ATOMIC_ACQUIRE);
	ib_queue_consume(&qp->rq, prod);
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	memset(&qp->resp, 0, sizeof(qp->resp));
	qp->req.wqe_idx = qp->req.hw_idx = qp->comp.wqe_idx = prod =
		qp->sq.cons;
	qp->sq_drained = 0;
}

struct qp_modify {
	struct ib_qp *qp;
	struct ibv_qp_attr attr;
	int mask;
	struct ib_encap hdr;
};

static uint64_t
timeout_to_tsc(uint8_t timeout)
{
	/* IBA 9.7.6.1.3: 4.096 us * 2^timeout; 0 means infinite. */
	if (timeout == 0)
		return 0;
	return (uint64_t)(4.096e-6 * (double)(1ull << timeout) *
			  (double)rte_get_tsc_hz());
}

/* Runs on the engine: apply a validated modify. */
static void
qp_modify_apply(void *arg)
{
	struct qp_modify *m = arg;
	struct ib_qp *qp = m->qp;
	struct ibv_qp_attr *a = &m->attr;
	int mask = m->mask;
	int next = (mask & IBV_QP_STATE) ? a->qp_state : qp->attr.qp_state;

	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		qp->attr.port_num = a->port_num;
	/* QP 1 keeps the GSI Q_Key whatever it is given (IBA 13.5.1). */
	if ((mask & IBV_QP_QKEY) && qp->ibv.qp_num != IB_QPN_GSI)
		qp->attr.qkey = a->qkey;
	if (mask & IBV_QP_AV) {
		qp->attr.ah_attr = a->ah_attr;
		qp->path.hdr = m->hdr;
	}
	if (mask & IBV_QP_PATH_MTU) {
		qp->attr.path_mtu = a->path_mtu;
		qp->path.mtu = mtu_bytes(RTE_MIN(a->path_mtu,
						 qp->dev->active_mtu));
	}
	if (mask & IBV_QP_DEST_QPN) {
		qp->attr.dest_qp_num = a->dest_qp_num & IB_QPN_MASK;
		qp->path.dest_qpn = qp->attr.dest_qp_num;
	}
	if (mask & IBV_QP_RQ_PSN) {
		qp->attr.rq_psn = a->rq_psn & IB_PSN_MASK;
		qp->resp.epsn = qp->attr.rq_psn;
	}
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_SQ_PSN) {
		qp->attr.sq_psn = a->sq_psn & IB_PSN_MASK;
		qp->req.psn = qp->attr.sq_psn;
		qp->req.max_psn = qp->attr.sq_psn;
		ib_cc_init(qp);
		ib_dcqcn_qp_init(qp);
		/* Nothing is acknowledged yet: the last PSN before the first. */
		qp->comp.acked_psn = (qp->attr.sq_psn - 1) & IB_PSN_MASK;
	}
	if (mask & IBV_QP_TIMEOUT) {
		qp->attr.timeout = a->timeout;
		qp->timeout_tsc = timeout_to_tsc(a->timeout);
	}
	if (mask & IBV_QP_RETRY_CNT) {
		qp->attr.retry_cnt = a->retry_cnt;
		qp->comp.retry_left = a->retry_cnt;
	}
	if (mask & IBV_QP_RNR_RETRY) {
		qp->attr.rnr_retry = a->rnr_retry;
		qp->comp.rnr_left = a->rnr_retry;
	}
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		qp->attr.en_sqd_async_notify = a->en_sqd_async_notify;

	if (next == IBV_QPS_RESET)
		qp_reset(qp);
	if (next == IBV_QPS_SQD && qp->attr.qp_state != IBV_QPS_SQD)
		qp->sq_drained = 0;
	if (next == IBV_QPS_ERR)
		ib_qp_to_error(qp);
	else
		__atomic_store_n(&qp->attr.qp_state, next, __ATOMIC_RELEASE);
	if (next == IBV_QPS_RTS || next == IBV_QPS_ERR || next == IBV_QPS_SQD)
		ib_engine_activate(qp);
	/*
	 * A connected QP learns its peer's MAC now (ARP/ND), as the kernel
	 * resolves the destination of hardware RoCE at modify time: the
	 * answer to the peer's first request must not wait for it.
	 */
	if ((mask & IBV_QP_AV) && qp->ibv.qp_type != IBV_QPT_UD &&
	    next != IBV_QPS_RESET && next != IBV_QPS_ERR)
		(void)ib_hdr_resolve(qp->dev, &qp->path.hdr);
}

static int
qp_attr_values_ok(struct ib_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return 0;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return 0;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return 0;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return 0;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return 0;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return 0;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return 0;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	    a->max_rd_atomic > IB_MAX_RD_ATOMIC)
		return 0;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > IB_MAX_RD_ATOMIC)
		return 0;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC)))
		return 0;
	if ((mask & IBV_QP_AV) && a->ah_attr.port_num != 0 &&
	    a->ah_attr.port_num != 1)
		return 0;
	if ((mask & IBV_QP_CAP))
		return 0;	/* resizing the queues is not supported */
	return 1;
}

int
ib_qp_modify(struct ib_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct qp_modify m = { .qp = qp, .attr = *attr, .mask = mask };
	enum ibv_qp_state cur = __atomic_load_n(&qp->attr.qp_state,
						__ATOMIC_ACQUIRE);
	enum ibv_qp_state next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	int err;

	if (mask & IBV_QP_CUR_STATE) {
		if (attr->cur_qp_state != cur)
			return EINVAL;
	}
	if (!ib_qp_mask_ok(qp->ibv.qp_type, cur, next, mask))
		return EINVAL;
	if (!qp_attr_values_ok(qp, attr, mask))
		return EINVAL;
	if (mask & IBV_QP_AV) {
		err = ib_path_set(qp->dev, qp->ibv.qp_num, &attr->ah_attr,
				  &m.hdr);
		if (err)
			return err;
	}
	err = ib_engine_exec(qp->dev, qp_modify_apply, &m);
	if (err)
		return err;
	if (next == IBV_QPS_RESET) {
		ib_cq_purge_qp(qp->scq, qp->ibv.qp_num);
		if (qp->rcq != qp->scq)
			ib_cq_purge_qp(qp->rcq, qp->ibv.qp_num);
	}
	qp->ibv.state = next;
	return 0;
}

int
ib_qp_query(struct ib_qp *qp, struct ibv_qp_attr *attr, int mask,
	    struct ibv_qp_init_attr *init)
{
	*attr = qp->attr;
	attr->qp_state = __atomic_load_n(&qp->attr.qp_state, __ATOMIC_ACQUIRE);
	attr->cur_qp_state = attr->qp_state;
	attr->cap = qp->cap;
	if (init != NULL) {
		memset(init, 0, sizeof(*init));
		init->qp_context = qp->ibv.qp_context;
		init->send_cq = qp->ibv.send_cq;
		init->recv_cq = qp->ibv.recv_cq;
		init->srq = qp->ibv.srq;
		init->cap = qp->cap;
		init->qp_type = qp->ibv.qp_type;
		init->sq_sig_all = qp->sq_sig_all;
	}
	return 0;
}

static void
qp_unpublish(void *arg)
{
	struct ib_qp *qp = arg;
	struct ib_dev *dev = qp->dev;

	ib_resp_ack_now(qp);
	__atomic_store_n(&dev->qp_tbl[qp->ibv.qp_num], NULL, __ATOMIC_RELEASE);
	ib_mcast_forget_qp(qp);
	ib_mw_forget_qp(qp);
	ib_engine_forget(qp);
}

/* Step 1 of destruction: after it the engine never touches the QP. */
int
ib_qp_unpublish(struct ib_qp *qp)
{
	return ib_engine_exec(qp->dev, qp_unpublish, qp);
}

static int zc_told;

/* Step 2: free it (events about it purged and acknowledged by then). */
void
ib_qp_free(struct ib_qp *qp)
{
	struct ib_dev *dev = qp->dev;

	rte_spinlock_lock(&dev->ctl_lock);
	dev->nqp--;
	qp->sh->nqp--;
	rte_spinlock_unlock(&dev->ctl_lock);
	/* Zero-copy frames the port holds decrement their WQE's state. */
	if (ib_zc_settle(&qp->swqe[0].zc, qp->sq.size, sizeof(qp->swqe[0])))
		rte_free(qp->swqe);
	else if (!__atomic_exchange_n(&zc_told, 1, __ATOMIC_RELAXED))
		IB_LOG(NOTICE, "%s: QP %u destroyed while its port still holds "
		       "sent zero-copy frames: %zu bytes of its state stay "
		       "allocated (said once)", dev->conf.name,
		       qp->ibv.qp_num, qp->sq.size * sizeof(*qp->swqe));
	ib_queue_free(&qp->rq);
	ib_queue_free(&qp->sq);
	rte_free(qp);
}

int
ib_qp_destroy(struct ib_qp *qp)
{
	int err = ib_qp_unpublish(qp);

	if (err == 0)
		ib_qp_free(qp);
	return err;
}
