/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The verbs objects' lives: PDs, MRs, MWs, CQs, QPs, SRQs and AHs are
 * created and destroyed here with the references that keep a PD, a CQ or
 * an SRQ alive while something uses it (EBUSY until then), and the events
 * of an object forgotten before it goes. lib/verbs checks what verbs
 * itself defines and calls these (hca_if.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <rte_malloc.h>

#include "ib_hca.h"

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
hca_alloc_pd(struct ibv_context *ctx)
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
hca_dealloc_pd(struct ibv_pd *ibpd)
{
	struct ib_pd *pd = to_pd(ibpd);

	if (__atomic_load_n(&pd->refcnt, __ATOMIC_RELAXED) != 0)
		return EBUSY;
	rte_free(pd);
	return 0;
}

struct ibv_mr *
hca_reg_mr(struct ib_dev *dev, struct ibv_pd *pd, void *addr, size_t length,
	   uint64_t iova, unsigned int access)
{
	struct ib_mr *mr;
	int err;

	err = ib_mr_reg(dev, to_pd(pd), addr, length, iova, access, &mr);
	if (err) {
		errno = err;
		return NULL;
	}
	mr->ibv.context = pd->context;
	ref_get(&to_pd(pd)->refcnt);
	return &mr->ibv;
}

/* ibv_rereg_mr(3): 0, or an errno with the MR unchanged. */
int
hca_rereg_mr(struct ib_dev *dev, struct ibv_mr *ibmr, int flags,
	     struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct ib_pd *old = to_pd(ibmr->pd);
	int err;

	err = ib_mr_rereg(dev, to_mr(ibmr), flags,
			  pd != NULL ? to_pd(pd) : NULL, addr, length, access);
	if (err)
		return err;
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		ref_get(&to_pd(pd)->refcnt);
		ref_put(&old->refcnt);
	}
	return 0;
}

/* The live MR of an lkey or rkey (the whole key, generation too), or NULL. */
struct ibv_mr *
hca_mr_of_key(struct ib_dev *dev, uint32_t key)
{
	struct ib_mr *mr = ib_mr_lookup(dev, key);

	return mr != NULL ? &mr->ibv : NULL;
}

int
hca_dereg_mr(struct ib_dev *dev, struct ibv_mr *ibmr)
{
	struct ib_pd *pd = to_pd(ibmr->pd);
	int err = ib_mr_dereg(dev, to_mr(ibmr));

	if (err)
		return err;	/* EBUSY: a memory window is bound to it */
	ref_put(&pd->refcnt);
	return 0;
}

/* ibv_alloc_mw(3), through context ops.alloc_mw: type 1 or 2, else EINVAL. */
struct ibv_mw *
hca_alloc_mw(struct ib_dev *dev, struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_mw *mw;
	int err = ib_mw_alloc(dev, to_pd(pd), type, &mw);

	if (err) {
		errno = err;
		return NULL;
	}
	mw->ibv.context = pd->context;
	ref_get(&to_pd(pd)->refcnt);
	return &mw->ibv;
}

/* ibv_dealloc_mw(3): a bound window is invalidated first. */
int
hca_dealloc_mw(struct ib_dev *dev, struct ibv_mw *ibmw)
{
	struct ib_pd *pd = to_pd(ibmw->pd);
	int err = ib_mw_dealloc(dev, to_mw(ibmw));

	if (err)
		return err;
	ref_put(&pd->refcnt);
	return 0;
}

/*
 * A CQ of @ctx; its completion events go to @channel (whose queue is
 * @channel_evq), its asynchronous ones to @async.
 */
struct ibv_cq *
hca_create_cq(struct ib_dev *dev, struct ibv_context *ctx, int cqe,
	      void *cq_context, struct ibv_comp_channel *channel,
	      struct ib_evq *channel_evq, struct ib_evq *async)
{
	struct ib_cq *cq;
	int err;

	err = ib_cq_create(dev, cqe, &cq);
	if (err) {
		errno = err;
		return NULL;
	}
	cq->ibv.context = ctx;
	cq->ibv.channel = channel;
	cq->async = async;
	if (channel != NULL) {
		cq->channel = channel_evq;
		__atomic_fetch_add(&channel->refcnt, 1, __ATOMIC_RELAXED);
	}
	cq->ibv.cq_context = cq_context;
	pthread_mutex_init(&cq->ibv.mutex, NULL);
	pthread_cond_init(&cq->ibv.cond, NULL);
	return &cq->ibv;
}

