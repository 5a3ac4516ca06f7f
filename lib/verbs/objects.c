/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Verbs: protection domains, memory regions, completion queues and queue
 * pairs. Generic argument checks live here; the HCA does the rest.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rte_malloc.h>

#include "verbs_priv.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

static void
ref_get(uint32_t *ref)
{
	__atomic_fetch_add(ref, 1, __ATOMIC_RELAXED);
}

static void
ref_put(uint32_t *ref)
{
	__atomic_fetch_sub(ref, 1, __ATOMIC_RELAXED);
}

struct ibv_pd *
ibv_alloc_pd(struct ibv_context *ctx)
{
	struct ib_pd *pd = rte_zmalloc("ib_pd", sizeof(*pd), 0);

	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibv.context = ctx;
	return &pd->ibv;
}

int
ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct ib_pd *pd = to_pd(ibpd);

	if (__atomic_load_n(&pd->refcnt, __ATOMIC_RELAXED) != 0)
		return EBUSY;
	rte_free(pd);
	return 0;
}

struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
		 unsigned int access)
{
	struct ib_mr *mr;
	int err;

	err = ib_mr_reg(ctx_hw(pd->context), to_pd(pd), addr, length, iova,
			access, &mr);
	if (err) {
		errno = err;
		return NULL;
	}
	mr->ibv.context = pd->context;
	ref_get(&to_pd(pd)->refcnt);
	return &mr->ibv;
}

struct ibv_mr *
ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, access);
}

struct ibv_mr *
ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
		int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, access);
}

int
ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct ib_pd *pd = to_pd(ibmr->pd);

	ib_mr_dereg(ctx_hw(ibmr->context), to_mr(ibmr));
	ref_put(&pd->refcnt);
	return 0;
}

struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *ctx)
{
	(void)ctx;
	errno = EOPNOTSUPP;	/* completion events: not built yet */
	return NULL;
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	(void)channel;
	return EOPNOTSUPP;
}

int
dpib_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	return EOPNOTSUPP;
}

struct ibv_cq *
ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
	      struct ibv_comp_channel *channel, int comp_vector)
{
	struct ib_cq *cq;
	int err;

	if (comp_vector < 0 || comp_vector >= ctx->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	if (channel != NULL) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	err = ib_cq_create(ctx_hw(ctx), cqe, &cq);
	if (err) {
		errno = err;
		return NULL;
	}
	cq->ibv.context = ctx;
	cq->ibv.channel = channel;
	cq->ibv.cq_context = cq_context;
	pthread_mutex_init(&cq->ibv.mutex, NULL);
	pthread_cond_init(&cq->ibv.cond, NULL);
	return &cq->ibv;
}

int
ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct ib_cq *cq = to_cq(ibcq);

	if (__atomic_load_n(&cq->refcnt, __ATOMIC_RELAXED) != 0)
		return EBUSY;
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	return ib_cq_destroy(cq);
}

struct ibv_qp *
ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct ib_qp *qp;
	int err;

	if (init->send_cq == NULL || init->recv_cq == NULL ||
	    init->send_cq->context != pd->context ||
	    init->recv_cq->context != pd->context) {
		errno = EINVAL;
		return NULL;
	}
	err = ib_qp_create(ctx_hw(pd->context), pd, init, &qp);
	if (err) {
		errno = err;
		return NULL;
	}
	qp->ibv.context = pd->context;
	qp->ibv.qp_context = init->qp_context;
	qp->ibv.pd = pd;
	qp->ibv.send_cq = init->send_cq;
	qp->ibv.recv_cq = init->recv_cq;
	qp->ibv.srq = init->srq;
	qp->ibv.state = IBV_QPS_RESET;
	qp->ibv.qp_type = init->qp_type;
	pthread_mutex_init(&qp->ibv.mutex, NULL);
	pthread_cond_init(&qp->ibv.cond, NULL);
	ref_get(&to_pd(pd)->refcnt);
	ref_get(&to_cq(init->send_cq)->refcnt);
	ref_get(&to_cq(init->recv_cq)->refcnt);
	return &qp->ibv;
}

int
ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	return ib_qp_modify(to_qp(qp), attr, mask);
}

int
ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
	     struct ibv_qp_init_attr *init)
{
	return ib_qp_query(to_qp(qp), attr, mask, init);
}

int
ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct ib_cq *scq = to_cq(ibqp->send_cq), *rcq = to_cq(ibqp->recv_cq);
	struct ib_pd *pd = to_pd(ibqp->pd);
	int err;

	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	err = ib_qp_destroy(to_qp(ibqp));
	if (err)
		return err;
	ref_put(&scq->refcnt);
	ref_put(&rcq->refcnt);
	ref_put(&pd->refcnt);
	return 0;
}

int
ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
	uint64_t v;

	(void)event;
	/* No asynchronous event source exists yet: block (or EAGAIN on a
	 * non-blocking descriptor) exactly as with an idle device.
	 */
	if (read(ctx->async_fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	errno = EIO;
	return -1;
}

void
ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;
}
