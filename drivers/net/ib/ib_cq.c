/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Completion queues: rings of struct ibv_wc, produced by the engine and
 * consumed by ibv_poll_cq. The poll lock serialises application threads
 * only; the engine never takes it. Arming (ibv_req_notify_cq) is one shot:
 * the engine disarms with an exchange and queues one event on the channel.
 *
 * A CQ created with completion timestamps has a second ring, ts, indexed
 * like q: the TSC when the engine pushed each entry. The ring of struct
 * ibv_wc keeps its layout, so ibv_poll_cq, purging and resizing read it as
 * before.
 */
#include <errno.h>
#include <time.h>
#include <rte_cycles.h>
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
	rte_spinlock_init(&cq->prod_lock);
	*out = cq;
	return 0;
}

int
ib_cq_destroy(struct ib_cq *cq)
{
	__atomic_store_n(&cq->armed, IB_CQ_DISARMED, __ATOMIC_RELEASE);
	ib_engine_quiesce(cq->dev);
	ib_queue_free(&cq->q);
	rte_free(cq->ts);
	rte_free(cq);
	return 0;
}

/*
 * Inline mode: a UC QP's send completes as its packet leaves, so a poll
 * returns it at once. A program that then waits outside verbs for its
 * peer's answer (ib_write_lat -c UC spins on its buffer) has no call left
 * that would take the answer in, and its engine's loop, on two CPUs that
 * both programs keep busy, got a CPU 20-150 us later (perf sched; typical
 * half round trips of 50 us over veth, 143 over memif). RC has no such
 * gap: the poll waits for the ACK, which its peer holds back behind the
 * answer (ib_engine.c's tx_settle). So a poll whose last completion is a
 * UC send stays, running passes, while the QPs completing here are known
 * to answer: until the end of a UC WRITE arrives for one of them (a
 * SEND's answer has a receive completion to poll for), or 8 gaps + 30 us
 * pass, at most IB_LINGER_WAIT_US: a peer's answer is late when its
 * program or loop was preempted (with 4 gaps + 10 us a wait missed 3 %
 * of the answers, with 8 + 30 0.05-1 %). The gap is the slowest recent
 * answer, learnt from one that came within IB_LINGER_LEARN_US of the
 * poll, at most IB_LINGER_MAX_US; a miss doubles it, IB_LINGER_MISSES in
 * a row unlearn it. A one-way UC stream's requester takes nothing in and
 * never waits.
 */
static void
cq_linger(struct ib_cq *cq, uint32_t pos)
{
	uint64_t us, now, rx_tsc, end, took, gap;
	uint32_t rx;

	if (__atomic_load_n(&cq->uc_sent, __ATOMIC_RELAXED) != pos)
		return;	/* every poll comes here: nothing more before this */
	us = rte_get_tsc_hz() / 1000000;
	now = rte_rdtsc();
	rx = __atomic_load_n(&cq->uc_rx, __ATOMIC_ACQUIRE);
	rx_tsc = __atomic_load_n(&cq->uc_rx_tsc, __ATOMIC_RELAXED);
	if (cq->linger_gap == 0 && cq->linger_sent != 0 &&
	    rx != cq->linger_mark && rx_tsc > cq->linger_sent &&
	    rx_tsc - cq->linger_sent < IB_LINGER_LEARN_US * us)
		cq->linger_gap = RTE_MIN(rx_tsc - cq->linger_sent,
					 IB_LINGER_MAX_US * us);
	cq->linger_sent = now;
	cq->linger_mark = rx;
	gap = cq->linger_gap;
	if (gap == 0)
		return;
	end = now + RTE_MIN(8 * gap + 30 * us, IB_LINGER_WAIT_US * us);
	do {
		ib_engine_progress_cq(cq);
		if (__atomic_load_n(&cq->uc_rx, __ATOMIC_ACQUIRE) != rx) {
			/* The gap follows the slowest recent answer. */
			took = rte_rdtsc() - now;
			cq->linger_gap = RTE_MIN(RTE_MAX(gap - gap / 8, took),
						 IB_LINGER_MAX_US * us);
			cq->linger_missed = 0;
			__atomic_fetch_add(&ib_sh(cq->dev)->cnt[
				IB_CNT_POLL_LINGER_ANSWERED], 1,
				__ATOMIC_RELAXED);
			return;
		}
	} while (rte_rdtsc() < end);
	__atomic_fetch_add(&ib_sh(cq->dev)->cnt[IB_CNT_POLL_LINGER_MISSED], 1,
			   __ATOMIC_RELAXED);
	/* No answer in time: longer waits, then none. */
	if (++cq->linger_missed < IB_LINGER_MISSES) {
		cq->linger_gap = RTE_MIN(2 * gap, IB_LINGER_MAX_US * us);
	} else {
		cq->linger_gap = 0;
		cq->linger_missed = 0;
	}
}

