/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Completion queues: rings of struct ibv_wc, produced by the engine and
 * consumed by ibv_poll_cq. The poll lock serialises application threads
 * only; the engine never takes it.
 */
#include <errno.h>
#include <rte_malloc.h>

#include "ib_hca.h"

int
ib_cq_create(struct ib_dev *dev, int cqe, struct ib_cq **out)
{
	struct ib_cq *cq;

	if (cqe < 1 || cqe > IB_MAX_CQE)
		return EINVAL;
	cq = rte_zmalloc("ib_cq", sizeof(*cq), RTE_CACHE_LINE_SIZE);
	if (cq == NULL)
		return ENOMEM;
	if (ib_queue_init(&cq->q, cqe, sizeof(struct ibv_wc),
			  SOCKET_ID_ANY) != 0) {
		rte_free(cq);
		return ENOMEM;
	}
	cq->dev = dev;
	cq->ibv.cqe = cq->q.size;
	rte_spinlock_init(&cq->poll_lock);
	*out = cq;
	return 0;
}

int
ib_cq_destroy(struct ib_cq *cq)
{
	ib_engine_quiesce(cq->dev);
	ib_queue_free(&cq->q);
	rte_free(cq);
	return 0;
}

int
ib_cq_poll(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct ib_cq *cq = to_cq(ibcq);
	uint32_t avail, i, cons;

	if (unlikely(n < 0))
		return -EINVAL;
	rte_spinlock_lock(&cq->poll_lock);
	avail = RTE_MIN(ib_queue_count(&cq->q), (uint32_t)n);
	cons = cq->q.cons;
	for (i = 0; i < avail; i++)
		wc[i] = *(struct ibv_wc *)ib_queue_slot(&cq->q, cons + i);
	if (avail)
		ib_queue_consume(&cq->q, cons + avail);
	rte_spinlock_unlock(&cq->poll_lock);
	return avail;
}

/* Engine only. A full CQ is an overrun (IBA 11.4.2.1): the entry is lost. */
int
ib_cq_push(struct ib_cq *cq, const struct ibv_wc *wc)
{
	uint32_t prod = cq->q.prod;

	if (unlikely(ib_queue_room(&cq->q) == 0)) {
		ib_count(cq->dev, IB_CNT_CQ_OVERRUN);
		return -ENOSPC;
	}
	*(struct ibv_wc *)ib_queue_slot(&cq->q, prod) = *wc;
	ib_queue_publish(&cq->q, prod + 1);
	return 0;
}