int
hca_destroy_cq(struct ibv_cq *ibcq)
{
	struct ib_cq *cq = to_cq(ibcq);
	struct ibv_comp_channel *channel = ibcq->channel;

	if (__atomic_load_n(&cq->refcnt, __ATOMIC_RELAXED) != 0)
		return EBUSY;
	/* No new event once disarmed and the engine has passed by. */
	__atomic_store_n(&cq->armed, IB_CQ_DISARMED, __ATOMIC_RELEASE);
	ib_engine_quiesce(cq->dev);
	ib_cq_events_forget(cq);
	if (channel != NULL)
		__atomic_fetch_sub(&channel->refcnt, 1, __ATOMIC_RELAXED);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	return ib_cq_destroy(cq);
}

int
hca_resize_cq(struct ibv_cq *cq, int cqe)
{
	return ib_cq_resize(to_cq(cq), cqe);
}

static struct ibv_qp *
create_qp(struct ib_dev *dev, struct ibv_pd *pd, struct ibv_qp_init_attr *init,
	  struct ib_evq *async, uint32_t qpn)
{
	struct ib_qp *qp;
	int err;

	/* The library checks the contexts (an imported PD's and its
	 * original's differ); here the device.
	 */
	if (init->send_cq == NULL || init->recv_cq == NULL ||
	    to_cq(init->send_cq)->dev != dev ||
	    to_cq(init->recv_cq)->dev != dev) {
		errno = EINVAL;
		return NULL;
	}
	err = ib_qp_create(dev, pd, init, qpn, &qp);
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
	qp->async = async;
	pthread_mutex_init(&qp->ibv.mutex, NULL);
	pthread_cond_init(&qp->ibv.cond, NULL);
	if (init->srq != NULL)
		ref_get(&to_srq(init->srq)->refcnt);
	ref_get(&to_pd(pd)->refcnt);
	ref_get(&to_cq(init->send_cq)->refcnt);
	ref_get(&to_cq(init->recv_cq)->refcnt);
	return &qp->ibv;
}

struct ibv_qp *
hca_create_qp(struct ib_dev *dev, struct ibv_pd *pd,
	      struct ibv_qp_init_attr *init, struct ib_evq *async)
{
	return create_qp(dev, pd, init, async, 0);
}

struct ibv_qp *
hca_create_gsi_qp(struct ib_dev *dev, struct ibv_pd *pd,
		  struct ibv_qp_init_attr *init, struct ib_evq *async)
{
	return create_qp(dev, pd, init, async, IB_QPN_GSI);
}

int
hca_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	return ib_qp_modify(to_qp(qp), attr, mask);
}

int
hca_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
	     struct ibv_qp_init_attr *init)
{
	return ib_qp_query(to_qp(qp), attr, mask, init);
}

int
hca_destroy_qp(struct ibv_qp *ibqp)
{
	struct ib_cq *scq = to_cq(ibqp->send_cq), *rcq = to_cq(ibqp->recv_cq);
	struct ib_pd *pd = to_pd(ibqp->pd);
	struct ib_qp *qp = to_qp(ibqp);
	int err;

	err = ib_qp_unpublish(qp);
	if (err)
		return err;
	ib_events_forget(qp->async, ibqp, &ibqp->mutex, &ibqp->cond,
			 &ibqp->events_completed, &qp->events_reported);
	if (ibqp->srq != NULL)
		ref_put(&to_srq(ibqp->srq)->refcnt);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	ib_qp_free(qp);
	ref_put(&scq->refcnt);
	ref_put(&rcq->refcnt);
	ref_put(&pd->refcnt);
	return 0;
}

struct ibv_srq *
hca_create_srq(struct ib_dev *dev, struct ibv_pd *pd,
	       struct ibv_srq_init_attr *init, struct ib_evq *async)
{
	struct ib_srq *srq;
	int err;

	err = ib_srq_create(dev, init, &srq);
	if (err) {
		errno = err;
		return NULL;
	}
	srq->ibv.context = pd->context;
	srq->ibv.srq_context = init->srq_context;
	srq->ibv.pd = pd;
	srq->async = async;
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	ref_get(&to_pd(pd)->refcnt);
	return &srq->ibv;
}

int
hca_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	return ib_srq_modify(to_srq(srq), attr, mask);
}

int
hca_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	return ib_srq_query(to_srq(srq), attr);
}

