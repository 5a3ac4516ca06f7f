/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Extended QP post API (ibv_create_qp_ex, ibv_wr_*(3)). wr_start takes the
 * SQ lock; each WR is built as a struct ibv_send_wr, its SGEs or inline
 * bytes copied as the setters run, and written into the SQ past the
 * producer index by the same code as ibv_post_send when the next WR starts
 * or at wr_complete, so setters may come in any order. wr_complete
 * publishes the batch only if every WR in it was valid: a batch is posted
 * whole or not at all. wr_abort simply never publishes it.
 */
#include <errno.h>
#include <string.h>

#include "ib_hca.h"


/* send_ops_flags this QP can honour, as the WR opcode each one posts. */
static const struct {
	uint64_t flag;
	enum ibv_wr_opcode opcode;
} send_ops[] = {
	{ IBV_QP_EX_WITH_RDMA_WRITE, IBV_WR_RDMA_WRITE },
	{ IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM },
	{ IBV_QP_EX_WITH_SEND, IBV_WR_SEND },
	{ IBV_QP_EX_WITH_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM },
	{ IBV_QP_EX_WITH_RDMA_READ, IBV_WR_RDMA_READ },
	{ IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP },
	{ IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD },
	{ IBV_QP_EX_WITH_LOCAL_INV, IBV_WR_LOCAL_INV },
	{ IBV_QP_EX_WITH_BIND_MW, IBV_WR_BIND_MW },
	{ IBV_QP_EX_WITH_SEND_WITH_INV, IBV_WR_SEND_WITH_INV },
	{ IBV_QP_EX_WITH_ATOMIC_WRITE, IBV_WR_ATOMIC_WRITE },
};

static inline struct ib_qp *
to_xqp(struct ibv_qp_ex *qpx)
{
	return container_of(qpx, struct ib_qp, ibv_ex);
}

/* The first error of a batch is the one wr_complete reports. */
static void
batch_fail(struct ib_qp *qp, int err)
{
	qp->wrb.open = 0;
	if (qp->wrb.err == 0)
		qp->wrb.err = err;
}

/* Write the WR being built into the next SQ slot, unpublished. */
static void
stage(struct ib_qp *qp)
{
	struct ib_wr_batch *b = &qp->wrb;
	int err;

	b->open = 0;
	if (b->err != 0)
		return;		/* the batch is dropped anyway */
	err = ib_post_send_stage(qp, qp->sq.prod + b->n, &b->wr);
	if (err)
		batch_fail(qp, err);
	else
		b->n++;
}

/* A WR builder: the previous WR goes into the SQ first. */
static struct ibv_send_wr *
begin(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode)
{
	struct ib_qp *qp = to_xqp(qpx);
	struct ibv_send_wr *wr = &qp->wrb.wr;

	if (qp->wrb.open)
		stage(qp);
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = qpx->wr_id;
	wr->opcode = opcode;
	/* Inline or not is the data setter's choice, not a flag. */
	wr->send_flags = qpx->wr_flags & ~IBV_SEND_INLINE;
	qp->wrb.open = 1;
	return wr;
}

static void
wr_send(struct ibv_qp_ex *qpx)
{
	begin(qpx, IBV_WR_SEND);
}

static void
wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	begin(qpx, IBV_WR_SEND_WITH_IMM)->imm_data = imm_data;
}

static void
rdma_op(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode, uint32_t rkey,
	uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr *wr = begin(qpx, opcode);

	wr->wr.rdma.remote_addr = remote_addr;
	wr->wr.rdma.rkey = rkey;
	wr->imm_data = imm_data;
}

static void
wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	rdma_op(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void
wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
		  __be32 imm_data)
{
	rdma_op(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm_data);
}

static void
wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	rdma_op(qpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void
atomic_op(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode, uint32_t rkey,
	  uint64_t remote_addr, uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = begin(qpx, opcode);

	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
	wr->wr.atomic.rkey = rkey;
}

static void
wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
		  uint64_t compare, uint64_t swap)
{
	atomic_op(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare,
		  swap);
}

static void
wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
		    uint64_t remote_addr, uint64_t add)
{
	atomic_op(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

/*
 * Data setters: one per WR (ibv_wr_post(3)). The SGEs and inline bytes are
 * copied before returning, so the caller may reuse its list and buffers.
 */
static void
wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
		const struct ibv_sge *sg_list)
{
	struct ib_qp *qp = to_xqp(qpx);
	struct ib_wr_batch *b = &qp->wrb;

	if (!b->open || num_sge > qp->max_send_sge) {
		batch_fail(qp, EINVAL);
		return;
	}
	if (num_sge != 0)
		memcpy(b->sge, sg_list, num_sge * sizeof(*sg_list));
	b->wr.sg_list = b->sge;
	b->wr.num_sge = num_sge;
	b->wr.send_flags &= ~IBV_SEND_INLINE;
}

static void
wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
	   uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qpx, 1, &sge);
}