int
ib_cq_poll(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct ib_cq *cq = to_cq(ibcq);
	const struct ibv_wc *e;
	uint32_t pos;
	int got = 0;

	if (unlikely(n < 0))
		return 0;	/* nothing asked for, as rxe and mlx5 answer */
	/* Inline mode: a pass first, unless the CQ already holds what the
	 * caller asked for (a poll returns what is there; the next one that
	 * finds less runs the pass). A poll for 0 entries always runs it:
	 * it asks for nothing but progress.
	 */
	if (ib_engine_inline &&
	    (n == 0 || __atomic_load_n(&cq->q.prod, __ATOMIC_ACQUIRE) -
	     __atomic_load_n(&cq->q.cons, __ATOMIC_RELAXED) < (uint32_t)n))
		ib_engine_progress_cq(cq);
	/* Empty: no lock. cons only grows, so the slot at a stale cons
	 * without its mark means the queue is empty now.
	 */
	if (!ib_cqe_ready(&cq->q, __atomic_load_n(&cq->q.cons,
						 __ATOMIC_RELAXED)))
		return 0;
	rte_spinlock_lock(&cq->poll_lock);
	pos = cq->q.cons;
	while (got < n && (e = ib_cq_next(cq, &pos)) != NULL) {
		wc[got++] = *e;
		pos++;
	}
	if (pos != cq->q.cons)
		ib_queue_consume(&cq->q, pos);
	ib_unlock(&cq->poll_lock);
	if (ib_engine_inline && got != 0)
		cq_linger(cq, pos);
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

/*
 * Never below the previous stamp: flushes may push from an application
 * thread, on a CPU whose TSC can lag the engine's a little.
 */
static inline uint64_t
cq_stamp(struct ib_cq *cq)
{
	uint64_t now = rte_rdtsc();

	if (unlikely(now < cq->last_ts))
		now = cq->last_ts;
	cq->last_ts = now;
	return now;
}

_Static_assert(offsetof(struct ibv_wc, dlid_path_bits) + 1 == IB_CQE_MARK_OFF &&
	       sizeof(struct ibv_wc) == IB_CQE_MARK_OFF + 2,
	       "the CQE mark lives in struct ibv_wc's tail padding");

/* Engine only. A full CQ is an overrun (IBA 11.4.2.1): the entry is lost. */
static int
cq_push(struct ib_cq *cq, const struct ibv_wc *wc, int solicited)
{
	uint32_t prod = cq->q.prod;
	struct ibv_wc *slot;

	if (unlikely(ib_queue_room(&cq->q) == 0)) {
		ib_count(cq->dev, IB_CNT_CQ_OVERRUN);
		if (cq->async != NULL)
			ib_async_event(cq->async, IBV_EVENT_CQ_ERR, cq);
		return -ENOSPC;
	}
	slot = ib_queue_slot(&cq->q, prod);
	memcpy(slot, wc, IB_CQE_BODY);
	if (cq->ts != NULL)
		cq->ts[prod & cq->q.mask] = cq_stamp(cq);
	/* The mark last: a poll that sees it sees the entry and stamp. */
	__atomic_store_n(ib_cqe_mark_at(slot), ib_cqe_mark(&cq->q, prod),
			 __ATOMIC_RELEASE);
	ib_queue_publish(&cq->q, prod + 1);
	/*
	 * A waiter arms, then polls; we publish, then look at the arm. Each
	 * side stores then loads the other's word, which x86 may reorder:
	 * without a full fence on both sides each could miss the other and
	 * the waiter sleeps on a completion already there. Only a CQ with a
	 * completion channel has waiters, so only it pays for the fence.
	 */
	if (cq->channel != NULL)
		rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (unlikely(__atomic_load_n(&cq->armed, __ATOMIC_RELAXED)))
		cq_notify(cq, wc, solicited);
	return 0;
}

/* Engines whose QPs share the CQ take turns as its producer. */
int
ib_cq_push(struct ib_cq *cq, const struct ibv_wc *wc, int solicited)
{
	int ret;

	if (likely(!cq->shared))
		return cq_push(cq, wc, solicited);
	rte_spinlock_lock(&cq->prod_lock);
	ret = cq_push(cq, wc, solicited);
	ib_unlock(&cq->prod_lock);
	return ret;
}

int
ib_cq_req_notify(struct ibv_cq *ibcq, int solicited_only)
{
	struct ib_cq *cq = to_cq(ibcq);

	__atomic_store_n(&cq->armed, solicited_only ? IB_CQ_ARM_SOLICITED :
			 IB_CQ_ARM_NEXT, __ATOMIC_RELEASE);
	/* The other half of cq_push's fence: the caller's next poll. */
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* Inline mode: a program that arms its CQ is about to wait outside
	 * verbs; what its posts left for the next flush (a stream's frames,
	 * ib_engine.c's post_pass) leaves now, not when the loop takes over.
	 */
	if (ib_engine_inline)
		ib_engine_progress_cq(cq);
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
	/* Every published entry, not only those the last poll counted. */
	n = ib_queue_count_all(&cq->q);
	for (i = 0; i < n; i++) {
		struct ibv_wc *e = ib_queue_slot(&cq->q, cq->q.cons + i);

		if (e->qp_num == qpn)
			e->qp_num = IB_CQE_PURGED;
	}
	ib_unlock(&cq->poll_lock);
}

struct cq_resize {
	struct ib_cq *cq;
	struct ib_queue q;
	uint64_t *ts;	/* in: the new stamp ring; out: the one to free */
	int err;
};

/*
 * Engine: the completions @cq owes for work already posted - signalled
 * send WQEs not yet completed, receive WQEs not yet consumed (an SRQ's
 * counted once) - which ibv_resize_cq(3) must leave room for whether or
 * not the engine has produced them yet.
 */
static uint64_t
cq_owed(struct ib_cq *cq)
{
	struct ib_dev *dev = cq->dev;
	struct ib_srq *seen[16];
	uint32_t nseen = 0, qpn, idx, j;
	uint64_t owed = 0;

	for (qpn = 0; qpn < IB_MAX_QP; qpn++) {
		struct ib_qp *qp = __atomic_load_n(&dev->qp_tbl[qpn],
						   __ATOMIC_ACQUIRE);
		uint32_t prod;

		if (qp == NULL)
			continue;
		if (qp->scq == cq) {
			prod = __atomic_load_n(&qp->sq.prod, __ATOMIC_ACQUIRE);
			for (idx = qp->comp.wqe_idx; idx != prod; idx++)
				owed += !!(sq_wqe(qp, idx)->flags &
					   IBV_SEND_SIGNALED);
		}
		if (qp->rcq != cq)
			continue;
		owed += qp->resp.have_rwqe;
		if (qp->srq == NULL) {
			owed += __atomic_load_n(&qp->rq.prod,
						__ATOMIC_ACQUIRE) - qp->rq.cons;
			continue;
		}
		for (j = 0; j < nseen && seen[j] != qp->srq; j++)
			;
		if (j < nseen)
			continue;
		if (nseen < RTE_DIM(seen))
			seen[nseen++] = qp->srq;
		owed += __atomic_load_n(&qp->srq->q.prod, __ATOMIC_ACQUIRE) -
			qp->srq->q.cons;
	}
	return owed;
}

/*
 * Engine: move the pending entries and their stamps into the new ring and
 * switch. All the published entries: the consumer's copy of prod may be
 * stale, and what it has not seen yet would be lost.
 */
static void
cq_resize_apply(void *arg)
{
	struct cq_resize *r = arg;
	struct ib_cq *cq = r->cq;
	uint32_t n, i;

	n = __atomic_load_n(&cq->q.prod, __ATOMIC_ACQUIRE) - cq->q.cons;

	if (n + cq_owed(cq) > r->q.size) {
		r->err = EINVAL;
		return;
	}
	for (i = 0; i < n; i++) {
		uint32_t from = cq->q.cons + i;
		struct ibv_wc *to = ib_queue_slot(&r->q, i);

		memcpy(to, ib_queue_slot(&cq->q, from), IB_CQE_BODY);
		*ib_cqe_mark_at(to) = ib_cqe_mark(&r->q, i);
		if (r->ts != NULL)
			r->ts[i] = cq->ts[from & cq->q.mask];
	}
	ib_queue_free(&cq->q);
	RTE_SWAP(cq->ts, r->ts);
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
	/* Allocated here: the engine must not wait on the allocator. */
	if (cq->ts != NULL) {
		r.ts = rte_zmalloc("ib_cq_ts", r.q.size * sizeof(*r.ts),
				   RTE_CACHE_LINE_SIZE);
		if (r.ts == NULL) {
			ib_queue_free(&r.q);
			return ENOMEM;
		}
	}
	rte_spinlock_lock(&cq->poll_lock);
	err = ib_engine_exec(cq->dev, cq_resize_apply, &r);
	ib_unlock(&cq->poll_lock);
	if (err == 0)
		err = r.err;
	if (err)
		ib_queue_free(&r.q);
	rte_free(r.ts);		/* the old ring, or the unused new one */
	return err;
}

/*
 * Give the CQ completion timestamps. Called right after creation, before a
 * QP can use the CQ, so the engine never sees ts appear under it.
 */
int
ib_cq_timestamps(struct ib_cq *cq)
{
	struct timespec now;
	uint64_t before, after;

	cq->ts = rte_zmalloc("ib_cq_ts", cq->q.size * sizeof(*cq->ts),
			     RTE_CACHE_LINE_SIZE);
	if (cq->ts == NULL)
		return ENOMEM;
	/* The TSC halfway through reading the wall clock. */
	before = rte_rdtsc();
	clock_gettime(CLOCK_REALTIME, &now);
	after = rte_rdtsc();
	cq->ref_tsc = before + (after - before) / 2;
	cq->ref_ns = (uint64_t)now.tv_sec * NS_PER_S + now.tv_nsec;
	return 0;
}

/*
 * A timestamp as CLOCK_REALTIME nanoseconds, by the TSC's rate from the
 * reference pair. Signed, as a stamp from another CPU may precede the
 * reference; whole seconds first so that the remainder times 1e9 stays
 * below 2^63 (for clocks under 9 GHz) without 128-bit division.
 */
uint64_t
ib_cq_ts_to_ns(const struct ib_cq *cq, uint64_t ts)
{
	int64_t hz = (int64_t)rte_get_tsc_hz();
	int64_t d = (int64_t)(ts - cq->ref_tsc);

	return cq->ref_ns + d / hz * NS_PER_S + d % hz * NS_PER_S / hz;
}
