/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Post path: ibv_post_send / ibv_post_recv write WQEs into the QP's rings
 * and ring the doorbell. No system call, no lock shared with the engine.
 */
#include <errno.h>
#include <string.h>
#include <rte_memcpy.h>

#include "ib_hca.h"

static inline int
qp_state(const struct ib_qp *qp)
{
	return __atomic_load_n(&qp->attr.qp_state, __ATOMIC_ACQUIRE);
}

static int
is_atomic(int opcode)
{
	return opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * A bind WR (ibv_post_send(3) bind_mw, ibv_bind_mw(3)): the window, its MR
 * and the new rkey travel in the WQE; the engine checks them in SQ order.
 * Only type 2 windows are bound through the SQ; @type1 is set for
 * ibv_bind_mw, which binds type 1 windows.
 */
static int
build_bind_wqe(struct ib_qp *qp, const struct ibv_send_wr *wr,
	       struct ib_send_wqe *w, int type1)
{
	const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;
	struct ibv_mw *mw = wr->bind_mw.mw;

	if (mw == NULL || mw->context != qp->ibv.context ||
	    mw->type != (type1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2))
		return EINVAL;
	if (b->mr == NULL && (b->addr != 0 || b->length != 0))
		return EINVAL;
	if (b->mr != NULL && b->mr->context != qp->ibv.context)
		return EINVAL;
	w->wr_id = wr->wr_id;
	w->opcode = IBV_WR_BIND_MW;
	w->flags = wr->send_flags & ~IBV_SEND_INLINE;
	if (qp->sq_sig_all)
		w->flags |= IBV_SEND_SIGNALED;
	w->length = 0;
	w->num_sge = 0;
	w->rkey = wr->bind_mw.rkey;
	w->bind.addr = b->addr;
	w->bind.length = b->length;
	w->bind.lkey = b->mr != NULL ? b->mr->lkey : 0;
	w->bind.mw_index = to_mw(mw)->k.key >> 8;
	w->bind_access = b->mw_access_flags;
	return 0;
}

/* Validate one send WR and write it into @w. */
static int
build_send_wqe(struct ib_qp *qp, const struct ibv_send_wr *wr,
	       struct ib_send_wqe *w)
{
	uint64_t total = 0;
	int i;

	if (!ib_wr_opcode_valid(qp->ibv.qp_type, wr->opcode))
		return EINVAL;
	if (wr->opcode == IBV_WR_BIND_MW)
		return build_bind_wqe(qp, wr, w, 0);
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > IB_MAX_MSG_SZ)
		return EINVAL;
	if (is_atomic(wr->opcode) &&
	    ((wr->wr.atomic.remote_addr & 7) != 0 || total != 8))
		return EINVAL;
	/* IBA 1.5 ATOMIC WRITE: 8 bytes; their alignment is the responder's
	 * to check (a misaligned one is NAKed as an invalid request).
	 */
	if (wr->opcode == IBV_WR_ATOMIC_WRITE && total != 8)
		return EINVAL;

	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->flags = wr->send_flags;
	if (qp->sq_sig_all)
		w->flags |= IBV_SEND_SIGNALED;
	w->length = total;
	w->imm = wr->imm_data;
	if (qp->ibv.qp_type == IBV_QPT_UD) {
		/* The address vector, destination QP and Q_Key travel in
		 * the WQE: the AH may be destroyed once this returns.
		 */
		if (wr->wr.ud.ah == NULL)
			return EINVAL;
		memcpy(sq_wqe_av(qp, w), &to_ah(wr->wr.ud.ah)->hdr,
		       sizeof(struct ib_encap));
		w->ud.qpn = wr->wr.ud.remote_qpn & IB_QPN_MASK;
		w->ud.qkey = wr->wr.ud.remote_qkey;
	} else if (is_atomic(wr->opcode)) {
		w->rdma.va = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->rdma.compare_add = wr->wr.atomic.compare_add;
		w->rdma.swap = wr->wr.atomic.swap;
	} else if (wr->opcode == IBV_WR_SEND_WITH_INV ||
		   wr->opcode == IBV_WR_LOCAL_INV) {
		w->rkey = wr->invalidate_rkey;
		w->imm = 0;
	} else {
		w->rdma.va = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}

	/* Inline data is copied now; its lkeys are not checked (verbs). */
	if ((wr->send_flags & IBV_SEND_INLINE) && wr->opcode != IBV_WR_RDMA_READ &&
	    !is_atomic(wr->opcode)) {
		uint8_t *dst = w->inline_data;

		/* An ATOMIC WRITE's 8 bytes fit any slot (one SGE's room). */
		if (total > qp->max_inline && wr->opcode != IBV_WR_ATOMIC_WRITE)
			return EINVAL;
		for (i = 0; i < wr->num_sge; i++) {
			rte_memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr,
				   wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		w->num_sge = 0;
		w->flags |= IBV_SEND_INLINE;
		return 0;
	}
	w->flags &= ~IBV_SEND_INLINE;
	w->num_sge = wr->num_sge;
	memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(struct ibv_sge));
	return 0;
}