static int
takes_inline(enum ibv_wr_opcode opcode)
{
	return opcode == IBV_WR_SEND || opcode == IBV_WR_SEND_WITH_IMM ||
	       opcode == IBV_WR_SEND_WITH_INV || opcode == IBV_WR_RDMA_WRITE ||
	       opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static void
wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
			const struct ibv_data_buf *buf_list)
{
	struct ib_qp *qp = to_xqp(qpx);
	struct ib_wr_batch *b = &qp->wrb;
	size_t room = RTE_MIN((size_t)qp->max_inline, sizeof(b->inline_data));
	size_t total = 0, i;

	if (!b->open || !takes_inline(b->wr.opcode)) {
		batch_fail(qp, EINVAL);
		return;
	}
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > room - total) {
			batch_fail(qp, EINVAL);
			return;
		}
		memcpy(b->inline_data + total, buf_list[i].addr,
		       buf_list[i].length);
		total += buf_list[i].length;
	}
	/* ib_post_send_stage copies it on into the SQ slot as inline data;
	 * with no bytes there is no SGE.
	 */
	b->inline_sge.addr = (uintptr_t)b->inline_data;
	b->inline_sge.length = total;
	b->wr.sg_list = &b->inline_sge;
	b->wr.num_sge = total != 0;
	b->wr.send_flags |= IBV_SEND_INLINE;
}

static void
wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &buf);
}

/* The QP setter of UD (ibv_wr_post(3)); other types have no use for it. */
static void
wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
	       uint32_t remote_qkey)
{
	struct ib_qp *qp = to_xqp(qpx);
	struct ibv_send_wr *wr = &qp->wrb.wr;

	if (!qp->wrb.open || qp->ibv.qp_type != IBV_QPT_UD) {
		batch_fail(qp, EINVAL);
		return;
	}
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

/*
 * A type 2 window bound through the SQ to @rkey (same index as mw->rkey,
 * a new tag: ibv_inc_rkey). No data setter follows.
 */
static void
wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
	   const struct ibv_mw_bind_info *bind_info)
{
	struct ibv_send_wr *wr = begin(qpx, IBV_WR_BIND_MW);

	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	if (bind_info != NULL)
		wr->bind_mw.bind_info = *bind_info;
	else
		batch_fail(to_xqp(qpx), EINVAL);
}

static void
wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	begin(qpx, IBV_WR_LOCAL_INV)->invalidate_rkey = invalidate_rkey;
}

static void
wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	begin(qpx, IBV_WR_SEND_WITH_INV)->invalidate_rkey = invalidate_rkey;
}

/*
 * IBA 1.5 ATOMIC WRITE: the 8 bytes at @atomic_wr are copied now and sent
 * as the WR's inline data; no data setter follows.
 */
static void
wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
		const void *atomic_wr)
{
	struct ib_qp *qp = to_xqp(qpx);
	struct ib_wr_batch *b = &qp->wrb;

	rdma_op(qpx, IBV_WR_ATOMIC_WRITE, rkey, remote_addr, 0);
	if (atomic_wr == NULL) {
		batch_fail(qp, EINVAL);
		return;
	}
	memcpy(b->inline_data, atomic_wr, 8);
	b->inline_sge.addr = (uintptr_t)b->inline_data;
	b->inline_sge.length = 8;
	b->wr.sg_list = &b->inline_sge;
	b->wr.num_sge = 1;
	b->wr.send_flags |= IBV_SEND_INLINE;
}

/* TSO and XRC do not exist in dpib: the batch fails with EOPNOTSUPP at
 * wr_complete, where a NULL op would have crashed the caller.
 */
static void
refuse(struct ibv_qp_ex *qpx)
{
	batch_fail(to_xqp(qpx), EOPNOTSUPP);
}

static void
wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	refuse(qpx);
}

static void
wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	refuse(qpx);
}

/*
 * ibv_wr_post(3) CONCURRENCY: wr_start..wr_complete is a per-QP critical
 * section; being in the SQ's (ib_sq_enter) also keeps ibv_post_send out of
 * the slots.
 */
static void
wr_start(struct ibv_qp_ex *qpx)
{
	struct ib_qp *qp = to_xqp(qpx);

	qp->wrb.biased = ib_sq_enter(qp);
	qp->wrb.n = 0;
	qp->wrb.open = 0;
	qp->wrb.err = 0;
}

