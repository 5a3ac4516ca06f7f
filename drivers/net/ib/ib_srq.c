/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Shared receive queues: one ring of receive WQEs that several QPs take
 * from. Applications produce (under an application-side lock, verbs allows
 * concurrent posters); the engine is the only consumer. The limit event is
 * armed by ibv_modify_srq(IBV_SRQ_LIMIT) and fires once when the number of
 * WQEs drops below it (or at once if it already is, seed 002 section 8.1).
 */
#include <errno.h>
#include <string.h>
#include <rte_malloc.h>

#include "ib_hca.h"

int
ib_srq_create(struct ib_dev *dev, struct ibv_srq_init_attr *init,
	      struct ib_srq **out)
{
	struct ibv_srq_attr *a = &init->attr;
	struct ib_srq *srq;
	uint32_t stride;

	if (a->max_wr == 0 || a->max_wr > IB_MAX_QP_WR ||
	    a->max_sge > IB_MAX_SGE || a->srq_limit > a->max_wr)
		return EINVAL;
	srq = rte_zmalloc("ib_srq", sizeof(*srq), RTE_CACHE_LINE_SIZE);
	if (srq == NULL)
		return ENOMEM;
	srq->max_sge = RTE_MAX(a->max_sge, 1u);
	stride = RTE_ALIGN_CEIL(sizeof(struct ib_recv_wqe) +
				srq->max_sge * sizeof(struct ibv_sge), 64);
	if (ib_queue_init(&srq->q, a->max_wr, stride, SOCKET_ID_ANY) != 0) {
		rte_free(srq);
		return ENOMEM;
	}
	srq->dev = dev;
	srq->max_wr = srq->q.size;
	rte_spinlock_init(&srq->post_lock);
	rte_spinlock_init(&srq->take_lock);
	a->max_wr = srq->max_wr;
	a->max_sge = srq->max_sge;
	*out = srq;
	return 0;
}

/* Engine: fire the limit event when armed and below it. */
static void
srq_check_limit(struct ib_srq *srq)
{
	uint32_t left;

	if (srq->limit == 0)
		return;
	left = __atomic_load_n(&srq->q.prod, __ATOMIC_ACQUIRE) - srq->q.cons;
	if (left < srq->limit) {
		srq->limit = 0;
		ib_async_event(srq->async, IBV_EVENT_SRQ_LIMIT_REACHED, srq);
	}
}

struct srq_arm {
	struct ib_srq *srq;
	uint32_t limit;
};

static void
srq_arm(void *arg)
{
	struct srq_arm *a = arg;

	a->srq->limit = a->limit;
	srq_check_limit(a->srq);
}

int
ib_srq_modify(struct ib_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct srq_arm a = { .srq = srq, .limit = attr->srq_limit };

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if (mask & IBV_SRQ_MAX_WR)
		return EINVAL;	/* resizing: IBV_DEVICE_SRQ_RESIZE not offered */
	if (!(mask & IBV_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->max_wr)
		return EINVAL;
	return ib_engine_exec(srq->dev, srq_arm, &a);
}

int
ib_srq_query(struct ib_srq *srq, struct ibv_srq_attr *attr)
{
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = __atomic_load_n(&srq->limit, __ATOMIC_RELAXED);
	return 0;
}

int
ib_srq_destroy(struct ib_srq *srq)
{
	if (__atomic_load_n(&srq->refcnt, __ATOMIC_RELAXED) != 0)
		return EBUSY;
	ib_engine_quiesce(srq->dev);
	ib_queue_free(&srq->q);
	rte_free(srq);
	return 0;
}

int
ib_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad)
{
	struct ib_srq *srq = to_srq(ibsrq);
	uint32_t prod;
	int err;

	rte_spinlock_lock(&srq->post_lock);
	prod = ib_recv_wqes_write(&srq->q, srq->max_sge, wr, bad, &err);
	if (prod != srq->q.prod)
		ib_queue_publish(&srq->q, prod);
	ib_unlock(&srq->post_lock);
	return err;
}

static int
srq_take(struct ib_srq *srq, struct ib_rwqe_copy *out)
{
	struct ib_recv_wqe *w;

	if (ib_queue_count(&srq->q) == 0)
		return -ENOENT;
	w = ib_queue_slot(&srq->q, srq->q.cons);
	memcpy(out, w, sizeof(*w) + w->num_sge * sizeof(struct ibv_sge));
	ib_queue_consume(&srq->q, srq->q.cons + 1);
	srq_check_limit(srq);
	return 0;
}

/*
 * Engine: take the next receive WQE; -ENOENT when the SRQ is empty. QPs
 * of several engines on one SRQ make them consumers of one queue: then
 * one at a time.
 */
int
ib_srq_take(struct ib_srq *srq, struct ib_rwqe_copy *out)
{
	int ret;

	if (likely(!srq->shared))
		return srq_take(srq, out);
	rte_spinlock_lock(&srq->take_lock);
	ret = srq_take(srq, out);
	ib_unlock(&srq->take_lock);
	return ret;
}