/* C10-96: posting to the SQ in Reset, Init or RTR is an error. */
static int
sq_accepts(int state)
{
	return state != IBV_QPS_RESET && state != IBV_QPS_INIT &&
	       state != IBV_QPS_RTR;
}

/* Producer side: is there no slot at @prod (refreshing the copy of cons)? */
static int
ring_full(struct ib_queue *q, uint32_t prod)
{
	if (prod - q->cons_cache != q->size)
		return 0;
	q->cons_cache = __atomic_load_n(&q->cons, __ATOMIC_ACQUIRE);
	return prod - q->cons_cache == q->size;
}

/*
 * Write the receive WRs of @wr into the ring @q (an RQ or an SRQ) from
 * slot q->prod on; returns the new producer index. The caller publishes
 * it; on an error *bad is the WR not written and *err its errno.
 */
uint32_t
ib_recv_wqes_write(struct ib_queue *q, uint32_t max_sge,
		   struct ibv_recv_wr *wr, struct ibv_recv_wr **bad, int *err)
{
	uint32_t prod = q->prod;

	*err = 0;
	for (; wr != NULL; wr = wr->next) {
		struct ib_recv_wqe *w;
		uint64_t total = 0;
		int i;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge) {
			*err = EINVAL;
			break;
		}
		if (ring_full(q, prod)) {
			*err = ENOMEM;
			break;
		}
		w = ib_queue_slot(q, prod);
		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		w->length = RTE_MIN(total, (uint64_t)UINT32_MAX);
		memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(struct ibv_sge));
		prod++;
		ib_queue_warm(q, prod);
	}
	*bad = wr;
	return prod;
}

/*
 * A bind WR's window takes its new rkey when the WR is posted
 * (ibv_bind_mw(3): the caller restores it if the bind completes in error).
 */
static void
bind_posted(const struct ibv_send_wr *wr)
{
	if (wr->opcode == IBV_WR_BIND_MW)
		wr->bind_mw.mw->rkey = wr->bind_mw.rkey;
}

/*
 * The SQ lock's bias. Every post took sq_lock, a locked exchange, which
 * waits for the poster's store buffer to drain: the previous post's WQE
 * and producer index, lines the engine last read (95 % of post_send's
 * samples in dpib-perf's 64 B WRITE stream once the doorbell's fence had
 * gone: hot QPs, ib_engine.c). A QP is mostly posted to by one thread, so
 * the first thread to post (under the lock) becomes its owner and from
 * then on enters by storing sq_busy and reading sq_bias again, plain
 * accesses. Another thread, under the lock, clears the bias for good,
 * calls membarrier (every running thread of the process executes a full
 * barrier: the owner's sq_busy store is visible after it, or the owner's
 * second read of sq_bias sees it cleared and it takes the lock) and waits
 * for sq_busy to clear: from then on everyone takes the lock. Without
 * membarrier no QP is biased.
 */
__thread uint32_t ib_thread_tag_v __attribute__((tls_model("initial-exec")));
static uint32_t thread_tags;

uint32_t
ib_thread_tag_slow(void)
{
	uint32_t t;

	do {	/* never 0 (unset) nor IB_BIAS_OFF */
		t = __atomic_add_fetch(&thread_tags, 1, __ATOMIC_RELAXED);
	} while (t == 0 || t == IB_BIAS_OFF);
	ib_thread_tag_v = t;
	return t;
}

int
ib_sq_enter_slow(struct ib_qp *qp, uint32_t me)
{
	uint32_t bias;

	rte_spinlock_lock(&qp->sq_lock);
	bias = __atomic_load_n(&qp->sq_bias, __ATOMIC_RELAXED);
	if (bias == 0) {
		__atomic_store_n(&qp->sq_bias, ib_membarrier ? me : IB_BIAS_OFF,
				 __ATOMIC_RELAXED);
	} else if (bias != IB_BIAS_OFF && bias != me) {
		__atomic_store_n(&qp->sq_bias, IB_BIAS_OFF, __ATOMIC_RELAXED);
		ib_heavy_fence();
		while (__atomic_load_n(&qp->sq_busy, __ATOMIC_ACQUIRE))
			rte_pause();
	}
	return 0;
}

