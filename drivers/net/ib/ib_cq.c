/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Completion queues: rings of struct ibv_wc, produced by the engine and
 * consumed by ibv_poll_cq. The poll lock serialises application threads
 * only; the engine never takes it. Arming (ibv_req_notify_cq) is one shot:
 * the engine disarms with an exchange and queues one event on the channel.
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
	__atomic_store_n(&cq->armed, IB_CQ_DISARMED, __ATOMIC_RELEASE);
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
	int got = 0;

	if (unlikely(n < 0))
		return -EINVAL;
	if (ib_engine_inline)
		ib_engine_progress();
	rte_spinlock_lock(&cq->poll_lock);
	avail = ib_queue_count(&cq->q);
	cons = cq->q.cons;
	for (i = 0; i < avail && got < n; i++) {
		const struct ibv_wc *e = ib_queue_slot(&cq->q, cons + i);

		if (likely(e->qp_num != IB_CQE_PURGED))
			wc[got++] = *e;
	}
	if (i)
		ib_queue_consume(&cq->q, cons + i);
	rte_spinlock_unlock(&cq->poll_lock);
	return got;
}

/* A completion event, if the CQ is armed for this completion (IBA 11.4.2.2). */
static void
cq_notify(struct ib_cq *cq, const struct ibv_wc *wc, int solicited)
{
	uint32_t armed = __atomic_load_n(&cq->armed, __ATOMIC_ACQUIRE);
	struct ib_cq_event ev = { .cq = cq };

	if (armed == IB_CQ_ARM_SOLICITED && !solicited &&
	    wc->status == IBV_WC_SUCCESS)
		return;
	if (__atomic_exchange_n(&cq->armed, IB_CQ_DISARMED,
				__ATOMIC_ACQ_REL) == IB_CQ_DISARMED)
		return;
	if (cq->channel != NULL)
		ib_evq_push(cq->channel, &ev);
}

/* Engine only. A full CQ is an overrun (IBA 11.4.2.1): the entry is lost. */
int
ib_cq_push(struct ib_cq *cq, const struct ibv_wc *wc, int solicited)
{
	uint32_t prod = cq->q.prod;

	if (unlikely(ib_queue_room(&cq->q) == 0)) {
		ib_count(cq->dev, IB_CNT_CQ_OVERRUN);
		if (cq->async != NULL)
			ib_async_event(cq->async, IBV_EVENT_CQ_ERR, cq);
		return -ENOSPC;
	}
	*(struct ibv_wc *)ib_queue_slot(&cq->q, prod) = *wc;
	ib_queue_publish(&cq->q, prod + 1);
	if (unlikely(__atomic_load_n(&cq->armed, __ATOMIC_RELAXED)))
		cq_notify(cq, wc, solicited);
	return 0;
}

int
ib_cq_req_notify(struct ibv_cq *ibcq, int solicited_only)
{
	struct ib_cq *cq = to_cq(ibcq);

	__atomic_store_n(&cq->armed, solicited_only ? IB_CQ_ARM_SOLICITED :
			 IB_CQ_ARM_NEXT, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Transition to Reset (IBA 10.3.1.1): the QP's completions leave the CQ.
 * They are marked, not moved, because the engine keeps producing behind
 * them; the caller holds no engine lock and the engine writes only new
 * slots, so marking under the poll lock is safe.
 */
void
ib_cq_purge_qp(struct ib_cq *cq, uint32_t qpn)
{
	uint32_t i, n;

	rte_spinlock_lock(&cq->poll_lock);
	n = ib_queue_count(&cq->q);
	for (i = 0; i < n; i++) {
		struct ibv_wc *e = ib_queue_slot(&cq->q, cq->q.cons + i);

		if (e->qp_num == qpn)
			e->qp_num = IB_CQE_PURGED;
	}
	rte_spinlock_unlock(&cq->poll_lock);
}

struct cq_resize {
	struct ib_cq *cq;
	struct ib_queue q;
	int err;
};

/* Engine: move the pending entries into the new ring and switch. */
static void
cq_resize_apply(void *arg)
{
	struct cq_resize *r = arg;
	struct ib_cq *cq = r->cq;
	uint32_t n = ib_queue_count(&cq->q), i;

	if (n > r->q.size) {
		r->err = EINVAL;
		return;
	}
	for (i = 0; i < n; i++)
		*(struct ibv_wc *)ib_queue_slot(&r->q, i) =
			*(struct ibv_wc *)ib_queue_slot(&cq->q, cq->q.cons + i);
	ib_queue_free(&cq->q);
	cq->q = r->q;
	cq->q.prod = cq->q.prod_cache = n;
	cq->ibv.cqe = cq->q.size;
	r->err = 0;
}

/* ibv_resize_cq: never below the completions it holds now (EINVAL). */
int
ib_cq_resize(struct ib_cq *cq, int cqe)
{
	struct cq_resize r = { .cq = cq };
	int err;

	if (cqe < 1 || cqe > IB_MAX_CQE)
		return EINVAL;
	if (ib_queue_init(&r.q, cqe, sizeof(struct ibv_wc), SOCKET_ID_ANY) != 0)
		return ENOMEM;
	rte_spinlock_lock(&cq->poll_lock);
	err = ib_engine_exec(cq->dev, cq_resize_apply, &r);
	rte_spinlock_unlock(&cq->poll_lock);
	if (err == 0)
		err = r.err;
	if (err)
		ib_queue_free(&r.q);
	return err;
}
