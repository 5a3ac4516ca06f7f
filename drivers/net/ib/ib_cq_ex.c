/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Extended CQ (ibv_create_cq_ex): an iterator over the same ring of struct
 * ibv_wc that ibv_poll_cq drains. start_poll takes the poll lock and
 * next_poll moves a private position; end_poll hands the slots back to the
 * engine in one release store and unlocks.
 *
 * Completion timestamps are the engine's clock, the TSC, read when it
 * pushed the entry (ib_cq.c keeps them beside the ring); the wall-clock
 * reading converts that stamp.
 */
#include <errno.h>
#include <limits.h>
#include <rte_cycles.h>

#include "ib_hca.h"

#define CQ_EX_TS_FLAGS		(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
				 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
/* Completion fields this CQ can report: struct ibv_wc's and the stamps. */
#define CQ_EX_WC_FLAGS		(IBV_WC_STANDARD_FLAGS | CQ_EX_TS_FLAGS)
#define CQ_EX_COMP_MASK		IBV_CQ_INIT_ATTR_MASK_FLAGS
/* A hint that the poll lock is not needed; taking it anyway is correct. */
#define CQ_EX_CREATE_FLAGS	IBV_CREATE_CQ_ATTR_SINGLE_THREADED

static inline struct ib_cq *
to_xcq(struct ibv_cq_ex *cqx)
{
	return container_of(cqx, struct ib_cq, ibv_ex);
}

static inline const struct ibv_wc *
cur(struct ibv_cq_ex *cqx)
{
	return to_xcq(cqx)->ex_cur;
}

/* Make the entry found current, or return ENOENT when there is none. */
static int
load_entry(struct ibv_cq_ex *cqx)
{
	struct ib_cq *cq = to_xcq(cqx);
	const struct ibv_wc *e = ib_cq_next(cq, &cq->ex_pos);

	cq->ex_cur = e;
	if (e == NULL)
		return ENOENT;
	cqx->status = e->status;
	cqx->wr_id = e->wr_id;
	return 0;
}

static int
start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	struct ib_cq *cq = to_xcq(cqx);

	if (unlikely(attr == NULL || attr->comp_mask != 0))
		return EINVAL;
	if (ib_engine_inline)
		ib_engine_progress_cq(cq);
	rte_spinlock_lock(&cq->poll_lock);
	cq->ex_pos = cq->q.cons;
	if (load_entry(cqx) == 0)
		return 0;
	/* Empty: end_poll will not be called, so release the purged
	 * entries skipped on the way and the lock here.
	 */
	if (cq->ex_pos != cq->q.cons)
		ib_queue_consume(&cq->q, cq->ex_pos);
	ib_unlock(&cq->poll_lock);
	return ENOENT;
}

static int
next_poll(struct ibv_cq_ex *cqx)
{
	struct ib_cq *cq = to_xcq(cqx);

	/* After ENOENT there is no current entry to step over. */
	if (cq->ex_cur != NULL)
		cq->ex_pos++;
	return load_entry(cqx);
}

static void
end_poll(struct ibv_cq_ex *cqx)
{
	struct ib_cq *cq = to_xcq(cqx);

	/* After ENOENT from next_poll there is no current entry to consume. */
	ib_queue_consume(&cq->q, cq->ex_pos + (cq->ex_cur != NULL));
	cq->ex_cur = NULL;
	ib_unlock(&cq->poll_lock);
}

static enum ibv_wc_opcode
read_opcode(struct ibv_cq_ex *cqx)
{
	return cur(cqx)->opcode;
}

static uint32_t
read_vendor_err(struct ibv_cq_ex *cqx)
{
	return cur(cqx)->vendor_err;
}

static uint32_t
read_byte_len(struct ibv_cq_ex *cqx)
{
	return cur(cqx)->byte_len;
}

/* Also ibv_wc_read_invalidated_rkey: the same word of struct ibv_wc. */
static __be32
read_imm_data(struct ibv_cq_ex *cqx)
{
	return cur(cqx)->imm_data;
}