/* @type1: the list is ibv_bind_mw's single WR binding a type 1 window. */
static int
post_send(struct ib_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad,
	  int type1)
{
	struct ib_queue *q = &qp->sq;
	int state = qp_state(qp);
	uint32_t prod;
	int err = 0, posted, biased;

	if (!sq_accepts(state)) {
		*bad = wr;
		return EINVAL;
	}
	biased = ib_sq_enter(qp);
	prod = q->prod;
	for (; wr != NULL; wr = wr->next) {
		if (ring_full(q, prod)) {
			err = ENOMEM;
			break;
		}
		err = type1 ? build_bind_wqe(qp, wr, sq_wqe(qp, prod), 1) :
			      build_send_wqe(qp, wr, sq_wqe(qp, prod));
		if (err)
			break;
		bind_posted(wr);
		prod++;
		ib_queue_warm(q, prod);
	}
	posted = prod != q->prod;
	if (posted) {
		ib_queue_publish(q, prod);
		if (!ib_engine_inline)
			ib_engine_doorbell(qp);
	}
	ib_sq_exit(qp, biased);
	if (ib_engine_inline) {
		/* Carry the work as far as it goes now: on a loopback device
		 * the whole exchange, on a port until it waits for the peer.
		 * The first pass rings the doorbell (ib_engine_post_qp).
		 */
		int i;

		for (i = 0; i < IB_POST_PASSES &&
		     ib_engine_post_qp(qp, posted && i == 0); i++)
			;
	}
	/* NULL when all went, as rxe leaves it: callers test it. */
	*bad = err ? wr : NULL;
	return err;
}

int
ib_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
	     struct ibv_send_wr **bad)
{
	return post_send(to_qp(ibqp), wr, bad, 0);
}

/*
 * ibv_bind_mw(3), type 1: a bind WR on @ibqp's SQ with the next tag of the
 * window's rkey (ibv_inc_rkey); the caller's inline checks (type, PD of
 * the MR, length without an MR) have run.
 */
int
ib_bind_mw1(struct ibv_qp *ibqp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr = {
		.wr_id = bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = bind->send_flags,
		.bind_mw = { .mw = mw, .rkey = ibv_inc_rkey(mw->rkey),
			     .bind_info = bind->bind_info },
	}, *bad;

	if (!ib_wr_opcode_valid(ibqp->qp_type, IBV_WR_BIND_MW))
		return EINVAL;
	return post_send(to_qp(ibqp), &wr, &bad, 1);
}

int
ib_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
	     struct ibv_recv_wr **bad)
{
	struct ib_qp *qp = to_qp(ibqp);
	struct ib_queue *q = &qp->rq;
	int state = qp_state(qp);
	uint32_t prod;
	int err = 0;

	if (qp->ibv.srq != NULL || state == IBV_QPS_RESET) {
		*bad = wr;
		return EINVAL;
	}
	rte_spinlock_lock(&qp->rq_lock);
	prod = ib_recv_wqes_write(q, qp->max_recv_sge, wr, bad, &err);
	if (prod != q->prod) {
		ib_queue_publish(q, prod);
		/* Receives are consumed as packets arrive; only Error needs
		 * the engine to act on them (flush).
		 */
		if (qp_state(qp) == IBV_QPS_ERR)
			ib_engine_doorbell(qp);
	}
	ib_unlock(&qp->rq_lock);
	return err;
}

/*
 * The ibv_wr_* API posts a batch all or nothing: under sq_lock it writes
 * each WR into slot @idx past the producer index, which the engine does not
 * read until the caller publishes the whole batch.
 */
int
ib_post_send_stage(struct ib_qp *qp, uint32_t idx,
		   const struct ibv_send_wr *wr)
{
	struct ib_queue *q = &qp->sq;
	int state = qp_state(qp);
	int err;

	if (!sq_accepts(state))
		return EINVAL;
	if (ring_full(q, idx))
		return ENOMEM;
	err = build_send_wqe(qp, wr, sq_wqe(qp, idx));
	if (err == 0) {
		bind_posted(wr);
		ib_queue_warm(q, idx + 1);
	}
	return err;
}
