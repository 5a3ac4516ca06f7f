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

/* Validate one send WR and write it into @w. */
static int
build_send_wqe(struct ib_qp *qp, const struct ibv_send_wr *wr,
	       struct ib_send_wqe *w)
{
	uint64_t total = 0;
	int i;

	if (!ib_wr_opcode_valid(qp->ibv.qp_type, wr->opcode))
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		total += ib_sge_len(&wr->sg_list[i]);
	if (total > IB_MAX_MSG_SZ)
		return EINVAL;
	if (is_atomic(wr->opcode) &&
	    ((wr->wr.atomic.remote_addr & 7) != 0 || total != 8))
		return EINVAL;

	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->flags = wr->send_flags;
	if (qp->sq_sig_all)
		w->flags |= IBV_SEND_SIGNALED;
	w->length = total;
	w->imm = wr->imm_data;
	if (qp->ibv.qp_type == IBV_QPT_UD) {
		/* The AH, destination QP and Q_Key travel in the WQE. */
		if (wr->wr.ud.ah == NULL)
			return EINVAL;
		w->remote_addr = (uintptr_t)to_ah(wr->wr.ud.ah);
		w->rkey = wr->wr.ud.remote_qpn & IB_QPN_MASK;
		w->compare_add = wr->wr.ud.remote_qkey;
	} else if (is_atomic(wr->opcode)) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}

	/* Inline data is copied now; its lkeys are not checked (verbs). */
	if ((wr->send_flags & IBV_SEND_INLINE) && wr->opcode != IBV_WR_RDMA_READ &&
	    !is_atomic(wr->opcode)) {
		uint8_t *dst = w->inline_data;

		if (total > qp->max_inline)
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
			total += ib_sge_len(&wr->sg_list[i]);
		w->length = RTE_MIN(total, (uint64_t)UINT32_MAX);
		memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(struct ibv_sge));
		prod++;
	}
	*bad = wr;
	return prod;
}

int
ib_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
	     struct ibv_send_wr **bad)
{
	struct ib_qp *qp = to_qp(ibqp);
	struct ib_queue *q = &qp->sq;
	int state = qp_state(qp);
	uint32_t prod;
	int err = 0;

	if (!sq_accepts(state)) {
		*bad = wr;
		return EINVAL;
	}
	rte_spinlock_lock(&qp->sq_lock);
	prod = q->prod;
	for (; wr != NULL; wr = wr->next) {
		if (ring_full(q, prod)) {
			err = ENOMEM;
			break;
		}
		err = build_send_wqe(qp, wr, sq_wqe(qp, prod));
		if (err)
			break;
		prod++;
	}
	if (prod != q->prod) {
		ib_queue_publish(q, prod);
		ib_engine_doorbell(qp);
	}
	rte_spinlock_unlock(&qp->sq_lock);
	if (ib_engine_inline) {
		/* Carry the work as far as it goes now: on a loopback device
		 * the whole exchange, on a port until it waits for the peer.
		 */
		int i;

		for (i = 0; i < IB_INLINE_PASSES && ib_engine_progress(); i++)
			;
	}
	if (err)
		*bad = wr;
	return err;
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
	rte_spinlock_unlock(&qp->rq_lock);
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

	if (!sq_accepts(state))
		return EINVAL;
	if (ring_full(q, idx))
		return ENOMEM;
	return build_send_wqe(qp, wr, sq_wqe(qp, idx));
}
