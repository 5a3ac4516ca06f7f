/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * ibv_create_qp_ex and ibv_qp_to_qp_ex; the ibv_wr_* batch itself is the
 * driver's (ib_qp_ex.c).
 */
#include <errno.h>

#include "verbs_priv.h"

static int
check_init(struct ibv_context *ctx, const struct ibv_qp_init_attr_ex *attr)
{
	int err = ib_qp_ex_check(attr);

	if (err)
		return err;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL ||
	    !dpib_same_file(attr->pd->context, ctx))
		return EINVAL;
	return 0;
}

/*
 * Created by ibv_create_qp itself, so both accept the same QPs. Only a QP
 * asking for IBV_QP_INIT_ATTR_SEND_OPS_FLAGS gets the ibv_wr_* ops; every
 * op this QP type supports is installed, as applications may post more
 * than they declared.
 */
struct ibv_qp *
dpib_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr init = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
	};
	struct ibv_qp *ibqp;
	int err = check_init(ctx, attr);

	if (err) {
		errno = err;
		return NULL;
	}
	ibqp = ibv_create_qp(attr->pd, &init);
	if (ibqp == NULL)
		return NULL;
	attr->cap = init.cap;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		ib_qp_ex_enable(ibqp);
	return ibqp;
}

struct ibv_qp_ex *
ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	return ib_qp_ex(ibqp);
}