static uint32_t
read_qp_num(struct ibv_cq_ex *cqx)
{
	return cur(cqx)->qp_num;
}

static uint32_t
read_src_qp(struct ibv_cq_ex *cqx)
{
	return cur(cqx)->src_qp;
}

static unsigned int
read_wc_flags(struct ibv_cq_ex *cqx)
{
	return cur(cqx)->wc_flags;
}

static uint32_t
read_slid(struct ibv_cq_ex *cqx)
{
	return cur(cqx)->slid;
}

static uint8_t
read_sl(struct ibv_cq_ex *cqx)
{
	return cur(cqx)->sl;
}

static uint8_t
read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return cur(cqx)->dlid_path_bits;
}

static uint64_t
read_completion_ts(struct ibv_cq_ex *cqx)
{
	struct ib_cq *cq = to_xcq(cqx);

	return cq->ts[cq->ex_pos & cq->q.mask];
}

static uint64_t
read_completion_wallclock_ns(struct ibv_cq_ex *cqx)
{
	return ib_cq_ts_to_ns(to_xcq(cqx), read_completion_ts(cqx));
}

/* What ibv_create_cq_ex may ask: 0, or the errno refusing it. */
int
ib_cq_ex_check(const struct ibv_cq_init_attr_ex *attr)
{
	if (attr->cqe > INT_MAX || attr->comp_vector > INT_MAX)
		return EINVAL;
	if (attr->wc_flags & ~(uint64_t)CQ_EX_WC_FLAGS)
		return EOPNOTSUPP;	/* CVLAN, flow tag, TM */
	if (attr->comp_mask & ~CQ_EX_COMP_MASK)
		return EOPNOTSUPP;	/* parent domain */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~CQ_EX_CREATE_FLAGS))
		return EOPNOTSUPP;
	return 0;
}

/*
 * The readers of fields outside CQ_EX_WC_FLAGS stay NULL: a CQ asking for
 * them is refused, and verbs allows reading only the fields asked for (so
 * the timestamp readers exist only on CQs that asked for them).
 */
static void
set_ops(struct ibv_cq_ex *cqx, uint64_t wc_flags)
{
	cqx->start_poll = start_poll;
	cqx->next_poll = next_poll;
	cqx->end_poll = end_poll;
	cqx->read_opcode = read_opcode;
	cqx->read_vendor_err = read_vendor_err;
	cqx->read_byte_len = read_byte_len;
	cqx->read_imm_data = read_imm_data;
	cqx->read_qp_num = read_qp_num;
	cqx->read_src_qp = read_src_qp;
	cqx->read_wc_flags = read_wc_flags;
	cqx->read_slid = read_slid;
	cqx->read_sl = read_sl;
	cqx->read_dlid_path_bits = read_dlid_path_bits;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		cqx->read_completion_ts = read_completion_ts;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		cqx->read_completion_wallclock_ns =
			read_completion_wallclock_ns;
}

/*
 * Turn a CQ made by ibv_create_cq into an extended one reporting
 * @wc_flags (checked by ib_cq_ex_check): the stamps it asked for, the
 * iterator. Returns 0 or an errno.
 */
int
ib_cq_ex_enable(struct ibv_cq *ibcq, uint64_t wc_flags)
{
	struct ib_cq *cq = to_cq(ibcq);
	int err;

	if (wc_flags & CQ_EX_TS_FLAGS) {
		err = ib_cq_timestamps(cq);
		if (err)
			return err;
	}
	set_ops(&cq->ibv_ex, wc_flags);
	return 0;
}

struct ibv_cq_ex *
ib_cq_ex(struct ibv_cq *ibcq)
{
	return &to_cq(ibcq)->ibv_ex;
}

/* The clock completions are stamped with (TSC ticks). */
uint64_t
ib_clock_raw(void)
{
	return rte_rdtsc();
}
