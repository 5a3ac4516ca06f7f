/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Verbs: protection domains, memory regions and windows, completion
 * queues, queue pairs, shared receive queues and address handles. What
 * verbs itself defines is checked here (comp vectors, the CQs' context,
 * the return conventions); the HCA does the rest (hca_if.h).
 */
#include <errno.h>

#include "verbs_priv.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* A pointer result: NULL with errno set by the HCA. An int: 0 or errno. */

/*
 * An imported PD (share.c) stands for its original: objects are made in
 * the original (dpib_pd), whose context they then have.
 */
struct ibv_pd *
ibv_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = hca_alloc_pd(ctx);

	if (pd != NULL)
		dpib_share_pd(pd);
	return pd;
}

int
ibv_dealloc_pd(struct ibv_pd *pd)
{
	int err = dpib_share_pd_dealloc(pd);

	if (err == 0)
		err = hca_dealloc_pd(pd);
	if (err == 0)
		dpib_share_pd_gone(pd);
	return err;
}

/* An MR's handle is its lkey (ibv_import_mr). */
struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
		 unsigned int access)
{
	struct ibv_mr *mr;

	pd = dpib_pd(pd);
	mr = hca_reg_mr(ctx_hw(pd->context), pd, addr, length, iova, access);
	if (mr != NULL)
		mr->handle = mr->lkey;
	return mr;
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

/*
 * ibv_rereg_mr(3), as rdma-core splits its failures: what libibverbs checks
 * itself (unknown flags, a translation without address or length, access
 * flags without IBV_REREG_MR_CHANGE_ACCESS) is IBV_REREG_MR_ERR_INPUT; what
 * the provider refuses (no flags, rights, memory, a bound window) is
 * IBV_REREG_MR_ERR_CMD, as a kernel command failing with rxe or mlx5. In
 * both cases errno says why and the MR is unchanged.
 */
int
ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
	     size_t length, int access)
{
	int err;

	if ((flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
	     (addr == NULL || length == 0)) ||
	    (access != 0 && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (dpib_mr_imported(mr)) {
		errno = EINVAL;		/* the creator's to change */
		return IBV_REREG_MR_ERR_INPUT;
	}
	err = hca_rereg_mr(ctx_hw(mr->context), mr, flags, dpib_pd(pd), addr,
			   length, access);
	if (err) {
		errno = err;
		return IBV_REREG_MR_ERR_CMD;
	}
	mr->handle = mr->lkey;
	return 0;
}

/* An import is released by ibv_unimport_mr; its creator deregisters. */
int
ibv_dereg_mr(struct ibv_mr *mr)
{
	if (dpib_mr_imported(mr))
		return EINVAL;
	return hca_dereg_mr(ctx_hw(mr->context), mr);
}

/* ibv_alloc_mw(3), through context ops.alloc_mw: type 1 or 2, else EINVAL. */
struct ibv_mw *
dpib_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	pd = dpib_pd(pd);
	return hca_alloc_mw(ctx_hw(pd->context), pd, type);
}

/* ibv_dealloc_mw(3): a bound window is invalidated first. */
int
dpib_dealloc_mw(struct ibv_mw *mw)
{
	return hca_dealloc_mw(ctx_hw(mw->context), mw);
}

struct ibv_cq *
ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
	      struct ibv_comp_channel *channel, int comp_vector)
{
	if (comp_vector < 0 || comp_vector >= ctx->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	return hca_create_cq(ctx_hw(ctx), ctx, cqe, cq_context, channel,
			     channel != NULL ? to_dchannel(channel)->evq : NULL,
			     to_dctx(ctx)->async);
}

int
ibv_destroy_cq(struct ibv_cq *cq)
{
	return hca_destroy_cq(cq);
}

int
ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	return hca_resize_cq(cq, cqe);
}

/* Its CQs (and SRQ) from the PD's context, or one of the same file. */
struct ibv_qp *
ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	if (init->send_cq == NULL || init->recv_cq == NULL ||
	    !dpib_same_file(init->send_cq->context, pd->context) ||
	    !dpib_same_file(init->recv_cq->context, pd->context) ||
	    (init->srq != NULL &&
	     !dpib_same_file(init->srq->context, pd->context))) {
		errno = EINVAL;
		return NULL;
	}
	pd = dpib_pd(pd);
	return hca_create_qp(ctx_hw(pd->context), pd, init,
			     to_dctx(pd->context)->async);
}

/* The HCA checks the CQs and that QP 1 is UD (EINVAL). */
struct ibv_qp *
dpib_create_gsi_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	return hca_create_gsi_qp(ctx_hw(pd->context), pd, init,
				 to_dctx(pd->context)->async);
}

int
ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	return hca_modify_qp(qp, attr, mask);
}

int
ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
	     struct ibv_qp_init_attr *init)
{
	int ret = hca_query_qp(qp, attr, mask, init);

	/* As rdma-core: the state read is the QP's too (pyverbs reads
	 * qp->state; the engine may have moved it to Error).
	 */
	if (ret == 0 && (mask & IBV_QP_STATE))
		qp->state = attr->qp_state;
	return ret;
}

int
ibv_destroy_qp(struct ibv_qp *qp)
{
	return hca_destroy_qp(qp);
}

struct ibv_srq *
ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	pd = dpib_pd(pd);
	return hca_create_srq(ctx_hw(pd->context), pd, init,
			      to_dctx(pd->context)->async);
}

int
ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	return hca_modify_srq(srq, attr, mask);
}

int
ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	return hca_query_srq(srq, attr);
}

int
ibv_destroy_srq(struct ibv_srq *srq)
{
	return hca_destroy_srq(srq);
}

struct ibv_ah *
ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	pd = dpib_pd(pd);
	return hca_create_ah(ctx_hw(pd->context), pd, attr);
}

int
ibv_destroy_ah(struct ibv_ah *ah)
{
	return hca_destroy_ah(ah);
}

/* The address of the sender of a UD receive (the HCA reads the GRH). */
int
ibv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port_num,
		    struct ibv_wc *wc, struct ibv_grh *grh,
		    struct ibv_ah_attr *ah_attr)
{
	return hca_init_ah_from_wc(ctx_hw(ctx), port_num, wc, grh, ah_attr);
}

struct ibv_ah *
ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
		      struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0)
		return NULL;
	return ibv_create_ah(pd, &attr);
}

int
ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)lid;	/* RoCE has no LIDs */
	return hca_mcast(qp, gid, 1);
}

int
ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)lid;
	return hca_mcast(qp, gid, 0);
}