static int
wr_complete(struct ibv_qp_ex *qpx)
{
	struct ib_qp *qp = to_xqp(qpx);
	struct ib_wr_batch *b = &qp->wrb;
	int err;

	if (b->open)
		stage(qp);
	err = b->err;
	if (err == 0 && b->n != 0) {
		ib_queue_publish(&qp->sq, qp->sq.prod + b->n);
		ib_engine_doorbell(qp);
	}
	ib_sq_exit(qp, qp->wrb.biased);
	return err;
}

static void
wr_abort(struct ibv_qp_ex *qpx)
{
	struct ib_qp *qp = to_xqp(qpx);

	qp->wrb.open = 0;
	ib_sq_exit(qp, qp->wrb.biased);
}

static void
set_ops(struct ibv_qp_ex *qpx)
{
	qpx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = wr_atomic_fetch_add;
	qpx->wr_bind_mw = wr_bind_mw;
	qpx->wr_local_inv = wr_local_inv;
	qpx->wr_rdma_read = wr_rdma_read;
	qpx->wr_rdma_write = wr_rdma_write;
	qpx->wr_rdma_write_imm = wr_rdma_write_imm;
	qpx->wr_send = wr_send;
	qpx->wr_send_imm = wr_send_imm;
	qpx->wr_send_inv = wr_send_inv;
	qpx->wr_send_tso = wr_send_tso;
	qpx->wr_set_ud_addr = wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = wr_set_xrc_srqn;
	qpx->wr_set_inline_data = wr_set_inline_data;
	qpx->wr_set_inline_data_list = wr_set_inline_data_list;
	qpx->wr_set_sge = wr_set_sge;
	qpx->wr_set_sge_list = wr_set_sge_list;
	qpx->wr_start = wr_start;
	qpx->wr_complete = wr_complete;
	qpx->wr_abort = wr_abort;
	qpx->wr_atomic_write = wr_atomic_write;
}

/* ibv_wr_post(3): a QP that cannot post every requested op is refused. */
static int
check_send_ops(enum ibv_qp_type type, uint64_t flags)
{
	unsigned int i;

	for (i = 0; i < RTE_DIM(send_ops); i++) {
		if (!(flags & send_ops[i].flag))
			continue;
		if (!ib_wr_opcode_valid(type, send_ops[i].opcode))
			return EOPNOTSUPP;
		flags &= ~send_ops[i].flag;
	}
	return flags != 0 ? EOPNOTSUPP : 0;
}

/*
 * Every comp_mask bit rdma-core 44 knows is accepted when its field asks
 * for nothing dpib lacks (programs often pass the mask with zero values);
 * a real request for XRC, create flags, TSO or RSS is EOPNOTSUPP, a bit
 * rdma-core does not know EINVAL.
 */
static int
check_comp_mask(const struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
		IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
		IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |
		IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	uint32_t m = attr->comp_mask;

	if (m & ~known)
		return EINVAL;
	if (((m & IBV_QP_INIT_ATTR_XRCD) && attr->xrcd != NULL) ||
	    ((m & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags != 0) ||
	    ((m & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) &&
	     attr->max_tso_header != 0) ||
	    ((m & IBV_QP_INIT_ATTR_IND_TABLE) && attr->rwq_ind_tbl != NULL) ||
	    ((m & IBV_QP_INIT_ATTR_RX_HASH) &&
	     (attr->rx_hash_conf.rx_hash_function != 0 ||
	      attr->rx_hash_conf.rx_hash_fields_mask != 0)))
		return EOPNOTSUPP;
	return 0;
}

/*
 * What ibv_create_qp_ex may ask beyond ibv_create_qp: 0, or the errno
 * refusing it (the PD is the caller's to check).
 */
int
ib_qp_ex_check(const struct ibv_qp_init_attr_ex *attr)
{
	int err = check_comp_mask(attr);

	if (err)
		return err;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		return check_send_ops(attr->qp_type, attr->send_ops_flags);
	return 0;
}

/* Give a QP the ibv_wr_* ops (every one its type supports). */
void
ib_qp_ex_enable(struct ibv_qp *ibqp)
{
	set_ops(&to_qp(ibqp)->ibv_ex);
}

/* The extended view of a QP that has the ibv_wr_* ops, else NULL. */
struct ibv_qp_ex *
ib_qp_ex(struct ibv_qp *ibqp)
{
	struct ib_qp *qp = to_qp(ibqp);

	return qp->ibv_ex.wr_start != NULL ? &qp->ibv_ex : NULL;
}
