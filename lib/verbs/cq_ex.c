/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * ibv_create_cq_ex and ibv_query_rt_values_ex; the extended CQ itself (the
 * iterator, the timestamps) is the driver's (ib_cq_ex.c).
 */
#include <errno.h>

#include "verbs_priv.h"

/*
 * Created by ibv_create_cq itself, so that the two accept the same CQ sizes,
 * vectors and channels; the result also works with ibv_poll_cq and
 * ibv_destroy_cq through ibv_cq_ex_to_cq.
 */
struct ibv_cq_ex *
dpib_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq *ibcq;
	int err = ib_cq_ex_check(attr);

	if (err) {
		errno = err;
		return NULL;
	}
	ibcq = ibv_create_cq(ctx, (int)attr->cqe, attr->cq_context,
			     attr->channel, (int)attr->comp_vector);
	if (ibcq == NULL)
		return NULL;
	err = ib_cq_ex_enable(ibcq, attr->wc_flags);
	if (err) {
		ibv_destroy_cq(ibcq);
		errno = err;
		return NULL;
	}
	return ib_cq_ex(ibcq);
}

/*
 * ibv_query_rt_values_ex: the clock completions are stamped with, all of it
 * in tv_nsec as mlx5 reports its raw clock. The man page leaves unknown
 * comp_mask bits open; like mlx5 we refuse them (EINVAL) rather than clear
 * them, so a caller asking for a value from a newer header cannot mistake
 * an unfilled structure for an answer.
 */
int
dpib_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *values)
{
	(void)ctx;
	if (values == NULL || (values->comp_mask & ~IBV_VALUES_MASK_RAW_CLOCK))
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = (long)ib_clock_raw();
	}
	/* What was asked is exactly what was filled. */
	return 0;
}