int
hca_destroy_srq(struct ibv_srq *ibsrq)
{
	struct ib_srq *srq = to_srq(ibsrq);
	struct ib_pd *pd = to_pd(ibsrq->pd);
	int err;

	if (__atomic_load_n(&srq->refcnt, __ATOMIC_RELAXED) != 0)
		return EBUSY;
	ib_engine_quiesce(srq->dev);
	ib_events_forget(srq->async, ibsrq, &ibsrq->mutex, &ibsrq->cond,
			 &ibsrq->events_completed, &srq->events_reported);
	/* Before the SRQ's memory goes: destroying them writes to them
	 * (glibc marks a destroyed mutex), and a write into freed rte_malloc
	 * memory breaks the heap's rule that freed memory is zero - a later
	 * rte_zmalloc (a CQ) then came back with a stray channel pointer.
	 */
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	err = ib_srq_destroy(srq);
	if (err) {
		/* A QP took it meanwhile: it stays, usable. */
		pthread_mutex_init(&ibsrq->mutex, NULL);
		pthread_cond_init(&ibsrq->cond, NULL);
		return err;
	}
	ref_put(&pd->refcnt);
	return 0;
}

struct ibv_ah *
hca_create_ah(struct ib_dev *dev, struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct ib_ah *ah;
	int err;

	err = ib_ah_create(dev, attr, &ah);
	if (err) {
		errno = err;
		return NULL;
	}
	ah->ibv.context = pd->context;
	ah->ibv.pd = pd;
	ref_get(&to_pd(pd)->refcnt);
	return &ah->ibv;
}

int
hca_destroy_ah(struct ibv_ah *ibah)
{
	ref_put(&to_pd(ibah->pd)->refcnt);
	rte_free(to_ah(ibah));
	return 0;
}

/*
 * The address of the sender of a UD receive: for RoCEv2 over IPv6 the GRH
 * area is the IPv6 header (version nibble 6); over IPv4 it holds the IPv4
 * header in its last 20 bytes and begins with zeros. As rdma-core builds
 * it: the hop limit and traffic class are the received header's (TTL and
 * TOS over IPv4), the source GID index is the one of the local address
 * the packet was sent to, and there must be one: a multicast destination
 * (no GID of ours) is EINVAL, an address this port does not have ENOENT
 * (-1 and errno).
 */
int
hca_init_ah_from_wc(struct ib_dev *hw, uint8_t port_num, struct ibv_wc *wc,
		    struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	const uint8_t *raw = (const uint8_t *)grh;
	union ibv_gid local;
	uint32_t i, flow;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->port_num = port_num;
	ah_attr->sl = wc->sl;
	ah_attr->dlid = wc->slid;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	ah_attr->is_global = 1;
	if ((raw[0] >> 4) != 6) {
		const uint8_t *ip = raw + 20;	/* the IPv4 header */
		uint8_t *dgid = ah_attr->grh.dgid.raw;

		if ((ip[16] & 0xf0) == 0xe0) {
			errno = EINVAL;		/* 224.0.0.0/4 */
			return -1;
		}
		memset(&local, 0, sizeof(local));
		local.raw[10] = local.raw[11] = 0xff;
		memcpy(local.raw + 12, ip + 16, 4);	/* its destination */
		dgid[10] = dgid[11] = 0xff;
		memcpy(dgid + 12, ip + 12, 4);		/* its source */
		ah_attr->grh.hop_limit = ip[8];
		ah_attr->grh.traffic_class = ip[1];
	} else {
		if (grh->dgid.raw[0] == 0xff) {
			errno = EINVAL;
			return -1;
		}
		local = grh->dgid;
		ah_attr->grh.dgid = grh->sgid;
		flow = rte_be_to_cpu_32(grh->version_tclass_flow);
		ah_attr->grh.flow_label = flow & 0xfffff;
		ah_attr->grh.traffic_class = (flow >> 20) & 0xff;
		ah_attr->grh.hop_limit = grh->hop_limit;
	}
	for (i = 0; i < hw->ngid; i++)
		if (memcmp(&hw->gid[i], &local, sizeof(local)) == 0)
			break;
	if (i == hw->ngid) {
		errno = ENOENT;
		return -1;
	}
	ah_attr->grh.sgid_index = (uint8_t)i;
	return 0;
}

/* ibv_attach_mcast / ibv_detach_mcast: RoCE has no LIDs. */
int
hca_mcast(struct ibv_qp *qp, const union ibv_gid *gid, int attach)
{
	return ib_mcast_change(to_qp(qp), gid, attach);
}
